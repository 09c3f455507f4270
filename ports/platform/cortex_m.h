/* cortex_m.h — the Cortex-M core registers the pg_shm hook sets of this folder share (splitcore)

   What every Cortex-M hook file needs from the core itself, written once: the MMIO accessor
   (which the host models in tests/ports/ replace), the barrier, event and sleep instructions,
   an NVIC enable, a 1 ms SysTick, the masked check-then-WFI sleep on a pending flag, a
   microsecond clock from the DWT cycle counter that wraps modulo 2^32, and for Armv7-M cores
   with a data cache (Cortex-M7) clean / clean+invalidate by address and an MPU region made
   non-cacheable. The chip's own peripherals (the doorbell) are in its hook file.

   Addresses and bits are the architecture's (the System Control Space is the same on every
   profile used here):
     Armv7-M Architecture Reference Manual (ARM DDI 0403E): B3.2 System control block (CPUID
       0xE000ED00, the cache maintenance registers DCIMVAC 0xE000EF5C, DCCMVAC 0xE000EF68,
       DCCIMVAC 0xE000EF70, operations in B2.2.7), B3.3 SysTick (0xE000E010), B3.4 NVIC
       (ISER 0xE000E100, ICER 0xE000E180, ICPR 0xE000E280), B3.5 PMSAv7 MPU (0xE000ED90),
       C1.6 DEMCR (0xE000EDFC, TRCENA), C1.8 DWT (CTRL 0xE0001000, CYCCNT 0xE0001004);
     Armv6-M ARM (ARM DDI 0419) B3 and Armv8-M ARM (ARM DDI 0553) D1: the same SysTick and
       NVIC addresses (Cortex-M0+ has no DWT cycle counter and no cache);
     Cortex-M7 TRM (ARM DDI 0489): the L1 D-cache line is 32 bytes.

   Sleeping (pg_shm_cm_sleep): PRIMASK set, test the pending flag, WFI, PRIMASK back. WFI
   wakes on a pending interrupt even while PRIMASK masks it, so a doorbell that arrives
   between the test and the WFI is not lost; its handler runs when PRIMASK is restored.

   Overridable (define before including): PG_SHM_MMIO_RD(addr), PG_SHM_MMIO_WR(addr, value)
   (value may be an address: the cache registers take one), PG_SHM_CM_DSB/ISB/SEV/WFE/WFI(),
   PG_SHM_CM_IRQ_SAVE() (returns PRIMASK, then masks), PG_SHM_CM_IRQ_RESTORE(saved). */
#ifndef PG_SHM_CORTEX_M_H
#define PG_SHM_CORTEX_M_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../pg_shm.h"

#ifndef PG_SHM_MMIO_RD
#define PG_SHM_MMIO_RD(a)    (*(volatile uint32_t *)(uintptr_t)(a))
#define PG_SHM_MMIO_WR(a, v) (*(volatile uint32_t *)(uintptr_t)(a) = (uint32_t)(v))
#endif
#ifndef PG_SHM_CM_DSB
#define PG_SHM_CM_DSB()            __asm__ __volatile__("dsb 0xF" ::: "memory")
#define PG_SHM_CM_ISB()            __asm__ __volatile__("isb 0xF" ::: "memory")
#define PG_SHM_CM_SEV()            __asm__ __volatile__("sev" ::: "memory")
#define PG_SHM_CM_WFE()            __asm__ __volatile__("wfe" ::: "memory")
#define PG_SHM_CM_WFI()            __asm__ __volatile__("wfi" ::: "memory")
#define PG_SHM_CM_IRQ_SAVE()       pg_shm_cm__irq_save()
#define PG_SHM_CM_IRQ_RESTORE(old) __asm__ __volatile__("msr primask, %0" ::"r"(old) : "memory")
static inline uint32_t pg_shm_cm__irq_save(void)
{
    uint32_t old;
    __asm__ __volatile__("mrs %0, primask\n\tcpsid i" : "=r"(old)::"memory");
    return old;
}
#endif

#define PG_SHM_CM_CPUID    0xE000ED00u
#define PG_SHM_CM_SYST_CSR 0xE000E010u /* ENABLE 1, TICKINT 2, CLKSOURCE 4 (processor clock) */
#define PG_SHM_CM_SYST_RVR 0xE000E014u
#define PG_SHM_CM_SYST_CVR 0xE000E018u
#define PG_SHM_CM_ISER     0xE000E100u
#define PG_SHM_CM_ICER     0xE000E180u
#define PG_SHM_CM_ICPR     0xE000E280u
#define PG_SHM_CM_DCCMVAC  0xE000EF68u /* clean by address */
#define PG_SHM_CM_DCCIMVAC 0xE000EF70u /* clean and invalidate by address */
#define PG_SHM_CM_MPU_CTRL 0xE000ED94u /* ENABLE 1, PRIVDEFENA 4 */
#define PG_SHM_CM_MPU_RNR  0xE000ED98u
#define PG_SHM_CM_MPU_RBAR 0xE000ED9Cu
#define PG_SHM_CM_MPU_RASR 0xE000EDA0u
#define PG_SHM_CM_DEMCR    0xE000EDFCu /* TRCENA 1 << 24 */
#define PG_SHM_CM_DWT_CTRL 0xE0001000u /* CYCCNTENA 1 */
#define PG_SHM_CM_CYCCNT   0xE0001004u
#define PG_SHM_CM_M7       0xC27u /* CPUID.PARTNO of a Cortex-M7 (a Cortex-M4: 0xC24) */
#define PG_SHM_CM_LINE     32u    /* Cortex-M7 D-cache line */

/* CPUID.PARTNO of the executing core: 0xC27 Cortex-M7, 0xC24 Cortex-M4, 0xD21 Cortex-M33. */
static inline uint32_t pg_shm_cm_partno(void)
{
    return PG_SHM_MMIO_RD(PG_SHM_CM_CPUID) >> 4 & 0xFFFu;
}

/* Clear a stale pending bit of interrupt `irq`, then enable it in this core's NVIC. */
static inline void pg_shm_cm_irq_enable(uint32_t irq)
{
    PG_SHM_MMIO_WR(PG_SHM_CM_ICPR + 4u * (irq >> 5), 1u << (irq & 31u));
    PG_SHM_MMIO_WR(PG_SHM_CM_ISER + 4u * (irq >> 5), 1u << (irq & 31u));
}

static inline void pg_shm_cm_irq_disable(uint32_t irq)
{
    PG_SHM_MMIO_WR(PG_SHM_CM_ICER + 4u * (irq >> 5), 1u << (irq & 31u));
}

/* A 1 ms SysTick on this core: the tick that ends a wait() without a doorbell. Skip it when an
   RTOS or HAL_Init already runs SysTick; the exception needs a handler (an empty one will
   do: taking it is what wakes WFI / WFE). */
static inline void pg_shm_cm_tick_start(uint32_t cpu_hz)
{
    PG_SHM_MMIO_WR(PG_SHM_CM_SYST_RVR, cpu_hz / 1000u - 1u);
    PG_SHM_MMIO_WR(PG_SHM_CM_SYST_CVR, 0u);
    PG_SHM_MMIO_WR(PG_SHM_CM_SYST_CSR, 7u);
}

/* wait() on a flag the doorbell interrupt sets: see the preamble for why nothing is lost. The
   flag is cleared after the handler had its chance: pg_shm polls the rings after wait()
   returns, and the data of any doorbell rung before the clear is published by then. */
static inline void pg_shm_cm_sleep(volatile uint32_t *pending)
{
    uint32_t old = PG_SHM_CM_IRQ_SAVE();
    if (!*pending) {
        PG_SHM_CM_DSB();
        PG_SHM_CM_WFI();
    }
    PG_SHM_CM_IRQ_RESTORE(old);
    *pending = 0u;
}

/* Microseconds from the 32-bit cycle counter, modulo 2^32: each call adds the cycles since
   the last one, so the count is right as long as calls come less than 2^32 cycles apart
   (9 s at 480 MHz), which pg_shm's wait loop guarantees while it measures a timeout. */
typedef struct pg_shm_cm_clock {
    uint32_t last, frac, us, mhz;
} pg_shm_cm_clock;

static inline void pg_shm_cm_clock_start(pg_shm_cm_clock *c, uint32_t cpu_hz)
{
    PG_SHM_MMIO_WR(PG_SHM_CM_DEMCR, PG_SHM_MMIO_RD(PG_SHM_CM_DEMCR) | 1u << 24);
    PG_SHM_MMIO_WR(PG_SHM_CM_DWT_CTRL, PG_SHM_MMIO_RD(PG_SHM_CM_DWT_CTRL) | 1u);
    c->mhz = cpu_hz / 1000000u ? cpu_hz / 1000000u : 1u;
    c->last = PG_SHM_MMIO_RD(PG_SHM_CM_CYCCNT);
    c->frac = c->us = 0u;
}

static inline uint32_t pg_shm_cm_clock_us(pg_shm_cm_clock *c)
{
    uint32_t now = PG_SHM_MMIO_RD(PG_SHM_CM_CYCCNT), d = now - c->last;
    c->last = now;
    c->frac += d % c->mhz;
    c->us += d / c->mhz + c->frac / c->mhz;
    c->frac %= c->mhz;
    return c->us;
}

/* The per-core state of a hook set whose cores run one image each: the flag the doorbell
   interrupt sets, this core's rank, its clock; and the wait / now_us hooks on it. */
typedef struct pg_shm_cm_core {
    volatile uint32_t pending;
    uint32_t rank;
    pg_shm_cm_clock clock;
} pg_shm_cm_core;

static inline void pg_shm_cm_core_wait(void *ctx, int self)
{
    (void)self;
    pg_shm_cm_sleep(&((pg_shm_cm_core *)ctx)->pending);
}

static inline uint32_t pg_shm_cm_core_now_us(void *ctx)
{
    return pg_shm_cm_clock_us(&((pg_shm_cm_core *)ctx)->clock);
}

/* Fill `h` with a doorbell hook set (no cache hooks). */
static inline void pg_shm_cm_hooks(pg_shm_hooks *h, void (*notify)(void *, int), void (*wait)(void *, int),
                                   uint32_t (*now_us)(void *), void *ctx)
{
    memset(h, 0, sizeof *h);
    h->notify = notify;
    h->wait = wait;
    h->now_us = now_us;
    h->ctx = ctx;
}

/* Cache maintenance by address on every 32-byte line that [p, p+n) touches (`op` is one of
   the DC*MVAC registers), completed before the doorbell that follows (DSB). */
static inline void pg_shm_cm_dcache(uint32_t op, const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(PG_SHM_CM_LINE - 1u), end = (uintptr_t)p + n;
    if (!n) return;
    PG_SHM_CM_DSB();
    for (; a < end; a += PG_SHM_CM_LINE) PG_SHM_MMIO_WR(op, a);
    PG_SHM_CM_DSB();
    PG_SHM_CM_ISB();
}

/* pg_shm's cache hooks for a Cortex-M7. invalidate is clean+invalidate: a line holds a dirty
   copy only if this core wrote it, and then writing it back is right where a plain
   invalidate would drop the write. */
static inline void pg_shm_cm_clean(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    pg_shm_cm_dcache(PG_SHM_CM_DCCMVAC, p, n);
}

static inline void pg_shm_cm_invalidate(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    pg_shm_cm_dcache(PG_SHM_CM_DCCIMVAC, p, n);
}

/* The alternative to the cache hooks: make [base, base + 2^log2size) Normal non-cacheable,
   shareable, execute-never with MPU region `region` (0-7 on every Armv7-M MPU; higher
   numbers win where regions overlap). base must be aligned to the size. On a Cortex-M7
   cached copies of the range are written back and dropped first. Returns 0, or -1 for a
   bad argument. */
static inline int pg_shm_cm_mpu_uncached(uint32_t region, const void *base, uint32_t log2size)
{
    uintptr_t b = (uintptr_t)base;
    if (region > 7u || log2size < 5u || log2size > 31u || (b & (((uintptr_t)1 << log2size) - 1u))) return -1;
    if (pg_shm_cm_partno() == PG_SHM_CM_M7) pg_shm_cm_dcache(PG_SHM_CM_DCCIMVAC, base, (size_t)1 << log2size);
    PG_SHM_MMIO_WR(PG_SHM_CM_MPU_RNR, region);
    PG_SHM_MMIO_WR(PG_SHM_CM_MPU_RBAR, b);
    /* XN, AP = full access, TEX = 1 C = 0 B = 0 (Normal, non-cacheable), S, SIZE, ENABLE */
    PG_SHM_MMIO_WR(PG_SHM_CM_MPU_RASR, 1u << 28 | 3u << 24 | 1u << 19 | 1u << 18 | (log2size - 1u) << 1 | 1u);
    PG_SHM_MMIO_WR(PG_SHM_CM_MPU_CTRL, PG_SHM_MMIO_RD(PG_SHM_CM_MPU_CTRL) | 5u);
    PG_SHM_CM_DSB();
    PG_SHM_CM_ISB();
    return 0;
}

#endif /* PG_SHM_CORTEX_M_H */
