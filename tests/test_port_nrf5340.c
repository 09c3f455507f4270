/* test_port_nrf5340.c — ports/platform/nrf5340.h on two host threads as the nRF5340's
   application core (rank 0) and network core (rank 1), against the model of both IPC
   instances, both TIMER2s and the Cortex-M33 cores (tests/ports/): the doorbell storm and
   the port conformance suite over pg_shm. */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ports/model_ipc.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/nrf5340.h"

#define PGD_NAME            "pg_shm on the nRF5340 model (nrf5340.h: IPC doorbell, TIMER2 clock)"
#define PGD_CORES           2
#define PGD_RAM_BYTES       65536
#define PGC_STRESS_MESSAGES 200000L
#define PGC_TIMEOUT_MS      2000u
#include "tests/ports/driver.h"
#define PGD_UNCACHED
#include "tests/ports/cm_port.h"

static const uint32_t hz[PGD_CORES] = {128000000u, 64000000u};
static pgm_ipc ipc;
static pgm_nrf_timer timer[PGD_CORES];
static pg_shm_nrf5340 bell[PGD_CORES]; /* one per core image */

static void ipc_isr(void *arg)
{
    pg_shm_nrf5340_isr((pg_shm_nrf5340 *)arg);
}

static void port_start(void)
{
    pgm_reset(PGD_CORES, 0x410FD214u, hz[0] / 1000000u); /* Cortex-M33 r0p4 */
    pgm.core[1].mhz = hz[1] / 1000000u;
    pgm_nrf_setup(&ipc, timer);
    memset(bell, 0, sizeof bell);
    pgm_vector(0, 42, ipc_isr, &bell[0]);
    pgm_vector(1, 18, ipc_isr, &bell[1]);
    pgm_start();
}

static void port_attach(int core, pg_shm_hooks *h)
{
    pgm_enter(core);
    pg_shm_nrf5340_hooks(h, &bell[core], (uint32_t)core);
    pg_shm_cm_tick_start(hz[core]);
}

static int port_storm_check(uint64_t notifies)
{
    int k, m, bad = 0;
    print_message("storm: %llu notifies, %llu IPC sends, IPC interrupts taken: application %llu, network %llu\n",
                  (unsigned long long)notifies, (unsigned long long)ipc.sends,
                  (unsigned long long)pgm.core[0].isr_runs[42], (unsigned long long)pgm.core[1].isr_runs[18]);
    for (k = 0; k < 2; k++)
        for (m = 0; m < 16; m++) bad |= ipc.events[k][m] != 0; /* every event taken and cleared */
    return bad || ipc.sends == 0 || ipc.sends > notifies || !pgm.core[0].isr_runs[42] || !pgm.core[1].isr_runs[18];
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
};

PGD_SUITE(tests)
