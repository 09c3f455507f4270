/* pg_conformance.h — the port conformance suite of ports/pg.h (splitcore)

   One suite, unchanged over every port. The test bodies are written against pg.h only and
   run on every rank; they use no stdio and no heap (so bare-metal harts can run them), a
   small PRNG, and report a failure as the source line of the failed check. Only the
   cmocka wrappers at the end assert, on whichever thread/hart runs cmocka.

   The driver defines, before including this file (after cmocka.h and the port):
       static int pgc_run(int (*body)(pg_group *g, void *arg), void *arg);
           runs body on every rank of a ready world (same world size each time) and
           returns 0 if every rank returned 0, else the first nonzero result
           (a source line of this file, or a negative pg_err from the driver).
   and may set PGC_STRESS_MESSAGES (total messages of the stress test, default 10^6; each
   rank receives pgc_stress_per_rank(n), summed into pgc_stress_received[] per rank),
   PGC_BIG (element count of the large cases, default 2500), PGC_MAX_RANKS (default 4),
   PGC_TIMEOUT_MS (default 5000). Then: cmocka_run_group_tests(pgc_tests, NULL, NULL).

   Ports must provide abort and recover for the abort test (otherwise it is skipped in
   place: pg_abort returning PG_ERR_UNSUPPORTED passes). */
#ifndef PG_CONFORMANCE_H
#define PG_CONFORMANCE_H

#ifndef PGC_STRESS_MESSAGES
#define PGC_STRESS_MESSAGES 1000000L
#endif
#ifndef PGC_BIG
#define PGC_BIG 2500
#endif
#ifndef PGC_MAX_RANKS
#define PGC_MAX_RANKS 4
#endif
#ifndef PGC_TIMEOUT_MS
#define PGC_TIMEOUT_MS 5000u
#endif

#define PGC_BUF_BYTES ((size_t)PGC_BIG * 8u * PGC_MAX_RANKS)

/* A failed check returns its line; the wrappers report it. */
#define PGC_CHECK(c)               \
    do {                           \
        if (!(c)) return __LINE__; \
    } while (0)
#define PGC_RC(expr, want)                      \
    do {                                        \
        int pgc_rc_ = (expr);                   \
        if (pgc_rc_ != (want)) return __LINE__; \
    } while (0)
#define PGC_OK(expr) PGC_RC((expr), PG_OK)
#define PGC_SUB(expr)                       \
    do {                                    \
        int pgc_sub_ = (expr);              \
        if (pgc_sub_ != 0) return pgc_sub_; \
    } while (0)

/* per-rank buffers (each rank touches only its own row) */
static uint64_t pgc_a[PGC_MAX_RANKS][PGC_BUF_BYTES / 8];
static uint64_t pgc_b[PGC_MAX_RANKS][PGC_BUF_BYTES / 8];
static uint64_t pgc_c[PGC_MAX_RANKS][PGC_BUF_BYTES / 8];

static const mb_dtype pgc_dtypes[] = {MB_F32, MB_F64, MB_I8, MB_U8, MB_I16, MB_I32};
#define PGC_NDT 6

/* This rank, as an index of the per-rank buffers (pgc_begin fails on a bad rank). */
static int pgc_rank(pg_group *g)
{
    int r = pg_rank(g);
    return r < 0 || r >= PGC_MAX_RANKS ? 0 : r;
}

static int pgc_begin(pg_group *g)
{
    if (pg_set_timeout(g, PGC_TIMEOUT_MS) != PG_OK) return __LINE__;
    if (pg_size(g) > PGC_MAX_RANKS || pg_rank(g) < 0) return __LINE__;
    return 0;
}

static int pgc_bytes_eq(const void *a, const void *b, size_t n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t i;
    for (i = 0; i < n; i++)
        if (x[i] != y[i]) return 0;
    return 1;
}

/* ---- values: element i of rank r's data; stored with wrap-around for integers ---- */
static int64_t pgc_val(int r, size_t i, int salt)
{
    return (int64_t)((r * 7 + (int)(i % 1009u) * 3 + salt) % 9) - 4;
}

static int64_t pgc_wrap(mb_dtype dt, int64_t v)
{
    switch (dt) {
    case MB_I8: return (int64_t)(int8_t)(uint8_t)(uint64_t)v;
    case MB_U8: return (int64_t)(uint8_t)(uint64_t)v;
    case MB_I16: return (int64_t)(int16_t)(uint16_t)(uint64_t)v;
    case MB_I32: return (int64_t)(int32_t)(uint32_t)(uint64_t)v;
    default: return v;
    }
}

static void pgc_put(void *b, mb_dtype dt, size_t i, int64_t v)
{
    switch (dt) {
    case MB_F32: ((float *)b)[i] = (float)v; break;
    case MB_F64: ((double *)b)[i] = (double)v; break;
    case MB_I8: ((int8_t *)b)[i] = (int8_t)pgc_wrap(dt, v); break;
    case MB_U8: ((uint8_t *)b)[i] = (uint8_t)pgc_wrap(dt, v); break;
    case MB_I16: ((int16_t *)b)[i] = (int16_t)pgc_wrap(dt, v); break;
    default: ((int32_t *)b)[i] = (int32_t)pgc_wrap(dt, v); break;
    }
}

static void pgc_fill(void *b, mb_dtype dt, size_t n, int r, int salt)
{
    size_t i;
    for (i = 0; i < n; i++) pgc_put(b, dt, i, pgc_val(r, i, salt));
}

/* Single-rank computation: out[i] = op over ranks 0..n-1 of pgc_val(r, i0 + i, salt),
   floats in floating point (so -0.0 products match), integers exactly then wrapped. */
static void pgc_reference(void *out, mb_dtype dt, pg_red op, size_t i0, size_t count, int n, int salt)
{
    size_t i;
    int r;
    for (i = 0; i < count; i++) {
        int64_t acc = pgc_wrap(dt, pgc_val(0, i0 + i, salt));
        double facc = (double)acc;
        for (r = 1; r < n; r++) {
            int64_t v = pgc_wrap(dt, pgc_val(r, i0 + i, salt));
            double fv = (double)v;
            if (op == PG_SUM || op == PG_AVG)
                acc += v, facc += fv;
            else if (op == PG_PROD)
                acc *= v, facc *= fv;
            else if (op == PG_MAX)
                acc = v > acc ? v : acc, facc = fv > facc ? fv : facc;
            else
                acc = v < acc ? v : acc, facc = fv < facc ? fv : facc;
        }
        if (dt == MB_F32) {
            float f = (float)facc;
            ((float *)out)[i] = op == PG_AVG ? f / (float)n : f;
        } else if (dt == MB_F64) {
            ((double *)out)[i] = op == PG_AVG ? facc / (double)n : facc;
        } else {
            pgc_put(out, dt, i, acc);
        }
    }
}

static int pgc_op_valid(mb_dtype dt, pg_red op)
{
    return op != PG_AVG || dt == MB_F32 || dt == MB_F64;
}

static const size_t pgc_counts[] = {0, 1, 5, 67, PGC_BIG};
#define PGC_NCOUNTS 5

/* ---- point-to-point ---- */
static int pgc_p2p_body(pg_group *g, void *arg)
{
    int n = pg_size(g), me = pgc_rank(g), right = (me + 1) % n, left = (me + n - 1) % n;
    unsigned char *sb = (unsigned char *)pgc_a[me], *rb = (unsigned char *)pgc_b[me];
    size_t sizes[4], got = 0, k;
    int i;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    sizes[0] = 0;
    sizes[1] = 1;
    sizes[2] = 1000;
    sizes[3] = pg_max_msg(g) < PGC_BUF_BYTES ? pg_max_msg(g) : PGC_BUF_BYTES;
    for (i = 0; i < 4; i++) {
        for (k = 0; k < sizes[i]; k++) sb[k] = (unsigned char)(k * 31u + (size_t)me + (size_t)i);
        PGC_OK(pg_send(g, right, 10 + i, sb, sizes[i]));
        PGC_OK(pg_recv(g, left, 10 + i, rb, PGC_BUF_BYTES, &got));
        PGC_CHECK(got == sizes[i]);
        for (k = 0; k < sizes[i]; k++) PGC_CHECK(rb[k] == (unsigned char)(k * 31u + (size_t)left + (size_t)i));
    }
    /* user tag extremes */
    PGC_OK(pg_send(g, right, 0, sb, 3));
    PGC_OK(pg_send(g, right, PG_TAG_MAX, sb, 4));
    PGC_OK(pg_recv(g, left, PG_TAG_MAX, rb, 16, &got));
    PGC_CHECK(got == 4);
    PGC_OK(pg_recv(g, left, 0, rb, 16, &got));
    PGC_CHECK(got == 3);
    return pg_barrier(g) == PG_OK ? 0 : __LINE__;
}

static int pgc_tags_body(pg_group *g, void *arg)
{
    int n = pg_size(g), me = pgc_rank(g), right = (me + 1) % n, left = (me + n - 1) % n, t;
    int32_t v, w;
    size_t got = 0;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    /* tags 1, 2, 3 in order; the receiver takes 3, 1, 2; then two messages on tag 4 stay FIFO
       (at most PG_MIN_INFLIGHT messages in flight per pair) */
    for (t = 1; t <= 3; t++) {
        v = me * 100 + t;
        PGC_OK(pg_send(g, right, t, &v, sizeof v));
    }
    PGC_OK(pg_recv(g, left, 3, &w, sizeof w, &got));
    PGC_CHECK(got == sizeof w && w == left * 100 + 3);
    /* probe: tag 1 is waiting (eventually), tag 9 is not */
    PGC_RC(pg_probe(g, left, 9, &got), 0);
    {
        size_t pb = 0;
        long spins = 0;
        int pr = 0;
        while ((pr = pg_probe(g, left, 1, &pb)) == 0 && ++spins < 100000000L) { /* sent before tag 3 */
        }
        PGC_CHECK(pr == 1 && pb == sizeof(int32_t));
    }
    PGC_OK(pg_recv(g, left, 1, &w, sizeof w, &got));
    PGC_CHECK(w == left * 100 + 1);
    PGC_OK(pg_recv(g, left, 2, &w, sizeof w, &got));
    PGC_CHECK(w == left * 100 + 2);
    v = me * 100 + 41;
    PGC_OK(pg_send(g, right, 4, &v, sizeof v));
    v = me * 100 + 42;
    PGC_OK(pg_send(g, right, 4, &v, sizeof v));
    PGC_OK(pg_recv(g, left, 4, &w, sizeof w, &got));
    PGC_CHECK(w == left * 100 + 41);
    PGC_OK(pg_recv(g, left, 4, &w, sizeof w, &got));
    PGC_CHECK(w == left * 100 + 42);
    PGC_RC(pg_probe(g, left, 4, &got), 0);
    /* receive with timeout 0 on an empty tag: never blocks */
    PGC_RC(pg_recv_timeout(g, left, 5, &w, sizeof w, &got, 0), PG_ERR_TIMEOUT);
    return pg_barrier(g) == PG_OK ? 0 : __LINE__;
}

static int pgc_slots_body(pg_group *g, void *arg)
{
    int n = pg_size(g), me = pgc_rank(g), right = (me + 1) % n, left = (me + n - 1) % n, round;
    size_t got = 0, i;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (round = 0; round < 3; round++) {
        void *p = 0;
        const void *q = 0;
        uint32_t *u;
        PGC_OK(pg_slot_acquire(g, right, 64, &p));
        PGC_CHECK(p != 0);
        u = (uint32_t *)p;
        for (i = 0; i < 16; i++) u[i] = (uint32_t)(me * 1000 + round * 100) + (uint32_t)i;
        PGC_OK(pg_slot_commit(g, right, 7, p, 48)); /* fewer bytes than acquired is fine */
        PGC_OK(pg_slot_peek(g, left, 7, &q, &got));
        PGC_CHECK(q != 0 && got == 48);
        for (i = 0; i < 12; i++)
            PGC_CHECK(((const uint32_t *)q)[i] == (uint32_t)(left * 1000 + round * 100) + (uint32_t)i);
        PGC_OK(pg_slot_release(g, left, q));
    }
    /* slot -> pg_recv and pg_send -> peek interoperate */
    {
        void *p = 0;
        const void *q = 0;
        uint32_t w = 0, v = 0xA5A50000u + (uint32_t)me;
        PGC_OK(pg_slot_acquire(g, right, 4, &p));
        *(uint32_t *)p = v;
        PGC_OK(pg_slot_commit(g, right, 8, p, 4));
        PGC_OK(pg_recv(g, left, 8, &w, sizeof w, &got));
        PGC_CHECK(w == 0xA5A50000u + (uint32_t)left);
        PGC_OK(pg_send(g, right, 9, &v, sizeof v));
        PGC_OK(pg_slot_peek(g, left, 9, &q, &got));
        PGC_CHECK(got == 4 && *(const uint32_t *)q == 0xA5A50000u + (uint32_t)left);
        PGC_OK(pg_slot_release(g, left, q));
        /* bad slot use */
        PGC_RC(pg_slot_release(g, left, &w), PG_ERR_NO_SLOT);
        PGC_RC(pg_slot_commit(g, right, 8, &w, 4), PG_ERR_NO_SLOT);
        PGC_RC(pg_slot_acquire(g, right, pg_max_msg(g) + 1, &p), PG_ERR_TOO_BIG);
        PGC_RC(pg_slot_acquire(g, n, 4, &p), PG_ERR_RANK);
        PGC_RC(pg_slot_acquire(g, right, 4, (void **)0), PG_ERR_NULL);
    }
    return pg_barrier(g) == PG_OK ? 0 : __LINE__;
}

static int pgc_timeout_body(pg_group *g, void *arg)
{
    int n = pg_size(g), me = pgc_rank(g), right = (me + 1) % n, left = (me + n - 1) % n;
    int32_t v = me, w = -1;
    size_t got = 0;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    /* nobody sends tag 30: a short timeout, then the group is still usable */
    PGC_OK(pg_set_timeout(g, 30));
    PGC_CHECK(pg_timeout(g) == 30);
    PGC_RC(pg_recv(g, left, 30, &w, sizeof w, &got), PG_ERR_TIMEOUT);
    {
        const void *q = 0;
        PGC_RC(pg_slot_peek(g, left, 30, &q, &got), PG_ERR_TIMEOUT);
    }
    PGC_OK(pg_set_timeout(g, PGC_TIMEOUT_MS));
    PGC_OK(pg_send(g, right, 31, &v, sizeof v));
    PGC_OK(pg_recv(g, left, 31, &w, sizeof w, &got));
    PGC_CHECK(w == left);
    v = 1;
    PGC_OK(pg_all_reduce(g, &v, &w, 1, MB_I32, PG_SUM));
    PGC_CHECK(w == n);
    return 0;
}

static int pgc_bad_input_body(pg_group *g, void *arg)
{
    int n = pg_size(g), me = pgc_rank(g), right = (me + 1) % n, left = (me + n - 1) % n;
    int32_t v[4] = {1, 2, 3, 4}, w[4];
    size_t got = 0, counts[PGC_MAX_RANKS];
    int i;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (i = 0; i < n; i++) counts[i] = 1;
    PGC_RC(pg_send((pg_group *)0, right, 0, v, 4), PG_ERR_NULL);
    PGC_RC(pg_send(g, n, 0, v, 4), PG_ERR_RANK);
    PGC_RC(pg_send(g, -1, 0, v, 4), PG_ERR_RANK);
    PGC_RC(pg_send(g, right, -1, v, 4), PG_ERR_TAG);
    PGC_RC(pg_send(g, right, PG_TAG_MAX + 1, v, 4), PG_ERR_TAG);
    PGC_RC(pg_send(g, right, 0, (const void *)0, 4), PG_ERR_NULL);
    PGC_RC(pg_send(g, right, 0, v, pg_max_msg(g) + 1), PG_ERR_TOO_BIG);
    PGC_RC(pg_recv(g, n, 0, w, sizeof w, &got), PG_ERR_RANK);
    PGC_RC(pg_recv(g, left, PG_TAG_MAX + 1, w, sizeof w, &got), PG_ERR_TAG);
    PGC_RC(pg_recv(g, left, 0, (void *)0, 4, &got), PG_ERR_NULL);
    PGC_RC(pg_probe(g, n, 0, &got), PG_ERR_RANK);
    /* a message larger than the receive buffer: TOO_BIG, consumed, buffer untouched past cap */
    PGC_OK(pg_send(g, right, 40, v, sizeof v));
    w[0] = w[1] = w[2] = w[3] = -7;
    PGC_RC(pg_recv(g, left, 40, w, 2 * sizeof(int32_t), &got), PG_ERR_TOO_BIG);
    PGC_CHECK(w[2] == -7 && w[3] == -7);
    PGC_RC(pg_probe(g, left, 40, &got), 0);
    /* collectives: bad arguments are caught locally, before any traffic */
    PGC_RC(pg_all_reduce(g, v, w, 4, MB_I32, PG_AVG), PG_ERR_DTYPE);
    PGC_RC(pg_all_reduce(g, v, w, 4, MB_DTYPE_COUNT, PG_SUM), PG_ERR_DTYPE);
    PGC_RC(pg_all_reduce(g, v, w, 4, MB_I32, PG_RED_COUNT), PG_ERR_OP);
    PGC_RC(pg_all_reduce(g, (const void *)0, w, 4, MB_I32, PG_SUM), PG_ERR_NULL);
    PGC_RC(pg_broadcast(g, v, 4, MB_I32, n), PG_ERR_RANK);
    PGC_RC(pg_broadcast(g, v, 4, MB_I32, -1), PG_ERR_RANK);
    PGC_RC(pg_gather(g, v, w, 1, MB_I32, n), PG_ERR_RANK);
    PGC_RC(pg_scatterv(g, v, w, counts, MB_I32, n), PG_ERR_RANK);
    PGC_RC(pg_all_gatherv(g, v, w, (const size_t *)0, MB_I32), PG_ERR_NULL);
    PGC_RC(pg_reduce_scatter(g, v, w, 1, MB_U8, PG_AVG), PG_ERR_DTYPE);
    PGC_RC(pg_all_gather(g, v, w, (size_t)-1 / 2, MB_I32), PG_ERR_SIZE);
    PGC_RC(pg_barrier((pg_group *)0), PG_ERR_NULL);
    PGC_CHECK(pg_strerror(PG_ERR_MISMATCH) != pg_strerror(PG_ERR_TIMEOUT));
    PGC_CHECK(pg_strerror(1) == pg_strerror(-1000));
    /* still fine after all that */
    PGC_OK(pg_all_reduce(g, v, w, 4, MB_I32, PG_MAX));
    PGC_CHECK(w[0] == 1 && w[3] == 4);
    return 0;
}

/* ---- collectives with exact expected values ---- */
static int pgc_all_reduce_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), d, op, c, inplace;
    size_t es, cnt;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (d = 0; d < PGC_NDT; d++)
        for (op = 0; op < PG_RED_COUNT; op++)
            for (c = 0; c < PGC_NCOUNTS; c++)
                for (inplace = 0; inplace < 2; inplace++) {
                    mb_dtype dt = pgc_dtypes[d];
                    int salt = d * 5 + op + c;
                    if (!pgc_op_valid(dt, (pg_red)op)) continue;
                    if (inplace && c < 3) continue; /* 67: small path, PGC_BIG: sliced path */
                    cnt = pgc_counts[c];
                    es = pg_dtype_size(dt);
                    pgc_fill(pgc_a[me], dt, cnt, me, salt);
                    PGC_OK(pg_all_reduce(g, pgc_a[me], inplace ? (void *)pgc_a[me] : (void *)pgc_b[me], cnt, dt,
                                         (pg_red)op));
                    pgc_reference(pgc_c[me], dt, (pg_red)op, 0, cnt, n, salt);
                    PGC_CHECK(pgc_bytes_eq(inplace ? (void *)pgc_a[me] : (void *)pgc_b[me], pgc_c[me], cnt * es));
                }
    return 0;
}

/* uneven counts with empty ranks: rank r holds (r * 3 + shift) % 5 elements (0 for some) */
static void pgc_uneven(size_t *counts, int n, int shift, size_t scale)
{
    int r;
    for (r = 0; r < n; r++) counts[r] = (size_t)((r * 3 + shift) % 5) * scale;
}

static size_t pgc_sum(const size_t *counts, int upto)
{
    size_t s = 0;
    int r;
    for (r = 0; r < upto; r++) s += counts[r];
    return s;
}

static int pgc_all_gather_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), d, shift, r;
    size_t counts[PGC_MAX_RANKS], es, cnt, i;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (d = 0; d < PGC_NDT; d++) {
        mb_dtype dt = pgc_dtypes[d];
        es = pg_dtype_size(dt);
        /* even */
        for (i = 0; i < 3; i++) {
            cnt = i == 0 ? 1 : i == 1 ? 33 : PGC_BIG;
            pgc_fill(pgc_a[me], dt, cnt, me, d);
            PGC_OK(pg_all_gather(g, pgc_a[me], pgc_b[me], cnt, dt));
            for (r = 0; r < n; r++) {
                pgc_fill(pgc_c[me], dt, cnt, r, d);
                PGC_CHECK(pgc_bytes_eq((unsigned char *)pgc_b[me] + (size_t)r * cnt * es, pgc_c[me], cnt * es));
            }
        }
        /* uneven, with empty ranks; small and large scales */
        for (shift = 0; shift < 3; shift++) {
            pgc_uneven(counts, n, shift, shift == 2 ? PGC_BIG / 4 : 3);
            pgc_fill(pgc_a[me], dt, counts[me], me, d + shift);
            PGC_OK(pg_all_gatherv(g, pgc_a[me], pgc_b[me], counts, dt));
            for (r = 0; r < n; r++) {
                pgc_fill(pgc_c[me], dt, counts[r], r, d + shift);
                PGC_CHECK(
                    pgc_bytes_eq((unsigned char *)pgc_b[me] + pgc_sum(counts, r) * es, pgc_c[me], counts[r] * es));
            }
        }
    }
    /* in place: own block already inside recv */
    pgc_uneven(counts, n, 1, 7);
    pgc_fill((unsigned char *)pgc_b[me] + pgc_sum(counts, me) * 4, MB_I32, counts[me], me, 9);
    PGC_OK(pg_all_gatherv(g, (unsigned char *)pgc_b[me] + pgc_sum(counts, me) * 4, pgc_b[me], counts, MB_I32));
    for (r = 0; r < n; r++) {
        pgc_fill(pgc_c[me], MB_I32, counts[r], r, 9);
        PGC_CHECK(pgc_bytes_eq((unsigned char *)pgc_b[me] + pgc_sum(counts, r) * 4, pgc_c[me], counts[r] * 4));
    }
    return 0;
}

/* Rank r's send for reduce_scatter: element j of the packed array is pgc_val(r, j, salt). */
static int pgc_reduce_scatter_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), d, op, shift;
    size_t counts[PGC_MAX_RANKS], es, total;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (d = 0; d < PGC_NDT; d++)
        for (op = 0; op < PG_RED_COUNT; op++) {
            mb_dtype dt = pgc_dtypes[d];
            int salt = d + op * 3;
            if (!pgc_op_valid(dt, (pg_red)op)) continue;
            es = pg_dtype_size(dt);
            /* even, several sizes */
            for (shift = 0; shift < 3; shift++) {
                size_t cnt = shift == 0 ? 1 : shift == 1 ? 19 : PGC_BIG / 2;
                pgc_fill(pgc_a[me], dt, cnt * (size_t)n, me, salt);
                PGC_OK(pg_reduce_scatter(g, pgc_a[me], pgc_b[me], cnt, dt, (pg_red)op));
                pgc_reference(pgc_c[me], dt, (pg_red)op, cnt * (size_t)me, cnt, n, salt);
                PGC_CHECK(pgc_bytes_eq(pgc_b[me], pgc_c[me], cnt * es));
            }
            /* uneven with empty blocks */
            for (shift = 0; shift < 2; shift++) {
                pgc_uneven(counts, n, shift + 2, shift ? PGC_BIG / 5 : 2);
                total = pgc_sum(counts, n);
                pgc_fill(pgc_a[me], dt, total, me, salt);
                PGC_OK(pg_reduce_scatterv(g, pgc_a[me], pgc_b[me], counts, dt, (pg_red)op));
                pgc_reference(pgc_c[me], dt, (pg_red)op, pgc_sum(counts, me), counts[me], n, salt);
                PGC_CHECK(pgc_bytes_eq(pgc_b[me], pgc_c[me], counts[me] * es));
            }
        }
    return 0;
}

/* all_to_allv: rank i sends f(i, j) elements to rank j, values pgc_val(i * 16 + j, k, 5) */
static size_t pgc_a2a_count(int i, int j, size_t scale)
{
    return (size_t)((i * 2 + j * 3 + 1) % 4) * scale;
}

static int pgc_all_to_all_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), d, j, s;
    size_t sc[PGC_MAX_RANKS], rc[PGC_MAX_RANKS], es;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (d = 0; d < PGC_NDT; d++)
        for (s = 0; s < 3; s++) {
            mb_dtype dt = pgc_dtypes[d];
            size_t scale = s == 0 ? 1 : s == 1 ? 5 : PGC_BIG / 4;
            es = pg_dtype_size(dt);
            for (j = 0; j < n; j++) {
                sc[j] = pgc_a2a_count(me, j, scale);
                rc[j] = pgc_a2a_count(j, me, scale);
                pgc_fill((unsigned char *)pgc_a[me] + pgc_sum(sc, j) * es, dt, sc[j], me * 16 + j, 5 + d);
            }
            PGC_OK(pg_all_to_allv(g, pgc_a[me], sc, pgc_b[me], rc, dt));
            for (j = 0; j < n; j++) {
                pgc_fill(pgc_c[me], dt, rc[j], j * 16 + me, 5 + d);
                PGC_CHECK(pgc_bytes_eq((unsigned char *)pgc_b[me] + pgc_sum(rc, j) * es, pgc_c[me], rc[j] * es));
            }
            /* even variant */
            for (j = 0; j < n; j++)
                pgc_fill((unsigned char *)pgc_a[me] + (size_t)j * scale * es, dt, scale, me * 16 + j, d);
            PGC_OK(pg_all_to_all(g, pgc_a[me], pgc_b[me], scale, dt));
            for (j = 0; j < n; j++) {
                pgc_fill(pgc_c[me], dt, scale, j * 16 + me, d);
                PGC_CHECK(pgc_bytes_eq((unsigned char *)pgc_b[me] + (size_t)j * scale * es, pgc_c[me], scale * es));
            }
        }
    return 0;
}

static int pgc_rooted_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), d, root, r, s;
    size_t counts[PGC_MAX_RANKS], es, cnt;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    for (root = 0; root < n; root++)
        for (d = 0; d < PGC_NDT; d++)
            for (s = 0; s < 3; s++) {
                mb_dtype dt = pgc_dtypes[d];
                es = pg_dtype_size(dt);
                cnt = s == 0 ? 0 : s == 1 ? 3 : PGC_BIG;
                /* broadcast from every root */
                if (me == root)
                    pgc_fill(pgc_a[me], dt, cnt, root, 11 + d);
                else
                    pgc_fill(pgc_a[me], dt, cnt, root + 1, 12);
                PGC_OK(pg_broadcast(g, pgc_a[me], cnt, dt, root));
                pgc_fill(pgc_c[me], dt, cnt, root, 11 + d);
                PGC_CHECK(pgc_bytes_eq(pgc_a[me], pgc_c[me], cnt * es));
                /* gatherv / scatterv, uneven with empty ranks */
                pgc_uneven(counts, n, root + s, s == 2 ? PGC_BIG / 4 : 2);
                pgc_fill(pgc_a[me], dt, counts[me], me, 13 + d);
                PGC_OK(pg_gatherv(g, pgc_a[me], me == root ? (void *)pgc_b[me] : (void *)0, counts, dt, root));
                if (me == root)
                    for (r = 0; r < n; r++) {
                        pgc_fill(pgc_c[me], dt, counts[r], r, 13 + d);
                        PGC_CHECK(pgc_bytes_eq((unsigned char *)pgc_b[me] + pgc_sum(counts, r) * es, pgc_c[me],
                                               counts[r] * es));
                    }
                if (me == root)
                    for (r = 0; r < n; r++)
                        pgc_fill((unsigned char *)pgc_a[me] + pgc_sum(counts, r) * es, dt, counts[r], r + 20, d);
                PGC_OK(pg_scatterv(g, me == root ? (const void *)pgc_a[me] : (const void *)0, pgc_b[me], counts, dt,
                                   root));
                pgc_fill(pgc_c[me], dt, counts[me], me + 20, d);
                PGC_CHECK(pgc_bytes_eq(pgc_b[me], pgc_c[me], counts[me] * es));
                /* even gather / scatter */
                pgc_fill(pgc_a[me], dt, 4, me, 30);
                PGC_OK(pg_gather(g, pgc_a[me], pgc_b[me], 4, dt, root));
                if (me == root)
                    for (r = 0; r < n; r++) {
                        pgc_fill(pgc_c[me], dt, 4, r, 30);
                        PGC_CHECK(pgc_bytes_eq((unsigned char *)pgc_b[me] + (size_t)r * 4 * es, pgc_c[me], 4 * es));
                    }
                PGC_OK(pg_scatter(g, pgc_b[me], pgc_a[me], 4, dt, root));
                pgc_fill(pgc_c[me], dt, 4, me, 30); /* root scattered what it gathered */
                PGC_CHECK(pgc_bytes_eq(pgc_a[me], pgc_c[me], 4 * es));
            }
    PGC_OK(pg_barrier(g));
    PGC_OK(pg_barrier(g));
    return 0;
}

/* ---- sub-groups: rows and columns of a 2 x (n/2) mesh ---- */
static int pgc_subgroup_body(pg_group *g, void *arg)
{
    static pg_group rowg[PGC_MAX_RANKS], colg[PGC_MAX_RANKS], other[PGC_MAX_RANKS];
    int me = pgc_rank(g), n = pg_size(g), rows[PGC_MAX_RANKS], cols[PGC_MAX_RANKS], nr = 0, nc = 0, i, pass;
    int myrow = me / 2, mycol = me % 2;
    size_t counts[PGC_MAX_RANKS], got = 0;
    pg_group *row = &rowg[me], *col = &colg[me];
    (void)arg;
    PGC_SUB(pgc_begin(g));
    if (n % 2) return 0; /* needs an even world */
    for (i = 0; i < n; i++) {
        if (i / 2 == myrow) rows[nr++] = i;
        if (i % 2 == mycol) cols[nc++] = i;
    }
    PGC_OK(pg_subgroup_init(row, g, rows, nr));
    PGC_OK(pg_subgroup_init(col, g, cols, nc));
    PGC_CHECK(pg_size(row) == 2 && pg_rank(row) == mycol);
    PGC_CHECK(pg_size(col) == n / 2 && pg_rank(col) == myrow);
    PGC_CHECK(pg_world_rank(row, 1 - mycol) == (me ^ 1));
    /* a group this rank is not in */
    {
        int not_me[1];
        int32_t v = 0;
        not_me[0] = (me + 1) % n;
        PGC_RC(pg_subgroup_init(&other[me], g, not_me, 1), PG_ERR_NOT_MEMBER);
        PGC_RC(pg_send(&other[me], 0, 0, &v, 4), PG_ERR_NOT_MEMBER);
        PGC_RC(pg_all_reduce(&other[me], &v, &v, 1, MB_I32, PG_SUM), PG_ERR_NOT_MEMBER);
        PGC_RC(pg_rank(&other[me]), PG_ERR_NOT_MEMBER);
    }
    {
        int dup[2];
        dup[0] = 0;
        dup[1] = 0;
        PGC_RC(pg_subgroup_init(&other[me], g, dup, 2), PG_ERR_RANK);
        PGC_RC(pg_subgroup_init(&other[me], g, dup, n + 1), PG_ERR_SIZE);
        PGC_RC(pg_subgroup_init(g, g, dup, 1), PG_ERR_SIZE); /* sub == parent */
        PGC_RC(pg_subgroup_init(&other[me], g, (const int *)0, 1), PG_ERR_NULL);
    }
    /* tags of different groups never mix: same peer, same user tag, world vs row */
    {
        int32_t a = 1000 + me, b = 2000 + me, x = 0, y = 0, peer = me ^ 1;
        PGC_OK(pg_send(g, peer, 5, &a, 4));
        PGC_OK(pg_send(row, 1 - mycol, 5, &b, 4));
        PGC_OK(pg_recv(row, 1 - mycol, 5, &y, 4, &got));
        PGC_OK(pg_recv(g, peer, 5, &x, 4, &got));
        PGC_CHECK(x == 1000 + peer && y == 2000 + peer);
    }
    for (pass = 0; pass < 2; pass++) {
        pg_group *sg = pass ? col : row;
        const int *mem = pass ? cols : rows;
        int sn = pg_size(sg), sr = pg_rank(sg), d, op, r;
        for (d = 0; d < PGC_NDT; d++)
            for (op = 0; op < PG_RED_COUNT; op++) {
                mb_dtype dt = pgc_dtypes[d];
                size_t es = pg_dtype_size(dt), cnt = op == 0 ? PGC_BIG : 37;
                if (!pgc_op_valid(dt, (pg_red)op)) continue;
                pgc_fill(pgc_a[me], dt, cnt, sr, d + op);
                PGC_OK(pg_all_reduce(sg, pgc_a[me], pgc_b[me], cnt, dt, (pg_red)op));
                pgc_reference(pgc_c[me], dt, (pg_red)op, 0, cnt, sn, d + op);
                PGC_CHECK(pgc_bytes_eq(pgc_b[me], pgc_c[me], cnt * es));
            }
        /* uneven all_gatherv and reduce_scatterv in the sub-group */
        pgc_uneven(counts, sn, pass, 3);
        pgc_fill(pgc_a[me], MB_I16, counts[sr], sr, 3);
        PGC_OK(pg_all_gatherv(sg, pgc_a[me], pgc_b[me], counts, MB_I16));
        for (r = 0; r < sn; r++) {
            pgc_fill(pgc_c[me], MB_I16, counts[r], r, 3);
            PGC_CHECK(pgc_bytes_eq((unsigned char *)pgc_b[me] + pgc_sum(counts, r) * 2, pgc_c[me], counts[r] * 2));
        }
        pgc_fill(pgc_a[me], MB_F32, pgc_sum(counts, sn), sr, 4);
        PGC_OK(pg_reduce_scatterv(sg, pgc_a[me], pgc_b[me], counts, MB_F32, PG_SUM));
        pgc_reference(pgc_c[me], MB_F32, PG_SUM, pgc_sum(counts, sr), counts[sr], sn, 4);
        PGC_CHECK(pgc_bytes_eq(pgc_b[me], pgc_c[me], counts[sr] * 4));
        /* broadcast from every sub-rank; the payload names the world rank of the root */
        for (r = 0; r < sn; r++) {
            pgc_fill(pgc_a[me], MB_I32, 100, sr == r ? mem[r] : -1, 6);
            PGC_OK(pg_broadcast(sg, pgc_a[me], 100, MB_I32, r));
            pgc_fill(pgc_c[me], MB_I32, 100, mem[r], 6);
            PGC_CHECK(pgc_bytes_eq(pgc_a[me], pgc_c[me], 400));
        }
        PGC_OK(pg_barrier(sg));
    }
    /* a sub-group of the row (nested) */
    {
        static pg_group nested[PGC_MAX_RANKS];
        int both[2];
        int32_t v = me + 1, w = 0;
        both[0] = 1;
        both[1] = 0; /* reversed order */
        PGC_OK(pg_subgroup_init(&nested[me], row, both, 2));
        PGC_CHECK(pg_rank(&nested[me]) == 1 - mycol);
        PGC_OK(pg_all_reduce(&nested[me], &v, &w, 1, MB_I32, PG_SUM));
        PGC_CHECK(w == (me + 1) + ((me ^ 1) + 1));
    }
    PGC_OK(pg_barrier(g));
    return 0;
}

/* ---- faults ---- */
static int pgc_abort_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), rc;
    int32_t v = 0, w = 0;
    size_t got = 0;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    /* the barrier may already see rank 0's abort on a rank that leaves it late */
    rc = pg_barrier(g);
    PGC_CHECK(rc == PG_OK || (rc == PG_ERR_ABORTED && me != 0));
    /* long timeout: if the abort did not propagate, peers would report TIMEOUT instead */
    PGC_OK(pg_set_timeout(g, 20000));
    if (rc == PG_ERR_ABORTED) {
        PGC_RC(pg_recv(g, 0, 50, &w, 4, &got), PG_ERR_ABORTED);
    } else if (me == 0) {
        rc = pg_abort(g, -42);
        if (rc == PG_ERR_UNSUPPORTED) return 0; /* (then on every rank: nothing else runs) */
        PGC_OK(rc);
        PGC_RC(pg_recv(g, 1 % n, 50, &w, 4, &got), PG_ERR_ABORTED);
    } else {
        /* blocked on a message that will never come; rank 0 aborts instead */
        PGC_RC(pg_recv(g, 0, 50, &w, 4, &got), PG_ERR_ABORTED);
        PGC_RC(pg_all_reduce(g, &v, &w, 1, MB_I32, PG_SUM), PG_ERR_ABORTED);
    }
    PGC_OK(pg_recover(g));
    PGC_OK(pg_set_timeout(g, PGC_TIMEOUT_MS));
    v = me;
    PGC_OK(pg_all_reduce(g, &v, &w, 1, MB_I32, PG_SUM));
    PGC_CHECK(w == n * (n - 1) / 2);
    return 0;
}

static int pgc_mismatch_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), rc, r;
    size_t counts[PGC_MAX_RANKS];
    (void)arg;
    PGC_SUB(pgc_begin(g));
    PGC_OK(pg_set_timeout(g, 300));
    /* rank 0 asks for 10 elements, the others for 12: nobody may overrun; errors only */
    pgc_fill(pgc_a[me], MB_I32, 12, me, 0);
    rc = pg_all_reduce(g, pgc_a[me], pgc_b[me], me == 0 ? 10 : 12, MB_I32, PG_SUM);
    PGC_CHECK(rc == PG_ERR_MISMATCH || rc == PG_ERR_TIMEOUT);
    /* all_gatherv where rank 0 believes its own count is larger than the others think:
       every rank sees it (none may return PG_OK beside its peers' errors) */
    for (r = 0; r < n; r++) counts[r] = 4;
    if (me == 0) counts[0] = 6;
    rc = pg_all_gatherv(g, pgc_a[me], pgc_b[me], counts, MB_I32);
    PGC_CHECK(n == 1 || rc == PG_ERR_MISMATCH);
    /* the same in a sub-group of all ranks in reverse order (pg.h's generic algorithms on
       ports whose native collectives serve only the world) */
    {
        static pg_group rev[PGC_MAX_RANKS];
        int ranks[PGC_MAX_RANKS];
        for (r = 0; r < n; r++) ranks[r] = n - 1 - r;
        PGC_OK(pg_subgroup_init(&rev[me], g, ranks, n));
        rc = pg_all_reduce(&rev[me], pgc_a[me], pgc_b[me], pg_rank(&rev[me]) == 0 ? 10 : 12, MB_I32, PG_SUM);
        PGC_CHECK(rc == PG_ERR_MISMATCH || rc == PG_ERR_TIMEOUT);
        rc = pg_all_gatherv(&rev[me], pgc_a[me], pgc_b[me], counts, MB_I32);
        PGC_CHECK(n == 1 || rc == PG_ERR_MISMATCH);
        rc = pg_reduce_scatterv(&rev[me], pgc_a[me], pgc_b[me], counts, MB_I32, me == 0 ? PG_MAX : PG_MIN);
        PGC_CHECK(n == 1 || rc == PG_ERR_MISMATCH || rc == PG_ERR_TIMEOUT);
    }
    /* recover meets every rank, which may arrive a few timeouts apart: the long timeout */
    PGC_OK(pg_set_timeout(g, PGC_TIMEOUT_MS));
    PGC_OK(pg_recover(g));
    pgc_fill(pgc_a[me], MB_I32, 12, me, 0);
    PGC_OK(pg_all_reduce(g, pgc_a[me], pgc_b[me], 12, MB_I32, PG_SUM));
    pgc_reference(pgc_c[me], MB_I32, PG_SUM, 0, 12, n, 0);
    PGC_CHECK(pgc_bytes_eq(pgc_b[me], pgc_c[me], 48));
    return 0;
}

/* ---- stress: at least PGC_STRESS_MESSAGES in total, sequence numbers + checksums ---- */
static long pgc_stress_received[PGC_MAX_RANKS];

/* messages each rank receives in the stress test of an n-rank world */
static long pgc_stress_per_rank(int n)
{
    return ((PGC_STRESS_MESSAGES + n - 1) / n + 2) / 3 * 3;
}

static uint32_t pgc_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

/* Bursts of 3 messages on tags 0, 1, 2 (streams), taken back in the order 2, 1, 0; each
   carries its sequence number, the sender, 5 payload words hashed from (sender, seq) and an
   xor checksum. Counts of received messages are asserted per rank and summed by the driver. */
static int pgc_stress_body(pg_group *g, void *arg)
{
    int me = pgc_rank(g), n = pg_size(g), right = (me + 1) % n, left = (me + n - 1) % n;
    long bursts = pgc_stress_per_rank(n) / 3, b, got_msgs = 0;
    uint32_t msg[8], in[8];
    size_t got = 0;
    int i, t;
    (void)arg;
    PGC_SUB(pgc_begin(g));
    pgc_stress_received[me] = 0;
    if (n == 1) return 0;
    for (b = 0; b < bursts; b++) {
        for (t = 0; t < 3; t++) {
            uint32_t k = (uint32_t)(b * 3 + t), sum = 0;
            msg[0] = k;
            msg[1] = (uint32_t)me;
            for (i = 2; i < 7; i++) sum ^= msg[i] = pgc_hash(k * 8u + (uint32_t)i + ((uint32_t)me << 28));
            msg[7] = sum ^ k;
            PGC_OK(pg_send(g, right, t, msg, sizeof msg));
        }
        for (t = 2; t >= 0; t--) {
            uint32_t k = (uint32_t)(b * 3 + t), sum = 0;
            PGC_OK(pg_recv(g, left, t, in, sizeof in, &got));
            PGC_CHECK(got == sizeof in);
            PGC_CHECK(in[0] == k && in[1] == (uint32_t)left); /* nothing lost/duplicated/reordered */
            for (i = 2; i < 7; i++) {
                PGC_CHECK(in[i] == pgc_hash(k * 8u + (uint32_t)i + ((uint32_t)left << 28))); /* not corrupted */
                sum ^= in[i];
            }
            PGC_CHECK(in[7] == (sum ^ k));
            got_msgs++;
        }
    }
    for (t = 0; t < 3; t++) PGC_RC(pg_probe(g, left, t, &got), 0); /* nothing extra */
    pgc_stress_received[me] = got_msgs;
    PGC_CHECK(got_msgs == bursts * 3);
    return pg_barrier(g) == PG_OK ? 0 : __LINE__;
}

/* ---- cmocka wrappers ---- */
#define PGC_TEST(name)                                      \
    static void pgc_test_##name(void **state)               \
    {                                                       \
        (void)state;                                        \
        assert_int_equal(pgc_run(pgc_##name##_body, 0), 0); \
    }
PGC_TEST(p2p)
PGC_TEST(tags)
PGC_TEST(slots)
PGC_TEST(timeout)
PGC_TEST(bad_input)
PGC_TEST(all_reduce)
PGC_TEST(all_gather)
PGC_TEST(reduce_scatter)
PGC_TEST(all_to_all)
PGC_TEST(rooted)
PGC_TEST(subgroup)
PGC_TEST(abort)
PGC_TEST(mismatch)
PGC_TEST(stress)

static const struct CMUnitTest pgc_tests[] = {
    cmocka_unit_test(pgc_test_p2p),        cmocka_unit_test(pgc_test_tags),
    cmocka_unit_test(pgc_test_slots),      cmocka_unit_test(pgc_test_timeout),
    cmocka_unit_test(pgc_test_bad_input),  cmocka_unit_test(pgc_test_all_reduce),
    cmocka_unit_test(pgc_test_all_gather), cmocka_unit_test(pgc_test_reduce_scatter),
    cmocka_unit_test(pgc_test_all_to_all), cmocka_unit_test(pgc_test_rooted),
    cmocka_unit_test(pgc_test_subgroup),   cmocka_unit_test(pgc_test_abort),
    cmocka_unit_test(pgc_test_mismatch),   cmocka_unit_test(pgc_test_stress),
};

#endif /* PG_CONFORMANCE_H */
