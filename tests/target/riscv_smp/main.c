/* main.c — pg_shm on four bare-metal harts of QEMU's RISC-V "virt" board.

   Every hart enters fw_hart_main() from crt0.S. Hart 0 runs the cmocka suite
   tests/test_pg_shm.c (compiled in here with PG_SHM_SUITE_HARTS), pg_shm's own tests and
   then the port conformance suite tests/pg_conformance.h: each multi-rank test
   calls run_on_cores(), which hands the rank body to harts 1..3 (a generation word + the
   CLINT doorbell), runs rank 0 itself and collects the four results. The ranks talk only
   through pg_shm's region, placed in the linker section .splitcore_shm. The result leaves
   through the UART (cmocka's summary lines) and QEMU's exit status (SiFive test device:
   0x5555 = pass, 0x3333 | code << 16 = fail). */
#include <stdint.h>
#include "ports/platform/riscv_virt.h"
#include "fw_board.h"

#define PG_SHM_SUITE_HARTS 1
#define main               pg_shm_suite_main
/* gcc 12 -O2 sees that pg_rank() may return a negative error where pg_conformance.h
   indexes its per-rank buffers with it (-Warray-bounds); the suite checks the rank first. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#include "../../test_pg_shm.c"
#pragma GCC diagnostic pop
#undef main

uint32_t suite_region[REGION_BYTES / 4 + 16] __attribute__((aligned(64), section(".splitcore_shm")));

/* The job board: written by hart 0, read by the workers (plain aligned words + fences). */
static body_fn volatile job;
static volatile uint32_t job_gen, done_gen[CORES];
static volatile int job_result[CORES];

void suite_hooks(pg_shm_hooks *h)
{
    pg_shm_rv_hooks(h);
}

void run_on_cores(body_fn f, int *results)
{
    int c;
    uint32_t gen = job_gen + 1u;
    job = f;
    __asm__ volatile("fence rw, rw" ::: "memory");
    job_gen = gen;
    for (c = 1; c < CORES; c++) pg_shm_rv_notify(0, c);
    results[0] = rank_main(0, f);
    for (c = 1; c < CORES; c++) {
        while (done_gen[c] != gen) pg_shm_rv_wait(0, 0);
        __asm__ volatile("fence rw, rw" ::: "memory");
        results[c] = job_result[c];
    }
}

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    pg_shm_hooks h;
    uint32_t seen = 0;
    pg_shm_rv_hooks(&h);
    if (hart == 0) {
        int failed;
        printf("riscv_smp: pg_shm suite on %d harts (QEMU virt, bare metal)\n", CORES);
        failed = pg_shm_suite_main();
        fw_exit(failed);
    }
    for (;;) {
        while (job_gen == seen) pg_shm_rv_wait(0, (int)hart);
        seen = job_gen;
        __asm__ volatile("fence rw, rw" ::: "memory");
        job_result[hart] = rank_main((int)hart, job);
        __asm__ volatile("fence rw, rw" ::: "memory");
        done_gen[hart] = seen;
        pg_shm_rv_notify(0, 0);
    }
}

FW_TRAP_HANDLER("riscv_smp")
