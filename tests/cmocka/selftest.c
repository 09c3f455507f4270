/* Self-test of the cmocka stand-in (tests/cmocka/cmocka.h). Built on the host
 * and on every cross target, always against the shim.
 *
 * It first runs an inner group whose tests are meant to fail, pass or skip
 * (the test's name says which: fails_*, passes_*, skips_*), records what the
 * shim reported, and then checks those records in an ordinary group: the
 * returned failure count equals the number of fails_* tests in the table,
 * code after a failed assertion never runs, teardowns run after failures,
 * a failed setup keeps the body from running, skips are not failures, and
 * a failing group setup fails the whole group. The inner groups run
 * quietly (cmocka_shim_quiet); the verdict is the last group. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#ifndef SPLITCORE_CMOCKA_SHIM
#error "selftest.c must be built against tests/cmocka/cmocka.h, not libcmocka"
#endif

static int reached_after_failure; /* must stay 0 */
static int teardowns_run;
static int body_after_failed_setup; /* must stay 0 */
static int state_seen_by_test;
static int state_seen_by_teardown;
static int group_body_ran; /* must stay 0 */

/* ---- inner tests: the outcome is in the name --------------------------- */

static void passes_every_assertion(void **state)
{
    int a[3] = {1, 2, 3};
    int b[3] = {1, 2, 3};
    int c[3] = {1, 2, 4};
    (void)state;
    assert_true(1);
    assert_false(0);
    assert_int_equal(-5, -5);
    assert_int_not_equal(4, 5);
    assert_in_range(3, 1, 3);
    assert_not_in_range(4, 1, 3);
    assert_ptr_equal(a, &a[0]);
    assert_ptr_not_equal(a, b);
    assert_null(NULL);
    assert_non_null(a);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    assert_string_equal("abc", "abc");
    assert_string_not_equal("abc", "abd");
    assert_float_equal(1.0f, 1.0f + 1e-7f, 1e-6);
    assert_return_code(0, 0);
    print_message("print_message works\n");
}

static void fails_assert_true(void **state)
{
    (void)state;
    assert_true(1 == 2);
    reached_after_failure++;
}

static void fails_assert_false(void **state)
{
    (void)state;
    assert_false(2 == 2);
    reached_after_failure++;
}

static void fails_assert_int_equal(void **state)
{
    (void)state;
    assert_int_equal(1, 2);
    reached_after_failure++;
}

static void fails_assert_int_not_equal(void **state)
{
    (void)state;
    assert_int_not_equal(7, 7);
    reached_after_failure++;
}

static void fails_assert_in_range(void **state)
{
    (void)state;
    assert_in_range(5, 1, 3);
    reached_after_failure++;
}

static void fails_assert_ptr_equal(void **state)
{
    int x = 0, y = 0;
    (void)state;
    assert_ptr_equal(&x, &y);
    reached_after_failure++;
}

static void fails_assert_null(void **state)
{
    int x = 0;
    (void)state;
    assert_null(&x);
    reached_after_failure++;
}

static void fails_assert_non_null(void **state)
{
    (void)state;
    assert_non_null(NULL);
    reached_after_failure++;
}

static void fails_assert_memory_equal(void **state)
{
    (void)state;
    assert_memory_equal("abc", "abd", 3);
    reached_after_failure++;
}

static void fails_assert_string_equal(void **state)
{
    (void)state;
    assert_string_equal("a", "b");
    reached_after_failure++;
}

static void fails_assert_float_equal(void **state)
{
    (void)state;
    assert_float_equal(1.0, 1.5, 0.1);
    reached_after_failure++;
}

static void fails_assert_return_code(void **state)
{
    (void)state;
    assert_return_code(-3, 0);
    reached_after_failure++;
}

static void fails_fail(void **state)
{
    (void)state;
    fail();
    reached_after_failure++;
}

static void fails_fail_msg(void **state)
{
    (void)state;
    fail_msg("(expected) fail_msg self-test, number %d", 42);
    reached_after_failure++;
}

static void skips_skip(void **state)
{
    (void)state;
    skip();
    reached_after_failure++;
}

static int failing_setup(void **state)
{
    (void)state;
    return -1;
}

static int counting_teardown(void **state)
{
    (void)state;
    teardowns_run++;
    return 0;
}

static void fails_because_setup_fails(void **state)
{
    (void)state;
    body_after_failed_setup++;
}

static void fails_then_tears_down(void **state)
{
    (void)state;
    fail();
}

static int value = 1234;

static int setup_state(void **state)
{
    *state = &value;
    return 0;
}

static int teardown_state(void **state)
{
    state_seen_by_teardown = *state == &value;
    return 0;
}

static void passes_state_from_setup(void **state)
{
    state_seen_by_test = *(int *)*state == 1234;
}

static int asserting_teardown(void **state)
{
    (void)state;
    assert_int_equal(0, 1);
    return 0;
}

static void fails_in_teardown(void **state)
{
    (void)state;
}

static void group_setup_never_runs_this(void **state)
{
    (void)state;
    group_body_ran++;
}

static int failing_group_setup(void **state)
{
    (void)state;
    return 1;
}

static const struct CMUnitTest inner[] = {
    cmocka_unit_test(passes_every_assertion),
    cmocka_unit_test(fails_assert_true),
    cmocka_unit_test(fails_assert_false),
    cmocka_unit_test(fails_assert_int_equal),
    cmocka_unit_test(fails_assert_int_not_equal),
    cmocka_unit_test(fails_assert_in_range),
    cmocka_unit_test(fails_assert_ptr_equal),
    cmocka_unit_test(fails_assert_null),
    cmocka_unit_test(fails_assert_non_null),
    cmocka_unit_test(fails_assert_memory_equal),
    cmocka_unit_test(fails_assert_string_equal),
    cmocka_unit_test(fails_assert_float_equal),
    cmocka_unit_test(fails_assert_return_code),
    cmocka_unit_test(fails_fail),
    cmocka_unit_test(fails_fail_msg),
    cmocka_unit_test(skips_skip),
    cmocka_unit_test_setup_teardown(fails_because_setup_fails, failing_setup, counting_teardown),
    cmocka_unit_test_setup_teardown(fails_then_tears_down, NULL, counting_teardown),
    cmocka_unit_test_setup_teardown(passes_state_from_setup, setup_state, teardown_state),
    cmocka_unit_test_teardown(fails_in_teardown, asserting_teardown),
};

static const struct CMUnitTest never_run[] = {
    cmocka_unit_test(group_setup_never_runs_this),
    cmocka_unit_test(group_setup_never_runs_this),
};

static int inner_failed = -1;
static int never_run_failed = -1;

static int count_prefix(const char *prefix)
{
    size_t i;
    int n = 0;
    for (i = 0; i < sizeof inner / sizeof inner[0]; ++i) { n += strncmp(inner[i].name, prefix, strlen(prefix)) == 0; }
    return n;
}

/* ---- the verdict -------------------------------------------------------- */

static void failure_count_matches_the_table(void **state)
{
    (void)state;
    assert_true(count_prefix("fails_") >= 15);
    assert_int_equal(inner_failed, count_prefix("fails_"));
}

static void a_failed_assertion_stops_the_test(void **state)
{
    (void)state;
    assert_int_equal(reached_after_failure, 0);
}

static void teardown_runs_after_failure_not_after_failed_setup(void **state)
{
    (void)state;
    assert_int_equal(teardowns_run, 1);
    assert_int_equal(body_after_failed_setup, 0);
}

static void state_flows_from_setup_to_test_to_teardown(void **state)
{
    (void)state;
    assert_true(state_seen_by_test);
    assert_true(state_seen_by_teardown);
}

static void failing_group_setup_fails_every_test(void **state)
{
    (void)state;
    assert_int_equal(never_run_failed, 2);
    assert_int_equal(group_body_ran, 0);
}

int main(void)
{
    const struct CMUnitTest verdict[] = {
        cmocka_unit_test(failure_count_matches_the_table),
        cmocka_unit_test(a_failed_assertion_stops_the_test),
        cmocka_unit_test(teardown_runs_after_failure_not_after_failed_setup),
        cmocka_unit_test(state_flows_from_setup_to_test_to_teardown),
        cmocka_unit_test(failing_group_setup_fails_every_test),
    };

    /* The inner groups fail on purpose; they run quietly so that no log
     * reader mistakes their summaries for real failures. */
    cmocka_shim_quiet(1);
    inner_failed = cmocka_run_group_tests_name("shim_expected_failures", inner, NULL, NULL);
    never_run_failed =
        cmocka_run_group_tests_name("shim_expected_group_setup_failure", never_run, failing_group_setup, NULL);
    cmocka_shim_quiet(0);
    print_message("cmocka shim self-test: %d + %d deliberate failures counted "
                  "quietly; the verdict follows.\n",
                  inner_failed, never_run_failed);
    return cmocka_run_group_tests_name("shim_selftest", verdict, NULL, NULL);
}
