/* tp_mlp — tensor parallelism with dtensor.h's ops and tensor-parallel styles on 4
   pg_pthread ranks (a 1-D mesh of 4), each block's output compared with the same block
   computed on one rank from the global tensors:
     1. a Megatron-style MLP, y = fc2(gelu(fc1(x))): fc1 colwise (weight and bias S(0), x
        Replicate -> hidden S(-1), no communication), gelu on the shards, fc2 rowwise
        (weight S(1), bias Replicate -> Partial(sum)), then one all_reduce to Replicate;
     2. the same MLP sequence-parallel (Megatron-SP): x sharded on the sequence dim,
        all_gather before fc1, reduce_scatter back to Shard(0) after fc2;
     3. multi-head self-attention sharded by heads: q, k, v colwise (each rank holds 2 of
        the 8 heads), the attention core (scores, softmax, weighted sum) with the local
        kernels on each rank's own heads, as torch does (heads are independent), the
        output projection rowwise, one all_reduce.
   The parameters are zero-copy views (dt_local_view) of one replicated initialisation, as
   torch's distribute_tensor of the same seed gives. Prints the largest difference against
   the single-rank run and the collectives each rank ran; exits non-zero on a mismatch.
   `scons tp` (and `scons test`) builds and runs it. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#include "dtensor_ops.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"

#define NR 4
#define T  8  /* tokens (the sequence) */
#define E  32 /* model width */
#define F  64 /* MLP hidden width */
#define H  8  /* heads */
#define D  (E / H)

static float x[T * E], w1[F * E], b1[F], w2[E * F], b2[E];                           /* MLP */
static float wq[E * E], wk[E * E], wv[E * E], wo[E * E], bq[E], bk[E], bv[E], bo[E]; /* attention */
static float mlp_ref[T * E], attn_ref[T * E];
static float out[3][NR][T * E]; /* each block's output as every rank sees it (full tensors) */
static unsigned colls[NR];

static const dt_placement shard_last = DT_SHARD(-1), replicate = DT_REPLICATE();
static pg_pthread_world world;
static dt_mesh mesh[NR];
static dt_comm comm[NR];
static dt_cache_entry plan_entries[NR][8];
static dt_plan_cache plans[NR];
static dt_op_entry op_entries[NR][16];
static dt_op_cache strategies[NR];
static uint64_t scratch[NR][4096];
static float buf[NR][8][T * F]; /* each rank's activations */

static void init(float *v, int n, int seed)
{
    int i;
    for (i = 0; i < n; i++) v[i] = (float)((i * 37 + seed * 11) % 23 - 11) / 32.0f;
}

/* ---- the single-rank reference: the local kernels on the global tensors ---- */

static void mat(mb_tensor *t, float *data, int32_t r, int32_t c)
{
    int32_t sh[2];
    sh[0] = r;
    sh[1] = c;
    mb_tensor_init(t, data, MB_F32, 2, sh);
}

static int kernel(int op, const dt_op_attrs *at, mb_tensor *y, const mb_tensor *a, const mb_tensor *b,
                  const mb_tensor *c)
{
    const mb_tensor *in[3];
    in[0] = a;
    in[1] = b;
    in[2] = c;
    return dt_kernel_ref(op, at, y, in, c ? 3 : b ? 2 : 1);
}

/* y = x @ w^T + b for a (rows, in) x and (out, in) w. */
static int linear(float *y, const mb_tensor *xt, const float *w, const float *b, int32_t rows, int32_t in, int32_t o)
{
    mb_tensor tw, tb, ty;
    int32_t n[1];
    n[0] = o;
    mat(&tw, (float *)w, o, in);
    mb_tensor_init(&tb, (float *)b, MB_F32, 1, n);
    mat(&ty, y, rows, o);
    return kernel(DT_ATEN_LINEAR, NULL, &ty, xt, &tw, &tb);
}

/* The attention core of the heads [0, nh) of q, k, v ((T, nh*D) with row stride ld): o
   (T, nh*D, row stride ld) = softmax(q_h k_h^T / sqrt(D)) v_h per head. */
static int attention_core(float *o, const float *q, const float *k, const float *v, int nh, int32_t ld)
{
    float s[T * T], p[T * T], oh[T * D];
    mb_tensor tq, tk, tv, ts, tp, to;
    dt_op_attrs scale, soft;
    int h, i, j, rc = 0;
    memset(&scale, 0, sizeof scale);
    memset(&soft, 0, sizeof soft);
    scale.scalar = 1.0f / sqrtf((float)D);
    soft.dim = 1;
    for (h = 0; h < nh && !rc; h++) {
        mat(&tq, (float *)q + h * D, T, D); /* column views of the head: row stride ld */
        mat(&tk, (float *)k + h * D, T, D);
        mat(&tv, (float *)v + h * D, T, D);
        tq.stride[0] = tk.stride[0] = tv.stride[0] = ld;
        mat(&ts, s, T, T);
        mat(&tp, p, T, T);
        mat(&to, oh, T, D);
        rc = kernel(DT_ATEN_LINEAR, NULL, &ts, &tq, &tk, NULL); /* q_h @ k_h^T */
        if (!rc) rc = kernel(DT_ATEN_MUL_SCALAR, &scale, &tp, &ts, NULL, NULL);
        if (!rc) rc = kernel(DT_ATEN_SOFTMAX, &soft, &ts, &tp, NULL, NULL);
        if (!rc) rc = kernel(DT_ATEN_MM, NULL, &to, &ts, &tv, NULL);
        for (i = 0; i < T; i++)
            for (j = 0; j < D; j++) o[i * ld + h * D + j] = oh[i * D + j];
    }
    return rc;
}

static int reference(void)
{
    static float h[T * F], g[T * F], q[T * E], k[T * E], v[T * E], o[T * E];
    mb_tensor tx, th, tg, to;
    int rc;
    mat(&tx, x, T, E);
    mat(&th, h, T, F);
    mat(&tg, g, T, F);
    rc = linear(h, &tx, w1, b1, T, E, F);
    if (!rc) rc = kernel(DT_ATEN_GELU, NULL, &tg, &th, NULL, NULL);
    if (!rc) rc = linear(mlp_ref, &tg, w2, b2, T, F, E);
    if (!rc) rc = linear(q, &tx, wq, bq, T, E, E);
    if (!rc) rc = linear(k, &tx, wk, bk, T, E, E);
    if (!rc) rc = linear(v, &tx, wv, bv, T, E, E);
    if (!rc) rc = attention_core(o, q, k, v, H, E);
    mat(&to, o, T, E);
    if (!rc) rc = linear(attn_ref, &to, wo, bo, T, E, E);
    return rc;
}

/* ---- the tensor-parallel run ---- */

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_) {                                                                                 \
            fprintf(stderr, "rank %d: %s: %s (line %d)\n", me, #call, dt_strerror(rc_), __LINE__); \
            return rc_;                                                                            \
        }                                                                                          \
    } while (0)

/* A parameter (or a replicated input) as a DTensor: placement p, local view of the
   global data (no copy). */
static int param(dt_tensor *t, const dt_mesh *m, dt_placement p, float *data, int ndim, int32_t d0, int32_t d1)
{
    int32_t sh[2];
    mb_tensor g;
    int rc;
    sh[0] = d0;
    sh[1] = d1;
    rc = dt_spec_init(&t->spec, m, &p, 1, MB_F32, ndim, sh, 0);
    mb_tensor_init(&g, data, MB_F32, ndim, sh);
    return rc ? rc : dt_local_view(&t->spec, m->rank, &g, &t->local);
}

/* fc2(gelu(fc1(xin))) with fc1 colwise, fc2 rowwise to out_layout; the result gathered
   into full (T, E). */
static int mlp(dt_dispatch *d, int me, const dt_tensor *xin, dt_placement out_layout, float *full)
{
    dt_tp_style col, row;
    dt_tensor a[3], h, g, y, r;
    mb_tensor ft;
    CHECK(dt_tp_colwise(&col, DT_TP_LINEAR, shard_last));
    CHECK(dt_tp_rowwise(&row, DT_TP_LINEAR, out_layout));
    CHECK(dt_tp_redistribute(d, xin, 0, col.input, &a[0], buf[me][0], sizeof buf[me][0]));
    CHECK(param(&a[1], &mesh[me], col.weight, w1, 2, F, E));
    CHECK(param(&a[2], &mesh[me], col.bias, b1, 1, F, 0));
    CHECK(dt_op(d, DT_ATEN_LINEAR, NULL, a, 3, &h, buf[me][1], sizeof buf[me][1])); /* S(-1): no communication */
    CHECK(dt_op(d, DT_ATEN_GELU, NULL, &h, 1, &g, buf[me][2], sizeof buf[me][2]));
    CHECK(dt_tp_redistribute(d, &g, 0, row.input, &a[0], buf[me][3], sizeof buf[me][3]));
    CHECK(param(&a[1], &mesh[me], row.weight, w2, 2, E, F));
    CHECK(param(&a[2], &mesh[me], row.bias, b2, 1, E, 0));
    CHECK(dt_op(d, DT_ATEN_LINEAR, NULL, a, 3, &y, buf[me][4], sizeof buf[me][4])); /* Partial(sum) */
    if (y.spec.placements[0].kind != DT_KIND_PARTIAL) return DT_ERR_PLACEMENT;
    CHECK(dt_tp_redistribute(d, &y, 0, row.output_layout, &r, buf[me][5], sizeof buf[me][5]));
    mat(&ft, full, T, E);
    return dt_full_tensor(d->comm, d->plans, &r.spec, &r.local, &ft, scratch[me], sizeof scratch[me]);
}

static int attention(dt_dispatch *d, int me, const dt_tensor *xr, float *full)
{
    dt_tp_style col, row;
    dt_tensor a[3], q, k, v, o, y, r;
    mb_tensor ft;
    float *wts[3] = {wq, wk, wv}, *bs[3] = {bq, bk, bv};
    dt_tensor *qkv[3] = {&q, &k, &v};
    int i;
    CHECK(dt_tp_colwise(&col, DT_TP_LINEAR, shard_last));
    CHECK(dt_tp_rowwise(&row, DT_TP_LINEAR, replicate));
    CHECK(dt_tp_redistribute(d, xr, 0, col.input, &a[0], buf[me][0], sizeof buf[me][0]));
    for (i = 0; i < 3; i++) { /* q, k, v: (T, E) sharded on features = on heads */
        CHECK(param(&a[1], &mesh[me], col.weight, wts[i], 2, E, E));
        CHECK(param(&a[2], &mesh[me], col.bias, bs[i], 1, E, 0));
        CHECK(dt_op(d, DT_ATEN_LINEAR, NULL, a, 3, qkv[i], buf[me][1 + i], sizeof buf[me][1 + i]));
    }
    /* this rank's heads, local: the core needs no communication */
    o = q;
    o.local.data = buf[me][4];
    CHECK(attention_core(buf[me][4], (const float *)q.local.data, (const float *)k.local.data,
                         (const float *)v.local.data, q.local.shape[1] / D, q.local.shape[1]));
    a[0] = o; /* S(-1): rowwise's input already */
    CHECK(param(&a[1], &mesh[me], row.weight, wo, 2, E, E));
    CHECK(param(&a[2], &mesh[me], row.bias, bo, 1, E, 0));
    CHECK(dt_op(d, DT_ATEN_LINEAR, NULL, a, 3, &y, buf[me][5], sizeof buf[me][5]));
    CHECK(dt_tp_redistribute(d, &y, 0, row.output_layout, &r, buf[me][6], sizeof buf[me][6]));
    mat(&ft, full, T, E);
    return dt_full_tensor(d->comm, d->plans, &r.spec, &r.local, &ft, scratch[me], sizeof scratch[me]);
}

static int rank_body(pg_group *g, void *arg)
{
    static const int32_t shape[1] = {NR};
    int me = pg_rank(g);
    dt_dispatch d;
    dt_tensor xr, xs;
    dt_tp_style sp;
    unsigned c0;
    (void)arg;
    CHECK(dt_mesh_init(&mesh[me], 1, shape, NULL, pg_world_rank(g, me)));
    CHECK(dt_comm_init(&comm[me], &mesh[me], g));
    CHECK(dt_plan_cache_init(&plans[me], plan_entries[me], 8));
    CHECK(dt_op_cache_init(&strategies[me], op_entries[me], 16));
    memset(&d, 0, sizeof d);
    d.comm = &comm[me];
    d.plans = &plans[me];
    d.strategies = &strategies[me];
    d.scratch = scratch[me];
    d.scratch_bytes = sizeof scratch[me];
    CHECK(param(&xr, &mesh[me], replicate, x, 2, T, E));
    c0 = comm[me].collectives;
    CHECK(mlp(&d, me, &xr, replicate, out[0][me]));
    colls[me] = comm[me].collectives - c0; /* full_tensor of a Replicate result: none */
    CHECK(dt_tp_sequence(&sp, 0));         /* (T, E): the sequence is dim 0 */
    CHECK(param(&xs, &mesh[me], sp.input, x, 2, T, E));
    CHECK(mlp(&d, me, &xs, sp.output_layout, out[1][me]));
    return attention(&d, me, &xr, out[2][me]);
}

int main(void)
{
    static const char *const names[3] = {"MLP (colwise fc1, rowwise fc2, all_reduce)",
                                         "MLP sequence-parallel (all_gather, ..., reduce_scatter)",
                                         "attention, 8 heads by 2 per rank (colwise q/k/v, rowwise out)"};
    const float *ref[3] = {mlp_ref, mlp_ref, attn_ref};
    int b, r, i, bad = 0;
    init(x, T * E, 1);
    init(w1, F * E, 2);
    init(b1, F, 3);
    init(w2, E * F, 4);
    init(b2, E, 5);
    init(wq, E * E, 6);
    init(wk, E * E, 7);
    init(wv, E * E, 8);
    init(wo, E * E, 9);
    init(bq, E, 10);
    init(bk, E, 11);
    init(bv, E, 12);
    init(bo, E, 13);
    if (reference() || pg_pthread_run(&world, NR, rank_body, NULL)) {
        fprintf(stderr, "tp_mlp: a run failed\n");
        return 1;
    }
    for (b = 0; b < 3; b++) {
        double worst = 0;
        for (r = 0; r < NR; r++)
            for (i = 0; i < T * E; i++) {
                double diff = fabs((double)out[b][r][i] - (double)ref[b][i]);
                if (diff > worst) worst = diff;
                if (diff > 1e-5 * (1.0 + fabs((double)ref[b][i]))) bad = 1;
            }
        printf("tp_mlp: %s on %d ranks: largest |difference| from the single-rank run %.3g\n", names[b], NR, worst);
    }
    printf("tp_mlp: the MLP block ran %u collective(s) on rank 0 (Megatron: one all_reduce)\n", colls[0]);
    printf("tp_mlp: %s\n", bad || colls[0] != 1 ? "MISMATCH" : "ok");
    return bad || colls[0] != 1;
}
