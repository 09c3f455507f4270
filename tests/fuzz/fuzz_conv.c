/* fuzz_conv.c — dtensor_conv.h and dtensor_qconv.h (conv2d and max pool, single rank and sharded) from
   untrusted fields.

   The input gives the parameters (layout, stride, padding, dilation, groups, pool window;
   usually small, sometimes zero, negative or huge), the shapes (N, C, H, W, C_out, KH, KW;
   the weight's C_in sometimes wrong), the memory order of every tensor (any of the 24
   permutations of its four dims: strided views), the values (a seeded stream), and which
   call: conv2d, its backward, max pool (f32 or int8), its backward, int8 conv2d, or the
   sharded conv2d / max pool / conv2d backward / int8 conv2d on a 1-D mesh of 1-4
   pg_pthread ranks (input Shard(N), Shard(H), Shard(C) or Replicate; weight Replicate or
   Shard(0)). Every tensor is a heap
   block of exactly its bytes, so ASan sees any access outside it. The test derives on its
   own whether the call is valid (torch's output-size rule, the documented limits and the
   sharding strategies) and checks:
   - an invalid call returns a dt_err and leaves its outputs untouched;
   - a valid one returns 0 and equals a naive loop written from torch's definitions
     (cross-correlation with zero padding, dilation and groups; max pool with -inf padding,
     the first maximum in window order, -inf for a window over padding only) BIT FOR BIT: values are multiples of 1/16 below 8,
     so every float sum is exact in any order;
   - sharded: every rank's output is its slice of the single-rank result (dt_local_view of
     the output spec); grad_in likewise (Partial: the ranks' pieces sum to it), grad_w and
     grad_b are the sum over ranks when Partial, else the rank's slice. */
#define _POSIX_C_SOURCE 200809L
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_QCONV_IMPLEMENTATION
#include "dtensor_qconv.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "fuzz.h"

#define CANARY 0x5c
#define MAXR   4 /* ranks of the sharded calls */

static int is_err(int rc)
{
    return rc <= 0 && rc >= DT_ERR_VALUE;
}

/* A 4-D tensor in its own heap block of exactly its bytes, dims stored in memory order
   perm (perm[0] outermost). */
typedef struct blk {
    mb_tensor t;
    size_t bytes;
} blk;

static const uint8_t perms[24][4] = {
    {0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 3, 2, 1}, {1, 0, 2, 3}, {1, 0, 3, 2},
    {1, 2, 0, 3}, {1, 2, 3, 0}, {1, 3, 0, 2}, {1, 3, 2, 0}, {2, 0, 1, 3}, {2, 0, 3, 1}, {2, 1, 0, 3}, {2, 1, 3, 0},
    {2, 3, 0, 1}, {2, 3, 1, 0}, {3, 0, 1, 2}, {3, 0, 2, 1}, {3, 1, 0, 2}, {3, 1, 2, 0}, {3, 2, 0, 1}, {3, 2, 1, 0}};

static void blk_make(blk *b, mb_dtype dt, int nd, const int32_t *shape, uint32_t perm)
{
    int32_t st = 1;
    size_t n = 1;
    int i;
    memset(b, 0, sizeof *b);
    for (i = 0; i < nd; i++) n *= shape[i] > 0 ? (size_t)shape[i] : 0u; /* a negative size: no memory */
    b->bytes = n * mb_dtype_size(dt);
    b->t.data = malloc(b->bytes ? b->bytes : 1);
    FUZZ_REQUIRE(b->t.data);
    memset(b->t.data, CANARY, b->bytes);
    b->t.dtype = dt;
    b->t.ndim = nd;
    for (i = 0; i < nd; i++) b->t.shape[i] = shape[i];
    for (i = nd - 1; i >= 0; i--) { /* innermost = the last dim of the permutation */
        int d = nd == 4 ? perms[perm % 24u][i] : i;
        b->t.stride[d] = st;
        st *= shape[d] > 0 ? shape[d] : 1;
    }
}

static void blk_free(blk *b)
{
    free(b->t.data);
    b->t.data = 0;
}

static int blk_untouched(const blk *b)
{
    size_t i;
    for (i = 0; i < b->bytes; i++)
        if (((const unsigned char *)b->t.data)[i] != CANARY) return 0;
    return 1;
}

/* Element (n, c, h, w) in canonical order of a tensor laid out as `layout`. */
static size_t at(const mb_tensor *t, int layout, int32_t n, int32_t c, int32_t h, int32_t w)
{
    if (layout == DT_NHWC)
        return (size_t)n * t->stride[0] + (size_t)h * t->stride[1] + (size_t)w * t->stride[2] +
               (size_t)c * t->stride[3];
    return (size_t)n * t->stride[0] + (size_t)c * t->stride[1] + (size_t)h * t->stride[2] + (size_t)w * t->stride[3];
}
static float *F(const blk *b, int layout, int32_t n, int32_t c, int32_t h, int32_t w)
{
    return (float *)b->t.data + at(&b->t, layout, n, c, h, w);
}
static int8_t *Q(const blk *b, int layout, int32_t n, int32_t c, int32_t h, int32_t w)
{
    return (int8_t *)b->t.data + at(&b->t, layout, n, c, h, w);
}

/* Canonical [N, C, H, W] -> the layout's dim order. */
static void order(int layout, const int32_t *c, int32_t *s)
{
    s[0] = c[0];
    if (layout == DT_NHWC) {
        s[1] = c[2];
        s[2] = c[3];
        s[3] = c[1];
    } else {
        s[1] = c[1];
        s[2] = c[2];
        s[3] = c[3];
    }
}

/* Tensor values: a xorshift stream from a seed and a mask the input gives (mask 3: four
   values, so max pool meets ties), not the input bytes themselves: every tensor gets
   varied values however short the input. */
typedef struct vals {
    uint32_t s, mask;
} vals;
static vals vals_make(fz_in *in)
{
    static const uint32_t masks[4] = {0xff, 0xff, 0x0f, 0x03};
    vals v;
    v.s = fz_u32(in) | 1u;
    v.mask = masks[fz_u8(in) % 4u];
    return v;
}
static uint32_t next(vals *v)
{
    v->s ^= v->s << 13;
    v->s ^= v->s >> 17;
    v->s ^= v->s << 5;
    return v->s;
}
static int8_t val8(vals *v)
{
    return (int8_t)((int)((next(v) >> 8) & v->mask) - (int)((v->mask + 1) / 2));
}
static void fill_f32(vals *v, blk *b)
{
    size_t i, n = b->bytes / 4;
    for (i = 0; i < n; i++) ((float *)b->t.data)[i] = (float)val8(v) / 16.0f;
}
static void fill_i8(vals *v, blk *b)
{
    size_t i;
    for (i = 0; i < b->bytes; i++) ((int8_t *)b->t.data)[i] = val8(v);
}

typedef struct conv_case {
    dt_conv2d_params p;
    int pool;                    /* max pool (p.kernel) instead of conv2d */
    int32_t ci[4], cw[4], co[4]; /* canonical input, weight, output shapes */
    int valid;                   /* the parameters and shapes are valid (co set) */
    int big;                     /* an output side > 64: valid for the library, too big to test here */
    int bad;                     /* invalid for the library (valid = !bad && !big) */
} conv_case;

/* Small most of the time; sometimes any int (zero, negative, huge). */
static int32_t param(fz_in *in, int32_t lo, int32_t range)
{
    return fz_u8(in) < 236 ? lo + (int32_t)(fz_u8(in) % (uint32_t)range) : fz_int(in, range);
}

static void read_case(fz_in *in, conv_case *k, int pool)
{
    int i;
    int32_t g, cpg, ocpg;
    memset(k, 0, sizeof *k);
    k->pool = pool;
    k->p.layout = fz_u8(in) < 248 ? (int32_t)(fz_u8(in) & 1u) : fz_int(in, 4);
    for (i = 0; i < 2; i++) {
        k->p.stride[i] = param(in, 1, 3);
        k->p.padding[i] = param(in, 0, 3);
        k->p.dilation[i] = param(in, 1, 3);
        k->p.kernel[i] = param(in, 1, 4);
    }
    g = param(in, 1, 3);
    k->p.groups = g;
    cpg = 1 + (int32_t)(fz_u8(in) % 3u);
    ocpg = (int32_t)(fz_u8(in) % 3u);
    k->ci[0] = (int32_t)(fz_u8(in) % 3u);
    k->ci[1] = g >= 1 && g <= 3 ? g * cpg : cpg;
    k->ci[2] = (int32_t)(fz_u8(in) % 9u);
    k->ci[3] = (int32_t)(fz_u8(in) % 9u);
    k->cw[0] = g >= 1 && g <= 3 ? g * ocpg : ocpg;
    k->cw[1] = cpg;
    k->cw[2] = param(in, 1, 4);
    k->cw[3] = param(in, 1, 4);
    if (fz_u8(in) < 12) k->ci[1] += 1; /* channels that no longer fit the weight */
    if (fz_u8(in) < 12) k->cw[0] += 1; /* C_out not a multiple of groups */
    for (i = 0; i < 4; i++)            /* keep the tensors small: sizes beyond 8 only as damage */
        if (k->cw[i] < 0 || k->cw[i] > 8) k->cw[i] = fz_u8(in) & 1u ? -1 : 0;
    /* valid? torch's rule, from the header's documentation */
    k->valid = k->p.layout == DT_NCHW || k->p.layout == DT_NHWC;
    for (i = 0; i < 2; i++) {
        int32_t kk = pool ? k->p.kernel[i] : k->cw[2 + i];
        int64_t o;
        if (k->p.stride[i] < 1 || k->p.padding[i] < 0 || k->p.dilation[i] < 1 || kk < 1) {
            k->valid = 0;
            continue;
        }
        if (pool && (int64_t)k->p.padding[i] > ((int64_t)(kk - 1) * k->p.dilation[i] + 1) / 2) k->valid = 0;
        o = ((int64_t)k->ci[2 + i] + 2 * (int64_t)k->p.padding[i] - (int64_t)k->p.dilation[i] * (kk - 1) - 1) /
                k->p.stride[i] +
            1;
        if (((int64_t)k->ci[2 + i] + 2 * (int64_t)k->p.padding[i] - (int64_t)k->p.dilation[i] * (kk - 1) - 1) < 0)
            o = 0; /* C division truncates towards zero: a negative numerator is no output */
        if (o > 64 && o <= INT32_MAX) k->big = 1;
        if (o < 1) k->valid = 0;
        if (o > INT32_MAX) k->valid = 0, k->big = 0; /* not representable: invalid, not big */
        k->co[2 + i] = (int32_t)(o < 1 ? 1 : o > 64 ? 64 : o);
    }
    if (!pool && (k->p.groups < 1 || k->cw[0] < 0 || k->cw[1] < 0 || k->ci[1] % k->p.groups || k->cw[0] % k->p.groups ||
                  (int64_t)k->cw[1] * k->p.groups != k->ci[1]))
        k->valid = 0;
    if (!pool && (k->cw[0] < 0 || k->cw[1] < 0 || k->cw[2] < 0 || k->cw[3] < 0)) k->valid = 0;
    k->bad = !k->valid;
    if (k->big) k->valid = 0;
    k->co[0] = k->ci[0];
    k->co[1] = pool ? k->ci[1] : (k->cw[0] < 0 ? 0 : k->cw[0]);
}

/* ---- naive references (canonical indices, any layout) ---- */
/* Input index of tap i of output o (int64: parameters may be huge), -1 outside [0, n). */
static int32_t tap(int32_t o, int32_t s, int32_t p, int32_t d, int32_t i, int32_t n)
{
    int64_t x = (int64_t)o * s - p + (int64_t)i * d;
    return x >= 0 && x < n ? (int32_t)x : -1;
}
static void ref_conv(const conv_case *k, const blk *x, const blk *w, const blk *b, blk *y)
{
    const dt_conv2d_params *p = &k->p;
    int32_t n, oc, oh, ow, c, i, j, cpg = k->cw[1], opg = k->co[1] / p->groups;
    for (n = 0; n < k->co[0]; n++)
        for (oc = 0; oc < k->co[1]; oc++)
            for (oh = 0; oh < k->co[2]; oh++)
                for (ow = 0; ow < k->co[3]; ow++) {
                    float s = b ? ((float *)b->t.data)[oc] : 0.0f;
                    for (c = 0; c < cpg; c++)
                        for (i = 0; i < k->cw[2]; i++)
                            for (j = 0; j < k->cw[3]; j++) {
                                int32_t h = tap(oh, p->stride[0], p->padding[0], p->dilation[0], i, k->ci[2]);
                                int32_t ww = tap(ow, p->stride[1], p->padding[1], p->dilation[1], j, k->ci[3]);
                                if (h < 0 || h >= k->ci[2] || ww < 0 || ww >= k->ci[3]) continue;
                                s += *F(x, p->layout, n, oc / opg * cpg + c, h, ww) * *F(w, DT_NCHW, oc, c, i, j);
                            }
                    *F(y, p->layout, n, oc, oh, ow) = s;
                }
}

/* grad_in, grad_w, grad_b of conv2d for grad_out gy (each may be NULL). */
static void ref_conv_bw(const conv_case *k, const blk *x, const blk *w, const blk *gy, blk *gx, blk *gw, blk *gb)
{
    const dt_conv2d_params *p = &k->p;
    int32_t n, oc, oh, ow, c, i, j, cpg = k->cw[1], opg = k->co[1] / p->groups;
    if (gx) memset(gx->t.data, 0, gx->bytes);
    if (gw) memset(gw->t.data, 0, gw->bytes);
    if (gb) memset(gb->t.data, 0, gb->bytes);
    for (n = 0; n < k->co[0]; n++)
        for (oc = 0; oc < k->co[1]; oc++)
            for (oh = 0; oh < k->co[2]; oh++)
                for (ow = 0; ow < k->co[3]; ow++) {
                    float g = *F(gy, p->layout, n, oc, oh, ow);
                    if (gb) ((float *)gb->t.data)[oc] += g;
                    for (c = 0; c < cpg; c++)
                        for (i = 0; i < k->cw[2]; i++)
                            for (j = 0; j < k->cw[3]; j++) {
                                int32_t h = tap(oh, p->stride[0], p->padding[0], p->dilation[0], i, k->ci[2]);
                                int32_t ww = tap(ow, p->stride[1], p->padding[1], p->dilation[1], j, k->ci[3]);
                                int32_t ic = oc / opg * cpg + c;
                                if (h < 0 || h >= k->ci[2] || ww < 0 || ww >= k->ci[3]) continue;
                                if (gx) *F(gx, p->layout, n, ic, h, ww) += g * *F(w, DT_NCHW, oc, c, i, j);
                                if (gw) *F(gw, DT_NCHW, oc, c, i, j) += g * *F(x, p->layout, n, ic, h, ww);
                            }
                }
}

/* Max pool (f32 or int8) and, with gy/gx, its backward: the first maximum in window order. */
static void ref_pool(const conv_case *k, const blk *x, blk *y, const blk *gy, blk *gx)
{
    const dt_conv2d_params *p = &k->p;
    int32_t n, c, oh, ow, i, j;
    int i8 = x->t.dtype == MB_I8;
    if (gx) memset(gx->t.data, 0, gx->bytes);
    for (n = 0; n < k->co[0]; n++)
        for (c = 0; c < k->co[1]; c++)
            for (oh = 0; oh < k->co[2]; oh++)
                for (ow = 0; ow < k->co[3]; ow++) {
                    float best = 0.0f;
                    int32_t bh = -1, bw = -1;
                    for (i = 0; i < p->kernel[0]; i++)
                        for (j = 0; j < p->kernel[1]; j++) {
                            int32_t h = tap(oh, p->stride[0], p->padding[0], p->dilation[0], i, k->ci[2]);
                            int32_t ww = tap(ow, p->stride[1], p->padding[1], p->dilation[1], j, k->ci[3]);
                            float v;
                            if (h < 0 || h >= k->ci[2] || ww < 0 || ww >= k->ci[3]) continue;
                            v = i8 ? (float)*Q(x, p->layout, n, c, h, ww) : *F(x, p->layout, n, c, h, ww);
                            if (bh < 0 || v > best) best = v, bh = h, bw = ww;
                        }
                    if (bh < 0) { /* no input in the window: -inf (int8 -128), no gradient */
                        if (y && i8)
                            *Q(y, p->layout, n, c, oh, ow) = -128;
                        else if (y)
                            *F(y, p->layout, n, c, oh, ow) = -1.0f / 0.0f;
                        continue;
                    }
                    if (y && i8)
                        *Q(y, p->layout, n, c, oh, ow) = (int8_t)best;
                    else if (y)
                        *F(y, p->layout, n, c, oh, ow) = best;
                    if (gx) *F(gx, p->layout, n, c, bh, bw) += *F(gy, p->layout, n, c, oh, ow);
                }
}

static int same(const blk *a, const blk *b, int layout, const int32_t *cs)
{
    int32_t n, c, h, w;
    size_t es = mb_dtype_size(a->t.dtype);
    for (n = 0; n < cs[0]; n++)
        for (c = 0; c < cs[1]; c++)
            for (h = 0; h < cs[2]; h++)
                for (w = 0; w < cs[3]; w++)
                    if (memcmp((char *)a->t.data + at(&a->t, layout, n, c, h, w) * es,
                               (char *)b->t.data + at(&b->t, layout, n, c, h, w) * es, es))
                        return 0;
    return 1;
}

/* An output for case k: the right shape (valid) or a shape the call must refuse. */
static void out_blk(fz_in *in, const conv_case *k, mb_dtype dt, blk *y, int *expect_ok)
{
    int32_t cs[4], s[4];
    memcpy(cs, k->co, sizeof cs);
    *expect_ok = k->valid;
    if (k->valid && fz_u8(in) < 16) { /* a wrong output shape */
        cs[fz_u8(in) % 4u] += 1;
        *expect_ok = 0;
    }
    order(k->p.layout == DT_NHWC ? DT_NHWC : DT_NCHW, cs, s);
    blk_make(y, dt, 4, s, fz_u8(in));
}

static void fuzz_local(fz_in *in, int what)
{
    conv_case k;
    blk x, w, b, y, r, gx, gw, gb, rgx, rgw, rgb;
    int32_t s[4], one;
    int ok, rc, lay, i8 = what == 2 && (fz_u8(in) & 1u), bias = fz_u8(in) & 1u;
    vals vv = vals_make(in);
    mb_dtype dt = i8 || what == 4 ? MB_I8 : MB_F32;
    read_case(in, &k, what == 2 || what == 3);
    lay = k.p.layout == DT_NHWC ? DT_NHWC : DT_NCHW;
    order(lay, k.ci, s);
    blk_make(&x, dt, 4, s, fz_u8(in));
    blk_make(&w, dt, 4, k.cw, fz_u8(in));
    if (dt == MB_I8)
        fill_i8(&vv, &x), fill_i8(&vv, &w);
    else
        fill_f32(&vv, &x), fill_f32(&vv, &w);
    one = k.co[1];
    blk_make(&b, what == 4 ? MB_I32 : MB_F32, 1, &one, 0);
    if (what == 4) {
        size_t j;
        for (j = 0; j < b.bytes / 4; j++) ((int32_t *)b.t.data)[j] = (int32_t)next(&vv) >> (next(&vv) % 32u);
    } else {
        fill_f32(&vv, &b);
    }
    { /* the output shape query: the same rule */
        int32_t os[4], before[4], want[4];
        order(lay, k.ci, s);
        memset(os, 0x3c, sizeof os);
        memcpy(before, os, sizeof os);
        rc = dt_conv2d_out_shape(&k.p, s, what == 2 || what == 3 ? 0 : k.cw, os);
        FUZZ_REQUIRE(is_err(rc));
        FUZZ_REQUIRE(k.bad ? rc < 0 : rc == 0);
        if (rc) FUZZ_REQUIRE(!memcmp(os, before, sizeof os));
        order(lay, k.co, want);
        if (k.valid) FUZZ_REQUIRE(!memcmp(os, want, sizeof os));
    }
    if (what == 0 || what == 2 || what == 4) { /* forward */
        out_blk(in, &k, dt, &y, &ok);
        if (what == 0)
            rc = dt_conv2d_ref(&k.p, &x.t, &w.t, bias ? &b.t : 0, &y.t);
        else if (what == 2)
            rc = dt_maxpool2d_ref(&k.p, &x.t, &y.t);
        else {
            dt_qmul q[8];
            int nq = fz_u8(in) & 1u ? 1 : (int)k.co[1], relu = (int)(fz_u8(in) & 1u), j;
            double real = (double)(1u + fz_u16(in)) / 65536.0 / (double)(1u + fz_u8(in));
            if (nq > 8) nq = 1;
            for (j = 0; j < 8; j++) FUZZ_REQUIRE(dt_quantize_multiplier(real * (1.0 + j), &q[j]) == DT_OK);
            if ((k.cw[1] * k.cw[2] * k.cw[3]) > DT_QMM_MAX_K) ok = 0;
            if (nq != 1 && nq != k.co[1]) ok = 0;
            rc = dt_conv2d_q8_ref(&k.p, &x.t, &w.t, bias ? &b.t : 0, q, nq, relu, &y.t);
            if (ok && rc == 0) { /* int64 reference requantized per element */
                int32_t n, oc, oh, ow, c, i, j2, cpg = k.cw[1], opg = k.co[1] / k.p.groups;
                for (n = 0; n < k.co[0]; n++)
                    for (oc = 0; oc < k.co[1]; oc++)
                        for (oh = 0; oh < k.co[2]; oh++)
                            for (ow = 0; ow < k.co[3]; ow++) {
                                int64_t acc = bias ? ((int32_t *)b.t.data)[oc] : 0, sum = 0;
                                int v;
                                for (c = 0; c < cpg; c++)
                                    for (i = 0; i < k.cw[2]; i++)
                                        for (j2 = 0; j2 < k.cw[3]; j2++) {
                                            int32_t h =
                                                tap(oh, k.p.stride[0], k.p.padding[0], k.p.dilation[0], i, k.ci[2]);
                                            int32_t ww =
                                                tap(ow, k.p.stride[1], k.p.padding[1], k.p.dilation[1], j2, k.ci[3]);
                                            if (h < 0 || h >= k.ci[2] || ww < 0 || ww >= k.ci[3]) continue;
                                            sum += (int64_t)*Q(&x, lay, n, oc / opg * cpg + c, h, ww) *
                                                   *Q(&w, DT_NCHW, oc, c, i, j2);
                                        }
                                acc += sum;
                                if (acc > INT32_MAX) acc = INT32_MAX;
                                if (acc < INT32_MIN) acc = INT32_MIN;
                                v = dt_requant_i8((int32_t)acc, q[nq == 1 ? 0 : oc]);
                                if (relu && v < 0) v = 0;
                                FUZZ_REQUIRE(*Q(&y, lay, n, oc, oh, ow) == v);
                            }
            }
        }
        FUZZ_REQUIRE(is_err(rc));
        FUZZ_REQUIRE(ok ? rc == 0 : rc < 0);
        if (rc) FUZZ_REQUIRE(blk_untouched(&y));
        if (!rc && what != 4) {
            order(lay, k.co, s);
            blk_make(&r, dt, 4, s, 0);
            if (what == 0)
                ref_conv(&k, &x, &w, bias ? &b : 0, &r);
            else
                ref_pool(&k, &x, &r, 0, 0);
            FUZZ_REQUIRE(same(&y, &r, lay, k.co));
            blk_free(&r);
        }
        blk_free(&y);
    } else { /* backward: grad_out in y's place; grad_in, grad_w, grad_b as asked */
        int want = (int)fz_u8(in), rok = k.valid;
        blk gy;
        if (dt != MB_F32) rok = 0;
        order(lay, k.co, s);
        blk_make(&gy, MB_F32, 4, s, fz_u8(in));
        fill_f32(&vv, &gy);
        order(lay, k.ci, s);
        if ((want & 1) || what == 3) {
            int32_t cs[4];
            memcpy(cs, k.ci, sizeof cs);
            if (rok && fz_u8(in) < 12) cs[fz_u8(in) % 4u] += 1, rok = 0;
            order(lay, cs, s);
        }
        blk_make(&gx, MB_F32, 4, s, fz_u8(in));
        blk_make(&gw, MB_F32, 4, k.cw, fz_u8(in));
        blk_make(&gb, MB_F32, 1, &one, 0);
        if (what == 1)
            rc = dt_conv2d_backward(&k.p, &x.t, &w.t, &gy.t, want & 1 ? &gx.t : 0, want & 2 ? &gw.t : 0,
                                    want & 4 ? &gb.t : 0);
        else
            rc = dt_maxpool2d_backward(&k.p, &x.t, &gy.t, &gx.t);
        FUZZ_REQUIRE(is_err(rc));
        FUZZ_REQUIRE(rok ? rc == 0 : rc < 0);
        if (rc) FUZZ_REQUIRE(blk_untouched(&gx) && blk_untouched(&gw) && blk_untouched(&gb));
        if (!rc) {
            blk_make(&rgx, MB_F32, 4, s, 0);
            blk_make(&rgw, MB_F32, 4, k.cw, 0);
            blk_make(&rgb, MB_F32, 1, &one, 0);
            if (what == 1)
                ref_conv_bw(&k, &x, &w, &gy, &rgx, &rgw, &rgb);
            else
                ref_pool(&k, &x, 0, &gy, &rgx);
            if ((want & 1) || what == 3)
                FUZZ_REQUIRE(same(&gx, &rgx, lay, k.ci));
            else
                FUZZ_REQUIRE(blk_untouched(&gx));
            if (what == 1 && (want & 2)) FUZZ_REQUIRE(same(&gw, &rgw, DT_NCHW, k.cw));
            if (what == 1 && (want & 4)) FUZZ_REQUIRE(!memcmp(gb.t.data, rgb.t.data, gb.bytes));
            blk_free(&rgx), blk_free(&rgw), blk_free(&rgb);
        }
        blk_free(&gy), blk_free(&gx), blk_free(&gw), blk_free(&gb);
    }
    blk_free(&x), blk_free(&w), blk_free(&b);
}

/* ---- sharded: dt_conv2d / dt_maxpool2d / dt_conv2d_sharded_backward on P ranks ---- */
typedef struct shard_run {
    conv_case k;
    int what; /* 0 conv2d, 1 max pool, 2 conv2d backward, 3 int8 conv2d */
    dt_qmul q[8];
    int nq, relu;
    int P, bias, in_kind, w_kind; /* in: 0 R, 1 S(N), 2 S(H), 3 S(C); w: 0 R, 1 S(0) */
    blk x, w, b, gy;              /* global tensors (read only) */
    int rc[MAXR];
    blk out[MAXR], gx[MAXR], gw[MAXR], gb[MAXR]; /* each rank's results */
    dt_spec out_spec[MAXR], gspec[MAXR][3];
    dt_mesh mesh[MAXR]; /* each rank's mesh (the specs above point at it) */
} shard_run;

static pg_pthread_world world;

static int hdim(int layout)
{
    return layout == DT_NHWC ? 1 : 2;
}

static int shard_rank(pg_group *g, void *arg)
{
    shard_run *s = (shard_run *)arg;
    int r = pg_rank(g), rc, lay = s->k.p.layout == DT_NHWC ? DT_NHWC : DT_NCHW;
    dt_mesh *mp = &s->mesh[r];
    dt_comm c;
    dt_tensor x, w, gy;
    dt_placement pin[1], pw[1], pr[1] = {DT_REPLICATE()};
    int32_t P = s->P, boff = 0, bn, ws[4];
    mb_tensor bias;
    size_t need = 0;
    void *scratch;
    pg_set_timeout(g, 5000);
    FUZZ_REQUIRE(dt_mesh_init(mp, 1, &P, 0, r) == DT_OK);
    FUZZ_REQUIRE(dt_comm_init(&c, mp, g) == DT_OK);
    pin[0] = s->in_kind == 0 ? pr[0]
                             : (dt_placement)DT_SHARD(s->in_kind == 1   ? 0
                                                      : s->in_kind == 2 ? hdim(lay)
                                                      : lay == DT_NHWC  ? 3
                                                                        : 1);
    pw[0] = s->w_kind ? (dt_placement)DT_SHARD(0) : pr[0];
    FUZZ_REQUIRE(dt_spec_init(&x.spec, mp, pin, 1, s->x.t.dtype, 4, s->x.t.shape, 0) == DT_OK);
    FUZZ_REQUIRE(dt_local_view(&x.spec, r, &s->x.t, &x.local) == DT_OK);
    memcpy(ws, s->w.t.shape, sizeof ws);
    FUZZ_REQUIRE(dt_spec_init(&w.spec, mp, pw, 1, s->w.t.dtype, 4, ws, 0) == DT_OK);
    FUZZ_REQUIRE(dt_local_view(&w.spec, r, &s->w.t, &w.local) == DT_OK);
    bn = s->w_kind ? dt_chunk(ws[0], P, r, &boff) : ws[0];
    mb_tensor_init(&bias, (char *)s->b.t.data + (size_t)boff * mb_dtype_size(s->b.t.dtype), s->b.t.dtype, 1, &bn);
    if (s->what == 2) {
        rc = dt_conv2d_backward_scratch_bytes(&s->k.p, &x.spec, &w.spec, &need);
        if (rc == DT_OK) /* grad_out in the output spec dt_conv2d gives */
            rc = dt_conv2d_out_spec(&s->k.p, &x.spec, &w.spec, &gy.spec);
        if (rc == DT_OK) FUZZ_REQUIRE(dt_local_view(&gy.spec, r, &s->gy.t, &gy.local) == DT_OK);
    } else {
        rc = dt_conv2d_scratch_bytes(&s->k.p, &x.spec, s->what == 1 ? 0 : &w.spec, &need);
    }
    if (rc) {
        s->rc[r] = rc;
        return 0;
    }
    scratch = malloc(need ? need : 1);
    FUZZ_REQUIRE(scratch);
    { /* this rank's output blocks: the local shape of the output spec */
        dt_spec os;
        int32_t ls[4];
        FUZZ_REQUIRE(dt_conv2d_out_spec(&s->k.p, &x.spec, s->what == 1 ? 0 : &w.spec, &os) == DT_OK); /* as scratch */
        FUZZ_REQUIRE(dt_local_shape(&os, r, ls, 0) == DT_OK);
        blk_make(&s->out[r], s->x.t.dtype, 4, ls, 0);
        FUZZ_REQUIRE(dt_local_shape(&x.spec, r, ls, 0) == DT_OK);
        blk_make(&s->gx[r], MB_F32, 4, ls, 0);
        FUZZ_REQUIRE(dt_local_shape(&w.spec, r, ls, 0) == DT_OK);
        blk_make(&s->gw[r], MB_F32, 4, ls, 0);
        blk_make(&s->gb[r], MB_F32, 1, &bn, 0);
    }
    if (s->what == 0)
        rc = dt_conv2d(&c, &s->k.p, &x, &w, s->bias ? &bias : 0, &s->out_spec[r], &s->out[r].t, scratch, need);
    else if (s->what == 1)
        rc = dt_maxpool2d(&c, &s->k.p, &x, &s->out_spec[r], &s->out[r].t, scratch, need);
    else if (s->what == 3)
        rc = dt_conv2d_q8(&c, &s->k.p, &x, &w, s->bias ? &bias : 0, s->q, s->nq, s->relu, &s->out_spec[r], &s->out[r].t,
                          scratch, need);
    else
        rc = dt_conv2d_sharded_backward(&c, &s->k.p, &x, &w, &gy, &s->gx[r].t, &s->gw[r].t, &s->gb[r].t, s->gspec[r],
                                        scratch, need);
    free(scratch);
    s->rc[r] = rc;
    return 0;
}

/* Sum over ranks of a Partial piece, or each rank's slice, against the single-rank ref. */
static void check_grad(shard_run *s, const dt_spec *spec0, blk *ranks, const blk *ref, int layout)
{
    int r, d, partial = 0;
    for (d = 0; d < spec0->mesh->ndim; d++) partial |= spec0->placements[d].kind == DT_KIND_PARTIAL;
    if (partial) {
        size_t i, n = ref->bytes / 4;
        blk sum;
        int32_t cs[4];
        blk_make(&sum, MB_F32, ref->t.ndim, ref->t.shape, 0);
        memset(sum.t.data, 0, sum.bytes);
        for (r = 0; r < s->P; r++) { /* Partial pieces have the global shape, contiguous here */
            FUZZ_REQUIRE(ranks[r].bytes == sum.bytes);
            for (i = 0; i < n; i++) ((float *)sum.t.data)[i] += ((float *)ranks[r].t.data)[i];
        }
        if (ref->t.ndim == 4) {
            for (d = 0; d < 4; d++) cs[d] = ref->t.shape[d];
            if (layout == DT_NHWC) cs[1] = ref->t.shape[3], cs[2] = ref->t.shape[1], cs[3] = ref->t.shape[2];
            FUZZ_REQUIRE(same(&sum, ref, layout, cs));
        } else {
            FUZZ_REQUIRE(!memcmp(sum.t.data, ref->t.data, sum.bytes)); /* both contiguous [C_out] */
        }
        blk_free(&sum);
        return;
    }
    for (r = 0; r < s->P; r++) {
        mb_tensor v;
        int32_t i, cnt = 1;
        dt_spec sp = *spec0; /* the rank's slice of the reference */
        FUZZ_REQUIRE(dt_local_view(&sp, sp.mesh->ranks[r], &ref->t, &v) == DT_OK);
        FUZZ_REQUIRE(v.ndim == ranks[r].t.ndim);
        for (i = 0; i < v.ndim; i++) {
            FUZZ_REQUIRE(v.shape[i] == ranks[r].t.shape[i]);
            cnt *= v.shape[i];
        }
        if (v.ndim == 4) {
            blk vb;
            int32_t cs[4];
            vb.t = v;
            vb.bytes = 0;
            cs[0] = v.shape[0];
            if (layout == DT_NHWC)
                cs[1] = v.shape[3], cs[2] = v.shape[1], cs[3] = v.shape[2];
            else
                cs[1] = v.shape[1], cs[2] = v.shape[2], cs[3] = v.shape[3];
            FUZZ_REQUIRE(same(&ranks[r], &vb, layout, cs));
        } else {
            for (i = 0; i < cnt; i++)
                FUZZ_REQUIRE(((float *)ranks[r].t.data)[i] == ((float *)v.data)[(size_t)i * (size_t)v.stride[0]]);
        }
    }
}

static void fuzz_sharded(fz_in *in)
{
    static shard_run s;
    int r, valid, lay, strat;
    int32_t sh[4], one;
    blk ref, rgx, rgw, rgb;
    vals vv = vals_make(in);
    memset(&s, 0, sizeof s);
    s.what = (int)(fz_u8(in) % 4u);
    read_case(in, &s.k, s.what == 1);
    s.P = 1 + (int)(fz_u8(in) % MAXR);
    s.bias = fz_u8(in) & 1u;
    s.in_kind = (int)(fz_u8(in) % 4u);
    s.w_kind = s.what != 1 && (fz_u8(in) & 1u);
    if (s.k.big || s.k.cw[0] < 0 || s.k.cw[1] < 0 || s.k.cw[2] < 0 || s.k.cw[3] < 0)
        return; /* huge outputs, negative weight sizes: local cases */
    lay = s.k.p.layout == DT_NHWC ? DT_NHWC : DT_NCHW;
    order(lay, s.k.ci, sh);
    blk_make(&s.x, s.what == 3 ? MB_I8 : MB_F32, 4, sh, fz_u8(in));
    blk_make(&s.w, s.what == 3 ? MB_I8 : MB_F32, 4, s.k.cw, 0); /* contiguous: its Shard(0) view is a block */
    one = s.k.cw[0];
    blk_make(&s.b, s.what == 3 ? MB_I32 : MB_F32, 1, &one, 0);
    order(lay, s.k.co, sh);
    blk_make(&s.gy, MB_F32, 4, sh, fz_u8(in));
    fill_f32(&vv, &s.gy);
    if (s.what == 3) {
        int j;
        size_t e;
        double real = (double)(1u + fz_u16(in)) / 65536.0 / (double)(1u + fz_u8(in));
        fill_i8(&vv, &s.x), fill_i8(&vv, &s.w);
        for (e = 0; e < s.b.bytes / 4; e++) ((int32_t *)s.b.t.data)[e] = (int32_t)next(&vv) >> (next(&vv) % 32u);
        s.nq = fz_u8(in) & 1u ? 1 : (int)s.k.co[1];
        if (s.nq < 1 || s.nq > 8) s.nq = 1;
        s.relu = (int)(fz_u8(in) & 1u);
        for (j = 0; j < 8; j++) FUZZ_REQUIRE(dt_quantize_multiplier(real * (1.0 + j), &s.q[j]) == DT_OK);
    } else {
        fill_f32(&vv, &s.x), fill_f32(&vv, &s.w), fill_f32(&vv, &s.b);
    }
    /* the strategies: (S(N), R), (R, S(0)), (S(H), R), (R, R); max pool also S(C) */
    strat = s.what == 1 ? 1 : (s.in_kind == 0 || s.w_kind == 0) && s.in_kind != 3;
    valid = s.k.valid && strat;
    FUZZ_REQUIRE(pg_pthread_run(&world, s.P, shard_rank, &s) == 0);
    for (r = 0; r < s.P; r++) {
        FUZZ_REQUIRE(is_err(s.rc[r]));
        if (!valid)
            FUZZ_REQUIRE(s.rc[r] < 0);
        else if (s.rc[r]) {
            fprintf(stderr, "rank %d of %d: %d (%s)\n", r, s.P, s.rc[r], dt_strerror(s.rc[r]));
            FUZZ_REQUIRE(s.rc[r] == 0);
        }
    }
    if (valid) {
        order(lay, s.k.co, sh);
        blk_make(&ref, s.x.t.dtype, 4, sh, 0);
        if (s.what == 3) /* the single-rank int8 kernel, itself checked against int64 loops above */
            FUZZ_REQUIRE(dt_conv2d_q8_ref(&s.k.p, &s.x.t, &s.w.t, s.bias ? &s.b.t : 0, s.q, s.nq, s.relu, &ref.t) == 0);
        else if (s.what == 0)
            ref_conv(&s.k, &s.x, &s.w, s.bias ? &s.b : 0, &ref);
        else if (s.what == 1)
            ref_pool(&s.k, &s.x, &ref, 0, 0);
        if (s.what != 2) {
            check_grad(&s, &s.out_spec[0], s.out, &ref, lay);
        } else {
            order(lay, s.k.ci, sh);
            blk_make(&rgx, MB_F32, 4, sh, 0);
            blk_make(&rgw, MB_F32, 4, s.k.cw, 0);
            blk_make(&rgb, MB_F32, 1, &one, 0);
            ref_conv_bw(&s.k, &s.x, &s.w, &s.gy, &rgx, &rgw, &rgb);
            check_grad(&s, &s.gspec[0][0], s.gx, &rgx, lay);
            check_grad(&s, &s.gspec[0][1], s.gw, &rgw, DT_NCHW);
            check_grad(&s, &s.gspec[0][2], s.gb, &rgb, DT_NCHW);
            blk_free(&rgx), blk_free(&rgw), blk_free(&rgb);
        }
        blk_free(&ref);
    }
    for (r = 0; r < s.P; r++) blk_free(&s.out[r]), blk_free(&s.gx[r]), blk_free(&s.gw[r]), blk_free(&s.gb[r]);
    blk_free(&s.x), blk_free(&s.w), blk_free(&s.b), blk_free(&s.gy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    int what = (int)(fz_u8(&in) % 6u);
    if (what == 5)
        fuzz_sharded(&in);
    else
        fuzz_local(&in, what);
    { /* the pure helpers on any fields */
        dt_conv2d_params p;
        int32_t rows[6], before[6], h = fz_int(&in, 12), kh = fz_int(&in, 5), parts = fz_int(&in, 5),
                                    i = fz_int(&in, 5);
        int rc;
        memset(&p, 0, sizeof p);
        p.stride[0] = fz_int(&in, 4);
        p.padding[0] = fz_int(&in, 4);
        p.dilation[0] = fz_int(&in, 4);
        memset(rows, 0x3c, sizeof rows);
        memcpy(before, rows, sizeof rows);
        rc = dt_conv2d_rows(&p, h, kh, parts, i, rows);
        FUZZ_REQUIRE(is_err(rc));
        if (rc) {
            FUZZ_REQUIRE(!memcmp(rows, before, sizeof rows));
        } else { /* [a, b) inside [0, h); [o0, o1) a chunk of the output; [n0, n1) inside [0, h) */
            FUZZ_REQUIRE(rows[0] >= 0 && rows[0] <= rows[1] && rows[1] <= h);
            FUZZ_REQUIRE(rows[2] >= 0 && rows[2] <= rows[3]);
            FUZZ_REQUIRE(rows[4] >= 0 && rows[4] <= rows[5] && rows[5] <= h);
            if (rows[2] < rows[3]) /* the first output row's window starts at n0 (or in the padding) */
                FUZZ_REQUIRE(rows[4] == ((int64_t)rows[2] * p.stride[0] - p.padding[0] < 0
                                             ? 0
                                             : (int64_t)rows[2] * p.stride[0] - p.padding[0]) ||
                             rows[4] == rows[5]);
        }
    }
    return 0;
}
