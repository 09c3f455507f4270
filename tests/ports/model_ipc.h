/* model_ipc.h — behavioural models of the nRF5340 IPC and TIMER for the port tests
   (splitcore tests; registers as ports/platform/nrf5340.h cites them)

   IPC: one instance per core (application 0x5002A000 for core 0, network 0x41012000 for
   core 1) over 16 channels both share. TASKS_SEND[n] triggers the channels set in that
   instance's SEND_CNF[n]; every instance, the sender's own included, then sets
   EVENTS_RECEIVE[m] for each m whose RECEIVE_CNF[m] has one of those channels. Events are
   cleared by writing 0; the IPC interrupt of a core (IRQ 42 application, 18 network) is high
   while an event enabled in INTEN is set. An instance accessed by the other core aborts the
   test (each core sees only its own IPC at these addresses).
   TIMER (TIMER2: 0x50011000 application, 0x41019000 network), timer mode: counts 16 MHz /
   2^PRESCALER from TASKS_CLEAR, in BITMODE's width, starting PGM_WRAP_US before the 32-bit wrap;
   TASKS_CAPTURE[n] copies the count to CC[n]. */
#ifndef PGM_MODEL_IPC_H
#define PGM_MODEL_IPC_H

#include "model.h"

typedef struct pgm_ipc {
    uint32_t send_cnf[2][16], receive_cnf[2][16], events[2][16], inten[2];
    uint64_t sends;
    struct pgm_ipc_port {
        struct pgm_ipc *ipc;
        int k; /* the core whose instance this address range is */
    } port[2];
} pgm_ipc;

typedef struct pgm_nrf_timer {
    uint32_t running, prescaler, bitmode, cc[6];
    uint64_t t0;
    int core; /* the core whose TIMER2 this is */
} pgm_nrf_timer;

static inline int pgm_ipc__instance(void *st, int core, pgm_ipc **p)
{
    struct pgm_ipc_port *port = (struct pgm_ipc_port *)st;
    if (port->k != core) pgm_fatal("IPC: instance of the other core", (uintptr_t)port->k);
    *p = port->ipc;
    return port->k;
}

static inline void pgm_ipc__lines(pgm_ipc *p)
{
    int k, m, level;
    for (k = 0; k < 2; k++) {
        for (level = 0, m = 0; m < 16; m++) level |= p->events[k][m] && (p->inten[k] >> m & 1u);
        pgm_set_line(k, k ? 18 : 42, level);
    }
}

static inline uint32_t pgm_ipc__rd(void *st, int core, uintptr_t off)
{
    pgm_ipc *p;
    int k = pgm_ipc__instance(st, core, &p);
    if (off >= 0x100u && off < 0x140u) return p->events[k][(off - 0x100u) >> 2];
    if (off == 0x300u || off == 0x304u || off == 0x308u) return p->inten[k];
    if (off >= 0x510u && off < 0x550u) return p->send_cnf[k][(off - 0x510u) >> 2];
    if (off >= 0x590u && off < 0x5D0u) return p->receive_cnf[k][(off - 0x590u) >> 2];
    pgm_fatal("IPC: read of an unmodelled register", off);
    return 0;
}

static inline void pgm_ipc__wr(void *st, int core, uintptr_t off, uintptr_t v)
{
    pgm_ipc *p;
    uint32_t w = (uint32_t)v;
    int k = pgm_ipc__instance(st, core, &p), j, m;
    if (off < 0x40u) {
        uint32_t channels = p->send_cnf[k][off >> 2];
        if (!w) return;
        p->sends++;
        for (j = 0; j < 2; j++)
            for (m = 0; m < 16; m++)
                if (p->receive_cnf[j][m] & channels) p->events[j][m] = 1;
    } else if (off >= 0x100u && off < 0x140u) {
        p->events[k][(off - 0x100u) >> 2] = w ? 1u : 0u;
    } else if (off == 0x300u) {
        p->inten[k] = w & 0xFFFFu;
    } else if (off == 0x304u) {
        p->inten[k] |= w & 0xFFFFu;
    } else if (off == 0x308u) {
        p->inten[k] &= ~w;
    } else if (off >= 0x510u && off < 0x550u) {
        p->send_cnf[k][(off - 0x510u) >> 2] = w & 0xFFFFu;
    } else if (off >= 0x590u && off < 0x5D0u) {
        p->receive_cnf[k][(off - 0x590u) >> 2] = w & 0xFFFFu;
    } else {
        pgm_fatal("IPC: write to an unmodelled register", off);
    }
    pgm_ipc__lines(p);
}

static inline uint32_t pgm_nrf_timer__count(const pgm_nrf_timer *t)
{
    static const uint32_t width[4] = {16, 8, 24, 32};
    uint64_t ticks = t->running ? (pgm_now_ns() - t->t0) * 16u / 1000u >> t->prescaler : 0;
    uint32_t bits = width[t->bitmode & 3u];
    ticks += 0x100000000ull - ((uint64_t)PGM_WRAP_US * 16u >> t->prescaler); /* the 32-bit wrap comes early */
    return bits == 32 ? (uint32_t)ticks : (uint32_t)ticks & ((1u << bits) - 1u);
}

static inline uint32_t pgm_nrf_timer__rd(void *st, int core, uintptr_t off)
{
    pgm_nrf_timer *t = (pgm_nrf_timer *)st;
    if (t->core != core) pgm_fatal("TIMER of the other core", off);
    if ((off & 0xFFFu) >= 0x540u && (off & 0xFFFu) < 0x558u) return t->cc[((off & 0xFFFu) - 0x540u) >> 2];
    pgm_fatal("TIMER: read of an unmodelled register", off);
    return 0;
}

static inline void pgm_nrf_timer__wr(void *st, int core, uintptr_t off, uintptr_t v)
{
    pgm_nrf_timer *t = (pgm_nrf_timer *)st;
    uint32_t w = (uint32_t)v;
    if (t->core != core) pgm_fatal("TIMER of the other core", off);
    if (off == 0x000u && w) {
        if (!t->running) t->t0 = pgm_now_ns();
        t->running = 1;
    } else if (off == 0x004u && w) {
        t->running = 0;
    } else if (off == 0x00Cu && w) {
        t->t0 = pgm_now_ns();
    } else if (off >= 0x040u && off < 0x058u && w) {
        t->cc[(off - 0x040u) >> 2] = pgm_nrf_timer__count(t);
    } else if (off == 0x504u) {
        if (w) pgm_fatal("TIMER: counter mode", w);
    } else if (off == 0x508u) {
        t->bitmode = w;
    } else if (off == 0x510u) {
        t->prescaler = w & 15u;
    } else {
        pgm_fatal("TIMER: write to an unmodelled register", off);
    }
}

/* Both IPC instances and both TIMER2s; timer[c] is core c's. */
static inline void pgm_nrf_setup(pgm_ipc *ipc, pgm_nrf_timer timer[2])
{
    int c;
    memset(ipc, 0, sizeof *ipc);
    memset(timer, 0, 2 * sizeof *timer);
    for (c = 0; c < 2; c++) {
        ipc->port[c].ipc = ipc;
        ipc->port[c].k = timer[c].core = c;
    }
    pgm_add_periph(0x5002A000u, 0x1000u, pgm_ipc__rd, pgm_ipc__wr, &ipc->port[0]);
    pgm_add_periph(0x41012000u, 0x1000u, pgm_ipc__rd, pgm_ipc__wr, &ipc->port[1]);
    pgm_add_periph(0x50011000u, 0x1000u, pgm_nrf_timer__rd, pgm_nrf_timer__wr, &timer[0]);
    pgm_add_periph(0x41019000u, 0x1000u, pgm_nrf_timer__rd, pgm_nrf_timer__wr, &timer[1]);
}

#endif /* PGM_MODEL_IPC_H */
