/* imxrt1170.h — pg_shm platform hooks for the i.MX RT1170 (Cortex-M7 + Cortex-M4), bare
   metal or MCUXpresso SDK (splitcore)

   Rank 0 is the Cortex-M7 (Messaging Unit side A), rank 1 the Cortex-M4 (side B); each core
   runs its own image and finds its rank from CPUID. Registers from the i.MX RT1170 Processor
   Reference Manual (IMXRT1170RM), chapter "Messaging Unit (MU)": MUA at 0x40C48000 (M7),
   MUB at 0x40C4C000 (M4), the MU interrupt is IRQ 118 on both cores; SR 0x20 (GIPn, bit
   31 - n: general-purpose interrupt n pending, write 1 to clear), CR 0x24 (GIEn, bit 31 - n:
   its interrupt enable; GIRn, bit 19 - n: request GP interrupt n on the other side, cleared
   by hardware once the other side clears its GIPn). The Cortex-M4's LMEM (the CM4
   platform's local memory controller, 0xE0082000; its processor system-bus cache caches
   OCRAM): PSCLCR 0x804 (LCMD bits 25:24: 1
   invalidate, 2 push, 3 clear = push + invalidate; LADSEL bit 26: physical address),
   PSCSAR 0x808 (the line's address, LGO bit 0 starts the command and reads 1 until done);
   its lines are 32 bytes (the SDK's FSL_FEATURE_L1DCACHE_LINESIZE_BYTE for the CM4).

   Doorbell: MU general-purpose interrupt PG_SHM_IMXRT1170_GPI (default 3: pick one that no
   other MU user of the firmware takes). notify(core): DSB,
   then set GIRn in CR unless it is still set (the other side has not taken the previous
   one: already rung); the read-modify-write keeps the other GIR bits 0, since writing back
   a 1 would request again. The receiver's MU interrupt calls pg_shm_imxrt1170_isr(): clear
   GIPn if set, set the pending flag. wait(): pg_shm_cm_sleep (cortex_m.h); the tick is
   SysTick (the SDK's, or pg_shm_cm_tick_start). now_us: each core's DWT cycle counter
   turned into microseconds that wrap modulo 2^32 (pg_shm_cm_clock_us).

   Region and caches: OCRAM (e.g. OCRAM2 at 0x202C0000), the same address for both cores;
   never the M4's TCM, which the M7 sees at another address. Both cores cache it: the M7 in
   its L1 D-cache, the M4 in the LMEM system-bus cache (the SDK's SystemInit turns it on).
   Pick one of:
   - cached = 1: maintenance by address, the M7 through the SCB (cortex_m.h) and the M4 by
     LMEM line commands, 32-byte lines;
   - cached = 0 and, on each core, pg_shm_cm_mpu_uncached(region_no, region, log2size)
     before pg_shm_init: Normal non-cacheable, which both caches honour (the SDK's
     BOARD_ConfigMPU marks its NonCacheable section this way on both cores).
   Format the region before either core caches it (or clean it afterwards): pg_shm_format
   writes it without hooks.

   Boot and restart: the M7 boots, formats the region and starts the M4 (MCMGR_StartCore /
   SRC); pg_shm_init on the M4 also waits for the format. The MU's GP interrupt state
   survives a restart of one core: attach clears this side's pending GIPn.

   Use (on each core; MUA_IRQHandler on the M7 / MUB_IRQHandler on the M4 calls the ISR):
       static pg_shm_imxrt1170 bell;                         // per core (per image)
       void MUA_IRQHandler(void) { pg_shm_imxrt1170_isr(&bell); }
       pg_shm_hooks h;  pg_shm_imxrt1170_hooks(&h, &bell, SystemCoreClock, 1);
       pg_shm_init(&shm, region, sizeof region, (int)bell.rank, &h);

   Everything is static inline. For the host models: PG_SHM_MMIO_RD/WR, PG_SHM_CM_*. */
#ifndef PG_SHM_IMXRT1170_H
#define PG_SHM_IMXRT1170_H

#include "cortex_m.h"

#ifndef PG_SHM_IMXRT1170_GPI
#define PG_SHM_IMXRT1170_GPI 3u
#endif
#define PG_SHM_IMXRT1170_MU(rank) ((rank) ? 0x40C4C000u : 0x40C48000u)
#define PG_SHM_IMXRT1170_SR(rank) (PG_SHM_IMXRT1170_MU(rank) + 0x20u)
#define PG_SHM_IMXRT1170_CR(rank) (PG_SHM_IMXRT1170_MU(rank) + 0x24u)
#define PG_SHM_IMXRT1170_GIP      (1u << (31u - PG_SHM_IMXRT1170_GPI)) /* SR; GIEn at the same bit of CR */
#define PG_SHM_IMXRT1170_GIR      (1u << (19u - PG_SHM_IMXRT1170_GPI))
#define PG_SHM_IMXRT1170_GIR_ALL  0x000F0000u
#define PG_SHM_IMXRT1170_IRQ      118u
#define PG_SHM_IMXRT1170_PSCLCR   0xE0082804u
#define PG_SHM_IMXRT1170_PSCSAR   0xE0082808u

/* Per core: the pending flag its MU interrupt sets, its rank (0: M7 on MUA, 1: M4 on MUB),
   its clock. */
typedef pg_shm_cm_core pg_shm_imxrt1170;

/* From this core's MU interrupt handler. */
static inline void pg_shm_imxrt1170_isr(pg_shm_imxrt1170 *b)
{
    if (PG_SHM_MMIO_RD(PG_SHM_IMXRT1170_SR(b->rank)) & PG_SHM_IMXRT1170_GIP) {
        PG_SHM_MMIO_WR(PG_SHM_IMXRT1170_SR(b->rank), PG_SHM_IMXRT1170_GIP);
        b->pending = 1u;
    }
}

static inline void pg_shm_imxrt1170_notify(void *ctx, int core)
{
    pg_shm_imxrt1170 *b = (pg_shm_imxrt1170 *)ctx;
    uint32_t cr;
    if ((uint32_t)core == b->rank) return;
    PG_SHM_CM_DSB(); /* the published index before the doorbell */
    cr = PG_SHM_MMIO_RD(PG_SHM_IMXRT1170_CR(b->rank));
    if (!(cr & PG_SHM_IMXRT1170_GIR))
        PG_SHM_MMIO_WR(PG_SHM_IMXRT1170_CR(b->rank), (cr & ~PG_SHM_IMXRT1170_GIR_ALL) | PG_SHM_IMXRT1170_GIR);
}

/* The Cortex-M4's cache hooks: LMEM line command `cmd` on every 32-byte line of [p, p+n). */
static inline void pg_shm_imxrt1170_lmem(uint32_t cmd, const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)31u, end = (uintptr_t)p + n;
    if (!n) return;
    PG_SHM_CM_DSB();
    PG_SHM_MMIO_WR(PG_SHM_IMXRT1170_PSCLCR, cmd << 24 | 1u << 26);
    for (; a < end; a += 32u) {
        PG_SHM_MMIO_WR(PG_SHM_IMXRT1170_PSCSAR, a | 1u);
        while (PG_SHM_MMIO_RD(PG_SHM_IMXRT1170_PSCSAR) & 1u) {}
    }
    PG_SHM_CM_DSB();
}

static inline void pg_shm_imxrt1170_m4_clean(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    pg_shm_imxrt1170_lmem(2u, p, n);
}

static inline void pg_shm_imxrt1170_m4_invalidate(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    pg_shm_imxrt1170_lmem(3u, p, n); /* push + invalidate, as on the M7 */
}

/* On each core: find the rank, enable this side's GP interrupt, fill `h`. cached: cache
   maintenance hooks (1) or the region is MPU non-cacheable on this core (0). */
static inline void pg_shm_imxrt1170_hooks(pg_shm_hooks *h, pg_shm_imxrt1170 *b, uint32_t cpu_hz, int cached)
{
    uint32_t rank = pg_shm_cm_partno() == PG_SHM_CM_M7 ? 0u : 1u;
    b->rank = rank;
    b->pending = 0u;
    PG_SHM_MMIO_WR(PG_SHM_IMXRT1170_SR(rank), PG_SHM_IMXRT1170_GIP);
    PG_SHM_MMIO_WR(PG_SHM_IMXRT1170_CR(rank),
                   (PG_SHM_MMIO_RD(PG_SHM_IMXRT1170_CR(rank)) & ~PG_SHM_IMXRT1170_GIR_ALL) | PG_SHM_IMXRT1170_GIP);
    pg_shm_cm_irq_enable(PG_SHM_IMXRT1170_IRQ);
    pg_shm_cm_clock_start(&b->clock, cpu_hz);
    pg_shm_cm_hooks(h, pg_shm_imxrt1170_notify, pg_shm_cm_core_wait, pg_shm_cm_core_now_us, b);
    if (cached) {
        h->cache_clean = rank ? pg_shm_imxrt1170_m4_clean : pg_shm_cm_clean;
        h->cache_invalidate = rank ? pg_shm_imxrt1170_m4_invalidate : pg_shm_cm_invalidate;
    }
}

#endif /* PG_SHM_IMXRT1170_H */
