/* test_conv.c — dtensor_conv.h and dtensor_qconv.h: conv2d, max pool and average pool.
   Local kernels against naive loops written from torch's definitions (conv2d = cross-
   correlation with zero padding, dilation and groups; max_pool2d with -inf padding and
   the first maximum) in NCHW and NHWC, forward and backward; then the sharded forms on
   pg_pthread with 2 and 4 ranks (batch, output-channel and spatial H sharding with halo
   exchange; uneven heights, stride 2, dilation 2, padding, groups, thin shards whose
   halo spans several ranks): every rank's shard must equal the matching slice of the
   single-rank result bit for bit. The sharded backward on 2, 3 and 4 ranks against the
   single-rank backward: Partial gradients summed by dt_redistribute, within rounding;
   the rest bit for bit (spatial grad_in: on the rows no peer's window reaches).
   A bare-metal board (tests/target/sse200_smp) defines CONV_BOARD (its core count) and
   gives conv_run(): the sharded cases then run on its cores over pg_shm, for that rank
   count only. */
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
#define DTENSOR_CONV_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_QCONV_IMPLEMENTATION
#include "dtensor_qconv.h"
#ifndef CONV_BOARD
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#endif

#define MAXE 8192 /* elements of any test tensor */

typedef struct ccase {
    int layout;
    int32_t n, c, h, w, oc, kh, kw, stride, pad, dil, groups;
    int bias;
    int pool; /* max pool (kernel kh x kw) instead of conv */
} ccase;

static float xin[MAXE], wt[MAXE], bs[64], yref[MAXE], ynaive[MAXE];
/* int8 run: inputs, weights, int32 bias, per-channel multipliers, the single-rank output */
static int8_t xq[MAXE], wq[MAXE], yq[MAXE];
static int32_t bq[64];
static dt_qmul qm[64];
static int cur_q8;

/* Deterministic values in [-1, 1). */
static float val(uint32_t i, uint32_t seed)
{
    uint32_t h = (i + 1u) * 2654435761u ^ seed * 40503u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return (float)(h % 2001u) / 1000.0f - 1.0f;
}

/* Index of canonical (n, c, h, w) in a contiguous tensor of the layout. */
static size_t at(int layout, const int32_t *cs, int32_t n, int32_t c, int32_t h, int32_t w)
{
    if (layout == DT_NHWC) return (((size_t)n * cs[2] + h) * cs[3] + w) * cs[1] + c;
    return (((size_t)n * cs[1] + c) * cs[2] + h) * cs[3] + w;
}

static void shape_of(int layout, const int32_t *cs, int32_t *s)
{
    s[0] = cs[0];
    if (layout == DT_NHWC) {
        s[1] = cs[2], s[2] = cs[3], s[3] = cs[1];
    } else {
        s[1] = cs[1], s[2] = cs[2], s[3] = cs[3];
    }
}

static dt_conv2d_params params(const ccase *k)
{
    dt_conv2d_params p;
    memset(&p, 0, sizeof p);
    p.layout = k->layout;
    p.stride[0] = p.stride[1] = k->stride;
    p.padding[0] = p.padding[1] = k->pad;
    p.dilation[0] = p.dilation[1] = k->dil;
    p.groups = k->groups;
    p.kernel[0] = k->kh;
    p.kernel[1] = k->kw;
    return p;
}

static int32_t osz(int32_t in, int32_t k, const ccase *c)
{
    return (in + 2 * c->pad - c->dil * (k - 1) - 1) / c->stride + 1;
}

/* Naive forward from the definitions: ynaive (contiguous, layout), canonical out shape co. */
static void naive_fwd(const ccase *k, int32_t *co)
{
    int32_t ci[4] = {k->n, k->c, k->h, k->w}, n, o, y, x, c, i, j;
    co[0] = k->n;
    co[1] = k->pool ? k->c : k->oc;
    co[2] = osz(k->h, k->kh, k);
    co[3] = osz(k->w, k->kw, k);
    for (n = 0; n < co[0]; n++)
        for (o = 0; o < co[1]; o++)
            for (y = 0; y < co[2]; y++)
                for (x = 0; x < co[3]; x++) {
                    double s = k->bias && !k->pool ? bs[o] : 0.0;
                    float best = -INFINITY;
                    int32_t cpg = k->pool ? 1 : k->c / k->groups, g = k->pool ? o : o / (k->oc / k->groups) * cpg;
                    for (c = 0; c < cpg; c++)
                        for (i = 0; i < k->kh; i++)
                            for (j = 0; j < k->kw; j++) {
                                int32_t ih = y * k->stride - k->pad + i * k->dil,
                                        iw = x * k->stride - k->pad + j * k->dil;
                                float v;
                                if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w) continue;
                                v = xin[at(k->layout, ci, n, g + c, ih, iw)];
                                if (k->pool) {
                                    if (v > best) best = v;
                                } else {
                                    s += (double)v * wt[(((size_t)o * cpg + c) * k->kh + i) * k->kw + j];
                                }
                            }
                    ynaive[at(k->layout, co, n, o, y, x)] = k->pool ? best : (float)s;
                }
}

static void fill(const ccase *k)
{
    int i;
    for (i = 0; i < MAXE; i++) {
        xin[i] = val((uint32_t)i, 1);
        wt[i] = val((uint32_t)i, 2);
    }
    for (i = 0; i < 64; i++) bs[i] = val((uint32_t)i, 3);
    /* int8: full range values, per-channel scales, bias in s_in * s_w[oc] units */
    for (i = 0; i < MAXE; i++) {
        xq[i] = (int8_t)((i * 37 + 11) % 255 - 127);
        wq[i] = (int8_t)((i * 53 + 5) % 255 - 127);
    }
    for (i = 0; i < 64; i++) {
        float sw = 0.002f + 0.0005f * (float)(i % 7);
        bq[i] = (i * 7919) % 40001 - 20000;
        assert_int_equal(dt_qmm_multipliers(0.02f, &sw, 1, 0.9f + 0.05f * (float)(i % 5), &qm[i]), 0);
    }
    (void)k;
}

/* Single-rank reference through the API into yref; tensors for it in *tx, *tw, *tb, *ty. */
static void run_ref(const ccase *k, mb_tensor *tx, mb_tensor *tw, mb_tensor *tb, mb_tensor *ty, int32_t *co)
{
    int32_t ci[4] = {k->n, k->c, k->h, k->w}, s[4], ws[4] = {k->oc, k->c / (k->groups ? k->groups : 1), k->kh, k->kw};
    dt_conv2d_params p = params(k);
    naive_fwd(k, co);
    shape_of(k->layout, ci, s);
    assert_int_equal(mb_tensor_init(tx, xin, MB_F32, 4, s), 0);
    assert_int_equal(mb_tensor_init(tw, wt, MB_F32, 4, ws), 0);
    assert_int_equal(mb_tensor_init(tb, bs, MB_F32, 1, &k->oc), 0);
    shape_of(k->layout, co, s);
    assert_int_equal(mb_tensor_init(ty, yref, MB_F32, 4, s), 0);
    if (cur_q8) { /* the same through the int8 kernels into yq */
        tx->data = xq, tx->dtype = MB_I8;
        tw->data = wq, tw->dtype = MB_I8;
        tb->data = bq, tb->dtype = MB_I32;
        ty->data = yq, ty->dtype = MB_I8;
    }
    if (k->pool)
        assert_int_equal(dt_maxpool2d_ref(&p, tx, ty), 0);
    else if (cur_q8)
        assert_int_equal(dt_conv2d_q8_ref(&p, tx, tw, k->bias ? tb : NULL, qm, k->oc, k->bias, ty), 0);
    else
        assert_int_equal(dt_conv2d_ref(&p, tx, tw, k->bias ? tb : NULL, ty), 0);
}

static const ccase kcases[] = {
    /* layout, n, c, h, w, oc, kh, kw, stride, pad, dil, groups, bias, pool */
    {DT_NCHW, 2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1, 1, 0},   {DT_NHWC, 2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1, 1, 0},
    {DT_NCHW, 1, 4, 11, 10, 6, 3, 2, 2, 0, 1, 2, 0, 0}, {DT_NHWC, 1, 4, 11, 10, 6, 3, 2, 2, 0, 1, 2, 1, 0},
    {DT_NCHW, 2, 4, 13, 9, 4, 3, 3, 2, 2, 2, 4, 1, 0},  {DT_NHWC, 3, 2, 6, 5, 3, 1, 1, 1, 0, 1, 1, 0, 0},
    {DT_NCHW, 1, 2, 8, 8, 2, 5, 5, 3, 2, 1, 1, 1, 0},   {DT_NCHW, 2, 3, 9, 7, 0, 2, 2, 2, 0, 1, 1, 0, 1},
    {DT_NHWC, 2, 3, 10, 9, 0, 3, 3, 2, 1, 1, 1, 0, 1},  {DT_NCHW, 1, 2, 11, 11, 0, 3, 2, 1, 1, 2, 1, 0, 1},
    {DT_NCHW, 1, 2, 7, 21, 3, 3, 3, 1, 2, 2, 1, 1, 0},  {DT_NCHW, 1, 2, 5, 3, 2, 3, 3, 1, 0, 1, 2, 1, 0},
};

static void test_kernels(void **state)
{
    size_t i;
    (void)state;
    for (i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
        const ccase *k = &kcases[i];
        mb_tensor tx, tw, tb, ty;
        int32_t co[4];
        size_t e, ne;
        fill(k);
        run_ref(k, &tx, &tw, &tb, &ty, co);
        ne = (size_t)co[0] * co[1] * co[2] * co[3];
        for (e = 0; e < ne; e++)
            if (fabsf(yref[e] - ynaive[e]) > 1e-5f * (1.0f + fabsf(ynaive[e]))) {
                fprintf(stderr, "case %zu element %zu: %g vs naive %g\n", i, e, yref[e], ynaive[e]);
                fail();
            }
    }
}

/* A hand-checked value: 1x1x3x3 input 1..9, 2x2 kernel of ones, stride 1, padding 1:
   the torch result's corners are 1, 3, 7, 9 and its centre block 12, 16, 24, 28. */
static void test_known_values(void **state)
{
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, y[16];
    static const float want[16] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
    int32_t xs[4] = {1, 1, 3, 3}, wsh[4] = {1, 1, 2, 2}, ys[4] = {1, 1, 4, 4}, out[4];
    dt_conv2d_params p = DT_CONV2D(DT_NCHW, 1, 1, 1, 1);
    mb_tensor tx, tw, ty;
    (void)state;
    mb_tensor_init(&tx, x, MB_F32, 4, xs);
    mb_tensor_init(&tw, w, MB_F32, 4, wsh);
    mb_tensor_init(&ty, y, MB_F32, 4, ys);
    assert_int_equal(dt_conv2d_out_shape(&p, xs, wsh, out), 0);
    assert_memory_equal(out, ys, sizeof ys);
    assert_int_equal(dt_conv2d_ref(&p, &tx, &tw, NULL, &ty), 0);
    assert_memory_equal(y, want, sizeof want);
}

/* Same result from an NHWC strided view of the NCHW data (no copy: strides only). */
static void test_layouts_and_views(void **state)
{
    const ccase *k = &kcases[4];
    mb_tensor tx, tw, tb, ty, vx, vy;
    int32_t co[4];
    static float y2[MAXE];
    dt_conv2d_params p = params(k);
    (void)state;
    fill(k);
    run_ref(k, &tx, &tw, &tb, &ty, co);
    /* view the NCHW input as NHWC: shape (n, h, w, c) with permuted strides */
    vx = tx;
    vx.shape[1] = tx.shape[2], vx.shape[2] = tx.shape[3], vx.shape[3] = tx.shape[1];
    vx.stride[1] = tx.stride[2], vx.stride[2] = tx.stride[3], vx.stride[3] = tx.stride[1];
    vy = ty;
    vy.data = y2;
    vy.shape[1] = ty.shape[2], vy.shape[2] = ty.shape[3], vy.shape[3] = ty.shape[1];
    vy.stride[1] = ty.stride[2], vy.stride[2] = ty.stride[3], vy.stride[3] = ty.stride[1];
    p.layout = DT_NHWC;
    assert_int_equal(dt_conv2d_ref(&p, &vx, &tw, &tb, &vy), 0);
    assert_memory_equal(y2, yref, sizeof(float) * (size_t)co[0] * co[1] * co[2] * co[3]);
}

static void test_backward(void **state)
{
    static float gy[MAXE], gx[MAXE], gw[MAXE], gb[64], nx[MAXE], nw[MAXE];
    size_t i;
    (void)state;
    for (i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
        const ccase *k = &kcases[i];
        mb_tensor tx, tw, tb, ty, tgy, tgx, tgw, tgb;
        int32_t co[4], ci[4] = {k->n, k->c, k->h, k->w}, s[4], n, o, y, x, c, a, b;
        int32_t cpg = k->pool ? 1 : k->c / k->groups;
        size_t e, nxe = (size_t)k->n * k->c * k->h * k->w, nwe = (size_t)k->oc * cpg * k->kh * k->kw;
        dt_conv2d_params p = params(k);
        fill(k);
        run_ref(k, &tx, &tw, &tb, &ty, co);
        for (e = 0; e < MAXE; e++) gy[e] = val((uint32_t)e, 4);
        shape_of(k->layout, co, s);
        mb_tensor_init(&tgy, gy, MB_F32, 4, s);
        shape_of(k->layout, ci, s);
        mb_tensor_init(&tgx, gx, MB_F32, 4, s);
        mb_tensor_init(&tgw, gw, MB_F32, 4, tw.shape);
        mb_tensor_init(&tgb, gb, MB_F32, 1, &k->oc);
        memset(nx, 0, sizeof nx);
        memset(nw, 0, sizeof nw);
        /* naive: scatter every output gradient to what produced it */
        for (n = 0; n < co[0]; n++)
            for (o = 0; o < co[1]; o++)
                for (y = 0; y < co[2]; y++)
                    for (x = 0; x < co[3]; x++) {
                        float g = gy[at(k->layout, co, n, o, y, x)], best = -INFINITY;
                        int32_t g0 = k->pool ? o : o / (k->oc / k->groups) * cpg;
                        size_t bi = 0;
                        int found = 0;
                        for (c = 0; c < cpg; c++)
                            for (a = 0; a < k->kh; a++)
                                for (b = 0; b < k->kw; b++) {
                                    int32_t ih = y * k->stride - k->pad + a * k->dil,
                                            iw = x * k->stride - k->pad + b * k->dil;
                                    size_t xi, wi = (((size_t)o * cpg + c) * k->kh + a) * k->kw + b;
                                    if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w) continue;
                                    xi = at(k->layout, ci, n, g0 + c, ih, iw);
                                    if (k->pool) {
                                        if (!found || xin[xi] > best) best = xin[xi], bi = xi, found = 1;
                                    } else {
                                        nx[xi] += g * wt[wi];
                                        nw[wi] += g * xin[xi];
                                    }
                                }
                        if (k->pool) nx[bi] += g;
                    }
        if (k->pool) {
            assert_int_equal(dt_maxpool2d_backward(&p, &tx, &tgy, &tgx), 0);
        } else {
            assert_int_equal(dt_conv2d_backward(&p, &tx, &tw, &tgy, &tgx, &tgw, &tgb), 0);
            for (e = 0; e < nwe; e++) assert_true(fabsf(gw[e] - nw[e]) <= 1e-4f * (1.0f + fabsf(nw[e])));
            for (o = 0; o < k->oc; o++) {
                double sb = 0;
                for (n = 0; n < co[0]; n++)
                    for (y = 0; y < co[2]; y++)
                        for (x = 0; x < co[3]; x++) sb += gy[at(k->layout, co, n, o, y, x)];
                assert_true(fabs(gb[o] - sb) <= 1e-4 * (1.0 + fabs(sb)));
            }
            /* grad_w alone gives the same bits */
            memcpy(nw, gw, sizeof(float) * nwe);
            assert_int_equal(dt_conv2d_backward(&p, &tx, &tw, &tgy, NULL, &tgw, NULL), 0);
            assert_memory_equal(nw, gw, sizeof(float) * nwe);
        }
        for (e = 0; e < nxe; e++)
            if (fabsf(gx[e] - nx[e]) > 1e-4f * (1.0f + fabsf(nx[e]))) {
                fprintf(stderr, "case %zu grad_in %zu: %g vs %g\n", i, e, gx[e], nx[e]);
                fail();
            }
    }
}

/* int8 conv2d against int32 sums from the definition, requantized with dtensor_quant.h's
   dt_requant_i8 (bit-exact), and against the f32 conv2d of the dequantized tensors
   (within one output step plus rounding). */
static void test_int8(void **state)
{
    size_t i;
    (void)state;
    cur_q8 = 1;
    for (i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
        const ccase *k = &kcases[i];
        mb_tensor tx, tw, tb, ty;
        int32_t co[4], ci[4] = {k->n, k->c, k->h, k->w}, n, o, y, x, c, a, b;
        int32_t cpg = k->pool ? 1 : k->c / k->groups;
        fill(k);
        run_ref(k, &tx, &tw, &tb, &ty, co);
        for (n = 0; n < co[0]; n++)
            for (o = 0; o < co[1]; o++)
                for (y = 0; y < co[2]; y++)
                    for (x = 0; x < co[3]; x++) {
                        int32_t acc = 0, best = -129, g0 = k->pool ? o : o / (k->oc / k->groups) * cpg;
                        int8_t want;
                        for (c = 0; c < cpg; c++)
                            for (a = 0; a < k->kh; a++)
                                for (b = 0; b < k->kw; b++) {
                                    int32_t ih = y * k->stride - k->pad + a * k->dil,
                                            iw = x * k->stride - k->pad + b * k->dil;
                                    int32_t xv;
                                    if (ih < 0 || ih >= k->h || iw < 0 || iw >= k->w) continue;
                                    xv = xq[at(k->layout, ci, n, g0 + c, ih, iw)];
                                    if (xv > best) best = xv;
                                    acc += xv * wq[(((size_t)o * cpg + c) * k->kh + a) * k->kw + b];
                                }
                        if (k->pool) {
                            want = (int8_t)best;
                        } else {
                            want = dt_requant_i8(acc + (k->bias ? bq[o] : 0), qm[o]);
                            if (k->bias && want < 0) want = 0; /* the bias cases also test relu */
                        }
                        if (yq[at(k->layout, co, n, o, y, x)] != want) {
                            fprintf(stderr, "int8 case %zu: %d vs %d\n", i, yq[at(k->layout, co, n, o, y, x)], want);
                            fail();
                        }
                    }
    }
    cur_q8 = 0;
}

/* A quantized conv2d approximates the f32 one: per-tensor input scale, per-channel weight
   scales from torch's symmetric observers (dt_quantize_tensor), int32 bias, requantized. */
static void test_int8_vs_f32(void **state)
{
    const ccase *k = &kcases[0];
    mb_tensor tx, tw, tb, ty, qx, qw, qy, qb;
    int32_t co[4], j, nb;
    float sx, sw[64], sy = 0.0f, amax = 0.0f;
    size_t e, ne;
    dt_conv2d_params p = params(k);
    (void)state;
    fill(k);
    run_ref(k, &tx, &tw, &tb, &ty, co);
    ne = (size_t)co[0] * co[1] * co[2] * co[3];
    for (e = 0; e < ne; e++) amax = fabsf(yref[e]) > amax ? fabsf(yref[e]) : amax;
    assert_int_equal(dt_q8_scale(amax, &sy), 0);
    qx = tx, qx.data = xq, qx.dtype = MB_I8;
    qw = tw, qw.data = wq, qw.dtype = MB_I8;
    qy = ty, qy.data = yq, qy.dtype = MB_I8;
    assert_int_equal(dt_quantize_tensor(&tx, -1, &sx, &qx), 0);
    assert_int_equal(dt_quantize_tensor(&tw, 0, sw, &qw), 0);
    nb = k->oc;
    for (j = 0; j < nb; j++) bq[j] = (int32_t)lrintf(bs[j] / (sx * sw[j]));
    mb_tensor_init(&qb, bq, MB_I32, 1, &nb);
    assert_int_equal(dt_qmm_multipliers(sx, sw, nb, sy, qm), 0);
    assert_int_equal(dt_conv2d_q8_ref(&p, &qx, &qw, &qb, qm, nb, 0, &qy), 0);
    for (e = 0; e < ne; e++) assert_true(fabsf((float)yq[e] * sy - yref[e]) <= 2.0f * sy);
    (void)tb;
}

/* Max pool picks the first maximum and lets NaN win, as torch's CPU kernel. */
static void test_pool_ties_nan(void **state)
{
    float x[4] = {2, 2, 1, 2}, g[4], gy[1] = {1}, y[1];
    int32_t xs[4] = {1, 1, 2, 2}, ys[4] = {1, 1, 1, 1};
    dt_conv2d_params p = DT_POOL2D(DT_NCHW, 2, 2, 0);
    mb_tensor tx, ty, tg, tgy;
    (void)state;
    mb_tensor_init(&tx, x, MB_F32, 4, xs);
    mb_tensor_init(&ty, y, MB_F32, 4, ys);
    mb_tensor_init(&tgy, gy, MB_F32, 4, ys);
    mb_tensor_init(&tg, g, MB_F32, 4, xs);
    assert_int_equal(dt_maxpool2d_backward(&p, &tx, &tgy, &tg), 0);
    assert_true(g[0] == 1.0f && g[1] == 0.0f && g[3] == 0.0f);
    x[2] = NAN;
    assert_int_equal(dt_maxpool2d_ref(&p, &tx, &ty), 0);
    assert_true(y[0] != y[0]);
    assert_int_equal(dt_maxpool2d_backward(&p, &tx, &tgy, &tg), 0);
    assert_true(g[2] == 1.0f && g[0] == 0.0f);
}

/* ---- sharded ---- */

#ifdef CONV_BOARD
#define NR CONV_BOARD
/* The board: body on every core (a world of NR over pg_shm); 0 or the first failure. */
static int conv_run(int nranks, int (*body)(pg_group *g, void *arg));
#else
#define NR 4
static pg_pthread_world world;
static int conv_run(int nranks, int (*body)(pg_group *g, void *arg))
{
    return pg_pthread_run(&world, nranks, body, NULL);
}
#endif
static dt_mesh dm[NR];
static dt_comm dc[NR];
static float lx[NR][MAXE], lw[NR][MAXE], ly[NR][MAXE], lb[NR][64]; /* f32 or int8 / int32 */
static uint64_t scr[NR][MAXE];
static int cur_kind;         /* 0 spatial, 1 batch, 2 output channels, 3 replicate */
static int cur_bw_only = -1; /* sharded backward: -1 every gradient, else only grad_in / grad_w / grad_b */
static const ccase *cur;
static int32_t cur_co[4];

#define CHECK(c)                                                                 \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "rank %d: check failed at line %d\n", me, __LINE__); \
            return __LINE__;                                                     \
        }                                                                        \
    } while (0)

/* Copy a strided view into a contiguous buffer; returns the contiguous view. */
static int local_copy(const mb_tensor *v, void *buf, mb_tensor *out)
{
    if (mb_tensor_init(out, buf, v->dtype, v->ndim, v->shape)) return -1;
    return mb_copy(out, v);
}

/* Per-rank setup of the forward and backward bodies: timeout, a 1-D mesh over the
   ranks and its comm, the layout's global input and output shapes (xs, ys), the input's
   and weight's placements for cur_kind (px, pw), and in: its spec and a contiguous copy
   of this rank's slice of the global input xdata. 0 or the failing line. */
static int rank_setup(pg_group *g, const ccase *k, mb_dtype dt, void *xdata, int32_t *xs, int32_t *ys, dt_placement *px,
                      dt_placement *pw, dt_tensor *in)
{
    int me = pg_rank(g);
    int32_t ci[4], ms[1];
    mb_tensor gx, v;
    ci[0] = k->n, ci[1] = k->c, ci[2] = k->h, ci[3] = k->w;
    ms[0] = pg_size(g);
    CHECK(pg_set_timeout(g, 10000) == 0);
    CHECK(dt_mesh_init(&dm[me], 1, ms, NULL, me) == 0);
    CHECK(dt_comm_init(&dc[me], &dm[me], g) == 0);
    shape_of(k->layout, ci, xs);
    shape_of(k->layout, cur_co, ys);
    px[0].kind = pw[0].kind = DT_KIND_REPLICATE;
    px[0].arg = pw[0].arg = 0;
    if (cur_kind == 0) px[0].kind = DT_KIND_SHARD, px[0].arg = (int16_t)(k->layout == DT_NHWC ? 1 : 2);
    if (cur_kind == 1) px[0].kind = DT_KIND_SHARD;
    if (cur_kind == 2 && !k->pool) pw[0].kind = DT_KIND_SHARD;
    if (cur_kind == 2 && k->pool) px[0].kind = DT_KIND_SHARD, px[0].arg = (int16_t)(k->layout == DT_NHWC ? 3 : 1);
    CHECK(dt_spec_init(&in->spec, &dm[me], px, 1, dt, 4, xs, NULL) == 0);
    mb_tensor_init(&gx, xdata, dt, 4, xs);
    CHECK(dt_local_view(&in->spec, me, &gx, &v) == 0);
    CHECK(local_copy(&v, lx[me], &in->local) == 0);
    return 0;
}

/* The sharded call of this case: max pool, int8 or f32 conv2d. */
static int run_sharded(const ccase *k, const dt_conv2d_params *p, int me, const dt_tensor *in, const dt_tensor *w,
                       const mb_tensor *bias, dt_spec *os, mb_tensor *out, size_t need)
{
    if (k->pool) return dt_maxpool2d(&dc[me], p, in, os, out, scr[me], need);
    if (cur_q8) return dt_conv2d_q8(&dc[me], p, in, w, bias, qm, k->oc, k->bias, os, out, scr[me], need);
    return dt_conv2d(&dc[me], p, in, w, bias, os, out, scr[me], need);
}

static int body(pg_group *g, void *arg)
{
    int me = pg_rank(g), np = pg_size(g), d;
    const ccase *k = cur;
    dt_conv2d_params p = params(k);
    int32_t xs[4], ws[4] = {k->oc, k->c / k->groups, k->kh, k->kw}, ys[4];
    int hd = k->layout == DT_NHWC ? 1 : 2, cd = k->layout == DT_NHWC ? 3 : 1;
    dt_placement px[1], pw[1];
    dt_tensor in, w;
    dt_spec os;
    mb_tensor gw, gy, v, lyv, tb, *bias = NULL;
    size_t need = 0, es = cur_q8 ? 1 : 4;
    mb_dtype dt = cur_q8 ? MB_I8 : MB_F32;
    int rc;
    (void)arg;
    if ((rc = rank_setup(g, k, dt, cur_q8 ? (void *)xq : (void *)xin, xs, ys, px, pw, &in))) return rc;
    if (!k->pool) {
        int32_t bl;
        CHECK(dt_spec_init(&w.spec, &dm[me], pw, 1, dt, 4, ws, NULL) == 0);
        mb_tensor_init(&gw, cur_q8 ? (void *)wq : (void *)wt, dt, 4, ws);
        CHECK(dt_local_view(&w.spec, me, &gw, &v) == 0);
        CHECK(local_copy(&v, lw[me], &w.local) == 0);
        if (k->bias) {
            int32_t off = 0;
            bl = w.local.shape[0];
            if (cur_kind == 2) dt_chunk(k->oc, np, me, &off);
            memcpy(lb[me], cur_q8 ? (void *)(bq + off) : (void *)(bs + off), 4 * (size_t)bl);
            mb_tensor_init(&tb, lb[me], cur_q8 ? MB_I32 : MB_F32, 1, &bl);
            bias = &tb;
        }
    }
    CHECK(dt_conv2d_out_spec(&p, &in.spec, k->pool ? NULL : &w.spec, &os) == 0);
    CHECK(dt_conv2d_scratch_bytes(&p, &in.spec, k->pool ? NULL : &w.spec, &need) == 0);
    CHECK(need <= sizeof scr[me]);
    CHECK(cur_kind == 0 || need == 0);
    CHECK(dt_local_shape(&os, me, xs, NULL) == 0);
    mb_tensor_init(&lyv, ly[me], dt, 4, xs);
    memset(ly[me], 0xA5, sizeof ly[me]);
    if (need) CHECK(run_sharded(k, &p, me, &in, &w, bias, NULL, &lyv, need - 1) == DT_ERR_TOO_SMALL);
    CHECK(run_sharded(k, &p, me, &in, &w, bias, &os, &lyv, need) == 0);
    CHECK(os.dtype == dt);
    /* the output spec's placement */
    if (cur_kind == 3)
        CHECK(os.placements[0].kind == DT_KIND_REPLICATE);
    else
        CHECK(os.placements[0].kind == DT_KIND_SHARD && os.placements[0].arg == (cur_kind == 0   ? hd
                                                                                 : cur_kind == 1 ? 0
                                                                                                 : cd));
    /* every element equals the single-rank result's slice, bit for bit */
    mb_tensor_init(&gy, cur_q8 ? (void *)yq : (void *)yref, dt, 4, ys);
    CHECK(dt_local_view(&os, me, &gy, &v) == 0);
    CHECK(local_copy(&v, scr[me], &gy) == 0);
    for (d = 0; d < 4; d++) CHECK(gy.shape[d] == lyv.shape[d]);
    CHECK(memcmp(gy.data, lyv.data, es * (size_t)mb_numel(&gy)) == 0);
    return 0;
}

static const ccase scases[] = {
    /* layout, n, c, h, w, oc, kh, kw, stride, pad, dil, groups, bias, pool */
    {DT_NCHW, 2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1, 1, 0}, /* uneven H (9 on 2 and 4) */
    {DT_NHWC, 2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1, 1, 0},
    {DT_NCHW, 1, 4, 11, 10, 6, 3, 2, 2, 0, 1, 2, 0, 0}, /* stride 2, groups 2 */
    {DT_NHWC, 2, 4, 13, 9, 4, 3, 3, 2, 2, 2, 4, 1, 0},  /* stride 2, dilation 2, pad 2, depthwise */
    {DT_NCHW, 1, 2, 5, 6, 3, 5, 3, 1, 2, 1, 1, 1, 0},   /* 5 rows on 4 ranks: 2,2,1,0; halo of 2 */
    {DT_NCHW, 1, 2, 6, 4, 2, 3, 3, 1, 3, 2, 1, 0, 0},   /* padding 3 + dilation 2: thin shards */
    {DT_NCHW, 2, 2, 7, 5, 2, 1, 1, 3, 0, 1, 1, 1, 0},   /* 1x1, stride 3: gaps between windows */
    {DT_NCHW, 3, 2, 8, 8, 4, 3, 3, 1, 1, 1, 2, 1, 0},   /* 3 images */
    {DT_NCHW, 1, 2, 9, 21, 3, 3, 3, 1, 2, 2, 1, 1, 0},  /* 3-tap rows with an interior, dilation 2 */
    {DT_NCHW, 2, 3, 9, 7, 0, 2, 2, 2, 0, 1, 1, 0, 1},   /* max pool 2x2 / 2, odd height */
    {DT_NHWC, 2, 4, 10, 9, 0, 3, 3, 2, 1, 1, 1, 0, 1},  /* max pool 3x3 / 2 pad 1 */
    {DT_NCHW, 1, 4, 11, 11, 0, 3, 2, 1, 1, 2, 1, 0, 1}, /* max pool, dilation 2 */
};

/* Every case and sharding on 2 and on 4 ranks. */
static void test_sharded(void **state)
{
    size_t i;
    int kind, nranks;
    (void)state;
    for (cur_q8 = 0; cur_q8 < 2; cur_q8++)
        for (nranks = 2; nranks <= NR; nranks += 2)
            for (i = 0; i < sizeof scases / sizeof scases[0]; i++)
                for (kind = 0; kind < 4; kind++) {
                    mb_tensor tx, tw, tb, ty;
                    cur = &scases[i];
                    cur_kind = kind;
                    fill(cur);
                    run_ref(cur, &tx, &tw, &tb, &ty, cur_co);
                    if (conv_run(nranks, body)) {
                        fprintf(stderr, "case %zu kind %d on %d ranks (int8 %d) failed\n", i, kind, nranks, cur_q8);
                        fail();
                    }
                }
    cur_q8 = 0;
}

/* ---- average pool ---- */

/* Average pool cases: layout, n, c, h, w, k (square), stride, pad, count_pad. */
typedef struct acase {
    int layout;
    int32_t n, c, h, w, k, stride, pad, count_pad;
} acase;
static const acase acases[] = {
    {DT_NCHW, 2, 3, 7, 6, 2, 2, 0, 0},  {DT_NCHW, 1, 2, 9, 5, 3, 2, 1, 1},
    {DT_NHWC, 2, 3, 8, 7, 3, 1, 1, 0},  {DT_NCHW, 1, 4, 5, 5, 5, 1, 0, 0}, /* global */
    {DT_NHWC, 1, 2, 11, 4, 3, 3, 1, 1}, {DT_NCHW, 2, 2, 13, 9, 3, 2, 1, 0},
};
static const acase *acur;
static float af[MAXE], afy[MAXE];
static int8_t aq[MAXE], aqy[MAXE];

static dt_conv2d_params aparams(const acase *k)
{
    dt_conv2d_params p = DT_POOL2D(DT_NCHW, 1, 1, 0);
    p.layout = k->layout;
    p.kernel[0] = p.kernel[1] = k->k;
    p.stride[0] = p.stride[1] = k->stride;
    p.padding[0] = p.padding[1] = k->pad;
    p.count_pad = k->count_pad;
    return p;
}

/* The sharded average pool (Shard(H) with halo, Shard(C)) on each rank: its shard must be
   the single-rank result's slice, bit for bit (f32 and int8). */
static int avg_body(pg_group *g, void *arg)
{
    const acase *k = acur;
    int me = pg_rank(g), np = pg_size(g), rc, q, kind;
    int32_t ms[1] = {np}, cs[4] = {k->n, k->c, k->h, k->w}, xs[4], oc[4], os[4], ls[4], off[4];
    dt_conv2d_params p = aparams(k);
    (void)arg;
    if ((rc = dt_mesh_init(&dm[me], 1, ms, NULL, me)) || (rc = dt_comm_init(&dc[me], &dm[me], g))) return rc;
    shape_of(k->layout, cs, xs);
    if (dt_conv2d_out_shape(&p, xs, NULL, os)) return __LINE__;
    for (q = 0; q < 2; q++)
        for (kind = 0; kind < 2; kind++) {
            dt_placement pl[1] = {DT_SHARD(kind ? (k->layout == DT_NHWC ? 3 : 1) : (k->layout == DT_NHWC ? 1 : 2))};
            mb_dtype dt = q ? MB_I8 : MB_F32;
            dt_tensor in;
            dt_spec ospec;
            mb_tensor gx, y, gy, want;
            size_t need, es = q ? 1u : 4u, e, n;
            static unsigned char yl[NR][MAXE * 4], wl[NR][MAXE * 4];
            if (dt_spec_init(&in.spec, &dm[me], pl, 1, dt, 4, xs, NULL)) return __LINE__;
            mb_tensor_init(&gx, q ? (void *)aq : (void *)af, dt, 4, xs);
            if (dt_local_view(&in.spec, me, &gx, &in.local)) return __LINE__;
            if (dt_conv2d_out_spec(&p, &in.spec, NULL, &ospec) || dt_local_shape(&ospec, me, ls, off)) return __LINE__;
            mb_tensor_init(&y, yl[me], dt, 4, ls);
            if (dt_conv2d_scratch_bytes(&p, &in.spec, NULL, &need) || need > sizeof scr[me]) return __LINE__;
            if ((rc = dt_avgpool2d(&dc[me], &p, &in, NULL, &y, scr[me], sizeof scr[me]))) return rc;
            mb_tensor_init(&gy, q ? (void *)aqy : (void *)afy, dt, 4, os);
            if (dt_local_view(&ospec, me, &gy, &want)) return __LINE__;
            mb_tensor_init(&gx, wl[me], dt, 4, ls);
            if (mb_copy(&gx, &want)) return __LINE__;
            n = (size_t)mb_numel(&y);
            for (e = 0; e < n * es; e++)
                if (yl[me][e] != wl[me][e]) return __LINE__;
            (void)oc;
        }
    return 0;
}

/* Average pool against torch's avg_pool2d from its definition (the window's sum over the
   in-bounds elements, divided by their count or, with count_include_pad, the padded
   window's), f32 and int8 (int32 sum, rounded half away from zero); then sharded. */
static void test_avgpool(void **state)
{
    size_t i;
    int np;
    (void)state;
    for (i = 0; i < sizeof acases / sizeof acases[0]; i++) {
        const acase *k = &acases[i];
        int32_t cs[4] = {k->n, k->c, k->h, k->w}, xs[4], os[4], co[4], n, c, y, x, a, b;
        dt_conv2d_params p = aparams(k);
        mb_tensor tx, ty, qx, qy;
        size_t e, ne = (size_t)k->n * k->c * k->h * k->w;
        for (e = 0; e < ne; e++) {
            af[e] = val((uint32_t)e, (uint32_t)i + 7u);
            aq[e] = (int8_t)((int32_t)(val((uint32_t)e, (uint32_t)i + 9u) * 127.0f));
        }
        shape_of(k->layout, cs, xs);
        assert_int_equal(dt_conv2d_out_shape(&p, xs, NULL, os), 0);
        mb_tensor_init(&tx, af, MB_F32, 4, xs);
        mb_tensor_init(&ty, afy, MB_F32, 4, os);
        mb_tensor_init(&qx, aq, MB_I8, 4, xs);
        mb_tensor_init(&qy, aqy, MB_I8, 4, os);
        assert_int_equal(dt_avgpool2d_ref(&p, &tx, &ty), 0);
        assert_int_equal(dt_avgpool2d_ref(&p, &qx, &qy), 0);
        co[0] = k->n, co[1] = k->c;
        co[2] = (k->h + 2 * k->pad - k->k) / k->stride + 1;
        co[3] = (k->w + 2 * k->pad - k->k) / k->stride + 1;
        for (n = 0; n < co[0]; n++)
            for (c = 0; c < co[1]; c++)
                for (y = 0; y < co[2]; y++)
                    for (x = 0; x < co[3]; x++) {
                        float s = 0.0f, want;
                        int32_t si = 0, cnt = 0, h0 = y * k->stride - k->pad, w0 = x * k->stride - k->pad;
                        int32_t h1 = h0 + k->k < k->h + k->pad ? h0 + k->k : k->h + k->pad,
                                w1 = w0 + k->k < k->w + k->pad ? w0 + k->k : k->w + k->pad, div, qwant;
                        for (a = h0; a < h0 + k->k; a++)
                            for (b = w0; b < w0 + k->k; b++) {
                                if (a < 0 || a >= k->h || b < 0 || b >= k->w) continue;
                                s += af[at(k->layout, cs, n, c, a, b)];
                                si += aq[at(k->layout, cs, n, c, a, b)];
                                cnt++;
                            }
                        div = k->count_pad ? (h1 - h0) * (w1 - w0) : cnt;
                        want = s / (float)div;
                        qwant = (int32_t)lround((double)si / (double)div);
                        qwant = qwant > 127 ? 127 : qwant < -128 ? -128 : qwant;
                        assert_true(afy[at(k->layout, co, n, c, y, x)] == want);
                        assert_int_equal(aqy[at(k->layout, co, n, c, y, x)], qwant);
                    }
        acur = k;
        for (np = 2; np <= NR; np += 2) assert_int_equal(conv_run(np, avg_body), 0);
    }
}

/* ---- sharded backward ---- */

/* The single-rank backward of the current case (grad_out gyb): gxr, gwr, gbr. */
static float gyb[MAXE], gxr[MAXE], gwr[MAXE], gbr[64];
static float lgy[NR][MAXE], lgx[NR][MAXE], lgw[NR][MAXE], lgb[NR][64], red[NR][MAXE];

/* |a - b| within f32 rounding of sums of a few hundred terms */
static int near(float a, float b)
{
    return fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b));
}

/* This rank's gradient `t` (spec gs) against the single-rank `ref` (global shape of gs):
   Partial(sum) ones summed over the ranks first (dt_redistribute to Replicate). exact:
   compare bits; else within rounding, but bit for bit on the input rows [b0, b1) (global,
   -1: none) that no peer's window reaches. */
static int grad_check(int me, const dt_spec *gs, mb_tensor *t, const float *ref, int exact, int hd, int32_t b0,
                      int32_t b1)
{
    dt_placement r[1] = {DT_REPLICATE()};
    dt_spec rs;
    mb_tensor g, v, lv, o;
    int64_t i, n;
    int32_t idx[4] = {0, 0, 0, 0}, d;
    if (gs->placements[0].kind == DT_KIND_PARTIAL) {
        if (dt_spec_init(&rs, gs->mesh, r, 1, MB_F32, gs->ndim, gs->shape, NULL)) return __LINE__;
        if (mb_tensor_init(&o, red[me], MB_F32, gs->ndim, gs->shape)) return __LINE__;
        if (dt_redistribute(&dc[me], NULL, gs, t, &rs, 0, &o, scr[me], sizeof scr[me])) return __LINE__;
        t = &o;
        gs = &rs;
    }
    mb_tensor_init(&g, (void *)ref, MB_F32, gs->ndim, gs->shape);
    if (dt_local_view(gs, me, &g, &v) || local_copy(&v, scr[me], &lv)) return __LINE__;
    n = mb_numel(&lv);
    if (n != mb_numel(t)) return __LINE__;
    for (i = 0; i < n; i++) { /* both contiguous: walk the local index */
        float a = ((float *)t->data)[i], b = ((float *)lv.data)[i];
        int32_t row = hd >= 0 ? idx[hd] : -1;
        int bits = exact || (row >= b0 && row < b1);
        if (bits ? memcmp(&a, &b, sizeof a) != 0 : !near(a, b)) {
            fprintf(stderr, "rank %d element %lld: %.9g vs single-rank %.9g (%s)\n", me, (long long)i, a, b,
                    bits ? "bits" : "rounding");
            return __LINE__;
        }
        for (d = gs->ndim - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
    }
    return 0;
}

static int bw_body(pg_group *g, void *arg)
{
    int me = pg_rank(g), np = pg_size(g), rc, q;
    const ccase *k = cur;
    dt_conv2d_params p = params(k);
    int32_t xs[4], ws[4] = {k->oc, k->c / k->groups, k->kh, k->kw}, ys[4], rows[6], r[6];
    int hd = k->layout == DT_NHWC ? 1 : 2;
    dt_placement px[1], pw[1];
    dt_tensor in, w, gy;
    dt_spec gs[3];
    mb_tensor gx, v, tgx, tgw, tgb;
    size_t need = 0;
    int32_t b0 = -1, b1 = -1, bl;
    (void)arg;
    if ((rc = rank_setup(g, k, MB_F32, xin, xs, ys, px, pw, &in))) return rc;
    CHECK(dt_spec_init(&w.spec, &dm[me], pw, 1, MB_F32, 4, ws, NULL) == 0);
    mb_tensor_init(&gx, wt, MB_F32, 4, ws);
    CHECK(dt_local_view(&w.spec, me, &gx, &v) == 0 && local_copy(&v, lw[me], &w.local) == 0);
    CHECK(dt_conv2d_out_spec(&p, &in.spec, &w.spec, &gy.spec) == 0);
    mb_tensor_init(&gx, gyb, MB_F32, 4, ys);
    CHECK(dt_local_view(&gy.spec, me, &gx, &v) == 0 && local_copy(&v, lgy[me], &gy.local) == 0);
    CHECK(dt_local_shape(&in.spec, me, xs, NULL) == 0);
    mb_tensor_init(&tgx, lgx[me], MB_F32, 4, xs);
    mb_tensor_init(&tgw, lgw[me], MB_F32, 4, w.local.shape);
    bl = w.local.shape[0];
    mb_tensor_init(&tgb, lgb[me], MB_F32, 1, &bl);
    CHECK(dt_conv2d_backward_scratch_bytes(&p, &in.spec, &w.spec, &need) == 0);
    CHECK(need <= sizeof scr[me] && (cur_kind == 0 || need == 0));
    memset(lgx[me], 0xA5, sizeof lgx[me]);
    if (need) {
        CHECK(dt_conv2d_sharded_backward(&dc[me], &p, &in, &w, &gy, &tgx, &tgw, &tgb, gs, scr[me], need - 1) ==
              DT_ERR_TOO_SMALL);
        CHECK(((unsigned char *)lgx[me])[0] == 0xA5); /* nothing written */
    }
    if (cur_bw_only >= 0) { /* one gradient alone: the same values */
        rc = dt_conv2d_sharded_backward(&dc[me], &p, &in, &w, &gy, cur_bw_only == 0 ? &tgx : NULL,
                                        cur_bw_only == 1 ? &tgw : NULL, cur_bw_only == 2 ? &tgb : NULL, gs, scr[me],
                                        need);
    } else {
        rc = dt_conv2d_sharded_backward(&dc[me], &p, &in, &w, &gy, &tgx, &tgw, &tgb, gs, scr[me], need);
    }
    CHECK(rc == 0);
    /* the placements of torch's convolution_backward rule */
    CHECK(gs[0].placements[0].kind == (cur_kind == 2 ? DT_KIND_PARTIAL : px[0].kind) &&
          (cur_kind == 2 || gs[0].placements[0].arg == px[0].arg));
    CHECK(gs[1].placements[0].kind == (cur_kind <= 1 ? DT_KIND_PARTIAL : pw[0].kind));
    CHECK(gs[2].placements[0].kind == gs[1].placements[0].kind && gs[2].ndim == 1 && gs[2].shape[0] == k->oc);
    if (cur_kind == 0) { /* rows of this rank's shard no peer's window reaches */
        CHECK(dt_conv2d_rows(&p, k->h, k->kh, np, me, rows) == 0);
        b0 = rows[0], b1 = rows[1];
        for (q = 0; q < np; q++) {
            if (q == me) continue;
            CHECK(dt_conv2d_rows(&p, k->h, k->kh, np, q, r) == 0);
            if (r[5] > r[4] && r[4] < b1 && r[5] > b0) { /* trim the reached rows off either end */
                if (r[4] <= b0)
                    b0 = r[5] < b1 ? r[5] : b1;
                else
                    b1 = r[4];
            }
        }
    }
    if (cur_bw_only < 0 || cur_bw_only == 0)
        CHECK((rc = grad_check(me, &gs[0], &tgx, gxr, cur_kind == 3, cur_kind == 0 ? hd : -1, b0, b1)) == 0);
    if (cur_bw_only < 0 || cur_bw_only == 1)
        CHECK((rc = grad_check(me, &gs[1], &tgw, gwr, cur_kind >= 2, -1, -1, -1)) == 0);
    if (cur_bw_only < 0 || cur_bw_only == 2)
        CHECK((rc = grad_check(me, &gs[2], &tgb, gbr, cur_kind >= 2, -1, -1, -1)) == 0);
    /* grad_out not in dt_conv2d's output spec (tp_conv would redistribute it first) */
    if (cur_kind == 0 && me >= 0) {
        dt_tensor bad = gy;
        bad.spec.placements[0].kind = DT_KIND_REPLICATE;
        CHECK(dt_conv2d_sharded_backward(&dc[me], &p, &in, &w, &bad, &tgx, NULL, NULL, NULL, scr[me], need) ==
              DT_ERR_MISMATCH);
    }
    return 0;
}

/* Every conv2d case of scases, each sharding, on 2, 3 and 4 ranks: grad_in, grad_w and
   grad_b against the single-rank dt_conv2d_backward (itself checked against the
   definition in test_backward). */
static void test_sharded_backward(void **state)
{
    size_t i, e;
    int kind, nranks;
    (void)state;
    for (nranks = 2; nranks <= NR; nranks++)
        for (i = 0; i < sizeof scases / sizeof scases[0]; i++)
            for (kind = 0; kind < 4; kind++)
                for (cur_bw_only = -1; cur_bw_only < (nranks == 3 && kind == 0 ? 3 : 0); cur_bw_only++) {
                    mb_tensor tx, tw, tb, ty, tgy, tgx, tgw, tgb;
                    int32_t s[4], ci[4];
                    dt_conv2d_params p;
                    cur = &scases[i];
                    if (cur->pool) continue;
                    p = params(cur);
                    cur_kind = kind;
                    fill(cur);
                    run_ref(cur, &tx, &tw, &tb, &ty, cur_co);
                    for (e = 0; e < MAXE; e++) gyb[e] = val((uint32_t)e, 4);
                    shape_of(cur->layout, cur_co, s);
                    mb_tensor_init(&tgy, gyb, MB_F32, 4, s);
                    ci[0] = cur->n, ci[1] = cur->c, ci[2] = cur->h, ci[3] = cur->w;
                    shape_of(cur->layout, ci, s);
                    mb_tensor_init(&tgx, gxr, MB_F32, 4, s);
                    mb_tensor_init(&tgw, gwr, MB_F32, 4, tw.shape);
                    mb_tensor_init(&tgb, gbr, MB_F32, 1, &cur->oc);
                    assert_int_equal(dt_conv2d_backward(&p, &tx, &tw, &tgy, &tgx, &tgw, &tgb), 0);
                    if (conv_run(nranks, bw_body)) {
                        fprintf(stderr, "backward case %zu kind %d on %d ranks (only %d) failed\n", i, kind, nranks,
                                cur_bw_only);
                        fail();
                    }
                }
    cur_bw_only = -1;
}

/* The row map: H=9 on 4 with stride 2, 3x3, padding 1: output 5 rows as 2,2,1,0. */
static void test_rows(void **state)
{
    dt_conv2d_params p = DT_CONV2D(DT_NCHW, 2, 1, 1, 1);
    int32_t r[6];
    static const int32_t want[4][6] = {{0, 3, 0, 2, 0, 4}, {3, 6, 2, 4, 3, 8}, {6, 9, 4, 5, 7, 9}, {9, 9, 5, 5, 0, 0}};
    int i;
    (void)state;
    for (i = 0; i < 4; i++) {
        assert_int_equal(dt_conv2d_rows(&p, 9, 3, 4, i, r), 0);
        assert_memory_equal(r, want[i], sizeof r);
    }
    assert_int_equal(dt_conv2d_rows(&p, 9, 3, 4, 4, r), DT_ERR_RANK);
    assert_int_equal(dt_conv2d_rows(&p, 0, 3, 4, 0, r), DT_ERR_SHAPE);
}

static void test_errors(void **state)
{
    float x[64], w[64], y[64];
    int32_t xs[4] = {1, 2, 4, 4}, wsh[4] = {2, 2, 3, 3}, ys[4] = {1, 2, 2, 2}, out[4], bad[4] = {2, 3, 3, 3};
    dt_conv2d_params p = DT_CONV2D(DT_NCHW, 1, 0, 1, 1), q;
    mb_tensor tx, tw, ty, ti;
    (void)state;
    memset(y, 0x5A, sizeof y);
    mb_tensor_init(&tx, x, MB_F32, 4, xs);
    mb_tensor_init(&tw, w, MB_F32, 4, wsh);
    mb_tensor_init(&ty, y, MB_F32, 4, ys);
    assert_int_equal(dt_conv2d_ref(NULL, &tx, &tw, NULL, &ty), DT_ERR_NULL);
    assert_int_equal(dt_conv2d_ref(&p, &tx, NULL, NULL, &ty), DT_ERR_NULL);
    q = p, q.stride[0] = 0;
    assert_int_equal(dt_conv2d_ref(&q, &tx, &tw, NULL, &ty), DT_ERR_SHAPE);
    q = p, q.groups = 3; /* does not divide channels */
    assert_int_equal(dt_conv2d_ref(&q, &tx, &tw, NULL, &ty), DT_ERR_SHAPE);
    q = p, q.layout = 7;
    assert_int_equal(dt_conv2d_ref(&q, &tx, &tw, NULL, &ty), DT_ERR_SHAPE);
    assert_int_equal(dt_conv2d_out_shape(&p, xs, bad, out), DT_ERR_SHAPE); /* channels 3 != 2 */
    wsh[2] = 5;                                                            /* kernel larger than input */
    assert_int_equal(dt_conv2d_out_shape(&p, xs, wsh, out), DT_ERR_SHAPE);
    wsh[2] = 3;
    ys[3] = 3; /* wrong output shape */
    mb_tensor_init(&ty, y, MB_F32, 4, ys);
    assert_int_equal(dt_conv2d_ref(&p, &tx, &tw, NULL, &ty), DT_ERR_MISMATCH);
    ys[3] = 2;
    mb_tensor_init(&ti, x, MB_I32, 4, xs);
    mb_tensor_init(&ty, y, MB_F32, 4, ys);
    assert_int_equal(dt_conv2d_ref(&p, &ti, &tw, NULL, &ty), DT_ERR_DTYPE);
    q = p, q.kernel[0] = q.kernel[1] = 2, q.padding[0] = 2; /* pool padding > half the window */
    assert_int_equal(dt_maxpool2d_ref(&q, &tx, &ty), DT_ERR_SHAPE);
    {
        unsigned char canary[sizeof y];
        memset(canary, 0x5A, sizeof canary);
        assert_memory_equal(y, canary, sizeof y); /* nothing written by the failed calls */
    }
}

/* Specs without a strategy; scratch and NULL checks (no communication: one rank). */
static void test_sharded_errors(void **state)
{
    dt_mesh m;
    dt_spec is, ws, os;
    int32_t one[1] = {2}, xs[4] = {1, 2, 4, 4}, wsh[4] = {2, 2, 3, 3};
    dt_placement sh_w[1] = {DT_SHARD(3)}, sh_c[1] = {DT_SHARD(1)}, part[1] = {DT_PARTIAL(DT_SUM)},
                 r[1] = {DT_REPLICATE()};
    dt_conv2d_params p = DT_CONV2D(DT_NCHW, 1, 1, 1, 1);
    size_t b;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 1, one, NULL, 0), 0);
    assert_int_equal(dt_spec_init(&ws, &m, r, 1, MB_F32, 4, wsh, NULL), 0);
    assert_int_equal(dt_spec_init(&is, &m, sh_w, 1, MB_F32, 4, xs, NULL), 0);
    assert_int_equal(dt_conv2d_out_spec(&p, &is, &ws, &os), DT_ERR_NO_STRATEGY); /* Shard(W) */
    assert_int_equal(dt_spec_init(&is, &m, sh_c, 1, MB_F32, 4, xs, NULL), 0);
    assert_int_equal(dt_conv2d_out_spec(&p, &is, &ws, &os), DT_ERR_NO_STRATEGY); /* input channels */
    {
        dt_conv2d_params pool = DT_POOL2D(DT_NCHW, 2, 2, 0);
        assert_int_equal(dt_conv2d_out_spec(&pool, &is, NULL, &os), 0); /* max pool: fine */
        assert_true(os.placements[0].kind == DT_KIND_SHARD && os.placements[0].arg == 1);
    }
    assert_int_equal(dt_spec_init(&is, &m, part, 1, MB_F32, 4, xs, NULL), 0);
    assert_int_equal(dt_conv2d_scratch_bytes(&p, &is, &ws, &b), DT_ERR_NO_STRATEGY);
    assert_int_equal(dt_conv2d_scratch_bytes(&p, NULL, &ws, &b), DT_ERR_NULL);
    assert_int_equal(dt_conv2d(NULL, &p, NULL, NULL, NULL, NULL, NULL, NULL, 0), DT_ERR_NULL);
    /* the sharded backward: the same strategies, f32 only, its operands required */
    assert_int_equal(dt_conv2d_backward_scratch_bytes(&p, &is, &ws, &b), DT_ERR_NO_STRATEGY); /* Partial input */
    assert_int_equal(dt_conv2d_backward_scratch_bytes(&p, &is, NULL, &b), DT_ERR_NULL);
    assert_int_equal(dt_spec_init(&is, &m, r, 1, MB_I8, 4, xs, NULL), 0);
    assert_int_equal(dt_spec_init(&ws, &m, r, 1, MB_I8, 4, wsh, NULL), 0);
    assert_int_equal(dt_conv2d_backward_scratch_bytes(&p, &is, &ws, &b), DT_ERR_DTYPE); /* int8 */
    assert_int_equal(dt_conv2d_sharded_backward(NULL, &p, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0),
                     DT_ERR_NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_layouts_and_views),
        cmocka_unit_test(test_backward),
        cmocka_unit_test(test_int8),
        cmocka_unit_test(test_int8_vs_f32),
        cmocka_unit_test(test_pool_ties_nan),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_sharded_errors),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_sharded_backward),
        cmocka_unit_test(test_avgpool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
