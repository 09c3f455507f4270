/* mpi_collectives.c — raw MPI collectives and the same through pg_mpi.h, 2 (or 4) processes.
   Started by bench/pg/collectives.c as `mpirun -np N pg_mpi_bench DIR`. Rank r reads
   commands from the FIFO DIR/cmd<r> (a blocking read: no CPU used while the threads'
   side is timed), one per line:
       <collective> <size index> <mode> <warm-up 0/1>    one timed repeat, after 1 untimed
                                                          operation (3 with warm-up 1)
       q                                                  quit
   and rank 0 answers each repeat with "t <us>" on stdout: the mean over bench_iters()
   operations, rank 0's clock. Modes are bench_pg.h's BENCH_MPI_*. "ready" once set up. */
#include <stdio.h>
#include <string.h>
#define PG_IMPLEMENTATION
#define PG_MPI_IMPLEMENTATION
#include "ports/pg_mpi.h"
#include "bench_pg.h"

static float sendbuf[BENCH_MAX_BYTES / 4], recvbuf[BENCH_MAX_BYTES / 4];
static pg_mpi_port port;

static int run_op(int mode, int coll, size_t bytes, int size)
{
    pg_group *g = pg_mpi_group(&port);
    int n = (int)(bytes / 4);
    if (mode == BENCH_MPI_RAW) {
        if (coll == BENCH_ALL_REDUCE) return MPI_Allreduce(sendbuf, recvbuf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (coll == BENCH_ALL_GATHER)
            return MPI_Allgather(sendbuf, n / size, MPI_FLOAT, recvbuf, n / size, MPI_FLOAT, MPI_COMM_WORLD);
        if (coll == BENCH_BROADCAST) return MPI_Bcast(sendbuf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        if (coll == BENCH_BARRIER) return MPI_Barrier(MPI_COMM_WORLD);
        {
            int counts[PG_MAX_RANKS], r;
            for (r = 0; r < size; r++) counts[r] = n / size;
            return MPI_Reduce_scatter(sendbuf, recvbuf, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    port.check_args = mode == BENCH_MPI_NOCHECK ? 0 : PG_MPI_CHECK_ARGS;
    if (coll == BENCH_ALL_REDUCE) return pg_all_reduce(g, sendbuf, recvbuf, (size_t)n, MB_F32, PG_SUM);
    if (coll == BENCH_ALL_GATHER) return pg_all_gather(g, sendbuf, recvbuf, (size_t)(n / size), MB_F32);
    if (coll == BENCH_BROADCAST) return pg_broadcast(g, sendbuf, (size_t)n, MB_F32, 0);
    if (coll == BENCH_BARRIER) return pg_barrier(g);
    return pg_reduce_scatter(g, sendbuf, recvbuf, (size_t)(n / size), MB_F32, PG_SUM);
}

int main(int argc, char **argv)
{
    int rank, size, c, s, m, warm, i, k;
    char path[4200], line[128];
    FILE *cmd;
    double t0, t;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || pg_mpi_init(&port, MPI_COMM_WORLD) != PG_OK) MPI_Abort(MPI_COMM_WORLD, 1);
    for (i = 0; i < (int)(BENCH_MAX_BYTES / 4); i++) sendbuf[i] = (float)(i % 7);
    snprintf(path, sizeof path, "%s/cmd%d", argv[1], rank);
    cmd = fopen(path, "r");
    if (!cmd) MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, cmd) && sscanf(line, "%d %d %d %d", &c, &s, &m, &warm) == 4) {
        if (c < 0 || c >= BENCH_NC || s < 0 || s >= BENCH_NS || m < 0 || m >= BENCH_NM) break;
        k = bench_iters(bench_sizes[s]);
        if (size > 2 && k > BENCH_ITERS_MORE) k = BENCH_ITERS_MORE;
        for (i = 0; i < (warm ? 3 : 1); i++) run_op(m, c, bench_sizes[s], size); /* untimed */
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (i = 0; i < k; i++)
            if (run_op(m, c, bench_sizes[s], size) != 0) break;
        t = i < k ? -1.0 : (MPI_Wtime() - t0) * 1e6 / k;
        MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* rank 0's clock decides */
        if (rank == 0) printf("t %.3f\n", t);
        fflush(stdout);
    }
    fclose(cmd);
    pg_mpi_finalize(&port);
    MPI_Finalize();
    return 0;
}
