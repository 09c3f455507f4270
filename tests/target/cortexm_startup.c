/* Cortex-M startup for the QEMU mps2 boards (semihosting, newlib rdimon).
 *
 * The vector table goes first in the image (see cortexm.ld): initial stack
 * pointer, then reset. Reset enables the FPU when the build uses one and
 * jumps to newlib's _start (rdimon-crt0), which zeroes .bss, sets up the
 * semihosting file handles, calls main() and exit(). Any fault ends the
 * QEMU run at once with a failure status instead of hanging until the
 * timeout. Nothing here belongs to the library; it only runs tests and
 * examples on a simulated board. */
#include <stdint.h>

extern void _start(void);
extern uint32_t __stack_top;

void splitcore_reset(void);
void splitcore_fault(void);

void splitcore_reset(void)
{
#if defined(__ARM_FP)
    /* CPACR: full access to CP10/CP11 before any floating-point code runs. */
    volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20;
    __asm volatile("dsb\n\tisb" ::: "memory");
#endif
    _start();
    for (;;) {}
}

/* Semihosting SYS_EXIT (0x18) with ADP_Stopped_RunTimeErrorUnknown
 * (0x20023): QEMU exits with status 1. */
void splitcore_fault(void)
{
    register uint32_t op __asm("r0") = 0x18u;
    register uint32_t reason __asm("r1") = 0x20023u;
    __asm volatile("bkpt 0xab" : : "r"(op), "r"(reason) : "memory");
    for (;;) {}
}

typedef void (*splitcore_vector)(void);

/* 0: initial SP, 1: reset, 2: NMI, 3: HardFault, 4-6: MemManage, BusFault,
 * UsageFault. Everything else stays zero: the tests use no interrupts. */
__attribute__((section(".vectors"), used)) const splitcore_vector splitcore_vectors[16] = {
    (splitcore_vector)(uintptr_t)&__stack_top,
    splitcore_reset,
    splitcore_fault,
    splitcore_fault,
    splitcore_fault,
    splitcore_fault,
    splitcore_fault,
};
