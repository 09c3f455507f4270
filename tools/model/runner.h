/* runner.h — the one runner for a model tools/onnx2c.py exported (splitcore)

   tools/onnx2c.py turns an ONNX model into C tables (model.h: tensors, nodes, weights;
   model_plan.h: the plan for N cores and the exact memory each core needs). This header
   runs them on one rank of any pg.h world (pg_pthread threads, pg_shm cores: the bare-metal
   RISC-V harts, the dual Cortex-M33) with the library's kernels:
     tensor mode    every rank runs every node on its piece of each tensor, as the exporter
                    placed it on a 1-D mesh of all ranks (DTensor placements): conv2d sharded
                    over rows with a halo exchange (dt_conv2d, dt_conv2d_q8, dt_maxpool2d,
                    dt_avgpool2d) or over output channels; linear colwise (weight Shard(0),
                    output Shard(-1)) or rowwise (weight Shard(1), a Partial sum all-reduced);
                    attention on each rank's heads or rows; redistributions (dt_redistribute)
                    where a node needs another placement.
     pipeline mode  the model cut at any node boundary into one segment per rank, the
                    nodes' costs balanced by pp_balance_by_cost; a segment hands its last
                    node's output to the next and every other tensor live across a cut
                    travels as a skip connection (pp_layer stash / pop, pp_skip_layout's
                    routes); a forward-only schedule proven by pp_mailbox_depth, run by
                    pipeline.h's executor (PP_SKIPS) with one pp_layer per segment.
   f32 nodes run dtensor_ops.h's and dtensor_conv.h's kernels; int8 nodes dtensor_quant.h's
   and dtensor_qconv.h's (symmetric int8, TFLite's fixed-point requantization), the model's
   input quantized and its output dequantized at the edges. No heap: the arena, scratch and
   executor storage are the caller's, sized by the exported plan (mr_query).

   Example (rank `rank` of a pg world g; model_plan.h defines `model` and the sizes):
       #define SPLITCORE_IMPLEMENTATION
       #define MODEL_RUNNER_IMPLEMENTATION
       #include "tools/model/runner.h"
       #include "model.h"
       #include "model_plan.h"
       static uint64_t arena[MODEL_ARENA_MAX / 8], scratch[MODEL_SCRATCH_MAX / 8], ex[MODEL_EXEC_MAX / 8];
       mr_rank r;
       int rc = mr_init(&r, &model, rank, g, arena, sizeof arena, scratch, sizeof scratch, ex, sizeof ex);
       rc = mr_step(&r, input, output);  // MODEL_STEP_SAMPLES samples of f32 in, f32 out

   Errors: the library's codes (DT_ERR_*, PP_ERR_*, PG_ERR_*); mr_rank.err_node names the
   node that failed (-1: none). */
#ifndef MODEL_RUNNER_H
#define MODEL_RUNNER_H
#include <stddef.h>
#include <stdint.h>
#include "dtensor_ops.h"
#include "dtensor_qconv.h"
#include "pipeline.h"

#define MR_MAX_IN       8                      /* inputs of one node (a Concat's parts) */
#define MR_MAX_SEGMENTS 64                     /* pipeline segments of one model */
#define MR_MAX_BIND     (2 + 2 * PP_MAX_SKIPS) /* tensors a segment's call binds */

#ifdef __cplusplus
extern "C" {
#endif

enum mr_op {
    MR_CONV = 1,  /* i: stride h w, pad h w, dil h w, groups, mode (MR_LOCAL / MR_SPATIAL / MR_CHANNEL) */
    MR_POOL,      /* fn MR_MAX / MR_AVG; i: kernel h w, stride h w, pad h w, dil h w, count_pad */
    MR_MEAN,      /* mean over dims i[0]..i[1] of in[0]; i[2]: a reduced dim is sharded (all-reduce) */
    MR_LINEAR,    /* x, w (N, K), bias; fn MR_LOCAL / MR_COLWISE / MR_ROWWISE */
    MR_MATMUL,    /* a (.., M, K) @ b (.., K, N), equal batch dims */
    MR_UNARY,     /* fn: relu, clip (f32 f: lo, hi; int8 i: lo, hi), sigmoid, tanh, gelu, fakequant
                     (f[0] scale), lut (int8), requant (int8) */
    MR_SCALAR,    /* f32: x fn f[0] */
    MR_BINARY,    /* fn: add, sub, mul, div; in[1] broadcasts (size-1 dims) */
    MR_SOFTMAX,   /* i[0]: axis */
    MR_LAYERNORM, /* x, w, b over the last i[0] dims; f[0] eps */
    MR_RESHAPE,   /* i[0] 0: an alias of in[0] (no work), 1: a copy */
    MR_TRANSPOSE, /* i[0..ndim): perm */
    MR_CONCAT,    /* i[0]: axis */
    MR_REDIST,    /* in[0] to out's placement (dt_redistribute: a gather, or a local narrow) */
    MR_OP_COUNT
};
/* conv modes; linear styles; pools; unary functions; binary and scalar functions */
enum { MR_LOCAL = 0, MR_SPATIAL = 1, MR_CHANNEL = 2 };
enum { MR_COLWISE = 1, MR_ROWWISE = 2 };
enum { MR_MAX = 0, MR_AVG = 1 };
enum { MR_RELU = 0, MR_CLIP, MR_SIGMOID, MR_TANH, MR_GELU, MR_FAKEQUANT, MR_LUT, MR_REQUANT };
enum { MR_ADD = 0, MR_SUB, MR_MUL, MR_DIV, MR_RSUB, MR_RDIV };
enum mr_place { MR_R = 0, MR_S = 1 };
enum mr_kind { MR_NONE = 0, MR_ARENA = 1, MR_CONST = 2, MR_ALIAS = 3 };

/* One tensor as one rank sees it. */
typedef struct mr_tensor {
    int8_t dtype;                /* mb_dtype */
    int8_t ndim;                 /* 1..MB_MAX_DIMS */
    int8_t place;                /* enum mr_place on the 1-D mesh of all ranks */
    int8_t dim;                  /* the Shard dim */
    int8_t kind;                 /* enum mr_kind; MR_NONE: not in this rank's memory (pipeline: a bound slot) */
    int8_t pad[3];               /* keeps the table's layout explicit */
    int32_t ref;                 /* MR_ARENA: byte offset; MR_CONST: element offset into data; MR_ALIAS: tensor */
    int32_t shape[MB_MAX_DIMS];  /* global */
    int32_t local[MB_MAX_DIMS];  /* this rank's piece */
    int32_t stride[MB_MAX_DIMS]; /* its view's strides in elements (constants) */
    const void *data;            /* MR_CONST: the whole array */
    float scale;                 /* int8: the symmetric scale */
} mr_tensor;

typedef struct mr_node {
    uint8_t op, fn, relu, nin;
    int16_t in[MR_MAX_IN];
    int16_t out;
    int16_t pad;
    int32_t i[10];
    float f[2];
    const void *tab; /* int8: dt_qmul multipliers, or the op's table (LUT, exp, LayerNorm eps) */
    int32_t ntab;    /* its entries */
} mr_node;

/* A pipeline segment: nodes [first, end) from tensor `in` to tensor `out` (the chain the
   stages hand on), its estimated cost, its output bytes per microbatch, its weights' bytes
   and its intermediate tensors' bytes (a rank's segments run one at a time). Every other
   tensor live across a cut (a residual's or a concat's other input) is a skip connection
   (fairscale's stash / pop): the segment that computes it stashes it, each later segment
   that reads it pops it. */
typedef struct mr_segment {
    int32_t first, end, in, out;
    uint32_t cost, act_bytes, param_bytes, arena;
    int32_t stash0, nstash, pop0, npop; /* its skips: mr_model.stash[stash0..), pop[pop0..) */
} mr_segment;

typedef struct mr_model {
    const char *name;
    int32_t ranks, pipeline, dtype; /* dtype: MB_F32 or MB_I8 (activations) */
    int32_t rows, nmb;              /* samples per run (tensor) or per microbatch; microbatches per step */
    int32_t ntensors, nnodes;
    const mr_node *nodes;
    const char *const *names; /* the nodes' ONNX names (messages) */
    const mr_tensor *const *tensors;
    int32_t input, output;
    int32_t in_numel, out_numel; /* per sample */
    float in_scale, out_scale;   /* int8 */
    int32_t nseg;
    const mr_segment *seg;
    const int32_t *balance;         /* segments per stage (rank) */
    const pp_table *plan;           /* [ranks] */
    const pp_skip *stash, *pop;     /* the segments' skips: by stashing, by popping segment */
    const int32_t *stash_t, *pop_t; /* their tensors */
    const pp_route *routes;         /* pp_skip_layout's routes (emitted with the plan) */
    int32_t nroutes;
} mr_model;

/* Exact storage one rank needs (mr_query). */
typedef struct mr_sizes {
    size_t arena, scratch, exec;
} mr_sizes;

typedef struct mr_rank mr_rank;
typedef struct mr__segctx {
    mr_rank *r;
    int32_t seg;
} mr__segctx;

struct mr_rank {
    const mr_model *m;
    const mr_tensor *t; /* this rank's table */
    int32_t rank;
    pg_group *g;
    dt_mesh mesh;
    dt_comm comm;
    unsigned char *arena, *scratch;
    size_t arena_bytes, scratch_bytes;
    int32_t bind_t[MR_MAX_BIND]; /* pipeline: the call's tensors (input, output, pops) */
    void *bind_p[MR_MAX_BIND];
    int32_t nbind;
    int32_t err_node; /* the node that failed, -1: none */
    const float *in;  /* the step's input and output */
    float *out;
    pp_layer layers[MR_MAX_SEGMENTS];
    mr__segctx seg[MR_MAX_SEGMENTS];
    pp_exec_cfg cfg;
    pp_exec ex;
};

/* Storage rank `rank` needs, from the library's size queries (dt_conv2d_scratch_bytes,
   dt_plan_scratch_bytes, pp_exec_query, ...). */
int mr_query(const mr_model *m, int rank, mr_sizes *s);
/* Bind rank `rank` of m to the world group g (ranks 0..ranks-1) and to the caller's storage
   (8-byte aligned, at least mr_query's bytes). */
int mr_init(mr_rank *r, const mr_model *m, int rank, pg_group *g, void *arena, size_t arena_bytes, void *scratch,
            size_t scratch_bytes, void *exec, size_t exec_bytes);
/* One step on every rank: `in` holds mr_step_samples samples (f32, in_numel each; read by
   the ranks that take the input), `out` receives their outputs (f32, out_numel each) on
   mr_output_rank(m) (others may pass NULL). */
int mr_step(mr_rank *r, const float *in, float *out);
/* The rank that writes the output: 0 in tensor mode, the last stage's in pipeline mode. */
int mr_output_rank(const mr_model *m);
/* Samples per step: rows, times the microbatches in pipeline mode. */
int32_t mr_step_samples(const mr_model *m);
/* What a run prints to compare one port's results with another's: the index of the
   largest of the out_numel outputs of a sample (its prediction), and FNV-1a over bytes
   (h: 2166136261 to start). */
int mr_argmax(const float *o, int32_t n);
uint32_t mr_fnv1a(const void *p, size_t n, uint32_t h);

#ifdef __cplusplus
}
#endif
#endif /* MODEL_RUNNER_H */

#if defined(MODEL_RUNNER_IMPLEMENTATION) && !defined(MODEL_RUNNER_IMPLEMENTED)
#define MODEL_RUNNER_IMPLEMENTED
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

int32_t mr_step_samples(const mr_model *m)
{
    return m->rows * (m->pipeline ? m->nmb : 1);
}

int mr_argmax(const float *o, int32_t n)
{
    int32_t j, b = 0;
    for (j = 1; j < n; j++)
        if (o[j] > o[b]) b = j;
    return (int)b;
}

uint32_t mr_fnv1a(const void *p, size_t n, uint32_t h)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

int mr_output_rank(const mr_model *m)
{
    int r;
    if (!m->pipeline) return 0;
    for (r = m->ranks - 1; r > 0; r--)
        if (m->balance[r] > 0) break;
    return r;
}

static size_t mr__esize(int dtype)
{
    return mb_dtype_size((mb_dtype)dtype);
}

/* Where tensor id lives on this rank (bound pipeline slots first, aliases followed). */
static void *mr__ptr(const mr_rank *r, int32_t id)
{
    int hops;
    for (hops = 0; hops < 64 && id >= 0 && id < r->m->ntensors; hops++) {
        const mr_tensor *t = &r->t[id];
        int32_t b;
        for (b = 0; b < r->nbind; b++)
            if (id == r->bind_t[b]) return r->bind_p[b];
        if (t->kind == MR_ARENA) return r->arena + t->ref;
        if (t->kind == MR_CONST) return (unsigned char *)(uintptr_t)t->data + (size_t)t->ref * mr__esize(t->dtype);
        if (t->kind != MR_ALIAS) return NULL;
        id = t->ref;
    }
    return NULL;
}

/* This rank's view of tensor id (arena tensors contiguous, constants as the table says). */
static int mr__view(const mr_rank *r, int32_t id, mb_tensor *v)
{
    const mr_tensor *t;
    int d;
    void *p = mr__ptr(r, id);
    if (!p) return DT_ERR_NULL;
    t = &r->t[id];
    if (mb_tensor_init(v, p, (mb_dtype)t->dtype, t->ndim, t->local)) return DT_ERR_SHAPE;
    if (t->kind == MR_CONST)
        for (d = 0; d < t->ndim; d++) v->stride[d] = t->stride[d];
    return DT_OK;
}

static int mr__spec(const mr_rank *r, int32_t id, dt_spec *s)
{
    const mr_tensor *t = &r->t[id];
    dt_placement p;
    p.kind = t->place == MR_S ? DT_KIND_SHARD : DT_KIND_REPLICATE;
    p.arg = t->place == MR_S ? t->dim : 0;
    return dt_spec_init(s, &r->mesh, &p, 1, (mb_dtype)t->dtype, t->ndim, t->shape, NULL);
}

static int mr__dtensor(const mr_rank *r, int32_t id, dt_tensor *x)
{
    int rc = mr__spec(r, id, &x->spec);
    return rc ? rc : mr__view(r, id, &x->local);
}

static void mr__params(const mr_node *n, dt_conv2d_params *p)
{
    memset(p, 0, sizeof *p);
    p->layout = DT_NCHW;
    if (n->op == MR_CONV) {
        p->stride[0] = n->i[0], p->stride[1] = n->i[1];
        p->padding[0] = n->i[2], p->padding[1] = n->i[3];
        p->dilation[0] = n->i[4], p->dilation[1] = n->i[5];
        p->groups = n->i[6];
    } else {
        p->kernel[0] = n->i[0], p->kernel[1] = n->i[1];
        p->stride[0] = n->i[2], p->stride[1] = n->i[3];
        p->padding[0] = n->i[4], p->padding[1] = n->i[5];
        p->dilation[0] = n->i[6], p->dilation[1] = n->i[7];
        p->groups = 1;
        p->count_pad = n->i[8];
    }
}

static int64_t mr__numel(const int32_t *shape, int n)
{
    int64_t k = 1;
    int d;
    for (d = 0; d < n; d++) k *= shape[d];
    return k;
}

static void mr__relu_f32(float *y, int64_t n)
{
    int64_t i;
    for (i = 0; i < n; i++)
        if (y[i] < 0.0f) y[i] = 0.0f;
}

/* Round half away from zero of an integer sum by count > 0, clamped to int8. */
static int8_t mr__div_i8(int64_t sum, int64_t count)
{
    int64_t q = sum >= 0 ? (sum + count / 2) / count : -((-sum + count / 2) / count);
    return (int8_t)(q > 127 ? 127 : q < -128 ? -128 : q);
}

static int mr__conv(mr_rank *r, const mr_node *n)
{
    dt_conv2d_params p;
    dt_tensor x, w;
    mb_tensor y, b;
    int rc;
    mr__params(n, &p);
    if ((rc = mr__dtensor(r, n->in[0], &x)) || (rc = mr__view(r, n->out, &y))) return rc;
    if (n->op == MR_POOL)
        return n->fn == MR_MAX ? dt_maxpool2d(&r->comm, &p, &x, NULL, &y, r->scratch, r->scratch_bytes)
                               : dt_avgpool2d(&r->comm, &p, &x, NULL, &y, r->scratch, r->scratch_bytes);
    if ((rc = mr__dtensor(r, n->in[1], &w))) return rc;
    if (n->nin > 2 && (rc = mr__view(r, n->in[2], &b))) return rc;
    if (r->m->dtype == MB_I8)
        return dt_conv2d_q8(&r->comm, &p, &x, &w, n->nin > 2 ? &b : NULL, (const dt_qmul *)n->tab, n->ntab, n->relu,
                            NULL, &y, r->scratch, r->scratch_bytes);
    rc = dt_conv2d(&r->comm, &p, &x, &w, n->nin > 2 ? &b : NULL, NULL, &y, r->scratch, r->scratch_bytes);
    if (!rc && n->relu) mr__relu_f32((float *)y.data, mb_numel(&y));
    return rc;
}

/* Mean over dims i[0]..i[1]: local sums (f32, or exact int32 for int8), all-reduced when a
   reduced dim is sharded, then divided by the global count. */
static int mr__mean(mr_rank *r, const mr_node *n)
{
    const mr_tensor *tx = &r->t[n->in[0]];
    mb_tensor x, y;
    int32_t d0 = n->i[0], d1 = n->i[1];
    int64_t outer = mr__numel(tx->local, d0), red = mr__numel(tx->local + d0, d1 - d0 + 1),
            inner = mr__numel(tx->local + d1 + 1, tx->ndim - d1 - 1), count = mr__numel(tx->shape + d0, d1 - d0 + 1), o,
            k, i;
    int i8 = tx->dtype == MB_I8, rc;
    if ((rc = mr__view(r, n->in[0], &x)) || (rc = mr__view(r, n->out, &y))) return rc;
    if ((size_t)(outer * inner) * 4u > r->scratch_bytes) return DT_ERR_TOO_SMALL;
    for (o = 0; o < outer; o++)
        for (i = 0; i < inner; i++) {
            size_t at = (size_t)(o * red * inner + i);
            if (i8) {
                int32_t s = 0;
                for (k = 0; k < red; k++) s += ((const int8_t *)x.data)[at + (size_t)(k * inner)];
                ((int32_t *)(void *)r->scratch)[o * inner + i] = s;
            } else {
                float s = 0.0f;
                for (k = 0; k < red; k++) s += ((const float *)x.data)[at + (size_t)(k * inner)];
                ((float *)(void *)r->scratch)[o * inner + i] = s;
            }
        }
    if (n->i[2] && (rc = pg_all_reduce(dt_comm_group(&r->comm, 0), r->scratch, r->scratch, (size_t)(outer * inner),
                                       i8 ? MB_I32 : MB_F32, PG_SUM)))
        return rc;
    for (k = 0; k < outer * inner; k++) {
        if (i8)
            ((int8_t *)y.data)[k] = mr__div_i8(((const int32_t *)(void *)r->scratch)[k], count);
        else
            ((float *)y.data)[k] = ((const float *)(void *)r->scratch)[k] / (float)count;
    }
    return DT_OK;
}

/* x (.., K) as a 2-D (M, K) view (contiguous). */
static void mr__rows2(const mb_tensor *x, mb_tensor *v)
{
    int32_t k = x->shape[x->ndim - 1];
    *v = *x;
    v->ndim = 2;
    v->shape[0] = (int32_t)(mb_numel(x) / (k ? k : 1));
    v->shape[1] = k;
    v->stride[0] = k;
    v->stride[1] = 1;
}

/* int8 acc (M, N) + bias (saturating, as dt_conv2d_q8), requantized with q[n] into y. */
static void mr__requant_rows(const int32_t *acc, int32_t m, int32_t nn, const mb_tensor *bias, const dt_qmul *q,
                             int32_t nq, int relu, int8_t *y)
{
    int32_t i, j;
    for (i = 0; i < m; i++)
        for (j = 0; j < nn; j++) {
            int64_t t = (int64_t)acc[(size_t)i * (size_t)nn + (size_t)j] +
                        (bias ? ((const int32_t *)bias->data)[(size_t)j * (size_t)bias->stride[0]] : 0);
            int8_t v;
            t = t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : t;
            v = dt_requant_i8((int32_t)t, q[nq > 1 ? j : 0]);
            y[(size_t)i * (size_t)nn + (size_t)j] = relu && v < 0 ? (int8_t)0 : v;
        }
}

static int mr__linear(mr_rank *r, const mr_node *n)
{
    mb_tensor x, w, b, y;
    const mb_tensor *in[3];
    int rowwise = n->fn == MR_ROWWISE, bias = n->nin > 2 && (!rowwise || r->mesh.coord[0] == 0), rc;
    if ((rc = mr__view(r, n->in[0], &x)) || (rc = mr__view(r, n->in[1], &w)) || (rc = mr__view(r, n->out, &y)))
        return rc;
    if (n->nin > 2 && (rc = mr__view(r, n->in[2], &b))) return rc;
    if (r->m->dtype == MB_I8) {
        mb_tensor x2, wt, acc;
        int32_t as[2], n0 = 0;
        const mr_tensor *tw = &r->t[n->in[1]];
        mr__rows2(&x, &x2);
        wt = w; /* w^T as a view */
        wt.shape[0] = w.shape[1], wt.shape[1] = w.shape[0];
        wt.stride[0] = w.stride[1], wt.stride[1] = w.stride[0];
        as[0] = x2.shape[0], as[1] = w.shape[0];
        if ((size_t)as[0] * (size_t)as[1] * 4u > r->scratch_bytes) return DT_ERR_TOO_SMALL;
        mb_tensor_init(&acc, r->scratch, MB_I32, 2, as);
        if ((rc = dt_qmm_acc(&x2, &wt, &acc))) return rc;
        if (rowwise && (rc = pg_all_reduce(dt_comm_group(&r->comm, 0), acc.data, acc.data,
                                           (size_t)as[0] * (size_t)as[1], MB_I32, PG_SUM)))
            return rc;
        if (n->fn == MR_COLWISE) n0 = tw->ref / (tw->stride[0] ? tw->stride[0] : 1); /* its first output column */
        mr__requant_rows((const int32_t *)acc.data, as[0], as[1], n->nin > 2 ? &b : NULL,
                         (const dt_qmul *)n->tab + (n->ntab > 1 ? n0 : 0), n->ntab, n->relu, (int8_t *)y.data);
        return DT_OK;
    }
    in[0] = &x, in[1] = &w, in[2] = &b;
    if ((rc = dt_kernel_ref(DT_ATEN_LINEAR, NULL, &y, in, bias ? 3 : 2))) return rc;
    if (rowwise &&
        (rc = pg_all_reduce(dt_comm_group(&r->comm, 0), y.data, y.data, (size_t)mb_numel(&y), MB_F32, PG_SUM)))
        return rc;
    if (n->relu) mr__relu_f32((float *)y.data, mb_numel(&y));
    return DT_OK;
}

/* t (.., M, K) contiguous with its batch dims collapsed into one: (B, M, K). */
static void mr__batch3(const mb_tensor *t, mb_tensor *v)
{
    int nd = t->ndim;
    *v = *t;
    v->ndim = 3;
    v->shape[0] = (int32_t)mr__numel(t->shape, nd - 2);
    v->shape[1] = t->shape[nd - 2], v->shape[2] = t->shape[nd - 1];
    v->stride[2] = 1, v->stride[1] = v->shape[2], v->stride[0] = v->shape[1] * v->shape[2];
}

static int mr__matmul(mr_rank *r, const mr_node *n)
{
    mb_tensor a, b, y, a3, b3, y3;
    const mb_tensor *in[2];
    int rc;
    int32_t k;
    if ((rc = mr__view(r, n->in[0], &a)) || (rc = mr__view(r, n->in[1], &b)) || (rc = mr__view(r, n->out, &y)))
        return rc;
    mr__batch3(&a, &a3), mr__batch3(&b, &b3), mr__batch3(&y, &y3);
    if (r->m->dtype != MB_I8) {
        in[0] = &a3, in[1] = &b3;
        return dt_kernel_ref(DT_ATEN_BMM, NULL, &y3, in, 2);
    }
    if ((size_t)y3.shape[1] * (size_t)y3.shape[2] * 4u > r->scratch_bytes) return DT_ERR_TOO_SMALL;
    for (k = 0; k < y3.shape[0]; k++) {
        mb_tensor ak, bk, acc, yk;
        mb_tensor_init(&ak, (int8_t *)a3.data + (size_t)k * (size_t)a3.stride[0], MB_I8, 2, a3.shape + 1);
        mb_tensor_init(&bk, (int8_t *)b3.data + (size_t)k * (size_t)b3.stride[0], MB_I8, 2, b3.shape + 1);
        mb_tensor_init(&yk, (int8_t *)y3.data + (size_t)k * (size_t)y3.stride[0], MB_I8, 2, y3.shape + 1);
        mb_tensor_init(&acc, r->scratch, MB_I32, 2, y3.shape + 1);
        if ((rc = dt_qmm_acc(&ak, &bk, &acc)) || (rc = dt_requant_tensor(&acc, (const dt_qmul *)n->tab, 1, 0, 0, &yk)))
            return rc;
    }
    return DT_OK;
}

/* MR_UNARY and MR_SCALAR: one input, elementwise. */
static int mr__pointwise(mr_rank *r, const mr_node *n)
{
    mb_tensor x, y;
    const mb_tensor *in[1];
    dt_op_attrs at;
    int64_t i, cnt;
    int rc;
    static const int aten[] = {DT_ATEN_RELU, DT_ATEN_CLAMP, DT_ATEN_SIGMOID, DT_ATEN_TANH, DT_ATEN_GELU},
                     sc[] = {DT_ATEN_ADD_SCALAR, DT_ATEN_SUB_SCALAR, DT_ATEN_MUL_SCALAR, DT_ATEN_DIV_SCALAR};
    if ((rc = mr__view(r, n->in[0], &x)) || (rc = mr__view(r, n->out, &y))) return rc;
    cnt = mb_numel(&y);
    memset(&at, 0, sizeof at);
    at.scalar = n->f[0];
    at.scalar2 = n->f[1];
    in[0] = &x;
    if (n->op == MR_SCALAR) {
        if (n->fn <= MR_DIV) return dt_kernel_ref(sc[n->fn], &at, &y, in, 1);
        for (i = 0; i < cnt; i++) {
            float v = ((const float *)x.data)[i];
            ((float *)y.data)[i] = n->fn == MR_RSUB ? n->f[0] - v : n->f[0] / v;
        }
        return DT_OK;
    }
    if (r->m->dtype == MB_I8) {
        const int8_t *a = (const int8_t *)x.data;
        int8_t *o = (int8_t *)y.data;
        switch (n->fn) {
        case MR_RELU:
            for (i = 0; i < cnt; i++) o[i] = a[i] < 0 ? (int8_t)0 : a[i];
            return DT_OK;
        case MR_CLIP:
            for (i = 0; i < cnt; i++) o[i] = (int8_t)(a[i] < n->i[0] ? n->i[0] : a[i] > n->i[1] ? n->i[1] : a[i]);
            return DT_OK;
        case MR_LUT: return dt_lut_q8(&x, (const int8_t *)n->tab, &y);
        case MR_REQUANT:
            for (i = 0; i < cnt; i++) o[i] = dt_requant_i8(a[i], *(const dt_qmul *)n->tab);
            return DT_OK;
        default: return DT_ERR_UNSUPPORTED;
        }
    }
    if (n->fn == MR_FAKEQUANT) {
        for (i = 0; i < cnt; i++)
            ((float *)y.data)[i] = (float)dt_quantize_i8(((const float *)x.data)[i], n->f[0]) * n->f[0];
        return DT_OK;
    }
    if (n->fn > MR_GELU) return DT_ERR_UNSUPPORTED;
    return dt_kernel_ref(aten[n->fn], &at, &y, in, 1);
}

static int mr__binary(mr_rank *r, const mr_node *n)
{
    mb_tensor a, b, y;
    const mb_tensor *in[2];
    int rc, d;
    static const int aten[] = {DT_ATEN_ADD, DT_ATEN_SUB, DT_ATEN_MUL, DT_ATEN_DIV};
    if ((rc = mr__view(r, n->in[0], &a)) || (rc = mr__view(r, n->in[1], &b)) || (rc = mr__view(r, n->out, &y)))
        return rc;
    for (d = 0; d < y.ndim; d++) /* broadcast: a size-1 dim of b reads one element */
        if (b.shape[d] != y.shape[d]) {
            if (b.shape[d] != 1) return DT_ERR_SHAPE;
            b.shape[d] = y.shape[d];
            b.stride[d] = 0;
        }
    if (r->m->dtype == MB_I8) {
        if (n->fn == MR_ADD) return dt_add_q8(&a, &b, (const dt_qmul *)n->tab, &y);
        if (n->fn == MR_MUL) return dt_mul_q8(&a, &b, *(const dt_qmul *)n->tab, &y);
        return DT_ERR_UNSUPPORTED;
    }
    in[0] = &a, in[1] = &b;
    return dt_kernel_ref(aten[n->fn], NULL, &y, in, 2);
}

static int mr__rows(mr_rank *r, const mr_node *n)
{
    mb_tensor x, y, w, b;
    const mb_tensor *in[3];
    dt_op_attrs at;
    int rc, d;
    if ((rc = mr__view(r, n->in[0], &x)) || (rc = mr__view(r, n->out, &y))) return rc;
    memset(&at, 0, sizeof at);
    in[0] = &x;
    if (n->op == MR_SOFTMAX) {
        if (r->m->dtype == MB_I8) return dt_softmax_q8(&x, (const int32_t *)n->tab, &y);
        at.dim = n->i[0];
        return dt_kernel_ref(DT_ATEN_SOFTMAX, &at, &y, in, 1);
    }
    if ((rc = mr__view(r, n->in[1], &w)) || (rc = mr__view(r, n->in[2], &b))) return rc;
    if (r->m->dtype == MB_I8) {
        const int32_t *tab = (const int32_t *)n->tab;
        int64_t epsq = (int64_t)(((uint64_t)(uint32_t)tab[1] << 32) | (uint32_t)tab[0]);
        return dt_layer_norm_q8(&x, (const int32_t *)w.data, (const int32_t *)b.data, epsq, &y);
    }
    at.ndim = n->i[0];
    for (d = 0; d < at.ndim; d++) at.shape[d] = x.shape[x.ndim - at.ndim + d];
    at.scalar = n->f[0];
    in[1] = &w, in[2] = &b;
    return dt_kernel_ref(DT_ATEN_LAYER_NORM, &at, &y, in, 3);
}

static int mr__copy(mr_rank *r, const mr_node *n)
{
    mb_tensor x, y, v;
    int rc, d, k;
    if ((rc = mr__view(r, n->out, &y))) return rc;
    if (n->op == MR_RESHAPE) {
        if (!n->i[0]) return DT_OK; /* an alias */
        if ((rc = mr__view(r, n->in[0], &x))) return rc;
        memcpy(y.data, x.data, (size_t)mb_numel(&y) * mr__esize(y.dtype));
        return DT_OK;
    }
    if (n->op == MR_TRANSPOSE) {
        if ((rc = mr__view(r, n->in[0], &x))) return rc;
        v = x;
        for (d = 0; d < x.ndim; d++) v.shape[d] = x.shape[n->i[d]], v.stride[d] = x.stride[n->i[d]];
        return mb_copy(&y, &v) ? DT_ERR_SHAPE : DT_OK;
    }
    for (k = 0, d = 0; k < n->nin; k++) { /* concat */
        if ((rc = mr__view(r, n->in[k], &x))) return rc;
        if (mb_narrow(&y, n->i[0], d, x.shape[n->i[0]], &v) || mb_copy(&v, &x)) return DT_ERR_SHAPE;
        d += x.shape[n->i[0]];
    }
    return DT_OK;
}

static int mr__redist(mr_rank *r, const mr_node *n)
{
    dt_spec src, dst;
    mb_tensor x, y;
    int rc;
    if ((rc = mr__spec(r, n->in[0], &src)) || (rc = mr__spec(r, n->out, &dst)) || (rc = mr__view(r, n->in[0], &x)) ||
        (rc = mr__view(r, n->out, &y)))
        return rc;
    if (dt_spec_is_replicated(&src) == 1 && dt_spec_is_replicated(&dst) != 1) { /* a local narrow */
        mb_tensor l;
        if ((rc = dt_local_view(&dst, r->rank, &x, &l))) return rc;
        return mb_copy(&y, &l) ? DT_ERR_SHAPE : DT_OK;
    }
    return dt_redistribute(&r->comm, NULL, &src, &x, &dst, 0, &y, r->scratch, r->scratch_bytes);
}

static int mr__node(mr_rank *r, int32_t k)
{
    const mr_node *n = &r->m->nodes[k];
    switch (n->op) {
    case MR_CONV:
    case MR_POOL: return mr__conv(r, n);
    case MR_MEAN: return mr__mean(r, n);
    case MR_LINEAR: return mr__linear(r, n);
    case MR_MATMUL: return mr__matmul(r, n);
    case MR_UNARY:
    case MR_SCALAR: return mr__pointwise(r, n);
    case MR_BINARY: return mr__binary(r, n);
    case MR_SOFTMAX:
    case MR_LAYERNORM: return mr__rows(r, n);
    case MR_RESHAPE:
    case MR_TRANSPOSE:
    case MR_CONCAT: return mr__copy(r, n);
    case MR_REDIST: return mr__redist(r, n);
    default: return DT_ERR_UNSUPPORTED;
    }
}

static int mr__nodes(mr_rank *r, int32_t first, int32_t end)
{
    int32_t k;
    int rc;
    for (k = first; k < end; k++)
        if ((rc = mr__node(r, k))) {
            r->err_node = k;
            return rc;
        }
    return DT_OK;
}

/* Samples [s0, s0 + rows) of the f32 input into tensor id's local piece at dst (quantized
   for int8): this rank's view of that batch, as the tensor's placement says. */
static int mr__take_input(mr_rank *r, int32_t id, void *dst, int32_t s0)
{
    const mr_tensor *t = &r->t[id];
    dt_spec s;
    mb_tensor g, l, d;
    int32_t gs[MB_MAX_DIMS];
    int rc, k;
    int64_t i, cnt;
    memcpy(gs, t->shape, sizeof gs);
    if (!dst) return DT_ERR_NULL;
    if ((rc = mr__spec(r, id, &s))) return rc;
    s.dtype = MB_F32;
    mb_tensor_init(&g, (void *)(uintptr_t)(r->in + (size_t)s0 * (size_t)r->m->in_numel), MB_F32, t->ndim, gs);
    if ((rc = dt_local_view(&s, r->rank, &g, &l))) return rc;
    if (t->dtype == MB_F32) {
        mb_tensor_init(&d, dst, MB_F32, t->ndim, t->local);
        return mb_copy(&d, &l) ? DT_ERR_SHAPE : DT_OK;
    }
    cnt = mb_numel(&l);
    for (i = 0; i < cnt; i++) { /* row-major walk of the local view */
        int64_t rem = i, off = 0;
        for (k = t->ndim - 1; k >= 0; k--) {
            off += (rem % l.shape[k]) * l.stride[k];
            rem /= l.shape[k];
        }
        ((int8_t *)dst)[i] = dt_quantize_i8(((const float *)l.data)[off], r->m->in_scale);
    }
    return DT_OK;
}

static void mr__give_output(const mr_rank *r, const void *src, int32_t s0, int32_t samples)
{
    size_t k, cnt = (size_t)samples * (size_t)r->m->out_numel;
    float *o;
    if (!r->out) return;
    o = r->out + (size_t)s0 * (size_t)r->m->out_numel;
    if (r->m->dtype == MB_I8)
        for (k = 0; k < cnt; k++) o[k] = (float)((const int8_t *)src)[k] * r->m->out_scale;
    else
        memcpy(o, src, cnt * 4u);
}

static int mr__seg_forward(void *self, const mb_tensor *x, mb_tensor *y)
{
    mr__segctx *c = (mr__segctx *)self;
    mr_rank *r = c->r;
    const mr_segment *s = &r->m->seg[c->seg];
    int32_t i;
    int rc;
    r->nbind = 0;
    r->bind_t[r->nbind] = s->in, r->bind_p[r->nbind++] = x[0].data;
    r->bind_t[r->nbind] = s->out, r->bind_p[r->nbind++] = y[0].data;
    for (i = 0; i < s->npop; i++) r->bind_t[r->nbind] = r->m->pop_t[s->pop0 + i], r->bind_p[r->nbind++] = x[1 + i].data;
    rc = mr__nodes(r, s->first, s->end);
    for (i = 0; !rc && i < s->nstash; i++) { /* a stash: the tensor, alive to the segment's end, into its slot */
        int32_t id = r->m->stash_t[s->stash0 + i];
        const mr_tensor *t = &r->t[id];
        const void *p = mr__ptr(r, id);
        if (!p) return DT_ERR_NULL;
        memcpy(y[1 + i].data, p, (size_t)mr__numel(t->local, t->ndim) * mr__esize(t->dtype));
    }
    r->nbind = 0;
    return rc;
}

static int mr__pp_input(void *user, int mb, mb_tensor *x)
{
    mr_rank *r = (mr_rank *)user;
    return mr__take_input(r, r->m->input, x->data, mb * r->m->rows);
}

static int mr__pp_output(void *user, int mb, const mb_tensor *y)
{
    mr_rank *r = (mr_rank *)user;
    mr__give_output(r, y->data, mb * r->m->rows, r->m->rows);
    return 0;
}

static void mr__pp_cfg(const mr_model *m, pp_layer *layers, mr__segctx *ctx, mr_rank *r, pp_exec_cfg *cfg)
{
    int32_t i;
    for (i = 0; i < m->nseg; i++) {
        memset(&layers[i], 0, sizeof layers[i]);
        layers[i].forward = mr__seg_forward;
        layers[i].self = ctx ? &ctx[i] : NULL;
        layers[i].act_bytes = m->seg[i].act_bytes;
        layers[i].param_bytes = m->seg[i].param_bytes;
        layers[i].cost = m->seg[i].cost;
        layers[i].stash = m->seg[i].nstash ? m->stash + m->seg[i].stash0 : NULL;
        layers[i].nstash = m->seg[i].nstash;
        layers[i].pop = m->seg[i].npop ? m->pop + m->seg[i].pop0 : NULL;
        layers[i].npop = m->seg[i].npop;
        if (ctx) ctx[i].r = r, ctx[i].seg = i;
    }
    memset(cfg, 0, sizeof *cfg);
    cfg->layers = layers;
    cfg->nlayers = m->nseg;
    cfg->balance = m->balance;
    cfg->rows = m->rows;
    cfg->dtype = m->dtype;
    cfg->in_bytes = (uint32_t)((size_t)m->rows * (size_t)m->in_numel * mr__esize(m->dtype));
    cfg->input = mr__pp_input;
    cfg->output = mr__pp_output;
    cfg->user = r;
    cfg->skips = m->routes;
    cfg->nskips = m->nroutes;
}

/* The scratch node n needs on this rank, from the library's queries. */
static int mr__node_scratch(const mr_rank *r, const mr_node *n, size_t *need)
{
    dt_spec a, b;
    const mr_tensor *t;
    int rc;
    *need = 0;
    if (n->op == MR_CONV || n->op == MR_POOL) {
        dt_conv2d_params p;
        mr__params(n, &p);
        if ((rc = mr__spec(r, n->in[0], &a))) return rc;
        if (n->op == MR_CONV && (rc = mr__spec(r, n->in[1], &b))) return rc;
        return dt_conv2d_scratch_bytes(&p, &a, n->op == MR_CONV ? &b : NULL, need);
    }
    if (n->op == MR_REDIST) {
        dt_plan pl;
        if ((rc = mr__spec(r, n->in[0], &a)) || (rc = mr__spec(r, n->out, &b))) return rc;
        if (dt_spec_is_replicated(&a) == 1) return DT_OK; /* a local narrow */
        if ((rc = dt_plan_redistribute(&a, &b, 0, &pl))) return rc;
        *need = dt_plan_scratch_bytes(&pl);
        return DT_OK;
    }
    if (n->op == MR_MEAN) {
        t = &r->t[n->in[0]];
        *need = (size_t)(mr__numel(t->local, n->i[0]) * mr__numel(t->local + n->i[1] + 1, t->ndim - n->i[1] - 1)) * 4u;
        return DT_OK;
    }
    if (r->m->dtype == MB_I8 && (n->op == MR_LINEAR || n->op == MR_MATMUL)) {
        t = &r->t[n->out];
        *need = (size_t)(n->op == MR_LINEAR ? mr__numel(t->local, t->ndim)
                                            : (int64_t)t->local[t->ndim - 2] * t->local[t->ndim - 1]) *
                4u;
    }
    return DT_OK;
}

static int mr__bind(mr_rank *r, const mr_model *m, int rank)
{
    int32_t ms[1];
    memset(r, 0, sizeof *r);
    r->m = m;
    r->rank = rank;
    r->t = m->tensors[rank];
    r->err_node = -1;
    ms[0] = m->ranks;
    return dt_mesh_init(&r->mesh, 1, ms, NULL, rank);
}

int mr_query(const mr_model *m, int rank, mr_sizes *s)
{
    mr_rank r; /* a few KB of stack: host planning (tools/model/plan.c) */
    int32_t k, seg, first = 0, end;
    int rc;
    size_t need;
    if (!m || !s || rank < 0 || rank >= m->ranks) return DT_ERR_NULL;
    if ((rc = mr__bind(&r, m, rank))) return rc;
    memset(s, 0, sizeof *s);
    end = m->nnodes;
    if (m->pipeline) { /* this rank's stage: its segments' nodes and intermediates */
        for (k = 0; k < rank; k++) first += m->balance[k];
        for (seg = first; seg < first + m->balance[rank]; seg++)
            if (m->seg[seg].arena > s->arena) s->arena = m->seg[seg].arena;
        seg = first + m->balance[rank];
        end = m->balance[rank] ? m->seg[seg - 1].end : 0;
        first = m->balance[rank] ? m->seg[first].first : 0;
    } else {
        for (k = 0; k < m->ntensors; k++) {
            const mr_tensor *t = &r.t[k];
            if (t->kind == MR_ARENA) {
                size_t e = (size_t)t->ref + (size_t)mr__numel(t->local, t->ndim) * mr__esize(t->dtype);
                if (e > s->arena) s->arena = e;
            }
        }
    }
    s->arena = (s->arena + 7u) & ~(size_t)7u;
    for (k = first; k < end; k++) {
        if ((rc = mr__node_scratch(&r, &m->nodes[k], &need))) return rc;
        if (need > s->scratch) s->scratch = need;
    }
    s->scratch = (s->scratch + 7u) & ~(size_t)7u;
    if (m->pipeline) {
        mr__pp_cfg(m, r.layers, NULL, NULL, &r.cfg);
        if ((rc = pp_exec_query(&r.cfg, &m->plan[rank], &s->exec))) return rc;
    }
    return DT_OK;
}

int mr_init(mr_rank *r, const mr_model *m, int rank, pg_group *g, void *arena, size_t arena_bytes, void *scratch,
            size_t scratch_bytes, void *exec, size_t exec_bytes)
{
    int rc;
    if (!r || !m || !g || rank < 0 || rank >= m->ranks) return DT_ERR_NULL;
    if (m->nseg > MR_MAX_SEGMENTS) return DT_ERR_TOO_SMALL;
    for (rc = 0; m->pipeline && rc < m->nseg; rc++)
        if (m->seg[rc].npop < 0 || m->seg[rc].npop > PP_MAX_SKIPS || m->seg[rc].nstash < 0 ||
            m->seg[rc].nstash > PP_MAX_SKIPS)
            return DT_ERR_TOO_SMALL;
    if ((rc = mr__bind(r, m, rank))) return rc;
    r->g = g;
    r->arena = (unsigned char *)arena, r->arena_bytes = arena_bytes;
    r->scratch = (unsigned char *)scratch, r->scratch_bytes = scratch_bytes;
    if ((rc = dt_comm_init(&r->comm, &r->mesh, g))) return rc;
    if (m->pipeline) {
        mr__pp_cfg(m, r->layers, r->seg, r, &r->cfg);
        if ((rc = pp_exec_init(&r->ex, &r->cfg, &m->plan[rank], g, exec, exec_bytes))) return rc;
    }
    return DT_OK;
}

int mr_step(mr_rank *r, const float *in, float *out)
{
    const mr_model *m = r->m;
    int rc;
    r->in = in;
    r->out = out;
    r->err_node = -1;
    if (m->pipeline) return pp_exec_run(&r->ex);
    if ((rc = mr__take_input(r, m->input, mr__ptr(r, m->input), 0))) return rc;
    if ((rc = mr__nodes(r, 0, m->nnodes))) return rc;
    if (r->rank == 0) mr__give_output(r, mr__ptr(r, m->output), 0, m->rows);
    return DT_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* MODEL_RUNNER_IMPLEMENTATION */
