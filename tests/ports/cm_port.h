/* cm_port.h — the driver's port functions every Cortex-M port test shares: the model is
   stopped after its interrupts settled, ticks switched off, lost wake-ups counted by the
   model (splitcore tests; include after driver.h). PGD_UNCACHED: every core reaches the
   region directly, so port_region is defined here too. */
#ifndef PGD_CM_PORT_H
#define PGD_CM_PORT_H

static void port_stop(void)
{
    pgm_quiesce();
    pgm_stop();
}

static void port_quiet(int on)
{
    pgm.no_tick = on;
}

static uint64_t port_lost(void)
{
    return pgm_lost();
}

#ifdef PGD_UNCACHED
static void *port_region(int core)
{
    (void)core;
    return pgd_ram;
}
#endif

#endif /* PGD_CM_PORT_H */
