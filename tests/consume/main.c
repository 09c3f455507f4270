/* A program that uses splitcore the way a project outside this repository does: through
   the include directory its build system gives (CMake's splitcore::pthread target or
   `pkg-config --cflags splitcore`), spelling the includes <splitcore/...> as the docs do, and
   implementing every header with one SPLITCORE_IMPLEMENTATION.
   Run by tests/consume/check_consume.py; exits 0 when every check passes. */
#define SPLITCORE_IMPLEMENTATION
#include <splitcore/ports/pg_pthread.h> /* first: it asks for POSIX before any system header */
#include <splitcore/microbatch.h>
#include <splitcore/pipeline.h>
#include <splitcore/dtensor.h>
#include <splitcore/ports/pg_shm.h> /* the bare-metal port's header is found too */
#include <stdio.h>

#if SPLITCORE_VERSION_MAJOR != EXPECT_MAJOR || SPLITCORE_VERSION_MINOR != EXPECT_MINOR || \
    SPLITCORE_VERSION_PATCH != EXPECT_PATCH
#error "the headers found are not the release the build system announced"
#endif

static pg_pthread_world world;

/* 4 ranks: every rank adds rank + 1; the sum is 10 everywhere. */
static int body(pg_group *g, void *arg)
{
    int32_t v = pg_rank(g) + 1;
    int rc = pg_all_reduce(g, &v, &v, 1, MB_I32, PG_SUM);
    (void)arg;
    return rc < 0 ? rc : (v == 10 ? 0 : -100);
}

int main(void)
{
    static pp_action storage[512];
    float x[10][3];
    int32_t xs[2] = {10, 3};
    mb_value in[1], chunks[3];
    pp_plan plan;
    int n, rc, failed = 0;

    mb_tensor_init(&in[0].tensor, x, MB_F32, 2, xs);
    in[0].kind = MB_VALUE_TENSOR;
    n = mb_split(in, NULL, 1, 3, MB_BALANCED, chunks, 3, NULL); /* torch.tensor_split: 4,3,3 */
    if (n != 3 || chunks[0].tensor.shape[0] != 4 || chunks[2].tensor.shape[0] != 3) {
        printf("FAILED: mb_split gave %d chunks\n", n);
        failed++;
    }
    rc = pp_schedule_build(&plan, PP_SCHED_1F1B, 4, 1, 8, storage, sizeof storage, NULL);
    if (rc < 0 || (rc = pp_validate(&plan, NULL)) < 0 || pp_peak_inflight(&plan, 0) != 4) {
        printf("FAILED: 1F1B plan: %s, rank 0 peak %d\n", pp_strerror(rc), pp_peak_inflight(&plan, 0));
        failed++;
    }
    if (dt_chunk(5, 4, 3, NULL) != 0 || dt_chunk(5, 4, 0, NULL) != 2) {
        printf("FAILED: dt_chunk\n");
        failed++;
    }
    rc = pg_pthread_run(&world, 4, body, NULL);
    if (rc != 0) {
        printf("FAILED: all_reduce over 4 pg_pthread ranks: %s\n", pg_strerror(rc));
        failed++;
    }
    printf("splitcore %d.%d.%d: split, 1F1B plan, shard sizes, all_reduce on 4 threads: %s\n", SPLITCORE_VERSION_MAJOR,
           SPLITCORE_VERSION_MINOR, SPLITCORE_VERSION_PATCH, failed ? "FAILED" : "ok");
    return failed != 0;
}
