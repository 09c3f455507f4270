/* test_pg_pthread.c — the pg.h conformance suite over pg_pthread.h, 4 ranks = 4 threads */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#define PG_IMPLEMENTATION
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"

#define PGT_RANKS 4
static pg_pthread_world pgt_world;

static int pgc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    return pg_pthread_run(&pgt_world, PGT_RANKS, body, arg);
}

#include "pg_conformance.h"

int main(void)
{
    long total = 0;
    int r, failed = cmocka_run_group_tests_name("pg_pthread (4 ranks)", pgc_tests, NULL, NULL);
    for (r = 0; r < PGT_RANKS; r++) total += pgc_stress_received[r];
    printf("pg_pthread stress: %ld messages received in sequence with valid checksums (expected %ld)\n", total,
           PGT_RANKS * pgc_stress_per_rank(PGT_RANKS));
    return failed;
}
