/* test_dtensor.c — dtensor.h's execution suite (tests/dtensor_conformance.h) over
   pg_pthread.h: 4 ranks = 4 threads, on a 1-D mesh of 4 and a 2x2 mesh (-DDTC_RANKS=2: the
   suite's 2-rank form, as the two Cortex-M33 cores of tests/target/sse200_smp run it). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"

static pg_pthread_world dtt_world;
static int dtc_run(int (*body)(pg_group *g, void *arg), void *arg);

#include "dtensor_conformance.h"

static int dtc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    return pg_pthread_run(&dtt_world, DTC_RANKS, body, arg);
}

/* Argument errors are rank-local (dtensor.h section 8, "collective-unsafe"): rank 0's scratch
   is one byte short, so it returns DT_ERR_TOO_SMALL without sending, and the other ranks'
   gather returns DT_ERR_COMM with PG_ERR_TIMEOUT after the group's timeout (not a hang);
   after pg_recover on every rank the same call with enough scratch works. */
static int dtt_local_error_body(pg_group *g, void *arg)
{
    static const dt_placement S1[1] = {DT_SHARD(1)};
    static const int32_t shape[2] = {13, 3};
    int me = dtc_me(g), rc;
    dt_spec s1;
    mb_tensor G, in1, full;
    size_t need;
    (void)arg;
    DTC_SUB(dtc_setup(g, 1));
    DTC_OK(dt_spec_init(&s1, &dtc_mesh[me], S1, 1, MB_F32, 2, shape, 0));
    dtc_fill(dtc_glob[me], 13, 3, 1, 0, &G);
    DTC_SUB(dtc_local(&s1, &G, dtc_in[me], &in1));
    DTC_OK(mb_tensor_init(&full, dtc_out[me], MB_F32, 2, shape));
    DTC_OK(dt_full_tensor_scratch_query(&dtc_comm[me], &s1, &in1, &full, &need));
    DTC_CHECK(need > 0);
    DTC_OK(pg_set_timeout(g, 200));
    rc = dt_full_tensor(&dtc_comm[me], 0, &s1, &in1, &full, dtc_scr[me], me ? need : need - 1);
    if (me == 0)
        DTC_CHECK(rc == DT_ERR_TOO_SMALL);
    else
        DTC_CHECK(rc == DT_ERR_COMM && dtc_comm[me].err == PG_ERR_TIMEOUT);
    DTC_OK(pg_set_timeout(g, 5000)); /* pg_recover waits for every rank this long */
    DTC_OK(pg_recover(g));
    DTC_OK(dt_full_tensor(&dtc_comm[me], 0, &s1, &in1, &full, dtc_scr[me], need));
    DTC_CHECK(dtc_equal(&full, &G));
    return 0;
}

static void dtt_test_local_error(void **state)
{
    (void)state;
    assert_int_equal(dtc_run(dtt_local_error_body, 0), 0);
}

#define DTT_STR(x)  #x
#define DTT_NAME(n) "dtensor over pg_pthread (" DTT_STR(n) " ranks)"

int main(void)
{
    static const struct CMUnitTest local[] = {cmocka_unit_test(dtt_test_local_error)};
    int rc = cmocka_run_group_tests_name(DTT_NAME(DTC_RANKS), dtc_tests, NULL, NULL);
    return rc + cmocka_run_group_tests_name("dtensor: rank-local argument errors", local, NULL, NULL);
}
