/* test_port_rp2040_shared.c — tests/test_port_rp2040.c with PG_SHM_RP2040_SHARED_FIFO: the SIO
   FIFO and its interrupt belong to another user (pico-sdk's multicore_lockout, FreeRTOS SMP);
   pg_shm's doorbell is SEV / WFE and must leave the FIFO untouched. */
#define PG_SHM_RP2040_SHARED_FIFO 1
#include "test_port_rp2040.c"
