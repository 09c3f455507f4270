/* plan.c — tools/onnx2c.py's planning step in C: built by the exporter against the model.h
   it wrote (without the weights), it plans and proves the pipeline with pipeline.h and asks
   the library for every rank's exact storage, then writes model_plan.h and prints the
   figures as one JSON line.

     plan <model_plan.h> <link ns per message> <ns per byte>

   Pipeline mode: the segments (one per rank: the exporter cut the nodes with
   tools/model/balance.c) over the ranks (pp_balance_by_cost), the routes of the skip
   connections between them (pp_skip_layout, pp_plan_skips), a forward-only schedule of the
   model's microbatches (pp_schedule_build, pp_validate, pp_lower), proven to need no mailbox depth beyond
   PP_MAILBOX_SLOTS without take-in (pp_mailbox_depth), simulated with the stage costs and
   the activation transfers (pp_simulate: the predicted step time), emitted with pp_emit_c.
   Both modes: mr_query per rank (arena, scratch, executor storage from the library's size
   queries), written as MODEL_*_BYTES arrays and their maxima, and `model`, the mr_model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MR_NO_WEIGHTS
#include "tools/model/runner.h" /* implemented in tools/model/impl.c */
#include "model.h"

#define MAX_ACTIONS 65536

static pp_action sched_store[MAX_ACTIONS], plan_store[MAX_ACTIONS];
static uint32_t sim_work[1 << 20];
static char text[1 << 20];
static int32_t balance[PP_MAX_RANKS];
static pp_table tables[PP_MAX_RANKS];
static pp_layer layers[MR_MAX_SEGMENTS];
static pp_route routes[PP_MAX_SKIPS];

static int fail(const char *what, int rc)
{
    printf("{\"error\": \"%s: %d (%s)\"}\n", what, rc, splitcore_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    pp_plan sched, plan;
    pp_sim sim;
    pp_costs costs;
    mr_sizes sz[MODEL_RANKS];
    mr_model m = MODEL_MODEL(NULL, NULL, NULL, 0);
    int nroutes = 0;
    size_t need = 0, amax = 0, smax = 0, emax = 0;
    uint32_t stage_f[PP_MAX_STAGES];
    uint64_t maxpart = 0;
    double msg_ns = argc > 2 ? atof(argv[2]) : 0.0, byte_ns = argc > 3 ? atof(argv[3]) : 0.0;
    int rc, r, s, k, depth = -1;
    FILE *f;
    if (argc < 2) {
        fprintf(stderr, "usage: plan <model_plan.h> [ns per message] [ns per byte]\n");
        return 2;
    }
    memset(&sim, 0, sizeof sim);
    if (MODEL_PIPELINE) {
        uint32_t cost[MR_MAX_SEGMENTS];
        for (s = 0; s < MODEL_NSEG; s++) cost[s] = m.seg[s].cost;
        if ((rc = pp_balance_by_cost(cost, MODEL_NSEG, MODEL_RANKS, balance, &maxpart)))
            return fail("pp_balance_by_cost", rc);
        if ((rc = pp_schedule_build(&sched, PP_SCHED_FORWARD_ONLY, MODEL_RANKS, 1, MODEL_NMB, sched_store,
                                    sizeof sched_store, NULL)) ||
            (rc = pp_validate(&sched, NULL)))
            return fail("schedule", rc);
        if (MODEL_NSKIPS) { /* the skip connections' routes between the stages (fairscale's SkipLayout) */
            for (s = 0; s < MODEL_NSEG; s++) {
                layers[s].act_bytes = m.seg[s].act_bytes;
                layers[s].stash = m.seg[s].nstash ? m.stash + m.seg[s].stash0 : NULL;
                layers[s].nstash = m.seg[s].nstash;
                layers[s].pop = m.seg[s].npop ? m.pop + m.seg[s].pop0 : NULL;
                layers[s].npop = m.seg[s].npop;
            }
            if ((rc = pp_skip_layout(layers, MODEL_NSEG, NULL, MODEL_NSEG, balance, MODEL_RANKS, routes, PP_MAX_SKIPS,
                                     &nroutes, NULL)))
                return fail("pp_skip_layout", rc);
            if ((rc = pp_plan_skips(&sched, routes, nroutes))) return fail("pp_plan_skips", rc);
            m.routes = routes;
            m.nroutes = nroutes;
        }
        if ((rc = pp_lower(&sched, &plan, plan_store, sizeof plan_store, NULL))) return fail("pp_lower", rc);
        if (pp_sim_bytes(&plan) > sizeof sim_work) return fail("pp_sim_bytes", PP_ERR_TOO_SMALL);
        if ((rc = pp_mailbox_depth(&plan, PP_MAILBOX_SLOTS, sim_work, sizeof sim_work, NULL)) < 0)
            return fail("pp_mailbox_depth", rc);
        depth = rc;
        memset(&costs, 0, sizeof costs);
        for (r = 0, k = 0; r < MODEL_RANKS; r++) {
            uint64_t c = 0;
            for (s = 0; s < balance[r]; s++, k++) c += m.seg[k].cost;
            stage_f[r] = (uint32_t)(c > 0xffffffffu ? 0xffffffffu : c);
        }
        costs.stage_f = stage_f;
        costs.f = 1;
        /* a transfer: one message per pg_max_msg piece, ns per byte copied; in the stage
           costs' unit (100 ns, tools/splitcore_onnx/plan.py's cost_units), as pp_simulate adds them */
        costs.comm = (uint32_t)((msg_ns + byte_ns * (double)m.seg[0].act_bytes) / 100.0 + 0.5);
        if ((rc = pp_simulate(&plan, &costs, sim_work, sizeof sim_work, &sim, NULL, 0, NULL, NULL)))
            return fail("pp_simulate", rc);
        for (r = 0; r < MODEL_RANKS; r++)
            if ((rc = pp_plan_table(&plan, r, &tables[r]))) return fail("pp_plan_table", rc);
        m.balance = balance;
        m.plan = tables;
    }
    for (r = 0; r < MODEL_RANKS; r++) {
        if ((rc = mr_query(&m, r, &sz[r]))) return fail("mr_query", rc);
        if (sz[r].arena > amax) amax = sz[r].arena;
        if (sz[r].scratch > smax) smax = sz[r].scratch;
        if (sz[r].exec > emax) emax = sz[r].exec;
    }
    if (!(f = fopen(argv[1], "w"))) return fail("cannot write model_plan.h", -1);
    fprintf(f, "/* %s: the plan for %d ranks, written by tools/model/plan.c; do not edit. */\n", MODEL_NAME,
            MODEL_RANKS);
    fprintf(f, "#ifndef MODEL_PLAN_H\n#define MODEL_PLAN_H\n");
    if (MODEL_PIPELINE) {
        if ((rc = pp_emit_c(&plan, "model_pp", text, sizeof text, &need)) < 0) return fail("pp_emit_c", rc);
        fputs(text, f);
        fprintf(f, "static const int32_t model_balance[%d] = {", MODEL_RANKS);
        for (r = 0; r < MODEL_RANKS; r++) fprintf(f, "%s%d", r ? ", " : "", (int)balance[r]);
        fprintf(f, "};\n");
    }
#define ROW(name, field)                                                                        \
    fprintf(f, "static const uint32_t %s[%d] = {", name, MODEL_RANKS);                          \
    for (r = 0; r < MODEL_RANKS; r++) fprintf(f, "%s%u", r ? ", " : "", (unsigned)sz[r].field); \
    fprintf(f, "};\n")
    ROW("model_arena_bytes", arena);
    ROW("model_scratch_bytes", scratch);
    ROW("model_exec_bytes", exec);
    fprintf(f, "#define MODEL_ARENA_MAX %u\n#define MODEL_SCRATCH_MAX %u\n#define MODEL_EXEC_MAX %u\n",
            (unsigned)(amax ? amax : 8), (unsigned)(smax ? smax : 8), (unsigned)(emax ? emax : 8));
    fprintf(f, "static const mr_model model = MODEL_MODEL(%s, %s, %s, %d);\n#endif\n",
            MODEL_PIPELINE ? "model_balance" : "NULL", MODEL_PIPELINE ? "model_pp" : "NULL",
            nroutes ? "model_pp_skips" : "NULL", nroutes);
    fclose(f);
    printf("{\"rank_state\": %u, \"ranks\": [", (unsigned)sizeof(mr_rank));
    for (r = 0; r < MODEL_RANKS; r++)
        printf("%s{\"arena\": %u, \"scratch\": %u, \"exec\": %u, \"balance\": %d, \"stage_cost\": %u}", r ? ", " : "",
               (unsigned)sz[r].arena, (unsigned)sz[r].scratch, (unsigned)sz[r].exec,
               MODEL_PIPELINE ? (int)balance[r] : 0, MODEL_PIPELINE ? (unsigned)stage_f[r] : 0u);
    printf("], \"routes\": %d, \"makespan\": %u, \"bubble_ppm\": %u, \"mailbox_depth\": %d, \"max_stage\": %llu}\n",
           nroutes, (unsigned)sim.makespan, (unsigned)sim.bubble_ppm, depth, (unsigned long long)maxpart);
    return 0;
}
