/* main.c — the port conformance suite (tests/pg_conformance.h, unchanged) over pg_shm with
   FreeRTOS tasks as ranks and ports/platform/freertos.h as the hooks (splitcore).

   Built by `scons test FREERTOS_KERNEL_PATH=<FreeRTOS-Kernel checkout>` against the kernel's
   POSIX port (portable/ThirdParty/GCC/Posix) and tests/freertos/FreeRTOSConfig.h; nothing of
   FreeRTOS is kept in this repository. Four rank tasks, one cmocka task and one "interrupt"
   task, all created statically before the scheduler starts (no heap). The rank tasks wait on
   a job board (notification index 0): pgc_run() formats the shared region, posts the body,
   and takes one notification per rank back. Inside a body, pg_shm's wait() is
   ulTaskNotifyTakeIndexed on index 1 (PG_SHM_FREERTOS_INDEX) and notify() gives on index 1,
   so the job board's notifications on index 0 are never taken by pg_shm, nor the other way
   round. The suite runs twice: as one SMP kernel (doorbell NULL), then as two AMP kernels
   (ranks r on kernel r % 2, each with its own bells) whose doorbell raises an "interrupt":
   the highest-priority interrupt task, which calls pg_shm_freertos_doorbell_isr() with the
   bells of the rank's kernel (FromISR notification + portYIELD_FROM_ISR). The POSIX port
   runs one task at a time, so every wait really has to hand the CPU to a peer task. The
   cmocka task ends the scheduler when both runs are done; main() returns the failure count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "FreeRTOS.h"
#include "task.h"

#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#define PG_SHM_FREERTOS_INDEX 1 /* the doorbell; index 0 is the job board */
#include "ports/platform/freertos.h"

#define RANKS        4
#define SLOTS        8
#define PAYLOAD      1024
#define REGION_BYTES PG_SHM_REGION_BYTES(RANKS, SLOTS, PAYLOAD)
#define JOB          0 /* notification index of the job board (1 is pg_shm's doorbell) */
#define PRIORITY     (tskIDLE_PRIORITY + 1)
#define IRQ_PRIORITY (tskIDLE_PRIORITY + 3)

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(64)));
static pg_shm shm[RANKS];
static pg_shm_freertos_bells bells;        /* SMP: task[r] is rank r's task */
static pg_shm_freertos_bells amp_bells[2]; /* AMP: kernel k knows the tasks of ranks r % 2 == k */
static int amp;
static StaticTask_t tcb[RANKS + 2];
static StackType_t stack[RANKS + 2][configMINIMAL_STACK_SIZE];
static TaskHandle_t rank_tasks[RANKS], cmocka_task, irq_task;
static volatile uint32_t irq_pending; /* bit r: an interrupt for the core that runs rank r */
static int (*job)(pg_group *g, void *arg);
static void *job_arg;
static int job_result[RANKS];
static int failed = 1;

void pg_freertos_assert_failed(const char *file, int line)
{
    fprintf(stderr, "FreeRTOS configASSERT failed: %s:%d\n", file, line);
    abort();
}

#if tskKERNEL_VERSION_MAJOR < 11 /* FreeRTOS 10.x: the application gives the idle task's memory */
void vApplicationGetIdleTaskMemory(StaticTask_t **tcb_out, StackType_t **stack_out, uint32_t *words)
{
    static StaticTask_t idle_tcb;
    static StackType_t idle_stack[configMINIMAL_STACK_SIZE];
    *tcb_out = &idle_tcb;
    *stack_out = idle_stack;
    *words = configMINIMAL_STACK_SIZE;
}
#endif

/* AMP: the doorbell of rank `core` is an interrupt on its kernel's core. */
static void amp_doorbell(int core)
{
    taskENTER_CRITICAL();
    irq_pending |= 1u << core;
    taskEXIT_CRITICAL();
    xTaskNotifyGiveIndexed(irq_task, JOB);
}

/* The interrupt: the highest-priority task, preempting the rank that rang; the handler runs
   with the POSIX port's interrupts (signals) masked, as its tick handler does. */
static void irq_main(void *arg)
{
    (void)arg;
    for (;;) {
        uint32_t p;
        int r;
        (void)ulTaskNotifyTakeIndexed(JOB, pdTRUE, portMAX_DELAY);
        taskENTER_CRITICAL();
        p = irq_pending;
        irq_pending = 0;
        taskEXIT_CRITICAL();
        taskENTER_CRITICAL(); /* as in a handler: the tick (a signal) cannot interrupt it */
        for (r = 0; r < RANKS; r++)
            if (p >> r & 1u) pg_shm_freertos_doorbell_isr(&amp_bells[r % 2], r);
        taskEXIT_CRITICAL();
    }
}

static void rank_task(void *arg)
{
    int r = (int)(intptr_t)arg, rc;
    pg_shm_hooks h;
    for (;;) {
        (void)ulTaskNotifyTakeIndexed(JOB, pdTRUE, portMAX_DELAY);
        pg_shm_freertos_hooks(&h, amp ? &amp_bells[r % 2] : &bells);
        rc = pg_shm_init(&shm[r], region, sizeof region, r, &h);
        job_result[r] = rc < 0 ? 100000 - rc : job(pg_shm_group(&shm[r]), job_arg);
        xTaskNotifyGiveIndexed(cmocka_task, JOB);
    }
}

/* pg_conformance.h's driver: body on every rank task; 0 or the first failure. */
static int pgc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    int r, rc = pg_shm_format(region, sizeof region, RANKS, SLOTS, PAYLOAD);
    if (rc) return rc;
    job = body;
    job_arg = arg;
    for (r = 0; r < RANKS; r++) xTaskNotifyGiveIndexed(rank_tasks[r], JOB);
    for (r = 0; r < RANKS; r++) (void)ulTaskNotifyTakeIndexed(JOB, pdFALSE, portMAX_DELAY);
    for (r = 0; r < RANKS; r++)
        if (job_result[r]) return job_result[r];
    return 0;
}

#include "pg_conformance.h"

static void cmocka_main(void *arg)
{
    long total = 0;
    int r;
    (void)arg;
    failed =
        cmocka_run_group_tests_name("pg_shm on FreeRTOS tasks (POSIX port, SMP) conformance", pgc_tests, NULL, NULL);
    for (r = 0; r < RANKS; r++) total += pgc_stress_received[r];
    amp = 1;
    failed += cmocka_run_group_tests_name("pg_shm on FreeRTOS tasks (POSIX port, 2 AMP kernels, doorbell "
                                          "interrupts) conformance",
                                          pgc_tests, NULL, NULL);
    for (r = 0; r < RANKS; r++) total += pgc_stress_received[r];
    print_message("pg_shm on FreeRTOS conformance stress (both runs): %ld messages received in sequence with valid "
                  "checksums\n",
                  total);
    fflush(stdout);
    vTaskEndScheduler();
    for (;;) vTaskDelay(1);
}

int main(void)
{
    int r;
    for (r = 0; r < RANKS; r++) {
        rank_tasks[r] = xTaskCreateStatic(rank_task, "rank", configMINIMAL_STACK_SIZE, (void *)(intptr_t)r, PRIORITY,
                                          stack[r], &tcb[r]);
        bells.task[r] = amp_bells[r % 2].task[r] = rank_tasks[r];
    }
    amp_bells[0].doorbell = amp_bells[1].doorbell = amp_doorbell;
    irq_task = xTaskCreateStatic(irq_main, "irq", configMINIMAL_STACK_SIZE, NULL, IRQ_PRIORITY, stack[RANKS + 1],
                                 &tcb[RANKS + 1]);
    cmocka_task =
        xTaskCreateStatic(cmocka_main, "cmocka", configMINIMAL_STACK_SIZE, NULL, PRIORITY, stack[RANKS], &tcb[RANKS]);
    printf("FreeRTOS %s, POSIX port: %d rank tasks over pg_shm (ports/platform/freertos.h)\n", tskKERNEL_VERSION_NUMBER,
           RANKS);
    fflush(stdout);
    vTaskStartScheduler();
    return failed;
}
