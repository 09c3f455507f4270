/* stand-in for FreeRTOS's task.h as ports/platform/freertos.h includes it (docs check only;
   see README.md) */
#ifndef DOCSTUB_TOP_TASK_H
#define DOCSTUB_TOP_TASK_H
#include "FreeRTOS.h"
#include "freertos/task.h"
typedef void (*TaskFunction_t)(void *);
BaseType_t xTaskCreate(TaskFunction_t code, const char *name, uint32_t stack_depth, void *parameters, uint32_t priority,
                       TaskHandle_t *created);
TickType_t xTaskGetTickCount(void);
void vTaskDelete(TaskHandle_t task);
void vTaskStartScheduler(void);
void vTaskNotifyGiveFromISR(TaskHandle_t task, BaseType_t *higher_priority_task_woken);
#endif
