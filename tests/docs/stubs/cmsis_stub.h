/* stand-in for the CMSIS core names the Cortex-M hook sets use (docs check only; see README.md) */
#ifndef DOCSTUB_CMSIS_H
#define DOCSTUB_CMSIS_H
#include <stdint.h>
typedef int IRQn_Type;
void __DSB(void);
void __DMB(void);
void __WFI(void);
void __WFE(void);
void __SEV(void);
void __disable_irq(void);
void __enable_irq(void);
void NVIC_EnableIRQ(IRQn_Type irq);
uint32_t SysTick_Config(uint32_t ticks);
void SCB_CleanDCache_by_Addr(volatile void *addr, int32_t dsize);
void SCB_InvalidateDCache_by_Addr(volatile void *addr, int32_t dsize);
typedef struct {
    volatile uint32_t CTRL, CYCCNT;
} DWT_Type;
typedef struct {
    volatile uint32_t DHCSR, DCRSR, DCRDR, DEMCR;
} CoreDebug_Type;
#define DWT                        ((DWT_Type *)0xE0001000u)
#define CoreDebug                  ((CoreDebug_Type *)0xE000EDF0u)
#define DWT_CTRL_CYCCNTENA_Msk     1u
#define CoreDebug_DEMCR_TRCENA_Msk (1u << 24)
extern uint32_t SystemCoreClock;
#endif
