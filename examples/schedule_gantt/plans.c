/* schedule_gantt/plans.c — write the plans that gantt.py draws.

   For GPipe, 1F1B, Interleaved1F1B, ZB1P (InterleavedZeroBubble) and ZBV with P ranks and
   M microbatches (default 4 and 8) this builds each compute-only schedule with pipeline.h,
   validates it and writes into OUTDIR (default "."):
       <schedule>.csv          torch's _dump_csv layout (pp_csv_write): one step per cell
       <schedule>.trace.json   Chrome trace (pp_trace_json) of pp_simulate with F = 120,
                               B = 240, I = W = 120 time units for each rank's share of the
                               model (a stage of a 2-stage-per-rank schedule costs half, so
                               makespans compare), no communication cost
   and prints each plan's simulated makespan, bubble and rank 0's peak in-flight
   activations. A schedule torch would refuse for (P, M) is an error (exit 1). Then

       python3 examples/schedule_gantt/gantt.py OUTDIR/gpipe.trace.json ... -o schedules.png

   draws them side by side. Usage: plans [OUTDIR [P [M]]] */
#define PP_NO_EXECUTOR 1
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_EVENTS 4096
#define TEXT_BYTES (256 * 1024)

static uint32_t storage[16384]; /* actions of one plan (pp_plan_bytes) */
static uint32_t work[16384];    /* pp_simulate's work area (pp_sim_bytes) */
static pp_event events[MAX_EVENTS];
static char text[TEXT_BYTES];

static const struct {
    int schedule, stages_per_rank;
    const char *file;
} plans[] = {
    {PP_SCHED_GPIPE, 1, "gpipe"},
    {PP_SCHED_1F1B, 1, "1f1b"},
    {PP_SCHED_INTERLEAVED_1F1B, 2, "interleaved_1f1b"},
    {PP_SCHED_INTERLEAVED_ZB, 2, "zb1p"},
    {PP_SCHED_ZBV, 2, "zbv"},
};

static int write_file(const char *dir, const char *name, const char *ext, const char *s, int n)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    f = fopen(path, "wb");
    if (!f || fwrite(s, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "plans: cannot write %s\n", path);
        if (f) fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    int P = argc > 2 ? atoi(argv[2]) : 4, M = argc > 3 ? atoi(argv[3]) : 8;
    size_t k;
    for (k = 0; k < sizeof plans / sizeof plans[0]; k++) {
        pp_plan plan;
        pp_sim sim;
        pp_costs c;
        pp_diag diag;
        int rc, nev = 0, v = plans[k].stages_per_rank;
        rc = pp_schedule_build(&plan, plans[k].schedule, P, v, M, storage, sizeof storage, &diag);
        if (rc == PP_OK) rc = pp_validate(&plan, &diag);
        if (rc == PP_OK && pp_sim_bytes(&plan) > sizeof work) rc = PP_ERR_TOO_SMALL;
        if (rc == PP_OK) {
            PP_MEMSET(&c, 0, sizeof c);
            /* the same model work per rank: V stages per rank each cost 1/V */
            c.f = 120u / (uint32_t)v;
            c.b = 2 * c.f;
            c.i = c.f;
            c.w = c.f;
            rc = pp_simulate(&plan, &c, work, sizeof work, &sim, events, MAX_EVENTS, &nev, &diag);
        }
        if (rc < 0) {
            fprintf(stderr, "plans: %s P=%d M=%d: %s\n", pp_schedule_name(plans[k].schedule), P, M, pp_strerror(rc));
            return 1;
        }
        rc = pp_csv_write(&plan, text, sizeof text, NULL);
        if (rc < 0 || write_file(dir, plans[k].file, ".csv", text, rc)) return 1;
        rc = pp_trace_json(events, nev, text, sizeof text, NULL);
        if (rc < 0 || write_file(dir, plans[k].file, ".trace.json", text, rc)) return 1;
        printf("%-32s P=%d M=%d  makespan %5u  bubble %5.1f %%  peak in-flight (rank 0) %u\n",
               pp_schedule_name(plans[k].schedule), P, M, (unsigned)sim.makespan, sim.bubble_ppm / 1e4,
               (unsigned)sim.peak[0]);
    }
    return 0;
}
