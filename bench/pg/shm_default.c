/* shm_default.c — the default pg_shm build for the pg benchmarks (shm_port.h). */
#define BENCH_SHM_BUILD bench_shm_default
#define BENCH_SHM_NAME  "pg_shm"
#include "shm_port.c"
