/* freertos.h — pg_shm platform hooks for FreeRTOS: ranks are tasks, the doorbell is a task
   notification (splitcore)

   Each rank runs in one task; `pg_shm_freertos_bells.task[core]` is that task's handle.
   notify(core) gives the core's task a notification (xTaskNotifyGive); wait() takes it
   (ulTaskNotifyTake, clear on exit) with a timeout of PG_SHM_FREERTOS_TICKS ticks (default
   1): a notification given before wait() is entered stays pending, so no doorbell is lost.
   now_us() counts ticks (xTaskGetTickCount) in microseconds, so timeouts have tick
   resolution. No cache hooks: add them for cores with a D-cache (Cortex-M7; see
   ports/platform/README.md).

   One kernel for all cores (FreeRTOS SMP: RP2040, ESP32, ...): leave `doorbell` NULL, the
   kernel delivers the notification across cores. One kernel per core (AMP, e.g. STM32H7's
   M7 + M4): the other core's task handle means nothing here, so set `doorbell` to a
   function that raises an interrupt on `core` (HSEM, IPCC, MU, ...); that core's interrupt
   handler calls pg_shm_freertos_doorbell_isr() with its own bells, which gives its task the
   notification (vTaskNotifyGiveFromISR) and yields if that task should run now.

   Example (SMP kernel, 2 cores):
       static pg_shm_freertos_bells bells;           // task[] filled before the ranks run
       static void rank_task(void *arg) {
           int me = (int)(intptr_t)arg;  pg_shm_hooks h;
           pg_shm_freertos_hooks(&h, &bells);
           pg_shm_init(&shm[me], region, sizeof region, me, &h);
           // ... this rank's work on pg_shm_group(&shm[me]) ...
       }
       xTaskCreate(rank_task, "r0", 1024, (void *)0, 2, &bells.task[0]);  // (and r1)

   Needs FreeRTOS.h and task.h (configUSE_TASK_NOTIFICATIONS = 1, the default). Everything
   here is static inline. */
#ifndef PG_SHM_FREERTOS_H
#define PG_SHM_FREERTOS_H

#include <stdint.h>
#include <string.h>
#include "FreeRTOS.h"
#include "task.h"
#include "../pg_shm.h"

#ifndef PG_SHM_FREERTOS_TICKS
#define PG_SHM_FREERTOS_TICKS 1 /* longest sleep of one wait(), in ticks */
#endif

typedef struct pg_shm_freertos_bells {
    TaskHandle_t task[PG_SHM_MAX_CORES]; /* the task of each rank (this kernel's ranks) */
    void (*doorbell)(int core);          /* AMP: interrupt `core`; NULL: notify task[core] */
} pg_shm_freertos_bells;

static inline void pg_shm_freertos_notify(void *ctx, int core)
{
    pg_shm_freertos_bells *b = (pg_shm_freertos_bells *)ctx;
    if (b->doorbell)
        b->doorbell(core);
    else if (b->task[core])
        xTaskNotifyGive(b->task[core]);
}

static inline void pg_shm_freertos_wait(void *ctx, int self)
{
    (void)ctx;
    (void)self;
    (void)ulTaskNotifyTake(pdTRUE, (TickType_t)PG_SHM_FREERTOS_TICKS);
}

static inline uint32_t pg_shm_freertos_now_us(void *ctx)
{
    (void)ctx;
    return (uint32_t)xTaskGetTickCount() * (uint32_t)(1000000u / configTICK_RATE_HZ);
}

/* From the doorbell interrupt of the core that runs rank `core` (AMP). */
static inline void pg_shm_freertos_doorbell_isr(pg_shm_freertos_bells *b, int core)
{
    BaseType_t woken = pdFALSE;
    if (b->task[core]) vTaskNotifyGiveFromISR(b->task[core], &woken);
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
