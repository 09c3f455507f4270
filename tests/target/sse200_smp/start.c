/* start.c — start-up of both Cortex-M33 cores of the SSE-200 (QEMU mps2-an521 / mps3-an524
   -smp 2, one ELF), and what fw_board.h declares.

   CPU0 boots the vector table at 0x10000000 (link.ld puts fw_vectors0 there). It zeroes
   .bss, finds the board (the SCC_ID register of the FPGA's Serial Communication
   Controller: 0x40300FFC on AN521, 0x41300FFC on AN524; reading the other board's
   address is a bus fault, which the fault handler skips while a probe is under way) and
   so the SysTick clock, starts its own SysTick and doorbell (ports/platform/sse200.h),
   releases CPU1 at fw_vectors1 (own stack) and calls fw_core_main(0). CPU1 starts its
   SysTick and doorbell and calls fw_core_main(1); fw_restart_cpu1() restarts it the same
   way (CPUWAIT, INITSVTOR1), with only the reset pulse emulated (fw_board.h). Output and
   exit go through semihosting (fwlibc.c). Any other fault prints the core, pc, lr and
   fault status and ends the run with status 0xEE at once, instead of leaving QEMU
   spinning until the run's timeout. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "fw_board.h"

#define FW_REG(a)         (*(volatile uint32_t *)(uintptr_t)(a))
#define FW_SCB_CFSR       0xE000ED28u
#define FW_SCB_HFSR       0xE000ED2Cu
#define FW_SCB_BFAR       0xE000ED38u
#define FW_SCB_VTOR       0xE000ED08u
#define FW_NVIC_ICPR      (0xE000E280u + 4u * (PG_SHM_SSE200_MHU_IRQ >> 5))
#define FW_ICSR_PENDSTCLR (1u << 25)
#define FW_SYS_WRITE0     0x04u
#define FW_SYS_EXIT       0x20u /* SYS_EXIT_EXTENDED: the block {reason, code} */

pg_shm_sse200 fw_sse;
uint32_t fw_cpu_hz;
const char *fw_board;

extern uint32_t __bss_start[], __bss_end[], __stack0_top[], __stack1_top[];
void fw_reset0(void);
void fw_reset1(void);
void fw_fault_entry(void);
void fw_fault(uint32_t *frame);
void fw_systick(void);
void fw_mhu0(void);

typedef void (*fw_vector)(void);
/* 16 system exceptions, then the SSE-200's interrupts (IRQ 6: MHU0). 32 entries, 128 B. */
#define FW_VECTORS(stack, reset)                                                                                    \
    {                                                                                                               \
        (fw_vector)(uintptr_t)(stack), reset, fw_fault_entry, fw_fault_entry, fw_fault_entry, fw_fault_entry,       \
            fw_fault_entry, fw_fault_entry, 0, 0, 0, fw_fault_entry, fw_fault_entry, 0, fw_fault_entry, fw_systick, \
            [16 + PG_SHM_SSE200_MHU_IRQ] = fw_mhu0                                                                  \
    }
__attribute__((section(".vectors0"), used, aligned(128))) const fw_vector fw_vectors0[32] =
    FW_VECTORS(__stack0_top, fw_reset0);
__attribute__((section(".vectors1"), used, aligned(128))) const fw_vector fw_vectors1[32] =
    FW_VECTORS(__stack1_top, fw_reset1);
/* A second table for CPU1, the same but for its reset entry, which counts fw_alt_boots1
   first: a restart released with it shows that CPU1 booted from the table in INITSVTOR1. */
volatile uint32_t fw_alt_boots1;
static void fw_reset1_alt(void)
{
    fw_alt_boots1++;
    fw_reset1();
}
__attribute__((aligned(128))) static const fw_vector fw_vectors1_alt[32] = FW_VECTORS(__stack1_top, fw_reset1_alt);

uint32_t fw_semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void fw_exit(int rc)
{
    uint32_t block[2];
    fflush(stdout);
    block[0] = 0x20026u;                                               /* ADP_Stopped_ApplicationExit */
    block[1] = rc == 0 ? 0u : (rc & 0xFF) ? (uint32_t)rc & 0xFFu : 1u; /* a failure never reads as 0 */
    fw_semihost(FW_SYS_EXIT, block);
    for (;;) __asm__ volatile("wfi");
}

static volatile uint32_t fw__probing; /* 1: a probing load runs; 2: it faulted */

/* The word at addr, or 0 when reading it is a bus fault (the load is skipped). */
static uint32_t fw__probe(uint32_t addr)
{
    register uint32_t r0 __asm__("r0") = addr;
    fw__probing = 1u;
    __asm__ volatile("ldr.n r0, [r0]" : "+r"(r0)::"memory"); /* 2 bytes: the handler skips it */
    if (fw__probing == 2u) r0 = 0;
    fw__probing = 0;
    return r0;
}

/* An exception entry that hands the interrupted code's frame to `handler`. */
#define FW_FRAME_ENTRY(handler)          \
    __asm__ volatile("tst lr, #4\n\t"    \
                     "ite eq\n\t"        \
                     "mrseq r0, msp\n\t" \
                     "mrsne r0, psp\n\t" \
                     "b " #handler "\n\t")

__attribute__((naked)) void fw_fault_entry(void)
{
    FW_FRAME_ENTRY(fw_fault);
}

/* frame: r0-r3, r12, lr, pc, xpsr of the interrupted code. */
void fw_fault(uint32_t *frame)
{
    char line[160];
    if (fw__probing == 1u) {
        frame[6] += 2u;
        fw__probing = 2u;
        FW_REG(FW_SCB_CFSR) = FW_REG(FW_SCB_CFSR); /* write-one-to-clear */
        FW_REG(FW_SCB_HFSR) = FW_REG(FW_SCB_HFSR);
        return;
    }
    snprintf(line, sizeof line, "\nfault on CPU%u: pc=%08x lr=%08x xpsr=%08x CFSR=%08x HFSR=%08x BFAR=%08x\n",
             (unsigned)pg_shm_sse200_cpu(), (unsigned)frame[6], (unsigned)frame[5], (unsigned)frame[7],
             (unsigned)FW_REG(FW_SCB_CFSR), (unsigned)FW_REG(FW_SCB_HFSR), (unsigned)FW_REG(FW_SCB_BFAR));
    fw_semihost(FW_SYS_WRITE0, line);
    fw_exit(0xEE);
}

void fw_systick(void)
{
    pg_shm_sse200_systick_isr(&fw_sse);
}

volatile uint32_t fw_boots1;
static volatile uint32_t fw__reset_cpu1; /* the emulated reset pulse: CPU1's next doorbell is one */
static volatile uint32_t fw__waiting1;   /* CPU1 is in its reset, held by CPUWAIT */
void fw_mhu(uint32_t *frame);
void fw_warm1(void) __attribute__((noreturn));

__attribute__((naked)) void fw_mhu0(void)
{
    FW_FRAME_ENTRY(fw_mhu);
}

/* The doorbell; on CPU1 with fw__reset_cpu1 set it is the reset pulse: the interrupt
   returns, interrupts masked, into CPU1's reset (fw_warm1) instead of the code it
   interrupted. */
void fw_mhu(uint32_t *frame)
{
    pg_shm_sse200_mhu_isr(&fw_sse);
    if (fw__reset_cpu1 && pg_shm_sse200_cpu() == 1u) {
        fw__reset_cpu1 = 0;
        __asm__ volatile("cpsid i" ::: "memory");
        frame[6] = (uint32_t)(uintptr_t)fw_warm1 & ~1u; /* return address */
        frame[7] = 1u << 24;                            /* xPSR: Thumb only */
    }
}

/* CPU1's reset from the pulse on, as the hardware does it. What a reset clears of the
   core's own state (SysTick and a pending tick, the hook set's latch and clock; RAM, the
   region with it, is kept); then held while CPUWAIT bit 1 is set; then the boot from the
   vector table in INITSVTOR1 (VTOR, initial MSP, reset vector), the one CPU0 released it
   with. The hold is check-then-WFI with interrupts masked and the MHU interrupt enabled:
   CPU0 rings after the release, other doorbells are cleared and the check made again (a
   spin would keep CPU0 from running under -icount). fw__waiting1 says it found the bit set
   and waits; fw_boots1 moves once that check is made. */
void fw_warm1(void)
{
    const uint32_t *vectors;
    PG_SHM_SSE200__SYST_CSR = 0;
    PG_SHM_SSE200__ICSR = FW_ICSR_PENDSTCLR;
    memset(&fw_sse.core[1], 0, sizeof fw_sse.core[1]);
    fw__waiting1 = (PG_SHM_SSE200__CPUWAIT & 2u) != 0;
    __asm__ volatile("dmb" ::: "memory");
    fw_boots1++;
    while (PG_SHM_SSE200__CPUWAIT & 2u) {
        __asm__ volatile("dsb\n\twfi" ::: "memory");
        PG_SHM_SSE200__MHU_CLR(1) = PG_SHM_SSE200__MHU_STAT(1);
        FW_REG(FW_NVIC_ICPR) = 1u << (PG_SHM_SSE200_MHU_IRQ & 31u);
    }
    fw__waiting1 = 0;
    vectors = (const uint32_t *)(uintptr_t)PG_SHM_SSE200__INITSVTOR1;
    FW_REG(FW_SCB_VTOR) = (uint32_t)(uintptr_t)vectors;
    __asm__ volatile("dsb\n\tmsr msp, %0\n\tisb\n\tbx %1" ::"r"(vectors[0]), "r"(vectors[1]) : "memory");
    __builtin_unreachable();
}

/* The release waits (WFI, woken at least by CPU0's SysTick) until CPU1's reset has checked
   CPUWAIT: a release before it would end a hold not yet begun. */
int fw_restart_cpu1(uint32_t hold_loops, int alt)
{
    uint32_t boots = fw_boots1, k;
    int held;
    pg_shm_sse200_hold_cpu1();
    fw__reset_cpu1 = 1u;
    fw_notify(1);
    while (fw_boots1 == boots) __asm__ volatile("wfi" ::: "memory");
    for (k = 0; k < hold_loops; k++) __asm__ volatile("nop");
    held = fw__waiting1 != 0;
    pg_shm_sse200_release_cpu1(alt ? fw_vectors1_alt : fw_vectors1);
    fw_notify(1);
    return held;
}

void fw_hooks(pg_shm_hooks *h)
{
    pg_shm_sse200_hooks(h, &fw_sse, fw_cpu_hz);
}

void fw_wait(void)
{
    pg_shm_sse200_wait(&fw_sse, (int)pg_shm_sse200_cpu());
}

void fw_notify(unsigned cpu)
{
    pg_shm_sse200_notify(&fw_sse, (int)cpu);
}

void fw_reset0(void)
{
    uint32_t *p;
    pg_shm_hooks h;
    for (p = __bss_start; p < __bss_end; p++) *p = 0;
    if (fw__probe(0x40300FFCu) == 0x41045210u) {
        fw_board = "AN521";
        fw_cpu_hz = 20000000u;
    } else if (fw__probe(0x41300FFCu) == 0x41045240u) {
        fw_board = "AN524";
        fw_cpu_hz = 32000000u;
    } else {
        fw_board = "unknown SSE-200 board (taken as AN521)";
        fw_cpu_hz = 20000000u;
    }
    fw_hooks(&h);
    pg_shm_sse200_release_cpu1(fw_vectors1);
    fw_core_main(0);
    fw_exit(0);
}

void fw_reset1(void)
{
    pg_shm_hooks h;
    fw_hooks(&h);
    fw_core_main(1);
    for (;;) fw_wait();
}

static volatile uint32_t fw__done[FW_CORES];
static volatile int fw__rc[FW_CORES];

int fw_run_cores(unsigned cpu, int (*f)(int))
{
    int rc;
    unsigned i;
    if (cpu != 0) {
        fw__rc[cpu] = f((int)cpu);
        __asm__ volatile("dmb" ::: "memory");
        fw__done[cpu] = 1u;
        fw_notify(0);
        for (;;) fw_wait();
    }
    rc = f(0);
    for (i = 1; i < FW_CORES; i++) {
        while (!fw__done[i]) fw_wait();
        __asm__ volatile("dmb" ::: "memory");
        if (fw__rc[i]) printf("CPU%u: error %d\n", i, fw__rc[i]);
        if (!rc) rc = fw__rc[i];
    }
    if (rc) printf("error %d\n", rc);
    return rc;
}
