/* main.c — `scons bench`: dtensor redistribute S(0)->R, P(sum)->R, P(sum)->S(0) of a 1-D
   f32 tensor on 2 ranks (pg_pthread), 1 KB..4 MB, through the plan cache (every timed
   call is a cache hit), beside the bare pg collective it lowers to (planner overhead) and
   beside the same transition written by hand with MPI collectives (dtensor_mpi_bench
   under mpirun -np 2, started from here like bench/pg). Also the cost of a plan-cache hit
   alone, and the planner's own cost per call measured on one thread against a port whose
   collectives return at once (dt_redistribute - the bare pg call: no rendezvous noise),
   also as a share of the bare pg_pthread collective at each size. Sizes: S->R counts the
   gathered output, P->S its input, P->R the buffer.
   One JSON row per measurement (DESIGN.md). Latencies are medians of single calls, the
   dtensor call and the bare one alternating (the machine is shared: both see the same
   load, and preemption spikes fall in the tails), less the timer's own cost; the plan
   hit is the median of BENCH_REPEATS loops. No assertions. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "../pg/bench_pg.h"
#include "bench_dt.h" /* bench_time.h, the null port, row() */

#define NS 5
static const size_t sizes[NS] = {1024, 16384, 262144, 1u << 20, 4u << 20};
static const char *const size_names[NS] = {"1KB", "16KB", "256KB", "1MB", "4MB"};
static const char *const trans[3] = {"S(0)->R", "P(sum)->R", "P(sum)->S(0)"};

static pg_pthread_world world;
static float inbuf[2][BENCH_MAX_BYTES / 4], outbuf[2][BENCH_MAX_BYTES / 4];
static uint64_t scratch[2][2 * BENCH_MAX_BYTES / 8]; /* the plan's query (unused: layouts are direct) */
static dt_mesh mesh[2];
static dt_comm comm[2];
static dt_cache_entry entries[2][4];
static dt_plan_cache cache[2];
static double dt_us[3][NS], bare_us[3][NS], bare_p10_us[3][NS], hit_ns, tick_us;
#define MAX_SAMPLES 16384
static double samples[2][MAX_SAMPLES]; /* rank 0's single-call latencies, us */

/* One transition on one rank, prepared outside the timed calls: the specs, the local
   tensors the caller of dt_redistribute holds (a DTensor keeps its local tensor), and
   the bare collective's arguments. */
typedef struct op_case {
    int t;
    size_t n, counts[2];
    const dt_spec *src, *dst;
    mb_tensor in, out;
} op_case;

static void op_prepare(op_case *oc, int me, int t, size_t bytes, const dt_spec *src, const dt_spec *dst)
{
    int32_t ls[1];
    oc->t = t;
    oc->n = bytes / 4;
    oc->counts[0] = oc->n / 2;
    oc->counts[1] = oc->n - oc->n / 2;
    oc->src = src;
    oc->dst = dst;
    dt_local_shape(src, me, ls, 0);
    mb_tensor_init(&oc->in, inbuf[me], MB_F32, 1, ls);
    dt_local_shape(dst, me, ls, 0);
    mb_tensor_init(&oc->out, outbuf[me], MB_F32, 1, ls);
}

/* one operation: dtensor (dt = 1) or the bare collective (dt = 0) */
static int run_op(pg_group *g, op_case *oc, int dt)
{
    int me = pg_rank(g);
    if (!dt) {
        if (oc->t == 0) return pg_all_gatherv(g, inbuf[me], outbuf[me], oc->counts, MB_F32);
        if (oc->t == 1) return pg_all_reduce(g, inbuf[me], outbuf[me], oc->n, MB_F32, PG_SUM);
        return pg_reduce_scatterv(g, inbuf[me], outbuf[me], oc->counts, MB_F32, PG_SUM);
    }
    return dt_redistribute(&comm[me], &cache[me], oc->src, &oc->in, oc->dst, 0, &oc->out, scratch[me],
                           sizeof scratch[me]);
}

static int body(pg_group *g, void *arg)
{
    static const dt_placement S0[1] = {DT_SHARD(0)}, R[1] = {DT_REPLICATE()}, P[1] = {DT_PARTIAL(DT_SUM)};
    static const int32_t two[1] = {2};
    const dt_placement *from[3] = {S0, P, P}, *to[3] = {R, R, S0};
    int me = pg_rank(g), t, s, r, i, k, rc, dt;
    (void)arg;
    if (me == 0) { /* the timer's own cost, taken off every single-call sample */
        for (i = 0; i < 1001; i++) {
            double a = now_us();
            samples[0][i] = now_us() - a;
        }
        tick_us = median(samples[0], 1001);
    }
    pg_set_timeout(g, 60000);
    if ((rc = dt_mesh_init(&mesh[me], 1, two, 0, me)) || (rc = dt_comm_init(&comm[me], &mesh[me], g)) ||
        (rc = dt_plan_cache_init(&cache[me], entries[me], 4)))
        return rc;
    for (i = 0; i < (int)(BENCH_MAX_BYTES / 4); i++) inbuf[me][i] = (float)(i % 7);
    for (i = 0; i < 20000; i++) /* warm-up */
        if ((rc = pg_all_reduce(g, inbuf[me], outbuf[me], 16, MB_F32, PG_SUM)) != 0) return rc;
    for (t = 0; t < 3; t++)
        for (s = 0; s < NS; s++) {
            int32_t shape[1];
            dt_spec src, dst;
            op_case oc;
            shape[0] = (int32_t)(sizes[s] / 4);
            dt_spec_init(&src, &mesh[me], from[t], 1, MB_F32, 1, shape, 0);
            dt_spec_init(&dst, &mesh[me], to[t], 1, MB_F32, 1, shape, 0);
            op_prepare(&oc, me, t, sizes[s], &src, &dst);
            k = bench_iters(sizes[s]) * BENCH_REPEATS;
            if (k > MAX_SAMPLES) k = MAX_SAMPLES;
            for (dt = 0; dt < 2; dt++)
                for (i = 0; i < 3; i++)
                    if ((rc = run_op(g, &oc, dt)) != 0) return rc;
            if ((rc = pg_barrier(g)) != 0) return rc;
            /* one call at a time, dtensor and bare alternating: both see the same machine
               load, and the medians of the single calls ignore preemption spikes */
            for (i = 0; i < k; i++)
                for (dt = 0; dt < 2; dt++) {
                    double t0 = now_us();
                    if ((rc = run_op(g, &oc, dt)) != 0) return rc;
                    if (me == 0) samples[dt][i] = now_us() - t0 - tick_us;
                }
            if (me == 0) {
                dt_us[t][s] = median(samples[1], k);
                bare_us[t][s] = median(samples[0], k);
                bare_p10_us[t][s] = samples[0][k / 10]; /* sorted: its fastest tenth */
            }
        }
    if (me == 0) { /* a plan-cache hit alone (no communication) */
        int32_t shape[1] = {1 << 16};
        dt_spec src, dst;
        const dt_plan *pl;
        double v[BENCH_REPEATS], t0;
        dt_spec_init(&src, &mesh[me], S0, 1, MB_F32, 1, shape, 0);
        dt_spec_init(&dst, &mesh[me], R, 1, MB_F32, 1, shape, 0);
        for (r = 0; r < BENCH_REPEATS; r++) {
            t0 = now_us();
            for (i = 0; i < 100000; i++)
                if (dt_plan_cached(&cache[me], &src, &dst, 0, &pl) != 0) return -1;
            v[r] = (now_us() - t0) * 1000.0 / 100000;
        }
        hit_ns = median(v, BENCH_REPEATS);
    }
    return 0;
}

/* ---- the planner's own cost per call: one thread, a port whose collectives return at
   once (bench_dt.h), dt_redistribute (cache hit) against the bare pg call with the same
   arguments ---- */
static double overhead_ns[3], overhead_med_ns[3]; /* per transition */

/* The timed calls, as functions of their own called through pointers (callgrind counts
   their inclusive cost under these names). */
static int dt_call_fn(pg_group *g, op_case *oc)
{
    return run_op(g, oc, 1);
}
static int bare_call_fn(pg_group *g, op_case *oc)
{
    return run_op(g, oc, 0);
}
static int (*volatile dt_call)(pg_group *g, op_case *oc) = dt_call_fn;
static int (*volatile bare_call)(pg_group *g, op_case *oc) = bare_call_fn;

/* repeats x iters calls of each, alternating per block; overhead_ns = least dtensor block -
   least bare block (the blocks least disturbed by other processes), overhead_med_ns the
   same from the medians */
static const dt_placement S0[1] = {DT_SHARD(0)}, R[1] = {DT_REPLICATE()}, P[1] = {DT_PARTIAL(DT_SUM)};
static const dt_placement *const from[3] = {S0, P, P}, *const to[3] = {R, R, S0};
static pg_ops null_ops;
static pg_group null_g;

/* One rank of 2 on the null port (mesh[0], comm[0], cache[0]); transition t of 16 KB in
   *oc, its plan cached behind two others (in the pg_pthread runs above, the 4-entry cache
   holds the other transitions and sizes too). */
static int null_setup(int t, dt_spec *src, dt_spec *dst, op_case *oc)
{
    static const int32_t two[1] = {2}, shape[1] = {4096}, other[2][1] = {{1024}, {2048}};
    const dt_plan *pl;
    int rc, k;
    if ((rc = null_group(&null_g, &null_ops, 2)) || (rc = dt_mesh_init(&mesh[0], 1, two, 0, 0)) ||
        (rc = dt_comm_init(&comm[0], &mesh[0], &null_g)) || (rc = dt_plan_cache_init(&cache[0], entries[0], 4)) ||
        (rc = dt_spec_init(src, &mesh[0], from[t], 1, MB_F32, 1, shape, 0)) ||
        (rc = dt_spec_init(dst, &mesh[0], to[t], 1, MB_F32, 1, shape, 0)))
        return rc;
    for (k = 0; k < 2; k++) {
        dt_spec a, b;
        if ((rc = dt_spec_init(&a, &mesh[0], from[t], 1, MB_F32, 1, other[k], 0)) ||
            (rc = dt_spec_init(&b, &mesh[0], to[t], 1, MB_F32, 1, other[k], 0)) ||
            (rc = dt_plan_cached(&cache[0], &a, &b, 0, &pl)))
            return rc;
    }
    op_prepare(oc, 0, t, 16384, src, dst);
    return run_op(&null_g, oc, 1); /* the miss */
}

static int null_overhead(int repeats, int iters)
{
    int t, r, i, dt, rc = 0;
    for (t = 0; t < 3; t++) {
        dt_spec src, dst;
        op_case oc;
        double v[2][BENCH_REPEATS], t0;
        pg_group *g = &null_g;
        if ((rc = null_setup(t, &src, &dst, &oc))) return rc;
        for (r = 0; r < repeats; r++)
            for (dt = 0; dt < 2; dt++) {
                t0 = now_us();
                if (dt)
                    for (i = 0; i < iters; i++) rc |= dt_call(g, &oc);
                else
                    for (i = 0; i < iters; i++) rc |= bare_call(g, &oc);
                v[dt][r] = (now_us() - t0) * 1000.0 / iters;
            }
        overhead_med_ns[t] = median(v[1], repeats) - median(v[0], repeats);
        overhead_ns[t] = v[1][0] - v[0][0]; /* sorted by median() */
    }
    return rc;
}

/* Instructions per call of dt_call_fn and bare_call_fn in `dtensor cg <t>` under callgrind
   (inclusive: dt_redistribute and the collective call; the null port's collective returns
   at once, so the difference is the planner's own work): 0 and a SKIPPED line without
   valgrind. */
#define CG_CALLS 1000
static int cg_instr(const char *self, int t, double *dt_instr, double *bare_instr)
{
    char cmd[8400], line[2048], out[64];
    FILE *p;
    *dt_instr = *bare_instr = 0;
    snprintf(out, sizeof out, "/tmp/dtensor_bench.%d.callgrind", (int)getpid());
    snprintf(cmd, sizeof cmd, "valgrind --tool=callgrind --callgrind-out-file=%s '%s' cg %d >/dev/null 2>&1", out, self,
             t);
    if (system("command -v valgrind >/dev/null 2>&1") || system(cmd)) return 0;
    snprintf(cmd, sizeof cmd, "callgrind_annotate --inclusive=yes --threshold=100 %s 2>/dev/null", out);
    p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p)) { /* "  1,234 (12.3%)  file:function [object]" */
        char num[64], *name = strrchr(line, ':');
        const char *c;
        int k = 0;
        double *to = 0;
        if (!name) continue;
        if (!strncmp(name + 1, "dt_call_fn [", 12))
            to = dt_instr;
        else if (!strncmp(name + 1, "bare_call_fn [", 14))
            to = bare_instr;
        if (!to) continue;
        for (c = line; *c && k < 63; c++) {
            if (*c >= '0' && *c <= '9')
                num[k++] = *c;
            else if (*c != ',' && k)
                break;
        }
        num[k] = 0;
        *to = atof(num) / CG_CALLS;
    }
    if (p) pclose(p);
    remove(out);
    return *dt_instr > 0 && *bare_instr > 0;
}

int main(int argc, char **argv)
{
    static const char *const bare[3] = {"pg_all_gatherv", "pg_all_reduce", "pg_reduce_scatterv"};
    static const char *const mpi[3] = {"MPI_Allgatherv", "MPI_Allreduce", "MPI_Reduce_scatter"};
    double hand[3][NS], v;
    char cmd[4200], dir[4096], line[256], cas[200], peer[160];
    const char *slash;
    FILE *f;
    int t, s, rc, have = 0;
    size_t bytes;
    double cgb;
    char load[64] = "?";
    f = fopen("/proc/loadavg", "r"); /* the machine's load, printed with the targets */
    if (f && fgets(load, sizeof load, f)) load[strcspn(load, " ")] = 0;
    if (f) fclose(f);
    if (argc > 2 && !strcmp(argv[1], "cg")) { /* under callgrind: CG_CALLS calls of transition argv[2] */
        dt_spec src, dst;
        op_case oc;
        int i;
        if (null_setup(atoi(argv[2]) % 3, &src, &dst, &oc)) return 1;
        for (i = 0, rc = 0; i < CG_CALLS; i++) rc |= dt_call(&null_g, &oc) | bare_call(&null_g, &oc);
        return rc != 0;
    }
    if (argc > 1 && !strcmp(argv[1], "overhead")) { /* only the one-thread planner overhead */
        rc = null_overhead(BENCH_REPEATS, 100000);
        for (t = 0; t < 3; t++)
            printf("%s planner overhead per call: %.1f ns (medians: %.1f ns)\n", trans[t], overhead_ns[t],
                   overhead_med_ns[t]);
        return rc != 0;
    }
    rc = pg_pthread_run(&world, 2, body, NULL);
    if (!rc) rc = null_overhead(BENCH_REPEATS, 100000);
    if (rc != 0) {
        fprintf(stderr, "dtensor bench failed: %d\n", rc);
        return 1;
    }
    for (t = 0; t < 3; t++)
        for (s = 0; s < NS; s++) hand[t][s] = -1;
    slash = strrchr(argv[0], '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
    snprintf(cmd, sizeof cmd, "mpirun %s --oversubscribe -np 2 %s/dtensor_mpi_bench",
             geteuid() == 0 ? "--allow-run-as-root" : "", dir);
    printf("running: %s\n", cmd);
    fflush(stdout);
    f = popen(cmd, "r");
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "mpi %d %zu %lf", &t, &bytes, &v) != 3 || t < 0 || t > 2) continue;
        for (s = 0; s < NS; s++)
            if (bytes == sizes[s]) hand[t][s] = v, have = 1;
    }
    if (!f || pclose(f) != 0 || !have) printf("MPI part failed or missing: its peer values are null\n");
    for (t = 0; t < 3; t++)
        for (s = 0; s < NS; s++) {
            snprintf(cas, sizeof cas, "redistribute %s f32 %s, 2 ranks pg_pthread (cache hit)", trans[t],
                     size_names[s]);
            snprintf(peer, sizeof peer, "bare %s (same run)", bare[t]);
            row(cas, "latency_us", "us", dt_us[t][s], peer, bare_us[t][s]);
            snprintf(cas, sizeof cas, "redistribute %s f32 %s: overhead over the bare collective", trans[t],
                     size_names[s]);
            row(cas, "overhead_pct", "%", 100.0 * (dt_us[t][s] - bare_us[t][s]) / bare_us[t][s],
                "target <= 5 % at >= 16KB", 5.0);
            snprintf(cas, sizeof cas, "redistribute %s f32 %s: planner overhead per call / the bare collective",
                     trans[t], size_names[s]);
            row(cas, "planner_overhead_pct", "%", 100.0 * overhead_ns[t] / 1000.0 / bare_us[t][s],
                "target <= 5 % at >= 16KB", 5.0);
            snprintf(cas, sizeof cas,
                     "redistribute %s f32 %s: planner overhead per call / the bare collective's "
                     "fastest tenth of calls (a quiet machine's latency)",
                     trans[t], size_names[s]);
            row(cas, "planner_overhead_pct", "%", 100.0 * overhead_ns[t] / 1000.0 / bare_p10_us[t][s],
                "target <= 5 % at >= 16KB", 5.0);
            if (sizes[s] == 16384)
                printf("target: %s planner overhead at 16KB <= 5 %% of the collective: %.1f %% of its median, %.1f %% "
                       "of its fastest tenth (%.0f ns / %.2f us, %.2f us; load average %s)\n",
                       trans[t], 100.0 * overhead_ns[t] / 1000.0 / bare_us[t][s],
                       100.0 * overhead_ns[t] / 1000.0 / bare_p10_us[t][s], overhead_ns[t], bare_us[t][s],
                       bare_p10_us[t][s], load);
            snprintf(cas, sizeof cas, "redistribute %s f32 %s, 2 ranks pg_pthread", trans[t], size_names[s]);
            snprintf(peer, sizeof peer, "the same by hand with %s (OpenMPI, 2 processes)", mpi[t]);
            row(cas, "latency_us", "us", dt_us[t][s], peer, hand[t][s]);
        }
    row("plan cache hit (dt_plan_cached, 1-D S(0)->R)", "plan_hit_ns", "ns", hit_ns, "target 1 us", 1000.0);
    for (t = 0; t < 3; t++) {
        snprintf(cas, sizeof cas,
                 "redistribute %s planner overhead per call (cache hit, a port whose collectives "
                 "return at once: dt_redistribute - the bare pg call)",
                 trans[t]);
        row(cas, "overhead_ns", "ns", overhead_ns[t], "target <= 1 us", 1000.0);
        if (cg_instr(argv[0], t, &v, &cgb)) {
            snprintf(cas, sizeof cas,
                     "redistribute %s planner overhead per call (callgrind instructions: "
                     "dt_redistribute on a cache hit - the bare pg call, null port)",
                     trans[t]);
            row(cas, "overhead_instr", "instr", v - cgb, "none", -1);
        } else if (!t) {
            printf("SKIPPED callgrind rows: no valgrind\n");
        }
    }
    return 0;
}
