/* code_probe.c — the code a core runs for any exported model, measured by tools/onnx2c.py:
   linked for the export's target with -Os and unused sections dropped, from this one entry
   (mr_init and mr_step of a model its tables give at run time: every op's kernels, the
   DTensor collectives, the pipeline executor). The port (pg_pthread, pg_shm) and the C
   library's functions are left unresolved, so they are not counted. */
#define SPLITCORE_IMPLEMENTATION
#define MODEL_RUNNER_IMPLEMENTATION
#include "tools/model/runner.h"

/* The target's sizes of a rank's state and of one table entry, read back as these .bss
   symbols' sizes (nm -S): not code. */
static mr_rank mr_probe_rank;
char mr_probe_node[sizeof(mr_node)], mr_probe_tensor[sizeof(mr_tensor)]; /* extern: kept */

int mr_code_probe(const mr_model *m, int rank, pg_group *g, void *mem, size_t bytes, const float *in, float *out);
int mr_code_probe(const mr_model *m, int rank, pg_group *g, void *mem, size_t bytes, const float *in, float *out)
{
    int rc;
    if (!m) return (int)(mr_probe_node[0] + mr_probe_tensor[0]);
    rc = mr_init(&mr_probe_rank, m, rank, g, mem, bytes, mem, bytes, mem, bytes);
    return rc ? rc : mr_step(&mr_probe_rank, in, out);
}
