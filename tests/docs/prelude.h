/* Names the docs' snippets use without defining them, so each snippet compiles as it is
   written (tests/docs/check_docs.py): README and docs/ blocks marked `doctest: body`, and the
   examples in the headers' preambles. Declarations only where the snippet is just compiled;
   definitions where a program runs. Included after the snippet's own #include lines. */
#ifndef DOCS_PRELUDE_H
#define DOCS_PRELUDE_H
#include <stdio.h>
#include <splitcore/microbatch.h>
/* A layer: y = f(x) (microbatch.h and the README: once per chunk). */
static inline void my_layer(const mb_tensor *x, mb_tensor *y)
{
    (void)x;
    (void)y;
}
#ifdef PIPELINE_H
extern char big_buf[]; /* pipeline.h: the buffer pp_emit_c writes C into */
#define big_cap ((size_t)65536)
#endif
#ifdef PIPELINE_MODEL_H /* pipeline_model.h, pipeline_exec.h: a model and its plan */
extern pp_layer layers[8];
extern pp_plan sched, plan;
#endif
#ifdef PIPELINE_EXEC_H
extern int32_t balance[4];
extern pg_group *group; /* this rank's */
extern int r;
extern int job; /* the callbacks' user data */
int my_input(void *user, int mb, mb_tensor *x);
int my_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss);
#endif
#ifdef PIPELINE_BN_H
extern pp_tspec spec; /* the BatchNorm's input and output, per sample */
#endif
#ifdef PG_H
static inline void fill(float *x, int rank) /* pg.h: this rank's input */
{
    int i;
    for (i = 0; i < 256; i++) x[i] = (float)rank;
}
#endif
#ifdef PG_SHM_H /* pg_shm.h and its hook sets: one core's view */
extern int me;
extern int cold_start; /* the whole system starts (not this core alone) */
extern float x[256];
extern const pg_shm_hooks my_hooks;
extern pg_shm shm[PG_SHM_MAX_CORES];
extern uint32_t region[PG_SHM_REGION_BYTES(4, 8, 1024) / 4];
#endif
#endif
