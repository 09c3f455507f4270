/* test_faults_mpi.c — fault injection on pg_mpi, run by `scons test` as
   mpirun --oversubscribe -np 4 (site_scons/splitcore/faults.py checks the run).
   1. A stalled rank: rank 3 sleeps 3x the 300 ms timeout; every other rank's pg_recv and
      pg_all_reduce (native: pg_mpi's polled exchange) returns PG_ERR_TIMEOUT within 2x the
      timeout. Then every rank recovers (pg_recover) and an all_reduce gives the right sum.
      Rank 0 prints "faults_mpi: stall ok ..." only if every rank passed (MPI_Allreduce on
      MPI_COMM_WORLD, outside the port).
   2. An abort mid-collective: rank 2 calls pg_abort while the others wait inside
      pg_all_reduce (20 s timeout): everyone returns PG_ERR_ABORTED well before it; recover;
      reuse. Rank 0 prints "faults_mpi: abort ok ...".
   3. The pipeline executor (pipeline.h) over pg_mpi, 4 stages forward-only: a layer on rank 2
      fails -> every rank returns PP_ERR_LAYER with the layer's code and rank 2 (the ranks
      agree over point-to-point messages); rank 3 stalls 3x the timeout inside a layer -> every
      other rank returns PP_ERR_COMM (the port's TIMEOUT or ABORTED kept) within 2x the timeout
      of the step's start; then every rank reruns the step until it succeeds and the last
      stage's outputs are right. Rank 0 prints "faults_mpi: pipeline ok ...".
   4. A killed rank: rank 1 raises SIGKILL while the others loop over pg_all_reduce with a
      2 s timeout. The others must not hang: either pg_mpi returns an error (they print
      "faults_mpi: rank R error ..." and exit 3) or mpirun ends the job; the runner asserts
      a non-zero exit well within its own time limit, and the "ok" lines of 1 and 2.
   Without a fault the program would exit 0, so the runner's check is meaningful. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PG_IMPLEMENTATION
#define PG_MPI_IMPLEMENTATION
#include "ports/pg_mpi.h"
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"

#define T_MS    300u
#define LONG_MS 20000u

static pg_mpi_port port;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000u;
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    while (nanosleep(&ts, &ts) != 0) {}
}

/* 0 on every rank, or this rank's failing line; all ranks learn the worst (outside pg). */
static int agree(int mine)
{
    int worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

#define FAIL(...)                                                       \
    do {                                                                \
        fprintf(stderr, "faults_mpi: rank %d line %d: ", me, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                   \
        fputc('\n', stderr);                                            \
        return __LINE__;                                                \
    } while (0)

static int recover_and_check(pg_group *g, int me, int n)
{
    int32_t v = me + 1, w = 0;
    int rc;
    pg_set_timeout(g, LONG_MS);
    if ((rc = pg_recover(g)) != PG_OK) FAIL("pg_recover: %s", pg_strerror(rc));
    if ((rc = pg_all_reduce(g, &v, &w, 1, MB_I32, PG_SUM)) != PG_OK) FAIL("all_reduce: %s", pg_strerror(rc));
    if (w != n * (n + 1) / 2) FAIL("sum %d", (int)w);
    return 0;
}

static double worst_ms;

static int stall_phase(pg_group *g, int me, int n)
{
    int32_t v = me, w = 0;
    char buf[16];
    size_t got;
    int rc;
    double t0, el;
    pg_set_timeout(g, LONG_MS);
    if ((rc = pg_barrier(g)) != PG_OK) FAIL("barrier: %s", pg_strerror(rc));
    pg_set_timeout(g, T_MS);
    if (me == n - 1) {
        sleep_ms(3u * T_MS);
    } else {
        t0 = now_ms();
        rc = pg_recv(g, n - 1, 4, buf, sizeof buf, &got);
        el = now_ms() - t0;
        if (rc != PG_ERR_TIMEOUT || el >= 2.0 * T_MS) FAIL("recv: %s after %.1f ms", pg_strerror(rc), el);
        if (el > worst_ms) worst_ms = el;
        t0 = now_ms();
        rc = pg_all_reduce(g, &v, &w, 1, MB_I32, PG_SUM);
        el = now_ms() - t0;
        if (rc != PG_ERR_TIMEOUT || el >= 2.0 * T_MS) FAIL("all_reduce: %s after %.1f ms", pg_strerror(rc), el);
        if (el > worst_ms) worst_ms = el;
    }
    return recover_and_check(g, me, n);
}

static int abort_phase(pg_group *g, int me, int n)
{
    int32_t v = me, w = 0;
    int rc;
    double t0 = now_ms(), el;
    pg_set_timeout(g, LONG_MS);
    if ((rc = pg_barrier(g)) != PG_OK) FAIL("barrier: %s", pg_strerror(rc));
    if (me == 2 % n) {
        sleep_ms(100);
        if ((rc = pg_abort(g, -42)) != PG_OK) FAIL("pg_abort: %s", pg_strerror(rc));
    }
    rc = pg_all_reduce(g, &v, &w, 1, MB_I32, PG_SUM);
    el = now_ms() - t0;
    if (rc != PG_ERR_ABORTED || el >= 5000.0) FAIL("all_reduce: %s after %.1f ms", pg_strerror(rc), el);
    if (el > worst_ms) worst_ms = el;
    return recover_and_check(g, me, n);
}

/* A phase's end on every rank: the worst failing line (agree) and the slowest time. */
static int phase_done(int mine)
{
    int rc = agree(mine);
    MPI_Allreduce(MPI_IN_PLACE, &worst_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return rc;
}

/* ---- 3: the pipeline executor ---- */
#define P_STAGES 4
#define P_ROWS   2
#define P_COLS   4
#define P_NMB    4
enum { P_NONE, P_FAIL, P_STALL };
static int p_fault, p_calls;
static float p_out[P_NMB][P_ROWS * P_COLS];

/* layer s adds s + 1; rank 2's fails on its second call (P_FAIL), rank 3's sleeps (P_STALL) */
static int p_add(void *self, const mb_tensor *x, mb_tensor *y)
{
    int s = (int)(intptr_t)self, i;
    if (p_fault == P_FAIL && s == 2 && p_calls++ == 1) return -77;
    if (p_fault == P_STALL && s == 3 && p_calls++ == 1) sleep_ms(3u * T_MS);
    for (i = 0; i < P_ROWS * P_COLS; i++) ((float *)y->data)[i] = ((const float *)x->data)[i] + (float)(s + 1);
    return 0;
}
static int p_input(void *user, int mb, mb_tensor *x)
{
    int i;
    (void)user;
    for (i = 0; i < P_ROWS * P_COLS; i++) ((float *)x->data)[i] = (float)(mb * 100 + i);
    return 0;
}
static int p_output(void *user, int mb, const mb_tensor *y)
{
    (void)user;
    memcpy(p_out[mb], y->data, sizeof p_out[mb]);
    return 0;
}

/* One step with `fault`; rc, err and err_rank of the run. */
static int p_step(pg_group *g, int fault, int *err, int *err_rank)
{
    static pp_action st[2][512];
    static pp_plan sched, plan;
    static pp_table t;
    static pp_layer layers[P_STAGES];
    static const int32_t balance[P_STAGES] = {1, 1, 1, 1};
    static uint64_t mem[64];
    pp_exec_cfg cfg;
    pp_exec e;
    int l, rc;
    if (pp_schedule_build(&sched, PP_SCHED_FORWARD_ONLY, P_STAGES, 1, P_NMB, st[0], sizeof st[0], NULL) ||
        pp_lower(&sched, &plan, st[1], sizeof st[1], NULL) || pp_plan_table(&plan, pg_rank(g), &t))
        return -1000;
    for (l = 0; l < P_STAGES; l++) {
        memset(&layers[l], 0, sizeof layers[l]);
        layers[l].forward = p_add;
        layers[l].self = (void *)(intptr_t)l;
        layers[l].act_bytes = P_ROWS * P_COLS * 4;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.layers = layers;
    cfg.nlayers = P_STAGES;
    cfg.balance = balance;
    cfg.rows = P_ROWS;
    cfg.dtype = MB_F32;
    cfg.in_bytes = P_ROWS * P_COLS * 4;
    cfg.input = p_input;
    cfg.output = p_output;
    if ((rc = pp_exec_init(&e, &cfg, &t, g, mem, sizeof mem))) return rc;
    p_fault = fault;
    p_calls = 0;
    rc = pp_exec_run(&e);
    *err = e.err;
    *err_rank = e.err_rank;
    return rc;
}

/* Reruns without fault until a step succeeds (at most 40), then checks the outputs. */
static int p_rerun(pg_group *g, int me, int n)
{
    int rc = -1, err, err_rank, k, mb, i;
    for (k = 0; k < 40 && rc; k++) rc = p_step(g, P_NONE, &err, &err_rank);
    if (rc) FAIL("rerun: %d (%s)", rc, pp_strerror(rc));
    if (me == n - 1)
        for (mb = 0; mb < P_NMB; mb++)
            for (i = 0; i < P_ROWS * P_COLS; i++)
                if (p_out[mb][i] != (float)(mb * 100 + i + 10)) FAIL("output %d[%d] = %g", mb, i, (double)p_out[mb][i]);
    return 0;
}

static int pipeline_phase(pg_group *g, int me, int n)
{
    int rc, err, err_rank;
    double t0, el;
    if (n != P_STAGES) FAIL("needs %d ranks (one stage each)", P_STAGES);
    pg_set_timeout(g, LONG_MS);
    if ((rc = pg_barrier(g)) != PG_OK) FAIL("barrier: %s", pg_strerror(rc));
    rc = p_step(g, P_FAIL, &err, &err_rank);
    if (rc != PP_ERR_LAYER || err != -77 || err_rank != 2)
        FAIL("layer error: %d (%s), err %d, rank %d", rc, pp_strerror(rc), err, err_rank);
    if ((rc = p_rerun(g, me, n))) return rc;
    if ((rc = pg_barrier(g)) != PG_OK) FAIL("barrier: %s", pg_strerror(rc));
    pg_set_timeout(g, T_MS);
    t0 = now_ms();
    rc = p_step(g, P_STALL, &err, &err_rank);
    el = now_ms() - t0;
    if (me != n - 1) {
        if (rc != PP_ERR_COMM || (err != PG_ERR_TIMEOUT && err != PG_ERR_ABORTED) || el >= 2.0 * T_MS)
            FAIL("stall: %d (%s), err %d (%s) after %.1f ms", rc, pp_strerror(rc), err, pg_strerror(err), el);
        if (el > worst_ms) worst_ms = el;
    } else if (rc == PP_OK)
        FAIL("the stalled rank's step succeeded");
    return p_rerun(g, me, n);
}

int main(int argc, char **argv)
{
    int me = 0, n = 0, rc, i;
    pg_group *g;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (pg_mpi_init(&port, MPI_COMM_WORLD) != PG_OK || n < 3) {
        fprintf(stderr, "faults_mpi: needs pg_mpi_init and >= 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    g = pg_mpi_group(&port);

    worst_ms = 0;
    rc = phase_done(stall_phase(g, me, n));
    if (me == 0 && rc == 0)
        printf("faults_mpi: stall ok: every peer PG_ERR_TIMEOUT within %.1f ms (timeout %u ms, bound %u ms), "
               "recovered\n",
               worst_ms, T_MS, 2u * T_MS);
    if (rc) goto out;
    worst_ms = 0;
    rc = phase_done(abort_phase(g, me, n));
    if (me == 0 && rc == 0)
        printf("faults_mpi: abort ok: every rank PG_ERR_ABORTED within %.1f ms (timeout %u ms), recovered\n", worst_ms,
               LONG_MS);
    if (rc) goto out;
    worst_ms = 0;
    rc = phase_done(pipeline_phase(g, me, n));
    if (me == 0 && rc == 0)
        printf("faults_mpi: pipeline ok: a layer error -> PP_ERR_LAYER (-77, rank 2) on every rank; a stalled "
               "rank -> every other rank PP_ERR_COMM within %.1f ms (timeout %u ms, bound %u ms); reruns work\n",
               worst_ms, T_MS, 2u * T_MS);
    if (rc) goto out;
    fflush(stdout);
    fflush(stderr);

    /* 4: rank 1 dies in the middle of a stream of collectives */
    pg_set_timeout(g, 2000);
    for (i = 0; i < 1000000; i++) {
        int32_t v = me, w = 0;
        if (me == 1 && i == 50) raise(SIGKILL);
        rc = pg_all_reduce(g, &v, &w, 1, MB_I32, PG_SUM);
        if (rc != PG_OK) {
            printf("faults_mpi: rank %d error after the kill: %s (iteration %d)\n", me, pg_strerror(rc), i);
            fflush(stdout);
            MPI_Abort(MPI_COMM_SELF, 3); /* no MPI_Finalize with a dead peer */
        }
    }
    printf("faults_mpi: rank %d finished 10^6 all_reduces with a dead peer?\n", me);
    rc = 0;
out:
    pg_mpi_finalize(&port);
    MPI_Finalize();
    return rc ? 1 : 0;
}
