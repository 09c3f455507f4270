/* FreeRTOSConfig.h — the kernel configuration of tests/freertos/main.c: the pg_shm
   conformance suite on FreeRTOS's POSIX port (portable/ThirdParty/GCC/Posix), tasks as
   ranks, ports/platform/freertos.h as pg_shm's hooks (splitcore).

   Static allocation only (no heap_x.c is linked): the ranks and the cmocka task are
   xTaskCreateStatic tasks; the kernel provides the idle task's memory. Tick 1 kHz, so a
   pg_shm wait() sleeps at most 1 ms and timeouts have 1 ms resolution. Notification index 0
   is the driver's job board, index 1 pg_shm's doorbell (PG_SHM_FREERTOS_INDEX 1). */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#define configUSE_PREEMPTION                    1
#define configUSE_TIME_SLICING                  1
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 0
#define configUSE_IDLE_HOOK                     0
#define configUSE_TICK_HOOK                     0
#define configUSE_MALLOC_FAILED_HOOK            0
#define configUSE_DAEMON_TASK_STARTUP_HOOK      0
#define configTICK_RATE_HZ                      1000
#define configMAX_PRIORITIES                    5
#define configMINIMAL_STACK_SIZE                256 /* the POSIX port keeps its thread record here */
#define configMAX_TASK_NAME_LEN                 12
#define configIDLE_SHOULD_YIELD                 1
#define configUSE_TASK_NOTIFICATIONS            1
#define configTASK_NOTIFICATION_ARRAY_ENTRIES   2
#define configUSE_MUTEXES                       0
#define configUSE_RECURSIVE_MUTEXES             0
#define configUSE_COUNTING_SEMAPHORES           0
#define configQUEUE_REGISTRY_SIZE               0
#define configUSE_QUEUE_SETS                    0
#define configUSE_TIMERS                        0
#define configUSE_EVENT_GROUPS                  0
#define configUSE_STREAM_BUFFERS                0
#define configUSE_CO_ROUTINES                   0
#define configUSE_TRACE_FACILITY                0
#define configGENERATE_RUN_TIME_STATS           0
#define configCHECK_FOR_STACK_OVERFLOW          0
#define configSUPPORT_STATIC_ALLOCATION         1
#define configSUPPORT_DYNAMIC_ALLOCATION        0
#define configKERNEL_PROVIDED_STATIC_MEMORY     1 /* FreeRTOS >= 11; main.c provides it for 10.x */
#define configNUMBER_OF_CORES                   1
#define configENABLE_BACKWARD_COMPATIBILITY     0
#define configUSE_16_BIT_TICKS                  0 /* ticks are the port's unsigned long */

#define INCLUDE_vTaskDelay                1
#define INCLUDE_vTaskDelete               1
#define INCLUDE_xTaskGetCurrentTaskHandle 1
#define INCLUDE_xTaskGetSchedulerState    1

/* A failed kernel assertion ends the run with a message (the suite then fails). */
void pg_freertos_assert_failed(const char *file, int line);
#define configASSERT(x)                                          \
    do {                                                         \
        if (!(x)) pg_freertos_assert_failed(__FILE__, __LINE__); \
    } while (0)

#endif /* FREERTOS_CONFIG_H */
