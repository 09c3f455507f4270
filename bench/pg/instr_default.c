/* instr_default.c — shm_default.c for bench/pg/instr.c: a wait polls once, then switches cores. */
#define PG_SHM_SPIN 1
#include "shm_default.c"
