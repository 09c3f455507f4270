/* mpi_collectives.c — raw MPI collectives vs the same through pg_mpi.h, 2 processes.
   Started by bench/pg/collectives.c under mpirun; rank 0 prints one line per case:
       mpi <collective> <bytes> <raw MPI us> <pg_mpi us> <pg_mpi, no argument check us>
           <pg_mpi, blocking collectives and no argument check us>
   (median of BENCH_REPEATS timed repeats, each the mean over bench_iters() operations). */
#include <stdio.h>
#include <string.h>
#define PG_IMPLEMENTATION
#define PG_MPI_IMPLEMENTATION
#include "ports/pg_mpi.h"
#include "bench_pg.h"

static float sendbuf[BENCH_MAX_BYTES / 4], recvbuf[BENCH_MAX_BYTES / 4];
static pg_mpi_port port;

/* mode 0: raw MPI, 1: pg_mpi */
static int run_op(int mode, int coll, size_t bytes, int size)
{
    pg_group *g = pg_mpi_group(&port);
    int n = (int)(bytes / 4);
    if (mode == 0) {
        if (coll == 0) return MPI_Allreduce(sendbuf, recvbuf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (coll == 1) return MPI_Allgather(sendbuf, n / size, MPI_FLOAT, recvbuf, n / size, MPI_FLOAT, MPI_COMM_WORLD);
        {
            int counts[2];
            counts[0] = counts[1] = n / size;
            return MPI_Reduce_scatter(sendbuf, recvbuf, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    if (coll == 0) return pg_all_reduce(g, sendbuf, recvbuf, (size_t)n, MB_F32, PG_SUM);
    if (coll == 1) return pg_all_gather(g, sendbuf, recvbuf, (size_t)(n / size), MB_F32);
    return pg_reduce_scatter(g, sendbuf, recvbuf, (size_t)(n / size), MB_F32, PG_SUM);
}

static double time_case(int mode, int coll, size_t bytes, int size)
{
    double t[BENCH_REPEATS], t0;
    int r, i, k = bench_iters(bytes);
    for (i = 0; i < 3; i++) run_op(mode, coll, bytes, size); /* warm-up */
    for (r = 0; r < BENCH_REPEATS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (i = 0; i < k; i++)
            if (run_op(mode, coll, bytes, size) != 0) return -1.0;
        t[r] = (MPI_Wtime() - t0) * 1e6 / k;
        MPI_Bcast(&t[r], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* rank 0's clock decides */
    }
    return bench_median(t, BENCH_REPEATS);
}

int main(int argc, char **argv)
{
    int rank, size, c, s;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (pg_mpi_init(&port, MPI_COMM_WORLD) != PG_OK) MPI_Abort(MPI_COMM_WORLD, 1);
    for (s = 0; s < (int)(BENCH_MAX_BYTES / 4); s++) sendbuf[s] = (float)(s % 7);
    for (c = 0; c < 3; c++)
        for (s = 0; s < 6; s++) {
            double raw = time_case(0, c, bench_sizes[s], size), pg = time_case(1, c, bench_sizes[s], size), nochk, blk;
            port.check_args = 0;
            nochk = time_case(1, c, bench_sizes[s], size);
            port.blocking = 1;
            blk = time_case(1, c, bench_sizes[s], size);
            port.check_args = 1;
            port.blocking = 0;
            if (rank == 0)
                printf("mpi %s %zu %.3f %.3f %.3f %.3f\n", bench_colls[c], bench_sizes[s], raw, pg, nochk, blk);
            fflush(stdout);
        }
    pg_mpi_finalize(&port);
    MPI_Finalize();
    return 0;
}
