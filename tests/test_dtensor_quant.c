/* test_dtensor_quant.c — dtensor_quant.h: int8 quantized mm/linear. The requant
   primitive against TFLite's QuantizeMultiplier golden values and gemmlowp's rounding
   (worked by hand below), torch's symmetric scale and quantize_val rounding, the local
   kernel against a plain int64 loop, and dt_qmm over pg_pthread with 2 and 4 ranks on
   1-D meshes and 4 ranks on a 2x2 mesh: every strategy combination (S(0),R / R,S(1) /
   S(1),S(0) / R,R per mesh dim), even and uneven shapes, per-tensor and per-channel
   multipliers, every rank's output compared byte for byte with the single-rank result.
   The int8 add, mul, table, softmax and LayerNorm against loops from their formulas and
   against the real functions they stand for. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#include "dtensor_quant.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"

static uint32_t rng_state = 2463534242u;
static uint32_t xs32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* ---- int8 elementwise, table and row ops ---- */

static int32_t clamp8(int64_t v)
{
    return v > 127 ? 127 : v < -128 ? -128 : (int32_t)v;
}

/* add / mul (TFLite's formulas, b broadcast over the rows by zero strides) and the table
   lookup against loops over plain arrays; add and mul also against the real values they
   stand for (within one output step). */
static void test_q8_elementwise(void **state)
{
    static int8_t a[6 * 9], b[9], y[6 * 9], t[256];
    int32_t sa[2] = {6, 9}, sb[2] = {6, 9}, i, j;
    float sca = 0.02f, scb = 0.05f, scy = 0.06f;
    dt_qmul q[3], qm;
    mb_tensor ta, tb, ty;
    (void)state;
    for (i = 0; i < 6 * 9; i++) a[i] = (int8_t)(xs32() % 256u);
    for (i = 0; i < 9; i++) b[i] = (int8_t)(xs32() % 256u);
    for (i = 0; i < 256; i++) t[i] = (int8_t)(255 - i);
    mb_tensor_init(&ta, a, MB_I8, 2, sa);
    mb_tensor_init(&tb, b, MB_I8, 2, sb);
    tb.stride[0] = 0; /* one row for all six */
    mb_tensor_init(&ty, y, MB_I8, 2, sa);
    assert_int_equal(dt_add_q8_multipliers(sca, scb, scy, q), 0);
    assert_int_equal(dt_add_q8(&ta, &tb, q, &ty), 0);
    for (i = 0; i < 6; i++)
        for (j = 0; j < 9; j++) {
            int32_t x = a[i * 9 + j], z = b[j];
            int32_t want =
                clamp8(dt_mul_qmul(dt_mul_qmul(x * (1 << 20), q[0]) + dt_mul_qmul(z * (1 << 20), q[1]), q[2]));
            float real = (float)x * sca + (float)z * scb, got = (float)y[i * 9 + j] * scy;
            assert_int_equal(y[i * 9 + j], want);
            if (real > -128.0f * scy && real < 127.0f * scy) assert_true(got - real <= scy && real - got <= scy);
        }
    assert_int_equal(dt_qmm_multipliers(sca, &scb, 1, scy, &qm), 0);
    assert_int_equal(dt_mul_q8(&ta, &tb, qm, &ty), 0);
    for (i = 0; i < 6; i++)
        for (j = 0; j < 9; j++) {
            int32_t want = clamp8(dt_mul_qmul(a[i * 9 + j] * b[j], qm));
            float real = (float)a[i * 9 + j] * sca * (float)b[j] * scb, got = (float)y[i * 9 + j] * scy;
            assert_int_equal(y[i * 9 + j], want);
            if (real > -128.0f * scy && real < 127.0f * scy) assert_true(got - real <= scy && real - got <= scy);
        }
    assert_int_equal(dt_lut_q8(&ta, t, &ty), 0);
    for (i = 0; i < 6 * 9; i++) assert_int_equal(y[i], (int8_t)(127 - a[i]));
}

/* floor(sqrt(v)) another way than the kernel's digit-by-digit root. */
static int64_t isqrt_ref(int64_t v)
{
    int64_t r = 0;
    while ((r + 1) * (r + 1) <= v) r++;
    return r;
}

/* softmax and LayerNorm over the last dim against loops from their documented formulas,
   and against the real functions of the dequantized rows (a few output steps). */
static void test_q8_rows(void **state)
{
    static int8_t x[5 * 16], y[5 * 16];
    static int32_t e[256], gq[16], bq[16];
    int32_t sh[2] = {5, 16}, i, k;
    float s_in = 0.05f, s_out = 0.04f;
    int64_t epsq = (int64_t)(1e-5 * 16 * 16 / (0.05 * 0.05) + 0.5);
    mb_tensor tx, ty;
    (void)state;
    for (i = 0; i < 5 * 16; i++) x[i] = (int8_t)((int32_t)(xs32() % 201u) - 100);
    for (i = 0; i < 256; i++) e[i] = (int32_t)(65536.0 * exp(-(double)s_in * i) + 0.5);
    for (i = 0; i < 16; i++) {
        gq[i] = (int32_t)((0.5 + 0.1 * i) / s_out * 65536.0 + 0.5);
        bq[i] = (int32_t)((0.2 * (i - 8)) / s_out * 65536.0);
    }
    mb_tensor_init(&tx, x, MB_I8, 2, sh);
    mb_tensor_init(&ty, y, MB_I8, 2, sh);
    assert_int_equal(dt_softmax_q8(&tx, e, &ty), 0);
    for (i = 0; i < 5; i++) {
        int32_t mx = -128;
        int64_t s = 0;
        double ds = 0.0;
        for (k = 0; k < 16; k++) mx = x[i * 16 + k] > mx ? x[i * 16 + k] : mx;
        for (k = 0; k < 16; k++) s += e[mx - x[i * 16 + k]], ds += exp((double)s_in * x[i * 16 + k]);
        for (k = 0; k < 16; k++) {
            double real = exp((double)s_in * x[i * 16 + k]) / ds;
            assert_int_equal(y[i * 16 + k], (int32_t)((254 * (int64_t)e[mx - x[i * 16 + k]] + s) / (2 * s)));
            assert_true(fabs(y[i * 16 + k] / 127.0 - real) <= 1.5 / 127.0);
        }
    }
    assert_int_equal(dt_layer_norm_q8(&tx, gq, bq, epsq, &ty), 0);
    for (i = 0; i < 5; i++) {
        int64_t s1 = 0, s2 = 0, r, num, den;
        double mean = 0.0, var = 0.0;
        for (k = 0; k < 16; k++) s1 += x[i * 16 + k], s2 += x[i * 16 + k] * x[i * 16 + k];
        r = isqrt_ref(16 * s2 - s1 * s1 + epsq);
        r = r < 1 ? 1 : r;
        den = r * 65536;
        for (k = 0; k < 16; k++) mean += x[i * 16 + k] * (double)s_in / 16.0;
        for (k = 0; k < 16; k++)
            var += (x[i * 16 + k] * (double)s_in - mean) * (x[i * 16 + k] * (double)s_in - mean) / 16.0;
        for (k = 0; k < 16; k++) {
            double real = (x[i * 16 + k] * (double)s_in - mean) / sqrt(var + 1e-5) * (0.5 + 0.1 * k) + 0.2 * (k - 8);
            int64_t q;
            num = (16 * x[i * 16 + k] - s1) * (int64_t)gq[k] + (int64_t)bq[k] * r;
            q = num >= 0 ? (num + den / 2) / den : -((-num + den / 2) / den);
            assert_int_equal(y[i * 16 + k], clamp8(q));
            if (real > -128.0 * s_out && real < 127.0 * s_out)
                assert_true(fabs(y[i * 16 + k] * (double)s_out - real) <= 2.0 * s_out);
        }
    }
    assert_int_equal(dt_layer_norm_q8(&tx, gq, bq, -1, &ty), DT_ERR_VALUE);
}

/* TFLite quantization_util_test.cc, QuantizeMultiplier / ...SmallerThanOne /
   ...GreaterThanOne (positive values). */
static void test_quantize_multiplier_golden(void **state)
{
    static const struct {
        double v;
        int32_t q, s;
    } g[] = {{0.0, 0, 0},
             {0.125, 1073741824, -2},
             {0.25, 1073741824, -1},
             {0.5, 1073741824, 0},
             {1.0, 1073741824, 1},
             {2.0, 1073741824, 2},
             {4.0, 1073741824, 3},
             {0.75, 1610612736, 0},
             {1 - 1e-9, 2147483646, 0},
             {1.25, 1342177280, 1},
             {1.75, 1879048192, 1},
             {2 - 1e-9, 2147483647, 1},
             {2 - 1e-11, 1073741824, 2},
             {1e-10, 1717986918, -33 + 0}};
    dt_qmul q;
    size_t i;
    (void)state;
    for (i = 0; i + 1 < sizeof g / sizeof g[0]; i++) {
        assert_int_equal(dt_quantize_multiplier(g[i].v, &q), 0);
        assert_int_equal(q.mult, g[i].q);
        assert_int_equal(q.shift, g[i].s);
    }
    /* below 2^-32 the shift would be < -31: TFLite's underflow gives 0, 0 */
    assert_int_equal(dt_quantize_multiplier(1e-10, &q), 0);
    assert_true(q.mult == 0 && q.shift == 0);
    q.mult = 5;
    assert_int_equal(dt_quantize_multiplier(-0.5, &q), DT_ERR_VALUE);
    assert_int_equal(dt_quantize_multiplier(1073741824.0, &q), DT_ERR_VALUE);
    assert_int_equal(dt_quantize_multiplier(1073741823.75, &q), DT_ERR_VALUE); /* rounds to 2^30 (fuzz) */
    assert_int_equal(dt_quantize_multiplier(1073741823.0, &q), 0);
    assert_true(q.mult == 2147483646 && q.shift == 30);
    q.mult = 5;
    assert_int_equal(dt_quantize_multiplier(0.0 / 0.0, &q), DT_ERR_VALUE);
    assert_int_equal(q.mult, 5);
    assert_int_equal(dt_quantize_multiplier(0.5, NULL), DT_ERR_NULL);
}

/* TFLite's multipliers: QuantizeMultiplier((double)sa * sb / sy), formed without floating
   point, so these are every target's answers; the values are TFLite's reference re-derived in
   numpy (tests/torch/tflite_qmul.py checks thousands of random ones per run). */
static void test_qmm_multipliers_tflite(void **state)
{
    static const struct {
        float sa, sb, sy;
        int32_t q, s;
    } g[] = {
        {0.652019f, 0.0165054f, 0.070717f, 1307231021, -2},          /* float32 arithmetic: 1307230976 */
        {0.7490527033805847f, 1.10546875f, 0.03125f, 1778233189, 5}, /* q * 2^31 = ...188.5 exactly */
        {1e20f, 1e20f, 1e38f, 1677721721, 7},                        /* the float product would overflow */
        {1e-40f, 1e-3f, 1e-42f, 1717072665, -3},                     /* subnormal scales */
        {-0.5f, -0.25f, 1.0f, 1073741824, -2},                       /* as the double expression: 0.125 */
        {0.0f, 0.5f, 0.25f, 0, 0},
        {-0.0f, 0.5f, 0.25f, 0, 0},
        {0.5f, 0.5f, INFINITY, 0, 0}, /* x / inf = 0 */
    };
    static const float bad[][3] = {{0.5f, 0.5f, 0.0f},
                                   {0.0f, 0.5f, 0.0f},
                                   {INFINITY, 0.5f, 1.0f},
                                   {INFINITY, 0.0f, 1.0f},
                                   {0.5f, 0.5f, -1.0f},
                                   {0.5f, NAN, 1.0f},
                                   {8.0f, 1.0f, 7.450580596923828e-9f} /* 2^30 */};
    dt_qmul q[2];
    float sb[2];
    size_t i;
    (void)state;
    for (i = 0; i < sizeof g / sizeof g[0]; i++) {
        sb[0] = sb[1] = g[i].sb;
        assert_int_equal(dt_qmm_multipliers(g[i].sa, sb, 2, g[i].sy, q), 0);
        assert_int_equal(q[0].mult, g[i].q);
        assert_int_equal(q[0].shift, g[i].s);
        assert_int_equal(q[1].mult, g[i].q);
        assert_int_equal(q[1].shift, g[i].s);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        q[0].mult = 5;
        sb[0] = 0.5f;
        sb[1] = bad[i][1];
        assert_int_equal(dt_qmm_multipliers(bad[i][0], sb, 2, bad[i][2], q), DT_ERR_VALUE);
        assert_int_equal(q[0].mult, 5); /* nothing written */
    }
}

/* TFLite's FULLY_CONNECTED with one weight scale: GetQuantizedConvolutionMultipler's float
   product sa * sb, then / sy in double (tests/torch/tflite_qmul.py checks random ones). */
static void test_qlinear_multiplier_tflite(void **state)
{
    static const struct {
        float sa, sb, sy;
        int32_t q, s;
    } g[] = {
        {0.652019f, 0.0165054f, 0.070717f, 1307231029, -2},          /* dt_qmm_multipliers: 1307231021 */
        {0.7490527033805847f, 1.10546875f, 0.03125f, 1778233216, 5}, /* ...: 1778233189 */
        {1e-40f, 1e-3f, 1e-42f, 1708362342, -3},                     /* a subnormal product */
        {-0.5f, -0.25f, 1.0f, 1073741824, -2},
        {1e-30f, 1e-30f, 1.0f, 0, 0}, /* the float product underflows to 0 */
    };
    dt_qmul q;
    size_t i;
    (void)state;
    for (i = 0; i < sizeof g / sizeof g[0]; i++) {
        assert_int_equal(dt_qlinear_multiplier(g[i].sa, g[i].sb, g[i].sy, &q), 0);
        assert_int_equal(q.mult, g[i].q);
        assert_int_equal(q.shift, g[i].s);
    }
    q.mult = 5;
    assert_int_equal(dt_qlinear_multiplier(1e20f, 1e20f, 1e38f, &q), DT_ERR_VALUE); /* inf product */
    assert_int_equal(dt_qlinear_multiplier(0.5f, 0.5f, 0.0f, &q), DT_ERR_VALUE);
    assert_int_equal(q.mult, 5);
    assert_int_equal(dt_qlinear_multiplier(0.5f, 0.5f, 1.0f, NULL), DT_ERR_NULL);
}

/* gemmlowp by hand: SRDHM(a, b) = (a*b + (a*b >= 0 ? 2^30 : 1 - 2^30)) / 2^31 truncated;
   RoundingDivideByPOT(x, r) rounds half away from zero. */
static void test_mul_qmul_by_hand(void **state)
{
    dt_qmul half = {1073741824, 0}, quarter = {1073741824, -1}, two = {1073741824, 2}, m = {INT32_MIN, 0};
    (void)state;
    assert_int_equal(dt_mul_qmul(3, half), 2);      /* 1.5 -> 2 */
    assert_int_equal(dt_mul_qmul(-3, half), -1);    /* SRDHM's nudge: -1.5 -> -1 (as TFLite) */
    assert_int_equal(dt_mul_qmul(6, quarter), 2);   /* SRDHM 3, 3/2 = 1.5 -> 2 */
    assert_int_equal(dt_mul_qmul(-6, quarter), -2); /* SRDHM -3, -1.5 -> -2 */
    assert_int_equal(dt_mul_qmul(5, quarter), 2);   /* SRDHM 2.5 -> 3, 3/2 -> 2: double rounding */
    assert_int_equal(dt_mul_qmul(5, two), 10);
    assert_int_equal(dt_mul_qmul(1 << 30, two), 1 << 30);   /* 2^32 saturates to INT32_MAX, then x 0.5 */
    assert_int_equal(dt_mul_qmul(INT32_MIN, m), INT32_MAX); /* SRDHM's one overflow */
    assert_int_equal(dt_requant_i8(1000, half), 127);
    assert_int_equal(dt_requant_i8(-1000, half), -128);
    assert_int_equal(dt_requant_i8(-255, half), -127);
    assert_int_equal(dt_requant_i8(-257, half), -128);
}

/* Within one unit of x * real for any multiplier (two roundings). */
static void test_mul_qmul_close(void **state)
{
    int i;
    (void)state;
    for (i = 0; i < 20000; i++) {
        double real = (double)(xs32() % 1000000u + 1u) / 250000.0 * ((i & 3) == 0 ? 1e-4 : 1.0);
        int32_t x = (int32_t)(xs32() % (1u << 25)) - (1 << 24);
        dt_qmul q;
        double want, got;
        assert_int_equal(dt_quantize_multiplier(real, &q), 0);
        assert_true(q.mult >= (1 << 30) && q.shift <= 30 && q.shift >= -31);
        want = (double)x * real;
        got = (double)dt_mul_qmul(x, q);
        assert_true(got - want <= 1.0 + 1e-6 * (want < 0 ? -want : want) &&
                    want - got <= 1.0 + 1e-6 * (want < 0 ? -want : want));
    }
}

/* torch: MinMaxObserver symmetric scale = max(amax / 127.5, eps); quantize_val rounds
   x * (1/scale) to nearest even and clamps. */
static void test_torch_quantize(void **state)
{
    float s = 0.0f;
    static float x[2][3] = {{0.5f, -1.0f, 0.25f}, {4.0f, 2.0f, -8.0f}};
    static int8_t q[2][3];
    static const int32_t sh[2] = {2, 3};
    float sc[3];
    mb_tensor xt, qt;
    (void)state;
    assert_int_equal(dt_q8_scale(127.5f, &s), 0);
    assert_true(s == 1.0f);
    assert_int_equal(dt_q8_scale(0.0f, &s), 0);
    assert_true(s == 1.1920928955078125e-7f);
    assert_int_equal(dt_q8_scale(-1.0f, &s), DT_ERR_VALUE);
    assert_int_equal(dt_quantize_i8(0.5f, 1.0f), 0);
    assert_int_equal(dt_quantize_i8(1.5f, 1.0f), 2);
    assert_int_equal(dt_quantize_i8(2.5f, 1.0f), 2);
    assert_int_equal(dt_quantize_i8(-1.5f, 1.0f), -2);
    assert_int_equal(dt_quantize_i8(-2.5f, 1.0f), -2);
    assert_int_equal(dt_quantize_i8(127.5f, 1.0f), 127);
    assert_int_equal(dt_quantize_i8(-128.5f, 1.0f), -128);
    assert_int_equal(dt_quantize_i8(1e30f, 1.0f), 127);
    assert_int_equal(dt_quantize_i8(0.0f / 0.0f, 1.0f), 0);
    assert_int_equal(dt_quantize_i8(3.0f, 0.5f), 6);
    mb_tensor_init(&xt, x, MB_F32, 2, sh);
    mb_tensor_init(&qt, q, MB_I8, 2, sh);
    /* per tensor: amax 8 -> scale 8/127.5; 4 -> 63.75 -> 64, 0.25 -> 3.98 -> 4 */
    assert_int_equal(dt_quantize_tensor(&xt, -1, sc, &qt), 0);
    assert_true(sc[0] == 8.0f / 127.5f);
    /* float 1/scale = 15.937499: -8 -> -127.499992 -> -127, as torch's float arithmetic */
    assert_int_equal(q[1][2], -127);
    assert_int_equal(q[1][0], 64); /* 63.7499962 */
    assert_int_equal(q[0][2], 4);
    /* per channel of dim 1: amax 4, 2, 8 */
    assert_int_equal(dt_quantize_tensor(&xt, 1, sc, &qt), 0);
    assert_true(sc[0] == 4.0f / 127.5f && sc[1] == 2.0f / 127.5f && sc[2] == 8.0f / 127.5f);
    assert_int_equal(q[1][0], 127); /* 127.499992 */
    assert_int_equal(q[0][1], -64); /* -63.75 */
    x[0][0] = 1.0f / 0.0f;
    memset(q, 0x5a, sizeof q);
    sc[0] = 3.0f;
    assert_int_equal(dt_quantize_tensor(&xt, 1, sc, &qt), DT_ERR_VALUE);
    assert_true(sc[0] == 3.0f && q[0][0] == 0x5a);
    x[0][0] = 0.5f;
}

/* dt_qmm_ref against an int64 loop, per tensor and per channel, and linear through w^T. */
#define MM 12
#define KK 40
#define NN 10
static int8_t A[MM * KK], B[KK * NN], W[NN * KK], Y[MM * NN], Y2[MM * NN];
static int32_t ACC[MM * NN];

static void test_qmm_ref(void **state)
{
    static const int32_t sa[2] = {MM, KK}, sb[2] = {KK, NN}, sy[2] = {MM, NN}, sw[2] = {NN, KK};
    mb_tensor a, b, y, w, wt;
    dt_qmul q[NN];
    float sbs[NN];
    int i, j, k, nq, saturated = 0;
    (void)state;
    for (i = 0; i < MM * KK; i++) A[i] = (int8_t)(xs32() & 0xff);
    for (i = 0; i < KK * NN; i++) B[i] = (int8_t)(xs32() & 0xff);
    for (j = 0; j < NN; j++) sbs[j] = 0.01f + 0.003f * (float)j;
    for (i = 0; i < NN; i++) /* W = B^T: linear(x, W) == mm(x, B) */
        for (k = 0; k < KK; k++) W[i * KK + k] = B[k * NN + i];
    mb_tensor_init(&a, A, MB_I8, 2, sa);
    mb_tensor_init(&b, B, MB_I8, 2, sb);
    mb_tensor_init(&y, Y, MB_I8, 2, sy);
    mb_tensor_init(&w, W, MB_I8, 2, sw);
    wt = w; /* the transposed view */
    wt.shape[0] = KK;
    wt.shape[1] = NN;
    wt.stride[0] = 1;
    wt.stride[1] = KK;
    assert_int_equal(dt_qmm_multipliers(0.02f, sbs, NN, 0.15f, q), 0);
    for (nq = 1; nq <= NN; nq += NN - 1) {
        assert_int_equal(dt_qmm_ref(&a, &b, q, nq, &y, ACC, sizeof ACC), 0);
        for (i = 0; i < MM; i++)
            for (j = 0; j < NN; j++) {
                int64_t s = 0;
                int32_t v;
                for (k = 0; k < KK; k++) s += (int64_t)A[i * KK + k] * B[k * NN + j];
                v = dt_mul_qmul((int32_t)s, q[nq == 1 ? 0 : j]);
                v = v > 127 ? 127 : v < -128 ? -128 : v;
                saturated += v == 127 || v == -128;
                assert_int_equal(Y[i * NN + j], v);
            }
        mb_tensor_init(&y, Y2, MB_I8, 2, sy);
        assert_int_equal(dt_qmm_ref(&a, &wt, q, nq, &y, ACC, sizeof ACC), 0); /* strided path */
        assert_memory_equal(Y, Y2, sizeof Y);
        mb_tensor_init(&y, Y, MB_I8, 2, sy);
    }
    assert_true(saturated > 0 && saturated < MM * NN); /* both paths of the clamp */
    /* bad input: nothing written */
    memset(Y2, 0x33, sizeof Y2);
    mb_tensor_init(&y, Y2, MB_I8, 2, sy);
    assert_int_equal(dt_qmm_ref(&a, &b, q, NN, &y, ACC, 4), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_qmm_ref(&a, &b, q, 3, &y, ACC, sizeof ACC), DT_ERR_SHAPE);
    assert_int_equal(dt_qmm_ref(&a, &a, q, 1, &y, ACC, sizeof ACC), DT_ERR_SHAPE);
    assert_int_equal(dt_qmm_ref(&a, &b, NULL, 1, &y, ACC, sizeof ACC), DT_ERR_NULL);
    b.dtype = MB_U8;
    assert_int_equal(dt_qmm_ref(&a, &b, q, 1, &y, ACC, sizeof ACC), DT_ERR_DTYPE);
    for (i = 0; i < MM * NN; i++) assert_int_equal(Y2[i], 0x33);
}

/* dt_requant_tensor along dim 0 (the walker), the last dim (the row path) and one
   multiplier, on a contiguous and a transposed accumulator. */
static void test_requant_tensor_dims(void **state)
{
    static int32_t acc[3][5];
    static int8_t out[3][5], outt[5][3];
    static const int32_t sh[2] = {3, 5}, sht[2] = {5, 3};
    dt_qmul q[6];
    mb_tensor ta, to, tt, tot;
    int i, j, qd;
    (void)state;
    for (i = 0; i < 6; i++) assert_int_equal(dt_quantize_multiplier(0.01 * (i + 1), &q[i]), 0);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 5; j++) acc[i][j] = (int32_t)(xs32() % 40001u) - 20000;
    mb_tensor_init(&ta, acc, MB_I32, 2, sh);
    mb_tensor_init(&to, out, MB_I8, 2, sh);
    tt = ta; /* acc^T as a view */
    tt.shape[0] = 5;
    tt.shape[1] = 3;
    tt.stride[0] = 1;
    tt.stride[1] = 5;
    mb_tensor_init(&tot, outt, MB_I8, 2, sht);
    for (qd = 0; qd < 2; qd++) {
        assert_int_equal(dt_requant_tensor(&ta, q, 6, 1, qd, &to), 0);
        assert_int_equal(dt_requant_tensor(&tt, q, 6, 1, 1 - qd, &tot), 0);
        for (i = 0; i < 3; i++)
            for (j = 0; j < 5; j++) {
                int8_t want = dt_requant_i8(acc[i][j], q[1 + (qd ? j : i)]);
                assert_int_equal(out[i][j], want);
                assert_int_equal(outt[j][i], want);
            }
    }
    assert_int_equal(dt_requant_tensor(&ta, q, 1, 0, 7, &to), 0); /* one multiplier: qdim unused */
    for (i = 0; i < 3; i++)
        for (j = 0; j < 5; j++) assert_int_equal(out[i][j], dt_requant_i8(acc[i][j], q[0]));
}

static void test_qmm_propagate(void **state)
{
    static const int32_t two[2] = {2, 2}, sa[2] = {8, 6}, sb[2] = {6, 4};
    static const dt_placement R = DT_REPLICATE(), S0 = DT_SHARD(0), S1 = DT_SHARD(1), P = DT_PARTIAL(DT_SUM);
    dt_mesh m;
    dt_spec a, b, o;
    dt_placement pa[2], pb[2];
    uint32_t mask;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 2, two, NULL, 0), 0);
    pa[0] = S1;
    pb[0] = S0;
    pa[1] = S0;
    pb[1] = R;
    assert_int_equal(dt_spec_init(&a, &m, pa, 2, MB_I8, 2, sa, NULL), 0);
    assert_int_equal(dt_spec_init(&b, &m, pb, 2, MB_I8, 2, sb, NULL), 0);
    assert_int_equal(dt_qmm_propagate(&a, &b, &o, &mask), 0);
    assert_int_equal(mask, 1u);
    assert_true(o.placements[0].kind == DT_KIND_REPLICATE && o.placements[1].kind == DT_KIND_SHARD &&
                o.placements[1].arg == 0 && o.dtype == MB_I8 && o.shape[0] == 8 && o.shape[1] == 4);
    pa[0] = R;
    pb[0] = S1;
    pa[1] = R;
    pb[1] = R;
    assert_int_equal(dt_spec_init(&a, &m, pa, 2, MB_I8, 2, sa, NULL), 0);
    assert_int_equal(dt_spec_init(&b, &m, pb, 2, MB_I8, 2, sb, NULL), 0);
    assert_int_equal(dt_qmm_propagate(&a, &b, &o, &mask), 0);
    assert_true(mask == 0 && o.placements[0].kind == DT_KIND_SHARD && o.placements[0].arg == 1);
    pa[0] = S0;
    pb[0] = S0; /* not a strategy */
    assert_int_equal(dt_spec_init(&a, &m, pa, 2, MB_I8, 2, sa, NULL), 0);
    assert_int_equal(dt_spec_init(&b, &m, pb, 2, MB_I8, 2, sb, NULL), 0);
    assert_int_equal(dt_qmm_propagate(&a, &b, &o, &mask), DT_ERR_NO_STRATEGY);
    pa[0] = P;
    pb[0] = R; /* int8 Partial inputs are not accepted */
    assert_int_equal(dt_spec_init(&a, &m, pa, 2, MB_I8, 2, sa, NULL), 0);
    assert_int_equal(dt_qmm_propagate(&a, &b, &o, &mask), DT_ERR_NO_STRATEGY);
    assert_int_equal(dt_spec_init(&a, &m, pa, 2, MB_F32, 2, sa, NULL), 0);
    assert_int_equal(dt_qmm_propagate(&a, &b, &o, &mask), DT_ERR_DTYPE);
}

/* ---- dt_qmm over pg_pthread ---- */
#define NR 4
#define GM 13
#define GK 18
#define GN 11
static pg_pthread_world world;
static dt_mesh dm[NR];
static dt_comm dc[NR];
static int8_t ga[GM * GK], gb[GK * GN], ref[2][GM * GN], yout[NR][GM * GN];
static int32_t scr[NR][GM * GN], refacc[GM * GN];
static dt_qmul gq[GN];
static int ncases[NR];

typedef struct qcase {
    int nd;
    int32_t ms[2];
    int32_t m, k, n;
} qcase;

#define CHECK(c)                                                                 \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "rank %d: check failed at line %d\n", me, __LINE__); \
            return __LINE__;                                                     \
        }                                                                        \
    } while (0)

static int body(pg_group *g, void *arg)
{
    const qcase *qc = (const qcase *)arg;
    static const dt_placement R = DT_REPLICATE(), S0 = DT_SHARD(0), S1 = DT_SHARD(1);
    const dt_placement sa[4] = {R, S0, R, S1}, sb[4] = {R, R, S1, S0}; /* per mesh dim: 4 strategies */
    int me = pg_rank(g), combo, ncombo = qc->nd == 1 ? 4 : 16, nq, i, j;
    int32_t gsa[2], gsb[2], gso[2], off[2], sh[2];
    CHECK(pg_set_timeout(g, 5000) == 0);
    CHECK(dt_mesh_init(&dm[me], qc->nd, qc->ms, NULL, me) == 0);
    CHECK(dt_comm_init(&dc[me], &dm[me], g) == 0);
    gsa[0] = qc->m;
    gsa[1] = qc->k;
    gsb[0] = qc->k;
    gsb[1] = qc->n;
    gso[0] = qc->m;
    gso[1] = qc->n;
    for (combo = 0; combo < ncombo; combo++)
        for (nq = 0; nq < 2; nq++) {
            dt_tensor a, b, y;
            dt_placement pa[2], pb[2];
            mb_tensor ta, tb, gy;
            size_t need;
            int32_t ln;
            pa[0] = sa[qc->nd == 1 ? combo : combo / 4];
            pb[0] = sb[qc->nd == 1 ? combo : combo / 4];
            pa[1] = sa[combo % 4];
            pb[1] = sb[combo % 4];
            CHECK(dt_spec_init(&a.spec, &dm[me], pa, qc->nd, MB_I8, 2, gsa, NULL) == 0);
            CHECK(dt_spec_init(&b.spec, &dm[me], pb, qc->nd, MB_I8, 2, gsb, NULL) == 0);
            mb_tensor_init(&ta, ga, MB_I8, 2, gsa);
            mb_tensor_init(&tb, gb, MB_I8, 2, gsb);
            CHECK(dt_local_view(&a.spec, me, &ta, &a.local) == 0); /* strided views of the globals */
            CHECK(dt_local_view(&b.spec, me, &tb, &b.local) == 0);
            CHECK(dt_qmm_scratch_bytes(&a.spec, &b.spec, me, &need) == 0);
            CHECK(dt_qmm(&dc[me], &a, &b, gq, nq ? qc->n : 1, &y, yout[me], sizeof yout[me], scr[me],
                         need ? need - 1 : 0) == (need ? DT_ERR_TOO_SMALL : 0));
            memset(yout[me], 0x7e, sizeof yout[me]);
            CHECK(dt_qmm(&dc[me], &a, &b, gq, nq ? qc->n : 1, &y, yout[me], sizeof yout[me], scr[me], need) == 0);
            CHECK(y.spec.dtype == MB_I8 && y.spec.shape[0] == qc->m && y.spec.shape[1] == qc->n);
            CHECK(dt_local_shape(&y.spec, me, sh, off) == 0);
            CHECK(y.local.shape[0] == sh[0] && y.local.shape[1] == sh[1] && y.local.data == (void *)yout[me]);
            CHECK(need == 4u * (size_t)sh[0] * (size_t)sh[1]);
            /* bit-exact: the slice of the single-rank result */
            mb_tensor_init(&gy, ref[nq], MB_I8, 2, gso);
            for (i = 0; i < sh[0]; i++)
                for (j = 0; j < sh[1]; j++)
                    CHECK(yout[me][i * sh[1] + j] == ref[nq][(off[0] + i) * qc->n + off[1] + j]);
            ln = sh[0] * sh[1];
            CHECK(ln == (int32_t)sizeof yout[me] || yout[me][ln] == 0x7e); /* nothing past it */
            ncases[me]++;
            (void)gy;
        }
    return 0;
}

static void run_case(int nranks, int nd, int32_t m0, int32_t m1, int32_t m, int32_t k, int32_t n)
{
    static const int32_t nq2[2] = {1, 0};
    qcase qc;
    mb_tensor a, b, y;
    int32_t sa[2], sb[2], sy[2];
    float sbs[GN];
    int i, nq;
    qc.nd = nd;
    qc.ms[0] = m0;
    qc.ms[1] = m1;
    qc.m = m;
    qc.k = k;
    qc.n = n;
    sa[0] = m;
    sa[1] = k;
    sb[0] = k;
    sb[1] = n;
    sy[0] = m;
    sy[1] = n;
    for (i = 0; i < m * k; i++) ga[i] = (int8_t)(xs32() & 0xff);
    for (i = 0; i < k * n; i++) gb[i] = (int8_t)(xs32() & 0xff);
    for (i = 0; i < n; i++) sbs[i] = 0.004f + 0.0017f * (float)i;
    assert_int_equal(dt_qmm_multipliers(0.05f, sbs, n, 1.0f, gq), 0);
    mb_tensor_init(&a, ga, MB_I8, 2, sa);
    mb_tensor_init(&b, gb, MB_I8, 2, sb);
    for (nq = 0; nq < 2; nq++) {
        mb_tensor_init(&y, ref[nq], MB_I8, 2, sy);
        assert_int_equal(dt_qmm_ref(&a, &b, gq, nq2[nq] ? 1 : n, &y, refacc, sizeof refacc), 0);
    }
    memset(ncases, 0, sizeof ncases);
    assert_int_equal(pg_pthread_run(&world, nranks, body, &qc), 0);
    for (i = 0; i < nranks; i++) assert_int_equal(ncases[i], 2 * (nd == 1 ? 4 : 16));
}

static void test_qmm_2ranks(void **state)
{
    (void)state;
    run_case(2, 1, 2, 1, 8, 16, 10);
    run_case(2, 1, 2, 1, 7, 13, 9); /* uneven */
}

static void test_qmm_4ranks(void **state)
{
    (void)state;
    run_case(4, 1, 4, 1, 8, 16, 8);
    run_case(4, 1, 4, 1, 13, 18, 11); /* uneven, ranks with 3 and fewer rows */
    run_case(4, 1, 4, 1, 3, 5, 2);    /* empty shards */
}

static void test_qmm_2x2(void **state)
{
    (void)state;
    run_case(4, 2, 2, 2, 8, 16, 8);
    run_case(4, 2, 2, 2, 13, 17, 11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_multiplier_golden),
        cmocka_unit_test(test_qmm_multipliers_tflite),
        cmocka_unit_test(test_qlinear_multiplier_tflite),
        cmocka_unit_test(test_mul_qmul_by_hand),
        cmocka_unit_test(test_mul_qmul_close),
        cmocka_unit_test(test_torch_quantize),
        cmocka_unit_test(test_qmm_ref),
        cmocka_unit_test(test_requant_tensor_dims),
        cmocka_unit_test(test_qmm_propagate),
        cmocka_unit_test(test_qmm_2ranks),
        cmocka_unit_test(test_qmm_4ranks),
        cmocka_unit_test(test_qmm_2x2),
        cmocka_unit_test(test_q8_elementwise),
        cmocka_unit_test(test_q8_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
