/* tests/test_pipeline_infer.c — the inference-only executor (PP_NO_TRAINING, and without the
   timeline: PP_NO_EVENTS), as a firmware that streams frames links it: forward-only plans
   run equal to a single-rank forward on pg_pthread and pg_shm (host threads), the
   hand-written uneven plan too; a config with a loss callback is refused with PP_ERR_ARG and
   a training table with PP_ERR_BACKWARD_COUNT, before anything runs. The model, runs and checks are tests/test_pipeline_exec.c's. No
   timing assertions. */
#define PP_NO_TRAINING 1
#define PP_NO_EVENTS   1
#define PIPELINE_EXEC_TEST_NO_MAIN
#include "test_pipeline_exec.c"

static void test_training_refused(void **st)
{
    static model m;
    pp_exec e;
    size_t q = 7;
    (void)st;
    model_init(&m);
    assert_int_equal(pg_pthread_world_init(&world, 4), 0);
    build_plan(PP_SCHED_1F1B, 4, 1, NMB);
    cfg_init(&m, 1, PP_CKPT_NEVER); /* a loss: training */
    assert_int_equal(pp_exec_query(&cfg, &tables[0], &q), PP_ERR_ARG);
    assert_int_equal(q, 7);
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], pg_pthread_group(&world, 0), exec_mem[0], sizeof exec_mem[0]),
                     PP_ERR_ARG);
    cfg_init(&m, 0, PP_CKPT_NEVER); /* inference over a training table */
    assert_int_equal(pp_exec_query(&cfg, &tables[0], &q), PP_ERR_BACKWARD_COUNT);
    build_plan(PP_SCHED_FORWARD_ONLY, 4, 1, NMB);
    assert_int_equal(pp_exec_query(&cfg, &tables[0], &q), 0);
    assert_int_equal(q, 184); /* one inference slot and its state word, as with training built in */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_infer_pthread),
        cmocka_unit_test(test_infer_shm),
        cmocka_unit_test(test_uneven_forward_only),
        cmocka_unit_test(test_training_refused),
    };
    (void)test_train_pthread;
    (void)test_train_shm;
    (void)test_train_large_m_pthread;
    (void)test_train_large_m_shm;
    (void)test_error_aborts;
    (void)test_bad_inputs;
    (void)test_storage_query;
    (void)test_train_torch_csv_pthread;
    (void)test_train_torch_csv_shm;
    (void)train_large;
    return cmocka_run_group_tests_name("pipeline executor, inference only", tests, NULL, NULL);
}
