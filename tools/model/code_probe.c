/* code_probe.c — the code a core runs for any exported model, measured by tools/onnx2c.py:
   linked for the export's target with -Os and unused sections dropped, from this one entry
   (mr_init and mr_step of a model its tables give at run time: every op's kernels, the
   DTensor collectives, the pipeline executor). The port (pg_pthread, pg_shm) and the C
   library's functions are left unresolved, so they are not counted. */
#define SPLITCORE_IMPLEMENTATION
#define MODEL_RUNNER_IMPLEMENTATION
#include "tools/model/runner.h"

int mr_code_probe(const mr_model *m, int rank, pg_group *g, void *mem, size_t bytes, const float *in, float *out);
int mr_code_probe(const mr_model *m, int rank, pg_group *g, void *mem, size_t bytes, const float *in, float *out)
{
    static mr_rank r;
    int rc = mr_init(&r, m, rank, g, mem, bytes, mem, bytes, mem, bytes);
    return rc ? rc : mr_step(&r, in, out);
}
