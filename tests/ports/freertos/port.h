/* port.h — the driver's port functions the FreeRTOS port tests share: the region in plain
   RAM, ticks switched off, lost wake-ups counted by the kernel model (splitcore tests;
   include after driver.h). */
#ifndef PGM_RTOS_PORT_H
#define PGM_RTOS_PORT_H

static void *port_region(int core)
{
    (void)core;
    return pgd_ram;
}

static void port_quiet(int on)
{
    pgm_rtos.quiet = on;
}

static uint64_t port_lost(void)
{
    return pgm_rtos.lost;
}

#endif /* PGM_RTOS_PORT_H */
