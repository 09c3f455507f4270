/* collectives.c — `scons bench`: pg collectives, f32, 2 ranks, beside MPI measured in the
   same run. Two threads time pg_pthread (native shared-memory collectives) and pg_shm on
   host threads (ports/platform/host_threads.h) built with PG_SHM_NATIVE_COLLECTIVES (its
   opt-in direct-read all_reduce/all_gather; pg.h's ring reduce_scatter over its slots). Between their repeats, the first thread has
   pg_mpi_bench (built next to this program, started once under mpirun -np 2) time one
   repeat of raw OpenMPI MPI_Allreduce / MPI_Allgather / MPI_Reduce_scatter and of the same
   through pg_mpi.h (see bench_pg.h): every figure's repeats are spread over the same
   stretch of time, so a burst of load from elsewhere hits ours and the peer's alike.
   Prints one JSON row per measurement (DESIGN.md format): the median of BENCH_REPEATS
   repeats, each the mean over bench_iters() operations; then the targets as plain
   lines. No assertions. */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#define PG_SHM_NATIVE_COLLECTIVES 1 /* the direct-read world collectives (opt-in) */
#include "ports/platform/host_threads.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "bench_pg.h"

enum { P_PTHREAD, P_SHM, NP };
static const char *const port_names[NP] = {"pg_pthread", "pg_shm"};
static const char *const mpi_names[BENCH_NC] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter"};

static float sendbuf[2][BENCH_MAX_BYTES / 4], recvbuf[2][BENCH_MAX_BYTES / 4];
static pg_pthread_world world;
#define SHM_SLOTS   8
#define SHM_PAYLOAD 65536
#define SHM_BYTES   PG_SHM_REGION_BYTES(2, SHM_SLOTS, SHM_PAYLOAD)
static uint32_t shm_region[SHM_BYTES / 4] __attribute__((aligned(64)));
static pg_shm_host_bells shm_bells;
static pg_shm shm_core[2];

static double ours[NP][BENCH_NC][BENCH_NS][BENCH_REPEATS];
static double mpi[BENCH_NM][BENCH_NC][BENCH_NS][BENCH_REPEATS];
static int failed[2];

/* the MPI side: pg_mpi_bench's stdout and its command FIFOs */
static FILE *mpi_out;
static int mpi_fd[2] = {-1, -1}, have_mpi;

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

/* Read pg_mpi_bench's lines until one starts with `want`; others are shown. 0 on EOF. */
static int mpi_expect(const char *want, char *line, int cap)
{
    while (have_mpi && fgets(line, cap, mpi_out)) {
        if (!strncmp(line, want, strlen(want))) return 1;
        fputs(line, stdout);
    }
    have_mpi = 0;
    return 0;
}

/* One timed repeat of (collective, size, mode) by the MPI processes; -1 when unavailable. */
static double mpi_repeat(int c, int s, int m, int warm)
{
    char line[256];
    double t = -1.0;
    int r, len;
    if (!have_mpi) return -1.0;
    len = snprintf(line, sizeof line, "%d %d %d %d\n", c, s, m, warm);
    for (r = 0; r < 2; r++)
        if (write(mpi_fd[r], line, (size_t)len) != len) have_mpi = 0;
    if (!mpi_expect("t ", line, sizeof line) || sscanf(line + 2, "%lf", &t) != 1) return -1.0;
    return t;
}

static void *rank_main(void *arg)
{
    int me = (int)(intptr_t)arg, c, s, r, p, m, i, k, rc = 0;
    pg_group *g[NP];
    pg_shm_hooks h;
    double t0;
    g[P_PTHREAD] = pg_pthread_group(&world, me);
    pg_shm_host_hooks(&h, &shm_bells);
    if (pg_shm_init(&shm_core[me], shm_region, SHM_BYTES, me, &h) != PG_OK) {
        failed[me] = PG_ERR_PORT;
        return NULL;
    }
    g[P_SHM] = pg_shm_group(&shm_core[me]);
    for (p = 0; p < NP; p++) pg_set_timeout(g[p], 60000);
    for (i = 0; i < (int)(BENCH_MAX_BYTES / 4); i++) sendbuf[me][i] = (float)(i % 7);
    for (p = 0; p < NP; p++) /* warm-up: threads settle on their cores */
        for (i = 0; i < 5000 && rc == 0; i++) rc = run_op(g[p], 0, 64);
    for (c = 0; c < BENCH_NC && rc == 0; c++)
        for (s = 0; s < BENCH_NS && rc == 0; s++) {
            k = bench_iters(bench_sizes[s]);
            for (p = 0; p < NP; p++)
                for (i = 0; i < 3 && rc == 0; i++) rc = run_op(g[p], c, bench_sizes[s]);
            for (r = 0; r < BENCH_REPEATS && rc == 0; r++) {
                for (p = 0; p < NP && rc == 0; p++) {
                    if ((rc = pg_barrier(g[P_PTHREAD])) != 0 || (rc = pg_barrier(g[p])) != 0) break;
                    t0 = now_us();
                    for (i = 0; i < k && rc == 0; i++) rc = run_op(g[p], c, bench_sizes[s]);
                    ours[p][c][s][r] = (now_us() - t0) / k;
                }
                /* the MPI processes' turn; the other thread sleeps in the next barrier. The
                   modes take turns going first (raw MPI first in repeats 0, 3, 6): a repeat
                   right after another mode's ran a few percent slower at 1 MB (8 operations a
                   repeat), which always-second pg_mpi paid alone before */
                for (i = 0; me == 0 && i < BENCH_NM; i++) {
                    m = (i + r) % BENCH_NM;
                    mpi[m][c][s][r] = mpi_repeat(c, s, m, r == 0);
                }
            }
        }
    if (rc != 0) {
        failed[me] = rc;
        fprintf(stderr, "rank %d failed: %d (%s)\n", me, rc, pg_strerror(rc));
        for (p = 0; p < NP; p++) pg_abort(g[p], rc); /* release the other thread */
    }
    return NULL;
}

/* Create the FIFOs, start pg_mpi_bench under mpirun, wait for its "ready". */
static void mpi_start(const char *self, char *dir)
{
    char cmd[8400], path[4200], line[256], bin[4096];
    const char *slash = strrchr(self, '/');
    int r;
    snprintf(bin, sizeof bin, "%.*s", slash ? (int)(slash - self) : 1, slash ? self : ".");
    if (!mkdtemp(dir)) return;
    for (r = 0; r < 2; r++) {
        snprintf(path, sizeof path, "%s/cmd%d", dir, r);
        /* read-write: opening never blocks, and the FIFO stays open if a reader is late */
        if (mkfifo(path, 0600) != 0 || (mpi_fd[r] = open(path, O_RDWR)) < 0) return;
    }
    snprintf(cmd, sizeof cmd, "mpirun %s --oversubscribe -np 2 %s/pg_mpi_bench %s",
             geteuid() == 0 ? "--allow-run-as-root" : "", bin, dir);
    printf("running: %s\n", cmd);
    fflush(stdout);
    mpi_out = popen(cmd, "r");
    have_mpi = mpi_out != NULL;
    if (!mpi_expect("ready", line, sizeof line)) printf("MPI part failed or missing: peer values are null\n");
}

static void mpi_stop(const char *dir)
{
    char path[4200];
    int r;
    for (r = 0; r < 2; r++)
        if (mpi_fd[r] >= 0) {
            if (write(mpi_fd[r], "q\n", 2) != 2) have_mpi = 0;
            close(mpi_fd[r]);
            snprintf(path, sizeof path, "%s/cmd%d", dir, r);
            unlink(path);
        }
    if (mpi_out && pclose(mpi_out) != 0) printf("pg_mpi_bench exited with an error\n");
    rmdir(dir);
}

static void row(const char *cas, double ours_us, const char *peer, double peer_us)
{
    printf("{\"bench\": \"pg_collectives\", \"case\": \"%s\", \"metric\": \"latency_us\", \"unit\": \"us\", "
           "\"ours\": %.3f, \"peer\": \"%s\", ",
           cas, ours_us, peer);
    if (peer_us >= 0)
        printf("\"peer_value\": %.3f}\n", peer_us);
    else
        printf("\"peer_value\": null}\n");
}

/* median over the repeats; -1 when a repeat has no figure */
static double med(const double *t)
{
    double v[BENCH_REPEATS];
    int i, j;
    for (i = 0; i < BENCH_REPEATS; i++) {
        if (t[i] < 0) return -1.0;
        v[i] = t[i];
    }
    for (i = 1; i < BENCH_REPEATS; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[BENCH_REPEATS / 2];
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/pg_benchXXXXXX", cas[160], peer[160];
    pthread_t th[2];
    int c, s, p, m, r;
    (void)argc;
    if (pg_pthread_world_init(&world, 2) != PG_OK ||
        pg_shm_format(shm_region, SHM_BYTES, 2, SHM_SLOTS, SHM_PAYLOAD) != PG_OK) {
        fprintf(stderr, "port setup failed\n");
        return 1;
    }
    mpi_start(argv[0], dir);
    for (r = 0; r < 2; r++) pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
    for (r = 0; r < 2; r++) pthread_join(th[r], NULL);
    mpi_stop(dir);
    if (failed[0] || failed[1]) return 1;
    for (p = 0; p < NP; p++)
        for (c = 0; c < BENCH_NC; c++)
            for (s = 0; s < BENCH_NS; s++) {
                snprintf(cas, sizeof cas, "%s %s f32 %s", port_names[p], bench_colls[c], bench_size_names[s]);
                snprintf(peer, sizeof peer, "%s (OpenMPI, 2 processes)", mpi_names[c]);
                row(cas, med(ours[p][c][s]), peer, med(mpi[BENCH_MPI_RAW][c][s]));
            }
    for (m = BENCH_MPI_PG; m < BENCH_NM; m++)
        for (c = 0; c < BENCH_NC; c++)
            for (s = 0; s < BENCH_NS; s++) {
                snprintf(cas, sizeof cas, "%s %s f32 %s", bench_mpi_modes[m], bench_colls[c], bench_size_names[s]);
                snprintf(peer, sizeof peer, "raw %s (same run)", mpi_names[c]);
                row(cas, med(mpi[m][c][s]), peer, med(mpi[BENCH_MPI_RAW][c][s]));
            }
    /* the targets, as plain lines */
    for (p = 0; p < NP; p++) {
        printf("target: %s all_reduce >= 1.5x faster than MPI_Allreduce, 1KB..4MB:", port_names[p]);
        for (s = 1; s < BENCH_NS; s++) {
            double a = med(ours[p][0][s]), b = med(mpi[BENCH_MPI_RAW][0][s]);
            printf(" %s %.2fx", bench_size_names[s], a > 0 && b > 0 ? b / a : 0.0);
        }
        printf("\n");
    }
    for (c = 0; c < BENCH_NC; c++) {
        printf("target: pg_mpi %s adds <= 10%% to raw MPI at >= 1KB:", bench_colls[c]);
        for (s = 1; s < BENCH_NS; s++) {
            double a = med(mpi[BENCH_MPI_PG][c][s]), b = med(mpi[BENCH_MPI_RAW][c][s]);
            printf(" %s %+.0f%%", bench_size_names[s], a > 0 && b > 0 ? (a / b - 1.0) * 100.0 : 0.0);
        }
        printf("\n");
    }
    return 0;
}
