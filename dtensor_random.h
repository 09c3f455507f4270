/* dtensor_random.h — DTensor random numbers: Philox 4x32-10, RNG offsets, rand and dropout (splitcore)

   Random tensors that are the same whatever the sharding, on top of the core
   (dtensor.h): Random123's Philox 4x32-10 counter-based generator (curand's and torch's
   philox engine), torch's OffsetBasedRNGTracker offsets, and dt_rand / dt_dropout,
   which fill each rank's local shard so that it is exactly its slice of the result on
   one rank (or, with DT_RNG_TORCH_STREAM, draw as torch's sharded ops do). No
   communication, no heap, C99, C++-clean. Includes dtensor.h.

   Example (rank 0 of 2 fills its rows of a 5x4 uniform tensor):
       #define SPLITCORE_IMPLEMENTATION  // this header, dtensor.h, microbatch.h, pg.h
       #include <splitcore/dtensor_random.h>
       dt_mesh mesh;  dt_spec s;  dt_rng g = {1234, 0};  static float x[3 * 4];  mb_tensor t;
       int32_t ms[1] = {2}, gs[2] = {5, 4}, ls[2];
       dt_placement s0[1] = {DT_SHARD(0)};
       dt_mesh_init(&mesh, 1, ms, NULL, 0);
       dt_spec_init(&s, &mesh, s0, 1, MB_F32, 2, gs, NULL);
       dt_local_shape(&s, 0, ls, NULL);                       // rows 0..2 of 5
       mb_tensor_init(&t, x, MB_F32, 2, ls);
       int rc = dt_rand(&g, &s, &t, 0);  // the first 3 rows of the 1-rank result

   Contents:
       1. Configuration macros   2. Philox, RNG offsets, rand, dropout   3. Implementation

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; dtensor.h's
   apply too):
       DTENSOR_RANDOM_IMPLEMENTATION  emit the definitions (exactly one .c file, the one
                                      that implements dtensor.h; or SPLITCORE_IMPLEMENTATION)
       DTENSOR_RANDOM_STATIC          make every function static to its translation unit

   Errors are dtensor.h's (DT_ERR_*, dt_strerror()): DT_ERR_VALUE for a dropout
   probability outside [0, 1] or unknown flags, DT_ERR_DTYPE unless f32, the core's for
   specs and local tensors. Bad input never writes to the caller's outputs
   (docs/error-contract.md lists every case).

   Threads, memory: every call works only on its arguments (a dt_rng belongs to one
   rank's thread); no communication: ranks stay in step by advancing their dt_rng alike. */
#ifndef DTENSOR_RANDOM_H
#define DTENSOR_RANDOM_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "dtensor.h"
#if SPLITCORE_VERSION != 200
#error "dtensor_random.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(DTENSOR_RANDOM_IMPLEMENTATION)
#define DTENSOR_RANDOM_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(DTENSOR_RANDOM_STATIC)
#define DTENSOR_RANDOM_STATIC
#endif
#ifdef DTENSOR_RANDOM_STATIC
#define DT_RANDOM_API static
#else
#define DT_RANDOM_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Philox 4x32-10, DTensor's offset-based RNG tracker, rand, dropout ------------
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
DT_RANDOM_API void dt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Stream word at position pos (in 32-bit draws) of seed. */
DT_RANDOM_API uint32_t dt_philox_draw(uint64_t seed, uint64_t pos);
/* torch's start offset and end increment for world rank `rank` (a mesh member). */
DT_RANDOM_API int dt_rng_offsets(const dt_spec *s, int rank, uint64_t *start, uint64_t *end_incr);
/* Fill this rank's local f32 tensor (s's local shape on s->mesh->rank, any strides) with
   uniform [0, 1) draws; g->offset += end increment. */
DT_RANDOM_API int dt_rand(dt_rng *g, const dt_spec *s, mb_tensor *local, int flags);
/* out = in * keep / (1 - p) with keep = (uniform < 1 - p) drawn as dt_rand (torch's
   fused dropout keeps where rand < the keep probability); p in [0, 1] (1: all zero),
   else DT_ERR_VALUE. in and out: f32, s's local shape; out may be in. */
DT_RANDOM_API int dt_dropout(dt_rng *g, const dt_spec *s, const mb_tensor *in, mb_tensor *out, float p, int flags);

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_RANDOM_H */

/* ---- 3. Implementation ----------------------------------------------------------- */
#if defined(DTENSOR_RANDOM_IMPLEMENTATION) && !defined(DTENSOR_RANDOM_IMPLEMENTED)
#define DTENSOR_RANDOM_IMPLEMENTED
#if !defined(DTENSOR_IMPLEMENTATION) && (defined(DTENSOR_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor_random.h: DTENSOR_RANDOM_IMPLEMENTATION needs DTENSOR_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DTENSOR_RANDOM_STATIC
#define DT_RANDOM__DEF static
#else
#define DT_RANDOM__DEF
#endif

DT_RANDOM__DEF void dt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
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

DT_RANDOM__DEF uint32_t dt_philox_draw(uint64_t seed, uint64_t pos)
{
    uint32_t w[4];
    dt__philox_block(seed, pos >> 2, w);
    return w[pos & 3u];
}

DT_RANDOM__DEF int dt_rng_offsets(const dt_spec *s, int rank, uint64_t *start, uint64_t *end_incr)
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

/* The draws of dt__random, one element at a time (mb_walk of out and in): element j of
   the walk (row-major, index idx in the local shape) draws at torch's stream position
   (DT_RNG_TORCH_STREAM) or its global element's. */
typedef struct dt__draw {
    const dt_rng *g;
    const int32_t *off;     /* the local tensor's global offset */
    const uint64_t *gstr;   /* row-major strides of the global tensor */
    uint64_t start, j, blk; /* torch's start offset, the element count, the block in w */
    uint32_t w[4];
    int ndim, flags, dropout;
    float keep, scale;
} dt__draw;

static int dt__draw_at(void *user, void *out, void *in, const int32_t *idx)
{
    dt__draw *r = (dt__draw *)user;
    uint64_t pos = r->g->offset;
    float u;
    int d;
    if (r->flags & DT_RNG_TORCH_STREAM)
        pos += r->start + r->j;
    else
        for (d = 0; d < r->ndim; d++) pos += (uint64_t)(r->off[d] + idx[d]) * r->gstr[d];
    r->j++;
    if (pos >> 2 != r->blk) { /* one Philox block serves 4 consecutive draws */
        r->blk = pos >> 2;
        dt__philox_block(r->g->seed, r->blk, r->w);
    }
    u = (float)(r->w[pos & 3u] & 0xffffffu) * (1.0f / 16777216.0f);
    *(float *)out = !r->dropout ? u : u < r->keep ? *(const float *)in * r->scale : 0.0f;
    return DT_OK;
}

/* dt_rand (in NULL) and dt_dropout: validate everything, then draw. */
static int dt__random(dt_rng *g, const dt_spec *s, const mb_tensor *in, mb_tensor *out, float p, int flags)
{
    int32_t shape[MB_MAX_DIMS], off[MB_MAX_DIMS];
    uint64_t gstr[MB_MAX_DIMS], end, pos;
    dt__draw r;
    int d, rc;
    if (!g || !s) return DT_ERR_NULL;
    rc = dt_spec_check(s);
    if (!rc) rc = dt_local_shape(s, s->mesh->rank, shape, off);
    if (!rc) rc = dt_rng_offsets(s, s->mesh->rank, &r.start, &end);
    if (!rc && s->dtype != MB_F32) rc = DT_ERR_DTYPE;
    if (!rc && (flags & ~DT_RNG_TORCH_STREAM)) rc = DT_ERR_VALUE;
    if (!rc && !(p >= 0.0f && p <= 1.0f)) rc = DT_ERR_VALUE;
    if (!rc) rc = dt__fits(out, MB_F32, s->ndim, shape);
    if (!rc && in) rc = dt__fits(in, MB_F32, s->ndim, shape);
    if (!rc && (mb_tensor_check(out) || (in && mb_tensor_check(in)))) rc = DT_ERR_SHAPE;
    if (rc) return rc;
    r.keep = 1.0f - p;
    r.scale = p < 1.0f ? 1.0f / r.keep : 0.0f;
    for (d = s->ndim - 1, pos = 1; d >= 0; d--) { /* row-major strides of the global tensor */
        gstr[d] = pos;
        pos *= (uint64_t)s->shape[d];
    }
    r.g = g;
    r.off = off;
    r.gstr = gstr;
    r.j = 0;
    r.blk = ~(uint64_t)0;
    r.ndim = s->ndim;
    r.flags = flags;
    r.dropout = in != NULL;
    mb_walk(out, in, dt__draw_at, &r); /* out and in checked above: it cannot fail */
    g->offset += end;
    return DT_OK;
}

DT_RANDOM__DEF int dt_rand(dt_rng *g, const dt_spec *s, mb_tensor *local, int flags)
{
    return dt__random(g, s, NULL, local, 0.0f, flags);
}

DT_RANDOM__DEF int dt_dropout(dt_rng *g, const dt_spec *s, const mb_tensor *in, mb_tensor *out, float p, int flags)
{
    if (!in) return DT_ERR_NULL;
    return dt__random(g, s, in, out, p, flags);
}

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_RANDOM_IMPLEMENTATION */
