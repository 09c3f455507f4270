/* stand-in for ESP-IDF's freertos/FreeRTOS.h (docs check only; see ../README.md) */
#ifndef DOCSTUB_FREERTOS_H
#define DOCSTUB_FREERTOS_H
#include <stdint.h>
typedef int BaseType_t;
typedef uint32_t TickType_t;
#define pdTRUE            ((BaseType_t)1)
#define pdFALSE           ((BaseType_t)0)
#define pdMS_TO_TICKS(ms) ((TickType_t)((ms) / 10u))
#endif
