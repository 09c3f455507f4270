/* fuzz_pg_shm.c — pg_shm reading a shared region that a faulty peer corrupted.

   One thread plays every core (a fake platform: no doorbell, a clock that advances 1 ms per
   read, so every wait times out quickly). The input picks the geometry (2-3 cores, 1-8
   slots, 8-64 B payload), some honest traffic between the cores (sends, slots acquired
   and committed, messages peeked), then the faulty peer's writes into the region (any word:
   header, control lines, ring indices, slot headers, payload; a new value or a small
   change of the old one), then the operations one core makes on the corrupted region:
   recv, probe, peek/release, send, acquire/commit, barrier, recover, abort, and a fresh
   pg_shm_init. Every answer must be a pg_err (never a crash, never a read or write outside
   the region or the caller's buffers, which ASan checks), a received size must fit the
   buffer, a peeked slot must lie inside the region's rings.
   Attaching is a rendezvous of every core, so each geometry's attached state is made once
   by one thread per core (no clock: nothing times out) and copied in for every input.
   fuzz_pg_shm_native.c builds this file with PG_SHM_NATIVE_COLLECTIVES and adds the small
   collectives (all_reduce, all_gatherv, reduce_scatterv, broadcast: what fits the cores'
   buffers, whose epoch and hash words and data the faulty peer writes too).
   Not fuzzed: the pointers in the control lines. The native collectives beyond the buffers
   (all_reduce, broadcast, all_gather) read peers' buffers through them by design; a peer
   that can write them can already write any memory. The barrier and recover only use
   counters. */
#define PG_DEFAULT_TIMEOUT_MS 20u /* recover and init wait this long (fake ms) */
#define PG_IMPLEMENTATION
#define SPLITCORE_BASE_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "fuzz.h"
#include <pthread.h>

#define MAX_CORES   3
#define MAX_SLOTS   8
#define MAX_PAYLOAD 64
#define REGION_MAX  PG_SHM_REGION_BYTES(MAX_CORES, MAX_SLOTS, MAX_PAYLOAD)

static uint32_t region[REGION_MAX / 4] __attribute__((aligned(64)));
static pg_shm shm[MAX_CORES];
static uint32_t fake_us;
static const void *peeked[MAX_CORES]; /* last slot peeked / acquired per peer */
static void *acquired[MAX_CORES];

static uint32_t fake_now(void *ctx)
{
    (void)ctx;
    return fake_us += 1000u;
}

/* Attached states, one per geometry: cores 2..MAX_CORES, slots 1..MAX_SLOTS (powers of
   two), payload 8..MAX_PAYLOAD. */
#define GEOMETRIES ((MAX_CORES - 1) * 4 * (MAX_PAYLOAD / 8))
static struct attached {
    int ready;
    uint32_t region[REGION_MAX / 4];
    pg_shm shm[MAX_CORES];
} attached[GEOMETRIES];
static size_t attach_bytes;
static int attach_rc[MAX_CORES];

static void *attach_core(void *arg)
{
    pg_shm_hooks h;
    int c = (int)(intptr_t)arg;
    memset(&h, 0, sizeof h);
    attach_rc[c] = pg_shm_init(&shm[c], region, attach_bytes, c, &h);
    return NULL;
}

/* Format and attach every core (threads), or copy the state in from the first time. */
static void attach_all(int geometry, int cores, uint32_t slots, uint32_t payload, size_t bytes)
{
    struct attached *a = &attached[geometry];
    pthread_t t[MAX_CORES];
    int c;
    if (!a->ready) {
        memset(region, 0, sizeof region);
        FUZZ_REQUIRE(pg_shm_format(region, bytes, cores, slots, payload) == PG_OK);
        attach_bytes = bytes;
        for (c = 0; c < cores; c++) pthread_create(&t[c], NULL, attach_core, (void *)(intptr_t)c);
        for (c = 0; c < cores; c++) pthread_join(t[c], NULL);
        for (c = 0; c < cores; c++) FUZZ_REQUIRE(attach_rc[c] == PG_OK);
        memcpy(a->region, region, sizeof region);
        memcpy(a->shm, shm, sizeof shm);
        a->ready = 1;
    }
    memcpy(region, a->region, sizeof region);
    memcpy(shm, a->shm, sizeof shm);
    for (c = 0; c < cores; c++) shm[c].hooks.now_us = fake_now; /* from here on, waits end quickly */
}

static int is_err(int rc)
{
    return rc == 0 || splitcore_err_module(rc) == SPLITCORE_MODULE_PG;
}

/* Control-line words of `core` that hold buffer pointers (PTR0..PTR3). */
static int is_pointer_word(size_t word, int cores)
{
    size_t line = word / (PG_SHM_LINE / 4), at = word % (PG_SHM_LINE / 4);
    return line >= 1 && line <= (size_t)cores && at >= 2 && at <= 5;
}

#if PG_SHM_NATIVE_COLLECTIVES
/* A small collective by core `me` (what every core brings fits its buffer: no pointers). */
static void collective(fz_in *in, pg_group *g, int me, int cores)
{
    static float x[MAX_CORES][16 * MAX_CORES], y[MAX_CORES][16 * MAX_CORES];
    size_t n = fz_u8(in) % 17u, counts[MAX_CORES];
    int c, rc, kind = (int)(fz_u8(in) % 4u);
    for (c = 0; c < cores; c++) counts[c] = (n + (size_t)c) % 17u;
    switch (kind) {
    case 0: rc = pg_all_reduce(g, x[me], y[me], n, MB_F32, (pg_red)(fz_u8(in) % 5u)); break;
    case 1: rc = pg_all_gatherv(g, x[me], y[me], counts, MB_F32); break;
    case 2: rc = pg_reduce_scatterv(g, x[me], y[me], counts, MB_F32, PG_SUM); break;
    default: rc = pg_broadcast(g, x[me], n, MB_F32, (int)(fz_u8(in) % (uint32_t)cores)); break;
    }
    FUZZ_REQUIRE(is_err(rc));
}
#endif

/* One operation by core `me` with arguments from the input. */
static void op(fz_in *in, int me, int cores, size_t bytes, uint32_t payload)
{
    pg_group *g = pg_shm_group(&shm[me]);
    unsigned char buf[MAX_PAYLOAD + 8];
    int peer = (int)(fz_u8(in) % (uint32_t)(cores + 1)) - (fz_u8(in) == 255 ? 5 : 0);
    int tag = (int)(fz_u8(in) % 4u);
    size_t n = fz_u8(in) % (payload + 9u), got = (size_t)-1, sz = (size_t)-1;
    const void *p = 0;
    void *w = 0;
    int rc, k = peer >= 0 && peer < cores ? peer : 0;
    pg_set_timeout(g, fz_u8(in) % 3u);
    switch (fz_u8(in) % (PG_SHM_NATIVE_COLLECTIVES ? 11u : 10u)) {
    case 0:
        rc = pg_send(g, peer, tag, buf, n);
        FUZZ_REQUIRE(is_err(rc));
        break;
    case 1:
        rc = pg_recv_timeout(g, peer, tag, buf, n, &got, fz_u8(in) % 3u);
        FUZZ_REQUIRE(is_err(rc));
        if (rc == PG_OK) FUZZ_REQUIRE(got <= n && got <= payload);
        break;
    case 2:
        rc = pg_probe(g, peer, tag, &sz);
        FUZZ_REQUIRE(rc == 0 || rc == 1 || is_err(rc));
        if (rc == 1) FUZZ_REQUIRE(sz <= payload);
        break;
    case 3:
        rc = pg_slot_peek(g, peer, tag, &p, &sz);
        FUZZ_REQUIRE(is_err(rc));
        if (rc == PG_OK) {
            FUZZ_REQUIRE((const unsigned char *)p >= (const unsigned char *)region &&
                         (const unsigned char *)p + sz <= (const unsigned char *)region + bytes);
            FUZZ_REQUIRE(sz <= payload);
            memcpy(buf, p, sz); /* ASan: the slot really is inside the region */
            peeked[k] = p;
        }
        break;
    case 4:
        rc = pg_slot_release(g, peer,
                             fz_u8(in) & 1u ? peeked[k] : (const void *)((const char *)region + fz_u32(in) % bytes));
        FUZZ_REQUIRE(is_err(rc));
        break;
    case 5:
        rc = pg_slot_acquire(g, peer, n, &w);
        FUZZ_REQUIRE(is_err(rc));
        if (rc == PG_OK) {
            FUZZ_REQUIRE((unsigned char *)w >= (unsigned char *)region &&
                         (unsigned char *)w + n <= (unsigned char *)region + bytes);
            memset(w, 0x5a, n);
            acquired[k] = w;
        }
        break;
    case 6:
        rc = pg_slot_commit(g, peer, tag, fz_u8(in) & 1u ? acquired[k] : (void *)buf, n);
        FUZZ_REQUIRE(is_err(rc));
        break;
    case 7: FUZZ_REQUIRE(is_err(pg_barrier(g))); break;
    case 8: FUZZ_REQUIRE(is_err(pg_recover(g))); break;
#if PG_SHM_NATIVE_COLLECTIVES
    case 10: collective(in, g, me, cores); break;
#endif
    default:
        if (fz_u8(in) < 16) FUZZ_REQUIRE(is_err(pg_abort(g, PG_ERR_ABORTED)));
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    pg_shm_hooks h;
    pg_shm fresh;
    int cores = 2 + (int)(fz_u8(&in) % (MAX_CORES - 1)), ks = (int)(fz_u8(&in) % 4u),
        kp = (int)(fz_u8(&in) % (MAX_PAYLOAD / 8));
    uint32_t slots = 1u << ks, payload = 8u * (1u + (uint32_t)kp);
    size_t bytes = PG_SHM_REGION_BYTES(cores, slots, payload), words = bytes / 4, i, nops;
    int c;
    memset(&h, 0, sizeof h);
    h.now_us = fake_now;
    memset(peeked, 0, sizeof peeked);
    memset(acquired, 0, sizeof acquired);
    attach_all(((cores - 2) * 4 + ks) * (MAX_PAYLOAD / 8) + kp, cores, slots, payload, bytes);
    /* honest traffic */
    nops = fz_u8(&in) % 24u;
    for (i = 0; i < nops; i++) op(&in, (int)(fz_u8(&in) % (uint32_t)cores), cores, bytes, payload);
    /* the faulty peer */
    nops = 1u + fz_u8(&in) % 8u;
    for (i = 0; i < nops; i++) {
        size_t wd = fz_u16(&in) % words;
        uint32_t how = fz_u8(&in), v = how & 1u ? fz_u32(&in) : region[wd] + (uint32_t)(int8_t)fz_u8(&in);
        if (is_pointer_word(wd, cores)) continue;
        region[wd] = v;
    }
    /* the cores live on with it */
    while (fz_left(&in)) op(&in, (int)(fz_u8(&in) % (uint32_t)cores), cores, bytes, payload);
    c = pg_shm_init(&fresh, region, bytes, 0, &h);
    FUZZ_REQUIRE(c == PG_OK || c == PG_ERR_CORRUPT || c == PG_ERR_TIMEOUT);
    if (c == PG_OK) FUZZ_REQUIRE(PG_SHM_REGION_BYTES(fresh.cores, fresh.slots, fresh.payload) <= bytes);
    return 0;
}
