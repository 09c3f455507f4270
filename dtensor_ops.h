/* dtensor_ops.h — DTensor ops: sharding propagation, the dispatcher, kernels and tensor-parallel styles (splitcore)

   PyTorch DTensor's _ops/ strategies, _sharding_prop.py and _dispatch.py on top of the
   core (dtensor.h): for an op (dt_aten) on DTensor specs, propagation chooses the input
   and output placements torch would (every candidate strategy costed with the core's
   redistribute cost model, a least-recently-used strategy cache in caller storage); the
   dispatcher (dt_op) then redistributes the inputs, runs the local kernel (portable C99
   in dt_kernel_ref, cblas_sgemm with DT_CBLAS, or the caller's) and wraps the result as
   a DTensor; dt_tp_* give torch's tensor-parallel styles. The ops: mm, addmm, bmm,
   linear, pointwise, reductions, softmax, norms, the view ops, embedding and the losses,
   on f32 (section 2 says which placements each propagates). The kernels use <math.h>
   (link -lm). No heap, C99, C++-clean. Includes dtensor.h.

   Example (propagation only: row-sharded a @ replicated b on a 4-rank mesh):
       #define SPLITCORE_IMPLEMENTATION  // this header, dtensor.h, microbatch.h, pg.h
       #include <splitcore/dtensor_ops.h>
       dt_mesh mesh;  dt_spec a, b;  dt_op_strategy s;  dt_op_cache cache;  static dt_op_entry ent[16];
       int32_t ms[1] = {4}, as[2] = {8, 16}, bs[2] = {16, 32};
       dt_placement s0[1] = {DT_SHARD(0)}, r[1] = {DT_REPLICATE()};
       dt_mesh_init(&mesh, 1, ms, NULL, 0);
       dt_spec_init(&a, &mesh, s0, 1, MB_F32, 2, as, NULL);
       dt_spec_init(&b, &mesh, r, 1, MB_F32, 2, bs, NULL);
       const dt_spec *args[2] = {&a, &b};
       dt_op_cache_init(&cache, ent, 16);
       dt_propagate(&cache, DT_ATEN_MM, NULL, args, 2, &s);  // S(0),R -> S(0): nothing moves

   Contents:
       1. Configuration macros            4. Tensor-parallel styles
       2. Ops, propagation, the strategy  5. Internal, for the dtensor modules
          cache                           6. Implementation (DTENSOR_OPS_IMPLEMENTATION)
       3. Kernels and the dispatcher

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; section 1 has
   each default; dtensor.h's apply too):
       DTENSOR_OPS_IMPLEMENTATION  emit the definitions (exactly one .c file, the one that
                                   implements dtensor.h; or SPLITCORE_IMPLEMENTATION)
       DTENSOR_OPS_STATIC          make every function static to its translation unit
       DT_NO_MODEL_OPS             1: leave out the view ops, embedding, the losses and
                                   the found_inf and argmax handlers (DT_ERR_UNSUPPORTED)
       DT_CBLAS                    1: also build dt_kernel_cblas (mm, addmm, bmm, linear
                                   through cblas_sgemm; includes <cblas.h>, link a CBLAS
                                   such as Debian's OpenBLAS: `scons blas=openblas`)
       DT_MM_BLOCK                 the reference matmul's k and n block (default 64)

   Errors are dtensor.h's (DT_ERR_*, dt_strerror()): DT_ERR_NO_STRATEGY when no strategy
   fits (the cache's failed_op names the op), DT_ERR_UNSUPPORTED for an op this build has
   no rule for, the core's for specs and redistribution. Bad input never writes to the
   caller's outputs (docs/error-contract.md lists every case).

   Threads, memory: propagation and the kernels work only on their arguments; a strategy
   cache and a dt_dispatch belong to one rank's thread; dt_op blocks in ports/pg.h when
   it redistributes (never from an ISR; every rank of the mesh calls it in the same
   order). All memory is the caller's (cache storage, dispatcher scratch, outputs). */
#ifndef DTENSOR_OPS_H
#define DTENSOR_OPS_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "dtensor.h"
#if SPLITCORE_VERSION != 200
#error "dtensor_ops.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(DTENSOR_OPS_IMPLEMENTATION)
#define DTENSOR_OPS_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(DTENSOR_OPS_STATIC)
#define DTENSOR_OPS_STATIC
#endif
#ifndef DT_NO_MODEL_OPS
#define DT_NO_MODEL_OPS 0 /* 1: no view ops, embedding, losses, found_inf and argmax handlers */
#endif
#if DT_NO_MODEL_OPS != 0 && DT_NO_MODEL_OPS != 1
#error "DT_NO_MODEL_OPS must be 0 or 1"
#endif
#ifndef DT_CBLAS
#define DT_CBLAS 0 /* 1: also dt_kernel_cblas (cblas_sgemm from <cblas.h>; link a CBLAS) */
#endif
#if DT_CBLAS != 0 && DT_CBLAS != 1
#error "DT_CBLAS must be 0 or 1"
#endif
#ifndef DT_MM_BLOCK
#define DT_MM_BLOCK 64 /* the reference matmul's k and n block, in floats (one vectorised row) */
#endif
#if DT_MM_BLOCK < 1
#error "DT_MM_BLOCK must be >= 1"
#endif
#if DT_CBLAS
#include <cblas.h>
#endif
#ifdef DTENSOR_OPS_STATIC
#define DT_OPS_API static
#else
#define DT_OPS_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Ops, propagation, the strategy cache ----------------------------------------
   PyTorch DTensor's _ops/ strategies, _sharding_prop.py and _dispatch.py. dt_aten names
   every op of the set; an op's static arguments (dim, keepdim, shape, scalar, ...) travel
   in dt_op_attrs and are part of the cache key. Ops with rules and kernels, on f32: mm,
   addmm (bias + mat1 @ mat2, 1-D or 2-D bias), bmm, linear (x @ w^T + b: x of 2..6 dims,
   w (n, k), optional 1-D bias); the pointwise add, sub, mul, div (same shapes), neg,
   relu, gelu, exp, tanh, sigmoid, add/sub/mul/div.Scalar; the reductions sum, mean,
   max, min, amax, argmax; softmax, log_softmax; layer_norm, rms_norm; the view ops,
   embedding (MB_I32 indices), cross_entropy and nll_loss (MB_I32 targets): every op of
   dt_aten (DT_ATEN_AMP_UNSCALE runs through its custom handler only). An op's dim out of
   range is DT_ERR_DIM. The kernels use <math.h> (expf, erff, tanhf, logf, sqrtf; link
   -lm).
   Propagation: an op's candidate strategies (input placements -> output placement) are
   generated per mesh dim and combined by cartesian product over mesh dims (the last mesh
   dim varies fastest, as itertools.product), each costed as the sum over inputs of torch's
   redistribute_cost(current -> target) in us, computed in double exactly as PyTorch does
   (its even-average bytes and one host's link figures, DT_LINK_TORCH's; the planner's
   steps; an impossible redistribution drops the strategy), so costs that differ by a
   fraction of a ns still decide, and every rank chooses the same strategy. Chosen as
   _select_min_cost_strategy: the LAST strategy that needs no redistribution, else the
   FIRST of minimum cost.
     mm "mk,kn->mn", per mesh dim in torch's order: R,R->R; S(1),S(0)->P(sum); S(0),R->S(0);
       R,S(1)->S(1) (4 on a 1-D mesh, 16 on 2-D). Strategies sharding a dim over more
       ranks than its size are dropped (is_tensor_shardable).
     bmm "bmk,bkn->bmn": R; S(0),S(0)->S(0); S(2),S(1)->P(sum); S(1),R->S(1);
       R,S(2)->S(2) (5 and 25).
     addmm: mm's, the bias following the output through broadcasting (a broadcast dim
       Replicate, Partial kept: a Replicate bias is partitioned, sum divides).
     linear (torch decomposes it to t + mm/addmm): mm's strategies on (x, w^T), so w S(0)
       is w^T's S(1) and back: R,R->R; x S(-1),w S(1)->P(sum); x S(d),w R->S(d) for each
       x dim d but the last; x R,w S(0)->S(-1) (4 and 16 for a 2-D x, one more per mesh
       dim for each extra x dim: torch's matmul flattens those into one row dim, which
       keeps only a shard of the first, so a 3-D x sharded on dim 1 stays sharded here
       where torch would gather it); the bias follows the output as addmm's. The kernel
       takes dot products of x and w rows (no transposed copy).
     pointwise: one strategy following the input with the most shards (first on ties):
       Shard kept; Partial(sum/avg) kept by add/sub (every input then targets that
       Partial: Replicate is partitioned locally), mul (the others target Replicate), div
       (through the numerator only; a Partial denominator is replicated), mul/div.Scalar
       and neg (torch's linear_pointwise_ops); neg swaps Partial(max) <-> Partial(min),
       the non-decreasing relu, exp, tanh and sigmoid keep Partial(max/min)
       (non_decreasing_unary_ops); gelu and add/sub.Scalar keep none; every other Partial
       becomes Replicate (an all_reduce of that input).
     reductions (common_reduction_strategy), one strategy following the input: a Shard
       of a reduced dim becomes Partial of the op (sum -> P(sum), mean -> P(avg), max and
       amax -> P(max), min -> P(min)), a Partial of that same op stays, other shards are
       kept (renumbered without keepdim). When the input holds another Partial, for
       mean when a reduced dim is unevenly sharded, and always for argmax, every Partial
       and the reduced dims are replicated first (argmax's strategy; dt_op runs argmax
       through a built-in custom handler instead, torch's argmin_argmax_handler: see
       dt_op). argmax's output is MB_I32 (the first
       index of the maximum; NaN counts as the maximum and max/min propagate it); over
       DT_DIM_ALL a flat index. An empty local shard reduces to 0 (sum), -inf (max),
       +inf (min); max, min, amax and argmax over an empty dim are DT_ERR_SHAPE (torch
       raises).
     softmax, log_softmax (softmax_strategy): the softmax dim and every Partial
       replicated, other shards kept; the output follows. Kernels subtract the row max.
     layer_norm, rms_norm (_common_norm_forward_strategy): x replicated on the normalized
       (last attrs.ndim) dims and every Partial, weight and bias replicated; the output
       follows x. (x - mean) / sqrt(var + eps) * w + b with the biased variance, and
       x / sqrt(mean(x^2) + eps) * w.
     These single-strategy families cost only the inputs that move (no
     is_tensor_shardable filter, as torch).
     views (_view_ops.py dim maps: view_groups, dim_flatten, dim_squeeze, ...): one
       strategy, costed as above. A shard follows its dim to the output; Partial passes
       through. Flatten keeps a shard only on the leftmost flattened dim and only when it divides
       evenly among the ranks sharding it, a split (view/reshape of one dim into several)
       only when the first piece does; transpose/permute move the shard, squeeze/unsqueeze
       renumber it; expand replicates a broadcast dim. Otherwise reshape and flatten
       replicate that dim first while view returns DT_ERR_NO_STRATEGY for a flatten (torch
       raises; an unfit split is replicated by view as well, as torch). Two deviations that
       keep the numbers right: a dim sharded on several mesh dims must divide by their
       product (torch checks each size alone), and flatten and split conditions both apply
       (torch's last check wins). Local kernels copy; dt_op instead returns a view of the
       input's local tensor (no copy, out_data unused) when the input needs no
       redistribution, no kernel override is set and its strides allow one.
     embedding(weight (V, D), indices): per mesh dim R,R->R; colwise w S(1),i R->S(-1);
       rowwise w S(0),i R->P(sum) (torch's MaskPartial: rows outside the local piece give
       zero, so the pending sum is exact; indices currently Shard drop it, as torch's
       Shard -> MaskPartial is impossible); batch w R,i S(d)->S(d) per indices dim (3 +
       indices ndim, cartesian product over mesh dims). An index outside [0, V):
       DT_ERR_RANK from the kernel.
     cross_entropy / nll_loss (nll_loss_forward_strategy; cross_entropy is log_softmax +
       nll_loss): input (C) or (N, C, d1..) with the class dim and every Partial
       replicated, other shards kept; the target (input's shape without the class dim)
       follows them; the output is the target's placements (reduction none) or, reduced
       to a 0-d loss, Partial(avg) (mean; the target must then shard evenly, else
       DT_ERR_NO_STRATEGY as torch raises) or Partial(sum) (sum) on each mesh dim sharding
       the target. As in torch, a sharded mean averages the shards' means: exact unless
       ignore_index hits differ between shards. Kernels: log-sum-exp with the row max
       subtracted; a target outside [0, C) other than ignore_index: DT_ERR_RANK.
   Tensor-parallel styles (colwise, rowwise, sequence parallel: dt_tp_*) give torch's
   parameter, input and output placements; examples/tp_mlp runs a Megatron MLP, its
   sequence-parallel form and head-sharded attention on 4 ranks with them.
   Results are cached in caller storage by (op, mesh shape and coordinate, each input's
   placements, shape and dtype) with hit/miss counters, least-recently-used replacement.
   A propagation failure returns DT_ERR_NO_STRATEGY and records the op in the cache's
   failed_op (dt_op_name() names it). */
typedef enum dt_aten {
    /* einsum family (f32): mm(a, b); addmm(bias, a, b); bmm(a, b); linear(x, w[, b]) = x @ w^T + b */
    DT_ATEN_MM = 0,
    DT_ATEN_ADDMM,
    DT_ATEN_BMM,
    /* pointwise, same shapes: binary, then unary */
    DT_ATEN_ADD,
    DT_ATEN_SUB,
    DT_ATEN_MUL,
    DT_ATEN_DIV,
    DT_ATEN_NEG,
    DT_ATEN_RELU,
    DT_ATEN_GELU, /* attrs.mode: 0 exact erf, 1 tanh approximation */
    DT_ATEN_EXP,
    DT_ATEN_TANH,
    DT_ATEN_SIGMOID,
    /* pointwise with a scalar second operand in attrs.scalar (add.Scalar, ...) */
    DT_ATEN_ADD_SCALAR,
    DT_ATEN_SUB_SCALAR,
    DT_ATEN_MUL_SCALAR,
    DT_ATEN_DIV_SCALAR,
    DT_ATEN_LINEAR,
    /* reductions over attrs.dim (DT_DIM_ALL: every dim) with attrs.keepdim; argmax's
       output is MB_I32 */
    DT_ATEN_SUM,
    DT_ATEN_MEAN,
    DT_ATEN_MAX,
    DT_ATEN_MIN,
    DT_ATEN_AMAX,
    DT_ATEN_ARGMAX,
    /* softmax over attrs.dim */
    DT_ATEN_SOFTMAX,
    DT_ATEN_LOG_SOFTMAX,
    /* layer_norm(x, w, b) over the last attrs.ndim dims (attrs.shape = normalized_shape),
       rms_norm(x, w); attrs.scalar = eps */
    DT_ATEN_LAYER_NORM,
    DT_ATEN_RMS_NORM,
    /* embedding(weight, indices MB_I32). Kernel attrs (set by dt_op for a row-sharded
       weight; zero otherwise): mode 1 = masked: the weight holds rows [dim2, dim2 + its
       rows) of shape[0] rows, indices in [0, shape[0]) outside it give zero rows */
    DT_ATEN_EMBEDDING,
    /* cross_entropy(logits, target MB_I32), nll_loss(log_probs, target MB_I32);
       attrs.mode = reduction (0 none, 1 mean, 2 sum: torch's Reduction), attrs.ignore_index
       (torch's default is -100: set it, zeroed attrs ignore class 0); output 0-d unless none */
    DT_ATEN_CROSS_ENTROPY,
    DT_ATEN_NLL_LOSS,
    /* views: view/reshape/expand to attrs.shape[0..attrs.ndim) (one -1 inferred; expand's -1
       keeps a size), permute by attrs.shape, transpose attrs.dim <-> attrs.dim2,
       squeeze/unsqueeze attrs.dim, flatten attrs.dim..attrs.dim2 */
    DT_ATEN_VIEW,
    DT_ATEN_RESHAPE,
    DT_ATEN_TRANSPOSE,
    DT_ATEN_PERMUTE,
    DT_ATEN_SQUEEZE,
    DT_ATEN_UNSQUEEZE,
    DT_ATEN_EXPAND,
    DT_ATEN_FLATTEN,
    /* _amp_foreach_non_finite_check_and_unscale_(grads..., found_inf), attrs.scalar =
       inv_scale: a custom handler only (dt_op; dt_propagate: DT_ERR_UNSUPPORTED) */
    DT_ATEN_AMP_UNSCALE,
    /* clamp(x, attrs.scalar, attrs.scalar2): torch.clamp / hardtanh (ReLU6 is 0, 6); a NaN
       stays NaN; -INFINITY / INFINITY for a missing bound */
    DT_ATEN_CLAMP,
    DT_ATEN_COUNT
} dt_aten;
#define DT_MAX_OP_ARGS 3
#define DT_DIM_ALL     INT32_MIN /* attrs.dim of a full reduction */

/* An op's static (non-tensor) arguments; NULL stands for all zero. Which fields an op
   reads is listed at its enum entry; the others are ignored (but are part of the cache
   key, so keep them zero). Negative dims count from the end, as in torch. */
typedef struct dt_op_attrs {
    int32_t dim, dim2;          /* reduction/softmax/squeeze/unsqueeze dim; transpose, flatten */
    int32_t keepdim;            /* reductions */
    int32_t mode;               /* gelu approximation; loss reduction */
    int32_t ignore_index;       /* losses */
    int32_t ndim;               /* entries used in shape[] */
    int32_t shape[MB_MAX_DIMS]; /* view/reshape/expand shape, permute order, normalized_shape */
    float scalar;               /* *_SCALAR operand; norms' eps; clamp's min */
    float scalar2;              /* clamp's max */
} dt_op_attrs;

/* The chosen strategy of one op call. */
typedef struct dt_op_strategy {
    int32_t op; /* dt_aten */
    int32_t nargs;
    int32_t count;  /* candidates generated (after filtering) */
    int32_t index;  /* the chosen one's position among them */
    double cost_us; /* its redistribute cost: torch's, in double as PyTorch computes it */
    dt_placement in[DT_MAX_OP_ARGS][DT_MAX_MESH_DIMS]; /* each input's target placements */
    dt_placement out[DT_MAX_MESH_DIMS];
    int32_t out_ndim;
    int32_t out_dtype;              /* mb_dtype of the output */
    int32_t out_shape[MB_MAX_DIMS]; /* global output shape */
} dt_op_strategy;

/* Compared with memcmp, so every member is an integer or a byte copy and the key has no
   padding (clang-tidy's bugprone-suspicious-memory-comparison checks this in scons check):
   attrs holds dt_op_attrs' bytes, so its float scalar compares by its bits (-0.0 and 0.0
   are two keys; a NaN finds its own entry). */
typedef struct dt_op_key {
    int32_t op, nargs;
    unsigned char attrs[sizeof(dt_op_attrs)];
    unsigned char mesh[offsetof(dt_mesh, ranks)];
    unsigned char arg[DT_MAX_OP_ARGS][offsetof(dt_spec, stride) - offsetof(dt_spec, placements)];
} dt_op_key;

typedef struct dt_op_entry {
    dt_op_key key;
    uint32_t stamp; /* last use; 0 = empty */
    dt_op_strategy s;
} dt_op_entry;

typedef struct dt_op_cache {
    dt_op_entry *entries;
    int32_t capacity, count;
    uint32_t clock;
    uint32_t hits, misses;
    int32_t failed_op; /* dt_aten of the last DT_ERR_NO_STRATEGY, -1 none */
} dt_op_cache;

/* An empty strategy cache over the caller's storage[capacity] (least-recently-used
   replacement, hit/miss counters, failed_op -1). DT_ERR_NULL, DT_ERR_TOO_SMALL (capacity
   < 1). One cache per thread, or the caller's exclusion. */
DT_OPS_API int dt_op_cache_init(dt_op_cache *c, dt_op_entry *storage, int capacity);
/* "mm", "addmm", ... (NULL for an unknown op). */
DT_OPS_API const char *dt_op_name(int op);
/* Propagate: the chosen strategy for op with static arguments attrs (NULL: all zero) on
   these input specs (all on one mesh; a rank outside it propagates as well, as torch,
   for dt_op's output spec there). cache may be NULL.
   DT_ERR_PLACEMENT_COUNT for an unknown op or a wrong argument count; DT_ERR_NO_STRATEGY
   when no candidate is possible; DT_ERR_SHAPE when the shapes or attrs do not fit the op
   (normalized_shape, weight or bias shape, gelu mode); DT_ERR_DIM for attrs.dim out of range;
   DT_ERR_DTYPE unless f32 (index operands: MB_I32); DT_ERR_UNSUPPORTED for an op this
   build has no rule for yet; DT_ERR_VALUE for a cache with entries whose count is not in
   0..capacity (or capacity < 1). Pure computation, no communication; not thread-safe on
   one cache. */
DT_OPS_API int dt_propagate(dt_op_cache *cache, int op, const dt_op_attrs *attrs, const dt_spec *const *args, int nargs,
                            dt_op_strategy *s);

/* ---- 3. Kernels and the dispatcher ------------------------------------------------ */
/* A local kernel: out = op(in[0..nin), attrs) on local tensors (strided views allowed,
   out contiguous). Returns 0 or a negative dt_err. */
typedef int (*dt_kernel)(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin);
/* The portable C99 kernels (blocked matmul, pointwise loops, ...) behind every op. attrs
   may be NULL (all zero). Every operand is checked before anything is read or written:
   DT_ERR_NULL (out, in or an operand NULL, or a non-empty view without data),
   DT_ERR_PLACEMENT_COUNT (unknown op, or nin outside its operand count), DT_ERR_SHAPE (an
   invalid view, more than INT32_MAX elements, out not contiguous, operands or attrs that
   do not fit the op as dt_propagate's shape rules say), DT_ERR_DIM, DT_ERR_DTYPE (f32
   operands, MB_I32 indices and targets; out f32, argmax's MB_I32), DT_ERR_MISMATCH (out's
   shape is not the op's result), DT_ERR_UNSUPPORTED (found_inf, or a model op without the
   model ops); the data-dependent DT_ERR_RANK of embedding and the losses too. */
DT_OPS_API int dt_kernel_ref(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin);

typedef struct dt_dispatch dt_dispatch;
/* A custom handler (torch's _custom_op_handlers): called by dt_op instead of the default
   path, with dt_op's arguments; it must not call dt_op for its own op. */
typedef int (*dt_handler)(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs,
                          dt_tensor *out, void *out_data, size_t out_bytes);
#if DT_CBLAS
/* mm, addmm, bmm and linear through cblas_sgemm (one call per batch) when every matrix
   operand has a unit stride in one of its two last dims (a transposed view is passed as
   CblasTrans, no copy) and linear's x rows collapse; anything else, and every other op,
   runs dt_kernel_ref. Install it per op: d.kernels[DT_ATEN_MM] = dt_kernel_cblas. */
DT_OPS_API int dt_kernel_cblas(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin);
#endif

/* The dispatcher's context (OpDispatcher): kernels[op] NULL runs dt_kernel_ref. plans and
   strategies may be NULL (no caching). scratch holds redistributed inputs and the
   redistribute scratch (8-byte aligned). handlers[op] (NULL: the built-in one, if any)
   takes the op over. implicit_replication (torch's implicit_replication()): plain tensors
   of any size are replicated, not only one-element ones. */
struct dt_dispatch {
    dt_comm *comm;
    dt_plan_cache *plans;
    dt_op_cache *strategies;
    dt_kernel kernels[DT_ATEN_COUNT];
    void *scratch;
    size_t scratch_bytes;
    dt_handler handlers[DT_ATEN_COUNT];
    int32_t implicit_replication;
    dt_spec plain[DT_MAX_OP_ARGS]; /* work area: the Replicate specs of plain tensors */
};

/* out = op(args, attrs) (attrs NULL: all zero), OpDispatcher.dispatch: a custom handler
   first (built in: DT_ATEN_AMP_UNSCALE, torch's found_inf_reduce_handler: each grad's
   local piece is unscaled in place and checked, found_inf (a one-element f32 tensor,
   plain or not) becomes 1 where a non-finite value was seen, then it is reduced as
   Partial(max) over every mesh dim where some grad is not Replicate and written back:
   out = found_inf; DT_ATEN_ARGMAX, torch's argmin_argmax_handler
   (torch/distributed/tensor/_argmin_argmax.py): when a reduced dim is sharded, only
   Partial is replicated, each rank reduces its own piece to (max, global index) pairs
   and those are all_gathered over the mesh dims sharding a reduced dim, the best kept,
   so the input is never gathered; the output spec is propagation's (the reduced dims
   Replicate). On a tie the smaller index wins (torch: the lower rank's, which differs
   from one rank's result for a flat argmax sharded on a later dim), NaN is the maximum,
   an empty piece offers nothing. Scratch: 4n + 8n(g + 1) bytes (n: local output
   elements, g: the largest such mesh dim) besides a Partial input's redistribution.
   Non-members, in-place / out variants and inputs without such a shard take the default
   path; without the model ops (DT_NO_MODEL_OPS) always). Otherwise: propagate,
   redistribute each input to its target
   (dt_redistribute, Replicate -> Partial allowed), run the kernel on the local tensors
   and wrap the result as out (spec + contiguous local view into out_data; a view op may
   return a view of its input instead, see section 2).
   Plain (non-distributed) tensors: an argument whose spec.mesh is NULL; only its `local`
   is read. With one element it is taken as Replicate on the op's mesh (the first
   distributed argument's); any other size is DT_ERR_MISMATCH unless
   d->implicit_replication is set. No distributed argument at all: DT_ERR_MISMATCH.
   In place (add_, ...): out_data == args[0].local.data. The result (computed in scratch)
   is copied into args[0]'s local tensor and out = args[0]; the output must keep args[0]'s
   placements, shape and dtype (DT_ERR_NO_STRATEGY otherwise, as torch refuses in-place
   ops that change placements).
   Out variant (out=): out_data NULL. out->local is the target (the result's local shape
   and dtype, any strides); the result is copied into it and out->spec set.
   A rank outside the op's mesh propagates but computes and communicates nothing: out gets
   the output spec and an empty local tensor (every size 0, in out_data), a 0-d output a
   zero in out_data (torch's non-participating ranks); in place / out variants return
   their target untouched; a custom handler's result without a value (found_inf there)
   is out = its target. DT_ERR_TOO_SMALL when out_bytes or the scratch is too small
   (nothing sent then; a rank-local error: the other ranks wait out the timeout, see
   dtensor.h section 8 on collective-unsafe argument errors). */
DT_OPS_API int dt_op(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs, dt_tensor *out,
                     void *out_data, size_t out_bytes);
/* dt_op_query's modes: how dt_op is called */
#define DT_OP_RESULT   0
#define DT_OP_IN_PLACE 1
#define DT_OP_OUT      2
/* dt_op's storage on this rank, before it exists: *out_bytes (the out_bytes dt_op needs:
   the local result's bytes, 0 in place and for the out variant) and *scratch_bytes (what
   d->scratch_bytes must be at least), exact: one byte less of either is DT_ERR_TOO_SMALL.
   mode: DT_OP_RESULT (out_data a buffer of its own), DT_OP_IN_PLACE (out_data ==
   args[0].local.data), DT_OP_OUT (out_data NULL); the arguments as dt_op takes them (the
   out variant's target is not looked at). The error is the one dt_op would return before
   communicating; no communication, nothing run. DT_ERR_UNSUPPORTED for an op taken over by
   a custom handler or the built-in DT_ATEN_AMP_UNSCALE (the found_inf reduction's scratch:
   dt_plan_redistribute + dt_redistribute_scratch_bytes). */
DT_OPS_API int dt_op_query(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs, int mode,
                           size_t *out_bytes, size_t *scratch_bytes);

/* ---- 4. Tensor-parallel styles ----------------------------------------------------
   Tensor-parallel styles (torch.distributed.tensor.parallel.style), as placements on the
   tensor-parallel mesh dim: where a module's weight and bias lie, the layout its input is
   redistributed to first (desired_input_layouts), the layout its op then yields and the
   layout the style's output hook redistributes that to (output_layouts). Shard(-1) counts
   from the end (dt_tp_redistribute and dt_spec_init resolve it). Usage: distribute or view
   the parameters with weight/bias (dt_local_view of a replicated copy costs nothing),
   dt_tp_redistribute(input -> input), dt_op, dt_tp_redistribute(output -> output_layout).
     colwise  (ColwiseParallel): Linear weight and bias S(0), Embedding weight S(1); input
              Replicate; output S(-1); output_layout as given (torch's default S(-1)).
     rowwise  (RowwiseParallel): Linear weight S(1), bias Replicate (it follows the output
              as a Partial), Embedding weight S(0); input S(-1) (Linear) or Replicate
              (Embedding); output Partial(sum); output_layout Replicate (all_reduce,
              torch's default) or Shard(d) (reduce_scatter).
     sequence (SequenceParallel, for norms and dropout): parameters Replicate; input and
              output Shard(sequence_dim) (torch's default 1), output_layout the same. */
typedef struct dt_tp_style {
    dt_placement input, weight, bias, output, output_layout;
} dt_tp_style;
enum { DT_TP_LINEAR = 0, DT_TP_EMBEDDING = 1 };
/* module: DT_TP_LINEAR or DT_TP_EMBEDDING; output_layout Replicate or Shard (any dim,
   negative from the end). DT_ERR_NULL, DT_ERR_PLACEMENT for another module or layout. */
DT_OPS_API int dt_tp_colwise(dt_tp_style *s, int module, dt_placement output_layout);
DT_OPS_API int dt_tp_rowwise(dt_tp_style *s, int module, dt_placement output_layout);
/* sequence_dim >= 0 (or negative from the end). DT_ERR_NULL. */
DT_OPS_API int dt_tp_sequence(dt_tp_style *s, int sequence_dim);
/* out = x with placement p (Shard(-1) resolved on x's rank) on mesh dim md, moved there
   with dt_redistribute (d's comm, plan cache and scratch) into data (bytes), or a view of
   x itself when it already lies so. Errors as dt_redistribute's; DT_ERR_MESH_DIM for md,
   DT_ERR_PARTIAL for a Partial target, DT_ERR_NOT_MEMBER off the mesh (even for a view). */
DT_OPS_API int dt_tp_redistribute(dt_dispatch *d, const dt_tensor *x, int md, dt_placement p, dt_tensor *out,
                                  void *data, size_t bytes);

/* ---- 5. Internal, for the dtensor modules -------------------------------------------
   Not API: what dtensor_graph.h's implementation shares with this one (extern, or static
   with DTENSOR_OPS_STATIC: then the graph is implemented in this file too). */
#ifdef DTENSOR_OPS_STATIC
#define DT_OPS__INTERNAL static DT__UNUSED
#else
#define DT_OPS__INTERNAL extern
#endif
/* The output spec of strategy st on mesh m, contiguous, into *os (NULL: not kept); y (NULL:
   none): a contiguous local tensor of its local shape over data. */
DT_OPS__INTERNAL int dt__op_out(const dt_op_strategy *st, const dt_mesh *m, dt_spec *os, mb_tensor *y, void *data);
/* Move input a (spec sa, local la) to placements p into *moved, its buffer taken from the
   end of the scratch [cur, cur + *left); the rest before it is the redistribute scratch. */
DT_OPS__INTERNAL int dt__op_move(dt_dispatch *d, const dt_spec *sa, const mb_tensor *la, const dt_placement *p,
                                 mb_tensor *moved, unsigned char *cur, size_t *left);
/* Element i (row-major) of f32 tensor t. */
DT_OPS__INTERNAL float dt__at(const mb_tensor *t, int32_t i);
/* 1 when t is row-major contiguous (size-1 dims ignored). */
DT_OPS__INTERNAL int dt__contig(const mb_tensor *t);
#if !DT_NO_MODEL_OPS
/* torch's view_groups(from, to): output dim k belongs to the group g[k] that flattens the
   input dims [f0, f1) into the output dims [t0, t1) (input dims of size 1 in no group are
   dropped). DT_ERR_SHAPE when the sizes do not pair up. */
typedef struct dt__vgroup {
    uint8_t f0, f1, t0, t1;
} dt__vgroup;
DT_OPS__INTERNAL int dt__view_groups(const int32_t *from, int fn, const int32_t *to, int tn, dt__vgroup *g);
/* The output shape osh[0..*ond) of view op `op` (view .. flatten) on input shape sh[0..n),
   the one view-shape inference: attrs' dims normalised in *at (transpose, squeeze,
   unsqueeze and flatten dims, permute's order; view and reshape infer one -1).
   DT_ERR_DIM for a dim out of range, DT_ERR_SHAPE for sizes that do not fit. */
DT_OPS__INTERNAL int dt__view_shape(int op, dt_op_attrs *at, const int32_t *sh, int n, int32_t *osh, int32_t *ond);
#endif

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_OPS_H */

/* ---- 6. Implementation ----------------------------------------------------------- */
#if defined(DTENSOR_OPS_IMPLEMENTATION) && !defined(DTENSOR_OPS_IMPLEMENTED)
#define DTENSOR_OPS_IMPLEMENTED
#if !defined(DTENSOR_IMPLEMENTATION) && (defined(DTENSOR_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor_ops.h: DTENSOR_OPS_IMPLEMENTATION needs DTENSOR_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#include <math.h> /* the kernels: expf, erff, tanhf, logf, sqrtf (link -lm) */
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DTENSOR_OPS_STATIC
#define DT_OPS__DEF static
#else
#define DT_OPS__DEF
#endif

/* Op families: one propagation rule and one kernel family each. */
enum {
    DT__F_EINSUM,
    DT__F_POINTWISE,
    DT__F_REDUCE,
    DT__F_SOFTMAX,
    DT__F_NORM,
    DT__F_EMBED,
    DT__F_LOSS,
    DT__F_VIEW,
    DT__F_CUSTOM
};

/* Per op: family, fewest and most operands, index operands (bit i set: operand i is
   MB_I32), in dt_aten order. */
typedef struct dt__op_info {
    unsigned char family, nmin, nmax, index_args;
} dt__op_info;

static const dt__op_info dt__ops[DT_ATEN_COUNT] = {
    {DT__F_EINSUM, 2, 2, 0},    {DT__F_EINSUM, 3, 3, 0},    {DT__F_EINSUM, 2, 2, 0},    /* mm addmm bmm */
    {DT__F_POINTWISE, 2, 2, 0}, {DT__F_POINTWISE, 2, 2, 0}, {DT__F_POINTWISE, 2, 2, 0}, /* add sub mul */
    {DT__F_POINTWISE, 2, 2, 0}, {DT__F_POINTWISE, 1, 1, 0}, {DT__F_POINTWISE, 1, 1, 0}, /* div neg relu */
    {DT__F_POINTWISE, 1, 1, 0}, {DT__F_POINTWISE, 1, 1, 0}, {DT__F_POINTWISE, 1, 1, 0}, /* gelu exp tanh */
    {DT__F_POINTWISE, 1, 1, 0}, {DT__F_POINTWISE, 1, 1, 0}, {DT__F_POINTWISE, 1, 1, 0}, /* sigmoid, +s -s */
    {DT__F_POINTWISE, 1, 1, 0}, {DT__F_POINTWISE, 1, 1, 0}, {DT__F_EINSUM, 2, 3, 0},    /* *s /s linear */
    {DT__F_REDUCE, 1, 1, 0},    {DT__F_REDUCE, 1, 1, 0},    {DT__F_REDUCE, 1, 1, 0},    /* sum mean max */
    {DT__F_REDUCE, 1, 1, 0},    {DT__F_REDUCE, 1, 1, 0},    {DT__F_REDUCE, 1, 1, 0},    /* min amax argmax */
    {DT__F_SOFTMAX, 1, 1, 0},   {DT__F_SOFTMAX, 1, 1, 0},                               /* (log_)softmax */
    {DT__F_NORM, 3, 3, 0},      {DT__F_NORM, 2, 2, 0},      {DT__F_EMBED, 2, 2, 2},     /* norms, embedding */
    {DT__F_LOSS, 2, 2, 2},      {DT__F_LOSS, 2, 2, 2},                                  /* losses */
    {DT__F_VIEW, 1, 1, 0},      {DT__F_VIEW, 1, 1, 0},      {DT__F_VIEW, 1, 1, 0},      /* view reshape t */
    {DT__F_VIEW, 1, 1, 0},      {DT__F_VIEW, 1, 1, 0},      {DT__F_VIEW, 1, 1, 0},      /* permute sq unsq */
    {DT__F_VIEW, 1, 1, 0},      {DT__F_VIEW, 1, 1, 0},      {DT__F_CUSTOM, 2, 3, 0},    /* expand flatten amp */
    {DT__F_POINTWISE, 1, 1, 0}};                                                        /* clamp */

DT_OPS__DEF const char *dt_op_name(int op)
{
    static const char names[] = "mm\0addmm\0bmm\0add\0sub\0mul\0div\0neg\0relu\0gelu\0exp\0tanh\0sigmoid\0"
                                "add.Scalar\0sub.Scalar\0mul.Scalar\0div.Scalar\0linear\0sum\0mean\0max\0min\0"
                                "amax\0argmax\0softmax\0log_softmax\0layer_norm\0rms_norm\0embedding\0"
                                "cross_entropy\0nll_loss\0view\0reshape\0transpose\0permute\0squeeze\0"
                                "unsqueeze\0expand\0flatten\0_amp_foreach_non_finite_check_and_unscale_\0clamp";
    const char *p = names;
    if (op < 0 || op >= DT_ATEN_COUNT) return 0;
    for (; op > 0; op--) p += strlen(p) + 1;
    return p;
}

DT_OPS__DEF int dt_op_cache_init(dt_op_cache *c, dt_op_entry *storage, int capacity)
{
    if (!c || !storage) return DT_ERR_NULL;
    if (capacity < 1) return DT_ERR_TOO_SMALL;
    DT_MEMSET(c, 0, sizeof *c);
    c->entries = storage;
    c->capacity = capacity;
    c->failed_op = -1;
    return DT_OK;
}

/* clang-format off */
#define DT__P(k, a) {(int16_t)(k), (int16_t)(a)}
/* clang-format on */
#define DT__R    DT__P(DT_KIND_REPLICATE, 0)
#define DT__S(d) DT__P(DT_KIND_SHARD, d)
#define DT__PS   DT__P(DT_KIND_PARTIAL, DT_SUM)
/* Einsum strategies over one mesh dim, gen_einsum_strategies' order: {out, lhs, rhs}. */
static const dt_placement dt__mm_opts[4][3] = {
    {DT__R, DT__R, DT__R}, {DT__PS, DT__S(1), DT__S(0)}, {DT__S(0), DT__S(0), DT__R}, {DT__S(1), DT__R, DT__S(1)}};
static const dt_placement dt__bmm_opts[5][3] = {{DT__R, DT__R, DT__R},
                                                {DT__S(0), DT__S(0), DT__S(0)},
                                                {DT__PS, DT__S(2), DT__S(1)},
                                                {DT__S(1), DT__S(1), DT__R},
                                                {DT__S(2), DT__R, DT__S(2)}};

/* is_tensor_shardable: every sharded dim has at least as many elements as pieces. */
static int dt__shardable(const dt_spec *s, const dt_placement *p)
{
    int i, j;
    for (i = 0; i < s->mesh->ndim; i++) {
        int32_t n = 1;
        if (p[i].kind != DT_KIND_SHARD) continue;
        for (j = 0; j < s->mesh->ndim; j++)
            if (dt__is_shard(p[j], p[i].arg)) n *= s->mesh->shape[j];
        if (s->shape[p[i].arg] < n) return 0;
    }
    return 1;
}

/* x rounded to double: a product stays its own rounding where a compiler would fuse it
   into the next addition (-ffp-contract), as Python computes it. */
static double dt__dround(double x)
{
    volatile double v = x;
    return v;
}

/* Cost of moving spec a to placements p in us, -1 when impossible: torch's
   redistribute_cost as PyTorch computes it, in double, over the planner's steps
   (_gen_transform_infos, _compute_placement_transition_cost): comm_bytes_gb = bytes /
   num_shards / 1024^3, then per step Shard -> Replicate an all_gather of comm x n,
   Shard -> Shard an all_gather + 1.0, Partial -> Replicate an all_reduce, Partial -> Shard
   a reduce_scatter, after which (and after Replicate -> Shard) comm is / n. The bytes are
   torch's even average: every rank gets the same cost and chooses the same strategy. */
/* The steps from a's placements to p, planned as a member of a's mesh (a rank outside the
   mesh propagates too); non-zero when there are none. Apart from the cost arithmetic: the
   mesh and spec copies stay out of its frame. */
static DT__NOINLINE int dt__redist_steps(const dt_spec *a, const dt_placement *p, dt__psteps *st)
{
    dt_mesh m0 = *a->mesh;
    dt_spec s = *a, t;
    m0.index = 0;
    m0.rank = m0.ranks[0];
    DT_MEMSET(m0.coord, 0, sizeof m0.coord);
    s.mesh = &m0;
    t = s;
    DT_MEMCPY(t.placements, p, sizeof(dt_placement) * (size_t)m0.ndim);
    return !dt__shardable(a, p) || dt__plan_steps(&s, &t, DT_PLAN_ALLOW_PARTIAL, st);
}

static double dt__redist_cost(const dt_spec *a, const dt_placement *p)
{
    dt__psteps st;
    double gb, n, h, cost = 0.0;
    int i, from, to;
    int32_t k;
    if (dt__redist_steps(a, p, &st)) return -1.0;
    /* / 1024 / 1024 / 1024 is exact: one scaling by 2^-30 */
    gb = (double)dt__bytes(a->shape, a->ndim, a->dtype) / (double)dt__num_shards(a->mesh, a->placements) / 1073741824.0;
    for (i = 0; i < st.n; i++) {
        from = st.from[i];
        to = st.to[i];
        k = a->mesh->shape[st.md[i]];
        n = (double)k;
        if (from == DT_KIND_SHARD && to == DT_KIND_REPLICATE) gb *= n;
        if (from != DT_KIND_REPLICATE) {
            /* allgather_cost / allreduce_cost (2 (n - 1) hops) / reduce_scatter_cost in torch's
               order of operations, one host's figures (DT_LINK_TORCH's): 6.6 + h * 0.6 +
               gb * h / n / 87.7 * 1e6; all_to_all + 1.0 */
            h = (double)((k - 1) << (from == DT_KIND_PARTIAL && to == DT_KIND_REPLICATE));
            h = (6.6 + dt__dround(h * 0.6)) + dt__dround(gb * h / n / 87.7 * 1e6);
            cost += from == to ? h + 1.0 : h;
        }
        if (to == DT_KIND_SHARD && from != DT_KIND_SHARD) gb /= n;
    }
    return cost;
}

/* Consider one candidate (in/out placements in s->in, s->out) against the best so far in
   *best: torch's _select_min_cost_strategy, streamed. The inputs' costs add up in torch's
   argument order (linear's bias first: torch runs addmm(bias, x, w^T)). */
static void dt__consider(const dt_spec *const *args, int nargs, dt_op_strategy *cand, dt_op_strategy *best,
                         int *noredist)
{
    double c, sum = 0.0;
    int i, k, same = 1, nd = args[0]->mesh->ndim;
    for (k = 0; k < nargs; k++) {
        i = cand->op == DT_ATEN_LINEAR && nargs == 3 ? (k + 2) % 3 : k;
        c = dt__redist_cost(args[i], cand->in[i]);
        if (c < 0.0) return;
        sum += c;
        if (memcmp(args[i]->placements, cand->in[i], sizeof(dt_placement) * (size_t)nd)) same = 0;
    }
    cand->index = cand->count++;
    cand->cost_us = sum;
    if (same) { /* the last one that needs no redistribution wins */
        *best = *cand;
        *noredist = 1;
    } else if (!*noredist && (best->index < 0 || sum < best->cost_us)) {
        *best = *cand;
    }
}

/* Input dims of an operand broadcast to an output of out_nd dims: out dim d -> operand dim,
   -1 when broadcast (infer_broadcast_dims_map). */
static int dt__bdim(const dt_spec *a, const int32_t *out_shape, int out_nd, int d)
{
    int k = d - (out_nd - a->ndim);
    return k >= 0 && a->shape[k] == out_shape[d] ? k : -1;
}

/* linear "m..k,nk->m..n" per mesh dim, option c of r + 2 (x of r dims, w = (n, k)): the mm
   strategies on x and w^T (w S(0) is w^T's S(1) and back), the m rows being every x dim
   but the last: R,R->R; S(r-1),S(1)->P(sum); S(d),R->S(d) for d < r-1; R,S(0)->S(r-1).
   {out, x, w} into o. */
static void dt__linear_opt(int c, int r, dt_placement *o)
{
    dt_placement rr = DT__R, ps = DT__PS;
    o[0] = o[1] = o[2] = rr;
    if (c == 1) {
        o[0] = ps;
        o[1].kind = o[2].kind = DT_KIND_SHARD;
        o[1].arg = (int16_t)(r - 1);
        o[2].arg = 1;
    } else if (c > 1) {
        o[0].kind = DT_KIND_SHARD;
        o[0].arg = (int16_t)(c - 2);
        if (c <= r)
            o[1] = o[0];
        else
            o[2].kind = DT_KIND_SHARD; /* w S(0) */
    }
}

/* The output shape osh[0..*ond) of op (any family but the views') on operands of shapes
   sh[i][0..nd[i]) with attrs at, torch's shape rules: what propagation gives the global
   output and dt_kernel_ref checks a local one against. *mask: the dims a reduction reduces
   or a softmax / norm normalizes (bit d: dim d). DT_ERR_SHAPE when the operands or attrs do
   not fit the op, DT_ERR_DIM for attrs.dim out of range. */
static DT__NOINLINE int dt__op_shape(int op, const dt_op_attrs *at, const int32_t *const *sh, const int32_t *nd, int n,
                                     int32_t *osh, int32_t *ond, uint32_t *mask)
{
    int fam = dt__ops[op].family, lin = op == DT_ATEN_LINEAR, i, d, o = 0, x = nd[0];
    int rank = lin ? x : op == DT_ATEN_BMM ? 3 : 2, li = lin ? 0 : n - 2; /* einsum: lhs, rhs at li, li + 1 */
    const int32_t *l = sh[li < 0 ? 0 : li], *r = sh[n > 1 ? li + 1 : 0];
    *mask = 0;
    *ond = x;
    DT_MEMCPY(osh, sh[0], sizeof(int32_t) * (size_t)x);
    switch (fam) {
    case DT__F_EINSUM: /* mm, bmm, addmm (bias 1-D or 2-D), linear (x of >= 2 dims, w (n, k), bias 1-D) */
        if (lin ? (rank < 2 || nd[1] != 2 || l[rank - 1] != r[1])
                : (nd[li] != rank || nd[li + 1] != rank || l[rank - 1] != r[rank - 2] || (rank == 3 && l[0] != r[0])))
            return DT_ERR_SHAPE;
        DT_MEMCPY(osh, l, sizeof(int32_t) * (size_t)rank);
        osh[rank - 1] = r[lin ? 0 : rank - 1];
        *ond = rank;
        if (n == 3) { /* the bias broadcasts to the output */
            const int32_t *b = sh[lin ? 2 : 0];
            int bn = nd[lin ? 2 : 0];
            if (bn < 1 || bn > (lin ? 1 : 2)) return DT_ERR_SHAPE;
            for (i = 0; i < bn; i++)
                if (b[i] != osh[rank - bn + i] && b[i] != 1) return DT_ERR_SHAPE;
        }
        return DT_OK;
    case DT__F_POINTWISE: /* one shape; gelu's approximate 0 "none" or 1 "tanh" */
        for (i = 1; i < n; i++)
            if (nd[i] != x || memcmp(sh[i], sh[0], sizeof(int32_t) * (size_t)x)) return DT_ERR_SHAPE;
        return op == DT_ATEN_GELU && (at->mode < 0 || at->mode > 1) ? DT_ERR_SHAPE : DT_OK;
    case DT__F_REDUCE:
    case DT__F_SOFTMAX:
        *mask = (1u << x) - 1u;
        if (at->dim != DT_DIM_ALL || fam == DT__F_SOFTMAX) {
            d = mb_normalize_dim(at->dim, x);
            if (d < 0) return DT_ERR_DIM;
            *mask = 1u << d;
        }
        for (d = 0; fam == DT__F_REDUCE && d < x; d++) /* reduced dims dropped, or 1 with keepdim */
            if (!(*mask >> d & 1u) || at->keepdim) osh[o++] = *mask >> d & 1u ? 1 : sh[0][d];
        if (fam == DT__F_REDUCE) *ond = o;
        return DT_OK;
    case DT__F_NORM: /* x's last dims, the weight's and the bias's == normalized_shape */
        if (at->ndim < 1 || at->ndim > x) return DT_ERR_SHAPE;
        for (i = 0; i < n; i++) {
            if (i && nd[i] != at->ndim) return DT_ERR_SHAPE;
            if (memcmp(sh[i] + (i ? 0 : x - at->ndim), at->shape, sizeof(int32_t) * (size_t)at->ndim))
                return DT_ERR_SHAPE;
        }
        *mask = ((1u << x) - 1u) & ~((1u << (x - at->ndim)) - 1u);
        return DT_OK;
#if !DT_NO_MODEL_OPS
    case DT__F_EMBED: /* weight (V, D), indices of any shape: the indices' shape + (D) */
        if (x != 2 || nd[1] + 1 > MB_MAX_DIMS) return DT_ERR_SHAPE;
        DT_MEMCPY(osh, sh[1], sizeof(int32_t) * (size_t)nd[1]);
        osh[nd[1]] = sh[0][1];
        *ond = nd[1] + 1;
        return DT_OK;
    case DT__F_LOSS: /* input (C) or (N, C, d1..), target without the class dim; 0-d when reduced */
        if (x < 1 || nd[1] != x - 1 || at->mode < 0 || at->mode > 2) return DT_ERR_SHAPE;
        for (i = 0; i < nd[1]; i++)
            if (sh[1][i] != sh[0][i + (i >= (x >= 2))]) return DT_ERR_SHAPE;
        DT_MEMCPY(osh, sh[1], sizeof(int32_t) * (size_t)nd[1]);
        *ond = at->mode ? 0 : nd[1];
        return DT_OK;
#endif
    default: return DT_ERR_UNSUPPORTED;
    }
}

static int dt__prop_einsum(const dt_spec *const *args, int nargs, int op, dt_op_strategy *best)
{
    const dt_placement(*opts)[3] = op == DT_ATEN_BMM ? dt__bmm_opts : dt__mm_opts;
    int lin = op == DT_ATEN_LINEAR, li = lin ? 0 : nargs - 2, ri = li + 1, bi = lin ? 2 : 0;
    int nd = args[0]->mesh->ndim, total = 1, i, md, noredist = 0;
    dt_op_strategy cand;
    int rank = best->out_ndim, nopt = lin ? rank + 2 : op == DT_ATEN_BMM ? 5 : 4;
    dt_placement lo[3];
    cand = *best;
    for (i = 0; i < nd; i++) total *= nopt;
    for (i = 0; i < total; i++) {
        int code = i;
        for (md = nd - 1; md >= 0; md--, code /= nopt) { /* itertools.product: last dim fastest */
            const dt_placement *o = opts[code % nopt];
            if (lin) {
                dt__linear_opt(code % nopt, rank, lo);
                o = lo;
            }
            cand.out[md] = o[0];
            cand.in[li][md] = o[1];
            cand.in[ri][md] = o[2];
            if (nargs == 3) { /* the bias follows the output (map_placements_after_broadcast) */
                dt_placement p = o[0];
                if (p.kind == DT_KIND_SHARD) {
                    int k = dt__bdim(args[bi], best->out_shape, rank, p.arg);
                    if (k < 0) p.kind = DT_KIND_REPLICATE;
                    p.arg = (int16_t)(k < 0 ? 0 : k);
                }
                cand.in[bi][md] = p;
            }
        }
        dt__consider(args, nargs, &cand, best, &noredist);
        best->count = cand.count;
    }
    return best->index < 0 ? DT_ERR_NO_STRATEGY : DT_OK;
}

/* The Partial that a pointwise op's output keeps from Partial p of its followed input fi,
   or Replicate (torch's linear_pointwise_ops, non_decreasing_unary_ops and neg_ops):
   sum/avg through add, sub, mul, the numerator of div, mul/div.Scalar and neg; max/min
   through the non-decreasing relu, exp, tanh and sigmoid, swapped by neg; none through
   gelu and add/sub.Scalar. */
static dt_placement dt__pw_partial(int op, int fi, dt_placement p)
{
    int lin = p.arg == DT_SUM || p.arg == DT_AVG, mono = p.arg == DT_MAX || p.arg == DT_MIN, keep = lin;
    switch (op) {
    case DT_ATEN_NEG:
        if (mono) p.arg = (int16_t)(p.arg == DT_MAX ? DT_MIN : DT_MAX);
        keep = lin || mono;
        break;
    case DT_ATEN_RELU:
    case DT_ATEN_EXP:
    case DT_ATEN_TANH:
    case DT_ATEN_SIGMOID: keep = mono; break;
    case DT_ATEN_DIV: keep = lin && fi == 0; break;
    case DT_ATEN_ADD:
    case DT_ATEN_SUB:
    case DT_ATEN_MUL:
    case DT_ATEN_MUL_SCALAR:
    case DT_ATEN_DIV_SCALAR: break;
    default: keep = 0; break;
    }
    if (!keep) p.kind = p.arg = 0;
    return p;
}

static int dt__prop_pointwise(const dt_spec *const *args, int nargs, int op, dt_op_strategy *best)
{
    const dt_spec *f;
    int i, md, fi = 0, nd = args[0]->mesh->ndim, noredist = 0;
    dt_op_strategy cand;
    for (i = 1; i < nargs; i++) /* the input with the most shards (the shapes are one) */
        if (dt__num_shards(args[i]->mesh, args[i]->placements) > dt__num_shards(args[fi]->mesh, args[fi]->placements))
            fi = i;
    f = args[fi];
    cand = *best;
    for (md = 0; md < nd; md++) {
        dt_placement p = f->placements[md];
        if (p.kind == DT_KIND_PARTIAL) p = dt__pw_partial(op, fi, p);
        cand.out[md] = p;
        for (i = 0; i < nargs; i++) {
            dt_placement q = p;
            if (i == fi)
                q = f->placements[md].kind == DT_KIND_PARTIAL && p.kind == DT_KIND_PARTIAL ? f->placements[md] : p;
            /* mul/div: only the followed input stays Partial, the others are replicated */
            else if (q.kind == DT_KIND_PARTIAL && (op == DT_ATEN_MUL || op == DT_ATEN_DIV))
                q.kind = q.arg = 0;
            cand.in[i][md] = q;
        }
    }
    dt__consider(args, nargs, &cand, best, &noredist);
    best->count = cand.count;
    return best->index < 0 ? DT_ERR_NO_STRATEGY : DT_OK;
}

/* torch's replicate_reduction_dims and _replicate_dims_start_at: every Partial and every
   Shard of a dim in mask (bit d: tensor dim d) becomes Replicate. */
static void dt__repl(const dt_placement *src, int nd, uint32_t mask, dt_placement *dst)
{
    int md;
    for (md = 0; md < nd; md++) {
        dt_placement p = src[md];
        if (p.kind == DT_KIND_PARTIAL || (p.kind == DT_KIND_SHARD && (mask >> p.arg & 1u))) p.kind = p.arg = 0;
        dst[md] = p;
    }
}

/* The one candidate of a reduction, softmax or norm (torch follows the input's own
   strategy, no is_tensor_shardable filter): an input already in place costs nothing. */
static int dt__prop_one(const dt_spec *const *args, int nargs, dt_op_strategy *cand, dt_op_strategy *best)
{
    int i;
    double c;
    cand->cost_us = 0.0;
    for (i = 0; i < nargs; i++) {
        if (!memcmp(args[i]->placements, cand->in[i], sizeof(dt_placement) * (size_t)args[i]->mesh->ndim)) continue;
        c = dt__redist_cost(args[i], cand->in[i]);
        if (c < 0.0) return DT_ERR_NO_STRATEGY;
        cand->cost_us += c;
    }
    cand->count = 1;
    cand->index = 0;
    *best = *cand;
    return DT_OK;
}

/* common_reduction_strategy with map_placements_after_reduction: sum, mean, max, min and
   amax are reduction-linear (a Shard of a reduced dim becomes Partial(sum/avg/max/min),
   a Partial of the same op stays) unless the input holds another Partial or, for mean,
   a reduced dim is unevenly sharded (is_tensor_evenly_shardable_on_dim); then, as for
   argmax, every Partial and the reduced dims are replicated first. */
static int dt__prop_reduce(const dt_spec *const *args, int op, const dt_op_attrs *at, uint32_t mask,
                           dt_op_strategy *best)
{
    static const signed char red[6] = {DT_SUM, DT_AVG, DT_MAX, DT_MIN, DT_MAX, -1};
    const dt_spec *x = args[0];
    dt_op_strategy cand;
    int nd = x->mesh->ndim, md, d, o, r = (int)red[op - DT_ATEN_SUM], lin = r >= 0;
    for (d = 0; d < x->ndim; d++) /* the global max of nothing (an empty local piece gives -inf) */
        if ((mask >> d & 1u) && !x->shape[d] && op >= DT_ATEN_MAX) return DT_ERR_SHAPE;
    if (op == DT_ATEN_ARGMAX) best->out_dtype = MB_I32;
    for (md = 0; md < nd; md++) {
        dt_placement p = x->placements[md];
        if (p.kind == DT_KIND_PARTIAL && p.arg != r) lin = 0;
        if (op == DT_ATEN_MEAN && p.kind == DT_KIND_SHARD && (mask >> p.arg & 1u)) {
            int32_t n = x->shape[p.arg];
            for (d = 0; d < nd; d++)
                if (dt__is_shard(x->placements[d], p.arg)) {
                    if (n % x->mesh->shape[d]) lin = 0;
                    n /= x->mesh->shape[d];
                }
        }
    }
    cand = *best;
    if (lin)
        DT_MEMCPY(cand.in[0], x->placements, sizeof cand.in[0]);
    else
        dt__repl(x->placements, nd, mask, cand.in[0]);
    for (md = 0; md < nd; md++) {
        dt_placement p = cand.in[0][md];
        if (p.kind == DT_KIND_SHARD && (mask >> p.arg & 1u)) {
            p.kind = DT_KIND_PARTIAL;
            p.arg = (int16_t)r;
        } else if (p.kind == DT_KIND_SHARD && !at->keepdim) {
            for (o = p.arg, d = 0; d < p.arg; d++) o -= (int)(mask >> d & 1u);
            p.arg = (int16_t)o;
        }
        cand.out[md] = p;
    }
    return dt__prop_one(args, 1, &cand, best);
}

/* softmax_strategy: the softmax dim replicated (and every Partial), other shards kept.
   layer_norm / rms_norm (_common_norm_forward_strategy): x replicated on the normalized
   dims (and every Partial), weight and bias replicated; the output follows x. */
static int dt__prop_softmax_norm(const dt_spec *const *args, int nargs, uint32_t mask, dt_op_strategy *best)
{
    const dt_spec *x = args[0];
    dt_op_strategy cand;
    int nd = x->mesh->ndim, i;
    cand = *best;
    dt__repl(x->placements, nd, mask, cand.in[0]);
    DT_MEMCPY(cand.out, cand.in[0], sizeof cand.out);
    for (i = 1; i < nargs; i++) dt__repl(args[i]->placements, nd, ~0u, cand.in[i]);
    return dt__prop_one(args, nargs, &cand, best);
}

/* ---- views, embedding, losses: propagation ---- */

#if !DT_NO_MODEL_OPS
/* A dim of an n-dim tensor normalised, where a 0-d tensor takes dim 0 / -1 (torch wraps
   scalars); < 0 when out of range. */
static int dt__vdim(int32_t d, int n)
{
    return mb_normalize_dim(d, n ? n : 1);
}

/* transpose / permute: the input dim of each output dim; DT_ERR_SHAPE on bad dims. */
static int dt__perm(int op, const dt_op_attrs *at, int n, int32_t *perm)
{
    int i, a = dt__vdim(at->dim, n), b = dt__vdim(at->dim2, n);
    uint32_t seen = 0;
    for (i = 0; i < n; i++) perm[i] = i;
    if (op == DT_ATEN_TRANSPOSE) {
        if (a < 0 || b < 0) return DT_ERR_DIM;
        if (n) {
            perm[a] = b;
            perm[b] = a;
        }
        return DT_OK;
    }
    if (at->ndim != n) return DT_ERR_SHAPE;
    for (i = 0; i < n; i++) {
        a = dt__vdim(at->shape[i], n);
        if (a < 0 || (seen >> a & 1u)) return DT_ERR_DIM;
        seen |= 1u << a;
        perm[i] = a;
    }
    return DT_OK;
}

/* view/reshape's target shape with one -1 inferred (infer_size) into to[]. The product of
   the given sizes stops at total + 1 once it passes total (it can then only mismatch), so
   no size list overflows it. */
static int dt__infer(const dt_op_attrs *at, int64_t total, int32_t *to)
{
    int i, neg = -1, zero = 0;
    int64_t p = 1;
    if (at->ndim < 0 || at->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
    for (i = 0; i < at->ndim; i++) {
        to[i] = at->shape[i];
        if (to[i] == -1 && neg < 0)
            neg = i;
        else if (to[i] < 0)
            return DT_ERR_SHAPE;
        else if (!to[i])
            zero = 1;
        else
            p = p > total / to[i] ? total + 1 : p * to[i];
    }
    if (zero) p = 0;
    if (neg >= 0) {
        if (!p || total % p) return DT_ERR_SHAPE;
        to[neg] = (int32_t)(total / p);
    } else if (p != total) {
        return DT_ERR_SHAPE;
    }
    return DT_OK;
}

DT_OPS__DEF int dt__view_groups(const int32_t *from, int fn, const int32_t *to, int tn, dt__vgroup *g)
{
    int fi = 0, ti = 0, j;
    while (fi < fn || ti < tn) {
        int f0 = fi, t0 = ti, hasf = fi < fn, hast = ti < tn;
        uint64_t f = hasf ? (uint64_t)from[fi++] : 1u, t = hast ? (uint64_t)to[ti++] : 1u;
        if (f == 1 && t != 1 && hasf) /* ([1], []): the input dim is dropped */
            ti = t0;
        else if (f != 1 && t == 1 && hast) /* ([], [1]): a new output dim */
            fi = f0;
        else
            while (f != t) {
                if (f < t && fi < fn)
                    f *= (uint64_t)from[fi++];
                else if (f > t && ti < tn)
                    t *= (uint64_t)to[ti++];
                else
                    return DT_ERR_SHAPE; /* sizes (zero sizes, say) that do not pair up */
            }
        for (j = t0; j < ti; j++) {
            g[j].f0 = (uint8_t)f0;
            g[j].f1 = (uint8_t)fi;
            g[j].t0 = (uint8_t)t0;
            g[j].t1 = (uint8_t)ti;
        }
    }
    return DT_OK;
}

DT_OPS__DEF int dt__view_shape(int op, dt_op_attrs *at, const int32_t *sh, int n, int32_t *osh, int32_t *ond)
{
    int32_t perm[MB_MAX_DIMS];
    int i, m = 0, rc, d = dt__vdim(at->dim, op == DT_ATEN_UNSQUEEZE ? n + 1 : n), e = dt__vdim(at->dim2, n);
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_PERMUTE) {
        rc = dt__perm(op, at, n, perm);
        if (rc) return rc;
        for (m = 0; m < n; m++) osh[m] = sh[perm[m]];
        if (op == DT_ATEN_PERMUTE) DT_MEMCPY(at->shape, perm, sizeof(int32_t) * (size_t)n);
    } else if (op == DT_ATEN_EXPAND) {
        if (at->ndim < n || at->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
        for (m = 0; m < at->ndim; m++) {
            int32_t want = at->shape[m];
            i = m - (at->ndim - n);
            if (i >= 0 && (want == -1 || want == sh[i])) /* InputDim */
                osh[m] = sh[i];
            else if (want >= 0 && (i < 0 || sh[i] == 1)) /* NewDim, Broadcast */
                osh[m] = want;
            else
                return DT_ERR_SHAPE;
        }
    } else if (op == DT_ATEN_VIEW || op == DT_ATEN_RESHAPE) {
        if (dt__infer(at, mb_shape_numel(sh, n), osh)) return DT_ERR_SHAPE;
        m = at->ndim;
    } else {
        if (op == DT_ATEN_UNSQUEEZE && n + 1 > MB_MAX_DIMS) return DT_ERR_SHAPE;
        if ((op == DT_ATEN_SQUEEZE && at->dim != DT_DIM_ALL && d < 0) || (op == DT_ATEN_UNSQUEEZE && d < 0) ||
            (op == DT_ATEN_FLATTEN && (d < 0 || e < d)))
            return DT_ERR_DIM;
        for (i = 0; i <= n; i++) {
            if (op == DT_ATEN_UNSQUEEZE && i == d) osh[m++] = 1;
            if (i == n) break;
            if (op == DT_ATEN_FLATTEN && i > d && i <= e)
                osh[m - 1] *= sh[i];
            else if (op != DT_ATEN_SQUEEZE || sh[i] != 1 || (at->dim != DT_DIM_ALL && i != d))
                osh[m++] = sh[i];
        }
        if (op == DT_ATEN_FLATTEN && !n) osh[m++] = 1;
    }
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_FLATTEN) at->dim2 = e; /* the dims, normalised */
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_FLATTEN || op == DT_ATEN_UNSQUEEZE ||
        (op == DT_ATEN_SQUEEZE && at->dim != DT_DIM_ALL))
        at->dim = d;
    *ond = m;
    return DT_OK;
}

/* The view op's dim map for global input shape sh (n dims): output shape and ndim, and
   src[od]: the input dim output dim od keeps a shard of; flag bits per input dim: 1 used,
   2 a flatten's non-leftmost dim, 4 a flatten's leftmost; split[id]: the first piece's size
   when its group splits into several dims. transpose and permute move dims, expand keeps
   its input dims; the others follow view_groups (dim_squeeze's, dim_unsqueeze's and
   dim_flatten's maps, except that a size-1 dim never blocks a shard). */
static DT__NOINLINE int dt__view_map(int op, const dt_op_attrs *attrs, const int32_t *sh, int n, int32_t *osh,
                                     int32_t *ond, int32_t *src, uint8_t *flag, int32_t *split)
{
    dt_op_attrs at = *attrs; /* normalised by dt__view_shape */
    dt__vgroup g[MB_MAX_DIMS];
    int i, k, j, first, rc = dt__view_shape(op, &at, sh, n, osh, ond);
    for (i = 0; i < MB_MAX_DIMS; i++) {
        src[i] = -1;
        flag[i] = 0;
        split[i] = 0;
    }
    if (rc) return rc;
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_PERMUTE) {
        for (k = 0; k < *ond; k++) {
            src[k] = op == DT_ATEN_PERMUTE ? at.shape[k] : k == at.dim ? at.dim2 : k == at.dim2 ? at.dim : k;
            flag[k] = 1;
        }
        return DT_OK;
    }
    if (op == DT_ATEN_EXPAND) {
        for (k = 0; k < *ond; k++) {
            i = k - (*ond - n);
            if (i >= 0 && osh[k] == sh[i]) { /* InputDim */
                src[k] = i;
                flag[i] = 1;
            }
        }
        return DT_OK;
    }
    if (dt__view_groups(sh, n, osh, *ond, g)) return DT_ERR_SHAPE;
    for (k = 0; k < *ond; k = g[k].t1) { /* group by group: input dims [f0, f1), output dims [k, t1) */
        int f0 = g[k].f0, f1 = g[k].f1, t1 = g[k].t1;
        for (j = f0; j < f1; j++) flag[j] = (uint8_t)(1 | (f1 - f0 < 2 ? 0 : j == f0 ? 4 : 2));
        for (first = -1, j = k; j < t1 && first < 0; j++)
            if (osh[j] != 1 || t1 - k == 1) first = j;
        if (first >= 0 && f1 > f0) src[first] = f0;
        if (t1 - k > 1 && first >= 0 && f1 > f0) split[f0] = osh[first];
    }
    return DT_OK;
}

/* reshape_strategy + propagate_shape_and_sharding: the one candidate. */
static DT__NOINLINE int dt__prop_view(const dt_spec *const *args, int op, const dt_op_attrs *at, dt_op_strategy *best)
{
    const dt_spec *a = args[0];
    int32_t src[MB_MAX_DIMS], split[MB_MAX_DIMS];
    uint8_t flag[MB_MAX_DIMS];
    int md, j, od, nd = a->mesh->ndim;
    dt_op_strategy cand;
    int rc = dt__view_map(op, at, a->shape, a->ndim, best->out_shape, &best->out_ndim, src, flag, split);
    if (rc) return rc;
    cand = *best;
    for (md = 0; md < nd; md++) {
        dt_placement p = a->placements[md];
        cand.in[0][md] = cand.out[md] = p;
        if (p.kind != DT_KIND_SHARD) continue;
        {
            int d = p.arg, uneven, keep;
            int32_t k = 1;
            for (j = 0; j < nd; j++)
                if (dt__is_shard(a->placements[j], d)) k *= a->mesh->shape[j];
            uneven = (flag[d] & 4) && a->shape[d] % k;
            if (op == DT_ATEN_VIEW && ((flag[d] & 2) || uneven)) return DT_ERR_NO_STRATEGY;
            od = 0;
            while (od < best->out_ndim && src[od] != d) od++;
            keep = (flag[d] & 1) && !(flag[d] & 2) && !uneven && !(split[d] % k) && od < best->out_ndim;
            cand.in[0][md].kind = cand.out[md].kind = (int16_t)(keep ? DT_KIND_SHARD : DT_KIND_REPLICATE);
            cand.in[0][md].arg = (int16_t)(keep ? d : 0);
            cand.out[md].arg = (int16_t)(keep ? od : 0);
        }
    }
    return dt__prop_one(args, 1, &cand, best);
}

/* embedding_strategy: per mesh dim R; colwise; rowwise (MaskPartial); batch per indices dim. */
static DT__NOINLINE int dt__prop_embed(const dt_spec *const *args, dt_op_strategy *best)
{
    const dt_spec *w = args[0], *ix = args[1];
    int ni = ix->ndim, nopt = 3 + ni, nd = w->mesh->ndim, total = 1, i, md, noredist = 0;
    dt_op_strategy cand;
    cand = *best;
    for (i = 0; i < nd; i++) total *= nopt;
    for (i = 0; i < total; i++) {
        int code = i, skip = 0;
        for (md = nd - 1; md >= 0; md--, code /= nopt) { /* itertools.product: last dim fastest */
            int o = code % nopt;
            dt_placement po = DT__R, pw = DT__R, pi = DT__R;
            if (o == 1) { /* colwise */
                po.kind = pw.kind = DT_KIND_SHARD;
                po.arg = (int16_t)ni;
                pw.arg = 1;
            } else if (o == 2) { /* rowwise: MaskPartial out of replicated indices */
                po.kind = DT_KIND_PARTIAL;
                pw.kind = DT_KIND_SHARD;
                skip |= ix->placements[md].kind == DT_KIND_SHARD;
            } else if (o > 2) { /* batch */
                po.kind = pi.kind = DT_KIND_SHARD;
                po.arg = pi.arg = (int16_t)(o - 3);
            }
            cand.out[md] = po;
            cand.in[0][md] = pw;
            cand.in[1][md] = pi;
        }
        if (!skip) dt__consider(args, 2, &cand, best, &noredist);
    }
    best->count = cand.count;
    return best->index < 0 ? DT_ERR_NO_STRATEGY : DT_OK;
}

/* nll_loss_forward_strategy (cross_entropy: log_softmax's, then it). */
static DT__NOINLINE int dt__prop_loss(const dt_spec *const *args, const dt_op_attrs *at, dt_op_strategy *best)
{
    const dt_spec *x = args[0], *t = args[1];
    int c = x->ndim >= 2, i, md, nd = x->mesh->ndim;
    dt_op_strategy cand;
    cand = *best;
    for (md = 0; md < nd; md++) {
        dt_placement p = x->placements[md], q;
        if (p.kind == DT_KIND_PARTIAL || dt__is_shard(p, c)) p.kind = p.arg = 0; /* replicate_reduction_dims */
        q = p;
        if (q.kind == DT_KIND_SHARD && q.arg > c) q.arg--;
        cand.in[0][md] = p;
        cand.in[1][md] = cand.out[md] = q;
    }
    for (md = 0; at->mode && md < nd; md++) { /* map_placements_after_reduction */
        dt_placement q = cand.in[1][md];
        int32_t k = 1;
        if (q.kind != DT_KIND_SHARD) continue;
        for (i = 0; i < nd; i++)
            if (dt__is_shard(cand.in[1][i], q.arg)) k *= x->mesh->shape[i];
        if (at->mode == 1 && t->shape[q.arg] % k) return DT_ERR_NO_STRATEGY; /* is_tensor_evenly_shardable */
        cand.out[md].kind = DT_KIND_PARTIAL;
        cand.out[md].arg = (int16_t)(at->mode == 1 ? DT_AVG : DT_SUM);
    }
    return dt__prop_one(args, 2, &cand, best);
}

#endif /* DT_NO_MODEL_OPS */

/* op known and nargs in its range. */
static int dt__op_ok(int op, int nargs)
{
    return op >= 0 && op < DT_ATEN_COUNT && nargs >= dt__ops[op].nmin && nargs <= dt__ops[op].nmax;
}

/* The operand dtype op expects at position i. */
static int dt__op_dtype(int op, int i)
{
    return (dt__ops[op].index_args >> i) & 1 ? MB_I32 : MB_F32;
}

/* The family's rule: best->op/nargs/index=-1 set, the rest zero (out_dtype MB_F32). */
static DT__NOINLINE int dt__prop_family(const dt_spec *const *args, int nargs, int op, const dt_op_attrs *at,
                                        dt_op_strategy *best)
{
    const int32_t *sh[DT_MAX_OP_ARGS];
    int32_t nd[DT_MAX_OP_ARGS];
    uint32_t mask = 0;
    int i, fam = dt__ops[op].family, rc = DT_OK;
    for (i = 0; i < nargs; i++) {
        sh[i] = args[i]->shape;
        nd[i] = args[i]->ndim;
    }
    if (fam != DT__F_VIEW) rc = dt__op_shape(op, at, sh, nd, nargs, best->out_shape, &best->out_ndim, &mask);
    if (rc) return rc;
    switch (fam) {
    case DT__F_EINSUM: return dt__prop_einsum(args, nargs, op, best);
    case DT__F_POINTWISE: return dt__prop_pointwise(args, nargs, op, best);
    case DT__F_REDUCE: return dt__prop_reduce(args, op, at, mask, best);
    case DT__F_SOFTMAX:
    case DT__F_NORM: return dt__prop_softmax_norm(args, nargs, mask, best);
#if !DT_NO_MODEL_OPS
    case DT__F_VIEW: return dt__prop_view(args, op, at, best);
    case DT__F_EMBED: return dt__prop_embed(args, best);
    case DT__F_LOSS: return dt__prop_loss(args, at, best);
#endif
    default: return DT_ERR_UNSUPPORTED;
    }
}

/* Every spec valid, on one mesh, of the dtype op expects. */
static int dt__args_check(int op, const dt_spec *const *args, int nargs)
{
    int i, rc;
    for (i = 0; i < nargs; i++) {
        rc = args[i] ? dt_spec_check(args[i]) : DT_ERR_NULL;
        if (rc) return rc;
        if (!dt__mesh_same(args[i]->mesh, args[0]->mesh)) return DT_ERR_MISMATCH;
        if ((int)args[i]->dtype != dt__op_dtype(op, i)) return DT_ERR_DTYPE;
    }
    return DT_OK;
}

DT_OPS__DEF int dt_propagate(dt_op_cache *c, int op, const dt_op_attrs *attrs, const dt_spec *const *args, int nargs,
                             dt_op_strategy *s)
{
    dt_op_key k;
    dt_op_attrs at;
    dt_op_strategy best;
    dt_op_entry *e, *victim = 0;
    int i, rc;
    if (!args || !s) return DT_ERR_NULL;
    if (!dt__op_ok(op, nargs)) return DT_ERR_PLACEMENT_COUNT;
    rc = dt__args_check(op, args, nargs);
    if (rc) return rc;
    if (!attrs) {
        DT_MEMSET(&at, 0, sizeof at);
        attrs = &at;
    }
    DT_MEMSET(&k, 0, sizeof k);
    k.op = op;
    k.nargs = nargs;
    DT_MEMCPY(k.attrs, attrs, sizeof k.attrs);
    DT_MEMCPY(k.mesh, args[0]->mesh, sizeof k.mesh);
    for (i = 0; i < nargs; i++) DT_MEMCPY(k.arg[i], args[i]->placements, sizeof k.arg[i]);
    if (c && c->entries) {
        i = dt__lru(c->entries, sizeof *e, sizeof k, offsetof(dt_op_entry, stamp), c->count, c->capacity, 0, &k);
        if (i == INT32_MIN) return DT_ERR_VALUE;
        if (i >= 0) {
            e = &c->entries[i];
            c->hits++;
            e->stamp = ++c->clock;
            *s = e->s;
            return DT_OK;
        }
        victim = &c->entries[-1 - i];
    }
    DT_MEMSET(&best, 0, sizeof best);
    best.op = op;
    best.nargs = nargs;
    best.index = -1;
    best.out_dtype = MB_F32;
    rc = dt__prop_family(args, nargs, op, attrs, &best);
    if (rc) {
        if (c && rc == DT_ERR_NO_STRATEGY) c->failed_op = op;
        return rc;
    }
    if (victim) {
        if (victim == &c->entries[c->count]) c->count++;
        victim->key = k;
        victim->s = best;
        victim->stamp = ++c->clock;
        c->misses++;
    }
    *s = best;
    return DT_OK;
}

/* ---- kernels ---- */

/* y[0..DT_MM_BLOCK) += a * b[..], y2[..] += a2 * b[..]: the matmul's inner loop, a constant
   trip count and restrict parameters (gcc -O2's cost model vectorises only loops that
   need neither a scalar epilogue nor a run-time alias check). */
static void dt__axpy2(float *DT_RESTRICT y, float *DT_RESTRICT y2, const float *DT_RESTRICT b, float a, float a2)
{
    int32_t j;
    for (j = 0; j < DT_MM_BLOCK; j++) {
        y[j] += a * b[j];
        y2[j] += a2 * b[j];
    }
}

/* y[m,n] (+)= a[m,k] @ b[k,n], blocked over k and n; strides in elements. A full block of
   a unit-stride b row goes through dt__axpy2, two rows of a at a time (each b row loaded
   once for both). */
static void dt__mm(float *DT_RESTRICT y, int32_t ys, const float *DT_RESTRICT a, int32_t as0, int32_t as1,
                   const float *DT_RESTRICT b, int32_t bs0, int32_t bs1, int32_t m, int32_t n, int32_t k)
{
    int32_t i, j, p, kb, nb, ke, ne;
    for (kb = 0; kb < k; kb += DT_MM_BLOCK) {
        ke = kb + DT_MM_BLOCK < k ? kb + DT_MM_BLOCK : k;
        for (nb = 0; nb < n; nb += DT_MM_BLOCK) {
            ne = nb + DT_MM_BLOCK < n ? nb + DT_MM_BLOCK : n;
            for (i = 0; i < m; i++) {
                float *DT_RESTRICT yr = y + (size_t)i * (size_t)ys + nb;
                const float *ar = a + (size_t)i * (size_t)as0;
                if (bs1 == 1 && ne - nb == DT_MM_BLOCK && i + 1 < m) { /* two rows, full block */
                    float *DT_RESTRICT yr2 = yr + ys;
                    for (p = kb; p < ke; p++) {
                        const float av = ar[(size_t)p * (size_t)as1], av2 = ar[(size_t)as0 + (size_t)p * (size_t)as1];
                        dt__axpy2(yr, yr2, b + (size_t)p * (size_t)bs0 + nb, av, av2);
                    }
                    i++;
                    continue;
                }
                for (p = kb; p < ke; p++) {
                    const float av = ar[(size_t)p * (size_t)as1];
                    const float *DT_RESTRICT br = b + (size_t)p * (size_t)bs0;
                    if (bs1 == 1)
                        for (j = 0; j < ne - nb; j++) yr[j] += av * br[nb + j];
                    else
                        for (j = nb; j < ne; j++) yr[j - nb] += av * br[(size_t)j * (size_t)bs1];
                }
            }
        }
    }
}

/* y[m,n] += a[m,k] @ w[n,k]^T for unit-stride rows of a and w (linear's x @ w^T without
   materialising the transpose): dot products of rows, eight partial sums per dot
   (vectorised by gcc -O2 as one 8-lane block), blocked over n. */
static void dt__mm_nt(float *DT_RESTRICT y, int32_t ys, const float *DT_RESTRICT a, int32_t as0,
                      const float *DT_RESTRICT w, int32_t ws0, int32_t m, int32_t n, int32_t k)
{
    int32_t i, j, p, q, nb, ne;
    for (nb = 0; nb < n; nb += DT_MM_BLOCK) {
        ne = nb + DT_MM_BLOCK < n ? nb + DT_MM_BLOCK : n;
        for (i = 0; i < m; i++) {
            const float *DT_RESTRICT ar = a + (size_t)i * (size_t)as0;
            for (j = nb; j < ne; j++) {
                const float *DT_RESTRICT wr = w + (size_t)j * (size_t)ws0;
                float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, sum;
                for (p = 0; p + 8 <= k; p += 8)
                    for (q = 0; q < 8; q++) acc[q] += ar[p + q] * wr[p + q];
                sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
                for (; p < k; p++) sum += ar[p] * wr[p];
                y[(size_t)i * (size_t)ys + (size_t)j] += sum;
            }
        }
    }
}

/* Element i (row-major) of t. */
DT_OPS__DEF float dt__at(const mb_tensor *t, int32_t i)
{
    size_t off = 0;
    int d;
    for (d = t->ndim - 1; d >= 0; d--) {
        off += (size_t)(i % t->shape[d]) * (size_t)t->stride[d];
        i /= t->shape[d];
    }
    return ((const float *)t->data)[off];
}

DT_OPS__DEF int dt__contig(const mb_tensor *t)
{
    int32_t d, s = 1;
    for (d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != s) return 0;
        s *= t->shape[d];
    }
    return 1;
}

/* y (n elements, rows of nn) = the bias c broadcast (1-D, or 2-D for addmm), or 0. */
static void dt__einsum_init(float *DT_RESTRICT y, int32_t n, int32_t nn, const mb_tensor *c)
{
    int32_t i;
    if (!c) {
        for (i = 0; i < n; i++) y[i] = 0.0f;
        return;
    }
    for (i = 0; i < n; i++) {
        int32_t row = i / (nn ? nn : 1), col = i % (nn ? nn : 1);
        size_t off = (size_t)(c->shape[c->ndim - 1] == 1 ? 0 : col) * (size_t)c->stride[c->ndim - 1];
        if (c->ndim == 2 && c->shape[0] != 1) off += (size_t)row * (size_t)c->stride[0];
        y[i] = ((const float *)c->data)[off];
    }
}

/* mm, addmm, bmm, linear. */
static int dt__kernel_einsum(int op, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    float *DT_RESTRICT y = (float *)out->data;
    int lin = op == DT_ATEN_LINEAR, bt = op == DT_ATEN_BMM, r = out->ndim - 1, d, dl = -1;
    const mb_tensor *a = in[lin ? 0 : nin - 2], *b = in[lin ? 1 : nin - 1], *c = nin == 3 ? in[lin ? 2 : 0] : 0;
    int32_t n = (int32_t)mb_numel(out), nn = out->shape[r], k = a->shape[r], m = out->shape[r - 1], bi, batches = 1;
    int32_t as0 = a->stride[r - 1], bs0 = b->stride[bt], bs1 = b->stride[bt + 1];
    dt__einsum_init(y, n, nn, c);
    if (lin) { /* x's leading dims: one block of rows when they collapse, else a batch each */
        bs0 = b->stride[1];
        bs1 = b->stride[0];
        for (dl = r - 2; dl >= 0 && a->stride[dl] == a->stride[dl + 1] * a->shape[dl + 1]; dl--) m *= a->shape[dl];
        for (d = dl; d >= 0; d--) batches *= a->shape[d];
    } else if (bt) {
        batches = out->shape[0];
    }
    for (bi = 0; bi < batches; bi++) {
        const float *ap = (const float *)a->data, *bp = (const float *)b->data;
        float *yp = y + (size_t)bi * (size_t)m * (size_t)nn;
        if (bt) {
            ap += (size_t)bi * (size_t)a->stride[0];
            bp += (size_t)bi * (size_t)b->stride[0];
        } else if (batches > 1) { /* linear: batch bi of the dims before the rows */
            int32_t q = bi;
            for (d = dl; d >= 0; d--) {
                ap += (size_t)(q % a->shape[d]) * (size_t)a->stride[d];
                q /= a->shape[d];
            }
        }
        if (lin && a->stride[r] == 1 && bs0 == 1)
            dt__mm_nt(yp, nn, ap, as0, bp, b->stride[0], m, nn, k);
        else
            dt__mm(yp, nn, ap, as0, a->stride[r], bp, bs0, bs1, m, nn, k);
    }
    return DT_OK;
}

/* add, sub, mul, div, neg, relu. */
static int dt__kernel_pointwise(int op, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    float *DT_RESTRICT y = (float *)out->data;
    int32_t i, n = (int32_t)mb_numel(out);
    if (dt__contig(in[0]) && (nin < 2 || dt__contig(in[1]))) { /* the usual case: flat loops */
        const float *DT_RESTRICT a = (const float *)in[0]->data,
                                 *DT_RESTRICT b = nin > 1 ? (const float *)in[1]->data : a;
        switch (op) {
        case DT_ATEN_ADD:
            for (i = 0; i < n; i++) y[i] = a[i] + b[i];
            break;
        case DT_ATEN_SUB:
            for (i = 0; i < n; i++) y[i] = a[i] - b[i];
            break;
        case DT_ATEN_MUL:
            for (i = 0; i < n; i++) y[i] = a[i] * b[i];
            break;
        case DT_ATEN_DIV:
            for (i = 0; i < n; i++) y[i] = a[i] / b[i];
            break;
        case DT_ATEN_NEG:
            for (i = 0; i < n; i++) y[i] = -a[i];
            break;
        default:
            for (i = 0; i < n; i++) y[i] = a[i] > 0.0f ? a[i] : 0.0f;
            break;
        }
        return DT_OK;
    }
    for (i = 0; i < n; i++) {
        float a = dt__at(in[0], i), b = nin > 1 ? dt__at(in[1], i) : 0.0f;
        y[i] = op == DT_ATEN_ADD   ? a + b
               : op == DT_ATEN_SUB ? a - b
               : op == DT_ATEN_MUL ? a * b
               : op == DT_ATEN_DIV ? a / b
               : op == DT_ATEN_NEG ? -a
                                   : (a > 0.0f ? a : 0.0f);
    }
    return DT_OK;
}

/* gelu (attrs mode 0: erf, 1: tanh approximation, as torch's approximate), exp, tanh,
   sigmoid and add/sub/mul/div.Scalar (attrs scalar) on one element. */
static float dt__unary(int op, const dt_op_attrs *at, float x)
{
    switch (op) {
    case DT_ATEN_GELU:
        return at->mode ? 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)))
                        : 0.5f * x * (1.0f + erff(x * 0.70710678118f));
    case DT_ATEN_EXP: return expf(x);
    case DT_ATEN_TANH: return tanhf(x);
    case DT_ATEN_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case DT_ATEN_CLAMP: return x < at->scalar ? at->scalar : x > at->scalar2 ? at->scalar2 : x;
    case DT_ATEN_ADD_SCALAR: return x + at->scalar;
    case DT_ATEN_SUB_SCALAR: return x - at->scalar;
    case DT_ATEN_MUL_SCALAR: return x * at->scalar;
    default: return x / at->scalar;
    }
}

static int dt__kernel_unary(int op, const dt_op_attrs *at, mb_tensor *out, const mb_tensor *x)
{
    float *DT_RESTRICT y = (float *)out->data;
    int32_t i, n = (int32_t)mb_numel(out);
    if (dt__contig(x)) {
        const float *DT_RESTRICT a = (const float *)x->data;
        for (i = 0; i < n; i++) y[i] = dt__unary(op, at, a[i]);
    } else {
        for (i = 0; i < n; i++) y[i] = dt__unary(op, at, dt__at(x, i));
    }
    return DT_OK;
}

/* Offset of t's element at row-major index i over dims [lo, hi) (index 0 elsewhere). */
static size_t dt__off(const mb_tensor *t, int lo, int hi, int32_t i)
{
    size_t off = 0;
    int d;
    for (d = hi - 1; d >= lo; d--) {
        off += (size_t)(i % t->shape[d]) * (size_t)t->stride[d];
        i /= t->shape[d];
    }
    return off;
}

/* Reductions, softmax, log_softmax and the norms: x seen as (outer, r, inner) around the
   dims [lo, hi) being reduced or normalized (one dim, every dim, or the last attrs ndim
   for the norms); per (outer, inner) position, the r elements at base + k * step (step 0
   when [lo, hi) does not collapse into one stride: dt__off). out is contiguous: one
   element per position for reductions, r for the others. Pass 1: sum, or max (min)
   with its first index (NaN propagates); pass 2: sum of exp(x - max) (softmax) or of
   (x - mean)^2 (norms; mean 0 for rms_norm); pass 3 writes. */
static int dt__kernel_rows(int op, const dt_op_attrs *at, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    const mb_tensor *x = in[0];
    const float *xs = (const float *)x->data;
    float *y = (float *)out->data;
    int lo = 0, hi = x->ndim, d, norm = op >= DT_ATEN_LAYER_NORM, sm = !norm && op >= DT_ATEN_SOFTMAX;
    int32_t o, i, k, outer, inner, r, step, best;
    if (norm) { /* dt__kernel_check: the dims and the weight's and bias's shapes fit */
        lo = x->ndim - at->ndim;
    } else if (at->dim != DT_DIM_ALL || sm) {
        lo = mb_normalize_dim(at->dim, x->ndim);
        hi = lo + 1;
    }
    outer = (int32_t)mb_shape_numel(x->shape, lo);
    r = (int32_t)mb_shape_numel(x->shape + lo, hi - lo);
    inner = (int32_t)mb_shape_numel(x->shape + hi, x->ndim - hi);
    step = hi > lo ? x->stride[hi - 1] : 0;
    for (d = lo + 1; d < hi; d++)
        if (x->stride[d - 1] != x->stride[d] * x->shape[d]) step = 0;
    for (o = 0; o < outer; o++)
        for (i = 0; i < inner; i++) {
            const float *b = xs + dt__off(x, 0, lo, o) + dt__off(x, hi, x->ndim, i);
            int add = norm || op == DT_ATEN_SUM || op == DT_ATEN_MEAN;
            float acc = add ? 0.0f : op == DT_ATEN_MIN ? INFINITY : -INFINITY, e = 0.0f, m;
#define DT__X(k) b[step ? (size_t)(k) * (size_t)step : dt__off(x, lo, hi, k)]
            for (best = 0, k = 0; k < r; k++) {
                float v = DT__X(k);
                if (add)
                    acc += v;
                else if ((op == DT_ATEN_MIN ? v < acc : v > acc) || (v != v && acc == acc))
                    acc = v, best = k;
            }
            if (!norm && !sm) {
                if (op == DT_ATEN_ARGMAX)
                    ((int32_t *)out->data)[o * inner + i] = best;
                else
                    y[o * inner + i] = op == DT_ATEN_MEAN ? acc / (float)r : acc;
                continue;
            }
            m = op == DT_ATEN_RMS_NORM ? 0.0f : norm ? acc / (float)r : acc; /* the mean, or the max */
            for (k = 0; k < r; k++) {
                float v = DT__X(k) - m;
                e += sm ? expf(v) : v * v;
            }
            acc = norm ? 1.0f / sqrtf(e / (float)r + at->scalar) : 0.0f; /* rstd */
            for (k = 0; k < r; k++) {
                float v = DT__X(k) - m;
                y[(o * r + k) * inner + i] = op == DT_ATEN_SOFTMAX ? expf(v) / e
                                             : sm                  ? v - logf(e)
                                                  : v * acc * dt__at(in[1], k) + (nin > 2 ? dt__at(in[2], k) : 0.0f);
            }
#undef DT__X
        }
    return DT_OK;
}

/* ---- views, embedding, losses: kernels ---- */
#if !DT_NO_MODEL_OPS

/* Strides of the view of x with shape osh (ond dims) in ost (torch's computeStride);
   DT_ERR_SHAPE when x's strides do not allow one. */
static int dt__restride(const mb_tensor *x, const int32_t *osh, int ond, int32_t *ost)
{
    int td, vd = ond - 1;
    int64_t tn = 1, vn = 1, base;
    if (!x->ndim || !(int32_t)mb_numel(x)) { /* contiguous strides do */
        for (tn = 1, vd = ond - 1; vd >= 0; tn *= osh[vd--]) ost[vd] = (int32_t)tn;
        return DT_OK;
    }
    base = x->stride[x->ndim - 1];
    for (td = x->ndim - 1; td >= 0; td--) {
        tn *= x->shape[td];
        if (td == 0 || (x->shape[td - 1] != 1 && x->stride[td - 1] != tn * base)) {
            while (vd >= 0 && (vn < tn || osh[vd] == 1)) {
                ost[vd] = (int32_t)(vn * base);
                vn *= osh[vd--];
            }
            if (vn != tn) return DT_ERR_SHAPE;
            if (td > 0) {
                base = x->stride[td - 1];
                tn = vn = 1;
            }
        }
    }
    return vd == -1 ? DT_OK : DT_ERR_SHAPE;
}

/* v = the view op applied to the local tensor x, with output shape osh (ond dims): a
   strided view of x's memory; DT_ERR_SHAPE when there is none. */
static DT__NOINLINE int dt__view_local(int op, const dt_op_attrs *at, const mb_tensor *x, const int32_t *osh, int ond,
                                       mb_tensor *v)
{
    int32_t perm[MB_MAX_DIMS];
    int i, d;
    *v = *x;
    v->ndim = ond;
    if (ond < 0 || ond > MB_MAX_DIMS) return DT_ERR_SHAPE;
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_PERMUTE) {
        if (ond != x->ndim || dt__perm(op, at, x->ndim, perm)) return DT_ERR_SHAPE;
        for (i = 0; i < ond; i++) {
            v->shape[i] = x->shape[perm[i]];
            v->stride[i] = x->stride[perm[i]];
        }
    } else if (op == DT_ATEN_EXPAND) {
        for (i = 0; i < ond; i++) {
            d = i - (ond - x->ndim);
            if (d >= 0 && x->shape[d] != osh[i] && x->shape[d] != 1) return DT_ERR_SHAPE;
            v->shape[i] = osh[i];
            v->stride[i] = d >= 0 && x->shape[d] == osh[i] ? x->stride[d] : 0;
        }
    } else {
        for (i = 0; i < ond; i++) v->shape[i] = osh[i];
        if ((int32_t)mb_numel(x) != (int32_t)mb_numel(v) || dt__restride(x, osh, ond, v->stride)) return DT_ERR_SHAPE;
    }
    for (i = 0; i < ond; i++)
        if (v->shape[i] != osh[i]) return DT_ERR_SHAPE;
    return DT_OK;
}

/* The view ops: a copy through the view, or for view/reshape/flatten/squeeze/unsqueeze of
   a piece whose strides allow none, a copy in row-major order. */
static int dt__kernel_view(int op, const dt_op_attrs *at, mb_tensor *out, const mb_tensor *x)
{
    mb_tensor v;
    if (!dt__view_local(op, at, x, out->shape, out->ndim, &v)) return mb_copy(out, &v) ? DT_ERR_SHAPE : DT_OK;
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_PERMUTE || op == DT_ATEN_EXPAND ||
        (int32_t)mb_numel(x) != (int32_t)mb_numel(out) || !dt__contig(out))
        return DT_ERR_SHAPE;
    v = *x; /* out's memory seen with x's shape */
    v.data = out->data;
    if (dt__restride(out, x->shape, x->ndim, v.stride)) return DT_ERR_SHAPE;
    return mb_copy(&v, x) ? DT_ERR_SHAPE : DT_OK;
}

/* embedding: out[..., :] = w[idx[...] - attrs.dim2, :] (masked: zero outside the piece). */
static DT__NOINLINE int dt__kernel_embed(const dt_op_attrs *at, mb_tensor *out, const mb_tensor *w, const mb_tensor *ix)
{
    float *DT_RESTRICT y = (float *)out->data;
    int32_t rows = w->shape[0], dd = w->shape[1], n = (int32_t)mb_numel(ix), i, j, r;
    int32_t off = at->mode ? at->dim2 : 0, all = at->mode ? at->shape[0] : rows;
    for (i = 0; i < n; i++) { /* every index first: bad input writes nothing */
        r = ((const int32_t *)ix->data)[dt__off(ix, 0, ix->ndim, i)];
        if (r < 0 || r >= all) return DT_ERR_RANK;
    }
    for (i = 0; i < n; i++) {
        const float *row;
        r = ((const int32_t *)ix->data)[dt__off(ix, 0, ix->ndim, i)] - off;
        row = r < 0 || r >= rows ? 0 : (const float *)w->data + (size_t)r * (size_t)w->stride[0]; /* 0: a zero row */
        for (j = 0; j < dd; j++)
            y[(size_t)i * (size_t)dd + (size_t)j] = row ? row[(size_t)j * (size_t)w->stride[1]] : 0.0f;
    }
    return DT_OK;
}

/* nll_loss / cross_entropy over the class dim c of x (1 for (N, C, d..), 0 for (C)). */
static DT__NOINLINE int dt__kernel_loss(int op, const dt_op_attrs *at, mb_tensor *out, const mb_tensor *x,
                                        const mb_tensor *t)
{
    float *y = (float *)out->data, sum = 0.0f, l, mx, e;
    const float *r;
    int c = x->ndim >= 2, d;
    int32_t cc = x->shape[c], cs = x->stride[c], n = (int32_t)mb_numel(t), i, j, q, v, cnt = 0;
    for (i = 0; i < n; i++) { /* every target first: bad input writes nothing */
        v = ((const int32_t *)t->data)[dt__off(t, 0, t->ndim, i)];
        if (v != at->ignore_index && (v < 0 || v >= cc)) return DT_ERR_RANK;
    }
    for (i = 0; i < n; i++) {
        r = (const float *)x->data; /* the class row of target position i */
        for (q = i, d = t->ndim - 1; d >= 0; q /= t->shape[d--])
            r += (size_t)(q % t->shape[d]) * (size_t)x->stride[d + (d >= c)];
        v = ((const int32_t *)t->data)[dt__off(t, 0, t->ndim, i)];
        l = 0.0f;
        if (v != at->ignore_index) {
            if (op == DT_ATEN_CROSS_ENTROPY) { /* log-sum-exp with the max subtracted */
                for (mx = r[0], j = 1; j < cc; j++)
                    mx = r[(size_t)j * (size_t)cs] > mx ? r[(size_t)j * (size_t)cs] : mx;
                for (e = 0.0f, j = 0; j < cc; j++) e += expf(r[(size_t)j * (size_t)cs] - mx);
                l = mx + logf(e);
            }
            l -= r[(size_t)v * (size_t)cs];
            sum += l;
            cnt++;
        }
        if (!at->mode) y[i] = l;
    }
    if (at->mode) y[0] = at->mode == 2 ? sum : sum / (float)cnt; /* mean of none: 0/0, NaN as torch */
    return DT_OK;
}

#endif /* DT_NO_MODEL_OPS */

static const dt_op_attrs dt__no_attrs = {0, 0, 0, 0, 0, 0, {0}, 0.0f, 0.0f};

/* dt_kernel_ref's operands: valid views of the dtypes op takes, at most INT32_MAX elements
   each (the kernels count in int32_t), out contiguous and of the shape dt__op_shape gives
   (a view op's out is checked against its input by the view kernel itself). */
static DT__NOINLINE int dt__kernel_check(int op, const dt_op_attrs *at, const mb_tensor *out,
                                         const mb_tensor *const *in, int nin)
{
    const int32_t *sh[DT_MAX_OP_ARGS];
    int32_t nd[DT_MAX_OP_ARGS], osh[MB_MAX_DIMS], ond;
    uint32_t mask;
    int i, rc, fam;
    if (!out || !in) return DT_ERR_NULL;
    if (!dt__op_ok(op, nin)) return DT_ERR_PLACEMENT_COUNT;
    fam = dt__ops[op].family;
    for (i = 0; i <= nin; i++) {
        const mb_tensor *t = i < nin ? in[i] : out;
        rc = mb_tensor_check(t);
        if (rc) return rc == MB_ERR_NULL ? DT_ERR_NULL : DT_ERR_SHAPE;
        if (mb_numel(t) > INT32_MAX) return DT_ERR_SHAPE;
        if ((int)t->dtype != (i < nin ? dt__op_dtype(op, i) : op == DT_ATEN_ARGMAX ? MB_I32 : MB_F32))
            return DT_ERR_DTYPE;
        if (i < nin) {
            sh[i] = t->shape;
            nd[i] = t->ndim;
        }
    }
    if (mb_is_contiguous(out) != 1) return DT_ERR_SHAPE;
    if (fam == DT__F_EMBED && (at->mode < 0 || at->mode > 1 || (at->mode && at->dim2 < 0))) /* MaskPartial's */
        return DT_ERR_SHAPE;
    if (fam == DT__F_VIEW) return DT_OK;
    rc = dt__op_shape(op, at, sh, nd, nin, osh, &ond, &mask);
    if (!rc && (ond != out->ndim || memcmp(osh, out->shape, sizeof(int32_t) * (size_t)ond))) rc = DT_ERR_MISMATCH;
    return rc;
}

DT_OPS__DEF int dt_kernel_ref(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    int rc;
    if (!attrs) attrs = &dt__no_attrs;
    rc = dt__kernel_check(op, attrs, out, in, nin);
    if (rc) return rc;
    switch (dt__ops[op].family) {
    case DT__F_EINSUM: return dt__kernel_einsum(op, out, in, nin);
    case DT__F_POINTWISE:
        return op <= DT_ATEN_RELU ? dt__kernel_pointwise(op, out, in, nin) : dt__kernel_unary(op, attrs, out, in[0]);
    case DT__F_REDUCE:
    case DT__F_SOFTMAX:
    case DT__F_NORM: return dt__kernel_rows(op, attrs, out, in, nin);
#if !DT_NO_MODEL_OPS
    case DT__F_VIEW: return dt__kernel_view(op, attrs, out, in[0]);
    case DT__F_EMBED: return dt__kernel_embed(attrs, out, in[0], in[1]);
    case DT__F_LOSS: return dt__kernel_loss(op, attrs, out, in[0], in[1]);
#endif
    default: break;
    }
    return DT_ERR_UNSUPPORTED;
}

#if DT_CBLAS
/* A rows x cols matrix with strides s0, s1 as a row-major BLAS operand: 0 and its
   transpose flag and leading dimension, or -1. */
static int dt__blas_mat(int32_t s0, int32_t s1, int32_t rows, int32_t cols, enum CBLAS_TRANSPOSE *t, int *ld)
{
    if (s1 == 1 && s0 >= (cols > 1 ? cols : 1))
        *t = CblasNoTrans, *ld = (int)s0;
    else if (s0 == 1 && s1 >= (rows > 1 ? rows : 1))
        *t = CblasTrans, *ld = (int)s1;
    else
        return -1;
    return 0;
}

DT_OPS__DEF int dt_kernel_cblas(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    int lin = op == DT_ATEN_LINEAR, bt = op == DT_ATEN_BMM, r, lda, ldb, d;
    enum CBLAS_TRANSPOSE ta, tb;
    const mb_tensor *a, *b;
    int32_t m, nn, k, bi, batches, bs0, bs1;
    if (!out || !in || !dt__op_ok(op, nin) || dt__ops[op].family != DT__F_EINSUM || out->ndim < 2)
        return dt_kernel_ref(op, attrs, out, in, nin);
    r = out->ndim - 1;
    a = in[lin ? 0 : nin - 2];
    b = in[lin ? 1 : nin - 1];
    m = out->shape[r - 1];
    nn = out->shape[r];
    k = a->shape[r];
    bs0 = lin ? b->stride[1] : b->stride[bt]; /* b as (k, n) */
    bs1 = lin ? b->stride[0] : b->stride[bt + 1];
    for (d = lin ? r - 2 : -1; d >= 0; d--) { /* linear: x's leading dims must collapse into rows */
        if (a->stride[d] != a->stride[d + 1] * a->shape[d + 1]) return dt_kernel_ref(op, attrs, out, in, nin);
        m *= a->shape[d];
    }
    batches = bt ? out->shape[0] : 1;
    if (!m || !nn || !k || dt__blas_mat(a->stride[r - 1], a->stride[r], m, k, &ta, &lda) ||
        dt__blas_mat(bs0, bs1, k, nn, &tb, &ldb))
        return dt_kernel_ref(op, attrs, out, in, nin);
    dt__einsum_init((float *)out->data, (int32_t)mb_numel(out), nn, nin == 3 ? in[lin ? 2 : 0] : 0);
    for (bi = 0; bi < batches; bi++)
        cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)nn, (int)k, 1.0f,
                    (const float *)a->data + (bt ? (size_t)bi * (size_t)a->stride[0] : 0), lda,
                    (const float *)b->data + (bt ? (size_t)bi * (size_t)b->stride[0] : 0), ldb, 1.0f,
                    (float *)out->data + (size_t)bi * (size_t)m * (size_t)nn, (int)nn);
    return DT_OK;
}
#endif

/* ---- dispatcher ---- */

/* The output spec of strategy st (propagation checked its placements against its shape)
   on mesh m, contiguous, into *os (NULL: not kept); y (NULL: none): a contiguous local
   tensor of its local shape over data. No dt_spec_init / mb_tensor_init: their checks cost
   more than the rest of a cache hit. DT_ERR_SHAPE when a stride would overflow int32_t. */
DT_OPS__DEF DT__NOINLINE int dt__op_out(const dt_op_strategy *st, const dt_mesh *m, dt_spec *os, mb_tensor *y,
                                        void *data)
{
    dt_spec t;
    mb_tensor l;
    int64_t g = 1, n = 1;
    int d;
    DT_MEMSET(&t, 0, sizeof t);
    t.mesh = m;
    DT_MEMCPY(t.placements, st->out, sizeof(dt_placement) * (size_t)m->ndim);
    t.dtype = (mb_dtype)st->out_dtype;
    t.ndim = st->out_ndim;
    DT_MEMCPY(t.shape, st->out_shape, sizeof t.shape);
    dt__local(&t, m->coord, t.placements, m->ndim, l.shape, 0);
    l.data = data;
    l.dtype = t.dtype;
    l.ndim = t.ndim;
    for (d = t.ndim - 1; d >= 0; d--) {
        if (g > INT32_MAX) return DT_ERR_SHAPE;
        t.stride[d] = (int32_t)g;
        l.stride[d] = (int32_t)n;
        g *= t.shape[d] > 1 ? t.shape[d] : 1;
        n *= l.shape[d] > 1 ? l.shape[d] : 1;
    }
    if (os) *os = t;
    if (y) *y = l;
    return DT_OK;
}

/* Move input a (spec sa, local la) to placements p into *moved, its buffer taken from the
   end of the scratch [*cur, *cur + *left); the rest before it is the redistribute scratch. */
/* sa with placements p into *t, its local shape into sh: the bytes of the moved buffer. */
static size_t dt__moved(const dt_spec *sa, const dt_placement *p, dt_spec *t, int32_t *sh)
{
    *t = *sa;
    DT_MEMCPY(t->placements, p, sizeof(dt_placement) * (size_t)t->mesh->ndim);
    dt__local(t, t->mesh->coord, t->placements, t->mesh->ndim, sh, 0);
    return (size_t)DT__R8(dt__bytes(sh, t->ndim, t->dtype));
}

/* What dt__op_move takes, measured: *used grows by the moved buffer (taken from the end of
   the scratch), *peak is the most in use at once, the move's redistribute scratch included. */
static int dt__op_move_need(dt_dispatch *d, const dt_spec *sa, const mb_tensor *la, const dt_placement *p, size_t *used,
                            size_t *peak)
{
    dt_spec t;
    int32_t sh[MB_MAX_DIMS];
    mb_tensor mv;
    int64_t r;
    int rc;
    *used += dt__moved(sa, p, &t, sh);
    mb_tensor_init(&mv, (void *)sa, t.dtype, t.ndim, sh); /* stands for the buffer: contiguous */
    rc = dt__redist(d->comm, d->plans, sa, la, &t, DT_PLAN_ALLOW_PARTIAL, &mv, 0, 0, &r);
    if (!rc && *used + (size_t)r > *peak) *peak = *used + (size_t)r;
    return rc;
}

DT_OPS__DEF DT__NOINLINE int dt__op_move(dt_dispatch *d, const dt_spec *sa, const mb_tensor *la, const dt_placement *p,
                                         mb_tensor *moved, unsigned char *cur, size_t *left)
{
    dt_spec t;
    int32_t sh[MB_MAX_DIMS];
    size_t need = dt__moved(sa, p, &t, sh);
    if (need > *left) return DT_ERR_TOO_SMALL;
    *left -= need;
    mb_tensor_init(moved, cur + *left, t.dtype, t.ndim, sh);
    return dt_redistribute(d->comm, d->plans, sa, la, &t, DT_PLAN_ALLOW_PARTIAL, moved, *left ? cur : 0, *left);
}

/* The specs of the arguments: a plain tensor (spec.mesh NULL) becomes Replicate on the
   first distributed argument's mesh (its spec in d->plain) when it has one element or
   implicit replication is on (_try_replicate_spec_for_scalar_tensor). */
static DT__NOINLINE int dt__op_specs(dt_dispatch *d, const dt_tensor *args, int nargs, const dt_spec **specs)
{
    dt_placement rep[DT_MAX_MESH_DIMS];
    const dt_mesh *m = 0;
    int i, rc;
    for (i = 0; i < DT_MAX_MESH_DIMS; i++) {
        rep[i].kind = DT_KIND_REPLICATE;
        rep[i].arg = 0;
    }
    for (i = 0; i < nargs && !m; i++) m = args[i].spec.mesh;
    if (!m) return DT_ERR_MISMATCH;
    for (i = 0; i < nargs; i++) {
        const mb_tensor *t = &args[i].local;
        specs[i] = &args[i].spec;
        if (args[i].spec.mesh) continue;
        if (mb_tensor_check(t)) return DT_ERR_SHAPE; /* a valid view: its numel is exact (< 2^63) */
        if (mb_numel(t) != 1 && !d->implicit_replication) return DT_ERR_MISMATCH;
        rc = dt_spec_init(&d->plain[i], m, rep, m->ndim, t->dtype, t->ndim, t->shape, 0);
        if (rc) return rc;
        specs[i] = &d->plain[i];
    }
    return DT_OK;
}

#if !DT_NO_MODEL_OPS
/* Run the kernel. An embedding with a row-sharded weight gets the MaskPartial attrs: the
   local piece's first row and the weight's row count. */
static DT__NOINLINE int dt__op_kernel(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_op_strategy *s,
                                      const dt_spec *w, mb_tensor *y, const mb_tensor *const *loc, int nargs)
{
    dt_op_attrs ka = attrs ? *attrs : dt__no_attrs;
    if (op == DT_ATEN_EMBEDDING) {
        dt_spec t = *w;
        int32_t sh[MB_MAX_DIMS], off[MB_MAX_DIMS];
        int md;
        ka.mode = 0;
        for (md = 0; md < t.mesh->ndim; md++) ka.mode |= dt__is_shard(s->in[0][md], 0);
        dt__local(&t, t.mesh->coord, s->in[0], t.mesh->ndim, sh, off);
        ka.dim2 = ka.mode ? off[0] : 0;
        ka.shape[0] = ka.mode ? t.shape[0] : 0;
    }
    return (d->kernels[op] ? d->kernels[op] : dt_kernel_ref)(op, &ka, y, loc, nargs);
}
#endif

/* A rank outside the mesh: the output spec and an empty local tensor (0-d: a zero), or
   the in-place / out variant's target untouched. */
static DT__NOINLINE int dt__op_absent(const dt_op_strategy *s, const dt_mesh *m, const dt_tensor *self, int inplace,
                                      dt_tensor *out, void *out_data, size_t out_bytes)
{
    size_t es = mb_dtype_size((mb_dtype)s->out_dtype);
    int rc;
    if (inplace) {
        *out = *self;
        return DT_OK;
    }
    if (out_data && !s->out_ndim && out_bytes < es) return DT_ERR_TOO_SMALL;
    rc = dt__op_out(s, m, &out->spec, out_data ? &out->local : 0, out_data);
    if (!rc && out_data) {
        DT_MEMSET(out_data, 0, s->out_ndim ? 0 : es);
        DT_MEMSET(out->local.shape, 0, sizeof out->local.shape);
    }
    return rc;
}

/* This rank's comm serves the mesh and every local tensor fits its spec. */
static int dt__op_fit(const dt_dispatch *d, const dt_mesh *m, const dt_spec *const *specs, const dt_tensor *args,
                      int nargs)
{
    int32_t sh[MB_MAX_DIMS];
    int i, rc = dt__comm_check(d->comm, m);
    for (i = 0; !rc && i < nargs; i++) {
        dt__local(specs[i], m->coord, specs[i]->placements, m->ndim, sh, 0);
        rc = dt__fits(&args[i].local, specs[i]->dtype, specs[i]->ndim, sh);
    }
    return rc;
}

/* msr != NULL: measure only (dt_op_query): msr[0] the out_bytes, msr[1] the scratch. */
static DT__NOINLINE int dt__op_run(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_op_strategy *s,
                                   const dt_spec *const *specs, const dt_tensor *args, int nargs, dt_tensor *out,
                                   void *out_data, size_t out_bytes, size_t *msr)
{
    const mb_tensor *loc[DT_MAX_OP_ARGS], *target = 0;
    mb_tensor moved[DT_MAX_OP_ARGS], y;
    const dt_mesh *m = specs[0]->mesh;
    size_t left, need; /* scratch buffers are taken from its end, whole multiples of 8: they stay aligned */
    int i, rc, nd = m->ndim, inplace = out_data && out_data == args[0].local.data;
    if (inplace && (s->out_ndim != specs[0]->ndim || s->out_dtype != (int)specs[0]->dtype ||
                    memcmp(s->out_shape, specs[0]->shape, sizeof(int32_t) * (size_t)s->out_ndim) ||
                    memcmp(s->out, specs[0]->placements, sizeof(dt_placement) * (size_t)nd)))
        return DT_ERR_NO_STRATEGY; /* torch: an in-place op keeps self's spec */
    if (m->index < 0 && msr) {
        msr[0] = inplace || !out_data || s->out_ndim ? 0 : mb_dtype_size((mb_dtype)s->out_dtype);
        msr[1] = 0;
        return DT_OK;
    }
    if (m->index < 0) return dt__op_absent(s, m, &args[0], inplace, out, out_data, out_bytes);
    rc = dt__op_fit(d, m, specs, args, nargs);
    if (!rc) rc = dt__op_out(s, m, 0, &y, out_data);
    if (rc) return rc;
    need = (size_t)dt__bytes(y.shape, y.ndim, y.dtype);
    if (inplace) {
        target = &args[0].local;
    } else if (!out_data) { /* out variant */
        rc = msr ? 0 : dt__fits(&out->local, s->out_dtype, s->out_ndim, y.shape);
        if (rc) return rc;
        target = &out->local;
    } else if (need > out_bytes && !msr) {
        return DT_ERR_TOO_SMALL;
    }
    { /* the scratch it takes: the result's buffer (in place, out variant), then each move;
         checked whole before the first move communicates */
        size_t mm[2], *q = msr ? msr : mm;
        q[0] = target ? 0 : need;
        q[1] = target ? (size_t)DT__R8(need) : 0;
        left = q[1];
        for (i = 0, rc = 0; i < nargs && !rc; i++)
            if (memcmp(s->in[i], specs[i]->placements, sizeof(dt_placement) * (size_t)nd))
                rc = dt__op_move_need(d, specs[i], &args[i].local, s->in[i], &left, &q[1]);
        if (rc || msr) return rc;
        left = d->scratch ? d->scratch_bytes & ~(size_t)7 : 0;
        if (q[1] > left) return DT_ERR_TOO_SMALL; /* nothing sent */
    }
    if (target) { /* the result goes to scratch first, then into the target */
        need = (size_t)DT__R8(need);
        if (need > left) return DT_ERR_TOO_SMALL;
        left -= need;
        y.data = (unsigned char *)d->scratch + left;
    }
    for (i = 0; i < nargs; i++) { /* redistribute the inputs whose placements differ */
        loc[i] = &args[i].local;
        if (!memcmp(s->in[i], specs[i]->placements, sizeof(dt_placement) * (size_t)nd)) continue;
        rc = dt__op_move(d, specs[i], &args[i].local, s->in[i], &moved[i], (unsigned char *)d->scratch, &left);
        if (rc) return rc;
        loc[i] = &moved[i];
    }
    rc = 1;
#if !DT_NO_MODEL_OPS
    if (!target && dt__ops[op].family == DT__F_VIEW && !d->kernels[op] && loc[0] == &args[0].local) {
        rc = dt__view_local(op, attrs ? attrs : &dt__no_attrs, loc[0], y.shape, y.ndim, &moved[0]);
        if (!rc) y = moved[0]; /* a view of the input, no copy */
    }
#endif
    if (rc) {
#if !DT_NO_MODEL_OPS
        rc = dt__op_kernel(d, op, attrs, s, specs[0], &y, loc, nargs);
#else
        rc = (d->kernels[op] ? d->kernels[op] : dt_kernel_ref)(op, attrs ? attrs : &dt__no_attrs, &y, loc, nargs);
#endif
        if (!rc && target && mb_copy((mb_tensor *)target, &y)) rc = DT_ERR_SHAPE;
        if (rc) return rc;
    }
    if (inplace) {
        *out = args[0];
        return DT_OK;
    }
    rc = dt__op_out(s, m, &out->spec, 0, 0);
    if (!target) out->local = y;
    return rc;
}

/* torch's found_inf_reduce_handler over _amp_foreach_non_finite_check_and_unscale_: the
   local pieces are checked and unscaled, found_inf reduced as Partial(max) wherever a
   grad is not Replicate, then written back. */
#if !DT_NO_MODEL_OPS
static const dt_placement dt__rep = DT__R, dt__pmax = DT__P(DT_KIND_PARTIAL, DT_MAX);

static DT__NOINLINE int dt__amp_unscale(dt_dispatch *d, int op, const dt_op_attrs *at, const dt_tensor *args, int nargs,
                                        dt_tensor *out, void *out_data, size_t out_bytes)
{
    const dt_spec *specs[DT_MAX_OP_ARGS];
    const dt_tensor *f = &args[nargs - 1];
    dt_spec ps, rs;
    mb_tensor res;
    float found, got = 0.0f, *p, z;
    int i, md, rc = at ? dt__op_specs(d, args, nargs, specs) : DT_ERR_NULL;
    int32_t j, n;
    (void)out_data;
    (void)out_bytes;
    if (!rc) rc = dt__args_check(op, specs, nargs);
    if (!rc && (nargs < 2 || (int32_t)mb_numel(&f->local) != 1)) rc = nargs < 2 ? DT_ERR_PLACEMENT_COUNT : DT_ERR_SHAPE;
    if (!rc && specs[0]->mesh->index >= 0) rc = dt__op_fit(d, specs[0]->mesh, specs, args, nargs);
    if (rc) return rc;
    ps = rs = *specs[nargs - 1];
    for (md = 0; md < ps.mesh->ndim; md++) {
        ps.placements[md] = rs.placements[md] = dt__rep;
        for (i = 0; i < nargs - 1; i++)
            if (specs[i]->placements[md].kind != DT_KIND_REPLICATE) ps.placements[md] = dt__pmax;
    }
    if (ps.mesh->index >= 0) { /* a non-member neither computes nor communicates */
        found = *(float *)f->local.data;
        for (i = 0; i < nargs - 1; i++)
            for (j = 0, n = (int32_t)mb_numel(&args[i].local); j < n; j++) {
                p = (float *)args[i].local.data + dt__off(&args[i].local, 0, args[i].local.ndim, j);
                z = *p - *p;
                found = z != z ? 1.0f : found; /* inf or nan */
                *p *= at->scalar;
            }
        *(float *)f->local.data = found;
        mb_tensor_init(&res, &got, MB_F32, f->local.ndim, f->local.shape);
        rc = dt_redistribute(d->comm, d->plans, &ps, &f->local, &rs, 0, &res, d->scratch,
                             d->scratch ? d->scratch_bytes : 0);
        if (rc) return rc;
        *(float *)f->local.data = got;
    }
    *out = *f;
    return DT_OK;
}

/* torch's argmin_argmax_handler (torch/distributed/tensor/_argmin_argmax.py, a custom op
   handler of _dispatch.py: the input is never gathered): Partial made Replicate, each
   rank's local (max, first index) per output element, the index made global, then on
   each mesh dim sharding a reduced dim an all_gather of the (max, index) pairs and the
   best one kept. torch keeps the first rank's on a tie; here
   the smaller global index wins (the single-rank result, also for a flat argmax of a
   tensor sharded on a later dim), NaN counts as the maximum, an empty piece offers none. */
static int dt__argmax_better(uint32_t av, int32_t ai, uint32_t bv, int32_t bi)
{
    float a, b;
    int an, bn;
    DT_MEMCPY(&a, &av, 4);
    DT_MEMCPY(&b, &bv, 4);
    an = a != a;
    bn = b != b;
    if (ai < 0 || bi < 0) return bi < 0 && ai >= 0;
    if (an != bn) return an;
    return (!an && a != b) ? a > b : ai < bi;
}

static DT__NOINLINE int dt__argmax_run(dt_dispatch *d, const dt_op_attrs *at, const dt_op_strategy *s, const dt_spec *x,
                                       const mb_tensor *xl, unsigned gather, dt_tensor *out, void *out_data,
                                       size_t out_bytes, size_t *msr)
{
    const dt_mesh *m = x->mesh;
    dt_spec r = *x;
    mb_tensor moved, y, v;
    const mb_tensor *in[1];
    int32_t sh[MB_MAX_DIMS], off[MB_MAX_DIMS], n, k, j, f, gmax = 1, rd = mb_normalize_dim(at->dim, x->ndim), c;
    unsigned char *scr = (unsigned char *)d->scratch;
    size_t left = scr ? d->scratch_bytes & ~(size_t)7 : 0, need;
    uint32_t *pr, *rv;
    int md, rc, nd = m->ndim, empty;
    if (at->dim == DT_DIM_ALL) rd = -1;
    rc = dt__op_out(s, m, &out->spec, &y, out_data);
    if (rc) return rc;
    n = (int32_t)mb_numel(&y);
    if ((size_t)n * 4u > out_bytes && !msr) return DT_ERR_TOO_SMALL;
    for (md = 0; md < nd; md++) {
        if (r.placements[md].kind == DT_KIND_PARTIAL) r.placements[md].kind = r.placements[md].arg = 0;
        if ((gather >> md & 1u) && m->shape[md] > gmax) gmax = m->shape[md];
    }
    need = (size_t)DT__R8((uint64_t)n * 4u) + (size_t)n * 8u * (size_t)(gmax + 1);
    if (msr) { /* the pairs, then the move of a Partial input */
        msr[0] = (size_t)n * 4u;
        msr[1] = left = need;
        if (memcmp(r.placements, x->placements, sizeof(dt_placement) * (size_t)nd))
            return dt__op_move_need(d, x, xl, r.placements, &left, &msr[1]);
        return DT_OK;
    }
    if (need > left) return DT_ERR_TOO_SMALL; /* nothing sent */
    left -= need;
    in[0] = xl;
    if (memcmp(r.placements, x->placements, sizeof(dt_placement) * (size_t)nd)) {
        rc = dt__op_move(d, x, xl, r.placements, &moved, scr + need, &left);
        if (rc) return rc;
        in[0] = &moved;
    }
    dt__local(&r, m->coord, r.placements, nd, sh, off);
    empty = rd >= 0 ? !sh[rd] : !(int32_t)mb_numel(in[0]);
    mb_tensor_init(&v, scr, MB_F32, y.ndim, y.shape);
    if (!empty && n) {
        rc = (d->kernels[DT_ATEN_ARGMAX] ? d->kernels[DT_ATEN_ARGMAX] : dt_kernel_ref)(DT_ATEN_ARGMAX, at, &y, in, 1);
        if (!rc)
            rc = (d->kernels[DT_ATEN_AMAX] ? d->kernels[DT_ATEN_AMAX] : dt_kernel_ref)(DT_ATEN_AMAX, at, &v, in, 1);
        if (rc) return rc;
    }
    pr = (uint32_t *)(void *)(scr + DT__R8((uint64_t)n * 4u));
    rv = pr + 2 * n;
    for (k = 0; k < n; k++) { /* (max, global index) pairs */
        int32_t i = ((int32_t *)y.data)[k], g = 0;
        if (rd >= 0) {
            g = i + off[rd];
        } else { /* flat: local coordinates + offsets, raveled with the global shape */
            for (j = x->ndim - 1, f = i, c = 1; j >= 0; j--) {
                g += (f % (sh[j] ? sh[j] : 1) + off[j]) * c;
                f /= sh[j] ? sh[j] : 1;
                c *= x->shape[j];
            }
        }
        DT_MEMCPY(&pr[2 * k], (float *)v.data + k, 4);
        pr[2 * k + 1] = (uint32_t)(empty ? -1 : g);
    }
    for (md = 0; md < nd && n; md++) {
        if (!(gather >> md & 1u)) continue;
        rc = pg_all_gather(d->comm->g[md], pr, rv, (size_t)n * 2u, MB_I32);
        d->comm->collectives++;
        if (rc) {
            d->comm->err = rc;
            return DT_ERR_COMM;
        }
        for (k = 0; k < n; k++)
            for (j = 0; j < m->shape[md]; j++) {
                const uint32_t *q = rv + 2 * ((size_t)j * (size_t)n + (size_t)k);
                if (dt__argmax_better(q[0], (int32_t)q[1], pr[2 * k], (int32_t)pr[2 * k + 1])) {
                    pr[2 * k] = q[0];
                    pr[2 * k + 1] = q[1];
                }
            }
    }
    for (k = 0; k < n; k++) ((int32_t *)y.data)[k] = (int32_t)pr[2 * k + 1];
    out->local = y;
    return DT_OK;
}

/* The handler: the default path (dt__op_run) unless a reduced dim is sharded on a member
   rank with a plain output (not in place, not an out variant). */
static DT__NOINLINE int dt__argmax_m(dt_dispatch *d, int op, const dt_op_attrs *at, const dt_tensor *args, int nargs,
                                     dt_tensor *out, void *out_data, size_t out_bytes, size_t *msr)
{
    const dt_spec *specs[DT_MAX_OP_ARGS];
    dt_op_strategy s;
    unsigned gather = 0;
    int md, rd, rc = dt__op_specs(d, args, nargs, specs);
    if (!at) at = &dt__no_attrs;
    if (!rc) rc = dt_propagate(d->strategies, op, at, specs, nargs, &s);
    if (rc) return rc;
    rd = at->dim == DT_DIM_ALL ? -1 : mb_normalize_dim(at->dim, specs[0]->ndim);
    for (md = 0; md < specs[0]->mesh->ndim; md++)
        if (specs[0]->placements[md].kind == DT_KIND_SHARD && (rd < 0 || specs[0]->placements[md].arg == rd) &&
            specs[0]->mesh->shape[md] > 1) /* a size-1 mesh dim holds it all */
            gather |= 1u << md;
    if (!gather || specs[0]->mesh->index < 0 || !out_data || out_data == args[0].local.data)
        return dt__op_run(d, op, at, &s, specs, args, nargs, out, out_data, out_bytes, msr);
    rc = dt__op_fit(d, specs[0]->mesh, specs, args, nargs);
    return rc ? rc : dt__argmax_run(d, at, &s, specs[0], &args[0].local, gather, out, out_data, out_bytes, msr);
}

static int dt__argmax(dt_dispatch *d, int op, const dt_op_attrs *at, const dt_tensor *args, int nargs, dt_tensor *out,
                      void *out_data, size_t out_bytes)
{
    return dt__argmax_m(d, op, at, args, nargs, out, out_data, out_bytes, 0);
}

#endif /* DT_NO_MODEL_OPS */

DT_OPS__DEF int dt_op(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs,
                      dt_tensor *out, void *out_data, size_t out_bytes)
{
    const dt_spec *specs[DT_MAX_OP_ARGS];
    dt_op_strategy s;
    dt_handler h;
    int rc;
    if (!d || !args || !out) return DT_ERR_NULL;
    if (op < 0 || op >= DT_ATEN_COUNT || nargs < 1 || nargs > DT_MAX_OP_ARGS) return DT_ERR_PLACEMENT_COUNT;
    h = d->handlers[op];
#if !DT_NO_MODEL_OPS
    if (!h && op == DT_ATEN_AMP_UNSCALE) h = dt__amp_unscale;
    if (!h && op == DT_ATEN_ARGMAX) h = dt__argmax;
#endif
    if (h) return h(d, op, attrs, args, nargs, out, out_data, out_bytes);
    rc = dt__op_specs(d, args, nargs, specs);
    if (!rc) rc = dt_propagate(d->strategies, op, attrs, specs, nargs, &s);
    return rc ? rc : dt__op_run(d, op, attrs, &s, specs, args, nargs, out, out_data, out_bytes, 0);
}

DT_OPS__DEF int dt_op_query(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs,
                            int mode, size_t *out_bytes, size_t *scratch_bytes)
{
    const dt_spec *specs[DT_MAX_OP_ARGS];
    dt_op_strategy s;
    dt_tensor o;
    size_t msr[2];
    void *od;
    int rc;
    if (!d || !args || !out_bytes || !scratch_bytes) return DT_ERR_NULL;
    if (op < 0 || op >= DT_ATEN_COUNT || nargs < 1 || nargs > DT_MAX_OP_ARGS) return DT_ERR_PLACEMENT_COUNT;
    if ((unsigned)mode > DT_OP_OUT) return DT_ERR_VALUE;
    if (d->handlers[op] || (op == DT_ATEN_AMP_UNSCALE && !DT_NO_MODEL_OPS)) return DT_ERR_UNSUPPORTED;
    od = mode == DT_OP_IN_PLACE ? args[0].local.data : mode == DT_OP_OUT ? 0 : (void *)&o; /* a buffer of its own */
    if (mode == DT_OP_IN_PLACE && !od) return DT_ERR_NULL;
#if !DT_NO_MODEL_OPS
    if (op == DT_ATEN_ARGMAX)
        rc = dt__argmax_m(d, op, attrs, args, nargs, &o, od, 0, msr);
    else
#endif
    {
        rc = dt__op_specs(d, args, nargs, specs);
        if (!rc) rc = dt_propagate(d->strategies, op, attrs, specs, nargs, &s);
        if (!rc) rc = dt__op_run(d, op, attrs, &s, specs, args, nargs, &o, od, 0, msr);
    }
    if (rc) return rc;
    *out_bytes = msr[0];
    *scratch_bytes = msr[1];
    return DT_OK;
}

/* ---- tensor-parallel styles ---- */

static int dt__tp_layout(dt_placement p)
{
    return p.kind == DT_KIND_REPLICATE || p.kind == DT_KIND_SHARD ? DT_OK : DT_ERR_PLACEMENT;
}

DT_OPS__DEF int dt_tp_colwise(dt_tp_style *s, int module, dt_placement output_layout)
{
    const dt_tp_style c = {DT__R, DT__S(0), DT__S(0), DT__S(-1), DT__R};
    if (!s) return DT_ERR_NULL;
    if ((module != DT_TP_LINEAR && module != DT_TP_EMBEDDING) || dt__tp_layout(output_layout)) return DT_ERR_PLACEMENT;
    *s = c;
    if (module == DT_TP_EMBEDDING) s->weight.arg = 1;
    s->output_layout = output_layout;
    return DT_OK;
}

DT_OPS__DEF int dt_tp_rowwise(dt_tp_style *s, int module, dt_placement output_layout)
{
    const dt_tp_style c = {DT__S(-1), DT__S(1), DT__R, DT__PS, DT__R};
    if (!s) return DT_ERR_NULL;
    if ((module != DT_TP_LINEAR && module != DT_TP_EMBEDDING) || dt__tp_layout(output_layout)) return DT_ERR_PLACEMENT;
    *s = c;
    if (module == DT_TP_EMBEDDING) s->weight.arg = 0, s->input = s->bias;
    s->output_layout = output_layout;
    return DT_OK;
}

DT_OPS__DEF int dt_tp_sequence(dt_tp_style *s, int sequence_dim)
{
    const dt_tp_style c = {DT__S(0), DT__R, DT__R, DT__S(0), DT__S(0)};
    if (!s) return DT_ERR_NULL;
    *s = c;
    s->input.arg = s->output.arg = s->output_layout.arg = (int16_t)sequence_dim;
    return DT_OK;
}

DT_OPS__DEF int dt_tp_redistribute(dt_dispatch *d, const dt_tensor *x, int md, dt_placement p, dt_tensor *out,
                                   void *data, size_t bytes)
{
    dt_spec t;
    mb_tensor y;
    int32_t sh[MB_MAX_DIMS];
    int rc, dim;
    if (!d || !x || !out) return DT_ERR_NULL;
    rc = dt_spec_check(&x->spec);
    if (rc) return rc;
    if (md < 0 || md >= x->spec.mesh->ndim) return DT_ERR_MESH_DIM;
    if (p.kind == DT_KIND_PARTIAL) return DT_ERR_PARTIAL;
    t = x->spec;
    dim = mb_normalize_dim(p.arg, t.ndim); /* Shard(-1) from the end; dt_spec_check refuses a bad dim */
    if (p.kind == DT_KIND_SHARD && dim >= 0) p.arg = (int16_t)dim;
    t.placements[md] = p;
    rc = dt_spec_check(&t);
    if (rc) return rc;
    if (t.mesh->index < 0) return DT_ERR_NOT_MEMBER; /* no local shape to size the output by */
    if (!memcmp(t.placements, x->spec.placements, sizeof t.placements)) {
        *out = *x;
        return DT_OK;
    }
    dt__local(&t, t.mesh->coord, t.placements, t.mesh->ndim, sh, 0);
    if (!data) return DT_ERR_NULL;
    if (dt__bytes(sh, t.ndim, t.dtype) > bytes) return DT_ERR_TOO_SMALL;
    mb_tensor_init(&y, data, t.dtype, t.ndim, sh);
    rc = dt_redistribute(d->comm, d->plans, &x->spec, &x->local, &t, 0, &y, d->scratch,
                         d->scratch ? d->scratch_bytes : 0);
    if (rc) return rc;
    out->spec = t;
    out->local = y;
    return DT_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_OPS_IMPLEMENTATION */
