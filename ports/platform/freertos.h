/* freertos.h — pg_shm platform hooks for FreeRTOS: ranks are tasks, the doorbell is a task
   notification (splitcore)

   Each rank runs in one task; `pg_shm_freertos_bells.task[core]` is that task's handle.
   notify(core) gives the core's task a notification (xTaskNotifyGive; never to the calling
   task itself); wait() takes it (ulTaskNotifyTake, clearing the count) with a timeout of
   PG_SHM_FREERTOS_TICKS ticks (default 1): a notification given before wait() is entered
   stays pending, so no doorbell is lost.

   Notification index: PG_SHM_FREERTOS_INDEX (default 0, every FreeRTOS version). FreeRTOS's
   stream and message buffers signal on index 0 too, so a firmware that uses them in the rank
   tasks sets it to 1 or more (FreeRTOS >= 10.4, configTASK_NOTIFICATION_ARRAY_ENTRIES above
   it): pg_shm then never takes a notification meant for a buffer, nor the other way round.

   now_us: set `timer` to a free-running 32-bit hardware counter and `timer_hz` to its rate
   (a 1 MHz timer, DWT->CYCCNT at the core clock on a Cortex-M, esp_timer on ESP-IDF: one
   that all cores read alike, since FreeRTOS SMP may move a task between cores). The count
   is turned into microseconds that wrap modulo 2^32, carrying the remainder, so any rate
   works without drift; it has to be read at least once per counter wrap while a timeout
   runs, which pg_shm's wait loop does. Without a timer (NULL) now_us counts the tick count
   the same way: correct across a wrap of 16- or 32-bit ticks and for any tick rate, but
   coarse: timeouts have one tick of resolution. The conversion keeps its state per rank (the
   calling task is found in task[]; other tasks share one more slot).

   One kernel for all cores (FreeRTOS SMP: RP2040, ESP32 under ESP-IDF, ...): leave
   `doorbell` NULL, the kernel delivers the notification across cores. One kernel per core
   (AMP, e.g. STM32H7's M7 + M4): the other core's task handle means nothing here, so set
   `doorbell` to a function that raises an interrupt on `core` (the hook files of this folder
   have one per chip: HSEM, MU, IPC); that core's interrupt handler calls
   pg_shm_freertos_doorbell_isr() with its own bells, which gives the rank's task the
   notification from the ISR and yields if that task should run now.

   ESP-IDF (ESP32, ESP32-S3: FreeRTOS SMP on two Xtensa cores): the kernel headers are
   included as "freertos/FreeRTOS.h" there (ESP_PLATFORM). Pin each rank with
   xTaskCreatePinnedToCore, put the region in internal DRAM (coherent between the cores; a
   region in PSRAM would need esp_cache_msync hooks), and use esp_timer as the timer (1 MHz).
   The repository's root is an ESP-IDF component (idf_component.yml, CMakeLists.txt).

   Example (SMP kernel, 2 ranks; the region formatted before the rank tasks start):
       static pg_shm_freertos_bells bells;   // task[] is filled before the scheduler starts
       static uint32_t ranks_region[PG_SHM_REGION_BYTES(2, 4, 512) / 4] __attribute__((aligned(64)));
       static pg_shm rank_shm[2];
       static void rank_task(void *arg) {
           int rank = (int)(intptr_t)arg;
           pg_shm_hooks h;
           pg_shm_freertos_hooks(&h, &bells);
           if (pg_shm_init(&rank_shm[rank], ranks_region, sizeof ranks_region, rank, &h) == 0) {
               // ... this rank's work on pg_shm_group(&rank_shm[rank]) ...
           }
           vTaskDelete(NULL);
       }
       void start(void) {
           pg_shm_format(ranks_region, sizeof ranks_region, 2, 4, 512);
           xTaskCreate(rank_task, "r0", 1024, (void *)0, 2, &bells.task[0]);
           xTaskCreate(rank_task, "r1", 1024, (void *)1, 2, &bells.task[1]);
           vTaskStartScheduler();
       }

   Needs FreeRTOS.h and task.h (configUSE_TASK_NOTIFICATIONS = 1, the default). Everything
   here is static inline. */
#ifndef PG_SHM_FREERTOS_H
#define PG_SHM_FREERTOS_H

#include <stdint.h>
#include <string.h>
#if defined(ESP_PLATFORM)
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#else
#include "FreeRTOS.h"
#include "task.h"
#endif
#include "../pg_shm.h"

#ifndef PG_SHM_FREERTOS_TICKS
#define PG_SHM_FREERTOS_TICKS 1 /* longest sleep of one wait(), in ticks */
#endif
#ifndef PG_SHM_FREERTOS_INDEX
#define PG_SHM_FREERTOS_INDEX 0 /* the notification index of the doorbell */
#endif
#if PG_SHM_FREERTOS_INDEX
#define PG_SHM_FREERTOS__GIVE(t)        xTaskNotifyGiveIndexed((t), PG_SHM_FREERTOS_INDEX)
#define PG_SHM_FREERTOS__TAKE(ticks)    ulTaskNotifyTakeIndexed(PG_SHM_FREERTOS_INDEX, pdTRUE, (ticks))
#define PG_SHM_FREERTOS__GIVE_ISR(t, w) vTaskNotifyGiveIndexedFromISR((t), PG_SHM_FREERTOS_INDEX, (w))
#else
#define PG_SHM_FREERTOS__GIVE(t)        xTaskNotifyGive(t)
#define PG_SHM_FREERTOS__TAKE(ticks)    ulTaskNotifyTake(pdTRUE, (ticks))
#define PG_SHM_FREERTOS__GIVE_ISR(t, w) vTaskNotifyGiveFromISR((t), (w))
#endif

typedef struct pg_shm_freertos_bells {
    TaskHandle_t task[PG_SHM_MAX_CORES]; /* the task of each rank (this kernel's ranks) */
    void (*doorbell)(int core);          /* AMP: interrupt `core`; NULL: notify task[core] */
    uint32_t (*timer)(void);             /* free-running 32-bit counter; NULL: the tick count */
    uint32_t timer_hz;                   /* its rate (0: 1 MHz) */
    struct {
        uint32_t last, rem, us;
    } clock[PG_SHM_MAX_CORES + 1]; /* now_us's state per rank, + one for other tasks */
} pg_shm_freertos_bells;

static inline void pg_shm_freertos_notify(void *ctx, int core)
{
    pg_shm_freertos_bells *b = (pg_shm_freertos_bells *)ctx;
    if (b->doorbell)
        b->doorbell(core);
    else if (b->task[core] && b->task[core] != xTaskGetCurrentTaskHandle())
        (void)PG_SHM_FREERTOS__GIVE(b->task[core]);
}

static inline void pg_shm_freertos_wait(void *ctx, int self)
{
    (void)ctx;
    (void)self;
    (void)PG_SHM_FREERTOS__TAKE((TickType_t)PG_SHM_FREERTOS_TICKS);
}

static inline uint32_t pg_shm_freertos_now_us(void *ctx)
{
    pg_shm_freertos_bells *b = (pg_shm_freertos_bells *)ctx;
    TaskHandle_t me = xTaskGetCurrentTaskHandle();
    uint32_t now, d, hz, r = 0;
    uint64_t acc;
    while (r < PG_SHM_MAX_CORES && (!me || b->task[r] != me)) r++;
    if (b->timer) {
        now = b->timer();
        d = now - b->clock[r].last;
        hz = b->timer_hz ? b->timer_hz : 1000000u;
    } else { /* ticks wrap at TickType_t's width, 16 or 32 bits */
        now = (uint32_t)xTaskGetTickCount();
        d = (uint32_t)(TickType_t)((TickType_t)now - (TickType_t)b->clock[r].last);
        hz = (uint32_t)configTICK_RATE_HZ;
    }
    b->clock[r].last = now;
    acc = (uint64_t)d * 1000000u + b->clock[r].rem;
    b->clock[r].us += (uint32_t)(acc / hz);
    b->clock[r].rem = (uint32_t)(acc % hz);
    return b->clock[r].us;
}

/* From the doorbell interrupt of the core that runs rank `core` (AMP). */
static inline void pg_shm_freertos_doorbell_isr(pg_shm_freertos_bells *b, int core)
{
    BaseType_t woken = pdFALSE;
    if (b->task[core]) PG_SHM_FREERTOS__GIVE_ISR(b->task[core], &woken);
    portYIELD_FROM_ISR(woken);
}

/* Fill `h` for tasks sharing `bells`. */
static inline void pg_shm_freertos_hooks(pg_shm_hooks *h, pg_shm_freertos_bells *bells)
{
    memset(h, 0, sizeof *h);
    h->notify = pg_shm_freertos_notify;
    h->wait = pg_shm_freertos_wait;
    h->now_us = pg_shm_freertos_now_us;
    h->ctx = bells;
}

#endif /* PG_SHM_FREERTOS_H */
