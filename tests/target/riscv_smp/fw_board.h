/* fw_board.h — what the riscv_smp firmware images share (tests/target/riscv_smp/main.c,
   examples/cnn_fmnist/riscv_smp/main.c): leaving QEMU through the SiFive test device
   (0x5555 = pass, 0x3333 | code << 16 = fail), a trap handler that reports the exception
   and fails, and running one function per hart with hart 0 waiting for the others. */
#ifndef FW_BOARD_H
#define FW_BOARD_H
#include <stdint.h>
#include <stdio.h>

#define FW_TEST_DEVICE ((volatile uint32_t *)0x100000u)
#define FW_MAX_HARTS   8

static __attribute__((unused)) void fw_exit(int rc)
{
    uint32_t code = (uint32_t)rc & 0xFFFFu;
    *FW_TEST_DEVICE = rc == 0 ? 0x5555u : 0x3333u | (code ? code : 1u) << 16;
    for (;;) __asm__ volatile("wfi");
}

/* Defines fw_trap_entry (crt0.S points mtvec at it; mstatus.MIE stays 0, so only
   exceptions trap): prints `<who>: trap on hart ...` and fails. */
#define FW_TRAP_HANDLER(who)                                                                               \
    void fw_trap_entry(void) __attribute__((interrupt("machine"), aligned(4)));                            \
    void fw_trap_entry(void)                                                                               \
    {                                                                                                      \
        unsigned long cause, epc, tval, hart;                                                              \
        __asm__ volatile("csrr %0, mcause" : "=r"(cause));                                                 \
        __asm__ volatile("csrr %0, mepc" : "=r"(epc));                                                     \
        __asm__ volatile("csrr %0, mtval" : "=r"(tval));                                                   \
        __asm__ volatile("csrr %0, mhartid" : "=r"(hart));                                                 \
        printf("\n%s: trap on hart %lu: mcause=%#lx mepc=%#lx mtval=%#lx\n", who, hart, cause, epc, tval); \
        fw_exit(0xEE);                                                                                     \
    }

static volatile uint32_t fw_done[FW_MAX_HARTS];
static volatile int fw_rc[FW_MAX_HARTS];

/* Every hart calls it with its id: harts 1..n-1 run f and park; hart 0 runs f, waits for
   the others and returns the first non-zero result (0 when all returned 0). */
static __attribute__((unused)) int fw_run_harts(unsigned long hart, int n, int (*f)(int))
{
    int i, rc;
    if (hart != 0) {
        fw_rc[hart] = f((int)hart);
        __asm__ volatile("fence rw, rw" ::: "memory");
        fw_done[hart] = 1;
        for (;;) __asm__ volatile("wfi");
    }
    rc = f(0);
    for (i = 1; i < n; i++) {
        while (!fw_done[i]) __asm__ volatile("nop");
        __asm__ volatile("fence rw, rw" ::: "memory");
        if (fw_rc[i]) printf("hart %d: error %d\n", i, fw_rc[i]);
        if (!rc) rc = fw_rc[i];
    }
    if (rc) printf("error %d\n", rc);
    return rc;
}
#endif
