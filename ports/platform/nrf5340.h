/* nrf5340.h — pg_shm platform hooks for the nRF5340 (application + network Cortex-M33),
   bare metal or nRF Connect SDK (splitcore)

   Rank 0 is the application core, rank 1 the network core; each runs its own image and
   says which it is (pg_shm_nrf5340_hooks' `rank`). Registers from the nRF5340 Product
   Specification (Nordic Semiconductor), chapter "IPC — Interprocessor communication": IPC at
   0x5002A000 on the application core (0x4002A000 Non-secure) and 0x41012000 on the network
   core; TASKS_SEND[n] 0x000 + 4n (triggers the channels set in SEND_CNF[n]), EVENTS_RECEIVE[n]
   0x100 + 4n (set when a channel of RECEIVE_CNF[n] is triggered, by either core; write 0 to
   clear), INTENSET 0x304 (bit n: EVENTS_RECEIVE[n]), SEND_CNF[n] 0x510 + 4n, RECEIVE_CNF[n]
   0x590 + 4n; the IPC interrupt is IRQ 42 on the application core and 18 on the network core
   (the ID column of the instantiation tables; IPC_IRQn in Nordic's MDK headers). Chapter "TIMER — Timer/counter": TIMER2 at
   0x50011000 (application, 0x40011000 Non-secure) and 0x41019000 (network); TASKS_START
   0x000, TASKS_STOP 0x004, TASKS_CLEAR 0x00C, TASKS_CAPTURE[n] 0x040 + 4n, MODE 0x504,
   BITMODE 0x508 (3: 32 bit), PRESCALER 0x510 (16 MHz / 2^4 = 1 MHz), CC[n] 0x540 + 4n.

   Doorbell: IPC channel PG_SHM_NRF5340_CH + rank rings that rank (default channels 14 and
   15, clear of channels 0 and 1 that Zephyr's default IPC service instance uses), through task and
   event of the same number. notify(core): DSB, TASKS_SEND[ch(core)] = 1 (an event already
   set stays set: already rung). The receiver's IPC interrupt calls pg_shm_nrf5340_isr():
   clear EVENTS_RECEIVE[ch(rank)] (read back, so the write has landed before the handler
   returns and the interrupt does not fire again), set the pending flag. wait():
   pg_shm_cm_sleep (cortex_m.h); a ~1 ms SysTick per core ends a wait without a doorbell
   (pg_shm_cm_tick_start, or the RTOS's). now_us: TIMER2 at 1 MHz, 32 bit, captured into
   CC[PG_SHM_NRF5340_CC]: wraps modulo 2^32 (TIMER0/1 of the network core are often the
   radio's; PG_SHM_NRF5340_TIMER_APP / _NET move it). No data cache on either core (the
   application core's CACHE serves flash): both cache hooks stay NULL.

   Region: application-core SRAM (e.g. 0x20070000, as Zephyr's IPC shared memory), which
   the network core reaches at the same address; the network core is a Non-secure bus
   master, so the application core's SPU must make that RAM region Non-secure.

   Boot and restart: the application core formats the region, then releases the network
   core (RESET.NETWORK.FORCEOFF = 0, 0x50005614); pg_shm_init on the network core also waits
   for the format. Forcing the network core off and releasing it again restarts it; it
   attaches again and clears its stale event.

   Use (on each core; IPC_IRQHandler calls the ISR):
       static pg_shm_nrf5340 bell;                           // per core (per image)
       void IPC_IRQHandler(void) { pg_shm_nrf5340_isr(&bell); }
       pg_shm_hooks h;  pg_shm_nrf5340_hooks(&h, &bell, rank); // 0 application, 1 network
       pg_shm_init(&shm, region, sizeof region, rank, &h);

   Everything is static inline. For the host models: PG_SHM_MMIO_RD/WR, PG_SHM_CM_*. */
#ifndef PG_SHM_NRF5340_H
#define PG_SHM_NRF5340_H

#include "cortex_m.h"

#ifndef PG_SHM_NRF5340_CH
#define PG_SHM_NRF5340_CH 14u /* channels CH (application) and CH + 1 (network) */
#endif
#ifndef PG_SHM_NRF5340_CC
#define PG_SHM_NRF5340_CC 0u
#endif
#ifndef PG_SHM_NRF5340_IPC_APP
#define PG_SHM_NRF5340_IPC_APP 0x5002A000u /* 0x4002A000 from Non-secure code */
#endif
#ifndef PG_SHM_NRF5340_TIMER_APP
#define PG_SHM_NRF5340_TIMER_APP 0x50011000u /* TIMER2; 0x40011000 Non-secure */
#endif
#define PG_SHM_NRF5340_IPC_NET   0x41012000u
#define PG_SHM_NRF5340_TIMER_NET 0x41019000u /* TIMER2 */
#define PG_SHM_NRF5340_IRQ(rank) ((rank) ? 18u : 42u)

typedef struct pg_shm_nrf5340 {
    pg_shm_cm_core core; /* the pending flag this core's IPC interrupt sets, its rank */
    uint32_t ipc, timer; /* this core's IPC and TIMER2 */
} pg_shm_nrf5340;

/* From this core's IPC_IRQHandler. */
static inline void pg_shm_nrf5340_isr(pg_shm_nrf5340 *b)
{
    uint32_t event = b->ipc + 0x100u + 4u * (PG_SHM_NRF5340_CH + b->core.rank);
    if (PG_SHM_MMIO_RD(event)) {
        PG_SHM_MMIO_WR(event, 0u);
        (void)PG_SHM_MMIO_RD(event);
        b->core.pending = 1u;
    }
}

static inline void pg_shm_nrf5340_notify(void *ctx, int core)
{
    pg_shm_nrf5340 *b = (pg_shm_nrf5340 *)ctx;
    if ((uint32_t)core == b->core.rank) return;
    PG_SHM_CM_DSB(); /* the published index before the doorbell */
    PG_SHM_MMIO_WR(b->ipc + 4u * (PG_SHM_NRF5340_CH + (uint32_t)core), 1u);
}

static inline uint32_t pg_shm_nrf5340_now_us(void *ctx)
{
    pg_shm_nrf5340 *b = (pg_shm_nrf5340 *)ctx;
    PG_SHM_MMIO_WR(b->timer + 0x040u + 4u * PG_SHM_NRF5340_CC, 1u);
    return PG_SHM_MMIO_RD(b->timer + 0x540u + 4u * PG_SHM_NRF5340_CC);
}

/* On each core: route both channels, enable this core's receive event and IPC interrupt,
   start the 1 MHz timer, fill `h`. rank: 0 application core, 1 network core. */
static inline void pg_shm_nrf5340_hooks(pg_shm_hooks *h, pg_shm_nrf5340 *b, uint32_t rank)
{
    uint32_t ch = PG_SHM_NRF5340_CH + (rank & 1u), c;
    b->core.rank = rank & 1u;
    b->core.pending = 0u;
    b->ipc = b->core.rank ? PG_SHM_NRF5340_IPC_NET : PG_SHM_NRF5340_IPC_APP;
    b->timer = b->core.rank ? PG_SHM_NRF5340_TIMER_NET : PG_SHM_NRF5340_TIMER_APP;
    for (c = PG_SHM_NRF5340_CH; c < PG_SHM_NRF5340_CH + 2u; c++)
        PG_SHM_MMIO_WR(b->ipc + 0x510u + 4u * c, 1u << c); /* task c sends on channel c */
    PG_SHM_MMIO_WR(b->ipc + 0x590u + 4u * ch, 1u << ch);   /* channel ch sets event ch */
    PG_SHM_MMIO_WR(b->ipc + 0x100u + 4u * ch, 0u);
    PG_SHM_MMIO_WR(b->ipc + 0x304u, 1u << ch);
    pg_shm_cm_irq_enable(PG_SHM_NRF5340_IRQ(b->core.rank));
    PG_SHM_MMIO_WR(b->timer + 0x004u, 1u);
    PG_SHM_MMIO_WR(b->timer + 0x504u, 0u);
    PG_SHM_MMIO_WR(b->timer + 0x508u, 3u);
    PG_SHM_MMIO_WR(b->timer + 0x510u, 4u);
    PG_SHM_MMIO_WR(b->timer + 0x00Cu, 1u);
    PG_SHM_MMIO_WR(b->timer + 0x000u, 1u);
    pg_shm_cm_hooks(h, pg_shm_nrf5340_notify, pg_shm_cm_core_wait, pg_shm_nrf5340_now_us, b);
}

#endif /* PG_SHM_NRF5340_H */
