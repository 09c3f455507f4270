/* stand-in for pico-sdk's pico/time.h (docs check only; see ../README.md) */
#ifndef DOCSTUB_PICO_TIME_H
#define DOCSTUB_PICO_TIME_H
#include <stdbool.h>
#include <stdint.h>
typedef struct repeating_timer repeating_timer_t;
typedef bool (*repeating_timer_callback_t)(repeating_timer_t *rt);
struct repeating_timer {
    int64_t delay_us;
    int32_t pool_and_alarm;
    repeating_timer_callback_t callback;
    void *user_data;
};
bool add_repeating_timer_ms(int32_t delay_ms, repeating_timer_callback_t callback, void *user_data,
                            repeating_timer_t *out);
#endif
