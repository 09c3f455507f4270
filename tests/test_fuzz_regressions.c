/* test_fuzz_regressions.c — every bug the libFuzzer targets (tests/fuzz/) found, as a test.

   Each case is the smallest call that showed the bug under ASan/UBSan; the fuzzer's own
   input also stays in tests/fuzz/corpus/<target>/ (run first by every fuzzing session).
   This suite runs on the host under ASan + UBSan and under QEMU on every target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PIPELINE_IMPLEMENTATION
#define PP_NO_EXECUTOR 1
#include "pipeline.h"
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION
#define DTENSOR_GRAPH_IMPLEMENTATION
#include "dtensor_conv.h"
#include "dtensor_graph.h"

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
    };
    return cmocka_run_group_tests_name("fuzz regressions", tests, NULL, NULL);
}
