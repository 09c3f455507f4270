/* rp2040.h — pg_shm platform hooks for the RP2040 (2 x Cortex-M0+), bare metal or pico-sdk (splitcore)

   Rank = core number (SIO CPUID). Registers from the RP2040 Datasheet (Raspberry Pi Ltd):
   2.3.1 "SIO" at 0xd0000000 — CPUID 0x000, FIFO_ST 0x050 (VLD 1: RX not empty, RDY 2: TX
   not full, WOF 4 / ROE 8: sticky write-when-full / read-when-empty, cleared by a write),
   FIFO_WR 0x054, FIFO_RD 0x058; its "Inter-processor FIFOs (Mailboxes)": two 8-deep 32-bit
   FIFOs, one per direction, and SIO_IRQ_PROCn (IRQ 15 + n, 2.3.2 "Interrupts"), asserted on
   core n while its RX FIFO is not empty or ROE / WOF is set; 4.6 "Timer" at 0x40054000 —
   TIMERAWL 0x028, the low word of the 1 MHz 64-bit count (with the watchdog tick at 1 MHz,
   4.7 "Watchdog", which pico-sdk's runtime sets up).

   notify(core): DSB, then one word into the other core's FIFO if it has room (a full FIFO
   already means a doorbell is pending, so notify never blocks), then SEV. The receiving
   core's SIO_IRQ_PROCn calls pg_shm_rp2040_isr(): drain, clear the sticky flags, set the
   core's pending flag. wait(): pg_shm_cm_sleep on that flag (cortex_m.h: a doorbell rung
   before the sleep is not lost). A ~1 ms SysTick per core ends a wait without a doorbell
   (pg_shm_cm_tick_start, or the SDK's). now_us: TIMERAWL, wrapping modulo 2^32. No data
   cache (the XIP cache only caches flash): both cache hooks stay NULL.

   Sharing the FIFO: pico-sdk's multicore_lockout_victim_init() and the FreeRTOS-Kernel RP2040
   SMP port install their own exclusive SIO_IRQ_PROCn handler (drain; answer a lockout / yield).
   With PG_SHM_RP2040_SHARED_FIFO 1 pg_shm leaves the FIFO and that interrupt to them: notify
   is DSB + SEV, wait is WFE (the event register latches an SEV sent before WFE; any
   interrupt taken, SysTick's included, also wakes it). Their handlers sleep in WFE too and
   can absorb one of our SEVs; such a doorbell then costs one tick. (FreeRTOS SMP users take
   ports/platform/freertos.h: its task notifications cross cores through the kernel.)

   Boot and restart: the bootrom starts core 1 with a handshake over the FIFO
   (multicore_launch_core1): call pg_shm_rp2040_hooks() on core 0 only after the launch
   returned, on core 1 from its entry function. Before resetting core 1
   (multicore_reset_core1 / the PSM), call pg_shm_rp2040_detach() on core 0, or its handler
   eats the relaunch handshake; attach again after the relaunch. The region is any SRAM
   (striped 0x20000000 banks), at the same address for both cores.

   Use (each core, after core 1 runs; the SIO_IRQ_PROCn handler calls the ISR):
       static pg_shm_rp2040 bells;                        // shared, zeroed
       void sio_irq(void) { pg_shm_rp2040_isr(&bells); }   // irq_set_exclusive_handler(15 + core, sio_irq)
       pg_shm_hooks h;  pg_shm_rp2040_hooks(&h, &bells);  pg_shm_cm_tick_start(125000000u);
       pg_shm_init(&shm, region, sizeof region, (int)pg_shm_rp2040_core(), &h);

   Everything is static inline; include this file in one .c file (the pending flags live in
   the caller's pg_shm_rp2040). For the host models: PG_SHM_MMIO_RD/WR and PG_SHM_CM_*
   (cortex_m.h). */
#ifndef PG_SHM_RP2040_H
#define PG_SHM_RP2040_H

#include "cortex_m.h"

#ifndef PG_SHM_RP2040_SHARED_FIFO
#define PG_SHM_RP2040_SHARED_FIFO 0
#endif
#ifndef PG_SHM_RP2040_SIO
#define PG_SHM_RP2040_SIO 0xd0000000u
#endif
#ifndef PG_SHM_RP2040_TIMERAWL
#define PG_SHM_RP2040_TIMERAWL (0x40054000u + 0x028u)
#endif
#define PG_SHM_RP2040_CPUID     (PG_SHM_RP2040_SIO + 0x000u)
#define PG_SHM_RP2040_FIFO_ST   (PG_SHM_RP2040_SIO + 0x050u)
#define PG_SHM_RP2040_FIFO_WR   (PG_SHM_RP2040_SIO + 0x054u)
#define PG_SHM_RP2040_FIFO_RD   (PG_SHM_RP2040_SIO + 0x058u)
#define PG_SHM_RP2040_VLD       1u
#define PG_SHM_RP2040_RDY       2u
#define PG_SHM_RP2040_IRQ(core) (15u + (core))
#define PG_SHM_RP2040_TOKEN     0x70675348u /* "pgSH": any value serves, none is read back */

typedef struct pg_shm_rp2040 {
    volatile uint32_t pending[2]; /* set by core n's SIO interrupt */
} pg_shm_rp2040;

static inline uint32_t pg_shm_rp2040_core(void)
{
    return PG_SHM_MMIO_RD(PG_SHM_RP2040_CPUID) & 1u;
}

/* Empty this core's RX FIFO and clear WOF / ROE: the SIO interrupt deasserts. */
static inline void pg_shm_rp2040_drain(void)
{
    while (PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_ST) & PG_SHM_RP2040_VLD) (void)PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_RD);
    PG_SHM_MMIO_WR(PG_SHM_RP2040_FIFO_ST, 0xFFu);
}

/* From core n's SIO_IRQ_PROCn handler (exclusive mode). */
static inline void pg_shm_rp2040_isr(pg_shm_rp2040 *b)
{
    pg_shm_rp2040_drain();
    b->pending[pg_shm_rp2040_core()] = 1u;
}

static inline void pg_shm_rp2040_notify(void *ctx, int core)
{
    (void)ctx;
    if ((uint32_t)core == pg_shm_rp2040_core()) return;
    PG_SHM_CM_DSB(); /* the published index before the doorbell */
#if !PG_SHM_RP2040_SHARED_FIFO
    if (PG_SHM_MMIO_RD(PG_SHM_RP2040_FIFO_ST) & PG_SHM_RP2040_RDY)
        PG_SHM_MMIO_WR(PG_SHM_RP2040_FIFO_WR, PG_SHM_RP2040_TOKEN);
#endif
    PG_SHM_CM_SEV();
}

static inline void pg_shm_rp2040_wait(void *ctx, int self)
{
#if PG_SHM_RP2040_SHARED_FIFO
    (void)ctx;
    (void)self;
    PG_SHM_CM_WFE();
#else
    pg_shm_cm_sleep(&((pg_shm_rp2040 *)ctx)->pending[self & 1]);
#endif
}

static inline uint32_t pg_shm_rp2040_now_us(void *ctx)
{
    (void)ctx;
    return PG_SHM_MMIO_RD(PG_SHM_RP2040_TIMERAWL);
}

/* On each core: fill `h`; in exclusive mode also empty the FIFO and enable SIO_IRQ_PROCn. */
static inline void pg_shm_rp2040_hooks(pg_shm_hooks *h, pg_shm_rp2040 *b)
{
#if !PG_SHM_RP2040_SHARED_FIFO
    uint32_t me = pg_shm_rp2040_core();
    pg_shm_rp2040_drain();
    b->pending[me] = 0u;
    pg_shm_cm_irq_enable(PG_SHM_RP2040_IRQ(me));
#endif
    pg_shm_cm_hooks(h, pg_shm_rp2040_notify, pg_shm_rp2040_wait, pg_shm_rp2040_now_us, b);
}

/* Hand the FIFO back (before multicore_reset_core1 / relaunching core 1). */
static inline void pg_shm_rp2040_detach(void)
{
#if !PG_SHM_RP2040_SHARED_FIFO
    pg_shm_cm_irq_disable(PG_SHM_RP2040_IRQ(pg_shm_rp2040_core()));
#endif
}

#endif /* PG_SHM_RP2040_H */
