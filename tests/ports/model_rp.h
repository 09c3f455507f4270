/* model_rp.h — behavioural models of the RP2040 / RP2350 SIO and TIMER for the port tests
   (splitcore tests; registers as ports/platform/rp2040.h and rp2350.h cite them)

   SIO (one block, seen by each core with its own CPUID):
   - inter-core FIFOs: 8 words each way; FIFO_ST reads VLD (this core's RX not empty), RDY
     (its TX not full), WOF / ROE (sticky: written when full / read when empty; a write of
     the bit clears it); a write to a full FIFO is dropped and sets WOF, a read of an empty
     one returns 0 and sets ROE. RP2040: SIO_IRQ_PROCn (IRQ 15 + n, wired to both NVICs) is
     VLD | WOF | ROE of core n. RP2350: SIO_IRQ_FIFO (IRQ 25) is each core's own.
   - RP2350 doorbells: 8 bits per core; DOORBELL_OUT_SET / _CLR set / clear bits of the other
     core's DOORBELL_IN, DOORBELL_IN_SET / _CLR this core's own (reads: the status of the
     core the register names); SIO_IRQ_BELL (IRQ 26, per core) is high while any bit is set.
   TIMER: TIMERAWL / TIMERAWH count microseconds from PGM_WRAP_US before the low word wraps. */
#ifndef PGM_MODEL_RP_H
#define PGM_MODEL_RP_H

#include "model.h"

typedef struct pgm_sio {
    int rp2350;
    uint32_t fifo[2][8], head[2], count[2], wof[2], roe[2]; /* fifo[c]: core c's RX */
    uint32_t bell[2];                                       /* DOORBELL_IN of core c */
    uint64_t pushes, full, bells;
} pgm_sio;

static inline void pgm_sio__lines(pgm_sio *s)
{
    int c, k;
    for (c = 0; c < 2; c++) {
        int fifo = s->count[c] || s->wof[c] || s->roe[c];
        if (s->rp2350) {
            pgm_set_line(c, 25, fifo);
            pgm_set_line(c, 26, s->bell[c] != 0);
        } else {
            for (k = 0; k < 2; k++) pgm_set_line(k, 15 + c, fifo);
        }
    }
}

static inline uint32_t pgm_sio__rd(void *st, int c, uintptr_t off)
{
    pgm_sio *s = (pgm_sio *)st;
    uint32_t v = 0;
    switch (off) {
    case 0x000: return (uint32_t)c;
    case 0x050: return (s->count[c] ? 1u : 0u) | (s->count[1 - c] < 8u ? 2u : 0u) | s->wof[c] << 2 | s->roe[c] << 3;
    case 0x058:
        if (!s->count[c]) {
            s->roe[c] = 1;
        } else {
            v = s->fifo[c][s->head[c]];
            s->head[c] = (s->head[c] + 1u) & 7u;
            s->count[c]--;
        }
        pgm_sio__lines(s);
        return v;
    }
    if (s->rp2350 && off >= 0x180 && off < 0x190) return s->bell[off >= 0x188 ? c : 1 - c];
    pgm_fatal("SIO: read of an unmodelled register", off);
    return 0;
}

static inline void pgm_sio__wr(void *st, int c, uintptr_t off, uintptr_t v)
{
    pgm_sio *s = (pgm_sio *)st;
    uint32_t w = (uint32_t)v;
    int o = 1 - c;
    if (off == 0x050) {
        if (w & 4u) s->wof[c] = 0;
        if (w & 8u) s->roe[c] = 0;
    } else if (off == 0x054) {
        if (s->count[o] == 8u) {
            s->wof[c] = 1;
            s->full++;
        } else {
            s->fifo[o][(s->head[o] + s->count[o]) & 7u] = w;
            s->count[o]++;
            s->pushes++;
        }
    } else if (s->rp2350 && off >= 0x180 && off < 0x190) {
        uint32_t *in = &s->bell[off >= 0x188 ? c : o];
        if (off == 0x180 || off == 0x188) {
            *in |= w & 0xFFu;
            s->bells++;
        } else {
            *in &= ~w;
        }
    } else {
        pgm_fatal("SIO: write to an unmodelled register", off);
    }
    pgm_sio__lines(s);
}

static inline uint32_t pgm_timer__rd(void *st, int c, uintptr_t off)
{
    uint64_t us = (pgm_now_ns() - pgm.t0) / 1000u + 0x100000000ull - PGM_WRAP_US;
    (void)st;
    (void)c;
    if (off == 0x028) return (uint32_t)us;
    if (off == 0x024) return (uint32_t)(us >> 32);
    pgm_fatal("TIMER: read of an unmodelled register", off);
    return 0;
}

static inline void pgm_timer__wr(void *st, int c, uintptr_t off, uintptr_t v)
{
    (void)st;
    (void)c;
    (void)v;
    pgm_fatal("TIMER: write", off);
}

/* Register the SIO at 0xd0000000 and the TIMER at `timer_base` (RP2040 0x40054000, RP2350
   TIMER0 0x400b0000). */
static inline void pgm_rp_setup(pgm_sio *s, int rp2350, uintptr_t timer_base)
{
    memset(s, 0, sizeof *s);
    s->rp2350 = rp2350;
    pgm_add_periph(0xd0000000u, 0x200u, pgm_sio__rd, pgm_sio__wr, s);
    pgm_add_periph(timer_base, 0x100u, pgm_timer__rd, pgm_timer__wr, NULL);
}

#endif /* PGM_MODEL_RP_H */
