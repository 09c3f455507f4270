/* pipeline_conformance.h — the pipeline executor with skips, the same bodies over every port

   Like tests/dtensor_conformance.h: the bodies run on every rank of a 4-rank world, use no
   stdio and no heap (bare-metal harts run them: SConstruct's pipeline_smp4 firmware), and
   report a failure as the source line of the failed check. One inference plan with skips,
   as firmware runs it: the executor without take-in (the including file sets PP_NO_TAKEIN,
   PP_SKIPS and PP_MAILBOX_SLOTS), the plan proven by pp_mailbox_depth, each rank building
   only its own layers (pp_layer.init). The outputs equal the single-rank forward bit for
   bit, and each rank sends and receives exactly its activations and its own routes' skips
   (no rank relays one). Then the same model on 2 of the 4 ranks (stages 0 2 | 1 3: the
   skips between stages of one rank are copied, not sent), the 2 others returning at once.

   The driver defines, before including this file (after cmocka.h, pipeline.h with
   PP_SKIPS, and the port, with their implementations):
       static int ppc_run(int (*body)(pg_group *g, void *arg), void *arg);
           runs body on every rank of a ready 4-rank world; 0 when every rank returned 0,
           else the first nonzero result.
   Then: cmocka_run_group_tests(ppc_tests, NULL, NULL). */
#ifndef PIPELINE_CONFORMANCE_H
#define PIPELINE_CONFORMANCE_H

#include "pipeline_fair_model.h"

#define PPC_RANKS 4
#define PPC_MB    4 /* microbatches of BATCH / PPC_MB rows */

#define PPC_CHECK(c)               \
    do {                           \
        if (!(c)) return __LINE__; \
    } while (0)

static const int32_t ppc_balance[4] = {2, 2, 2, 2};
static model ppc_master, ppc_built; /* the weights, and the model each rank builds its share of */
static pp_route ppc_routes[PP_MAX_SKIPS];
static int ppc_nroutes, ppc_nranks;
static const uint8_t *ppc_map; /* the plan's stage map (NULL: stage s on rank s) */
static pp_exec_cfg ppc_cfg;
static pp_action ppc_store[PPC_RANKS][2][1024]; /* each rank plans for itself */
static pp_plan ppc_sched[PPC_RANKS], ppc_plan[PPC_RANKS];
static pp_table ppc_table[PPC_RANKS];
static uint32_t ppc_work[PPC_RANKS][4096];
static uint64_t ppc_mem[PPC_RANKS][2048];
static size_t ppc_need[PPC_RANKS];
static int ppc_inits[PPC_RANKS][8]; /* pp_layer.init calls: [rank][layer] */
static float ppc_got[BATCH * F];

/* Bytes each rank sent to and received from each other (its port's send / recv wrapped). */
static long ppc_sent[PPC_RANKS][PPC_RANKS], ppc_recvd[PPC_RANKS][PPC_RANKS];
static pg_ops ppc_ops[PPC_RANKS];
static const pg_ops *ppc_inner[PPC_RANKS];
static void *ppc_port[PPC_RANKS];
static int ppc_rank_of(void *port)
{
    int r;
    for (r = 0; r < PPC_RANKS - 1 && ppc_port[r] != port; r++) {}
    return r;
}
static int ppc_send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t tmo)
{
    int r = ppc_rank_of(port), rc = ppc_inner[r]->send(port, dst, tag, buf, bytes, tmo);
    if (rc >= 0) ppc_sent[r][dst] += (long)bytes;
    return rc;
}
static int ppc_recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t tmo)
{
    int r = ppc_rank_of(port), rc = ppc_inner[r]->recv(port, src, tag, buf, cap, got, tmo);
    if (rc >= 0) ppc_recvd[r][src] += (long)*got;
    return rc;
}

/* Per-rank construction: block i's weights in its rank's storage, from the master copy. */
static int ppc_init(void *self, void *params)
{
    blk *B = (blk *)self;
    int i = (int)(B - ppc_built.b), r;
    B->w = (float *)params;
    B->b = B->w + B->out * B->in;
    memcpy(B->w, ppc_master.b[i].w, sizeof(float) * (size_t)(B->out * B->in));
    memcpy(B->b, ppc_master.b[i].b, sizeof(float) * (size_t)B->out);
    r = ppc_map ? ppc_map[i / 2] : i / 2; /* the rank of block i's stage */
    ppc_inits[r][i]++;
    return 0;
}

/* Every rank: its own plan (the same on each), proven without take-in; its table; an
   executor that builds its layers and runs the step with its port counted. */
static int ppc_step_body(pg_group *g, void *arg)
{
    int r = pg_rank(g), rc;
    pp_exec e;
    (void)arg;
    if (r < 0 || r >= PPC_RANKS) return __LINE__;
    PPC_CHECK(ppc_map ? pp_schedule_build_map(&ppc_sched[r], PP_SCHED_FORWARD_ONLY, ppc_nranks, ppc_map, 4, PPC_MB,
                                              ppc_store[r][0], sizeof ppc_store[r][0], NULL) == 0
                      : pp_schedule_build(&ppc_sched[r], PP_SCHED_FORWARD_ONLY, 4, 1, PPC_MB, ppc_store[r][0],
                                          sizeof ppc_store[r][0], NULL) == 0);
    PPC_CHECK(pp_plan_skips(&ppc_sched[r], ppc_routes, ppc_nroutes) == 0);
    PPC_CHECK(pp_lower(&ppc_sched[r], &ppc_plan[r], ppc_store[r][1], sizeof ppc_store[r][1], NULL) == 0);
    PPC_CHECK(pp_mailbox_depth(&ppc_plan[r], PP_MAILBOX_SLOTS, ppc_work[r], sizeof ppc_work[r], NULL) >= 0);
    PPC_CHECK(pp_plan_table(&ppc_plan[r], r, &ppc_table[r]) == 0); /* past the plan's ranks: empty */
    ppc_port[r] = g->port;
    PPC_CHECK(pg_barrier(g) == 0); /* every rank's port known before any is counted */
    ppc_need[r] = pp_exec_bytes(&ppc_cfg, &ppc_table[r]);
    ppc_ops[r] = *g->ops;
    ppc_inner[r] = g->ops;
    ppc_ops[r].send = ppc_send;
    ppc_ops[r].recv = ppc_recv;
    g->ops = &ppc_ops[r];
    rc = pp_exec_init(&e, &ppc_cfg, &ppc_table[r], g, ppc_mem[r], sizeof ppc_mem[r]);
    if (!rc) rc = pp_exec_build(&e);
    if (!rc) rc = pp_exec_run(&e);
    g->ops = ppc_inner[r];
    return rc ? __LINE__ : 0;
}

/* The step on ppc_nranks ranks of the 4 (map: the stage map), then on one rank the checks:
   outputs, bytes per route, the layers each rank built and its storage. */
static int ppc_check_step(const uint8_t *map, int nranks)
{
    int r, q, i, k, rc;
    long act = (long)(BATCH / PPC_MB) * F * 4;
    static model ref;
    ppc_map = map;
    ppc_nranks = nranks;
    data_init(F, F);
    g_rows = BATCH / PPC_MB;
    skip_model(&ppc_master);
    ppc_built = ppc_master;
    for (i = 0; i < 8; i++) {
        ppc_built.L[i].self = &ppc_built.b[i];
        ppc_built.L[i].out = &ppc_built.out[i];
        ppc_built.L[i].stash = ppc_master.L[i].nstash ? &ppc_built.st[i] : NULL;
        ppc_built.L[i].pop = ppc_master.L[i].npop ? &ppc_built.po[i] : NULL;
        ppc_built.L[i].init = ppc_init;
        ppc_built.L[i].param_bytes = (uint32_t)(sizeof(float) * (F * F + F));
        ppc_built.b[i].w = ppc_built.b[i].b = NULL; /* given by the builder only */
    }
    rc = pp_skip_layout(ppc_built.L, 8, NULL, 8, ppc_balance, 4, ppc_routes, PP_MAX_SKIPS, &ppc_nroutes, NULL);
    PPC_CHECK(rc == 0 && ppc_nroutes == 5);
    memset(&ppc_cfg, 0, sizeof ppc_cfg);
    ppc_cfg.layers = ppc_built.L;
    ppc_cfg.nlayers = 8;
    ppc_cfg.balance = ppc_balance;
    ppc_cfg.rows = g_rows;
    ppc_cfg.dtype = MB_F32;
    ppc_cfg.in = &ppc_built.in;
    ppc_cfg.nin = 1;
    ppc_cfg.input = in_cb;
    ppc_cfg.output = out_cb;
    ppc_cfg.skips = ppc_routes;
    ppc_cfg.nskips = ppc_nroutes;
    memset(ppc_sent, 0, sizeof ppc_sent);
    memset(ppc_recvd, 0, sizeof ppc_recvd);
    memset(ppc_inits, 0, sizeof ppc_inits);
    memset(OUT, 0, sizeof OUT);
    if ((rc = ppc_run(ppc_step_body, NULL)) != 0) return rc;
    memcpy(ppc_got, OUT, sizeof ppc_got);
    ref = ppc_master;
    for (i = 0; i < 8; i++) ref.L[i].self = &ref.b[i], ref.L[i].out = &ref.out[i];
    ppc_cfg.layers = ref.L;
    PPC_CHECK(ref_run(&ppc_cfg, PPC_MB, NULL) == 0);
    PPC_CHECK(memcmp(ppc_got, OUT, sizeof ppc_got) == 0); /* the single-rank forward's bits */
    for (r = 0; r < PPC_RANKS; r++)
        for (q = 0; q < PPC_RANKS; q++) { /* activations and skips, each straight to its rank */
            long want = 0;
            for (k = 0; k < 3 && r < nranks; k++) {
                int s = map ? map[k] : k, d = map ? map[k + 1] : k + 1;
                if (s == r && d == q && s != d) want += PPC_MB * act;
            }
            for (k = 0; k < ppc_nroutes && r < nranks; k++) {
                int s = map ? map[ppc_routes[k].src] : ppc_routes[k].src;
                int d = map ? map[ppc_routes[k].dst] : ppc_routes[k].dst;
                if (s == r && d == q && s != d) want += PPC_MB * act;
            }
            PPC_CHECK(ppc_sent[r][q] == want && ppc_recvd[q][r] == want);
        }
    for (r = 0; r < PPC_RANKS; r++) { /* each layer built once, by its rank; storage for it */
        int own = 0;
        for (i = 0; i < 8; i++) {
            PPC_CHECK(ppc_inits[r][i] <= 1);
            own += ppc_inits[r][i];
        }
        PPC_CHECK(r < nranks ? own == 8 / nranks && ppc_need[r] > 0 : own == 0 && ppc_need[r] == 0);
    }
    return 0;
}

/* ---- cmocka wrappers ---- */
static void ppc_test_skips_4_ranks(void **state)
{
    (void)state;
    assert_int_equal(ppc_check_step(NULL, 4), 0);
}
static void ppc_test_skips_2_of_4_ranks(void **state)
{
    static const uint8_t loop2[4] = {0, 1, 0, 1};
    (void)state;
    assert_int_equal(ppc_check_step(loop2, 2), 0);
}

static const struct CMUnitTest ppc_tests[] = {
    cmocka_unit_test(ppc_test_skips_4_ranks),
    cmocka_unit_test(ppc_test_skips_2_of_4_ranks),
};

#endif /* PIPELINE_CONFORMANCE_H */
