/* test_graph.c — dtensor_graph.h: the graph IR builder and its error codes, the
   batch-dim analysis against torch's test_data_parallel.py (SimpleMLP 50 -> 32 -> 8 on a
   (128, 50) batch, forward + backward + SGD as make_fx traces it, and the
   test_data_parallel_batch_dim_analysis wrapper: view(-1), squeeze, unsqueeze(0),
   view(128, -1)), single-rank execution against a hand-written MLP step, data-parallel
   execution on 2 and 4 pg_pthread ranks (even, uneven and empty shards) against the
   single-rank run, and the emitted C tables compiled by the C compiler and run; the same
   train step through the dispatcher (dt_graph_dist_*) on 1, 2 and 4 pg_pthread ranks:
   data parallel from the analysis's placements, tensor parallel (colwise then rowwise
   linear), and both on a 2x2 mesh, against the single-rank run, with the second step's
   strategy and plan cache hits. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_GRAPH_IMPLEMENTATION
#include "dtensor_graph.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"

#define IN   50
#define HID  32
#define OUT  8
#define MAXB 128
#define CAP  64

/* ---- the train step graph ---- */
typedef struct mlp {
    int x, y, w1, b1, w2, b2, t1, a1, h, t2, a2, o;
    int v, sq, u, v2, m, o2; /* the wrapper (test_data_parallel_batch_dim_analysis) */
    int d, loss, g0, g, gm, gv, gs, gvo, go, ga2, tga2, gw2, sb2, gb2, gh, ga1, tga1, gw1, sb1, gb1;
    int sgd[4];
} mlp;

static dt_op_attrs shape_attrs(int ndim, int32_t a, int32_t b)
{
    dt_op_attrs at;
    memset(&at, 0, sizeof at);
    at.ndim = ndim;
    at.shape[0] = a;
    at.shape[1] = b;
    return at;
}

static dt_op_attrs dim_attrs(int32_t dim, int32_t keepdim, float scalar)
{
    dt_op_attrs at;
    memset(&at, 0, sizeof at);
    at.dim = dim;
    at.keepdim = keepdim;
    at.scalar = scalar;
    return at;
}

static int add1(dt_graph *g, int op, const dt_op_attrs *a, int x)
{
    int32_t in[1];
    int id;
    in[0] = x;
    id = dt_graph_add(g, op, a, in, 1);
    assert_true(id >= 0);
    return id;
}

static int add2(dt_graph *g, int op, const dt_op_attrs *a, int x, int y)
{
    int32_t in[2];
    int id;
    in[0] = x;
    in[1] = y;
    id = dt_graph_add(g, op, a, in, 2);
    assert_true(id >= 0);
    return id;
}

static int add3(dt_graph *g, int op, int x, int y, int z)
{
    int32_t in[3];
    int id;
    in[0] = x;
    in[1] = y;
    in[2] = z;
    id = dt_graph_add(g, op, NULL, in, 3);
    assert_true(id >= 0);
    return id;
}

static int leaf(dt_graph *g, int op, int ndim, int32_t a, int32_t b)
{
    dt_op_attrs at = shape_attrs(ndim, a, b);
    int id = dt_graph_add(g, op, &at, NULL, 0);
    assert_true(id >= 0);
    return id;
}

/* A linear layer's parameter gradients from its output gradient ga (B, n) and input x:
   weight mm(t(ga), x), bias sum(ga, 0, keepdim).view(n), as aten traces them (aten.t:
   DT_G_T); tw: the weight gradient as t(mm(t(x), ga)), a transposed view (*tga is t(x)
   then). */
static void linear_backward(dt_graph *g, int ga, int x, int32_t n, int tw, int *tga, int *gw, int *sb, int *gb)
{
    dt_op_attrs a = dim_attrs(0, 1, 0.0f);
    *tga = add1(g, DT_G_T, NULL, tw ? x : ga);
    *gw = tw ? add1(g, DT_G_T, NULL, add2(g, DT_ATEN_MM, NULL, *tga, ga)) : add2(g, DT_ATEN_MM, NULL, *tga, x);
    *sb = add1(g, DT_ATEN_SUM, &a, ga);
    a = shape_attrs(1, n, 0);
    *gb = add1(g, DT_ATEN_VIEW, &a, *sb);
}

/* SimpleMLP's train step: loss = (sigmoid(net2(relu(net1(x)))) - y).sum(), its backward
   as aten ops, and SGD (lr) when sgd. wrap bit 0: torch's WrapperModule; bit 1: the
   layers as linear(x, w, b) rather than addmm(b, x, t(w)); bit 2: the first layer's
   weight gradient as a transposed view of an mm (sgd reads a strided gradient). */
static void build_mlp(dt_graph *g, dt_gnode *storage, mlp *m, int32_t B, int wrap, int sgd, float lr)
{
    dt_op_attrs a;
    assert_int_equal(dt_graph_init(g, storage, CAP), 0);
    memset(m, -1, sizeof *m);
    m->w1 = leaf(g, DT_G_PARAM, 2, HID, IN);
    m->b1 = leaf(g, DT_G_PARAM, 1, HID, 0);
    m->w2 = leaf(g, DT_G_PARAM, 2, OUT, HID);
    m->b2 = leaf(g, DT_G_PARAM, 1, OUT, 0);
    m->x = leaf(g, DT_G_INPUT, 2, B, IN);
    m->y = leaf(g, DT_G_INPUT, 2, B, OUT);
    if (wrap & 2) { /* linear(x, w, b) instead of addmm(b, x, t(w)) */
        m->a1 = add3(g, DT_ATEN_LINEAR, m->x, m->w1, m->b1);
        m->h = add1(g, DT_ATEN_RELU, NULL, m->a1);
        m->a2 = add3(g, DT_ATEN_LINEAR, m->h, m->w2, m->b2);
    } else {
        m->t1 = add1(g, DT_G_T, NULL, m->w1);
        m->a1 = add3(g, DT_ATEN_ADDMM, m->b1, m->x, m->t1);
        m->h = add1(g, DT_ATEN_RELU, NULL, m->a1);
        m->t2 = add1(g, DT_G_T, NULL, m->w2);
        m->a2 = add3(g, DT_ATEN_ADDMM, m->b2, m->h, m->t2);
    }
    m->o = add1(g, DT_ATEN_SIGMOID, NULL, m->a2);
    m->o2 = m->o;
    if (wrap & 1) { /* output + 0.1 * output.clone().view(-1).squeeze().unsqueeze(0).view(B, -1) */
        a = shape_attrs(1, -1, 0);
        m->v = add1(g, DT_ATEN_VIEW, &a, m->o);
        a = dim_attrs(DT_DIM_ALL, 0, 0.0f);
        m->sq = add1(g, DT_ATEN_SQUEEZE, &a, m->v);
        a = dim_attrs(0, 0, 0.0f);
        m->u = add1(g, DT_ATEN_UNSQUEEZE, &a, m->sq);
        a = shape_attrs(2, B, -1);
        m->v2 = add1(g, DT_ATEN_VIEW, &a, m->u);
        a = dim_attrs(0, 0, 0.1f);
        m->m = add1(g, DT_ATEN_MUL_SCALAR, &a, m->v2);
        m->o2 = add2(g, DT_ATEN_ADD, NULL, m->o, m->m);
    }
    m->d = add2(g, DT_ATEN_SUB, NULL, m->o2, m->y);
    a = dim_attrs(DT_DIM_ALL, 0, 0.0f);
    m->loss = add1(g, DT_ATEN_SUM, &a, m->d);
    /* backward */
    m->g0 = add1(g, DT_G_ONES_LIKE, NULL, m->loss);
    a = shape_attrs(2, B, OUT);
    m->g = add1(g, DT_ATEN_EXPAND, &a, m->g0);
    m->go = m->g;
    if (wrap & 1) {
        a = dim_attrs(0, 0, 0.1f);
        m->gm = add1(g, DT_ATEN_MUL_SCALAR, &a, m->g);
        a = shape_attrs(2, 1, B * OUT);
        m->gv = add1(g, DT_ATEN_VIEW, &a, m->gm);
        a = dim_attrs(0, 0, 0.0f);
        m->gs = add1(g, DT_ATEN_SQUEEZE, &a, m->gv);
        a = shape_attrs(2, B, OUT);
        m->gvo = add1(g, DT_ATEN_VIEW, &a, m->gs);
        m->go = add2(g, DT_ATEN_ADD, NULL, m->g, m->gvo);
    }
    m->ga2 = add2(g, DT_G_SIGMOID_BWD, NULL, m->go, m->o);
    linear_backward(g, m->ga2, m->h, OUT, 0, &m->tga2, &m->gw2, &m->sb2, &m->gb2);
    m->gh = add2(g, DT_ATEN_MM, NULL, m->ga2, m->w2);
    m->ga1 = add2(g, DT_G_THRESHOLD_BWD, NULL, m->gh, m->h);
    linear_backward(g, m->ga1, m->x, HID, (wrap & 4) != 0, &m->tga1, &m->gw1, &m->sb1, &m->gb1);
    if (sgd) {
        a = dim_attrs(0, 0, lr);
        m->sgd[0] = add2(g, DT_G_SGD, &a, m->w1, m->gw1);
        m->sgd[1] = add2(g, DT_G_SGD, &a, m->b1, m->gb1);
        m->sgd[2] = add2(g, DT_G_SGD, &a, m->w2, m->gw2);
        m->sgd[3] = add2(g, DT_G_SGD, &a, m->b2, m->gb2);
    }
}

/* ---- builder ---- */

static void test_builder_errors(void **state)
{
    dt_gnode nodes[4];
    dt_graph g;
    dt_op_attrs a = shape_attrs(2, 4, 3), bad = shape_attrs(2, 4, 0);
    int32_t in[3] = {0, 0, 0}, x, w;
    (void)state;
    assert_int_equal(dt_graph_bytes(4), 4 * sizeof(dt_gnode));
    assert_int_equal(dt_graph_bytes(-1), 0);
    assert_int_equal(dt_graph_init(&g, nodes, 0), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_graph_init(&g, nodes, 4), 0);
    assert_int_equal(dt_graph_add(&g, DT_ATEN_RELU, NULL, in, 1), DT_ERR_NODE); /* no node 0 yet */
    assert_int_equal(dt_graph_add(&g, DT_G_INPUT, &bad, NULL, 0), DT_ERR_SHAPE);
    x = dt_graph_add(&g, DT_G_INPUT, &a, NULL, 0);
    assert_int_equal(x, 0);
    a = shape_attrs(2, 3, 5);
    w = dt_graph_add(&g, DT_G_PARAM, &a, NULL, 0);
    assert_int_equal(w, 1);
    in[0] = x;
    in[1] = 2; /* not yet defined: a cycle cannot be built */
    assert_int_equal(dt_graph_add(&g, DT_ATEN_MM, NULL, in, 2), DT_ERR_NODE);
    in[1] = -1;
    assert_int_equal(dt_graph_add(&g, DT_ATEN_MM, NULL, in, 2), DT_ERR_NODE);
    in[1] = x;
    assert_int_equal(dt_graph_add(&g, DT_ATEN_MM, NULL, in, 2), DT_ERR_SHAPE); /* (4,3) @ (4,3) */
    assert_int_equal(dt_graph_add(&g, DT_ATEN_MM, NULL, in, 1), DT_ERR_PLACEMENT_COUNT);
    assert_int_equal(dt_graph_add(&g, DT_ATEN_SOFTMAX, NULL, in, 1), DT_ERR_UNSUPPORTED);
    assert_int_equal(dt_graph_add(&g, DT_G_OP_END, NULL, in, 1), DT_ERR_UNSUPPORTED);
    assert_int_equal(dt_graph_add(&g, DT_G_SGD, NULL, in, 2), DT_ERR_MISMATCH); /* x is no parameter */
    a.dim = 5;
    assert_int_equal(dt_graph_add(&g, DT_ATEN_SUM, &a, in, 1), DT_ERR_DIM);
    a = shape_attrs(1, 13, 0);
    assert_int_equal(dt_graph_add(&g, DT_ATEN_VIEW, &a, in, 1), DT_ERR_SHAPE); /* 12 elements */
    a = shape_attrs(2, -1, -1);
    assert_int_equal(dt_graph_add(&g, DT_ATEN_VIEW, &a, in, 1), DT_ERR_SHAPE); /* two -1 */
    a = shape_attrs(1, 1, 0);
    a.scalar = INFINITY;
    assert_int_equal(dt_graph_add(&g, DT_G_FULL, &a, NULL, 0), DT_ERR_SHAPE);
    assert_int_equal(g.count, 2); /* nothing was added by the failures */
    in[1] = w;
    assert_int_equal(dt_graph_add(&g, DT_ATEN_MM, NULL, in, 2), 2);
    assert_int_equal(g.nodes[2].ndim, 2);
    assert_int_equal(g.nodes[2].shape[0], 4);
    assert_int_equal(g.nodes[2].shape[1], 5);
    a = shape_attrs(2, 10, -1);
    in[0] = 2;
    assert_int_equal(dt_graph_add(&g, DT_ATEN_VIEW, &a, in, 1), 3); /* -1 inferred: (10, 2) */
    assert_int_equal(g.nodes[3].shape[1], 2);
    assert_int_equal(dt_graph_add(&g, DT_ATEN_RELU, NULL, in, 1), DT_ERR_TOO_SMALL); /* capacity 4 */
    assert_string_equal(dt_strerror(DT_ERR_NODE), "bad graph node");
    assert_string_equal(dt_strerror(DT_ERR_BATCH), "batch dim analysis failed");
}

/* ---- batch-dim analysis ---- */

static void test_analysis_mlp(void **state)
{
    static dt_gnode nodes[CAP];
    dt_graph g;
    mlp m;
    (void)state;
    build_mlp(&g, nodes, &m, 128, 1, 1, 0.1f);
    assert_int_equal(dt_graph_analyze(&g), 0);
    assert_int_equal(g.batch, 128);
    assert_int_equal(nodes[m.x].placement, 0);
    assert_int_equal(nodes[m.y].placement, 0);
    assert_int_equal(nodes[m.w1].placement, DT_BD_REPLICATE);
    assert_int_equal(nodes[m.t1].placement, DT_BD_REPLICATE); /* t(param): a parameter */
    assert_int_equal(nodes[m.t1].type, DT_GT_PARAM);
    assert_int_equal(nodes[m.a1].placement, 0);
    assert_int_equal(nodes[m.o].placement, 0);
    /* view(-1): (1024,) batch dim 0 (size 1024); squeeze keeps it; unsqueeze(0): 1;
       view(128, -1): 0 (size 128 again) */
    assert_int_equal(nodes[m.v].shape[0], 1024);
    assert_int_equal(nodes[m.v].bd, 0);
    assert_int_equal(nodes[m.sq].bd, 0);
    assert_int_equal(nodes[m.u].bd, 1);
    assert_int_equal(nodes[m.v2].bd, 0);
    assert_int_equal(nodes[m.o2].bd, 0);
    /* the loss: a full reduction to 0-d stays Shard(0) */
    assert_int_equal(nodes[m.loss].ndim, 0);
    assert_int_equal(nodes[m.loss].placement, 0);
    assert_int_equal(nodes[m.g0].placement, 0);
    assert_int_equal(nodes[m.g].placement, 0);
    assert_int_equal(nodes[m.gv].bd, 1); /* view(1, 1024) */
    assert_int_equal(nodes[m.gs].bd, 0);
    assert_int_equal(nodes[m.gvo].bd, 0); /* view(128, 8) */
    assert_int_equal(nodes[m.tga2].bd, 1);
    assert_int_equal(nodes[m.gh].placement, 0);
    /* weight and bias gradients: Partial */
    assert_int_equal(nodes[m.gw2].type, DT_GT_GRAD);
    assert_int_equal(nodes[m.gw2].placement, DT_BD_PARTIAL);
    assert_int_equal(nodes[m.gw1].placement, DT_BD_PARTIAL);
    assert_int_equal(nodes[m.gb1].placement, DT_BD_PARTIAL);
    assert_int_equal(nodes[m.sb1].type, DT_GT_GRAD); /* through the view before the tag */
    assert_int_equal(nodes[m.sgd[0]].placement, DT_BD_REPLICATE);
    assert_int_equal(nodes[m.sgd[0]].type, DT_GT_PARAM);
}

static void test_analysis_no_optimizer(void **state)
{
    static dt_gnode nodes[CAP];
    dt_graph g;
    mlp m;
    int f1, f2;
    (void)state;
    build_mlp(&g, nodes, &m, 128, 0, 0, 0.0f);
    f1 = leaf(&g, DT_G_FULL, 1, 50, 0);  /* a factory tensor: Replicate */
    f2 = leaf(&g, DT_G_FULL, 2, 128, 8); /* ... unless a dim has the batch size */
    assert_int_equal(dt_graph_analyze(&g), 0);
    /* without tags the weight gradient is an activation: Partial by the analyzer alone */
    assert_int_equal(nodes[m.gw2].type, DT_GT_ACT);
    assert_int_equal(nodes[m.gw2].bd, DT_BD_PARTIAL);
    assert_int_equal(nodes[m.sb2].bd, DT_BD_PARTIAL);
    assert_int_equal(nodes[m.gb2].bd, DT_BD_PARTIAL); /* view of a Partial stays Partial */
    assert_int_equal(nodes[f1].placement, DT_BD_REPLICATE);
    assert_int_equal(nodes[f2].placement, 0);
}

static void test_analysis_errors(void **state)
{
    static dt_gnode nodes[8];
    static dt_gstep st[8];
    dt_graph g;
    dt_gplan p;
    dt_op_attrs a = shape_attrs(2, 128, 50), q;
    int32_t in[2];
    (void)state;
    assert_int_equal(dt_graph_init(&g, nodes, 8), 0);
    /* a square activation t (aten.t: no dim rule) or transposed (aten.transpose.int) */
    assert_true(dt_graph_add(&g, DT_G_INPUT, &a, NULL, 0) == 0);
    a = shape_attrs(2, 64, 8);
    assert_true(dt_graph_add(&g, DT_G_INPUT, &a, NULL, 0) == 1);
    q = shape_attrs(3, 8, 0);
    assert_int_equal(dt_graph_add(&g, DT_G_T, &q, in, 0), DT_ERR_PLACEMENT_COUNT);
    in[0] = 1;
    assert_true(dt_graph_add(&g, DT_ATEN_UNSQUEEZE, &q, in, 1) == 2);
    in[0] = 2;
    assert_int_equal(dt_graph_add(&g, DT_G_T, NULL, in, 1), DT_ERR_DIM); /* 3-D */
    /* two inputs of different batch sizes: both Shard(0), the first one's is the batch
       (torch's init_batch_dim_size); a plan refuses 64 rows of a batch of 128 */
    assert_int_equal(dt_graph_analyze(&g), 0);
    assert_true(nodes[0].placement == 0 && nodes[1].placement == 0 && g.batch == 128);
    assert_int_equal(dt_graph_plan(&g, 2, 0, DT_SUM, &p, st, 8), DT_ERR_BATCH);
    assert_int_equal(g.analysed, 1);
    /* an activation before any input */
    assert_int_equal(dt_graph_init(&g, nodes, 8), 0);
    a = shape_attrs(1, 4, 0);
    assert_true(dt_graph_add(&g, DT_G_FULL, &a, NULL, 0) == 0);
    assert_int_equal(dt_graph_analyze(&g), DT_ERR_BATCH);
    /* an optimizer op mixing a gradient and an activation */
    assert_int_equal(dt_graph_init(&g, nodes, 8), 0);
    a = shape_attrs(1, 4, 0);
    assert_true(dt_graph_add(&g, DT_G_PARAM, &a, NULL, 0) == 0);
    assert_true(dt_graph_add(&g, DT_G_INPUT, &a, NULL, 0) == 1);
    in[0] = 1;
    assert_true(dt_graph_add(&g, DT_ATEN_RELU, NULL, in, 1) == 2);
    in[0] = 0;
    in[1] = 2;
    assert_true(dt_graph_add(&g, DT_G_SGD, NULL, in, 2) == 3); /* relu(x) tagged as grad */
    in[0] = 1;
    assert_true(dt_graph_add(&g, DT_ATEN_ADD, NULL, in, 2) == 4); /* x + grad */
    assert_int_equal(dt_graph_analyze(&g), DT_ERR_BATCH);
}

/* torch's two 2-D transposes: aten.t (DT_G_T) is a non-compute op without a dim rule (the
   batch dim by size search), aten.transpose.int (DT_ATEN_TRANSPOSE) a compute op with one. */
static void test_analysis_t_vs_transpose(void **state)
{
    static dt_gnode nodes[12];
    dt_graph g;
    dt_op_attrs a = shape_attrs(2, 6, 6), tr = dim_attrs(0, 0, 0.0f);
    int x, w, t, tt, mm, gt, gtt, s;
    (void)state;
    tr.dim2 = 1;
    assert_int_equal(dt_graph_init(&g, nodes, 12), 0);
    x = leaf(&g, DT_G_INPUT, 2, 6, 6); /* a square [B, B] activation */
    w = leaf(&g, DT_G_PARAM, 2, 6, 6);
    t = add1(&g, DT_G_T, NULL, x);
    tt = add1(&g, DT_ATEN_TRANSPOSE, &tr, x);
    assert_int_equal(dt_graph_analyze(&g), 0);
    assert_int_equal(nodes[t].placement, 0);  /* size search: dim 0 has the batch size */
    assert_int_equal(nodes[tt].placement, 1); /* the dim map moves the batch dim */
    assert_true(nodes[t].shape[0] == 6 && nodes[t].attrs.dim == 0 && nodes[t].attrs.dim2 == 1);
    /* an mm -> transpose -> sgd chain: through aten.t the mm is a gradient; aten.transpose.int
       is a compute op, so the mm is an activation (Partial) and only the transpose the gradient */
    mm = add2(&g, DT_ATEN_MM, NULL, t, x);
    gt = add1(&g, DT_G_T, NULL, mm);
    s = add2(&g, DT_G_SGD, &a, w, gt);
    assert_int_equal(dt_graph_analyze(&g), 0);
    assert_true(nodes[mm].type == DT_GT_GRAD && nodes[mm].placement == DT_BD_PARTIAL);
    assert_true(nodes[gt].type == DT_GT_GRAD && nodes[s].type == DT_GT_PARAM);
    assert_int_equal(dt_graph_init(&g, nodes, 12), 0);
    x = leaf(&g, DT_G_INPUT, 2, 6, 4);
    w = leaf(&g, DT_G_PARAM, 2, 4, 4);
    tt = add1(&g, DT_ATEN_TRANSPOSE, &tr, x);
    mm = add2(&g, DT_ATEN_MM, NULL, tt, x);
    gtt = add1(&g, DT_ATEN_TRANSPOSE, &tr, mm);
    s = add2(&g, DT_G_SGD, &a, w, gtt);
    assert_int_equal(dt_graph_analyze(&g), 0);
    assert_true(nodes[mm].type == DT_GT_ACT && nodes[mm].placement == DT_BD_PARTIAL);
    assert_true(nodes[gtt].type == DT_GT_GRAD && nodes[gtt].placement == DT_BD_PARTIAL);
    /* the plan all-reduces the same tensor either way (the mm, under its transposed view) */
    {
        static dt_gstep st[12];
        dt_gplan p;
        assert_int_equal(dt_graph_plan(&g, 2, 0, DT_SUM, &p, st, 12), 0);
        assert_true((st[mm].flags & DT_GS_ALLREDUCE) && (st[gtt].flags & DT_GS_VIEW));
    }
    /* aten.t of 1-D and 0-D tensors is the tensor itself */
    a = dim_attrs(DT_DIM_ALL, 0, 0.0f);
    assert_int_equal(nodes[add1(&g, DT_G_T, NULL, add1(&g, DT_ATEN_SUM, &a, x))].ndim, 0);
    assert_int_equal(nodes[add1(&g, DT_G_T, NULL, leaf(&g, DT_G_PARAM, 1, 5, 0))].shape[0], 5);
}

/* ---- execution ---- */

static float gx[MAXB][IN], gy[MAXB][OUT], p0w1[HID][IN], p0b1[HID], p0w2[OUT][HID], p0b2[OUT];

static uint32_t lcg;
static float rnd(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return (float)((lcg >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void init_data(void)
{
    int i, j;
    lcg = 12345u;
    for (i = 0; i < MAXB; i++) {
        for (j = 0; j < IN; j++) gx[i][j] = rnd();
        for (j = 0; j < OUT; j++) gy[i][j] = rnd();
    }
    for (i = 0; i < HID; i++) {
        for (j = 0; j < IN; j++) p0w1[i][j] = 0.2f * rnd();
        p0b1[i] = 0.1f * rnd();
    }
    for (i = 0; i < OUT; i++) {
        for (j = 0; j < HID; j++) p0w2[i][j] = 0.2f * rnd();
        p0b2[i] = 0.1f * rnd();
    }
}

/* Node `id`'s local tensor = rows r0.. of a global array with n columns (its local size). */
static void put(const dt_gplan *p, void *arena, int id, const float *src, int32_t r0, int32_t n)
{
    mb_tensor t;
    assert_int_equal(dt_gplan_tensor(p, arena, id, &t), 0);
    {
        int32_t i, cnt = 1, d;
        for (d = 0; d < t.ndim; d++) cnt *= t.shape[d];
        for (i = 0; i < cnt; i++) ((float *)t.data)[i] = src[(size_t)r0 * (size_t)n + (size_t)i];
    }
}

static void load(const dt_gplan *p, void *arena, const mlp *m)
{
    int32_t off = 0;
    dt_chunk(p->batch, p->world, p->rank, &off);
    put(p, arena, m->x, &gx[0][0], off, IN);
    put(p, arena, m->y, &gy[0][0], off, OUT);
    put(p, arena, m->w1, &p0w1[0][0], 0, 0);
    put(p, arena, m->b1, p0b1, 0, 0);
    put(p, arena, m->w2, &p0w2[0][0], 0, 0);
    put(p, arena, m->b2, p0b2, 0, 0);
}

static const float *data_of(const dt_gplan *p, void *arena, int id)
{
    mb_tensor t;
    memset(&t, 0, sizeof t); /* gcc -O2 cannot see that assert_int_equal does not return on failure */
    assert_int_equal(dt_gplan_tensor(p, arena, id, &t), 0);
    return (const float *)t.data;
}

#define NPARAM (HID * IN + HID + OUT * HID + OUT)
/* parameters after the steps, flattened w1 b1 w2 b2; the loss of each step */
static void params_of(const dt_gplan *p, void *arena, const mlp *m, float *out)
{
    memcpy(out, data_of(p, arena, m->w1), sizeof(float) * HID * IN);
    memcpy(out + HID * IN, data_of(p, arena, m->b1), sizeof(float) * HID);
    memcpy(out + HID * IN + HID, data_of(p, arena, m->w2), sizeof(float) * OUT * HID);
    memcpy(out + HID * IN + HID + OUT * HID, data_of(p, arena, m->b2), sizeof(float) * OUT);
}

/* The same step by hand (no graph): forward, backward, SGD on the whole batch. */
static void reference(int32_t B, int wrap, float lr, int steps, float *params, float *loss)
{
    static float w1[HID][IN], b1[HID], w2[OUT][HID], b2[OUT], h[MAXB][HID], o[MAXB][OUT], ga2[MAXB][OUT],
        ga1[MAXB][HID];
    float gw1[HID][IN], gb1[HID], gw2[OUT][HID], gb2[OUT];
    int s, i, j, k;
    memcpy(w1, p0w1, sizeof w1);
    memcpy(b1, p0b1, sizeof b1);
    memcpy(w2, p0w2, sizeof w2);
    memcpy(b2, p0b2, sizeof b2);
    for (s = 0; s < steps; s++) {
        float l = 0.0f;
        for (i = 0; i < B; i++) {
            for (j = 0; j < HID; j++) {
                float a = b1[j];
                for (k = 0; k < IN; k++) a += gx[i][k] * w1[j][k];
                h[i][j] = a > 0.0f ? a : 0.0f;
            }
            for (j = 0; j < OUT; j++) {
                float a = b2[j], y;
                for (k = 0; k < HID; k++) a += h[i][k] * w2[j][k];
                o[i][j] = 1.0f / (1.0f + expf(-a));
                y = (wrap & 1) ? o[i][j] + o[i][j] * 0.1f : o[i][j];
                l += y - gy[i][j];
                ga2[i][j] = ((wrap & 1) ? 1.0f + 0.1f : 1.0f) * (1.0f - o[i][j]) * o[i][j];
            }
            for (j = 0; j < HID; j++) {
                float a = 0.0f;
                for (k = 0; k < OUT; k++) a += ga2[i][k] * w2[k][j];
                ga1[i][j] = h[i][j] <= 0.0f ? 0.0f : a;
            }
        }
        memset(gw1, 0, sizeof gw1);
        memset(gb1, 0, sizeof gb1);
        memset(gw2, 0, sizeof gw2);
        memset(gb2, 0, sizeof gb2);
        for (i = 0; i < B; i++) {
            for (j = 0; j < OUT; j++) {
                gb2[j] += ga2[i][j];
                for (k = 0; k < HID; k++) gw2[j][k] += ga2[i][j] * h[i][k];
            }
            for (j = 0; j < HID; j++) {
                gb1[j] += ga1[i][j];
                for (k = 0; k < IN; k++) gw1[j][k] += ga1[i][j] * gx[i][k];
            }
        }
        for (j = 0; j < HID; j++) {
            b1[j] -= lr * gb1[j];
            for (k = 0; k < IN; k++) w1[j][k] -= lr * gw1[j][k];
        }
        for (j = 0; j < OUT; j++) {
            b2[j] -= lr * gb2[j];
            for (k = 0; k < HID; k++) w2[j][k] -= lr * gw2[j][k];
        }
        loss[s] = l;
    }
    memcpy(params, w1, sizeof w1);
    memcpy(params + HID * IN, b1, sizeof b1);
    memcpy(params + HID * IN + HID, w2, sizeof w2);
    memcpy(params + HID * IN + HID + OUT * HID, b2, sizeof b2);
}

static void close_all(const float *a, const float *b, int n, float tol)
{
    int i;
    for (i = 0; i < n; i++)
        if (fabsf(a[i] - b[i]) > tol * (1.0f + fabsf(b[i]))) {
            fprintf(stderr, "element %d: %.9g vs %.9g\n", i, (double)a[i], (double)b[i]);
            fail();
        }
}

#define ARENA (1 << 20)
static uint64_t arena1[ARENA / 8];
static float want[NPARAM], got[NPARAM];

static int dp_avg; /* gradients averaged (DT_AVG), the learning rate x world */

/* One rank's run: plan, load, `steps` steps; parameters and loss per step out. */
static int run_rank(pg_group *pg, int world, int rank, int32_t B, int wrap, int steps, float *params, float *loss,
                    uint64_t *arena, dt_gnode *nodes, dt_gstep *st)
{
    dt_graph g;
    dt_gplan p;
    mlp m;
    int s, rc;
    build_mlp(&g, nodes, &m, B, wrap, 1, 0.05f * (dp_avg ? (float)world : 1.0f)); /* avg x world: the sum */
    rc = dt_graph_plan(&g, world, rank, dp_avg ? DT_AVG : DT_SUM, &p, st, CAP);
    if (rc) return rc;
    if (p.arena_bytes > ARENA) return -100;
    load(&p, arena, &m);
    for (s = 0; s < steps; s++) {
        rc = dt_gplan_run(&p, arena, ARENA, pg);
        if (rc) return rc;
        loss[s] = *data_of(&p, arena, m.loss);
    }
    params_of(&p, arena, &m, params);
    return 0;
}

static void test_single_rank(void **state)
{
    static dt_gnode nodes[CAP];
    static dt_gstep st[CAP];
    float l1[2], l2[2];
    int wrap;
    (void)state;
    init_data();
    for (wrap = 0; wrap < 8; wrap++) {
        reference(128, wrap, 0.05f, 2, want, l1);
        assert_int_equal(run_rank(NULL, 1, 0, 128, wrap, 2, got, l2, arena1, nodes, st), 0);
        close_all(got, want, NPARAM, 2e-5f);
        close_all(l2, l1, 2, 1e-4f);
    }
}

/* ---- data parallel over pg_pthread ---- */
static pg_pthread_world world;
static uint64_t arenas[4][ARENA / 8];
static dt_gnode rnodes[4][CAP];
static dt_gstep rsteps[4][CAP];
static float rparams[4][NPARAM], rloss[4][2];
static int rrc[4];
static int32_t dp_batch, dp_wrap;

static int dp_body(pg_group *g, void *arg)
{
    int r = pg_rank(g);
    (void)arg;
    rrc[r] = run_rank(g, pg_size(g), r, dp_batch, dp_wrap, 2, rparams[r], rloss[r], arenas[r], rnodes[r], rsteps[r]);
    return rrc[r];
}

/* The single-rank plan's two steps into want and l1; the case's batch and wrap set. */
static void single_rank(int32_t B, int wrap, float *l1)
{
    static dt_gnode nodes[CAP];
    static dt_gstep st[CAP];
    init_data();
    assert_int_equal(run_rank(NULL, 1, 0, B, wrap, 2, want, l1, arena1, nodes, st), 0);
    dp_batch = B;
    dp_wrap = wrap;
}

static void dp_case(int ranks, int32_t B, int wrap)
{
    float l1[2];
    int r, s;
    single_rank(B, wrap, l1);
    assert_int_equal(pg_pthread_run(&world, ranks, dp_body, NULL), 0);
    for (r = 0; r < ranks; r++) {
        assert_int_equal(rrc[r], 0);
        close_all(rparams[r], want, NPARAM, 1e-4f); /* every rank: the single-rank parameters */
    }
    for (s = 0; s < 2; s++) { /* the loss stays Shard(0): the local losses add up to it */
        float sum = 0.0f;
        for (r = 0; r < ranks; r++) sum += rloss[r][s];
        close_all(&sum, &l1[s], 1, 1e-4f);
    }
}

static void test_dp_2(void **state)
{
    (void)state;
    dp_case(2, 128, 0);
    dp_case(2, 128, 1);
    dp_case(2, 7, 1); /* uneven: 4 + 3 rows */
    dp_case(2, 9, 2); /* linear layers */
    dp_case(2, 9, 5); /* w1's gradient all-reduced under a transposed view */
    dp_avg = 1;
    dp_case(2, 7, 4);
    dp_avg = 0;
}

static void test_dp_4(void **state)
{
    (void)state;
    dp_case(4, 128, 1);
    dp_case(4, 10, 0); /* 3, 3, 3, 1 rows */
    dp_case(4, 3, 1);  /* 1, 1, 1 and an empty rank */
    dp_avg = 1;
    dp_case(4, 10, 6);
    dp_avg = 0;
}

static void test_plan_local_shapes(void **state)
{
    static dt_gnode nodes[CAP];
    static dt_gstep st[CAP];
    dt_graph g;
    dt_gplan p;
    mlp m;
    (void)state;
    build_mlp(&g, nodes, &m, 10, 1, 1, 0.1f);
    assert_int_equal(dt_graph_plan(&g, 4, 3, DT_SUM, &p, st, g.count - 1), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_graph_plan(&g, 4, 3, DT_SUM, &p, st, CAP), 0);
    assert_int_equal(p.local_batch, 1);
    assert_int_equal(st[m.x].shape[0], 1);
    assert_int_equal(st[m.v].shape[0], 8);   /* view(-1): 8 x its one row */
    assert_int_equal(st[m.u].shape[1], 8);   /* unsqueeze(0): (1, 8) */
    assert_int_equal(st[m.v2].shape[0], 1);  /* view(10, -1): (1, 8) */
    assert_true(st[m.v].flags & DT_GS_VIEW); /* views alias: no copy */
    assert_int_equal(st[m.v].offset, st[m.o].offset);
    assert_true(st[m.tga2].flags & DT_GS_VIEW);
    assert_int_equal(st[m.tga2].stride[0], 1);
    assert_int_equal(st[m.gw1].shape[0], HID); /* Partial: the full shape */
    assert_true(st[m.gw1].flags & DT_GS_ALLREDUCE);
    assert_true(st[m.sb1].flags & DT_GS_ALLREDUCE); /* the bias grad's root, under its view */
    assert_false(st[m.gb1].flags & DT_GS_ALLREDUCE);
    assert_false(st[m.gh].flags & DT_GS_ALLREDUCE);
    assert_int_equal(st[m.sgd[0]].offset, st[m.w1].offset); /* in place */
    build_mlp(&g, nodes, &m, 10, 5, 1, 0.1f);               /* w1's gradient a transposed view of its mm */
    assert_int_equal(dt_graph_plan(&g, 4, 3, DT_SUM, &p, st, CAP), 0);
    assert_true(st[m.gw1].flags & DT_GS_VIEW);
    assert_false(st[m.gw1].flags & DT_GS_ALLREDUCE);
    assert_true(st[st[m.gw1].in[0]].flags & DT_GS_ALLREDUCE); /* the root under the view */
    assert_int_equal(dt_graph_plan(&g, 4, 4, DT_SUM, &p, st, CAP), DT_ERR_RANK);
    assert_int_equal(dt_graph_plan(&g, 4, 0, DT_MAX, &p, st, CAP), DT_ERR_PLACEMENT);
}

static void test_run_rejects_bad_plans(void **state)
{
    static dt_gnode nodes[CAP];
    static dt_gstep st[CAP], bad[CAP];
    dt_graph g;
    dt_gplan p, q;
    mlp m;
    (void)state;
    build_mlp(&g, nodes, &m, 16, 0, 1, 0.1f);
    assert_int_equal(dt_graph_plan(&g, 1, 0, DT_SUM, &p, st, CAP), 0);
    q = p;
    q.steps = bad;
    memcpy(bad, st, sizeof st);
    bad[m.a1].in[1] = m.a1; /* not an earlier step */
    assert_int_equal(dt_gplan_run(&q, arena1, ARENA, NULL), DT_ERR_NODE);
    memcpy(bad, st, sizeof st);
    bad[m.a1].shape[0] = 17; /* does not fit addmm */
    assert_int_equal(dt_gplan_run(&q, arena1, ARENA, NULL), DT_ERR_SHAPE);
    memcpy(bad, st, sizeof st);
    bad[m.h].offset = p.arena_bytes; /* outside the arena */
    assert_int_equal(dt_gplan_run(&q, arena1, ARENA, NULL), DT_ERR_SHAPE);
    memcpy(bad, st, sizeof st);
    bad[m.h].op = 999;
    assert_int_equal(dt_gplan_run(&q, arena1, ARENA, NULL), DT_ERR_NODE);
    assert_int_equal(dt_gplan_run(&p, arena1, p.arena_bytes - 1, NULL), DT_ERR_TOO_SMALL);
    q = p;
    q.world = 2;
    assert_int_equal(dt_gplan_run(&q, arena1, ARENA, NULL), DT_ERR_MISMATCH); /* no group */
}

/* reshape of a transposed (non-contiguous) tensor copies; of a contiguous one aliases */
static void test_view_copy(void **state)
{
    dt_gnode nodes[4];
    dt_gstep st[4];
    dt_graph g;
    dt_gplan p;
    dt_op_attrs a = shape_attrs(2, 4, 3), tr = dim_attrs(0, 0, 0.0f);
    const float *v;
    float *x;
    int i, j, t, r;
    (void)state;
    tr.dim2 = 1;
    assert_int_equal(dt_graph_init(&g, nodes, 4), 0);
    assert_int_equal(dt_graph_add(&g, DT_G_INPUT, &a, NULL, 0), 0);
    t = add1(&g, DT_ATEN_TRANSPOSE, &tr, 0);
    a = shape_attrs(1, 12, 0);
    r = add1(&g, DT_ATEN_RESHAPE, &a, t);
    assert_int_equal(dt_graph_plan(&g, 1, 0, DT_SUM, &p, st, 4), 0);
    assert_true(st[t].flags & DT_GS_VIEW);
    assert_false(st[r].flags & DT_GS_VIEW);
    x = (float *)(void *)((unsigned char *)arena1 + st[0].offset);
    for (i = 0; i < 12; i++) x[i] = (float)i;
    assert_int_equal(dt_gplan_run(&p, arena1, ARENA, NULL), 0);
    v = data_of(&p, arena1, r);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 4; j++) assert_true(v[i * 4 + j] == x[j * 3 + i]);
}

/* ---- distributed through the dispatcher (dt_graph_dist_*: every node a DTensor, dt_op) ---- */
#define CHECK(c)                   \
    do {                           \
        if (!(c)) return __LINE__; \
    } while (0)
static dt_gvalue dvals[4][CAP];
static dt_placement dpl[4][CAP * DT_MAX_MESH_DIMS];
static uint64_t darena[4][ARENA / 8], dscr[4][ARENA / 8];
static dt_mesh dmesh[4];
static dt_comm dcomm[4];
static dt_plan_cache dpc[4];
static dt_cache_entry dpce[4][64];
static dt_op_cache doc[4];
static dt_op_entry doce[4][96];
static int dist_mode; /* 0 data parallel (the analysis's placements), 1 tensor parallel, 2 2-D: DP x TP */
static int drc[4];
static float dparams[4][NPARAM], dloss[4][2];

static void setpl(dt_placement *pl, int node, int md, int kind, int arg)
{
    pl[node * DT_MAX_MESH_DIMS + md].kind = (int16_t)kind;
    pl[node * DT_MAX_MESH_DIMS + md].arg = (int16_t)arg;
}

/* Leaf `id` = its piece of the global tensor src (row-major, the node's global shape). */
static int dload(const dt_graph *g, dt_gvalue *v, int id, const float *src, int me)
{
    mb_tensor gt, view;
    CHECK(mb_tensor_init(&gt, (void *)(uintptr_t)src, MB_F32, g->nodes[id].ndim, g->nodes[id].shape) == 0);
    CHECK(dt_local_view(&v[id].t.spec, me, &gt, &view) == 0);
    CHECK(mb_copy(&v[id].t.local, &view) == 0);
    return 0;
}

/* The full value of node id (any placements) into dst. */
static int dfull(int me, dt_gvalue *v, const dt_graph *g, int id, float *dst)
{
    mb_tensor gt;
    CHECK(mb_tensor_init(&gt, dst, MB_F32, g->nodes[id].ndim, g->nodes[id].shape) == 0);
    CHECK(dt_full_tensor(&dcomm[me], &dpc[me], &v[id].t.spec, &v[id].t.local, &gt, dscr[me], sizeof dscr[me]) == 0);
    return 0;
}

static int dist_body(pg_group *pg, void *arg)
{
    int me = pg_rank(pg), n = pg_size(pg), nd = dist_mode == 2 ? 2 : 1, i, naten = 0, rc;
    int32_t ms[2];
    dt_graph g;
    dt_gvalue *v = dvals[me];
    dt_placement *pl = dpl[me];
    dt_dispatch d;
    size_t an = 0, sn = 0;
    uint32_t h1, m1, ph1, pm1;
    mlp m;
    (void)arg;
    build_mlp(&g, rnodes[me], &m, dp_batch, dp_wrap, 1, 0.05f);
    ms[0] = nd == 2 ? 2 : n;
    ms[1] = n / 2;
    CHECK(dt_mesh_init(&dmesh[me], nd, ms, NULL, me) == 0);
    CHECK(dt_comm_init(&dcomm[me], &dmesh[me], pg) == 0);
    CHECK(dt_plan_cache_init(&dpc[me], dpce[me], 64) == 0);
    CHECK(dt_op_cache_init(&doc[me], doce[me], 96) == 0);
    memset(&d, 0, sizeof d);
    d.comm = &dcomm[me];
    d.plans = &dpc[me];
    d.strategies = &doc[me];
    CHECK(dt_graph_dist_placements(&g, nd, pl, CAP) == 0);
    CHECK(pl[m.x * DT_MAX_MESH_DIMS].kind == DT_KIND_SHARD && pl[m.w1 * DT_MAX_MESH_DIMS].kind == DT_KIND_REPLICATE);
    CHECK(pl[m.gw1 * DT_MAX_MESH_DIMS].kind == DT_KIND_PARTIAL);
    if (dist_mode) { /* Megatron: linear 1 colwise (w1, b1 S(0)), linear 2 rowwise (w2 S(1), b2 R) */
        int tp = nd - 1;
        if (dist_mode == 1) {
            setpl(pl, m.x, 0, DT_KIND_REPLICATE, 0);
            setpl(pl, m.y, 0, DT_KIND_REPLICATE, 0);
        } else { /* DP on mesh dim 0: the batch there, parameters replicated */
            for (i = 0; i < g.count; i++) setpl(pl, i, 1, DT_KIND_REPLICATE, 0);
        }
        setpl(pl, m.w1, tp, DT_KIND_SHARD, 0);
        setpl(pl, m.b1, tp, DT_KIND_SHARD, 0);
        setpl(pl, m.w2, tp, DT_KIND_SHARD, 1);
    }
    if (dist_mode == 0) { /* leaves cannot start Partial (distribute_tensor refuses it too) */
        setpl(pl, m.w1, 0, DT_KIND_PARTIAL, DT_SUM);
        CHECK(dt_graph_dist_init(&g, &d, pl, v, CAP, NULL, 0, &an, &sn) == DT_ERR_PARTIAL);
        setpl(pl, m.w1, 0, DT_KIND_REPLICATE, 0);
    }
    CHECK(dt_graph_dist_init(&g, &d, pl, v, CAP, NULL, 0, &an, &sn) == 0);
    CHECK(an <= ARENA && sn <= ARENA);
    CHECK(dt_graph_dist_init(&g, &d, pl, v, g.count - 1, NULL, 0, &an, &sn) == DT_ERR_TOO_SMALL);
    CHECK(dt_graph_dist_init(&g, &d, pl, v, CAP, darena[me], an - 1, NULL, NULL) == DT_ERR_TOO_SMALL);
    CHECK(dt_graph_dist_init(&g, &d, pl, v, CAP, darena[me], an, NULL, NULL) == 0);
    d.scratch = dscr[me];
    d.scratch_bytes = sn; /* exactly the query's */
    CHECK(dload(&g, v, m.x, &gx[0][0], me) == 0);
    CHECK(dload(&g, v, m.y, &gy[0][0], me) == 0);
    CHECK(dload(&g, v, m.w1, &p0w1[0][0], me) == 0);
    CHECK(dload(&g, v, m.b1, p0b1, me) == 0);
    CHECK(dload(&g, v, m.w2, &p0w2[0][0], me) == 0);
    CHECK(dload(&g, v, m.b2, p0b2, me) == 0);
    if (dist_mode == 1) { /* tensor parallel: only the local pieces of the weights */
        CHECK(v[m.w1].t.local.shape[0] == HID / n && v[m.w2].t.local.shape[1] == HID / n);
    }
    for (i = 0; i < g.count; i++) naten += g.nodes[i].op < DT_ATEN_COUNT || g.nodes[i].op == DT_G_T; /* dt_op's */
    rc = dt_graph_dist_run(&g, &d, v);
    CHECK(rc == 0);
    if (dist_mode == 0 && n > 1) { /* propagation chose the data-parallel placements */
        CHECK(v[m.a1].t.spec.placements[0].kind == DT_KIND_SHARD && v[m.a1].t.spec.placements[0].arg == 0);
        CHECK(v[m.gw1].t.spec.placements[0].kind == DT_KIND_PARTIAL);
        CHECK(v[m.loss].t.spec.placements[0].kind == DT_KIND_PARTIAL);
        CHECK(dpc[me].misses > 0); /* the gradients' all-reduce, at least */
    }
    if (dist_mode == 1) { /* colwise: a1 S(1); rowwise: a2 Partial before the sigmoid */
        CHECK(v[m.a1].t.spec.placements[0].kind == DT_KIND_SHARD && v[m.a1].t.spec.placements[0].arg == 1);
        CHECK(v[m.a2].t.spec.placements[0].kind == (n > 1 ? DT_KIND_PARTIAL : DT_KIND_REPLICATE) ||
              v[m.a2].t.spec.placements[0].kind == DT_KIND_PARTIAL);
        CHECK(v[m.gw1].t.spec.placements[0].kind == DT_KIND_SHARD); /* no gradient all-reduce */
    }
    CHECK(doc[me].misses <= (uint32_t)naten && doc[me].hits + doc[me].misses == (uint32_t)naten);
    CHECK(dfull(me, v, &g, m.loss, &dloss[me][0]) == 0);
    h1 = doc[me].hits;
    m1 = doc[me].misses;
    ph1 = dpc[me].hits;
    pm1 = dpc[me].misses;
    CHECK(dt_graph_dist_run(&g, &d, v) == 0);
    /* the second step plans nothing: every propagation and redistribute plan a cache hit */
    CHECK(doc[me].misses == m1 && doc[me].hits == h1 + (uint32_t)naten);
    CHECK(dpc[me].misses == pm1 && dpc[me].hits >= ph1);
    CHECK(dfull(me, v, &g, m.loss, &dloss[me][1]) == 0);
    CHECK(dfull(me, v, &g, m.w1, dparams[me]) == 0);
    CHECK(dfull(me, v, &g, m.b1, dparams[me] + HID * IN) == 0);
    CHECK(dfull(me, v, &g, m.w2, dparams[me] + HID * IN + HID) == 0);
    CHECK(dfull(me, v, &g, m.b2, dparams[me] + HID * IN + HID + OUT * HID) == 0);
    CHECK(dt_graph_dist_run(&g, &d, (dt_gvalue *)0) == DT_ERR_NULL);
    d.scratch_bytes = 0;
    if (sn > 0) CHECK(dt_graph_dist_run(&g, &d, v) == DT_ERR_TOO_SMALL);
    return 0;
}

static int dist_rank_body(pg_group *pg, void *arg)
{
    int r = pg_rank(pg);
    drc[r] = dist_body(pg, arg);
    return drc[r];
}

/* The same train step on `ranks` ranks through the dispatcher = the single-rank plan run. */
static void dist_case(int ranks, int mode, int32_t B, int wrap)
{
    float l1[2];
    int r, s;
    single_rank(B, wrap, l1);
    dist_mode = mode;
    memset(drc, 0, sizeof drc);
    pg_pthread_run(&world, ranks, dist_rank_body, NULL);
    for (r = 0; r < ranks; r++) {
        if (drc[r])
            fprintf(stderr, "rank %d of %d (mode %d, wrap %d): test_graph.c line %d\n", r, ranks, mode, wrap, drc[r]);
        assert_int_equal(drc[r], 0);
        close_all(dparams[r], want, NPARAM, 1e-4f);
        for (s = 0; s < 2; s++) close_all(&dloss[r][s], &l1[s], 1, 1e-4f);
    }
}

static void test_dist_data_parallel(void **state)
{
    (void)state;
    dist_case(1, 0, 128, 0); /* one rank through the dispatcher */
    dist_case(1, 0, 128, 1);
    dist_case(2, 0, 128, 0);
    dist_case(2, 0, 128, 1); /* view(-1), squeeze, unsqueeze(0), view(128, -1) on S(0) */
    dist_case(4, 0, 128, 1);
    dist_case(4, 0, 128, 2); /* linear layers */
    dist_case(2, 0, 7, 2);   /* uneven: 4 + 3 rows */
}

static void test_dist_tensor_parallel(void **state)
{
    (void)state;
    dist_case(2, 1, 128, 2); /* colwise then rowwise linear */
    dist_case(4, 1, 128, 2);
    dist_case(2, 1, 128, 0); /* addmm(b, x, t(w)) */
    dist_case(4, 1, 128, 0);
    dist_case(4, 2, 128, 2); /* 2x2: the batch on mesh dim 0, tensor parallel on dim 1 */
}

/* ---- C tables: emitted, compiled by the C compiler, run ---- */

static char src[1 << 20];

static void test_emit_compile_run(void **state)
{
    static dt_gnode nodes[CAP];
    static dt_gstep st[CAP];
    dt_graph g;
    dt_gplan p;
    mlp m;
    size_t len = 0, len2 = 0;
    FILE *f;
    char cmd[1024];
    const char *cc = getenv("CC");
    static uint64_t after[ARENA / 8];
    (void)state;
    init_data();
    build_mlp(&g, nodes, &m, 16, 1, 1, 0.05f);
    assert_int_equal(dt_graph_plan(&g, 1, 0, DT_SUM, &p, st, CAP), 0);
    assert_int_equal(dt_gplan_emit_c(&p, "mlp_plan", NULL, 0, &len), 0);
    assert_int_equal(dt_gplan_emit_c(&p, "mlp_plan", src, len, &len2), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_gplan_emit_c(&p, "9lives", src, sizeof src, &len2), DT_ERR_MISMATCH);
    assert_int_equal(dt_gplan_emit_c(&p, "mlp_plan", src, sizeof src, &len2), 0);
    assert_int_equal(len2, len);
    assert_int_equal(strlen(src), len);
    /* the arena with inputs and parameters loaded, as the firmware would have it */
    memset(arena1, 0, sizeof arena1);
    load(&p, arena1, &m);
    mkdir("build", 0777);
    mkdir("build/graph_emit", 0777);
    f = fopen("build/graph_emit/plan.c", "w");
    assert_non_null(f);
    fputs("#include \"dtensor_graph.h\"\n", f);
    fputs(src, f);
    fclose(f);
    f = fopen("build/graph_emit/arena.bin", "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(arena1, 1, p.arena_bytes, f), p.arena_bytes);
    fclose(f);
    f = fopen("build/graph_emit/main.c", "w");
    assert_non_null(f);
    fputs("#include <stdio.h>\n#define MICROBATCH_IMPLEMENTATION\n#define PG_IMPLEMENTATION\n"
          "#define DTENSOR_IMPLEMENTATION\n#define DTENSOR_OPS_IMPLEMENTATION\n#define DTENSOR_GRAPH_IMPLEMENTATION\n"
          "#include \"dtensor_graph.h\"\nextern const dt_gplan mlp_plan;\n"
          "static unsigned long long arena[1 << 17];\n"
          "int main(void) {\n"
          "    FILE *f = fopen(\"build/graph_emit/arena.bin\", \"rb\");\n"
          "    if (!f || fread(arena, 1, mlp_plan.arena_bytes, f) != mlp_plan.arena_bytes) return 2;\n"
          "    fclose(f);\n"
          "    if (dt_gplan_run(&mlp_plan, arena, sizeof arena, 0) || dt_gplan_run(&mlp_plan, arena, sizeof arena, 0)) "
          "return 3;\n"
          "    f = fopen(\"build/graph_emit/after.bin\", \"wb\");\n"
          "    if (!f || fwrite(arena, 1, mlp_plan.arena_bytes, f) != mlp_plan.arena_bytes) return 4;\n"
          "    return fclose(f) != 0;\n}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -std=c99 -O2 -ffp-contract=off -Wall -Wextra -Werror -I. -Iports -Iinclude build/graph_emit/main.c "
             "build/graph_emit/plan.c -o build/graph_emit/plan_run -lm && build/graph_emit/plan_run",
             cc && *cc ? cc : "cc");
    assert_int_equal(system(cmd), 0);
    /* the same two steps here, from the in-memory plan: the same bits */
    assert_int_equal(dt_gplan_run(&p, arena1, ARENA, NULL), 0);
    assert_int_equal(dt_gplan_run(&p, arena1, ARENA, NULL), 0);
    f = fopen("build/graph_emit/after.bin", "rb");
    assert_non_null(f);
    assert_int_equal(fread(after, 1, p.arena_bytes, f), p.arena_bytes);
    fclose(f);
    assert_memory_equal(after, arena1, p.arena_bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_analysis_mlp),
        cmocka_unit_test(test_analysis_no_optimizer),
        cmocka_unit_test(test_analysis_errors),
        cmocka_unit_test(test_analysis_t_vs_transpose),
        cmocka_unit_test(test_single_rank),
        cmocka_unit_test(test_plan_local_shapes),
        cmocka_unit_test(test_run_rejects_bad_plans),
        cmocka_unit_test(test_view_copy),
        cmocka_unit_test(test_dp_2),
        cmocka_unit_test(test_dp_4),
        cmocka_unit_test(test_emit_compile_run),
        cmocka_unit_test(test_dist_data_parallel),
        cmocka_unit_test(test_dist_tensor_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
