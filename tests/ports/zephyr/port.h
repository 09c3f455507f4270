/* port.h — the driver's port functions the Zephyr port tests share (splitcore tests;
   include after driver.h). */
#ifndef PGZ_PORT_H
#define PGZ_PORT_H

static void port_quiet(int on)
{
    pgz.quiet = on;
}

static uint64_t port_lost(void)
{
    return pgz.lost;
}

#ifndef PGZ_CACHED
static void *port_region(int core)
{
    (void)core;
    return pgd_ram;
}
#endif

#endif /* PGZ_PORT_H */
