/* test_port_zephyr_amp.c — ports/platform/zephyr.h in AMP mode (one image per core, MBOX
   doorbells in signalling mode, a data cache on core 0) on host threads, against a model of
   the Zephyr kernel and MBOX APIs (tests/ports/zephyr/; the MBOX callbacks run on the model's
   interrupt thread) and of a write-back cache on core 0 (tests/ports/model.h, reached
   through sys_cache_data_flush_range / _flush_and_invd_range): the port conformance suite
   over pg_shm, the doorbell storm, the clock from k_uptime_ticks (no 64-bit cycle counter),
   and the suite's p2p test failing whenever one of core 0's cache calls is taken away. */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define CONFIG_SPLITCORE               1
#define CONFIG_SPLITCORE_PG_SHM_ZEPHYR 1
#define CONFIG_SPLITCORE_PG_SHM_AMP    1
#define CONFIG_MBOX                    1
#define CONFIG_DCACHE                  1
#define CONFIG_CACHE_MANAGEMENT        1
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/zephyr.h"

#define PGD_NAME            "pg_shm on Zephyr AMP (zephyr.h on a model: MBOX doorbells, core 0 cached)"
#define PGD_CORES           2
#define PGD_RAM_BYTES       65536
#define PGC_STRESS_MESSAGES 100000L
#define PGC_TIMEOUT_MS      3000u
#define PGZ_CACHED          1
#define PGD_CLOCK_US        100 /* k_uptime_ticks at 10 kHz */
#include "tests/ports/driver.h"
#include "tests/ports/zephyr/port.h"

#define CHANNEL 3u
static pg_shm_zephyr z[PGD_CORES];    /* one per image */
static struct device mbox[PGD_CORES]; /* mbox[c]: the channels into core c */
static pgm_cache cache0;
static unsigned char view0[PGD_RAM_BYTES] __attribute__((aligned(PGD_RAM_BYTES))), snap0[PGD_RAM_BYTES];

static void port_start(void)
{
    int c;
    pgz_reset();
    for (c = 0; c < PGD_CORES; c++) pgz_mbox_start(&mbox[c], c ? "mbox into core 1" : "mbox into core 0");
    pgm_attach_cache(0, PGM_L1, &cache0, pgd_ram, view0, snap0, PGD_RAM_BYTES);
}

static void port_stop(void)
{
    int c;
    for (c = 0; c < PGD_CORES; c++) pgz_mbox_stop(&mbox[c]);
}

static void port_attach(int core, pg_shm_hooks *h)
{
    struct mbox_dt_spec tx[PGD_CORES], rx;
    int c;
    for (c = 0; c < PGD_CORES; c++) {
        tx[c].dev = &mbox[c];
        tx[c].channel_id = CHANNEL;
    }
    rx = tx[core];
    pgz_cache = core == 0 ? &cache0 : NULL;
    assert_int_equal(pg_shm_zephyr_amp_init(&z[core], core, tx, PGD_CORES, &rx), 0);
    pg_shm_zephyr_hooks(h, &z[core]);
}

static void *port_region(int core)
{
    return core == 0 ? (void *)view0 : (void *)pgd_ram;
}

static int port_storm_check(uint64_t notifies)
{
    print_message("storm: %llu notifies; signals sent into core 0: %llu (%llu while one was pending), delivered "
                  "%llu; into core 1: %llu (%llu), delivered %llu\n",
                  (unsigned long long)notifies, (unsigned long long)mbox[0].sends, (unsigned long long)mbox[0].busy,
                  (unsigned long long)mbox[0].delivered, (unsigned long long)mbox[1].sends,
                  (unsigned long long)mbox[1].busy, (unsigned long long)mbox[1].delivered);
    return !mbox[0].delivered || !mbox[1].delivered || mbox[0].latched || mbox[1].latched ||
           mbox[0].sends + mbox[0].busy + mbox[1].sends + mbox[1].busy > notifies;
}

static void test_maintenance_removed(void **state)
{
    (void)state;
    pgd_test_removals(1 << 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
    cmocka_unit_test(test_maintenance_removed),
};

PGD_SUITE(tests)
