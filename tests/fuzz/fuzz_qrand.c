/* fuzz_qrand.c — dtensor_quant.h (int8 mm, requantization) and dtensor_random.h from
   untrusted fields.

   The input gives a multiplier and int32 values, an int8 mm (shapes up to 7, either
   operand possibly a transposed view, 1 or N multipliers, sometimes wrong dtypes or
   shapes), and a mesh with a spec (placements of any kind, shape, dtype) for dt_rand /
   dt_dropout with a probability (sometimes NaN or out of range) and flags. Checked:
   - every answer is a dt_err, and a failed call wrote nothing (outputs and the generator);
   - dt_quantize_multiplier: mult in [2^30, 2^31) (or 0), shift in -31..30, and
     dt_mul_qmul(x) within 1 + 1e-6 |x real| of x * real for |x| < 2^24;
     dt_requant_i8 = the clamp of dt_mul_qmul;
   - dt_qmm_ref = an int64 loop requantized element by element;
   - dt_rng_offsets: both multiples of 4, end = round_up4(numel); dt_rand / dt_dropout on
     this rank: every element is the draw at offset + its global row-major index (or,
     with DT_RNG_TORCH_STREAM, offset + start + local index), the offset advances by end. */
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_RANDOM_IMPLEMENTATION
#include "dtensor_quant.h"
#include "dtensor_random.h"
#include "fuzz.h"

static int is_err(int rc)
{
    return rc <= 0 && rc >= DT_ERR_VALUE;
}

static float u24(uint32_t w)
{
    return (float)(w & 0xffffffu) * (1.0f / 16777216.0f);
}

static void fuzz_requant(fz_in *in)
{
    dt_qmul q, before;
    double real = (double)fz_u32(in) / (double)(1u + fz_u16(in)) * (fz_u8(in) < 32 ? -1.0 : 1.0);
    int rc, i;
    if (fz_u8(in) < 8) real = fz_u8(in) & 1u ? 0.0 / 0.0 : 1e300;
    memset(&q, 0x77, sizeof q);
    before = q;
    rc = dt_quantize_multiplier(real, &q);
    FUZZ_REQUIRE(is_err(rc));
    if (rc) {
        FUZZ_REQUIRE(memcmp(&q, &before, sizeof q) == 0);
        return;
    }
    FUZZ_REQUIRE((q.mult == 0 && q.shift == 0) || (q.mult >= (1 << 30) && q.shift >= -31 && q.shift <= 30));
    for (i = 0; i < 4; i++) {
        int32_t x = (int32_t)fz_u32(in), v = dt_mul_qmul(x, q), c = v > 127 ? 127 : v < -128 ? -128 : v;
        FUZZ_REQUIRE(dt_requant_i8(x, q) == c);
        if (x > -(1 << 24) && x < (1 << 24) && real < 64.0) {
            double want = (double)x * real, tol = 1.0 + 1e-6 * (want < 0 ? -want : want);
            FUZZ_REQUIRE((double)v - want <= tol && want - (double)v <= tol);
        }
    }
}

static void fuzz_qmm(fz_in *in)
{
    static int8_t a[64], b[64], y[64], ybefore[64];
    static int32_t acc[64];
    dt_qmul q[8];
    mb_tensor ta, tb, ty;
    int32_t M = (int32_t)(fz_u8(in) % 8u), K = (int32_t)(fz_u8(in) % 8u), N = (int32_t)(fz_u8(in) % 8u), sh[2];
    int nq = fz_u8(in) & 1u ? (int)N : 1, i, j, k, rc;
    for (i = 0; i < 64; i++) {
        a[i] = (int8_t)fz_u8(in);
        b[i] = (int8_t)fz_u8(in);
    }
    for (i = 0; i < 8; i++)
        if (dt_quantize_multiplier((double)(1 + fz_u16(in)) / 65536.0 * 4.0, &q[i])) return;
    sh[0] = M;
    sh[1] = K;
    mb_tensor_init(&ta, a, MB_I8, 2, sh);
    sh[0] = K;
    sh[1] = N;
    mb_tensor_init(&tb, b, MB_I8, 2, sh);
    if (fz_u8(in) & 1u) { /* a as the transposed view of a [K,M] buffer */
        ta.stride[0] = 1;
        ta.stride[1] = M;
    }
    if (fz_u8(in) & 1u) { /* b as linear's w^T: w [N,K] */
        tb.stride[0] = 1;
        tb.stride[1] = K;
    }
    sh[0] = M;
    sh[1] = N;
    mb_tensor_init(&ty, y, MB_I8, 2, sh);
    if (fz_u8(in) < 16) ty.shape[fz_u8(in) & 1u] += 1; /* damage */
    if (fz_u8(in) < 16) tb.dtype = MB_U8;
    if (fz_u8(in) < 16) nq = (int)fz_u8(in) % 9;
    memset(y, 0x5c, sizeof y);
    memcpy(ybefore, y, sizeof y);
    rc = dt_qmm_ref(&ta, &tb, q, nq, &ty, acc, fz_u8(in) < 16 ? (size_t)fz_u8(in) : sizeof acc);
    FUZZ_REQUIRE(is_err(rc));
    if (rc) {
        FUZZ_REQUIRE(memcmp(y, ybefore, sizeof y) == 0);
        return;
    }
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            int64_t s = 0;
            for (k = 0; k < K; k++)
                s += (int64_t)a[i * ta.stride[0] + k * ta.stride[1]] * b[k * tb.stride[0] + j * tb.stride[1]];
            FUZZ_REQUIRE(y[i * N + j] == dt_requant_i8((int32_t)s, q[nq == 1 ? 0 : j]));
        }
}

static void fuzz_random(fz_in *in)
{
    static float x[512], out[512], before[512];
    dt_mesh m;
    dt_spec s;
    dt_placement pl[DT_MAX_MESH_DIMS];
    dt_rng g, gb;
    mb_tensor tin, tout;
    int32_t ms[DT_MAX_MESH_DIMS], shape[MB_MAX_DIMS], ls[MB_MAX_DIMS], off[MB_MAX_DIMS], gstr[MB_MAX_DIMS];
    uint64_t start = 0, end = 0, numel = 1;
    int nd = 1 + (int)(fz_u8(in) % DT_MAX_MESH_DIMS), ndim = (int)(fz_u8(in) % 4u), i, d, rc, flags;
    int dropout = fz_u8(in) & 1u;
    float p = (float)fz_u8(in) / 200.0f;
    int64_t n, j;
    for (i = 0; i < nd; i++) ms[i] = 1 + (int32_t)(fz_u8(in) % 3u);
    if (dt_mesh_init(&m, nd, ms, NULL, (int)(fz_u8(in) % 30u))) return;
    for (i = 0; i < nd; i++) {
        pl[i].kind = (int16_t)(fz_u8(in) % 3u);
        pl[i].arg = (int16_t)(pl[i].kind == DT_KIND_PARTIAL ? 0 : fz_u8(in) % 4u);
    }
    for (d = 0; d < ndim; d++) shape[d] = (int32_t)(fz_u8(in) % 9u);
    if (dt_spec_init(&s, &m, pl, nd, fz_u8(in) < 16 ? MB_I32 : MB_F32, ndim, shape, NULL)) return;
    for (d = 0; d < ndim; d++) numel *= (uint64_t)shape[d];
    rc = dt_rng_offsets(&s, m.rank, &start, &end);
    FUZZ_REQUIRE(is_err(rc));
    if (!rc) FUZZ_REQUIRE(start % 4 == 0 && end == (numel + 3) / 4 * 4);
    if (rc || dt_local_shape(&s, m.rank, ls, off)) return;
    if (fz_u8(in) < 16 && ndim) ls[fz_u8(in) % (uint32_t)ndim] += 1; /* damage */
    if (fz_u8(in) < 8) p = fz_u8(in) & 1u ? 0.0f / 0.0f : -0.5f;
    flags = fz_u8(in) < 240 ? (int)(fz_u8(in) & 1u) : (int)fz_u8(in);
    g.seed = (uint64_t)fz_u32(in) << 32 | fz_u32(in);
    g.offset = (uint64_t)fz_u16(in) * 4u;
    gb = g;
    for (i = 0; i < 512; i++) x[i] = (float)(i % 7) - 3.0f;
    mb_tensor_init(&tin, x, MB_F32, ndim, ls);
    mb_tensor_init(&tout, out, MB_F32, ndim, ls);
    if (mb_numel(&tout) > 512) return;
    memset(out, 0x3b, sizeof out);
    memcpy(before, out, sizeof out);
    rc = dropout ? dt_dropout(&g, &s, &tin, &tout, p, flags) : dt_rand(&g, &s, &tout, flags);
    FUZZ_REQUIRE(is_err(rc));
    if (rc) {
        FUZZ_REQUIRE(memcmp(out, before, sizeof out) == 0 && g.seed == gb.seed && g.offset == gb.offset);
        return;
    }
    FUZZ_REQUIRE(g.offset == gb.offset + end);
    for (d = ndim - 1, j = 1; d >= 0; d--) {
        gstr[d] = (int32_t)j;
        j *= shape[d];
    }
    n = mb_numel(&tout);
    for (j = 0; j < n; j++) {
        uint64_t pos = gb.offset;
        int64_t r = j;
        float u, want;
        for (d = ndim - 1; d >= 0; d--) {
            pos += (uint64_t)(off[d] + r % ls[d]) * (uint64_t)gstr[d];
            r /= ls[d];
        }
        if (flags & DT_RNG_TORCH_STREAM) pos = gb.offset + start + (uint64_t)j;
        u = u24(dt_philox_draw(gb.seed, pos));
        want = !dropout ? u : u < 1.0f - p ? x[j] * (p < 1.0f ? 1.0f / (1.0f - p) : 0.0f) : 0.0f;
        FUZZ_REQUIRE(out[j] == want);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    uint32_t what = fz_u8(&in) % 3u;
    if (what == 0)
        fuzz_requant(&in);
    else if (what == 1)
        fuzz_qmm(&in);
    else
        fuzz_random(&in);
    return 0;
}
