/* dtensor_qconv.h — DTensor int8 conv2d: dtensor_conv.h with dtensor_quant.h's requantization (splitcore)

   int8 conv2d, single-rank and sharded: the one place where the conv and int8 modules
   meet, so that a program using f32 convolution does not build int8 and one using int8
   mm does not build convolution. Symmetric int8 (zero point 0): in and w MB_I8 (w with
   per-tensor or per-output-channel scales), every sum exact in int32, an optional
   MB_I32 bias, requantized by dt_requant_i8; sharded as dt_conv2d (batch, output
   channels, rows with a halo exchange), every rank's output bit-exact the slice of the
   single-rank result. Max pool takes int8 as is (dtensor_conv.h). No heap, C99,
   C++-clean. Includes dtensor_conv.h and dtensor_quant.h.

   Example (a 3x3 int8 conv2d with ReLU of one 2-channel 6x6 image on one rank):
       #define SPLITCORE_IMPLEMENTATION  // this header and every one it includes
       #include <splitcore/dtensor_qconv.h>
       static int8_t x[2 * 6 * 6], w[4 * 2 * 3 * 3], y[4 * 4 * 4];
       int32_t xs[4] = {1, 2, 6, 6}, ws[4] = {4, 2, 3, 3}, ys[4] = {1, 4, 4, 4};
       dt_conv2d_params p = DT_CONV2D(DT_NCHW, 1, 0, 1, 1);
       float sw[1] = {0.01f};  dt_qmul q;  mb_tensor in, wt, out;
       mb_tensor_init(&in, x, MB_I8, 4, xs);  mb_tensor_init(&wt, w, MB_I8, 4, ws);
       mb_tensor_init(&out, y, MB_I8, 4, ys);
       dt_qmm_multipliers(0.05f, sw, 1, 0.1f, &q);       // input 0.05, weight 0.01, output 0.1
       int rc = dt_conv2d_q8_ref(&p, &in, &wt, NULL, &q, 1, 1, &out);  // dt_conv2d_q8: sharded

   Contents:
       1. Configuration macros     2. int8 conv2d     3. Implementation (DTENSOR_QCONV_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; those of
   dtensor_conv.h, dtensor_quant.h and dtensor.h apply too):
       DTENSOR_QCONV_IMPLEMENTATION  emit the definitions (exactly one .c file, the one that
                                     implements dtensor_conv.h and dtensor_quant.h; or
                                     SPLITCORE_IMPLEMENTATION)
       DTENSOR_QCONV_STATIC          make every function static to its translation unit

   Errors are dtensor.h's (DT_ERR_*, dt_strerror()), as dtensor_conv.h's calls give them;
   a bad multiplier count (nq) is DT_ERR_SHAPE, q NULL DT_ERR_NULL. Bad input never writes
   to the caller's outputs (docs/error-contract.md lists every case). */
#ifndef DTENSOR_QCONV_H
#define DTENSOR_QCONV_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "dtensor_conv.h"
#include "dtensor_quant.h"
#if SPLITCORE_VERSION != 200
#error "dtensor_qconv.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(DTENSOR_QCONV_IMPLEMENTATION)
#define DTENSOR_QCONV_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(DTENSOR_QCONV_STATIC)
#define DTENSOR_QCONV_STATIC
#endif
#ifdef DTENSOR_QCONV_STATIC
#define DT_QCONV_API static
#else
#define DT_QCONV_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. int8 conv2d ---------------------------------------------------------------
   dtensor_quant.h's symmetric int8 (zero point 0): in and w MB_I8 (w with per-tensor or
   per-output-channel scales), every sum exact in int32 (C_in / groups * KH * KW <=
   DT_QMM_MAX_K, else DT_ERR_SHAPE), plus an optional MB_I32 bias [C_out] (scale
   s_in * s_w[oc], zero point 0, as TFLite; added with int32 saturation), requantized by
   dt_requant_i8 with q[0] (nq == 1) or q[oc] (nq == C_out; from dt_qmm_multipliers(s_in,
   s_w, C_out, s_out, q)); relu != 0: max(y, 0) afterwards. Padding is 0 (zero point 0).
   dt_maxpool2d / dt_maxpool2d_ref take int8 as is (the max of one scale's int8 values is
   the int8 of the max). dt_conv2d_q8 shards as dt_conv2d, every rank's output bit-exact
   the slice of the single-rank result; bias is this rank's slice, q all C_out entries
   (nq == 1 or the global C_out) on every rank. Bad nq: DT_ERR_SHAPE; q NULL: DT_ERR_NULL. */
DT_QCONV_API int dt_conv2d_q8_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w,
                                  const mb_tensor *bias, const dt_qmul *q, int nq, int relu, mb_tensor *out);
DT_QCONV_API int dt_conv2d_q8(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                              const mb_tensor *bias, const dt_qmul *q, int nq, int relu, dt_spec *out_spec,
                              mb_tensor *out, void *scratch, size_t scratch_bytes);

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_QCONV_H */

/* ---- 3. Implementation ----------------------------------------------------------- */
#if defined(DTENSOR_QCONV_IMPLEMENTATION) && !defined(DTENSOR_QCONV_IMPLEMENTED)
#define DTENSOR_QCONV_IMPLEMENTED
#if !defined(DTENSOR_CONV_IMPLEMENTATION) && \
    (defined(DTENSOR_CONV_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor_qconv.h: DTENSOR_QCONV_IMPLEMENTATION needs DTENSOR_CONV_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif
#if !defined(DTENSOR_QUANT_IMPLEMENTATION) && \
    (defined(DTENSOR_QUANT_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor_qconv.h: DTENSOR_QCONV_IMPLEMENTATION needs DTENSOR_QUANT_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DTENSOR_QCONV_STATIC
#define DT_QCONV__DEF static
#else
#define DT_QCONV__DEF
#endif
typedef struct dt__q8args {
    const dt_qmul *q;
    int nq, relu;
} dt__q8args;

#define DT__Q8_ROW 64 /* output columns accumulated at once (int32, on the stack) */

/* acc[0..n) += a * x[0..n): a constant inner trip count, so gcc -O2 vectorizes it. */
static void dt__q8_axpy(int32_t *DT_RESTRICT acc, const int8_t *DT_RESTRICT x, int32_t a, int32_t n)
{
    int32_t j, k;
    for (j = 0; j + 16 <= n; j += 16)
        for (k = 0; k < 16; k++) acc[j + k] += a * (int32_t)x[j + k];
    for (; j < n; j++) acc[j] += a * (int32_t)x[j];
}

/* int8 conv2d on a window: int32 sums per output element (a row of up to DT__Q8_ROW
   columns at a time, one input row and kernel tap after another: integer sums, so any
   order gives the same bits), + bias, requantized. */
static void dt__kern_q8(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *w,
                        const dt__c4 *y, const mb_tensor *bias, const void *extra)
{
    const dt__q8args *a = (const dt__q8args *)extra;
    int32_t n, oc, oh, o0, icg, kh, kw, j, icpg = w->c, ocpg = wn->oc / p->groups, s = p->stride[1];
    int32_t acc[DT__Q8_ROW];
    for (n = 0; n < y->n; n++)
        for (oc = 0; oc < y->c; oc++) {
            int32_t ic0 = (wn->oc0 + oc) / ocpg * icpg;
            int64_t b = bias ? ((const int32_t *)bias->data)[(size_t)oc * (size_t)bias->stride[0]] : 0;
            dt_qmul q = a->q[a->nq > 1 ? wn->oc0 + oc : 0];
            for (oh = 0; oh < y->h; oh++)
                for (o0 = 0; o0 < y->w; o0 += DT__Q8_ROW) {
                    int32_t len = y->w - o0 < DT__Q8_ROW ? y->w - o0 : DT__Q8_ROW;
                    for (j = 0; j < len; j++) acc[j] = 0;
                    for (icg = 0; icg < icpg; icg++)
                        for (kh = 0; kh < w->h; kh++) {
                            int64_t ih =
                                (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
                            if (ih < 0 || ih >= wn->h) continue;
                            for (kw = 0; kw < w->w; kw++) {
                                int64_t off = (int64_t)kw * p->dilation[1] - p->padding[1];
                                int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s,
                                        hi = (int64_t)x->w - 1 - off < 0 ? 0 : ((int64_t)x->w - 1 - off) / s + 1;
                                int32_t wv = *DT__I8(w, oc, icg, kh, kw);
                                const int8_t *xr = DT__I8(x, n, ic0 + icg, ih - wn->row0, 0);
                                if (lo < o0) lo = o0;
                                if (hi > o0 + len) hi = o0 + len;
                                if (lo >= hi) continue;
                                if (s == 1 && x->sw == 1) {
                                    dt__q8_axpy(acc + (lo - o0), xr + lo + off, wv, (int32_t)(hi - lo));
                                } else {
                                    int64_t o;
                                    for (o = lo; o < hi; o++)
                                        acc[o - o0] += wv * (int32_t)xr[(o * s + off) * (int64_t)x->sw];
                                }
                            }
                        }
                    for (j = 0; j < len; j++) {
                        int64_t t = (int64_t)acc[j] + b;
                        int8_t v;
                        t = t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : t;
                        v = dt_requant_i8((int32_t)t, q);
                        *DT__I8(y, n, oc, oh, o0 + j) = (int8_t)(a->relu && v < 0 ? 0 : v);
                    }
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

DT_QCONV__DEF int dt_conv2d_q8_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w,
                                   const mb_tensor *bias, const dt_qmul *q, int nq, int relu, mb_tensor *out)
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

DT_QCONV__DEF int dt_conv2d_q8(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                               const mb_tensor *bias, const dt_qmul *q, int nq, int relu, dt_spec *out_spec,
                               mb_tensor *out, void *scratch, size_t scratch_bytes)
{
    dt__q8args a;
    int rc = w ? dt__q8_check(w->spec.shape, q, nq) : DT_ERR_NULL;
    if (rc) return rc;
    a.q = q;
    a.nq = nq;
    a.relu = relu;
    return dt__sharded(c, p, in, w, bias, MB_I8, dt__kern_q8, &a, out_spec, out, scratch, scratch_bytes);
}

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_QCONV_IMPLEMENTATION */
