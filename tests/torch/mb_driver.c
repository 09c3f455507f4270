/* mb_driver.c — microbatch.h behind a line protocol, for tests/torch/mb_oracle.py.

   The oracle writes cases to stdin and compares this program's answers with PyTorch's rules
   (torch.tensor_split, torch.cat, sum_reducer, ...). One case per block:

       split <nargs> <chunks> <flags> <max_chunks> <masked 0|1>
       <spec> x nargs            D | P <dim> | R
       <value> x nargs
       merge <nchunks> <nvals> <flags>
       <spec> x nvals            D | C <dim> | R | X <op> | U <value>   (U: custom reducer
                                 acc = 2 * acc + chunk, elementwise in double, init <value>)
       <value> x (nchunks * nvals)   chunk c, value i at c * nvals + i
       <out> x nvals             T <dtype> <ndim> <shape...> (a fresh contiguous tensor) | S |
                                 A <c> (the output is chunk c's view of this value)

   A value: T <dtype> <ndim> <shape...> <strides...> <offset> <hex of the base storage>
   (a view into its own base buffer) or S <double in %a>. Answers: "rc <n>", then for a
   split every chunk's values as "T <dtype> <ndim> <shape...> <strides...> <offset or -1>
   <hex of the elements in row-major order>" (offset: into the input's base, -1 for a
   debug-mask copy) or "S <%a>", for a merge every output as "T <hex>" or "S <%a>". */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXV     8         /* values per argument list */
#define MAXC     40        /* chunks */
#define BASE_MAX (1 << 16) /* bytes of one base buffer */

typedef struct drv_value {
    mb_value v;
    unsigned char *base; /* the value's own storage (tensor), 8-byte aligned */
} drv_value;

static double store_in[MAXV * MAXC][BASE_MAX / 8];
static double store_out[MAXV][BASE_MAX / 8];
static double store_init[MAXV][BASE_MAX / 8];
static double mask_store[MAXV * MAXC * BASE_MAX / 8];

static int read_word(char *w, size_t cap)
{
    return cap >= 64 && scanf(" %63s", w) == 1;
}

static long read_long(void)
{
    char w[64];
    if (!read_word(w, sizeof w)) exit(2);
    return strtol(w, NULL, 10);
}

static void read_spec(mb_spec *s, mb_reducer *red)
{
    char w[64];
    memset(s, 0, sizeof *s);
    if (!read_word(w, sizeof w)) exit(2);
    switch (w[0]) {
    case 'D': s->kind = MB_SPEC_DEFAULT; break;
    case 'P':
    case 'C':
        s->kind = MB_SPEC_SPLIT;
        s->dim = (int32_t)read_long();
        break;
    case 'R': s->kind = MB_SPEC_REPLICATE; break;
    case 'X':
        s->kind = MB_SPEC_REDUCE;
        s->op = (int32_t)read_long();
        break;
    case 'U':
        s->kind = MB_SPEC_REDUCE;
        s->op = MB_RED_CUSTOM;
        s->reducer = red;
        break;
    default: exit(2);
    }
}

/* A tensor value into `base` (or a scalar). */
static void read_value(mb_value *v, unsigned char *base)
{
    char w[64];
    static char hex[2 * BASE_MAX + 8];
    int d, nd;
    long off;
    size_t n, i;
    memset(v, 0, sizeof *v);
    if (!read_word(w, sizeof w)) exit(2);
    if (w[0] == 'S') {
        if (!read_word(w, sizeof w)) exit(2);
        v->kind = MB_VALUE_SCALAR;
        v->scalar = strtod(w, NULL);
        return;
    }
    v->kind = MB_VALUE_TENSOR;
    v->tensor.dtype = (mb_dtype)read_long();
    nd = (int)read_long();
    v->tensor.ndim = nd;
    for (d = 0; d < nd; d++) v->tensor.shape[d] = (int32_t)read_long();
    for (d = 0; d < nd; d++) v->tensor.stride[d] = (int32_t)read_long();
    off = read_long();
    if (scanf(" %131079s", hex) != 1) exit(2);
    n = strlen(hex) / 2;
    if (n > BASE_MAX) exit(2);
    for (i = 0; i < n; i++) {
        unsigned x;
        if (sscanf(hex + 2 * i, "%2x", &x) != 1) exit(2);
        base[i] = (unsigned char)x;
    }
    v->tensor.data = base + (size_t)off * mb_dtype_size(v->tensor.dtype);
}

/* The elements of t in row-major order as hex. */
static void print_elements(const mb_tensor *t)
{
    int64_t n = mb_numel(t), e;
    size_t es = mb_dtype_size(t->dtype), b;
    for (e = 0; e < n; e++) {
        int64_t r = e;
        const unsigned char *p = (const unsigned char *)t->data;
        int d;
        for (d = t->ndim; d-- > 0;) {
            p += (size_t)(r % t->shape[d]) * (size_t)t->stride[d] * es;
            r /= t->shape[d];
        }
        for (b = 0; b < es; b++) printf("%02x", p[b]);
    }
    if (!n) printf("-");
}

/* acc = 2 * acc + chunk, elementwise (order-sensitive), in double, stored in acc's dtype. */
static int twice_plus(mb_value *acc, const mb_value *chunk, void *user)
{
    int64_t n, e;
    (void)user;
    if (acc->kind != chunk->kind) return MB_ERR_SPEC;
    if (acc->kind == MB_VALUE_SCALAR) {
        acc->scalar = 2 * acc->scalar + chunk->scalar;
        return MB_OK;
    }
    n = mb_numel(&acc->tensor);
    if (acc->tensor.ndim != chunk->tensor.ndim ||
        memcmp(acc->tensor.shape, chunk->tensor.shape, sizeof(int32_t) * (size_t)acc->tensor.ndim))
        return MB_ERR_SHAPE;
    for (e = 0; e < n; e++) { /* element e of both, through 1-element views */
        mb_tensor a = acc->tensor, c = chunk->tensor;
        double x, y;
        int64_t r = e;
        int d;
        for (d = a.ndim; d-- > 0;) {
            int32_t k = (int32_t)(r % a.shape[d]);
            r /= a.shape[d];
            if (mb_narrow(&a, d, k, 1, &a) || mb_narrow(&c, d, k, 1, &c)) return MB_ERR_SHAPE;
        }
        switch (a.dtype) {
        case MB_F32: x = *(float *)a.data; break;
        case MB_F64: x = *(double *)a.data; break;
        default: return MB_ERR_DTYPE;
        }
        switch (c.dtype) {
        case MB_F32: y = *(float *)c.data; break;
        case MB_F64: y = *(double *)c.data; break;
        default: return MB_ERR_DTYPE;
        }
        x = 2 * x + y;
        if (a.dtype == MB_F32)
            *(float *)a.data = (float)x;
        else
            *(double *)a.data = x;
    }
    return MB_OK;
}

static void print_value(const mb_value *v, const unsigned char *base, size_t base_bytes)
{
    int d;
    if (v->kind == MB_VALUE_SCALAR) {
        printf("S %a\n", v->scalar);
        return;
    }
    printf("T %d %d", (int)v->tensor.dtype, (int)v->tensor.ndim);
    for (d = 0; d < v->tensor.ndim; d++) printf(" %d", (int)v->tensor.shape[d]);
    for (d = 0; d < v->tensor.ndim; d++) printf(" %d", (int)v->tensor.stride[d]);
    if (base && (const unsigned char *)v->tensor.data >= base &&
        (const unsigned char *)v->tensor.data < base + base_bytes)
        printf(" %ld ", (long)(((const unsigned char *)v->tensor.data - base) / mb_dtype_size(v->tensor.dtype)));
    else
        printf(" -1 ");
    print_elements(&v->tensor);
    printf("\n");
}

static void do_split(void)
{
    static mb_value args[MAXV], out[MAXV * MAXC];
    mb_spec specs[MAXV];
    mb_reducer unused;
    int nargs = (int)read_long(), chunks = (int)read_long(), flags = (int)read_long();
    int max_chunks = (int)read_long(), masked = (int)read_long(), i, c, n;
    if (nargs > MAXV || max_chunks > MAXC) exit(2);
    for (i = 0; i < nargs; i++) read_spec(&specs[i], &unused);
    for (i = 0; i < nargs; i++) read_value(&args[i], (unsigned char *)store_in[i]);
    if (masked)
        n = mb_split_masked(args, specs, nargs, chunks, flags, out, max_chunks, mask_store, sizeof mask_store, NULL);
    else
        n = mb_split(args, specs, nargs, chunks, flags, out, max_chunks, NULL);
    printf("rc %d\n", n);
    for (c = 0; c < n; c++)
        for (i = 0; i < nargs; i++) print_value(&out[c * nargs + i], (unsigned char *)store_in[i], BASE_MAX);
}

static void do_merge(void)
{
    static mb_value chunks[MAXV * MAXC], out[MAXV];
    mb_spec specs[MAXV];
    mb_reducer reds[MAXV];
    int nchunks = (int)read_long(), nvals = (int)read_long(), flags = (int)read_long(), i, c, rc;
    char w[64];
    if (nvals > MAXV || nchunks > MAXC) exit(2);
    for (i = 0; i < nvals; i++) {
        memset(&reds[i], 0, sizeof reds[i]);
        reds[i].fn = twice_plus;
        read_spec(&specs[i], &reds[i]);
        if (specs[i].op == MB_RED_CUSTOM && specs[i].kind == MB_SPEC_REDUCE)
            read_value(&reds[i].init, (unsigned char *)store_init[i]);
    }
    for (c = 0; c < nchunks * nvals; c++) read_value(&chunks[c], (unsigned char *)store_in[c]);
    for (i = 0; i < nvals; i++) {
        if (!read_word(w, sizeof w)) exit(2);
        memset(&out[i], 0, sizeof out[i]);
        if (w[0] == 'S') {
            out[i].kind = MB_VALUE_SCALAR;
            out[i].scalar = -12345.0;
        } else if (w[0] == 'A') {
            c = (int)read_long();
            out[i] = chunks[c * nvals + i];
        } else {
            int32_t shape[MB_MAX_DIMS];
            int d, dt = (int)read_long(), nd = (int)read_long();
            for (d = 0; d < nd; d++) shape[d] = (int32_t)read_long();
            out[i].kind = MB_VALUE_TENSOR;
            memset(store_out[i], 0xA5, sizeof store_out[i]);
            if (mb_tensor_init(&out[i].tensor, store_out[i], (mb_dtype)dt, nd, shape)) exit(3);
        }
    }
    rc = mb_merge(chunks, nchunks, nvals, specs, flags, out);
    printf("rc %d\n", rc);
    for (i = 0; i < nvals; i++) {
        if (out[i].kind == MB_VALUE_SCALAR)
            printf("S %a\n", out[i].scalar);
        else {
            printf("T ");
            print_elements(&out[i].tensor);
            printf("\n");
        }
    }
}

int main(void)
{
    char w[64];
    while (read_word(w, sizeof w)) {
        if (!strcmp(w, "split"))
            do_split();
        else if (!strcmp(w, "merge"))
            do_merge();
        else
            return 2;
        fflush(stdout);
    }
    return 0;
}
