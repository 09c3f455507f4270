/* pipeline.h — pipeline parallelism: partitions, schedules, checks, export, executor (splitcore)

   torch.distributed.pipelining for microcontrollers. A model is a sequential
   list of layers; a balance list cuts it into stages (fairscale's checks, or an exact
   min-max partition by cost or memory); a schedule (GPipe, 1F1B, Interleaved1F1B,
   LoopedBFS, InterleavedZeroBubble/ZB1P, ZBV, forward-only) becomes per-rank action tables
   in exactly PyTorch's order; a lowering pass inserts SEND/RECV like torch's
   _add_send_recv; a validator applies torch's _validate_schedule rules; a simulator finds
   deadlocks and predicts makespan, bubble and peak in-flight activations (= the executor's
   static slot count). Plans read and write torch's action strings and CSV, and are emitted
   as C `const` tables so firmware links only the executor, which runs one rank's table
   over any pg.h port with static slots (training with I/W split and checkpointing, or
   inference streaming; an error on one rank aborts every rank). No heap, C99, C++-clean.

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
                                       9. Executor (declarations; definitions in 8)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE): PIPELINE_IMPLEMENTATION
   (the definitions, in exactly one .c file), PIPELINE_STATIC (every function static), and the
   macros of section 1, each with its default and what it does: capacities (PP_MAX_RANKS,
   PP_MAX_STAGES), what is built (PP_NO_EXECUTOR, PP_NO_PLANNER, PP_NO_TAKEIN, PP_NO_TRAINING:
   flags of value 0 or 1, a bare -DPP_NO_TAKEIN meaning 1), the executor's port settings
   (PP_MAILBOX_SLOTS, PP_AGREE_TAG, PP_WAIT_SLICE_MAX_MS) and the overridable PP_ASSERT,
   PP_MEMCPY, PP_MEMSET, PP_MEMMOVE. The executor's definitions call pg.h and microbatch.h:
   implement them in the same file (or SPLITCORE_IMPLEMENTATION implements all three).

   Errors are negative return values (enum pp_err); pp_strerror() names them, pp_diag says
   where (rank, step, action). Bad input never writes to the caller's outputs; the codes
   each function returns for each kind of bad input are in docs/error-contract.md
   (generated from the test that asserts them).

   Threads, interrupts, memory: planning (sections 3-7) works only on its arguments (no
   static or global state, no locks, no heap), so calls on distinct plans are safe from
   any thread; a plan being written (build, lower, csv_read) must not be read meanwhile.
   Every buffer is the caller's, sized by a query: pp_plan_bytes, pp_sim_bytes,
   pp_exec_query (pp_exec_bytes), and (buf, cap, needed) for text. The executor (section 9)
   runs one rank per thread or core and blocks in the port (pg.h), so it is never called from
   an ISR; its layer, input, loss and output callbacks run in that thread. Stack use is bounded
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
/* 1: leave the executor (section 9) out: planning only, and no pg.h needed. */
#ifndef PP_NO_EXECUTOR
#define PP_NO_EXECUTOR 0
#endif
/* 1: the executor alone (firmware with an emitted plan): no schedules, validator, simulator,
   exporters or pp_strerror. */
#ifndef PP_NO_PLANNER
#define PP_NO_PLANNER 0
#endif
/* 1: an executor that does not take in early messages while it waits (section 9): smaller,
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
#if SPLITCORE__EMPTY(PP_NO_TAKEIN)
#error "pipeline.h: PP_NO_TAKEIN is defined without a value: define it to 1 (or 0)"
#elif PP_NO_TAKEIN != 0 && PP_NO_TAKEIN != 1
#error "pipeline.h: PP_NO_TAKEIN must be 0 or 1"
#endif
#if SPLITCORE__EMPTY(PP_NO_TRAINING)
#error "pipeline.h: PP_NO_TRAINING is defined without a value: define it to 1 (or 0)"
#elif PP_NO_TRAINING != 0 && PP_NO_TRAINING != 1
#error "pipeline.h: PP_NO_TRAINING must be 0 or 1"
#endif
#if PP_MAILBOX_SLOTS < 0
#error "pipeline.h: PP_MAILBOX_SLOTS must be >= 0"
#endif
#if PP_AGREE_TAG < 0 || PP_AGREE_TAG > 0xFFFF
#error "pipeline.h: PP_AGREE_TAG must be a pg user tag, 0..PG_TAG_MAX"
#endif
#if PP_WAIT_SLICE_MAX_MS < 1
#error "pipeline.h: PP_WAIT_SLICE_MAX_MS must be >= 1"
#endif

#include <stddef.h>
#include <stdint.h>
#include "microbatch.h"
#if !PP_NO_EXECUTOR
#include "ports/pg.h" /* the executor talks to any port through pg.h */
#endif
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

/* Action types; the letters are PyTorch's _ComputationType values. */
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
    PP_TYPE_COUNT = 12
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
    int32_t mailbox; /* 1 + the depth pp_mailbox_depth proved; 0: not proven
                                        (every writer of the plan resets it) */
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
/* A layer. Stages are contiguous runs of layers. The executor (section 9) calls the
   functions (forward always; backward_input for every layer but the model's first, and
   backward_weight where set, in training); planning uses the sizes and cost. */
typedef struct pp_layer {
    int (*forward)(void *self, const mb_tensor *x, mb_tensor *y);
    int (*backward_input)(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx);
    int (*backward_weight)(void *self, const mb_tensor *x, const mb_tensor *dy);
    void *self;
    uint32_t param_bytes; /* parameters */
    uint32_t act_bytes;   /* output activation per microbatch */
    uint32_t cost;        /* relative time (given or profiled) */
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
/* rank's row of the plan as the executor walks it (a view into the plan's storage, no copy).
   PP_ERR_NULL, PP_ERR_ARG (rank out of range). */
PP_API int pp_plan_table(const pp_plan *plan, int rank, pp_table *out);
/* Peak number of activations held at once on `rank` (F .. its B or W), in table order.
   A plan without any backward action holds one at a time. */
PP_API int pp_peak_inflight(const pp_plan *plan, int rank);

/* ---- 5. Lowering --------------------------------------------------------------------- */
/* torch's _add_send_recv applied to the table as it is: insert SEND_F/RECV_F/SEND_B/RECV_B
   between ranks; an idle slot takes a round of the insertion, then is dropped
   (pp_lower_mode(..., PP_LOWER_ROUNDS, ...)). */
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
   executor runs them. */
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

/* ---- 9. Executor ------------------------------------------------------------------------
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
   mailbox, so the plan must carry the deadlock freedom instead. pp_mailbox_depth (section 6)
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
#if !PP_NO_EXECUTOR
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
PP_API int pp_exec_query(const pp_exec_cfg *cfg, const pp_table *t, size_t *bytes);
/* The same as a value: 0 means cfg or t is invalid (pp_exec_query says why). */
PP_API size_t pp_exec_bytes(const pp_exec_cfg *cfg, const pp_table *t);
/* Check cfg/table/group and lay out storage (8-byte aligned, >= pp_exec_query's bytes). */
PP_API int pp_exec_init(pp_exec *e, const pp_exec_cfg *cfg, const pp_table *t, pg_group *g, void *storage,
                        size_t bytes);
/* One step: every action of the table. Returns PP_OK or the same pipeline code on every rank
   (PP_ERR_LAYER, PP_ERR_COMM or the executor's own; pp_exec.err and err_rank say more). */
PP_API int pp_exec_run(pp_exec *e);
/* Last stage, after a training step: the per-microbatch losses merged with `spec`
   (NULL: sum; MB_REDUCE_CUSTOM(r) for a custom reducer). Needs microbatch.h's
   implementation. PP_ERR_ARG on ranks without the last stage. */
PP_API int pp_exec_loss(const pp_exec *e, const mb_spec *spec, double *loss);
#endif /* PP_NO_EXECUTOR */

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
    return a.stage < p->nstages && (a.type >= PP_UNSHARD || a.mb < p->nmb);
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

/* Per-rank row capacity: >= every generator's compute table and any lowering (7 per
   local (stage, microbatch): F, I, W, SEND_F, SEND_B, RECV_F, RECV_B; PP_LOWER_TORCH adds an
   UNSHARD, a RESHARD and a REDUCE_GRAD per stage, and with more than 3 stages per rank up to
   an UNSHARD and a RESHARD per compute action). */
static long pp__cap(int P, int V, int M)
{
    return 7L * V * M + 4L * V * P + 4L * P + 8 + (V > 3 ? 6L * V * M + 8 : 0);
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

PP__DEF int pp_peak_inflight(const pp_plan *p, int rank)
{
    int i, r, cur = 0, peak = 0, bwd = 0;
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
    for (i = 0; i < p->len[rank]; i++) {
        int t = pp__row(p, rank)[i].type;
        if (t == PP_F) {
            if (++cur > peak) peak = cur;
            if (!bwd) cur--;
        } else if ((t == PP_B || t == PP_W) && cur > 0)
            cur--;
    }
    return peak;
}

PP__DEF int pp_plan_table(const pp_plan *p, int rank, pp_table *out)
{
    int peak;
    if (!p || !out) return PP_ERR_NULL;
    if ((peak = pp__plan_rows_check(p, NULL)) != PP_OK) return peak;
    if (rank < 0 || rank >= p->nranks || p->len[rank] > UINT16_MAX) return PP_ERR_ARG;
    peak = pp_peak_inflight(p, rank);
    out->actions = pp__row(p, rank);
    out->len = (uint16_t)p->len[rank];
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

PP__DEF int pp_lower(const pp_plan *in, pp_plan *out, void *storage, size_t bytes, pp_diag *diag)
{
    return pp_lower_mode(in, out, storage, bytes, PP_LOWER_ROUNDS, diag);
}

PP__DEF int pp_lower_mode(const pp_plan *in, pp_plan *out, void *storage, size_t bytes, int mode, pp_diag *diag)
{
    pp_plan t;
    const pp_action *pre[PP_MAX_RANKS];
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
    t.lowered = 1;
    for (r = 0; r < in->nranks; r++) { /* what each rank lowers: its row, or torch's expansion parked
                                          at the end of its output row (read before written over) */
        cur[r] = 0;
        pre[r] = pp__row(in, r);
        len[r] = in->len[r];
        if (mode == PP_LOWER_TORCH) {
            pp_action *row = pp__row(&t, r);
            len[r] = pp__fsdp_row(in, pre[r], in->len[r], row, cap);
            if (len[r] < 0) return PP_ERR_TOO_SMALL;
            PP_MEMMOVE(row + cap - len[r], row, (size_t)len[r] * sizeof(pp_action));
            pre[r] = row + cap - len[r];
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
            a = pre[r][cur[r]];
            if (a.type == PP_F && a.stage != 0)
                ready = pp__in_row(row, t.len[r], pp__act(PP_RECV_F, a.stage, a.mb)) ||
                        pp__in_row(row, t.len[r], pp__act(PP_F, a.stage - 1, a.mb));
            else if ((a.type == PP_I || a.type == PP_B) && a.stage != in->nstages - 1)
                ready = pp__in_row(row, t.len[r], pp__act(PP_RECV_B, a.stage, a.mb)) ||
                        pp__in_row(row, t.len[r], pp__act(PP_I, a.stage + 1, a.mb)) ||
                        pp__in_row(row, t.len[r], pp__act(PP_B, a.stage + 1, a.mb));
            if (!ready) continue;
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
            }
            progress = 1;
        }
        if (!left) break;
        if (!progress) {
            for (r = 0; r < in->nranks; r++)
                if (cur[r] < len[r]) {
                    pp__diag(diag, r, cur[r], pre[r][cur[r]]);
                    break;
                }
            return PP_ERR_DEADLOCK;
        }
    }
    *out = t;
    return PP_OK;
}

/* ---- validation: torch's _validate_schedule ---- */
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
    if (!p || pp__plan_check(p, NULL) != PP_OK) return 0;
    return 6u * (size_t)p->nstages * (size_t)p->nmb * sizeof(uint32_t);
}

#define PP__NOT 0xffffffffu
enum { PP__TF, PP__TB, PP__TSF, PP__TSB, PP__TRF, PP__TRB };

static uint32_t pp__cost(const pp_costs *c, pp_action a)
{
    switch (a.type) {
    case PP_F: return c->stage_f ? c->stage_f[a.stage] : c->f;
    case PP_B: return c->stage_b ? c->stage_b[a.stage] : c->b;
    case PP_I: return c->stage_i ? c->stage_i[a.stage] : c->i;
    case PP_W: return c->stage_w ? c->stage_w[a.stage] : c->w;
    case PP_SEND_F:
    case PP_SEND_B: return c->send;
    case PP_RECV_F:
    case PP_RECV_B: return c->recv;
    default: return 0;
    }
}

/* Whether rank r's next action a has its inputs (work planes t), and from when (*dep). */
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
    default: return 1; /* W, UNSHARD, RESHARD, REDUCE_GRAD: always ready */
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
        for (k = 0; k < 6 * plane; k++) t[k] = PP__NOT;
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
            if (!pp__ready(p, c, t, pp__row(p, r)[cur[r]], r, &dep)) continue;
            start = clock[r];
            if (c->cores && unit[r % c->cores] > start) start = unit[r % c->cores];
            if (pp__row(p, r)[cur[r]].type != PP_RECV_F && pp__row(p, r)[cur[r]].type != PP_RECV_B && dep > start)
                start = dep;
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
   gradient into s; PP__NOT until sent, then its posting order, | PP__TAKEN once received. */
#define PP__TAKEN 0x80000000u

/* Sender and receiver ranks of transfer k (< 0 for a transfer that cannot exist). */
static int pp__tx_pair(const pp_plan *p, size_t k, int *dst)
{
    int S = p->nstages, grad = (int)(k / ((size_t)S * (size_t)p->nmb)), s = (int)(k / (size_t)p->nmb) % S;
    int src = s + (grad ? 1 : -1);
    if (src < 0 || src >= S) return -1;
    *dst = p->stage_rank[s];
    return p->stage_rank[src];
}

/* Transfers src -> dst that hold a mailbox slot: from the oldest one not taken yet. */
static uint32_t pp__window(const pp_plan *p, const uint32_t *t, int src, int dst)
{
    size_t k, n = 2u * (size_t)p->nstages * (size_t)p->nmb;
    uint32_t oldest = PP__NOT, w = 0;
    int d;
    for (k = 0; k < n; k++)
        if (t[k] != PP__NOT && !(t[k] & PP__TAKEN) && t[k] < oldest && pp__tx_pair(p, k, &d) == src && d == dst)
            oldest = t[k];
    for (k = 0; k < n; k++)
        if (t[k] != PP__NOT && (t[k] & ~PP__TAKEN) >= oldest && pp__tx_pair(p, k, &d) == src && d == dst) w++;
    return w;
}

/* The transfer rank r's action a takes in (F: activation, I/B: gradient from another rank)
   or posts (SEND_F/SEND_B), or -1. */
static int pp__tx_of(const pp_plan *p, pp_action a, int r, int *send)
{
    int s = a.stage, grad = a.type != PP_F && a.type != PP_SEND_F, to = s;
    *send = a.type == PP_SEND_F || a.type == PP_SEND_B;
    if (*send)
        to = s + (grad ? -1 : 1);
    else if (a.type != PP_F && a.type != PP_I && a.type != PP_B)
        return -1;
    else {
        int from = s + (grad ? 1 : -1);
        if (from < 0 || from >= p->nstages || p->stage_rank[from] == r) return -1;
    }
    if (to < 0 || to >= p->nstages) return -1;
    return (int)(((size_t)grad * (size_t)p->nstages + (size_t)to) * (size_t)p->nmb + a.mb);
}

/* Whether rank r's next action can go on with mailboxes of `depth` transfers; if so its
   transfer is posted (*seq: the posting order) or taken. */
static int pp__mailbox_step(const pp_plan *p, uint32_t depth, uint32_t *t, const int *cur, int r, uint32_t *seq)
{
    int send, dst = 0, s2 = 0, x = pp__tx_of(p, pp__row(p, r)[cur[r]], r, &send), ok;
    if (x < 0) return 1; /* no transfer */
    if (!send) {         /* F / I / B takes its data */
        ok = t[x] != PP__NOT && !(t[x] & PP__TAKEN);
        if (ok) t[x] |= PP__TAKEN;
        return ok;
    }
    ok = t[x] == PP__NOT && pp__tx_pair(p, (size_t)x, &dst) == r;
    if (ok && depth == 0) /* no buffer: only once the peer waits for this very transfer */
        ok = cur[dst] < p->len[dst] && pp__tx_of(p, pp__row(p, dst)[cur[dst]], dst, &s2) == x && !s2;
    ok = ok && pp__window(p, t, r, dst) < (depth ? depth : 1u);
    if (ok) t[x] = (*seq)++;
    return ok;
}

/* One run of every row with mailboxes of `depth` transfers: PP_OK, or PP_ERR_MAILBOX with
   diag naming the first waiting rank. */
static int pp__mailbox_run(const pp_plan *p, uint32_t depth, uint32_t *t, pp_diag *diag)
{
    int cur[PP_MAX_RANKS] = {0}, r, moved, left = 0;
    size_t k, n = 2u * (size_t)p->nstages * (size_t)p->nmb;
    uint32_t seq = 0;
    for (k = 0; k < n; k++) t[k] = PP__NOT;
    do {
        moved = 0;
        for (r = 0; r < p->nranks; r++)
            while (cur[r] < p->len[r] && pp__mailbox_step(p, depth, t, cur, r, &seq)) {
                cur[r]++;
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
    "", "F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD"};
static const char *const pp__type_macros[PP_TYPE_COUNT] = {"PP_IDLE",   "PP_F",       "PP_B",       "PP_I",
                                                           "PP_W",      "PP_SEND_F",  "PP_RECV_F",  "PP_SEND_B",
                                                           "PP_RECV_B", "PP_UNSHARD", "PP_RESHARD", "PP_REDUCE_GRAD"};

static void pp__put_action(splitcore__out *o, pp_action a)
{
    if (a.type == PP_IDLE || a.type >= PP_TYPE_COUNT) return;
    splitcore__putu(o, a.stage);
    splitcore__puts(o, pp__type_names[a.type]);
    if (a.type < PP_UNSHARD) splitcore__putu(o, a.mb);
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
    if ((type < PP_UNSHARD) != (nm > 0)) return PP_ERR_PARSE;
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
                        if (a.type != PP_IDLE && (a.stage >= p->nstages || (a.type < PP_UNSHARD && a.mb >= p->nmb))) {
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
        splitcore__puts(o, "static const pp_action ");
        splitcore__puts(o, name);
        splitcore__puts(o, "_r");
        splitcore__putu(o, (uint32_t)r);
        splitcore__puts(o, "[");
        splitcore__putu(o, (uint32_t)(p->len[r] ? p->len[r] : 1));
        splitcore__puts(o, "] = {");
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
    splitcore__puts(o, "static const uint8_t ");
    splitcore__puts(o, name);
    splitcore__puts(o, "_stage_rank[");
    splitcore__putu(o, (uint32_t)p->nstages);
    splitcore__puts(o, "] = {");
    for (s = 0; s < p->nstages; s++) {
        if (s) splitcore__puts(o, ", ");
        splitcore__putu(o, p->stage_rank[s]);
    }
    splitcore__puts(o, "};\nconst pp_table ");
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

/* ---- executor ---- */
#if !PP_NO_EXECUTOR && !defined(PP_EXECUTOR_IMPLEMENTED)
#define PP_EXECUTOR_IMPLEMENTED
#if !defined(PG_IMPLEMENTATION) && (defined(PG_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "pipeline.h: PIPELINE_IMPLEMENTATION's executor needs PG_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
#endif
#if !defined(MICROBATCH_IMPLEMENTATION) && (defined(MICROBATCH_STATIC) || !defined(SPLITCORE_SEPARATE_IMPLEMENTATIONS))
#error \
    "pipeline.h: PIPELINE_IMPLEMENTATION's executor needs MICROBATCH_IMPLEMENTATION in the same file (or SPLITCORE_IMPLEMENTATION)"
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

PP__DEF int pp_exec_query(const pp_exec_cfg *c, const pp_table *t, size_t *bytes)
{
    pp_exec x;
    size_t need, at;
    int rc;
    if (!bytes) return PP_ERR_NULL;
    if ((rc = pp__xsize(c, t, &x, &need, &at)) == PP_OK) *bytes = need;
    return rc;
}

PP__DEF size_t pp_exec_bytes(const pp_exec_cfg *c, const pp_table *t)
{
    size_t n = 0;
    return pp_exec_query(c, t, &n) ? 0 : n;
}

PP__DEF int pp_exec_init(pp_exec *e, const pp_exec_cfg *c, const pp_table *t, pg_group *g, void *storage, size_t bytes)
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
   recover meets it (section 9). */
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

PP__DEF int pp_exec_run(pp_exec *e)
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

PP__DEF int pp_exec_loss(const pp_exec *e, const mb_spec *spec, double *loss)
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
#endif /* PP_NO_EXECUTOR */

#ifdef __cplusplus
}
#endif
#endif /* PIPELINE_IMPLEMENTATION */
