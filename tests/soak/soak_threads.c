/* soak_threads.c — `scons soak` on the ports whose ranks are host threads: pg_pthread and
   pg_shm (ports/platform/host_threads.h), 4 ranks each, >= SOAK_MESSAGES messages and
   >= SOAK_COLLECTIVES world collectives per port (tests/soak/soak.h). Exit 0 only if every
   message and collective was intact, in order, exactly once. */
#define _DEFAULT_SOURCE 1 /* clock_gettime, syscall (host_threads.h) under -std=c99 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/host_threads.h"
#include "soak.h"

#define N 4

static uint64_t rounds, every;
static soak_stats stats[N];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int body(pg_group *g, void *arg)
{
    (void)arg;
    pg_set_timeout(g, 60000);
    soak_run(g, rounds, every, &stats[pg_rank(g)]);
    return 0;
}

static pg_pthread_world world;
#define REGION PG_SHM_REGION_BYTES(N, 8, SOAK_MAX_BYTES)
static uint32_t region[REGION / 4 + 16] __attribute__((aligned(64)));
static pg_shm shm[N];
static pg_shm_host_bells bells;

static void *shm_thread(void *arg)
{
    int r = (int)(intptr_t)arg;
    pg_shm_hooks h;
    pg_shm_host_hooks(&h, &bells);
    if (pg_shm_init(&shm[r], region, REGION, r, &h) != PG_OK) {
        stats[r].errors = 1;
        return NULL;
    }
    body(pg_shm_group(&shm[r]), NULL);
    return NULL;
}

static int report(const char *port, double t0)
{
    soak_stats sum;
    int r;
    memset(&sum, 0, sizeof sum);
    for (r = 0; r < N; r++) soak_add(&sum, &stats[r]);
    return soak_report(port, N, &sum, now_s() - t0, SOAK_MESSAGES, SOAK_COLLECTIVES);
}

int main(void)
{
    pthread_t t[N];
    int r, failed = 0;
    double t0;
    rounds = soak_rounds(N, SOAK_MESSAGES, SOAK_COLLECTIVES, &every);

    t0 = now_s();
    if (pg_pthread_run(&world, N, body, NULL) != 0) failed = 1;
    failed |= report("pg_pthread", t0);

    t0 = now_s();
    if (pg_shm_format(region, REGION, N, 8, SOAK_MAX_BYTES) != PG_OK) return 1;
    for (r = 0; r < N; r++) pthread_create(&t[r], NULL, shm_thread, (void *)(intptr_t)r);
    for (r = 0; r < N; r++) pthread_join(t[r], NULL);
    failed |= report("pg_shm", t0);
    return failed;
}
