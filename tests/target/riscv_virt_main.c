/* main() for tests and examples on QEMU's RISC-V "virt" board (picolibc,
 * semihosting, -bios none).
 *
 * picolibc's exit() does not stop QEMU there, so the program is compiled
 * with -Dmain=splitcore_target_main and this main() calls it, flushes the
 * output and reports the status through the SiFive test device at
 * 0x100000: 0x5555 = pass (QEMU exits 0), 0x3333 | code << 16 = fail
 * (QEMU exits with code). A trap (bad access, illegal instruction) prints
 * mcause/mepc/mtval and exits with status 255 at once, instead of leaving
 * QEMU spinning until the run's timeout. */
#include <stdint.h>
#include <stdio.h>

int splitcore_target_main(int argc, char **argv);

#define SPLITCORE_SIFIVE_TEST ((volatile uint32_t *)0x100000u)

/* CSR access; binutils >= 2.38 wants Zicsr spelled out, which -march=rv32imac
 * does not, so it is enabled only around these instructions. */
#define SPLITCORE_CSR(insn) ".option push\n.option arch, +zicsr\n" insn "\n.option pop"

static void splitcore_exit(int rc)
{
    uint32_t code = (uint32_t)rc & 0xFFFFu;
    if (rc == 0) {
        *SPLITCORE_SIFIVE_TEST = 0x5555u;
    } else {
        /* A status whose low 16 bits are 0 would read as success. */
        *SPLITCORE_SIFIVE_TEST = 0x3333u | ((code ? code : 1u) << 16);
    }
    for (;;) {}
}

__attribute__((interrupt("machine"), aligned(4))) static void splitcore_trap(void)
{
    static volatile int trapped;
    unsigned long cause, epc, tval;
    if (!trapped) {
        trapped = 1; /* printing may trap again; then just exit */
        __asm volatile(SPLITCORE_CSR("csrr %0, mcause") : "=r"(cause));
        __asm volatile(SPLITCORE_CSR("csrr %0, mepc") : "=r"(epc));
        __asm volatile(SPLITCORE_CSR("csrr %0, mtval") : "=r"(tval));
        fprintf(stderr, "TRAP: mcause=0x%lx mepc=0x%lx mtval=0x%lx\n", cause, epc, tval);
        fflush(stderr);
    }
    splitcore_exit(255);
}

int main(void)
{
    static char name[] = "splitcore";
    static char *argv[] = {name, NULL};
    int rc;

    __asm volatile(SPLITCORE_CSR("csrw mtvec, %0") : : "r"(&splitcore_trap));
    rc = splitcore_target_main(1, argv);
    fflush(stdout);
    fflush(stderr);
    splitcore_exit(rc);
    return rc;
}
