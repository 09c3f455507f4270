/* pipeline_exec.h — the pipeline executor: one rank's table over any port (splitcore)

   Runs one rank's lowered action table (pipeline.h's pp_table: emitted by pp_emit_c, or
   pp_plan_table of a plan built on the device) over any pg.h port, with static slots in
   caller storage: training (F, B, I/W split, checkpointing; weight gradients accumulate in
   the layers) or inference streaming, an error on one rank aborting every rank and every
   rank returning the same code. Firmware with an emitted plan links this module alone
   (pipeline.h's planning compiled out with PP_NO_PLANNER). No heap, C99, C++-clean.
   pipeline.h includes this header (unless PP_NO_EXECUTOR), so code that includes
   pipeline.h and defines PIPELINE_IMPLEMENTATION gets the executor as before.

   Example (rank r of a 4-rank world; the plan built and lowered with pipeline.h):
       #define SPLITCORE_IMPLEMENTATION  // this header, pipeline.h, microbatch.h, pg.h
       #include <splitcore/pipeline_exec.h>
       pp_table t;  pp_exec e;  static uint64_t mem[4096];
       pp_exec_cfg cfg = {0};
       cfg.layers = layers;  cfg.nlayers = 8;  cfg.balance = balance;  // 2 layers per stage
       cfg.rows = 2;  cfg.dtype = MB_F32;  cfg.in_bytes = 2 * 6 * 4;
       cfg.input = my_input;  cfg.loss = my_loss;  cfg.user = &job;
       int rc = pp_plan_table(&plan, r, &t);
       rc = pp_exec_init(&e, &cfg, &t, group, mem, sizeof mem);  // pp_exec_bytes: how much
       rc = pp_exec_run(&e);                                      // one step, every rank

   Contents:
       1. Configuration macros
       2. Executor (declarations)
       3. Implementation (PIPELINE_EXEC_IMPLEMENTATION)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE; pipeline.h's apply
   too): PIPELINE_EXEC_IMPLEMENTATION (the definitions, in exactly one .c file; implied by
   PIPELINE_IMPLEMENTATION and SPLITCORE_IMPLEMENTATION), PIPELINE_EXEC_STATIC (every
   function static; implied by PIPELINE_STATIC), and the macros of section 1, each with its
   default and what it does: what is built (PP_NO_TAKEIN, PP_NO_TRAINING: flags of value 0
   or 1, a bare -DPP_NO_TAKEIN meaning 1) and the port settings (PP_MAILBOX_SLOTS,
   PP_AGREE_TAG, PP_WAIT_SLICE_MAX_MS). The definitions call pg.h and microbatch.h:
   implement them in the same file (or SPLITCORE_IMPLEMENTATION implements all of them).

   Errors are pipeline.h's (enum pp_err, pp_strerror); docs/error-contract.md lists the
   codes each function returns for each kind of bad input.

   Threads, interrupts, memory: the executor runs one rank per thread or core and blocks in
   the port (pg.h), so it is never called from an ISR; its layer, input, loss and output
   callbacks run in that thread. Storage is the caller's, sized by pp_exec_query
   (pp_exec_bytes). Stack use is bounded (no recursion; `scons size` lists the worst frame of
   every function on Cortex-M4). */
#if defined(SPLITCORE_IMPLEMENTATION) || defined(PIPELINE_IMPLEMENTATION)
#ifndef PIPELINE_EXEC_IMPLEMENTATION
#define PIPELINE_EXEC_IMPLEMENTATION
#endif
#endif
#if defined(SPLITCORE_STATIC) || defined(PIPELINE_STATIC)
#ifndef PIPELINE_EXEC_STATIC
#define PIPELINE_EXEC_STATIC
#endif
#endif
#ifndef PIPELINE_EXEC_H
#define PIPELINE_EXEC_H

/* ---- 1. Configuration ------------------------------------------------------------ */
/* pipeline.h's types; it includes this header again at its end, where the guard above
   stops it (the implementation below waits for PIPELINE_EXEC_DECLARED). */
#include "pipeline.h"
#if SPLITCORE_VERSION != 200
#error "pipeline_exec.h: splitcore headers of different releases are included together"
#endif
#if PP_NO_EXECUTOR
#error "pipeline_exec.h: PP_NO_EXECUTOR leaves the executor out"
#endif
/* 1: an executor that does not take in early messages while it waits (section 2): smaller,
   for tables proven to run without it (pp_mailbox_depth); others give PP_ERR_MAILBOX. */
#ifndef PP_NO_TAKEIN
#define PP_NO_TAKEIN 0
#endif
/* 1: an inference-only executor (firmware that streams frames): no backward, loss or
   checkpointing code; a cfg with a loss gives PP_ERR_ARG. */
#ifndef PP_NO_TRAINING
#define PP_NO_TRAINING 0
#endif
/* With PP_NO_TAKEIN: messages a send may leave in the port's mailbox to one peer without the
   receiver's help, on every port the executor runs on (PG_MIN_INFLIGHT; pg_pthread:
   PG_PTHREAD_SLOTS, pg_shm: the slots given to pg_shm_format). */
#ifndef PP_MAILBOX_SLOTS
#define PP_MAILBOX_SLOTS 4
#endif
/* The pg tag of the executor's end-of-step agreement. Data tags fold (microbatch, stage,
   direction) into 0..PG_TAG_MAX, so one of them may equal it: harmless, because a rank
   reports only once its table is done (its data to a peer went before) and messages of one
   tag between two ranks arrive in send order. */
#ifndef PP_AGREE_TAG
#define PP_AGREE_TAG 0xFFFF
#endif
/* With take-in: the longest slice (ms) a waiting executor sleeps in the port before it
   looks for early messages again (slices start at 1 ms and double up to this). */
#ifndef PP_WAIT_SLICE_MAX_MS
#define PP_WAIT_SLICE_MAX_MS 64
#endif

#if SPLITCORE__EMPTY(PP_NO_TAKEIN)
#error "pipeline_exec.h: PP_NO_TAKEIN is defined without a value: define it to 1 (or 0)"
#elif PP_NO_TAKEIN != 0 && PP_NO_TAKEIN != 1
#error "pipeline_exec.h: PP_NO_TAKEIN must be 0 or 1"
#endif
#if SPLITCORE__EMPTY(PP_NO_TRAINING)
#error "pipeline_exec.h: PP_NO_TRAINING is defined without a value: define it to 1 (or 0)"
#elif PP_NO_TRAINING != 0 && PP_NO_TRAINING != 1
#error "pipeline_exec.h: PP_NO_TRAINING must be 0 or 1"
#endif
#if PP_MAILBOX_SLOTS < 0
#error "pipeline_exec.h: PP_MAILBOX_SLOTS must be >= 0"
#endif
#if PP_AGREE_TAG < 0 || PP_AGREE_TAG > 0xFFFF
#error "pipeline_exec.h: PP_AGREE_TAG must be a pg user tag, 0..PG_TAG_MAX"
#endif
#if PP_WAIT_SLICE_MAX_MS < 1
#error "pipeline_exec.h: PP_WAIT_SLICE_MAX_MS must be >= 1"
#endif
#include "ports/pg.h" /* the executor talks to any port through pg.h */
#ifdef PIPELINE_EXEC_STATIC
#define PP_XAPI static
#else
#define PP_XAPI extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Executor ------------------------------------------------------------------------
   Runs ONE rank's lowered table (pp_table: emitted by pp_emit_c or from pp_plan_table) over
   any pg.h port. A stage is a run of layers (cfg.balance); every activation is a contiguous
   [rows, act_bytes / rows / dtype size] tensor. Static slots: one per in-flight microbatch
   (the table's peak, plus one where inference passes data between two stages of the rank),
   in caller storage sized by pp_exec_query / pp_exec_bytes: a 4-byte state word per slot
   (rounded up to 8 bytes), in training the last stage's losses (one mb_value per
   microbatch), then the slots. A training slot holds the stage input, every layer's output
   and output gradient, and the input gradient; an inference slot only the stage input and
   every layer's output (no gradient room: half the size). PP_NO_TRAINING builds an
   inference-only executor (smaller; a cfg with a loss gives PP_ERR_ARG). Training when
   cfg.loss is set: F runs the stage (and the loss on the last stage), I/B propagate
   gradients, W/B call backward_weight, which accumulates weight gradients in the layer (the
   caller zeroes them and steps the optimizer). Checkpointed microbatches (i <
   pp_checkpoint_stop) recompute the stage's intermediate outputs from its kept input in I/B
   (fairscale's semantics; the slot keeps room for them, so this trades time only). Inference
   when cfg.loss is NULL (forward-only tables, a stream of frames = microbatches): the last
   stage hands each output to cfg.output. Stages that share a rank pass data directly.

   Waiting. RECV actions are posted receives: the data is taken when F/I/B needs it, or
   earlier: a rank that would wait in a send or receive (the port's mailbox to the peer full,
   or its data not there yet) waits in slices (1 ms, doubling up to PP_WAIT_SLICE_MAX_MS, the
   group's timeout T in all) and between them takes in what already arrived for its later F,
   I and B (an activation into a free slot while the slots in use plus one per F up to that
   one stay within the slot count, so no F runs short; a gradient into its microbatch's
   slot). So a table where two ranks each send more than a mailbox holds before receiving
   (LoopedBFS on 2 ranks with M = 16 over pg_pthread's 4-slot mailboxes) runs as pp_simulate,
   whose sends are buffered, predicts. PP_NO_TAKEIN leaves that out (about 500 B on
   Cortex-M4; the firmware build with an emitted plan): a send then waits for room in the
   mailbox, so the plan must carry the deadlock freedom instead. pp_mailbox_depth (pipeline.h)
   proves on the host the mailbox depth d (transfers per ordered pair of ranks) the plan
   needs without take-in and stores d + 1 in the plan, pp_plan_table / pp_emit_c in the table
   (pp_table.mailbox); the emitted source stops a PP_NO_TAKEIN build with #error when
   PP_MAILBOX_SLOTS < d or the plan was not proven. At run time pp_exec_init refuses an
   unproven table (mailbox 0) and a transfer of n bytes whose d x ceil(n / pg_max_msg)
   messages exceed PP_MAILBOX_SLOTS fails before it is sent; both give PP_ERR_MAILBOX on every
   rank, never a wait.

   Errors. pp_exec_run returns pipeline codes only: PP_ERR_LAYER when a layer, input, loss or
   output callback failed (its own code in pp_exec.err), PP_ERR_COMM when the port failed (the
   pg_err in pp_exec.err), or the executor's own PP_ERR_* (pp_exec.err 0); pp_exec.err_rank is
   the rank the error happened on. An error on any rank aborts the world (pg_abort), which
   ends every peer's wait at once; then every rank recovers the group (pg_recover, waiting at
   most half the group's timeout T), and the ranks agree over point-to-point messages (each
   sends its error to one rank, which answers with the error of the lowest rank that had
   one), so every rank returns the same code, err and err_rank. A rank that only saw the abort
   has no error of its own; when no rank has one (something outside the executor aborted the
   world, e.g. a layer's own pg_abort), every rank returns PP_ERR_COMM, err PG_ERR_ABORTED,
   err_rank -1. A rank that stalls: the first rank waiting on it times out after T and aborts,
   so every other rank returns PP_ERR_COMM (err PG_ERR_TIMEOUT or PG_ERR_ABORTED) within
   1.5 T of the stall, plus whatever compute a rank still had before waiting on it
   (tests/test_faults.c checks it). Their recover cannot meet the stalled rank, so they do not
   agree (each keeps its own err; err_rank is its own rank if it had the error, else -1) and
   the world stays aborted: run the step again on every rank, as often as it fails (a rerun
   fails at once and retries the recover for T / 2); the stalled rank, once it wakes, returns
   an error within T / 2 and its recover meets one of those reruns. Do not call pg_recover
   yourself after a failed step: the executor's would pair with it. Ports time recovers with
   the world group's timeout, so run the executor on the world group (or give the world the
   same timeout). */
typedef struct pp_exec_cfg {
    const pp_layer *layers;
    int32_t nlayers;
    const int32_t *balance; /* layers per stage: the table's nstages entries */
    int32_t rows;           /* rows per microbatch (dim 0 of every activation) */
    int32_t dtype;          /* mb_dtype of every activation */
    uint32_t in_bytes;      /* model input bytes per microbatch */
    int32_t checkpoint;     /* enum pp_checkpoint (training) */
    /* stage 0 (required on its rank): write microbatch mb's input into x (a slot; contiguous) */
    int (*input)(void *user, int mb, mb_tensor *x);
    /* training (set: training, NULL: inference), on the last stage: the loss of output y and
       its gradient into dy (same shape) */
    int (*loss)(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss);
    /* inference, last stage (required on its rank; ignored in training): consume output y */
    int (*output)(void *user, int mb, const mb_tensor *y);
    void *user;
    uint32_t (*now_us)(void *user); /* optional clock for pp_exec.events */
} pp_exec_cfg;

typedef struct pp_exec {
    const pp_exec_cfg *cfg;
    const pp_table *t;
    pg_group *g;
    uint32_t *slot;     /* per slot: 0 free, else flags | stage << 8 | mb << 16 */
    mb_value *losses;   /* last stage: one scalar per microbatch */
    unsigned char *mem; /* nslots * slot_bytes */
    uint32_t slot_bytes;
    int32_t nslots;
    int16_t first[PP_MAX_STAGES + 1]; /* first layer of each stage */
    pp_event *events;                 /* optional: set after init (max_events); nevents per run */
    int32_t max_events, nevents;
    int32_t err;      /* the last run's failure: the callback's code (PP_ERR_LAYER), the pg_err
                         (PP_ERR_COMM), 0 otherwise */
    int32_t err_rank; /* the rank it happened on; -1: none, or unknown */
    int32_t at;       /* the action running (pp_exec_run) */
} pp_exec;

/* Bytes of storage for this rank into *bytes: PP_OK, or the code pp_exec_init would return
   for cfg and t (*bytes untouched). Exact: pp_exec_init accepts exactly this many. */
PP_XAPI int pp_exec_query(const pp_exec_cfg *cfg, const pp_table *t, size_t *bytes);
/* The same as a value: 0 means cfg or t is invalid (pp_exec_query says why). */
PP_XAPI size_t pp_exec_bytes(const pp_exec_cfg *cfg, const pp_table *t);
/* Check cfg/table/group and lay out storage (8-byte aligned, >= pp_exec_query's bytes). */
PP_XAPI int pp_exec_init(pp_exec *e, const pp_exec_cfg *cfg, const pp_table *t, pg_group *g, void *storage,
                         size_t bytes);
/* One step: every action of the table. Returns PP_OK or the same pipeline code on every rank
   (PP_ERR_LAYER, PP_ERR_COMM or the executor's own; pp_exec.err and err_rank say more). */
PP_XAPI int pp_exec_run(pp_exec *e);
/* Last stage, after a training step: the per-microbatch losses merged with `spec`
   (NULL: sum; MB_REDUCE_CUSTOM(r) for a custom reducer). Needs microbatch.h's
   implementation. PP_ERR_ARG on ranks without the last stage. */
PP_XAPI int pp_exec_loss(const pp_exec *e, const mb_spec *spec, double *loss);

#ifdef __cplusplus
}
#endif
#define PIPELINE_EXEC_DECLARED
#endif /* PIPELINE_EXEC_H */

/* ---- 3. Implementation ------------------------------------------------------------ */
#if defined(PIPELINE_EXEC_DECLARED) && defined(PIPELINE_EXEC_IMPLEMENTATION) && !defined(PIPELINE_EXEC_IMPLEMENTED)
#define PIPELINE_EXEC_IMPLEMENTED
#if !defined(PG_IMPLEMENTATION) && (defined(PG_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "pipeline_exec.h: PIPELINE_EXEC_IMPLEMENTATION's executor needs PG_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif
#if !defined(MICROBATCH_IMPLEMENTATION) && (defined(MICROBATCH_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "pipeline_exec.h: PIPELINE_EXEC_IMPLEMENTATION's executor needs MICROBATCH_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif

#include <string.h> /* the default PP_MEMCPY, PP_MEMSET */

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PIPELINE_EXEC_STATIC
#define PP__XDEF static
#else
#define PP__XDEF
#endif

#define PP__R8(x)    (((uint32_t)(x) + 7u) & ~7u)
#define PP__TRAIN(c) (!PP_NO_TRAINING && (c)->loss != NULL) /* training, else inference */
static const unsigned char pp__es[MB_DTYPE_COUNT] = {4, 8, 1, 1, 2, 4};
/* slot flags; PP__GOTX / PP__GOTDY: the input / output gradient arrived ahead (pp__takein) */
enum { PP__USED = 1, PP__IDONE = 2, PP__WDONE = 4, PP__SENDB = 8, PP__CKPT = 16, PP__GOTX = 32, PP__GOTDY = 64 };
/* a slot's state word: the flags above, its stage (8 bits) and microbatch (16 bits) */
#define PP__SLOT_STAGE_SHIFT 8
#define PP__SLOT_MB_SHIFT    16
#define PP__SLOT_STAGE(w)    ((int)(((w) >> PP__SLOT_STAGE_SHIFT) & 0xffu))
#define PP__SLOT_MB(w)       ((w) >> PP__SLOT_MB_SHIFT)
#if !PP_NO_TAKEIN
#define PP__GOT(k, f) (e->slot[k] & (f))
#else
#define PP__GOT(k, f) 0u /* nothing arrives ahead */
#endif

static uint32_t pp__inb(const pp_exec_cfg *c, const int16_t *first, int s)
{
    return s ? c->layers[first[s] - 1].act_bytes : c->in_bytes;
}
/* Offset of layer l's output within a stage's outputs (l = first[s+1]: all of them). */
static uint32_t pp__off(const pp_exec_cfg *c, const int16_t *first, int s, int l)
{
    uint32_t n = 0;
    int k;
    for (k = first[s]; k < l; k++) n += PP__R8(c->layers[k].act_bytes);
    return n;
}

/* Largest activation and largest half slot (bytes): a slot's offsets and its size (twice
   the half in training) stay in 32 bits, and adding one activation to a half that fits
   cannot wrap. */
#define PP__ACT_MAX  0x3ffffff8u
#define PP__HALF_MAX 0x3ffffff8u

/* Checks cfg and the caller-filled table before any field is used as an index; fills
   first[], the slot size and count. A training slot holds the stage input, every layer's
   output and output gradient and the input gradient; an inference slot the input and the
   outputs only. */
static int pp__xcheck(const pp_exec_cfg *c, const pp_table *t, int16_t *first, uint32_t *slot_bytes, int32_t *nslots)
{
    int s, l, train, extra = 0;
    uint32_t unit, best = 0;
    if (!c || !t || !c->layers || !c->balance || !t->actions || !t->stage_rank) return PP_ERR_NULL;
    if (c->rows <= 0 || c->dtype < 0 || c->dtype >= MB_DTYPE_COUNT || c->nlayers <= 0 || c->nlayers > INT16_MAX ||
        !t->nstages || t->nstages > PP_MAX_STAGES || !t->nranks || t->nranks > PP_MAX_RANKS || t->rank >= t->nranks ||
        !t->slots || !t->nmb)
        return PP_ERR_ARG;
    if (c->checkpoint < PP_CKPT_ALWAYS || c->checkpoint > PP_CKPT_NEVER) return PP_ERR_CHECKPOINT;
#if PP_NO_TAKEIN
    if (!t->mailbox) return PP_ERR_MAILBOX; /* not proven to run without take-in */
#endif
#if PP_NO_TRAINING
    if (c->loss) return PP_ERR_ARG;
#endif
    train = PP__TRAIN(c);
    unit = (uint32_t)c->rows * pp__es[c->dtype];
    first[0] = 0;
    for (s = 0; s < t->nstages; s++) {
        if (t->stage_rank[s] >= t->nranks) return PP_ERR_STAGE_RANK;
        if (c->balance[s] <= 0) return PP_ERR_BALANCE_NONPOSITIVE;
        if (c->balance[s] > c->nlayers - first[s]) return PP_ERR_BALANCE_SUM;
        first[s + 1] = (int16_t)(first[s] + c->balance[s]);
    }
    if (first[t->nstages] != c->nlayers) return PP_ERR_BALANCE_SUM;
    if (!c->in_bytes || c->in_bytes % unit || c->in_bytes > PP__ACT_MAX) return PP_ERR_ARG;
    for (l = 0; l < c->nlayers; l++) {
        const pp_layer *y = &c->layers[l];
        if (!y->forward || (train && l && !y->backward_input)) return PP_ERR_NULL;
        if (!y->act_bytes || y->act_bytes % unit || y->act_bytes > PP__ACT_MAX) return PP_ERR_ARG;
    }
    for (l = 0; l < t->len; l++) {
        pp_action a = t->actions[l];
        if (a.type >= PP_TYPE_COUNT || a.stage >= t->nstages || a.mb >= t->nmb) return PP_ERR_ACTION;
        if (a.type != PP_IDLE && t->stage_rank[a.stage] != t->rank) return PP_ERR_STAGE_RANK;
        if (!train && a.type >= PP_B && a.type <= PP_W) return PP_ERR_BACKWARD_COUNT;
    }
    for (s = 0; s < t->nstages; s++) {
        uint32_t n;
        if (t->stage_rank[s] != t->rank) continue;
        if ((!s && !c->input) || (s == t->nstages - 1 && !train && !c->output)) return PP_ERR_NULL;
        n = PP__R8(pp__inb(c, first, s));
        for (l = first[s]; l < first[s + 1]; l++)
            if ((n += PP__R8(c->layers[l].act_bytes)) > PP__HALF_MAX) return PP_ERR_ARG;
        n <<= train; /* training: the gradients beside */
        if (n > best) best = n;
        if (!train && s + 1 < t->nstages && t->stage_rank[s + 1] == t->rank) extra = 1;
    }
    *slot_bytes = best;
    *nslots = t->slots + extra;
    return PP_OK;
}

/* Storage: the slot states, the losses (training, last stage), the slots. */
static uint64_t pp__xlayout(const pp_exec_cfg *c, const pp_table *t, int32_t nslots, uint32_t sb, size_t *loss_at)
{
    size_t n = PP__R8(4u * (uint32_t)nslots);
    *loss_at = n;
    if (PP__TRAIN(c) && t->stage_rank[t->nstages - 1] == t->rank) n += sizeof(mb_value) * t->nmb;
    return n + (uint64_t)nslots * sb;
}

/* pp__xcheck and the layout's size, refused when it does not fit a size_t. */
static int pp__xsize(const pp_exec_cfg *c, const pp_table *t, pp_exec *x, size_t *need, size_t *loss_at)
{
    uint64_t n;
    int rc = pp__xcheck(c, t, x->first, &x->slot_bytes, &x->nslots);
    if (rc) return rc;
    n = pp__xlayout(c, t, x->nslots, x->slot_bytes, loss_at);
    if ((size_t)n != n) return PP_ERR_ARG;
    *need = (size_t)n;
    return PP_OK;
}

PP__XDEF int pp_exec_query(const pp_exec_cfg *c, const pp_table *t, size_t *bytes)
{
    pp_exec x;
    size_t need, at;
    int rc;
    if (!bytes) return PP_ERR_NULL;
    if ((rc = pp__xsize(c, t, &x, &need, &at)) == PP_OK) *bytes = need;
    return rc;
}

PP__XDEF size_t pp_exec_bytes(const pp_exec_cfg *c, const pp_table *t)
{
    size_t n = 0;
    return pp_exec_query(c, t, &n) ? 0 : n;
}

PP__XDEF int pp_exec_init(pp_exec *e, const pp_exec_cfg *c, const pp_table *t, pg_group *g, void *storage, size_t bytes)
{
    pp_exec x;
    size_t at, need;
    int rc;
    if (!e || !g || !storage) return PP_ERR_NULL;
    PP_MEMSET(&x, 0, sizeof x);
    if ((rc = pp__xsize(c, t, &x, &need, &at)) != PP_OK) return rc;
    if (g->size != t->nranks || g->rank != t->rank) return PP_ERR_RANKS;
    if ((uintptr_t)storage & 7u) return PP_ERR_ARG;
    if (bytes < need) return PP_ERR_TOO_SMALL;
    x.cfg = c;
    x.t = t;
    x.g = g;
    x.slot = (uint32_t *)storage;
    x.mem = (unsigned char *)storage + (need - (size_t)x.nslots * x.slot_bytes);
    if (x.mem != (unsigned char *)storage + at) /* the losses lie between slot[] and mem */
        x.losses = (mb_value *)(void *)((unsigned char *)storage + at);
    *e = x;
    return PP_OK;
}

/* A lower failure rc (< 0: a callback's code or a pg_err) as the executor's `code`, rc kept
   in e->err; PP_OK for rc >= 0. */
static int pp__keep(pp_exec *e, int rc, int code)
{
    if (rc >= 0) return PP_OK;
    e->err = rc;
    return code;
}

static int pp__find(const pp_exec *e, int s, int m)
{
    int k;
    for (k = 0; k < e->nslots; k++)
        if ((e->slot[k] & PP__USED) && PP__SLOT_STAGE(e->slot[k]) == s && PP__SLOT_MB(e->slot[k]) == (uint32_t)m)
            return k;
    return PP_ERR_ACTION;
}

/* Slot k of stage s: part 0 = input x, 1 = output of layer l, 2 = its gradient, 3 = dx. */
static unsigned char *pp__at(const pp_exec *e, int k, int part, int l)
{
    int s = PP__SLOT_STAGE(e->slot[k]);
    const pp_exec_cfg *c = e->cfg;
    unsigned char *p = e->mem + (size_t)k * e->slot_bytes;
    if (!part) return p;
#if PP_NO_TRAINING
    return p + PP__R8(pp__inb(c, e->first, s)) + pp__off(c, e->first, s, l); /* inference: outputs only */
#else
    if (part == 3) l = e->first[s + 1]; /* after every output and output gradient */
    return p + PP__R8(pp__inb(c, e->first, s)) + (uint32_t)(part >> 1) * pp__off(c, e->first, s, e->first[s + 1]) +
           pp__off(c, e->first, s, l);
#endif
}

/* Input (which 0) or output (1) or output gradient (2) of layer l of slot k, as a tensor;
   3: the stage's input gradient (l = first[s] - 1). */
static void pp__lt(const pp_exec *e, mb_tensor *t, int k, int which, int l)
{
    int s = PP__SLOT_STAGE(e->slot[k]);
    const pp_exec_cfg *c = e->cfg;
    uint32_t n;
    if (!which && l == e->first[s])
        n = pp__inb(c, e->first, s); /* the stage input */
    else {
        if (!which) {
            which = 1;
            l--;
        } /* layer l-1's output */
        n = c->layers[l].act_bytes;
    }
    PP_MEMSET(t, 0, sizeof *t);
    t->data = pp__at(e, k, which, l);
    t->dtype = (mb_dtype)c->dtype;
    t->ndim = 2;
    t->shape[0] = c->rows;
    t->shape[1] = (int32_t)(n / (uint32_t)c->rows / pp__es[c->dtype]);
    t->stride[0] = t->shape[1];
    t->stride[1] = 1;
}

/* Move slot k's boundary data in pieces of the port's max_msg, each waiting at most tmo ms:
   part 0 receives x from stage s-1, 1 sends y to s+1, 2 receives dy from s+1, 3 sends dx to
   s-1; *done counts the bytes moved (a timed-out move resumes there). k < 0: only probe
   whether the first piece arrived. The tag names the receiving stage, the microbatch and
   the direction. */
#if !PP_NO_TAKEIN /* each wait its own timeout (pp__move's slices) */
#define PP__SEND(g, r, tag, p, n, tmo)      pg_send_timeout(g, r, tag, p, n, tmo)
#define PP__RECV(g, r, tag, p, n, got, tmo) pg_recv_timeout(g, r, tag, p, n, got, tmo)
#else /* tmo is the group's timeout */
#define PP__SEND(g, r, tag, p, n, tmo)      ((void)(tmo), pg_send(g, r, tag, p, n))
#define PP__RECV(g, r, tag, p, n, got, tmo) ((void)(tmo), pg_recv(g, r, tag, p, n, got))
#endif
static int pp__xfer(pp_exec *e, int k, pp_action a, int part, uint32_t tmo, uint32_t *done)
{
    int s = a.stage, send = part & 1, ps = s + ((part + 1) & 2) - 1, rc = PP_OK;
    int peer = e->t->stage_rank[ps];
    int tag =
        (int)((((uint32_t)a.mb * e->t->nstages + (uint32_t)(send ? ps : s)) * 2u + (uint32_t)(part >> 1)) & PG_TAG_MAX);
    uint32_t n = pp__inb(e->cfg, e->first, ps > s ? ps : s);
    size_t max = e->g->max_msg, c, got = 0;
    unsigned char *p;
#if !PP_NO_TAKEIN
    if (k < 0) return pg_probe(e->g, peer, tag, NULL);
#endif
#if PP_NO_TAKEIN
    /* the table was proven for mailboxes of mailbox - 1 transfers: this one is n / max
       messages (rounded up), so the port's PP_MAILBOX_SLOTS must hold that many times more */
    if ((e->t->mailbox - 1u) * ((n + max - 1u) / max) > PP_MAILBOX_SLOTS) return PP_ERR_MAILBOX;
#endif
    p = pp__at(e, k, part, e->first[s + 1] - 1) + *done;
    n -= *done;
    while (n) {
        c = n < max ? n : max;
        rc = send ? PP__SEND(e->g, peer, tag, p, c, tmo) : PP__RECV(e->g, peer, tag, p, c, &got, tmo);
        if (rc >= 0 && !send && got != c) rc = PG_ERR_MISMATCH;
        if (rc < 0) break;
        p += c;
        n -= (uint32_t)c;
        *done += (uint32_t)c;
    }
    return rc < 0 ? rc : PP_OK;
}

/* A free slot for (s, m), or PP_ERR_TOO_SMALL. */
static int pp__alloc(pp_exec *e, int s, int m)
{
    int k;
    for (k = 0; k < e->nslots && e->slot[k]; k++) {}
    if (k == e->nslots) return PP_ERR_TOO_SMALL;
    e->slot[k] = PP__USED | (uint32_t)s << PP__SLOT_STAGE_SHIFT | (uint32_t)m << PP__SLOT_MB_SHIFT;
    return k;
}

#if !PP_NO_TAKEIN

/* A rank that would wait takes in what already arrived for its later F, I and B actions
   (after the current one, e->at): an activation into a free slot, while the slots in use
   plus one per F up to that one stay within nslots (so no later F runs short), a gradient
   into its microbatch's slot. Then a peer waiting to send to this rank goes on, so two
   ranks that each send more than a mailbox holds before receiving do not wait on each
   other (pp_simulate's buffered sends). 1 if it took any, 0 if not, or an error. */
static int pp__takein(pp_exec *e)
{
    const pp_table *t = e->t;
    int i, k, ps, f, need = 0, got = 0, rc;
    for (k = 0; k < e->nslots; k++) need += e->slot[k] != 0;
    for (i = e->at + 1; i < t->len; i++) {
        pp_action a = t->actions[i];
        uint32_t done = 0;
        int from_peer, taken, arrived;
        f = a.type == PP_F;
        if (!f && a.type != PP_B && a.type != PP_I) continue;
        k = pp__find(e, a.stage, a.mb);
        if (f && k < 0 && need++ >= e->nslots) continue; /* no slot to spare for this F's input */
        ps = a.stage + (f ? -1 : 1);                     /* the stage its data comes from */
        from_peer = ps >= 0 && ps < t->nstages && t->stage_rank[ps] != t->rank;
        /* F: its slot exists only once the input is in; I/B: the slot (from F) must exist
           and its output gradient not be in yet */
        taken = f ? k >= 0 : k < 0 || (e->slot[k] & PP__GOTDY);
        if (!from_peer || taken) continue;
        arrived = pp__xfer(e, -1, a, 2 - 2 * f, 0, 0) > 0; /* probe: its first piece is here */
        if (!arrived) continue;
        if (f) k = pp__alloc(e, a.stage, a.mb);
        if ((rc = pp__xfer(e, k, a, 2 - 2 * f, e->g->timeout_ms, &done)) < 0) return rc;
        e->slot[k] |= f ? PP__GOTX : PP__GOTDY;
        got = 1;
    }
    return got;
}

/* pp__xfer within the group's timeout, waiting in slices (1 ms, doubling up to
   PP_WAIT_SLICE_MAX_MS); between them the rank takes in what arrived ahead (pp__takein).
   A port failure is PP_ERR_COMM (e->err: the pg_err). */
static int pp__move(pp_exec *e, int k, pp_action a, int part)
{
    uint32_t done = 0, tmo = e->g->timeout_ms, waited = 0, slice = 1, w;
    int rc;
    do {
        w = tmo - waited < slice ? tmo - waited : slice;
        rc = pp__xfer(e, k, a, part, w, &done);
        if (rc != PG_ERR_TIMEOUT || (waited += w) >= tmo) break;
        if ((rc = pp__takein(e)) > 0)
            waited = 0, slice = 1;
        else if (slice < PP_WAIT_SLICE_MAX_MS)
            slice <<= 1;
    } while (rc >= 0);
    return pp__keep(e, rc, PP_ERR_COMM);
}
#else
static int pp__move(pp_exec *e, int k, pp_action a, int part)
{
    uint32_t done = 0;
    int rc = pp__xfer(e, k, a, part, e->g->timeout_ms, &done);
    return rc == PP_ERR_MAILBOX ? rc : pp__keep(e, rc, PP_ERR_COMM);
}
#endif

/* Run layers first[s] .. upto-1 of slot k. */
static int pp__fwd(pp_exec *e, int k, int s, int upto)
{
    int l, rc;
    for (l = e->first[s]; l < upto; l++) {
        mb_tensor x, y;
        const pp_layer *L = &e->cfg->layers[l];
        pp__lt(e, &x, k, 0, l);
        pp__lt(e, &y, k, 1, l);
        if ((rc = pp__keep(e, L->forward(L->self, &x, &y), PP_ERR_LAYER)) < 0) return rc;
    }
    return PP_OK;
}

#if !PP_NO_TRAINING
static void pp__release(pp_exec *e, int k)
{
    if ((e->slot[k] & PP__WDONE) && !(e->slot[k] & PP__SENDB)) e->slot[k] = 0;
}
#endif

static int pp__action(pp_exec *e, pp_action a)
{
    const pp_exec_cfg *c = e->cfg;
    const pp_table *t = e->t;
    int s = a.stage, m = a.mb, k, j, rc = 0, last = s == t->nstages - 1, train = PP__TRAIN(c);
    int hi = e->first[s + 1] - 1; /* the stage's last layer */
    mb_tensor x, y;
#if !PP_NO_TRAINING
    int l;
#endif
    if ((1u << a.type) & (1u << PP_IDLE | 1u << PP_RECV_F | 1u << PP_RECV_B | 1u << PP_UNSHARD | 1u << PP_RESHARD |
                          1u << PP_REDUCE_GRAD))
        return PP_OK; /* receives are posted; no FSDP here, gradients stay in the layers */
    if (a.type == PP_F) {
        if ((k = pp__find(e, s, m)) >= 0) {
            if (!PP__GOT(k, PP__GOTX)) return PP_ERR_DUPLICATE;
            e->slot[k] &= ~(uint32_t)PP__GOTX; /* its input arrived ahead (pp__takein) */
        } else if ((k = pp__alloc(e, s, m)) < 0) {
            return k;
        } else if (!s) {
            pp__lt(e, &x, k, 0, e->first[s]);
            rc = pp__keep(e, c->input(c->user, m, &x), PP_ERR_LAYER);
        } else if (t->stage_rank[s - 1] == t->rank) {
            if ((j = pp__find(e, s - 1, m)) < 0) return j;
            PP_MEMCPY(pp__at(e, k, 0, 0), pp__at(e, j, 1, e->first[s] - 1), pp__inb(c, e->first, s));
            if (!train) e->slot[j] = 0;
        } else
            rc = pp__move(e, k, a, 0);
        if (rc < 0 || (rc = pp__fwd(e, k, s, hi + 1)) < 0) return rc;
        pp__lt(e, &y, k, 1, hi);
        if (last && train) {
            mb_tensor dy;
            pp__lt(e, &dy, k, 2, hi);
            e->losses[m].kind = MB_VALUE_SCALAR; /* scalar 0 (zeroed by pp_exec_run) */
            if ((rc = pp__keep(e, c->loss(c->user, m, &y, &dy, &e->losses[m].scalar), PP_ERR_LAYER)) < 0) return rc;
        } else if (last) {
            rc = pp__keep(e, c->output(c->user, m, &y), PP_ERR_LAYER);
            e->slot[k] = 0;
        }
        /* pp_checkpoint_stop: ALWAYS (0) nmb, EXCEPT_LAST (1) nmb - 1, NEVER (2) 0 */
        if (train && m < (c->checkpoint == PP_CKPT_NEVER ? 0 : t->nmb - c->checkpoint))
            e->slot[k] |= PP__CKPT; /* the intermediates are recomputed in I/B */
        return rc < 0 ? rc : PP_OK;
    }
    if ((k = pp__find(e, s, m)) < 0) return k;
    switch (a.type) {
    case PP_SEND_F:
        rc = pp__move(e, k, a, 1);
        if (!train) e->slot[k] = 0;
        return rc;
#if !PP_NO_TRAINING
    case PP_SEND_B:
        if (!(e->slot[k] & PP__SENDB)) return PP_ERR_ACTION;
        rc = pp__move(e, k, a, 3);
        e->slot[k] &= ~(uint32_t)PP__SENDB;
        pp__release(e, k);
        return rc;
    case PP_B:
    case PP_I:
        if (e->slot[k] & PP__IDONE) return PP_ERR_DUPLICATE;
        if (!last && t->stage_rank[s + 1] != t->rank && !PP__GOT(k, PP__GOTDY) && (rc = pp__move(e, k, a, 2)) < 0)
            return rc;
        if ((e->slot[k] & PP__CKPT) && (rc = pp__fwd(e, k, s, hi)) < 0) return rc;
        for (l = hi; l >= e->first[s]; l--) {
            mb_tensor dy, dx;
            const pp_layer *L = &c->layers[l];
            pp__lt(e, &x, k, 0, l);
            pp__lt(e, &dy, k, 2, l);
            int jk = k, part = 2; /* dx: the previous layer's output gradient */
            if (l == e->first[s]) {
                if (!s) break; /* no gradient for the model input */
                if (t->stage_rank[s - 1] == t->rank) {
                    if ((jk = pp__find(e, s - 1, m)) < 0) return jk; /* stage s - 1's slot */
                } else {
                    part = 3; /* this slot's dx, sent by SEND_B */
                    e->slot[k] |= PP__SENDB;
                }
            }
            pp__lt(e, &dx, jk, part, l - 1);
            if ((rc = pp__keep(e, L->backward_input(L->self, &x, &dy, &dx), PP_ERR_LAYER)) < 0) return rc;
        }
        e->slot[k] |= PP__IDONE;
        if (a.type == PP_I) return PP_OK;
        /* B = I + W */
        /* fall through */
    case PP_W:
        if (!(e->slot[k] & PP__IDONE) || (e->slot[k] & PP__WDONE)) return PP_ERR_WEIGHT_BEFORE_INPUT;
        for (l = e->first[s]; l <= hi; l++) {
            mb_tensor dy;
            const pp_layer *L = &c->layers[l];
            if (!L->backward_weight) continue;
            pp__lt(e, &x, k, 0, l);
            pp__lt(e, &dy, k, 2, l);
            if ((rc = pp__keep(e, L->backward_weight(L->self, &x, &dy), PP_ERR_LAYER)) < 0) return rc;
        }
        e->slot[k] |= PP__WDONE;
        pp__release(e, k);
        return PP_OK;
#endif
    default: return PP_ERR_ACTION;
    }
}

/* Every rank sends v (n bytes: code, err, rank; n 0: an empty message) to root, which keeps
   the report of the lowest rank with a code and answers every rank with it. */
static int pp__report(pp_exec *e, int root, int32_t *v, size_t n)
{
    const pp_table *t = e->t;
    int me = t->rank, pass, r, x = PP_OK;
    int32_t in[3] = {0, 0, 0};
    size_t got = 0;
    for (pass = 0; pass < 2; pass++)
        for (r = 0; r < t->nranks && x >= 0; r++) {
            if (r == me || (me != root && r != root)) continue;
            if (pass == (me == root)) { /* a report to the root, or its answer */
                x = pg_send(e->g, r, PP_AGREE_TAG, v, n);
                continue;
            }
            x = pg_recv(e->g, r, PP_AGREE_TAG, me == root ? in : v, n, &got);
            if (x >= 0 && got != n) x = PG_ERR_MISMATCH;
            if (x >= 0 && me == root && n && in[0] && (!v[0] || r < v[2])) {
                v[0] = in[0];
                v[1] = in[1];
                v[2] = r;
            }
        }
    return x;
}

/* Every rank agrees on the outcome, over point-to-point messages only (no collective: a
   firmware links nothing but send and receive). No abort when the step went well: each rank
   reports to a root (the rank of stage 0 in training, of the last stage when streaming: the
   one that finishes last), which answers once every rank did (a failed rank never reports).
   An error instead aborts the world, so every rank's wait ends in PG_ERR_ABORTED; then all
   recover and report again, now with their error (none from a rank that only saw the
   abort), and every rank takes the root's answer: the error of the lowest rank. The recover
   and each report wait at most half the timeout, so a rank that timed out waiting on a
   stalled peer returns within 1.5 timeouts of its wait's start; without the stalled rank the
   recover fails, each rank keeps its own error, and the world stays aborted until a rerun's
   recover meets it (section 2). */
static int pp__agree(pp_exec *e, int rc)
{
    const pp_table *t = e->t;
    int root = t->stage_rank[PP__TRAIN(e->cfg) ? 0 : t->nstages - 1], own, x;
    int32_t v[3];
    uint32_t tmo;
    if (!rc && (rc = pp__keep(e, pp__report(e, root, v, 0), PP_ERR_COMM)) == PP_OK) return PP_OK;
    own = e->err != PG_ERR_ABORTED; /* a peer's abort is no error of this rank */
    if (own) {
        pg_abort(e->g, rc);
        e->err_rank = t->rank;
    }
    v[0] = own ? rc : 0;
    v[1] = own ? e->err : 0;
    v[2] = t->rank;
    tmo = e->g->timeout_ms; /* the recover waits half of it */
    e->g->timeout_ms = tmo == PG_WAIT_FOREVER ? tmo : tmo / 2u;
    if ((x = pg_recover(e->g)) >= 0) x = pp__report(e, root, v, sizeof v);
    e->g->timeout_ms = tmo;
    if (x < 0) return own ? rc : pp__keep(e, x, PP_ERR_COMM); /* no agreement */
    if (!v[0]) { /* nobody's own error: the world was aborted from outside the executor */
        e->err = PG_ERR_ABORTED;
        e->err_rank = -1;
        return PP_ERR_COMM;
    }
    e->err = v[1];
    e->err_rank = v[2];
    return v[0];
}

static uint32_t pp__now(const pp_exec_cfg *c, uint32_t otherwise)
{
    return c->now_us ? c->now_us(c->user) : otherwise;
}

PP__XDEF int pp_exec_run(pp_exec *e)
{
    int i, rc = 0;
    uint32_t t0;
    if (!e || !e->t) return PP_ERR_NULL;
    PP_MEMSET(e->slot, 0, (size_t)(e->mem - (unsigned char *)e->slot)); /* slot states, losses */
    e->nevents = 0;
    e->err = 0;
    e->err_rank = -1;
    for (i = 0; i < e->t->len && rc >= 0; i++) {
        pp_action a = e->t->actions[i];
#if !PP_NO_TAKEIN
        e->at = i;
#endif
        t0 = pp__now(e->cfg, 0);
        rc = pp__action(e, a);
        if (e->events && e->nevents < e->max_events && a.type != PP_IDLE) {
            pp_event *v = &e->events[e->nevents++];
            v->rank = e->t->rank;
            v->action = a;
            v->t_start = t0;
            v->t_end = pp__now(e->cfg, t0);
        }
    }
    return pp__agree(e, rc);
}

PP__XDEF int pp_exec_loss(const pp_exec *e, const mb_spec *spec, double *loss)
{
    mb_spec sum = MB_REDUCE(MB_RED_SUM);
    mb_value out;
    int rc;
    if (!e || !loss) return PP_ERR_NULL;
    if (!e->losses) return PP_ERR_ARG;
    PP_MEMSET(&out, 0, sizeof out);
    out.kind = MB_VALUE_SCALAR;
    rc = mb_merge(e->losses, e->t->nmb, 1, spec ? spec : &sum, 0, &out);
    if (rc < 0) return rc;
    *loss = out.scalar;
    return PP_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_EXEC_IMPLEMENTATION */
