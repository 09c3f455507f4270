/* microbatch.h — tensor views, microbatch split and merge (splitcore)

   splitcore brings torch.distributed.pipelining's microbatching to microcontrollers.
   This header gives strided tensor views (the type pipeline.h and dtensor.h reuse),
   splits an argument list into microbatches exactly as torch does (tensor_split or
   chunk sizes, TensorChunkSpec / Replicate per value, debug-mask mode) and merges
   per-microbatch outputs back (concat, sum/mean/max/min, custom reducer, replicate).
   Splitting never copies tensor data: chunks are views into the input. Merging into
   the output that the chunks already view copies nothing. No heap, C99, C++-clean.

   Example:
       #define MICROBATCH_IMPLEMENTATION
       #include <splitcore/microbatch.h>
       float x[8][4], y[8][2];  int32_t xs[2] = {8, 4}, ys[2] = {8, 2};
       mb_value in[1], chunk[4 * 1], outs[4 * 1], merged[1];
       mb_tensor_init(&in[0].tensor, x, MB_F32, 2, xs);        in[0].kind = MB_VALUE_TENSOR;
       int n = mb_split(in, NULL, 1, 4, MB_BALANCED, chunk, 4, NULL);  // 4 views of 2 rows
       for (int c = 0; c < n; c++) my_layer(&chunk[c].tensor, &outs[c].tensor);
       mb_tensor_init(&merged[0].tensor, y, MB_F32, 2, ys);    merged[0].kind = MB_VALUE_TENSOR;
       int rc = mb_merge(outs, n, 1, NULL, 0, merged);        // concat on dim 0 into y

   Contents:
       1. Configuration macros          4. Split (arguments → microbatches)
       2. Types, error codes            5. Merge (microbatch outputs → one value)
       3. Tensor views                  6. Implementation (MICROBATCH_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE):
       MICROBATCH_IMPLEMENTATION  emit the definitions (exactly one .c file; or
                                  SPLITCORE_IMPLEMENTATION, which implements every header)
       MICROBATCH_STATIC          make every function static to its translation unit
       SPLITCORE_CONFIG_FILE      "file.h" included first by every splitcore header
       MB_MAX_DIMS                maximum tensor rank (default 6)
       MB_ASSERT(x)               internal invariant check (default: none)
       MB_MEMCPY(d,s,n), MB_MEMSET(d,v,n)   default: memcpy / memset

   Errors are negative return values, MB_ERR_* -1..-29 (enum mb_err, listed in
   splitcore_base.h); mb_strerror() names them, splitcore_strerror() any code. Bad input
   never writes to the caller's outputs (docs/error-contract.md lists every case).

   Threads, interrupts, memory: every function works only on its arguments (no static or
   global state, no locks, no heap, no libc beyond memcpy/memmove/memcmp/memset), so calls on distinct
   objects are safe from any thread or ISR; calls that write the same object need the
   caller's exclusion. Stack use is bounded (no recursion; the worst frame of every
   function on Cortex-M4 is in `scons size`'s stack table); the only other memory is what
   the caller passes (views, output arrays, debug-mask storage sized by
   mb_split_masked_bytes, merge outputs sized by mb_merge_shape). A custom reducer runs in the caller's context. */
#ifndef MICROBATCH_H
#define MICROBATCH_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "splitcore_base.h"
#if SPLITCORE_VERSION != 200
#error "microbatch.h: splitcore headers of different releases are included together"
#endif
#include <stddef.h>
#include <stdint.h>

#if defined(SPLITCORE_IMPLEMENTATION) && !defined(MICROBATCH_IMPLEMENTATION)
#define MICROBATCH_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(MICROBATCH_STATIC)
#define MICROBATCH_STATIC
#endif
#ifndef MB_MAX_DIMS
#define MB_MAX_DIMS 6 /* largest tensor rank: 6 int32 sizes and strides per view */
#endif
#if MB_MAX_DIMS < 1 || MB_MAX_DIMS > 16
#error "MB_MAX_DIMS must be 1..16"
#endif
#ifndef MB_MEMCPY
#define MB_MEMCPY(d, s, n) memcpy((d), (s), (n)) /* every tensor data copy (tests count them) */
#endif
#ifndef MB_MEMSET
#define MB_MEMSET(d, v, n) memset((d), (v), (n))
#endif
#ifndef MB_ASSERT
#define MB_ASSERT(x) ((void)0) /* internal invariants only; bad input is an error value */
#endif
#ifdef MICROBATCH_STATIC
#define MB_API static
#else
#define MB_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Types and error codes ---------------------------------------------------- */
typedef enum mb_dtype { MB_F32, MB_F64, MB_I8, MB_U8, MB_I16, MB_I32, MB_DTYPE_COUNT } mb_dtype;

/* Error codes -1..-29: MB_ERRORS in splitcore_base.h lists them (name, value, message). */
enum mb_err { MB_ERRORS(SPLITCORE__ENUM) MB_OK = 0 };

typedef struct mb_tensor {
    void *data; /* element [0,..,0] */
    mb_dtype dtype;
    int32_t ndim; /* 0 (a scalar tensor) .. MB_MAX_DIMS */
    int32_t shape[MB_MAX_DIMS];
    int32_t stride[MB_MAX_DIMS]; /* in elements, may be any value >= 0 */
} mb_tensor;

enum mb_value_kind { MB_VALUE_TENSOR = 0, MB_VALUE_SCALAR = 1 };

/* One entry of a flattened argument list (C's pytree leaves). */
typedef struct mb_value {
    int32_t kind; /* MB_VALUE_TENSOR or MB_VALUE_SCALAR */
    double scalar;
    mb_tensor tensor;
} mb_value;

/* Custom reducer (PyTorch's _CustomReducer): out = init; for each chunk out = fn(out, chunk).
   For tensors `acc` is the caller's output tensor, init a tensor of its shape, a 0-d tensor
   (torch's tensor(0.0)) or a scalar, broadcast and converted into it; return < 0 to fail
   (that code is returned). */
typedef struct mb_reducer {
    int (*fn)(mb_value *acc, const mb_value *chunk, void *user);
    mb_value init;
    void *user;
} mb_reducer;

enum mb_spec_kind { MB_SPEC_DEFAULT = 0, MB_SPEC_SPLIT, MB_SPEC_REPLICATE, MB_SPEC_REDUCE };
enum mb_reduce_op { MB_RED_SUM = 0, MB_RED_MEAN, MB_RED_MAX, MB_RED_MIN, MB_RED_CUSTOM };

/* Per-value spec. Split: SPLIT(dim) or REPLICATE; DEFAULT = SPLIT(0) for tensors,
   REPLICATE for scalars (torch's default_spec; SPLIT on a scalar is MB_ERR_SPEC, as torch's
   ValueError). Merge: SPLIT(dim) means concat on dim; REDUCE(op); REPLICATE; DEFAULT =
   CONCAT(0), as merge_chunks without a spec: for a scalar that is MB_ERR_SPEC (torch.cat of
   floats raises). */
typedef struct mb_spec {
    int32_t kind;
    int32_t dim;               /* SPLIT/CONCAT; negative dims count from the end */
    int32_t op;                /* REDUCE: enum mb_reduce_op */
    const mb_reducer *reducer; /* REDUCE with MB_RED_CUSTOM */
} mb_spec;

/* clang-format off */
#define MB_SPLIT(d)     { MB_SPEC_SPLIT, (d), 0, 0 }
#define MB_CONCAT(d)    { MB_SPEC_SPLIT, (d), 0, 0 }
#define MB_REPLICATE    { MB_SPEC_REPLICATE, 0, 0, 0 }
#define MB_REDUCE(op)   { MB_SPEC_REDUCE, 0, (op), 0 }
#define MB_REDUCE_CUSTOM(r) { MB_SPEC_REDUCE, 0, MB_RED_CUSTOM, (r) }
/* clang-format on */

/* Split flags (OR one size policy with one count policy). */
#define MB_BALANCED   0 /* sizes of torch.tensor_split: 10 into 3 -> 4,3,3 */
#define MB_CEIL       1 /* sizes of torch.chunk: ceil(n/k) each, may give fewer chunks */
#define MB_DOWNSIZE   0 /* split dim < count: count = smallest split dim over all values (torch) */
#define MB_STRICT     2 /* split dim < count: MB_ERR_SPLIT_SIZE, named in mb_diag */
#define MB_KEEP_COUNT 4 /* split dim < count: keep the count, trailing chunks empty */
#define MB_DEBUG_MASK 8 /* merge: chunks are full-size masked tensors (mb_split_masked) */

/* Where an argument-list call failed: the value index, its split-dim size, the count. */
typedef struct mb_diag {
    int32_t value_index;
    int32_t size;
    int32_t requested;
} mb_diag;

/* The name of an mb_err code; "unknown error" for any other value (never NULL). */
MB_API const char *mb_strerror(int err);
/* Bytes per element of dt: 4, 8, 1, 1, 2, 4; 0 for an unknown dtype. */
MB_API size_t mb_dtype_size(mb_dtype dt);

/* ---- 3. Tensor views ------------------------------------------------------------- */
/* Contiguous (row-major) view of `data`: t's shape, strides, dtype. data may be NULL to
   size a view before its storage exists (mb_numel(t) * mb_dtype_size(dt) bytes; set t.data
   then): every call that reads or writes elements refuses a non-empty view without data
   (MB_ERR_NULL). Errors: MB_ERR_NULL (t, or shape with ndim > 0), MB_ERR_NDIM, MB_ERR_DTYPE,
   MB_ERR_SHAPE (negative or too large sizes). */
MB_API int mb_tensor_init(mb_tensor *t, void *data, mb_dtype dt, int ndim, const int32_t *shape);
/* Validate a view (dtype, ndim, sizes >= 0, strides >= 0, extent). Errors: MB_ERR_NULL,
   MB_ERR_NDIM, MB_ERR_DTYPE, MB_ERR_SHAPE. */
MB_API int mb_tensor_check(const mb_tensor *t);
/* Number of elements (1 for ndim 0); < 0 (MB_ERR_NULL, MB_ERR_NDIM, MB_ERR_SHAPE) on bad input. */
MB_API int64_t mb_numel(const mb_tensor *t);
/* Number of elements of a tensor of shape[0..ndim) (1 for ndim 0): the numel every splitcore
   header counts with; < 0 (MB_ERR_NULL, MB_ERR_NDIM, MB_ERR_SHAPE) on bad input. */
MB_API int64_t mb_shape_numel(const int32_t *shape, int ndim);
/* 1 when row-major contiguous (size-1 dims ignored), 0 when not, MB_ERR_NULL. */
MB_API int mb_is_contiguous(const mb_tensor *t);
/* dim in [-ndim, ndim) -> [0, ndim); otherwise MB_ERR_DIM (any ndim < 0 included). */
MB_API int mb_normalize_dim(int dim, int ndim);
/* out = t[..., start:start+length, ...] along dim, a view (no copy; dim may be negative).
   Errors: MB_ERR_NULL, MB_ERR_SHAPE (t invalid), MB_ERR_DIM, MB_ERR_RANGE. */
MB_API int mb_narrow(const mb_tensor *t, int dim, int32_t start, int32_t length, mb_tensor *out);
/* Copy elements between two views of equal shape and dtype, any strides. An element that
   dst and src share is left alone (a copy onto the same view moves nothing); views that
   overlap in other ways give an undefined result. Errors: MB_ERR_NULL, MB_ERR_DTYPE,
   MB_ERR_SHAPE (invalid views or shapes differ). */
MB_API int mb_copy(mb_tensor *dst, const mb_tensor *src);
/* Set every element of the view to zero (any strides). Errors: MB_ERR_NULL, MB_ERR_SHAPE. */
MB_API int mb_zero(mb_tensor *t);
/* A visitor of mb_walk: a and b point at the two views' elements at index[0..ndim).
   Return 0 to go on; any other value stops the walk and mb_walk returns it. */
typedef int (*mb_visitor)(void *user, void *a, void *b, const int32_t *index);
/* The strided element walk every splitcore header shares: fn(user, &a[i], &b[i], i) for
   every index i of a in row-major order, b a view of a's shape (any dtype and strides;
   NULL: a itself). Errors: MB_ERR_NULL (a or fn), MB_ERR_SHAPE (invalid views or shapes
   differ), or the visitor's own value. */
MB_API int mb_walk(const mb_tensor *a, const mb_tensor *b, mb_visitor fn, void *user);

/* ---- 4. Split -------------------------------------------------------------------- */
/* Chunk sizes of `size` into `chunks` (MB_BALANCED or MB_CEIL in flags). Returns the chunk
   count (MB_CEIL may give fewer) or MB_ERR_CHUNKS (chunks <= 0), MB_ERR_SHAPE (size < 0),
   MB_ERR_TOO_SMALL (max_sizes too small); `sizes` may be NULL to only count. */
MB_API int mb_split_sizes(int32_t size, int chunks, int flags, int32_t *sizes, int max_sizes);

/* Split `nargs` values into microbatches. specs may be NULL (all DEFAULT). Writes
   out[c * nargs + i] for chunk c, value i: tensor views narrowed along the split dim, or
   the value itself for REPLICATE/scalars. Returns the chunk count produced (0 when chunks
   <= 0 and no value is split, as torch), or < 0 with `diag` (may be NULL) naming the value:
   MB_ERR_NULL, MB_ERR_CHUNKS (chunks <= 0 and a value to split), MB_ERR_SPEC,
   MB_ERR_DIM, MB_ERR_SPLIT_SIZE (MB_STRICT), MB_ERR_CHUNK_COUNT, MB_ERR_TOO_SMALL
   (max_chunks), or a view's own error. Nothing is written to `out` on error. */
MB_API int mb_split(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags, mb_value *out,
                    int max_chunks, mb_diag *diag);

/* Debug-mask mode (_debug_mask_minibatches): each SPLIT value's chunk is a full-size
   contiguous tensor, zero outside its own slice, written into `storage` (8-byte aligned
   pieces). mb_split_masked_bytes() gives the storage size needed in *bytes (errors as
   mb_split's); mb_split_masked() returns the chunk count, or mb_split's errors plus
   MB_ERR_TOO_SMALL (storage) and MB_ERR_ALIGN (storage not 8-byte aligned). */
MB_API int mb_split_masked_bytes(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags,
                                 size_t *bytes);
MB_API int mb_split_masked(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags, mb_value *out,
                           int max_chunks, void *storage, size_t storage_bytes, mb_diag *diag);

/* ---- 5. Merge -------------------------------------------------------------------- */
/* Merge chunks[c * nvals + i] (c < nchunks) into out[i] per specs (NULL: all DEFAULT), as
   torch's merge_chunks. Tensor outputs are caller views whose shape and dtype must be those
   of torch's result: concat, max and min give the chunks' promoted dtype (int8 with uint8:
   int16; an integer with float32: float32; converted by value), REPLICATE chunk 0's, SUM and
   MEAN sum_reducer's (tensor(0.0) + each chunk in order: float64 if a chunk is, else float32;
   a SUM of integers may instead go to their promoted integer dtype, wrapping). Sums are
   exact in double, rounded to the output after each chunk. REPLICATE compares values (==:
   0.0 equals -0.0, NaN equals nothing) and gives chunk 0. A chunk that already is the
   matching view of the output is not copied. Scalars are written to out[i].scalar (MAX, MIN,
   SUM, MEAN of scalars in double). flags: MB_DEBUG_MASK re-slices masked chunks (with
   MB_BALANCED/MB_CEIL as used to split). nchunks may be 0 (chunks may then be NULL): SUM
   gives zeros, a custom reducer its init, anything else MB_ERR_CHUNKS. A built-in REDUCE
   output may be one of the chunks (reduced in place; that chunk counts first); a custom
   reducer's may not (MB_ERR_OVERLAP); other overlaps of output and chunks are undefined.
   Errors: MB_ERR_NULL, MB_ERR_CHUNKS, MB_ERR_SPEC, MB_ERR_DIM, MB_ERR_DTYPE (the output's
   dtype is not torch's), MB_ERR_CHUNK_COUNT (MB_DEBUG_MASK: chunks do not match the split),
   MB_ERR_SHAPE (chunks or output do not fit), MB_ERR_NOT_REPLICATED, MB_ERR_OVERLAP, a custom
   reducer's own code. Nothing is written on error (a custom reducer's own failure aside). */
MB_API int mb_merge(const mb_value *chunks, int nchunks, int nvals, const mb_spec *specs, int flags, mb_value *out);
/* The outputs mb_merge accepts for these chunks (same arguments; nchunks >= 1): out[i].kind,
   and for a tensor the dtype, ndim and shape torch's merge gives, contiguous strides and NULL
   data; the caller attaches mb_numel(&out[i].tensor) * mb_dtype_size(dtype) bytes, exactly
   what the merge writes. A custom reducer's output takes its init's shape and dtype (a 0-d
   or scalar init: chunk 0's shape, and chunk 0's dtype for a scalar init); mb_merge accepts
   any dtype there. Errors as mb_merge's (nchunks 0: MB_ERR_CHUNKS, the output shape is the
   caller's then); nothing is written on error. */
MB_API int mb_merge_shape(const mb_value *chunks, int nchunks, int nvals, const mb_spec *specs, int flags,
                          mb_value *out);

#ifdef __cplusplus
}
#endif
#endif /* MICROBATCH_H */

/* ---- 6. Implementation ----------------------------------------------------------- */
#if defined(MICROBATCH_IMPLEMENTATION) && !defined(MICROBATCH_IMPLEMENTED)
#define MICROBATCH_IMPLEMENTED

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef MICROBATCH_STATIC
#define MB__DEF static
#else
#define MB__DEF
#endif
#if defined(__GNUC__) || defined(__clang__)
#define MB__NOINLINE __attribute__((noinline)) /* flash size: one copy of each helper */
#else
#define MB__NOINLINE
#endif

/* Flash size (issue #2 aims at <= 2 KB on Cortex-M4; `scons size` measures 3,671 B, README says
   where they go): views go
   by pointer and scalars take part as 0-d f64 views; one element walker (row index from its flat number) serves
   copy (per contiguous row, one memmove; an element copied onto itself is skipped, so chunks that view
   the output cost nothing), zero and mean (a broadcast 0-d source), compare and reduce
   (one load/store-as-double path), and the other headers' element walks (mb_walk's visitor); one slice-copy helper fills masked
   split chunks and concatenates merge chunks; split plans in two identical passes then writes; merge
   runs one per-value routine twice (validate everything, then write). */

MB__DEF const char *mb_strerror(int err)
{
    static const char msg[] = "ok\0" MB_ERRORS(SPLITCORE__MSG) "unknown error"; /* no pointer table in flash */
    return splitcore__message(msg, err, MB_ERR_BASE, MB__ERR_COUNT);
}

MB__DEF size_t mb_dtype_size(mb_dtype dt)
{
    static const unsigned char sz[MB_DTYPE_COUNT] = {4, 8, 1, 1, 2, 4};
    return ((unsigned)dt < (unsigned)MB_DTYPE_COUNT) ? sz[dt] : 0u;
}

MB__DEF int mb_normalize_dim(int dim, int ndim)
{
    unsigned u = (unsigned)dim + (dim < 0 ? (unsigned)ndim : 0u); /* unsigned: dim + ndim cannot overflow */
    return ndim >= 0 && u < (unsigned)ndim ? (int)u : MB_ERR_DIM;
}

MB__DEF int64_t mb_shape_numel(const int32_t *shape, int ndim)
{
    uint64_t n = 1; /* wraps instead of overflowing for views mb_tensor_check refuses */
    int d;
    if ((unsigned)ndim > MB_MAX_DIMS) return MB_ERR_NDIM;
    if (ndim && !shape) return MB_ERR_NULL;
    for (d = 0; d < ndim; d++) {
        if (shape[d] < 0) return MB_ERR_SHAPE;
        n *= (uint32_t)shape[d];
    }
    return (int64_t)n;
}

MB__DEF int64_t mb_numel(const mb_tensor *t)
{
    return t ? mb_shape_numel(t->shape, t->ndim) : (int64_t)MB_ERR_NULL;
}

MB__DEF int mb_tensor_check(const mb_tensor *t)
{
    int d;
    uint64_t n = 1, ext = 0;
    if (!t) return MB_ERR_NULL;
    if ((uint32_t)t->ndim > MB_MAX_DIMS) return MB_ERR_NDIM;
    if ((unsigned)t->dtype >= (unsigned)MB_DTYPE_COUNT) return MB_ERR_DTYPE;
    for (d = 0; d < t->ndim; d++) { /* a partial size product >= 2^32 is refused: numel < 2^63 */
        if ((t->shape[d] | t->stride[d]) < 0 || n >> 32) return MB_ERR_SHAPE;
        n *= (uint32_t)t->shape[d];
        /* the last element lies below 2^59 elements (2^62 bytes) from data: offsets of
           narrowed and walked views never overflow (same bound on every target) */
        if (t->shape[d]) ext += (uint64_t)(uint32_t)(t->shape[d] - 1) * (uint32_t)t->stride[d];
        if (ext >> 59) return MB_ERR_SHAPE;
    }
    return !t->data && n ? MB_ERR_NULL : MB_OK;
}

/* Row-major strides for t's shape (sizes >= 0), data at `data` (size-1 dims get their
   neighbour's stride); MB_ERR_SHAPE when a stride would not fit int32_t. */
static MB__NOINLINE int mb__restride(mb_tensor *t, void *data)
{
    int d;
    uint32_t st = 1, s; /* st <= INT32_MAX whenever it is stored */
    t->data = data;
    for (d = t->ndim; d-- > 0;) {
        t->stride[d] = (int32_t)st;
        s = t->shape[d] > 1 ? (uint32_t)t->shape[d] : 1u;
        if (d && st > (uint32_t)INT32_MAX / s) return MB_ERR_SHAPE; /* the next stride would not fit */
        st *= s;
    }
    return MB_OK;
}

/* out = t[..., start:start+len, ...], unchecked; out may be t. */
static MB__NOINLINE void mb__narrow(mb_tensor *out, const mb_tensor *t, int dim, int32_t start, int32_t len)
{
    memmove(out, t, sizeof *out);
    out->shape[dim] = len;
    if (len && out->data) /* a NULL view is empty (mb_tensor_check): no arithmetic on NULL */
        out->data = (char *)out->data + (size_t)start * (size_t)out->stride[dim] * mb_dtype_size(out->dtype);
}

MB__DEF int mb_tensor_init(mb_tensor *t, void *data, mb_dtype dt, int ndim, const int32_t *shape)
{
    mb_tensor v;
    int d;
    if (!t || (ndim > 0 && !shape)) return MB_ERR_NULL;
    if ((unsigned)ndim > MB_MAX_DIMS) return MB_ERR_NDIM;
    MB_MEMSET(&v, 0, sizeof v);
    v.dtype = dt;
    v.ndim = ndim;
    for (d = 0; d < ndim; d++) v.shape[d] = shape[d];
    d = mb__restride(&v, data ? data : &v); /* checked as if it had data: NULL only sizes it */
    if (!d) d = mb_tensor_check(&v);
    v.data = data;
    if (d == MB_OK) mb__narrow(t, &v, 0, 0, v.shape[0]); /* a plain copy (an out-of-line memmove) */
    return d;
}

MB__DEF int mb_is_contiguous(const mb_tensor *t)
{
    int d, rc = mb_tensor_check(t);
    size_t st = 1;
    if (rc) return rc;
    rc = 1;
    for (d = t->ndim; d-- > 0;) {
        if (!t->shape[d]) return 1; /* as torch: an empty tensor is contiguous */
        if (t->shape[d] != 1 && (size_t)t->stride[d] != st) rc = 0;
        st *= (size_t)t->shape[d];
    }
    return rc;
}

/* dim of view t normalised, or t's own error (mb_tensor_check) or MB_ERR_DIM. */
static MB__NOINLINE int mb__dim(const mb_tensor *t, int dim)
{
    int rc = mb_tensor_check(t);
    return rc ? rc : mb_normalize_dim(dim, t->ndim);
}

MB__DEF int mb_narrow(const mb_tensor *t, int dim, int32_t start, int32_t length, mb_tensor *out)
{
    int rc = dim = mb__dim(t, dim);
    if (!out) rc = MB_ERR_NULL;
    if (rc < 0) return rc;
    if (start < 0 || length < 0 || start > t->shape[dim] - length) return MB_ERR_RANGE;
    mb__narrow(out, t, dim, start, length);
    return MB_OK;
}

/* MB_OK when views b and a are valid (mb_tensor_check, b's error first) and a's rank and
   every size but dim `skip` agree with b's (dtypes may differ). */
static MB__NOINLINE int mb__same_shape(const mb_tensor *a, const mb_tensor *b, int skip)
{
    int d = mb_tensor_check(b);
    if (!d) d = mb_tensor_check(a);
    if (d) return d;
    if (a->ndim != b->ndim) return MB_ERR_SHAPE;
    for (d = 0; d < a->ndim; d++)
        if (d != skip && a->shape[d] != b->shape[d]) return MB_ERR_SHAPE;
    return MB_OK;
}

/* A 0-d f64 view of *x (how scalars take part in the tensor code). */
static MB__NOINLINE mb_tensor *mb__scalar(mb_tensor *s, void *x)
{
    MB_MEMSET(s, 0, sizeof *s); /* strides 0: a source broadcast over any shape */
    s->data = x;
    s->dtype = MB_F64;
    return s;
}

/* Element-wise walk over dst; a 0-d src is broadcast. Ops: copy (a src of another dtype is
   converted by value, as torch's type promotion), compare by value (==: NaN differs from
   itself, 0.0 equals -0.0), and dst = dst op src computed in double: exact for f32/f64 sums,
   max and min, and for every int32 sum (integer results wrap like torch's). MB__SUM0 is
   dst = 0.0 + src (torch's sum_reducer starts from tensor(0.0): -0.0 becomes 0.0). MB__VISIT
   calls mb_walk's visitor v (NULL for the other ops) with both elements and the index. */
enum { MB__SUM0 = -1, MB__COPY = MB_RED_CUSTOM + 1, MB__EQ, MB__DIV, MB__CVT, MB__VISIT }; /* reduce ops are walk ops */
typedef struct mb__visit {
    mb_visitor fn;
    void *user;
} mb__visit;

static double mb__get(const char *p, int dt)
{
    int32_t i;
    if (dt == MB_F32) return *(const float *)p;
    if (dt == MB_F64) return *(const double *)p;
    i = dt == MB_I8    ? *(const int8_t *)p
        : dt == MB_U8  ? *(const uint8_t *)p
        : dt == MB_I16 ? *(const int16_t *)p
                       : *(const int32_t *)p;
    return i;
}

/* Returns 1 when MB__EQ found a difference. Visits dst's rows in order, each row's index
   taken apart from its flat number by division (no index array, no recursion; smaller
   than an odometer); copies between two rows of stride 1 go one row at a time. The row
   count is a size_t: on a 32-bit target a view of 2^32 or more elements (possible only
   with repeated, stride-0 elements, or beyond the address space) walks numel mod 2^32. */
static int mb__walk(int op, const mb_tensor *dst, const mb_tensor *src, const mb__visit *v)
{
    int d, nd = dst->ndim, dt = dst->dtype, rc;
    int32_t idx[MB_MAX_DIMS];
    size_t es = mb_dtype_size(dst->dtype), n = es, e, rows = (size_t)mb_numel(dst);
    if (op == MB__COPY && (int)src->dtype != dt) op = MB__CVT; /* a conversion, by value */
    if (op == MB__COPY && rows && nd && dst->stride[nd - 1] == 1 && src->stride[nd - 1] == 1) {
        n *= (size_t)dst->shape[--nd]; /* a contiguous row: one copy */
        rows /= (size_t)dst->shape[nd];
    }
    for (e = 0; e < rows; e++) {
        char *dp, *sp;
        size_t r = e, k;
        ptrdiff_t di = 0, si = 0; /* element offsets */
        for (d = nd; d-- > 0;) {  /* row e's index, last dim fastest */
            k = r % (size_t)dst->shape[d];
            r /= (size_t)dst->shape[d];
            idx[d] = (int32_t)k;
            di += (ptrdiff_t)k * dst->stride[d];
            si += (ptrdiff_t)k * src->stride[d]; /* src: dst's shape, or 0-d with strides 0 */
        }
        dp = (char *)dst->data + di * (ptrdiff_t)es;
        sp = (char *)src->data + si * (ptrdiff_t)mb_dtype_size(src->dtype);
        if (op == MB__VISIT) {
            rc = v->fn(v->user, dp, sp, idx);
            if (rc) return rc;
        } else if (op == MB__COPY) {
            if (dp != sp) { /* in place (a chunk that views the output): no copy */
                if (dp < sp + n && sp < dp + n)
                    memmove(dp, sp, n); /* overlapping rows stay defined */
                else
                    MB_MEMCPY(dp, sp, n);
            }
        } else {
            double a = op < 0 ? 0.0 : mb__get(dp, dt), b = mb__get(sp, src->dtype);
            if (op == MB__EQ) {
                if (a != b) return 1;
                continue;
            }
            a = op == MB__CVT                        ? b
                : op == MB__DIV                      ? a / b
                : op < MB_RED_MAX                    ? a + b
                : b != b                             ? b /* NaN wins */
                : (op == MB_RED_MAX ? a < b : a > b) ? b
                                                     : a;
            if (dt == MB_F32)
                *(float *)dp = (float)a;
            else if (dt == MB_F64)
                *(double *)dp = a;
            else {
                uint32_t u = (uint32_t)(int64_t)a;
                if (es == 1)
                    *(uint8_t *)dp = (uint8_t)u;
                else if (es == 2)
                    *(uint16_t *)dp = (uint16_t)u;
                else
                    *(uint32_t *)dp = u;
            }
        }
    }
    return 0;
}

/* dst[doff:doff+len] = src[soff:soff+len] along dim (unchecked; nothing moves in place). */
static MB__NOINLINE void mb__put(const mb_tensor *dst, const mb_tensor *src, int dim, int32_t doff, int32_t soff,
                                 int32_t len)
{
    mb_tensor d, s;
    mb__narrow(&d, dst, dim, doff, len);
    mb__narrow(&s, src, dim, soff, len);
    mb__walk(MB__COPY, &d, &s, 0);
}

MB__DEF int mb_copy(mb_tensor *dst, const mb_tensor *src)
{
    int rc = mb__same_shape(src, dst, -1);
    if (!rc && src->dtype != dst->dtype) rc = MB_ERR_DTYPE;
    if (!rc) mb__walk(MB__COPY, dst, src, 0);
    return rc;
}

MB__DEF int mb_zero(mb_tensor *t)
{
    mb_tensor z;
    int rc = mb_tensor_check(t);
    if (!rc) mb__walk(MB__COPY, t, mb__scalar(&z, z.stride), 0); /* broadcast z's own zeroed bytes */
    return rc;
}

MB__DEF int mb_walk(const mb_tensor *a, const mb_tensor *b, mb_visitor fn, void *user)
{
    mb__visit v;
    int rc;
    if (!b) b = a;
    rc = mb__same_shape(a, b, -1); /* every size equal, any dtypes */
    if (!rc && !fn) rc = MB_ERR_NULL;
    if (rc) return rc;
    v.fn = fn;
    v.user = user;
    return mb__walk(MB__VISIT, a, b, &v);
}

/* Length of chunk c when `total` is split into n chunks (c below the chunk count, so c
   times the ceil size stays below total). */
static MB__NOINLINE int32_t mb__chunk_len(int32_t total, int n, int c, int flags)
{
    int32_t q = total / n, r = total % n, each = q + (r != 0);
    if (flags & MB_CEIL) {
        r = total - c * each; /* what is left from chunk c's start */
        return r < each ? r : each;
    }
    return q + (c < r);
}

/* The chunk count of mb_split_sizes for valid arguments (size >= 0, chunks > 0). */
static MB__NOINLINE int mb__count(int32_t size, int chunks, int flags)
{
    if ((flags & MB_CEIL) && size) /* torch.chunk: ceil(size / chunks) each; chunk(empty, k): k empties */
        chunks = (int)((size - 1) / ((size - 1) / chunks + 1) + 1); /* size - 1 over the ceil size */
    return chunks;
}

MB__DEF int mb_split_sizes(int32_t size, int chunks, int flags, int32_t *sizes, int max_sizes)
{
    int c, n;
    if (chunks <= 0) return MB_ERR_CHUNKS;
    if (size < 0) return MB_ERR_SHAPE;
    n = mb__count(size, chunks, flags);
    if (sizes && n > max_sizes) return MB_ERR_TOO_SMALL;
    for (c = 0; sizes && c < n; c++) sizes[c] = mb__chunk_len(size, chunks, c, flags);
    return n;
}

/* Resolve a spec to its kind for value v; *dim normalised for SPLIT. DEFAULT is SPLIT(0) for
   tensors; for scalars REPLICATE when splitting (torch's default_spec) and SPLIT when merging
   (an error, as torch.cat of floats). */
static int mb__resolve(const mb_value *v, const mb_spec *s, int *dim, int merge)
{
    int kind = s ? s->kind : MB_SPEC_DEFAULT, rc;
    *dim = s ? s->dim : 0;
    if ((uint32_t)v->kind > MB_VALUE_SCALAR || (uint32_t)kind > MB_SPEC_REDUCE) return MB_ERR_SPEC;
    if (kind == MB_SPEC_DEFAULT) kind = MB_SPEC_SPLIT + (v->kind > merge);
    if (kind == MB_SPEC_SPLIT) {
        if (v->kind) return MB_ERR_SPEC;
        rc = *dim = mb__dim(&v->tensor, *dim);
        if (rc < 0) return rc;
    }
    return kind;
}

/* Three passes over the values: 0 finds the chunk count (smallest split dim under
   MB_DOWNSIZE), 1 checks every split value gives that count and sums masked storage,
   2 writes. storage != NULL: debug mask pieces of storage_bytes. out == NULL: plan only,
   the bytes needed go to the size_t at `storage` (mb_split_masked_bytes). Nothing is
   written before pass 2. Same parameters as mb_split_masked, which only jumps here. */
static int mb__split(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags, mb_value *out,
                     int max_chunks, void *storage, size_t storage_bytes, mb_diag *diag)
{
    int i = 0, c, dim, kind, rc, pass, n = chunks > 0 ? chunks : 0, counted = 0, count = 0;
    int32_t sz = 0;
    size_t need = 0;
    if (!args && nargs) return MB_ERR_NULL;
    if (nargs < 0) return MB_ERR_SHAPE;
    for (pass = 0; pass < 3; pass++) {
        counted = -1; /* passes 0 and 1 plan alike; only 1 (n final) compares the counts */
        need = 0;
        for (i = 0; i < nargs; i++) {
            const mb_tensor *t = &args[i].tensor;
            size_t piece = 0;
            int32_t off = 0;
            rc = kind = mb__resolve(&args[i], specs ? &specs[i] : 0, &dim, 0);
            sz = 0;
            if (kind == MB_SPEC_REDUCE) rc = MB_ERR_SPEC;
            if (kind == MB_SPEC_SPLIT && chunks <= 0) rc = MB_ERR_CHUNKS; /* torch.tensor_split */
            if (rc < 0) goto fail;
            if (kind == MB_SPEC_SPLIT) {
                sz = t->shape[dim];
                piece = ((size_t)mb_numel(t) * mb_dtype_size(t->dtype) + 7u) & ~(size_t)7u;
                if (sz < chunks && !(flags & MB_KEEP_COUNT)) {
                    rc = MB_ERR_SPLIT_SIZE;
                    if ((flags & MB_STRICT) || !sz) goto fail;
                    if (sz < n) n = sz;
                }
                c = mb__count(sz, n, flags);
                rc = MB_ERR_CHUNK_COUNT;
                if (pass && counted >= 0 && c != counted) goto fail;
                counted = c;
                if (pass && storage) { /* debug mask: full-size copies must be addressable */
                    mb_tensor full;
                    rc = mb_tensor_init(&full, (void *)t, t->dtype, t->ndim, t->shape);
                    if (!rc && ((uint64_t)mb_numel(t) > ((size_t)-1 >> 4) / (size_t)(c + 1) ||
                                (size_t)c * piece > ((size_t)-1 >> 1) - need))
                        rc = MB_ERR_SHAPE;
                    if (rc) goto fail;
                }
                need += (size_t)c * piece;
            }
            for (c = 0; pass == 2 && c < count; c++) {
                mb_value *o = &out[c * nargs + i];
                memmove(o, &args[i], sizeof *o); /* no tensor data moves (MB_MEMCPY is for data) */
                if (kind == MB_SPEC_SPLIT) {
                    int32_t len = mb__chunk_len(sz, n, c, flags);
                    if (storage) { /* debug mask: a zeroed full-size copy holding only this slice */
                        mb__restride(&o->tensor, storage);
                        MB_MEMSET(storage, 0, piece);
                        mb__put(&o->tensor, t, dim, off, off, len);
                        storage = (char *)storage + piece;
                    } else {
                        mb__narrow(&o->tensor, t, dim, off, len);
                    }
                    off += len;
                }
            }
        }
        if (pass == 1) {
            count = counted < 0 ? n : counted;
            if (!out) {
                if (storage) *(size_t *)storage = need;
                return count;
            }
            i = 0;
            sz = 0;
            chunks = count;
            rc = MB_ERR_TOO_SMALL;
            if (count > max_chunks || (storage && need > storage_bytes)) goto fail;
        }
    }
    return count;
fail:
    if (diag) {
        diag->value_index = i;
        diag->size = sz;
        diag->requested = chunks;
    }
    return rc;
}

MB__DEF int mb_split(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags, mb_value *out,
                     int max_chunks, mb_diag *diag)
{
    if (!out && nargs) return MB_ERR_NULL;
    return mb__split(args, specs, nargs, chunks, flags, out, max_chunks, 0, 0, diag);
}

MB__DEF int mb_split_masked_bytes(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags,
                                  size_t *bytes)
{
    if (!bytes) return MB_ERR_NULL;
    return mb__split(args, specs, nargs, chunks, flags, 0, 0, bytes, 0, 0);
}

MB__DEF int mb_split_masked(const mb_value *args, const mb_spec *specs, int nargs, int chunks, int flags, mb_value *out,
                            int max_chunks, void *storage, size_t storage_bytes, mb_diag *diag)
{
    if (!storage || !out) return MB_ERR_NULL;
    if (((uintptr_t)storage & 7u) != 0) return MB_ERR_ALIGN;
    return mb__split(args, specs, nargs, chunks, flags, out, max_chunks, storage, storage_bytes, diag);
}

/* A value as a tensor of the given kind: a scalar is a 0-d f64 view of its `scalar`. */
static MB__NOINLINE mb_tensor *mb__view(const mb_value *v, int kind, mb_tensor *scratch)
{
    return kind == MB_VALUE_TENSOR ? (mb_tensor *)&v->tensor : mb__scalar(scratch, (void *)&v->scalar);
}

/* torch.promote_types over mb's dtypes: a float wins (float64 over float32), int8 with uint8
   gives int16, otherwise the wider integer (the enum lists them in that order). */
static int mb__promote(int a, int b)
{
    int t = a < b ? a : b;
    b ^= a ^ t; /* b: the larger */
    if (t <= MB_F64) return t | (b == MB_F64);
    return t == MB_I8 && b == MB_U8 ? MB_I16 : b;
}

/* Merge value i (v = &chunks[i]; the output itself when there are no chunks). check != 0:
   validate only, write nothing. One loop does both: every chunk is checked against the
   output (against the first chunk for a custom reducer, whose init is checked against the
   output), then copied, concatenated or reduced. The output's dtype must be torch's: the
   promoted dtype of the chunks (concat, max, min), chunk 0's (replicate), or sum_reducer's,
   tensor(0.0) + each chunk in order: float64 once a chunk is, float32 before (sum, mean;
   a sum of integers may also go to their promoted integer dtype, wrapping). */
static MB__NOINLINE int mb__merge_one(const mb_value *v, int nchunks, int nvals, const mb_spec *s, int flags,
                                      mb_value *out, int check, int *dtype)
{
    mb_tensor sf, so, sa, si;
    const mb_reducer *red = 0;
    const mb_tensor *f, *o, *w, *a;
    int c, dim, k = v->kind, rc = mb__resolve(v, s, &dim, 1), op, first = -1, p, cat = rc == MB_SPEC_SPLIT,
                mask = cat && (flags & MB_DEBUG_MASK);
    int32_t off = 0, len;
    if (rc < 0) return rc;
    op = MB__COPY + (rc == MB_SPEC_REPLICATE); /* MB__EQ: replicas are compared */
    if (rc == MB_SPEC_REDUCE) {
        op = s->op;
        red = s->reducer;
        if (op != MB_RED_CUSTOM)
            red = 0;
        else if (!red || !red->fn || red->init.kind < k || (uint32_t)red->init.kind > MB_VALUE_SCALAR)
            return MB_ERR_SPEC;
        if ((uint32_t)op > MB_RED_CUSTOM) return MB_ERR_SPEC;
    }
    if (!nchunks && op != MB_RED_SUM && !red) return MB_ERR_CHUNKS; /* torch: cat of nothing, chunks[0] */
    f = mb__view(v, k, &sf);
    o = mb__view(out, k, &so);
    w = red ? mb__view(&red->init, red->init.kind, &sa) : f; /* a custom reducer starts from init */
    rc = mb_tensor_check(w);
    if (!rc && !w->ndim && red) { /* a 0-d init (torch's tensor(0.0)) or a scalar: broadcast */
        mb__scalar(&si, w->data)->dtype = w->dtype;
        w = &si;
        rc = mb_tensor_check(o);
    } else if (!rc)
        rc = mb__same_shape(w, o, cat && !mask ? dim : -1);
    if (!rc && mask && mb__count(o->shape[dim], nchunks, flags) != nchunks) rc = MB_ERR_CHUNK_COUNT;
    if (rc) return rc;
    for (c = 0; c < nchunks; c++) /* reduce in place when the output is one of the chunks */
        if (o->data && (k ? (const void *)&v[c * nvals].scalar : v[c * nvals].tensor.data) == o->data) first = c;
    if (red && first >= 0) return MB_ERR_OVERLAP; /* init would overwrite that chunk before fn reads it */
    if (first < 0 || op == MB__EQ) first = 0;     /* replicate: chunk 0's bits, as torch returns it */
    if (!check) {
        out->kind = k;
        if (red) mb__walk(MB__COPY, o, w, 0);
        if (!nchunks && !red) mb_zero((mb_tensor *)o); /* sum_reducer of nothing: its tensor(0.0) */
    }
    p = f->dtype;
    for (c = 0; c < nchunks; c++) {
        const mb_value *cv = &v[c * nvals];
        if (cv->kind != k) return MB_ERR_SPEC;
        a = mb__view(cv, k, &sa);
        if (check) {
            rc = mb__same_shape(a, red ? f : o, cat && !mask ? dim : -1);
            if (!rc && c && op == MB__EQ && mb__walk(MB__EQ, f, a, 0)) rc = MB_ERR_NOT_REPLICATED; /* chunks 1.. == 0 */
            if (rc) return rc;
            if (op != MB__EQ) p = mb__promote(p, a->dtype); /* replicate: chunk 0's dtype */
            if (cat && !mask && a->shape[dim] > o->shape[dim] - off)
                return MB_ERR_SHAPE; /* more rows than the output */
            if (cat) off += a->shape[dim];
        } else if (cat) { /* the chunk's slice of the output; masked chunks are re-sliced */
            len = mask ? mb__chunk_len(o->shape[dim], nchunks, c, flags) : a->shape[dim];
            mb__put(o, a, dim, off, mask ? off : 0, len); /* zero copy when in place */
            off += len;
        } else if (red) {
            rc = red->fn(out, cv, red->user);
            if (rc < 0) return rc;
        } else if (c == first) { /* the chunk in place counts first (a copy onto itself moves nothing) */
            mb__walk(op <= MB_RED_MEAN ? MB__SUM0 : MB__COPY, o, a, 0);
        } else if (op != MB__EQ) {
            mb__walk(op, o, a, 0);
        }
    }
    if (check) {
        if (op <= MB_RED_MEAN && p > MB_F64 && (op || o->dtype <= MB_F64)) p = MB_F32; /* sum_reducer's */
        if (dtype) *dtype = p; /* what the output must be (a custom reducer's: any) */
        if (!red && (int)o->dtype != p) return MB_ERR_DTYPE;
    }
    if (!check && op == MB_RED_MEAN) {
        int32_t cnt = nchunks; /* divide by the count, a broadcast 0-d int32 */
        mb__scalar(&sa, &cnt)->dtype = MB_I32;
        mb__walk(MB__DIV, o, &sa, 0);
    }
    return cat && !mask && off != o->shape[dim] ? MB_ERR_SHAPE : MB_OK;
}

MB__DEF int mb_merge(const mb_value *chunks, int nchunks, int nvals, const mb_spec *specs, int flags, mb_value *out)
{
    int i, rc, pass;
    if (((!chunks && nchunks) || !out) && nvals) return MB_ERR_NULL;
    if (nchunks < 0) return MB_ERR_CHUNKS;
    if (nvals < 0) return MB_ERR_SHAPE;
    for (pass = 1; pass >= 0; pass--)
        for (i = 0; i < nvals; i++) {
            rc = mb__merge_one(nchunks ? &chunks[i] : &out[i], nchunks, nvals, specs ? &specs[i] : 0, flags, &out[i],
                               pass, 0);
            if (rc) return rc;
        }
    return MB_OK;
}

/* Chunk 0's value (a custom reducer's non-0-d init) with the concat dim summed, then
   mb_merge's own check, once more with the dtype that check derives. */
MB__DEF int mb_merge_shape(const mb_value *chunks, int nchunks, int nvals, const mb_spec *specs, int flags,
                           mb_value *out)
{
    const mb_spec *s;
    const mb_reducer *red;
    mb_value o;
    int i, c, rc, pass, dim, dt;
    int64_t n;
    if ((!chunks || !out) && nvals) return MB_ERR_NULL;
    if (nchunks <= 0) return MB_ERR_CHUNKS;
    if (nvals < 0) return MB_ERR_SHAPE;
    for (pass = 1; pass >= 0; pass--)
        for (i = 0; i < nvals; i++) {
            s = specs ? &specs[i] : 0;
            o = chunks[i];
            rc = mb__resolve(&o, s, &dim, 1);
            if (rc < 0) return rc;
            red = rc == MB_SPEC_REDUCE && s->op == MB_RED_CUSTOM ? s->reducer : 0;
            if (red && !red->init.kind && red->init.tensor.ndim) o.tensor = red->init.tensor;
            if (rc == MB_SPEC_SPLIT && !(flags & MB_DEBUG_MASK)) {
                for (n = 0, c = 0; c < nchunks; c++) n += chunks[c * nvals + i].tensor.shape[dim];
                if (n < 0 || n > INT32_MAX) return MB_ERR_SHAPE;
                o.tensor.shape[dim] = (int32_t)n;
            }
            if (!o.kind) {
                rc = mb_tensor_init(&o.tensor, &o, red && !red->init.kind ? red->init.tensor.dtype : o.tensor.dtype,
                                    o.tensor.ndim, o.tensor.shape); /* a data pointer no chunk has */
                if (rc) return rc;
            }
            rc = mb__merge_one(&chunks[i], nchunks, nvals, s, flags, &o, 1, &dt);
            if (rc == MB_ERR_DTYPE) {
                o.tensor.dtype = (mb_dtype)dt;
                rc = mb__merge_one(&chunks[i], nchunks, nvals, s, flags, &o, 1, 0);
            }
            if (rc) return rc;
            o.tensor.data = 0;
            if (!pass) out[i] = o;
        }
    return MB_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* MICROBATCH_IMPLEMENTATION */
