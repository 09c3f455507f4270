/* tests/size/fwd2_m33 — what a 2-stage forward-only pipeline firmware links, on the two
   Cortex-M33 cores of Arm's SSE-200 (mps2-an521). `scons size` links it (-mcpu=cortex-m33+nodsp
   -mfloat-abi=soft, the code both AN521 cores can run; -Os, -ffunction-sections, --gc-sections,
   newlib-nano) and reports its splitcore share (the library's symbols and the libgcc/libc
   helpers they call) against a 6,144 B .text guard; `scons test` runs the same ELF on both
   cores (mps2-an521 and mps3-an524, with and without -icount), so the guarded image is one
   that works: core 0 checks core 1's outputs against the two layers applied in one pass and
   leaves through semihosting with 0, or 1/2 (a core's error), 3 (wrong outputs), 99 (a fault).

   It is the smallest complete firmware of its kind: pipeline.h's inference executor for an
   emitted plan (PP_NO_PLANNER, PP_NO_TAKEIN, PP_NO_TRAINING; PP_NO_EVENTS: it records no
   timeline), pg_shm over a region in the SSE-200's shared SRAM, and a minimal hook set
   (doorbell = the MHU, wait = wfi, clock = the cycle counter; the share counts them). The two layers (one per stage, int32 fixed point),
   the check and the exit are the application's, not splitcore's: the share excludes them, as
   it excludes the start-up code and the plan's const tables.
   Core 0 formats the region and starts core 1 (INITSVTOR1, CPUWAIT); each core runs its row
   of the plan, core 0 feeding frames, core 1 keeping the last stage's outputs. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CORES   2
#define SLOTS   4
#define PAYLOAD 256
#define ROWS    4
#define IN      16 /* int32 features in, after stage 0, after stage 1 */
#define MID     16
#define OUT     8
#define NMB     4

/* sized for this board's two cores, as a firmware for it is: pg_group and pg_shm keep
   per-rank arrays of PG_MAX_RANKS / PG_SHM_MAX_CORES entries (default 64 and 8) */
#define PG_MAX_RANKS     CORES
#define PG_SHM_MAX_CORES CORES
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PP_NO_PLANNER    1
#define PP_NO_TAKEIN     1
#define PP_NO_TRAINING   1
#define PP_NO_EVENTS     1 /* no timeline: this firmware traces nothing */
#define PP_MAILBOX_SLOTS SLOTS
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"

/* ---- the SSE-200 (mps2-an521, secure aliases) ---- */
#define CPU_IDENTITY ((volatile uint32_t *)0x4001F000u) /* 0 on CPU0, 1 on CPU1 */
#define INITSVTOR1   ((volatile uint32_t *)0x50021114u) /* CPU1's vector table */
#define CPUWAIT      ((volatile uint32_t *)0x50021118u) /* bit 1 holds CPU1 */
#define MHU0_SET(c)  ((volatile uint32_t *)(0x50003004u + 0x10u * (uint32_t)(c)))
#define MHU0_CLR(c)  ((volatile uint32_t *)(0x50003008u + 0x10u * (uint32_t)(c)))
#define NVIC_ISER0   ((volatile uint32_t *)0xE000E100u)
#define MHU0_IRQ     6u                                 /* the MHU0 doorbell's NVIC input on each CPU */
#define DWT_CTRL     ((volatile uint32_t *)0xE0001000u) /* bit 0: CYCCNTENA */
#define DWT_CYCCNT   ((volatile uint32_t *)0xE0001004u)
#define DEMCR        ((volatile uint32_t *)0xE000EDFCu) /* bit 24: TRCENA (the DWT on) */
#define CPU_MHZ      20u

/* ---- the minimal hook set ---- */
static void hook_notify(void *ctx, int core)
{
    (void)ctx;
    __asm__ volatile("dsb" ::: "memory");
    *MHU0_SET(core) = 1u;
}
static void hook_wait(void *ctx, int self)
{
    (void)ctx;
    __asm__ volatile("wfi" ::: "memory"); /* a pending doorbell (or any interrupt) wakes it */
    *MHU0_CLR(self) = 1u;
}
static uint32_t hook_now_us(void *ctx)
{
    (void)ctx;
    return *DWT_CYCCNT / CPU_MHZ; /* wraps early; a firmware would extend it */
}

/* ---- the plan, as pp_emit_c writes it (forward-only, 2 ranks, 4 microbatches, depth 0) ---- */
static const pp_action fw_plan_r0[8] = {
    PP_ACTION(PP_F, 0, 0), PP_ACTION(PP_SEND_F, 0, 0), PP_ACTION(PP_F, 0, 1), PP_ACTION(PP_SEND_F, 0, 1),
    PP_ACTION(PP_F, 0, 2), PP_ACTION(PP_SEND_F, 0, 2), PP_ACTION(PP_F, 0, 3), PP_ACTION(PP_SEND_F, 0, 3),
};
static const pp_action fw_plan_r1[8] = {
    PP_ACTION(PP_RECV_F, 1, 0), PP_ACTION(PP_F, 1, 0), PP_ACTION(PP_RECV_F, 1, 1), PP_ACTION(PP_F, 1, 1),
    PP_ACTION(PP_RECV_F, 1, 2), PP_ACTION(PP_F, 1, 2), PP_ACTION(PP_RECV_F, 1, 3), PP_ACTION(PP_F, 1, 3),
};
static const uint8_t fw_plan_stage_rank[2] = {0, 1};
static const pp_table fw_plan[2] = {
    {fw_plan_r0, 8, 0, 2, 2, NMB, 1, fw_plan_stage_rank, 1},
    {fw_plan_r1, 8, 1, 2, 2, NMB, 1, fw_plan_stage_rank, 1},
};

/* ---- the application's layers: y = (x * w) >> 8 per feature, int32 ---- */
typedef struct app_dense {
    int in, out;
    int32_t w;
} app_dense;
static int app_dense_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const app_dense *d = (const app_dense *)self;
    const int32_t *a = (const int32_t *)x->data;
    int32_t *b = (int32_t *)y->data;
    int r, o;
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < d->out; o++) b[r * d->out + o] = (a[r * d->in + o % d->in] * d->w) >> 8;
    return 0;
}
static app_dense app_l[2] = {{IN, MID, 300}, {MID, OUT, 500}};
static const int32_t app_balance[2] = {1, 1};
static int32_t app_out[NMB][ROWS * OUT];

static int app_input(void *user, int mb, mb_tensor *x)
{
    int i;
    (void)user;
    for (i = 0; i < ROWS * IN; i++) ((int32_t *)x->data)[i] = mb * 100 + i;
    return 0;
}
static int app_output(void *user, int mb, const mb_tensor *y)
{
    (void)user;
    memcpy(app_out[mb], y->data, sizeof app_out[mb]);
    return 0;
}

/* ---- the cores ---- */
#define REGION_BYTES PG_SHM_REGION_BYTES(CORES, SLOTS, PAYLOAD)
/* one slot: the stage input and its layer's output, int32 (8-byte rounded) */
#define EXEC_BYTES   (8u + 4u * ROWS * (IN + MID))
static uint32_t app_region[REGION_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));
typedef struct app_core {
    pg_shm shm;
    pp_layer layers[2];
    pp_exec_cfg cfg;
    pp_exec ex;
    uint64_t mem[(EXEC_BYTES + 7u) / 8u];
    int rc;
} app_core;
static app_core app_cores[CORES];

static int app_run(int me)
{
    app_core *c = &app_cores[me];
    pg_shm_hooks hooks;
    int rc, l;
    memset(&hooks, 0, sizeof hooks);
    hooks.notify = hook_notify;
    hooks.wait = hook_wait;
    hooks.now_us = hook_now_us;
    if ((rc = pg_shm_init(&c->shm, app_region, sizeof app_region, me, &hooks))) return rc;
    for (l = 0; l < 2; l++) {
        memset(&c->layers[l], 0, sizeof c->layers[l]);
        c->layers[l].forward = app_dense_fwd;
        c->layers[l].self = &app_l[l];
        c->layers[l].act_bytes = 4u * ROWS * (uint32_t)app_l[l].out;
    }
    memset(&c->cfg, 0, sizeof c->cfg);
    c->cfg.layers = c->layers;
    c->cfg.nlayers = 2;
    c->cfg.balance = app_balance;
    c->cfg.rows = ROWS;
    c->cfg.dtype = MB_I32;
    c->cfg.in_bytes = 4u * ROWS * IN;
    c->cfg.input = app_input;
    c->cfg.output = app_output;
    if ((rc = pp_exec_init(&c->ex, &c->cfg, &fw_plan[me], pg_shm_group(&c->shm), c->mem, sizeof c->mem))) return rc;
    return pp_exec_run(&c->ex);
}

/* ---- start-up: the vector tables of both cores, reset ---- */
extern uint32_t __stack0_top, __stack1_top, __bss_start__, __bss_end__;
void app_reset(void);
void app_fault(void);
typedef void (*app_vector)(void);
__attribute__((section(".vectors"), used))
const app_vector app_vectors0[4] = {(app_vector)(uintptr_t)&__stack0_top, app_reset, app_fault, app_fault};
__attribute__((section(".vectors1"), used, aligned(128)))
const app_vector app_vectors1[4] = {(app_vector)(uintptr_t)&__stack1_top, app_reset, app_fault, app_fault};

/* SYS_EXIT_EXTENDED: QEMU ends with `code` as its exit status */
static void app_exit(uint32_t code)
{
    static uint32_t block[2];
    register uint32_t r0 __asm__("r0") = 0x20u;
    register uint32_t r1 __asm__("r1") = (uint32_t)(uintptr_t)block;
    block[0] = 0x20026u;
    block[1] = code;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
}
void app_fault(void)
{
    app_exit(99u);
    for (;;) __asm__ volatile("wfi");
}
static volatile uint32_t app_done[CORES];
/* Outputs that differ from both layers applied directly (the weights keep them non-zero). */
static uint32_t app_check(void)
{
    int mb, r, o;
    int32_t x, h;
    uint32_t bad = 0;
    for (mb = 0; mb < NMB; mb++)
        for (r = 0; r < ROWS; r++)
            for (o = 0; o < OUT; o++) {
                x = mb * 100 + r * IN + (o % MID) % IN;
                h = (x * app_l[0].w) >> 8;
                if (app_out[mb][r * OUT + o] != ((h * app_l[1].w) >> 8)) bad++;
            }
    return bad;
}

void app_reset(void)
{
    int me = (int)*CPU_IDENTITY;
    /* The doorbell wakes wfi as a pending interrupt: enabled in the NVIC, masked by PRIMASK. */
    __asm__ volatile("cpsid i" ::: "memory");
    *NVIC_ISER0 = 1u << MHU0_IRQ;
    *DEMCR |= 1u << 24; /* the hook set's clock: the cycle counter, which counts once enabled */
    *DWT_CTRL |= 1u;
    if (me == 0) {
        uint32_t *p;
        for (p = &__bss_start__; p < &__bss_end__; p++) *p = 0u;
        memset(app_region, 0, sizeof app_region);
        app_cores[0].rc = pg_shm_format(app_region, sizeof app_region, CORES, SLOTS, PAYLOAD);
        *INITSVTOR1 = (uint32_t)(uintptr_t)app_vectors1;
        *CPUWAIT = 0u;
    }
    if (!app_cores[0].rc) app_cores[me].rc = app_run(me);
    app_done[me] = 1u;
    if (me == 0) {
        if (app_cores[0].rc) app_exit(1u); /* core 1 may never finish: do not wait for it */
        while (!app_done[1]) {}
        app_exit(app_cores[1].rc ? 2u : app_check() ? 3u : 0u);
    }
    for (;;) __asm__ volatile("wfi");
}
