/* test_dtensor_plan.c — dtensor.h without communication: meshes, specs, torch.chunk
   shard sizes, local shapes/offsets and views, the redistribute planner (order, ops,
   collective counts, cost, scratch), the plan cache and bad inputs. No stdio, no heap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"

static const dt_placement R = DT_REPLICATE(), S0 = DT_SHARD(0), S1 = DT_SHARD(1), S2 = DT_SHARD(2);
static const dt_placement PSUM = DT_PARTIAL(DT_SUM), PAVG = DT_PARTIAL(DT_AVG), PMAX = DT_PARTIAL(DT_MAX),
                          PMIN = DT_PARTIAL(DT_MIN), PPROD = DT_PARTIAL(DT_PROD);

#define SENTINEL 0x5A5A5A5A

static void mesh_or_die(dt_mesh *m, int ndim, int32_t a, int32_t b, int32_t c, int rank)
{
    int32_t shape[3];
    shape[0] = a;
    shape[1] = b;
    shape[2] = c;
    assert_int_equal(dt_mesh_init(m, ndim, shape, NULL, rank), DT_OK);
}

/* spec on mesh m with placements p0[,p1[,p2]] and a 2-D (or 3-D when d2 > 0) shape */
static void spec_or_die(dt_spec *s, const dt_mesh *m, dt_placement p0, dt_placement p1, dt_placement p2, int32_t d0,
                        int32_t d1, int32_t d2)
{
    dt_placement p[3];
    int32_t shape[3];
    p[0] = p0;
    p[1] = p1;
    p[2] = p2;
    shape[0] = d0;
    shape[1] = d1;
    shape[2] = d2;
    assert_int_equal(dt_spec_init(s, m, p, m->ndim, MB_F32, d2 > 0 ? 3 : 2, shape, NULL), DT_OK);
}

/* ---- torch.chunk reference: chunks of ceil(n/k) taken in order, missing ones empty ---- */
static void ref_chunk(int32_t n, int32_t k, int32_t *size, int32_t *off)
{
    int32_t each = (n + k - 1) / k, pos = 0, i;
    for (i = 0; i < k; i++) {
        int32_t len = n - pos < each ? n - pos : each;
        off[i] = pos;
        size[i] = len;
        pos += len;
    }
}

static void test_chunk_examples(void **state)
{
    static const int32_t cases[4][2] = {{5, 4}, {6, 4}, {10, 4}, {2, 4}};
    static const int32_t want[4][4][2] = {{{2, 0}, {2, 2}, {1, 4}, {0, 5}},
                                          {{2, 0}, {2, 2}, {2, 4}, {0, 6}},
                                          {{3, 0}, {3, 3}, {3, 6}, {1, 9}},
                                          {{1, 0}, {1, 1}, {0, 2}, {0, 2}}};
    int c, i;
    (void)state;
    for (c = 0; c < 4; c++)
        for (i = 0; i < 4; i++) {
            int32_t off = -1;
            assert_int_equal(dt_chunk(cases[c][0], cases[c][1], i, &off), want[c][i][0]);
            assert_int_equal(off, want[c][i][1]);
        }
}

static void test_chunk_property(void **state)
{
    int32_t n, k, i, size[16], off[16];
    (void)state;
    for (n = 0; n <= 64; n++)
        for (k = 1; k <= 16; k++) {
            int32_t total = 0;
            ref_chunk(n, k, size, off);
            for (i = 0; i < k; i++) {
                int32_t o = -1;
                assert_int_equal(dt_chunk(n, k, i, &o), size[i]);
                assert_int_equal(o, off[i]);
                total += size[i];
            }
            assert_int_equal(total, n);
        }
    /* large sizes do not overflow */
    {
        int32_t o;
        assert_int_equal(dt_chunk(INT32_MAX, 64, 63, &o), INT32_MAX - 63 * (int32_t)(((int64_t)INT32_MAX + 63) / 64));
        assert_int_equal(dt_chunk(INT32_MAX, 3, 2, &o), INT32_MAX - 2 * 715827883);
        assert_int_equal(o, 2 * 715827883);
    }
    assert_int_equal(dt_chunk(5, 0, 0, NULL), DT_ERR_MESH);
    assert_int_equal(dt_chunk(-1, 4, 0, NULL), DT_ERR_SHAPE);
    assert_int_equal(dt_chunk(5, 4, 4, NULL), DT_ERR_RANK);
}

static void test_mesh(void **state)
{
    dt_mesh m;
    int32_t shape[3] = {2, 3, 2}, coord[3], group[8], sub[4] = {4, 5, 6, 7};
    int r;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 3, shape, NULL, 7), DT_OK);
    assert_int_equal(m.size, 12);
    assert_int_equal(m.index, 7);
    assert_int_equal(m.coord[0], 1); /* 7 = 1*6 + 0*2 + 1 */
    assert_int_equal(m.coord[1], 0);
    assert_int_equal(m.coord[2], 1);
    for (r = 0; r < 12; r++) {
        assert_int_equal(dt_mesh_coord(&m, r, coord), DT_OK);
        assert_int_equal(coord[0] * 6 + coord[1] * 2 + coord[2], r); /* row-major */
    }
    assert_int_equal(dt_mesh_group(&m, 7, 0, group, 8), 2);
    assert_int_equal(group[0], 1);
    assert_int_equal(group[1], 7);
    assert_int_equal(dt_mesh_group(&m, 7, 1, group, 8), 3);
    assert_int_equal(group[0], 7);
    assert_int_equal(group[1], 9);
    assert_int_equal(group[2], 11);
    assert_int_equal(dt_mesh_group(&m, 7, 2, group, 8), 2);
    assert_int_equal(group[0], 6);
    assert_int_equal(group[1], 7);
    assert_int_equal(dt_mesh_dim_size(&m, 1), 3);
    assert_int_equal(dt_mesh_dim_size(&m, 3), DT_ERR_MESH_DIM);

    /* sub-mesh: ranks 4..7 as 2x2; rank 2 is no member */
    shape[0] = 2;
    shape[1] = 2;
    assert_int_equal(dt_mesh_init(&m, 2, shape, sub, 2), DT_OK);
    assert_int_equal(m.index, -1);
    assert_int_equal(m.coord[0], -1);
    coord[0] = coord[1] = SENTINEL;
    assert_int_equal(dt_mesh_coord(&m, 2, coord), DT_ERR_NOT_MEMBER);
    assert_int_equal(coord[0], SENTINEL);
    assert_int_equal(dt_mesh_coord(&m, 6, coord), DT_OK);
    assert_int_equal(coord[0], 1);
    assert_int_equal(coord[1], 0);
    assert_int_equal(dt_mesh_group(&m, 6, 1, group, 8), 2);
    assert_int_equal(group[0], 6);
    assert_int_equal(group[1], 7);
    assert_int_equal(dt_mesh_group(&m, 5, 0, group, 8), 2);
    assert_int_equal(group[0], 5);
    assert_int_equal(group[1], 7);
}

static void test_mesh_bad(void **state)
{
    dt_mesh m, keep;
    int32_t shape[4] = {2, 2, 2, 2}, dup[4] = {0, 1, 1, 2}, neg[4] = {0, -1, 2, 3}, group[4];
    (void)state;
    memset(&m, 0x5A, sizeof m);
    keep = m;
    assert_int_equal(dt_mesh_init(&m, 0, shape, NULL, 0), DT_ERR_MESH);
    assert_int_equal(dt_mesh_init(&m, 4, shape, NULL, 0), DT_ERR_MESH);
    shape[1] = 0;
    assert_int_equal(dt_mesh_init(&m, 2, shape, NULL, 0), DT_ERR_MESH);
    shape[1] = 2;
    assert_int_equal(dt_mesh_init(&m, 2, shape, dup, 0), DT_ERR_RANK);
    assert_int_equal(dt_mesh_init(&m, 2, shape, neg, 0), DT_ERR_RANK);
    assert_int_equal(dt_mesh_init(&m, 2, shape, NULL, -1), DT_ERR_RANK);
    shape[0] = DT_MAX_RANKS;
    assert_int_equal(dt_mesh_init(&m, 2, shape, NULL, 0), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_mesh_init(&m, 2, NULL, NULL, 0), DT_ERR_NULL);
    assert_memory_equal(&m, &keep, sizeof m);

    shape[0] = 2;
    assert_int_equal(dt_mesh_init(&m, 2, shape, NULL, 0), DT_OK);
    group[0] = group[1] = SENTINEL;
    assert_int_equal(dt_mesh_group(&m, 0, 1, group, 1), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_mesh_group(&m, 9, 1, group, 4), DT_ERR_NOT_MEMBER);
    assert_int_equal(dt_mesh_group(&m, 0, 2, group, 4), DT_ERR_MESH_DIM);
    assert_int_equal(group[0], SENTINEL);
    assert_int_equal(group[1], SENTINEL);
}

static void test_spec(void **state)
{
    dt_mesh m;
    dt_spec s, keep;
    dt_placement p[3] = {DT_SHARD(-1), DT_PARTIAL(DT_MAX), DT_REPLICATE()};
    int32_t shape[3] = {4, 6, 8};
    (void)state;
    mesh_or_die(&m, 2, 2, 2, 0, 0);
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, 3, shape, NULL), DT_OK);
    assert_int_equal(s.placements[0].arg, 2); /* Shard(-1) normalised */
    assert_int_equal(s.stride[0], 48);
    assert_int_equal(s.stride[2], 1);
    assert_int_equal(dt_spec_num_shards(&s), 2);
    assert_int_equal(dt_spec_is_replicated(&s), 0);

    memset(&s, 0x5A, sizeof s);
    keep = s;
    assert_int_equal(dt_spec_init(&s, &m, p, 3, MB_F32, 3, shape, NULL), DT_ERR_PLACEMENT_COUNT);
    assert_int_equal(dt_spec_init(&s, &m, p, 1, MB_F32, 3, shape, NULL), DT_ERR_PLACEMENT_COUNT);
    p[0].arg = 3;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, 3, shape, NULL), DT_ERR_DIM);
    p[0].arg = -4;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, 3, shape, NULL), DT_ERR_DIM);
    p[0] = S0;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, 0, shape, NULL), DT_ERR_DIM); /* scalar */
    p[1].arg = DT_RED_COUNT;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, 3, shape, NULL), DT_ERR_PLACEMENT);
    p[1].kind = 7;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, 3, shape, NULL), DT_ERR_PLACEMENT);
    p[1] = R;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_DTYPE_COUNT, 3, shape, NULL), DT_ERR_DTYPE);
    shape[1] = -1;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, 3, shape, NULL), DT_ERR_SHAPE);
    shape[1] = 6;
    assert_int_equal(dt_spec_init(&s, &m, p, 2, MB_F32, MB_MAX_DIMS + 1, shape, NULL), DT_ERR_SHAPE);
    assert_int_equal(dt_spec_init(&s, NULL, p, 2, MB_F32, 3, shape, NULL), DT_ERR_NULL);
    assert_memory_equal(&s, &keep, sizeof s);
}

/* local shape + offset of every rank, checked against want[rank] = {shape..., offset...} */
static void check_locals(const dt_spec *s, const int32_t (*want)[2][3])
{
    int r;
    for (r = 0; r < s->mesh->size; r++) {
        int32_t shape[MB_MAX_DIMS], off[MB_MAX_DIMS];
        int d;
        assert_int_equal(dt_local_shape(s, r, shape, off), DT_OK);
        for (d = 0; d < s->ndim; d++) {
            assert_int_equal(shape[d], want[r][0][d]);
            assert_int_equal(off[d], want[r][1][d]);
        }
    }
}

static void test_local_1d(void **state)
{
    dt_mesh m;
    dt_spec s;
    static const int32_t w13[4][2][3] = {{{4, 3}, {0, 0}}, {{4, 3}, {4, 0}}, {{4, 3}, {8, 0}}, {{1, 3}, {12, 0}}};
    static const int32_t w2[4][2][3] = {{{1, 3}, {0, 0}}, {{1, 3}, {1, 0}}, {{0, 3}, {2, 0}}, {{0, 3}, {2, 0}}};
    static const int32_t wr[4][2][3] = {{{2, 3}, {0, 0}}, {{2, 3}, {0, 0}}, {{2, 3}, {0, 0}}, {{2, 3}, {0, 0}}};
    (void)state;
    mesh_or_die(&m, 1, 4, 0, 0, 0);
    spec_or_die(&s, &m, S0, R, R, 13, 3, 0);
    check_locals(&s, w13);
    spec_or_die(&s, &m, S0, R, R, 2, 3, 0);
    check_locals(&s, w2);
    spec_or_die(&s, &m, R, R, R, 2, 3, 0);
    check_locals(&s, wr);
    spec_or_die(&s, &m, PSUM, R, R, 2, 3, 0);
    check_locals(&s, wr);
}

static void test_local_2x2(void **state)
{
    dt_mesh m;
    dt_spec s;
    /* 5 rows on 2x2 [S0,S0] -> 2,1,1,1 */
    static const int32_t w5[4][2][3] = {{{2, 4}, {0, 0}}, {{1, 4}, {2, 0}}, {{1, 4}, {3, 0}}, {{1, 4}, {4, 0}}};
    /* #161368: 2-D uneven; 3 rows [S0,S0]: the last piece is empty at offset 3 */
    static const int32_t w3[4][2][3] = {{{1, 4}, {0, 0}}, {{1, 4}, {1, 0}}, {{1, 4}, {2, 0}}, {{0, 4}, {3, 0}}};
    /* 2 rows on 2x2 [S0,S0]: (0,1) and (1,1) empty */
    static const int32_t w2[4][2][3] = {{{1, 4}, {0, 0}}, {{0, 4}, {2, 0}}, {{1, 4}, {1, 0}}, {{0, 4}, {2, 0}}};
    /* (5,3) [S0,S1]: rows 3,2; cols 2,1 */
    static const int32_t w53[4][2][3] = {{{3, 2}, {0, 0}}, {{3, 1}, {0, 2}}, {{2, 2}, {3, 0}}, {{2, 1}, {3, 2}}};
    /* (2,5) [S1,S1]: torch's docstring example: cols 2,1,1,1 at 0,2,3,4 */
    static const int32_t w25[4][2][3] = {{{2, 2}, {0, 0}}, {{2, 1}, {0, 2}}, {{2, 1}, {0, 3}}, {{2, 1}, {0, 4}}};
    (void)state;
    mesh_or_die(&m, 2, 2, 2, 0, 0);
    spec_or_die(&s, &m, S0, S0, R, 5, 4, 0);
    check_locals(&s, w5);
    spec_or_die(&s, &m, S0, S0, R, 3, 4, 0);
    check_locals(&s, w3);
    spec_or_die(&s, &m, S0, S0, R, 2, 4, 0);
    check_locals(&s, w2);
    spec_or_die(&s, &m, S0, S1, R, 5, 3, 0);
    check_locals(&s, w53);
    spec_or_die(&s, &m, S1, S1, R, 2, 5, 0);
    check_locals(&s, w25);
}

static void test_local_2x2x2(void **state)
{
    dt_mesh m;
    dt_spec s;
    /* 7 rows [S0,S0,S0]: 1 each, the last empty at offset 7 */
    static const int32_t w7[8][2][3] = {{{1, 2}, {0, 0}}, {{1, 2}, {1, 0}}, {{1, 2}, {2, 0}}, {{1, 2}, {3, 0}},
                                        {{1, 2}, {4, 0}}, {{1, 2}, {5, 0}}, {{1, 2}, {6, 0}}, {{0, 2}, {7, 0}}};
    /* (3,5,2) [S0,S1,S2]: rows 2,1; cols 3,2; last 1,1 */
    static const int32_t w352[8][2][3] = {{{2, 3, 1}, {0, 0, 0}}, {{2, 3, 1}, {0, 0, 1}}, {{2, 2, 1}, {0, 3, 0}},
                                          {{2, 2, 1}, {0, 3, 1}}, {{1, 3, 1}, {2, 0, 0}}, {{1, 3, 1}, {2, 0, 1}},
                                          {{1, 2, 1}, {2, 3, 0}}, {{1, 2, 1}, {2, 3, 1}}};
    (void)state;
    mesh_or_die(&m, 3, 2, 2, 2, 0);
    spec_or_die(&s, &m, S0, S0, S0, 7, 2, 0);
    check_locals(&s, w7);
    spec_or_die(&s, &m, S0, S1, S2, 3, 5, 2);
    check_locals(&s, w352);
}

/* Every rank's pieces tile the global tensor exactly once (property, many shapes). */
static void test_local_tiles(void **state)
{
    static const dt_placement opts[4] = {DT_REPLICATE(), DT_SHARD(0), DT_SHARD(1), DT_PARTIAL(DT_SUM)};
    dt_mesh m;
    dt_spec s;
    int a, b, n0, n1, r;
    (void)state;
    mesh_or_die(&m, 2, 2, 3, 0, 0);
    for (a = 0; a < 4; a++)
        for (b = 0; b < 4; b++)
            for (n0 = 0; n0 <= 7; n0++)
                for (n1 = 1; n1 <= 7; n1 += 3) {
                    unsigned char hit[7][7];
                    int replicas = 1, i, j;
                    memset(hit, 0, sizeof hit);
                    spec_or_die(&s, &m, opts[a], opts[b], R, n0, n1, 0);
                    if (opts[a].kind != DT_KIND_SHARD) replicas *= 2;
                    if (opts[b].kind != DT_KIND_SHARD) replicas *= 3;
                    for (r = 0; r < 6; r++) {
                        int32_t shape[2], off[2];
                        assert_int_equal(dt_local_shape(&s, r, shape, off), DT_OK);
                        for (i = 0; i < shape[0]; i++)
                            for (j = 0; j < shape[1]; j++) hit[off[0] + i][off[1] + j]++;
                    }
                    for (i = 0; i < n0; i++)
                        for (j = 0; j < n1; j++) assert_int_equal(hit[i][j], replicas);
                }
}

static void test_local_view(void **state)
{
    dt_mesh m;
    dt_spec s;
    float g[5][4];
    int32_t gs[2] = {5, 4};
    mb_tensor t, v, keep;
    size_t bytes;
    int i;
    (void)state;
    for (i = 0; i < 20; i++) (&g[0][0])[i] = (float)i;
    assert_int_equal(mb_tensor_init(&t, g, MB_F32, 2, gs), MB_OK);
    mesh_or_die(&m, 2, 2, 2, 0, 0);
    spec_or_die(&s, &m, S0, S1, R, 5, 4, 0); /* rank 3: rows 3..4, cols 2..3 */
    assert_int_equal(dt_local_view(&s, 3, &t, &v), DT_OK);
    assert_ptr_equal(v.data, &g[3][2]);
    assert_int_equal(v.shape[0], 2);
    assert_int_equal(v.shape[1], 2);
    assert_int_equal(v.stride[0], 4);
    assert_true(((float *)v.data)[v.stride[0] + 1] == 19.0f);
    assert_int_equal(dt_local_bytes(&s, 3, &bytes), DT_OK);
    assert_int_equal(bytes, 16);
    spec_or_die(&s, &m, S0, S0, R, 3, 4, 0); /* rank 3 holds nothing */
    assert_int_equal(dt_local_view(&s, 3, &t, &v), DT_ERR_MISMATCH);
    gs[0] = 3;
    assert_int_equal(mb_tensor_init(&t, g, MB_F32, 2, gs), MB_OK);
    assert_int_equal(dt_local_view(&s, 3, &t, &v), DT_OK);
    assert_int_equal(v.shape[0], 0);
    /* bad input leaves the output alone */
    memset(&v, 0x5A, sizeof v);
    keep = v;
    assert_int_equal(dt_local_view(&s, 9, &t, &v), DT_ERR_NOT_MEMBER);
    t.dtype = MB_I32;
    assert_int_equal(dt_local_view(&s, 0, &t, &v), DT_ERR_MISMATCH);
    assert_memory_equal(&v, &keep, sizeof v);
}

/* ---- planner ---- */

struct want_step {
    int mesh_dim, op;
    dt_placement src, dst;
};

static void check_plan(const dt_plan *p, int ncoll, int nsteps, const struct want_step *w)
{
    int i;
    assert_int_equal(p->nsteps, nsteps);
    assert_int_equal(p->ncollectives, ncoll);
    for (i = 0; i < nsteps; i++) {
        assert_int_equal(p->steps[i].mesh_dim, w[i].mesh_dim);
        assert_int_equal(p->steps[i].op, w[i].op);
        assert_int_equal(p->steps[i].src.kind, w[i].src.kind);
        assert_int_equal(p->steps[i].src.arg, w[i].src.arg);
        assert_int_equal(p->steps[i].dst.kind, w[i].dst.kind);
        assert_int_equal(p->steps[i].dst.arg, w[i].dst.arg);
    }
}

static int plan1(const dt_mesh *m, dt_placement a, dt_placement b, int flags, dt_plan *p)
{
    dt_spec s, d;
    spec_or_die(&s, m, a, R, R, 13, 3, 0);
    spec_or_die(&d, m, b, R, R, 13, 3, 0);
    return dt_plan_redistribute(&s, &d, flags, p);
}

static void test_plan_1d(void **state)
{
    dt_mesh m;
    dt_plan p;
    struct want_step w;
    (void)state;
    mesh_or_die(&m, 1, 4, 0, 0, 3);
    w.mesh_dim = 0;
#define ONE(a, b, flags, opv, ncoll)                         \
    do {                                                     \
        assert_int_equal(plan1(&m, a, b, flags, &p), DT_OK); \
        w.op = opv;                                          \
        w.src = a;                                           \
        w.dst = b;                                           \
        check_plan(&p, ncoll, 1, &w);                        \
    } while (0)
    ONE(S0, R, 0, DT_OP_ALL_GATHER, 1);
    ONE(PSUM, R, 0, DT_OP_ALL_REDUCE, 1);
    ONE(PMAX, R, 0, DT_OP_ALL_REDUCE, 1);
    ONE(PSUM, S0, 0, DT_OP_REDUCE_SCATTER, 1);
    ONE(PMIN, S1, 0, DT_OP_REDUCE_SCATTER, 1);
    ONE(R, S0, 0, DT_OP_NARROW, 0);
    ONE(S0, S1, 0, DT_OP_ALL_TO_ALL, 1);
    ONE(S1, S0, 0, DT_OP_ALL_TO_ALL, 1);
    ONE(R, PSUM, DT_PLAN_ALLOW_PARTIAL, DT_OP_PARTITION, 0);
    ONE(R, PAVG, DT_PLAN_ALLOW_PARTIAL, DT_OP_PARTITION, 0);
    ONE(R, PMAX, DT_PLAN_ALLOW_PARTIAL, DT_OP_PARTITION, 0);
#undef ONE
    assert_int_equal(p.steps[0].red, DT_MAX);
    assert_int_equal(plan1(&m, PMIN, R, 0, &p), DT_OK);
    assert_int_equal(p.steps[0].red, DT_MIN);
    /* P(sum) -> S(0) of 13 rows on rank 3: in 13 rows, out 1 row (4,4,4,1) */
    assert_int_equal(plan1(&m, PSUM, S0, 0, &p), DT_OK);
    assert_int_equal(p.steps[0].in_shape[0], 13);
    assert_int_equal(p.steps[0].out_shape[0], 1);
    assert_int_equal(p.steps[0].red, DT_SUM);
    /* no-ops: nothing to do */
    assert_int_equal(plan1(&m, PSUM, PSUM, 0, &p), DT_OK);
    check_plan(&p, 0, 0, &w);
    assert_int_equal(plan1(&m, S0, S0, 0, &p), DT_OK);
    check_plan(&p, 0, 0, &w);
    assert_int_equal(plan1(&m, R, R, 0, &p), DT_OK);
    check_plan(&p, 0, 0, &w);
}

static void test_plan_partial_errors(void **state)
{
    dt_mesh m;
    dt_plan p, keep;
    (void)state;
    mesh_or_die(&m, 1, 4, 0, 0, 0);
    memset(&p, 0x5A, sizeof p);
    keep = p;
    assert_int_equal(plan1(&m, R, PSUM, 0, &p), DT_ERR_PARTIAL); /* public call */
    assert_int_equal(plan1(&m, S0, PSUM, 0, &p), DT_ERR_PARTIAL);
    assert_int_equal(plan1(&m, S0, PSUM, DT_PLAN_ALLOW_PARTIAL, &p), DT_ERR_PARTIAL);
    assert_int_equal(plan1(&m, PSUM, PMAX, 0, &p), DT_ERR_PARTIAL_OP);
    assert_int_equal(plan1(&m, PAVG, PSUM, DT_PLAN_ALLOW_PARTIAL, &p), DT_ERR_PARTIAL_OP);
    assert_int_equal(plan1(&m, R, PPROD, DT_PLAN_ALLOW_PARTIAL, &p), DT_ERR_UNSUPPORTED);
    assert_memory_equal(&p, &keep, sizeof p);
    {
        dt_spec s, d;
        dt_placement pr = DT_REPLICATE(), ps = DT_PARTIAL(DT_SUM);
        int32_t shape[1] = {8};
        assert_int_equal(dt_spec_init(&s, &m, &pr, 1, MB_I32, 1, shape, NULL), DT_OK);
        assert_int_equal(dt_spec_init(&d, &m, &ps, 1, MB_I32, 1, shape, NULL), DT_OK);
        assert_int_equal(dt_plan_redistribute(&s, &d, DT_PLAN_ALLOW_PARTIAL, &p), DT_ERR_DTYPE);
        assert_memory_equal(&p, &keep, sizeof p);
    }
}

static int plan2(const dt_mesh *m, dt_placement a0, dt_placement a1, dt_placement b0, dt_placement b1, int32_t rows,
                 int32_t cols, dt_plan *p)
{
    dt_spec s, d;
    spec_or_die(&s, m, a0, a1, R, rows, cols, 0);
    spec_or_die(&d, m, b0, b1, R, rows, cols, 0);
    return dt_plan_redistribute(&s, &d, 0, p);
}

static void test_plan_2x2(void **state)
{
    dt_mesh m;
    dt_plan p;
    int r;
    (void)state;
    for (r = 0; r < 4; r++) {
        mesh_or_die(&m, 2, 2, 2, 0, r);
        { /* [S0,S1] -> [S0,S0]: one all_to_all on mesh dim 1 */
            const struct want_step w[1] = {{1, DT_OP_ALL_TO_ALL, DT_SHARD(1), DT_SHARD(0)}};
            assert_int_equal(plan2(&m, S0, S1, S0, S0, 8, 8, &p), DT_OK);
            check_plan(&p, 1, 1, w);
        }
        { /* [S0,S1] -> [S1,S0]: gather dim 1, all_to_all dim 0, narrow dim 1 */
            const struct want_step w[3] = {{1, DT_OP_ALL_GATHER, DT_SHARD(1), DT_REPLICATE()},
                                           {0, DT_OP_ALL_TO_ALL, DT_SHARD(0), DT_SHARD(1)},
                                           {1, DT_OP_NARROW, DT_REPLICATE(), DT_SHARD(0)}};
            assert_int_equal(plan2(&m, S0, S1, S1, S0, 8, 8, &p), DT_OK);
            check_plan(&p, 2, 3, w);
        }
        { /* [S0,S0] -> [S1,S1] */
            const struct want_step w[3] = {{1, DT_OP_ALL_GATHER, DT_SHARD(0), DT_REPLICATE()},
                                           {0, DT_OP_ALL_TO_ALL, DT_SHARD(0), DT_SHARD(1)},
                                           {1, DT_OP_NARROW, DT_REPLICATE(), DT_SHARD(1)}};
            assert_int_equal(plan2(&m, S0, S0, S1, S1, 8, 8, &p), DT_OK);
            check_plan(&p, 2, 3, w);
        }
        { /* [S0,S0] -> [R,S0]: nested sharding is replicated first (torch's docstring case) */
            const struct want_step w[3] = {{1, DT_OP_ALL_GATHER, DT_SHARD(0), DT_REPLICATE()},
                                           {0, DT_OP_ALL_GATHER, DT_SHARD(0), DT_REPLICATE()},
                                           {1, DT_OP_NARROW, DT_REPLICATE(), DT_SHARD(0)}};
            assert_int_equal(plan2(&m, S0, S0, R, S0, 8, 8, &p), DT_OK);
            check_plan(&p, 2, 3, w);
        }
        { /* [S0,S0] -> [R,R]: inner first */
            const struct want_step w[2] = {{1, DT_OP_ALL_GATHER, DT_SHARD(0), DT_REPLICATE()},
                                           {0, DT_OP_ALL_GATHER, DT_SHARD(0), DT_REPLICATE()}};
            assert_int_equal(plan2(&m, S0, S0, R, R, 5, 3, &p), DT_OK);
            check_plan(&p, 2, 2, w);
        }
        { /* [P,P] -> [R,S1]: no Shard in src -> forward pass only */
            const struct want_step w[2] = {{0, DT_OP_ALL_REDUCE, DT_PARTIAL(DT_SUM), DT_REPLICATE()},
                                           {1, DT_OP_REDUCE_SCATTER, DT_PARTIAL(DT_SUM), DT_SHARD(1)}};
            assert_int_equal(plan2(&m, PSUM, PSUM, R, S1, 5, 3, &p), DT_OK);
            check_plan(&p, 2, 2, w);
        }
        { /* [R,S0] -> [S0,S0]: dim 1 gathers first, then both narrow: 1 collective */
            const struct want_step w[3] = {{1, DT_OP_ALL_GATHER, DT_SHARD(0), DT_REPLICATE()},
                                           {0, DT_OP_NARROW, DT_REPLICATE(), DT_SHARD(0)},
                                           {1, DT_OP_NARROW, DT_REPLICATE(), DT_SHARD(0)}};
            assert_int_equal(plan2(&m, R, S0, S0, S0, 5, 3, &p), DT_OK);
            check_plan(&p, 1, 3, w);
        }
        { /* [S0,P] -> [S0,S0]: reduce_scatter on mesh dim 1 along the same dim */
            const struct want_step w[1] = {{1, DT_OP_REDUCE_SCATTER, DT_PARTIAL(DT_SUM), DT_SHARD(0)}};
            assert_int_equal(plan2(&m, S0, PSUM, S0, S0, 5, 3, &p), DT_OK);
            check_plan(&p, 1, 1, w);
        }
        { /* [P,S0] -> [S1,S0]: misaligned? no (dim 1 before mesh dim 0: none): RS on dim 0 */
            const struct want_step w[1] = {{0, DT_OP_REDUCE_SCATTER, DT_PARTIAL(DT_SUM), DT_SHARD(1)}};
            assert_int_equal(plan2(&m, PSUM, S0, S1, S0, 5, 3, &p), DT_OK);
            check_plan(&p, 1, 1, w);
        }
    }
}

static void test_plan_logical_shape(void **state)
{
    dt_mesh m;
    dt_plan p;
    (void)state;
    /* 5 rows [S0,S0] -> [R,R] on rank 2 = (1,0): mesh dim 1 gathers within the 2 rows of
       mesh dim 0's second piece (logical 2 rows; in 1 row, out 2), then dim 0 gathers 5 */
    mesh_or_die(&m, 2, 2, 2, 0, 2);
    assert_int_equal(plan2(&m, S0, S0, R, R, 5, 3, &p), DT_OK);
    assert_int_equal(p.steps[0].logical_shape[0], 2);
    assert_int_equal(p.steps[0].in_shape[0], 1);
    assert_int_equal(p.steps[0].out_shape[0], 2);
    assert_int_equal(p.steps[1].logical_shape[0], 5);
    assert_int_equal(p.steps[1].in_shape[0], 2);
    assert_int_equal(p.steps[1].out_shape[0], 5);
    /* on rank 0 the first piece has 3 rows */
    mesh_or_die(&m, 2, 2, 2, 0, 0);
    assert_int_equal(plan2(&m, S0, S0, R, R, 5, 3, &p), DT_OK);
    assert_int_equal(p.steps[0].logical_shape[0], 3);
    assert_int_equal(p.steps[0].out_shape[0], 3);
    assert_int_equal(p.steps[0].in_shape[0], 2);
}

static void test_plan_size1(void **state)
{
    dt_mesh m;
    dt_plan p;
    (void)state;
    mesh_or_die(&m, 1, 1, 0, 0, 0);
    assert_int_equal(plan1(&m, S0, R, 0, &p), DT_OK);
    assert_int_equal(p.nsteps, 1);
    assert_int_equal(p.steps[0].op, DT_OP_NOOP);
    assert_int_equal(p.ncollectives, 0);
    assert_int_equal(plan1(&m, PSUM, S1, 0, &p), DT_OK);
    assert_int_equal(p.ncollectives, 0);
    assert_int_equal(plan1(&m, S0, S1, 0, &p), DT_OK);
    assert_int_equal(p.ncollectives, 0);
    assert_int_equal(p.bytes, 0);
    /* 1x4: only mesh dim 1 communicates */
    mesh_or_die(&m, 2, 1, 4, 0, 1);
    assert_int_equal(plan2(&m, S0, S1, R, R, 8, 8, &p), DT_OK);
    assert_int_equal(p.nsteps, 2);
    assert_int_equal(p.ncollectives, 1);
    assert_int_equal(p.steps[0].op, DT_OP_ALL_GATHER);
    assert_int_equal(p.steps[0].mesh_dim, 1);
    assert_int_equal(p.steps[1].op, DT_OP_NOOP);
    assert_int_equal(plan2(&m, S0, S1, S1, S0, 8, 8, &p), DT_OK);
    assert_int_equal(p.ncollectives, 1);
    /* 2x1x2 */
    mesh_or_die(&m, 3, 2, 1, 2, 0);
    {
        dt_spec s, d;
        spec_or_die(&s, &m, PSUM, PSUM, PSUM, 4, 4, 0);
        spec_or_die(&d, &m, R, R, R, 4, 4, 0);
        assert_int_equal(dt_plan_redistribute(&s, &d, 0, &p), DT_OK);
        assert_int_equal(p.nsteps, 3);
        assert_int_equal(p.ncollectives, 2);
        assert_int_equal(p.steps[1].op, DT_OP_NOOP);
    }
}

/* The planner measures the scratch step by step as it emits (the sizing calls keep no
   dt_plan): it must equal a run over the whole plan with contiguous tensors
   (dt_redistribute_scratch_bytes), and the sizing calls must give their plans' figure. */
static void check_scratch(const dt_plan *p, const dt_spec *s, const dt_spec *t)
{
    dt_spec r = *s;
    dt_plan q;
    mb_tensor in, out;
    size_t bytes = SENTINEL;
    assert_int_equal(mb_tensor_init(&in, (void *)p, (mb_dtype)p->dtype, p->ndim, p->in_shape), MB_OK);
    assert_int_equal(mb_tensor_init(&out, (void *)p, (mb_dtype)p->dtype, p->ndim, p->out_shape), MB_OK);
    assert_int_equal(dt_redistribute_scratch_bytes(p, &in, &out), dt_plan_scratch_bytes(p));
    memset(r.placements, 0, sizeof r.placements);
    assert_int_equal(dt_full_tensor_scratch_bytes(s, &bytes), DT_OK);
    assert_int_equal(dt_plan_redistribute(s, &r, 0, &q), DT_OK);
    assert_int_equal(bytes, dt_plan_scratch_bytes(&q));
    bytes = SENTINEL;
    assert_int_equal(dt_distribute_scratch_bytes(t, DT_EVERY_RANK, &bytes), DT_OK);
    assert_int_equal(dt_plan_redistribute(&r, t, 0, &q), DT_OK);
    assert_int_equal(bytes, dt_plan_scratch_bytes(&q));
}

/* Every rank must plan the same collectives in the same order (or they would not match),
   each step's local output feeds the next step, and the plan starts at the src local shape
   and ends at the dst one: for all placement pairs on a 2x3 and a 2x2x2 mesh. */
static void check_all_ranks(dt_mesh *meshes, int nranks, const dt_placement *a, const dt_placement *b,
                            const int32_t *shape, int ndim)
{
    dt_plan first, p;
    int r, i, d;
    for (r = 0; r < nranks; r++) {
        dt_spec s, t;
        int32_t ls[MB_MAX_DIMS];
        const dt_mesh *m = &meshes[r];
        assert_int_equal(dt_spec_init(&s, m, a, m->ndim, MB_F32, ndim, shape, NULL), DT_OK);
        assert_int_equal(dt_spec_init(&t, m, b, m->ndim, MB_F32, ndim, shape, NULL), DT_OK);
        assert_int_equal(dt_plan_redistribute(&s, &t, 0, &p), DT_OK);
        if (r == 0) first = p;
        assert_int_equal(p.nsteps, first.nsteps);
        assert_int_equal(p.ncollectives, first.ncollectives);
        assert_true(p.nsteps <= 2 * m->ndim);
        for (i = 0; i < p.nsteps; i++) {
            assert_int_equal(p.steps[i].mesh_dim, first.steps[i].mesh_dim);
            assert_int_equal(p.steps[i].op, first.steps[i].op);
            assert_memory_equal(&p.steps[i].src, &first.steps[i].src, sizeof(dt_placement));
            assert_memory_equal(&p.steps[i].dst, &first.steps[i].dst, sizeof(dt_placement));
            if (i + 1 < p.nsteps)
                assert_memory_equal(p.steps[i].out_shape, p.steps[i + 1].in_shape, sizeof(int32_t) * (size_t)ndim);
        }
        if (p.nsteps) {
            assert_int_equal(dt_local_shape(&s, r, ls, NULL), DT_OK);
            for (d = 0; d < ndim; d++) assert_int_equal(p.steps[0].in_shape[d], ls[d]);
            assert_int_equal(dt_local_shape(&t, r, ls, NULL), DT_OK);
            for (d = 0; d < ndim; d++) assert_int_equal(p.steps[p.nsteps - 1].out_shape[d], ls[d]);
        }
        check_scratch(&p, &s, &t);
    }
}

static void test_plan_all_pairs(void **state)
{
    static const dt_placement from[5] = {DT_REPLICATE(), DT_SHARD(0), DT_SHARD(1), DT_SHARD(2), DT_PARTIAL(DT_SUM)};
    static const int32_t shape[3] = {5, 7, 3};
    dt_mesh meshes[8];
    dt_placement a[3], b[3];
    int r, i, j, k;
    (void)state;
    for (r = 0; r < 6; r++) mesh_or_die(&meshes[r], 2, 2, 3, 0, r);
    for (i = 0; i < 25; i++)
        for (j = 0; j < 16; j++) {
            a[0] = from[i % 5];
            a[1] = from[i / 5];
            b[0] = from[j % 4];
            b[1] = from[j / 4];
            check_all_ranks(meshes, 6, a, b, shape, 3);
        }
    for (r = 0; r < 8; r++) mesh_or_die(&meshes[r], 3, 2, 2, 2, r);
    for (i = 0; i < 64; i++)
        for (j = 0; j < 27; j++) {
            for (k = 0; k < 3; k++) {
                static const int pick[4] = {0, 1, 2, 4};
                int ai = (i >> (2 * k)) & 3, bj = j, q;
                for (q = 0; q < k; q++) bj /= 3;
                a[k] = from[pick[ai]];
                b[k] = from[bj % 3];
            }
            check_all_ranks(meshes, 8, a, b, shape, 3);
        }
}

static void test_plan_cost(void **state)
{
    dt_mesh m;
    dt_plan p;
    uint64_t prev_ns = 0, prev_bytes = 0, ns;
    int32_t rows;
    dt_link slow = {1000u, 100u, 10u, 0u};
    (void)state;
    mesh_or_die(&m, 1, 4, 0, 0, 0);
    /* S0 -> R of (16,4) f32: 256 B gathered, ring: 3/4 of it sent, 3 hops */
    assert_int_equal(plan2(&m, S0, R, R, R, 16, 4, &p), DT_OK);
    assert_int_equal(p.steps[0].hops, 3);
    assert_int_equal(p.bytes, 192);
    /* the gather writes the caller's output in place: no scratch */
    assert_int_equal(p.scratch, 0);
    assert_int_equal(dt_plan_scratch_bytes(&p), 0);
    assert_int_equal(p.steps[0].stage, 0);
    { /* ... unless the output is a strided view: a column-major (16,4) stages the 256 B */
        static float buf[64];
        int32_t in_shape[2] = {4, 4}, out_shape[2] = {16, 4};
        mb_tensor in, out;
        assert_int_equal(mb_tensor_init(&in, buf, MB_F32, 2, in_shape), MB_OK);
        assert_int_equal(mb_tensor_init(&out, buf, MB_F32, 2, out_shape), MB_OK);
        assert_int_equal(dt_redistribute_scratch_bytes(&p, &in, &out), 0);
        out.stride[0] = 1;
        out.stride[1] = 16;
        assert_int_equal(dt_redistribute_scratch_bytes(&p, &in, &out), 256);
        assert_int_equal(dt_redistribute_scratch_bytes(NULL, &in, &out), 0);
    }
    assert_int_equal(dt_plan_cost_ns(&p, NULL, &ns), DT_OK);
    assert_int_equal(ns, 6600 + 3 * 600 + 192 * 1000 / 94167);
    /* S1 -> R: the gathered column blocks are not back to back in the output: staged */
    assert_int_equal(plan2(&m, S1, R, R, R, 16, 4, &p), DT_OK);
    assert_int_equal(dt_plan_scratch_bytes(&p), 256);
    assert_int_equal(p.steps[0].stage, 2); /* the receive side */
    /* all_reduce: 2(n-1) hops */
    assert_int_equal(plan2(&m, PSUM, R, R, R, 16, 4, &p), DT_OK);
    assert_int_equal(p.hops, 6);
    assert_int_equal(p.bytes, 256 * 6 / 4);
    /* monotonic in bytes, for every kind of collective */
    for (rows = 4; rows <= 4096; rows *= 2) {
        uint64_t t = 0, b = 0;
        int k;
        static const dt_placement from[4] = {DT_SHARD(0), DT_PARTIAL(DT_SUM), DT_PARTIAL(DT_SUM), DT_SHARD(0)};
        static const dt_placement to[4] = {DT_REPLICATE(), DT_REPLICATE(), DT_SHARD(0), DT_SHARD(1)};
        for (k = 0; k < 4; k++) {
            assert_int_equal(plan2(&m, from[k], R, to[k], R, rows, 8, &p), DT_OK);
            assert_int_equal(dt_plan_cost_ns(&p, &slow, &ns), DT_OK);
            t += ns;
            b += p.bytes;
        }
        assert_true(t > prev_ns);
        assert_true(b > prev_bytes);
        prev_ns = t;
        prev_bytes = b;
    }
    /* a local-only plan costs nothing */
    assert_int_equal(plan2(&m, R, R, S0, R, 16, 4, &p), DT_OK);
    assert_int_equal(dt_plan_cost_ns(&p, NULL, &ns), DT_OK);
    assert_int_equal(ns, 0);
    assert_int_equal(p.scratch, 0);
    ns = SENTINEL;
    slow.bytes_per_us = 0;
    assert_int_equal(dt_plan_cost_ns(&p, &slow, &ns), DT_ERR_TOO_SMALL);
    assert_int_equal(ns, SENTINEL);
}

static void test_plan_bad(void **state)
{
    dt_mesh m, m2, out;
    dt_spec s, d;
    dt_plan p, keep;
    int32_t sub[2] = {5, 6}, shape[1] = {2};
    (void)state;
    memset(&p, 0x5A, sizeof p);
    keep = p;
    mesh_or_die(&m, 2, 2, 2, 0, 0);
    mesh_or_die(&m2, 1, 4, 0, 0, 0);
    spec_or_die(&s, &m, S0, R, R, 8, 8, 0);
    spec_or_die(&d, &m2, R, R, R, 8, 8, 0);
    assert_int_equal(dt_plan_redistribute(&s, &d, 0, &p), DT_ERR_MISMATCH); /* other mesh */
    spec_or_die(&d, &m, R, R, R, 8, 9, 0);
    assert_int_equal(dt_plan_redistribute(&s, &d, 0, &p), DT_ERR_MISMATCH); /* other shape */
    spec_or_die(&d, &m, R, R, R, 8, 8, 0);
    d.dtype = MB_F64;
    assert_int_equal(dt_plan_redistribute(&s, &d, 0, &p), DT_ERR_MISMATCH);
    d.dtype = MB_F32;
    d.placements[1].arg = 2; /* corrupted after init: Shard(2) of a 2-D tensor */
    d.placements[1].kind = DT_KIND_SHARD;
    assert_int_equal(dt_plan_redistribute(&s, &d, 0, &p), DT_ERR_DIM);
    assert_int_equal(dt_plan_redistribute(&s, &d, 0, NULL), DT_ERR_DIM);
    assert_int_equal(dt_plan_redistribute(NULL, &d, 0, &p), DT_ERR_NULL);
    /* non-member rank: no coordinate, no plan */
    assert_int_equal(dt_mesh_init(&out, 1, shape, sub, 0), DT_OK);
    spec_or_die(&s, &out, S0, R, R, 8, 8, 0);
    spec_or_die(&d, &out, R, R, R, 8, 8, 0);
    assert_int_equal(dt_plan_redistribute(&s, &d, 0, &p), DT_ERR_NOT_MEMBER);
    assert_memory_equal(&p, &keep, sizeof p);
    {
        int32_t ls[2] = {SENTINEL, SENTINEL};
        assert_int_equal(dt_local_shape(&s, 0, ls, NULL), DT_ERR_NOT_MEMBER);
        assert_int_equal(dt_local_shape(&s, 6, ls, NULL), DT_OK);
        assert_int_equal(ls[0], 4);
        ls[0] = SENTINEL;
        assert_int_equal(dt_local_shape(&s, 4, ls, NULL), DT_ERR_NOT_MEMBER);
        assert_int_equal(ls[0], SENTINEL);
    }
}

static void test_cache(void **state)
{
    dt_mesh m, same;
    dt_spec a, b, c, d;
    dt_cache_entry store[2];
    dt_plan_cache cache;
    const dt_plan *p1, *p2, *p3, *keep;
    (void)state;
    mesh_or_die(&m, 2, 2, 2, 0, 1);
    mesh_or_die(&same, 2, 2, 2, 0, 1);
    spec_or_die(&a, &m, S0, S1, R, 8, 8, 0);
    spec_or_die(&b, &m, S1, S0, R, 8, 8, 0);
    spec_or_die(&c, &m, R, R, R, 8, 8, 0);
    assert_int_equal(dt_plan_cache_init(&cache, store, 0), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_plan_cache_init(&cache, store, 2), DT_OK);
    assert_int_equal(dt_plan_cached(&cache, &a, &b, 0, &p1), DT_OK);
    assert_int_equal(cache.misses, 1);
    assert_int_equal(cache.hits, 0);
    assert_int_equal(p1->ncollectives, 2);
    assert_int_equal(dt_plan_cached(&cache, &a, &b, 0, &p2), DT_OK);
    assert_ptr_equal(p1, p2);
    assert_int_equal(cache.hits, 1);
    /* an equal spec on an equal (other) mesh object hits too */
    spec_or_die(&d, &same, S0, S1, R, 8, 8, 0);
    assert_int_equal(dt_plan_cached(&cache, &d, &b, 0, &p2), DT_OK);
    assert_ptr_equal(p1, p2);
    assert_int_equal(cache.hits, 2);
    /* flags are part of the key */
    assert_int_equal(dt_plan_cached(&cache, &a, &b, DT_PLAN_ALLOW_PARTIAL, &p2), DT_OK);
    assert_true(p1 != p2);
    assert_int_equal(cache.misses, 2);
    /* touch a->b, then a third key evicts the least recently used (the flagged one) */
    assert_int_equal(dt_plan_cached(&cache, &a, &b, 0, &p3), DT_OK);
    assert_int_equal(dt_plan_cached(&cache, &a, &c, 0, &p3), DT_OK);
    assert_ptr_equal(p3, p2); /* reused the evicted slot */
    assert_int_equal(p3->ncollectives, 2);
    assert_int_equal(cache.misses, 3);
    assert_int_equal(cache.hits, 3);
    assert_int_equal(dt_plan_cached(&cache, &a, &b, 0, &p2), DT_OK);
    assert_ptr_equal(p2, p1);
    assert_int_equal(cache.hits, 4);
    /* a failing plan changes nothing */
    keep = p3;
    spec_or_die(&d, &m, PSUM, R, R, 8, 8, 0);
    assert_int_equal(dt_plan_cached(&cache, &a, &d, 0, &p3), DT_ERR_PARTIAL);
    assert_ptr_equal(p3, keep);
    assert_int_equal(cache.misses, 3);
    assert_int_equal(cache.hits, 4);
    assert_int_equal(dt_plan_cached(&cache, &a, &b, 0, NULL), DT_ERR_NULL);
    d = b;
    d.mesh = NULL;
    assert_int_equal(dt_plan_cached(&cache, &a, &d, 0, &p3), DT_ERR_NULL);
    assert_ptr_equal(p3, keep);
    /* clear keeps the counters */
    assert_int_equal(dt_plan_cache_clear(&cache), DT_OK);
    assert_int_equal(dt_plan_cached(&cache, &a, &b, 0, &p2), DT_OK);
    assert_int_equal(cache.misses, 4);
    assert_int_equal(cache.count, 1);
}

static void test_strerror(void **state)
{
    (void)state;
    assert_string_equal(dt_strerror(DT_OK), "ok");
    assert_string_equal(dt_strerror(DT_ERR_NOT_MEMBER), "not a mesh member");
    assert_string_equal(dt_strerror(DT_ERR_TOO_SMALL), "too small");
    assert_string_equal(dt_strerror(-99), "unknown error");
    assert_string_equal(dt_strerror(3), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_examples), cmocka_unit_test(test_chunk_property),
        cmocka_unit_test(test_mesh),           cmocka_unit_test(test_mesh_bad),
        cmocka_unit_test(test_spec),           cmocka_unit_test(test_local_1d),
        cmocka_unit_test(test_local_2x2),      cmocka_unit_test(test_local_2x2x2),
        cmocka_unit_test(test_local_tiles),    cmocka_unit_test(test_local_view),
        cmocka_unit_test(test_plan_1d),        cmocka_unit_test(test_plan_partial_errors),
        cmocka_unit_test(test_plan_2x2),       cmocka_unit_test(test_plan_logical_shape),
        cmocka_unit_test(test_plan_size1),     cmocka_unit_test(test_plan_all_pairs),
        cmocka_unit_test(test_plan_cost),      cmocka_unit_test(test_plan_bad),
        cmocka_unit_test(test_cache),          cmocka_unit_test(test_strerror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
