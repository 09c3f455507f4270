/* test_port_freertos.c — ports/platform/freertos.h on host threads as FreeRTOS tasks, against
   a model of the kernel's task notifications (tests/ports/freertos/): 4 ranks on one SMP
   kernel, and 4 ranks on two AMP kernels whose doorbells are interrupts the model's thread
   delivers to pg_shm_freertos_doorbell_isr; for each the port conformance suite over pg_shm
   and the doorbell storm. The doorbell is on notification index 1 (PG_SHM_FREERTOS_INDEX)
   and a notification waiting on index 0 (a stream buffer's) must survive everything. The
   tick count is 16 bits at 1024 Hz and wraps during the runs; now_us from it and from a
   user timer is checked to the microsecond across wraps. (With a FreeRTOS-Kernel checkout,
   tests/freertos/ runs the same hooks on the real kernel's POSIX port.) */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define PGM_RTOS_TICK16 1
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#define PG_SHM_FREERTOS_INDEX 1
#include "ports/platform/freertos.h"

#define PGD_NAME            "pg_shm on FreeRTOS tasks (freertos.h on a model of the kernel)"
#define PGD_CORES           4
#define PGD_RAM_BYTES       262144
#define PGC_STRESS_MESSAGES 100000L
#define PGC_TIMEOUT_MS      3000u
#include "tests/ports/driver.h"
#include "tests/ports/freertos/port.h"

static int amp; /* 0: one SMP kernel; 1: ranks r on kernel r % 2, doorbells are interrupts */
static pgm_rtos_task task[PGD_CORES];
static pg_shm_freertos_bells bells[2];
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    uint32_t pending; /* bit c: an interrupt for the core that runs rank c */
    int stop;
    uint64_t raised, delivered;
    pthread_t thread;
} irq = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0};

/* AMP: the doorbell raises an interrupt on the core of `core`'s kernel (latched). */
static void amp_doorbell(int core)
{
    pthread_mutex_lock(&irq.lock);
    irq.pending |= 1u << core;
    irq.raised++;
    pthread_cond_signal(&irq.cv);
    pthread_mutex_unlock(&irq.lock);
}

static void *irq_thread(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&irq.lock);
    while (!irq.stop || irq.pending) {
        uint32_t p = irq.pending;
        int c;
        if (!p) {
            pthread_cond_wait(&irq.cv, &irq.lock);
            continue;
        }
        irq.pending = 0;
        pthread_mutex_unlock(&irq.lock);
        for (c = 0; c < PGD_CORES; c++)
            if (p >> c & 1u) {
                pg_shm_freertos_doorbell_isr(&bells[c % 2], c);
                irq.delivered++;
            }
        pthread_mutex_lock(&irq.lock);
    }
    pthread_mutex_unlock(&irq.lock);
    return NULL;
}

static void port_start(void)
{
    int c;
    pgm_rtos_reset();
    memset(bells, 0, sizeof bells);
    for (c = 0; c < PGD_CORES; c++) {
        pgm_rtos_task_init(&task[c]);
        task[c].count[0] = 1; /* a stream buffer's notification, not pg_shm's */
        bells[amp ? c % 2 : 0].task[c] = &task[c];
    }
    if (amp) {
        bells[0].doorbell = bells[1].doorbell = amp_doorbell;
        irq.stop = 0;
        irq.pending = 0;
        irq.raised = irq.delivered = 0;
        pthread_create(&irq.thread, NULL, irq_thread, NULL);
    }
}

static int index0_kept = 1;

static void port_stop(void)
{
    int c;
    if (amp) {
        pthread_mutex_lock(&irq.lock);
        irq.stop = 1;
        pthread_cond_signal(&irq.cv);
        pthread_mutex_unlock(&irq.lock);
        pthread_join(irq.thread, NULL);
    }
    for (c = 0; c < PGD_CORES; c++) index0_kept &= task[c].count[0] == 1;
}

static void port_attach(int core, pg_shm_hooks *h)
{
    pgm_rtos_enter(&task[core]);
    pg_shm_freertos_hooks(h, &bells[amp ? core % 2 : 0]);
}

static int port_storm_check(uint64_t notifies)
{
    print_message("storm (%s): %llu notifies; notifications taken by rank 0: %llu, rank 1: %llu; %llu interrupts "
                  "raised, %llu delivered, %llu gives from them\n",
                  amp ? "AMP" : "SMP", (unsigned long long)notifies, (unsigned long long)task[0].taken,
                  (unsigned long long)task[1].taken, (unsigned long long)irq.raised, (unsigned long long)irq.delivered,
                  (unsigned long long)pgm_rtos.isr_gives);
    return !task[0].taken || !task[1].taken ||
           (amp && (!irq.delivered || irq.delivered > irq.raised || pgm_rtos.isr_gives != irq.delivered)) ||
           !index0_kept;
}

/* The AMP kernels: the suite and the storm once more, doorbells through the interrupt. */
static void test_amp_conformance(void **state)
{
    size_t i;
    (void)state;
    amp = 1;
    for (i = 0; i < sizeof pgc_tests / sizeof pgc_tests[0]; i++) pgc_tests[i].test_func(state);
    pgd_test_storm(state);
    amp = 0;
}

static void test_index0_untouched(void **state)
{
    (void)state;
    assert_true(index0_kept);
}

/* now_us from the 16-bit tick count at 1024 Hz: exactly floor(ticks * 10^6 / 1024) modulo
   2^32 across many tick wraps (the rate does not divide 10^6: no drift either). */
static void test_now_us_ticks(void **state)
{
    pg_shm_freertos_bells b;
    uint64_t total = 0;
    uint32_t step[] = {1, 7, 1000, 40000, 65535, 3, 65000, 12345};
    int i;
    (void)state;
    memset(&b, 0, sizeof b);
    pgm_rtos.manual = 1;
    pgm_rtos.tick_hz = 1024;
    pgm_rtos.ticks = PGM_RTOS_TICK_START; /* tick count 0 */
    (void)pg_shm_freertos_now_us(&b);
    for (i = 0; i < 400; i++) {
        uint32_t us;
        total += step[i % 8];
        pgm_rtos.ticks += step[i % 8];
        us = pg_shm_freertos_now_us(&b);
        assert_int_equal(us, (uint32_t)(total * 1000000u / 1024u));
    }
    pgm_rtos.manual = 0;
}

/* now_us from a user timer: a 32-bit counter at 3 MHz and at 32768 Hz, across its wrap. */
static uint32_t fake_counter;
static uint32_t fake_timer(void)
{
    return fake_counter;
}

static void test_now_us_timer(void **state)
{
    static const uint32_t rates[] = {3000000u, 32768u, 480000000u};
    int r, i;
    (void)state;
    for (r = 0; r < 3; r++) {
        pg_shm_freertos_bells b;
        uint64_t total = 0;
        memset(&b, 0, sizeof b);
        b.timer = fake_timer;
        b.timer_hz = rates[r];
        fake_counter = 0xFFFFFF00u;
        b.clock[PG_SHM_MAX_CORES].last = fake_counter;
        for (i = 0; i < 300; i++) {
            uint32_t d = (uint32_t)(i * 2654435761u) % (rates[r] / 2u) + 1u; /* < half a second */
            fake_counter += d;
            total += d;
            assert_int_equal(pg_shm_freertos_now_us(&b), (uint32_t)(total * 1000000u / rates[r]));
        }
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_now_us_ticks),    cmocka_unit_test(test_now_us_timer),     cmocka_unit_test(pgd_test_storm),
    cmocka_unit_test(test_amp_conformance), cmocka_unit_test(test_index0_untouched),
};

int main(void)
{
    int failed;
    pgm_rtos.tick_hz = 1024;
    failed = cmocka_run_group_tests_name(PGD_NAME " (SMP) conformance", pgc_tests, NULL, NULL);
    print_message("SMP conformance stress: %ld messages received in sequence with valid checksums\n",
                  pgc_stress_received[0] + pgc_stress_received[1] + pgc_stress_received[2] + pgc_stress_received[3]);
    failed += cmocka_run_group_tests_name(PGD_NAME, tests, NULL, NULL);
    return failed;
}
