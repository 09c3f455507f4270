/* test_pg_shm.c — pg_shm on the host, threads as cores (ports/platform/host_threads.h).
   What only pg_shm has: region layout and validation (corrupt indices and slot headers give
   PG_ERR_CORRUPT, never an out-of-bounds access — run under ASan by SConstruct), zero-copy
   slots in the peer's inbox, out-of-order tag matching, abort/recover, the collectives
   (pg.h's generic ones by default, the direct-read world ones with PG_SHM_NATIVE_COLLECTIVES:
   tests/test_pg_shm_native.c) checked against single-rank computations, and a >= 10^6-message stress with sequence
   numbers and checksums. The port-agnostic conformance suite runs on pg_shm separately. */
#define _DEFAULT_SOURCE 1 /* clock_gettime, syscall (host_threads.h) under -std=c99 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"

#ifndef PG_SHM_SUITE_CORES
#define PG_SHM_SUITE_CORES 4 /* a board with fewer cores sets its count (>= 2) */
#endif
#define CORES        PG_SHM_SUITE_CORES
#define SLOTS        8
#define PAYLOAD      1024
#define REGION_BYTES PG_SHM_REGION_BYTES(CORES, SLOTS, PAYLOAD)
#ifndef STRESS_PER_PAIR /* CORES x (CORES - 1) ordered pairs: >= 1,008,000 messages */
#define STRESS_PER_PAIR (1008000u / (CORES * (CORES - 1)))
#endif

typedef int (*body_fn)(pg_group *g, int rank);
static pg_shm_hooks hooks;

/* Where the cores are. The host uses threads (below); tests/target/riscv_smp/ and
   tests/target/sse200_smp/ define PG_SHM_SUITE_HARTS (and PG_SHM_SUITE_CORES,
   PG_SHM_SUITE_NAME) and give run_on_cores() (the cores) and the region's placement. */
#ifdef PG_SHM_SUITE_HARTS
#ifndef PG_SHM_SUITE_NAME
#define PG_SHM_SUITE_NAME "pg_shm (4 harts, bare metal)"
#endif
#define SUITE_NAME PG_SHM_SUITE_NAME
extern uint32_t suite_region[];
#define region suite_region
void run_on_cores(body_fn f, int *results);
void suite_hooks(pg_shm_hooks *h);
#else
#define SUITE_NAME "pg_shm (host threads)"
#include "ports/platform/host_threads.h"
static uint32_t region[REGION_BYTES / 4 + 16] __attribute__((aligned(64)));
static pg_shm_host_bells bells;
static body_fn current;
static int *current_results;

static void suite_hooks(pg_shm_hooks *h)
{
    pg_shm_host_hooks(h, &bells);
}
static void *thread_main(void *arg);

static void run_on_cores(body_fn f, int *results)
{
    pthread_t t[CORES];
    int i;
    current = f;
    current_results = results;
    for (i = 0; i < CORES; i++) pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
    for (i = 0; i < CORES; i++) pthread_join(t[i], NULL);
}
#endif

static pg_shm shm[CORES];

/* A failed check returns its line number from the rank body. */
#define CHECK(c)                   \
    do {                           \
        if (!(c)) return __LINE__; \
    } while (0)
#define CHECK_RC(x, want)                                                                  \
    do {                                                                                   \
        int rc_ = (x);                                                                     \
        if (rc_ != (want)) {                                                               \
            print_error("rank %d line %d: %d != %d\n", pg_rank(g), __LINE__, rc_, (want)); \
            return __LINE__;                                                               \
        }                                                                                  \
    } while (0)

/* Bodies that attach by themselves (to a region they set up) get a NULL group. */
static int self_attach;

/* Every core: attach, run the body; 0 or the failing line (100000 - err if init failed). */
static int rank_main(int r, body_fn f)
{
    pg_shm_hooks h;
    int rc;
    if (self_attach) return f(NULL, r);
    suite_hooks(&h);
    rc = pg_shm_init(&shm[r], region, REGION_BYTES, r, &h);
    if (rc == 0) pg_set_timeout(pg_shm_group(&shm[r]), 5000);
    return rc < 0 ? 100000 - rc : f(pg_shm_group(&shm[r]), r);
}

#ifndef PG_SHM_SUITE_HARTS
static void *thread_main(void *arg)
{
    int r = (int)(intptr_t)arg;
    current_results[r] = rank_main(r, current);
    return NULL;
}
#endif

static void check_results(const int *results)
{
    int i;
    for (i = 0; i < CORES; i++) {
        if (results[i]) print_error("rank %d failed at line %d\n", i, results[i]);
        assert_int_equal(results[i], 0);
    }
}

static void run_all(body_fn f)
{
    int results[CORES];
    assert_int_equal(pg_shm_format(region, REGION_BYTES, CORES, SLOTS, PAYLOAD), 0);
    run_on_cores(f, results);
    check_results(results);
}

/* Every core runs f(NULL, rank), which attaches by itself (pg_shm_init is a rendezvous of
   every core of the region, so cores attach concurrently). */
static void run_self_attaching(body_fn f)
{
    int results[CORES];
    self_attach = 1;
    run_on_cores(f, results);
    self_attach = 0;
    check_results(results);
}

/* A clock that runs 100 ms per read: a lone core's waits (for a format, for peers) end at once. */
static uint32_t fast_clock(void *ctx)
{
    static uint32_t t;
    (void)ctx;
    return t += 100000u;
}

static int body_attached(pg_group *g, int rank)
{
    CHECK(pg_rank(g) == rank && pg_size(g) == CORES && pg_max_msg(g) == PAYLOAD);
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

/* ---- region and bad input (one thread) ------------------------------------------ */
static void test_format_and_init_errors(void **state)
{
    pg_shm s;
    pg_shm_hooks h;
    (void)state;
    suite_hooks(&h);
    h.now_us = fast_clock;
    assert_int_equal(pg_shm_format(NULL, REGION_BYTES, CORES, 8, PAYLOAD), PG_ERR_NULL);
    assert_int_equal(pg_shm_format(region, REGION_BYTES - 1, CORES, 8, PAYLOAD), PG_ERR_SIZE);
    assert_int_equal(pg_shm_format(region, REGION_BYTES, CORES, 6, PAYLOAD), PG_ERR_SIZE); /* not 2^k */
    assert_int_equal(pg_shm_format(region, REGION_BYTES, CORES, 64, 8), PG_ERR_SIZE);      /* > 32 */
    assert_int_equal(pg_shm_format(region, REGION_BYTES, CORES, 8, 100), PG_ERR_SIZE);     /* % 8 */
    assert_int_equal(pg_shm_format(region, REGION_BYTES, 0, 8, PAYLOAD), PG_ERR_SIZE);
    assert_int_equal(pg_shm_format(region, REGION_BYTES, PG_SHM_MAX_CORES + 1, 1, 8), PG_ERR_SIZE);
    assert_int_equal(pg_shm_format((char *)region + 4, REGION_BYTES, CORES, 8, PAYLOAD), PG_ERR_SIZE);
    assert_int_equal(pg_shm_format(region, REGION_BYTES, CORES, 8, PAYLOAD), 0);
    assert_int_equal(pg_shm_init(&s, region, REGION_BYTES, CORES, &h), PG_ERR_RANK);
    assert_int_equal(pg_shm_init(&s, region, REGION_BYTES, -1, &h), PG_ERR_RANK);
    assert_int_equal(pg_shm_init(NULL, region, REGION_BYTES, 0, &h), PG_ERR_NULL);
    assert_int_equal(pg_shm_init(&s, region, REGION_BYTES / 2, 0, &h), PG_ERR_CORRUPT);
    /* a header that does not check (scribbled, another build's layout) is waited for like
       an unformatted region, never attached to */
    region[1] = 1000;
    assert_int_equal(pg_shm_init(&s, region, REGION_BYTES, 0, &h), PG_ERR_TIMEOUT);
    /* a lone core: the attach is a rendezvous of every core, it times out but stays usable
       (threads only: on a board a core's hooks belong to the CPU it runs on) */
    assert_int_equal(pg_shm_format(region, REGION_BYTES, CORES, 8, PAYLOAD), 0);
#ifndef PG_SHM_SUITE_HARTS
    assert_int_equal(pg_shm_init(&s, region, REGION_BYTES, CORES - 1, &h), PG_ERR_TIMEOUT);
    assert_int_equal(pg_rank(pg_shm_group(&s)), CORES - 1);
#endif
    run_all(body_attached);
}

/* Two cores driven from one thread: core 0 sends, then the test scribbles what core 1
   reads. They attach on two cores (a rendezvous, which sleeps in the board's wait: a core
   spinning on the clock alone can starve a sleeping one under QEMU's -icount). */
static pg_shm c0, c1;
static pg_shm_hooks two_hooks;
static int body_attach_two(pg_group *g, int rank)
{
    (void)g;
    if (rank < 2) CHECK(pg_shm_init(rank ? &c1 : &c0, region, PG_SHM_REGION_BYTES(2, 4, 64), rank, &two_hooks) == 0);
    return 0;
}

static void two_cores(void)
{
    suite_hooks(&hooks);
    two_hooks = hooks; /* the attach may sleep; the tests' calls below are try-once */
    assert_int_equal(pg_shm_format(region, PG_SHM_REGION_BYTES(2, 4, 64), 2, 4, 64), 0);
    run_self_attaching(body_attach_two);
}

/* words of ring[src][dst] in the 2-core, 4-slot, 64-byte layout */
static volatile uint32_t *ring_words(int src, int dst)
{
    size_t ring = PG_SHM_RING_BYTES(4, 64) / 4, rings = PG_SHM_REGION_BYTES(2, 4, 64) / 4 - 4 * ring; /* last */
    return (volatile uint32_t *)region + rings + (size_t)(src * 2 + dst) * ring;
}

static volatile uint32_t *slot_words(int src, int dst, int k)
{
    return ring_words(src, dst) + (2 * PG_SHM_LINE + 4 * PG_SHM_SLOT_BYTES(64)) / 4 +
           (size_t)k * 4; /* headers packed after the payloads */
}

static void test_corrupt_indices_and_headers(void **state)
{
    const pg_ops *ops = pg_shm_ops();
    char buf[64], msg[64];
    size_t got = 0;
    int i;
    uint32_t save;
    (void)state;
    memset(msg, 0x5A, sizeof msg);
    two_cores();
    assert_int_equal(ops->send(&c0, 1, 7, msg, 64, 0), 0);

    /* write index far ahead of the read index */
    save = ring_words(0, 1)[0];
    ring_words(0, 1)[0] = 0x7FFFFFF0u;
    assert_int_equal(ops->recv(&c1, 0, 7, buf, sizeof buf, &got, 0), PG_ERR_CORRUPT);
    assert_int_equal(ops->probe(&c1, 0, 7, &got), PG_ERR_CORRUPT);
    ring_words(0, 1)[0] = save;

    /* slot header: length beyond the slot, wrong index, wrong check word */
    for (i = 0; i < 3; i++) {
        volatile uint32_t *w = slot_words(0, 1, 0);
        uint32_t keep = w[i == 0 ? 2 : i == 1 ? 0 : 3];
        if (i == 0) w[2] = 0xFFFFFF00u;
        if (i == 1) w[0] = 3;
        if (i == 2) w[3] ^= 1u;
        assert_int_equal(ops->recv(&c1, 0, 7, buf, sizeof buf, &got, 0), PG_ERR_CORRUPT);
        w[i == 0 ? 2 : i == 1 ? 0 : 3] = keep;
    }
    /* restored: the message is intact */
    assert_int_equal(ops->recv(&c1, 0, 7, buf, sizeof buf, &got, 0), 0);
    assert_int_equal((int)got, 64);
    assert_memory_equal(buf, msg, 64);

    /* the read index (peer-written for the sender) beyond the write index */
    ring_words(0, 1)[PG_SHM_LINE / 4] = 0x40000000u;
    for (i = 0; i < 5; i++) {
        int rc = ops->send(&c0, 1, 7, msg, 8, 0);
        if (rc) {
            assert_int_equal(rc, PG_ERR_CORRUPT);
            break;
        }
    }
    assert_true(i < 5);
}

static void test_bad_input(void **state)
{
    const pg_ops *ops = pg_shm_ops();
    char buf[128];
    size_t got = 0;
    void *p = NULL;
    const void *cp = NULL;
    (void)state;
    two_cores();
    assert_int_equal(ops->send(&c0, 2, 1, buf, 8, 0), PG_ERR_RANK);
    assert_int_equal(ops->send(&c0, -1, 1, buf, 8, 0), PG_ERR_RANK);
    assert_int_equal(ops->send(&c0, 1, 0x80000001u, buf, 8, 0), PG_ERR_TAG);
    assert_int_equal(ops->send(&c0, 1, 1, NULL, 8, 0), PG_ERR_NULL);
    assert_int_equal(ops->send(&c0, 1, 1, buf, 65, 0), PG_ERR_TOO_BIG);
    assert_int_equal(ops->recv(&c1, 0, 1, buf, 8, &got, 0), PG_ERR_TIMEOUT);
    assert_int_equal(ops->recv(&c1, 5, 1, buf, 8, &got, 0), PG_ERR_RANK);
    /* a message larger than the receive buffer is consumed and reported */
    memset(buf, 1, sizeof buf);
    assert_int_equal(ops->send(&c0, 1, 1, buf, 32, 0), 0);
    assert_int_equal(ops->recv(&c1, 0, 1, buf, 16, &got, 0), PG_ERR_TOO_BIG);
    assert_int_equal((int)got, 32);
    assert_int_equal(ops->probe(&c1, 0, 1, &got), 0);
    /* ring full: a try-once send times out, the group stays usable */
    assert_int_equal(ops->send(&c0, 1, 2, buf, 8, 0), 0);
    assert_int_equal(ops->send(&c0, 1, 2, buf, 8, 0), 0);
    assert_int_equal(ops->send(&c0, 1, 2, buf, 8, 0), 0);
    assert_int_equal(ops->send(&c0, 1, 2, buf, 8, 0), 0);
    assert_int_equal(ops->send(&c0, 1, 2, buf, 8, 0), PG_ERR_TIMEOUT);
    assert_int_equal(ops->recv(&c1, 0, 2, buf, 8, &got, 0), 0);
    assert_int_equal(ops->send(&c0, 1, 2, buf, 8, 0), 0);
    /* slots: bad pointers, double acquire, release of something never peeked */
    assert_int_equal(ops->slot_commit(&c0, 1, 3, buf, 8), PG_ERR_NO_SLOT);
    assert_int_equal(ops->slot_release(&c1, 0, buf), PG_ERR_NO_SLOT);
    assert_int_equal(ops->slot_acquire(&c0, 1, 65, &p, 0), PG_ERR_TOO_BIG);
    assert_int_equal(ops->recv(&c1, 0, 2, buf, 8, &got, 0), 0);
    assert_int_equal(ops->slot_acquire(&c0, 1, 64, &p, 0), 0);
    assert_int_equal(ops->slot_acquire(&c0, 1, 64, &p, 0), PG_ERR_NO_SLOT);
    assert_int_equal(ops->slot_commit(&c0, 1, 3, (char *)p + 4, 8), PG_ERR_NO_SLOT);
    assert_int_equal(ops->slot_commit(&c0, 1, 3, p, 65), PG_ERR_TOO_BIG);
    memcpy(p, "zero-copy", 10);
    assert_int_equal(ops->slot_commit(&c0, 1, 3, p, 10), 0);
    assert_int_equal(ops->slot_peek(&c1, 0, 3, &cp, &got, 0), 0);
    assert_int_equal((int)got, 10);
    assert_string_equal((const char *)cp, "zero-copy");
    assert_int_equal(ops->slot_release(&c1, 0, (const char *)cp + 1), PG_ERR_NO_SLOT);
    assert_int_equal(ops->slot_release(&c1, 0, cp), 0);
    assert_int_equal(ops->slot_release(&c1, 0, cp), PG_ERR_NO_SLOT);
}

/* ---- threads as cores ------------------------------------------------------------ */
static int body_p2p(pg_group *g, int rank)
{
    int n = pg_size(g), peer, i;
    uint32_t out[64], in[64];
    size_t got;
    /* every rank sends tags 3,2,1 to every other rank; receives them as 1,2,3 */
    for (peer = 0; peer < n; peer++) {
        if (peer == rank) continue;
        for (i = 3; i >= 1; i--) {
            int k;
            for (k = 0; k < 64; k++) out[k] = (uint32_t)(rank * 1000 + peer * 10 + i + k);
            CHECK_RC(pg_send(g, peer, i, out, (size_t)i * 32), 0);
        }
    }
    for (peer = 0; peer < n; peer++) {
        if (peer == rank) continue;
        for (i = 1; i <= 3; i++) {
            CHECK_RC(pg_recv(g, peer, i, in, sizeof in, &got), 0);
            CHECK(got == (size_t)i * 32);
            CHECK(in[0] == (uint32_t)(peer * 1000 + rank * 10 + i) && in[i * 8 - 1] == in[0] + (uint32_t)i * 8 - 1);
        }
    }
    /* timeout then still usable */
    CHECK_RC(pg_recv_timeout(g, (rank + 1) % n, 9, in, sizeof in, &got, 20), PG_ERR_TIMEOUT);
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

static void test_p2p_tags_out_of_order(void **state)
{
    (void)state;
    run_all(body_p2p);
}

static int body_slots(pg_group *g, int rank)
{
    int n = pg_size(g), next = (rank + 1) % n, prev = (rank + n - 1) % n, r;
    for (r = 0; r < 50; r++) {
        void *p;
        const void *a, *b;
        size_t got;
        CHECK_RC(pg_slot_acquire(g, next, 256, &p), 0);
        memset(p, rank + r, 256);
        CHECK_RC(pg_slot_commit(g, next, 5, p, 256), 0);
        CHECK_RC(pg_slot_acquire(g, next, 16, &p), 0);
        memset(p, 0xEE, 16);
        CHECK_RC(pg_slot_commit(g, next, 6, p, 16), 0);
        /* two peeked at once, released in the other order */
        CHECK_RC(pg_slot_peek(g, prev, 6, &b, &got), 0);
        CHECK(got == 16 && ((const unsigned char *)b)[15] == 0xEE);
        CHECK_RC(pg_slot_peek(g, prev, 5, &a, &got), 0);
        CHECK(got == 256 && ((const unsigned char *)a)[255] == (unsigned char)(prev + r));
        CHECK_RC(pg_slot_release(g, prev, a), 0);
        CHECK_RC(pg_slot_release(g, prev, b), 0);
    }
    return 0;
}

static void test_zero_copy_slots(void **state)
{
    (void)state;
    run_all(body_slots);
}

/* Collectives, checked against what one rank computes alone from every rank's input. */
static float input(int rank, size_t i)
{
    return (float)((int)(i % 13) - 6) * 0.5f + (float)rank;
}

static int body_collectives(pg_group *g, int rank)
{
    enum { N = 1000 };
    static float x[CORES][N], y[CORES][N], all[CORES][CORES * N];
    static int32_t ix[CORES][N];
    int n = pg_size(g), r, op;
    size_t i;
    for (op = PG_SUM; op <= PG_MIN; op++) {
        for (i = 0; i < N; i++) x[rank][i] = input(rank, i);
        CHECK_RC(pg_all_reduce(g, x[rank], y[rank], N, MB_F32, (pg_red)op), 0);
        for (i = 0; i < N; i++) {
            float want = input(0, i);
            for (r = 1; r < n; r++) {
                float v = input(r, i);
                if (op == PG_SUM || op == PG_AVG) want += v;
                if (op == PG_MAX) want = v > want ? v : want;
                if (op == PG_MIN) want = v < want ? v : want;
            }
            if (op == PG_AVG) want /= (float)n;
            CHECK(y[rank][i] == want);
        }
        /* in place */
        CHECK_RC(pg_all_reduce(g, x[rank], x[rank], N, MB_F32, (pg_red)op), 0);
        CHECK(memcmp(x[rank], y[rank], sizeof x[rank]) == 0);
    }
    for (i = 0; i < N; i++) ix[rank][i] = (int32_t)(rank + 1) * (int32_t)i;
    CHECK_RC(pg_all_reduce(g, ix[rank], ix[rank], N, MB_I32, PG_PROD), 0);
    for (i = 0; i < N; i++) {
        int32_t want = 1;
        for (r = 0; r < n; r++) want = (int32_t)((uint32_t)want * (uint32_t)((r + 1) * (int)i));
        CHECK(ix[rank][i] == want);
    }
    for (i = 0; i < N; i++) x[rank][i] = input(rank, i);
    CHECK_RC(pg_all_gather(g, x[rank], all[rank], N, MB_F32), 0);
    for (r = 0; r < n; r++)
        for (i = 0; i < N; i++) CHECK(all[rank][(size_t)r * N + i] == input(r, i));
    for (r = 0; r < n; r++) {
        for (i = 0; i < N; i++) x[rank][i] = rank == r ? input(r, i) : -1.0f;
        CHECK_RC(pg_broadcast(g, x[rank], N, MB_F32, r), 0);
        for (i = 0; i < N; i++) CHECK(x[rank][i] == input(r, i));
    }
    /* a mismatch is seen by every core at once and the group goes on with no recover: both
       the native check and pg.h's ring agreement fail every core before any data moves */
    CHECK_RC(pg_all_reduce(g, x[rank], y[rank], rank == 0 ? 5 : 4, MB_F32, PG_SUM), PG_ERR_MISMATCH);
    CHECK_RC(pg_barrier(g), 0);
    /* a sub-group (ranks 3 and 1 of 4, 1 and 0 of 2) uses pg.h's generic collectives over
       the rings */
    {
        pg_group sub;
        int members[2] = {CORES - 1, CORES / 2 - 1};
        int rc = pg_subgroup_init(&sub, g, members, 2);
        if (rank != members[0] && rank != members[1]) {
            CHECK(rc == PG_ERR_NOT_MEMBER);
        } else {
            CHECK_RC(rc, 0);
            for (i = 0; i < N; i++) x[rank][i] = input(rank, i);
            CHECK_RC(pg_all_reduce(&sub, x[rank], y[rank], N, MB_F32, PG_SUM), 0);
            for (i = 0; i < N; i++) CHECK(y[rank][i] == input(members[0], i) + input(members[1], i));
            CHECK_RC(pg_all_gather(&sub, x[rank], all[rank], N, MB_F32), 0);
            for (i = 0; i < N; i++)
                CHECK(all[rank][i] == input(members[0], i) && all[rank][N + i] == input(members[1], i));
        }
    }
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

static void test_collectives_match_single_rank(void **state)
{
    (void)state;
    run_all(body_collectives);
}

/* Small collectives, every size around the native build's inline limit (PG_SHM_INLINE:
   one meeting, the data in the cores' buffers) and beyond it (reads in place), uneven and
   empty blocks, every root, in place, interleaved so buffers are reused at every epoch
   parity and a broadcast's root (which waits for nobody) runs ahead; each result against
   what one core computes from every core's input. */
static float small_in(int rank, size_t i, int salt)
{
    return (float)((int)((i * 5u + (size_t)salt) % 9u) - 4) + (float)rank * 0.5f;
}

static int body_small_collectives(pg_group *g, int rank)
{
    enum { L = PG_SHM_INLINE / 4 > 2 ? PG_SHM_INLINE / 4 : 2, MAXE = L + 16 }; /* L floats: the inline limit */
    static float x[CORES][MAXE * CORES], y[CORES][MAXE * CORES];
    /* 14 floats fill a buffer's epoch line, 15 start on the next; 28 gives gatherv blocks
       of 14..17: cores whose payloads sit in either place in the same meeting */
    static const size_t lens[] = {0, 1, 2, 7, 14, 15, 16, 28, L - 1, L, L + 1};
    size_t counts[CORES], li, i, total, at;
    int r, round, op, root;
    for (round = 0; round < 2; round++)
        for (li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            size_t n = lens[li];
            for (op = PG_SUM; op <= PG_MIN; op++) { /* all_reduce, in place every other time */
                for (i = 0; i < n; i++) x[rank][i] = small_in(rank, i, op);
                CHECK_RC(pg_all_reduce(g, x[rank], (op & 1) ? x[rank] : y[rank], n, MB_F32, (pg_red)op), 0);
                for (i = 0; i < n; i++) {
                    float want = small_in(0, i, op), got = (op & 1) ? x[rank][i] : y[rank][i];
                    for (r = 1; r < CORES; r++) {
                        float v = small_in(r, i, op);
                        want = op == PG_MAX ? (v > want ? v : want) : op == PG_MIN ? (v < want ? v : want) : want + v;
                    }
                    if (op == PG_AVG) want /= (float)CORES;
                    CHECK(got == want);
                }
            }
            for (root = 0; root < CORES; root++) { /* broadcasts back to back: the root runs ahead */
                for (i = 0; i < n; i++) x[rank][i] = rank == root ? small_in(root, i, 7) : -1.0f;
                CHECK_RC(pg_broadcast(g, x[rank], n, MB_F32, root), 0);
                for (i = 0; i < n; i++) CHECK(x[rank][i] == small_in(root, i, 7));
            }
            /* all_gatherv with uneven blocks (one empty), then reduce_scatterv over the same */
            for (r = 0, total = 0; r < CORES; r++)
                total += counts[r] = (r + (int)round) % CORES == 1 ? 0 : n / 2 + (size_t)r;
            for (r = 0, at = 0; r < rank; r++) at += counts[r];
            for (i = 0; i < counts[rank]; i++) x[rank][i] = small_in(rank, i, 3);
            CHECK_RC(pg_all_gatherv(g, x[rank], y[rank], counts, MB_F32), 0);
            for (r = 0, at = 0; r < CORES; at += counts[r], r++)
                for (i = 0; i < counts[r]; i++) CHECK(y[rank][at + i] == small_in(r, i, 3));
            for (i = 0; i < total; i++) x[rank][i] = small_in(rank, i, 4);
            CHECK_RC(pg_reduce_scatterv(g, x[rank], y[rank], counts, MB_F32, PG_SUM), 0);
            for (r = 0, at = 0; r < rank; r++) at += counts[r];
            for (i = 0; i < counts[rank]; i++) {
                float want = small_in(0, at + i, 4);
                for (r = 1; r < CORES; r++) want += small_in(r, at + i, 4);
                CHECK(y[rank][i] == want);
            }
            CHECK_RC(pg_barrier(g), 0);
        }
    /* disagreements: every core sees them, then recovers */
    CHECK_RC(pg_all_reduce(g, x[rank], y[rank], rank == 1 ? 3 : 4, MB_F32, PG_SUM), PG_ERR_MISMATCH);
    CHECK_RC(pg_all_reduce(g, x[rank], y[rank], 4, rank == 1 ? MB_I32 : MB_F32, PG_SUM), PG_ERR_MISMATCH);
    for (r = 0; r < CORES; r++) counts[r] = 2 + (rank == 0 && r == CORES - 1);
    CHECK_RC(pg_reduce_scatterv(g, x[rank], y[rank], counts, MB_F32, PG_SUM), PG_ERR_MISMATCH);
    CHECK_RC(pg_recover(g), 0);
    CHECK_RC(pg_all_reduce(g, x[rank], y[rank], 4, MB_F32, PG_SUM), 0);
    return 0;
}

static void test_small_collectives(void **state)
{
    (void)state;
    run_all(body_small_collectives);
}

#if PG_SHM_NATIVE_COLLECTIVES
/* A peer's epoch word out of the window a meeting accepts is corrupt shared memory: core 0
   scribbles core 1's next epoch word; the others' barrier says PG_ERR_CORRUPT (core 1 enters
   it only when they are done, and finds them all there), and the world recovers. */
static int body_corrupt_epoch(pg_group *g, int rank)
{
    pg_shm *s = (pg_shm *)g->port;
    size_t got;
    int r;
    CHECK_RC(pg_barrier(g), 0);
    if (rank == 0) {
        for (r = 1; r < CORES; r++) CHECK_RC(pg_recv(g, r, 4, &got, 0, &got), 0); /* all past the barrier */
        __atomic_store_n(s->area + (size_t)(2 * 1 + (int)((s->epoch + 1u) & 1u)) * (PG_SHM__BUF_BYTES / 4),
                         s->epoch + 100u, __ATOMIC_RELEASE);
    } else {
        CHECK_RC(pg_send(g, 0, 4, &got, 0), 0);
    }
    if (rank == 1)
        for (r = 0; r < CORES; r++) CHECK_RC(r == 1 ? 0 : pg_recv(g, r, 5, &got, 0, &got), 0);
    CHECK_RC(pg_barrier(g), rank == 1 ? 0 : PG_ERR_CORRUPT);
    if (rank != 1) CHECK_RC(pg_send(g, 1, 5, &got, 0), 0);
    CHECK_RC(pg_recover(g), 0);
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

static void test_corrupt_epoch_word(void **state)
{
    (void)state;
    run_all(body_corrupt_epoch);
}
#endif

static int body_abort(pg_group *g, int rank)
{
    char buf[8];
    size_t got;
    int round;
    for (round = 0; round < 2; round++) {
        if (rank == 1) {
            CHECK_RC(pg_abort(g, -99), 0);
        } else {
            /* blocked on a message that never comes: aborted, not timed out */
            CHECK_RC(pg_recv_timeout(g, (rank + CORES / 2) % CORES, 4, buf, sizeof buf, &got, 4000), PG_ERR_ABORTED);
        }
        CHECK_RC(pg_send(g, (rank + 1) % CORES, 1, buf, 4), PG_ERR_ABORTED);
        CHECK_RC(pg_recover(g), 0);
        CHECK_RC(pg_barrier(g), 0);
        CHECK_RC(pg_send(g, (rank + 1) % CORES, 1, "ok!", 4), 0);
        CHECK_RC(pg_recv(g, (rank + CORES - 1) % CORES, 1, buf, sizeof buf, &got), 0);
        CHECK(got == 4 && strcmp(buf, "ok!") == 0);
        CHECK_RC(pg_barrier(g), 0);
    }
    return 0;
}

static void test_abort_and_recover(void **state)
{
    (void)state;
    run_all(body_abort);
}

/* Stress: every ordered pair streams messages with a sequence number, a random length and
   a checksum; receivers check order, content and count. CORES x (CORES - 1) pairs x
   STRESS_PER_PAIR (4 cores: 12 x 84000, 2 cores: 2 x 504000; >= 10^6). */
static uint32_t stress_received[CORES];

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

/* ---- the region's lifecycle: boots, stale contents, a core that restarts ------------- */
/* A run step every core takes, checked against what one core computes alone: a message
   around the ring (step, sender, a checksum), a small all_reduce (inline in the native
   build) and, every fifth step, a large one (the direct-read path). */
enum { LC_SMALL = 20, LC_LARGE = 2000 };
static float lc_x[CORES][LC_LARGE], lc_y[CORES][LC_LARGE];

static float lc_input(int rank, uint32_t step, size_t i)
{
    return (float)((int)((step * 7u + (uint32_t)i) % 11u) - 5) + (float)rank * 0.25f;
}

/* The step's message from `rank` to the next core. */
static int lc_send(pg_group *g, int rank, uint32_t step)
{
    uint32_t out[4];
    out[0] = step;
    out[1] = (uint32_t)rank;
    out[2] = mix(step ^ (uint32_t)rank << 20);
    out[3] = out[0] ^ out[1] ^ out[2];
    return pg_send(g, (rank + 1) % CORES, 3, out, sizeof out);
}

/* 0, a pg error (the caller decides), or 1000000 + line for a wrong result. */
static int lc_step(pg_group *g, int rank, uint32_t step)
{
    uint32_t in[4];
    size_t got = 0, i, n = step % 5 ? LC_SMALL : LC_LARGE;
    int r, rc, prev = (rank + CORES - 1) % CORES;
    if ((rc = lc_send(g, rank, step)) != 0) return rc;
    if ((rc = pg_recv(g, prev, 3, in, sizeof in, &got)) != 0) return rc;
    if (got != sizeof in || in[0] != step || in[1] != (uint32_t)prev || in[2] != mix(step ^ (uint32_t)prev << 20) ||
        in[3] != (in[0] ^ in[1] ^ in[2]))
        return 1000000 + __LINE__;
    for (i = 0; i < n; i++) lc_x[rank][i] = lc_input(rank, step, i);
    if ((rc = pg_all_reduce(g, lc_x[rank], lc_y[rank], n, MB_F32, PG_SUM)) != 0) return rc;
    for (i = 0; i < n; i++) {
        float want = lc_input(0, step, i);
        for (r = 1; r < CORES; r++) want += lc_input(r, step, i);
        if (lc_y[rank][i] != want) return 1000000 + __LINE__;
    }
    return 0;
}

/* Previous boots: what a region may hold when the cores start again. */
static int lc_formatted; /* set by core 0 right after it formats */

static int body_old_boot(pg_group *g, int rank)
{
    uint32_t stale[4] = {0xDEAD, 0xBEEF, 1, 2}, step;
    for (step = 1; step <= 6; step++) CHECK_RC(lc_step(g, rank, step), 0);
    /* left behind: a message in every inbox, epochs and recover counters moved on */
    CHECK_RC(pg_recover(g), 0);
    CHECK_RC(pg_barrier(g), 0);
    CHECK_RC(pg_send(g, (rank + 1) % CORES, 9, stale, sizeof stale), 0);
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

/* The new boot: core 0 formats late (after the others started attaching); every core's
   attach must end after the format, and nothing of the old boot shows. */
static int body_new_boot(pg_group *unused, int rank)
{
    pg_shm_hooks h;
    pg_group *g;
    size_t got;
    uint32_t step, t0;
    int peer, rc;
    (void)unused;
    suite_hooks(&h);
    memset(&shm[rank], 0xA5, sizeof shm[rank]); /* core-local RAM is fresh too */
    if (rank == 0) {
        t0 = h.now_us ? h.now_us(h.ctx) : 0;
        while (h.now_us && h.now_us(h.ctx) - t0 < 20000u) {} /* the others start first */
        CHECK(pg_shm_format(region, REGION_BYTES, CORES, SLOTS, PAYLOAD) == 0);
        __atomic_store_n(&lc_formatted, 1, __ATOMIC_RELEASE);
    }
    rc = pg_shm_init(&shm[rank], region, REGION_BYTES, rank, &h);
    if (rc) print_error("rank %d: pg_shm_init %d\n", rank, rc);
    CHECK(rc == 0);
    CHECK(__atomic_load_n(&lc_formatted, __ATOMIC_ACQUIRE) == 1); /* never attached before the format */
    g = pg_shm_group(&shm[rank]);
    pg_set_timeout(g, 5000);
    for (peer = 0; peer < CORES; peer++) CHECK_RC(pg_probe(g, peer, 9, &got), 0); /* no stale message */
    for (step = 1; step <= 6; step++) CHECK_RC(lc_step(g, rank, step), 0);
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

static void test_stale_region_never_trusted(void **state)
{
    uint32_t kind, i;
    (void)state;
    for (kind = 0; kind < 4; kind++) {
        if (kind == 0) run_all(body_old_boot); /* a previous boot's live region, every core was in it */
        if (kind == 1)                         /* random memory (power-on) */
            for (i = 0; i < REGION_BYTES / 4; i++) region[i] = mix(i * 2654435761u + 17u);
        if (kind == 2) { /* random memory with the magic word in place */
            region[0] = PG_SHM__MAGIC;
            for (i = 1; i < REGION_BYTES / 4; i++) region[i] = mix(i + 99u);
        }
        if (kind == 3) { /* an old generation, then scribbled control lines */
            run_all(body_old_boot);
            for (i = PG_SHM_LINE / 4; i < (1 + CORES) * (PG_SHM_LINE / 4); i++) region[i] = mix(i);
        }
        lc_formatted = 0;
        run_self_attaching(body_new_boot);
    }
}

/* Start-up code that zeroes the region after the format (the region placed in .bss, a core
   that boots late): cores attached before see PG_ERR_CORRUPT when they wait (core 0 wipes
   once every other core told it that it is past the barrier), a core that attaches now
   waits for a format and times out; after a new format all is well. */
static int body_wiped(pg_group *g, int rank)
{
    size_t got, i;
    int peer;
    CHECK_RC(pg_barrier(g), 0);
    if (rank) {
        CHECK_RC(pg_send(g, 0, 4, &got, 0), 0);
    } else {
        for (peer = 1; peer < CORES; peer++) CHECK_RC(pg_recv(g, peer, 4, &got, 0, &got), 0);
        for (i = 0; i < REGION_BYTES / 4; i++) /* word by word: the others read it meanwhile */
            __atomic_store_n(&region[i], 0u, __ATOMIC_RELAXED);
    }
    CHECK_RC(pg_recv(g, (rank + 1) % CORES, 5, &got, sizeof got, &got), PG_ERR_CORRUPT);
    return 0;
}

static void test_region_zeroed_after_format(void **state)
{
    pg_shm s;
    pg_shm_hooks h;
    (void)state;
    run_all(body_wiped);
    suite_hooks(&h);
    h.now_us = fast_clock;
    assert_int_equal(pg_shm_init(&s, region, REGION_BYTES, 1, &h), PG_ERR_TIMEOUT);
    run_all(body_attached);
}

/* A core restarts mid-run: its stack is abandoned wherever it is (between calls, with a
   message sent and not received, with a slot acquired and not committed, or inside a
   wait of pg_shm itself, through its wait hook), its pg_shm state is overwritten, and it
   calls pg_shm_init again as its reset vector would. The others get PG_ERR_PEER_RESET for
   what they had in flight (and no other error, no wrong result), call pg_recover, agree on
   the step to resume from (the lowest any core has not finished) and finish the run; every
   step's results are checked against a single-core computation. RESTART_RUNS runs in a row,
   a victim and a moment picked per run. */
#ifndef RESTART_RUNS
#define RESTART_RUNS 20
#endif
#define RESTART_STEPS 30
static jmp_buf restart_jmp;
static int restart_victim, restart_in_wait, restart_resets[CORES];
static uint32_t restart_step, restart_phase;
static pg_shm_hooks restart_base;

static void restart_wait(void *ctx, int self)
{
    if (self == restart_victim && __atomic_load_n(&restart_in_wait, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&restart_in_wait, 0, __ATOMIC_RELEASE);
        longjmp(restart_jmp, 1); /* the reset: out of whatever pg_shm was waiting for */
    }
    if (restart_base.wait) restart_base.wait(ctx, self);
}

/* After PG_ERR_PEER_RESET: recover (a restarted core's pg_shm_init did), then agree on the
   step every core resumes at. */
static int restart_resync(pg_group *g, uint32_t *step, int recovered)
{
    int32_t next = (int32_t)*step;
    int rc;
    for (;;) {
        while (!recovered && (rc = pg_recover(g)) == PG_ERR_TIMEOUT) {}
        if (!recovered && rc) return rc;
        rc = pg_all_reduce(g, &next, &next, 1, MB_I32, PG_MIN);
        if (rc == 0) break;
        if (rc != PG_ERR_PEER_RESET) return rc;
        recovered = 0;
    }
    *step = (uint32_t)next;
    return 0;
}

static int body_restart(pg_group *world, int rank)
{
    pg_group *volatile g = world; /* set again after a restart (longjmp) */
    volatile uint32_t step = 1, life = 0;
    pg_shm_hooks h;
    void *slot;
    int rc;
    if (rank != restart_victim) {
    } else if (setjmp(restart_jmp) != 0) { /* restarted */
        life++;
        memset(&shm[rank], 0x5A, sizeof shm[rank]);
        h = restart_base;
        h.wait = restart_wait;
        rc = pg_shm_init(&shm[rank], region, REGION_BYTES, rank, &h);
        CHECK(rc == 0);
        g = pg_shm_group(&shm[rank]);
        pg_set_timeout(g, 5000);
        step = 0x7FFFFFFF; /* lost: the others know */
        CHECK_RC(restart_resync(g, (uint32_t *)&step, 1), 0);
    }
    if (rank == restart_victim && !life) { shm[rank].hooks.wait = restart_wait; }
    while (step <= RESTART_STEPS) {
        if (rank == restart_victim && !life && step == restart_step) {
            if (restart_phase == 0) longjmp(restart_jmp, 1);
            if (restart_phase == 1) {
                CHECK_RC(lc_send(g, rank, step), 0);
                longjmp(restart_jmp, 1);
            }
            if (restart_phase == 2) {
                CHECK_RC(pg_slot_acquire(g, (rank + 1) % CORES, 64, &slot), 0);
                memset(slot, 0xEE, 64);
                longjmp(restart_jmp, 1);
            }
            __atomic_store_n(&restart_in_wait, 1, __ATOMIC_RELEASE); /* phase 3: in the next wait */
        }
        rc = lc_step(g, rank, step);
        if (rc == PG_ERR_PEER_RESET) {
            restart_resets[rank]++;
            CHECK_RC(restart_resync(g, (uint32_t *)&step, 0), 0);
            continue;
        }
        CHECK_RC(rc, 0);
        if (rank == restart_victim && !life && __atomic_load_n(&restart_in_wait, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&restart_in_wait, 0, __ATOMIC_RELEASE); /* it never waited: restart here */
            longjmp(restart_jmp, 1);
        }
        step++;
    }
    CHECK(rank != restart_victim || life == 1);
    CHECK_RC(pg_barrier(g), 0);
    return 0;
}

static void test_restart_mid_run(void **state)
{
    uint32_t run, seed = 12345u;
    int r;
    (void)state;
    suite_hooks(&restart_base);
    for (run = 0; run < RESTART_RUNS; run++) {
        seed = mix(seed + run);
        restart_victim = (int)(seed % CORES);
        restart_step = 2u + (seed >> 8) % (RESTART_STEPS - 4u);
        restart_phase = (seed >> 16) % 4u;
        memset(restart_resets, 0, sizeof restart_resets);
        run_all(body_restart);
        for (r = 0; r < CORES; r++)
            if (r != restart_victim) assert_true(restart_resets[r] >= 1); /* every peer was told */
    }
    print_message("restart: %d runs, a core restarted mid-run in each, peers got PG_ERR_PEER_RESET, "
                  "recovered and finished with every step checked\n",
                  RESTART_RUNS);
}

static int body_stress(pg_group *g, int rank)
{
    uint32_t msg[PAYLOAD / 4], seq_out[CORES] = {0}, seq_in[CORES] = {0}, total = 0;
    int n = pg_size(g), peer, k;
    size_t got;
    while (seq_in[(rank + 1) % n] < STRESS_PER_PAIR) {
        for (peer = 0; peer < n; peer++) { /* a burst of 4 to each peer */
            if (peer == rank) continue;
            for (k = 0; k < 4 && seq_out[peer] < STRESS_PER_PAIR; k++) {
                uint32_t s = seq_out[peer]++, len = 2 + mix(s ^ (uint32_t)rank << 24) % (PAYLOAD / 4 - 2), i, sum = 0;
                msg[0] = s;
                for (i = 2; i < len; i++) {
                    msg[i] = mix(s * 31u + i + (uint32_t)peer);
                    sum += msg[i];
                }
                msg[1] = sum;
                CHECK_RC(pg_send(g, peer, 0, msg, len * 4u), 0);
            }
        }
        for (peer = 0; peer < n; peer++) {
            if (peer == rank) continue;
            for (k = 0; k < 4 && seq_in[peer] < STRESS_PER_PAIR; k++) {
                uint32_t i, sum = 0;
                CHECK_RC(pg_recv(g, peer, 0, msg, sizeof msg, &got), 0);
                CHECK(msg[0] == seq_in[peer]); /* nothing lost, duplicated or reordered */
                for (i = 2; i < got / 4; i++) sum += msg[i];
                CHECK(sum == msg[1] && got == 4u * (2 + mix(msg[0] ^ (uint32_t)peer << 24) % (PAYLOAD / 4 - 2)));
                seq_in[peer]++;
                total++;
            }
        }
    }
    for (peer = 0; peer < n; peer++) CHECK(peer == rank || seq_in[peer] == STRESS_PER_PAIR);
    CHECK_RC(pg_probe(g, (rank + 1) % n, 0, &got), 0); /* nothing extra */
    stress_received[rank] = total;
    return 0;
}

static void test_stress_million_messages(void **state)
{
    uint32_t total = 0;
    int r;
    (void)state;
    run_all(body_stress);
    for (r = 0; r < CORES; r++) total += stress_received[r];
    print_message("stress: %u messages received, checked in order with checksums\n", (unsigned)total);
    assert_int_equal(total, STRESS_PER_PAIR * CORES * (CORES - 1));
#ifndef STRESS_SMALL
    assert_true(total >= 1000000u);
#endif
}

/* ---- the port-agnostic conformance suite (tests/pg_conformance.h) over pg_shm ----
   Always built (host threads and the harts of tests/target/riscv_smp); -DPG_SHM_NO_CONFORMANCE
   leaves it out.
   pgc_test_mismatch passes in both configs: pg.h's ring collectives agree on their
   arguments over all ranks first, so every core sees a count mismatch. */
#if !defined(PG_SHM_NO_CONFORMANCE) || defined(PG_SHM_SUITE_DTENSOR) || defined(PG_SHM_SUITE_PIPELINE)
static int (*pgc_body)(pg_group *g, void *arg);
static void *pgc_arg;

static int pgc_adapter(pg_group *g, int rank)
{
    (void)rank;
    return pgc_body(g, pgc_arg);
}

static int pgc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    int results[CORES], i;
    int rc = pg_shm_format(region, REGION_BYTES, CORES, SLOTS, PAYLOAD);
    if (rc) return rc;
    pgc_body = body;
    pgc_arg = arg;
    run_on_cores(pgc_adapter, results);
    for (i = 0; i < CORES; i++)
        if (results[i]) return results[i];
    return 0;
}

#endif
#ifndef PG_SHM_NO_CONFORMANCE
#ifndef PGC_MAX_RANKS
#define PGC_MAX_RANKS CORES /* its per-rank buffers: for this world only */
#endif
#include "pg_conformance.h"
#endif

/* ---- dtensor.h's execution suite (tests/dtensor_conformance.h) over pg_shm ----
   -DPG_SHM_SUITE_DTENSOR runs it instead of the suites above (SConstruct's dtensor_smp4
   firmware: the 4 harts of tests/target/riscv_smp). */
#ifdef PG_SHM_SUITE_DTENSOR
#ifndef DTC_RANKS
#define DTC_RANKS CORES
#endif
#define MICROBATCH_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"
#define dtc_run pgc_run
#include "dtensor_conformance.h"
#endif

/* ---- the pipeline executor's suite with skips (tests/pipeline_conformance.h) over pg_shm ----
   -DPG_SHM_SUITE_PIPELINE runs it instead (SConstruct's pipeline_smp4 firmware), the executor
   built as firmware builds it for an inference plan with skips. */
#ifdef PG_SHM_SUITE_PIPELINE
#define PP_SKIPS         1
#define PP_NO_TAKEIN     1
#define PP_MAILBOX_SLOTS SLOTS
#define MICROBATCH_IMPLEMENTATION
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define ppc_run pgc_run
#include "pipeline_conformance.h"
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_and_init_errors),
        cmocka_unit_test(test_corrupt_indices_and_headers),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_p2p_tags_out_of_order),
        cmocka_unit_test(test_zero_copy_slots),
        cmocka_unit_test(test_collectives_match_single_rank),
        cmocka_unit_test(test_small_collectives),
#if PG_SHM_NATIVE_COLLECTIVES
        cmocka_unit_test(test_corrupt_epoch_word),
#endif
        cmocka_unit_test(test_abort_and_recover),
        cmocka_unit_test(test_stale_region_never_trusted),
        cmocka_unit_test(test_region_zeroed_after_format),
        cmocka_unit_test(test_restart_mid_run),
        cmocka_unit_test(test_stress_million_messages),
    };
#ifdef PG_SHM_SUITE_DTENSOR
    (void)tests; /* this image runs the dtensor suite only */
    return cmocka_run_group_tests_name("dtensor over " SUITE_NAME, dtc_tests, NULL, NULL);
#endif
#ifdef PG_SHM_SUITE_PIPELINE
    (void)tests; /* this image runs the pipeline suite only */
    return cmocka_run_group_tests_name("pipeline with skips over " SUITE_NAME, ppc_tests, NULL, NULL);
#endif
    int failed = cmocka_run_group_tests_name(SUITE_NAME, tests, NULL, NULL);
#ifndef PG_SHM_NO_CONFORMANCE
    long total = 0;
    int r;
    failed += cmocka_run_group_tests_name(SUITE_NAME " conformance", pgc_tests, NULL, NULL);
    for (r = 0; r < CORES; r++) total += pgc_stress_received[r];
    print_message("pg_shm conformance stress: %ld messages received in sequence with valid checksums\n", total);
#endif
    return failed;
}
