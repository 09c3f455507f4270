/* instr_native.c — shm_native.c for bench/pg/instr.c: a wait polls once, then switches cores. */
#define PG_SHM_SPIN 1
#include "shm_native.c"
