/* stm32h7.h — pg_shm platform hooks for the dual-core STM32H745 / H747 / H755 / H757
   (Cortex-M7 + Cortex-M4), bare metal or STM32Cube (splitcore)

   Rank 0 is the Cortex-M7 (CPU1), rank 1 the Cortex-M4 (CPU2); each core runs its own image
   and finds its rank from CPUID. Registers from RM0399 (STM32H745/755 and STM32H747/757
   reference manual), chapter "Hardware semaphore (HSEM)": HSEM at 0x58026400, R[n] 0x000 +
   4n (write: unlock when COREID and PROCID match), RLR[n] 0x080 + 4n (read: 1-step lock,
   LOCK bit 31, COREID bits 11:8, PROCID 7:0), per interrupt line i (0: CPU1, 1: CPU2)
   CiIER 0x100 + 0x10 i, CiICR 0x104 + 0x10 i (write 1 to clear), CiMISR 0x10C + 0x10 i;
   COREID of CPU1 = 3, of CPU2 = 1; freeing semaphore n sets its interrupt status on every
   line, and raises the interrupt where CiIER enables it: HSEM1_IRQn = 125 on the M7,
   HSEM2_IRQn = 126 on the M4 (chapter "Interrupts and events", as in ST's stm32h745xx.h).

   Doorbell: one semaphore per direction, PG_SHM_STM32H7_SEM + rank rings that rank (default
   semaphores 10 and 11; semaphore 0 is the one STM32CubeMX dual-core templates use to
   release the M4 at boot, and ST's dual-core examples take the next few). notify(core): DSB, then
   1-step lock of the semaphore and release, which frees it and interrupts `core`; when the
   lock fails the semaphore is mid-release by this core already, so the doorbell is rung.
   The receiver's HSEMn interrupt calls pg_shm_stm32h7_isr(): clear its own status bit only
   (call it before HAL_HSEM_IRQHandler if the firmware also uses HAL notifications, which
   disable what they see), set the pending flag. wait(): pg_shm_cm_sleep (cortex_m.h); the
   tick is SysTick (HAL_Init runs it at 1 kHz on both cores; bare metal:
   pg_shm_cm_tick_start). now_us: each core's DWT cycle counter turned into microseconds
   that wrap modulo 2^32 (pg_shm_cm_clock_us).

   Region and caches: put it in SRAM both cores reach at the same address: SRAM4 (D3,
   0x38000000, 64 KB), or D2 SRAM1..3 (0x30000000..; their clocks are bits of RCC_AHB2ENR).
   The M4 has no data cache. The M7's D-cache is write-back for SRAM, so pick one of:
   - cached = 1 in pg_shm_stm32h7_hooks: clean after writing, clean+invalidate before
     reading, by address on 32-byte lines (pg_shm keeps every peer-written word on lines of
     its own, PG_SHM_LINE 64); faster for large payloads;
   - cached = 0 and, on the M7, pg_shm_cm_mpu_uncached(region_no, region, log2size) before
     pg_shm_init: the region (a power-of-two block, aligned to its size) becomes Normal
     non-cacheable and no maintenance runs at all; simpler.
   The M7 must format the region before enabling its D-cache, or clean it afterwards
   (pg_shm_cm_clean(NULL, region, bytes)): pg_shm_format writes it without hooks.

   Boot and restart: the M7 formats the region, then releases the M4 (in the Cube templates
   by taking and releasing HSEM 0); pg_shm_init on the M4 also waits for the format. A core
   that restarts attaches again; these hooks hold no semaphore between calls, so nothing
   stays locked across a reset (HSEM_CR with the key would clear one by COREID).

   Use (on each core; HSEM1_IRQHandler on the M7 / HSEM2_IRQHandler on the M4 calls the ISR):
       static pg_shm_stm32h7 bell;                          // per core (per image)
       void HSEM1_IRQHandler(void) { pg_shm_stm32h7_isr(&bell); }
       pg_shm_hooks h;  pg_shm_stm32h7_hooks(&h, &bell, SystemCoreClock, 1);
       pg_shm_init(&shm, region, sizeof region, (int)bell.rank, &h);

   Everything is static inline. For the host models: PG_SHM_MMIO_RD/WR, PG_SHM_CM_*. */
#ifndef PG_SHM_STM32H7_H
#define PG_SHM_STM32H7_H

#include "cortex_m.h"

#ifndef PG_SHM_STM32H7_SEM
#define PG_SHM_STM32H7_SEM 10u /* semaphores SEM and SEM + 1 */
#endif
#ifndef PG_SHM_STM32H7_HSEM
#define PG_SHM_STM32H7_HSEM 0x58026400u
#endif
#define PG_SHM_STM32H7_R(n)      (PG_SHM_STM32H7_HSEM + 4u * (n))
#define PG_SHM_STM32H7_RLR(n)    (PG_SHM_STM32H7_HSEM + 0x080u + 4u * (n))
#define PG_SHM_STM32H7_IER(rank) (PG_SHM_STM32H7_HSEM + 0x100u + 0x10u * (rank))
#define PG_SHM_STM32H7_ICR(rank) (PG_SHM_STM32H7_HSEM + 0x104u + 0x10u * (rank))
#define PG_SHM_STM32H7_MIS(rank) (PG_SHM_STM32H7_HSEM + 0x10Cu + 0x10u * (rank))
#define PG_SHM_STM32H7_COREID(r) ((r) ? 1u : 3u)
#define PG_SHM_STM32H7_IRQ(rank) (125u + (rank))

/* Per core: the pending flag its HSEM interrupt sets, its rank (0: M7, 1: M4), its clock. */
typedef pg_shm_cm_core pg_shm_stm32h7;

/* From this core's HSEMn_IRQHandler. */
static inline void pg_shm_stm32h7_isr(pg_shm_stm32h7 *b)
{
    uint32_t bit = 1u << (PG_SHM_STM32H7_SEM + b->rank);
    if (PG_SHM_MMIO_RD(PG_SHM_STM32H7_MIS(b->rank)) & bit) {
        PG_SHM_MMIO_WR(PG_SHM_STM32H7_ICR(b->rank), bit);
        b->pending = 1u;
    }
}

static inline void pg_shm_stm32h7_notify(void *ctx, int core)
{
    pg_shm_stm32h7 *b = (pg_shm_stm32h7 *)ctx;
    uint32_t sem = PG_SHM_STM32H7_SEM + (uint32_t)core, me = PG_SHM_STM32H7_COREID(b->rank) << 8;
    if ((uint32_t)core == b->rank) return;
    PG_SHM_CM_DSB(); /* the published index before the doorbell */
    if (PG_SHM_MMIO_RD(PG_SHM_STM32H7_RLR(sem)) == (1u << 31 | me)) PG_SHM_MMIO_WR(PG_SHM_STM32H7_R(sem), me);
}

/* On each core: find the rank, enable this core's semaphore interrupt, fill `h`. cached:
   the M7 maintains its D-cache (1) or the region is MPU non-cacheable (0); ignored on the
   M4. */
static inline void pg_shm_stm32h7_hooks(pg_shm_hooks *h, pg_shm_stm32h7 *b, uint32_t cpu_hz, int cached)
{
    uint32_t rank = pg_shm_cm_partno() == PG_SHM_CM_M7 ? 0u : 1u, bit = 1u << (PG_SHM_STM32H7_SEM + rank);
    b->rank = rank;
    b->pending = 0u;
    PG_SHM_MMIO_WR(PG_SHM_STM32H7_ICR(rank), bit);
    PG_SHM_MMIO_WR(PG_SHM_STM32H7_IER(rank), PG_SHM_MMIO_RD(PG_SHM_STM32H7_IER(rank)) | bit);
    pg_shm_cm_irq_enable(PG_SHM_STM32H7_IRQ(rank));
    pg_shm_cm_clock_start(&b->clock, cpu_hz);
    pg_shm_cm_hooks(h, pg_shm_stm32h7_notify, pg_shm_cm_core_wait, pg_shm_cm_core_now_us, b);
    if (rank == 0u && cached) {
        h->cache_clean = pg_shm_cm_clean;
        h->cache_invalidate = pg_shm_cm_invalidate;
    }
}

#endif /* PG_SHM_STM32H7_H */
