/* The MPI port through CMake's splitcore::mpi target: every rank adds rank + 1 (run by
   tests/consume/check_consume.py under mpirun -np 2 when mpirun is present). */
#define SPLITCORE_IMPLEMENTATION
#include <splitcore/ports/pg_mpi.h>
#include <stdio.h>

static pg_mpi_port port;

int main(int argc, char **argv)
{
    int32_t v;
    int rc, n;
    pg_group *g;
    MPI_Init(&argc, &argv);
    rc = pg_mpi_init(&port, MPI_COMM_WORLD);
    g = pg_mpi_group(&port);
    n = pg_size(g);
    v = pg_rank(g) + 1;
    if (rc == 0) rc = pg_all_reduce(g, &v, &v, 1, MB_I32, PG_SUM);
    if (rc == 0 && v != n * (n + 1) / 2) rc = -100;
    if (pg_rank(g) == 0) printf("pg_mpi all_reduce over %d ranks: %s\n", n, rc ? "FAILED" : "ok");
    pg_mpi_finalize(&port);
    MPI_Finalize();
    return rc != 0;
}
