/* main.c — pg_shm on four bare-metal harts of QEMU's RISC-V "virt" board.

   Every hart enters fw_hart_main() from crt0.S. Hart 0 runs the cmocka suite
   tests/test_pg_shm.c (compiled in here with PG_SHM_SUITE_HARTS), pg_shm's own tests and
   then the port conformance suite tests/pg_conformance.h: each multi-rank test
   calls run_on_cores(), which hands the rank body to harts 1..3 (fwlibc/fw_jobs.h: a
   generation word + the CLINT doorbell), runs rank 0 itself and collects the four results.
   The ranks talk only through pg_shm's region, placed in the linker section .splitcore_shm.
   The result leaves
   through the UART (cmocka's summary lines) and QEMU's exit status (SiFive test device:
   0x5555 = pass, 0x3333 | code << 16 = fail). */
#include <stdint.h>
#include "ports/platform/riscv_virt.h"
#include "fw_board.h"
#include "../fwlibc/fw_jobs.h"

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

static pg_shm_hooks board_hooks; /* hart 0's: fw_jobs_run waits and rings with them */

void suite_hooks(pg_shm_hooks *h)
{
    pg_shm_rv_hooks(h);
}

static int suite_rank(int core, void *f)
{
    return rank_main(core, *(body_fn *)f);
}

void run_on_cores(body_fn f, int *results)
{
    fw_jobs_run(&board_hooks, CORES, suite_rank, &f, results);
}

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    pg_shm_hooks h;
    pg_shm_rv_hooks(&h);
    if (hart == 0) {
        int failed;
        board_hooks = h;
        printf("riscv_smp: pg_shm suite on %d harts (QEMU virt, bare metal)\n", CORES);
        failed = pg_shm_suite_main();
        fw_exit(failed);
    }
    fw_jobs_serve(&h, (int)hart);
}

FW_TRAP_HANDLER("riscv_smp")
