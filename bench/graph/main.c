/* main.c — `scons bench`: a data-parallel training step (issue #7 item 7). An MLP
   IN -> HID -> OUT (relu, sigmoid, loss = sum(out - y)), its backward and SGD as one
   dtensor_graph.h: the batch-dim analysis shards the batch over 2
   pg_pthread ranks and all-reduces the weight and bias gradients (dt_gplan_run), against
   the same graph planned for 1 rank on the whole batch (the peer). Sizes are chosen so
   the matmuls dominate (B x IN x HID = 256 x 256 x 512: 92 M multiply-adds per step,
   164 K gradient floats all-reduced).
   Timing as bench/conv: wall time from a barrier before the step to a barrier after it
   (the slower rank counts), the 1-rank and the 2-rank step alternating in one run (both
   see the same load), medians of REPEATS; a second ratio in thread CPU time (1 rank / the
   slower of the 2 ranks, the all-reduce and its waiting included), what two otherwise
   idle cores would give on this shared host. Before timing, one step's parameters from
   2 ranks are compared with the 1-rank step's (float reduction order differs: 1e-4).
   Rank 1 waits out the 1-rank step (~18 ms) in pg_pthread's yield phase, made 100 ms
   long here (PG_PTHREAD_YIELD_NS; default 10 ms, then it sleeps): with the default it
   slept ~8 ms of every ~30 ms round, a duty cycle no data-parallel training loop has
   (its ranks step back to back), and started each 2-rank step on a core left idle,
   while rank 0 always starts it busy. The 1-rank step ran beside that yielding waiter
   for its first 10 ms before, for all of it now.
   One JSON row per measurement (DESIGN.md). No assertions. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_GRAPH_IMPLEMENTATION
#include "dtensor_graph.h"
#define PG_PTHREAD_IMPLEMENTATION
#define PG_PTHREAD_YIELD_NS 100000000 /* rank 1 yields through the 1-rank step (above) */
#include "ports/pg_pthread.h"
#include "../dtensor/bench_time.h"

#define B       256
#define IN      256
#define HID     512
#define OUT     64
#define REPEATS 15
#define CAP     32
#define ARENA   (8u << 20)

static pg_pthread_world world;
static float gx[B * IN], gy[B * OUT], w1[HID * IN], b1[HID], w2[OUT * HID], b2[OUT];
static uint64_t arena[3][ARENA / 8]; /* rank 0 and 1 of the 2-rank plan, the 1-rank plan */
static dt_gnode nodes[3][CAP];
static dt_gstep steps[3][CAP];
static dt_gplan plan[3];
static int ids[3][6]; /* x y w1 b1 w2 b2 */
static double t_one[REPEATS], t_two[REPEATS], c_one[REPEATS], c_two[2][REPEATS];

static double cpu_us(void) /* this thread's CPU time */
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int add(dt_graph *g, int op, const dt_op_attrs *a, int x, int y, int z, int nin)
{
    int32_t in[3];
    in[0] = x;
    in[1] = y;
    in[2] = z;
    return dt_graph_add(g, op, a, in, nin);
}

static int leaf(dt_graph *g, int op, int32_t d0, int32_t d1)
{
    dt_op_attrs a;
    memset(&a, 0, sizeof a);
    a.ndim = d1 ? 2 : 1;
    a.shape[0] = d0;
    a.shape[1] = d1;
    return dt_graph_add(g, op, &a, NULL, 0);
}

/* The train step graph into nodes[k], planned for `rank` of `world` into plan[k]. */
static int build(int k, int world, int rank)
{
    dt_graph g;
    dt_op_attrs tr, all, col, v, lr;
    int x, y, p1, q1, p2, q2, h, o, loss, e, ga2, gh, ga1, gw1, gw2, gb1, gb2;
    memset(&tr, 0, sizeof tr);
    tr.dim2 = 1;
    all = tr;
    all.dim = DT_DIM_ALL;
    all.dim2 = 0;
    col = tr;
    col.dim2 = 0;
    col.keepdim = 1;
    lr = col;
    lr.keepdim = 0;
    lr.scalar = 1e-4f;
    if (dt_graph_init(&g, nodes[k], CAP)) return -1;
    p1 = leaf(&g, DT_G_PARAM, HID, IN);
    q1 = leaf(&g, DT_G_PARAM, HID, 0);
    p2 = leaf(&g, DT_G_PARAM, OUT, HID);
    q2 = leaf(&g, DT_G_PARAM, OUT, 0);
    x = leaf(&g, DT_G_INPUT, B, IN);
    y = leaf(&g, DT_G_INPUT, B, OUT);
    h = add(&g, DT_ATEN_RELU, NULL, add(&g, DT_ATEN_LINEAR, NULL, x, p1, q1, 3), 0, 0, 1);
    o = add(&g, DT_ATEN_SIGMOID, NULL, add(&g, DT_ATEN_LINEAR, NULL, h, p2, q2, 3), 0, 0, 1);
    loss = add(&g, DT_ATEN_SUM, &all, add(&g, DT_ATEN_SUB, NULL, o, y, 0, 2), 0, 0, 1);
    memset(&v, 0, sizeof v);
    v.ndim = 2;
    v.shape[0] = B;
    v.shape[1] = OUT;
    e = add(&g, DT_ATEN_EXPAND, &v, add(&g, DT_G_ONES_LIKE, NULL, loss, 0, 0, 1), 0, 0, 1);
    ga2 = add(&g, DT_G_SIGMOID_BWD, NULL, e, o, 0, 2);
    gw2 = add(&g, DT_ATEN_MM, NULL, add(&g, DT_ATEN_TRANSPOSE, &tr, ga2, 0, 0, 1), h, 0, 2);
    v.ndim = 1;
    v.shape[0] = OUT;
    gb2 = add(&g, DT_ATEN_VIEW, &v, add(&g, DT_ATEN_SUM, &col, ga2, 0, 0, 1), 0, 0, 1);
    gh = add(&g, DT_ATEN_MM, NULL, ga2, p2, 0, 2);
    ga1 = add(&g, DT_G_THRESHOLD_BWD, NULL, gh, h, 0, 2);
    gw1 = add(&g, DT_ATEN_MM, NULL, add(&g, DT_ATEN_TRANSPOSE, &tr, ga1, 0, 0, 1), x, 0, 2);
    v.shape[0] = HID;
    gb1 = add(&g, DT_ATEN_VIEW, &v, add(&g, DT_ATEN_SUM, &col, ga1, 0, 0, 1), 0, 0, 1);
    if (add(&g, DT_G_SGD, &lr, p1, gw1, 0, 2) < 0 || add(&g, DT_G_SGD, &lr, q1, gb1, 0, 2) < 0 ||
        add(&g, DT_G_SGD, &lr, p2, gw2, 0, 2) < 0 || add(&g, DT_G_SGD, &lr, q2, gb2, 0, 2) < 0)
        return -2;
    ids[k][0] = x;
    ids[k][1] = y;
    ids[k][2] = p1;
    ids[k][3] = q1;
    ids[k][4] = p2;
    ids[k][5] = q2;
    if (dt_graph_plan(&g, world, rank, DT_SUM, &plan[k], steps[k], CAP) || plan[k].arena_bytes > ARENA) return -3;
    return 0;
}

/* Inputs (this rank's rows) and parameters into plan k's arena. */
static void load(int k)
{
    const float *src[6];
    int32_t off = 0, i, j, n;
    mb_tensor t;
    src[0] = gx;
    src[1] = gy;
    src[2] = w1;
    src[3] = b1;
    src[4] = w2;
    src[5] = b2;
    dt_chunk(B, plan[k].world, plan[k].rank, &off);
    for (j = 0; j < 6; j++) {
        if (dt_gplan_tensor(&plan[k], arena[k], ids[k][j], &t)) return;
        for (i = 0, n = 1; i < t.ndim; i++) n *= t.shape[i];
        memcpy(t.data, src[j] + (j < 2 ? (size_t)off * (size_t)t.shape[1] : 0), sizeof(float) * (size_t)n);
    }
}

static float worst; /* largest relative parameter difference, 2 ranks vs 1 */

static void compare(void)
{
    int j, i, n;
    mb_tensor a, b;
    for (j = 2; j < 6; j++) {
        if (dt_gplan_tensor(&plan[0], arena[0], ids[0][j], &a) || dt_gplan_tensor(&plan[2], arena[2], ids[2][j], &b)) {
            worst = INFINITY;
            return;
        }
        for (i = 0, n = 1; i < a.ndim; i++) n *= a.shape[i];
        for (i = 0; i < n; i++) {
            float d = fabsf(((float *)a.data)[i] - ((float *)b.data)[i]) / (1.0f + fabsf(((float *)b.data)[i]));
            if (d > worst) worst = d;
        }
    }
}

static int body(pg_group *g, void *arg)
{
    int me = pg_rank(g), r, rc;
    double t0, c0;
    (void)arg;
    if ((rc = build(me, 2, me)) || (me == 0 && (rc = build(2, 1, 0)))) return rc;
    load(me);
    if (me == 0) load(2);
    if ((rc = dt_gplan_run(&plan[me], arena[me], ARENA, g))) return rc;
    if (me == 0 && (rc = dt_gplan_run(&plan[2], arena[2], ARENA, NULL))) return rc;
    if ((rc = pg_barrier(g))) return rc;
    if (me == 0) compare();
    for (r = -2; r < REPEATS; r++) { /* two warm-up rounds */
        if ((rc = pg_barrier(g))) return rc;
        t0 = now_us();
        c0 = cpu_us();
        if (me == 0 && (rc = dt_gplan_run(&plan[2], arena[2], ARENA, NULL))) return rc;
        if (me == 0 && r >= 0) c_one[r] = cpu_us() - c0;
        if ((rc = pg_barrier(g))) return rc;
        if (me == 0 && r >= 0) t_one[r] = now_us() - t0;
        if ((rc = pg_barrier(g))) return rc;
        t0 = now_us();
        c0 = cpu_us();
        if ((rc = dt_gplan_run(&plan[me], arena[me], ARENA, g))) return rc;
        if (r >= 0) c_two[me][r] = cpu_us() - c0;
        if ((rc = pg_barrier(g))) return rc;
        if (me == 0 && r >= 0) t_two[r] = now_us() - t0;
    }
    return 0;
}

static void row(const char *cas, const char *metric, const char *unit, double ours, const char *peer, double pv)
{
    printf("{\"bench\": \"graph\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", \"ours\": %.3f, "
           "\"peer\": \"%s\", \"peer_value\": %.3f}\n",
           cas, metric, unit, ours, peer, pv);
}

int main(void)
{
    int i, rc;
    double one, two, cone, ctwo, c1;
    for (i = 0; i < B * IN; i++) gx[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    for (i = 0; i < B * OUT; i++) gy[i] = (float)((i * 11) % 7) / 7.0f;
    for (i = 0; i < HID * IN; i++) w1[i] = (float)((i * 13) % 61) / 600.0f - 0.05f;
    for (i = 0; i < OUT * HID; i++) w2[i] = (float)((i * 17) % 53) / 500.0f - 0.05f;
    for (i = 0; i < HID; i++) b1[i] = (float)(i % 9) / 90.0f;
    for (i = 0; i < OUT; i++) b2[i] = (float)(i % 5) / 50.0f;
    rc = pg_pthread_run(&world, 2, body, NULL);
    if (rc) {
        fprintf(stderr, "graph bench failed: %d\n", rc);
        return 1;
    }
    if (!(worst <= 1e-4f)) {
        fprintf(stderr, "graph bench: 2-rank parameters differ from the 1-rank step (%g)\n", (double)worst);
        return 1;
    }
    one = median(t_one, REPEATS);
    two = median(t_two, REPEATS);
    row("MLP 256-512-64 train step (fwd, bwd, SGD), batch 256: data parallel on 2 ranks (pg_pthread)", "samples_per_s",
        "samples/s", B / two * 1e6, "the same graph on 1 rank", B / one * 1e6);
    row("MLP 256-512-64 train step, batch 256: 2-rank samples/s / 1-rank samples/s", "speedup", "x", one / two,
        "issue #7 target", 1.7);
    cone = median(c_one, REPEATS);
    ctwo = median(c_two[0], REPEATS);
    c1 = median(c_two[1], REPEATS);
    if (c1 > ctwo) ctwo = c1;
    row("MLP 256-512-64 train step, batch 256: 1-rank CPU time / slower rank's CPU time on 2 ranks "
        "(load-independent)",
        "cpu_speedup", "x", cone / ctwo, "issue #7 target", 1.7);
    fprintf(stderr,
            "graph bench: 1 rank %.0f us/step (%.2f GMAC/s), 2 ranks %.0f us/step, %.2fx; CPU %.0f vs %.0f us "
            "(%.2fx); parameters within %.1e\n",
            one, 92274688.0 / one / 1e3, two, one / two, cone, ctwo, cone / ctwo, (double)worst);
    return 0;
}
