/* cmocka.h — a small, self-contained stand-in for the cmocka unit-test API,
 * for the cross targets (bare metal under QEMU) where libcmocka does not
 * exist. Host builds use the real Debian libcmocka; only cross builds put
 * tests/cmocka/ on the include path.
 *
 * What it covers: the subset the splitcore suites use — struct CMUnitTest,
 * cmocka_unit_test[_setup|_teardown|_setup_teardown|_prestate],
 * cmocka_run_group_tests[_name], assert_true/false, assert_int_[not_]equal,
 * assert_in_range/not_in_range, assert_ptr_[not_]equal, assert_[non_]null,
 * assert_memory_[not_]equal, assert_string_[not_]equal, assert_float_equal,
 * assert_return_code, fail, fail_msg, skip, print_message, print_error.
 * Not covered: mocks (will_return/expect_*), test_malloc leak checks,
 * cmocka_set_message_output (always the standard format).
 *
 * Behaviour follows cmocka: a failing assertion prints the reason, aborts
 * the test with longjmp and runs its teardown; skip() marks it skipped (not
 * failed); a test whose setup fails is counted as failed without running.
 * cmocka_run_group_tests() returns the number of failed tests. If the group
 * setup fails, no test runs and every test of the group counts as failed.
 * The summary lines use cmocka 1.1.7's format ("[==========] tests: Running
 * N test(s)." ...). Only one group runs at a time (tests are not nested).
 *
 * It needs only <setjmp.h>, <stdarg.h>, <stddef.h>, <stdint.h>, <stdio.h>
 * and <string.h>; it is header-only, so it must be included in exactly one
 * translation unit of a test program (every helper is static). */
#ifndef SPLITCORE_CMOCKA_SHIM_H
#define SPLITCORE_CMOCKA_SHIM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SPLITCORE_CMOCKA_SHIM 1

#if defined(__GNUC__) || defined(__clang__)
#define CM__FN           static __attribute__((unused))
#define CM__NORETURN     __attribute__((noreturn))
#define CM__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CM__FN static
#define CM__NORETURN
#define CM__PRINTF(f, a)
#endif

typedef uintmax_t LargestIntegralType;

typedef void (*CMUnitTestFunction)(void **state);
typedef int (*CMFixtureFunction)(void **state);

struct CMUnitTest {
    const char *name;
    CMUnitTestFunction test_func;
    CMFixtureFunction setup_func;
    CMFixtureFunction teardown_func;
    void *initial_state;
};

/* clang-format off */
#define cmocka_unit_test(f) { #f, f, NULL, NULL, NULL }
#define cmocka_unit_test_setup(f, setup) { #f, f, setup, NULL, NULL }
#define cmocka_unit_test_teardown(f, teardown) { #f, f, NULL, teardown, NULL }
/* clang-format on */
#define cmocka_unit_test_setup_teardown(f, setup, teardown) \
    {                                                       \
#f, f, setup, teardown, NULL                        \
    }
/* clang-format off */
#define cmocka_unit_test_prestate(f, state) { #f, f, NULL, NULL, state }
/* clang-format on */
#define cmocka_unit_test_prestate_setup_teardown(f, setup, teardown, state) \
    {                                                                       \
#f, f, setup, teardown, state                                       \
    }

#define cmocka_run_group_tests(group_tests, group_setup, group_teardown)                                  \
    cm__run_group(#group_tests, group_tests, sizeof(group_tests) / sizeof((group_tests)[0]), group_setup, \
                  group_teardown)
#define cmocka_run_group_tests_name(group_name, group_tests, group_setup, group_teardown) \
    cm__run_group(group_name, group_tests, sizeof(group_tests) / sizeof((group_tests)[0]), group_setup, group_teardown)

/* ---- state of the running test -------------------------------------- */

enum { CM__RUNNING = 0, CM__FAILED = 1, CM__SKIPPED = 2 };

static jmp_buf cm__jump;
static int cm__in_test;
/* The running test's state. Static storage, because a longjmp leaves
 * non-volatile locals that changed after setjmp indeterminate. */
static void *cm__state;

/* ---- output ---------------------------------------------------------- */

/* Shim only: while quiet, nothing is printed (results are still counted).
 * The self-test runs its deliberately failing groups quietly, so a log
 * reader never sees their "[  FAILED  ]" summaries. */
static int cm__quiet;
CM__FN void cmocka_shim_quiet(int on)
{
    cm__quiet = on;
}

CM__FN CM__PRINTF(1, 2) void print_message(const char *format, ...)
{
    va_list args;
    if (cm__quiet) return;
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    fflush(stdout);
}

CM__FN CM__PRINTF(1, 2) void print_error(const char *format, ...)
{
    va_list args;
    if (cm__quiet) return;
    fflush(stdout);
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fflush(stderr);
}

/* ---- failing and skipping -------------------------------------------- */

CM__FN CM__NORETURN void cm__stop(int how)
{
    if (cm__in_test) { longjmp(cm__jump, how); }
    /* An assertion outside a running test (e.g. in a group fixture) has
     * nowhere to return to; there is no safe way on, so stop loudly. */
    print_error("[  ERROR   ] --- assertion outside a running test\n");
    for (;;) {}
}

CM__FN CM__NORETURN void cm__fail(const char *file, int line)
{
    print_error("[   LINE   ] --- %s:%d: error: Failure!\n", file, line);
    cm__stop(CM__FAILED);
}

/* Prints "[  ERROR   ] --- <reason>" and aborts the running test. */
CM__FN CM__NORETURN CM__PRINTF(3, 4) void cm__fail_with(const char *file, int line, const char *format, ...)
{
    va_list args;
    if (!cm__quiet) {
        print_error("[  ERROR   ] --- ");
        va_start(args, format);
        vfprintf(stderr, format, args);
        va_end(args);
        fputc('\n', stderr);
    }
    cm__fail(file, line);
}

#define fail() cm__fail(__FILE__, __LINE__)
#define fail_msg(...)                       \
    do {                                    \
        print_error("ERROR: " __VA_ARGS__); \
        print_error("\n");                  \
        fail();                             \
    } while (0)
#define skip() cm__stop(CM__SKIPPED)

/* ---- assertions ------------------------------------------------------- */
/* Integers are compared as uintmax_t, like cmocka's LargestIntegralType;
 * they are printed in hex, as cmocka does. */

CM__FN void cm__check(int ok, const char *expr, const char *file, int line)
{
    if (!ok) { cm__fail_with(file, line, "%s", expr); }
}

#define assert_true(c)  cm__check(!!(c), #c, __FILE__, __LINE__)
#define assert_false(c) cm__check(!(c), #c, __FILE__, __LINE__)

CM__FN void cm__int_cmp(uintmax_t a, uintmax_t b, int want_equal, const char *file, int line)
{
    if ((a == b) != want_equal) {
        cm__fail_with(file, line, "%#llx %s %#llx", (unsigned long long)a,
                      want_equal ? "!=" : "==", (unsigned long long)b);
    }
}

#define assert_int_equal(a, b)     cm__int_cmp((uintmax_t)(a), (uintmax_t)(b), 1, __FILE__, __LINE__)
#define assert_int_not_equal(a, b) cm__int_cmp((uintmax_t)(a), (uintmax_t)(b), 0, __FILE__, __LINE__)

CM__FN void cm__range(uintmax_t v, uintmax_t lo, uintmax_t hi, int want_in, const char *file, int line)
{
    int in = v >= lo && v <= hi;
    if (in != want_in) {
        cm__fail_with(file, line, "%llu is %swithin the range %llu-%llu", (unsigned long long)v, in ? "" : "not ",
                      (unsigned long long)lo, (unsigned long long)hi);
    }
}

#define assert_in_range(v, lo, hi) cm__range((uintmax_t)(v), (uintmax_t)(lo), (uintmax_t)(hi), 1, __FILE__, __LINE__)
#define assert_not_in_range(v, lo, hi) \
    cm__range((uintmax_t)(v), (uintmax_t)(lo), (uintmax_t)(hi), 0, __FILE__, __LINE__)

CM__FN void cm__ptr_cmp(const void *a, const void *b, int want_equal, const char *file, int line)
{
    if ((a == b) != want_equal) { cm__fail_with(file, line, "%p %s %p", a, want_equal ? "!=" : "==", b); }
}

#define assert_ptr_equal(a, b)     cm__ptr_cmp((const void *)(a), (const void *)(b), 1, __FILE__, __LINE__)
#define assert_ptr_not_equal(a, b) cm__ptr_cmp((const void *)(a), (const void *)(b), 0, __FILE__, __LINE__)
#define assert_null(p)             cm__ptr_cmp((const void *)(p), NULL, 1, __FILE__, __LINE__)
#define assert_non_null(p)         cm__ptr_cmp((const void *)(p), NULL, 0, __FILE__, __LINE__)

CM__FN void cm__mem_cmp(const void *a, const void *b, size_t n, int want_equal, const char *file, int line)
{
    const unsigned char *x = (const unsigned char *)a;
    const unsigned char *y = (const unsigned char *)b;
    size_t i, differ = 0, first = 0;
    for (i = 0; i < n; ++i) {
        if (x[i] != y[i]) {
            if (differ++ == 0) { first = i; }
        }
    }
    if (want_equal && differ) {
        cm__fail_with(file, line,
                      "difference at offset %lu 0x%02x 0x%02x\n"
                      "%lu bytes of %p and %p differ",
                      (unsigned long)first, x[first], y[first], (unsigned long)differ, a, b);
    }
    if (!want_equal && !differ) {
        cm__fail_with(file, line, "%lu bytes of %p and %p are the same", (unsigned long)n, a, b);
    }
}

#define assert_memory_equal(a, b, n)     cm__mem_cmp((a), (b), (size_t)(n), 1, __FILE__, __LINE__)
#define assert_memory_not_equal(a, b, n) cm__mem_cmp((a), (b), (size_t)(n), 0, __FILE__, __LINE__)

CM__FN void cm__str_cmp(const char *a, const char *b, int want_equal, const char *file, int line)
{
    int equal = a != NULL && b != NULL ? strcmp(a, b) == 0 : a == b;
    if (equal != want_equal) {
        cm__fail_with(file, line, "\"%s\" %s \"%s\"", a ? a : "(null)", want_equal ? "!=" : "==", b ? b : "(null)");
    }
}

#define assert_string_equal(a, b)     cm__str_cmp((a), (b), 1, __FILE__, __LINE__)
#define assert_string_not_equal(a, b) cm__str_cmp((a), (b), 0, __FILE__, __LINE__)

CM__FN void cm__float_eq(double a, double b, double epsilon, const char *file, int line)
{
    double d = a > b ? a - b : b - a;
    /* "!(d <= eps)" so that a NaN on either side fails. */
    if (!(d <= epsilon)) { cm__fail_with(file, line, "%f != %f", a, b); }
}

#define assert_float_equal(a, b, epsilon) cm__float_eq((double)(a), (double)(b), (double)(epsilon), __FILE__, __LINE__)

CM__FN void cm__return_code(intmax_t rc, const char *expr, const char *file, int line)
{
    if (rc < 0) { cm__fail_with(file, line, "%s < 0 (%lld)", expr, (long long)rc); }
}

/* The second argument is cmocka's errno value; it is only printed by real
 * cmocka, so it is evaluated and ignored here. */
#define assert_return_code(rc, error) ((void)(error), cm__return_code((intmax_t)(rc), #rc, __FILE__, __LINE__))

/* ---- running a group -------------------------------------------------- */

/* Runs one test with its fixtures; returns CM__RUNNING (passed),
 * CM__FAILED or CM__SKIPPED. volatile: these locals change between
 * setjmp and longjmp. */
CM__FN int cm__run_one(const struct CMUnitTest *t, void *group_state)
{
    volatile int result;
    volatile int setup_ok = 1;

    print_message("[ RUN      ] %s\n", t->name);
    cm__state = t->initial_state != NULL ? t->initial_state : group_state;
    cm__in_test = 1;
    result = setjmp(cm__jump);
    if (result == CM__RUNNING) {
        if (t->setup_func != NULL && t->setup_func(&cm__state) != 0) {
            setup_ok = 0;
            result = CM__FAILED;
        } else {
            t->test_func(&cm__state);
        }
    }
    if (setup_ok && t->teardown_func != NULL) {
        /* A failing assertion inside the teardown also fails the test. */
        int torn = setjmp(cm__jump);
        if (torn == CM__RUNNING) {
            if (t->teardown_func(&cm__state) != 0) {
                print_error("Test teardown failed\n");
                result = CM__FAILED;
            }
        } else {
            result = CM__FAILED;
        }
    }
    cm__in_test = 0;

    if (!setup_ok) {
        print_error("Could not run test: Test setup failed\n");
        print_message("[  ERROR   ] %s\n", t->name);
    } else if (result == CM__FAILED) {
        print_message("[  FAILED  ] %s\n", t->name);
    } else if (result == CM__SKIPPED) {
        print_message("[  SKIPPED ] %s\n", t->name);
    } else {
        print_message("[       OK ] %s\n", t->name);
    }
    return result;
}

/* The summary's list of skipped or failed tests, as cmocka prints it. */
CM__FN void cm__list(const struct CMUnitTest *tests, const unsigned char *results, size_t count, int which, size_t n,
                     const char *tag, const char *word)
{
    size_t i;
    if (n == 0) { return; }
    print_message("%s %lu test(s), listed below:\n", tag, (unsigned long)n);
    for (i = 0; i < count; ++i) {
        if (results[i] == which) { print_message("%s %s\n", tag, tests[i].name); }
    }
    print_message("\n %lu %s TEST(S)\n", (unsigned long)n, word);
}

CM__FN int cm__run_group(const char *group, const struct CMUnitTest *tests, size_t count, CMFixtureFunction group_setup,
                         CMFixtureFunction group_teardown)
{
    /* Results per test; groups larger than this are split by the caller. */
    enum { CM__MAX_TESTS = 512 };
    static unsigned char results[CM__MAX_TESTS];
    void *group_state = NULL;
    size_t i, run = 0, passed = 0, failed = 0, skipped = 0;

    if (count > CM__MAX_TESTS) {
        print_error("[  ERROR   ] %s: %lu tests, the shim runs at most %d\n", group, (unsigned long)count,
                    (int)CM__MAX_TESTS);
        return (int)count;
    }
    print_message("[==========] %s: Running %lu test(s).\n", group, (unsigned long)count);
    if (group_setup != NULL && group_setup(&group_state) != 0) {
        print_message("[  FAILED  ] GROUP SETUP\n");
        print_message("[  ERROR   ] %s\n", group);
        print_message("[==========] %s: 0 test(s) run.\n", group);
        print_message("[  FAILED  ] %lu test(s), listed below:\n", (unsigned long)count);
        return (int)count;
    }
    for (i = 0; i < count; ++i) {
        results[i] = (unsigned char)cm__run_one(&tests[i], group_state);
        run += 1;
        passed += results[i] == CM__RUNNING;
        failed += results[i] == CM__FAILED;
        skipped += results[i] == CM__SKIPPED;
    }
    if (group_teardown != NULL && group_teardown(&group_state) != 0) { print_message("[  ERROR   ] GROUP TEARDOWN\n"); }

    print_message("[==========] %s: %lu test(s) run.\n", group, (unsigned long)run);
    print_message("[  PASSED  ] %lu test(s).\n", (unsigned long)passed);
    cm__list(tests, results, count, CM__SKIPPED, skipped, "[  SKIPPED ]", "SKIPPED");
    cm__list(tests, results, count, CM__FAILED, failed, "[  FAILED  ]", "FAILED");
    return (int)failed;
}

#endif /* SPLITCORE_CMOCKA_SHIM_H */
