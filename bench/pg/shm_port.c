/* shm_port.c — one pg_shm build behind bench_shm_build (shm_port.h). The file including it
   sets the build's configuration, BENCH_SHM_BUILD (the table) and BENCH_SHM_NAME. */
#define SPLITCORE_SEPARATE_IMPLEMENTATIONS 1 /* pg.h's implementation is in the main file */
#define PG_SHM_STATIC
#define PG_SHM_IMPLEMENTATION
#include "shm_port.h"

#define BENCH_SHM_REGION PG_SHM_REGION_BYTES(BENCH_SHM_MAX_CORES, BENCH_SHM_SLOTS, BENCH_SHM_PAYLOAD)
static uint32_t region[BENCH_SHM_REGION / 4] __attribute__((aligned(64)));
static pg_shm cores[BENCH_SHM_MAX_CORES];

static int format(int n)
{
    (void)pg_shm_ops; /* static (PG_SHM_STATIC) and not called here */
    return pg_shm_format(region, sizeof region, n, BENCH_SHM_SLOTS, BENCH_SHM_PAYLOAD);
}

static pg_group *attach(int core, const pg_shm_hooks *hooks)
{
    return pg_shm_init(&cores[core], region, sizeof region, core, hooks) == PG_OK ? pg_shm_group(&cores[core]) : 0;
}

const bench_shm_build BENCH_SHM_BUILD = {BENCH_SHM_NAME, format, attach};
