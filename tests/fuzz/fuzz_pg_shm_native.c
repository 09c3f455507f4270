/* fuzz_pg_shm_native.c — fuzz_pg_shm.c with PG_SHM_NATIVE_COLLECTIVES: the cores' collective
   buffers (epoch, hash, data) are in the region the faulty peer writes, and the small
   collectives read them. */
#define PG_SHM_NATIVE_COLLECTIVES 1
#include "fuzz_pg_shm.c"
