/* collectives.c — `scons bench`: pg collectives, f32, beside MPI measured in the same run.
   Threads time pg_pthread (native shared-memory collectives) and pg_shm on host threads
   (ports/platform/host_threads.h) in both builds: the default one (pg.h's collectives over
   the rings) and PG_SHM_NATIVE_COLLECTIVES (one meeting with the data inline up to
   PG_SHM_INLINE, direct reads beyond); each pg_shm build is its own file (shm_port.h).
   Between their repeats, the first thread has pg_mpi_bench (built next to this program,
   started under mpirun) time one repeat of raw OpenMPI (MPI_Allreduce, MPI_Allgather,
   MPI_Reduce_scatter, MPI_Bcast, MPI_Barrier) and of the same through pg_mpi.h (see
   bench_pg.h): every figure's repeats are spread over the same stretch of time, so a burst
   of load from elsewhere hits ours and the peer's alike. The same run also times pg_shm's
   and pg_pthread's one-way message latency (an 8-byte ping-pong, round trip / 2), which
   the small collectives are measured against.
   Two phases: 2 ranks (every collective, 8 B to 4 MB), then 4 ranks on the machine's CPUs
   (oversubscribed where it has fewer than 4; small collectives, 8 B to 1 KB, at most
   BENCH_ITERS_MORE operations a repeat; raw MPI only). Each phase prints the machine's load
   average before and after it (the machine may be shared).
   Prints one JSON row per measurement (DESIGN.md format): the median of BENCH_REPEATS
   repeats, each the mean over bench_iters() operations (the repeats go round every case, so
   one case's are minutes apart); then the targets as plain lines. No assertions. */
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
#include "ports/platform/host_threads.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "bench_pg.h"
#include "shm_port.h"

enum { P_PTHREAD, P_SHM, P_SHMN, NP };
static const char *const port_names[NP] = {"pg_pthread", "pg_shm", "pg_shm native"};
static const bench_shm_build *const shm_builds[NP] = {0, &bench_shm_default, &bench_shm_native};
static const char *const mpi_names[BENCH_NC] = {"MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter", "MPI_Bcast",
                                                "MPI_Barrier"};
#define MAXR  4
#define LAT   BENCH_NC /* the one-way latency, timed beside the collectives */
#define PINGS 4000

static float sendbuf[MAXR][BENCH_MAX_BYTES / 4], recvbuf[MAXR][BENCH_MAX_BYTES / 4];
static pg_pthread_world world;
static pg_shm_host_bells shm_bells;

static int nranks, small_only;
static double ours[NP][BENCH_NC + 1][BENCH_NS][BENCH_REPEATS];
static double mpi[BENCH_NM][BENCH_NC][BENCH_NS][BENCH_REPEATS];
static int failed[MAXR];

/* the MPI side: pg_mpi_bench's stdout and its command FIFOs */
static FILE *mpi_out;
static int mpi_fd[MAXR] = {-1, -1, -1, -1}, have_mpi;

static int run_op(pg_group *g, int coll, size_t bytes)
{
    int me = pg_rank(g), n = pg_size(g);
    size_t k = bytes / 4;
    switch (coll) {
    case BENCH_ALL_REDUCE: return pg_all_reduce(g, sendbuf[me], recvbuf[me], k, MB_F32, PG_SUM);
    case BENCH_ALL_GATHER: return pg_all_gather(g, sendbuf[me], recvbuf[me], k / (size_t)n, MB_F32);
    case BENCH_REDUCE_SCATTER: return pg_reduce_scatter(g, sendbuf[me], recvbuf[me], k / (size_t)n, MB_F32, PG_SUM);
    case BENCH_BROADCAST: return pg_broadcast(g, sendbuf[me], k, MB_F32, 0);
    case BENCH_BARRIER: return pg_barrier(g);
    default: /* LAT: rank 0 and rank 1 bounce 8 bytes (others wait at the next barrier) */
        if (me == 0) {
            int rc = pg_send(g, 1, 1, sendbuf[0], 8);
            return rc ? rc : pg_recv(g, 1, 1, recvbuf[0], 8, NULL);
        }
        if (me == 1) {
            int rc = pg_recv(g, 0, 1, recvbuf[1], 8, NULL);
            return rc ? rc : pg_send(g, 0, 1, sendbuf[1], 8);
        }
        return 0;
    }
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
    for (r = 0; r < nranks; r++)
        if (write(mpi_fd[r], line, (size_t)len) != len) have_mpi = 0;
    if (!mpi_expect("t ", line, sizeof line) || sscanf(line + 2, "%lf", &t) != 1) return -1.0;
    return t;
}

static void *rank_main(void *arg)
{
    int me = (int)(intptr_t)arg, c, s, r, p, m, i, k, rc = 0, nm = small_only ? 1 : BENCH_NM;
    pg_group *g[NP];
    pg_shm_hooks h;
    double t0;
    g[P_PTHREAD] = pg_pthread_group(&world, me);
    pg_shm_host_hooks(&h, &shm_bells);
    for (p = P_SHM; p < NP; p++)
        if ((g[p] = shm_builds[p]->attach(me, &h)) == NULL) {
            failed[me] = PG_ERR_PORT;
            return NULL;
        }
    for (p = 0; p < NP; p++) pg_set_timeout(g[p], 60000);
    for (i = 0; i < (int)(BENCH_MAX_BYTES / 4); i++) sendbuf[me][i] = (float)(i % 7);
    for (p = 0; p < NP; p++) /* warm-up: threads settle on their cores */
        for (i = 0; i < 5000 && rc == 0; i++) rc = run_op(g[p], BENCH_ALL_REDUCE, 64);
    /* repeat by repeat over every case: a case's repeats are spread over the whole run, so
       a burst of load from elsewhere (seconds long on a shared machine) hits one or two of
       them, not all, and the median stands */
    for (r = 0; r < BENCH_REPEATS && rc == 0; r++)
        for (c = 0; c <= LAT && rc == 0; c++)
            for (s = 0; s < (c == LAT ? 1 : bench_nsizes(c, small_only)) && rc == 0; s++) {
                k = c == LAT ? PINGS : bench_iters(bench_sizes[s]);
                if (small_only && k > BENCH_ITERS_MORE) k = BENCH_ITERS_MORE;
                for (p = 0; p < NP; p++) /* untimed: a quarter repeat (the first size after 4 MB was an outlier) */
                    for (i = 0; i < k / 4 + 3 && rc == 0; i++) rc = run_op(g[p], c, bench_sizes[s]);
                for (p = 0; p < NP && rc == 0; p++) {
                    if ((rc = pg_barrier(g[P_PTHREAD])) != 0 || (rc = pg_barrier(g[p])) != 0) break;
                    t0 = now_us();
                    for (i = 0; i < k && rc == 0; i++) rc = run_op(g[p], c, bench_sizes[s]);
                    if (me == 0) ours[p][c][s][r] = (now_us() - t0) / k / (c == LAT ? 2.0 : 1.0); /* rank 0's clock */
                }
                /* the MPI processes' turn; the other threads sleep in the next barrier. The
                   modes take turns going first (raw MPI first in repeats 0, 3, 6): a repeat
                   right after another mode's ran a few percent slower at 1 MB (8 operations a
                   repeat), which always-second pg_mpi paid alone before */
                for (i = 0; c < LAT && me == 0 && i < nm; i++) {
                    m = (i + r) % nm;
                    mpi[m][c][s][r] = mpi_repeat(c, s, m, r == 0);
                }
            }
    if (rc != 0) {
        failed[me] = rc;
        fprintf(stderr, "rank %d failed: %d (%s)\n", me, rc, pg_strerror(rc));
        for (p = 0; p < NP; p++) pg_abort(g[p], rc); /* release the other threads */
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
    for (r = 0; r < nranks; r++) {
        snprintf(path, sizeof path, "%s/cmd%d", dir, r);
        /* read-write: opening never blocks, and the FIFO stays open if a reader is late */
        if (mkfifo(path, 0600) != 0 || (mpi_fd[r] = open(path, O_RDWR)) < 0) return;
    }
    snprintf(cmd, sizeof cmd, "mpirun %s --oversubscribe -np %d %s/pg_mpi_bench %s",
             geteuid() == 0 ? "--allow-run-as-root" : "", nranks, bin, dir);
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
    for (r = 0; r < nranks; r++)
        if (mpi_fd[r] >= 0) {
            if (write(mpi_fd[r], "q\n", 2) != 2) have_mpi = 0;
            close(mpi_fd[r]);
            mpi_fd[r] = -1;
            snprintf(path, sizeof path, "%s/cmd%d", dir, r);
            unlink(path);
        }
    if (mpi_out && pclose(mpi_out) != 0) printf("pg_mpi_bench exited with an error\n");
    mpi_out = NULL;
    rmdir(dir);
}

static void row(const char *cas, const char *metric, double ours_us, const char *peer, double peer_us)
{
    printf("{\"bench\": \"pg_collectives\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"us\", "
           "\"ours\": %.3f, \"peer\": \"%s\", ",
           cas, metric, ours_us, peer);
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

/* The machine's load average (1, 5, 15 min), as a plain line. */
static void print_load(const char *when, int n)
{
    double l[3] = {-1, -1, -1};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l[0] = -1;
        fclose(f);
    }
    printf("load average %s the %d-rank phase: %.2f %.2f %.2f (%ld CPUs)\n", when, n, l[0], l[1], l[2],
           sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
}

/* One phase: n ranks (threads and MPI processes); 0 or 1 when a rank failed. */
static int phase(const char *self, int n)
{
    char dir[] = "/tmp/pg_benchXXXXXX", cas[200], peer[200], ranks[64];
    pthread_t th[MAXR];
    int c, s, p, m, r;
    nranks = n;
    small_only = n > 2;
    memset(ours, 0, sizeof ours);
    memset(mpi, 0, sizeof mpi);
    if (pg_pthread_world_init(&world, n) != PG_OK || bench_shm_default.format(n) != PG_OK ||
        bench_shm_native.format(n) != PG_OK) {
        fprintf(stderr, "port setup failed\n");
        return 1;
    }
    print_load("before", n);
    mpi_start(self, dir);
    for (r = 0; r < n; r++) pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
    for (r = 0; r < n; r++) pthread_join(th[r], NULL);
    mpi_stop(dir);
    print_load("after", n);
    for (r = 0; r < n; r++)
        if (failed[r]) return 1;
    ranks[0] = 0;
    if (n > 2) snprintf(ranks, sizeof ranks, " %d ranks (on %ld CPUs)", n, sysconf(_SC_NPROCESSORS_ONLN));
    for (p = 0; p < NP; p++)
        for (c = 0; c < BENCH_NC; c++)
            for (s = 0; s < bench_nsizes(c, small_only); s++) {
                snprintf(cas, sizeof cas, "%s %s%s%s%s", port_names[p], bench_colls[c],
                         c == BENCH_BARRIER ? "" : " f32 ", c == BENCH_BARRIER ? "" : bench_size_names[s], ranks);
                snprintf(peer, sizeof peer, "%s (OpenMPI, %d processes)", mpi_names[c], n);
                row(cas, "latency_us", med(ours[p][c][s]), peer, med(mpi[BENCH_MPI_RAW][c][s]));
            }
    for (m = BENCH_MPI_PG; m < BENCH_NM && !small_only; m++)
        for (c = 0; c < BENCH_NC; c++)
            for (s = 0; s < bench_nsizes(c, 0); s++) {
                snprintf(cas, sizeof cas, "%s %s%s%s", bench_mpi_modes[m], bench_colls[c],
                         c == BENCH_BARRIER ? "" : " f32 ", c == BENCH_BARRIER ? "" : bench_size_names[s]);
                snprintf(peer, sizeof peer, "raw %s (same run)", mpi_names[c]);
                row(cas, "latency_us", med(mpi[m][c][s]), peer, med(mpi[BENCH_MPI_RAW][c][s]));
            }
    for (p = P_SHM; p < NP; p++) {
        snprintf(cas, sizeof cas, "%s one-way latency 8B%s", port_names[p], ranks);
        row(cas, "one_way_latency_us", med(ours[p][LAT][0]), "pg_pthread one-way latency 8B (same run)",
            med(ours[P_PTHREAD][LAT][0]));
    }
    /* the targets, as plain lines */
    if (n == 2) {
        double lat = med(ours[P_SHMN][LAT][0]);
        printf("target: pg_shm native all_reduce 64B <= 2x its one-way latency: %.3f us vs 2 x %.3f us (%.2fx)\n",
               med(ours[P_SHMN][BENCH_ALL_REDUCE][1]), lat, med(ours[P_SHMN][BENCH_ALL_REDUCE][1]) / lat);
        printf("target: pg_shm native all_reduce <= pg_pthread and <= MPI_Allreduce, 8B..1KB:");
        for (s = 0; s < BENCH_NSMALL; s++)
            printf(" %s %.2fx/%.2fx", bench_size_names[s],
                   med(ours[P_SHMN][BENCH_ALL_REDUCE][s]) / med(ours[P_PTHREAD][BENCH_ALL_REDUCE][s]),
                   med(ours[P_SHMN][BENCH_ALL_REDUCE][s]) / med(mpi[BENCH_MPI_RAW][BENCH_ALL_REDUCE][s]));
        printf(" (ours / peer)\n");
        for (p = 0; p < NP; p++) {
            printf("target: %s all_reduce >= 1.5x faster than MPI_Allreduce, 1KB..4MB:", port_names[p]);
            for (s = BENCH_NSMALL - 1; s < BENCH_NS; s++) {
                double a = med(ours[p][BENCH_ALL_REDUCE][s]), b = med(mpi[BENCH_MPI_RAW][BENCH_ALL_REDUCE][s]);
                printf(" %s %.2fx", bench_size_names[s], a > 0 && b > 0 ? b / a : 0.0);
            }
            printf("\n");
        }
        for (c = 0; c < 3; c++) {
            printf("target: pg_mpi %s adds <= 10%% to raw MPI at >= 1KB:", bench_colls[c]);
            for (s = BENCH_NSMALL - 1; s < BENCH_NS; s++) {
                double a = med(mpi[BENCH_MPI_PG][c][s]), b = med(mpi[BENCH_MPI_RAW][c][s]);
                printf(" %s %+.0f%%", bench_size_names[s], a > 0 && b > 0 ? (a / b - 1.0) * 100.0 : 0.0);
            }
            printf("\n");
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    return phase(argv[0], 2) || phase(argv[0], 4);
}
