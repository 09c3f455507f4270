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
       #include "ports/pg.h"
       #define PG_PTHREAD_IMPLEMENTATION
       #include "ports/pg_pthread.h"
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

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE):
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
       PG_ERR_TOO_BIG. One send carries at most `max_msg` bytes (the slot size on
       shared memory); the collectives split larger payloads themselves.
     - Every blocking call waits at most the group's timeout (pg_set_timeout) and then
       returns PG_ERR_TIMEOUT; the group stays usable. PG_WAIT_FOREVER disables it.
     - pg_abort(g, err) on one rank makes every blocked call on every rank of the world
       return PG_ERR_ABORTED within one timeout; the world stays aborted until every rank
       calls pg_recover().
     - Errors are negative values of enum pg_err; bad input never crashes and never writes
       outside the caller's buffers. Collectives check that the sizes a peer sends match
       what this rank expects and return PG_ERR_MISMATCH instead of overrunning.
     - Collectives must be called by every member in the same order (like MPI/torch).
       Reductions combine ranks in a fixed order, so every rank gets the same bits.

   Tags: user tags are 0..PG_TAG_MAX. On the wire pg.h folds a group context id and a
   kind (user message or collective number) into a 31-bit tag (pg_wire_tag), so traffic
   of different groups and collectives never mixes; bit 30 is reserved for the port. */
#ifndef PG_H
#define PG_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#ifdef SPLITCORE_CONFIG_FILE
#include SPLITCORE_CONFIG_FILE
#endif
#include <stddef.h>
#include <stdint.h>
#include "../microbatch.h" /* mb_dtype (types only: no MICROBATCH_IMPLEMENTATION needed) */

#ifndef PG_MAX_RANKS
#define PG_MAX_RANKS 64
#endif
#ifndef PG_SCRATCH_BYTES
#define PG_SCRATCH_BYTES 1024
#endif
#ifndef PG_DEFAULT_TIMEOUT_MS
#define PG_DEFAULT_TIMEOUT_MS 10000u
#endif
#ifdef PG_STATIC
#define PG_API static
#else
#define PG_API extern
#endif

#define PG_WAIT_FOREVER 0xFFFFFFFFu  /* timeout value: never time out */
#define PG_TAG_MAX 0xFFFF            /* largest user tag */
#define PG_TAG_PORT_BIT 0x40000000u  /* wire-tag bit reserved for ports (abort, control) */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Types, error codes, reductions ------------------------------------------- */
enum pg_err {
    PG_OK = 0,
    PG_ERR_NULL = -1,        /* a required pointer is NULL */
    PG_ERR_RANK = -2,        /* rank or root outside 0..size-1 (or a port's capacity) */
    PG_ERR_TAG = -3,         /* tag outside 0..PG_TAG_MAX */
    PG_ERR_SIZE = -4,        /* bad count / size argument, or group size out of range */
    PG_ERR_TOO_BIG = -5,     /* message larger than a slot, max_msg or the receive buffer */
    PG_ERR_TIMEOUT = -6,     /* nothing happened within the group's timeout */
    PG_ERR_ABORTED = -7,     /* some rank called pg_abort() (world stays aborted) */
    PG_ERR_MISMATCH = -8,    /* peers disagree on sizes/counts of a collective */
    PG_ERR_DTYPE = -9,       /* unknown dtype, or op undefined for it (AVG on integers) */
    PG_ERR_OP = -10,         /* unknown reduction op */
    PG_ERR_CORRUPT = -11,    /* shared state failed validation (port-detected) */
    PG_ERR_NO_SLOT = -12,    /* no free zero-copy slot / unknown slot pointer */
    PG_ERR_UNSUPPORTED = -13, /* the port lacks this operation */
    PG_ERR_NOT_MEMBER = -14, /* this rank is not in the sub-group (or ranks list invalid) */
    PG_ERR_PORT = -15        /* the port's underlying system failed (MPI, pthread) */
};
#define PG_ERR_LAST PG_ERR_PORT

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
    int (*abort)(void *port, int err);  /* make every blocked call in the world return ABORTED */
    int (*recover)(void *port);         /* collective over the world: clear abort, drop messages */

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

/* A group: the world a port creates, or a sub-group. Caller storage; treat as opaque. */
typedef struct pg_group {
    const pg_ops *ops;
    void *port;                    /* the port's state for this rank */
    int32_t rank, size;            /* in this group */
    int32_t world_rank, world_size;
    int32_t ranks[PG_MAX_RANKS];   /* group rank -> world rank */
    uint32_t context;              /* 0 for the world, 1..255 for sub-groups */
    uint32_t next_context;         /* sub-group ids handed out by this group */
    uint32_t seq;                  /* collective sequence number */
    uint32_t timeout_ms;
    size_t max_msg;                /* largest single message of the port */
    unsigned char *scratch;        /* reduction scratch (user's or the built-in one) */
    size_t scratch_bytes;
    void *fallback_slot;           /* copying-slot fallback: the one outstanding slot */
    size_t fallback_bytes;
    int32_t fallback_peer;
    int32_t fallback_dir;          /* 1 acquired for send, 2 peeked for receive */
    uint64_t builtin_scratch[(PG_SCRATCH_BYTES + 7) / 8];
} pg_group;

PG_API const char *pg_strerror(int err);
PG_API size_t pg_dtype_size(mb_dtype dt); /* 0 for an unknown dtype */
/* The wire tag for (context, kind, low 16 bits); kind 0 = user p2p, 1..63 collectives. */
PG_API uint32_t pg_wire_tag(uint32_t context, uint32_t kind, uint32_t low16);

/* ---- 4. Groups and point-to-point -------------------------------------------------
   Ports call pg_group_init() from their own init (e.g. pg_pthread_group()); users rarely do. */
PG_API int pg_group_init(pg_group *g, const pg_ops *ops, void *port, int world_rank, int world_size,
                         size_t max_msg);
PG_API int pg_rank(const pg_group *g);       /* < 0 on a NULL group */
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
/* Receives into buf[0..cap); *got (may be NULL) = the message size. */
PG_API int pg_recv(pg_group *g, int src, int tag, void *buf, size_t cap, size_t *got);
/* As pg_recv with an explicit timeout (0 = try once, never block). */
PG_API int pg_recv_timeout(pg_group *g, int src, int tag, void *buf, size_t cap, size_t *got,
                           uint32_t timeout_ms);
/* Non-blocking test: 1 (and *bytes) if a message (src, tag) is waiting, 0 if not. */
PG_API int pg_probe(pg_group *g, int src, int tag, size_t *bytes);

/* Abort the whole world (also through a sub-group): every blocked peer returns
   PG_ERR_ABORTED within one timeout. `err` is informational. */
PG_API int pg_abort(pg_group *g, int err);
/* After an abort (or a failed collective): every world rank calls it; it clears the abort
   state and drops undelivered messages, then the world is usable again. */
PG_API int pg_recover(pg_group *g);

/* ---- 5. Zero-copy slots -----------------------------------------------------------
   Sender: pg_slot_acquire() reserves `bytes` in dst's inbox and returns where to write;
   pg_slot_commit() publishes it under `tag` (bytes <= acquired). Receiver: pg_slot_peek()
   waits for (src, tag) and returns the message in place; pg_slot_release() frees it.
   On ports without shared memory the slot is the group's scratch (one outstanding slot
   per group; bytes <= pg_scratch_bytes()) and commit/peek copy. */
PG_API int pg_slot_acquire(pg_group *g, int dst, size_t bytes, void **ptr);
PG_API int pg_slot_commit(pg_group *g, int dst, int tag, void *ptr, size_t bytes);
PG_API int pg_slot_peek(pg_group *g, int src, int tag, const void **ptr, size_t *bytes);
PG_API int pg_slot_release(pg_group *g, int src, const void *ptr);

/* ---- 6. Sub-groups ----------------------------------------------------------------
   sub = the parent's ranks[0..n) (parent group ranks, distinct, any order: sub rank i is
   parent rank ranks[i]). Its context id comes from the parent's counter, which advances on
   every call, member or not — so every rank of the parent makes the same sequence of
   pg_subgroup_init calls on it (as with torch's new_group). Non-members get
   PG_ERR_NOT_MEMBER (and `sub` is unusable: every call on it returns that code). */
PG_API int pg_subgroup_init(pg_group *sub, pg_group *parent, const int *ranks, int n);

/* ---- 7. Collectives ---------------------------------------------------------------
   Counts are in elements of `dt`. `v` variants take one count per group rank and pack
   the blocks back to back in rank order (no displacement arrays); counts may be 0.
   send == recv is allowed where noted (in place). Every member calls with agreeing
   arguments; a disagreement the protocol sees gives PG_ERR_MISMATCH (peers may then see
   PG_ERR_MISMATCH or PG_ERR_TIMEOUT). AVG is for float dtypes (integers: PG_ERR_DTYPE);
   integer SUM/PROD wrap around. */
PG_API int pg_barrier(pg_group *g);
PG_API int pg_broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root);
/* recv[i] = op over ranks of send[i]; send == recv in place. */
PG_API int pg_all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op);
/* recv = send of rank 0 .. send of rank size-1 (count each). */
PG_API int pg_all_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt);
PG_API int pg_all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt);
/* send holds size blocks of count; recv = op over ranks of block `rank`. */
PG_API int pg_reduce_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt,
                             pg_red op);
/* send holds blocks of counts[0..size) packed; recv = reduced block `rank` (counts[rank]). */
PG_API int pg_reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts,
                              mb_dtype dt, pg_red op);
/* Block j of send (count each) goes to rank j; block i of recv comes from rank i. */
PG_API int pg_all_to_all(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt);
PG_API int pg_all_to_allv(pg_group *g, const void *send, const size_t *send_counts, void *recv,
                          const size_t *recv_counts, mb_dtype dt);
/* Root's recv = every rank's send in rank order; recv is ignored (may be NULL) elsewhere. */
PG_API int pg_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, int root);
PG_API int pg_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                      int root);
/* Rank i's recv = block i of root's send; send is ignored (may be NULL) off the root. */
PG_API int pg_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, int root);
PG_API int pg_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                       int root);

/* Reduce `n` elements: acc[i] = op(acc[i], in[i]) (the combine step every port shares). */
PG_API int pg_reduce_local(void *acc, const void *in, size_t n, mb_dtype dt, pg_red op);
/* acc[i] /= divisor for AVG's final step (float dtypes). */
PG_API int pg_scale_local(void *acc, size_t n, mb_dtype dt, int divisor);

#ifdef __cplusplus
}
#endif
#endif /* PG_H */
