/* rp2350.h — pg_shm platform hooks for the RP2350 (2 x Cortex-M33), bare metal or pico-sdk
   (splitcore)

   Rank = core number (SIO CPUID). Registers from the RP2350 Datasheet (Raspberry Pi Ltd),
   3.1 "SIO" (Secure SIO at 0xd0000000; the Non-secure one at 0xd0020000 has the same
   layout): CPUID 0x000; the doorbells, 8 per core: DOORBELL_OUT_SET 0x180 (write 1s: set
   those bits of the other core's DOORBELL_IN, which raises its doorbell interrupt),
   DOORBELL_IN_CLR 0x18c (read: this core's doorbells; write 1s: clear them; the interrupt
   deasserts once all are clear); SIO_IRQ_BELL is IRQ 26 on each core for its own doorbells
   (IRQ 28 for the Non-secure SIO; 3.2 "Interrupts"). Chapter "System Timers": TIMER0 at
   0x400b0000, TIMERAWL 0x028, the low word of the 1 MHz 64-bit count (its tick comes from
   the "Tick generators", which pico-sdk's runtime sets to 1 MHz).

   Doorbell: one doorbell bit, the same on both cores, passed to pg_shm_rp2350_hooks (with
   pico-sdk: multicore_doorbell_claim_unused(0x3, true)). Unlike the RP2040's FIFO it is
   nobody else's: pico-sdk's multicore_lockout and FreeRTOS SMP keep the FIFO. notify(core):
   DSB, then DOORBELL_OUT_SET = bit (setting a set bit is harmless: already rung). The
   receiving core's SIO_IRQ_BELL calls pg_shm_rp2350_isr(): if the bit is set, clear it and
   set the pending flag (other doorbell bits stay for their own handlers, so the handler
   may be shared). wait(): pg_shm_cm_sleep (cortex_m.h), so a doorbell rung before the sleep
   is not lost; a ~1 ms SysTick per core ends a wait without one (pg_shm_cm_tick_start or
   the SDK's). now_us: TIMERAWL, wrapping modulo 2^32. No data cache (XIP cache only): both
   cache hooks stay NULL.

   Boot and restart: core 1 is started through the FIFO (multicore_launch_core1); the
   doorbells are independent of it. Attach on core 1 after it runs; a restarted core clears
   its stale doorbell when it attaches again. The region is any SRAM (0x20000000), at the
   same address for both cores. (The RP2350's Hazard3 RISC-V cores are not covered here.)

   Use (each core; the SIO_IRQ_BELL handler calls the ISR):
       static pg_shm_rp2350 bells;                          // shared, zeroed
       void bell_irq(void) { pg_shm_rp2350_isr(&bells); }    // irq_set_exclusive_handler(SIO_IRQ_BELL, ...)
       pg_shm_hooks h;  pg_shm_rp2350_hooks(&h, &bells, doorbell);  pg_shm_cm_tick_start(150000000u);
       pg_shm_init(&shm, region, sizeof region, (int)pg_shm_rp2350_core(), &h);

   Everything is static inline; include this file in one .c file. For the host models:
   PG_SHM_MMIO_RD/WR and PG_SHM_CM_* (cortex_m.h). */
#ifndef PG_SHM_RP2350_H
#define PG_SHM_RP2350_H

#include "cortex_m.h"

#ifndef PG_SHM_RP2350_SIO
#define PG_SHM_RP2350_SIO 0xd0000000u /* 0xd0020000 (and IRQ 28) from Non-secure code */
#endif
#ifndef PG_SHM_RP2350_IRQ
#define PG_SHM_RP2350_IRQ 26u
#endif
#ifndef PG_SHM_RP2350_TIMERAWL
#define PG_SHM_RP2350_TIMERAWL (0x400b0000u + 0x028u)
#endif
#define PG_SHM_RP2350_CPUID    (PG_SHM_RP2350_SIO + 0x000u)
#define PG_SHM_RP2350_BELL_OUT (PG_SHM_RP2350_SIO + 0x180u) /* DOORBELL_OUT_SET */
#define PG_SHM_RP2350_BELL_IN  (PG_SHM_RP2350_SIO + 0x18cu) /* DOORBELL_IN_CLR */

typedef struct pg_shm_rp2350 {
    volatile uint32_t pending[2]; /* set by core n's doorbell interrupt */
    uint32_t bit;                 /* 1 << the doorbell number */
} pg_shm_rp2350;

static inline uint32_t pg_shm_rp2350_core(void)
{
    return PG_SHM_MMIO_RD(PG_SHM_RP2350_CPUID) & 1u;
}

/* From each core's SIO_IRQ_BELL handler. */
static inline void pg_shm_rp2350_isr(pg_shm_rp2350 *b)
{
    if (PG_SHM_MMIO_RD(PG_SHM_RP2350_BELL_IN) & b->bit) {
        PG_SHM_MMIO_WR(PG_SHM_RP2350_BELL_IN, b->bit);
        b->pending[pg_shm_rp2350_core()] = 1u;
    }
}

static inline void pg_shm_rp2350_notify(void *ctx, int core)
{
    if ((uint32_t)core == pg_shm_rp2350_core()) return;
    PG_SHM_CM_DSB(); /* the published index before the doorbell */
    PG_SHM_MMIO_WR(PG_SHM_RP2350_BELL_OUT, ((pg_shm_rp2350 *)ctx)->bit);
}

static inline void pg_shm_rp2350_wait(void *ctx, int self)
{
    pg_shm_cm_sleep(&((pg_shm_rp2350 *)ctx)->pending[self & 1]);
}

static inline uint32_t pg_shm_rp2350_now_us(void *ctx)
{
    (void)ctx;
    return PG_SHM_MMIO_RD(PG_SHM_RP2350_TIMERAWL);
}

/* On each core: clear a stale doorbell, enable SIO_IRQ_BELL, fill `h`. doorbell: 0..7. */
static inline void pg_shm_rp2350_hooks(pg_shm_hooks *h, pg_shm_rp2350 *b, uint32_t doorbell)
{
    b->bit = 1u << (doorbell & 7u);
    PG_SHM_MMIO_WR(PG_SHM_RP2350_BELL_IN, b->bit);
    b->pending[pg_shm_rp2350_core()] = 0u;
    pg_shm_cm_irq_enable(PG_SHM_RP2350_IRQ);
    pg_shm_cm_hooks(h, pg_shm_rp2350_notify, pg_shm_rp2350_wait, pg_shm_rp2350_now_us, b);
}

#endif /* PG_SHM_RP2350_H */
