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
   3. A killed rank: rank 1 raises SIGKILL while the others loop over pg_all_reduce with a
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
    rc = agree(stall_phase(g, me, n));
    MPI_Allreduce(MPI_IN_PLACE, &worst_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0 && rc == 0)
        printf("faults_mpi: stall ok: every peer PG_ERR_TIMEOUT within %.1f ms (timeout %u ms, bound %u ms), "
               "recovered\n",
               worst_ms, T_MS, 2u * T_MS);
    if (rc) goto out;
    worst_ms = 0;
    rc = agree(abort_phase(g, me, n));
    MPI_Allreduce(MPI_IN_PLACE, &worst_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0 && rc == 0)
        printf("faults_mpi: abort ok: every rank PG_ERR_ABORTED within %.1f ms (timeout %u ms), recovered\n", worst_ms,
               LONG_MS);
    if (rc) goto out;
    fflush(stdout);
    fflush(stderr);

    /* 3: rank 1 dies in the middle of a stream of collectives */
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
