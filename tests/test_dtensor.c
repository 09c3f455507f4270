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

#define DTT_STR(x)  #x
#define DTT_NAME(n) "dtensor over pg_pthread (" DTT_STR(n) " ranks)"

int main(void)
{
    return cmocka_run_group_tests_name(DTT_NAME(DTC_RANKS), dtc_tests, NULL, NULL);
}
