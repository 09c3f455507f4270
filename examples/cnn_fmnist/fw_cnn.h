/* fw_cnn.h — the int8 CNN spatially sharded over bare-metal cores, shared by the firmware
   images (riscv_smp/: 4 harts; sse200_smp/: the 2 Cortex-M33 cores of the SSE-200). Core c
   is rank c of a pg_shm world in the linker section .splitcore_shm and of a 1-D dtensor mesh
   of FW_RANKS; every image goes through cnn.h's cnn_forward_sharded. Before including it,
   the firmware includes the implementations of microbatch.h, pg.h, dtensor.h and dtensor_qconv.h (with conv and quant), pg_shm.h,
   cnn.h, cnn_model.h and cnn_test100.h, and defines
       FW_RANKS  cores = ranks        FW_SLOTS  pg_shm slots per ring
       fw_rank_hooks(h)               fills this core's pg_shm hooks
   It gives rank_main(me) (run by every core; 0 or an error) and fw_cnn_report(ms) (core 0,
   after every rank returned: prints `predictions: ...`, `logits fnv-1a: ...` and the
   agreement with the host's int8 predictions; 0 when all 100 agree). */
#ifndef FW_CNN_H
#define FW_CNN_H

#define NIMG         100
#define PAYLOAD      1024
#define REGION_BYTES PG_SHM_REGION_BYTES(FW_RANKS, FW_SLOTS, PAYLOAD)

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));
static const cnn_q8 model = {cnn_cw, cnn_cb, cnn_cq, cnn_lw, cnn_lb, cnn_lq};

typedef struct core_ctx {
    pg_shm shm;
    dt_mesh mesh;
    dt_comm comm;
    cnn_work work;
} core_ctx;
static core_ctx cores[FW_RANKS];
static int8_t logits[NIMG][CNN_OUT]; /* core 0's copy (every core computes the same) */

static __attribute__((unused)) int rank_main(int me)
{
    core_ctx *c = &cores[me];
    pg_shm_hooks hooks;
    pg_group *g;
    int32_t ms[1] = {FW_RANKS};
    int8_t lg[CNN_OUT];
    int rc, i;
    fw_rank_hooks(&hooks);
    if (me == 0 && (rc = pg_shm_format(region, sizeof region, FW_RANKS, FW_SLOTS, PAYLOAD))) return rc;
    if ((rc = pg_shm_init(&c->shm, region, sizeof region, me, &hooks))) return rc;
    g = pg_shm_group(&c->shm);
    pg_set_timeout(g, 60000);
    if ((rc = dt_mesh_init(&c->mesh, 1, ms, NULL, me)) || (rc = dt_comm_init(&c->comm, &c->mesh, g))) return rc;
    for (i = 0; i < NIMG; i++) {
        if ((rc = cnn_forward_sharded(&c->comm, &model, cnn_test_x[i], lg, &c->work))) return rc;
        if (me == 0) memcpy(logits[i], lg, sizeof lg);
    }
    return pg_barrier(g);
}

static int fw_cnn_report(unsigned ms)
{
    int i, same = 0;
    printf("predictions:");
    for (i = 0; i < NIMG; i++) {
        int p = cnn_argmax(logits[i]);
        printf(" %d", p);
        same += p == cnn_host_pred[i];
    }
    printf("\nlogits fnv-1a: %08x\n", (unsigned)cnn_fnv1a(logits, sizeof logits, 2166136261u));
    printf("agree with the host's int8 predictions in cnn_test100.h: %d/%d; %u ms of guest time\n", same, NIMG, ms);
    return same == NIMG ? 0 : 3;
}
#endif
