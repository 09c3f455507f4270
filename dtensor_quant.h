/* dtensor_quant.h — DTensor int8: quantization, fixed-point requantization, int8 mm, sharded int8 mm (splitcore)

   int8 quantized linear/mm for DTensors on top of the core (dtensor.h): torch's
   symmetric observers and quantize_per_tensor, TFLite/gemmlowp's fixed-point
   requantization (one deterministic function, no float on the device), an exact int32
   int8 matmul (blocked and vectorised by gcc -O2), and dt_qmm, which runs it on
   DTensors with mm's strategies on the placements the inputs have, an int32 Partial(sum)
   all-reduced before requantization: every rank's output is bit-exact the slice of the
   single-rank result. int8 conv2d is dtensor_qconv.h. No heap, C99, C++-clean. Includes
   dtensor.h.

   Example (y = requant(a @ b) on one rank, per-tensor scales):
       #define SPLITCORE_IMPLEMENTATION  // this header, dtensor.h, microbatch.h, pg.h
       #include <splitcore/dtensor_quant.h>
       static int8_t a[4 * 8], b[8 * 2], y[4 * 2];  static int32_t acc[4 * 2];
       int32_t as[2] = {4, 8}, bs[2] = {8, 2}, ys[2] = {4, 2};
       float sb[1] = {0.02f};  dt_qmul q;  mb_tensor ta, tb, ty;
       mb_tensor_init(&ta, a, MB_I8, 2, as);  mb_tensor_init(&tb, b, MB_I8, 2, bs);
       mb_tensor_init(&ty, y, MB_I8, 2, ys);
       dt_qmm_multipliers(0.05f, sb, 1, 0.1f, &q);        // a's scale 0.05, b's 0.02, y's 0.1
       int rc = dt_qmm_ref(&ta, &tb, &q, 1, &ty, acc, sizeof acc);  // dt_qmm: the same, sharded

   Contents:
       1. Configuration macros             3. Sharded int8 mm
       2. Quantization, requantization,    4. Implementation (DTENSOR_QUANT_IMPLEMENTATION)
          int8 mm

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; section 1 has
   each default; dtensor.h's apply too):
       DTENSOR_QUANT_IMPLEMENTATION  emit the definitions (exactly one .c file, the one
                                     that implements dtensor.h; or SPLITCORE_IMPLEMENTATION)
       DTENSOR_QUANT_STATIC          make every function static to its translation unit
       DT_QMM_BLOCK_K                int8 mm: rows of b per block (default 64)
       DT_QMM_BLOCK_N                int8 mm: columns of b per block (default 256)

   Errors are dtensor.h's (DT_ERR_*, dt_strerror()): DT_ERR_VALUE for a multiplier or
   scale out of range, DT_ERR_SHAPE, DT_ERR_DTYPE, DT_ERR_NO_STRATEGY for placements
   without a strategy, DT_ERR_COMM for a failed all-reduce (the pg_err in dt_comm.err).
   Bad input never writes to the caller's outputs (docs/error-contract.md lists every
   case).

   Threads, memory: everything but dt_qmm works only on its arguments; dt_qmm blocks in
   ports/pg.h (never from an ISR; every rank of the mesh calls it in the same order).
   Accumulators are the caller's scratch (dt_qmm_scratch_bytes). */
#ifndef DTENSOR_QUANT_H
#define DTENSOR_QUANT_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "dtensor.h"
#if SPLITCORE_VERSION != 200
#error "dtensor_quant.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(DTENSOR_QUANT_IMPLEMENTATION)
#define DTENSOR_QUANT_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(DTENSOR_QUANT_STATIC)
#define DTENSOR_QUANT_STATIC
#endif
#ifndef DT_QMM_BLOCK_K
#define DT_QMM_BLOCK_K 64 /* int8 mm: rows of b per block (k), kept in cache for every row of a */
#endif
#if DT_QMM_BLOCK_K < 1
#error "DT_QMM_BLOCK_K must be >= 1"
#endif
#ifndef DT_QMM_BLOCK_N
#define DT_QMM_BLOCK_N 256 /* int8 mm: columns of b per block (n) */
#endif
#if DT_QMM_BLOCK_N < 1
#error "DT_QMM_BLOCK_N must be >= 1"
#endif
#ifdef DTENSOR_QUANT_STATIC
#define DT_QUANT_API static
#else
#define DT_QUANT_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Quantization, requantization, int8 mm -----------------------------------------
   Symmetric int8 (zero point 0) as torch's per_tensor_symmetric / per_channel_symmetric
   observers and quantize_per_tensor: dt_q8_scale, dt_quantize_i8. A product is exact in
   int32 (K <= DT_QMM_MAX_K) and requantized to int8 by ONE deterministic function, the
   TFLite/gemmlowp fixed-point one (no float on the device):
     dt_quantize_multiplier(real): real = mult * 2^(shift - 31), mult in [2^30, 2^31)
       (frexp, then round(q * 2^31) half away from zero; 2^31 -> 2^30 with shift + 1;
       shift < -31 -> mult 0, shift 0), TFLite's QuantizeMultiplier;
     dt_mul_qmul(x, q) = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(
       x * 2^max(shift, 0), mult), max(-shift, 0)), TFLite's MultiplyByQuantizedMultiplier
       (the left shift saturates to int32, where TFLite's overflows; any int32 shift is
       taken, one past +-31 as +-31: dt_mul_qmul cannot fail);
     dt_requant_i8(acc, q) = clamp(dt_mul_qmul(acc, q), -128, 127).
   For y = a @ b with scales sa, sb[n] and output scale sy, channel n's multiplier is
   dt_quantize_multiplier((double)sa * sb[n] / sy), TFLite's effective scale in double for
   conv and per-channel weights (dt_qmm_multipliers: the same bits on every target, no double
   arithmetic); TFLite's FULLY_CONNECTED with one weight scale rounds sa * sb to float first
   (dt_qlinear_multiplier). A fused ReLU is
   max(y, 0) afterwards (zero point 0). linear(x, w) is dt_qmm(x, w^T): pass w [N,K] as
   its transposed view (strides swapped) and the per-output-channel scales of w's rows. */
typedef struct dt_qmul {
    int32_t mult;  /* Q31 fixed point in [2^30, 2^31), or 0 */
    int32_t shift; /* power of two: real = mult * 2^(shift - 31); -31..30 */
} dt_qmul;
#define DT_QMM_MAX_K 131071 /* (2^31 - 1) / (128 * 128): K products of -128 * -128 still fit int32 */
/* DT_ERR_VALUE unless 0 <= real < 2^30 after rounding (NaN refused). */
DT_QUANT_API int dt_quantize_multiplier(double real, dt_qmul *q);
DT_QUANT_API int32_t dt_mul_qmul(int32_t x, dt_qmul q);
DT_QUANT_API int8_t dt_requant_i8(int32_t acc, dt_qmul q);
/* torch's symmetric observer scale: max(amax / 127.5, FLT_EPSILON) for amax = max |x|
   (DT_ERR_VALUE for a negative, infinite or NaN amax). */
DT_QUANT_API int dt_q8_scale(float amax, float *scale);
/* torch's quantize_val: clamp(nearbyint(x * (1 / scale)), -128, 127), ties to even
   (NaN gives 0). */
DT_QUANT_API int8_t dt_quantize_i8(float x, float scale);
/* Quantize f32 x into int8 q (same shape, any strides) with scales from its amax: one
   scale (channel_dim < 0) or one per index of channel_dim (scales[x.shape[channel_dim]]),
   as torch's MinMaxObserver / PerChannelMinMaxObserver with the symmetric qschemes. */
DT_QUANT_API int dt_quantize_tensor(const mb_tensor *x, int channel_dim, float *scales, mb_tensor *q);
/* q[n] = dt_quantize_multiplier((double)sa * sb[n] / sy) for n < nb, as TFLite computes the
   effective scale of every int8 conv and of a FULLY_CONNECTED with per-channel weight scales
   (PopulateConvolutionQuantizationParams, the per-channel loop): bit-exact on every target,
   with no double arithmetic (the quotient is formed in integers). */
DT_QUANT_API int dt_qmm_multipliers(float sa, const float *sb, int nb, float sy, dt_qmul *q);
/* *q = dt_quantize_multiplier((double)(float)(sa * sb) / sy), TFLite's FULLY_CONNECTED with one
   weight scale (GetQuantizedConvolutionMultipler: the scales' product is a float product);
   an infinite product is refused (DT_ERR_VALUE). Bit-exact on every target, as above. */
DT_QUANT_API int dt_qlinear_multiplier(float sa, float sb, float sy, dt_qmul *q);
/* acc (MB_I32 [M,N]) = a (MB_I8 [M,K]) @ b (MB_I8 [K,N]) in int32; any strides. */
DT_QUANT_API int dt_qmm_acc(const mb_tensor *a, const mb_tensor *b, mb_tensor *acc);
/* out (MB_I8) = dt_requant_i8(acc (MB_I32, same shape)) elementwise, with q[0] (nq == 1)
   or q[q0 + i] for index i along qdim (nq >= q0 + out.shape[qdim]). Any strides. */
DT_QUANT_API int dt_requant_tensor(const mb_tensor *acc, const dt_qmul *q, int nq, int32_t q0, int qdim,
                                   mb_tensor *out);
/* Single rank: out [M,N] = requant(a @ b) with nq = 1 or N multipliers; acc_scratch holds
   M*N int32 (acc_bytes >= 4*M*N, 4-byte aligned). */
DT_QUANT_API int dt_qmm_ref(const mb_tensor *a, const mb_tensor *b, const dt_qmul *q, int nq, mb_tensor *out,
                            void *acc_scratch, size_t acc_bytes);
/* int8 elementwise, table and row ops, TFLite's int8 forms with zero points 0 (tensors of
   one shape, any strides; b may be a broadcast view with zero strides):
     dt_add_q8   y = clamp(M(M(a << 20, q[0]) + M(b << 20, q[1]), q[2])), M = dt_mul_qmul:
                 TFLite's ADD (left shift 20, each input rescaled to twice the larger input
                 scale); dt_add_q8_multipliers gives q[3] for scales sa, sb, sy.
     dt_mul_q8   y = dt_requant_i8(a * b, q), q from sa * sb / sy (TFLite's MUL).
     dt_lut_q8   y = table[x + 128]: any elementwise function of one int8 scale to another
                 (sigmoid, tanh, GELU: TFLite's int8 LUTs), the table built on the host.
     dt_softmax_q8  over the last dim, integer only: e_i = exp_table[max - x_i] (the table
                 holds round(2^16 exp(-s_in d)) for d = 0..255), y_i = floor((254 e_i + S) /
                 (2 S)) with S = sum e_i: round(127 e_i / S), the output scale 1/127.
     dt_layer_norm_q8  over the last dim D (<= 65536), integer only: S1 = sum x, S2 = sum x^2,
                 r = max(isqrt(D S2 - S1^2 + epsq), 1) (= D std / s_in), y_i = round half away
                 from zero of ((D x_i - S1) gq_i + bq_i r) / (r 2^16), clamped; gq_i =
                 round(2^16 gamma_i / s_out), bq_i = round(2^16 beta_i / s_out), epsq =
                 round(eps D^2 / s_in^2) in 0..2^46.
   DT_ERR_NULL, DT_ERR_MISMATCH (shapes differ), DT_ERR_SHAPE (D), DT_ERR_DTYPE (not MB_I8),
   DT_ERR_VALUE (epsq, the scales). */
#define DT_ADD_Q8_SHIFT 20 /* TFLite's left shift of int8 ADD's inputs */
DT_QUANT_API int dt_add_q8_multipliers(float sa, float sb, float sy, dt_qmul *q);
DT_QUANT_API int dt_add_q8(const mb_tensor *a, const mb_tensor *b, const dt_qmul *q, mb_tensor *out);
DT_QUANT_API int dt_mul_q8(const mb_tensor *a, const mb_tensor *b, dt_qmul q, mb_tensor *out);
DT_QUANT_API int dt_lut_q8(const mb_tensor *x, const int8_t *table, mb_tensor *out);
DT_QUANT_API int dt_softmax_q8(const mb_tensor *x, const int32_t *exp_table, mb_tensor *out);
DT_QUANT_API int dt_layer_norm_q8(const mb_tensor *x, const int32_t *gq, const int32_t *bq, int64_t epsq,
                                  mb_tensor *out);

/* ---- 3. Sharded int8 mm ------------------------------------------------------------
   Sharded (dt_qmm): per mesh dim, as mm's strategies, on the placements the inputs have
   (no redistribution): S(0),R -> S(0); R,S(1) -> S(1) (each rank uses its columns'
   multipliers); S(1),S(0) -> an int32 Partial(sum) all-reduced over that mesh dim BEFORE
   requantization -> Replicate; R,R -> R; anything else DT_ERR_NO_STRATEGY. Every rank's
   output is bit-exact the slice of the single-rank result. */
/* The output spec (MB_I8, Replicate where a Partial was reduced) and a bit mask of the
   mesh dims whose int32 Partial(sum) dt_qmm all-reduces (may be NULL). */
DT_QUANT_API int dt_qmm_propagate(const dt_spec *a, const dt_spec *b, dt_spec *out, uint32_t *partial_dims);
/* Scratch of dt_qmm on world rank `rank`: its local M*N int32 accumulator. */
DT_QUANT_API int dt_qmm_scratch_bytes(const dt_spec *a, const dt_spec *b, int rank, size_t *bytes);
/* Distributed: out = requant(a @ b) with a, b MB_I8 dt_tensors on c's mesh, q[nq] (1, or
   N >= 1 = the global columns: every rank passes all of them). out's local tensor is
   contiguous in out_data (out_bytes >= its bytes); scratch as dt_qmm_scratch_bytes (4-byte
   aligned). Validates everything before communicating. */
DT_QUANT_API int dt_qmm(dt_comm *c, const dt_tensor *a, const dt_tensor *b, const dt_qmul *q, int nq, dt_tensor *out,
                        void *out_data, size_t out_bytes, void *scratch, size_t scratch_bytes);

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_QUANT_H */

/* ---- 4. Implementation ----------------------------------------------------------- */
#if defined(DTENSOR_QUANT_IMPLEMENTATION) && !defined(DTENSOR_QUANT_IMPLEMENTED)
#define DTENSOR_QUANT_IMPLEMENTED
#if !defined(DTENSOR_IMPLEMENTATION) && (defined(DTENSOR_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor_quant.h: DTENSOR_QUANT_IMPLEMENTATION needs DTENSOR_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DTENSOR_QUANT_STATIC
#define DT_QUANT__DEF static
#else
#define DT_QUANT__DEF
#endif

/* TFLite's QuantizeMultiplier from frexp's form of a positive binary64 value: real =
   (mant / 2^53) * 2^shift with mant in [2^52, 2^53): mult = round(mant / 2^22) half away from
   0 (2^31 -> 2^30 with shift + 1); shift < -31 -> 0, 0; shift > 30 refused. */
static DT__NOINLINE int dt__qmul_frexp(uint64_t mant, int32_t shift, dt_qmul *q)
{
    int64_t m = (int64_t)((mant + ((uint64_t)1 << 21)) >> 22);
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

DT_QUANT__DEF int dt_quantize_multiplier(double real, dt_qmul *q)
{
    uint64_t bits;
    if (!q) return DT_ERR_NULL;
    if (!(real >= 0.0 && real < 1073741824.0)) return DT_ERR_VALUE; /* NaN fails too */
    DT_MEMCPY(&bits, &real, sizeof bits);                           /* IEEE binary64 */
    if (!((bits >> 52) & 0x7ffu)) {                                 /* 0 or subnormal: far below 2^-31 */
        q->mult = 0;
        q->shift = 0;
        return DT_OK;
    }
    return dt__qmul_frexp((bits & (((uint64_t)1 << 52) - 1u)) | ((uint64_t)1 << 52),
                          (int32_t)((bits >> 52) & 0x7ffu) - 1022, q);
}

DT_QUANT__DEF int32_t dt_mul_qmul(int32_t x, dt_qmul q)
{
    int64_t xs = (int64_t)x, ab;
    int32_t a, hm, r;
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
    /* RoundingDivideByPOT(hm, r): round half away from zero; a shift past -31 as -31 */
    r = q.shift >= 0 ? 0 : q.shift < -31 ? 31 : -q.shift;
    mask = r ? (((uint32_t)1 << r) - 1u) : 0u;
    rem = (uint32_t)hm & mask;
    thr = (mask >> 1) + (hm < 0 ? 1u : 0u);
    hm = hm < 0 ? ~(int32_t)(~hm >> r) : (int32_t)(hm >> r); /* floor: no signed right shift */
    return hm + (rem > thr ? 1 : 0);
}

DT_QUANT__DEF int8_t dt_requant_i8(int32_t acc, dt_qmul q)
{
    int32_t v = dt_mul_qmul(acc, q);
    return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
}

DT_QUANT__DEF int dt_q8_scale(float amax, float *scale)
{
    float s;
    if (!scale) return DT_ERR_NULL;
    if (!(amax >= 0.0f && amax <= 3.402823466e38f)) return DT_ERR_VALUE;
    s = amax / 127.5f;
    *scale = s > 1.1920928955078125e-7f ? s : 1.1920928955078125e-7f; /* torch: max(scale, eps) */
    return DT_OK;
}

DT_QUANT__DEF int8_t dt_quantize_i8(float x, float scale)
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

/* Offset (elements) of t's element at row-major index i over its dims [0, nd). */
static size_t dt__q_off(const mb_tensor *t, int nd, int64_t i)
{
    size_t off = 0;
    int d;
    for (d = nd - 1; d >= 0; d--) {
        off += (size_t)(i % t->shape[d]) * (size_t)t->stride[d];
        i /= t->shape[d];
    }
    return off;
}

/* The elementwise int8 ops: 0 add, 1 mul, 2 table. */
static int dt__q8_map(int kind, const mb_tensor *a, const mb_tensor *b, const dt_qmul *q, const int8_t *tab,
                      mb_tensor *out)
{
    int rc = dt__pair(a, MB_I8, out, MB_I8);
    int64_t i, n;
    if (!rc && kind < 2) rc = dt__pair(b, MB_I8, out, MB_I8);
    if (!rc && !(kind == 2 ? (const void *)tab : (const void *)q)) rc = DT_ERR_NULL;
    if (rc) return rc;
    n = mb_numel(out);
    for (i = 0; i < n; i++) {
        int32_t x = ((const int8_t *)a->data)[dt__q_off(a, a->ndim, i)], v;
        int32_t y = kind < 2 ? ((const int8_t *)b->data)[dt__q_off(b, b->ndim, i)] : 0;
        if (kind == 0)
            v = dt_mul_qmul(
                dt_mul_qmul(x * (1 << DT_ADD_Q8_SHIFT), q[0]) + dt_mul_qmul(y * (1 << DT_ADD_Q8_SHIFT), q[1]), q[2]);
        else if (kind == 1)
            v = dt_mul_qmul(x * y, q[0]);
        else
            v = tab[x + 128];
        ((int8_t *)out->data)[dt__q_off(out, out->ndim, i)] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
    return DT_OK;
}

DT_QUANT__DEF int dt_add_q8_multipliers(float sa, float sb, float sy, dt_qmul *q)
{
    double twice = 2.0 * (double)(sa > sb ? sa : sb);
    dt_qmul t[3];
    int rc;
    if (!q) return DT_ERR_NULL;
    if (!(sa > 0.0f && sb > 0.0f && sy > 0.0f)) return DT_ERR_VALUE; /* NaN too */
    if ((rc = dt_quantize_multiplier((double)sa / twice, &t[0])) ||
        (rc = dt_quantize_multiplier((double)sb / twice, &t[1])) ||
        (rc = dt_quantize_multiplier(twice / ((double)(1 << DT_ADD_Q8_SHIFT) * (double)sy), &t[2])))
        return rc;
    DT_MEMCPY(q, t, sizeof t);
    return DT_OK;
}

DT_QUANT__DEF int dt_add_q8(const mb_tensor *a, const mb_tensor *b, const dt_qmul *q, mb_tensor *out)
{
    return dt__q8_map(0, a, b, q, NULL, out);
}

DT_QUANT__DEF int dt_mul_q8(const mb_tensor *a, const mb_tensor *b, dt_qmul q, mb_tensor *out)
{
    return dt__q8_map(1, a, b, &q, NULL, out);
}

DT_QUANT__DEF int dt_lut_q8(const mb_tensor *x, const int8_t *table, mb_tensor *out)
{
    return dt__q8_map(2, x, NULL, NULL, table, out);
}

/* floor(sqrt(v)) (digit by digit). */
static uint64_t dt__isqrt64(uint64_t v)
{
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > v) bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

/* Softmax (mode 0) or LayerNorm (mode 1) of every last-dim row of x into out. */
static int dt__q8_rows(int mode, const mb_tensor *x, const int32_t *t0, const int32_t *t1, int64_t epsq, mb_tensor *out)
{
    int rc = dt__pair(x, MB_I8, out, MB_I8);
    int64_t row, rows, d, k;
    if (!rc && (!t0 || (mode && !t1))) rc = DT_ERR_NULL;
    if (!rc && (x->ndim < 1 || x->shape[x->ndim - 1] < 1 || x->shape[x->ndim - 1] > 65536)) rc = DT_ERR_SHAPE;
    if (!rc && mode && (epsq < 0 || epsq > ((int64_t)1 << 46))) rc = DT_ERR_VALUE;
    if (rc) return rc;
    d = x->shape[x->ndim - 1];
    rows = mb_numel(x) / d;
    for (row = 0; row < rows; row++) {
        const int8_t *xr = (const int8_t *)x->data + dt__q_off(x, x->ndim - 1, row);
        int8_t *yr = (int8_t *)out->data + dt__q_off(out, out->ndim - 1, row);
        ptrdiff_t xs = x->stride[x->ndim - 1], ys = out->stride[out->ndim - 1];
        int64_t s1 = 0, s2 = 0;
        int32_t mx = -128;
        for (k = 0; k < d; k++) {
            int32_t v = xr[k * xs];
            s1 += v;
            s2 += (int64_t)v * v;
            if (v > mx) mx = v;
        }
        if (mode == 0) {
            int64_t e, s = 0;
            for (k = 0; k < d; k++) s += t0[mx - xr[k * xs]];
            for (k = 0; k < d; k++) {
                e = t0[mx - xr[k * xs]];
                yr[k * ys] = (int8_t)(s > 0 ? (254 * e + s) / (2 * s) : 0);
            }
        } else {
            int64_t r = (int64_t)dt__isqrt64((uint64_t)(d * s2 - s1 * s1 + epsq)), den, num, q;
            if (r < 1) r = 1;
            den = r << 16;
            for (k = 0; k < d; k++) {
                num = (d * xr[k * xs] - s1) * t0[k] + (int64_t)t1[k] * r;
                q = num >= 0 ? (num + den / 2) / den : -((-num + den / 2) / den);
                yr[k * ys] = (int8_t)(q > 127 ? 127 : q < -128 ? -128 : q);
            }
        }
    }
    return DT_OK;
}

DT_QUANT__DEF int dt_softmax_q8(const mb_tensor *x, const int32_t *exp_table, mb_tensor *out)
{
    return dt__q8_rows(0, x, exp_table, NULL, 0, out);
}

DT_QUANT__DEF int dt_layer_norm_q8(const mb_tensor *x, const int32_t *gq, const int32_t *bq, int64_t epsq,
                                   mb_tensor *out)
{
    return dt__q8_rows(1, x, gq, bq, epsq, out);
}

/* dt_quantize_tensor's passes over x (mb_walk): 0 refuses an infinite or NaN value, 1 takes
   each channel's amax into scales, 2 writes q. */
typedef struct dt__qpass {
    int pass, cdim;
    float *scales;
} dt__qpass;

static int dt__quantize_at(void *user, void *x, void *q, const int32_t *idx)
{
    const dt__qpass *p = (const dt__qpass *)user;
    float v = *(const float *)x, *s = &p->scales[p->cdim >= 0 ? idx[p->cdim] : 0];
    if (p->pass == 0) return v <= 3.402823466e38f && v >= -3.402823466e38f ? DT_OK : DT_ERR_VALUE;
    if (p->pass == 2) {
        *(int8_t *)q = dt_quantize_i8(v, *s);
    } else {
        v = v < 0.0f ? -v : v;
        if (v > *s) *s = v;
    }
    return DT_OK;
}

DT_QUANT__DEF int dt_quantize_tensor(const mb_tensor *x, int channel_dim, float *scales, mb_tensor *q)
{
    dt__qpass p;
    int32_t c, nc = 1;
    int rc = dt__pair(x, MB_F32, q, MB_I8);
    if (rc) return rc;
    if (!scales) return DT_ERR_NULL;
    if (channel_dim >= 0) {
        if (channel_dim >= x->ndim) return DT_ERR_DIM;
        nc = x->shape[channel_dim];
    }
    p.cdim = channel_dim;
    p.scales = scales;
    for (p.pass = 0; p.pass < 3; p.pass++) {
        rc = mb_walk(x, q, dt__quantize_at, &p); /* pass 0 fails before anything is written */
        if (rc) return rc;
        for (c = 0; c < nc; c++) {
            if (p.pass == 0) scales[c] = 0.0f;
            if (p.pass == 1) dt_q8_scale(scales[c], &scales[c]);
        }
    }
    return DT_OK;
}

/* dt_quantize_multiplier((double)sa * sb / sy) computed exactly without floating point, so
   that a device without double hardware gets TFLite's multiplier (and no soft-double code):
   each scale is m * 2^x with an integer m < 2^24, the product of two is exact (48 bits) and
   the quotient is rounded to 53 bits to nearest even, as the binary64 division is. Other
   operands give what the double expression gives: a NaN, infinite or negative result is
   refused, +-0 is 0 (the float product cannot overflow or underflow in double). */
static int dt__qmul_of(float sa, float sb, float sy, dt_qmul *q)
{
    float f[3];
    uint32_t u, m[3], sign = 0, inf = 0, zero = 0, r = 0;
    int32_t e = -150 + 2 + 48 + 53, x, k;
    uint64_t n, quo = 0;
    f[0] = sa;
    f[1] = sb;
    f[2] = sy;
    for (k = 0; k < 3; k++) {
        DT_MEMCPY(&u, &f[k], sizeof u);
        sign ^= u >> 31;
        m[k] = u & 0x7fffffu;
        x = (int32_t)(u >> 23 & 0xffu);
        if (x == 0xff) {
            if (m[k]) return DT_ERR_VALUE; /* NaN */
            inf |= 1u << k;
        } else {
            if (x) m[k] |= 0x800000u;
            zero |= (uint32_t)!m[k] << k;
            x += !x; /* a subnormal's exponent is the smallest normal one's */
        }
        e += k == 2 ? -x : x;
    }
    if ((inf & 3u) || (zero & 4u)) return DT_ERR_VALUE; /* inf or NaN: inf x, x / 0 */
    if ((zero & 3u) || inf) {                           /* 0 x finite, finite / inf */
        q->mult = q->shift = 0;
        return DT_OK;
    }
    if (sign) return DT_ERR_VALUE;
    /* long division of the 48-bit n by m[2], one bit a step (zeros past n's bits) until the
       quotient has 55 bits; r is the remainder */
    for (n = (uint64_t)m[0] * m[1]; quo < (uint64_t)1 << 54; e--) {
        r = r << 1 | (uint32_t)(n >> 47 & 1u);
        n <<= 1;
        quo <<= 1;
        if (r >= m[2]) {
            r -= m[2];
            quo |= 1u;
        }
    }
    /* to 53 bits, nearest even: the 2 bits dropped and the remainder decide (2^53 after
       rounding up is 2^31 after the next rounding, which dt__qmul_frexp handles) */
    n = quo >> 2;
    if ((quo & 2u) && ((quo & 1u) || r || (n & 1u))) n++;
    return dt__qmul_frexp(n, e, q);
}

DT_QUANT__DEF int dt_qmm_multipliers(float sa, const float *sb, int nb, float sy, dt_qmul *q)
{
    int i, rc = DT_OK;
    dt_qmul t;
    if (!sb || !q) return DT_ERR_NULL;
    if (nb < 1) return DT_ERR_SHAPE;
    for (i = 0; i < nb && !rc; i++) rc = dt__qmul_of(sa, sb[i], sy, &t);
    for (i = 0; i < nb && !rc; i++) dt__qmul_of(sa, sb[i], sy, &q[i]);
    return rc;
}

DT_QUANT__DEF int dt_qlinear_multiplier(float sa, float sb, float sy, dt_qmul *q)
{
    float p = sa * sb; /* rounded to float, as TFLite's product of the two float scales */
    if (!q) return DT_ERR_NULL;
    return dt__qmul_of(p, 1.0f, sy, q); /* (double)p * 1.0 is (double)p exactly */
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

DT_QUANT__DEF int dt_qmm_acc(const mb_tensor *a, const mb_tensor *b, mb_tensor *acc)
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
        for (k0 = 0; k0 < K; k0 += DT_QMM_BLOCK_K)
            for (n0 = 0; n0 < N; n0 += DT_QMM_BLOCK_N)
                for (m = 0; m < M; m++) {
                    int32_t *c = C + (ptrdiff_t)m * acc->stride[0];
                    const int8_t *ar = A + (ptrdiff_t)m * a->stride[0];
                    k1 = K - k0 < DT_QMM_BLOCK_K ? K : k0 + DT_QMM_BLOCK_K;
                    n1 = N - n0 < DT_QMM_BLOCK_N ? N : n0 + DT_QMM_BLOCK_N;
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

/* dt_requant_tensor's walk (mb_walk): one element with its multiplier. */
typedef struct dt__rq {
    const dt_qmul *q;
    int nq, qdim;
    int32_t q0;
} dt__rq;

static int dt__requant_at(void *user, void *acc, void *out, const int32_t *idx)
{
    const dt__rq *r = (const dt__rq *)user;
    *(int8_t *)out = dt_requant_i8(*(const int32_t *)acc, r->q[r->nq > 1 ? r->q0 + idx[r->qdim] : 0]);
    return DT_OK;
}

DT_QUANT__DEF int dt_requant_tensor(const mb_tensor *acc, const dt_qmul *q, int nq, int32_t q0, int qdim,
                                    mb_tensor *out)
{
    dt__rq r;
    int64_t n, i;
    int rc = dt__pair(acc, MB_I32, out, MB_I8);
    if (rc) return rc;
    if (!q) return DT_ERR_NULL;
    if (nq > 1 && (qdim < 0 || qdim >= acc->ndim)) return DT_ERR_DIM;
    if (nq < 1 || q0 < 0 || (nq > 1 && (int64_t)nq < (int64_t)q0 + acc->shape[qdim])) return DT_ERR_SHAPE;
    n = mb_numel(acc);
    if (n > 0 && mb_is_contiguous(acc) > 0 && mb_is_contiguous(out) > 0 && (nq == 1 || qdim == acc->ndim - 1)) {
        const int32_t *sp = (const int32_t *)acc->data; /* rows of the last dim: no walk */
        int8_t *op = (int8_t *)out->data;
        int32_t j, last = acc->ndim ? acc->shape[acc->ndim - 1] : 1;
        for (i = 0; i < n; i += last)
            for (j = 0; j < last; j++) op[i + j] = dt_requant_i8(sp[i + j], q[nq > 1 ? q0 + j : 0]);
        return DT_OK;
    }
    r.q = q;
    r.nq = nq;
    r.qdim = qdim;
    r.q0 = q0;
    return mb_walk(acc, out, dt__requant_at, &r);
}

DT_QUANT__DEF int dt_qmm_ref(const mb_tensor *a, const mb_tensor *b, const dt_qmul *q, int nq, mb_tensor *out,
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

DT_QUANT__DEF int dt_qmm_propagate(const dt_spec *a, const dt_spec *b, dt_spec *out, uint32_t *partial_dims)
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

DT_QUANT__DEF int dt_qmm_scratch_bytes(const dt_spec *a, const dt_spec *b, int rank, size_t *bytes)
{
    dt_spec o;
    int rc = dt_qmm_propagate(a, b, &o, NULL);
    if (!rc && !bytes) rc = DT_ERR_NULL;
    if (!rc) rc = dt_local_bytes(&o, rank, bytes);
    if (!rc) *bytes *= 4; /* int32 per int8 output */
    return rc;
}

DT_QUANT__DEF int dt_qmm(dt_comm *c, const dt_tensor *a, const dt_tensor *b, const dt_qmul *q, int nq, dt_tensor *out,
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
    if (!rc) rc = dt__comm_check(c, a->spec.mesh); /* c serves a's mesh, this rank a member, not a copy */
    if (!rc && (nq < 1 || (nq != 1 && nq != o.shape[1])))
        rc = DT_ERR_SHAPE; /* dt_requant_tensor's rule, before any message */
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

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_QUANT_IMPLEMENTATION */
