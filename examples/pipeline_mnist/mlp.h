/* mlp.h — the Fashion-MNIST MLP's layers as pipeline.h pp_layers (host demo and firmware).
   Linear layers keep their weights transposed (wt[in][out]). The kernels work on GCC
   vector extensions of MLP_VW floats (8 with AVX, else 4; other compilers or targets
   without SIMD get them lowered to scalar code by GCC) in register tiles:
     forward  4 rows x 2 vectors of outputs per tile: y[r][o] = b[o] + sum over i in
              increasing order of x[r][i] * wt[i][o], every product and sum rounded
              (no fused multiply-add: build with -ffp-contract=off or an ISO -std): the
              same bits at any vector width, so the bare-metal build (soft float, scalar)
              computes the host's forward exactly;
     backward_weight  gwt[i][o] += x[r][i] * dy[r][o] for r in increasing order (the
              same bits as a loop over rows), gb[o] += dy[r][o];
     backward_input   dx[r][i] = sum over o of dy[r][o] * wt[i][o] in MLP_VW partial sums
              (o modulo 2 * MLP_VW, the two halves added, then pairwise), so its bits
              depend on MLP_VW (the host only trains).
   The network's first layer needs no backward_input: the executor skips the model
   input's gradient. Needs only <string.h>. */
#ifndef MLP_H
#define MLP_H
#include <string.h>
#include "pipeline.h"
#ifdef MLP_CBLAS
#include <cblas.h>
#endif

typedef struct mlp_linear {
    int in, out;
    const float *wt, *b; /* wt[in * out], b[out] */
    float *gwt, *gb;     /* gradients (training only) */
} mlp_linear;

#ifdef __AVX__
#define MLP_VW 8
#else
#define MLP_VW 4
#endif
/* unaligned, aliasing any float: loads and stores of MLP_VW floats */
typedef float mlp_v __attribute__((vector_size(MLP_VW * 4), aligned(4), may_alias));
#define MLP_LD(p)    (*(const mlp_v *)(const void *)(p))
#define MLP_ST(p, v) (*(mlp_v *)(void *)(p) = (v))

static int mlp_linear_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const mlp_linear *L = (const mlp_linear *)self;
    const int in = L->in, out = L->out, rows = x->shape[0];
    const float *X = (const float *)x->data;
    float *Y = (float *)y->data;
    int r0 = 0, o0, r, i, o;
    for (; r0 + 4 <= rows && out % (2 * MLP_VW) == 0; r0 += 4) {
        const float *x0 = X + (size_t)r0 * in, *x1 = x0 + in, *x2 = x1 + in, *x3 = x2 + in;
        float *y0 = Y + (size_t)r0 * out, *y1 = y0 + out, *y2 = y1 + out, *y3 = y2 + out;
        for (o0 = 0; o0 < out; o0 += 2 * MLP_VW) {
            mlp_v a0 = MLP_LD(L->b + o0), b0 = MLP_LD(L->b + o0 + MLP_VW);
            mlp_v a1 = a0, b1 = b0, a2 = a0, b2 = b0, a3 = a0, b3 = b0;
            const float *w = L->wt + o0;
            for (i = 0; i < in; i++, w += out) {
                const mlp_v wa = MLP_LD(w), wb = MLP_LD(w + MLP_VW);
                a0 += x0[i] * wa;
                b0 += x0[i] * wb;
                a1 += x1[i] * wa;
                b1 += x1[i] * wb;
                a2 += x2[i] * wa;
                b2 += x2[i] * wb;
                a3 += x3[i] * wa;
                b3 += x3[i] * wb;
            }
            MLP_ST(y0 + o0, a0);
            MLP_ST(y0 + o0 + MLP_VW, b0);
            MLP_ST(y1 + o0, a1);
            MLP_ST(y1 + o0 + MLP_VW, b1);
            MLP_ST(y2 + o0, a2);
            MLP_ST(y2 + o0 + MLP_VW, b2);
            MLP_ST(y3 + o0, a3);
            MLP_ST(y3 + o0 + MLP_VW, b3);
        }
    }
    for (r = r0; r < rows; r++) {
        const float *xr = X + (size_t)r * in;
        float *yr = Y + (size_t)r * out;
        memcpy(yr, L->b, sizeof(float) * (size_t)out);
        for (i = 0; i < in; i++) {
            const float xi = xr[i], *w = L->wt + (size_t)i * out;
            for (o = 0; o < out; o++) yr[o] += xi * w[o];
        }
    }
    return 0;
}
/* the MLP_VW partial sums l[] of one dot product, added pairwise down to l[0] */
static float mlp__lanes(float *l)
{
    int k, j;
    for (k = MLP_VW / 2; k; k /= 2)
        for (j = 0; j < k; j++) l[j] += l[j + k];
    return l[0];
}
static int mlp_linear_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const mlp_linear *L = (const mlp_linear *)self;
    const int in = L->in, out = L->out, rows = dy->shape[0], ov = out - out % (2 * MLP_VW);
    const float *G = (const float *)dy->data;
    float *D = (float *)dx->data;
    int r = 0, i, o, q, n;
    (void)x;
    for (; r < rows; r += n) {
        const float *g = G + (size_t)r * out;
        n = rows - r >= 4 ? 4 : 1;
        for (i = 0; i < in; i++) {
            const float *w = L->wt + (size_t)i * out;
            float l[4][MLP_VW];
            if (n == 4) {
                mlp_v a0 = {0}, b0 = {0}, a1 = {0}, b1 = {0}, a2 = {0}, b2 = {0}, a3 = {0}, b3 = {0};
                for (o = 0; o < ov; o += 2 * MLP_VW) {
                    const mlp_v wa = MLP_LD(w + o), wb = MLP_LD(w + o + MLP_VW);
                    a0 += MLP_LD(g + o) * wa;
                    b0 += MLP_LD(g + o + MLP_VW) * wb;
                    a1 += MLP_LD(g + out + o) * wa;
                    b1 += MLP_LD(g + out + o + MLP_VW) * wb;
                    a2 += MLP_LD(g + 2 * out + o) * wa;
                    b2 += MLP_LD(g + 2 * out + o + MLP_VW) * wb;
                    a3 += MLP_LD(g + 3 * out + o) * wa;
                    b3 += MLP_LD(g + 3 * out + o + MLP_VW) * wb;
                }
                MLP_ST(l[0], a0 + b0);
                MLP_ST(l[1], a1 + b1);
                MLP_ST(l[2], a2 + b2);
                MLP_ST(l[3], a3 + b3);
            } else {
                mlp_v a0 = {0}, b0 = {0};
                for (o = 0; o < ov; o += 2 * MLP_VW) {
                    a0 += MLP_LD(g + o) * MLP_LD(w + o);
                    b0 += MLP_LD(g + o + MLP_VW) * MLP_LD(w + o + MLP_VW);
                }
                MLP_ST(l[0], a0 + b0);
            }
            for (q = 0; q < n; q++) {
                for (o = ov; o < out; o++) l[q][(o - ov) % MLP_VW] += g[(size_t)q * out + o] * w[o];
                D[(size_t)(r + q) * in + i] = mlp__lanes(l[q]);
            }
        }
    }
    return 0;
}
static int mlp_linear_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    const mlp_linear *L = (const mlp_linear *)self;
    const int in = L->in, out = L->out, rows = dy->shape[0];
    const float *G = (const float *)dy->data, *X = (const float *)x->data;
    int r, i, o;
    for (r = 0; r < rows; r++)
        for (o = 0; o < out; o++) L->gb[o] += G[(size_t)r * out + o];
    for (i = 0; i < in; i++) {
        float *gw = L->gwt + (size_t)i * out;
        for (o = 0; o + 4 * MLP_VW <= out; o += 4 * MLP_VW) {
            mlp_v a0 = MLP_LD(gw + o), a1 = MLP_LD(gw + o + MLP_VW);
            mlp_v a2 = MLP_LD(gw + o + 2 * MLP_VW), a3 = MLP_LD(gw + o + 3 * MLP_VW);
            const float *xr = X + i, *g = G + o;
            for (r = 0; r < rows; r++, xr += in, g += out) {
                const float xi = *xr;
                a0 += xi * MLP_LD(g);
                a1 += xi * MLP_LD(g + MLP_VW);
                a2 += xi * MLP_LD(g + 2 * MLP_VW);
                a3 += xi * MLP_LD(g + 3 * MLP_VW);
            }
            MLP_ST(gw + o, a0);
            MLP_ST(gw + o + MLP_VW, a1);
            MLP_ST(gw + o + 2 * MLP_VW, a2);
            MLP_ST(gw + o + 3 * MLP_VW, a3);
        }
        for (; o < out; o++) {
            float a = gw[o];
            for (r = 0; r < rows; r++) a += X[(size_t)r * in + i] * G[(size_t)r * out + o];
            gw[o] = a;
        }
    }
    return 0;
}

#ifdef MLP_CBLAS
/* The same three kernels through a CBLAS's sgemm, for training on a host with a BLAS: other
   summation orders (and fused multiply-adds) than the kernels above, so their bits differ.
   A call's output columns are cut into the fewest slices, up to 8, of at most 10^6
   multiply-adds each and, for the input gradient, at most 1200 outputs: the sizes OpenBLAS
   (0.3.16 on, AVX-512 kernel sets) serves with its small-matrix kernels, which do not pack
   the weights. On one microbatch of 8 that halves the calls' time (the 784x256 forward
   28 us instead of 50, the 256x128 input gradient 5 instead of 11, on an AMD EPYC with
   OpenBLAS 0.3.21); beyond 8 slices one call, whose packing pays for itself. */
static int mlp__slices(int rows, int n, int k, int max_out)
{
    int p;
    for (p = 1; p <= 8; p++) {
        int c = (n + p - 1) / p;
        if ((double)rows * c * k <= 1e6 && (!max_out || rows * c <= max_out)) return (n + c - 1) / c;
    }
    return 1;
}
static int mlp_linear_fwd_cblas(void *self, const mb_tensor *x, mb_tensor *y)
{
    const mlp_linear *L = (const mlp_linear *)self;
    const int in = L->in, out = L->out, rows = x->shape[0], p = mlp__slices(rows, out, in, 0);
    const int c = (out + p - 1) / p;
    float *Y = (float *)y->data;
    int r, o;
    for (r = 0; r < rows; r++) memcpy(Y + (size_t)r * out, L->b, sizeof(float) * (size_t)out);
    for (o = 0; o < out; o += c)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, out - o < c ? out - o : c, in, 1.0f,
                    (const float *)x->data, in, L->wt + o, out, 1.0f, Y + o, out);
    return 0;
}
static int mlp_linear_bi_cblas(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const mlp_linear *L = (const mlp_linear *)self;
    const int in = L->in, out = L->out, rows = dy->shape[0], p = mlp__slices(rows, in, out, 1200);
    const int c = (in + p - 1) / p;
    int i;
    (void)x;
    for (i = 0; i < in; i += c)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, in - i < c ? in - i : c, out, 1.0f,
                    (const float *)dy->data, out, L->wt + (size_t)i * out, out, 0.0f, (float *)dx->data + i, in);
    return 0;
}
static int mlp_linear_bw_cblas(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    const mlp_linear *L = (const mlp_linear *)self;
    const int in = L->in, out = L->out, rows = dy->shape[0], p = mlp__slices(in, out, rows, 0);
    const int c = (out + p - 1) / p;
    const float *G = (const float *)dy->data;
    int r, o;
    for (r = 0; r < rows; r++)
        for (o = 0; o < out; o++) L->gb[o] += G[(size_t)r * out + o];
    for (o = 0; o < out; o += c)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out - o < c ? out - o : c, rows, 1.0f,
                    (const float *)x->data, in, G + o, out, 1.0f, L->gwt + o, out);
    return 0;
}
#endif

static int mlp_relu_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    int64_t n = (int64_t)x->shape[0] * x->shape[1], i;
    const float *a = (const float *)x->data;
    float *b = (float *)y->data;
    (void)self;
    for (i = 0; i < n; i++) b[i] = a[i] > 0 ? a[i] : 0.0f;
    return 0;
}

static int mlp_relu_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    int64_t n = (int64_t)x->shape[0] * x->shape[1], i;
    const float *a = (const float *)x->data, *g = (const float *)dy->data;
    float *d = (float *)dx->data;
    (void)self;
    for (i = 0; i < n; i++) d[i] = a[i] > 0 ? g[i] : 0.0f;
    return 0;
}

/* 784-256-128-64-10: Linear ReLU | Linear ReLU | Linear ReLU | Linear, 4 stages. */
#define MLP_LAYERS 7
#define MLP_IN     784
#define MLP_OUT    10
static const int mlp_dims[5] = {784, 256, 128, 64, 10};
static const int32_t mlp_balance[4] = {2, 2, 2, 1};
/* 2 stages: the 784x256 linear alone, then the rest (pp_balance_by_cost's answer for the
   layers' measured costs, mlp.h's kernels and the CBLAS ones alike: the first linear is about
   two thirds of the work) */
static const int32_t mlp_balance2[2] = {1, 6};
static const int32_t mlp_balance1[1] = {MLP_LAYERS}; /* 1 stage: the whole model */

/* Fill layers[7] for `rows` rows per microbatch over lin[4]. */
static void mlp_layers(pp_layer *layers, mlp_linear *lin, int rows)
{
    int k, n = 0;
    memset(layers, 0, sizeof(pp_layer) * MLP_LAYERS);
    for (k = 0; k < 4; k++) {
        pp_layer *a = &layers[n++];
        a->forward = mlp_linear_fwd;
        a->backward_input = mlp_linear_bi;
        a->backward_weight = mlp_linear_bw;
        a->self = &lin[k];
        a->act_bytes = (uint32_t)(rows * mlp_dims[k + 1] * 4);
        a->param_bytes = (uint32_t)((mlp_dims[k] + 1) * mlp_dims[k + 1] * 4);
        if (k < 3) {
            pp_layer *b = &layers[n++];
            b->forward = mlp_relu_fwd;
            b->backward_input = mlp_relu_bi;
            b->act_bytes = a->act_bytes;
        }
    }
}

#ifdef MLP_CBLAS
/* Switch the linear layers of layers[7] (from mlp_layers) to the CBLAS kernels. */
static void mlp_layers_cblas(pp_layer *layers)
{
    int n;
    for (n = 0; n < MLP_LAYERS; n += 2) {
        layers[n].forward = mlp_linear_fwd_cblas;
        layers[n].backward_input = mlp_linear_bi_cblas;
        layers[n].backward_weight = mlp_linear_bw_cblas;
    }
}
#endif

/* Plain SGD, w -= lr * g, and SGD with momentum as PyTorch's (v = momentum * v + g, then
   w -= lr * v), over n floats in MLP_VW-wide vectors: the same bits as the scalar loops
   (element by element, no contraction), which GCC's -O2 does not vectorize (n unknown). */
static inline void mlp_sgd(float *w, const float *g, int n, float lr)
{
    int i = 0;
    for (; i + MLP_VW <= n; i += MLP_VW) MLP_ST(w + i, MLP_LD(w + i) - lr * MLP_LD(g + i));
    for (; i < n; i++) w[i] -= lr * g[i];
}
static inline void mlp_sgd_momentum(float *w, float *v, const float *g, int n, float lr, float momentum)
{
    int i = 0;
    for (; i + MLP_VW <= n; i += MLP_VW) {
        const mlp_v m = momentum * MLP_LD(v + i) + MLP_LD(g + i);
        MLP_ST(v + i, m);
        MLP_ST(w + i, MLP_LD(w + i) - lr * m);
    }
    for (; i < n; i++) {
        v[i] = momentum * v[i] + g[i];
        w[i] -= lr * v[i];
    }
}

/* FNV-1a over the bits of n floats: host and firmware print it for their logits. */
static uint32_t mlp_fnv1a(const float *v, int n)
{
    uint32_t h = 2166136261u, u;
    int i, k;
    for (i = 0; i < n; i++) {
        memcpy(&u, &v[i], 4);
        for (k = 0; k < 4; k++) {
            h ^= (u >> (8 * k)) & 0xffu;
            h *= 16777619u;
        }
    }
    return h;
}

static int mlp_argmax(const float *v, int n)
{
    int i, best = 0;
    for (i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}
#endif /* MLP_H */
