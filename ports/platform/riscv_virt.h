/* riscv_virt.h — pg_shm platform hooks for QEMU's RISC-V "virt" board, bare metal (splitcore)

   Cores are harts in M-mode. The doorbell is the CLINT's machine software interrupt:
   notify(core) writes 1 to msip[core] (0x2000000 + 4*hart); wait() arms the hart's timer
   for one tick (mtimecmp = mtime + PG_SHM_RV_TICK), sleeps in `wfi` and clears its own msip.
   Interrupts are enabled in `mie` only (MSIE, MTIE) with mstatus.MIE off, so `wfi` wakes on a
   pending doorbell or tick without trapping, and a doorbell rung before `wfi` stays pending
   (it is not lost). now_us() reads mtime (0x200BFF8, 10 MHz on virt). The caches of virt are
   coherent: no cache hooks. Call pg_shm_rv_hooks() on every hart (it sets mie).

   Other boards with a CLINT (SiFive, K210, ...) work the same: adjust the addresses and
   PG_SHM_RV_MTIME_HZ. */
#ifndef PG_SHM_RISCV_VIRT_H
#define PG_SHM_RISCV_VIRT_H

#include <stdint.h>
#include <string.h>
#include "../pg_shm.h"

#ifndef PG_SHM_RV_CLINT
#define PG_SHM_RV_CLINT 0x2000000u
#endif
#ifndef PG_SHM_RV_MTIME_HZ
#define PG_SHM_RV_MTIME_HZ 10000000u
#endif
#ifndef PG_SHM_RV_TICK
#define PG_SHM_RV_TICK (PG_SHM_RV_MTIME_HZ / 1000u) /* 1 ms */
#endif

#define PG_SHM_RV__MSIP(h)     ((volatile uint32_t *)(uintptr_t)(PG_SHM_RV_CLINT + 4u * (uint32_t)(h)))
#define PG_SHM_RV__MTIMECMP(h) ((volatile uint32_t *)(uintptr_t)(PG_SHM_RV_CLINT + 0x4000u + 8u * (uint32_t)(h)))
#define PG_SHM_RV__MTIME       ((volatile uint32_t *)(uintptr_t)(PG_SHM_RV_CLINT + 0xBFF8u))

static inline uint64_t pg_shm_rv_mtime(void)
{
    uint32_t hi, lo;
    do {
        hi = PG_SHM_RV__MTIME[1];
        lo = PG_SHM_RV__MTIME[0];
    } while (hi != PG_SHM_RV__MTIME[1]);
    return (uint64_t)hi << 32 | lo;
}

static inline uint32_t pg_shm_rv_now_us(void *ctx)
{
    (void)ctx;
    return (uint32_t)(pg_shm_rv_mtime() / (PG_SHM_RV_MTIME_HZ / 1000000u));
}

static inline void pg_shm_rv_notify(void *ctx, int core)
{
    (void)ctx;
    __asm__ volatile("fence rw, rw" ::: "memory");
    *PG_SHM_RV__MSIP(core) = 1u;
}

static inline void pg_shm_rv_wait(void *ctx, int self)
{
    uint64_t t = pg_shm_rv_mtime() + PG_SHM_RV_TICK;
    volatile uint32_t *cmp = PG_SHM_RV__MTIMECMP(self);
    (void)ctx;
    cmp[1] = 0xFFFFFFFFu; /* no spurious match while the halves change */
    cmp[0] = (uint32_t)t;
    cmp[1] = (uint32_t)(t >> 32);
    __asm__ volatile("wfi" ::: "memory");
    *PG_SHM_RV__MSIP(self) = 0u;
    __asm__ volatile("fence rw, rw" ::: "memory");
}

/* Fill `h`; enables MSIE|MTIE in mie (mstatus.MIE stays as it is: keep it 0). */
static inline void pg_shm_rv_hooks(pg_shm_hooks *h)
{
    __asm__ volatile("csrs mie, %0" ::"r"((1u << 3) | (1u << 7)));
    memset(h, 0, sizeof *h);
    h->notify = pg_shm_rv_notify;
    h->wait = pg_shm_rv_wait;
    h->now_us = pg_shm_rv_now_us;
}

#endif /* PG_SHM_RISCV_VIRT_H */
