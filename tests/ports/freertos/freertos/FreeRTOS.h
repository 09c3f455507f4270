/* freertos/FreeRTOS.h — the FreeRTOS model (../FreeRTOS.h) where ESP-IDF keeps the kernel's
   headers (splitcore tests). */
#include "../FreeRTOS.h"
