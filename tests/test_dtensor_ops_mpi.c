/* test_dtensor_ops_mpi.c — dtensor.h's op dispatcher (tests/test_dtensor_ops.c's dispatch
   tests) over pg_mpi.h: run under mpirun --oversubscribe -np 2 and -np 4, one process per
   rank. Every op family of dtensor_ops.h - the einsum ops (mm, addmm, bmm, linear),
   pointwise, reductions (argmax too), softmax, norms, the view ops, embedding and the
   losses - under every combination of input placements on a 1-D mesh of the world (2 or
   4) and a 2-D mesh (2x1 or 2x2), against the single-rank result; with 4 ranks also the
   kernel override / too-small / cache checks, the dispatcher features (plain tensors,
   in-place and out variants, zero-copy views, custom handlers and the found_inf handler)
   and non-participating ranks of a sub-mesh (those bodies are written for 4 ranks). The
   suite's propagation and kernel tests, which need no communication, run on every
   process. Every rank runs every body; DTO_RUN combines the ranks' results
   (MPI_Allgather on MPI_COMM_WORLD, outside the port's communicators) so every rank's
   cmocka agrees; only rank 0 prints. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>

#define DTO_MPI
static int32_t dto_mesh1[1], dto_mesh2[2]; /* (world) and (2, world / 2), set in main */
#define DTO_MESH1 dto_mesh1
#define DTO_MESH2 dto_mesh2
/* a test added to test_dtensor_ops.c and not (yet) listed below must not break this build */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "test_dtensor_ops.c"

static pg_mpi_port dto_port;

static int dto_run(int (*body)(pg_group *g, void *arg), void *arg)
{
    pg_group *g = pg_mpi_group(&dto_port);
    int mine = body(g, arg), all[PG_MAX_RANKS], r, n = pg_size(g);
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (r = 0; r < n; r++)
        if (all[r] != 0) {
            if (pg_rank(g) == 0) fprintf(stderr, "rank %d: test_dtensor_ops.c line %d\n", r, all[r]);
            pg_recover(g); /* a clean world for the next test */
            return all[r];
        }
    return 0;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        /* the first fifteen need no communication */
        cmocka_unit_test(test_strategy_counts),
        cmocka_unit_test(test_mm_rules),
        cmocka_unit_test(test_pointwise_rules),
        cmocka_unit_test(test_cache_and_errors),
        cmocka_unit_test(test_linear_rules),
        cmocka_unit_test(test_kernel_linear),
        cmocka_unit_test(test_tp_styles),
        cmocka_unit_test(test_unary_rules),
        cmocka_unit_test(test_reduce_rules),
        cmocka_unit_test(test_softmax_norm_rules),
        cmocka_unit_test(test_kernel_ops),
        cmocka_unit_test(test_kernel_mm),
        cmocka_unit_test(test_view_rules),
        cmocka_unit_test(test_embed_loss_rules),
        cmocka_unit_test(test_kernel_embed_loss),
        /* every op family over pg_mpi */
        cmocka_unit_test(test_dispatch_1d),
        cmocka_unit_test(test_dispatch_2x2),
        cmocka_unit_test(test_dispatch_b_1d),
        cmocka_unit_test(test_dispatch_b_2x2),
        /* 4 ranks only */
        cmocka_unit_test(test_dispatch_misc),
        cmocka_unit_test(test_dispatch_features),
        cmocka_unit_test(test_dispatch_submesh),
    };
    char name[64];
    int failed, rank = 0, size = 0, rc, ntests = (int)(sizeof tests / sizeof tests[0]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rc = pg_mpi_init(&dto_port, MPI_COMM_WORLD);
    if (rc != PG_OK || (size != 2 && size != NR)) {
        fprintf(stderr, "pg_mpi_init: %s (size %d, the suite needs 2 or %d)\n", pg_strerror(rc), size, NR);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dto_mesh1[0] = size;
    dto_mesh2[0] = 2;
    dto_mesh2[1] = size / 2;
    if (size != NR) ntests -= 3;
    if (rank != 0 && (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))) return 1;
    snprintf(name, sizeof name, "dtensor ops over pg_mpi (%d ranks)", size);
    failed = _cmocka_run_group_tests(name, tests, (size_t)ntests, NULL, NULL);
    fflush(stdout);
    pg_mpi_finalize(&dto_port);
    MPI_Finalize();
    return failed;
}
