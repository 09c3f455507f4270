/* test_microbatch.c — cmocka suite for microbatch.h (views, split, merge).
 *
 * Follows torch.distributed.pipelining.microbatch: split sizes are those of
 * torch.tensor_split (MB_BALANCED) and torch.chunk (MB_CEIL), chunks are views
 * into the input (zero copy), debug-mask chunks are full-size tensors zero
 * outside their slice, and merge concatenates / reduces / checks replicas.
 * Every error path checks that the caller's outputs are byte-for-byte
 * untouched (sentinel pattern compared after the call).
 *
 * No malloc: every buffer is a static array (about 250 KB in all). The
 * randomised tests use a fixed-seed xorshift32, so every run is the same.
 * MB_MEMCPY is routed through a counter so the zero-copy claims (split copies
 * nothing; merging chunks that already are views of the output copies nothing)
 * are measured, not assumed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

static unsigned long memcpy_calls;
static void *counting_memcpy(void *d, const void *s, size_t n);
#define MB_MEMCPY(d, s, n) counting_memcpy((d), (s), (n))
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"

static void *counting_memcpy(void *d, const void *s, size_t n)
{
    memcpy_calls++;
    return memcpy(d, s, n);
}

/* ---- helpers ------------------------------------------------------------- */

#define SHP(...) ((const int32_t[]){__VA_ARGS__})
#define SENT     0xA5

static const mb_dtype all_dtypes[6] = {MB_F32, MB_F64, MB_I8, MB_U8, MB_I16, MB_I32};

/* Element size, written independently of mb_dtype_size. */
static size_t esz(mb_dtype dt)
{
    switch (dt) {
    case MB_F32: return sizeof(float);
    case MB_F64: return sizeof(double);
    case MB_I8: return sizeof(int8_t);
    case MB_U8: return sizeof(uint8_t);
    case MB_I16: return sizeof(int16_t);
    case MB_I32: return sizeof(int32_t);
    default: return 0;
    }
}

static void setv(void *p, mb_dtype dt, double v)
{
    switch (dt) {
    case MB_F32: {
        float x = (float)v;
        memcpy(p, &x, sizeof x);
        break;
    }
    case MB_F64: memcpy(p, &v, sizeof v); break;
    case MB_I8: {
        int8_t x = (int8_t)v;
        memcpy(p, &x, sizeof x);
        break;
    }
    case MB_U8: {
        uint8_t x = (uint8_t)v;
        memcpy(p, &x, sizeof x);
        break;
    }
    case MB_I16: {
        int16_t x = (int16_t)v;
        memcpy(p, &x, sizeof x);
        break;
    }
    default: {
        int32_t x = (int32_t)v;
        memcpy(p, &x, sizeof x);
        break;
    }
    }
}

/* Address of element idx[] of a view, from its strides (independent of the header). */
static char *at(const mb_tensor *t, const int32_t *idx)
{
    ptrdiff_t off = 0;
    int d;
    for (d = 0; d < t->ndim; d++) off += (ptrdiff_t)idx[d] * (ptrdiff_t)t->stride[d];
    return (char *)t->data + off * (ptrdiff_t)esz(t->dtype);
}

static char *at2(const mb_tensor *t, int32_t r, int32_t c)
{
    int32_t idx[2];
    idx[0] = r;
    idx[1] = c;
    return at(t, idx);
}

static int64_t numel_of(int nd, const int32_t *shape)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < nd; d++) n *= shape[d];
    return n;
}

static void unravel(int64_t lin, int nd, const int32_t *shape, int32_t *idx)
{
    int d;
    for (d = nd - 1; d >= 0; d--) {
        idx[d] = (int32_t)(lin % shape[d]);
        lin /= shape[d];
    }
}

static void tv(mb_value *v, void *data, mb_dtype dt, int ndim, const int32_t *shape)
{
    memset(v, 0, sizeof *v);
    v->kind = MB_VALUE_TENSOR;
    assert_int_equal(mb_tensor_init(&v->tensor, data, dt, ndim, shape), MB_OK);
}

static void sv(mb_value *v, double x)
{
    memset(v, 0, sizeof *v);
    v->kind = MB_VALUE_SCALAR;
    v->scalar = x;
}

static void assert_view(const mb_tensor *t, const void *data, mb_dtype dt, int ndim, const int32_t *shape,
                        const int32_t *stride)
{
    int d;
    assert_ptr_equal(t->data, data);
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->ndim, ndim);
    for (d = 0; d < ndim; d++) {
        assert_int_equal(t->shape[d], shape[d]);
        assert_int_equal(t->stride[d], stride[d]);
    }
}

/* xorshift32, fixed seed */
static uint32_t rng_state = 0x2545F491u;
static uint32_t rng(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    return x;
}
static int rng_below(int n)
{
    return (int)(rng() % (uint32_t)n);
}

/* Run mb_split; on any error `out` (its whole capacity) must be untouched. The macros
   assert the return code at the call site, so a failure names the calling line. */
static mb_value split_out[64];
static unsigned char split_snap[sizeof split_out];
static int split_rc(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags, int max,
                    mb_diag *diag)
{
    int rc;
    assert_true(max * nargs <= 64);
    memset(split_out, SENT, sizeof split_out);
    memcpy(split_snap, split_out, sizeof split_out);
    rc = mb_split(args, specs, nargs, chunks, flags, split_out, max, diag);
    if (rc < 0) assert_memory_equal(split_out, split_snap, sizeof split_out);
    return rc;
}
#define split_err(args, specs, nargs, chunks, flags, max, want, diag) \
    assert_int_equal(split_rc((args), (specs), (nargs), (chunks), (flags), (max), (diag)), (want))

/* Run mb_merge; on any error out[0..nvals) and the output buffer must be untouched. */
static unsigned char merge_snap_vals[8 * sizeof(mb_value)];
static unsigned char merge_snap_buf[1024];
static int merge_rc(const mb_value *chunks, int nchunks, int nvals, const mb_spec *specs, int flags, mb_value *out,
                    void *outbuf, size_t outbytes)
{
    size_t nv = (size_t)(nvals > 0 ? nvals : 0) * sizeof(mb_value);
    int rc;
    assert_true(nv <= sizeof merge_snap_vals && outbytes <= sizeof merge_snap_buf);
    if (out) memcpy(merge_snap_vals, out, nv);
    if (outbuf) memcpy(merge_snap_buf, outbuf, outbytes);
    rc = mb_merge(chunks, nchunks, nvals, specs, flags, out);
    if (rc < 0) {
        if (out) assert_memory_equal(out, merge_snap_vals, nv);
        if (outbuf) assert_memory_equal(outbuf, merge_snap_buf, outbytes);
    }
    return rc;
}
#define merge_err(chunks, nchunks, nvals, specs, flags, out, outbuf, outbytes, want) \
    assert_int_equal(merge_rc((chunks), (nchunks), (nvals), (specs), (flags), (out), (outbuf), (outbytes)), (want))

/* ==== 1. Views ============================================================== */

static void test_dtype_size(void **state)
{
    (void)state;
    assert_int_equal(mb_dtype_size(MB_F32), 4);
    assert_int_equal(mb_dtype_size(MB_F64), 8);
    assert_int_equal(mb_dtype_size(MB_I8), 1);
    assert_int_equal(mb_dtype_size(MB_U8), 1);
    assert_int_equal(mb_dtype_size(MB_I16), 2);
    assert_int_equal(mb_dtype_size(MB_I32), 4);
    assert_int_equal(mb_dtype_size(MB_DTYPE_COUNT), 0);
    assert_int_equal(mb_dtype_size((mb_dtype)99), 0);
    assert_int_equal(mb_dtype_size((mb_dtype)-1), 0);
}

static void test_strerror(void **state)
{
    static const int codes[] = {
        MB_OK,         MB_ERR_NULL,        MB_ERR_NDIM,      MB_ERR_DIM,  MB_ERR_DTYPE,      MB_ERR_SHAPE,
        MB_ERR_CHUNKS, MB_ERR_CHUNK_COUNT, MB_ERR_TOO_SMALL, MB_ERR_SPEC, MB_ERR_SPLIT_SIZE, MB_ERR_NOT_REPLICATED,
        MB_ERR_RANGE,  MB_ERR_ALIGN,       MB_ERR_OVERLAP};
    static const int others[] = {1, 7, -15, -100, INT32_MIN, INT32_MAX};
    const int n = (int)(sizeof codes / sizeof codes[0]);
    const char *unk = mb_strerror(others[0]);
    int i, j;
    (void)state;
    assert_int_equal(n, 15); /* every enumerator 0..-14 listed */
    assert_non_null(unk);
    assert_non_null(strstr(unk, "unknown"));
    for (i = 0; i < n; i++) {
        const char *s = mb_strerror(codes[i]);
        assert_non_null(s);
        assert_true(s[0] != '\0');
        assert_true(strcmp(s, unk) != 0);
        for (j = 0; j < i; j++) assert_true(strcmp(s, mb_strerror(codes[j])) != 0);
    }
    for (i = 0; i < (int)(sizeof others / sizeof others[0]); i++) {
        const char *s = mb_strerror(others[i]);
        assert_non_null(s);
        assert_true(strcmp(s, unk) == 0);
    }
}

static void test_tensor_init_strides(void **state)
{
    static float buf[24];
    mb_tensor t, snap;
    (void)state;
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 3, SHP(2, 3, 4)), MB_OK);
    assert_view(&t, buf, MB_F32, 3, SHP(2, 3, 4), SHP(12, 4, 1));
    assert_int_equal(mb_numel(&t), 24);

    /* size-1 dims: strides as torch.empty(3,1,2).stride() = (2,2,1) */
    assert_int_equal(mb_tensor_init(&t, buf, MB_I16, 3, SHP(3, 1, 2)), MB_OK);
    assert_view(&t, buf, MB_I16, 3, SHP(3, 1, 2), SHP(2, 2, 1));
    /* size-0 dim: torch.empty(2,0,3).stride() = (3,3,1) */
    assert_int_equal(mb_tensor_init(&t, buf, MB_F64, 3, SHP(2, 0, 3)), MB_OK);
    assert_view(&t, buf, MB_F64, 3, SHP(2, 0, 3), SHP(3, 3, 1));
    assert_int_equal(mb_numel(&t), 0);
    /* 0-d tensor: shape may be NULL, numel 1 */
    assert_int_equal(mb_tensor_init(&t, buf, MB_I32, 0, NULL), MB_OK);
    assert_int_equal(t.ndim, 0);
    assert_ptr_equal(t.data, buf);
    assert_int_equal(mb_numel(&t), 1);
    /* MB_MAX_DIMS dims are fine */
    {
        int32_t sh[MB_MAX_DIMS];
        int d;
        for (d = 0; d < MB_MAX_DIMS; d++) sh[d] = d == 0 ? 3 : 1;
        assert_int_equal(mb_tensor_init(&t, buf, MB_U8, MB_MAX_DIMS, sh), MB_OK);
        assert_int_equal(t.ndim, MB_MAX_DIMS);
        assert_int_equal(mb_numel(&t), 3);
    }
    /* NULL data sizes a view: strides and numel, refused by every call that uses elements */
    assert_int_equal(mb_tensor_init(&t, NULL, MB_F32, 2, SHP(0, 5)), MB_OK);
    assert_int_equal(mb_tensor_check(&t), MB_OK); /* empty: no data needed */
    assert_int_equal(mb_tensor_init(&t, NULL, MB_F32, 2, SHP(3, 5)), MB_OK);
    assert_null(t.data);
    assert_int_equal(t.stride[0], 5);
    assert_int_equal(mb_numel(&t) * (int64_t)mb_dtype_size(t.dtype), 60);
    assert_int_equal(mb_tensor_check(&t), MB_ERR_NULL);
    assert_int_equal(mb_zero(&t), MB_ERR_NULL);
    t.data = buf; /* storage of the size it gave */
    assert_int_equal(mb_zero(&t), MB_OK);

    /* errors leave t untouched */
    memset(&t, SENT, sizeof t);
    memcpy(&snap, &t, sizeof t);
    {
        int32_t sh[MB_MAX_DIMS + 1];
        int d;
        for (d = 0; d <= MB_MAX_DIMS; d++) sh[d] = 1;
        assert_int_equal(mb_tensor_init(&t, buf, MB_F32, MB_MAX_DIMS + 1, sh), MB_ERR_NDIM);
    }
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, -1, SHP(1)), MB_ERR_NDIM);
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 2, SHP(2, -1)), MB_ERR_SHAPE);
    assert_int_equal(mb_tensor_init(&t, buf, MB_DTYPE_COUNT, 1, SHP(2)), MB_ERR_DTYPE);
    assert_int_equal(mb_tensor_init(&t, NULL, MB_F32, 1, SHP(-2)), MB_ERR_SHAPE); /* sizing checks alike */
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 2, NULL), MB_ERR_NULL);
    assert_memory_equal(&t, &snap, sizeof t);
    assert_int_equal(mb_tensor_init(NULL, buf, MB_F32, 1, SHP(2)), MB_ERR_NULL);
}

/* Contiguous strides must fit int32_t: the limit is exact (46341 * 46340 fits, 46341^2 does
   not), only the outermost stride-carrying product counts (the first dim's size is free), and
   size-1 dims do not multiply. */
static void test_tensor_init_stride_limit(void **state)
{
    static float buf[1];
    mb_tensor t, snap;
    (void)state;
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 3, SHP(2, 46341, 46340)), MB_OK);
    assert_int_equal(t.stride[0], 46341 * 46340);
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 3, SHP(3, 1, INT32_MAX)), MB_OK);
    assert_int_equal(t.stride[0], INT32_MAX);
    assert_int_equal(t.stride[1], INT32_MAX);
    memset(&t, SENT, sizeof t);
    memcpy(&snap, &t, sizeof t);
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 3, SHP(2, 46341, 46341)), MB_ERR_SHAPE);
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 3, SHP(1, 2, INT32_MAX)), MB_ERR_SHAPE);
    assert_memory_equal(&t, &snap, sizeof t);
}

static void test_tensor_check(void **state)
{
    static float buf[6];
    mb_tensor t, good;
    (void)state;
    assert_int_equal(mb_tensor_init(&good, buf, MB_F32, 2, SHP(2, 3)), MB_OK);
    assert_int_equal(mb_tensor_check(&good), MB_OK);
    t = good;
    t.ndim = MB_MAX_DIMS + 1;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_NDIM);
    t = good;
    t.ndim = -1;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_NDIM);
    t = good;
    t.shape[1] = -3;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_SHAPE);
    t = good;
    t.stride[0] = -1;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_SHAPE);
    t = good;
    t.dtype = MB_DTYPE_COUNT;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_DTYPE);
    t = good;
    t.dtype = (mb_dtype)42;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_DTYPE);
    t = good;
    t.data = NULL;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_NULL);
    assert_int_equal(mb_tensor_check(NULL), MB_ERR_NULL);
    /* broadcast-style zero strides and a scalar tensor are valid views */
    t = good;
    t.stride[0] = 0;
    t.stride[1] = 0;
    assert_int_equal(mb_tensor_check(&t), MB_OK);
    t = good;
    t.ndim = 0;
    assert_int_equal(mb_tensor_check(&t), MB_OK);
}

static void test_is_contiguous(void **state)
{
    static float buf[12];
    mb_tensor t, v;
    (void)state;
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 2, SHP(3, 4)), MB_OK);
    assert_int_equal(mb_is_contiguous(&t), 1);
    /* transpose: swap shape and strides */
    v = t;
    v.shape[0] = 4;
    v.shape[1] = 3;
    v.stride[0] = 1;
    v.stride[1] = 4;
    assert_int_equal(mb_is_contiguous(&v), 0);
    /* narrowed inner dim: rows have gaps */
    assert_int_equal(mb_narrow(&t, 1, 1, 2, &v), MB_OK);
    assert_int_equal(mb_is_contiguous(&v), 0);
    /* narrowed outer dim: still one block */
    assert_int_equal(mb_narrow(&t, 0, 1, 2, &v), MB_OK);
    assert_int_equal(mb_is_contiguous(&v), 1);
    /* a single column is not contiguous, a single row is */
    assert_int_equal(mb_narrow(&t, 1, 2, 1, &v), MB_OK);
    assert_int_equal(mb_is_contiguous(&v), 0);
    assert_int_equal(mb_narrow(&t, 0, 2, 1, &v), MB_OK);
    assert_int_equal(mb_is_contiguous(&v), 1);
    /* size-1 dims: their stride does not matter */
    v = t;
    v.shape[0] = 1;
    v.stride[0] = 99;
    assert_int_equal(mb_is_contiguous(&v), 1);
    v = t;
    v.shape[0] = 4;
    v.shape[1] = 1;
    v.stride[0] = 1;
    v.stride[1] = 7;
    assert_int_equal(mb_is_contiguous(&v), 1);
    v = t;
    v.shape[0] = 4;
    v.shape[1] = 1;
    v.stride[0] = 2;
    v.stride[1] = 7;
    assert_int_equal(mb_is_contiguous(&v), 0);
    /* 3-D with a size-1 middle dim of odd stride */
    assert_int_equal(mb_tensor_init(&v, buf, MB_F32, 3, SHP(3, 1, 4)), MB_OK);
    v.stride[1] = 1000;
    assert_int_equal(mb_is_contiguous(&v), 1);
    v.stride[0] = 5;
    assert_int_equal(mb_is_contiguous(&v), 0);
    /* scalars are contiguous; bad input is an error */
    v = t;
    v.ndim = 0;
    assert_int_equal(mb_is_contiguous(&v), 1);
    assert_int_equal(mb_is_contiguous(NULL), MB_ERR_NULL);
    v = t;
    v.dtype = MB_DTYPE_COUNT;
    assert_int_equal(mb_is_contiguous(&v), MB_ERR_DTYPE);
}

/* torch: a tensor with no elements is contiguous whatever its strides
   (torch.empty_strided((0,3),(3,2)).is_contiguous() is True). */
static void test_is_contiguous_empty_any_strides(void **state)
{
    static float buf[4];
    mb_tensor t;
    (void)state;
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 2, SHP(0, 3)), MB_OK);
    assert_int_equal(mb_is_contiguous(&t), 1);
    t.stride[1] = 2; /* inner stride wrong, but no elements */
    assert_int_equal(mb_is_contiguous(&t), 1);
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 2, SHP(3, 0)), MB_OK);
    t.stride[0] = 1;
    t.stride[1] = 3;
    assert_int_equal(mb_is_contiguous(&t), 1);
}

static void test_normalize_dim(void **state)
{
    (void)state;
    assert_int_equal(mb_normalize_dim(0, 3), 0);
    assert_int_equal(mb_normalize_dim(2, 3), 2);
    assert_int_equal(mb_normalize_dim(-1, 3), 2);
    assert_int_equal(mb_normalize_dim(-3, 3), 0);
    assert_int_equal(mb_normalize_dim(3, 3), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(-4, 3), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(0, 1), 0);
    assert_int_equal(mb_normalize_dim(-1, 1), 0);
    assert_int_equal(mb_normalize_dim(0, 0), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(-1, 0), MB_ERR_DIM);
}

static void test_narrow_view(void **state)
{
    static float buf[20];
    static double dbuf[20];
    static int16_t hbuf[20];
    mb_tensor t, v, w, tr, snap;
    int i, r, c;
    (void)state;
    for (i = 0; i < 20; i++) buf[i] = (float)i;
    assert_int_equal(mb_tensor_init(&t, buf, MB_F32, 2, SHP(4, 5)), MB_OK);

    memcpy_calls = 0;
    assert_int_equal(mb_narrow(&t, 0, 1, 2, &v), MB_OK);
    assert_view(&v, buf + 5, MB_F32, 2, SHP(2, 5), SHP(5, 1));
    assert_int_equal(mb_narrow(&t, 1, 2, 3, &v), MB_OK);
    assert_view(&v, buf + 2, MB_F32, 2, SHP(4, 3), SHP(5, 1));
    for (r = 0; r < 4; r++)
        for (c = 0; c < 3; c++) assert_true(*(float *)at2(&v, r, c) == buf[r * 5 + 2 + c]);
    assert_int_equal(memcpy_calls, 0); /* a view, no data moved */
    /* negative dim is normalised */
    assert_int_equal(mb_narrow(&t, -1, 2, 3, &w), MB_OK);
    assert_view(&w, v.data, MB_F32, 2, v.shape, v.stride);
    assert_int_equal(mb_narrow(&t, -2, 3, 1, &w), MB_OK);
    assert_view(&w, buf + 15, MB_F32, 2, SHP(1, 5), SHP(5, 1));
    /* whole dim, and an empty tail */
    assert_int_equal(mb_narrow(&t, 0, 0, 4, &w), MB_OK);
    assert_view(&w, buf, MB_F32, 2, SHP(4, 5), SHP(5, 1));
    assert_int_equal(mb_narrow(&t, 1, 5, 0, &w), MB_OK);
    assert_int_equal(w.shape[1], 0);
    assert_int_equal(w.shape[0], 4);
    /* narrowing a view of a view, and a transposed view (pointer uses the stride) */
    assert_int_equal(mb_narrow(&v, 0, 1, 2, &w), MB_OK);
    assert_view(&w, buf + 7, MB_F32, 2, SHP(2, 3), SHP(5, 1));
    tr = t;
    tr.shape[0] = 5;
    tr.shape[1] = 4;
    tr.stride[0] = 1;
    tr.stride[1] = 5;
    assert_int_equal(mb_narrow(&tr, 0, 2, 3, &w), MB_OK);
    assert_view(&w, buf + 2, MB_F32, 2, SHP(3, 4), SHP(1, 5));
    assert_int_equal(mb_narrow(&tr, 1, 3, 1, &w), MB_OK);
    assert_view(&w, buf + 15, MB_F32, 2, SHP(5, 1), SHP(1, 5));
    /* byte offsets scale with the element size */
    assert_int_equal(mb_tensor_init(&v, dbuf, MB_F64, 2, SHP(4, 5)), MB_OK);
    assert_int_equal(mb_narrow(&v, 0, 3, 1, &w), MB_OK);
    assert_ptr_equal(w.data, dbuf + 15);
    assert_int_equal(mb_tensor_init(&v, hbuf, MB_I16, 2, SHP(4, 5)), MB_OK);
    assert_int_equal(mb_narrow(&v, 1, 4, 1, &w), MB_OK);
    assert_ptr_equal(w.data, hbuf + 4);

    /* errors: out untouched */
    memset(&w, SENT, sizeof w);
    memcpy(&snap, &w, sizeof w);
    assert_int_equal(mb_narrow(&t, 0, -1, 1, &w), MB_ERR_RANGE);
    assert_int_equal(mb_narrow(&t, 0, 0, -1, &w), MB_ERR_RANGE);
    assert_int_equal(mb_narrow(&t, 1, 3, 3, &w), MB_ERR_RANGE);
    assert_int_equal(mb_narrow(&t, 1, 6, 0, &w), MB_ERR_RANGE);
    assert_int_equal(mb_narrow(&t, 0, 0, 5, &w), MB_ERR_RANGE);
    assert_int_equal(mb_narrow(&t, 1, INT32_MAX, 2, &w), MB_ERR_RANGE);
    assert_int_equal(mb_narrow(&t, 1, 2, INT32_MAX, &w), MB_ERR_RANGE);
    assert_int_equal(mb_narrow(&t, 2, 0, 1, &w), MB_ERR_DIM);
    assert_int_equal(mb_narrow(&t, -3, 0, 1, &w), MB_ERR_DIM);
    v = t;
    v.shape[0] = -1;
    assert_int_equal(mb_narrow(&v, 1, 0, 1, &w), MB_ERR_SHAPE);
    assert_int_equal(mb_narrow(NULL, 0, 0, 1, &w), MB_ERR_NULL);
    assert_memory_equal(&w, &snap, sizeof w);
    assert_int_equal(mb_narrow(&t, 0, 0, 1, NULL), MB_ERR_NULL);
    /* a NULL out is named first, before the view's or the dim's own error */
    assert_int_equal(mb_narrow(&v, 1, 0, 1, NULL), MB_ERR_NULL);
    assert_int_equal(mb_narrow(&t, 5, 0, 1, NULL), MB_ERR_NULL);
}

static void test_copy_transpose_all_dtypes(void **state)
{
    static unsigned char src_buf[15 * 8], dst_buf[21 * 8], ref_buf[21 * 8];
    int k, r, c;
    (void)state;
    for (k = 0; k < 6; k++) {
        mb_dtype dt = all_dtypes[k];
        size_t es = esz(dt);
        mb_tensor src, dst, dview;
        /* src: 3x5 contiguous, element (r,c) = 10r + c + 1 */
        for (r = 0; r < 3; r++)
            for (c = 0; c < 5; c++) setv(src_buf + (size_t)(r * 5 + c) * es, dt, 10 * r + c + 1);
        assert_int_equal(mb_tensor_init(&src, src_buf, dt, 2, SHP(3, 5)), MB_OK);

        /* dst: the transpose of a 5x3 buffer (shape 3x5, strides 1,3) */
        memset(dst_buf, SENT, sizeof dst_buf);
        assert_int_equal(mb_tensor_init(&dst, dst_buf, dt, 2, SHP(5, 3)), MB_OK);
        dview = dst;
        dview.shape[0] = 3;
        dview.shape[1] = 5;
        dview.stride[0] = 1;
        dview.stride[1] = 3;
        assert_int_equal(mb_copy(&dview, &src), MB_OK);
        for (r = 0; r < 3; r++)
            for (c = 0; c < 5; c++)
                assert_memory_equal(dst_buf + (size_t)(c * 3 + r) * es, src_buf + (size_t)(r * 5 + c) * es, es);
        for (r = 15 * (int)es; r < (int)sizeof dst_buf; r++) assert_int_equal(dst_buf[r], SENT);

        /* back: transposed source into a contiguous 3x5 destination */
        memset(ref_buf, SENT, sizeof ref_buf);
        {
            mb_tensor back, tsrc = dview;
            assert_int_equal(mb_tensor_init(&back, ref_buf, dt, 2, SHP(3, 5)), MB_OK);
            assert_int_equal(mb_copy(&back, &tsrc), MB_OK);
            assert_memory_equal(ref_buf, src_buf, 15 * es);
            assert_int_equal(ref_buf[15 * es], SENT);
        }

        /* into a narrowed 3x5 window of a 3x7 buffer: the two spare columns stay */
        memset(dst_buf, SENT, sizeof dst_buf);
        {
            mb_tensor wide, win;
            assert_int_equal(mb_tensor_init(&wide, dst_buf, dt, 2, SHP(3, 7)), MB_OK);
            assert_int_equal(mb_narrow(&wide, 1, 1, 5, &win), MB_OK);
            assert_int_equal(mb_copy(&win, &src), MB_OK);
            for (r = 0; r < 3; r++)
                for (c = 0; c < 7; c++) {
                    unsigned char *p = dst_buf + (size_t)(r * 7 + c) * es;
                    if (c == 0 || c == 6) {
                        size_t b;
                        for (b = 0; b < es; b++) assert_int_equal(p[b], SENT);
                    } else {
                        assert_memory_equal(p, src_buf + (size_t)(r * 5 + c - 1) * es, es);
                    }
                }
        }
    }
    /* errors: destination untouched */
    {
        static float a[6], b[8];
        static double d6[6];
        mb_tensor ta, tb, td;
        unsigned char snap[sizeof b];
        int i;
        for (i = 0; i < 6; i++) a[i] = (float)i + 1.0f;
        memset(b, SENT, sizeof b);
        memcpy(snap, b, sizeof b);
        assert_int_equal(mb_tensor_init(&ta, a, MB_F32, 2, SHP(2, 3)), MB_OK);
        assert_int_equal(mb_tensor_init(&tb, b, MB_F32, 2, SHP(2, 4)), MB_OK);
        assert_int_equal(mb_copy(&tb, &ta), MB_ERR_SHAPE);
        assert_int_equal(mb_tensor_init(&tb, b, MB_F32, 1, SHP(6)), MB_OK);
        assert_int_equal(mb_copy(&tb, &ta), MB_ERR_SHAPE);
        assert_int_equal(mb_tensor_init(&td, d6, MB_F64, 2, SHP(2, 3)), MB_OK);
        assert_int_equal(mb_copy(&td, &ta), MB_ERR_DTYPE);
        assert_int_equal(mb_tensor_init(&tb, b, MB_F32, 2, SHP(2, 3)), MB_OK);
        ta.shape[0] = -2;
        assert_int_equal(mb_copy(&tb, &ta), MB_ERR_SHAPE);
        assert_int_equal(mb_copy(&tb, NULL), MB_ERR_NULL);
        assert_memory_equal(b, snap, sizeof b);
    }
}

static void test_zero_strided_view(void **state)
{
    int16_t h[20];
    double d[12];
    mb_tensor t, v;
    int i;
    (void)state;
    for (i = 0; i < 20; i++) h[i] = (int16_t)(i + 1);
    assert_int_equal(mb_tensor_init(&t, h, MB_I16, 2, SHP(4, 5)), MB_OK);
    assert_int_equal(mb_narrow(&t, 1, 2, 1, &v), MB_OK); /* column 2 */
    assert_int_equal(mb_zero(&v), MB_OK);
    for (i = 0; i < 20; i++) assert_int_equal(h[i], i % 5 == 2 ? 0 : i + 1);

    /* every other row: shape (2,5), strides (10,1) */
    for (i = 0; i < 20; i++) h[i] = (int16_t)(i + 1);
    v = t;
    v.shape[0] = 2;
    v.stride[0] = 10;
    assert_int_equal(mb_zero(&v), MB_OK);
    for (i = 0; i < 20; i++) assert_int_equal(h[i], (i / 5) % 2 == 0 ? 0 : i + 1);

    /* transposed narrowed window of doubles */
    for (i = 0; i < 12; i++) d[i] = i + 0.5;
    assert_int_equal(mb_tensor_init(&t, d, MB_F64, 2, SHP(3, 4)), MB_OK);
    v = t;
    v.shape[0] = 4;
    v.shape[1] = 3;
    v.stride[0] = 1;
    v.stride[1] = 4;                                     /* transpose */
    assert_int_equal(mb_narrow(&v, 0, 1, 2, &v), MB_OK); /* columns 1..2 of d */
    assert_int_equal(mb_narrow(&v, 1, 0, 2, &v), MB_OK); /* rows 0..1 of d */
    assert_int_equal(mb_zero(&v), MB_OK);
    for (i = 0; i < 12; i++) {
        int row = i / 4, col = i % 4;
        if (row < 2 && (col == 1 || col == 2))
            assert_true(d[i] == 0.0);
        else
            assert_true(d[i] == i + 0.5);
    }
    /* bad view: error, nothing written */
    for (i = 0; i < 12; i++) d[i] = 7.0;
    v = t;
    v.ndim = MB_MAX_DIMS + 1;
    assert_int_equal(mb_zero(&v), MB_ERR_NDIM);
    assert_int_equal(mb_zero(NULL), MB_ERR_NULL);
    for (i = 0; i < 12; i++) assert_true(d[i] == 7.0);
}

/* ==== 2. Split sizes ========================================================= */

static void check_sizes(int32_t size, int chunks, int flags, int want_n, const int32_t *want)
{
    int32_t got[16];
    int i;
    memset(got, SENT, sizeof got);
    assert_int_equal(mb_split_sizes(size, chunks, flags, got, 16), want_n);
    for (i = 0; i < want_n; i++) assert_int_equal(got[i], want[i]);
    assert_int_equal(mb_split_sizes(size, chunks, flags, NULL, 0), want_n); /* count only */
}

static void test_split_sizes_exact(void **state)
{
    int32_t got[4];
    unsigned char snap[sizeof got];
    (void)state;
    check_sizes(10, 3, MB_BALANCED, 3, SHP(4, 3, 3));
    check_sizes(8, 3, MB_BALANCED, 3, SHP(3, 3, 2));
    check_sizes(2, 4, MB_BALANCED, 4, SHP(1, 1, 0, 0));
    check_sizes(7, 4, MB_BALANCED, 4, SHP(2, 2, 2, 1));
    check_sizes(13, 6, MB_BALANCED, 6, SHP(3, 2, 2, 2, 2, 2));
    check_sizes(13, 6, MB_CEIL, 5, SHP(3, 3, 3, 3, 1));
    check_sizes(10, 3, MB_CEIL, 3, SHP(4, 4, 2));
    check_sizes(2, 4, MB_CEIL, 2, SHP(1, 1));
    check_sizes(6, 4, MB_CEIL, 3, SHP(2, 2, 2));
    check_sizes(5, 1, MB_CEIL, 1, SHP(5));
    check_sizes(5, 1, MB_BALANCED, 1, SHP(5));
    /* errors, sizes untouched */
    memset(got, SENT, sizeof got);
    memcpy(snap, got, sizeof got);
    assert_int_equal(mb_split_sizes(10, 0, MB_BALANCED, got, 4), MB_ERR_CHUNKS);
    assert_int_equal(mb_split_sizes(10, -1, MB_CEIL, got, 4), MB_ERR_CHUNKS);
    assert_int_equal(mb_split_sizes(-1, 2, MB_BALANCED, got, 4), MB_ERR_SHAPE);
    assert_int_equal(mb_split_sizes(10, 5, MB_BALANCED, got, 4), MB_ERR_TOO_SMALL);
    assert_int_equal(mb_split_sizes(13, 6, MB_CEIL, got, 4), MB_ERR_TOO_SMALL); /* 5 chunks */
    assert_memory_equal(got, snap, sizeof got);
    /* capacity is checked against the real count: 2 -> 4 ceil is 2 chunks */
    assert_int_equal(mb_split_sizes(2, 4, MB_CEIL, got, 2), 2);
}

/* Chunk sizes from torch 1.13.1 (Debian python3-torch), produced by:
       import torch
       for s in range(14):
           for k in range(1, 10):
               t = torch.zeros(s)
               b = [c.numel() for c in torch.tensor_split(t, k)]
               c = [x.numel() for x in torch.chunk(t, k)]
               print(s, k, len(b), b, len(c), c)   # zero-padded to 9 below
   Columns: size, chunks, tensor_split count, sizes, torch.chunk count, sizes. */
struct torch_row {
    int8_t size, chunks, nb, b[9], nc, c[9];
};
static const struct torch_row torch_tab[] = {
    {0, 1, 1, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 2, 2, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 2, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 3, 3, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 3, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 4, 4, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 4, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 5, 5, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 5, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 6, 6, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 6, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 7, 7, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 7, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 8, 8, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 8, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {0, 9, 9, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 9, {0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 1, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 2, 2, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 3, 3, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 4, 4, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 5, 5, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 6, 6, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 7, 7, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 8, 8, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {1, 9, 9, {1, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {1, 0, 0, 0, 0, 0, 0, 0, 0}},
    {2, 1, 1, {2, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {2, 0, 0, 0, 0, 0, 0, 0, 0}},
    {2, 2, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {2, 3, 3, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {2, 4, 4, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {2, 5, 5, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {2, 6, 6, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {2, 7, 7, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {2, 8, 8, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {2, 9, 9, {1, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {1, 1, 0, 0, 0, 0, 0, 0, 0}},
    {3, 1, 1, {3, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {3, 0, 0, 0, 0, 0, 0, 0, 0}},
    {3, 2, 2, {2, 1, 0, 0, 0, 0, 0, 0, 0}, 2, {2, 1, 0, 0, 0, 0, 0, 0, 0}},
    {3, 3, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}},
    {3, 4, 4, {1, 1, 1, 0, 0, 0, 0, 0, 0}, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}},
    {3, 5, 5, {1, 1, 1, 0, 0, 0, 0, 0, 0}, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}},
    {3, 6, 6, {1, 1, 1, 0, 0, 0, 0, 0, 0}, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}},
    {3, 7, 7, {1, 1, 1, 0, 0, 0, 0, 0, 0}, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}},
    {3, 8, 8, {1, 1, 1, 0, 0, 0, 0, 0, 0}, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}},
    {3, 9, 9, {1, 1, 1, 0, 0, 0, 0, 0, 0}, 3, {1, 1, 1, 0, 0, 0, 0, 0, 0}},
    {4, 1, 1, {4, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {4, 0, 0, 0, 0, 0, 0, 0, 0}},
    {4, 2, 2, {2, 2, 0, 0, 0, 0, 0, 0, 0}, 2, {2, 2, 0, 0, 0, 0, 0, 0, 0}},
    {4, 3, 3, {2, 1, 1, 0, 0, 0, 0, 0, 0}, 2, {2, 2, 0, 0, 0, 0, 0, 0, 0}},
    {4, 4, 4, {1, 1, 1, 1, 0, 0, 0, 0, 0}, 4, {1, 1, 1, 1, 0, 0, 0, 0, 0}},
    {4, 5, 5, {1, 1, 1, 1, 0, 0, 0, 0, 0}, 4, {1, 1, 1, 1, 0, 0, 0, 0, 0}},
    {4, 6, 6, {1, 1, 1, 1, 0, 0, 0, 0, 0}, 4, {1, 1, 1, 1, 0, 0, 0, 0, 0}},
    {4, 7, 7, {1, 1, 1, 1, 0, 0, 0, 0, 0}, 4, {1, 1, 1, 1, 0, 0, 0, 0, 0}},
    {4, 8, 8, {1, 1, 1, 1, 0, 0, 0, 0, 0}, 4, {1, 1, 1, 1, 0, 0, 0, 0, 0}},
    {4, 9, 9, {1, 1, 1, 1, 0, 0, 0, 0, 0}, 4, {1, 1, 1, 1, 0, 0, 0, 0, 0}},
    {5, 1, 1, {5, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {5, 0, 0, 0, 0, 0, 0, 0, 0}},
    {5, 2, 2, {3, 2, 0, 0, 0, 0, 0, 0, 0}, 2, {3, 2, 0, 0, 0, 0, 0, 0, 0}},
    {5, 3, 3, {2, 2, 1, 0, 0, 0, 0, 0, 0}, 3, {2, 2, 1, 0, 0, 0, 0, 0, 0}},
    {5, 4, 4, {2, 1, 1, 1, 0, 0, 0, 0, 0}, 3, {2, 2, 1, 0, 0, 0, 0, 0, 0}},
    {5, 5, 5, {1, 1, 1, 1, 1, 0, 0, 0, 0}, 5, {1, 1, 1, 1, 1, 0, 0, 0, 0}},
    {5, 6, 6, {1, 1, 1, 1, 1, 0, 0, 0, 0}, 5, {1, 1, 1, 1, 1, 0, 0, 0, 0}},
    {5, 7, 7, {1, 1, 1, 1, 1, 0, 0, 0, 0}, 5, {1, 1, 1, 1, 1, 0, 0, 0, 0}},
    {5, 8, 8, {1, 1, 1, 1, 1, 0, 0, 0, 0}, 5, {1, 1, 1, 1, 1, 0, 0, 0, 0}},
    {5, 9, 9, {1, 1, 1, 1, 1, 0, 0, 0, 0}, 5, {1, 1, 1, 1, 1, 0, 0, 0, 0}},
    {6, 1, 1, {6, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {6, 0, 0, 0, 0, 0, 0, 0, 0}},
    {6, 2, 2, {3, 3, 0, 0, 0, 0, 0, 0, 0}, 2, {3, 3, 0, 0, 0, 0, 0, 0, 0}},
    {6, 3, 3, {2, 2, 2, 0, 0, 0, 0, 0, 0}, 3, {2, 2, 2, 0, 0, 0, 0, 0, 0}},
    {6, 4, 4, {2, 2, 1, 1, 0, 0, 0, 0, 0}, 3, {2, 2, 2, 0, 0, 0, 0, 0, 0}},
    {6, 5, 5, {2, 1, 1, 1, 1, 0, 0, 0, 0}, 3, {2, 2, 2, 0, 0, 0, 0, 0, 0}},
    {6, 6, 6, {1, 1, 1, 1, 1, 1, 0, 0, 0}, 6, {1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {6, 7, 7, {1, 1, 1, 1, 1, 1, 0, 0, 0}, 6, {1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {6, 8, 8, {1, 1, 1, 1, 1, 1, 0, 0, 0}, 6, {1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {6, 9, 9, {1, 1, 1, 1, 1, 1, 0, 0, 0}, 6, {1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {7, 1, 1, {7, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {7, 0, 0, 0, 0, 0, 0, 0, 0}},
    {7, 2, 2, {4, 3, 0, 0, 0, 0, 0, 0, 0}, 2, {4, 3, 0, 0, 0, 0, 0, 0, 0}},
    {7, 3, 3, {3, 2, 2, 0, 0, 0, 0, 0, 0}, 3, {3, 3, 1, 0, 0, 0, 0, 0, 0}},
    {7, 4, 4, {2, 2, 2, 1, 0, 0, 0, 0, 0}, 4, {2, 2, 2, 1, 0, 0, 0, 0, 0}},
    {7, 5, 5, {2, 2, 1, 1, 1, 0, 0, 0, 0}, 4, {2, 2, 2, 1, 0, 0, 0, 0, 0}},
    {7, 6, 6, {2, 1, 1, 1, 1, 1, 0, 0, 0}, 4, {2, 2, 2, 1, 0, 0, 0, 0, 0}},
    {7, 7, 7, {1, 1, 1, 1, 1, 1, 1, 0, 0}, 7, {1, 1, 1, 1, 1, 1, 1, 0, 0}},
    {7, 8, 8, {1, 1, 1, 1, 1, 1, 1, 0, 0}, 7, {1, 1, 1, 1, 1, 1, 1, 0, 0}},
    {7, 9, 9, {1, 1, 1, 1, 1, 1, 1, 0, 0}, 7, {1, 1, 1, 1, 1, 1, 1, 0, 0}},
    {8, 1, 1, {8, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {8, 0, 0, 0, 0, 0, 0, 0, 0}},
    {8, 2, 2, {4, 4, 0, 0, 0, 0, 0, 0, 0}, 2, {4, 4, 0, 0, 0, 0, 0, 0, 0}},
    {8, 3, 3, {3, 3, 2, 0, 0, 0, 0, 0, 0}, 3, {3, 3, 2, 0, 0, 0, 0, 0, 0}},
    {8, 4, 4, {2, 2, 2, 2, 0, 0, 0, 0, 0}, 4, {2, 2, 2, 2, 0, 0, 0, 0, 0}},
    {8, 5, 5, {2, 2, 2, 1, 1, 0, 0, 0, 0}, 4, {2, 2, 2, 2, 0, 0, 0, 0, 0}},
    {8, 6, 6, {2, 2, 1, 1, 1, 1, 0, 0, 0}, 4, {2, 2, 2, 2, 0, 0, 0, 0, 0}},
    {8, 7, 7, {2, 1, 1, 1, 1, 1, 1, 0, 0}, 4, {2, 2, 2, 2, 0, 0, 0, 0, 0}},
    {8, 8, 8, {1, 1, 1, 1, 1, 1, 1, 1, 0}, 8, {1, 1, 1, 1, 1, 1, 1, 1, 0}},
    {8, 9, 9, {1, 1, 1, 1, 1, 1, 1, 1, 0}, 8, {1, 1, 1, 1, 1, 1, 1, 1, 0}},
    {9, 1, 1, {9, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {9, 0, 0, 0, 0, 0, 0, 0, 0}},
    {9, 2, 2, {5, 4, 0, 0, 0, 0, 0, 0, 0}, 2, {5, 4, 0, 0, 0, 0, 0, 0, 0}},
    {9, 3, 3, {3, 3, 3, 0, 0, 0, 0, 0, 0}, 3, {3, 3, 3, 0, 0, 0, 0, 0, 0}},
    {9, 4, 4, {3, 2, 2, 2, 0, 0, 0, 0, 0}, 3, {3, 3, 3, 0, 0, 0, 0, 0, 0}},
    {9, 5, 5, {2, 2, 2, 2, 1, 0, 0, 0, 0}, 5, {2, 2, 2, 2, 1, 0, 0, 0, 0}},
    {9, 6, 6, {2, 2, 2, 1, 1, 1, 0, 0, 0}, 5, {2, 2, 2, 2, 1, 0, 0, 0, 0}},
    {9, 7, 7, {2, 2, 1, 1, 1, 1, 1, 0, 0}, 5, {2, 2, 2, 2, 1, 0, 0, 0, 0}},
    {9, 8, 8, {2, 1, 1, 1, 1, 1, 1, 1, 0}, 5, {2, 2, 2, 2, 1, 0, 0, 0, 0}},
    {9, 9, 9, {1, 1, 1, 1, 1, 1, 1, 1, 1}, 9, {1, 1, 1, 1, 1, 1, 1, 1, 1}},
    {10, 1, 1, {10, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {10, 0, 0, 0, 0, 0, 0, 0, 0}},
    {10, 2, 2, {5, 5, 0, 0, 0, 0, 0, 0, 0}, 2, {5, 5, 0, 0, 0, 0, 0, 0, 0}},
    {10, 3, 3, {4, 3, 3, 0, 0, 0, 0, 0, 0}, 3, {4, 4, 2, 0, 0, 0, 0, 0, 0}},
    {10, 4, 4, {3, 3, 2, 2, 0, 0, 0, 0, 0}, 4, {3, 3, 3, 1, 0, 0, 0, 0, 0}},
    {10, 5, 5, {2, 2, 2, 2, 2, 0, 0, 0, 0}, 5, {2, 2, 2, 2, 2, 0, 0, 0, 0}},
    {10, 6, 6, {2, 2, 2, 2, 1, 1, 0, 0, 0}, 5, {2, 2, 2, 2, 2, 0, 0, 0, 0}},
    {10, 7, 7, {2, 2, 2, 1, 1, 1, 1, 0, 0}, 5, {2, 2, 2, 2, 2, 0, 0, 0, 0}},
    {10, 8, 8, {2, 2, 1, 1, 1, 1, 1, 1, 0}, 5, {2, 2, 2, 2, 2, 0, 0, 0, 0}},
    {10, 9, 9, {2, 1, 1, 1, 1, 1, 1, 1, 1}, 5, {2, 2, 2, 2, 2, 0, 0, 0, 0}},
    {11, 1, 1, {11, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {11, 0, 0, 0, 0, 0, 0, 0, 0}},
    {11, 2, 2, {6, 5, 0, 0, 0, 0, 0, 0, 0}, 2, {6, 5, 0, 0, 0, 0, 0, 0, 0}},
    {11, 3, 3, {4, 4, 3, 0, 0, 0, 0, 0, 0}, 3, {4, 4, 3, 0, 0, 0, 0, 0, 0}},
    {11, 4, 4, {3, 3, 3, 2, 0, 0, 0, 0, 0}, 4, {3, 3, 3, 2, 0, 0, 0, 0, 0}},
    {11, 5, 5, {3, 2, 2, 2, 2, 0, 0, 0, 0}, 4, {3, 3, 3, 2, 0, 0, 0, 0, 0}},
    {11, 6, 6, {2, 2, 2, 2, 2, 1, 0, 0, 0}, 6, {2, 2, 2, 2, 2, 1, 0, 0, 0}},
    {11, 7, 7, {2, 2, 2, 2, 1, 1, 1, 0, 0}, 6, {2, 2, 2, 2, 2, 1, 0, 0, 0}},
    {11, 8, 8, {2, 2, 2, 1, 1, 1, 1, 1, 0}, 6, {2, 2, 2, 2, 2, 1, 0, 0, 0}},
    {11, 9, 9, {2, 2, 1, 1, 1, 1, 1, 1, 1}, 6, {2, 2, 2, 2, 2, 1, 0, 0, 0}},
    {12, 1, 1, {12, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {12, 0, 0, 0, 0, 0, 0, 0, 0}},
    {12, 2, 2, {6, 6, 0, 0, 0, 0, 0, 0, 0}, 2, {6, 6, 0, 0, 0, 0, 0, 0, 0}},
    {12, 3, 3, {4, 4, 4, 0, 0, 0, 0, 0, 0}, 3, {4, 4, 4, 0, 0, 0, 0, 0, 0}},
    {12, 4, 4, {3, 3, 3, 3, 0, 0, 0, 0, 0}, 4, {3, 3, 3, 3, 0, 0, 0, 0, 0}},
    {12, 5, 5, {3, 3, 2, 2, 2, 0, 0, 0, 0}, 4, {3, 3, 3, 3, 0, 0, 0, 0, 0}},
    {12, 6, 6, {2, 2, 2, 2, 2, 2, 0, 0, 0}, 6, {2, 2, 2, 2, 2, 2, 0, 0, 0}},
    {12, 7, 7, {2, 2, 2, 2, 2, 1, 1, 0, 0}, 6, {2, 2, 2, 2, 2, 2, 0, 0, 0}},
    {12, 8, 8, {2, 2, 2, 2, 1, 1, 1, 1, 0}, 6, {2, 2, 2, 2, 2, 2, 0, 0, 0}},
    {12, 9, 9, {2, 2, 2, 1, 1, 1, 1, 1, 1}, 6, {2, 2, 2, 2, 2, 2, 0, 0, 0}},
    {13, 1, 1, {13, 0, 0, 0, 0, 0, 0, 0, 0}, 1, {13, 0, 0, 0, 0, 0, 0, 0, 0}},
    {13, 2, 2, {7, 6, 0, 0, 0, 0, 0, 0, 0}, 2, {7, 6, 0, 0, 0, 0, 0, 0, 0}},
    {13, 3, 3, {5, 4, 4, 0, 0, 0, 0, 0, 0}, 3, {5, 5, 3, 0, 0, 0, 0, 0, 0}},
    {13, 4, 4, {4, 3, 3, 3, 0, 0, 0, 0, 0}, 4, {4, 4, 4, 1, 0, 0, 0, 0, 0}},
    {13, 5, 5, {3, 3, 3, 2, 2, 0, 0, 0, 0}, 5, {3, 3, 3, 3, 1, 0, 0, 0, 0}},
    {13, 6, 6, {3, 2, 2, 2, 2, 2, 0, 0, 0}, 5, {3, 3, 3, 3, 1, 0, 0, 0, 0}},
    {13, 7, 7, {2, 2, 2, 2, 2, 2, 1, 0, 0}, 7, {2, 2, 2, 2, 2, 2, 1, 0, 0}},
    {13, 8, 8, {2, 2, 2, 2, 2, 1, 1, 1, 0}, 7, {2, 2, 2, 2, 2, 2, 1, 0, 0}},
    {13, 9, 9, {2, 2, 2, 2, 1, 1, 1, 1, 1}, 7, {2, 2, 2, 2, 2, 2, 1, 0, 0}},
};

static void test_split_sizes_match_torch(void **state)
{
    int r, i, bad = 0, first = -1, first_mode = 0;
    (void)state;
    assert_int_equal((int)(sizeof torch_tab / sizeof torch_tab[0]), 14 * 9);
    for (r = 0; r < (int)(sizeof torch_tab / sizeof torch_tab[0]); r++) {
        const struct torch_row *row = &torch_tab[r];
        int mode;
        for (mode = 0; mode < 2; mode++) {
            int flags = mode ? MB_CEIL : MB_BALANCED;
            int want_n = mode ? row->nc : row->nb;
            const int8_t *want = mode ? row->c : row->b;
            int32_t got[16];
            int n = mb_split_sizes(row->size, row->chunks, flags, got, 16), ok = n == want_n;
            for (i = 0; ok && i < n; i++) ok = got[i] == want[i];
            /* the same through mb_split on a 1-D tensor of `size` rows (KEEP_COUNT: no downsizing) */
            if (ok) {
                static float rows[16];
                mb_value arg, out[16];
                tv(&arg, rows, MB_F32, 1, SHP(row->size));
                n = mb_split(&arg, NULL, 1, row->chunks, flags | MB_KEEP_COUNT, out, 16, NULL);
                ok = n == want_n;
                for (i = 0; ok && i < n; i++) ok = out[i].tensor.shape[0] == want[i];
            }
            if (!ok) {
                if (first < 0) {
                    first = r;
                    first_mode = mode;
                }
                bad++;
            }
        }
    }
    if (bad)
        fail_msg("%d (size, chunks) cases differ from torch; first: size %d chunks %d (%s)", bad,
                 (int)torch_tab[first].size, (int)torch_tab[first].chunks,
                 first_mode ? "MB_CEIL vs torch.chunk" : "MB_BALANCED vs torch.tensor_split");
}

/* ==== 3. Split of argument lists ============================================ */

static void test_split_default_specs_zero_copy(void **state)
{
    static float a[10 * 3];
    static int16_t b[10];
    static float a_snap[10 * 3];
    mb_value args[3], out[9];
    static const int32_t len[3] = {4, 3, 3}, off[3] = {0, 4, 7};
    int i, c;
    (void)state;
    for (i = 0; i < 30; i++) a[i] = (float)i;
    for (i = 0; i < 10; i++) b[i] = (int16_t)(100 + i);
    memcpy(a_snap, a, sizeof a);
    tv(&args[0], a, MB_F32, 2, SHP(10, 3));
    sv(&args[1], 2.5);
    tv(&args[2], b, MB_I16, 1, SHP(10));
    memcpy_calls = 0;
    assert_int_equal(mb_split(args, NULL, 3, 3, MB_BALANCED, out, 3, NULL), 3);
    /* Zero copy: every chunk is a view whose data pointer is the input buffer at the
       exact row offset; split moved no bytes (MB_MEMCPY never called). */
    assert_int_equal(memcpy_calls, 0);
    for (c = 0; c < 3; c++) {
        const mb_value *t = &out[c * 3 + 0], *s = &out[c * 3 + 1], *u = &out[c * 3 + 2];
        assert_int_equal(t->kind, MB_VALUE_TENSOR);
        assert_view(&t->tensor, a + off[c] * 3, MB_F32, 2, SHP(len[c], 3), SHP(3, 1));
        assert_int_equal(s->kind, MB_VALUE_SCALAR); /* scalars replicate by default */
        assert_true(s->scalar == 2.5);
        assert_int_equal(u->kind, MB_VALUE_TENSOR);
        assert_view(&u->tensor, b + off[c], MB_I16, 1, SHP(len[c]), SHP(1));
        assert_true(*(float *)at2(&t->tensor, 0, 1) == (float)(off[c] * 3 + 1));
    }
    /* writing through a chunk view writes the input buffer */
    *(float *)at2(&out[2 * 3].tensor, 1, 2) = -1.0f;
    assert_true(a[(7 + 1) * 3 + 2] == -1.0f);
    a[(7 + 1) * 3 + 2] = a_snap[(7 + 1) * 3 + 2];
    assert_memory_equal(a, a_snap, sizeof a);
}

static void test_split_dim1_and_negative(void **state)
{
    static float a[4 * 10], x[2 * 6 * 3];
    mb_value arg, out[3], out2[3], ax, ox[3];
    mb_spec s1 = MB_SPLIT(1), sm1 = MB_SPLIT(-1), sm2 = MB_SPLIT(-2);
    static const int32_t len[3] = {4, 3, 3}, off[3] = {0, 4, 7};
    int c, d;
    (void)state;
    tv(&arg, a, MB_F32, 2, SHP(4, 10));
    assert_int_equal(mb_split(&arg, &s1, 1, 3, MB_BALANCED, out, 3, NULL), 3);
    assert_int_equal(mb_split(&arg, &sm1, 1, 3, MB_BALANCED, out2, 3, NULL), 3);
    for (c = 0; c < 3; c++) {
        assert_view(&out[c].tensor, a + off[c], MB_F32, 2, SHP(4, len[c]), SHP(10, 1));
        assert_int_equal(mb_is_contiguous(&out[c].tensor), 0);
        assert_view(&out2[c].tensor, out[c].tensor.data, MB_F32, 2, out[c].tensor.shape, out[c].tensor.stride);
    }
    /* 3-D, dim -2 == 1: 6 into 4 -> 2,2,1,1 */
    tv(&ax, x, MB_F32, 3, SHP(2, 6, 3));
    assert_int_equal(mb_split(&ax, &sm2, 1, 4, MB_BALANCED, ox, 3, NULL), MB_ERR_TOO_SMALL);
    {
        mb_value o4[4];
        static const int32_t l4[4] = {2, 2, 1, 1}, f4[4] = {0, 2, 4, 5};
        assert_int_equal(mb_split(&ax, &sm2, 1, 4, MB_BALANCED, o4, 4, NULL), 4);
        for (c = 0; c < 4; c++) {
            assert_view(&o4[c].tensor, x + f4[c] * 3, MB_F32, 3, SHP(2, l4[c], 3), SHP(18, 3, 1));
            for (d = 0; d < 3; d++) assert_int_equal(o4[c].tensor.stride[d], ax.tensor.stride[d]);
        }
    }
    /* dim out of range */
    {
        mb_spec bad = MB_SPLIT(2), badn = MB_SPLIT(-3);
        mb_diag diag;
        memset(&diag, 0, sizeof diag);
        split_err(&arg, &bad, 1, 3, MB_BALANCED, 8, MB_ERR_DIM, &diag);
        assert_int_equal(diag.value_index, 0);
        split_err(&arg, &badn, 1, 3, MB_BALANCED, 8, MB_ERR_DIM, NULL);
    }
}

static void test_split_replicate_tensor(void **state)
{
    static float a[5 * 2], b[2];
    mb_value args[2], out[8];
    mb_spec specs[2] = {MB_REPLICATE, MB_SPLIT(0)};
    int c;
    (void)state;
    tv(&args[0], a, MB_F32, 2, SHP(5, 2));
    tv(&args[1], b, MB_F32, 1, SHP(2));
    /* only the replicated value: the requested count is kept */
    assert_int_equal(mb_split(args, specs, 1, 3, MB_BALANCED, out, 3, NULL), 3);
    for (c = 0; c < 3; c++) {
        assert_int_equal(out[c].kind, MB_VALUE_TENSOR);
        assert_view(&out[c].tensor, a, MB_F32, 2, SHP(5, 2), SHP(2, 1));
    }
    /* with a split value of 2 rows into 4: DOWNSIZE gives 2 chunks, the replica in both
       (its 5 rows do not count towards the chunk count) */
    assert_int_equal(mb_split(args, specs, 2, 4, MB_BALANCED, out, 4, NULL), 2);
    for (c = 0; c < 2; c++) {
        assert_view(&out[c * 2].tensor, a, MB_F32, 2, SHP(5, 2), SHP(2, 1));
        assert_view(&out[c * 2 + 1].tensor, b + c, MB_F32, 1, SHP(1), SHP(1));
    }
    /* a replicated scalar is copied as is */
    {
        mb_value s, so[4];
        mb_spec r = MB_REPLICATE;
        sv(&s, -3.25);
        assert_int_equal(mb_split(&s, &r, 1, 4, MB_STRICT, so, 4, NULL), 4);
        for (c = 0; c < 4; c++) {
            assert_int_equal(so[c].kind, MB_VALUE_SCALAR);
            assert_true(so[c].scalar == -3.25);
        }
    }
}

static void test_split_spec_errors_untouched(void **state)
{
    static float a[6 * 2];
    mb_value args[3];
    mb_spec specs[3] = {MB_SPLIT(0), MB_SPLIT(0), MB_REPLICATE};
    mb_diag diag;
    (void)state;
    tv(&args[0], a, MB_F32, 2, SHP(6, 2));
    sv(&args[1], 1.0);
    tv(&args[2], a, MB_F32, 1, SHP(12));
    /* SPLIT on a scalar */
    memset(&diag, 0, sizeof diag);
    split_err(args, specs, 3, 2, MB_BALANCED, 4, MB_ERR_SPEC, &diag);
    assert_int_equal(diag.value_index, 1);
    /* REDUCE is not a split spec; unknown kinds are rejected */
    specs[1].kind = MB_SPEC_REPLICATE;
    specs[2].kind = MB_SPEC_REDUCE;
    memset(&diag, 0, sizeof diag);
    split_err(args, specs, 3, 2, MB_BALANCED, 4, MB_ERR_SPEC, &diag);
    assert_int_equal(diag.value_index, 2);
    specs[2].kind = 77;
    memset(&diag, 0, sizeof diag);
    split_err(args, specs, 3, 2, MB_BALANCED, 4, MB_ERR_SPEC, &diag);
    assert_int_equal(diag.value_index, 2);
    specs[2].kind = MB_SPEC_REPLICATE;
    /* bad value kind */
    args[1].kind = 9;
    memset(&diag, 0, sizeof diag);
    split_err(args, specs, 3, 2, MB_BALANCED, 4, MB_ERR_SPEC, &diag);
    assert_int_equal(diag.value_index, 1);
    sv(&args[1], 1.0);
    /* invalid tensor to split */
    args[0].tensor.shape[1] = -1;
    memset(&diag, 0, sizeof diag);
    split_err(args, specs, 3, 2, MB_BALANCED, 4, MB_ERR_SHAPE, &diag);
    assert_int_equal(diag.value_index, 0);
    args[0].tensor.shape[1] = 2;
    args[0].tensor.dtype = MB_DTYPE_COUNT;
    split_err(args, specs, 3, 2, MB_BALANCED, 4, MB_ERR_DTYPE, NULL);
    args[0].tensor.dtype = MB_F32;
    /* a 0-d tensor cannot be split */
    tv(&args[2], a, MB_F32, 0, NULL);
    specs[2].kind = MB_SPEC_SPLIT;
    memset(&diag, 0, sizeof diag);
    split_err(args, specs, 3, 2, MB_BALANCED, 4, MB_ERR_DIM, &diag);
    assert_int_equal(diag.value_index, 2);
    /* NULL arguments */
    split_err(NULL, NULL, 2, 2, MB_BALANCED, 4, MB_ERR_NULL, NULL);
    /* still fine after all that */
    specs[2].kind = MB_SPEC_REPLICATE;
    assert_int_equal(mb_split(args, specs, 3, 2, MB_BALANCED, split_out, 2, NULL), 2);
}

static void test_split_downsize(void **state)
{
    static float a[7 * 2], b[3], c1[2];
    mb_value args[2], out[8];
    mb_diag diag;
    static const int32_t la[3] = {3, 2, 2}, fa[3] = {0, 3, 5};
    int c;
    (void)state;
    /* count = smallest split size among the split values: 7 and 3 rows into 4 -> 3 */
    tv(&args[0], a, MB_F32, 2, SHP(7, 2));
    tv(&args[1], b, MB_F32, 1, SHP(3));
    assert_int_equal(mb_split(args, NULL, 2, 4, MB_DOWNSIZE, out, 3, NULL), 3);
    for (c = 0; c < 3; c++) {
        assert_view(&out[c * 2].tensor, a + fa[c] * 2, MB_F32, 2, SHP(la[c], 2), SHP(2, 1));
        assert_view(&out[c * 2 + 1].tensor, b + c, MB_F32, 1, SHP(1), SHP(1));
    }
    /* order does not matter */
    tv(&args[0], b, MB_F32, 1, SHP(3));
    tv(&args[1], a, MB_F32, 2, SHP(7, 2));
    assert_int_equal(mb_split(args, NULL, 2, 4, MB_DOWNSIZE, out, 3, NULL), 3);
    assert_int_equal(out[1].tensor.shape[0], 3);
    assert_int_equal(out[5].tensor.shape[0], 2);
    /* both below the count: the smaller one wins (3 and 2 rows into 4 -> 2 chunks) */
    tv(&args[0], a, MB_F32, 2, SHP(3, 2));
    tv(&args[1], b, MB_F32, 1, SHP(2));
    assert_int_equal(mb_split(args, NULL, 2, 4, MB_DOWNSIZE, out, 8, NULL), 2);
    assert_view(&out[0].tensor, a, MB_F32, 2, SHP(2, 2), SHP(2, 1));
    assert_view(&out[2].tensor, a + 4, MB_F32, 2, SHP(1, 2), SHP(2, 1));
    assert_view(&out[1].tensor, b, MB_F32, 1, SHP(1), SHP(1));
    assert_view(&out[3].tensor, b + 1, MB_F32, 1, SHP(1), SHP(1));
    /* 2 rows into 4 is legal: 2 chunks of 1 */
    tv(&args[0], c1, MB_F32, 1, SHP(2));
    assert_int_equal(mb_split(args, NULL, 1, 4, MB_DOWNSIZE, out, 2, NULL), 2);
    assert_view(&out[0].tensor, c1, MB_F32, 1, SHP(1), SHP(1));
    assert_view(&out[1].tensor, c1 + 1, MB_F32, 1, SHP(1), SHP(1));
    /* an empty split dim cannot be downsized (torch would split into 0 chunks) */
    tv(&args[0], c1, MB_F32, 1, SHP(0));
    memset(&diag, 0, sizeof diag);
    split_err(args, NULL, 1, 4, MB_DOWNSIZE, 8, MB_ERR_SPLIT_SIZE, &diag);
    assert_int_equal(diag.value_index, 0);
    assert_int_equal(diag.size, 0);
    assert_int_equal(diag.requested, 4);
}

static void test_split_strict(void **state)
{
    static float a[7 * 2], b[4];
    mb_value args[2];
    mb_diag diag;
    (void)state;
    tv(&args[0], a, MB_F32, 2, SHP(7, 2));
    tv(&args[1], b, MB_F32, 1, SHP(3));
    memset(&diag, 0, sizeof diag);
    split_err(args, NULL, 2, 4, MB_STRICT, 8, MB_ERR_SPLIT_SIZE, &diag);
    assert_int_equal(diag.value_index, 1);
    assert_int_equal(diag.size, 3);
    assert_int_equal(diag.requested, 4);
    /* split dim == count is fine */
    tv(&args[1], b, MB_F32, 1, SHP(4));
    assert_int_equal(mb_split(args, NULL, 2, 4, MB_STRICT, split_out, 4, NULL), 4);
    assert_int_equal(split_out[7].tensor.shape[0], 1);
    assert_int_equal(split_out[6].tensor.shape[0], 1); /* 7 rows -> 2,2,2,1 */
    assert_int_equal(split_out[0].tensor.shape[0], 2);
}

static void test_split_keep_count(void **state)
{
    static float a[2 * 3], b[13];
    mb_value arg, out[8];
    int c;
    (void)state;
    tv(&arg, a, MB_F32, 2, SHP(2, 3));
    assert_int_equal(mb_split(&arg, NULL, 1, 4, MB_KEEP_COUNT, out, 4, NULL), 4);
    assert_view(&out[0].tensor, a, MB_F32, 2, SHP(1, 3), SHP(3, 1));
    assert_view(&out[1].tensor, a + 3, MB_F32, 2, SHP(1, 3), SHP(3, 1));
    for (c = 2; c < 4; c++) { /* empty trailing chunks of the right shape */
        assert_int_equal(out[c].kind, MB_VALUE_TENSOR);
        assert_int_equal(out[c].tensor.ndim, 2);
        assert_int_equal(out[c].tensor.shape[0], 0);
        assert_int_equal(out[c].tensor.shape[1], 3);
        assert_int_equal(mb_numel(&out[c].tensor), 0);
        assert_int_equal(mb_tensor_check(&out[c].tensor), MB_OK);
    }
    /* no effect when the dim is big enough */
    tv(&arg, b, MB_F32, 1, SHP(13));
    assert_int_equal(mb_split(&arg, NULL, 1, 6, MB_KEEP_COUNT, out, 6, NULL), 6);
    assert_int_equal(out[0].tensor.shape[0], 3);
    assert_int_equal(out[5].tensor.shape[0], 2);
    assert_ptr_equal(out[5].tensor.data, b + 11);
    /* an empty dim keeps the count too: all chunks empty */
    tv(&arg, b, MB_F32, 1, SHP(0));
    assert_int_equal(mb_split(&arg, NULL, 1, 3, MB_KEEP_COUNT, out, 3, NULL), 3);
    for (c = 0; c < 3; c++) assert_int_equal(out[c].tensor.shape[0], 0);
}

static void test_split_ceil(void **state)
{
    static float a[13 * 2], b[12], x[10];
    mb_value args[2], out[16];
    mb_diag diag;
    static const int32_t la[5] = {3, 3, 3, 3, 1};
    int c;
    (void)state;
    tv(&args[0], a, MB_F32, 2, SHP(13, 2));
    assert_int_equal(mb_split(args, NULL, 1, 6, MB_CEIL, out, 5, NULL), 5);
    for (c = 0; c < 5; c++) assert_view(&out[c].tensor, a + 3 * c * 2, MB_F32, 2, SHP(la[c], 2), SHP(2, 1));
    tv(&args[0], x, MB_F32, 1, SHP(10));
    assert_int_equal(mb_split(args, NULL, 1, 3, MB_CEIL, out, 3, NULL), 3);
    assert_view(&out[0].tensor, x, MB_F32, 1, SHP(4), SHP(1));
    assert_view(&out[1].tensor, x + 4, MB_F32, 1, SHP(4), SHP(1));
    assert_view(&out[2].tensor, x + 8, MB_F32, 1, SHP(2), SHP(1));
    /* 13 rows -> 5 chunks but 12 rows -> 6 chunks: counts differ */
    tv(&args[0], a, MB_F32, 2, SHP(13, 2));
    tv(&args[1], b, MB_F32, 1, SHP(12));
    memset(&diag, 0, sizeof diag);
    split_err(args, NULL, 2, 6, MB_CEIL, 16, MB_ERR_CHUNK_COUNT, &diag);
    assert_int_equal(diag.value_index, 1);
    assert_int_equal(diag.size, 12);
    assert_int_equal(diag.requested, 6);
    /* same count from different sizes is fine: 13 and 11 into 6 -> 5 each (3,3,3,3,1 / 2,2,2,2,2,1?) */
    tv(&args[1], b, MB_F32, 1, SHP(10)); /* ceil(10/6)=2 -> 5 chunks of 2 */
    assert_int_equal(mb_split(args, NULL, 2, 6, MB_CEIL, out, 5, NULL), 5);
    assert_int_equal(out[2 * 4].tensor.shape[0], 1);
    assert_int_equal(out[2 * 4 + 1].tensor.shape[0], 2);
}

static void test_split_chunks_nonpositive(void **state)
{
    static float a[4];
    mb_value arg;
    (void)state;
    tv(&arg, a, MB_F32, 1, SHP(4));
    split_err(&arg, NULL, 1, 0, MB_BALANCED, 8, MB_ERR_CHUNKS, NULL);
    split_err(&arg, NULL, 1, -1, MB_BALANCED, 8, MB_ERR_CHUNKS, NULL);
    split_err(&arg, NULL, 1, -5, MB_CEIL | MB_KEEP_COUNT, 8, MB_ERR_CHUNKS, NULL);
}

static void test_split_out_too_small(void **state)
{
    static float a[13], b[2];
    mb_value args[2];
    (void)state;
    tv(&args[0], a, MB_F32, 1, SHP(13));
    sv(&args[1], 4.0);
    split_err(args, NULL, 2, 4, MB_BALANCED, 3, MB_ERR_TOO_SMALL, NULL);
    split_err(args, NULL, 2, 4, MB_BALANCED, 0, MB_ERR_TOO_SMALL, NULL);
    assert_int_equal(mb_split(args, NULL, 2, 4, MB_BALANCED, split_out, 4, NULL), 4);
    /* capacity counts produced chunks: 13 into 6 ceil gives 5 */
    split_err(args, NULL, 2, 6, MB_CEIL, 4, MB_ERR_TOO_SMALL, NULL);
    assert_int_equal(mb_split(args, NULL, 2, 6, MB_CEIL, split_out, 5, NULL), 5);
    /* and downsized ones: 2 rows into 4 gives 2 */
    tv(&args[0], b, MB_F32, 1, SHP(2));
    split_err(args, NULL, 2, 4, MB_DOWNSIZE, 1, MB_ERR_TOO_SMALL, NULL);
    assert_int_equal(mb_split(args, NULL, 2, 4, MB_DOWNSIZE, split_out, 2, NULL), 2);
    /* KEEP_COUNT needs the full count */
    split_err(args, NULL, 2, 4, MB_KEEP_COUNT, 3, MB_ERR_TOO_SMALL, NULL);
    /* NULL out */
    assert_int_equal(mb_split(args, NULL, 2, 4, MB_DOWNSIZE, NULL, 4, NULL), MB_ERR_NULL);
}

static void test_split_pytorch_cases(void **state)
{
    /* fairscale/PiPPy scatter: (zeros(2,1), zeros(4,2)) into 2 -> (1,1),(2,2) per chunk */
    static float x[2 * 1], y[4 * 2], z[7];
    mb_value args[2], out[8];
    int c;
    (void)state;
    tv(&args[0], x, MB_F32, 2, SHP(2, 1));
    tv(&args[1], y, MB_F32, 2, SHP(4, 2));
    assert_int_equal(mb_split(args, NULL, 2, 2, MB_BALANCED, out, 2, NULL), 2);
    for (c = 0; c < 2; c++) {
        assert_view(&out[c * 2].tensor, x + c, MB_F32, 2, SHP(1, 1), SHP(1, 1));
        assert_view(&out[c * 2 + 1].tensor, y + 4 * c, MB_F32, 2, SHP(2, 2), SHP(2, 1));
    }
    /* 7 rows into 4: tensor_split gives 2,2,2,1 */
    tv(&args[0], z, MB_F32, 1, SHP(7));
    assert_int_equal(mb_split(args, NULL, 1, 4, MB_BALANCED, out, 4, NULL), 4);
    assert_view(&out[0].tensor, z, MB_F32, 1, SHP(2), SHP(1));
    assert_view(&out[1].tensor, z + 2, MB_F32, 1, SHP(2), SHP(1));
    assert_view(&out[2].tensor, z + 4, MB_F32, 1, SHP(2), SHP(1));
    assert_view(&out[3].tensor, z + 6, MB_F32, 1, SHP(1), SHP(1));
    /* 2 rows into 4: legal, 2 chunks of 1 */
    tv(&args[0], z, MB_F32, 1, SHP(2));
    assert_int_equal(mb_split(args, NULL, 1, 4, MB_BALANCED, out, 4, NULL), 2);
    assert_int_equal(out[0].tensor.shape[0], 1);
    assert_int_equal(out[1].tensor.shape[0], 1);
    assert_ptr_equal(out[1].tensor.data, z + 1);
}

/* ==== 4. Debug-mask mode ===================================================== */

static uint64_t mask_store[512];

/* Does [p, p+n) lie inside mask_store? */
static int in_store(const void *p, size_t n)
{
    const char *s = (const char *)mask_store, *q = (const char *)p;
    return q >= s && q + n <= s + sizeof mask_store;
}

static void test_masked_bytes(void **state)
{
    static float a[5 * 3];
    static int8_t b[5];
    mb_value args[3];
    mb_spec specs[3] = {MB_SPLIT(0), MB_REPLICATE, MB_SPLIT(-1)};
    size_t bytes = 12345;
    (void)state;
    tv(&args[0], a, MB_F32, 2, SHP(5, 3));
    sv(&args[1], 1.5);
    tv(&args[2], b, MB_I8, 1, SHP(5));
    /* 3 chunks x (60 bytes -> 64) + 3 chunks x (5 bytes -> 8): 8-byte aligned pieces */
    assert_int_equal(mb_split_masked_bytes(args, specs, 3, 3, MB_BALANCED, &bytes), 3);
    assert_int_equal(bytes, 3 * 64 + 3 * 8);
    assert_int_equal(mb_split_masked_bytes(args, NULL, 1, 2, MB_BALANCED, &bytes), 2);
    assert_int_equal(bytes, 2 * 64);
    /* downsized count: 5 rows into 9 -> 5 full-size chunks */
    assert_int_equal(mb_split_masked_bytes(args, specs, 3, 9, MB_DOWNSIZE, &bytes), 5);
    assert_int_equal(bytes, 5 * 64 + 5 * 8);
    /* replicated values need nothing */
    assert_int_equal(mb_split_masked_bytes(&args[1], NULL, 1, 4, MB_BALANCED, &bytes), 4);
    assert_int_equal(bytes, 0);
    /* errors leave *bytes alone */
    bytes = 777;
    assert_int_equal(mb_split_masked_bytes(args, specs, 3, 0, MB_BALANCED, &bytes), MB_ERR_CHUNKS);
    assert_int_equal(mb_split_masked_bytes(args, specs, 3, 9, MB_STRICT, &bytes), MB_ERR_SPLIT_SIZE);
    specs[1].kind = MB_SPEC_SPLIT;
    assert_int_equal(mb_split_masked_bytes(args, specs, 3, 3, MB_BALANCED, &bytes), MB_ERR_SPEC);
    assert_int_equal(bytes, 777);
    assert_int_equal(mb_split_masked_bytes(args, NULL, 1, 3, MB_BALANCED, NULL), MB_ERR_NULL);
}

static void check_masked_chunks(const mb_value *out, int nargs, int vi, int n, const mb_tensor *in, int dim,
                                const int32_t *len)
{
    int c;
    int32_t off = 0, idx[MB_MAX_DIMS];
    size_t es = esz(in->dtype);
    int64_t k, total = numel_of(in->ndim, in->shape);
    for (c = 0; c < n; off += len[c], c++) {
        const mb_tensor *t = &out[c * nargs + vi].tensor;
        int d;
        assert_int_equal(out[c * nargs + vi].kind, MB_VALUE_TENSOR);
        assert_int_equal(t->dtype, in->dtype);
        assert_int_equal(t->ndim, in->ndim);
        for (d = 0; d < in->ndim; d++) assert_int_equal(t->shape[d], in->shape[d]); /* full size */
        assert_int_equal(mb_is_contiguous(t), 1);
        assert_true(in_store(t->data, (size_t)total * es));
        assert_int_equal(((uintptr_t)t->data) & 7u, 0);
        for (k = 0; k < total; k++) {
            const unsigned char *p;
            unravel(k, in->ndim, in->shape, idx);
            p = (const unsigned char *)at(t, idx);
            if (idx[dim] >= off && idx[dim] < off + len[c]) {
                assert_memory_equal(p, at(in, idx), es);
            } else {
                size_t b;
                for (b = 0; b < es; b++) assert_int_equal(p[b], 0); /* zeros_like: +0 */
            }
        }
    }
}

static void test_masked_split_content(void **state)
{
    static float a[5 * 3];
    static int8_t b[5];
    static float a_snap[5 * 3];
    mb_value args[3], out[9];
    mb_spec specs[3] = {MB_SPLIT(0), MB_REPLICATE, MB_SPLIT(-1)};
    size_t bytes;
    int i, c, j;
    (void)state;
    for (i = 0; i < 15; i++) a[i] = (float)(i + 1);
    for (i = 0; i < 5; i++) b[i] = (int8_t)(-1 - i);
    memcpy(a_snap, a, sizeof a);
    tv(&args[0], a, MB_F32, 2, SHP(5, 3));
    sv(&args[1], 1.5);
    tv(&args[2], b, MB_I8, 1, SHP(5));
    assert_int_equal(mb_split_masked_bytes(args, specs, 3, 3, MB_BALANCED, &bytes), 3);
    memset(mask_store, SENT, sizeof mask_store);
    assert_int_equal(mb_split_masked(args, specs, 3, 3, MB_BALANCED, out, 3, mask_store, bytes, NULL), 3);
    check_masked_chunks(out, 3, 0, 3, &args[0].tensor, 0, SHP(2, 2, 1));
    check_masked_chunks(out, 3, 2, 3, &args[2].tensor, 0, SHP(2, 2, 1));
    for (c = 0; c < 3; c++) {
        assert_int_equal(out[c * 3 + 1].kind, MB_VALUE_SCALAR);
        assert_true(out[c * 3 + 1].scalar == 1.5);
    }
    /* pieces do not overlap each other, stay inside `bytes`, and the input is untouched */
    for (i = 0; i < 6; i++) {
        const mb_tensor *ti = &out[(i % 3) * 3 + (i < 3 ? 0 : 2)].tensor;
        size_t ni = (size_t)mb_numel(ti) * esz(ti->dtype);
        assert_true((const char *)ti->data + ni <= (const char *)mask_store + bytes);
        for (j = 0; j < i; j++) {
            const mb_tensor *tj = &out[(j % 3) * 3 + (j < 3 ? 0 : 2)].tensor;
            size_t nj = (size_t)mb_numel(tj) * esz(tj->dtype);
            const char *pi = (const char *)ti->data, *pj = (const char *)tj->data;
            assert_true(pi + ni <= pj || pj + nj <= pi);
        }
    }
    assert_memory_equal(a, a_snap, sizeof a);

    /* split on dim 1 (as -1) of a (3,5) tensor into 2: columns 3,2 */
    {
        mb_value m, mo[2];
        mb_spec s = MB_SPLIT(-1);
        tv(&m, a, MB_F32, 2, SHP(3, 5));
        assert_int_equal(mb_split_masked_bytes(&m, &s, 1, 2, MB_BALANCED, &bytes), 2);
        assert_int_equal(mb_split_masked(&m, &s, 1, 2, MB_BALANCED, mo, 2, mask_store, bytes, NULL), 2);
        check_masked_chunks(mo, 1, 0, 2, &m.tensor, 1, SHP(3, 2));
    }
    /* a transposed (non-contiguous) input gives contiguous masked chunks of its values */
    {
        mb_value m, mo[4];
        tv(&m, a, MB_F32, 2, SHP(5, 3));
        m.tensor.shape[0] = 3;
        m.tensor.shape[1] = 5;
        m.tensor.stride[0] = 1;
        m.tensor.stride[1] = 3;
        assert_int_equal(mb_split_masked_bytes(&m, NULL, 1, 4, MB_CEIL, &bytes), 3);
        assert_int_equal(mb_split_masked(&m, NULL, 1, 4, MB_CEIL, mo, 4, mask_store, bytes, NULL), 3);
        check_masked_chunks(mo, 1, 0, 3, &m.tensor, 0, SHP(1, 1, 1));
    }
}

static void test_masked_errors(void **state)
{
    static float a[5 * 3];
    mb_value args[2];
    mb_value out[8];
    unsigned char snap_out[sizeof out];
    static unsigned char snap_store[sizeof mask_store];
    size_t bytes;
    mb_diag diag;
    (void)state;
    tv(&args[0], a, MB_F32, 2, SHP(5, 3));
    sv(&args[1], 2.0);
    assert_int_equal(mb_split_masked_bytes(args, NULL, 2, 3, MB_BALANCED, &bytes), 3);
    memset(out, SENT, sizeof out);
    memcpy(snap_out, out, sizeof out);
    memset(mask_store, SENT, sizeof mask_store);
    memcpy(snap_store, mask_store, sizeof mask_store);
    /* too little storage */
    assert_int_equal(mb_split_masked(args, NULL, 2, 3, MB_BALANCED, out, 3, mask_store, bytes - 1, NULL),
                     MB_ERR_TOO_SMALL);
    assert_int_equal(mb_split_masked(args, NULL, 2, 3, MB_BALANCED, out, 3, mask_store, 0, NULL), MB_ERR_TOO_SMALL);
    /* misaligned storage */
    assert_int_equal(
        mb_split_masked(args, NULL, 2, 3, MB_BALANCED, out, 3, (char *)mask_store + 4, sizeof mask_store - 8, NULL),
        MB_ERR_ALIGN);
    assert_int_equal(
        mb_split_masked(args, NULL, 2, 3, MB_BALANCED, out, 3, (char *)mask_store + 1, sizeof mask_store - 8, NULL),
        MB_ERR_ALIGN);
    assert_int_equal(mb_split_masked(args, NULL, 2, 3, MB_BALANCED, out, 3, NULL, bytes, NULL), MB_ERR_NULL);
    /* out capacity, chunk count, policy errors */
    assert_int_equal(mb_split_masked(args, NULL, 2, 3, MB_BALANCED, out, 2, mask_store, bytes, NULL), MB_ERR_TOO_SMALL);
    assert_int_equal(mb_split_masked(args, NULL, 2, 0, MB_BALANCED, out, 3, mask_store, bytes, NULL), MB_ERR_CHUNKS);
    memset(&diag, 0, sizeof diag);
    assert_int_equal(mb_split_masked(args, NULL, 2, 6, MB_STRICT, out, 8, mask_store, sizeof mask_store, &diag),
                     MB_ERR_SPLIT_SIZE);
    assert_int_equal(diag.value_index, 0);
    assert_int_equal(diag.size, 5);
    assert_int_equal(diag.requested, 6);
    assert_memory_equal(out, snap_out, sizeof out);
    assert_memory_equal(mask_store, snap_store, sizeof mask_store);
    /* exactly `bytes` is enough */
    assert_int_equal(mb_split_masked(args, NULL, 2, 3, MB_BALANCED, out, 3, mask_store, bytes, NULL), 3);
}

static void test_masked_merge_roundtrip(void **state)
{
    static float a[7 * 3], y[7 * 3];
    static int16_t h[4 * 6], hy[4 * 6];
    mb_value args[2], out[16], merged[2];
    mb_spec specs[2] = {MB_SPLIT(0), MB_SPLIT(1)};
    size_t bytes;
    int i, n, pol;
    (void)state;
    for (i = 0; i < 21; i++) a[i] = (float)i * 0.5f - 3.0f;
    for (i = 0; i < 24; i++) h[i] = (int16_t)(i * 37 - 400);
    for (pol = 0; pol < 2; pol++) {
        int flags = pol ? MB_CEIL : MB_BALANCED;
        int k = pol ? 3 : 4; /* 7 into 3 ceil: 3,3,1; 6 into 3 ceil: 2,2,2 */
        tv(&args[0], a, MB_F32, 2, SHP(7, 3));
        tv(&args[1], h, MB_I16, 2, SHP(4, 6));
        n = mb_split_masked_bytes(args, specs, 2, k, flags, &bytes);
        assert_int_equal(n, pol ? 3 : 4);
        assert_true(bytes <= sizeof mask_store);
        assert_int_equal(mb_split_masked(args, specs, 2, k, flags, out, 8, mask_store, bytes, NULL), n);
        memset(y, SENT, sizeof y);
        memset(hy, SENT, sizeof hy);
        tv(&merged[0], y, MB_F32, 2, SHP(7, 3));
        tv(&merged[1], hy, MB_I16, 2, SHP(4, 6));
        assert_int_equal(mb_merge(out, n, 2, specs, MB_DEBUG_MASK | flags, merged), MB_OK);
        assert_memory_equal(y, a, sizeof a);
        assert_memory_equal(hy, h, sizeof h);
    }
    /* KEEP_COUNT with empty chunks: 2 rows into 4 */
    {
        mb_value m, mo[4], mm;
        static float yy[2 * 3];
        tv(&m, a, MB_F32, 2, SHP(2, 3));
        assert_int_equal(mb_split_masked_bytes(&m, NULL, 1, 4, MB_KEEP_COUNT, &bytes), 4);
        assert_int_equal(mb_split_masked(&m, NULL, 1, 4, MB_KEEP_COUNT, mo, 4, mask_store, bytes, NULL), 4);
        check_masked_chunks(mo, 1, 0, 4, &m.tensor, 0, SHP(1, 1, 0, 0));
        memset(yy, SENT, sizeof yy);
        tv(&mm, yy, MB_F32, 2, SHP(2, 3));
        assert_int_equal(mb_merge(mo, 4, 1, NULL, MB_DEBUG_MASK, &mm), MB_OK);
        assert_memory_equal(yy, a, sizeof yy);
    }
    /* masked merge errors: count impossible for the policy, chunk shapes differ */
    {
        mb_value m[4], mm;
        float src[4][2], yy[2];
        for (i = 0; i < 4; i++) tv(&m[i], src[i], MB_F32, 1, SHP(2));
        memset(src, 0, sizeof src);
        memset(yy, SENT, sizeof yy);
        tv(&mm, yy, MB_F32, 1, SHP(2));
        /* torch.chunk cannot make 4 chunks of 2 rows */
        merge_err(m, 4, 1, NULL, MB_DEBUG_MASK | MB_CEIL, &mm, yy, sizeof yy, MB_ERR_CHUNK_COUNT);
        tv(&m[2], src[2], MB_F32, 1, SHP(1));
        merge_err(m, 4, 1, NULL, MB_DEBUG_MASK, &mm, yy, sizeof yy, MB_ERR_SHAPE);
        /* output must be the full size */
        tv(&m[2], src[2], MB_F32, 1, SHP(2));
        tv(&mm, yy, MB_F32, 1, SHP(1));
        merge_err(m, 4, 1, NULL, MB_DEBUG_MASK, &mm, yy, sizeof yy, MB_ERR_SHAPE);
    }
}

/* ==== 5. Merge =============================================================== */

static void test_merge_concat_dim0(void **state)
{
    float c0[2 * 3], c1[2 * 3], c2[1 * 3], y[6 * 3];
    mb_value chunks[3], out;
    int i;
    (void)state;
    for (i = 0; i < 6; i++) c0[i] = (float)i;
    for (i = 0; i < 6; i++) c1[i] = (float)(6 + i);
    for (i = 0; i < 3; i++) c2[i] = (float)(12 + i);
    tv(&chunks[0], c0, MB_F32, 2, SHP(2, 3));
    tv(&chunks[1], c1, MB_F32, 2, SHP(2, 3));
    tv(&chunks[2], c2, MB_F32, 2, SHP(1, 3));
    memset(y, SENT, sizeof y);
    tv(&out, y, MB_F32, 2, SHP(5, 3));
    assert_int_equal(mb_merge(chunks, 3, 1, NULL, 0, &out), MB_OK); /* default: CONCAT(0) */
    for (i = 0; i < 15; i++) assert_true(y[i] == (float)i);
    for (i = 15; i < 18; i++) {
        uint32_t u;
        memcpy(&u, &y[i], 4);
        assert_int_equal(u, 0xA5A5A5A5u); /* nothing past the output view */
    }
    /* an empty chunk in the middle is fine */
    {
        mb_value ch[4];
        mb_spec s = MB_CONCAT(0);
        ch[0] = chunks[0];
        tv(&ch[1], c1, MB_F32, 2, SHP(0, 3));
        ch[2] = chunks[1];
        ch[3] = chunks[2];
        memset(y, 0, sizeof y);
        assert_int_equal(mb_merge(ch, 4, 1, &s, 0, &out), MB_OK);
        for (i = 0; i < 15; i++) assert_true(y[i] == (float)i);
    }
    /* into a transposed output view: y viewed as (5,3) with strides (1,5) */
    {
        mb_value ot = out;
        ot.tensor.stride[0] = 1;
        ot.tensor.stride[1] = 5;
        memset(y, 0, sizeof y);
        assert_int_equal(mb_merge(chunks, 3, 1, NULL, 0, &ot), MB_OK);
        for (i = 0; i < 15; i++) assert_true(y[(i % 3) * 5 + i / 3] == (float)i);
    }
}

static void test_merge_concat_dim1(void **state)
{
    int32_t c0[2 * 1] = {1, 4}, c1[2 * 2] = {2, 3, 5, 6}, y[2 * 3];
    mb_value chunks[2], out;
    mb_spec s1 = MB_CONCAT(1), sm1 = MB_CONCAT(-1);
    int i;
    (void)state;
    tv(&chunks[0], c0, MB_I32, 2, SHP(2, 1));
    tv(&chunks[1], c1, MB_I32, 2, SHP(2, 2));
    memset(y, 0, sizeof y);
    tv(&out, y, MB_I32, 2, SHP(2, 3));
    assert_int_equal(mb_merge(chunks, 2, 1, &s1, 0, &out), MB_OK);
    for (i = 0; i < 6; i++) assert_int_equal(y[i], i + 1);
    memset(y, 0, sizeof y);
    assert_int_equal(mb_merge(chunks, 2, 1, &sm1, 0, &out), MB_OK);
    for (i = 0; i < 6; i++) assert_int_equal(y[i], i + 1);
    /* dim 0 is not right for these chunks (their dim 1 differs) */
    memset(y, 0, sizeof y);
    merge_err(chunks, 2, 1, NULL, 0, &out, y, sizeof y, MB_ERR_SHAPE);
}

static void test_merge_default_specs_mixed(void **state)
{
    double c0[2] = {1.0, 2.0}, c1[1] = {3.0}, y[3];
    mb_value chunks[4], out[2];
    mb_spec specs[2] = {MB_CONCAT(0), MB_REPLICATE};
    (void)state;
    tv(&chunks[0], c0, MB_F64, 1, SHP(2));
    sv(&chunks[1], 9.5);
    tv(&chunks[2], c1, MB_F64, 1, SHP(1));
    sv(&chunks[3], 9.5);
    tv(&out[0], y, MB_F64, 1, SHP(3));
    sv(&out[1], 0.0);
    assert_int_equal(mb_merge(chunks, 2, 2, specs, 0, out), MB_OK);
    assert_true(y[0] == 1.0 && y[1] == 2.0 && y[2] == 3.0);
    assert_true(out[1].scalar == 9.5);
    /* merge_chunks with no spec concatenates every value on dim 0: torch.cat of floats raises,
       so a scalar's DEFAULT merge is an error (a tensor's is CONCAT(0)) */
    y[0] = y[1] = y[2] = 0.0;
    merge_err(chunks, 2, 2, NULL, 0, out, y, sizeof y, MB_ERR_SPEC);
    specs[1].kind = MB_SPEC_DEFAULT;
    merge_err(chunks, 2, 2, specs, 0, out, y, sizeof y, MB_ERR_SPEC);
    /* REPLICATE compares values: different values are an error */
    specs[1].kind = MB_SPEC_REPLICATE;
    sv(&chunks[3], 9.0);
    merge_err(chunks, 2, 2, specs, 0, out, y, sizeof y, MB_ERR_NOT_REPLICATED);
}

static void test_merge_zero_copy_in_place(void **state)
{
    static float y[10 * 3], sep[10 * 3];
    mb_value outv, views[4];
    static const int32_t off[3] = {0, 4, 7};
    int c, r, k, n;
    (void)state;
    memset(y, 0, sizeof y);
    tv(&outv, y, MB_F32, 2, SHP(10, 3));
    n = mb_split(&outv, NULL, 1, 3, MB_BALANCED, views, 3, NULL);
    assert_int_equal(n, 3);
    /* each microbatch writes its result through its view of the output */
    for (c = 0; c < 3; c++)
        for (r = 0; r < views[c].tensor.shape[0]; r++)
            for (k = 0; k < 3; k++) *(float *)at2(&views[c].tensor, r, k) = (float)(100 * c + 10 * r + k);
    memcpy_calls = 0;
    assert_int_equal(mb_merge(views, 3, 1, NULL, 0, &outv), MB_OK);
    assert_int_equal(memcpy_calls, 0); /* nothing copied: the chunks already are the output */
    for (c = 0; c < 3; c++)
        for (r = 0; r < views[c].tensor.shape[0]; r++)
            for (k = 0; k < 3; k++) assert_true(y[(off[c] + r) * 3 + k] == (float)(100 * c + 10 * r + k));

    /* the same on dim 1: chunk views are strided, still no copy */
    {
        mb_spec s = MB_SPLIT(1);
        mb_value o1;
        tv(&o1, y, MB_F32, 2, SHP(3, 10));
        assert_int_equal(mb_split(&o1, &s, 1, 4, MB_BALANCED, views, 4, NULL), 4);
        memcpy_calls = 0;
        assert_int_equal(mb_merge(views, 4, 1, &s, 0, &o1), MB_OK);
        assert_int_equal(memcpy_calls, 0);
    }

    /* out of place: the chunks live elsewhere, so merge must copy */
    for (r = 0; r < 30; r++) sep[r] = (float)(r + 1000);
    tv(&views[0], sep, MB_F32, 2, SHP(4, 3));
    tv(&views[1], sep + 12, MB_F32, 2, SHP(3, 3));
    tv(&views[2], sep + 21, MB_F32, 2, SHP(3, 3));
    memcpy_calls = 0;
    assert_int_equal(mb_merge(views, 3, 1, NULL, 0, &outv), MB_OK);
    assert_true(memcpy_calls > 0);
    for (r = 0; r < 30; r++) assert_true(y[r] == (float)(r + 1000));
    /* mixed: chunk 1 is in place, the others are not -> values right either way */
    tv(&outv, y, MB_F32, 2, SHP(10, 3));
    assert_int_equal(mb_narrow(&outv.tensor, 0, 4, 3, &views[1].tensor), MB_OK);
    for (r = 0; r < 9; r++) y[12 + r] = -7.0f;
    assert_int_equal(mb_merge(views, 3, 1, NULL, 0, &outv), MB_OK);
    for (r = 0; r < 30; r++) assert_true(y[r] == (r >= 12 && r < 21 ? -7.0f : (float)(r + 1000)));
}

static void test_merge_reduce_tensors(void **state)
{
    float f[3][4] = {{1, -2, 6, 0.5f}, {2, 5, -1, 0.25f}, {3, -4, 4, 2}};
    double d[3][2] = {{1e10, -1}, {-3e10, 2}, {5e9, 8}};
    int32_t i32[3][2] = {{1000000, -5}, {2000000, 7}, {-500000, 3}};
    float y[4];
    double yd[2];
    int32_t yi[2];
    mb_value ch[3], out;
    mb_spec sum = MB_REDUCE(MB_RED_SUM), mean = MB_REDUCE(MB_RED_MEAN), mx = MB_REDUCE(MB_RED_MAX),
            mn = MB_REDUCE(MB_RED_MIN);
    int c;
    (void)state;
    for (c = 0; c < 3; c++) tv(&ch[c], f[c], MB_F32, 2, SHP(2, 2));
    tv(&out, y, MB_F32, 2, SHP(2, 2));
    memset(y, SENT, sizeof y);
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_true(y[0] == 6.0f && y[1] == -1.0f && y[2] == 9.0f && y[3] == 2.75f);
    memset(y, SENT, sizeof y);
    assert_int_equal(mb_merge(ch, 3, 1, &mean, 0, &out), MB_OK);
    assert_true(y[0] == 2.0f && y[1] == -1.0f / 3.0f && y[2] == 3.0f && y[3] == 2.75f / 3.0f);
    memset(y, SENT, sizeof y);
    assert_int_equal(mb_merge(ch, 3, 1, &mx, 0, &out), MB_OK);
    assert_true(y[0] == 3.0f && y[1] == 5.0f && y[2] == 6.0f && y[3] == 2.0f);
    memset(y, SENT, sizeof y);
    assert_int_equal(mb_merge(ch, 3, 1, &mn, 0, &out), MB_OK);
    assert_true(y[0] == 1.0f && y[1] == -4.0f && y[2] == -1.0f && y[3] == 0.25f);
    /* inputs untouched by the reduction */
    assert_true(f[0][0] == 1.0f && f[1][1] == 5.0f && f[2][3] == 2.0f);

    for (c = 0; c < 3; c++) tv(&ch[c], d[c], MB_F64, 1, SHP(2));
    tv(&out, yd, MB_F64, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_true(yd[0] == -1.5e10 && yd[1] == 9.0);
    assert_int_equal(mb_merge(ch, 3, 1, &mean, 0, &out), MB_OK);
    assert_true(yd[0] == -0.5e10 && yd[1] == 3.0);
    assert_int_equal(mb_merge(ch, 3, 1, &mx, 0, &out), MB_OK);
    assert_true(yd[0] == 1e10 && yd[1] == 8.0);
    assert_int_equal(mb_merge(ch, 3, 1, &mn, 0, &out), MB_OK);
    assert_true(yd[0] == -3e10 && yd[1] == -1.0);

    for (c = 0; c < 3; c++) tv(&ch[c], i32[c], MB_I32, 1, SHP(2));
    tv(&out, yi, MB_I32, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_int_equal(yi[0], 2500000);
    assert_int_equal(yi[1], 5);
    assert_int_equal(mb_merge(ch, 3, 1, &mx, 0, &out), MB_OK);
    assert_int_equal(yi[0], 2000000);
    assert_int_equal(yi[1], 7);
    assert_int_equal(mb_merge(ch, 3, 1, &mn, 0, &out), MB_OK);
    assert_int_equal(yi[0], -500000);
    assert_int_equal(yi[1], -5);
    /* one chunk: reduce is the chunk itself */
    assert_int_equal(mb_merge(ch, 1, 1, &sum, 0, &out), MB_OK);
    assert_int_equal(yi[0], 1000000);
    assert_int_equal(yi[1], -5);
    /* reduce into a strided output view */
    {
        int32_t wide[4];
        mb_value ow;
        memset(wide, 0, sizeof wide);
        tv(&ow, wide, MB_I32, 1, SHP(2));
        ow.tensor.stride[0] = 3;
        assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &ow), MB_OK);
        assert_int_equal(wide[0], 2500000);
        assert_int_equal(wide[1], 0);
        assert_int_equal(wide[2], 0);
        assert_int_equal(wide[3], 5);
    }
}

static void test_merge_reduce_scalars(void **state)
{
    mb_value ch[3], out;
    mb_spec sum = MB_REDUCE(MB_RED_SUM), mean = MB_REDUCE(MB_RED_MEAN), mx = MB_REDUCE(MB_RED_MAX),
            mn = MB_REDUCE(MB_RED_MIN);
    (void)state;
    sv(&ch[0], 1.0);
    sv(&ch[1], -2.5);
    sv(&ch[2], 7.5);
    sv(&out, 123.0);
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_true(out.scalar == 6.0);
    assert_int_equal(out.kind, MB_VALUE_SCALAR);
    assert_int_equal(mb_merge(ch, 3, 1, &mean, 0, &out), MB_OK);
    assert_true(out.scalar == 2.0);
    assert_int_equal(mb_merge(ch, 3, 1, &mx, 0, &out), MB_OK);
    assert_true(out.scalar == 7.5);
    assert_int_equal(mb_merge(ch, 3, 1, &mn, 0, &out), MB_OK);
    assert_true(out.scalar == -2.5);
    /* chunks are unchanged */
    assert_true(ch[0].scalar == 1.0 && ch[1].scalar == -2.5 && ch[2].scalar == 7.5);
}

static void test_merge_mean_integer_dtype(void **state)
{
    int32_t a[2] = {1, 2}, b[2] = {3, 4}, y[2] = {-9, -9};
    int8_t a8[1] = {1}, b8[1] = {2}, y8[1] = {55};
    uint8_t au[1] = {1}, bu[1] = {2}, yu[1] = {55};
    int16_t ah[1] = {1}, bh[1] = {2}, yh[1] = {55};
    mb_value ch[2], out;
    mb_spec mean = MB_REDUCE(MB_RED_MEAN);
    (void)state;
    tv(&ch[0], a, MB_I32, 1, SHP(2));
    tv(&ch[1], b, MB_I32, 1, SHP(2));
    tv(&out, y, MB_I32, 1, SHP(2));
    merge_err(ch, 2, 1, &mean, 0, &out, y, sizeof y, MB_ERR_DTYPE);
    tv(&ch[0], a8, MB_I8, 1, SHP(1));
    tv(&ch[1], b8, MB_I8, 1, SHP(1));
    tv(&out, y8, MB_I8, 1, SHP(1));
    merge_err(ch, 2, 1, &mean, 0, &out, y8, sizeof y8, MB_ERR_DTYPE);
    tv(&ch[0], au, MB_U8, 1, SHP(1));
    tv(&ch[1], bu, MB_U8, 1, SHP(1));
    tv(&out, yu, MB_U8, 1, SHP(1));
    merge_err(ch, 2, 1, &mean, 0, &out, yu, sizeof yu, MB_ERR_DTYPE);
    tv(&ch[0], ah, MB_I16, 1, SHP(1));
    tv(&ch[1], bh, MB_I16, 1, SHP(1));
    tv(&out, yh, MB_I16, 1, SHP(1));
    merge_err(ch, 2, 1, &mean, 0, &out, yh, sizeof yh, MB_ERR_DTYPE);
    assert_int_equal(y[0], -9);
    assert_int_equal(y8[0], 55);
}

/* PyTorch's sum_reducer: _CustomReducer(torch.tensor(0.0), lambda a, b: a + b) */
static int red_calls;
static int sum_reducer(mb_value *acc, const mb_value *chunk, void *user)
{
    red_calls++;
    if (user) *(int *)user += 1;
    if (acc->kind == MB_VALUE_SCALAR) {
        acc->scalar += chunk->scalar;
    } else {
        float a, b;
        if (acc->tensor.dtype != MB_F32 || chunk->tensor.dtype != MB_F32) return MB_ERR_DTYPE;
        memcpy(&a, acc->tensor.data, 4);
        memcpy(&b, chunk->tensor.data, 4);
        a += b;
        memcpy(acc->tensor.data, &a, 4);
    }
    return 0;
}
/* Left fold, in chunk order: acc = 10 * acc + chunk */
static int digits_reducer(mb_value *acc, const mb_value *chunk, void *user)
{
    (void)user;
    acc->scalar = acc->scalar * 10.0 + chunk->scalar;
    return 0;
}
static int failing_reducer(mb_value *acc, const mb_value *chunk, void *user)
{
    (void)acc;
    (void)user;
    return chunk->scalar > 1.5 ? MB_ERR_RANGE : 0;
}

static void test_merge_custom_reducer(void **state)
{
    mb_value ch[3], out;
    mb_reducer red;
    mb_spec spec = MB_REDUCE_CUSTOM(&red);
    float losses[3] = {1.0f, 2.0f, 3.0f}, init0 = 0.0f, y = -1.0f;
    int seen = 0;
    (void)state;
    /* scalars: losses 1,2,3 with init 0 -> 6 */
    sv(&ch[0], 1.0);
    sv(&ch[1], 2.0);
    sv(&ch[2], 3.0);
    memset(&red, 0, sizeof red);
    red.fn = sum_reducer;
    sv(&red.init, 0.0);
    red.user = &seen;
    sv(&out, -1.0);
    red_calls = 0;
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_OK);
    assert_true(out.scalar == 6.0);
    assert_int_equal(red_calls, 3); /* init, then once per chunk */
    assert_int_equal(seen, 3);      /* user pointer passed through */
    assert_true(red.init.scalar == 0.0);
    /* init is the starting value */
    sv(&red.init, 10.0);
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_OK);
    assert_true(out.scalar == 16.0);
    /* order: a left fold from init in chunk order -> 0,1,2,3 gives 123 */
    red.fn = digits_reducer;
    sv(&red.init, 0.0);
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_OK);
    assert_true(out.scalar == 123.0);

    /* 0-d f32 tensors: the same losses as tensors, init tensor(0.0) */
    red.fn = sum_reducer;
    red.user = NULL;
    tv(&red.init, &init0, MB_F32, 0, NULL);
    tv(&ch[0], &losses[0], MB_F32, 0, NULL);
    tv(&ch[1], &losses[1], MB_F32, 0, NULL);
    tv(&ch[2], &losses[2], MB_F32, 0, NULL);
    tv(&out, &y, MB_F32, 0, NULL);
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_OK);
    assert_true(y == 6.0f);
    assert_true(init0 == 0.0f); /* init not modified */
    assert_true(losses[0] == 1.0f && losses[1] == 2.0f && losses[2] == 3.0f);

    /* the reducer's own error is returned */
    sv(&ch[0], 1.0);
    sv(&ch[1], 2.0);
    sv(&ch[2], 3.0);
    red.fn = failing_reducer;
    sv(&red.init, 0.0);
    sv(&out, 0.0);
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_ERR_RANGE);
    /* bad reducers: missing fn, missing reducer, init kind differs from the values */
    y = -1.0f;
    sv(&out, -77.0);
    red.fn = NULL;
    merge_err(ch, 3, 1, &spec, 0, &out, NULL, 0, MB_ERR_SPEC);
    {
        mb_spec nored = MB_REDUCE_CUSTOM(NULL);
        merge_err(ch, 3, 1, &nored, 0, &out, NULL, 0, MB_ERR_SPEC);
    }
    red.fn = sum_reducer;
    tv(&red.init, &init0, MB_F32, 0, NULL);
    merge_err(ch, 3, 1, &spec, 0, &out, NULL, 0, MB_ERR_SPEC);
    /* tensor init of the wrong shape for the output */
    {
        float two[2] = {0, 0};
        tv(&red.init, two, MB_F32, 1, SHP(2));
        tv(&ch[0], &losses[0], MB_F32, 0, NULL);
        tv(&ch[1], &losses[1], MB_F32, 0, NULL);
        tv(&ch[2], &losses[2], MB_F32, 0, NULL);
        tv(&out, &y, MB_F32, 0, NULL);
        merge_err(ch, 3, 1, &spec, 0, &out, &y, sizeof y, MB_ERR_SHAPE);
    }
}

static void test_merge_replicate(void **state)
{
    float a[3] = {1, 2, 3}, b[3] = {1, 2, 3}, c[3] = {1, 2, 3.5f}, y[3] = {0, 0, 0};
    mb_value ch[3], out;
    mb_spec rep = MB_REPLICATE;
    (void)state;
    tv(&ch[0], a, MB_F32, 1, SHP(3));
    tv(&ch[1], b, MB_F32, 1, SHP(3));
    tv(&ch[2], a, MB_F32, 1, SHP(3));
    tv(&out, y, MB_F32, 1, SHP(3));
    assert_int_equal(mb_merge(ch, 3, 1, &rep, 0, &out), MB_OK);
    assert_memory_equal(y, a, sizeof a);
    /* a chunk that differs in one element */
    memset(y, 0, sizeof y);
    tv(&ch[1], c, MB_F32, 1, SHP(3));
    merge_err(ch, 3, 1, &rep, 0, &out, y, sizeof y, MB_ERR_NOT_REPLICATED);
    /* differing in the last chunk only */
    tv(&ch[1], b, MB_F32, 1, SHP(3));
    tv(&ch[2], c, MB_F32, 1, SHP(3));
    merge_err(ch, 3, 1, &rep, 0, &out, y, sizeof y, MB_ERR_NOT_REPLICATED);
    /* replicas of different shape */
    tv(&ch[2], c, MB_F32, 1, SHP(2));
    merge_err(ch, 3, 1, &rep, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    /* scalars */
    sv(&ch[0], 4.25);
    sv(&ch[1], 4.25);
    sv(&ch[2], 4.25);
    sv(&out, 0.0);
    assert_int_equal(mb_merge(ch, 3, 1, &rep, 0, &out), MB_OK);
    assert_true(out.scalar == 4.25);
    sv(&out, -77.0);
    sv(&ch[2], 4.0);
    merge_err(ch, 3, 1, &rep, 0, &out, NULL, 0, MB_ERR_NOT_REPLICATED);
    assert_true(out.scalar == -77.0);
}

static void test_merge_errors_untouched(void **state)
{
    float a[2 * 3], b[2 * 4], y[6 * 4];
    double d[2 * 3];
    mb_value ch[2], out;
    mb_spec cat0 = MB_CONCAT(0), bad_dim = MB_CONCAT(2);
    int i;
    (void)state;
    for (i = 0; i < 6; i++) a[i] = (float)i;
    for (i = 0; i < 8; i++) b[i] = (float)i;
    memset(y, SENT, sizeof y);
    /* non-concat dims differ */
    tv(&ch[0], a, MB_F32, 2, SHP(2, 3));
    tv(&ch[1], b, MB_F32, 2, SHP(2, 4));
    tv(&out, y, MB_F32, 2, SHP(4, 3));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    /* rank differs */
    tv(&ch[1], b, MB_F32, 3, SHP(2, 3, 1));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    /* dtype differs between chunks */
    tv(&ch[1], d, MB_F64, 2, SHP(2, 3));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_DTYPE);
    /* output too small, too big, wrong inner dim, wrong dtype */
    tv(&ch[1], b, MB_F32, 2, SHP(2, 3));
    tv(&out, y, MB_F32, 2, SHP(3, 3));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    tv(&out, y, MB_F32, 2, SHP(5, 3));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    tv(&out, y, MB_F32, 2, SHP(4, 4));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    tv(&out, y, MB_F32, 1, SHP(12));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    tv(&out, y, MB_I32, 2, SHP(4, 3));
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_DTYPE);
    /* reduce output of the wrong shape */
    {
        mb_spec sum = MB_REDUCE(MB_RED_SUM);
        tv(&out, y, MB_F32, 2, SHP(4, 3));
        merge_err(ch, 2, 1, &sum, 0, &out, y, sizeof y, MB_ERR_SHAPE);
        tv(&out, y, MB_F32, 2, SHP(3, 2));
        merge_err(ch, 2, 1, &sum, 0, &out, y, sizeof y, MB_ERR_SHAPE);
    }
    /* invalid output view, bad concat dim */
    tv(&out, y, MB_F32, 2, SHP(4, 3));
    out.tensor.ndim = MB_MAX_DIMS + 1;
    merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_NDIM);
    tv(&out, y, MB_F32, 2, SHP(4, 3));
    merge_err(ch, 2, 1, &bad_dim, 0, &out, y, sizeof y, MB_ERR_DIM);
    /* chunk count and NULL */
    merge_err(ch, 0, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_CHUNKS);
    merge_err(ch, -2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_CHUNKS);
    merge_err(NULL, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_NULL);
    assert_int_equal(mb_merge(ch, 2, 1, &cat0, 0, NULL), MB_ERR_NULL);
    /* concat of a scalar, and a value that is a tensor in one chunk and a scalar in another */
    {
        mb_value sc[2], so;
        sv(&sc[0], 1.0);
        sv(&sc[1], 1.0);
        sv(&so, 5.0);
        merge_err(sc, 2, 1, &cat0, 0, &so, NULL, 0, MB_ERR_SPEC);
        sv(&ch[1], 1.0);
        merge_err(ch, 2, 1, &cat0, 0, &out, y, sizeof y, MB_ERR_SPEC);
    }
    for (i = 0; i < (int)(sizeof y / sizeof y[0]); i++) {
        uint32_t u;
        memcpy(&u, &y[i], 4);
        assert_int_equal(u, 0xA5A5A5A5u);
    }
    /* the same arguments, fixed, now succeed */
    tv(&ch[1], b, MB_F32, 2, SHP(2, 3));
    assert_int_equal(mb_merge(ch, 2, 1, &cat0, 0, &out), MB_OK);
    assert_true(y[0] == 0.0f && y[6] == 0.0f && y[11] == 5.0f);
}

/* An unknown reduce op is a bad spec (MB_ERR_SPEC: "unknown spec"), never a silent
   "take the first chunk". */
static void test_merge_reduce_unknown_op(void **state)
{
    float a[2] = {1, 2}, b[2] = {3, 4}, y[2] = {0, 0};
    mb_value ch[2], out;
    mb_spec s = MB_REDUCE(MB_RED_SUM);
    (void)state;
    tv(&ch[0], a, MB_F32, 1, SHP(2));
    tv(&ch[1], b, MB_F32, 1, SHP(2));
    tv(&out, y, MB_F32, 1, SHP(2));
    s.op = MB_RED_CUSTOM + 1;
    merge_err(ch, 2, 1, &s, 0, &out, y, sizeof y, MB_ERR_SPEC);
    s.op = -2;
    merge_err(ch, 2, 1, &s, 0, &out, y, sizeof y, MB_ERR_SPEC);
    s.op = -1;
    merge_err(ch, 2, 1, &s, 0, &out, y, sizeof y, MB_ERR_SPEC);
    s.kind = 42;
    s.op = MB_RED_SUM;
    merge_err(ch, 2, 1, &s, 0, &out, y, sizeof y, MB_ERR_SPEC);
}

/* A later value fails: the earlier value, which would have merged, is untouched too. */
/* A REDUCE output that is one of the chunks (here the last) is reduced in place: the
   result counts every chunk once, whichever chunk the output aliases. */
static void test_merge_reduce_into_a_chunk(void **state)
{
    static const int ops[3] = {MB_RED_SUM, MB_RED_MAX, MB_RED_MIN};
    static const float want[3] = {7.0f, 4.0f, 1.0f};
    int32_t s1[1] = {3};
    int k, o;
    (void)state;
    for (o = 0; o < 3; o++)
        for (k = 0; k < 3; k++) {
            float buf[3][3] = {{1, 1, 1}, {2, 2, 2}, {4, 4, 4}};
            mb_value ch[3], out;
            mb_spec sp = MB_REDUCE(0);
            int c;
            sp.op = ops[o];
            for (c = 0; c < 3; c++) {
                ch[c].kind = MB_VALUE_TENSOR;
                assert_int_equal(mb_tensor_init(&ch[c].tensor, buf[c], MB_F32, 1, s1), MB_OK);
            }
            out = ch[k];
            assert_int_equal(mb_merge(ch, 3, 1, &sp, 0, &out), MB_OK);
            for (c = 0; c < 3; c++) assert_true(buf[k][c] == want[o]);
        }
}

static void test_merge_atomic_later_value_fails(void **state)
{
    float a0[2] = {1, 2}, a1[1] = {3}, y[3];
    int32_t i0[1] = {1}, i1[1] = {2}, yi[1] = {77};
    mb_value ch[6], out[3];
    mb_spec specs[3] = {MB_CONCAT(0), MB_REDUCE(MB_RED_SUM), MB_REPLICATE};
    (void)state;
    memset(y, SENT, sizeof y);
    /* chunk c: [tensor part, int32 loss, replicated scalar] */
    tv(&ch[0], a0, MB_F32, 1, SHP(2));
    tv(&ch[1], i0, MB_I32, 1, SHP(1));
    sv(&ch[2], 5.0);
    tv(&ch[3], a1, MB_F32, 1, SHP(1));
    tv(&ch[4], i1, MB_I32, 1, SHP(1));
    sv(&ch[5], 6.0); /* differs from 5.0 */
    tv(&out[0], y, MB_F32, 1, SHP(3));
    tv(&out[1], yi, MB_I32, 1, SHP(1));
    sv(&out[2], -1.0);
    merge_err(ch, 2, 3, specs, 0, out, y, sizeof y, MB_ERR_NOT_REPLICATED);
    assert_int_equal(yi[0], 77);
    assert_true(out[2].scalar == -1.0);
    /* a later mean on integers */
    sv(&ch[5], 5.0);
    specs[1].op = MB_RED_MEAN;
    merge_err(ch, 2, 3, specs, 0, out, y, sizeof y, MB_ERR_DTYPE);
    assert_int_equal(yi[0], 77);
    /* a later shape mismatch */
    specs[1].op = MB_RED_SUM;
    tv(&out[1], yi, MB_I32, 1, SHP(0));
    merge_err(ch, 2, 3, specs, 0, out, y, sizeof y, MB_ERR_SHAPE);
    assert_int_equal(yi[0], 77);
    /* a scalar reduce that would succeed, then a tensor replica that differs */
    {
        float r0[2] = {1, 2}, r1[2] = {1, 3}, yr[2] = {-5, -5};
        mb_value c2[4], o2[2];
        mb_spec s2[2] = {MB_REDUCE(MB_RED_SUM), MB_REPLICATE};
        sv(&c2[0], 1.0);
        tv(&c2[1], r0, MB_F32, 1, SHP(2));
        sv(&c2[2], 2.0);
        tv(&c2[3], r1, MB_F32, 1, SHP(2));
        sv(&o2[0], -77.0);
        tv(&o2[1], yr, MB_F32, 1, SHP(2));
        merge_err(c2, 2, 2, s2, 0, o2, yr, sizeof yr, MB_ERR_NOT_REPLICATED);
        assert_true(o2[0].scalar == -77.0);
        r1[1] = 2;
        assert_int_equal(mb_merge(c2, 2, 2, s2, 0, o2), MB_OK);
        assert_true(o2[0].scalar == 3.0 && yr[0] == 1.0f && yr[1] == 2.0f);
    }
    /* fixed: everything merges */
    tv(&out[1], yi, MB_I32, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 2, 3, specs, 0, out), MB_OK);
    assert_true(y[0] == 1.0f && y[1] == 2.0f && y[2] == 3.0f);
    assert_int_equal(yi[0], 3);
    assert_true(out[2].scalar == 5.0);
}

/* ==== 7. Integer wrap, NaN ==================================================== */

static void test_integer_reduce_wraps(void **state)
{
    int8_t a8[4] = {127, -128, 100, -1}, b8[4] = {1, -1, 100, 1}, c8[4] = {0, 0, 100, 0}, y8[4];
    uint8_t au[3] = {255, 0, 200}, bu[3] = {1, 0, 100}, yu[3];
    int16_t ah[2] = {32767, -32768}, bh[2] = {1, -1}, yh[2];
    int32_t ai[2] = {INT32_MAX, INT32_MIN}, bi[2] = {1, -1}, yi[2];
    mb_value ch[3], out;
    mb_spec sum = MB_REDUCE(MB_RED_SUM), mx = MB_REDUCE(MB_RED_MAX), mn = MB_REDUCE(MB_RED_MIN);
    (void)state;
    tv(&ch[0], a8, MB_I8, 1, SHP(4));
    tv(&ch[1], b8, MB_I8, 1, SHP(4));
    tv(&ch[2], c8, MB_I8, 1, SHP(4));
    tv(&out, y8, MB_I8, 1, SHP(4));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_int_equal(y8[0], -128); /* 127 + 1 */
    assert_int_equal(y8[1], 127);  /* -128 - 1 */
    assert_int_equal(y8[2], -56);  /* 200 */
    assert_int_equal(y8[3], 0);
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_int_equal(y8[2], 44); /* 300 */
    assert_int_equal(mb_merge(ch, 2, 1, &mx, 0, &out), MB_OK);
    assert_int_equal(y8[0], 127);
    assert_int_equal(y8[1], -1);
    assert_int_equal(y8[3], 1);
    assert_int_equal(mb_merge(ch, 2, 1, &mn, 0, &out), MB_OK);
    assert_int_equal(y8[1], -128);
    assert_int_equal(y8[3], -1);

    tv(&ch[0], au, MB_U8, 1, SHP(3));
    tv(&ch[1], bu, MB_U8, 1, SHP(3));
    tv(&out, yu, MB_U8, 1, SHP(3));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_int_equal(yu[0], 0);  /* 255 + 1 */
    assert_int_equal(yu[2], 44); /* 300 */
    assert_int_equal(mb_merge(ch, 2, 1, &mx, 0, &out), MB_OK);
    assert_int_equal(yu[0], 255); /* unsigned compare */
    assert_int_equal(yu[2], 200);

    tv(&ch[0], ah, MB_I16, 1, SHP(2));
    tv(&ch[1], bh, MB_I16, 1, SHP(2));
    tv(&out, yh, MB_I16, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_int_equal(yh[0], -32768);
    assert_int_equal(yh[1], 32767);

    tv(&ch[0], ai, MB_I32, 1, SHP(2));
    tv(&ch[1], bi, MB_I32, 1, SHP(2));
    tv(&out, yi, MB_I32, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_true(yi[0] == INT32_MIN);
    assert_true(yi[1] == INT32_MAX);
    assert_int_equal(mb_merge(ch, 2, 1, &mx, 0, &out), MB_OK);
    assert_true(yi[0] == INT32_MAX && yi[1] == -1);
    assert_int_equal(mb_merge(ch, 2, 1, &mn, 0, &out), MB_OK);
    assert_true(yi[0] == 1 && yi[1] == INT32_MIN);
}

static void test_max_min_nan_propagates(void **state)
{
    float nan = 0.0f, f0[3], f1[3], f2[3], y[3];
    double dn, d0[2], d1[2], yd[2];
    mb_value ch[3], out;
    mb_spec mx = MB_REDUCE(MB_RED_MAX), mn = MB_REDUCE(MB_RED_MIN);
    int op;
    (void)state;
    nan = nan / nan;
    dn = (double)nan;
    assert_true(nan != nan);
    f0[0] = nan;
    f0[1] = 1.0f;
    f0[2] = 1.0f;
    f1[0] = 5.0f;
    f1[1] = nan;
    f1[2] = 2.0f;
    f2[0] = -5.0f;
    f2[1] = 9.0f;
    f2[2] = -3.0f;
    tv(&ch[0], f0, MB_F32, 1, SHP(3));
    tv(&ch[1], f1, MB_F32, 1, SHP(3));
    tv(&ch[2], f2, MB_F32, 1, SHP(3));
    tv(&out, y, MB_F32, 1, SHP(3));
    for (op = 0; op < 2; op++) {
        memset(y, 0, sizeof y);
        assert_int_equal(mb_merge(ch, 3, 1, op ? &mn : &mx, 0, &out), MB_OK);
        assert_true(y[0] != y[0]); /* NaN in the first chunk survives later numbers */
        assert_true(y[1] != y[1]); /* NaN in a middle chunk survives too */
        assert_true(y[2] == (op ? -3.0f : 2.0f));
    }
    d0[0] = 1.0;
    d0[1] = dn;
    d1[0] = dn;
    d1[1] = 2.0;
    tv(&ch[0], d0, MB_F64, 1, SHP(2));
    tv(&ch[1], d1, MB_F64, 1, SHP(2));
    tv(&out, yd, MB_F64, 1, SHP(2));
    for (op = 0; op < 2; op++) {
        yd[0] = yd[1] = 0.0;
        assert_int_equal(mb_merge(ch, 2, 1, op ? &mn : &mx, 0, &out), MB_OK);
        assert_true(yd[0] != yd[0]);
        assert_true(yd[1] != yd[1]);
    }
    /* scalars too */
    sv(&ch[0], 3.0);
    sv(&ch[1], dn);
    sv(&ch[2], 4.0);
    sv(&out, 0.0);
    assert_int_equal(mb_merge(ch, 3, 1, &mx, 0, &out), MB_OK);
    assert_true(out.scalar != out.scalar);
}

/* ==== 6. Property: split then merge is the identity ========================== */

#define P_MAXN (7 * 7 * 7 * 7)
static uint64_t p_in[P_MAXN], p_out[P_MAXN], p_out2[P_MAXN];
static uint64_t p_store[9 * P_MAXN + 8];
static mb_value p_chunks[2 * 16], p_chunks2[16], p_masked[2 * 16];

/* merged (contiguous) must hold the elements of the input view `in`; bytes after it keep SENT */
static void p_check_equal(const mb_tensor *merged, const mb_tensor *in, const uint64_t *buf)
{
    int32_t idx[MB_MAX_DIMS];
    int64_t k, n = numel_of(in->ndim, in->shape);
    size_t es = esz(in->dtype), b;
    for (k = 0; k < n; k++) {
        unravel(k, in->ndim, in->shape, idx);
        assert_memory_equal(at(merged, idx), at(in, idx), es);
    }
    for (b = (size_t)n * es; b < sizeof p_out; b += 97) assert_int_equal(((const unsigned char *)buf)[b], SENT);
}

static void test_property_split_merge_identity(void **state)
{
    int it, iters = 600, checked = 0, masked_checked = 0;
    int seen_dtype[6] = {0, 0, 0, 0, 0, 0};
    (void)state;
    rng_state = 0x2545F491u;
    for (it = 0; it < iters; it++) {
        mb_dtype dt = all_dtypes[it % 6];
        size_t es = esz(dt);
        int nd = 1 + rng_below(4), d, c, n, dim, dn, chunks, k_eff;
        int size_pol = (rng() & 1) ? MB_CEIL : MB_BALANCED;
        int cnt_sel = rng_below(3);
        int cnt_pol = cnt_sel == 0 ? MB_DOWNSIZE : cnt_sel == 1 ? MB_KEEP_COUNT : MB_STRICT;
        int flags = size_pol | cnt_pol, permuted = (int)(rng() & 1);
        int32_t shape[MB_MAX_DIMS], sizes[16], s, off;
        int64_t numel;
        mb_value args[2], outs[2], o2;
        mb_spec specs[2], mspecs[2];
        mb_diag diag;
        size_t bytes, b;

        for (d = 0; d < nd; d++) shape[d] = rng_below(8);
        dim = rng_below(nd);
        if (rng() & 1) dim -= nd; /* negative dims too */
        dn = dim < 0 ? dim + nd : dim;
        chunks = 1 + rng_below(9);
        numel = numel_of(nd, shape);
        for (b = 0; b < (size_t)numel * es; b++) ((unsigned char *)p_in)[b] = (unsigned char)rng();

        /* input: contiguous, or the transpose (all dims reversed) of a contiguous buffer */
        if (!permuted) {
            tv(&args[0], p_in, dt, nd, shape);
        } else {
            int32_t rs[MB_MAX_DIMS];
            mb_tensor t;
            for (d = 0; d < nd; d++) rs[d] = shape[nd - 1 - d];
            tv(&args[0], p_in, dt, nd, rs);
            t = args[0].tensor;
            for (d = 0; d < nd; d++) {
                args[0].tensor.shape[d] = t.shape[nd - 1 - d];
                args[0].tensor.stride[d] = t.stride[nd - 1 - d];
            }
        }
        sv(&args[1], (double)it * 0.25);
        memset(specs, 0, sizeof specs);
        specs[0].kind = MB_SPEC_SPLIT;
        specs[0].dim = dim;
        mspecs[0] = specs[0];               /* concat on the same dim */
        mspecs[1].kind = MB_SPEC_REPLICATE; /* a scalar's DEFAULT merge is an error, as torch.cat of floats */
        seen_dtype[it % 6] = 1;

        s = shape[dn];
        if (cnt_pol == MB_KEEP_COUNT || s >= chunks) {
            k_eff = chunks;
        } else if (cnt_pol == MB_STRICT || s == 0) {
            memset(&diag, 0, sizeof diag);
            split_err(args, specs, 2, chunks, flags, 16, MB_ERR_SPLIT_SIZE, &diag);
            assert_int_equal(diag.value_index, 0);
            assert_int_equal(diag.size, s);
            assert_int_equal(diag.requested, chunks);
            continue;
        } else {
            k_eff = s; /* DOWNSIZE */
        }
        n = mb_split_sizes(s, k_eff, size_pol, sizes, 16);
        assert_in_range(n, 1, 9);

        /* split: views at the exact offsets */
        memcpy_calls = 0;
        assert_int_equal(mb_split(args, specs, 2, chunks, flags, p_chunks, 16, NULL), n);
        assert_int_equal(memcpy_calls, 0);
        off = 0;
        for (c = 0; c < n; c++) {
            const mb_tensor *t = &p_chunks[2 * c].tensor;
            assert_int_equal(p_chunks[2 * c].kind, MB_VALUE_TENSOR);
            assert_int_equal(t->dtype, dt);
            assert_int_equal(t->ndim, nd);
            for (d = 0; d < nd; d++) {
                assert_int_equal(t->shape[d], d == dn ? sizes[c] : args[0].tensor.shape[d]);
                if (t->shape[d] > 1) assert_int_equal(t->stride[d], args[0].tensor.stride[d]);
            }
            if (mb_numel(t) > 0)
                assert_ptr_equal(t->data, (char *)p_in + (size_t)off * (size_t)args[0].tensor.stride[dn] * es);
            assert_int_equal(p_chunks[2 * c + 1].kind, MB_VALUE_SCALAR);
            assert_true(p_chunks[2 * c + 1].scalar == args[1].scalar);
            off += sizes[c];
        }
        assert_int_equal(off, s);

        /* merge out of place into a contiguous output */
        memset(p_out, SENT, sizeof p_out);
        tv(&outs[0], p_out, dt, nd, shape);
        sv(&outs[1], -1.0);
        assert_int_equal(mb_merge(p_chunks, n, 2, mspecs, 0, outs), MB_OK);
        p_check_equal(&outs[0].tensor, &args[0].tensor, p_out);
        assert_true(outs[1].scalar == args[1].scalar);

        /* merge in place: split the output, write through its views, merge copies nothing */
        memset(p_out2, SENT, sizeof p_out2);
        tv(&o2, p_out2, dt, nd, shape);
        assert_int_equal(mb_split(&o2, specs, 1, chunks, flags, p_chunks2, 16, NULL), n);
        for (c = 0; c < n; c++) assert_int_equal(mb_copy(&p_chunks2[c].tensor, &p_chunks[2 * c].tensor), MB_OK);
        memcpy_calls = 0;
        assert_int_equal(mb_merge(p_chunks2, n, 1, mspecs, 0, &o2), MB_OK);
        assert_int_equal(memcpy_calls, 0);
        p_check_equal(&o2.tensor, &args[0].tensor, p_out2);

        /* debug-mask path */
        assert_int_equal(mb_split_masked_bytes(args, specs, 2, chunks, flags, &bytes), n);
        assert_true(bytes <= sizeof p_store);
        assert_int_equal(mb_split_masked(args, specs, 2, chunks, flags, p_masked, 16, p_store, bytes, NULL), n);
        off = 0;
        for (c = 0; c < n; c++) {
            const mb_tensor *t = &p_masked[2 * c].tensor;
            int32_t idx[MB_MAX_DIMS];
            int64_t k;
            for (d = 0; d < nd; d++) assert_int_equal(t->shape[d], args[0].tensor.shape[d]);
            for (k = 0; k < numel; k++) {
                const unsigned char *p;
                unravel(k, nd, shape, idx);
                p = (const unsigned char *)at(t, idx);
                if (idx[dn] >= off && idx[dn] < off + sizes[c]) {
                    assert_memory_equal(p, at(&args[0].tensor, idx), es);
                } else {
                    for (b = 0; b < es; b++) assert_int_equal(p[b], 0);
                }
            }
            off += sizes[c];
        }
        memset(p_out, SENT, sizeof p_out);
        sv(&outs[1], -1.0);
        assert_int_equal(mb_merge(p_masked, n, 2, mspecs, MB_DEBUG_MASK | size_pol, outs), MB_OK);
        p_check_equal(&outs[0].tensor, &args[0].tensor, p_out);
        assert_true(outs[1].scalar == args[1].scalar);
        masked_checked++;
        checked++;
    }
    for (it = 0; it < 6; it++) assert_int_equal(seen_dtype[it], 1);
    assert_in_range(checked, iters / 2, iters); /* most iterations exercised the round trip */
    assert_int_equal(masked_checked, checked);
}

/* ---- PyTorch's microbatch.py (main, after pytorch/pytorch#164111) and the listed differences ---- */

/* Chunk count: the smallest of the requested count and every split size, as PyTorch's
   _shard_dict_of_args (min over split_sizes). PyTorch before #164111 lowered the count only
   at the first tensor and raised for (f32[4], f32[2]) into 3 chunks. */
static void test_split_downsize_smallest_as_torch(void **state)
{
    float a[4] = {0, 1, 2, 3}, b[2] = {4, 5};
    mb_value args[2];
    int n;
    (void)state;
    tv(&args[0], a, MB_F32, 1, SHP(4));
    tv(&args[1], b, MB_F32, 1, SHP(2));
    n = split_rc(args, NULL, 2, 3, MB_DOWNSIZE, 8, NULL);
    assert_int_equal(n, 2);
    assert_int_equal(split_out[0].tensor.shape[0], 2); /* tensor_split(4, 2): 2, 2 */
    assert_int_equal(split_out[1].tensor.shape[0], 1);
    assert_int_equal(split_out[2].tensor.shape[0], 2);
    assert_int_equal(split_out[3].tensor.shape[0], 1);
}

static int never_called(mb_value *acc, const mb_value *chunk, void *user)
{
    (void)acc;
    (void)chunk;
    (void)user;
    fail();
    return MB_ERR_SPEC;
}

/* Zero chunks: only values that are not split can make zero chunks (torch returns ([], [])); a
   split tensor needs sections > 0 (torch.tensor_split raises). Merging zero chunks gives a
   custom reducer's init, and sum_reducer's tensor(0.0) as zeros; concat and replicate fail. */
static void test_zero_chunks_as_torch(void **state)
{
    float x[2] = {1, 2}, y[2] = {7, 7}, init[2] = {3, 4}, zero0 = 0.5f;
    mb_value args[2], out;
    mb_spec rep = MB_REPLICATE, sum = MB_REDUCE(MB_RED_SUM), mean = MB_REDUCE(MB_RED_MEAN), cat = MB_CONCAT(0);
    mb_reducer red;
    mb_spec custom = MB_REDUCE_CUSTOM(&red);
    size_t bytes = 99;
    (void)state;
    sv(&args[0], 2.5);
    tv(&args[1], x, MB_F32, 1, SHP(2));
    assert_int_equal(split_rc(args, NULL, 1, 0, MB_BALANCED, 4, NULL), 0);
    assert_int_equal(split_rc(args, NULL, 1, -3, MB_BALANCED, 4, NULL), 0);
    assert_int_equal(split_rc(args, NULL, 0, 0, MB_BALANCED, 4, NULL), 0);
    assert_int_equal(split_rc(&args[1], &rep, 1, 0, MB_BALANCED, 4, NULL), 0);
    assert_int_equal(mb_split_masked_bytes(args, NULL, 1, 0, MB_BALANCED, &bytes), 0);
    assert_int_equal(bytes, 0);
    split_err(args, NULL, 2, 0, MB_BALANCED, 4, MB_ERR_CHUNKS, NULL);
    split_err(&args[1], NULL, 1, -1, MB_CEIL, 4, MB_ERR_CHUNKS, NULL);

    tv(&out, y, MB_F32, 1, SHP(2));
    assert_int_equal(mb_merge(NULL, 0, 1, &sum, 0, &out), MB_OK);
    assert_true(y[0] == 0.0f && y[1] == 0.0f && !signbit(y[0]));
    memset(&red, 0, sizeof red);
    y[0] = y[1] = 7;
    red.fn = never_called;
    tv(&red.init, init, MB_F32, 1, SHP(2));
    assert_int_equal(mb_merge(NULL, 0, 1, &custom, 0, &out), MB_OK);
    assert_true(y[0] == 3.0f && y[1] == 4.0f);
    tv(&red.init, &zero0, MB_F32, 0, NULL); /* a 0-d init fills the output */
    assert_int_equal(mb_merge(NULL, 0, 1, &custom, 0, &out), MB_OK);
    assert_true(y[0] == 0.5f && y[1] == 0.5f);
    y[0] = y[1] = 7;
    merge_err(NULL, 0, 1, &cat, 0, &out, y, sizeof y, MB_ERR_CHUNKS);
    merge_err(NULL, 0, 1, &rep, 0, &out, y, sizeof y, MB_ERR_CHUNKS);
    merge_err(NULL, 0, 1, &mean, 0, &out, y, sizeof y, MB_ERR_CHUNKS);
    merge_err(NULL, 0, 1, NULL, 0, &out, y, sizeof y, MB_ERR_CHUNKS);
    merge_err(args, -1, 1, &sum, 0, &out, y, sizeof y, MB_ERR_CHUNKS);
    sv(&out, 9.0); /* a scalar output: sum of nothing is 0.0 */
    assert_int_equal(mb_merge(NULL, 0, 1, &sum, 0, &out), MB_OK);
    assert_true(out.scalar == 0.0);
}

/* A custom reducer whose output is one of the chunks: init would be copied over that chunk
   before fn reads it (chunks [1,2] [3,4] [5,6], init [0,0], add, output = chunk 0 gave
   [8,10]). Refused with MB_ERR_OVERLAP, nothing written; into its own output the fold is
   [9,12], from a 0-d init broadcast (torch's tensor(0.0)) or a scalar init too. */
static int add_f32(mb_value *acc, const mb_value *chunk, void *user)
{
    float *a = (float *)acc->tensor.data;
    const float *b = (const float *)chunk->tensor.data;
    (void)user;
    a[0] += b[0];
    a[1] += b[1];
    return MB_OK;
}
static void test_merge_custom_reducer_output_is_a_chunk(void **state)
{
    float c[3][2] = {{1, 2}, {3, 4}, {5, 6}}, init[2] = {0, 0}, init0 = 0.0f, y[2] = {-1, -1};
    mb_value ch[3], out;
    mb_reducer red;
    mb_spec spec = MB_REDUCE_CUSTOM(&red);
    int k;
    (void)state;
    for (k = 0; k < 3; k++) tv(&ch[k], c[k], MB_F32, 1, SHP(2));
    memset(&red, 0, sizeof red);
    red.fn = add_f32;
    tv(&red.init, init, MB_F32, 1, SHP(2));
    for (k = 0; k < 3; k++) {
        out = ch[k];
        merge_err(ch, 3, 1, &spec, 0, &out, c, sizeof c, MB_ERR_OVERLAP);
    }
    assert_true(c[0][0] == 1 && c[0][1] == 2 && c[2][1] == 6);
    tv(&out, y, MB_F32, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_OK);
    assert_true(y[0] == 9 && y[1] == 12);
    tv(&red.init, &init0, MB_F32, 0, NULL);
    y[0] = y[1] = -1;
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_OK);
    assert_true(y[0] == 9 && y[1] == 12);
    sv(&red.init, 1.0);
    assert_int_equal(mb_merge(ch, 3, 1, &spec, 0, &out), MB_OK);
    assert_true(y[0] == 10 && y[1] == 13);
    /* a tensor init for scalar values, or a bad init kind */
    tv(&red.init, &init0, MB_F32, 0, NULL);
    sv(&ch[0], 1.0);
    sv(&ch[1], 2.0);
    sv(&out, 0.0);
    merge_err(ch, 2, 1, &spec, 0, &out, NULL, 0, MB_ERR_SPEC);
    red.init.kind = 7;
    tv(&ch[0], c[0], MB_F32, 1, SHP(2));
    tv(&ch[1], c[1], MB_F32, 1, SHP(2));
    tv(&out, y, MB_F32, 1, SHP(2));
    merge_err(ch, 2, 1, &spec, 0, &out, y, sizeof y, MB_ERR_SPEC);
}

/* sum_reducer: tensor(0.0) + each chunk in order. Integer chunks give float32 (int8 [100] +
   [100] is 200.0), a float64 chunk float64; -0.0 becomes 0.0. mean is that sum over the count.
   An integer sum may also go to the chunks' promoted integer dtype, wrapping (splitcore's own). */
static void test_merge_sum_dtype_as_sum_reducer(void **state)
{
    int8_t a[1] = {100}, b[1] = {100}, y8[1] = {5};
    int16_t y16[1] = {5};
    float yf[1] = {5}, nz[1] = {-0.0f}, f1[2] = {1.5f, 2}, one = 1.0f;
    double yd[1] = {5}, d1[1] = {0.25};
    int32_t i1[2] = {1, 2}, i2[2] = {4, 7};
    mb_value ch[2], out;
    mb_spec sum = MB_REDUCE(MB_RED_SUM), mean = MB_REDUCE(MB_RED_MEAN);
    (void)state;
    tv(&ch[0], a, MB_I8, 1, SHP(1));
    tv(&ch[1], b, MB_I8, 1, SHP(1));
    tv(&out, yf, MB_F32, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_true(yf[0] == 200.0f);
    assert_int_equal(mb_merge(ch, 2, 1, &mean, 0, &out), MB_OK);
    assert_true(yf[0] == 100.0f);
    tv(&out, y8, MB_I8, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_int_equal(y8[0], -56); /* wraps in int8 */
    merge_err(ch, 2, 1, &mean, 0, &out, y8, sizeof y8, MB_ERR_DTYPE);
    tv(&out, y16, MB_I16, 1, SHP(1));
    merge_err(ch, 2, 1, &sum, 0, &out, y16, sizeof y16, MB_ERR_DTYPE);
    tv(&out, yd, MB_F64, 1, SHP(1));
    merge_err(ch, 2, 1, &sum, 0, &out, yd, sizeof yd, MB_ERR_DTYPE);
    /* -0.0 alone: 0.0 + -0.0 */
    tv(&ch[0], nz, MB_F32, 1, SHP(1));
    tv(&out, yf, MB_F32, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 1, 1, &sum, 0, &out), MB_OK);
    assert_true(yf[0] == 0.0f && !signbit(yf[0]));
    out = ch[0]; /* in place too */
    assert_int_equal(mb_merge(ch, 1, 1, &sum, 0, &out), MB_OK);
    assert_true(!signbit(nz[0]));
    /* float32 with float64: float64 */
    tv(&ch[0], &one, MB_F32, 1, SHP(1));
    tv(&ch[1], d1, MB_F64, 1, SHP(1));
    tv(&out, yd, MB_F64, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_true(yd[0] == 1.25);
    tv(&out, yf, MB_F32, 1, SHP(1));
    merge_err(ch, 2, 1, &sum, 0, &out, yf, sizeof yf, MB_ERR_DTYPE);
    /* int32 chunks, mean into float32 */
    tv(&ch[0], i1, MB_I32, 1, SHP(2));
    tv(&ch[1], i2, MB_I32, 1, SHP(2));
    tv(&out, f1, MB_F32, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 2, 1, &mean, 0, &out), MB_OK);
    assert_true(f1[0] == 2.5f && f1[1] == 4.5f);
}

/* torch.cat promotes: int8 with uint8 is int16, int32 with float32 float32; the output must
   be that dtype. max / min likewise (torch.maximum's dtype). */
static void test_merge_concat_promotes(void **state)
{
    int8_t a[2] = {-1, 2};
    uint8_t b[1] = {200};
    int16_t y[3] = {0, 0, 0};
    int8_t y8[3] = {0, 0, 0};
    int32_t i[1] = {16777217};
    float f[1] = {0.5f}, yf[2];
    mb_value ch[2], out;
    mb_spec cat = MB_CONCAT(0), mx = MB_REDUCE(MB_RED_MAX);
    (void)state;
    tv(&ch[0], a, MB_I8, 1, SHP(2));
    tv(&ch[1], b, MB_U8, 1, SHP(1));
    tv(&out, y, MB_I16, 1, SHP(3));
    assert_int_equal(mb_merge(ch, 2, 1, &cat, 0, &out), MB_OK);
    assert_true(y[0] == -1 && y[1] == 2 && y[2] == 200);
    tv(&out, y8, MB_I8, 1, SHP(3));
    merge_err(ch, 2, 1, &cat, 0, &out, y8, sizeof y8, MB_ERR_DTYPE);
    tv(&ch[0], i, MB_I32, 1, SHP(1));
    tv(&ch[1], f, MB_F32, 1, SHP(1));
    tv(&out, yf, MB_F32, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 2, 1, &cat, 0, &out), MB_OK);
    assert_true(yf[0] == 16777216.0f && yf[1] == 0.5f); /* the int32 rounds to float32, as torch */
    tv(&out, yf, MB_F32, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 2, 1, &mx, 0, &out), MB_OK);
    assert_true(yf[0] == 16777216.0f);
}

/* mb_merge_shape gives the output mb_merge accepts: merged into exactly that many bytes
   (numel * dtype size) it succeeds and writes nothing past them; a tensor one element
   shorter on the concat dim, or of another dtype, is refused by mb_merge. */
static void test_merge_shape_query_exact(void **state)
{
    int8_t a[4] = {-1, 2, 3, 4};
    uint8_t b[2] = {200, 7};
    float f[6] = {1, 2, 3, 4, 5, 6}, g[6] = {6, 5, 4, 3, 2, 1};
    double d = 2.5, e = 4.0;
    unsigned char buf[64 + 8];
    mb_value ch[2 * 3], out[3], before[3], o, pair[2];
    mb_spec sp[3] = {MB_CONCAT(1), MB_REDUCE(MB_RED_SUM), MB_REDUCE(MB_RED_MAX)};
    size_t bytes;
    int i;
    (void)state;
    tv(&ch[0], a, MB_I8, 2, SHP(2, 2));
    tv(&ch[3], b, MB_U8, 2, SHP(2, 1));
    tv(&ch[1], f, MB_F32, 2, SHP(3, 2));
    tv(&ch[4], g, MB_F32, 2, SHP(3, 2));
    memset(&ch[2], 0, sizeof ch[2]);
    ch[2].kind = MB_VALUE_SCALAR;
    ch[2].scalar = d;
    ch[5] = ch[2];
    ch[5].scalar = e;
    assert_int_equal(mb_merge_shape(ch, 2, 3, sp, 0, out), MB_OK);
    assert_int_equal(out[0].kind, MB_VALUE_TENSOR); /* cat of int8 and uint8 on dim 1: int16 (2, 3) */
    assert_int_equal(out[0].tensor.dtype, MB_I16);
    assert_int_equal(out[0].tensor.ndim, 2);
    assert_int_equal(out[0].tensor.shape[0], 2);
    assert_int_equal(out[0].tensor.shape[1], 3);
    assert_null(out[0].tensor.data);
    assert_int_equal(out[1].tensor.dtype, MB_F32); /* sum of float32 chunks: (3, 2) float32 */
    assert_int_equal(out[1].tensor.shape[0], 3);
    assert_int_equal(out[2].kind, MB_VALUE_SCALAR);
    for (i = 0; i < 2; i++) { /* each tensor output in exactly its bytes, a sentinel after it */
        bytes = (size_t)mb_numel(&out[i].tensor) * mb_dtype_size(out[i].tensor.dtype);
        assert_int_equal(bytes, i ? 24 : 12);
        memset(buf, SENT, sizeof buf);
        o = out[i];
        o.tensor.data = buf;
        pair[0] = ch[i]; /* value i of both chunks, merged alone */
        pair[1] = ch[3 + i];
        assert_int_equal(mb_merge(pair, 2, 1, &sp[i], 0, &o), MB_OK);
        assert_int_equal(buf[bytes], 0xA5);
        assert_int_equal(buf[bytes - 1] == 0xA5 && buf[bytes - 2] == 0xA5, 0);
        o.tensor.dtype = MB_F64; /* any other dtype is not torch's */
        assert_int_equal(mb_merge(pair, 2, 1, &sp[i], 0, &o), MB_ERR_DTYPE);
    }
    o = out[0];
    o.tensor.data = buf;
    o.tensor.shape[1] = 2; /* one element short on the concat dim */
    pair[0] = ch[0];
    pair[1] = ch[3];
    assert_int_equal(mb_merge(pair, 2, 1, sp, 0, &o), MB_ERR_SHAPE);
    /* errors leave out untouched: no chunks, a bad spec */
    memcpy(before, out, sizeof out);
    assert_int_equal(mb_merge_shape(ch, 0, 3, sp, 0, out), MB_ERR_CHUNKS);
    sp[2].kind = 9;
    assert_int_equal(mb_merge_shape(ch, 2, 3, sp, 0, out), MB_ERR_SPEC);
    assert_int_equal(mb_merge_shape(NULL, 2, 3, sp, 0, out), MB_ERR_NULL);
    assert_memory_equal(out, before, sizeof out);
}

/* REPLICATE compares values as ==: 0.0 equals -0.0 (the output is chunk 0's bits), NaN equals
   nothing, an int32 3 equals a float32 3.0. Several elements are compared one by one (torch
   raises "Boolean value of Tensor with more than one value is ambiguous"). */
static void test_merge_replicate_by_value(void **state)
{
    float z[2] = {-0.0f, 1}, pz[2] = {0.0f, 1}, nan1[1] = {NAN}, nan2[1] = {NAN}, y[2] = {5, 5}, three = 3.0f;
    int32_t i3 = 3, yi = 0;
    mb_value ch[2], out;
    mb_spec rep = MB_REPLICATE;
    (void)state;
    tv(&ch[0], z, MB_F32, 1, SHP(2));
    tv(&ch[1], pz, MB_F32, 1, SHP(2));
    tv(&out, y, MB_F32, 1, SHP(2));
    assert_int_equal(mb_merge(ch, 2, 1, &rep, 0, &out), MB_OK);
    assert_true(y[0] == 0.0f && signbit(y[0]) && y[1] == 1);
    out = ch[1]; /* onto the other replica: chunk 0's bits */
    assert_int_equal(mb_merge(ch, 2, 1, &rep, 0, &out), MB_OK);
    assert_true(signbit(pz[0]));
    tv(&ch[0], nan1, MB_F32, 1, SHP(1));
    tv(&ch[1], nan2, MB_F32, 1, SHP(1));
    tv(&out, y, MB_F32, 1, SHP(1));
    merge_err(ch, 2, 1, &rep, 0, &out, y, sizeof y, MB_ERR_NOT_REPLICATED);
    assert_int_equal(mb_merge(ch, 1, 1, &rep, 0, &out), MB_OK); /* one chunk: nothing compared */
    assert_true(isnan(y[0]));
    sv(&ch[0], NAN);
    sv(&ch[1], NAN);
    sv(&out, 0);
    merge_err(ch, 2, 1, &rep, 0, &out, NULL, 0, MB_ERR_NOT_REPLICATED);
    tv(&ch[0], &i3, MB_I32, 0, NULL);
    tv(&ch[1], &three, MB_F32, 0, NULL);
    tv(&out, &yi, MB_I32, 0, NULL);
    assert_int_equal(mb_merge(ch, 2, 1, &rep, 0, &out), MB_OK);
    assert_int_equal(yi, 3);
}

/* The differences README lists, pinned: splitcore computes in double what torch rounds to
   float32; a scalar sum is a double; a reduce into chunk j > 0 counts that chunk first; torch.cat
   skips 1-D empty tensors, splitcore wants one rank. */
static void test_merge_listed_differences(void **state)
{
    int32_t big[1] = {16777217}, one[1] = {1}, bi[1] = {16777217};
    float yf[1], f1[1] = {1}, tiny[1] = {0x1p-30f}, fbig[1] = {16777216.0f}, c3[3][1] = {{1e8f}, {1}, {-1e8f}};
    double z[1] = {0}, yd[1];
    float m[2][3] = {{1, 2, 3}, {4, 5, 6}}, e1[1], y6[6];
    mb_value ch[3], out;
    mb_spec sum = MB_REDUCE(MB_RED_SUM), rep = MB_REPLICATE, cat = MB_CONCAT(0);
    int k;
    (void)state;
    /* int32 above 2^24 into float32: torch rounds 16777217 to 16777216 before adding it to 1 */
    tv(&ch[0], one, MB_I32, 1, SHP(1));
    tv(&ch[1], big, MB_I32, 1, SHP(1));
    tv(&out, yf, MB_F32, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_true(yf[0] == 16777218.0f); /* torch: 16777216 */
    /* float32 chunks before a float64 one: torch sums them in float32 (1 + 2^-30 == 1) */
    tv(&ch[0], f1, MB_F32, 1, SHP(1));
    tv(&ch[1], tiny, MB_F32, 1, SHP(1));
    tv(&ch[2], z, MB_F64, 1, SHP(1));
    tv(&out, yd, MB_F64, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_true(yd[0] == 1.0 + 0x1p-30); /* torch: 1.0 */
    /* == in the promoted float32: torch finds int32 16777217 equal to float32 16777216 */
    tv(&ch[0], bi, MB_I32, 1, SHP(1));
    tv(&ch[1], fbig, MB_F32, 1, SHP(1));
    merge_err(ch, 2, 1, &rep, 0, &out, NULL, 0, MB_ERR_NOT_REPLICATED);
    /* scalars sum in double: torch's tensor(0.0) + 0.1 + 0.2 is float32 0.3000000119 */
    sv(&ch[0], 0.1);
    sv(&ch[1], 0.2);
    sv(&out, 0);
    assert_int_equal(mb_merge(ch, 2, 1, &sum, 0, &out), MB_OK);
    assert_true(out.scalar == 0.1 + 0.2);
    /* in place into chunk 2: -1e8 + 1e8 + 1 = 1; torch's order (1e8 + 1) - 1e8 = 0 in float32 */
    for (k = 0; k < 3; k++) tv(&ch[k], c3[k], MB_F32, 1, SHP(1));
    tv(&out, yf, MB_F32, 1, SHP(1));
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_true(yf[0] == 0.0f);
    out = ch[2];
    assert_int_equal(mb_merge(ch, 3, 1, &sum, 0, &out), MB_OK);
    assert_true(c3[2][0] == 1.0f);
    /* torch.cat([x (2,3), empty (0,)]) is x; splitcore: ranks differ */
    tv(&ch[0], m, MB_F32, 2, SHP(2, 3));
    tv(&ch[1], e1, MB_F32, 1, SHP(0));
    tv(&out, y6, MB_F32, 2, SHP(2, 3));
    merge_err(ch, 2, 1, &cat, 0, &out, y6, sizeof y6, MB_ERR_SHAPE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_size),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_tensor_init_strides),
        cmocka_unit_test(test_tensor_init_stride_limit),
        cmocka_unit_test(test_tensor_check),
        cmocka_unit_test(test_is_contiguous),
        cmocka_unit_test(test_is_contiguous_empty_any_strides),
        cmocka_unit_test(test_normalize_dim),
        cmocka_unit_test(test_narrow_view),
        cmocka_unit_test(test_copy_transpose_all_dtypes),
        cmocka_unit_test(test_zero_strided_view),
        cmocka_unit_test(test_split_sizes_exact),
        cmocka_unit_test(test_split_sizes_match_torch),
        cmocka_unit_test(test_split_default_specs_zero_copy),
        cmocka_unit_test(test_split_dim1_and_negative),
        cmocka_unit_test(test_split_replicate_tensor),
        cmocka_unit_test(test_split_spec_errors_untouched),
        cmocka_unit_test(test_split_downsize),
        cmocka_unit_test(test_split_strict),
        cmocka_unit_test(test_split_keep_count),
        cmocka_unit_test(test_split_ceil),
        cmocka_unit_test(test_split_chunks_nonpositive),
        cmocka_unit_test(test_split_out_too_small),
        cmocka_unit_test(test_split_pytorch_cases),
        cmocka_unit_test(test_masked_bytes),
        cmocka_unit_test(test_masked_split_content),
        cmocka_unit_test(test_masked_errors),
        cmocka_unit_test(test_masked_merge_roundtrip),
        cmocka_unit_test(test_merge_concat_dim0),
        cmocka_unit_test(test_merge_shape_query_exact),
        cmocka_unit_test(test_merge_concat_dim1),
        cmocka_unit_test(test_merge_default_specs_mixed),
        cmocka_unit_test(test_merge_zero_copy_in_place),
        cmocka_unit_test(test_merge_reduce_tensors),
        cmocka_unit_test(test_merge_reduce_scalars),
        cmocka_unit_test(test_merge_mean_integer_dtype),
        cmocka_unit_test(test_merge_custom_reducer),
        cmocka_unit_test(test_merge_replicate),
        cmocka_unit_test(test_merge_errors_untouched),
        cmocka_unit_test(test_merge_reduce_unknown_op),
        cmocka_unit_test(test_merge_atomic_later_value_fails),
        cmocka_unit_test(test_merge_reduce_into_a_chunk),
        cmocka_unit_test(test_property_split_merge_identity),
        cmocka_unit_test(test_integer_reduce_wraps),
        cmocka_unit_test(test_max_min_nan_propagates),
        cmocka_unit_test(test_split_downsize_smallest_as_torch),
        cmocka_unit_test(test_zero_chunks_as_torch),
        cmocka_unit_test(test_merge_custom_reducer_output_is_a_chunk),
        cmocka_unit_test(test_merge_sum_dtype_as_sum_reducer),
        cmocka_unit_test(test_merge_concat_promotes),
        cmocka_unit_test(test_merge_replicate_by_value),
        cmocka_unit_test(test_merge_listed_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
