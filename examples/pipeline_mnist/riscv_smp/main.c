/* riscv_smp/main.c — `scons demo`, part 2: the trained Fashion-MNIST MLP as a 4-stage
   inference pipeline on 4 bare-metal harts of QEMU's RISC-V "virt" board.

   Built by SConstruct (DEMO_FIRMWARE) with the start-up, C library and linker script of
   tests/target/riscv_smp/ and the headers the host run wrote into build/demo/: the weights
   (fmnist_weights.h), the first 100 test images (fmnist_test100.h) and the forward-only plan
   (fmnist_plan.h, emitted by pp_emit_c after pp_mailbox_depth proved it needs no mailbox
   depth). pipeline.h is compiled with PP_NO_PLANNER, PP_NO_TAKEIN and PP_NO_TRAINING: only
   the inference executor is linked, without take-in (the plan carries the deadlock freedom),
   and each hart's executor storage is exactly what pp_exec_bytes asks for (one slot: the
   stage input and its layers' outputs), which the hart checks. Hart h is rank h of a
   pg_shm world (riscv_virt.h hooks: CLINT doorbell + wfi) and runs its row of the plan; the
   layer code is mlp.h, the host's own, so with the same summation order and IEEE single
   precision (soft float here, SSE without contraction on the host) every logit has the
   host's bits. Hart 0 prints `predictions: ...` and
   `logits fnv-1a: ...` (a hash of the logits' bits); SConstruct compares both lines with the
   host's. It leaves through the SiFive test device (0x5555 = pass, 0x3333 | code << 16 =
   fail), so QEMU's exit status is the result. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HARTS 4
#define NIMG  100
#define ROWS  13 /* images per microbatch: the plan's 8 cover 104 (4 padded) */
#define SLOTS 4

#define SPLITCORE_BASE_IMPLEMENTATION /* splitcore_strerror names a failure's codes */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PP_NO_PLANNER    1
#define PP_NO_TAKEIN     1 /* the plan was proven on the host: forward-only, depth 0 */
#define PP_NO_TRAINING   1
#define PP_MAILBOX_SLOTS SLOTS
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/riscv_virt.h"
#include "examples/pipeline_mnist/mlp.h"
#include "fmnist_weights.h"
#include "fmnist_test100.h"
#include "fmnist_plan.h"

#define PAYLOAD                   4096 /* activations travel in pieces of pg_max_msg() */
#define REGION_BYTES              PG_SHM_REGION_BYTES(HARTS, SLOTS, PAYLOAD)
#define FW_TEST_DEVICE            ((volatile uint32_t *)0x100000u)
/* Executor storage of hart h: one slot (forward-only plans hold one microbatch at a time)
   with the stage input and each of its layers' outputs (f32, whole 8-byte units here), and
   the slot's 8-byte state word. Stage h: Linear and ReLU of mlp_dims[h] -> mlp_dims[h + 1];
   the last stage has no ReLU. */
#define EXEC_BYTES(in, out, nout) (8u + 4u * ROWS * ((in) + (nout) * (out)))
static uint64_t mem0[EXEC_BYTES(784, 256, 2) / 8], mem1[EXEC_BYTES(256, 128, 2) / 8], mem2[EXEC_BYTES(128, 64, 2) / 8],
    mem3[EXEC_BYTES(64, 10, 1) / 8];
static uint64_t *const exec_mem[HARTS] = {mem0, mem1, mem2, mem3};
static const size_t exec_bytes[HARTS] = {sizeof mem0, sizeof mem1, sizeof mem2, sizeof mem3};

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));

static mlp_linear lin[4] = {
    {784, 256, fm_w0, fm_b0, NULL, NULL},
    {256, 128, fm_w1, fm_b1, NULL, NULL},
    {128, 64, fm_w2, fm_b2, NULL, NULL},
    {64, 10, fm_w3, fm_b3, NULL, NULL},
};

typedef struct hart_ctx {
    pg_shm shm;
    pp_layer layers[MLP_LAYERS];
    pp_exec_cfg cfg;
    pp_exec ex;
    int base; /* first image of the current run */
    int rc;
} hart_ctx;
static hart_ctx harts[HARTS];
static volatile int pred[NIMG]; /* written by the last stage's hart, read by hart 0 */
static float logits[NIMG][MLP_OUT];

static int fw_input(void *user, int mb, mb_tensor *x)
{
    const hart_ctx *h = (const hart_ctx *)user;
    int r;
    for (r = 0; r < ROWS; r++) {
        int i = h->base + mb * ROWS + r;
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
    const hart_ctx *h = (const hart_ctx *)user;
    int r;
    for (r = 0; r < ROWS; r++) {
        int i = h->base + mb * ROWS + r;
        if (i >= NIMG) continue;
        pred[i] = mlp_argmax((const float *)y->data + r * MLP_OUT, MLP_OUT);
        memcpy(logits[i], (const float *)y->data + r * MLP_OUT, sizeof logits[i]);
    }
    return 0;
}

/* Rank `hart`: attach to the region, run its plan row until the 100 images are through. */
static int rank_main(int hart)
{
    hart_ctx *h = &harts[hart];
    const pp_table *t = &fm_plan[hart];
    pg_shm_hooks hooks;
    pg_group *g;
    size_t need = 0;
    int rc;
    pg_shm_rv_hooks(&hooks);
    if (hart == 0 && (rc = pg_shm_format(region, sizeof region, HARTS, SLOTS, PAYLOAD))) return rc;
    if ((rc = pg_shm_init(&h->shm, region, sizeof region, hart, &hooks))) return rc;
    g = pg_shm_group(&h->shm);
    pg_set_timeout(g, 60000);
    mlp_layers(h->layers, lin, ROWS);
    memset(&h->cfg, 0, sizeof h->cfg);
    h->cfg.layers = h->layers;
    h->cfg.nlayers = MLP_LAYERS;
    h->cfg.balance = mlp_balance;
    h->cfg.rows = ROWS;
    h->cfg.dtype = MB_F32;
    h->cfg.in_bytes = ROWS * MLP_IN * 4;
    h->cfg.input = fw_input;
    h->cfg.output = fw_output;
    h->cfg.user = h;
    if ((rc = pp_exec_query(&h->cfg, t, &need))) return rc;
    if (need != exec_bytes[hart]) return PP_ERR_TOO_SMALL; /* the sizes above are exact */
    if ((rc = pp_exec_init(&h->ex, &h->cfg, t, g, exec_mem[hart], exec_bytes[hart]))) return rc;
    for (h->base = 0; h->base < NIMG; h->base += ROWS * t->nmb)
        if ((rc = pp_exec_run(&h->ex))) return rc;
    return pg_barrier(g); /* the last stage's predictions are in pred[] */
}

static void fw_exit(int rc)
{
    uint32_t code = (uint32_t)rc & 0xFFFFu;
    *FW_TEST_DEVICE = rc == 0 ? 0x5555u : 0x3333u | (code ? code : 1u) << 16;
    for (;;) __asm__ volatile("wfi");
}

static volatile uint32_t done[HARTS];

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    int i, rc = 0, same = 0;
    uint64_t t0 = pg_shm_rv_mtime();
    if (hart != 0) {
        harts[hart].rc = rank_main((int)hart);
        __asm__ volatile("fence rw, rw" ::: "memory");
        done[hart] = 1;
        for (;;) __asm__ volatile("wfi");
    }
    printf("pipeline_mnist firmware: 784-256-128-64-10 MLP, 4 stages on %d harts (pg_shm, "
           "QEMU virt, bare metal), forward-only plan of %d microbatches x %d images\n",
           HARTS, (int)fm_plan[0].nmb, ROWS);
    harts[0].rc = rank_main(0);
    for (i = 1; i < HARTS; i++) {
        while (!done[i]) __asm__ volatile("nop");
        __asm__ volatile("fence rw, rw" ::: "memory");
    }
    for (i = 0; i < HARTS; i++)
        if (harts[i].rc) { /* a pipeline code; for PP_ERR_LAYER / PP_ERR_COMM the kept one */
            const pp_exec *x = &harts[i].ex;
            printf("hart %d: error %d (%s)", i, harts[i].rc, splitcore_strerror(harts[i].rc));
            if (x->err) printf(": %d (%s) on rank %d", (int)x->err, splitcore_strerror(x->err), (int)x->err_rank);
            printf("\n");
            if (!rc) rc = 2;
        }
    if (rc) fw_exit(rc);
    printf("predictions:");
    for (i = 0; i < NIMG; i++) {
        printf(" %d", pred[i]);
        same += pred[i] == fm_host_pred[i];
    }
    printf("\nlogits fnv-1a: %08x\n", (unsigned)mlp_fnv1a(&logits[0][0], NIMG * MLP_OUT));
    printf("agree with the host's predictions in fmnist_test100.h: %d/%d; %u ms of guest time\n", same, NIMG,
           (unsigned)((pg_shm_rv_mtime() - t0) / (PG_SHM_RV_MTIME_HZ / 1000u)));
    printf("RAM per hart: executor storage %u, %u, %u, %u B (pp_exec_bytes: one slot, no gradient room); "
           "shared region %u B (%d slots of %d B per ordered pair of harts)\n",
           (unsigned)exec_bytes[0], (unsigned)exec_bytes[1], (unsigned)exec_bytes[2], (unsigned)exec_bytes[3],
           (unsigned)REGION_BYTES, SLOTS, PAYLOAD);
    fw_exit(same == NIMG ? 0 : 3);
}

/* Any exception (mstatus.MIE stays 0, so no interrupt traps): report it and fail. */
void fw_trap_entry(void) __attribute__((interrupt("machine"), aligned(4)));
void fw_trap_entry(void)
{
    unsigned long cause, epc, tval, hart;
    __asm__ volatile("csrr %0, mcause" : "=r"(cause));
    __asm__ volatile("csrr %0, mepc" : "=r"(epc));
    __asm__ volatile("csrr %0, mtval" : "=r"(tval));
    __asm__ volatile("csrr %0, mhartid" : "=r"(hart));
    printf("\npipeline_mnist firmware: trap on hart %lu: mcause=%#lx mepc=%#lx mtval=%#lx\n", hart, cause, epc, tval);
    fw_exit(0xEE);
}
