/* sse200.h — pg_shm platform hooks for Arm's SSE-200 subsystem: two Cortex-M33, bare metal (splitcore)

   Boards: MPS2+ AN521 and MPS3 AN524 (QEMU mps2-an521 / mps3-an524 with -smp 2), Musca-B1
   (same subsystem, another memory map). Rank = CPU number (CPU_IDENTITY: 0 or 1); both
   cores run Secure with the SAU off. Sources: Arm CoreLink SSE-200 Subsystem for Embedded
   Technical Reference Manual (Arm 101104; "TRM"), Application Note AN521 (Arm DAI 0521),
   Armv8-M Architecture Reference Manual (Arm DDI 0553; "ARM"); checked on QEMU 7.2.
   - Doorbell: Message Handling Unit 0 (TRM, "Message Handling Unit"): writing 1 to
     CPU<n>INTR_SET (MHU0 + 0x04 + 0x10 n) raises a level interrupt on NVIC IRQ 6 of CPU n
     (TRM, interrupt map: MHU0 = IRQ 6, MHU1 = IRQ 7) that stays up until CPU<n>INTR_CLR is
     written. notify(core) is a DSB (the data before the doorbell) and that write; the
     receiving core's IRQ 6 handler calls pg_shm_sse200_mhu_isr(), which writes CLR and
     sets the core's `rung` flag.
   - wait(self): PRIMASK set; if `rung` is clear, DSB + WFI; `rung` cleared; PRIMASK back.
     WFI wakes on a pending interrupt even while PRIMASK masks it (ARM, "Wait For
     Interrupt"), so a doorbell rung after the check is not lost: it wakes WFI, and its
     handler runs once PRIMASK is restored. SEV/WFE would latch a doorbell too, but QEMU
     does not model the event register (its WFE never sleeps). The tick is each core's own
     SysTick, every 1 ms, whose handler (pg_shm_sse200_systick_isr) counts periods.
   - now_us: periods x 1000 + the position of the SysTick counter (CLKSOURCE = 1: the CPU
     clock, 20 MHz on AN521, 32 MHz on AN524; SYST_CALIB reads NOREF there, so the board
     code passes the frequency). The counter reloads before the tick handler runs (which
     never runs while PRIMASK is set), so a pending tick (ICSR.PENDSTSET) counts as a
     period and a reload between two reads takes the later one; under QEMU the counter
     can even show the reload before the tick is pending, so the clock also holds its last
     value until the period is counted: it never steps back. It wraps modulo 2^32 us
     (periods x 1000 in uint32_t arithmetic), as pg_shm's contract allows. It is per core, and under QEMU's -icount it counts instructions:
     shift=0 runs 1000 instructions per us of guest time.
   - Caches: the SSE-200's CPU caches (TRM, "CPU_ICACHE") cache instructions only, so
     shared data is coherent: no cache hooks.
   - CPU1 starts held (TRM, "System control", CPUWAIT reset value 0x2). CPU0 releases it
     with pg_shm_sse200_release_cpu1(vectors): INITSVTOR1 = CPU1's vector table (without it
     CPU1 boots CPU0's table), then CPUWAIT bit 1 cleared. To restart CPU1 alone, CPU0
     holds it with pg_shm_sse200_hold_cpu1() (CPUWAIT bit 1 set: it takes effect at CPU1's
     next reset, e.g. one through its PPU or a watchdog; a running core goes on running),
     resets it, and releases it again: CPU1 then boots from the table in INITSVTOR1 (its
     initial MSP and reset vector) and its start-up calls pg_shm_init() to re-attach.
     QEMU 7.2 models CPUWAIT and INITSVTOR1 but resets no running core alone (a CPUWAIT
     1 -> 0 only powers on a core that is off; the PPUs are not modelled), so its tests
     emulate the reset pulse itself (tests/target/sse200_smp/start.c).
   - Region placement: the SSE-200's internal SRAM, 4 banks of 32 KB at 0x20000000 (Secure
     alias 0x30000000) on both AN521 and AN524 (AN521, "Memory map"), every core maps at
     the same address. Put the region in an output section of its own marked NOLOAD and
     outside .bss, so the C start-up's zeroing (and a restarted core's) never touches it:
     pg_shm_format() writes it.

   Each core, with interrupts enabled (PRIMASK clear outside wait()), after its vector
   table routes SysTick to pg_shm_sse200_systick_isr(&sse) and IRQ 6 (MHU0) to
   pg_shm_sse200_mhu_isr(&sse):
       static pg_shm_sse200 sse;                      // .bss, zeroed before CPU1 starts
       pg_shm_hooks h;
       pg_shm_sse200_hooks(&h, &sse, 20000000u);      // AN521: 20 MHz
       pg_shm_init(&shm[pg_shm_sse200_cpu()], region, sizeof region, pg_shm_sse200_cpu(), &h);

   Everything here is static inline. Needs a Cortex-M33 (Armv8-M Mainline; any FPU or
   none: shared code builds with -mcpu=cortex-m33+nodsp -mfloat-abi=soft, since AN521's
   CPU0 has neither FPU nor DSP). */
#ifndef PG_SHM_SSE200_H
#define PG_SHM_SSE200_H

#include <stdint.h>
#include <string.h>
#include "../pg_shm.h"

#ifndef PG_SHM_SSE200_MHU
#define PG_SHM_SSE200_MHU 0x50003000u /* MHU0, Secure alias */
#endif
#ifndef PG_SHM_SSE200_MHU_IRQ
#define PG_SHM_SSE200_MHU_IRQ 6u /* NVIC input of MHU0 on each CPU */
#endif
#ifndef PG_SHM_SSE200_SYSCTL
#define PG_SHM_SSE200_SYSCTL 0x50021000u /* System control registers, Secure */
#endif
#ifndef PG_SHM_SSE200_CPU_IDENTITY
#define PG_SHM_SSE200_CPU_IDENTITY 0x4001F000u
#endif
#define PG_SHM_SSE200_CORES 2

#define PG_SHM_SSE200__REG(a)         (*(volatile uint32_t *)(uintptr_t)(a))
#define PG_SHM_SSE200__MHU_SET(c)     PG_SHM_SSE200__REG(PG_SHM_SSE200_MHU + 0x04u + 0x10u * (uint32_t)(c))
#define PG_SHM_SSE200__MHU_STAT(c)    PG_SHM_SSE200__REG(PG_SHM_SSE200_MHU + 0x00u + 0x10u * (uint32_t)(c))
#define PG_SHM_SSE200__MHU_CLR(c)     PG_SHM_SSE200__REG(PG_SHM_SSE200_MHU + 0x08u + 0x10u * (uint32_t)(c))
#define PG_SHM_SSE200__INITSVTOR1     PG_SHM_SSE200__REG(PG_SHM_SSE200_SYSCTL + 0x114u)
#define PG_SHM_SSE200__CPUWAIT        PG_SHM_SSE200__REG(PG_SHM_SSE200_SYSCTL + 0x118u)
#define PG_SHM_SSE200__SYST_CSR       PG_SHM_SSE200__REG(0xE000E010u)
#define PG_SHM_SSE200__SYST_RVR       PG_SHM_SSE200__REG(0xE000E014u)
#define PG_SHM_SSE200__SYST_CVR       PG_SHM_SSE200__REG(0xE000E018u)
#define PG_SHM_SSE200__ICSR           PG_SHM_SSE200__REG(0xE000ED04u)
#define PG_SHM_SSE200__ICSR_PENDSTSET (1u << 26)
#define PG_SHM_SSE200__NVIC_ISER(i)   PG_SHM_SSE200__REG(0xE000E100u + 4u * ((uint32_t)(i) >> 5))

/* One core's state: written only by that core (its handlers and its own hook calls). */
typedef struct pg_shm_sse200_core {
    volatile uint32_t rung;  /* a doorbell arrived since the last wait() */
    volatile uint32_t ticks; /* SysTick periods (ms) counted by the handler */
    uint32_t per_us;         /* SysTick counts per microsecond (CPU clock / 10^6) */
    uint32_t last_us;        /* now_us()'s last value on this core */
} pg_shm_sse200_core;

typedef struct pg_shm_sse200 {
    pg_shm_sse200_core core[PG_SHM_SSE200_CORES];
} pg_shm_sse200;

/* This CPU's number (CPU_IDENTITY; TRM, "CPU Identity"). */
static inline uint32_t pg_shm_sse200_cpu(void)
{
    return PG_SHM_SSE200__REG(PG_SHM_SSE200_CPU_IDENTITY) & 1u;
}

static inline void pg_shm_sse200_notify(void *ctx, int core)
{
    (void)ctx;
    __asm__ volatile("dsb" ::: "memory");
    PG_SHM_SSE200__MHU_SET(core) = 1u;
}

static inline void pg_shm_sse200_wait(void *ctx, int self)
{
    pg_shm_sse200_core *c = &((pg_shm_sse200 *)ctx)->core[self & 1];
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask)::"memory");
    if (!c->rung) __asm__ volatile("dsb\n\twfi" ::: "memory");
    c->rung = 0;
    __asm__ volatile("msr primask, %0\n\tisb" ::"r"(primask) : "memory");
}

static inline uint32_t pg_shm_sse200_now_us(void *ctx)
{
    pg_shm_sse200_core *c = &((pg_shm_sse200 *)ctx)->core[pg_shm_sse200_cpu()];
    uint32_t t, v1, v2, pend, us, reload = PG_SHM_SSE200__SYST_RVR;
    do {
        t = c->ticks;
        v1 = PG_SHM_SSE200__SYST_CVR;
        pend = (PG_SHM_SSE200__ICSR & PG_SHM_SSE200__ICSR_PENDSTSET) != 0;
        v2 = PG_SHM_SSE200__SYST_CVR;
    } while (t != c->ticks); /* the handler ran meanwhile: read again */
    if (v2 > v1) {           /* reloaded between the two reads: the later read, with its period if seen */
        if (pend)
            t++;
        else
            v2 = v1;
    } else {
        t += pend; /* reloaded before the first read, period not counted yet */
        v2 = v1;
    }
    us = t * 1000u + (reload - v2) / c->per_us;
    /* The counter may show the reload before the tick is pending at all (QEMU raises it
       from a timer callback): hold the last value until the period is counted. */
    if ((int32_t)(us - c->last_us) < 0) us = c->last_us;
    c->last_us = us;
    return us;
}

/* Call from the core's IRQ 6 (MHU0) handler. */
static inline void pg_shm_sse200_mhu_isr(pg_shm_sse200 *s)
{
    uint32_t me = pg_shm_sse200_cpu();
    PG_SHM_SSE200__MHU_CLR(me) = PG_SHM_SSE200__MHU_STAT(me);
    s->core[me].rung = 1u;
}

/* Call from the core's SysTick handler. */
static inline void pg_shm_sse200_systick_isr(pg_shm_sse200 *s)
{
    s->core[pg_shm_sse200_cpu()].ticks++;
}

/* On each core: start its SysTick (1 ms period of the CPU clock `cpu_hz`, a multiple of
   1 MHz; left as it is when already running so), enable its MHU0 interrupt, enable
   interrupts (PRIMASK clear) and fill `h`. */
static inline void pg_shm_sse200_hooks(pg_shm_hooks *h, pg_shm_sse200 *s, uint32_t cpu_hz)
{
    pg_shm_sse200_core *c = &s->core[pg_shm_sse200_cpu()];
    uint32_t reload = cpu_hz / 1000u - 1u;
    c->per_us = cpu_hz / 1000000u;
    if ((PG_SHM_SSE200__SYST_CSR & 1u) == 0 || PG_SHM_SSE200__SYST_RVR != reload) {
        PG_SHM_SSE200__SYST_CSR = 0;
        PG_SHM_SSE200__SYST_RVR = reload;
        PG_SHM_SSE200__SYST_CVR = 0;
        PG_SHM_SSE200__SYST_CSR = 7u; /* CLKSOURCE (CPU clock) | TICKINT | ENABLE */
    }
    PG_SHM_SSE200__NVIC_ISER(PG_SHM_SSE200_MHU_IRQ) = 1u << (PG_SHM_SSE200_MHU_IRQ & 31u);
    __asm__ volatile("cpsie i" ::: "memory");
    memset(h, 0, sizeof *h);
    h->notify = pg_shm_sse200_notify;
    h->wait = pg_shm_sse200_wait;
    h->now_us = pg_shm_sse200_now_us;
    h->ctx = s;
}

/* CPU0: hold CPU1 (CPUWAIT bit 1). It takes effect at CPU1's next reset (through its PPU,
   a watchdog): CPU1 then waits there until pg_shm_sse200_release_cpu1(). A running CPU1
   is not stopped by it. */
static inline void pg_shm_sse200_hold_cpu1(void)
{
    PG_SHM_SSE200__CPUWAIT |= 2u;
    __asm__ volatile("dsb" ::: "memory");
}

/* CPU0: start CPU1 (at power-on, or after a reset under pg_shm_sse200_hold_cpu1()) at the
   vector table `vectors` (aligned to 128 bytes at least: VTOR), its initial MSP and reset
   vector. */
static inline void pg_shm_sse200_release_cpu1(const void *vectors)
{
    PG_SHM_SSE200__INITSVTOR1 = (uint32_t)(uintptr_t)vectors;
    __asm__ volatile("dsb" ::: "memory");
    PG_SHM_SSE200__CPUWAIT &= ~2u;
}

#endif /* PG_SHM_SSE200_H */
