/* main.c — pg_shm on both Cortex-M33 cores of the SSE-200 (QEMU mps2-an521 / mps3-an524).

   Every core enters fw_core_main() from start.c. CPU0 runs a cmocka suite compiled in here:
   tests/test_pg_shm.c (with PG_SHM_SUITE_HARTS for 2 cores): pg_shm's own tests and then
   the port conformance suite tests/pg_conformance.h, or with PG_SHM_SUITE_DTENSOR dtensor.h's
   execution suite tests/dtensor_conformance.h on a world of 2; with FW_SUITE_PIPELINE
   tests/test_pipeline_exec.c's pg_shm cases (training of every schedule that fits 2 ranks,
   inference, an error on one rank) with the two cores as the two ranks; with
   FW_SUITE_DTENSOR_OPS tests/test_dtensor_ops.c's propagation, kernels and op dispatcher on
   a mesh of 2 and 2x1 (sharded mm, addmm, bmm, linear and every other op family); with
   FW_SUITE_CONV tests/test_conv.c (the sharded conv2d / max pool with their halo exchange,
   forward and backward). Each multi-rank test hands its rank body to CPU1 (fwlibc/fw_jobs.h: a generation word + the MHU doorbell), runs
   rank 0 itself and collects both results. The
   ranks talk only through pg_shm's region, placed in the linker section .splitcore_shm (the
   SSE-200's SRAM). The result leaves through semihosting: cmocka's summary lines, and
   QEMU's exit status (SYS_EXIT_EXTENDED from CPU0). */
#include <stdint.h>
#include "fw_board.h"
#include "../fwlibc/fw_jobs.h"

static pg_shm_hooks board_hooks; /* CPU0's: fw_jobs_run waits and rings with them */

#if defined(FW_SUITE_DTENSOR_OPS) || defined(FW_SUITE_CONV)
static int world_run(int (*body)(pg_group *g, void *arg), void *arg);
#endif

#if defined(FW_SUITE_DTENSOR_OPS)
/* tests/test_dtensor_ops.c's op dispatcher on the 1-D mesh of the 2 cores (every op family,
   the einsum ops mm, addmm, bmm and linear among them, under every input placement), after
   its propagation and kernel tests. (test_dtensor_ops_mpi.c's 2-rank run adds a 2x1 mesh,
   ten times the dispatches on a mesh dimension of 1; the host and MPI runs keep it.) */
#define DTO_BOARD
static const int32_t dto_mesh1[1] = {FW_CORES}, dto_mesh2[2] = {2, FW_CORES / 2};
#define DTO_MESH1 dto_mesh1
#define DTO_MESH2 dto_mesh2
#pragma GCC diagnostic ignored "-Wunused-function" /* the 4-rank tests are not run here */
#include "../../test_dtensor_ops.c"
#define SUITE "dtensor ops suite over pg_shm"

static int dto_run(int (*fn)(pg_group *g, void *arg), void *arg)
{
    return world_run(fn, arg);
}

static int suite_main(void)
{
    const struct CMUnitTest tests[] = {
        DTO_LOCAL_TESTS,
        cmocka_unit_test(test_dispatch_1d),
        cmocka_unit_test(test_dispatch_b_1d),
    };
    return cmocka_run_group_tests_name("dtensor ops over pg_shm (2 Cortex-M33 cores)", tests, NULL, NULL);
}
#elif defined(FW_SUITE_CONV)
/* tests/test_conv.c: the kernels, then every sharded case (halo exchange) on the 2 cores */
#define CONV_BOARD FW_CORES
#define main       suite_main
#include "../../test_conv.c"
#undef main
#define SUITE "conv2d / max pool suite over pg_shm"

static int conv_run(int nranks, int (*body)(pg_group *g, void *arg))
{
    return nranks == FW_CORES ? world_run(body, NULL) : __LINE__;
}
#elif defined(FW_COLL_COST)
/* `scons bench-pg`: what pg_shm's small world all_reduce costs on the two cores, run under
   -icount shift=0 (one instruction is 1 ns of guest time, and QEMU runs the cores in turn, a
   waiting core asleep in WFI), so the guest time of a call is the instructions both cores
   executed for it: the copies, the reduction, the polls before a core sleeps, the doorbell
   and its interrupt. Built once with PG_SHM_NATIVE_COLLECTIVES and once without (pg.h's
   collectives over the rings); the one-way latency of an 8-byte message (ping-pong / 2) is
   measured the same way. Prints `cost: <build> <case> <guest ns per call>` lines for
   bench/pg/m33.c, after checking every all_reduce's result. */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#define COST_CALLS 2000
#define COST_MAXN  256 /* floats: 1 KB */
#define COST_BYTES PG_SHM_REGION_BYTES(FW_CORES, 4, 256)
#if PG_SHM_NATIVE_COLLECTIVES
#define SUITE "pg_shm native collectives' cost"
#else
#define SUITE "pg_shm collectives' cost"
#endif
static uint32_t cost_region[COST_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));
static pg_shm cost_shm[FW_CORES];
static float cost_x[FW_CORES][COST_MAXN], cost_y[FW_CORES][COST_MAXN];
static const uint32_t cost_sizes[] = {8, 64, 256, 1024};
static const char *const cost_names[] = {"8B", "64B", "256B", "1KB"};
#define COST_NS (sizeof cost_sizes / sizeof cost_sizes[0])
static uint32_t cost_us[COST_NS + 1]; /* CPU0's guest µs per COST_CALLS calls; the last: ping-pongs */

static int cost_job(int core, void *arg)
{
    pg_shm_hooks h;
    pg_group *g;
    uint32_t t0, k, i, n;
    uint64_t v = 0;
    size_t got;
    int rc;
    (void)arg;
    fw_hooks(&h);
    if ((rc = pg_shm_init(&cost_shm[core], cost_region, sizeof cost_region, core, &h)) != 0) return rc;
    g = pg_shm_group(&cost_shm[core]);
    for (i = 0; i < COST_MAXN; i++) cost_x[core][i] = (float)((i + (uint32_t)core) % 7u);
    for (k = 0; k < COST_NS; k++) {
        n = cost_sizes[k] / 4u;
        for (i = 0; i < 20; i++) /* warm: both cores past their first polls */
            if ((rc = pg_all_reduce(g, cost_x[core], cost_y[core], n, MB_F32, PG_SUM)) != 0) return rc;
        if ((rc = pg_barrier(g)) != 0) return rc;
        t0 = h.now_us(h.ctx);
        for (i = 0; i < COST_CALLS; i++)
            if ((rc = pg_all_reduce(g, cost_x[core], cost_y[core], n, MB_F32, PG_SUM)) != 0) return rc;
        if (core == 0) cost_us[k] = h.now_us(h.ctx) - t0;
        for (i = 0; i < n; i++) /* every core's sum: (i % 7) + ((i + 1) % 7) */
            if (cost_y[core][i] != (float)(i % 7u + (i + 1u) % 7u)) return __LINE__;
    }
    if ((rc = pg_barrier(g)) != 0) return rc;
    t0 = h.now_us(h.ctx);
    for (i = 0; i < COST_CALLS; i++) { /* 8 bytes there and back */
        if (core == 0 && (rc = pg_send(g, 1, 1, &v, 8)) != 0) return rc;
        if ((rc = pg_recv(g, 1 - core, 1, cost_x[core], 8, &got)) != 0) return rc;
        if (core == 1 && (rc = pg_send(g, 0, 1, &v, 8)) != 0) return rc;
    }
    if (core == 0) cost_us[COST_NS] = h.now_us(h.ctx) - t0;
    return pg_barrier(g);
}

static int suite_main(void)
{
    int rcs[FW_CORES], c, rc = pg_shm_format(cost_region, sizeof cost_region, FW_CORES, 4, 256);
    uint32_t k;
    const char *build = PG_SHM_NATIVE_COLLECTIVES ? "pg_shm_native" : "pg_shm";
    if (rc) return rc;
    fw_jobs_run(&board_hooks, FW_CORES, cost_job, NULL, rcs);
    for (c = 0; c < FW_CORES; c++)
        if (rcs[c]) {
            printf("core %d failed: %d\n", c, rcs[c]);
            return 1;
        }
    for (k = 0; k < COST_NS; k++) /* guest µs per COST_CALLS calls -> ns per call */
        printf("cost: %s all_reduce_%s %lu\n", build, cost_names[k], (unsigned long)cost_us[k] * 1000ul / COST_CALLS);
    printf("cost: %s one_way_8B %lu\n", build, (unsigned long)cost_us[COST_NS] * 1000ul / COST_CALLS / 2ul);
    return 0;
}
#elif defined(FW_SUITE_PIPELINE)
#define PIPELINE_EXEC_SUITE_CORES FW_CORES
#define main                      suite_main
#include "../../test_pipeline_exec.c"
#undef main
#define SUITE "pipeline executor suite over pg_shm"

void pipeline_suite_hooks(pg_shm_hooks *h)
{
    fw_hooks(h);
}

void pipeline_run_on_cores(int (*rank)(int core, void *arg), void *arg, int *rcs)
{
    fw_jobs_run(&board_hooks, FW_CORES, rank, arg, rcs);
}
#else
#define PG_SHM_SUITE_HARTS 1
#define PG_SHM_SUITE_CORES FW_CORES
#define PG_SHM_SUITE_NAME  "pg_shm (2 Cortex-M33 cores of the SSE-200, bare metal)"
#define main               suite_main
#include "../../test_pg_shm.c"
#undef main
#ifdef PG_SHM_SUITE_DTENSOR
#define SUITE "dtensor suite over pg_shm"
#else
#define SUITE "pg_shm suite"
#endif

uint32_t suite_region[REGION_BYTES / 4 + 16] __attribute__((aligned(64), section(".splitcore_shm")));

void suite_hooks(pg_shm_hooks *h)
{
    fw_hooks(h);
}

static int suite_rank(int core, void *f)
{
    return rank_main(core, *(body_fn *)f);
}

void run_on_cores(body_fn f, int *results)
{
    fw_jobs_run(&board_hooks, CORES, suite_rank, &f, results);
}

#ifndef PG_SHM_SUITE_DTENSOR
/* ports/platform/sse200.h itself, before pg_shm's suites. Its clock on both cores at once,
   read back to back for 20 SysTick periods (20 reloads, where QEMU shows the reload before
   the tick is even pending): it never steps back (the loop ends once it advanced 20 ms). */
static int clock_job(int core, void *arg)
{
    pg_shm_hooks h;
    uint32_t t0, prev, now;
    (void)core;
    (void)arg;
    fw_hooks(&h);
    t0 = prev = h.now_us(h.ctx);
    do {
        now = h.now_us(h.ctx);
        if ((int32_t)(now - prev) < 0) return __LINE__;
        prev = now;
    } while (now - t0 < 20000u);
    return 0;
}

static void test_clock_never_steps_back(void **state)
{
    int rcs[FW_CORES], c;
    (void)state;
    fw_jobs_run(&board_hooks, FW_CORES, clock_job, NULL, rcs);
    for (c = 0; c < FW_CORES; c++) assert_int_equal(rcs[c], 0);
}

/* CPU1 rings CPU0's doorbell (MHU0 CPU0INTR_SET) while CPU0 polls a flag: CPU0's IRQ 6 handler
   has cleared the MHU and latched the doorbell, and wait() consumes the latch. CPU1 returns
   (and rings again: the job board's done) only once CPU0 has looked. */
static volatile uint32_t bell_sent, bell_checked;

static int bell_job(int core, void *arg)
{
    uint32_t latched, stat, after;
    (void)arg;
    if (core == 1) {
        fw_notify(0);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        bell_sent = 1;
        while (!bell_checked) fw_wait();
        return 0;
    }
    /* WFI, not a spin (under QEMU's -icount a spinning core keeps the other from running);
       it leaves the latch alone: only wait() clears it */
    while (!bell_sent) __asm__ volatile("wfi" ::: "memory");
    __asm__ volatile("dsb\n\tisb" ::: "memory"); /* the pending IRQ is taken here */
    latched = fw_sse.core[0].rung;
    stat = PG_SHM_SSE200__MHU_STAT(0);
    fw_wait();
    after = fw_sse.core[0].rung;
    bell_checked = 1;
    return latched != 1 ? __LINE__ : stat != 0 ? __LINE__ : after != 0 ? __LINE__ : 0;
}

static void test_doorbell_latched_and_consumed(void **state)
{
    int rcs[FW_CORES], c;
    (void)state;
    bell_sent = bell_checked = 0;
    fw_wait(); /* consume a latch left by the job board */
    fw_jobs_run(&board_hooks, FW_CORES, bell_job, NULL, rcs);
    for (c = 0; c < FW_CORES; c++) assert_int_equal(rcs[c], 0);
}

/* CPU0 restarts CPU1 mid-run (fw_board.h: fw_restart_cpu1, held through CPUWAIT, released
   with INITSVTOR1, only the reset pulse emulated), at a step and a delay picked per run, so
   CPU1 is caught anywhere: inside one of pg_shm's waits, between calls, with a message sent
   and not received; it stays held for a time picked per run. CPU1 boots from the table CPU0
   released it with (every other run a second one, whose reset entry counts its boots) and
   its start-up runs the current job again, whose pg_shm_init re-attaches to the region it
   kept; CPU0 gets PG_ERR_PEER_RESET for what it had in flight, recovers, both agree on the
   step to resume from and finish the run with every step's results checked against the
   single-core sums (lc_step). RESTART_RUNS in a row, each with exactly one reset of CPU1
   that found it held. */
static uint32_t warm_boots0, warm_alt0, warm_step, warm_delay, warm_hold, warm_alt;
static int warm_told0, warm_held;

static int body_warm_restart(pg_group *g, int rank)
{
    uint32_t step = 1, k;
    int rc, asked = 0;
    if (rank == 1 && fw_boots1 != warm_boots0) { /* restarted: the step is what CPU0 tells */
        step = 0x7FFFFFFF;
        CHECK_RC(restart_resync(g, &step, 1), 0);
    }
    while (step <= RESTART_STEPS) {
        if (rank == 0 && step == warm_step && !asked) {
            asked = 1;
            for (k = 0; k < warm_delay; k++) __asm__ volatile("nop");
            warm_held += fw_restart_cpu1(warm_hold, (int)warm_alt);
        }
        rc = lc_step(g, rank, step);
        if (rc == PG_ERR_PEER_RESET) {
            warm_told0 += rank == 0;
            CHECK_RC(restart_resync(g, &step, 0), 0);
            continue;
        }
        CHECK_RC(rc, 0);
        step++;
    }
    CHECK(rank != 1 || fw_boots1 == warm_boots0 + 1u);
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

static void test_cpu1_warm_restart(void **state)
{
    uint32_t run, seed = 777u;
    (void)state;
    for (run = 0; run < RESTART_RUNS; run++) {
        seed = mix(seed + run);
        warm_step = 2u + (seed >> 8) % (RESTART_STEPS - 4u);
        warm_delay = (seed >> 16) % 4096u;
        warm_hold = mix(seed) % 4096u;
        warm_alt = run & 1u; /* every other restart released with CPU1's second table */
        warm_boots0 = fw_boots1;
        warm_alt0 = fw_alt_boots1;
        warm_told0 = warm_held = 0;
        run_all(body_warm_restart);
        assert_int_equal(fw_boots1, warm_boots0 + 1u);         /* CPU1 restarted once */
        assert_int_equal(warm_held, 1);                        /* held by CPUWAIT in that reset */
        assert_int_equal(fw_alt_boots1, warm_alt0 + warm_alt); /* booted from what INITSVTOR1 named */
        assert_true(warm_told0 >= 1);                          /* and CPU0 was told */
    }
    print_message("CPU1 warm restart: %d runs, CPU1 reset mid-run, held by CPUWAIT, booted from INITSVTOR1's "
                  "table, CPU0 got PG_ERR_PEER_RESET, both recovered and finished with every step checked\n",
                  RESTART_RUNS);
}

static int board_main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_never_steps_back),
        cmocka_unit_test(test_doorbell_latched_and_consumed),
    };
    const struct CMUnitTest restart[] = {
        cmocka_unit_test(test_cpu1_warm_restart),
    };
    int failed = cmocka_run_group_tests_name("sse200.h hooks (2 Cortex-M33 cores)", tests, NULL, NULL);
    failed += suite_main();
    return failed + cmocka_run_group_tests_name("a core's restart on the SSE-200", restart, NULL, NULL);
}
#define SUITE_MAIN board_main
#endif
#endif
#ifndef SUITE_MAIN
#define SUITE_MAIN suite_main
#endif

#if defined(FW_SUITE_DTENSOR_OPS) || defined(FW_SUITE_CONV)
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
/* A world of FW_CORES over pg_shm: every core attaches and runs the body. */
#define WORLD_SLOTS   8
#define WORLD_PAYLOAD 2048
#define WORLD_BYTES   PG_SHM_REGION_BYTES(FW_CORES, WORLD_SLOTS, WORLD_PAYLOAD)
static uint32_t world_region[WORLD_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));
static pg_shm world_shm[FW_CORES];
static int (*world_body)(pg_group *g, void *arg);

static int world_rank(int core, void *arg)
{
    pg_shm_hooks h;
    int rc;
    fw_hooks(&h);
    rc = pg_shm_init(&world_shm[core], world_region, sizeof world_region, core, &h);
    return rc < 0 ? rc : world_body(pg_shm_group(&world_shm[core]), arg);
}

/* 0 when every core's body returned 0, else the first non-zero result. */
static int world_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    int rcs[FW_CORES], c, rc = pg_shm_format(world_region, sizeof world_region, FW_CORES, WORLD_SLOTS, WORLD_PAYLOAD);
    if (rc) return rc;
    world_body = body;
    fw_jobs_run(&board_hooks, FW_CORES, world_rank, arg, rcs);
    for (c = 0; c < FW_CORES; c++)
        if (rcs[c]) return rcs[c];
    return 0;
}
#endif

void fw_core_main(unsigned cpu)
{
    pg_shm_hooks h;
    fw_hooks(&h);
    if (cpu == 0) {
        board_hooks = h;
        printf("sse200_smp: %s on %d Cortex-M33 cores (QEMU %s, bare metal)\n", SUITE, FW_CORES, fw_board);
        fw_exit(SUITE_MAIN());
    }
    fw_jobs_serve(&h, (int)cpu);
}
