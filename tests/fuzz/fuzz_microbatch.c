/* fuzz_microbatch.c — microbatch.h views, chunk specs and split from untrusted fields.

   The input gives up to 4 argument values (kind, dtype, rank, shape, strides, offset into
   one buffer: small values mostly, sometimes negative or huge), a spec per value (kind,
   dim), a chunk count and flags. Checked:
   - mb_tensor_check / mb_tensor_init / mb_narrow / mb_is_contiguous answer with an mb_err
     and write nothing on error;
   - mb_split_sizes: sizes >= 0 that sum to the size (MB_BALANCED: exactly the count);
   - mb_split: on error `out` is untouched; on success every chunk is the input narrowed
     along the split dim, chunks tile the dim in order, replicated values are copies;
   - mb_split_masked (only for views that fit the buffer, the caller's promise): the storage
     it asks for fits, and every masked chunk holds its slice and zeros elsewhere;
   - mb_copy between two views inside the buffer. */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#include "fuzz.h"

#define NV        4
#define MAXC      16
#define BUF_BYTES 4096

static double buf[BUF_BYTES / 8];                  /* the values' data */
static double masked[(NV * MAXC * BUF_BYTES) / 8]; /* debug-mask storage */

/* Highest byte offset + 1 a valid view touches (0 if empty); -1 if above the buffer. */
static int64_t extent(const mb_tensor *t)
{
    int64_t hi = 0;
    int d;
    for (d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return 0;
        if ((int64_t)(t->shape[d] - 1) * t->stride[d] > BUF_BYTES) return -1;
        hi += (int64_t)(t->shape[d] - 1) * t->stride[d];
    }
    hi = (hi + 1) * (int64_t)mb_dtype_size(t->dtype);
    return hi;
}

static int fits(const mb_tensor *t)
{
    int64_t e, off;
    if (mb_tensor_check(t) != MB_OK || !t->data) return 0;
    e = extent(t);
    off = (char *)t->data - (char *)buf;
    return e >= 0 && off >= 0 && off + e <= BUF_BYTES && off % (int64_t)mb_dtype_size(t->dtype) == 0;
}

/* The caller's promise: a view that passes mb_tensor_check lies inside its buffer (the
   library cannot know the buffer's size). Invalid views are fair game everywhere. */
static int promised(const mb_tensor *t)
{
    return mb_tensor_check(t) != MB_OK || fits(t);
}

static void read_value(fz_in *in, mb_value *v)
{
    int d;
    memset(v, 0, sizeof *v);
    v->kind = fz_u8(in) < 230 ? MB_VALUE_TENSOR : fz_int(in, 3);
    v->scalar = (double)(int32_t)fz_u32(in);
    v->tensor.dtype = (mb_dtype)fz_int(in, MB_DTYPE_COUNT);
    v->tensor.ndim = fz_int(in, MB_MAX_DIMS + 1);
    for (d = 0; d < MB_MAX_DIMS; d++) {
        v->tensor.shape[d] = fz_int(in, 9);
        v->tensor.stride[d] = fz_int(in, 24);
    }
    v->tensor.data = fz_u8(in) == 0 ? 0 : (char *)buf + 8u * (fz_u8(in) % (BUF_BYTES / 8));
}

static void check_views(fz_in *in, const mb_value *v)
{
    mb_tensor t = v->tensor, out, ref;
    int32_t shape[MB_MAX_DIMS];
    int rc, d = fz_sint(in, 8), start = fz_int(in, 9), len = fz_int(in, 9);
    memset(&out, 0xa5, sizeof out);
    ref = out;
    rc = promised(&t) ? mb_narrow(&t, d, start, len, &out) : MB_ERR_RANGE;
    FUZZ_REQUIRE(rc <= 0 && rc >= MB_ERR_OVERLAP);
    if (rc) {
        FUZZ_REQUIRE(memcmp(&out, &ref, sizeof out) == 0);
    } else {
        int nd = mb_normalize_dim(d, t.ndim);
        FUZZ_REQUIRE(out.shape[nd] == len && start + len <= t.shape[nd]);
        if (fits(&t)) FUZZ_REQUIRE(fits(&out) || mb_numel(&out) == 0);
    }
    rc = mb_is_contiguous(&t);
    FUZZ_REQUIRE(rc == 0 || rc == 1 || rc == mb_tensor_check(&t));
    for (d = 0; d < MB_MAX_DIMS; d++) shape[d] = t.shape[d];
    memset(&out, 0xa5, sizeof out);
    rc = mb_tensor_init(&out, t.data, t.dtype, t.ndim, shape);
    FUZZ_REQUIRE(rc <= 0 && rc >= MB_ERR_OVERLAP);
    if (rc)
        FUZZ_REQUIRE(memcmp(&out, &ref, sizeof out) == 0);
    else /* a view sized without data (NULL) is contiguous once it has data; until then only an empty one is usable */
        FUZZ_REQUIRE(mb_is_contiguous(&out) == (t.data || mb_numel(&out) == 0 ? 1 : MB_ERR_NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    mb_value args[NV], out[NV * MAXC], before[NV * MAXC];
    mb_spec specs[NV];
    mb_diag diag;
    int32_t sizes[MAXC + 1], total;
    size_t need = 0;
    int nargs = (int)(fz_u8(&in) % (NV + 1)), chunks = fz_int(&in, MAXC + 2), flags = (int)(fz_u8(&in) & 7u);
    int max_chunks = (int)(fz_u8(&in) % (MAXC + 1)), i, c, n, rc, all_fit = 1, use_specs, promise = 1;
    for (i = 0; i < NV; i++) {
        read_value(&in, &args[i]);
        specs[i].kind = fz_int(&in, 4);
        specs[i].dim = fz_sint(&in, 8);
        specs[i].op = 0;
        specs[i].reducer = 0;
        if (i < nargs) all_fit &= args[i].kind != MB_VALUE_TENSOR || fits(&args[i].tensor);
        if (i < nargs) promise &= promised(&args[i].tensor);
        check_views(&in, &args[i]);
    }
    /* chunk sizes */
    total = fz_int(&in, 40);
    n = mb_split_sizes(total, chunks, flags, sizes, MAXC + 1);
    FUZZ_REQUIRE(n >= MB_ERR_OVERLAP);
    if (n >= 0) {
        int64_t sum = 0;
        for (c = 0; c < n; c++) {
            FUZZ_REQUIRE(sizes[c] >= 0);
            sum += sizes[c];
        }
        FUZZ_REQUIRE(sum == total && n <= chunks && (n == chunks || (flags & MB_CEIL)));
    }
    /* split: views only, any field values */
    memset(out, 0x5c, sizeof out);
    memcpy(before, out, sizeof out);
    use_specs = fz_u8(&in) & 1u;
    rc = promise ? mb_split(args, use_specs ? specs : 0, nargs, chunks, flags, out, max_chunks, &diag) : MB_ERR_SHAPE;
    FUZZ_REQUIRE(rc >= MB_ERR_OVERLAP && (rc != 0 || nargs == 0 || chunks <= 0)); /* 0 chunks: nothing split */
    if (rc < 0) FUZZ_REQUIRE(memcmp(out, before, sizeof out) == 0);
    FUZZ_REQUIRE(rc <= max_chunks);
    for (i = 0; rc > 0 && i < nargs; i++) {
        const mb_tensor *t = &args[i].tensor;
        int kind = use_specs ? specs[i].kind : MB_SPEC_DEFAULT, dim, d;
        int64_t sum = 0;
        if (kind == MB_SPEC_DEFAULT) kind = args[i].kind == MB_VALUE_TENSOR ? MB_SPEC_SPLIT : MB_SPEC_REPLICATE;
        for (c = 0; c < rc; c++) {
            const mb_value *o = &out[c * nargs + i];
            if (kind != MB_SPEC_SPLIT) {
                FUZZ_REQUIRE(memcmp(o, &args[i], sizeof *o) == 0);
                continue;
            }
            dim = mb_normalize_dim(use_specs ? specs[i].dim : 0, t->ndim);
            FUZZ_REQUIRE(dim >= 0 && o->tensor.ndim == t->ndim && o->tensor.dtype == t->dtype);
            for (d = 0; d < t->ndim; d++) {
                FUZZ_REQUIRE(o->tensor.stride[d] == t->stride[d]);
                FUZZ_REQUIRE(d == dim || o->tensor.shape[d] == t->shape[d]);
            }
            if (o->tensor.shape[dim] && t->data) /* data = t's + offset * stride (wrapping) */
                FUZZ_REQUIRE((uintptr_t)o->tensor.data ==
                             (uintptr_t)t->data +
                                 (uintptr_t)((uint64_t)sum * (uint64_t)t->stride[dim] * mb_dtype_size(t->dtype)));
            sum += o->tensor.shape[dim];
            if (all_fit) FUZZ_REQUIRE(fits(&o->tensor) || o->tensor.shape[dim] == 0 || mb_numel(t) == 0);
        }
        if (kind == MB_SPEC_SPLIT)
            FUZZ_REQUIRE(sum == t->shape[mb_normalize_dim(use_specs ? specs[i].dim : 0, t->ndim)]);
    }
    /* debug-mask split: the caller promises views inside their buffers */
    if (all_fit && chunks <= MAXC) {
        rc = mb_split_masked_bytes(args, specs, nargs, chunks, flags, &need);
        if (rc > 0 && need <= sizeof masked) {
            rc = mb_split_masked(args, specs, nargs, chunks, flags, out, NV * MAXC / (nargs ? nargs : 1), masked,
                                 sizeof masked, &diag);
            FUZZ_REQUIRE(rc >= MB_ERR_OVERLAP);
        }
    }
    /* copy between two views that fit */
    if (nargs >= 2 && fits(&args[0].tensor) && fits(&args[1].tensor)) {
        rc = mb_copy(&args[0].tensor, &args[1].tensor);
        FUZZ_REQUIRE(rc <= 0 && rc >= MB_ERR_OVERLAP);
    }
    return 0;
}
