/* stand-in for pico-sdk's hardware/timer.h (docs check only; see ../README.md) */
#ifndef DOCSTUB_HARDWARE_TIMER_H
#define DOCSTUB_HARDWARE_TIMER_H
#include <stdint.h>
uint32_t time_us_32(void);
#endif
