/* pg_shm.h — pg.h port for cores sharing RAM: bare metal or RTOS (splitcore)

   Ranks are cores (or RTOS tasks) that share one memory region the user places (a linker
   section of its own, see "Boot and restart"). The region holds one single-producer/
   single-consumer ring per ordered pair of cores; a sender writes a slot of the receiver's
   inbox in place and then publishes its write index (release), the receiver reads the index
   (acquire), the slot, and publishes its read index. Only aligned 32-bit loads/stores and
   barriers touch shared words — no LDREX/STREX or other read-modify-write — so Cortex-M0+
   works. Each side keeps local copies of its indices; every peer-written word (indices,
   slot headers, epochs and counters) is validated before use, so corrupt shared memory
   yields PG_ERR_CORRUPT, never an out-of-bounds access. Like rpmsg-lite, the platform is a
   small hook struct (ports/platform/ has sets for RISC-V virt, host threads and FreeRTOS):
   notify(core) rings a doorbell, wait() sleeps until a doorbell or a short tick,
   cache_clean/invalidate keep a D-cache (Cortex-M7) coherent and now_us() gives time for
   timeouts. Doorbells are rung on demand: a core that found nothing to do announces that it
   waits (a word of its control line) and polls once more before it sleeps, and a core that
   published something rings only a core that announced, so cores that poll cost each other
   no interrupt and no syscall. The world barrier is native. Collectives are pg.h's generic
   ones over the rings by default; with PG_SHM_NATIVE_COLLECTIVES the world all_reduce,
   all_gather(v), reduce_scatter(v), broadcast and barrier are native: each core has two
   collective buffers in the region (epochs alternate), and a small collective (what a core
   brings fits PG_SHM_INLINE) is one meeting: every core writes its data, its arguments' hash
   and the epoch into one buffer and reads the others' (one line transfer each way for a
   small payload); larger all_reduce, all_gather and broadcast read peers' buffers in place.
   Reductions combine the cores in a fixed order, so every core gets the same bits; every
   core compares every core's hash, so all see a disagreement. Sub-groups use pg.h's
   collectives. The protocols are model-checked with spin: ports/pg_shm.pml (rings and
   doorbells), pg_shm_life.pml (boot and restart), pg_shm_coll.pml (native collectives).

   Example (core `me` of 4; every core runs the same code):
       #define PG_IMPLEMENTATION
       #include <splitcore/ports/pg.h>
       #define PG_SHM_IMPLEMENTATION
       #include <splitcore/ports/pg_shm.h>
       #define REGION PG_SHM_REGION_BYTES(4, 8, 1024)          // 4 cores, 8 slots of 1 KB
       static uint32_t region[REGION / 4] __attribute__((section(".splitcore_shm"))); // NOLOAD
       static pg_shm shm;                                     // per core (core-local RAM)
       if (me == 0 && cold_start) pg_shm_format(region, REGION, 4, 8, 1024);
       pg_shm_init(&shm, region, REGION, me, &my_hooks);       // every core: a rendezvous
       pg_all_reduce(pg_shm_group(&shm), x, x, 256, MB_F32, PG_SUM);

   Contents:
       1. Configuration macros        3. Region, init, group
       2. Platform hooks              4. Implementation (PG_SHM_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; section 1 holds every
   default and checks every value; the two stb switches count by being defined, the flag is
   0 or 1, and -DPG_SHM_NATIVE_COLLECTIVES alone means 1):
       PG_SHM_IMPLEMENTATION      emit the definitions (exactly one .c file, with PG_IMPLEMENTATION)
       PG_SHM_STATIC              make every function static to its translation unit
       PG_SHM_MAX_CORES           largest core count (default 8; local state is 9 words per core)
       PG_SHM_LINE                cache-line size in bytes, power of two >= 64 (default 64; a
                                  core's control line holds 10 words; 32-byte-line cores use 64)
       PG_SHM_SPIN                polls before the clock, abort checks and hooks->wait()
                                  (default 200)
       PG_SHM_NATIVE_COLLECTIVES  0 or 1: the native world collectives (default 0: pg.h's over
                                  the rings; the barrier is native either way)
       PG_SHM_SPLIT_REDUCE        native collectives: a floating-point all_reduce of at least this
                                  many bytes (and within PG_SHM_INLINE) is a reduce_scatter and an
                                  all_gather in the buffers, each core reducing its share only (two
                                  meetings instead of one; 0: never; default 256 B where floats are
                                  emulated in software (__SOFTFP__, RISC-V without F), else 0)
       PG_SHM_INLINE              native collectives: bytes a core brings that still travel in
                                  its collective buffers (multiple of 8; default 1024; the region
                                  grows by cores x 2 x (a line + PG_SHM_INLINE rounded up to
                                  lines; one line when PG_SHM_INLINE <= line - 8))
       PG_SHM_FENCE_ACQ(), PG_SHM_FENCE_REL(), PG_SHM_FENCE()   acquire / release / full
                                  barrier (default: GCC/clang __atomic_thread_fence; define all
                                  three for other compilers)

   Layout (all in cache lines of PG_SHM_LINE): one header line (magic, cores, slots, slot
   payload, generation, check word), one control line per core (its abort word, barrier
   epoch, the large collectives' buffer pointers, recover counter, its announcement that it
   waits, the generation it attached to; written only by that core), with
   PG_SHM_NATIVE_COLLECTIVES two collective buffers per core (an epoch, a hash, then up to
   PG_SHM_INLINE bytes: in that line up to line - 8 bytes, else from the next line on;
   written only by that core), then rings[src][dst]: a line with the
   write index (written by src), a line with the read index (written by dst), the `slots`
   payloads, each rounded up to whole lines, then the `slots` 16-byte slot headers (index,
   tag, bytes, check) packed in whole lines (a payload starts on a line: a 64-byte message
   is one line plus a quarter of a header line, a 4 KB one 64 lines, and a copy in or out
   is line-aligned). Indices are free-running 32-bit counters; `slots` is a power of two
   <= 32.
   Messages: one message is one slot; larger sends give PG_ERR_TOO_BIG (pg.h's collectives
   split by pg_max_msg(), which is the slot payload). Receives match (source, tag) and may
   take a later message of another tag first (out-of-order release is tracked locally).
   Slots: at most one acquired, uncommitted slot per destination; any number of peeked ones.
   Timeouts start after the busy-poll phase (PG_SHM_SPIN polls), so they run a few µs long.
   Errors are pg.h's enum pg_err; PG_ERR_PEER_RESET is this port's (a core restarted).

   Boot and restart (the region's lifecycle; model-checked: ports/pg_shm_life.pml).
   pg_shm_format writes a new generation into the header (the one there plus 1: it differs
   from whatever an earlier boot left) and clears the region, once per cold start of the
   system. pg_shm_init is a rendezvous of every core: it takes a header that checks (the
   magic word and a check word over geometry, generation and PG_SHM_LINE; anything else,
   random memory included, is waited for like an unformatted region), records the
   generation in the core's control line, announces the attach in its abort word and
   returns once every core finished a recover round begun after the attach. What an
   earlier boot left cannot complete that round: it needs every core to step past a
   counter this core just wrote, counters of each generation start at a base of their own
   (g << PG_SHM__GEN_SHIFT), and a counter further ahead than any core can run is not
   counted. So a core that starts before the format waits, sees the header change (every
   wait checks it once it stops spinning) and attaches to the new generation. A core that
   restarts alone (warm reset, watchdog, a debugger) runs its start-up again and calls
   pg_shm_init with fresh local state: it takes up the ring indices it published before
   (peers count on them) and steps past any recover round it was in. From its attach on,
   its peers' calls that wait or may wait return PG_ERR_PEER_RESET; whatever was in flight
   anywhere is lost (messages not yet received are dropped, a collective under way fails
   on every core: its output is undefined) and every core calls pg_recover, whose round
   also ends the restarted core's pg_shm_init. Sub-groups are created anew on every core
   afterwards (the restarted core's are gone). A region re-formatted or zeroed under
   attached cores is corrupt for them (PG_ERR_CORRUPT when they wait); they attach again.
   Placement: the region in an output section of its own marked NOLOAD, outside .bss and
   .data, so that no core's C start-up code zeroes or initialises it (a core that restarts
   would wipe its peers' region), for example
       .splitcore_shm (NOLOAD) : ALIGN(64) { *(.splitcore_shm .splitcore_shm.*) } > SHARED_RAM
   with the array declared __attribute__((section(".splitcore_shm"), aligned(PG_SHM_LINE))).
   tests/target/riscv_smp/link.ld places it so. */
#ifndef PG_SHM_H
#define PG_SHM_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "pg.h"
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(PG_SHM_IMPLEMENTATION)
#define PG_SHM_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(PG_SHM_STATIC)
#define PG_SHM_STATIC
#endif

#ifndef PG_SHM_MAX_CORES
#define PG_SHM_MAX_CORES 8 /* largest core count */
#endif
#if PG_SHM_MAX_CORES < 1 || PG_SHM_MAX_CORES > PG_MAX_RANKS
#error "PG_SHM_MAX_CORES must be 1..PG_MAX_RANKS"
#endif
#ifndef PG_SHM_LINE
#define PG_SHM_LINE 64 /* cache-line size: the unit of the region's layout */
#endif
#if PG_SHM_LINE < 64 || (PG_SHM_LINE & (PG_SHM_LINE - 1))
#error "PG_SHM_LINE must be a power of two >= 64"
#endif
#ifndef PG_SHM_SPIN
#define PG_SHM_SPIN 200 /* polls before the clock, abort checks and hooks->wait() */
#endif
#if PG_SHM_SPIN < 1
#error "PG_SHM_SPIN must be >= 1"
#endif
#ifndef PG_SHM_NATIVE_COLLECTIVES
#define PG_SHM_NATIVE_COLLECTIVES 0 /* 1: native world collectives (0: pg.h's over the rings) */
#endif
#if PG_SHM_NATIVE_COLLECTIVES != 0 && PG_SHM_NATIVE_COLLECTIVES != 1
#error "PG_SHM_NATIVE_COLLECTIVES must be 0 or 1"
#endif
#ifndef PG_SHM_INLINE
#define PG_SHM_INLINE 1024 /* native collectives: bytes a core brings in its buffers */
#endif
#if PG_SHM_INLINE < 0 || PG_SHM_INLINE % 8
#error "PG_SHM_INLINE must be a multiple of 8, >= 0"
#endif
#ifndef PG_SHM_SPLIT_REDUCE /* soft-float cores: an f32/f64 add costs tens of instructions */
#if defined(__SOFTFP__) || (defined(__riscv) && !defined(__riscv_flen))
#define PG_SHM_SPLIT_REDUCE 256
#else
#define PG_SHM_SPLIT_REDUCE 0
#endif
#endif
#if PG_SHM_SPLIT_REDUCE < 0
#error "PG_SHM_SPLIT_REDUCE must be >= 0"
#endif
#ifndef PG_SHM_FENCE_ACQ /* acquire / release / full barrier: GCC/clang atomics by default */
#if defined(PG_SHM_FENCE_REL) || defined(PG_SHM_FENCE)
#error "define all three of PG_SHM_FENCE_ACQ, PG_SHM_FENCE_REL and PG_SHM_FENCE, or none"
#endif
#define PG_SHM_FENCE_ACQ() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define PG_SHM_FENCE_REL() __atomic_thread_fence(__ATOMIC_RELEASE)
#define PG_SHM_FENCE()     __atomic_thread_fence(__ATOMIC_SEQ_CST)
/* GCC/clang: published words are __atomic acquire loads / release stores (the same ldr+dmb /
   dmb+str on Cortex-M0+), which ThreadSanitizer sees as synchronisation; a plain access
   next to a fence is a data race in C11 terms. */
#define PG_SHM__ATOMIC     1
#elif !defined(PG_SHM_FENCE_REL) || !defined(PG_SHM_FENCE)
#error "define all three of PG_SHM_FENCE_ACQ, PG_SHM_FENCE_REL and PG_SHM_FENCE, or none"
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
   Every hook gets `ctx`. notify: ring core's doorbell (may be NULL: peers poll; called for a
   message, a freed slot or a native collective's epoch only when core announced that it
   waits; for the default build's barrier epoch, an abort, an attach or a recover step, every
   core). wait: sleep
   until this core's doorbell rang or a short tick passed (~1 ms; NULL: busy-poll); a doorbell
   rung before wait() was entered must not be lost (a pending flag). cache_clean: write back
   [p, p+n) to RAM; cache_invalidate: drop stale lines of [p, p+n) (both NULL when coherent).
   now_us: monotonic microseconds, wrapping (NULL: timeouts never expire). The last two may
   be left 0 (older initialisers leave them out). fence_others: a barrier after which every
   other core has passed a full memory barrier (Linux membarrier); with it a sender checks
   whether its receiver waits after a compiler barrier instead of a full barrier per message
   (a waiter calls it once, when it announces that it waits). spin_us: after the PG_SHM_SPIN
   polls, keep polling this long (by now_us) before announcing and calling wait() (a host,
   where a peer answers in < 1 us and a sleep costs tens; 0 on a microcontroller). Every
   core uses the same hook set. */
typedef struct pg_shm_hooks {
    void (*notify)(void *ctx, int core);
    void (*wait)(void *ctx, int self);
    void (*cache_clean)(void *ctx, const void *p, size_t n);
    void (*cache_invalidate)(void *ctx, const void *p, size_t n);
    uint32_t (*now_us)(void *ctx);
    void *ctx;
    void (*fence_others)(void *ctx);
    uint32_t spin_us;
} pg_shm_hooks;

/* ---- 3. Region, init, group --------------------------------------------------------- */
#define PG_SHM__UP(x)              ((((size_t)(x)) + PG_SHM_LINE - 1) / PG_SHM_LINE * PG_SHM_LINE)
/* Bytes of one slot with `payload` bytes, of one ring, and of the region for `cores`. */
#define PG_SHM__HDR                16u /* bytes of a slot header: index, tag, bytes, check */
#define PG_SHM_SLOT_BYTES(payload) PG_SHM__UP(payload)
#define PG_SHM_RING_BYTES(slots, payload) \
    (2u * PG_SHM_LINE + PG_SHM__UP(PG_SHM__HDR * (size_t)(slots)) + (size_t)(slots)*PG_SHM_SLOT_BYTES(payload))
/* Native collectives: two buffers per core (epochs alternate), each the epoch and the
   arguments' hash (PG_SHM__BUF_HEAD bytes), then up to PG_SHM_INLINE bytes of data: in the
   same line when they fit it, else from the next line on (pg_shm__at). */
#define PG_SHM__BUF_HEAD 8u
#define PG_SHM__BUF_BYTES \
    (PG_SHM_INLINE <= PG_SHM_LINE - PG_SHM__BUF_HEAD ? (size_t)PG_SHM_LINE : PG_SHM_LINE + PG_SHM__UP(PG_SHM_INLINE))
#define PG_SHM__AREA_BYTES (PG_SHM_NATIVE_COLLECTIVES ? 2u * PG_SHM__BUF_BYTES : 0u)
#define PG_SHM_REGION_BYTES(cores, slots, payload)                               \
    ((1u + (size_t)(cores)) * PG_SHM_LINE + (size_t)(cores)*PG_SHM__AREA_BYTES + \
     (size_t)(cores) * (size_t)(cores)*PG_SHM_RING_BYTES(slots, payload))

/* One core's state (core-local memory). Treat as opaque, and do not copy it: its group points
   into it (a copied group is refused with PG_ERR_COPIED). */
typedef struct pg_shm {
    volatile uint32_t *region;
    volatile uint32_t *area; /* core 0's collective buffers (native collectives) */
    int32_t rank, cores;
    uint32_t slots, payload, slot_words;
    uint32_t epoch, recovers; /* barrier and recover counters */
    uint32_t join, gen;       /* the recover round that completes this attach; the region's generation */
    uint32_t bit, len;        /* the message the last receive found: place, bytes, */
    uint32_t hash, met;       /* native: the collective's hash; the epoch every core published */
    void *msg;                /* payload */
    pg_shm_hooks hooks;
    volatile uint32_t *out[PG_SHM_MAX_CORES]; /* ring[rank][d] */
    volatile uint32_t *in[PG_SHM_MAX_CORES];  /* ring[s][rank] */
    uint32_t head[PG_SHM_MAX_CORES];          /* next write index into ring[rank][d] */
    uint32_t ptail[PG_SHM_MAX_CORES];         /* last read index seen of ring[rank][d] */
    uint32_t tail[PG_SHM_MAX_CORES];          /* next read index of ring[s][rank] */
    uint32_t seen[PG_SHM_MAX_CORES];          /* last write index read (validated) of ring[s][rank] */
    uint32_t done[PG_SHM_MAX_CORES];          /* consumed beyond tail (bit i = tail + i) */
    uint32_t busy[PG_SHM_MAX_CORES];          /* peeked, not released */
    void *acquired[PG_SHM_MAX_CORES];         /* the acquired payload of ring[rank][d] or 0 */
    pg_group group;                           /* the world group of this core (last: short offsets above) */
} pg_shm;

/* Lay out the region for `cores` cores, `slots` (power of two, 1..32) slots of `payload`
   bytes (multiple of 8) per ring, with a new generation: it writes the whole region. One
   core calls it at a cold start of the system (the others may already wait in
   pg_shm_init), never while another core is attached: a core that restarts alone only
   calls pg_shm_init. */
PG_SHM_API int pg_shm_format(void *region, size_t bytes, int cores, uint32_t slots, uint32_t payload);
/* Attach core `rank` (< cores) to the region: a rendezvous of every core of it. Waits up
   to PG_DEFAULT_TIMEOUT_MS for a header that checks, checks it against `bytes`, fills the
   world group, then waits (the world group's timeout) until every core finished a recover
   round begun after this attach. The same call re-attaches a core that restarted: its
   peers get PG_ERR_PEER_RESET and call pg_recover, which completes that round. Hooks are
   copied. PG_ERR_NULL, PG_ERR_SIZE (region not PG_SHM_LINE-aligned, bytes < PG_SHM_LINE)
   leave s untouched; PG_ERR_CORRUPT or PG_ERR_RANK (the header's geometry) and
   PG_ERR_TIMEOUT while no header checks leave it reset, not a usable group. PG_ERR_TIMEOUT
   from the round (a core not there yet) leaves an attached group: call pg_recover on it
   until it returns PG_OK (or pg_shm_init again). */
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
#if !defined(PG_IMPLEMENTATION) && (defined(PG_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error "pg_shm.h: PG_SHM_IMPLEMENTATION needs PG_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#include <string.h>
/* A word other cores may read or write at the same moment, without ordering (the format,
   the header): relaxed atomics where the published words are atomics. */
#ifdef PG_SHM__ATOMIC
#define PG_SHM__GET(p)    __atomic_load_n((p), __ATOMIC_RELAXED)
#define PG_SHM__PUT(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#else
#define PG_SHM__GET(p)    (*(p))
#define PG_SHM__PUT(p, v) (*(p) = (v))
#endif
#ifndef PG_SHM__CBAR /* a compiler barrier (where fence_others orders the cores) */
#if defined(__GNUC__) || defined(__clang__)
#define PG_SHM__CBAR() __asm__ __volatile__("" ::: "memory")
#else
#define PG_SHM__CBAR() PG_SHM_FENCE()
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PG_SHM__NOINLINE __attribute__((noinline)) /* shared checks: one copy, not one per caller */
#else
#define PG_SHM__NOINLINE
#endif
/* The per-message path (argument and abort checks, the first poll, index and header words,
   the doorbell check): inlined into send/recv when the build optimises for speed, left to
   the compiler under -Os (__OPTIMIZE_SIZE__: one copy each, as scons size measures). The
   code is the same either way; only where the compiler puts it differs. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__OPTIMIZE_SIZE__)
#define PG_SHM__HOT __attribute__((always_inline)) inline
#else
#define PG_SHM__HOT
#endif
#define PG_SHM__MAGIC     0x53484D32u /* "SHM2": the region header (2: native payloads start a line) */
#define PG_SHM__CHECK     0x5A5A5A5Au /* folded into every slot header's check word */
#define PG_SHM__LW        (PG_SHM_LINE / 4)
#define PG_SHM__MIX       0x9E3779B1u /* odd multiplier of the header check and the collectives' hash */
#define PG_SHM__FLAG      0x80000000u /* bit 31: set in every abort word, never in a tag */
#define PG_SHM__RESET     0x7FFFFFFFu /* abort word of a core that (re)attaches: peers see PG_ERR_PEER_RESET */
#define PG_SHM__MAX_SLOTS 32u         /* a ring's slots: one bit each in done[] and busy[] */
#define PG_SHM__MAX_PAY   0x1000000u  /* largest slot payload (16 MB): keeps sizes in 32 bits */
#define PG_SHM__MAX_WAIT  4000000u    /* timeouts up to this many ms count in us without overflow */
/* header-line words (written by pg_shm_format only) */
enum { PG_SHM__MAGIC_W = 0, PG_SHM__CORES_W, PG_SHM__SLOTS_W, PG_SHM__PAYLOAD_W, PG_SHM__GEN_W, PG_SHM__CHECK_W };
/* control-line words (per core) */
enum {
    PG_SHM__ABORT = 0,
    PG_SHM__EPOCH,
    PG_SHM__PTR0,
    PG_SHM__PTR1,
    PG_SHM__PTR2,
    PG_SHM__PTR3,
    PG_SHM__RECOVER,
    PG_SHM__WAIT,
    PG_SHM__GEN /* the generation this core last attached to */
};
/* Recover counters of generation g start at g << PG_SHM__GEN_SHIFT, so a counter a core
   wrote in an earlier generation is never within PG_SHM__LEAD of a current one. */
#define PG_SHM__GEN_SHIFT 20
#define PG_SHM__LEAD      8u /* a counter is "reached" when 0..LEAD-1 ahead: no core runs further ahead */

typedef int (*pg_shm__poll)(pg_shm *s, int a, uint32_t b);

static PG_SHM__HOT volatile uint32_t *pg_shm__ctl(const pg_shm *s, int core)
{
    return s->region + PG_SHM__LW * (1 + core);
}

/* Header words of slot `index` of a ring (packed after the payloads). */
static PG_SHM__HOT volatile uint32_t *pg_shm__slot(const pg_shm *s, volatile uint32_t *ring, uint32_t index)
{
    return ring + 2 * PG_SHM__LW + s->slots * s->slot_words + (index & (s->slots - 1u)) * 4u;
}

/* Payload of slot `index` of a ring. */
static PG_SHM__HOT void *pg_shm__pay(const pg_shm *s, volatile uint32_t *ring, uint32_t index)
{
    return (void *)(ring + 2 * PG_SHM__LW + (index & (s->slots - 1u)) * s->slot_words);
}

/* Payload of the message `bit` places after the read index of ring[src][rank]. */
static PG_SHM__HOT void *pg_shm__msg(const pg_shm *s, int src, uint32_t bit)
{
    return pg_shm__pay(s, s->in[src], s->tail[src] + bit);
}

static PG_SHM__HOT void pg_shm__inval(const pg_shm *s, const volatile void *p, size_t n)
{
    if (s->hooks.cache_invalidate) s->hooks.cache_invalidate(s->hooks.ctx, (const void *)p, n);
}

static PG_SHM__HOT void pg_shm__clean(const pg_shm *s, const volatile void *p, size_t n)
{
    if (s->hooks.cache_clean) s->hooks.cache_clean(s->hooks.ctx, (const void *)p, n);
}

static void pg_shm__notify(const pg_shm *s, int core)
{
    if (s->hooks.notify) s->hooks.notify(s->hooks.ctx, core);
}

/* Read a peer-written word (acquire). */
static PG_SHM__HOT uint32_t pg_shm__load(const pg_shm *s, const volatile uint32_t *w)
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
static PG_SHM__HOT void pg_shm__store(const pg_shm *s, volatile uint32_t *w, uint32_t v)
{
#ifdef PG_SHM__ATOMIC
    __atomic_store_n(w, v, __ATOMIC_RELEASE);
#else
    PG_SHM_FENCE_REL();
    *w = v;
#endif
    pg_shm__clean(s, w, 4);
}

/* Publish word `word` of this core's control line and ring every core's doorbell. */
static void pg_shm__announce(const pg_shm *s, int word, uint32_t v)
{
    int c;
    pg_shm__store(s, pg_shm__ctl(s, s->rank) + word, v);
    PG_SHM_FENCE();
    for (c = 0; c < s->cores; c++) pg_shm__notify(s, c);
}

/* PG_ERR_ABORTED when a core aborted, PG_ERR_PEER_RESET when one (re)attached: its abort
   word until the recover round that follows clears it. */
static PG_SHM__HOT int pg_shm__aborted(const pg_shm *s)
{
    const volatile uint32_t *w = pg_shm__ctl(s, 0) + PG_SHM__ABORT, *end = pg_shm__ctl(s, s->cores);
    uint32_t v;
    for (; w != end; w += PG_SHM__LW)
        if ((v = pg_shm__load(s, w)) != 0) return v == PG_SHM__RESET ? PG_ERR_PEER_RESET : PG_ERR_ABORTED;
    return PG_OK;
}

/* The header still names the generation this core attached to (a region re-formatted or
   wiped under an attached core is corrupt for it). Checked where a wait stops spinning. */
static int pg_shm__same_region(const pg_shm *s)
{
    const volatile uint32_t *w = s->region;
    if (!s->cores) return PG_OK; /* not attached yet: pg_shm_init waits for a header */
    return ((pg_shm__load(s, w) ^ PG_SHM__MAGIC) | (PG_SHM__GET(w + PG_SHM__GEN_W) ^ s->gen)) != 0u ? PG_ERR_CORRUPT
                                                                                                    : PG_OK;
}

/* The one wait loop: poll(s, a, b) until it returns non-zero (> 0 done, < 0 an error);
   PG_SHM_SPIN polls, then between polls: the abort check (check_abort), the clock
   (timeout_ms; 0 = poll once, PG_WAIT_FOREVER) and hooks.wait(). Before the first wait()
   the core announces that it waits (control word PG_SHM__WAIT, which tells senders to ring
   its doorbell) and polls once more; it withdraws the announcement when it leaves. */
static int pg_shm__wait_loop(pg_shm *s, pg_shm__poll poll, int a, uint32_t b, uint32_t timeout_ms, int check_abort)
{
    uint32_t spins = 0, t0 = 0, now,
             limit = (timeout_ms > PG_SHM__MAX_WAIT ? PG_SHM__MAX_WAIT : timeout_ms) * 1000u; /* us */
    volatile uint32_t *flag = 0;
    int rc;
    while ((rc = poll(s, a, b)) == 0) {
        if (timeout_ms && ++spins < PG_SHM_SPIN) continue;
        if ((rc = pg_shm__same_region(s)) != 0) break;             /* STEP check_generation */
        if (check_abort && (rc = pg_shm__aborted(s)) != 0) break;  /* STEP check_abort */
        now = s->hooks.now_us ? s->hooks.now_us(s->hooks.ctx) : 0; /* no clock: never expires */
        if (spins == PG_SHM_SPIN)
            t0 = now; /* the clock starts after the spins */
        else if (timeout_ms != PG_WAIT_FOREVER && now - t0 >= limit) {
            rc = PG_ERR_TIMEOUT;
            break;
        }
        if (!s->hooks.wait) continue;
        if (!flag && check_abort) { /* (syncs need not: pg_shm__announce rings every core) */
            if (now - t0 < s->hooks.spin_us) continue;
            flag = pg_shm__ctl(s, s->rank) + PG_SHM__WAIT;
            pg_shm__store(s, flag, 1); /* STEP announce */
            PG_SHM_FENCE();            /* announce before the poll; with fence_others, the senders' too */
            if (s->hooks.fence_others) s->hooks.fence_others(s->hooks.ctx);
            continue; /* poll once more: a sender that missed the announcement published first */
        }
        s->hooks.wait(s->hooks.ctx, s->rank); /* STEP wait */
    }
    if (flag) pg_shm__store(s, flag, 0); /* STEP withdraw */
    return rc < 0 ? rc : PG_OK;
}

/* The first poll apart, where send/recv inline it (no wait loop set up for a ready slot). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__OPTIMIZE_SIZE__)
static PG_SHM__HOT int pg_shm__wait(pg_shm *s, pg_shm__poll poll, int a, uint32_t b, uint32_t timeout_ms,
                                    int check_abort)
{
    int rc = poll(s, a, b);
    if (rc) return rc < 0 ? rc : PG_OK;
    return pg_shm__wait_loop(s, poll, a, b, timeout_ms, check_abort);
}
#else
#define pg_shm__wait pg_shm__wait_loop
#endif

/* After publishing an index core `core` may wait for: ring its doorbell if it announced
   that it waits (no doorbell, no interrupt or syscall, while it polls). */
static PG_SHM__HOT void pg_shm__wake(const pg_shm *s, int core)
{
    if (!s->hooks.notify) return;
    if (s->hooks.fence_others)
        PG_SHM__CBAR(); /* the waiter's fence_others orders this core */
    else
        PG_SHM_FENCE(); /* the index before the look at the waiter's word (store -> load) */
    if (pg_shm__load(s, pg_shm__ctl(s, core) + PG_SHM__WAIT)) /* STEP check_waiting */
        s->hooks.notify(s->hooks.ctx, core);                  /* STEP notify */
}

/* The one validation of a peer-written ring index (at w): its distance from this core's
   own index `mine` — ahead of it when the peer writes the ring (writer = 1), behind it
   when the peer reads it. More than `slots` apart is corrupt shared memory. */
PG_SHM__NOINLINE static int pg_shm__gap(const pg_shm *s, const volatile uint32_t *w, uint32_t mine, int writer)
{
    uint32_t v = pg_shm__load(s, w), d = writer ? v - mine : mine - v;
    return d > s->slots ? PG_ERR_CORRUPT : (int)d;
}

/* Argument checks of every p2p entry. ok: 0 = a required pointer is NULL, 1 = check,
   then the abort flags (calls that may wait), 2 = check only. */
static PG_SHM__HOT int pg_shm__args(const pg_shm *s, int peer, uint32_t tag, size_t bytes, int ok)
{
    if (!ok) return PG_ERR_NULL;
    if ((unsigned)peer >= (unsigned)s->cores) return PG_ERR_RANK;
    if (tag & PG_SHM__FLAG) return PG_ERR_TAG;
    if (bytes > s->payload) return PG_ERR_TOO_BIG;
    return ok == 1 ? pg_shm__aborted(s) : PG_OK;
}

/* ---- sending: a send is acquire + copy + commit ---- */
/* poll: ring[rank][dst] has a free slot (reloads the read index only when it looks full).
   The protocol's steps are named as in the spin model ports/pg_shm.pml (STEP comments). */
static PG_SHM__HOT int pg_shm__space(pg_shm *s, int dst, uint32_t unused) /* STEP reserve */
{
    uint32_t h = s->head[dst];
    int d;
    (void)unused;
    if (h - s->ptail[dst] < s->slots) return 1;
    d = pg_shm__gap(s, s->out[dst] + PG_SHM__LW, h, 0); /* STEP load_read_index */
    if (d < 0) return d;
    s->ptail[dst] = h - (uint32_t)d;
    return (uint32_t)d < s->slots;
}

static PG_SHM__HOT int pg_shm__acquire(void *port, int dst, size_t bytes, void **ptr, uint32_t timeout_ms)
{
    pg_shm *s = (pg_shm *)port;
    int rc = pg_shm__args(s, dst, 0, bytes, ptr != 0);
    if (rc) return rc;
    if (s->acquired[dst]) return PG_ERR_NO_SLOT;
    rc = pg_shm__wait(s, pg_shm__space, dst, 0, timeout_ms, 1);
    if (rc) return rc;
    *ptr = s->acquired[dst] = pg_shm__pay(s, s->out[dst], s->head[dst]);
    return PG_OK;
}

/* Header, then the write index (release), then the doorbell if dst waits. */
static PG_SHM__HOT int pg_shm__commit(void *port, int dst, uint32_t tag, void *ptr, size_t bytes)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *slot;
    uint32_t h, n = (uint32_t)bytes;
    int rc = pg_shm__args(s, dst, tag, bytes, ptr ? 2 : 0);
    if (rc) return rc;
    if (ptr != s->acquired[dst]) return PG_ERR_NO_SLOT;
    s->acquired[dst] = 0;
    h = s->head[dst];
    slot = pg_shm__slot(s, s->out[dst], h);
    slot[0] = h; /* STEP write_slot (the payload is already there) */
    slot[1] = tag;
    slot[2] = n;
    slot[3] = h ^ tag ^ n ^ PG_SHM__CHECK;
    pg_shm__clean(s, ptr, bytes);
    pg_shm__clean(s, slot, PG_SHM__HDR);
    s->head[dst] = h + 1u;
    pg_shm__store(s, s->out[dst], h + 1u); /* STEP publish_index */
    pg_shm__wake(s, dst);
    return PG_OK;
}

static int pg_shm__send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    void *p;
    int rc = pg_shm__args((pg_shm *)port, dst, tag, bytes, buf || !bytes ? 2 : 0);
    if (rc == PG_OK) rc = pg_shm__acquire(port, dst, bytes, &p, timeout_ms);
    if (rc) return rc;
    if (bytes) memcpy(p, buf, bytes);
    return pg_shm__commit(port, dst, tag, p, bytes);
}

/* ---- receiving: find (src, tag), then copy or lend the slot, then consume ---- */
/* poll: the oldest unclaimed message (src, tag) of ring[src][rank], validated; sets
   s->bit (its place after the read index) and s->len from the checked header copy. The
   write index is read again only when every message known from the last read is passed. */
static PG_SHM__HOT int pg_shm__find(pg_shm *s, int src, uint32_t tag)
{
    volatile uint32_t *r = s->in[src], *sl;
    uint32_t t = s->tail[src], i, w[4], d = s->seen[src] - t;
    int g;
    for (i = 0;; i++) {
        if (i == d) {
            g = pg_shm__gap(s, r, t, 1); /* STEP load_write_index: messages waiting */
            if (g < 0) return g;
            if ((uint32_t)g <= d) return (uint32_t)g < d ? PG_ERR_CORRUPT : 0; /* went back? */
            d = (uint32_t)g;
            s->seen[src] = t + d;
        }
        if ((s->done[src] | s->busy[src]) >> i & 1u) continue;
        sl = pg_shm__slot(s, r, t + i);
        pg_shm__inval(s, sl, PG_SHM__HDR);
        w[0] = sl[0];
        w[1] = sl[1];
        w[2] = sl[2];
        w[3] = sl[3]; /* STEP check_header */
        if (w[0] != t + i || w[2] > s->payload || w[3] != (w[0] ^ w[1] ^ w[2] ^ PG_SHM__CHECK)) return PG_ERR_CORRUPT;
        if (w[1] == tag) {
            s->bit = i;
            s->len = w[2];
            s->msg = pg_shm__pay(s, r, t + i);
            pg_shm__inval(s, s->msg, w[2]);
            return 1;
        }
    }
}

/* The wait of recv, peek and probe: the arguments, then the message (src, tag); its bytes
   into *bytes (may be NULL) once found. */
static PG_SHM__HOT int pg_shm__take(pg_shm *s, int src, uint32_t tag, int ok, uint32_t timeout_ms, size_t *bytes)
{
    int rc = pg_shm__args(s, src, tag, 0, ok);
    if (rc == PG_OK) rc = pg_shm__wait(s, pg_shm__find, src, tag, timeout_ms, 1);
    if (rc == PG_OK && bytes) *bytes = s->len;
    return rc;
}

/* Publish ring[src][rank]'s read index t. */
static PG_SHM__HOT void pg_shm__advance(pg_shm *s, int src, uint32_t t)
{
    s->tail[src] = t;
    pg_shm__store(s, s->in[src] + PG_SHM__LW, t); /* STEP publish_read_index */
    pg_shm__wake(s, src);
}

/* Mark message `bit` consumed; the read index moves over every consumed one in front. */
static PG_SHM__HOT void pg_shm__consume(pg_shm *s, int src, uint32_t bit)
{
    uint32_t t = s->tail[src];
    s->done[src] |= 1u << bit;
    s->busy[src] &= ~(1u << bit);
    while (s->done[src] & 1u) {
        s->done[src] >>= 1;
        s->busy[src] >>= 1;
        t++;
    }
    if (t != s->tail[src]) pg_shm__advance(s, src, t);
}

static int pg_shm__recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    pg_shm *s = (pg_shm *)port;
    int rc = pg_shm__take(s, src, tag, buf || !cap, timeout_ms, got);
    if (rc) return rc;
    if (s->len > cap)
        rc = PG_ERR_TOO_BIG; /* consumed and reported */
    else if (s->len)
        memcpy(buf, s->msg, s->len); /* STEP read_payload */
    pg_shm__consume(s, src, s->bit);
    return rc;
}

static int pg_shm__probe(void *port, int src, uint32_t tag, size_t *bytes)
{
    pg_shm *s = (pg_shm *)port;
    int rc = pg_shm__take(s, src, tag, 1, 0, bytes);
    if (rc) return rc == PG_ERR_TIMEOUT ? 0 : rc;
    return 1;
}

static int pg_shm__peek(void *port, int src, uint32_t tag, const void **ptr, size_t *bytes, uint32_t timeout_ms)
{
    pg_shm *s = (pg_shm *)port;
    int rc = pg_shm__take(s, src, tag, ptr != 0, timeout_ms, bytes);
    if (rc) return rc;
    s->busy[src] |= 1u << s->bit;
    *ptr = s->msg;
    return PG_OK;
}

static int pg_shm__release(void *port, int src, const void *ptr)
{
    pg_shm *s = (pg_shm *)port;
    uint32_t i;
    if ((unsigned)src >= (unsigned)s->cores) return PG_ERR_RANK;
    for (i = 0; i < s->slots; i++)
        if ((s->busy[src] >> i & 1u) && ptr == pg_shm__msg(s, src, i)) {
            pg_shm__consume(s, src, i);
            return PG_OK;
        }
    return PG_ERR_NO_SLOT;
}

/* ---- abort, world syncs, recover, barrier ---- */
static int pg_shm__abort(void *port, int err)
{
    pg_shm__announce((pg_shm *)port, PG_SHM__ABORT, (uint32_t)err | PG_SHM__FLAG);
    return PG_OK;
}

/* poll: every core's control word `word` reached e (and is not further ahead than a core
   can run: memory from an earlier boot or generation does not count) */
static int pg_shm__reached(pg_shm *s, int word, uint32_t e)
{
    int c;
    for (c = 0; c < s->cores; c++)
        if (pg_shm__load(s, pg_shm__ctl(s, c) + word) - e >= PG_SHM__LEAD) return 0;
    return 1;
}

/* Recover in rounds of three steps on each core's RECOVER word (only it writes it): 4k+1
   arrived, 4k+2 committed (it saw every core arrive), 4k+4 done (with nobody sending, it
   dropped its inbox, forgot acquired slots, cleared its abort word and restarted its epoch:
   a failed collective may have left epochs apart). A core takes a step once every core
   reached the one before. Each wait is bounded by the world group's timeout; on a timeout
   an arrival is withdrawn (back to 4k), a commit or done stays, and the next call resumes
   there. Nobody commits before every core arrived, and a committed core counts as arrived,
   so a core whose withdrawal a peer missed arrives again and commits too. Recovers that
   time out (a core that stalls) leave no core out of step: the world is usable again once
   every core calls pg_recover within one timeout of the others. A core that attached owes
   a whole round of its own (s->join): it returns only after every core finished a round
   begun after the attach, which memory left from an earlier boot cannot fake (that needs
   every core done with a round this core never arrived at). */
static int pg_shm__recover(void *port)
{
    pg_shm *s = (pg_shm *)port;
    volatile uint32_t *me = pg_shm__ctl(s, s->rank); /* its control line */
    uint32_t v = s->recovers;
    int c, d;
    if (!(v & 3u) && pg_shm__reached(s, PG_SHM__RECOVER, v)) v++; /* STEP arrive (between rounds) */
    for (;;) { /* announce step v (again, when resuming), wait until every core reached it */
        pg_shm__announce(s, PG_SHM__RECOVER, s->recovers = v);                            /* STEP round_step */
        d = pg_shm__wait(s, pg_shm__reached, PG_SHM__RECOVER, v, s->group.timeout_ms, 0); /* STEP round_poll */
        if (d < 0) { /* PG_ERR_TIMEOUT, or PG_ERR_CORRUPT: the region was re-formatted */
            if (v & 1u) pg_shm__announce(s, PG_SHM__RECOVER, s->recovers = v - 1u); /* withdraw */
            return d;
        }
        if (!(v & 3u)) { /* every core done */
            if ((int32_t)(v - s->join) >= 0) return PG_OK;
            v++; /* the attach's own round: arrive */
            continue;
        }
        if (v & 2u) { /* STEP drop_inbox: every core committed, nobody sends */
            for (c = 0; c < s->cores; c++) {
                d = pg_shm__gap(s, s->in[c], s->tail[c], 1);
                if (d < 0) return d;
                s->done[c] = s->busy[c] = 0;
                s->seen[c] = s->tail[c] + (uint32_t)d;
                pg_shm__advance(s, c, s->seen[c]);
            }
            memset((void *)s->acquired, 0, sizeof s->acquired);
            s->epoch = s->met = 0;
#if PG_SHM_NATIVE_COLLECTIVES
            pg_shm__store(s, s->area + (size_t)(2 * s->rank) * (PG_SHM__BUF_BYTES / 4), 0);
            pg_shm__store(s, s->area + (size_t)(2 * s->rank + 1) * (PG_SHM__BUF_BYTES / 4), 0);
#else
            pg_shm__store(s, me + PG_SHM__EPOCH, 0);
#endif
            pg_shm__store(s, me + PG_SHM__ABORT, 0);
        }
        v += 1u + (v >> 1 & 1u); /* arrived -> committed -> done */
    }
}

/* The world barrier is always native: a core leaves it only after every core arrived, so an
   abort right after a barrier never catches a peer still inside it (pg.h's message barrier
   can: a fast rank leaves while a slow one still waits for its last message). */
#if PG_SHM_NATIVE_COLLECTIVES
/* Native world collectives and barrier. Every meeting of the cores is one epoch e: a core
   writes what it brings (the arguments' hash, and a payload of up to PG_SHM_INLINE bytes) into
   its buffer e & 1, publishes e at the head of that buffer (release) and rings the cores that
   announced that they wait; then it waits until every core's buffer e & 1 holds e and compares
   every core's hash (all cores read the same hashes, so all see a mismatch), or, in a
   broadcast, until the root's does (the root waits for nobody). One line transfer each way per
   meeting when the payload fits beside the epoch and the hash (56 B with 64-byte lines); a
   larger one fills lines of its own before the epoch is published. Buffers alternate, and a
   core writes buffer e & 1 only once every core published e - 1 (s->met: a core that met every
   core at e - 1 knows it already), which each did after reading epoch e - 2's payloads: a core
   that runs ahead never overwrites what a slower core still reads. So a core's published epoch
   is e, e - 1 or e - 2 when another waits for e (another value is corrupt); the recover round
   sets both buffers' to 0 with the epoch count. */
enum { PG_SHM__SEQ = 0, PG_SHM__HASH = 1, PG_SHM__DATA = 2 }; /* words of a buffer */

/* Word of a buffer where a payload of `bytes` starts: up to a line's worth it travels in the
   epoch's line; a larger one starts on the next line, so a core filling it never writes the
   line its peers poll (on the host that contention cost more than the extra line: 64 B 0.138
   -> 0.113 us, 1 KB 0.366 -> 0.298 us per 2-core all_reduce). Writer and readers size it
   from the same figure: what the writing core brought. */
static PG_SHM__HOT size_t pg_shm__at(size_t bytes)
{
    return bytes <= PG_SHM_LINE - PG_SHM__BUF_HEAD ? (size_t)PG_SHM__DATA : (size_t)PG_SHM__LW;
}
enum { PG_SHM__K_BARRIER = 1, PG_SHM__K_REDUCE, PG_SHM__K_GATHER, PG_SHM__K_SCATTER, PG_SHM__K_BCAST };

/* The hash every core compares: the collective, its dtype, op (broadcast: root) and count. */
static uint32_t pg_shm__hash(int kind, mb_dtype dt, int op, size_t count)
{
    return (((uint32_t)kind << 16 | (uint32_t)dt << 8 | (uint32_t)op) ^ (uint32_t)count) * PG_SHM__MIX;
}

#define PG_SHM__BUF_WORDS (PG_SHM__BUF_BYTES / 4)

/* Core c's buffer of epoch e. */
static PG_SHM__HOT volatile uint32_t *pg_shm__buf(const pg_shm *s, int c, uint32_t e)
{
    return s->area + (size_t)(2 * c + (int)(e & 1u)) * PG_SHM__BUF_WORDS;
}

/* poll: every core (or core `only`, when >= 0) published epoch e; a hash other than
   s->hash (when not 0) is a mismatch: every core compares the same hashes */
static int pg_shm__arrived(pg_shm *s, int only, uint32_t e)
{
    const volatile uint32_t *b = pg_shm__buf(s, only < 0 ? 0 : only, e);
    uint32_t d;
    int c, n = only < 0 ? s->cores : 1;
    for (c = 0; c < n; c++, b += 2 * PG_SHM__BUF_WORDS) {
        if ((d = e - pg_shm__load(s, b)) != 0) return d > 2u ? PG_ERR_CORRUPT : 0; /* STEP wait_epoch */
        if (s->hash && b[PG_SHM__HASH] != s->hash) return PG_ERR_MISMATCH;
    }
    return 1;
}

/* Meet at the next epoch with `hash`, bringing `bytes` of `data`; wait for every core (only
   < 0) or core `only`. PG_OK, PG_ERR_MISMATCH, or a wait's error. */
static int pg_shm__meet(pg_shm *s, uint32_t hash, const void *data, size_t bytes, int only, uint32_t timeout_ms)
{
    uint32_t e = s->epoch + 1u;
    volatile uint32_t *b = pg_shm__buf(s, s->rank, e);
    size_t at = pg_shm__at(bytes);
    int c, rc = pg_shm__aborted(s);
    if (rc) return rc;        /* never arrive when aborted */
    if (s->met != s->epoch) { /* STEP wait_reuse: every core done with this buffer's last epoch */
        s->hash = 0;
        rc = pg_shm__wait(s, pg_shm__arrived, -1, s->epoch, timeout_ms, 1);
        if (rc) return rc;
        s->met = s->epoch;
    }
    if (bytes) memcpy((void *)(b + at), data, bytes); /* STEP write_data */
    s->epoch = e;
    s->hash = b[PG_SHM__HASH] = hash;
    pg_shm__clean(s, b, at * 4u + bytes);
    pg_shm__store(s, b + PG_SHM__SEQ, e); /* STEP publish_epoch */
    if (s->hooks.notify) {                /* ring the cores that announced that they wait */
        if (s->hooks.fence_others)
            PG_SHM__CBAR();
        else
            PG_SHM_FENCE(); /* the epoch before the look at the waiters' words (store -> load) */
        for (c = 0; c < s->cores; c++)
            if (pg_shm__load(s, pg_shm__ctl(s, c) + PG_SHM__WAIT)) /* STEP check_waiting */
                s->hooks.notify(s->hooks.ctx, c);                  /* STEP notify */
    }
    if (only == s->rank) return PG_OK; /* a broadcast's root */
    rc = pg_shm__wait(s, pg_shm__arrived, only, e, timeout_ms, 1);
    if (rc == PG_OK && only < 0) s->met = e;
    return rc;
}

static int pg_shm__barrier(pg_group *g)
{
    return g->context ? PG_ERR_UNSUPPORTED
                      : pg_shm__meet((pg_shm *)g->port, PG_SHM__K_BARRIER, 0, 0, -1, g->timeout_ms);
}

/* Core c's payload (`bytes`, what it brought) of the epoch this core just met at (read after
   the meeting). */
static const unsigned char *pg_shm__data(const pg_shm *s, int c, size_t bytes)
{
    const volatile uint32_t *b = pg_shm__buf(s, c, s->epoch) + pg_shm__at(bytes);
    pg_shm__inval(s, b, bytes);
    return (const unsigned char *)b; /* STEP read_data */
}

/* out[0..n) = op over cores in rank order of the n elements (`bytes`) at `at` bytes into
   each core's payload of `total` bytes: the same order on every core, so the same bits. */
static void pg_shm__reduce_data(const pg_shm *s, void *out, size_t at, size_t n, size_t bytes, size_t total,
                                mb_dtype dt, int op)
{
    pg_red rop = op == PG_AVG ? PG_SUM : (pg_red)op;
    int c;
    if (s->cores == 1)
        memcpy(out, pg_shm__data(s, 0, total) + at, bytes);
    else
        pg_reduce_into(out, pg_shm__data(s, 0, total) + at, pg_shm__data(s, 1, total) + at, n, dt, rop);
    for (c = 2; c < s->cores; c++) pg_reduce_local(out, pg_shm__data(s, c, total) + at, n, dt, rop);
    if (op == PG_AVG) pg_scale_local(out, n, dt, s->cores);
}

/* Native world collectives, one routine: all_reduce (`count` elements, op), all_gatherv
   (counts[c] elements of core c, packed), reduce_scatterv (counts[c] of the reduced send go
   to core c; op) and broadcast (`count` elements of core `op`, the root). The hash covers
   kind, dtype, op or root, the count and every core's count. Small ones (what a core brings
   fits PG_SHM_INLINE: all_reduce its count, all_gatherv its block, reduce_scatterv its whole
   send, broadcast the root's count) copy it into the core's buffer, meet once and take
   everything from the buffers: all_reduce and reduce_scatter reduce in rank order on every
   core; a broadcast's root meets nobody. Larger all_reduce, all_gatherv and broadcast (an
   all_gatherv where only the root's block is not empty) read peers' buffers in place:
   pointers in the control line, a meeting; all_reduce: each core reduces its block of every
   core's send into its recv, its own value first and then the others around the ring (a
   fixed order per block), and meets; then each core copies every other block from its
   owner (all_reduce: the owner's recv) and meets again, so no buffer changes while a peer
   still reads it. Larger reduce_scatters go to pg.h's ring. */
static unsigned char *pg_shm__peer(const pg_shm *s, int core, int which)
{
    volatile uint32_t *p = pg_shm__ctl(s, core) + PG_SHM__PTR0 + 2 * which;
    uintptr_t a = p[0];
    if (sizeof a > 4) a |= (uintptr_t)((uint64_t)p[1] << 32); /* no second load on 32-bit */
    return (unsigned char *)a;
}

static int pg_shm__coll(pg_group *g, const void *send, void *recv, size_t count, const size_t *counts, mb_dtype dt,
                        int kind, int op)
{
    pg_shm *s = (pg_shm *)g->port;
    volatile uint32_t *w = pg_shm__ctl(s, s->rank);
    unsigned char *out = (unsigned char *)recv, *in, *dst;
    uint64_t pa = (uint64_t)(uintptr_t)send, pb = (uint64_t)(uintptr_t)recv;
    size_t es = pg_dtype_size(dt), bring = count * es, at = 0, len[PG_SHM_MAX_CORES], off[PG_SHM_MAX_CORES];
    uint32_t hash = pg_shm__hash(kind, dt, op, count);
    int c, j, k, p, me = s->rank, n = s->cores, rc, root = kind == PG_SHM__K_BCAST ? op : -1;
    if (g->context || (uint64_t)count >> 32) return PG_ERR_UNSUPPORTED; /* counts hashed in 32 bits */
    for (c = 0; counts && c < n; c++) { /* the v forms: core c's block is len[c] elements at off[c] */
        if ((uint64_t)counts[c] >> 32) return PG_ERR_UNSUPPORTED;
        hash = (hash ^ (uint32_t)counts[c]) * PG_SHM__MIX;
        len[c] = counts[c];
        off[c] = at;
        at += counts[c];
        if (counts[c] * es > bring) bring = counts[c] * es;
    }
    if (kind == PG_SHM__K_SCATTER) bring = at * es;
    if (bring <= PG_SHM_INLINE) {
        rc = pg_shm__meet(s, hash, send,
                          kind == PG_SHM__K_GATHER  ? len[me] * es
                          : root >= 0 && me != root ? 0
                                                    : bring,
                          root, g->timeout_ms);
        if (rc) return rc;
        if (kind == PG_SHM__K_REDUCE) pg_shm__reduce_data(s, recv, 0, count, bring, bring, dt, op);
        if (kind == PG_SHM__K_SCATTER) pg_shm__reduce_data(s, recv, off[me] * es, len[me], len[me] * es, bring, dt, op);
        if (root >= 0 && me != root) memcpy(recv, pg_shm__data(s, root, bring), bring);
        for (c = 0; kind == PG_SHM__K_GATHER && c < n; c++)
            if (len[c]) memmove(out + off[c] * es, c == me ? send : pg_shm__data(s, c, len[c] * es), len[c] * es);
        return PG_OK;
    }
    if (kind == PG_SHM__K_SCATTER) return PG_ERR_UNSUPPORTED;
    for (c = 0; !counts && c < n; c++) { /* all_reduce: core c's share; broadcast: the root's block */
        len[c] = root < 0 ? count * (size_t)(c + 1) / (size_t)n - at : c == root ? count : 0;
        off[c] = root < 0 ? at : 0;
        at += len[c];
    }
    w[PG_SHM__PTR0] = (uint32_t)pa;
    w[PG_SHM__PTR2] = (uint32_t)pb;
    if (sizeof(uintptr_t) > 4) {
        w[PG_SHM__PTR1] = (uint32_t)(pa >> 32);
        w[PG_SHM__PTR3] = (uint32_t)(pb >> 32);
    }
    pg_shm__clean(s, w, PG_SHM_LINE);
    pg_shm__clean(s, send, (kind == PG_SHM__K_GATHER ? len[me] : count) * es);
    for (p = kind != PG_SHM__K_REDUCE; p < 3; p++) {
        rc = pg_shm__meet(s, hash, 0, 0, -1, g->timeout_ms);
        if (rc || p == 2) return rc; /* a mismatch: every core sees it at the first meeting */
        /* p == 0 (all_reduce): my block of every core's send, reduced into my recv starting
           with my own; p == 1: every block straight from its owner (all_reduce: its recv) */
        for (k = 0; k < n; k++) {
            c = (me + k) % n;
            j = p ? c : me;
            in = pg_shm__peer(s, c, p && kind == PG_SHM__K_REDUCE) + (kind == PG_SHM__K_GATHER ? 0 : off[j] * es);
            dst = out + off[j] * es;
            if (in == dst || !len[j]) continue; /* already in place, or nothing */
            pg_shm__inval(s, in, len[j] * es);
            if (p || k == 0)
                memmove(dst, in, len[j] * es);
            else
                pg_reduce_local(dst, in, len[j], dt, op == PG_AVG ? PG_SUM : (pg_red)op);
        }
        if (p == 0) {
            if (op == PG_AVG) pg_scale_local(out + off[me] * es, len[me], dt, n);
            pg_shm__clean(s, out + off[me] * es, len[me] * es);
        }
    }
    return PG_OK;
}

static int pg_shm__all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
#if PG_SHM_SPLIT_REDUCE
    /* Where a float add costs tens of instructions, every core reducing the whole vector costs
       more than a second meeting: each reduces its share (reduce_scatter) and the shares travel
       back (all_gather in place), both through the buffers. */
    size_t bytes = count * pg_dtype_size(dt), counts[PG_SHM_MAX_CORES], at = 0;
    int c, n = g->size, rc;
    if ((dt == MB_F32 || dt == MB_F64) && n > 1 && bytes >= PG_SHM_SPLIT_REDUCE && bytes <= PG_SHM_INLINE) {
        for (c = 0; c < n; c++) at += counts[c] = count * (size_t)(c + 1) / (size_t)n - at;
        for (c = 0, at = 0; c < g->rank; c++) at += counts[c];
        at *= pg_dtype_size(dt);
        rc = pg_shm__coll(g, send, (unsigned char *)recv + at, 0, counts, dt, PG_SHM__K_SCATTER, (int)op);
        return rc ? rc : pg_shm__coll(g, (unsigned char *)recv + at, recv, 0, counts, dt, PG_SHM__K_GATHER, 0);
    }
#endif
    return pg_shm__coll(g, send, recv, count, 0, dt, PG_SHM__K_REDUCE, (int)op);
}

static int pg_shm__all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt)
{
    return pg_shm__coll(g, send, recv, 0, counts, dt, PG_SHM__K_GATHER, 0);
}

static int pg_shm__reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                                   pg_red op)
{
    return pg_shm__coll(g, send, recv, 0, counts, dt, PG_SHM__K_SCATTER, (int)op);
}

static int pg_shm__broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root)
{
    return pg_shm__coll(g, buf, buf, count, 0, dt, PG_SHM__K_BCAST, root);
}
#else
/* The world barrier: each core publishes its epoch count in its control line and waits for
   every core's. */
static int pg_shm__barrier(pg_group *g)
{
    pg_shm *s = (pg_shm *)g->port;
    int rc = g->context ? PG_ERR_UNSUPPORTED : pg_shm__aborted(s);
    if (rc) return rc; /* never arrive when aborted */
    pg_shm__announce(s, PG_SHM__EPOCH, ++s->epoch);
    return pg_shm__wait(s, pg_shm__reached, PG_SHM__EPOCH, s->epoch, g->timeout_ms, 1);
}
#endif /* PG_SHM_NATIVE_COLLECTIVES */

static const pg_ops pg_shm__ops = {pg_shm__send,
                                   pg_shm__recv,
                                   pg_shm__probe,
                                   pg_shm__acquire,
                                   pg_shm__commit,
                                   pg_shm__peek,
                                   pg_shm__release,
                                   pg_shm__abort,
                                   pg_shm__recover,
                                   pg_shm__barrier,
#if PG_SHM_NATIVE_COLLECTIVES /* all_gather, reduce_scatter: pg.h makes them the v forms */
                                   pg_shm__broadcast,
                                   pg_shm__all_reduce,
                                   0,
                                   pg_shm__all_gatherv,
                                   0,
                                   pg_shm__reduce_scatterv,
#else
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
#endif
                                   0,
                                   0,
                                   0};

PG_SHM_API const pg_ops *pg_shm_ops(void)
{
    return &pg_shm__ops;
}

PG_SHM_API pg_group *pg_shm_group(pg_shm *s)
{
    return s ? &s->group : 0;
}

/* Region bytes for a layout, 0 when out of range. */
static size_t pg_shm__bytes(uint32_t cores, uint32_t slots, uint32_t payload)
{
    if (cores - 1u >= PG_SHM_MAX_CORES || slots - 1u >= PG_SHM__MAX_SLOTS || (slots & (slots - 1u)) ||
        payload - 8u > PG_SHM__MAX_PAY - 8u || payload % 8)
        return 0;
    return PG_SHM_REGION_BYTES(cores, slots, payload);
}

/* The header's check word: geometry, generation and this build's layout (line size, the
   native collectives' buffers), mixed, so a half-written header, another build's layout or
   random memory does not read as formatted. */
PG_SHM__NOINLINE static uint32_t pg_shm__check(const uint32_t *h)
{
    uint32_t c = (PG_SHM__MAGIC ^ PG_SHM_LINE) + (uint32_t)PG_SHM__AREA_BYTES * PG_SHM__MIX, i;
    for (i = PG_SHM__CORES_W; i < PG_SHM__CHECK_W; i++) c = (c ^ h[i]) * PG_SHM__MIX;
    return c;
}

PG_SHM_API int pg_shm_format(void *region, size_t bytes, int cores, uint32_t slots, uint32_t payload)
{
    volatile uint32_t *w = (volatile uint32_t *)region;
    size_t need = pg_shm__bytes((uint32_t)cores, slots, payload);
    uint32_t h[PG_SHM__CHECK_W + 1];
    size_t i;
    if (!region) return PG_ERR_NULL;
    if (!need || need > bytes || (uintptr_t)region % PG_SHM_LINE) return PG_ERR_SIZE;
    h[PG_SHM__CORES_W] = (uint32_t)cores;
    h[PG_SHM__SLOTS_W] = slots;
    h[PG_SHM__PAYLOAD_W] = payload;
    h[PG_SHM__GEN_W] = w[PG_SHM__GEN_W] + 1u; /* STEP format: differs from whatever generation was there */
    h[PG_SHM__CHECK_W] = pg_shm__check(h);
    for (i = 0; i < need / 4; i++) PG_SHM__PUT(w + i, 0u); /* the magic word first: nobody attaches meanwhile */
    PG_SHM_FENCE();
    for (i = PG_SHM__CORES_W; i <= PG_SHM__CHECK_W; i++) PG_SHM__PUT(w + i, h[i]);
    PG_SHM_FENCE();
#ifdef PG_SHM__ATOMIC
    __atomic_store_n(w, PG_SHM__MAGIC, __ATOMIC_RELEASE);
#else
    w[PG_SHM__MAGIC_W] = PG_SHM__MAGIC;
#endif
    PG_SHM_FENCE();
    return PG_OK;
}

/* poll: the region's header checks; its words, each read once (a format may be under way:
   a mix of two headers fails the check), become this core's geometry and generation */
static int pg_shm__formatted(pg_shm *s, int unused_a, uint32_t unused_b)
{
    uint32_t h[PG_SHM__CHECK_W + 1], i;
    (void)unused_a;
    (void)unused_b;
    if (pg_shm__load(s, s->region) != PG_SHM__MAGIC) return 0; /* STEP check_header_line */
    for (i = PG_SHM__CORES_W; i <= PG_SHM__CHECK_W; i++) h[i] = PG_SHM__GET(s->region + i);
    if (h[PG_SHM__CHECK_W] != pg_shm__check(h)) return 0;
    s->cores = (int32_t)h[PG_SHM__CORES_W];
    s->slots = h[PG_SHM__SLOTS_W];
    s->payload = h[PG_SHM__PAYLOAD_W];
    s->gen = h[PG_SHM__GEN_W];
    return 1;
}

/* Attach: the geometry and generation of a formatted header, the ring indices this core
   last published (its own words, which its peers count on), the (re)attach announced in
   its abort word, then a recover round of its own. A header that changes meanwhile (the
   formatter came later than this core) starts it over. */
PG_SHM_API int pg_shm_init(pg_shm *s, void *region, size_t bytes, int rank, const pg_shm_hooks *hooks)
{
    volatile uint32_t *w = (volatile uint32_t *)region, *r, *me;
    size_t need, rw;
    uint32_t v;
    int c, rc;
    if (!s || !region || !hooks) return PG_ERR_NULL;
    if ((uintptr_t)region % PG_SHM_LINE || bytes < PG_SHM_LINE) return PG_ERR_SIZE; /* s untouched */
    do {
        memset(s, 0, sizeof *s);
        s->hooks = *hooks;
        s->region = w;
        s->rank = rank;
        rc = pg_shm__wait(s, pg_shm__formatted, 0, 0, PG_DEFAULT_TIMEOUT_MS, 0);
        if (rc) return rc;
        need = pg_shm__bytes((uint32_t)s->cores, s->slots, s->payload); /* STEP attach */
        if (!need || need > bytes) return PG_ERR_CORRUPT;
        /* the world group; PG_ERR_RANK for a rank the header has no core for */
        if ((rc = pg_group_init(&s->group, &pg_shm__ops, s, rank, s->cores, s->payload)) != 0) return rc;
        s->slot_words = (uint32_t)(PG_SHM_SLOT_BYTES(s->payload) / 4);
        rw = PG_SHM_RING_BYTES(s->slots, s->payload) / 4;
        s->area = w + PG_SHM__LW * (1 + s->cores);
        r = s->area +
            (size_t)s->cores * (PG_SHM__AREA_BYTES / 4); /* ring[0][0]; ring[src][dst] is number src * cores + dst */
        for (c = 0; c < s->cores; c++) {
            s->out[c] = r + (size_t)(rank * s->cores + c) * rw;
            s->in[c] = r + (size_t)(c * s->cores + rank) * rw;
            s->head[c] = PG_SHM__GET(s->out[c]); /* this core's own published indices */
            s->ptail[c] = s->head[c] - s->slots;
            s->seen[c] = s->tail[c] = PG_SHM__GET(s->in[c] + PG_SHM__LW);
        }
        me = pg_shm__ctl(s, rank);
        v = s->gen << PG_SHM__GEN_SHIFT;             /* the first attach to this generation */
        if (PG_SHM__GET(me + PG_SHM__GEN) == s->gen) /* again: past the round it was in */
            v = (PG_SHM__GET(me + PG_SHM__RECOVER) + 4u) & ~3u;
        s->recovers = v;
        s->join = v + 4u;
        pg_shm__store(s, me + PG_SHM__RECOVER, v);
        pg_shm__store(s, me + PG_SHM__GEN, s->gen);
        pg_shm__announce(s, PG_SHM__ABORT, PG_SHM__RESET); /* STEP announce_reset */
        rc = pg_shm__recover(s);
    } while (rc == PG_ERR_CORRUPT && pg_shm__same_region(s)); /* re-formatted, or being formatted */
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* PG_SHM_IMPLEMENTATION */
