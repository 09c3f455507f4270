/* pipeline_bn.h — fairscale's DeferredBatchNorm as a pipeline layer (splitcore)

   BatchNorm over a pipeline's microbatches as fairscale's DeferredBatchNorm
   (fairscale/nn/pipe/batchnorm.py, Pipe's deferred_batch_norm=True): in training each
   microbatch is normalized by its own statistics, while the running mean and variance are
   updated once per mini-batch, from the statistics of all its `chunks` microbatches, so a
   pipelined step updates them exactly as one un-microbatched step does; a checkpointed
   microbatch's recompute (pp_layer.recompute) does not count twice. Eval normalizes by the
   running statistics. x is [rows, C, ...] (at least 3 dims, as fairscale checks), f32. No
   heap: the caller gives every array. C99, C++-clean.

   Example (8 channels, 4 microbatches per step):
       #define SPLITCORE_IMPLEMENTATION  // this header, pipeline.h and its executor
       #include <splitcore/pipeline_bn.h>
       static float w[8], b[8], rm[8], rv[8], gw[8], gb[8];  static double acc[16];
       pp_dbn bn;  pp_layer L = {0};
       pp_dbn_init(&bn, 8, 1e-5f, 0.1f, 4, w, b, rm, rv, gw, gb, acc);  // w = 1, b = 0, rv = 1
       pp_dbn_layer(&bn, &L);        // L.forward, backward_input, backward_weight, recompute
       L.out = &spec;  L.nout = 1;   // the executor's shape of its output: as its input

   Contents: 1. Declarations   2. Implementation (PIPELINE_BN_IMPLEMENTATION)

   Configuration: PIPELINE_BN_IMPLEMENTATION (the definitions, in exactly one .c file;
   implied by PIPELINE_IMPLEMENTATION and SPLITCORE_IMPLEMENTATION), PIPELINE_BN_STATIC,
   PP_SQRT(x) (default: sqrt of <math.h>, the only libm call).

   Errors are pipeline.h's: pp_dbn_init returns PP_ERR_NULL / PP_ERR_ARG, and the layer
   callbacks PP_ERR_ARG for a tensor that is not f32 [rows, C, ...] with C channels (the
   executor reports PP_ERR_LAYER with it in pp_exec.err).
   Threads: a pp_dbn belongs to one layer on one rank; no state outside it. Statistics are
   accumulated in double in sample order, so the mean over microbatches in order equals the
   mean over the mini-batch bit for bit. */
#if defined(SPLITCORE_IMPLEMENTATION) || defined(PIPELINE_IMPLEMENTATION)
#ifndef PIPELINE_BN_IMPLEMENTATION
#define PIPELINE_BN_IMPLEMENTATION
#endif
#endif
#if defined(SPLITCORE_STATIC) || defined(PIPELINE_STATIC)
#ifndef PIPELINE_BN_STATIC
#define PIPELINE_BN_STATIC
#endif
#endif
#ifndef PIPELINE_BN_H
#define PIPELINE_BN_H

/* ---- 1. Declarations --------------------------------------------------------------- */
#include "pipeline.h"
#if SPLITCORE_VERSION != 200
#error "pipeline_bn.h: splitcore headers of different releases are included together"
#endif
#ifdef PIPELINE_BN_STATIC
#define PP_BN_API static
#else
#define PP_BN_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pp_dbn {
    int32_t channels;
    float eps;
    float momentum;   /* < 0: a cumulative average (torch's momentum=None) */
    int32_t chunks;   /* microbatches per mini-batch: the running statistics commit after them */
    int32_t training; /* 1 (pp_dbn_init): microbatch statistics, tracked; 0: the running ones */
    float *weight, *bias, *running_mean, *running_var; /* channels each */
    float *grad_weight, *grad_bias;                    /* accumulated; the caller zeroes them */
    double *sum, *sum_squares;                         /* the tracked statistics (channels each) */
    int64_t counter, num_batches_tracked;
    int32_t tracked;
} pp_dbn;

/* A DeferredBatchNorm over caller arrays: weight 1, bias 0, running mean 0, running var 1,
   nothing tracked (torch's reset); acc holds 2 * channels doubles. PP_ERR_NULL, PP_ERR_ARG
   (channels <= 0, chunks <= 0, eps <= 0). */
PP_BN_API int pp_dbn_init(pp_dbn *bn, int channels, float eps, float momentum, int chunks, float *weight, float *bias,
                          float *running_mean, float *running_var, float *grad_weight, float *grad_bias, double *acc);
/* Its pp_layer callbacks (self = bn); the layer's other fields are the caller's. */
PP_BN_API void pp_dbn_layer(pp_dbn *bn, pp_layer *layer);

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_BN_H */

/* ---- 2. Implementation ------------------------------------------------------------ */
#if defined(PIPELINE_BN_IMPLEMENTATION) && !defined(PIPELINE_BN_IMPLEMENTED)
#define PIPELINE_BN_IMPLEMENTED
#include <string.h> /* the default PP_MEMSET */
#ifndef PP_SQRT
#include <math.h>
#define PP_SQRT(x) sqrt(x)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PIPELINE_BN_STATIC
#define PP__BN_DEF static
#else
#define PP__BN_DEF
#endif

PP__BN_DEF int pp_dbn_init(pp_dbn *bn, int channels, float eps, float momentum, int chunks, float *weight, float *bias,
                           float *running_mean, float *running_var, float *grad_weight, float *grad_bias, double *acc)
{
    int c;
    if (!bn || !weight || !bias || !running_mean || !running_var || !grad_weight || !grad_bias || !acc)
        return PP_ERR_NULL;
    if (channels <= 0 || chunks <= 0 || !(eps > 0)) return PP_ERR_ARG;
    PP_MEMSET(bn, 0, sizeof *bn);
    bn->channels = channels;
    bn->eps = eps;
    bn->momentum = momentum;
    bn->chunks = chunks;
    bn->training = 1;
    bn->weight = weight;
    bn->bias = bias;
    bn->running_mean = running_mean;
    bn->running_var = running_var;
    bn->grad_weight = grad_weight;
    bn->grad_bias = grad_bias;
    bn->sum = acc;
    bn->sum_squares = acc + channels;
    for (c = 0; c < channels; c++) {
        weight[c] = 1.0f;
        bias[c] = 0.0f;
        running_mean[c] = 0.0f;
        running_var[c] = 1.0f;
        acc[c] = acc[channels + c] = 0.0;
    }
    return PP_OK;
}

/* x's rows (*n) and the elements per row and channel (*inner): [rows, C, ...] f32. */
static int pp__dbn_dims(const pp_dbn *bn, const mb_tensor *x, int32_t *n, int32_t *inner)
{
    int d;
    if (x->dtype != MB_F32 || x->ndim < 3 || x->shape[1] != bn->channels) return PP_ERR_ARG;
    *n = x->shape[0];
    *inner = 1;
    for (d = 2; d < x->ndim; d++) *inner *= x->shape[d];
    return PP_OK;
}

/* Channel c of x: its sum and sum of squares over rows and the inner dims, in sample order. */
static void pp__dbn_sums(const pp_dbn *bn, const float *x, int32_t n, int32_t inner, int c, double *s, double *q)
{
    int32_t r, i;
    *s = *q = 0.0;
    for (r = 0; r < n; r++)
        for (i = 0; i < inner; i++) {
            double v = x[((size_t)r * (size_t)bn->channels + (size_t)c) * (size_t)inner + (size_t)i];
            *s += v;
            *q += v * v;
        }
}

/* The statistics this call normalizes by, for channel c: the microbatch's (training; biased
   variance, as torch's batch_norm) or the running ones. */
static void pp__dbn_stats(const pp_dbn *bn, const float *x, int32_t n, int32_t inner, int c, double *mean,
                          double *invstd)
{
    double s, q, var;
    if (!bn->training) {
        *mean = bn->running_mean[c];
        var = bn->running_var[c];
    } else {
        pp__dbn_sums(bn, x, n, inner, c, &s, &q);
        *mean = s / ((double)n * inner);
        var = q / ((double)n * inner) - *mean * *mean;
    }
    *invstd = 1.0 / PP_SQRT(var + bn->eps);
}

/* DeferredBatchNorm._commit: the running statistics from the tracked microbatches. */
static void pp__dbn_commit(pp_dbn *bn)
{
    int c;
    double m;
    bn->num_batches_tracked++;
    m = bn->momentum < 0 ? 1.0 / (double)bn->num_batches_tracked : bn->momentum;
    for (c = 0; c < bn->channels; c++) {
        double mean = bn->sum[c] / (double)bn->counter, var = bn->sum_squares[c] / (double)bn->counter - mean * mean;
        bn->running_mean[c] = (float)(bn->running_mean[c] * (1.0 - m) + mean * m);
        bn->running_var[c] = (float)(bn->running_var[c] * (1.0 - m) + var * m);
        bn->sum[c] = bn->sum_squares[c] = 0.0;
    }
    bn->counter = 0;
    bn->tracked = 0;
}

static int pp__dbn_norm(pp_dbn *bn, const mb_tensor *x, mb_tensor *y, int track)
{
    int32_t n, inner, r, i;
    int c, rc = pp__dbn_dims(bn, x, &n, &inner);
    const float *xp = (const float *)x->data;
    float *yp = (float *)y->data;
    if (rc) return rc;
    for (c = 0; c < bn->channels; c++) {
        double mean, invstd;
        pp__dbn_stats(bn, xp, n, inner, c, &mean, &invstd);
        if (track && bn->training) { /* _track: this microbatch's sums */
            double s, q;
            pp__dbn_sums(bn, xp, n, inner, c, &s, &q);
            bn->sum[c] += s;
            bn->sum_squares[c] += q;
        }
        for (r = 0; r < n; r++)
            for (i = 0; i < inner; i++) {
                size_t at = ((size_t)r * (size_t)bn->channels + (size_t)c) * (size_t)inner + (size_t)i;
                yp[at] = (float)((xp[at] - mean) * invstd * bn->weight[c] + bn->bias[c]);
            }
    }
    if (track && bn->training) {
        bn->counter += (int64_t)n * inner;
        if (++bn->tracked == bn->chunks) pp__dbn_commit(bn);
    }
    return PP_OK;
}
static int pp__dbn_forward(void *self, const mb_tensor *x, mb_tensor *y)
{
    return pp__dbn_norm((pp_dbn *)self, x, y, 1);
}
static int pp__dbn_recompute(void *self, const mb_tensor *x, mb_tensor *y)
{
    return pp__dbn_norm((pp_dbn *)self, x, y, 0); /* fairscale: not under a recomputation */
}

/* The input gradient: training, through the microbatch's statistics
   (w * invstd / m * (m * dy - sum dy - xhat * sum(dy * xhat))); eval, dy * w * invstd. The
   weight gradients (sum dy * xhat, sum dy) are added when grad_w is set. */
static int pp__dbn_back(pp_dbn *bn, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx, int weights)
{
    int32_t n, inner, r, i;
    int c, rc = pp__dbn_dims(bn, x, &n, &inner);
    const float *xp = (const float *)x->data, *g = (const float *)dy->data;
    if (rc) return rc;
    for (c = 0; c < bn->channels; c++) {
        double mean, invstd, sg = 0.0, sgx = 0.0, m = (double)n * inner;
        pp__dbn_stats(bn, xp, n, inner, c, &mean, &invstd);
        for (r = 0; r < n; r++)
            for (i = 0; i < inner; i++) {
                size_t at = ((size_t)r * (size_t)bn->channels + (size_t)c) * (size_t)inner + (size_t)i;
                sg += g[at];
                sgx += g[at] * (xp[at] - mean) * invstd;
            }
        if (weights) {
            bn->grad_weight[c] += (float)sgx;
            bn->grad_bias[c] += (float)sg;
            continue;
        }
        for (r = 0; r < n; r++)
            for (i = 0; i < inner; i++) {
                size_t at = ((size_t)r * (size_t)bn->channels + (size_t)c) * (size_t)inner + (size_t)i;
                double d = bn->training ? (m * g[at] - sg - (xp[at] - mean) * invstd * sgx) / m : g[at];
                ((float *)dx->data)[at] = (float)(d * invstd * bn->weight[c]);
            }
    }
    return PP_OK;
}
static int pp__dbn_backward_input(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    return pp__dbn_back((pp_dbn *)self, x, dy, dx, 0);
}
static int pp__dbn_backward_weight(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    return pp__dbn_back((pp_dbn *)self, x, dy, NULL, 1);
}

PP__BN_DEF void pp_dbn_layer(pp_dbn *bn, pp_layer *layer)
{
    if (!bn || !layer) return;
    layer->forward = pp__dbn_forward;
    layer->recompute = pp__dbn_recompute;
    layer->backward_input = pp__dbn_backward_input;
    layer->backward_weight = pp__dbn_backward_weight;
    layer->self = bn;
    layer->param_bytes = (uint32_t)(2u * sizeof(float) * (uint32_t)bn->channels);
}

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_BN_IMPLEMENTATION */
