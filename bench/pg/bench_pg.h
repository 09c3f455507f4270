/* bench_pg.h — shared by the pg collective benchmarks: the cases, the MPI modes and the
   timing helpers. A case is (collective, total bytes); all_gather's bytes are its output,
   reduce_scatter's its input, all_reduce's its buffer (as nccl-tests count them). f32,
   2 ranks. collectives.c drives pg_mpi_bench (mpi_collectives.c) one timed repeat at a
   time through a FIFO per MPI rank, so ours and MPI's repeats alternate in time and see
   the same machine load. */
#ifndef BENCH_PG_H
#define BENCH_PG_H
#include <stddef.h>

#define BENCH_MAX_BYTES (4u << 20)
#define BENCH_REPEATS   9
#define BENCH_NC        3
#define BENCH_NS        6
static const char *const bench_colls[BENCH_NC] = {"all_reduce", "all_gather", "reduce_scatter"};
static const size_t bench_sizes[BENCH_NS] = {64, 1024, 16384, 262144, 1u << 20, 4u << 20};
static const char *const bench_size_names[BENCH_NS] = {"64B", "1KB", "16KB", "256KB", "1MB", "4MB"};

/* What pg_mpi_bench times: raw MPI, pg_mpi as configured by default, pg_mpi without the
   argument check (check_args = 0). */
enum { BENCH_MPI_RAW, BENCH_MPI_PG, BENCH_MPI_NOCHECK, BENCH_NM };
static const char *const bench_mpi_modes[BENCH_NM] = {"raw MPI", "pg_mpi", "pg_mpi no-check"};

/* operations per timed repeat: about 8 MB of traffic, at least 8, at most 4000 */
static int bench_iters(size_t bytes)
{
    size_t k = (8u << 20) / bytes;
    return k < 8 ? 8 : k > 4000 ? 4000 : (int)k;
}
#endif
