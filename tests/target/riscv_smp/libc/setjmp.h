/* setjmp.h — rv64 setjmp/longjmp (setjmp.S): ra, sp, s0-s11. */
#ifndef FW_SETJMP_H
#define FW_SETJMP_H
typedef unsigned long jmp_buf[14];
int setjmp(jmp_buf env);
void longjmp(jmp_buf env, int val) __attribute__((noreturn));
#endif
