/* tests/test_pipeline_skips.c — pipeline.h's planning of fairscale's model features: skip
   layouts (verify_skippables' errors and SkipLayout's routes, fairscale's own test cases),
   layers at several positions (fairscale's test_instantiate_partition cases), schedules over
   any stage map, and skip transfers through lowering, validation, simulation, the mailbox
   proof, the slot count and C emission. No stdio, no malloc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define PP_NO_EXECUTOR 1 /* planning only: the executor runs in test_pipeline_fair.c */
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"

/* ---- skippable layers as fairscale's tests declare them ---- */
static const pp_skip FOO = {"foo", 0, {MB_F32, 1, {4}, 0}}, BAR = {"bar", 0, {MB_F32, 1, {4}, 0}};
static const pp_skip FOO1 = {"foo", 1, {MB_F32, 1, {4}, 0}}, FOO2 = {"foo", 2, {MB_F32, 1, {4}, 0}};
static const pp_skip ONE_TO_3 = {"1to3", 0, {MB_F32, 1, {4}, 0}};

static pp_layer pass_layer(void)
{
    pp_layer L;
    memset(&L, 0, sizeof L);
    L.act_bytes = 16;
    return L;
}
static pp_layer stash_layer(const pp_skip *s)
{
    pp_layer L = pass_layer();
    L.stash = s;
    L.nstash = 1;
    return L;
}
static pp_layer pop_layer(const pp_skip *s)
{
    pp_layer L = pass_layer();
    L.pop = s;
    L.npop = 1;
    return L;
}

static int layout(const pp_layer *L, int n, const int32_t *balance, int nstages, pp_route *r, int *nr, pp_diag *d)
{
    return pp_skip_layout(L, n, NULL, n, balance, nstages, r, 8, nr, d);
}

/* fairscale tests/nn/pipe/skip/test_verify_skippables.py and the ordering rule that pops
   come after their stash */
static void test_verify_skippables(void **state)
{
    pp_layer L[5];
    pp_route r[8];
    pp_diag d;
    int n = -1;
    const int32_t one[1] = {2}, one3[1] = {3}, one4[1] = {4};
    (void)state;
    /* Layer1 stashes 1to3, Layer3 pops it: [Layer1, Layer2] never pops */
    L[0] = stash_layer(&ONE_TO_3);
    L[1] = pass_layer();
    assert_int_equal(layout(L, 2, one, 1, r, &n, &d), PP_ERR_SKIP_UNPOPPED);
    assert_int_equal(d.step, 0);
    assert_int_equal(n, -1);
    /* [Layer2, Layer3]: popped, never stashed */
    L[0] = pass_layer();
    L[1] = pop_layer(&ONE_TO_3);
    assert_int_equal(layout(L, 2, one, 1, r, &n, &d), PP_ERR_SKIP_UNSTASHED);
    assert_int_equal(d.step, 1);
    /* [Layer1, Layer2, Layer3, Layer3]: popped twice */
    L[0] = stash_layer(&ONE_TO_3);
    L[1] = pass_layer();
    L[2] = pop_layer(&ONE_TO_3);
    L[3] = pop_layer(&ONE_TO_3);
    assert_int_equal(layout(L, 4, one4, 1, r, &n, &d), PP_ERR_SKIP_TWICE);
    assert_int_equal(d.step, 3);
    /* [Layer1, Layer1, Layer2, Layer3]: stashed twice */
    L[1] = stash_layer(&ONE_TO_3);
    L[2] = pass_layer();
    L[3] = pop_layer(&ONE_TO_3);
    assert_int_equal(layout(L, 4, one4, 1, r, &n, &d), PP_ERR_SKIP_TWICE);
    assert_int_equal(d.step, 1);
    /* [Layer3, Layer2, Layer1]: the pop comes before its stash (the skip would go back) */
    L[0] = pop_layer(&ONE_TO_3);
    L[1] = pass_layer();
    L[2] = stash_layer(&ONE_TO_3);
    assert_int_equal(layout(L, 3, one3, 1, r, &n, &d), PP_ERR_SKIP_BACKWARDS);
    assert_int_equal(d.step, 0);
    assert_int_equal(d.stage, 0);
    /* one layer that stashes and pops the same name */
    L[0] = stash_layer(&ONE_TO_3);
    L[0].pop = &ONE_TO_3;
    L[0].npop = 1;
    assert_int_equal(layout(L, 1, one3, 1, r, &n, &d), PP_ERR_BALANCE_SUM); /* balance is checked first */
    L[1] = pop_layer(&ONE_TO_3);
    assert_int_equal(layout(L, 2, one, 1, r, &n, &d), PP_ERR_SKIP_TWICE);
    assert_int_equal(n, -1);
    /* more routes than room */
    L[0] = stash_layer(&ONE_TO_3);
    L[1] = pop_layer(&ONE_TO_3);
    assert_int_equal(pp_skip_layout(L, 2, NULL, 2, one, 1, r, 0, &n, NULL), PP_ERR_TOO_SMALL);
    assert_int_equal(pp_skip_layout(L, 2, NULL, 2, one, 1, r, 1, &n, NULL), PP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(pp_skip_layout(NULL, 2, NULL, 2, one, 1, r, 1, &n, NULL), PP_ERR_NULL);
    assert_int_equal(pp_skip_layout(L, 2, NULL, 3, one, 1, r, 1, &n, NULL), PP_ERR_ARG);
}

/* fairscale tests/nn/pipe/skip/test_inspect_skip_layout.py: copy_policy(j) = the routes into
   partition j between distinct partitions, sorted by source, namespace, name */
static void test_inspect_skip_layout(void **state)
{
    pp_layer L[6];
    pp_route r[8];
    int n;
    const int32_t b11[2] = {1, 1}, b21[2] = {2, 1}, b111[3] = {1, 1, 1}, b112[3] = {1, 1, 2};
    (void)state;
    L[0] = pass_layer(); /* no skippables */
    L[1] = pass_layer();
    assert_int_equal(layout(L, 2, b11, 2, r, &n, NULL), PP_OK);
    assert_int_equal(n, 0);
    L[0] = stash_layer(&FOO); /* inner partition: [StashFoo, PopFoo], [Pass] */
    L[1] = pop_layer(&FOO);
    L[2] = pass_layer();
    assert_int_equal(layout(L, 3, b21, 2, r, &n, NULL), PP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].src, 0);
    assert_int_equal(r[0].dst, 0); /* same partition: no copy */
    L[1] = pass_layer();           /* far partitions: [StashFoo], [Pass], [PopFoo] */
    L[2] = pop_layer(&FOO);
    assert_int_equal(layout(L, 3, b111, 3, r, &n, NULL), PP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].stash, 0);
    assert_int_equal(r[0].pop, 2);
    assert_int_equal(r[0].src, 0);
    assert_int_equal(r[0].dst, 2);
    /* [StashFoo], [StashBar], [PopBar, PopFoo]: sorted by source partition, not pop order */
    L[1] = stash_layer(&BAR);
    L[2] = pop_layer(&BAR);
    L[3] = pop_layer(&FOO);
    assert_int_equal(layout(L, 4, b112, 3, r, &n, NULL), PP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].src, 0); /* foo */
    assert_int_equal(r[0].pop, 3);
    assert_int_equal(r[1].src, 1); /* bar */
    assert_int_equal(r[1].pop, 2);
    /* namespaces: [StashFoo ns1], [StashFoo ns2], [PopFoo ns2, PopFoo ns1] */
    L[0] = stash_layer(&FOO1);
    L[1] = stash_layer(&FOO2);
    L[2] = pop_layer(&FOO2);
    L[3] = pop_layer(&FOO1);
    assert_int_equal(layout(L, 4, b112, 3, r, &n, NULL), PP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].src, 0);
    assert_int_equal(r[0].stash, 0);
    assert_int_equal(r[0].pop, 3);
    assert_int_equal(r[1].src, 1);
    assert_int_equal(r[1].pop, 2);
    /* the same name without namespaces: stashed twice */
    L[1] = stash_layer(&FOO1);
    assert_int_equal(layout(L, 4, b112, 3, r, &n, NULL), PP_ERR_SKIP_TWICE);
}

/* fairscale tests/nn/pipe_process/test_pipe.py test_instantiate_partition: the rank of every
   invocation (position), with balance counting distinct layers in order of first use. */
static void test_invocations(void **state)
{
    static const struct {
        int npos, nlayers, nparts;
        int32_t order[10], balance[3];
        int nstages;
        int32_t stage_balance[6];
        uint8_t stage_rank[6];
    } C[] = {
        /* [reused, Linear, ReLU, reused, ReLU, reused, ReLU], [3, 1, 1]: ranks 0 0 0 0 1 0 2 */
        {7, 5, 3, {0, 1, 2, 0, 3, 0, 4}, {3, 1, 1}, 4, {4, 1, 1, 1}, {0, 1, 0, 2}},
        /* [reused, reused2, Linear, ReLU, reused, reused2, ReLU, reused, reused2, ReLU], [4, 1, 1] */
        {10, 6, 3, {0, 1, 2, 3, 0, 1, 4, 0, 1, 5}, {4, 1, 1}, 4, {6, 1, 2, 1}, {0, 1, 0, 2}},
        /* [Linear, reused, Linear, ReLU, reused, reused2, ReLU, reused, reused2, ReLU], [4, 2, 1] */
        {10, 7, 3, {0, 1, 2, 3, 1, 4, 5, 1, 4, 6}, {4, 2, 1}, 5, {5, 2, 1, 1, 1}, {0, 1, 0, 1, 2}},
    };
    int c, s;
    (void)state;
    for (c = 0; c < 3; c++) {
        int32_t sb[PP_MAX_STAGES];
        uint8_t sr[PP_MAX_STAGES];
        int ns = 0;
        assert_int_equal(
            pp_invocations(C[c].order, C[c].npos, C[c].nlayers, C[c].balance, C[c].nparts, sb, sr, &ns, NULL), PP_OK);
        assert_int_equal(ns, C[c].nstages);
        for (s = 0; s < ns; s++) {
            assert_int_equal(sb[s], C[c].stage_balance[s]);
            assert_int_equal(sr[s], C[c].stage_rank[s]);
        }
    }
    {
        int32_t sb[PP_MAX_STAGES], order[4] = {0, 1, 2, 0}, bal[2] = {2, 2}, unused[3] = {0, 1, 0};
        uint8_t sr[PP_MAX_STAGES];
        int ns = -1;
        pp_diag d;
        /* check_balance(filter_unique=True): 3 distinct layers */
        assert_int_equal(pp_invocations(order, 4, 3, bal, 2, sb, sr, &ns, &d), PP_ERR_BALANCE_SUM);
        assert_int_equal(d.expected, 3);
        assert_int_equal(d.got, 4);
        bal[1] = 0;
        assert_int_equal(pp_invocations(order, 4, 3, bal, 2, sb, sr, &ns, &d), PP_ERR_BALANCE_SUM);
        bal[0] = 3;
        assert_int_equal(pp_invocations(order, 4, 3, bal, 2, sb, sr, &ns, &d), PP_ERR_BALANCE_NONPOSITIVE);
        assert_int_equal(pp_invocations(unused, 3, 3, bal, 1, sb, sr, &ns, &d), PP_ERR_ARG); /* layer 2 unused */
        order[3] = 3;
        assert_int_equal(pp_invocations(order, 4, 3, bal, 1, sb, sr, &ns, &d), PP_ERR_ARG);
        assert_int_equal(d.step, 3);
        assert_int_equal(ns, -1);
        /* tied ends: [emb, block, block, emb], [2, 1] -> stages 0 1 0 */
        order[3] = 0;
        bal[0] = 2;
        bal[1] = 1;
        assert_int_equal(pp_invocations(order, 4, 3, bal, 2, sb, sr, &ns, &d), PP_OK);
        assert_int_equal(ns, 3);
        assert_int_equal(sr[0], 0);
        assert_int_equal(sr[1], 1);
        assert_int_equal(sr[2], 0);
        assert_int_equal(sb[0], 2);
        assert_int_equal(sb[1], 1);
        assert_int_equal(sb[2], 1);
    }
}

static pp_action st[3][8192];
static uint32_t work[1 << 14];

/* Schedules over any stage map (revisits, ranks without stages): valid, lowerable,
   deadlock-free, each stage forwarding (and backwarding) every microbatch in order. */
static void test_schedule_map(void **state)
{
    static const struct {
        int P, S;
        uint8_t map[6];
    } C[] = {
        {2, 3, {0, 1, 0}},          /* tied embeddings: the flow returns to rank 0 */
        {3, 4, {0, 1, 0, 2}},       /* fairscale's first invocation case */
        {3, 5, {0, 1, 0, 1, 2}},    /* its third */
        {4, 2, {0, 1}},             /* more ranks than stages: ranks 2 and 3 idle */
        {2, 4, {0, 1, 1, 0}},       /* a "v" */
        {4, 6, {0, 1, 2, 3, 1, 0}}, /* uneven */
    };
    int c, sched, M;
    (void)state;
    for (c = 0; c < 6; c++)
        for (sched = 0; sched < 2; sched++)
            for (M = 1; M <= 6; M += 5) {
                pp_plan p, low;
                pp_costs costs;
                pp_sim sim;
                int kind = sched ? PP_SCHED_GPIPE : PP_SCHED_FORWARD_ONLY, r;
                assert_int_equal(
                    pp_schedule_build_map(&p, kind, C[c].P, C[c].map, C[c].S, M, st[0], sizeof st[0], NULL), PP_OK);
                assert_int_equal(p.schedule, sched ? PP_SCHED_CUSTOM : PP_SCHED_FORWARD_ONLY);
                assert_int_equal(pp_validate(&p, NULL), PP_OK);
                assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
                assert_int_equal(pp_validate(&low, NULL), PP_OK);
                memset(&costs, 0, sizeof costs);
                costs.f = 2;
                costs.b = 3;
                costs.comm = 1;
                assert_int_equal(pp_simulate(&low, &costs, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_OK);
                for (r = 0; r < C[c].P; r++) assert_true(p.len[r] <= 2 * C[c].S * M);
                if (C[c].P == 4 && C[c].S == 2) {
                    assert_int_equal(p.len[2], 0);
                    assert_int_equal(p.len[3], 0);
                }
                assert_int_equal(pp_mailbox_depth(&low, 254, work, sizeof work, NULL) >= 0, 1);
            }
    {
        /* tied embeddings, inference: rank 0 alternates once the pipe is full */
        pp_plan p;
        const uint8_t map[3] = {0, 1, 0};
        char txt[256];
        assert_int_equal(pp_schedule_build_map(&p, PP_SCHED_FORWARD_ONLY, 2, map, 3, 3, st[0], sizeof st[0], NULL),
                         PP_OK);
        assert_int_equal(pp_timeline(&p, txt, sizeof txt, NULL) > 0, 1);
        assert_non_null(strstr(txt, "0F0"));
        assert_int_equal(p.len[0], 6);
        assert_true(pp__eq(pp__row(&p, 0)[0], pp__act(PP_F, 0, 0)));
        assert_true(pp__eq(pp__row(&p, 0)[1], pp__act(PP_F, 0, 1)));
        assert_true(pp__eq(pp__row(&p, 0)[2], pp__act(PP_F, 2, 0))); /* the lowest microbatch first */
        assert_int_equal(pp_schedule_build_map(&p, PP_SCHED_1F1B, 2, map, 3, 3, st[0], sizeof st[0], NULL),
                         PP_ERR_SCHEDULE);
        assert_int_equal(pp_schedule_build_map(&p, PP_SCHED_GPIPE, 1, map, 3, 3, st[0], sizeof st[0], NULL),
                         PP_ERR_STAGE_RANK);
        assert_int_equal(pp_schedule_build_map(&p, PP_SCHED_GPIPE, 2, map, 3, 3, st[0], 64, NULL), PP_ERR_TOO_SMALL);
    }
}

/* A 4-stage chain on 4 ranks with skips 0 -> 2 and 1 -> 3 (remote), 2 -> 2 (same stage). */
static const pp_route ROUTES[3] = {{0, 4, 0, 0, 0, 2}, {5, 5, 0, 0, 2, 2}, {2, 7, 0, 0, 1, 3}};

static int count(const pp_plan *p, int r, int type, int stage)
{
    int i, n = 0;
    for (i = 0; i < p->len[r]; i++) n += pp__row(p, r)[i].type == type && pp__row(p, r)[i].stage == stage;
    return n;
}
static int index_of(const pp_plan *p, int r, pp_action a)
{
    int i;
    for (i = 0; i < p->len[r]; i++)
        if (pp__eq(pp__row(p, r)[i], a)) return i;
    return -1;
}

/* Lowering adds direct skip transfers (none relayed, none for a skip within a stage) in
   every schedule; the simulator and pp_mailbox_depth follow them. */
static void test_lower_skips(void **state)
{
    static const int kinds[4] = {PP_SCHED_FORWARD_ONLY, PP_SCHED_GPIPE, PP_SCHED_1F1B, PP_SCHED_ZBV};
    int k, m, M = 4;
    (void)state;
    for (k = 0; k < 4; k++) {
        pp_plan p, low;
        pp_costs costs;
        pp_sim sim;
        int P = kinds[k] == PP_SCHED_ZBV ? 2 : 4, train = kinds[k] != PP_SCHED_FORWARD_ONLY;
        pp_route R[3];
        memcpy(R, ROUTES, sizeof R);
        assert_int_equal(pp_schedule_build(&p, kinds[k], P, 4 / P, M, st[0], sizeof st[0], NULL), PP_OK);
        assert_int_equal(pp_plan_skips(&p, R, 3), PP_OK);
        assert_int_equal(p.nskips, 3);
        assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
        assert_int_equal(low.nskips, 3);
        assert_int_equal(pp_validate(&low, NULL), PP_OK);
        for (m = 0; m < M; m++) {
            /* stage 0 sends straight to stage 2's rank, stage 1 to stage 3's */
            int r0 = low.stage_rank[0], r1 = low.stage_rank[1], r2 = low.stage_rank[2], r3 = low.stage_rank[3];
            int remote02 = r0 != r2, remote13 = r1 != r3;
            assert_int_equal(index_of(&low, r0, pp__act(PP_SEND_S, 0, m)) > index_of(&low, r0, pp__act(PP_F, 0, m)),
                             remote02);
            assert_int_equal(index_of(&low, r2, pp__act(PP_RECV_S, 2, m)) >= 0, remote02);
            if (remote02)
                assert_true(index_of(&low, r2, pp__act(PP_RECV_S, 2, m)) < index_of(&low, r2, pp__act(PP_F, 2, m)));
            assert_int_equal(index_of(&low, r1, pp__act(PP_SEND_S, 1, m)) >= 0, remote13);
            assert_int_equal(index_of(&low, r3, pp__act(PP_RECV_S, 3, m)) >= 0, remote13);
            /* stages 1 and 3 receive no skip from stage 0, and nothing is sent for 2 -> 2 */
            assert_int_equal(index_of(&low, r1, pp__act(PP_RECV_S, 1, m)), -1);
            assert_int_equal(index_of(&low, r2, pp__act(PP_SEND_S, 2, m)), -1);
            assert_int_equal(index_of(&low, r3, pp__act(PP_SEND_SB, 3, m)) >= 0, train && remote13);
            assert_int_equal(index_of(&low, r1, pp__act(PP_RECV_SB, 1, m)) >= 0, train && remote13);
            assert_int_equal(index_of(&low, r2, pp__act(PP_SEND_SB, 2, m)) >= 0, train && remote02);
            assert_int_equal(index_of(&low, r0, pp__act(PP_RECV_SB, 0, m)) >= 0, train && remote02);
        }
        assert_int_equal(count(&low, low.stage_rank[0], PP_SEND_S, 0), low.stage_rank[0] != low.stage_rank[2] ? M : 0);
        memset(&costs, 0, sizeof costs);
        costs.f = 2;
        costs.b = 4;
        costs.i = 2;
        costs.w = 2;
        costs.comm = 1;
        assert_true(pp_sim_bytes(&low) > pp_sim_bytes(&p) - 1);
        assert_int_equal(pp_simulate(&low, &costs, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(pp_simulate(&p, &costs, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_OK);
        assert_true(pp_mailbox_depth(&low, 254, work, sizeof work, NULL) >= 0);
    }
}

/* A skip stalls the popping stage until it is there: the simulated popping F starts after
   the stash's send plus the latency; without transfers (unlowered), after the stashing F. */
static void test_simulate_skips(void **state)
{
    pp_plan p, low;
    pp_costs costs;
    pp_sim sim;
    pp_event ev[256];
    int n, i;
    uint32_t send_end = 0, pop_start = 0;
    pp_route R[1] = {{0, 2, 0, 0, 0, 2}};
    (void)state;
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_FORWARD_ONLY, 3, 1, 2, st[0], sizeof st[0], NULL), PP_OK);
    assert_int_equal(pp_plan_skips(&p, R, 1), PP_OK);
    assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
    memset(&costs, 0, sizeof costs);
    costs.f = 1;
    costs.send = 1;
    costs.comm = 50; /* the skip's latency dominates */
    assert_int_equal(pp_simulate(&low, &costs, work, sizeof work, &sim, ev, 256, &n, NULL), PP_OK);
    for (i = 0; i < n; i++) {
        if (pp__eq(ev[i].action, pp__act(PP_SEND_S, 0, 0))) send_end = ev[i].t_end;
        if (pp__eq(ev[i].action, pp__act(PP_F, 2, 0))) pop_start = ev[i].t_start;
    }
    assert_true(send_end > 0);
    assert_true(pop_start >= send_end + 50);
    /* a missing RECV_S deadlocks the popping rank */
    for (i = 0; i < low.len[2]; i++)
        if (pp__row(&low, 2)[i].type == PP_RECV_S) pp__row(&low, 2)[i] = pp__act(PP_RECV_F, 2, 0);
    assert_int_equal(pp_simulate(&low, &costs, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_ERR_DEADLOCK);
    /* bad routes (the plan keeps pointing at R: unchanged by a refused call) */
    {
        pp_route far[1] = {{0, 2, 0, 0, 3, 3}}, back[1] = {{0, 2, 0, 0, 2, 1}};
        assert_int_equal(pp_plan_skips(&p, far, 1), PP_ERR_ARG);
        assert_int_equal(pp_plan_skips(&p, back, 1), PP_ERR_SKIP_BACKWARDS);
        assert_true(p.skip == R);
        assert_int_equal(pp_plan_skips(&p, R, PP_MAX_SKIPS + 1), PP_ERR_ARG);
        assert_int_equal(pp_plan_skips(&p, NULL, 1), PP_ERR_NULL);
        p.nskips = PP_MAX_SKIPS + 1; /* a caller-filled plan is checked */
        assert_int_equal(pp_validate(&p, NULL), PP_ERR_ARG);
        p.nskips = 1;
        p.skip = NULL;
        assert_int_equal(pp_validate(&p, NULL), PP_ERR_NULL);
    }
}

/* Inference slots with skips: a stashing stage's activation stays until its last use on the
   rank; a skip to another rank costs no slot once sent. */
static void test_peak_with_skips(void **state)
{
    pp_plan p, low;
    const uint8_t map[4] = {0, 0, 0, 1}; /* stages 0..2 on rank 0 */
    pp_route local[1] = {{0, 2, 0, 0, 0, 2}}, remote[1] = {{0, 3, 0, 0, 0, 3}};
    (void)state;
    assert_int_equal(pp_schedule_build_map(&p, PP_SCHED_FORWARD_ONLY, 2, map, 4, 4, st[0], sizeof st[0], NULL), PP_OK);
    assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
    assert_int_equal(pp_peak_inflight(&low, 0), 1); /* no skips: one slot (+1 the executor adds) */
    assert_int_equal(pp_plan_skips(&p, local, 1), PP_OK);
    assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
    /* F0 (held for F2), F1 (its input from F0, held for F2), F2 reads both */
    assert_int_equal(pp_peak_inflight(&low, 0), 3);
    assert_int_equal(pp_plan_skips(&p, remote, 1), PP_OK);
    assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
    assert_int_equal(pp_peak_inflight(&low, 0), 2); /* only the hand-over between two stages */
    assert_int_equal(pp_peak_inflight(&low, 1), 1);
}

/* Skip transfers count in the mailbox proof. Lowered as above (SEND_S after SEND_F) the
   popping rank takes the skip right after the activation, so even rendezvous sends (depth 0)
   run; with each stage's SEND_S moved before its SEND_F, stage 0 waits for stage 2, which
   waits for stage 1's activation, which waits for stage 0: that needs a mailbox of 1. */
static void test_mailbox_with_skips(void **state)
{
    pp_plan p, low;
    pp_route R[1] = {{0, 2, 0, 0, 0, 2}};
    pp_diag d;
    int i;
    (void)state;
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_FORWARD_ONLY, 3, 1, 8, st[0], sizeof st[0], NULL), PP_OK);
    assert_int_equal(pp_plan_skips(&p, R, 1), PP_OK);
    assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
    assert_int_equal(pp_mailbox_depth(&low, 254, work, sizeof work, NULL), 0);
    for (i = 0; i + 2 < low.len[0]; i++) { /* F SEND_F SEND_S -> F SEND_S SEND_F */
        pp_action *row = pp__row(&low, 0);
        if (row[i + 1].type == PP_SEND_F && row[i + 2].type == PP_SEND_S) {
            pp_action x = row[i + 1];
            row[i + 1] = row[i + 2];
            row[i + 2] = x;
        }
    }
    assert_int_equal(pp_mailbox_depth(&low, 0, work, sizeof work, &d), PP_ERR_MAILBOX);
    assert_int_equal(d.rank, 0);
    assert_true(pp__eq(d.action, pp__act(PP_SEND_S, 0, 0)));
    assert_int_equal(pp_mailbox_depth(&low, 254, work, sizeof work, NULL), 1);
    assert_int_equal(low.mailbox, 2);
    /* without the route a SEND_S moves nothing: depth 0 again */
    low.nskips = 0;
    assert_int_equal(pp_mailbox_depth(&low, 254, work, sizeof work, NULL), 0);
}

/* pp_emit_c writes the routes for pp_exec_cfg.skips; CSV writes and reads the skip actions. */
static void test_emit_skips(void **state)
{
    static char text[16384];
    pp_plan p, low, back;
    pp_route R[1] = {{1, 6, 0, 2, 0, 2}};
    pp_action a;
    (void)state;
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_GPIPE, 3, 1, 2, st[0], sizeof st[0], NULL), PP_OK);
    assert_int_equal(pp_plan_skips(&p, R, 1), PP_OK);
    assert_int_equal(pp_lower(&p, &low, st[1], sizeof st[1], NULL), PP_OK);
    assert_true(pp_emit_c(&low, "sk", text, sizeof text, NULL) > 0);
    assert_non_null(strstr(text, "#define sk_NSKIPS 1\nconst pp_route sk_skips[1] = {{1, 6, 0, 2, 0, 2}};\n"));
    assert_non_null(strstr(text, "PP_ACTION(PP_SEND_S, 0, 0)"));
    assert_non_null(strstr(text, "PP_ACTION(PP_RECV_SB, 0, 1)"));
    assert_int_equal(pp_action_parse("0SEND_S1", 8, &a), PP_OK);
    assert_true(pp__eq(a, pp__act(PP_SEND_S, 0, 1)));
    assert_int_equal(pp_action_parse("2RECV_SB0", 9, &a), PP_OK);
    assert_true(pp__eq(a, pp__act(PP_RECV_SB, 2, 0)));
    assert_int_equal(pp_csv_write(&low, text, sizeof text, NULL) > 0, 1);
    assert_non_null(strstr(text, "0SEND_S0"));
    assert_int_equal(pp_plan_init(&back, st[2], sizeof st[2], 3, 3, 2), PP_OK);
    assert_int_equal(pp_csv_read(&back, text, strlen(text), NULL), PP_OK);
    assert_int_equal(back.len[0], low.len[0]);
    assert_true(pp__eq(pp__row(&back, 2)[0], pp__row(&low, 2)[0]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_skippables), cmocka_unit_test(test_inspect_skip_layout),
        cmocka_unit_test(test_invocations),       cmocka_unit_test(test_schedule_map),
        cmocka_unit_test(test_lower_skips),       cmocka_unit_test(test_simulate_skips),
        cmocka_unit_test(test_peak_with_skips),   cmocka_unit_test(test_mailbox_with_skips),
        cmocka_unit_test(test_emit_skips),
    };
    return cmocka_run_group_tests_name("pipeline planning: skips, invocations, stage maps", tests, NULL, NULL);
}
