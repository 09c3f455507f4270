/* main.c — pg_shm on both Cortex-M33 cores of the SSE-200 (QEMU mps2-an521 / mps3-an524).

   Every core enters fw_core_main() from start.c. CPU0 runs the cmocka suite
   tests/test_pg_shm.c (compiled in here with PG_SHM_SUITE_HARTS for 2 cores): pg_shm's own
   tests and then the port conformance suite tests/pg_conformance.h, or with
   PG_SHM_SUITE_DTENSOR dtensor.h's execution suite tests/dtensor_conformance.h on a world of
   2. Each multi-rank test calls run_on_cores(), which hands the rank body to CPU1
   (fwlibc/fw_jobs.h: a generation word + the MHU doorbell), runs rank 0 itself and collects
   both results. The
   ranks talk only through pg_shm's region, placed in the linker section .splitcore_shm (the
   SSE-200's SRAM). The result leaves through semihosting: cmocka's summary lines, and
   QEMU's exit status (SYS_EXIT_EXTENDED from CPU0). */
#include <stdint.h>
#include "fw_board.h"
#include "../fwlibc/fw_jobs.h"

#define PG_SHM_SUITE_HARTS 1
#define PG_SHM_SUITE_CORES FW_CORES
#define PG_SHM_SUITE_NAME  "pg_shm (2 Cortex-M33 cores of the SSE-200, bare metal)"
#define main               pg_shm_suite_main
#include "../../test_pg_shm.c"
#undef main

uint32_t suite_region[REGION_BYTES / 4 + 16] __attribute__((aligned(64), section(".splitcore_shm")));

static pg_shm_hooks board_hooks; /* CPU0's: fw_jobs_run waits and rings with them */

void suite_hooks(pg_shm_hooks *h)
{
    fw_hooks(h);
}

static int suite_rank(int core, void *f)
{
    return rank_main(core, *(body_fn *)f);
}

void run_on_cores(body_fn f, int *results)
{
    fw_jobs_run(&board_hooks, CORES, suite_rank, &f, results);
}

void fw_core_main(unsigned cpu)
{
    pg_shm_hooks h;
    fw_hooks(&h);
    if (cpu == 0) {
        board_hooks = h;
        printf("sse200_smp: %s on %d Cortex-M33 cores (QEMU %s, bare metal)\n",
#ifdef PG_SHM_SUITE_DTENSOR
               "dtensor suite over pg_shm",
#else
               "pg_shm suite",
#endif
               CORES, fw_board);
        fw_exit(pg_shm_suite_main());
    }
    fw_jobs_serve(&h, (int)cpu);
}
