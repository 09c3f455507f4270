/* crt0.S — start-up for every hart of QEMU's RISC-V "virt" board (-bios none).
 *
 * All harts enter _start at 0x80000000 in M-mode at once. Each takes its own
 * stack (FW_STACK_BYTES below __stacks_top, indexed by mhartid). Hart 0 copies
 * .data from its load address, zeroes .bss (not the shared pg_shm region: it
 * has a NOLOAD section of its own, see link.ld) and then releases the others
 * through fw_boot_release, a word outside .bss. Every hart then calls
 * fw_hart_main(hartid). */
#ifndef FW_MAX_HARTS
#define FW_MAX_HARTS 4          /* link.ld reserves 4 stacks */
#endif
#define FW_STACK_BYTES 32768    /* = link.ld's FW_STACK_BYTES */

    .section .text.init, "ax", @progbits
    .globl _start
_start:
    .option push
    .option norelax
    la      gp, __global_pointer$
    .option pop
    csrw    mie, zero
    csrw    mstatus, zero
    la      t0, fw_trap_entry
    csrw    mtvec, t0
    csrr    a0, mhartid
    li      t1, FW_MAX_HARTS
    bgeu    a0, t1, park
    la      sp, __stacks_top
    li      t1, FW_STACK_BYTES
    mul     t2, a0, t1
    sub     sp, sp, t2
    bnez    a0, wait_release

    /* hart 0: .data, .bss, then release the others */
    la      t0, __data_load
    la      t1, __data_start
    la      t2, __data_end
1:  bgeu    t1, t2, 2f
    ld      t3, 0(t0)
    sd      t3, 0(t1)
    addi    t0, t0, 8
    addi    t1, t1, 8
    j       1b
2:  la      t1, __bss_start
    la      t2, __bss_end
3:  bgeu    t1, t2, 4f
    sd      zero, 0(t1)
    addi    t1, t1, 8
    j       3b
4:  fence   rw, rw
    la      t0, fw_boot_release
    li      t1, 0x600DB007
    sw      t1, 0(t0)
    fence   rw, rw
    j       enter

wait_release:
    la      t0, fw_boot_release
    li      t1, 0x600DB007
5:  lw      t2, 0(t0)
    bne     t2, t1, 5b
    fence   rw, rw
enter:
    call    fw_hart_main
park:
    wfi
    j       park

    /* A word in .data's neighbourhood that hart 0 does not zero. */
    .section .boot_release, "aw", @progbits
    .balign 64
    .globl fw_boot_release
fw_boot_release:
    .word   0
    .balign 64
