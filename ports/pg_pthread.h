/* pg_pthread.h — splitcore process-group port: ranks are threads of one process

   Implements the pg.h contract (pg_ops) for N threads sharing one address space: one
   mailbox of PG_PTHREAD_SLOTS slots per ordered pair of ranks (mutex-protected slot
   states, payload copied or written in place through zero-copy slots), waiting by
   spin, yield, then sleep on a per-rank doorbell counter (a condvar only once spinning
   failed; a peer that sleeps is woken, one that spins pays no syscall), timeouts from
   CLOCK_MONOTONIC, a world-wide abort flag. Native collectives for the world group: small
   ones (<= PG_PTHREAD_SMALL bytes of input per rank) stage their input in the world and
   meet once; larger ones read peers' buffers directly (publish pointers, barrier, each
   rank reduces/copies its share, barrier). Sub-groups use pg.h's generic algorithms over
   the mailboxes. All state lives in one pg_pthread_world the caller places (static
   storage); no heap.

   Example:
       #define PG_IMPLEMENTATION
       #define PG_PTHREAD_IMPLEMENTATION
       #include <splitcore/ports/pg_pthread.h>
       static pg_pthread_world world;
       static int body(pg_group *g, void *arg) {
           int32_t v = pg_rank(g) + 1;  (void)arg;
           int rc = pg_all_reduce(g, &v, &v, 1, MB_I32, PG_SUM);
           return rc < 0 ? rc : (v == 10 ? 0 : -1);
       }
       int main(void) { return pg_pthread_run(&world, 4, body, NULL) != 0; }

   Contents:
       1. Configuration   2. Types and API   3. Implementation (PG_PTHREAD_IMPLEMENTATION)

   Configuration:
       PG_PTHREAD_IMPLEMENTATION  emit the definitions (exactly one .c file, which also
                                  defines PG_IMPLEMENTATION)
       PG_PTHREAD_STATIC          make every function static
       PG_PTHREAD_MAX_RANKS       capacity of a world (default 8)
       PG_PTHREAD_SLOTS           mailbox slots per ordered pair (default 4)
       PG_PTHREAD_SLOT_BYTES      bytes per slot = the port's max_msg (default 16384)
       PG_PTHREAD_SPIN_NS         a wait spins (pause hint) this long before yielding, then
                                  sleeping (default 20000 ns; none when ranks outnumber the
                                  CPUs the process may run on: its affinity mask with
                                  _GNU_SOURCE on Linux, else the online CPUs; pg_pthread_world_init
                                  decides)
       PG_PTHREAD_YIELD_NS        then it calls sched_yield() until this long after it began,
                                  then sleeps (default 10000000 ns, as libgomp's threads spin
                                  for milliseconds before they sleep: a rank that finished
                                  its share a few ms before its peer leaves the barrier in
                                  ~2 us instead of ~70 us of wake-up; a hundredth when ranks
                                  outnumber those CPUs)
       PG_PTHREAD_SMALL           collectives whose per-rank input is at most this many bytes
                                  copy it into the world and meet once (default 16384; the
                                  world holds 2 x PG_PTHREAD_MAX_RANKS such buffers)
   Needs POSIX (clock_gettime, sched_yield): this header defines _POSIX_C_SOURCE when
   included first; otherwise define it (>= 200112L) before any system header. Errors are
   pg.h's enum pg_err. */
#ifndef PG_PTHREAD_H
#define PG_PTHREAD_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "pg.h"
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(PG_PTHREAD_IMPLEMENTATION)
#define PG_PTHREAD_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(PG_PTHREAD_STATIC)
#define PG_PTHREAD_STATIC
#endif
#include <pthread.h>

#ifndef PG_PTHREAD_MAX_RANKS
#define PG_PTHREAD_MAX_RANKS 8
#endif
#ifndef PG_PTHREAD_SLOTS
#define PG_PTHREAD_SLOTS 4
#endif
#ifndef PG_PTHREAD_SLOT_BYTES
#define PG_PTHREAD_SLOT_BYTES 16384
#endif
#ifndef PG_PTHREAD_SMALL
#define PG_PTHREAD_SMALL 16384
#endif
#ifndef PG_PTHREAD_SPIN_NS
#define PG_PTHREAD_SPIN_NS 20000
#endif
#ifndef PG_PTHREAD_YIELD_NS
#define PG_PTHREAD_YIELD_NS 10000000
#endif
#ifdef PG_PTHREAD_STATIC
#define PG_PTHREAD_API static
#else
#define PG_PTHREAD_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pg_pthread_slot {
    uint64_t data[PG_PTHREAD_SLOT_BYTES / 8]; /* first: 64-byte aligned in the box */
    uint64_t seq;                             /* deposit order (FIFO per pair and tag) */
    size_t bytes;
    uint32_t tag;
    uint32_t state; /* 0 free, 1 acquired, 2 full, 3 peeked */
} pg_pthread_slot;

typedef struct pg_pthread_box { /* messages src -> dst */
    pg_pthread_slot slot[PG_PTHREAD_SLOTS];
    pthread_mutex_t mu;
    uint64_t next_seq;
} pg_pthread_box;

struct pg_pthread_world;
typedef struct pg_pthread_rank {
    struct pg_pthread_world *w;
    int rank;
} pg_pthread_rank;

#if defined(__GNUC__) || defined(__clang__)
#define PG_PTHREAD__LINE __attribute__((aligned(64)))
#else
#define PG_PTHREAD__LINE
#endif

/* A native collective's arguments as a rank publishes them. */
typedef struct pg_pthread_args {
    const void *send;
    void *recv;
    uint64_t counts; /* hash of the per-rank counts */
    size_t count;
    int32_t dt, op, root, kind;
} pg_pthread_args;

/* The per-rank state the native collectives publish, by the parity of the barrier epoch:
   a collective's arguments and the epoch reached share one cache line (on 64-bit hosts),
   so the line a peer spins on also brings the arguments; ranks share no line. */
typedef struct pg_pthread_half {
    pg_pthread_args a;        /* arguments of the collective meeting at it */
    volatile uint64_t arrive; /* latest barrier epoch reached of this parity */
} PG_PTHREAD__LINE pg_pthread_half;

typedef struct pg_pthread_pub {
    pg_pthread_half h[2];            /* [epoch & 1] */
    uint64_t epoch PG_PTHREAD__LINE; /* own barrier epoch (written by its rank only) */
} PG_PTHREAD__LINE pg_pthread_pub;

/* The world: static storage, used in place. Do not copy it: its groups and ranks point into
   it (a copied group is refused with PG_ERR_COPIED). */
typedef struct pg_pthread_world {
    pg_pthread_box box[PG_PTHREAD_MAX_RANKS][PG_PTHREAD_MAX_RANKS]; /* [src][dst] */
    pg_pthread_pub pub[PG_PTHREAD_MAX_RANKS] PG_PTHREAD__LINE;
    uint64_t small[2][PG_PTHREAD_MAX_RANKS][PG_PTHREAD_SMALL / 8];          /* small collectives' inputs, by parity */
    volatile uint32_t bell[PG_PTHREAD_MAX_RANKS * 16] PG_PTHREAD__LINE;     /* rank r's at [r * 16] */
    volatile uint32_t sleepers[PG_PTHREAD_MAX_RANKS * 16] PG_PTHREAD__LINE; /* rank r asleep */
    pthread_mutex_t sleep_mu[PG_PTHREAD_MAX_RANKS];
    pthread_cond_t sleep_cv[PG_PTHREAD_MAX_RANKS];
    volatile int32_t aborted;
    volatile int32_t abort_err;
    volatile uint32_t recover_count, recover_gen;
    int32_t size;
    uint32_t spin_ns;  /* PG_PTHREAD_SPIN_NS, or 0 when ranks outnumber the CPUs */
    uint32_t yield_ns; /* PG_PTHREAD_YIELD_NS, or 1/100 of it then */
    pg_pthread_rank ctx[PG_PTHREAD_MAX_RANKS];
    pg_group group[PG_PTHREAD_MAX_RANKS];
    /* pg_pthread_run's bookkeeping */
    pthread_t thread[PG_PTHREAD_MAX_RANKS];
    int (*fn)(pg_group *g, void *arg);
    void *arg;
    int rc[PG_PTHREAD_MAX_RANKS];
    int initialized;
} pg_pthread_world;

/* The port's vtable (for ports that wrap this one). */
PG_PTHREAD_API const pg_ops *pg_pthread_ops(void);
/* Reset `w` for `n` ranks (1..PG_PTHREAD_MAX_RANKS): empty mailboxes, no abort. */
PG_PTHREAD_API int pg_pthread_world_init(pg_pthread_world *w, int n);
/* The world group of `rank` (storage inside w; valid until the next init). */
PG_PTHREAD_API pg_group *pg_pthread_group(pg_pthread_world *w, int rank);
/* Init w for n ranks, run fn(group of rank r, arg) on n threads, join them. Returns the
   first nonzero result in rank order (0 if all returned 0), or a pg_err if a thread
   could not be started. */
PG_PTHREAD_API int pg_pthread_run(pg_pthread_world *w, int n, int (*fn)(pg_group *g, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* PG_PTHREAD_H */

#if defined(PG_PTHREAD_IMPLEMENTATION) && !defined(PG_PTHREAD_IMPLEMENTED)
#define PG_PTHREAD_IMPLEMENTED
#if !defined(PG_IMPLEMENTATION) && (defined(PG_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error "pg_pthread.h: PG_PTHREAD_IMPLEMENTATION needs PG_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PG_PTHREAD_STATIC
#define PG_PTHREAD__DEF static
#else
#define PG_PTHREAD__DEF
#endif

#define PG_PTHREAD__LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define PG_PTHREAD__STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static void pg_pthread__wake(pg_pthread_world *w, int r);
static void pg_pthread__ring(pg_pthread_world *w, int r)
{
    __atomic_add_fetch(&w->bell[r * 16], 1u, __ATOMIC_SEQ_CST);
    pg_pthread__wake(w, r);
}

/* A wait in progress. Three phases, so a peer running on another CPU answers within
   microseconds, a peer preempted by other load gets the CPU back soon, and a long wait
   costs no CPU: (1) spin with a pause hint until w->spin_ns after the wait began,
   (2) sched_yield() between checks until w->yield_ns (a peer queued on this CPU runs;
   on a busy machine a sleeping rank would wait for the scheduler to wake it, a yielding
   one stays runnable, as MPI's progress loops do; with a CPU per rank this lasts 10 ms,
   as libgomp's spin does: peers a few ms apart, common when the host slows one vCPU,
   then meet in microseconds, not a sleeper's ~70 us wake-up), (3) sleep on the rank's
   condvar, at most 2 ms per sleep (so timeouts and progress without a doorbell are still
   seen). The clock starts at the first unsuccessful check: a wait that succeeds at once
   reads none. */
typedef struct pg_pthread__wait {
    uint64_t start; /* ns at the first wait, 0 before */
    uint32_t timeout;
} pg_pthread__wait;

static uint64_t pg_pthread__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pg_pthread__wait_init(pg_pthread__wait *wt, uint32_t timeout_ms)
{
    wt->timeout = timeout_ms;
    wt->start = 0;
}

#if defined(__x86_64__) || defined(__i386__)
#define PG_PTHREAD__PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
#define PG_PTHREAD__PAUSE() __asm__ __volatile__("yield" ::: "memory")
#else
#define PG_PTHREAD__PAUSE() ((void)0)
#endif

/* Wait until rank me's doorbell differs from `seen`, or *until >= target when until is
   not NULL (a peer's barrier epoch: it rings only ranks that sleep), or a short while
   passed: PG_OK to check again, or ABORTED / TIMEOUT. */
static int pg_pthread__wait_bell(pg_pthread_world *w, int me, uint32_t seen, pg_pthread__wait *wt,
                                 const volatile uint64_t *until, uint64_t target)
{
    const volatile uint32_t *bell = &w->bell[me * 16];
    struct timespec ts;
    uint64_t now;
    int i;
    if (PG_PTHREAD__LOAD(&w->aborted)) return PG_ERR_ABORTED;
    if (wt->timeout == 0) return PG_ERR_TIMEOUT;
    now = pg_pthread__now_ns();
    if (!wt->start) wt->start = now;
    while (now - wt->start < w->spin_ns) { /* 1. spin */
        for (i = 0; i < 32; i++) {
            if (PG_PTHREAD__LOAD(bell) != seen || (until && PG_PTHREAD__LOAD(until) >= target)) return PG_OK;
            PG_PTHREAD__PAUSE();
        }
        now = pg_pthread__now_ns();
    }
    if (wt->timeout != PG_WAIT_FOREVER && now - wt->start >= (uint64_t)wt->timeout * 1000000u) return PG_ERR_TIMEOUT;
    if (now - wt->start < w->yield_ns) { /* 2. let a peer queued on this CPU run */
        sched_yield();
        return PG_OK;
    }
    clock_gettime(CLOCK_REALTIME, &ts); /* 3. sleep until rung, at most 2 ms */
    ts.tv_nsec += 2000000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->sleep_mu[me]);
    __atomic_add_fetch(&w->sleepers[me * 16], 1u, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(bell, __ATOMIC_SEQ_CST) == seen && !PG_PTHREAD__LOAD(&w->aborted) &&
        !(until && __atomic_load_n(until, __ATOMIC_SEQ_CST) >= target))
        pthread_cond_timedwait(&w->sleep_cv[me], &w->sleep_mu[me], &ts);
    __atomic_sub_fetch(&w->sleepers[me * 16], 1u, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&w->sleep_mu[me]);
    return PG_OK;
}

static pg_pthread_box *pg_pthread__box(pg_pthread_world *w, int src, int dst)
{
    return &w->box[src][dst];
}

/* Reserve a free slot in src->dst (waits); returns its index or < 0. */
static int pg_pthread__reserve(pg_pthread_rank *me, int dst, uint32_t timeout_ms)
{
    pg_pthread_world *w = me->w;
    pg_pthread_box *b;
    pg_pthread__wait wt;
    int i, rc;
    if (dst < 0 || dst >= w->size) return PG_ERR_RANK;
    b = pg_pthread__box(w, me->rank, dst);
    pg_pthread__wait_init(&wt, timeout_ms);
    for (;;) {
        uint32_t bell = PG_PTHREAD__LOAD(&w->bell[me->rank * 16]);
        if (PG_PTHREAD__LOAD(&w->aborted)) return PG_ERR_ABORTED;
        pthread_mutex_lock(&b->mu);
        for (i = 0; i < PG_PTHREAD_SLOTS; i++)
            if (b->slot[i].state == 0) {
                b->slot[i].state = 1;
                pthread_mutex_unlock(&b->mu);
                return i;
            }
        pthread_mutex_unlock(&b->mu);
        rc = pg_pthread__wait_bell(w, me->rank, bell, &wt, 0, 0);
        if (rc < 0) return rc;
    }
}

static void pg_pthread__publish(pg_pthread_rank *me, int dst, int i, uint32_t tag, size_t bytes)
{
    pg_pthread_box *b = pg_pthread__box(me->w, me->rank, dst);
    pthread_mutex_lock(&b->mu);
    b->slot[i].tag = tag;
    b->slot[i].bytes = bytes;
    b->slot[i].seq = b->next_seq++;
    b->slot[i].state = 2;
    pthread_mutex_unlock(&b->mu);
    pg_pthread__ring(me->w, dst);
}

static int pg_pthread__send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    int i;
    if (bytes > PG_PTHREAD_SLOT_BYTES) return PG_ERR_TOO_BIG;
    i = pg_pthread__reserve(me, dst, timeout_ms);
    if (i < 0) return i;
    if (bytes) memcpy(me->w->box[me->rank][dst].slot[i].data, buf, bytes);
    pg_pthread__publish(me, dst, i, tag, bytes);
    return PG_OK;
}

/* Oldest full slot of src->me with tag, marked peeked; index or -1. Caller holds the lock. */
static int pg_pthread__find(pg_pthread_box *b, uint32_t tag)
{
    int i, best = -1;
    for (i = 0; i < PG_PTHREAD_SLOTS; i++)
        if (b->slot[i].state == 2 && b->slot[i].tag == tag && (best < 0 || b->slot[i].seq < b->slot[best].seq))
            best = i;
    return best;
}

/* Wait for (src, tag) and take it (state peeked); slot index or < 0. */
static int pg_pthread__take(pg_pthread_rank *me, int src, uint32_t tag, uint32_t timeout_ms)
{
    pg_pthread_world *w = me->w;
    pg_pthread_box *b;
    pg_pthread__wait wt;
    int i, rc;
    if (src < 0 || src >= w->size) return PG_ERR_RANK;
    b = pg_pthread__box(w, src, me->rank);
    pg_pthread__wait_init(&wt, timeout_ms);
    for (;;) {
        uint32_t bell = PG_PTHREAD__LOAD(&w->bell[me->rank * 16]);
        if (PG_PTHREAD__LOAD(&w->aborted)) return PG_ERR_ABORTED;
        pthread_mutex_lock(&b->mu);
        i = pg_pthread__find(b, tag);
        if (i >= 0) b->slot[i].state = 3;
        pthread_mutex_unlock(&b->mu);
        if (i >= 0) return i;
        rc = pg_pthread__wait_bell(w, me->rank, bell, &wt, 0, 0);
        if (rc < 0) return rc;
    }
}

static void pg_pthread__free(pg_pthread_rank *me, int src, int i)
{
    pg_pthread_box *b = pg_pthread__box(me->w, src, me->rank);
    pthread_mutex_lock(&b->mu);
    b->slot[i].state = 0;
    pthread_mutex_unlock(&b->mu);
    pg_pthread__ring(me->w, src); /* the sender may be waiting for space */
}

static int pg_pthread__recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    pg_pthread_slot *s;
    int i = pg_pthread__take(me, src, tag, timeout_ms), rc = PG_OK;
    if (i < 0) return i;
    s = &me->w->box[src][me->rank].slot[i];
    if (s->bytes > cap)
        rc = PG_ERR_TOO_BIG;
    else if (s->bytes)
        memcpy(buf, s->data, s->bytes);
    if (got) *got = s->bytes;
    pg_pthread__free(me, src, i);
    return rc;
}

static int pg_pthread__probe(void *port, int src, uint32_t tag, size_t *bytes)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    pg_pthread_box *b;
    int i;
    if (src < 0 || src >= me->w->size) return PG_ERR_RANK;
    if (PG_PTHREAD__LOAD(&me->w->aborted)) return PG_ERR_ABORTED;
    b = pg_pthread__box(me->w, src, me->rank);
    pthread_mutex_lock(&b->mu);
    i = pg_pthread__find(b, tag);
    if (i >= 0 && bytes) *bytes = b->slot[i].bytes;
    pthread_mutex_unlock(&b->mu);
    return i >= 0 ? 1 : 0;
}

/* slot pointer -> index in box, or -1 */
static int pg_pthread__slot_index(pg_pthread_box *b, const void *ptr)
{
    int i;
    for (i = 0; i < PG_PTHREAD_SLOTS; i++)
        if ((const void *)b->slot[i].data == ptr) return i;
    return -1;
}

static int pg_pthread__slot_acquire(void *port, int dst, size_t bytes, void **ptr, uint32_t timeout_ms)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    int i;
    if (bytes > PG_PTHREAD_SLOT_BYTES) return PG_ERR_TOO_BIG;
    i = pg_pthread__reserve(me, dst, timeout_ms);
    if (i < 0) return i;
    me->w->box[me->rank][dst].slot[i].bytes = bytes; /* capacity granted */
    *ptr = me->w->box[me->rank][dst].slot[i].data;
    return PG_OK;
}

static int pg_pthread__slot_commit(void *port, int dst, uint32_t tag, void *ptr, size_t bytes)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    pg_pthread_box *b;
    int i;
    if (dst < 0 || dst >= me->w->size) return PG_ERR_RANK;
    b = pg_pthread__box(me->w, me->rank, dst);
    i = pg_pthread__slot_index(b, ptr);
    if (i < 0 || b->slot[i].state != 1) return PG_ERR_NO_SLOT;
    if (bytes > b->slot[i].bytes) return PG_ERR_TOO_BIG;
    pg_pthread__publish(me, dst, i, tag, bytes);
    return PG_OK;
}

static int pg_pthread__slot_peek(void *port, int src, uint32_t tag, const void **ptr, size_t *bytes,
                                 uint32_t timeout_ms)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    int i = pg_pthread__take(me, src, tag, timeout_ms);
    if (i < 0) return i;
    *ptr = me->w->box[src][me->rank].slot[i].data;
    if (bytes) *bytes = me->w->box[src][me->rank].slot[i].bytes;
    return PG_OK;
}

static int pg_pthread__slot_release(void *port, int src, const void *ptr)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    pg_pthread_box *b;
    int i;
    if (src < 0 || src >= me->w->size) return PG_ERR_RANK;
    b = pg_pthread__box(me->w, src, me->rank);
    i = pg_pthread__slot_index(b, ptr);
    if (i < 0 || b->slot[i].state != 3) return PG_ERR_NO_SLOT;
    pg_pthread__free(me, src, i);
    return PG_OK;
}

static int pg_pthread__abort(void *port, int err)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    pg_pthread_world *w = me->w;
    int r;
    PG_PTHREAD__STORE(&w->abort_err, (int32_t)err);
    PG_PTHREAD__STORE(&w->aborted, 1);
    for (r = 0; r < w->size; r++) pg_pthread__ring(w, r);
    return PG_OK;
}

/* Generation barrier over all ranks that ignores the abort flag (for recover). */
static int pg_pthread__raw_barrier(pg_pthread_world *w, uint32_t timeout_ms)
{
    uint64_t t0 = pg_pthread__now_ns(), limit = (uint64_t)(timeout_ms == 0 ? 1u : timeout_ms) * 1000000u;
    uint32_t gen = PG_PTHREAD__LOAD(&w->recover_gen), c;
    if (__atomic_add_fetch(&w->recover_count, 1u, __ATOMIC_ACQ_REL) == (uint32_t)w->size) {
        PG_PTHREAD__STORE(&w->recover_count, 0u);
        PG_PTHREAD__STORE(&w->recover_gen, gen + 1u);
        return PG_OK;
    }
    while (PG_PTHREAD__LOAD(&w->recover_gen) == gen) {
        sched_yield();
        /* the clock after every yield: on a loaded CPU one yield can take milliseconds */
        if (timeout_ms == PG_WAIT_FOREVER || pg_pthread__now_ns() - t0 < limit) continue;
        c = PG_PTHREAD__LOAD(&w->recover_count); /* give up: withdraw unless the last one came */
        while (PG_PTHREAD__LOAD(&w->recover_gen) == gen && c > 0)
            if (__atomic_compare_exchange_n(&w->recover_count, &c, c - 1u, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return PG_ERR_TIMEOUT;
    }
    return PG_OK;
}

static int pg_pthread__recover(void *port)
{
    pg_pthread_rank *me = (pg_pthread_rank *)port;
    pg_pthread_world *w = me->w;
    int s, i;
    if (pg_pthread__raw_barrier(w, w->group[me->rank].timeout_ms) < 0) return PG_ERR_TIMEOUT;
    for (s = 0; s < w->size; s++) { /* each rank empties its own inbox */
        pg_pthread_box *b = pg_pthread__box(w, s, me->rank);
        pthread_mutex_lock(&b->mu);
        for (i = 0; i < PG_PTHREAD_SLOTS; i++) b->slot[i].state = 0;
        pthread_mutex_unlock(&b->mu);
    }
    w->pub[me->rank].epoch = 0;
    PG_PTHREAD__STORE(&w->pub[me->rank].h[0].arrive, (uint64_t)0);
    PG_PTHREAD__STORE(&w->pub[me->rank].h[1].arrive, (uint64_t)0);
    pg_pthread__raw_barrier(w, PG_WAIT_FOREVER); /* everyone is here already */
    if (me->rank == 0) {
        PG_PTHREAD__STORE(&w->abort_err, 0);
        PG_PTHREAD__STORE(&w->aborted, 0);
    }
    pg_pthread__raw_barrier(w, PG_WAIT_FOREVER);
    return PG_OK;
}

/* ---- native collectives (world group only) ---- */
/* Wake rank r if it sleeps (Dekker with the sleeper: it counts itself in sleepers, then
   re-checks its condition; we publish the condition, then look at sleepers). */
static void pg_pthread__wake(pg_pthread_world *w, int r)
{
    if (__atomic_load_n(&w->sleepers[r * 16], __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&w->sleep_mu[r]);
        pthread_cond_broadcast(&w->sleep_cv[r]);
        pthread_mutex_unlock(&w->sleep_mu[r]);
    }
}

/* Epoch barrier of the world: publish our epoch (in the line of its parity, beside the
   arguments), wait for the peers' by spinning on their lines. Only peers that went to
   sleep are rung (Dekker: we publish, fence, look at sleepers; a sleeper counts itself
   in sleepers, then re-checks our epoch), so a meeting of spinning ranks costs no atomic
   read-modify-write, only the line each publishes. */
static int pg_pthread__barrier_w(pg_pthread_world *w, int me, uint32_t timeout_ms)
{
    pg_pthread__wait wt;
    uint64_t e;
    int r, rc;
    /* an aborted world: never arrive, so no peer can leave this barrier on our account */
    if (PG_PTHREAD__LOAD(&w->aborted)) return PG_ERR_ABORTED;
    e = ++w->pub[me].epoch;
    PG_PTHREAD__STORE(&w->pub[me].h[e & 1u].arrive, e);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (r = 0; r < w->size; r++)
        if (r != me && __atomic_load_n(&w->sleepers[r * 16], __ATOMIC_SEQ_CST)) pg_pthread__ring(w, r);
    pg_pthread__wait_init(&wt, timeout_ms == 0 ? 1u : timeout_ms);
    for (r = 0; r < w->size; r++) {
        const volatile uint64_t *at = &w->pub[r].h[e & 1u].arrive;
        for (;;) {
            uint32_t bell = PG_PTHREAD__LOAD(&w->bell[me * 16]);
            if (PG_PTHREAD__LOAD(at) >= e) break;
            if (PG_PTHREAD__LOAD(&w->aborted)) return PG_ERR_ABORTED;
            rc = pg_pthread__wait_bell(w, me, bell, &wt, at, e);
            if (rc < 0) return rc;
        }
    }
    return PG_OK;
}

static pg_pthread_world *pg_pthread__native(pg_group *g)
{
    return g->context == 0 ? ((pg_pthread_rank *)g->port)->w : (pg_pthread_world *)0;
}

static int pg_pthread__barrier(pg_group *g)
{
    pg_pthread_world *w = pg_pthread__native(g);
    if (!w) return PG_ERR_UNSUPPORTED;
    return pg_pthread__barrier_w(w, g->rank, g->timeout_ms);
}

enum { PG_PTHREAD__AR = 1, PG_PTHREAD__AG, PG_PTHREAD__RS, PG_PTHREAD__BC };

/* The argument slot (and staging buffer) of this rank's coming barrier: its epoch's parity. */
static int pg_pthread__parity(const pg_pthread_world *w, int me)
{
    return (int)((w->pub[me].epoch + 1u) & 1u);
}

/* Publish this rank's arguments in the slot of the coming barrier, meet, check every rank
   agrees. Returns that slot (0 or 1), or < 0. Slots alternate, so a rank that leaves a
   one-barrier collective early and publishes the next one never overwrites what a slower
   rank still checks; the counts are compared by hash (the arrays may be gone by then). */
static int pg_pthread__enter(pg_group *g, int kind, const void *send, void *recv, size_t count, const size_t *counts,
                             int dt, int op, int root)
{
    pg_pthread_world *w = ((pg_pthread_rank *)g->port)->w;
    int s = pg_pthread__parity(w, g->rank), r, rc, bad = 0;
    pg_pthread_args *a = &w->pub[g->rank].h[s].a;
    uint64_t h = pg__counts_hash(counts, w->size, 1);
    a->send = send;
    a->recv = recv;
    a->count = count;
    a->counts = h;
    a->dt = dt;
    a->op = op;
    a->root = root;
    a->kind = kind;
    rc = pg_pthread__barrier_w(w, g->rank, g->timeout_ms);
    if (rc < 0) return rc;
    for (r = 0; r < w->size; r++) {
        const pg_pthread_args *q = &w->pub[r].h[s].a;
        if (q->kind != kind || q->count != count || q->counts != h || q->dt != dt || q->op != op || q->root != root)
            bad = 1;
    }
    return bad ? PG_ERR_MISMATCH : s; /* everyone sees the same published values: all fail alike */
}

/* Reduce elements [lo, hi) of every rank's src[r], in rank order, into out[0..nout) (each
   pointing at element lo of its buffer), block by block: a block is read everywhere before
   it is written anywhere, so an output may be some rank's input (in place). */
static void pg_pthread__reduce_range(int n, const unsigned char *const *src, size_t lo, size_t hi,
                                     unsigned char *const *out, int nout, mb_dtype dt, pg_red op)
{
    uint64_t tmp[512];
    size_t es = pg_dtype_size(dt), blk = sizeof tmp / es, i, len, bytes = (hi - lo) * es;
    int r, k, direct = 1;
    pg_red rop = op == PG_AVG ? PG_SUM : op;
    /* accumulate straight into out[0] unless it overlaps an input */
    for (r = 0; r < n; r++) {
        const unsigned char *in = src[r] + lo * es;
        if (out[0] < in + bytes && in < out[0] + bytes) direct = 0;
    }
    for (i = lo; i < hi; i += len) {
        unsigned char *acc = direct ? out[0] + (i - lo) * es : (unsigned char *)tmp;
        len = hi - i < blk ? hi - i : blk;
        memcpy(acc, src[0] + i * es, len * es);
        for (r = 1; r < n; r++) pg_reduce_local(acc, src[r] + i * es, len, dt, rop);
        if (op == PG_AVG) pg_scale_local(acc, len, dt, n);
        for (k = direct; k < nout; k++) memcpy(out[k] + (i - lo) * es, acc, len * es);
    }
}

/* Rank r's published send buffer + off elements (slot s), or its staging buffer. */
static void pg_pthread__sources(const pg_pthread_world *w, int s, int staged, size_t off_bytes,
                                const unsigned char **src)
{
    int r;
    for (r = 0; r < w->size; r++)
        src[r] =
            (staged ? (const unsigned char *)w->small[s][r] : (const unsigned char *)w->pub[r].h[s].a.send) + off_bytes;
}

static size_t pg_pthread__share(size_t count, int n, int r)
{
    /* even split, each share rounded to 16 elements so ranks write separate cache lines */
    size_t per = (count / (size_t)n + 15u) & ~(size_t)15u, lo = per * (size_t)r;
    return lo > count ? count : lo;
}

/* Small collectives (a rank's input <= PG_PTHREAD_SMALL bytes) copy their input into the
   world's staging buffer of the coming barrier's parity, meet once, and read the staged
   inputs: one barrier, and nobody waits for peers to finish reading its buffers. Larger
   ones read peers' buffers in place and meet again before returning (all_reduce: each
   rank reduces its share and writes it into every rank's recv, so two barriers in all). */
static int pg_pthread__all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    pg_pthread_world *w = pg_pthread__native(g);
    const unsigned char *src[PG_PTHREAD_MAX_RANKS] = {0}; /* (gcc -O3 cannot see sources() fill it) */
    unsigned char *outs[PG_PTHREAD_MAX_RANKS];
    size_t es = pg_dtype_size(dt), lo, hi, bytes = count * es;
    int r, k, n, s, small = bytes <= PG_PTHREAD_SMALL;
    if (!w) return PG_ERR_UNSUPPORTED;
    if (small && bytes) memcpy(w->small[pg_pthread__parity(w, g->rank)][g->rank], send, bytes);
    s = pg_pthread__enter(g, PG_PTHREAD__AR, send, recv, count, 0, (int)dt, (int)op, 0);
    if (s < 0) return s;
    n = w->size;
    pg_pthread__sources(w, s, small, 0, src);
    if (small) { /* every rank reduces everything */
        unsigned char *out = (unsigned char *)recv;
        pg_pthread__reduce_range(n, src, 0, count, &out, 1, dt, op);
        return PG_OK;
    }
    /* each rank reduces its share and writes it into every rank's recv: one more barrier */
    lo = pg_pthread__share(count, n, g->rank);
    hi = g->rank == n - 1 ? count : pg_pthread__share(count, n, g->rank + 1);
    outs[0] = (unsigned char *)recv + lo * es;
    for (r = 0, k = 1; r < n; r++)
        if (r != g->rank) outs[k++] = (unsigned char *)w->pub[r].h[s].a.recv + lo * es;
    if (hi > lo) pg_pthread__reduce_range(n, src, lo, hi, outs, n, dt, op);
    return pg_pthread__barrier_w(w, g->rank, g->timeout_ms);
}

static int pg_pthread__all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt)
{
    pg_pthread_world *w = pg_pthread__native(g);
    const unsigned char *src[PG_PTHREAD_MAX_RANKS] = {0}; /* (gcc -O3 cannot see sources() fill it) */
    size_t es = pg_dtype_size(dt), off = 0, own = 0, mine = counts[g->rank] * es;
    int r, s, small = 1;
    if (!w) return PG_ERR_UNSUPPORTED;
    for (r = 0; r < w->size; r++) {
        if (counts[r] * es > PG_PTHREAD_SMALL) small = 0;
        if (r < g->rank) own += counts[r] * es;
    }
    if (small && mine) memcpy(w->small[pg_pthread__parity(w, g->rank)][g->rank], send, mine);
    s = pg_pthread__enter(g, PG_PTHREAD__AG, send, recv, 0, counts, (int)dt, 0, 0);
    if (s < 0) return s;
    pg_pthread__sources(w, s, small, 0, src);
    if (mine && (unsigned char *)recv + own != send) /* (in place: already there) */
        memmove((unsigned char *)recv + own, send, mine);
    for (r = 0; r < w->size; r++) {
        if (counts[r] && r != g->rank) memcpy((unsigned char *)recv + off, src[r], counts[r] * es);
        off += counts[r] * es;
    }
    return small ? PG_OK : pg_pthread__barrier_w(w, g->rank, g->timeout_ms);
}

static int pg_pthread__all_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt)
{
    size_t counts[PG_MAX_RANKS];
    int r;
    for (r = 0; r < g->size; r++) counts[r] = count;
    return pg_pthread__all_gatherv(g, send, recv, counts, dt);
}

static int pg_pthread__reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                                       pg_red op)
{
    pg_pthread_world *w = pg_pthread__native(g);
    const unsigned char *src[PG_PTHREAD_MAX_RANKS] = {0}; /* (gcc -O3 cannot see sources() fill it) */
    unsigned char *out;
    size_t es = pg_dtype_size(dt), off = 0, total = 0;
    int r, s, small;
    if (!w) return PG_ERR_UNSUPPORTED;
    for (r = 0; r < w->size; r++) {
        if (r < g->rank) off += counts[r];
        total += counts[r];
    }
    small = total * es <= PG_PTHREAD_SMALL;
    if (small && total) memcpy(w->small[pg_pthread__parity(w, g->rank)][g->rank], send, total * es);
    s = pg_pthread__enter(g, PG_PTHREAD__RS, send, recv, 0, counts, (int)dt, (int)op, 0);
    if (s < 0) return s;
    pg_pthread__sources(w, s, small, off * es, src);
    out = (unsigned char *)recv;
    pg_pthread__reduce_range(w->size, src, 0, counts[g->rank], &out, 1, dt, op);
    return small ? PG_OK : pg_pthread__barrier_w(w, g->rank, g->timeout_ms);
}

static int pg_pthread__reduce_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    size_t counts[PG_MAX_RANKS];
    int r;
    for (r = 0; r < g->size; r++) counts[r] = count;
    return pg_pthread__reduce_scatterv(g, send, recv, counts, dt, op);
}

static int pg_pthread__broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root)
{
    pg_pthread_world *w = pg_pthread__native(g);
    const unsigned char *src[PG_PTHREAD_MAX_RANKS] = {0}; /* (gcc -O3 cannot see sources() fill it) */
    size_t bytes = count * pg_dtype_size(dt);
    int s, small = bytes <= PG_PTHREAD_SMALL;
    if (!w) return PG_ERR_UNSUPPORTED;
    if (small && bytes && g->rank == root) memcpy(w->small[pg_pthread__parity(w, g->rank)][root], buf, bytes);
    s = pg_pthread__enter(g, PG_PTHREAD__BC, buf, buf, count, 0, (int)dt, 0, root);
    if (s < 0) return s;
    pg_pthread__sources(w, s, small, 0, src);
    if (g->rank != root && bytes) memcpy(buf, src[root], bytes);
    return small ? PG_OK : pg_pthread__barrier_w(w, g->rank, g->timeout_ms);
}

static const pg_ops pg_pthread__ops = {
    pg_pthread__send,
    pg_pthread__recv,
    pg_pthread__probe,
    pg_pthread__slot_acquire,
    pg_pthread__slot_commit,
    pg_pthread__slot_peek,
    pg_pthread__slot_release,
    pg_pthread__abort,
    pg_pthread__recover,
    pg_pthread__barrier,
    pg_pthread__broadcast,
    pg_pthread__all_reduce,
    pg_pthread__all_gather,
    pg_pthread__all_gatherv,
    pg_pthread__reduce_scatter,
    pg_pthread__reduce_scatterv,
    0,
    0,
    0 /* all_to_allv, gatherv, scatterv: pg.h's generic ones over the mailboxes */
};

PG_PTHREAD__DEF const pg_ops *pg_pthread_ops(void)
{
    return &pg_pthread__ops;
}

PG_PTHREAD__DEF int pg_pthread_world_init(pg_pthread_world *w, int n)
{
    int s, d, r;
    const pg_ops *ops = pg_pthread_ops();
    if (!w) return PG_ERR_NULL;
    if (n <= 0 || n > PG_PTHREAD_MAX_RANKS || n > PG_MAX_RANKS) return PG_ERR_SIZE;
    if (w->initialized)
        for (s = 0; s < PG_PTHREAD_MAX_RANKS; s++)
            for (d = 0; d < PG_PTHREAD_MAX_RANKS; d++) pthread_mutex_destroy(&w->box[s][d].mu);
    if (w->initialized)
        for (s = 0; s < PG_PTHREAD_MAX_RANKS; s++) {
            pthread_mutex_destroy(&w->sleep_mu[s]);
            pthread_cond_destroy(&w->sleep_cv[s]);
        }
    memset(w, 0, sizeof *w);
    for (s = 0; s < PG_PTHREAD_MAX_RANKS; s++)
        for (d = 0; d < PG_PTHREAD_MAX_RANKS; d++)
            if (pthread_mutex_init(&w->box[s][d].mu, NULL) != 0) return PG_ERR_PORT;
    for (s = 0; s < PG_PTHREAD_MAX_RANKS; s++)
        if (pthread_mutex_init(&w->sleep_mu[s], NULL) != 0 || pthread_cond_init(&w->sleep_cv[s], NULL) != 0)
            return PG_ERR_PORT;
    w->initialized = 1;
    w->size = n;
    { /* oversubscribed: more ranks than the CPUs this process may run on (its affinity
           mask where <sched.h> declares CPU_COUNT, i.e. with _GNU_SOURCE on glibc; else the
           online CPUs). Then a waiting rank shares its CPU with a rank that has work, so it
           does not spin (that only delays the peer it waits for): it yields a while, then
           sleeps, and the ranks on a CPU take turns (pp_simulate's costs.cores model). */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#if defined(__linux__) && defined(CPU_COUNT)
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) cpus = CPU_COUNT(&set);
#endif
        w->spin_ns = (cpus > 0 && n > cpus) ? 0u : PG_PTHREAD_SPIN_NS;
        w->yield_ns = (cpus > 0 && n > cpus) ? PG_PTHREAD_YIELD_NS / 100u : PG_PTHREAD_YIELD_NS;
    }
    for (r = 0; r < n; r++) {
        w->ctx[r].w = w;
        w->ctx[r].rank = r;
        pg_group_init(&w->group[r], ops, &w->ctx[r], r, n, PG_PTHREAD_SLOT_BYTES);
    }
    return PG_OK;
}

PG_PTHREAD__DEF pg_group *pg_pthread_group(pg_pthread_world *w, int rank)
{
    if (!w || rank < 0 || rank >= w->size) return (pg_group *)0;
    return &w->group[rank];
}

static void *pg_pthread__main(void *arg)
{
    pg_group *g = (pg_group *)arg;
    pg_pthread_world *w = ((pg_pthread_rank *)g->port)->w;
    w->rc[g->rank] = w->fn(g, w->arg);
    return (void *)0;
}

PG_PTHREAD__DEF int pg_pthread_run(pg_pthread_world *w, int n, int (*fn)(pg_group *g, void *arg), void *arg)
{
    int r, started = 0, rc;
    if (!fn) return PG_ERR_NULL;
    rc = pg_pthread_world_init(w, n);
    if (rc < 0) return rc;
    w->fn = fn;
    w->arg = arg;
    for (r = 0; r < n; r++) {
        if (pthread_create(&w->thread[r], NULL, pg_pthread__main, &w->group[r]) != 0) {
            pg_pthread__abort(&w->ctx[0], PG_ERR_PORT); /* release the ones started */
            rc = PG_ERR_PORT;
            break;
        }
        started++;
    }
    for (r = 0; r < started; r++) pthread_join(w->thread[r], NULL);
    if (rc < 0) return rc;
    for (r = 0; r < n; r++)
        if (w->rc[r] != 0) return w->rc[r];
    return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* PG_PTHREAD_IMPLEMENTATION */
