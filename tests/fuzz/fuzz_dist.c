/* fuzz_dist.c — dtensor execution on 1-4 pg_pthread ranks from untrusted specs, meshes and
   layouts: dt_redistribute (dtensor.h), dt_full_tensor and dt_distribute, dt_tp_redistribute
   (dtensor_ops.h) and the sharded int8 mm dt_qmm (dtensor_quant.h).

   The input gives a world of P ranks and a mesh of 1-3 dims over all or some of them (any
   rank order; a rank outside it must get DT_ERR_NOT_MEMBER and change nothing), a global
   tensor (f32, f64 or i32, up to 3 dims of 0-6, values multiples of 12 so every sum, average
   and partition is exact), two placement lists (Replicate, Shard of any dim counted either
   way, Partial of any reduction; Partial pieces built so that reducing them in any order gives
   the global tensor), planner flags, and the memory order of every local tensor (strided
   views, each a heap block of exactly its bytes). Checked on every rank:
   - dt_redistribute returns what dt_plan_redistribute returned for the same specs (an error
     on every rank alike, nothing written); with one byte of scratch less than
     dt_redistribute_scratch_bytes it returns DT_ERR_TOO_SMALL and writes nothing; its input
     is never written;
   - the result equals the rank's piece of the global tensor (dt_local_view's offsets); a
     Partial result, reduced over its mesh dims, equals it;
   - dt_full_tensor gives the global tensor; dt_distribute from one rank (or every rank) gives
     each its piece (a non-root's global is filled with other values, so reading it shows);
   - dt_tp_redistribute to a placement on one mesh dim: a view of the input when nothing
     moves, else as dt_redistribute, with the scratch it needs;
   - dt_qmm: int8 a @ b with per-mesh-dim placements (the four strategies, or anything else:
     DT_ERR_NO_STRATEGY on every rank), 1 or N multipliers, transposed operands: every rank's
     output is its slice of an int64 loop requantized with dt_requant_i8; with one byte less
     of output or scratch DT_ERR_TOO_SMALL, nothing written. */
#define _POSIX_C_SOURCE       200809L
#define PG_PTHREAD_MAX_RANKS  4
#define PG_PTHREAD_SLOT_BYTES 128 /* collectives above it go in pieces */
#define PG_PTHREAD_SMALL      64  /* native collectives: both the staged and the direct path */
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#include "dtensor_ops.h"
#include "dtensor_quant.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "fuzz.h"

#define MAXP   4
#define ND     3 /* tensor dims at most */
#define SIDE   6 /* sizes 0..SIDE */
#define CANARY 0x3e

static int is_err(int rc)
{
    return rc < 0 && rc >= DT_ERR_BATCH;
}

/* ---- a tensor in a heap block of exactly its bytes, dims in any memory order ---- */
typedef struct blk {
    mb_tensor t;
    size_t bytes;
} blk;

static void blk_make(blk *b, mb_dtype dt, int nd, const int32_t *shape, uint32_t order)
{
    int o[ND] = {0, 1, 2}, i;
    size_t n = 1, st = 1;
    memset(b, 0, sizeof *b);
    for (i = nd - 1; i > 0; i--) {                              /* o: the memory order (o[0] outermost), from `order` */
        int j = i - (int)(order % (uint32_t)(i + 1)), x = o[i]; /* order 0: row-major */
        order /= (uint32_t)(i + 1);
        o[i] = o[j];
        o[j] = x;
    }
    for (i = 0; i < nd; i++) n *= (size_t)shape[i];
    b->bytes = n * mb_dtype_size(dt);
    b->t.data = fz_block(b->bytes, CANARY);
    b->t.dtype = dt;
    b->t.ndim = nd;
    for (i = nd - 1; i >= 0; i--) {
        b->t.shape[o[i]] = shape[o[i]];
        b->t.stride[o[i]] = (int32_t)st;
        st *= shape[o[i]] > 0 ? (size_t)shape[o[i]] : 1u;
    }
}

static void blk_free(blk *b)
{
    free(b->t.data);
    memset(b, 0, sizeof *b);
}

static int untouched(const blk *b)
{
    size_t i;
    for (i = 0; i < b->bytes; i++)
        if (((const unsigned char *)b->t.data)[i] != CANARY) return 0;
    return 1;
}

static void *at(const mb_tensor *t, const int32_t *idx)
{
    size_t off = 0;
    int d;
    for (d = 0; d < t->ndim; d++) off += (size_t)idx[d] * (size_t)t->stride[d];
    return (char *)t->data + off * mb_dtype_size(t->dtype);
}
static double get(const mb_tensor *t, const int32_t *idx)
{
    const void *p = at(t, idx);
    if (t->dtype == MB_F32) return *(const float *)p;
    if (t->dtype == MB_F64) return *(const double *)p;
    if (t->dtype == MB_I8) return *(const int8_t *)p;
    return *(const int32_t *)p;
}
static void put(const mb_tensor *t, const int32_t *idx, double v)
{
    void *p = at(t, idx);
    if (t->dtype == MB_F32)
        *(float *)p = (float)v;
    else if (t->dtype == MB_F64)
        *(double *)p = v;
    else if (t->dtype == MB_I8)
        *(int8_t *)p = (int8_t)v;
    else
        *(int32_t *)p = (int32_t)v;
}
/* The next index of shape (row-major); 0 when done. First call with idx all 0 after numel. */
static int step_idx(int32_t *idx, const int32_t *shape, int nd)
{
    int d;
    for (d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}
static int64_t count(const int32_t *shape, int nd)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < nd; d++) n *= shape[d];
    return n;
}

/* ---- the case ---- */
enum { M_REDIST, M_FULL, M_DIST, M_TP, M_QMM, M_COUNT };
typedef struct dcase {
    int mode, P, Q, flags, use_cache, src_rank, md;
    int mndim;
    int32_t mshape[DT_MAX_MESH_DIMS], mranks[MAXP];
    mb_dtype dt;
    int nd;
    int32_t shape[ND];
    dt_placement src[DT_MAX_MESH_DIMS], dst[DT_MAX_MESH_DIMS], tp;
    uint32_t order_in, order_out, noise;
    /* int8 mm */
    int32_t M, K, N;
    int nq, ta, tb;
    dt_qmul q[SIDE + 1];
} dcase;

typedef struct rankrun {
    dt_mesh mesh;
    dt_spec a, b, o; /* src / dst (redistribute), a / b / out (qmm) */
    blk in, in2, out, global;
    blk in_copy; /* the input's bytes before the call */
    size_t need, out_need;
    int plan_rc, rc, rc_small, rc_small2, comm_err;
    dt_tensor res; /* tp / qmm result */
    int member;
} rankrun;

static dcase C;
static rankrun R[MAXP];
static blk G;      /* the global tensor (contiguous) */
static blk QA, QB; /* int8 mm operands (global) */
static pg_pthread_world world;

static uint32_t hash(uint32_t x)
{
    x = (x ^ 61u) ^ (x >> 16);
    x *= 9u;
    x ^= x >> 4;
    x *= 0x27d4eb2du;
    return x ^ (x >> 15);
}

/* A Partial piece for mesh coordinate coord of global value g (element e): reducing the
   pieces over the Partial mesh dims, in any order, gives g. One Partial dim: noisy pieces;
   several: sum dims hold g at coordinate 0 (else 0), prod dims likewise (else 1), avg / max /
   min dims repeat the value. */
static double piece(const dt_placement *pl, const dt_mesh *m, const int32_t *coord, double g, uint32_t e)
{
    int d, np = 0, pd = -1;
    double noise = 12.0 * (double)(hash(C.noise ^ e) % 5u) + 12.0;
    for (d = 0; d < m->ndim; d++)
        if (pl[d].kind == DT_KIND_PARTIAL) np++, pd = d;
    if (np == 1) {
        int n = m->shape[pd], k = coord[pd];
        switch (pl[pd].arg) {
        case DT_SUM: return k == 0 ? g - (n - 1) * noise : noise;
        case DT_AVG: return k == 0 ? g + (n - 1) * noise : g - noise;
        case DT_MAX: return k == (int)(e % (uint32_t)n) ? g : g - noise;
        case DT_MIN: return k == (int)(e % (uint32_t)n) ? g : g + noise;
        default: return k == 0 ? g : 1.0; /* prod */
        }
    }
    for (d = 0; d < m->ndim; d++)
        if (pl[d].kind == DT_KIND_PARTIAL && pl[d].arg == DT_SUM && coord[d]) return 0.0;
    for (d = 0; d < m->ndim; d++)
        if (pl[d].kind == DT_KIND_PARTIAL && pl[d].arg == DT_PROD && coord[d]) return 1.0;
    return g;
}

/* This rank's local tensor of spec s in a block of layout `order`, its values from G (pieces
   where Partial). */
static void fill_local(blk *b, const dt_spec *s, uint32_t order)
{
    int32_t sh[ND], off[ND], idx[ND] = {0, 0, 0}, gi[ND];
    int d;
    FUZZ_REQUIRE(dt_local_shape(s, s->mesh->rank, sh, off) == DT_OK);
    blk_make(b, s->dtype, s->ndim, sh, order);
    if (!count(sh, s->ndim)) return;
    do {
        uint32_t e = 0;
        for (d = 0; d < s->ndim; d++) {
            gi[d] = idx[d] + off[d];
            e = e * 7u + (uint32_t)gi[d];
        }
        put(&b->t, idx, piece(s->placements, s->mesh, s->mesh->coord, get(&G.t, gi), e));
    } while (step_idx(idx, sh, s->ndim));
}

/* dt_mesh_init for world rank w (the mesh is the same on every rank). */
static int mesh_for(dt_mesh *m, int w)
{
    return dt_mesh_init(m, C.mndim, C.mshape, C.mranks, w);
}

static int read_placements(fz_in *in, dt_placement *p, int nd)
{
    int i;
    for (i = 0; i < C.mndim; i++) {
        uint32_t k = fz_u8(in) % 3u;
        p[i].kind = (int16_t)k;
        p[i].arg = (int16_t)(k == DT_KIND_SHARD     ? (nd ? (int)(fz_u8(in) % (uint32_t)(2 * nd)) - nd : 0)
                             : k == DT_KIND_PARTIAL ? (int)(fz_u8(in) % DT_RED_COUNT)
                                                    : 0);
    }
    return 0;
}

static int read_case(fz_in *in)
{
    int i, r;
    uint32_t left;
    memset(&C, 0, sizeof C);
    C.mode = (int)(fz_u8(in) % M_COUNT);
    C.P = 1 + (int)(fz_u8(in) % MAXP);
    C.Q = fz_u8(in) < 224 ? C.P : 1 + (int)(fz_u8(in) % (uint32_t)C.P);
    for (r = 0; r < C.P; r++) C.mranks[r] = r;
    for (r = C.P - 1; r > 0; r--) { /* the mesh's ranks: a permutation's first Q */
        int j = (int)(fz_u8(in) % (uint32_t)(r + 1));
        int32_t x = C.mranks[r];
        C.mranks[r] = C.mranks[j];
        C.mranks[j] = x;
    }
    C.mndim = 1 + (int)(fz_u8(in) % DT_MAX_MESH_DIMS);
    left = (uint32_t)C.Q;
    for (i = 0; i < C.mndim; i++) { /* a factorisation of Q */
        uint32_t f = 1u + fz_u8(in) % left;
        while (left % f) f--;
        C.mshape[i] = i == C.mndim - 1 ? (int32_t)left : (int32_t)f;
        left /= (uint32_t)C.mshape[i];
    }
    C.dt = (mb_dtype[]){MB_F32, MB_F64, MB_I32}[fz_u8(in) % 3u];
    C.nd = (int)(fz_u8(in) % (ND + 1));
    for (i = 0; i < C.nd; i++) C.shape[i] = (int32_t)(fz_u8(in) % (SIDE + 1));
    read_placements(in, C.src, C.nd);
    read_placements(in, C.dst, C.nd);
    C.flags = (int)(fz_u8(in) % 3u) & DT_PLAN_ALLOW_PARTIAL;
    C.use_cache = (int)(fz_u8(in) & 1u);
    C.order_in = fz_u8(in);
    C.order_out = fz_u8(in);
    C.noise = fz_u32(in);
    C.src_rank = fz_u8(in) < 64 ? DT_EVERY_RANK : C.mranks[fz_u8(in) % (uint32_t)C.Q];
    C.md = (int)(fz_u8(in) % (uint32_t)C.mndim);
    C.tp = C.dst[0];
    if (C.mode == M_QMM) {
        C.M = (int32_t)(fz_u8(in) % (SIDE + 1));
        C.K = (int32_t)(fz_u8(in) % (SIDE + 1));
        C.N = (int32_t)(fz_u8(in) % (SIDE + 1));
        C.nq = fz_u8(in) & 1u ? 1 : C.N;
        C.ta = (int)(fz_u8(in) & 1u);
        C.tb = (int)(fz_u8(in) & 1u);
        for (i = 0; i < C.mndim; i++) { /* the four strategies, or any pair */
            static const dt_placement pa[4] = {{1, 0}, {0, 0}, {1, 1}, {0, 0}},
                                      pb[4] = {{0, 0}, {1, 1}, {1, 0}, {0, 0}};
            int s = (int)(fz_u8(in) % 8u);
            if (s < 4) {
                C.src[i] = pa[s];
                C.dst[i] = pb[s];
            } else {
                C.src[i].kind = (int16_t)(fz_u8(in) % 3u);
                C.src[i].arg = (int16_t)(fz_u8(in) % 2u);
                C.dst[i].kind = (int16_t)(fz_u8(in) % 3u);
                C.dst[i].arg = (int16_t)(fz_u8(in) % 2u);
            }
        }
        for (i = 0; i <= SIDE; i++) {
            double real = (double)(1u + fz_u16(in)) / 65536.0 / (double)(1u + fz_u8(in) % 64u);
            FUZZ_REQUIRE(dt_quantize_multiplier(real, &C.q[i]) == DT_OK);
        }
    }
    return 0;
}

/* ---- each rank ---- */
static int rank_fn(pg_group *g, void *arg)
{
    int w = pg_rank(g);
    rankrun *x = &R[w];
    dt_comm c;
    static dt_cache_entry entries[MAXP][3];
    dt_plan_cache cache;
    void *scratch = 0;
    int rc;
    (void)arg;
    pg_set_timeout(g, 5000);
    rc = dt_comm_init(&c, &x->mesh, g);
    FUZZ_REQUIRE(rc == (x->member ? DT_OK : DT_ERR_NOT_MEMBER));
    FUZZ_REQUIRE(dt_plan_cache_init(&cache, entries[w], 3) == DT_OK);
    if (x->need) { /* one byte short: refused before any message */
        scratch = malloc(x->need);
        FUZZ_REQUIRE(scratch);
    }
    switch (C.mode) {
    case M_REDIST:
    case M_FULL:
        if (x->need) {
            x->rc_small = C.mode == M_FULL ? dt_full_tensor(&c, 0, &x->a, &x->in.t, &x->out.t, scratch, x->need - 1)
                                           : dt_redistribute(&c, 0, &x->a, &x->in.t, &x->b, C.flags, &x->out.t, scratch,
                                                             x->need - 1);
            FUZZ_REQUIRE(untouched(&x->out));
        }
        if (C.mode == M_FULL)
            x->rc = dt_full_tensor(&c, C.use_cache ? &cache : 0, &x->a, &x->in.t, &x->out.t, scratch, x->need);
        else
            x->rc = dt_redistribute(&c, C.use_cache ? &cache : 0, &x->a, &x->in.t, &x->b, C.flags, &x->out.t, scratch,
                                    x->need);
        break;
    case M_DIST:
        if (x->need) {
            x->rc_small = dt_distribute(&c, &x->b, &x->in.t, C.src_rank, &x->out.t, scratch, x->need - 1);
            FUZZ_REQUIRE(untouched(&x->out));
        }
        x->rc = dt_distribute(&c, &x->b, &x->in.t, C.src_rank, &x->out.t, scratch, x->need);
        x->comm_err = c.err;
        break;
    case M_TP: {
        dt_dispatch d;
        dt_tensor t;
        memset(&d, 0, sizeof d);
        d.comm = &c;
        d.plans = C.use_cache ? &cache : 0;
        d.scratch = scratch;
        d.scratch_bytes = x->need;
        t.spec = x->a;
        t.local = x->in.t;
        if (x->out_need) {
            x->rc_small = dt_tp_redistribute(&d, &t, C.md, C.tp, &x->res, x->out.t.data, x->out_need - 1);
            FUZZ_REQUIRE(untouched(&x->out));
        }
        memset(&x->res, 0x5d, sizeof x->res);
        x->rc = dt_tp_redistribute(&d, &t, C.md, C.tp, &x->res, x->out.t.data, x->out.bytes);
        break;
    }
    default: { /* int8 mm */
        dt_tensor a, b;
        a.spec = x->a;
        a.local = x->in.t;
        b.spec = x->b;
        b.local = x->in2.t;
        memset(&x->res, 0x5d, sizeof x->res);
        if (x->out_need) {
            x->rc_small = dt_qmm(&c, &a, &b, C.q, C.nq, &x->res, x->out.t.data, x->out_need - 1, scratch, x->need);
            FUZZ_REQUIRE(untouched(&x->out));
        }
        if (x->need) {
            x->rc_small2 = dt_qmm(&c, &a, &b, C.q, C.nq, &x->res, x->out.t.data, x->out.bytes, scratch, x->need - 1);
            FUZZ_REQUIRE(untouched(&x->out));
        }
        x->rc = dt_qmm(&c, &a, &b, C.q, C.nq, &x->res, x->out.t.data, x->out.bytes, scratch, x->need);
    }
    }
    free(scratch);
    return 0;
}

/* rank r's result (contiguous or not) against the global g under spec s: its piece, or for
   Partial placements, reduced over those mesh dims in order (every rank's result). */
static void check_result(const blk *g, int (*res)(int r, mb_tensor *t))
{
    int r, d, k;
    int32_t sh[ND], off[ND], idx[ND], gi[ND];
    for (r = 0; r < C.P; r++) {
        mb_tensor t;
        const dt_spec *s = &R[r].o;
        if (!R[r].member) continue;
        FUZZ_REQUIRE(res(r, &t) == 0);
        FUZZ_REQUIRE(dt_local_shape(s, s->mesh->rank, sh, off) == DT_OK);
        for (d = 0; d < s->ndim; d++) FUZZ_REQUIRE(t.shape[d] == sh[d]);
        if (!count(sh, s->ndim)) continue;
        memset(idx, 0, sizeof idx);
        do {
            double want, got = get(&t, idx);
            for (d = 0; d < s->ndim; d++) gi[d] = idx[d] + off[d];
            want = get(&g->t, gi);
            /* Partial: the reduction over each Partial mesh dim's group (in mesh dim order) */
            for (d = 0, k = 0; d < s->mesh->ndim; d++) k |= s->placements[d].kind == DT_KIND_PARTIAL;
            if (k) {
                int q;
                double acc[MAXP];
                for (q = 0; q < C.P; q++) { /* start: every member's value at this index */
                    mb_tensor u;
                    int j;
                    acc[q] = 0;
                    if (!R[q].member) continue;
                    FUZZ_REQUIRE(res(q, &u) == 0);
                    /* a rank with a smaller shard holds no piece of this element */
                    for (j = 0; j < s->ndim && idx[j] < u.shape[j]; j++) {}
                    if (j == s->ndim) acc[q] = get(&u, idx);
                }
                for (d = 0; d < s->mesh->ndim; d++) {
                    double nacc[MAXP];
                    const dt_placement *p = &s->placements[d];
                    if (p->kind != DT_KIND_PARTIAL) continue;
                    for (q = 0; q < C.P; q++) {
                        int32_t grp[MAXP];
                        int n, j;
                        double v;
                        if (!R[q].member) continue;
                        n = dt_mesh_group(s->mesh, R[q].mesh.rank, d, grp, MAXP);
                        FUZZ_REQUIRE(n >= 1);
                        v = p->arg == DT_PROD ? 1.0 : p->arg == DT_MAX ? -1e300 : p->arg == DT_MIN ? 1e300 : 0.0;
                        for (j = 0; j < n; j++) {
                            double y = acc[grp[j]];
                            v = p->arg == DT_PROD  ? v * y
                                : p->arg == DT_MAX ? (y > v ? y : v)
                                : p->arg == DT_MIN ? (y < v ? y : v)
                                                   : v + y;
                        }
                        nacc[q] = p->arg == DT_AVG ? v / n : v;
                    }
                    for (q = 0; q < C.P; q++) acc[q] = R[q].member ? nacc[q] : 0;
                }
                got = acc[r];
            }
            if (got != want) {
                fprintf(stderr, "rank %d index (%d,%d,%d): %g, want %g\n", r, idx[0], idx[1], idx[2], got, want);
                FUZZ_REQUIRE(0);
            }
        } while (step_idx(idx, sh, s->ndim));
    }
}
static int res_out(int r, mb_tensor *t)
{
    *t = R[r].out.t;
    return 0;
}
static int res_dt(int r, mb_tensor *t)
{
    *t = R[r].res.local;
    return 0;
}

/* ---- redistribute, full_tensor, distribute, tp ---- */
static void run_move(void)
{
    int r, i;
    dt_plan plan;
    for (r = 0; r < C.P; r++) {
        rankrun *x = &R[r];
        dt_placement p[DT_MAX_MESH_DIMS];
        FUZZ_REQUIRE(mesh_for(&x->mesh, r) == DT_OK);
        x->member = x->mesh.index >= 0;
        if (dt_spec_init(&x->a, &x->mesh, C.src, C.mndim, C.dt, C.nd, C.shape, NULL) ||
            dt_spec_init(&x->b, &x->mesh, C.dst, C.mndim, C.dt, C.nd, C.shape, NULL))
            return; /* specs dt_spec_init refuses: fuzz_dtensor's */
        if (C.mode == M_DIST) x->a = x->b;
        x->o = x->b;
        if (C.mode == M_FULL) { /* every placement Replicate */
            for (i = 0; i < C.mndim; i++) p[i] = (dt_placement)DT_REPLICATE();
            FUZZ_REQUIRE(dt_spec_init(&x->o, &x->mesh, p, C.mndim, C.dt, C.nd, C.shape, NULL) == DT_OK);
        }
        if (C.mode == M_TP) { /* the placement on mesh dim md, Shard(-1) resolved */
            x->o = x->a;
            p[0] = C.tp;
            if (p[0].kind == DT_KIND_SHARD && p[0].arg < 0) p[0].arg = (int16_t)(p[0].arg + C.nd);
            x->o.placements[C.md] = p[0];
        }
    }
    for (r = 0; r < C.P; r++) {
        rankrun *x = &R[r];
        int32_t sh[ND];
        if (!x->member) { /* a rank outside the mesh: tensors of size 0 */
            for (i = 0; i < C.nd; i++) sh[i] = 0;
            blk_make(&x->in, C.dt, C.nd, sh, 0);
            blk_make(&x->out, C.dt, C.nd, sh, 0);
            x->plan_rc = DT_ERR_NOT_MEMBER;
            /* dt_tp_redistribute checks the target before membership */
            if (C.mode == M_TP) {
                int rc = C.tp.kind == DT_KIND_PARTIAL ? DT_ERR_PARTIAL : dt_spec_check(&x->o);
                if (rc) x->plan_rc = rc;
            }
            continue;
        }
        if (C.mode == M_DIST) {                       /* the global tensor on the source, other values elsewhere */
            blk_make(&x->in, C.dt, C.nd, C.shape, 0); /* contiguous: dt_distribute_scratch_bytes assumes it */
            if (C.src_rank == DT_EVERY_RANK || C.src_rank == x->mesh.rank) {
                int32_t idx[ND] = {0, 0, 0};
                if (count(C.shape, C.nd)) do
                        put(&x->in.t, idx, get(&G.t, idx));
                    while (step_idx(idx, C.shape, C.nd));
            }
        } else {
            fill_local(&x->in, &x->a, C.mode == M_FULL ? 0 : C.order_in);
        }
        x->plan_rc =
            C.mode == M_DIST ? DT_OK : dt_plan_redistribute(&x->a, &x->o, C.mode == M_REDIST ? C.flags : 0, &plan);
        /* dt_tp_redistribute refuses a Partial target before it plans */
        if (C.mode == M_TP && C.tp.kind == DT_KIND_PARTIAL) x->plan_rc = DT_ERR_PARTIAL;
        if (C.mode == M_TP) FUZZ_REQUIRE(dt_spec_check(&x->o) == DT_OK || x->plan_rc);
        /* (tp sizes its output by the target before it plans) */
        if ((x->plan_rc == DT_OK && C.mode != M_DIST) || (C.mode == M_TP && dt_spec_check(&x->o) == DT_OK))
            FUZZ_REQUIRE(dt_local_shape(&x->o, r, sh, 0) == DT_OK);
        else
            FUZZ_REQUIRE(dt_local_shape(&x->b, r, sh, 0) == DT_OK);
        blk_make(&x->out, C.dt, C.nd, C.mode == M_FULL ? C.shape : sh,
                 C.mode == M_REDIST ? C.order_out : 0); /* contiguous: the scratch queries assume it */
        if (C.mode == M_TP) x->out_need = x->out.bytes;
        if (x->plan_rc) continue;
        if (C.mode == M_DIST) {
            /* its refusals (a Partial target) are dt_distribute's */
            x->plan_rc = dt_distribute_scratch_bytes(&x->b, C.src_rank, &x->need);
            if (x->plan_rc) x->need = 0;
        } else if (C.mode == M_FULL) {
            FUZZ_REQUIRE(dt_full_tensor_scratch_bytes(&x->a, &x->need) == DT_OK);
        } else {
            x->need = dt_redistribute_scratch_bytes(&plan, &x->in.t, &x->out.t);
        }
    }
    for (r = 0; r < C.P; r++) {
        blk_make(&R[r].in_copy, MB_U8, 1, (int32_t[]){(int32_t)R[r].in.bytes}, 0);
        memcpy(R[r].in_copy.t.data, R[r].in.t.data, R[r].in.bytes);
    }
    FUZZ_REQUIRE(pg_pthread_run(&world, C.P, rank_fn, NULL) == 0);
    if (getenv("FUZZ_DIST_DEBUG"))
        for (r = 0; r < C.P; r++)
            fprintf(stderr, "rank %d: %d (port %d), need %zu, in strides %d %d %d\n", r, R[r].rc, R[r].comm_err,
                    R[r].need, R[r].in.t.stride[0], R[r].in.t.stride[1], R[r].in.t.stride[2]);
    for (r = 0; r < C.P; r++) { /* the verdicts: the plan's, on every rank */
        rankrun *x = &R[r];
        FUZZ_REQUIRE(is_err(x->rc) || x->rc == 0);
        FUZZ_REQUIRE(!memcmp(x->in_copy.t.data, x->in.t.data, x->in.bytes)); /* input never written */
        /* the call short of a byte: of scratch, or (tp, when it moves anything) of output */
        if ((C.mode != M_TP ? x->need
                            : x->out_need && memcmp(x->o.placements, x->a.placements, sizeof x->o.placements)) &&
            x->member && !x->plan_rc && x->rc_small != DT_ERR_TOO_SMALL) {
            fprintf(stderr, "rank %d: %d (%s) with scratch or output one byte short\n", r, x->rc_small,
                    dt_strerror(x->rc_small));
            FUZZ_REQUIRE(0);
        }
        if (x->plan_rc || !x->member) {
            if (x->rc != x->plan_rc) {
                fprintf(stderr, "mode %d rank %d: %d (%s), the plan said %d\n", C.mode, r, x->rc, dt_strerror(x->rc),
                        x->plan_rc);
                FUZZ_REQUIRE(0);
            }
            FUZZ_REQUIRE(untouched(&x->out));
            continue;
        }
        if (x->rc) {
            fprintf(stderr, "rank %d: %d (%s, port %d) for a plan that succeeded\n", r, x->rc, dt_strerror(x->rc),
                    x->comm_err);
            FUZZ_REQUIRE(0);
        }
    }
    for (r = 0; r < C.P; r++)
        if (R[r].member && R[r].plan_rc) return; /* (the same on every member) */
    if (C.mode == M_TP) {
        for (r = 0; r < C.P; r++) { /* nothing moves: a view of the input */
            rankrun *x = &R[r];
            if (!x->member) continue;
            if (!memcmp(x->o.placements, x->a.placements, sizeof x->o.placements))
                FUZZ_REQUIRE(x->res.local.data == x->in.t.data);
            else
                FUZZ_REQUIRE(x->res.local.data == x->out.t.data);
            FUZZ_REQUIRE(!memcmp(x->res.spec.placements, x->o.placements, sizeof x->o.placements));
        }
        check_result(&G, res_dt);
        return;
    }
    check_result(&G, res_out);
}

/* ---- int8 mm ---- */
static void run_qmm(void)
{
    int r, i, j, k, sw = 0;
    int32_t as[2], bs[2], osh[2];
    blk Y;
    as[0] = C.M, as[1] = C.K, bs[0] = C.K, bs[1] = C.N;
    blk_make(&QA, MB_I8, 2, as, C.ta);
    blk_make(&QB, MB_I8, 2, bs, C.tb);
    for (i = 0; i < C.M * C.K; i++) ((int8_t *)QA.t.data)[i] = (int8_t)hash(C.noise + (uint32_t)i);
    for (i = 0; i < C.K * C.N; i++) ((int8_t *)QB.t.data)[i] = (int8_t)hash(C.noise * 3u + (uint32_t)i);
    osh[0] = C.M, osh[1] = C.N;
    blk_make(&Y, MB_I8, 2, osh, 0);
    for (i = 0; i < C.M; i++)
        for (j = 0; j < C.N; j++) { /* the reference: int64 sums requantized */
            int64_t s = 0;
            int32_t ia[2], ib[2], io[2];
            for (k = 0; k < C.K; k++) {
                ia[0] = i, ia[1] = k, ib[0] = k, ib[1] = j;
                s += (int64_t)get(&QA.t, ia) * (int64_t)get(&QB.t, ib);
            }
            io[0] = i, io[1] = j;
            put(&Y.t, io, dt_requant_i8((int32_t)s, C.q[C.nq == 1 ? 0 : j]));
        }
    for (r = 0; r < C.P; r++) {
        rankrun *x = &R[r];
        int32_t sh[2];
        int rc;
        FUZZ_REQUIRE(mesh_for(&x->mesh, r) == DT_OK);
        x->member = x->mesh.index >= 0;
        if (dt_spec_init(&x->a, &x->mesh, C.src, C.mndim, MB_I8, 2, as, NULL) ||
            dt_spec_init(&x->b, &x->mesh, C.dst, C.mndim, MB_I8, 2, bs, NULL))
            goto out; /* a placement dt_spec_init refuses */
        if (x->member) {
            FUZZ_REQUIRE(dt_local_view(&x->a, r, &QA.t, &x->in.t) == DT_OK);
            FUZZ_REQUIRE(dt_local_view(&x->b, r, &QB.t, &x->in2.t) == DT_OK);
        } else { /* an empty view of the operands (the call refuses before reading) */
            x->in.t = QA.t;
            x->in2.t = QB.t;
        }
        rc = dt_qmm_propagate(&x->a, &x->b, &x->o, NULL);
        if (!rc && !x->member) rc = DT_ERR_NOT_MEMBER; /* dt_qmm checks its comm before the multipliers */
        if (!rc && C.nq < 1) rc = DT_ERR_SHAPE;        /* N = 0 columns: 0 multipliers are refused */
        x->plan_rc = rc;
        sh[0] = sh[1] = 0;
        if (!x->plan_rc) {
            FUZZ_REQUIRE(dt_local_shape(&x->o, r, sh, 0) == DT_OK);
            FUZZ_REQUIRE(dt_qmm_scratch_bytes(&x->a, &x->b, r, &x->need) == DT_OK);
            FUZZ_REQUIRE(x->need == 4u * (size_t)sh[0] * (size_t)sh[1]);
        }
        blk_make(&x->out, MB_I8, 2, sh, 0);
        x->out_need = x->out.bytes;
    }
    FUZZ_REQUIRE(pg_pthread_run(&world, C.P, rank_fn, NULL) == 0);
    for (r = 0; r < C.P; r++) {
        rankrun *x = &R[r];
        FUZZ_REQUIRE(is_err(x->rc) || x->rc == 0);
        if (x->out_need) FUZZ_REQUIRE(x->rc_small == DT_ERR_TOO_SMALL);
        if (x->need) FUZZ_REQUIRE(x->rc_small2 == DT_ERR_TOO_SMALL);
        if (x->plan_rc) {
            if (x->rc != x->plan_rc) {
                fprintf(stderr, "rank %d: dt_qmm %d (%s), dt_qmm_propagate %d\n", r, x->rc, dt_strerror(x->rc),
                        x->plan_rc);
                FUZZ_REQUIRE(0);
            }
            FUZZ_REQUIRE(untouched(&x->out));
            sw = 1;
            continue;
        }
        if (x->rc) {
            fprintf(stderr, "rank %d: dt_qmm %d (%s) where dt_qmm_propagate succeeded (nq %d, M %d K %d N %d)\n", r,
                    x->rc, dt_strerror(x->rc), C.nq, C.M, C.K, C.N);
            FUZZ_REQUIRE(0);
        }
    }
    if (!sw) check_result(&Y, res_dt);
out:
    blk_free(&Y);
    blk_free(&QA);
    blk_free(&QB);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    int r;
    int32_t idx[ND] = {0, 0, 0};
    read_case(&in);
    if (getenv("FUZZ_DIST_DEBUG")) { /* what a failing input ran */
        fprintf(stderr, "mode %d P %d Q %d mesh", C.mode, C.P, C.Q);
        for (r = 0; r < C.mndim; r++) fprintf(stderr, " %d", C.mshape[r]);
        fprintf(stderr, " ranks");
        for (r = 0; r < C.Q; r++) fprintf(stderr, " %d", C.mranks[r]);
        fprintf(stderr, " dtype %d shape", (int)C.dt);
        for (r = 0; r < C.nd; r++) fprintf(stderr, " %d", C.shape[r]);
        for (r = 0; r < C.mndim; r++)
            fprintf(stderr, " [%d,%d -> %d,%d]", C.src[r].kind, C.src[r].arg, C.dst[r].kind, C.dst[r].arg);
        fprintf(stderr, " flags %d src %d md %d cache %d\n", C.flags, C.src_rank, C.md, C.use_cache);
    }
    memset(R, 0, sizeof R);
    if (C.mode == M_QMM) {
        run_qmm();
    } else {
        blk_make(&G, C.dt, C.nd, C.shape, 0);
        if (count(C.shape, C.nd)) do
                put(&G.t, idx,
                    12.0 * (double)((int)(hash(C.noise ^ (uint32_t)(idx[0] * 64 + idx[1] * 8 + idx[2])) % 17u) - 8));
            while (step_idx(idx, C.shape, C.nd));
        run_move();
        blk_free(&G);
    }
    for (r = 0; r < MAXP; r++) {
        if (C.mode != M_QMM) blk_free(&R[r].in);
        blk_free(&R[r].out);
        blk_free(&R[r].in_copy);
    }
    return 0;
}
