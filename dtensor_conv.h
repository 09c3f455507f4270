/* dtensor_conv.h — DTensor conv2d and max pool: kernels, sharded forms with halo exchange, backward (splitcore)

   Convolution for DTensors on top of the core (dtensor.h), after DTensor's _tp_conv.py:
   single-rank kernels (f32 conv2d and its backward, max pool of f32 and int8 and its
   backward; portable C99 direct loops, no im2col, no scratch) and their sharded forms
   over a dt_comm, each rank's output an ordinary DTensor shard: batch, output channels,
   or rows (Shard(H) with any stride, padding, dilation and groups: a halo exchange over
   pg point-to-point, then the rank's window), bit-identical to the single-rank kernel.
   int8 conv2d is dtensor_qconv.h (it needs dtensor_quant.h's requantization). No heap,
   C99, C++-clean. Includes dtensor.h.

   Example (a 3x3 conv2d, padding 1, of one 3-channel 8x8 image on one rank):
       #define SPLITCORE_IMPLEMENTATION  // this header, dtensor.h, microbatch.h, pg.h
       #include <splitcore/dtensor_conv.h>
       static float x[3 * 8 * 8], w[4 * 3 * 3 * 3], b[4], y[4 * 8 * 8];
       int32_t xs[4] = {1, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, bs[1] = {4}, ys[4];
       dt_conv2d_params p = DT_CONV2D(DT_NCHW, 1, 1, 1, 1);  // stride, padding, dilation, groups
       mb_tensor in, wt, bias, out;
       dt_conv2d_out_shape(&p, xs, ws, ys);                   // {1, 4, 8, 8}
       mb_tensor_init(&in, x, MB_F32, 4, xs);    mb_tensor_init(&wt, w, MB_F32, 4, ws);
       mb_tensor_init(&bias, b, MB_F32, 1, bs);  mb_tensor_init(&out, y, MB_F32, 4, ys);
       int rc = dt_conv2d_ref(&p, &in, &wt, &bias, &out);    // dt_conv2d: the same, sharded

   Contents:
       1. Configuration macros             4. Internal, for the dtensor modules
       2. conv2d and max pool kernels      5. Implementation (DTENSOR_CONV_IMPLEMENTATION)
       3. Sharded conv2d and max pool

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; section 1 has
   each default; dtensor.h's apply too):
       DTENSOR_CONV_IMPLEMENTATION  emit the definitions (exactly one .c file, the one
                                    that implements dtensor.h; or SPLITCORE_IMPLEMENTATION)
       DTENSOR_CONV_STATIC          make every function static to its translation unit
       DT_CONV_TAG                  pg user tag of the spatial halo exchange (default 0x7C00)
       DT_NO_SHARDED_CONV_BACKWARD  1: leave out dt_conv2d_sharded_backward (the
                                    single-rank dt_conv2d_backward stays)

   Errors are dtensor.h's (DT_ERR_*, dt_strerror()): bad parameters or inconsistent
   shapes DT_ERR_SHAPE, wrong dtypes DT_ERR_DTYPE, tensors that do not match the shapes
   a call derives DT_ERR_MISMATCH, placements without a strategy DT_ERR_NO_STRATEGY, a
   failed exchange DT_ERR_COMM (the pg_err in dt_comm.err). Bad input never writes to the
   caller's outputs (docs/error-contract.md lists every case).

   Threads, memory: the kernels work only on their arguments; the sharded calls block in
   ports/pg.h (never from an ISR; every rank of the mesh calls them in the same order).
   Scratch is the caller's, sized by dt_conv2d_scratch_bytes /
   dt_conv2d_backward_scratch_bytes. */
#ifndef DTENSOR_CONV_H
#define DTENSOR_CONV_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "dtensor.h"
#if SPLITCORE_VERSION != 200
#error "dtensor_conv.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(DTENSOR_CONV_IMPLEMENTATION)
#define DTENSOR_CONV_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(DTENSOR_CONV_STATIC)
#define DTENSOR_CONV_STATIC
#endif
#ifndef DT_CONV_TAG
#define DT_CONV_TAG 0x7C00 /* pg user tag of the halo exchange: keep it apart from the program's tags */
#endif
#if DT_CONV_TAG < 0 || DT_CONV_TAG > PG_TAG_MAX
#error "DT_CONV_TAG must be a pg user tag, 0..PG_TAG_MAX"
#endif
#ifndef DT_NO_SHARDED_CONV_BACKWARD
#define DT_NO_SHARDED_CONV_BACKWARD 0 /* 1: no dt_conv2d_sharded_backward */
#endif
#if DT_NO_SHARDED_CONV_BACKWARD != 0 && DT_NO_SHARDED_CONV_BACKWARD != 1
#error "DT_NO_SHARDED_CONV_BACKWARD must be 0 or 1"
#endif
#ifdef DTENSOR_CONV_STATIC
#define DT_CONV_API static
#else
#define DT_CONV_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. conv2d and max pool kernels --------------------------------------------------
   Local kernels (f32, max pool also int8; portable C99 direct loops, no im2col, no
   scratch) and their sharded forms over a dt_comm (section 3), after DTensor's
   _tp_conv.py; int8 conv2d (dt_conv2d_q8) is dtensor_qconv.h. Tensors are 4-D mb_tensor
   views of any strides: DT_NCHW puts them as [N, C, H, W], DT_NHWC as [N, H, W, C]; the weight is
   always torch's [C_out, C_in / groups, KH, KW] and the bias [C_out] (or NULL).
   Output size per spatial dim, as torch (ceil_mode False):
       out = (in + 2 * padding - dilation * (k - 1) - 1) / stride + 1   (must be >= 1)
   Padding is zeros for conv2d; max pool ignores it (torch's -inf) and, as torch, needs
   padding <= ((k - 1) * dilation + 1) / 2. Max pool picks the first maximum in window
   order (a NaN wins), as torch's CPU kernel, and its backward routes the gradient there.
   A window that holds no input element (possible when the dilation exceeds the input's
   size) gives -inf (int8: -128), torch's initial maximum, and no gradient.
   Bad parameters or inconsistent shapes: DT_ERR_SHAPE; wrong dtypes: DT_ERR_DTYPE;
   tensors not matching the shapes the call derives: DT_ERR_MISMATCH. */
enum dt_layout { DT_NCHW = 0, DT_NHWC = 1 };

typedef struct dt_conv2d_params {
    int32_t layout;      /* DT_NCHW or DT_NHWC (input and output) */
    int32_t stride[2];   /* (h, w) >= 1 */
    int32_t padding[2];  /* (h, w) >= 0 */
    int32_t dilation[2]; /* (h, w) >= 1 */
    int32_t groups;      /* conv2d: >= 1, divides C_in and C_out (max pool: unused) */
    int32_t kernel[2];   /* pools: window (h, w) >= 1 (conv2d: unused, the weight's) */
    int32_t count_pad;   /* average pool: 1 counts the padding in the divisor (torch's
                            count_include_pad), 0 only the input's elements */
} dt_conv2d_params;

/* {layout, stride, padding, dilation, groups, kernel, count_pad} with equal h and w. */
/* clang-format off */
#define DT_CONV2D(layout, stride, pad, dil, groups) \
    { (layout), {(stride), (stride)}, {(pad), (pad)}, {(dil), (dil)}, (groups), {0, 0}, 0 }
#define DT_POOL2D(layout, k, stride, pad) \
    { (layout), {(stride), (stride)}, {(pad), (pad)}, {1, 1}, 1, {(k), (k)}, 0 }
/* clang-format on */

/* Output shape (in the layout's dim order) for input shape in_shape[4] and weight shape
   w_shape[4], or w_shape NULL for max pool (p->kernel). */
DT_CONV_API int dt_conv2d_out_shape(const dt_conv2d_params *p, const int32_t *in_shape, const int32_t *w_shape,
                                    int32_t *out_shape);
/* out = conv2d(in, w) + bias (bias NULL: none). f32; out must not overlap the inputs. */
DT_CONV_API int dt_conv2d_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, const mb_tensor *bias,
                              mb_tensor *out);
/* Gradients of conv2d for grad_out (the output's shape): any of grad_in (in's shape),
   grad_w (w's shape), grad_b ([C_out]) may be NULL; each one given is overwritten. */
DT_CONV_API int dt_conv2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w,
                                   const mb_tensor *grad_out, mb_tensor *grad_in, mb_tensor *grad_w, mb_tensor *grad_b);
/* Max pool of f32 or int8 (out of in's dtype). */
DT_CONV_API int dt_maxpool2d_ref(const dt_conv2d_params *p, const mb_tensor *in, mb_tensor *out);
/* grad_in (in's shape) = the gradient of max pool for grad_out (overwritten). */
DT_CONV_API int dt_maxpool2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *grad_out,
                                      mb_tensor *grad_in);
/* Average pool of f32 or int8 (out of in's dtype), torch's avg_pool2d: the window's sum in
   window order divided by its count, the in-bounds elements or, with p->count_pad, those of
   the padded input (count_include_pad); int8 sums exactly in int32 and divides rounding half
   away from zero (TFLite's int8 AVERAGE_POOL_2D: the output has the input's scale). A
   window without any element gives 0. Global average pooling is the window of the input. */
DT_CONV_API int dt_avgpool2d_ref(const dt_conv2d_params *p, const mb_tensor *in, mb_tensor *out);

/* ---- 3. Sharded conv2d and max pool -------------------------------------------------
   Sharded (dt_conv2d, dt_maxpool2d): each mesh dim's pair (input, weight) placements
   picks the output's: (Shard(N), Replicate) -> Shard(N) (batch); (Replicate, Shard(0))
   -> Shard(C) (output channels; bias = this rank's slice of the bias, like the weight);
   (Shard(H), Replicate) -> Shard(H) (spatial, one mesh dim at most); (Replicate,
   Replicate) -> Replicate; max pool also (Shard(C)) -> Shard(C). Anything else (Partial,
   Shard(W), input channels, ...) is DT_ERR_NO_STRATEGY. torch's tp_conv shards W with
   stride 1, dilation 1 and padding k/2 only; here H is sharded with any stride,
   padding, dilation and groups (shard W by passing the transposed view).
   Spatial rows: with the input's H split over P ranks of the mesh dim, part i (the
   rank's coordinate on it) holds input rows chunk(H, P, i) = [a, b) and produces output
   rows chunk(OH, P, i) = [o0, o1) (torch.chunk sizes of the *output*, always: the
   output is an ordinary Shard(H) DTensor, also for stride > 1 and uneven H). It needs
   input rows [max(0, o0*s - p), min(H, (o1 - 1)*s - p + d*(KH - 1) + 1)) (none when
   o0 == o1); dt_conv2d_rows() gives all three ranges. Halo exchange: every rank sends
   each peer the rows of [a, b) the peer needs and receives from each peer the rows it
   needs that the peer holds (usually one neighbour each side; any rank when shards are
   thinner than the halo), over pg point-to-point with user tag DT_CONV_TAG, pairs taken
   in increasing peer order with the lower rank sending first (no deadlock, messages of
   at most pg_max_msg bytes); then it convolves its window in caller scratch. The result
   is bit-identical to the single-rank kernel (same accumulation order per element).
   Backward (dt_conv2d_sharded_backward, f32): the same strategies, gradients placed as
   torch's convolution_backward rule; spatially the reverse halo exchange sums each
   input row's gradient from the ranks whose windows read it. */
/* Spatial rows of part i of `parts` for input height h and kernel height kh (conv2d: the
   weight's KH; max pool: p->kernel[0]): rows[0..1] its input rows [a, b), rows[2..3] its
   output rows [o0, o1), rows[4..5] the input rows it needs [n0, n1) (n0 == n1: none). */
DT_CONV_API int dt_conv2d_rows(const dt_conv2d_params *p, int32_t h, int32_t kh, int32_t parts, int32_t i,
                               int32_t *rows);
/* The output spec of dt_conv2d (w_spec NULL: of dt_maxpool2d) for these specs. */
DT_CONV_API int dt_conv2d_out_spec(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                   dt_spec *out_spec);
/* Scratch of dt_conv2d / dt_maxpool2d (w_spec NULL) on this rank (in_spec->mesh->rank):
   the halo window plus one message's staging; 0 unless the input is Shard(H). */
DT_CONV_API int dt_conv2d_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                        size_t *bytes);
/* Sharded conv2d: this rank's output `out` (out_spec's local shape; out_spec may be NULL,
   else it receives the output spec). bias: NULL or this rank's [local C_out] slice.
   Every rank of the mesh calls it with equal specs. Scratch 8-byte aligned. `out` may be
   any view, e.g. this rank's rows of one array the ranks share; ranks on cores sharing
   memory ran 3-5 % faster each into buffers of their own (bench/conv). */
DT_CONV_API int dt_conv2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                          const mb_tensor *bias, dt_spec *out_spec, mb_tensor *out, void *scratch,
                          size_t scratch_bytes);
/* Sharded max pool of f32 or int8: dt_conv2d's rules without a weight (and Shard(C) kept). */
DT_CONV_API int dt_maxpool2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, dt_spec *out_spec,
                             mb_tensor *out, void *scratch, size_t scratch_bytes);
/* Sharded average pool: dt_maxpool2d's rules and halo exchange, dt_avgpool2d_ref's sums. */
DT_CONV_API int dt_avgpool2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, dt_spec *out_spec,
                             mb_tensor *out, void *scratch, size_t scratch_bytes);
#if !DT_NO_SHARDED_CONV_BACKWARD
/* Sharded conv2d backward (f32), DTensor's tp_convolution_backward: for grad_out with the
   spec dt_conv2d gives the output (else DT_ERR_MISMATCH; redistribute it there first, as
   tp_conv does), this rank's grad_in (the input's local shape), grad_w (the weight's) and
   grad_b ([local C_out]); any may be NULL, every rank passing the same ones. Per mesh
   dim, as torch's convolution_backward rule: the input's Shard(N) or Shard(H) makes
   grad_w and grad_b Partial(sum) (each rank's rows' or images' share; dt_redistribute to
   Replicate all-reduces them), the weight's Shard(0) makes grad_in Partial(sum) and
   grad_w, grad_b Shard(0); grad_in is otherwise placed as the input. grad_specs: NULL or
   3 specs receiving those of grad_in, grad_w, grad_b. Spatial: grad_in of the rank's
   window (input rows [n0, n1) of dt_conv2d_rows) from its output rows, then the rows a
   peer owns sent to it, each rank adding the peers' parts to its own rows in increasing
   peer order (the reverse halo exchange, same pairs and tag as forward); grad_w also
   exchanges the input halo. Sums match the single-rank dt_conv2d_backward to rounding
   (rows no peer's window reaches: bit for bit). Scratch 8-byte aligned, at least
   dt_conv2d_backward_scratch_bytes (two windows and one message; 0 unless spatial). */
DT_CONV_API int dt_conv2d_sharded_backward(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in,
                                           const dt_tensor *w, const dt_tensor *grad_out, mb_tensor *grad_in,
                                           mb_tensor *grad_w, mb_tensor *grad_b, dt_spec *grad_specs, void *scratch,
                                           size_t scratch_bytes);
/* Scratch of dt_conv2d_sharded_backward on this rank (in_spec->mesh->rank): two halo
   windows (input, its gradient) plus one message's staging; 0 unless the input is
   Shard(H). f32 only (else DT_ERR_DTYPE). */
DT_CONV_API int dt_conv2d_backward_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec,
                                                 const dt_spec *w_spec, size_t *bytes);
#endif /* DT_NO_SHARDED_CONV_BACKWARD */

/* ---- 4. Internal, for the dtensor modules -------------------------------------------
   Not API: what dtensor_qconv.h's implementation shares with this one (extern, or static
   with DTENSOR_CONV_STATIC: then dtensor_qconv.h is implemented in this file too). */
#ifdef DTENSOR_CONV_STATIC
#define DT_CONV__INTERNAL static DT__UNUSED
#else
#define DT_CONV__INTERNAL extern
#endif
/* A 4-D view in canonical (n, c, h, w) order, strides in elements. */
typedef struct dt__c4 {
    unsigned char *d;
    int32_t n, c, h, w;
    size_t sn, sc, sh, sw;
    size_t es; /* element bytes: 4 (f32, i32) or 1 (i8) */
} dt__c4;
/* The window a kernel computes: global input height h; the global input row of x's row 0,
   the global output row of y's row 0; global out channels oc and y's first one oc0. */
typedef struct dt__cwin {
    int32_t h, row0, orow0, oc, oc0;
} dt__cwin;
/* The kernel of a sharded call on this rank's window (w NULL: max pool). */
typedef void (*dt__ckern)(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *w,
                          const dt__c4 *y, const mb_tensor *bias, const void *extra);
/* The int8 element (n, c, h, w) of a canonical view. */
#define DT__I8(v, n, c, h, w)                                                                            \
    ((int8_t *)(void *)((v)->d + (size_t)(n) * (v)->sn + (size_t)(c) * (v)->sc + (size_t)(h) * (v)->sh + \
                        (size_t)(w) * (v)->sw))
/* t (4-D, `layout` order) as a canonical view. */
DT_CONV__INTERNAL dt__c4 dt__canon(const mb_tensor *t, int layout);
/* Checks of the single-rank calls: in (4-D of dtype dt), w (NULL: pool); canonical shapes
   of in and out into ci, co. */
DT_CONV__INTERNAL int dt__conv_args(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, mb_dtype dt,
                                    int32_t *ci, int32_t *co);
/* b NULL, or a valid [n] view of dtype dt. */
DT_CONV__INTERNAL int dt__bias_ok(const mb_tensor *b, int32_t n, mb_dtype dt);
/* t is a view of canonical shape cs (n, c, h, w) in `layout` order, dtype dt. */
DT_CONV__INTERNAL int dt__fits4(const mb_tensor *t, int dt, int layout, const int32_t *cs);
/* The whole input's window: height h, oc output channels. */
DT_CONV__INTERNAL dt__cwin dt__win_full(int32_t h, int32_t oc);
/* dt_conv2d (f32), dt_conv2d_q8 (int8) and dt_maxpool2d (w NULL; f32 or int8): `dt` the
   dtype the call takes (-1: either); kern runs on the rank's window with `extra`. */
DT_CONV__INTERNAL int dt__sharded(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                                  const mb_tensor *bias, int dt, dt__ckern kern, const void *extra, dt_spec *out_spec,
                                  mb_tensor *out, void *scratch, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_CONV_H */

/* ---- 5. Implementation ----------------------------------------------------------- */
#if defined(DTENSOR_CONV_IMPLEMENTATION) && !defined(DTENSOR_CONV_IMPLEMENTED)
#define DTENSOR_CONV_IMPLEMENTED
#if !defined(DTENSOR_IMPLEMENTATION) && (defined(DTENSOR_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "dtensor_conv.h: DTENSOR_CONV_IMPLEMENTATION needs DTENSOR_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DTENSOR_CONV_STATIC
#define DT_CONV__DEF static
#else
#define DT_CONV__DEF
#endif

DT_CONV__DEF dt__c4 dt__canon(const mb_tensor *t, int layout)
{
    dt__c4 v;
    int ci = layout == DT_NHWC ? 3 : 1, hi = layout == DT_NHWC ? 1 : 2, wi = hi + 1;
    v.d = (unsigned char *)t->data;
    v.n = t->shape[0];
    v.c = t->shape[ci];
    v.h = t->shape[hi];
    v.w = t->shape[wi];
    v.sn = (size_t)t->stride[0];
    v.sc = (size_t)t->stride[ci];
    v.sh = (size_t)t->stride[hi];
    v.sw = (size_t)t->stride[wi];
    v.es = mb_dtype_size(t->dtype);
    return v;
}

/* Canonical shape (n, c, h, w) <-> the layout's dim order. */
static void dt__order(int layout, const int32_t *from, int32_t *to, int to_layout)
{
    int32_t c[4];
    if (!to_layout) { /* from layout to canonical */
        c[0] = from[0];
        c[1] = from[layout == DT_NHWC ? 3 : 1];
        c[2] = from[layout == DT_NHWC ? 1 : 2];
        c[3] = from[layout == DT_NHWC ? 2 : 3];
    } else {
        c[0] = from[0];
        c[layout == DT_NHWC ? 3 : 1] = from[1];
        c[layout == DT_NHWC ? 1 : 2] = from[2];
        c[layout == DT_NHWC ? 2 : 3] = from[3];
    }
    DT_MEMCPY(to, c, sizeof c);
}

/* Output size of one spatial dim (< 1: bad). */
static int64_t dt__osize(int64_t in, int64_t k, int32_t s, int32_t p, int32_t d)
{
    int64_t span = in + 2 * (int64_t)p - (int64_t)d * (k - 1) - 1; /* < 0: window larger than input */
    return span < 0 ? 0 : span / s + 1;
}

/* Parameters and canonical shapes: in (n, c, h, w), weight shape w (NULL: max pool), out. */
static int dt__conv_shape(const dt_conv2d_params *p, const int32_t *in, const int32_t *w, int32_t *out)
{
    int i;
    int64_t o[2];
    if (!p) return DT_ERR_NULL;
    if ((p->layout != DT_NCHW && p->layout != DT_NHWC)) return DT_ERR_SHAPE;
    for (i = 0; i < 4; i++)
        if (in[i] < 0 || (w && w[i] < 0)) return DT_ERR_SHAPE;
    for (i = 0; i < 2; i++) {
        int32_t k = w ? w[2 + i] : p->kernel[i];
        if (p->stride[i] < 1 || p->padding[i] < 0 || p->dilation[i] < 1 || k < 1) return DT_ERR_SHAPE;
        if (!w && p->padding[i] > (int32_t)(((int64_t)(k - 1) * p->dilation[i] + 1) / 2)) return DT_ERR_SHAPE;
        o[i] = dt__osize(in[2 + i], k, p->stride[i], p->padding[i], p->dilation[i]);
        if (o[i] < 1 || o[i] > INT32_MAX) return DT_ERR_SHAPE;
    }
    if (w && (p->groups < 1 || in[1] % p->groups || w[0] % p->groups || (int64_t)w[1] * p->groups != in[1]))
        return DT_ERR_SHAPE;
    out[0] = in[0];
    out[1] = w ? w[0] : in[1];
    out[2] = (int32_t)o[0];
    out[3] = (int32_t)o[1];
    return DT_OK;
}

/* Output positions [lo, hi) of a row whose input column ow*s + off lies in [0, w). */
static void dt__span(int32_t w, int32_t ow, int32_t s, int32_t off, int32_t *lo, int32_t *hi)
{
    int64_t l = off >= 0 ? 0 : ((int64_t)-off + s - 1) / s,
            h = (int64_t)w - 1 - off < 0 ? 0 : ((int64_t)w - 1 - off) / s + 1;
    *lo = (int32_t)(l < ow ? l : ow);
    *hi = (int32_t)(h < ow ? h : ow);
}

/* One row: mode 0 y += a*x, mode 1 x += a*y, mode 2 returns sum y*x. */
static float dt__crow(int mode, float a, float *DT_RESTRICT y, size_t ys, float *DT_RESTRICT x, size_t xs, int32_t n)
{
    int32_t j;
    float acc = 0.0f;
    if (mode == 0) {
        if (ys == 1 && xs == 1) {
            int32_t k;
            for (j = 0; j + 8 <= n; j += 8) /* constant trip: vectorised at gcc -O2 */
                for (k = 0; k < 8; k++) y[j + k] += a * x[j + k];
            for (; j < n; j++) y[j] += a * x[j];
        } else
            for (j = 0; j < n; j++) y[(size_t)j * ys] += a * x[(size_t)j * xs];
    } else if (mode == 1) {
        if (ys == 1 && xs == 1)
            for (j = 0; j < n; j++) x[j] += a * y[j];
        else
            for (j = 0; j < n; j++) x[(size_t)j * xs] += a * y[(size_t)j * ys];
    } else {
        for (j = 0; j < n; j++) acc += y[(size_t)j * ys] * x[(size_t)j * xs];
    }
    return acc;
}

#define DT__F(v, n, c, h, w)                                                                                  \
    ((float *)(void *)((v)->d + 4u * ((size_t)(n) * (v)->sn + (size_t)(c) * (v)->sc + (size_t)(h) * (v)->sh + \
                                      (size_t)(w) * (v)->sw)))

/* y[j] = ((y[j] + a0*x[j+o0]) + a1*x[j+o1]) + a2*x[j+o2] for j in [L, H). */
static void dt__tap3(float *DT_RESTRICT y, const float *DT_RESTRICT x, const float *a, const int32_t *o, int32_t L,
                     int32_t H)
{
    const float a0 = a[0], a1 = a[1], a2 = a[2];
    const int32_t o0 = o[0], o1 = o[1], o2 = o[2];
    int32_t j, b;
    for (j = L; j + 8 <= H; j += 8) /* constant trip: vectorised at gcc -O2 */
        for (b = 0; b < 8; b++) {
            float t = y[j + b];
            t += a0 * x[j + b + o0];
            t += a1 * x[j + b + o1];
            t += a2 * x[j + b + o2];
            y[j + b] = t;
        }
    for (; j < H; j++) {
        float t = y[j];
        t += a0 * x[j + o0];
        t += a1 * x[j + o1];
        t += a2 * x[j + o2];
        y[j] = t;
    }
}

/* Forward rows of one (channel, kh) for a 3-wide kernel row, unit stride along w and
   contiguous rows: each element gets tap 0, 1, 2 in that order, as dt__crow tap by tap
   would give it, but the interior takes all three in one pass (a third of the loads and
   stores). 0 when the row has no interior (the caller goes tap by tap). */
static int dt__conv3(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *y, const float *wp,
                     size_t wsw, int32_t n, int32_t oc, int32_t ic, int32_t kh)
{
    float a[3];
    int32_t o[3], lo[3], hi[3], L = 0, H = y->w, k, j, oh;
    for (k = 0; k < 3; k++) {
        a[k] = wp[(size_t)k * wsw];
        o[k] = k * p->dilation[1] - p->padding[1];
        dt__span(x->w, y->w, 1, o[k], &lo[k], &hi[k]);
        if (lo[k] > L) L = lo[k];
        if (hi[k] < H) H = hi[k];
    }
    if (L >= H) return 0;
    for (oh = 0; oh < y->h; oh++) {
        float *DT_RESTRICT yr;
        const float *DT_RESTRICT xr;
        int64_t ih = (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
        if (ih < 0 || ih >= wn->h) continue;
        yr = DT__F(y, n, oc, oh, 0);
        xr = DT__F(x, n, ic, ih - wn->row0, 0);
        for (k = 0; k < 3; k++)
            for (j = lo[k]; j < L; j++) yr[j] += a[k] * xr[j + o[k]];
        dt__tap3(yr, xr, a, o, L, H);
        for (k = 0; k < 3; k++)
            for (j = H > lo[k] ? H : lo[k]; j < hi[k]; j++) yr[j] += a[k] * xr[j + o[k]];
    }
    return 1;
}

/* The conv2d walk: mode 0 forward (y = bias or 0, then accumulate), 1 grad input (x
   zeroed, accumulates), 2 grad weight (w zeroed, accumulates). y holds out channels
   oc0.. of the window, x every input channel. The order of the sums per element is the
   same for any window, so sharded results equal the single-rank result bit for bit. */
static void dt__conv_walk(const dt_conv2d_params *p, const dt__cwin *wn, int mode, const dt__c4 *x, const dt__c4 *w,
                          const dt__c4 *y, const mb_tensor *bias)
{
    int32_t n, oc, icg, kh, kw, oh, ow, lo, hi, icpg = w->c, ocpg = wn->oc / p->groups;
    for (n = 0; n < y->n; n++)
        for (oc = 0; oc < y->c; oc++) {
            int32_t ic0 = (wn->oc0 + oc) / ocpg * icpg;
            if (mode == 0) {
                float b = bias ? ((const float *)bias->data)[(size_t)oc * (size_t)bias->stride[0]] : 0.0f;
                for (oh = 0; oh < y->h; oh++)
                    for (ow = 0; ow < y->w; ow++) *DT__F(y, n, oc, oh, ow) = b;
            }
            for (icg = 0; icg < icpg; icg++)
                for (kh = 0; kh < w->h; kh++) {
                    if (mode == 0 && w->w == 3 && p->stride[1] == 1 && y->sw == 1 && x->sw == 1 &&
                        dt__conv3(p, wn, x, y, DT__F(w, oc, icg, kh, 0), w->sw, n, oc, ic0 + icg, kh))
                        continue;
                    for (kw = 0; kw < w->w; kw++) {
                        int32_t off = kw * p->dilation[1] - p->padding[1];
                        float *wp = DT__F(w, oc, icg, kh, kw), acc = 0.0f;
                        dt__span(x->w, y->w, p->stride[1], off, &lo, &hi);
                        if (lo >= hi) continue;
                        for (oh = 0; oh < y->h; oh++) {
                            int64_t ih =
                                (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
                            if (ih < 0 || ih >= wn->h) continue;
                            DT_ASSERT(ih - wn->row0 >= 0 && ih - wn->row0 < x->h);
                            acc += dt__crow(mode, *wp, DT__F(y, n, oc, oh, lo), y->sw,
                                            DT__F(x, n, ic0 + icg, ih - wn->row0, (int64_t)lo * p->stride[1] + off),
                                            x->sw * (size_t)p->stride[1], hi - lo);
                        }
                        if (mode == 2) *wp += acc;
                    }
                }
        }
}

/* Element of an f32 or int8 view as float (exact for int8). */
static float dt__ldv(const dt__c4 *v, int32_t n, int32_t c, int64_t h, int64_t w)
{
    return v->es == 1 ? (float)*DT__I8(v, n, c, h, w) : *DT__F(v, n, c, h, w);
}

/* Max pool (f32 or int8: the same max): mode 0 y = max, mode 1 gx[first argmax] += gy
   (f32, gx zeroed). */
static void dt__pool_walk(const dt_conv2d_params *p, const dt__cwin *wn, int mode, const dt__c4 *x, const dt__c4 *y,
                          const dt__c4 *gx)
{
    int32_t n, c, oh, ow, kh, kw;
    for (n = 0; n < y->n; n++)
        for (c = 0; c < y->c; c++)
            for (oh = 0; oh < y->h; oh++)
                for (ow = 0; ow < y->w; ow++) {
                    float best = 0.0f;
                    int32_t bh = -1, bw = 0;
                    for (kh = 0; kh < p->kernel[0]; kh++) {
                        int64_t ih =
                            (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
                        if (ih < 0 || ih >= wn->h) continue;
                        for (kw = 0; kw < p->kernel[1]; kw++) {
                            int64_t iw = (int64_t)ow * p->stride[1] - p->padding[1] + (int64_t)kw * p->dilation[1];
                            float v;
                            if (iw < 0 || iw >= x->w) continue;
                            v = dt__ldv(x, n, c, ih - wn->row0, iw);
                            if (bh < 0 || v > best || v != v) {
                                best = v;
                                bh = (int32_t)(ih - wn->row0);
                                bw = (int32_t)iw;
                            }
                        }
                    }
                    if (bh < 0) { /* no input in the window (dilation past the input): -inf, no gradient */
                        uint32_t ninf = 0xff800000u;
                        if (mode == 0 && y->es == 1)
                            *DT__I8(y, n, c, oh, ow) = -128;
                        else if (mode == 0)
                            DT_MEMCPY(DT__F(y, n, c, oh, ow), &ninf, sizeof ninf);
                        continue;
                    }
                    if (mode == 0 && y->es == 1)
                        *DT__I8(y, n, c, oh, ow) = (int8_t)best;
                    else if (mode == 0)
                        *DT__F(y, n, c, oh, ow) = best;
                    else
                        *DT__F(gx, n, c, bh, bw) += *DT__F(y, n, c, oh, ow);
                }
}

/* Average pool (dt_avgpool2d_ref's rule) on a window of the input. */
static void dt__avg_walk(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *y)
{
    int32_t n, c, oh, ow, kh, kw;
    for (n = 0; n < y->n; n++)
        for (c = 0; c < y->c; c++)
            for (oh = 0; oh < y->h; oh++)
                for (ow = 0; ow < y->w; ow++) {
                    float s = 0.0f;
                    int64_t si = 0, cnt = 0, padded = 0;
                    for (kh = 0; kh < p->kernel[0]; kh++) {
                        int64_t ih =
                            (int64_t)(wn->orow0 + oh) * p->stride[0] - p->padding[0] + (int64_t)kh * p->dilation[0];
                        for (kw = 0; kw < p->kernel[1]; kw++) {
                            int64_t iw = (int64_t)ow * p->stride[1] - p->padding[1] + (int64_t)kw * p->dilation[1];
                            padded += ih < wn->h + p->padding[0] && iw < x->w + p->padding[1];
                            if (ih < 0 || ih >= wn->h || iw < 0 || iw >= x->w) continue;
                            cnt++;
                            if (y->es == 1)
                                si += *DT__I8(x, n, c, ih - wn->row0, iw);
                            else
                                s += *DT__F(x, n, c, ih - wn->row0, iw);
                        }
                    }
                    if (p->count_pad) cnt = padded;
                    if (y->es == 1) {
                        int64_t q = !cnt ? 0 : si >= 0 ? (si + cnt / 2) / cnt : -((-si + cnt / 2) / cnt);
                        *DT__I8(y, n, c, oh, ow) = (int8_t)(q > 127 ? 127 : q < -128 ? -128 : q);
                    } else {
                        *DT__F(y, n, c, oh, ow) = cnt ? s / (float)cnt : 0.0f;
                    }
                }
}

static void dt__c4_zero(const dt__c4 *v)
{
    int32_t n, c, h, w;
    for (n = 0; n < v->n; n++)
        for (c = 0; c < v->c; c++)
            for (h = 0; h < v->h; h++)
                for (w = 0; w < v->w; w++) *DT__F(v, n, c, h, w) = 0.0f;
}

/* t is a view of canonical shape cs (n, c, h, w) in `layout` order, dtype dt. */
DT_CONV__DEF int dt__fits4(const mb_tensor *t, int dt, int layout, const int32_t *cs)
{
    int32_t s[4];
    if (!t) return DT_ERR_NULL;
    if (mb_tensor_check(t) != MB_OK) return DT_ERR_SHAPE;
    if ((int)t->dtype != dt) return DT_ERR_DTYPE;
    dt__order(layout, cs, s, 1);
    return dt__fits(t, dt, 4, s);
}

/* Checks shared by the single-rank calls: in (f32, 4-D), w (NULL: pool); canonical
   shapes of in, w and out into ci, cw, co. */
DT_CONV__DEF int dt__conv_args(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w, mb_dtype dt,
                               int32_t *ci, int32_t *co)
{
    int rc;
    if (!p || !in) return DT_ERR_NULL;
    if (mb_tensor_check(in) != MB_OK || in->ndim != 4 || (w && (mb_tensor_check(w) != MB_OK || w->ndim != 4)))
        return DT_ERR_SHAPE;
    if (in->dtype != dt || (w && w->dtype != dt)) return DT_ERR_DTYPE;
    if (p->layout != DT_NCHW && p->layout != DT_NHWC) return DT_ERR_SHAPE;
    dt__order(p->layout, in->shape, ci, 0);
    rc = dt__conv_shape(p, ci, w ? w->shape : NULL, co);
    if (!rc && w && !w->data && dt__bytes(w->shape, 4, dt)) rc = DT_ERR_NULL;
    return rc;
}

DT_CONV__DEF int dt__bias_ok(const mb_tensor *b, int32_t n, mb_dtype dt)
{
    if (!b) return DT_OK;
    if (mb_tensor_check(b) != MB_OK) return DT_ERR_SHAPE;
    if (b->dtype != dt) return DT_ERR_DTYPE;
    return dt__fits(b, (int)dt, 1, &n);
}

DT_CONV__DEF dt__cwin dt__win_full(int32_t h, int32_t oc)
{
    dt__cwin wn;
    wn.h = h;
    wn.row0 = 0;
    wn.orow0 = 0;
    wn.oc = oc;
    wn.oc0 = 0;
    return wn;
}

DT_CONV__DEF int dt_conv2d_out_shape(const dt_conv2d_params *p, const int32_t *in_shape, const int32_t *w_shape,
                                     int32_t *out_shape)
{
    int32_t ci[4], co[4];
    int rc;
    if (!p || !in_shape || !out_shape) return DT_ERR_NULL;
    if (p->layout != DT_NCHW && p->layout != DT_NHWC) return DT_ERR_SHAPE;
    dt__order(p->layout, in_shape, ci, 0);
    rc = dt__conv_shape(p, ci, w_shape, co);
    if (!rc) dt__order(p->layout, co, out_shape, 1);
    return rc;
}

DT_CONV__DEF int dt_conv2d_ref(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w,
                               const mb_tensor *bias, mb_tensor *out)
{
    int32_t ci[4], co[4];
    int rc = w ? dt__conv_args(p, in, w, MB_F32, ci, co) : DT_ERR_NULL;
    if (!rc) rc = dt__bias_ok(bias, co[1], MB_F32);
    if (!rc) rc = dt__fits4(out, MB_F32, p->layout, co);
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), wv = dt__canon(w, DT_NCHW), y = dt__canon(out, p->layout);
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        dt__conv_walk(p, &wn, 0, &x, &wv, &y, bias);
    }
    return rc;
}

/* grad_b[c] = the sum of y's channel c (f32; grad_b [y->c]). */
static void dt__bias_grad(const dt__c4 *y, mb_tensor *grad_b)
{
    int32_t n, c, h, w;
    for (c = 0; c < y->c; c++) {
        float s = 0.0f;
        for (n = 0; n < y->n; n++)
            for (h = 0; h < y->h; h++)
                for (w = 0; w < y->w; w++) s += *DT__F(y, n, c, h, w);
        ((float *)grad_b->data)[(size_t)c * (size_t)grad_b->stride[0]] = s;
    }
}

DT_CONV__DEF int dt_conv2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *w,
                                    const mb_tensor *grad_out, mb_tensor *grad_in, mb_tensor *grad_w, mb_tensor *grad_b)
{
    int32_t ci[4], co[4];
    int rc = w ? dt__conv_args(p, in, w, MB_F32, ci, co) : DT_ERR_NULL;
    if (!rc) rc = dt__fits4(grad_out, MB_F32, p->layout, co);
    if (!rc && grad_in) rc = dt__fits4(grad_in, MB_F32, p->layout, ci);
    if (!rc && grad_w) rc = dt__fits4(grad_w, MB_F32, DT_NCHW, w->shape);
    if (!rc && grad_b) rc = grad_b->data || !co[1] ? dt__bias_ok(grad_b, co[1], MB_F32) : DT_ERR_NULL;
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), wv = dt__canon(w, DT_NCHW), y = dt__canon(grad_out, p->layout), g;
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        if (grad_in) {
            g = dt__canon(grad_in, p->layout);
            dt__c4_zero(&g);
            dt__conv_walk(p, &wn, 1, &g, &wv, &y, NULL);
        }
        if (grad_w) {
            g = dt__canon(grad_w, DT_NCHW);
            dt__c4_zero(&g);
            dt__conv_walk(p, &wn, 2, &x, &g, &y, NULL);
        }
        if (grad_b) dt__bias_grad(&y, grad_b);
    }
    return rc;
}

/* Max pool (avg 0) or average pool (avg 1) of f32 or int8 on one rank. */
static int dt__pool_ref(const dt_conv2d_params *p, const mb_tensor *in, mb_tensor *out, int avg)
{
    int32_t ci[4], co[4];
    int rc = dt__conv_args(p, in, NULL, in && in->dtype == MB_I8 ? MB_I8 : MB_F32, ci, co);
    if (!rc) rc = dt__fits4(out, (int)in->dtype, p->layout, co);
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), y = dt__canon(out, p->layout);
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        if (avg)
            dt__avg_walk(p, &wn, &x, &y);
        else
            dt__pool_walk(p, &wn, 0, &x, &y, NULL);
    }
    return rc;
}

DT_CONV__DEF int dt_maxpool2d_ref(const dt_conv2d_params *p, const mb_tensor *in, mb_tensor *out)
{
    return dt__pool_ref(p, in, out, 0);
}

DT_CONV__DEF int dt_avgpool2d_ref(const dt_conv2d_params *p, const mb_tensor *in, mb_tensor *out)
{
    return dt__pool_ref(p, in, out, 1);
}

DT_CONV__DEF int dt_maxpool2d_backward(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *grad_out,
                                       mb_tensor *grad_in)
{
    int32_t ci[4], co[4];
    int rc = dt__conv_args(p, in, NULL, MB_F32, ci, co);
    if (!rc) rc = dt__fits4(grad_out, MB_F32, p->layout, co);
    if (!rc) rc = dt__fits4(grad_in, MB_F32, p->layout, ci);
    if (!rc) {
        dt__c4 x = dt__canon(in, p->layout), y = dt__canon(grad_out, p->layout), g = dt__canon(grad_in, p->layout);
        dt__cwin wn = dt__win_full(ci[2], co[1]);
        dt__c4_zero(&g);
        dt__pool_walk(p, &wn, 1, &x, &y, &g);
    }
    return rc;
}

/* ---- sharded conv2d / max pool ---- */

/* Rows of part i (see dt_conv2d_rows); p, h, kh valid, oh the output height. */
static void dt__rows(const dt_conv2d_params *p, int32_t h, int32_t oh, int32_t kh, int32_t parts, int32_t i, int32_t *r)
{
    int64_t n0, n1;
    r[1] = dt__chunk(h, parts, i, &r[0]) + r[0];
    r[3] = dt__chunk(oh, parts, i, &r[2]) + r[2];
    n0 = (int64_t)r[2] * p->stride[0] - p->padding[0];
    n1 = (int64_t)(r[3] - 1) * p->stride[0] - p->padding[0] + (int64_t)(kh - 1) * p->dilation[0] + 1;
    if (n0 < 0) n0 = 0;
    if (n1 > h) n1 = h;
    if (r[2] == r[3] || n1 <= n0) n0 = n1 = 0;
    r[4] = (int32_t)n0;
    r[5] = (int32_t)n1;
}

DT_CONV__DEF int dt_conv2d_rows(const dt_conv2d_params *p, int32_t h, int32_t kh, int32_t parts, int32_t i,
                                int32_t *rows)
{
    int64_t oh;
    if (!p || !rows) return DT_ERR_NULL;
    if (parts < 1 || i < 0 || i >= parts) return DT_ERR_RANK;
    if (h < 1 || kh < 1 || p->stride[0] < 1 || p->padding[0] < 0 || p->dilation[0] < 1) return DT_ERR_SHAPE;
    oh = dt__osize(h, kh, p->stride[0], p->padding[0], p->dilation[0]);
    if (oh < 1 || oh > INT32_MAX) return DT_ERR_SHAPE;
    dt__rows(p, h, (int32_t)oh, kh, parts, i, rows);
    return DT_OK;
}

/* What a sharded call does on this rank, from the specs. */
typedef struct dt__cplan {
    dt_spec out;          /* output spec */
    int32_t ci[4], co[4]; /* global canonical shapes */
    int32_t kh;           /* kernel height */
    int spatial;          /* mesh dim sharding H, or -1 */
    int32_t rows[6];      /* this rank's rows when spatial */
    size_t ext, stage;    /* scratch: halo window, message staging (bytes) */
} dt__cplan;

static DT__NOINLINE int dt__cplan_make(const dt_conv2d_params *p, const dt_spec *is, const dt_spec *ws, dt__cplan *pl)
{
    dt_placement op[DT_MAX_MESH_DIMS];
    int32_t lshape[MB_MAX_DIMS], cs[4], ch = p->layout == DT_NHWC ? 3 : 1, hd = p->layout == DT_NHWC ? 1 : 2, r[6];
    int i, rc = dt_spec_check(is);
    size_t esz, per_row;
    if (!rc && ws) rc = dt_spec_check(ws);
    if (rc) return rc;
    if (p->layout != DT_NCHW && p->layout != DT_NHWC) return DT_ERR_SHAPE;
    if (is->ndim != 4 || (ws && ws->ndim != 4)) return DT_ERR_SHAPE;
    if (ws && !dt__mesh_same(is->mesh, ws->mesh)) return DT_ERR_MISMATCH;
    if (is->mesh->index < 0) return DT_ERR_NOT_MEMBER;
    if ((is->dtype != MB_F32 && is->dtype != MB_I8) || (ws && ws->dtype != is->dtype)) return DT_ERR_DTYPE;
    dt__order(p->layout, is->shape, pl->ci, 0);
    rc = dt__conv_shape(p, pl->ci, ws ? ws->shape : NULL, pl->co);
    if (rc) return rc;
    pl->kh = ws ? ws->shape[2] : p->kernel[0];
    pl->spatial = -1;
    for (i = 0; i < is->mesh->ndim; i++) {
        dt_placement a = is->placements[i], b = ws ? ws->placements[i] : is->placements[i];
        if (ws && a.kind == DT_KIND_REPLICATE && dt__is_shard(b, 0)) {
            op[i].kind = DT_KIND_SHARD, op[i].arg = (int16_t)ch; /* output channels */
            continue;
        }
        if (ws && b.kind != DT_KIND_REPLICATE) return DT_ERR_NO_STRATEGY;
        if (a.kind == DT_KIND_REPLICATE || dt__is_shard(a, 0) || (!ws && dt__is_shard(a, ch))) {
            op[i] = a;
            continue;
        }
        if (!dt__is_shard(a, hd) || pl->spatial >= 0) return DT_ERR_NO_STRATEGY;
        pl->spatial = i;
        op[i] = a;
    }
    dt__order(p->layout, pl->co, cs, 1);
    rc = dt_spec_init(&pl->out, is->mesh, op, is->mesh->ndim, is->dtype, 4, cs, NULL);
    if (rc) return rc;
    pl->ext = pl->stage = 0;
    if (pl->spatial < 0) return DT_OK;
    {
        int32_t parts = is->mesh->shape[pl->spatial], me = is->mesh->coord[pl->spatial], q, s0, s1, r0, r1;
        size_t mx = 0;
        dt__local(is, is->mesh->coord, is->placements, is->mesh->ndim, lshape, NULL);
        dt__order(p->layout, lshape, cs, 0);
        esz = mb_dtype_size(is->dtype);
        per_row = (size_t)cs[0] * (size_t)cs[1] * (size_t)cs[3] * esz;
        dt__rows(p, pl->ci[2], pl->co[2], pl->kh, parts, me, pl->rows);
        for (q = 0; q < parts; q++) {
            if (q == me) continue;
            dt__rows(p, pl->ci[2], pl->co[2], pl->kh, parts, q, r);
            s0 = pl->rows[0] > r[4] ? pl->rows[0] : r[4]; /* rows q needs that this rank holds */
            s1 = pl->rows[1] < r[5] ? pl->rows[1] : r[5];
            r0 = r[0] > pl->rows[4] ? r[0] : pl->rows[4]; /* rows this rank needs that q holds */
            r1 = r[1] < pl->rows[5] ? r[1] : pl->rows[5];
            if (s1 - s0 > (int32_t)mx) mx = (size_t)(s1 - s0);
            if (r1 - r0 > (int32_t)mx) mx = (size_t)(r1 - r0);
        }
        pl->ext = ((size_t)(pl->rows[5] - pl->rows[4]) * per_row + 7u) & ~(size_t)7u;
        pl->stage = mx * per_row;
    }
    return DT_OK;
}

DT_CONV__DEF int dt_conv2d_out_spec(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                    dt_spec *out_spec)
{
    dt__cplan pl;
    int rc = !p || !in_spec || !out_spec ? DT_ERR_NULL : dt__cplan_make(p, in_spec, w_spec, &pl);
    if (!rc) *out_spec = pl.out;
    return rc;
}

DT_CONV__DEF int dt_conv2d_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec, const dt_spec *w_spec,
                                         size_t *bytes)
{
    dt__cplan pl;
    int rc = !p || !in_spec || !bytes ? DT_ERR_NULL : dt__cplan_make(p, in_spec, w_spec, &pl);
    if (!rc) *bytes = pl.ext + pl.stage;
    return rc;
}

/* Copy rows [r0, r0 + nr) of src (its row 0 = global row s0) to dst (its row 0 = global
   row d0); canonical views of one element size. add: dst += src instead (f32). */
static void dt__copy_rows(const dt__c4 *dst, int32_t d0, const dt__c4 *src, int32_t s0, int32_t r0, int32_t nr,
                          size_t esz, int add)
{
    int32_t n, c, h, w;
    for (n = 0; n < src->n; n++)
        for (c = 0; c < src->c; c++)
            for (h = r0; h < r0 + nr; h++) {
                unsigned char *d =
                    dst->d + esz * ((size_t)n * dst->sn + (size_t)c * dst->sc + (size_t)(h - d0) * dst->sh);
                const unsigned char *s =
                    src->d + esz * ((size_t)n * src->sn + (size_t)c * src->sc + (size_t)(h - s0) * src->sh);
                if (add) {
                    for (w = 0; w < src->w; w++)
                        *(float *)(void *)(d + 4u * (size_t)w * dst->sw) +=
                            *(const float *)(const void *)(s + 4u * (size_t)w * src->sw);
                } else if (dst->sw == 1 && src->sw == 1) {
                    DT_MEMCPY(d, s, esz * (size_t)src->w);
                } else {
                    for (w = 0; w < src->w; w++)
                        DT_MEMCPY(d + esz * (size_t)w * dst->sw, s + esz * (size_t)w * src->sw, esz);
                }
            }
}

/* A contiguous canonical view of n, c, rows, w at buf (NCHW order in memory). */
static dt__c4 dt__c4_packed(void *buf, int32_t n, int32_t c, int32_t rows, int32_t w, size_t es)
{
    dt__c4 v;
    v.es = es;
    v.d = (unsigned char *)buf;
    v.n = n;
    v.c = c;
    v.h = rows;
    v.w = w;
    v.sw = 1;
    v.sh = (size_t)w;
    v.sc = (size_t)w * (size_t)rows;
    v.sn = v.sc * (size_t)c;
    return v;
}

/* Send or receive `bytes` with peer q in pieces of at most max_msg. */
static int dt__halo_xfer(pg_group *g, int q, unsigned char *buf, size_t bytes, int send)
{
    size_t m = pg_max_msg(g), k, got;
    int rc = 0;
    while (bytes && rc >= 0) {
        k = bytes < m ? bytes : m;
        if (send) {
            rc = pg_send(g, q, DT_CONV_TAG, buf, k);
        } else {
            rc = pg_recv(g, q, DT_CONV_TAG, buf, k, &got);
            if (rc >= 0 && got != k) rc = PG_ERR_MISMATCH;
        }
        buf += k;
        bytes -= k;
    }
    return rc < 0 ? rc : 0;
}

/* Halo exchange. Forward (back 0): build this rank's window (input rows [rows[4], rows[5]))
   in dst from its rows [rows[0], rows[1]) in src and the peers' rows. Backward (back 1,
   f32): the reverse, src the window's input gradient, dst this rank's rows of it: its own
   part, then each peer's part for these rows added in increasing peer order. Pairs in
   increasing peer order, the lower rank of a pair sending first. */
static DT__NOINLINE int dt__halo(dt_comm *c, const dt_conv2d_params *p, const dt__cplan *pl, const dt_spec *is,
                                 const dt__c4 *src, const dt__c4 *dst, unsigned char *stage, int back)
{
    pg_group *g = c->g[pl->spatial];
    int32_t parts = is->mesh->shape[pl->spatial], me = is->mesh->coord[pl->spatial], q, r[6], h[4];
    size_t esz = mb_dtype_size(is->dtype), row = esz * (size_t)src->n * (size_t)src->c * (size_t)src->w;
    const int32_t *m = pl->rows;
    int32_t so = back ? m[4] : m[0], dof = back ? m[0] : m[4]; /* global rows of src's / dst's row 0 */
    int rc = 0, k;
    h[0] = m[0] > m[4] ? m[0] : m[4]; /* own rows of the window */
    h[1] = m[1] < m[5] ? m[1] : m[5];
    if (back) dt__c4_zero(dst);
    if (h[1] > h[0]) dt__copy_rows(dst, dof, src, so, h[0], h[1] - h[0], esz, 0);
    for (q = 0; q < parts && !rc; q++) {
        if (q == me) continue;
        dt__rows(p, pl->ci[2], pl->co[2], pl->kh, parts, q, r);
        h[back * 2] = m[0] > r[4] ? m[0] : r[4]; /* rows q needs that this rank holds */
        h[back * 2 + 1] = m[1] < r[5] ? m[1] : r[5];
        h[2 - back * 2] = r[0] > m[4] ? r[0] : m[4]; /* rows this rank needs that q holds */
        h[3 - back * 2] = r[1] < m[5] ? r[1] : m[5];
        for (k = 0; k < 2 && !rc; k++) { /* h[0..1] rows to send, h[2..3] rows to receive */
            dt__c4 st;
            if ((k == 0) == (me < q)) {
                if (h[1] <= h[0]) continue;
                st = dt__c4_packed(stage, src->n, src->c, h[1] - h[0], src->w, esz);
                dt__copy_rows(&st, h[0], src, so, h[0], h[1] - h[0], esz, 0);
                rc = dt__halo_xfer(g, q, stage, (size_t)(h[1] - h[0]) * row, 1);
            } else if (h[3] > h[2]) {
                st = dt__c4_packed(stage, src->n, src->c, h[3] - h[2], src->w, esz);
                rc = dt__halo_xfer(g, q, stage, (size_t)(h[3] - h[2]) * row, 0);
                if (!rc) dt__copy_rows(dst, dof, &st, h[2], h[2], h[3] - h[2], esz, back);
            }
        }
    }
    if (rc) {
        c->err = rc;
        return DT_ERR_COMM;
    }
    return DT_OK;
}

static void dt__kern_f32(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *w,
                         const dt__c4 *y, const mb_tensor *bias, const void *extra)
{
    (void)extra;
    if (w)
        dt__conv_walk(p, wn, 0, x, w, y, bias);
    else
        dt__pool_walk(p, wn, 0, x, y, NULL);
}

/* dt_conv2d (f32), dt_conv2d_q8 (int8) and dt_maxpool2d (w NULL; f32 or int8): `dt` the
   dtype the call takes (-1: either). */
DT_CONV__DEF int dt__sharded(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                             const mb_tensor *bias, int dt, dt__ckern kern, const void *extra, dt_spec *out_spec,
                             mb_tensor *out, void *scratch, size_t bytes)
{
    dt__cplan pl;
    int32_t ls[MB_MAX_DIMS], off[MB_MAX_DIMS], wl[MB_MAX_DIMS];
    int rc = !c || !p || !in || !out ? DT_ERR_NULL : dt__cplan_make(p, &in->spec, w ? &w->spec : NULL, &pl);
    int is_f32, et;
    dt__cwin wn;
    dt__c4 x, y, wv;
    if (!rc && dt >= 0 && (int)in->spec.dtype != dt) rc = DT_ERR_DTYPE;
    if (!rc) rc = dt__comm_check(c, in->spec.mesh);
    if (rc) return rc;
    et = (int)in->spec.dtype;
    is_f32 = et == MB_F32;
    dt__local(&in->spec, in->spec.mesh->coord, in->spec.placements, in->spec.mesh->ndim, ls, NULL);
    rc = mb_tensor_check(&in->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&in->local, et, 4, ls);
    if (!rc && w) {
        dt__local(&w->spec, w->spec.mesh->coord, w->spec.placements, w->spec.mesh->ndim, wl, off);
        rc = mb_tensor_check(&w->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&w->local, et, 4, wl);
        if (!rc) rc = dt__bias_ok(bias, wl[0], is_f32 ? MB_F32 : MB_I32);
    }
    dt__local(&pl.out, pl.out.mesh->coord, pl.out.placements, pl.out.mesh->ndim, ls, NULL);
    if (!rc) rc = mb_tensor_check(out) != MB_OK ? DT_ERR_SHAPE : dt__fits(out, et, 4, ls);
    if (!rc && pl.ext + pl.stage > bytes) rc = DT_ERR_TOO_SMALL;
    if (!rc && pl.ext + pl.stage && !scratch) rc = DT_ERR_NULL;
    if (rc) return rc;
    x = dt__canon(&in->local, p->layout);
    y = dt__canon(out, p->layout);
    wn = dt__win_full(pl.ci[2], pl.co[1]);
    if (w) wn.oc0 = wl[0] ? off[0] : 0;
    if (pl.spatial >= 0) {
        dt__c4 ext = dt__c4_packed(scratch, x.n, x.c, pl.rows[5] - pl.rows[4], x.w, x.es);
        rc = dt__halo(c, p, &pl, &in->spec, &x, &ext, (unsigned char *)scratch + pl.ext, 0);
        if (rc) return rc;
        x = ext;
        wn.row0 = pl.rows[4];
        wn.orow0 = pl.rows[2];
    }
    if (w) wv = dt__canon(&w->local, DT_NCHW);
    kern(p, &wn, &x, w ? &wv : NULL, &y, bias, extra);
    if (out_spec) *out_spec = pl.out;
    return DT_OK;
}

DT_CONV__DEF int dt_conv2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *w,
                           const mb_tensor *bias, dt_spec *out_spec, mb_tensor *out, void *scratch,
                           size_t scratch_bytes)
{
    return w ? dt__sharded(c, p, in, w, bias, MB_F32, dt__kern_f32, NULL, out_spec, out, scratch, scratch_bytes)
             : DT_ERR_NULL;
}

DT_CONV__DEF int dt_maxpool2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, dt_spec *out_spec,
                              mb_tensor *out, void *scratch, size_t scratch_bytes)
{
    return dt__sharded(c, p, in, NULL, NULL, -1, dt__kern_f32, NULL, out_spec, out, scratch, scratch_bytes);
}

static void dt__kern_avg(const dt_conv2d_params *p, const dt__cwin *wn, const dt__c4 *x, const dt__c4 *w,
                         const dt__c4 *y, const mb_tensor *bias, const void *extra)
{
    (void)w, (void)bias, (void)extra;
    dt__avg_walk(p, wn, x, y);
}

DT_CONV__DEF int dt_avgpool2d(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, dt_spec *out_spec,
                              mb_tensor *out, void *scratch, size_t scratch_bytes)
{
    return dt__sharded(c, p, in, NULL, NULL, -1, dt__kern_avg, NULL, out_spec, out, scratch, scratch_bytes);
}

#if !DT_NO_SHARDED_CONV_BACKWARD /* ---- sharded conv2d backward (tp_convolution_backward) ---- */

DT_CONV__DEF int dt_conv2d_backward_scratch_bytes(const dt_conv2d_params *p, const dt_spec *in_spec,
                                                  const dt_spec *w_spec, size_t *bytes)
{
    dt__cplan pl;
    int rc = !p || !in_spec || !w_spec || !bytes ? DT_ERR_NULL : dt__cplan_make(p, in_spec, w_spec, &pl);
    if (!rc && in_spec->dtype != MB_F32) rc = DT_ERR_DTYPE;
    if (!rc) *bytes = 2 * pl.ext + pl.stage;
    return rc;
}

/* The gradients' specs: gs[0] grad_in, gs[1] grad_w, gs[2] grad_b. */
static DT__NOINLINE int dt__conv_grad_specs(const dt_spec *is, const dt_spec *ws, dt_spec *gs)
{
    dt_placement a[3][DT_MAX_MESH_DIMS];
    int i, rc, nd = is->mesh->ndim;
    for (i = 0; i < nd; i++) {
        dt_placement x = is->placements[i], w = ws->placements[i];
        a[0][i] = x;           /* grad_in: as the input ... */
        a[1][i] = a[2][i] = w; /* grad_w, grad_b: as the weight (Shard(0) / Replicate) ... */
        if (w.kind == DT_KIND_SHARD) a[0][i].kind = DT_KIND_PARTIAL, a[0][i].arg = DT_SUM; /* ... sums over C_out */
        if (x.kind == DT_KIND_SHARD) a[1][i].kind = a[2][i].kind = DT_KIND_PARTIAL, a[1][i].arg = a[2][i].arg = DT_SUM;
    }
    rc = dt_spec_init(&gs[0], is->mesh, a[0], nd, MB_F32, 4, is->shape, NULL);
    if (!rc) rc = dt_spec_init(&gs[1], is->mesh, a[1], nd, MB_F32, 4, ws->shape, NULL);
    if (!rc) rc = dt_spec_init(&gs[2], is->mesh, a[2], nd, MB_F32, 1, ws->shape, NULL);
    return rc;
}

/* Checks of dt_conv2d_sharded_backward before anything is written; the plan into *pl,
   the weight's local shape and offset into wl, off. */
static DT__NOINLINE int dt__conv_bw_check(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in,
                                          const dt_tensor *w, const dt_tensor *go, const mb_tensor *gi,
                                          const mb_tensor *gw, const mb_tensor *gb, dt__cplan *pl, int32_t *wl,
                                          int32_t *off)
{
    int32_t ls[MB_MAX_DIMS];
    const dt_spec *os = &pl->out;
    int rc = !c || !p || !in || !w || !go ? DT_ERR_NULL : dt__cplan_make(p, &in->spec, &w->spec, pl);
    if (!rc && in->spec.dtype != MB_F32) rc = DT_ERR_DTYPE;
    if (!rc) rc = dt__comm_check(c, in->spec.mesh);
    if (rc) return rc;
    /* grad_out: dt_conv2d's output spec (tp_conv redistributes it there first) */
    if (!dt__mesh_same(go->spec.mesh, os->mesh) || go->spec.dtype != MB_F32 || go->spec.ndim != 4 ||
        memcmp(go->spec.shape, os->shape, 4 * sizeof(int32_t)) ||
        memcmp(go->spec.placements, os->placements, sizeof(dt_placement) * (size_t)os->mesh->ndim))
        return DT_ERR_MISMATCH;
    dt__local(os, os->mesh->coord, os->placements, os->mesh->ndim, ls, NULL);
    rc = mb_tensor_check(&go->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&go->local, MB_F32, 4, ls);
    dt__local(&in->spec, in->spec.mesh->coord, in->spec.placements, in->spec.mesh->ndim, ls, NULL);
    if (!rc) rc = mb_tensor_check(&in->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&in->local, MB_F32, 4, ls);
    if (!rc && gi) rc = mb_tensor_check(gi) != MB_OK ? DT_ERR_SHAPE : dt__fits(gi, MB_F32, 4, ls);
    dt__local(&w->spec, w->spec.mesh->coord, w->spec.placements, w->spec.mesh->ndim, wl, off);
    if (!rc) rc = mb_tensor_check(&w->local) != MB_OK ? DT_ERR_SHAPE : dt__fits(&w->local, MB_F32, 4, wl);
    if (!rc && gw) rc = mb_tensor_check(gw) != MB_OK ? DT_ERR_SHAPE : dt__fits(gw, MB_F32, 4, wl);
    if (!rc && gb) rc = gb->data || !wl[0] ? dt__bias_ok(gb, wl[0], MB_F32) : DT_ERR_NULL;
    return rc;
}

/* grad_in (spatial: of the window in scratch, then the reverse halo exchange). */
static DT__NOINLINE int dt__conv_bw_in(dt_comm *c, const dt_conv2d_params *p, const dt__cplan *pl, const dt_spec *is,
                                       const dt__cwin *wn, const dt__c4 *wv, const dt__c4 *y, mb_tensor *grad_in,
                                       unsigned char *sc)
{
    dt__c4 g = dt__canon(grad_in, p->layout), win = g;
    if (pl->spatial >= 0) win = dt__c4_packed(sc + pl->ext, g.n, g.c, pl->rows[5] - pl->rows[4], g.w, 4);
    dt__c4_zero(&win);
    dt__conv_walk(p, wn, 1, &win, wv, y, NULL);
    return pl->spatial >= 0 ? dt__halo(c, p, pl, is, &win, &g, sc + 2 * pl->ext, 1) : DT_OK;
}

/* grad_w (spatial: from the input window, after the halo exchange). */
static DT__NOINLINE int dt__conv_bw_w(dt_comm *c, const dt_conv2d_params *p, const dt__cplan *pl, const dt_spec *is,
                                      const dt__cwin *wn, const dt__c4 *x, const dt__c4 *y, mb_tensor *grad_w,
                                      unsigned char *sc)
{
    dt__c4 g = dt__canon(grad_w, DT_NCHW), win = *x;
    if (pl->spatial >= 0) {
        int rc;
        win = dt__c4_packed(sc, x->n, x->c, pl->rows[5] - pl->rows[4], x->w, 4);
        if ((rc = dt__halo(c, p, pl, is, x, &win, sc + 2 * pl->ext, 0))) return rc;
    }
    dt__c4_zero(&g);
    dt__conv_walk(p, wn, 2, &win, &g, y, NULL);
    return DT_OK;
}

DT_CONV__DEF int dt_conv2d_sharded_backward(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in,
                                            const dt_tensor *w, const dt_tensor *grad_out, mb_tensor *grad_in,
                                            mb_tensor *grad_w, mb_tensor *grad_b, dt_spec *grad_specs, void *scratch,
                                            size_t scratch_bytes)
{
    dt__cplan pl;
    int32_t wl[MB_MAX_DIMS], off[MB_MAX_DIMS];
    int rc = dt__conv_bw_check(c, p, in, w, grad_out, grad_in, grad_w, grad_b, &pl, wl, off);
    dt__cwin wn;
    dt__c4 x, y, wv;
    if (!rc && pl.spatial >= 0 && 2 * pl.ext + pl.stage > scratch_bytes) rc = DT_ERR_TOO_SMALL;
    if (!rc && pl.spatial >= 0 && !scratch) rc = DT_ERR_NULL;
    if (!rc && grad_specs) rc = dt__conv_grad_specs(&in->spec, &w->spec, grad_specs);
    if (rc) return rc;
    x = dt__canon(&in->local, p->layout);
    y = dt__canon(&grad_out->local, p->layout);
    wv = dt__canon(&w->local, DT_NCHW);
    wn = dt__win_full(pl.ci[2], pl.co[1]);
    wn.oc0 = wl[0] ? off[0] : 0;
    if (pl.spatial >= 0) { /* the window of input rows this rank's output rows read */
        wn.row0 = pl.rows[4];
        wn.orow0 = pl.rows[2];
    }
    if (grad_in && (rc = dt__conv_bw_in(c, p, &pl, &in->spec, &wn, &wv, &y, grad_in, (unsigned char *)scratch)))
        return rc;
    if (grad_w && (rc = dt__conv_bw_w(c, p, &pl, &in->spec, &wn, &x, &y, grad_w, (unsigned char *)scratch))) return rc;
    if (grad_b) dt__bias_grad(&y, grad_b); /* Partial(sum) too where the input is sharded */
    return DT_OK;
}
#endif /* DT_NO_SHARDED_CONV_BACKWARD */

#ifdef __cplusplus
}
#endif
#endif /* DTENSOR_CONV_IMPLEMENTATION */
