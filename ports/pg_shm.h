/* pg_shm.h — pg.h port for cores sharing RAM: bare metal or RTOS (splitcore)

   Ranks are cores (or RTOS tasks) that share one memory region the user places (a linker
   section, a static array). The region holds one single-producer/single-consumer ring per
   ordered pair of cores; a sender writes a slot of the receiver's inbox in place and then
   publishes its write index (release), the receiver reads the index (acquire), the slot,
   and publishes its read index. Only aligned 32-bit loads/stores and barriers touch shared
   words — no LDREX/STREX or other read-modify-write — so Cortex-M0+ works. Each side keeps
   local copies of its indices; every peer-written word (indices, slot headers) is validated
   before use, so corrupt shared memory yields PG_ERR_CORRUPT, never an out-of-bounds access.
   Like rpmsg-lite, the platform is a small hook struct (ports/platform/ has sets for RISC-V
   virt, host threads and FreeRTOS): notify(core) rings a doorbell, wait() sleeps until a
   doorbell or a short tick, cache_clean/invalidate keep a D-cache (Cortex-M7) coherent and
   now_us() gives time for timeouts. World collectives (barrier, broadcast, all_reduce,
   all_gather(v)) read peers' buffers directly and check every core's arguments, so every
   core sees a mismatch; sub-groups and the other collectives use pg.h's generic ones.

   Example (core `me` of 4; every core runs the same code):
       #define PG_IMPLEMENTATION
       #include "ports/pg.h"
       #define PG_SHM_IMPLEMENTATION
       #include "ports/pg_shm.h"
       #define REGION PG_SHM_REGION_BYTES(4, 8, 1024)          // 4 cores, 8 slots of 1 KB
       static uint32_t region[REGION / 4] __attribute__((section(".shared_ram")));
       static pg_shm shm;                                     // per core (core-local RAM)
       if (me == 0) pg_shm_format(region, REGION, 4, 8, 1024); // before the others start
       pg_shm_init(&shm, region, REGION, me, &my_hooks);       // waits for the format
       pg_all_reduce(pg_shm_group(&shm), x, x, 256, MB_F32, PG_SUM);

   Contents:
       1. Configuration macros        3. Region, init, group
       2. Platform hooks              4. Implementation (PG_SHM_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE):
       PG_SHM_IMPLEMENTATION   emit the definitions (exactly one .c file; needs pg.h's too)
       PG_SHM_STATIC           make every function static to its translation unit
       PG_SHM_MAX_CORES        largest core count (default 8; local state is 24 B per core)
       PG_SHM_LINE             cache-line size in bytes, power of two >= 64 (default 64; a
                               core's control line holds 9 words; 32-byte-line cores use 64)
       PG_SHM_SPIN             polls before calling hooks->wait() (default 200)
       PG_SHM_NO_NATIVE        no direct-read broadcast/all_reduce/all_gather(v): pg.h's
                               generic ones over the rings (smaller code; the barrier stays
                               native). Default: native. pg.h's ring all_gatherv does not let
                               every rank see a count mismatch, so the conformance suite's
                               mismatch test needs the native one.
       PG_SHM_FENCE_ACQ(), PG_SHM_FENCE_REL(), PG_SHM_FENCE()   acquire / release / full
                               barrier (default: GCC/clang __atomic_thread_fence; define all
                               three for other compilers)

   Layout (all in cache lines of PG_SHM_LINE): one header line (magic, cores, slots, slot
   payload), one control line per core (its abort flag, barrier epoch, collective arguments;
   written only by that core), then rings[src][dst]: a line with the write index (written by
   src), a line with the read index (written by dst), `slots` slots of a 16-byte header
   (index, tag, bytes, check) + payload, each rounded up to whole lines. Indices are free-
   running 32-bit counters; `slots` is a power of two <= 32.
   Messages: one message is one slot; larger sends give PG_ERR_TOO_BIG (pg.h's collectives
   split by pg_max_msg(), which is the slot payload). Receives match (source, tag) and may
   take a later message of another tag first (out-of-order release is tracked locally).
   Slots: at most one acquired, uncommitted slot per destination; any number of peeked ones.
   Timeouts start after the busy-poll phase (PG_SHM_SPIN polls), so they run a few µs long.
   Errors are pg.h's enum pg_err. */
#ifndef PG_SHM_H
#define PG_SHM_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "pg.h"

#ifndef PG_SHM_MAX_CORES
#define PG_SHM_MAX_CORES 8
#endif
#ifndef PG_SHM_LINE
#define PG_SHM_LINE 64
#endif
#if PG_SHM_LINE < 64 || (PG_SHM_LINE & (PG_SHM_LINE - 1))
#error "PG_SHM_LINE must be a power of two >= 64"
#endif
#ifndef PG_SHM_SPIN
#define PG_SHM_SPIN 200
#endif
#ifdef PG_SHM_STATIC
#define PG_SHM_API static
#else
#define PG_SHM_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Platform hooks -------------------------------------------------------------
   Every hook gets `ctx`. notify: ring core's doorbell (may be NULL: peers poll). wait: sleep
   until this core's doorbell rang or a short tick passed (~1 ms; NULL: busy-poll); a doorbell
   rung before wait() was entered must not be lost (a pending flag). cache_clean: write back
   [p, p+n) to RAM; cache_invalidate: drop stale lines of [p, p+n) (both NULL when coherent).
   now_us: monotonic microseconds, wrapping (NULL: timeouts never expire). */
typedef struct pg_shm_hooks {
    void (*notify)(void *ctx, int core);
    void (*wait)(void *ctx, int self);
    void (*cache_clean)(void *ctx, const void *p, size_t n);
    void (*cache_invalidate)(void *ctx, const void *p, size_t n);
    uint32_t (*now_us)(void *ctx);
    void *ctx;
} pg_shm_hooks;

/* ---- 3. Region, init, group --------------------------------------------------------- */
#define PG_SHM__UP(x) ((((size_t)(x)) + PG_SHM_LINE - 1) / PG_SHM_LINE * PG_SHM_LINE)
/* Bytes of one slot with `payload` bytes, of one ring, and of the region for `cores`. */
#define PG_SHM_SLOT_BYTES(payload) PG_SHM__UP((size_t)(payload) + 16u)
#define PG_SHM_RING_BYTES(slots, payload) \
    (2u * PG_SHM_LINE + (size_t)(slots) * PG_SHM_SLOT_BYTES(payload))
#define PG_SHM_REGION_BYTES(cores, slots, payload) \
    ((1u + (size_t)(cores)) * PG_SHM_LINE + \
     (size_t)(cores) * (size_t)(cores) * PG_SHM_RING_BYTES(slots, payload))

/* One core's state (core-local memory). Treat as opaque. */
typedef struct pg_shm {
    pg_group group;               /* the world group of this core */
    volatile uint32_t *region;
    pg_shm_hooks hooks;
    int32_t rank, cores;
    uint32_t slots, payload, slot_words, ring_words;
    uint32_t epoch;               /* barrier / recover counter */
    uint32_t head[PG_SHM_MAX_CORES];  /* next write index into ring[rank][d] */
    uint32_t ptail[PG_SHM_MAX_CORES]; /* last read index seen of ring[rank][d] */
    uint32_t tail[PG_SHM_MAX_CORES];  /* next read index of ring[s][rank] */
    uint32_t done[PG_SHM_MAX_CORES];  /* consumed beyond tail (bit i = tail + i) */
    uint32_t busy[PG_SHM_MAX_CORES];  /* peeked, not released */
    uint32_t acquired;                /* bit d: a slot of ring[rank][d] is acquired */
} pg_shm;

/* Lay out a zeroed region for `cores` cores, `slots` (power of two, 1..32) slots of
   `payload` bytes (multiple of 8) per ring. One core calls it before the others call
   pg_shm_init (or they wait for it); it writes the whole region. */
PG_SHM_API int pg_shm_format(void *region, size_t bytes, int cores, uint32_t slots, uint32_t payload);
/* Attach core `rank` (< cores) to a formatted region: waits up to PG_DEFAULT_TIMEOUT_MS for
   the format, checks its header against `bytes`, fills the world group. Hooks are copied. */
PG_SHM_API int pg_shm_init(pg_shm *s, void *region, size_t bytes, int rank, const pg_shm_hooks *hooks);
PG_SHM_API pg_group *pg_shm_group(pg_shm *s);
PG_SHM_API const pg_ops *pg_shm_ops(void);

#ifdef __cplusplus
}
#endif
#endif /* PG_SHM_H */

/* ---- 4. Implementation ------------------------------------------------------------- */
#if defined(PG_SHM_IMPLEMENTATION) && !defined(PG_SHM_IMPLEMENTED)
#define PG_SHM_IMPLEMENTED

#include <string.h>
#ifndef PG_SHM_FENCE_ACQ
#define PG_SHM_FENCE_ACQ() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define PG_SHM_FENCE_REL() __atomic_thread_fence(__ATOMIC_RELEASE)
#define PG_SHM_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
/* GCC/clang: published words are __atomic acquire loads / release stores (the same ldr+dmb /
   dmb+str on Cortex-M0+), which ThreadSanitizer sees as synchronisation; a plain access
   next to a fence is a data race in C11 terms. */
#define PG_SHM__ATOMIC 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define PG_SHM__MAGIC 0x53484D31u /* "SHM1" */
#define PG_SHM__LW (PG_SHM_LINE / 4)
/* control-line words (per core) */
enum { PG_SHM__ABORT = 0, PG_SHM__EPOCH, PG_SHM__PTR0, PG_SHM__PTR1, PG_SHM__PTR2,
       PG_SHM__PTR3, PG_SHM__COUNT, PG_SHM__META, PG_SHM__RECOVER };

typedef struct pg_shm__clock {
    uint32_t t0, spins, timeout;
} pg_shm__clock;

static volatile uint32_t *pg_shm__ctl(const pg_shm *s, int core)
{
    return s->region + PG_SHM__LW * (1 + core);
}

static volatile uint32_t *pg_shm__ring(const pg_shm *s, int src, int dst)
{
    return s->region + PG_SHM__LW * (1 + s->cores) + (uint32_t)(src * s->cores + dst) * s->ring_words;
}

static volatile uint32_t *pg_shm__slot(const pg_shm *s, volatile uint32_t *ring, uint32_t index)
{
    return ring + 2 * PG_SHM__LW + (index & (s->slots - 1u)) * s->slot_words;
}

static void pg_shm__inval(const pg_shm *s, const volatile void *p, size_t n)
{
    if (s->hooks.cache_invalidate) s->hooks.cache_invalidate(s->hooks.ctx, (const void *)p, n);
}

static void pg_shm__clean(const pg_shm *s, const volatile void *p, size_t n)
{
    if (s->hooks.cache_clean) s->hooks.cache_clean(s->hooks.ctx, (const void *)p, n);
}

/* Read a peer-written word (acquire). */
static uint32_t pg_shm__load(const pg_shm *s, const volatile uint32_t *w)
{
    uint32_t v;
    pg_shm__inval(s, w, 4);
#ifdef PG_SHM__ATOMIC
    v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
#else
    v = *w;
    PG_SHM_FENCE_ACQ();
#endif
    return v;
}

/* Publish a word this core owns (release: everything written before is visible first). */
static void pg_shm__store(const pg_shm *s, volatile uint32_t *w, uint32_t v)
{
#ifdef PG_SHM__ATOMIC
    __atomic_store_n(w, v, __ATOMIC_RELEASE);
#else
    PG_SHM_FENCE_REL();
    *w = v;
#endif
    pg_shm__clean(s, w, 4);
}

static int pg_shm__aborted(const pg_shm *s)
{
    int c;
    for (c = 0; c < s->cores; c++)
        if (pg_shm__load(s, pg_shm__ctl(s, c) + PG_SHM__ABORT)) return 1;
    return 0;
}

static void pg_shm__notify(const pg_shm *s, int core)
{
    if (s->hooks.notify) s->hooks.notify(s->hooks.ctx, core);
}

/* One unsuccessful poll: spin, then check abort and time, then sleep. 0 = poll again. */
static int pg_shm__idle(const pg_shm *s, pg_shm__clock *k, int check_abort)
{
    uint32_t now;
    if (k->timeout && k->spins < PG_SHM_SPIN) {
        k->spins++;
        return 0;
    }
    if (check_abort && pg_shm__aborted(s)) return PG_ERR_ABORTED;
    if (k->timeout == 0) return PG_ERR_TIMEOUT;
    if (s->hooks.now_us && k->timeout != PG_WAIT_FOREVER) {
        now = s->hooks.now_us(s->hooks.ctx);
        if (k->spins == PG_SHM_SPIN) {
            k->t0 = now;
            k->spins++;
        } else if (now - k->t0 >= (k->timeout > 4000000u ? 4000000000u : k->timeout * 1000u)) {
            return PG_ERR_TIMEOUT;
        }
    }
    if (s->hooks.wait) s->hooks.wait(s->hooks.ctx, s->rank);
    return 0;
}

static void pg_shm__clock_start(pg_shm__clock *k, uint32_t timeout_ms)
{
    k->t0 = 0;
    k->spins = 0;
    k->timeout = timeout_ms;
}

static int pg_shm__check_peer(const pg_shm *s, int peer, uint32_t tag)
{
    if (peer < 0 || peer >= s->cores) return PG_ERR_RANK;
    if (tag & 0x80000000u) return PG_ERR_TAG;
    return pg_shm__aborted(s) ? PG_ERR_ABORTED : PG_OK;
}

/* Wait for a free slot in ring[rank][dst]; returns the slot's words. */
static int pg_shm__reserve(pg_shm *s, int dst, size_t bytes, volatile uint32_t **slot, uint32_t timeout_ms)
{
    volatile uint32_t *r;
    uint32_t h, t;
    pg_shm__clock k;
    int rc = pg_shm__check_peer(s, dst, 0);
    if (rc) return rc;
    h = s->head[dst];
    if (bytes > s->payload) return PG_ERR_TOO_BIG;
    if (s->acquired >> dst & 1u) return PG_ERR_NO_SLOT;
    r = pg_shm__ring(s, s->rank, dst);
    pg_shm__clock_start(&k, timeout_ms);
    while (h - s->ptail[dst] >= s->slots) {
        t = pg_shm__load(s, r + PG_SHM__LW);
        if (h - t > s->slots) return PG_ERR_CORRUPT;
        s->ptail[dst] = t;
        if (h - t < s->slots) break;
        if ((rc = pg_shm__idle(s, &k, 1)) != 0) return rc;
    }
    *slot = pg_shm__slot(s, r, h);
    return PG_OK;
}

/* Header + publish the slot at head[dst] (its payload is written). */
static void pg_shm__publish(pg_shm *s, int dst, volatile uint32_t *slot, uint32_t tag, size_t bytes)
{
    uint32_t h = s->head[dst], n = (uint32_t)bytes;
    slot[0] = h;
    slot[1] = tag;
    slot[2] = n;
    slot[3] = h ^ tag ^ n ^ PG_SHM__MAGIC;
    pg_shm__clean(s, slot, 16u + bytes);
    s->head[dst] = h + 1u;
    pg_shm__store(s, pg_shm__ring(s, s->rank, dst), h + 1u);
    pg_shm__notify(s, dst);
}

static int pg_shm__send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *slot;
    int rc;
    if (bytes && !buf) return PG_ERR_NULL;
    if (tag & 0x80000000u) return PG_ERR_TAG;
    rc = pg_shm__reserve(s, dst, bytes, &slot, timeout_ms);
    if (rc) return rc;
    if (bytes) memcpy((void *)(slot + 4), buf, bytes);
    pg_shm__publish(s, dst, slot, tag, bytes);
    return PG_OK;
}

/* Find the oldest unclaimed message (src, tag): 1 and *index, 0 if none, or < 0. */
static int pg_shm__find(pg_shm *s, int src, uint32_t tag, uint32_t *index, volatile uint32_t **slot)
{
    volatile uint32_t *r = pg_shm__ring(s, src, s->rank), *sl;
    uint32_t t = s->tail[src], h = pg_shm__load(s, r), i, w[4];
    uint32_t claimed = s->done[src] | s->busy[src];
    if (h - t > s->slots) return PG_ERR_CORRUPT;
    for (i = 0; i < h - t; i++) {
        if (claimed >> i & 1u) continue;
        sl = pg_shm__slot(s, r, t + i);
        pg_shm__inval(s, sl, 16);
        w[0] = sl[0]; w[1] = sl[1]; w[2] = sl[2]; w[3] = sl[3];
        if (w[0] != t + i || w[2] > s->payload || w[3] != (w[0] ^ w[1] ^ w[2] ^ PG_SHM__MAGIC))
            return PG_ERR_CORRUPT;
        if (w[1] == tag) {
            *index = t + i;
            *slot = sl;
            pg_shm__inval(s, sl + 4, w[2]);
            return 1;
        }
    }
    return 0;
}

static int pg_shm__wait_find(pg_shm *s, int src, uint32_t tag, uint32_t *index, volatile uint32_t **slot,
                             uint32_t timeout_ms)
{
    pg_shm__clock k;
    int rc = pg_shm__check_peer(s, src, tag);
    if (rc) return rc;
    pg_shm__clock_start(&k, timeout_ms);
    while ((rc = pg_shm__find(s, src, tag, index, slot)) == 0)
        if ((rc = pg_shm__idle(s, &k, 1)) != 0) return rc;
    return rc < 0 ? rc : PG_OK;
}

/* Mark message `index` from src consumed; publish the read index when it moves. */
static void pg_shm__consume(pg_shm *s, int src, uint32_t index)
{
    uint32_t t = s->tail[src];
    s->done[src] |= 1u << (index - t);
    s->busy[src] &= ~(1u << (index - t));
    if (!(s->done[src] & 1u)) return;
    while (s->done[src] & 1u) {
        s->done[src] >>= 1;
        s->busy[src] >>= 1;
        t++;
    }
    s->tail[src] = t;
    pg_shm__store(s, pg_shm__ring(s, src, s->rank) + PG_SHM__LW, t);
    pg_shm__notify(s, src);
}

static int pg_shm__recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got,
                        uint32_t timeout_ms)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *slot;
    uint32_t index, n;
    int rc = pg_shm__wait_find(s, src, tag, &index, &slot, timeout_ms);
    if (rc) return rc;
    n = slot[2];
    if (n > s->payload) return PG_ERR_CORRUPT; /* changed since validated */
    if (got) *got = n;
    if (n > cap || (n && !buf)) {
        rc = n > cap ? PG_ERR_TOO_BIG : PG_ERR_NULL;
    } else if (n) {
        memcpy(buf, (const void *)(slot + 4), n);
    }
    pg_shm__consume(s, src, index);
    return rc;
}

static int pg_shm__probe(void *port, int src, uint32_t tag, size_t *bytes)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *slot;
    uint32_t index;
    int rc = pg_shm__wait_find(s, src, tag, &index, &slot, 0);
    if (rc == PG_ERR_TIMEOUT) return 0;
    if (rc) return rc;
    if (bytes) *bytes = slot[2];
    return 1;
}

static int pg_shm__acquire(void *port, int dst, size_t bytes, void **ptr, uint32_t timeout_ms)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *slot;
    int rc;
    if (!ptr) return PG_ERR_NULL;
    rc = pg_shm__reserve(s, dst, bytes, &slot, timeout_ms);
    if (rc) return rc;
    s->acquired |= 1u << dst;
    *ptr = (void *)(slot + 4);
    return PG_OK;
}

static int pg_shm__commit(void *port, int dst, uint32_t tag, void *ptr, size_t bytes)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *slot;
    if (dst < 0 || dst >= s->cores) return PG_ERR_RANK;
    if (!(s->acquired >> dst & 1u)) return PG_ERR_NO_SLOT;
    slot = pg_shm__slot(s, pg_shm__ring(s, s->rank, dst), s->head[dst]);
    if (ptr != (void *)(slot + 4)) return PG_ERR_NO_SLOT;
    if (bytes > s->payload) return PG_ERR_TOO_BIG;
    if (tag & 0x80000000u) return PG_ERR_TAG;
    s->acquired &= ~(1u << dst);
    pg_shm__publish(s, dst, slot, tag, bytes);
    return PG_OK;
}

static int pg_shm__peek(void *port, int src, uint32_t tag, const void **ptr, size_t *bytes,
                        uint32_t timeout_ms)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *slot;
    uint32_t index, n;
    int rc;
    if (!ptr) return PG_ERR_NULL;
    rc = pg_shm__wait_find(s, src, tag, &index, &slot, timeout_ms);
    if (rc) return rc;
    n = slot[2];
    if (n > s->payload) return PG_ERR_CORRUPT;
    s->busy[src] |= 1u << (index - s->tail[src]);
    *ptr = (const void *)(slot + 4);
    if (bytes) *bytes = n;
    return PG_OK;
}

static int pg_shm__release(void *port, int src, const void *ptr)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *r, *first;
    uintptr_t off;
    uint32_t k, i;
    if (src < 0 || src >= s->cores) return PG_ERR_RANK;
    r = pg_shm__ring(s, src, s->rank);
    first = pg_shm__slot(s, r, 0) + 4;
    off = (uintptr_t)ptr - (uintptr_t)first;
    k = (uint32_t)(off / (s->slot_words * 4u));
    if ((uintptr_t)ptr < (uintptr_t)first || off % (s->slot_words * 4u) || k >= s->slots)
        return PG_ERR_NO_SLOT;
    i = (k - s->tail[src]) & (s->slots - 1u);
    if (!(s->busy[src] >> i & 1u)) return PG_ERR_NO_SLOT;
    pg_shm__consume(s, src, s->tail[src] + i);
    return PG_OK;
}

static int pg_shm__abort(void *port, int err)
{
    pg_shm *s = (pg_shm *)port;
    int c;
    pg_shm__store(s, pg_shm__ctl(s, s->rank) + PG_SHM__ABORT, (uint32_t)err | 0x80000000u);
    PG_SHM_FENCE();
    for (c = 0; c < s->cores; c++)
        if (c != s->rank) pg_shm__notify(s, c);
    return PG_OK;
}

/* World barrier on a per-core counter (control word `word`): publish `e`, wait until every
   core reached it. */
static int pg_shm__sync(pg_shm *s, int word, uint32_t e, int check_abort, uint32_t timeout_ms)
{
    pg_shm__clock k;
    int c, rc;
    if (check_abort && pg_shm__aborted(s)) return PG_ERR_ABORTED; /* never arrive when aborted */
    pg_shm__store(s, pg_shm__ctl(s, s->rank) + word, e);
    PG_SHM_FENCE();
    for (c = 0; c < s->cores; c++) pg_shm__notify(s, c);
    pg_shm__clock_start(&k, timeout_ms);
    for (c = 0; c < s->cores; c++)
        while ((int32_t)(pg_shm__load(s, pg_shm__ctl(s, c) + word) - e) < 0)
            if ((rc = pg_shm__idle(s, &k, check_abort)) != 0) return rc;
    return PG_OK;
}

/* Two world syncs on the recover counter (abort ignored); in between, with nobody sending,
   each core drops its inbox, forgets acquired slots, clears its abort flag and restarts its
   epoch (a failed collective may have left epochs apart). */
static int pg_shm__recover(void *port)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *r;
    uint32_t e = pg_shm__load(s, pg_shm__ctl(s, s->rank) + PG_SHM__RECOVER), h;
    int c, rc = pg_shm__sync(s, PG_SHM__RECOVER, e + 1u, 0, PG_DEFAULT_TIMEOUT_MS);
    if (rc) return rc;
    for (c = 0; c < s->cores; c++) {
        r = pg_shm__ring(s, c, s->rank);
        h = pg_shm__load(s, r);
        if (h - s->tail[c] > s->slots) return PG_ERR_CORRUPT;
        s->tail[c] = h;
        s->done[c] = s->busy[c] = 0;
        pg_shm__store(s, r + PG_SHM__LW, h);
    }
    s->acquired = 0;
    s->epoch = 0;
    pg_shm__store(s, pg_shm__ctl(s, s->rank) + PG_SHM__EPOCH, 0);
    pg_shm__store(s, pg_shm__ctl(s, s->rank) + PG_SHM__ABORT, 0);
    return pg_shm__sync(s, PG_SHM__RECOVER, e + 2u, 0, PG_DEFAULT_TIMEOUT_MS);
}

static int pg_shm__epoch(pg_shm *s, uint32_t timeout_ms)
{
    return pg_shm__sync(s, PG_SHM__EPOCH, ++s->epoch, 1, timeout_ms);
}

/* The world barrier is always native: a core leaves it only after every core arrived, so an
   abort right after a barrier never catches a peer still inside it (pg.h's message barrier
   can: a fast rank leaves while a slow one still waits for its last message). */
static int pg_shm__barrier(pg_group *g)
{
    if (g->context) return PG_ERR_UNSUPPORTED;
    return pg_shm__epoch((pg_shm *)g->port, g->timeout_ms);
}

#ifndef PG_SHM_NO_NATIVE
/* Native world collectives: every core publishes (a, b, its count, meta) in its control
   line, syncs, checks every peer's arguments (so every core sees a disagreement, not only
   the ones whose data it touches), works on peers' buffers directly, and syncs again so no
   buffer changes while a peer still reads it. counts: per-core counts (NULL: `count` each);
   meta folds in the kind, dtype, op or root, and a hash of counts[]. */
static int pg_shm__begin(pg_group *g, const void *a, const void *b, size_t count, const size_t *counts,
                         uint32_t meta)
{
    pg_shm *s = (pg_shm *)g->port;
    volatile uint32_t *w = pg_shm__ctl(s, s->rank);
    uint64_t pa = (uint64_t)(uintptr_t)a, pb = (uint64_t)(uintptr_t)b;
    int c, rc;
    w[PG_SHM__PTR0] = (uint32_t)pa;
    w[PG_SHM__PTR1] = (uint32_t)(pa >> 32);
    w[PG_SHM__PTR2] = (uint32_t)pb;
    w[PG_SHM__PTR3] = (uint32_t)(pb >> 32);
    w[PG_SHM__COUNT] = (uint32_t)count;
    w[PG_SHM__META] = meta;
    pg_shm__clean(s, w, PG_SHM_LINE);
    rc = pg_shm__epoch(s, g->timeout_ms);
    if (rc) return rc;
    for (c = 0; c < s->cores; c++) {
        volatile uint32_t *p = pg_shm__ctl(s, c);
        pg_shm__inval(s, p, PG_SHM_LINE);
        if ((size_t)p[PG_SHM__COUNT] != (counts ? counts[c] : count) || p[PG_SHM__META] != meta)
            rc = PG_ERR_MISMATCH;
    }
    return rc;
}

static unsigned char *pg_shm__peer(pg_shm *s, int core, int which)
{
    volatile uint32_t *p = pg_shm__ctl(s, core) + PG_SHM__PTR0 + 2 * which;
    return (unsigned char *)(uintptr_t)((uint64_t)p[0] | (uint64_t)p[1] << 32);
}

static int pg_shm__end(pg_group *g, int rc)
{
    int rc2;
    if (rc == PG_ERR_TIMEOUT || rc == PG_ERR_ABORTED) return rc; /* a peer is missing: no second wait */
    rc2 = pg_shm__epoch((pg_shm *)g->port, g->timeout_ms);
    return rc ? rc : rc2;
}

static int pg_shm__all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    pg_shm *s = (pg_shm *)g->port;
    size_t es = pg_dtype_size(dt), lo, hi, n = (size_t)s->cores;
    int c, rc;
    if (g->context || (uint64_t)count >> 32 || g->scratch_bytes < es) return PG_ERR_UNSUPPORTED;
    pg_shm__clean(s, send, count * es);
    rc = pg_shm__begin(g, send, recv, count, 0, 0x100u | (uint32_t)dt << 4 | (uint32_t)op);
    if (rc == PG_OK) { /* my share of every core's send, reduced in rank order through the
                          group's scratch (in place: my send is read before recv is written) */
        size_t m = g->scratch_bytes / es, b, e;
        lo = count * (size_t)s->rank / n;
        hi = count * (size_t)(s->rank + 1) / n;
        for (b = lo; b < hi; b = e) {
            e = hi - b < m ? hi : b + m;
            for (c = 0; c < s->cores; c++) {
                unsigned char *in = pg_shm__peer(s, c, 0) + b * es;
                pg_shm__inval(s, in, (e - b) * es);
                if (c == 0) memcpy(g->scratch, in, (e - b) * es);
                else pg_reduce_local(g->scratch, in, e - b, dt, op == PG_AVG ? PG_SUM : op);
            }
            if (op == PG_AVG) pg_scale_local(g->scratch, e - b, dt, s->cores);
            memcpy((unsigned char *)recv + b * es, g->scratch, (e - b) * es);
        }
        pg_shm__clean(s, (unsigned char *)recv + lo * es, (hi - lo) * es);
    }
    if (rc == PG_OK) rc = pg_shm__epoch(s, g->timeout_ms);
    if (rc == PG_OK) { /* copy the other shares from their owners' recv */
        for (c = 0; c < s->cores; c++) {
            if (c == s->rank) continue;
            lo = count * (size_t)c / n;
            hi = count * (size_t)(c + 1) / n;
            pg_shm__inval(s, pg_shm__peer(s, c, 1) + lo * es, (hi - lo) * es);
            memcpy((unsigned char *)recv + lo * es, pg_shm__peer(s, c, 1) + lo * es, (hi - lo) * es);
        }
    } else if (rc == PG_ERR_MISMATCH) {
        pg_shm__epoch(s, g->timeout_ms); /* keep the epochs in step */
    }
    return pg_shm__end(g, rc);
}

/* all_gatherv (root < 0: every core's block, counts[c] elements of core c, packed) and
   broadcast (root >= 0: the root's `count` elements). */
static int pg_shm__copy_from(pg_group *g, const void *send, void *recv, size_t count, const size_t *counts,
                             mb_dtype dt, int root)
{
    pg_shm *s = (pg_shm *)g->port;
    size_t es = pg_dtype_size(dt), off = 0, mine = counts ? counts[s->rank] : count;
    uint32_t meta = 0x200u | (uint32_t)dt << 4 | (uint32_t)(root + 1) << 12;
    int c, rc;
    if (g->context) return PG_ERR_UNSUPPORTED;
    for (c = 0; counts && c < s->cores; c++) {
        if ((uint64_t)counts[c] >> 32) return PG_ERR_UNSUPPORTED;
        meta = (meta ^ (uint32_t)counts[c]) * 0x9E3779B1u;
    }
    if ((uint64_t)count >> 32) return PG_ERR_UNSUPPORTED;
    pg_shm__clean(s, send, mine * es);
    rc = pg_shm__begin(g, send, recv, mine, counts, meta);
    for (c = 0; rc == PG_OK && c < s->cores; c++) {
        unsigned char *src = pg_shm__peer(s, c, 0);
        size_t bytes = (counts ? counts[c] : count) * es;
        /* in place (my block already in recv): no copy, so no write while peers read it */
        if ((root < 0 || (c == root && c != s->rank)) && src != (unsigned char *)recv + off) {
            pg_shm__inval(s, src, bytes);
            memmove((unsigned char *)recv + off, src, bytes);
        }
        off += root < 0 ? bytes : 0;
    }
    return pg_shm__end(g, rc);
}

static int pg_shm__all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt)
{
    return pg_shm__copy_from(g, send, recv, 0, counts, dt, -1);
}

static int pg_shm__broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root)
{
    return pg_shm__copy_from(g, buf, buf, count, 0, dt, root);
}
#endif /* PG_SHM_NO_NATIVE */

static const pg_ops pg_shm__ops = {
    pg_shm__send, pg_shm__recv, pg_shm__probe,
    pg_shm__acquire, pg_shm__commit, pg_shm__peek, pg_shm__release,
    pg_shm__abort, pg_shm__recover, pg_shm__barrier,
#ifndef PG_SHM_NO_NATIVE /* all_gather: pg.h makes it an all_gatherv with even counts */
    pg_shm__broadcast, pg_shm__all_reduce, 0, pg_shm__all_gatherv,
#else
    0, 0, 0, 0,
#endif
    0, 0, 0, 0, 0
};

PG_SHM_API const pg_ops *pg_shm_ops(void) { return &pg_shm__ops; }

PG_SHM_API pg_group *pg_shm_group(pg_shm *s) { return s ? &s->group : 0; }

static size_t pg_shm__bytes(uint32_t cores, uint32_t slots, uint32_t payload)
{
    return PG_SHM_REGION_BYTES(cores, slots, payload);
}

static int pg_shm__config_ok(uintptr_t region, size_t bytes, uint32_t cores, uint32_t slots, uint32_t payload)
{
    if (region % PG_SHM_LINE) return PG_ERR_SIZE;
    if (cores < 1 || cores > PG_SHM_MAX_CORES || slots < 1 || slots > 32 || (slots & (slots - 1u)) ||
        payload < 8 || payload % 8 || payload > 0x1000000u)
        return PG_ERR_SIZE;
    return pg_shm__bytes(cores, slots, payload) <= bytes ? PG_OK : PG_ERR_SIZE;
}

PG_SHM_API int pg_shm_format(void *region, size_t bytes, int cores, uint32_t slots, uint32_t payload)
{
    volatile uint32_t *w = (volatile uint32_t *)region;
    int rc;
    if (!region) return PG_ERR_NULL;
    if (cores < 1) return PG_ERR_SIZE;
    rc = pg_shm__config_ok((uintptr_t)region, bytes, (uint32_t)cores, slots, payload);
    if (rc) return rc;
    memset(region, 0, pg_shm__bytes((uint32_t)cores, slots, payload));
    w[1] = (uint32_t)cores;
    w[2] = slots;
    w[3] = payload;
    PG_SHM_FENCE();
#ifdef PG_SHM__ATOMIC
    __atomic_store_n(w, PG_SHM__MAGIC, __ATOMIC_RELEASE);
#else
    w[0] = PG_SHM__MAGIC;
#endif
    PG_SHM_FENCE();
    return PG_OK;
}

PG_SHM_API int pg_shm_init(pg_shm *s, void *region, size_t bytes, int rank, const pg_shm_hooks *hooks)
{
    volatile uint32_t *w = (volatile uint32_t *)region;
    pg_shm__clock k;
    uint32_t cores, slots, payload;
    int rc;
    if (!s || !region || !hooks) return PG_ERR_NULL;
    memset(s, 0, sizeof *s);
    s->hooks = *hooks;
    s->region = w;
    s->rank = rank;
    if ((uintptr_t)region % PG_SHM_LINE || bytes < PG_SHM_LINE) return PG_ERR_SIZE;
    pg_shm__clock_start(&k, PG_DEFAULT_TIMEOUT_MS);
    while (pg_shm__load(s, w) != PG_SHM__MAGIC)
        if ((rc = pg_shm__idle(s, &k, 0)) != 0) return rc;
    pg_shm__inval(s, w, 16);
    cores = w[1];
    slots = w[2];
    payload = w[3];
    rc = pg_shm__config_ok((uintptr_t)region, bytes, cores, slots, payload);
    if (rc) return PG_ERR_CORRUPT;
    if (rank < 0 || (uint32_t)rank >= cores) return PG_ERR_RANK;
    s->cores = (int32_t)cores;
    s->slots = slots;
    s->payload = payload;
    s->slot_words = (uint32_t)(PG_SHM_SLOT_BYTES(payload) / 4);
    s->ring_words = (uint32_t)(PG_SHM_RING_BYTES(slots, payload) / 4);
    return pg_group_init(&s->group, &pg_shm__ops, s, rank, (int)cores, payload);
}

#ifdef __cplusplus
}
#endif
#endif /* PG_SHM_IMPLEMENTATION */
