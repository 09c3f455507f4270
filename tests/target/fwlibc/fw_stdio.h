/* fw_stdio.h — the bare-metal firmware's stdio, included once by each board's fwlibc.c
   (tests/target/riscv_smp, tests/target/sse200_smp): printf, fprintf, vprintf, vfprintf,
   snprintf, fputc, putchar, puts, fflush over one output, for the declarations in
   fwlibc/stdio.h (every stream is that output). Formats: %c %s %d %i %u %x %X %p %f %%
   with flags '#', '0', width, and the l/ll/z length modifiers. Before the include, the
   board's file includes <stdarg.h>, <stddef.h>, <stdint.h>, <stdio.h>, <string.h> and
   defines `static void fw__emit(char c)` (one character to the board's output) and
   `static void fw__flush(void)` (push out what fw__emit buffered: fflush). */
#ifndef FW_STDIO_IMPL_H
#define FW_STDIO_IMPL_H

struct FILE {
    int unused;
};
static struct FILE fw__out_file;
FILE *const stdout = &fw__out_file;
FILE *const stderr = &fw__out_file;

typedef struct {
    char *buf; /* NULL: the board's output */
    size_t cap, len;
} fw__sink;

static void fw__put(fw__sink *k, char c)
{
    if (k->buf == NULL) {
        fw__emit(c);
    } else if (k->len + 1 < k->cap) {
        k->buf[k->len] = c;
    }
    k->len++;
}

static void fw__num(fw__sink *k, unsigned long long v, unsigned base, int upper, int width, char pad, int neg,
                    const char *prefix)
{
    char tmp[24];
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    int n = 0, plen = prefix ? (int)strlen(prefix) : 0;
    do {
        tmp[n++] = digits[v % base];
        v /= base;
    } while (v);
    width -= n + neg + plen;
    if (pad == ' ')
        while (width-- > 0) fw__put(k, ' ');
    if (neg) fw__put(k, '-');
    while (plen-- > 0) fw__put(k, *prefix++);
    if (pad == '0')
        while (width-- > 0) fw__put(k, '0');
    while (n) fw__put(k, tmp[--n]);
}

static int fw__format(fw__sink *k, const char *f, va_list ap)
{
    for (; *f; ++f) {
        int alt = 0, width = 0, nl = 0, wide;
        size_t size = sizeof(int); /* of the argument: int, long, long long, size_t, intmax_t */
        char pad = ' ';
        if (*f != '%') {
            fw__put(k, *f);
            continue;
        }
        ++f;
        for (;; ++f) {
            if (*f == '#')
                alt = 1;
            else if (*f == '0')
                pad = '0';
            else if (*f == '-' || *f == '+' || *f == ' ') {
            } else
                break;
        }
        while (*f >= '0' && *f <= '9') width = width * 10 + (*f++ - '0');
        if (*f == '.') {
            ++f;
            while (*f >= '0' && *f <= '9') ++f;
        }
        for (;; ++f) {
            if (*f == 'l')
                size = ++nl == 1 ? sizeof(long) : sizeof(long long);
            else if (*f == 'z')
                size = sizeof(size_t);
            else if (*f == 'j')
                size = sizeof(long long);
            else
                break;
        }
        wide = size > sizeof(int); /* read as long long, else as int */
        switch (*f) {
        case 'c': fw__put(k, (char)va_arg(ap, int)); break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s) s = "(null)";
            width -= (int)strlen(s);
            while (width-- > 0) fw__put(k, ' ');
            while (*s) fw__put(k, *s++);
            break;
        }
        case 'd':
        case 'i': {
            long long v = wide ? va_arg(ap, long long) : va_arg(ap, int);
            unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            fw__num(k, u, 10, 0, width, pad, v < 0, NULL);
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            unsigned long long v = wide ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned);
            unsigned base = *f == 'u' ? 10u : 16u;
            fw__num(k, v, base, *f == 'X', width, pad, 0, alt && base == 16 && v ? "0x" : NULL);
            break;
        }
        case 'p': fw__num(k, (unsigned long long)(uintptr_t)va_arg(ap, void *), 16, 0, 0, ' ', 0, "0x"); break;
        case 'f':
        case 'g':
        case 'e': {
            double v = va_arg(ap, double);
            unsigned long long ip, fp;
            int neg = v < 0;
            if (v != v) {
                fw__put(k, 'n');
                fw__put(k, 'a');
                fw__put(k, 'n');
                break;
            }
            if (neg) v = -v;
            if (v > 1e18) {
                fw__put(k, neg ? '-' : '+');
                fw__put(k, 'b');
                fw__put(k, 'i');
                fw__put(k, 'g');
                break;
            }
            ip = (unsigned long long)v;
            fp = (unsigned long long)((v - (double)ip) * 1e6 + 0.5);
            if (fp >= 1000000ull) {
                ip++;
                fp -= 1000000ull;
            }
            fw__num(k, ip, 10, 0, 0, ' ', neg, NULL);
            fw__put(k, '.');
            fw__num(k, fp, 10, 0, 6, '0', 0, NULL);
            break;
        }
        case '%': fw__put(k, '%'); break;
        case 0: return (int)k->len;
        default:
            fw__put(k, '%');
            fw__put(k, *f);
            break;
        }
    }
    return (int)k->len;
}

int vprintf(const char *fmt, va_list ap)
{
    fw__sink k = {NULL, 0, 0};
    return fw__format(&k, fmt, ap);
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    (void)f;
    return vprintf(fmt, ap);
}

int printf(const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vprintf(fmt, ap);
    va_end(ap);
    return n;
}

int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    int n;
    (void)f;
    va_start(ap, fmt);
    n = vprintf(fmt, ap);
    va_end(ap);
    return n;
}

int snprintf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    fw__sink k;
    k.buf = buf;
    k.cap = cap;
    k.len = 0;
    va_start(ap, fmt);
    fw__format(&k, fmt, ap);
    va_end(ap);
    if (cap) buf[k.len < cap ? k.len : cap - 1] = 0;
    return (int)k.len;
}

int fputc(int c, FILE *f)
{
    fw__sink k = {NULL, 0, 0};
    (void)f;
    fw__put(&k, (char)c);
    return c;
}

int putchar(int c)
{
    return fputc(c, stdout);
}

int puts(const char *s)
{
    while (*s) putchar(*s++);
    putchar('\n');
    return 0;
}

int fflush(FILE *f)
{
    (void)f;
    fw__flush();
    return 0;
}

#endif /* FW_STDIO_IMPL_H */
