/* pg_mpi.h — splitcore process-group port: ranks are MPI ranks (across machines)

   Implements the pg.h contract over MPI: pg.h wire tags are MPI tags on a private
   duplicate of the user's communicator; sends are buffered (copied into a static pool
   and sent with MPI_Isend, so a send never waits for its receiver while the pool has
   room); receives poll MPI_Iprobe so every wait honours the group's timeout and notices
   an abort; pg_abort sends a message on a reserved tag to every rank. Collectives of the
   world group map to MPI's non-blocking collectives (MPI_Iallreduce, ...) polled with the
   same timeout, preceded by a tiny MPI_Iallreduce that compares every rank's arguments
   so disagreements return PG_ERR_MISMATCH (PG_MPI_CHECK_ARGS=0 drops that check);
   sub-groups use pg.h's generic algorithms. No heap in this header.

   Example (run with mpirun -np 4 ./prog):
       #define PG_IMPLEMENTATION
       #define PG_MPI_IMPLEMENTATION
       #include "ports/pg_mpi.h"
       static pg_mpi_port port;
       int main(int argc, char **argv) {
           MPI_Init(&argc, &argv);
           pg_mpi_init(&port, MPI_COMM_WORLD);
           pg_group *g = pg_mpi_group(&port);
           float x[256] = {0};  int rc = pg_all_reduce(g, x, x, 256, MB_F32, PG_SUM);
           pg_mpi_finalize(&port);  MPI_Finalize();  return rc != 0; }

   Contents: 1. Configuration  2. Types and API  3. Implementation (PG_MPI_IMPLEMENTATION)

   Configuration:
       PG_MPI_IMPLEMENTATION  emit the definitions (exactly one .c file; needs PG_IMPLEMENTATION too)
       PG_MPI_STATIC          make every function static
       PG_MPI_MAX_MSG         largest p2p message = the port's max_msg (default 65536)
       PG_MPI_SEND_SLOTS      buffered sends in flight (default 16)
       PG_MPI_CHECK_ARGS      default of pg_mpi_port.check_args (1): native collectives first
                              compare every rank's arguments (one small MPI_Iallreduce)
       PG_MPI_BLOCKING        default of pg_mpi_port.blocking (0): 1 uses blocking MPI
                              collectives (less overhead; no timeout/abort inside them)
   Needs <mpi.h> (Debian: libopenmpi-dev; compile with mpicc). */
#ifndef PG_MPI_H
#define PG_MPI_H

#include "pg.h"
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
#define PG_MPI_BLOCKING 0
#endif
#ifdef PG_MPI_STATIC
#define PG_MPI_API static
#else
#define PG_MPI_API extern
#endif

#define PG_MPI_ABORT_TAG ((int)(PG_TAG_PORT_BIT | 1u)) /* reserved: abort messages */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pg_mpi_port {
    MPI_Comm parent;      /* private duplicate of the user's communicator (coll is re-made from it) */
    MPI_Comm p2p;         /* private duplicate for point-to-point */
    MPI_Comm coll;        /* private duplicate for native collectives */
    int rank, size;
    int aborted, abort_err, coll_broken;
    MPI_Request recover_bar; /* pg_recover's Ibarrier in progress */
    int recover_stage;
    int check_args;       /* compare arguments before native collectives (PG_MPI_CHECK_ARGS) */
    int blocking;         /* blocking MPI collectives (PG_MPI_BLOCKING): faster, but a native
                             collective then cannot time out or see an abort once entered */
    MPI_Request send_req[PG_MPI_SEND_SLOTS];
    MPI_Request abort_req[PG_MAX_RANKS];
    int abort_msg;
    int icounts[2][PG_MAX_RANKS], idispls[2][PG_MAX_RANKS]; /* size_t counts as MPI ints */
    int64_t check[2 * (4 + PG_MAX_RANKS)];
    MPI_Op int_sum, int_prod; /* wrap-around integer SUM/PROD (pg.h semantics) */
    uint64_t send_buf[PG_MPI_SEND_SLOTS][(PG_MPI_MAX_MSG + 7) / 8];
    uint64_t drain_buf[(PG_MPI_MAX_MSG + 7) / 8];
    pg_group world;
} pg_mpi_port;

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

static void pg_mpi__wait_init(pg_mpi__wait *w, uint32_t timeout_ms)
{
    w->timeout = timeout_ms;
    w->idle = 0;
    w->deadline = MPI_Wtime() + (double)timeout_ms / 1000.0;
}

/* After a fruitless poll: PG_OK to poll again, or ABORTED / TIMEOUT. */
static int pg_mpi__wait_step(pg_mpi_port *p, pg_mpi__wait *w)
{
    int rc = pg_mpi__poll_abort(p);
    if (rc < 0) return rc;
    if (w->timeout == 0) return PG_ERR_TIMEOUT;
    if ((++w->idle & 63u) == 0 && w->timeout != PG_WAIT_FOREVER && MPI_Wtime() >= w->deadline)
        return PG_ERR_TIMEOUT;
    return PG_OK;
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

static int pg_mpi__send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    pg_mpi_port *p = (pg_mpi_port *)port;
    pg_mpi__wait w;
    int i, done, rc;
    if (dst < 0 || dst >= p->size) return PG_ERR_RANK;
    if (bytes > PG_MPI_MAX_MSG) return PG_ERR_TOO_BIG;
    if ((rc = pg_mpi__poll_abort(p)) < 0) return rc;
    pg_mpi__wait_init(&w, timeout_ms);
    for (;;) {
        for (i = 0; i < PG_MPI_SEND_SLOTS; i++) {
            done = p->send_req[i] == MPI_REQUEST_NULL;
            if (!done) MPI_Test(&p->send_req[i], &done, MPI_STATUS_IGNORE);
            if (done) {
                if (bytes) memcpy(p->send_buf[i], buf, bytes);
                if (MPI_Isend(p->send_buf[i], (int)bytes, MPI_BYTE, dst, (int)tag, p->p2p, &p->send_req[i]) !=
                    MPI_SUCCESS)
                    return PG_ERR_PORT;
                return PG_OK;
            }
        }
        if ((rc = pg_mpi__wait_step(p, &w)) < 0) return rc;
    }
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
        if (sink) MPI_Recv(sink, n, MPI_BYTE, src, (int)tag, p->p2p, MPI_STATUS_IGNORE);
        else MPI_Recv(p->drain_buf, 0, MPI_BYTE, src, (int)tag, p->p2p, MPI_STATUS_IGNORE); /* truncates */
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
        if (r != p->rank)
            MPI_Isend(&p->abort_msg, 1, MPI_INT, r, PG_MPI_ABORT_TAG, p->p2p, &p->abort_req[r]);
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
   Ibarrier) by the next pg_recover, so late ranks still match. */
static int pg_mpi__drain_round(pg_mpi_port *p)
{
    pg_mpi__wait w;
    int done = 0, all, i, d;
    if (p->recover_bar == MPI_REQUEST_NULL && MPI_Ibarrier(p->p2p, &p->recover_bar) != MPI_SUCCESS)
        return PG_ERR_PORT;
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
        if ((++w.idle & 63u) == 0 && w.timeout != PG_WAIT_FOREVER && MPI_Wtime() >= w.deadline)
            return PG_ERR_TIMEOUT;
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

/* Compare (kind, count, dt, op|root, counts[]) over all ranks: PG_ERR_MISMATCH if any differ. */
static int pg_mpi__check(pg_mpi_port *p, uint32_t timeout_ms, int kind, size_t count, int dt, int op,
                         const size_t *counts)
{
    MPI_Request req;
    int i, m = 4 + (counts ? p->size : 0), rc;
    if (!p->check_args) return PG_OK;
    p->check[0] = kind;
    p->check[1] = (int64_t)count;
    p->check[2] = dt;
    p->check[3] = op;
    for (i = 4; i < m; i++) p->check[i] = (int64_t)counts[i - 4];
    for (i = 0; i < m; i++) p->check[m + i] = -p->check[i];
    if (p->blocking) {
        if (MPI_Allreduce(MPI_IN_PLACE, p->check, 2 * m, MPI_INT64_T, MPI_MAX, p->coll) != MPI_SUCCESS)
            return PG_ERR_PORT;
    } else {
        if (MPI_Iallreduce(MPI_IN_PLACE, p->check, 2 * m, MPI_INT64_T, MPI_MAX, p->coll, &req) != MPI_SUCCESS)
            return PG_ERR_PORT;
        if ((rc = pg_mpi__finish(p, &req, timeout_ms)) < 0) return rc;
    }
    for (i = 0; i < m; i++)
        if (p->check[i] != -p->check[m + i]) return PG_ERR_MISMATCH;
    return PG_OK;
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

/* Common start of a native collective: the port if g may use one (else NULL with *rc =
   UNSUPPORTED, or ABORTED, or the argument check's verdict). */
static pg_mpi_port *pg_mpi__enter(pg_group *g, int *rc, int kind, size_t count, mb_dtype dt, int op_or_root,
                                  const size_t *counts, size_t max_count)
{
    pg_mpi_port *p = pg_mpi__native(g);
    *rc = PG_ERR_UNSUPPORTED;
    if (!p || count > max_count || (counts && pg_mpi__icounts(p, 0, counts) < 0)) return (pg_mpi_port *)0;
    if ((*rc = pg_mpi__poll_abort(p)) < 0) return (pg_mpi_port *)0;
    if (kind && (*rc = pg_mpi__check(p, g->timeout_ms, kind, count, (int)dt, op_or_root, counts)) < 0)
        return (pg_mpi_port *)0;
    return p;
}

/* Blocking mode: the blocking MPI call. Otherwise the non-blocking one (which sets req),
   polled within the timeout; AVG divides afterwards. */
#define PG_MPI__RUN(p, g, BLOCKING, NONBLOCKING)                                            \
    ((p)->blocking ? ((BLOCKING) == MPI_SUCCESS ? PG_OK : PG_ERR_PORT)                      \
                   : ((NONBLOCKING) == MPI_SUCCESS ? pg_mpi__finish((p), &req, (g)->timeout_ms) : PG_ERR_PORT))

static int pg_mpi__barrier(pg_group *g)
{
    MPI_Request req;
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 0, 0, MB_I32, 0, 0, 0);
    if (!p) return rc;
    return PG_MPI__RUN(p, g, MPI_Barrier(p->coll), MPI_Ibarrier(p->coll, &req));
}

static int pg_mpi__broadcast(pg_group *g, void *buf, size_t count, mb_dtype dt, int root)
{
    MPI_Request req;
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 1, count, dt, root, 0, (size_t)INT_MAX);
    MPI_Datatype t = pg_mpi__type(dt);
    if (!p) return rc;
    return PG_MPI__RUN(p, g, MPI_Bcast(buf, (int)count, t, root, p->coll),
                       MPI_Ibcast(buf, (int)count, t, root, p->coll, &req));
}

static int pg_mpi__all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    MPI_Request req;
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 2, count, dt, (int)op, 0, (size_t)INT_MAX);
    MPI_Datatype t = pg_mpi__type(dt);
    const void *s = send == recv ? MPI_IN_PLACE : send;
    if (!p) return rc;
    rc = PG_MPI__RUN(p, g, MPI_Allreduce(s, recv, (int)count, t, pg_mpi__op(p, op, dt), p->coll),
                     MPI_Iallreduce(s, recv, (int)count, t, pg_mpi__op(p, op, dt), p->coll, &req));
    return rc < 0 || op != PG_AVG ? rc : pg_scale_local(recv, count, dt, p->size);
}

static int pg_mpi__all_gather(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt)
{
    MPI_Request req;
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 3, count, dt, 0, 0, (size_t)INT_MAX / (size_t)g->size);
    MPI_Datatype t = pg_mpi__type(dt);
    const void *own = (const unsigned char *)recv + (size_t)g->rank * count * pg_dtype_size(dt);
    const void *s = send == own ? MPI_IN_PLACE : send;
    if (!p) return rc;
    return PG_MPI__RUN(p, g, MPI_Allgather(s, (int)count, t, recv, (int)count, t, p->coll),
                       MPI_Iallgather(s, (int)count, t, recv, (int)count, t, p->coll, &req));
}

static int pg_mpi__all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt)
{
    MPI_Request req;
    int rc, *c, *d;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 4, 0, dt, 0, counts, 0);
    MPI_Datatype t = pg_mpi__type(dt);
    const void *s;
    if (!p) return rc;
    c = p->icounts[0];
    d = p->idispls[0];
    s = send == (const void *)((const unsigned char *)recv + (size_t)d[g->rank] * pg_dtype_size(dt)) ? MPI_IN_PLACE
                                                                                                    : send;
    return PG_MPI__RUN(p, g, MPI_Allgatherv(s, c[g->rank], t, recv, c, d, t, p->coll),
                       MPI_Iallgatherv(s, c[g->rank], t, recv, c, d, t, p->coll, &req));
}

static int pg_mpi__reduce_scatter(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    MPI_Request req;
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 5, count, dt, (int)op, 0, (size_t)INT_MAX / (size_t)g->size);
    MPI_Datatype t = pg_mpi__type(dt);
    if (!p) return rc;
    rc = PG_MPI__RUN(p, g, MPI_Reduce_scatter_block(send, recv, (int)count, t, pg_mpi__op(p, op, dt), p->coll),
                     MPI_Ireduce_scatter_block(send, recv, (int)count, t, pg_mpi__op(p, op, dt), p->coll, &req));
    return rc < 0 || op != PG_AVG ? rc : pg_scale_local(recv, count, dt, p->size);
}

static int pg_mpi__reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt,
                                   pg_red op)
{
    MPI_Request req;
    int rc;
    pg_mpi_port *p = pg_mpi__enter(g, &rc, 6, 0, dt, (int)op, counts, 0);
    MPI_Datatype t = pg_mpi__type(dt);
    if (!p) return rc;
    rc = PG_MPI__RUN(p, g, MPI_Reduce_scatter(send, recv, p->icounts[0], t, pg_mpi__op(p, op, dt), p->coll),
                     MPI_Ireduce_scatter(send, recv, p->icounts[0], t, pg_mpi__op(p, op, dt), p->coll, &req));
    return rc < 0 || op != PG_AVG ? rc : pg_scale_local(recv, counts[g->rank], dt, p->size);
}

/* all_to_allv, gatherv, scatterv: pg.h's generic versions over the buffered p2p (their
   argument checks come for free from exact-size receives). */
static const pg_ops pg_mpi__ops = {
    pg_mpi__send, pg_mpi__recv, pg_mpi__probe,
    0, 0, 0, 0, /* no shared memory: pg.h's copying slots */
    pg_mpi__abort, pg_mpi__recover,
    pg_mpi__barrier, pg_mpi__broadcast, pg_mpi__all_reduce, pg_mpi__all_gather, pg_mpi__all_gatherv,
    pg_mpi__reduce_scatter, pg_mpi__reduce_scatterv,
    0, 0, 0
};

PG_MPI__DEF const pg_ops *pg_mpi_ops(void) { return &pg_mpi__ops; }

PG_MPI__DEF int pg_mpi_init(pg_mpi_port *p, MPI_Comm comm)
{
    int i, flag = 0, *ub = 0, rc;
    if (!p) return PG_ERR_NULL;
    memset(p, 0, sizeof *p);
    if (MPI_Comm_dup(comm, &p->parent) != MPI_SUCCESS) return PG_ERR_PORT;
    p->check_args = PG_MPI_CHECK_ARGS;
    p->blocking = PG_MPI_BLOCKING;
    if (MPI_Comm_dup(comm, &p->p2p) != MPI_SUCCESS || MPI_Comm_dup(comm, &p->coll) != MPI_SUCCESS)
        return PG_ERR_PORT;
    MPI_Comm_set_errhandler(p->p2p, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(p->coll, MPI_ERRORS_RETURN);
    MPI_Comm_rank(p->p2p, &p->rank);
    MPI_Comm_size(p->p2p, &p->size);
    MPI_Comm_get_attr(p->p2p, MPI_TAG_UB, &ub, &flag);
    if (!flag || !ub || *ub < PG_MPI_ABORT_TAG) return PG_ERR_UNSUPPORTED; /* pg.h needs 31-bit tags */
    for (i = 0; i < PG_MPI_SEND_SLOTS; i++) p->send_req[i] = MPI_REQUEST_NULL;
    for (i = 0; i < PG_MAX_RANKS; i++) p->abort_req[i] = MPI_REQUEST_NULL;
    p->recover_bar = MPI_REQUEST_NULL;
    if (MPI_Op_create(pg_mpi__user_sum, 1, &p->int_sum) != MPI_SUCCESS ||
        MPI_Op_create(pg_mpi__user_prod, 1, &p->int_prod) != MPI_SUCCESS)
        return PG_ERR_PORT;
    rc = pg_group_init(&p->world, &pg_mpi__ops, p, p->rank, p->size, PG_MPI_MAX_MSG);
    return rc;
}

PG_MPI__DEF pg_group *pg_mpi_group(pg_mpi_port *p) { return p ? &p->world : (pg_group *)0; }

PG_MPI__DEF int pg_mpi_finalize(pg_mpi_port *p)
{
    int rc;
    if (!p) return PG_ERR_NULL;
    rc = pg_mpi__drain_round(p);
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
