/* test_pg_shm_split.c — tests/test_pg_shm.c with PG_SHM_NATIVE_COLLECTIVES and a floating-point
   all_reduce from 64 B up to PG_SHM_INLINE split into a reduce_scatter and an all_gather in the
   cores' buffers (PG_SHM_SPLIT_REDUCE, what soft-float cores get from 256 B by default): the
   same results, bit for bit, as every core reducing everything (test_pg_shm_native.c). */
#define PG_SHM_NATIVE_COLLECTIVES 1
#define PG_SHM_SPLIT_REDUCE       64
#include "test_pg_shm.c"
