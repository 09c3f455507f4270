/* fw_mlp.h — the demo's inference pipeline on bare-metal cores, shared by its firmware
   images (riscv_smp/: 4 harts, 4 stages; sse200_smp/: the 2 Cortex-M33 cores of the SSE-200,
   2 stages). Core c is rank c of a pg_shm world in the linker section .splitcore_shm and runs
   its row of the plan the host emitted over the trained weights, mlp.h's layers and the
   first 100 test images (13 images per microbatch: the plan's 8 cover 104, 4 padded).
   Before including it, the firmware includes the implementations of microbatch.h, pg.h,
   pipeline.h (PP_NO_PLANNER, PP_NO_TAKEIN, PP_NO_TRAINING, PP_MAILBOX_SLOTS = FW_SLOTS) and pg_shm.h,
   mlp.h, fmnist_weights.h, fmnist_test100.h and its plan header, and defines
       FW_RANKS    cores = ranks = plan rows        FW_PLAN     the emitted pp_table array
       FW_BALANCE  layers per stage                 FW_SLOTS    pg_shm slots per ring
       fw_rank_hooks(h)   fills this core's pg_shm hooks
   and, after including it, fw_exec_storage(rank, &mem, &bytes): the rank's executor storage,
   sized exactly with FW_EXEC_BYTES(floats) for its stage (one slot: the stage input and each of
   its layers' outputs, no gradient room), which rank_main checks against pp_exec_query.
   It gives rank_main(me) (run by every core; 0 or an error, its codes in fw_mlp_fail) and
   fw_mlp_report(ms) (core 0, after every rank returned: prints `predictions: ...`,
   `logits fnv-1a: ...`, the agreement with the host's predictions and each core's RAM; 0 when
   all 100 agree). */
#ifndef FW_MLP_H
#define FW_MLP_H

#define NIMG                  100
#define ROWS                  13
#define PAYLOAD               4096 /* activations travel in pieces of pg_max_msg() */
#define REGION_BYTES          PG_SHM_REGION_BYTES(FW_RANKS, FW_SLOTS, PAYLOAD)
/* Executor storage of a forward-only stage of `floats` f32 activations per image (its input
   and every layer's output): one slot plus the slot's 8-byte state word. */
#define FW_EXEC_BYTES(floats) (8u + 4u * ROWS * (unsigned)(floats))
static int fw_exec_storage(int rank, void **mem, size_t *bytes);

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));

static mlp_linear lin[4] = {
    {784, 256, fm_w0, fm_b0, NULL, NULL},
    {256, 128, fm_w1, fm_b1, NULL, NULL},
    {128, 64, fm_w2, fm_b2, NULL, NULL},
    {64, 10, fm_w3, fm_b3, NULL, NULL},
};

typedef struct core_ctx {
    pg_shm shm;
    pp_layer layers[MLP_LAYERS];
    pp_exec_cfg cfg;
    pp_exec ex;
    int base; /* first image of the current run */
    int rc;
} core_ctx;
static core_ctx cores[FW_RANKS];
static volatile int pred[NIMG]; /* written by the last stage's core, read by core 0 */
static float logits[NIMG][MLP_OUT];

static int fw_input(void *user, int mb, mb_tensor *x)
{
    const core_ctx *c = (const core_ctx *)user;
    int r;
    for (r = 0; r < ROWS; r++) {
        int i = c->base + mb * ROWS + r;
        float *dst = (float *)x->data + r * MLP_IN;
        if (i < NIMG)
            memcpy(dst, fm_test_x[i], sizeof fm_test_x[i]);
        else
            memset(dst, 0, sizeof fm_test_x[0]);
    }
    return 0;
}

static int fw_output(void *user, int mb, const mb_tensor *y)
{
    const core_ctx *c = (const core_ctx *)user;
    int r;
    for (r = 0; r < ROWS; r++) {
        int i = c->base + mb * ROWS + r;
        if (i >= NIMG) continue;
        pred[i] = mlp_argmax((const float *)y->data + r * MLP_OUT, MLP_OUT);
        memcpy(logits[i], (const float *)y->data + r * MLP_OUT, sizeof logits[i]);
    }
    return 0;
}

/* Rank `me`: attach to the region, run its plan row until the 100 images are through. */
static __attribute__((unused)) int rank_main(int me)
{
    core_ctx *c = &cores[me];
    const pp_table *t = &FW_PLAN[me];
    pg_shm_hooks hooks;
    pg_group *g;
    void *mem;
    size_t need = 0, bytes;
    int rc;
    fw_rank_hooks(&hooks);
    if (me == 0 && (rc = pg_shm_format(region, sizeof region, FW_RANKS, FW_SLOTS, PAYLOAD))) return rc;
    if ((rc = pg_shm_init(&c->shm, region, sizeof region, me, &hooks))) return rc;
    g = pg_shm_group(&c->shm);
    pg_set_timeout(g, 60000);
    mlp_layers(c->layers, lin, ROWS);
    memset(&c->cfg, 0, sizeof c->cfg);
    c->cfg.layers = c->layers;
    c->cfg.nlayers = MLP_LAYERS;
    c->cfg.balance = FW_BALANCE;
    c->cfg.rows = ROWS;
    c->cfg.dtype = MB_F32;
    c->cfg.in_bytes = ROWS * MLP_IN * 4;
    c->cfg.input = fw_input;
    c->cfg.output = fw_output;
    c->cfg.user = c;
    if ((rc = pp_exec_query(&c->cfg, t, &need)) || (rc = fw_exec_storage(me, &mem, &bytes))) return rc;
    if (need != bytes) return PP_ERR_TOO_SMALL; /* the firmware's sizes are exact */
    if ((rc = pp_exec_init(&c->ex, &c->cfg, t, g, mem, bytes))) return rc;
    for (c->base = 0; c->base < NIMG; c->base += ROWS * t->nmb)
        if ((rc = pp_exec_run(&c->ex))) return c->rc = rc;
    return pg_barrier(g); /* the last stage's predictions are in pred[] */
}

/* A failed rank's pipeline code, with the kept lower code and the rank it came from. */
static __attribute__((unused)) void fw_mlp_fail(int me, int rc)
{
    const pp_exec *x = &cores[me].ex;
    printf("core %d: error %d (%s)", me, rc, splitcore_strerror(rc));
    if (cores[me].rc && x->err)
        printf(": %d (%s) on rank %d", (int)x->err, splitcore_strerror(x->err), (int)x->err_rank);
    printf("\n");
}

static int fw_mlp_report(unsigned ms)
{
    int i, same = 0;
    void *mem;
    size_t bytes;
    printf("predictions:");
    for (i = 0; i < NIMG; i++) {
        printf(" %d", pred[i]);
        same += pred[i] == fm_host_pred[i];
    }
    printf("\nlogits fnv-1a: %08x\n", (unsigned)mlp_fnv1a(&logits[0][0], NIMG * MLP_OUT));
    printf("agree with the host's predictions in fmnist_test100.h: %d/%d; %u ms of guest time\n", same, NIMG, ms);
    printf("RAM per core: executor storage");
    for (i = 0; i < FW_RANKS; i++)
        if (!fw_exec_storage(i, &mem, &bytes)) printf(" %u", (unsigned)bytes);
    printf(" B (pp_exec_query: one slot, no gradient room); shared region %u B (%d slots of %d B per ordered pair)\n",
           (unsigned)REGION_BYTES, FW_SLOTS, PAYLOAD);
    return same == NIMG ? 0 : 3;
}
#endif
