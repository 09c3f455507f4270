/* stand-in for MCUXpresso's fsl_mu.h (docs check only; see README.md) */
#ifndef DOCSTUB_FSL_MU_H
#define DOCSTUB_FSL_MU_H
#include "fsl_device_registers.h"
typedef int32_t status_t;
#define kMU_GenInt0Flag             (1UL << 31)
#define kMU_GenInt0InterruptEnable  (1UL << 31)
#define kMU_GenInt0InterruptTrigger (1UL << 19)
void MU_Init(MU_Type *base);
void MU_EnableInterrupts(MU_Type *base, uint32_t interrupts);
status_t MU_TriggerInterrupts(MU_Type *base, uint32_t interrupts);
uint32_t MU_GetStatusFlags(MU_Type *base);
void MU_ClearStatusFlags(MU_Type *base, uint32_t flags);
#endif
