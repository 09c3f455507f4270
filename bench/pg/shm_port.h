/* shm_port.h — the pg_shm builds the pg benchmarks run side by side: the default one (pg.h's
   collectives over the rings) and the one with PG_SHM_NATIVE_COLLECTIVES. Each is compiled in
   a file of its own (shm_port.c included by shm_default.c / shm_native.c, and with
   PG_SHM_SPIN 1 by instr_default.c / instr_native.c), its functions static, and reached
   through one of these tables; pg.h's implementation is the program's. */
#ifndef BENCH_SHM_PORT_H
#define BENCH_SHM_PORT_H
#include "ports/pg_shm.h"

#define BENCH_SHM_MAX_CORES 4
#define BENCH_SHM_SLOTS     8
#define BENCH_SHM_PAYLOAD   65536

typedef struct bench_shm_build {
    const char *name;                                         /* "pg_shm" or "pg_shm native" */
    int (*format)(int cores);                                 /* the region for `cores` cores */
    pg_group *(*attach)(int core, const pg_shm_hooks *hooks); /* NULL when pg_shm_init failed */
} bench_shm_build;

extern const bench_shm_build bench_shm_default, bench_shm_native;
#endif
