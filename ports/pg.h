/* pg.h — the process-group contract every splitcore port implements (splitcore)

   A process group ("pg", as torch.distributed users know it) gives ranks 0..size-1 and
   lets them exchange tagged messages and run collectives. A *port* (pg_pthread.h,
   pg_shm.h, pg_mpi.h, ...) fills a small vtable (pg_ops): tagged send/recv with a
   timeout, a non-blocking probe, optional zero-copy slots, optional barrier/abort and
   optional native collectives. pg.h implements everything else over point-to-point:
   sub-groups (a row of a 2-D mesh) with their own tag context, and the collectives
   broadcast, all_reduce (sum, avg, max, min, prod), all_gather(v), reduce_scatter(v),
   all_to_all(v), gather(v), scatter(v), barrier — over microbatch.h's dtypes, with
   uneven per-rank counts, deterministic reduction order and size-mismatch detection.
   No heap, no OS headers, C99, C++-clean. pipeline.h and dtensor.h talk only to this.

   Example (any port; pg_pthread shown):
       #define PG_IMPLEMENTATION
       #include <splitcore/ports/pg.h>
       #define PG_PTHREAD_IMPLEMENTATION
       #include <splitcore/ports/pg_pthread.h>
       static pg_pthread_world world;                    // static storage, no heap
       static int body(pg_group *g, void *arg) {         // runs on every rank
           float x[256]; fill(x, pg_rank(g));
           int rc = pg_all_reduce(g, x, x, 256, MB_F32, PG_SUM);  // in place
           return rc < 0 ? rc : pg_barrier(g);
       }
       int main(void) { return pg_pthread_run(&world, 4, body, NULL); }

   Contents:
       1. Configuration macros             5. Zero-copy slots
       2. Types, error codes, reductions   6. Sub-groups
       3. The port vtable (pg_ops)         7. Collectives
       4. Groups and point-to-point        8. Implementation (PG_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; section 1 holds every
   default and checks every value; the two stb switches count by being defined):
       PG_IMPLEMENTATION      emit the definitions (exactly one .c file)
       PG_STATIC              make every function static to its translation unit
       SPLITCORE_CONFIG_FILE  "file.h" included first by every splitcore header
       PG_MAX_RANKS           largest group size (default 64)
       PG_SCRATCH_BYTES       per-group built-in scratch for reductions on ports without
                              zero-copy slots (default 1024; pg_group_set_scratch() adds more)
       PG_DEFAULT_TIMEOUT_MS  timeout of a new group (default 10000)
       PG_ASSERT(x)           internal invariant check (default: none)
       PG_MEMCPY(d,s,n), PG_MEMSET(d,v,n)   default: memcpy / memset (<string.h>)

   Rules of the contract (what a port guarantees, what pg.h guarantees):
     - Messages between one (source, destination, tag) triple arrive in send order
       (non-overtaking, like MPI); messages with different tags may be received in any
       order. A message larger than the receive buffer is consumed and reported as
       PG_ERR_TOO_BIG. A send returns once its buffer may be reused (the port copied it or
       delivered it). One send carries at most `max_msg` bytes (the slot size on
       shared memory); the collectives split larger payloads themselves. A send completes
       without the receiver's help while fewer than PG_MIN_INFLIGHT messages from this
       sender wait in that receiver's inbox (further sends may block until it takes one);
       the generic collectives need at most two in flight per pair to make progress.
     - Every blocking call waits at most the group's timeout (pg_set_timeout) and then
       returns PG_ERR_TIMEOUT; the group stays usable. PG_WAIT_FOREVER disables it.
     - pg_abort(g, err) on one rank makes every blocked call on every rank of the world
       return PG_ERR_ABORTED within one timeout; the world stays aborted until every rank
       calls pg_recover().
     - Errors are negative values of enum pg_err; bad input never crashes and never writes
       outside the caller's buffers. Collectives check that the sizes a peer sends match
       what this rank expects and return PG_ERR_MISMATCH instead of overrunning; the ring
       collectives also agree on a hash of (dtype, op, counts) over all ranks first.
       After a failed collective, call pg_recover() on every rank before the next one.
     - Collective-unsafe argument errors: a collective's own argument checks (NULL buffers,
       counts out of range, an unknown dtype or op, a copied group) are rank-local. The
       ranks where they fail return at once without sending; the others wait in the
       collective and return PG_ERR_TIMEOUT after the group's timeout (sizes that differ
       between ranks but pass each rank's checks are caught by the size checks above,
       PG_ERR_MISMATCH on the ranks that see them). A rank that fails may pg_abort() the world to end
       the others' wait sooner.
     - Collectives must be called by every member in the same order (like MPI/torch).
       Reductions combine ranks in a fixed order, so every rank gets the same bits.
     - Threads, interrupts, memory: a group belongs to one rank, and that rank's calls on
       it come from one thread (or task) at a time; different ranks' groups are used
       concurrently (that is the point). Blocking calls wait, so they are never made from
       an ISR; a port's doorbell interrupt only wakes the waiting rank (pg_shm's hooks).
       pg.h and the ports allocate nothing: a group holds PG_SCRATCH_BYTES of scratch
       (or the caller's, pg_group_set_scratch), ports take their storage from the caller
       or static arrays; stack use is bounded (no recursion; `scons size` lists it).

   Tags: user tags are 0..PG_TAG_MAX. On the wire pg.h folds a group context id and a
   kind (user message or collective number) into a 31-bit tag (pg_wire_tag), so traffic
   of different groups and collectives never mixes; bit 30 is reserved for the port. */
#ifndef PG_H
#define PG_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "../splitcore_base.h"
#if SPLITCORE_VERSION != 200
#error "pg.h: splitcore headers of different releases are included together"
#endif
#include <stddef.h>
#include <stdint.h>
#include "../microbatch.h" /* mb_dtype (types only: no MICROBATCH_IMPLEMENTATION needed) */

#if defined(SPLITCORE_IMPLEMENTATION) && !defined(PG_IMPLEMENTATION)
#define PG_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(PG_STATIC)
#define PG_STATIC
#endif

#ifndef PG_MAX_RANKS
#define PG_MAX_RANKS 64 /* largest group size */
#endif
#if PG_MAX_RANKS < 1
#error "PG_MAX_RANKS must be >= 1"
#endif
#ifndef PG_SCRATCH_BYTES
#define PG_SCRATCH_BYTES 1024 /* per-group built-in reduction scratch */
#endif
#if PG_SCRATCH_BYTES < 8
#error "PG_SCRATCH_BYTES must be >= 8"
#endif
#ifndef PG_DEFAULT_TIMEOUT_MS
#define PG_DEFAULT_TIMEOUT_MS 10000u /* timeout of a new group */
#endif
#if PG_DEFAULT_TIMEOUT_MS < 1
#error "PG_DEFAULT_TIMEOUT_MS must be >= 1"
#endif
#ifndef PG_ASSERT
#define PG_ASSERT(x) ((void)0) /* internal invariant check */
#endif
#ifndef PG_MEMCPY /* <string.h>'s by default, included by the implementation */
#define PG_MEMCPY(d, s, n) memcpy((d), (s), (n))
#define PG__STRING_H       1
#endif
#ifndef PG_MEMSET
#define PG_MEMSET(d, v, n) memset((d), (v), (n))
#define PG__STRING_H       1
#endif
#ifdef PG_STATIC
#define PG_API static
#else
#define PG_API extern
#endif

#define PG_MIN_INFLIGHT 4           /* messages a port buffers per ordered pair, at least */
#define PG_WAIT_FOREVER 0xFFFFFFFFu /* timeout value: never time out */
#define PG_TAG_MAX      0xFFFF      /* largest user tag */
#define PG_TAG_PORT_BIT 0x40000000u /* wire-tag bit reserved for ports (abort, control) */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Types, error codes, reductions ------------------------------------------- */
/* Error codes -31..-59: PG_ERRORS in splitcore_base.h lists them (name, value, message). */
enum pg_err { PG_ERRORS(SPLITCORE__ENUM) PG_OK = 0 };

typedef enum pg_red { PG_SUM = 0, PG_AVG, PG_MAX, PG_MIN, PG_PROD, PG_RED_COUNT } pg_red;

struct pg_group;

/* ---- 3. The port vtable -----------------------------------------------------------
   Point-to-point entries receive the port's per-rank state (`port`), *world* ranks and
   wire tags (uint32, < 2^31). They return PG_OK/count or a negative pg_err. A NULL entry
   means "not provided": pg.h falls back (slots: copying through the group's scratch;
   barrier and collectives: generic algorithms over send/recv; abort: PG_ERR_UNSUPPORTED).
   A native collective may also return PG_ERR_UNSUPPORTED at run time (e.g. for a
   sub-group) to fall back to pg.h's generic one. Collective entries get the group
   (group ranks; g->ranks[] maps them to world ranks); arguments are already validated. */
typedef struct pg_ops {
    /* required */
    int (*send)(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms);
    /* Receive the oldest message from `src` with `tag` into buf[0..cap); *got = its size. */
    int (*recv)(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms);
    /* Non-blocking: 1 and *bytes if a message (src, tag) is waiting, 0 if none. */
    int (*probe)(void *port, int src, uint32_t tag, size_t *bytes);

    /* optional zero-copy slots: sender acquire -> write -> commit; receiver peek -> release */
    int (*slot_acquire)(void *port, int dst, size_t bytes, void **ptr, uint32_t timeout_ms);
    int (*slot_commit)(void *port, int dst, uint32_t tag, void *ptr, size_t bytes);
    int (*slot_peek)(void *port, int src, uint32_t tag, const void **ptr, size_t *bytes, uint32_t timeout_ms);
    int (*slot_release)(void *port, int src, const void *ptr);

    /* optional control */
    int (*abort)(void *port, int err); /* make every blocked call in the world return ABORTED */
    int (*recover)(void *port);        /* collective over the world: clear abort, drop messages */

    /* optional native collectives (same meaning as the pg_* functions of section 7) */
    int (*barrier)(struct pg_group *g);
    int (*broadcast)(struct pg_group *g, void *buf, size_t count, mb_dtype dt, int root);
    int (*all_reduce)(struct pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op);
    int (*all_gather)(struct pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt);
    int (*all_gatherv)(struct pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt);
    int (*reduce_scatter)(struct pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op);
    int (*reduce_scatterv)(struct pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                           pg_red op);
    int (*all_to_allv)(struct pg_group *g, const void *send, const size_t *send_counts, void *recv,
                       const size_t *recv_counts, mb_dtype dt);
    int (*gatherv)(struct pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, int root);
    int (*scatterv)(struct pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, int root);
} pg_ops;

/* A group: the world a port creates, or a sub-group. Caller storage; treat as opaque. Do not
   copy it (nor a port's state that holds one, pg_pthread_world, pg_shm, pg_mpi): it points
   into itself (its built-in scratch) and its sequence numbers must stay one per rank. Use it
   where its init filled it, through pointers; a copy is refused with PG_ERR_COPIED. */
typedef struct pg_group {
    const struct pg_group *self; /* the group itself, set by its init: a copy lives elsewhere */
    const pg_ops *ops;
    void *port;         /* the port's state for this rank */
    int32_t rank, size; /* in this group */
    int32_t world_rank, world_size;
    int32_t ranks[PG_MAX_RANKS]; /* group rank -> world rank */
    uint32_t context;            /* 0 for the world, 1..255 for sub-groups */
    uint32_t next_context;       /* sub-group ids handed out by this group */
    uint32_t seq;                /* collective sequence number */
    uint32_t timeout_ms;
    size_t max_msg;         /* largest single message of the port */
    unsigned char *scratch; /* reduction scratch (user's or the built-in one) */
    size_t scratch_bytes;
    void *fallback_slot; /* copying-slot fallback: the one outstanding slot */
    size_t fallback_bytes;
    int32_t fallback_peer;
    int32_t fallback_dir; /* 1 acquired for send, 2 peeked for receive */
    uint64_t builtin_scratch[(PG_SCRATCH_BYTES + 7) / 8];
} pg_group;

/* The message of a pg_err code; "unknown error" for any other value (never NULL). */
PG_API const char *pg_strerror(int err);
PG_API size_t pg_dtype_size(mb_dtype dt); /* 0 for an unknown dtype */
/* The wire tag for (context, kind, low 16 bits); kind 0 = user p2p, 1..63 collectives. */
PG_API uint32_t pg_wire_tag(uint32_t context, uint32_t kind, uint32_t low16);

/* ---- 4. Groups and point-to-point -------------------------------------------------
   Ports call pg_group_init() from their own init (e.g. pg_pthread_group()); users rarely do. */
PG_API int pg_group_init(pg_group *g, const pg_ops *ops, void *port, int world_rank, int world_size, size_t max_msg);
PG_API int pg_rank(const pg_group *g); /* < 0 on a NULL group */
PG_API int pg_size(const pg_group *g);
PG_API int pg_world_rank(const pg_group *g, int group_rank); /* PG_ERR_RANK when out of range */
PG_API int pg_set_timeout(pg_group *g, uint32_t timeout_ms); /* for every blocking call of g */
PG_API uint32_t pg_timeout(const pg_group *g);
/* Larger reduction scratch for ports without slots: fewer, bigger messages (caller storage,
   kept by the group; NULL restores the built-in PG_SCRATCH_BYTES). */
PG_API int pg_group_set_scratch(pg_group *g, void *buf, size_t bytes);
/* Scratch that makes reductions use full max_msg-sized messages. */
PG_API size_t pg_scratch_bytes(const pg_group *g);
PG_API size_t pg_max_msg(const pg_group *g);

/* Blocking with the group's timeout; `dst`/`src` are group ranks; tag 0..PG_TAG_MAX. */
PG_API int pg_send(pg_group *g, int dst, int tag, const void *buf, size_t bytes);
/* As pg_send with an explicit timeout (0 = only if the mailbox has room now, never block;
   PG_WAIT_FOREVER = no limit); the group's timeout is neither used nor changed. */
PG_API int pg_send_timeout(pg_group *g, int dst, int tag, const void *buf, size_t bytes, uint32_t timeout_ms);
/* Receives into buf[0..cap); *got (may be NULL) = the message size. */
PG_API int pg_recv(pg_group *g, int src, int tag, void *buf, size_t cap, size_t *got);
/* As pg_recv with an explicit timeout (0 = try once, never block). */
PG_API int pg_recv_timeout(pg_group *g, int src, int tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms);
/* Non-blocking test: 1 (and *bytes) if a message (src, tag) is waiting, 0 if not. */
PG_API int pg_probe(pg_group *g, int src, int tag, size_t *bytes);

/* Abort the whole world (also through a sub-group): every blocked peer returns
   PG_ERR_ABORTED within one timeout. `err` is informational. */
PG_API int pg_abort(pg_group *g, int err);
/* After an abort (or a failed collective): every world rank calls it; it clears the abort
   state, drops undelivered messages and restarts g's collective sequence, then the world is
   usable again. Sub-groups that took part in the failed collective: recover through them
   too, or create them anew (pg_subgroup_init) on every rank. pg_pthread and pg_shm wait at
   most the world group's timeout for every rank; after PG_ERR_TIMEOUT (a rank never came)
   the world stays aborted, no rank is out of step, and every rank calls it again. */
PG_API int pg_recover(pg_group *g);

/* ---- 5. Zero-copy slots -----------------------------------------------------------
   Sender: pg_slot_acquire() reserves `bytes` in dst's inbox and returns where to write;
   pg_slot_commit() publishes it under `tag` (bytes <= acquired). Receiver: pg_slot_peek()
   waits for (src, tag) and returns the message in place; pg_slot_release() frees it.
   On ports without shared memory the slot is the group's scratch (one outstanding slot
   per group, not held across a collective; bytes <= the scratch size) and commit/peek copy.
   Acquire waits up to the timeout for a free slot (then PG_ERR_TIMEOUT); releasing or
   committing a pointer that is not an acquired/peeked slot is PG_ERR_NO_SLOT. */
PG_API int pg_slot_acquire(pg_group *g, int dst, size_t bytes, void **ptr);
PG_API int pg_slot_commit(pg_group *g, int dst, int tag, void *ptr, size_t bytes);
PG_API int pg_slot_peek(pg_group *g, int src, int tag, const void **ptr, size_t *bytes);
PG_API int pg_slot_release(pg_group *g, int src, const void *ptr);

/* ---- 6. Sub-groups ----------------------------------------------------------------
   sub = the parent's ranks[0..n) (parent group ranks, distinct, any order: sub rank i is
   parent rank ranks[i]). Its context id comes from the parent's counter, which advances on
   every call, member or not — so every rank of the parent makes the same sequence of
   pg_subgroup_init calls on it (as with torch's new_group). sub != parent. Non-members get
   PG_ERR_NOT_MEMBER (and `sub` is unusable: every call on it returns that code). */
PG_API int pg_subgroup_init(pg_group *sub, pg_group *parent, const int *ranks, int n);

/* ---- 7. Collectives ---------------------------------------------------------------
   Counts are in elements of `dt`. `v` variants take one count per group rank and pack
   the blocks back to back in rank order (no displacement arrays); counts may be 0.
   send == recv is allowed where noted (in place). Every member calls with agreeing
   arguments; a disagreement the protocol sees gives PG_ERR_MISMATCH (pg.h's ring
   collectives, all_reduce / all_gather(v) / reduce_scatter(v), agree on their arguments
   first, so there every rank gets it; elsewhere peers may see PG_ERR_MISMATCH or
   PG_ERR_TIMEOUT). AVG is for float dtypes (integers: PG_ERR_DTYPE);
   integer SUM/PROD wrap around. */
PG_API int pg_barrier(pg_group *g);
PG_API int pg_broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root);
/* recv[i] = op over ranks of send[i]; send == recv in place. */
PG_API int pg_all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op);
/* recv = send of rank 0 .. send of rank size-1 (count each). */
PG_API int pg_all_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt);
PG_API int pg_all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt);
/* send holds size blocks of count; recv = op over ranks of block `rank`. */
PG_API int pg_reduce_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op);
/* send holds blocks of counts[0..size) packed; recv = reduced block `rank` (counts[rank]). */
PG_API int pg_reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, pg_red op);
/* Block j of send (count each) goes to rank j; block i of recv comes from rank i. */
PG_API int pg_all_to_all(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt);
PG_API int pg_all_to_allv(pg_group *g, const void *send, const size_t *send_counts, void *recv,
                          const size_t *recv_counts, mb_dtype dt);
/* Root's recv = every rank's send in rank order; recv is ignored (may be NULL) elsewhere. */
PG_API int pg_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, int root);
PG_API int pg_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, int root);
/* Rank i's recv = block i of root's send; send is ignored (may be NULL) off the root. */
PG_API int pg_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, int root);
PG_API int pg_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, int root);

/* Reduce `n` elements: acc[i] = op(acc[i], in[i]) (the combine step every port shares; acc
   and in are the same buffer or do not overlap). */
PG_API int pg_reduce_local(void *acc, const void *in, size_t n, mb_dtype dt, pg_red op);
/* The same into a third buffer: out[i] = op(a[i], b[i]) in one pass (no copy of a first);
   out is a, b, or overlaps neither. */
PG_API int pg_reduce_into(void *out, const void *a, const void *b, size_t n, mb_dtype dt, pg_red op);
/* acc[i] /= divisor for AVG's final step (float dtypes). */
PG_API int pg_scale_local(void *acc, size_t n, mb_dtype dt, int divisor);
/* (for ports) A 64-bit FNV-1a hash of counts[0], counts[step], ... (n of them; step 0: n
   copies of counts[0], an even collective's counts without the array): native collectives
   compare per-rank counts by it. */
static inline uint64_t pg__counts_hash(const size_t *counts, int n, int step)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a, 64 bits: offset basis and prime */
    int i;
    for (i = 0; counts && i < n; i++) h = (h ^ (uint64_t)counts[i * step]) * 1099511628211u;
    return h;
}

#ifdef __cplusplus
}
#endif
#endif /* PG_H */

/* ---- 8. Implementation ----------------------------------------------------------- */
#if defined(PG_IMPLEMENTATION) && !defined(PG_IMPLEMENTED)
#define PG_IMPLEMENTED
#ifdef PG__STRING_H
#include <string.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PG_STATIC
#define PG__DEF static
#else
#define PG__DEF
#endif

/* collective kinds folded into wire tags (kind 0 = user p2p) */
enum {
    PG__K_USER = 0,
    PG__K_BARRIER = 1,
    PG__K_BCAST,
    PG__K_ALLREDUCE,
    PG__K_ALLGATHER,
    PG__K_RSCATTER,
    PG__K_ALLTOALL,
    PG__K_GATHER,
    PG__K_SCATTER
};

PG__DEF const char *pg_strerror(int err)
{
    static const char msg[] = "ok\0" PG_ERRORS(SPLITCORE__MSG) "unknown error";
    return splitcore__message(msg, err, PG_ERR_BASE, PG__ERR_COUNT);
}

PG__DEF size_t pg_dtype_size(mb_dtype dt)
{
    static const unsigned char sz[MB_DTYPE_COUNT] = {4, 8, 1, 1, 2, 4};
    return ((unsigned)dt < (unsigned)MB_DTYPE_COUNT) ? sz[dt] : 0u;
}

/* The wire tag's fields: context (8 bits) at bit 22, kind (6 bits) at 16, the low 16 bits. */
enum { PG__CONTEXT_SHIFT = 22, PG__KIND_SHIFT = 16, PG__CONTEXT_MIX = 31 };
#define PG__CONTEXT_MASK 0xFFu
#define PG__KIND_MASK    0x3Fu

PG__DEF uint32_t pg_wire_tag(uint32_t context, uint32_t kind, uint32_t low16)
{
    return ((context & PG__CONTEXT_MASK) << PG__CONTEXT_SHIFT) | ((kind & PG__KIND_MASK) << PG__KIND_SHIFT) |
           (low16 & PG_TAG_MAX);
}

PG__DEF int pg_group_init(pg_group *g, const pg_ops *ops, void *port, int world_rank, int world_size, size_t max_msg)
{
    int i;
    if (!g || !ops || !ops->send || !ops->recv || !ops->probe) return PG_ERR_NULL;
    if (world_size <= 0 || world_size > PG_MAX_RANKS || max_msg == 0) return PG_ERR_SIZE;
    if (world_rank < 0 || world_rank >= world_size) return PG_ERR_RANK;
    PG_MEMSET(g, 0, sizeof *g);
    g->self = g;
    g->ops = ops;
    g->port = port;
    g->rank = world_rank;
    g->size = world_size;
    g->world_rank = world_rank;
    g->world_size = world_size;
    for (i = 0; i < world_size; i++) g->ranks[i] = i;
    g->context = 0;
    g->next_context = 1;
    g->timeout_ms = PG_DEFAULT_TIMEOUT_MS;
    g->max_msg = max_msg;
    g->scratch = (unsigned char *)g->builtin_scratch;
    g->scratch_bytes = sizeof g->builtin_scratch;
    g->fallback_peer = -1;
    return PG_OK;
}

/* A usable group: non-NULL, this rank a member, where its init filled it. */
static int pg__ok(const pg_group *g)
{
    if (!g) return PG_ERR_NULL;
    if (!g->ops || g->size <= 0 || g->rank < 0) return PG_ERR_NOT_MEMBER;
    return g->self == g ? PG_OK : PG_ERR_COPIED;
}

PG__DEF int pg_rank(const pg_group *g)
{
    int rc = pg__ok(g);
    return rc < 0 ? rc : g->rank;
}
PG__DEF int pg_size(const pg_group *g)
{
    int rc = pg__ok(g);
    return rc < 0 ? rc : g->size;
}
PG__DEF int pg_world_rank(const pg_group *g, int r)
{
    int rc = pg__ok(g);
    if (rc < 0) return rc;
    return (r < 0 || r >= g->size) ? PG_ERR_RANK : g->ranks[r];
}
PG__DEF int pg_set_timeout(pg_group *g, uint32_t timeout_ms)
{
    if (!g) return PG_ERR_NULL;
    g->timeout_ms = timeout_ms;
    return PG_OK;
}
PG__DEF uint32_t pg_timeout(const pg_group *g)
{
    return g ? g->timeout_ms : 0u;
}
PG__DEF size_t pg_max_msg(const pg_group *g)
{
    return g ? g->max_msg : 0u;
}
PG__DEF size_t pg_scratch_bytes(const pg_group *g)
{
    return g ? g->max_msg : 0u;
}

PG__DEF int pg_group_set_scratch(pg_group *g, void *buf, size_t bytes)
{
    if (!g) return PG_ERR_NULL;
    if (g->fallback_dir) return PG_ERR_NO_SLOT;
    if (!buf) {
        g->scratch = (unsigned char *)g->builtin_scratch;
        g->scratch_bytes = sizeof g->builtin_scratch;
        return PG_OK;
    }
    if (bytes < 8) return PG_ERR_SIZE;
    g->scratch = (unsigned char *)buf;
    g->scratch_bytes = bytes;
    return PG_OK;
}

/* ---- point-to-point ---- */
/* A peer, a tag and `ok` (the call's pointers are there), checked in that order. */
static int pg__p2p_check(const pg_group *g, int peer, int tag, int ok)
{
    int rc = pg__ok(g);
    if (rc < 0) return rc;
    if (peer < 0 || peer >= g->size) return PG_ERR_RANK;
    if (tag < 0 || tag > PG_TAG_MAX) return PG_ERR_TAG;
    return ok ? PG_OK : PG_ERR_NULL;
}

PG__DEF int pg_send_timeout(pg_group *g, int dst, int tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    int rc = pg__p2p_check(g, dst, tag, buf || !bytes);
    if (rc < 0) return rc;
    if (bytes > g->max_msg) return PG_ERR_TOO_BIG;
    return g->ops->send(g->port, g->ranks[dst], pg_wire_tag(g->context, PG__K_USER, (uint32_t)tag), buf, bytes,
                        timeout_ms);
}

PG__DEF int pg_send(pg_group *g, int dst, int tag, const void *buf, size_t bytes)
{
    if (!g) return PG_ERR_NULL;
    return pg_send_timeout(g, dst, tag, buf, bytes, g->timeout_ms);
}

PG__DEF int pg_recv_timeout(pg_group *g, int src, int tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    size_t n = 0;
    int rc = pg__p2p_check(g, src, tag, buf || !cap);
    if (rc < 0) return rc;
    rc = g->ops->recv(g->port, g->ranks[src], pg_wire_tag(g->context, PG__K_USER, (uint32_t)tag), buf, cap, &n,
                      timeout_ms);
    if (rc >= 0 && got) *got = n;
    return rc < 0 ? rc : PG_OK;
}

PG__DEF int pg_recv(pg_group *g, int src, int tag, void *buf, size_t cap, size_t *got)
{
    if (!g) return PG_ERR_NULL;
    return pg_recv_timeout(g, src, tag, buf, cap, got, g->timeout_ms);
}

PG__DEF int pg_probe(pg_group *g, int src, int tag, size_t *bytes)
{
    size_t n = 0;
    int rc = pg__p2p_check(g, src, tag, 1);
    if (rc < 0) return rc;
    rc = g->ops->probe(g->port, g->ranks[src], pg_wire_tag(g->context, PG__K_USER, (uint32_t)tag), &n);
    if (rc > 0 && bytes) *bytes = n;
    return rc;
}

PG__DEF int pg_abort(pg_group *g, int err)
{
    if (!g) return PG_ERR_NULL;
    if (!g->ops || !g->ops->abort) return PG_ERR_UNSUPPORTED;
    return g->ops->abort(g->port, err);
}

PG__DEF int pg_recover(pg_group *g)
{
    if (!g) return PG_ERR_NULL;
    if (!g->ops || !g->ops->recover) return PG_ERR_UNSUPPORTED;
    g->fallback_dir = 0;
    g->seq = 0; /* ranks that failed a collective at different points agree again */
    return g->ops->recover(g->port);
}

/* ---- slots ---- */
PG__DEF int pg_slot_acquire(pg_group *g, int dst, size_t bytes, void **ptr)
{
    int rc = pg__p2p_check(g, dst, 0, ptr != NULL);
    if (rc < 0) return rc;
    if (bytes > g->max_msg) return PG_ERR_TOO_BIG;
    if (g->ops->slot_acquire) return g->ops->slot_acquire(g->port, g->ranks[dst], bytes, ptr, g->timeout_ms);
    if (g->fallback_dir) return PG_ERR_NO_SLOT;
    if (bytes > g->scratch_bytes) return PG_ERR_TOO_BIG;
    g->fallback_dir = 1;
    g->fallback_peer = dst;
    g->fallback_bytes = bytes;
    *ptr = g->scratch;
    return PG_OK;
}

PG__DEF int pg_slot_commit(pg_group *g, int dst, int tag, void *ptr, size_t bytes)
{
    int rc = pg__p2p_check(g, dst, tag, ptr != NULL);
    uint32_t wt;
    if (rc < 0) return rc;
    wt = pg_wire_tag(g->context, PG__K_USER, (uint32_t)tag);
    if (g->ops->slot_commit) return g->ops->slot_commit(g->port, g->ranks[dst], wt, ptr, bytes);
    if (g->fallback_dir != 1 || ptr != (void *)g->scratch || dst != g->fallback_peer) return PG_ERR_NO_SLOT;
    if (bytes > g->fallback_bytes) return PG_ERR_TOO_BIG;
    rc = g->ops->send(g->port, g->ranks[dst], wt, ptr, bytes, g->timeout_ms);
    if (rc != PG_ERR_TIMEOUT) g->fallback_dir = 0; /* on timeout the slot stays: commit again */
    return rc;
}

PG__DEF int pg_slot_peek(pg_group *g, int src, int tag, const void **ptr, size_t *bytes)
{
    int rc = pg__p2p_check(g, src, tag, ptr != NULL);
    size_t n = 0;
    uint32_t wt;
    if (rc < 0) return rc;
    wt = pg_wire_tag(g->context, PG__K_USER, (uint32_t)tag);
    if (g->ops->slot_peek) {
        rc = g->ops->slot_peek(g->port, g->ranks[src], wt, ptr, &n, g->timeout_ms);
    } else {
        if (g->fallback_dir) return PG_ERR_NO_SLOT;
        rc = g->ops->recv(g->port, g->ranks[src], wt, g->scratch, g->scratch_bytes, &n, g->timeout_ms);
        if (rc >= 0) {
            g->fallback_dir = 2;
            g->fallback_peer = src;
            *ptr = g->scratch;
        }
    }
    if (rc >= 0 && bytes) *bytes = n;
    return rc < 0 ? rc : PG_OK;
}

PG__DEF int pg_slot_release(pg_group *g, int src, const void *ptr)
{
    int rc = pg__p2p_check(g, src, 0, ptr != NULL);
    if (rc < 0) return rc;
    if (g->ops->slot_release) return g->ops->slot_release(g->port, g->ranks[src], ptr);
    if (g->fallback_dir != 2 || ptr != (const void *)g->scratch || src != g->fallback_peer) return PG_ERR_NO_SLOT;
    g->fallback_dir = 0;
    return PG_OK;
}

/* ---- sub-groups ---- */
PG__DEF int pg_subgroup_init(pg_group *sub, pg_group *parent, const int *ranks, int n)
{
    int i, j, me = -1, rc;
    uint32_t ctx;
    if (!sub || !parent || !ranks) return PG_ERR_NULL;
    if (sub == parent) return PG_ERR_SIZE; /* the parent's rank map is still needed */
    rc = pg__ok(parent);
    if (rc < 0) return rc;
    ctx = parent->next_context++; /* advances for members and non-members alike */
    if (n <= 0 || n > parent->size) return PG_ERR_SIZE;
    for (i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= parent->size) return PG_ERR_RANK;
        for (j = 0; j < i; j++)
            if (ranks[j] == ranks[i]) return PG_ERR_RANK;
        if (ranks[i] == parent->rank) me = i;
    }
    PG_MEMSET(sub, 0, sizeof *sub);
    sub->self = sub;
    sub->ops = parent->ops;
    sub->port = parent->port;
    sub->world_rank = parent->world_rank;
    sub->world_size = parent->world_size;
    sub->timeout_ms = parent->timeout_ms;
    sub->max_msg = parent->max_msg;
    sub->scratch = (unsigned char *)sub->builtin_scratch;
    sub->scratch_bytes = sizeof sub->builtin_scratch;
    sub->fallback_peer = -1;
    sub->next_context = 1;
    /* contexts 1..255; a nested group's id mixes in its parent's (times a prime) so siblings differ */
    sub->context = 1u + ((parent->context * PG__CONTEXT_MIX + ctx) % PG__CONTEXT_MASK);
    if (me < 0) {
        sub->rank = -1;
        sub->size = 0;
        return PG_ERR_NOT_MEMBER;
    }
    for (i = 0; i < n; i++) sub->ranks[i] = parent->ranks[ranks[i]];
    sub->rank = me;
    sub->size = n;
    return PG_OK;
}

/* ---- local reduction kernels ----
   On hosts with SIMD units the kernels take 8 elements per step, all loads before the
   stores, which compilers turn into vector code even at -O2 (gcc's cheap vectorizer does
   not vectorize the plain loop: it would need an alias check); out and a, b must be the
   same buffer or disjoint. Elsewhere (Cortex-M, ...) the plain loop keeps the code small. */
#if defined(__SSE2__) || defined(__ARM_NEON) || defined(__ALTIVEC__) || defined(__riscv_vector)
#define PG__K1(T, EXPR, k) x = a_[i + k], y = b_[i + k], r_[k] = (T)(EXPR)
#define PG__KERNEL_WIDE(T, EXPR)                                                    \
    for (; i + 8 <= n; i += 8) {                                                    \
        T r_[8];                                                                    \
        PG__K1(T, EXPR, 0);                                                         \
        PG__K1(T, EXPR, 1);                                                         \
        PG__K1(T, EXPR, 2);                                                         \
        PG__K1(T, EXPR, 3);                                                         \
        PG__K1(T, EXPR, 4);                                                         \
        PG__K1(T, EXPR, 5);                                                         \
        PG__K1(T, EXPR, 6);                                                         \
        PG__K1(T, EXPR, 7);                                                         \
        o_[i] = r_[0], o_[i + 1] = r_[1], o_[i + 2] = r_[2], o_[i + 3] = r_[3];     \
        o_[i + 4] = r_[4], o_[i + 5] = r_[5], o_[i + 6] = r_[6], o_[i + 7] = r_[7]; \
    }
#else
#define PG__KERNEL_WIDE(T, EXPR)
#endif
#define PG__KERNEL(T, EXPR)                             \
    do {                                                \
        T *o_ = (T *)out, x, y;                         \
        const T *a_ = (const T *)a, *b_ = (const T *)b; \
        i = 0;                                          \
        PG__KERNEL_WIDE(T, EXPR)                        \
        for (; i < n; i++) {                            \
            x = a_[i], y = b_[i];                       \
            o_[i] = (T)(EXPR);                          \
        }                                               \
    } while (0)
#define PG__INT_OPS(T)                                            \
    switch (op) {                                                 \
    case PG_SUM: PG__KERNEL(T, (uint32_t)x + (uint32_t)y); break; \
    case PG_PROD: PG__KERNEL(T, (uint32_t)x *(uint32_t)y); break; \
    case PG_MAX: PG__KERNEL(T, x > y ? x : y); break;             \
    case PG_MIN: PG__KERNEL(T, x < y ? x : y); break;             \
    default: return PG_ERR_DTYPE;                                 \
    }
#define PG__FLT_OPS(T)                                \
    switch (op) {                                     \
    case PG_SUM:                                      \
    case PG_AVG: PG__KERNEL(T, x + y); break;         \
    case PG_PROD: PG__KERNEL(T, x *y); break;         \
    case PG_MAX: PG__KERNEL(T, x > y ? x : y); break; \
    case PG_MIN: PG__KERNEL(T, x < y ? x : y); break; \
    default: return PG_ERR_OP;                        \
    }

static int pg__op_check(mb_dtype dt, pg_red op)
{
    if (!pg_dtype_size(dt)) return PG_ERR_DTYPE;
    if ((unsigned)op >= (unsigned)PG_RED_COUNT) return PG_ERR_OP;
    if (op == PG_AVG && dt != MB_F32 && dt != MB_F64) return PG_ERR_DTYPE;
    return PG_OK;
}

PG__DEF int pg_reduce_local(void *acc, const void *in, size_t n, mb_dtype dt, pg_red op)
{
    return pg_reduce_into(acc, acc, in, n, dt, op);
}

PG__DEF int pg_reduce_into(void *out, const void *a, const void *b, size_t n, mb_dtype dt, pg_red op)
{
    size_t i;
    int rc = pg__op_check(dt, op);
    if (rc < 0) return rc;
    if (n && (!out || !a || !b)) return PG_ERR_NULL;
    switch (dt) {
    case MB_F32: PG__FLT_OPS(float) break;
    case MB_F64: PG__FLT_OPS(double) break;
    case MB_I8: PG__INT_OPS(int8_t) break;
    case MB_U8: PG__INT_OPS(uint8_t) break;
    case MB_I16: PG__INT_OPS(int16_t) break;
    case MB_I32: PG__INT_OPS(int32_t) break;
    default: return PG_ERR_DTYPE;
    }
    return PG_OK;
}

PG__DEF int pg_scale_local(void *acc, size_t n, mb_dtype dt, int divisor)
{
    size_t i;
    if (n && !acc) return PG_ERR_NULL;
    if (divisor <= 0) return PG_ERR_SIZE;
    if (dt == MB_F32) {
        float *a = (float *)acc;
        for (i = 0; i < n; i++) a[i] = a[i] / (float)divisor;
    } else if (dt == MB_F64) {
        double *a = (double *)acc;
        for (i = 0; i < n; i++) a[i] = a[i] / (double)divisor;
    } else {
        return PG_ERR_DTYPE;
    }
    return PG_OK;
}

/* ---- generic collectives over p2p ----
   Every payload is cut into pieces of pg__piece(g) bytes (the same on every rank);
   receivers take exactly the bytes they expect, so a disagreement is PG_ERR_MISMATCH. */
static size_t pg__piece(const pg_group *g, size_t esize)
{
    size_t p = g->max_msg;
    if (!g->ops->slot_peek && g->scratch_bytes < p) p = g->scratch_bytes;
    p -= p % esize;
    return p ? p : esize;
}
static size_t pg__npieces(size_t bytes, size_t piece)
{
    return (bytes + piece - 1) / piece;
}
static size_t pg__piece_len(size_t bytes, size_t piece, size_t k)
{
    size_t off = k * piece;
    return bytes - off < piece ? bytes - off : piece;
}

static uint32_t pg__coll_tag(pg_group *g, int kind)
{
    uint32_t t = pg_wire_tag(g->context, (uint32_t)kind, g->seq);
    g->seq++;
    return t;
}

static int pg__send(pg_group *g, int dst, uint32_t tag, const void *buf, size_t bytes)
{
    return g->ops->send(g->port, g->ranks[dst], tag, buf, bytes, g->timeout_ms);
}

static int pg__recv_exact(pg_group *g, int src, uint32_t tag, void *buf, size_t bytes)
{
    size_t got = 0;
    int rc = g->ops->recv(g->port, g->ranks[src], tag, buf, bytes, &got, g->timeout_ms);
    if (rc == PG_ERR_TOO_BIG) return PG_ERR_MISMATCH;
    if (rc < 0) return rc;
    return got == bytes ? PG_OK : PG_ERR_MISMATCH;
}

/* Receive `bytes` from src and combine: out = op(in_msg, own) (in_msg is the left operand). */
static int pg__recv_combine(pg_group *g, int src, uint32_t tag, void *out, const void *own, size_t bytes, mb_dtype dt,
                            pg_red op)
{
    size_t es = pg_dtype_size(dt), got = 0;
    int rc;
    if (g->ops->slot_peek) {
        const void *p = 0;
        rc = g->ops->slot_peek(g->port, g->ranks[src], tag, &p, &got, g->timeout_ms);
        if (rc < 0) return rc;
        if (got != bytes) {
            g->ops->slot_release(g->port, g->ranks[src], p);
            return PG_ERR_MISMATCH;
        }
        if (out != own) PG_MEMCPY(out, p, bytes);
        rc = out == own ? pg_reduce_local(out, p, bytes / es, dt, op) : pg_reduce_local(out, own, bytes / es, dt, op);
        g->ops->slot_release(g->port, g->ranks[src], p);
        return rc;
    }
    if (out == own) {
        rc = pg__recv_exact(g, src, tag, g->scratch, bytes);
        return rc < 0 ? rc : pg_reduce_local(out, g->scratch, bytes / es, dt, op);
    }
    rc = pg__recv_exact(g, src, tag, out, bytes);
    return rc < 0 ? rc : pg_reduce_local(out, own, bytes / es, dt, op);
}

static int pg__counts_check(const pg_group *g, const size_t *counts, size_t es, size_t *total)
{
    size_t t = 0;
    int i;
    if (!counts) return PG_ERR_NULL;
    for (i = 0; i < g->size; i++) {
        if (counts[i] > ((size_t)-1) / es / (size_t)g->size) return PG_ERR_SIZE;
        t += counts[i];
    }
    *total = t;
    return PG_OK;
}

static size_t pg__offset(const size_t *counts, int upto)
{
    size_t o = 0;
    int i;
    for (i = 0; i < upto; i++) o += counts[i];
    return o;
}

static void pg__copy(void *d, const void *s, size_t n)
{
    if (n && d != s) PG_MEMCPY(d, s, n);
}

/* p + off bytes; a NULL p (a buffer of 0 bytes, so off is 0) stays NULL: C has no NULL + 0 */
static unsigned char *pg__at(const void *p, size_t off)
{
    return p ? (unsigned char *)p + off : (unsigned char *)0;
}

static int pg__barrier_generic(pg_group *g)
{
    uint32_t tag = pg__coll_tag(g, PG__K_BARRIER);
    int k, rc, n = g->size, r = g->rank;
    for (k = 1; k < n; k <<= 1) {
        char dummy;
        rc = pg__send(g, (r + k) % n, tag, &dummy, 0);
        if (rc < 0) return rc;
        rc = pg__recv_exact(g, (r - k + n) % n, tag, &dummy, 0);
        if (rc < 0) return rc;
    }
    return PG_OK;
}

PG__DEF int pg_barrier(pg_group *g)
{
    int rc = pg__ok(g);
    if (rc < 0) return rc;
    if (g->ops->barrier) {
        rc = g->ops->barrier(g);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    return pg__barrier_generic(g);
}

PG__DEF int pg_broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root)
{
    size_t es = pg_dtype_size(dt), bytes, piece, np, k;
    int rc = pg__ok(g), n, vr, mask;
    uint32_t tag;
    if (rc < 0) return rc;
    if (!es) return PG_ERR_DTYPE;
    if (root < 0 || root >= g->size) return PG_ERR_RANK;
    if (count > ((size_t)-1) / es) return PG_ERR_SIZE;
    if (!buf && count) return PG_ERR_NULL;
    if (g->ops->broadcast) {
        rc = g->ops->broadcast(g, buf, count, dt, root);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    n = g->size;
    tag = pg__coll_tag(g, PG__K_BCAST);
    bytes = count * es;
    piece = pg__piece(g, es);
    np = bytes ? pg__npieces(bytes, piece) : 1;
    vr = (g->rank - root + n) % n;
    for (k = 0; k < np; k++) {
        unsigned char *p = pg__at(buf, k * piece);
        size_t len = bytes ? pg__piece_len(bytes, piece, k) : 0;
        /* binomial tree: receive from the parent, then send to children */
        mask = 1;
        while (mask < n) {
            if (vr & mask) {
                rc = pg__recv_exact(g, (vr - mask + root) % n, tag, p, len);
                if (rc < 0) return rc;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while (mask > 0) {
            if (vr + mask < n) {
                rc = pg__send(g, (vr + mask + root) % n, tag, p, len);
                if (rc < 0) return rc;
            }
            mask >>= 1;
        }
    }
    return PG_OK;
}

/* The ring collectives' header: the min and max of every rank's hash of its arguments
   (kind, dtype, op, counts), combined in ceil(log2 n) dissemination rounds (rank r sends
   to r + d and receives from r - d, d = 1, 2, 4, ...), so every rank learns the same
   verdict: a disagreement is PG_ERR_MISMATCH on every rank, before any data moves and
   with no message left behind (one rank's OK beside its peers' errors is not possible). */
#define PG__FNV32_OFFSET 2166136261u /* FNV-1a, 32 bits */
#define PG__FNV32_PRIME  16777619u
static uint32_t pg__fnv(uint32_t h, uint64_t v)
{
    int i;
    for (i = 0; i < 8; i++, v >>= 8) h = (h ^ (uint32_t)(v & 0xFFu)) * PG__FNV32_PRIME;
    return h;
}

static int pg__ring_check(pg_group *g, uint32_t tag, int kind, mb_dtype dt, int op, const size_t *counts)
{
    uint32_t h = PG__FNV32_OFFSET, mm[2], in[2];
    int i, rc, n = g->size, d;
    h = pg__fnv(pg__fnv(pg__fnv(h, (uint64_t)kind), (uint64_t)dt), (uint64_t)op);
    for (i = 0; i < n; i++) h = pg__fnv(h, (uint64_t)counts[i]);
    mm[0] = mm[1] = h;
    for (d = 1; d < n; d <<= 1) {
        rc = pg__send(g, (g->rank + d) % n, tag, mm, sizeof mm);
        if (rc < 0) return rc;
        rc = pg__recv_exact(g, (g->rank - d + n) % n, tag, in, sizeof in);
        if (rc < 0) return rc;
        if (in[0] < mm[0]) mm[0] = in[0];
        if (in[1] > mm[1]) mm[1] = in[1];
    }
    return mm[0] == mm[1] ? PG_OK : PG_ERR_MISMATCH;
}

/* Zero-copy ring step: peek the piece from `left`, combine it with ours straight into a
   slot of `right`'s inbox (msg op own, the order every path uses), commit, release. */
static int pg__forward_combine(pg_group *g, int left, int right, uint32_t tag, const void *own, size_t bytes,
                               mb_dtype dt, pg_red op)
{
    const void *p = 0;
    void *q = 0;
    size_t got = 0;
    int rc = g->ops->slot_peek(g->port, g->ranks[left], tag, &p, &got, g->timeout_ms);
    if (rc < 0) return rc;
    if (got != bytes) {
        g->ops->slot_release(g->port, g->ranks[left], p);
        return PG_ERR_MISMATCH;
    }
    rc = g->ops->slot_acquire(g->port, g->ranks[right], bytes, &q, g->timeout_ms);
    if (rc < 0) {
        g->ops->slot_release(g->port, g->ranks[left], p);
        return rc;
    }
    PG_MEMCPY(q, p, bytes);
    pg_reduce_local(q, own, bytes / pg_dtype_size(dt), dt, op); /* arguments validated: cannot fail */
    g->ops->slot_release(g->port, g->ranks[left], p);
    return g->ops->slot_commit(g->port, g->ranks[right], tag, q, bytes);
}

/* Ring reduce-scatter of packed blocks counts[]; the result block `rank` goes to out.
   Block b is combined in ring order b+1, b+2, ..., b (left operand first), so its bits
   do not depend on which rank computes them. Pieces are pipelined independently; with
   zero-copy slots each hop combines straight into the next rank's inbox. */
static int pg__rs_ring(pg_group *g, uint32_t tag, const void *send, void *out, const size_t *counts, mb_dtype dt,
                       pg_red op)
{
    size_t es = pg_dtype_size(dt), piece = pg__piece(g, es), maxnp = 0, k;
    int n = g->size, r = g->rank, s, b, rc, left = (g->rank - 1 + g->size) % g->size, right = (g->rank + 1) % g->size;
    int zc = g->ops->slot_peek && g->ops->slot_acquire && g->ops->slot_commit && g->ops->slot_release;
    const unsigned char *in = (const unsigned char *)send;
    unsigned char *tmp = g->scratch;
    if (n == 1) {
        pg__copy(out, send, counts[0] * es);
        return PG_OK;
    }
    if (!zc && piece > g->scratch_bytes) piece = g->scratch_bytes - g->scratch_bytes % es; /* tmp holds a piece */
    if (!piece) return PG_ERR_SIZE;
    for (b = 0; b < n; b++) {
        size_t np = pg__npieces(counts[b] * es, piece);
        if (np > maxnp) maxnp = np;
    }
    for (k = 0; k < maxnp; k++) {
        int ob = (r - 1 + n) % n; /* step 0 sends our own piece of block r-1 */
        if (k * piece < counts[ob] * es) {
            rc = pg__send(g, right, tag, in + pg__offset(counts, ob) * es + k * piece,
                          pg__piece_len(counts[ob] * es, piece, k));
            if (rc < 0) return rc;
        }
        for (s = 0; s < n - 1; s++) { /* step s receives block r-s-2, combines, passes it on */
            int ib = (r - s - 2 + 2 * n) % n;
            size_t ib_bytes = counts[ib] * es, len;
            const unsigned char *own;
            if (k * piece >= ib_bytes) continue;
            len = pg__piece_len(ib_bytes, piece, k);
            own = in + pg__offset(counts, ib) * es + k * piece;
            if (s == n - 2) {
                rc = pg__recv_combine(g, left, tag, (unsigned char *)out + k * piece, own, len, dt, op);
            } else if (zc) {
                rc = pg__forward_combine(g, left, right, tag, own, len, dt, op);
            } else {
                rc = pg__recv_combine(g, left, tag, tmp, own, len, dt, op);
                if (rc >= 0) rc = pg__send(g, right, tag, tmp, len);
            }
            if (rc < 0) return rc;
        }
    }
    return PG_OK;
}

/* Ring all-gather of packed blocks; own block already at its place in recv (or copied). */
static int pg__ag_ring(pg_group *g, uint32_t tag, void *recv, const size_t *counts, size_t es)
{
    size_t piece = pg__piece(g, es), k, maxnp = 0;
    int n = g->size, r = g->rank, s, b, rc;
    unsigned char *base = (unsigned char *)recv;
    for (b = 0; b < n; b++) {
        size_t np = pg__npieces(counts[b] * es, piece);
        if (np > maxnp) maxnp = np;
    }
    for (s = 0; s < n - 1; s++) {
        int ob = (r - s + n) % n, ib = (r - s - 1 + n) % n;
        size_t ob_bytes = counts[ob] * es, ib_bytes = counts[ib] * es;
        size_t oo = pg__offset(counts, ob) * es, io = pg__offset(counts, ib) * es;
        for (k = 0; k * piece < ob_bytes || k * piece < ib_bytes; k++) {
            if (k * piece < ob_bytes) {
                rc = pg__send(g, (r + 1) % n, tag, base + oo + k * piece, pg__piece_len(ob_bytes, piece, k));
                if (rc < 0) return rc;
            }
            if (k * piece < ib_bytes) {
                rc = pg__recv_exact(g, (r - 1 + n) % n, tag, base + io + k * piece, pg__piece_len(ib_bytes, piece, k));
                if (rc < 0) return rc;
            }
        }
    }
    (void)maxnp;
    return PG_OK;
}

static void pg__even_counts(int n, size_t count, size_t *counts)
{
    int i;
    for (i = 0; i < n; i++) counts[i] = count / (size_t)n + ((size_t)i < count % (size_t)n ? 1u : 0u);
}

/* counts[] = count for every rank (counts NULL: none), after the checks every even variant shares */
static int pg__even(const pg_group *g, size_t count, mb_dtype dt, size_t *counts)
{
    size_t es = pg_dtype_size(dt);
    int rc = pg__ok(g), i;
    if (rc < 0) return rc;
    if (!es) return PG_ERR_DTYPE;
    /* es * size <= 8 * PG_MAX_RANKS: the division only for counts that large */
    if (count > ((size_t)-1) / (8u * PG_MAX_RANKS) && count > ((size_t)-1) / (es * (size_t)g->size)) return PG_ERR_SIZE;
    for (i = 0; counts && i < g->size; i++) counts[i] = count;
    return PG_OK;
}

PG__DEF int pg_all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    size_t counts[PG_MAX_RANKS], es = pg_dtype_size(dt), off;
    uint32_t tag;
    int rc = pg__ok(g);
    if (rc < 0) return rc;
    rc = pg__op_check(dt, op);
    if (rc < 0) return rc;
    if (count > ((size_t)-1) / es) return PG_ERR_SIZE;
    if (count && (!send || !recv)) return PG_ERR_NULL;
    if (g->ops->all_reduce) {
        rc = g->ops->all_reduce(g, send, recv, count, dt, op);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    tag = pg__coll_tag(g, PG__K_ALLREDUCE);
    pg__even_counts(g->size, count, counts);
    rc = pg__ring_check(g, tag, PG__K_ALLREDUCE, dt, (int)op, counts);
    if (rc < 0) return rc;
    off = pg__offset(counts, g->rank) * es;
    rc = pg__rs_ring(g, tag, send, pg__at(recv, off), counts, dt, op == PG_AVG ? PG_SUM : op);
    if (rc < 0) return rc;
    if (op == PG_AVG) pg_scale_local(pg__at(recv, off), counts[g->rank], dt, g->size);
    return pg__ag_ring(g, tag, recv, counts, es);
}

PG__DEF int pg_all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt)
{
    size_t es = pg_dtype_size(dt), total;
    uint32_t tag;
    int rc = pg__ok(g);
    if (rc < 0) return rc;
    if (!es) return PG_ERR_DTYPE;
    rc = pg__counts_check(g, counts, es, &total);
    if (rc < 0) return rc;
    if ((counts[g->rank] && !send) || (total && !recv)) return PG_ERR_NULL;
    if (g->ops->all_gatherv) {
        rc = g->ops->all_gatherv(g, send, recv, counts, dt);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    tag = pg__coll_tag(g, PG__K_ALLGATHER);
    rc = pg__ring_check(g, tag, PG__K_ALLGATHER, dt, 0, counts);
    if (rc < 0) return rc;
    pg__copy(pg__at(recv, pg__offset(counts, g->rank) * es), send, counts[g->rank] * es);
    return pg__ag_ring(g, tag, recv, counts, es);
}

PG__DEF int pg_all_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt)
{
    size_t counts[PG_MAX_RANKS];
    int rc = pg__even(g, count, dt, 0);
    if (rc < 0) return rc;
    if (count && (!send || !recv)) return PG_ERR_NULL;
    if (g->ops->all_gather) {
        rc = g->ops->all_gather(g, send, recv, count, dt);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    pg__even(g, count, dt, counts); /* the array only now: a port's even all_gather needs none */
    return pg_all_gatherv(g, send, recv, counts, dt);
}

PG__DEF int pg_reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, pg_red op)
{
    size_t es = pg_dtype_size(dt), total;
    uint32_t tag;
    int rc = pg__ok(g);
    if (rc < 0) return rc;
    rc = pg__op_check(dt, op);
    if (rc < 0) return rc;
    rc = pg__counts_check(g, counts, es, &total);
    if (rc < 0) return rc;
    if ((total && !send) || (counts[g->rank] && !recv)) return PG_ERR_NULL;
    if (g->ops->reduce_scatterv) {
        rc = g->ops->reduce_scatterv(g, send, recv, counts, dt, op);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    tag = pg__coll_tag(g, PG__K_RSCATTER);
    rc = pg__ring_check(g, tag, PG__K_RSCATTER, dt, (int)op, counts);
    if (rc < 0) return rc;
    rc = pg__rs_ring(g, tag, send, recv, counts, dt, op == PG_AVG ? PG_SUM : op);
    if (rc < 0) return rc;
    return op == PG_AVG ? pg_scale_local(recv, counts[g->rank], dt, g->size) : PG_OK;
}

PG__DEF int pg_reduce_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    size_t counts[PG_MAX_RANKS];
    int rc = pg__op_check(dt, op);
    if (rc == PG_OK) rc = pg__even(g, count, dt, counts);
    if (rc < 0) return pg__ok(g) < 0 ? pg__ok(g) : rc;
    if (count && (!send || !recv)) return PG_ERR_NULL;
    if (g->ops->reduce_scatter) {
        rc = g->ops->reduce_scatter(g, send, recv, count, dt, op);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    return pg_reduce_scatterv(g, send, recv, counts, dt, op);
}

/* Send `bytes` to dst and receive `rbytes` from src, piece by piece interleaved. */
static int pg__sendrecv(pg_group *g, uint32_t tag, int dst, const unsigned char *sbuf, size_t sbytes, int src,
                        unsigned char *rbuf, size_t rbytes, size_t piece)
{
    size_t k;
    int rc;
    size_t ns = sbytes ? pg__npieces(sbytes, piece) : 1, nr = rbytes ? pg__npieces(rbytes, piece) : 1;
    for (k = 0; k < ns || k < nr; k++) {
        if (dst >= 0 && k < ns) {
            rc = pg__send(g, dst, tag, pg__at(sbuf, k * piece), sbytes ? pg__piece_len(sbytes, piece, k) : 0);
            if (rc < 0) return rc;
        }
        if (src >= 0 && k < nr) {
            rc = pg__recv_exact(g, src, tag, pg__at(rbuf, k * piece), rbytes ? pg__piece_len(rbytes, piece, k) : 0);
            if (rc < 0) return rc;
        }
    }
    return PG_OK;
}

PG__DEF int pg_all_to_allv(pg_group *g, const void *send, const size_t *send_counts, void *recv,
                           const size_t *recv_counts, mb_dtype dt)
{
    size_t es = pg_dtype_size(dt), st, rt, piece;
    int rc = pg__ok(g), s, n, r;
    uint32_t tag;
    if (rc < 0) return rc;
    if (!es) return PG_ERR_DTYPE;
    rc = pg__counts_check(g, send_counts, es, &st);
    if (rc < 0) return rc;
    rc = pg__counts_check(g, recv_counts, es, &rt);
    if (rc < 0) return rc;
    if ((st && !send) || (rt && !recv)) return PG_ERR_NULL;
    if (send == recv && (st || rt)) return PG_ERR_SIZE; /* not in place */
    if (g->ops->all_to_allv) {
        rc = g->ops->all_to_allv(g, send, send_counts, recv, recv_counts, dt);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    n = g->size;
    r = g->rank;
    tag = pg__coll_tag(g, PG__K_ALLTOALL);
    piece = pg__piece(g, es);
    if (recv_counts[r] != send_counts[r]) return PG_ERR_MISMATCH;
    pg__copy(pg__at(recv, pg__offset(recv_counts, r) * es), pg__at(send, pg__offset(send_counts, r) * es),
             send_counts[r] * es);
    for (s = 1; s < n; s++) {
        int dst = (r + s) % n, src = (r - s + n) % n;
        rc = pg__sendrecv(g, tag, dst, pg__at(send, pg__offset(send_counts, dst) * es), send_counts[dst] * es, src,
                          pg__at(recv, pg__offset(recv_counts, src) * es), recv_counts[src] * es, piece);
        if (rc < 0) return rc;
    }
    return PG_OK;
}

PG__DEF int pg_all_to_all(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt)
{
    size_t counts[PG_MAX_RANKS];
    int rc = pg__even(g, count, dt, counts);
    return rc < 0 ? rc : pg_all_to_allv(g, send, counts, recv, counts, dt);
}

/* gatherv (gather = 1) and scatterv (gather = 0): linear, the root talks to each rank. */
static int pg__rootedv(pg_group *g, int gather, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                       int root)
{
    size_t es = pg_dtype_size(dt), total, piece;
    int rc = pg__ok(g), i;
    uint32_t tag;
    const unsigned char *root_buf;
    if (rc < 0) return rc;
    if (!es) return PG_ERR_DTYPE;
    if (root < 0 || root >= g->size) return PG_ERR_RANK;
    rc = pg__counts_check(g, counts, es, &total);
    if (rc < 0) return rc;
    root_buf = (const unsigned char *)(gather ? (const void *)recv : send);
    if ((counts[g->rank] && !(gather ? send : (const void *)recv)) || (g->rank == root && total && !root_buf))
        return PG_ERR_NULL;
    if (gather ? g->ops->gatherv != 0 : g->ops->scatterv != 0) {
        rc = gather ? g->ops->gatherv(g, send, recv, counts, dt, root)
                    : g->ops->scatterv(g, send, recv, counts, dt, root);
        if (rc != PG_ERR_UNSUPPORTED) return rc;
    }
    tag = pg__coll_tag(g, gather ? PG__K_GATHER : PG__K_SCATTER);
    piece = pg__piece(g, es);
    if (g->rank != root)
        return gather ? pg__sendrecv(g, tag, root, (const unsigned char *)send, counts[g->rank] * es, -1, 0, 0, piece)
                      : pg__sendrecv(g, tag, -1, 0, 0, root, (unsigned char *)recv, counts[g->rank] * es, piece);
    for (i = 0; i < g->size; i++) {
        unsigned char *blk = pg__at(root_buf, pg__offset(counts, i) * es);
        size_t n = counts[i] * es;
        if (i == root)
            rc = gather ? (pg__copy(blk, send, n), PG_OK) : (pg__copy(recv, blk, n), PG_OK);
        else
            rc = gather ? pg__sendrecv(g, tag, -1, 0, 0, i, blk, n, piece)
                        : pg__sendrecv(g, tag, i, blk, n, -1, 0, 0, piece);
        if (rc < 0) return rc;
    }
    return PG_OK;
}

PG__DEF int pg_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, int root)
{
    return pg__rootedv(g, 1, send, recv, counts, dt, root);
}

PG__DEF int pg_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, int root)
{
    return pg__rootedv(g, 0, send, recv, counts, dt, root);
}

PG__DEF int pg_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, int root)
{
    size_t counts[PG_MAX_RANKS];
    int rc = pg__even(g, count, dt, counts);
    return rc < 0 ? rc : pg_gatherv(g, send, recv, counts, dt, root);
}

PG__DEF int pg_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, int root)
{
    size_t counts[PG_MAX_RANKS];
    int rc = pg__even(g, count, dt, counts);
    return rc < 0 ? rc : pg_scatterv(g, send, recv, counts, dt, root);
}

#ifdef __cplusplus
}
#endif
#endif /* PG_IMPLEMENTATION */
