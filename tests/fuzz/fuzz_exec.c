/* fuzz_exec.c — pipeline.h's executor (pp_exec_query, pp_exec_bytes, pp_exec_init,
   pp_exec_run, pp_exec_loss) on 1-4 pg_pthread ranks from untrusted plans, configs and
   callbacks that fail.

   The input gives a plan: a built-in schedule, or a random topological order of the
   forward / backward (B, or I then W) actions of S stages on any stage map (several stages
   per rank, uneven, any rank order), training or inference; lowered (pp_lower's order or
   PyTorch's); sometimes damaged afterwards (actions swapped, dropped, doubled or changed).
   Then a config: layers per stage, rows, dtype, activation sizes (messages above the
   port's 64-byte max_msg travel in pieces), checkpointing, which callbacks exist, slot
   counts, events, and one callback (a layer's forward / backward_input / backward_weight,
   the input, loss or output) that fails once with a code that may look like a port's.
   Every rank's storage is a heap block of exactly pp_exec_query's bytes. Checked:
   - pp_exec_query, pp_exec_bytes and pp_exec_init agree; init takes exactly the queried
     bytes (one less: PP_ERR_TOO_SMALL; misaligned: PP_ERR_ARG), and a refused init leaves
     the pp_exec and the storage untouched;
   - every buffer a callback gets has the documented shape and lies in its rank's storage,
     its input apart from its output; layer 0 never gets backward_input;
   - a plan pp_validate and pp_simulate accept, with the slots pp_plan_table gives: two
     steps on every rank equal a single-rank reference (outputs, or losses and the weight
     gradients the layers accumulate; byte arithmetic, so exact); with a failing callback
     every rank returns PP_ERR_LAYER with its code and rank, and the next step is right;
     with fewer slots every rank returns the same error; events list the table's actions;
     a rank without stages returns PP_OK at once, and with one in the world the others'
     recover after an error cannot meet it (each returns an error of its own, and the world
     stays aborted);
   - any other plan (run with short timeouts, also when it deadlocks): pipeline codes only,
     err_rank a rank or -1.
   Mode "hostile": one field of a rank's pp_table or of the pp_exec_cfg (or one of its
   layers) gets a hostile value, arrays sized as the fields claim: pp_exec_query and
   pp_exec_init refuse exactly what the documented rules refuse (a checker written here
   from them), with outputs untouched. */
#define _POSIX_C_SOURCE       200809L
#define PG_PTHREAD_MAX_RANKS  4
#define PG_PTHREAD_SLOT_BYTES 64 /* the port's max_msg: activations above it go in pieces */
#define PG_PTHREAD_SMALL      256
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "fuzz.h"

#define MAXP   4
#define MAXS   8
#define MAXM   6
#define MAXL   12
#define UNITS  12 /* activation sizes: 1..UNITS units of rows x dtype size */
#define CAP    1024
#define STEPS  2
#define MAXEV  64
#define ACTMAX (UNITS * 3 * 8) /* bytes */

static int is_err(int rc)
{
    return rc <= 0 && rc >= PP_ERR_COMM;
}

/* ---- the plan ---- */
static pp_action st_c[MAXP * CAP], st_l[MAXP * CAP];
static pp_plan comp, low;
static uint32_t work[6 * MAXS * MAXM + 64];
static int P, S, M, train;

/* A random topological order of the plan's actions, each appended to its stage's rank. */
static void topo_plan(fz_in *in)
{
    uint8_t fdone[MAXS][MAXM], bdone[MAXS][MAXM], idone[MAXS][MAXM], wdone[MAXS][MAXM];
    uint8_t map[MAXS];
    int iw = (int)(fz_u8(in) & 1u), s, m, r, k;
    S = P + (int)(fz_u8(in) % (uint32_t)(MAXS - P + 1));
    M = 1 + (int)(fz_u8(in) % MAXM);
    train = (int)(fz_u8(in) & 1u);
    if (fz_u8(in) < 32) { /* any map: a rank may have no stage at all */
        for (s = 0; s < S; s++) map[s] = (uint8_t)(fz_u8(in) % (uint32_t)P);
    } else { /* every rank a stage: a permutation of the ranks first */
        uint8_t perm[MAXP];
        for (r = 0; r < P; r++) perm[r] = (uint8_t)r;
        for (r = P - 1; r > 0; r--) {
            int j = (int)(fz_u8(in) % (uint32_t)(r + 1));
            uint8_t x = perm[r];
            perm[r] = perm[j];
            perm[j] = x;
        }
        for (s = 0; s < S; s++) map[s] = s < P ? perm[s] : (uint8_t)(fz_u8(in) % (uint32_t)P);
    }
    FUZZ_REQUIRE(pp_plan_init(&comp, st_c, sizeof st_c, P, S, M) == PP_OK);
    memcpy(comp.stage_rank, map, (size_t)S);
    comp.schedule = !train && (fz_u8(in) & 1u) ? PP_SCHED_FORWARD_ONLY : PP_SCHED_CUSTOM;
    memset(fdone, 0, sizeof fdone);
    memset(bdone, 0, sizeof bdone);
    memset(idone, 0, sizeof idone);
    memset(wdone, 0, sizeof wdone);
    for (;;) { /* ready actions: F after the previous stage's F; B/I after the next stage's B/I
                  (the last stage: after its F); W after its I */
        pp_action ready[3 * MAXS * MAXM];
        int n = 0;
        for (s = 0; s < S; s++)
            for (m = 0; m < M; m++) {
                if (!fdone[s][m] && (!s || fdone[s - 1][m])) ready[n++] = (pp_action)PP_ACTION(PP_F, s, m);
                if (train && fdone[s][m] && !bdone[s][m] && (s == S - 1 ? 1 : bdone[s + 1][m]))
                    ready[n++] = (pp_action)PP_ACTION(iw && (fz_u8(in) & 1u) ? PP_I : PP_B, s, m);
                if (idone[s][m] && !wdone[s][m]) ready[n++] = (pp_action)PP_ACTION(PP_W, s, m);
            }
        if (!n) break;
        k = (int)(fz_u8(in) % (uint32_t)n);
        s = ready[k].stage;
        m = ready[k].mb;
        if (ready[k].type == PP_F) fdone[s][m] = 1;
        if (ready[k].type == PP_B || ready[k].type == PP_I) bdone[s][m] = 1;
        if (ready[k].type == PP_I) idone[s][m] = 1;
        if (ready[k].type == PP_W) wdone[s][m] = 1;
        r = map[s];
        st_c[r * comp.cap + comp.len[r]++] = ready[k];
    }
}

/* A built-in schedule (1; or, when its constructor refuses these sizes, a topological one: 0). */
static int make_plan(fz_in *in)
{
    P = 1 + (int)(fz_u8(in) % MAXP);
    if (fz_u8(in) < 96) {
        int sched = 1 + (int)(fz_u8(in) % (PP_SCHED_COUNT - 1)), V = 1 + (int)(fz_u8(in) & 1u);
        M = 1 + (int)(fz_u8(in) % MAXM);
        if (sched == PP_SCHED_ZBV) V = 2;
        if (sched == PP_SCHED_GPIPE || sched == PP_SCHED_1F1B || sched == PP_SCHED_FORWARD_ONLY) V = 1;
        if (pp_schedule_build(&comp, sched, P, V, M, st_c, sizeof st_c, NULL) == PP_OK && comp.nstages <= MAXS) {
            S = comp.nstages;
            train = sched != PP_SCHED_FORWARD_ONLY;
            return 1;
        }
    }
    topo_plan(in);
    return 0;
}

/* Damage: swap, drop, double, or change one field of an action of the lowered plan (0: none). */
static int damage(fz_in *in)
{
    int n = fz_u8(in) < 224 ? 0 : 1 + (int)(fz_u8(in) % 3u), any = n;
    while (n--) {
        int r = (int)(fz_u8(in) % (uint32_t)P), i, op = (int)(fz_u8(in) % 6u);
        pp_action *row = st_l + (size_t)r * (size_t)low.cap;
        if (!low.len[r]) continue;
        i = (int)(fz_u8(in) % (uint32_t)low.len[r]);
        if (op == 0 && i + 1 < low.len[r]) {
            pp_action a = row[i];
            row[i] = row[i + 1];
            row[i + 1] = a;
        } else if (op == 1) {
            memmove(row + i, row + i + 1, (size_t)(low.len[r] - i - 1) * sizeof *row);
            low.len[r]--;
        } else if (op == 2 && low.len[r] < low.cap) {
            memmove(row + i + 1, row + i, (size_t)(low.len[r] - i) * sizeof *row);
            low.len[r]++;
        } else if (op == 3) {
            row[i].type = (uint8_t)(fz_u8(in) % (PP_TYPE_COUNT + 1));
        } else if (op == 4) {
            row[i].mb = (uint16_t)(fz_u8(in) % (uint32_t)(M + 1));
        } else if (op == 5) {
            row[i].stage = (uint8_t)(fz_u8(in) % (uint32_t)(S + 1));
        }
    }
    low.mailbox = 0;
    return any;
}

/* ---- the model: byte arithmetic, so every order of the sums is exact ---- */
enum { K_NONE, K_FWD, K_BI, K_BW, K_INPUT, K_LOSS, K_OUTPUT, K_COUNT };
typedef struct lay {
    int l, rank;
    uint32_t nin, nout; /* bytes */
    uint32_t grad[STEPS];
    int calls[K_COUNT];
} lay;
typedef struct fail {
    int kind, layer, mb, nth, code;
    int fired, rank; /* set by the callback that failed (step 0 only) */
} fail;
typedef struct rankctx {
    int step;
    unsigned char *mem;
    size_t bytes;
} rankctx;

static pp_exec_cfg cfg;
static pp_layer layers[MAXL];
static lay lays[MAXL];
static int32_t balance[MAXS], stage_of[MAXL];
static uint32_t act[MAXL], in_bytes, seed;
static int ok_rc; /* what a callback returns on success: 0 or a positive value */
static fail F;
static rankctx rc_[MAXP];
static uint32_t out_hash[STEPS][MAXM];
static int out_calls[STEPS][MAXM], in_calls[STEPS][MAXM], loss_calls[STEPS][MAXM];
static double loss_val[STEPS][MAXM];
static uint32_t ref_grad[STEPS][MAXL], ref_hash[STEPS][MAXM];
static double ref_loss[STEPS][MAXM];
static uint32_t clock_;

static void fwd_bytes(int l, const unsigned char *x, uint32_t nin, unsigned char *y, uint32_t nout)
{
    uint32_t j;
    for (j = 0; j < nout; j++) y[j] = (unsigned char)(x[j % nin] * (2u * (uint32_t)l + 3u) + j + 7u * (uint32_t)l);
}
static void bi_bytes(int l, const unsigned char *x, uint32_t nin, const unsigned char *dy, uint32_t nout,
                     unsigned char *dx)
{
    uint32_t i, j;
    for (i = 0; i < nin; i++) {
        uint32_t s = x[i];
        for (j = i; j < nout; j += nin) s += (2u * (uint32_t)l + 3u) * dy[j];
        dx[i] = (unsigned char)s;
    }
}
static uint32_t bw_bytes(const unsigned char *x, uint32_t nin, const unsigned char *dy, uint32_t nout)
{
    uint32_t j, s = 0;
    for (j = 0; j < nout; j++) s += (uint32_t)dy[j] * x[j % nin] * (j + 1u);
    return s;
}
static void input_bytes(int step, int m, unsigned char *x, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) /* a multiplicative hash of (seed, step, mb, i): the top byte */
        x[i] = (unsigned char)(((seed + (uint32_t)step * 977u + (uint32_t)m * 131u + i) * 2654435761u) >> 24);
}
static double loss_bytes(int m, const unsigned char *y, uint32_t n, unsigned char *dy)
{
    uint32_t j;
    double s = 0;
    for (j = 0; j < n; j++) {
        s += y[j];
        dy[j] = (unsigned char)(y[j] ^ (0x5au + (uint32_t)m));
    }
    return s;
}
static uint32_t hash_bytes(const unsigned char *y, uint32_t n)
{
    uint32_t j, h = 2166136261u;
    for (j = 0; j < n; j++) h = (h ^ y[j]) * 16777619u;
    return h;
}

/* Single-rank reference of one step. */
static void reference(int step)
{
    static unsigned char a[MAXL + 1][ACTMAX], g[2][ACTMAX];
    int m, l, nl = cfg.nlayers;
    memset(ref_grad[step], 0, sizeof ref_grad[step]);
    for (m = 0; m < M; m++) {
        input_bytes(step, m, a[0], in_bytes);
        for (l = 0; l < nl; l++) fwd_bytes(l, a[l], l ? act[l - 1] : in_bytes, a[l + 1], act[l]);
        if (!train) {
            ref_hash[step][m] = hash_bytes(a[nl], act[nl - 1]);
            continue;
        }
        ref_loss[step][m] = loss_bytes(m, a[nl], act[nl - 1], g[0]);
        for (l = nl - 1; l >= 0; l--) {
            uint32_t nin = l ? act[l - 1] : in_bytes;
            if (layers[l].backward_weight) ref_grad[step][l] += bw_bytes(a[l], nin, g[0], act[l]);
            if (l) {
                bi_bytes(l, a[l], nin, g[0], act[l], g[1]);
                memcpy(g[0], g[1], nin);
            }
        }
    }
}

static pg_group *groups[MAXP]; /* each rank's */

/* The callback of this kind fails now (step 0, the chosen call). One that returns
   PG_ERR_ABORTED aborts the world first, as the executor's contract asks (a layer's own
   collective saw an abort, or the layer called pg_abort). */
static int fails(int kind, int layer, int mb, int rank)
{
    if (rc_[rank].step != 0 || F.kind != kind) return 0;
    if (kind <= K_BW) { /* (only the layer's own rank gets past here: no race on F) */
        if (layer != F.layer || lays[layer].calls[kind]++ != F.nth || F.fired) return 0;
    } else if (mb != F.mb || F.fired) {
        return 0;
    }
    F.fired = 1;
    F.rank = rank;
    if (F.code == PG_ERR_ABORTED) FUZZ_REQUIRE(pg_abort(groups[rank], PG_ERR_ABORTED) == PG_OK);
    return 1;
}

/* A buffer the executor hands a callback: [rows, n / rows / size] contiguous, in the rank's
   storage. */
static const unsigned char *buf(const mb_tensor *t, uint32_t n, int rank)
{
    const unsigned char *p = (const unsigned char *)t->data;
    FUZZ_REQUIRE(t->ndim == 2 && t->dtype == (mb_dtype)cfg.dtype && t->shape[0] == cfg.rows);
    FUZZ_REQUIRE((uint64_t)t->shape[1] * (uint64_t)cfg.rows * mb_dtype_size(t->dtype) == n);
    FUZZ_REQUIRE(t->stride[0] == t->shape[1] && t->stride[1] == 1);
    FUZZ_REQUIRE(p && p >= rc_[rank].mem && p + n <= rc_[rank].mem + rc_[rank].bytes);
    return p;
}
static int apart(const void *a, uint32_t na, const void *b, uint32_t nb)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    return x + na <= y || y + nb <= x;
}

static int cb_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    lay *L = (lay *)self;
    const unsigned char *px = buf(x, L->nin, L->rank), *py = buf(y, L->nout, L->rank);
    FUZZ_REQUIRE(apart(px, L->nin, py, L->nout));
    if (fails(K_FWD, L->l, -1, L->rank)) return F.code;
    fwd_bytes(L->l, px, L->nin, (unsigned char *)y->data, L->nout);
    return ok_rc;
}
static int cb_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    lay *L = (lay *)self;
    const unsigned char *px = buf(x, L->nin, L->rank), *pdy = buf(dy, L->nout, L->rank),
                        *pdx = buf(dx, L->nin, L->rank);
    FUZZ_REQUIRE(L->l > 0); /* no gradient for the model input */
    FUZZ_REQUIRE(apart(pdx, L->nin, px, L->nin) && apart(pdx, L->nin, pdy, L->nout));
    if (fails(K_BI, L->l, -1, L->rank)) return F.code;
    bi_bytes(L->l, px, L->nin, pdy, L->nout, (unsigned char *)dx->data);
    return ok_rc;
}
static int cb_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    lay *L = (lay *)self;
    const unsigned char *px = buf(x, L->nin, L->rank), *pdy = buf(dy, L->nout, L->rank);
    if (fails(K_BW, L->l, -1, L->rank)) return F.code;
    L->grad[rc_[L->rank].step] += bw_bytes(px, L->nin, pdy, L->nout);
    return ok_rc;
}
static int cb_input(void *user, int mb, mb_tensor *x)
{
    int rank = comp.stage_rank[0], step = rc_[rank].step;
    unsigned char *p = (unsigned char *)buf(x, in_bytes, rank);
    FUZZ_REQUIRE(user == &cfg && mb >= 0 && mb < M);
    in_calls[step][mb]++;
    if (fails(K_INPUT, -1, mb, rank)) return F.code;
    input_bytes(step, mb, p, in_bytes);
    return ok_rc;
}
static int cb_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    int rank = comp.stage_rank[S - 1], step = rc_[rank].step;
    uint32_t n = act[cfg.nlayers - 1];
    const unsigned char *py = buf(y, n, rank), *pdy = buf(dy, n, rank);
    FUZZ_REQUIRE(user == &cfg && mb >= 0 && mb < M && loss && apart(py, n, pdy, n));
    loss_calls[step][mb]++;
    if (fails(K_LOSS, -1, mb, rank)) return F.code;
    *loss = loss_val[step][mb] = loss_bytes(mb, py, n, (unsigned char *)dy->data);
    return ok_rc;
}
static int cb_output(void *user, int mb, const mb_tensor *y)
{
    int rank = comp.stage_rank[S - 1], step = rc_[rank].step;
    uint32_t n = act[cfg.nlayers - 1];
    const unsigned char *py = buf(y, n, rank);
    FUZZ_REQUIRE(user == &cfg && mb >= 0 && mb < M);
    out_calls[step][mb]++;
    if (fails(K_OUTPUT, -1, mb, rank)) return F.code;
    out_hash[step][mb] = hash_bytes(py, n);
    return ok_rc;
}
static uint32_t cb_now(void *user)
{
    (void)user;
    return __atomic_add_fetch(&clock_, 1u, __ATOMIC_RELAXED);
}

/* ---- one rank ---- */
typedef struct result {
    int rc, err, err_rank, nevents, loss_rc;
    double loss;
} result;
static pg_pthread_world world;
static pp_table tab[MAXP];
static int init_rc[MAXP], agreed[MAXP], nsteps;
static result res[STEPS][MAXP];
static pp_event events[MAXP][MAXEV];
static int max_events;
static uint32_t timeout_ms;

static void check_events(const pp_exec *e, const pp_table *t, int r)
{
    int i, k = 0;
    FUZZ_REQUIRE(e->nevents >= 0 && e->nevents <= e->max_events);
    for (i = 0; i < t->len && k < e->nevents; i++) { /* the table's actions, idle slots left out */
        if (t->actions[i].type == PP_IDLE) continue;
        FUZZ_REQUIRE(events[r][k].rank == r && events[r][k].action.type == t->actions[i].type &&
                     events[r][k].action.stage == t->actions[i].stage && events[r][k].action.mb == t->actions[i].mb);
        if (cfg.now_us) FUZZ_REQUIRE(events[r][k].t_end > events[r][k].t_start);
        k++;
    }
    FUZZ_REQUIRE(k == e->nevents);
}

static int rank_fn(pg_group *g, void *arg)
{
    int r = pg_rank(g), rc, step, ok;
    pp_table *t = &tab[r];
    pp_exec e, before;
    size_t need = 0x5a5a, at;
    unsigned char *mem;
    (void)arg;
    groups[r] = g;
    pg_set_timeout(g, timeout_ms);
    rc = pp_exec_query(&cfg, t, &need);
    FUZZ_REQUIRE(is_err(rc));
    /* 0 bytes: a table without stages (a rank past the plan's), whose executor returns at once */
    FUZZ_REQUIRE(rc ? need == 0x5a5a : need > 0 || (!t->len && !t->slots));
    FUZZ_REQUIRE(pp_exec_bytes(&cfg, t) == (rc ? 0 : need));
    mem = (unsigned char *)malloc(rc ? 1 : need + 8);
    FUZZ_REQUIRE(mem);
    memset(mem, 0xc3, rc ? 1 : need + 8);
    memset(&e, 0x6b, sizeof e);
    before = e;
    if (!rc && need) {
        FUZZ_REQUIRE(pp_exec_init(&e, &cfg, t, g, mem, need - 1) == PP_ERR_TOO_SMALL);
        FUZZ_REQUIRE(pp_exec_init(&e, &cfg, t, g, mem + 4, need) == PP_ERR_ARG);
        FUZZ_REQUIRE(!memcmp(&e, &before, sizeof e));
        for (at = 0; at < need + 8; at++) FUZZ_REQUIRE(mem[at] == 0xc3);
    }
    init_rc[r] = pp_exec_init(&e, &cfg, t, g, mem, rc ? 0 : need);
    FUZZ_REQUIRE(init_rc[r] == rc);
    if (rc) FUZZ_REQUIRE(!memcmp(&e, &before, sizeof e));
    rc_[r].mem = mem;
    rc_[r].bytes = need;
    ok = init_rc[r] == PP_OK; /* run only when every rank could init */
    pg_set_timeout(g, 60000); /* the harness's own collective: no timeout under load */
    FUZZ_REQUIRE(pg_all_reduce(g, &ok, &ok, 1, MB_I32, PG_MIN) == PG_OK);
    pg_set_timeout(g, timeout_ms);
    agreed[r] = ok;
    if (ok) {
        if (max_events) {
            e.events = events[r];
            e.max_events = max_events;
        }
        for (step = 0; step < nsteps; step++) {
            result *o = &res[step][r];
            rc_[r].step = step;
            o->rc = pp_exec_run(&e);
            o->err = e.err;
            o->err_rank = e.err_rank;
            o->nevents = e.nevents;
            check_events(&e, t, r);
            o->loss_rc = pp_exec_loss(&e, NULL, &o->loss);
            if (getenv("FUZZ_EXEC_DEBUG"))
                fprintf(stderr, "step %d rank %d: %d err %d at %d (%d%s%d)\n", step, r, o->rc, o->err, e.at,
                        t->actions[e.at].stage, e.at < t->len ? "" : "?", t->actions[e.at].mb);
        }
    }
    free(mem);
    return 0;
}

/* ---- a run of the plan on P ranks ---- */
static void run_plan(fz_in *in)
{
    int l, s, r, step, m, valid, sim_ok, slots_ok = 1, assert_ok, lowmode, builtin, depth, backward = 0, i;
    pp_sim sim;
    pp_costs costs;
    static const int32_t codes[] = {-1,           -2,         -1000, INT32_MIN, PG_ERR_ABORTED, PG_ERR_TIMEOUT,
                                    PP_ERR_LAYER, PP_ERR_COMM};
    builtin = make_plan(in);
    FUZZ_REQUIRE(pp_validate(&comp, NULL) == PP_OK); /* a built-in or topological plan is valid */
    lowmode = (int)(fz_u8(in) & 1u);
    FUZZ_REQUIRE(pp_lower_mode(&comp, &low, st_l, sizeof st_l, lowmode, NULL) == PP_OK);
    builtin &= !damage(in);
    valid = pp_validate(&low, NULL) == PP_OK;
    for (r = 0; r < P; r++)
        for (i = 0; i < low.len[r]; i++)
            backward |= st_l[r * low.cap + i].type >= PP_B && st_l[r * low.cap + i].type <= PP_W;
    memset(&costs, 0, sizeof costs);
    costs.f = costs.i = costs.w = costs.comm = 1;
    costs.b = 2;
    FUZZ_REQUIRE(pp_sim_bytes(&low) <= sizeof work);
    sim_ok = pp_simulate(&low, &costs, work, sizeof work, &sim, NULL, 0, NULL, NULL) == PP_OK;
    depth = pp_mailbox_depth(&low, 254, work, sizeof work, NULL); /* and table.mailbox */

    /* the config */
    memset(&cfg, 0, sizeof cfg);
    cfg.rows = 1 + (int32_t)(fz_u8(in) % 3u);
    cfg.dtype = (int32_t)(fz_u8(in) % MB_DTYPE_COUNT);
    {
        uint32_t unit = (uint32_t)cfg.rows * (uint32_t)mb_dtype_size((mb_dtype)cfg.dtype);
        int nl = S + (int)(fz_u8(in) % (uint32_t)(MAXL - S + 1));
        for (s = 0; s < S; s++) balance[s] = 1;
        for (l = S; l < nl; l++) balance[fz_u8(in) % (uint32_t)S]++;
        for (s = 0, l = 0; s < S; s++)
            for (m = 0; m < balance[s]; m++) stage_of[l++] = s;
        in_bytes = unit * (1u + fz_u8(in) % UNITS);
        memset(layers, 0, sizeof layers);
        memset(lays, 0, sizeof lays);
        for (l = 0; l < nl; l++) {
            act[l] = unit * (1u + fz_u8(in) % UNITS);
            lays[l].l = l;
            lays[l].rank = comp.stage_rank[stage_of[l]];
            lays[l].nin = l ? act[l - 1] : in_bytes;
            lays[l].nout = act[l];
            layers[l].forward = cb_fwd;
            layers[l].backward_input = l || (fz_u8(in) & 1u) ? cb_bi : NULL;
            layers[l].backward_weight = fz_u8(in) & 1u ? cb_bw : NULL;
            layers[l].self = &lays[l];
            layers[l].act_bytes = act[l];
        }
        cfg.layers = layers;
        cfg.nlayers = nl;
    }
    cfg.balance = balance;
    cfg.in_bytes = in_bytes;
    cfg.checkpoint = (int32_t)(fz_u8(in) % 3u);
    cfg.input = cb_input;
    cfg.loss = train ? cb_loss : NULL;
    cfg.output = train && (fz_u8(in) & 1u) ? NULL : cb_output; /* ignored in training */
    cfg.user = &cfg;
    cfg.now_us = fz_u8(in) & 1u ? cb_now : NULL;
    ok_rc = (int)(fz_u8(in) % 4u == 0);
    seed = fz_u32(in);
    max_events = (int)(fz_u8(in) % MAXEV);

    /* tables: the slots pp_plan_table gives, or one rank's one off */
    for (r = 0; r < P; r++)
        if (pp_plan_table(&low, r, &tab[r]) != PP_OK) return; /* damaged beyond the table's checks: refused */
    if (fz_u8(in) >= 240) {
        r = (int)(fz_u8(in) % (uint32_t)P);
        tab[r].slots = (uint16_t)(tab[r].slots + (fz_u8(in) & 1u ? 1 : -1));
    }
    for (r = 0; r < P; r++) slots_ok &= tab[r].slots >= pp_peak_inflight(&low, r);

    /* the failing callback */
    memset(&F, 0, sizeof F);
    F.kind = fz_u8(in) < 176 ? K_NONE : 1 + (int)(fz_u8(in) % (K_COUNT - 1));
    F.layer = (int)(fz_u8(in) % (uint32_t)cfg.nlayers);
    F.mb = (int)(fz_u8(in) % (uint32_t)M);
    F.nth = (int)(fz_u8(in) % 6u);
    F.code = fz_u8(in) < 224 ? codes[fz_u8(in) % (sizeof codes / sizeof codes[0])] : -1 - (int32_t)fz_u16(in);
    F.rank = -1;

    /* what must run: a valid plan pp_simulate runs, when pp_mailbox_depth proves it for this
       port's mailboxes (PG_PTHREAD_SLOTS messages, transfers in pieces of 64 bytes), or it is
       a built-in schedule whose transfers are one message each (the take-in the executor
       documents: its slots absorb what a mailbox cannot hold) */
    {
        uint32_t big = in_bytes, pieces;
        for (l = 0; l < cfg.nlayers; l++) big = act[l] > big ? act[l] : big;
        pieces = (big + PG_PTHREAD_SLOT_BYTES - 1) / PG_PTHREAD_SLOT_BYTES;
        assert_ok = valid && sim_ok &&
                    ((builtin && pieces == 1) || (depth >= 0 && (uint32_t)depth * pieces <= PG_PTHREAD_SLOTS));
    }
    /* plans that may deadlock run rarely and with short timeouts (nothing timed is checked) */
    if (!assert_ok && fz_u8(in) % 4u) return;
    timeout_ms = assert_ok ? 4000u : 30u;
    nsteps = assert_ok ? STEPS : 1;
    for (step = 0; step < nsteps; step++) reference(step);
    memset(out_calls, 0, sizeof out_calls);
    memset(in_calls, 0, sizeof in_calls);
    memset(loss_calls, 0, sizeof loss_calls);
    memset(res, 0, sizeof res);
    memset(events, 0, sizeof events);
    if (getenv("FUZZ_EXEC_DEBUG")) { /* what a failing input ran */
        static char txt[1 << 14];
        fprintf(stderr,
                "builtin %d depth %d P %d S %d M %d train %d valid %d sim %d rows %d dtype %d in %u ckpt %d nl %d\n",
                builtin, depth, P, S, M, train, valid, sim_ok, cfg.rows, cfg.dtype, in_bytes, cfg.checkpoint,
                cfg.nlayers);
        fprintf(stderr, "fails: kind %d layer %d mb %d nth %d code %d\n", F.kind, F.layer, F.mb, F.nth, (int)F.code);
        for (l = 0; l < cfg.nlayers; l++) fprintf(stderr, "layer %d stage %d act %u\n", l, stage_of[l], act[l]);
        for (r = 0; r < P; r++)
            fprintf(stderr, "rank %d slots %d peak %d\n", r, tab[r].slots, pp_peak_inflight(&low, r));
        if (pp_timeline(&low, txt, sizeof txt, NULL) > 0) fprintf(stderr, "%s", txt);
    }
    FUZZ_REQUIRE(pg_pthread_run(&world, P, rank_fn, NULL) == 0);

    for (r = 0; r < P; r++) FUZZ_REQUIRE(agreed[r] == agreed[0]);
    if (!agreed[0]) return;
    for (step = 0; step < nsteps; step++)
        for (r = 0; r < P; r++) {
            const result *o = &res[step][r];
            FUZZ_REQUIRE(is_err(o->rc) && o->err_rank >= -1 && o->err_rank < P);
            if (!(o->loss_rc == PP_OK || o->loss_rc == PP_ERR_ARG))
                fprintf(stderr, "loss_rc %d rc %d\n", o->loss_rc, o->rc);
            FUZZ_REQUIRE(o->loss_rc == PP_OK || o->loss_rc == PP_ERR_ARG);
        }
    if (!assert_ok) return;
    for (step = 0; step < nsteps; step++) {
        int fired = step == 0 && F.fired, k = comp.stage_rank[0], idle = 0; /* k: a rank in the agreement */
        for (r = 0; r < P; r++)
            if (!tab[r].len) { /* a rank without stages returns at once, outside the agreement */
                FUZZ_REQUIRE(res[step][r].rc == PP_OK && res[step][r].err == 0 && res[step][r].err_rank == -1 &&
                             res[step][r].nevents == 0);
                idle = 1;
            }
        if (idle && (fired || !slots_ok)) {
            /* after an error the others' recover (every rank of the world) cannot meet the
               ranks that returned: each returns an error of its own, not an agreed one, and
               the world stays aborted for the steps after it (checked: pipeline codes) */
            for (r = 0; r < P; r++) FUZZ_REQUIRE(!tab[r].len || res[step][r].rc < 0);
            break;
        }
        for (r = 0; r < P; r++) { /* every rank with a stage returns the same */
            const result *o = &res[step][r], *o0 = &res[step][k];
            if (!tab[r].len) continue;
            if (o->rc != o0->rc || o->err != o0->err || o->err_rank != o0->err_rank) {
                fprintf(stderr, "step %d: rank %d: %d (err %d, rank %d), rank %d: %d (err %d, rank %d)\n", step, r,
                        o->rc, o->err, o->err_rank, k, o0->rc, o0->err, o0->err_rank);
                FUZZ_REQUIRE(0);
            }
        }
        if (!slots_ok) { /* a slot short: an error, agreed (above); it may come before a
                            failing callback's */
            FUZZ_REQUIRE(res[step][k].rc < 0);
            continue;
        }
        if (fired) {
            const result *o = &res[step][k];
            /* a callback that aborted the world (PG_ERR_ABORTED): no rank has its own error */
            int aborted = F.code == PG_ERR_ABORTED;
            if (o->rc != (aborted ? PP_ERR_COMM : PP_ERR_LAYER) || o->err != F.code ||
                o->err_rank != (aborted ? -1 : F.rank)) {
                fprintf(stderr, "callback %d failed with %d on rank %d: every rank returned %d (err %d, rank %d)\n",
                        F.kind, F.code, F.rank, o->rc, o->err, o->err_rank);
                FUZZ_REQUIRE(0);
            }
            continue;
        }
        if (res[step][k].rc != PP_OK) {
            fprintf(stderr, "step %d: a valid plan failed: %d (%s, err %d, rank %d)\n", step, res[step][k].rc,
                    pp_strerror(res[step][k].rc), res[step][k].err, res[step][k].err_rank);
            FUZZ_REQUIRE(0);
        }
        /* equal to the single-rank reference */
        for (m = 0; m < M; m++) {
            FUZZ_REQUIRE(in_calls[step][m] == 1);
            if (train) {
                FUZZ_REQUIRE(loss_calls[step][m] == 1 && loss_val[step][m] == ref_loss[step][m]);
                FUZZ_REQUIRE(out_calls[step][m] == 0);
            } else {
                FUZZ_REQUIRE(out_calls[step][m] == 1 && out_hash[step][m] == ref_hash[step][m]);
            }
        }
        for (l = 0; l < cfg.nlayers; l++) { /* (a damaged plan may have lost every backward: no gradient) */
            if (train && getenv("FUZZ_EXEC_DEBUG"))
                fprintf(stderr, "step %d layer %d: gradient %u, reference %u\n", step, l, lays[l].grad[step],
                        backward ? ref_grad[step][l] : 0u);
            FUZZ_REQUIRE(!train || lays[l].grad[step] == (backward ? ref_grad[step][l] : 0u));
        }
        for (r = 0; r < P; r++) {
            const result *o = &res[step][r];
            int has_last = comp.stage_rank[S - 1] == r;
            if (train && has_last) {
                double sum = 0;
                for (m = 0; m < M; m++) sum += ref_loss[step][m];
                FUZZ_REQUIRE(o->loss_rc == PP_OK && o->loss == sum);
            } else {
                FUZZ_REQUIRE(o->loss_rc == PP_ERR_ARG);
            }
        }
    }
}

/* ---- hostile fields ---- */
/* The documented rules (pipeline.h, pp_table and section 9), written out again. */
static int expect_valid(const pp_exec_cfg *c, const pp_table *t)
{
    int s, l, tr;
    uint32_t unit;
    int64_t sum = 0;
    if (!c || !t || !c->layers || !c->balance || !t->actions || !t->stage_rank) return 0;
    if (!t->len && !t->slots) return 1; /* a rank without stages: its executor returns at once */
    if (c->rows <= 0 || c->dtype < 0 || c->dtype >= MB_DTYPE_COUNT || c->nlayers <= 0 || c->nlayers > INT16_MAX)
        return 0;
    if (!t->nstages || t->nstages > PP_MAX_STAGES || !t->nranks || t->nranks > PP_MAX_RANKS || t->rank >= t->nranks ||
        !t->slots || !t->nmb)
        return 0;
    if (c->checkpoint < PP_CKPT_ALWAYS || c->checkpoint > PP_CKPT_NEVER) return 0;
    tr = c->loss != NULL;
    unit = (uint32_t)c->rows * (uint32_t)mb_dtype_size((mb_dtype)c->dtype);
    for (s = 0; s < t->nstages; s++) {
        if (t->stage_rank[s] >= t->nranks || c->balance[s] <= 0) return 0;
        sum += c->balance[s];
        if (sum > c->nlayers) return 0;
    }
    if (sum != c->nlayers) return 0;
    if (!c->in_bytes || c->in_bytes % unit || c->in_bytes > 0x3ffffff8u) return 0;
    for (l = 0; l < c->nlayers; l++) {
        const pp_layer *y = &c->layers[l];
        if (!y->forward || (tr && l && !y->backward_input)) return 0;
        if (!y->act_bytes || y->act_bytes % unit || y->act_bytes > 0x3ffffff8u) return 0;
    }
    for (l = 0; l < t->len; l++) {
        pp_action a = t->actions[l];
        if (a.type >= PP_TYPE_COUNT || a.stage >= t->nstages || a.mb >= t->nmb) return 0;
        if (a.type != PP_IDLE && t->stage_rank[a.stage] != t->rank) return 0;
        if (!tr && a.type >= PP_B && a.type <= PP_W) return 0;
    }
    for (s = 0, l = 0; s < t->nstages; l += c->balance[s], s++) {
        uint64_t n;
        int k;
        if (t->stage_rank[s] != t->rank) continue;
        if ((!s && !c->input) || (s == t->nstages - 1 && !tr && !c->output)) return 0;
        n = ((s ? c->layers[l - 1].act_bytes : c->in_bytes) + 7u) & ~7u;
        for (k = l; k < l + c->balance[s]; k++) n += (c->layers[k].act_bytes + 7u) & ~7u;
        if (n > 0x3ffffff8u) return 0;
    }
    return 1;
}

static void *copy_of(const void *p, size_t n, size_t cap)
{
    void *q = malloc(cap ? cap : 1);
    FUZZ_REQUIRE(q);
    memset(q, 0, cap);
    if (p) memcpy(q, p, n < cap ? n : cap);
    return q;
}

static void hostile(fz_in *in)
{
    pp_table t;
    pp_exec_cfg c;
    pp_layer *ly;
    pp_action *acts;
    uint8_t *map;
    int32_t *bal;
    pp_exec e, before;
    pg_group *g;
    size_t need = 0x77, need2;
    int rc, rank, field, valid, nl, i;
    uint32_t v;
    make_plan(in);
    if (pp_validate(&comp, NULL) != PP_OK) return;
    FUZZ_REQUIRE(pp_lower_mode(&comp, &low, st_l, sizeof st_l, (int)(fz_u8(in) & 1u), NULL) == PP_OK);
    rank = (int)(fz_u8(in) % (uint32_t)P);
    FUZZ_REQUIRE(pp_plan_table(&low, rank, &t) == PP_OK);
    nl = S + (int)(fz_u8(in) % 3u);
    memset(&c, 0, sizeof c);
    c.rows = 1 + (int32_t)(fz_u8(in) % 3u);
    c.dtype = (int32_t)(fz_u8(in) % MB_DTYPE_COUNT);
    c.nlayers = nl;
    c.in_bytes = (uint32_t)c.rows * (uint32_t)mb_dtype_size((mb_dtype)c.dtype) * (1u + fz_u8(in) % 4u);
    c.checkpoint = (int32_t)(fz_u8(in) % 3u);
    c.input = cb_input;
    c.loss = train ? cb_loss : NULL;
    c.output = cb_output;
    /* the arrays, each a heap block of what the fields claim */
    field = (int)(fz_u8(in) % 24u);
    v = fz_u8(in) < 128 ? (uint32_t)fz_int(in, 70) : fz_u32(in);
    if (field == 0) t.len = (uint16_t)(v % 300u);
    if (field == 1) t.rank = (uint8_t)v;
    if (field == 2) t.nranks = (uint8_t)v;
    if (field == 3) t.nstages = (uint8_t)(v % 80u);
    if (field == 4) t.nmb = (uint16_t)v;
    if (field == 5) t.slots = (uint16_t)v;
    if (field == 6) nl = c.nlayers = (int32_t)(v % 40u) - 4 + (fz_u8(in) < 8 ? INT32_MAX - 60 : 0);
    if (field == 7) c.rows = (int32_t)v;
    if (field == 8) c.dtype = (int32_t)v;
    if (field == 9) c.in_bytes = v;
    if (field == 10) c.checkpoint = (int32_t)v;
    acts =
        (pp_action *)copy_of(t.actions, (size_t)low.len[rank] * sizeof(pp_action), (size_t)t.len * sizeof(pp_action));
    map = (uint8_t *)copy_of(t.stage_rank, (size_t)S, t.nstages);
    if (t.nstages > S)
        for (i = S; i < t.nstages; i++) map[i] = (uint8_t)(fz_u8(in) % (uint32_t)(P + 1));
    if (t.len > low.len[rank])
        for (i = low.len[rank]; i < t.len; i++) acts[i] = (pp_action)PP_ACTION(fz_u8(in), fz_u8(in), fz_u8(in));
    if (field == 11 && t.len) acts[v % t.len].type = (uint8_t)fz_u8(in);
    if (field == 12 && t.len) acts[v % t.len].stage = (uint8_t)fz_u8(in);
    if (field == 13 && t.len) acts[v % t.len].mb = (uint16_t)fz_u16(in);
    if (field == 14 && t.nstages) map[v % t.nstages] = (uint8_t)fz_u8(in);
    t.actions = field == 15 ? NULL : acts;
    t.stage_rank = field == 16 ? NULL : map;
    { /* layers and balance for nl layers over nstages (a valid split where it fits) */
        int nli = nl > 0 && nl < 64 ? nl : 1, ns = t.nstages ? t.nstages : 1;
        uint32_t unit = (uint32_t)c.rows * (uint32_t)mb_dtype_size((mb_dtype)c.dtype);
        if (c.rows <= 0 || c.rows > 3 || c.dtype < 0 || c.dtype >= MB_DTYPE_COUNT) unit = 4;
        ly = (pp_layer *)copy_of(NULL, 0, (size_t)nli * sizeof(pp_layer));
        bal = (int32_t *)copy_of(NULL, 0, (size_t)ns * sizeof(int32_t));
        for (i = 0; i < nli; i++) {
            ly[i].forward = cb_fwd;
            ly[i].backward_input = cb_bi;
            ly[i].backward_weight = fz_u8(in) & 1u ? cb_bw : NULL;
            ly[i].self = &lays[0];
            ly[i].act_bytes = unit * (1u + fz_u8(in) % 4u);
        }
        for (i = 0; i < ns; i++) bal[i] = i < nli ? 1 : 0;
        for (i = ns; i < nli; i++) bal[fz_u8(in) % (uint32_t)ns]++;
        if (field == 17) bal[v % (uint32_t)ns] = fz_int(in, 5);
        if (field == 18) ly[v % (uint32_t)nli].forward = NULL;
        if (field == 19) ly[v % (uint32_t)nli].backward_input = NULL;
        if (field == 20) ly[v % (uint32_t)nli].act_bytes = fz_u8(in) < 128 ? fz_u32(in) : fz_u8(in);
        c.layers = field == 21 ? NULL : ly;
        c.balance = field == 22 ? NULL : bal;
        if (field == 23) {
            int k = (int)(v % 3u);
            if (k == 0) c.input = NULL;
            if (k == 1) c.output = NULL;
            if (k == 2) c.loss = c.loss ? NULL : cb_loss;
        }
        if (nl != nli) c.nlayers = nl; /* a count the arrays do not hold: refused before use */
    }
    if (nl <= 0 || nl >= 64) { /* refused on the count alone (the arrays are never read) */
        rc = pp_exec_query(&c, &t, &need);
        if (!t.len && !t.slots) /* a rank without stages reads no layer: it needs nothing */
            FUZZ_REQUIRE(rc == PP_OK && need == 0);
        else
            FUZZ_REQUIRE(rc < 0 && need == 0x77);
        goto out;
    }
    valid = expect_valid(&c, &t);
    rc = pp_exec_query(&c, &t, &need);
    FUZZ_REQUIRE(is_err(rc));
    if (valid != (rc == PP_OK)) {
        fprintf(stderr, "field %d value %u: pp_exec_query %d (%s), the rules say %s\n", field, v, rc, pp_strerror(rc),
                valid ? "valid" : "invalid");
        FUZZ_REQUIRE(0);
    }
    /* 0 bytes: a table without stages (its executor returns at once) */
    FUZZ_REQUIRE(rc ? need == 0x77 : need > 0 || (!t.len && !t.slots));
    FUZZ_REQUIRE(pp_exec_bytes(&c, &t) == (rc ? 0 : need));
    FUZZ_REQUIRE(pp_exec_query(&c, &t, NULL) == PP_ERR_NULL);
    need2 = rc || !need ? 64 : need;
    if (need2 > ((size_t)1 << 26)) goto out; /* (storage the fuzzer's RSS limit has no room for) */
    {
        unsigned char *mem = (unsigned char *)malloc(need2);
        size_t k;
        FUZZ_REQUIRE(mem);
        memset(mem, 0xc3, need2);
        memset(&e, 0x6b, sizeof e);
        before = e;
        FUZZ_REQUIRE(pg_pthread_world_init(&world, t.nranks && t.nranks <= MAXP ? t.nranks : 1) == PG_OK);
        g = pg_pthread_group(&world, t.rank < world.size ? t.rank : 0);
        i = pp_exec_init(&e, &c, &t, g, mem, need2);
        FUZZ_REQUIRE(is_err(i));
        if (rc)
            FUZZ_REQUIRE(i == rc);
        else if (g->size != t.nranks || g->rank != t.rank)
            FUZZ_REQUIRE(i == PP_ERR_RANKS);
        else if (i != PP_OK || (e.nslots <= 0 && (t.len || t.slots))) { /* (slots of 0 bytes: empty activations) */
            fprintf(stderr, "field %d value %u: pp_exec_query OK, pp_exec_init %d (%s), slots %d of %lld bytes\n",
                    field, v, i, pp_strerror(i), (int)e.nslots, (long long)e.slot_bytes);
            FUZZ_REQUIRE(0);
        }
        if (i) {
            FUZZ_REQUIRE(!memcmp(&e, &before, sizeof e));
            for (k = 0; k < need2; k++) FUZZ_REQUIRE(mem[k] == 0xc3);
        }
        FUZZ_REQUIRE(pp_exec_init(NULL, &c, &t, g, mem, need2) == PP_ERR_NULL);
        FUZZ_REQUIRE(pp_exec_init(&e, &c, &t, NULL, mem, need2) == PP_ERR_NULL);
        free(mem);
    }
    FUZZ_REQUIRE(pp_exec_run(NULL) == PP_ERR_NULL);
    FUZZ_REQUIRE(pp_exec_loss(NULL, NULL, NULL) == PP_ERR_NULL);
out:
    free(acts);
    free(map);
    free(ly);
    free(bal);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    if (fz_u8(&in) < 200)
        run_plan(&in);
    else
        hostile(&in);
    return 0;
}
