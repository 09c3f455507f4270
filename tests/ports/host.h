/* host.h — the host clock and the bounded condition wait the models share (splitcore tests). */
#ifndef PGH_HOST_H
#define PGH_HOST_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t pgh_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait on cv (lock held) at most `ns` nanoseconds; the caller re-checks its condition. */
static inline void pgh_wait(pthread_cond_t *cv, pthread_mutex_t *lock, uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ns += (uint64_t)ts.tv_nsec;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(cv, lock, &ts);
}

#endif /* PGH_HOST_H */
