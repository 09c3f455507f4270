/* stdio.h — just enough stdio for tests/cmocka/cmocka.h on bare metal: every stream is
   the board's one output (fw_stdio.h: the UART of riscv_smp, semihosting on sse200_smp).
   Formats: %c %s %d %i %u %x %X %p %f %% with flags '#', '0', width, and the l/ll/z
   length modifiers. */
#ifndef FW_STDIO_H
#define FW_STDIO_H
#include <stdarg.h>
#include <stddef.h>
typedef struct FILE FILE;
extern FILE *const stdout;
extern FILE *const stderr;
int vprintf(const char *fmt, va_list ap);
int vfprintf(FILE *f, const char *fmt, va_list ap);
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int snprintf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int fputc(int c, FILE *f);
int putchar(int c);
int puts(const char *s);
int fflush(FILE *f);
#endif
