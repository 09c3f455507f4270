/* sse200_smp/main.c — `scons demo`, the dual Cortex-M33 half: the trained Fashion-MNIST MLP
   as a 2-stage inference pipeline on both Cortex-M33 cores of Arm's SSE-200 (QEMU
   mps2-an521 -smp 2).

   Built by SConstruct (DEMO_FIRMWARE) with the start-up, stdio and linker script of
   tests/target/sse200_smp/ and the headers the host run wrote into build/demo/: the weights
   (fmnist_weights.h), the first 100 test images (fmnist_test100.h) and the 2-stage
   forward-only plan with its balance (fmnist_plan2.h: the cut pp_balance_by_cost makes by
   multiply-adds, the first Linear on CPU0 and the other six layers on CPU1, emitted by
   pp_emit_c after pp_mailbox_depth proved it needs no mailbox depth). pipeline.h is compiled with PP_NO_PLANNER, PP_NO_TAKEIN and PP_NO_TRAINING: only the inference executor is
   linked, without take-in. CPU n is rank n of a pg_shm world (sse200.h hooks: MHU doorbell
   + WFI) and runs its row of the plan (../fw_mlp.h, shared with riscv_smp/); the layer code
   is mlp.h, the host's own, so with the
   same summation order and IEEE single precision (soft float here: AN521's CPU0 has no
   FPU; SSE without contraction on the host) every logit has the host's bits. CPU0 prints
   `predictions: ...` and `logits fnv-1a: ...`; SConstruct compares both lines with the
   host's. QEMU's exit status is the result (semihosting SYS_EXIT_EXTENDED).

   Built with FW_COST (`scons bench`, run under -icount shift=0: one instruction is 1 ns of
   guest time, so the cores' clock counts instructions), it measures what bench/m33/main.c
   feeds to pp_simulate, each part alone on one core while the other sleeps in WFI: on CPU0
   each stage's F over the plan's 8 microbatches (its layers, with the input callback on
   the first stage and the output callback on the last, as the executor runs them), then
   the transfer of one activation between the stages as the executor makes it (pg_send in
   pieces of pg_max_msg on CPU0, pg_recv on CPU1), and prints `cost: <name> <value>` lines,
   then the predictions of that single-core forward (checked against the host's like the
   pipeline's). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FW_RANKS 2 /* the two cores */
#define FW_SLOTS 4

#define SPLITCORE_BASE_IMPLEMENTATION /* splitcore_strerror names a failure's codes */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PP_NO_PLANNER    1
#define PP_NO_TAKEIN     1 /* the plan was proven on the host: forward-only, depth 0 */
#define PP_NO_TRAINING   1
#define PP_MAILBOX_SLOTS FW_SLOTS
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "tests/target/sse200_smp/fw_board.h"
#include "examples/pipeline_mnist/mlp.h"
#include "fmnist_weights.h"
#include "fmnist_test100.h"
#include "fmnist_plan2.h"

#define FW_PLAN       fm_plan2
#define FW_BALANCE    fm_balance2
#define fw_rank_hooks fw_hooks
#include "examples/pipeline_mnist/fw_mlp.h"

/* Each core's executor storage, exact for the plan's cut (fm_balance2 = {1, 6}: the first
   Linear 784 -> 256 on CPU0; ReLU, Linear 256 -> 128, ReLU, Linear 128 -> 64, ReLU and
   Linear 64 -> 10 on CPU1); rank_main stops with PP_ERR_TOO_SMALL if the host cut differently. */
static uint64_t mem0[FW_EXEC_BYTES(784 + 256) / 8], mem1[FW_EXEC_BYTES(256 + 256 + 2 * 128 + 2 * 64 + 10) / 8];
static int fw_exec_storage(int rank, void **mem, size_t *bytes)
{
    if (rank < 0 || rank >= FW_RANKS) return PP_ERR_ARG;
    *mem = rank ? mem1 : mem0;
    *bytes = rank ? sizeof mem1 : sizeof mem0;
    return 0;
}

#ifdef FW_COST
#define COST_REPEAT 8 /* transfers timed, averaged */
static float cost_buf[2][ROWS * 256];
static volatile uint32_t cost_step;

/* Instructions (1 per ns of guest time under -icount shift=0) between two now_us readings. */
static unsigned long long cost_instr(uint32_t us0, uint32_t us1)
{
    return (unsigned long long)(us1 - us0) * 1000u;
}

/* Stage s's F of microbatch mb as the executor runs it, into cost_buf (ping-pong). */
static int cost_stage(core_ctx *c, int s, int mb, const float *in)
{
    int l, first = s ? fm_balance2[0] : 0, n = fm_balance2[s], rc;
    int32_t xs[2] = {ROWS, s ? 256 : MLP_IN};
    mb_tensor x, y;
    static float x0[ROWS * MLP_IN];
    mb_tensor_init(&x, s ? (void *)(uintptr_t)in : (void *)x0, MB_F32, 2, xs);
    if (!s && (rc = fw_input(c, mb, &x))) return rc;
    for (l = first; l < first + n; l++) {
        int32_t ys[2] = {ROWS, (int32_t)(c->layers[l].act_bytes / 4u / ROWS)};
        mb_tensor_init(&y, cost_buf[(l - first) & 1], MB_F32, 2, ys);
        if ((rc = c->layers[l].forward(c->layers[l].self, &x, &y))) return rc;
        x = y;
    }
    return s ? fw_output(c, mb, &x) : 0;
}

static int cost_main(int me)
{
    static float act[8][ROWS * 256]; /* stage 0's outputs: stage 1's inputs */
    core_ctx *c = &cores[me];
    pg_shm_hooks h;
    pg_group *g;
    uint32_t t0, bytes = (uint32_t)(ROWS * 256 * 4);
    unsigned long long f[2] = {0, 0}, tx = 0, rx = 0;
    int rc, s, mb, k;
    size_t max, off, got;
    fw_hooks(&h);
    mlp_layers(c->layers, lin, ROWS);
    if (me == 0) { /* CPU1 sleeps until step 1 */
        for (s = 0; s < 2; s++) {
            t0 = h.now_us(h.ctx);
            for (mb = 0; mb < 8; mb++) {
                c->base = 0;
                if ((rc = cost_stage(c, s, mb, act[mb]))) return rc;
                if (!s) memcpy(act[mb], cost_buf[(fm_balance2[0] - 1) & 1], bytes);
            }
            f[s] = cost_instr(t0, h.now_us(h.ctx)) / 8u;
        }
        if ((rc = pg_shm_format(region, sizeof region, FW_RANKS, FW_SLOTS, PAYLOAD))) return rc;
        cost_step = 1;
        fw_notify(1);
    } else {
        while (cost_step < 1) fw_wait();
    }
    if ((rc = pg_shm_init(&c->shm, region, sizeof region, me, &h))) return rc;
    g = pg_shm_group(&c->shm);
    max = pg_max_msg(g);
    for (k = 0; k < COST_REPEAT; k++) { /* CPU0 sends alone, then CPU1 receives alone */
        uint32_t step = 2u + 2u * (uint32_t)k;
        if (me == 0) {
            t0 = h.now_us(h.ctx);
            for (off = 0; off < bytes; off += max)
                if ((rc = pg_send(g, 1, k, (char *)act[k] + off, bytes - off < max ? bytes - off : max))) return rc;
            tx += cost_instr(t0, h.now_us(h.ctx));
            cost_step = step;
            fw_notify(1);
            while (cost_step != step + 1u) fw_wait();
        } else {
            while (cost_step != step) fw_wait();
            t0 = h.now_us(h.ctx);
            for (off = 0; off < bytes; off += max)
                if ((rc = pg_recv(g, 0, k, cost_buf[0] + off / 4, max, &got))) return rc;
            rx += cost_instr(t0, h.now_us(h.ctx));
            if (memcmp(cost_buf[0], act[k], bytes)) return PG_ERR_MISMATCH;
            cost_step = step + 1u;
            fw_notify(0);
        }
    }
    if (me == 1) {
        printf("cost: mlp_recv_instr %llu\n", rx / COST_REPEAT);
        return 0;
    }
    printf("cost: mlp_rows %d\ncost: mlp_microbatches 8\ncost: mlp_balance %d %d\ncost: mlp_act_bytes %u\n", ROWS,
           (int)fm_balance2[0], (int)fm_balance2[1], (unsigned)bytes);
    printf("cost: mlp_stage0_f_instr %llu\ncost: mlp_stage1_f_instr %llu\ncost: mlp_send_instr %llu\n", f[0], f[1],
           tx / COST_REPEAT);
    return 0;
}
#define RANK_MAIN cost_main
#else
#define RANK_MAIN rank_main
#endif

void fw_core_main(unsigned cpu)
{
    int rc;
    pg_shm_hooks h;
    uint32_t t0;
    fw_hooks(&h);
    t0 = h.now_us(h.ctx);
    if (cpu == 0)
        printf("pipeline_mnist firmware: 784-256-128-64-10 MLP, 2 stages (%d + %d layers) on the 2 Cortex-M33 "
               "cores of the SSE-200 (pg_shm, QEMU %s, bare metal), forward-only plan of %d microbatches x %d "
               "images\n",
               (int)fm_balance2[0], (int)fm_balance2[1], fw_board, (int)fm_plan2[0].nmb, ROWS);
    if ((rc = fw_run_cores(cpu, RANK_MAIN))) {
        int i;
        for (i = 0; i < FW_RANKS; i++)
            if (cores[i].rc) fw_mlp_fail(i, cores[i].rc);
        fw_exit(rc);
    }
    fw_exit(fw_mlp_report((h.now_us(h.ctx) - t0) / 1000u));
}
