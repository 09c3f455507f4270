/* bench_pg.h — shared by the pg collective benchmarks: the cases, the MPI modes and the
   timing helpers. A case is (collective, total bytes); all_gather's bytes are its output,
   reduce_scatter's its input, all_reduce's and broadcast's its buffer (as nccl-tests count
   them); a barrier has no size. f32. collectives.c drives pg_mpi_bench (mpi_collectives.c)
   one timed repeat at a time through a FIFO per MPI rank, so ours and MPI's repeats
   alternate in time and see the same machine load. */
#ifndef BENCH_PG_H
#define BENCH_PG_H
#include <stddef.h>

#define BENCH_MAX_BYTES (4u << 20)
#define BENCH_REPEATS   9
#define BENCH_NC        5
#define BENCH_NS        8
#define BENCH_NSMALL    4 /* 8 B .. 1 KB: the small-message cases */
enum { BENCH_ALL_REDUCE, BENCH_ALL_GATHER, BENCH_REDUCE_SCATTER, BENCH_BROADCAST, BENCH_BARRIER };
static const char *const bench_colls[BENCH_NC] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier"};
static const size_t bench_sizes[BENCH_NS] = {8, 64, 256, 1024, 16384, 262144, 1u << 20, 4u << 20};
static const char *const bench_size_names[BENCH_NS] = {"8B", "64B", "256B", "1KB", "16KB", "256KB", "1MB", "4MB"};

/* What pg_mpi_bench times: raw MPI, pg_mpi as configured by default, pg_mpi without the
   argument check (check_args = 0). */
enum { BENCH_MPI_RAW, BENCH_MPI_PG, BENCH_MPI_NOCHECK, BENCH_NM };
static const char *const bench_mpi_modes[BENCH_NM] = {"raw MPI", "pg_mpi", "pg_mpi no-check"};

#define BENCH_ITERS_MORE 500 /* operations per timed repeat with more than 2 ranks (oversubscribed) */

/* operations per timed repeat: about 8 MB of traffic, at least 8, at most 4000 */
static int bench_iters(size_t bytes)
{
    size_t k = (8u << 20) / (bytes ? bytes : 1);
    return k < 8 ? 8 : k > 4000 ? 4000 : (int)k;
}

/* sizes a collective is timed at: a barrier once (its size index 0 stands for "no size") */
static inline int bench_nsizes(int coll, int small_only)
{
    return coll == BENCH_BARRIER ? 1 : small_only ? BENCH_NSMALL : BENCH_NS;
}
#endif
