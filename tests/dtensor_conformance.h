/* dtensor_conformance.h — dtensor.h's execution suite, the same bodies over every port

   Like tests/pg_conformance.h: the bodies are written against dtensor.h and pg.h only, run
   on every rank of a world of DTC_RANKS, use no stdio and no heap (bare-metal cores run
   them), and report a failure as the source line of the failed check. Every result is
   compared exactly with a single-rank computation: the global tensor built on each rank
   and its local view under the expected spec (dt_local_view), or the global itself.

   The driver may set DTC_RANKS (default 4: a 1-D mesh of 4 and a 2x2 mesh; 2: a board with
   two cores, the 1-D mesh of 2 only) and defines, before including this file (after
   cmocka.h, dtensor.h and the port with their implementations):
       static int dtc_run(int (*body)(pg_group *g, void *arg), void *arg);
           runs body on every rank of a ready world of DTC_RANKS; 0 when every rank
           returned 0, else the first nonzero result.
   Then: cmocka_run_group_tests(dtc_tests, NULL, NULL). */
#ifndef DTENSOR_CONFORMANCE_H
#define DTENSOR_CONFORMANCE_H

#ifndef DTC_RANKS
#define DTC_RANKS 4
#endif
#if DTC_RANKS != 2 && DTC_RANKS != 4
#error "DTC_RANKS: 2 or 4"
#endif
#define DTC_MESH_DIMS (DTC_RANKS == 4 ? 2 : 1) /* the 2x2 mesh needs 4 ranks */
#define DTC_ELEMS     256                      /* largest global tensor of the suite, elements */
#define DTC_SCRATCH   8192                     /* bytes of scratch per rank */

#define DTC_CHECK(c)               \
    do {                           \
        if (!(c)) return __LINE__; \
    } while (0)
#define DTC_RC(expr, want)                      \
    do {                                        \
        int dtc_rc_ = (expr);                   \
        if (dtc_rc_ != (want)) return __LINE__; \
    } while (0)
#define DTC_OK(expr) DTC_RC((expr), 0)
#define DTC_SUB(expr)                       \
    do {                                    \
        int dtc_sub_ = (expr);              \
        if (dtc_sub_ != 0) return dtc_sub_; \
    } while (0)

/* per-rank state: each rank touches only its own row */
static dt_mesh dtc_mesh[DTC_RANKS];
static dt_comm dtc_comm[DTC_RANKS];
static float dtc_glob[DTC_RANKS][DTC_ELEMS]; /* the global tensor (reference) */
static float dtc_in[DTC_RANKS][DTC_ELEMS];
static float dtc_out[DTC_RANKS][DTC_ELEMS];
static float dtc_mid[DTC_RANKS][DTC_ELEMS];
static uint64_t dtc_scr[DTC_RANKS][DTC_SCRATCH / 8];
static dt_cache_entry dtc_entries[DTC_RANKS][4];
static dt_plan_cache dtc_cache[DTC_RANKS];

#define DTC_SENTINEL (-12345.0f)

static int dtc_me(pg_group *g)
{
    int r = pg_rank(g);
    return r < 0 || r >= DTC_RANKS ? 0 : r;
}

/* A 1-D mesh of DTC_RANKS (ndim 1) or a 2x2 mesh (ndim 2) over the world, bound to g. */
static int dtc_setup(pg_group *g, int ndim)
{
    static const int32_t one[1] = {DTC_RANKS}, two[2] = {2, 2};
    int me = dtc_me(g);
    if (pg_size(g) != DTC_RANKS || pg_set_timeout(g, 5000) != PG_OK || ndim > DTC_MESH_DIMS) return __LINE__;
    DTC_OK(dt_mesh_init(&dtc_mesh[me], ndim, ndim == 1 ? one : two, 0, pg_world_rank(g, me)));
    DTC_OK(dt_comm_init(&dtc_comm[me], &dtc_mesh[me], g));
    return 0;
}

/* Rows of `rows` that rank r holds under Shard(0) on the 1-D mesh (torch.chunk: 13 rows are
   4, 4, 4, 1 on 4 ranks and 7, 6 on 2). */
static int32_t dtc_chunk(int32_t rows, int r)
{
    int32_t c = (rows + DTC_RANKS - 1) / DTC_RANKS, left = rows - c * r;
    return left < 0 ? 0 : left < c ? left : c;
}

/* G[i] = i + 1 (row-major), or scale * G[i] + add; a contiguous view of it in t. */
static void dtc_fill(float *buf, int32_t rows, int32_t cols, float scale, float add, mb_tensor *t)
{
    int32_t i, shape[2];
    shape[0] = rows;
    shape[1] = cols;
    for (i = 0; i < rows * cols; i++) buf[i] = scale * (float)(i + 1) + add;
    mb_tensor_init(t, buf, MB_F32, 2, shape);
}

static void dtc_poison(float *buf)
{
    int i;
    for (i = 0; i < DTC_ELEMS; i++) buf[i] = DTC_SENTINEL;
}

/* 1 when view a equals view b element for element (and shapes agree). */
static int dtc_equal(const mb_tensor *a, const mb_tensor *b)
{
    int32_t i, j, rows, cols;
    if (a->ndim != 2 || b->ndim != 2 || a->shape[0] != b->shape[0] || a->shape[1] != b->shape[1]) return 0;
    rows = a->shape[0];
    cols = a->shape[1];
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++)
            if (((const float *)a->data)[i * a->stride[0] + j * a->stride[1]] !=
                ((const float *)b->data)[i * b->stride[0] + j * b->stride[1]])
                return 0;
    return 1;
}

/* Copy this rank's view of global `src` under spec s into a contiguous tensor at buf. */
static int dtc_local(const dt_spec *s, const mb_tensor *global, float *buf, mb_tensor *out)
{
    mb_tensor v;
    DTC_OK(dt_local_view(s, s->mesh->rank, global, &v));
    DTC_OK(mb_tensor_init(out, buf, MB_F32, v.ndim, v.shape));
    DTC_OK(mb_copy(out, &v));
    return 0;
}

/* One transition on this rank's mesh: the input is this rank's piece of
   in_scale * G + in_add * (1 + coordinate on the first Partial mesh dim); the output must
   equal the piece of exp_scale * G + exp_add under dst, with `ncoll` collectives. */
static int dtc_transition(pg_group *g, const dt_placement *sp, const dt_placement *dp, int32_t rows, int32_t cols,
                          float in_scale, float in_add, float exp_scale, float exp_add, int flags, int ncoll)
{
    int me = dtc_me(g), i;
    const dt_mesh *m = &dtc_mesh[me];
    int32_t shape[2];
    dt_spec src, dst;
    dt_plan plan;
    mb_tensor G, in, out, want;
    float coord = 1;
    uint32_t before = dtc_comm[me].collectives;
    shape[0] = rows;
    shape[1] = cols;
    for (i = 0; i < m->ndim; i++)
        if (sp[i].kind == DT_KIND_PARTIAL) {
            coord = (float)(1 + m->coord[i]);
            break;
        }
    DTC_OK(dt_spec_init(&src, m, sp, m->ndim, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&dst, m, dp, m->ndim, MB_F32, 2, shape, 0));
    DTC_OK(dt_plan_redistribute(&src, &dst, flags, &plan));
    DTC_CHECK(ncoll < 0 || plan.ncollectives == ncoll);
    DTC_CHECK(plan.scratch <= DTC_SCRATCH);
    dtc_fill(dtc_glob[me], rows, cols, in_scale, in_add * coord, &G);
    DTC_SUB(dtc_local(&src, &G, dtc_in[me], &in));
    DTC_OK(dt_local_shape(&dst, m->rank, shape, 0));
    dtc_poison(dtc_out[me]);
    DTC_OK(mb_tensor_init(&out, dtc_out[me], MB_F32, 2, shape));
    DTC_OK(dt_redistribute(&dtc_comm[me], &dtc_cache[me], &src, &in, &dst, flags, &out, dtc_scr[me],
                           (size_t)plan.scratch));
    DTC_CHECK(dtc_comm[me].collectives - before == (uint32_t)plan.ncollectives);
    dtc_fill(dtc_glob[me], rows, cols, exp_scale, exp_add, &G);
    DTC_OK(dt_local_view(&dst, m->rank, &G, &want));
    DTC_CHECK(dtc_equal(&out, &want));
    DTC_CHECK(dtc_out[me][shape[0] * shape[1]] == DTC_SENTINEL); /* nothing past it */
    return 0;
}

#define R_     DT_REPLICATE()
#define S0_    DT_SHARD(0)
#define S1_    DT_SHARD(1)
#define P_(op) DT_PARTIAL(op)

/* Partial contributions G + (rank + 1) over the 1-D mesh: sum = nG + n(n + 1)/2,
   avg = G + (n + 1)/2, max = G + n, min = G + 1; the product of the ranks + 1 is n!. */
#define DTC_N         ((float)DTC_RANKS)
#define DTC_SUM_ADD   (DTC_N * (DTC_N + 1) / 2)
#define DTC_AVG_ADD   ((DTC_N + 1) / 2)
#define DTC_FACTORIAL (DTC_RANKS == 4 ? 24.0f : 2.0f)

/* ---- every transition on the 1-D mesh of DTC_RANKS, even, uneven and empty shards ---- */
static int dtc_transitions_1d_body(pg_group *g, void *arg)
{
    static const int32_t rows[] = {13, 12, 14, 3, 2, 1, 0};
    static const dt_placement R[1] = {R_}, S0[1] = {S0_}, S1[1] = {S1_}, PSUM[1] = {P_(DT_SUM)}, PAVG[1] = {P_(DT_AVG)},
                              PMAX[1] = {P_(DT_MAX)}, PMIN[1] = {P_(DT_MIN)}, PPROD[1] = {P_(DT_PROD)};
    int k, me = dtc_me(g);
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    DTC_OK(dt_plan_cache_init(&dtc_cache[me], dtc_entries[me], 4));
    for (k = 0; k < (int)(sizeof rows / sizeof rows[0]); k++) {
        int32_t r = rows[k];
        /* contributions G + (rank+1): on 4 ranks sum = 4G + 10, avg = G + 2.5, max = G + 4 */
        DTC_SUB(dtc_transition(g, S0, R, r, 3, 1, 0, 1, 0, 0, 1));
        DTC_SUB(dtc_transition(g, S1, R, 3, r, 1, 0, 1, 0, 0, 1));
        DTC_SUB(dtc_transition(g, PSUM, R, r, 3, 1, 1, DTC_N, DTC_SUM_ADD, 0, 1));
        DTC_SUB(dtc_transition(g, PAVG, R, r, 3, 1, 1, 1, DTC_AVG_ADD, 0, 1));
        DTC_SUB(dtc_transition(g, PMAX, R, r, 3, 1, 1, 1, DTC_N, 0, 1));
        DTC_SUB(dtc_transition(g, PMIN, R, r, 3, 1, 1, 1, 1, 0, 1));
        DTC_SUB(dtc_transition(g, PPROD, R, r, 2, 0, 1, 0, DTC_FACTORIAL, 0, 1)); /* 1 * 2 * ... * n */
        DTC_SUB(dtc_transition(g, PSUM, S0, r, 3, 1, 1, DTC_N, DTC_SUM_ADD, 0, 1));
        DTC_SUB(dtc_transition(g, PSUM, S1, 3, r, 1, 1, DTC_N, DTC_SUM_ADD, 0, 1));
        DTC_SUB(dtc_transition(g, PMAX, S0, r, 3, 1, 1, 1, DTC_N, 0, 1));
        DTC_SUB(dtc_transition(g, R, S0, r, 3, 1, 0, 1, 0, 0, 0));
        DTC_SUB(dtc_transition(g, R, S1, 3, r, 1, 0, 1, 0, 0, 0));
        DTC_SUB(dtc_transition(g, S0, S1, r, 5, 1, 0, 1, 0, 0, 1));
        DTC_SUB(dtc_transition(g, S1, S0, 5, r, 1, 0, 1, 0, 0, 1));
        DTC_SUB(dtc_transition(g, S0, S0, r, 3, 1, 0, 1, 0, 0, 0));
        DTC_SUB(dtc_transition(g, PSUM, PSUM, r, 3, 1, 0, 1, 0, 0, 0)); /* P -> P: no-op */
        /* R -> P (internal flag): sum divides by n, max/avg keep; back to R restores G */
        DTC_SUB(dtc_transition(g, R, PSUM, r, 3, 1, 0, 1 / DTC_N, 0, DT_PLAN_ALLOW_PARTIAL, 0));
        DTC_SUB(dtc_transition(g, R, PMAX, r, 3, 1, 0, 1, 0, DT_PLAN_ALLOW_PARTIAL, 0));
        DTC_SUB(dtc_transition(g, R, PAVG, r, 3, 1, 0, 1, 0, DT_PLAN_ALLOW_PARTIAL, 0));
    }
    return 0;
}

/* The example: ones(13,3) Partial(sum) on 4 ranks -> Shard(0): rows 4,4,4,1 of 4
   (on 2 ranks: 7,6 of 2). */
static int dtc_ones_body(pg_group *g, void *arg)
{
    static const dt_placement PSUM[1] = {P_(DT_SUM)}, S0[1] = {S0_};
    static const int32_t shape[2] = {13, 3};
    int me = dtc_me(g), i, rows = dtc_chunk(13, me);
    dt_spec src, dst;
    mb_tensor in, out;
    int32_t ls[2];
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    DTC_OK(dt_spec_init(&src, &dtc_mesh[me], PSUM, 1, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&dst, &dtc_mesh[me], S0, 1, MB_F32, 2, shape, 0));
    for (i = 0; i < 39; i++) dtc_in[me][i] = 1;
    DTC_OK(mb_tensor_init(&in, dtc_in[me], MB_F32, 2, shape));
    DTC_OK(dt_local_shape(&dst, me, ls, 0));
    DTC_CHECK(ls[0] == rows && ls[1] == 3);
    dtc_poison(dtc_out[me]);
    DTC_OK(mb_tensor_init(&out, dtc_out[me], MB_F32, 2, ls));
    DTC_OK(dt_redistribute(&dtc_comm[me], 0, &src, &in, &dst, 0, &out, dtc_scr[me], DTC_SCRATCH));
    for (i = 0; i < rows * 3; i++) DTC_CHECK(dtc_out[me][i] == DTC_N);
    DTC_CHECK(dtc_out[me][rows * 3] == DTC_SENTINEL);
    DTC_CHECK(dtc_comm[me].collectives == 1);
    return 0;
}

/* ---- 2x2 mesh: nested and crossed sharding, collective counts of issue 5 ---- */
#if DTC_MESH_DIMS == 2
static int dtc_transitions_2d_body(pg_group *g, void *arg)
{
    static const dt_placement pairs[][2][2] = {
        {{S0_, S1_}, {S0_, S0_}}, {{S0_, S1_}, {S1_, S0_}}, {{S0_, S0_}, {S1_, S1_}}, {{S0_, S0_}, {R_, R_}},
        {{S0_, S1_}, {R_, R_}},   {{R_, R_}, {S0_, S1_}},   {{R_, R_}, {S0_, S0_}},   {{S0_, R_}, {R_, S0_}},
        {{S1_, S0_}, {S0_, S1_}}, {{S0_, S0_}, {S0_, R_}},  {{R_, S0_}, {S0_, S0_}},  {{S0_, S0_}, {R_, S0_}},
        {{S1_, S1_}, {S0_, S0_}}, {{S0_, R_}, {S1_, R_}},   {{R_, S1_}, {R_, S0_}}};
    static const int ncoll[] = {1, 2, 2, 2, 2, 0, 0, 1, 2, 1, 1, 2, 2, 1, 1};
    static const dt_placement partial[][2][2] = {{{P_(DT_SUM), S0_}, {R_, R_}},
                                                 {{P_(DT_SUM), P_(DT_SUM)}, {S0_, S1_}},
                                                 {{S0_, P_(DT_SUM)}, {S0_, S0_}},
                                                 {{P_(DT_SUM), R_}, {S1_, S0_}}};
    static const int32_t shapes[][2] = {{5, 7}, {13, 3}, {3, 14}, {8, 8}, {1, 2}};
    int k, s;
    (void)arg;
    DTC_SUB(dtc_setup(g, 2));
    for (s = 0; s < 5; s++) {
        for (k = 0; k < (int)(sizeof pairs / sizeof pairs[0]); k++)
            DTC_SUB(dtc_transition(g, pairs[k][0], pairs[k][1], shapes[s][0], shapes[s][1], 1, 0, 1, 0, 0, ncoll[k]));
        /* Partial(sum) mesh dims hold G / group size each: exact in binary, sum = G */
        for (k = 0; k < (int)(sizeof partial / sizeof partial[0]); k++) {
            float sc = k == 1 ? 0.25f : 0.5f;
            DTC_SUB(dtc_transition(g, partial[k][0], partial[k][1], shapes[s][0], shapes[s][1], sc, 0, 1, 0, 0, -1));
        }
        /* Partial(max) over the first mesh dim with contributions G + coord + 1 */
        {
            static const dt_placement pm[2] = {P_(DT_MAX), S1_}, rr[2] = {R_, S0_};
            DTC_SUB(dtc_transition(g, pm, rr, shapes[s][0], shapes[s][1], 1, 1, 1, 2, 0, 2));
        }
    }
    return 0;
}
#endif

/* ---- round trips S(d) -> R -> S(d) on the 1-D mesh, compared with the original ---- */
static int dtc_round_trip_body(pg_group *g, void *arg)
{
    static const int32_t shapes[][2] = {{12, 3}, {13, 3}, {14, 3}, {3, 13}, {3, 14}};
    int me = dtc_me(g), s, d;
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    for (s = 0; s < 5; s++)
        for (d = 0; d < 2; d++) {
            dt_placement S[1], R[1] = {R_};
            dt_spec ss, rs;
            mb_tensor G, in, full, back;
            size_t need;
            S[0].kind = DT_KIND_SHARD;
            S[0].arg = (int16_t)d;
            DTC_OK(dt_spec_init(&ss, &dtc_mesh[me], S, 1, MB_F32, 2, shapes[s], 0));
            DTC_OK(dt_spec_init(&rs, &dtc_mesh[me], R, 1, MB_F32, 2, shapes[s], 0));
            dtc_fill(dtc_glob[me], shapes[s][0], shapes[s][1], 1, 0, &G);
            DTC_SUB(dtc_local(&ss, &G, dtc_in[me], &in));
            DTC_OK(dt_full_tensor_scratch_bytes(&ss, &need));
            dtc_poison(dtc_mid[me]);
            DTC_OK(mb_tensor_init(&full, dtc_mid[me], MB_F32, 2, shapes[s]));
            DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &ss, &in, &full, dtc_scr[me], need));
            DTC_CHECK(dtc_equal(&full, &G));
            dtc_poison(dtc_out[me]);
            DTC_OK(mb_tensor_init(&back, dtc_out[me], MB_F32, 2, in.shape));
            DTC_OK(dt_redistribute(&dtc_comm[me], 0, &rs, &full, &ss, 0, &back, 0, 0));
            DTC_CHECK(dtc_equal(&back, &in));
        }
    return 0;
}

/* ---- construction: distribute (scatter/broadcast from a rank, or local split),
   from_local / to_local, full_tensor, strided views, on 1-D and (4 ranks) 2x2 meshes ---- */
static int dtc_construct_body(pg_group *g, void *arg)
{
    static const dt_placement p1[][2] = {{S0_, R_}, {S1_, R_}, {R_, R_}};
    static const dt_placement p2[][2] = {{S0_, S1_}, {S1_, S0_}, {S0_, S0_}, {R_, S1_}, {S1_, R_}, {R_, R_}};
    static const int32_t shapes[][2] = {{13, 3}, {3, 14}, {5, 7}, {2, 1}};
    int me = dtc_me(g), nd, k, s, src;
    (void)arg;
    for (nd = 1; nd <= DTC_MESH_DIMS; nd++) {
        DTC_SUB(dtc_setup(g, nd));
        for (k = 0; k < (nd == 1 ? 3 : 6); k++)
            for (s = 0; s < 4; s++)
                for (src = -1; src < DTC_RANKS; src++) {
                    dt_spec sp;
                    dt_tensor t;
                    mb_tensor G, out, want, full, loc;
                    int32_t ls[2];
                    size_t need;
                    uint32_t before = dtc_comm[me].collectives;
                    DTC_OK(dt_spec_init(&sp, &dtc_mesh[me], nd == 1 ? p1[k] : p2[k], nd, MB_F32, 2, shapes[s], 0));
                    DTC_OK(dt_local_shape(&sp, me, ls, 0));
                    /* only the source holds the tensor (the others: a poisoned buffer) */
                    dtc_fill(dtc_glob[me], shapes[s][0], shapes[s][1], 1, 0, &G);
                    if (src >= 0 && src != me) dtc_poison(dtc_glob[me]);
                    DTC_OK(dt_distribute_scratch_bytes(&sp, src, &need));
                    DTC_CHECK(need <= DTC_SCRATCH);
                    dtc_poison(dtc_out[me]);
                    DTC_OK(mb_tensor_init(&out, dtc_out[me], MB_F32, 2, ls));
                    DTC_OK(dt_distribute(&dtc_comm[me], &sp, &G, src == -1 ? DT_EVERY_RANK : src, &out, dtc_scr[me],
                                         DTC_SCRATCH));
                    DTC_CHECK(src >= 0 || dtc_comm[me].collectives == before); /* local split: no collective */
                    dtc_fill(dtc_glob[me], shapes[s][0], shapes[s][1], 1, 0, &G);
                    DTC_OK(dt_local_view(&sp, me, &G, &want));
                    DTC_CHECK(dtc_equal(&out, &want));
                    DTC_CHECK(dtc_out[me][ls[0] * ls[1]] == DTC_SENTINEL);
                    /* from_local with the real global shape, to_local, full_tensor */
                    DTC_OK(dt_from_local(&t, &dtc_mesh[me], sp.placements, nd, &out, shapes[s]));
                    DTC_OK(dt_to_local(&t, &loc));
                    DTC_CHECK(loc.data == out.data);
                    DTC_OK(dt_full_tensor_scratch_bytes(&t.spec, &need));
                    DTC_OK(mb_tensor_init(&full, dtc_mid[me], MB_F32, 2, shapes[s]));
                    DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &t.spec, &loc, &full, dtc_scr[me], need));
                    DTC_CHECK(dtc_equal(&full, &G));
                }
    }
    /* strided input and output views: a transposed buffer in, a column-major one out */
    {
        static const dt_placement S0[1] = {S0_}, S1[1] = {S1_};
        static const int32_t shape[2] = {13, 6};
        dt_spec a, b;
        mb_tensor G, in, out, want;
        int32_t la[2], lb[2];
        int i, j;
        DTC_SUB(dtc_setup(g, 1));
        DTC_OK(dt_spec_init(&a, &dtc_mesh[me], S0, 1, MB_F32, 2, shape, 0));
        DTC_OK(dt_spec_init(&b, &dtc_mesh[me], S1, 1, MB_F32, 2, shape, 0));
        DTC_OK(dt_local_shape(&a, me, la, 0));
        DTC_OK(dt_local_shape(&b, me, lb, 0));
        dtc_fill(dtc_glob[me], 13, 6, 1, 0, &G);
        DTC_OK(dt_local_view(&a, me, &G, &want));
        in = want;
        in.data = dtc_in[me];
        in.stride[0] = 1;
        in.stride[1] = la[0];
        for (i = 0; i < la[0]; i++)
            for (j = 0; j < la[1]; j++) dtc_in[me][i + j * la[0]] = ((float *)want.data)[i * 6 + j];
        DTC_OK(mb_tensor_init(&out, dtc_out[me], MB_F32, 2, lb));
        out.stride[0] = 1;
        out.stride[1] = lb[0];
        DTC_OK(dt_redistribute(&dtc_comm[me], 0, &a, &in, &b, 0, &out, dtc_scr[me], DTC_SCRATCH));
        DTC_OK(dt_local_view(&b, me, &G, &want));
        DTC_CHECK(dtc_equal(&out, &want));
    }
    return 0;
}

/* ---- regressions from DTensor's bug reports ---- */
static int dtc_regressions_body(pg_group *g, void *arg)
{
    static const dt_placement S0[1] = {S0_}, R[1] = {R_}, PSUM[1] = {P_(DT_SUM)}, PAVG[1] = {P_(DT_AVG)};
    int me = dtc_me(g), i;
    dt_tensor t;
    mb_tensor loc, full, G;
    int32_t shape[2], off[2], gs[2];
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    /* #103306: from_local -> Shard(0) -> Replicate gives the original rows in order */
    for (i = 0; i < 6; i++) dtc_in[me][i] = (float)(me * 100 + i);
    shape[0] = 2;
    shape[1] = 3;
    DTC_OK(mb_tensor_init(&loc, dtc_in[me], MB_F32, 2, shape));
    DTC_OK(dt_from_local(&t, &dtc_mesh[me], S0, 1, &loc, 0));
    DTC_CHECK(t.spec.shape[0] == 2 * DTC_RANKS && t.spec.shape[1] == 3);
    DTC_OK(mb_tensor_init(&full, dtc_out[me], MB_F32, 2, t.spec.shape));
    DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &t.spec, &loc, &full, dtc_scr[me], DTC_SCRATCH));
    for (i = 0; i < 6 * DTC_RANKS; i++) DTC_CHECK(dtc_out[me][i] == (float)((i / 6) * 100 + i % 6));
    /* #110762: uneven from_local needs the global shape: 13 rows as 4,4,4,1 (7,6 on 2) */
    shape[0] = dtc_chunk(13, me);
    gs[0] = 13;
    gs[1] = 3;
    for (i = 0; i < shape[0] * 3; i++) dtc_in[me][i] = (float)(me * dtc_chunk(13, 0) * 3 + i + 1);
    DTC_OK(mb_tensor_init(&loc, dtc_in[me], MB_F32, 2, shape));
    DTC_OK(dt_from_local(&t, &dtc_mesh[me], S0, 1, &loc, gs));
    DTC_CHECK(t.spec.shape[0] == 13);
    DTC_OK(dt_local_shape(&t.spec, me, shape, off));
    DTC_CHECK(off[0] == me * dtc_chunk(13, 0));
    DTC_OK(dt_from_local(&t, &dtc_mesh[me], S0, 1, &loc, 0)); /* the even guess: n x the local rows */
    DTC_CHECK(t.spec.shape[0] == DTC_RANKS * dtc_chunk(13, me));
    gs[0] = 14; /* a global shape the local pieces do not fit: the last rank would hold 1 more */
    DTC_RC(dt_from_local(&t, &dtc_mesh[me], S0, 1, &loc, gs), me == DTC_RANKS - 1 ? DT_ERR_MISMATCH : DT_OK);
    gs[0] = 13;
    DTC_OK(dt_from_local(&t, &dtc_mesh[me], S0, 1, &loc, gs));
    /* #144109: full_tensor of uneven shards = the rows in order, no padding */
    dtc_poison(dtc_out[me]);
    DTC_OK(mb_tensor_init(&full, dtc_out[me], MB_F32, 2, gs));
    DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &t.spec, &loc, &full, dtc_scr[me], DTC_SCRATCH));
    for (i = 0; i < 39; i++) DTC_CHECK(dtc_out[me][i] == (float)(i + 1));
    DTC_CHECK(dtc_out[me][39] == DTC_SENTINEL);
#if DTC_MESH_DIMS == 2
    { /* #161368: 2-D uneven offsets, (5,7) on 2x2 [S0,S1]: rows 3,2 / cols 4,3 */
        static const dt_placement S0S1[2] = {S0_, S1_};
        dt_spec ps;
        DTC_SUB(dtc_setup(g, 2));
        gs[0] = 5;
        gs[1] = 7;
        DTC_OK(dt_spec_init(&ps, &dtc_mesh[me], S0S1, 2, MB_F32, 2, gs, 0));
        DTC_OK(dt_local_shape(&ps, me, shape, off));
        DTC_CHECK(shape[0] == (me < 2 ? 3 : 2) && off[0] == (me < 2 ? 0 : 3));
        DTC_CHECK(shape[1] == (me % 2 ? 3 : 4) && off[1] == (me % 2 ? 4 : 0));
        dtc_fill(dtc_glob[me], 5, 7, 1, 0, &G);
        DTC_SUB(dtc_local(&ps, &G, dtc_in[me], &loc));
        DTC_CHECK(dtc_in[me][0] == (float)(off[0] * 7 + off[1] + 1));
        DTC_OK(mb_tensor_init(&full, dtc_out[me], MB_F32, 2, gs));
        DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &ps, &loc, &full, dtc_scr[me], DTC_SCRATCH));
        DTC_CHECK(dtc_equal(&full, &G));
    }
#endif
    /* #162692: mean of arange(12).view(3,4) sharded S(0) on 2 ranks is 5.5, not biased by
       the uneven rows (2 and 1). A 2-rank sub-mesh of the world: ranks 2, 3 (if any) are not
       in it. */
    {
        static const int32_t two[1] = {2}, sub[2] = {0, 1}, one[1] = {1};
        dt_mesh m2;
        dt_spec s2, r2;
        mb_tensor v, acc;
        float sum = 0, mean, out1 = 0;
        int32_t n;
        gs[0] = 3;
        gs[1] = 4;
        DTC_OK(dt_mesh_init(&m2, 1, two, sub, me));
        DTC_RC(dt_comm_init(&dtc_comm[me], &m2, g), me < 2 ? DT_OK : DT_ERR_NOT_MEMBER);
        if (me >= 2) return 0;
        for (i = 0; i < 12; i++) dtc_glob[me][i] = (float)i;
        DTC_OK(mb_tensor_init(&G, dtc_glob[me], MB_F32, 2, gs));
        DTC_OK(dt_spec_init(&s2, &m2, S0, 1, MB_F32, 2, gs, 0));
        DTC_OK(dt_local_view(&s2, me, &G, &v));
        n = v.shape[0] * 4;
        for (i = 0; i < n; i++) sum += ((float *)v.data)[i];
        /* the fix torch took: replicate, then the plain mean */
        DTC_OK(dt_spec_init(&r2, &m2, R, 1, MB_F32, 2, gs, 0));
        DTC_OK(mb_tensor_init(&full, dtc_out[me], MB_F32, 2, gs));
        DTC_OK(dt_redistribute(&dtc_comm[me], 0, &s2, &v, &r2, 0, &full, dtc_scr[me], DTC_SCRATCH));
        for (mean = 0, i = 0; i < 12; i++) mean += dtc_out[me][i];
        DTC_CHECK(mean / 12 == 5.5f);
        /* the same without gathering: Partial(sum) of the local sums, / the global count */
        dtc_in[me][0] = sum;
        DTC_OK(mb_tensor_init(&acc, dtc_in[me], MB_F32, 1, one));
        DTC_OK(dt_spec_init(&s2, &m2, PSUM, 1, MB_F32, 1, one, 0));
        DTC_OK(dt_spec_init(&r2, &m2, R, 1, MB_F32, 1, one, 0));
        DTC_OK(mb_tensor_init(&v, &out1, MB_F32, 1, one));
        DTC_OK(dt_redistribute(&dtc_comm[me], 0, &s2, &acc, &r2, 0, &v, dtc_scr[me], DTC_SCRATCH));
        DTC_CHECK(out1 == 66.0f && out1 / 12 == 5.5f);
        /* Partial(avg) of the local means is the biased answer (3.5 + 9.5) / 2 = 6.5 */
        dtc_in[me][0] = sum / (float)n;
        DTC_OK(dt_spec_init(&s2, &m2, PAVG, 1, MB_F32, 1, one, 0));
        DTC_OK(dt_redistribute(&dtc_comm[me], 0, &s2, &acc, &r2, 0, &v, dtc_scr[me], DTC_SCRATCH));
        DTC_CHECK(out1 == 6.5f);
    }
    return 0;
}

/* ---- bad input: every rank gets the code before any communication, and nothing is
   written; a correct call afterwards still works (no stray messages) ---- */
static int dtc_bad_input_body(pg_group *g, void *arg)
{
    static const dt_placement S0[1] = {S0_}, S1[1] = {S1_}, S2[1] = {DT_SHARD(2)}, R[1] = {R_}, PSUM[1] = {P_(DT_SUM)},
                              PMAX[1] = {P_(DT_MAX)}, PAVG[1] = {P_(DT_AVG)};
    static const int32_t shape[2] = {13, 3}, world[1] = {DTC_RANKS};
    int me = dtc_me(g), i;
    dt_spec s0, s1, r, ps, pm, pa;
    dt_mesh other;
    dt_comm bad;
    mb_tensor G, in, in1, full, loc1;
    int32_t ls[2], wrong[2];
    size_t need;
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    DTC_RC(dt_spec_init(&s0, &dtc_mesh[me], S2, 1, MB_F32, 2, shape, 0), DT_ERR_DIM); /* dim out of range */
    DTC_OK(dt_spec_init(&s0, &dtc_mesh[me], S0, 1, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&r, &dtc_mesh[me], R, 1, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&ps, &dtc_mesh[me], PSUM, 1, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&pm, &dtc_mesh[me], PMAX, 1, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&pa, &dtc_mesh[me], PAVG, 1, MB_F32, 2, shape, 0));
    dtc_fill(dtc_glob[me], 13, 3, 1, 0, &G);
    DTC_SUB(dtc_local(&s0, &G, dtc_in[me], &in));
    dtc_poison(dtc_out[me]);
    DTC_OK(mb_tensor_init(&full, dtc_out[me], MB_F32, 2, shape));
    DTC_OK(dt_full_tensor_scratch_bytes(&s0, &need));
    DTC_CHECK(need == 0); /* S(0) -> R gathers straight into `full` */
    /* too-small scratch: S(1)'s column blocks are staged (13 x 3 f32: 160 bytes) */
    DTC_OK(dt_spec_init(&s1, &dtc_mesh[me], S1, 1, MB_F32, 2, shape, 0));
    DTC_SUB(dtc_local(&s1, &G, dtc_mid[me], &in1));
    DTC_OK(dt_full_tensor_scratch_bytes(&s1, &need));
    DTC_CHECK(need == 160);
    DTC_RC(dt_full_tensor(&dtc_comm[me], 0, &s1, &in1, &full, dtc_scr[me], need - 1), DT_ERR_TOO_SMALL);
    DTC_RC(dt_full_tensor(&dtc_comm[me], 0, &s1, &in1, &full, 0, need), DT_ERR_TOO_SMALL);
    /* wrong local shape: in and out */
    DTC_OK(dt_local_shape(&s0, me, ls, 0));
    wrong[0] = ls[0] + 1;
    wrong[1] = 3;
    in.shape[0] = wrong[0];
    DTC_RC(dt_full_tensor(&dtc_comm[me], 0, &s0, &in, &full, dtc_scr[me], need), DT_ERR_MISMATCH);
    in.shape[0] = ls[0];
    full.shape[0] = 12;
    DTC_RC(dt_full_tensor(&dtc_comm[me], 0, &s0, &in, &full, dtc_scr[me], need), DT_ERR_MISMATCH);
    full.shape[0] = 13;
    in.dtype = MB_F64;
    DTC_RC(dt_full_tensor(&dtc_comm[me], 0, &s0, &in, &full, dtc_scr[me], need), DT_ERR_MISMATCH);
    in.dtype = MB_F32;
    DTC_RC(dt_from_local(0, &dtc_mesh[me], S0, 1, &in, shape), DT_ERR_NULL);
    {
        dt_tensor t;
        mb_tensor w = in;
        w.shape[0] = wrong[0];
        DTC_RC(dt_from_local(&t, &dtc_mesh[me], S0, 1, &w, shape), DT_ERR_MISMATCH);
        DTC_RC(dt_from_local(&t, &dtc_mesh[me], S2, 1, &in, shape), DT_ERR_DIM);
    }
    /* mesh / rank mismatch: a mesh built for another rank, or bound to a different one */
    DTC_OK(dt_mesh_init(&other, 1, world, 0, (me + 1) % DTC_RANKS));
    DTC_RC(dt_comm_init(&bad, &other, g), DT_ERR_MISMATCH);
    DTC_OK(dt_spec_init(&s0, &other, S0, 1, MB_F32, 2, shape, 0));
    DTC_RC(dt_full_tensor(&dtc_comm[me], 0, &s0, &in, &full, dtc_scr[me], need), DT_ERR_MISMATCH);
    DTC_OK(dt_spec_init(&s0, &dtc_mesh[me], S0, 1, MB_F32, 2, shape, 0));
    {
        static const int32_t bigger[1] = {DTC_RANKS + 1};
        dt_mesh big;
        DTC_OK(dt_mesh_init(&big, 1, bigger, 0, me)); /* rank DTC_RANKS is not in the world */
        DTC_RC(dt_comm_init(&bad, &big, g), DT_ERR_RANK);
    }
    /* Partial targets: public call, op change, distribute */
    DTC_RC(dt_redistribute(&dtc_comm[me], 0, &r, &G, &ps, 0, &full, dtc_scr[me], DTC_SCRATCH), DT_ERR_PARTIAL);
    DTC_RC(dt_redistribute(&dtc_comm[me], 0, &ps, &G, &pm, 0, &full, dtc_scr[me], DTC_SCRATCH), DT_ERR_PARTIAL_OP);
    DTC_RC(dt_redistribute(&dtc_comm[me], 0, &s0, &in, &ps, DT_PLAN_ALLOW_PARTIAL, &full, dtc_scr[me], DTC_SCRATCH),
           DT_ERR_PARTIAL);
    DTC_RC(dt_distribute(&dtc_comm[me], &ps, &G, 0, &full, dtc_scr[me], DTC_SCRATCH), DT_ERR_PARTIAL);
    /* distribute: source not in the mesh, wrong local shape, small scratch */
    DTC_RC(dt_distribute(&dtc_comm[me], &s0, &G, 7, &in, dtc_scr[me], DTC_SCRATCH), DT_ERR_NOT_MEMBER);
    DTC_RC(dt_distribute(&dtc_comm[me], &s0, &G, 0, &full, dtc_scr[me], DTC_SCRATCH), DT_ERR_MISMATCH);
    DTC_OK(dt_distribute_scratch_bytes(&s0, 0, &need));
    DTC_CHECK(need == 0); /* rank 0 scatters its row blocks in place */
    DTC_OK(dt_distribute_scratch_bytes(&s1, 0, &need));
    DTC_CHECK(need == (me == 0 ? 160u : 0u)); /* the root packs its column blocks */
    DTC_OK(mb_tensor_init(&loc1, dtc_out[me], MB_F32, 2, in1.shape));
    if (need) /* the others, needing none, would enter the collective */
        DTC_RC(dt_distribute(&dtc_comm[me], &s1, &G, 0, &loc1, dtc_scr[me], need - 1), DT_ERR_TOO_SMALL);
    (void)pa;
    for (i = 0; i < DTC_ELEMS; i++) DTC_CHECK(dtc_out[me][i] == DTC_SENTINEL); /* nothing written */
    /* and the world is still in step: a correct call works */
    DTC_OK(dt_full_tensor_scratch_bytes(&s0, &need));
    DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &s0, &in, &full, dtc_scr[me], need));
    DTC_CHECK(dtc_equal(&full, &G));
    DTC_CHECK(dtc_comm[me].collectives == 1);
    return 0;
}

/* ---- scratch queries for strided views: the contiguous queries' answer is not enough for
   column-major views; dt_full_tensor_scratch_query / dt_distribute_scratch_query give what
   each rank needs, and one byte less is DT_ERR_TOO_SMALL (nothing sent) ---- */
static int dtc_colmajor(float *buf, const mb_tensor *src, mb_tensor *t)
{
    int32_t sh[2];
    sh[0] = src->shape[1];
    sh[1] = src->shape[0];
    DTC_OK(mb_tensor_init(t, buf, MB_F32, 2, sh));
    sh[0] = t->stride[0]; /* the transposed view of that storage has src's shape */
    t->shape[0] = src->shape[0];
    t->shape[1] = src->shape[1];
    t->stride[0] = t->stride[1];
    t->stride[1] = sh[0];
    if (src->data) DTC_OK(mb_copy(t, src));
    return 0;
}

static int dtc_scratch_query_body(pg_group *g, void *arg)
{
    static const dt_placement S0[1] = {S0_};
    static const int32_t shape[2] = {13, 3};
    int me = dtc_me(g);
    dt_spec s0;
    mb_tensor G, v, in, full, Gt, loc;
    size_t need, contiguous;
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    DTC_OK(dt_spec_init(&s0, &dtc_mesh[me], S0, 1, MB_F32, 2, shape, 0));
    dtc_fill(dtc_glob[me], 13, 3, 1, 0, &G);
    DTC_OK(dt_local_view(&s0, me, &G, &v));
    DTC_SUB(dtc_colmajor(dtc_in[me], &v, &in));
    DTC_SUB(dtc_colmajor(dtc_out[me], &G, &full));
    DTC_OK(dt_full_tensor_scratch_bytes(&s0, &contiguous));
    DTC_OK(dt_full_tensor_scratch_query(&dtc_comm[me], &s0, &in, &full, &need));
    DTC_CHECK(contiguous == 0 && need > 0); /* strided: the pieces are staged */
    DTC_RC(dt_full_tensor(&dtc_comm[me], 0, &s0, &in, &full, dtc_scr[me], need - 1), DT_ERR_TOO_SMALL);
    dtc_poison(dtc_out[me]);
    DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &s0, &in, &full, dtc_scr[me], need));
    DTC_CHECK(dtc_equal(&full, &G));
    DTC_RC(dt_full_tensor_scratch_query(&dtc_comm[me], &s0, &in, &full, 0), DT_ERR_NULL);
    full.shape[0] = 12;
    DTC_RC(dt_full_tensor_scratch_query(&dtc_comm[me], &s0, &in, &full, &need), DT_ERR_MISMATCH);
    /* distribute from rank 0's column-major G into column-major local pieces */
    DTC_SUB(dtc_colmajor(dtc_mid[me], &G, &Gt));
    dtc_poison(dtc_out[me]);
    DTC_SUB(dtc_colmajor(dtc_out[me], &in, &loc));
    dtc_poison(dtc_out[me]);
    DTC_OK(dt_distribute_scratch_query(&dtc_comm[me], &s0, &Gt, 0, &loc, &need));
    if (need) /* a rank needing none would enter the collective */
        DTC_RC(dt_distribute(&dtc_comm[me], &s0, &Gt, 0, &loc, dtc_scr[me], need - 1), DT_ERR_TOO_SMALL);
    DTC_OK(dt_distribute(&dtc_comm[me], &s0, &Gt, 0, &loc, dtc_scr[me], need));
    DTC_CHECK(dtc_equal(&loc, &v));
    return 0;
}

/* ---- the plan cache on the execution path ---- */
static int dtc_cache_body(pg_group *g, void *arg)
{
    static const dt_placement S0[1] = {S0_}, R[1] = {R_}, S1[1] = {S1_};
    static const int32_t shape[2] = {13, 3};
    int me = dtc_me(g), k;
    dt_spec s0, r, s1;
    mb_tensor G, in, out;
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    DTC_OK(dt_plan_cache_init(&dtc_cache[me], dtc_entries[me], 2));
    DTC_OK(dt_spec_init(&s0, &dtc_mesh[me], S0, 1, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&r, &dtc_mesh[me], R, 1, MB_F32, 2, shape, 0));
    DTC_OK(dt_spec_init(&s1, &dtc_mesh[me], S1, 1, MB_F32, 2, shape, 0));
    dtc_fill(dtc_glob[me], 13, 3, 1, 0, &G);
    DTC_SUB(dtc_local(&s0, &G, dtc_in[me], &in));
    DTC_OK(mb_tensor_init(&out, dtc_out[me], MB_F32, 2, shape));
    for (k = 0; k < 5; k++) {
        dtc_poison(dtc_out[me]);
        DTC_OK(dt_full_tensor(&dtc_comm[me], &dtc_cache[me], &s0, &in, &out, dtc_scr[me], DTC_SCRATCH));
        DTC_CHECK(dtc_equal(&out, &G));
    }
    DTC_CHECK(dtc_cache[me].misses == 1 && dtc_cache[me].hits == 4);
    /* out has the wrong shape for S1: refused after planning (the miss is counted) */
    DTC_RC(dt_redistribute(&dtc_comm[me], &dtc_cache[me], &r, &G, &s1, 0, &out, dtc_scr[me], DTC_SCRATCH),
           DT_ERR_MISMATCH);
    DTC_CHECK(dtc_cache[me].misses == 2);
    DTC_CHECK(dtc_comm[me].collectives == 5);
    return 0;
}

/* ---- cmocka wrappers ---- */
#define DTC_TEST(name)                                      \
    static void dtc_test_##name(void **state)               \
    {                                                       \
        (void)state;                                        \
        assert_int_equal(dtc_run(dtc_##name##_body, 0), 0); \
    }
DTC_TEST(transitions_1d)
DTC_TEST(ones)
#if DTC_MESH_DIMS == 2
DTC_TEST(transitions_2d)
#endif
DTC_TEST(round_trip)
DTC_TEST(construct)
DTC_TEST(regressions)
DTC_TEST(bad_input)
DTC_TEST(cache)
DTC_TEST(scratch_query)

static const struct CMUnitTest dtc_tests[] = {
    cmocka_unit_test(dtc_test_transitions_1d), cmocka_unit_test(dtc_test_ones),
#if DTC_MESH_DIMS == 2
    cmocka_unit_test(dtc_test_transitions_2d),
#endif
    cmocka_unit_test(dtc_test_round_trip),     cmocka_unit_test(dtc_test_construct),
    cmocka_unit_test(dtc_test_regressions),    cmocka_unit_test(dtc_test_bad_input),
    cmocka_unit_test(dtc_test_cache),          cmocka_unit_test(dtc_test_scratch_query),
};

#undef R_
#undef S0_
#undef S1_
#undef P_
#endif /* DTENSOR_CONFORMANCE_H */
