/* dtensor.h — DTensor core: device mesh, placements, uneven sharding, redistribute planner and execution (splitcore)

   PyTorch's DTensor for microcontrollers. A *mesh* arranges ranks in 1-3 dimensions
   (row-major); a *spec* says how one global tensor lies on it: per mesh dimension
   Shard(dim) (torch.chunk pieces, trailing ranks may be empty), Replicate or
   Partial(op) (a pending sum/avg/max/min/prod). Without communication this header gives
   every rank's local shape and global offset exactly as torch's
   compute_local_shape_and_global_offset, zero-copy local views of a global mb_tensor,
   and redistribute *plans*: the steps torch's greedy planner (_gen_transform_infos)
   takes from one spec to another, each labelled with the collective it lowers to, with
   bytes/hops per step, a time estimate, a scratch size, and a plan cache with hit/miss
   counters in caller storage. Section 8 executes them over ports/pg.h: a mesh bound to
   one pg sub-group per mesh dim, distribute / from_local / to_local / full_tensor, and
   redistribute with caller scratch (all_gatherv, all_reduce, reduce_scatterv,
   all_to_allv straight on the caller's tensors when their blocks lie back to back, local
   narrow as a view, partition). This is the core; the rest of DTensor is one single
   header per module on top of it, each with its own *_IMPLEMENTATION (include what you
   use): dtensor_ops.h (sharding propagation, dispatcher, kernels, tensor-parallel
   styles), dtensor_conv.h (conv2d, max pool, halo exchange), dtensor_quant.h (int8 mm,
   requantization), dtensor_qconv.h (int8 conv2d), dtensor_random.h (Philox, rand,
   dropout), dtensor_graph.h (graph IR, data-parallel plans). No heap, C99, C++-clean.
   Includes only microbatch.h and ports/pg.h.

   Example (rank 3 of a 2x2 mesh; 5 rows sharded twice, then made replicated):
       #define SPLITCORE_IMPLEMENTATION  // dtensor.h, microbatch.h and pg.h in this file
       #include <splitcore/dtensor.h>
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
       3. Device mesh                      8. Execution over ports/pg.h, construction
       4. Placements and specs             9. Internal, for the dtensor modules
       5. Shard sizes, local shapes, views 10. Implementation (DTENSOR_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; section 1 has
   each default):
       DTENSOR_IMPLEMENTATION  emit the definitions (exactly one .c file; the same file
                               implements microbatch.h and ports/pg.h, or
                               SPLITCORE_IMPLEMENTATION implements all three; the
                               executing calls also need a port)
       DTENSOR_STATIC          make every function static to its translation unit (the
                               dtensor_*.h modules are then implemented in that file too)
       SPLITCORE_CONFIG_FILE   "file.h" included first by every splitcore header
       DT_MAX_MESH_DIMS        largest mesh rank (default 3)
       DT_MAX_RANKS            largest mesh size (default 64)
       DT_NO_CONSTRUCTION      1: leave out distribute / from_local / to_local /
                               full_tensor (firmware that holds its shards and only
                               redistributes: mesh, specs, planner, cache and executor)
       DT_RESTRICT             restrict qualifier of the modules' kernels (default:
                               restrict in C, nothing in C++)
       DT_ASSERT(x)            internal invariant check (default: none)
       DT_MEMCPY(d,s,n), DT_MEMSET(d,v,n)   default: memcpy / memset

   Errors are negative return values, DT_ERR_* -121..-199 (enum dt_err, listed in
   splitcore_base.h, shared by the modules); dt_strerror() names them,
   splitcore_strerror() any code. Bad input never writes to the caller's outputs
   (docs/error-contract.md lists every case). dtensor.h never includes pipeline.h.

   Threads, interrupts, memory: meshes, specs and the planner work only on their
   arguments (no global state, no locks, no heap): safe from any thread on distinct
   objects. A plan cache and a dt_comm belong to one rank's thread. Calls that
   communicate (section 8) block in ports/pg.h, so never from an ISR, and every rank of
   the mesh makes them in the same order. All memory is the caller's: cache storage,
   scratch sized by the *_scratch_bytes queries, outputs; stack use is bounded (no
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

#ifndef DT_MAX_MESH_DIMS
#define DT_MAX_MESH_DIMS 3 /* largest mesh rank: 3 placements per spec */
#endif
#if DT_MAX_MESH_DIMS < 1 || DT_MAX_MESH_DIMS > 16
#error "DT_MAX_MESH_DIMS must be 1..16"
#endif
#ifndef DT_MAX_RANKS
#define DT_MAX_RANKS 64 /* largest mesh size: the world ranks a dt_mesh lists */
#endif
#if DT_MAX_RANKS < 1 || DT_MAX_RANKS > 65536
#error "DT_MAX_RANKS must be 1..65536"
#endif
#ifndef DT_NO_CONSTRUCTION
#define DT_NO_CONSTRUCTION 0 /* 1: no distribute / from_local / to_local / full_tensor */
#endif
#if DT_NO_CONSTRUCTION != 0 && DT_NO_CONSTRUCTION != 1
#error "DT_NO_CONSTRUCTION must be 0 or 1"
#endif
#ifndef DT_RESTRICT
#ifdef __cplusplus
#define DT_RESTRICT /* C++ has no restrict */
#else
#define DT_RESTRICT restrict /* the kernels' non-aliasing pointers (vectorisation) */
#endif
#endif
#ifndef DT_ASSERT
#define DT_ASSERT(x) ((void)0) /* internal invariants only; bad input is an error value */
#endif
#ifndef DT_MEMCPY
#define DT_MEMCPY(d, s, n) memcpy((d), (s), (n))
#endif
#ifndef DT_MEMSET
#define DT_MEMSET(d, v, n) memset((d), (v), (n))
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
   and dtype. Reducing a Partial(avg) of an integer dtype is DT_ERR_DTYPE (the ports
   average floats only); a Replicate -> Partial(sum) partition while another mesh dim
   (of size > 1) still holds a Partial(prod) is DT_ERR_UNSUPPORTED (each piece divided
   before the product: torch's order gives the value divided n^k times). Nothing is
   written on error. */
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
   all_to_all costed as an all_gather + a penalty, in whole ns. Differences: bytes are this
   rank's real (uneven) sizes where torch uses the even average, and a step on a size-1 mesh
   dim costs 0 (torch still charges the base latency). No inter-host factor (one board).
   dtensor_ops.h's strategy choice does not use it: it computes torch's own formula in
   double, as PyTorch does. */
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
   and stays valid until that entry is evicted. A failing plan changes nothing. A cache
   whose counters no init or use could leave (capacity < 1, count outside 0..capacity,
   last outside 0..count - 1, or not 0 when empty) is DT_ERR_VALUE, nothing read: every
   call taking a cache (dt_redistribute, dtensor_ops.h's dispatcher) returns it. */
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
   the next call).
   Collective-unsafe argument errors: those checks are rank-local, with no agreement step
   (it would cost every call a round trip). The errors that depend on one rank's own
   arguments (a NULL pointer, a local tensor of the wrong shape or dtype, or without data, a
   scratch or output buffer too small, a copied dt_comm) are returned at once on the ranks
   where they occur, while the ranks whose arguments pass enter the collective and return
   DT_ERR_COMM with c->err = PG_ERR_TIMEOUT after the group's timeout (pg_set_timeout): a
   wait, not a hang; pg_recover() on every rank then. Errors of the specs, mesh, flags and
   plan are the same on every rank, as every rank passes equal specs. This holds for
   dt_redistribute, dt_full_tensor, dt_distribute and the modules' collectives (dt_op,
   dt_tp_redistribute, dt_graph_dist_run, dt_conv2d, dt_maxpool2d,
   dt_conv2d_sharded_backward, dt_conv2d_q8, dt_qmm). Size buffers with the exact queries on
   every rank (dt_full_tensor_scratch_query, dt_distribute_scratch_query, ...), or have a
   rank whose call failed pg_abort() the world so the others stop waiting (PG_ERR_ABORTED,
   at the latest after one timeout). Do not copy a dt_comm: its groups point into it (g[i] = &group[i]) and
   into their own scratch; use it where dt_comm_init filled it, through pointers. A copy is
   refused with DT_ERR_COPIED by every call that takes it (dt_comm_group: NULL). */
typedef struct dt_comm {
    const struct dt_comm *self; /* the dt_comm itself, set by dt_comm_init: a copy lives elsewhere */
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
   in parent; DT_ERR_COPIED: parent is a copy of a group (pg_group: do not copy);
   DT_ERR_NOT_MEMBER: this rank is not in the mesh (the call still keeps the parent's
   sub-group numbering in step with the members'). */
DT_API int dt_comm_init(dt_comm *c, const dt_mesh *mesh, pg_group *parent);
/* The sub-group of mesh dim `mesh_dim` (NULL when out of range, or c is a copy). */
DT_API pg_group *dt_comm_group(dt_comm *c, int mesh_dim);

/* Redistribute this rank's `in` (src's local shape) into `out` (dst's local shape) along
   the plan for (src, dst, flags): from `cache` when not NULL. `out` must not overlap `in`.
   Collectives read `in` and write `out` directly where the layout allows (no copy).
   scratch_bytes >= dt_redistribute_scratch_bytes(plan, in, out) (for contiguous tensors:
   dt_plan_scratch_bytes(plan)), else DT_ERR_TOO_SMALL; scratch may be NULL when that is 0. */
DT_API int dt_redistribute(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in,
                           const dt_spec *dst, int flags, mb_tensor *out, void *scratch, size_t scratch_bytes);
#if !DT_NO_CONSTRUCTION
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
/* Its scratch on this rank for exactly these views (strided ones included): *bytes is what
   dt_full_tensor(c, NULL, src, in, global, ...) needs, no more; the error is the one that
   call would return before communicating (nothing written then). Plans into c's work area,
   no communication. */
DT_API int dt_full_tensor_scratch_query(dt_comm *c, const dt_spec *src, const mb_tensor *in, const mb_tensor *global,
                                        size_t *bytes);
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
/* The same for exactly these views (strided ones included), as dt_full_tensor_scratch_query:
   what dt_distribute(c, s, global, src_rank, local, ...) needs on this rank, no more. */
DT_API int dt_distribute_scratch_query(dt_comm *c, const dt_spec *s, const mb_tensor *global, int src_rank,
                                       const mb_tensor *local, size_t *bytes);
#endif /* DT_NO_CONSTRUCTION */

/* ---- 9. Internal, for the dtensor modules -------------------------------------------
   Not API: the helpers the dtensor_*.h modules' implementations share with the core.
   Extern, so that a module may be implemented in another file than the core
   (SPLITCORE_SEPARATE_IMPLEMENTATIONS); static with DTENSOR_STATIC, when every module is
   implemented in the core's file. */
#if defined(__GNUC__) || defined(__clang__)
#define DT__UNUSED   __attribute__((unused))   /* a static helper no module of this file calls */
#define DT__NOINLINE __attribute__((noinline)) /* stack: its frame apart from the caller's */
#else
#define DT__UNUSED
#define DT__NOINLINE
#endif
#ifdef DTENSOR_STATIC
#define DT__INTERNAL static DT__UNUSED
#else
#define DT__INTERNAL extern
#endif
#define DT__R8(x) (((x) + 7u) & ~(uint64_t)7u) /* scratch regions stay 8-byte aligned */

/* p is Shard(dim). */
static inline int dt__is_shard(dt_placement p, int dim)
{
    return p.kind == DT_KIND_SHARD && p.arg == dim;
}
/* Piece i of n split k ways (torch.chunk, valid arguments); its offset in *offset (may be NULL). */
DT__INTERNAL int32_t dt__chunk(int32_t n, int32_t k, int32_t i, int32_t *offset);
/* Local shape (and global offset, may be NULL) of s's global shape at mesh coordinate
   `coord` with placements p, mesh dims 0..upto-1 applied in order. */
DT__INTERNAL void dt__local(const dt_spec *s, const int32_t *coord, const dt_placement *p, int upto, int32_t *shape,
                            int32_t *offset);
/* Bytes of a dense tensor of shape[0..ndim) in dtype dt. */
DT__INTERNAL uint64_t dt__bytes(const int32_t *shape, int ndim, mb_dtype dt);
/* DT_OK when t is a valid view of `shape` in dtype dt (rank ndim), else the error. */
DT__INTERNAL int dt__fits(const mb_tensor *t, int dt, int ndim, const int32_t *shape);
/* 1 when a and b are the same mesh for planning: shape and this rank's coordinate. */
DT__INTERNAL int dt__mesh_same(const dt_mesh *a, const dt_mesh *b);
/* Product of the mesh sizes of p's Shard dims. */
DT__INTERNAL int32_t dt__num_shards(const dt_mesh *m, const dt_placement *p);
/* Checks of an executing call: c bound to mesh m, this rank a member. */
DT__INTERNAL int dt__comm_check(const dt_comm *c, const dt_mesh *m);
/* dt_redistribute; measure != NULL: nothing run, the scratch it needs for exactly these
   views into *measure (out's data is only checked for NULL), or its error. */
DT__INTERNAL int dt__redist(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in,
                            const dt_spec *dst, int flags, mb_tensor *out, void *scratch, size_t scratch_bytes,
                            int64_t *measure);
/* The steps of the plan src -> dst without a dt_plan: each one's mesh dim and placement
   kinds before and after (dtensor_ops.h costs them as torch's redistribute_cost). */
typedef struct dt__psteps {
    int32_t n;
    unsigned char md[DT_MAX_STEPS], from[DT_MAX_STEPS], to[DT_MAX_STEPS];
} dt__psteps;
DT__INTERNAL int dt__plan_steps(const dt_spec *src, const dt_spec *dst, int flags, dt__psteps *steps);
/* A cache's counters as no init or use leaves them: entries[count] would be read or
   written past the caller's storage (dt_plan_cached; the strategy cache's last is 0). */
#define DT__CACHE_BAD(count, capacity, last) \
    ((capacity) < 1 || (count) < 0 || (count) > (capacity) || (last) < 0 || (last) >= ((count) ? (count) : 1))
/* The least-recently-used lookup of the plan cache and dtensor_ops.h's strategy cache:
   among entries[0..count) (`stride` bytes each, starting with a key of key_bytes, its
   uint32_t stamp of last use at offset stamp_at), looked at from `first` on, the one whose
   key is `key`; when none is, -1 - the entry a miss fills: the next unused one while
   count < capacity, else the least recently used. */
DT__INTERNAL int32_t dt__lru(const void *entries, size_t stride, size_t key_bytes, size_t stamp_at, int32_t count,
                             int32_t capacity, int32_t first, const void *key);

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_H */

/* ---- 10. Implementation ---------------------------------------------------------- */
#if defined(DTENSOR_IMPLEMENTATION) && !defined(DTENSOR_IMPLEMENTED)
#define DTENSOR_IMPLEMENTED
#if !defined(MICROBATCH_IMPLEMENTATION) && (defined(MICROBATCH_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor.h: DTENSOR_IMPLEMENTATION needs MICROBATCH_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif
#if !defined(PG_IMPLEMENTATION) && (defined(PG_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error "dtensor.h: DTENSOR_IMPLEMENTATION needs PG_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#include <string.h>
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

/* Check of a mesh as dt_mesh_init fills it (a caller may fill or change one): shape, size,
   ranks >= 0, and a member's rank and coordinate those of its index. */
static int dt__mesh_check(const dt_mesh *m)
{
    int32_t n, i, k;
    int rc;
    if (!m) return DT_ERR_NULL;
    rc = dt__mesh_shape(m->ndim, m->shape, &n);
    if (!rc && (n != m->size || m->index < -1 || m->index >= n)) rc = DT_ERR_MESH;
    for (i = 0; !rc && i < n; i++) rc = m->ranks[i] < 0 ? DT_ERR_MESH : DT_OK;
    if (!rc && m->index >= 0 && m->ranks[m->index] != m->rank) rc = DT_ERR_MESH;
    for (i = m->ndim, k = m->index; !rc && k >= 0 && i-- > 0; k /= m->shape[i])
        if (m->coord[i] != k % m->shape[i]) rc = DT_ERR_MESH;
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
    for (i = 0; i < nplacements; i++) { /* shard dims from the end normalised (dt_spec_check refuses bad ones) */
        int d = mb_normalize_dim(placements[i].arg, ndim);
        v.placements[i] = placements[i];
        if (v.placements[i].kind == DT_KIND_SHARD && d >= 0) v.placements[i].arg = (int16_t)d;
    }
    rc = dt_spec_check(&v);
    if (!rc) *s = v;
    return rc;
}

/* Product of the mesh sizes of p's Shard dims. */
DT__DEF int32_t dt__num_shards(const dt_mesh *m, const dt_placement *p)
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
DT__DEF int32_t dt__chunk(int32_t n, int32_t k, int32_t i, int32_t *offset)
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
DT__DEF void dt__local(const dt_spec *s, const int32_t *coord, const dt_placement *p, int upto, int32_t *shape,
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

DT__DEF uint64_t dt__bytes(const int32_t *shape, int ndim, mb_dtype dt)
{
    return (uint64_t)mb_shape_numel(shape, ndim) * mb_dtype_size(dt);
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
DT__DEF int dt__fits(const mb_tensor *t, int dt, int ndim, const int32_t *shape)
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
#if !DT_NO_CONSTRUCTION
    case DT_OP_SCATTER: rc = pg_scatterv(g, sp, rp, sc, dt, st->root); break;
    case DT_OP_BROADCAST: rc = pg_broadcast(g, rp, yn, dt, st->root); break;
#endif
    default: rc = pg_all_to_allv(g, sp, sc, rp, rcn, dt); break;
    }
    if (rc < 0) return rc;
    if (unstage) dt__blocks(y, dr, n, (unsigned char *)rp, 1);
    return (int64_t)need;
}

/* p + off, where a NULL p (no scratch, so off is 0) stays NULL: C has no NULL + 0 */
static unsigned char *dt__scratch_at(unsigned char *p, uint64_t off)
{
    return p ? p + off : p;
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
            mb_tensor_init(y, c ? (void *)dt__scratch_at(scratch, flip ? end - ob : 0) : (void *)pl,
                           (mb_dtype)pl->dtype, pl->ndim, st->out_shape);
        }
        rc = dt__step(c, st, x, y, c ? dt__scratch_at(scratch, flip ? xres : ob) : 0, fast);
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

/* One (src -> dst) pair on a mesh dim: 0 when allowed, else the error. */
static int dt__pair_check(dt_placement a, dt_placement b, int flags, mb_dtype dt)
{
    if (dt__same(a, b)) return DT_OK;
    if (a.kind == DT_KIND_PARTIAL && a.arg == DT_AVG && dt >= MB_I8) return DT_ERR_DTYPE; /* the port averages floats */
    if (b.kind != DT_KIND_PARTIAL) return DT_OK;
    if (a.kind == DT_KIND_PARTIAL) return DT_ERR_PARTIAL_OP;
    if (a.kind == DT_KIND_SHARD || !(flags & DT_PLAN_ALLOW_PARTIAL)) return DT_ERR_PARTIAL;
    if (b.arg == DT_PROD) return DT_ERR_UNSUPPORTED;         /* torch: no exact n-th root */
    if (b.arg == DT_SUM && dt >= MB_I8) return DT_ERR_DTYPE; /* sum divides */
    return DT_OK;
}

/* A plan only listed (the ops' redistribute_cost) or sized (the construction calls' scratch
   queries): each step in turn in `one`, the steps' mesh dims and placement kinds, and
   dt__run's measure of the plan's scratch with contiguous tensors, step by step
   (dt__measure): no dt_plan of ~800 B on the stack. */
typedef struct dt__cost {
    dt_step one;
    dt__psteps steps;
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

#if !DT_NO_CONSTRUCTION
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
    }
    if (!pl) { /* a listed plan (dtensor_ops.h's propagation) */
        dt__psteps *ps = &cw->steps;
        ps->md[ps->n] = (unsigned char)md;
        ps->from[ps->n] = (unsigned char)st->src.kind;
        ps->to[ps->n++] = (unsigned char)to.kind;
#if !DT_NO_CONSTRUCTION
        dt__measure(cw, s, st);
#endif
    }
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
DT__DEF int dt__mesh_same(const dt_mesh *a, const dt_mesh *b)
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
    int i, j, md, nd, rev, rc = dt_spec_check(src);
    if (!rc) rc = dt_spec_check(dst);
    if (rc) return rc;
    m = src->mesh;
    nd = m->ndim;
    if (!dt__mesh_same(m, dst->mesh) || src->dtype != dst->dtype || src->ndim != dst->ndim ||
        memcmp(src->shape, dst->shape, sizeof(int32_t) * (size_t)src->ndim))
        return DT_ERR_MISMATCH;
    if (m->index < 0) return DT_ERR_NOT_MEMBER;
    rev = dt__num_shards(m, src->placements) > 1; /* the first pass below: inner to outer */
    for (i = 0; i < nd; i++) {
        rc = dt__pair_check(src->placements[i], dst->placements[i], flags, src->dtype);
        if (rc) return rc;
        cur[i] = src->placements[i];
    }
    /* a Replicate -> Partial(sum) partition divides each piece: refused while another mesh dim's
       Partial(prod) is still to be multiplied (kept, or reduced later in the step order below):
       the value would come out divided (torch's order computes that) */
    for (i = 0; i < nd; i++)
        for (j = 0; cur[i].kind == DT_KIND_REPLICATE && dst->placements[i].kind == DT_KIND_PARTIAL &&
                    dst->placements[i].arg == DT_SUM && m->shape[i] > 1 && j < nd;
             j++)
            if (cur[j].kind == DT_KIND_PARTIAL && cur[j].arg == DT_PROD && m->shape[j] > 1 &&
                (dt__same(cur[j], dst->placements[j]) || (rev ? j < i : j > i)))
                return DT_ERR_UNSUPPORTED;
    if (!plan) {
        if (!cw) return DT_OK;
        DT_MEMSET(cw, 0, sizeof *cw);
    } else {
        DT_MEMSET(plan, 0, sizeof *plan);
    }
    /* two passes: inner to outer (when sharded at all), a Shard target whose tensor dim is
       sharded differently on an earlier mesh dim (nested sharding) is first replicated;
       then outer to inner, whatever is left */
    for (j = rev ? 0 : nd; j < 2 * nd; j++) {
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

DT__DEF DT__NOINLINE int dt__plan_steps(const dt_spec *src, const dt_spec *dst, int flags, dt__psteps *steps)
{
    dt__cost cw;
    int rc = dt__plan(src, dst, flags, 0, &cw);
    *steps = cw.steps;
    return rc;
}

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

DT__DEF int32_t dt__lru(const void *entries, size_t stride, size_t key_bytes, size_t stamp_at, int32_t count,
                        int32_t capacity, int32_t first, const void *key)
{
    const unsigned char *e;
    uint32_t stamp, oldest = 0;
    int32_t i, j, victim = count;
    if (DT__CACHE_BAD(count, capacity, first)) return INT32_MIN;
    for (j = 0; j < count; j++) {
        i = first + j; /* first < count (or both 0), so i < 2 * count */
        i -= i < count ? 0 : count;
        e = (const unsigned char *)entries + (size_t)i * stride;
        if (!memcmp(e, key, key_bytes)) return i;
        stamp = *(const uint32_t *)(const void *)(e + stamp_at);
        if (count >= capacity && (victim == count || stamp < oldest)) {
            victim = i;
            oldest = stamp;
        }
    }
    return -1 - victim;
}

/* dt_plan_cached (inlined into dt_redistribute where the build optimizes for speed) */
static DT__HOT int dt__cached(dt_plan_cache *c, const dt_spec *src, const dt_spec *dst, int flags, const dt_plan **plan)
{
    dt_plan_key k;
    dt_cache_entry *e;
    int32_t i;
    int rc;
    if (!c || !c->entries || !plan || !src || !dst || !src->mesh || !dst->mesh) return DT_ERR_NULL;
    /* a stored key came from valid specs on one mesh, so an equal key on one mesh is a valid,
       equal request; specs on two meshes go to the planner, which refuses them */
    if (!dt__mesh_same(src->mesh, dst->mesh)) return dt__plan(src, dst, flags, 0, 0);
    k.flags = flags;
    DT_MEMCPY(k.mesh, src->mesh, sizeof k.mesh);
    DT_MEMCPY(k.src, src->placements, sizeof k.src);
    DT_MEMCPY(k.dst, dst->placements, sizeof k.dst);
    /* from the entry used last: a loop redistributing one way hits at the first compare */
    i = dt__lru(c->entries, sizeof *e, sizeof k, offsetof(dt_cache_entry, stamp), c->count, c->capacity, c->last, &k);
    if (i == INT32_MIN) return DT_ERR_VALUE;
    if (i >= 0) {
        c->hits++;
        c->last = i;
    } else {
        i = -1 - i;
        rc = dt_plan_redistribute(src, dst, flags, &c->entries[i].plan); /* writes nothing on error */
        if (rc) return rc;
        if (i == c->count) c->count++;
        c->entries[i].key = k;
        c->misses++;
    }
    e = &c->entries[i];
    e->stamp = ++c->clock;
    *plan = &e->plan;
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
    rc = pg_rank(parent); /* PG_ERR_NOT_MEMBER, or PG_ERR_COPIED for a copy */
    if (rc < 0) return rc == PG_ERR_COPIED ? DT_ERR_COPIED : DT_ERR_NOT_MEMBER;
    if (mesh->rank != parent->world_rank) return DT_ERR_MISMATCH;
    for (i = 0; i < mesh->size; i++)
        if (dt__in_group(parent, mesh->ranks[i]) == parent->size) return DT_ERR_RANK;
    DT_MEMSET(c, 0, sizeof *c);
    c->self = c;
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
    return (c && c->self == c && mesh_dim >= 0 && mesh_dim < c->mesh->ndim) ? c->g[mesh_dim] : 0; /* self: init ran */
}

/* Checks shared by the executing calls: comm bound to mesh m, this rank a member. */
DT__DEF int dt__comm_check(const dt_comm *c, const dt_mesh *m)
{
    if (!c || !c->mesh) return DT_ERR_NULL;
    if (c->self != c) return DT_ERR_COPIED;
    if (!dt__mesh_same(c->mesh, m) || c->mesh->rank != m->rank) return DT_ERR_MISMATCH;
    return c->mesh->index < 0 ? DT_ERR_NOT_MEMBER : DT_OK;
}

/* Enough scratch for this run? Then run it. fast: in and out are contiguous (or empty),
   so the run is the one the plan measured. measure != NULL: nothing run, the scratch this
   run needs into *measure (the one computation behind every scratch query). */
static DT__HOT int dt__exec(dt_comm *c, const dt_plan *pl, const mb_tensor *in, mb_tensor *out, void *scratch,
                            size_t bytes, int fast, int64_t *measure)
{
    const dt_step *st = pl->steps;
    int64_t need = 0;
    if (!fast || pl->nsteps != 1 || st->op < DT_OP_ALL_GATHER || st->stage) {
        need = fast ? (int64_t)pl->scratch : dt__run(0, pl, in, out, 0, 0, 0);
    } else if (!measure) {                     /* the usual case, straight */
        need = dt__step(c, st, in, out, 0, 1); /* no staging: no scratch */
        if (need < 0) return c->err = (int32_t)need, DT_ERR_COMM;
        c->collectives++;
        return DT_OK;
    }
    if (measure) return *measure = need, DT_OK;
    if ((uint64_t)need > bytes || (need && !scratch)) return DT_ERR_TOO_SMALL;
    need = dt__run(c, pl, in, out, (unsigned char *)scratch, bytes, fast);
    return need < 0 ? (int)need : DT_OK;
}

DT__DEF int dt__redist(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in, const dt_spec *dst,
                       int flags, mb_tensor *out, void *scratch, size_t scratch_bytes, int64_t *measure)
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
    return fi < 0 ? fi : fo < 0 ? fo : dt__exec(c, pl, in, out, scratch, scratch_bytes, fi & fo, measure);
}

DT__DEF int dt_redistribute(dt_comm *c, dt_plan_cache *cache, const dt_spec *src, const mb_tensor *in,
                            const dt_spec *dst, int flags, mb_tensor *out, void *scratch, size_t scratch_bytes)
{
    return dt__redist(c, cache, src, in, dst, flags, out, scratch, scratch_bytes, 0);
}

#if !DT_NO_CONSTRUCTION /* distribute, from_local, to_local, full_tensor */

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

DT__DEF int dt_full_tensor_scratch_query(dt_comm *c, const dt_spec *src, const mb_tensor *in, const mb_tensor *global,
                                         size_t *bytes)
{
    dt_spec r;
    int64_t need;
    int rc;
    if (!src || !bytes) return DT_ERR_NULL;
    r = dt__replicated(src);
    rc = dt__redist(c, 0, src, in, &r, 0, (mb_tensor *)global, 0, 0, &need);
    if (!rc) *bytes = (size_t)need;
    return rc;
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

/* dt_distribute's checks: its plan into the comm's work area, its input view into *x;
   1 when the run is the contiguous one (fast), 0 when not, else the error. */
static int dt__dist_prep(dt_comm *c, const dt_spec *s, const mb_tensor *global, int src_rank, const mb_tensor *local,
                         mb_tensor *x)
{
    int fast = 1, rc = dt_spec_check(s);
    if (!rc) rc = dt__comm_check(c, s->mesh);
    if (!rc) rc = dt__dist_plan(s, src_rank, &c->plan, 0);
    if (!rc) rc = fast = dt__fits_local(local, s);
    if (rc < 0) return rc;
    if (src_rank == DT_EVERY_RANK || src_rank == s->mesh->rank) {
        rc = dt__fit(global, (int)s->dtype, s->ndim, s->shape);
        if (rc < 0) return rc;
        *x = *global;
        return fast & rc;
    } /* only its shape is read here (contiguous): the first step receives */
    mb_tensor_init(x, (void *)s, s->dtype, s->ndim, c->plan.in_shape);
    return fast;
}

DT__DEF int dt_distribute(dt_comm *c, const dt_spec *s, const mb_tensor *global, int src_rank, mb_tensor *local,
                          void *scratch, size_t scratch_bytes)
{
    mb_tensor x;
    int rc = dt__dist_prep(c, s, global, src_rank, local, &x);
    return rc < 0 ? rc : dt__exec(c, &c->plan, &x, local, scratch, scratch_bytes, rc, 0);
}

DT__DEF int dt_distribute_scratch_query(dt_comm *c, const dt_spec *s, const mb_tensor *global, int src_rank,
                                        const mb_tensor *local, size_t *bytes)
{
    mb_tensor x;
    int64_t need;
    int rc = bytes ? dt__dist_prep(c, s, global, src_rank, local, &x) : DT_ERR_NULL;
    if (rc >= 0) rc = dt__exec(c, &c->plan, &x, (mb_tensor *)local, 0, 0, rc, &need);
    if (!rc) *bytes = (size_t)need;
    return rc;
}

#endif /* DT_NO_CONSTRUCTION */

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_IMPLEMENTATION */
