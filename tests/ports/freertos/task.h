/* task.h — the FreeRTOS model's task API is in its FreeRTOS.h (splitcore tests). */
#ifndef INC_TASK_H
#define INC_TASK_H
#include "FreeRTOS.h"
#endif
