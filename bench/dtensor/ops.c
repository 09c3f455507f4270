/* ops.c — `scons bench`: dtensor_ops.h.
   (a) Dispatch overhead of dt_op on a strategy-cache hit with the compute excluded: a
       no-op kernel installed through the kernel table (dispatch.kernels), inputs already
       in the chosen placements (no redistribution), rank 0 of a 1-D mesh of 2 over a pg
       group whose collectives return at once. In ns per call (median of BENCH_REPEATS
       loops of 100,000 calls) and in instructions per call: valgrind --tool=callgrind
       --toggle-collect=dt_op on this program ("callgrind" mode) with 2,000 and 22,000
       calls, the difference / 20,000 (the first call, a miss, cancels out). The peer is
       PyTorch's ~90 us per DTensor op, the figure measured in issue #6, NOT measured
       here: Debian's PyTorch 1.13 has no DTensor.
   (b) Tensor-parallel mm 512x512 f32 (C = A @ B, A S(0), B R -> C S(0): no communication)
       on 2 pg_pthread ranks against the same dt_op on 1 rank, against an OpenMP
       `parallel for` over 2 row blocks of 256 (2 threads, each calling the same reference
       kernel on its rows: the same blocking), and with dt_kernel_cblas (OpenBLAS, 1
       thread per rank) installed in the kernel table against OpenBLAS's own 2-thread
       sgemm. Both sides are timed alike: one untimed warm-up call, then TIMED calls, each
       from before the start synchronisation to after the end one (ranks: the barrier
       that lines them up, dt_op, the barrier after; OpenMP: fork, the loop, join), all on
       the same buffers. The warm-up takes the first call's one-off costs on both sides:
       the strategy-cache miss and the fresh threads of a pg_pthread world; libgomp's
       pool, asleep after the other variants ran (its spin, GOMP_SPINCOUNT 300,000 pause
       loops, ends long before). Nothing is pinned on either side (pg_pthread does not
       pin; libgomp's defaults: no OMP_PROC_BIND / OMP_PLACES; the OMP_* / GOMP_*
       variables that change this are printed). ROUNDS rounds; in each, every variant
       runs once, the 2-rank ones right beside their OpenMP / OpenBLAS peer, which goes
       first in every other round (the peers see the same load, and neither always
       follows the same variant). Median and min over all calls. The 1-min loadavg at
       start and end is printed (the machine is shared). Wall-clock speedups need two
       idle cores; the same ratios are also given in CPU time of the slower rank /
       thread (CLOCK_THREAD_CPUTIME_ID around its dt_op / kernel), which the other
       processes on the machine inflate less: what two free cores would give.
   Without OpenMP or OpenBLAS (built without -fopenmp / DT_CBLAS): SKIPPED lines and no
   such rows. No assertions. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#include "dtensor_ops.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#define BENCH_REPEATS 9
#define DTB_NAME      "dtensor_ops"
#include "bench_dt.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- (a) dispatch overhead ---- */

enum { OP_MM, OP_ADD, OP_LINEAR, NOPS };
static const int op_of[NOPS] = {DT_ATEN_MM, DT_ATEN_ADD, DT_ATEN_LINEAR};
static const char *const op_case[NOPS] = {"mm (64,64) S(0) x (64,64) R -> S(0)", "add (64,64) S(0) + S(0) -> S(0)",
                                          "linear x (64,64) S(0), w (64,64) R, bias (64,) R -> S(0)"};
#define DN 64

static float dx[DN * DN], dw[DN * DN], db[DN], dy[DN * DN];
static dt_mesh dmesh;
static dt_comm dcomm;
static dt_op_entry dentries[8];
static dt_op_cache dcache;
static dt_dispatch dd;
static dt_tensor dargs[NOPS][3];
static pg_group dgroup;
static pg_ops dops;
/* called through a pointer: dt_op stays one function for callgrind's --toggle-collect */
static int (*volatile op_fn)(dt_dispatch *, int, const dt_op_attrs *, const dt_tensor *, int, dt_tensor *, void *,
                             size_t) = dt_op;

static int noop_kernel(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    (void)op, (void)attrs, (void)out, (void)in, (void)nin;
    return 0;
}

static int dispatch_setup(void)
{
    static const int32_t two[1] = {2}, sq[2] = {DN, DN}, vec[1] = {DN};
    const dt_placement s0[1] = {DT_SHARD(0)}, r[1] = {DT_REPLICATE()};
    int32_t half[2] = {DN / 2, DN};
    int rc, o;
    if ((rc = null_group(&dgroup, &dops, 2)) || (rc = dt_mesh_init(&dmesh, 1, two, 0, 0)) ||
        (rc = dt_comm_init(&dcomm, &dmesh, &dgroup)) || (rc = dt_op_cache_init(&dcache, dentries, 8)))
        return rc;
    memset(&dd, 0, sizeof dd);
    dd.comm = &dcomm;
    dd.strategies = &dcache;
    for (o = 0; o < NOPS; o++) {
        dd.kernels[op_of[o]] = noop_kernel;
        rc |= dt_spec_init(&dargs[o][0].spec, &dmesh, s0, 1, MB_F32, 2, sq, 0);
        mb_tensor_init(&dargs[o][0].local, dx, MB_F32, 2, half);
        rc |= dt_spec_init(&dargs[o][1].spec, &dmesh, o == OP_ADD ? s0 : r, 1, MB_F32, 2, sq, 0);
        mb_tensor_init(&dargs[o][1].local, dw, MB_F32, 2, o == OP_ADD ? half : sq);
        rc |= dt_spec_init(&dargs[o][2].spec, &dmesh, r, 1, MB_F32, 1, vec, 0);
        mb_tensor_init(&dargs[o][2].local, db, MB_F32, 1, vec);
    }
    return rc;
}

static int dispatch_n(int o, long n)
{
    dt_tensor out;
    long i;
    int rc = 0;
    for (i = 0; i < n; i++) rc |= op_fn(&dd, op_of[o], NULL, dargs[o], o == OP_LINEAR ? 3 : 2, &out, dy, sizeof dy);
    return rc;
}

/* "callgrind <op> <n>": one call (the miss), then n calls, under valgrind. */
static int callgrind_child(int o, long n)
{
    if (dispatch_setup() || o < 0 || o >= NOPS) return 1;
    return dispatch_n(o, 1) || dispatch_n(o, n);
}

/* Instructions collected inside dt_op (callgrind's totals line), or -1. */
static double callgrind_total(const char *exe, int o, long n)
{
    char cmd[8600], out[4200], line[512];
    double total = -1;
    FILE *f;
    snprintf(out, sizeof out, "%s.callgrind", exe);
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --toggle-collect=dt_op --callgrind-out-file='%s' '%s' "
             "callgrind %d %ld >/dev/null 2>&1",
             out, exe, o, n);
    if (system(cmd) != 0 || !(f = fopen(out, "r"))) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "totals:", 7)) total = atof(line + 7);
    fclose(f);
    remove(out);
    return total;
}

static void dispatch_rows(void)
{
    char exe[4096], cas[300];
    double v[BENCH_REPEATS], t0, ns, mn, lo, hi;
    ssize_t len;
    int o, r;
    if (dispatch_setup()) {
        printf("dispatch setup failed\n");
        return;
    }
    for (o = 0; o < NOPS; o++) {
        if (dispatch_n(o, 1000)) {
            printf("dispatch of %s failed\n", op_case[o]);
            continue;
        }
        for (r = 0; r < BENCH_REPEATS; r++) {
            t0 = now_us();
            dispatch_n(o, 100000);
            v[r] = (now_us() - t0) * 1000.0 / 100000;
        }
        ns = median(v, BENCH_REPEATS);
        mn = v[0];
        printf("dispatch %s: median %.1f ns, min %.1f ns per call (cache %u hits / %u misses)\n", op_case[o], ns, mn,
               (unsigned)dcache.hits, (unsigned)dcache.misses);
        snprintf(cas, sizeof cas, "dt_op %s, cache hit, no-op kernel (dispatch only)", op_case[o]);
        row(cas, "dispatch_ns", "ns", ns, "PyTorch DTensor op dispatch ~90 us (issue #6's figure, not measured here)",
            90000.0);
        row(cas, "dispatch_ns", "ns", ns, "must reach <= 1 us", 1000.0);
    }
    len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || (access("/usr/bin/valgrind", X_OK) && system("command -v valgrind >/dev/null 2>&1"))) {
        printf("SKIPPED callgrind rows: no valgrind\n");
        return;
    }
    exe[len] = 0;
    fflush(stdout);
    for (o = 0; o < NOPS; o++) {
        lo = callgrind_total(exe, o, 2000);
        hi = callgrind_total(exe, o, 22000);
        if (lo < 0 || hi < lo) {
            printf("SKIPPED callgrind row of %s: valgrind failed\n", op_case[o]);
            continue;
        }
        printf("callgrind %s: %.0f / %.0f instructions in dt_op for 2,001 / 22,001 calls\n", op_case[o], lo, hi);
        snprintf(cas, sizeof cas, "dt_op %s, cache hit, no-op kernel (callgrind, inside dt_op)", op_case[o]);
        row(cas, "dispatch_instr", "instr", (hi - lo) / 20000.0, "must reach <= 2,000 instructions", 2000.0);
    }
}

/* ---- (b) tensor-parallel mm 512x512 ---- */

#define MN     512
#define ROUNDS 11
#define TIMED  3
enum { V_TP1, V_TP2, V_OMP, V_BLAS1, V_BLAS2, V_BLAS_OWN, NV };
static const char *const v_name[NV] = {"1 rank",          "2 ranks",          "OpenMP 2 threads",
                                       "1 rank OpenBLAS", "2 ranks OpenBLAS", "OpenBLAS 2 threads"};
static float ga[MN * MN], gb[MN * MN], gc[2][MN * MN]; /* gc[1]: the 1-rank result every variant must give */
static double tsamp[NV][ROUNDS * TIMED], csamp[NV][ROUNDS * TIMED]; /* wall, CPU of the slowest rank/thread */
static int nsamp[NV];
static double cpu_of[2]; /* each rank's (thread's) CPU time of the current call */

static double cpu_us(void) /* this thread's CPU time */
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
static pg_pthread_world world;
static dt_mesh tmesh[2];
static dt_comm tcomm[2];
static dt_op_entry tentries[2][4];
static dt_op_cache tcache[2];

/* Records call i >= 1 (call 0 is the warm-up) of variant v: wall time since t0, the CPU
   time of the slower rank/thread. */
static void record(int v, int i, int n, double t0)
{
    if (i == 0) return;
    csamp[v][nsamp[v]] = n == 1 || cpu_of[0] > cpu_of[1] ? cpu_of[0] : cpu_of[1];
    tsamp[v][nsamp[v]++] = now_us() - t0;
}

/* One world of n ranks: 1 + TIMED dt_op calls (barrier, op, barrier), rank 0 records. */
static int tp_body(pg_group *g, void *arg)
{
    const int blas = *(const int *)arg, me = pg_rank(g), n = pg_size(g);
    const int32_t ms[1] = {n}, sh[2] = {MN, MN};
    const dt_placement s0[1] = {DT_SHARD(0)}, r[1] = {DT_REPLICATE()};
    int32_t rows[2] = {MN / n, MN};
    dt_tensor args[2], out;
    dt_dispatch d;
    int i, rc, v = n == 1 ? (blas ? V_BLAS1 : V_TP1) : (blas ? V_BLAS2 : V_TP2);
    double t0, c0;
    if ((rc = dt_mesh_init(&tmesh[me], 1, ms, 0, me)) || (rc = dt_comm_init(&tcomm[me], &tmesh[me], g)) ||
        (rc = dt_op_cache_init(&tcache[me], tentries[me], 4)) ||
        (rc = dt_spec_init(&args[0].spec, &tmesh[me], s0, 1, MB_F32, 2, sh, 0)) ||
        (rc = dt_spec_init(&args[1].spec, &tmesh[me], r, 1, MB_F32, 2, sh, 0)))
        return rc;
    mb_tensor_init(&args[0].local, ga + (size_t)me * (MN / n) * MN, MB_F32, 2, rows);
    mb_tensor_init(&args[1].local, gb, MB_F32, 2, sh);
    memset(&d, 0, sizeof d);
    d.comm = &tcomm[me];
    d.strategies = &tcache[me];
#if DT_CBLAS
    if (blas) d.kernels[DT_ATEN_MM] = dt_kernel_cblas;
#endif
    for (i = 0; i <= TIMED; i++) {
        t0 = now_us();
        if ((rc = pg_barrier(g)) != 0) return rc;
        c0 = cpu_us();
        rc = dt_op(&d, DT_ATEN_MM, NULL, args, 2, &out, gc[0] + (size_t)me * (MN / n) * MN,
                   sizeof(float) * (size_t)(MN / n) * MN);
        cpu_of[me] = cpu_us() - c0;
        if (rc || (rc = pg_barrier(g)) != 0) return rc;
        if (me == 0) record(v, i, n, t0);
        if (me == 0 && i == 0 && out.spec.placements[0].kind != DT_KIND_SHARD) return -1;
    }
    return 0;
}

#ifdef _OPENMP
/* The peer: an OpenMP parallel for over 2 row blocks of 256, each the reference kernel. */
static void omp_mm(float *c)
{
    int blk;
#pragma omp parallel for num_threads(2) schedule(static)
    for (blk = 0; blk < 2; blk++) {
        int32_t rows[2] = {MN / 2, MN}, sq[2] = {MN, MN};
        mb_tensor ta, tb, tc;
        const mb_tensor *in[2];
        mb_tensor_init(&ta, ga + (size_t)blk * (MN / 2) * MN, MB_F32, 2, rows);
        mb_tensor_init(&tb, gb, MB_F32, 2, sq);
        mb_tensor_init(&tc, c + (size_t)blk * (MN / 2) * MN, MB_F32, 2, rows);
        double c0 = cpu_us();
        in[0] = &ta;
        in[1] = &tb;
        dt_kernel_ref(DT_ATEN_MM, NULL, &tc, in, 2);
        cpu_of[blk] = cpu_us() - c0;
    }
}
#endif

/* Runs variant v once (warm-up + TIMED calls) into gc[0]; 0, or 1 when it failed or its
   result differs from the 1-rank one in gc[1] (the OpenBLAS ones: within 1e-3). */
static int run_variant(int v)
{
    int i, blas = v == V_BLAS1 || v == V_BLAS2;
    double t0;
    (void)t0;
    if (v != V_OMP && v != V_BLAS_OWN && pg_pthread_run(&world, v == V_TP1 || v == V_BLAS1 ? 1 : 2, tp_body, &blas))
        return 1;
#ifdef _OPENMP
    if (v == V_OMP)
        for (i = 0; i <= TIMED; i++) {
            t0 = now_us();
            omp_mm(gc[0]);
            record(V_OMP, i, 2, t0);
        }
#endif
#if DT_CBLAS
    if (v == V_BLAS_OWN) {
        openblas_set_num_threads(2);
        for (i = 0; i <= TIMED; i++) {
            t0 = now_us();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, MN, MN, MN, 1.0f, ga, MN, gb, MN, 0.0f, gc[0], MN);
            if (i) tsamp[V_BLAS_OWN][nsamp[V_BLAS_OWN]++] = now_us() - t0;
        }
        openblas_set_num_threads(1);
    }
#endif
    if (v == V_TP1) memcpy(gc[1], gc[0], sizeof gc[1]);
    for (i = 0; i < MN * MN; i++) {
        float e = gc[0][i] - gc[1][i];
        if (v < V_BLAS1 ? e != 0.0f : (e > 1e-3f || e < -1e-3f)) return 1;
    }
    return 0;
}

static double loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

static const char *env_or_unset(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "(unset)";
}

static int tp_rows(void)
{
    double med[NV], mn[NV], cmed[NV], l0 = loadavg(), l1;
    char cas[300];
    int round, i, v, blas, bad = 0, have_omp = 0, have_blas = 0;
    for (i = 0; i < MN * MN; i++) {
        ga[i] = (float)((i * 7) % 13 - 6) / 8.0f;
        gb[i] = (float)((i * 5) % 11 - 5) / 8.0f;
    }
#ifdef _OPENMP
    have_omp = 1;
#endif
#if DT_CBLAS
    have_blas = 1;
    openblas_set_num_threads(1);
#endif
    /* each 2-rank variant beside its peer, which goes first in every other round */
    for (round = 0; round < ROUNDS && !bad; round++)
        for (blas = 0; blas <= have_blas && !bad; blas++) {
            bad = run_variant(blas ? V_BLAS1 : V_TP1);
            for (i = 0; i < 2 && !bad; i++) {
                v = i ^ (round & 1) ? (blas ? V_BLAS_OWN : V_OMP) : (blas ? V_BLAS2 : V_TP2);
                if (v != V_OMP || have_omp) bad = run_variant(v);
            }
        }
    l1 = loadavg();
    if (bad) {
        printf("tensor-parallel mm failed (an error, or a result other than the 1-rank one)\n");
        return 1;
    }
    if (!have_omp) printf("SKIPPED OpenMP peer: built without -fopenmp\n");
    if (!have_blas) printf("SKIPPED OpenBLAS rows: built without DT_CBLAS (apt-get install libopenblas-dev)\n");
    for (v = 0; v < NV; v++) {
        if (!nsamp[v]) continue;
        med[v] = median(tsamp[v], nsamp[v]);
        mn[v] = tsamp[v][0];
        cmed[v] = v == V_BLAS_OWN ? 0 : median(csamp[v], nsamp[v]);
        printf("mm 512x512 f32 %-20s median %9.1f us  min %9.1f us  CPU of the slowest rank/thread median %9.1f us "
               "(%d calls)\n",
               v_name[v], med[v], mn[v], cmed[v], nsamp[v]);
    }
    printf("loadavg (1 min) %.2f at the start, %.2f at the end of the mm rounds, %ld online cpus\n", l0, l1,
           sysconf(_SC_NPROCESSORS_ONLN));
    if (have_omp) /* libgomp's defaults unless these are set: threads not pinned, 300,000 spins before sleeping */
        printf("OpenMP environment: OMP_PROC_BIND=%s OMP_PLACES=%s GOMP_CPU_AFFINITY=%s OMP_WAIT_POLICY=%s "
               "GOMP_SPINCOUNT=%s (pg_pthread ranks are not pinned)\n",
               env_or_unset("OMP_PROC_BIND"), env_or_unset("OMP_PLACES"), env_or_unset("GOMP_CPU_AFFINITY"),
               env_or_unset("OMP_WAIT_POLICY"), env_or_unset("GOMP_SPINCOUNT"));
    snprintf(cas, sizeof cas, "mm 512x512 f32, 2 ranks pg_pthread (S(0) x R -> S(0)), reference kernel, median");
    row(cas, "time_us", "us", med[V_TP2], "the same dt_op on 1 rank (same run)", med[V_TP1]);
    snprintf(cas, sizeof cas,
             "mm 512x512 f32, 2 ranks vs 1 rank, reference kernel: speedup of medians "
             "(min: %.2fx; loadavg %.2f..%.2f)",
             mn[V_TP1] / mn[V_TP2], l0, l1);
    row(cas, "speedup_x", "x", med[V_TP1] / med[V_TP2], "must reach >= 1.8x", 1.8);
    snprintf(cas, sizeof cas,
             "mm 512x512 f32, 2 ranks vs 1 rank, reference kernel: speedup in CPU time of the "
             "slower rank (the work split, what 2 free cores give; loadavg %.2f..%.2f)",
             l0, l1);
    row(cas, "speedup_cpu_x", "x", cmed[V_TP1] / cmed[V_TP2], "must reach >= 1.8x", 1.8);
    if (have_omp) {
        snprintf(cas, sizeof cas,
                 "mm 512x512 f32, 2 ranks vs OpenMP 2 threads: OpenMP / ours in CPU time of the "
                 "slower rank/thread");
        row(cas, "vs_openmp_cpu_x", "x", cmed[V_OMP] / cmed[V_TP2], "must reach >= 1.0x", 1.0);
        row("mm 512x512 f32, 2 ranks pg_pthread, reference kernel, median", "time_us", "us", med[V_TP2],
            "OpenMP parallel for, 2 threads, same kernel and blocking (same run)", med[V_OMP]);
        snprintf(cas, sizeof cas,
                 "mm 512x512 f32, 2 ranks vs OpenMP 2 threads: OpenMP time / ours, medians "
                 "(min: %.2fx)",
                 mn[V_OMP] / mn[V_TP2]);
        row(cas, "vs_openmp_x", "x", med[V_OMP] / med[V_TP2], "must reach >= 1.0x", 1.0);
    }
    if (have_blas) {
        row("mm 512x512 f32, 2 ranks pg_pthread, dt_kernel_cblas (OpenBLAS, 1 thread per rank), median", "time_us",
            "us", med[V_BLAS2], "OpenBLAS's own 2-thread sgemm (same run)", med[V_BLAS_OWN]);
        row("mm 512x512 f32, 1 rank, dt_kernel_cblas (OpenBLAS 1 thread), median", "time_us", "us", med[V_BLAS1],
            "OpenBLAS's own 2-thread sgemm (same run)", med[V_BLAS_OWN]);
        snprintf(cas, sizeof cas, "mm 512x512 f32 OpenBLAS kernel, 2 ranks vs 1 rank: speedup of medians (min: %.2fx)",
                 mn[V_BLAS1] / mn[V_BLAS2]);
        row(cas, "speedup_x", "x", med[V_BLAS1] / med[V_BLAS2], "OpenBLAS's own 2 threads vs 1 rank",
            med[V_BLAS1] / med[V_BLAS_OWN]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "callgrind")) return callgrind_child(atoi(argv[2]), atol(argv[3]));
#if DT_CBLAS
    /* OpenBLAS's idle threads spin for 2^28 cycles after each call (read at load time):
       run again with the shortest timeout so they do not take the cores of the next variant */
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) {
        char exe[4096];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (len > 0) {
            exe[len] = 0;
            setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
            execv(exe, argv);
        }
    }
#endif
    dispatch_rows();
    return tp_rows();
}
