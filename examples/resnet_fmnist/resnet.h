/* resnet.h — the layers of examples/resnet_fmnist as pipeline.h pp_layers: 3x3 convolution
   (padding 1), ReLU, 2x2 max pool, a residual add (it pops the block's input: a skip that
   may come from another stage or rank), 2x2 average pool and a Linear layer, all f32
   NCHW over a microbatch's rows; BatchNorm is pipeline_bn.h's DeferredBatchNorm. Weight
   gradients accumulate in the layer (the caller zeroes them and steps SGD). */
#ifndef RESNET_H
#define RESNET_H
#include <string.h>
#include "pipeline.h"

#define RN_C   8  /* channels */
#define RN_HW  28 /* input side */
#define RN_P   14 /* after the pool */
#define RN_OUT 10

/* ---- 3x3 convolution, padding 1, stride 1: [n, ci, h, h] -> [n, co, h, h] ---- */
typedef struct rn_conv {
    int ci, co, h;
    float w[RN_C * RN_C * 9], b[RN_C];
    float gw[RN_C * RN_C * 9], gb[RN_C];
} rn_conv;
static int rn_conv_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const rn_conv *c = (const rn_conv *)self;
    const float *in = (const float *)x[0].data;
    float *out = (float *)y[0].data;
    int n, o, i, r, q, kr, kq, h = c->h;
    for (n = 0; n < x[0].shape[0]; n++)
        for (o = 0; o < c->co; o++)
            for (r = 0; r < h; r++)
                for (q = 0; q < h; q++) {
                    float s = c->b[o];
                    for (i = 0; i < c->ci; i++)
                        for (kr = 0; kr < 3; kr++)
                            for (kq = 0; kq < 3; kq++) {
                                int rr = r + kr - 1, qq = q + kq - 1;
                                if (rr < 0 || rr >= h || qq < 0 || qq >= h) continue;
                                s +=
                                    c->w[((o * c->ci + i) * 3 + kr) * 3 + kq] * in[((n * c->ci + i) * h + rr) * h + qq];
                            }
                    out[((n * c->co + o) * h + r) * h + q] = s;
                }
    return 0;
}
/* dx (when dx is given) and the weight gradients (when dx is NULL) of dy. */
static int rn_conv_back(rn_conv *c, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const float *in = (const float *)x[0].data, *g = (const float *)dy[0].data;
    int n, o, i, r, q, kr, kq, h = c->h;
    if (dx) memset(dx[0].data, 0, sizeof(float) * (size_t)(x[0].shape[0] * c->ci * h * h));
    for (n = 0; n < x[0].shape[0]; n++)
        for (o = 0; o < c->co; o++)
            for (r = 0; r < h; r++)
                for (q = 0; q < h; q++) {
                    float go = g[((n * c->co + o) * h + r) * h + q];
                    if (!dx) c->gb[o] += go;
                    for (i = 0; i < c->ci; i++)
                        for (kr = 0; kr < 3; kr++)
                            for (kq = 0; kq < 3; kq++) {
                                int rr = r + kr - 1, qq = q + kq - 1, wi = ((o * c->ci + i) * 3 + kr) * 3 + kq;
                                size_t xi = (size_t)((n * c->ci + i) * h + rr) * (size_t)h + (size_t)qq;
                                if (rr < 0 || rr >= h || qq < 0 || qq >= h) continue;
                                if (dx)
                                    ((float *)dx[0].data)[xi] += c->w[wi] * go;
                                else
                                    c->gw[wi] += in[xi] * go;
                            }
                }
    return 0;
}
static int rn_conv_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    return rn_conv_back((rn_conv *)self, x, dy, dx);
}
static int rn_conv_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    return rn_conv_back((rn_conv *)self, x, dy, NULL);
}

/* ---- ReLU, and the residual add: y = relu(x + the popped block input); stash: y again ---- */
typedef struct rn_act {
    int pop, stash; /* 0 / 1 */
} rn_act;
static int rn_act_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const rn_act *a = (const rn_act *)self;
    size_t i, n = (size_t)mb_numel(&x[0]);
    const float *in = (const float *)x[0].data, *skip = a->pop ? (const float *)x[1].data : NULL;
    for (i = 0; i < n; i++) {
        float v = in[i] + (skip ? skip[i] : 0.0f);
        ((float *)y[0].data)[i] = v > 0 ? v : 0;
        if (a->stash) ((float *)y[1].data)[i] = v > 0 ? v : 0;
    }
    return 0;
}
/* dy (and the stash's gradient) where the output was positive, to x and to the popped skip. */
static int rn_act_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const rn_act *a = (const rn_act *)self;
    size_t i, n = (size_t)mb_numel(&x[0]);
    const float *in = (const float *)x[0].data, *skip = a->pop ? (const float *)x[1].data : NULL;
    for (i = 0; i < n; i++) {
        float g = ((const float *)dy[0].data)[i] + (a->stash ? ((const float *)dy[1].data)[i] : 0.0f);
        g = in[i] + (skip ? skip[i] : 0.0f) > 0 ? g : 0.0f;
        ((float *)dx[0].data)[i] = g;
        if (skip) ((float *)dx[1].data)[i] = g;
    }
    return 0;
}

/* ---- 2x2 max pool: [n, c, 28, 28] -> [n, c, 14, 14] ---- */
static int rn_pool_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const float *in = (const float *)x[0].data;
    int p, r, q, k, npl = x[0].shape[0] * RN_C;
    (void)self;
    for (p = 0; p < npl; p++)
        for (r = 0; r < RN_P; r++)
            for (q = 0; q < RN_P; q++) {
                float m = in[(p * RN_HW + 2 * r) * RN_HW + 2 * q];
                for (k = 1; k < 4; k++) {
                    float v = in[(p * RN_HW + 2 * r + k / 2) * RN_HW + 2 * q + k % 2];
                    if (v > m) m = v;
                }
                ((float *)y[0].data)[(p * RN_P + r) * RN_P + q] = m;
                ((float *)y[1].data)[(p * RN_P + r) * RN_P + q] = m; /* stashed: the block's input */
            }
    return 0;
}
/* The gradient to the first maximum of each window: the output's and the skip's. */
static int rn_pool_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const float *in = (const float *)x[0].data;
    int p, r, q, k, npl = x[0].shape[0] * RN_C;
    (void)self;
    memset(dx[0].data, 0, sizeof(float) * (size_t)(npl * RN_HW * RN_HW));
    for (p = 0; p < npl; p++)
        for (r = 0; r < RN_P; r++)
            for (q = 0; q < RN_P; q++) {
                int best = 0, at = (p * RN_P + r) * RN_P + q;
                for (k = 1; k < 4; k++)
                    if (in[(p * RN_HW + 2 * r + k / 2) * RN_HW + 2 * q + k % 2] >
                        in[(p * RN_HW + 2 * r + best / 2) * RN_HW + 2 * q + best % 2])
                        best = k;
                ((float *)dx[0].data)[(p * RN_HW + 2 * r + best / 2) * RN_HW + 2 * q + best % 2] =
                    ((const float *)dy[0].data)[at] + ((const float *)dy[1].data)[at];
            }
    return 0;
}

/* ---- 2x2 average pool [n, c, 14, 14] -> [n, c, 7, 7], then Linear c * 49 -> 10 ---- */
#define RN_Q  (RN_P / 2)
#define RN_FC (RN_C * RN_Q * RN_Q)
static int rn_avg_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const float *in = (const float *)x[0].data;
    int p, r, q, npl = x[0].shape[0] * RN_C;
    (void)self;
    for (p = 0; p < npl; p++)
        for (r = 0; r < RN_Q; r++)
            for (q = 0; q < RN_Q; q++) {
                const float *w = in + (p * RN_P + 2 * r) * RN_P + 2 * q;
                ((float *)y[0].data)[(p * RN_Q + r) * RN_Q + q] = (w[0] + w[1] + w[RN_P] + w[RN_P + 1]) * 0.25f;
            }
    return 0;
}
static int rn_avg_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    int p, r, q, npl = x[0].shape[0] * RN_C;
    (void)self;
    for (p = 0; p < npl; p++)
        for (r = 0; r < RN_P; r++)
            for (q = 0; q < RN_P; q++)
                ((float *)dx[0].data)[(p * RN_P + r) * RN_P + q] =
                    ((const float *)dy[0].data)[(p * RN_Q + r / 2) * RN_Q + q / 2] * 0.25f;
    return 0;
}
typedef struct rn_linear {
    float w[RN_OUT * RN_FC], b[RN_OUT], gw[RN_OUT * RN_FC], gb[RN_OUT];
} rn_linear;
static int rn_linear_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const rn_linear *l = (const rn_linear *)self;
    int n, o, i;
    for (n = 0; n < x[0].shape[0]; n++)
        for (o = 0; o < RN_OUT; o++) {
            float s = l->b[o];
            for (i = 0; i < RN_FC; i++) s += l->w[o * RN_FC + i] * ((const float *)x[0].data)[n * RN_FC + i];
            ((float *)y[0].data)[n * RN_OUT + o] = s;
        }
    return 0;
}
static int rn_linear_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const rn_linear *l = (const rn_linear *)self;
    int n, o, i;
    for (n = 0; n < x[0].shape[0]; n++)
        for (i = 0; i < RN_FC; i++) {
            float s = 0;
            for (o = 0; o < RN_OUT; o++) s += l->w[o * RN_FC + i] * ((const float *)dy[0].data)[n * RN_OUT + o];
            ((float *)dx[0].data)[n * RN_FC + i] = s;
        }
    return 0;
}
static int rn_linear_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    rn_linear *l = (rn_linear *)self;
    int n, o, i;
    for (n = 0; n < x[0].shape[0]; n++)
        for (o = 0; o < RN_OUT; o++) {
            float g = ((const float *)dy[0].data)[n * RN_OUT + o];
            l->gb[o] += g;
            for (i = 0; i < RN_FC; i++) l->gw[o * RN_FC + i] += g * ((const float *)x[0].data)[n * RN_FC + i];
        }
    return 0;
}
#endif
