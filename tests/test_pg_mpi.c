/* test_pg_mpi.c — the pg.h conformance suite over pg_mpi.h: run under
   mpirun --oversubscribe -np 2 (or 4). Every rank runs every test body; pgc_run combines
   the ranks' results (MPI_Allgather on MPI_COMM_WORLD, outside the port's communicators),
   so every rank's cmocka sees the same pass/fail and exits with the same failure count;
   only rank 0 prints the cmocka summary. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <cmocka.h>

#define PG_IMPLEMENTATION
#define PG_MPI_IMPLEMENTATION
#include "ports/pg_mpi.h"

static pg_mpi_port pgt_port;

static int pgc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    int mine = body(pg_mpi_group(&pgt_port), arg), all[PG_MAX_RANKS], r, n = pg_size(pg_mpi_group(&pgt_port));
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (r = 0; r < n; r++)
        if (all[r] != 0 && pg_rank(pg_mpi_group(&pgt_port)) == 0)
            fprintf(stderr, "rank %d: %s %d\n", r, all[r] > 0 ? "failed at pg_conformance.h line" : "error", all[r]);
    for (r = 0; r < n; r++)
        if (all[r] != 0) {
            pg_recover(pg_mpi_group(&pgt_port)); /* leave a clean world for the next test */
            return all[r];
        }
    return 0;
}

#include "pg_conformance.h"

/* pg_mpi's exchange (small collectives) sends a payload in several eager messages and
   receives a peer's as its header announces them: a rank whose sizes disagree in the
   number of messages, or that takes the native path (check + MPI call) while the others
   exchange, makes every rank return PG_ERR_MISMATCH and leaves no message behind, so
   the next collective is right without pg_recover. */
static int pgt_exchange_mismatch_body(pg_group *g, void *arg)
{
    static const size_t mine0[3] = {3000, 100, 5000}; /* f32: 4 messages, 1, the native path */
    static const size_t theirs0[3] = {100, 3000, 100};
    size_t counts[PGC_MAX_RANKS];
    float *a = (float *)pgc_a[pg_rank(g)], *b = (float *)pgc_b[pg_rank(g)];
    int me = pg_rank(g), n = pg_size(g), r, k, i;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (k = 0; k < 3; k++) {
        for (r = 0; r < n; r++) counts[r] = 50;
        counts[0] = me == 0 ? mine0[k] : theirs0[k];
        for (i = 0; i < 5000; i++) a[i] = (float)(me + i);
        PGC_RC(pg_all_gatherv(g, a, b, counts, MB_F32), n == 1 ? PG_OK : PG_ERR_MISMATCH);
        PGC_OK(pg_all_reduce(g, a, b, 2500, MB_F32, PG_SUM)); /* 3 messages per peer */
        for (i = 0; i < 2500; i++) PGC_CHECK(b[i] == (float)(n * i + n * (n - 1) / 2));
    }
    return 0;
}

static void pgt_test_exchange_mismatch(void **state)
{
    (void)state;
    assert_int_equal(pgc_run(pgt_exchange_mismatch_body, 0), 0);
}

/* pg_all_gather of one message a peer (pg_mpi__gather_even) against ranks that disagree:
   more messages (count 2000 f32: the general exchange), other per-rank counts through
   pg_all_gatherv, one element more; then agreeing calls, also in place (own block already
   in recv). Every rank returns PG_ERR_MISMATCH and nothing is left behind. */
static int pgt_gather_even_body(pg_group *g, void *arg)
{
    size_t counts[PGC_MAX_RANKS];
    float *a = (float *)pgc_a[pg_rank(g)], *b = (float *)pgc_b[pg_rank(g)];
    int me = pg_rank(g), n = pg_size(g), r, k, i;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (k = 0; k < 4; k++) {
        for (i = 0; i < 5000; i++) a[i] = (float)(me * 10000 + i);
        if (k == 0) {
            PGC_RC(pg_all_gather(g, a, b, me == 0 ? 2000 : 100, MB_F32), n == 1 ? PG_OK : PG_ERR_MISMATCH);
        } else if (k == 1 && me == 0) {
            PGC_RC(pg_all_gather(g, a, b, 100, MB_F32), n == 1 ? PG_OK : PG_ERR_MISMATCH);
        } else if (k == 1) {
            for (r = 0; r < n; r++) counts[r] = r == 0 ? 1000 : 100;
            PGC_RC(pg_all_gatherv(g, a, b, counts, MB_F32), PG_ERR_MISMATCH);
        } else if (k == 2) {
            PGC_RC(pg_all_gather(g, a, b, me == n - 1 ? 101 : 100, MB_F32), n == 1 ? PG_OK : PG_ERR_MISMATCH);
        } else {
            PGC_OK(pg_all_gather(g, a, b, 100, MB_F32));
            for (r = 0; r < n; r++)
                for (i = 0; i < 100; i++) PGC_CHECK(b[r * 100 + i] == (float)(r * 10000 + i));
        }
        PGC_OK(pg_all_reduce(g, a, b, 2500, MB_F32, PG_SUM)); /* 3 messages per peer */
        for (i = 0; i < 2500; i++) PGC_CHECK(b[i] == (float)(10000 * n * (n - 1) / 2 + n * i));
    }
    for (i = 0; i < 300; i++) b[me * 300 + i] = (float)(me * 10000 + i); /* in place */
    PGC_OK(pg_all_gather(g, b + me * 300, b, 300, MB_F32));
    for (r = 0; r < n; r++)
        for (i = 0; i < 300; i++) PGC_CHECK(b[r * 300 + i] == (float)(r * 10000 + i));
    return 0;
}

static void pgt_test_gather_even(void **state)
{
    (void)state;
    assert_int_equal(pgc_run(pgt_gather_even_body, 0), 0);
}

/* An exchange's first messages go out from two buffers per peer, alternately, with their
   MPI requests freed at once (pg_mpi__send_first): a buffer is reused two exchanges later,
   once the exchange between proved the peer took what it held. 3,000 small collectives back
   to back (all_gather, all_reduce, the check before a native all_reduce), every rank
   writing new values into its send buffer as soon as a call returns and now and then
   sleeping (so its peers run ahead into the next exchange); every result is checked. */
static int pgt_exchange_stream_body(pg_group *g, void *arg)
{
    float *a = (float *)pgc_a[pg_rank(g)], *b = (float *)pgc_b[pg_rank(g)];
    int me = pg_rank(g), n = pg_size(g), r, k, i;
    const struct timespec nap = {0, 200000};
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (k = 0; k < 3000; k++) {
        for (i = 0; i < 64; i++) a[i] = (float)(k * 1000 + me * 100 + i);
        if ((k * 7 + me * 3) % 97 == 0) nanosleep(&nap, 0);
        if (k % 3 == 0) {
            PGC_OK(pg_all_gather(g, a, b, 64, MB_F32));
            for (r = 0; r < n; r++)
                for (i = 0; i < 64; i++) PGC_CHECK(b[r * 64 + i] == (float)(k * 1000 + r * 100 + i));
        } else {
            size_t cnt = k % 3 == 1 ? 64 : 8192; /* 8192 f32: the header exchange, then MPI_Allreduce */
            for (i = 64; i < (int)cnt; i++) a[i] = (float)(me + (k & 15));
            PGC_OK(pg_all_reduce(g, a, b, cnt, MB_F32, PG_SUM));
            for (i = 0; i < 64; i++) PGC_CHECK(b[i] == (float)(n * (k * 1000 + i) + 100 * n * (n - 1) / 2));
            for (i = 64; i < (int)cnt; i++) PGC_CHECK(b[i] == (float)(n * (k & 15) + n * (n - 1) / 2));
        }
    }
    return 0;
}

static void pgt_test_exchange_stream(void **state)
{
    (void)state;
    assert_int_equal(pgc_run(pgt_exchange_stream_body, 0), 0);
}

/* Large all_gather(v): the check, then (from PG_MPI_GATHER_SYNC output bytes) a barrier
   and the blocking MPI call; also without the check and in non-blocking mode. 64 Ki f32 a
   rank (256 KB; n ranks: n x 256 KB out) and uneven counts, new values every round. */
#define PGT_LARGE 65536
static float pgt_big_send[PGC_MAX_RANKS][PGT_LARGE], pgt_big_recv[PGC_MAX_RANKS][PGC_MAX_RANKS * PGT_LARGE];

static int pgt_gather_large_body(pg_group *g, void *arg)
{
    size_t counts[PGC_MAX_RANKS], off;
    int me = pg_rank(g), n = pg_size(g), r, k, i;
    float *a = pgt_big_send[me], *b = pgt_big_recv[me];
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (k = 0; k < 6; k++) {
        pgt_port.check_args = k % 3 != 1; /* rounds 1 and 4 without the check */
        pgt_port.blocking = k < 3;        /* rounds 3-5 non-blocking */
        for (i = 0; i < PGT_LARGE; i++) a[i] = (float)(k * 100000 + me * 1000 + (i & 1023));
        PGC_OK(pg_all_gather(g, a, b, PGT_LARGE, MB_F32));
        for (r = 0; r < n; r++)
            for (i = 0; i < PGT_LARGE; i += 97)
                PGC_CHECK(b[r * PGT_LARGE + i] == (float)(k * 100000 + r * 1000 + (i & 1023)));
        for (r = 0; r < n; r++) counts[r] = (size_t)(PGT_LARGE - 1000 * r); /* uneven, all large */
        PGC_OK(pg_all_gatherv(g, a, b, counts, MB_F32));
        for (r = 0, off = 0; r < n; off += counts[r], r++)
            for (i = 0; i < (int)counts[r]; i += 89)
                PGC_CHECK(b[off + (size_t)i] == (float)(k * 100000 + r * 1000 + (i & 1023)));
    }
    pgt_port.check_args = PG_MPI_CHECK_ARGS;
    pgt_port.blocking = PG_MPI_BLOCKING;
    return 0;
}

static void pgt_test_gather_large(void **state)
{
    (void)state;
    assert_int_equal(pgc_run(pgt_gather_large_body, 0), 0);
}

static const struct CMUnitTest pgt_tests[] = {
    cmocka_unit_test(pgt_test_exchange_mismatch), cmocka_unit_test(pgt_test_gather_even),
    cmocka_unit_test(pgt_test_exchange_stream), cmocka_unit_test(pgt_test_gather_large)};

int main(int argc, char **argv)
{
    int failed, rank = 0, size = 0, rc;
    long mine, total = 0;
    char name[64];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rc = pg_mpi_init(&pgt_port, MPI_COMM_WORLD);
    if (rc != PG_OK || size > PGC_MAX_RANKS) {
        fprintf(stderr, "pg_mpi_init: %s (size %d)\n", pg_strerror(rc), size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank != 0 && (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))) return 1;
    snprintf(name, sizeof name, "pg_mpi (%d ranks)", size);
    failed = cmocka_run_group_tests_name(name, pgc_tests, NULL, NULL);
    snprintf(name, sizeof name, "pg_mpi exchange (%d ranks)", size);
    failed += cmocka_run_group_tests_name(name, pgt_tests, NULL, NULL);
    mine = pgc_stress_received[rank];
    MPI_Reduce(&mine, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pg_mpi stress: %ld messages received in sequence with valid checksums (expected %ld)\n", total,
               size * pgc_stress_per_rank(size));
    fflush(stdout);
    pg_mpi_finalize(&pgt_port);
    MPI_Finalize();
    return failed;
}
