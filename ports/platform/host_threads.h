/* host_threads.h — pg_shm platform hooks for host threads as cores (splitcore)

   Lets ports/pg_shm.h run on a desktop OS: each "core" is a thread, the shared region is
   ordinary memory. The doorbell is one word per core: notify() sets it and, only when the
   core sleeps, wakes it (a Linux futex; elsewhere a condition variable). wait() first spins
   on the doorbell for up to PG_SHM_HOST_SPIN_US (pause hint; a peer on another CPU answers
   in well under a microsecond, a futex round trip costs tens; no spinning once more cores
   have waited than there are online CPUs), then sleeps until the doorbell rang or
   PG_SHM_HOST_TICK_US passed. Caches are coherent (no cache hooks); now_us() reads
   CLOCK_MONOTONIC.

   Example:
       static pg_shm_host_bells bells;                 // shared by all threads
       pg_shm_hooks h;
       pg_shm_host_hooks(&h, &bells);
       pg_shm_init(&shm[me], region, sizeof region, me, &h);

   Needs pthreads (-pthread). Define PG_SHM_HOST_NO_FUTEX to use the condition variable on
   Linux too. Include it before other system headers (it asks for _DEFAULT_SOURCE: clock_gettime,
   syscall). Everything here is static inline, so include it wherever needed. */
#ifndef PG_SHM_HOST_THREADS_H
#define PG_SHM_HOST_THREADS_H

/* clock_gettime and syscall under -std=c99: effective only before the first system header,
   so include this header first (or build with -D_DEFAULT_SOURCE). */
#if !defined(_DEFAULT_SOURCE) && !defined(_GNU_SOURCE)
#define _DEFAULT_SOURCE 1
#endif
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include "../pg_shm.h"

#if defined(__linux__) && !defined(PG_SHM_HOST_NO_FUTEX)
#include <linux/futex.h>
#include <sys/syscall.h>
#define PG_SHM_HOST__FUTEX 1
#endif

#ifndef PG_SHM_HOST_TICK_US
#define PG_SHM_HOST_TICK_US 1000
#endif
#ifndef PG_SHM_HOST_SPIN_US
#define PG_SHM_HOST_SPIN_US 20
#endif
#if defined(__x86_64__) || defined(__i386__)
#define PG_SHM_HOST__PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define PG_SHM_HOST__PAUSE() __asm__ __volatile__("yield" ::: "memory")
#else
#define PG_SHM_HOST__PAUSE() ((void)0)
#endif

typedef struct pg_shm_host_bells {
    struct { volatile int32_t bell, sleeping; char pad[56]; } core[PG_SHM_MAX_CORES];
    uint32_t waiters; /* bit c: core c has waited (spinning only pays while cores <= CPUs) */
    int32_t cpus;     /* online CPUs, 0 until the first wait */
#ifndef PG_SHM_HOST__FUTEX
    pthread_mutex_t lock;
    pthread_cond_t cond[PG_SHM_MAX_CORES];
    int ready;
#endif
} pg_shm_host_bells;

static inline uint32_t pg_shm_host_now_us(void *ctx)
{
    struct timespec ts;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
}

static inline void pg_shm_host_notify(void *ctx, int core)
{
    pg_shm_host_bells *b = (pg_shm_host_bells *)ctx;
    __atomic_store_n(&b->core[core].bell, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&b->core[core].sleeping, __ATOMIC_SEQ_CST)) return;
#ifdef PG_SHM_HOST__FUTEX
    syscall(SYS_futex, (int32_t *)&b->core[core].bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    pthread_mutex_lock(&b->lock);
    pthread_cond_signal(&b->cond[core]);
    pthread_mutex_unlock(&b->lock);
#endif
}

static inline void pg_shm_host_wait(void *ctx, int self)
{
    pg_shm_host_bells *b = (pg_shm_host_bells *)ctx;
    uint32_t t0 = pg_shm_host_now_us(ctx), seen, spin = PG_SHM_HOST_SPIN_US;
    int i, cpus = __atomic_load_n(&b->cpus, __ATOMIC_RELAXED);
    if (!cpus) {
        cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
        __atomic_store_n(&b->cpus, cpus > 0 ? cpus : 1, __ATOMIC_RELAXED);
    }
    seen = __atomic_or_fetch(&b->waiters, 1u << self, __ATOMIC_RELAXED);
    if (__builtin_popcount(seen) > cpus) spin = 0; /* more cores than CPUs: the peer needs ours */
    do { /* spin first: no syscall on either side while the peer answers quickly */
        for (i = 0; i < 32; i++) {
            if (__atomic_load_n(&b->core[self].bell, __ATOMIC_ACQUIRE) &&
                __atomic_exchange_n(&b->core[self].bell, 0, __ATOMIC_SEQ_CST))
                return;
            PG_SHM_HOST__PAUSE();
        }
    } while (pg_shm_host_now_us(ctx) - t0 < spin);
    __atomic_store_n(&b->core[self].sleeping, 1, __ATOMIC_SEQ_CST);
#ifdef PG_SHM_HOST__FUTEX
    {
        struct timespec ts;
        ts.tv_sec = 0;
        ts.tv_nsec = PG_SHM_HOST_TICK_US * 1000L;
        if (!__atomic_load_n(&b->core[self].bell, __ATOMIC_SEQ_CST))
            syscall(SYS_futex, (int32_t *)&b->core[self].bell, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
#else
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += PG_SHM_HOST_TICK_US * 1000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_mutex_lock(&b->lock);
        if (!__atomic_load_n(&b->core[self].bell, __ATOMIC_SEQ_CST))
            pthread_cond_timedwait(&b->cond[self], &b->lock, &ts);
        pthread_mutex_unlock(&b->lock);
    }
#endif
    __atomic_store_n(&b->core[self].sleeping, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&b->core[self].bell, 0, __ATOMIC_SEQ_CST);
}

/* Fill `h` for threads sharing `bells` (zero-initialised static storage is ready to use
   with the futex; the condition-variable variant is set up here, once, before any thread
   starts). */
static inline void pg_shm_host_hooks(pg_shm_hooks *h, pg_shm_host_bells *bells)
{
#ifndef PG_SHM_HOST__FUTEX
    if (!bells->ready) {
        int i;
        pthread_mutex_init(&bells->lock, NULL);
        for (i = 0; i < PG_SHM_MAX_CORES; i++) pthread_cond_init(&bells->cond[i], NULL);
        bells->ready = 1;
    }
#endif
    memset(h, 0, sizeof *h);
    h->notify = pg_shm_host_notify;
    h->wait = pg_shm_host_wait;
    h->now_us = pg_shm_host_now_us;
    h->ctx = bells;
}

#endif /* PG_SHM_HOST_THREADS_H */
