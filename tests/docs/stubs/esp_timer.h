/* stand-in for ESP-IDF's esp_timer.h (docs check only; see README.md) */
#ifndef DOCSTUB_ESP_TIMER_H
#define DOCSTUB_ESP_TIMER_H
#include <stdint.h>
int64_t esp_timer_get_time(void);
#endif
