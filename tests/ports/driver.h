/* driver.h — runs pg_shm with one hook file of ports/platform/ on host threads against a
   model of its chip, for the tests/test_port_*.c suites (splitcore tests)

   A port test defines PGD_NAME, PGD_CORES (2..4) and PGD_RAM_BYTES (a power of two >= the
   region) before including this file (after cmocka.h, pg.h and pg_shm.h), and after it:
       static void port_start(void);                  model reset, peripherals, vectors, its thread
       static void port_stop(void);                   its thread stopped, interrupts settled
       static void port_attach(int core, pg_shm_hooks *h); on the core's thread: the hook file's init
       static void *port_region(int core);            where the core sees the region (a cached view)
       static void port_quiet(int on);                no tick: a sleep ends only by a doorbell
       static uint64_t port_lost(void);               sleeps that no doorbell ended (must stay 0)
       static int port_storm_check(uint64_t notifies); after the storm: the peripheral is idle again
   and gets: pgd_run (a body on every core), pgc_run for tests/pg_conformance.h, the doorbell
   storm, pgd_fails (a run that must fail, for the cache models) and PGD_TESTS (the cmocka
   entries). The region lives in pgd_ram, formatted before the cores start (as the core that
   boots first would, before it starts the others). */
#ifndef PGD_DRIVER_H
#define PGD_DRIVER_H

#include <pthread.h>
#include <sched.h>
#include "host.h"

#define PGD_SLOTS   8
#define PGD_PAYLOAD 1024
#define PGD_REGION  PG_SHM_REGION_BYTES(PGD_CORES, PGD_SLOTS, PGD_PAYLOAD)
#ifndef PGD_PINGS
#define PGD_PINGS 2000 /* doorbells each way, one at a time */
#endif
#ifndef PGD_CLOCK_US
#define PGD_CLOCK_US 1 /* resolution of now_us */
#endif
#ifndef PGD_STORM
#define PGD_STORM 50000 /* doorbells each way, back to back */
#endif

typedef int (*pgd_body)(pg_group *g, int core, void *arg);

static void port_start(void);
static void port_stop(void);
static void port_attach(int core, pg_shm_hooks *h);
static void *port_region(int core);
static void port_quiet(int on);
static uint64_t port_lost(void);
static int port_storm_check(uint64_t notifies);

static uint32_t pgd_ram[PGD_RAM_BYTES / 4] __attribute__((aligned(PGD_RAM_BYTES)));
static pg_shm pgd_shm[PGD_CORES];
static pg_shm_hooks pgd_hooks[PGD_CORES];
static void (*pgd_mutate)(int core, pg_shm_hooks *h); /* a test's change to the hooks */
static pgd_body pgd_current;
static void *pgd_arg;
static int pgd_result[PGD_CORES];
static uint32_t pgd_timeout_ms = 5000;

typedef char pgd_region_fits[PGD_REGION <= PGD_RAM_BYTES ? 1 : -1];

static inline void *pgd_core_main(void *arg)
{
    int c = (int)(intptr_t)arg, rc;
    port_attach(c, &pgd_hooks[c]);
    if (pgd_mutate) pgd_mutate(c, &pgd_hooks[c]);
    rc = pg_shm_init(&pgd_shm[c], port_region(c), PGD_REGION, c, &pgd_hooks[c]);
    if (rc == 0) pg_set_timeout(pg_shm_group(&pgd_shm[c]), pgd_timeout_ms);
    pgd_result[c] = rc < 0 ? 100000 - rc : pgd_current(pg_shm_group(&pgd_shm[c]), c, pgd_arg);
    return NULL;
}

/* Format the region, start the model, run `body` on every core; 0 or the first failure
   (a source line, 100000 - err for an init error, 200000 for a lost wake-up). */
static inline int pgd_run(pgd_body body, void *arg)
{
    pthread_t t[PGD_CORES];
    int c, rc = pg_shm_format(pgd_ram, sizeof pgd_ram, PGD_CORES, PGD_SLOTS, PGD_PAYLOAD);
    if (rc) return rc;
    pgd_current = body;
    pgd_arg = arg;
    port_start();
    for (c = 0; c < PGD_CORES; c++) pthread_create(&t[c], NULL, pgd_core_main, (void *)(intptr_t)c);
    for (c = 0; c < PGD_CORES; c++) pthread_join(t[c], NULL);
    port_stop();
    for (c = 0; c < PGD_CORES; c++)
        if (pgd_result[c]) return pgd_result[c];
    return port_lost() ? 200000 : 0;
}

/* ---- the port conformance suite ---- */
static int (*pgd_pgc_body)(pg_group *g, void *arg);

static inline int pgd_pgc_adapter(pg_group *g, int core, void *arg)
{
    (void)core;
    return pgd_pgc_body(g, arg);
}

static inline int pgc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    pgd_pgc_body = body;
    return pgd_run(pgd_pgc_adapter, arg);
}

#include "../pg_conformance.h"

/* ---- doorbell storm ----
   Without a tick, so a wait() ends only by a doorbell and a lost one shows (port_lost()).
   1. Ping-pong, each way in turn: the waiter announces i and sleeps until it sees ring i;
      the ringer sets ring i, then rings. The ring lands before, during or after the
      waiter's masked check-then-sleep: a doorbell rung before the sleep must latch.
   2. Storm: both cores ring each other PGD_STORM times back to back (a FIFO or semaphore
      stays full or pending, notify must never block), sleeping now and then while the
      other still rings; then each says it is done, rings once more and sleeps until the
      other is done too: that last doorbell must not be lost either. Afterwards every
      doorbell interrupt has been taken and cleared (port_storm_check). */
static volatile uint32_t pgd_waiting[PGD_CORES], pgd_rung[PGD_CORES], pgd_fin[PGD_CORES];

static inline uint32_t pgd_ld(volatile uint32_t *w)
{
    return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

static inline void pgd_st(volatile uint32_t *w, uint32_t v)
{
    __atomic_store_n(w, v, __ATOMIC_RELEASE);
}

static inline int pgd_storm_body(pg_group *g, int me, void *arg)
{
    pg_shm_hooks *h = &pgd_hooks[me];
    int other = 1 - me, round;
    uint32_t i;
    (void)g;
    (void)arg;
    if (me > 1) return 0;
    for (round = 0; round < 2; round++)
        for (i = 1; i <= PGD_PINGS; i++) {
            if (me == round) {
                while (pgd_ld(&pgd_waiting[other]) < i)
                    if (port_lost()) return __LINE__; /* the other core slept through a doorbell */
                pgd_st(&pgd_rung[other], i);
                h->notify(h->ctx, other);
            } else {
                pgd_st(&pgd_waiting[me], i);
                while (pgd_ld(&pgd_rung[me]) < i) h->wait(h->ctx, me);
                if (port_lost()) return __LINE__;
            }
        }
    for (i = 0; i < PGD_STORM; i++) {
        h->notify(h->ctx, other);
        if ((i & 63u) == 0 && !pgd_ld(&pgd_fin[other])) h->wait(h->ctx, me);
        if (port_lost()) return __LINE__;
    }
    pgd_st(&pgd_fin[me], 1);
    h->notify(h->ctx, other);
    while (!pgd_ld(&pgd_fin[other]) && !port_lost()) h->wait(h->ctx, me);
    return port_lost() ? __LINE__ : 0;
}

/* Every notify the storm run makes, pg_shm_init's attach (a rendezvous that rings the
   cores) included: the doorbells the port raised may not exceed it. */
static uint64_t pgd_notifies;
static void (*pgd_notify_of[PGD_CORES])(void *ctx, int core);

/* The caller is a core whose hooks have this ctx and whose own notify is already recorded:
   ports whose cores share one ctx (rp2350's bells) would otherwise find core 0's entry
   before core 0's thread has written it (a call through NULL when core 1 attaches first). */
static void pgd_counted_notify(void *ctx, int core)
{
    void (*notify)(void *, int) = NULL;
    int c;
    for (c = 0; c < PGD_CORES && !notify; c++)
        if (pgd_hooks[c].ctx == ctx) notify = __atomic_load_n(&pgd_notify_of[c], __ATOMIC_ACQUIRE);
    __atomic_add_fetch(&pgd_notifies, 1u, __ATOMIC_RELAXED);
    notify(ctx, core);
}

static void pgd_count_notifies(int core, pg_shm_hooks *h)
{
    __atomic_store_n(&pgd_notify_of[core], h->notify, __ATOMIC_RELEASE);
    h->notify = pgd_counted_notify;
}

static inline void pgd_test_storm(void **state)
{
    int rc;
    (void)state;
    memset((void *)pgd_waiting, 0, sizeof pgd_waiting);
    memset((void *)pgd_rung, 0, sizeof pgd_rung);
    memset((void *)pgd_fin, 0, sizeof pgd_fin);
    pgd_notifies = 0;
    pgd_mutate = pgd_count_notifies;
    port_quiet(1);
    rc = pgd_run(pgd_storm_body, NULL);
    port_quiet(0);
    pgd_mutate = NULL;
    assert_int_equal(rc, 0);
    assert_int_equal((int)port_lost(), 0);
    assert_true(pgd_notifies >= 2u * (PGD_PINGS + PGD_STORM + 1u));
    assert_int_equal(port_storm_check(pgd_notifies), 0);
}

/* ---- the clock: now_us counts microseconds, also across its 32-bit wrap (the models start
   their counters just before it). Between two readings at least the time slept passed and
   at most what the host clock saw around them, to PGD_CLOCK_US. ---- */
static inline int pgd_clock_body(pg_group *g, int core, void *arg)
{
    pg_shm_hooks *h = &pgd_hooks[core];
    struct timespec ts = {0, 25000000};
    uint64_t h0 = pgh_ns() / 1000u, h1;
    uint32_t t0 = h->now_us(h->ctx), t1;
    (void)g;
    (void)arg;
    nanosleep(&ts, NULL);
    t1 = h->now_us(h->ctx);
    h1 = pgh_ns() / 1000u;
    return t1 - t0 + PGD_CLOCK_US >= 25000u && t1 - t0 <= h1 - h0 + PGD_CLOCK_US ? 0 : __LINE__;
}

static inline void pgd_test_clock(void **state)
{
    (void)state;
    assert_int_equal(pgd_run(pgd_clock_body, NULL), 0);
}

/* ---- a run that must fail (a cache model with a maintenance call taken away) ----
   The conformance suite's own p2p body, with short timeouts: stale lines show as a
   timeout, a corrupt header or wrong bytes, never as a pass. */
static inline int pgd_fails(void (*mutate)(int core, pg_shm_hooks *h))
{
    int rc;
    uint32_t keep = pgd_timeout_ms;
    pgd_mutate = mutate;
    pgd_pgc_body = pgc_p2p_body;
    pgd_timeout_ms = 500;
    rc = pgd_run(pgd_pgc_adapter, NULL) != 0;
    pgd_mutate = NULL;
    pgd_timeout_ms = keep;
    return rc;
}

/* ---- cache models: each entry takes one maintenance call away from core pgd_victim ---- */
static pg_shm_hooks pgd_orig[PGD_CORES];
static int pgd_victim;

static inline void pgd_clean_only_small(void *ctx, const void *p, size_t n)
{
    if (n <= 16) pgd_orig[pgd_victim].cache_clean(ctx, p, n); /* indices and headers, no payload */
}

static inline void pgd_clean_no_index(void *ctx, const void *p, size_t n)
{
    if (n != 4) pgd_orig[pgd_victim].cache_clean(ctx, p, n);
}

static inline void pgd_inval_no_header(void *ctx, const void *p, size_t n)
{
    if (n != 16) pgd_orig[pgd_victim].cache_invalidate(ctx, p, n);
}

static inline void pgd_inval_only_small(void *ctx, const void *p, size_t n)
{
    if (n <= 16) pgd_orig[pgd_victim].cache_invalidate(ctx, p, n);
}

static inline void pgd_take_away(int core, pg_shm_hooks *h, int which)
{
    if (core != pgd_victim) return;
    pgd_orig[core] = *h;
    switch (which) {
    case 0: h->cache_clean = NULL; break;
    case 1: h->cache_invalidate = NULL; break;
    case 2: h->cache_clean = pgd_clean_only_small; break;
    case 3: h->cache_clean = pgd_clean_no_index; break;
    case 4: h->cache_invalidate = pgd_inval_no_header; break;
    default: h->cache_invalidate = pgd_inval_only_small; break;
    }
}

#define PGD_TAKE(n)                                         \
    static inline void pgd_take_##n(int c, pg_shm_hooks *h) \
    {                                                       \
        pgd_take_away(c, h, n);                             \
    }
PGD_TAKE(0)
PGD_TAKE(1)
PGD_TAKE(2)
PGD_TAKE(3)
PGD_TAKE(4)
PGD_TAKE(5)
static const struct {
    const char *what;
    void (*mutate)(int core, pg_shm_hooks *h);
} pgd_removals[] = {
    {"no cache_clean at all", pgd_take_0},
    {"no cache_invalidate at all", pgd_take_1},
    {"payloads not cleaned (indices and headers are)", pgd_take_2},
    {"ring indices not cleaned", pgd_take_3},
    {"slot headers not invalidated", pgd_take_4},
    {"payloads not invalidated", pgd_take_5},
};

/* How the cached cores of a port test reach the region (port_attach / port_region read it). */
enum { PGD_CACHE_HOOKS, PGD_MPU, PGD_MPU_LEFT_OUT };
static int pgd_mode = PGD_CACHE_HOOKS;

/* With all maintenance the suite's p2p body passes; without any one call, on any cached
   core (bit c of `cached`), it fails. */
static inline void pgd_test_removals(int cached)
{
    size_t i;
    int core;
    pgd_mode = PGD_CACHE_HOOKS;
    pgd_pgc_body = pgc_p2p_body;
    assert_int_equal(pgd_run(pgd_pgc_adapter, NULL), 0);
    for (core = 0; core < PGD_CORES; core++)
        for (i = 0; (cached >> core & 1) && i < sizeof pgd_removals / sizeof pgd_removals[0]; i++) {
            int failed;
            pgd_victim = core;
            failed = pgd_fails(pgd_removals[i].mutate);
            print_message("core %d, %s: the suite's p2p test %s\n", core, pgd_removals[i].what,
                          failed ? "fails, as it must" : "PASSES");
            assert_true(failed);
        }
}

/* The alternative to maintenance: with the region MPU non-cacheable and no cache hooks the
   suite's p2p and all_reduce bodies pass; with the MPU call left out they fail. */
static inline void pgd_test_mpu(void **state)
{
    int rc[3];
    (void)state;
    pgd_mode = PGD_MPU;
    pgd_pgc_body = pgc_p2p_body;
    rc[0] = pgd_run(pgd_pgc_adapter, NULL);
    pgd_pgc_body = pgc_all_reduce_body;
    rc[1] = pgd_run(pgd_pgc_adapter, NULL);
    pgd_mode = PGD_MPU_LEFT_OUT;
    rc[2] = pgd_fails(NULL);
    pgd_mode = PGD_CACHE_HOOKS;
    print_message("region MPU non-cacheable, no cache hooks: p2p %d, all_reduce %d (0 = pass); MPU call left "
                  "out: p2p %s\n",
                  rc[0], rc[1], rc[2] ? "fails, as it must" : "PASSES");
    assert_int_equal(rc[0], 0);
    assert_int_equal(rc[1], 0);
    assert_true(rc[2]);
}

/* The port's own tests, then the conformance suite; the number of failures. */
static inline int pgd_main(const struct CMUnitTest *tests, size_t count)
{
    long total = 0;
    int r, failed = _cmocka_run_group_tests(PGD_NAME, tests, count, NULL, NULL);
    failed += cmocka_run_group_tests_name(PGD_NAME " conformance", pgc_tests, NULL, NULL);
    for (r = 0; r < PGD_CORES; r++) total += pgc_stress_received[r];
    print_message("%s conformance stress: %ld messages received in sequence with valid checksums\n", PGD_NAME, total);
    return failed;
}

#define PGD_SUITE(tests)                                      \
    int main(void)                                            \
    {                                                         \
        return pgd_main(tests, sizeof tests / sizeof *tests); \
    }

#endif /* PGD_DRIVER_H */
