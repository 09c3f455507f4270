/* fw_board.h — what the sse200_smp firmware images share (tests/target/sse200_smp/main.c and
   the examples' sse200_smp/main.c): the board (start.c: both cores' start-up, the SysTick and
   MHU0 handlers of ports/platform/sse200.h, the board's SysTick clock), leaving QEMU through
   semihosting, and running one function per core with CPU0 waiting for CPU1. */
#ifndef FW_BOARD_H
#define FW_BOARD_H
#include <stdint.h>
#include <stdio.h>
#include "ports/platform/sse200.h"

#define FW_CORES PG_SHM_SSE200_CORES

extern pg_shm_sse200 fw_sse; /* the hook set's state (start.c routes the handlers to it) */
extern uint32_t fw_cpu_hz;   /* SysTick clock: 20 MHz on AN521, 32 MHz on AN524 */
extern const char *fw_board; /* "AN521", "AN524" */

/* Every core calls it from start.c with its CPU number (CPU_IDENTITY). */
void fw_core_main(unsigned cpu);
/* This core's pg_shm hooks (sse200.h with the board's clock). */
void fw_hooks(pg_shm_hooks *h);
/* Flush this core's output, then end QEMU with status rc (SYS_EXIT_EXTENDED; CPU0). */
void fw_exit(int rc) __attribute__((noreturn));
/* Sleep until this core's doorbell rang or a SysTick period passed (sse200.h's wait). */
void fw_wait(void);
/* Ring CPU `cpu`'s doorbell. */
void fw_notify(unsigned cpu);
/* A semihosting call (operation, its argument block); returns r0. */
uint32_t fw_semihost(uint32_t op, const void *arg);

/* CPU1's warm restart (start.c), what a watchdog or debugger reset of that core does: CPU0
   sets fw_reset_cpu1 and rings CPU1 (fw_notify(1)); CPU1's doorbell handler then returns
   into its reset path (fresh stack, its SysTick and hook state cleared, fw_boots1 + 1, then
   the power-on start-up: fw_core_main(1) again). QEMU 7.2 resets no running core by itself:
   CPUWAIT only releases a held one. */
extern volatile uint32_t fw_reset_cpu1, fw_boots1;

/* Every core calls it with its number: CPU1 runs f and sleeps for good; CPU0 runs f, waits
   for CPU1 and returns the first non-zero result (0 when both returned 0). */
int fw_run_cores(unsigned cpu, int (*f)(int));
#endif
