/* shm_native.c — the pg_shm build with PG_SHM_NATIVE_COLLECTIVES for the pg benchmarks (shm_port.h). */
#define PG_SHM_NATIVE_COLLECTIVES 1
#define BENCH_SHM_BUILD           bench_shm_native
#define BENCH_SHM_NAME            "pg_shm native"
#include "shm_port.c"
