/* stand-in for MCUXpresso's fsl_device_registers.h on i.MX RT1170 (docs check only; see README.md) */
#ifndef DOCSTUB_FSL_DEVICE_REGISTERS_H
#define DOCSTUB_FSL_DEVICE_REGISTERS_H
#include "cmsis_stub.h"
typedef struct {
    volatile uint32_t TR[4], RR[4], SR, CR;
} MU_Type;
#define MUA ((MU_Type *)0x40C48000u)
#define MUB ((MU_Type *)0x40C4C000u)
enum { MUA_IRQn = 118, MUB_IRQn = 118 };
#endif
