/* test_dtensor_random.c — dtensor_random.h: Philox 4x32-10 against Random123's
   published known-answer vectors, torch's OffsetBasedRNGTracker offsets (the issue's
   (8,16) [S(1),R,S(0)] example on a 2x2x2 mesh, uneven and doubly sharded dims), and the
   property that dt_rand / dt_dropout on any sharding give exactly the slice of the
   replicated result (every rank of every mesh computed here: no communication needed).
   Single-threaded: also runs under QEMU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_RANDOM_IMPLEMENTATION
#include "dtensor_random.h"

/* Random123 1.14 tests/kat_vectors, the three philox4x32 10 lines: ctr[4] key[2] -> out[4] */
static void test_philox_kat(void **state)
{
    static const uint32_t kat[3][10] = {{0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                                        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
                                         0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
                                        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
                                         0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
    uint32_t out[4];
    int i, j;
    (void)state;
    for (i = 0; i < 3; i++) {
        dt_philox4x32_10(kat[i], kat[i] + 4, out);
        for (j = 0; j < 4; j++) assert_int_equal(out[j], kat[i][6 + j]);
    }
}

/* The stream layout: draw p of seed = block p/4 (counter words 0-1, subsequence 0), key =
   seed low/high, word p % 4. */
static void test_philox_stream(void **state)
{
    uint64_t seed = 0x299f31d0a4093822ull, p;
    uint32_t ctr[4] = {0, 0, 0, 0}, key[2] = {0xa4093822u, 0x299f31d0u}, out[4];
    (void)state;
    for (p = 0; p < 64; p++) {
        ctr[0] = (uint32_t)(p >> 2);
        dt_philox4x32_10(ctr, key, out);
        assert_int_equal(dt_philox_draw(seed, p), out[p & 3]);
    }
    /* a carry into counter word 1 */
    p = ((uint64_t)1 << 34) + 5;
    ctr[0] = 1;
    ctr[1] = 1;
    dt_philox4x32_10(ctr, key, out);
    assert_int_equal(dt_philox_draw(seed, p), out[1]);
}

static dt_mesh mesh;

static void offsets(int nd, const int32_t *ms, const dt_placement *p, int ndim, const int32_t *shape,
                    const uint64_t *want_start, uint64_t want_end)
{
    dt_spec s;
    uint64_t st, en;
    int r, n = 1, i;
    for (i = 0; i < nd; i++) n *= ms[i];
    assert_int_equal(dt_mesh_init(&mesh, nd, ms, NULL, 0), 0);
    assert_int_equal(dt_spec_init(&s, &mesh, p, nd, MB_F32, ndim, shape, NULL), 0);
    for (r = 0; r < n; r++) {
        assert_int_equal(dt_rng_offsets(&s, r, &st, &en), 0);
        assert_int_equal(st, want_start[r]);
        assert_int_equal(en, want_end);
    }
}

static void test_offsets_torch(void **state)
{
    static const int32_t m222[3] = {2, 2, 2}, m4[1] = {4}, m22[2] = {2, 2}, m3[1] = {3};
    static const int32_t s816[2] = {8, 16}, s53[2] = {5, 3}, s84[2] = {8, 4}, s7[1] = {7};
    /* the docstring of torch's _set_pre_op_offset: shards (4,8), linear index z*2 + x */
    static const dt_placement s1rs0[3] = {DT_SHARD(1), DT_REPLICATE(), DT_SHARD(0)};
    static const uint64_t w816[8] = {0, 64, 0, 64, 32, 96, 32, 96};
    /* uneven: ceil(5/4) = 2 rows of 3 = 6 per shard: round_up4(6 i) */
    static const dt_placement s0[1] = {DT_SHARD(0)}, p1[1] = {DT_PARTIAL(DT_SUM)};
    static const uint64_t w53[4] = {0, 8, 12, 20};
    /* a dim sharded twice: shard index c0*2 + c1, but the first-shard size takes the
       GLOBAL dim over the LAST mesh dim only (torch's _calc_first_shard_size): 4 rows of 4 */
    static const dt_placement s00[2] = {DT_SHARD(0), DT_SHARD(0)};
    static const uint64_t w84[4] = {0, 16, 32, 48};
    /* 7 on 3: ceil 3, shards 3,3,1 at 0,3,6 -> offsets round_up4(3 i) = 0,4,8 (not 0,3,6) */
    static const uint64_t w7[3] = {0, 4, 8}, z[3] = {0, 0, 0};
    (void)state;
    offsets(3, m222, s1rs0, 2, s816, w816, 128);
    offsets(1, m4, s0, 2, s53, w53, 16);
    offsets(2, m22, s00, 2, s84, w84, 32);
    offsets(1, m3, s0, 1, s7, w7, 8);
    offsets(1, m3, p1, 1, s7, z, 8); /* Partial counts as Replicate */
}

/* ---- every rank's dt_rand / dt_dropout against the replicated generation ---- */
#define GMAX 256
static float glob[GMAX], gdrop[GMAX], xin[GMAX], loc[GMAX], lin[GMAX];

static int32_t numel(int ndim, const int32_t *shape)
{
    int32_t n = 1;
    int d;
    for (d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Element offset of row-major position j of shape lsh in a view with these strides. */
static ptrdiff_t at(int32_t j, int ndim, const int32_t *lsh, const int32_t *stride)
{
    ptrdiff_t e = 0;
    int d;
    for (d = ndim - 1; d >= 0; d--) {
        e += (ptrdiff_t)(j % lsh[d]) * stride[d];
        j /= lsh[d];
    }
    return e;
}

/* Placement choice c of nch = ndim + 2: 0 Replicate, 1 Partial(sum), 2+d Shard(d). */
static dt_placement choice(int c)
{
    dt_placement p;
    p.kind = (int16_t)(c == 0 ? DT_KIND_REPLICATE : c == 1 ? DT_KIND_PARTIAL : DT_KIND_SHARD);
    p.arg = (int16_t)(c >= 2 ? c - 2 : 0);
    return p;
}

static int slices(int nd, const int32_t *ms, int ndim, const int32_t *shape, int flags)
{
    dt_placement rp[DT_MAX_MESH_DIMS], p[DT_MAX_MESH_DIMS];
    dt_spec rs, s;
    dt_rng g;
    mb_tensor gt, gv, lt, xt;
    int32_t lsh[MB_MAX_DIMS], off[MB_MAX_DIMS], n = numel(ndim, shape);
    int nch = ndim + 2, total = 1, code, i, r, size = 1, checked = 0;
    uint64_t end;
    for (i = 0; i < nd; i++) {
        rp[i] = choice(0);
        total *= nch;
        size *= ms[i];
    }
    assert_true(n <= GMAX);
    for (i = 0; i < n; i++) xin[i] = (float)(i % 13) - 6.0f;
    /* the replicated result, from rank 0 */
    assert_int_equal(dt_mesh_init(&mesh, nd, ms, NULL, 0), 0);
    assert_int_equal(dt_spec_init(&rs, &mesh, rp, nd, MB_F32, ndim, shape, NULL), 0);
    mb_tensor_init(&gt, glob, MB_F32, ndim, shape);
    g.seed = 0x1234abcd5678ull;
    g.offset = 8;
    assert_int_equal(dt_rand(&g, &rs, &gt, 0), 0);
    end = g.offset - 8;
    assert_int_equal(end, ((uint64_t)n + 3) / 4 * 4);
    for (i = 0; i < n; i++) {
        assert_true(glob[i] >= 0.0f && glob[i] < 1.0f);
        assert_true(glob[i] == (float)(dt_philox_draw(g.seed, 8u + (uint64_t)i) & 0xffffffu) / 16777216.0f);
    }
    mb_tensor_init(&xt, xin, MB_F32, ndim, shape);
    mb_tensor_init(&gt, gdrop, MB_F32, ndim, shape);
    g.offset = 8;
    assert_int_equal(dt_dropout(&g, &rs, &xt, &gt, 0.25f, 0), 0);
    for (i = 0; i < n; i++) assert_true(gdrop[i] == (glob[i] < 0.75f ? xin[i] * (1.0f / 0.75f) : 0.0f));
    for (code = 0; code < total; code++) {
        int c = code, contiguous_block = 1, nsh = 0;
        for (i = nd - 1; i >= 0; i--, c /= nch) {
            p[i] = choice(c % nch);
            if (p[i].kind == DT_KIND_SHARD) {
                nsh++;
                if (p[i].arg != 0) contiguous_block = 0;
            }
        }
        if (nsh > 1) contiguous_block = 0;
        for (r = 0; r < size; r++) {
            uint64_t start, e2;
            int32_t j, ln;
            assert_int_equal(dt_mesh_init(&mesh, nd, ms, NULL, r), 0);
            assert_int_equal(dt_spec_init(&s, &mesh, p, nd, MB_F32, ndim, shape, NULL), 0);
            assert_int_equal(dt_local_shape(&s, r, lsh, off), 0);
            assert_int_equal(dt_rng_offsets(&s, r, &start, &e2), 0);
            assert_int_equal(e2, end);
            ln = numel(ndim, lsh);
            mb_tensor_init(&lt, loc, MB_F32, ndim, lsh);
            g.offset = 8;
            assert_int_equal(dt_rand(&g, &s, &lt, flags), 0);
            assert_int_equal(g.offset, 8 + end);
            mb_tensor_init(&gt, glob, MB_F32, ndim, shape);
            assert_int_equal(dt_local_view(&s, r, &gt, &gv), 0);
            for (j = 0; j < ln; j++) {
                ptrdiff_t e = at(j, ndim, lsh, gv.stride);
                if (flags & DT_RNG_TORCH_STREAM) {
                    uint32_t w = dt_philox_draw(g.seed, 8u + start + (uint64_t)j);
                    assert_true(loc[j] == (float)(w & 0xffffffu) / 16777216.0f);
                    /* a row-major block at its own start: the slice of the replicated result */
                    if (contiguous_block && (uint64_t)off[0] * (uint64_t)(n / shape[0]) == start)
                        assert_true(loc[j] == ((float *)gv.data)[e]);
                } else {
                    assert_true(loc[j] == ((float *)gv.data)[e]); /* bit-exact slice */
                }
                checked++;
            }
            if (flags) continue;
            /* dropout, in place: the slice of the replicated dropout */
            for (j = 0; j < ln; j++) {
                ptrdiff_t e = ((float *)gv.data - glob) + at(j, ndim, lsh, gv.stride); /* global index */
                lin[j] = xin[e];
                loc[j] = gdrop[e]; /* expected */
            }
            mb_tensor_init(&lt, lin, MB_F32, ndim, lsh);
            g.offset = 8;
            assert_int_equal(dt_dropout(&g, &s, &lt, &lt, 0.25f, 0), 0);
            assert_memory_equal(lin, loc, (size_t)ln * sizeof(float));
        }
    }
    return checked;
}

static void test_rand_is_the_replicated_slice(void **state)
{
    static const int32_t m4[1] = {4}, m3[1] = {3}, m22[2] = {2, 2}, m32[2] = {3, 2}, m222[3] = {2, 2, 2};
    static const int32_t s8[1] = {8}, s7[1] = {7}, s816[2] = {8, 16}, s53[2] = {5, 3}, s75[2] = {7, 5};
    static const int32_t s345[3] = {3, 4, 5}, s523[3] = {5, 2, 3};
    int checked = 0, f;
    (void)state;
    for (f = 0; f <= DT_RNG_TORCH_STREAM; f++) {
        checked += slices(1, m4, 1, s8, f);
        checked += slices(1, m4, 1, s7, f);
        checked += slices(1, m3, 2, s75, f);
        checked += slices(1, m4, 2, s53, f);
        checked += slices(2, m22, 2, s816, f);
        checked += slices(2, m32, 2, s75, f);
        checked += slices(2, m22, 3, s345, f);
        checked += slices(3, m222, 2, s816, f);
        checked += slices(3, m222, 3, s523, f);
    }
    assert_true(checked > 10000);
}

/* Uniformity sanity, dropout edge probabilities, offsets in sync, and the torch stream
   mode's contiguous case: 1-D Shard(0) of (8,16) on 4 equals the replicated slice. */
static void test_dropout_and_moments(void **state)
{
    static float x[1024], y[1024];
    static const int32_t m1[1] = {1}, sh[1] = {1024};
    dt_placement r[1] = {DT_REPLICATE()};
    dt_spec s;
    dt_rng g = {42u, 0u};
    mb_tensor t, u;
    double mean = 0.0;
    int i, zeros = 0;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh, 1, m1, NULL, 0), 0);
    assert_int_equal(dt_spec_init(&s, &mesh, r, 1, MB_F32, 1, sh, NULL), 0);
    mb_tensor_init(&t, x, MB_F32, 1, sh);
    mb_tensor_init(&u, y, MB_F32, 1, sh);
    assert_int_equal(dt_rand(&g, &s, &t, 0), 0);
    assert_int_equal(g.offset, 1024);
    for (i = 0; i < 1024; i++) mean += x[i];
    mean /= 1024.0;
    assert_true(mean > 0.46 && mean < 0.54);
    for (i = 0; i < 1024; i++) x[i] = 1.0f;
    assert_int_equal(dt_dropout(&g, &s, &t, &u, 0.5f, 0), 0);
    for (i = 0; i < 1024; i++) {
        assert_true(y[i] == 0.0f || y[i] == 2.0f);
        zeros += y[i] == 0.0f;
    }
    assert_true(zeros > 450 && zeros < 574);
    assert_int_equal(dt_dropout(&g, &s, &t, &u, 0.0f, 0), 0);
    for (i = 0; i < 1024; i++) assert_true(y[i] == 1.0f);
    assert_int_equal(dt_dropout(&g, &s, &t, &u, 1.0f, 0), 0);
    for (i = 0; i < 1024; i++) assert_true(y[i] == 0.0f);
    assert_int_equal(g.offset, 4 * 1024);
}

static void test_random_bad_input(void **state)
{
    static float x[16];
    static int32_t ib[16];
    static const int32_t m2[1] = {2}, sh[1] = {16}, sh8[1] = {8}, sh7[1] = {7};
    dt_placement s0[1] = {DT_SHARD(0)};
    dt_spec s, si;
    dt_rng g = {1u, 0u};
    mb_tensor t, ti;
    uint64_t a = 7, b = 9;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh, 1, m2, NULL, 1), 0);
    assert_int_equal(dt_spec_init(&s, &mesh, s0, 1, MB_F32, 1, sh, NULL), 0);
    assert_int_equal(dt_spec_init(&si, &mesh, s0, 1, MB_I32, 1, sh, NULL), 0);
    mb_tensor_init(&t, x, MB_F32, 1, sh8);
    mb_tensor_init(&ti, ib, MB_I32, 1, sh8);
    assert_int_equal(dt_rng_offsets(&s, 2, &a, &b), DT_ERR_NOT_MEMBER);
    assert_int_equal(dt_rng_offsets(&s, 0, NULL, &b), DT_ERR_NULL);
    assert_true(a == 7 && b == 9);
    assert_int_equal(dt_rand(NULL, &s, &t, 0), DT_ERR_NULL);
    assert_int_equal(dt_rand(&g, &si, &ti, 0), DT_ERR_DTYPE);
    assert_int_equal(dt_rand(&g, &s, &t, 2), DT_ERR_VALUE);
    assert_int_equal(dt_dropout(&g, &s, &t, &t, 1.5f, 0), DT_ERR_VALUE);
    assert_int_equal(dt_dropout(&g, &s, &t, &t, -0.0001f, 0), DT_ERR_VALUE);
    assert_int_equal(dt_dropout(&g, &s, NULL, &t, 0.5f, 0), DT_ERR_NULL);
    t.shape[0] = 7; /* not the local shape */
    assert_int_equal(dt_rand(&g, &s, &t, 0), DT_ERR_MISMATCH);
    mb_tensor_init(&t, x, MB_F32, 1, sh7);
    assert_int_equal(dt_rand(&g, &s, &t, 0), DT_ERR_MISMATCH);
    assert_int_equal(g.offset, 0); /* nothing drawn, nothing advanced */
    for (a = 0; a < 16; a++) assert_true(x[a] == 0.0f);
    assert_string_equal(dt_strerror(DT_ERR_VALUE), "value out of range");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_kat),          cmocka_unit_test(test_philox_stream),
        cmocka_unit_test(test_offsets_torch),       cmocka_unit_test(test_rand_is_the_replicated_slice),
        cmocka_unit_test(test_dropout_and_moments), cmocka_unit_test(test_random_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
