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
   default and what it does: what is built (PP_NO_TAKEIN, PP_NO_TRAINING, PP_NO_EVENTS: flags
   of value 0 or 1, a bare -DPP_NO_TAKEIN meaning 1) and the port settings (PP_MAILBOX_SLOTS,
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
/* 1: no timeline: pp_exec_run reads no clock and records no pp_event (firmware that does
   not trace its steps: about 80 B less on Cortex-M). pp_exec_cfg.now_us and pp_exec.events,
   max_events and nevents are left out, so code that sets them does not compile. */
#ifndef PP_NO_EVENTS
#define PP_NO_EVENTS 0
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
/* 1: models beyond a chain of one tensor per layer (fairscale's): skip connections across
   stages (pp_layer.stash / pop, cfg.skips), tuples of tensors at a boundary (pp_layer.out,
   cfg.in; microbatches of torch.chunk rows: cfg.batch), a layer at several positions
   (cfg.order), per-rank construction (pp_layer.init, pp_exec_build) and the recompute hook
   (pp_layer.recompute). 0 leaves that code out (a cfg that uses it gets PP_ERR_ARG): the
   executor of a chain. Default: 1 with the planner, 0 under PP_NO_PLANNER, so firmware of a
   chain keeps its size; firmware that runs such a model sets it to 1. */
#ifndef PP_SKIPS
#define PP_SKIPS (!PP_NO_PLANNER)
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
#if SPLITCORE__EMPTY(PP_NO_EVENTS)
#error "pipeline_exec.h: PP_NO_EVENTS is defined without a value: define it to 1 (or 0)"
#elif PP_NO_EVENTS != 0 && PP_NO_EVENTS != 1
#error "pipeline_exec.h: PP_NO_EVENTS must be 0 or 1"
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
#if PP_SKIPS != 0 && PP_SKIPS != 1
#error "pipeline_exec.h: PP_SKIPS must be 0 or 1"
#endif
#include "ports/pg.h" /* the executor talks to any port through pg.h */
#ifdef PIPELINE_EXEC_STATIC
#define PP_EXEC_API static
#else
#define PP_EXEC_API extern
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
   whose sends are buffered, predicts. Take-in stops at the slot count, though: when ranks
   wait on each other in a cycle in which one waits to send into a mailbox full of
   activations its peer has no free slot for (an order that forwards every microbatch through
   a rank before the backward its peer waits on; or transfers above the port's max_msg, which
   travel in pieces and fill a mailbox sooner), they wait until the timeout (PP_ERR_COMM)
   where pp_simulate finishes. A table that pp_mailbox_depth (pipeline.h) proves for depth d
   runs, with or without take-in, on a port whose mailboxes hold d x pieces messages per pair
   (any port when d is 0). PP_NO_TAKEIN leaves take-in out (about 500 B on
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
   one; every rank acknowledges its answer and that rank then releases them, so no rank's next
   step can abort the world before every rank has its answer), so every rank returns the same
   code, err and err_rank. A rank that only saw the abort
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
   same timeout).

   fairscale's models (PP_SKIPS). A position's call gets arrays: x its inputs (the previous
   position's outputs, a tuple of pp_layer.out specs, or the model input cfg.in) and then
   the skip tensors it pops, y its outputs and then the ones it stashes; in training dx and dy
   are their gradients in the same order, and the input, loss and output callbacks get the
   model input's and the last position's tuples the same way. A batched tensor has rows(m)
   rows (torch.chunk's split of cfg.batch, or cfg.rows each). Each stage boundary carries
   every tensor of its tuple (gradients: the floating ones; a chain's, of cfg.dtype: all),
   each skip route its tensor straight from the stashing stage's rank to the popping stage's
   (SEND_S / RECV_S, the gradient back by SEND_SB / RECV_SB). The slot of a stage holds its
   input, each position's outputs and stashes, and the skips it pops from other stages
   (received, or copied from this rank's stashing stage at its F), and in training their
   gradients: an inference slot is released once its last use on this rank is done (its
   sends, the next stage's F, a popping stage's F), the receiver's pops with the popping
   stage's slot after its F; the gradient of a skip popped by another stage of this rank is
   written into the stashing stage's slot. t->slots counts the held activations
   (pp_peak_inflight). A layer at several positions runs at each (its backward_weight
   accumulates from every one) and lives on one rank; pp_exec_build calls pp_layer.init for
   the layers this rank holds (pp_exec_builds), with their param_bytes in its storage, and no
   other rank's. A checkpointed microbatch's forward runs again through pp_layer.recompute
   where set. Ranks past the table's (pp_plan_table of a rank >= nranks: an empty table)
   return at once; a world larger than the table is fine for the others, but after an error
   their recover (pg_recover: every rank of the world) cannot meet the ranks that returned, so
   they return their own errors. */
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
#if !PP_NO_EVENTS
    uint32_t (*now_us)(void *user); /* optional clock for pp_exec.events */
#endif
#if PP_SKIPS              /* NULL / 0: a chain of layers, with rows, dtype and in_bytes above */
    const int32_t *order; /* the layer at each of npos positions (pp_invocations); balance
                             then counts positions */
    int32_t npos;
    const pp_tspec *in; /* the model input: a tuple of nin tensors */
    int32_t nin;
    int32_t batch;         /* the mini-batch's rows, split as torch.chunk: microbatch m has
                               min(rows, batch - m * rows) (rows = ceil(batch / nmb)) */
    const pp_route *skips; /* the skip routes (pp_skip_layout; emitted: <plan>_skips) */
    int32_t nskips;
#endif
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
#if !PP_NO_EVENTS
    pp_event *events; /* optional: set after init (max_events); nevents per run */
    int32_t max_events, nevents;
#endif
    int32_t err;      /* the last run's failure: the callback's code (PP_ERR_LAYER), the pg_err
                         (PP_ERR_COMM), 0 otherwise */
    int32_t err_rank; /* the rank it happened on; -1: none, or unknown */
    int32_t at;       /* the action running (pp_exec_run) */
    uint32_t *skipw;  /* PP_SKIPS, per slot: the skips (bit r) and skip gradients (16 + r)
                         that arrived ahead */
    mb_tensor *views; /* PP_SKIPS: a call's tensors when a tuple has more than one */
    int32_t nviews;
    uint32_t param_bytes;  /* PP_SKIPS: of the layers this rank builds */
    unsigned char *params; /* PP_SKIPS: the parameters of the layers this rank builds */
} pp_exec;

/* Bytes of storage for this rank into *bytes: PP_OK, or the code pp_exec_init would return
   for cfg and t (*bytes untouched). Exact: pp_exec_init accepts exactly this many. */
PP_EXEC_API int pp_exec_query(const pp_exec_cfg *cfg, const pp_table *t, size_t *bytes);
/* The same as a value: 0 means cfg or t is invalid (pp_exec_query says why). */
PP_EXEC_API size_t pp_exec_bytes(const pp_exec_cfg *cfg, const pp_table *t);
/* Check cfg/table/group and lay out storage (8-byte aligned, >= pp_exec_query's bytes). */
PP_EXEC_API int pp_exec_init(pp_exec *e, const pp_exec_cfg *cfg, const pp_table *t, pg_group *g, void *storage,
                             size_t bytes);
/* One step: every action of the table. Returns PP_OK or the same pipeline code on every rank
   (PP_ERR_LAYER, PP_ERR_COMM or the executor's own; pp_exec.err and err_rank say more). */
PP_EXEC_API int pp_exec_run(pp_exec *e);
#if PP_SKIPS
/* Whether this rank builds layer `layer` (one of its positions is on a stage of
   this rank): 1, 0, or the code pp_exec_query would return. */
PP_EXEC_API int pp_exec_builds(const pp_exec_cfg *cfg, const pp_table *t, int layer);
/* Once after pp_exec_init: per-rank construction, pp_layer.init of every layer this
   rank builds, each with its param_bytes of the storage (8-byte aligned). PP_ERR_LAYER when
   an init fails (its code in pp_exec.err). */
PP_EXEC_API int pp_exec_build(pp_exec *e);
#endif
/* Last stage, after a training step: the per-microbatch losses merged with `spec`
   (NULL: sum; MB_REDUCE_CUSTOM(r) for a custom reducer). Needs microbatch.h's
   implementation. PP_ERR_ARG on ranks without the last stage, after a step that failed before
   every microbatch's loss, and for a spec mb_merge refuses (a custom reducer's own error is
   not kept: the reducer records it). */
PP_EXEC_API int pp_exec_loss(const pp_exec *e, const mb_spec *spec, double *loss);

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
#define PP__EXEC_DEF static
#else
#define PP__EXEC_DEF
#endif

#define PP__R8(x)    (((uint32_t)(x) + 7u) & ~7u)
#define PP__TRAIN(c) (!PP_NO_TRAINING && (c)->loss != NULL) /* training, else inference */
static const unsigned char pp__es[MB_DTYPE_COUNT] = {4, 8, 1, 1, 2, 4};
/* slot flags; PP__GOTX / PP__GOTDY: the input / output gradient arrived ahead (pp__takein);
   PP__SENDSB: skip gradients to send (SEND_SB) */
enum {
    PP__USED = 1,
    PP__IDONE = 2,
    PP__WDONE = 4,
    PP__SENDB = 8,
    PP__CKPT = 16,
    PP__GOTX = 32,
    PP__GOTDY = 64,
    PP__SENDSB = 128
};
/* a slot's state word: the flags above, its stage (8 bits) and microbatch (16 bits); in
   inference (PP_SKIPS) bits 1-4, training's flags, count the uses of the slot's activation
   still to come on this rank (pp__use) */
#define PP__SLOT_STAGE_SHIFT 8
#define PP__SLOT_MB_SHIFT    16
#define PP__SLOT_STAGE(w)    ((int)(((w) >> PP__SLOT_STAGE_SHIFT) & 0xffu))
#define PP__SLOT_MB(w)       ((w) >> PP__SLOT_MB_SHIFT)
#define PP__USE              2u
#define PP__USES             (15u * PP__USE)
#if !PP_NO_TAKEIN
#define PP__GOT(k, f) (e->slot[k] & (f))
#else
#define PP__GOT(k, f) 0u /* nothing arrives ahead */
#endif
#if PP_SKIPS
#define PP__NPOS(c)     ((c)->order ? (c)->npos : (c)->nlayers)
#define PP__LAYER(c, p) (&(c)->layers[(c)->order ? (c)->order[p] : (p)])
#define PP__NVIEWS(e)   ((e)->views ? (e)->nviews : 1)
#else
#define PP__NPOS(c)     ((c)->nlayers)
#define PP__LAYER(c, p) (&(c)->layers[p])
#define PP__NVIEWS(e)   1
#endif

/* Largest activation and largest half slot (bytes): a slot's offsets and its size (twice
   the half in training) stay in 32 bits, and adding one activation to a half that fits
   cannot wrap. */
#define PP__ACT_MAX  0x3ffffff8u
#define PP__HALF_MAX 0x3ffffff8u

/* ---- a model's tensors ---- */
#if !PP_SKIPS /* a chain: one [rows, act_bytes / rows / size] tensor per layer */
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
#else /* fairscale's models: a stage's slot is a sequence of blocks of tensors */
/* Rows of microbatch m: torch.chunk's split of cfg.batch, else cfg.rows. */
static int32_t pp__rows(const pp_exec_cfg *c, int m)
{
    if (c->batch) return c->batch - m * c->rows < c->rows ? c->batch - m * c->rows : c->rows;
    return c->rows;
}

/* Tensors position p gives (p = -1: the model input): its outputs, and with all its stashes. */
static int pp__nvals(const pp_exec_cfg *c, int p, int all)
{
    const pp_layer *L = p < 0 ? NULL : PP__LAYER(c, p);
    if (!L) return c->in ? c->nin : 1;
    return (L->out ? L->nout : 1) + (all ? L->nstash : 0);
}

/* Tensor i of what position p gives (p = -1: the model input). */
static void pp__spec(const pp_exec_cfg *c, int p, int i, pp_tspec *t)
{
    const pp_layer *L = p < 0 ? NULL : PP__LAYER(c, p);
    const pp_tspec *out = L ? L->out : c->in;
    int n = pp__nvals(c, p, 0);
    if (i >= n) {
        *t = L->stash[i - n].spec;
        return;
    }
    if (out) {
        *t = out[i];
        return;
    }
    PP_MEMSET(t, 0, sizeof *t); /* a chain's tensor: [rows, bytes / rows / size] of cfg.dtype */
    t->dtype = c->dtype;
    t->ndim = 1;
    t->shape[0] = (int32_t)((p < 0 ? c->in_bytes : PP__LAYER(c, p)->act_bytes) / (uint32_t)c->rows / pp__es[c->dtype]);
}

/* Bytes of a tensor of spec t with `rows` rows (a whole tensor: its own). */
static uint32_t pp__tbytes(const pp_tspec *t, int32_t rows)
{
    uint32_t n = pp__es[t->dtype];
    int d;
    for (d = 0; d < t->ndim; d++) n *= (uint32_t)t->shape[d];
    return t->whole ? n : n * (uint32_t)rows;
}

/* The route of the q-th skip stage s pops from another stage (its pop block, route order),
   or, q < 0, how many there are; with at >= 0: the index in that block of route `at`. */
static int pp__pop_route(const pp_exec *e, int s, int q, int at)
{
    const pp_exec_cfg *c = e->cfg;
    int r, n = 0;
    for (r = 0; r < c->nskips; r++)
        if (c->skips[r].dst == s && c->skips[r].src != s) {
            if (r == at) return n;
            if (n++ == q) return r;
        }
    return n;
}
/* The block after a stage's positions: the skips it pops from other stages. */
#define PP__END(e, s) ((e)->first[(s) + 1])

/* Tensors of block p of stage s's slot: its input (p = first[s] - 1: the outputs of the
   previous position), a position's outputs and stashes, the skips it pops (PP__END). */
static int pp__bcount(const pp_exec *e, int s, int p)
{
    if (p > e->first[s + 1] - 1) return pp__pop_route(e, s, -1, -1);
    return pp__nvals(e->cfg, p, p >= e->first[s]);
}
static void pp__bspec(const pp_exec *e, int s, int p, int i, pp_tspec *t)
{
    if (p > e->first[s + 1] - 1) { /* a popped skip: its stash's spec */
        const pp_route *x = &e->cfg->skips[pp__pop_route(e, s, i, -1)];
        p = x->stash;
        i = pp__nvals(e->cfg, p, 0) + x->stash_i;
    }
    pp__spec(e->cfg, p, i, t);
}

/* Offset of tensor i of block p in the value half of stage s's slot (its gradient: + the
   half), and with t its spec; i = the block's count gives the block's end. */
static uint32_t pp__eoff(const pp_exec *e, int s, int p, int i, pp_tspec *t)
{
    uint32_t off = 0;
    int q, j;
    pp_tspec x;
    for (q = e->first[s] - 1; q <= p; q++)
        for (j = 0; j < pp__bcount(e, s, q) && (q < p || j < i); j++) {
            pp__bspec(e, s, q, j, &x);
            off += PP__R8(pp__tbytes(&x, e->cfg->rows));
        }
    if (t) pp__bspec(e, s, p, i, t);
    return off;
}
/* Bytes of stage s's value half (its gradient half is as large). */
static uint32_t pp__half(const pp_exec *e, int s)
{
    return pp__eoff(e, s, PP__END(e, s), pp__bcount(e, s, PP__END(e, s)), NULL);
}

/* Checks cfg and the caller-filled table before any field is used as an index; fills
   first[], the slot size and count. A training slot holds the stage input, every layer's
   output and output gradient and the input gradient; an inference slot the input and the
   outputs only. */
/* The route that position p's i-th pop takes, NULL if none. */
static const pp_route *pp__route_of(const pp_exec_cfg *c, int p, int i)
{
    int r;
    for (r = 0; r < c->nskips; r++)
        if (c->skips[r].pop == p && c->skips[r].pop_i == i) return &c->skips[r];
    return NULL;
}
/* The first position of the layer at position p. */
static int pp__first_pos(const pp_exec_cfg *c, int p)
{
    int q;
    for (q = 0; q < p && (!c->order || c->order[q] != c->order[p]); q++) {}
    return q;
}

/* The stage of position p. */
static int pp__stage_at(const int16_t *first, int p)
{
    int s = 0;
    while (first[s + 1] <= p) s++;
    return s;
}
/* A spec of a valid dtype and shape, at most PP__ACT_MAX bytes per microbatch. */
static int pp__spec_ok(const pp_tspec *t, int32_t rows)
{
    uint64_t n;
    int d;
    if (t->dtype < 0 || t->dtype >= MB_DTYPE_COUNT || t->ndim < 0 || t->ndim > MB_MAX_DIMS - 1 || (t->whole & ~1))
        return 0;
    n = pp__es[t->dtype] * (uint64_t)(t->whole ? 1 : rows);
    for (d = 0; d < t->ndim; d++)
        if (t->shape[d] <= 0 || (n *= (uint64_t)t->shape[d]) > PP__ACT_MAX) return 0;
    return n <= PP__ACT_MAX;
}
/* Whether a layer at position p runs on a stage of rank r. */
static int pp__holds(const pp_exec_cfg *c, const pp_table *t, const int16_t *first, int layer, int r)
{
    int p;
    for (p = 0; p < PP__NPOS(c); p++)
        if ((c->order ? c->order[p] : p) == layer && t->stage_rank[pp__stage_at(first, p)] == r) return 1;
    return 0;
}

/* The checks of fairscale's model features, once the chain's passed: positions (a shared
   layer lives on one rank), tuple and skip specs, the routes (one per pop, their stages and
   indices), torch.chunk's rows, the uses an inference slot counts (<= 15). Fills
   x->nviews (the largest tuple of a call) and x->param_bytes (the layers this rank builds). */
static int pp__xcheck_model(const pp_exec_cfg *c, const pp_table *t, pp_exec *x)
{
    int p, q, i, npos = PP__NPOS(c), T;
    uint64_t prm = 0;
    const int16_t *first = x->first;
    if (c->batch < 0 || (c->batch && (c->rows != (c->batch + t->nmb - 1) / t->nmb ||
                                      (int64_t)(t->nmb - 1) * c->rows >= (int64_t)c->batch)))
        return PP_ERR_ARG; /* torch.chunk would give fewer chunks than microbatches */
    if (c->nskips < 0 || c->nskips > 16 || (c->nskips && !c->skips) || (c->in && (c->nin <= 0 || c->nin > 255)))
        return PP_ERR_ARG;
    for (i = 0; c->in && i < c->nin; i++)
        if (!pp__spec_ok(&c->in[i], c->rows)) return PP_ERR_ARG;
    for (p = 0; p < npos; p++) /* a shared layer's positions on one rank */
        if (t->stage_rank[pp__stage_at(first, pp__first_pos(c, p))] != t->stage_rank[pp__stage_at(first, p)])
            return PP_ERR_STAGE_RANK;
    T = pp__nvals(c, -1, 0);
    for (p = 0; p < npos; p++) {
        const pp_layer *L = PP__LAYER(c, p);
        int n = pp__nvals(c, p, 1);
        if (L->nout < 0 || L->nout > 255 || !L->out != !L->nout || L->nstash < 0 || L->nstash > 255 || L->npop < 0 ||
            L->npop > 255)
            return PP_ERR_ARG;
        if ((L->nstash && !L->stash) || (L->npop && !L->pop)) return PP_ERR_NULL;
        for (i = 0; i < n; i++) {
            pp_tspec s;
            pp__spec(c, p, i, &s);
            if (!pp__spec_ok(&s, c->rows)) return PP_ERR_ARG;
        }
        for (i = 0; i < L->npop; i++)
            if (!pp__route_of(c, p, i)) return PP_ERR_SKIP_UNSTASHED;
        if (n > T) T = n;
        if ((n = pp__nvals(c, p - 1, 0) + L->npop) > T) T = n;
        if (L->init && pp__first_pos(c, p) == p && pp__holds(c, t, first, c->order ? c->order[p] : p, t->rank))
            prm += PP__R8(L->param_bytes); /* once per layer */
    }
    for (i = 0; i < c->nskips; i++) {
        const pp_route *r = &c->skips[i];
        if (r->stash >= npos || r->pop >= npos || r->stash_i >= PP__LAYER(c, r->stash)->nstash ||
            r->pop_i >= PP__LAYER(c, r->pop)->npop || r->src != pp__stage_at(first, r->stash) ||
            r->dst != pp__stage_at(first, r->pop) || pp__route_of(c, r->pop, r->pop_i) != r)
            return PP_ERR_ARG;
        if (r->stash >= r->pop) return PP_ERR_SKIP_BACKWARDS;
    }
    for (i = 0; i < t->nstages; i++) { /* an inference slot's uses: next stage, SEND_S, local pops */
        int n = 1 + (i + 1 < t->nstages), remote = 0;
        for (q = 0; q < c->nskips; q++)
            if (c->skips[q].src == i && c->skips[q].dst != i) {
                if (t->stage_rank[c->skips[q].dst] == t->stage_rank[i])
                    n++;
                else
                    remote = 1;
            }
        if (n + remote > 15) return PP_ERR_ARG;
    }
    if (prm > PP__ACT_MAX) return PP_ERR_ARG;
    x->nviews = T;
    x->param_bytes = (uint32_t)prm;
    return PP_OK;
}
#endif

static int pp__xcheck(const pp_exec_cfg *c, const pp_table *t, pp_exec *x)
{
    int s, l, train, extra = 0, npos;
    uint32_t unit, best = 0;
    int16_t *first = x->first;
    if (!c || !t || !c->layers || !c->balance || !t->actions || !t->stage_rank) return PP_ERR_NULL;
#if PP_SKIPS
    x->cfg = c;
    x->t = t;
    x->nviews = 0;
    x->param_bytes = 0;
    if (!t->len && !t->slots) { /* a rank without stages: it returns at once */
        x->nslots = 0;
        return PP_OK;
    }
#endif
    npos = PP__NPOS(c);
    if (c->rows <= 0 || c->dtype < 0 || c->dtype >= MB_DTYPE_COUNT || c->nlayers <= 0 || c->nlayers > INT16_MAX ||
        npos <= 0 || npos > INT16_MAX || !t->nstages || t->nstages > PP_MAX_STAGES || !t->nranks ||
        t->nranks > PP_MAX_RANKS || t->rank >= t->nranks || !t->slots || !t->nmb)
        return PP_ERR_ARG;
    if (c->checkpoint < PP_CKPT_ALWAYS || c->checkpoint > PP_CKPT_NEVER) return PP_ERR_CHECKPOINT;
#if PP_NO_TAKEIN
    if (!t->mailbox) return PP_ERR_MAILBOX; /* not proven to run without take-in */
#endif
#if PP_NO_TRAINING
    if (c->loss) return PP_ERR_ARG;
#endif
#if PP_SKIPS
    for (l = 0; c->order && l < npos; l++)
        if (c->order[l] < 0 || c->order[l] >= c->nlayers) return PP_ERR_ARG;
#endif
    train = PP__TRAIN(c);
    unit = (uint32_t)c->rows * pp__es[c->dtype];
    first[0] = 0;
    for (s = 0; s < t->nstages; s++) {
        if (t->stage_rank[s] >= t->nranks) return PP_ERR_STAGE_RANK;
        if (c->balance[s] <= 0) return PP_ERR_BALANCE_NONPOSITIVE;
        if (c->balance[s] > npos - first[s]) return PP_ERR_BALANCE_SUM;
        first[s + 1] = (int16_t)(first[s] + c->balance[s]);
    }
    if (first[t->nstages] != npos) return PP_ERR_BALANCE_SUM;
    for (l = -1; l < npos; l++) { /* the model input's bytes (l = -1), then each layer's */
        const pp_layer *y = l < 0 ? NULL : PP__LAYER(c, l);
        uint32_t n = c->in_bytes;
        if (y) {
            if (!y->forward || (train && l && !y->backward_input)) return PP_ERR_NULL;
#if PP_SKIPS
            if (y->out) continue; /* pp__xcheck_model checks its specs */
#else
            if ((y->nout | y->nstash | y->npop) || y->init || y->recompute) return PP_ERR_ARG; /* PP_SKIPS's */
#endif
            n = y->act_bytes;
        }
#if PP_SKIPS
        else if (c->in)
            continue; /* tuple inputs: pp__xcheck_model checks their specs */
#endif
        if (!n || n % unit || n > PP__ACT_MAX) return PP_ERR_ARG;
    }
    for (l = 0; l < t->len; l++) {
        pp_action a = t->actions[l];
        if (a.type >= (PP_SKIPS ? PP_TYPE_COUNT : PP_SEND_S) || a.stage >= t->nstages || a.mb >= t->nmb)
            return PP_ERR_ACTION;
        if (a.type != PP_IDLE && t->stage_rank[a.stage] != t->rank) return PP_ERR_STAGE_RANK;
        if (!train && a.type >= PP_B && a.type <= PP_W) return PP_ERR_BACKWARD_COUNT;
    }
#if PP_SKIPS
    if ((l = pp__xcheck_model(c, t, x)) != PP_OK) return l;
#endif
    for (s = 0; s < t->nstages; s++) {
#if PP_SKIPS
        uint64_t n;
#else
        uint32_t n;
#endif
        if (t->stage_rank[s] != t->rank) continue;
        if ((!s && !c->input) || (s == t->nstages - 1 && !train && !c->output)) return PP_ERR_NULL;
#if PP_SKIPS
        if ((n = pp__eoff(x, s, PP__END(x, s), pp__bcount(x, s, PP__END(x, s)), NULL)) > PP__HALF_MAX)
            return PP_ERR_ARG;
#else
        n = PP__R8(pp__inb(c, first, s));
        for (l = first[s]; l < first[s + 1]; l++)
            if ((n += PP__R8(c->layers[l].act_bytes)) > PP__HALF_MAX) return PP_ERR_ARG;
#endif
        n <<= train; /* training: the gradients beside */
        if (n > best) best = (uint32_t)n;
            /* inference hands an activation to a next stage on this rank: one more slot, unless
           the table counted hand-overs (plans with skips) */
#if PP_SKIPS
        if (c->nskips) continue;
#endif
        if (!train && s + 1 < t->nstages && t->stage_rank[s + 1] == t->rank) extra = 1;
    }
    x->slot_bytes = best;
    x->nslots = t->slots + extra;
    return PP_OK;
}

/* Storage: the slot states (and their skip words), the losses (training, last stage), the
   views of calls with tuples, the slots, the parameters of the layers this rank builds. */
static uint64_t pp__xlayout(const pp_exec_cfg *c, const pp_table *t, const pp_exec *x, size_t *loss_at,
                            size_t *views_at)
{
    size_t n = PP__R8(4u * (uint32_t)x->nslots);
#if PP_SKIPS
    if (c->nskips) n += PP__R8(4u * (uint32_t)x->nslots);
#endif
    *loss_at = n;
    if (PP__TRAIN(c) && t->stage_rank[t->nstages - 1] == t->rank) n += sizeof(mb_value) * t->nmb;
    *views_at = n;
#if PP_SKIPS
    if (x->nviews > 1) n += PP__R8(3u * sizeof(mb_tensor) * (uint32_t)x->nviews);
    n += x->param_bytes;
#endif
    return n + (uint64_t)x->nslots * x->slot_bytes;
}

/* pp__xcheck and the layout's size, refused when it does not fit a size_t. */
static int pp__xsize(const pp_exec_cfg *c, const pp_table *t, pp_exec *x, size_t *need, size_t *loss_at,
                     size_t *views_at)
{
    uint64_t n;
    int rc = pp__xcheck(c, t, x);
    if (rc) return rc;
    n = pp__xlayout(c, t, x, loss_at, views_at);
    if ((size_t)n != n) return PP_ERR_ARG;
    *need = (size_t)n;
    return PP_OK;
}

PP__EXEC_DEF int pp_exec_query(const pp_exec_cfg *c, const pp_table *t, size_t *bytes)
{
    pp_exec x;
    size_t need, at, vat;
    int rc;
    if (!bytes) return PP_ERR_NULL;
    if ((rc = pp__xsize(c, t, &x, &need, &at, &vat)) == PP_OK) *bytes = need;
    return rc;
}

PP__EXEC_DEF size_t pp_exec_bytes(const pp_exec_cfg *c, const pp_table *t)
{
    size_t n = 0;
    return pp_exec_query(c, t, &n) ? 0 : n;
}

PP__EXEC_DEF int pp_exec_init(pp_exec *e, const pp_exec_cfg *c, const pp_table *t, pg_group *g, void *storage,
                              size_t bytes)
{
    pp_exec x;
    size_t at, vat, need;
    unsigned char *base = (unsigned char *)storage;
    int rc;
    if (!e || !g || !storage) return PP_ERR_NULL;
    PP_MEMSET(&x, 0, sizeof x);
    if ((rc = pp__xsize(c, t, &x, &need, &at, &vat)) != PP_OK) return rc;
    if ((PP_SKIPS ? g->size < t->nranks : g->size != t->nranks) || g->rank != t->rank) return PP_ERR_RANKS;
    if ((uintptr_t)storage & 7u) return PP_ERR_ARG;
    if (bytes < need) return PP_ERR_TOO_SMALL;
    x.cfg = c;
    x.t = t;
    x.g = g;
    x.slot = (uint32_t *)storage;
    x.mem = base + (need - (size_t)x.nslots * x.slot_bytes);
#if PP_SKIPS
    if (vat != at) /* the losses lie between slot[] and the views */
#else
    if (x.mem != base + at) /* the losses lie between slot[] and mem */
#endif
        x.losses = (mb_value *)(void *)(base + at);
#if PP_SKIPS
    x.mem -= x.param_bytes;
    x.params = x.mem + (size_t)x.nslots * x.slot_bytes;
    if (c->nskips) x.skipw = (uint32_t *)(void *)(base + PP__R8(4u * (uint32_t)x.nslots));
    if (x.nviews > 1) x.views = (mb_tensor *)(void *)(base + vat);
#endif
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

/* A free slot for (s, m), or PP_ERR_TOO_SMALL. */
static int pp__alloc(pp_exec *e, int s, int m)
{
    int k;
    for (k = 0; k < e->nslots && e->slot[k]; k++) {}
    if (k == e->nslots) return PP_ERR_TOO_SMALL;
    e->slot[k] = PP__USED | (uint32_t)s << PP__SLOT_STAGE_SHIFT | (uint32_t)m << PP__SLOT_MB_SHIFT;
#if PP_SKIPS
    if (e->skipw) e->skipw[k] = 0;
#endif
    return k;
}

/* Each wait its own timeout (pp__move's slices; without take-in the group's): every
   transfer, the agreement's too, goes through the two calls with a timeout, so a firmware
   links those and not pg_send / pg_recv beside them. */
#define PP__SEND(g, r, tag, p, n, tmo)      pg_send_timeout(g, r, tag, p, n, tmo)
#define PP__RECV(g, r, tag, p, n, got, tmo) pg_recv_timeout(g, r, tag, p, n, got, tmo)
/* A gradient that does not travel: of an integer tensor given by a spec (a tuple's, a skip's:
   fairscale's, where it has none). A chain's tensors (cfg.dtype, no spec) all carry theirs,
   as in the chain layout: the stage map must not change what a layer gets. */
#define PP__NOGRAD(t, grad, typed)          ((grad) && (typed) && (t).dtype != MB_F32 && (t).dtype != MB_F64)
/* One message of n bytes at p to (send) or from peer, waiting at most tmo ms; a message of
   another size is PG_ERR_MISMATCH. */
static int pp__msg(pp_exec *e, int send, int peer, int tag, void *p, size_t n, uint32_t tmo)
{
    size_t got = 0;
    int rc = send ? PP__SEND(e->g, peer, tag, p, n, tmo) : PP__RECV(e->g, peer, tag, p, n, &got, tmo);
    return rc >= 0 && !send && got != n ? PG_ERR_MISMATCH : rc;
}

/* Send or receive len bytes at `at` in pieces of the port's max_msg (tag, peer), each
   waiting at most tmo ms; *done counts what moved. */
static int pp__pieces(pp_exec *e, int send, int peer, int tag, unsigned char *at, uint32_t len, uint32_t tmo,
                      uint32_t *done)
{
    size_t max = e->g->max_msg, c;
    int rc = PP_OK;
    while (len) {
        c = len < max ? len : max;
        if ((rc = pp__msg(e, send, peer, tag, at, c, tmo)) < 0) break;
        at += c;
        len -= (uint32_t)c;
        *done += (uint32_t)c;
    }
    return rc;
}

#if !PP_SKIPS
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

/* Move slot k's boundary data (stage s, microbatch m) in pieces, each waiting at most tmo
   ms: part 0 receives x from stage s-1, 1 sends y to s+1, 2 receives dy from s+1, 3 sends dx
   to s-1; *done counts the bytes moved (a timed-out move resumes there). k < 0: only probe
   whether the first piece arrived. The tag names the receiving stage, the microbatch and
   the direction. */
static int pp__xfer(pp_exec *e, int k, int s, int m, int part, int r, uint32_t tmo, uint32_t *done)
{
    int send = part & 1, ps = s + ((part + 1) & 2) - 1, rc;
    int peer = e->t->stage_rank[ps];
    int tag =
        (int)((((uint32_t)m * e->t->nstages + (uint32_t)(send ? ps : s)) * 2u + (uint32_t)(part >> 1)) & PG_TAG_MAX);
    uint32_t n = pp__inb(e->cfg, e->first, ps > s ? ps : s);
    (void)r;
#if !PP_NO_TAKEIN
    if (k < 0) return pg_probe(e->g, peer, tag, NULL);
#else
    /* the table was proven for mailboxes of mailbox - 1 transfers: this one is n / max
       messages (rounded up), so the port's PP_MAILBOX_SLOTS must hold that many times more */
    if ((e->t->mailbox - 1u) * ((n + e->g->max_msg - 1u) / e->g->max_msg) > PP_MAILBOX_SLOTS) return PP_ERR_MAILBOX;
#endif
    rc = pp__pieces(e, send, peer, tag, pp__at(e, k, part, e->first[s + 1] - 1) + *done, n - *done, tmo, done);
    return rc < 0 ? rc : PP_OK;
}
#else
/* Tensor i of block p of slot k (grad: its gradient) as a view for the slot's microbatch. */
static void pp__view(const pp_exec *e, mb_tensor *v, int k, int p, int i, int grad)
{
    int s = PP__SLOT_STAGE(e->slot[k]), d, n = 0;
    pp_tspec t;
    unsigned char *at = e->mem + (size_t)k * e->slot_bytes + pp__eoff(e, s, p, i, &t);
    PP_MEMSET(v, 0, sizeof *v);
    v->data = grad ? at + pp__half(e, s) : at;
    v->dtype = (mb_dtype)t.dtype;
    if (!t.whole) v->shape[n++] = pp__rows(e->cfg, (int)PP__SLOT_MB(e->slot[k]));
    for (d = 0; d < t.ndim; d++) v->shape[n++] = t.shape[d];
    v->ndim = n;
    for (d = n; d-- > 0;) v->stride[d] = d == n - 1 ? 1 : v->stride[d + 1] * v->shape[d + 1];
}

/* Position p's call in slot k: x (may be NULL) its inputs (the previous position's outputs:
   the stage's input at its first position) and then its pops, y (may be NULL) its outputs
   and then its stashes; grad = 1: their gradients (dx, dy). A stage's input gradient goes
   into the previous stage's slot when that stage is on this rank, as does the gradient of a
   skip popped from another stage of this rank into the stashing stage's slot; only dx needs
   those slots (W runs on dy after the previous stage may have released its slot). */
static int pp__args(pp_exec *e, int k, int p, int grad, mb_tensor *x, mb_tensor *y)
{
    const pp_table *t = e->t;
    int s = PP__SLOT_STAGE(e->slot[k]), m = (int)PP__SLOT_MB(e->slot[k]), i, n = pp__nvals(e->cfg, p - 1, 0), j = k;
    if (grad && x && p == e->first[s] && s && t->stage_rank[s - 1] == t->rank) { /* the previous stage's slot */
        j = pp__find(e, s - 1, m);
        if (j < 0) return j;
    }
    for (i = 0; x && i < n; i++) pp__view(e, &x[i], j, p - 1, i, grad);
    for (i = 0; x && p < PP__NPOS(e->cfg) && i < PP__LAYER(e->cfg, p)->npop; i++) {
        const pp_route *r = pp__route_of(e->cfg, p, i);
        int blk = PP__END(e, s), at = pp__pop_route(e, s, -1, (int)(r - e->cfg->skips)), q = k;
        if (r->src != s && grad && t->stage_rank[r->src] == t->rank) {
            q = pp__find(e, r->src, m);
            if (q < 0) return q;
        }
        if (q != k || r->src == s) { /* in the stashing stage's slot: this one, or another here */
            blk = r->stash;
            at = pp__nvals(e->cfg, r->stash, 0) + r->stash_i;
        }
        pp__view(e, &x[n + i], q, blk, at, grad);
    }
    for (i = 0; y && i < pp__nvals(e->cfg, p, 1); i++) pp__view(e, &y[i], k, p, i, grad);
    return PP_OK;
}

/* Transfer `part` of stage s's microbatch m: 0 receives its input from stage s - 1, 1 sends
   its output to s + 1, 2 receives its output gradient from s + 1, 3 sends its input
   gradient to s - 1; + 4, skip route r: 4 its tensor into the popping stage, 5 from the
   stashing one, 6 its gradient into the stashing stage, 7 from the popping one. Gives the
   block (*p, tensors *i0 .. + count), the peer and the tag: the receiving stage (or the
   route), the microbatch and the direction. Returns the count. */
static int pp__xspec(const pp_exec *e, int s, int m, int part, int r, int *p, int *i0, int *peer, int *tag)
{
    const pp_table *t = e->t;
    int send = part & 1, grad = part >> 1 & 1, ps;
    if (part & 4) {
        const pp_route *x = &e->cfg->skips[r];
        int stashing = part == 5 || part == 6;
        *peer = t->stage_rank[stashing ? x->dst : x->src];
        *tag = (int)(((((uint32_t)m * (uint32_t)e->cfg->nskips + (uint32_t)r) * 2u + (uint32_t)grad) * 2u + 1u) &
                     PG_TAG_MAX);
        *p = stashing ? x->stash : PP__END(e, s);
        *i0 = stashing ? pp__nvals(e->cfg, x->stash, 0) + x->stash_i : pp__pop_route(e, s, -1, r);
        return 1;
    }
    ps = s + ((part + 1) & 2) - 1;
    *peer = t->stage_rank[ps];
    *tag = (int)(((((uint32_t)m * t->nstages + (uint32_t)(send ? ps : s)) * 2u + (uint32_t)grad) * 2u) & PG_TAG_MAX);
    *p = part == 1 || part == 2 ? e->first[s + 1] - 1 : e->first[s] - 1;
    *i0 = 0;
    return pp__nvals(e->cfg, *p, 0);
}

/* Move transfer `part` (route r) of slot k (stage s, microbatch m), tensor after tensor, in
   pieces of the port's max_msg, each waiting at most tmo ms; *done counts the bytes moved
   (a timed-out move resumes there). Gradients of integer tensors with a spec do not travel
   (PP__NOGRAD). k < 0: only probe whether the first piece arrived. */
static int pp__xfer(pp_exec *e, int k, int s, int m, int part, int r, uint32_t tmo, uint32_t *done)
{
    int send = part & 1, grad = part >> 1 & 1, p, i0, peer, tag, i, rc = PP_OK;
    int n = pp__xspec(e, s, m, part, r, &p, &i0, &peer, &tag);
    /* a skip's tensor has its stash's spec; a boundary's the position's out (or cfg.in) */
    int typed = (part & 4) || (p < 0 ? e->cfg->in != NULL : PP__LAYER(e->cfg, p)->out != NULL);
    uint32_t skip, len;
    pp_tspec sp;
#if !PP_NO_TAKEIN
    if (k < 0) return pg_probe(e->g, peer, tag, NULL);
#endif
    skip = *done;
#if PP_NO_TAKEIN
    /* the table was proven for mailboxes of mailbox - 1 transfers: this one is its pieces of
       max_msg (rounded up), so the port's PP_MAILBOX_SLOTS must hold that many times more */
    for (i = i0, len = 0; i < i0 + n; i++) {
        size_t max = e->g->max_msg;
        pp__eoff(e, s, p, i, &sp);
        len += PP__NOGRAD(sp, grad, typed) ? 0 : (uint32_t)((pp__tbytes(&sp, pp__rows(e->cfg, m)) + max - 1u) / max);
    }
    if ((e->t->mailbox - 1u) * len > PP_MAILBOX_SLOTS) return PP_ERR_MAILBOX;
#endif
    for (i = i0; i < i0 + n && rc >= 0; i++) {
        unsigned char *at = e->mem + (size_t)k * e->slot_bytes + pp__eoff(e, s, p, i, &sp);
        len = pp__tbytes(&sp, pp__rows(e->cfg, m));
        if (PP__NOGRAD(sp, grad, typed)) continue;
        if (skip >= len) { /* moved before a timeout */
            skip -= len;
            continue;
        }
        at += (grad ? pp__half(e, s) : 0) + skip;
        rc = pp__pieces(e, send, peer, tag, at, len - skip, tmo, done);
        skip = 0;
    }
    return rc < 0 ? rc : PP_OK;
}

#endif

#if PP_SKIPS
/* The n-th transfer of action a, in the order pp_mailbox_depth proves: F receives its input
   from a stage of another rank (part 0), then the skips it pops from other ranks (4, route
   order); I / B its output gradient (2), then its stashes' gradients (6); SEND_F sends 1,
   SEND_B 3, SEND_S the skips its stage stashes for other ranks (5), SEND_SB their gradients
   back (7). 1 with *part and *r, 0 past the last. */
static int pp__item(const pp_exec *e, pp_action a, int n, int *part, int *r)
{
    const pp_table *t = e->t;
    int f = a.type == PP_F, ps = a.stage + (f ? -1 : 1);
    *r = 0;
    if (a.type == PP_SEND_F || a.type == PP_SEND_B) {
        *part = a.type == PP_SEND_F ? 1 : 3;
        return !n;
    }
    *part = f ? 0 : 2;
    if ((f || a.type == PP_I || a.type == PP_B) && ps >= 0 && ps < t->nstages && t->stage_rank[ps] != t->rank && !n--)
        return 1;
#if PP_SKIPS
    {
        int into = f || a.type == PP_SEND_SB; /* its routes: those into a.stage, else from it */
        *part = f ? 4 : a.type == PP_SEND_S ? 5 : a.type == PP_SEND_SB ? 7 : 6;
        if (!f && a.type != PP_I && a.type != PP_B && a.type != PP_SEND_S && a.type != PP_SEND_SB) return 0;
        for (; *r < e->cfg->nskips; ++*r) {
            const pp_route *x = &e->cfg->skips[*r];
            if ((into ? x->dst : x->src) == a.stage && t->stage_rank[into ? x->src : x->dst] != t->rank && !n--)
                return 1;
        }
    }
#endif
    return 0;
}
#endif

#if PP_SKIPS
/* Whether slot k already holds received transfer `part` (route r): taken in ahead. */
static uint32_t pp__got(const pp_exec *e, int k, int part, int r)
{
#if PP_NO_TAKEIN
    (void)e, (void)k, (void)part, (void)r;
    return 0;
#else
#if PP_SKIPS
    if (part & 4) return e->skipw[k] & (1u << (r + (part & 2 ? 16 : 0)));
#else
    (void)r;
#endif
    return e->slot[k] & (part ? PP__GOTDY : PP__GOTX);
#endif
}
#endif

#if !PP_NO_TAKEIN
static void pp__set_got(pp_exec *e, int k, int part, int r)
{
#if PP_SKIPS
    if (part & 4) {
        e->skipw[k] |= 1u << (r + (part & 2 ? 16 : 0));
        return;
    }
#else
    (void)r;
#endif
    e->slot[k] |= part ? PP__GOTDY : PP__GOTX;
}

/* A rank that would wait takes in what already arrived for its later F, I and B actions
   (after the current one, e->at): an F's input and skips into a free slot, while the slots in
   use plus one per F up to that one stay within nslots (so no later F runs short), a
   gradient into its microbatch's slot. Then a peer waiting to send to this rank goes on, so
   two ranks that each send more than a mailbox holds before receiving do not wait on each
   other (pp_simulate's buffered sends). 1 if it took any, 0 if not, or an error. */
static int pp__takein(pp_exec *e)
{
    const pp_table *t = e->t;
    int i, k, n, part, r, f, need = 0, got = 0, rc;
    for (k = 0; k < e->nslots; k++) need += e->slot[k] != 0;
    for (i = e->at + 1; i < t->len; i++) {
        pp_action a = t->actions[i];
        f = a.type == PP_F;
        if (!f && a.type != PP_B && a.type != PP_I) continue;
        k = pp__find(e, a.stage, a.mb);
        if (f && k < 0 && need++ >= e->nslots) continue; /* no slot to spare for this F's input */
        if (!f && k < 0) continue;                       /* its gradient needs its F's slot */
#if PP_SKIPS
        for (n = 0; pp__item(e, a, n, &part, &r); n++) {
            uint32_t done = 0;
            if (k >= 0 && pp__got(e, k, part, r)) continue;
#else /* a chain: the input from, or the gradient of, a stage on another rank */
        n = a.stage + (f ? -1 : 1);
        part = 2 - 2 * f;
        r = 0;
        if (n >= 0 && n < t->nstages && t->stage_rank[n] != t->rank) {
            uint32_t done = 0;
            if (f ? k >= 0 : (e->slot[k] & PP__GOTDY) != 0) continue; /* an F's slot: once its input is in */
#endif
            if (pp__xfer(e, -1, a.stage, a.mb, part, r, 0, 0) <= 0) continue; /* probe: its first piece is here */
            if (k < 0) k = pp__alloc(e, a.stage, a.mb);
            if ((rc = pp__xfer(e, k, a.stage, a.mb, part, r, e->g->timeout_ms, &done)) < 0) return rc;
            pp__set_got(e, k, part, r);
            got = 1;
        }
    }
    return got;
}

/* pp__xfer within the group's timeout, waiting in slices (1 ms, doubling up to
   PP_WAIT_SLICE_MAX_MS); between them the rank takes in what arrived ahead (pp__takein).
   A port failure is PP_ERR_COMM (e->err: the pg_err). */
static int pp__move(pp_exec *e, int k, pp_action a, int part, int r)
{
    uint32_t done = 0, tmo = e->g->timeout_ms, waited = 0, slice = 1, w;
    int rc;
    do {
        w = tmo - waited < slice ? tmo - waited : slice;
        rc = pp__xfer(e, k, a.stage, a.mb, part, r, w, &done);
        if (rc != PG_ERR_TIMEOUT || (waited += w) >= tmo) break;
        if ((rc = pp__takein(e)) > 0)
            waited = 0, slice = 1;
        else if (slice < PP_WAIT_SLICE_MAX_MS)
            slice <<= 1;
    } while (rc >= 0);
    return pp__keep(e, rc, PP_ERR_COMM);
}
#else
static int pp__move(pp_exec *e, int k, pp_action a, int part, int r)
{
    uint32_t done = 0;
    int rc = pp__xfer(e, k, a.stage, a.mb, part, r, e->g->timeout_ms, &done);
    return rc == PP_ERR_MAILBOX ? rc : pp__keep(e, rc, PP_ERR_COMM);
}
#endif

#if PP_SKIPS
/* Every transfer action a makes (pp__item) that slot k does not hold yet. */
static int pp__moves(pp_exec *e, int k, pp_action a)
{
    int n, part, r, rc;
    for (n = 0; pp__item(e, a, n, &part, &r); n++)
        if (!pp__got(e, k, part, r) && (rc = pp__move(e, k, a, part, r)) < 0) return rc;
    return PP_OK;
}
#endif

/* Run layers (positions) first[s] .. upto-1 of slot k (again: a checkpointed microbatch's
   recompute, through pp_layer.recompute where set). */
static int pp__fwd(pp_exec *e, int k, int s, int upto, int again)
{
    mb_tensor one[2], *v = PP_SKIPS && e->views ? e->views : one;
    int l, rc;
    for (l = e->first[s]; l < upto; l++) {
        const pp_layer *L = PP__LAYER(e->cfg, l);
        int (*fwd)(void *, const mb_tensor *, mb_tensor *) = L->forward;
#if PP_SKIPS
        int T = PP__NVIEWS(e);
        if (again && L->recompute) fwd = L->recompute;
        if ((rc = pp__args(e, k, l, 0, v, v + T)) < 0) return rc;
        if ((rc = pp__keep(e, fwd(L->self, v, v + T), PP_ERR_LAYER)) < 0) return rc;
#else
        (void)again;
        pp__lt(e, &v[0], k, 0, l);
        pp__lt(e, &v[1], k, 1, l);
        if ((rc = pp__keep(e, fwd(L->self, &v[0], &v[1]), PP_ERR_LAYER)) < 0) return rc;
#endif
    }
    return PP_OK;
}

/* Inference: one use of slot k's activation done; the slot is free after its last
   (PP_SKIPS: pp__uses counted them; a chain's has one). */
static void pp__use(pp_exec *e, int k)
{
#if PP_SKIPS
    if (!PP__TRAIN(e->cfg)) {
        e->slot[k] -= PP__USE;
        if (!(e->slot[k] & PP__USES)) e->slot[k] = 0;
    }
#else
    if (!PP__TRAIN(e->cfg)) e->slot[k] = 0;
#endif
}

#if PP_SKIPS
/* Inference: the uses of stage s's activation on this rank after its F: the next stage (its
   F or SEND_F), the skips it sends (SEND_S), each stage here that pops one of its skips. */
static uint32_t pp__uses(const pp_exec *e, int s)
{
    const pp_table *t = e->t;
    uint32_t n = s + 1 < t->nstages, remote = 0;
    int r;
    for (r = 0; r < e->cfg->nskips; r++) {
        const pp_route *x = &e->cfg->skips[r];
        if (x->src != s || x->dst == s) continue;
        if (t->stage_rank[x->dst] == t->rank)
            n++;
        else
            remote = 1;
    }
    return n + remote;
}

/* F's transfers (its input from another rank, the skips it pops from other ranks) received
   unless taken in ahead; skips stashed by another stage of this rank copied from its slot
   (one use of it). */
static int pp__pops(pp_exec *e, int k, pp_action a)
{
    const pp_exec_cfg *c = e->cfg;
    int r, i, rc, s = a.stage;
    if ((rc = pp__moves(e, k, a)) < 0) return rc;
    if (e->skipw) e->skipw[k] &= ~0xffffu;
    for (r = 0; r < c->nskips; r++) {
        const pp_route *x = &c->skips[r];
        int q = x->stash, at = pp__nvals(c, q, 0) + x->stash_i;
        uint32_t from;
        if (x->dst != s || x->src == s || e->t->stage_rank[x->src] != e->t->rank) continue;
        if ((i = pp__find(e, x->src, a.mb)) < 0) return i;
        from = pp__eoff(e, x->src, q, at, NULL);
        PP_MEMCPY(e->mem + (size_t)k * e->slot_bytes + pp__eoff(e, s, PP__END(e, s), pp__pop_route(e, s, -1, r), NULL),
                  e->mem + (size_t)i * e->slot_bytes + from, pp__eoff(e, x->src, q, at + 1, NULL) - from);
        pp__use(e, i);
    }
    return PP_OK;
}
#endif

#if !PP_NO_TRAINING
static void pp__release(pp_exec *e, int k)
{
    if ((e->slot[k] & PP__WDONE) && !(e->slot[k] & (PP__SENDB | PP__SENDSB))) e->slot[k] = 0;
}
#endif

static int pp__action(pp_exec *e, pp_action a)
{
    const pp_exec_cfg *c = e->cfg;
    const pp_table *t = e->t;
    int s = a.stage, m = a.mb, k, j, rc = 0, last = s == t->nstages - 1, train = PP__TRAIN(c);
    int hi = e->first[s + 1] - 1, T = PP__NVIEWS(e);              /* the stage's last layer (position) */
    mb_tensor one[3], *v = PP_SKIPS && e->views ? e->views : one; /* x, y / dy, dx */
#if !PP_NO_TRAINING
    int l;
#endif
    if ((1u << a.type) & (1u << PP_IDLE | 1u << PP_RECV_F | 1u << PP_RECV_B | 1u << PP_RECV_S | 1u << PP_RECV_SB |
                          1u << PP_UNSHARD | 1u << PP_RESHARD | 1u << PP_REDUCE_GRAD))
        return PP_OK; /* receives are posted; no FSDP here, gradients stay in the layers */
    if (a.type == PP_F) {
#if PP_SKIPS
        if ((k = pp__find(e, s, m)) >= 0) { /* taken in ahead (pp__takein): its input, or a skip */
            if (!PP__GOT(k, PP__GOTX) && !(e->skipw && (e->skipw[k] & 0xffffu))) return PP_ERR_DUPLICATE;
        } else if ((k = pp__alloc(e, s, m)) < 0)
            return k;
        if (PP__GOT(k, PP__GOTX)) {
        } else
#else
        if ((k = pp__find(e, s, m)) >= 0) {
            if (!PP__GOT(k, PP__GOTX)) return PP_ERR_DUPLICATE;
            e->slot[k] &= ~(uint32_t)PP__GOTX; /* its input arrived ahead (pp__takein) */
        } else if ((k = pp__alloc(e, s, m)) < 0) {
            return k;
        } else
#endif
            if (!s) {
#if PP_SKIPS
            pp__args(e, k, 0, 0, v, NULL); /* the model input: the block before position 0 */
#else
            pp__lt(e, &v[0], k, 0, e->first[s]);
#endif
            rc = pp__keep(e, c->input(c->user, m, v), PP_ERR_LAYER);
        } else if (t->stage_rank[s - 1] == t->rank) {
            if ((j = pp__find(e, s - 1, m)) < 0) return j;
#if PP_SKIPS /* the previous stage's last block: its outputs, this stage's first block */
            PP_MEMCPY(e->mem + (size_t)k * e->slot_bytes,
                      e->mem + (size_t)j * e->slot_bytes + pp__eoff(e, s - 1, e->first[s] - 1, 0, NULL),
                      pp__eoff(e, s, e->first[s] - 1, pp__nvals(c, e->first[s] - 1, 0), NULL));
#else
            PP_MEMCPY(pp__at(e, k, 0, 0), pp__at(e, j, 1, e->first[s] - 1), pp__inb(c, e->first, s));
#endif
            pp__use(e, j);
        }
#if PP_SKIPS /* its input from another rank and its skips, unless they arrived ahead */
        if (rc >= 0) rc = pp__pops(e, k, a);
        e->slot[k] &= ~(uint32_t)PP__GOTX;
#else
        else
            rc = pp__move(e, k, a, 0, 0);
#endif
        if (rc < 0 || (rc = pp__fwd(e, k, s, hi + 1, 0)) < 0) return rc;
#if PP_SKIPS
        pp__args(e, k, hi + 1, 0, v, NULL); /* the last position's outputs, then their gradients */
        pp__args(e, k, hi + 1, 1, v + T, NULL);
#else
        pp__lt(e, &v[0], k, 1, hi);
#endif
        if (last && train) {
#if !PP_SKIPS
            pp__lt(e, &v[1], k, 2, hi);
#endif
            e->losses[m].kind = MB_VALUE_SCALAR; /* scalar 0 (zeroed by pp_exec_run) */
            if ((rc = pp__keep(e, c->loss(c->user, m, v, v + T, &e->losses[m].scalar), PP_ERR_LAYER)) < 0) return rc;
        } else if (last) {
            rc = pp__keep(e, c->output(c->user, m, v), PP_ERR_LAYER);
            if (!PP_SKIPS) e->slot[k] = 0; /* the output was its one use */
        }
#if PP_SKIPS
        if (!train) {
            e->slot[k] |= pp__uses(e, s) * PP__USE;
            if (!(e->slot[k] & PP__USES)) e->slot[k] = 0;
        }
#endif
        /* pp_checkpoint_stop: ALWAYS (0) nmb, EXCEPT_LAST (1) nmb - 1, NEVER (2) 0 */
        if (train && m < (c->checkpoint == PP_CKPT_NEVER ? 0 : t->nmb - c->checkpoint))
            e->slot[k] |= PP__CKPT; /* the intermediates are recomputed in I/B */
        return rc < 0 ? rc : PP_OK;
    }
    if ((k = pp__find(e, s, m)) < 0) return k;
    switch (a.type) {
    case PP_SEND_F:
#if PP_SKIPS
    case PP_SEND_S: rc = pp__moves(e, k, a);
#else
        rc = pp__move(e, k, a, 1, 0);
#endif
        pp__use(e, k);
        return rc;
#if !PP_NO_TRAINING
    case PP_SEND_B:
#if PP_SKIPS
    case PP_SEND_SB:
        j = a.type == PP_SEND_B ? PP__SENDB : PP__SENDSB;
        if (!(e->slot[k] & (uint32_t)j)) return PP_ERR_ACTION;
        rc = pp__moves(e, k, a);
        e->slot[k] &= ~(uint32_t)j;
#else
        if (!(e->slot[k] & PP__SENDB)) return PP_ERR_ACTION;
        rc = pp__move(e, k, a, 3, 0);
        e->slot[k] &= ~(uint32_t)PP__SENDB;
#endif
        pp__release(e, k);
        return rc;
    case PP_B:
    case PP_I:
        if (e->slot[k] & PP__IDONE) return PP_ERR_DUPLICATE;
#if PP_SKIPS
        if ((rc = pp__moves(e, k, a)) < 0) return rc;
        e->slot[k] &= ~(uint32_t)PP__GOTDY;
        if (e->skipw) e->skipw[k] &= 0xffffu;
#else
        if (!last && t->stage_rank[s + 1] != t->rank && !PP__GOT(k, PP__GOTDY) && (rc = pp__move(e, k, a, 2, 0)) < 0)
            return rc;
#endif
        if ((e->slot[k] & PP__CKPT) && (rc = pp__fwd(e, k, s, hi, 1)) < 0) return rc;
        for (l = hi; l >= e->first[s]; l--) {
            const pp_layer *L = PP__LAYER(c, l);
#if PP_SKIPS
            if (!l) break; /* no gradient for the model input */
            if ((rc = pp__args(e, k, l, 0, v, NULL)) < 0 || (rc = pp__args(e, k, l, 1, v + 2 * T, v + T)) < 0)
                return rc;
#else
            int jk = k, part = 2; /* dx: the previous layer's output gradient */
            pp__lt(e, &v[0], k, 0, l);
            pp__lt(e, &v[1], k, 2, l);
            if (l == e->first[s]) {
                if (!s) break; /* no gradient for the model input */
                if (t->stage_rank[s - 1] == t->rank) {
                    if ((jk = pp__find(e, s - 1, m)) < 0) return jk; /* stage s - 1's slot */
                } else {
                    part = 3; /* this slot's dx, sent by SEND_B */
                    e->slot[k] |= PP__SENDB;
                }
            }
            pp__lt(e, &v[2], jk, part, l - 1);
#endif
            if ((rc = pp__keep(e, L->backward_input(L->self, v, v + T, v + 2 * T), PP_ERR_LAYER)) < 0) return rc;
        }
#if PP_SKIPS
        if (s && t->stage_rank[s - 1] != t->rank) e->slot[k] |= PP__SENDB; /* SEND_B sends its dx */
        {
            pp_action sb = a;
            int part, r;
            sb.type = PP_SEND_SB;
            if (pp__item(e, sb, 0, &part, &r)) e->slot[k] |= PP__SENDSB; /* and its pops' gradients */
        }
#endif
        e->slot[k] |= PP__IDONE;
        if (a.type == PP_I) return PP_OK;
        /* B = I + W */
        /* fall through */
    case PP_W:
        if (!(e->slot[k] & PP__IDONE) || (e->slot[k] & PP__WDONE)) return PP_ERR_WEIGHT_BEFORE_INPUT;
        for (l = e->first[s]; l <= hi; l++) {
            const pp_layer *L = PP__LAYER(c, l);
            if (!L->backward_weight) continue;
#if PP_SKIPS
            if ((rc = pp__args(e, k, l, 0, v, NULL)) < 0 || (rc = pp__args(e, k, l, 1, NULL, v + T)) < 0) return rc;
#else
            pp__lt(e, &v[0], k, 0, l);
            pp__lt(e, &v[1], k, 2, l);
#endif
            if ((rc = pp__keep(e, L->backward_weight(L->self, v, v + T), PP_ERR_LAYER)) < 0) return rc;
        }
        e->slot[k] |= PP__WDONE;
        pp__release(e, k);
        return PP_OK;
#endif
    default: return PP_ERR_ACTION;
    }
}

#if PP_SKIPS
PP__EXEC_DEF int pp_exec_builds(const pp_exec_cfg *c, const pp_table *t, int layer)
{
    pp_exec x;
    int rc;
    if ((rc = pp__xcheck(c, t, &x)) != PP_OK) return rc;
    if (layer < 0 || layer >= c->nlayers) return PP_ERR_ARG;
    return (t->len || t->slots) && pp__holds(c, t, x.first, layer, t->rank);
}

PP__EXEC_DEF int pp_exec_build(pp_exec *e)
{
    const pp_exec_cfg *c;
    unsigned char *at;
    int p, rc;
    if (!e || !e->t || !e->cfg) return PP_ERR_NULL;
    c = e->cfg;
    at = e->params;
    e->err = 0;
    e->err_rank = -1;
    for (p = 0; e->t->len && p < PP__NPOS(c); p++) { /* each layer once, in the order storage counts them */
        const pp_layer *L = PP__LAYER(c, p);
        if (pp__first_pos(c, p) < p || !L->init ||
            !pp__holds(c, e->t, e->first, c->order ? c->order[p] : p, e->t->rank))
            continue;
        if ((rc = pp__keep(e, L->init(L->self, at), PP_ERR_LAYER)) < 0) {
            e->err_rank = e->t->rank;
            return rc;
        }
        at += PP__R8(L->param_bytes);
    }
    return PP_OK;
}
#endif

/* Every rank sends v (n bytes: code, err, rank; n 0: an empty message) to root, which keeps
   the report of the lowest rank with a code and answers every rank with it. */
#if PP_SKIPS
/* Whether rank r holds a stage: the ranks without one (more ranks than stages) take no part. */
static int pp__member(const pp_table *t, int r)
{
    int s;
    for (s = 0; s < t->nstages && t->stage_rank[s] != r; s++) {}
    return s < t->nstages;
}
#define PP__MEMBER(t, r) pp__member((t), (r))
#else
#define PP__MEMBER(t, r) 1
#endif

/* Every rank sends v (n bytes: code, err, rank; n 0: an empty message) to root, which keeps
   the report of the lowest rank with a code and answers every rank with it; then each
   acknowledges its answer and the root releases them (empty messages). So no rank leaves
   before every rank has its answer: a rank's next step may fail at once and abort the world,
   which would end a peer's wait for its answer. Once a rank is released every rank has its
   answer, so an abort while waiting for (or sending) a release is that next step's. */
static int pp__report(pp_exec *e, int root, int32_t *v, size_t n)
{
    const pp_table *t = e->t;
    int me = t->rank, pass, r, send, x = PP_OK;
    int32_t in[3], *p; /* in: a peer's report (the root), read once a receive of all n bytes succeeded */
    for (pass = 0; pass < 4 && x >= 0; pass++) {
        if (pass == 2) n = 0; /* the acknowledgements and releases are empty */
        for (r = 0; r < t->nranks && x >= 0; r++) {
            if (r == me || (me != root && r != root) || !PP__MEMBER(t, r)) continue;
            send = (pass & 1) == (me == root); /* to the root (report, ack), or from it (answer, release) */
            p = send || me != root ? v : in;
            x = pp__msg(e, send, r, PP_AGREE_TAG, p, n, e->g->timeout_ms);
            if (x >= 0 && p == in && n && in[0] && (!v[0] || r < v[2])) { /* the root: a report */
                v[0] = in[0];
                v[1] = in[1];
                v[2] = r;
            }
        }
    }
    return pass == 4 && x == PG_ERR_ABORTED ? PG_OK : x; /* aborted in the release: the next step's */
}

/* Every rank agrees on the outcome, over point-to-point messages only (no collective: a
   firmware links nothing but send and receive). No abort when the step went well: each rank
   reports to a root (the rank of stage 0 in training, of the last stage when streaming: the
   one that finishes last), which answers once every rank did (a failed rank never reports),
   and releases them once every rank acknowledged its answer (pp__report).
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

#if !PP_NO_EVENTS
static uint32_t pp__now(const pp_exec_cfg *c, uint32_t otherwise)
{
    return c->now_us ? c->now_us(c->user) : otherwise;
}
#endif

PP__EXEC_DEF int pp_exec_run(pp_exec *e)
{
    int i, rc = 0;
#if !PP_NO_EVENTS
    uint32_t t0;
#endif
    if (!e || !e->t) return PP_ERR_NULL;
#if !PP_NO_EVENTS
    e->nevents = 0;
#endif
    e->err = 0;
    e->err_rank = -1;
#if PP_SKIPS
    if (!e->t->len) return PP_OK; /* a rank without stages (fairscale's extra ranks) */
#endif
    PP_MEMSET(e->slot, 0, (size_t)(e->mem - (unsigned char *)e->slot)); /* slot states, losses */
    for (i = 0; i < e->t->len && rc >= 0; i++) {
        pp_action a = e->t->actions[i];
#if !PP_NO_TAKEIN
        e->at = i;
#endif
#if PP_NO_EVENTS
        rc = pp__action(e, a);
#else
        t0 = pp__now(e->cfg, 0);
        rc = pp__action(e, a);
        if (e->events && e->nevents < e->max_events && a.type != PP_IDLE) {
            pp_event *v = &e->events[e->nevents++];
            v->rank = e->t->rank;
            v->action = a;
            v->t_start = t0;
            v->t_end = pp__now(e->cfg, t0);
        }
#endif
    }
    return pp__agree(e, rc);
}

PP__EXEC_DEF int pp_exec_loss(const pp_exec *e, const mb_spec *spec, double *loss)
{
    mb_spec sum = MB_REDUCE(MB_RED_SUM);
    mb_value out;
    int rc;
    if (!e || !loss) return PP_ERR_NULL;
    if (!e->losses) return PP_ERR_ARG;
    PP_MEMSET(&out, 0, sizeof out);
    out.kind = MB_VALUE_SCALAR;
    /* refused too: the losses of a step that failed before all of them (pp_exec_run zeroes
       them: a tensor without data) */
    rc = mb_merge(e->losses, e->t->nmb, 1, spec ? spec : &sum, 0, &out);
    if (rc < 0) return PP_ERR_ARG;
    *loss = out.scalar;
    return PP_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_EXEC_IMPLEMENTATION */
