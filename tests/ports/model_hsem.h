/* model_hsem.h — a behavioural model of the STM32H7 hardware semaphore (HSEM) for the port
   tests (splitcore tests; registers as ports/platform/stm32h7.h cites them from RM0399)

   32 semaphores, each free or locked by (COREID, PROCID). The bus master's COREID is 3 for
   core 0 (the Cortex-M7, CPU1) and 1 for core 1 (the Cortex-M4, CPU2). A read of RLR[n]
   locks a free semaphore for the reader (PROCID 0) and returns the semaphore either way; a
   write to R[n] with LOCK set locks a free one (2-step), with LOCK clear unlocks one whose
   COREID and PROCID match, which frees it and sets its status bit on both interrupt lines.
   Line i (CPU1 / CPU2) has IER, ICR (write 1 to clear status), ISR and MISR = ISR & IER; the
   M7's HSEM1 (IRQ 125) is high while MISR of line 0 is not 0, the M4's HSEM2 (IRQ 126) for
   line 1. */
#ifndef PGM_MODEL_HSEM_H
#define PGM_MODEL_HSEM_H

#include "model.h"

typedef struct pgm_hsem {
    uint32_t r[32], ier[2], isr[2];
    uint64_t frees, busy;
} pgm_hsem;

static inline uint32_t pgm_hsem__coreid(int core)
{
    return core == 0 ? 3u : 1u;
}

static inline void pgm_hsem__lines(pgm_hsem *h)
{
    pgm_set_line(0, 125, (h->isr[0] & h->ier[0]) != 0);
    pgm_set_line(1, 126, (h->isr[1] & h->ier[1]) != 0);
}

static inline uint32_t pgm_hsem__rd(void *st, int core, uintptr_t off)
{
    pgm_hsem *h = (pgm_hsem *)st;
    uint32_t n = (uint32_t)(off >> 2) & 31u;
    if (off < 0x80u) return h->r[n];
    if (off < 0x100u) { /* RLR: 1-step lock */
        if (!(h->r[n] >> 31))
            h->r[n] = 1u << 31 | pgm_hsem__coreid(core) << 8;
        else
            h->busy++;
        return h->r[n];
    }
    if (off >= 0x100u && off < 0x120u) {
        int line = (int)((off - 0x100u) >> 4);
        switch (off & 0xFu) {
        case 0x0: return h->ier[line];
        case 0x8: return h->isr[line];
        case 0xC: return h->isr[line] & h->ier[line];
        default: break;
        }
    }
    pgm_fatal("HSEM: read of an unmodelled register", off);
    return 0;
}

static inline void pgm_hsem__wr(void *st, int core, uintptr_t off, uintptr_t v)
{
    pgm_hsem *h = (pgm_hsem *)st;
    uint32_t w = (uint32_t)v, n = (uint32_t)(off >> 2) & 31u, who = pgm_hsem__coreid(core);
    if (off < 0x80u) {
        if ((w >> 8 & 0xFu) != who) return; /* another master's COREID: ignored */
        if (w >> 31) {                      /* 2-step lock */
            if (!(h->r[n] >> 31)) h->r[n] = w & (1u << 31 | 0xFFFu);
        } else if ((h->r[n] >> 31) && (h->r[n] & 0xFFFu) == (w & 0xFFFu)) {
            h->r[n] = 0;
            h->isr[0] |= 1u << n;
            h->isr[1] |= 1u << n;
            h->frees++;
        }
    } else if (off >= 0x100u && off < 0x120u && (off & 0xFu) == 0x0) {
        h->ier[(off - 0x100u) >> 4] = w;
    } else if (off >= 0x100u && off < 0x120u && (off & 0xFu) == 0x4) {
        h->isr[(off - 0x100u) >> 4] &= ~w;
    } else {
        pgm_fatal("HSEM: write to an unmodelled register", off);
    }
    pgm_hsem__lines(h);
}

static inline void pgm_hsem_setup(pgm_hsem *h)
{
    memset(h, 0, sizeof *h);
    pgm_add_periph(0x58026400u, 0x400u, pgm_hsem__rd, pgm_hsem__wr, h);
}

#endif /* PGM_MODEL_HSEM_H */
