/* stand-in for ESP-IDF's freertos/task.h (docs check only; see ../README.md) */
#ifndef DOCSTUB_FREERTOS_TASK_H
#define DOCSTUB_FREERTOS_TASK_H
#include "freertos/FreeRTOS.h"
typedef struct tskTaskControlBlock *TaskHandle_t;
BaseType_t xTaskGenericNotify(TaskHandle_t task, uint32_t index, uint32_t value, int action, uint32_t *prev);
#define xTaskNotifyGive(task) xTaskGenericNotify((task), 0u, 0u, 2, NULL)
uint32_t ulTaskNotifyTake(BaseType_t clear_on_exit, TickType_t ticks_to_wait);
TaskHandle_t xTaskGetCurrentTaskHandle(void);
#endif
