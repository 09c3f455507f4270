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
#ifdef PG_H
static inline void fill(float *x, int rank) /* pg.h: this rank's input */
{
    int i;
    for (i = 0; i < 256; i++) x[i] = (float)rank;
}
#endif
#ifdef PG_SHM_H /* pg_shm.h and its hook sets: one core's view */
extern int me;
extern float x[256];
extern const pg_shm_hooks my_hooks;
extern pg_shm shm[PG_SHM_MAX_CORES];
extern uint32_t region[PG_SHM_REGION_BYTES(4, 8, 1024) / 4];
#endif
#endif
