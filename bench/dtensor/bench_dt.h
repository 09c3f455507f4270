/* bench_dt.h — shared by the dtensor benchmarks (main.c: redistribute, ops.c: ops): the
   timer and medians (bench_time.h), a JSON row (DESIGN.md) of bench DTB_NAME, and a pg
   group whose collectives return at once (no communication: the library's own cost
   alone). Included after dtensor.h and ports/pg.h. */
#ifndef BENCH_DT_H
#define BENCH_DT_H
#include <stdio.h>
#include <string.h>
#include "bench_time.h"
#ifndef DTB_NAME
#define DTB_NAME "dtensor"
#endif

static int null_send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    (void)port, (void)dst, (void)tag, (void)buf, (void)bytes, (void)timeout_ms;
    return PG_ERR_UNSUPPORTED;
}
static int null_recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    (void)port, (void)src, (void)tag, (void)buf, (void)cap, (void)got, (void)timeout_ms;
    return PG_ERR_UNSUPPORTED;
}
static int null_probe(void *port, int src, uint32_t tag, size_t *bytes)
{
    (void)port, (void)src, (void)tag, (void)bytes;
    return 0;
}
static int null_all_gatherv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt)
{
    (void)g, (void)send, (void)recv, (void)counts, (void)dt;
    return PG_OK;
}
static int null_all_reduce(pg_group *g, const void *send, void *recv, size_t count, mb_dtype dt, pg_red op)
{
    (void)g, (void)send, (void)recv, (void)count, (void)dt, (void)op;
    return PG_OK;
}
static int null_reduce_scatterv(pg_group *g, const void *send, void *recv, const size_t *counts, mb_dtype dt, pg_red op)
{
    (void)g, (void)send, (void)recv, (void)counts, (void)dt, (void)op;
    return PG_OK;
}

/* g: a group of size ranks (this one rank 0) over the null port above. */
static int null_group(pg_group *g, pg_ops *ops, int size)
{
    memset(ops, 0, sizeof *ops);
    ops->send = null_send;
    ops->recv = null_recv;
    ops->probe = null_probe;
    ops->all_gatherv = null_all_gatherv;
    ops->all_reduce = null_all_reduce;
    ops->reduce_scatterv = null_reduce_scatterv;
    return pg_group_init(g, ops, 0, 0, size, 1u << 20);
}

static void row(const char *cas, const char *metric, const char *unit, double ours, const char *peer, double pv)
{
    printf("{\"bench\": \"" DTB_NAME "\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", \"ours\": %.3f, "
           "\"peer\": \"%s\", ",
           cas, metric, unit, ours, peer);
    if (pv >= 0)
        printf("\"peer_value\": %.3f}\n", pv);
    else
        printf("\"peer_value\": null}\n");
}

#endif
