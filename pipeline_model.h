/* pipeline_model.h — from a model's layers to a pipeline plan: skips and shared layers (splitcore)

   fairscale's model checks for pipeline.h, on the host (planning): a layer may stand at
   several positions of the sequence (AsyncSchedule's invocations, e.g. tied input and output
   embeddings: pp_invocations turns the positions into stages on ranks), and layers may stash
   and pop named skip tensors (fairscale's @skippable, stash / pop, namespaces:
   pp_skip_layout applies verify_skippables' rules and writes SkipLayout's routes, which
   pp_plan_skips hands to a plan). pipeline.h includes this header unless PP_NO_PLANNER;
   firmware needs only the routes, which pp_emit_c writes. No heap, C99, C++-clean.

   Example (a residual from position 0 to position 3 across two stages):
       #define SPLITCORE_IMPLEMENTATION  // this header, pipeline.h and its executor
       #include <splitcore/pipeline_model.h>
       static const pp_skip res = {"res", 0, {MB_F32, 1, {16}, 0}};
       layers[0].stash = &res;  layers[0].nstash = 1;   // yield stash('res', x)
       layers[3].pop = &res;    layers[3].npop = 1;     // x + (yield pop('res'))
       int32_t balance[2] = {2, 2};  pp_route routes[4];  int n;
       int rc = pp_skip_layout(layers, 4, NULL, 4, balance, 2, routes, 4, &n, NULL);
       rc = pp_plan_skips(&sched, routes, n);           // then pp_lower adds SEND_S / RECV_S

   Contents:
       1. Configuration
       2. Declarations
       3. Implementation (PIPELINE_MODEL_IMPLEMENTATION)

   Configuration: PIPELINE_MODEL_IMPLEMENTATION (the definitions, in exactly one .c file;
   implied by PIPELINE_IMPLEMENTATION and SPLITCORE_IMPLEMENTATION), PIPELINE_MODEL_STATIC
   (implied by PIPELINE_STATIC and SPLITCORE_STATIC); pipeline.h's macros apply.

   Errors are pipeline.h's (enum pp_err, pp_strerror): docs/error-contract.md lists them.
   Threads, memory: the functions work only on their arguments (no state, no heap); every
   output is the caller's, untouched on error. */
#if defined(SPLITCORE_IMPLEMENTATION) || defined(PIPELINE_IMPLEMENTATION)
#ifndef PIPELINE_MODEL_IMPLEMENTATION
#define PIPELINE_MODEL_IMPLEMENTATION
#endif
#endif
#if defined(SPLITCORE_STATIC) || defined(PIPELINE_STATIC)
#ifndef PIPELINE_MODEL_STATIC
#define PIPELINE_MODEL_STATIC
#endif
#endif
#ifndef PIPELINE_MODEL_H
#define PIPELINE_MODEL_H

/* ---- 1. Configuration ------------------------------------------------------------ */
/* pipeline.h's types; it includes this header again at its end, where the guard above
   stops it (the implementation below waits for PIPELINE_MODEL_DECLARED). */
#include "pipeline.h"
#if SPLITCORE_VERSION != 200
#error "pipeline_model.h: splitcore headers of different releases are included together"
#endif
#ifdef PIPELINE_MODEL_STATIC
#define PP_MODEL_API static
#else
#define PP_MODEL_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Declarations --------------------------------------------------------------- */
/* A layer at several positions (fairscale's Pipe with AsyncSchedule: the same module object
   twice in the sequence, e.g. tied input and output embeddings): order[p] is the layer at
   position p (0..nlayers-1, each used at least once). balance counts distinct layers in the
   order of their first use, as fairscale's check_balance(filter_unique=True); a later use
   runs on its first use's part. Writes the stages, maximal runs of consecutive positions on
   one part: stage_balance[s] positions each, stage_rank[s] = the part (arrays of
   PP_MAX_STAGES), *nstages. PP_ERR_ARG (a position's layer out of range, a layer never used,
   more than PP_MAX_STAGES stages), PP_ERR_BALANCE_SUM, PP_ERR_BALANCE_NONPOSITIVE. */
PP_MODEL_API int pp_invocations(const int32_t *order, int npos, int nlayers, const int32_t *balance, int nparts,
                                int32_t *stage_balance, uint8_t *stage_rank, int *nstages, pp_diag *diag);
/* fairscale's verify_skippables and SkipLayout over positions (order as above, NULL: position
   p is layer p; balance: positions per stage): one route per stashed tensor, sorted as
   SkipLayout sorts them (by popping stage, stashing stage, namespace, name). Errors, diag
   naming the position (step) and its stage: PP_ERR_SKIP_UNSTASHED (a pop of a name no layer
   stashes), PP_ERR_SKIP_BACKWARDS (popped before its stash: the skip would go backwards),
   PP_ERR_SKIP_TWICE (a name stashed or popped twice in one namespace, or stashed and popped
   by one layer), PP_ERR_SKIP_UNPOPPED (stashed, never popped), PP_ERR_TOO_SMALL (more than
   max routes), PP_ERR_ARG, PP_ERR_BALANCE_*. */
PP_MODEL_API int pp_skip_layout(const pp_layer *layers, int nlayers, const int32_t *order, int npos,
                                const int32_t *balance, int nstages, pp_route *routes, int max, int *nroutes,
                                pp_diag *diag);

#ifdef __cplusplus
}
#endif
#define PIPELINE_MODEL_DECLARED
#endif /* PIPELINE_MODEL_H */

/* ---- 3. Implementation ------------------------------------------------------------ */
#if defined(PIPELINE_MODEL_DECLARED) && defined(PIPELINE_MODEL_IMPLEMENTATION) && !defined(PIPELINE_MODEL_IMPLEMENTED)
#define PIPELINE_MODEL_IMPLEMENTED

#include <string.h> /* the default PP_MEMSET */

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PIPELINE_MODEL_STATIC
#define PP__MODEL_DEF static
#else
#define PP__MODEL_DEF
#endif

/* Where a model check failed: the position (diag->step), nothing else. */
static void pp__mdiag(pp_diag *d, int position)
{
    if (!d) return;
    PP_MEMSET(d, 0, sizeof *d);
    d->rank = d->stage = d->expected = d->got = -1;
    d->step = position;
}

/* The first position that runs the layer at position p. */
static int pp__first_use(const int32_t *order, int p)
{
    int q;
    for (q = 0; order[q] != order[p]; q++) {}
    return q;
}

/* The part of position p: that of its layer's first use, the k-th distinct layer, which
   falls into the part whose running balance first exceeds k. */
static int pp__part_of(const int32_t *order, int p, const int32_t *balance, int nparts)
{
    int q, k = 0, j;
    int64_t sum = 0;
    p = pp__first_use(order, p);
    for (q = 0; q < p; q++) k += pp__first_use(order, q) == q;
    for (j = 0; j < nparts - 1; j++)
        if (k < (sum += balance[j])) break;
    return j;
}

PP__MODEL_DEF int pp_invocations(const int32_t *order, int npos, int nlayers, const int32_t *balance, int nparts,
                                 int32_t *stage_balance, uint8_t *stage_rank, int *nstages, pp_diag *diag)
{
    int p, l, rc, pass, ns = 0, prev;
    if (!order || !balance || !stage_balance || !stage_rank || !nstages) return PP_ERR_NULL;
    if (npos <= 0 || nlayers <= 0 || nlayers > npos || nparts <= 0 || nparts > PP_MAX_RANKS) return PP_ERR_ARG;
    for (p = 0; p < npos; p++)
        if (order[p] < 0 || order[p] >= nlayers) {
            pp__mdiag(diag, p);
            return PP_ERR_ARG;
        }
    for (l = 0; l < nlayers; l++) { /* every layer runs somewhere */
        for (p = 0; p < npos && order[p] != l; p++) {}
        if (p == npos) {
            pp__mdiag(diag, -1);
            if (diag) diag->got = l;
            return PP_ERR_ARG;
        }
    }
    /* fairscale's check_balance(filter_unique=True): the distinct layers, each part > 0 */
    if ((rc = pp_balance_check(balance, nparts, nlayers, nparts, 1, PP_CKPT_NEVER, diag)) != PP_OK) return rc;
    for (pass = 0; pass < 2; pass++) { /* count, then write: outputs untouched on error */
        ns = 0;
        prev = -1;
        for (p = 0; p < npos; p++) {
            int part = pp__part_of(order, p, balance, nparts);
            if (part != prev) {
                if (ns == PP_MAX_STAGES) return PP_ERR_ARG;
                if (pass) {
                    stage_rank[ns] = (uint8_t)part;
                    stage_balance[ns] = 0;
                }
                ns++;
                prev = part;
            }
            if (pass) stage_balance[ns - 1]++;
        }
    }
    *nstages = ns;
    return PP_OK;
}

static int pp__strcmp(const char *a, const char *b)
{
    while (*a && *a == *b) a++, b++;
    return (int)(unsigned char)*a - (int)(unsigned char)*b;
}
/* Order of two skip names: namespace, then name (0: the same skip). */
static int pp__skip_cmp(const pp_skip *a, const pp_skip *b)
{
    if (a->ns != b->ns) return a->ns < b->ns ? -1 : 1;
    return pp__strcmp(a->name, b->name);
}
typedef struct pp__skipper { /* the layers by position */
    const pp_layer *layers;
    const int32_t *order;
} pp__skipper;
static const pp_layer *pp__lay(const pp__skipper *k, int p)
{
    return &k->layers[k->order ? k->order[p] : p];
}
/* The position q < `before` (or any, before < 0) whose layer stashes (pops: what = 1) a skip
   equal to x, with its index in *i; -1 if none. */
static int pp__find_skip(const pp__skipper *k, int npos, int before, int what, const pp_skip *x, int *i)
{
    int q, j;
    for (q = 0; q < (before < 0 ? npos : before); q++) {
        const pp_layer *L = pp__lay(k, q);
        int n = what ? L->npop : L->nstash;
        for (j = 0; j < n; j++)
            if (!pp__skip_cmp(what ? &L->pop[j] : &L->stash[j], x)) {
                *i = j;
                return q;
            }
    }
    return -1;
}

/* fairscale's verify_skippables, one position at a time in sequence order: the first
   problem's code, diag->step its position. */
static int pp__verify_skips(const pp__skipper *k, int npos, pp_diag *diag)
{
    int p, j, i, at = -1, rc = PP_OK;
    for (p = 0; p < npos && !rc; p++) {
        const pp_layer *L = pp__lay(k, p);
        at = p;
        for (j = 0; j < L->nstash && !rc; j++) {
            const pp_skip *x = &L->stash[j];
            if (pp__find_skip(k, npos, p, 0, x, &i) >= 0) rc = PP_ERR_SKIP_TWICE; /* stashed before */
            for (i = 0; i < L->npop; i++)
                if (!pp__skip_cmp(&L->pop[i], x)) rc = PP_ERR_SKIP_TWICE; /* stashed and popped */
            for (i = 0; i < j; i++)
                if (!pp__skip_cmp(&L->stash[i], x)) rc = PP_ERR_SKIP_TWICE;
        }
        for (j = 0; j < L->npop && !rc; j++) {
            const pp_skip *x = &L->pop[j];
            if (pp__find_skip(k, npos, p, 1, x, &i) >= 0) rc = PP_ERR_SKIP_TWICE; /* popped before */
            for (i = 0; i < j; i++)
                if (!pp__skip_cmp(&L->pop[i], x)) rc = PP_ERR_SKIP_TWICE;
            if (!rc && pp__find_skip(k, npos, p, 0, x, &i) < 0)
                rc = pp__find_skip(k, npos, -1, 0, x, &i) >= 0 ? PP_ERR_SKIP_BACKWARDS : PP_ERR_SKIP_UNSTASHED;
        }
    }
    for (p = 0; p < npos && !rc; p++) /* every stash popped later */
        for (j = 0, at = p; j < pp__lay(k, p)->nstash && !rc; j++)
            if (pp__find_skip(k, npos, -1, 1, &pp__lay(k, p)->stash[j], &i) < 0) rc = PP_ERR_SKIP_UNPOPPED;
    if (rc) pp__mdiag(diag, at);
    return rc;
}

/* The stage of position p under balance. */
static int pp__stage_of(const int32_t *balance, int p)
{
    int s = 0;
    while (p >= balance[s]) p -= balance[s++];
    return s;
}

PP__MODEL_DEF int pp_skip_layout(const pp_layer *layers, int nlayers, const int32_t *order, int npos,
                                 const int32_t *balance, int nstages, pp_route *routes, int max, int *nroutes,
                                 pp_diag *diag)
{
    pp__skipper k;
    int p, j, i, n = 0, rc;
    if (!layers || !balance || !nroutes || (max > 0 && !routes)) return PP_ERR_NULL;
    if (nlayers <= 0 || nlayers > INT16_MAX || (!order && npos != nlayers) || npos <= 0 || npos > INT16_MAX ||
        nstages <= 0 || nstages > PP_MAX_STAGES || max < 0)
        return PP_ERR_ARG;
    k.layers = layers;
    k.order = order;
    for (p = 0; p < npos; p++) {
        const pp_layer *L;
        if (order && (order[p] < 0 || order[p] >= nlayers)) return PP_ERR_ARG;
        L = pp__lay(&k, p);
        if (L->nstash < 0 || L->npop < 0 || L->nstash > 255 || L->npop > 255) return PP_ERR_ARG;
        if ((L->nstash && !L->stash) || (L->npop && !L->pop)) return PP_ERR_NULL;
        for (j = 0; j < L->nstash + L->npop; j++)
            if (!(j < L->nstash ? L->stash[j].name : L->pop[j - L->nstash].name)) return PP_ERR_NULL;
        n += L->npop;
    }
    if ((rc = pp_balance_check(balance, nstages, npos, nstages, 1, PP_CKPT_NEVER, diag)) != PP_OK) return rc;
    if ((rc = pp__verify_skips(&k, npos, diag)) != PP_OK) {
        if (diag && diag->step >= 0) diag->stage = pp__stage_of(balance, diag->step);
        return rc;
    }
    if (n > max || n > 0xffff) return PP_ERR_TOO_SMALL;
    n = 0;
    for (p = 0; p < npos; p++) /* each pop with its stash, inserted in SkipLayout's order */
        for (j = 0; j < pp__lay(&k, p)->npop; j++) {
            pp_route x;
            const pp_skip *name = &pp__lay(&k, p)->pop[j];
            int q = pp__find_skip(&k, npos, p, 0, name, &i), at;
            x.stash = (uint16_t)q;
            x.pop = (uint16_t)p;
            x.stash_i = (uint8_t)i;
            x.pop_i = (uint8_t)j;
            x.src = (uint8_t)pp__stage_of(balance, q);
            x.dst = (uint8_t)pp__stage_of(balance, p);
            for (at = n; at > 0; at--) { /* by (dst, src, namespace, name) */
                const pp_route *y = &routes[at - 1];
                if (y->dst < x.dst ||
                    (y->dst == x.dst &&
                     (y->src < x.src ||
                      (y->src == x.src && pp__skip_cmp(&pp__lay(&k, y->pop)->pop[y->pop_i], name) < 0))))
                    break;
                routes[at] = *y;
            }
            routes[at] = x;
            n++;
        }
    *nroutes = n;
    return PP_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_MODEL_IMPLEMENTATION */
