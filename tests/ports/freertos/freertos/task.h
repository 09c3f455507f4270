/* freertos/task.h — the FreeRTOS model (../task.h) where ESP-IDF keeps the kernel's headers
   (splitcore tests). */
#include "../task.h"
