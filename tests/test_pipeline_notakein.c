/* tests/test_pipeline_notakein.c — the executor without take-in (PP_NO_TAKEIN), as firmware
   links it with an emitted plan: the plan, not the firmware, carries the deadlock freedom.
   pp_mailbox_depth proves on the host the mailbox depth a plan needs when no rank takes in
   early messages; the executor refuses tables not proven for the port's mailboxes
   (PP_ERR_MAILBOX on every rank, nothing run), and proven ones train to the single-rank
   parameters on pg_pthread (4 slots per pair, an activation is one message: 4 transfers)
   and on pg_shm (4 slots of 32 B, an activation is two messages: 2 transfers, the depth the
   zero-bubble and interleaved plans need). The model, runs and checks are
   tests/test_pipeline_exec.c's. No timing assertions. */
#define PP_NO_TAKEIN     1
#define PP_MAILBOX_SLOTS 4 /* messages per ordered pair on both ports below */
#define SHM_SLOTS        4
#define PIPELINE_EXEC_TEST_NO_MAIN
#include "test_pipeline_exec.c"
#include <stdlib.h> /* getenv, system: the emitted plan is compiled with cc */

static uint32_t depth_work[1 << 16];

/* build_plan, then prove the plan for at most max_depth: its depth or the error. */
static int build_proven(int kind, int P, int V, int nmb, int max_depth)
{
    int r, d;
    pp_diag diag;
    build_plan(kind, P, V, nmb);
    d = pp_mailbox_depth(&plan, max_depth, depth_work, sizeof depth_work, &diag);
    for (r = 0; r < P; r++) assert_int_equal(pp_plan_table(&plan, r, &tables[r]), 0);
    return d;
}

/* A plan that needs take-in (LoopedBFS on 2 ranks sends all 16 activations each way before
   receiving: depth 8) is refused for PP_MAILBOX_SLOTS; unproven or under-proven tables are
   refused by the executor on every rank before anything runs. */
static void test_refused(void **st)
{
    static model m;
    int r, rcs[MAXR];
    pp_diag diag;
    (void)st;
    data_init();
    model_init(&m);
    assert_int_equal(build_proven(PP_SCHED_LOOPED_BFS, 2, 2, 16, PP_MAILBOX_SLOTS), PP_ERR_MAILBOX);
    assert_int_equal(plan.mailbox, 0);
    assert_int_equal(pp_mailbox_depth(&plan, PP_MAILBOX_SLOTS, depth_work, sizeof depth_work, &diag), PP_ERR_MAILBOX);
    assert_true(diag.rank >= 0 && diag.rank < 2 && diag.step >= 0);
    assert_int_equal(pp_mailbox_depth(&plan, 254, depth_work, sizeof depth_work, NULL), 8);
    assert_int_equal(plan.mailbox, 9);
    cfg_init(&m, 1, PP_CKPT_NEVER);
    for (r = 0; r < 2; r++) assert_int_equal(pp_plan_table(&plan, r, &tables[r]), 0);
    run_ranks(PORT_PTHREAD, 2, rcs); /* proven for 8 transfers: more than 4 slots */
    for (r = 0; r < 2; r++) assert_int_equal(rcs[r], PP_ERR_MAILBOX);
    build_plan(PP_SCHED_1F1B, 4, 1, NMB); /* not proven at all */
    run_ranks(PORT_SHM, 4, rcs);
    for (r = 0; r < 4; r++) assert_int_equal(rcs[r], PP_ERR_MAILBOX);
    /* ZBV needs 2 transfers per pair: on pg_shm's 4 slots that is 2 x 2 pieces, so a proof
       for 2 runs (below) while the same table claimed for 3 does not fit */
    assert_int_equal(build_proven(PP_SCHED_ZBV, 2, 2, 32, 2), 2);
    plan.mailbox = 4;
    for (r = 0; r < 2; r++) assert_int_equal(pp_plan_table(&plan, r, &tables[r]), 0);
    run_ranks(PORT_SHM, 2, rcs);
    for (r = 0; r < 2; r++) assert_int_equal(rcs[r], PP_ERR_MAILBOX);
}

/* Proven plans (depth <= 2: within both ports) train like a single rank, without take-in. */
static const struct {
    int kind, P, V, nmb, depth;
} PROVEN[] = {
    {PP_SCHED_GPIPE, 4, 1, 16, 0},          {PP_SCHED_1F1B, 4, 1, 32, 1},
    {PP_SCHED_LOOPED_BFS, 4, 1, 16, 0},     {PP_SCHED_INTERLEAVED_1F1B, 2, 2, 16, 2},
    {PP_SCHED_INTERLEAVED_ZB, 2, 2, 32, 2}, {PP_SCHED_ZBV, 2, 2, 32, 2},
    {PP_SCHED_ZBV, 2, 2, NMB, 2},           {PP_SCHED_1F1B, 4, 1, NMB, 1},
};
static void proven_runs(int port)
{
    int i;
    data_init();
    for (i = 0; i < (int)(sizeof PROVEN / sizeof PROVEN[0]); i++) {
        static model par, ref;
        int step, r, rcs[MAXR], nmb = PROVEN[i].nmb, P = PROVEN[i].P;
        assert_int_equal(build_proven(PROVEN[i].kind, P, PROVEN[i].V, nmb, 2), PROVEN[i].depth);
        model_init(&par);
        model_init(&ref);
        cfg_init(&par, 1, i & 1 ? PP_CKPT_EXCEPT_LAST : PP_CKPT_NEVER);
        for (step = 0; step < 2; step++) {
            model_zero_grad(&par);
            model_zero_grad(&ref);
            the_job.step = step;
            run_ranks(port, P, rcs);
            for (r = 0; r < P; r++) {
                if (rcs[r]) print_error("%s M=%d rank %d: %d\n", pp_schedule_name(PROVEN[i].kind), nmb, r, rcs[r]);
                assert_int_equal(rcs[r], 0);
            }
            reference_step(&ref, step, nmb);
            model_sgd(&par, 0.05f);
            model_sgd(&ref, 0.05f);
        }
        assert_models_close(&par, &ref);
    }
}
static void test_proven_pthread(void **st)
{
    (void)st;
    proven_runs(PORT_PTHREAD);
}
static void test_proven_shm(void **st)
{
    (void)st;
    proven_runs(PORT_SHM);
}

/* Streaming inference: a forward-only plan needs depth 0 (every send may wait for its
   receiver), so it runs on any port; frames equal a plain forward. */
static void prove_for_depth_0(void)
{
    assert_int_equal(pp_mailbox_depth(&plan, 0, depth_work, sizeof depth_work, NULL), 0);
    assert_int_equal(plan.mailbox, 1);
}
static void test_infer_any_port(void **st)
{
    (void)st;
    after_lower = prove_for_depth_0;
    infer_equal(PORT_PTHREAD, MAXMB);
    infer_equal(PORT_SHM, MAXMB);
    after_lower = NULL;
}

/* The emitted plan stops a PP_NO_TAKEIN build whose PP_MAILBOX_SLOTS is below the proven
   depth, or when the plan was never proven; it compiles at the depth (cc from $CC). */
static int compile_emitted(const char *name, const char *defines)
{
    static char src[1 << 16], cmd[1024];
    const char *cc = getenv("CC");
    FILE *f;
    int n = pp_emit_c(&plan, name, src, sizeof src, NULL);
    assert_true(n > 0);
    assert_int_equal(system("mkdir -p build/pipeline_emit"), 0);
    f = fopen("build/pipeline_emit/plan.c", "w");
    assert_non_null(f);
    assert_int_equal(fwrite(src, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -std=c99 -Wall -Wextra -Werror -I. -Iinclude %s -c build/pipeline_emit/plan.c "
             "-o build/pipeline_emit/plan.o 2>/dev/null",
             cc && *cc ? cc : "cc", defines);
    return system(cmd);
}
static void test_emitted_check(void **st)
{
    (void)st;
    build_plan(PP_SCHED_ZBV, 2, 2, 16);              /* not proven */
    assert_int_equal(compile_emitted("zbv", ""), 0); /* with take-in: fine */
    assert_int_not_equal(compile_emitted("zbv", "-DPP_NO_TAKEIN"), 0);
    assert_int_equal(build_proven(PP_SCHED_ZBV, 2, 2, 16, 4), 2);
    assert_int_equal(compile_emitted("zbv", "-DPP_NO_TAKEIN -DPP_MAILBOX_SLOTS=2"), 0);
    assert_int_not_equal(compile_emitted("zbv", "-DPP_NO_TAKEIN -DPP_MAILBOX_SLOTS=1"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),        cmocka_unit_test(test_proven_pthread), cmocka_unit_test(test_proven_shm),
        cmocka_unit_test(test_infer_any_port), cmocka_unit_test(test_emitted_check),
    };
    (void)test_train_pthread;
    (void)test_train_shm;
    (void)test_infer_pthread;
    (void)test_infer_shm;
    (void)test_train_large_m_pthread;
    (void)test_train_large_m_shm;
    (void)test_error_aborts;
    (void)test_bad_inputs;
    (void)test_uneven_forward_only;
    (void)test_storage_query;
    (void)test_train_torch_csv_pthread;
    (void)test_train_torch_csv_shm;
    (void)train_large;
    return cmocka_run_group_tests_name("pipeline executor without take-in", tests, NULL, NULL);
}
