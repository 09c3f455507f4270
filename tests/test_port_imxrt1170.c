/* test_port_imxrt1170.c — ports/platform/imxrt1170.h on two host threads as the i.MX RT1170's
   Cortex-M7 (rank 0, L1 D-cache) and Cortex-M4 (rank 1, LMEM system-bus cache), against the
   model of the Messaging Unit, the cores and both caches (tests/ports/): the doorbell storm,
   the port conformance suite over pg_shm with both cores maintaining their caches, the
   suite's p2p test failing whenever one maintenance call of either core is taken away, and
   the MPU alternative passing, and failing when the MPU calls are left out. */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ports/model_mu.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/imxrt1170.h"

#define PGD_NAME            "pg_shm on the i.MX RT1170 model (imxrt1170.h: MU doorbell, M7 + M4 caches)"
#define PGD_CORES           2
#define PGD_RAM_BYTES       65536
#define PGD_RAM_LOG2        16
#define PGC_STRESS_MESSAGES 200000L
#define PGC_TIMEOUT_MS      2000u
#include "tests/ports/driver.h"
#include "tests/ports/cm_port.h"

static const uint32_t hz[PGD_CORES] = {1000000000u, 400000000u};
static pgm_mu mu;
static pgm_cache cache[PGD_CORES];
static pg_shm_imxrt1170 bell[PGD_CORES]; /* one per core image */
static unsigned char view[PGD_CORES][PGD_RAM_BYTES] __attribute__((aligned(PGD_RAM_BYTES)));
static unsigned char snap[PGD_CORES][PGD_RAM_BYTES];

static void mu_isr(void *arg)
{
    pg_shm_imxrt1170_isr((pg_shm_imxrt1170 *)arg);
}

static void port_start(void)
{
    int c;
    pgm_reset(PGD_CORES, 0x411FC271u, hz[0] / 1000000u); /* core 0: Cortex-M7 r1p1 */
    pgm.core[1].cpuid = 0x410FC241u;                     /* core 1: Cortex-M4 r0p1 */
    pgm.core[1].mhz = hz[1] / 1000000u;
    pgm_mu_setup(&mu);
    memset(bell, 0, sizeof bell);
    for (c = 0; c < PGD_CORES; c++) {
        pgm_vector(c, 118, mu_isr, &bell[c]);
        pgm_attach_cache(c, c ? PGM_LMEM : PGM_L1, &cache[c], pgd_ram, view[c], snap[c], PGD_RAM_BYTES);
    }
    pgm_start();
}

static void port_attach(int core, pg_shm_hooks *h)
{
    pgm_enter(core);
    pg_shm_imxrt1170_hooks(h, &bell[core], hz[core], pgd_mode == PGD_CACHE_HOOKS);
    pg_shm_cm_tick_start(hz[core]);
    if (pgd_mode == PGD_MPU) assert_int_equal(pg_shm_cm_mpu_uncached(7, view[core], PGD_RAM_LOG2), 0);
}

static void *port_region(int core)
{
    return pgm_uncached(core, view[core]) ? (void *)pgd_ram : (void *)view[core];
}

static int port_storm_check(uint64_t notifies)
{
    print_message("storm: %llu notifies, %llu GP interrupt requests (%llu while one was pending), MU interrupts "
                  "taken: M7 %llu, M4 %llu\n",
                  (unsigned long long)notifies, (unsigned long long)mu.requests, (unsigned long long)mu.ignored,
                  (unsigned long long)pgm.core[0].isr_runs[118], (unsigned long long)pgm.core[1].isr_runs[118]);
    return mu.requests == 0 || mu.requests > notifies || pgm.core[0].isr_runs[118] == 0 ||
           pgm.core[1].isr_runs[118] == 0 || mu.gip[0] || mu.gip[1] || (mu.cr[0] | mu.cr[1]) & 0x000F0000u;
}

static void test_maintenance_removed(void **state)
{
    (void)state;
    pgd_test_removals(1 << 0 | 1 << 1); /* the M7's L1 and the M4's LMEM */
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
    cmocka_unit_test(test_maintenance_removed),
    cmocka_unit_test(pgd_test_mpu),
};

PGD_SUITE(tests)
