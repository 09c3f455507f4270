/* dtensor_graph.h — DTensor graphs: graph IR, batch-dim analysis, data-parallel plans, C tables (splitcore)

   The embedded counterpart of the torch.fx train-step graphs torch/distributed/_spmd
   compiles, on top of dtensor_ops.h: a graph of ops in caller storage (acyclic by
   construction, shapes inferred as nodes are added), torch's batch-dim analysis
   (BatchDimAnalyzer, data-parallel "replicate" mode), data-parallel plans per rank
   (local shapes, views as aliases, gradient all-reduces) run with dtensor_ops.h's
   kernels or emitted as C const tables so that firmware links only the plan runner, and
   a run of the same graph on any mesh through the dispatcher (every node a DTensor,
   parameters optionally tensor-parallel). No heap, C99, C++-clean. Includes
   dtensor_ops.h.

   Example (x @ w with x's 32 rows sharded over 2 ranks: rank 0's plan):
       #define SPLITCORE_IMPLEMENTATION  // this header and every one it includes
       #include <splitcore/dtensor_graph.h>
       static dt_gnode nodes[8];  static dt_gstep steps[8];  dt_graph g;  dt_gplan plan;
       dt_op_attrs xa = {0}, wa = {0};  int32_t in[2];
       xa.ndim = wa.ndim = 2;  xa.shape[0] = 32;  xa.shape[1] = wa.shape[0] = wa.shape[1] = 16;
       dt_graph_init(&g, nodes, 8);
       in[0] = dt_graph_add(&g, DT_G_INPUT, &xa, NULL, 0);  // x [32, 16], batch dim 0
       in[1] = dt_graph_add(&g, DT_G_PARAM, &wa, NULL, 0);  // w [16, 16]
       dt_graph_add(&g, DT_ATEN_MM, NULL, in, 2);           // x @ w: [32, 16], Shard(0)
       int rc = dt_graph_plan(&g, 2, 0, DT_SUM, &plan, steps, 8);  // rows 0..15 on rank 0

   Contents:
       1. Configuration macros
       2. Graph IR, batch-dim analysis, data-parallel plans, C tables
       3. Distributed run through the dispatcher
       4. Implementation (DTENSOR_GRAPH_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; section 1 has
   each default; dtensor_ops.h's and dtensor.h's apply too):
       DTENSOR_GRAPH_IMPLEMENTATION  emit the definitions (exactly one .c file, the one
                                     that implements dtensor_ops.h; or
                                     SPLITCORE_IMPLEMENTATION)
       DTENSOR_GRAPH_STATIC          make every function static to its translation unit
       DT_NO_GRAPH_DIST              1: leave out the run through the dispatcher
                                     (dt_graph_dist_*; the data-parallel plans stay)

   Errors are dtensor.h's (DT_ERR_*, dt_strerror()): DT_ERR_NODE for a bad operand or plan
   step, DT_ERR_BATCH when the batch-dim analysis fails, DT_ERR_UNSUPPORTED for an op the
   graph does not run, dtensor_ops.h's from the dispatched run. Bad input never writes to
   the caller's outputs and leaves a graph unchanged (docs/error-contract.md lists every
   case).

   Threads, memory: building, analysing and planning work only on their arguments; the
   runs block in ports/pg.h (never from an ISR; every rank calls them in the same order).
   Nodes, steps, arenas and scratch are the caller's, sized by queries. */
#ifndef DTENSOR_GRAPH_H
#define DTENSOR_GRAPH_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "dtensor_ops.h"
#if SPLITCORE_VERSION != 200
#error "dtensor_graph.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(DTENSOR_GRAPH_IMPLEMENTATION)
#define DTENSOR_GRAPH_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(DTENSOR_GRAPH_STATIC)
#define DTENSOR_GRAPH_STATIC
#endif
#if DT_NO_MODEL_OPS
#error "dtensor_graph.h: the graph's view shapes are dtensor_ops.h's view code: it needs DT_NO_MODEL_OPS 0"
#endif
#ifndef DT_NO_GRAPH_DIST
#define DT_NO_GRAPH_DIST 0 /* 1: no dt_graph_dist_* (the run through the dispatcher) */
#endif
#if DT_NO_GRAPH_DIST != 0 && DT_NO_GRAPH_DIST != 1
#error "DT_NO_GRAPH_DIST must be 0 or 1"
#endif
#ifdef DTENSOR_GRAPH_STATIC
#define DT_GRAPH_API static
#else
#define DT_GRAPH_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Graph IR, batch-dim analysis, data-parallel plans, C tables -----------------
   The embedded counterpart of the torch.fx train-step graph that torch/distributed/_spmd
   compiles. A dt_graph holds nodes in caller storage (dt_graph_bytes(capacity) bytes);
   dt_graph_add appends one: an op (dt_aten, or a dt_gop below) on earlier nodes only, so a
   graph is acyclic by construction, with static attributes (dt_op_attrs; dims are stored
   normalised) and its global output shape inferred there (f32 only). Bad input returns
   an error and leaves the graph unchanged.
   dt_graph_analyze is the seed's BatchDimAnalyzer (_spmd/batch_dim_utils.py) inside
   build_data_parallel_strategies (_spmd/data_parallel.py, "replicate" mode):
     - node types: DT_G_INPUT is an activation with batch dim 0 (Shard(0), whatever its
       size); the first one's dim-0 size is the batch size (init_batch_dim_size);
       DT_G_PARAM a parameter; the grad operand of DT_G_SGD (torch's tag_grad), and
       through the non-compute ops before it (torch's non_compute_ops: view, reshape,
       flatten as the view it decomposes to, DT_G_T = aten.t, ones_like) the op producing
       it, a gradient. A non-compute op has its operand's type; a compute op (every other,
       DT_ATEN_TRANSPOSE = aten.transpose.int included) with a gradient operand is a
       parameter (its other operands must be parameters), with parameter operands only a
       parameter, a gradient when marked so above, otherwise an activation.
     - an activation's batch dim (compute_batch_dim): view-family ops (view, reshape,
       flatten, transpose, permute, squeeze, unsqueeze, expand; not DT_G_T, which torch's
       dim_rule_map lacks) follow torch's dim map
       (view_groups; flatten as the view it decomposes to): the first output dim fed by
       the operand's batch dim, and the tracked batch size becomes that dim's size;
       otherwise the first output dim whose size is the tracked batch size; otherwise a
       node without operands (factory) is Replicate (-1); otherwise the last operand that
       has a batch dim decides: its dim if < 0, its dim when the output is 0-d (a full
       reduction stays Shard), else Partial (-2). An activation operand with no batch dim
       to follow, or an activation before any input: DT_ERR_BATCH.
     - placement: activation Shard(bd) / Replicate / Partial as above, parameter
       Replicate, gradient Partial (torch averages, DDP-style; dt_graph_plan's `red`).
   dt_graph_plan lowers an analysed graph for rank `rank` of `world` ranks (world 1: the
   single-rank run) into dt_gstep tables: each node's local shape (a Shard(bd) dim of
   global size r x batch holds r x this rank's torch.chunk rows of the batch; a size not
   a multiple of the batch, e.g. an input of another size, is DT_ERR_BATCH), strides
   and arena offset. View-family ops alias their operand (no kernel, no copy; a view of
   a non-contiguous tensor copies); DT_G_SGD updates its parameter in place; a Partial
   tensor a parameter-type op consumes is all-reduced (`red`: DT_SUM gives the single-rank
   result of a summed loss, DT_AVG torch's average) right after it is computed.
   dt_gplan_run executes a plan (checked first: a bad table returns an error and runs
   nothing) with dtensor_ops.h's kernels (dt_kernel_ref; the graph has its own only for
   the dt_gop ops) and pg_all_reduce; dt_gplan_emit_c writes a plan as C const tables,
   so firmware links dt_gplan_run only and never plans.
   dt_graph_dist_* (section 3) run the same graph on any mesh through dtensor_ops.h's dispatcher
   instead, every node a DTensor, parameters optionally tensor-parallel.
   Ops the graph runs: mm, addmm, linear (2-D x), add, sub, mul, div, neg, relu, exp,
   tanh, sigmoid, *_SCALAR, sum and mean (attrs.dim, DT_DIM_ALL, keepdim), the view family, and dt_gop. */
typedef enum dt_gop {
    DT_G_INPUT = DT_ATEN_COUNT, /* activation placeholder: attrs.shape[0..attrs.ndim), ndim >= 1 */
    DT_G_PARAM,                 /* parameter placeholder: attrs.shape */
    DT_G_FULL,                  /* factory: attrs.shape filled with attrs.scalar (zeros, ones) */
    DT_G_ONES_LIKE,             /* ones_like(x) */
    DT_G_THRESHOLD_BWD,         /* threshold_backward(grad, x): x <= attrs.scalar ? 0 : grad */
    DT_G_SIGMOID_BWD,           /* sigmoid_backward(grad, y) = grad * (1 - y) * y */
    DT_G_SGD,                   /* sgd(param, grad): param += -attrs.scalar * grad, in place */
    DT_G_T,                     /* torch's aten.t: x (at most 2 dims) transposed, a view */
    DT_G_OP_END
} dt_gop;

enum dt_gtype { DT_GT_ACT = 0, DT_GT_PARAM = 1, DT_GT_GRAD = 2 };
/* Batch dims and placements of the analysis: >= 0 Shard(dim), or one of these. */
#define DT_BD_REPLICATE (-1)
#define DT_BD_PARTIAL   (-2)
#define DT_BD_NONE      (-3) /* not analysed (parameters, gradients: no batch dim) */

typedef struct dt_gnode {
    int32_t op, nin;
    int32_t in[DT_MAX_OP_ARGS];
    int32_t ndim;
    int32_t shape[MB_MAX_DIMS]; /* global output shape */
    dt_op_attrs attrs;
    int32_t type, bd, placement; /* dt_graph_analyze: dt_gtype, batch dim, placement */
} dt_gnode;

typedef struct dt_graph {
    dt_gnode *nodes;
    int32_t capacity, count;
    int32_t batch;    /* dt_graph_analyze: the inputs' batch size, -1 none */
    int32_t analysed; /* 1 after a successful dt_graph_analyze */
} dt_graph;

/* One step of a plan (a node on one rank). */
typedef struct dt_gstep {
    int32_t op, nin;
    int32_t in[DT_MAX_OP_ARGS]; /* earlier steps */
    int32_t flags;              /* DT_GS_* */
    int32_t placement;          /* as the node's */
    int32_t ndim;
    int32_t shape[MB_MAX_DIMS];  /* this rank's local shape */
    int32_t stride[MB_MAX_DIMS]; /* elements */
    uint32_t offset;             /* bytes from the arena's start */
    dt_op_attrs attrs;
} dt_gstep;
#define DT_GS_VIEW      1 /* aliases an earlier step's memory: nothing runs */
#define DT_GS_ALLREDUCE 2 /* all-reduced over the group (plan red) after it runs */

typedef struct dt_gplan {
    int32_t nsteps, world, rank;
    int32_t batch, local_batch; /* global batch, this rank's rows of it */
    int32_t red;                /* dt_red of the gradient all-reduce: DT_SUM or DT_AVG */
    uint32_t arena_bytes;       /* dt_gplan_run's arena (8-byte aligned) */
    const dt_gstep *steps;
} dt_gplan;

/* Bytes of node storage for `capacity` nodes (0 when capacity < 0). */
DT_GRAPH_API size_t dt_graph_bytes(int capacity);
/* An empty graph over storage[0..capacity). DT_ERR_NULL, DT_ERR_TOO_SMALL (capacity < 1). */
DT_GRAPH_API int dt_graph_init(dt_graph *g, dt_gnode *storage, int capacity);
/* Append op(in[0..nin), attrs) (attrs NULL: all zero); returns the new node's id (>= 0)
   or: DT_ERR_NODE (an operand id not an existing node), DT_ERR_TOO_SMALL (capacity
   full), DT_ERR_UNSUPPORTED (an op the graph does not run), DT_ERR_PLACEMENT_COUNT
   (operand count), DT_ERR_SHAPE (shapes that do not fit the op, a size < 1, a non-finite
   scalar), DT_ERR_DIM (a dim out of range), DT_ERR_MISMATCH (sgd's first operand not a
   parameter). The graph is unchanged on error. */
DT_GRAPH_API int dt_graph_add(dt_graph *g, int op, const dt_op_attrs *attrs, const int32_t *in, int nin);
/* Batch-dim analysis (above) into every node's type, bd and placement. DT_ERR_BATCH as
   above; on error every node is left unanalysed (bd DT_BD_NONE) and analysed 0. */
DT_GRAPH_API int dt_graph_analyze(dt_graph *g);
/* Plan for rank `rank` of `world` (1..DT_MAX_RANKS) into steps[0..cap) and *p (which
   points at steps); analyses g first. red: DT_SUM or DT_AVG. DT_ERR_RANK, DT_ERR_PLACEMENT
   (red), DT_ERR_TOO_SMALL (cap < node count, arena > 4 GB), DT_ERR_BATCH (a sharded dim
   not a multiple of the batch, a view whose local pieces do not line up),
   DT_ERR_UNSUPPORTED (a Partial tensor that both parameter and other ops consume, or one
   that is not dense), the analysis's errors. Nothing is written on error. */
DT_GRAPH_API int dt_graph_plan(dt_graph *g, int world, int rank, int red, dt_gplan *p, dt_gstep *steps, int cap);
/* Step `step`'s local tensor in `arena` (a view: inputs and parameters are written and
   results read through it). DT_ERR_NODE for a step out of range. */
DT_GRAPH_API int dt_gplan_tensor(const dt_gplan *p, void *arena, int step, mb_tensor *t);
/* Run the plan on arena[0..arena_bytes) (8-byte aligned; inputs and parameters in place).
   g: the world of p->world ranks, this one p->rank (NULL when world is 1). The plan is
   checked first (DT_ERR_NODE: bad operand ids or op; DT_ERR_SHAPE: shapes that do not fit
   an op, memory outside the arena; DT_ERR_TOO_SMALL: arena_bytes; DT_ERR_MISMATCH: the
   group is not the plan's world/rank): nothing runs then. DT_ERR_COMM: an all-reduce failed. */
DT_GRAPH_API int dt_gplan_run(const dt_gplan *p, void *arena, size_t arena_bytes, pg_group *g);
/* Write p as C source (a dt_gstep array `<name>_steps` and `const dt_gplan <name>`,
   which need dtensor_graph.h) into buf[0..cap) with a NUL (data-parallel plans only: the
   dispatched run below has no C form); *len = its length without the NUL.
   buf NULL: only *len (a size query). DT_ERR_TOO_SMALL (cap <= length; nothing written),
   DT_ERR_MISMATCH (name not a C identifier of 1..63 chars), DT_ERR_NODE (an empty plan). */
DT_GRAPH_API int dt_gplan_emit_c(const dt_gplan *p, const char *name, char *buf, size_t cap, size_t *len);

/* ---- 3. Distributed run through the dispatcher ---------------------------------------
   Distributed execution through the dispatcher: every node a DTensor (dt_gvalue, in
   caller storage) on the mesh of a dt_dispatch's comm, run node by node with dt_op
   (propagate -> redistribute the operands -> local kernel -> wrap, the strategy and plan
   caches of the dispatcher; a view op's output may be a view of its operand's local
   tensor). Leaves (DT_G_INPUT, DT_G_PARAM, DT_G_FULL) get the placements of `pl` (NULL:
   the analysis's, dt_graph_dist_placements), so parameters may be tensor-parallel (a
   colwise weight S(0), a rowwise one S(1)); every other node's placements are what
   propagation chooses, not the analysis's. The dt_gop ops run on the graph's kernels:
   ones_like gives its operand's placements with Partial made Replicate (torch's
   create_like strategy; the operand is not read), threshold_backward and
   sigmoid_backward follow the operand with the most shards (first on ties), Partial
   replicated, and move the others to it (pointwise); sgd moves its gradient to the
   parameter's placements (a Partial(sum) gradient is all-reduced there: the data-parallel
   gradient sum) and updates the parameter's local tensor in place (its output is the
   parameter). Equal to the single-rank run up to float summation order. Storage: node
   i's local result in v[i].data (v[i].bytes) inside the caller's arena; dt_op's scratch
   is the dispatcher's (d->scratch): dt_graph_dist_init with arena NULL sizes both.
   Firmware: dt_gplan_emit_c covers the data-parallel plan (dt_graph_plan) only; the
   dispatched run propagates and plans on the device, once per distinct (op, specs) when
   the caches hold every node (the second step is all cache hits). */
#if !DT_NO_GRAPH_DIST
typedef struct dt_gvalue {
    dt_tensor t; /* the node's DTensor: leaves' spec and local tensor set by dt_graph_dist_init
                      (write inputs and parameters through t.local), the others by each run */
    void *data;  /* its local storage in the arena (NULL for sgd: the parameter's) */
    size_t bytes;
} dt_gvalue;
/* The analysis's placements of every node into pl[i * DT_MAX_MESH_DIMS + md], md <
   mesh_ndim: Shard(batch dim) on every mesh dim (the batch split over all ranks),
   Replicate, or Partial(sum); analyses g. A start for dt_graph_dist_init's pl (change the
   leaves to place them otherwise). DT_ERR_NULL, DT_ERR_MESH (mesh_ndim), DT_ERR_TOO_SMALL
   (cap < node count), the analysis's errors. */
DT_GRAPH_API int dt_graph_dist_placements(dt_graph *g, int mesh_ndim, dt_placement *pl, int cap);
/* Set up v[0..g->count) for d's mesh and comm (this rank must be a member): every node's
   spec (leaves from pl, or the analysis when pl is NULL; then propagation, without the
   caches, node by node) and local storage, v[i].data at 8-byte aligned offsets of
   arena[0..arena_bytes). arena NULL: only the sizes, *arena_need and *scratch_need (the
   dispatcher scratch dt_graph_dist_run needs: redistributed operands and redistribute
   scratch; an upper bound), which may be NULL otherwise. DT_ERR_NULL, DT_ERR_NOT_MEMBER,
   DT_ERR_TOO_SMALL (cap, arena_bytes), DT_ERR_PARTIAL (a Partial leaf placement),
   dt_spec_init's errors for a leaf, dt_propagate's for a node (DT_ERR_NO_STRATEGY, ...),
   the analysis's. */
DT_GRAPH_API int dt_graph_dist_init(dt_graph *g, dt_dispatch *d, const dt_placement *pl, dt_gvalue *v, int cap,
                                    void *arena, size_t arena_bytes, size_t *arena_need, size_t *scratch_need);
/* One run of every node in order (every rank of the mesh calls it). DT_ERR_NULL,
   DT_ERR_MISMATCH (v not set up for d's mesh), dt_op's errors (DT_ERR_TOO_SMALL: the
   dispatcher scratch; DT_ERR_COMM). */
DT_GRAPH_API int dt_graph_dist_run(const dt_graph *g, dt_dispatch *d, dt_gvalue *v);
#endif /* DT_NO_GRAPH_DIST */

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_GRAPH_H */

/* ---- 4. Implementation ----------------------------------------------------------- */
#if defined(DTENSOR_GRAPH_IMPLEMENTATION) && !defined(DTENSOR_GRAPH_IMPLEMENTED)
#define DTENSOR_GRAPH_IMPLEMENTED
#if !defined(DTENSOR_OPS_IMPLEMENTATION) && \
    (defined(DTENSOR_OPS_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor_graph.h: DTENSOR_GRAPH_IMPLEMENTATION needs DTENSOR_OPS_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DTENSOR_GRAPH_STATIC
#define DT_GRAPH__DEF static
#else
#define DT_GRAPH__DEF
#endif

DT_GRAPH__DEF size_t dt_graph_bytes(int capacity)
{
    return capacity > 0 ? (size_t)capacity * sizeof(dt_gnode) : 0;
}

DT_GRAPH__DEF int dt_graph_init(dt_graph *g, dt_gnode *storage, int capacity)
{
    if (!g || !storage) return DT_ERR_NULL;
    if (capacity < 1) return DT_ERR_TOO_SMALL;
    g->nodes = storage;
    g->capacity = capacity;
    g->count = 0;
    g->batch = -1;
    g->analysed = 0;
    return DT_OK;
}

/* The view family: dt_aten's VIEW..FLATTEN and aten.t. */
static int dt__g_viewfam(int op)
{
    return (op >= DT_ATEN_VIEW && op <= DT_ATEN_FLATTEN) || op == DT_G_T;
}

/* torch's non_compute_ops of data_parallel.py (aten.t, not aten.transpose.int). */
static int dt__g_noncompute(int op)
{
    return op == DT_ATEN_VIEW || op == DT_ATEN_RESHAPE || op == DT_G_T || op == DT_ATEN_FLATTEN || op == DT_G_ONES_LIKE;
}

/* Operand counts of the ops the graph runs (min, max); 0xff: not run. */
static int dt__g_arity(int op, int *lo, int *hi)
{
    *lo = *hi = 1;
    if (op == DT_ATEN_MM || (op >= DT_ATEN_ADD && op <= DT_ATEN_DIV) || op == DT_G_THRESHOLD_BWD ||
        op == DT_G_SIGMOID_BWD || op == DT_G_SGD)
        *lo = *hi = 2;
    else if (op == DT_ATEN_ADDMM)
        *lo = *hi = 3;
    else if (op == DT_ATEN_LINEAR) {
        *lo = 2;
        *hi = 3;
    } else if (op == DT_G_INPUT || op == DT_G_PARAM || op == DT_G_FULL)
        *lo = *hi = 0;
    else if (!((op >= DT_ATEN_NEG && op <= DT_ATEN_RELU) || (op >= DT_ATEN_EXP && op <= DT_ATEN_DIV_SCALAR) ||
               op == DT_ATEN_SUM || op == DT_ATEN_MEAN || dt__g_viewfam(op) || op == DT_G_ONES_LIKE))
        return 0;
    return 1;
}

static int dt__g_finite(float x)
{
    return x - x == 0.0f; /* inf - inf and NaN - NaN are NaN */
}

/* The attributes dt__g_infer normalises (dims, shapes) are equal; it leaves the floats as
   they are, so they need no comparison (nor memcmp, which would compare their padding-free
   but not unique representations). */
static int dt__g_same_dims(const dt_op_attrs *x, const dt_op_attrs *y)
{
    int k;
    if (x->dim != y->dim || x->dim2 != y->dim2 || x->keepdim != y->keepdim || x->mode != y->mode ||
        x->ignore_index != y->ignore_index || x->ndim != y->ndim)
        return 0;
    for (k = 0; k < MB_MAX_DIMS; k++)
        if (x->shape[k] != y->shape[k]) return 0;
    return 1;
}

/* Output shape of op on operands of shapes (ind[i], ish[i]) with attrs a (dims
   normalised into *a). local: the operands are local pieces (a plan's check): shape
   attributes of placeholders, factories and views are not compared. */
static int dt__g_infer(int op, dt_op_attrs *a, const int32_t *const *ish, const int32_t *ind, int nin, int32_t *osh,
                       int32_t *ond, int local)
{
    int32_t d, k, n0 = nin > 0 ? ind[0] : 0;
    int64_t prod = 1;
    int rc;
    const int32_t *s0 = nin > 0 ? ish[0] : 0;
    if (op == DT_G_INPUT || op == DT_G_PARAM || op == DT_G_FULL) { /* a given shape: sizes >= 1 */
        if (a->ndim < (op == DT_G_INPUT) || a->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
        for (d = 0; d < a->ndim; d++) {
            osh[d] = a->shape[d];
            if (osh[d] < 1 || (prod *= osh[d]) > INT32_MAX) return DT_ERR_SHAPE;
        }
        *ond = a->ndim;
        return DT_OK;
    }
    if (dt__g_viewfam(op)) { /* dtensor_ops.h's view shapes; graph sizes are >= 1, a 0-d node has no dim */
        if (op == DT_G_T) {  /* transpose(0, 1) of a 2-D x, x itself below */
            if (n0 > 2) return DT_ERR_DIM;
            a->dim = 0;
            a->dim2 = n0 == 2;
            op = DT_ATEN_TRANSPOSE;
            if (n0 == 0) {
                *ond = 0;
                return DT_OK;
            }
        }
        if (n0 == 0 && (op == DT_ATEN_TRANSPOSE || (op == DT_ATEN_SQUEEZE && a->dim != DT_DIM_ALL))) return DT_ERR_DIM;
        if (op == DT_ATEN_PERMUTE && a->ndim != n0) return DT_ERR_DIM;
        if (op == DT_ATEN_FLATTEN && n0 == 0) { /* flatten of a 0-d tensor is 1-d */
            osh[0] = 1;
            *ond = 1;
            return DT_OK;
        }
        rc = dt__view_shape(op, a, s0, n0, osh, ond);
        for (d = 0; !rc && d < *ond; d++)
            if (osh[d] < 1) rc = DT_ERR_SHAPE;
        return rc;
    }
    if (nin > 0)
        for (d = 0; d < n0; d++) osh[d] = s0[d];
    *ond = n0;
    switch (op) {
    case DT_ATEN_LINEAR: /* x (m, k), w (n, k), optional bias (n) */
        if (n0 != 2 || ind[1] != 2 || ish[1][1] != s0[1] || (nin == 3 && (ind[2] != 1 || ish[2][0] != ish[1][0])))
            return DT_ERR_SHAPE;
        osh[1] = ish[1][0];
        return DT_OK;
    case DT_ATEN_MM:
    case DT_ATEN_ADDMM: {
        const int32_t *x = ish[nin - 2], *w = ish[nin - 1];
        if (ind[nin - 2] != 2 || ind[nin - 1] != 2 || x[1] != w[0]) return DT_ERR_SHAPE;
        osh[0] = x[0];
        osh[1] = w[1];
        *ond = 2;
        if (op == DT_ATEN_ADDMM) { /* bias (n), (1, n) or (m, n) */
            if (ind[0] < 1 || ind[0] > 2 || s0[ind[0] - 1] != osh[1] || (ind[0] == 2 && s0[0] != 1 && s0[0] != osh[0]))
                return DT_ERR_SHAPE;
        }
        return DT_OK;
    }
    case DT_ATEN_SUM:
    case DT_ATEN_MEAN:
        if (a->dim == DT_DIM_ALL) {
            for (d = 0; d < n0; d++) osh[d] = 1;
            *ond = a->keepdim ? n0 : 0;
            return DT_OK;
        }
        if ((a->dim = mb_normalize_dim(a->dim, n0)) < 0) return DT_ERR_DIM;
        osh[a->dim] = 1;
        if (!a->keepdim) {
            for (d = a->dim; d + 1 < n0; d++) osh[d] = s0[d + 1];
            *ond = n0 - 1;
        }
        return DT_OK;
    default: /* pointwise and the dt_gop ops: operands of one shape */
        if (op == DT_G_SGD && local)
            return ind[1] == n0 && !memcmp(ish[1], s0, sizeof(int32_t) * (size_t)n0) ? DT_OK : DT_ERR_SHAPE;
        for (k = 1; k < nin; k++)
            if (ind[k] != n0 || memcmp(ish[k], s0, sizeof(int32_t) * (size_t)n0)) return DT_ERR_SHAPE;
        return DT_OK;
    }
}

DT_GRAPH__DEF int dt_graph_add(dt_graph *g, int op, const dt_op_attrs *attrs, const int32_t *in, int nin)
{
    dt_gnode n;
    const int32_t *ish[DT_MAX_OP_ARGS];
    int32_t ind[DT_MAX_OP_ARGS];
    int lo, hi, i, rc;
    if (!g || !g->nodes || (nin > 0 && !in)) return DT_ERR_NULL;
    if (op < 0 || op >= DT_G_OP_END || !dt__g_arity(op, &lo, &hi)) return DT_ERR_UNSUPPORTED;
    if (nin < lo || nin > hi) return DT_ERR_PLACEMENT_COUNT;
    for (i = 0; i < nin; i++) {
        if (in[i] < 0 || in[i] >= g->count) return DT_ERR_NODE;
        ish[i] = g->nodes[in[i]].shape;
        ind[i] = g->nodes[in[i]].ndim;
    }
    if (g->count >= g->capacity) return DT_ERR_TOO_SMALL;
    DT_MEMSET(&n, 0, sizeof n);
    if (attrs) n.attrs = *attrs;
    if (!dt__g_finite(n.attrs.scalar)) return DT_ERR_SHAPE;
    if (op == DT_G_SGD && g->nodes[in[0]].op != DT_G_PARAM) return DT_ERR_MISMATCH;
    rc = dt__g_infer(op, &n.attrs, ish, ind, nin, n.shape, &n.ndim, 0);
    if (rc) return rc;
    { /* every op's output fits int32 elements (an mm of two tall inputs need not) */
        int64_t numel = 1;
        for (i = 0; i < n.ndim; i++)
            if ((numel *= n.shape[i]) > INT32_MAX) return DT_ERR_SHAPE;
    }
    n.op = op;
    n.nin = nin;
    for (i = 0; i < nin; i++) n.in[i] = in[i];
    n.type = DT_GT_ACT;
    n.bd = n.placement = DT_BD_NONE;
    g->nodes[g->count] = n;
    g->analysed = 0;
    return g->count++;
}

/* The dim map of view-family node n on operand x: mask[o] = input dims output dim o reads. */
static void dt__g_dim_map(const dt_gnode *x, const dt_gnode *n, uint32_t *mask)
{
    const dt_op_attrs *a = &n->attrs;
    int32_t d, k, pad = n->ndim - x->ndim;
    for (d = 0; d < n->ndim; d++) mask[d] = 0;
    switch (n->op) {
    case DT_ATEN_TRANSPOSE:
        for (d = 0; d < n->ndim; d++) mask[d] = 1u << (d == a->dim ? a->dim2 : d == a->dim2 ? a->dim : d);
        break;
    case DT_ATEN_PERMUTE:
        for (d = 0; d < n->ndim; d++) mask[d] = 1u << a->shape[d];
        break;
    case DT_ATEN_SQUEEZE:
        for (d = k = 0; d < x->ndim; d++)
            if (x->shape[d] != 1 || (a->dim != DT_DIM_ALL && d != a->dim)) mask[k++] = 1u << d;
        break;
    case DT_ATEN_UNSQUEEZE:
        for (d = k = 0; d < n->ndim; d++)
            if (d != a->dim) mask[d] = 1u << k++;
        break;
    case DT_ATEN_EXPAND: /* Broadcast(InputDim) keeps its input */
        for (d = pad; d < n->ndim; d++) mask[d] = 1u << (d - pad);
        break;
    default: { /* view, reshape, flatten: torch's view_groups (the sizes were checked when n was added) */
        dt__vgroup gr[MB_MAX_DIMS];
        dt__view_groups(x->shape, x->ndim, n->shape, n->ndim, gr);
        for (d = 0; d < n->ndim; d++) /* the input dims of size > 1; none for a split group's size-1 piece */
            for (k = gr[d].f0; k < gr[d].f1 && (gr[d].t1 - gr[d].t0 < 2 || n->shape[d] != 1); k++)
                if (x->shape[k] > 1) mask[d] |= 1u << k;
        break;
    }
    }
}

/* compute_batch_dim of activation n; *bsize is the tracked batch size. */
static int dt__g_batch_dim(dt_graph *g, dt_gnode *n, int32_t *bsize)
{
    int32_t d, i, obd = DT_BD_REPLICATE;
    if (*bsize < 0) return DT_ERR_BATCH; /* an activation before any input */
    if (dt__g_viewfam(n->op) && n->op != DT_G_T) {
        uint32_t mask[MB_MAX_DIMS];
        const dt_gnode *x = &g->nodes[n->in[0]];
        if (x->bd == DT_BD_NONE) return DT_ERR_BATCH; /* get_batch_dim raises */
        dt__g_dim_map(x, n, mask);
        for (d = 0; x->bd >= 0 && d < n->ndim; d++)
            if (mask[d] >> x->bd & 1u) {
                *bsize = n->shape[d];
                return n->bd = d;
            }
    }
    for (d = 0; d < n->ndim; d++)
        if (n->shape[d] == *bsize) return n->bd = d;
    if (n->nin == 0) return n->bd = DT_BD_REPLICATE;
    for (i = 0; i < n->nin; i++)
        if (g->nodes[n->in[i]].bd != DT_BD_NONE) obd = g->nodes[n->in[i]].bd;
    return n->bd = obd < 0 || n->ndim == 0 ? obd : DT_BD_PARTIAL;
}

static void dt__g_reset(dt_graph *g)
{
    int32_t i;
    for (i = 0; i < g->count; i++) {
        g->nodes[i].type = DT_GT_ACT;
        g->nodes[i].bd = g->nodes[i].placement = DT_BD_NONE;
    }
    g->batch = -1;
    g->analysed = 0;
}

/* Node or step k's op and operand count known, and its operands earlier entries of the array
   at `base` (`size` bytes each, their shape and ndim at those offsets): their shapes into
   ish / ind. */
static int dt__g_operands(int op, int nin, const int32_t *in, int32_t k, const unsigned char *base, size_t size,
                          size_t shape_at, size_t ndim_at, const int32_t **ish, int32_t *ind)
{
    int lo, hi, i;
    if (op < 0 || op >= DT_G_OP_END || !dt__g_arity(op, &lo, &hi) || nin < lo || nin > hi) return DT_ERR_NODE;
    for (i = 0; i < nin; i++) {
        const unsigned char *e = base + (size_t)(in[i] < 0 ? 0 : in[i]) * size;
        if (in[i] < 0 || in[i] >= k) return DT_ERR_NODE;
        ish[i] = (const int32_t *)(const void *)(e + shape_at);
        DT_MEMCPY(&ind[i], e + ndim_at, sizeof ind[i]);
    }
    return DT_OK;
}

/* A caller-filled graph checked as dt_graph_add builds one: count within capacity, and every
   node's op and operand count, operands (earlier nodes), attrs (finite, dims normalised) and
   output shape (re-inferred) as add would have stored them. */
static int dt__g_check(const dt_graph *g)
{
    const int32_t *ish[DT_MAX_OP_ARGS];
    int32_t ind[DT_MAX_OP_ARGS], sh[MB_MAX_DIMS], nd, i, k;
    int rc;
    dt_op_attrs a;
    if (!g || !g->nodes) return DT_ERR_NULL;
    if (g->count < 0 || g->count > g->capacity) return DT_ERR_NODE;
    for (i = 0; i < g->count; i++) {
        const dt_gnode *n = &g->nodes[i];
        rc = dt__g_operands(n->op, n->nin, n->in, i, (const unsigned char *)g->nodes, sizeof *n,
                            offsetof(dt_gnode, shape), offsetof(dt_gnode, ndim), ish, ind);
        if (rc) return rc;
        if (!dt__g_finite(n->attrs.scalar) || (n->op == DT_G_SGD && g->nodes[n->in[0]].op != DT_G_PARAM))
            return DT_ERR_NODE;
        a = n->attrs;
        rc = dt__g_infer(n->op, &a, ish, ind, n->nin, sh, &nd, 0);
        if (rc || nd != n->ndim || !dt__g_same_dims(&a, &n->attrs)) return DT_ERR_NODE;
        for (k = 0; k < nd; k++)
            if (sh[k] != n->shape[k]) return DT_ERR_NODE;
    }
    return DT_OK;
}

DT_GRAPH__DEF int dt_graph_analyze(dt_graph *g)
{
    int32_t i, j, b0 = -1, bsize = -1;
    int rc = dt__g_check(g);
    if (rc) return rc;
    dt__g_reset(g);
    for (i = g->count - 1; i >= 0; i--) { /* gradients: from each sgd back through non-compute ops */
        if (g->nodes[i].op != DT_G_SGD) continue;
        j = g->nodes[i].in[1];
        g->nodes[j].type = DT_GT_GRAD;
        while (dt__g_noncompute(g->nodes[j].op)) {
            j = g->nodes[j].in[0];
            g->nodes[j].type = DT_GT_GRAD;
        }
    }
    for (i = 0; i < g->count && !rc; i++) {
        dt_gnode *n = &g->nodes[i];
        int types = 0; /* bit t: an operand of dt_gtype t */
        for (j = 0; j < n->nin; j++) types |= 1 << g->nodes[n->in[j]].type;
        if (n->op == DT_G_INPUT) { /* Shard(0) whatever its size; the first one's is the batch */
            if (b0 < 0) b0 = bsize = n->shape[0];
            n->type = DT_GT_ACT;
            n->bd = 0;
        } else if (n->op == DT_G_PARAM) {
            n->type = DT_GT_PARAM;
        } else if (dt__g_noncompute(n->op)) { /* its operand's type, even where marked a gradient */
            n->type = g->nodes[n->in[0]].type;
            if (n->type == DT_GT_ACT) rc = dt__g_batch_dim(g, n, &bsize) < DT_BD_NONE ? DT_ERR_BATCH : DT_OK;
        } else if (n->type == DT_GT_GRAD) { /* pre-filled: stays a gradient */
        } else if ((types & (1 << DT_GT_GRAD)) || ((types & (1 << DT_GT_PARAM)) && !(types & (1 << DT_GT_ACT)))) {
            n->type = DT_GT_PARAM; /* the optimizer (param + grad only), or an op of parameters only */
            if ((types & (1 << DT_GT_GRAD)) && types != ((1 << DT_GT_GRAD) | (1 << DT_GT_PARAM))) rc = DT_ERR_BATCH;
        } else {
            rc = dt__g_batch_dim(g, n, &bsize) < DT_BD_NONE ? DT_ERR_BATCH : DT_OK;
        }
        n->placement = n->type == DT_GT_PARAM ? DT_BD_REPLICATE : n->type == DT_GT_GRAD ? DT_BD_PARTIAL : n->bd;
    }
    if (rc) {
        dt__g_reset(g);
        return rc;
    }
    g->batch = b0;
    g->analysed = 1;
    return DT_OK;
}

/* Local shape of node n on rank `rank` of `world`: a Shard(bd) dim of global size
   r x batch holds r x this rank's chunk of the batch. */
static int dt__g_local(const dt_gnode *n, int32_t batch, int world, int rank, int32_t *sh)
{
    int d;
    for (d = 0; d < n->ndim; d++) sh[d] = n->shape[d];
    if (world > 1 && n->placement >= 0 && n->placement < n->ndim) {
        int32_t s = n->shape[n->placement];
        if (batch < 1 || s % batch) return DT_ERR_BATCH;
        sh[n->placement] = (s / batch) * dt__chunk(batch, world, rank, 0);
    }
    return DT_OK;
}

/* The operand dim view-family node n's output dim d reads (-1: a new or broadcast dim). */
static int32_t dt__g_src_dim(const dt_gnode *n, const int32_t *xsh, int32_t xnd, int32_t d)
{
    const dt_op_attrs *a = &n->attrs;
    int32_t k, j, pad = n->ndim - xnd;
    switch (n->op) {
    case DT_ATEN_TRANSPOSE:
    case DT_G_T: return d == a->dim ? a->dim2 : d == a->dim2 ? a->dim : d;
    case DT_ATEN_PERMUTE: return a->shape[d];
    case DT_ATEN_UNSQUEEZE: return d == a->dim ? -1 : d < a->dim ? d : d - 1;
    case DT_ATEN_EXPAND: return d < pad || (xsh[d - pad] == 1 && n->shape[d] != 1) ? -1 : d - pad;
    default: /* squeeze: the d-th kept dim */
        for (j = k = 0; j < xnd; j++)
            if (xsh[j] != 1 || (a->dim != DT_DIM_ALL && j != a->dim)) {
                if (k++ == d) return j;
            }
        return -1;
    }
}

/* The root a Partial operand's all-reduce runs on: back through numel-keeping views. */
static int32_t dt__g_root(const dt_graph *g, int32_t i)
{
    while (dt__g_viewfam(g->nodes[i].op) && g->nodes[i].op != DT_ATEN_EXPAND) i = g->nodes[i].in[0];
    return i;
}

/* Everything dt_graph_plan can refuse, before it writes. */
static int dt__g_plan_check(dt_graph *g, int world, int rank, int cap)
{
    int32_t i, j, d, sh[MB_MAX_DIMS], xs[MB_MAX_DIMS];
    uint64_t bytes = 0;
    int rc = dt_graph_analyze(g);
    if (rc) return rc;
    if (cap < g->count) return DT_ERR_TOO_SMALL;
    for (i = 0; i < g->count; i++) {
        const dt_gnode *n = &g->nodes[i];
        rc = dt__g_local(n, g->batch, world, rank, sh);
        if (rc) return rc;
        bytes += DT__R8(dt__bytes(sh, n->ndim, MB_F32));
        if (!dt__g_viewfam(n->op)) continue;
        rc = dt__g_local(&g->nodes[n->in[0]], g->batch, world, rank, xs);
        if (rc) return rc;
        if (n->op == DT_ATEN_VIEW || n->op == DT_ATEN_RESHAPE || n->op == DT_ATEN_FLATTEN) {
            if (mb_shape_numel(sh, n->ndim) != mb_shape_numel(xs, g->nodes[n->in[0]].ndim)) return DT_ERR_BATCH;
            continue;
        }
        for (d = 0; d < n->ndim; d++) {
            j = dt__g_src_dim(n, g->nodes[n->in[0]].shape, g->nodes[n->in[0]].ndim, d);
            if (j < 0 ? n->op != DT_ATEN_EXPAND && sh[d] != 1 : sh[d] != xs[j]) return DT_ERR_BATCH;
        }
    }
    if (bytes > UINT32_MAX) return DT_ERR_TOO_SMALL;
    /* the all-reduces: Partial operands of parameter-type ops, on their roots */
    for (i = 0; i < g->count; i++) g->nodes[i].type &= 3;
    for (i = 0; i < g->count; i++) {
        const dt_gnode *n = &g->nodes[i];
        if (n->type != DT_GT_PARAM) continue;
        for (j = 0; j < n->nin; j++)
            if (g->nodes[n->in[j]].placement == DT_BD_PARTIAL) {
                int32_t r = dt__g_root(g, n->in[j]);
                if (g->nodes[r].op == DT_ATEN_EXPAND) return DT_ERR_UNSUPPORTED;
                g->nodes[r].type |= 4; /* marked (bit 2 of type while planning) */
            }
    }
    for (i = 0; i < g->count; i++) { /* a marked tensor feeds parameter-type ops and views only */
        const dt_gnode *n = &g->nodes[i];
        if ((n->type & 3) == DT_GT_PARAM || dt__g_viewfam(n->op)) continue;
        for (j = 0; j < n->nin; j++)
            if (g->nodes[dt__g_root(g, n->in[j])].type & 4) return DT_ERR_UNSUPPORTED;
    }
    return DT_OK;
}

DT_GRAPH__DEF int dt_graph_plan(dt_graph *g, int world, int rank, int red, dt_gplan *p, dt_gstep *steps, int cap)
{
    int32_t i, d, s;
    uint64_t off = 0;
    int rc;
    if (!g || !g->nodes || !p || !steps) return DT_ERR_NULL;
    rc = dt__g_check(g);
    if (rc) return rc;
    if (world < 1 || world > DT_MAX_RANKS || rank < 0 || rank >= world) return DT_ERR_RANK;
    if (red != DT_SUM && red != DT_AVG) return DT_ERR_PLACEMENT;
    rc = dt__g_plan_check(g, world, rank, cap);
    if (rc) {
        for (i = 0; i < g->count; i++) g->nodes[i].type &= 3;
        return rc;
    }
    for (i = 0; i < g->count; i++) {
        const dt_gnode *n = &g->nodes[i];
        dt_gstep *st = &steps[i];
        const dt_gstep *x = n->nin ? &steps[n->in[0]] : 0;
        DT_MEMSET(st, 0, sizeof *st);
        st->op = n->op;
        st->nin = n->nin;
        for (d = 0; d < n->nin; d++) st->in[d] = n->in[d];
        st->placement = n->placement;
        st->ndim = n->ndim;
        st->attrs = n->attrs;
        dt__g_local(n, g->batch, world, rank, st->shape);
        for (d = n->ndim - 1, s = 1; d >= 0; d--) { /* contiguous unless a view says otherwise */
            st->stride[d] = s;
            s *= st->shape[d];
        }
        if (n->type & 4) st->flags |= DT_GS_ALLREDUCE;
        if (dt__g_viewfam(n->op)) {
            int contig = 1;
            for (d = x->ndim - 1, s = 1; d >= 0; d--) {
                if (x->shape[d] != 1 && x->stride[d] != s) contig = 0;
                s *= x->shape[d];
            }
            if (n->op == DT_ATEN_VIEW || n->op == DT_ATEN_RESHAPE || n->op == DT_ATEN_FLATTEN) {
                if (contig) {
                    st->flags |= DT_GS_VIEW;
                    st->offset = x->offset;
                    continue;
                }
            } else {
                for (d = 0; d < n->ndim; d++) {
                    int32_t j = dt__g_src_dim(n, g->nodes[n->in[0]].shape, x->ndim, d);
                    st->stride[d] = j >= 0 ? x->stride[j] : n->op == DT_ATEN_EXPAND ? 0 : st->stride[d];
                }
                st->flags |= DT_GS_VIEW;
                st->offset = x->offset;
                continue;
            }
        }
        if (n->op == DT_G_SGD) {
            st->offset = x->offset; /* in place */
            continue;
        }
        st->offset = (uint32_t)off;
        off += DT__R8(dt__bytes(st->shape, st->ndim, MB_F32));
    }
    for (i = 0; i < g->count; i++) g->nodes[i].type &= 3;
    p->nsteps = g->count;
    p->world = world;
    p->rank = rank;
    p->batch = g->batch;
    p->local_batch = g->batch > 0 ? dt__chunk(g->batch, world, rank, 0) : 0;
    p->red = red;
    p->arena_bytes = (uint32_t)off;
    p->steps = steps;
    return DT_OK;
}

static void dt__g_tensor(const dt_gstep *s, void *arena, mb_tensor *t)
{
    int d;
    t->data = (unsigned char *)arena + s->offset;
    t->dtype = MB_F32;
    t->ndim = s->ndim;
    for (d = 0; d < MB_MAX_DIMS; d++) {
        t->shape[d] = d < s->ndim ? s->shape[d] : 1;
        t->stride[d] = d < s->ndim ? s->stride[d] : 1;
    }
}

DT_GRAPH__DEF int dt_gplan_tensor(const dt_gplan *p, void *arena, int step, mb_tensor *t)
{
    if (!p || !p->steps || !arena || !t) return DT_ERR_NULL;
    if (step < 0 || step >= p->nsteps) return DT_ERR_NODE;
    dt__g_tensor(&p->steps[step], arena, t);
    return DT_OK;
}

/* One step's plan check (k: its index). */
static int dt__g_step_check(const dt_gplan *p, int32_t k)
{
    const dt_gstep *s = &p->steps[k];
    const int32_t *ish[DT_MAX_OP_ARGS];
    int32_t ind[DT_MAX_OP_ARGS], osh[MB_MAX_DIMS], ond = 0, d, c = 1;
    uint64_t last = 0;
    dt_op_attrs a = s->attrs;
    int i = dt__g_operands(s->op, s->nin, s->in, k, (const unsigned char *)p->steps, sizeof *s,
                           offsetof(dt_gstep, shape), offsetof(dt_gstep, ndim), ish, ind);
    if (i) return i;
    if (s->ndim < 0 || s->ndim > MB_MAX_DIMS || (s->offset & 3u)) return DT_ERR_SHAPE;
    for (d = s->ndim - 1; d >= 0; d--) { /* extent (terms < 2^40: no overflow) and contiguity */
        uint64_t term = s->shape[d] > 0 ? (uint64_t)(s->shape[d] - 1) * (uint64_t)s->stride[d] : 0;
        if (s->shape[d] < 0 || s->stride[d] < 0 || term >> 40) return DT_ERR_SHAPE;
        if (s->shape[d] == 0) last = UINT64_MAX; /* empty: no memory */
        if (last != UINT64_MAX) last += term;
        if (s->shape[d] != 1 && s->stride[d] != c)
            c = 0;
        else if (c)
            c = s->shape[d] <= (1 << 30) / c ? c * s->shape[d] : 0;
    }
    if (last == UINT64_MAX) c = 1; /* empty: nothing to write */
    if (last != UINT64_MAX && (last + 1u) * 4u + s->offset > p->arena_bytes) return DT_ERR_SHAPE;
    if (s->flags & DT_GS_VIEW) return (s->flags & DT_GS_ALLREDUCE) && !c ? DT_ERR_SHAPE : DT_OK;
    if (!c) return DT_ERR_SHAPE; /* kernels write contiguous outputs */
    if (s->op == DT_G_INPUT || s->op == DT_G_PARAM || s->op == DT_G_FULL) return DT_OK;
    if (dt__g_viewfam(s->op)) /* a copy */
        return mb_shape_numel(s->shape, s->ndim) == mb_shape_numel(ish[0], ind[0]) ? DT_OK : DT_ERR_SHAPE;
    if (dt__g_infer(s->op, &a, ish, ind, s->nin, osh, &ond, 1) || ond != s->ndim ||
        memcmp(osh, s->shape, sizeof(int32_t) * (size_t)ond))
        return DT_ERR_SHAPE;
    return DT_OK;
}

/* Element i (row-major) of t: contiguous t fast. */
#define DT__G_AT(t, c, i) ((c) ? ((const float *)(t)->data)[i] : dt__at((t), (i)))

/* The graph's own kernels: the ops dtensor_ops.h has none for (factories, the backward
   helpers, sgd). Operands of the output's shape, any strides. */
static void dt__g_kernel(int op, int nin, float c, mb_tensor *y, const mb_tensor *const *in)
{
    float *o = (float *)y->data;
    int32_t i, n = (int32_t)mb_numel(y);
    int c0 = nin > 0 && dt__contig(in[0]), c1 = nin > 1 && dt__contig(in[1]);
    if (op == DT_G_SGD && c0 && c1) { /* the optimizer's stream over every parameter: a flat loop */
        const float *a = (const float *)in[0]->data, *b = (const float *)in[1]->data;
        for (i = 0; i < n; i++) o[i] = a[i] + -c * b[i];
        return;
    }
    for (i = 0; i < n; i++) {
        float a = nin > 0 ? DT__G_AT(in[0], c0, i) : c, b = nin > 1 ? DT__G_AT(in[1], c1, i) : 0.0f;
        switch (op) {
        case DT_G_ONES_LIKE: a = 1.0f; break;
        case DT_G_THRESHOLD_BWD: a = b <= c ? 0.0f : a; break;
        case DT_G_SIGMOID_BWD: a = a * (1.0f - b) * b; break;
        case DT_G_SGD: a = a + -c * b; break;
        default: break; /* full: c */
        }
        o[i] = a;
    }
}

DT_GRAPH__DEF int dt_gplan_run(const dt_gplan *p, void *arena, size_t arena_bytes, pg_group *g)
{
    int32_t k, i;
    int rc;
    if (!p || !p->steps || !arena) return DT_ERR_NULL;
    if (p->nsteps < 0 || p->world < 1 || p->rank < 0 || p->rank >= p->world) return DT_ERR_RANK;
    if (p->red != DT_SUM && p->red != DT_AVG) return DT_ERR_PLACEMENT;
    if (((uintptr_t)arena & 7u) || arena_bytes < p->arena_bytes) return DT_ERR_TOO_SMALL;
    if (p->world > 1 && (!g || pg_size(g) != p->world || pg_rank(g) != p->rank)) return DT_ERR_MISMATCH;
    for (k = 0; k < p->nsteps; k++) {
        rc = dt__g_step_check(p, k);
        if (rc) return rc;
    }
    for (k = 0; k < p->nsteps; k++) {
        const dt_gstep *s = &p->steps[k];
        mb_tensor y, x[DT_MAX_OP_ARGS];
        const mb_tensor *in[DT_MAX_OP_ARGS];
        if (!(s->flags & DT_GS_VIEW) && s->op != DT_G_INPUT && s->op != DT_G_PARAM) {
            dt__g_tensor(s, arena, &y);
            for (i = 0; i < s->nin; i++) {
                dt__g_tensor(&p->steps[s->in[i]], arena, &x[i]);
                in[i] = &x[i];
            }
            if (dt__g_viewfam(s->op)) { /* a view of a non-contiguous tensor: a copy */
                mb_tensor_init(&y, y.data, MB_F32, x[0].ndim, x[0].shape);
                rc = mb_copy(&y, in[0]) ? DT_ERR_SHAPE : DT_OK;
            } else if (s->op < DT_ATEN_COUNT) {
                rc = dt_kernel_ref(s->op, &s->attrs, &y, in, s->nin);
            } else {
                dt__g_kernel(s->op, s->nin, s->attrs.scalar, &y, in);
                rc = DT_OK;
            }
            if (rc) return rc;
        }
        if ((s->flags & DT_GS_ALLREDUCE) && p->world > 1) {
            dt__g_tensor(s, arena, &y);
            rc = pg_all_reduce(g, y.data, y.data, (size_t)mb_numel(&y), MB_F32, (pg_red)p->red);
            if (rc) return DT_ERR_COMM;
        }
    }
    return DT_OK;
}

#if !DT_NO_GRAPH_DIST /* ---- distributed execution through the dispatcher ---- */

DT_GRAPH__DEF int dt_graph_dist_placements(dt_graph *g, int mesh_ndim, dt_placement *pl, int cap)
{
    int32_t i, md;
    int rc;
    if (!g || !pl) return DT_ERR_NULL;
    if (mesh_ndim < 1 || mesh_ndim > DT_MAX_MESH_DIMS) return DT_ERR_MESH;
    rc = dt_graph_analyze(g);
    if (!rc && cap < g->count) rc = DT_ERR_TOO_SMALL;
    for (i = 0; !rc && i < g->count; i++)
        for (md = 0; md < DT_MAX_MESH_DIMS; md++) {
            int32_t b = g->nodes[i].placement;
            dt_placement *p = &pl[i * DT_MAX_MESH_DIMS + md];
            p->kind = (int16_t)(md >= mesh_ndim || b == DT_BD_REPLICATE ? DT_KIND_REPLICATE
                                : b >= 0                                ? DT_KIND_SHARD
                                                                        : DT_KIND_PARTIAL);
            p->arg = (int16_t)(p->kind == DT_KIND_SHARD ? b : DT_SUM);
        }
    return rc;
}

/* The dt_aten op a node runs as through the dispatcher: aten.t is transpose(0, 1) (its
   attrs say so since dt_graph_add). */
static int dt__g_aten(int op)
{
    return op == DT_G_T ? (int)DT_ATEN_TRANSPOSE : op;
}

/* Node i's spec into v[i] and the dispatcher scratch its run needs (max into *scratch). */
static DT__NOINLINE int dt__g_dist_spec(const dt_graph *g, dt_dispatch *d, const dt_placement *pl, dt_gvalue *v,
                                        int32_t i, uint64_t *scratch)
{
    const dt_gnode *n = &g->nodes[i];
    const dt_mesh *m = d->comm->mesh;
    const dt_spec *specs[DT_MAX_OP_ARGS] = {0};
    dt_op_strategy s;
    dt_spec *o = &v[i].t.spec;
    uint64_t need = 0, rs = 0;
    int j, md, rc = DT_OK, nd = m->ndim;
    for (j = 0; j < n->nin; j++) {
        specs[j] = &v[n->in[j]].t.spec;
        DT_MEMCPY(&s.in[j][0], specs[j]->placements, sizeof s.in[j]); /* &[0]: cppcheck 2.10 takes a row as read */
    }
    if (!n->nin) { /* a leaf */
        dt_placement p[DT_MAX_MESH_DIMS];
        for (md = 0; md < nd; md++) {
            p[md].kind = n->placement >= 0 ? DT_KIND_SHARD : DT_KIND_REPLICATE; /* the analysis's */
            p[md].arg = (int16_t)(n->placement >= 0 ? n->placement : 0);
            if (pl) p[md] = pl[i * DT_MAX_MESH_DIMS + md];
            if (p[md].kind == DT_KIND_PARTIAL) return DT_ERR_PARTIAL;
        }
        return dt_spec_init(o, m, p, nd, MB_F32, n->ndim, n->shape, 0);
    }
    if (n->op < DT_ATEN_COUNT || n->op == DT_G_T) {
        rc = dt_propagate(0, dt__g_aten(n->op), &n->attrs, specs, n->nin, &s);
        if (!rc) rc = dt__op_out(&s, m, o, 0, 0);
    } else if (n->op == DT_G_SGD) {
        *o = *specs[0];
        DT_MEMCPY(s.in[1], o->placements, sizeof s.in[1]);
    } else { /* ones_like, threshold / sigmoid backward: pointwise */
        int k = 0;
        for (j = 1; j < n->nin; j++)
            if (dt_spec_num_shards(specs[j]) > dt_spec_num_shards(specs[k])) k = j;
        *o = *specs[k];
        for (md = 0; md < nd; md++)
            if (o->placements[md].kind == DT_KIND_PARTIAL)
                o->placements[md].kind = DT_KIND_REPLICATE, o->placements[md].arg = 0;
        for (j = 0; j < n->nin && n->op != DT_G_ONES_LIKE; j++) DT_MEMCPY(s.in[j], o->placements, sizeof s.in[j]);
    }
    for (j = 0; !rc && j < n->nin; j++) { /* the operands dt_op or dt__g_dist_gop moves */
        dt_spec t = *specs[j];
        int32_t sh[MB_MAX_DIMS];
        uint64_t b;
        if (!memcmp(s.in[j], t.placements, sizeof(dt_placement) * (size_t)nd)) continue;
        DT_MEMCPY(t.placements, s.in[j], sizeof t.placements);
        rc = dt_plan_redistribute(specs[j], &t, DT_PLAN_ALLOW_PARTIAL, &d->comm->plan);
        dt__local(&t, m->coord, t.placements, nd, sh, 0);
        b = DT__R8(dt__bytes(sh, t.ndim, t.dtype));
        need += b;
        dt__local(specs[j], m->coord, specs[j]->placements, nd, sh, 0);
        b += d->comm->plan.scratch + DT__R8(dt__bytes(sh, t.ndim, t.dtype)); /* strided operands may stage */
        if (b > rs) rs = b;
    }
    if (need + rs > *scratch) *scratch = need + rs;
    return rc;
}
DT_GRAPH__DEF int dt_graph_dist_init(dt_graph *g, dt_dispatch *d, const dt_placement *pl, dt_gvalue *v, int cap,
                                     void *arena, size_t arena_bytes, size_t *arena_need, size_t *scratch_need)
{
    uint64_t off = 0, scratch = 0;
    int32_t i, sh[MB_MAX_DIMS];
    int rc;
    if (!g || !g->nodes || !d || !d->comm || !d->comm->mesh || !v) return DT_ERR_NULL;
    if (d->comm->mesh->index < 0) return DT_ERR_NOT_MEMBER;
    rc = dt_graph_analyze(g);
    if (!rc && cap < g->count) rc = DT_ERR_TOO_SMALL;
    for (i = 0; !rc && i < g->count; i++) {
        dt_gvalue *x = &v[i];
        rc = dt__g_dist_spec(g, d, pl, v, i, &scratch);
        if (rc) break;
        if (g->nodes[i].op == DT_G_SGD) { /* in place: the parameter */
            x->t.local = v[g->nodes[i].in[0]].t.local;
            x->data = 0;
            x->bytes = 0;
            continue;
        }
        dt__local(&x->t.spec, d->comm->mesh->coord, x->t.spec.placements, d->comm->mesh->ndim, sh, 0);
        x->bytes = (size_t)dt__bytes(sh, x->t.spec.ndim, x->t.spec.dtype);
        x->data = arena ? (unsigned char *)arena + off : 0;
        off += DT__R8((uint64_t)x->bytes);
        if (arena && off > arena_bytes)
            rc = DT_ERR_TOO_SMALL;
        else if (arena && mb_tensor_init(&x->t.local, x->data, x->t.spec.dtype, x->t.spec.ndim, sh))
            rc = DT_ERR_SHAPE;
    }
    if (rc) return rc;
    if (arena_need) *arena_need = (size_t)off;
    if (scratch_need) *scratch_need = (size_t)scratch;
    return DT_OK;
}

/* A dt_gop node: operands moved to their targets, then the graph's kernel. */
static DT__NOINLINE int dt__g_dist_gop(const dt_gnode *n, dt_dispatch *d, dt_gvalue *v, dt_gvalue *o)
{
    mb_tensor moved[DT_MAX_OP_ARGS], y = o->t.local;
    const mb_tensor *in[DT_MAX_OP_ARGS];
    const dt_placement *tp = o->t.spec.placements;
    size_t left = d->scratch ? d->scratch_bytes & ~(size_t)7 : 0; /* buffers from the end stay aligned */
    int j, rc;
    for (j = 0; j < n->nin; j++) {
        const dt_tensor *x = &v[n->in[j]].t;
        in[j] = &x->local;
        if (n->op == DT_G_ONES_LIKE ||
            !memcmp(tp, x->spec.placements, sizeof(dt_placement) * (size_t)x->spec.mesh->ndim))
            continue;
        rc = dt__op_move(d, &x->spec, &x->local, tp, &moved[j], (unsigned char *)d->scratch, &left);
        if (rc) return rc;
        in[j] = &moved[j];
    }
    dt__g_kernel(n->op, n->nin, n->attrs.scalar, &y, in);
    return DT_OK;
}

/* An aten node through dt_op (its operands gathered into one array). */
static DT__NOINLINE int dt__g_dist_op(const dt_gnode *n, dt_dispatch *d, const dt_gvalue *v, dt_gvalue *o)
{
    dt_tensor a[DT_MAX_OP_ARGS];
    int j;
    for (j = 0; j < n->nin; j++) a[j] = v[n->in[j]].t;
    return dt_op(d, dt__g_aten(n->op), &n->attrs, a, n->nin, &o->t, o->data, o->bytes);
}

DT_GRAPH__DEF int dt_graph_dist_run(const dt_graph *g, dt_dispatch *d, dt_gvalue *v)
{
    int32_t i;
    int rc = DT_OK;
    if (!g || !g->nodes || !d || !d->comm || !v) return DT_ERR_NULL;
    rc = dt__g_check(g);
    for (i = 0; !rc && i < g->count; i++)
        if (v[i].t.spec.mesh != d->comm->mesh) rc = DT_ERR_MISMATCH;
    if (rc) return rc;
    for (i = 0; !rc && i < g->count; i++) {
        const dt_gnode *n = &g->nodes[i];
        if (n->op == DT_G_INPUT || n->op == DT_G_PARAM) continue;
        rc = n->op < DT_ATEN_COUNT || n->op == DT_G_T ? dt__g_dist_op(n, d, v, &v[i]) : dt__g_dist_gop(n, d, v, &v[i]);
    }
    return rc;
}
#endif /* DT_NO_GRAPH_DIST */

/* ---- C source of a plan: splitcore_base.h's writer ---- */
#define SPLITCORE__TEXT
#include "splitcore_base.h"

/* A signed number; DT_DIM_ALL by its name. */
static void dt__g_puti(splitcore__out *o, int32_t v)
{
    if (v == INT32_MIN) {
        splitcore__puts(o, "INT32_MIN");
        return;
    }
    if (v < 0) splitcore__putc(o, '-');
    splitcore__putu(o, v < 0 ? 0u - (uint32_t)v : (uint32_t)v);
}

/* A finite float as an exact C99 hex literal. */
static void dt__g_putf(splitcore__out *o, float f)
{
    uint32_t b, m, e;
    char t[16];
    int i;
    DT_MEMCPY(&b, &f, 4);
    m = (b & 0x7fffffu) << 1;
    e = b >> 23 & 255u;
    splitcore__puts(o, b >> 31 ? "-0x" : "0x");
    splitcore__puts(o, e ? "1." : "0.");
    for (i = 0; i < 6; i++) t[i] = "0123456789abcdef"[m >> (20 - 4 * i) & 15u];
    t[6] = 0;
    splitcore__puts(o, t);
    splitcore__puts(o, "p");
    dt__g_puti(o, e ? (int32_t)e - 127 : -126);
    splitcore__puts(o, "f");
}

/* Each of v[0..n): a separator (seps[i], or seps[0] when one), then the number. */
static void dt__g_putv(splitcore__out *o, const char *const *seps, int nseps, const int32_t *v, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        splitcore__puts(o, seps[i < nseps ? i : 0]);
        dt__g_puti(o, v[i]);
    }
}

static void dt__g_puta(splitcore__out *o, const char *sep, const int32_t *v, int n)
{
    static const char *const first[2] = {"{", ","};
    splitcore__puts(o, sep);
    dt__g_putv(o, first, 2, v, 1);
    dt__g_putv(o, first + 1, 1, v + 1, n - 1);
    splitcore__puts(o, "}");
}

static void dt__g_emit(splitcore__out *o, const dt_gplan *p, const char *name)
{
    static const char *const head[4] = {"/* splitcore graph plan (dt_gplan_emit_c): rank ", " of ",
                                        " */\nstatic const dt_gstep ", ","};
    static const char *const attr[6] = {
        "u,\n     {.dim = ", ", .dim2 = ", ", .keepdim = ", ", .mode = ", ", .ignore_index = ", ", .ndim = "};
    static const char *const comma[1] = {", "};
    int32_t k, w[7];
    w[0] = p->rank;
    w[1] = p->world;
    dt__g_putv(o, head, 2, w, 2);
    splitcore__puts(o, head[2]);
    splitcore__puts(o, name);
    splitcore__puts(o, "_steps[");
    dt__g_puti(o, p->nsteps);
    splitcore__puts(o, "] = {\n");
    for (k = 0; k < p->nsteps; k++) {
        const dt_gstep *s = &p->steps[k];
        const dt_op_attrs *a = &s->attrs;
        splitcore__puts(o, "    {");
        dt__g_puti(o, s->op);
        dt__g_putv(o, head + 3, 1, &s->nin, 1);
        dt__g_puta(o, ",", s->in, DT_MAX_OP_ARGS);
        w[0] = s->flags;
        w[1] = s->placement;
        w[2] = s->ndim;
        dt__g_putv(o, head + 3, 1, w, 3);
        dt__g_puta(o, ",", s->shape, MB_MAX_DIMS);
        dt__g_puta(o, ",", s->stride, MB_MAX_DIMS);
        splitcore__puts(o, ",");
        splitcore__putu(o, s->offset);
        {
            const int32_t av[6] = {a->dim, a->dim2, a->keepdim, a->mode, a->ignore_index, a->ndim};
            dt__g_putv(o, attr, 6, av, 6);
        }
        dt__g_puta(o, ", .shape = ", a->shape, MB_MAX_DIMS);
        splitcore__puts(o, ", .scalar = ");
        dt__g_putf(o, a->scalar);
        splitcore__puts(o, "}},\n");
    }
    splitcore__puts(o, "};\nconst dt_gplan ");
    splitcore__puts(o, name);
    {
        const int32_t hv[6] = {p->nsteps, p->world, p->rank, p->batch, p->local_batch, p->red};
        splitcore__puts(o, " = {");
        dt__g_puti(o, hv[0]);
        dt__g_putv(o, comma, 1, hv + 1, 5);
    }
    splitcore__puts(o, ", ");
    splitcore__putu(o, p->arena_bytes);
    splitcore__puts(o, "u, ");
    splitcore__puts(o, name);
    splitcore__puts(o, "_steps};\n");
}

DT_GRAPH__DEF int dt_gplan_emit_c(const dt_gplan *p, const char *name, char *buf, size_t cap, size_t *len)
{
    splitcore__out o;
    size_t i;
    int32_t k;
    if (!p || !p->steps || !name || !len) return DT_ERR_NULL;
    if (p->nsteps < 1) return DT_ERR_NODE;
    for (i = 0; name[i]; i++)
        if (i >= 63 || !((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') || name[i] == '_' ||
                         (i && name[i] >= '0' && name[i] <= '9')))
            return DT_ERR_MISMATCH;
    if (!i) return DT_ERR_MISMATCH;
    for (k = 0; k < p->nsteps; k++) /* finite scalars only */
        if (!dt__g_finite(p->steps[k].attrs.scalar)) return DT_ERR_SHAPE;
    o.buf = 0;
    o.cap = 0;
    o.n = 0;
    dt__g_emit(&o, p, name);
    if (buf && cap <= o.n) return DT_ERR_TOO_SMALL;
    if (buf) {
        o.buf = buf;
        o.cap = cap;
        o.n = 0;
        dt__g_emit(&o, p, name);
        buf[o.n] = 0;
    }
    *len = o.n;
    return DT_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_GRAPH_IMPLEMENTATION */
