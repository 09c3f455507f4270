/* mlp.h — the Fashion-MNIST MLP's layers as pipeline.h pp_layers (host demo and firmware).
   Linear layers keep their weights transposed (wt[in][out]) so the inner loops run over
   contiguous outputs: gcc vectorizes them without reordering any sum, and the bare-metal
   build (soft float) computes the same bits. Zero inputs (ReLU outputs, black pixels) are
   skipped, which changes no result. Needs only <string.h>. */
#ifndef MLP_H
#define MLP_H
#include <string.h>
#include "pipeline.h"

typedef struct mlp_linear {
    int in, out;
    const float *wt, *b;          /* wt[in * out], b[out] */
    float *gwt, *gb;              /* gradients (training only) */
} mlp_linear;

static int mlp_linear_fwd(void *self, const mb_tensor *x, mb_tensor *y) {
    const mlp_linear *L = (const mlp_linear *)self;
    int r, i, o, rows = x->shape[0];
    for (r = 0; r < rows; r++) {
        const float *xr = (const float *)x->data + (size_t)r * (size_t)L->in;
        float *yr = (float *)y->data + (size_t)r * (size_t)L->out;
        memcpy(yr, L->b, sizeof(float) * (size_t)L->out);
        for (i = 0; i < L->in; i++) {
            const float xi = xr[i], *w = L->wt + (size_t)i * (size_t)L->out;
            if (xi == 0.0f) continue;
            for (o = 0; o < L->out; o++) yr[o] += xi * w[o];
        }
    }
    return 0;
}

static int mlp_linear_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx) {
    const mlp_linear *L = (const mlp_linear *)self;
    int r, i, o, rows = dy->shape[0];
    (void)x;
    for (r = 0; r < rows; r++) {
        const float *g = (const float *)dy->data + (size_t)r * (size_t)L->out;
        float *d = (float *)dx->data + (size_t)r * (size_t)L->in;
        for (i = 0; i < L->in; i++) {
            const float *w = L->wt + (size_t)i * (size_t)L->out;
            float s = 0;
            for (o = 0; o < L->out; o++) s += g[o] * w[o];
            d[i] = s;
        }
    }
    return 0;
}

static int mlp_linear_bw(void *self, const mb_tensor *x, const mb_tensor *dy) {
    const mlp_linear *L = (const mlp_linear *)self;
    int r, i, o, rows = dy->shape[0];
    for (r = 0; r < rows; r++) {
        const float *g = (const float *)dy->data + (size_t)r * (size_t)L->out;
        const float *xr = (const float *)x->data + (size_t)r * (size_t)L->in;
        for (o = 0; o < L->out; o++) L->gb[o] += g[o];
        for (i = 0; i < L->in; i++) {
            float xi = xr[i], *gw = L->gwt + (size_t)i * (size_t)L->out;
            if (xi == 0.0f) continue;
            for (o = 0; o < L->out; o++) gw[o] += xi * g[o];
        }
    }
    return 0;
}

static int mlp_relu_fwd(void *self, const mb_tensor *x, mb_tensor *y) {
    int64_t n = (int64_t)x->shape[0] * x->shape[1], i;
    const float *a = (const float *)x->data;
    float *b = (float *)y->data;
    (void)self;
    for (i = 0; i < n; i++) b[i] = a[i] > 0 ? a[i] : 0.0f;
    return 0;
}

static int mlp_relu_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx) {
    int64_t n = (int64_t)x->shape[0] * x->shape[1], i;
    const float *a = (const float *)x->data, *g = (const float *)dy->data;
    float *d = (float *)dx->data;
    (void)self;
    for (i = 0; i < n; i++) d[i] = a[i] > 0 ? g[i] : 0.0f;
    return 0;
}

/* 784-256-128-64-10: Linear ReLU | Linear ReLU | Linear ReLU | Linear, 4 stages. */
#define MLP_LAYERS 7
#define MLP_IN 784
#define MLP_OUT 10
static const int mlp_dims[5] = {784, 256, 128, 64, 10};
static const int32_t mlp_balance[4] = {2, 2, 2, 1};

/* Fill layers[7] for `rows` rows per microbatch over lin[4]. */
static void mlp_layers(pp_layer *layers, mlp_linear *lin, int rows) {
    int k, n = 0;
    memset(layers, 0, sizeof(pp_layer) * MLP_LAYERS);
    for (k = 0; k < 4; k++) {
        pp_layer *a = &layers[n++];
        a->forward = mlp_linear_fwd; a->backward_input = mlp_linear_bi;
        a->backward_weight = mlp_linear_bw; a->self = &lin[k];
        a->act_bytes = (uint32_t)(rows * mlp_dims[k + 1] * 4);
        a->param_bytes = (uint32_t)((mlp_dims[k] + 1) * mlp_dims[k + 1] * 4);
        if (k < 3) {
            pp_layer *b = &layers[n++];
            b->forward = mlp_relu_fwd; b->backward_input = mlp_relu_bi;
            b->act_bytes = a->act_bytes;
        }
    }
}

/* FNV-1a over the bits of n floats: host and firmware print it for their logits. */
static uint32_t mlp_fnv1a(const float *v, int n) {
    uint32_t h = 2166136261u, u;
    int i, k;
    for (i = 0; i < n; i++) {
        memcpy(&u, &v[i], 4);
        for (k = 0; k < 4; k++) { h ^= (u >> (8 * k)) & 0xffu; h *= 16777619u; }
    }
    return h;
}

static int mlp_argmax(const float *v, int n) {
    int i, best = 0;
    for (i = 1; i < n; i++) if (v[i] > v[best]) best = i;
    return best;
}
#endif /* MLP_H */
