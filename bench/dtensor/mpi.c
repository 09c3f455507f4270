/* mpi.c — the MPI peer of bench/dtensor: the same three transitions of a 1-D f32 tensor
   on 2 processes written by hand with MPI collectives, as a user without dtensor would:
   S(0)->R = MPI_Allgatherv of the torch.chunk pieces, P(sum)->R = MPI_Allreduce,
   P(sum)->S(0) = MPI_Reduce_scatter with the chunk counts. Prints "mpi <t> <bytes> <us>"
   lines (rank 0) for bench/dtensor/main.c. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "../pg/bench_pg.h"

#define NS 5
static const size_t sizes[NS] = {1024, 16384, 262144, 1u << 20, 4u << 20};
static float inbuf[BENCH_MAX_BYTES / 4], outbuf[BENCH_MAX_BYTES / 4];

static double median(double *v, int n)
{
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

static void op(int t, size_t bytes, int me)
{
    int n = (int)(bytes / 4), full = (n + 1) / 2, counts[2], displs[2];
    counts[0] = full;
    counts[1] = n - full;
    displs[0] = 0;
    displs[1] = full;
    if (t == 0)
        MPI_Allgatherv(inbuf, counts[me], MPI_FLOAT, outbuf, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
    else if (t == 1)
        MPI_Allreduce(inbuf, outbuf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Reduce_scatter(inbuf, outbuf, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int me, t, s, r, i, k;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    for (i = 0; i < (int)(BENCH_MAX_BYTES / 4); i++) inbuf[i] = (float)(i % 7);
    for (i = 0; i < 20000; i++) op(1, 64, me);
    for (t = 0; t < 3; t++)
        for (s = 0; s < NS; s++) {
            double v[BENCH_REPEATS], t0;
            k = bench_iters(sizes[s]);
            for (i = 0; i < 3; i++) op(t, sizes[s], me);
            for (r = 0; r < BENCH_REPEATS; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                for (i = 0; i < k; i++) op(t, sizes[s], me);
                v[r] = (MPI_Wtime() - t0) * 1e6 / k;
            }
            if (me == 0) printf("mpi %d %zu %.3f\n", t, sizes[s], median(v, BENCH_REPEATS));
        }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
