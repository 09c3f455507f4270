/* fuzz.h — what every libFuzzer target in tests/fuzz/ shares (splitcore)

   Each fuzz_<name>.c defines LLVMFuzzerTestOneInput and is built by SConstruct with clang
   -fsanitize=fuzzer,address,undefined; `scons fuzz SECONDS=N` runs it from the seed corpus
   tests/fuzz/corpus/<name>/ (`scons test` too: 60 s each under CI=true). The input is read
   as a stream of little-endian fields; a read past the end gives zeros, so every input is
   a complete case. FUZZ_REQUIRE aborts (a crash libFuzzer reports and saves) when a
   property of the library's answer does not hold: a fuzz target checks the error contract
   (bad input gives a negative code and leaves outputs untouched), not only memory safety. */
#ifndef SPLITCORE_FUZZ_H
#define SPLITCORE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fz_in {
    const uint8_t *p;
    size_t n, at;
} fz_in;

static inline fz_in fz_make(const uint8_t *p, size_t n)
{
    fz_in in;
    in.p = p;
    in.n = n;
    in.at = 0;
    return in;
}

static inline uint32_t fz_u8(fz_in *in)
{
    return in->at < in->n ? in->p[in->at++] : 0u;
}

static inline uint32_t fz_u16(fz_in *in)
{
    uint32_t lo = fz_u8(in);
    return lo | fz_u8(in) << 8;
}

static inline uint32_t fz_u32(fz_in *in)
{
    uint32_t lo = fz_u16(in);
    return lo | fz_u16(in) << 16;
}

/* An int that is usually small (0..range-1), sometimes anything: the boundaries
   (negative, INT32_MIN/MAX) must be rejected, small values must work. */
static inline int32_t fz_int(fz_in *in, int32_t range)
{
    uint32_t sel = fz_u8(in);
    if (sel < 200u) return range > 0 ? (int32_t)(fz_u8(in) % (uint32_t)range) : 0;
    if (sel < 220u) return -(int32_t)fz_u8(in) - 1;
    if (sel < 230u) return INT32_MAX - (int32_t)fz_u8(in);
    if (sel < 240u) return INT32_MIN + (int32_t)fz_u8(in);
    return (int32_t)fz_u32(in);
}

/* As fz_int, small values in -range/2 .. range/2 - 1 (dims counted from the end). */
static inline int32_t fz_sint(fz_in *in, int32_t range)
{
    int32_t v = fz_int(in, range);
    return v >= 0 && v < range ? v - range / 2 : v;
}

static inline size_t fz_left(const fz_in *in)
{
    return in->at < in->n ? in->n - in->at : 0u;
}

#define FUZZ_REQUIRE(c)                                                                  \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "%s:%d: FUZZ_REQUIRE(%s) failed\n", __FILE__, __LINE__, #c); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* A heap block of exactly `bytes` (one byte when 0: ASan sees any access), every byte
   `fill`: a canary that shows whether a call wrote its output. */
static inline void *fz_block(size_t bytes, int fill)
{
    void *p = malloc(bytes ? bytes : 1);
    FUZZ_REQUIRE(p);
    memset(p, fill, bytes);
    return p;
}

#endif /* SPLITCORE_FUZZ_H */
