/* stand-in for STM32CubeH7's stm32h7xx_hal.h (docs check only; see README.md) */
#ifndef DOCSTUB_STM32H7XX_HAL_H
#define DOCSTUB_STM32H7XX_HAL_H
#include "cmsis_stub.h"
typedef enum { HAL_OK = 0, HAL_ERROR = 1, HAL_BUSY = 2, HAL_TIMEOUT = 3 } HAL_StatusTypeDef;
enum { HSEM1_IRQn = 125, HSEM2_IRQn = 126 };
#define __HAL_HSEM_SEMID_TO_MASK(id) (1UL << (id))
HAL_StatusTypeDef HAL_HSEM_FastTake(uint32_t SemID);
void HAL_HSEM_Release(uint32_t SemID, uint32_t ProcessID);
void HAL_HSEM_ActivateNotification(uint32_t SemMask);
void HAL_HSEM_FreeCallback(uint32_t SemMask);
void HAL_NVIC_EnableIRQ(IRQn_Type IRQn);
uint32_t HAL_GetTick(void);
#endif
