/* model_mu.h — a behavioural model of the i.MX RT1170 Messaging Unit's general-purpose
   interrupts for the port tests (splitcore tests; registers as ports/platform/imxrt1170.h
   cites them from IMXRT1170RM)

   Side A at 0x40C48000 (the Cortex-M7, core 0), side B at 0x40C4C000 (the Cortex-M4, core 1).
   Writing 1 to GIRn (CR bit 19 - n) of one side, while it is 0, latches GIPn (SR bit 31 - n)
   on the other side; GIRn reads 1 until the other side clears GIPn by writing 1 to it, and
   writing 0 to GIRn does nothing. The MU interrupt of a side (IRQ 118 on its core) is high
   while a GIPn is set whose GIEn (CR bit 31 - n) is set. SR reads the four TEn (transmit
   registers empty) bits set; the message registers are not modelled. */
#ifndef PGM_MODEL_MU_H
#define PGM_MODEL_MU_H

#include "model.h"

typedef struct pgm_mu {
    uint32_t gip[2], cr[2]; /* gip: bits 31:28 of SR; cr: GIE 31:28 and GIR 19:16 */
    uint64_t requests, ignored;
} pgm_mu;

static inline void pgm_mu__lines(pgm_mu *m)
{
    int s;
    for (s = 0; s < 2; s++) pgm_set_line(s, 118, (m->gip[s] & m->cr[s] & 0xF0000000u) != 0);
}

static inline uint32_t pgm_mu__rd(void *st, int core, uintptr_t off)
{
    pgm_mu *m = (pgm_mu *)st;
    int s = off >= 0x4000u;
    (void)core;
    off &= 0xFFFu;
    if (off == 0x20u) return m->gip[s] | 0x00F00000u;
    if (off == 0x24u) return m->cr[s];
    pgm_fatal("MU: read of an unmodelled register", off);
    return 0;
}

static inline void pgm_mu__wr(void *st, int core, uintptr_t off, uintptr_t v)
{
    pgm_mu *m = (pgm_mu *)st;
    uint32_t w = (uint32_t)v, n;
    int s = off >= 0x4000u;
    (void)core;
    off &= 0xFFFu;
    if (off == 0x20u) { /* GIPn: write 1 to clear; the other side's GIRn then clears */
        uint32_t clr = w & m->gip[s] & 0xF0000000u;
        m->gip[s] &= ~clr;
        m->cr[1 - s] &= ~(clr >> 12);
    } else if (off == 0x24u) {
        for (n = 0; n < 4; n++) {
            uint32_t gir = 1u << (19 - n);
            if (!(w & gir)) continue;
            if (m->cr[s] & gir) {
                m->ignored++;
                continue;
            }
            m->cr[s] |= gir;
            m->gip[1 - s] |= 1u << (31 - n);
            m->requests++;
        }
        m->cr[s] = (m->cr[s] & 0x000F0000u) | (w & ~0x000F0000u);
    } else {
        pgm_fatal("MU: write to an unmodelled register", off);
    }
    pgm_mu__lines(m);
}

static inline void pgm_mu_setup(pgm_mu *m)
{
    memset(m, 0, sizeof *m);
    pgm_add_periph(0x40C48000u, 0x8000u, pgm_mu__rd, pgm_mu__wr, m);
}

#endif /* PGM_MODEL_MU_H */
