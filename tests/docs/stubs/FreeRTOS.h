/* stand-in for FreeRTOS's FreeRTOS.h as ports/platform/freertos.h includes it (docs check
   only; see README.md) */
#ifndef DOCSTUB_TOP_FREERTOS_H
#define DOCSTUB_TOP_FREERTOS_H
#include "freertos/FreeRTOS.h"
#define configTICK_RATE_HZ 1000u
void vPortYieldFromISR(void);
#define portYIELD_FROM_ISR(woken)       \
    do {                                \
        if (woken) vPortYieldFromISR(); \
    } while (0)
#endif
