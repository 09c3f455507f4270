/* dtensor.h — device mesh, placements, uneven sharding and the redistribute planner (splitcore)

   PyTorch's DTensor for microcontrollers. A *mesh* arranges ranks in 1-3 dimensions
   (row-major); a *spec* says how one global tensor lies on it: per mesh dimension
   Shard(dim) (torch.chunk pieces, trailing ranks may be empty), Replicate or
   Partial(op) (a pending sum/avg/max/min/prod). This part needs no communication: it
   gives every rank's local shape and global offset exactly as torch's
   compute_local_shape_and_global_offset, zero-copy local views of a global mb_tensor,
   and redistribute *plans*: the steps torch's greedy planner (_gen_transform_infos)
   takes from one spec to another, each labelled with the collective it lowers to, with
   bytes/hops per step, a time estimate, a scratch size, and a plan cache with hit/miss
   counters in caller storage. Section 8 executes them over ports/pg.h: a mesh bound to
   one pg sub-group per mesh dim, distribute / from_local / to_local / full_tensor, and
   redistribute with caller scratch (all_gatherv, all_reduce, reduce_scatterv,
   all_to_allv straight on the caller's tensors when their blocks lie back to back, local
   narrow as a view, partition).
   No heap, C99, C++-clean. Includes only microbatch.h and ports/pg.h.

   Example (rank 3 of a 2x2 mesh; 5 rows sharded twice, then made replicated):
       #define DTENSOR_IMPLEMENTATION
       #include "dtensor.h"
       dt_mesh mesh;  dt_spec a, b;  dt_plan plan;  int32_t ms[2] = {2, 2}, gs[2] = {5, 4};
       dt_placement s00[2] = {DT_SHARD(0), DT_SHARD(0)}, rr[2] = {DT_REPLICATE(), DT_REPLICATE()};
       int32_t shape[2], off[2];
       dt_mesh_init(&mesh, 2, ms, NULL, 3);                     // ranks 0..3, this is rank 3
       dt_spec_init(&a, &mesh, s00, 2, MB_F32, 2, gs, NULL);
       dt_local_shape(&a, 3, shape, off);                       // shape {1,4}, offset {4,0}
       dt_spec_init(&b, &mesh, rr, 2, MB_F32, 2, gs, NULL);
       dt_plan_redistribute(&a, &b, 0, &plan);                  // all_gather (dim 1), all_gather (dim 0)

   Contents:
       1. Configuration macros             6. Redistribute planner, cost model
       2. Types, error codes               7. Plan cache
       3. Device mesh                      8. Execution over ports/pg.h
       4. Placements and specs             9. Implementation (DTENSOR_IMPLEMENTATION)
       5. Shard sizes, local shapes and views  10. Ops: sharding propagation, dispatcher,
                                               kernels (mm, addmm, bmm, linear, pointwise),
                                               tensor-parallel styles
                                           11. conv2d and max pool: kernels, batch / channel /
                                               spatial (halo exchange) sharding; int8
                                               conv2d (after section 12's declarations)
                                           12. int8 quantized mm/linear: requantization,
                                               sharded int8 mm (dt_qmm)
                                           13. Random: Philox 4x32-10, DTensor's RNG
                                               offsets, dt_rand, dt_dropout
                                           14. Graph IR, batch-dim analysis, data-parallel
                                               plans, C tables; distributed run through
                                               the dispatcher (dt_graph_dist_*)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE):
       DTENSOR_IMPLEMENTATION  emit the definitions (exactly one .c file; the program also
                               needs MICROBATCH_IMPLEMENTATION and PG_IMPLEMENTATION in
                               one .c file, and a port for the executing calls)
       DTENSOR_STATIC          make every function static to its translation unit
       SPLITCORE_CONFIG_FILE   "file.h" included first by every splitcore header
       DT_MAX_MESH_DIMS        largest mesh rank (default 3)
       DT_MAX_RANKS            largest mesh size (default 64)
       DT_NO_CONSTRUCTION      leave out distribute / from_local / to_local / full_tensor
                               (firmware that holds its shards and only redistributes:
                               mesh, specs, planner, cache and executor: with
                               DT_NO_OPS, the "core")
       DT_NO_OPS               leave out section 10 (ops: propagation, dispatcher, kernels)
       DT_NO_MODEL_OPS         leave out the view ops, embedding, the losses and the
                               found_inf handler of section 10 (DT_ERR_UNSUPPORTED)
       DT_NO_CONV              leave out section 11 (conv2d, max pool, their sharded forms)
       DT_NO_SHARDED_CONV_BACKWARD  leave out section 11's sharded conv2d backward
                               (dt_conv2d_sharded_backward; the single-rank one stays)
       DT_NO_QUANT             leave out section 12 (int8 quantized mm, requantization)
       DT_NO_RANDOM            leave out section 13 (Philox, RNG offsets, rand, dropout)
       DT_NO_GRAPH             leave out section 14 (graph IR, batch-dim analysis, plans;
                               DT_NO_OPS leaves it out too: it runs section 10's kernels)
       DT_NO_GRAPH_DIST        leave out section 14's distributed run through the
                               dispatcher (dt_graph_dist_*; the data-parallel plans stay)
       DT_CONV_TAG             pg user tag of the spatial halo exchange (default 0x7C00)
       DT_MM_BLOCK             the reference matmul's k and n block (default 64)
       DT_CBLAS                also build dt_kernel_cblas (mm, addmm, bmm, linear through
                               cblas_sgemm; includes <cblas.h>, link a CBLAS such as
                               Debian's OpenBLAS: `scons blas=openblas`)
       DT_RESTRICT             restrict qualifier of the kernels (default: restrict in C,
                               nothing in C++)
       DT_ASSERT(x)            internal invariant check (default: none)
       DT_MEMCPY(d,s,n), DT_MEMSET(d,v,n)   default: memcpy / memset

   Errors are negative return values (enum dt_err); dt_strerror() names them. Bad input
   never writes to the caller's outputs (docs/error-contract.md lists every case).
   dtensor.h never includes pipeline.h.

   Threads, interrupts, memory: meshes, specs, the planner, propagation and the kernels
   work only on their arguments (no global state, no locks, no heap): safe from any
   thread on distinct objects. A plan or strategy cache, a dt_comm and a dt_dispatch
   belong to one rank's thread. Calls that communicate (section 8 on, dt_op, the sharded
   conv/int8/graph runs) block in ports/pg.h, so never from an ISR, and every rank of the
   mesh makes them in the same order. All memory is the caller's: cache storage, scratch
   sized by the *_scratch_bytes / *_bytes queries, outputs; stack use is bounded (no
   recursion; `scons size` lists the worst frame of every function on Cortex-M4). */
#ifndef DTENSOR_H
#define DTENSOR_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "splitcore_base.h"
#if SPLITCORE_VERSION != 200
#error "dtensor.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(DTENSOR_IMPLEMENTATION)
#define DTENSOR_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(DTENSOR_STATIC)
#define DTENSOR_STATIC
#endif
#include <stddef.h>
#include <stdint.h>
#include "microbatch.h"
#include "ports/pg.h"
#ifdef DT_CBLAS
#include <cblas.h>
#endif

#ifndef DT_MAX_MESH_DIMS
#define DT_MAX_MESH_DIMS 3
#endif
#ifndef DT_MAX_RANKS
#define DT_MAX_RANKS 64
#endif
/* A plan has at most one step per mesh dim in each of the planner's two passes. */
#define DT_MAX_STEPS (2 * DT_MAX_MESH_DIMS)
#ifdef DTENSOR_STATIC
#define DT_API static
#else
#define DT_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Types and error codes ---------------------------------------------------- */
/* Error codes -121..-199: DT_ERRORS in splitcore_base.h lists them (name, value, message). */
enum dt_err { DT_ERRORS(SPLITCORE__ENUM) DT_OK = 0 };

/* Reduce ops of Partial, in pg.h's pg_red order (a plan's `red` maps 1:1). */
typedef enum dt_red { DT_SUM = 0, DT_AVG, DT_MAX, DT_MIN, DT_PROD, DT_RED_COUNT } dt_red;

enum dt_kind { DT_KIND_REPLICATE = 0, DT_KIND_SHARD = 1, DT_KIND_PARTIAL = 2 };

/* One placement: Replicate, Shard(arg = tensor dim) or Partial(arg = dt_red). */
typedef struct dt_placement {
    int16_t kind;
    int16_t arg;
} dt_placement;

/* Initializers: dt_placement p[2] = {DT_SHARD(0), DT_PARTIAL(DT_SUM)}; */
/* clang-format off */
#define DT_REPLICATE()  { DT_KIND_REPLICATE, 0 }
#define DT_SHARD(dim)   { DT_KIND_SHARD, (dim) }
#define DT_PARTIAL(op)  { DT_KIND_PARTIAL, (op) }
/* clang-format on */

/* A device mesh (description only; DeviceMesh). ranks[] lists the mesh's world ranks in
   row-major order: any subset of a world (a sub-mesh). `rank` is this process's world
   rank; coord[] its coordinate, or all -1 (index -1) when it is not a member. */
typedef struct dt_mesh {
    int32_t ndim;
    int32_t shape[DT_MAX_MESH_DIMS];
    int32_t size;  /* product of shape */
    int32_t rank;  /* this process's world rank */
    int32_t index; /* its row-major position in ranks[], -1: not a member */
    int32_t coord[DT_MAX_MESH_DIMS];
    int32_t ranks[DT_MAX_RANKS]; /* mesh position -> world rank */
} dt_mesh;

/* A DTensor spec: mesh + one placement per mesh dim + global tensor meta. */
typedef struct dt_spec {
    const dt_mesh *mesh;
    dt_placement placements[DT_MAX_MESH_DIMS];
    mb_dtype dtype;
    int32_t ndim;
    int32_t shape[MB_MAX_DIMS];  /* global shape */
    int32_t stride[MB_MAX_DIMS]; /* global strides in elements */
} dt_spec;

/* The message of a dt_err code; "unknown error" for any other value (never NULL). */
DT_API const char *dt_strerror(int err);

/* ---- 3. Device mesh -------------------------------------------------------------- */
/* shape[0..ndim) > 0; ranks: shape-product distinct world ranks >= 0, row-major, or
   NULL for 0..size-1. `rank` >= 0 need not be a member (then it has no coordinate). */
DT_API int dt_mesh_init(dt_mesh *m, int ndim, const int32_t *shape, const int32_t *ranks, int rank);
/* coord[0..ndim) of world rank `rank`; DT_ERR_NOT_MEMBER when it is not in the mesh. */
DT_API int dt_mesh_coord(const dt_mesh *m, int rank, int32_t *coord);
/* Size of one mesh dim (or DT_ERR_MESH_DIM). */
DT_API int dt_mesh_dim_size(const dt_mesh *m, int mesh_dim);
/* The world ranks of `rank`'s slice along mesh_dim (its coordinate varies on that dim
   only, ordered by it): the members of the pg sub-group for collectives on that dim.
   Returns the count; DT_ERR_TOO_SMALL (nothing written) when cap is smaller. */
DT_API int dt_mesh_group(const dt_mesh *m, int rank, int mesh_dim, int32_t *ranks, int cap);

/* ---- 4. Placements and specs ----------------------------------------------------- */
/* Validate and build a spec. nplacements must equal the mesh's ndim. Shard dims may be
   negative (counted from the end, normalised here). stride NULL: contiguous. */
DT_API int dt_spec_init(dt_spec *s, const dt_mesh *mesh, const dt_placement *placements, int nplacements,
                        mb_dtype dtype, int ndim, const int32_t *shape, const int32_t *stride);
DT_API int dt_spec_check(const dt_spec *s);
/* 1 when every placement is Replicate, 0 when not, < 0 on a bad spec. */
DT_API int dt_spec_is_replicated(const dt_spec *s);
/* How many pieces the tensor is split into: product of mesh sizes of Shard dims. */
DT_API int dt_spec_num_shards(const dt_spec *s);

/* ---- 5. Shard sizes, local shapes and views ---------------------------------------
   torch.chunk semantics: n on k ranks gives ceil(n/k) each, the rest smaller, trailing
   ranks empty with offset n (5 on 4: 2,2,1,0 at 0,2,4,5). */
/* Size of piece i of n split k ways (>= 0), its offset in *offset (may be NULL). */
DT_API int32_t dt_chunk(int32_t n, int32_t k, int32_t i, int32_t *offset);
/* Local shape and global offset of world rank `rank` (compute_local_shape_and_global_offset):
   mesh dims shard in order, 0 first; an empty piece has offset = the global dim size.
   offset may be NULL. */
DT_API int dt_local_shape(const dt_spec *s, int rank, int32_t *shape, int32_t *offset);
/* Bytes of `rank`'s local tensor. */
DT_API int dt_local_bytes(const dt_spec *s, int rank, size_t *bytes);
/* `local` = rank's piece of `global` (a view: no copy). global must match the spec. */
DT_API int dt_local_view(const dt_spec *s, int rank, const mb_tensor *global, mb_tensor *local);

/* ---- 6. Redistribute planner and cost model ---------------------------------------- */
/* What a step does on this rank (the collective runs over the step's mesh-dim group). */
enum dt_op {
    DT_OP_NOOP = 0,       /* mesh dim of size 1: nothing to do */
    DT_OP_NARROW,         /* Replicate -> Shard: local chunk, no communication */
    DT_OP_PARTITION,      /* Replicate -> Partial: sum divides by the group size,
                                avg/max/min keep the value (prod: DT_ERR_UNSUPPORTED) */
    DT_OP_ALL_GATHER,     /* Shard -> Replicate (uneven: all_gatherv) */
    DT_OP_ALL_REDUCE,     /* Partial -> Replicate */
    DT_OP_REDUCE_SCATTER, /* Partial -> Shard (uneven: reduce_scatterv) */
    DT_OP_ALL_TO_ALL,     /* Shard(i) -> Shard(j) (uneven: all_to_allv) */
    DT_OP_SCATTER,        /* dt_distribute: Replicate on the root -> Shard (scatterv) */
    DT_OP_BROADCAST       /* dt_distribute: Replicate on the root -> Replicate */
};

typedef struct dt_step {
    int32_t mesh_dim;
    int32_t op;         /* enum dt_op */
    int32_t red;        /* dt_red of ALL_REDUCE/REDUCE_SCATTER/PARTITION */
    int32_t group_size; /* ranks on the mesh dim */
    int32_t coord;      /* this rank's place in the group (its coordinate) */
    int32_t root;       /* SCATTER/BROADCAST: the source's place */
    int32_t stage;      /* with contiguous local tensors: 1 the send side is
                                         packed, 2 the receive side staged (in scratch) */
    dt_placement src, dst;
    int32_t logical_shape[MB_MAX_DIMS]; /* torch's logical shape on this mesh dim */
    int32_t in_shape[MB_MAX_DIMS];      /* this rank's local shape before / after */
    int32_t out_shape[MB_MAX_DIMS];
    uint32_t hops;  /* ring steps: n-1 (all_reduce 2(n-1)), 0 locally */
    uint64_t bytes; /* bytes sent per rank: comm * hops / n, comm = this
                                         rank's gathered (all_gather) or input bytes */
} dt_step;

typedef struct dt_plan {
    int32_t nsteps;
    int32_t ncollectives;          /* steps that communicate */
    uint32_t hops;                 /* sums over steps */
    int32_t dtype, ndim;           /* the tensor's mb_dtype and rank */
    int32_t in_shape[MB_MAX_DIMS]; /* this rank's local shape before / after */
    int32_t out_shape[MB_MAX_DIMS];
    uint64_t bytes;
    uint64_t scratch; /* dt_plan_scratch_bytes() */
    dt_step steps[DT_MAX_STEPS];
} dt_plan;

/* flags: DT_PLAN_ALLOW_PARTIAL = torch's internal Redistribute.apply: Replicate -> Partial
   allowed (local partition). Without it (DTensor.redistribute) any change to a Partial
   target is DT_ERR_PARTIAL. Partial(a) -> Partial(a) is a no-op either way (torch's public
   redistribute raises even then; an unchanged pending reduction needs no work). */
#define DT_PLAN_ALLOW_PARTIAL 1

/* Plan src -> dst for this rank (the mesh's `rank`) with torch's greedy order: a reverse
   pass over mesh dims that first replicates misaligned nested sharding, then a forward
   pass. Both specs need the same mesh (shape and this rank's coordinate), global shape
   and dtype. Nothing is written on error. */
DT_API int dt_plan_redistribute(const dt_spec *src, const dt_spec *dst, int flags, dt_plan *plan);
/* Scratch bytes dt_redistribute needs for the plan with contiguous local tensors: per
   step the staging of what the collective cannot read or write in place (blocks that do
   not lie back to back in rank order, e.g. gathering Shard(1) of a matrix; each region
   rounded up to 8), plus the intermediate results between steps. Replicate -> Shard
   steps are views (no copy). 0 when every collective works straight on the caller's
   tensors: 1-D S(0)->R, P->R, P->S(0), R->S. Strided views may need more:
   dt_redistribute_scratch_bytes(). */
DT_API size_t dt_plan_scratch_bytes(const dt_plan *plan);
/* The same for these local tensors (any strided views); 0 on bad arguments. */
DT_API size_t dt_redistribute_scratch_bytes(const dt_plan *plan, const mb_tensor *in, const mb_tensor *out);

/* Link model for a time estimate: torch's _collective_utils ring model per plan step
   (redistribute_cost over _gen_transform_infos): base + hops * hop + bytes / bandwidth,
   all_to_all costed as an all_gather + a penalty. Differences: bytes are this rank's real
   (uneven) sizes where torch uses the even average, and a step on a size-1 mesh dim costs
   0 (torch still charges the base latency). No inter-host factor (one board). */
typedef struct dt_link {
    uint32_t base_ns;        /* per collective (torch: 6.6 us) */
    uint32_t hop_ns;         /* per ring hop (torch intra-host: 0.6 us) */
    uint32_t bytes_per_us;   /* bandwidth (torch: 87.7 GiB/s = 94167 B/us) */
    uint32_t a2a_penalty_ns; /* torch adds 1.0 to all_to_all */
} dt_link;
/* clang-format off */
#define DT_LINK_TORCH { 6600u, 600u, 94167u, 1000u }
/* clang-format on */
/* Estimated time of the plan in ns (link NULL: DT_LINK_TORCH). */
DT_API int dt_plan_cost_ns(const dt_plan *plan, const dt_link *link, uint64_t *ns);

/* ---- 7. Plan cache ------------------------------------------------------------------
   Fixed capacity in caller storage, least-recently-used replacement. A plan depends only
   on the mesh shape, this rank's coordinate, both placement lists, the global shape, the
   dtype and the flags: that is the key (so a re-created but equal mesh still hits). The
   key holds them as the structs lay them out: the mesh's ndim..coord, each spec's
   placements..shape (stale entries past ndim only make equal requests miss). */
typedef struct dt_plan_key {
    int32_t flags;
    unsigned char mesh[offsetof(dt_mesh, ranks)];
    unsigned char src[offsetof(dt_spec, stride) - offsetof(dt_spec, placements)];
    unsigned char dst[offsetof(dt_spec, stride) - offsetof(dt_spec, placements)];
} dt_plan_key;

typedef struct dt_cache_entry {
    dt_plan_key key;
    uint32_t stamp; /* last use; 0 = empty */
    dt_plan plan;
} dt_cache_entry;

typedef struct dt_plan_cache {
    dt_cache_entry *entries;
    int32_t capacity, count;
    int32_t last; /* the entry of the last hit (< count): looked at first */
    uint32_t clock;
    uint32_t hits, misses;
} dt_plan_cache;

#define DT_PLAN_CACHE_BYTES(capacity) ((size_t)(capacity) * sizeof(dt_cache_entry))

/* An empty plan cache over the caller's storage[capacity] (DT_PLAN_CACHE_BYTES(capacity)
   bytes; least-recently-used replacement, hit/miss counters). DT_ERR_NULL,
   DT_ERR_TOO_SMALL (capacity < 1). One cache per thread, or the caller's exclusion. */
DT_API int dt_plan_cache_init(dt_plan_cache *c, dt_cache_entry *storage, int capacity);
/* Empty the cache (counters kept). */
DT_API int dt_plan_cache_clear(dt_plan_cache *c);
/* The cached plan for (src, dst, flags), planned on a miss. *plan points into the cache
   and stays valid until that entry is evicted. A failing plan changes nothing. */
DT_API int dt_plan_cached(dt_plan_cache *c, const dt_spec *src, const dt_spec *dst, int flags, const dt_plan **plan);

/* ---- 8. Execution over ports/pg.h ---------------------------------------------------
   A dt_comm binds a mesh to a pg group: one pg sub-group per mesh dimension (this rank's
   slice along it, dt_mesh_group), in caller storage. Every rank of `parent` calls
   dt_comm_init with an equal mesh (same shape and ranks, its own `rank`) in the same order
   (pg_subgroup_init's rule); mesh ranks are world ranks and must be in `parent`, which
   must outlive the dt_comm (a mesh dim spanning all of it runs on it directly).
   Tensors are (spec, local mb_tensor) pairs; local tensors may be any strided view.
   Scratch pointers must be 8-byte aligned. Every call validates all its arguments
   before communicating: on bad input nothing is sent and no output is written. A failed
   collective returns DT_ERR_COMM (the pg_err in c->err; pg_recover() on every rank before
   the next call). */
typedef struct dt_comm {
    const dt_mesh *mesh;
    int32_t err;                      /* pg_err of the last failed collective */
    uint32_t collectives;             /* collectives this dt_comm has run */
    pg_group *g[DT_MAX_MESH_DIMS];    /* mesh dim i's group: group[i], or `parent` itself
                                           when the slice is all of it in order (a port's
                                           native collectives often serve the world only) */
    pg_group group[DT_MAX_MESH_DIMS]; /* group[i]: this rank's slice along mesh dim i */
    /* work areas (kept here, off the stack): the plan of a dt_redistribute without a cache
       and of dt_distribute; a collective's per-rank send / receive counts */
    dt_plan plan;
    size_t counts[2][DT_MAX_RANKS];
} dt_comm;

/* A DTensor: its spec and this rank's local tensor (a view, not owned). */
typedef struct dt_tensor {
    dt_spec spec;
    mb_tensor local;
} dt_tensor;

#define DT_EVERY_RANK (-1) /* dt_distribute: every rank holds the full tensor */

/* DT_ERR_MISMATCH: mesh->rank is not parent's world rank; DT_ERR_RANK: a mesh rank is not
   in parent; DT_ERR_NOT_MEMBER: this rank is not in the mesh (the call still keeps the
   parent's sub-group numbering in step with the members'). */
DT_API int dt_comm_init(dt_comm *c, const dt_mesh *mesh, pg_group *parent);
/* The sub-group of mesh dim `mesh_dim` (NULL when out of range). */
DT_API pg_group *dt_comm_group(dt_comm *c, int mesh_dim);

/* Redistribute this rank's `in` (src's local shape) into `out` (dst's local shape) along
   the plan for (src, dst, flags): from `cache` when not NULL. `out` must not overlap `in`.
   Collectives read `in` and write `out` directly where the layout allows (no copy).
   scratch_bytes >= dt_redistribute_scratch_bytes(plan, in, out) (for contiguous tensors:
   dt_plan_scratch_bytes(plan)), else DT_ERR_TOO_SMALL; scratch may be NULL when that is 0. */
DT_API int dt_redistribute(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in,
                           const dt_spec *dst, int flags, mb_tensor *out, void *scratch, size_t scratch_bytes);
#ifndef DT_NO_CONSTRUCTION
/* from_local: t = (spec, local view) with no communication. global_shape NULL: torch's
   even assumption (each Shard dim = local size x mesh sizes sharding it); pass the real
   shape for uneven shards. DT_ERR_MISMATCH when `local` is not this rank's shape under
   the spec (checked here, for this rank). */
DT_API int dt_from_local(dt_tensor *t, const dt_mesh *mesh, const dt_placement *placements, int nplacements,
                         const mb_tensor *local, const int32_t *global_shape);
/* to_local: the local view (no copy); DT_ERR_MISMATCH when it does not fit the spec. */
DT_API int dt_to_local(const dt_tensor *t, mb_tensor *local);

/* full_tensor: redistribute to all-Replicate into `global` (the global shape). */
DT_API int dt_full_tensor(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in, mb_tensor *global,
                          void *scratch, size_t scratch_bytes);
/* Its scratch with contiguous tensors (as dt_plan_scratch_bytes). */
DT_API int dt_full_tensor_scratch_bytes(const dt_spec *src, size_t *bytes);
/* distribute_tensor: this rank's piece of `global` into `local` (s's local shape).
   src_rank = the world rank holding `global` (scatterv for Shard, broadcast for
   Replicate, mesh dim 0 first; `global` is ignored elsewhere), or DT_EVERY_RANK: every
   rank holds it and takes its piece locally (no communication). Partial placements:
   DT_ERR_PARTIAL (as torch). */
DT_API int dt_distribute(dt_comm *c, const dt_spec *s, const mb_tensor *global, int src_rank, mb_tensor *local,
                         void *scratch, size_t scratch_bytes);
/* Its scratch on this rank with contiguous tensors: the root packs blocks that do not lie
   back to back; 2-D meshes hold the intermediate piece. DT_EVERY_RANK: 0. */
DT_API int dt_distribute_scratch_bytes(const dt_spec *s, int src_rank, size_t *bytes);
#endif /* DT_NO_CONSTRUCTION */

#ifndef DT_NO_OPS
/* ---- 10. Ops: sharding propagation, dispatcher, local kernels ----------------------
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
   dim varies fastest, as itertools.product), each costed as the sum over inputs of
   dt_plan_cost_ns(current -> target) (torch's redistribute_cost; an impossible
   redistribution drops the strategy), planned as on mesh position 0 (the largest
   pieces) so that every rank chooses the same strategy. Chosen as _select_min_cost_strategy: the LAST
   strategy that needs no redistribution, else the FIRST of minimum cost.
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
    float scalar;               /* *_SCALAR operand; norms' eps */
} dt_op_attrs;

/* The chosen strategy of one op call. */
typedef struct dt_op_strategy {
    int32_t op; /* dt_aten */
    int32_t nargs;
    int32_t count;                                     /* candidates generated (after filtering) */
    int32_t index;                                     /* the chosen one's position among them */
    uint64_t cost_ns;                                  /* its redistribute cost */
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
DT_API int dt_op_cache_init(dt_op_cache *c, dt_op_entry *storage, int capacity);
/* "mm", "addmm", ... (NULL for an unknown op). */
DT_API const char *dt_op_name(int op);
/* Propagate: the chosen strategy for op with static arguments attrs (NULL: all zero) on
   these input specs (all on one mesh; a rank outside it propagates as well, as torch,
   for dt_op's output spec there). cache may be NULL.
   DT_ERR_PLACEMENT_COUNT for an unknown op or a wrong argument count; DT_ERR_NO_STRATEGY
   when no candidate is possible; DT_ERR_SHAPE when the shapes or attrs do not fit the op
   (normalized_shape, weight or bias shape, gelu mode); DT_ERR_DIM for attrs.dim out of range;
   DT_ERR_DTYPE unless f32 (index operands: MB_I32); DT_ERR_UNSUPPORTED for an op this
   build has no rule for yet. Pure computation, no communication; not thread-safe on one
   cache. */
DT_API int dt_propagate(dt_op_cache *cache, int op, const dt_op_attrs *attrs, const dt_spec *const *args, int nargs,
                        dt_op_strategy *s);

/* A local kernel: out = op(in[0..nin), attrs) on local tensors (strided views allowed,
   out contiguous). Returns 0 or a negative dt_err. */
typedef int (*dt_kernel)(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin);
/* The portable C99 kernels (blocked matmul, pointwise loops, ...) behind every op. attrs
   may be NULL (all zero). */
DT_API int dt_kernel_ref(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin);

typedef struct dt_dispatch dt_dispatch;
/* A custom handler (torch's _custom_op_handlers): called by dt_op instead of the default
   path, with dt_op's arguments; it must not call dt_op for its own op. */
typedef int (*dt_handler)(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs,
                          dt_tensor *out, void *out_data, size_t out_bytes);
#ifdef DT_CBLAS
/* mm, addmm, bmm and linear through cblas_sgemm (one call per batch) when every matrix
   operand has a unit stride in one of its two last dims (a transposed view is passed as
   CblasTrans, no copy) and linear's x rows collapse; anything else, and every other op,
   runs dt_kernel_ref. Install it per op: d.kernels[DT_ATEN_MM] = dt_kernel_cblas. */
DT_API int dt_kernel_cblas(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin);
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
   return a view of its input instead, see section 10).
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
   (nothing sent then). */
DT_API int dt_op(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs, dt_tensor *out,
                 void *out_data, size_t out_bytes);

/* Tensor-parallel styles (torch.distributed.tensor.parallel.style), as placements on the
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
DT_API int dt_tp_colwise(dt_tp_style *s, int module, dt_placement output_layout);
DT_API int dt_tp_rowwise(dt_tp_style *s, int module, dt_placement output_layout);
/* sequence_dim >= 0 (or negative from the end). DT_ERR_NULL. */
DT_API int dt_tp_sequence(dt_tp_style *s, int sequence_dim);
/* out = x with placement p (Shard(-1) resolved on x's rank) on mesh dim md, moved there
   with dt_redistribute (d's comm, plan cache and scratch) into data (bytes), or a view of
   x itself when it already lies so. Errors as dt_redistribute's; DT_ERR_MESH_DIM for md,
   DT_ERR_PARTIAL for a Partial target. */
DT_API int dt_tp_redistribute(dt_dispatch *d, const dt_tensor *x, int md, dt_placement p, dt_tensor *out, void *data,
                              size_t bytes);
#endif /* DT_NO_OPS */

#ifndef DT_NO_CONV
/* ---- 11. conv2d and pooling ---------------------------------------------------------
   Local kernels (f32, max pool also int8; portable C99 direct loops, no im2col, no
   scratch) and their sharded forms over a dt_comm, after DTensor's _tp_conv.py; int8
   conv2d (dt_conv2d_q8) follows section 12, whose requantization it uses. Tensors are 4-D mb_tensor views of
   any strides: DT_NCHW puts them as [N, C, H, W], DT_NHWC as [N, H, W, C]; the weight is
   always torch's [C_out, C_in / groups, KH, KW] and the bias [C_out] (or NULL).
   Output size per spatial dim, as torch (ceil_mode False):
       out = (in + 2 * padding - dilation * (k - 1) - 1) / stride + 1   (must be >= 1)
   Padding is zeros for conv2d; max pool ignores it (torch's -inf) and, as torch, needs
   padding <= ((k - 1) * dilation + 1) / 2. Max pool picks the first maximum in window
   order (a NaN wins), as torch's CPU kernel, and its backward routes the gradient there.
   A window that holds no input element (possible when the dilation exceeds the input's
   size) gives -inf (int8: -128), torch's initial maximum, and no gradient.
   Bad parameters or inconsistent shapes: DT_ERR_SHAPE; wrong dtypes: DT_ERR_DTYPE;
   tensors not matching the shapes the call derives: DT_ERR_MISMATCH.

   Sharded (dt_conv2d, dt_maxpool2d): each mesh dim's pair (input, weight) placements
   picks the output's: (Shard(N), Replicate) -> Shard(N) (batch); (Replicate, Shard(0))
   -> Shard(C) (output channels; bias = this rank's slice of the bias, like the weight);
   (Shard(H), Replicate) -> Shard(H) (spatial, one mesh dim at most); (Replicate,
   Replicate) -> Replicate; max pool also (Shard(C)) -> Shard(C). Anything else (Partial,
   Shard(W), input channels, ...) is DT_ERR_NO_STRATEGY. torch's tp_conv shards W with
   stride 1, dilation 1 and padding k/2 only; here H is sharded with any stride,
   padding, dilation and groups (shard W by passing the transposed view).
   Spatial rows: with the input's H split over P ranks of the mesh dim, part i (the
   rank's coordinate on it) holds input rows chunk(H, P, i) = [a, b) and produces output
   rows chunk(OH, P, i) = [o0, o1) (torch.chunk sizes of the *output*, always: the
   output is an ordinary Shard(H) DTensor, also for stride > 1 and uneven H). It needs
   input rows [max(0, o0*s - p), min(H, (o1 - 1)*s - p + d*(KH - 1) + 1)) (none when
   o0 == o1); dt_conv2d_rows() gives all three ranges. Halo exchange: every rank sends
   each peer the rows of [a, b) the peer needs and receives from each peer the rows it
   needs that the peer holds (usually one neighbour each side; any rank when shards are
   thinner than the halo), over pg point-to-point with user tag DT_CONV_TAG, pairs taken
   in increasing peer order with the lower rank sending first (no deadlock, messages of
   at most pg_max_msg bytes); then it convolves its window in caller scratch. The result
   is bit-identical to the single-rank kernel (same accumulation order per element).
   Backward (dt_conv2d_sharded_backward, f32): the same strategies, gradients placed as
   torch's convolution_backward rule; spatially the reverse halo exchange sums each
   input row's gradient from the ranks whose windows read it. */
enum dt_layout { DT_NCHW = 0, DT_NHWC = 1 };

typedef struct dt_conv2d_params {
    int32_t layout;      /* DT_NCHW or DT_NHWC (input and output) */
    int32_t stride[2];   /* (h, w) >= 1 */
    int32_t padding[2];  /* (h, w) >= 0 */
    int32_t dilation[2]; /* (h, w) >= 1 */
    int32_t groups;      /* conv2d: >= 1, divides C_in and C_out (max pool: unused) */
    int32_t kernel[2];   /* max pool: window (h, w) >= 1 (conv2d: unused, the weight's) */
} dt_conv2d_params;

/* {layout, stride, padding, dilation, groups, kernel} with equal h and w. */
#define DT_CONV2D(layout, stride, pad, dil, groups)                               \
    {                                                                             \
        (layout), {(stride), (stride)}, {(pad), (pad)}, {(dil), (dil)}, (groups), \
        {                                                                         \
            0, 0                                                                  \
        }                                                                         \
    }
#define DT_POOL2D(layout, k, stride, pad)                          \
    {                                                              \
        (layout), {(stride), (stride)}, {(pad), (pad)}, {1, 1}, 1, \
        {                                                          \
            (k), (k)                                               \
        }                                                          \
    }

/* Output shape (in the layout's dim order) for input shape in_shape[4] and weight shape
   w_shape[4], or w_shape NULL for max pool (p->kernel). */
DT_API int dt_conv2d_out_shape(const dt_conv2d_params *p, const int32_t *in_shape, const int32_t *w_shape,
                               int32_t *out_shape);
/* out = conv2d(in, w) + bias (bias NULL: none). f32; out must not overlap the inputs. */
DT_API int dt_conv2d_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, const mb_tensor *bias,
                         mb_tensor *out);
/* Gradients of conv2d for grad_out (the output's shape): any of grad_in (in's shape),
   grad_w (w's shape), grad_b ([C_out]) may be NULL; each one given is overwritten. */
DT_API int dt_conv2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w,
                              const mb_tensor *grad_out, mb_tensor *grad_in, mb_tensor *grad_w, mb_tensor *grad_b);
/* Max pool of f32 or int8 (out of in's dtype). */
DT_API int dt_maxpool2d_ref(const dt_conv2d_params *p, const mb_tensor *in, mb_tensor *out);
/* grad_in (in's shape) = the gradient of max pool for grad_out (overwritten). */
DT_API int dt_maxpool2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *grad_out,
                                 mb_tensor *grad_in);

/* Spatial rows of part i of `parts` for input height h and kernel height kh (conv2d: the
   weight's KH; max pool: p->kernel[0]): rows[0..1] its input rows [a, b), rows[2..3] its
   output rows [o0, o1), rows[4..5] the input rows it needs [n0, n1) (n0 == n1: none). */
DT_API int dt_conv2d_rows(const dt_conv2d_params *p, int32_t h, int32_t kh, int32_t parts, int32_t i, int32_t *rows);
/* The output spec of dt_conv2d (w_spec NULL: of dt_maxpool2d) for these specs. */
DT_API int dt_conv2d_out_spec(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                              dt_spec *out_spec);
/* Scratch of dt_conv2d / dt_maxpool2d (w_spec NULL) on this rank (in_spec->mesh->rank):
   the halo window plus one message's staging; 0 unless the input is Shard(H). */
DT_API int dt_conv2d_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                   size_t *bytes);
/* Sharded conv2d: this rank's output `out` (out_spec's local shape; out_spec may be NULL,
   else it receives the output spec). bias: NULL or this rank's [local C_out] slice.
   Every rank of the mesh calls it with equal specs. Scratch 8-byte aligned. `out` may be
   any view, e.g. this rank's rows of one array the ranks share; ranks on cores sharing
   memory ran 3-5 % faster each into buffers of their own (bench/conv). */
DT_API int dt_conv2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                     const mb_tensor *bias, dt_spec *out_spec, mb_tensor *out, void *scratch, size_t scratch_bytes);
DT_API int dt_maxpool2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, dt_spec *out_spec, mb_tensor *out,
                        void *scratch, size_t scratch_bytes);
#ifndef DT_NO_SHARDED_CONV_BACKWARD
/* Sharded conv2d backward (f32), DTensor's tp_convolution_backward: for grad_out with the
   spec dt_conv2d gives the output (else DT_ERR_MISMATCH; redistribute it there first, as
   tp_conv does), this rank's grad_in (the input's local shape), grad_w (the weight's) and
   grad_b ([local C_out]); any may be NULL, every rank passing the same ones. Per mesh
   dim, as torch's convolution_backward rule: the input's Shard(N) or Shard(H) makes
   grad_w and grad_b Partial(sum) (each rank's rows' or images' share; dt_redistribute to
   Replicate all-reduces them), the weight's Shard(0) makes grad_in Partial(sum) and
   grad_w, grad_b Shard(0); grad_in is otherwise placed as the input. grad_specs: NULL or
   3 specs receiving those of grad_in, grad_w, grad_b. Spatial: grad_in of the rank's
   window (input rows [n0, n1) of dt_conv2d_rows) from its output rows, then the rows a
   peer owns sent to it, each rank adding the peers' parts to its own rows in increasing
   peer order (the reverse halo exchange, same pairs and tag as forward); grad_w also
   exchanges the input halo. Sums match the single-rank dt_conv2d_backward to rounding
   (rows no peer's window reaches: bit for bit). Scratch 8-byte aligned, at least
   dt_conv2d_backward_scratch_bytes (two windows and one message; 0 unless spatial). */
DT_API int dt_conv2d_sharded_backward(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                                      const dt_tensor *grad_out, mb_tensor *grad_in, mb_tensor *grad_w,
                                      mb_tensor *grad_b, dt_spec *grad_specs, void *scratch, size_t scratch_bytes);
/* Scratch of dt_conv2d_sharded_backward on this rank (in_spec->mesh->rank): two halo
   windows (input, its gradient) plus one message's staging; 0 unless the input is
   Shard(H). f32 only (else DT_ERR_DTYPE). */
DT_API int dt_conv2d_backward_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                            size_t *bytes);
#endif /* DT_NO_SHARDED_CONV_BACKWARD */
#endif /* DT_NO_CONV */

#ifndef DT_NO_QUANT
/* ---- 12. int8 quantized linear/mm ---------------------------------------------------
   Symmetric int8 (zero point 0) as torch's per_tensor_symmetric / per_channel_symmetric
   observers and quantize_per_tensor: dt_q8_scale, dt_quantize_i8. A product is exact in
   int32 (K <= DT_QMM_MAX_K) and requantized to int8 by ONE deterministic function, the
   TFLite/gemmlowp fixed-point one (no float on the device):
     dt_quantize_multiplier(real): real = mult * 2^(shift - 31), mult in [2^30, 2^31)
       (frexp, then round(q * 2^31) half away from zero; 2^31 -> 2^30 with shift + 1;
       shift < -31 -> mult 0, shift 0), TFLite's QuantizeMultiplier;
     dt_mul_qmul(x, q) = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(
       x * 2^max(shift, 0), mult), max(-shift, 0)), TFLite's MultiplyByQuantizedMultiplier
       (the left shift saturates to int32, where TFLite's overflows);
     dt_requant_i8(acc, q) = clamp(dt_mul_qmul(acc, q), -128, 127).
   For y = a @ b with scales sa, sb[n] and output scale sy, channel n's multiplier is
   dt_quantize_multiplier(sa * sb[n] / sy) (dt_qmm_multipliers). A fused ReLU is
   max(y, 0) afterwards (zero point 0). linear(x, w) is dt_qmm(x, w^T): pass w [N,K] as
   its transposed view (strides swapped) and the per-output-channel scales of w's rows.
   Sharded (dt_qmm): per mesh dim, as mm's strategies, on the placements the inputs have
   (no redistribution): S(0),R -> S(0); R,S(1) -> S(1) (each rank uses its columns'
   multipliers); S(1),S(0) -> an int32 Partial(sum) all-reduced over that mesh dim BEFORE
   requantization -> Replicate; R,R -> R; anything else DT_ERR_NO_STRATEGY. Every rank's
   output is bit-exact the slice of the single-rank result. */
typedef struct dt_qmul {
    int32_t mult;  /* Q31 fixed point in [2^30, 2^31), or 0 */
    int32_t shift; /* power of two: real = mult * 2^(shift - 31); -31..30 */
} dt_qmul;
#define DT_QMM_MAX_K 131072 /* 2^31 / (128 * 128): int32 sums of int8 products are exact */
/* DT_ERR_VALUE unless 0 <= real < 2^30 after rounding (NaN refused). */
DT_API int dt_quantize_multiplier(double real, dt_qmul *q);
DT_API int32_t dt_mul_qmul(int32_t x, dt_qmul q);
DT_API int8_t dt_requant_i8(int32_t acc, dt_qmul q);
/* torch's symmetric observer scale: max(amax / 127.5, FLT_EPSILON) for amax = max |x|
   (DT_ERR_VALUE for a negative, infinite or NaN amax). */
DT_API int dt_q8_scale(float amax, float *scale);
/* torch's quantize_val: clamp(nearbyint(x * (1 / scale)), -128, 127), ties to even
   (NaN gives 0). */
DT_API int8_t dt_quantize_i8(float x, float scale);
/* Quantize f32 x into int8 q (same shape, any strides) with scales from its amax: one
   scale (channel_dim < 0) or one per index of channel_dim (scales[x.shape[channel_dim]]),
   as torch's MinMaxObserver / PerChannelMinMaxObserver with the symmetric qschemes. */
DT_API int dt_quantize_tensor(const mb_tensor *x, int channel_dim, float *scales, mb_tensor *q);
/* q[n] = dt_quantize_multiplier(sa * sb[n] / sy) for n < nb (float products, as TFLite). */
DT_API int dt_qmm_multipliers(float sa, const float *sb, int nb, float sy, dt_qmul *q);
/* acc (MB_I32 [M,N]) = a (MB_I8 [M,K]) @ b (MB_I8 [K,N]) in int32; any strides. */
DT_API int dt_qmm_acc(const mb_tensor *a, const mb_tensor *b, mb_tensor *acc);
/* out (MB_I8) = dt_requant_i8(acc (MB_I32, same shape)) elementwise, with q[0] (nq == 1)
   or q[q0 + i] for index i along qdim (nq >= q0 + out.shape[qdim]). Any strides. */
DT_API int dt_requant_tensor(const mb_tensor *acc, const dt_qmul *q, int nq, int32_t q0, int qdim, mb_tensor *out);
/* Single rank: out [M,N] = requant(a @ b) with nq = 1 or N multipliers; acc_scratch holds
   M*N int32 (acc_bytes >= 4*M*N, 4-byte aligned). */
DT_API int dt_qmm_ref(const mb_tensor *a, const mb_tensor *b, const dt_qmul *q, int nq, mb_tensor *out,
                      void *acc_scratch, size_t acc_bytes);
/* The output spec (MB_I8, Replicate where a Partial was reduced) and a bit mask of the
   mesh dims whose int32 Partial(sum) dt_qmm all-reduces (may be NULL). */
DT_API int dt_qmm_propagate(const dt_spec *a, const dt_spec *b, dt_spec *out, uint32_t *partial_dims);
/* Scratch of dt_qmm on world rank `rank`: its local M*N int32 accumulator. */
DT_API int dt_qmm_scratch_bytes(const dt_spec *a, const dt_spec *b, int rank, size_t *bytes);
/* Distributed: out = requant(a @ b) with a, b MB_I8 dt_tensors on c's mesh, q[nq] (1, or
   N = the global columns: every rank passes all of them). out's local tensor is
   contiguous in out_data (out_bytes >= its bytes); scratch as dt_qmm_scratch_bytes (4-byte
   aligned). Validates everything before communicating. */
DT_API int dt_qmm(dt_comm *c, const dt_tensor *a, const dt_tensor *b, const dt_qmul *q, int nq, dt_tensor *out,
                  void *out_data, size_t out_bytes, void *scratch, size_t scratch_bytes);
#endif /* DT_NO_QUANT */

#if !defined(DT_NO_CONV) && !defined(DT_NO_QUANT)
/* ---- 11 (int8 part). int8 conv2d (needs sections 11 and 12) ------------------------
   Section 12's symmetric int8 (zero point 0): in and w MB_I8 (w with per-tensor or per-
   output-channel scales), every sum exact in int32 (C_in / groups * KH * KW <=
   DT_QMM_MAX_K, else DT_ERR_SHAPE), plus an optional MB_I32 bias [C_out] (scale
   s_in * s_w[oc], zero point 0, as TFLite; added with int32 saturation), requantized by
   dt_requant_i8 with q[0] (nq == 1) or q[oc] (nq == C_out; from dt_qmm_multipliers(s_in,
   s_w, C_out, s_out, q)); relu != 0: max(y, 0) afterwards. Padding is 0 (zero point 0).
   dt_maxpool2d / dt_maxpool2d_ref take int8 as is (the max of one scale's int8 values is
   the int8 of the max). dt_conv2d_q8 shards as dt_conv2d, every rank's output bit-exact
   the slice of the single-rank result; bias is this rank's slice, q all C_out entries
   (nq == 1 or the global C_out) on every rank. Bad nq: DT_ERR_SHAPE; q NULL: DT_ERR_NULL. */
DT_API int dt_conv2d_q8_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, const mb_tensor *bias,
                            const dt_qmul *q, int nq, int relu, mb_tensor *out);
DT_API int dt_conv2d_q8(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                        const mb_tensor *bias, const dt_qmul *q, int nq, int relu, dt_spec *out_spec, mb_tensor *out,
                        void *scratch, size_t scratch_bytes);
#endif /* !DT_NO_CONV && !DT_NO_QUANT */

#ifndef DT_NO_RANDOM
/* ---- 13. Random: Philox 4x32-10 and DTensor's offset-based RNG tracker ---------------
   dt_philox4x32_10 is Random123's Philox4x32-10 (its published known-answer vectors
   pass), the generator behind curand and torch's CUDA/CPU philox_engine. A stream word
   at position p for a seed is its block at counter {p/4 low, p/4 high, 0, 0} (torch's
   layout: offset in counter words 0-1, subsequence 0 in words 2-3), key {seed low, seed
   high}, word p % 4: curand()'s sequence after curand_init(seed, 0, 0), i.e. positions
   are curand's / torch's philox offsets in 32-bit draws. A uniform float is torch's
   uniform_real transformation of one draw: (w & 0xffffff) * 2^-24 in [0, 1).
   dt_rng_offsets is torch's OffsetBasedRNGTracker._compute_rng_offsets exactly: start =
   round_up4(shard linear index * first-shard numel), end increment = round_up4(global
   numel); the shard index of a tensor dim sharded on several mesh dims combines them in
   mesh-dim order, tensor dims combine row-major; the first-shard numel is the ceil piece
   of each Shard(d), from the GLOBAL size of d on every mesh dim that shards it (torch's
   _calc_first_shard_size: with a dim sharded twice only the last mesh dim counts, so
   pieces may overlap); Partial counts as Replicate.
   dt_rand / dt_dropout: by default element e of the global tensor (row-major linear index)
   takes the draw at g->offset + e, so every rank's local tensor is exactly its slice of
   the replicated result, for any mesh, placement and uneven shards; flag
   DT_RNG_TORCH_STREAM instead gives local element j (row-major in the local shape) the
   draw at g->offset + start + j, as torch's sharded ops draw (that equals the slice of
   the replicated result only when the shard is a row-major contiguous block starting at
   `start`, e.g. Shard(0) on a 1-D mesh with numel divisible by 4 per shard). Both then
   advance g->offset by the end increment on every rank (in sync).
   Which torch numbers this matches: the Philox stream is Random123's KAT/curand's; the
   offsets are torch's; the float transformation is torch's uniform_real. It does NOT
   reproduce torch.rand values: torch's CPU generator is mt19937, and its CUDA kernels
   spread draws over threads (curand_init(seed, thread, offset), curand_uniform4). */
typedef struct dt_rng {
    uint64_t seed;
    uint64_t offset; /* in 32-bit draws (torch's philox offset); a multiple of 4 between ops */
} dt_rng;
#define DT_RNG_TORCH_STREAM 1
/* out = Philox4x32-10(counter ctr, key). */
DT_API void dt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Stream word at position pos (in 32-bit draws) of seed. */
DT_API uint32_t dt_philox_draw(uint64_t seed, uint64_t pos);
/* torch's start offset and end increment for world rank `rank` (a mesh member). */
DT_API int dt_rng_offsets(const dt_spec *s, int rank, uint64_t *start, uint64_t *end_incr);
/* Fill this rank's local f32 tensor (s's local shape on s->mesh->rank, any strides) with
   uniform [0, 1) draws; g->offset += end increment. */
DT_API int dt_rand(dt_rng *g, const dt_spec *s, mb_tensor *local, int flags);
/* out = in * keep / (1 - p) with keep = (uniform < 1 - p) drawn as dt_rand (torch's
   fused dropout keeps where rand < the keep probability); p in [0, 1] (1: all zero),
   else DT_ERR_VALUE. in and out: f32, s's local shape; out may be in. */
DT_API int dt_dropout(dt_rng *g, const dt_spec *s, const mb_tensor *in, mb_tensor *out, float p, int flags);
#endif /* DT_NO_RANDOM */

#if defined(DT_NO_OPS) && !defined(DT_NO_GRAPH)
#define DT_NO_GRAPH /* the graph runs section 10's kernels */
#endif
#ifndef DT_NO_GRAPH
/* ---- 14. Graph IR and data-parallel analysis ---------------------------------------
   The embedded counterpart of the torch.fx train-step graph that torch/distributed/_spmd
   compiles. A dt_graph holds nodes in caller storage (dt_graph_bytes(capacity) bytes);
   dt_graph_add appends one: an op (dt_aten, or a dt_gop below) on earlier nodes only, so a
   graph is acyclic by construction, with static attributes (dt_op_attrs; dims are stored
   normalised) and its global output shape inferred there (f32 only). Bad input returns
   an error and leaves the graph unchanged.
   dt_graph_analyze is the seed's BatchDimAnalyzer (_spmd/batch_dim_utils.py) inside
   build_data_parallel_strategies (_spmd/data_parallel.py, "replicate" mode):
     - node types: DT_G_INPUT is an activation with batch dim 0 whose dim-0 size is the
       batch size (an input with another size: DT_ERR_BATCH); DT_G_PARAM a parameter;
       the grad operand of DT_G_SGD (torch's tag_grad), and through the non-compute ops
       before it (view, reshape, transpose, flatten, ones_like) the op producing it, a
       gradient. A non-compute op has its operand's type; a compute op with a gradient
       operand is a parameter (its other operands must be parameters), with parameter
       operands only a parameter, otherwise an activation.
     - an activation's batch dim (compute_batch_dim): view-family ops (view, reshape,
       flatten, transpose, permute, squeeze, unsqueeze, expand) follow torch's dim map
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
   global size r x batch holds r x this rank's torch.chunk rows of the batch), strides
   and arena offset. View-family ops alias their operand (no kernel, no copy; a view of
   a non-contiguous tensor copies); DT_G_SGD updates its parameter in place; a Partial
   tensor a parameter-type op consumes is all-reduced (`red`: DT_SUM gives the single-rank
   result of a summed loss, DT_AVG torch's average) right after it is computed.
   dt_gplan_run executes a plan (checked first: a bad table returns an error and runs
   nothing) with section 10's kernels (dt_kernel_ref; the graph has its own only for
   the dt_gop ops) and pg_all_reduce; dt_gplan_emit_c writes a plan as C const tables,
   so firmware links dt_gplan_run only and never plans.
   dt_graph_dist_* (below) run the same graph on any mesh through section 10's dispatcher
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
DT_API size_t dt_graph_bytes(int capacity);
/* An empty graph over storage[0..capacity). DT_ERR_NULL, DT_ERR_TOO_SMALL (capacity < 1). */
DT_API int dt_graph_init(dt_graph *g, dt_gnode *storage, int capacity);
/* Append op(in[0..nin), attrs) (attrs NULL: all zero); returns the new node's id (>= 0)
   or: DT_ERR_NODE (an operand id not an existing node), DT_ERR_TOO_SMALL (capacity
   full), DT_ERR_UNSUPPORTED (an op the graph does not run), DT_ERR_PLACEMENT_COUNT
   (operand count), DT_ERR_SHAPE (shapes that do not fit the op, a size < 1, a non-finite
   scalar), DT_ERR_DIM (a dim out of range), DT_ERR_MISMATCH (sgd's first operand not a
   parameter). The graph is unchanged on error. */
DT_API int dt_graph_add(dt_graph *g, int op, const dt_op_attrs *attrs, const int32_t *in, int nin);
/* Batch-dim analysis (above) into every node's type, bd and placement. DT_ERR_BATCH as
   above; on error every node is left unanalysed (bd DT_BD_NONE) and analysed 0. */
DT_API int dt_graph_analyze(dt_graph *g);
/* Plan for rank `rank` of `world` (1..DT_MAX_RANKS) into steps[0..cap) and *p (which
   points at steps); analyses g first. red: DT_SUM or DT_AVG. DT_ERR_RANK, DT_ERR_PLACEMENT
   (red), DT_ERR_TOO_SMALL (cap < node count, arena > 4 GB), DT_ERR_BATCH (a sharded dim
   not a multiple of the batch, a view whose local pieces do not line up),
   DT_ERR_UNSUPPORTED (a Partial tensor that both parameter and other ops consume, or one
   that is not dense), the analysis's errors. Nothing is written on error. */
DT_API int dt_graph_plan(dt_graph *g, int world, int rank, int red, dt_gplan *p, dt_gstep *steps, int cap);
/* Step `step`'s local tensor in `arena` (a view: inputs and parameters are written and
   results read through it). DT_ERR_NODE for a step out of range. */
DT_API int dt_gplan_tensor(const dt_gplan *p, void *arena, int step, mb_tensor *t);
/* Run the plan on arena[0..arena_bytes) (8-byte aligned; inputs and parameters in place).
   g: the world of p->world ranks, this one p->rank (NULL when world is 1). The plan is
   checked first (DT_ERR_NODE: bad operand ids or op; DT_ERR_SHAPE: shapes that do not fit
   an op, memory outside the arena; DT_ERR_TOO_SMALL: arena_bytes; DT_ERR_MISMATCH: the
   group is not the plan's world/rank): nothing runs then. DT_ERR_COMM: an all-reduce failed. */
DT_API int dt_gplan_run(const dt_gplan *p, void *arena, size_t arena_bytes, pg_group *g);
/* Write p as C source (a dt_gstep array `<name>_steps` and `const dt_gplan <name>`,
   which need dtensor.h) into buf[0..cap) with a NUL (data-parallel plans only: the
   dispatched run below has no C form); *len = its length without the NUL.
   buf NULL: only *len (a size query). DT_ERR_TOO_SMALL (cap <= length; nothing written),
   DT_ERR_MISMATCH (name not a C identifier of 1..63 chars), DT_ERR_NODE (an empty plan). */
DT_API int dt_gplan_emit_c(const dt_gplan *p, const char *name, char *buf, size_t cap, size_t *len);

#ifndef DT_NO_GRAPH_DIST
/* Distributed execution through the dispatcher: every node a DTensor (dt_gvalue, in
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
DT_API int dt_graph_dist_placements(dt_graph *g, int mesh_ndim, dt_placement *pl, int cap);
/* Set up v[0..g->count) for d's mesh and comm (this rank must be a member): every node's
   spec (leaves from pl, or the analysis when pl is NULL; then propagation, without the
   caches, node by node) and local storage, v[i].data at 8-byte aligned offsets of
   arena[0..arena_bytes). arena NULL: only the sizes, *arena_need and *scratch_need (the
   dispatcher scratch dt_graph_dist_run needs: redistributed operands and redistribute
   scratch; an upper bound), which may be NULL otherwise. DT_ERR_NULL, DT_ERR_NOT_MEMBER,
   DT_ERR_TOO_SMALL (cap, arena_bytes), DT_ERR_PARTIAL (a Partial leaf placement),
   dt_spec_init's errors for a leaf, dt_propagate's for a node (DT_ERR_NO_STRATEGY, ...),
   the analysis's. */
DT_API int dt_graph_dist_init(dt_graph *g, dt_dispatch *d, const dt_placement *pl, dt_gvalue *v, int cap, void *arena,
                              size_t arena_bytes, size_t *arena_need, size_t *scratch_need);
/* One run of every node in order (every rank of the mesh calls it). DT_ERR_NULL,
   DT_ERR_MISMATCH (v not set up for d's mesh), dt_op's errors (DT_ERR_TOO_SMALL: the
   dispatcher scratch; DT_ERR_COMM). */
DT_API int dt_graph_dist_run(const dt_graph *g, dt_dispatch *d, dt_gvalue *v);
#endif /* DT_NO_GRAPH_DIST */
#endif /* DT_NO_GRAPH */

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_H */

/* ---- 9. Implementation ----------------------------------------------------------- */
#if defined(DTENSOR_IMPLEMENTATION) && !defined(DTENSOR_IMPLEMENTED)
#define DTENSOR_IMPLEMENTED

#include <string.h>
#ifndef DT_NO_OPS
#include <math.h> /* the ops' kernels: expf, erff, tanhf, logf, sqrtf (link -lm) */
#endif
#ifndef DT_MEMCPY
#define DT_MEMCPY(d, s, n) memcpy((d), (s), (n))
#endif
#ifndef DT_MEMSET
#define DT_MEMSET(d, v, n) memset((d), (v), (n))
#endif
#ifndef DT_ASSERT
#define DT_ASSERT(x) ((void)0)
#endif
#ifndef DT_RESTRICT
#ifdef __cplusplus
#define DT_RESTRICT
#else
#define DT_RESTRICT restrict
#endif
#endif
#if defined(__GNUC__) || defined(__clang__)
#define DT__NOINLINE __attribute__((noinline)) /* stack: its frame apart from the caller's */
#else
#define DT__NOINLINE
#endif
/* dt_redistribute's cache-hit path inlines its helpers where the build optimizes for
   speed (-Os builds keep one copy: the same code, out of line) */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__OPTIMIZE_SIZE__)
#define DT__HOT __attribute__((always_inline)) inline
#else
#define DT__HOT
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DTENSOR_STATIC
#define DT__DEF static
#else
#define DT__DEF
#endif
#define DT__R8(x) (((x) + 7u) & ~(uint64_t)7u) /* scratch regions stay 8-byte aligned */

DT__DEF const char *dt_strerror(int err)
{
    static const char msg[] = "ok\0" DT_ERRORS(SPLITCORE__MSG) "unknown error";
    return splitcore__message(msg, err, DT_ERR_BASE, DT__ERR_COUNT);
}

/* ---- mesh ---- */

/* ndim 1..DT_MAX_MESH_DIMS, sizes >= 1, product (in *size) <= DT_MAX_RANKS. */
static int dt__mesh_shape(int ndim, const int32_t *shape, int32_t *size)
{
    int i;
    int32_t n = 1;
    if (ndim < 1 || ndim > DT_MAX_MESH_DIMS) return DT_ERR_MESH;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 1) return DT_ERR_MESH;
        if (shape[i] > DT_MAX_RANKS / n) return DT_ERR_TOO_SMALL;
        n *= shape[i];
    }
    *size = n;
    return DT_OK;
}

/* Structural check of a mesh (not the rank list: dt_mesh_init validated that). */
static int dt__mesh_check(const dt_mesh *m)
{
    int32_t n;
    int rc;
    if (!m) return DT_ERR_NULL;
    rc = dt__mesh_shape(m->ndim, m->shape, &n);
    if (!rc && (n != m->size || m->index < -1 || m->index >= n)) rc = DT_ERR_MESH;
    return rc;
}

/* Row-major position -> coordinate. */
static void dt__coord(const dt_mesh *m, int32_t index, int32_t *coord)
{
    int i;
    for (i = m->ndim - 1; i >= 0; i--) {
        coord[i] = index % m->shape[i];
        index /= m->shape[i];
    }
}

/* Position of world rank `rank` in the mesh, -1 when it is not a member. */
static int dt__index_of(const dt_mesh *m, int rank)
{
    int i;
    for (i = m->size - 1; i >= 0 && m->ranks[i] != rank; i--) {}
    return i;
}

DT__DEF int dt_mesh_init(dt_mesh *m, int ndim, const int32_t *shape, const int32_t *ranks, int rank)
{
    dt_mesh v;
    int32_t i, j;
    int rc;
    if (!m || !shape) return DT_ERR_NULL;
    DT_MEMSET(&v, 0, sizeof v);
    rc = dt__mesh_shape(ndim, shape, &v.size);
    if (rc) return rc;
    if (rank < 0) return DT_ERR_RANK;
    v.ndim = ndim;
    DT_MEMCPY(v.shape, shape, sizeof(int32_t) * (size_t)ndim);
    for (i = 0; i < v.size; i++) {
        v.ranks[i] = ranks ? ranks[i] : i;
        for (j = 0; j < i; j++)
            if (v.ranks[j] == v.ranks[i]) v.ranks[i] = -1;
        if (v.ranks[i] < 0) return DT_ERR_RANK;
    }
    v.rank = rank;
    v.index = dt__index_of(&v, rank);
    for (i = 0; i < DT_MAX_MESH_DIMS; i++) v.coord[i] = -1;
    if (v.index >= 0) dt__coord(&v, v.index, v.coord);
    *m = v;
    return DT_OK;
}

DT__DEF int dt_mesh_coord(const dt_mesh *m, int rank, int32_t *coord)
{
    int idx = dt__mesh_check(m);
    if (idx) return idx;
    if (!coord) return DT_ERR_NULL;
    idx = dt__index_of(m, rank);
    if (idx < 0) return DT_ERR_NOT_MEMBER;
    dt__coord(m, idx, coord);
    return DT_OK;
}

DT__DEF int dt_mesh_dim_size(const dt_mesh *m, int mesh_dim)
{
    int rc = dt__mesh_check(m);
    if (rc) return rc;
    if (mesh_dim < 0 || mesh_dim >= m->ndim) return DT_ERR_MESH_DIM;
    return m->shape[mesh_dim];
}

DT__DEF int dt_mesh_group(const dt_mesh *m, int rank, int mesh_dim, int32_t *ranks, int cap)
{
    int32_t c, step = 1, base;
    int i, n = dt_mesh_dim_size(m, mesh_dim), idx;
    if (n < 0) return n;
    if (!ranks) return DT_ERR_NULL;
    idx = dt__index_of(m, rank);
    if (idx < 0) return DT_ERR_NOT_MEMBER;
    if (cap < n) return DT_ERR_TOO_SMALL;
    for (i = m->ndim - 1; i > mesh_dim; i--) step *= m->shape[i];
    base = idx - ((idx / step) % n) * step; /* the slice member with coordinate 0 there */
    for (c = 0; c < n; c++) ranks[c] = m->ranks[base + c * step];
    return n;
}

/* ---- specs ---- */

static int dt__placement_check(const dt_placement *p, int ndim)
{
    if (p->kind == DT_KIND_REPLICATE) return DT_OK;
    if (p->kind == DT_KIND_PARTIAL) return (p->arg >= 0 && p->arg < DT_RED_COUNT) ? DT_OK : DT_ERR_PLACEMENT;
    if (p->kind != DT_KIND_SHARD) return DT_ERR_PLACEMENT;
    return (p->arg >= 0 && p->arg < ndim) ? DT_OK : DT_ERR_DIM;
}

DT__DEF int dt_spec_check(const dt_spec *s)
{
    int i, rc;
    uint64_t n;
    if (!s) return DT_ERR_NULL;
    rc = dt__mesh_check(s->mesh);
    if (rc) return rc;
    n = mb_dtype_size(s->dtype);
    if (!n) return DT_ERR_DTYPE;
    if (s->ndim < 0 || s->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
    for (i = 0; i < s->ndim; i++) {
        /* sizes >= 0, bytes <= 2^48 (keeps cost arithmetic exact) */
        if (s->shape[i] < 0 || s->stride[i] < 0 || (n && (uint64_t)s->shape[i] > ((uint64_t)1 << 48) / n))
            return DT_ERR_SHAPE;
        n *= (uint64_t)s->shape[i];
    }
    for (i = 0; !rc && i < s->mesh->ndim; i++) rc = dt__placement_check(&s->placements[i], s->ndim);
    return rc;
}

DT__DEF int dt_spec_init(dt_spec *s, const dt_mesh *mesh, const dt_placement *placements, int nplacements,
                         mb_dtype dtype, int ndim, const int32_t *shape, const int32_t *stride)
{
    dt_spec v;
    int i, rc;
    int64_t st = 1;
    if (!s || !mesh || !placements || (ndim > 0 && !shape)) return DT_ERR_NULL;
    rc = dt__mesh_check(mesh);
    if (rc) return rc;
    if (nplacements != mesh->ndim) return DT_ERR_PLACEMENT_COUNT;
    if (ndim < 0 || ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
    DT_MEMSET(&v, 0, sizeof v);
    v.mesh = mesh;
    v.dtype = dtype;
    v.ndim = ndim;
    for (i = ndim - 1; i >= 0; i--) {
        v.shape[i] = shape[i];
        v.stride[i] = stride ? stride[i] : (int32_t)st;
        st *= shape[i] > 1 ? shape[i] : 1;
        if (st > INT32_MAX) { /* a contiguous stride would not fit int32_t */
            if (!stride && i) return DT_ERR_SHAPE;
            st = (int64_t)INT32_MAX + 1;
        }
    }
    for (i = 0; i < nplacements; i++) {
        v.placements[i] = placements[i];
        if (v.placements[i].kind == DT_KIND_SHARD && v.placements[i].arg < 0)
            v.placements[i].arg = (int16_t)(v.placements[i].arg + ndim);
    }
    rc = dt_spec_check(&v);
    if (!rc) *s = v;
    return rc;
}

/* Product of the mesh sizes of p's Shard dims. */
static int32_t dt__num_shards(const dt_mesh *m, const dt_placement *p)
{
    int i;
    int32_t n = 1;
    for (i = 0; i < m->ndim; i++)
        if (p[i].kind == DT_KIND_SHARD) n *= m->shape[i];
    return n;
}

DT__DEF int dt_spec_is_replicated(const dt_spec *s)
{
    int i, rc = dt_spec_check(s);
    if (rc) return rc;
    for (i = 0; i < s->mesh->ndim; i++)
        if (s->placements[i].kind != DT_KIND_REPLICATE) return 0;
    return 1;
}

DT__DEF int dt_spec_num_shards(const dt_spec *s)
{
    int rc = dt_spec_check(s);
    return rc ? rc : (int)dt__num_shards(s->mesh, s->placements);
}

/* ---- shard sizes ---- */

/* Shard.local_shard_size_and_offset: full = ceil(n/k); piece i = [min(full*i, n), +size). */
static int32_t dt__chunk(int32_t n, int32_t k, int32_t i, int32_t *offset)
{
    uint32_t full = ((uint32_t)n + (uint32_t)k - 1u) / (uint32_t)k; /* n, k < 2^31: fits */
    uint64_t start = (uint64_t)full * (uint32_t)i;
    if (start >= (uint64_t)n) start = (uint64_t)n;
    if (offset) *offset = (int32_t)start;
    return (uint64_t)n - start < full ? (int32_t)((uint64_t)n - start) : (int32_t)full;
}

DT__DEF int32_t dt_chunk(int32_t n, int32_t k, int32_t i, int32_t *offset)
{
    if (k < 1) return DT_ERR_MESH;
    if (n < 0) return DT_ERR_SHAPE;
    if (i < 0 || i >= k) return DT_ERR_RANK;
    return dt__chunk(n, k, i, offset);
}

/* Local shape (and global offset) of s's global shape at mesh coordinate `coord` with
   placements p, mesh dims 0..upto-1 applied in order. An empty piece gets the global dim
   size as offset (torch). */
static void dt__local(const dt_spec *s, const int32_t *coord, const dt_placement *p, int upto, int32_t *shape,
                      int32_t *offset)
{
    int i, d;
    int32_t o;
    for (d = 0; d < s->ndim; d++) {
        shape[d] = s->shape[d];
        if (offset) offset[d] = 0;
    }
    for (i = 0; i < upto; i++) {
        if (p[i].kind != DT_KIND_SHARD) continue;
        d = p[i].arg;
        shape[d] = dt__chunk(shape[d], s->mesh->shape[i], coord[i], &o);
        if (offset) offset[d] = shape[d] ? offset[d] + o : s->shape[d];
    }
}

static uint64_t dt__bytes(const int32_t *shape, int ndim, mb_dtype dt)
{
    uint64_t n = mb_dtype_size(dt);
    int d;
    for (d = 0; d < ndim; d++) n *= (uint64_t)shape[d];
    return n;
}

DT__DEF int dt_local_shape(const dt_spec *s, int rank, int32_t *shape, int32_t *offset)
{
    int32_t coord[DT_MAX_MESH_DIMS];
    int rc = dt_spec_check(s);
    if (!rc) rc = dt_mesh_coord(s->mesh, rank, coord);
    if (!rc && !shape) rc = DT_ERR_NULL;
    if (!rc) dt__local(s, coord, s->placements, s->mesh->ndim, shape, offset);
    return rc;
}

DT__DEF int dt_local_bytes(const dt_spec *s, int rank, size_t *bytes)
{
    int32_t shape[MB_MAX_DIMS];
    int rc = dt_local_shape(s, rank, shape, 0);
    if (!rc && !bytes) rc = DT_ERR_NULL;
    if (!rc) *bytes = (size_t)dt__bytes(shape, s->ndim, s->dtype);
    return rc;
}

/* t as a view of `shape` (sizes >= 0) in dtype dt, rank ndim: 1 when it is contiguous or
   empty (a collective reads or writes it in place), DT_OK when it is another valid view,
   else the error. */
static DT__HOT int dt__fit(const mb_tensor *t, int dt, int ndim, const int32_t *shape)
{
    int d = ndim, direct = 1;
    size_t st = 1; /* the elements of dims d.. (a valid view's fit in memory) */
    if (!t) return DT_ERR_NULL;
    if ((int)t->dtype != dt || t->ndim != ndim) return DT_ERR_MISMATCH;
    while (d-- > 0) {
        if (t->shape[d] != shape[d]) return DT_ERR_MISMATCH;
        if (t->stride[d] < 0) return DT_ERR_SHAPE;
        if (shape[d] != 1 && (size_t)t->stride[d] != st) direct = 0;
        st *= (size_t)shape[d];
    }
    return !st ? 1 : !t->data ? DT_ERR_NULL : direct;
}

/* DT_OK when t is a valid view of `shape` (dt__fit), else the error. */
static int dt__fits(const mb_tensor *t, int dt, int ndim, const int32_t *shape)
{
    int rc = dt__fit(t, dt, ndim, shape);
    return rc > 0 ? DT_OK : rc;
}

DT__DEF int dt_local_view(const dt_spec *s, int rank, const mb_tensor *global, mb_tensor *local)
{
    int32_t shape[MB_MAX_DIMS], off[MB_MAX_DIMS];
    mb_tensor v;
    int d, rc = dt_local_shape(s, rank, shape, off);
    if (!rc && !local) rc = DT_ERR_NULL;
    if (!rc) rc = dt__fits(global, (int)s->dtype, s->ndim, s->shape);
    if (rc) return rc;
    v = *global;
    for (d = 0; d < s->ndim; d++) mb_narrow(&v, d, off[d], shape[d], &v);
    *local = v;
    return DT_OK;
}

/* ---- execution core (shared by the planner's scratch query) ---- */

/* Pack the n torch.chunk blocks of t along dim d (d < 0: t whole) into buf back to back,
   or unpack buf into t. */
static void dt__blocks(const mb_tensor *t, int d, int n, unsigned char *buf, int unpack)
{
    mb_tensor v = *t, p;
    int32_t pos, len;
    int r;
    for (r = 0; r < (d < 0 ? 1 : n); r++) {
        if (d >= 0) {
            len = dt__chunk(t->shape[d], n, r, &pos);
            mb_narrow(t, d, pos, len, &v);
        }
        mb_tensor_init(&p, buf, t->dtype, t->ndim, v.shape);
        if (unpack)
            mb_copy(&v, &p);
        else
            mb_copy(&p, &v);
        buf += (size_t)mb_numel(&v) * mb_dtype_size(t->dtype);
    }
}

/* Element counts of t's n blocks along dim d (torch.chunk: ceil(size/n) while it lasts). */
static DT__HOT void dt__counts(const mb_tensor *t, int d, int n, size_t *counts)
{
    uint32_t left = (uint32_t)t->shape[d], full = (left + (uint32_t)n - 1u) / (uint32_t)n, c; /* < 2^31 + n */
    size_t rest = 1;
    int i;
    for (i = 0; i < t->ndim; i++)
        if (i != d) rest *= (size_t)t->shape[i];
    for (i = 0; i < n; i++) {
        c = left < full ? left : full;
        counts[i] = c * rest;
        left -= c;
    }
}

/* 1 when a collective can use t (a checked view) in place: empty, or contiguous with its
   blocks along d (d >= 0) back to back in rank order. */
static int dt__direct(const mb_tensor *t, int d)
{
    int i, ok = mb_is_contiguous(t) > 0;
    for (i = 0; i < d; i++) ok &= t->shape[i] <= 1; /* one block before dim d */
    return ok || !mb_numel(t);
}

/* One communicating step (or a Partial(sum) partition) x -> y over group g; stage: its
   staging. Packs the send side and stages the receive side only where the layout is not
   direct. c NULL: only measure. Returns the staging bytes, or a pg error. */
static DT__HOT int64_t dt__step(dt_comm *c, const dt_step *st, const mb_tensor *x, mb_tensor *y, unsigned char *stage,
                                int fast)
{
    int n = st->group_size, op = st->op, rc, root = st->coord == st->root, pack, unstage;
    int ds = st->dst.kind == DT_KIND_SHARD ? st->dst.arg : -1, dr = st->src.kind == DT_KIND_SHARD ? st->src.arg : -1;
    /* partition and a broadcast's root start from a copy of x in the receive buffer */
    int fill = op == DT_OP_PARTITION || (op == DT_OP_BROADCAST && root), f = st->stage;
    mb_dtype dt = x->dtype;
    size_t *sc, *rcn, yn = (size_t)mb_numel(y);
    pg_group *g;
    uint64_t xb, need;
    const void *sp = x->data;
    void *rp = y->data;
    mb_tensor w;
    if (fast <= 0) { /* else the plan's, measured with contiguous tensors */
        f = (op != DT_OP_PARTITION && op != DT_OP_BROADCAST && (op != DT_OP_SCATTER || root) && !dt__direct(x, ds)) |
            !dt__direct(y, dr) << 1;
        if (fast < 0) ((dt_step *)st)->stage = f; /* planning: the plan is the caller's */
    }
    pack = f & 1;
    unstage = f >> 1;
    xb = pack ? DT__R8(dt__bytes(x->shape, x->ndim, dt)) : 0;
    need = xb + (unstage ? DT__R8(dt__bytes(y->shape, y->ndim, dt)) : 0);
    if (!c) return (int64_t)need;
    g = c->g[st->mesh_dim];
    sc = c->counts[0];
    rcn = c->counts[1];
    if (pack) sp = stage;
    if (unstage) rp = stage + xb;
    if (sp == rp) { /* only an empty tensor shares its address with the other */
        if (!mb_numel(x))
            sp = 0;
        else
            rp = 0;
    }
    if (ds >= 0) dt__counts(x, ds, n, sc);
    if (dr >= 0) dt__counts(y, dr, n, rcn);
    if (pack) dt__blocks(x, ds, n, stage, 0);
    if (fill) {
        mb_tensor_init(&w, rp, dt, y->ndim, y->shape);
        mb_copy(&w, x);
    }
    switch (op) {
    case DT_OP_PARTITION: rc = pg_scale_local(rp, yn, dt, n); break; /* float dtypes: the planner checked */
    case DT_OP_ALL_GATHER: rc = pg_all_gatherv(g, sp, rp, rcn, dt); break;
    case DT_OP_ALL_REDUCE: rc = pg_all_reduce(g, sp, rp, yn, dt, (pg_red)st->red); break;
    case DT_OP_REDUCE_SCATTER: rc = pg_reduce_scatterv(g, sp, rp, sc, dt, (pg_red)st->red); break;
#ifndef DT_NO_CONSTRUCTION
    case DT_OP_SCATTER: rc = pg_scatterv(g, sp, rp, sc, dt, st->root); break;
    case DT_OP_BROADCAST: rc = pg_broadcast(g, rp, yn, dt, st->root); break;
#endif
    default: rc = pg_all_to_allv(g, sp, sc, rp, rcn, dt); break;
    }
    if (rc < 0) return rc;
    if (unstage) dt__blocks(y, dr, n, (unsigned char *)rp, 1);
    return (int64_t)need;
}

/* Run the plan in -> out (c NULL: only measure). Local steps that only select (narrow,
   size-1 mesh dims, partitions that keep the value) are views: no copy. A communicating
   step writes the caller's `out` when it is the last, else an intermediate result; those
   alternate between scratch's two ends, each step's staging between them. Returns the
   scratch bytes the run needs, or an error. fast: in and out are contiguous (the steps'
   recorded staging applies); < 0: planning (measure and record it). */
static int64_t dt__run(dt_comm *c, const dt_plan *pl, const mb_tensor *in, mb_tensor *out, unsigned char *scratch,
                       size_t bytes, int fast)
{
    mb_tensor t[2]; /* t[flip]: the next intermediate result, t[!flip]: the current or a view */
    const mb_tensor *x = in;
    mb_tensor *y;
    uint64_t need = 0, xres = 0, ob;
    size_t end = bytes & ~(size_t)7;
    int k, flip = 0;
    int64_t rc;
    for (k = 0; k < pl->nsteps; k++) {
        const dt_step *st = &pl->steps[k];
        int32_t pos, len, d = st->dst.arg;
        if (st->op < DT_OP_PARTITION || (st->op == DT_OP_PARTITION && st->red != DT_SUM)) {
            if (st->op == DT_OP_NARROW) {
                len = dt__chunk(x->shape[d], st->group_size, st->coord, &pos);
                mb_narrow(x, d, pos, len, &t[!flip]);
                x = &t[!flip];
            }
            continue;
        }
        y = out;
        ob = 0;
        if (k + 1 < pl->nsteps) {
            ob = DT__R8(dt__bytes(st->out_shape, pl->ndim, (mb_dtype)pl->dtype));
            y = &t[flip];
            /* measuring: any valid address stands for scratch */
            mb_tensor_init(y, c ? scratch + (flip ? end - ob : 0) : (void *)pl, (mb_dtype)pl->dtype, pl->ndim,
                           st->out_shape);
        }
        rc = dt__step(c, st, x, y, c ? scratch + (flip ? xres : ob) : 0, fast);
        if (rc < 0) return c->err = (int32_t)rc, DT_ERR_COMM;
        if (xres + (uint64_t)rc + ob > need) need = xres + (uint64_t)rc + ob;
        if (c && st->op >= DT_OP_ALL_GATHER) c->collectives++;
        x = y;
        xres = ob;
        flip = !flip;
    }
    if (c && x != out) mb_copy(out, x);
    return (int64_t)need;
}

/* ---- planner ---- */

static int dt__same(dt_placement a, dt_placement b)
{
    return a.kind == b.kind && a.arg == b.arg;
}

static int dt__is_shard(dt_placement p, int dim)
{
    return p.kind == DT_KIND_SHARD && p.arg == dim;
}

/* One (src -> dst) pair on a mesh dim: 0 when allowed, else the error. */
static int dt__pair_check(dt_placement a, dt_placement b, int flags, mb_dtype dt)
{
    if (b.kind != DT_KIND_PARTIAL || dt__same(a, b)) return DT_OK;
    if (a.kind == DT_KIND_PARTIAL) return DT_ERR_PARTIAL_OP;
    if (a.kind == DT_KIND_SHARD || !(flags & DT_PLAN_ALLOW_PARTIAL)) return DT_ERR_PARTIAL;
    if (b.arg == DT_PROD) return DT_ERR_UNSUPPORTED;         /* torch: no exact n-th root */
    if (b.arg == DT_SUM && dt >= MB_I8) return DT_ERR_DTYPE; /* sum divides */
    return DT_OK;
}

/* A plan only costed (the ops' redistribute_cost) or sized (the construction calls' scratch
   queries): each step in turn in `one`, the sum of torch's link model over the steps in ns
   (dt_plan_cost_ns with DT_LINK_TORCH) and dt__run's measure of the plan's scratch with
   contiguous tensors, step by step (dt__measure): no dt_plan of ~800 B on the stack. */
typedef struct dt__cost {
    dt_step one;
    uint64_t ns;
    size_t need, xres; /* as dt__run's, need without the last communicating step: */
    size_t last, pend; /* its xres + staging, + its output when a step follows it */
} dt__cost;

/* torch's ring model of one communicating step */
static uint64_t dt__step_ns(const dt_step *st, const dt_link *link)
{
    uint64_t t = link->base_ns + (uint64_t)st->hops * link->hop_ns + st->bytes * 1000u / link->bytes_per_us;
    if (st->op == DT_OP_ALL_TO_ALL) t += link->a2a_penalty_ns;
    return t;
}

static const dt_link dt__torch = DT_LINK_TORCH;

#ifndef DT_NO_CONSTRUCTION
/* dt__run's measure (c NULL, planning) of one more step st of a plan over s's tensor that
   has no narrow or partition step, so every step reads a contiguous tensor of its in_shape
   (full_tensor's and distribute's plans) */
static void dt__measure(dt__cost *cw, const dt_spec *s, const dt_step *st)
{
    mb_tensor x, y;
    if (cw->pend > cw->need) cw->need = cw->pend; /* that step was not the last */
    cw->pend = cw->last = 0;
    DT_ASSERT(st->op == DT_OP_NOOP || st->op >= DT_OP_ALL_GATHER);
    if (st->op < DT_OP_ALL_GATHER) return;
    mb_tensor_init(&x, cw, s->dtype, s->ndim, st->in_shape);
    mb_tensor_init(&y, cw, s->dtype, s->ndim, st->out_shape);
    cw->last = cw->xres + (size_t)dt__step(0, st, &x, &y, 0, -1);
    cw->xres = (size_t)DT__R8(dt__bytes(st->out_shape, s->ndim, s->dtype));
    cw->pend = cw->last + cw->xres;
}

/* The scratch of the plan measured so far (its last step writes the caller's out). */
static size_t dt__measured(const dt__cost *cw)
{
    return cw->last > cw->need ? cw->last : cw->need;
}
#endif

/* Append the step md: cur[md] -> to (root >= 0: distribute's scatter/broadcast from that
   coordinate) to pl, or with pl NULL cost it into cw; updates cur. */
static void dt__emit(const dt_spec *s, dt_plan *pl, dt__cost *cw, dt_placement *cur, int md, dt_placement to, int root)
{
    static const unsigned char ops[3][3] = {
        /* to:  R                 S                     P               from: */
        {DT_OP_NOOP, DT_OP_NARROW, DT_OP_PARTITION},           /* R */
        {DT_OP_ALL_GATHER, DT_OP_ALL_TO_ALL, DT_OP_NOOP},      /* S (S->P rejected) */
        {DT_OP_ALL_REDUCE, DT_OP_REDUCE_SCATTER, DT_OP_NOOP}}; /* P (same op only) */
    const dt_mesh *m = s->mesh;
    dt_step *st = pl ? &pl->steps[pl->nsteps++] : &cw->one;
    int32_t n = m->shape[md];
    int op = root < 0                   ? (int)ops[cur[md].kind][to.kind]
             : to.kind == DT_KIND_SHARD ? (int)DT_OP_SCATTER
                                        : (int)DT_OP_BROADCAST;
    DT_ASSERT(!pl || pl->nsteps <= DT_MAX_STEPS);
    DT_MEMSET(st, 0, sizeof *st);
    st->mesh_dim = md;
    st->group_size = n;
    st->coord = m->coord[md];
    st->root = root;
    st->src = cur[md];
    st->dst = to;
    st->red = cur[md].kind == DT_KIND_PARTIAL ? cur[md].arg : to.kind == DT_KIND_PARTIAL ? to.arg : 0;
    st->op = n == 1 ? DT_OP_NOOP : op;
    dt__local(s, m->coord, s->placements, md, st->logical_shape, 0);
    dt__local(s, m->coord, cur, m->ndim, st->in_shape, 0);
    cur[md] = to;
    dt__local(s, m->coord, cur, m->ndim, st->out_shape, 0);
    if (st->op >= DT_OP_ALL_GATHER) {
        /* torch's ring model: bytes = comm * hops / n, comm = the data the collective spans */
        st->hops = (uint32_t)(n - 1) << (st->op == DT_OP_ALL_REDUCE);
        st->bytes = dt__bytes(st->op == DT_OP_ALL_GATHER || st->op == DT_OP_BROADCAST ? st->out_shape : st->in_shape,
                              s->ndim, s->dtype) *
                    st->hops / (uint64_t)n;
        if (pl) {
            pl->ncollectives++;
            pl->hops += st->hops;
            pl->bytes += st->bytes;
        }
#ifndef DT_NO_OPS
        else
            cw->ns += dt__step_ns(st, &dt__torch); /* only the ops cost plans */
#endif
    }
#ifndef DT_NO_CONSTRUCTION
    if (!pl) dt__measure(cw, s, st);
#endif
}

/* The plan's tensor meta, local shapes (placements cur at the end) and scratch with
   contiguous local tensors. */
static void dt__finish(dt_plan *pl, const dt_spec *s, const dt_placement *cur)
{
    mb_tensor in, out;
    pl->dtype = (int32_t)s->dtype;
    pl->ndim = s->ndim;
    dt__local(s, s->mesh->coord, cur, s->mesh->ndim, pl->out_shape, 0);
    DT_MEMCPY(pl->in_shape, pl->nsteps ? pl->steps[0].in_shape : pl->out_shape, sizeof pl->in_shape);
    mb_tensor_init(&in, pl, s->dtype, s->ndim, pl->in_shape);
    mb_tensor_init(&out, pl, s->dtype, s->ndim, pl->out_shape);
    pl->scratch = (uint64_t)dt__run(0, pl, &in, &out, 0, 0, -1);
}

/* Same mesh for planning: shape and this rank's coordinate. */
static DT__HOT int dt__mesh_same(const dt_mesh *a, const dt_mesh *b)
{
    return a == b || (a->ndim == b->ndim && a->size == b->size && a->index == b->index &&
                      !memcmp(a->shape, b->shape, sizeof a->shape) &&
                      !memcmp(a->ranks, b->ranks, sizeof(int32_t) * (size_t)a->size));
}

/* dt_plan_redistribute into plan; plan NULL: only validates, or with cw only costs (ops)
   and sizes (construction) one step at a time.
   Every check comes before the first write into *plan (planned in place: no dt_plan on the
   stack). */
static int dt__plan(const dt_spec *src, const dt_spec *dst, int flags, dt_plan *plan, dt__cost *cw)
{
    const dt_mesh *m;
    dt_placement cur[DT_MAX_MESH_DIMS], to;
    int i, j, md, nd, rc = dt_spec_check(src);
    if (!rc) rc = dt_spec_check(dst);
    if (rc) return rc;
    m = src->mesh;
    nd = m->ndim;
    if (!dt__mesh_same(m, dst->mesh) || src->dtype != dst->dtype || src->ndim != dst->ndim ||
        memcmp(src->shape, dst->shape, sizeof(int32_t) * (size_t)src->ndim))
        return DT_ERR_MISMATCH;
    if (m->index < 0) return DT_ERR_NOT_MEMBER;
    for (i = 0; i < nd; i++) {
        rc = dt__pair_check(src->placements[i], dst->placements[i], flags, src->dtype);
        if (rc) return rc;
        cur[i] = src->placements[i];
    }
    if (!plan) {
        if (!cw) return DT_OK;
        DT_MEMSET(cw, 0, sizeof *cw);
    } else {
        DT_MEMSET(plan, 0, sizeof *plan);
    }
    /* two passes: inner to outer (when sharded at all), a Shard target whose tensor dim is
       sharded differently on an earlier mesh dim (nested sharding) is first replicated;
       then outer to inner, whatever is left */
    for (j = dt__num_shards(m, cur) > 1 ? 0 : nd; j < 2 * nd; j++) {
        md = j < nd ? nd - 1 - j : j - nd;
        to = dst->placements[md];
        for (i = 0; j < nd && to.kind == DT_KIND_SHARD && i < md; i++)
            if (dt__is_shard(cur[i], to.arg) != dt__is_shard(dst->placements[i], to.arg)) to.kind = to.arg = 0;
        if (!dt__same(cur[md], to)) dt__emit(src, plan, cw, cur, md, to, -1);
    }
    if (plan) dt__finish(plan, src, cur);
    return DT_OK;
}

DT__DEF int dt_plan_redistribute(const dt_spec *src, const dt_spec *dst, int flags, dt_plan *plan)
{
    int rc = dt__plan(src, dst, flags, plan, 0); /* plan NULL: validates */
    return !rc && !plan ? DT_ERR_NULL : rc;
}

#ifndef DT_NO_OPS
/* dt_plan_cost_ns(the plan src -> dst, DT_LINK_TORCH) without a dt_plan (ops' costing). */
static DT__NOINLINE int dt__plan_cost(const dt_spec *src, const dt_spec *dst, int flags, uint64_t *ns)
{
    dt__cost cw;
    int rc = dt__plan(src, dst, flags, 0, &cw);
    *ns = cw.ns;
    return rc;
}
#endif

DT__DEF size_t dt_plan_scratch_bytes(const dt_plan *plan)
{
    return plan ? (size_t)plan->scratch : 0;
}

DT__DEF size_t dt_redistribute_scratch_bytes(const dt_plan *plan, const mb_tensor *in, const mb_tensor *out)
{
    if (!plan || (uint32_t)plan->nsteps > DT_MAX_STEPS || mb_tensor_check(in) || mb_tensor_check(out)) return 0;
    return (size_t)dt__run(0, plan, in, (mb_tensor *)out, 0, 0, 0);
}

DT__DEF int dt_plan_cost_ns(const dt_plan *plan, const dt_link *link, uint64_t *ns)
{
    uint64_t t = 0;
    int i;
    if (!plan || !ns) return DT_ERR_NULL;
    if (!link) link = &dt__torch;
    if ((uint32_t)plan->nsteps > DT_MAX_STEPS || !link->bytes_per_us) return DT_ERR_TOO_SMALL;
    for (i = 0; i < plan->nsteps; i++)
        if (plan->steps[i].op >= DT_OP_ALL_GATHER) t += dt__step_ns(&plan->steps[i], link);
    *ns = t;
    return DT_OK;
}

/* ---- plan cache ---- */

DT__DEF int dt_plan_cache_init(dt_plan_cache *c, dt_cache_entry *storage, int capacity)
{
    if (!c || !storage) return DT_ERR_NULL;
    if (capacity < 1) return DT_ERR_TOO_SMALL;
    DT_MEMSET(c, 0, sizeof *c);
    c->entries = storage;
    c->capacity = capacity;
    return DT_OK;
}

DT__DEF int dt_plan_cache_clear(dt_plan_cache *c)
{
    if (!c || !c->entries) return DT_ERR_NULL;
    c->count = c->last = 0;
    return DT_OK;
}

/* dt_plan_cached (inlined into dt_redistribute where the build optimizes for speed) */
static DT__HOT int dt__cached(dt_plan_cache *c, const dt_spec *src, const dt_spec *dst, int flags, const dt_plan **plan)
{
    dt_plan_key k;
    dt_cache_entry *e, *victim;
    int i, j, rc;
    if (!c || !c->entries || !plan || !src || !dst || !src->mesh || !dst->mesh) return DT_ERR_NULL;
    victim = c->entries;
    /* from the entry used last: a loop redistributing one way hits at the first compare */
    for (j = 0; j < c->count; j++) {
        i = c->last + j; /* c->last < c->count (or both 0), so i < 2 * c->count */
        i -= i < c->count ? 0 : c->count;
        e = &c->entries[i];
        /* a stored key came from valid specs on one mesh, so an equal key on one mesh is
           a valid, equal request */
        if (e->key.flags == flags && !memcmp(e->key.mesh, src->mesh, sizeof k.mesh) &&
            !memcmp(e->key.src, src->placements, sizeof k.src) && !memcmp(e->key.dst, dst->placements, sizeof k.dst) &&
            dt__mesh_same(src->mesh, dst->mesh)) {
            victim = e;
            c->hits++;
            c->last = i;
            goto found;
        }
        if (e->stamp < victim->stamp) victim = e;
    }
    if (c->count < c->capacity) victim = &c->entries[c->count];
    rc = dt_plan_redistribute(src, dst, flags, &victim->plan); /* writes nothing on error */
    if (rc) return rc;
    if (victim == &c->entries[c->count]) c->count++;
    victim->key.flags = flags;
    DT_MEMCPY(victim->key.mesh, src->mesh, sizeof k.mesh);
    DT_MEMCPY(victim->key.src, src->placements, sizeof k.src);
    DT_MEMCPY(victim->key.dst, dst->placements, sizeof k.dst);
    c->misses++;
found:
    victim->stamp = ++c->clock;
    *plan = &victim->plan;
    return DT_OK;
}

DT__DEF int dt_plan_cached(dt_plan_cache *c, const dt_spec *src, const dt_spec *dst, int flags, const dt_plan **plan)
{
    return dt__cached(c, src, dst, flags, plan);
}

/* ---- execution over ports/pg.h ---- */

/* Position of world rank r in group g (g->size when absent). */
static int dt__in_group(const pg_group *g, int32_t r)
{
    int j;
    for (j = 0; j < g->size && g->ranks[j] != r; j++) {}
    return j;
}

DT__DEF int dt_comm_init(dt_comm *c, const dt_mesh *mesh, pg_group *parent)
{
    int32_t *ranks;
    int prank[DT_MAX_RANKS];
    int i, j, n, rc;
    if (!c || !parent) return DT_ERR_NULL;
    rc = dt__mesh_check(mesh);
    if (rc) return rc;
    if (parent->size <= 0 || parent->rank < 0) return DT_ERR_NOT_MEMBER;
    if (mesh->rank != parent->world_rank) return DT_ERR_MISMATCH;
    for (i = 0; i < mesh->size; i++)
        if (dt__in_group(parent, mesh->ranks[i]) == parent->size) return DT_ERR_RANK;
    DT_MEMSET(c, 0, sizeof *c);
    c->mesh = mesh;
    for (i = 0; i < mesh->ndim; i++) {
        /* non-members take the slice of mesh position 0: the context counter still advances */
        ranks = c->group[i].ranks; /* the slice's world ranks, read before the group is built */
        n = dt_mesh_group(mesh, mesh->index < 0 ? mesh->ranks[0] : mesh->rank, i, ranks, PG_MAX_RANKS);
        for (j = 0; j < n; j++) prank[j] = dt__in_group(parent, ranks[j]);
        /* the whole parent in its order: its own collectives (the same on every rank) */
        for (j = 0; j < n && prank[j] == j; j++) {}
        c->g[i] = parent;
        if (j == parent->size) continue;
        c->g[i] = &c->group[i];
        rc = pg_subgroup_init(&c->group[i], parent, prank, n);
        if (rc && mesh->index >= 0) return c->err = rc, DT_ERR_COMM;
    }
    return mesh->index < 0 ? DT_ERR_NOT_MEMBER : DT_OK;
}

DT__DEF pg_group *dt_comm_group(dt_comm *c, int mesh_dim)
{
    return (c && c->mesh && mesh_dim >= 0 && mesh_dim < c->mesh->ndim) ? c->g[mesh_dim] : 0;
}

/* Checks shared by the executing calls: comm bound to mesh m, this rank a member. */
static DT__HOT int dt__comm_check(const dt_comm *c, const dt_mesh *m)
{
    if (!c || !c->mesh) return DT_ERR_NULL;
    if (!dt__mesh_same(c->mesh, m) || c->mesh->rank != m->rank) return DT_ERR_MISMATCH;
    return c->mesh->index < 0 ? DT_ERR_NOT_MEMBER : DT_OK;
}

/* Enough scratch for this run? Then run it. fast: in and out are contiguous (or empty),
   so the run is the one the plan measured. */
static DT__HOT int dt__exec(dt_comm *c, const dt_plan *pl, const mb_tensor *in, mb_tensor *out, void *scratch,
                            size_t bytes, int fast)
{
    const dt_step *st = pl->steps;
    int64_t need;
    if (fast && pl->nsteps == 1 && st->op >= DT_OP_ALL_GATHER && !st->stage) { /* the usual case, straight */
        need = dt__step(c, st, in, out, 0, 1);                                 /* no staging: no scratch */
        if (need < 0) return c->err = (int32_t)need, DT_ERR_COMM;
        c->collectives++;
        return DT_OK;
    }
    need = fast ? (int64_t)pl->scratch : dt__run(0, pl, in, out, 0, 0, 0);
    if ((uint64_t)need > bytes || (need && !scratch)) return DT_ERR_TOO_SMALL;
    need = dt__run(c, pl, in, out, (unsigned char *)scratch, bytes, fast);
    return need < 0 ? (int)need : DT_OK;
}

DT__DEF int dt_redistribute(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in,
                            const dt_spec *dst, int flags, mb_tensor *out, void *scratch, size_t scratch_bytes)
{
    const dt_plan *pl = 0;
    int fi, fo;
    /* without a cache: plan into the comm's work area (only validate without a comm) */
    int rc = cache ? dt__cached(cache, src, dst, flags, &pl) : dt__plan(src, dst, flags, c ? &c->plan : 0, 0);
    if (!rc) rc = dt__comm_check(c, src->mesh);
    if (rc) return rc;
    if (!cache) pl = &c->plan;
    fi = dt__fit(in, pl->dtype, pl->ndim, pl->in_shape);
    fo = dt__fit(out, pl->dtype, pl->ndim, pl->out_shape);
    return fi < 0 ? fi : fo < 0 ? fo : dt__exec(c, pl, in, out, scratch, scratch_bytes, fi & fo);
}

#ifndef DT_NO_CONSTRUCTION /* distribute, from_local, to_local, full_tensor */

/* dt__fit for this rank's local shape under s (s valid, this rank a member). */
static int dt__fits_local(const mb_tensor *t, const dt_spec *s)
{
    int32_t shape[MB_MAX_DIMS];
    dt__local(s, s->mesh->coord, s->placements, s->mesh->ndim, shape, 0);
    return dt__fit(t, (int)s->dtype, s->ndim, shape);
}

DT__DEF int dt_from_local(dt_tensor *t, const dt_mesh *mesh, const dt_placement *placements, int nplacements,
                          const mb_tensor *local, const int32_t *global_shape)
{
    dt_spec s;
    int i, rc;
    if (!t || !local) return DT_ERR_NULL;
    if (mb_tensor_check(local) != MB_OK) return DT_ERR_SHAPE;
    rc = dt_spec_init(&s, mesh, placements, nplacements, local->dtype, local->ndim,
                      global_shape ? global_shape : local->shape, 0);
    if (rc) return rc;
    if (!global_shape) { /* torch: the even case, local size x the mesh sizes sharding the dim */
        for (i = 0; i < mesh->ndim; i++)
            if (s.placements[i].kind == DT_KIND_SHARD) s.shape[s.placements[i].arg] *= mesh->shape[i];
        rc = dt_spec_init(&s, mesh, s.placements, nplacements, local->dtype, local->ndim, s.shape, 0);
    }
    if (!rc && mesh->index < 0) rc = DT_ERR_NOT_MEMBER;
    if (!rc) rc = dt__fits_local(local, &s);
    if (rc < 0) return rc;
    t->spec = s;
    t->local = *local;
    return DT_OK;
}

DT__DEF int dt_to_local(const dt_tensor *t, mb_tensor *local)
{
    int rc;
    if (!t || !local) return DT_ERR_NULL;
    rc = dt_spec_check(&t->spec);
    if (!rc && t->spec.mesh->index < 0) rc = DT_ERR_NOT_MEMBER;
    if (!rc) rc = dt__fits_local(&t->local, &t->spec);
    if (rc < 0) return rc;
    *local = t->local;
    return DT_OK;
}

/* s with every placement Replicate */
static dt_spec dt__replicated(const dt_spec *s)
{
    dt_spec r = *s;
    DT_MEMSET(r.placements, 0, sizeof r.placements);
    return r;
}

DT__DEF int dt_full_tensor(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in, mb_tensor *global,
                           void *scratch, size_t scratch_bytes)
{
    dt_spec r;
    if (!src) return DT_ERR_NULL;
    r = dt__replicated(src);
    return dt_redistribute(c, cache, src, in, &r, 0, global, scratch, scratch_bytes);
}

DT__DEF int dt_full_tensor_scratch_bytes(const dt_spec *src, size_t *bytes)
{
    dt__cost cw; /* the plan one step at a time */
    dt_spec r;
    int rc;
    if (!src || !bytes) return DT_ERR_NULL;
    r = dt__replicated(src);
    rc = dt__plan(src, &r, 0, 0, &cw);
    if (!rc) *bytes = dt__measured(&cw);
    return rc;
}

/* distribute's plan on this rank: DT_EVERY_RANK plans Replicate -> s (local views; it
   also rejects Partial targets and non-members); from src_rank's coordinate, mesh dim 0
   first, mesh dim i runs on the ranks whose coordinates past i are the source's (the
   others join later). Into pl, or one step at a time into cw (pl NULL). */
static int dt__dist_plan(const dt_spec *s, int src_rank, dt_plan *pl, dt__cost *cw)
{
    const dt_mesh *m = s->mesh;
    int32_t sc[DT_MAX_MESH_DIMS];
    dt_spec r = dt__replicated(s);
    int i, j, rc = dt__plan(&r, s, 0, pl, cw);
    if (!rc && src_rank != DT_EVERY_RANK) rc = dt_mesh_coord(m, src_rank, sc);
    if (rc || src_rank == DT_EVERY_RANK) return rc;
    if (pl) DT_MEMSET(pl, 0, sizeof *pl); /* cw: the local steps measured nothing */
    for (i = 0; i < m->ndim; i++) {
        for (j = i + 1; j < m->ndim && m->coord[j] == sc[j]; j++) {}
        if (j < m->ndim)
            r.placements[i] = s->placements[i]; /* not on the source's path yet */
        else
            dt__emit(s, pl, cw, r.placements, i, s->placements[i], sc[i]);
    }
    if (pl) dt__finish(pl, s, r.placements);
    return DT_OK;
}

DT__DEF int dt_distribute_scratch_bytes(const dt_spec *s, int src_rank, size_t *bytes)
{
    dt__cost cw; /* the plan one step at a time */
    int rc = dt_spec_check(s);
    if (!rc && !bytes) rc = DT_ERR_NULL;
    if (!rc) rc = dt__dist_plan(s, src_rank, 0, &cw);
    if (!rc) *bytes = dt__measured(&cw);
    return rc;
}

DT__DEF int dt_distribute(dt_comm *c, const dt_spec *s, const mb_tensor *global, int src_rank, mb_tensor *local,
                          void *scratch, size_t scratch_bytes)
{
    dt_plan *pl = 0;
    mb_tensor x;
    int fast = 1, rc = dt_spec_check(s);
    if (!rc) rc = dt__comm_check(c, s->mesh);
    if (!rc) rc = dt__dist_plan(s, src_rank, pl = &c->plan, 0); /* the comm's work area */
    if (!rc) rc = fast = dt__fits_local(local, s);
    if (rc < 0) return rc;
    if (src_rank == DT_EVERY_RANK || src_rank == s->mesh->rank) {
        rc = dt__fit(global, (int)s->dtype, s->ndim, s->shape);
        if (rc < 0) return rc;
        fast &= rc;
        x = *global;
    } else { /* only its shape is read here (contiguous): the first step receives */
        mb_tensor_init(&x, (void *)s, s->dtype, s->ndim, pl->in_shape);
    }
    return dt__exec(c, pl, &x, local, scratch, scratch_bytes, fast);
}

#endif /* DT_NO_CONSTRUCTION */

#ifndef DT_NO_OPS /* ops: propagation, dispatcher, kernels */

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
    {DT__F_VIEW, 1, 1, 0},      {DT__F_VIEW, 1, 1, 0},      {DT__F_CUSTOM, 2, 3, 0}};   /* expand flatten amp */

DT__DEF const char *dt_op_name(int op)
{
    static const char names[] = "mm\0addmm\0bmm\0add\0sub\0mul\0div\0neg\0relu\0gelu\0exp\0tanh\0sigmoid\0"
                                "add.Scalar\0sub.Scalar\0mul.Scalar\0div.Scalar\0linear\0sum\0mean\0max\0min\0"
                                "amax\0argmax\0softmax\0log_softmax\0layer_norm\0rms_norm\0embedding\0"
                                "cross_entropy\0nll_loss\0view\0reshape\0transpose\0permute\0squeeze\0"
                                "unsqueeze\0expand\0flatten\0_amp_foreach_non_finite_check_and_unscale_";
    const char *p = names;
    if (op < 0 || op >= DT_ATEN_COUNT) return 0;
    for (; op > 0; op--) p += strlen(p) + 1;
    return p;
}

DT__DEF int dt_op_cache_init(dt_op_cache *c, dt_op_entry *storage, int capacity)
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

/* Cost of moving spec a to placements p (torch's redistribute_cost); -1 impossible.
   Planned as on mesh position 0 (the largest pieces), so every rank gets the same cost
   and chooses the same strategy. */
static int64_t dt__redist_cost(const dt_spec *a, const dt_placement *p)
{
    dt_mesh m0 = *a->mesh;
    dt_spec s = *a, t;
    uint64_t ns;
    m0.index = 0;
    m0.rank = m0.ranks[0];
    DT_MEMSET(m0.coord, 0, sizeof m0.coord);
    s.mesh = &m0;
    t = s;
    DT_MEMCPY(t.placements, p, sizeof(dt_placement) * (size_t)m0.ndim);
    if (!dt__shardable(a, p) || dt__plan_cost(&s, &t, DT_PLAN_ALLOW_PARTIAL, &ns)) return -1;
    return (int64_t)ns;
}

/* Consider one candidate (in/out placements in s->in, s->out) against the best so far in
   *best: torch's _select_min_cost_strategy, streamed. */
static void dt__consider(const dt_spec *const *args, int nargs, dt_op_strategy *cand, dt_op_strategy *best,
                         int *noredist)
{
    int64_t c, sum = 0;
    int i, same = 1, nd = args[0]->mesh->ndim;
    for (i = 0; i < nargs; i++) {
        c = dt__redist_cost(args[i], cand->in[i]);
        if (c < 0) return;
        sum += c;
        if (memcmp(args[i]->placements, cand->in[i], sizeof(dt_placement) * (size_t)nd)) same = 0;
    }
    cand->index = cand->count++;
    cand->cost_ns = (uint64_t)sum;
    if (same) { /* the last one that needs no redistribution wins */
        *best = *cand;
        *noredist = 1;
    } else if (!*noredist && (best->index < 0 || (uint64_t)sum < best->cost_ns)) {
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

static int dt__prop_einsum(const dt_spec *const *args, int nargs, int op, dt_op_strategy *best)
{
    const dt_placement(*opts)[3] = op == DT_ATEN_BMM ? dt__bmm_opts : dt__mm_opts;
    int lin = op == DT_ATEN_LINEAR, li = lin ? 0 : nargs - 2, ri = li + 1, bi = lin ? 2 : 0;
    int nd = args[0]->mesh->ndim, total = 1, i, md, noredist = 0;
    const dt_spec *lhs = args[li], *rhs = args[ri];
    dt_op_strategy cand;
    int rank = lin ? lhs->ndim : op == DT_ATEN_BMM ? 3 : 2, nopt = lin ? rank + 2 : op == DT_ATEN_BMM ? 5 : 4;
    dt_placement lo[3];
    if (lin ? (rank < 2 || rhs->ndim != 2 || lhs->shape[rank - 1] != rhs->shape[1])
            : (lhs->ndim != rank || rhs->ndim != rank || lhs->shape[rank - 1] != rhs->shape[rank - 2] ||
               (rank == 3 && lhs->shape[0] != rhs->shape[0])))
        return DT_ERR_SHAPE;
    DT_MEMCPY(best->out_shape, lhs->shape, sizeof best->out_shape);
    best->out_shape[rank - 1] = rhs->shape[lin ? 0 : rank - 1];
    best->out_ndim = rank;
    if (nargs == 3) { /* addmm's bias (1-D or 2-D), linear's (1-D): broadcast to the output */
        const dt_spec *b = args[bi];
        if (b->ndim < 1 || b->ndim > (lin ? 1 : 2)) return DT_ERR_SHAPE;
        for (i = 0; i < b->ndim; i++) {
            int32_t o = best->out_shape[rank - b->ndim + i];
            if (b->shape[i] != o && b->shape[i] != 1) return DT_ERR_SHAPE;
        }
    }
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
    for (i = 1; i < nargs; i++) {
        if (args[i]->ndim != args[0]->ndim ||
            memcmp(args[i]->shape, args[0]->shape, sizeof(int32_t) * (size_t)args[0]->ndim))
            return DT_ERR_SHAPE;
        if (dt__num_shards(args[i]->mesh, args[i]->placements) > dt__num_shards(args[fi]->mesh, args[fi]->placements))
            fi = i;
    }
    f = args[fi];
    best->out_ndim = f->ndim;
    DT_MEMCPY(best->out_shape, f->shape, sizeof best->out_shape);
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

/* Dim d of an ndim-dim tensor, negative from the end; -1 when out of range. */
static int dt__opdim(int32_t d, int ndim)
{
    if (d < 0) d += ndim;
    return d >= 0 && d < ndim ? (int)d : -1;
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
    int64_t c;
    cand->cost_ns = 0;
    for (i = 0; i < nargs; i++) {
        if (!memcmp(args[i]->placements, cand->in[i], sizeof(dt_placement) * (size_t)args[i]->mesh->ndim)) continue;
        c = dt__redist_cost(args[i], cand->in[i]);
        if (c < 0) return DT_ERR_NO_STRATEGY;
        cand->cost_ns += (uint64_t)c;
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
static int dt__prop_reduce(const dt_spec *const *args, int op, const dt_op_attrs *at, dt_op_strategy *best)
{
    static const signed char red[6] = {DT_SUM, DT_AVG, DT_MAX, DT_MIN, DT_MAX, -1};
    const dt_spec *x = args[0];
    dt_op_strategy cand;
    int nd = x->mesh->ndim, md, d, o = 0, r = (int)red[op - DT_ATEN_SUM], lin = r >= 0;
    uint32_t mask = (1u << x->ndim) - 1u;
    if (at->dim != DT_DIM_ALL) {
        d = dt__opdim(at->dim, x->ndim);
        if (d < 0) return DT_ERR_DIM;
        mask = 1u << d;
    }
    for (d = 0; d < x->ndim; d++) {
        if ((mask >> d & 1u) && !x->shape[d] && op >= DT_ATEN_MAX) return DT_ERR_SHAPE; /* max of nothing */
        if (!(mask >> d & 1u) || at->keepdim) best->out_shape[o++] = mask >> d & 1u ? 1 : x->shape[d];
    }
    best->out_ndim = o;
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
static int dt__prop_softmax_norm(const dt_spec *const *args, int nargs, int op, const dt_op_attrs *at,
                                 dt_op_strategy *best)
{
    const dt_spec *x = args[0];
    dt_op_strategy cand;
    int nd = x->mesh->ndim, axis = x->ndim - at->ndim, i, d;
    uint32_t mask;
    if (op <= DT_ATEN_LOG_SOFTMAX) {
        d = dt__opdim(at->dim, x->ndim);
        if (d < 0) return DT_ERR_DIM;
        mask = 1u << d;
    } else {
        if (at->ndim < 1 || axis < 0) return DT_ERR_SHAPE;
        for (i = 0; i < nargs; i++) { /* x's last dims, weight and bias == normalized_shape */
            int off = i ? 0 : axis;
            if (i && args[i]->ndim != at->ndim) return DT_ERR_SHAPE;
            for (d = 0; d < at->ndim; d++)
                if (args[i]->shape[off + d] != at->shape[d]) return DT_ERR_SHAPE;
        }
        mask = ((1u << x->ndim) - 1u) & ~((1u << axis) - 1u);
    }
    best->out_ndim = x->ndim;
    DT_MEMCPY(best->out_shape, x->shape, sizeof best->out_shape);
    cand = *best;
    dt__repl(x->placements, nd, mask, cand.in[0]);
    DT_MEMCPY(cand.out, cand.in[0], sizeof cand.out);
    for (i = 1; i < nargs; i++) dt__repl(args[i]->placements, nd, ~0u, cand.in[i]);
    return dt__prop_one(args, nargs, &cand, best);
}

/* ---- views, embedding, losses: propagation ---- */

#ifndef DT_NO_MODEL_OPS
/* dt__opdim, where a 0-d tensor takes dim 0 / -1 (torch wraps scalars). */
static int dt__vdim(int32_t d, int n)
{
    return dt__opdim(d, n ? n : 1);
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

/* view/reshape's target shape with one -1 inferred (infer_size) into to[]. */
static int dt__infer(const dt_op_attrs *at, int64_t total, int32_t *to)
{
    int i, neg = -1;
    int64_t p = 1;
    if (at->ndim < 0 || at->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
    for (i = 0; i < at->ndim; i++) {
        to[i] = at->shape[i];
        if (to[i] == -1 && neg < 0)
            neg = i;
        else if (to[i] < 0)
            return DT_ERR_SHAPE;
        else
            p *= to[i];
    }
    if (neg >= 0) {
        if (!p || total % p) return DT_ERR_SHAPE;
        to[neg] = (int32_t)(total / p);
    } else if (p != total) {
        return DT_ERR_SHAPE;
    }
    return DT_OK;
}

/* view_groups: the input dims [f0, fi) flatten into the output dims [t0, ti), group by
   group. src[od]: the input dim output dim od keeps a shard of; flag bits per input dim:
   1 used, 2 a flatten's non-leftmost dim, 4 a flatten's leftmost; split[id]: the first
   piece's size when its group splits into several dims. */
static int dt__view_groups(const int32_t *in, int fn, const int32_t *to, int tn, int32_t *src, uint8_t *flag,
                           int32_t *split)
{
    int fi = 0, ti = 0, j;
    while (fi < fn || ti < tn) {
        int f0 = fi, t0 = ti, first = -1;
        uint32_t f = fi < fn ? (uint32_t)in[fi++] : 1u, t = ti < tn ? (uint32_t)to[ti++] : 1u;
        if (f == 1 && t != 1)
            ti = t0;
        else if (f != 1 && t == 1)
            fi = f0;
        else
            while (f != t) {
                if (f < t && fi < fn)
                    f *= in[fi++];
                else if (f > t && ti < tn)
                    t *= to[ti++];
                else
                    return DT_ERR_SHAPE; /* zero-size dims that do not pair up */
            }
        if (ti == t0) continue; /* no output dim: the input dims (size 1) are dropped */
        for (j = f0; j < fi; j++) flag[j] = (uint8_t)(1 | (fi - f0 < 2 ? 0 : j == f0 ? 4 : 2));
        for (j = t0; j < ti && first < 0; j++)
            if (to[j] != 1 || ti - t0 == 1) first = j;
        if (first >= 0 && fi > f0) src[first] = f0;
        if (ti - t0 > 1 && first >= 0 && fi > f0) split[f0] = to[first];
    }
    return DT_OK;
}

/* The view op's dim map for global input shape sh (n dims): output shape and ndim, src,
   flag and split as dt__view_groups. squeeze, unsqueeze and flatten are reshapes to the
   shape they make (view_groups then gives dim_squeeze's, dim_unsqueeze's and
   dim_flatten's maps, except that a size-1 dim never blocks a shard). */
static DT__NOINLINE int dt__view_map(int op, const dt_op_attrs *at, const int32_t *sh, int n, int32_t *osh,
                                     int32_t *ond, int32_t *src, uint8_t *flag, int32_t *split)
{
    int i, m = 0, d = dt__vdim(at->dim, n), e = dt__vdim(at->dim2, n);
    int64_t total = 1;
    for (i = 0; i < MB_MAX_DIMS; i++) {
        src[i] = -1;
        flag[i] = 0;
        split[i] = 0;
    }
    for (i = 0; i < n; i++) total *= sh[i];
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_PERMUTE) {
        e = dt__perm(op, at, n, src);
        if (e) return e;
        for (m = 0; m < n; m++) {
            osh[m] = sh[src[m]];
            flag[m] = 1;
        }
    } else if (op == DT_ATEN_EXPAND) {
        if (at->ndim < n || at->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
        for (m = 0; m < at->ndim; m++) {
            int32_t want = at->shape[m];
            i = m - (at->ndim - n);
            if (i >= 0 && (want == -1 || want == sh[i])) { /* InputDim */
                osh[m] = sh[i];
                src[m] = i;
                flag[i] = 1;
            } else if (want >= 0 && (i < 0 || sh[i] == 1)) { /* NewDim, Broadcast: replicated */
                osh[m] = want;
            } else {
                return DT_ERR_SHAPE;
            }
        }
    } else {
        if (op == DT_ATEN_UNSQUEEZE) {
            d = dt__vdim(at->dim, n + 1);
            if (n + 1 > MB_MAX_DIMS) return DT_ERR_SHAPE;
        }
        if ((op == DT_ATEN_SQUEEZE && at->dim != DT_DIM_ALL && d < 0) || (op == DT_ATEN_UNSQUEEZE && d < 0) ||
            (op == DT_ATEN_FLATTEN && (d < 0 || e < d)))
            return DT_ERR_DIM;
        for (i = 0; i <= n && op != DT_ATEN_VIEW && op != DT_ATEN_RESHAPE; i++) {
            if (op == DT_ATEN_UNSQUEEZE && i == d) osh[m++] = 1;
            if (i == n) break;
            if (op == DT_ATEN_FLATTEN && i > d && i <= e)
                osh[m - 1] *= sh[i];
            else if (op != DT_ATEN_SQUEEZE || sh[i] != 1 || (at->dim != DT_DIM_ALL && i != d))
                osh[m++] = sh[i];
        }
        if (op == DT_ATEN_FLATTEN && !n) osh[m++] = 1;
        if (op == DT_ATEN_VIEW || op == DT_ATEN_RESHAPE) {
            if (dt__infer(at, total, osh)) return DT_ERR_SHAPE;
            m = at->ndim;
        }
        if (dt__view_groups(sh, n, osh, m, src, flag, split)) return DT_ERR_SHAPE;
    }
    *ond = m;
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
    if (w->ndim != 2 || ni + 1 > MB_MAX_DIMS) return DT_ERR_SHAPE;
    DT_MEMCPY(best->out_shape, ix->shape, sizeof(int32_t) * (size_t)ni);
    best->out_shape[ni] = w->shape[1];
    best->out_ndim = ni + 1;
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
    if (x->ndim < 1 || t->ndim != x->ndim - 1 || at->mode < 0 || at->mode > 2) return DT_ERR_SHAPE;
    for (i = 0; i < t->ndim; i++)
        if (t->shape[i] != x->shape[i + (i >= c)]) return DT_ERR_SHAPE;
    best->out_ndim = at->mode ? 0 : t->ndim;
    DT_MEMCPY(best->out_shape, t->shape, sizeof(int32_t) * (size_t)t->ndim);
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
    switch (dt__ops[op].family) {
    case DT__F_EINSUM: return dt__prop_einsum(args, nargs, op, best);
    case DT__F_POINTWISE: /* gelu's approximate: 0 "none", 1 "tanh" */
        return op == DT_ATEN_GELU && (at->mode < 0 || at->mode > 1) ? DT_ERR_SHAPE
                                                                    : dt__prop_pointwise(args, nargs, op, best);
    case DT__F_REDUCE: return dt__prop_reduce(args, op, at, best);
    case DT__F_SOFTMAX:
    case DT__F_NORM: return dt__prop_softmax_norm(args, nargs, op, at, best);
#ifndef DT_NO_MODEL_OPS
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

DT__DEF int dt_propagate(dt_op_cache *c, int op, const dt_op_attrs *attrs, const dt_spec *const *args, int nargs,
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
        victim = c->entries;
        for (i = 0; i < c->count; i++) {
            e = &c->entries[i];
            if (!memcmp(&e->key, &k, sizeof k)) {
                c->hits++;
                e->stamp = ++c->clock;
                *s = e->s;
                return DT_OK;
            }
            if (e->stamp < victim->stamp) victim = e;
        }
        if (c->count < c->capacity) victim = &c->entries[c->count];
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

#ifndef DT_MM_BLOCK
#define DT_MM_BLOCK 64
#endif

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
static float dt__at(const mb_tensor *t, int32_t i)
{
    size_t off = 0;
    int d;
    for (d = t->ndim - 1; d >= 0; d--) {
        off += (size_t)(i % t->shape[d]) * (size_t)t->stride[d];
        i /= t->shape[d];
    }
    return ((const float *)t->data)[off];
}

static int dt__contig(const mb_tensor *t)
{
    int32_t d, s = 1;
    for (d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != s) return 0;
        s *= t->shape[d];
    }
    return 1;
}

/* Elements of t. */
static int32_t dt__numel(const mb_tensor *t)
{
    int32_t n = 1, d;
    for (d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
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
    int32_t n = dt__numel(out), nn = out->shape[r], k = a->shape[r], m = out->shape[r - 1], bi, batches = 1;
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
    int32_t i, n = dt__numel(out);
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
    case DT_ATEN_ADD_SCALAR: return x + at->scalar;
    case DT_ATEN_SUB_SCALAR: return x - at->scalar;
    case DT_ATEN_MUL_SCALAR: return x * at->scalar;
    default: return x / at->scalar;
    }
}

static int dt__kernel_unary(int op, const dt_op_attrs *at, mb_tensor *out, const mb_tensor *x)
{
    float *DT_RESTRICT y = (float *)out->data;
    int32_t i, n = dt__numel(out);
    if (op == DT_ATEN_GELU && (at->mode < 0 || at->mode > 1)) return DT_ERR_SHAPE;
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

/* Elements of t over dims [lo, hi). */
static int32_t dt__extent(const mb_tensor *t, int lo, int hi)
{
    int32_t n = 1;
    for (; lo < hi; lo++) n *= t->shape[lo];
    return n;
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
    if (norm) {
        lo = x->ndim - at->ndim;
        if (at->ndim < 1 || lo < 0) return DT_ERR_SHAPE;
    } else if (at->dim != DT_DIM_ALL || sm) {
        lo = dt__opdim(at->dim, x->ndim);
        if (lo < 0) return DT_ERR_DIM;
        hi = lo + 1;
    }
    outer = dt__extent(x, 0, lo);
    r = dt__extent(x, lo, hi);
    inner = dt__extent(x, hi, x->ndim);
    for (i = 1; i < nin; i++) /* weight, bias: normalized_shape's elements */
        if (dt__numel(in[i]) != r) return DT_ERR_SHAPE;
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
#ifndef DT_NO_MODEL_OPS

/* Strides of the view of x with shape osh (ond dims) in ost (torch's computeStride);
   DT_ERR_SHAPE when x's strides do not allow one. */
static int dt__restride(const mb_tensor *x, const int32_t *osh, int ond, int32_t *ost)
{
    int td, vd = ond - 1;
    int64_t tn = 1, vn = 1, base;
    if (!x->ndim || !dt__numel(x)) { /* contiguous strides do */
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
        if (dt__numel(x) != dt__numel(v) || dt__restride(x, osh, ond, v->stride)) return DT_ERR_SHAPE;
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
    if (op == DT_ATEN_TRANSPOSE || op == DT_ATEN_PERMUTE || op == DT_ATEN_EXPAND || dt__numel(x) != dt__numel(out) ||
        !dt__contig(out))
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
    int32_t rows = w->shape[0], dd = w->shape[1], n = dt__numel(ix), i, j, r;
    int32_t off = at->mode ? at->dim2 : 0, all = at->mode ? at->shape[0] : rows;
    if (w->ndim != 2 || out->ndim != ix->ndim + 1 || out->shape[ix->ndim] != dd || dt__numel(out) != n * dd)
        return DT_ERR_SHAPE;
    for (i = 0; i < n; i++) { /* every index first: bad input writes nothing */
        r = ((const int32_t *)ix->data)[dt__off(ix, 0, ix->ndim, i)];
        if (r < 0 || r >= all) return DT_ERR_RANK;
    }
    for (i = 0; i < n; i++) {
        const float *row;
        r = ((const int32_t *)ix->data)[dt__off(ix, 0, ix->ndim, i)] - off;
        row = (const float *)w->data + (size_t)r * (size_t)w->stride[0];
        for (j = 0; j < dd; j++)
            y[(size_t)i * (size_t)dd + (size_t)j] = r < 0 || r >= rows ? 0.0f : row[(size_t)j * (size_t)w->stride[1]];
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
    int32_t cc = x->shape[c], cs = x->stride[c], n = dt__numel(t), i, j, q, v, cnt = 0;
    if (x->ndim < 1 || t->ndim != x->ndim - 1 || at->mode < 0 || at->mode > 2 ||
        (at->mode ? out->ndim != 0 : (out->ndim != t->ndim || dt__numel(out) != n)))
        return DT_ERR_SHAPE;
    for (d = 0; d < t->ndim; d++)
        if (t->shape[d] != x->shape[d + (d >= c)]) return DT_ERR_SHAPE;
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

static const dt_op_attrs dt__no_attrs = {0, 0, 0, 0, 0, 0, {0}, 0.0f};

DT__DEF int dt_kernel_ref(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    if (!out || !in || !dt__op_ok(op, nin)) return DT_ERR_NULL;
    if (!attrs) attrs = &dt__no_attrs;
    switch (dt__ops[op].family) {
    case DT__F_EINSUM: return dt__kernel_einsum(op, out, in, nin);
    case DT__F_POINTWISE:
        return op <= DT_ATEN_RELU ? dt__kernel_pointwise(op, out, in, nin) : dt__kernel_unary(op, attrs, out, in[0]);
    case DT__F_REDUCE:
    case DT__F_SOFTMAX:
    case DT__F_NORM: return dt__kernel_rows(op, attrs, out, in, nin);
#ifndef DT_NO_MODEL_OPS
    case DT__F_VIEW: return dt__kernel_view(op, attrs, out, in[0]);
    case DT__F_EMBED: return dt__kernel_embed(attrs, out, in[0], in[1]);
    case DT__F_LOSS: return dt__kernel_loss(op, attrs, out, in[0], in[1]);
#endif
    default: break;
    }
    return DT_ERR_UNSUPPORTED;
}

#ifdef DT_CBLAS
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

DT__DEF int dt_kernel_cblas(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin)
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
    dt__einsum_init((float *)out->data, dt__numel(out), nn, nin == 3 ? in[lin ? 2 : 0] : 0);
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
static DT__NOINLINE int dt__op_out(const dt_op_strategy *st, const dt_mesh *m, dt_spec *os, mb_tensor *y, void *data)
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
static DT__NOINLINE int dt__op_move(dt_dispatch *d, const dt_spec *sa, const mb_tensor *la, const dt_placement *p,
                                    mb_tensor *moved, unsigned char *cur, size_t *left)
{
    dt_spec t = *sa;
    int32_t sh[MB_MAX_DIMS];
    size_t need;
    DT_MEMCPY(t.placements, p, sizeof(dt_placement) * (size_t)t.mesh->ndim);
    dt__local(&t, t.mesh->coord, t.placements, t.mesh->ndim, sh, 0);
    need = (size_t)DT__R8(dt__bytes(sh, t.ndim, t.dtype));
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
        if ((uint32_t)t->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE; /* the rest: dt_spec_init, dt__fits */
        if (dt__numel(t) != 1 && !d->implicit_replication) return DT_ERR_MISMATCH;
        rc = dt_spec_init(&d->plain[i], m, rep, m->ndim, t->dtype, t->ndim, t->shape, 0);
        if (rc) return rc;
        specs[i] = &d->plain[i];
    }
    return DT_OK;
}

#ifndef DT_NO_MODEL_OPS
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

static DT__NOINLINE int dt__op_run(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_op_strategy *s,
                                   const dt_spec *const *specs, const dt_tensor *args, int nargs, dt_tensor *out,
                                   void *out_data, size_t out_bytes)
{
    const mb_tensor *loc[DT_MAX_OP_ARGS], *target = 0;
    mb_tensor moved[DT_MAX_OP_ARGS], y;
    const dt_mesh *m = specs[0]->mesh;
    size_t left = d->scratch ? d->scratch_bytes : 0, need;
    int i, rc, nd = m->ndim, inplace = out_data && out_data == args[0].local.data;
    if (inplace && (s->out_ndim != specs[0]->ndim || s->out_dtype != (int)specs[0]->dtype ||
                    memcmp(s->out_shape, specs[0]->shape, sizeof(int32_t) * (size_t)s->out_ndim) ||
                    memcmp(s->out, specs[0]->placements, sizeof(dt_placement) * (size_t)nd)))
        return DT_ERR_NO_STRATEGY; /* torch: an in-place op keeps self's spec */
    if (m->index < 0) return dt__op_absent(s, m, &args[0], inplace, out, out_data, out_bytes);
    rc = dt__op_fit(d, m, specs, args, nargs);
    if (!rc) rc = dt__op_out(s, m, 0, &y, out_data);
    if (rc) return rc;
    need = (size_t)dt__bytes(y.shape, y.ndim, y.dtype);
    if (inplace) {
        target = &args[0].local;
    } else if (!out_data) { /* out variant */
        rc = dt__fits(&out->local, s->out_dtype, s->out_ndim, y.shape);
        if (rc) return rc;
        target = &out->local;
    } else if (need > out_bytes) {
        return DT_ERR_TOO_SMALL;
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
#ifndef DT_NO_MODEL_OPS
    if (!target && dt__ops[op].family == DT__F_VIEW && !d->kernels[op] && loc[0] == &args[0].local) {
        rc = dt__view_local(op, attrs ? attrs : &dt__no_attrs, loc[0], y.shape, y.ndim, &moved[0]);
        if (!rc) y = moved[0]; /* a view of the input, no copy */
    }
#endif
    if (rc) {
#ifndef DT_NO_MODEL_OPS
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
#ifndef DT_NO_MODEL_OPS
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
    if (!rc && (nargs < 2 || dt__numel(&f->local) != 1)) rc = nargs < 2 ? DT_ERR_PLACEMENT_COUNT : DT_ERR_SHAPE;
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
            for (j = 0, n = dt__numel(&args[i].local); j < n; j++) {
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
   handler of _dispatch.py; older _ops/_math_ops.py replicated the reduced dim instead):
   Partial made Replicate, each rank's local (max, first index) per output element, the
   index made global, then on each mesh dim sharding a reduced dim an all_gather of the
   (max, index) pairs and the best one kept. torch keeps the first rank's on a tie; here
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
                                       size_t out_bytes)
{
    const dt_mesh *m = x->mesh;
    dt_spec r = *x;
    mb_tensor moved, y, v;
    const mb_tensor *in[1];
    int32_t sh[MB_MAX_DIMS], off[MB_MAX_DIMS], n, k, j, f, gmax = 1, rd = dt__opdim(at->dim, x->ndim), c;
    unsigned char *scr = (unsigned char *)d->scratch;
    size_t left = scr ? d->scratch_bytes : 0, need;
    uint32_t *pr, *rv;
    int md, rc, nd = m->ndim, empty;
    if (at->dim == DT_DIM_ALL) rd = -1;
    rc = dt__op_out(s, m, &out->spec, &y, out_data);
    if (rc) return rc;
    n = dt__numel(&y);
    if ((size_t)n * 4u > out_bytes) return DT_ERR_TOO_SMALL;
    for (md = 0; md < nd; md++) {
        if (r.placements[md].kind == DT_KIND_PARTIAL) r.placements[md].kind = r.placements[md].arg = 0;
        if ((gather >> md & 1u) && m->shape[md] > gmax) gmax = m->shape[md];
    }
    need = (size_t)DT__R8((uint64_t)n * 4u) + (size_t)n * 8u * (size_t)(gmax + 1);
    if (need > left) return DT_ERR_TOO_SMALL; /* nothing sent */
    left -= need;
    in[0] = xl;
    if (memcmp(r.placements, x->placements, sizeof(dt_placement) * (size_t)nd)) {
        rc = dt__op_move(d, x, xl, r.placements, &moved, scr + need, &left);
        if (rc) return rc;
        in[0] = &moved;
    }
    dt__local(&r, m->coord, r.placements, nd, sh, off);
    empty = rd >= 0 ? !sh[rd] : !dt__numel(in[0]);
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
static DT__NOINLINE int dt__argmax(dt_dispatch *d, int op, const dt_op_attrs *at, const dt_tensor *args, int nargs,
                                   dt_tensor *out, void *out_data, size_t out_bytes)
{
    const dt_spec *specs[DT_MAX_OP_ARGS];
    dt_op_strategy s;
    unsigned gather = 0;
    int md, rd, rc = dt__op_specs(d, args, nargs, specs);
    if (!at) at = &dt__no_attrs;
    if (!rc) rc = dt_propagate(d->strategies, op, at, specs, nargs, &s);
    if (rc) return rc;
    rd = at->dim == DT_DIM_ALL ? -1 : dt__opdim(at->dim, specs[0]->ndim);
    for (md = 0; md < specs[0]->mesh->ndim; md++)
        if (specs[0]->placements[md].kind == DT_KIND_SHARD && (rd < 0 || specs[0]->placements[md].arg == rd) &&
            specs[0]->mesh->shape[md] > 1) /* a size-1 mesh dim holds it all */
            gather |= 1u << md;
    if (!gather || specs[0]->mesh->index < 0 || !out_data || out_data == args[0].local.data)
        return dt__op_run(d, op, at, &s, specs, args, nargs, out, out_data, out_bytes);
    rc = dt__op_fit(d, specs[0]->mesh, specs, args, nargs);
    return rc ? rc : dt__argmax_run(d, at, &s, specs[0], &args[0].local, gather, out, out_data, out_bytes);
}

#endif /* DT_NO_MODEL_OPS */

DT__DEF int dt_op(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs, dt_tensor *out,
                  void *out_data, size_t out_bytes)
{
    const dt_spec *specs[DT_MAX_OP_ARGS];
    dt_op_strategy s;
    dt_handler h;
    int rc;
    if (!d || !args || !out) return DT_ERR_NULL;
    if (op < 0 || op >= DT_ATEN_COUNT || nargs < 1 || nargs > DT_MAX_OP_ARGS) return DT_ERR_PLACEMENT_COUNT;
    h = d->handlers[op];
#ifndef DT_NO_MODEL_OPS
    if (!h && op == DT_ATEN_AMP_UNSCALE) h = dt__amp_unscale;
    if (!h && op == DT_ATEN_ARGMAX) h = dt__argmax;
#endif
    if (h) return h(d, op, attrs, args, nargs, out, out_data, out_bytes);
    rc = dt__op_specs(d, args, nargs, specs);
    if (!rc) rc = dt_propagate(d->strategies, op, attrs, specs, nargs, &s);
    return rc ? rc : dt__op_run(d, op, attrs, &s, specs, args, nargs, out, out_data, out_bytes);
}

/* ---- tensor-parallel styles ---- */

static int dt__tp_layout(dt_placement p)
{
    return p.kind == DT_KIND_REPLICATE || p.kind == DT_KIND_SHARD ? DT_OK : DT_ERR_PLACEMENT;
}

DT__DEF int dt_tp_colwise(dt_tp_style *s, int module, dt_placement output_layout)
{
    const dt_tp_style c = {DT__R, DT__S(0), DT__S(0), DT__S(-1), DT__R};
    if (!s) return DT_ERR_NULL;
    if ((module != DT_TP_LINEAR && module != DT_TP_EMBEDDING) || dt__tp_layout(output_layout)) return DT_ERR_PLACEMENT;
    *s = c;
    if (module == DT_TP_EMBEDDING) s->weight.arg = 1;
    s->output_layout = output_layout;
    return DT_OK;
}

DT__DEF int dt_tp_rowwise(dt_tp_style *s, int module, dt_placement output_layout)
{
    const dt_tp_style c = {DT__S(-1), DT__S(1), DT__R, DT__PS, DT__R};
    if (!s) return DT_ERR_NULL;
    if ((module != DT_TP_LINEAR && module != DT_TP_EMBEDDING) || dt__tp_layout(output_layout)) return DT_ERR_PLACEMENT;
    *s = c;
    if (module == DT_TP_EMBEDDING) s->weight.arg = 0, s->input = s->bias;
    s->output_layout = output_layout;
    return DT_OK;
}

DT__DEF int dt_tp_sequence(dt_tp_style *s, int sequence_dim)
{
    const dt_tp_style c = {DT__S(0), DT__R, DT__R, DT__S(0), DT__S(0)};
    if (!s) return DT_ERR_NULL;
    *s = c;
    s->input.arg = s->output.arg = s->output_layout.arg = (int16_t)sequence_dim;
    return DT_OK;
}

DT__DEF int dt_tp_redistribute(dt_dispatch *d, const dt_tensor *x, int md, dt_placement p, dt_tensor *out, void *data,
                               size_t bytes)
{
    dt_spec t;
    mb_tensor y;
    int32_t sh[MB_MAX_DIMS];
    int rc;
    if (!d || !x || !out) return DT_ERR_NULL;
    rc = dt_spec_check(&x->spec);
    if (rc) return rc;
    if (md < 0 || md >= x->spec.mesh->ndim) return DT_ERR_MESH_DIM;
    if (p.kind == DT_KIND_PARTIAL) return DT_ERR_PARTIAL;
    t = x->spec;
    if (p.kind == DT_KIND_SHARD && p.arg < 0) p.arg = (int16_t)(p.arg + t.ndim);
    t.placements[md] = p;
    rc = dt_spec_check(&t);
    if (rc) return rc;
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
#endif /* DT_NO_OPS */

#ifndef DT_NO_CONV /* conv2d and pooling */

#ifndef DT_CONV_TAG
#define DT_CONV_TAG 0x7C00
#endif

/* A 4-D view in canonical (n, c, h, w) order, strides in elements. */
typedef struct dt__c4 {
    unsigned char *d;
    int32_t n, c, h, w;
    size_t sn, sc, sh, sw;
    size_t es; /* element bytes: 4 (f32, i32) or 1 (i8) */
} dt__c4;

/* The window a kernel computes: global input height h; the global input row of x's row 0,
   the global output row of y's row 0; global out channels oc and y's first one oc0. */
typedef struct dt__cwin {
    int32_t h, row0, orow0, oc, oc0;
} dt__cwin;

static dt__c4 dt__canon(const mb_tensor *t, int layout)
{
    dt__c4 v;
    int ci = layout == DT_NHWC ? 3 : 1, hi = layout == DT_NHWC ? 1 : 2, wi = hi + 1;
    v.d = (unsigned char *)t->data;
    v.n = t->shape[0];
    v.c = t->shape[ci];
    v.h = t->shape[hi];
    v.w = t->shape[wi];
    v.sn = (size_t)t->stride[0];
    v.sc = (size_t)t->stride[ci];
    v.sh = (size_t)t->stride[hi];
    v.sw = (size_t)t->stride[wi];
    v.es = mb_dtype_size(t->dtype);
    return v;
}

/* Canonical shape (n, c, h, w) <-> the layout's dim order. */
static void dt__order(int layout, const int32_t *from, int32_t *to, int to_layout)
{
    int32_t c[4];
    if (!to_layout) { /* from layout to canonical */
        c[0] = from[0];
        c[1] = from[layout == DT_NHWC ? 3 : 1];
        c[2] = from[layout == DT_NHWC ? 1 : 2];
        c[3] = from[layout == DT_NHWC ? 2 : 3];
    } else {
        c[0] = from[0];
        c[layout == DT_NHWC ? 3 : 1] = from[1];
        c[layout == DT_NHWC ? 1 : 2] = from[2];
        c[layout == DT_NHWC ? 2 : 3] = from[3];
    }
    DT_MEMCPY(to, c, sizeof c);
}

/* Output size of one spatial dim (< 1: bad). */
static int64_t dt__osize(int64_t in, int64_t k, int32_t s, int32_t p, int32_t d)
{
    int64_t span = in + 2 * (int64_t)p - (int64_t)d * (k - 1) - 1; /* < 0: window larger than input */
    return span < 0 ? 0 : span / s + 1;
}

/* Parameters and canonical shapes: in (n, c, h, w), weight shape w (NULL: max pool), out. */
static int dt__conv_shape(const dt_conv2d_params *p, const int32_t *in, const int32_t *w, int32_t *out)
{
    int i;
    int64_t o[2];
    if (!p) return DT_ERR_NULL;
    if ((p->layout != DT_NCHW && p->layout != DT_NHWC)) return DT_ERR_SHAPE;
    for (i = 0; i < 4; i++)
        if (in[i] < 0 || (w && w[i] < 0)) return DT_ERR_SHAPE;
    for (i = 0; i < 2; i++) {
        int32_t k = w ? w[2 + i] : p->kernel[i];
        if (p->stride[i] < 1 || p->padding[i] < 0 || p->dilation[i] < 1 || k < 1) return DT_ERR_SHAPE;
        if (!w && p->padding[i] > (int32_t)(((int64_t)(k - 1) * p->dilation[i] + 1) / 2)) return DT_ERR_SHAPE;
        o[i] = dt__osize(in[2 + i], k, p->stride[i], p->padding[i], p->dilation[i]);
        if (o[i] < 1 || o[i] > INT32_MAX) return DT_ERR_SHAPE;
    }
    if (w && (p->groups < 1 || in[1] % p->groups || w[0] % p->groups || (int64_t)w[1] * p->groups != in[1]))
        return DT_ERR_SHAPE;
    out[0] = in[0];
    out[1] = w ? w[0] : in[1];
    out[2] = (int32_t)o[0];
    out[3] = (int32_t)o[1];
    return DT_OK;
}

/* Output positions [lo, hi) of a row whose input column ow*s + off lies in [0, w). */
static void dt__span(int32_t w, int32_t ow, int32_t s, int32_t off, int32_t *lo, int32_t *hi)
{
    int64_t l = off >= 0 ? 0 : ((int64_t)-off + s - 1) / s,
            h = (int64_t)w - 1 - off < 0 ? 0 : ((int64_t)w - 1 - off) / s + 1;
    *lo = (int32_t)(l < ow ? l : ow);
    *hi = (int32_t)(h < ow ? h : ow);
}

/* One row: mode 0 y += a*x, mode 1 x += a*y, mode 2 returns sum y*x. */
static float dt__crow(int mode, float a, float *DT_RESTRICT y, size_t ys, float *DT_RESTRICT x, size_t xs, int32_t n)
{
    int32_t j;
    float acc = 0.0f;
    if (mode == 0) {
        if (ys == 1 && xs == 1) {
            int32_t k;
            for (j = 0; j + 8 <= n; j += 8) /* constant trip: vectorised at gcc -O2 */
                for (k = 0; k < 8; k++) y[j + k] += a * x[j + k];
            for (; j < n; j++) y[j] += a * x[j];
        } else
            for (j = 0; j < n; j++) y[(size_t)j * ys] += a * x[(size_t)j * xs];
    } else if (mode == 1) {
        if (ys == 1 && xs == 1)
            for (j = 0; j < n; j++) x[j] += a * y[j];
        else
            for (j = 0; j < n; j++) x[(size_t)j * xs] += a * y[(size_t)j * ys];
    } else {
        for (j = 0; j < n; j++) acc += y[(size_t)j * ys] * x[(size_t)j * xs];
    }
    return acc;
}

#define DT__F(v, n, c, h, w)                                                                                  \
    ((float *)(void *)((v)->d + 4u * ((size_t)(n) * (v)->sn + (size_t)(c) * (v)->sc + (size_t)(h) * (v)->sh + \
                                      (size_t)(w) * (v)->sw)))

/* y[j] = ((y[j] + a0*x[j+o0]) + a1*x[j+o1]) + a2*x[j+o2] for j in [L, H). */
static void dt__tap3(float *DT_RESTRICT y, const float *DT_RESTRICT x, const float *a, const int32_t *o, int32_t L,
                     int32_t H)
{
    const float a0 = a[0], a1 = a[1], a2 = a[2];
    const int32_t o0 = o[0], o1 = o[1], o2 = o[2];
    int32_t j, b;
    for (j = L; j + 8 <= H; j += 8) /* constant trip: vectorised at gcc -O2 */
        for (b = 0; b < 8; b++) {
            float t = y[j + b];
            t += a0 * x[j + b + o0];
            t += a1 * x[j + b + o1];
            t += a2 * x[j + b + o2];
            y[j + b] = t;
        }
    for (; j < H; j++) {
        float t = y[j];
        t += a0 * x[j + o0];
        t += a1 * x[j + o1];
        t += a2 * x[j + o2];
        y[j] = t;
    }
}

/* Forward rows of one (channel, kh) for a 3-wide kernel row, unit stride along w and
   contiguous rows: each element gets tap 0, 1, 2 in that order, as dt__crow tap by tap
   would give it, but the interior takes all three in one pass (a third of the loads and
   stores). 0 when the row has no interior (the caller goes tap by tap). */
static int dt__conv3(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *y, const float *wp,
                     size_t wsw, int32_t n, int32_t oc, int32_t ic, int32_t kh)
{
    float a[3];
    int32_t o[3], lo[3], hi[3], L = 0, H = y->w, k, j, oh;
    for (k = 0; k < 3; k++) {
        a[k] = wp[(size_t)k * wsw];
        o[k] = k * p->dilation[1] - p->padding[1];
        dt__span(x->w, y->w, 1, o[k], &lo[k], &hi[k]);
        if (lo[k] > L) L = lo[k];
        if (hi[k] < H) H = hi[k];
    }
    if (L >= H) return 0;
    for (oh = 0; oh < y->h; oh++) {
        float *DT_RESTRICT yr;
        const float *DT_RESTRICT xr;
        int64_t ih = (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
        if (ih < 0 || ih >= wn->h) continue;
        yr = DT__F(y, n, oc, oh, 0);
        xr = DT__F(x, n, ic, ih - wn->row0, 0);
        for (k = 0; k < 3; k++)
            for (j = lo[k]; j < L; j++) yr[j] += a[k] * xr[j + o[k]];
        dt__tap3(yr, xr, a, o, L, H);
        for (k = 0; k < 3; k++)
            for (j = H > lo[k] ? H : lo[k]; j < hi[k]; j++) yr[j] += a[k] * xr[j + o[k]];
    }
    return 1;
}

/* The conv2d walk: mode 0 forward (y = bias or 0, then accumulate), 1 grad input (x
   zeroed, accumulates), 2 grad weight (w zeroed, accumulates). y holds out channels
   oc0.. of the window, x every input channel. The order of the sums per element is the
   same for any window, so sharded results equal the single-rank result bit for bit. */
static void dt__conv_walk(const dt_conv2d_params *p, const dt__cwin *wn, int mode, const dt__c4 *x, const dt__c4 *w,
                          const dt__c4 *y, const mb_tensor *bias)
{
    int32_t n, oc, icg, kh, kw, oh, ow, lo, hi, icpg = w->c, ocpg = wn->oc / p->groups;
    for (n = 0; n < y->n; n++)
        for (oc = 0; oc < y->c; oc++) {
            int32_t ic0 = (wn->oc0 + oc) / ocpg * icpg;
            if (mode == 0) {
                float b = bias ? ((const float *)bias->data)[(size_t)oc * (size_t)bias->stride[0]] : 0.0f;
                for (oh = 0; oh < y->h; oh++)
                    for (ow = 0; ow < y->w; ow++) *DT__F(y, n, oc, oh, ow) = b;
            }
            for (icg = 0; icg < icpg; icg++)
                for (kh = 0; kh < w->h; kh++) {
                    if (mode == 0 && w->w == 3 && p->stride[1] == 1 && y->sw == 1 && x->sw == 1 &&
                        dt__conv3(p, wn, x, y, DT__F(w, oc, icg, kh, 0), w->sw, n, oc, ic0 + icg, kh))
                        continue;
                    for (kw = 0; kw < w->w; kw++) {
                        int32_t off = kw * p->dilation[1] - p->padding[1];
                        float *wp = DT__F(w, oc, icg, kh, kw), acc = 0.0f;
                        dt__span(x->w, y->w, p->stride[1], off, &lo, &hi);
                        if (lo >= hi) continue;
                        for (oh = 0; oh < y->h; oh++) {
                            int64_t ih =
                                (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
                            if (ih < 0 || ih >= wn->h) continue;
                            DT_ASSERT(ih - wn->row0 >= 0 && ih - wn->row0 < x->h);
                            acc += dt__crow(mode, *wp, DT__F(y, n, oc, oh, lo), y->sw,
                                            DT__F(x, n, ic0 + icg, ih - wn->row0, (int64_t)lo * p->stride[1] + off),
                                            x->sw * (size_t)p->stride[1], hi - lo);
                        }
                        if (mode == 2) *wp += acc;
                    }
                }
        }
}

#define DT__I8(v, n, c, h, w)                                                                            \
    ((int8_t *)(void *)((v)->d + (size_t)(n) * (v)->sn + (size_t)(c) * (v)->sc + (size_t)(h) * (v)->sh + \
                        (size_t)(w) * (v)->sw))

/* Element of an f32 or int8 view as float (exact for int8). */
static float dt__ldv(const dt__c4 *v, int32_t n, int32_t c, int64_t h, int64_t w)
{
    return v->es == 1 ? (float)*DT__I8(v, n, c, h, w) : *DT__F(v, n, c, h, w);
}

/* Max pool (f32 or int8: the same max): mode 0 y = max, mode 1 gx[first argmax] += gy
   (f32, gx zeroed). */
static void dt__pool_walk(const dt_conv2d_params *p, const dt__cwin *wn, int mode, const dt__c4 *x, const dt__c4 *y,
                          const dt__c4 *gx)
{
    int32_t n, c, oh, ow, kh, kw;
    for (n = 0; n < y->n; n++)
        for (c = 0; c < y->c; c++)
            for (oh = 0; oh < y->h; oh++)
                for (ow = 0; ow < y->w; ow++) {
                    float best = 0.0f;
                    int32_t bh = -1, bw = 0;
                    for (kh = 0; kh < p->kernel[0]; kh++) {
                        int64_t ih =
                            (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
                        if (ih < 0 || ih >= wn->h) continue;
                        for (kw = 0; kw < p->kernel[1]; kw++) {
                            int64_t iw = (int64_t)ow * p->stride[1] - p->padding[1] + (int64_t)kw * p->dilation[1];
                            float v;
                            if (iw < 0 || iw >= x->w) continue;
                            v = dt__ldv(x, n, c, ih - wn->row0, iw);
                            if (bh < 0 || v > best || v != v) {
                                best = v;
                                bh = (int32_t)(ih - wn->row0);
                                bw = (int32_t)iw;
                            }
                        }
                    }
                    if (bh < 0) { /* no input in the window (dilation past the input): -inf, no gradient */
                        uint32_t ninf = 0xff800000u;
                        if (mode == 0 && y->es == 1)
                            *DT__I8(y, n, c, oh, ow) = -128;
                        else if (mode == 0)
                            DT_MEMCPY(DT__F(y, n, c, oh, ow), &ninf, sizeof ninf);
                        continue;
                    }
                    if (mode == 0 && y->es == 1)
                        *DT__I8(y, n, c, oh, ow) = (int8_t)best;
                    else if (mode == 0)
                        *DT__F(y, n, c, oh, ow) = best;
                    else
                        *DT__F(gx, n, c, bh, bw) += *DT__F(y, n, c, oh, ow);
                }
}

static void dt__c4_zero(const dt__c4 *v)
{
    int32_t n, c, h, w;
    for (n = 0; n < v->n; n++)
        for (c = 0; c < v->c; c++)
            for (h = 0; h < v->h; h++)
                for (w = 0; w < v->w; w++) *DT__F(v, n, c, h, w) = 0.0f;
}

/* t is a view of canonical shape cs (n, c, h, w) in `layout` order, dtype dt. */
static int dt__fits4(const mb_tensor *t, int dt, int layout, const int32_t *cs)
{
    int32_t s[4];
    if (!t) return DT_ERR_NULL;
    if (mb_tensor_check(t) != MB_OK) return DT_ERR_SHAPE;
    if ((int)t->dtype != dt) return DT_ERR_DTYPE;
    dt__order(layout, cs, s, 1);
    return dt__fits(t, dt, 4, s);
}

/* Checks shared by the single-rank calls: in (f32, 4-D), w (NULL: pool); canonical
   shapes of in, w and out into ci, cw, co. */
static int dt__conv_args(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, mb_dtype dt, int32_t *ci,
                         int32_t *co)
{
    int rc;
    if (!p || !in) return DT_ERR_NULL;
    if (mb_tensor_check(in) != MB_OK || in->ndim != 4 || (w && (mb_tensor_check(w) != MB_OK || w->ndim != 4)))
        return DT_ERR_SHAPE;
    if (in->dtype != dt || (w && w->dtype != dt)) return DT_ERR_DTYPE;
    if (p->layout != DT_NCHW && p->layout != DT_NHWC) return DT_ERR_SHAPE;
    dt__order(p->layout, in->shape, ci, 0);
    rc = dt__conv_shape(p, ci, w ? w->shape : NULL, co);
    if (!rc && w && !w->data && dt__bytes(w->shape, 4, dt)) rc = DT_ERR_NULL;
    return rc;
}

static int dt__bias_ok(const mb_tensor *b, int32_t n, mb_dtype dt)
{
    if (!b) return DT_OK;
    if (mb_tensor_check(b) != MB_OK) return DT_ERR_SHAPE;
    if (b->dtype != dt) return DT_ERR_DTYPE;
    return dt__fits(b, (int)dt, 1, &n);
}

static dt__cwin dt__win_full(int32_t h, int32_t oc)
{
    dt__cwin wn;
    wn.h = h;
    wn.row0 = 0;
    wn.orow0 = 0;
    wn.oc = oc;
    wn.oc0 = 0;
    return wn;
}

DT__DEF int dt_conv2d_out_shape(const dt_conv2d_params *p, const int32_t *in_shape, const int32_t *w_shape,
                                int32_t *out_shape)
{
    int32_t ci[4], co[4];
    int rc;
    if (!p || !in_shape || !out_shape) return DT_ERR_NULL;
    if (p->layout != DT_NCHW && p->layout != DT_NHWC) return DT_ERR_SHAPE;
    dt__order(p->layout, in_shape, ci, 0);
    rc = dt__conv_shape(p, ci, w_shape, co);
    if (!rc) dt__order(p->layout, co, out_shape, 1);
    return rc;
}

DT__DEF int dt_conv2d_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, const mb_tensor *bias,
                          mb_tensor *out)
{
    int32_t ci[4], co[4];
    int rc = w ? dt__conv_args(p, in, w, MB_F32, ci, co) : DT_ERR_NULL;
    if (!rc) rc = dt__bias_ok(bias, co[1], MB_F32);
    if (!rc) rc = dt__fits4(out, MB_F32, p->layout, co);
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), wv = dt__canon(w, DT_NCHW), y = dt__canon(out, p->layout);
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        dt__conv_walk(p, &wn, 0, &x, &wv, &y, bias);
    }
    return rc;
}

/* grad_b[c] = the sum of y's channel c (f32; grad_b [y->c]). */
static void dt__bias_grad(const dt__c4 *y, mb_tensor *grad_b)
{
    int32_t n, c, h, w;
    for (c = 0; c < y->c; c++) {
        float s = 0.0f;
        for (n = 0; n < y->n; n++)
            for (h = 0; h < y->h; h++)
                for (w = 0; w < y->w; w++) s += *DT__F(y, n, c, h, w);
        ((float *)grad_b->data)[(size_t)c * (size_t)grad_b->stride[0]] = s;
    }
}

DT__DEF int dt_conv2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w,
                               const mb_tensor *grad_out, mb_tensor *grad_in, mb_tensor *grad_w, mb_tensor *grad_b)
{
    int32_t ci[4], co[4];
    int rc = w ? dt__conv_args(p, in, w, MB_F32, ci, co) : DT_ERR_NULL;
    if (!rc) rc = dt__fits4(grad_out, MB_F32, p->layout, co);
    if (!rc && grad_in) rc = dt__fits4(grad_in, MB_F32, p->layout, ci);
    if (!rc && grad_w) rc = dt__fits4(grad_w, MB_F32, DT_NCHW, w->shape);
    if (!rc && grad_b) rc = grad_b->data || !co[1] ? dt__bias_ok(grad_b, co[1], MB_F32) : DT_ERR_NULL;
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), wv = dt__canon(w, DT_NCHW), y = dt__canon(grad_out, p->layout), g;
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        if (grad_in) {
            g = dt__canon(grad_in, p->layout);
            dt__c4_zero(&g);
            dt__conv_walk(p, &wn, 1, &g, &wv, &y, NULL);
        }
        if (grad_w) {
            g = dt__canon(grad_w, DT_NCHW);
            dt__c4_zero(&g);
            dt__conv_walk(p, &wn, 2, &x, &g, &y, NULL);
        }
        if (grad_b) dt__bias_grad(&y, grad_b);
    }
    return rc;
}

DT__DEF int dt_maxpool2d_ref(const dt_conv2d_params *p, const mb_tensor *in, mb_tensor *out)
{
    int32_t ci[4], co[4];
    int rc = dt__conv_args(p, in, NULL, in && in->dtype == MB_I8 ? MB_I8 : MB_F32, ci, co);
    if (!rc) rc = dt__fits4(out, (int)in->dtype, p->layout, co);
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), y = dt__canon(out, p->layout);
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        dt__pool_walk(p, &wn, 0, &x, &y, NULL);
    }
    return rc;
}

DT__DEF int dt_maxpool2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *grad_out,
                                  mb_tensor *grad_in)
{
    int32_t ci[4], co[4];
    int rc = dt__conv_args(p, in, NULL, MB_F32, ci, co);
    if (!rc) rc = dt__fits4(grad_out, MB_F32, p->layout, co);
    if (!rc) rc = dt__fits4(grad_in, MB_F32, p->layout, ci);
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), y = dt__canon(grad_out, p->layout), g = dt__canon(grad_in, p->layout);
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        dt__c4_zero(&g);
        dt__pool_walk(p, &wn, 1, &x, &y, &g);
    }
    return rc;
}

/* ---- sharded conv2d / max pool ---- */

/* Rows of part i (see dt_conv2d_rows); p, h, kh valid, oh the output height. */
static void dt__rows(const dt_conv2d_params *p, int32_t h, int32_t oh, int32_t kh, int32_t parts, int32_t i, int32_t *r)
{
    int64_t n0, n1;
    r[1] = dt__chunk(h, parts, i, &r[0]) + r[0];
    r[3] = dt__chunk(oh, parts, i, &r[2]) + r[2];
    n0 = (int64_t)r[2] * p->stride[0] - p->padding[0];
    n1 = (int64_t)(r[3] - 1) * p->stride[0] - p->padding[0] + (int64_t)(kh - 1) * p->dilation[0] + 1;
    if (n0 < 0) n0 = 0;
    if (n1 > h) n1 = h;
    if (r[2] == r[3] || n1 <= n0) n0 = n1 = 0;
    r[4] = (int32_t)n0;
    r[5] = (int32_t)n1;
}

DT__DEF int dt_conv2d_rows(const dt_conv2d_params *p, int32_t h, int32_t kh, int32_t parts, int32_t i, int32_t *rows)
{
    int64_t oh;
    if (!p || !rows) return DT_ERR_NULL;
    if (parts < 1 || i < 0 || i >= parts) return DT_ERR_RANK;
    if (h < 1 || kh < 1 || p->stride[0] < 1 || p->padding[0] < 0 || p->dilation[0] < 1) return DT_ERR_SHAPE;
    oh = dt__osize(h, kh, p->stride[0], p->padding[0], p->dilation[0]);
    if (oh < 1 || oh > INT32_MAX) return DT_ERR_SHAPE;
    dt__rows(p, h, (int32_t)oh, kh, parts, i, rows);
    return DT_OK;
}

/* What a sharded call does on this rank, from the specs. */
typedef struct dt__cplan {
    dt_spec out;          /* output spec */
    int32_t ci[4], co[4]; /* global canonical shapes */
    int32_t kh;           /* kernel height */
    int spatial;          /* mesh dim sharding H, or -1 */
    int32_t rows[6];      /* this rank's rows when spatial */
    size_t ext, stage;    /* scratch: halo window, message staging (bytes) */
} dt__cplan;

static DT__NOINLINE int dt__cplan_make(const dt_conv2d_params *p, const dt_spec *is, const dt_spec *ws, dt__cplan *pl)
{
    dt_placement op[DT_MAX_MESH_DIMS];
    int32_t lshape[MB_MAX_DIMS], cs[4], ch = p->layout == DT_NHWC ? 3 : 1, hd = p->layout == DT_NHWC ? 1 : 2, r[6];
    int i, rc = dt_spec_check(is);
    size_t esz, per_row;
    if (!rc && ws) rc = dt_spec_check(ws);
    if (rc) return rc;
    if (p->layout != DT_NCHW && p->layout != DT_NHWC) return DT_ERR_SHAPE;
    if (is->ndim != 4 || (ws && ws->ndim != 4)) return DT_ERR_SHAPE;
    if (ws && !dt__mesh_same(is->mesh, ws->mesh)) return DT_ERR_MISMATCH;
    if (is->mesh->index < 0) return DT_ERR_NOT_MEMBER;
    if ((is->dtype != MB_F32 && is->dtype != MB_I8) || (ws && ws->dtype != is->dtype)) return DT_ERR_DTYPE;
    dt__order(p->layout, is->shape, pl->ci, 0);
    rc = dt__conv_shape(p, pl->ci, ws ? ws->shape : NULL, pl->co);
    if (rc) return rc;
    pl->kh = ws ? ws->shape[2] : p->kernel[0];
    pl->spatial = -1;
    for (i = 0; i < is->mesh->ndim; i++) {
        dt_placement a = is->placements[i], b = ws ? ws->placements[i] : is->placements[i];
        if (ws && a.kind == DT_KIND_REPLICATE && dt__is_shard(b, 0)) {
            op[i].kind = DT_KIND_SHARD, op[i].arg = (int16_t)ch; /* output channels */
            continue;
        }
        if (ws && b.kind != DT_KIND_REPLICATE) return DT_ERR_NO_STRATEGY;
        if (a.kind == DT_KIND_REPLICATE || dt__is_shard(a, 0) || (!ws && dt__is_shard(a, ch))) {
            op[i] = a;
            continue;
        }
        if (!dt__is_shard(a, hd) || pl->spatial >= 0) return DT_ERR_NO_STRATEGY;
        pl->spatial = i;
        op[i] = a;
    }
    dt__order(p->layout, pl->co, cs, 1);
    rc = dt_spec_init(&pl->out, is->mesh, op, is->mesh->ndim, is->dtype, 4, cs, NULL);
    if (rc) return rc;
    pl->ext = pl->stage = 0;
    if (pl->spatial < 0) return DT_OK;
    {
        int32_t parts = is->mesh->shape[pl->spatial], me = is->mesh->coord[pl->spatial], q, s0, s1, r0, r1;
        size_t mx = 0;
        dt__local(is, is->mesh->coord, is->placements, is->mesh->ndim, lshape, NULL);
        dt__order(p->layout, lshape, cs, 0);
        esz = mb_dtype_size(is->dtype);
        per_row = (size_t)cs[0] * (size_t)cs[1] * (size_t)cs[3] * esz;
        dt__rows(p, pl->ci[2], pl->co[2], pl->kh, parts, me, pl->rows);
        for (q = 0; q < parts; q++) {
            if (q == me) continue;
            dt__rows(p, pl->ci[2], pl->co[2], pl->kh, parts, q, r);
            s0 = pl->rows[0] > r[4] ? pl->rows[0] : r[4]; /* rows q needs that this rank holds */
            s1 = pl->rows[1] < r[5] ? pl->rows[1] : r[5];
            r0 = r[0] > pl->rows[4] ? r[0] : pl->rows[4]; /* rows this rank needs that q holds */
            r1 = r[1] < pl->rows[5] ? r[1] : pl->rows[5];
            if (s1 - s0 > (int32_t)mx) mx = (size_t)(s1 - s0);
            if (r1 - r0 > (int32_t)mx) mx = (size_t)(r1 - r0);
        }
        pl->ext = ((size_t)(pl->rows[5] - pl->rows[4]) * per_row + 7u) & ~(size_t)7u;
        pl->stage = mx * per_row;
    }
    return DT_OK;
}

DT__DEF int dt_conv2d_out_spec(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                               dt_spec *out_spec)
{
    dt__cplan pl;
    int rc = !p || !in_spec || !out_spec ? DT_ERR_NULL : dt__cplan_make(p, in_spec, w_spec, &pl);
    if (!rc) *out_spec = pl.out;
    return rc;
}

DT__DEF int dt_conv2d_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                    size_t *bytes)
{
    dt__cplan pl;
    int rc = !p || !in_spec || !bytes ? DT_ERR_NULL : dt__cplan_make(p, in_spec, w_spec, &pl);
    if (!rc) *bytes = pl.ext + pl.stage;
    return rc;
}

/* Copy rows [r0, r0 + nr) of src (its row 0 = global row s0) to dst (its row 0 = global
   row d0); canonical views of one element size. add: dst += src instead (f32). */
static void dt__copy_rows(const dt__c4 *dst, int32_t d0, const dt__c4 *src, int32_t s0, int32_t r0, int32_t nr,
                          size_t esz, int add)
{
    int32_t n, c, h, w;
    for (n = 0; n < src->n; n++)
        for (c = 0; c < src->c; c++)
            for (h = r0; h < r0 + nr; h++) {
                unsigned char *d =
                    dst->d + esz * ((size_t)n * dst->sn + (size_t)c * dst->sc + (size_t)(h - d0) * dst->sh);
                const unsigned char *s =
                    src->d + esz * ((size_t)n * src->sn + (size_t)c * src->sc + (size_t)(h - s0) * src->sh);
                if (add) {
                    for (w = 0; w < src->w; w++)
                        *(float *)(void *)(d + 4u * (size_t)w * dst->sw) +=
                            *(const float *)(const void *)(s + 4u * (size_t)w * src->sw);
                } else if (dst->sw == 1 && src->sw == 1) {
                    DT_MEMCPY(d, s, esz * (size_t)src->w);
                } else {
                    for (w = 0; w < src->w; w++)
                        DT_MEMCPY(d + esz * (size_t)w * dst->sw, s + esz * (size_t)w * src->sw, esz);
                }
            }
}

/* A contiguous canonical view of n, c, rows, w at buf (NCHW order in memory). */
static dt__c4 dt__c4_packed(void *buf, int32_t n, int32_t c, int32_t rows, int32_t w, size_t es)
{
    dt__c4 v;
    v.es = es;
    v.d = (unsigned char *)buf;
    v.n = n;
    v.c = c;
    v.h = rows;
    v.w = w;
    v.sw = 1;
    v.sh = (size_t)w;
    v.sc = (size_t)w * (size_t)rows;
    v.sn = v.sc * (size_t)c;
    return v;
}

/* Send or receive `bytes` with peer q in pieces of at most max_msg. */
static int dt__halo_xfer(pg_group *g, int q, unsigned char *buf, size_t bytes, int send)
{
    size_t m = pg_max_msg(g), k, got;
    int rc = 0;
    while (bytes && rc >= 0) {
        k = bytes < m ? bytes : m;
        if (send) {
            rc = pg_send(g, q, DT_CONV_TAG, buf, k);
        } else {
            rc = pg_recv(g, q, DT_CONV_TAG, buf, k, &got);
            if (rc >= 0 && got != k) rc = PG_ERR_MISMATCH;
        }
        buf += k;
        bytes -= k;
    }
    return rc < 0 ? rc : 0;
}

/* Halo exchange. Forward (back 0): build this rank's window (input rows [rows[4], rows[5]))
   in dst from its rows [rows[0], rows[1]) in src and the peers' rows. Backward (back 1,
   f32): the reverse, src the window's input gradient, dst this rank's rows of it: its own
   part, then each peer's part for these rows added in increasing peer order. Pairs in
   increasing peer order, the lower rank of a pair sending first. */
static DT__NOINLINE int dt__halo(dt_comm *c, const dt_conv2d_params *p, const dt__cplan *pl, const dt_spec *is,
                                 const dt__c4 *src, const dt__c4 *dst, unsigned char *stage, int back)
{
    pg_group *g = c->g[pl->spatial];
    int32_t parts = is->mesh->shape[pl->spatial], me = is->mesh->coord[pl->spatial], q, r[6], h[4];
    size_t esz = mb_dtype_size(is->dtype), row = esz * (size_t)src->n * (size_t)src->c * (size_t)src->w;
    const int32_t *m = pl->rows;
    int32_t so = back ? m[4] : m[0], dof = back ? m[0] : m[4]; /* global rows of src's / dst's row 0 */
    int rc = 0, k;
    h[0] = m[0] > m[4] ? m[0] : m[4]; /* own rows of the window */
    h[1] = m[1] < m[5] ? m[1] : m[5];
    if (back) dt__c4_zero(dst);
    if (h[1] > h[0]) dt__copy_rows(dst, dof, src, so, h[0], h[1] - h[0], esz, 0);
    for (q = 0; q < parts && !rc; q++) {
        if (q == me) continue;
        dt__rows(p, pl->ci[2], pl->co[2], pl->kh, parts, q, r);
        h[back * 2] = m[0] > r[4] ? m[0] : r[4]; /* rows q needs that this rank holds */
        h[back * 2 + 1] = m[1] < r[5] ? m[1] : r[5];
        h[2 - back * 2] = r[0] > m[4] ? r[0] : m[4]; /* rows this rank needs that q holds */
        h[3 - back * 2] = r[1] < m[5] ? r[1] : m[5];
        for (k = 0; k < 2 && !rc; k++) { /* h[0..1] rows to send, h[2..3] rows to receive */
            dt__c4 st;
            if ((k == 0) == (me < q)) {
                if (h[1] <= h[0]) continue;
                st = dt__c4_packed(stage, src->n, src->c, h[1] - h[0], src->w, esz);
                dt__copy_rows(&st, h[0], src, so, h[0], h[1] - h[0], esz, 0);
                rc = dt__halo_xfer(g, q, stage, (size_t)(h[1] - h[0]) * row, 1);
            } else if (h[3] > h[2]) {
                st = dt__c4_packed(stage, src->n, src->c, h[3] - h[2], src->w, esz);
                rc = dt__halo_xfer(g, q, stage, (size_t)(h[3] - h[2]) * row, 0);
                if (!rc) dt__copy_rows(dst, dof, &st, h[2], h[2], h[3] - h[2], esz, back);
            }
        }
    }
    if (rc) {
        c->err = rc;
        return DT_ERR_COMM;
    }
    return DT_OK;
}

/* The kernel of a sharded call on this rank's window (w NULL: max pool). */
typedef void (*dt__ckern)(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *w,
                          const dt__c4 *y, const mb_tensor *bias, const void *extra);

static void dt__kern_f32(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *w,
                         const dt__c4 *y, const mb_tensor *bias, const void *extra)
{
    (void)extra;
    if (w)
        dt__conv_walk(p, wn, 0, x, w, y, bias);
    else
        dt__pool_walk(p, wn, 0, x, y, NULL);
}

/* dt_conv2d (f32), dt_conv2d_q8 (int8) and dt_maxpool2d (w NULL; f32 or int8): `dt` the
   dtype the call takes (-1: either). */
static int dt__sharded(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                       const mb_tensor *bias, int dt, dt__ckern kern, const void *extra, dt_spec *out_spec,
                       mb_tensor *out, void *scratch, size_t bytes)
{
    dt__cplan pl;
    int32_t ls[MB_MAX_DIMS], off[MB_MAX_DIMS], wl[MB_MAX_DIMS];
    int rc = !c || !p || !in || !out ? DT_ERR_NULL : dt__cplan_make(p, &in->spec, w ? &w->spec : NULL, &pl);
    int is_f32, et;
    dt__cwin wn;
    dt__c4 x, y, wv;
    if (!rc && dt >= 0 && (int)in->spec.dtype != dt) rc = DT_ERR_DTYPE;
    if (!rc) rc = dt__comm_check(c, in->spec.mesh);
    if (rc) return rc;
    et = (int)in->spec.dtype;
    is_f32 = et == MB_F32;
    dt__local(&in->spec, in->spec.mesh->coord, in->spec.placements, in->spec.mesh->ndim, ls, NULL);
    rc = mb_tensor_check(&in->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&in->local, et, 4, ls);
    if (!rc && w) {
        dt__local(&w->spec, w->spec.mesh->coord, w->spec.placements, w->spec.mesh->ndim, wl, off);
        rc = mb_tensor_check(&w->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&w->local, et, 4, wl);
        if (!rc) rc = dt__bias_ok(bias, wl[0], is_f32 ? MB_F32 : MB_I32);
    }
    dt__local(&pl.out, pl.out.mesh->coord, pl.out.placements, pl.out.mesh->ndim, ls, NULL);
    if (!rc) rc = mb_tensor_check(out) != MB_OK ? DT_ERR_SHAPE : dt__fits(out, et, 4, ls);
    if (!rc && pl.ext + pl.stage > bytes) rc = DT_ERR_TOO_SMALL;
    if (!rc && pl.ext + pl.stage && !scratch) rc = DT_ERR_NULL;
    if (rc) return rc;
    x = dt__canon(&in->local, p->layout);
    y = dt__canon(out, p->layout);
    wn = dt__win_full(pl.ci[2], pl.co[1]);
    if (w) wn.oc0 = wl[0] ? off[0] : 0;
    if (pl.spatial >= 0) {
        dt__c4 ext = dt__c4_packed(scratch, x.n, x.c, pl.rows[5] - pl.rows[4], x.w, x.es);
        rc = dt__halo(c, p, &pl, &in->spec, &x, &ext, (unsigned char *)scratch + pl.ext, 0);
        if (rc) return rc;
        x = ext;
        wn.row0 = pl.rows[4];
        wn.orow0 = pl.rows[2];
    }
    if (w) wv = dt__canon(&w->local, DT_NCHW);
    kern(p, &wn, &x, w ? &wv : NULL, &y, bias, extra);
    if (out_spec) *out_spec = pl.out;
    return DT_OK;
}

DT__DEF int dt_conv2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                      const mb_tensor *bias, dt_spec *out_spec, mb_tensor *out, void *scratch, size_t scratch_bytes)
{
    return w ? dt__sharded(c, p, in, w, bias, MB_F32, dt__kern_f32, NULL, out_spec, out, scratch, scratch_bytes)
             : DT_ERR_NULL;
}

DT__DEF int dt_maxpool2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, dt_spec *out_spec, mb_tensor *out,
                         void *scratch, size_t scratch_bytes)
{
    return dt__sharded(c, p, in, NULL, NULL, -1, dt__kern_f32, NULL, out_spec, out, scratch, scratch_bytes);
}

#ifndef DT_NO_SHARDED_CONV_BACKWARD /* ---- sharded conv2d backward (tp_convolution_backward) ---- */

DT__DEF int dt_conv2d_backward_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                             size_t *bytes)
{
    dt__cplan pl;
    int rc = !p || !in_spec || !w_spec || !bytes ? DT_ERR_NULL : dt__cplan_make(p, in_spec, w_spec, &pl);
    if (!rc && in_spec->dtype != MB_F32) rc = DT_ERR_DTYPE;
    if (!rc) *bytes = 2 * pl.ext + pl.stage;
    return rc;
}

/* The gradients' specs: gs[0] grad_in, gs[1] grad_w, gs[2] grad_b. */
static DT__NOINLINE int dt__conv_grad_specs(const dt_spec *is, const dt_spec *ws, dt_spec *gs)
{
    dt_placement a[3][DT_MAX_MESH_DIMS];
    int i, rc, nd = is->mesh->ndim;
    for (i = 0; i < nd; i++) {
        dt_placement x = is->placements[i], w = ws->placements[i];
        a[0][i] = x;           /* grad_in: as the input ... */
        a[1][i] = a[2][i] = w; /* grad_w, grad_b: as the weight (Shard(0) / Replicate) ... */
        if (w.kind == DT_KIND_SHARD) a[0][i].kind = DT_KIND_PARTIAL, a[0][i].arg = DT_SUM; /* ... sums over C_out */
        if (x.kind == DT_KIND_SHARD) a[1][i].kind = a[2][i].kind = DT_KIND_PARTIAL, a[1][i].arg = a[2][i].arg = DT_SUM;
    }
    rc = dt_spec_init(&gs[0], is->mesh, a[0], nd, MB_F32, 4, is->shape, NULL);
    if (!rc) rc = dt_spec_init(&gs[1], is->mesh, a[1], nd, MB_F32, 4, ws->shape, NULL);
    if (!rc) rc = dt_spec_init(&gs[2], is->mesh, a[2], nd, MB_F32, 1, ws->shape, NULL);
    return rc;
}

/* Checks of dt_conv2d_sharded_backward before anything is written; the plan into *pl,
   the weight's local shape and offset into wl, off. */
static DT__NOINLINE int dt__conv_bw_check(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in,
                                          const dt_tensor *w, const dt_tensor *go, const mb_tensor *gi,
                                          const mb_tensor *gw, const mb_tensor *gb, dt__cplan *pl, int32_t *wl,
                                          int32_t *off)
{
    int32_t ls[MB_MAX_DIMS];
    const dt_spec *os = &pl->out;
    int rc = !c || !p || !in || !w || !go ? DT_ERR_NULL : dt__cplan_make(p, &in->spec, &w->spec, pl);
    if (!rc && in->spec.dtype != MB_F32) rc = DT_ERR_DTYPE;
    if (!rc) rc = dt__comm_check(c, in->spec.mesh);
    if (rc) return rc;
    /* grad_out: dt_conv2d's output spec (tp_conv redistributes it there first) */
    if (!dt__mesh_same(go->spec.mesh, os->mesh) || go->spec.dtype != MB_F32 || go->spec.ndim != 4 ||
        memcmp(go->spec.shape, os->shape, 4 * sizeof(int32_t)) ||
        memcmp(go->spec.placements, os->placements, sizeof(dt_placement) * (size_t)os->mesh->ndim))
        return DT_ERR_MISMATCH;
    dt__local(os, os->mesh->coord, os->placements, os->mesh->ndim, ls, NULL);
    rc = mb_tensor_check(&go->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&go->local, MB_F32, 4, ls);
    dt__local(&in->spec, in->spec.mesh->coord, in->spec.placements, in->spec.mesh->ndim, ls, NULL);
    if (!rc) rc = mb_tensor_check(&in->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&in->local, MB_F32, 4, ls);
    if (!rc && gi) rc = mb_tensor_check(gi) != MB_OK ? DT_ERR_SHAPE : dt__fits(gi, MB_F32, 4, ls);
    dt__local(&w->spec, w->spec.mesh->coord, w->spec.placements, w->spec.mesh->ndim, wl, off);
    if (!rc) rc = mb_tensor_check(&w->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&w->local, MB_F32, 4, wl);
    if (!rc && gw) rc = mb_tensor_check(gw) != MB_OK ? DT_ERR_SHAPE : dt__fits(gw, MB_F32, 4, wl);
    if (!rc && gb) rc = gb->data || !wl[0] ? dt__bias_ok(gb, wl[0], MB_F32) : DT_ERR_NULL;
    return rc;
}

/* grad_in (spatial: of the window in scratch, then the reverse halo exchange). */
static DT__NOINLINE int dt__conv_bw_in(dt_comm *c, const dt_conv2d_params *p, const dt__cplan *pl, const dt_spec *is,
                                       const dt__cwin *wn, const dt__c4 *wv, const dt__c4 *y, mb_tensor *grad_in,
                                       unsigned char *sc)
{
    dt__c4 g = dt__canon(grad_in, p->layout), win = g;
    if (pl->spatial >= 0) win = dt__c4_packed(sc + pl->ext, g.n, g.c, pl->rows[5] - pl->rows[4], g.w, 4);
    dt__c4_zero(&win);
    dt__conv_walk(p, wn, 1, &win, wv, y, NULL);
    return pl->spatial >= 0 ? dt__halo(c, p, pl, is, &win, &g, sc + 2 * pl->ext, 1) : DT_OK;
}

/* grad_w (spatial: from the input window, after the halo exchange). */
static DT__NOINLINE int dt__conv_bw_w(dt_comm *c, const dt_conv2d_params *p, const dt__cplan *pl, const dt_spec *is,
                                      const dt__cwin *wn, const dt__c4 *x, const dt__c4 *y, mb_tensor *grad_w,
                                      unsigned char *sc)
{
    dt__c4 g = dt__canon(grad_w, DT_NCHW), win = *x;
    if (pl->spatial >= 0) {
        int rc;
        win = dt__c4_packed(sc, x->n, x->c, pl->rows[5] - pl->rows[4], x->w, 4);
        if ((rc = dt__halo(c, p, pl, is, x, &win, sc + 2 * pl->ext, 0))) return rc;
    }
    dt__c4_zero(&g);
    dt__conv_walk(p, wn, 2, &win, &g, y, NULL);
    return DT_OK;
}

DT__DEF int dt_conv2d_sharded_backward(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                                       const dt_tensor *grad_out, mb_tensor *grad_in, mb_tensor *grad_w,
                                       mb_tensor *grad_b, dt_spec *grad_specs, void *scratch, size_t scratch_bytes)
{
    dt__cplan pl;
    int32_t wl[MB_MAX_DIMS], off[MB_MAX_DIMS];
    int rc = dt__conv_bw_check(c, p, in, w, grad_out, grad_in, grad_w, grad_b, &pl, wl, off);
    dt__cwin wn;
    dt__c4 x, y, wv;
    if (!rc && pl.spatial >= 0 && 2 * pl.ext + pl.stage > scratch_bytes) rc = DT_ERR_TOO_SMALL;
    if (!rc && pl.spatial >= 0 && !scratch) rc = DT_ERR_NULL;
    if (!rc && grad_specs) rc = dt__conv_grad_specs(&in->spec, &w->spec, grad_specs);
    if (rc) return rc;
    x = dt__canon(&in->local, p->layout);
    y = dt__canon(&grad_out->local, p->layout);
    wv = dt__canon(&w->local, DT_NCHW);
    wn = dt__win_full(pl.ci[2], pl.co[1]);
    wn.oc0 = wl[0] ? off[0] : 0;
    if (pl.spatial >= 0) { /* the window of input rows this rank's output rows read */
        wn.row0 = pl.rows[4];
        wn.orow0 = pl.rows[2];
    }
    if (grad_in && (rc = dt__conv_bw_in(c, p, &pl, &in->spec, &wn, &wv, &y, grad_in, (unsigned char *)scratch)))
        return rc;
    if (grad_w && (rc = dt__conv_bw_w(c, p, &pl, &in->spec, &wn, &x, &y, grad_w, (unsigned char *)scratch))) return rc;
    if (grad_b) dt__bias_grad(&y, grad_b); /* Partial(sum) too where the input is sharded */
    return DT_OK;
}
#endif /* DT_NO_SHARDED_CONV_BACKWARD */
#endif /* DT_NO_CONV */

#if !defined(DT_NO_QUANT) || !defined(DT_NO_RANDOM)
/* Walk a tensor row-major (int8 mm, random): advance idx[] and the element offsets e1 of t
   and e2 of u (same shape, may be NULL). */
static void dt__next(const mb_tensor *t, const mb_tensor *u, int32_t *idx, ptrdiff_t *e1, ptrdiff_t *e2)
{
    int d;
    for (d = t->ndim - 1; d >= 0; d--) {
        *e1 += t->stride[d];
        if (u) *e2 += u->stride[d];
        if (++idx[d] < t->shape[d]) return;
        *e1 -= (ptrdiff_t)t->stride[d] * t->shape[d];
        if (u) *e2 -= (ptrdiff_t)u->stride[d] * u->shape[d];
        idx[d] = 0;
    }
}
#endif

#ifndef DT_NO_QUANT /* int8 quantized linear/mm */

DT__DEF int dt_quantize_multiplier(double real, dt_qmul *q)
{
    uint64_t bits, mant;
    int32_t shift;
    int64_t m;
    if (!q) return DT_ERR_NULL;
    if (!(real >= 0.0 && real < 1073741824.0)) return DT_ERR_VALUE; /* NaN fails too */
    DT_MEMCPY(&bits, &real, sizeof bits);                           /* IEEE binary64 */
    if (!((bits >> 52) & 0x7ffu)) {                                 /* 0 or subnormal: far below 2^-31 */
        q->mult = 0;
        q->shift = 0;
        return DT_OK;
    }
    /* frexp: real = (mant / 2^53) * 2^shift, mant / 2^53 in [0.5, 1) */
    mant = (bits & (((uint64_t)1 << 52) - 1u)) | ((uint64_t)1 << 52);
    shift = (int32_t)((bits >> 52) & 0x7ffu) - 1022;
    m = (int64_t)((mant + ((uint64_t)1 << 21)) >> 22); /* round(q * 2^31), half away from 0 */
    if (m == (int64_t)1 << 31) {
        m >>= 1;
        shift++;
    }
    if (shift > 30) return DT_ERR_VALUE; /* real within 2^-32 of 2^30 rounds up to it */
    if (shift < -31) {
        m = 0;
        shift = 0;
    }
    q->mult = (int32_t)m;
    q->shift = shift;
    return DT_OK;
}

DT__DEF int32_t dt_mul_qmul(int32_t x, dt_qmul q)
{
    int64_t xs = (int64_t)x, ab;
    int32_t a, hm, r = q.shift < 0 ? -q.shift : 0;
    uint32_t mask, rem, thr;
    if (q.shift > 0) { /* x * 2^shift, saturated */
        xs *= (int64_t)1 << (q.shift > 31 ? 31 : q.shift);
        xs = xs > INT32_MAX ? INT32_MAX : xs < INT32_MIN ? INT32_MIN : xs;
    }
    a = (int32_t)xs;
    /* SaturatingRoundingDoublingHighMul(a, mult) */
    if (a == INT32_MIN && q.mult == INT32_MIN) {
        hm = INT32_MAX;
    } else {
        ab = (int64_t)a * q.mult;
        hm = (int32_t)((ab + (ab >= 0 ? ((int64_t)1 << 30) : 1 - ((int64_t)1 << 30))) / ((int64_t)1 << 31));
    }
    /* RoundingDivideByPOT(hm, r): round half away from zero */
    if (r > 31) r = 31;
    mask = r ? (((uint32_t)1 << r) - 1u) : 0u;
    rem = (uint32_t)hm & mask;
    thr = (mask >> 1) + (hm < 0 ? 1u : 0u);
    hm = hm < 0 ? ~(int32_t)(~hm >> r) : (int32_t)(hm >> r); /* floor: no signed right shift */
    return hm + (rem > thr ? 1 : 0);
}

DT__DEF int8_t dt_requant_i8(int32_t acc, dt_qmul q)
{
    int32_t v = dt_mul_qmul(acc, q);
    return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
}

DT__DEF int dt_q8_scale(float amax, float *scale)
{
    float s;
    if (!scale) return DT_ERR_NULL;
    if (!(amax >= 0.0f && amax <= 3.402823466e38f)) return DT_ERR_VALUE;
    s = amax / 127.5f;
    *scale = s > 1.1920928955078125e-7f ? s : 1.1920928955078125e-7f; /* torch: max(scale, eps) */
    return DT_OK;
}

DT__DEF int8_t dt_quantize_i8(float x, float scale)
{
    float inv = 1.0f / scale, v = x * inv, t;
    if (!(v == v)) return 0;
    if (v >= 127.5f) return 127; /* clamped either way; the rounding below needs |v| < 2^22 */
    if (v <= -128.5f) return -128;
    t = v + 12582912.0f; /* 1.5 * 2^23: rounds to an integer, ties to even (nearbyint) */
    t -= 12582912.0f;
    return (int8_t)(t > 127.0f ? 127 : t < -128.0f ? -128 : (int32_t)t);
}

/* 0 when t and u (may be NULL) are valid views of one shape with dtypes dt and du. */
static int dt__pair(const mb_tensor *t, int dt, const mb_tensor *u, int du)
{
    int rc;
    if (!t || !u) return DT_ERR_NULL;
    if (mb_tensor_check(t) || mb_tensor_check(u)) return DT_ERR_SHAPE;
    if ((int)t->dtype != dt || (int)u->dtype != du) return DT_ERR_DTYPE;
    rc = dt__fits(t, dt, t->ndim, t->shape);
    if (!rc) rc = dt__fits(u, du, t->ndim, t->shape);
    return rc;
}

DT__DEF int dt_quantize_tensor(const mb_tensor *x, int channel_dim, float *scales, mb_tensor *q)
{
    int32_t idx[MB_MAX_DIMS] = {0};
    ptrdiff_t ex = 0, eq = 0;
    int64_t n, i;
    int32_t c, nc = 1;
    int rc = dt__pair(x, MB_F32, q, MB_I8);
    if (rc) return rc;
    if (!scales) return DT_ERR_NULL;
    if (channel_dim >= 0) {
        if (channel_dim >= x->ndim) return DT_ERR_DIM;
        nc = x->shape[channel_dim];
    }
    n = mb_numel(x);
    for (i = 0; i < n; i++, dt__next(x, NULL, idx, &ex, &eq)) { /* inf, NaN: nothing written */
        float v = ((const float *)x->data)[ex];
        if (!(v <= 3.402823466e38f && v >= -3.402823466e38f)) return DT_ERR_VALUE;
    }
    for (c = 0; c < nc; c++) scales[c] = 0.0f;
    for (i = 0; i < n; i++, dt__next(x, NULL, idx, &ex, &eq)) { /* amax per channel */
        float v = ((const float *)x->data)[ex];
        float *s = &scales[channel_dim >= 0 ? idx[channel_dim] : 0];
        v = v < 0.0f ? -v : v;
        if (v > *s) *s = v;
    }
    for (c = 0; c < nc; c++) dt_q8_scale(scales[c], &scales[c]);
    ex = 0;
    for (i = 0; i < n; i++, dt__next(x, q, idx, &ex, &eq))
        ((int8_t *)q->data)[eq] =
            dt_quantize_i8(((const float *)x->data)[ex], scales[channel_dim >= 0 ? idx[channel_dim] : 0]);
    return DT_OK;
}

DT__DEF int dt_qmm_multipliers(float sa, const float *sb, int nb, float sy, dt_qmul *q)
{
    int i, rc = DT_OK;
    dt_qmul t;
    if (!sb || !q) return DT_ERR_NULL;
    if (nb < 1) return DT_ERR_SHAPE;
    for (i = 0; i < nb && !rc; i++) rc = dt_quantize_multiplier((double)(sa * sb[i] / sy), &t);
    for (i = 0; i < nb && !rc; i++) dt_quantize_multiplier((double)(sa * sb[i] / sy), &q[i]);
    return rc;
}

/* c[0..DT__QB) += a0 r[0] + a1 r[bs] + a2 r[2 bs] + a3 r[3 bs] (rows of b): a constant trip
   count and restrict parameters, so gcc -O2 vectorizes it (int16 products, int32 sums). */
#define DT__QB 16
static void dt__qrows(int32_t *DT_RESTRICT c, const int8_t *DT_RESTRICT r, ptrdiff_t bs, int16_t a0, int16_t a1,
                      int16_t a2, int16_t a3)
{
    int n;
    const int8_t *DT_RESTRICT r1 = r + bs, *DT_RESTRICT r2 = r + 2 * bs, *DT_RESTRICT r3 = r + 3 * bs;
    for (n = 0; n < DT__QB; n++)
        c[n] += (int32_t)(int16_t)(a0 * r[n]) + (int16_t)(a1 * r1[n]) + (int16_t)(a2 * r2[n]) + (int16_t)(a3 * r3[n]);
}

/* sum of x[k] * y[k], k < 32: a dot product gcc -O2 vectorizes (constant trip count). */
static int32_t dt__qdot32(const int8_t *DT_RESTRICT x, const int8_t *DT_RESTRICT y)
{
    int32_t s = 0;
    int k;
    for (k = 0; k < 32; k++) s += (int32_t)x[k] * y[k];
    return s;
}

DT__DEF int dt_qmm_acc(const mb_tensor *a, const mb_tensor *b, mb_tensor *acc)
{
    int32_t m, k, n, M, K, N;
    const int8_t *A, *B;
    int32_t *C;
    if (!a || !b || !acc) return DT_ERR_NULL;
    if (a->ndim != 2 || b->ndim != 2 || acc->ndim != 2) return DT_ERR_SHAPE;
    M = a->shape[0];
    K = a->shape[1];
    N = b->shape[1];
    if (b->shape[0] != K || acc->shape[0] != M || acc->shape[1] != N || K > DT_QMM_MAX_K) return DT_ERR_SHAPE;
    if (mb_tensor_check(a) || mb_tensor_check(b) || mb_tensor_check(acc)) return DT_ERR_SHAPE;
    if (a->dtype != MB_I8 || b->dtype != MB_I8 || acc->dtype != MB_I32) return DT_ERR_DTYPE;
    if ((M && N && !acc->data) || (M && N && K && (!a->data || !b->data))) return DT_ERR_NULL;
    A = (const int8_t *)a->data;
    B = (const int8_t *)b->data;
    C = (int32_t *)acc->data;
    if (acc->stride[1] == 1 && b->stride[1] == 1 && b->stride[0] != 1) { /* blocks of b, 4 rows at a time */
        ptrdiff_t as = a->stride[1], bs = b->stride[0];
        int32_t k0, n0, k1, n1;
        for (m = 0; m < M; m++)
            for (n = 0; n < N; n++) C[(ptrdiff_t)m * acc->stride[0] + n] = 0;
        for (k0 = 0; k0 < K; k0 += 64)
            for (n0 = 0; n0 < N; n0 += 256)
                for (m = 0; m < M; m++) {
                    int32_t *c = C + (ptrdiff_t)m * acc->stride[0];
                    const int8_t *ar = A + (ptrdiff_t)m * a->stride[0];
                    k1 = K - k0 < 64 ? K : k0 + 64;
                    n1 = N - n0 < 256 ? N : n0 + 256;
                    for (k = k0; k < k1; k++) {
                        const int8_t *r = B + (ptrdiff_t)k * bs;
                        const int8_t *ak = ar + k * as;
                        int16_t a0 = (int16_t)ak[0], a1, a2, a3;
                        if (k + 3 >= k1) {
                            for (n = n0; n < n1; n++) c[n] += a0 * r[n];
                            continue;
                        }
                        a1 = (int16_t)ak[as];
                        a2 = (int16_t)ak[2 * as];
                        a3 = (int16_t)ak[3 * as];
                        for (n = n0; n + DT__QB <= n1; n += DT__QB) dt__qrows(c + n, r + n, bs, a0, a1, a2, a3);
                        for (; n < n1; n++)
                            c[n] += a0 * r[n] + a1 * r[n + bs] + a2 * r[n + 2 * bs] + a3 * r[n + 3 * bs];
                        k += 3;
                    }
                }
        return DT_OK;
    }
    for (m = 0; m < M; m++) /* dot products: rows of a with columns of b (linear's w rows) */
        for (n = 0; n < N; n++) {
            int32_t sum = 0;
            k = 0;
            if (a->stride[1] == 1 && b->stride[0] == 1)
                for (; k + 32 <= K; k += 32)
                    sum += dt__qdot32(A + (ptrdiff_t)m * a->stride[0] + k, B + (ptrdiff_t)n * b->stride[1] + k);
            for (; k < K; k++)
                sum += (int32_t)A[(ptrdiff_t)m * a->stride[0] + (ptrdiff_t)k * a->stride[1]] *
                       B[(ptrdiff_t)k * b->stride[0] + (ptrdiff_t)n * b->stride[1]];
            C[(ptrdiff_t)m * acc->stride[0] + (ptrdiff_t)n * acc->stride[1]] = sum;
        }
    return DT_OK;
}

DT__DEF int dt_requant_tensor(const mb_tensor *acc, const dt_qmul *q, int nq, int32_t q0, int qdim, mb_tensor *out)
{
    int32_t idx[MB_MAX_DIMS] = {0};
    ptrdiff_t ea = 0, eo = 0;
    int64_t n, i;
    int rc = dt__pair(acc, MB_I32, out, MB_I8);
    if (rc) return rc;
    if (!q) return DT_ERR_NULL;
    if (nq > 1 && (qdim < 0 || qdim >= acc->ndim)) return DT_ERR_DIM;
    if (nq < 1 || q0 < 0 || (nq > 1 && (int64_t)nq < (int64_t)q0 + acc->shape[qdim])) return DT_ERR_SHAPE;
    n = mb_numel(acc);
    if (n > 0 && mb_is_contiguous(acc) > 0 && mb_is_contiguous(out) > 0 && (nq == 1 || qdim == acc->ndim - 1)) {
        const int32_t *sp = (const int32_t *)acc->data; /* rows of the last dim: no walker */
        int8_t *op = (int8_t *)out->data;
        int32_t j, last = acc->ndim ? acc->shape[acc->ndim - 1] : 1;
        for (i = 0; i < n; i += last)
            for (j = 0; j < last; j++) op[i + j] = dt_requant_i8(sp[i + j], q[nq > 1 ? q0 + j : 0]);
        return DT_OK;
    }
    for (i = 0; i < n; i++, dt__next(acc, out, idx, &ea, &eo))
        ((int8_t *)out->data)[eo] = dt_requant_i8(((const int32_t *)acc->data)[ea], q[nq > 1 ? q0 + idx[qdim] : 0]);
    return DT_OK;
}

DT__DEF int dt_qmm_ref(const mb_tensor *a, const mb_tensor *b, const dt_qmul *q, int nq, mb_tensor *out,
                       void *acc_scratch, size_t acc_bytes)
{
    mb_tensor acc;
    int rc;
    if (!a || !b || !out) return DT_ERR_NULL;
    if (out->ndim != 2 || a->ndim != 2 || b->ndim != 2) return DT_ERR_SHAPE;
    if (nq != 1 && nq != out->shape[1]) return DT_ERR_SHAPE;
    if ((uint64_t)acc_bytes <
        4u * (uint64_t)(out->shape[0] < 0 ? 0 : out->shape[0]) * (uint64_t)(out->shape[1] < 0 ? 0 : out->shape[1]))
        return DT_ERR_TOO_SMALL;
    if (mb_tensor_init(&acc, acc_scratch, MB_I32, 2, out->shape)) return DT_ERR_SHAPE;
    if (out->dtype != MB_I8) return DT_ERR_DTYPE;
    if (!q) return DT_ERR_NULL;
    rc = dt_qmm_acc(a, b, &acc); /* checks a, b and the shapes: nothing written on error */
    if (!rc) rc = dt_requant_tensor(&acc, q, nq, 0, 1, out);
    return rc;
}

DT__DEF int dt_qmm_propagate(const dt_spec *a, const dt_spec *b, dt_spec *out, uint32_t *partial_dims)
{
    dt_placement p[DT_MAX_MESH_DIMS];
    int32_t sh[2];
    uint32_t mask = 0;
    int i, rc;
    if (!a || !b || !out) return DT_ERR_NULL;
    rc = dt_spec_check(a);
    if (!rc) rc = dt_spec_check(b);
    if (rc) return rc;
    if (a->mesh != b->mesh && memcmp(a->mesh, b->mesh, sizeof(dt_mesh))) return DT_ERR_MISMATCH;
    if (a->dtype != MB_I8 || b->dtype != MB_I8) return DT_ERR_DTYPE;
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0] || a->shape[1] > DT_QMM_MAX_K) return DT_ERR_SHAPE;
    for (i = 0; i < a->mesh->ndim; i++) {
        dt_placement pa = a->placements[i], pb = b->placements[i], r = DT_REPLICATE();
        int ka = pa.kind == DT_KIND_SHARD ? 1 + pa.arg : pa.kind == DT_KIND_REPLICATE ? 0 : -1;
        int kb = pb.kind == DT_KIND_SHARD ? 1 + pb.arg : pb.kind == DT_KIND_REPLICATE ? 0 : -1;
        p[i] = r;
        if (ka == 1 && kb == 0)
            p[i] = pa; /* S(0),R -> S(0) */
        else if (ka == 0 && kb == 2)
            p[i] = pb; /* R,S(1) -> S(1) */
        else if (ka == 2 && kb == 1)
            mask |= 1u << i; /* S(1),S(0) -> P(sum) -> R */
        else if (ka || kb)
            return DT_ERR_NO_STRATEGY; /* R,R -> R */
    }
    sh[0] = a->shape[0];
    sh[1] = b->shape[1];
    rc = dt_spec_init(out, a->mesh, p, a->mesh->ndim, MB_I8, 2, sh, NULL);
    if (!rc && partial_dims) *partial_dims = mask;
    return rc;
}

DT__DEF int dt_qmm_scratch_bytes(const dt_spec *a, const dt_spec *b, int rank, size_t *bytes)
{
    dt_spec o;
    int rc = dt_qmm_propagate(a, b, &o, NULL);
    if (!rc && !bytes) rc = DT_ERR_NULL;
    if (!rc) rc = dt_local_bytes(&o, rank, bytes);
    if (!rc) *bytes *= 4; /* int32 per int8 output */
    return rc;
}

DT__DEF int dt_qmm(dt_comm *c, const dt_tensor *a, const dt_tensor *b, const dt_qmul *q, int nq, dt_tensor *out,
                   void *out_data, size_t out_bytes, void *scratch, size_t scratch_bytes)
{
    dt_spec o;
    uint32_t mask;
    int32_t ash[2], bsh[2], osh[2], boff[2];
    mb_tensor acc, y;
    size_t cnt;
    int i, rc;
    if (!c || !a || !b || !out || !q) return DT_ERR_NULL;
    rc = dt_qmm_propagate(&a->spec, &b->spec, &o, &mask);
    if (!rc && (!c->mesh || memcmp(c->mesh, a->spec.mesh, sizeof(dt_mesh)))) rc = DT_ERR_MISMATCH;
    if (!rc && nq != 1 && nq != o.shape[1]) rc = DT_ERR_SHAPE;
    if (!rc) rc = dt_local_shape(&a->spec, c->mesh->rank, ash, NULL);
    if (!rc) rc = dt_local_shape(&b->spec, c->mesh->rank, bsh, boff);
    if (!rc) rc = dt_local_shape(&o, c->mesh->rank, osh, NULL);
    if (!rc) rc = dt__fits(&a->local, MB_I8, 2, ash);
    if (!rc) rc = dt__fits(&b->local, MB_I8, 2, bsh);
    if (rc) return rc;
    cnt = (size_t)osh[0] * (size_t)osh[1]; /* output elements */
    if (out_bytes < cnt || scratch_bytes < 4 * cnt) return DT_ERR_TOO_SMALL;
    if (cnt && (!out_data || !scratch)) return DT_ERR_NULL;
    mb_tensor_init(&acc, scratch, MB_I32, 2, osh);
    rc = dt_qmm_acc(&a->local, &b->local, &acc);
    for (i = 0; !rc && i < c->mesh->ndim; i++) /* the int32 Partial(sum): exact, before requant */
        if ((mask >> i) & 1u) {
            int prc = pg_all_reduce(c->g[i], scratch, scratch, cnt, MB_I32, PG_SUM);
            c->collectives++;
            if (prc) {
                c->err = prc;
                rc = DT_ERR_COMM;
            }
        }
    if (rc) return rc;
    mb_tensor_init(&y, out_data, MB_I8, 2, osh);
    rc = dt_requant_tensor(&acc, q, nq, nq > 1 ? boff[1] : 0, 1, &y);
    if (!rc) {
        out->spec = o;
        out->local = y;
    }
    return rc;
}
#endif /* DT_NO_QUANT */

#if !defined(DT_NO_CONV) && !defined(DT_NO_QUANT) /* int8 conv2d */
typedef struct dt__q8args {
    const dt_qmul *q;
    int nq, relu;
} dt__q8args;

/* int8 conv2d on a window: int32 sums per output element, + bias, requantized. */
static void dt__kern_q8(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *w,
                        const dt__c4 *y, const mb_tensor *bias, const void *extra)
{
    const dt__q8args *a = (const dt__q8args *)extra;
    int32_t n, oc, oh, ow, icg, kh, kw, icpg = w->c, ocpg = wn->oc / p->groups;
    for (n = 0; n < y->n; n++)
        for (oc = 0; oc < y->c; oc++) {
            int32_t ic0 = (wn->oc0 + oc) / ocpg * icpg;
            int64_t b = bias ? ((const int32_t *)bias->data)[(size_t)oc * (size_t)bias->stride[0]] : 0;
            dt_qmul q = a->q[a->nq > 1 ? wn->oc0 + oc : 0];
            for (oh = 0; oh < y->h; oh++)
                for (ow = 0; ow < y->w; ow++) {
                    int32_t acc = 0;
                    int64_t t;
                    int8_t v;
                    for (icg = 0; icg < icpg; icg++)
                        for (kh = 0; kh < w->h; kh++) {
                            int64_t ih =
                                (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
                            if (ih < 0 || ih >= wn->h) continue;
                            for (kw = 0; kw < w->w; kw++) {
                                int64_t iw = (int64_t)ow * p->stride[1] - p->padding[1] + (int64_t)kw * p->dilation[1];
                                if (iw < 0 || iw >= x->w) continue;
                                acc += (int32_t)*DT__I8(x, n, ic0 + icg, ih - wn->row0, iw) *
                                       (int32_t)*DT__I8(w, oc, icg, kh, kw);
                            }
                        }
                    t = (int64_t)acc + b;
                    t = t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : t;
                    v = dt_requant_i8((int32_t)t, q);
                    if (a->relu && v < 0) v = 0;
                    *DT__I8(y, n, oc, oh, ow) = v;
                }
        }
}

/* q and nq for a weight of shape ws (C_out, C_in / groups, KH, KW). */
static int dt__q8_check(const int32_t *ws, const dt_qmul *q, int nq)
{
    if (!q) return DT_ERR_NULL;
    if ((nq != 1 && nq != ws[0]) || (int64_t)ws[1] * ws[2] * ws[3] > DT_QMM_MAX_K) return DT_ERR_SHAPE;
    return DT_OK;
}

DT__DEF int dt_conv2d_q8_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, const mb_tensor *bias,
                             const dt_qmul *q, int nq, int relu, mb_tensor *out)
{
    int32_t ci[4], co[4];
    int rc = w ? dt__conv_args(p, in, w, MB_I8, ci, co) : DT_ERR_NULL;
    if (!rc) rc = dt__q8_check(w->shape, q, nq);
    if (!rc) rc = dt__bias_ok(bias, co[1], MB_I32);
    if (!rc) rc = dt__fits4(out, MB_I8, p->layout, co);
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), wv = dt__canon(w, DT_NCHW), y = dt__canon(out, p->layout);
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        dt__q8args a;
        a.q = q;
        a.nq = nq;
        a.relu = relu;
        dt__kern_q8(p, &wn, &x, &wv, &y, bias, &a);
    }
    return rc;
}

DT__DEF int dt_conv2d_q8(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                         const mb_tensor *bias, const dt_qmul *q, int nq, int relu, dt_spec *out_spec, mb_tensor *out,
                         void *scratch, size_t scratch_bytes)
{
    dt__q8args a;
    int rc = w ? dt__q8_check(w->spec.shape, q, nq) : DT_ERR_NULL;
    if (rc) return rc;
    a.q = q;
    a.nq = nq;
    a.relu = relu;
    return dt__sharded(c, p, in, w, bias, MB_I8, dt__kern_q8, &a, out_spec, out, scratch, scratch_bytes);
}
#endif /* !DT_NO_CONV && !DT_NO_QUANT */

#ifndef DT_NO_RANDOM /* random: Philox 4x32-10, offset tracker */

DT__DEF void dt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        if (r) {
            k0 += 0x9E3779B9u; /* key schedule: bumped before rounds 2..10 */
            k1 += 0xBB67AE85u;
        }
        c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static void dt__philox_block(uint64_t seed, uint64_t block, uint32_t out[4])
{
    uint32_t ctr[4], key[2];
    ctr[0] = (uint32_t)block;
    ctr[1] = (uint32_t)(block >> 32);
    ctr[2] = ctr[3] = 0u; /* subsequence 0 */
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    dt_philox4x32_10(ctr, key, out);
}

DT__DEF uint32_t dt_philox_draw(uint64_t seed, uint64_t pos)
{
    uint32_t w[4];
    dt__philox_block(seed, pos >> 2, w);
    return w[pos & 3u];
}

DT__DEF int dt_rng_offsets(const dt_spec *s, int rank, uint64_t *start, uint64_t *end_incr)
{
    int32_t coord[DT_MAX_MESH_DIMS];
    uint64_t idx[MB_MAX_DIMS], num[MB_MAX_DIMS], first[MB_MAX_DIMS], lin = 0, local = 1, numel = 1;
    int i, d, rc = dt_spec_check(s);
    if (!rc) rc = dt_mesh_coord(s->mesh, rank, coord);
    if (!rc && (!start || !end_incr)) rc = DT_ERR_NULL;
    if (rc) return rc;
    for (d = 0; d < s->ndim; d++) {
        idx[d] = 0;
        num[d] = 1;
        first[d] = (uint64_t)s->shape[d];
    }
    for (i = 0; i < s->mesh->ndim; i++) { /* _calc_shard_info, _calc_first_shard_size */
        if (s->placements[i].kind != DT_KIND_SHARD) continue;
        d = s->placements[i].arg;
        idx[d] = idx[d] * (uint64_t)s->mesh->shape[i] + (uint64_t)coord[i];
        num[d] *= (uint64_t)s->mesh->shape[i];
        first[d] = (uint64_t)dt__chunk(s->shape[d], s->mesh->shape[i], 0, NULL);
    }
    for (d = 0; d < s->ndim; d++) { /* _calc_shard_linear_idx: row-major over tensor dims */
        lin = lin * num[d] + idx[d];
        local *= first[d];
        numel *= (uint64_t)s->shape[d];
    }
    *start = (lin * local + 3u) / 4u * 4u;
    *end_incr = (numel + 3u) / 4u * 4u;
    return DT_OK;
}

/* dt_rand (in NULL) and dt_dropout: validate everything, then draw. */
static int dt__random(dt_rng *g, const dt_spec *s, const mb_tensor *in, mb_tensor *out, float p, int flags)
{
    int32_t shape[MB_MAX_DIMS], off[MB_MAX_DIMS], idx[MB_MAX_DIMS] = {0};
    uint64_t gstr[MB_MAX_DIMS], start, end, pos, blk = ~(uint64_t)0, j = 0;
    uint32_t w[4];
    ptrdiff_t eo = 0, ei = 0;
    int64_t n;
    int d, rc;
    float keep = 1.0f - p, scale;
    if (!g || !s) return DT_ERR_NULL;
    rc = dt_spec_check(s);
    if (!rc) rc = dt_local_shape(s, s->mesh->rank, shape, off);
    if (!rc) rc = dt_rng_offsets(s, s->mesh->rank, &start, &end);
    if (!rc && s->dtype != MB_F32) rc = DT_ERR_DTYPE;
    if (!rc && (flags & ~DT_RNG_TORCH_STREAM)) rc = DT_ERR_VALUE;
    if (!rc && !(p >= 0.0f && p <= 1.0f)) rc = DT_ERR_VALUE;
    if (!rc) rc = dt__fits(out, MB_F32, s->ndim, shape);
    if (!rc && in) rc = dt__fits(in, MB_F32, s->ndim, shape);
    if (!rc && (mb_tensor_check(out) || (in && mb_tensor_check(in)))) rc = DT_ERR_SHAPE;
    if (rc) return rc;
    scale = p < 1.0f ? 1.0f / keep : 0.0f;
    for (d = s->ndim - 1, pos = 1; d >= 0; d--) { /* row-major strides of the global tensor */
        gstr[d] = pos;
        pos *= (uint64_t)s->shape[d];
    }
    n = mb_numel(out);
    for (; (int64_t)j < n; j++, dt__next(out, in, idx, &eo, &ei)) {
        float u;
        if (flags & DT_RNG_TORCH_STREAM) {
            pos = g->offset + start + j;
        } else {
            for (d = 0, pos = g->offset; d < s->ndim; d++) pos += (uint64_t)(off[d] + idx[d]) * gstr[d];
        }
        if (pos >> 2 != blk) { /* one Philox block serves 4 consecutive draws */
            blk = pos >> 2;
            dt__philox_block(g->seed, blk, w);
        }
        u = (float)(w[pos & 3u] & 0xffffffu) * (1.0f / 16777216.0f);
        if (!in)
            ((float *)out->data)[eo] = u;
        else
            ((float *)out->data)[eo] = u < keep ? ((const float *)in->data)[ei] * scale : 0.0f;
    }
    g->offset += end;
    return DT_OK;
}

DT__DEF int dt_rand(dt_rng *g, const dt_spec *s, mb_tensor *local, int flags)
{
    return dt__random(g, s, NULL, local, 0.0f, flags);
}

DT__DEF int dt_dropout(dt_rng *g, const dt_spec *s, const mb_tensor *in, mb_tensor *out, float p, int flags)
{
    if (!in) return DT_ERR_NULL;
    return dt__random(g, s, in, out, p, flags);
}
#endif /* DT_NO_RANDOM */

#ifndef DT_NO_GRAPH /* graph IR, batch-dim analysis, plans */

DT__DEF size_t dt_graph_bytes(int capacity)
{
    return capacity > 0 ? (size_t)capacity * sizeof(dt_gnode) : 0;
}

DT__DEF int dt_graph_init(dt_graph *g, dt_gnode *storage, int capacity)
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

/* The view family, in dt_aten order VIEW..FLATTEN. */
static int dt__g_viewfam(int op)
{
    return op >= DT_ATEN_VIEW && op <= DT_ATEN_FLATTEN;
}

/* torch's non_compute_ops of data_parallel.py. */
static int dt__g_noncompute(int op)
{
    return op == DT_ATEN_VIEW || op == DT_ATEN_RESHAPE || op == DT_ATEN_TRANSPOSE || op == DT_ATEN_FLATTEN ||
           op == DT_G_ONES_LIKE;
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

static int32_t dt__g_dim(int32_t d, int32_t n) /* normalised dim, or -1 */
{
    if (d < 0) d += n;
    return d >= 0 && d < n ? d : -1;
}

static int64_t dt__g_numel(const int32_t *shape, int ndim)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Output shape of op on operands of shapes (ind[i], ish[i]) with attrs a (dims
   normalised into *a). local: the operands are local pieces (a plan's check): shape
   attributes of placeholders, factories and views are not compared. */
static int dt__g_infer(int op, dt_op_attrs *a, const int32_t *const *ish, const int32_t *ind, int nin, int32_t *osh,
                       int32_t *ond, int local)
{
    int32_t d, k, n0 = nin > 0 ? ind[0] : 0, infer = -1;
    int64_t prod = 1;
    const int32_t *s0 = nin > 0 ? ish[0] : 0;
    if (op == DT_G_INPUT || op == DT_G_PARAM || op == DT_G_FULL || op == DT_ATEN_VIEW || op == DT_ATEN_RESHAPE ||
        op == DT_ATEN_EXPAND) {
        if (a->ndim < (op == DT_G_INPUT) || a->ndim > MB_MAX_DIMS) return DT_ERR_SHAPE;
        if (op == DT_ATEN_EXPAND && a->ndim < n0) return DT_ERR_SHAPE;
        for (d = 0; d < a->ndim; d++) {
            int32_t s = a->shape[d];
            if (s == -1 && op != DT_G_INPUT && op != DT_G_PARAM && op != DT_G_FULL &&
                (op == DT_ATEN_EXPAND || infer < 0)) {
                if (op == DT_ATEN_EXPAND) {
                    k = d - (a->ndim - n0);
                    if (k < 0) return DT_ERR_SHAPE;
                    s = s0[k];
                } else {
                    infer = d;
                    s = 1;
                }
            } else if (s < 1) {
                return DT_ERR_SHAPE;
            }
            osh[d] = s;
            prod *= s;
            if (prod > INT32_MAX) return DT_ERR_SHAPE;
        }
        *ond = a->ndim;
        if (op == DT_ATEN_EXPAND) {
            for (d = 0; d < n0; d++) {
                k = d + a->ndim - n0;
                if (s0[d] != 1 && s0[d] != osh[k]) return DT_ERR_SHAPE;
            }
        } else if (op == DT_ATEN_VIEW || op == DT_ATEN_RESHAPE) {
            int64_t n = dt__g_numel(s0, n0);
            if (infer >= 0) {
                if (n % prod) return DT_ERR_SHAPE;
                osh[infer] = (int32_t)(n / prod);
                prod = n;
            }
            if (prod != n) return DT_ERR_SHAPE;
        }
        return DT_OK;
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
    case DT_ATEN_TRANSPOSE:
        a->dim = dt__g_dim(a->dim, n0);
        a->dim2 = dt__g_dim(a->dim2, n0);
        if (a->dim < 0 || a->dim2 < 0) return DT_ERR_DIM;
        osh[a->dim] = s0[a->dim2];
        osh[a->dim2] = s0[a->dim];
        return DT_OK;
    case DT_ATEN_PERMUTE: {
        uint32_t seen = 0;
        if (a->ndim != n0) return DT_ERR_DIM;
        for (d = 0; d < n0; d++) {
            k = a->shape[d] = dt__g_dim(a->shape[d], n0);
            if (k < 0 || (seen >> k & 1u)) return DT_ERR_DIM;
            seen |= 1u << k;
            osh[d] = s0[k];
        }
        return DT_OK;
    }
    case DT_ATEN_SQUEEZE:
        if (a->dim != DT_DIM_ALL && (a->dim = dt__g_dim(a->dim, n0)) < 0) return DT_ERR_DIM;
        for (d = k = 0; d < n0; d++)
            if (s0[d] != 1 || (a->dim != DT_DIM_ALL && d != a->dim)) osh[k++] = s0[d];
        *ond = k;
        return DT_OK;
    case DT_ATEN_UNSQUEEZE:
        if (n0 >= MB_MAX_DIMS) return DT_ERR_SHAPE;
        if ((a->dim = dt__g_dim(a->dim, n0 + 1)) < 0) return DT_ERR_DIM;
        for (d = n0; d > a->dim; d--) osh[d] = s0[d - 1];
        osh[a->dim] = 1;
        *ond = n0 + 1;
        return DT_OK;
    case DT_ATEN_FLATTEN:
        if (n0 == 0) { /* flatten of a 0-d tensor is 1-d */
            osh[0] = 1;
            *ond = 1;
            return DT_OK;
        }
        a->dim = dt__g_dim(a->dim, n0);
        a->dim2 = dt__g_dim(a->dim2, n0);
        if (a->dim < 0 || a->dim2 < a->dim) return DT_ERR_DIM;
        for (d = a->dim + 1; d <= a->dim2; d++) osh[a->dim] *= s0[d];
        for (d = a->dim2 + 1; d < n0; d++) osh[d - a->dim2 + a->dim] = s0[d];
        *ond = n0 - (a->dim2 - a->dim);
        return DT_OK;
    case DT_ATEN_SUM:
    case DT_ATEN_MEAN:
        if (a->dim == DT_DIM_ALL) {
            for (d = 0; d < n0; d++) osh[d] = 1;
            *ond = a->keepdim ? n0 : 0;
            return DT_OK;
        }
        if ((a->dim = dt__g_dim(a->dim, n0)) < 0) return DT_ERR_DIM;
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

DT__DEF int dt_graph_add(dt_graph *g, int op, const dt_op_attrs *attrs, const int32_t *in, int nin)
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

/* torch's view_groups(from, to): mask[o] = the input dims (of size > 1) output dim o is
   made of (Flatten / Split inputs; a size-1 piece of a split group: none). */
static void dt__g_view_groups(const int32_t *from, int fn, const int32_t *to, int tn, uint32_t *mask)
{
    int fi = 0, ti = 0, k;
    while (fi < fn || ti < tn) {
        uint32_t fg = 0, in = 0;
        int tstart = ti, tcount = 0;
        int64_t f = 1, t = 1;
        if (fi < fn) {
            f = from[fi];
            fg |= 1u << fi++;
        }
        if (ti < tn) {
            t = to[ti++];
            tcount = 1;
        }
        if (f == 1 && t != 1) { /* ([1], []) */
            ti = tstart;
            tcount = 0;
        } else if (f != 1 && t == 1) { /* ([], [1]) */
            fi--;
            fg = 0;
        } else {
            while (f != t) {
                if (f < t && fi < fn) {
                    f *= from[fi];
                    fg |= 1u << fi++;
                } else if (f > t && ti < tn) {
                    t *= to[ti++];
                    tcount++;
                } else {
                    return; /* sizes do not add up (checked before) */
                }
            }
        }
        for (k = 0; k < fn; k++)
            if ((fg >> k & 1u) && from[k] > 1) in |= 1u << k;
        for (k = tstart; k < tstart + tcount; k++) mask[k] = (tcount > 1 && to[k] == 1) ? 0 : in;
    }
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
    default: /* view, reshape, flatten */ dt__g_view_groups(x->shape, x->ndim, n->shape, n->ndim, mask); break;
    }
}

/* compute_batch_dim of activation n; *bsize is the tracked batch size. */
static int dt__g_batch_dim(dt_graph *g, dt_gnode *n, int32_t *bsize)
{
    int32_t d, i, obd = DT_BD_REPLICATE;
    if (*bsize < 0) return DT_ERR_BATCH; /* an activation before any input */
    if (dt__g_viewfam(n->op)) {
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

DT__DEF int dt_graph_analyze(dt_graph *g)
{
    int32_t i, j, b0 = -1, bsize = -1;
    int rc = DT_OK;
    if (!g || !g->nodes) return DT_ERR_NULL;
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
        if (n->op == DT_G_INPUT) {
            if (b0 < 0)
                b0 = bsize = n->shape[0];
            else if (n->shape[0] != b0)
                rc = DT_ERR_BATCH;
            n->bd = 0;
        } else if (n->op == DT_G_PARAM) {
            n->type = DT_GT_PARAM;
        } else if (n->type == DT_GT_GRAD) { /* pre-filled: stays a gradient */
        } else if (dt__g_noncompute(n->op)) {
            n->type = g->nodes[n->in[0]].type;
            if (n->type == DT_GT_ACT) rc = dt__g_batch_dim(g, n, &bsize) < DT_BD_NONE ? DT_ERR_BATCH : DT_OK;
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
    case DT_ATEN_TRANSPOSE: return d == a->dim ? a->dim2 : d == a->dim2 ? a->dim : d;
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
        bytes += DT__R8((uint64_t)dt__g_numel(sh, n->ndim) * 4u);
        if (!dt__g_viewfam(n->op)) continue;
        rc = dt__g_local(&g->nodes[n->in[0]], g->batch, world, rank, xs);
        if (rc) return rc;
        if (n->op == DT_ATEN_VIEW || n->op == DT_ATEN_RESHAPE || n->op == DT_ATEN_FLATTEN) {
            if (dt__g_numel(sh, n->ndim) != dt__g_numel(xs, g->nodes[n->in[0]].ndim)) return DT_ERR_BATCH;
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

DT__DEF int dt_graph_plan(dt_graph *g, int world, int rank, int red, dt_gplan *p, dt_gstep *steps, int cap)
{
    int32_t i, d, s;
    uint64_t off = 0;
    int rc;
    if (!g || !g->nodes || !p || !steps) return DT_ERR_NULL;
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
        off += DT__R8((uint64_t)dt__g_numel(st->shape, st->ndim) * 4u);
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

DT__DEF int dt_gplan_tensor(const dt_gplan *p, void *arena, int step, mb_tensor *t)
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
    int lo, hi, i;
    if (s->op < 0 || s->op >= DT_G_OP_END || !dt__g_arity(s->op, &lo, &hi) || s->nin < lo || s->nin > hi)
        return DT_ERR_NODE;
    for (i = 0; i < s->nin; i++) {
        if (s->in[i] < 0 || s->in[i] >= k) return DT_ERR_NODE;
        ish[i] = p->steps[s->in[i]].shape;
        ind[i] = p->steps[s->in[i]].ndim;
    }
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
        return dt__g_numel(s->shape, s->ndim) == dt__g_numel(ish[0], ind[0]) ? DT_OK : DT_ERR_SHAPE;
    if (dt__g_infer(s->op, &a, ish, ind, s->nin, osh, &ond, 1) || ond != s->ndim ||
        memcmp(osh, s->shape, sizeof(int32_t) * (size_t)ond))
        return DT_ERR_SHAPE;
    return DT_OK;
}

/* Element i (row-major) of t: contiguous t fast. */
#define DT__G_AT(t, c, i) ((c) ? ((const float *)(t)->data)[i] : dt__at((t), (i)))

/* The graph's own kernels: the ops section 10 has none for (factories, the backward
   helpers, sgd). Operands of the output's shape, any strides. */
static void dt__g_kernel(int op, int nin, float c, mb_tensor *y, const mb_tensor *const *in)
{
    float *o = (float *)y->data;
    int32_t i, n = dt__numel(y);
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

DT__DEF int dt_gplan_run(const dt_gplan *p, void *arena, size_t arena_bytes, pg_group *g)
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
            rc = pg_all_reduce(g, y.data, y.data, (size_t)dt__numel(&y), MB_F32, (pg_red)p->red);
            if (rc) return DT_ERR_COMM;
        }
    }
    return DT_OK;
}

#ifndef DT_NO_GRAPH_DIST /* ---- distributed execution through the dispatcher ---- */

DT__DEF int dt_graph_dist_placements(dt_graph *g, int mesh_ndim, dt_placement *pl, int cap)
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
    if (n->op < DT_ATEN_COUNT) {
        rc = dt_propagate(0, n->op, &n->attrs, specs, n->nin, &s);
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
DT__DEF int dt_graph_dist_init(dt_graph *g, dt_dispatch *d, const dt_placement *pl, dt_gvalue *v, int cap, void *arena,
                               size_t arena_bytes, size_t *arena_need, size_t *scratch_need)
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
    size_t left = d->scratch ? d->scratch_bytes : 0;
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
    return dt_op(d, n->op, &n->attrs, a, n->nin, &o->t, o->data, o->bytes);
}

DT__DEF int dt_graph_dist_run(const dt_graph *g, dt_dispatch *d, dt_gvalue *v)
{
    int32_t i;
    int rc = DT_OK;
    if (!g || !g->nodes || !d || !d->comm || !v) return DT_ERR_NULL;
    for (i = 0; i < g->count; i++)
        if (v[i].t.spec.mesh != d->comm->mesh) return DT_ERR_MISMATCH;
    for (i = 0; !rc && i < g->count; i++) {
        const dt_gnode *n = &g->nodes[i];
        if (n->op == DT_G_INPUT || n->op == DT_G_PARAM) continue;
        rc = n->op < DT_ATEN_COUNT ? dt__g_dist_op(n, d, v, &v[i]) : dt__g_dist_gop(n, d, v, &v[i]);
    }
    return rc;
}
#endif /* DT_NO_GRAPH_DIST */

/* ---- C source of a plan ---- */
typedef struct dt__g_out {
    char *buf;
    size_t cap, len;
} dt__g_out;

static void dt__g_puts(dt__g_out *o, const char *s)
{
    for (; *s; s++, o->len++)
        if (o->buf && o->len < o->cap) o->buf[o->len] = *s;
}

static void dt__g_puti(dt__g_out *o, int64_t v)
{
    char t[24];
    int i = 23;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    t[i] = 0;
    do t[--i] = (char)('0' + u % 10u);
    while ((u /= 10u) != 0);
    if (v < 0) t[--i] = '-';
    if (v == INT32_MIN)
        dt__g_puts(o, "INT32_MIN"); /* DT_DIM_ALL */
    else
        dt__g_puts(o, t + i);
}

/* A finite float as an exact C99 hex literal. */
static void dt__g_putf(dt__g_out *o, float f)
{
    uint32_t b, m, e;
    char t[16];
    int i;
    DT_MEMCPY(&b, &f, 4);
    m = (b & 0x7fffffu) << 1;
    e = b >> 23 & 255u;
    dt__g_puts(o, b >> 31 ? "-0x" : "0x");
    dt__g_puts(o, e ? "1." : "0.");
    for (i = 0; i < 6; i++) t[i] = "0123456789abcdef"[m >> (20 - 4 * i) & 15u];
    t[6] = 0;
    dt__g_puts(o, t);
    dt__g_puts(o, "p");
    dt__g_puti(o, e ? (int64_t)e - 127 : -126);
    dt__g_puts(o, "f");
}

/* Each of v[0..n): a separator (seps[i], or seps[0] when one), then the number. */
static void dt__g_putv(dt__g_out *o, const char *const *seps, int nseps, const int32_t *v, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        dt__g_puts(o, seps[i < nseps ? i : 0]);
        dt__g_puti(o, v[i]);
    }
}

static void dt__g_puta(dt__g_out *o, const char *sep, const int32_t *v, int n)
{
    static const char *const first[2] = {"{", ","};
    dt__g_puts(o, sep);
    dt__g_putv(o, first, 2, v, 1);
    dt__g_putv(o, first + 1, 1, v + 1, n - 1);
    dt__g_puts(o, "}");
}

static void dt__g_emit(dt__g_out *o, const dt_gplan *p, const char *name)
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
    dt__g_puts(o, head[2]);
    dt__g_puts(o, name);
    dt__g_puts(o, "_steps[");
    dt__g_puti(o, p->nsteps);
    dt__g_puts(o, "] = {\n");
    for (k = 0; k < p->nsteps; k++) {
        const dt_gstep *s = &p->steps[k];
        const dt_op_attrs *a = &s->attrs;
        dt__g_puts(o, "    {");
        dt__g_puti(o, s->op);
        dt__g_putv(o, head + 3, 1, &s->nin, 1);
        dt__g_puta(o, ",", s->in, DT_MAX_OP_ARGS);
        w[0] = s->flags;
        w[1] = s->placement;
        w[2] = s->ndim;
        dt__g_putv(o, head + 3, 1, w, 3);
        dt__g_puta(o, ",", s->shape, MB_MAX_DIMS);
        dt__g_puta(o, ",", s->stride, MB_MAX_DIMS);
        dt__g_puts(o, ",");
        dt__g_puti(o, s->offset);
        {
            const int32_t av[6] = {a->dim, a->dim2, a->keepdim, a->mode, a->ignore_index, a->ndim};
            dt__g_putv(o, attr, 6, av, 6);
        }
        dt__g_puta(o, ", .shape = ", a->shape, MB_MAX_DIMS);
        dt__g_puts(o, ", .scalar = ");
        dt__g_putf(o, a->scalar);
        dt__g_puts(o, "}},\n");
    }
    dt__g_puts(o, "};\nconst dt_gplan ");
    dt__g_puts(o, name);
    {
        const int32_t hv[6] = {p->nsteps, p->world, p->rank, p->batch, p->local_batch, p->red};
        dt__g_puts(o, " = {");
        dt__g_puti(o, hv[0]);
        dt__g_putv(o, comma, 1, hv + 1, 5);
    }
    dt__g_puts(o, ", ");
    dt__g_puti(o, p->arena_bytes);
    dt__g_puts(o, "u, ");
    dt__g_puts(o, name);
    dt__g_puts(o, "_steps};\n");
}

DT__DEF int dt_gplan_emit_c(const dt_gplan *p, const char *name, char *buf, size_t cap, size_t *len)
{
    dt__g_out o;
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
    o.len = 0;
    dt__g_emit(&o, p, name);
    if (buf && cap <= o.len) return DT_ERR_TOO_SMALL;
    if (buf) {
        o.buf = buf;
        o.cap = cap;
        o.len = 0;
        dt__g_emit(&o, p, name);
        buf[o.len] = 0;
    }
    *len = o.len;
    return DT_OK;
}
#endif /* DT_NO_GRAPH */

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_IMPLEMENTATION */
