/* riscv_smp/main.c — `scons cnn`, part 2: the int8 Fashion-MNIST CNN spatially sharded
   over 4 bare-metal harts of QEMU's RISC-V "virt" board.

   Built by SConstruct (CNN_FIRMWARE) with the start-up, C library and linker script of
   tests/target/riscv_smp/ and the headers the host run wrote into build/cnn/: the int8
   model (cnn_model.h) and the first 100 test images (cnn_test100.h). Hart h is rank h of
   a pg_shm world (riscv_virt.h hooks: CLINT doorbell + wfi) and of a 1-D dtensor mesh of
   4; every image goes through examples/cnn_fmnist/cnn.h's cnn_forward_sharded (the ranks:
   ../fw_cnn.h, shared with sse200_smp/), the code
   the host checked against its single-rank int8 run: each hart convolves its 7 of the 28
   rows after a halo exchange with its neighbours, pools its rows (another halo), and adds
   its partial int32 logits to the others' (pg all_reduce) before requantization. All
   integer, so the logits must be the host's bit for bit. Hart 0 prints `predictions: ...`
   and `logits fnv-1a: ...`; SConstruct compares both lines with the host's. It leaves
   through the SiFive test device (0x5555 = pass, 0x3333 | code << 16 = fail). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION /* conv2d, max pool and int8 conv2d: no libm needed */
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_QCONV_IMPLEMENTATION
#include "dtensor_qconv.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/riscv_virt.h"
#include "tests/target/riscv_smp/fw_board.h"
#include "examples/cnn_fmnist/cnn.h"
#include "cnn_model.h"
#include "cnn_test100.h"

#define FW_RANKS      4 /* harts */
#define FW_SLOTS      4
#define fw_rank_hooks pg_shm_rv_hooks
#include "examples/cnn_fmnist/fw_cnn.h"

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    int rc;
    uint64_t t0 = pg_shm_rv_mtime();
    if (hart == 0)
        printf("cnn_fmnist firmware: int8 conv 1->8 3x3 + ReLU + max pool 2x2 + linear 1568->10, each "
               "image's rows sharded over %d harts (pg_shm, QEMU virt, bare metal)\n",
               FW_RANKS);
    if ((rc = fw_run_harts(hart, FW_RANKS, rank_main))) fw_exit(rc);
    fw_exit(fw_cnn_report((unsigned)((pg_shm_rv_mtime() - t0) / (PG_SHM_RV_MTIME_HZ / 1000u))));
}

FW_TRAP_HANDLER("cnn_fmnist firmware")
