/* zephyr.h — pg_shm platform hooks on Zephyr's kernel API (splitcore)

   The Zephyr module of this repository (zephyr/module.yml) provides it: CONFIG_SPLITCORE=y
   puts the headers on the include path, CONFIG_SPLITCORE_PG_SHM_ZEPHYR (default y) offers
   this hook set, and its Kconfig options pick the mode:

   SMP (one Zephyr image; ranks are threads, on any CPUs): one struct k_sem per rank, count 0,
   limit 1, so a doorbell given before the rank waits stays (latched) and many become one.
   notify(core) is k_sem_give(&z->bell[core]) (safe from any CPU and from ISRs); wait(self) is
   k_sem_take(&z->bell[self], K_USEC(CONFIG_SPLITCORE_PG_SHM_TICK_US)), default 1 ms.

   AMP (CONFIG_SPLITCORE_PG_SHM_AMP; one image per core, e.g. nRF5340 application + network,
   STM32H7 M7 + M4, i.MX RT1170 M7 + M4): the doorbell is Zephyr's MBOX API in signalling mode
   (include/zephyr/drivers/mbox.h; the SoC's IPC / HSEM / MU driver underneath). z->tx[core]
   is the devicetree channel that signals core `core` (MBOX_DT_SPEC_GET; zeroed for this
   core itself); notify sends on it (mbox_send_dt(spec, NULL); -EBUSY means a signal is still
   pending: already rung). pg_shm_zephyr_amp_init registers a callback on this core's rx
   channel, which runs in the ISR and gives the rank's semaphore; wait is as for SMP.

   now_us: with a 64-bit cycle counter (CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER)
   k_cyc_to_us_floor64(k_cycle_get_64()), else k_ticks_to_us_floor64(k_uptime_ticks())
   (coarse: tick resolution, CONFIG_SYS_CLOCK_TICKS_PER_SEC). Either is a 64-bit count, so
   its low 32 bits wrap modulo 2^32 with no state; k_cycle_get_32 would wrap every 2^32
   cycles (67 s at 64 MHz) and need state per thread.

   Caches: on a core with a data cache (CONFIG_DCACHE and CONFIG_CACHE_MANAGEMENT, e.g. a
   Cortex-M7) the hooks clean with sys_cache_data_flush_range and invalidate with
   sys_cache_data_flush_and_invd_range (zephyr/cache.h); with the region in memory the MPU
   makes non-cacheable (a devicetree region with zephyr,memory-attr = DT_MEM_ARM(ATTR_MPU_RAM_NOCACHE)),
   set CONFIG_SPLITCORE_PG_SHM_UNCACHED and they stay NULL.

   Region: SMP, any RAM (a static array). AMP: memory both images place at the same address
   (a devicetree node both boards' overlays name, as Zephyr's IPC service's shared memory).
   Boot and restart: in AMP the core that boots first formats the region before it starts
   the other (e.g. the nRF5340 application core releases the network core after formatting);
   a restarted image attaches again.

   Use (SMP; AMP: pg_shm_zephyr_amp_init(&z, rank, tx, cores, &rx) on each core instead of _init):
       static pg_shm_zephyr z;                        // pg_shm_zephyr_init(&z) before the ranks run
       // in the thread of rank `me`:
       pg_shm_hooks h;  pg_shm_zephyr_hooks(&h, &z);
       pg_shm_init(&shm[me], region, sizeof region, me, &h);

   Everything is static inline. */
#ifndef PG_SHM_ZEPHYR_H
#define PG_SHM_ZEPHYR_H

#include <string.h>
#include <zephyr/kernel.h>
#include "../pg_shm.h"
#if defined(CONFIG_SPLITCORE_PG_SHM_AMP)
#include <zephyr/drivers/mbox.h>
#endif
#if defined(CONFIG_DCACHE) && defined(CONFIG_CACHE_MANAGEMENT) && !defined(CONFIG_SPLITCORE_PG_SHM_UNCACHED)
#include <zephyr/cache.h>
#define PG_SHM_ZEPHYR__CACHE 1
#endif
#ifdef CONFIG_SPLITCORE_PG_SHM_TICK_US
#define PG_SHM_ZEPHYR_TICK_US CONFIG_SPLITCORE_PG_SHM_TICK_US
#else
#define PG_SHM_ZEPHYR_TICK_US 1000
#endif

typedef struct pg_shm_zephyr {
    struct k_sem bell[PG_SHM_MAX_CORES]; /* one per rank (AMP: this core's rank's) */
#if defined(CONFIG_SPLITCORE_PG_SHM_AMP)
    struct mbox_dt_spec tx[PG_SHM_MAX_CORES]; /* tx[core] signals core `core` */
#endif
} pg_shm_zephyr;

static inline void pg_shm_zephyr_notify(void *ctx, int core)
{
    pg_shm_zephyr *z = (pg_shm_zephyr *)ctx;
#if defined(CONFIG_SPLITCORE_PG_SHM_AMP)
    if (z->tx[core].dev) (void)mbox_send_dt(&z->tx[core], NULL);
#else
    k_sem_give(&z->bell[core]);
#endif
}

static inline void pg_shm_zephyr_wait(void *ctx, int self)
{
    (void)k_sem_take(&((pg_shm_zephyr *)ctx)->bell[self], K_USEC(PG_SHM_ZEPHYR_TICK_US));
}

static inline uint32_t pg_shm_zephyr_now_us(void *ctx)
{
    (void)ctx;
#if defined(CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER)
    return (uint32_t)k_cyc_to_us_floor64(k_cycle_get_64());
#else
    return (uint32_t)k_ticks_to_us_floor64((uint64_t)k_uptime_ticks());
#endif
}

#if defined(PG_SHM_ZEPHYR__CACHE)
static inline void pg_shm_zephyr_clean(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)sys_cache_data_flush_range((void *)(uintptr_t)p, n);
}

static inline void pg_shm_zephyr_invalidate(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)sys_cache_data_flush_and_invd_range((void *)(uintptr_t)p, n); /* a dirty line is this core's: keep it */
}
#endif

/* Before any rank runs (SMP: once; AMP: once per image). */
static inline void pg_shm_zephyr_init(pg_shm_zephyr *z)
{
    int c;
    memset(z, 0, sizeof *z);
    for (c = 0; c < PG_SHM_MAX_CORES; c++) k_sem_init(&z->bell[c], 0, 1);
}

#if defined(CONFIG_SPLITCORE_PG_SHM_AMP)
static inline void pg_shm_zephyr__rx(const struct device *dev, mbox_channel_id_t channel, void *user,
                                     struct mbox_msg *data)
{
    (void)dev;
    (void)channel;
    (void)data;
    k_sem_give((struct k_sem *)user);
}

/* AMP, on each core: `tx[c]` signals core c (cores entries; this core's own may be zeroed),
   `rx` is the channel the others signal this core on. Returns 0 or the MBOX API's error. */
static inline int pg_shm_zephyr_amp_init(pg_shm_zephyr *z, int rank, const struct mbox_dt_spec *tx, int cores,
                                         const struct mbox_dt_spec *rx)
{
    int c, rc;
    if (rank < 0 || rank >= PG_SHM_MAX_CORES || cores > PG_SHM_MAX_CORES) return -EINVAL;
    pg_shm_zephyr_init(z);
    for (c = 0; c < cores; c++)
        if (c != rank) z->tx[c] = tx[c];
    rc = mbox_register_callback_dt(rx, pg_shm_zephyr__rx, &z->bell[rank]);
    return rc ? rc : mbox_set_enabled_dt(rx, true);
}
#endif

/* Fill `h` (in the rank's thread or anywhere: the hooks keep no per-thread state). */
static inline void pg_shm_zephyr_hooks(pg_shm_hooks *h, pg_shm_zephyr *z)
{
    memset(h, 0, sizeof *h);
    h->notify = pg_shm_zephyr_notify;
    h->wait = pg_shm_zephyr_wait;
    h->now_us = pg_shm_zephyr_now_us;
    h->ctx = z;
#if defined(PG_SHM_ZEPHYR__CACHE)
    h->cache_clean = pg_shm_zephyr_clean;
    h->cache_invalidate = pg_shm_zephyr_invalidate;
#endif
}

#endif /* PG_SHM_ZEPHYR_H */
