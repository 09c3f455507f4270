/* test_pg_shm_native.c — tests/test_pg_shm.c (the pg_shm suite and the port conformance
   suite on host threads) with PG_SHM_NATIVE_COLLECTIVES: the direct-read world broadcast,
   all_reduce and all_gather(v); test_pg_shm.c itself covers the default (pg.h's generic
   collectives over the rings). */
#define PG_SHM_NATIVE_COLLECTIVES 1
#include "test_pg_shm.c"
