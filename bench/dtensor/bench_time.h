/* bench_time.h — timing helpers of the dtensor benchmarks (main.c, qmm.c): a monotonic
   clock in microseconds and the median of a sample array (sorted in place). */
#ifndef BENCH_TIME_H
#define BENCH_TIME_H
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}
#endif
