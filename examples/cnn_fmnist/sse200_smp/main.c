/* sse200_smp/main.c — `scons cnn` (and `scons demo`), the dual Cortex-M33 half: the int8
   Fashion-MNIST CNN spatially sharded over both Cortex-M33 cores of Arm's SSE-200 (QEMU
   mps2-an521 -smp 2).

   Built by SConstruct (CNN_FIRMWARE) with the start-up, stdio and linker script of
   tests/target/sse200_smp/ and the headers the host run wrote into build/cnn/: the int8
   model (cnn_model.h) and the first 100 test images (cnn_test100.h). CPU n is rank n of a
   pg_shm world (sse200.h hooks: MHU doorbell + WFI) and of a 1-D dtensor mesh of 2; every
   image goes through examples/cnn_fmnist/cnn.h's cnn_forward_sharded (the ranks:
   ../fw_cnn.h, shared with riscv_smp/), the code the host
   checked against its single-rank int8 run: each core convolves its 14 of the 28 rows after
   a halo exchange with the other, pools its rows (another halo), and adds its partial int32
   logits to the other's (pg all_reduce) before requantization. All integer, so the logits
   must be the host's bit for bit. CPU0 prints `predictions: ...` and `logits fnv-1a: ...`;
   SConstruct compares both lines with the host's. QEMU's exit status is the result. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DT_NO_OPS /* the firmware uses conv, pool, requant */
#define DT_NO_RANDOM
#define MICROBATCH_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "tests/target/sse200_smp/fw_board.h"
#include "examples/cnn_fmnist/cnn.h"
#include "cnn_model.h"
#include "cnn_test100.h"

#define FW_RANKS      2 /* the two cores */
#define FW_SLOTS      4
#define fw_rank_hooks fw_hooks
#include "examples/cnn_fmnist/fw_cnn.h"

void fw_core_main(unsigned cpu)
{
    int rc;
    pg_shm_hooks h;
    uint32_t t0;
    fw_hooks(&h);
    t0 = h.now_us(h.ctx);
    if (cpu == 0)
        printf("cnn_fmnist firmware: int8 conv 1->8 3x3 + ReLU + max pool 2x2 + linear 1568->10, each image's rows "
               "sharded over the %d Cortex-M33 cores of the SSE-200 (pg_shm, QEMU %s, bare metal)\n",
               FW_RANKS, fw_board);
    if ((rc = fw_run_cores(cpu, rank_main))) fw_exit(rc);
    fw_exit(fw_cnn_report((h.now_us(h.ctx) - t0) / 1000u));
}
