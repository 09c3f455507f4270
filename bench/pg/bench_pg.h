/* bench_pg.h — shared by the pg collective benchmarks: the cases and the timing loop.
   A case is (collective, total bytes); all_gather's bytes are its output, reduce_scatter's
   its input, all_reduce's its buffer (as nccl-tests count them). f32, 2 ranks. */
#ifndef BENCH_PG_H
#define BENCH_PG_H
#include <stddef.h>

#define BENCH_MAX_BYTES (4u << 20)
#define BENCH_REPEATS 9
static const char *const bench_colls[3] = {"all_reduce", "all_gather", "reduce_scatter"};
static const size_t bench_sizes[6] = {64, 1024, 16384, 262144, 1u << 20, 4u << 20};
static const char *const bench_size_names[6] = {"64B", "1KB", "16KB", "256KB", "1MB", "4MB"};

/* operations per timed repeat: about 8 MB of traffic, at least 8, at most 4000 */
static int bench_iters(size_t bytes)
{
    size_t k = (8u << 20) / bytes;
    return k < 8 ? 8 : k > 4000 ? 4000 : (int)k;
}

static double bench_median(double *v, int n)
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
#endif
