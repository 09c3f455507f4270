/* main.c — the port conformance suite (tests/pg_conformance.h, unchanged) over pg_shm with
   FreeRTOS tasks as ranks and ports/platform/freertos.h as the hooks (splitcore).

   Built by `scons test FREERTOS_KERNEL_PATH=<FreeRTOS-Kernel checkout>` against the kernel's
   POSIX port (portable/ThirdParty/GCC/Posix) and tests/freertos/FreeRTOSConfig.h; nothing of
   FreeRTOS is kept in this repository. Four rank tasks and one cmocka task, all created
   statically before the scheduler starts (no heap). The rank tasks wait on a job board
   (notification index 1): pgc_run() formats the shared region, posts the body, and takes
   one notification per rank back. Inside a body, pg_shm's wait() is ulTaskNotifyTake on
   index 0 and notify() is xTaskNotifyGive, exactly as on a board; the POSIX port runs one
   task at a time, so every wait really has to hand the CPU to a peer task. The cmocka task
   ends the scheduler when the suite is done; main() returns the failure count. */
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
#include "ports/platform/freertos.h"

#define RANKS        4
#define SLOTS        8
#define PAYLOAD      1024
#define REGION_BYTES PG_SHM_REGION_BYTES(RANKS, SLOTS, PAYLOAD)
#define JOB          1 /* notification index of the job board (0 is pg_shm's doorbell) */
#define PRIORITY     (tskIDLE_PRIORITY + 1)

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(64)));
static pg_shm shm[RANKS];
static pg_shm_freertos_bells bells; /* task[r]: rank r's task */
static StaticTask_t tcb[RANKS + 1];
static StackType_t stack[RANKS + 1][configMINIMAL_STACK_SIZE];
static TaskHandle_t cmocka_task;
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

static void rank_task(void *arg)
{
    int r = (int)(intptr_t)arg, rc;
    pg_shm_hooks h;
    pg_shm_freertos_hooks(&h, &bells);
    for (;;) {
        (void)ulTaskNotifyTakeIndexed(JOB, pdTRUE, portMAX_DELAY);
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
    for (r = 0; r < RANKS; r++) xTaskNotifyGiveIndexed(bells.task[r], JOB);
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
    failed = cmocka_run_group_tests_name("pg_shm on FreeRTOS tasks (POSIX port) conformance", pgc_tests, NULL, NULL);
    for (r = 0; r < RANKS; r++) total += pgc_stress_received[r];
    print_message("pg_shm on FreeRTOS conformance stress: %ld messages received in sequence with valid checksums\n",
                  total);
    fflush(stdout);
    vTaskEndScheduler();
    for (;;) vTaskDelay(1);
}

int main(void)
{
    int r;
    for (r = 0; r < RANKS; r++)
        bells.task[r] = xTaskCreateStatic(rank_task, "rank", configMINIMAL_STACK_SIZE, (void *)(intptr_t)r, PRIORITY,
                                          stack[r], &tcb[r]);
    cmocka_task =
        xTaskCreateStatic(cmocka_main, "cmocka", configMINIMAL_STACK_SIZE, NULL, PRIORITY, stack[RANKS], &tcb[RANKS]);
    printf("FreeRTOS %s, POSIX port: %d rank tasks over pg_shm (ports/platform/freertos.h)\n", tskKERNEL_VERSION_NUMBER,
           RANKS);
    fflush(stdout);
    vTaskStartScheduler();
    return failed;
}
