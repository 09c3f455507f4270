/* riscv_smp/main.c — `scons cnn`, part 2: the int8 Fashion-MNIST CNN spatially sharded
   over 4 bare-metal harts of QEMU's RISC-V "virt" board.

   Built by SConstruct (CNN_FIRMWARE) with the start-up, C library and linker script of
   tests/target/riscv_smp/ and the headers the host run wrote into build/cnn/: the int8
   model (cnn_model.h) and the first 100 test images (cnn_test100.h). Hart h is rank h of
   a pg_shm world (riscv_virt.h hooks: CLINT doorbell + wfi) and of a 1-D dtensor mesh of
   4; every image goes through examples/cnn_fmnist/cnn.h's cnn_forward_sharded, the code
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

#define HARTS        4
#define NIMG         100
#define SLOTS        4
#define PAYLOAD      1024
#define REGION_BYTES PG_SHM_REGION_BYTES(HARTS, SLOTS, PAYLOAD)

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));
static const cnn_q8 model = {cnn_cw, cnn_cb, cnn_cq, cnn_lw, cnn_lb, cnn_lq};

typedef struct hart_ctx {
    pg_shm shm;
    dt_mesh mesh;
    dt_comm comm;
    cnn_work work;
} hart_ctx;
static hart_ctx harts[HARTS];
static int8_t logits[NIMG][CNN_OUT]; /* hart 0's copy (every hart computes the same) */

static int rank_main(int hart)
{
    hart_ctx *h = &harts[hart];
    pg_shm_hooks hooks;
    pg_group *g;
    int32_t ms[1] = {HARTS};
    int8_t lg[CNN_OUT];
    int rc, i;
    pg_shm_rv_hooks(&hooks);
    if (hart == 0 && (rc = pg_shm_format(region, sizeof region, HARTS, SLOTS, PAYLOAD))) return rc;
    if ((rc = pg_shm_init(&h->shm, region, sizeof region, hart, &hooks))) return rc;
    g = pg_shm_group(&h->shm);
    pg_set_timeout(g, 60000);
    if ((rc = dt_mesh_init(&h->mesh, 1, ms, NULL, hart)) || (rc = dt_comm_init(&h->comm, &h->mesh, g))) return rc;
    for (i = 0; i < NIMG; i++) {
        if ((rc = cnn_forward_sharded(&h->comm, &model, cnn_test_x[i], lg, &h->work))) return rc;
        if (hart == 0) memcpy(logits[i], lg, sizeof lg);
    }
    return pg_barrier(g);
}

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    int i, rc, same = 0;
    uint64_t t0 = pg_shm_rv_mtime();
    if (hart == 0)
        printf("cnn_fmnist firmware: int8 conv 1->8 3x3 + ReLU + max pool 2x2 + linear 1568->10, each "
               "image's rows sharded over %d harts (pg_shm, QEMU virt, bare metal)\n",
               HARTS);
    if ((rc = fw_run_harts(hart, HARTS, rank_main))) fw_exit(rc);
    printf("predictions:");
    for (i = 0; i < NIMG; i++) {
        int p = cnn_argmax(logits[i]);
        printf(" %d", p);
        same += p == cnn_host_pred[i];
    }
    printf("\nlogits fnv-1a: %08x\n", (unsigned)cnn_fnv1a(logits, sizeof logits, 2166136261u));
    printf("agree with the host's int8 predictions in cnn_test100.h: %d/%d; %u ms of guest time\n", same, NIMG,
           (unsigned)((pg_shm_rv_mtime() - t0) / (PG_SHM_RV_MTIME_HZ / 1000u)));
    fw_exit(same == NIMG ? 0 : 3);
}

FW_TRAP_HANDLER("cnn_fmnist firmware")
