/* test_pipeline_conformance.c — the pipeline suite that bare-metal harts run
   (tests/pipeline_conformance.h: an inference plan with skips, proven without take-in, per-rank
   construction, bytes per route) over pg_shm with host threads as cores and over pg_pthread,
   4 ranks, the executor built as firmware builds it for such a plan (PP_SKIPS, PP_NO_TAKEIN). */
#define _DEFAULT_SOURCE 1 /* clock_gettime, syscall (host_threads.h) under -std=c99 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define PP_SKIPS         1
#define PP_NO_TAKEIN     1
#define PP_MAILBOX_SLOTS 4 /* messages per ordered pair on both ports below */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/host_threads.h"

#define CORES   4
#define SLOTS   8
#define PAYLOAD 1024
#define REGION  PG_SHM_REGION_BYTES(CORES, SLOTS, PAYLOAD)
static uint32_t region[REGION / 4 + 16] __attribute__((aligned(64)));
static pg_shm shm[CORES];
static pg_shm_host_bells bells;
static pg_pthread_world world;
static int (*body_fn)(pg_group *g, void *arg);
static void *body_arg;
static int results[CORES], use_shm;

static void *core(void *arg)
{
    int r = (int)(intptr_t)arg, rc;
    pg_shm_hooks h;
    pg_shm_host_hooks(&h, &bells);
    rc = pg_shm_init(&shm[r], region, REGION, r, &h);
    if (rc == 0) pg_set_timeout(pg_shm_group(&shm[r]), 5000);
    results[r] = rc < 0 ? 100000 - rc : body_fn(pg_shm_group(&shm[r]), body_arg);
    return NULL;
}
static int ppc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    pthread_t t[CORES];
    int r;
    if (!use_shm) return pg_pthread_run(&world, CORES, body, arg);
    if (pg_shm_format(region, REGION, CORES, SLOTS, PAYLOAD)) return -1;
    body_fn = body;
    body_arg = arg;
    for (r = 0; r < CORES; r++) pthread_create(&t[r], NULL, core, (void *)(intptr_t)r);
    for (r = 0; r < CORES; r++) pthread_join(t[r], NULL);
    for (r = 0; r < CORES; r++)
        if (results[r]) return results[r];
    return 0;
}
#include "pipeline_conformance.h"

int main(void)
{
    int failed = cmocka_run_group_tests_name("pipeline with skips over pg_pthread (4 ranks)", ppc_tests, NULL, NULL);
    use_shm = 1;
    return failed +
           cmocka_run_group_tests_name("pipeline with skips over pg_shm (host threads)", ppc_tests, NULL, NULL);
}
