/* collectives.c — `scons bench`: pg collectives, f32, 2 ranks, beside MPI measured in the
   same run. Times pg_pthread (2 threads, native shared-memory collectives) here, then
   starts pg_mpi_bench (built next to this program) under mpirun -np 2 for raw OpenMPI
   MPI_Allreduce / MPI_Allgather / MPI_Reduce_scatter and for the same through pg_mpi.h.
   Prints one JSON row per measurement (DESIGN.md format); median of BENCH_REPEATS
   repeats, each the mean over bench_iters() operations. No assertions. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define PG_IMPLEMENTATION
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "bench_pg.h"

static pg_pthread_world world;
static float sendbuf[2][BENCH_MAX_BYTES / 4], recvbuf[2][BENCH_MAX_BYTES / 4];
static double pthread_us[3][6];

static int run_op(pg_group *g, int coll, size_t bytes)
{
    int me = pg_rank(g);
    size_t n = bytes / 4;
    if (coll == 0) return pg_all_reduce(g, sendbuf[me], recvbuf[me], n, MB_F32, PG_SUM);
    if (coll == 1) return pg_all_gather(g, sendbuf[me], recvbuf[me], n / 2, MB_F32);
    return pg_reduce_scatter(g, sendbuf[me], recvbuf[me], n / 2, MB_F32, PG_SUM);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int body(pg_group *g, void *arg)
{
    int c, s, r, i, rc;
    (void)arg;
    pg_set_timeout(g, 60000);
    for (i = 0; i < (int)(BENCH_MAX_BYTES / 4); i++) sendbuf[pg_rank(g)][i] = (float)(i % 7);
    for (i = 0; i < 20000; i++) /* warm-up: threads settle on their cores */
        if ((rc = run_op(g, 0, 64)) != 0) return rc;
    for (c = 0; c < 3; c++)
        for (s = 0; s < 6; s++) {
            double t[BENCH_REPEATS], t0;
            int k = bench_iters(bench_sizes[s]);
            for (i = 0; i < 3; i++)
                if ((rc = run_op(g, c, bench_sizes[s])) != 0) return rc;
            for (r = 0; r < BENCH_REPEATS; r++) {
                if ((rc = pg_barrier(g)) != 0) return rc;
                t0 = now_us();
                for (i = 0; i < k; i++)
                    if ((rc = run_op(g, c, bench_sizes[s])) != 0) return rc;
                t[r] = (now_us() - t0) / k;
            }
            if (pg_rank(g) == 0) pthread_us[c][s] = bench_median(t, BENCH_REPEATS);
        }
    return 0;
}

static void row(const char *cas, double ours, const char *peer, double peer_value)
{
    printf("{\"bench\": \"pg_collectives\", \"case\": \"%s\", \"metric\": \"latency_us\", \"unit\": \"us\", "
           "\"ours\": %.3f, \"peer\": \"%s\", ",
           cas, ours, peer);
    if (peer_value >= 0) printf("\"peer_value\": %.3f}\n", peer_value);
    else printf("\"peer_value\": null}\n");
}

int main(int argc, char **argv)
{
    static const char *const mpi_names[3] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter"};
    double raw[3][6], pgm[3][6], nochk[3][6], blk[3][6];
    char cmd[4200], dir[4096], line[256], name[64], cas[128], peer[128];
    const char *slash;
    FILE *f;
    int c, s, rc, have_mpi = 0;
    size_t bytes;
    double v[4];
    (void)argc;
    rc = pg_pthread_run(&world, 2, body, NULL);
    if (rc != 0) {
        fprintf(stderr, "pg_pthread bench failed: %d (%s)\n", rc, pg_strerror(rc));
        return 1;
    }
    for (c = 0; c < 3; c++)
        for (s = 0; s < 6; s++) raw[c][s] = pgm[c][s] = nochk[c][s] = blk[c][s] = -1;
    slash = strrchr(argv[0], '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
    snprintf(cmd, sizeof cmd, "mpirun %s --oversubscribe -np 2 %s/pg_mpi_bench", geteuid() == 0 ? "--allow-run-as-root" : "",
             dir);
    printf("running: %s\n", cmd);
    fflush(stdout);
    f = popen(cmd, "r");
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "mpi %63s %zu %lf %lf %lf %lf", name, &bytes, &v[0], &v[1], &v[2], &v[3]) != 6) continue;
        for (c = 0; c < 3; c++)
            for (s = 0; s < 6; s++)
                if (!strcmp(name, bench_colls[c]) && bytes == bench_sizes[s]) {
                    raw[c][s] = v[0];
                    pgm[c][s] = v[1];
                    nochk[c][s] = v[2];
                    blk[c][s] = v[3];
                    have_mpi = 1;
                }
    }
    if (!f || pclose(f) != 0 || !have_mpi) printf("MPI part failed or missing: peer values are null\n");
    for (c = 0; c < 3; c++)
        for (s = 0; s < 6; s++) {
            snprintf(cas, sizeof cas, "pg_pthread %s f32 %s", bench_colls[c], bench_size_names[s]);
            snprintf(peer, sizeof peer, "%s (OpenMPI, 2 processes)", mpi_names[c]);
            row(cas, pthread_us[c][s], peer, raw[c][s]);
        }
    for (c = 0; c < 3; c++)
        for (s = 0; s < 6; s++) {
            snprintf(peer, sizeof peer, "raw %s (same run)", mpi_names[c]);
            snprintf(cas, sizeof cas, "pg_mpi %s f32 %s", bench_colls[c], bench_size_names[s]);
            row(cas, pgm[c][s], peer, raw[c][s]);
            snprintf(cas, sizeof cas, "pg_mpi no-check %s f32 %s", bench_colls[c], bench_size_names[s]);
            row(cas, nochk[c][s], peer, raw[c][s]);
            snprintf(cas, sizeof cas, "pg_mpi blocking no-check %s f32 %s", bench_colls[c], bench_size_names[s]);
            row(cas, blk[c][s], peer, raw[c][s]);
        }
    return 0;
}
