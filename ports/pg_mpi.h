/* pg_mpi.h — splitcore process-group port: ranks are MPI ranks (across machines)

   Implements the pg.h contract over MPI: pg.h wire tags are MPI tags on a private
   duplicate of the user's communicator; sends are buffered (copied into a static pool
   and sent with MPI_Isend, so a send never waits for its receiver while the pool has
   room); receives poll MPI_Iprobe so every wait honours the group's timeout and notices
   an abort; pg_abort sends a message on a reserved tag to every rank. Collectives of the
   world group (up to PG_MPI_SMALL_RANKS ranks):
     - small ones (what a rank sends to or receives from each peer <= PG_MPI_EXCHANGE
       bytes: all_reduce, all_gather(v), reduce_scatter(v)) are one exchange between every
       pair of ranks: a 64-byte header (the collective, dtype, op, counts) in front of the
       payload, cut in messages that stay under OpenMPI's shared-memory eager limit (its
       rendezvous for larger ones costs more than the whole exchange), polled with the
       group's timeout; every rank checks every header, so disagreements return
       PG_ERR_MISMATCH on every rank, and reduces in rank order (every rank, same bits);
       the first message to each peer (the header and up to PG_MPI_SMALL bytes) goes out
       of one of two buffers per peer with its MPI request freed at once (the exchange
       after next reuses it, and the one between proves the peer took it), so it costs
       what a bare MPI_Isend does; an even all_gather of one message a peer takes a
       shorter path to the same messages;
     - larger ones first exchange the headers alone (the same check, and a rendezvous:
       every rank has arrived with the same arguments), then make the blocking MPI call
       (MPI_Allreduce, ...; a large all_gather after an MPI_Barrier, see
       PG_MPI_GATHER_SYNC), as fast as raw MPI. Once the check has passed, the call itself
       has no timeout (a peer that timed out in the check at the very moment the last rank
       arrived would leave the others in it); `blocking = 0` uses MPI's non-blocking
       collectives polled with the timeout instead (slower in OpenMPI).
   Bigger worlds check with one small MPI_Iallreduce. check_args = 0 skips the header
   exchange of large collectives (then a disagreement is MPI's undefined behaviour).
   Sub-groups use pg.h's generic algorithms. No heap in this header.

   Example (run with mpirun -np 4 ./prog):
       #define PG_IMPLEMENTATION
       #define PG_MPI_IMPLEMENTATION
       #include <splitcore/ports/pg_mpi.h>
       static pg_mpi_port port;
       int main(int argc, char **argv) {
           MPI_Init(&argc, &argv);
           pg_mpi_init(&port, MPI_COMM_WORLD);
           pg_group *g = pg_mpi_group(&port);
           float x[256] = {0};  int rc = pg_all_reduce(g, x, x, 256, MB_F32, PG_SUM);
           pg_mpi_finalize(&port);  MPI_Finalize();  return rc != 0; }

   Contents: 1. Configuration  2. Types and API  3. Implementation (PG_MPI_IMPLEMENTATION)

   Configuration:
       PG_MPI_IMPLEMENTATION  emit the definitions (exactly one .c file, with PG_IMPLEMENTATION)
       PG_MPI_STATIC          make every function static
       PG_MPI_MAX_MSG         largest p2p message = the port's max_msg (default 65536)
       PG_MPI_SEND_SLOTS      buffered sends in flight (default 16, at most 32)
       PG_MPI_CHECK_ARGS      default of pg_mpi_port.check_args (1): large native collectives
                              first compare every rank's arguments (the header exchange)
       PG_MPI_BLOCKING        default of pg_mpi_port.blocking (1): large native collectives
                              are blocking MPI calls once the check passed; 0: non-blocking
                              ones polled with the timeout (no check: timeout/abort inside)
       PG_MPI_SMALL           largest payload of one message of a small collective (3968:
                              with our 64-byte header and OpenMPI's own, within its 4 KB
                              shared-memory eager limit; <= PG_MPI_MAX_MSG - 64)
       PG_MPI_EXCHANGE        largest payload per peer of a small collective (16384; larger
                              ones are the check + MPI's own call; >= PG_MPI_SMALL)
       PG_MPI_GATHER_SYNC     all_gather(v) output bytes from which the blocking MPI call
                              follows the check through a barrier (default 256 KB; see
                              pg_mpi__all_gatherv)
       PG_MPI_SMALL_RANKS     largest world that uses the exchanges above (default 8; the
                              port holds PG_MPI_SMALL_RANKS receive buffers of
                              PG_MPI_EXCHANGE + 64 bytes and twice as many send buffers of
                              PG_MPI_SMALL + 64)
   Needs <mpi.h> (Debian: libopenmpi-dev; compile with mpicc). Errors are pg.h's enum pg_err
   (PG_ERR_PORT when an MPI call fails). */
#ifndef PG_MPI_H
#define PG_MPI_H

#include "pg.h"
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(PG_MPI_IMPLEMENTATION)
#define PG_MPI_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(PG_MPI_STATIC)
#define PG_MPI_STATIC
#endif
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1 /* C API only, also from C++ (the C++ bindings are deprecated) */
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#ifndef PG_MPI_MAX_MSG
#define PG_MPI_MAX_MSG 65536
#endif
#ifndef PG_MPI_SEND_SLOTS
#define PG_MPI_SEND_SLOTS 16
#endif
#ifndef PG_MPI_CHECK_ARGS
#define PG_MPI_CHECK_ARGS 1
#endif
#ifndef PG_MPI_BLOCKING
#define PG_MPI_BLOCKING 1
#endif
#ifndef PG_MPI_SMALL
#define PG_MPI_SMALL 3968 /* + our header + OpenMPI's: its shared-memory eager limit (4 KB) */
#endif
#ifndef PG_MPI_EXCHANGE
#define PG_MPI_EXCHANGE 16384
#endif
#ifndef PG_MPI_SMALL_RANKS
#define PG_MPI_SMALL_RANKS 8
#endif
#ifndef PG_MPI_GATHER_SYNC
#define PG_MPI_GATHER_SYNC (256u * 1024u)
#endif
#if PG_MPI_SMALL + 64 > PG_MPI_MAX_MSG || PG_MPI_SMALL % 8
#error "PG_MPI_SMALL must be a multiple of 8 and <= PG_MPI_MAX_MSG - 64"
#endif
#if PG_MPI_EXCHANGE < PG_MPI_SMALL || PG_MPI_EXCHANGE % 8
#error "PG_MPI_EXCHANGE must be a multiple of 8 and >= PG_MPI_SMALL"
#endif
#if PG_MPI_SEND_SLOTS > 32
#error "PG_MPI_SEND_SLOTS must be at most 32"
#endif
#ifdef PG_MPI_STATIC
#define PG_MPI_API static
#else
#define PG_MPI_API extern
#endif

#define PG_MPI_ABORT_TAG ((int)(PG_TAG_PORT_BIT | 1u)) /* reserved: abort messages */
#define PG_MPI_COLL_TAG  ((int)(PG_TAG_PORT_BIT | 2u)) /* reserved: collective exchanges */

#ifdef __cplusplus
extern "C" {
#endif

/* This process's port: used in place, not copied (its world group points into it; a copied
   group is refused with PG_ERR_COPIED). */
typedef struct pg_mpi_port {
    MPI_Comm parent; /* private duplicate of the user's communicator (coll is re-made from it) */
    MPI_Comm p2p;    /* private duplicate for point-to-point */
    MPI_Comm coll;   /* private duplicate for native collectives */
    int rank, size;
    int aborted, abort_err, coll_broken;
    MPI_Request recover_bar; /* pg_recover's Ibarrier in progress */
    int recover_stage;
    int check_args; /* compare arguments before large native collectives (PG_MPI_CHECK_ARGS) */
    int blocking;   /* large native collectives are blocking MPI calls (PG_MPI_BLOCKING):
                             fast, but no timeout/abort once entered (after the check) */
    MPI_Request send_req[PG_MPI_SEND_SLOTS];
    int next_slot; /* where post looks for a free send slot first (round robin) */
    MPI_Request abort_req[PG_MAX_RANKS];
    int abort_msg;
    int icounts[2][PG_MAX_RANKS], idispls[2][PG_MAX_RANKS]; /* size_t counts as MPI ints */
    int64_t check[10];
    MPI_Op int_sum, int_prod; /* wrap-around integer SUM/PROD (pg.h semantics) */
    uint64_t send_buf[PG_MPI_SEND_SLOTS][(PG_MPI_MAX_MSG + 7) / 8];
    uint64_t drain_buf[(PG_MPI_MAX_MSG + 7) / 8];
    uint64_t stage[PG_MPI_SMALL_RANKS][(64 + PG_MPI_EXCHANGE) / 8]; /* exchange receives, by rank */
    MPI_Request first[PG_MPI_SMALL_RANKS];                         /* persistent receives of every peer's first exchange
                                              message into stage[peer], in rank order, self left out */
    uint64_t xbuf[2][PG_MPI_SMALL_RANKS][(64 + PG_MPI_SMALL) / 8]; /* our first exchange messages,
                                              by exchange parity and peer (pg_mpi__send_first) */
    int xpar;                                                      /* parity of the exchange in progress */
    pg_group world;
} pg_mpi_port;

/* The port's vtable (pg.h section 3), for pg_group_init by hand. */
PG_MPI_API const pg_ops *pg_mpi_ops(void);
/* Duplicate `comm` (collective over it) and make the world group. */
PG_MPI_API int pg_mpi_init(pg_mpi_port *p, MPI_Comm comm);
PG_MPI_API pg_group *pg_mpi_group(pg_mpi_port *p);
/* Wait for buffered sends (group timeout), free the communicators. Collective. */
PG_MPI_API int pg_mpi_finalize(pg_mpi_port *p);

#ifdef __cplusplus
}
#endif
#endif /* PG_MPI_H */

#if defined(PG_MPI_IMPLEMENTATION) && !defined(PG_MPI_IMPLEMENTED)
#define PG_MPI_IMPLEMENTED
#if !defined(PG_IMPLEMENTATION) && (defined(PG_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error "pg_mpi.h: PG_MPI_IMPLEMENTATION needs PG_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif
#include <string.h>
#include <limits.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PG_MPI_STATIC
#define PG_MPI__DEF static
#else
#define PG_MPI__DEF
#endif

/* Take any abort message that has arrived; PG_ERR_ABORTED once one has. */
static int pg_mpi__poll_abort(pg_mpi_port *p)
{
    int flag = 0;
    MPI_Status st;
    if (p->aborted) return PG_ERR_ABORTED;
    MPI_Iprobe(MPI_ANY_SOURCE, PG_MPI_ABORT_TAG, p->p2p, &flag, &st);
    if (flag) {
        int err = 0;
        MPI_Recv(&err, 1, MPI_INT, st.MPI_SOURCE, PG_MPI_ABORT_TAG, p->p2p, MPI_STATUS_IGNORE);
        p->aborted = 1;
        p->abort_err = err;
        return PG_ERR_ABORTED;
    }
    return PG_OK;
}

typedef struct pg_mpi__wait {
    double deadline;
    uint32_t timeout;
    unsigned idle;
} pg_mpi__wait;

/* The clock is read at the first fruitless poll, not before: a wait that succeeds at
   once costs no MPI_Wtime. */
static void pg_mpi__wait_init(pg_mpi__wait *w, uint32_t timeout_ms)
{
    w->timeout = timeout_ms;
    w->idle = 0;
    w->deadline = -1.0;
}

/* Every 64 fruitless polls: has the timeout passed? (the first call starts the clock) */
static int pg_mpi__expired(pg_mpi__wait *w)
{
    double now;
    if ((w->idle++ & 63u) != 0 || w->timeout == PG_WAIT_FOREVER) return 0;
    now = MPI_Wtime();
    if (w->deadline < 0) w->deadline = now + (double)w->timeout / 1000.0;
    return now >= w->deadline;
}

/* After a fruitless poll: PG_OK to poll again, or ABORTED / TIMEOUT. Abort messages are
   probed every 128 polls, not at the first ones (an MPI_Iprobe of any source costs as
   much as a small message: a collective whose peers are already there pays none). */
static int pg_mpi__wait_step(pg_mpi_port *p, pg_mpi__wait *w)
{
    int rc = (w->idle & 127u) != 127u && w->timeout ? PG_OK : pg_mpi__poll_abort(p);
    if (rc < 0) return rc;
    if (w->timeout == 0) return PG_ERR_TIMEOUT;
    return pg_mpi__expired(w) ? PG_ERR_TIMEOUT : PG_OK;
}

/* Poll a request to completion within the timeout (it stays pending on failure). */
static int pg_mpi__complete(pg_mpi_port *p, MPI_Request *req, uint32_t timeout_ms)
{
    pg_mpi__wait w;
    int done = 0, rc;
    pg_mpi__wait_init(&w, timeout_ms == 0 ? 1u : timeout_ms);
    for (;;) {
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return PG_ERR_PORT;
        if (done) return PG_OK;
        if ((rc = pg_mpi__wait_step(p, &w)) < 0) return rc;
    }
}

#define PG_MPI__HDR   64         /* an exchange header's bytes (see pg_mpi__header) */
#define PG_MPI__MAGIC 0x70670000 /* + the collective: word 0 of every exchange header */

/* Buffered send of buf[0..bytes) as one message: copied into a free send slot (pg_mpi__post
   waits for one within the timeout; pg_mpi__slot_send takes free slot i), then MPI_Isend.
   Slots are taken round robin from next_slot, so the one tested first is the oldest send,
   done as a rule. Callers poll the abort. */
static int pg_mpi__slot_send(pg_mpi_port *p, int i, int dst, int tag, const void *buf, size_t bytes)
{
    unsigned char *d = (unsigned char *)p->send_buf[i];
    if (bytes) memcpy(d, buf, bytes);
    p->next_slot = (i + 1) % PG_MPI_SEND_SLOTS;
    return MPI_Isend(d, (int)bytes, MPI_BYTE, dst, tag, p->p2p, &p->send_req[i]) == MPI_SUCCESS ? PG_OK : PG_ERR_PORT;
}

static int pg_mpi__post(pg_mpi_port *p, int dst, int tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    pg_mpi__wait w;
    int i, k, done, rc;
    pg_mpi__wait_init(&w, timeout_ms);
    for (;;) {
        for (k = 0; k < PG_MPI_SEND_SLOTS; k++) {
            i = (p->next_slot + k) % PG_MPI_SEND_SLOTS;
            done = p->send_req[i] == MPI_REQUEST_NULL;
            if (!done) MPI_Test(&p->send_req[i], &done, MPI_STATUS_IGNORE);
            if (done) return pg_mpi__slot_send(p, i, dst, tag, buf, bytes);
        }
        if ((rc = pg_mpi__wait_step(p, &w)) < 0) return rc;
    }
}

static int pg_mpi__send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    pg_mpi_port *p = (pg_mpi_port *)port;
    int rc;
    if (dst < 0 || dst >= p->size) return PG_ERR_RANK;
    if (bytes > PG_MPI_MAX_MSG) return PG_ERR_TOO_BIG;
    if ((rc = pg_mpi__poll_abort(p)) < 0) return rc;
    return pg_mpi__post(p, dst, (int)tag, buf, bytes, timeout_ms);
}

static int pg_mpi__recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    pg_mpi_port *p = (pg_mpi_port *)port;
    pg_mpi__wait w;
    MPI_Status st;
    int flag = 0, n = 0, rc;
    if (src < 0 || src >= p->size) return PG_ERR_RANK;
    if ((rc = pg_mpi__poll_abort(p)) < 0) return rc;
    pg_mpi__wait_init(&w, timeout_ms);
    for (;;) {
        MPI_Iprobe(src, (int)tag, p->p2p, &flag, &st);
        if (flag) break;
        if ((rc = pg_mpi__wait_step(p, &w)) < 0) return rc;
    }
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (got) *got = (size_t)n;
    if ((size_t)n > cap || n > PG_MPI_MAX_MSG) { /* consume it, report */
        void *sink = (size_t)n <= sizeof p->drain_buf ? (void *)p->drain_buf : (void *)0;
        if (sink)
            MPI_Recv(sink, n, MPI_BYTE, src, (int)tag, p->p2p, MPI_STATUS_IGNORE);
        else
            MPI_Recv(p->drain_buf, 0, MPI_BYTE, src, (int)tag, p->p2p, MPI_STATUS_IGNORE); /* truncates */
        return PG_ERR_TOO_BIG;
    }
    if (MPI_Recv(buf, n, MPI_BYTE, src, (int)tag, p->p2p, MPI_STATUS_IGNORE) != MPI_SUCCESS) return PG_ERR_PORT;
    return PG_OK;
}

static int pg_mpi__probe(void *port, int src, uint32_t tag, size_t *bytes)
{
    pg_mpi_port *p = (pg_mpi_port *)port;
    MPI_Status st;
    int flag = 0, n = 0, rc;
    if (src < 0 || src >= p->size) return PG_ERR_RANK;
    if ((rc = pg_mpi__poll_abort(p)) < 0) return rc;
    MPI_Iprobe(src, (int)tag, p->p2p, &flag, &st);
    if (!flag) return 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (bytes) *bytes = (size_t)n;
    return 1;
}

static int pg_mpi__abort(void *port, int err)
{
    pg_mpi_port *p = (pg_mpi_port *)port;
    int r;
    if (p->aborted) return PG_OK;
    p->aborted = 1;
    p->abort_err = err;
    p->abort_msg = err;
    for (r = 0; r < p->size; r++)
        if (r != p->rank) MPI_Isend(&p->abort_msg, 1, MPI_INT, r, PG_MPI_ABORT_TAG, p->p2p, &p->abort_req[r]);
    return PG_OK;
}

/* Receive and drop whatever is queued for this rank on the p2p communicator. */
static void pg_mpi__drain(pg_mpi_port *p)
{
    MPI_Status st;
    int flag = 1, n;
    while (flag) {
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, p->p2p, &flag, &st);
        if (!flag) break;
        MPI_Get_count(&st, MPI_BYTE, &n);
        if (n > (int)sizeof p->drain_buf) n = 0; /* cannot happen: sends are <= max_msg */
        MPI_Recv(p->drain_buf, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, p->p2p, MPI_STATUS_IGNORE);
    }
}

/* One recover round: drain until this rank's sends are done and an Ibarrier over p2p
   completed, within the world's timeout. A round that timed out is resumed (same
   Ibarrier) by the next pg_recover, so late ranks still match. (Exchange first messages,
   their requests freed, are not waited for here: every peer drains them, so after the
   second round their buffers are free again.) */
static int pg_mpi__drain_round(pg_mpi_port *p)
{
    pg_mpi__wait w;
    int done = 0, all, i, d;
    if (p->recover_bar == MPI_REQUEST_NULL && MPI_Ibarrier(p->p2p, &p->recover_bar) != MPI_SUCCESS) return PG_ERR_PORT;
    pg_mpi__wait_init(&w, p->world.timeout_ms);
    for (;;) {
        pg_mpi__drain(p);
        all = 1;
        for (i = 0; i < PG_MPI_SEND_SLOTS; i++) {
            d = 1;
            if (p->send_req[i] != MPI_REQUEST_NULL) MPI_Test(&p->send_req[i], &d, MPI_STATUS_IGNORE);
            all &= d;
        }
        for (i = 0; i < p->size; i++) {
            d = 1;
            if (p->abort_req[i] != MPI_REQUEST_NULL) MPI_Test(&p->abort_req[i], &d, MPI_STATUS_IGNORE);
            all &= d;
        }
        if (!done) MPI_Test(&p->recover_bar, &done, MPI_STATUS_IGNORE); /* sets it to MPI_REQUEST_NULL */
        if (done && all) return PG_OK;
        if (pg_mpi__expired(&w)) return PG_ERR_TIMEOUT;
    }
}

static int pg_mpi__recover(void *port)
{
    pg_mpi_port *p = (pg_mpi_port *)port;
    int rc;
    while (p->recover_stage < 2) { /* the second round takes eager messages that raced the first */
        if ((rc = pg_mpi__drain_round(p)) < 0) return rc;
        p->recover_stage++;
    }
    p->recover_stage = 0;
    p->aborted = 0;
    p->abort_err = 0;
    /* a native collective that failed half-way may still be pending: new communicator */
    MPI_Comm_free(&p->coll);
    if (MPI_Comm_dup(p->parent, &p->coll) != MPI_SUCCESS) return PG_ERR_PORT;
    MPI_Comm_set_errhandler(p->coll, MPI_ERRORS_RETURN);
    p->coll_broken = 0;
    return MPI_Barrier(p->coll) == MPI_SUCCESS ? PG_OK : PG_ERR_PORT;
}

/* ---- native collectives (world group only) ---- */
static MPI_Datatype pg_mpi__type(mb_dtype dt)
{
    switch (dt) {
    case MB_F32: return MPI_FLOAT;
    case MB_F64: return MPI_DOUBLE;
    case MB_I8: return MPI_INT8_T;
    case MB_U8: return MPI_UINT8_T;
    case MB_I16: return MPI_INT16_T;
    default: return MPI_INT32_T;
    }
}

/* Integer SUM/PROD go through pg_reduce_local as MPI user ops: pg.h promises wrap-around,
   and some MPI builds (OpenMPI 4.1's AVX op component) saturate 8-bit sums instead. */
static mb_dtype pg_mpi__dtype_of(MPI_Datatype t)
{
    if (t == MPI_INT8_T) return MB_I8;
    if (t == MPI_UINT8_T) return MB_U8;
    if (t == MPI_INT16_T) return MB_I16;
    return MB_I32;
}
static void pg_mpi__user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    pg_reduce_local(inout, in, (size_t)*len, pg_mpi__dtype_of(*t), PG_SUM);
}
static void pg_mpi__user_prod(void *in, void *inout, int *len, MPI_Datatype *t)
{
    pg_reduce_local(inout, in, (size_t)*len, pg_mpi__dtype_of(*t), PG_PROD);
}

static MPI_Op pg_mpi__op(const pg_mpi_port *p, pg_red op, mb_dtype dt)
{
    int flt = dt == MB_F32 || dt == MB_F64;
    switch (op) {
    case PG_MAX: return MPI_MAX;
    case PG_MIN: return MPI_MIN;
    case PG_PROD: return flt ? MPI_PROD : p->int_prod;
    default: return flt ? MPI_SUM : p->int_sum;
    }
}

/* The port when g may use native collectives, else NULL (sub-group or broken comm). */
static pg_mpi_port *pg_mpi__native(pg_group *g)
{
    pg_mpi_port *p = (pg_mpi_port *)g->port;
    return (g->context == 0 && !p->coll_broken) ? p : (pg_mpi_port *)0;
}

static int pg_mpi__finish(pg_mpi_port *p, MPI_Request *req, uint32_t timeout_ms)
{
    int rc = pg_mpi__complete(p, req, timeout_ms);
    if (rc < 0) p->coll_broken = 1; /* pending on p->coll until pg_recover */
    return rc;
}

/* ---- the argument check and the exchange of small collectives ----
   A header: words 0..4 are what every rank must agree on (magic + collective, count,
   dtype, op or root, a hash of the per-rank counts), word 5 the payload bytes that follow. */
static void pg_mpi__header(int64_t *h, int kind, size_t count, mb_dtype dt, int op_or_root, uint64_t counts_hash)
{
    h[0] = PG_MPI__MAGIC + kind;
    h[1] = (int64_t)count;
    h[2] = (int64_t)dt;
    h[3] = op_or_root;
    h[4] = (int64_t)(counts_hash >> 1);
    h[5] = h[6] = h[7] = 0;
}

/* Poll requests to completion within the wait w (they stay pending on failure). */
static int pg_mpi__wait_all(pg_mpi_port *p, pg_mpi__wait *w, int m, MPI_Request *rq)
{
    int flag = 0, rc = PG_OK;
    while (rc == PG_OK) {
        if ((m == 1 ? MPI_Test(rq, &flag, MPI_STATUS_IGNORE) : MPI_Testall(m, rq, &flag, MPI_STATUSES_IGNORE)) !=
            MPI_SUCCESS)
            return PG_ERR_PORT;
        if (flag) return PG_OK;
        rc = pg_mpi__wait_step(p, w);
    }
    return rc;
}

/* An exchange's first message to rank dst: the header and bytes <= PG_MPI_SMALL payload
   bytes, copied into xbuf[xpar][dst] and sent with its request freed at once (no slot is
   looked for, waited for or tested later: the send costs what a bare MPI_Isend does). The
   buffer is written again two exchanges on, and the exchange between them received dst's
   first message, which dst sent after it returned from this one, so after it had received
   ours; when an exchange fails, pg_recover (due on every rank) drains every message first. */
static int pg_mpi__send_first(pg_mpi_port *p, int dst, const int64_t *hdr, const void *buf, size_t bytes)
{
    unsigned char *d = (unsigned char *)p->xbuf[p->xpar][dst];
    MPI_Request rq;
    memcpy(d, hdr, PG_MPI__HDR); /* a constant size: copied inline */
    if (bytes) memcpy(d + PG_MPI__HDR, buf, bytes);
    if (MPI_Isend(d, (int)(PG_MPI__HDR + bytes), MPI_BYTE, dst, PG_MPI_COLL_TAG, p->p2p, &rq) != MPI_SUCCESS)
        return PG_ERR_PORT;
    return MPI_Request_free(&rq) == MPI_SUCCESS ? PG_OK : PG_ERR_PORT;
}

/* Start the persistent receives of the peers' first exchange messages (MPI_Start for one:
   half MPI_Startall's instructions), word 0 of every stage cleared first. Only exchange
   messages travel on PG_MPI_COLL_TAG, and a first one is a header (magic in word 0, its
   payload bytes in word 5) and exactly the bytes it announces, so a stage whose word 0 is
   a header holds one whole message: its length needs no MPI_Get_count (a 64-bit division
   in OpenMPI, 2 % of a small exchange). */
static int pg_mpi__start_first(pg_mpi_port *p, int n)
{
    int j;
    for (j = 0; j < p->size; j++) p->stage[j][0] = 0;
    return (n == 1 ? MPI_Start(p->first) : MPI_Startall(n, p->first)) == MPI_SUCCESS ? PG_OK : PG_ERR_PORT;
}

/* Cancel the receives still pending (done or inactive persistent ones are left alone). */
static void pg_mpi__cancel(int m, MPI_Request *rq)
{
    int k, done;
    for (k = 0; k < m; k++) {
        done = rq[k] == MPI_REQUEST_NULL;
        if (!done) MPI_Test(&rq[k], &done, MPI_STATUS_IGNORE);
        if (!done) {
            MPI_Cancel(&rq[k]);
            MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
        }
    }
}

/* receives of later messages (an exchange payload goes in messages of <= PG_MPI_SMALL bytes,
   the header in front of the first; a bare header is one message) */
#define PG_MPI__LATER (PG_MPI_SMALL_RANKS * ((PG_MPI_EXCHANGE + PG_MPI_SMALL - 1) / PG_MPI_SMALL))

/* Step 3 of an exchange, once every peer's first message is in stage[peer]: the rest of
   every peer's, as its header announced. PG_OK, PG_ERR_MISMATCH when a header or a size
   disagrees with hdr and ib, or TIMEOUT / ABORTED / PORT with the later receives cancelled. */
static int pg_mpi__rest(pg_mpi_port *p, pg_mpi__wait *w, const int64_t *hdr, const size_t *ib)
{
    MPI_Request rq[PG_MPI__LATER];
    size_t at, sb;
    int j, k, m = 0, rc = PG_OK;
    for (j = 0; j < p->size; j++)
        if (j != p->rank) {
            const int64_t *h = (const int64_t *)p->stage[j];
            if ((h[0] & ~(int64_t)0xFF) != PG_MPI__MAGIC || h[5] < 0 || h[5] > PG_MPI_EXCHANGE) {
                rc = PG_ERR_MISMATCH; /* not one of our headers: nothing more is known to come */
                continue;
            }
            sb = (size_t)h[5];
            if (sb != ib[j] || memcmp(h, hdr, 5 * sizeof *h) != 0) rc = PG_ERR_MISMATCH;
            for (at = PG_MPI_SMALL; at < sb; at += PG_MPI_SMALL) /* stage holds sb */
                if (MPI_Irecv((unsigned char *)p->stage[j] + PG_MPI__HDR + at,
                              (int)(sb - at < PG_MPI_SMALL ? sb - at : PG_MPI_SMALL), MPI_BYTE, j, PG_MPI_COLL_TAG,
                              p->p2p, &rq[m++]) != MPI_SUCCESS) {
                    pg_mpi__cancel(m - 1, rq);
                    return PG_ERR_PORT;
                }
        }
    if (m && (k = pg_mpi__wait_all(p, w, m, rq)) < 0) {
        pg_mpi__cancel(m, rq); /* the receives; the sends stay in their slots */
        return k;
    }
    return rc;
}

/* One exchange with every other rank: to rank j the header (word 5: ob[j]) and
   out[j][0..ob[j]) in messages of at most PG_MPI_SMALL payload bytes (eager ones in
   OpenMPI's shared memory; the first carries the header), so payloads up to
   PG_MPI_EXCHANGE bytes never take MPI's rendezvous path; from rank j into p->stage[j] a
   header equal to ours and ib[j] payload bytes (contiguous after the header); meanwhile
   cn bytes cs -> cd (memmove), the caller's local copy, off the critical path. Rank j's
   later messages are received as its header announces them, so a rank whose sizes
   disagree leaves nothing unreceived. PG_OK, PG_ERR_MISMATCH when a header or a size
   disagrees (every rank sees every header, so every rank returns it), or TIMEOUT /
   ABORTED / PORT with the receives cancelled (sends still pending are finished or
   drained by pg_recover). It returns once the receives are in: the sends, copies in
   xbuf and the send slots, finish on their own (OpenMPI completes a shared-memory send
   once the peer has taken it, a round trip later; waiting for that here cost about 0.1 us
   per call). The persistent receives of the peers' first messages start just after ours
   went out, not before: MPI matches an arrived message when it polls, which posting does
   not do, so they are in place before any is looked at, while the instructions of
   starting them overlap our messages' flight. */
static int pg_mpi__exchange(pg_mpi_port *p, uint32_t timeout_ms, int64_t *hdr, const unsigned char *const *out,
                            const size_t *ob, const size_t *ib, void *cd, const void *cs, size_t cn)
{
    pg_mpi__wait w;
    size_t at;
    int j, n = p->size - 1, rc = PG_OK, me = p->rank;
    p->xpar ^= 1;
    for (j = 0; j < p->size && rc == PG_OK; j++) /* 1. ours: header + first piece */
        if (j != me) {
            hdr[5] = (int64_t)ob[j];
            rc = pg_mpi__send_first(p, j, hdr, out[j], ob[j] < PG_MPI_SMALL ? ob[j] : PG_MPI_SMALL);
        }
    if (rc == PG_OK && n && pg_mpi__start_first(p, n) < 0) return PG_ERR_PORT; /* 2. see above */
    for (j = 0; j < p->size && rc == PG_OK; j++)                               /* 3. the rest of ours */
        for (at = PG_MPI_SMALL; j != me && rc == PG_OK && at < ob[j]; at += PG_MPI_SMALL)
            rc = pg_mpi__post(p, j, PG_MPI_COLL_TAG, out[j] + at, ob[j] - at < PG_MPI_SMALL ? ob[j] - at : PG_MPI_SMALL,
                              timeout_ms);
    if (rc == PG_OK && cn && cd != cs) memmove(cd, cs, cn); /* the caller's local copy, while ours travel */
    pg_mpi__wait_init(&w, timeout_ms == 0 ? 1u : timeout_ms);
    if (rc == PG_OK && n) rc = pg_mpi__wait_all(p, &w, n, p->first);
    if (rc < 0) {
        pg_mpi__cancel(n, p->first);
        return rc;
    }
    return pg_mpi__rest(p, &w, hdr, ib); /* 4. */
}

/* The exchange of an all_gather of b <= PG_MPI_SMALL bytes a rank: one message each way
   (the same messages as pg_mpi__exchange's), every peer's block copied from its stage to
   its place in recv as it is checked; pg_mpi__rest sorts out any disagreement. */
static int pg_mpi__gather_even(pg_mpi_port *p, uint32_t timeout_ms, int64_t *hdr, const void *send, unsigned char *recv,
                               size_t b)
{
    size_t ib[PG_MPI_SMALL_RANKS];
    pg_mpi__wait w;
    int j, n = p->size - 1, me = p->rank, rc = PG_OK;
    hdr[5] = (int64_t)b;
    p->xpar ^= 1;
    for (j = 0; j < p->size && rc == PG_OK; j++)
        if (j != me) rc = pg_mpi__send_first(p, j, hdr, send, b);
    if (rc == PG_OK && n && pg_mpi__start_first(p, n) < 0) return PG_ERR_PORT;
    if (rc == PG_OK && b && recv + (size_t)me * b != (const unsigned char *)send)
        memmove(recv + (size_t)me * b, send, b); /* while ours travel */
    pg_mpi__wait_init(&w, timeout_ms == 0 ? 1u : timeout_ms);
    if (rc == PG_OK && n) rc = pg_mpi__wait_all(p, &w, n, p->first);
    if (rc < 0) {
        pg_mpi__cancel(n, p->first);
        return rc;
    }
    for (j = 0; j < p->size; j++)
        if (j != me) {
            const int64_t *h = (const int64_t *)p->stage[j];
            if (memcmp(h, hdr, 6 * sizeof *h) != 0) { /* words 0-4 and size */
                for (j = 0; j < p->size; j++) ib[j] = b;
                return pg_mpi__rest(p, &w, hdr, ib);
            }
            memcpy(recv + (size_t)j * b, h + 8, b);
        }
    return PG_OK;
}

/* Before a large native collective: every rank arrived with the same header (the exchange
   without payloads; one MPI_Iallreduce of max(x), max(-x) in bigger worlds). */
static int pg_mpi__check(pg_mpi_port *p, uint32_t timeout_ms, int64_t *hdr)
{
    MPI_Request req;
    int i, rc;
    if (!p->check_args) return PG_OK;
    if (p->size <= PG_MPI_SMALL_RANKS) {
        const unsigned char *none[PG_MPI_SMALL_RANKS];
        size_t zero[PG_MPI_SMALL_RANKS];
        for (i = 0; i < p->size; i++) {
            none[i] = 0;
            zero[i] = 0;
        }
        return pg_mpi__exchange(p, timeout_ms, hdr, none, zero, zero, 0, 0, 0);
    }
    for (i = 0; i < 5; i++) {
        p->check[i] = hdr[i];
        p->check[5 + i] = -hdr[i];
    }
    if (MPI_Iallreduce(MPI_IN_PLACE, p->check, 10, MPI_INT64_T, MPI_MAX, p->coll, &req) != MPI_SUCCESS)
        return PG_ERR_PORT;
    if ((rc = pg_mpi__finish(p, &req, timeout_ms)) < 0) return rc;
    for (i = 0; i < 5; i++)
        if (p->check[i] != -p->check[5 + i]) return PG_ERR_MISMATCH;
    return PG_OK;
}

/* Small all_reduce / reduce_scatter after the exchange: recv = op over ranks in rank order
   of rank r's block (mine for this rank, p->stage[r] after the header for the others), the
   first two in one pass (every rank, same bits). */
static int pg_mpi__reduce_ranks(pg_mpi_port *p, const void *mine, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    size_t bytes = count * pg_dtype_size(dt);
    const unsigned char *own = (const unsigned char *)mine;
    unsigned char *out = (unsigned char *)recv;
    pg_red o = op == PG_AVG ? PG_SUM : op;
    int r;
    if (!bytes) return PG_OK;
    if (p->size == 1) {
        if (own != out) memmove(out, own, bytes);
        return PG_OK;
    }
    /* keep mine where recv overlaps it: ranks 0 and 1 read it in the first pass, which may
       write over it in place; the others read it after */
    if (own < out + bytes && out < own + bytes && !(own == out && p->rank < 2)) {
        memcpy((unsigned char *)p->stage[p->rank] + PG_MPI__HDR, own, bytes);
        own = (const unsigned char *)p->stage[p->rank] + PG_MPI__HDR;
    }
#define PG_MPI__BLOCK(r) ((r) == p->rank ? own : (const unsigned char *)p->stage[r] + PG_MPI__HDR)
    pg_reduce_into(out, PG_MPI__BLOCK(0), PG_MPI__BLOCK(1), count, dt, o);
    for (r = 2; r < p->size; r++) pg_reduce_local(out, PG_MPI__BLOCK(r), count, dt, o);
#undef PG_MPI__BLOCK
    return op == PG_AVG ? pg_scale_local(out, count, dt, p->size) : PG_OK;
}

/* size_t counts -> MPI int counts and packed displacements in p->icounts[which] */
static int pg_mpi__icounts(pg_mpi_port *p, int which, const size_t *counts)
{
    size_t off = 0;
    int i;
    for (i = 0; i < p->size; i++) {
        if (counts[i] > (size_t)INT_MAX || off > (size_t)INT_MAX) return PG_ERR_UNSUPPORTED;
        p->icounts[which][i] = (int)counts[i];
        p->idispls[which][i] = (int)off;
        off += counts[i];
    }
    return off > (size_t)INT_MAX ? PG_ERR_UNSUPPORTED : PG_OK;
}

/* Common start of a native collective: the port if g may use one, else NULL with *rc =
   UNSUPPORTED (sub-group, too large for MPI's int counts) or ABORTED (seen already). */
static pg_mpi_port *pg_mpi__enter(pg_group *g, int *rc, size_t count, const size_t *counts, size_t max_count)
{
    pg_mpi_port *p = pg_mpi__native(g);
    *rc = PG_ERR_UNSUPPORTED;
    if (!p || count > max_count || (counts && pg_mpi__icounts(p, 0, counts) < 0)) return (pg_mpi_port *)0;
    *rc = PG_ERR_ABORTED; /* an abort not seen yet is polled while the collective waits */
    return p->aborted ? (pg_mpi_port *)0 : p;
}

/* The exchange of a small collective when every block fits: 1 and *rc its result, or 0
   (use the native path). Block j (bytes[j]) goes to rank j; rank j's arrives in stage[j].
   cs -> cd (ob[own rank] bytes, may overlap) is moved once ours are sent (NULL: none). */
static int pg_mpi__small(pg_mpi_port *p, pg_group *g, int *rc, int64_t *hdr, const unsigned char *const *out,
                         const size_t *ob, const size_t *ib, void *cd, const void *cs)
{
    int r;
    if (p->size > PG_MPI_SMALL_RANKS) return 0;
    for (r = 0; r < p->size; r++)
        if (ob[r] > PG_MPI_EXCHANGE || ib[r] > PG_MPI_EXCHANGE) return 0;
    *rc = pg_mpi__exchange(p, g->timeout_ms, hdr, out, ob, ib, cd, cs, ob[p->rank]);
    return 1;
}

/* Blocking mode: the blocking MPI call. Otherwise the non-blocking one (which sets req),
   polled within the timeout; AVG divides afterwards. */
#define PG_MPI__RUN(p, g, BLOCKING, NONBLOCKING)                       \
    ((p)->blocking ? ((BLOCKING) == MPI_SUCCESS ? PG_OK : PG_ERR_PORT) \
                   : ((NONBLOCKING) == MPI_SUCCESS ? pg_mpi__finish((p), &req, (g)->timeout_ms) : PG_ERR_PORT))

static int pg_mpi__barrier(pg_group *g)
{
    MPI_Request req;
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 0, 0, 0);
    if (!p) return rc;
    return PG_MPI__RUN(p, g, MPI_Barrier(p->coll), MPI_Ibarrier(p->coll, &req));
}

static int pg_mpi__broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root)
{
    MPI_Request req;
    int64_t hdr[8];
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, count, 0, (size_t)INT_MAX);
    MPI_Datatype t = pg_mpi__type(dt);
    if (!p) return rc;
    pg_mpi__header(hdr, 1, count, dt, root, 0);
    if ((rc = pg_mpi__check(p, g->timeout_ms, hdr)) < 0) return rc;
    return PG_MPI__RUN(p, g, MPI_Bcast(buf, (int)count, t, root, p->coll),
                       MPI_Ibcast(buf, (int)count, t, root, p->coll, &req));
}

static int pg_mpi__all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    MPI_Request req;
    int64_t hdr[8];
    const unsigned char *out[PG_MPI_SMALL_RANKS];
    size_t b[PG_MPI_SMALL_RANKS];
    int rc, r;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, count, 0, (size_t)INT_MAX);
    MPI_Datatype t = pg_mpi__type(dt);
    const void *s = send == recv ? MPI_IN_PLACE : send;
    if (!p) return rc;
    pg_mpi__header(hdr, 2, count, dt, (int)op, 0);
    for (r = 0; r < p->size && r < PG_MPI_SMALL_RANKS; r++) {
        out[r] = (const unsigned char *)send;
        b[r] = count * pg_dtype_size(dt);
    }
    if (pg_mpi__small(p, g, &rc, hdr, out, b, b, 0, 0))
        return rc < 0 ? rc : pg_mpi__reduce_ranks(p, send, recv, count, dt, op);
    if ((rc = pg_mpi__check(p, g->timeout_ms, hdr)) < 0) return rc;
    rc = PG_MPI__RUN(p, g, MPI_Allreduce(s, recv, (int)count, t, pg_mpi__op(p, op, dt), p->coll),
                     MPI_Iallreduce(s, recv, (int)count, t, pg_mpi__op(p, op, dt), p->coll, &req));
    return rc < 0 || op != PG_AVG ? rc : pg_scale_local(recv, count, dt, p->size);
}

/* Small all_gather(v) of the world: the exchange (own block moved into recv meanwhile),
   then every peer's block from its stage into recv. 1 and *rc its result, or 0 when a
   block is too large for the exchange (the native path). */
static int pg_mpi__gather_small(pg_mpi_port *p, uint32_t timeout_ms, int *rc, const void *send, void *recv,
                                const size_t *counts, mb_dtype dt)
{
    int64_t hdr[8];
    const unsigned char *out[PG_MPI_SMALL_RANKS];
    size_t ob[PG_MPI_SMALL_RANKS], ib[PG_MPI_SMALL_RANKS], off[PG_MPI_SMALL_RANKS], es = pg_dtype_size(dt), at = 0;
    int r, me = p->rank, res;
    if (p->size > PG_MPI_SMALL_RANKS) return 0;
    for (r = 0; r < p->size; r++) {
        if (counts[r] > PG_MPI_EXCHANGE) return 0; /* so counts[r] * es cannot overflow */
        out[r] = (const unsigned char *)send;
        ob[r] = counts[me] * es;
        ib[r] = counts[r] * es;
        off[r] = at;
        at += ib[r];
        if (ib[r] > PG_MPI_EXCHANGE) return 0;
    }
    pg_mpi__header(hdr, 4, 0, dt, 0, pg__counts_hash(counts, p->size, 1));
    res = pg_mpi__exchange(p, timeout_ms, hdr, out, ob, ib, (unsigned char *)recv + off[me], send, ob[me]);
    for (r = 0; res == PG_OK && r < p->size; r++)
        if (r != me && ib[r])
            memcpy((unsigned char *)recv + off[r], (const unsigned char *)p->stage[r] + PG_MPI__HDR, ib[r]);
    *rc = res;
    return 1;
}

static int pg_mpi__all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt)
{
    MPI_Request req;
    int64_t hdr[8];
    int rc, r, *c, *d;
    pg_mpi_port *p = pg_mpi__native(g);
    MPI_Datatype t = pg_mpi__type(dt);
    const void *s;
    if (p && !p->aborted && pg_mpi__gather_small(p, g->timeout_ms, &rc, send, recv, counts, dt)) return rc;
    if (!(p = pg_mpi__enter(g, &rc, 0, counts, 0))) return rc;
    c = p->icounts[0];
    d = p->idispls[0];
    pg_mpi__header(hdr, 4, 0, dt, 0, pg__counts_hash(counts, p->size, 1));
    if ((rc = pg_mpi__check(p, g->timeout_ms, hdr)) < 0) return rc;
    /* OpenMPI's blocking MPI_Allgather(v) right after our polled check ran 20-45 % slower at
       1-4 MB (2 ranks, shared memory), 0-7 % after a barrier between them (which costs ~1.5
       us): from PG_MPI_GATHER_SYNC bytes on, the blocking call comes after MPI_Barrier. */
    if (p->blocking && p->check_args &&
        ((size_t)d[p->size - 1] + (size_t)c[p->size - 1]) * pg_dtype_size(dt) >= PG_MPI_GATHER_SYNC &&
        MPI_Barrier(p->coll) != MPI_SUCCESS)
        return PG_ERR_PORT;
    s = send == (const void *)((unsigned char *)recv + (size_t)d[g->rank] * pg_dtype_size(dt)) ? MPI_IN_PLACE : send;
    for (r = 1; r < p->size && c[r] == c[0]; r++) {}
    if (r == p->size) /* even counts (agreed by every rank): MPI_Allgather */
        return PG_MPI__RUN(p, g, MPI_Allgather(s, c[0], t, recv, c[0], t, p->coll),
                           MPI_Iallgather(s, c[0], t, recv, c[0], t, p->coll, &req));
    return PG_MPI__RUN(p, g, MPI_Allgatherv(s, c[g->rank], t, recv, c, d, t, p->coll),
                       MPI_Iallgatherv(s, c[g->rank], t, recv, c, d, t, p->coll, &req));
}

/* Even counts of one message a peer: pg_mpi__gather_even straight away; else
   pg_mpi__all_gatherv directly (the detour through pg.h's pg_all_gatherv, a few hundred
   instructions, measured ~5 % slower at 1 MB with the argument check: 1.14x raw MPI over
   eight alternating runs against 1.08x). */
static int pg_mpi__all_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt)
{
    size_t counts[PG_MAX_RANKS], b = count * pg_dtype_size(dt); /* pg.h checked count * es * size */
    int64_t hdr[8];
    int r;
    pg_mpi_port *p = pg_mpi__native(g);
    if (!p || p->aborted || p->size > PG_MPI_SMALL_RANKS || b > PG_MPI_SMALL) {
        for (r = 0; r < g->size; r++) counts[r] = count;
        return pg_mpi__all_gatherv(g, send, recv, counts, dt);
    }
    pg_mpi__header(hdr, 4, 0, dt, 0, pg__counts_hash(&count, p->size, 0));
    return pg_mpi__gather_even(p, g->timeout_ms, hdr, send, (unsigned char *)recv, b);
}

static int pg_mpi__reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                                   pg_red op)
{
    MPI_Request req;
    int64_t hdr[8];
    const unsigned char *out[PG_MPI_SMALL_RANKS];
    size_t ob[PG_MPI_SMALL_RANKS], ib[PG_MPI_SMALL_RANKS], es = pg_dtype_size(dt), mine = counts[g->rank];
    int rc, r;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 0, counts, 0);
    MPI_Datatype t = pg_mpi__type(dt);
    if (!p) return rc;
    pg_mpi__header(hdr, 6, 0, dt, (int)op, pg__counts_hash(counts, p->size, 1));
    for (r = 0; r < p->size && r < PG_MPI_SMALL_RANKS; r++) {
        out[r] = (const unsigned char *)send + (size_t)p->idispls[0][r] * es;
        ob[r] = counts[r] * es;
        ib[r] = mine * es;
    }
    if (pg_mpi__small(p, g, &rc, hdr, out, ob, ib, 0, 0))
        return rc < 0 ? rc : pg_mpi__reduce_ranks(p, out[g->rank], recv, mine, dt, op);
    if ((rc = pg_mpi__check(p, g->timeout_ms, hdr)) < 0) return rc;
    rc = PG_MPI__RUN(p, g, MPI_Reduce_scatter(send, recv, p->icounts[0], t, pg_mpi__op(p, op, dt), p->coll),
                     MPI_Ireduce_scatter(send, recv, p->icounts[0], t, pg_mpi__op(p, op, dt), p->coll, &req));
    return rc < 0 || op != PG_AVG ? rc : pg_scale_local(recv, mine, dt, p->size);
}

static int pg_mpi__reduce_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    size_t counts[PG_MAX_RANKS];
    int r;
    for (r = 0; r < g->size; r++) counts[r] = count;
    return pg_mpi__reduce_scatterv(g, send, recv, counts, dt, op);
}

/* all_to_allv, gatherv, scatterv: pg.h's generic versions over the buffered p2p (their
   argument checks come for free from exact-size receives). */
static const pg_ops pg_mpi__ops = {pg_mpi__send,
                                   pg_mpi__recv,
                                   pg_mpi__probe,
                                   0,
                                   0,
                                   0,
                                   0, /* no shared memory: pg.h's copying slots */
                                   pg_mpi__abort,
                                   pg_mpi__recover,
                                   pg_mpi__barrier,
                                   pg_mpi__broadcast,
                                   pg_mpi__all_reduce,
                                   pg_mpi__all_gather,
                                   pg_mpi__all_gatherv,
                                   pg_mpi__reduce_scatter,
                                   pg_mpi__reduce_scatterv,
                                   0,
                                   0,
                                   0};

PG_MPI__DEF const pg_ops *pg_mpi_ops(void)
{
    return &pg_mpi__ops;
}

PG_MPI__DEF int pg_mpi_init(pg_mpi_port *p, MPI_Comm comm)
{
    int i, j, flag = 0, *ub = 0, rc;
    if (!p) return PG_ERR_NULL;
    memset(p, 0, sizeof *p);
    if (MPI_Comm_dup(comm, &p->parent) != MPI_SUCCESS) return PG_ERR_PORT;
    p->check_args = PG_MPI_CHECK_ARGS;
    p->blocking = PG_MPI_BLOCKING;
    if (MPI_Comm_dup(comm, &p->p2p) != MPI_SUCCESS || MPI_Comm_dup(comm, &p->coll) != MPI_SUCCESS) return PG_ERR_PORT;
    MPI_Comm_set_errhandler(p->p2p, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(p->coll, MPI_ERRORS_RETURN);
    MPI_Comm_rank(p->p2p, &p->rank);
    MPI_Comm_size(p->p2p, &p->size);
    MPI_Comm_get_attr(p->p2p, MPI_TAG_UB, &ub, &flag);
    if (!flag || !ub || *ub < PG_MPI_ABORT_TAG) return PG_ERR_UNSUPPORTED; /* pg.h needs 31-bit tags */
    for (i = 0; i < PG_MPI_SEND_SLOTS; i++) p->send_req[i] = MPI_REQUEST_NULL;
    for (i = 0; i < PG_MAX_RANKS; i++) p->abort_req[i] = MPI_REQUEST_NULL;
    p->recover_bar = MPI_REQUEST_NULL;
    for (i = 0, j = 0; i < p->size && p->size <= PG_MPI_SMALL_RANKS; i++)
        if (i != p->rank && MPI_Recv_init(p->stage[i], PG_MPI__HDR + PG_MPI_SMALL, MPI_BYTE, i, PG_MPI_COLL_TAG, p->p2p,
                                          &p->first[j++]) != MPI_SUCCESS)
            return PG_ERR_PORT;
    if (MPI_Op_create(pg_mpi__user_sum, 1, &p->int_sum) != MPI_SUCCESS ||
        MPI_Op_create(pg_mpi__user_prod, 1, &p->int_prod) != MPI_SUCCESS)
        return PG_ERR_PORT;
    rc = pg_group_init(&p->world, &pg_mpi__ops, p, p->rank, p->size, PG_MPI_MAX_MSG);
    return rc;
}

PG_MPI__DEF pg_group *pg_mpi_group(pg_mpi_port *p)
{
    return p ? &p->world : (pg_group *)0;
}

PG_MPI__DEF int pg_mpi_finalize(pg_mpi_port *p)
{
    int rc, i;
    if (!p) return PG_ERR_NULL;
    rc = pg_mpi__drain_round(p);
    for (i = 0; i < p->size - 1 && p->size <= PG_MPI_SMALL_RANKS; i++) MPI_Request_free(&p->first[i]);
    MPI_Comm_free(&p->p2p);
    MPI_Comm_free(&p->coll);
    MPI_Comm_free(&p->parent);
    MPI_Op_free(&p->int_sum);
    MPI_Op_free(&p->int_prod);
    return rc;
}

#ifdef __cplusplus
}
#endif
#endif /* PG_MPI_IMPLEMENTATION */
