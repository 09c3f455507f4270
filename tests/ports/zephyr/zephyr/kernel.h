/* zephyr/kernel.h — a behavioural model of the Zephyr kernel API that ports/platform/zephyr.h
   uses, on host threads (splitcore tests: tests/test_port_zephyr.c, tests/test_port_zephyr_amp.c)

   k_sem: count up to its limit, k_sem_give wakes a taker, k_sem_take waits until the count
   is not 0 or the timeout passed (returns 0 or -EAGAIN). Clocks: k_cycle_get_64 counts
   PGZ_CYC_HZ from pgz_reset, k_uptime_ticks counts CONFIG_SYS_CLOCK_TICKS_PER_SEC; both start
   so that their microseconds pass 2^32 PGZ_WRAP_US in. pgz.quiet: timeouts do not end a take,
   only a give; a take waiting longer than 2 s counts as lost (pgz.lost). */
#ifndef ZEPHYR_INCLUDE_KERNEL_H_
#define ZEPHYR_INCLUDE_KERNEL_H_

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "tests/ports/host.h"

#define CONFIG_SYS_CLOCK_TICKS_PER_SEC 10000
#define PGZ_CYC_HZ                     64000000u
#define PGZ_WRAP_US                    10000u

typedef struct {
    int64_t us; /* -1: forever */
} k_timeout_t;
#define K_USEC(t)     ((k_timeout_t){(int64_t)(t)})
#define K_MSEC(t)     ((k_timeout_t){(int64_t)(t)*1000})
#define K_NO_WAIT     ((k_timeout_t){0})
#define K_FOREVER     ((k_timeout_t){-1})
#define ARG_UNUSED(x) (void)(x)

struct k_sem {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    unsigned int count, limit;
    uint64_t gives, takes, timeouts;
};

static struct {
    uint64_t t0, lost;
    int quiet;
} pgz;

#define pgz_ns pgh_ns

static inline void pgz_reset(void)
{
    pgz.t0 = pgz_ns();
    pgz.lost = 0;
}

static inline int k_sem_init(struct k_sem *s, unsigned int initial, unsigned int limit)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->count = initial;
    s->limit = limit;
    return 0;
}

static inline void k_sem_give(struct k_sem *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->count < s->limit) s->count++;
    s->gives++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->lock);
}

static inline int k_sem_take(struct k_sem *s, k_timeout_t timeout)
{
    uint64_t start = pgz_ns(), limit;
    int rc = 0;
    limit = pgz.quiet || timeout.us < 0 ? 2000000000u : (uint64_t)timeout.us * 1000u;
    pthread_mutex_lock(&s->lock);
    while (!s->count) {
        uint64_t waited = pgh_ns() - start;
        if (waited >= limit) break;
        pgh_wait(&s->cv, &s->lock, limit - waited < 1000000u ? limit - waited : 1000000u);
    }
    if (s->count) {
        s->count--;
        s->takes++;
    } else {
        rc = -EAGAIN;
        s->timeouts++;
        if (pgz.quiet || timeout.us < 0) __atomic_fetch_add(&pgz.lost, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static inline uint64_t k_cycle_get_64(void)
{
    return (pgz_ns() - pgz.t0) * (PGZ_CYC_HZ / 1000000u) / 1000u +
           (0x100000000ull - PGZ_WRAP_US) * (PGZ_CYC_HZ / 1000000u);
}

static inline uint64_t k_cyc_to_us_floor64(uint64_t cycles)
{
    return cycles / (PGZ_CYC_HZ / 1000000u);
}

static inline int64_t k_uptime_ticks(void)
{
    return (int64_t)((pgz_ns() - pgz.t0) / (1000000000u / CONFIG_SYS_CLOCK_TICKS_PER_SEC) +
                     (0x100000000ull - PGZ_WRAP_US) / (1000000u / CONFIG_SYS_CLOCK_TICKS_PER_SEC));
}

static inline uint64_t k_ticks_to_us_floor64(uint64_t ticks)
{
    return ticks * (1000000u / CONFIG_SYS_CLOCK_TICKS_PER_SEC);
}

#endif /* ZEPHYR_INCLUDE_KERNEL_H_ */
