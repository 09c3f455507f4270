/* fuzz_graph.c — dtensor_graph.h: graph building, batch-dim analysis, planning,
   running and emitting from untrusted fields (issue #8).

   The input gives a capacity and a stream of dt_graph_add calls (op, operand count and
   ids, attributes: dims, keepdim, shape, scalar bits; often wrong), then a world and rank.
   Checked:
   - dt_graph_add answers the next id or a dt_err; a failed call changed nothing (count,
     and the free node slot keeps its fill pattern); every node's operands come before it
     and its shape has sizes >= 1 with fewer than 2^31 elements;
   - dt_graph_analyze: 0 or a dt_err; on success parameters are Replicate, gradients
     Partial, activations Shard of an output dim (or a 0-d reduction's operand dim),
     Replicate or Partial; on failure every node is unanalysed;
   - dt_graph_plan: a failed call wrote nothing; a plan's steps lie inside its arena, and a
     one-rank plan runs (dt_gplan_run returns 0 on an arena of its size); a plan for more
     ranks without a group gives DT_ERR_MISMATCH and runs nothing;
   - dt_gplan_emit_c: the size query equals the written length, which is the string's;
   - a plan with one field of one step overwritten runs or is refused: never a memory
     error (ASan), whatever the field;
   - the run through the dispatcher (no input bytes of its own): dt_graph_dist_init on a
     1-D mesh of 2 (this rank 0; sizes and specs only, no communication) and of 1 answers
     0 or a dt_err (the analysis's when that failed); set up, every spec is valid and
     every node's storage lies in the arena; on one rank dt_graph_dist_run then runs with
     the scratch the query asked for. */
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_GRAPH_IMPLEMENTATION
#include "dtensor_graph.h"
#include "fuzz.h"

#define CAP   24
#define FILL  0xA5
#define ARENA (1 << 16)

static dt_gnode nodes[CAP + 1];
static dt_gstep steps[CAP], bad[CAP];
static uint64_t arena[ARENA / 8];
static char text[1 << 17];

static int is_err(int rc)
{
    return rc < 0 && rc >= DT_ERR_BATCH;
}

static dt_gvalue vals[CAP];
static uint64_t scratch[ARENA / 8];

/* dt_graph_dist_* on a 1-D mesh of n ranks, this one rank 0 (n 1: also a run; a mesh of
   one needs no communication, so a comm with only its mesh set serves). */
static void dist_check(dt_graph *g, int analysed, int n)
{
    dt_mesh m;
    dt_comm c;
    dt_dispatch d;
    size_t an = 0, sn = 0;
    int32_t shape[1];
    int rc, i;
    shape[0] = n;
    FUZZ_REQUIRE(dt_mesh_init(&m, 1, shape, NULL, 0) == 0);
    memset(&c, 0, sizeof c);
    c.mesh = &m;
    c.self = &c; /* a 1-rank comm as dt_comm_init leaves it (its groups never used): not a copy */
    memset(&d, 0, sizeof d);
    d.comm = &c;
    rc = dt_graph_dist_init(g, &d, NULL, vals, CAP, NULL, 0, &an, &sn);
    if (analysed) {
        FUZZ_REQUIRE(rc == analysed);
        return;
    }
    FUZZ_REQUIRE(rc == 0 || is_err(rc));
    if (rc || an > ARENA || sn > sizeof scratch) return;
    memset(arena, 0, sizeof arena);
    FUZZ_REQUIRE(dt_graph_dist_init(g, &d, NULL, vals, CAP, arena, an, NULL, NULL) == 0);
    for (i = 0; i < g->count; i++) {
        const unsigned char *p = (const unsigned char *)vals[i].data, *a = (const unsigned char *)arena;
        FUZZ_REQUIRE(dt_spec_check(&vals[i].t.spec) == 0 && vals[i].t.spec.mesh == &m);
        FUZZ_REQUIRE(!p || (p >= a && p + vals[i].bytes <= a + an));
    }
    if (n != 1) return;
    d.scratch = scratch;
    d.scratch_bytes = sn;
    rc = dt_graph_dist_run(g, &d, vals);
    FUZZ_REQUIRE(rc == 0);
}

static int untouched(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++)
        if (b[i] != FILL) return 0;
    return 1;
}

static void read_attrs(fz_in *in, dt_op_attrs *a)
{
    int d;
    uint32_t bits;
    memset(a, 0, sizeof *a);
    a->dim = fz_u8(in) < 40 ? DT_DIM_ALL : fz_sint(in, 8);
    a->dim2 = fz_sint(in, 8);
    a->keepdim = (int32_t)(fz_u8(in) & 1u);
    a->ndim = fz_int(in, MB_MAX_DIMS + 2);
    for (d = 0; d < MB_MAX_DIMS; d++) a->shape[d] = fz_u8(in) < 30 ? -1 : fz_int(in, 9);
    bits = fz_u8(in) < 240 ? 0x3dcccccdu : fz_u32(in); /* 0.1f, or any bits (NaN, inf) */
    memcpy(&a->scalar, &bits, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    dt_graph g;
    dt_gplan p, q;
    int cap = fz_int(&in, CAP + 1), i, rc, world, rank, k;
    size_t len = 0, len2 = 0;
    memset(nodes, FILL, sizeof nodes);
    if (cap > CAP) cap = CAP;
    rc = dt_graph_init(&g, nodes, cap);
    if (cap < 1) {
        FUZZ_REQUIRE(rc == DT_ERR_TOO_SMALL);
        return 0;
    }
    FUZZ_REQUIRE(rc == 0);
    while (fz_left(&in) > 8 && fz_u8(&in) < 230) {
        int32_t ids[DT_MAX_OP_ARGS];
        dt_op_attrs a;
        int op = fz_u8(&in) < 245 ? fz_int(&in, DT_G_OP_END - DT_ATEN_COUNT + 12) : fz_int(&in, 1000), nin, before;
        if (op >= DT_G_OP_END - DT_ATEN_COUNT + 4)
            op = DT_ATEN_COUNT + (op % (DT_G_OP_END - DT_ATEN_COUNT)); /* dt_gop */
        else if (op >= 0 && op < DT_G_OP_END - DT_ATEN_COUNT + 4)
            op = (int)(fz_u8(&in) % DT_ATEN_COUNT); /* dt_aten */
        nin = fz_u8(&in) < 240 ? (int)(fz_u8(&in) % 4) : fz_int(&in, 8);
        for (i = 0; i < DT_MAX_OP_ARGS; i++) ids[i] = fz_u8(&in) < 235 ? fz_int(&in, g.count + 1) : fz_int(&in, 64);
        read_attrs(&in, &a);
        before = g.count;
        rc = dt_graph_add(&g, op, &a, ids, nin > DT_MAX_OP_ARGS ? DT_MAX_OP_ARGS : nin);
        if (rc < 0) {
            FUZZ_REQUIRE(is_err(rc));
            FUZZ_REQUIRE(g.count == before);
            FUZZ_REQUIRE(untouched(&nodes[g.count], sizeof nodes[0]));
            continue;
        }
        FUZZ_REQUIRE(rc == before && g.count == before + 1);
        {
            const dt_gnode *n = &nodes[rc];
            int64_t numel = 1;
            FUZZ_REQUIRE(n->ndim >= 0 && n->ndim <= MB_MAX_DIMS);
            for (i = 0; i < n->nin; i++) FUZZ_REQUIRE(n->in[i] >= 0 && n->in[i] < rc);
            for (i = 0; i < n->ndim; i++) {
                FUZZ_REQUIRE(n->shape[i] >= 1);
                numel *= n->shape[i];
            }
            FUZZ_REQUIRE(numel <= INT32_MAX);
        }
    }
    rc = dt_graph_analyze(&g);
    FUZZ_REQUIRE(rc == 0 || is_err(rc));
    for (i = 0; i < g.count; i++) {
        const dt_gnode *n = &nodes[i];
        if (rc) {
            FUZZ_REQUIRE(n->bd == DT_BD_NONE && n->placement == DT_BD_NONE);
            continue;
        }
        if (n->type == DT_GT_PARAM)
            FUZZ_REQUIRE(n->placement == DT_BD_REPLICATE);
        else if (n->type == DT_GT_GRAD)
            FUZZ_REQUIRE(n->placement == DT_BD_PARTIAL);
        else
            FUZZ_REQUIRE(n->placement == DT_BD_REPLICATE || n->placement == DT_BD_PARTIAL ||
                         (n->placement >= 0 && (n->placement < n->ndim || n->ndim == 0)));
    }
    dist_check(&g, rc, 2);
    dist_check(&g, rc, 1);
    world = 1 + (int)(fz_u8(&in) % 4u);
    rank = fz_u8(&in) < 240 ? (int)(fz_u8(&in) % (uint32_t)world) : fz_int(&in, 8);
    memset(&p, FILL, sizeof p);
    memset(steps, FILL, sizeof steps);
    rc = dt_graph_plan(&g, world, rank, fz_u8(&in) & 1u ? DT_AVG : DT_SUM, &p, steps, CAP);
    if (rc) {
        FUZZ_REQUIRE(is_err(rc));
        FUZZ_REQUIRE(untouched(&p, sizeof p) && untouched(steps, sizeof steps));
        return 0;
    }
    if (p.arena_bytes > ARENA || p.nsteps < 1) return 0;
    memset(arena, 0, sizeof arena);
    if (world == 1)
        FUZZ_REQUIRE(dt_gplan_run(&p, arena, p.arena_bytes, NULL) == 0);
    else
        FUZZ_REQUIRE(dt_gplan_run(&p, arena, ARENA, NULL) == DT_ERR_MISMATCH);
    FUZZ_REQUIRE(dt_gplan_emit_c(&p, "fz_plan", NULL, 0, &len) == 0);
    FUZZ_REQUIRE(len < sizeof text);
    FUZZ_REQUIRE(dt_gplan_emit_c(&p, "fz_plan", text, sizeof text, &len2) == 0);
    FUZZ_REQUIRE(len2 == len && strlen(text) == len);
    /* one field of one step overwritten: runs or is refused, never out of bounds */
    memcpy(bad, steps, sizeof(dt_gstep) * (size_t)p.nsteps);
    q = p;
    q.world = 1;
    q.rank = 0;
    q.steps = bad;
    k = (int)(fz_u8(&in) % (uint32_t)p.nsteps);
    {
        int32_t *f = (int32_t *)(void *)&bad[k];
        size_t nf = offsetof(dt_gstep, attrs) / sizeof(int32_t) + 7;
        f[fz_u8(&in) % nf] = fz_int(&in, 64);
    }
    rc = dt_gplan_run(&q, arena, ARENA, NULL);
    FUZZ_REQUIRE(rc == 0 || is_err(rc));
    return 0;
}
