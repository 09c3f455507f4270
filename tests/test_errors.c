/* The one error space: every code of every module distinct, in its module's range, named by
   splitcore_strerror and by its module's own strerror with the same message. */
#define SPLITCORE_IMPLEMENTATION
#include "microbatch.h"
#include "ports/pg.h"
#include "pipeline.h"
#include "dtensor.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

typedef struct code {
    const char *name;
    int value;
    const char *msg;
    int module;
    const char *(*own)(int);
} code;

#define MB_ROW(n, v, m) {#n, v, m, SPLITCORE_MODULE_MICROBATCH, mb_strerror},
#define PG_ROW(n, v, m) {#n, v, m, SPLITCORE_MODULE_PG, pg_strerror},
#define PP_ROW(n, v, m) {#n, v, m, SPLITCORE_MODULE_PIPELINE, pp_strerror},
#define DT_ROW(n, v, m) {#n, v, m, SPLITCORE_MODULE_DTENSOR, dt_strerror},
static const code codes[] = {MB_ERRORS(MB_ROW) PG_ERRORS(PG_ROW) PP_ERRORS(PP_ROW) DT_ERRORS(DT_ROW)};
#define NCODES ((int)(sizeof codes / sizeof codes[0]))

static void test_every_code_distinct(void **state)
{
    int i, j;
    (void)state;
    assert_int_equal(NCODES, MB__ERR_COUNT + PG__ERR_COUNT + PP__ERR_COUNT + DT__ERR_COUNT);
    for (i = 0; i < NCODES; i++) {
        assert_true(codes[i].value < 0);
        assert_true(codes[i].value >= SPLITCORE_ERR_MIN); /* one Cortex-M instruction loads it */
        for (j = 0; j < i; j++)
            if (codes[i].value == codes[j].value)
                fail_msg("%s and %s are both %d", codes[i].name, codes[j].name, codes[i].value);
    }
}

static void test_ranges(void **state)
{
    static const int base[] = {0, MB_ERR_BASE, PG_ERR_BASE, PP_ERR_BASE, DT_ERR_BASE};
    static const int next[] = {0, PG_ERR_BASE, PP_ERR_BASE, DT_ERR_BASE, SPLITCORE_ERR_MIN - 1};
    int i;
    (void)state;
    for (i = 0; i < NCODES; i++) {
        int m = codes[i].module;
        if (!(codes[i].value < base[m] && codes[i].value > next[m]))
            fail_msg("%s = %d is outside its module's range (%d, %d)", codes[i].name, codes[i].value, next[m], base[m]);
        assert_int_equal(splitcore_err_module(codes[i].value), m);
    }
    /* the enum names are the registry's values */
    assert_int_equal(MB_ERR_ALIGN, -13);
    assert_int_equal(PG_ERR_NULL, -31);
    assert_int_equal(PP_ERR_NULL, -61);
    assert_int_equal(DT_ERR_NULL, -121);
}

static void test_strerror_names_every_code(void **state)
{
    int i;
    (void)state;
    for (i = 0; i < NCODES; i++) {
        const char *any = splitcore_strerror(codes[i].value), *own = codes[i].own(codes[i].value);
        if (strcmp(any, codes[i].msg) != 0)
            fail_msg("splitcore_strerror(%s) = \"%s\", want \"%s\"", codes[i].name, any, codes[i].msg);
        if (strcmp(own, codes[i].msg) != 0)
            fail_msg("own strerror(%s) = \"%s\", want \"%s\"", codes[i].name, own, codes[i].msg);
    }
}

static void test_strerror_unknown(void **state)
{
    /* just past each module's last code, each base, and values no module owns */
    static const int others[] = {1,
                                 100,
                                 MB_ERR_BASE - MB__ERR_COUNT - 1,
                                 PG_ERR_BASE,
                                 PG_ERR_BASE - PG__ERR_COUNT - 1,
                                 PP_ERR_BASE,
                                 PP_ERR_BASE - PP__ERR_COUNT - 1,
                                 DT_ERR_BASE,
                                 DT_ERR_BASE - DT__ERR_COUNT - 1,
                                 -200,
                                 -1000,
                                 -2147483647 - 1};
    size_t i;
    (void)state;
    assert_string_equal(splitcore_strerror(0), "ok");
    assert_string_equal(mb_strerror(0), "ok");
    assert_string_equal(pg_strerror(0), "ok");
    assert_string_equal(pp_strerror(0), "ok");
    assert_string_equal(dt_strerror(0), "ok");
    for (i = 0; i < sizeof others / sizeof others[0]; i++) {
        assert_string_equal(splitcore_strerror(others[i]), "not a splitcore error code");
        assert_int_equal(splitcore_err_module(others[i]), SPLITCORE_MODULE_NONE);
    }
    /* a module's strerror does not name another module's code */
    assert_string_equal(mb_strerror(PG_ERR_NULL), "unknown error");
    assert_string_equal(pg_strerror(MB_ERR_NULL), "unknown error");
    assert_string_equal(pp_strerror(DT_ERR_NULL), "unknown error");
    assert_string_equal(dt_strerror(PP_ERR_COMM), "unknown error");
    assert_string_equal(dt_strerror(-2147483647 - 1), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_distinct),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_strerror_names_every_code),
        cmocka_unit_test(test_strerror_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
