/* stand-in for pico-sdk's pico/multicore.h (docs check only; see ../README.md) */
#ifndef DOCSTUB_PICO_MULTICORE_H
#define DOCSTUB_PICO_MULTICORE_H
#include <stdbool.h>
#include <stdint.h>
typedef struct {
    volatile uint32_t cpuid, gpio_in, gpio_hi_in, pad0, gpio_out, gpio_set, gpio_clr, gpio_togl;
    volatile uint32_t gpio_oe, gpio_oe_set, gpio_oe_clr, gpio_oe_togl, gpio_hi_out, gpio_hi_set, gpio_hi_clr,
        gpio_hi_togl, gpio_hi_oe, gpio_hi_oe_set, gpio_hi_oe_clr, gpio_hi_oe_togl;
    volatile uint32_t fifo_st, fifo_wr, fifo_rd;
} sio_hw_t;
#define sio_hw               ((sio_hw_t *)0xd0000000u)
#define SIO_FIFO_ST_VLD_BITS 0x00000001u
#define SIO_FIFO_ST_RDY_BITS 0x00000002u
bool multicore_fifo_rvalid(void);
bool multicore_fifo_wready(void);
void multicore_fifo_drain(void);
#endif
