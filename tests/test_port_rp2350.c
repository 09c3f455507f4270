/* test_port_rp2350.c — ports/platform/rp2350.h on two host threads as the RP2350's
   Cortex-M33 cores, against the model of its SIO (doorbells and the FIFO, which pg_shm must
   leave to others), TIMER0 and the cores (tests/ports/): the doorbell storm and the port
   conformance suite over pg_shm. */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ports/model_rp.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/rp2350.h"

#define PGD_NAME            "pg_shm on the RP2350 model (rp2350.h, SIO doorbell)"
#define PGD_CORES           2
#define PGD_RAM_BYTES       65536
#define PGC_STRESS_MESSAGES 200000L
#define PGC_TIMEOUT_MS      2000u
#define CPU_HZ              150000000u
#define DOORBELL            5u
#include "tests/ports/driver.h"
#define PGD_UNCACHED
#include "tests/ports/cm_port.h"

static pgm_sio sio;
static pg_shm_rp2350 bells;

static void bell_isr(void *arg)
{
    pg_shm_rp2350_isr((pg_shm_rp2350 *)arg);
}

static void port_start(void)
{
    int c;
    pgm_reset(PGD_CORES, 0x411FD210u, CPU_HZ / 1000000u); /* Cortex-M33 r1p0 */
    pgm_rp_setup(&sio, 1, 0x400b0000u);
    memset(&bells, 0, sizeof bells);
    for (c = 0; c < PGD_CORES; c++) pgm_vector(c, 26, bell_isr, &bells);
    sio.bell[0] = sio.bell[1] = 1u << DOORBELL; /* stale doorbells from before a restart */
    pgm_start();
}

static void port_attach(int core, pg_shm_hooks *h)
{
    pgm_enter(core);
    pg_shm_rp2350_hooks(h, &bells, DOORBELL);
    pg_shm_cm_tick_start(CPU_HZ);
}

static int port_storm_check(uint64_t notifies)
{
    print_message("storm: %llu notifies, %llu doorbell writes, bell interrupts taken: %llu, %llu; FIFO words: %llu\n",
                  (unsigned long long)notifies, (unsigned long long)sio.bells,
                  (unsigned long long)pgm.core[0].isr_runs[26], (unsigned long long)pgm.core[1].isr_runs[26],
                  (unsigned long long)sio.pushes);
    return sio.bell[0] || sio.bell[1] || sio.pushes || sio.bells == 0 || sio.bells > notifies ||
           !pgm.core[0].isr_runs[26] || !pgm.core[1].isr_runs[26];
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
};

PGD_SUITE(tests)
