/* bench/p2p/main.c — `scons bench`: point-to-point between two threads, splitcore's ports
   beside their peers, all measured in the same run:
     ours:  pg_shm (ports/pg_shm.h over ports/platform/host_threads.h: SPSC rings + futex
            doorbell) and pg_pthread (ports/pg_pthread.h), both through pg_send/pg_recv;
     peers: Concurrency Kit's ck_ring SPSC (Debian libck-dev; a ring of pointers into a
            buffer pool, payload copied in and out, busy-polling) and a mutex + condition
            variable bounded queue (payload copied in and out).
   Every transport buffers 16 messages per direction (ck_ring 15: a ring of 16 entries holds
   15; before, its ring of 32 held 31 against pg_shm's 16), and every one copies the payload
   in on the sending side and out on the receiving side (pg_shm: pg_send/pg_recv into and
   out of its ring slots; ck_ring: into and out of its pool buffers). Cases: ping-pong one-way latency of
   an 8-byte message (round trip / 2) and streaming throughput of 64 B and 4 KB messages
   (one direction, the receiver acknowledges the last one). Each figure is the median of
   REPEATS runs; the transports take turns run by run. The two threads are pinned to CPUs 0 and 1 when the machine has two.
   Prints one JSON row per (ours, case, peer) in DESIGN.md's format; no assertions. The
   issue's targets (pg_shm latency <= 1.2x ck_ring, throughput >= 0.9x) are printed as
   plain lines beside. Without <ck_ring.h> the ck_ring rows are left out, with one SKIPPED
   line that the report lists among the peers not measured. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/platform/host_threads.h"
#define PG_PTHREAD_SLOTS      16
#define PG_PTHREAD_SLOT_BYTES 4096
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"

/* HAVE_CK comes from the build's probe for <ck_ring.h> (libck-dev), run afresh by every scons
   invocation: installing the package later changes the define, so the bench is rebuilt with it. */
#ifndef HAVE_CK
#define HAVE_CK 0
#endif
#if HAVE_CK
#include <ck_pr.h>
#include <ck_ring.h>
#endif

#define DEPTH     16 /* messages in flight per direction, every transport */
#define MAX_MSG   4096
#define REPEATS   7
#define PINGPONGS 20000
#define LAT_BYTES 8

/* ---- the transports: send to / receive from the other thread ---- */
typedef struct transport {
    const char *name;
    void (*setup)(void);    /* before the threads start */
    void (*attach)(int me); /* on each thread */
    int (*send)(int me, const void *buf, size_t n);
    int (*recv)(int me, void *buf, size_t n);
} transport;

/* pg_shm: 2 cores, DEPTH slots of MAX_MSG per ring */
#define SHM_BYTES PG_SHM_REGION_BYTES(2, DEPTH, MAX_MSG)
static uint32_t shm_region[SHM_BYTES / 4] __attribute__((aligned(64)));
static pg_shm_host_bells shm_bells;
static pg_shm shm_core[2];

static void shm_setup(void)
{
    pg_shm_format(shm_region, SHM_BYTES, 2, DEPTH, MAX_MSG);
}
static void shm_attach(int me)
{
    pg_shm_hooks h;
    pg_shm_host_hooks(&h, &shm_bells);
    if (pg_shm_init(&shm_core[me], shm_region, SHM_BYTES, me, &h) != 0) fprintf(stderr, "pg_shm_init failed\n");
}
static int shm_send(int me, const void *b, size_t n)
{
    return pg_send(pg_shm_group(&shm_core[me]), 1 - me, 0, b, n);
}
static int shm_recv(int me, void *b, size_t n)
{
    return pg_recv(pg_shm_group(&shm_core[me]), 1 - me, 0, b, n, NULL);
}

/* pg_pthread: a world of 2 */
static pg_pthread_world pt_world;
static void pt_setup(void)
{
    pg_pthread_world_init(&pt_world, 2);
}
static void pt_attach(int me)
{
    (void)me;
}
static int pt_send(int me, const void *b, size_t n)
{
    return pg_send(pg_pthread_group(&pt_world, me), 1 - me, 0, b, n);
}
static int pt_recv(int me, void *b, size_t n)
{
    return pg_recv(pg_pthread_group(&pt_world, me), 1 - me, 0, b, n, NULL);
}

/* mutex + condvar bounded queue per direction */
typedef struct mq {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    unsigned head, tail;
    size_t len[DEPTH];
    unsigned char slot[DEPTH][MAX_MSG];
} mq;
static mq mq_dir[2]; /* mq_dir[d]: from thread d to thread 1 - d */

static void mq_setup(void)
{
    int d;
    for (d = 0; d < 2; d++) {
        pthread_mutex_init(&mq_dir[d].lock, NULL);
        pthread_cond_init(&mq_dir[d].not_empty, NULL);
        pthread_cond_init(&mq_dir[d].not_full, NULL);
        mq_dir[d].head = mq_dir[d].tail = 0;
    }
}
static void mq_attach(int me)
{
    (void)me;
}
static int mq_send(int me, const void *b, size_t n)
{
    mq *q = &mq_dir[me];
    pthread_mutex_lock(&q->lock);
    while (q->head - q->tail == DEPTH) pthread_cond_wait(&q->not_full, &q->lock);
    memcpy(q->slot[q->head % DEPTH], b, n);
    q->len[q->head % DEPTH] = n;
    q->head++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
    return 0;
}
static int mq_recv(int me, void *b, size_t n)
{
    mq *q = &mq_dir[1 - me];
    pthread_mutex_lock(&q->lock);
    while (q->head == q->tail) pthread_cond_wait(&q->not_empty, &q->lock);
    memcpy(b, q->slot[q->tail % DEPTH], n < q->len[q->tail % DEPTH] ? n : q->len[q->tail % DEPTH]);
    q->tail++;
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

#if HAVE_CK
/* ck_ring SPSC of pointers (a ring of DEPTH entries holds DEPTH - 1 messages, the nearest
   ck_ring gets to DEPTH: its size is a power of two and one entry stays empty) into a pool
   of 4 * DEPTH buffers: a buffer is reused only after the consumer has taken at least
   3 * DEPTH later ones, so it has finished copying it out. */
typedef struct ckq {
    ck_ring_t ring;
    ck_ring_buffer_t buf[DEPTH];
    unsigned next;
    size_t len[4 * DEPTH];
    unsigned char pool[4 * DEPTH][MAX_MSG];
} ckq;
static ckq ck_dir[2];

static void ck_setup(void)
{
    int d;
    for (d = 0; d < 2; d++) {
        ck_ring_init(&ck_dir[d].ring, DEPTH);
        ck_dir[d].next = 0;
    }
}
static void ck_attach(int me)
{
    (void)me;
}
static int ck_send(int me, const void *b, size_t n)
{
    ckq *q = &ck_dir[me];
    unsigned k = q->next++ % (4 * DEPTH);
    memcpy(q->pool[k], b, n);
    q->len[k] = n;
    while (!ck_ring_enqueue_spsc(&q->ring, q->buf, q->pool[k])) ck_pr_stall();
    return 0;
}
static int ck_recv(int me, void *b, size_t n)
{
    ckq *q = &ck_dir[1 - me];
    unsigned char *p;
    size_t k, len;
    while (!ck_ring_dequeue_spsc(&q->ring, q->buf, &p)) ck_pr_stall();
    k = (size_t)(p - q->pool[0]) / MAX_MSG;
    len = q->len[k];
    memcpy(b, p, n < len ? n : len);
    return 0;
}
#endif

enum { T_SHM, T_PTHREAD, T_CK, T_MQ, NT };
static const transport transports[NT] = {
    {"pg_shm", shm_setup, shm_attach, shm_send, shm_recv},
    {"pg_pthread", pt_setup, pt_attach, pt_send, pt_recv},
#if HAVE_CK
    {"ck_ring", ck_setup, ck_attach, ck_send, ck_recv},
#else
    {NULL, NULL, NULL, NULL, NULL},
#endif
    {"mutex+condvar queue", mq_setup, mq_attach, mq_send, mq_recv},
};

/* ---- the cases ---- */
enum { C_LAT, C_S64, C_S4K, NC };
static const char *const case_names[NC] = {"ping-pong 8B", "stream 64B", "stream 4KB"};
static const size_t stream_bytes[NC] = {LAT_BYTES, 64, 4096};
static const long stream_msgs[NC] = {PINGPONGS, 200000, 40000};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return CPU_COUNT(&set);
}

static const transport *cur;
static int cur_case, failures;
static double cur_result;
static pthread_barrier_t start;

static void *side(void *arg)
{
    int me = (int)(intptr_t)arg, rc = 0;
    unsigned char buf[MAX_MSG];
    size_t bytes = stream_bytes[cur_case];
    long i, n = stream_msgs[cur_case];
    double t0;
    memset(buf, me + 1, sizeof buf);
    if (cpus() >= 2) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(me, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    cur->attach(me);
    pthread_barrier_wait(&start);
    t0 = now_ns();
    if (cur_case == C_LAT) {
        for (i = 0; i < n && rc == 0; i++) {
            if (me == 0) {
                rc = cur->send(me, buf, bytes);
                if (rc == 0) rc = cur->recv(me, buf, bytes);
            } else {
                rc = cur->recv(me, buf, bytes);
                if (rc == 0) rc = cur->send(me, buf, bytes);
            }
        }
        if (me == 0) cur_result = (now_ns() - t0) / (2.0 * (double)n); /* one-way ns */
    } else {
        for (i = 0; i < n && rc == 0; i++) rc = me == 0 ? cur->send(me, buf, bytes) : cur->recv(me, buf, bytes);
        if (rc == 0) rc = me == 0 ? cur->recv(me, buf, 1) : cur->send(me, buf, 1);           /* ack */
        if (me == 0) cur_result = (double)n * (double)bytes / ((now_ns() - t0) / 1e9) / 1e6; /* MB/s */
    }
    if (rc) {
        fprintf(stderr, "%s %s: error %d (%s)\n", cur->name, case_names[cur_case], rc, pg_strerror(rc));
        failures++;
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One run of case c over transport t; its figure. */
static double run_once(const transport *t, int c)
{
    pthread_t th[2];
    int i;
    cur = t;
    cur_case = c;
    t->setup();
    pthread_barrier_init(&start, NULL, 2);
    for (i = 0; i < 2; i++) pthread_create(&th[i], NULL, side, (void *)(intptr_t)i);
    for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    return cur_result;
}

/* v[t][c] = median over REPEATS runs; the transports take turns run by run, so a burst of
   load from elsewhere hits ours and the peers alike. */
static void measure_all(double v[][NC])
{
    double r[NT][REPEATS];
    int t, c, k;
    for (c = 0; c < NC; c++) {
        for (k = 0; k < REPEATS; k++)
            for (t = 0; t < NT; t++)
                if (transports[t].name) r[t][k] = run_once(&transports[t], c);
        for (t = 0; t < NT; t++) {
            v[t][c] = -1.0;
            if (!transports[t].name) continue;
            qsort(r[t], REPEATS, sizeof r[t][0], cmp_double);
            v[t][c] = r[t][REPEATS / 2];
        }
    }
}

static void row(const char *ours, int c, double v, const char *peer, double pv)
{
    printf("{\"bench\": \"p2p\", \"case\": \"%s %s\", \"metric\": \"%s\", \"unit\": \"%s\", \"ours\": %.1f, "
           "\"peer\": \"%s\", \"peer_value\": %.1f}\n",
           ours, case_names[c], c == C_LAT ? "one_way_latency_ns" : "throughput_MBps", c == C_LAT ? "ns" : "MB/s", v,
           peer, pv);
}

int main(void)
{
    double v[NT][NC];
    int c, ours, p;
    measure_all(v);
    if (!transports[T_CK].name)
        printf("SKIPPED: ck_ring peer not measured: <ck_ring.h> not found (apt-get install libck-dev)\n");
    for (ours = T_SHM; ours <= T_PTHREAD; ours++)
        for (c = 0; c < NC; c++)
            for (p = T_CK; p <= T_MQ; p++)
                if (transports[p].name) row(transports[ours].name, c, v[ours][c], transports[p].name, v[p][c]);
    if (transports[T_CK].name)
        for (c = 0; c < NC; c++)
            printf("target: pg_shm %s = %.2fx ck_ring (issue target: %s)\n", case_names[c],
                   c == C_LAT ? v[T_SHM][c] / v[T_CK][c] : v[T_SHM][c] / v[T_CK][c],
                   c == C_LAT ? "latency <= 1.2x" : "throughput >= 0.9x");
    printf("cpus: %d\n", cpus());
    return failures ? 1 : 0;
}
