/* soak_mpi.c — `scons soak` on pg_mpi: run under mpirun -np N; >= SOAK_MESSAGES messages
   and >= SOAK_COLLECTIVES world collectives in total (tests/soak/soak.h). Rank 0 prints the
   summed counts; every rank exits 0 only if all of them are clean. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#define PG_IMPLEMENTATION
#define PG_MPI_IMPLEMENTATION
#include "ports/pg_mpi.h"
#include "soak.h"

static pg_mpi_port port;

int main(int argc, char **argv)
{
    static soak_stats all[SOAK_MAX_RANKS];
    soak_stats mine, sum;
    uint64_t rounds, every;
    int me = 0, n = 0, failed = 0, r;
    double t0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2 || n > SOAK_MAX_RANKS || pg_mpi_init(&port, MPI_COMM_WORLD) != PG_OK) {
        fprintf(stderr, "soak_mpi: 2..%d ranks and pg_mpi_init needed\n", SOAK_MAX_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rounds = soak_rounds(n, SOAK_MESSAGES, SOAK_COLLECTIVES, &every);
    pg_set_timeout(pg_mpi_group(&port), 60000);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    soak_run(pg_mpi_group(&port), rounds, every, &mine);
    t0 = MPI_Wtime() - t0;
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        memset(&sum, 0, sizeof sum);
        for (r = 0; r < n; r++) soak_add(&sum, &all[r]);
        failed = soak_report("pg_mpi", n, &sum, t0, SOAK_MESSAGES, SOAK_COLLECTIVES);
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    pg_mpi_finalize(&port);
    MPI_Finalize();
    return failed;
}
