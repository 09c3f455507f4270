/* test_port_stm32h7.c — ports/platform/stm32h7.h on two host threads as the STM32H745's
   Cortex-M7 (rank 0, with a write-back data cache) and Cortex-M4 (rank 1, uncached), against
   the model of the HSEM, the cores and the M7's cache (tests/ports/): the doorbell storm, the
   port conformance suite over pg_shm with the M7 maintaining its cache, the suite's p2p test
   failing whenever one maintenance call is taken away, and the MPU alternative (region made
   non-cacheable, no hooks) passing, and failing when the MPU call is left out. */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ports/model_hsem.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/stm32h7.h"

#define PGD_NAME            "pg_shm on the STM32H745 model (stm32h7.h: HSEM doorbell, M7 D-cache)"
#define PGD_CORES           2
#define PGD_RAM_BYTES       65536
#define PGD_RAM_LOG2        16
#define PGC_STRESS_MESSAGES 200000L
#define PGC_TIMEOUT_MS      2000u
#include "tests/ports/driver.h"
#include "tests/ports/cm_port.h"

static pgm_hsem hsem;
static pgm_cache m7_cache;
static pg_shm_stm32h7 bell[PGD_CORES]; /* one per core image */
static unsigned char m7_view[PGD_RAM_BYTES] __attribute__((aligned(PGD_RAM_BYTES))), m7_snap[PGD_RAM_BYTES];

static void hsem_isr(void *arg)
{
    pg_shm_stm32h7_isr((pg_shm_stm32h7 *)arg);
}

static void port_start(void)
{
    pgm_reset(PGD_CORES, 0x411FC270u, 480); /* core 0: Cortex-M7 r1p0 at 480 MHz */
    pgm.core[1].cpuid = 0x410FC241u;        /* core 1: Cortex-M4 r0p1 at 240 MHz */
    pgm.core[1].mhz = 240;
    pgm_hsem_setup(&hsem);
    memset(bell, 0, sizeof bell);
    pgm_vector(0, 125, hsem_isr, &bell[0]);
    pgm_vector(1, 126, hsem_isr, &bell[1]);
    pgm_attach_cache(0, PGM_L1, &m7_cache, pgd_ram, m7_view, m7_snap, sizeof m7_view);
    pgm_start();
}

static void port_attach(int core, pg_shm_hooks *h)
{
    pgm_enter(core);
    pg_shm_stm32h7_hooks(h, &bell[core], core ? 240000000u : 480000000u, pgd_mode == PGD_CACHE_HOOKS);
    pg_shm_cm_tick_start(core ? 240000000u : 480000000u);
    if (core == 0 && pgd_mode == PGD_MPU) assert_int_equal(pg_shm_cm_mpu_uncached(7, m7_view, PGD_RAM_LOG2), 0);
}

/* The M7 reaches the region through its cache (its view) unless its MPU made it
   non-cacheable; the M4 has no cache. */
static void *port_region(int core)
{
    return core == 0 && !pgm_uncached(0, m7_view) ? (void *)m7_view : (void *)pgd_ram;
}

static int port_storm_check(uint64_t notifies)
{
    print_message("storm: %llu notifies, %llu semaphore frees, HSEM interrupts taken: M7 %llu, M4 %llu\n",
                  (unsigned long long)notifies, (unsigned long long)hsem.frees,
                  (unsigned long long)pgm.core[0].isr_runs[125], (unsigned long long)pgm.core[1].isr_runs[126]);
    return hsem.frees == 0 || hsem.frees > notifies || pgm.core[0].isr_runs[125] == 0 ||
           pgm.core[1].isr_runs[126] == 0 || (hsem.isr[0] & hsem.ier[0]) || (hsem.isr[1] & hsem.ier[1]) ||
           hsem.r[PG_SHM_STM32H7_SEM] || hsem.r[PG_SHM_STM32H7_SEM + 1]; /* nothing left locked */
}

static void test_maintenance_removed(void **state)
{
    (void)state;
    pgd_test_removals(1 << 0); /* the M7 */
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
    cmocka_unit_test(test_maintenance_removed),
    cmocka_unit_test(pgd_test_mpu),
};

PGD_SUITE(tests)
