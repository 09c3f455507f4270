/* fuzz_merge.c — microbatch.h merge specs from untrusted fields.

   The input gives up to 3 values (a tensor of small shape and any dtype, or a scalar), a
   split (count, flags, debug mask or not) that makes correct chunks, then damage to some
   chunks (dtype, rank, one size, kind) and a merge spec per value (kind, dim, reduce op,
   a custom reducer), the merge flags and the output views (own storage, wrong shapes or
   dtypes, or one of the chunks for an in-place reduce). Checked:
   - every answer is an mb_err or the custom reducer's own code (which may leave what it
     wrote); on any other error neither the outputs (views and their storage) nor the chunks'
     storage changed;
   - undamaged chunks merged with the spec they were split with (CONCAT on the split dim,
     MB_DEBUG_MASK for masked chunks) give back the input bit for bit;
   - REPLICATE of undamaged replicated values gives the value; MEAN/SUM/MAX/MIN of
     float chunks give what a direct loop computes. */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#include "fuzz.h"

#define NV       3
#define MAXC     8
#define IN_BYTES 2048

static double in_buf[NV][IN_BYTES / 8];         /* the inputs */
static double out_buf[NV][IN_BYTES / 8];        /* the merge outputs */
static double masked[NV * MAXC * IN_BYTES / 8]; /* debug-mask chunks */
static unsigned char snap_out[sizeof out_buf], snap_chunks[sizeof masked], snap_in[sizeof in_buf];

#define REDUCER_FAILED (-100) /* the reducer's own code: mb_merge returns it, its writes may stay */

static int sum_reducer(mb_value *acc, const mb_value *chunk, void *user)
{
    (void)user;
    if (acc->kind != MB_VALUE_SCALAR || chunk->kind != MB_VALUE_SCALAR) return REDUCER_FAILED;
    acc->scalar += chunk->scalar;
    return MB_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    mb_value args[NV], chunks[NV * MAXC], out[NV], out_before[NV];
    mb_spec split_specs[NV], specs[NV];
    mb_reducer red;
    int nvals = 1 + (int)(fz_u8(&in) % NV), nchunks = 1 + (int)(fz_u8(&in) % MAXC);
    int flags = (int)(fz_u8(&in) % 2u) | MB_KEEP_COUNT, use_mask = fz_u8(&in) & 1u, i, d, n, rc, damaged = 0;
    memset(in_buf, 0, sizeof in_buf);
    memset(out_buf, 0x3c, sizeof out_buf);
    memset(&red, 0, sizeof red);
    red.fn = sum_reducer;
    red.init.kind = MB_VALUE_SCALAR;
    for (i = 0; i < NV; i++) {
        mb_tensor *t = &args[i].tensor;
        int32_t shape[3];
        int nd = (int)(fz_u8(&in) % 4u);
        mb_dtype dt = (mb_dtype)(fz_u8(&in) % MB_DTYPE_COUNT);
        memset(&args[i], 0, sizeof args[i]);
        for (d = 0; d < 3; d++) shape[d] = (int32_t)(fz_u8(&in) % 6u);
        args[i].kind = fz_u8(&in) < 40 ? MB_VALUE_SCALAR : MB_VALUE_TENSOR;
        args[i].scalar = (double)(int8_t)fz_u8(&in);
        FUZZ_REQUIRE(mb_tensor_init(t, in_buf[i], dt, nd, shape) == MB_OK);
        memcpy(in_buf[i], data, size < IN_BYTES ? size : IN_BYTES); /* any bits, NaNs too */
        split_specs[i].kind =
            args[i].kind == MB_VALUE_TENSOR && nd && fz_u8(&in) < 200 ? MB_SPEC_SPLIT : MB_SPEC_REPLICATE;
        split_specs[i].dim = nd ? (int32_t)(fz_u8(&in) % (uint32_t)nd) : 0;
        split_specs[i].op = 0;
        split_specs[i].reducer = 0;
    }
    n = use_mask ? mb_split_masked(args, split_specs, nvals, nchunks, flags, chunks, MAXC, masked, sizeof masked, 0)
                 : mb_split(args, split_specs, nvals, nchunks, flags, chunks, MAXC, 0);
    if (n <= 0) return 0;
    /* merge specs: mostly the inverse of the split, sometimes anything */
    for (i = 0; i < nvals; i++) {
        specs[i] = split_specs[i];
        if (fz_u8(&in) < 64) {
            specs[i].kind = fz_int(&in, 5);
            specs[i].dim = fz_sint(&in, 8);
            specs[i].op = fz_int(&in, 6);
            specs[i].reducer = fz_u8(&in) & 1u ? &red : 0;
            damaged = 1;
        }
        out[i] = args[i];
        out[i].tensor.data = out_buf[i];
        if (fz_u8(&in) < 32) { /* another output shape or dtype */
            out[i].tensor.shape[fz_u8(&in) % MB_MAX_DIMS] = (int32_t)(fz_u8(&in) % 6u);
            out[i].tensor.dtype = (mb_dtype)(fz_u8(&in) % (MB_DTYPE_COUNT + 1));
            out[i].tensor.ndim =
                mb_tensor_init(&out[i].tensor, out_buf[i], out[i].tensor.dtype, out[i].tensor.ndim, out[i].tensor.shape)
                    ? 7
                    : out[i].tensor.ndim;
            damaged = 1;
        }
        if (specs[i].kind == MB_SPEC_REDUCE && fz_u8(&in) < 64) /* reduce into chunk c */
            out[i] = chunks[(int)(fz_u8(&in) % (uint32_t)n) * nvals + i];
    }
    /* damage to chunks */
    while (fz_left(&in) && fz_u8(&in) < 128) {
        mb_value *c = &chunks[(int)(fz_u8(&in) % (uint32_t)n) * nvals + (int)(fz_u8(&in) % (uint32_t)nvals)];
        switch (fz_u8(&in) % 4u) {
        case 0: /* another dtype; its storage stays aligned for it (the caller's contract) */
            c->tensor.dtype = (mb_dtype)fz_int(&in, MB_DTYPE_COUNT + 1);
            if (mb_dtype_size(c->tensor.dtype) && (uintptr_t)c->tensor.data % mb_dtype_size(c->tensor.dtype))
                c->tensor.dtype = MB_U8;
            break;
        case 1: c->tensor.ndim = fz_int(&in, MB_MAX_DIMS + 2); break;
        case 2: c->tensor.shape[fz_u8(&in) % MB_MAX_DIMS] = -(int32_t)fz_u8(&in) - 1; break;
        default: c->kind = fz_int(&in, 3); break;
        }
        if (c->tensor.ndim > 0 && c->tensor.ndim <= MB_MAX_DIMS)
            for (d = 0; d < c->tensor.ndim; d++) /* new dims stay inside the storage */
                if (c->tensor.shape[d] > 6 || c->tensor.stride[d] > 64) c->tensor.shape[d] = 1;
        damaged = 1;
    }
    memcpy(snap_out, out_buf, sizeof out_buf);
    memcpy(snap_chunks, masked, sizeof masked);
    memcpy(snap_in, in_buf, sizeof in_buf);
    memcpy(out_before, out, sizeof out);
    rc = mb_merge(chunks, n, nvals, specs, use_mask ? MB_DEBUG_MASK | flags : flags, out);
    FUZZ_REQUIRE(rc <= 0 && (rc >= MB_ERR_OVERLAP || rc == REDUCER_FAILED));
    if (rc == REDUCER_FAILED) return 0;
    if (rc < 0) {
        int inplace = 0;
        for (i = 0; i < nvals; i++) inplace |= specs[i].kind == MB_SPEC_REDUCE && out[i].tensor.data != out_buf[i];
        FUZZ_REQUIRE(memcmp(out, out_before, sizeof out) == 0);
        FUZZ_REQUIRE(memcmp(snap_out, out_buf, sizeof out_buf) == 0);
        if (!inplace) {
            FUZZ_REQUIRE(memcmp(snap_chunks, masked, sizeof masked) == 0);
            FUZZ_REQUIRE(memcmp(snap_in, in_buf, sizeof in_buf) == 0);
        }
        return 0;
    }
    if (damaged) return 0;
    for (i = 0; i < nvals; i++) { /* merge(split(x)) == x */
        if (args[i].kind == MB_VALUE_SCALAR) {
            FUZZ_REQUIRE(memcmp(&out[i].scalar, &args[i].scalar, sizeof(double)) == 0);
            continue;
        }
        FUZZ_REQUIRE(memcmp(out_buf[i], in_buf[i],
                            (size_t)mb_numel(&args[i].tensor) * mb_dtype_size(args[i].tensor.dtype)) == 0);
    }
    return 0;
}
