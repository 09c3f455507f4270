/* splitcore_base.h — release, configuration file and the one error space every splitcore header shares (splitcore)

   Every splitcore header includes this one first. It holds what no single module owns:
   the release numbers (headers of two releases included together are an error), the
   user's configuration file (SPLITCORE_CONFIG_FILE, seen before any default), the error
   codes of every module in one registry, and splitcore_strerror(), which names any code
   of the library. Each module owns a disjoint range of negative codes and writes its list
   once, here, one X-macro line per code (name, value, message): its enum, its own
   <pfx>_strerror() and splitcore_strerror() are all expanded from that line, so a code and
   its message cannot drift apart. Calls that fail because a lower layer or a user callback
   failed return their own module's code and keep the lower code in their state
   (dt_comm.err, pp_exec.err), so a returned value is always one module's code.

   Example:
       #define SPLITCORE_IMPLEMENTATION   // implements every splitcore header included below
       #include <splitcore/microbatch.h>
       #include <splitcore/pipeline.h>
       int rc = mb_split_sizes(10, 0, MB_BALANCED, NULL, 0);  // MB_ERR_CHUNKS
       const char *what = splitcore_strerror(rc);             // "chunks", from any module's code
       const char *mine = mb_strerror(rc);                    // the same, microbatch codes only
       int module = splitcore_err_module(PP_ERR_DEADLOCK);   // SPLITCORE_MODULE_PIPELINE

   Contents:
       1. Release and configuration file     3. splitcore_strerror, splitcore_err_module
       2. Error ranges and lists              4. Implementation (SPLITCORE_BASE_IMPLEMENTATION)
                                              5. The text writer (internal, SPLITCORE__TEXT)

   Configuration (define before including, or in SPLITCORE_CONFIG_FILE):
       SPLITCORE_CONFIG_FILE          "file.h" included first by every splitcore header
       SPLITCORE_IMPLEMENTATION       implement every splitcore header included after it in this
                                      file (each header's <NAME>_IMPLEMENTATION, this one's
                                      SPLITCORE_BASE_IMPLEMENTATION included)
       SPLITCORE_BASE_IMPLEMENTATION  emit splitcore_strerror and splitcore_err_module (one file)
       SPLITCORE_STATIC               make every splitcore function static (each <NAME>_STATIC)
       SPLITCORE_SEPARATE_IMPLEMENTATIONS  allow a header's implementation in a file without the
                                      implementations it calls (they are linked from other
                                      files); without it such a file stops with #error naming
                                      the missing macro

   Errors are this header's subject: the ranges are MB_ERR_* -1..-29 (microbatch.h), PG_ERR_* -31..-59 (ports/pg.h and
   its ports), PP_ERR_* -61..-119 (pipeline.h), DT_ERR_* -121..-199 (dtensor.h and its
   modules); 0 is success in every module, and every code is distinct (tests/test_errors.c).
   Values stay within -255 so that each loads as one instruction on Cortex-M. User callbacks
   (layers, reducers) may return any negative value: where the library hands one back it
   says so (mb_merge returns a custom reducer's code as is; the executor keeps a layer's
   code in pp_exec.err). */
#ifndef SPLITCORE_BASE_H
#define SPLITCORE_BASE_H

/* ---- 1. Release and configuration file --------------------------------------------- */
#ifdef SPLITCORE_CONFIG_FILE
#include SPLITCORE_CONFIG_FILE
#endif

/* splitcore release 0.2.0 (CHANGELOG.md). Each header checks that it was written for this
   release, so headers of two releases included together stop the build. */
#define SPLITCORE_VERSION_MAJOR 0
#define SPLITCORE_VERSION_MINOR 2
#define SPLITCORE_VERSION_PATCH 0
#define SPLITCORE_VERSION       (SPLITCORE_VERSION_MAJOR * 10000 + SPLITCORE_VERSION_MINOR * 100 + SPLITCORE_VERSION_PATCH)

#ifdef SPLITCORE_STATIC
#define SPLITCORE_BASE_STATIC
#endif
/* 1 when a configuration flag was defined without a value (`#define PP_NO_TAKEIN`): in an
   #if it expands to ((1 - - 1) == 2). Flags are 0 or 1; each header's configuration block
   uses this to stop with a clear #error instead of a preprocessor syntax error. */
#define SPLITCORE__EMPTY(flag) ((1 - flag - 1) == 2)
#if defined(SPLITCORE_IMPLEMENTATION) && !defined(SPLITCORE_BASE_IMPLEMENTATION)
#define SPLITCORE_BASE_IMPLEMENTATION
#endif
#ifdef SPLITCORE_BASE_STATIC
#define SPLITCORE_API static
#else
#define SPLITCORE_API extern
#endif

/* ---- 2. Error ranges and lists -------------------------------------------------------
   Each module's codes run down from its base without gaps (the strerror functions index
   them); X(name, value, message) per code. The comment after a line says when it occurs. */
#define MB_ERR_BASE       0      /* microbatch.h: -1 .. -29 */
#define PG_ERR_BASE       (-30)  /* ports/pg.h and the ports: -31 .. -59 */
#define PP_ERR_BASE       (-60)  /* pipeline.h: -61 .. -119 */
#define DT_ERR_BASE       (-120) /* dtensor.h and its modules: -121 .. -199 */
#define SPLITCORE_ERR_MIN (-199)

#define MB_ERRORS(X)                                                                                             \
    X(MB_ERR_NULL, -1, "null pointer")       /* a required pointer is NULL */                                    \
    X(MB_ERR_NDIM, -2, "ndim")               /* ndim < 0 or > MB_MAX_DIMS */                                     \
    X(MB_ERR_DIM, -3, "dim")                 /* dim out of range for the tensor's rank */                        \
    X(MB_ERR_DTYPE, -4, "dtype")             /* unknown dtype, dtypes differ, op undefined for it */             \
    X(MB_ERR_SHAPE, -5, "shape")             /* negative or too large sizes, or shapes that must agree do not */ \
    X(MB_ERR_CHUNKS, -6, "chunks")           /* chunk count <= 0 */                                              \
    X(MB_ERR_CHUNK_COUNT, -7, "chunk count") /* values split into different numbers of chunks */                 \
    X(MB_ERR_TOO_SMALL, -8, "too small")     /* caller's output array or storage is too small */                 \
    X(MB_ERR_SPEC, -9, "spec")               /* unknown spec, SPLIT/CONCAT on a scalar, bad reducer */           \
    X(MB_ERR_SPLIT_SIZE, -10, "split size")  /* split dim smaller than the chunk count (MB_STRICT) */            \
    X(MB_ERR_NOT_REPLICATED, -11, "not replicated") /* REPLICATE merge: chunks differ */                         \
    X(MB_ERR_RANGE, -12, "range")                   /* narrow start/length outside the dim */                    \
    X(MB_ERR_ALIGN, -13, "align")                   /* debug-mask storage not 8-byte aligned */                  \
    X(MB_ERR_OVERLAP, -14, "overlap")               /* a custom reducer's output is one of its chunks */

#define PG_ERRORS(X)                                                                                                 \
    X(PG_ERR_NULL, -31, "null pointer")                    /* a required pointer is NULL */                          \
    X(PG_ERR_RANK, -32, "rank out of range")               /* rank or root outside 0..size-1 (or a capacity) */      \
    X(PG_ERR_TAG, -33, "tag out of range")                 /* tag outside 0..PG_TAG_MAX */                           \
    X(PG_ERR_SIZE, -34, "bad size or count")               /* bad count / size, or group size out of range */        \
    X(PG_ERR_TOO_BIG, -35, "message too big")              /* larger than a slot, max_msg or the receive buffer */   \
    X(PG_ERR_TIMEOUT, -36, "timeout")                      /* nothing happened within the group's timeout */         \
    X(PG_ERR_ABORTED, -37, "aborted")                      /* some rank called pg_abort() (world stays aborted) */   \
    X(PG_ERR_MISMATCH, -38, "peers disagree (mismatch)")   /* peers disagree on sizes/counts of a collective */      \
    X(PG_ERR_DTYPE, -39, "bad dtype for this op")          /* unknown dtype, or op undefined for it (AVG on ints) */ \
    X(PG_ERR_OP, -40, "unknown reduction op")              /* unknown reduction op */                                \
    X(PG_ERR_CORRUPT, -41, "corrupt shared state")         /* shared state failed validation (port-detected) */      \
    X(PG_ERR_NO_SLOT, -42, "no free slot")                 /* no free zero-copy slot / unknown slot pointer */       \
    X(PG_ERR_UNSUPPORTED, -43, "unsupported by this port") /* the port lacks this operation */                       \
    X(PG_ERR_NOT_MEMBER, -44, "not a member of the group") /* not in the sub-group (or ranks list invalid) */        \
    X(PG_ERR_PORT, -45, "port system error")               /* the port's underlying system failed (MPI, pthread) */  \
    X(PG_ERR_COPIED, -46, "copied group")                  /* a copy: used where its init did not fill it */         \
    X(PG_ERR_PEER_RESET, -47, "a peer restarted")          /* a core (re)attached: work in flight is lost; recover */

#define PP_ERRORS(X)                                                                                                   \
    X(PP_ERR_NULL, -61, "required pointer is NULL")                  /* a required pointer is NULL */                  \
    X(PP_ERR_ARG, -62, "ranks, stages or microbatches out of range") /* <= 0 or above PP_MAX_*, misaligned */          \
    X(PP_ERR_TOO_SMALL, -63, "buffer or storage too small")          /* caller's buffer or storage */                  \
    X(PP_ERR_SCHEDULE, -64, "unknown schedule")                      /* unknown schedule */                            \
    X(PP_ERR_MICROBATCHES, -65, "number of microbatches must be >= number of stages")   /* where M >= P is needed */   \
    X(PP_ERR_ROUNDS, -66, "microbatches must be a multiple of the number of rounds")    /* interleaved */              \
    X(PP_ERR_STAGES_PER_RANK, -67, "wrong number of stages per rank for this schedule") /* ZBV 2, others 1 */          \
    X(PP_ERR_BALANCE_SUM, -68, "module and sum of balance have different length")       /* sum != layers */            \
    X(PP_ERR_BALANCE_NONPOSITIVE, -69, "all balance numbers must be positive integer")  /* an entry <= 0 */            \
    X(PP_ERR_PARTITIONS, -70, "too few ranks to hold given partitions")              /* more partitions than ranks */  \
    X(PP_ERR_CHUNKS, -71, "number of chunks must be positive integer")               /* chunks <= 0 */                 \
    X(PP_ERR_CHECKPOINT, -72, "checkpoint is not one of always, except_last, never") /* bad mode */                    \
    X(PP_ERR_LAYERS, -73, "fewer layers than partitions")                            /* automatic balance */           \
    X(PP_ERR_ACTION, -74, "invalid action type, stage or microbatch")                /* out of range */                \
    X(PP_ERR_STAGE_RANK, -75, "stage assigned to two ranks")                         /* or not on its mapped rank */   \
    X(PP_ERR_DUPLICATE, -76, "action appears twice")                  /* e.g. a microbatch forwarded twice */          \
    X(PP_ERR_BACKWARD_BEFORE_FORWARD, -77, "backward before forward") /* B or I before its F */                        \
    X(PP_ERR_WEIGHT_BEFORE_INPUT, -78, "backward weight before backward input")  /* W before its I */                  \
    X(PP_ERR_FORWARD_COUNT, -79, "stage does not forward every microbatch once") /* forward count */                   \
    X(PP_ERR_BACKWARD_COUNT, -80, "invalid backward microbatches for a stage")   /* I != W, B + I != M, ... */         \
    X(PP_ERR_DEADLOCK, -81, "schedule is not progressing (deadlock)")            /* simulation, lowering, bubbles */   \
    X(PP_ERR_PARSE, -82, "invalid action string or CSV")                         /* malformed action string or CSV */  \
    X(PP_ERR_RANKS, -83, "schedule has incorrect number of ranks")               /* CSV rows != ranks */               \
    X(PP_ERR_MAP, -84, "invalid stage-to-rank map style")                        /* or "v" with stages % ranks != 0 */ \
    X(PP_ERR_MAILBOX, -85, "needs take-in or deeper mailboxes (not proven for this port)") /* no take-in */            \
    X(PP_ERR_LAYER, -86, "a layer or data callback failed")           /* executor: its code in pp_exec.err */          \
    X(PP_ERR_COMM, -87, "the port failed")                            /* executor: the pg_err in pp_exec.err */        \
    X(PP_ERR_SKIP_UNSTASHED, -88, "skip popped but not stashed")      /* a pop of a name no layer stashes */           \
    X(PP_ERR_SKIP_BACKWARDS, -89, "skip popped before it is stashed") /* the skip would go backwards */                \
    X(PP_ERR_SKIP_TWICE, -90, "skip stashed or popped twice")         /* in one namespace, or by one layer */          \
    X(PP_ERR_SKIP_UNPOPPED, -91, "skip stashed but not popped")       /* stashed, never popped */

#define DT_ERRORS(X)                                                                                               \
    X(DT_ERR_NULL, -121, "null pointer")                /* a required pointer is NULL */                           \
    X(DT_ERR_MESH, -122, "bad mesh")                    /* mesh ndim not 1..DT_MAX_MESH_DIMS, a size < 1 */        \
    X(DT_ERR_RANK, -123, "bad rank")                    /* negative or repeated rank, index out of range */        \
    X(DT_ERR_NOT_MEMBER, -124, "not a mesh member")     /* the rank has no coordinate in the mesh */               \
    X(DT_ERR_MESH_DIM, -125, "bad mesh dim")            /* mesh dim out of range */                                \
    X(DT_ERR_PLACEMENT, -126, "bad placement")          /* unknown placement kind or reduce op */                  \
    X(DT_ERR_PLACEMENT_COUNT, -127, "placement count")  /* placement count != mesh ndim */                         \
    X(DT_ERR_DIM, -128, "bad shard dim")                /* shard dim (or an op's dim) out of range */              \
    X(DT_ERR_SHAPE, -129, "bad shape")                  /* bad ndim, negative size or stride, too many bytes */    \
    X(DT_ERR_DTYPE, -130, "bad dtype")                  /* unknown dtype, or an op undefined for it */             \
    X(DT_ERR_MISMATCH, -131, "mismatch")                /* specs differ in mesh, shape or dtype; tensor != spec */ \
    X(DT_ERR_PARTIAL, -132, "to Partial")               /* redistribute to Partial: public call, or from Shard */  \
    X(DT_ERR_PARTIAL_OP, -133, "Partial op change")     /* Partial(a) -> Partial(b), a != b */                     \
    X(DT_ERR_UNSUPPORTED, -134, "unsupported")          /* Replicate -> Partial(prod) (torch raises too) */        \
    X(DT_ERR_TOO_SMALL, -135, "too small")              /* caller storage, or a DT_MAX_* capacity */               \
    X(DT_ERR_COMM, -136, "collective failed")           /* a pg call failed: dt_comm.err holds its pg_err */       \
    X(DT_ERR_NO_STRATEGY, -137, "no sharding strategy") /* ops: no strategy fits (the cache's failed_op) */        \
    X(DT_ERR_VALUE, -138, "value out of range")         /* a numeric argument out of range (scale, p) */           \
    X(DT_ERR_NODE, -139, "bad graph node")              /* graph: operand not an earlier node, bad plan step */    \
    X(DT_ERR_BATCH, -140, "batch dim analysis failed")  /* graph: analysis failed, conflicting batch sizes */      \
    X(DT_ERR_COPIED, -141, "copied")                    /* a dt_comm or group copied after its init */

/* Expanders: an enum member, a packed message ("a\0b\0..."), a count. */
#define SPLITCORE__ENUM(name, value, msg) name = (value),
#define SPLITCORE__MSG(name, value, msg)  msg "\0"
#define SPLITCORE__ONE(name, value, msg)  +1
#define SPLITCORE__SUM(name, value, msg)  +(value)

/* Counts, and a compile-time check that each list runs down from its base without a gap
   or a repeat (its values sum to the series' sum): the strerror functions rely on it. */
enum splitcore__counts {
    MB__ERR_COUNT = 0 MB_ERRORS(SPLITCORE__ONE),
    PG__ERR_COUNT = 0 PG_ERRORS(SPLITCORE__ONE),
    PP__ERR_COUNT = 0 PP_ERRORS(SPLITCORE__ONE),
    DT__ERR_COUNT = 0 DT_ERRORS(SPLITCORE__ONE)
};
#define SPLITCORE__SERIES(base, n) ((n) * (base) - (n) * ((n) + 1) / 2)
typedef char
    splitcore__mb_codes_contiguous[(0 MB_ERRORS(SPLITCORE__SUM)) == SPLITCORE__SERIES(MB_ERR_BASE, MB__ERR_COUNT) ? 1
                                                                                                                  : -1];
typedef char
    splitcore__pg_codes_contiguous[(0 PG_ERRORS(SPLITCORE__SUM)) == SPLITCORE__SERIES(PG_ERR_BASE, PG__ERR_COUNT) ? 1
                                                                                                                  : -1];
typedef char
    splitcore__pp_codes_contiguous[(0 PP_ERRORS(SPLITCORE__SUM)) == SPLITCORE__SERIES(PP_ERR_BASE, PP__ERR_COUNT) ? 1
                                                                                                                  : -1];
typedef char
    splitcore__dt_codes_contiguous[(0 DT_ERRORS(SPLITCORE__SUM)) == SPLITCORE__SERIES(DT_ERR_BASE, DT__ERR_COUNT) ? 1
                                                                                                                  : -1];
typedef char splitcore__ranges_fit[MB__ERR_COUNT < 30 && PG__ERR_COUNT < 30 && PP__ERR_COUNT < 60 && DT__ERR_COUNT < 80
                                       ? 1
                                       : -1];

/* The n-th string of a packed list "a\0b\0...": the one walk every strerror shares. */
static inline const char *splitcore__nth(const char *packed, unsigned n)
{
    while (n--)
        while (*packed++) {}
    return packed;
}
/* The message of code `err` of a module whose list `packed` is "ok\0" + its messages +
   "unknown error" (count codes from base - 1 down). */
static inline const char *splitcore__message(const char *packed, int err, int base, int count)
{
    unsigned i = err == 0 ? 0u : (unsigned)base - (unsigned)err; /* 1..count name a code; wraps above */
    return splitcore__nth(packed, i > (unsigned)count ? (unsigned)count + 1u : i);
}

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 3. splitcore_strerror, splitcore_err_module -------------------------------------- */
enum splitcore_module {
    SPLITCORE_MODULE_NONE = 0, /* 0 (success), or not a splitcore code */
    SPLITCORE_MODULE_MICROBATCH,
    SPLITCORE_MODULE_PG,
    SPLITCORE_MODULE_PIPELINE,
    SPLITCORE_MODULE_DTENSOR
};
/* The message of any splitcore code: "ok" for 0, "not a splitcore error code" for values
   no module owns (a user callback's own code, say). Never NULL. */
SPLITCORE_API const char *splitcore_strerror(int err);
/* The module that owns code `err` (enum splitcore_module). */
SPLITCORE_API int splitcore_err_module(int err);

#ifdef __cplusplus
}
#endif
#endif /* SPLITCORE_BASE_H */

/* ---- 4. Implementation --------------------------------------------------------------- */
#if defined(SPLITCORE_BASE_IMPLEMENTATION) && !defined(SPLITCORE_BASE_IMPLEMENTED)
#define SPLITCORE_BASE_IMPLEMENTED
#ifdef __cplusplus
extern "C" {
#endif
#ifdef SPLITCORE_BASE_STATIC
#define SPLITCORE__DEF static
#else
#define SPLITCORE__DEF
#endif

/* Per module (enum splitcore_module): its base, its code count, and the codes listed before it. */
static const signed char splitcore__base[5] = {0, MB_ERR_BASE, PG_ERR_BASE, PP_ERR_BASE, DT_ERR_BASE};
static const unsigned char splitcore__count[5] = {0, MB__ERR_COUNT, PG__ERR_COUNT, PP__ERR_COUNT, DT__ERR_COUNT};

SPLITCORE__DEF int splitcore_err_module(int err)
{
    int m;
    for (m = SPLITCORE_MODULE_MICROBATCH; m <= SPLITCORE_MODULE_DTENSOR; m++)
        if (err < splitcore__base[m] && err >= splitcore__base[m] - splitcore__count[m]) return m;
    return SPLITCORE_MODULE_NONE;
}

SPLITCORE__DEF const char *splitcore_strerror(int err)
{
    static const char msg[] = "ok\0" MB_ERRORS(SPLITCORE__MSG) PG_ERRORS(SPLITCORE__MSG) PP_ERRORS(SPLITCORE__MSG)
        DT_ERRORS(SPLITCORE__MSG) "not a splitcore error code";
    int m = splitcore_err_module(err), k;
    unsigned i = 1u; /* the first code's message follows "ok" */
    if (m == SPLITCORE_MODULE_NONE)
        return splitcore__nth(msg, err == 0 ? 0u : MB__ERR_COUNT + PG__ERR_COUNT + PP__ERR_COUNT + DT__ERR_COUNT + 1u);
    for (k = SPLITCORE_MODULE_MICROBATCH; k < m; k++) i += splitcore__count[k];
    return splitcore__nth(msg, i + (unsigned)(splitcore__base[m] - 1 - err));
}

#ifdef __cplusplus
}
#endif
#endif /* SPLITCORE_BASE_IMPLEMENTATION */

/* ---- 5. The text writer --------------------------------------------------------------
   Internal: the one writer of the headers' text and C emitters (pipeline.h's strings, CSV,
   timelines and plan tables, dtensor_graph.h's plan tables). It counts every character
   and stores those that fit in buf[0..cap) (buf NULL: count only), so an emitter runs
   once to size its output and once to write it. Static functions, compiled only in an
   implementation that uses them: it defines SPLITCORE__TEXT and includes this header
   again. */
#if defined(SPLITCORE__TEXT) && !defined(SPLITCORE__TEXT_DEFINED)
#define SPLITCORE__TEXT_DEFINED
#include <stddef.h>
#include <stdint.h>
typedef struct splitcore__out {
    char *buf;
    size_t cap, n; /* n: characters written so far, stored or not */
} splitcore__out;

static void splitcore__putc(splitcore__out *o, char ch)
{
    if (o->buf && o->n < o->cap) o->buf[o->n] = ch;
    o->n++;
}

static void splitcore__puts(splitcore__out *o, const char *s)
{
    while (*s) splitcore__putc(o, *s++);
}

/* v in decimal. */
static void splitcore__putu(splitcore__out *o, uint32_t v)
{
    char tmp[10];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k) splitcore__putc(o, tmp[--k]);
}
#endif /* SPLITCORE__TEXT */
