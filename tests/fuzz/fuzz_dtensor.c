/* fuzz_dtensor.c — dtensor.h meshes, placements, specs and redistribute planning from
   untrusted fields.

   The input gives a mesh (1-3 dims, sizes, world ranks, this rank; often wrong), two specs
   on it (placements of any kind and argument, dtype, tensor rank, shape and strides) and
   planner flags. Checked:
   - every answer is a dt_err, and a failed dt_mesh_init / dt_spec_init / dt_local_shape /
     dt_plan_redistribute wrote nothing;
   - a mesh that initialises: every member's coordinate maps back to it, the mesh-dim
     groups have the dim's size and contain the rank;
   - a spec that initialises: over all members, local pieces lie inside the global shape
     and their element counts add up to numel * (mesh size / number of shards) — each
     element held by exactly the replicas (Partial holds the full shape);
   - a plan: at most DT_MAX_STEPS steps, each step's input shape is the previous step's
     output, the first is this rank's source local shape and the last its target local
     shape; scratch and cost queries answer;
   - the plan cache (3 entries kept across inputs, so entries are hit, missed and replaced
     while the mesh and specs at the same addresses change): dt_plan_cached answers with
     a plan equal to the fresh one and counts one hit or one miss. */
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"
#include "fuzz.h"

static int is_err(int rc)
{
    return rc <= 0 && rc >= DT_ERR_COMM;
}

static int64_t numel(const int32_t *shape, int nd)
{
    int64_t n = 1;
    int d;
    for (d = 0; d < nd; d++) n *= shape[d];
    return n;
}

static void read_spec(fz_in *in, const dt_mesh *m, dt_spec *s, int *rc)
{
    dt_placement pl[DT_MAX_MESH_DIMS + 1];
    int32_t shape[MB_MAX_DIMS], stride[MB_MAX_DIMS];
    int np = fz_u8(in) < 230 ? m->ndim : fz_int(in, DT_MAX_MESH_DIMS + 2), i, nd;
    dt_spec before;
    mb_dtype dt = (mb_dtype)(fz_u8(in) < 240 ? (int)(fz_u8(in) % MB_DTYPE_COUNT) : fz_int(in, 9));
    for (i = 0; i <= DT_MAX_MESH_DIMS; i++) {
        pl[i].kind = (int16_t)(fz_u8(in) < 240 ? fz_u8(in) % 3u : fz_u8(in));
        pl[i].arg = (int16_t)fz_sint(in, 8);
        if (pl[i].kind == DT_KIND_PARTIAL && fz_u8(in) < 200) pl[i].arg = (int16_t)(fz_u8(in) % DT_RED_COUNT);
    }
    nd = fz_u8(in) < 240 ? (int)(fz_u8(in) % 4u) : fz_int(in, MB_MAX_DIMS + 2);
    for (i = 0; i < MB_MAX_DIMS; i++) {
        shape[i] = fz_u8(in) < 240 ? (int32_t)(fz_u8(in) % 12u) : fz_int(in, 12);
        stride[i] = fz_int(in, 64);
    }
    memset(s, 0x6d, sizeof *s);
    before = *s;
    *rc = dt_spec_init(s, m, pl, np > DT_MAX_MESH_DIMS + 1 ? DT_MAX_MESH_DIMS + 1 : np, dt, nd, shape,
                       fz_u8(in) & 1u ? stride : 0);
    FUZZ_REQUIRE(is_err(*rc));
    if (*rc) FUZZ_REQUIRE(memcmp(s, &before, sizeof *s) == 0);
}

static void check_spec(const dt_spec *s)
{
    const dt_mesh *m = s->mesh;
    int32_t shape[MB_MAX_DIMS], off[MB_MAX_DIMS];
    int64_t held = 0;
    int i, d, shards = dt_spec_num_shards(s);
    FUZZ_REQUIRE(dt_spec_check(s) == DT_OK && shards >= 1 && m->size % shards == 0);
    for (i = 0; i < m->size; i++) {
        FUZZ_REQUIRE(dt_local_shape(s, m->ranks[i], shape, off) == DT_OK);
        for (d = 0; d < s->ndim; d++) FUZZ_REQUIRE(shape[d] >= 0 && off[d] >= 0 && off[d] + shape[d] <= s->shape[d]);
        held += numel(shape, s->ndim);
    }
    for (d = 0; d < m->ndim; d++)
        if (s->placements[d].kind == DT_KIND_PARTIAL) held = -1; /* Partial: every rank full */
    if (held >= 0) FUZZ_REQUIRE(held == numel(s->shape, s->ndim) * (m->size / shards));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    dt_mesh m, mb;
    dt_spec a, b;
    dt_plan plan, pb;
    dt_link link = DT_LINK_TORCH;
    int32_t shape[DT_MAX_MESH_DIMS], ranks[DT_MAX_RANKS], coord[DT_MAX_MESH_DIMS], grp[DT_MAX_RANKS];
    int32_t ls[MB_MAX_DIMS];
    uint64_t ns;
    int ndim = fz_u8(&in) < 240 ? 1 + (int)(fz_u8(&in) % DT_MAX_MESH_DIMS) : fz_int(&in, 6), i, d, rc, ra, rb, k;
    int rank = fz_int(&in, 16), use_ranks = fz_u8(&in) & 1u, flags;
    for (i = 0; i < DT_MAX_MESH_DIMS; i++)
        shape[i] = fz_u8(&in) < 240 ? 1 + (int32_t)(fz_u8(&in) % 4u) : fz_int(&in, 8);
    for (i = 0; i < DT_MAX_RANKS; i++)
        ranks[i] = fz_u8(&in) < 240 ? (int32_t)i * 2 + (int32_t)(fz_u8(&in) % 2u) : fz_int(&in, 80);
    memset(&m, 0x4e, sizeof m);
    mb = m;
    rc = dt_mesh_init(&m, ndim, shape, use_ranks ? ranks : 0, rank);
    FUZZ_REQUIRE(is_err(rc));
    if (rc) {
        FUZZ_REQUIRE(memcmp(&m, &mb, sizeof m) == 0);
        return 0;
    }
    for (i = 0; i < m.size; i++) {
        FUZZ_REQUIRE(dt_mesh_coord(&m, m.ranks[i], coord) == DT_OK);
        for (k = 0, d = 0; d < m.ndim; d++) k = k * m.shape[d] + coord[d];
        FUZZ_REQUIRE(k == i);
        for (d = 0; d < m.ndim; d++) {
            int n = dt_mesh_group(&m, m.ranks[i], d, grp, DT_MAX_RANKS), j, found = 0;
            FUZZ_REQUIRE(n == m.shape[d]);
            for (j = 0; j < n; j++) found += grp[j] == m.ranks[i];
            FUZZ_REQUIRE(found == 1);
        }
    }
    read_spec(&in, &m, &a, &ra);
    read_spec(&in, &m, &b, &rb);
    if (ra == DT_OK) check_spec(&a);
    if (rb == DT_OK) check_spec(&b);
    if (ra || rb) return 0;
    if (fz_u8(&in) < 16) b.placements[fz_u8(&in) % DT_MAX_MESH_DIMS].kind = (int16_t)fz_u8(&in); /* damage */
    memset(&plan, 0x2f, sizeof plan);
    pb = plan;
    flags = (int)(fz_u8(&in) % 3u);
    rc = dt_plan_redistribute(&a, &b, flags, &plan);
    FUZZ_REQUIRE(is_err(rc));
    if (rc) {
        FUZZ_REQUIRE(memcmp(&plan, &pb, sizeof plan) == 0);
        return 0;
    }
    FUZZ_REQUIRE(plan.nsteps >= 0 && plan.nsteps <= DT_MAX_STEPS);
    if (m.index >= 0 && plan.nsteps > 0) {
        FUZZ_REQUIRE(dt_local_shape(&a, m.rank, ls, 0) == DT_OK);
        FUZZ_REQUIRE(memcmp(ls, plan.steps[0].in_shape, (size_t)a.ndim * sizeof(int32_t)) == 0);
        for (i = 1; i < plan.nsteps; i++)
            FUZZ_REQUIRE(
                memcmp(plan.steps[i].in_shape, plan.steps[i - 1].out_shape, (size_t)a.ndim * sizeof(int32_t)) == 0);
        FUZZ_REQUIRE(dt_local_shape(&b, m.rank, ls, 0) == DT_OK);
        FUZZ_REQUIRE(memcmp(ls, plan.steps[plan.nsteps - 1].out_shape, (size_t)a.ndim * sizeof(int32_t)) == 0);
    }
    (void)dt_plan_scratch_bytes(&plan);
    FUZZ_REQUIRE(is_err(dt_plan_cost_ns(&plan, &link, &ns)));
    {
        static dt_cache_entry entries[3];
        static dt_plan_cache cache;
        const dt_plan *cp = 0;
        uint32_t seen;
        if (!cache.entries || fz_u8(&in) < 8) FUZZ_REQUIRE(dt_plan_cache_init(&cache, entries, 3) == DT_OK);
        if (fz_u8(&in) < 8) FUZZ_REQUIRE(dt_plan_cache_clear(&cache) == DT_OK);
        seen = cache.hits + cache.misses;
        FUZZ_REQUIRE(dt_plan_cached(&cache, &a, &b, flags, &cp) == DT_OK && cp);
        FUZZ_REQUIRE(cache.hits + cache.misses == seen + 1 && cache.count <= 3);
        FUZZ_REQUIRE(cp->nsteps == plan.nsteps && cp->ncollectives == plan.ncollectives && cp->hops == plan.hops &&
                     cp->bytes == plan.bytes && cp->scratch == plan.scratch && cp->ndim == plan.ndim &&
                     cp->dtype == plan.dtype);
        FUZZ_REQUIRE(!memcmp(cp->in_shape, plan.in_shape, sizeof plan.in_shape) &&
                     !memcmp(cp->out_shape, plan.out_shape, sizeof plan.out_shape));
        FUZZ_REQUIRE(!memcmp(cp->steps, plan.steps, (size_t)plan.nsteps * sizeof plan.steps[0]));
    }
    return 0;
}
