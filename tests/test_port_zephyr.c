/* test_port_zephyr.c — ports/platform/zephyr.h in SMP mode (one image, ranks are threads, a
   k_sem per rank) on host threads, against a model of the Zephyr kernel API it uses
   (tests/ports/zephyr/): 4 ranks, the port conformance suite over pg_shm, the doorbell storm
   and the clock (k_cycle_get_64 in microseconds, across the 32-bit wrap).
   tests/test_port_zephyr_amp.c covers the AMP mode (MBOX doorbells, cache hooks). */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define CONFIG_SPLITCORE                     1
#define CONFIG_SPLITCORE_PG_SHM_ZEPHYR       1
#define CONFIG_SPLITCORE_PG_SHM_TICK_US      1000
#define CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER 1
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/zephyr.h"

#define PGD_NAME            "pg_shm on Zephyr SMP (zephyr.h on a model of the kernel: k_sem doorbells)"
#define PGD_CORES           4
#define PGD_RAM_BYTES       262144
#define PGC_STRESS_MESSAGES 100000L
#define PGC_TIMEOUT_MS      3000u
#include "tests/ports/driver.h"
#include "tests/ports/zephyr/port.h"

static pg_shm_zephyr z;

static void port_start(void)
{
    pgz_reset();
    pg_shm_zephyr_init(&z);
}

static void port_stop(void)
{}

static void port_attach(int core, pg_shm_hooks *h)
{
    (void)core;
    pg_shm_zephyr_hooks(h, &z);
}

static int port_storm_check(uint64_t notifies)
{
    print_message("storm: %llu notifies; semaphore of rank 0: %llu gives, %llu takes; rank 1: %llu gives, %llu takes\n",
                  (unsigned long long)notifies, (unsigned long long)z.bell[0].gives,
                  (unsigned long long)z.bell[0].takes, (unsigned long long)z.bell[1].gives,
                  (unsigned long long)z.bell[1].takes);
    return !z.bell[0].takes || !z.bell[1].takes || z.bell[0].count > 1 || z.bell[1].count > 1;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
};

PGD_SUITE(tests)
