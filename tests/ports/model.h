/* model.h — a behavioural model of Cortex-M cores, for running the pg_shm hook files of
   ports/platform/ on the host (splitcore tests)

   Cores are host threads. A hook file compiled against this model (PG_SHM_MMIO_RD/WR and
   PG_SHM_CM_* defined below, before the hook file is included) reaches its registers through
   pgm_rd / pgm_wr: the core's own System Control Space (NVIC, SysTick, SCB CPUID and cache
   maintenance, MPU, DEMCR/DWT, and the Cortex-M4 LMEM of the i.MX RT1170) is modelled here,
   chip peripherals by the peripheral models (model_*.h) that register an address range. An
   access to any other address aborts the test: a wrong register address in a hook file
   fails loudly.

   Per core: PRIMASK, the event register, NVIC enable / pending, SysTick, CPUID, DWT and an
   optional write-back data cache.
   - Interrupts are level-sensitive lines the peripheral models drive. The model's thread
     delivers a pending, enabled interrupt whenever the core's PRIMASK is clear: the handler
     runs on the model thread under the core's identity, concurrently with the core's own
     thread, as an interrupt preempts a core at any instruction. Restoring PRIMASK takes the
     pending interrupts at once, on the core's thread, as the architecture does. A line still
     high after its handler returned is taken again; a handler that never clears its source
     aborts the test (an interrupt storm).
   - WFI returns when an enabled interrupt is pending (masked by PRIMASK or not), when the
     core took an exception, or at a SysTick tick; WFE when the event register is set (SEV on
     any core, or an exception taken by this core) and clears it. With pgm.no_tick nothing
     ticks, so a sleep ends only by a doorbell; a sleep longer than PGM_SLEEP_LIMIT_NS counts
     as a lost wake-up (pgm_lost()) and returns.
   - Cache: a cached core works on its own copy of the shared region (its "view"), which
     changes only by its own writes and by cache maintenance: clean writes a line back to
     the region when it differs from what was last synced (dirty), invalidate reloads it
     from the region (dropping a dirty copy), clean+invalidate does both. Every register
     access of the core may also evict one pseudo-random line (written back if dirty, then
     reloaded), as a real cache does at any time. A missing clean or invalidate therefore
     leaves a peer reading stale data for ever. The MPU is modelled far enough that a test
     can ask whether an address is non-cacheable (pgm_uncached). */
#ifndef PGM_MODEL_H
#define PGM_MODEL_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "host.h"

#define PGM_CORES          4
#define PGM_IRQS           160
#define PGM_WORDS          (PGM_IRQS / 32)
#define PGM_PERIPHS        8
#define PGM_SLEEP_LIMIT_NS 2000000000ull /* a WFI / WFE this long without a wake-up: lost */
#define PGM_STORM          200000        /* takes of one line in a row: its handler never clears it */
#define PGM_WRAP_US        10000         /* counters start this long before their 32-bit wrap */
#define PGM_L1             1             /* cache maintenance by address through the SCB */
#define PGM_LMEM           2             /* i.MX RT1170 Cortex-M4: LMEM system-bus cache line commands */

typedef void (*pgm_handler)(void *arg);

typedef struct pgm_cache {
    unsigned char *ram, *view, *snap; /* shared memory, this core's copy, the copy as last synced */
    size_t bytes;
    uint32_t line, rng;
    uint64_t cleans, invalidates, evictions;
} pgm_cache;

typedef struct pgm_core {
    pthread_mutex_t gate; /* held while PRIMASK is set or a handler of this core runs */
    pthread_cond_t cv;    /* sleeping core; under pgm.lock like everything below */
    int primask;          /* written by the core's thread only */
    uint32_t cpuid, mhz;
    uint32_t line[PGM_WORDS], enable[PGM_WORDS], pend[PGM_WORDS];
    pgm_handler handler[PGM_IRQS], systick;
    void *arg[PGM_IRQS], *systick_arg;
    uint32_t syst_csr, syst_rvr;
    uint64_t next_tick;
    int tick, event;
    uint64_t taken, isr_runs[PGM_IRQS], ticks;
    uint32_t demcr, dwt_ctrl, mpu_ctrl, mpu_rnr, mpu_rasr[16], lmem_lcr, rng;
    uintptr_t mpu_rbar[16]; /* host addresses: the region's base is one */
    pgm_cache *cache;
    int cache_kind;
} pgm_core;

typedef struct pgm_periph {
    uintptr_t base, size;
    uint32_t (*rd)(void *st, int core, uintptr_t off);
    void (*wr)(void *st, int core, uintptr_t off, uintptr_t v);
    void *st;
} pgm_periph;

static struct pgm_machine {
    pthread_mutex_t lock;
    pthread_cond_t kick_cv;
    int ncores, nperiph, running, stop, kicked, no_tick;
    uint64_t lost, t0;
    pgm_core core[PGM_CORES];
    pgm_periph periph[PGM_PERIPHS];
    pthread_t thread;
} pgm = {.lock = PTHREAD_MUTEX_INITIALIZER, .kick_cv = PTHREAD_COND_INITIALIZER};

static __thread int pgm_self = -1;   /* the core this thread is, or runs a handler for */
static __thread int pgm_thread = -1; /* the core whose own thread this is (not a handler) */

static inline void pgm_fatal(const char *what, uintptr_t a)
{
    fprintf(stderr, "model: core %d: %s (0x%lx)\n", pgm_self, what, (unsigned long)a);
    abort();
}

#define pgm_now_ns pgh_ns

static inline pgm_core *pgm_me(void)
{
    if (pgm_self < 0 || pgm_self >= pgm.ncores) pgm_fatal("register access from a thread that is no core", 0);
    return &pgm.core[pgm_self];
}

/* ---- set-up (no core running) ---- */
static inline void pgm_reset(int ncores, uint32_t cpuid, uint32_t mhz)
{
    int c;
    memset(pgm.core, 0, sizeof pgm.core);
    memset(pgm.periph, 0, sizeof pgm.periph);
    pgm.ncores = ncores;
    pgm.nperiph = pgm.stop = pgm.kicked = 0; /* (no_tick is the test's, across resets) */
    pgm.lost = 0;
    pgm.t0 = pgm_now_ns();
    for (c = 0; c < PGM_CORES; c++) {
        pthread_mutex_init(&pgm.core[c].gate, NULL);
        pthread_cond_init(&pgm.core[c].cv, NULL);
        pgm.core[c].rng = 0x2545F491u * (uint32_t)(c + 1);
        pgm.core[c].cpuid = cpuid;
        pgm.core[c].mhz = mhz;
    }
}

static inline void pgm_add_periph(uintptr_t base, uintptr_t size, uint32_t (*rd)(void *, int, uintptr_t),
                                  void (*wr)(void *, int, uintptr_t, uintptr_t), void *st)
{
    pgm_periph *p = &pgm.periph[pgm.nperiph++];
    p->base = base;
    p->size = size;
    p->rd = rd;
    p->wr = wr;
    p->st = st;
}

/* The vector table entry of interrupt `irq` (-1: SysTick) on `core`. */
static inline void pgm_vector(int core, int irq, pgm_handler h, void *arg)
{
    if (irq < 0) {
        pgm.core[core].systick = h;
        pgm.core[core].systick_arg = arg;
    } else {
        pgm.core[core].handler[irq] = h;
        pgm.core[core].arg[irq] = arg;
    }
}

/* A cached core: `view` (same size, as aligned as the region) becomes its copy of `ram`. */
static inline void pgm_attach_cache(int core, int kind, pgm_cache *c, void *ram, void *view, void *snap, size_t bytes)
{
    c->ram = (unsigned char *)ram;
    c->view = (unsigned char *)view;
    c->snap = (unsigned char *)snap;
    c->bytes = bytes;
    c->line = 32;
    c->rng = 0x9E3779B9u * (uint32_t)(core + 1);
    c->cleans = c->invalidates = c->evictions = 0;
    memcpy(view, ram, bytes);
    memcpy(snap, ram, bytes);
    pgm.core[core].cache = c;
    pgm.core[core].cache_kind = kind;
}

/* ---- interrupt lines (pgm.lock held: called from peripheral models) ---- */
static inline void pgm_kick(void)
{
    pgm.kicked = 1;
    pthread_cond_signal(&pgm.kick_cv);
}

static inline void pgm_set_line(int core, int irq, int level)
{
    pgm_core *k = &pgm.core[core];
    uint32_t bit = 1u << (irq & 31);
    if (level) {
        k->line[irq >> 5] |= bit;
        pthread_cond_broadcast(&k->cv);
        pgm_kick();
    } else {
        k->line[irq >> 5] &= ~bit;
    }
}

static inline int pgm__pending_irq(const pgm_core *k)
{
    int w;
    for (w = 0; w < PGM_WORDS; w++) {
        uint32_t p = (k->line[w] | k->pend[w]) & k->enable[w];
        if (p) return w * 32 + __builtin_ctz(p);
    }
    return -1;
}

static inline int pgm__wakes_wfi(const pgm_core *k)
{
    return pgm__pending_irq(k) >= 0 || k->tick;
}

/* Take every deliverable exception of core `c` (its gate held by the caller). */
static inline void pgm__take(int c)
{
    pgm_core *k = &pgm.core[c];
    int saved = pgm_self, thread = pgm_thread, last = -2;
    long same = 0;
    for (;;) {
        pgm_handler h;
        void *arg;
        int irq;
        pthread_mutex_lock(&pgm.lock);
        irq = k->tick ? -1 : pgm__pending_irq(k);
        if (irq == -1 && !k->tick) {
            pthread_mutex_unlock(&pgm.lock);
            break;
        }
        if (irq < 0) {
            k->tick = 0;
            k->ticks++;
            h = k->systick;
            arg = k->systick_arg;
        } else {
            k->pend[irq >> 5] &= ~(1u << (irq & 31));
            k->isr_runs[irq]++;
            h = k->handler[irq];
            arg = k->arg[irq];
            if (!h) pgm_fatal("interrupt enabled without a handler", (uintptr_t)irq);
        }
        same = irq == last ? same + 1 : 0;
        last = irq;
        if (irq >= 0 && same > PGM_STORM)
            pgm_fatal("interrupt storm: the handler never clears its line", (uintptr_t)irq);
        k->event = 1; /* an exception taken wakes WFE */
        k->taken++;
        pthread_cond_broadcast(&k->cv);
        pthread_mutex_unlock(&pgm.lock);
        pgm_self = c;
        pgm_thread = -1; /* handler context, not the core's thread (no interleaving, no eviction) */
        if (h) h(arg);
        pgm_thread = thread;
        pgm_self = saved;
    }
}

/* The model's thread: SysTick, and interrupts for cores whose PRIMASK is clear. */
static inline void *pgm__thread(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pgm.lock);
    while (!pgm.stop) {
        uint64_t now = pgm_now_ns();
        int c;
        for (c = 0; c < pgm.ncores; c++) {
            pgm_core *k = &pgm.core[c];
            uint64_t period = ((uint64_t)k->syst_rvr + 1u) * 1000u / (k->mhz ? k->mhz : 1u);
            if ((k->syst_csr & 3u) != 3u || pgm.no_tick || now < k->next_tick) continue;
            k->tick = 1;
            k->next_tick = now + period;
            pthread_cond_broadcast(&k->cv);
        }
        pthread_mutex_unlock(&pgm.lock);
        for (c = 0; c < pgm.ncores; c++)
            if (pthread_mutex_trylock(&pgm.core[c].gate) == 0) {
                pgm__take(c);
                pthread_mutex_unlock(&pgm.core[c].gate);
            }
        pthread_mutex_lock(&pgm.lock);
        if (!pgm.kicked && !pgm.stop) pgh_wait(&pgm.kick_cv, &pgm.lock, 100000u);
        pgm.kicked = 0;
    }
    pthread_mutex_unlock(&pgm.lock);
    return NULL;
}

static inline void pgm_start(void)
{
    pgm.stop = 0;
    pgm.running = 1;
    pthread_create(&pgm.thread, NULL, pgm__thread, NULL);
}

static inline void pgm_stop(void)
{
    pthread_mutex_lock(&pgm.lock);
    pgm.stop = 1;
    pgm_kick();
    pthread_mutex_unlock(&pgm.lock);
    pthread_join(pgm.thread, NULL);
    pgm.running = 0;
}

/* Wait (up to 1 s) until no core has a deliverable interrupt; 0 when quiet. */
static inline int pgm_quiesce(void)
{
    int i, c, busy = 1;
    for (i = 0; i < 1000 && busy; i++) {
        busy = 0;
        pthread_mutex_lock(&pgm.lock);
        for (c = 0; c < pgm.ncores; c++) busy |= pgm__pending_irq(&pgm.core[c]) >= 0;
        pgm_kick();
        pthread_mutex_unlock(&pgm.lock);
        if (busy) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return busy;
}

static inline uint64_t pgm_lost(void)
{
    return pgm.lost;
}

/* The calling thread becomes core `core` (the drivers' core threads call this first). */
static inline void pgm_enter(int core)
{
    pgm_self = pgm_thread = core;
}

/* ---- the core's instructions ---- */
static inline void pgm_fence(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* On the core's own thread, now and then: let the other cores run, then take the pending
   interrupts right here, as if they had arrived just before this instruction (the model
   thread may be slower to). This is what finds a window between a check and a sleep. */
static inline void pgm__interleave(pgm_core *k)
{
    if (pgm_thread != pgm_self || k->primask) return;
    k->rng = k->rng * 1664525u + 1013904223u;
    if ((k->rng >> 28) > 7u) return;
    if (k->rng & 0x100u) sched_yield(); /* let the other cores move first */
    pthread_mutex_lock(&k->gate);
    pgm__take(pgm_self);
    pthread_mutex_unlock(&k->gate);
}

static inline uint32_t pgm_irq_save(void)
{
    pgm_core *k = pgm_me();
    if (k->primask) return 1;
    pgm__interleave(k);
    pthread_mutex_lock(&k->gate);
    k->primask = 1;
    return 0;
}

static inline void pgm_irq_restore(uint32_t old)
{
    pgm_core *k = pgm_me();
    if (old || !k->primask) return;
    k->primask = 0;
    pgm__take(pgm_self); /* pending interrupts are taken as soon as PRIMASK clears */
    pthread_mutex_unlock(&k->gate);
}

static inline void pgm__sleep(pgm_core *k, int wfe)
{
    uint64_t start = pgm_now_ns(), taken;
    pthread_mutex_lock(&pgm.lock);
    taken = k->taken;
    for (;;) {
        if (wfe ? k->event : pgm__wakes_wfi(k) || k->taken != taken) break;
        if (pgm_now_ns() - start > PGM_SLEEP_LIMIT_NS) {
            pgm.lost++;
            break;
        }
        pgh_wait(&k->cv, &pgm.lock, 1000000u);
    }
    if (wfe) k->event = 0;
    pthread_mutex_unlock(&pgm.lock);
}

static inline void pgm_wfi(void)
{
    pgm__sleep(pgm_me(), 0);
}

static inline void pgm_wfe(void)
{
    pgm__sleep(pgm_me(), 1);
}

static inline void pgm_sev(void)
{
    int c;
    pgm_fence();
    pthread_mutex_lock(&pgm.lock);
    for (c = 0; c < pgm.ncores; c++) {
        pgm.core[c].event = 1;
        pthread_cond_broadcast(&pgm.core[c].cv);
    }
    pthread_mutex_unlock(&pgm.lock);
}

/* ---- the cache (pgm.lock held) ---- */
static inline void pgm__line(pgm_cache *c, size_t off, int clean, int invalidate)
{
    size_t i, n = c->line;
    uint32_t *v = (uint32_t *)(void *)(c->view + off), *s = (uint32_t *)(void *)(c->snap + off);
    uint32_t *r = (uint32_t *)(void *)(c->ram + off);
    if (off + n > c->bytes) n = c->bytes - off;
    if (clean && memcmp(v, s, n) != 0) { /* dirty: the whole line goes back */
        for (i = 0; i < n / 4; i++) __atomic_store_n(&r[i], v[i], __ATOMIC_RELEASE);
        memcpy(s, v, n);
        c->cleans++;
    }
    if (invalidate) {
        for (i = 0; i < n / 4; i++) v[i] = __atomic_load_n(&r[i], __ATOMIC_ACQUIRE);
        memcpy(s, v, n);
        c->invalidates++;
    }
}

/* Maintenance of the line holding `addr` (an address in the core's view); other addresses
   are not the shared region, which nobody else reads. */
static inline void pgm_cache_line_op(pgm_cache *c, uintptr_t addr, int clean, int invalidate)
{
    uintptr_t off = addr - (uintptr_t)c->view;
    if (off < c->bytes) pgm__line(c, off / c->line * c->line, clean, invalidate);
}

static inline void pgm__cache_op(pgm_core *k, uintptr_t addr, int clean, int invalidate)
{
    if (!k->cache) pgm_fatal("cache maintenance on a core without a cache", addr);
    pgm_cache_line_op(k->cache, addr, clean, invalidate);
}

static inline void pgm__maybe_evict(pgm_core *k)
{
    pgm_cache *c = k->cache;
    if (!c || pgm_thread != pgm_self) return; /* the copy belongs to the core's own thread */
    c->rng = c->rng * 1664525u + 1013904223u;
    if ((c->rng >> 24) % 61u) return;
    c->evictions++;
    pgm__line(c, (size_t)(c->rng >> 4) % (c->bytes / c->line) * c->line, 1, 1);
}

/* Whether the MPU of `core` makes `addr` non-cacheable (C = 0). */
static inline int pgm_uncached(int core, const void *addr)
{
    const pgm_core *k = &pgm.core[core];
    uintptr_t a = (uintptr_t)addr;
    int r;
    if (!(k->mpu_ctrl & 1u)) return 0;
    for (r = 15; r >= 0; r--) {
        uint32_t rasr = k->mpu_rasr[r];
        uintptr_t size = (uintptr_t)1 << ((rasr >> 1 & 31u) + 1u), base = k->mpu_rbar[r];
        if ((rasr & 1u) && a - base < size) return !(rasr >> 17 & 1u);
    }
    return 0;
}

/* ---- registers ---- */
static inline uint32_t pgm__ppb(pgm_core *k, uintptr_t a, int write, uintptr_t v)
{
    uint64_t now = pgm_now_ns();
    uint32_t w = (uint32_t)v;
    if (a >= 0xE000E100u && a < 0xE000E300u) { /* NVIC ISER / ICER / ISPR / ICPR */
        uint32_t *reg[4] = {k->enable, k->enable, k->pend, k->pend};
        int kind = (int)((a - 0xE000E100u) >> 7), word = (int)((a & 0x7Fu) >> 2);
        if (word >= PGM_WORDS) return 0;
        if (!write) return reg[kind][word];
        if (kind & 1)
            reg[kind][word] &= ~w;
        else
            reg[kind][word] |= w;
        if (!(kind & 1)) pgm_kick();
        return 0;
    }
    switch (a) {
    case 0xE000E010u:
        if (!write) return k->syst_csr;
        k->syst_csr = w & 7u;
        k->next_tick = now + ((uint64_t)k->syst_rvr + 1u) * 1000u / k->mhz;
        return 0;
    case 0xE000E014u:
        if (write) k->syst_rvr = w & 0xFFFFFFu;
        return k->syst_rvr;
    case 0xE000E018u:
        if (write) k->next_tick = now + ((uint64_t)k->syst_rvr + 1u) * 1000u / k->mhz;
        return 0;
    case 0xE000ED00u: return k->cpuid;
    case 0xE000ED90u: return 16u << 8; /* MPU_TYPE: 16 regions */
    case 0xE000ED94u:
        if (write) k->mpu_ctrl = w & 7u;
        return k->mpu_ctrl;
    case 0xE000ED98u:
        if (write) k->mpu_rnr = w & 15u;
        return k->mpu_rnr;
    case 0xE000ED9Cu:
        if (write) {
            if (w & 16u) k->mpu_rnr = w & 15u;
            k->mpu_rbar[k->mpu_rnr] = v & ~(uintptr_t)31u;
        }
        return (uint32_t)k->mpu_rbar[k->mpu_rnr];
    case 0xE000EDA0u:
        if (write) k->mpu_rasr[k->mpu_rnr] = w;
        return k->mpu_rasr[k->mpu_rnr];
    case 0xE000EDFCu:
        if (write) k->demcr = w;
        return k->demcr;
    case 0xE0001000u:
        if (write) k->dwt_ctrl = w;
        return k->dwt_ctrl;
    case 0xE0001004u: /* CYCCNT starts PGM_WRAP_US before its wrap, so tests cross it */
        if (!(k->demcr >> 24 & 1u) || !(k->dwt_ctrl & 1u)) return 0;
        return (uint32_t)((now - pgm.t0) * k->mhz / 1000u - (uint64_t)PGM_WRAP_US * k->mhz);
    case 0xE000EF5Cu:
    case 0xE000EF68u:
    case 0xE000EF70u:
        if (k->cache_kind != PGM_L1 || !write) pgm_fatal("SCB cache maintenance not available", a);
        pgm__cache_op(k, v, a != 0xE000EF5Cu, a != 0xE000EF68u);
        return 0;
    case 0xE0082800u: return 1u; /* LMEM PSCCR: the system-bus cache is on */
    case 0xE0082804u:
        if (write) k->lmem_lcr = w;
        return k->lmem_lcr;
    case 0xE0082808u: /* PSCSAR: LGO starts the line command of PSCLCR on a physical address */
        if (k->cache_kind != PGM_LMEM) pgm_fatal("LMEM on a core without it", a);
        if (write && (w & 1u)) {
            uint32_t cmd = k->lmem_lcr >> 24 & 3u;
            if (!(k->lmem_lcr >> 26 & 1u) || !cmd) pgm_fatal("LMEM line command not by physical address", a);
            pgm__cache_op(k, v & ~(uintptr_t)3u, cmd >= 2u, cmd & 1u);
        }
        return 0;
    default: pgm_fatal(write ? "write to an unmodelled core register" : "read of an unmodelled core register", a);
    }
    return 0;
}

static inline uint32_t pgm__access(uintptr_t a, int write, uintptr_t v)
{
    pgm_core *k = pgm_me();
    uint32_t r = 0;
    int i;
    pgm__interleave(k);
    pthread_mutex_lock(&pgm.lock);
    pgm__maybe_evict(k);
    if (a >= 0xE0000000u && a < 0xE0100000u) {
        r = pgm__ppb(k, a, write, v);
    } else {
        for (i = 0; i < pgm.nperiph; i++) {
            pgm_periph *p = &pgm.periph[i];
            if (a - p->base >= p->size) continue;
            if (write)
                p->wr(p->st, pgm_self, a - p->base, v);
            else
                r = p->rd(p->st, pgm_self, a - p->base);
            break;
        }
        if (i == pgm.nperiph) pgm_fatal(write ? "write to an unmodelled address" : "read of an unmodelled address", a);
    }
    pthread_mutex_unlock(&pgm.lock);
    return r;
}

static inline uint32_t pgm_rd(uintptr_t a)
{
    return pgm__access(a, 0, 0);
}

static inline void pgm_wr(uintptr_t a, uintptr_t v)
{
    pgm_fence(); /* device writes stay behind the core's earlier memory writes */
    (void)pgm__access(a, 1, v);
}

/* What the hook files compile against. */
#define PG_SHM_MMIO_RD(a)          pgm_rd((uintptr_t)(a))
#define PG_SHM_MMIO_WR(a, v)       pgm_wr((uintptr_t)(a), (uintptr_t)(v))
#define PG_SHM_CM_DSB()            pgm_fence()
#define PG_SHM_CM_ISB()            pgm_fence()
#define PG_SHM_CM_SEV()            pgm_sev()
#define PG_SHM_CM_WFE()            pgm_wfe()
#define PG_SHM_CM_WFI()            pgm_wfi()
#define PG_SHM_CM_IRQ_SAVE()       pgm_irq_save()
#define PG_SHM_CM_IRQ_RESTORE(old) pgm_irq_restore(old)

#endif /* PGM_MODEL_H */
