/* soak.h — the soak run of one rank over any pg.h port (`scons soak`, not in `scons test`).

   Every round, each rank sends SOAK_BURST messages to every other rank (tags cycle through
   SOAK_TAGS, lengths through 20..SOAK_MAX_BYTES - 4, every word derived from (src, dst, seq)
   plus an FNV-1a checksum word), then receives the bursts of every peer, tag by tag in the
   order they were sent, and (every few rounds) runs one collective (all_reduce, all_gather, broadcast,
   reduce_scatter, all_to_all, barrier in turn) whose result it checks exactly (integers).
   A received message is classified: ok (the expected sequence number, intact), corrupt
   (checksum, header or length wrong), duplicated (a sequence number already received),
   reordered (a later one than expected); lost = sent - received. A burst never exceeds
   PG_MIN_INFLIGHT messages per pair, so sends complete without the receiver's help.
   The caller sums soak_stats over the ranks (soak_add); soak_report asserts everything but ok
   is 0 and the goals are reached (collectives counted once per world call). */
#ifndef SOAK_H
#define SOAK_H
#include <stdint.h>
#include <string.h>

#ifndef SOAK_BURST
#define SOAK_BURST PG_MIN_INFLIGHT
#endif
#ifndef SOAK_MESSAGES /* goals per port (totals over the world) */
#define SOAK_MESSAGES 10000000ull
#endif
#ifndef SOAK_COLLECTIVES
#define SOAK_COLLECTIVES 100000ull
#endif
#define SOAK_TAGS       3
#define SOAK_MAX_BYTES  256
#define SOAK_COLL_ELEMS 64
#define SOAK_MAX_RANKS  8

typedef struct soak_stats {
    uint64_t sent, received, ok, corrupt, duplicated, reordered, collectives, coll_corrupt, errors;
    int first_error;
} soak_stats;

static uint32_t soak__word(int src, int dst, uint32_t seq, uint32_t i)
{
    uint32_t x = (uint32_t)src * 0x9E3779B1u ^ (uint32_t)dst * 0x85EBCA77u ^ seq * 0xC2B2AE3Du ^ i * 0x27D4EB2Fu;
    return x ^ (x >> 15);
}

static uint32_t soak__fnv(const uint32_t *w, uint32_t n)
{
    uint32_t h = 2166136261u, i;
    for (i = 0; i < n; i++) h = (h ^ w[i]) * 16777619u;
    return h;
}

/* words of message seq from src to dst: [seq, src, dst, nwords, data..., checksum] */
static uint32_t soak__fill(uint32_t *w, int src, int dst, uint32_t seq)
{
    uint32_t n = 5u + (seq * 7u % (SOAK_MAX_BYTES / 4 - 5)), i; /* 20 .. SOAK_MAX_BYTES - 4 bytes */
    w[0] = seq;
    w[1] = (uint32_t)src;
    w[2] = (uint32_t)dst;
    w[3] = n;
    for (i = 4; i + 1 < n; i++) w[i] = soak__word(src, dst, seq, i);
    w[n - 1] = soak__fnv(w, n - 1);
    return n;
}

static void soak__error(soak_stats *st, int rc)
{
    st->errors++;
    if (!st->first_error) st->first_error = rc;
}

/* One collective (kind k), checked exactly. */
static void soak__collective(pg_group *g, uint64_t round, soak_stats *st)
{
    static int32_t a[SOAK_MAX_RANKS][SOAK_MAX_RANKS * SOAK_COLL_ELEMS],
        b[SOAK_MAX_RANKS][SOAK_MAX_RANKS * SOAK_COLL_ELEMS];
    int me = pg_rank(g), n = pg_size(g), k = (int)(round % 6u), r, i, bad = 0, rc = 0,
        root = (int)(round % (uint64_t)n);
    int32_t *x = a[me], *y = b[me], base = (int32_t)(round & 0xFFFFu);
    for (i = 0; i < n * SOAK_COLL_ELEMS; i++) {
        x[i] = base + me * 1000 + i;
        y[i] = -1;
    }
    switch (k) {
    case 0: /* all_reduce SUM: sum over r of (base + r*1000 + i) */
        rc = pg_all_reduce(g, x, y, SOAK_COLL_ELEMS, MB_I32, PG_SUM);
        for (i = 0; !rc && i < SOAK_COLL_ELEMS; i++) bad |= y[i] != n * (base + i) + 1000 * n * (n - 1) / 2;
        break;
    case 1:
        rc = pg_all_gather(g, x, y, SOAK_COLL_ELEMS, MB_I32);
        for (r = 0; !rc && r < n; r++)
            for (i = 0; i < SOAK_COLL_ELEMS; i++) bad |= y[r * SOAK_COLL_ELEMS + i] != base + r * 1000 + i;
        break;
    case 2:
        rc = pg_broadcast(g, x, SOAK_COLL_ELEMS, MB_I32, root);
        for (i = 0; !rc && i < SOAK_COLL_ELEMS; i++) bad |= x[i] != base + root * 1000 + i;
        break;
    case 3: /* reduce_scatter MAX: block me, max over ranks = rank n-1's */
        rc = pg_reduce_scatter(g, x, y, SOAK_COLL_ELEMS, MB_I32, PG_MAX);
        for (i = 0; !rc && i < SOAK_COLL_ELEMS; i++) bad |= y[i] != base + (n - 1) * 1000 + me * SOAK_COLL_ELEMS + i;
        break;
    case 4:
        rc = pg_all_to_all(g, x, y, SOAK_COLL_ELEMS, MB_I32);
        for (r = 0; !rc && r < n; r++)
            for (i = 0; i < SOAK_COLL_ELEMS; i++)
                bad |= y[r * SOAK_COLL_ELEMS + i] != base + r * 1000 + me * SOAK_COLL_ELEMS + i;
        break;
    default: rc = pg_barrier(g); break;
    }
    if (rc)
        soak__error(st, rc);
    else
        st->collectives++;
    st->coll_corrupt += (uint64_t)bad;
}

/* The rank's whole run: `rounds` rounds, a collective every `every` rounds. */
static void soak_run(pg_group *g, uint64_t rounds, uint64_t every, soak_stats *st)
{
    uint32_t next_send[SOAK_MAX_RANKS], next_recv[SOAK_MAX_RANKS];
    uint32_t msg[SOAK_MAX_BYTES / 4], in[SOAK_MAX_BYTES / 4 + 4];
    int me = pg_rank(g), n = pg_size(g), p, k, rc;
    uint64_t round;
    memset(st, 0, sizeof *st);
    memset(next_send, 0, sizeof next_send);
    memset(next_recv, 0, sizeof next_recv);
    for (round = 0; round < rounds; round++) {
        for (p = 0; p < n; p++) {
            if (p == me) continue;
            for (k = 0; k < SOAK_BURST; k++) {
                uint32_t seq = next_send[p]++, words = soak__fill(msg, me, p, seq);
                rc = pg_send(g, p, (int)(seq % SOAK_TAGS), msg, words * 4u);
                if (rc)
                    soak__error(st, rc);
                else
                    st->sent++;
            }
        }
        for (p = 0; p < n; p++) {
            if (p == me) continue;
            for (k = 0; k < SOAK_BURST; k++) {
                uint32_t want = next_recv[p], nw;
                size_t got = 0;
                rc = pg_recv(g, p, (int)(want % SOAK_TAGS), in, sizeof in, &got);
                if (rc) {
                    soak__error(st, rc);
                    continue;
                }
                st->received++;
                nw = (uint32_t)(got / 4);
                if (got % 4 || nw < 4 || in[3] != nw || in[1] != (uint32_t)p || in[2] != (uint32_t)me ||
                    in[nw - 1] != soak__fnv(in, nw - 1)) {
                    st->corrupt++;
                } else if (in[0] == want) {
                    st->ok++;
                } else if ((int32_t)(in[0] - want) < 0) {
                    st->duplicated++;
                } else {
                    st->reordered++;
                }
                next_recv[p] = want + 1u;
            }
        }
        if (round % every == 0) soak__collective(g, round / every, st);
    }
}

static void soak_add(soak_stats *sum, const soak_stats *s)
{
    sum->sent += s->sent;
    sum->received += s->received;
    sum->ok += s->ok;
    sum->corrupt += s->corrupt;
    sum->duplicated += s->duplicated;
    sum->reordered += s->reordered;
    sum->collectives += s->collectives;
    sum->coll_corrupt += s->coll_corrupt;
    sum->errors += s->errors;
    if (!sum->first_error) sum->first_error = s->first_error;
}

/* Prints the port's line; 0 if every count is clean and the totals reach the goals. */
static int soak_report(const char *port, int ranks, const soak_stats *s, double seconds, uint64_t min_msgs,
                       uint64_t min_colls)
{
    uint64_t lost = s->sent > s->received ? s->sent - s->received : 0, colls = s->collectives / (uint64_t)ranks;
    int ok = lost == 0 && s->corrupt == 0 && s->duplicated == 0 && s->reordered == 0 && s->coll_corrupt == 0 &&
             s->errors == 0 && s->ok == s->sent && s->sent >= min_msgs && colls >= min_colls &&
             s->collectives == colls * (uint64_t)ranks;
    printf("soak %-10s %d ranks: %llu messages (lost %llu, duplicated %llu, reordered %llu, corrupt %llu), "
           "%llu collectives (corrupt %llu), errors %llu%s%s, %.1f s: %s\n",
           port, ranks, (unsigned long long)s->sent, (unsigned long long)lost, (unsigned long long)s->duplicated,
           (unsigned long long)s->reordered, (unsigned long long)s->corrupt, (unsigned long long)colls,
           (unsigned long long)s->coll_corrupt, (unsigned long long)s->errors, s->errors ? " first " : "",
           s->errors ? pg_strerror(s->first_error) : "", seconds, ok ? "ok" : "FAILED");
    fflush(stdout);
    return ok ? 0 : 1;
}

/* Rounds (and rounds per collective) that reach both goals with n ranks. */
static uint64_t soak_rounds(int n, uint64_t messages, uint64_t collectives, uint64_t *every)
{
    uint64_t per_round = (uint64_t)n * (uint64_t)(n - 1) * SOAK_BURST;
    uint64_t rounds = (messages + per_round - 1) / per_round;
    if (rounds < collectives) rounds = collectives;
    *every = rounds / collectives;
    return rounds;
}
#endif /* SOAK_H */
