/* FreeRTOS.h — a behavioural model of the FreeRTOS kernel API that ports/platform/freertos.h
   uses, on host threads (splitcore tests: tests/test_port_freertos.c, tests/test_port_esp32.c;
   with a real kernel, tests/freertos/ runs the same hooks on FreeRTOS's POSIX port)

   Tasks are host threads bound to a pgm_rtos_task; each has configTASK_NOTIFICATION_ARRAY_ENTRIES
   notification counts. xTaskNotifyGive[Indexed] adds one and wakes the task;
   ulTaskNotifyTake[Indexed] waits until its count is not 0 or the timeout (in ticks of
   configTICK_RATE_HZ) passed, returns the count and clears it (or takes one). The ...FromISR
   forms do the same from the model's interrupt thread. The tick count is TickType_t: 16 bits
   with PGM_RTOS_TICK16 (configUSE_16_BIT_TICKS), else 32, and starts PGM_RTOS_TICK_START ticks
   before it wraps (pgm_rtos.manual: the test sets it). pgm_rtos.quiet: timeouts do not end a take, so only a notification does;
   one that waits longer than 2 s counts as lost (pgm_rtos.lost). Kernel versions >= 10.4
   (indexed notifications) are what it claims to be. */
#ifndef INC_FREERTOS_H
#define INC_FREERTOS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "tests/ports/host.h"

#define tskKERNEL_VERSION_MAJOR               11
#define configTASK_NOTIFICATION_ARRAY_ENTRIES 3
#define configTICK_RATE_HZ                    pgm_rtos.tick_hz /* a test may change it */
#ifndef PGM_RTOS_TICK_START
#define PGM_RTOS_TICK_START 50u
#endif
#define pdTRUE                     ((BaseType_t)1)
#define pdFALSE                    ((BaseType_t)0)
#define pdPASS                     pdTRUE
#define portMAX_DELAY              ((TickType_t) ~(TickType_t)0)
#define tskDEFAULT_INDEX_TO_NOTIFY 0

typedef long BaseType_t;
typedef unsigned long UBaseType_t;
#ifdef PGM_RTOS_TICK16
typedef uint16_t TickType_t;
#else
typedef uint32_t TickType_t;
#endif

typedef struct pgm_rtos_task {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    uint32_t count[configTASK_NOTIFICATION_ARRAY_ENTRIES];
    uint64_t given, taken, timeouts;
} pgm_rtos_task;
typedef pgm_rtos_task *TaskHandle_t;

static struct {
    uint32_t tick_hz;
    int quiet, manual; /* manual: the tick count is `ticks`, set by the test */
    uint64_t ticks, t0, lost, isr_gives, yields;
} pgm_rtos = {1000u, 0, 0, 0, 0, 0, 0, 0};
static __thread pgm_rtos_task *pgm_rtos_current;

#define pgm_rtos_ns pgh_ns

static inline void pgm_rtos_reset(void)
{
    pgm_rtos.t0 = pgm_rtos_ns();
    pgm_rtos.lost = pgm_rtos.isr_gives = pgm_rtos.yields = 0;
}

static inline void pgm_rtos_task_init(pgm_rtos_task *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cv, NULL);
}

/* The calling thread becomes task t. */
static inline void pgm_rtos_enter(pgm_rtos_task *t)
{
    pgm_rtos_current = t;
}

/* Ticks since pgm_rtos_reset (or the test's count), unwrapped. */
static inline uint64_t pgm_rtos_ticks(void)
{
    return pgm_rtos.manual ? pgm_rtos.ticks : (pgm_rtos_ns() - pgm_rtos.t0) * pgm_rtos.tick_hz / 1000000000u;
}

static inline TickType_t xTaskGetTickCount(void)
{
    return (TickType_t)(pgm_rtos_ticks() - PGM_RTOS_TICK_START);
}

static inline TaskHandle_t xTaskGetCurrentTaskHandle(void)
{
    return pgm_rtos_current;
}

static inline void pgm_rtos_give(TaskHandle_t t, UBaseType_t index)
{
    pthread_mutex_lock(&t->lock);
    t->count[index]++;
    t->given++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->lock);
}

static inline uint32_t ulTaskNotifyTakeIndexed(UBaseType_t index, BaseType_t clear, TickType_t ticks)
{
    pgm_rtos_task *t = pgm_rtos_current;
    uint64_t start = pgm_rtos_ns(), limit;
    uint32_t v;
    limit = pgm_rtos.quiet ? 2000000000u : (uint64_t)ticks * 1000000000u / pgm_rtos.tick_hz;
    pthread_mutex_lock(&t->lock);
    while (!t->count[index]) {
        uint64_t waited = pgh_ns() - start;
        if (waited >= limit) break;
        pgh_wait(&t->cv, &t->lock, limit - waited < 1000000u ? limit - waited : 1000000u);
    }
    v = t->count[index];
    if (v) {
        t->count[index] = clear ? 0 : v - 1;
        t->taken++;
    } else {
        t->timeouts++;
        if (pgm_rtos.quiet) __atomic_fetch_add(&pgm_rtos.lost, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&t->lock);
    return v;
}

static inline uint32_t ulTaskNotifyTake(BaseType_t clear, TickType_t ticks)
{
    return ulTaskNotifyTakeIndexed(tskDEFAULT_INDEX_TO_NOTIFY, clear, ticks);
}

static inline void vTaskNotifyGiveIndexedFromISR(TaskHandle_t t, UBaseType_t index, BaseType_t *woken)
{
    pgm_rtos_give(t, index);
    __atomic_fetch_add(&pgm_rtos.isr_gives, 1, __ATOMIC_RELAXED);
    if (woken) *woken = pdTRUE;
}

static inline void vTaskNotifyGiveFromISR(TaskHandle_t t, BaseType_t *woken)
{
    vTaskNotifyGiveIndexedFromISR(t, tskDEFAULT_INDEX_TO_NOTIFY, woken);
}

#define xTaskNotifyGiveIndexed(t, index) (pgm_rtos_give((t), (index)), pdPASS)
#define xTaskNotifyGive(t)               xTaskNotifyGiveIndexed((t), tskDEFAULT_INDEX_TO_NOTIFY)
#define portYIELD_FROM_ISR(woken)                                             \
    do {                                                                      \
        if (woken) __atomic_fetch_add(&pgm_rtos.yields, 1, __ATOMIC_RELAXED); \
    } while (0)

#endif /* INC_FREERTOS_H */
