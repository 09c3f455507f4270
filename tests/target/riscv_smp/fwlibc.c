/* fwlibc.c — the firmware's whole C library: memcpy, memset, strcmp, ... and the shared small
   printf (tests/target/fwlibc/fw_stdio.h) to the 16550 UART at 0x10000000 (QEMU virt). Only
   hart 0 prints (main.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FW_UART ((volatile uint8_t *)0x10000000u)

void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *dp = (unsigned char *)d;
    const unsigned char *sp = (const unsigned char *)s;
    if ((((uintptr_t)dp | (uintptr_t)sp | n) & 7u) == 0) {
        uint64_t *d8 = (uint64_t *)d;
        const uint64_t *s8 = (const uint64_t *)s;
        for (n >>= 3; n; --n) *d8++ = *s8++;
        return d;
    }
    while (n--) *dp++ = *sp++;
    return d;
}

void *memmove(void *d, const void *s, size_t n)
{
    unsigned char *dp = (unsigned char *)d;
    const unsigned char *sp = (const unsigned char *)s;
    if (dp <= sp || dp >= sp + n) return memcpy(d, s, n);
    while (n--) dp[n] = sp[n];
    return d;
}

void *memset(void *d, int c, size_t n)
{
    unsigned char *dp = (unsigned char *)d;
    while (n--) *dp++ = (unsigned char)c;
    return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (; n; --n, ++x, ++y)
        if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}

int strcmp(const char *a, const char *b)
{
    while (*a && *a == *b) {
        ++a;
        ++b;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

/* ---- output: the UART, one character at a time ------------------------------------ */
static void fw__emit(char c)
{
    while ((FW_UART[5] & 0x20u) == 0) {} /* LSR.THRE */
    FW_UART[0] = (uint8_t)c;
}

static void fw__flush(void)
{}

#include "../fwlibc/fw_stdio.h"
