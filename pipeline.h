/* pipeline.h — pipeline parallelism: partitions, schedules, checks, export (splitcore)

   torch.distributed.pipelining for microcontrollers. A model is a sequential
   list of layers; a balance list cuts it into stages (fairscale's checks, or an exact
   min-max partition by cost or memory); a schedule (GPipe, 1F1B, Interleaved1F1B,
   LoopedBFS, InterleavedZeroBubble/ZB1P, ZBV, forward-only) becomes per-rank action tables
   in exactly PyTorch's order; a lowering pass inserts SEND/RECV like torch's
   _add_send_recv; a validator applies torch's _validate_schedule rules; a simulator finds
   deadlocks and predicts makespan, bubble and peak in-flight activations (= the executor's
   static slot count). Plans read and write torch's action strings and CSV, and are emitted
   as C `const` tables so firmware links only the executor (pipeline_exec.h, included at
   the end of this header unless PP_NO_EXECUTOR), which runs one rank's table over any pg.h
   port with static slots (training with I/W split and checkpointing, or inference
   streaming; an error on one rank aborts every rank). No heap, C99, C++-clean.

   Example:
       #define SPLITCORE_IMPLEMENTATION  // pipeline.h, and microbatch.h and pg.h for its executor
       #include <splitcore/pipeline.h>
       static pp_action st[2][512];  pp_plan sched, plan;  pp_sim sim;  static uint32_t ws[4096];
       int rc = pp_schedule_build(&sched, PP_SCHED_1F1B, 4, 1, 8, st[0], sizeof st[0], NULL);
       rc = pp_validate(&sched, NULL);                        // torch's _validate_schedule rules
       rc = pp_lower(&sched, &plan, st[1], sizeof st[1], NULL); // + SEND_F/RECV_F/SEND_B/RECV_B
       pp_costs c = {0};  c.f = 10; c.b = 20; c.comm = 1;
       rc = pp_simulate(&plan, &c, ws, sizeof ws, &sim, NULL, 0, NULL, NULL); // peak[rank]
       char txt[2048];  rc = pp_timeline(&plan, txt, sizeof txt, NULL); // one line per rank
       rc = pp_emit_c(&plan, "my_plan", big_buf, big_cap, NULL);        // const tables

   Contents:
       1. Configuration macros         5. Lowering (send/recv insertion)
       2. Types, error codes           6. Validation and simulation
       3. Model and partitioning       7. Export / import (strings, CSV, C, timeline, trace)
       4. Stage maps and schedules     8. Implementation (PIPELINE_IMPLEMENTATION)
       The executor: pipeline_exec.h; skip layouts and shared layers: pipeline_model.h (their
       own modules; this header includes them)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE): PIPELINE_IMPLEMENTATION
   (the definitions, in exactly one .c file), PIPELINE_STATIC (every function static), and the
   macros of section 1, each with its default and what it does: capacities (PP_MAX_RANKS,
   PP_MAX_STAGES), what is built (PP_NO_EXECUTOR, PP_NO_PLANNER: flags of value 0 or 1) and
   the overridable PP_ASSERT, PP_MEMCPY, PP_MEMSET, PP_MEMMOVE. The executor's settings
   (PP_NO_TAKEIN, PP_NO_TRAINING, PP_MAILBOX_SLOTS, ...) are pipeline_exec.h's; its
   definitions call pg.h and microbatch.h: implement them in the same file (or
   SPLITCORE_IMPLEMENTATION implements all of them).

   Errors are negative return values (enum pp_err); pp_strerror() names them, pp_diag says
   where (rank, step, action). Bad input never writes to the caller's outputs; the codes
   each function returns for each kind of bad input are in docs/error-contract.md
   (generated from the test that asserts them).

   Threads, interrupts, memory: planning (sections 3-7) works only on its arguments (no
   static or global state, no locks, no heap), so calls on distinct plans are safe from
   any thread; a plan being written (build, lower, csv_read) must not be read meanwhile.
   Every buffer is the caller's, sized by a query: pp_plan_bytes, pp_sim_bytes,
   and (buf, cap, needed) for text (the executor's: pipeline_exec.h). Stack use is bounded
   (no recursion; `scons size` lists the worst frame of every function on Cortex-M4). */
#ifndef PIPELINE_H
#define PIPELINE_H

/* ---- 1. Configuration ------------------------------------------------------------ */
#include "splitcore_base.h"
#if SPLITCORE_VERSION != 200
#error "pipeline.h: splitcore headers of different releases are included together"
#endif
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(PIPELINE_IMPLEMENTATION)
#define PIPELINE_IMPLEMENTATION
#endif
#if defined(SPLITCORE_STATIC) && !defined(PIPELINE_STATIC)
#define PIPELINE_STATIC
#endif

/* Ranks per plan (pp_plan.len[] and the simulator's per-rank state are this long). */
#ifndef PP_MAX_RANKS
#define PP_MAX_RANKS 16
#endif
/* Stages per plan: pp_plan.stage_rank[] is this long; actions store the stage in 8 bits. */
#ifndef PP_MAX_STAGES
#define PP_MAX_STAGES 64
#endif
/* Microbatches per plan: actions store the microbatch in 16 bits (not configurable). */
#define PP_MAX_MICROBATCHES 65535
/* Skip connections per plan (pp_plan.nskips at most). */
#ifndef PP_MAX_SKIPS
#define PP_MAX_SKIPS 16
#endif
/* 1: leave the executor (pipeline_exec.h) out: planning only, and no pg.h needed. */
#ifndef PP_NO_EXECUTOR
#define PP_NO_EXECUTOR 0
#endif
/* 1: the executor alone (firmware with an emitted plan): no schedules, validator, simulator,
   exporters or pp_strerror. */
#ifndef PP_NO_PLANNER
#define PP_NO_PLANNER 0
#endif
/* Internal invariant check (none by default) and the memory calls (string.h by default). */
#ifndef PP_ASSERT
#define PP_ASSERT(x) ((void)0)
#endif
#ifndef PP_MEMCPY
#define PP_MEMCPY(d, s, n) memcpy((d), (s), (n))
#endif
#ifndef PP_MEMSET
#define PP_MEMSET(d, v, n) memset((d), (v), (n))
#endif
#ifndef PP_MEMMOVE
#define PP_MEMMOVE(d, s, n) memmove((d), (s), (n))
#endif

#if PP_MAX_RANKS < 1 || PP_MAX_RANKS > 255
#error "pipeline.h: PP_MAX_RANKS must be 1..255 (pp_table.nranks is 8 bits)"
#endif
#if PP_MAX_STAGES < 1 || PP_MAX_STAGES > 255
#error "pipeline.h: PP_MAX_STAGES must be 1..255 (an action's stage is 8 bits)"
#endif
#if PP_MAX_SKIPS < 1 || PP_MAX_SKIPS > 255
#error "pipeline.h: PP_MAX_SKIPS must be 1..255"
#endif
#if SPLITCORE__EMPTY(PP_NO_EXECUTOR)
#error "pipeline.h: PP_NO_EXECUTOR is defined without a value: define it to 1 (or 0)"
#elif PP_NO_EXECUTOR != 0 && PP_NO_EXECUTOR != 1
#error "pipeline.h: PP_NO_EXECUTOR must be 0 or 1"
#endif
#if SPLITCORE__EMPTY(PP_NO_PLANNER)
#error "pipeline.h: PP_NO_PLANNER is defined without a value: define it to 1 (or 0)"
#elif PP_NO_PLANNER != 0 && PP_NO_PLANNER != 1
#error "pipeline.h: PP_NO_PLANNER must be 0 or 1"
#endif
#include <stddef.h>
#include <stdint.h>
#include "microbatch.h"
#ifdef PIPELINE_STATIC
#define PP_API static
#else
#define PP_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2. Types and error codes ---------------------------------------------------- */
/* Error codes -61..-119: PP_ERRORS in splitcore_base.h lists them (name, value, message). */
enum pp_err { PP_ERRORS(SPLITCORE__ENUM) PP_OK = 0 };

/* Action types; the letters are PyTorch's _ComputationType values. Skip transfers are
   ours (torch's pipelining has no skips): SEND_S sends every skip tensor a stage stashed for
   the microbatch straight to the stages on other ranks that pop it, RECV_S posts the
   receives of a popping stage, SEND_SB / RECV_SB carry their gradients back (pp_plan_skips). */
enum pp_type {
    PP_IDLE = 0, /* None in a torch schedule: a deliberate bubble slot */
    PP_F = 1,    /* FORWARD */
    PP_B = 2,    /* FULL_BACKWARD */
    PP_I = 3,    /* BACKWARD_INPUT */
    PP_W = 4,    /* BACKWARD_WEIGHT */
    PP_SEND_F = 5,
    PP_RECV_F = 6,
    PP_SEND_B = 7,
    PP_RECV_B = 8,
    PP_UNSHARD = 9,      /* FSDP's actions and the gradient reduction, as PP_LOWER_TORCH inserts */
    PP_RESHARD = 10,     /* them: the executor skips them (no FSDP; weight gradients stay in the */
    PP_REDUCE_GRAD = 11, /* layers for the caller) */
    PP_SEND_S = 12,      /* "SEND_S": skip tensors to their popping stages */
    PP_RECV_S = 13,      /* "RECV_S" */
    PP_SEND_SB = 14,     /* "SEND_SB": their gradients back to the stashing stages */
    PP_RECV_SB = 15,     /* "RECV_SB" */
    PP_TYPE_COUNT = 16
};

/* One action: 4 bytes, so a rank's table is 4 bytes per step. */
typedef struct pp_action {
    uint8_t type;  /* enum pp_type */
    uint8_t stage; /* global stage index */
    uint16_t mb;   /* microbatch index */
} pp_action;
/* clang-format off */
#define PP_ACTION(t, s, m) { (uint8_t)(t), (uint8_t)(s), (uint16_t)(m) }
/* clang-format on */

enum pp_schedule {
    PP_SCHED_CUSTOM = 0,           /* imported (CSV) or hand-written */
    PP_SCHED_GPIPE = 1,            /* ScheduleGPipe */
    PP_SCHED_1F1B = 2,             /* Schedule1F1B */
    PP_SCHED_INTERLEAVED_1F1B = 3, /* ScheduleInterleaved1F1B */
    PP_SCHED_LOOPED_BFS = 4,       /* ScheduleLoopedBFS */
    PP_SCHED_INTERLEAVED_ZB = 5,   /* ScheduleInterleavedZeroBubble (ZB1P) */
    PP_SCHED_ZBV = 6,              /* ScheduleZBVZeroBubble ("v" layout, 2 stages per rank) */
    PP_SCHED_FORWARD_ONLY = 7,     /* _ScheduleForwardOnly: inference */
    PP_SCHED_COUNT = 8
};

enum pp_map_style { PP_MAP_LOOP = 0, PP_MAP_V = 1 };

/* One skip connection (fairscale's SkipLayout route), from pp_skip_layout: the positions of
   the layer that stashes it and of the one that pops it, which of their declared stashes and
   pops it is, and their stages (src <= dst). Routes between stages of two ranks travel
   directly from src's rank to dst's, never through the stages between. */
typedef struct pp_route {
    uint16_t stash, pop;
    uint8_t stash_i, pop_i;
    uint8_t src, dst;
} pp_route;

/* A plan: per-rank action tables in caller storage (rank r's row at actions + r * cap).
   Every function taking a plan checks it before it uses a field as an index or a count:
   PP_ERR_NULL (actions NULL), PP_ERR_ARG (nranks, nstages or nmb out of range, cap < 0,
   len[r] outside 0..cap), PP_ERR_STAGE_RANK (stage_rank[s] >= nranks), PP_ERR_ACTION (an
   action's type, stage or microbatch out of range; not for pp_csv_read, which replaces the
   rows). docs/error-contract.md lists the code per function and field. */
typedef struct pp_plan {
    pp_action *actions;
    int32_t cap; /* actions per rank row */
    int32_t nranks, nstages, nmb;
    int32_t schedule; /* enum pp_schedule */
    int32_t lowered;  /* 1: has send/recv, no idle slots */
    int32_t len[PP_MAX_RANKS];
    uint8_t stage_rank[PP_MAX_STAGES];
    int32_t mailbox;      /* 1 + the depth pp_mailbox_depth proved; 0: not proven
                                        (every writer of the plan resets it) */
    int32_t nskips;       /* skip routes (pp_plan_skips; 0: none) */
    const pp_route *skip; /* the caller's routes: what lowering, validation, simulation and
                             emission follow (kept while the plan is used) */
} pp_plan;

/* One rank's table as the executor walks it (emitted by pp_emit_c, or from pp_plan_table).
   pp_exec_query and pp_exec_init check it before any field is used: PP_ERR_NULL (actions or
   stage_rank NULL), PP_ERR_ARG (nranks, rank, nstages, nmb or slots out of range),
   PP_ERR_STAGE_RANK (stage_rank[s] >= nranks, or an action of a stage on another rank),
   PP_ERR_ACTION (an action's type, stage or microbatch out of range). */
typedef struct pp_table {
    const pp_action *actions;
    uint16_t len;
    uint8_t rank, nranks, nstages;
    uint16_t nmb;
    uint16_t slots; /* peak in-flight activations on this rank */
    const uint8_t *stage_rank;
    uint8_t mailbox; /* 1 + the mailbox depth (transfers) the plan was proven
                                        to run with without take-in; 0: not proven */
} pp_table;

/* Where a call failed. Fields that do not apply are -1. */
typedef struct pp_diag {
    int32_t rank, step;    /* rank and index into its row */
    pp_action action;      /* the offending action */
    int32_t stage;         /* count errors: the stage */
    int32_t expected, got; /* counts / sums */
} pp_diag;

/* The message of a pp_err code; "unknown error" for any other value (never NULL). Left
   out under PP_NO_PLANNER. */
PP_API const char *pp_strerror(int err);

/* ---- 3. Model and partitioning ----------------------------------------------------- */
/* One tensor of a layer's outputs or of the model input (the executor's tuples, PP_SKIPS): its
   dtype and the shape of one sample. A batched tensor is [rows, shape...] per microbatch, the
   mini-batch split along dim 0 as torch.chunk splits it (fairscale's microbatch.scatter); a
   whole one (whole = 1) is the tensor `shape` itself, the same in every microbatch (torch's
   Pipe replicates what it does not chunk). */
typedef struct pp_tspec {
    int32_t dtype; /* mb_dtype */
    int32_t ndim;  /* dims in shape[] (a batched tensor's sample: 0 is one value per row) */
    int32_t shape[MB_MAX_DIMS - 1];
    int32_t whole;
} pp_tspec;

/* A skip tensor a layer stashes or pops (fairscale's @skippable(stash=[...], pop=[...]) with
   `yield stash(name, x)` / `x = yield pop(name)`): named, in namespace ns (Skippable.isolate;
   0 is the default one). A stash gives its tensor's spec, a pop takes its stash's. */
typedef struct pp_skip {
    const char *name;
    uint32_t ns;
    pp_tspec spec;
} pp_skip;

/* A layer. Stages are contiguous runs of layer positions (a layer may stand at several, as
   with tied embeddings: pp_invocations). The executor (pipeline_exec.h) calls the functions
   (forward always; backward_input for every position but the model's first, and
   backward_weight where set, in training); planning uses the sizes and cost. x, y, dy and
   dx are arrays: one tensor each for a layer of a chain; with the fields after `cost`
   (pipeline_exec.h's PP_SKIPS) x holds its inputs (the previous position's outputs) and then
   its pops, y its outputs and then its stashes, dx and dy their gradients in the same order. */
typedef struct pp_layer {
    int (*forward)(void *self, const mb_tensor *x, mb_tensor *y);
    int (*backward_input)(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx);
    int (*backward_weight)(void *self, const mb_tensor *x, const mb_tensor *dy);
    void *self;
    uint32_t param_bytes; /* parameters */
    uint32_t act_bytes;   /* output activation per microbatch */
    uint32_t cost;        /* relative time (given or profiled) */
    /* NULL / 0 below: one output of act_bytes (a [rows, act_bytes / rows / size] tensor of the
       executor's dtype), no skips, built by the caller, recomputed by forward. */
    const pp_tspec *out; /* its outputs: a tuple of nout tensors */
    int32_t nout;
    const pp_skip *stash, *pop; /* what it stashes and pops, in this order */
    int32_t nstash, npop;
    /* Per-rank construction (fairscale's LazyModule): pp_exec_build calls it on the one rank
       that holds the layer, params = its param_bytes of that executor's storage. */
    int (*init)(void *self, void *params);
    /* The forward of a checkpointed microbatch again, in its I or B (NULL: forward); a
       DeferredBatchNorm does not count that microbatch's statistics twice. */
    int (*recompute)(void *self, const mb_tensor *x, mb_tensor *y);
} pp_layer;

enum pp_checkpoint { PP_CKPT_ALWAYS = 0, PP_CKPT_EXCEPT_LAST = 1, PP_CKPT_NEVER = 2 };
enum pp_balance_by { PP_BY_COST = 0, PP_BY_MEMORY = 1 };

/* fairscale Pipe's checks: sum(balance) == nlayers, all > 0, nparts <= nranks, chunks > 0,
   checkpoint valid. diag->got/expected carry the sums or counts. */
PP_API int pp_balance_check(const int32_t *balance, int nparts, int nlayers, int nranks, int chunks, int checkpoint,
                            pp_diag *diag);
/* Exact contiguous min-max partition of cost[0..nlayers) into nparts non-empty parts.
   Deterministic: among optimal partitions, earlier parts take as many layers as they can.
   Writes balance[nparts] and *max_part (the optimal max part cost, may be NULL). */
PP_API int pp_balance_by_cost(const uint32_t *cost, int nlayers, int nparts, int32_t *balance, uint64_t *max_part);
/* Same over layers: PP_BY_COST uses layer.cost, PP_BY_MEMORY uses
   param_bytes * param_scale + act_bytes (fairscale's balance_by_size idea). */
PP_API int pp_balance_layers(const pp_layer *layers, int nlayers, int nparts, int by, uint32_t param_scale,
                             int32_t *balance, uint64_t *max_part);
/* fairscale: microbatch i is checkpointed iff i < pp_checkpoint_stop(mode, chunks). */
PP_API int pp_checkpoint_stop(int mode, int chunks);

/* ---- 4. Stage maps and schedules --------------------------------------------------- */
/* torch's generate_stage_to_rank_mapping: loop s -> s % P; "v": 4 stages on 2 ranks -> 0,1,1,0. */
PP_API int pp_stage_map(int style, int nranks, int nstages, uint8_t *stage_rank);
PP_API const char *pp_schedule_name(int schedule);  /* torch's names */
PP_API int pp_schedule_from_name(const char *name); /* case-insensitive; < 0 unknown */
/* torch's constructor checks for (schedule, P, stages per rank, M). */
PP_API int pp_schedule_check(int schedule, int nranks, int stages_per_rank, int nmb);
/* Bytes of action storage one plan (compute table or its lowering) needs. 0 on bad args. */
PP_API size_t pp_plan_bytes(int nranks, int stages_per_rank, int nmb);
/* Empty custom plan over storage (2-byte aligned), loop stage map. */
PP_API int pp_plan_init(pp_plan *plan, void *storage, size_t bytes, int nranks, int nstages, int nmb);
/* Build a schedule's compute-only tables (with idle slots) in PyTorch's order. */
PP_API int pp_schedule_build(pp_plan *plan, int schedule, int nranks, int stages_per_rank, int nmb, void *storage,
                             size_t bytes, pp_diag *diag);
/* GPipe or forward-only over any stage map (stages revisiting a rank, as pp_invocations
   makes them; ranks without a stage get empty rows), as fairscale's AsyncPipe runs them:
   every rank forwards what has arrived, the lowest (microbatch, stage) first, one action per
   time step, and in training (GPipe) starts its backwards, the lowest microbatch and then
   the highest stage first, once its forwards are done. Storage: pp_plan_bytes(nranks, the
   most stages on one rank, nmb). Marked PP_SCHED_CUSTOM (training) or FORWARD_ONLY. */
PP_API int pp_schedule_build_map(pp_plan *plan, int schedule, int nranks, const uint8_t *stage_rank, int nstages,
                                 int nmb, void *storage, size_t bytes, pp_diag *diag);
/* The plan's skip routes (from pp_skip_layout), kept by the plan (plan->skip points at
   them: they must live as long as the plan and its lowerings): lowering adds their
   direct transfers, and validation, simulation, pp_mailbox_depth, pp_peak_inflight and
   pp_emit_c count them. Resets plan->mailbox. PP_ERR_ARG (n outside 0..PP_MAX_SKIPS, a stage
   out of range), PP_ERR_SKIP_BACKWARDS (src > dst). */
PP_API int pp_plan_skips(pp_plan *plan, const pp_route *routes, int n);
/* rank's row of the plan as the executor walks it (a view into the plan's storage, no copy).
   A rank at or past nranks (a world with more ranks than the plan) gets an empty table
   (len 0, slots 0): its executor returns at once. PP_ERR_NULL, PP_ERR_ARG (rank out of
   range: negative or >= PP_MAX_RANKS). */
PP_API int pp_plan_table(const pp_plan *plan, int rank, pp_table *out);
/* Peak number of activations held at once on `rank`, in table order: each from its F until
   the action after which the executor frees its slot. Training: its B or W, or its SEND_B
   when that comes later. Without any backward action in the plan: the next stage's F when
   that stage is on the rank (its copy in; the executor adds the one slot this takes), else
   its SEND_F (at once on the last stage, or when the row has no SEND_F); with skip routes, a
   stage's activation until its last use on the rank (its sends, the next stage's F, the F
   of a stage on the rank that pops one of its skips), counted as the executor holds them. */
PP_API int pp_peak_inflight(const pp_plan *plan, int rank);

/* ---- 5. Lowering --------------------------------------------------------------------- */
/* torch's _add_send_recv applied to the table as it is: insert SEND_F/RECV_F/SEND_B/RECV_B
   between ranks; an idle slot takes a round of the insertion, then is dropped
   (pp_lower_mode(..., PP_LOWER_ROUNDS, ...)).. With skip routes (pp_plan_skips): SEND_S after a
   stashing stage's F (and its SEND_F), a RECV_S on each popping stage's rank once every stage
   on other ranks that it pops from sent, before its F; SEND_SB after a popping stage's I or B
   (and its SEND_B), RECV_SB before the stashing stage's I or B. */
PP_API int pp_lower(const pp_plan *in, pp_plan *out, void *storage, size_t bytes, pp_diag *diag);
#define PP_LOWER_ROUNDS 0 /* pp_lower's */
#define PP_LOWER_TORCH  1 /* PyTorch's runtime's (below) */
/* pp_lower with a mode. PP_LOWER_TORCH: _PipelineScheduleRuntime._prepare_schedule_with_comms,
   PyTorch's exact lowered order: idle slots dropped, then per rank _add_unshard_reshard (a stage
   is UNSHARDed when it becomes one of the next 3 distinct stages to run, RESHARDed when it stops
   being one) and _add_reduce_grad (REDUCE_GRAD after a stage's M-th B or W), then
   _add_send_recv. The executor skips UNSHARD, RESHARD and REDUCE_GRAD. Errors as pp_lower's,
   and PP_ERR_ARG for an unknown mode. */
PP_API int pp_lower_mode(const pp_plan *in, pp_plan *out, void *storage, size_t bytes, int mode, pp_diag *diag);

/* ---- 6. Validation and simulation ------------------------------------------------------ */
/* torch's _validate_schedule + pp_schedule_check: stage/microbatch ranges, stage on its
   mapped rank, no duplicates, B/I after F, W after I, F == M per stage. A plan with any
   backward action trains: B + I == M and I == W per stage; one without is an inference plan
   (no backward at all), as is any plan marked PP_SCHED_FORWARD_ONLY. Plans marked with
   another built-in schedule also get its constructor checks (pp_schedule_check); inference
   plans run with any stage map (several stages per rank, uneven ones included), as the
   executor runs them. Sends and receives (torch's rules ignore them) must be ones the
   executor runs: with the neighbouring stage they name on another rank, once each, a send
   after the F (SEND_F) or I / B (SEND_B) it sends the result of; a skip's (SEND_S ..
   RECV_SB) only at a stage with a skip route to or from another rank (pp_plan_skips), a
   SEND_S after its F, a SEND_SB after its I / B. */
PP_API int pp_validate(const pp_plan *plan, pp_diag *diag);

typedef struct pp_costs {
    uint32_t f, b, i, w;                                   /* per action, any time unit */
    uint32_t send, recv;                                   /* time a SEND/RECV occupies its rank */
    uint32_t comm;                                         /* latency from a send (or a cross-rank F/B in an
                                        unlowered plan) to the data being usable */
    const uint32_t *stage_f, *stage_b, *stage_i, *stage_w; /* per-stage overrides or NULL */
    uint32_t cores;                                        /* processing units the ranks share: rank r runs on
                                        unit r % cores, one action at a time per unit
                                        (several stages per core, as in firmware);
                                        0 = one unit per rank */
} pp_costs;

typedef struct pp_sim {
    uint32_t makespan;
    uint32_t bubble_ppm;         /* 1e6 * (1 - sum(busy) / (ranks * makespan)) */
    uint32_t busy[PP_MAX_RANKS]; /* F/B/I/W time per rank */
    uint32_t end[PP_MAX_RANKS];  /* when each rank finishes */
    uint16_t peak[PP_MAX_RANKS]; /* peak in-flight activations (pp_peak_inflight) */
} pp_sim;

typedef struct pp_event { /* one executed (or simulated) action */
    uint16_t rank;
    pp_action action;
    uint32_t t_start, t_end; /* microseconds for traces */
} pp_event;

/* Work bytes for pp_simulate (and pp_mailbox_depth): 6 * stages * microbatches * 4; 0 for
   a NULL or invalid plan (its checks, above pp_plan). */
PP_API size_t pp_sim_bytes(const pp_plan *plan);
/* Dry-run every rank's table (torch's _simulate_comms_compute readiness rules on lowered
   plans; direct cross-rank dependencies on compute-only ones) with costs. Each rank runs its
   row in order; an action starts when the rank (and with costs.cores, its unit) is free and
   its inputs are there; a free unit takes the ready action that can start first (ties: the
   lower rank), so actions start in time order. SEND is
   non-blocking (occupies `send`); RECV is posted like torch's irecv (occupies `recv`, does
   not wait) and the F/B that consumes it waits for send end + comm. Deadlock ->
   PP_ERR_DEADLOCK and diag names a blocked rank and action. events (may be NULL) receives
   every action with simulated times, *nevents the count. */
PP_API int pp_simulate(const pp_plan *plan, const pp_costs *costs, void *work, size_t work_bytes, pp_sim *out,
                       pp_event *events, int max_events, int *nevents, pp_diag *diag);
/* Proves that the executor without take-in (PP_NO_TAKEIN) runs the lowered plan to the end
   over mailboxes that hold `depth` transfers (activations or gradients) per ordered pair of
   ranks, and returns the smallest such depth in 0..max_depth (<= 254). It runs every rank's
   row as that executor does: a SEND waits while the mailbox to its peer holds `depth`
   transfers from the oldest one the peer has not taken (slots free in order, as pg_shm's
   ring; depth 0: until the peer waits for it), an F / I / B waits for its activation or
   gradient from another rank and takes it; RECVs are no-ops. The ranks only wait on each
   other, so one run decides it, and a deeper mailbox never hurts. With depth d the table
   then runs on a port whose mailboxes hold d x pieces messages per pair (pieces = messages
   per transfer, bytes / pg_max_msg rounded up; depth 0: any port). Sets plan->mailbox =
   depth + 1 (pp_plan_table and pp_emit_c pass it on). PP_ERR_MAILBOX: it needs a depth above
   max_depth (diag: a rank waiting at max_depth); PP_ERR_DEADLOCK: it cannot finish with any
   depth. work: pp_sim_bytes(plan) bytes, 4-byte aligned. */
PP_API int pp_mailbox_depth(pp_plan *plan, int max_depth, void *work, size_t work_bytes, pp_diag *diag);

/* ---- 7. Export / import ------------------------------------------------------------------ */
/* Text writers take (buf, cap, needed): *needed (if not NULL) gets the bytes required
   including the NUL; buf == NULL with cap == 0 is a size query (returns PP_OK); a too-small
   buffer gives PP_ERR_TOO_SMALL and is not touched. Success returns the length. */
PP_API int pp_action_format(pp_action a, char *buf, size_t cap); /* "0F0", "1SEND_F1", "" */
/* torch's _Action.from_str: [stage][type][microbatch], whitespace stripped, "" -> PP_IDLE. */
PP_API int pp_action_parse(const char *s, size_t n, pp_action *out);
/* torch's _dump_csv layout: one row per rank, cells = action strings, idle = "", "\r\n";
   a row of one idle cell is written `""` (as Python's csv writer does). */
PP_API int pp_csv_write(const pp_plan *plan, char *buf, size_t cap, size_t *needed);
/* torch's _load_csv: rows = ranks of an initialized plan (pp_plan_init), cells may be
   double-quoted, a blank line is an empty row; infers the stage
   map from the actions and sets `lowered` if comm actions appear. Validate afterwards. */
PP_API int pp_csv_read(pp_plan *plan, const char *text, size_t n, pp_diag *diag);
/* The plan as C source: const pp_action rows, a stage map and `const pp_table name[P]`,
   with the mailbox depth pp_mailbox_depth proved (name_MAILBOX_DEPTH) and a check that
   stops a PP_NO_TAKEIN build when PP_MAILBOX_SLOTS is below it or the plan is not proven. */
PP_API int pp_emit_c(const pp_plan *plan, const char *name, char *buf, size_t cap, size_t *needed);
/* One line per rank, fixed-width cells, '.' for idle: "r0 | 0F0 0F1 ... ". */
PP_API int pp_timeline(const pp_plan *plan, char *buf, size_t cap, size_t *needed);
/* Chrome trace JSON (Perfetto) of executed actions. */
PP_API int pp_trace_json(const pp_event *ev, int n, char *buf, size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_H */

/* ---- 8. Implementation ----------------------------------------------------------------- */
#if defined(PIPELINE_IMPLEMENTATION) && !defined(PIPELINE_IMPLEMENTED)
#define PIPELINE_IMPLEMENTED

#include <string.h> /* the default PP_MEMCPY, PP_MEMSET, PP_MEMMOVE */

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PIPELINE_STATIC
#define PP__DEF static
#else
#define PP__DEF
#endif
#if defined(__GNUC__) || defined(__clang__)
#define PP__NOINLINE __attribute__((noinline)) /* a frame of its own (scons size: <= 512 B each) */
#else
#define PP__NOINLINE
#endif
/* UNSHARD, RESHARD and REDUCE_GRAD name a stage, no microbatch */
#define PP__NO_MB(type) ((type) >= PP_UNSHARD && (type) <= PP_REDUCE_GRAD)

#if !PP_NO_PLANNER /* planning half: firmware may link only the executor below */
PP__DEF const char *pp_strerror(int err)
{
    static const char msg[] = "ok\0" PP_ERRORS(SPLITCORE__MSG) "unknown error";
    return splitcore__message(msg, err, PP_ERR_BASE, PP__ERR_COUNT);
}

static void pp__diag(pp_diag *d, int rank, int step, pp_action a)
{
    if (!d) return;
    d->rank = rank;
    d->step = step;
    d->action = a;
    d->stage = -1;
    d->expected = -1;
    d->got = -1;
}
static pp_action pp__act(int type, int stage, int mb)
{
    pp_action a;
    a.type = (uint8_t)type;
    a.stage = (uint8_t)stage;
    a.mb = (uint16_t)mb;
    return a;
}
static const pp_action pp__none = PP_ACTION(0, 0, 0);
static int pp__eq(pp_action a, pp_action b)
{
    return a.type == b.type && a.stage == b.stage && a.mb == b.mb;
}
static pp_action *pp__row(const pp_plan *p, int r)
{
    return p->actions + (size_t)r * (size_t)p->cap;
}
static int pp__check_action(const pp_plan *p, pp_action a)
{
    if (a.type >= PP_TYPE_COUNT) return 0;
    if (a.type == PP_IDLE) return 1;
    return a.stage < p->nstages && (PP__NO_MB(a.type) || a.mb < p->nmb);
}
/* A caller-filled plan, checked before any of its fields is used as an index or a count:
   PP_ERR_NULL (no action storage), PP_ERR_ARG (ranks, stages or microbatches out of range,
   a negative capacity, a row longer than it), PP_ERR_STAGE_RANK (a stage mapped to no rank
   of the plan; diag: that rank, diag->stage the stage). */
static int pp__plan_check(const pp_plan *p, pp_diag *diag)
{
    int r, i;
    if (!p->actions) return PP_ERR_NULL;
    if (p->nranks <= 0 || p->nranks > PP_MAX_RANKS || p->nstages <= 0 || p->nstages > PP_MAX_STAGES || p->nmb <= 0 ||
        p->nmb > PP_MAX_MICROBATCHES || p->cap < 0)
        return PP_ERR_ARG;
    for (r = 0; r < p->nranks; r++)
        if (p->len[r] < 0 || p->len[r] > p->cap) return PP_ERR_ARG;
    if (p->nskips && !p->skip) return PP_ERR_NULL;
    if (p->nskips < 0 || p->nskips > PP_MAX_SKIPS) return PP_ERR_ARG;
    for (i = 0; i < p->nskips; i++)
        if (p->skip[i].dst >= p->nstages || p->skip[i].src > p->skip[i].dst) return PP_ERR_ARG;
    for (i = 0; i < p->nstages; i++)
        if (p->stage_rank[i] >= p->nranks) {
            pp__diag(diag, p->stage_rank[i], -1, pp__none);
            if (diag) diag->stage = i;
            return PP_ERR_STAGE_RANK;
        }
    return PP_OK;
}
/* Then its rows: PP_ERR_ACTION for an action whose type, stage or microbatch is out of range
   (diag names it). */
static int pp__rows_check(const pp_plan *p, pp_diag *diag)
{
    int r, i;
    for (r = 0; r < p->nranks; r++)
        for (i = 0; i < p->len[r]; i++)
            if (!pp__check_action(p, pp__row(p, r)[i])) {
                pp__diag(diag, r, i, pp__row(p, r)[i]);
                return PP_ERR_ACTION;
            }
    return PP_OK;
}
/* Both. */
static int pp__plan_rows_check(const pp_plan *p, pp_diag *diag)
{
    int rc = pp__plan_check(p, diag);
    return rc ? rc : pp__rows_check(p, diag);
}

/* ---- partitioning ---- */
PP__DEF int pp_balance_check(const int32_t *balance, int nparts, int nlayers, int nranks, int chunks, int checkpoint,
                             pp_diag *diag)
{
    int64_t sum = 0;
    int i;
    if (!balance) return PP_ERR_NULL;
    if (nparts <= 0 || nlayers < 0) return PP_ERR_ARG;
    for (i = 0; i < nparts; i++) sum += balance[i];
    if (sum != nlayers) {
        if (diag) {
            pp__diag(diag, -1, -1, pp__none);
            diag->expected = nlayers;
            diag->got = (int32_t)sum;
        }
        return PP_ERR_BALANCE_SUM;
    }
    for (i = 0; i < nparts; i++)
        if (balance[i] <= 0) {
            if (diag) {
                pp__diag(diag, -1, i, pp__none);
                diag->got = balance[i];
            }
            return PP_ERR_BALANCE_NONPOSITIVE;
        }
    if (nparts > nranks) {
        if (diag) {
            pp__diag(diag, -1, -1, pp__none);
            diag->expected = nranks;
            diag->got = nparts;
        }
        return PP_ERR_PARTITIONS;
    }
    if (chunks <= 0) return PP_ERR_CHUNKS;
    if (checkpoint < PP_CKPT_ALWAYS || checkpoint > PP_CKPT_NEVER) return PP_ERR_CHECKPOINT;
    return PP_OK;
}

PP__DEF int pp_checkpoint_stop(int mode, int chunks)
{
    if (chunks <= 0) return PP_ERR_CHUNKS;
    switch (mode) {
    case PP_CKPT_ALWAYS: return chunks;
    case PP_CKPT_EXCEPT_LAST: return chunks - 1;
    case PP_CKPT_NEVER: return 0;
    default: return PP_ERR_CHECKPOINT;
    }
}

/* Layer weights without copying them: costs, or layers by cost / memory. */
typedef struct pp__wsrc {
    const uint32_t *cost;
    const pp_layer *layers;
    int by;
    uint32_t scale;
} pp__wsrc;
static uint64_t pp__wt(const pp__wsrc *w, int i)
{
    if (w->cost) return w->cost[i];
    if (w->by == PP_BY_COST) return w->layers[i].cost;
    return (uint64_t)w->layers[i].param_bytes * w->scale + w->layers[i].act_bytes;
}

/* Parts needed when no part may exceed `bound` (every weight <= bound). */
static int pp__parts(const pp__wsrc *w, int n, uint64_t bound)
{
    int parts = 1, i;
    uint64_t s = 0;
    for (i = 0; i < n; i++) {
        uint64_t x = pp__wt(w, i);
        if (s + x > bound) {
            parts++;
            s = 0;
        }
        s += x;
    }
    return parts;
}

/* Exact min-max: binary search on the bound (greedy feasibility is exact for contiguous
   parts), then the greedy-left partition at that bound. */
static int pp__balance(const pp__wsrc *w, int n, int nparts, int32_t *balance, uint64_t *max_part)
{
    uint64_t lo = 0, hi = 0, s;
    int i, p, start;
    for (i = 0; i < n; i++) {
        uint64_t x = pp__wt(w, i);
        if (x > lo) lo = x;
        hi += x;
    }
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (pp__parts(w, n, mid) <= nparts)
            hi = mid;
        else
            lo = mid + 1;
    }
    start = 0;
    for (p = 0; p < nparts; p++) { /* greedy left, leaving a layer per later part */
        int end = start + 1;
        s = pp__wt(w, start);
        if (p == nparts - 1)
            end = n;
        else
            while (end < n - (nparts - 1 - p) && s + pp__wt(w, end) <= lo) s += pp__wt(w, end++);
        balance[p] = end - start;
        start = end;
    }
    if (max_part) *max_part = lo;
    return PP_OK;
}

PP__DEF int pp_balance_by_cost(const uint32_t *cost, int nlayers, int nparts, int32_t *balance, uint64_t *max_part)
{
    pp__wsrc w;
    if (!cost || !balance) return PP_ERR_NULL;
    if (nparts <= 0 || nlayers <= 0) return PP_ERR_ARG;
    if (nlayers < nparts) return PP_ERR_LAYERS;
    w.cost = cost;
    w.layers = NULL;
    w.by = PP_BY_COST;
    w.scale = 0;
    return pp__balance(&w, nlayers, nparts, balance, max_part);
}

PP__DEF int pp_balance_layers(const pp_layer *layers, int nlayers, int nparts, int by, uint32_t param_scale,
                              int32_t *balance, uint64_t *max_part)
{
    pp__wsrc w;
    if (!layers || !balance) return PP_ERR_NULL;
    if (nparts <= 0 || nlayers <= 0 || (by != PP_BY_COST && by != PP_BY_MEMORY)) return PP_ERR_ARG;
    if (nlayers < nparts) return PP_ERR_LAYERS;
    w.cost = NULL;
    w.layers = layers;
    w.by = by;
    w.scale = param_scale;
    return pp__balance(&w, nlayers, nparts, balance, max_part);
}

/* ---- stage maps, schedule names and checks ---- */
PP__DEF int pp_stage_map(int style, int nranks, int nstages, uint8_t *map)
{
    int s, r = 0;
    if (!map) return PP_ERR_NULL;
    if (nranks <= 0 || nranks > PP_MAX_RANKS || nstages <= 0 || nstages > PP_MAX_STAGES) return PP_ERR_ARG;
    if (style == PP_MAP_LOOP) {
        for (s = 0; s < nstages; s++) map[s] = (uint8_t)(s % nranks);
        return PP_OK;
    }
    if (style != PP_MAP_V || nstages % nranks != 0) return PP_ERR_MAP;
    for (s = 0; s < nstages; s++) {
        map[s] = (uint8_t)r;
        if ((s + 1) % nranks == 0) continue;
        r += ((s / nranks) % 2 == 0) ? 1 : -1;
    }
    return PP_OK;
}

static const char *const pp__sched_names[PP_SCHED_COUNT] = {
    "Custom", "GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble", "ForwardOnly"};

PP__DEF const char *pp_schedule_name(int s)
{
    return (s >= 0 && s < PP_SCHED_COUNT) ? pp__sched_names[s] : "unknown";
}

static int pp__lower_c(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

PP__DEF int pp_schedule_from_name(const char *name)
{
    int s;
    if (!name) return PP_ERR_NULL;
    for (s = 1; s < PP_SCHED_COUNT; s++) {
        const char *a = name, *b = pp__sched_names[s];
        while (*a && *b && pp__lower_c((unsigned char)*a) == pp__lower_c((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return s;
    }
    return PP_ERR_SCHEDULE;
}

PP__DEF int pp_schedule_check(int sched, int P, int V, int M)
{
    int rounds;
    if (sched <= PP_SCHED_CUSTOM || sched >= PP_SCHED_COUNT) return PP_ERR_SCHEDULE;
    if (P <= 0 || P > PP_MAX_RANKS || V <= 0 || M <= 0 || M > PP_MAX_MICROBATCHES || (long)P * V > PP_MAX_STAGES)
        return PP_ERR_ARG;
    switch (sched) {
    case PP_SCHED_GPIPE:
    case PP_SCHED_FORWARD_ONLY: return V == 1 ? PP_OK : PP_ERR_STAGES_PER_RANK;
    case PP_SCHED_1F1B:
        if (V != 1) return PP_ERR_STAGES_PER_RANK;
        return M < P ? PP_ERR_MICROBATCHES : PP_OK;
    case PP_SCHED_INTERLEAVED_1F1B:
    case PP_SCHED_INTERLEAVED_ZB: rounds = M / P > 1 ? M / P : 1; return M % rounds ? PP_ERR_ROUNDS : PP_OK;
    case PP_SCHED_ZBV: return V == 2 ? PP_OK : PP_ERR_STAGES_PER_RANK;
    default: return PP_OK; /* LoopedBFS */
    }
}

/* Per-rank row capacity: >= every generator's compute table and any lowering (11 per
   local (stage, microbatch): F, I, W, SEND_F, SEND_B, RECV_F, RECV_B and the skip transfers
   SEND_S, RECV_S, SEND_SB, RECV_SB; PP_LOWER_TORCH adds an UNSHARD, a RESHARD and a
   REDUCE_GRAD per stage, and with more than 3 stages per rank up to an UNSHARD and a RESHARD
   per compute action). */
static long pp__cap(int P, int V, int M)
{
    return 11L * V * M + 4L * V * P + 4L * P + 8 + (V > 3 ? 6L * V * M + 8 : 0);
}

PP__DEF size_t pp_plan_bytes(int P, int V, int M)
{
    if (P <= 0 || P > PP_MAX_RANKS || V <= 0 || M <= 0 || M > PP_MAX_MICROBATCHES || (long)P * V > PP_MAX_STAGES)
        return 0;
    return (size_t)pp__cap(P, V, M) * (size_t)P * sizeof(pp_action);
}

static int pp__init(pp_plan *plan, void *storage, size_t bytes, int P, int S, int M, int *cap)
{
    size_t c;
    if (!plan || !storage) return PP_ERR_NULL;
    if (P <= 0 || P > PP_MAX_RANKS || S <= 0 || S > PP_MAX_STAGES || M <= 0 || M > PP_MAX_MICROBATCHES ||
        ((uintptr_t)storage & 1u))
        return PP_ERR_ARG;
    c = bytes / sizeof(pp_action) / (size_t)P;
    if (c < 1) return PP_ERR_TOO_SMALL;
    *cap = c > 0x7fffffffu ? 0x7fffffff : (int)c;
    return PP_OK;
}

static void pp__set(pp_plan *plan, void *storage, int cap, int P, int S, int M, int sched)
{
    PP_MEMSET(plan, 0, sizeof *plan);
    plan->actions = (pp_action *)storage;
    plan->cap = cap;
    plan->nranks = P;
    plan->nstages = S;
    plan->nmb = M;
    plan->schedule = sched;
}

PP__DEF int pp_plan_init(pp_plan *plan, void *storage, size_t bytes, int P, int S, int M)
{
    int cap, rc = pp__init(plan, storage, bytes, P, S, M, &cap);
    if (rc) return rc;
    pp__set(plan, storage, cap, P, S, M, PP_SCHED_CUSTOM);
    pp_stage_map(PP_MAP_LOOP, P, S, plan->stage_rank);
    return PP_OK;
}

/* ---- schedule generators (one rank row each; the capacity was checked beforehand) ---- */
typedef struct pp__gen {
    pp_action *row;
    int n, cap;
} pp__gen;
static void pp__add(pp__gen *g, int type, int stage, int mb) /* past cap: only counted */
{
    if (g->n < g->cap) g->row[g->n] = pp__act(type, stage, mb);
    g->n++;
}
static void pp__push(pp__gen *g, int type, int stage, int mb)
{
    PP_ASSERT(g->n < g->cap);
    pp__add(g, type, stage, mb);
}
static void pp__idle(pp__gen *g, int k)
{
    while (k-- > 0) pp__push(g, PP_IDLE, 0, 0);
}

/* ScheduleGPipe._get_pipeline_order (forward-only: its forward half) */
static void pp__gpipe(pp__gen *g, int P, int M, int r, int fwd_only)
{
    int m;
    pp__idle(g, r);
    for (m = 0; m < M; m++) pp__push(g, PP_F, r, m);
    if (fwd_only) return;
    pp__idle(g, 3 * (P - 1 - r));
    for (m = 0; m < M; m++) pp__push(g, PP_B, r, m);
}

/* Schedule1F1B._get_pipeline_order's layout with microbatches numbered in the order
   Schedule1F1B._step_microbatches runs them (torch's pipeline_order starts the last rank
   at F1; the executed order starts at F0). */
static void pp__1f1b(pp__gen *g, int P, int M, int r)
{
    int nf = P - 1 - r, fm = 0, bm = 0, i, rem;
    pp__idle(g, r);
    for (i = 0; i < nf; i++) pp__push(g, PP_F, r, fm++);
    pp__idle(g, 2 * (P - 1 - r));
    for (rem = M - nf; rem > 0; rem--) {
        pp__push(g, PP_F, r, fm++);
        pp__push(g, PP_B, r, bm++);
    }
    while (bm < M) {
        pp__idle(g, 1);
        pp__push(g, PP_B, r, bm++);
    }
}

/* ScheduleLoopedBFS._calculate_single_rank_operations */
static void pp__bfs(pp__gen *g, int P, int V, int M, int r)
{
    int v, m;
    pp__idle(g, r);
    for (v = 0; v < V; v++)
        for (m = 0; m < M; m++) pp__push(g, PP_F, v * P + r, m);
    pp__idle(g, 2 * (P - 1 - r));
    for (v = V - 1; v >= 0; v--)
        for (m = M - 1; m >= 0; m--) pp__push(g, PP_B, v * P + r, m);
}

/* _get_1f1b_rank_ops with Interleaved1F1B / InterleavedZeroBubble's stage functions */
static void pp__interleaved(pp__gen *g, int P, int V, int M, int r, int zb)
{
    uint16_t fmi[PP_MAX_STAGES], bmi[PP_MAX_STAGES], wmi[PP_MAX_STAGES];
    int rounds = M / P > 1 ? M / P : 1, mpr = M / rounds;
    int warm = (V - 1) * mpr + (zb ? 1 : 2) * (P - 1 - r);
    int fb, cool, total, op, post, wc = 0, nb = 0, n1f1b = zb ? r : 0;
    int btype = zb ? PP_I : PP_B;
    if (warm > M * V) warm = M * V;
    fb = M * V - warm;
    cool = M * V - fb;
    total = warm + fb + cool;
    post = zb ? P - r - 1 : (V * P + 2 * (P - 1 - r)) - (warm + r);
    PP_MEMSET(fmi, 0, sizeof fmi);
    PP_MEMSET(bmi, 0, sizeof bmi);
    PP_MEMSET(wmi, 0, sizeof wmi);
#define PP__FSI(step) ((((step) / mpr) % V) * P + r)
#define PP__BSI(step) ((V - 1 - (((step)-warm) / mpr) % V) * P + r)
    pp__idle(g, r);
    for (op = 0; op < total; op++) {
        int s;
        if (op < warm) {
            s = PP__FSI(op);
            pp__push(g, PP_F, s, fmi[s / P]++);
            if (op == warm - 1) pp__idle(g, post);
            continue;
        }
        if (op < warm + fb) {
            s = PP__FSI(op);
            pp__push(g, PP_F, s, fmi[s / P]++);
        } else if (!zb)
            pp__idle(g, 1);
        s = PP__BSI(op);
        pp__push(g, btype, s, bmi[s / P]++);
        nb++;
        if (zb && op - warm >= n1f1b) {
            s = PP__BSI(warm + wc);
            pp__push(g, PP_W, s, wmi[s / P]++);
            wc++;
        }
    }
    while (zb && wc < nb) {
        int s = PP__BSI(warm + wc);
        pp__push(g, PP_W, s, wmi[s / P]++);
        wc++;
    }
#undef PP__FSI
#undef PP__BSI
}

/* ScheduleZBVZeroBubble._calculate_single_rank_operations */
static void pp__zbv(pp__gen *g, int P, int M, int r)
{
    int nm = M > 2 * P - 1 ? M : 2 * P - 1, f0 = 0, f1 = 0, b0 = 0, b1 = 0, w0, w1, k, i;
    int c0 = r, c1 = 2 * P - 1 - r, start = g->n;
    pp__idle(g, r);
    for (k = 0; k < 2 * (P - r) - 1; k++) pp__push(g, PP_F, c0, f0++);
    for (k = 0; k < r; k++) {
        pp__push(g, PP_F, c1, f1++);
        pp__push(g, PP_F, c0, f0++);
    }
    for (k = 0; k < P - r; k++) {
        pp__push(g, PP_F, c1, f1++);
        pp__push(g, PP_I, c1, b1);
        pp__push(g, PP_W, c1, b1);
        b1++;
    }
    while (f1 < f0 || f0 < nm) {
        if (f0 < nm) pp__push(g, PP_F, c0, f0++);
        pp__push(g, PP_I, c0, b0);
        pp__push(g, PP_W, c0, b0);
        b0++;
        pp__push(g, PP_F, c1, f1++);
        pp__push(g, PP_I, c1, b1);
        pp__push(g, PP_W, c1, b1);
        b1++;
    }
    w0 = b0;
    w1 = b1;
    for (k = 0; k < r; k++) {
        pp__push(g, PP_I, c0, b0++);
        pp__push(g, PP_I, c1, b1++);
    }
    for (k = 0; k < P - r; k++) {
        pp__push(g, PP_I, c0, b0++);
        pp__push(g, PP_W, c0, w0++);
    }
    while (w1 < b1) pp__push(g, PP_W, c1, w1++);
    while (w0 < b0) pp__push(g, PP_W, c0, w0++);
    for (i = start; i < g->n && i < g->cap; i++) /* drop the padding microbatches */
        if (g->row[i].type != PP_IDLE && g->row[i].mb >= M) g->row[i] = pp__none;
}

static int pp__in_row(const pp_action *row, int n, pp_action a)
{
    int i;
    for (i = 0; i < n; i++)
        if (pp__eq(row[i], a)) return 1;
    return 0;
}

/* InterleavedZeroBubble._add_bubbles_to_actions. Each round appends one entry per
   unfinished rank, so "seen before this round" = in the owner's result row below `round`.
   Each rank's pre-bubble row sits at the end of its storage row. */
static int pp__add_bubbles(pp_plan *p, const int *prelen, pp_diag *diag)
{
    int P = p->nranks, S = p->nstages, r, round;
    int next[PP_MAX_RANKS], res[PP_MAX_RANKS];
    for (r = 0; r < P; r++) {
        next[r] = 0;
        res[r] = 0;
    }
    for (round = 0;; round++) {
        int active = 0, progress = 0;
        for (r = 0; r < P; r++) {
            pp_action *row = pp__row(p, r);
            const pp_action *pre = row + p->cap - prelen[r];
            pp_action a;
            int need = 0;
            if (next[r] >= prelen[r]) continue;
            active = 1;
            if (res[r] >= p->cap - prelen[r] + next[r]) return PP_ERR_TOO_SMALL;
            a = pre[next[r]];
            if (a.type == PP_F && a.stage != 0) {
                int o = p->stage_rank[a.stage - 1];
                int lim = res[o] < round ? res[o] : round;
                need = !pp__in_row(pp__row(p, o), lim, pp__act(PP_F, a.stage - 1, a.mb));
            } else if (a.type == PP_B) {
                pp_action want = a.stage == S - 1 ? pp__act(PP_F, a.stage, a.mb) : pp__act(PP_B, a.stage + 1, a.mb);
                int o = p->stage_rank[want.stage];
                int lim = res[o] < round ? res[o] : round;
                need = !pp__in_row(pp__row(p, o), lim, want);
            }
            if (a.type == PP_IDLE || !need) {
                row[res[r]++] = a;
                next[r]++;
                progress = 1;
            } else
                row[res[r]++] = pp__none;
        }
        if (!active) break;
        if (!progress) {
            for (r = 0; r < P; r++)
                if (next[r] < prelen[r]) {
                    pp__diag(diag, r, next[r], (pp__row(p, r) + p->cap - prelen[r])[next[r]]);
                    break;
                }
            return PP_ERR_DEADLOCK;
        }
    }
    for (r = 0; r < P; r++) p->len[r] = res[r];
    return PP_OK;
}

PP__DEF int pp_schedule_build(pp_plan *plan, int sched, int P, int V, int M, void *storage, size_t bytes, pp_diag *diag)
{
    pp_plan t;
    int cap, rc, r, prelen[PP_MAX_RANKS];
    if (!plan || !storage) return PP_ERR_NULL;
    rc = pp_schedule_check(sched, P, V, M);
    if (rc) return rc;
    rc = pp__init(&t, storage, bytes, P, P * V, M, &cap);
    if (rc) return rc;
    if (cap < pp__cap(P, V, M)) return PP_ERR_TOO_SMALL;
    pp__set(&t, storage, cap, P, P * V, M, sched);
    pp_stage_map(sched == PP_SCHED_ZBV ? PP_MAP_V : PP_MAP_LOOP, P, P * V, t.stage_rank);
    for (r = 0; r < P; r++) {
        pp__gen g;
        g.row = pp__row(&t, r);
        g.n = 0;
        g.cap = cap;
        switch (sched) {
        case PP_SCHED_GPIPE: pp__gpipe(&g, P, M, r, 0); break;
        case PP_SCHED_FORWARD_ONLY: pp__gpipe(&g, P, M, r, 1); break;
        case PP_SCHED_1F1B: pp__1f1b(&g, P, M, r); break;
        case PP_SCHED_LOOPED_BFS: pp__bfs(&g, P, V, M, r); break;
        case PP_SCHED_INTERLEAVED_1F1B: pp__interleaved(&g, P, V, M, r, 0); break;
        case PP_SCHED_INTERLEAVED_ZB: pp__interleaved(&g, P, V, M, r, 1); break;
        default: pp__zbv(&g, P, M, r); break;
        }
        if (g.n > cap) return PP_ERR_TOO_SMALL; /* not reached: cap >= pp__cap */
        t.len[r] = g.n;
        prelen[r] = g.n;
        if (sched == PP_SCHED_INTERLEAVED_ZB) /* park the row at the end for bubbles */
            PP_MEMMOVE(g.row + cap - g.n, g.row, (size_t)g.n * sizeof(pp_action));
    }
    if (sched == PP_SCHED_INTERLEAVED_ZB) {
        rc = pp__add_bubbles(&t, prelen, diag);
        if (rc) return rc;
    }
    *plan = t;
    return PP_OK;
}

PP__DEF int pp_schedule_build_map(pp_plan *plan, int sched, int P, const uint8_t *map, int S, int M, void *storage,
                                  size_t bytes, pp_diag *diag)
{
    pp_action pick[PP_MAX_RANKS], *rows = (pp_action *)storage;
    uint16_t nf[PP_MAX_STAGES], nb[PP_MAX_STAGES]; /* F and B done per stage (each in order) */
    int32_t len[PP_MAX_RANKS];
    int cap, rc, r, s, V = 1, train = sched == PP_SCHED_GPIPE;
    if (!plan || !map || !storage) return PP_ERR_NULL;
    if (!train && sched != PP_SCHED_FORWARD_ONLY) return PP_ERR_SCHEDULE;
    if ((rc = pp__init(plan, storage, bytes, P, S, M, &cap)) != PP_OK) return rc;
    for (s = 0; s < S; s++)
        if (map[s] >= P) return PP_ERR_STAGE_RANK;
    for (r = 0; r < P; r++) {
        int n = 0;
        for (s = 0; s < S; s++) n += map[s] == r;
        if (n > V) V = n;
        len[r] = 0;
    }
    if (cap < pp__cap(P, V, M)) return PP_ERR_TOO_SMALL;
    for (s = 0; s < S; s++) nf[s] = nb[s] = 0;
    for (;;) { /* one time step: every rank picks from what was done before it, then all run */
        int left = 0, moved = 0;
        for (r = 0; r < P; r++) {
            int fwd_left = 0, m;
            pick[r] = pp__none;
            for (s = 0; s < S; s++) /* the ready F with the lowest (microbatch, stage) */
                if (map[s] == r && (m = nf[s]) < M) {
                    fwd_left = left = 1;
                    if ((!s || nf[s - 1] > m) && (pick[r].type == PP_IDLE || m < pick[r].mb))
                        pick[r] = pp__act(PP_F, s, m);
                }
            for (s = S; train && !fwd_left && s-- > 0;) /* then the ready B: lowest microbatch, highest stage */
                if (map[s] == r && (m = nb[s]) < M) {
                    left = 1;
                    if ((s == S - 1 || nb[s + 1] > m) && (pick[r].type == PP_IDLE || m < pick[r].mb))
                        pick[r] = pp__act(PP_B, s, m);
                }
        }
        if (!left) break;
        for (r = 0; r < P; r++) {
            if (pick[r].type == PP_IDLE) continue;
            rows[(size_t)r * (size_t)cap + (size_t)len[r]++] = pick[r];
            if (pick[r].type == PP_F)
                nf[pick[r].stage]++;
            else
                nb[pick[r].stage]++;
            moved = 1;
        }
        if (!moved) { /* not reached for a valid map: stage 0's next F is always ready */
            pp__diag(diag, -1, -1, pp__none);
            return PP_ERR_DEADLOCK;
        }
    }
    pp__set(plan, storage, cap, P, S, M, train ? PP_SCHED_CUSTOM : PP_SCHED_FORWARD_ONLY);
    PP_MEMCPY(plan->stage_rank, map, (size_t)S);
    for (r = 0; r < P; r++) plan->len[r] = len[r];
    return PP_OK;
}

PP__DEF int pp_plan_skips(pp_plan *plan, const pp_route *routes, int n)
{
    int i, rc;
    if (!plan || (n > 0 && !routes)) return PP_ERR_NULL;
    if ((rc = pp__plan_check(plan, NULL)) != PP_OK) return rc;
    if (n < 0 || n > PP_MAX_SKIPS) return PP_ERR_ARG;
    for (i = 0; i < n; i++) {
        if (routes[i].src >= plan->nstages || routes[i].dst >= plan->nstages) return PP_ERR_ARG;
        if (routes[i].src > routes[i].dst) return PP_ERR_SKIP_BACKWARDS;
    }
    plan->skip = routes;
    plan->nskips = n;
    plan->mailbox = 0;
    return PP_OK;
}

/* Whether route k crosses ranks (a transfer); whether stage s receives such a skip (into = 1)
   or sends one (into = 0). */
static int pp__remote(const pp_plan *p, int k)
{
    return p->stage_rank[p->skip[k].src] != p->stage_rank[p->skip[k].dst];
}
static int pp__skip_at(const pp_plan *p, int s, int into)
{
    int k;
    for (k = 0; k < p->nskips; k++)
        if (pp__remote(p, k) && (into ? p->skip[k].dst : p->skip[k].src) == s) return 1;
    return 0;
}

/* Inference with skips: the index of the last action of rank r's row that uses the
   activation of F(s, m) at index i (its sends, the F of the next stage or of a popping stage
   on this rank), i if none. */
static int pp__last_use(const pp_plan *p, int r, int i)
{
    const pp_action *row = pp__row(p, r);
    int s = row[i].stage, j, k, last = i;
    for (j = i + 1; j < p->len[r]; j++) {
        pp_action a = row[j];
        int use = a.mb == row[i].mb && ((a.stage == s && (a.type == PP_SEND_F || a.type == PP_SEND_S)) ||
                                        (a.type == PP_F && a.stage == s + 1));
        for (k = 0; k < p->nskips && !use; k++)
            use =
                a.type == PP_F && a.mb == row[i].mb && p->skip[k].src == s && p->skip[k].dst == a.stage && a.stage != s;
        if (use) last = j;
    }
    return last;
}

/* Where the executor frees the slot of the F at row[j] (see pp_peak_inflight); j: at once,
   len: never. */
static int pp__release_at(const pp_plan *p, const pp_action *row, int len, int j, int rank, int train)
{
    int s = row[j].stage, m = row[j].mb, i, w = len, same;
    if (!train) {
        if (s == p->nstages - 1) return j;
        same = p->stage_rank[s + 1] == rank;
        for (i = j + 1; i < len; i++)
            if (pp__eq(row[i], same ? pp__act(PP_F, s + 1, m) : pp__act(PP_SEND_F, s, m))) return i;
        return same ? len : j;
    }
    for (i = j + 1; i < len && w == len; i++)
        if ((row[i].type == PP_B || row[i].type == PP_W) && row[i].stage == s && row[i].mb == m) w = i;
    if (s > 0 && p->stage_rank[s - 1] != rank) /* the input gradient still to send */
        for (i = w + 1; i < len; i++)
            if (pp__eq(row[i], pp__act(PP_SEND_B, s, m))) return i;
    return w;
}

PP__DEF int pp_peak_inflight(const pp_plan *p, int rank)
{
    int i, j, r, cur = 0, peak = 0, bwd = 0, len;
    const pp_action *row;
    if (!p) return PP_ERR_NULL;
    if ((r = pp__plan_rows_check(p, NULL)) != PP_OK) return r;
    if (rank < 0 || rank >= p->nranks) return PP_ERR_ARG;
    for (r = 0; r < p->nranks && !bwd; r++)
        for (i = 0; i < p->len[r]; i++) {
            int t = pp__row(p, r)[i].type;
            if (t == PP_B || t == PP_I || t == PP_W) {
                bwd = 1;
                break;
            }
        }
    if (!bwd && p->nskips) { /* each F's activation from its F to its last use, both ends counted */
        for (i = 0; i < p->len[rank]; i++) {
            int live = 0;
            for (j = 0; j <= i; j++) live += pp__row(p, rank)[j].type == PP_F && pp__last_use(p, rank, j) >= i;
            if (live > peak) peak = live;
        }
        return peak;
    }
    row = pp__row(p, rank);
    len = p->len[rank];
    for (i = 0; i < len; i++) {
        pp_action a = row[i];
        int frees = bwd ? a.type == PP_B || a.type == PP_W || a.type == PP_SEND_B
                        : a.type == PP_SEND_F || (a.type == PP_F && a.stage > 0 && p->stage_rank[a.stage - 1] == rank);
        if (frees) { /* the slot of the nearest F before it of that stage and microbatch, if it ends here */
            pp_action f = pp__act(PP_F, a.type == PP_F ? a.stage - 1 : a.stage, a.mb);
            for (j = i - 1; j >= 0 && !pp__eq(row[j], f); j--) {}
            if (j >= 0 && pp__release_at(p, row, len, j, rank, bwd) == i) cur--;
        }
        if (a.type == PP_F) {
            if (++cur > peak) peak = cur;
            if (pp__release_at(p, row, len, i, rank, bwd) == i) cur--;
        }
    }
    return peak;
}

PP__DEF int pp_plan_table(const pp_plan *p, int rank, pp_table *out)
{
    int peak;
    if (!p || !out) return PP_ERR_NULL;
    if ((peak = pp__plan_rows_check(p, NULL)) != PP_OK) return peak;
    if (rank < 0 || rank >= PP_MAX_RANKS || (rank < p->nranks && p->len[rank] > UINT16_MAX)) return PP_ERR_ARG;
    peak = rank < p->nranks ? pp_peak_inflight(p, rank) : 0; /* past nranks: an empty table */
    out->actions = rank < p->nranks ? pp__row(p, rank) : p->actions;
    out->len = (uint16_t)(rank < p->nranks ? p->len[rank] : 0);
    out->rank = (uint8_t)rank;
    out->nranks = (uint8_t)p->nranks;
    out->nstages = (uint8_t)p->nstages;
    out->nmb = (uint16_t)p->nmb;
    out->slots = (uint16_t)peak;
    out->stage_rank = p->stage_rank;
    out->mailbox = (uint8_t)(p->mailbox > 0 && p->mailbox <= 255 ? p->mailbox : 0);
    return PP_OK;
}

/* ---- lowering: torch's _add_send_recv ---- */
static int pp__has_comms(const pp_plan *p, pp_action a)
{
    if (a.type == PP_F) return a.stage != p->nstages - 1 && p->stage_rank[a.stage + 1] != p->stage_rank[a.stage];
    if (a.type == PP_I || a.type == PP_B) return a.stage != 0 && p->stage_rank[a.stage - 1] != p->stage_rank[a.stage];
    return 0;
}

/* _add_unshard_reshard then _add_reduce_grad for rank r's compute row in[0..n) (idles dropped),
   written to out (room for cap actions). Returns the length, or -1 when it does not fit. The
   next 3 distinct stages from action i on are the 3 with the nearest next use (nxt[]). The
   unsharded set is always those 3, so at most one stage leaves per action and the order of
   PyTorch's set never shows. */
static PP__NOINLINE int pp__fsdp_row(const pp_plan *p, const pp_action *in, int n, pp_action *out, int cap)
{
    int nxt[PP_MAX_STAGES], i, j, s, k, len = 0;
    uint16_t cnt[PP_MAX_STAGES]; /* B / W per stage: at most PP_MAX_MICROBATCHES */
    uint64_t active = 0, near;
    pp__gen g;
    g.row = out;
    g.n = 0;
    g.cap = cap;
    for (s = 0; s < p->nstages; s++) {
        nxt[s] = n;
        cnt[s] = 0;
    }
    for (i = n; i-- > 0;)
        if (in[i].type != PP_IDLE) nxt[in[i].stage] = i;
    for (i = 0; i < n; i++) {
        pp_action a = in[i];
        if (a.type == PP_IDLE) continue;
        near = 0;
        for (k = 0; k < 3; k++) { /* the 3 stages used soonest from i on */
            int best = -1;
            for (s = 0; s < p->nstages; s++)
                if (nxt[s] < n && !(near >> s & 1u) && (best < 0 || nxt[s] < nxt[best])) best = s;
            if (best >= 0) near |= (uint64_t)1 << best;
        }
        for (s = 0; s < p->nstages; s++) /* evict, then fetch in order of use */
            if ((active & ~near) >> s & 1u) pp__add(&g, PP_RESHARD, s, 0);
        active &= near;
        for (j = i; j < n && active != near; j++)
            if (in[j].type != PP_IDLE && ((near & ~active) >> in[j].stage & 1u)) {
                active |= (uint64_t)1 << in[j].stage;
                pp__add(&g, PP_UNSHARD, in[j].stage, 0);
            }
        pp__add(&g, a.type, a.stage, a.mb);
        if ((a.type == PP_B || a.type == PP_W) && ++cnt[a.stage] == p->nmb) pp__add(&g, PP_REDUCE_GRAD, a.stage, 0);
        for (j = i + 1; j < n && (in[j].type == PP_IDLE || in[j].stage != a.stage); j++) {}
        nxt[a.stage] = j; /* this stage's next use */
    }
    for (s = 0; s < p->nstages; s++)
        if (active >> s & 1u) pp__add(&g, PP_RESHARD, s, 0);
    len = g.n;
    return len > cap ? -1 : len;
}

/* Whether compute action a may go on its rank's row (row[0..n)) as far as skips go: an F
   after the RECV_S of its remote pops, an I / B after the RECV_SB of its remote stashes. */
static int pp__skips_ready(const pp_plan *t, pp_action a, const pp_action *row, int n)
{
    int f = a.type == PP_F;
    if (!f && a.type != PP_I && a.type != PP_B) return 1;
    return !pp__skip_at(t, a.stage, f) || pp__in_row(row, n, pp__act(f ? PP_RECV_S : PP_RECV_SB, a.stage, a.mb));
}

/* After compute action a (and its SEND_F / SEND_B) went on its rank's row: SEND_S after a
   stashing stage's F, SEND_SB after a popping stage's I / B, then the RECV_S / RECV_SB of
   each stage it sends to, once every stage on another rank that sends to it (for this
   microbatch) has. */
static int pp__lower_skips(pp_plan *t, pp_action a, int cap, const int *len, const int *cur, int torch)
{
    int f = a.type == PP_F, k, j, r = t->stage_rank[a.stage];
    if ((!f && a.type != PP_I && a.type != PP_B) || !pp__skip_at(t, a.stage, !f)) return PP_OK;
    if (t->len[r] >= cap - (torch ? len[r] - cur[r] : 0)) return PP_ERR_TOO_SMALL; /* torch's parked row */
    pp__row(t, r)[t->len[r]++] = pp__act(f ? PP_SEND_S : PP_SEND_SB, a.stage, a.mb);
    for (k = 0; k < t->nskips; k++) {
        int peer = f ? t->skip[k].dst : t->skip[k].src, rr = t->stage_rank[peer], sent = 1;
        pp_action recv = pp__act(f ? PP_RECV_S : PP_RECV_SB, peer, a.mb);
        if (!pp__remote(t, k) || (f ? t->skip[k].src : t->skip[k].dst) != a.stage ||
            pp__in_row(pp__row(t, rr), t->len[rr], recv))
            continue;
        for (j = 0; j < t->nskips && sent; j++) {
            int from = f ? t->skip[j].src : t->skip[j].dst, fr = t->stage_rank[from];
            if (pp__remote(t, j) && (f ? t->skip[j].dst : t->skip[j].src) == peer)
                sent = pp__in_row(pp__row(t, fr), t->len[fr], pp__act(f ? PP_SEND_S : PP_SEND_SB, from, a.mb));
        }
        if (!sent) continue;
        if (t->len[rr] >= cap - (torch ? len[rr] - cur[rr] : 0)) return PP_ERR_TOO_SMALL;
        pp__row(t, rr)[t->len[rr]++] = recv;
    }
    return PP_OK;
}

PP__DEF int pp_lower(const pp_plan *in, pp_plan *out, void *storage, size_t bytes, pp_diag *diag)
{
    return pp_lower_mode(in, out, storage, bytes, PP_LOWER_ROUNDS, diag);
}

/* Rank r's next action to lower: from its input row, or from torch's expansion parked at the
   end of its output row (recomputed rather than kept in a per-rank pointer array: the frame
   stays within the 512 B the size check allows on Cortex-M). */
#define PP__LOWER_NEXT(r) (mode == PP_LOWER_TORCH ? pp__row(&t, r)[cap - len[r] + cur[r]] : pp__row(in, r)[cur[r]])
PP__DEF int pp_lower_mode(const pp_plan *in, pp_plan *out, void *storage, size_t bytes, int mode, pp_diag *diag)
{
    pp_plan t;
    int cap, rc, r, i, cur[PP_MAX_RANKS], len[PP_MAX_RANKS], left;
    if (!in || !out || !storage) return PP_ERR_NULL;
    if ((rc = pp__plan_rows_check(in, diag)) != PP_OK) return rc;
    rc = pp__init(&t, storage, bytes, in->nranks, in->nstages, in->nmb, &cap);
    if (rc) return rc;
    if ((const void *)in->actions == storage || (unsigned)mode > PP_LOWER_TORCH) return PP_ERR_ARG;
    for (r = 0; r < in->nranks; r++)
        for (i = 0; i < in->len[r]; i++) {
            pp_action a = pp__row(in, r)[i];
            if (a.type >= PP_SEND_F) {
                pp__diag(diag, r, i, a);
                return PP_ERR_ACTION;
            }
        }
    pp__set(&t, storage, cap, in->nranks, in->nstages, in->nmb, in->schedule);
    PP_MEMCPY(t.stage_rank, in->stage_rank, sizeof t.stage_rank);
    t.skip = in->skip;
    t.nskips = in->nskips;
    t.lowered = 1;
    for (r = 0; r < in->nranks; r++) { /* what each rank lowers: its row, or torch's expansion parked
                                          at the end of its output row (read before written over) */
        cur[r] = 0;
        len[r] = in->len[r];
        if (mode == PP_LOWER_TORCH) {
            pp_action *row = pp__row(&t, r);
            len[r] = pp__fsdp_row(in, pp__row(in, r), in->len[r], row, cap);
            if (len[r] < 0) return PP_ERR_TOO_SMALL;
            PP_MEMMOVE(row + cap - len[r], row, (size_t)len[r] * sizeof(pp_action));
        }
    }
    for (;;) {
        int progress = 0;
        left = 0;
        for (r = 0; r < in->nranks; r++) {
            pp_action a, *row = pp__row(&t, r);
            int ready = 1, room;
            if (cur[r] >= len[r]) continue;
            left = 1;
            a = PP__LOWER_NEXT(r);
            if (a.type == PP_F && a.stage != 0)
                ready = pp__in_row(row, t.len[r], pp__act(PP_RECV_F, a.stage, a.mb)) ||
                        pp__in_row(row, t.len[r], pp__act(PP_F, a.stage - 1, a.mb));
            else if ((a.type == PP_I || a.type == PP_B) && a.stage != in->nstages - 1)
                ready = pp__in_row(row, t.len[r], pp__act(PP_RECV_B, a.stage, a.mb)) ||
                        pp__in_row(row, t.len[r], pp__act(PP_I, a.stage + 1, a.mb)) ||
                        pp__in_row(row, t.len[r], pp__act(PP_B, a.stage + 1, a.mb));
            if (!ready || !pp__skips_ready(&t, a, row, t.len[r])) continue;
            cur[r]++; /* its parked slot is free from here */
            if (a.type != PP_IDLE) {
                room = cap - (mode == PP_LOWER_TORCH ? len[r] - cur[r] : 0);
                if (t.len[r] >= room) return PP_ERR_TOO_SMALL;
                row[t.len[r]++] = a;
                if (pp__has_comms(in, a)) {
                    int fwd = a.type == PP_F, rs = fwd ? a.stage + 1 : a.stage - 1;
                    int rr = t.stage_rank[rs];
                    int rroom = cap - (mode == PP_LOWER_TORCH ? len[rr] - cur[rr] : 0);
                    if (t.len[r] >= room || t.len[rr] >= rroom) return PP_ERR_TOO_SMALL;
                    row[t.len[r]++] = pp__act(fwd ? PP_SEND_F : PP_SEND_B, a.stage, a.mb);
                    pp__row(&t, rr)[t.len[rr]++] = pp__act(fwd ? PP_RECV_F : PP_RECV_B, rs, a.mb);
                }
                if ((rc = pp__lower_skips(&t, a, cap, len, cur, mode == PP_LOWER_TORCH)) != PP_OK) return rc;
            }
            progress = 1;
        }
        if (!left) break;
        if (!progress) {
            for (r = 0; r < in->nranks; r++)
                if (cur[r] < len[r]) {
                    pp__diag(diag, r, cur[r], PP__LOWER_NEXT(r));
                    break;
                }
            return PP_ERR_DEADLOCK;
        }
    }
    *out = t;
    return PP_OK;
}
#undef PP__LOWER_NEXT

/* ---- validation: torch's _validate_schedule ---- */
/* A send or receive the executor can run: with the neighbouring stage it names (none:
   PP_ERR_ACTION) on another rank (PP_ERR_STAGE_RANK), once (PP_ERR_DUPLICATE), a send after
   the F, or the I or B, whose result it sends (PP_ERR_ACTION). */
static int pp__comm_check(const pp_plan *p, const pp_action *row, int i, pp_action a, int r)
{
    int fwd = a.type == PP_SEND_F || a.type == PP_RECV_F, send = a.type == PP_SEND_F || a.type == PP_SEND_B;
    int peer = a.stage + (fwd == send ? 1 : -1); /* SEND_F, RECV_B: the next stage */
    if (a.type >= PP_SEND_S) { /* a skip route between ranks stashed (SEND_S, RECV_SB) or popped here */
        int stash = a.type == PP_SEND_S || a.type == PP_RECV_SB;
        if (!pp__skip_at(p, a.stage, !stash)) return PP_ERR_ACTION;
        if (pp__in_row(row, i, a)) return PP_ERR_DUPLICATE;
        if (a.type == PP_SEND_S) return pp__in_row(row, i, pp__act(PP_F, a.stage, a.mb)) ? PP_OK : PP_ERR_ACTION;
        if (a.type == PP_SEND_SB && !pp__in_row(row, i, pp__act(PP_I, a.stage, a.mb)) &&
            !pp__in_row(row, i, pp__act(PP_B, a.stage, a.mb)))
            return PP_ERR_ACTION;
        return PP_OK;
    }
    if (peer < 0 || peer >= p->nstages) return PP_ERR_ACTION;
    if (p->stage_rank[peer] == r) return PP_ERR_STAGE_RANK;
    if (pp__in_row(row, i, a)) return PP_ERR_DUPLICATE;
    if (send &&
        !(fwd ? pp__in_row(row, i, pp__act(PP_F, a.stage, a.mb))
              : pp__in_row(row, i, pp__act(PP_I, a.stage, a.mb)) || pp__in_row(row, i, pp__act(PP_B, a.stage, a.mb))))
        return PP_ERR_ACTION;
    return PP_OK;
}

PP__DEF int pp_validate(const pp_plan *p, pp_diag *diag)
{
    int r, i, s, rc, train = 0;
    if (!p) return PP_ERR_NULL;
    if ((rc = pp__plan_check(p, diag)) != PP_OK) return rc;
    if (p->schedule != PP_SCHED_CUSTOM && p->schedule != PP_SCHED_FORWARD_ONLY) {
        int V = p->nstages / p->nranks;
        if (p->nstages % p->nranks) return PP_ERR_STAGES_PER_RANK;
        rc = pp_schedule_check(p->schedule, p->nranks, V, p->nmb);
        if (rc) {
            pp__diag(diag, -1, -1, pp__none);
            return rc;
        }
    }
    for (r = 0; r < p->nranks; r++) {
        const pp_action *row = pp__row(p, r);
        for (i = 0; i < p->len[r]; i++) {
            pp_action a = row[i];
            if (!pp__check_action(p, a)) {
                pp__diag(diag, r, i, a);
                return PP_ERR_ACTION;
            }
            if (a.type == PP_IDLE) continue;
            if (p->stage_rank[a.stage] != r) {
                pp__diag(diag, r, i, a);
                return PP_ERR_STAGE_RANK;
            }
            if (((a.type >= PP_SEND_F && a.type <= PP_RECV_B) || a.type >= PP_SEND_S) &&
                (rc = pp__comm_check(p, row, i, a, r)) != PP_OK) {
                pp__diag(diag, r, i, a);
                return rc;
            }
            if (a.type > PP_W) continue;
            train |= a.type != PP_F && p->schedule != PP_SCHED_FORWARD_ONLY;
            if (pp__in_row(row, i, a)) {
                pp__diag(diag, r, i, a);
                return PP_ERR_DUPLICATE;
            }
            if ((a.type == PP_B || a.type == PP_I) && !pp__in_row(row, i, pp__act(PP_F, a.stage, a.mb))) {
                pp__diag(diag, r, i, a);
                return PP_ERR_BACKWARD_BEFORE_FORWARD;
            }
            if (a.type == PP_W && !pp__in_row(row, i, pp__act(PP_I, a.stage, a.mb))) {
                pp__diag(diag, r, i, a);
                return PP_ERR_WEIGHT_BEFORE_INPUT;
            }
        }
    }
    for (s = 0; s < p->nstages; s++) {
        int n[PP_W + 1] = {0, 0, 0, 0, 0};
        r = p->stage_rank[s];
        for (i = 0; i < p->len[r]; i++) {
            pp_action a = pp__row(p, r)[i];
            if (a.stage == s && a.type >= PP_F && a.type <= PP_W) n[a.type]++;
        }
        if (n[PP_F] != p->nmb) {
            if (diag) {
                pp__diag(diag, r, -1, pp__none);
                diag->stage = s;
                diag->expected = p->nmb;
                diag->got = n[PP_F];
            }
            return PP_ERR_FORWARD_COUNT;
        }
        if (n[PP_I] != n[PP_W] || n[PP_B] + n[PP_I] != (train ? p->nmb : 0)) {
            if (diag) {
                pp__diag(diag, r, -1, pp__none);
                diag->stage = s;
                diag->expected = train ? p->nmb : 0;
                diag->got = n[PP_B] + n[PP_I];
            }
            return PP_ERR_BACKWARD_COUNT;
        }
    }
    return PP_OK;
}

/* ---- simulation ---- */
PP__DEF size_t pp_sim_bytes(const pp_plan *p)
{
    size_t words;
    if (!p || pp__plan_check(p, NULL) != PP_OK) return 0;
    words = 6u * (size_t)p->nstages; /* + the skip planes, and pp_mailbox_depth's skip transfers */
    if (p->nskips) words += 4u * (size_t)p->nstages + 2u * (size_t)p->nskips;
    return words * (size_t)p->nmb * sizeof(uint32_t);
}

#define PP__NOT 0xffffffffu
/* A posted receive: it does not wait for its data (torch's irecv); its consumer does. */
static int pp__posted(int type)
{
    return type == PP_RECV_F || type == PP_RECV_B || type == PP_RECV_S || type == PP_RECV_SB;
}
enum { PP__TF, PP__TB, PP__TSF, PP__TSB, PP__TRF, PP__TRB, PP__TSS, PP__TSSB, PP__TRS, PP__TRSB };

static uint32_t pp__cost(const pp_costs *c, pp_action a)
{
    switch (a.type) {
    case PP_F: return c->stage_f ? c->stage_f[a.stage] : c->f;
    case PP_B: return c->stage_b ? c->stage_b[a.stage] : c->b;
    case PP_I: return c->stage_i ? c->stage_i[a.stage] : c->i;
    case PP_W: return c->stage_w ? c->stage_w[a.stage] : c->w;
    case PP_SEND_F:
    case PP_SEND_B:
    case PP_SEND_S:
    case PP_SEND_SB: return c->send;
    case PP_RECV_F:
    case PP_RECV_B:
    case PP_RECV_S:
    case PP_RECV_SB: return c->recv;
    default: return 0;
    }
}

/* The skip inputs of action a (work planes t), from when (*dep, raised): a popping F needs
   its stashes (from another rank: its RECV_S, or the stashing F and the latency in a plan
   without transfers), a stashing I / B its pops' gradients; a skip send its F / I / B; a
   skip receive every remote sender's send. 1 if they are there. */
static int pp__skips_in(const pp_plan *p, const pp_costs *c, const uint32_t *t, pp_action a, uint32_t *dep)
{
    size_t plane = (size_t)p->nstages * (size_t)p->nmb;
    int k, f = a.type == PP_F || a.type == PP_SEND_S || a.type == PP_RECV_S;
    uint32_t x;
#define PP__T(k, s, m) t[(size_t)(k)*plane + (size_t)(s) * (size_t)p->nmb + (size_t)(m)]
    if (a.type != PP_F && a.type != PP_I && a.type != PP_B && (a.type < PP_SEND_S || a.type > PP_RECV_SB)) return 1;
    if (a.type == PP_SEND_S || a.type == PP_SEND_SB) {
        if ((x = PP__T(f ? PP__TF : PP__TB, a.stage, a.mb)) == PP__NOT) return 0;
        *dep = x > *dep ? x : *dep;
        return 1;
    }
    for (k = 0; k < p->nskips; k++) {
        int from = f ? p->skip[k].src : p->skip[k].dst, to = f ? p->skip[k].dst : p->skip[k].src;
        int remote = pp__remote(p, k), recv = a.type == PP_RECV_S || a.type == PP_RECV_SB;
        if (to != a.stage || from == to || (recv && !remote)) continue;
        if (recv) /* a receive: the sender's send + latency */
            x = PP__T(f ? PP__TSS : PP__TSSB, from, a.mb);
        else if (remote && p->lowered) /* a compute action: its posted receive */
            x = PP__T(f ? PP__TRS : PP__TRSB, to, a.mb);
        else /* the producing action itself */
            x = PP__T(f ? PP__TF : PP__TB, from, a.mb);
        if (x == PP__NOT) return 0;
        if (recv || (remote && !p->lowered)) x += c->comm;
        if (x > *dep) *dep = x;
    }
#undef PP__T
    return 1;
}

/* Whether rank r's next action a has its inputs (work planes t), and from when (*dep). */
static int pp__ready(const pp_plan *p, const pp_costs *c, const uint32_t *t, pp_action a, int r, uint32_t *dep);
static int pp__ready_all(const pp_plan *p, const pp_costs *c, const uint32_t *t, pp_action a, int r, uint32_t *dep)
{
    return pp__ready(p, c, t, a, r, dep) && (!p->nskips || pp__skips_in(p, c, t, a, dep));
}
static int pp__ready(const pp_plan *p, const pp_costs *c, const uint32_t *t, pp_action a, int r, uint32_t *dep)
{
    size_t plane = (size_t)p->nstages * (size_t)p->nmb;
    int s = a.stage, m = a.mb, S = p->nstages, M = p->nmb;
    uint32_t x;
    *dep = 0;
#define PP__T(k, s, m) t[(size_t)(k)*plane + (size_t)(s) * (size_t)M + (size_t)(m)]
    switch (a.type) {
    case PP_F:
        if (s == 0) return 1;
        if (p->lowered) {
            if ((x = PP__T(PP__TRF, s, m)) != PP__NOT)
                *dep = x;
            else if ((x = PP__T(PP__TF, s - 1, m)) != PP__NOT && p->stage_rank[s - 1] == r)
                *dep = x;
            else
                return 0;
        } else if ((x = PP__T(PP__TF, s - 1, m)) != PP__NOT)
            *dep = x + (p->stage_rank[s - 1] != r ? c->comm : 0);
        else
            return 0;
        return 1;
    case PP_B:
    case PP_I:
        if (s == S - 1) return 1;
        if (p->lowered) {
            if ((x = PP__T(PP__TRB, s, m)) != PP__NOT)
                *dep = x;
            else if ((x = PP__T(PP__TB, s + 1, m)) != PP__NOT && p->stage_rank[s + 1] == r)
                *dep = x;
            else
                return 0;
        } else if ((x = PP__T(PP__TB, s + 1, m)) != PP__NOT)
            *dep = x + (p->stage_rank[s + 1] != r ? c->comm : 0);
        else
            return 0;
        return 1;
    case PP_SEND_F: return (*dep = PP__T(PP__TF, s, m)) != PP__NOT;
    case PP_SEND_B: return (*dep = PP__T(PP__TB, s, m)) != PP__NOT;
    case PP_RECV_F:
        if (s == 0 || (x = PP__T(PP__TSF, s - 1, m)) == PP__NOT) return 0;
        *dep = x + c->comm;
        return 1;
    case PP_RECV_B:
        if (s == S - 1 || (x = PP__T(PP__TSB, s + 1, m)) == PP__NOT) return 0;
        *dep = x + c->comm;
        return 1;
    default: return 1; /* W, UNSHARD, RESHARD, REDUCE_GRAD: always ready; skips: pp__skips_in */
    }
#undef PP__T
}

/* One simulation; dry: check only (events counted against max_events, nothing written to
   out, events or nevents), so pp_simulate can dry-run before writing events without
   recursion. */
static int pp__simulate(const pp_plan *p, const pp_costs *c, void *work, size_t work_bytes, pp_sim *out,
                        pp_event *events, int max_events, int *nevents, pp_diag *diag, int dry)
{
    uint32_t *t, clock[PP_MAX_RANKS], unit[PP_MAX_RANKS];
    int cur[PP_MAX_RANKS], r, i, S, M, nev = 0, total = 0;
    size_t plane;
    pp_sim res;
    if (!p || !c || !work || !out) return PP_ERR_NULL;
    if ((r = pp__plan_check(p, diag)) != PP_OK) return r;
    if ((uintptr_t)work & 3u) return PP_ERR_ARG;
    if (work_bytes < pp_sim_bytes(p)) return PP_ERR_TOO_SMALL;
    if ((r = pp__rows_check(p, diag)) != PP_OK) return r;
    S = p->nstages;
    M = p->nmb;
    for (r = 0; r < p->nranks; r++)
        for (i = 0; i < p->len[r]; i++) total += pp__row(p, r)[i].type != PP_IDLE;
    if (events && max_events < total) return PP_ERR_TOO_SMALL;
    if (dry) events = NULL;
    t = (uint32_t *)work;
    plane = (size_t)S * (size_t)M;
    {
        size_t k;
        for (k = 0; k < (p->nskips ? 10 : 6) * plane; k++) t[k] = PP__NOT;
    }
    PP_MEMSET(&res, 0, sizeof res);
    for (r = 0; r < p->nranks; r++) {
        cur[r] = 0;
        clock[r] = 0;
        unit[r] = 0;
    }
#define PP__T(k, s, m) t[(size_t)(k)*plane + (size_t)(s) * (size_t)M + (size_t)(m)]
    for (;;) {
        int best = -1, left = 0;
        uint32_t best_start = 0, best_dep = 0, arrive, start, end;
        pp_action a;
        for (r = 0; r < p->nranks; r++) {
            uint32_t dep;
            while (cur[r] < p->len[r] && pp__row(p, r)[cur[r]].type == PP_IDLE) cur[r]++;
            if (cur[r] >= p->len[r]) continue;
            left = 1;
            if (!pp__ready_all(p, c, t, pp__row(p, r)[cur[r]], r, &dep)) continue;
            start = clock[r];
            if (c->cores && unit[r % c->cores] > start) start = unit[r % c->cores];
            if (!pp__posted(pp__row(p, r)[cur[r]].type) && dep > start) start = dep;
            if (best < 0 || start < best_start) {
                best = r;
                best_start = start;
                best_dep = dep;
            }
        }
        if (!left) break;
        if (best < 0) {
            for (r = 0; r < p->nranks; r++)
                if (cur[r] < p->len[r]) {
                    pp__diag(diag, r, cur[r], pp__row(p, r)[cur[r]]);
                    break;
                }
            return PP_ERR_DEADLOCK;
        }
        r = best;
        a = pp__row(p, r)[cur[r]];
        if (a.type >= PP_SEND_S && !p->nskips) { /* a skip transfer without routes: no planes for it */
            pp__diag(diag, r, cur[r], a);
            return PP_ERR_ACTION;
        }
        /* RECV is posted like torch's irecv: it does not wait, its consumer does */
        arrive = best_dep;
        start = best_start;
        end = start + pp__cost(c, a);
        clock[r] = end;
        if (c->cores) unit[r % c->cores] = end;
        {
            int s = a.stage, m = a.mb;
            switch (a.type) {
            case PP_F:
                PP__T(PP__TF, s, m) = end;
                res.busy[r] += end - start;
                break;
            case PP_B:
            case PP_I:
                PP__T(PP__TB, s, m) = end;
                res.busy[r] += end - start;
                break;
            case PP_W: res.busy[r] += end - start; break;
            case PP_SEND_F: PP__T(PP__TSF, s, m) = end; break;
            case PP_SEND_B: PP__T(PP__TSB, s, m) = end; break;
            case PP_RECV_F: PP__T(PP__TRF, s, m) = end > arrive ? end : arrive; break;
            case PP_RECV_B: PP__T(PP__TRB, s, m) = end > arrive ? end : arrive; break;
            case PP_SEND_S: PP__T(PP__TSS, s, m) = end; break;
            case PP_SEND_SB: PP__T(PP__TSSB, s, m) = end; break;
            case PP_RECV_S: PP__T(PP__TRS, s, m) = end > arrive ? end : arrive; break;
            case PP_RECV_SB: PP__T(PP__TRSB, s, m) = end > arrive ? end : arrive; break;
            default: break;
            }
        }
        if (events) {
            events[nev].rank = (uint16_t)r;
            events[nev].action = a;
            events[nev].t_start = start;
            events[nev].t_end = end;
        }
        nev++;
        cur[r]++;
    }
#undef PP__T
    {
        uint64_t busy = 0;
        for (r = 0; r < p->nranks; r++) {
            res.end[r] = clock[r];
            if (clock[r] > res.makespan) res.makespan = clock[r];
            busy += res.busy[r];
            res.peak[r] = (uint16_t)pp_peak_inflight(p, r);
        }
        res.bubble_ppm =
            res.makespan ? (uint32_t)(1000000u - (busy * 1000000u) / ((uint64_t)p->nranks * res.makespan)) : 0;
    }
    if (dry) return PP_OK;
    *out = res;
    if (nevents) *nevents = nev;
    return PP_OK;
}

PP__DEF int pp_simulate(const pp_plan *p, const pp_costs *c, void *work, size_t work_bytes, pp_sim *out,
                        pp_event *events, int max_events, int *nevents, pp_diag *diag)
{
    /* with events: a dry run first, so events stay untouched on deadlock */
    int rc = events ? pp__simulate(p, c, work, work_bytes, out, events, max_events, nevents, diag, 1) : PP_OK;
    return rc ? rc : pp__simulate(p, c, work, work_bytes, out, events, max_events, nevents, diag, 0);
}

/* ---- mailbox depth: the executor without take-in ---- */
/* Transfer state in work: plane 0 the activation into stage s for microbatch m, plane 1 the
   gradient into s, then per skip route the skip tensor and its gradient; PP__NOT until sent,
   then its posting order, | PP__TAKEN once received. */
#define PP__TAKEN 0x80000000u

static size_t pp__ntx(const pp_plan *p)
{
    return (2u * (size_t)p->nstages + 2u * (size_t)p->nskips) * (size_t)p->nmb;
}

/* Sender and receiver ranks of transfer k (< 0 for a transfer that cannot exist). */
static int pp__tx_pair(const pp_plan *p, size_t k, int *dst)
{
    size_t plane = (size_t)p->nstages * (size_t)p->nmb;
    int S = p->nstages, grad, s, src;
    if (k >= 2u * plane) { /* a skip route's tensor or gradient */
        int j = (int)((k - 2u * plane) / (size_t)p->nmb), g = j >= p->nskips;
        const pp_route *x = &p->skip[g ? j - p->nskips : j];
        if (p->stage_rank[x->src] == p->stage_rank[x->dst]) return -1;
        *dst = p->stage_rank[g ? x->src : x->dst];
        return p->stage_rank[g ? x->dst : x->src];
    }
    grad = (int)(k / plane);
    s = (int)(k / (size_t)p->nmb) % S;
    src = s + (grad ? 1 : -1);
    if (src < 0 || src >= S) return -1;
    *dst = p->stage_rank[s];
    return p->stage_rank[src];
}

/* Transfers src -> dst that hold a mailbox slot: from the oldest one not taken yet. */
static uint32_t pp__window(const pp_plan *p, const uint32_t *t, int src, int dst)
{
    size_t k, n = pp__ntx(p);
    uint32_t oldest = PP__NOT, w = 0;
    int d;
    for (k = 0; k < n; k++)
        if (t[k] != PP__NOT && !(t[k] & PP__TAKEN) && t[k] < oldest && pp__tx_pair(p, k, &d) == src && d == dst)
            oldest = t[k];
    for (k = 0; k < n; k++)
        if (t[k] != PP__NOT && (t[k] & ~PP__TAKEN) >= oldest && pp__tx_pair(p, k, &d) == src && d == dst) w++;
    return w;
}

/* The n-th transfer (in the executor's order) that rank r's action a takes in (F: the
   activation from another rank, then its remote skips in route order; I / B: the gradient,
   then its stashes' gradients) or posts (SEND_F / SEND_B: one; SEND_S / SEND_SB: one per
   remote route), or -1 past the last. */
static int pp__tx_of(const pp_plan *p, pp_action a, int r, int n, int *send)
{
    int s = a.stage, k, to = s, skips = 0;
    int grad = a.type != PP_F && a.type != PP_SEND_F && a.type != PP_SEND_S && a.type != PP_RECV_S;
    *send = a.type == PP_SEND_F || a.type == PP_SEND_B || a.type == PP_SEND_S || a.type == PP_SEND_SB;
    if (a.type == PP_SEND_S || a.type == PP_SEND_SB)
        skips = 1; /* all its transfers are skips */
    else if (*send)
        to = s + (grad ? -1 : 1);
    else if (a.type != PP_F && a.type != PP_I && a.type != PP_B)
        return -1;
    else {
        int from = s + (grad ? 1 : -1);
        if (from < 0 || from >= p->nstages || p->stage_rank[from] == r) n++; /* no activation to take */
    }
    if (!skips && n == 0) {
        if (to < 0 || to >= p->nstages) return -1;
        return (int)(((size_t)grad * (size_t)p->nstages + (size_t)to) * (size_t)p->nmb + a.mb);
    }
    if (a.type == PP_SEND_F || a.type == PP_SEND_B) return -1;
    if (!skips) n--;
    for (k = 0; k < p->nskips; k++) { /* F / SEND_SB: routes into s; I, B / SEND_S: routes from s */
        int into = (a.type == PP_F) || (a.type == PP_SEND_SB);
        if (!pp__remote(p, k) || (into ? p->skip[k].dst : p->skip[k].src) != s) continue;
        if (n != 0) { /* an earlier transfer of this action */
            n--;
            continue;
        }
        return (int)(2u * (size_t)p->nstages * (size_t)p->nmb +
                     ((size_t)grad * (size_t)p->nskips + (size_t)k) * (size_t)p->nmb + a.mb);
    }
    return -1;
}

/* Whether rank r can go on with transfer n of its current action with mailboxes of `depth`
   transfers; if so it is posted (*seq: the posting order) or taken. */
static int pp__mailbox_step(const pp_plan *p, uint32_t depth, uint32_t *t, const int *cur, const int *sub, int r,
                            uint32_t *seq)
{
    int send, dst = 0, s2 = 0, x = pp__tx_of(p, pp__row(p, r)[cur[r]], r, sub[r], &send), ok;
    if (!send) { /* F / I / B takes its data */
        ok = t[x] != PP__NOT && !(t[x] & PP__TAKEN);
        if (ok) t[x] |= PP__TAKEN;
        return ok;
    }
    ok = t[x] == PP__NOT && pp__tx_pair(p, (size_t)x, &dst) == r;
    if (ok && depth == 0) /* no buffer: only once the peer waits for this very transfer */
        ok = cur[dst] < p->len[dst] && pp__tx_of(p, pp__row(p, dst)[cur[dst]], dst, sub[dst], &s2) == x && !s2;
    ok = ok && pp__window(p, t, r, dst) < (depth ? depth : 1u);
    if (ok) t[x] = (*seq)++;
    return ok;
}

/* One run of every row with mailboxes of `depth` transfers: PP_OK, or PP_ERR_MAILBOX with
   diag naming the first waiting rank. */
static int pp__mailbox_run(const pp_plan *p, uint32_t depth, uint32_t *t, pp_diag *diag)
{
    int cur[PP_MAX_RANKS] = {0}, sub[PP_MAX_RANKS] = {0}, r, moved, left = 0, send;
    size_t k, n = pp__ntx(p);
    uint32_t seq = 0;
    for (k = 0; k < n; k++) t[k] = PP__NOT;
    do {
        moved = 0;
        for (r = 0; r < p->nranks; r++)
            while (cur[r] < p->len[r]) {
                if (pp__tx_of(p, pp__row(p, r)[cur[r]], r, sub[r], &send) < 0) { /* the action is done */
                    cur[r]++;
                    sub[r] = 0;
                } else if (pp__mailbox_step(p, depth, t, cur, sub, r, &seq))
                    sub[r]++;
                else
                    break;
                moved = 1;
            }
        left = 0;
        for (r = 0; r < p->nranks; r++) left |= cur[r] < p->len[r];
    } while (left && moved);
    for (r = 0; r < p->nranks && cur[r] >= p->len[r]; r++) {}
    if (r == p->nranks) return PP_OK;
    pp__diag(diag, r, cur[r], pp__row(p, r)[cur[r]]);
    return PP_ERR_MAILBOX;
}

PP__DEF int pp_mailbox_depth(pp_plan *p, int max_depth, void *work, size_t work_bytes, pp_diag *diag)
{
    uint32_t *t = (uint32_t *)work, lo = 0, hi;
    int rc;
    if (!p || !work) return PP_ERR_NULL;
    if ((rc = pp__plan_check(p, diag)) != PP_OK) return rc;
    if (max_depth < 0 || max_depth > 254 || ((uintptr_t)work & 3u)) return PP_ERR_ARG;
    if (work_bytes < pp_sim_bytes(p)) return PP_ERR_TOO_SMALL;
    if ((rc = pp__rows_check(p, diag)) != PP_OK) return rc;
    if (pp__mailbox_run(p, 0x7fffffffu, t, diag)) return PP_ERR_DEADLOCK; /* even unbounded */
    hi = (uint32_t)max_depth;
    if (pp__mailbox_run(p, hi, t, diag)) return PP_ERR_MAILBOX;
    while (lo < hi) { /* the smallest depth that runs: deeper never hurts */
        uint32_t mid = lo + (hi - lo) / 2;
        if (pp__mailbox_run(p, mid, t, NULL) == PP_OK)
            hi = mid;
        else
            lo = mid + 1;
    }
    p->mailbox = (int32_t)lo + 1;
    return (int)lo;
}

/* ---- text output: splitcore_base.h's writer ---- */
#define SPLITCORE__TEXT
#include "splitcore_base.h"
static const char *const pp__type_names[PP_TYPE_COUNT] = {
    "",       "F",       "B",       "I",           "W",      "SEND_F", "RECV_F",  "SEND_B",
    "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD", "SEND_S", "RECV_S", "SEND_SB", "RECV_SB"};
static const char *const pp__type_macros[PP_TYPE_COUNT] = {
    "PP_IDLE",   "PP_F",       "PP_B",       "PP_I",           "PP_W",      "PP_SEND_F", "PP_RECV_F",  "PP_SEND_B",
    "PP_RECV_B", "PP_UNSHARD", "PP_RESHARD", "PP_REDUCE_GRAD", "PP_SEND_S", "PP_RECV_S", "PP_SEND_SB", "PP_RECV_SB"};

static void pp__put_action(splitcore__out *o, pp_action a)
{
    if (a.type == PP_IDLE || a.type >= PP_TYPE_COUNT) return;
    splitcore__putu(o, a.stage);
    splitcore__puts(o, pp__type_names[a.type]);
    if (!PP__NO_MB(a.type)) splitcore__putu(o, a.mb);
}

/* Run `emit` to count, then to write when it fits. */
static int pp__finish(splitcore__out *o, char *buf, size_t cap, size_t *needed)
{
    if (needed) *needed = o->n + 1;
    if (!buf) return cap == 0 ? PP_OK : PP_ERR_NULL;
    if (cap < o->n + 1) return PP_ERR_TOO_SMALL;
    return 1;
}
#define PP__EMIT(call)                                  \
    do {                                                \
        splitcore__out o_;                              \
        int k_;                                         \
        o_.buf = NULL;                                  \
        o_.cap = 0;                                     \
        o_.n = 0;                                       \
        call;                                           \
        k_ = pp__finish(&o_, buf, cap, needed);         \
        if (k_ != 1) return k_;                         \
        if (o_.n > 0x7ffffffe) return PP_ERR_TOO_SMALL; \
        o_.buf = buf;                                   \
        o_.cap = cap;                                   \
        o_.n = 0;                                       \
        call;                                           \
        buf[o_.n] = '\0';                               \
        return (int)o_.n;                               \
    } while (0)

PP__DEF int pp_action_format(pp_action a, char *buf, size_t cap)
{
    size_t *needed = NULL;
    if (a.type >= PP_TYPE_COUNT) return PP_ERR_ACTION;
    PP__EMIT(pp__put_action(&o_, a));
}

static int pp__space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

PP__DEF int pp_action_parse(const char *s, size_t n, pp_action *out)
{
    size_t i = 0, j;
    uint32_t stage = 0, mb = 0;
    int type = -1, k, nd = 0, nm = 0;
    if (!s || !out) return PP_ERR_NULL;
    while (n > 0 && pp__space(s[n - 1])) n--;
    while (i < n && pp__space(s[i])) i++;
    if (i == n) {
        *out = pp__none;
        return PP_OK;
    }
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, nd++) {
        stage = stage * 10 + (uint32_t)(s[i] - '0');
        if (stage > 255) return PP_ERR_PARSE;
    }
    if (!nd) return PP_ERR_PARSE;
    for (k = 1; k < PP_TYPE_COUNT && type < 0; k++) {
        const char *t = pp__type_names[k];
        for (j = 0; t[j] && i + j < n && s[i + j] == t[j]; j++) {}
        if (!t[j]) {
            size_t e = i + j; /* the type must be followed by digits or the end */
            if (e == n || (s[e] >= '0' && s[e] <= '9')) {
                type = k;
                i = e;
            }
        }
    }
    if (type < 0) return PP_ERR_PARSE;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, nm++) {
        mb = mb * 10 + (uint32_t)(s[i] - '0');
        if (mb > 0xffff) return PP_ERR_PARSE;
    }
    if (i != n) return PP_ERR_PARSE;
    if (!PP__NO_MB(type) != (nm > 0)) return PP_ERR_PARSE;
    *out = pp__act(type, (int)stage, (int)mb);
    return PP_OK;
}

static void pp__csv(splitcore__out *o, const pp_plan *p)
{
    int r, i;
    for (r = 0; r < p->nranks; r++) {
        for (i = 0; i < p->len[r]; i++) {
            if (i) splitcore__putc(o, ',');
            pp__put_action(o, pp__row(p, r)[i]);
        }
        /* a row of one idle cell is `""`, as Python's csv writes it (a blank line is an empty row) */
        if (p->len[r] == 1 && pp__row(p, r)[0].type == PP_IDLE) splitcore__puts(o, "\"\"");
        splitcore__puts(o, "\r\n");
    }
}

PP__DEF int pp_csv_write(const pp_plan *p, char *buf, size_t cap, size_t *needed)
{
    int rc;
    if (!p) return PP_ERR_NULL;
    if ((rc = pp__plan_rows_check(p, NULL)) != PP_OK) return rc;
    PP__EMIT(pp__csv(&o_, p));
}

/* Pass 1 (write == 0) checks and counts; pass 2 fills the plan. */
static int pp__csv_pass(pp_plan *p, const char *text, size_t n, int write, int *rows, pp_diag *diag, uint8_t *map,
                        int *lowered)
{
    size_t i = 0;
    int r = 0;
    while (i < n) {
        size_t e = i;
        int col = 0;
        while (e < n && text[e] != '\n') e++;
        {
            size_t line_end = e, c0 = i;
            if (line_end > i && text[line_end - 1] == '\r') line_end--;
            if (r >= p->nranks) {
                pp__diag(diag, r, -1, pp__none);
                return PP_ERR_RANKS;
            }
            {
                size_t c = c0;
                for (;;) {
                    size_t ce = c;
                    pp_action a;
                    int rc;
                    while (ce < line_end && text[ce] != ',') ce++;
                    if (!(line_end == c0 && col == 0)) { /* a blank line is an empty row */
                        size_t q = ce - c >= 2 && text[c] == '"' && text[ce - 1] == '"'; /* "cell" */
                        rc = pp_action_parse(text + c + q, ce - c - 2 * q, &a);
                        if (rc) {
                            pp__diag(diag, r, col, pp__none);
                            return rc;
                        }
                        if (a.type != PP_IDLE && (a.stage >= p->nstages || (!PP__NO_MB(a.type) && a.mb >= p->nmb))) {
                            pp__diag(diag, r, col, a);
                            return PP_ERR_ACTION;
                        }
                        if (col >= p->cap) {
                            pp__diag(diag, r, col, a);
                            return PP_ERR_TOO_SMALL;
                        }
                        if (a.type != PP_IDLE) {
                            if (map[a.stage] != 0xff && map[a.stage] != r) {
                                pp__diag(diag, r, col, a);
                                return PP_ERR_STAGE_RANK;
                            }
                            map[a.stage] = (uint8_t)r;
                            if (a.type >= PP_SEND_F && a.type <= PP_RECV_B) *lowered = 1;
                        }
                        if (write) pp__row(p, r)[col] = a;
                        col++;
                    }
                    if (ce >= line_end) break;
                    c = ce + 1;
                }
            }
            if (write) p->len[r] = col;
        }
        r++;
        i = e < n ? e + 1 : n;
    }
    *rows = r;
    return PP_OK;
}

PP__DEF int pp_csv_read(pp_plan *p, const char *text, size_t n, pp_diag *diag)
{
    uint8_t map[PP_MAX_STAGES];
    int rows = 0, lowered = 0, rc, s;
    if (!p || !text) return PP_ERR_NULL;
    if ((rc = pp__plan_check(p, NULL)) != PP_OK) return rc; /* its rows are replaced */
    PP_MEMSET(map, 0xff, sizeof map);
    rc = pp__csv_pass(p, text, n, 0, &rows, diag, map, &lowered);
    if (rc) return rc;
    if (rows != p->nranks) {
        pp__diag(diag, rows, -1, pp__none);
        return PP_ERR_RANKS;
    }
    PP_MEMSET(map, 0xff, sizeof map);
    pp__csv_pass(p, text, n, 1, &rows, NULL, map, &lowered);
    for (s = 0; s < p->nstages; s++)
        if (map[s] != 0xff) p->stage_rank[s] = map[s];
    p->lowered = lowered;
    p->mailbox = 0; /* new tables: not proven */
    return PP_OK;
}

/* "<type><name><suffix><index>[n] = {" (index < 0: no index) */
static void pp__put_array(splitcore__out *o, const char *type, const char *name, const char *suffix, int index,
                          uint32_t n)
{
    splitcore__puts(o, type);
    splitcore__puts(o, name);
    splitcore__puts(o, suffix);
    if (index >= 0) splitcore__putu(o, (uint32_t)index);
    splitcore__puts(o, "[");
    splitcore__putu(o, n);
    splitcore__puts(o, "] = {");
}

static void pp__emit_c(splitcore__out *o, const pp_plan *p, const char *name)
{
    int r, i, s, mbox = p->mailbox > 0 && p->mailbox <= 255 ? p->mailbox : 0;
    splitcore__puts(o, "/* splitcore pipeline plan: ");
    splitcore__puts(o, pp_schedule_name(p->schedule));
    splitcore__puts(o, ", ");
    splitcore__putu(o, (uint32_t)p->nranks);
    splitcore__puts(o, " ranks, ");
    splitcore__putu(o, (uint32_t)p->nstages);
    splitcore__puts(o, " stages, ");
    splitcore__putu(o, (uint32_t)p->nmb);
    splitcore__puts(o, p->lowered ? " microbatches, lowered */\n" : " microbatches */\n");
    splitcore__puts(o, "#include <splitcore/pipeline.h>\n\n");
    if (mbox) { /* the depth pp_mailbox_depth proved: a PP_NO_TAKEIN build needs that room */
        splitcore__puts(o, "/* runs without take-in over mailboxes of this many transfers per ordered pair of ranks\n"
                           "   (pp_mailbox_depth; times the messages per transfer) */\n#define ");
        splitcore__puts(o, name);
        splitcore__puts(o, "_MAILBOX_DEPTH ");
        splitcore__putu(o, (uint32_t)mbox - 1u);
        splitcore__puts(o, "\n#if PP_NO_TAKEIN && PP_MAILBOX_SLOTS < ");
        splitcore__putu(o, (uint32_t)mbox - 1u);
        splitcore__puts(o, "\n#error \"");
        splitcore__puts(o, name);
        splitcore__puts(o, ": PP_MAILBOX_SLOTS is below the mailbox depth this plan was proven for\"\n#endif\n\n");
    } else {
        splitcore__puts(o, "#if PP_NO_TAKEIN\n#error \"");
        splitcore__puts(o, name);
        splitcore__puts(o, ": not proven to run without take-in (pp_mailbox_depth before pp_emit_c)\"\n#endif\n\n");
    }
    for (r = 0; r < p->nranks; r++) {
        pp__put_array(o, "static const pp_action ", name, "_r", r, (uint32_t)(p->len[r] ? p->len[r] : 1));
        if (!p->len[r]) splitcore__puts(o, "PP_ACTION(PP_IDLE, 0, 0)");
        for (i = 0; i < p->len[r]; i++) {
            pp_action a = pp__row(p, r)[i];
            splitcore__puts(o, i % 4 ? " " : "\n    ");
            splitcore__puts(o, "PP_ACTION(");
            splitcore__puts(o, pp__type_macros[a.type]);
            splitcore__puts(o, ", ");
            splitcore__putu(o, a.stage);
            splitcore__puts(o, ", ");
            splitcore__putu(o, a.mb);
            splitcore__puts(o, "),");
        }
        splitcore__puts(o, "\n};\n");
    }
    pp__put_array(o, "static const uint8_t ", name, "_stage_rank", -1, (uint32_t)p->nstages);
    for (s = 0; s < p->nstages; s++) {
        if (s) splitcore__puts(o, ", ");
        splitcore__putu(o, p->stage_rank[s]);
    }
    splitcore__puts(o, "};\n");
    if (p->nskips) { /* the skip routes, for pp_exec_cfg.skips */
        splitcore__puts(o, "#define ");
        splitcore__puts(o, name);
        splitcore__puts(o, "_NSKIPS ");
        splitcore__putu(o, (uint32_t)p->nskips);
        pp__put_array(o, "\nconst pp_route ", name, "_skips", -1, (uint32_t)p->nskips);
        for (s = 0; s < p->nskips; s++) {
            const pp_route *x = &p->skip[s];
            uint32_t f[6];
            int j;
            f[0] = x->stash, f[1] = x->pop, f[2] = x->stash_i, f[3] = x->pop_i, f[4] = x->src, f[5] = x->dst;
            splitcore__puts(o, s ? ", {" : "{");
            for (j = 0; j < 6; j++) {
                if (j) splitcore__puts(o, ", ");
                splitcore__putu(o, f[j]);
            }
            splitcore__puts(o, "}");
        }
        splitcore__puts(o, "};\n");
    }
    splitcore__puts(o, "const pp_table ");
    splitcore__puts(o, name);
    splitcore__puts(o, "[");
    splitcore__putu(o, (uint32_t)p->nranks);
    splitcore__puts(o, "] = {\n");
    for (r = 0; r < p->nranks; r++) {
        splitcore__puts(o, "    {");
        splitcore__puts(o, name);
        splitcore__puts(o, "_r");
        splitcore__putu(o, (uint32_t)r);
        splitcore__puts(o, ", ");
        splitcore__putu(o, (uint32_t)p->len[r]);
        splitcore__puts(o, ", ");
        splitcore__putu(o, (uint32_t)r);
        splitcore__puts(o, ", ");
        splitcore__putu(o, (uint32_t)p->nranks);
        splitcore__puts(o, ", ");
        splitcore__putu(o, (uint32_t)p->nstages);
        splitcore__puts(o, ", ");
        splitcore__putu(o, (uint32_t)p->nmb);
        splitcore__puts(o, ", ");
        splitcore__putu(o, (uint32_t)pp_peak_inflight(p, r));
        splitcore__puts(o, ", ");
        splitcore__puts(o, name);
        splitcore__puts(o, "_stage_rank, ");
        splitcore__putu(o, (uint32_t)mbox);
        splitcore__puts(o, "},\n");
    }
    splitcore__puts(o, "};\n");
}

PP__DEF int pp_emit_c(const pp_plan *p, const char *name, char *buf, size_t cap, size_t *needed)
{
    const char *c;
    int i;
    if (!p || !name) return PP_ERR_NULL;
    if ((i = pp__plan_rows_check(p, NULL)) != PP_OK) return i;
    for (i = 0; i < p->nranks; i++)
        if (p->len[i] > UINT16_MAX) return PP_ERR_ARG;
    for (c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
              (c != name && *c >= '0' && *c <= '9')))
            return PP_ERR_ARG;
    if (!*name) return PP_ERR_ARG;
    PP__EMIT(pp__emit_c(&o_, p, name));
}

static void pp__timeline(splitcore__out *o, const pp_plan *p, int width)
{
    int r, i;
    for (r = 0; r < p->nranks; r++) {
        splitcore__putc(o, 'r');
        splitcore__putu(o, (uint32_t)r);
        splitcore__puts(o, r < 10 && p->nranks > 10 ? "  |" : " |");
        for (i = 0; i < p->len[r]; i++) {
            pp_action a = pp__row(p, r)[i];
            splitcore__out cnt;
            size_t k;
            cnt.buf = NULL;
            cnt.cap = 0;
            cnt.n = 0;
            pp__put_action(&cnt, a);
            splitcore__putc(o, ' ');
            if (a.type == PP_IDLE) {
                splitcore__putc(o, '.');
                cnt.n = 1;
            } else
                pp__put_action(o, a);
            for (k = cnt.n; k < (size_t)width; k++) splitcore__putc(o, ' ');
        }
        splitcore__putc(o, '\n');
    }
}

PP__DEF int pp_timeline(const pp_plan *p, char *buf, size_t cap, size_t *needed)
{
    int r, i, width = 1;
    if (!p) return PP_ERR_NULL;
    if ((r = pp__plan_rows_check(p, NULL)) != PP_OK) return r;
    for (r = 0; r < p->nranks; r++)
        for (i = 0; i < p->len[r]; i++) {
            splitcore__out cnt;
            cnt.buf = NULL;
            cnt.cap = 0;
            cnt.n = 0;
            pp__put_action(&cnt, pp__row(p, r)[i]);
            if ((int)cnt.n > width) width = (int)cnt.n;
        }
    PP__EMIT(pp__timeline(&o_, p, width));
}

static void pp__trace(splitcore__out *o, const pp_event *ev, int n)
{
    int i;
    splitcore__puts(o, "{\"traceEvents\":[");
    for (i = 0; i < n; i++) {
        int t = ev[i].action.type;
        splitcore__puts(o, i ? ",\n" : "\n");
        splitcore__puts(o, "{\"name\":\"");
        pp__put_action(o, ev[i].action);
        splitcore__puts(o, t >= PP_F && t <= PP_W ? "\",\"cat\":\"computation\"" : "\",\"cat\":\"communication\"");
        splitcore__puts(o, ",\"ph\":\"X\",\"pid\":");
        splitcore__putu(o, ev[i].rank);
        splitcore__puts(o, ",\"tid\":");
        splitcore__putu(o, ev[i].rank);
        splitcore__puts(o, ",\"ts\":");
        splitcore__putu(o, ev[i].t_start);
        splitcore__puts(o, ",\"dur\":");
        splitcore__putu(o, ev[i].t_end >= ev[i].t_start ? ev[i].t_end - ev[i].t_start : 0);
        splitcore__putc(o, '}');
    }
    splitcore__puts(o, "\n]}\n");
}

PP__DEF int pp_trace_json(const pp_event *ev, int n, char *buf, size_t cap, size_t *needed)
{
    int i;
    if (!ev && n > 0) return PP_ERR_NULL;
    if (n < 0) return PP_ERR_ARG;
    for (i = 0; i < n; i++)
        if (ev[i].action.type >= PP_TYPE_COUNT) return PP_ERR_ACTION;
    PP__EMIT(pp__trace(&o_, ev, n));
}

#endif /* PP_NO_PLANNER */

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_IMPLEMENTATION */

#if !PP_NO_PLANNER
#include "pipeline_model.h" /* skip layouts and shared layers: a model's checks */
#endif
#if !PP_NO_EXECUTOR
#include "pipeline_exec.h" /* the executor (its own module) */
#endif
