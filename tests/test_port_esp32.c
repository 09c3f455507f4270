/* test_port_esp32.c — ports/platform/freertos.h as an ESP32 / ESP32-S3 firmware uses it: built
   as under ESP-IDF (ESP_PLATFORM: the kernel's headers are "freertos/FreeRTOS.h"), two rank
   tasks (the two Xtensa cores, one SMP kernel: doorbell NULL), the default 100 Hz tick, and
   esp_timer (1 MHz, 64 bits) as the clock. Against the model of the kernel's notifications
   (tests/ports/freertos/): the port conformance suite over pg_shm, the doorbell storm and the
   clock across its 32-bit wrap. */
#define _DEFAULT_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define ESP_PLATFORM 1
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/freertos.h"

#define PGD_NAME            "pg_shm on ESP-IDF's FreeRTOS SMP (freertos.h, 2 cores, esp_timer clock)"
#define PGD_CORES           2
#define PGD_RAM_BYTES       65536
#define PGC_STRESS_MESSAGES 200000L
#define PGC_TIMEOUT_MS      3000u
#include "tests/ports/driver.h"
#include "tests/ports/freertos/port.h"

static pgm_rtos_task task[PGD_CORES];
static pg_shm_freertos_bells bells;

/* esp_timer_get_time(): microseconds since boot, 64 bits (here from the model's start,
   10 ms before the low word wraps). */
static int64_t esp_timer_get_time(void)
{
    return (int64_t)((pgm_rtos_ns() - pgm_rtos.t0) / 1000u + 0x100000000ull - 10000u);
}

static uint32_t esp_timer_low(void)
{
    return (uint32_t)esp_timer_get_time();
}

static void port_start(void)
{
    int c;
    pgm_rtos_reset();
    memset(&bells, 0, sizeof bells);
    bells.timer = esp_timer_low;
    bells.timer_hz = 1000000u;
    for (c = 0; c < PGD_CORES; c++) {
        pgm_rtos_task_init(&task[c]);
        bells.task[c] = &task[c]; /* xTaskCreatePinnedToCore(..., &bells.task[c], c) */
    }
}

static void port_stop(void)
{}

static void port_attach(int core, pg_shm_hooks *h)
{
    pgm_rtos_enter(&task[core]);
    pg_shm_freertos_hooks(h, &bells);
}

static int port_storm_check(uint64_t notifies)
{
    print_message("storm: %llu notifies; notifications taken by core 0: %llu, core 1: %llu\n",
                  (unsigned long long)notifies, (unsigned long long)task[0].taken, (unsigned long long)task[1].taken);
    return !task[0].taken || !task[1].taken;
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pgd_test_clock),
    cmocka_unit_test(pgd_test_storm),
};

int main(void)
{
    pgm_rtos.tick_hz = 100; /* CONFIG_FREERTOS_HZ's default */
    return pgd_main(tests, sizeof tests / sizeof *tests);
}
