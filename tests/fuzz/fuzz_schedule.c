/* fuzz_schedule.c — pipeline.h action strings, CSV schedules and plan checks from untrusted
   text, and the schedule generators from untrusted parameters.

   Mode 0, action strings: pp_action_parse of any bytes; a parsed action formats back to a
   string that parses to the same action.
   Mode 1, CSV: a plan of P ranks, S stages, M microbatches (small) read from any text
   (torch's _load_csv layout), then everything a tool does with an imported plan: validate,
   per-rank tables, peak in-flight, lowering (pp_lower's or PyTorch's order), simulation (with
   and without lowering),
   CSV/timeline/C export. Every answer is a pp_err; a CSV the reader accepted writes back to
   a CSV that reads to the same plan; a plan that validates, lowers without error and
   simulates to a makespan without deadlock.
   Mode 2, generators: (schedule, P, V, M) from the input; a schedule pp_schedule_check
   accepts builds, validates, lowers and simulates without deadlock, and round-trips
   through CSV; pp_schedule_from_name of any string. */
#define PIPELINE_IMPLEMENTATION
#define PP_NO_EXECUTOR 1
#include "pipeline.h"
#include "fuzz.h"

#define P_MAX     4
#define M_MAX     8
#define V_MAX     4
#define CAP_BYTES (8u * 1024u * sizeof(pp_action))

static pp_action st_a[CAP_BYTES / sizeof(pp_action)], st_b[CAP_BYTES / sizeof(pp_action)],
    st_c[CAP_BYTES / sizeof(pp_action)];
static uint32_t work[6 * P_MAX * V_MAX * M_MAX + 64];
static pp_event events[4096];
static char text[1 << 16];

static int is_err(int rc)
{
    return rc <= 0 && rc >= PP_ERR_MAP;
}

static int same_plan(const pp_plan *a, const pp_plan *b)
{
    int r;
    if (a->nranks != b->nranks || a->nstages != b->nstages || a->nmb != b->nmb) return 0;
    for (r = 0; r < a->nranks; r++)
        if (a->len[r] != b->len[r] ||
            memcmp(a->actions + (size_t)r * (size_t)a->cap, b->actions + (size_t)r * (size_t)b->cap,
                   (size_t)a->len[r] * sizeof(pp_action)) != 0)
            return 0;
    return 1;
}

/* Everything done with a plan; strict: the plan is a generated one (must all succeed). */
static void use_plan(fz_in *in, pp_plan *p, int strict)
{
    pp_plan low, back;
    pp_table t;
    pp_sim sim;
    pp_diag diag;
    pp_costs c;
    size_t need = 0;
    int r, rc, nev = 0, valid;
    valid = pp_validate(p, &diag);
    FUZZ_REQUIRE(is_err(valid));
    if (strict) FUZZ_REQUIRE(valid == PP_OK);
    for (r = -1; r <= p->nranks; r++) {
        rc = pp_plan_table(p, r, &t);
        FUZZ_REQUIRE(is_err(rc));
        if (rc == PP_OK) FUZZ_REQUIRE(t.len == p->len[r] && t.rank == r);
        rc = pp_peak_inflight(p, r);
        FUZZ_REQUIRE(rc >= PP_ERR_MAP);
    }
    memset(&c, 0, sizeof c);
    c.f = fz_u8(in) % 8u;
    c.b = fz_u8(in) % 8u;
    c.i = fz_u8(in) % 8u;
    c.w = fz_u8(in) % 8u;
    c.send = fz_u8(in) % 4u;
    c.recv = fz_u8(in) % 4u;
    c.comm = fz_u8(in) % 4u;
    { /* the simulator and the lowering take unvalidated plans too: errors, never a crash */
        FUZZ_REQUIRE(pp_sim_bytes(p) <= sizeof work);
        rc = pp_simulate(p, &c, work, sizeof work, &sim, events, 4096, &nev, &diag);
        FUZZ_REQUIRE(is_err(rc));
        if (strict && valid == PP_OK) FUZZ_REQUIRE(rc == PP_OK);
        rc = pp_lower_mode(p, &low, st_b, sizeof st_b, fz_u8(in) & 1u, &diag); /* ROUNDS or TORCH */
        FUZZ_REQUIRE(is_err(rc));
        if (strict && valid == PP_OK) FUZZ_REQUIRE(rc == PP_OK);
        if (rc == PP_OK) {
            int sim_rc, depth, max_depth = fz_u8(in) % 255;
            FUZZ_REQUIRE(valid != PP_OK || pp_validate(&low, &diag) == PP_OK);
            sim_rc = pp_simulate(&low, &c, work, sizeof work, &sim, events, 4096, &nev, &diag);
            FUZZ_REQUIRE(is_err(sim_rc));
            if (strict && valid == PP_OK) FUZZ_REQUIRE(sim_rc == PP_OK);
            /* the mailbox proof: a depth (recorded in the plan) or an error; a valid plan the
               simulator runs (buffered sends) never deadlocks with unbounded mailboxes, and
               the proven depth is the smallest: one less is refused */
            depth = pp_mailbox_depth(&low, max_depth, work, sizeof work, &diag);
            FUZZ_REQUIRE(depth >= 0 ? depth <= max_depth && low.mailbox == depth + 1
                                    : (depth >= PP_ERR_MAP || depth == PP_ERR_MAILBOX) && low.mailbox == 0);
            if (valid == PP_OK && sim_rc == PP_OK) FUZZ_REQUIRE(depth != PP_ERR_DEADLOCK);
            if (depth > 0) FUZZ_REQUIRE(pp_mailbox_depth(&low, depth - 1, work, sizeof work, &diag) == PP_ERR_MAILBOX);
        }
    }
    rc = pp_csv_write(p, text, sizeof text, &need);
    FUZZ_REQUIRE(rc >= PP_ERR_MAP);
    if (rc > 0) {
        FUZZ_REQUIRE((size_t)rc + 1 == need && text[rc] == '\0');
        FUZZ_REQUIRE(pp_plan_init(&back, st_c, sizeof st_c, p->nranks, p->nstages, p->nmb) == PP_OK);
        rc = pp_csv_read(&back, text, (size_t)rc, &diag);
        FUZZ_REQUIRE(rc == PP_OK && same_plan(p, &back));
    }
    rc = pp_timeline(p, text, sizeof text, &need);
    FUZZ_REQUIRE(rc >= PP_ERR_MAP);
    rc = pp_emit_c(p, "fz", text, fz_u8(in) < 128 ? sizeof text : fz_u16(in) % sizeof text, &need);
    FUZZ_REQUIRE(rc >= PP_ERR_MAP);
    if (nev > 0) FUZZ_REQUIRE(pp_trace_json(events, nev, text, sizeof text, &need) >= PP_ERR_MAP);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    pp_plan p;
    pp_action a, b;
    pp_diag diag;
    char s[32];
    int rc, mode = (int)(fz_u8(&in) % 3u);
    if (mode == 0) {
        size_t n = fz_left(&in);
        rc = pp_action_parse((const char *)data + in.at, n, &a);
        FUZZ_REQUIRE(rc == PP_OK || rc == PP_ERR_PARSE);
        if (rc == PP_OK) {
            rc = pp_action_format(a, s, sizeof s);
            FUZZ_REQUIRE(rc >= 0 && (size_t)rc < sizeof s);
            FUZZ_REQUIRE(pp_action_parse(s, (size_t)rc, &b) == PP_OK);
            FUZZ_REQUIRE(a.type == b.type && a.stage == b.stage && a.mb == b.mb);
        }
        memcpy(text, data + in.at, n < sizeof text - 1 ? n : sizeof text - 1);
        text[n < sizeof text - 1 ? n : sizeof text - 1] = '\0';
        rc = pp_schedule_from_name(text);
        FUZZ_REQUIRE(rc == PP_ERR_SCHEDULE || (rc > 0 && rc < PP_SCHED_COUNT));
        return 0;
    }
    if (mode == 1) {
        int P = 1 + (int)(fz_u8(&in) % P_MAX), S = 1 + (int)(fz_u8(&in) % (P_MAX * V_MAX)),
            M = 1 + (int)(fz_u8(&in) % M_MAX);
        size_t n = fz_left(&in) / 2; /* the text, then bytes for costs */
        FUZZ_REQUIRE(pp_plan_init(&p, st_a, sizeof st_a, P, S, M) == PP_OK);
        rc = pp_csv_read(&p, (const char *)data + in.at, n, &diag);
        in.at += n;
        FUZZ_REQUIRE(is_err(rc));
        if (rc == PP_OK) use_plan(&in, &p, 0);
        return 0;
    }
    {
        int sched = fz_int(&in, PP_SCHED_COUNT + 1), P = fz_int(&in, P_MAX + 1), V = fz_int(&in, V_MAX + 1),
            M = fz_int(&in, M_MAX + 1);
        int ok = pp_schedule_check(sched, P, V, M);
        FUZZ_REQUIRE(is_err(ok));
        rc = pp_schedule_build(&p, sched, P, V, M, st_a, sizeof st_a, &diag);
        if (ok != PP_OK) {
            FUZZ_REQUIRE(rc == ok);
            return 0;
        }
        if (P > P_MAX || V > V_MAX || M > M_MAX) return 0; /* (bigger than this target's storage) */
        FUZZ_REQUIRE(rc == PP_OK);
        use_plan(&in, &p, 1);
    }
    return 0;
}
