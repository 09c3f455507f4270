/* host_threads.h — pg_shm platform hooks for host threads as cores (splitcore)

   Lets ports/pg_shm.h run on a desktop OS: each "core" is a thread, the shared region is
   ordinary memory. pg_shm rings a doorbell only for a core that announced it waits. The
   doorbell is one word per core: notify() sets it and, only when the core sleeps, wakes it
   (a Linux futex; elsewhere a condition variable). wait() first spins on the doorbell for
   up to PG_SHM_HOST_SPIN_US (pause hint; a peer on another CPU answers in well under a
   microsecond, a futex round trip costs tens), then calls sched_yield() between looks until
   PG_SHM_HOST_YIELD_US (a peer queued on this CPU runs; a core that slept would wait for
   the scheduler to wake it, and two cores that take turns sleeping never catch up), then
   sleeps until the doorbell rang or PG_SHM_HOST_TICK_US passed. Once more cores have waited
   than there are online CPUs it spins no more and yields a tenth as long (the peer needs
   the CPU). On Linux fence_others() is membarrier(PRIVATE_EXPEDITED), so senders check for
   a waiting core without a full barrier per message (a waiter pays one syscall before it
   sleeps); it needs one process (threads) and Linux >= 4.14, else it stays NULL. Caches are
   coherent (no cache hooks); now_us() reads CLOCK_MONOTONIC.

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

#include <sched.h>
#if defined(__linux__) && !defined(PG_SHM_HOST_NO_FUTEX)
#include <linux/futex.h>
#include <sys/syscall.h>
#define PG_SHM_HOST__FUTEX 1
#endif
#if defined(__linux__) && !defined(PG_SHM_HOST_NO_MEMBARRIER)
#include <sys/syscall.h>
#if defined(SYS_membarrier)
#define PG_SHM_HOST__MEMBARRIER                    1
#define PG_SHM_HOST__MB_PRIVATE_EXPEDITED          (1 << 3) /* linux/membarrier.h */
#define PG_SHM_HOST__MB_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#endif
#endif

#ifndef PG_SHM_HOST_TICK_US
#define PG_SHM_HOST_TICK_US 1000
#endif
#ifndef PG_SHM_HOST_SPIN_US
#define PG_SHM_HOST_SPIN_US 20
#endif
#ifndef PG_SHM_HOST_YIELD_US
#define PG_SHM_HOST_YIELD_US 1000
#endif
#if defined(__x86_64__) || defined(__i386__)
#define PG_SHM_HOST__PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define PG_SHM_HOST__PAUSE() __asm__ __volatile__("yield" ::: "memory")
#else
#define PG_SHM_HOST__PAUSE() ((void)0)
#endif

typedef struct pg_shm_host_bells {
    struct {
        volatile int32_t bell, sleeping;
        char pad[56];
    } core[PG_SHM_MAX_CORES];
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
    uint32_t t0 = pg_shm_host_now_us(ctx), seen, spin = PG_SHM_HOST_SPIN_US, yield = PG_SHM_HOST_YIELD_US, dt;
    int i, cpus = __atomic_load_n(&b->cpus, __ATOMIC_RELAXED);
    if (!cpus) {
        cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
        __atomic_store_n(&b->cpus, cpus > 0 ? cpus : 1, __ATOMIC_RELAXED);
    }
    seen = __atomic_load_n(&b->waiters, __ATOMIC_RELAXED);
    if (!(seen >> self & 1u)) seen = __atomic_or_fetch(&b->waiters, 1u << self, __ATOMIC_RELAXED);
    if (__builtin_popcount(seen) > cpus) { /* more cores than CPUs: the peer needs ours */
        spin = 0;
        yield /= 10u;
    }
    for (;;) { /* no syscall on either side while the peer answers quickly */
        for (i = 0; i < 32; i++) {
            if (__atomic_load_n(&b->core[self].bell, __ATOMIC_ACQUIRE) &&
                __atomic_exchange_n(&b->core[self].bell, 0, __ATOMIC_SEQ_CST))
                return;
            PG_SHM_HOST__PAUSE();
        }
        dt = pg_shm_host_now_us(ctx) - t0;
        if (dt >= yield) break;
        if (dt >= spin) sched_yield();
    }
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
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&b->lock);
        if (!__atomic_load_n(&b->core[self].bell, __ATOMIC_SEQ_CST))
            pthread_cond_timedwait(&b->cond[self], &b->lock, &ts);
        pthread_mutex_unlock(&b->lock);
    }
#endif
    __atomic_store_n(&b->core[self].sleeping, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&b->core[self].bell, 0, __ATOMIC_SEQ_CST);
}

#ifdef PG_SHM_HOST__MEMBARRIER
/* Every other running thread of this process passes a full barrier (registered in
   pg_shm_host_hooks; a failure there leaves the hook NULL, so this one cannot fail). */
static inline void pg_shm_host_fence_others(void *ctx)
{
    (void)ctx;
    syscall(SYS_membarrier, PG_SHM_HOST__MB_PRIVATE_EXPEDITED, 0, 0);
}
#endif

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
    h->spin_us = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? PG_SHM_HOST_SPIN_US : 0;
#ifdef PG_SHM_HOST__MEMBARRIER
    if (syscall(SYS_membarrier, PG_SHM_HOST__MB_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
        h->fence_others = pg_shm_host_fence_others;
#endif
}

#endif /* PG_SHM_HOST_THREADS_H */
