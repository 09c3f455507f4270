/* test_fuzz_regressions.c — every bug the libFuzzer targets (tests/fuzz/) found, as a test.

   Each case is the smallest call that showed the bug under ASan/UBSan; the fuzzer's own
   input also stays in tests/fuzz/corpus/<target>/ (run first by every fuzzing session).
   This suite runs on the host under ASan + UBSan and under QEMU on every target. */
#if defined(__unix__) || defined(__APPLE__)
#define FUZZ_REGRESSIONS_THREADS 1 /* the cases with ranks as threads (pg_pthread): host only */
#define _POSIX_C_SOURCE          200809L
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION
#define DTENSOR_GRAPH_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_QCONV_IMPLEMENTATION
#include "dtensor_graph.h"
#include "dtensor_qconv.h"
#ifdef FUZZ_REGRESSIONS_THREADS
#include <sched.h>
#include <time.h>
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#endif

/* fuzz_microbatch: torch.chunk's count was (size + each - 1) / each in int32: signed
   overflow for sizes near INT32_MAX. */
static void test_split_sizes_near_int32_max(void **state)
{
    int32_t sizes[3];
    (void)state;
    assert_int_equal(mb_split_sizes(INT32_MAX, 2, MB_CEIL, sizes, 3), 2);
    assert_int_equal(sizes[0], 1073741824);
    assert_int_equal(sizes[1], 1073741823);
    assert_int_equal(mb_split_sizes(1996488703, 1, MB_CEIL, sizes, 3), 1);
    assert_int_equal(sizes[0], 1996488703);
    assert_int_equal(mb_split_sizes(INT32_MAX, 3, MB_BALANCED, sizes, 3), 3);
    assert_int_equal(sizes[0] + sizes[1] + sizes[2], INT32_MAX);
}

/* fuzz_microbatch: mb_tensor_init multiplied the contiguous strides in int32 (overflow for
   shapes whose inner product passes INT32_MAX); mb_tensor_check's element count could
   overflow int64 with 6 huge dims. Both are MB_ERR_SHAPE now; the output is untouched. */
static void test_huge_shapes_are_shape_errors(void **state)
{
    static float x[4];
    const int32_t big[2] = {3, 2147483409}, inner[3] = {2, 65536, 65536};
    const int32_t ok[2] = {3, INT32_MAX}; /* strides fit; numel > 2^31 is fine */
    mb_tensor t, before;
    int d;
    (void)state;
    memset(&t, 0xA5, sizeof t);
    before = t;
    assert_int_equal(mb_tensor_init(&t, x, MB_F32, 3, inner), MB_ERR_SHAPE);
    assert_memory_equal(&t, &before, sizeof t);
    assert_int_equal(mb_tensor_init(&t, x, MB_F32, 2, ok), MB_OK);
    assert_int_equal(t.stride[0], INT32_MAX);
    assert_int_equal(mb_tensor_init(&t, x, MB_F32, 2, big), MB_OK);
    t.ndim = MB_MAX_DIMS; /* a broadcast view: every stride 0, every size huge */
    for (d = 0; d < MB_MAX_DIMS; d++) {
        t.shape[d] = INT32_MAX;
        t.stride[d] = 0;
    }
    assert_int_equal(mb_tensor_check(&t), MB_ERR_SHAPE);
    t.ndim = 2;
    assert_int_equal(mb_tensor_check(&t), MB_OK); /* 2^62 elements still count */
}

/* fuzz_microbatch: narrowing an empty view with a NULL data pointer did NULL + offset. */
static void test_narrow_null_empty_view(void **state)
{
    const int32_t shape[2] = {4, 0};
    mb_tensor t, out;
    (void)state;
    assert_int_equal(mb_tensor_init(&t, NULL, MB_F32, 2, shape), MB_OK);
    assert_int_equal(mb_narrow(&t, 0, 1, 2, &out), MB_OK);
    assert_null(out.data);
    assert_int_equal(out.shape[0], 2);
}

/* fuzz_microbatch: a hand-made view whose last element lies 2^59 elements or more from its
   data (shape {INT32_MAX, 1}, stride {INT32_MAX, 1}: numel fits, the extent does not)
   passed mb_tensor_check, and mb_narrow's pointer arithmetic overflowed (UBSan). Now
   the check refuses it with MB_ERR_SHAPE and mb_narrow writes nothing. */
static void test_view_extent_over_ptrdiff(void **state)
{
    float x[1];
    mb_tensor t, out, before;
    (void)state;
    memset(&t, 0, sizeof t);
    t.data = x;
    t.dtype = MB_F32;
    t.ndim = 2;
    t.shape[0] = INT32_MAX;
    t.shape[1] = 1;
    t.stride[0] = INT32_MAX;
    t.stride[1] = 1;
    assert_int_equal(mb_tensor_check(&t), MB_ERR_SHAPE);
    memset(&out, 0x5a, sizeof out);
    before = out;
    assert_int_equal(mb_narrow(&t, 0, INT32_MAX - 1, 1, &out), MB_ERR_SHAPE);
    assert_memory_equal(&out, &before, sizeof out);
    t.shape[0] = 3; /* a legal strided view still passes */
    assert_int_equal(mb_tensor_check(&t), MB_OK);
}

/* fuzz_microbatch: a debug-mask split of a broadcast (stride 0) view whose full-size copies
   cannot be described (contiguous strides over INT32_MAX, or a storage size that wraps
   size_t) left the copy's view unset and wrote through it. Now MB_ERR_SHAPE, nothing
   written. */
static void test_masked_split_of_huge_broadcast_view(void **state)
{
    static double storage[64];
    static float x[1];
    mb_value in[1], out[4], before[4];
    mb_diag diag;
    size_t bytes = 12345;
    (void)state;
    memset(in, 0, sizeof in);
    in[0].kind = MB_VALUE_TENSOR;
    in[0].tensor.data = x;
    in[0].tensor.dtype = MB_F32;
    in[0].tensor.ndim = 3;
    in[0].tensor.shape[0] = 4;
    in[0].tensor.shape[1] = 65536; /* stride 0 on every dim: one element in memory */
    in[0].tensor.shape[2] = 65536;
    memset(out, 0x5C, sizeof out);
    memcpy(before, out, sizeof out);
    assert_int_equal(mb_split(in, NULL, 1, 4, MB_BALANCED, out, 4, &diag), 4); /* views: fine */
    memcpy(out, before, sizeof out);
    assert_int_equal(mb_split_masked_bytes(in, NULL, 1, 4, MB_BALANCED, &bytes), MB_ERR_SHAPE);
    assert_int_equal(mb_split_masked(in, NULL, 1, 4, MB_BALANCED, out, 4, storage, sizeof storage, &diag),
                     MB_ERR_SHAPE);
    assert_memory_equal(out, before, sizeof out);
    in[0].tensor.shape[1] = 2; /* small: works */
    in[0].tensor.shape[2] = 1;
    assert_int_equal(mb_split_masked_bytes(in, NULL, 1, 4, MB_BALANCED, &bytes), 4);
    assert_int_equal(bytes, 4u * 8u * sizeof(float)); /* 4 full-size copies of 8 floats */
}

/* fuzz_schedule: a CSV row of one idle cell (" ") read as [IDLE] but was written as a blank
   line, which reads back as an empty row. The writer now writes `""` like Python's csv
   module, and the reader accepts double-quoted cells. */
static void test_csv_row_of_one_idle_round_trips(void **state)
{
    static pp_action st[2][64];
    static const char in[] = "0F0,0B0\r\n \r\n", quoted[] = "\"0F0\",0B0\r\n\r\n";
    char out[64];
    pp_plan a, b;
    int n;
    (void)state;
    assert_int_equal(pp_plan_init(&a, st[0], sizeof st[0], 2, 1, 1), PP_OK);
    assert_int_equal(pp_csv_read(&a, in, sizeof in - 1, NULL), PP_OK);
    assert_int_equal(a.len[1], 1);
    n = pp_csv_write(&a, out, sizeof out, NULL);
    assert_string_equal(out, "0F0,0B0\r\n\"\"\r\n");
    assert_int_equal(pp_plan_init(&b, st[1], sizeof st[1], 2, 1, 1), PP_OK);
    assert_int_equal(pp_csv_read(&b, out, (size_t)n, NULL), PP_OK);
    assert_int_equal(b.len[0], 2);
    assert_int_equal(b.len[1], 1);
    assert_int_equal(b.actions[b.cap].type, PP_IDLE);
    assert_int_equal(pp_csv_read(&b, quoted, sizeof quoted - 1, NULL), PP_OK); /* quoted cells */
    assert_int_equal(b.len[0], 2);
    assert_int_equal(b.len[1], 0);
}

/* fuzz_dtensor: dt_spec_init multiplied contiguous strides in int32 (signed overflow for
   a shape whose inner sizes pass INT32_MAX). Now DT_ERR_SHAPE with nothing written;
   given strides, the same shape is fine. */
static void test_dt_spec_contiguous_stride_overflow(void **state)
{
    const int32_t shape[3] = {2, 65536, 65536}, stride[3] = {0, 0, 1}, one = 2;
    const dt_placement pl[1] = {DT_SHARD(0)};
    dt_mesh m;
    dt_spec s, before;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 1, &one, NULL, 0), DT_OK);
    memset(&s, 0x6d, sizeof s);
    before = s;
    assert_int_equal(dt_spec_init(&s, &m, pl, 1, MB_F32, 3, shape, NULL), DT_ERR_SHAPE);
    assert_memory_equal(&s, &before, sizeof s);
    assert_int_equal(dt_spec_init(&s, &m, pl, 1, MB_F32, 3, shape, stride), DT_OK);
    assert_int_equal(s.stride[2], 1);
}

/* fuzz_graph: dt_graph_add inferred linear(x (13107199,7), w (13107199,7)) as a
   (13107199,13107199) node, more elements than int32 holds; every op's output is now
   checked: DT_ERR_SHAPE, the graph unchanged. */
static void test_graph_output_over_int32_elements(void **state)
{
    dt_gnode nodes[4];
    dt_graph g;
    dt_op_attrs a;
    int32_t in[2];
    (void)state;
    assert_int_equal(dt_graph_init(&g, nodes, 4), DT_OK);
    memset(&a, 0, sizeof a);
    a.ndim = 2;
    a.shape[0] = 13107199;
    a.shape[1] = 7;
    in[0] = dt_graph_add(&g, DT_G_INPUT, &a, NULL, 0);
    in[1] = dt_graph_add(&g, DT_G_PARAM, &a, NULL, 0);
    assert_int_equal(in[0], 0);
    assert_int_equal(in[1], 1);
    assert_int_equal(dt_graph_add(&g, DT_ATEN_LINEAR, NULL, in, 2), DT_ERR_SHAPE);
    assert_int_equal(g.count, 2);
    a.shape[0] = 4; /* (4,7) x (13107199,7)^T: 52 M elements, fine */
    in[0] = dt_graph_add(&g, DT_G_INPUT, &a, NULL, 0);
    assert_int_equal(dt_graph_add(&g, DT_ATEN_LINEAR, NULL, in, 2), 3);
}

/* fuzz_conv: a max pool window can hold no input element although the padding rule
   (padding <= ((k - 1) * dilation + 1) / 2) holds: kernel 2, dilation 3, padding 2 on a
   1x1 input puts both taps at -2 and 1 (and -1 and 2). The kernel asserted "never empty"
   (compiled out) and wrote 0 forward, and the backward routed the gradient to row -1,
   before the grad_in buffer. Now: -inf (int8 -128), torch's initial maximum, and no
   gradient; nothing outside grad_in is written. */
static void test_maxpool_window_over_padding_only(void **state)
{
    static const dt_conv2d_params p = {DT_NCHW, {1, 1}, {2, 2}, {3, 3}, 1, {2, 2}, 0};
    const int32_t xs[4] = {1, 1, 1, 1}, ys[4] = {1, 1, 2, 2};
    float x = 5.0f, y[4], gy[4] = {1.0f, 2.0f, 3.0f, 4.0f}, gbuf[16], ninf;
    int8_t xq = 7, yq[4];
    uint32_t ninf_bits = 0xff800000u;
    mb_tensor tx, ty, tgy, tgx, txq, tyq;
    int32_t out[4];
    int i;
    (void)state;
    memcpy(&ninf, &ninf_bits, sizeof ninf);
    assert_int_equal(dt_conv2d_out_shape(&p, xs, NULL, out), DT_OK);
    assert_memory_equal(out, ys, sizeof ys);
    mb_tensor_init(&tx, &x, MB_F32, 4, xs);
    mb_tensor_init(&ty, y, MB_F32, 4, ys);
    assert_int_equal(dt_maxpool2d_ref(&p, &tx, &ty), DT_OK);
    for (i = 0; i < 4; i++) assert_memory_equal(&y[i], &ninf, sizeof ninf);
    mb_tensor_init(&txq, &xq, MB_I8, 4, xs);
    mb_tensor_init(&tyq, yq, MB_I8, 4, ys);
    assert_int_equal(dt_maxpool2d_ref(&p, &txq, &tyq), DT_OK);
    for (i = 0; i < 4; i++) assert_int_equal(yq[i], -128);
    for (i = 0; i < 16; i++) gbuf[i] = 99.0f;
    mb_tensor_init(&tgy, gy, MB_F32, 4, ys);
    mb_tensor_init(&tgx, &gbuf[8], MB_F32, 4, xs); /* grad_in in the middle of guards */
    assert_int_equal(dt_maxpool2d_backward(&p, &tx, &tgy, &tgx), DT_OK);
    for (i = 0; i < 16; i++) assert_true(gbuf[i] == (i == 8 ? 0.0f : 99.0f));
}

/* fuzz_exec: pp_peak_inflight counted one activation at a time in a plan without a
   backward, but the executor keeps a stage's output until the next stage's F on the same
   rank (or its SEND_F): in stage-major order (every microbatch's F of stage 0, then of
   stage 1) one rank holds all of them, and the slots pp_plan_table gave made pp_exec_run
   fail with PP_ERR_TOO_SMALL on a plan pp_validate and pp_simulate accept. */
static pp_action f_of(int stage, int mb)
{
    pp_action a;
    a.type = PP_F;
    a.stage = (uint8_t)stage;
    a.mb = (uint16_t)mb;
    return a;
}
static void test_peak_inflight_of_stage_major_inference(void **state)
{
    static pp_action st[16];
    pp_plan p;
    pp_table t;
    int m, s;
    (void)state;
    assert_int_equal(pp_plan_init(&p, st, sizeof st, 1, 2, 3), PP_OK);
    for (s = 0; s < 2; s++)
        for (m = 0; m < 3; m++) st[p.len[0]++] = f_of(s, m);
    assert_int_equal(pp_validate(&p, NULL), PP_OK);
    assert_int_equal(pp_peak_inflight(&p, 0), 3);
    assert_int_equal(pp_plan_table(&p, 0, &t), PP_OK);
    assert_int_equal(t.slots, 3);
    p.len[0] = 0; /* microbatch-major: one at a time (the executor adds the copy's slot) */
    for (m = 0; m < 3; m++)
        for (s = 0; s < 2; s++) st[p.len[0]++] = f_of(s, m);
    assert_int_equal(pp_peak_inflight(&p, 0), 1);
}

/* fuzz_exec: pp_exec_loss after a step that failed before the last stage computed every
   microbatch's loss merged the zeroed entries pp_exec_run leaves and returned
   microbatch.h's MB_ERR_NULL, another module's code. Now PP_ERR_ARG, *loss untouched. */
static void test_exec_loss_after_failed_step(void **state)
{
    mb_value losses[2];
    pp_table t;
    pp_exec e;
    double loss = 7.0;
    (void)state;
    memset(&t, 0, sizeof t);
    t.nmb = 2;
    memset(&e, 0, sizeof e);
    e.t = &t;
    e.losses = losses;
    memset(losses, 0, sizeof losses); /* as pp_exec_run starts a step */
    losses[0].kind = MB_VALUE_SCALAR;
    losses[0].scalar = 1.5; /* the first microbatch's loss only */
    assert_int_equal(pp_exec_loss(&e, NULL, &loss), PP_ERR_ARG);
    assert_true(loss == 7.0);
    losses[1].kind = MB_VALUE_SCALAR;
    losses[1].scalar = 2.0;
    assert_int_equal(pp_exec_loss(&e, NULL, &loss), PP_OK);
    assert_true(loss == 3.5);
}

/* fuzz_exec: a rank without stages returns from pp_exec_run at once, outside the agreement;
   it kept the err and err_rank of its previous step (pp_exec_run reset them after that
   return), so after a failed step it still reported the failure. */
static void test_exec_stageless_rank_clears_its_error(void **state)
{
    pp_table t;
    pp_exec e;
    (void)state;
    memset(&t, 0, sizeof t); /* pp_plan_table's table of a rank without stages */
    memset(&e, 0, sizeof e);
    e.t = &t;
    e.err = -5; /* the previous step's */
    e.err_rank = 1;
    e.nevents = 3;
    assert_int_equal(pp_exec_run(&e), PP_OK);
    assert_int_equal(e.err, 0);
    assert_int_equal(e.err_rank, -1);
    assert_int_equal(e.nevents, 0);
}

/* The plan the pp_validate and pp_simulate regressions edit: 1F1B, 2 stages on 2 ranks, 2
   microbatches, lowered (sends and receives) into lst. */
static void lowered_1f1b(pp_plan *low, pp_action lst[2][128])
{
    static pp_action st[2][64];
    pp_plan p;
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_1F1B, 2, 1, 2, st, sizeof st, NULL), PP_OK);
    assert_int_equal(pp_lower(&p, low, lst, 2 * 128 * sizeof(pp_action), NULL), PP_OK);
}

/* fuzz_exec: pp_validate skipped sends and receives (torch's rules ignore them), so a lowered
   plan with a SEND_B of stage 0 (or a send twice, a send before its computation, a send
   between stages on one rank) validated and simulated, and the executor then failed with
   PP_ERR_ACTION (or left the doubled message behind for the next step). */
static void test_validate_checks_sends(void **state)
{
    static pp_action lst[2][128];
    pp_plan low;
    pp_action *row;
    int i;
    (void)state;
    lowered_1f1b(&low, lst);
    assert_int_equal(pp_validate(&low, NULL), PP_OK);
    row = lst[0];
    row[low.len[0]].type = PP_SEND_B; /* rank 0 holds stage 0: there is no stage before it */
    row[low.len[0]].stage = 0;
    row[low.len[0]++].mb = 0;
    assert_int_equal(pp_validate(&low, NULL), PP_ERR_ACTION);
    low.len[0]--;
    for (i = 0; row[i].type != PP_SEND_F; i++) {}
    row[low.len[0]] = row[i]; /* SEND_F(0, 0) again */
    low.len[0]++;
    assert_int_equal(pp_validate(&low, NULL), PP_ERR_DUPLICATE);
    low.len[0]--;
    row[i] = row[i - 1]; /* SEND_F(0, 0) before F(0, 0) */
    row[i - 1].type = PP_SEND_F;
    assert_int_equal(pp_validate(&low, NULL), PP_ERR_ACTION);
}

/* fuzz_exec: pp_validate let skip sends and receives (SEND_S .. RECV_SB) through unchecked:
   a SEND_S in a plan without skip routes validated and simulated, and the executor failed
   with PP_ERR_ACTION on it. */
static void test_validate_checks_skip_sends(void **state)
{
    static pp_action lst[2][128];
    pp_plan low;
    pp_action *row;
    int t;
    (void)state;
    lowered_1f1b(&low, lst);
    row = lst[0];
    for (t = PP_SEND_S; t <= PP_RECV_SB; t++) { /* after F(0, 0) and B(0, 0): only the route is missing */
        row[low.len[0]].type = (uint8_t)t;
        row[low.len[0]].stage = 0;
        row[low.len[0]++].mb = 0;
        assert_int_equal(pp_validate(&low, NULL), PP_ERR_ACTION);
        low.len[0]--;
    }
    assert_int_equal(pp_validate(&low, NULL), PP_OK);
}

#ifdef FUZZ_REGRESSIONS_THREADS
/* Two stages of one layer each (`kind`, self: the layer's index), one microbatch of `bytes`
   (rows 1), planned with `sched` (V stages per rank) on g's ranks, or PP_SCHED_CUSTOM: the V
   actions in x->st[0] on one rank; validated, lowered and initialised on g. */
typedef struct chain2 {
    pp_action st[2][64], lst[2][64];
    pp_plan plan, low; /* the table points into them */
    uint64_t mem[512];
    pp_layer layers[2];
    pp_exec_cfg c;
    pp_table t;
    pp_exec e;
} chain2;
static int chain2_init(chain2 *x, pg_group *g, const pp_layer *kind, int (*input)(void *, int, mb_tensor *),
                       int (*loss)(void *, int, const mb_tensor *, mb_tensor *, double *), uint32_t bytes, mb_dtype dt,
                       int sched, int V)
{
    static const int32_t balance[2] = {1, 1};
    static const int index[2] = {0, 1};
    int l;
    for (l = 0; l < 2; l++) {
        x->layers[l] = *kind;
        x->layers[l].self = (void *)&index[l];
        x->layers[l].act_bytes = bytes;
    }
    memset(&x->c, 0, sizeof x->c);
    x->c.input = input;
    x->c.loss = loss;
    x->c.layers = x->layers;
    x->c.balance = balance;
    x->c.nlayers = 2;
    x->c.in_bytes = bytes;
    x->c.rows = 1;
    x->c.dtype = dt;
    memset(x->mem, 0xa5, sizeof x->mem); /* what a slot holds before the first step */
    pg_set_timeout(g, 5000);
    if (sched == PP_SCHED_CUSTOM) { /* V: x->st[0]'s first V actions, both stages on one rank */
        if (pp_plan_init(&x->plan, x->st, sizeof x->st, 1, 2, 1)) return -1;
        x->plan.len[0] = V;
        x->plan.stage_rank[1] = 0;
    } else if (pp_schedule_build(&x->plan, sched, pg_size(g), V, 1, x->st, sizeof x->st, NULL)) {
        return -1;
    }
    if (pp_validate(&x->plan, NULL) || pp_lower(&x->plan, &x->low, x->lst, sizeof x->lst, NULL) ||
        pp_plan_table(&x->low, pg_rank(g), &x->t))
        return -1;
    return pp_exec_init(&x->e, &x->c, &x->t, g, x->mem, sizeof x->mem);
}

/* fuzz_exec: the end-of-step agreement let the root return as soon as it had answered; its
   next step could fail at once and abort the world before a peer had taken the answer, and
   that peer (with no error of its own) returned PP_ERR_COMM / PG_ERR_ABORTED / rank -1 instead
   of the agreed PP_ERR_LAYER of the root. Here rank 1's receive of the answer waits until the
   root's next step has failed (or 300 ms: the root cannot get there once it waits for rank
   1's acknowledgement); then both ranks must report step 1 as the root's layer error. */
static pg_pthread_world race_world;
static const pg_ops *race_real_ops;
static pg_ops race_slow_ops;
static int race_step[2], race_root_failed;
static float race_x[4];
static int race_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    int rank = *(const int *)self;
    if (rank == 0 && race_step[0] == 1) return -5; /* step 1: the root's layer fails */
    memcpy(y->data, x->data, sizeof race_x);
    return 0;
}
static int race_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    (void)self;
    (void)x;
    memcpy(dx->data, dy->data, sizeof race_x);
    return 0;
}
static int race_input(void *user, int mb, mb_tensor *x)
{
    (void)user;
    (void)mb;
    if (race_step[0] == 2) { /* step 2: the root fails at once */
        __atomic_store_n(&race_root_failed, 1, __ATOMIC_RELEASE);
        return -6;
    }
    memcpy(x->data, race_x, sizeof race_x);
    return 0;
}
static int race_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    (void)user;
    (void)mb;
    memcpy(dy->data, y->data, sizeof race_x);
    *loss = 0.0;
    return 0;
}
static int race_recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    if (cap == 3 * sizeof(int32_t) && race_step[1] == 1) { /* the answer of step 1's agreement */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            sched_yield();
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (!__atomic_load_n(&race_root_failed, __ATOMIC_ACQUIRE) &&
                 (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 300);
    }
    return race_real_ops->recv(port, src, tag, buf, cap, got, timeout_ms);
}
static int race_rank(pg_group *g, void *arg)
{
    static chain2 x[2];
    pp_layer kind;
    int32_t *out = (int32_t *)arg;
    int r = pg_rank(g), step, rc;
    pp_exec *e = &x[r].e;
    memset(&kind, 0, sizeof kind);
    kind.forward = race_fwd;
    kind.backward_input = race_bi;
    /* GPipe on 2 ranks, one layer each, one microbatch of 4 floats */
    if (chain2_init(&x[r], g, &kind, race_input, race_loss, sizeof race_x, MB_F32, PP_SCHED_GPIPE, 1)) return -1;
    if (r == 1) { /* rank 1 takes its answers late */
        race_real_ops = g->ops;
        race_slow_ops = *g->ops;
        race_slow_ops.recv = race_recv;
        g->ops = &race_slow_ops;
    }
    for (step = 1; step <= 2; step++) {
        race_step[r] = step;
        rc = pp_exec_run(e);
        if (step == 1) {
            out[3 * r] = rc;
            out[3 * r + 1] = e->err;
            out[3 * r + 2] = e->err_rank;
        }
    }
    if (r == 1) g->ops = race_real_ops;
    return 0;
}
/* fuzz_dist: dt_qmm accepted nq = 0 multipliers for an output of 0 columns (nq == N), ran the
   all-reduce of an int32 Partial, and only then dt_requant_tensor refused nq < 1: "validates
   everything before communicating" did not hold. Now DT_ERR_SHAPE before any collective. */
static int qmm_rank(pg_group *g, void *arg)
{
    static const int32_t one = 1, as[2] = {1, 1}, bs[2] = {1, 0};
    static int8_t av[1] = {3}, out[1];
    static uint32_t scratch[1];
    const dt_placement pa[1] = {DT_SHARD(1)}, pb[1] = {DT_SHARD(0)};
    dt_mesh m;
    dt_comm c;
    dt_tensor a, b, y;
    dt_qmul q[1] = {{1 << 30, 0}};
    int *rc = (int *)arg;
    if (dt_mesh_init(&m, 1, &one, NULL, 0) || dt_comm_init(&c, &m, g) ||
        dt_spec_init(&a.spec, &m, pa, 1, MB_I8, 2, as, NULL) || dt_spec_init(&b.spec, &m, pb, 1, MB_I8, 2, bs, NULL) ||
        mb_tensor_init(&a.local, av, MB_I8, 2, as) || mb_tensor_init(&b.local, av, MB_I8, 2, bs))
        return -1;
    rc[0] = dt_qmm(&c, &a, &b, q, 0, &y, out, sizeof out, scratch, sizeof scratch);
    rc[1] = (int)c.collectives;
    rc[2] = dt_qmm(&c, &a, &b, q, 1, &y, out, sizeof out, scratch, sizeof scratch); /* one multiplier: fine */
    return 0;
}
static void test_qmm_refuses_no_multipliers_before_messages(void **state)
{
    static pg_pthread_world w;
    int rc[3];
    (void)state;
    assert_int_equal(pg_pthread_run(&w, 1, qmm_rank, rc), 0);
    assert_int_equal(rc[0], DT_ERR_SHAPE);
    assert_int_equal(rc[1], 0);
    assert_int_equal(rc[2], DT_OK);
}

/* fuzz_exec: under PP_SKIPS (the host default) the executor sent no gradient of an integer
   tensor between ranks (fairscale's tuples have none), a chain's of cfg.dtype included: a
   2-rank int32 chain's stage 0 ran its backward on whatever its slot held (the 1-rank run
   and the PP_SKIPS 0 build got the gradient stage 1 computed). */
static int32_t int_dy[2];
static int int_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    (void)self;
    *(int32_t *)y->data = *(const int32_t *)x->data + 1;
    return 0;
}
static int int_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    (void)self;
    *(int32_t *)dx->data = 3 * *(const int32_t *)dy->data + *(const int32_t *)x->data;
    return 0;
}
static int int_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    (void)x;
    int_dy[*(const int *)self] = *(const int32_t *)dy->data;
    return 0;
}
static int int_input(void *user, int mb, mb_tensor *x)
{
    (void)user;
    *(int32_t *)x->data = 10 + mb;
    return 0;
}
static int int_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    (void)user;
    (void)mb;
    *(int32_t *)dy->data = 2 * *(const int32_t *)y->data;
    *loss = *(const int32_t *)y->data;
    return 0;
}
static int int_rank(pg_group *g, void *arg)
{
    static chain2 x[2];
    pp_layer kind;
    int P = pg_size(g);
    memset(&kind, 0, sizeof kind);
    kind.forward = int_fwd;
    kind.backward_input = int_bi;
    kind.backward_weight = int_bw;
    /* one int32; 2 ranks: GPipe, 1 rank: both stages on it */
    if (chain2_init(&x[pg_rank(g)], g, &kind, int_input, int_loss, sizeof(int32_t), MB_I32,
                    P == 2 ? PP_SCHED_GPIPE : PP_SCHED_INTERLEAVED_1F1B, 3 - P))
        return -1;
    *(int *)arg = pp_exec_run(&x[pg_rank(g)].e);
    return 0;
}
static void test_exec_integer_chain_gradient_crosses_ranks(void **state)
{
    static pg_pthread_world w;
    int rc[2] = {1, 1};
    int32_t one_rank[2];
    (void)state;
    /* x 10 -> 11 -> 12, loss dy 24; layer 1: dy 24, dx 3 * 24 + 11 = 83; layer 0: dy 83 */
    assert_int_equal(pg_pthread_run(&w, 1, int_rank, rc), 0);
    assert_int_equal(rc[0], PP_OK);
    memcpy(one_rank, int_dy, sizeof one_rank);
    assert_int_equal(one_rank[1], 24);
    assert_int_equal(one_rank[0], 83);
    memset(int_dy, 0, sizeof int_dy);
    assert_int_equal(pg_pthread_run(&w, 2, int_rank, rc), 0);
    assert_int_equal(rc[0], PP_OK);
    assert_int_equal(int_dy[1], one_rank[1]);
    assert_int_equal(int_dy[0], one_rank[0]);
}

/* fuzz_exec: under PP_SKIPS, W of a stage whose previous stage is on the same rank looked up
   that stage's slot (where the input gradient dx goes, which W does not use) and failed with
   PP_ERR_ACTION once the previous stage's W had released it: F0 F1 I1 I0 W0 W1 on one rank, a
   plan pp_validate accepts, stopped at W1. */
static int wafter_rank(pg_group *g, void *arg)
{
    static chain2 x;
    static const pp_action order[6] = {PP_ACTION(PP_F, 0, 0), PP_ACTION(PP_F, 1, 0), PP_ACTION(PP_I, 1, 0),
                                       PP_ACTION(PP_I, 0, 0), PP_ACTION(PP_W, 0, 0), PP_ACTION(PP_W, 1, 0)};
    pp_layer kind;
    memset(&kind, 0, sizeof kind);
    kind.forward = int_fwd;
    kind.backward_input = int_bi;
    kind.backward_weight = int_bw;
    memcpy(x.st[0], order, sizeof order);
    if (chain2_init(&x, g, &kind, int_input, int_loss, sizeof(int32_t), MB_I32, PP_SCHED_CUSTOM, 6)) return -1;
    *(int *)arg = pp_exec_run(&x.e);
    return 0;
}
static void test_exec_weight_after_previous_stage_released(void **state)
{
    static pg_pthread_world w;
    int rc = 1;
    (void)state;
    memset(int_dy, 0, sizeof int_dy);
    assert_int_equal(pg_pthread_run(&w, 1, wafter_rank, &rc), 0);
    assert_int_equal(rc, PP_OK);
    assert_int_equal(int_dy[1], 24); /* as in test_exec_integer_chain_gradient_crosses_ranks */
    assert_int_equal(int_dy[0], 83);
}

static void test_exec_agreement_outlives_next_step_abort(void **state)
{
    int32_t out[6];
    int r;
    (void)state;
    assert_int_equal(pg_pthread_run(&race_world, 2, race_rank, out), 0);
    for (r = 0; r < 2; r++) {
        assert_int_equal(out[3 * r], PP_ERR_LAYER);
        assert_int_equal(out[3 * r + 1], -5);
        assert_int_equal(out[3 * r + 2], 0);
    }
}
#endif

/* fuzz_dist: reducing a Partial(avg) of integers planned fine and then failed in the
   collective (the port averages floats only); now the planner refuses it. */
static void test_avg_partial_of_ints_refused_by_the_plan(void **state)
{
    static const int32_t two = 2, shape[1] = {3};
    const dt_placement avg[1] = {DT_PARTIAL(DT_AVG)}, rep[1] = {DT_REPLICATE()};
    dt_mesh m;
    dt_spec a, r;
    dt_plan plan;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 1, &two, NULL, 0), DT_OK);
    assert_int_equal(dt_spec_init(&a, &m, avg, 1, MB_I32, 1, shape, NULL), DT_OK);
    assert_int_equal(dt_spec_init(&r, &m, rep, 1, MB_I32, 1, shape, NULL), DT_OK);
    assert_int_equal(dt_plan_redistribute(&a, &r, 0, &plan), DT_ERR_DTYPE);
    assert_int_equal(dt_spec_init(&a, &m, avg, 1, MB_F32, 1, shape, NULL), DT_OK);
    assert_int_equal(dt_spec_init(&r, &m, rep, 1, MB_F32, 1, shape, NULL), DT_OK);
    assert_int_equal(dt_plan_redistribute(&a, &r, 0, &plan), DT_OK);
}

/* fuzz_exec: pp_simulate on a plan without skip routes holding a skip transfer (SEND_S ..
   RECV_SB) wrote its time into a skip plane that pp_sim_bytes leaves out: past the caller's
   work (ASan: global-buffer-overflow). Now PP_ERR_ACTION. */
static void test_simulate_skip_transfer_without_routes(void **state)
{
    static pp_action lst[2][128];
    static uint32_t work[6 * 2 * 2]; /* pp_sim_bytes: 6 planes of 2 stages x 2 microbatches */
    pp_plan low;
    pp_costs c;
    pp_sim sim;
    (void)state;
    lowered_1f1b(&low, lst);
    assert_int_equal(pp_sim_bytes(&low), sizeof work);
    memset(&c, 0, sizeof c);
    c.f = c.b = c.comm = 1;
    assert_int_equal(pp_simulate(&low, &c, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_OK);
    lst[1][low.len[1]].type = PP_RECV_SB; /* stage 1's rank, after everything */
    lst[1][low.len[1]].stage = 1;
    lst[1][low.len[1]++].mb = 1;
    assert_int_equal(pp_simulate(&low, &c, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_ERR_ACTION);
}

/* fuzz_dist: Replicate -> Partial(sum) on one mesh dim while another still held a
   Partial(prod) divided every piece before the product: [R, P(prod)] -> [P(sum), R] on a 2x2
   mesh gave v / 4 on each rank, a value of v / 2 (torch's step order does the same). The
   planner refuses that order; the product taken first (the other mesh dim order) is fine. */
static void test_partition_before_pending_product_refused(void **state)
{
    static const int32_t shape[2] = {2, 2}, gs[1] = {3};
    const dt_placement rp[2] = {DT_REPLICATE(), DT_PARTIAL(DT_PROD)}, sr[2] = {DT_PARTIAL(DT_SUM), DT_REPLICATE()},
                       pr[2] = {DT_PARTIAL(DT_PROD), DT_REPLICATE()}, rs[2] = {DT_REPLICATE(), DT_PARTIAL(DT_SUM)};
    dt_mesh m;
    dt_spec a, b;
    dt_plan plan;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 2, shape, NULL, 0), DT_OK);
    assert_int_equal(dt_spec_init(&a, &m, rp, 2, MB_F32, 1, gs, NULL), DT_OK);
    assert_int_equal(dt_spec_init(&b, &m, sr, 2, MB_F32, 1, gs, NULL), DT_OK);
    memset(&plan, 0x5a, sizeof plan);
    assert_int_equal(dt_plan_redistribute(&a, &b, DT_PLAN_ALLOW_PARTIAL, &plan), DT_ERR_UNSUPPORTED);
    assert_int_equal(((unsigned char *)&plan)[0], 0x5a); /* nothing written */
    assert_int_equal(dt_spec_init(&a, &m, pr, 2, MB_F32, 1, gs, NULL), DT_OK);
    assert_int_equal(dt_spec_init(&b, &m, rs, 2, MB_F32, 1, gs, NULL), DT_OK);
    assert_int_equal(dt_plan_redistribute(&a, &b, DT_PLAN_ALLOW_PARTIAL, &plan), DT_OK);
    assert_int_equal(plan.steps[0].op, DT_OP_ALL_REDUCE); /* the product first */
    assert_int_equal(plan.steps[1].op, DT_OP_PARTITION);
}

/* fuzz_dist: dt_tp_redistribute on a rank outside the mesh sized the output by a coordinate
   it does not have (DT_ERR_TOO_SMALL, or DT_OK for an unchanged placement); now
   DT_ERR_NOT_MEMBER, as every other call, with out untouched. */
static void test_tp_redistribute_off_the_mesh(void **state)
{
    static const int32_t one = 1, other = 1, shape[1] = {4};
    static float data[4], buf[4];
    const dt_placement rep[1] = {DT_REPLICATE()}, sh[1] = {DT_SHARD(0)};
    dt_mesh m;
    dt_tensor x, out, before;
    dt_dispatch d;
    (void)state;
    memset(&d, 0, sizeof d);
    assert_int_equal(dt_mesh_init(&m, 1, &one, &other, 0), DT_OK); /* world rank 0: not in it */
    assert_int_equal(dt_spec_init(&x.spec, &m, rep, 1, MB_F32, 1, shape, NULL), DT_OK);
    assert_int_equal(mb_tensor_init(&x.local, data, MB_F32, 1, shape), MB_OK);
    memset(&out, 0x5d, sizeof out);
    before = out;
    assert_int_equal(dt_tp_redistribute(&d, &x, 0, sh[0], &out, buf, 0), DT_ERR_NOT_MEMBER);
    assert_int_equal(dt_tp_redistribute(&d, &x, 0, rep[0], &out, buf, sizeof buf), DT_ERR_NOT_MEMBER);
    assert_memory_equal(&out, &before, sizeof out);
}

/* An independent harness: mb_normalize_dim(INT_MIN, -8) computed dim + ndim in int (signed
   overflow) and a negative ndim widened the accepted range. Every dim of a negative ndim is
   MB_ERR_DIM, and no sum overflows. */
static void test_normalize_dim_extremes(void **state)
{
    (void)state;
    assert_int_equal(mb_normalize_dim(INT32_MIN, -8), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(INT32_MIN, 8), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(INT32_MAX, 8), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(-1, -8), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(3, -8), MB_ERR_DIM);
    assert_int_equal(mb_normalize_dim(-1, INT32_MAX), INT32_MAX - 1);
    assert_int_equal(mb_normalize_dim(INT32_MIN + 1, INT32_MAX), 0);
}

/* An independent harness: dt_mul_qmul with a multiplier of shift INT32_MIN negated it
   (signed overflow), although the function cannot fail. A right shift past 31 now rounds
   as 31 does (the result is 0 or +-1), like a left shift past 31 saturates as 31. */
static void test_qmul_extreme_shift(void **state)
{
    static const int32_t xs[6] = {0, 1, -1, 1000, INT32_MAX, INT32_MIN};
    dt_qmul q = {1 << 30, INT32_MIN}, q31 = {1 << 30, -31}, up = {1 << 30, INT32_MAX}, up31 = {1 << 30, 31};
    int i;
    (void)state;
    for (i = 0; i < 6; i++) {
        assert_int_equal(dt_mul_qmul(xs[i], q), dt_mul_qmul(xs[i], q31));
        assert_int_equal(dt_mul_qmul(xs[i], up), dt_mul_qmul(xs[i], up31));
    }
    assert_int_equal(dt_mul_qmul(INT32_MAX, q), 1);
    assert_int_equal(dt_mul_qmul(1000, q), 0);
}

/* An int8 reference check: DT_QMM_MAX_K was 2^31 / (128 * 128) = 131072, where K products
   of -128 * -128 sum to 2^31 and overflow int32 (UBSan; the sum came out -2^31, an output of
   -2 instead of +2). 131071 is the largest K whose sum always fits; int8 conv2d's
   C_in / groups * KH * KW takes the same bound. One int8 value each, viewed with stride 0. */
static void test_qmm_max_k_sum_fits_int32(void **state)
{
    static const dt_conv2d_params p = DT_CONV2D(DT_NCHW, 1, 0, 1, 1);
    const int32_t one = 1, os[4] = {1, 1, 1, 1};
    int8_t m128 = -128, y = 0;
    int32_t acc = 0, bias = 0, k;
    dt_qmul q;
    mb_tensor a, b, c, x, w, out, bt;
    (void)state;
    assert_int_equal(dt_quantize_multiplier(1.0 / 1073741824.0, &q), DT_OK); /* 2^-30: acc / 2^30 */
    mb_tensor_init(&c, &acc, MB_I32, 2, os);
    mb_tensor_init(&bt, &bias, MB_I32, 1, &one);
    mb_tensor_init(&out, &y, MB_I8, 4, os);
    for (k = 131072; k >= 131071; k--) {
        int fits = k == 131071;
        memset(&a, 0, sizeof a); /* every element -128: one byte, strides 0 */
        a.data = &m128;
        a.dtype = MB_I8;
        a.ndim = 2;
        a.shape[0] = 1;
        a.shape[1] = k;
        b = a;
        b.shape[0] = k;
        b.shape[1] = 1;
        x = a;
        x.ndim = 4;
        x.shape[1] = k;
        x.shape[2] = x.shape[3] = 1;
        w = x;
        acc = 7;
        assert_int_equal(dt_qmm_acc(&a, &b, &c), fits ? DT_OK : DT_ERR_SHAPE);
        assert_int_equal(acc, fits ? k * 16384 : 7);
        y = 5;
        assert_int_equal(dt_conv2d_q8_ref(&p, &x, &w, &bt, &q, 1, 0, &out), fits ? DT_OK : DT_ERR_SHAPE);
        assert_int_equal(y, fits ? 2 : 5); /* 131071 * 2^14 / 2^30 = 1.99997 -> 2 */
    }
    assert_int_equal(DT_QMM_MAX_K, 131071);
}

/* An independent harness: dt_op with a plain (non-DTensor) argument whose sizes multiply
   past int32 (a valid stride-0 view of one float: 641 x 6700417 = 2^32 + 1 elements)
   took its element count modulo 2^32, 1, for a one-element tensor and replicated it. It is
   DT_ERR_MISMATCH now (a plain tensor of more than one element needs implicit
   replication), and a view whose sizes multiply past 2^63 is DT_ERR_SHAPE. */
static void test_dt_op_plain_numel_over_int32(void **state)
{
    static float x[16], one, out[16];
    const int32_t ms = 1, xs[2] = {4, 4};
    const dt_placement r[1] = {DT_REPLICATE()};
    dt_mesh m;
    dt_dispatch d;
    dt_tensor args[2], o, before;
    int i;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 1, &ms, NULL, 0), DT_OK);
    memset(&d, 0, sizeof d);
    memset(args, 0, sizeof args);
    assert_int_equal(dt_spec_init(&args[0].spec, &m, r, 1, MB_F32, 2, xs, NULL), DT_OK);
    mb_tensor_init(&args[0].local, x, MB_F32, 2, xs);
    args[1].local.data = &one; /* spec.mesh NULL: plain; every stride 0 */
    args[1].local.dtype = MB_F32;
    args[1].local.ndim = 2;
    args[1].local.shape[0] = 641;
    args[1].local.shape[1] = 6700417;
    memset(&o, 0x3c, sizeof o);
    before = o;
    assert_int_equal(dt_op(&d, DT_ATEN_ADD, NULL, args, 2, &o, out, sizeof out), DT_ERR_MISMATCH);
    assert_memory_equal(&o, &before, sizeof o);
    args[1].local.ndim = MB_MAX_DIMS; /* 6 sizes of 2^31 - 1: 2^186 elements */
    for (i = 0; i < MB_MAX_DIMS; i++) args[1].local.shape[i] = INT32_MAX;
    assert_int_equal(dt_op(&d, DT_ATEN_ADD, NULL, args, 2, &o, out, sizeof out), DT_ERR_SHAPE);
    assert_memory_equal(&o, &before, sizeof o);
}

/* An independent harness: dt_kernel_ref checked nothing. A NULL operand was dereferenced,
   an output of ndim 0 read shape[-1], and out[4,4] = a[2,2] @ b[2,2] read past a and b. It
   now checks its operands as dt_propagate checks specs (and the output's shape and dtype
   against the op's): nothing is read or written on bad input. */
static void test_kernel_ref_checks_operands(void **state)
{
    static float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, y[16];
    const int32_t s22[2] = {2, 2}, s44[2] = {4, 4};
    mb_tensor ta, tb, ty, t0;
    const mb_tensor *in[2], *in_null[2];
    float before[16];
    int i;
    (void)state;
    mb_tensor_init(&ta, a, MB_F32, 2, s22);
    mb_tensor_init(&tb, b, MB_F32, 2, s22);
    mb_tensor_init(&ty, y, MB_F32, 2, s44);
    mb_tensor_init(&t0, y, MB_F32, 0, NULL);
    in[0] = in_null[0] = &ta;
    in[1] = &tb;
    in_null[1] = NULL;
    for (i = 0; i < 16; i++) y[i] = before[i] = (float)(100 + i);
    assert_int_equal(dt_kernel_ref(DT_ATEN_MM, NULL, &ty, in, 2), DT_ERR_MISMATCH); /* 4x4 = 2x2 @ 2x2 */
    assert_int_equal(dt_kernel_ref(DT_ATEN_MM, NULL, &t0, in, 2), DT_ERR_MISMATCH); /* 0-d output */
    assert_int_equal(dt_kernel_ref(DT_ATEN_MM, NULL, &ty, in_null, 2), DT_ERR_NULL);
    assert_int_equal(dt_kernel_ref(DT_ATEN_ADD, NULL, &t0, in_null, 2), DT_ERR_NULL);
    assert_int_equal(dt_kernel_ref(DT_ATEN_RELU, NULL, &ty, in, 1), DT_ERR_MISMATCH);
    assert_memory_equal(y, before, sizeof y);
    mb_tensor_init(&ty, y, MB_F32, 2, s22); /* the right output: a @ b */
    assert_int_equal(dt_kernel_ref(DT_ATEN_MM, NULL, &ty, in, 2), DT_OK);
    assert_true(y[0] == 19.0f && y[1] == 22.0f && y[2] == 43.0f && y[3] == 50.0f);
}

/* An independent harness: a pg_group or dt_comm copied by value kept pointers into the
   original (the group's built-in scratch, the dt_comm's sub-groups): the harness used a
   copy after the original's scope ended (ASan: stack-use-after-scope). Both carry a pointer
   to themselves now, checked on use: a copy is refused (PG_ERR_COPIED, DT_ERR_COPIED),
   nothing is sent or written; the original works. One rank over a port that only loops
   back (runs on every target). */
static int loop_send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t timeout_ms)
{
    (void)port, (void)dst, (void)tag, (void)buf, (void)timeout_ms;
    return (int)bytes;
}
static int loop_recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    (void)port, (void)src, (void)tag, (void)buf, (void)cap, (void)timeout_ms;
    *got = 0;
    return PG_ERR_TIMEOUT;
}
static int loop_probe(void *port, int src, uint32_t tag, size_t *bytes)
{
    (void)port, (void)src, (void)tag, (void)bytes;
    return 0;
}
static void test_copied_group_and_comm_refused(void **state)
{
    static pg_ops ops;
    static pg_group world, copy, sub_copy;
    static dt_comm comm, comm_copy;
    static float x[4] = {1, 2, 3, 4}, y[4];
    const int32_t one = 1, xs[1] = {4};
    const int me[1] = {0};
    const dt_placement s0[1] = {DT_SHARD(0)}, r[1] = {DT_REPLICATE()};
    dt_mesh m;
    dt_spec a, b;
    mb_tensor in, out;
    float before[4] = {9, 9, 9, 9};
    (void)state;
    memset(&ops, 0, sizeof ops);
    ops.send = loop_send;
    ops.recv = loop_recv;
    ops.probe = loop_probe;
    assert_int_equal(pg_group_init(&world, &ops, NULL, 0, 1, 64), PG_OK);
    copy = world;
    assert_int_equal(pg_rank(&world), 0);
    assert_int_equal(pg_rank(&copy), PG_ERR_COPIED);
    memcpy(y, before, sizeof y);
    assert_int_equal(pg_all_reduce(&copy, x, y, 4, MB_F32, PG_SUM), PG_ERR_COPIED);
    assert_int_equal(pg_barrier(&copy), PG_ERR_COPIED);
    assert_memory_equal(y, before, sizeof y);
    {
        pg_group sub; /* a sub-group whose scope ends: its copy must not reach its scratch */
        assert_int_equal(pg_subgroup_init(&sub, &world, me, 1), PG_OK);
        sub_copy = sub;
    }
    assert_int_equal(pg_all_reduce(&sub_copy, x, y, 4, MB_F32, PG_SUM), PG_ERR_COPIED);
    assert_int_equal(pg_all_reduce(&world, x, y, 4, MB_F32, PG_SUM), PG_OK);
    assert_memory_equal(y, x, sizeof y);

    assert_int_equal(dt_mesh_init(&m, 1, &one, NULL, 0), DT_OK);
    assert_int_equal(dt_comm_init(&comm, &m, &copy), DT_ERR_COPIED);
    assert_int_equal(dt_comm_init(&comm, &m, &world), DT_OK);
    comm_copy = comm;
    assert_int_equal(dt_spec_init(&a, &m, s0, 1, MB_F32, 1, xs, NULL), DT_OK);
    assert_int_equal(dt_spec_init(&b, &m, r, 1, MB_F32, 1, xs, NULL), DT_OK);
    mb_tensor_init(&in, x, MB_F32, 1, xs);
    mb_tensor_init(&out, y, MB_F32, 1, xs);
    memcpy(y, before, sizeof y);
    assert_null(dt_comm_group(&comm_copy, 0));
    assert_int_equal(dt_redistribute(&comm_copy, NULL, &a, &in, &b, 0, &out, NULL, 0), DT_ERR_COPIED);
    assert_memory_equal(y, before, sizeof y);
    assert_int_equal(dt_redistribute(&comm, NULL, &a, &in, &b, 0, &out, NULL, 0), DT_OK);
    assert_memory_equal(y, x, sizeof y);
}

/* Found while sizing mb_merge outputs: mb_merge summed the concat dim of its chunks in int32
   (two stride-0 chunks of 2^31 - 1 rows overflowed it). The sum is checked now: an output
   that cannot hold the chunks is MB_ERR_SHAPE, nothing written. */
static void test_merge_concat_sum_over_int32(void **state)
{
    static float one = 1.0f, y[4];
    mb_value chunks[2], out[1], before[1];
    (void)state;
    memset(chunks, 0, sizeof chunks);
    chunks[0].kind = MB_VALUE_TENSOR;
    chunks[0].tensor.data = &one; /* every stride 0 */
    chunks[0].tensor.dtype = MB_F32;
    chunks[0].tensor.ndim = 1;
    chunks[0].tensor.shape[0] = INT32_MAX;
    chunks[1] = chunks[0];
    memset(out, 0, sizeof out);
    out[0].kind = MB_VALUE_TENSOR;
    out[0].tensor = chunks[0].tensor;
    out[0].tensor.data = y;
    out[0].tensor.shape[0] = 4;
    memcpy(before, out, sizeof out);
    assert_int_equal(mb_merge(chunks, 2, 1, NULL, 0, out), MB_ERR_SHAPE);
    assert_memory_equal(out, before, sizeof out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_sizes_near_int32_max),
        cmocka_unit_test(test_huge_shapes_are_shape_errors),
        cmocka_unit_test(test_narrow_null_empty_view),
        cmocka_unit_test(test_view_extent_over_ptrdiff),
        cmocka_unit_test(test_masked_split_of_huge_broadcast_view),
        cmocka_unit_test(test_csv_row_of_one_idle_round_trips),
        cmocka_unit_test(test_dt_spec_contiguous_stride_overflow),
        cmocka_unit_test(test_graph_output_over_int32_elements),
        cmocka_unit_test(test_maxpool_window_over_padding_only),
        cmocka_unit_test(test_peak_inflight_of_stage_major_inference),
        cmocka_unit_test(test_exec_loss_after_failed_step),
        cmocka_unit_test(test_validate_checks_sends),
        cmocka_unit_test(test_validate_checks_skip_sends),
        cmocka_unit_test(test_simulate_skip_transfer_without_routes),
        cmocka_unit_test(test_exec_stageless_rank_clears_its_error),
#ifdef FUZZ_REGRESSIONS_THREADS
        cmocka_unit_test(test_exec_agreement_outlives_next_step_abort),
        cmocka_unit_test(test_qmm_refuses_no_multipliers_before_messages),
        cmocka_unit_test(test_exec_integer_chain_gradient_crosses_ranks),
        cmocka_unit_test(test_exec_weight_after_previous_stage_released),
#endif
        cmocka_unit_test(test_avg_partial_of_ints_refused_by_the_plan),
        cmocka_unit_test(test_tp_redistribute_off_the_mesh),
        cmocka_unit_test(test_partition_before_pending_product_refused),
        cmocka_unit_test(test_normalize_dim_extremes),
        cmocka_unit_test(test_qmul_extreme_shift),
        cmocka_unit_test(test_qmm_max_k_sum_fits_int32),
        cmocka_unit_test(test_dt_op_plain_numel_over_int32),
        cmocka_unit_test(test_kernel_ref_checks_operands),
        cmocka_unit_test(test_copied_group_and_comm_refused),
        cmocka_unit_test(test_merge_concat_sum_over_int32),
    };
    return cmocka_run_group_tests_name("fuzz regressions", tests, NULL, NULL);
}
