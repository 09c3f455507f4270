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

/* CPU0: restart CPU1 as a reset of that core alone (its PPU, a watchdog) does on silicon.
   The hold and the release go through the real registers: CPUWAIT bit 1 set
   (pg_shm_sse200_hold_cpu1), then, once CPU1 is in its reset and `hold_loops` loops later,
   pg_shm_sse200_release_cpu1(CPU1's vector table: INITSVTOR1, CPUWAIT bit 1 cleared) and a
   doorbell that wakes CPU1 where it is held. Only the reset pulse is emulated, because
   QEMU 7.2 resets no running core alone: a flag set and CPU1's doorbell rung, whose
   handler returns into CPU1's reset path (start.c: SysTick and hook state cleared,
   fw_boots1 + 1, held by check-then-WFI while the bit is set, then MSP and reset vector
   from INITSVTOR1's table: the power-on start-up, fw_core_main(1) again). CPU0 calls it
   with interrupts enabled. alt: release it with a second table for CPU1 (start.c: the same
   but for a reset entry that counts fw_alt_boots1 first). Returns 1 when CPU1, at the
   release, was in its reset having found CPUWAIT bit 1 set (held, as it must be), else 0. */
int fw_restart_cpu1(uint32_t hold_loops, int alt);
extern volatile uint32_t fw_boots1;     /* CPU1's resets since power-on */
extern volatile uint32_t fw_alt_boots1; /* ... of them, boots from the second table */

/* Every core calls it with its number: CPU1 runs f and sleeps for good; CPU0 runs f, waits
   for CPU1 and returns the first non-zero result (0 when both returned 0). */
int fw_run_cores(unsigned cpu, int (*f)(int));
#endif
