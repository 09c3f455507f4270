/* stand-in for the nRF MDK's nrf.h on nRF5340 (docs check only; see README.md) */
#ifndef DOCSTUB_NRF_H
#define DOCSTUB_NRF_H
#include "cmsis_stub.h"
typedef struct {
    volatile uint32_t TASKS_SEND[16], RSVD0[16], SUBSCRIBE_SEND[16], RSVD1[16];
    volatile uint32_t EVENTS_RECEIVE[16], RSVD2[16], PUBLISH_RECEIVE[16], RSVD3[80];
    volatile uint32_t INTEN, INTENSET, INTENCLR, INTPEND, RSVD4[128];
    volatile uint32_t SEND_CNF[16], RSVD5[16], RECEIVE_CNF[16], RSVD6[16], GPMEM[2];
} NRF_IPC_Type;
typedef struct {
    volatile uint32_t TASKS_START, TASKS_STOP, TASKS_COUNT, TASKS_CLEAR, TASKS_SHUTDOWN, RSVD0[11];
    volatile uint32_t TASKS_CAPTURE[8], RSVD1[360];
    volatile uint32_t MODE, BITMODE, RSVD2, PRESCALER, RSVD3[11], CC[8];
} NRF_TIMER_Type;
#define NRF_IPC_S     ((NRF_IPC_Type *)0x5002A000u)
#define NRF_IPC_NS    ((NRF_IPC_Type *)0x4002A000u)
#define NRF_TIMER0_S  ((NRF_TIMER_Type *)0x5000F000u)
#define NRF_TIMER0_NS ((NRF_TIMER_Type *)0x4000F000u)
enum { IPC_IRQn = 42 };
#endif
