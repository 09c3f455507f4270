/* test_port_rp2040.c — ports/platform/rp2040.h on two host threads as the RP2040's cores,
   against the model of its SIO FIFOs, TIMER and Cortex-M0+ cores (tests/ports/): the port
   conformance suite over pg_shm and the doorbell storm. tests/test_port_rp2040_shared.c
   builds the same with PG_SHM_RP2040_SHARED_FIFO: the FIFO then belongs to a handler that
   behaves like pico-sdk's multicore_lockout victim (drain, echo its magic word, ignore the
   rest); pg_shm must never touch it, and lockout handshakes run between its messages. */
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
#include "ports/platform/rp2040.h"

#if PG_SHM_RP2040_SHARED_FIFO
#define PGD_NAME "pg_shm on the RP2040 model (rp2040.h, FIFO shared with pico-sdk)"
#else
#define PGD_NAME "pg_shm on the RP2040 model (rp2040.h, SIO FIFO doorbell)"
#endif
#define PGD_CORES           2
#define PGD_RAM_BYTES       65536
#define PGC_STRESS_MESSAGES 200000L
#define PGC_TIMEOUT_MS      2000u
#define CPU_HZ              125000000u

#include "tests/ports/driver.h"
#define PGD_UNCACHED
#include "tests/ports/cm_port.h"

static pgm_sio sio;
static pg_shm_rp2040 bells;
static uint64_t foreign_words;

static void rp2040_isr(void *arg)
{
    pg_shm_rp2040_isr((pg_shm_rp2040 *)arg);
}

/* Shared mode: the FIFO's owner, as pico-sdk's multicore_lockout victim handler: drain it,
   answer its own magic word (push it back, SEV), ignore the rest. */
#define LOCKOUT_MAGIC 0x73a8831eu
static void foreign_isr(void *arg)
{
    (void)arg;
    while (PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_ST) & PG_SHM_RP2040_VLD) {
        uint32_t word = PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_RD);
        foreign_words++;
        if (word == LOCKOUT_MAGIC && (PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_ST) & PG_SHM_RP2040_RDY)) {
            PG_SHM_MMIO_WR(PG_SHM_RP2040_FIFO_WR, LOCKOUT_MAGIC);
            PG_SHM_CM_SEV();
        }
    }
    PG_SHM_MMIO_WR(PG_SHM_RP2040_FIFO_ST, 0xFFu);
}

#if PG_SHM_RP2040_SHARED_FIFO
/* Core 0 locks core 1 out over the FIFO (as multicore_lockout_start does: its own FIFO
   interrupt off, the magic word out, the echo back) between pg_shm messages both ways. */
static int lockout_body(pg_group *g, int core, void *arg)
{
    uint32_t i, v = 0, handshakes = 0;
    size_t got;
    (void)arg;
    for (i = 0; i < 300; i++) {
        if (core == 0 && i % 3 == 0) {
            pg_shm_cm_irq_disable(15u);
            while (!(PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_ST) & PG_SHM_RP2040_RDY)) PG_SHM_CM_WFE();
            PG_SHM_MMIO_WR(PG_SHM_RP2040_FIFO_WR, LOCKOUT_MAGIC);
            PG_SHM_CM_SEV();
            while (!(PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_ST) & PG_SHM_RP2040_VLD)) PG_SHM_CM_WFE();
            if (PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_RD) != LOCKOUT_MAGIC) return __LINE__;
            handshakes++;
            pg_shm_cm_irq_enable(15u);
        }
        if (core == 0) {
            if (pg_send(g, 1, 7, &i, sizeof i) || pg_recv(g, 1, 8, &v, sizeof v, &got) || v != i + 1) return __LINE__;
        } else {
            if (pg_recv(g, 0, 7, &v, sizeof v, &got) || v != i) return __LINE__;
            v = i + 1;
            if (pg_send(g, 0, 8, &v, sizeof v)) return __LINE__;
        }
    }
    return core == 0 && handshakes != 100 ? __LINE__ : 0;
}

/* Shared mode: pico-sdk's lockout handshakes over the FIFO and pg_shm's traffic interleave;
   each sees only its own words. */
static void test_lockout_coexists(void **state)
{
    (void)state;
    assert_int_equal(pgd_run(lockout_body, NULL), 0);
    print_message("100 lockout handshakes over the FIFO between 300 pg_shm round trips; the owner's handler "
                  "drained %llu words\n",
                  (unsigned long long)foreign_words);
    assert_int_equal((int)foreign_words, 100);
}
#endif

static void port_start(void)
{
    int c;
    pgm_reset(PGD_CORES, 0x410CC601u, CPU_HZ / 1000000u); /* CPUID of a Cortex-M0+ r0p1 */
    pgm_rp_setup(&sio, 0, 0x40054000u);
    memset(&bells, 0, sizeof bells);
    foreign_words = 0;
    for (c = 0; c < PGD_CORES; c++) pgm_vector(c, 15 + c, PG_SHM_RP2040_SHARED_FIFO ? foreign_isr : rp2040_isr, &bells);
    pgm_start();
}

static void port_attach(int core, pg_shm_hooks *h)
{
    pgm_enter(core);
    if (PG_SHM_RP2040_SHARED_FIFO) pg_shm_cm_irq_enable(15u + (uint32_t)core); /* the SDK's handler */
    pg_shm_rp2040_hooks(h, &bells);
    pg_shm_cm_tick_start(CPU_HZ);
}

static int port_storm_check(uint64_t notifies)
{
    int c, bad = 0;
    print_message("storm: %llu notifies, %llu FIFO words pushed, %llu SIO interrupts taken (%llu, %llu), "
                  "%llu words drained by the FIFO's owner\n",
                  (unsigned long long)notifies, (unsigned long long)sio.pushes,
                  (unsigned long long)(pgm.core[0].isr_runs[15] + pgm.core[1].isr_runs[16]),
                  (unsigned long long)pgm.core[0].isr_runs[15], (unsigned long long)pgm.core[1].isr_runs[16],
                  (unsigned long long)foreign_words);
    for (c = 0; c < PGD_CORES; c++) {
        bad |= sio.count[c] != 0 || sio.wof[c] || sio.roe[c]; /* drained, flags cleared */
        bad |= (pgm.core[c].line[0] >> 15 & 3u) != 0;         /* both SIO lines low */
        if (!PG_SHM_RP2040_SHARED_FIFO) bad |= pgm.core[c].isr_runs[15 + c] == 0;
    }
    if (PG_SHM_RP2040_SHARED_FIFO)
        bad |= sio.pushes != 0 || foreign_words != 0; /* pg_shm left the FIFO alone */
    else
        bad |= sio.pushes == 0 || sio.pushes > notifies || sio.full != 0; /* never wrote to a full FIFO */
    return bad;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
#if PG_SHM_RP2040_SHARED_FIFO
    cmocka_unit_test(test_lockout_coexists),
#endif
};

PGD_SUITE(tests)
