/* test_dtensor_mpi.c — dtensor.h's execution suite (tests/dtensor_conformance.h) over
   pg_mpi.h: run under mpirun --oversubscribe -np 4. Every rank runs every body; dtc_run
   combines the ranks' results (MPI_Allgather on MPI_COMM_WORLD, outside the port's
   communicators) so every rank's cmocka agrees; only rank 0 prints. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"
#define PG_MPI_IMPLEMENTATION
#include "ports/pg_mpi.h"

static pg_mpi_port dtt_port;

static int dtc_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    pg_group *g = pg_mpi_group(&dtt_port);
    int mine = body(g, arg), all[PG_MAX_RANKS], r, n = pg_size(g);
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (r = 0; r < n; r++)
        if (all[r] != 0) {
            if (pg_rank(g) == 0) fprintf(stderr, "rank %d: dtensor_conformance.h line %d\n", r, all[r]);
            pg_recover(g); /* a clean world for the next test */
            return all[r];
        }
    return 0;
}

#include "dtensor_conformance.h"

int main(int argc, char **argv)
{
    int failed, rank = 0, size = 0, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rc = pg_mpi_init(&dtt_port, MPI_COMM_WORLD);
    if (rc != PG_OK || size != DTC_RANKS) {
        fprintf(stderr, "pg_mpi_init: %s (size %d, the suite needs %d)\n", pg_strerror(rc), size, DTC_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank != 0 && (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))) return 1;
    failed = cmocka_run_group_tests_name("dtensor over pg_mpi (4 ranks)", dtc_tests, NULL, NULL);
    fflush(stdout);
    pg_mpi_finalize(&dtt_port);
    MPI_Finalize();
    return failed;
}
