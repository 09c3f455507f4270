/* test_dtensor_ops.c — dtensor_ops.h: sharding propagation (strategy
   counts, torch's choices, Partial rules, the cache), the local kernels, and the
   dispatcher over pg_pthread.h with 4 ranks on a 1-D mesh of 4 and a 2x2 mesh: every op
   under every combination of input placements (Replicate, Shard of each dim, Partial)
   against the same op computed on one rank from the global tensors.
   Built with DT_CBLAS (scons blas=openblas), the dispatcher runs the einsum ops through
   dt_kernel_cblas, installed in the kernel table, and test_kernel_cblas checks it.
   tests/test_dtensor_ops_mpi.c runs the dispatcher part over pg_mpi: it defines DTO_MPI
   (pg_mpi instead of pg_pthread, its own dto_run and main) and DTO_MESH1/DTO_MESH2 (the
   every-op tests' meshes on its world of 2 or 4) and includes this file; a bare-metal
   board (tests/target/sse200_smp) does the same with DTO_BOARD: its cores over pg_shm. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#include "dtensor_ops.h"
#if defined(DTO_MPI) || defined(DTO_BOARD)
#ifdef DTO_MPI
#define PG_MPI_IMPLEMENTATION
#include "ports/pg_mpi.h"
#endif
static int dto_run(int (*fn)(pg_group *g, void *arg), void *arg); /* test_dtensor_ops_mpi.c, the board */
#define DTO_RUN(fn, arg) dto_run(fn, arg)
#else
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
static pg_pthread_world world;
#define DTO_RUN(fn, arg) pg_pthread_run(&world, NR, fn, arg)
#endif
#ifndef DTO_CASE
#define DTO_CASE(op) 1 /* which ops' cases the dispatcher tests run */
#endif
#ifndef DTO_MESH1 /* the meshes of the every-op dispatch tests (test_dtensor_ops_mpi.c: its world's) */
#define DTO_MESH1 one
#define DTO_MESH2 two
#endif

#define R_   DT_REPLICATE()
#define S0   DT_SHARD(0)
#define S1   DT_SHARD(1)
#define PSUM DT_PARTIAL(DT_SUM)

/* ---- propagation (no communication: rank 0's view) ---- */

static dt_mesh mesh1, mesh2;
static const int32_t one[1] = {4}, two[2] = {2, 2};

static void spec(dt_spec *s, const dt_mesh *m, const dt_placement *p, int ndim, int32_t d0, int32_t d1, int32_t d2)
{
    int32_t sh[3];
    sh[0] = d0;
    sh[1] = d1;
    sh[2] = d2;
    assert_int_equal(dt_spec_init(s, m, p, m->ndim, MB_F32, ndim, sh, NULL), 0);
}

static int same(const dt_placement *a, const dt_placement *b, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (a[i].kind != b[i].kind || a[i].arg != b[i].arg) return 0;
    return 1;
}

/* How many strategies op generates for two replicated operands of these shapes. */
static int count(const dt_mesh *m, int op, int ndim, const int32_t *sa, const int32_t *sb)
{
    dt_spec a, b;
    const dt_spec *args[2] = {&a, &b};
    dt_placement rr[2] = {R_, R_};
    dt_op_strategy s;
    spec(&a, m, rr, ndim, sa[0], sa[1], sa[2]);
    spec(&b, m, rr, ndim, sb[0], sb[1], sb[2]);
    assert_int_equal(dt_propagate(NULL, op, NULL, args, 2, &s), 0);
    assert_int_equal(s.index, 0); /* R,R needs no redistribution: the all-Replicate one */
    return s.count;
}

static void test_strategy_counts(void **state)
{
    static const int32_t m88[3] = {8, 8, 0}, m38[3] = {3, 8, 0}, b488[3] = {4, 8, 8};
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    assert_int_equal(dt_mesh_init(&mesh2, 2, two, NULL, 0), 0);
    assert_int_equal(count(&mesh1, DT_ATEN_MM, 2, m88, m88), 4);
    assert_int_equal(count(&mesh2, DT_ATEN_MM, 2, m88, m88), 16);
    assert_int_equal(count(&mesh1, DT_ATEN_BMM, 3, b488, b488), 5);
    assert_int_equal(count(&mesh2, DT_ATEN_BMM, 3, b488, b488), 25);
    /* is_tensor_shardable: a (3,8) lhs cannot be sharded 4 ways on dim 0 (S(0),R->S(0) dropped) */
    assert_int_equal(count(&mesh1, DT_ATEN_MM, 2, m38, m88), 3);
    /* linear = t + mm: mm's counts for a 2-D x; one more per extra row dim of x */
    assert_int_equal(count(&mesh1, DT_ATEN_LINEAR, 2, m88, m88), 4);
    assert_int_equal(count(&mesh2, DT_ATEN_LINEAR, 2, m88, m88), 16);
}

/* linear's strategies are mm's on (x, w^T): w S(0) plays w^T's S(1) and back. */
static void linear_case(int xnd, const dt_placement *px, const dt_placement *pw, const dt_placement *pb,
                        const dt_placement *want_out, const dt_placement *want_x, const dt_placement *want_w,
                        const dt_placement *want_b, int want_count)
{
    dt_spec x, w, b;
    const dt_spec *args[3] = {&x, &w, &b};
    dt_op_strategy s;
    if (xnd == 3)
        spec(&x, &mesh1, px, 3, 4, 8, 12);
    else
        spec(&x, &mesh1, px, 2, 8, 12, 0);
    spec(&w, &mesh1, pw, 2, 16, 12, 0);
    if (pb) spec(&b, &mesh1, pb, 1, 16, 0, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LINEAR, NULL, args, pb ? 3 : 2, &s), 0);
    assert_int_equal(s.count, want_count);
    assert_int_equal(s.out_ndim, xnd);
    assert_int_equal(s.out_shape[xnd - 1], 16);
    assert_int_equal(s.out_shape[xnd - 2], 8);
    assert_true(same(s.out, want_out, 1));
    assert_true(same(s.in[0], want_x, 1));
    assert_true(same(s.in[1], want_w, 1));
    if (pb) assert_true(same(s.in[2], want_b, 1));
}

static void test_linear_rules(void **state)
{
    dt_placement r[1] = {R_}, s0[1] = {S0}, s1[1] = {S1}, s2[1] = {DT_SHARD(2)}, ps[1] = {PSUM};
    dt_spec x, w, b;
    const dt_spec *args[3] = {&x, &w, &b};
    dt_op_strategy s;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    linear_case(2, r, s0, r, s1, r, s0, s0, 4);   /* colwise: w S(0) -> out S(-1), bias S(0) */
    linear_case(2, s1, s1, r, ps, s1, s1, ps, 4); /* rowwise: x S(-1), w S(1) -> P(sum), bias P */
    linear_case(2, s0, r, r, s0, s0, r, r, 4);    /* x S(0), w R -> S(0), bias R */
    linear_case(2, r, r, NULL, r, r, r, NULL, 4);
    linear_case(3, s1, r, NULL, s1, s1, r, NULL, 5); /* a 3-D x: its dim 1 is a row dim too */
    linear_case(3, s2, s1, NULL, ps, s2, s1, NULL, 5);
    /* a S(0) bias cannot become Partial (Shard -> Partial is no redistribution): 4 left */
    linear_case(3, r, s0, s0, s2, r, s0, s0, 4);
    /* bad shapes: k differs, w not 2-D, bias not (16,), x 1-D */
    spec(&x, &mesh1, r, 2, 8, 12, 0);
    spec(&w, &mesh1, r, 2, 16, 11, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LINEAR, NULL, args, 2, &s), DT_ERR_SHAPE);
    spec(&w, &mesh1, r, 3, 16, 12, 1);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LINEAR, NULL, args, 2, &s), DT_ERR_SHAPE);
    spec(&w, &mesh1, r, 2, 16, 12, 0);
    spec(&b, &mesh1, r, 1, 15, 0, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LINEAR, NULL, args, 3, &s), DT_ERR_SHAPE);
    spec(&b, &mesh1, r, 2, 1, 16, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LINEAR, NULL, args, 3, &s), DT_ERR_SHAPE);
    spec(&x, &mesh1, r, 1, 12, 0, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LINEAR, NULL, args, 2, &s), DT_ERR_SHAPE);
}

static void mm_case(const dt_placement *pa, const dt_placement *pb, const dt_placement *want_out,
                    const dt_placement *want_a, const dt_placement *want_b)
{
    dt_spec a, b;
    const dt_spec *args[2] = {&a, &b};
    dt_op_strategy s;
    spec(&a, &mesh1, pa, 2, 8, 8, 0);
    spec(&b, &mesh1, pb, 2, 8, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_MM, NULL, args, 2, &s), 0);
    assert_true(same(s.out, want_out, 1));
    assert_true(same(s.in[0], want_a, 1));
    assert_true(same(s.in[1], want_b, 1));
}

static void test_mm_rules(void **state)
{
    dt_placement r[1] = {R_}, s0[1] = {S0}, s1[1] = {S1}, ps[1] = {PSUM};
    dt_spec a, b, t;
    const dt_spec *args[2] = {&a, &b};
    dt_op_strategy s;
    dt_plan pl;
    uint64_t ns;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    mm_case(s0, r, s0, s0, r);   /* S(0) x R -> S(0) */
    mm_case(r, s1, s1, r, s1);   /* R x S(1) -> S(1) */
    mm_case(s1, s0, ps, s1, s0); /* S(1) x S(0) -> P(sum) */
    mm_case(r, r, r, r, r);      /* R x R -> R */
    /* S(0) x S(0): the cheapest is gathering the rhs (one all_gather) over an all_to_all */
    mm_case(s0, s0, s0, s0, r);
    spec(&a, &mesh1, s0, 2, 8, 8, 0);
    spec(&b, &mesh1, s0, 2, 8, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_MM, NULL, args, 2, &s), 0);
    assert_int_equal(s.index, 2);
    /* torch's redistribute_cost in double, to the bit: an all_gather of 256 B over 4 ranks,
       6.6 + 3 * 0.6 + 256 / 4 / 2^30 * 4 * 3 / 4 / 87.7 * 1e6 us; dt_plan_cost_ns's whole-ns
       model of the same plan (its own link figures) gives 8,402 ns */
    assert_true(s.cost_us == 8.402038927415349);
    spec(&t, &mesh1, r, 2, 8, 8, 0);
    assert_int_equal(dt_plan_redistribute(&b, &t, 0, &pl), 0);
    assert_int_equal(dt_plan_cost_ns(&pl, NULL, &ns), 0);
    assert_int_equal(ns, 8402);
    /* P(sum) x R: reduce_scatter to S(1) ties with reduce_scatter to S(0) (all_reduce
       costs twice): the first of minimum cost, S(1) x S(0) -> P(sum) */
    mm_case(ps, r, ps, s1, s0);
}

/* Gathers that differ by a fraction of a ns still decide, as torch's float costs do: mesh
   [2], A (2,2) S(0), B (2,7) S(1). Gathering A (16 B) costs 7.200084955308972 us, gathering
   B (56 B) 7.200297343581404 us: torch takes R,S(1) -> S(1); whole ns (7,200 each) would tie
   and take the first, S(0),R -> S(0). */
static void test_mm_fractional_tie_break(void **state)
{
    static const int32_t two1[1] = {2};
    dt_placement s0[1] = {S0}, s1[1] = {S1}, r[1] = {R_};
    dt_mesh m;
    dt_spec a, b;
    const dt_spec *args[2] = {&a, &b};
    dt_op_strategy s;
    (void)state;
    assert_int_equal(dt_mesh_init(&m, 1, two1, NULL, 0), 0);
    spec(&a, &m, s0, 2, 2, 2, 0);
    spec(&b, &m, s1, 2, 2, 7, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_MM, NULL, args, 2, &s), 0);
    assert_int_equal(s.index, 3);
    assert_true(same(s.in[0], r, 1) && same(s.in[1], s1, 1) && same(s.out, s1, 1));
    assert_true(s.cost_us == 7.200084955308972);
}

static void pw_case(int op, const dt_placement *pa, const dt_placement *pb, const dt_placement *want_out,
                    const dt_placement *want_a, const dt_placement *want_b)
{
    dt_spec a, b;
    const dt_spec *args[2] = {&a, &b};
    dt_op_strategy s;
    int n = (op == DT_ATEN_NEG || op == DT_ATEN_RELU) ? 1 : 2;
    spec(&a, &mesh1, pa, 2, 8, 8, 0);
    if (n == 2) spec(&b, &mesh1, pb, 2, 8, 8, 0);
    assert_int_equal(dt_propagate(NULL, op, NULL, args, n, &s), 0);
    assert_int_equal(s.count, 1);
    assert_true(same(s.out, want_out, 1));
    assert_true(same(s.in[0], want_a, 1));
    if (n == 2) assert_true(same(s.in[1], want_b, 1));
}

static void test_pointwise_rules(void **state)
{
    dt_placement r[1] = {R_}, s0[1] = {S0}, s1[1] = {S1}, ps[1] = {PSUM}, pa[1] = {DT_PARTIAL(DT_AVG)},
                 pmax[1] = {DT_PARTIAL(DT_MAX)}, pmin[1] = {DT_PARTIAL(DT_MIN)};
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    pw_case(DT_ATEN_ADD, ps, ps, ps, ps, ps);  /* P + P -> P (sum) */
    pw_case(DT_ATEN_SUB, pa, pa, pa, pa, pa);  /* ... and avg */
    pw_case(DT_ATEN_ADD, ps, r, ps, ps, ps);   /* P(sum) + R: the R is partitioned */
    pw_case(DT_ATEN_ADD, r, ps, r, r, r);      /* follows the first on ties: all_reduce */
    pw_case(DT_ATEN_ADD, pmax, pmax, r, r, r); /* max is not additive: reduce both */
    pw_case(DT_ATEN_MUL, ps, r, ps, ps, r);    /* P(sum) x R -> P */
    pw_case(DT_ATEN_MUL, ps, ps, ps, ps, r);   /* only one factor may stay Partial */
    pw_case(DT_ATEN_DIV, ps, r, ps, ps, r);    /* through the numerator */
    pw_case(DT_ATEN_DIV, r, ps, r, r, r);      /* not the denominator */
    pw_case(DT_ATEN_ADD, s0, ps, s0, s0, s0);  /* follows the sharded one: reduce_scatter */
    pw_case(DT_ATEN_MUL, r, s1, s1, s1, s1);
    pw_case(DT_ATEN_NEG, ps, NULL, ps, ps, NULL);
    pw_case(DT_ATEN_NEG, pmax, NULL, pmin, pmax, NULL); /* neg swaps max and min */
    pw_case(DT_ATEN_NEG, pmin, NULL, pmax, pmin, NULL);
    pw_case(DT_ATEN_RELU, pmax, NULL, pmax, pmax, NULL); /* monotone: keeps max/min */
    pw_case(DT_ATEN_RELU, pmin, NULL, pmin, pmin, NULL);
    pw_case(DT_ATEN_RELU, ps, NULL, r, r, NULL); /* not linear: reduce first */
    pw_case(DT_ATEN_RELU, s0, NULL, s0, s0, NULL);
}

static void test_cache_and_errors(void **state)
{
    static dt_op_entry entries[2];
    dt_op_cache c;
    dt_spec a, b, x;
    const dt_spec *args[2] = {&a, &b};
    dt_op_strategy s, s2;
    dt_placement r[1] = {R_}, s0[1] = {S0}, ps[1] = {PSUM}, pmax[1] = {DT_PARTIAL(DT_MAX)};
    dt_mesh other;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    assert_int_equal(dt_op_cache_init(&c, entries, 2), 0);
    assert_int_equal(dt_op_cache_init(&c, entries, 0), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_op_cache_init(&c, entries, 2), 0);
    assert_int_equal(c.failed_op, -1);
    spec(&a, &mesh1, s0, 2, 8, 8, 0);
    spec(&b, &mesh1, r, 2, 8, 8, 0);
    assert_int_equal(dt_propagate(&c, DT_ATEN_MM, NULL, args, 2, &s), 0);
    assert_int_equal(c.misses, 1);
    assert_int_equal(c.hits, 0);
    assert_int_equal(dt_propagate(&c, DT_ATEN_MM, NULL, args, 2, &s2), 0);
    assert_int_equal(c.hits, 1);
    assert_memory_equal(&s, &s2, sizeof s);
    assert_int_equal(dt_propagate(&c, DT_ATEN_ADD, NULL, args, 2, &s2), 0); /* another op: a miss */
    assert_int_equal(c.misses, 2);
    spec(&b, &mesh1, r, 2, 8, 4, 0); /* another shape: a miss */
    assert_int_equal(dt_propagate(&c, DT_ATEN_MM, NULL, args, 2, &s2), 0);
    assert_int_equal(c.misses, 3);
    assert_int_equal(s2.out_shape[1], 4);
    /* a propagation failure names the op: P(sum) + P(max) has no strategy */
    spec(&a, &mesh1, ps, 2, 8, 8, 0);
    spec(&b, &mesh1, pmax, 2, 8, 8, 0);
    memset(&s2, 0x5a, sizeof s2);
    s = s2;
    assert_int_equal(dt_propagate(&c, DT_ATEN_ADD, NULL, args, 2, &s2), DT_ERR_NO_STRATEGY);
    assert_memory_equal(&s, &s2, sizeof s); /* untouched */
    assert_int_equal(c.failed_op, DT_ATEN_ADD);
    assert_string_equal(dt_op_name(c.failed_op), "add");
    assert_string_equal(dt_strerror(DT_ERR_NO_STRATEGY), "no sharding strategy");
    assert_null(dt_op_name(DT_ATEN_COUNT));
    /* bad input */
    spec(&a, &mesh1, r, 2, 8, 5, 0);
    spec(&b, &mesh1, r, 2, 8, 8, 0);
    assert_int_equal(dt_propagate(&c, DT_ATEN_MM, NULL, args, 2, &s2), DT_ERR_SHAPE); /* 5 != 8 */
    assert_int_equal(dt_propagate(&c, DT_ATEN_ADD, NULL, args, 2, &s2), DT_ERR_SHAPE);
    assert_int_equal(dt_propagate(&c, DT_ATEN_ADD, NULL, args, 1, &s2), DT_ERR_PLACEMENT_COUNT);
    assert_int_equal(dt_propagate(&c, DT_ATEN_COUNT, NULL, args, 2, &s2), DT_ERR_PLACEMENT_COUNT);
    assert_int_equal(dt_propagate(&c, DT_ATEN_MM, NULL, args, 2, NULL), DT_ERR_NULL);
    x = b;
    x.dtype = MB_I32;
    args[1] = &x;
    assert_int_equal(dt_propagate(&c, DT_ATEN_MM, NULL, args, 2, &s2), DT_ERR_DTYPE);
    assert_int_equal(dt_mesh_init(&other, 1, one, NULL, 1), 0); /* another coordinate */
    x = b;
    x.mesh = &other;
    assert_int_equal(dt_propagate(&c, DT_ATEN_MM, NULL, args, 2, &s2), DT_ERR_MISMATCH);
}

/* One input's propagation on rank 0's view: the chosen input target and output. */
static void one_case(const dt_mesh *m, int op, const dt_op_attrs *at, const dt_placement *p, int ndim, int32_t d0,
                     int32_t d1, int32_t d2, const dt_placement *want_in, const dt_placement *want_out)
{
    dt_spec a;
    const dt_spec *args[1] = {&a};
    dt_op_strategy s;
    spec(&a, m, p, ndim, d0, d1, d2);
    assert_int_equal(dt_propagate(NULL, op, at, args, 1, &s), 0);
    assert_int_equal(s.count, 1);
    assert_true(same(s.in[0], want_in, m->ndim));
    assert_true(same(s.out, want_out, m->ndim));
}

static void test_unary_rules(void **state)
{
    dt_placement r[1] = {R_};
    dt_op_attrs bad = {0};
    dt_spec a;
    const dt_spec *args[1] = {&a};
    dt_op_strategy s;
    int op;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    /* {op, input, output}: torch's non_decreasing_unary_ops keep Partial(max/min), not
       sum; gelu is not monotone; scalar_linear_ops: mul/div.Scalar keep sum/avg,
       add/sub.Scalar keep nothing (every dropped Partial is reduced first) */
    {
        static const struct {
            int op;
            dt_placement in, out;
        } t[] = {{DT_ATEN_EXP, DT_PARTIAL(DT_MAX), DT_PARTIAL(DT_MAX)},
                 {DT_ATEN_EXP, DT_PARTIAL(DT_MIN), DT_PARTIAL(DT_MIN)},
                 {DT_ATEN_EXP, PSUM, R_},
                 {DT_ATEN_TANH, DT_PARTIAL(DT_MAX), DT_PARTIAL(DT_MAX)},
                 {DT_ATEN_TANH, DT_PARTIAL(DT_MIN), DT_PARTIAL(DT_MIN)},
                 {DT_ATEN_TANH, DT_PARTIAL(DT_AVG), R_},
                 {DT_ATEN_SIGMOID, DT_PARTIAL(DT_MAX), DT_PARTIAL(DT_MAX)},
                 {DT_ATEN_SIGMOID, DT_PARTIAL(DT_MIN), DT_PARTIAL(DT_MIN)},
                 {DT_ATEN_SIGMOID, PSUM, R_},
                 {DT_ATEN_SIGMOID, S0, S0},
                 {DT_ATEN_GELU, DT_PARTIAL(DT_MAX), R_},
                 {DT_ATEN_GELU, PSUM, R_},
                 {DT_ATEN_GELU, S1, S1},
                 {DT_ATEN_MUL_SCALAR, PSUM, PSUM},
                 {DT_ATEN_DIV_SCALAR, DT_PARTIAL(DT_AVG), DT_PARTIAL(DT_AVG)},
                 {DT_ATEN_MUL_SCALAR, DT_PARTIAL(DT_MAX), R_},
                 {DT_ATEN_ADD_SCALAR, PSUM, R_},
                 {DT_ATEN_SUB_SCALAR, DT_PARTIAL(DT_MIN), R_},
                 {DT_ATEN_ADD_SCALAR, S0, S0},
                 {DT_ATEN_CLAMP, DT_PARTIAL(DT_MAX), R_},
                 {DT_ATEN_CLAMP, PSUM, R_},
                 {DT_ATEN_CLAMP, S1, S1}};
        for (op = 0; op < (int)(sizeof t / sizeof t[0]); op++) {
            dt_placement want_in = t[op].out.kind == DT_KIND_REPLICATE ? t[op].out : t[op].in;
            one_case(&mesh1, t[op].op, NULL, &t[op].in, 2, 8, 8, 0, &want_in, &t[op].out);
        }
    }
    /* gelu's approximate is "none" or "tanh" */
    bad.mode = 2;
    spec(&a, &mesh1, r, 2, 8, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_GELU, &bad, args, 1, &s), DT_ERR_SHAPE);
}

static void test_reduce_rules(void **state)
{
    static const int ops[6] = {DT_ATEN_SUM, DT_ATEN_MEAN, DT_ATEN_MAX, DT_ATEN_MIN, DT_ATEN_AMAX, DT_ATEN_ARGMAX};
    static const int reds[6] = {DT_SUM, DT_AVG, DT_MAX, DT_MIN, DT_MAX, -1};
    dt_placement r[1] = {R_}, s0[1] = {S0}, s1[1] = {S1}, ps[1] = {PSUM}, pmax[1] = {DT_PARTIAL(DT_MAX)},
                 s0s1[2] = {S0, S1}, s0r[2] = {S0, R_}, ps0[2] = {PSUM, S0};
    dt_op_attrs at = {0};
    dt_spec a;
    const dt_spec *args[1] = {&a};
    dt_op_strategy s;
    int i, d, k;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    assert_int_equal(dt_mesh_init(&mesh2, 2, two, NULL, 0), 0);
    /* (12,8,8) S(0) over each dim, keepdim both ways */
    for (i = 0; i < 6; i++)
        for (d = 0; d < 3; d++)
            for (k = 0; k < 2; k++) {
                dt_placement want = S0;
                at.dim = d;
                at.keepdim = k;
                if (d == 0 && reds[i] >= 0) { /* a sharded reduced dim: Partial of the op */
                    want.kind = DT_KIND_PARTIAL;
                    want.arg = (int16_t)reds[i];
                }
                if (d == 0 && reds[i] < 0) /* argmax: replicated first */
                    one_case(&mesh1, ops[i], &at, s0, 3, 12, 8, 8, r, r);
                else
                    one_case(&mesh1, ops[i], &at, s0, 3, 12, 8, 8, s0, &want);
                spec(&a, &mesh1, s0, 3, 12, 8, 8);
                assert_int_equal(dt_propagate(NULL, ops[i], &at, args, 1, &s), 0);
                assert_int_equal(s.out_ndim, k ? 3 : 2);
                assert_int_equal(s.out_shape[0], d == 0 ? (k ? 1 : 8) : 12);
                assert_int_equal(s.out_dtype, ops[i] == DT_ATEN_ARGMAX ? MB_I32 : MB_F32);
            }
    /* a shard after the reduced dim moves down unless keepdim */
    at.dim = 0;
    at.keepdim = 0;
    one_case(&mesh1, DT_ATEN_SUM, &at, s1, 3, 12, 8, 8, s1, s0);
    at.keepdim = 1;
    one_case(&mesh1, DT_ATEN_SUM, &at, s1, 3, 12, 8, 8, s1, s1);
    at.dim = -2;
    at.keepdim = 0;
    one_case(&mesh2, DT_ATEN_MAX, &at, s0s1, 3, 12, 8, 8, s0s1, (dt_placement[2]){S0, DT_PARTIAL(DT_MAX)});
    one_case(&mesh2, DT_ATEN_ARGMAX, &at, s0s1, 3, 12, 8, 8, s0r, s0r);
    /* full reductions: every shard becomes Partial; keepdim keeps ndim ones */
    at.dim = DT_DIM_ALL;
    one_case(&mesh2, DT_ATEN_SUM, &at, s0s1, 3, 12, 8, 8, s0s1, (dt_placement[2]){PSUM, PSUM});
    spec(&a, &mesh2, s0s1, 3, 12, 8, 8);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_SUM, &at, args, 1, &s), 0);
    assert_int_equal(s.out_ndim, 0);
    at.keepdim = 1;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_ARGMAX, &at, args, 1, &s), 0);
    assert_int_equal(s.out_ndim, 3);
    assert_true(s.out_shape[0] == 1 && s.out_shape[1] == 1 && s.out_shape[2] == 1);
    /* Partial inputs: the same op's Partial stays, another is reduced first */
    at.dim = 1;
    at.keepdim = 0;
    one_case(&mesh1, DT_ATEN_SUM, &at, ps, 3, 12, 8, 8, ps, ps);
    one_case(&mesh1, DT_ATEN_MAX, &at, pmax, 3, 12, 8, 8, pmax, pmax);
    one_case(&mesh1, DT_ATEN_AMAX, &at, ps, 3, 12, 8, 8, r, r);
    one_case(&mesh1, DT_ATEN_MEAN, &at, ps, 3, 12, 8, 8, r, r);
    one_case(&mesh2, DT_ATEN_MIN, &at, ps0, 3, 12, 8, 8, (dt_placement[2]){R_, S0}, (dt_placement[2]){R_, S0});
    /* mean: Partial(avg) only when evenly sharded (12 on 4: yes; 6 on 4: no, replicate) */
    at.dim = 0;
    one_case(&mesh1, DT_ATEN_MEAN, &at, s0, 3, 12, 8, 8, s0, (dt_placement[1]){DT_PARTIAL(DT_AVG)});
    one_case(&mesh1, DT_ATEN_MEAN, &at, s0, 3, 6, 8, 8, r, r);
    one_case(&mesh2, DT_ATEN_MEAN, &at, (dt_placement[2]){S0, S0}, 3, 8, 8, 8, (dt_placement[2]){S0, S0},
             (dt_placement[2]){DT_PARTIAL(DT_AVG), DT_PARTIAL(DT_AVG)});
    one_case(&mesh2, DT_ATEN_MEAN, &at, (dt_placement[2]){S0, S0}, 3, 6, 8, 8, (dt_placement[2]){R_, R_},
             (dt_placement[2]){R_, R_});
    one_case(&mesh1, DT_ATEN_SUM, &at, s0, 3, 6, 8, 8, s0, ps); /* sum does not care */
    /* bad dims */
    spec(&a, &mesh1, s0, 3, 12, 8, 8);
    at.dim = 3;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_SUM, &at, args, 1, &s), DT_ERR_DIM);
    at.dim = -4;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_ARGMAX, &at, args, 1, &s), DT_ERR_DIM);
    /* an empty reduced dim: sum is 0, max / argmax of nothing raise in torch */
    spec(&a, &mesh1, s0, 3, 12, 0, 8);
    at.dim = 1;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_SUM, &at, args, 1, &s), 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_AMAX, &at, args, 1, &s), DT_ERR_SHAPE);
    at.dim = DT_DIM_ALL;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_ARGMAX, &at, args, 1, &s), DT_ERR_SHAPE);
    at.dim = 2;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_MIN, &at, args, 1, &s), 0); /* dim 2 is not empty */
    spec(&a, &mesh1, s0, 3, 12, 8, 8);
    at.dim = -4;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_SOFTMAX, &at, args, 1, &s), DT_ERR_DIM);
}

static void test_softmax_norm_rules(void **state)
{
    dt_placement r[1] = {R_}, s0[1] = {S0}, ps[1] = {PSUM}, sh[3][1] = {{S0}, {S1}, {DT_SHARD(2)}};
    dt_op_attrs at = {0};
    dt_spec x, w, b;
    const dt_spec *args[3] = {&x, &w, &b};
    dt_op_strategy s;
    int d, k;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    assert_int_equal(dt_mesh_init(&mesh2, 2, two, NULL, 0), 0);
    /* (8,12,16) sharded on each dim, softmax over each dim: replicated only there */
    for (k = 0; k < 3; k++)
        for (d = 0; d < 3; d++) {
            at.dim = d - (k == 2 ? 3 : 0); /* negative dims too */
            one_case(&mesh1, DT_ATEN_SOFTMAX, &at, sh[k], 3, 8, 12, 16, d == k ? r : sh[k], d == k ? r : sh[k]);
            one_case(&mesh1, DT_ATEN_LOG_SOFTMAX, &at, sh[k], 3, 8, 12, 16, d == k ? r : sh[k], d == k ? r : sh[k]);
        }
    at.dim = 0;
    one_case(&mesh1, DT_ATEN_SOFTMAX, &at, ps, 3, 8, 12, 16, r, r);
    one_case(&mesh2, DT_ATEN_SOFTMAX, &at, (dt_placement[2]){S1, S0}, 3, 8, 12, 16, (dt_placement[2]){S1, R_},
             (dt_placement[2]){S1, R_});
    /* layer_norm over the last dim of (4,6,5): x's leading shards kept, weight/bias replicated */
    at.ndim = 1;
    at.shape[0] = 5;
    at.scalar = 1e-5f;
    spec(&x, &mesh2, (dt_placement[2]){S0, DT_SHARD(2)}, 3, 4, 6, 5);
    spec(&w, &mesh2, (dt_placement[2]){S0, R_}, 1, 5, 0, 0);
    spec(&b, &mesh2, (dt_placement[2]){PSUM, R_}, 1, 5, 0, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LAYER_NORM, &at, args, 3, &s), 0);
    assert_true(same(s.in[0], (dt_placement[2]){S0, R_}, 2));
    assert_true(same(s.in[1], (dt_placement[2]){R_, R_}, 2));
    assert_true(same(s.in[2], (dt_placement[2]){R_, R_}, 2));
    assert_true(same(s.out, (dt_placement[2]){S0, R_}, 2));
    assert_true(s.out_ndim == 3 && s.out_shape[2] == 5 && s.cost_us > 0.0);
    /* rms_norm over the last two dims: S(1) is replicated as well */
    at.ndim = 2;
    at.shape[0] = 6;
    at.shape[1] = 5;
    spec(&x, &mesh2, (dt_placement[2]){S1, S0}, 3, 4, 6, 5);
    spec(&w, &mesh2, (dt_placement[2]){R_, R_}, 2, 6, 5, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_RMS_NORM, &at, args, 2, &s), 0);
    assert_true(same(s.in[0], (dt_placement[2]){R_, S0}, 2));
    assert_true(same(s.in[1], (dt_placement[2]){R_, R_}, 2));
    assert_true(same(s.out, (dt_placement[2]){R_, S0}, 2));
    /* bad normalized_shape / weight */
    at.shape[0] = 4; /* (4,5) is not x's last two dims */
    assert_int_equal(dt_propagate(NULL, DT_ATEN_RMS_NORM, &at, args, 2, &s), DT_ERR_SHAPE);
    at.shape[0] = 6;
    at.ndim = 4; /* longer than x */
    assert_int_equal(dt_propagate(NULL, DT_ATEN_RMS_NORM, &at, args, 2, &s), DT_ERR_SHAPE);
    at.ndim = 0;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_RMS_NORM, &at, args, 2, &s), DT_ERR_SHAPE);
    at.ndim = 1;
    at.shape[0] = 5;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_RMS_NORM, &at, args, 2, &s), DT_ERR_SHAPE); /* w is (6,5) */
    spec(&w, &mesh2, (dt_placement[2]){R_, R_}, 1, 4, 0, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_RMS_NORM, &at, args, 2, &s), DT_ERR_SHAPE); /* w is (4,) */
    spec(&w, &mesh2, (dt_placement[2]){R_, R_}, 1, 5, 0, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_RMS_NORM, &at, args, 2, &s), 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_LAYER_NORM, &at, args, 2, &s), DT_ERR_PLACEMENT_COUNT);
    (void)s0;
}

/* The kernels against independent double-precision formulas and torch's printed values,
   on strided (transposed) inputs. */
static void test_kernel_ops(void **state)
{
    static float xs[4 * 6], y[4 * 6], w[6], bias[6];
    int32_t yi[6];
    int32_t s46[2] = {4, 6}, s64[2] = {6, 4}, s6[1] = {6}, s4[1] = {4}, s1[1] = {1};
    mb_tensor x, xt, ty, tw, tb, t1;
    const mb_tensor *in[3];
    dt_op_attrs at = {0};
    int i, j;
    (void)state;
    for (i = 0; i < 24; i++) xs[i] = (float)((i * 5) % 7) * 0.5f - 1.5f;
    for (i = 0; i < 6; i++) {
        w[i] = 0.5f + (float)i * 0.25f;
        bias[i] = (float)i - 2.0f;
    }
    mb_tensor_init(&x, xs, MB_F32, 2, s46);
    xt = x; /* (6,4) transposed view: xt[i][j] = x[j][i] */
    xt.shape[0] = 6;
    xt.shape[1] = 4;
    xt.stride[0] = 1;
    xt.stride[1] = 6;
    in[0] = &x;
    /* gelu(1) = 0.8413447, approximate='tanh': 0.8411920 (torch.nn.functional.gelu) */
    {
        float one_ = 1.0f, out1;
        mb_tensor_init(&t1, &one_, MB_F32, 1, s1);
        mb_tensor_init(&ty, &out1, MB_F32, 1, s1);
        in[0] = &t1;
        assert_int_equal(dt_kernel_ref(DT_ATEN_GELU, NULL, &ty, in, 1), 0);
        assert_true(fabsf(out1 - 0.8413447f) < 1e-6f);
        at.mode = 1;
        assert_int_equal(dt_kernel_ref(DT_ATEN_GELU, &at, &ty, in, 1), 0);
        assert_true(fabsf(out1 - 0.8411920f) < 1e-6f);
        at.mode = 2;
        assert_int_equal(dt_kernel_ref(DT_ATEN_GELU, &at, &ty, in, 1), DT_ERR_SHAPE);
        at.mode = 0;
        assert_int_equal(dt_kernel_ref(DT_ATEN_SIGMOID, NULL, &ty, in, 1), 0);
        assert_true(fabsf(out1 - 0.7310586f) < 1e-6f);
        at.scalar = 4.0f;
        assert_int_equal(dt_kernel_ref(DT_ATEN_DIV_SCALAR, &at, &ty, in, 1), 0);
        assert_true(out1 == 0.25f);
        assert_int_equal(dt_kernel_ref(DT_ATEN_SUB_SCALAR, &at, &ty, in, 1), 0);
        assert_true(out1 == -3.0f);
    }
    /* clamp (torch.clamp / hardtanh; ReLU6 is clamp(x, 0, 6)) against a loop, on the
       strided view; a NaN stays NaN, an infinite bound is none */
    {
        float v[6] = {-7.0f, -0.5f, 0.0f, 3.0f, 6.5f, NAN}, o[6];
        mb_tensor tv, to;
        mb_tensor_init(&tv, v, MB_F32, 1, s6);
        mb_tensor_init(&to, o, MB_F32, 1, s6);
        in[0] = &tv;
        at.scalar = 0.0f;
        at.scalar2 = 6.0f;
        assert_int_equal(dt_kernel_ref(DT_ATEN_CLAMP, &at, &to, in, 1), 0);
        assert_true(o[0] == 0.0f && o[1] == 0.0f && o[2] == 0.0f && o[3] == 3.0f && o[4] == 6.0f && o[5] != o[5]);
        at.scalar = -INFINITY;
        at.scalar2 = 1.0f;
        assert_int_equal(dt_kernel_ref(DT_ATEN_CLAMP, &at, &to, in, 1), 0);
        assert_true(o[0] == -7.0f && o[1] == -0.5f && o[3] == 1.0f && o[4] == 1.0f);
        mb_tensor_init(&ty, y, MB_F32, 2, s64);
        in[0] = &xt;
        at.scalar = -0.25f;
        at.scalar2 = 0.25f;
        assert_int_equal(dt_kernel_ref(DT_ATEN_CLAMP, &at, &ty, in, 1), 0);
        for (i = 0; i < 24; i++) {
            float e = xs[(i % 4) * 6 + i / 4];
            assert_true(y[i] == (e < -0.25f ? -0.25f : e > 0.25f ? 0.25f : e));
        }
        at.scalar = at.scalar2 = 0.0f;
        assert_string_equal(dt_op_name(DT_ATEN_CLAMP), "clamp");
    }
    /* exp and tanh on the strided view */
    mb_tensor_init(&ty, y, MB_F32, 2, s64);
    in[0] = &xt;
    assert_int_equal(dt_kernel_ref(DT_ATEN_TANH, NULL, &ty, in, 1), 0);
    for (i = 0; i < 6; i++)
        for (j = 0; j < 4; j++) assert_true(fabs(y[i * 4 + j] - tanh((double)xs[j * 6 + i])) < 1e-6);
    /* softmax / log_softmax over dim 0 of the (6,4) view: columns of x */
    at.dim = 0;
    for (i = DT_ATEN_SOFTMAX; i <= DT_ATEN_LOG_SOFTMAX; i++) {
        int c, k;
        assert_int_equal(dt_kernel_ref(i, &at, &ty, in, 1), 0);
        for (c = 0; c < 4; c++) {
            double m = -1e30, e = 0.0;
            for (k = 0; k < 6; k++) m = xs[c * 6 + k] > m ? xs[c * 6 + k] : m;
            for (k = 0; k < 6; k++) e += exp(xs[c * 6 + k] - m);
            for (k = 0; k < 6; k++) {
                double want = i == DT_ATEN_SOFTMAX ? exp(xs[c * 6 + k] - m) / e : xs[c * 6 + k] - m - log(e);
                assert_true(fabs(y[k * 4 + c] - want) < 1e-6);
            }
        }
    }
    /* reductions of the view over dim 1 (x's rows), keepdim */
    mb_tensor_init(&ty, y, MB_F32, 1, s6);
    at.dim = 1;
    assert_int_equal(dt_kernel_ref(DT_ATEN_MEAN, &at, &ty, in, 1), 0);
    for (i = 0; i < 6; i++) assert_true(fabsf(y[i] - (xs[i] + xs[6 + i] + xs[12 + i] + xs[18 + i]) / 4.0f) < 1e-6f);
    assert_int_equal(dt_kernel_ref(DT_ATEN_MIN, &at, &ty, in, 1), 0);
    for (i = 0; i < 6; i++) {
        float m = xs[i];
        for (j = 1; j < 4; j++) m = xs[j * 6 + i] < m ? xs[j * 6 + i] : m;
        assert_true(y[i] == m);
    }
    /* argmax: the first of equal maxima, a NaN wins; over all (flat index) */
    mb_tensor_init(&ty, yi, MB_I32, 1, s6);
    xs[2 * 6 + 3] = 100.0f;
    xs[3 * 6 + 3] = 100.0f;
    xs[1 * 6 + 5] = NAN;
    assert_int_equal(dt_kernel_ref(DT_ATEN_ARGMAX, &at, &ty, in, 1), 0);
    assert_int_equal(yi[3], 2);
    assert_int_equal(yi[5], 1);
    at.dim = DT_DIM_ALL;
    mb_tensor_init(&ty, yi, MB_I32, 0, s1);
    in[0] = &x;
    assert_int_equal(dt_kernel_ref(DT_ATEN_ARGMAX, &at, &ty, in, 1), 0);
    assert_int_equal(yi[0], 11); /* x[1][5], the NaN */
    mb_tensor_init(&ty, y, MB_F32, 0, s1);
    assert_int_equal(dt_kernel_ref(DT_ATEN_MAX, &at, &ty, in, 1), 0);
    assert_true(y[0] != y[0]);
    xs[1 * 6 + 5] = 0.0f;
    assert_int_equal(dt_kernel_ref(DT_ATEN_SUM, &at, &ty, in, 1), 0);
    {
        float s = 0.0f;
        for (i = 0; i < 24; i++) s += xs[i];
        assert_true(y[0] == s);
    }
    at.dim = 4;
    assert_int_equal(dt_kernel_ref(DT_ATEN_SUM, &at, &ty, in, 1), DT_ERR_DIM);
    /* layer_norm and rms_norm over the last dim of the (6,4) view, eps 1e-5 */
    mb_tensor_init(&ty, y, MB_F32, 2, s64);
    mb_tensor_init(&tw, w, MB_F32, 1, s4);
    mb_tensor_init(&tb, bias, MB_F32, 1, s4);
    in[0] = &xt;
    in[1] = &tw;
    in[2] = &tb;
    at.ndim = 1;
    at.shape[0] = 4;
    at.scalar = 1e-5f;
    for (i = DT_ATEN_LAYER_NORM; i <= DT_ATEN_RMS_NORM; i++) {
        int rr, k;
        assert_int_equal(dt_kernel_ref(i, &at, &ty, in, i == DT_ATEN_LAYER_NORM ? 3 : 2), 0);
        for (rr = 0; rr < 6; rr++) {
            double m = 0.0, v = 0.0;
            for (k = 0; k < 4; k++) m += xs[k * 6 + rr] / 4.0;
            if (i == DT_ATEN_RMS_NORM) m = 0.0;
            for (k = 0; k < 4; k++) v += (xs[k * 6 + rr] - m) * (xs[k * 6 + rr] - m) / 4.0;
            for (k = 0; k < 4; k++) {
                double want = (xs[k * 6 + rr] - m) / sqrt(v + 1e-5) * w[k] + (i == DT_ATEN_LAYER_NORM ? bias[k] : 0.0);
                assert_true(fabs(y[rr * 4 + k] - want) < 1e-5);
            }
        }
    }
    at.shape[0] = 6;
    in[1] = &x; /* weight of 24 elements for a normalized size of 4 */
    assert_int_equal(dt_kernel_ref(DT_ATEN_RMS_NORM, &at, &ty, in, 2), DT_ERR_SHAPE);
    at.ndim = 3;
    assert_int_equal(dt_kernel_ref(DT_ATEN_RMS_NORM, &at, &ty, in, 2), DT_ERR_SHAPE);
}

/* The reference kernel's mm against a plain triple loop on strided operands. */
static void test_kernel_mm(void **state)
{
    static float a[70 * 90], b[90 * 80], y[70 * 80], bias[80];
    int32_t sa[2] = {70, 90}, sb[2] = {90, 80}, sy[2] = {70, 80}, sbias[1] = {80};
    mb_tensor ta, tb, ty, tbias, tat;
    const mb_tensor *in[3];
    int i, j, k;
    (void)state;
    for (i = 0; i < 70 * 90; i++) a[i] = (float)((i * 7) % 11 - 5);
    for (i = 0; i < 90 * 80; i++) b[i] = (float)((i * 5) % 7 - 3);
    for (i = 0; i < 80; i++) bias[i] = (float)i;
    mb_tensor_init(&ta, a, MB_F32, 2, sa);
    mb_tensor_init(&tb, b, MB_F32, 2, sb);
    mb_tensor_init(&ty, y, MB_F32, 2, sy);
    mb_tensor_init(&tbias, bias, MB_F32, 1, sbias);
    in[0] = &tbias;
    in[1] = &ta;
    in[2] = &tb;
    assert_int_equal(dt_kernel_ref(DT_ATEN_ADDMM, NULL, &ty, in, 3), 0);
    for (i = 0; i < 70; i++)
        for (j = 0; j < 80; j++) {
            float s = bias[j];
            for (k = 0; k < 90; k++) s += a[i * 90 + k] * b[k * 80 + j];
            assert_true(s == y[i * 80 + j]);
        }
    /* a transposed view as lhs: (90,70)^T with strides {1, 70} over the same buffer */
    tat = ta;
    tat.shape[0] = 70;
    tat.shape[1] = 90;
    tat.stride[0] = 1;
    tat.stride[1] = 70;
    in[0] = &tat;
    in[1] = &tb;
    assert_int_equal(dt_kernel_ref(DT_ATEN_MM, NULL, &ty, in, 2), 0);
    for (i = 0; i < 70; i++)
        for (j = 0; j < 80; j++) {
            float s = 0.0f;
            for (k = 0; k < 90; k++) s += a[k * 70 + i] * b[k * 80 + j];
            assert_true(s == y[i * 80 + j]);
        }
}

/* linear: x @ w^T + b with contiguous rows (the dot-product kernel), a strided w (the
   mm kernel) and a 3-D x whose leading dims do not collapse (one batch each). */
static void test_kernel_linear(void **state)
{
    static float x[3 * 70 * 90], w[80 * 90], y[3 * 35 * 80], bias[80], wt[90 * 80];
    int32_t sx[2] = {70, 90}, sw[2] = {80, 90}, sy[2] = {70, 80}, sbias[1] = {80}, swt[2] = {90, 80},
            sy3[3] = {3, 35, 80};
    mb_tensor tx, tw, ty, tbias, twt;
    const mb_tensor *in[3];
    int i, j, k, pass, bt;
    (void)state;
    for (i = 0; i < 3 * 70 * 90; i++) x[i] = (float)((i * 7) % 11 - 5);
    for (i = 0; i < 80 * 90; i++) w[i] = (float)((i * 5) % 7 - 3);
    for (i = 0; i < 80; i++)
        for (k = 0; k < 90; k++) wt[k * 80 + i] = w[i * 90 + k];
    for (i = 0; i < 80; i++) bias[i] = (float)i;
    mb_tensor_init(&tx, x, MB_F32, 2, sx);
    mb_tensor_init(&tbias, bias, MB_F32, 1, sbias);
    for (pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            mb_tensor_init(&tw, w, MB_F32, 2, sw);
        } else { /* w as a transposed view of a (90,80) buffer: strides {1, 80} */
            mb_tensor_init(&twt, wt, MB_F32, 2, swt);
            tw = twt;
            tw.shape[0] = 80;
            tw.shape[1] = 90;
            tw.stride[0] = 1;
            tw.stride[1] = 80;
        }
        mb_tensor_init(&ty, y, MB_F32, 2, sy);
        in[0] = &tx;
        in[1] = &tw;
        in[2] = &tbias;
        memset(y, 0xff, sizeof y);
        assert_int_equal(dt_kernel_ref(DT_ATEN_LINEAR, NULL, &ty, in, 3), 0);
        for (i = 0; i < 70; i++)
            for (j = 0; j < 80; j++) {
                float s = bias[j];
                for (k = 0; k < 90; k++) s += x[i * 90 + k] * w[j * 90 + k];
                assert_true(s == y[i * 80 + j]);
            }
    }
    /* (3,35,90) x with strides {70*90, 2*90, 1} (every other row): no bias */
    tx.ndim = 3;
    tx.shape[0] = 3;
    tx.shape[1] = 35;
    tx.shape[2] = 90;
    tx.stride[0] = 70 * 90;
    tx.stride[1] = 2 * 90;
    tx.stride[2] = 1;
    mb_tensor_init(&tw, w, MB_F32, 2, sw);
    mb_tensor_init(&ty, y, MB_F32, 3, sy3);
    assert_int_equal(dt_kernel_ref(DT_ATEN_LINEAR, NULL, &ty, in, 2), 0);
    for (bt = 0; bt < 3; bt++)
        for (i = 0; i < 35; i++)
            for (j = 0; j < 80; j++) {
                float s = 0.0f;
                for (k = 0; k < 90; k++) s += x[bt * 70 * 90 + 2 * i * 90 + k] * w[j * 90 + k];
                assert_true(s == y[(bt * 35 + i) * 80 + j]);
            }
}

#if DT_CBLAS
/* dt_kernel_cblas (scons blas=openblas) against the reference kernel on the same operands. */
static void cblas_case(int op, mb_tensor *y, const mb_tensor *const *in, int nin)
{
    static float ref_y[4096];
    mb_tensor ry = *y;
    int i, n = 1;
    for (i = 0; i < y->ndim; i++) n *= y->shape[i];
    assert_true(n <= 4096);
    ry.data = ref_y;
    assert_int_equal(dt_kernel_ref(op, NULL, &ry, in, nin), 0);
    memset(y->data, 0xff, (size_t)n * sizeof(float));
    assert_int_equal(dt_kernel_cblas(op, NULL, y, in, nin), 0);
    for (i = 0; i < n; i++) assert_true(ref_y[i] == ((float *)y->data)[i]); /* small integers: exact */
}

static void test_kernel_cblas(void **state)
{
    static float a[2 * 24 * 20], b[2 * 20 * 30], bias[30], y[2 * 24 * 30];
    int32_t sa[2] = {24, 20}, sb[2] = {20, 30}, sy[2] = {24, 30}, sbias[1] = {30}, sw[2] = {30, 20};
    int32_t sa3[3] = {2, 24, 20}, sb3[3] = {2, 20, 30}, sy3[3] = {2, 24, 30}, sx3[3] = {2, 12, 20},
            sy3l[3] = {2, 12, 30};
    mb_tensor ta, tb, ty, tbias, t;
    const mb_tensor *in[3];
    int i;
    (void)state;
    for (i = 0; i < 2 * 24 * 20; i++) a[i] = (float)((i * 7) % 11 - 5);
    for (i = 0; i < 2 * 20 * 30; i++) b[i] = (float)((i * 5) % 7 - 3);
    for (i = 0; i < 30; i++) bias[i] = (float)i;
    mb_tensor_init(&ta, a, MB_F32, 2, sa);
    mb_tensor_init(&tb, b, MB_F32, 2, sb);
    mb_tensor_init(&ty, y, MB_F32, 2, sy);
    mb_tensor_init(&tbias, bias, MB_F32, 1, sbias);
    in[0] = &ta, in[1] = &tb;
    cblas_case(DT_ATEN_MM, &ty, in, 2);
    t = ta; /* a transposed lhs: (20,24)^T over the same buffer */
    t.stride[0] = 1, t.stride[1] = 24;
    in[0] = &t;
    cblas_case(DT_ATEN_MM, &ty, in, 2);
    in[0] = &tbias, in[1] = &ta, in[2] = &tb;
    cblas_case(DT_ATEN_ADDMM, &ty, in, 3);
    mb_tensor_init(&t, b, MB_F32, 2, sw); /* linear: w (30,20) */
    in[0] = &ta, in[1] = &t, in[2] = &tbias;
    cblas_case(DT_ATEN_LINEAR, &ty, in, 3);
    t.stride[0] = 1, t.stride[1] = 30; /* a transposed w */
    cblas_case(DT_ATEN_LINEAR, &ty, in, 3);
    mb_tensor_init(&ta, a, MB_F32, 3, sa3);
    mb_tensor_init(&tb, b, MB_F32, 3, sb3);
    mb_tensor_init(&ty, y, MB_F32, 3, sy3);
    in[0] = &ta, in[1] = &tb;
    cblas_case(DT_ATEN_BMM, &ty, in, 2);
    mb_tensor_init(&t, b, MB_F32, 2, sw);
    in[1] = &t;
    cblas_case(DT_ATEN_LINEAR, &ty, in, 2); /* 3-D x whose rows collapse */
    mb_tensor_init(&ty, y, MB_F32, 3, sy3l);
    ta.shape[1] = sx3[1], ta.stride[1] = 40; /* every other row: the reference kernel runs */
    cblas_case(DT_ATEN_LINEAR, &ty, in, 2);
}
#endif

/* Tensor-parallel styles: torch's placements (style.py), bad input, and
   dt_tp_redistribute's no-communication cases (a view, errors). */
static void test_tp_styles(void **state)
{
    dt_placement r[1] = {R_}, s0[1] = {S0}, s1[1] = {S1}, s2[1] = {DT_SHARD(2)}, sm1[1] = {DT_SHARD(-1)},
                 ps[1] = {PSUM};
    dt_tp_style st;
    dt_dispatch d;
    dt_tensor x, y;
    float data[64];
    int32_t sh[2] = {8, 8};
    (void)state;
    assert_int_equal(dt_tp_colwise(&st, DT_TP_LINEAR, sm1[0]), 0);
    assert_true(same(&st.input, r, 1) && same(&st.weight, s0, 1) && same(&st.bias, s0, 1));
    assert_true(same(&st.output, sm1, 1) && same(&st.output_layout, sm1, 1));
    assert_int_equal(dt_tp_colwise(&st, DT_TP_EMBEDDING, r[0]), 0);
    assert_true(same(&st.weight, s1, 1) && same(&st.output_layout, r, 1));
    assert_int_equal(dt_tp_rowwise(&st, DT_TP_LINEAR, r[0]), 0);
    assert_true(same(&st.input, sm1, 1) && same(&st.weight, s1, 1) && same(&st.bias, r, 1));
    assert_true(same(&st.output, ps, 1) && same(&st.output_layout, r, 1));
    assert_int_equal(dt_tp_rowwise(&st, DT_TP_EMBEDDING, s0[0]), 0); /* reduce_scatter to S(0) */
    assert_true(same(&st.input, r, 1) && same(&st.weight, s0, 1) && same(&st.output_layout, s0, 1));
    assert_int_equal(dt_tp_sequence(&st, 1), 0);
    assert_true(same(&st.input, s1, 1) && same(&st.weight, r, 1) && same(&st.output, s1, 1) &&
                same(&st.output_layout, s1, 1));
    assert_int_equal(dt_tp_rowwise(&st, DT_TP_LINEAR, ps[0]), DT_ERR_PLACEMENT); /* a layout is R or S */
    assert_int_equal(dt_tp_colwise(&st, 2, r[0]), DT_ERR_PLACEMENT);
    assert_int_equal(dt_tp_sequence(NULL, 1), DT_ERR_NULL);
    /* x S(1) on a mesh of 4 (rank 0): to S(-1) is a view of x itself, no communication */
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    spec(&x.spec, &mesh1, s1, 2, 8, 8, 0);
    sh[1] = 2;
    mb_tensor_init(&x.local, data, MB_F32, 2, sh);
    memset(&d, 0, sizeof d);
    assert_int_equal(dt_tp_redistribute(&d, &x, 0, sm1[0], &y, NULL, 0), 0);
    assert_true(y.local.data == data && same(y.spec.placements, s1, 1));
    assert_int_equal(dt_tp_redistribute(&d, &x, 1, r[0], &y, data, sizeof data), DT_ERR_MESH_DIM);
    assert_int_equal(dt_tp_redistribute(&d, &x, 0, ps[0], &y, data, sizeof data), DT_ERR_PARTIAL);
    assert_int_equal(dt_tp_redistribute(&d, &x, 0, r[0], &y, data, 4), DT_ERR_TOO_SMALL);
    assert_int_equal(dt_tp_redistribute(&d, &x, 0, s2[0], &y, data, sizeof data), DT_ERR_DIM);
    assert_int_equal(dt_tp_redistribute(NULL, &x, 0, r[0], &y, data, sizeof data), DT_ERR_NULL);
}

/* ---- the dispatcher over 4 pg_pthread ranks ---- */

#define NR  4
#define EL  1536
#define SCR 65536

static dt_mesh dm[NR];
static dt_comm dc[NR];
static dt_cache_entry pce[NR][16];
static dt_plan_cache pc[NR];
static dt_op_entry oce[NR][16];
static dt_op_cache oc[NR];
static float glob[NR][DT_MAX_OP_ARGS][EL], part[NR][EL], loc[NR][DT_MAX_OP_ARGS][EL];
static float yloc[NR][EL], yglob[NR][EL], ref[NR][EL];
static uint64_t scr[NR][SCR / 8], fscr[NR][SCR / 8];
static int kcalls[NR];
static int dispatched[NR], nostrategy[NR];

static int count_kernel(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    (void)op;
    kcalls[0]++;                                            /* only rank 0 installs it */
    return dt_kernel_ref(DT_ATEN_SUB, attrs, out, in, nin); /* a different op: the override runs */
}

#define CHECK(c)                                                                 \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "rank %d: check failed at line %d\n", me, __LINE__); \
            return __LINE__;                                                     \
        }                                                                        \
    } while (0)

typedef struct opcase {
    int op, nargs;
    int32_t ndim[DT_MAX_OP_ARGS];
    int32_t shape[DT_MAX_OP_ARGS][3];
    const dt_op_attrs *at; /* NULL: all zero */
} opcase;

/* Static arguments of the cases below: reductions over dim d (DT_DIM_ALL first) with
   keepdim k as rd[d + 1][k]; gelu's two modes; scalars; softmax dims; norms. */
static const dt_op_attrs rd[4][2] = {{{.dim = DT_DIM_ALL}, {.dim = DT_DIM_ALL, .keepdim = 1}},
                                     {{.dim = 0}, {.dim = 0, .keepdim = 1}},
                                     {{.dim = 1}, {.dim = 1, .keepdim = 1}},
                                     {{.dim = -1}, {.dim = -1, .keepdim = 1}}};
static const dt_op_attrs gelu_tanh = {.mode = 1}, scal = {.scalar = -2.5f},
                         sm[3] = {{.dim = 0}, {.dim = 1}, {.dim = -1}},
                         ln1 = {.ndim = 1, .shape = {5}, .scalar = 1e-5f},
                         ln2 = {.ndim = 2, .shape = {6, 5}, .scalar = 1e-6f};

static const opcase cases[] = {
    {DT_ATEN_MM, 2, {2, 2, 0}, {{6, 5, 0}, {5, 7, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_ADDMM, 3, {1, 2, 2}, {{7, 0, 0}, {6, 5, 0}, {5, 7, 0}}, NULL},
    {DT_ATEN_ADDMM, 3, {2, 2, 2}, {{6, 7, 0}, {6, 5, 0}, {5, 7, 0}}, NULL},
    {DT_ATEN_BMM, 2, {3, 3, 0}, {{4, 3, 5}, {4, 5, 2}, {0, 0, 0}}, NULL},
    {DT_ATEN_LINEAR, 3, {2, 2, 1}, {{6, 5, 0}, {7, 5, 0}, {7, 0, 0}}, NULL},
    {DT_ATEN_LINEAR, 2, {3, 2, 0}, {{4, 3, 5}, {6, 5, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_ADD, 2, {2, 2, 0}, {{6, 5, 0}, {6, 5, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_SUB, 2, {2, 2, 0}, {{6, 5, 0}, {6, 5, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_MUL, 2, {2, 2, 0}, {{6, 5, 0}, {6, 5, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_DIV, 2, {2, 2, 0}, {{6, 5, 0}, {6, 5, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_NEG, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_RELU, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, NULL},
    /* unary and scalar pointwise (issue #6 item 1) */
    {DT_ATEN_GELU, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_GELU, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, &gelu_tanh},
    {DT_ATEN_EXP, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_TANH, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_SIGMOID, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, NULL},
    {DT_ATEN_ADD_SCALAR, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, &scal},
    {DT_ATEN_SUB_SCALAR, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, &scal},
    {DT_ATEN_MUL_SCALAR, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, &scal},
    {DT_ATEN_DIV_SCALAR, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, &scal},
/* reductions on (12,8,8) over each dim and all, keepdim both ways; uneven (6,5,3):
       mean of an unevenly sharded dim replicates, max of an empty shard is -inf */
/* clang-format off */
#define RED(op, d, k, a, b, c) {op, 1, {3, 0, 0}, {{a, b, c}, {0, 0, 0}, {0, 0, 0}}, &rd[(d) + 1][k]}
    /* clang-format on */
    RED(DT_ATEN_SUM, -1, 0, 12, 8, 8),
    RED(DT_ATEN_SUM, -1, 1, 12, 8, 8),
    RED(DT_ATEN_SUM, 0, 0, 12, 8, 8),
    RED(DT_ATEN_SUM, 0, 1, 12, 8, 8),
    RED(DT_ATEN_SUM, 1, 0, 12, 8, 8),
    RED(DT_ATEN_SUM, 1, 1, 12, 8, 8),
    RED(DT_ATEN_SUM, 2, 0, 12, 8, 8),
    RED(DT_ATEN_SUM, 2, 1, 12, 8, 8),
    RED(DT_ATEN_MAX, -1, 0, 12, 8, 8),
    RED(DT_ATEN_MAX, 0, 0, 12, 8, 8),
    RED(DT_ATEN_MAX, 0, 1, 12, 8, 8),
    RED(DT_ATEN_MAX, 1, 0, 12, 8, 8),
    RED(DT_ATEN_MAX, 2, 1, 12, 8, 8),
    RED(DT_ATEN_MEAN, -1, 0, 12, 8, 8),
    RED(DT_ATEN_MEAN, 0, 1, 12, 8, 8),
    RED(DT_ATEN_MEAN, 1, 0, 12, 8, 8),
    RED(DT_ATEN_MEAN, 2, 1, 12, 8, 8),
    RED(DT_ATEN_MIN, -1, 1, 12, 8, 8),
    RED(DT_ATEN_MIN, 0, 0, 12, 8, 8),
    RED(DT_ATEN_MIN, 1, 1, 12, 8, 8),
    RED(DT_ATEN_AMAX, 0, 1, 12, 8, 8),
    RED(DT_ATEN_AMAX, 2, 0, 12, 8, 8),
    RED(DT_ATEN_ARGMAX, -1, 0, 12, 8, 8),
    RED(DT_ATEN_ARGMAX, 0, 0, 12, 8, 8),
    RED(DT_ATEN_ARGMAX, 1, 1, 12, 8, 8),
    RED(DT_ATEN_ARGMAX, 2, 0, 12, 8, 8),
    RED(DT_ATEN_MEAN, 0, 0, 6, 5, 3),
    RED(DT_ATEN_MEAN, 1, 1, 6, 5, 3),
    RED(DT_ATEN_MAX, 0, 0, 6, 5, 3),
    RED(DT_ATEN_MIN, 0, 1, 6, 5, 3),
    RED(DT_ATEN_SUM, -1, 0, 6, 5, 3),
    RED(DT_ATEN_ARGMAX, -1, 1, 6, 5, 3),
#undef RED
    /* softmax on (8,12,16) over each dim */
    {DT_ATEN_SOFTMAX, 1, {3, 0, 0}, {{8, 12, 16}, {0, 0, 0}, {0, 0, 0}}, &sm[0]},
    {DT_ATEN_SOFTMAX, 1, {3, 0, 0}, {{8, 12, 16}, {0, 0, 0}, {0, 0, 0}}, &sm[1]},
    {DT_ATEN_SOFTMAX, 1, {3, 0, 0}, {{8, 12, 16}, {0, 0, 0}, {0, 0, 0}}, &sm[2]},
    {DT_ATEN_LOG_SOFTMAX, 1, {3, 0, 0}, {{8, 12, 16}, {0, 0, 0}, {0, 0, 0}}, &sm[0]},
    {DT_ATEN_LOG_SOFTMAX, 1, {3, 0, 0}, {{8, 12, 16}, {0, 0, 0}, {0, 0, 0}}, &sm[2]},
    {DT_ATEN_SOFTMAX, 1, {2, 0, 0}, {{6, 5, 0}, {0, 0, 0}, {0, 0, 0}}, &sm[1]},
    /* layer_norm over the last dim, rms_norm over the last two */
    {DT_ATEN_LAYER_NORM, 3, {3, 1, 1}, {{4, 6, 5}, {5, 0, 0}, {5, 0, 0}}, &ln1},
    {DT_ATEN_RMS_NORM, 2, {3, 2, 0}, {{4, 6, 5}, {6, 5, 0}, {0, 0, 0}}, &ln2},
    {DT_ATEN_RMS_NORM, 2, {2, 1, 0}, {{6, 5, 0}, {5, 0, 0}, {0, 0, 0}}, &ln1},
};

/* Placement choice c for a tensor of ndim dims: R, S(0..ndim-1), then Partial(red). */
static dt_placement choice(int c, int ndim, int red)
{
    dt_placement p;
    p.kind = (int16_t)(c == 0 ? DT_KIND_REPLICATE : c <= ndim ? DT_KIND_SHARD : DT_KIND_PARTIAL);
    p.arg = (int16_t)(c == 0 ? 0 : c <= ndim ? c - 1 : red);
    return p;
}

/* This rank's contribution to a Partial global: mesh position (0,..) holds the value;
   sum: others 0; max: lower; min: higher. */
static void contribution(const float *g, float *out, int n, const dt_mesh *m, const dt_placement *p)
{
    int i, d, off = 0, zero = 0;
    for (d = 0; d < m->ndim; d++) {
        if (p[d].kind != DT_KIND_PARTIAL) continue;
        if (p[d].arg == DT_SUM && m->coord[d]) zero = 1;
        off += m->coord[d];
    }
    for (i = 0; i < n; i++) {
        out[i] = g[i];
        for (d = 0; d < m->ndim; d++)
            if (p[d].kind == DT_KIND_PARTIAL)
                out[i] = zero                 ? 0.0f
                         : p[d].arg == DT_MAX ? g[i] - (float)off
                         : p[d].arg == DT_MIN ? g[i] + (float)off
                                              : g[i];
    }
}

static int numel(int ndim, const int32_t *sh)
{
    int i, n = 1;
    for (i = 0; i < ndim; i++) n *= sh[i];
    return n;
}

static int run_case(pg_group *g, int me, const opcase *oc_, const int *ch, int red)
{
    dt_dispatch d;
    dt_tensor args[DT_MAX_OP_ARGS], out;
    mb_tensor gt[DT_MAX_OP_ARGS], yg, rt;
    const mb_tensor *gin[DT_MAX_OP_ARGS];
    const dt_mesh *m = &dm[me];
    int i, md, n, rc, qrc;
    size_t ob = 0, sb = 0;
    for (i = 0; i < oc_->nargs; i++) {
        dt_placement p[DT_MAX_MESH_DIMS];
        mb_tensor pg, lv, lt;
        for (md = 0; md < m->ndim; md++) p[md] = choice(ch[i * m->ndim + md], oc_->ndim[i], red);
        CHECK(dt_spec_init(&args[i].spec, m, p, m->ndim, MB_F32, oc_->ndim[i], oc_->shape[i], NULL) == 0);
        n = numel(oc_->ndim[i], oc_->shape[i]);
        contribution(glob[me][i], part[me], n, m, p);
        mb_tensor_init(&pg, part[me], MB_F32, oc_->ndim[i], oc_->shape[i]);
        CHECK(dt_local_view(&args[i].spec, m->rank, &pg, &lv) == 0);
        mb_tensor_init(&lt, loc[me][i], MB_F32, lv.ndim, lv.shape);
        CHECK(mb_copy(&lt, &lv) == 0);
        args[i].local = lt;
        mb_tensor_init(&gt[i], glob[me][i], MB_F32, oc_->ndim[i], oc_->shape[i]);
        gin[i] = &gt[i];
    }
    memset(&d, 0, sizeof d);
    d.comm = &dc[me];
    d.plans = &pc[me];
    d.strategies = &oc[me];
    d.scratch = scr[me];
    d.scratch_bytes = sizeof scr[me];
#if DT_CBLAS /* scons blas=openblas: the einsum ops through the kernel table */
    d.kernels[DT_ATEN_MM] = d.kernels[DT_ATEN_ADDMM] = d.kernels[DT_ATEN_BMM] = d.kernels[DT_ATEN_LINEAR] =
        dt_kernel_cblas;
#endif
    { /* dt_op_query's sizes are enough and not more: one byte less of scratch or of the
         output is DT_ERR_TOO_SMALL on every rank (tried where every rank needs some) */
        int32_t v[2], w[2];
        qrc = dt_op_query(&d, oc_->op, oc_->at, args, oc_->nargs, DT_OP_RESULT, &ob, &sb);
        v[0] = !qrc && sb > 0;
        v[1] = !qrc && ob > 0;
        CHECK(pg_all_reduce(g, v, w, 2, MB_I32, PG_MIN) == 0);
        if (!qrc) {
            CHECK(ob <= sizeof yloc[me] && sb <= sizeof scr[me]);
            uint32_t sent = dc[me].collectives;
            d.scratch_bytes = sb - (size_t)w[0];
            if (w[0]) CHECK(dt_op(&d, oc_->op, oc_->at, args, oc_->nargs, &out, yloc[me], ob) == DT_ERR_TOO_SMALL);
            CHECK(dc[me].collectives == sent); /* nothing sent, not even a first input's move */
            d.scratch_bytes = sb;
            if (w[1]) CHECK(dt_op(&d, oc_->op, oc_->at, args, oc_->nargs, &out, yloc[me], ob - 1) == DT_ERR_TOO_SMALL);
            d.scratch_bytes = sb + 7; /* an odd size: buffers taken from its end must stay aligned */
        }
    }
    rc = dt_op(&d, oc_->op, oc_->at, args, oc_->nargs, &out, yloc[me], qrc ? sizeof yloc[me] : ob);
    CHECK(!qrc || rc == qrc); /* the query's error is dt_op's */
    if (rc == DT_ERR_NO_STRATEGY) {
        /* only where an input would have to turn Shard into Partial on a mesh dim (as
           torch, no redistribution does that), or Partial(sum) into Partial(max) */
        int ok = red != DT_SUM;
        for (md = 0; md < m->ndim; md++) {
            int np = 0, ns = 0;
            for (i = 0; i < oc_->nargs; i++) {
                np += args[i].spec.placements[md].kind == DT_KIND_PARTIAL;
                ns += args[i].spec.placements[md].kind == DT_KIND_SHARD;
            }
            ok |= np && ns;
        }
        CHECK(ok && oc[me].failed_op == oc_->op);
        nostrategy[me]++;
        return 0;
    }
    if (rc) {
        fprintf(stderr, "rank %d: %s: %s (choices", me, dt_op_name(oc_->op), dt_strerror(rc));
        for (md = 0; md < oc_->nargs * m->ndim; md++) fprintf(stderr, " %d", ch[md]);
        fprintf(stderr, ", red %d)\n", red);
        return __LINE__;
    }
    dispatched[me]++;
    /* the single-rank result */
    mb_tensor_init(&rt, ref[me], out.spec.dtype, out.spec.ndim, out.spec.shape);
    CHECK(dt_kernel_ref(oc_->op, oc_->at, &rt, gin, oc_->nargs) == 0);
    mb_tensor_init(&yg, yglob[me], out.spec.dtype, out.spec.ndim, out.spec.shape);
    CHECK(dt_full_tensor(&dc[me], &pc[me], &out.spec, &out.local, &yg, fscr[me], sizeof fscr[me]) == 0);
    n = numel(out.spec.ndim, out.spec.shape);
    for (i = 0; i < n; i++) {
        float diff = fabsf(yglob[me][i] - ref[me][i]);
        if (out.spec.dtype == MB_I32) { /* argmax: indices, bit-exact */
            int32_t a, b;
            memcpy(&a, &yglob[me][i], 4);
            memcpy(&b, &ref[me][i], 4);
            diff = a == b ? 0.0f : 1.0f;
        }
        if (diff > 1e-4f * (1.0f + fabsf(ref[me][i])) || diff != diff) {
            fprintf(stderr, "rank %d: %s element %d: %g != %g (choices", me, dt_op_name(oc_->op), i,
                    (double)yglob[me][i], (double)ref[me][i]);
            for (md = 0; md < oc_->nargs * m->ndim; md++) fprintf(stderr, " %d", ch[md]);
            fprintf(stderr, ", red %d)\n", red);
            return __LINE__;
        }
    }
    return 0;
}

static int body(pg_group *g, void *arg)
{
    int ndim = *(const int *)arg, me = pg_rank(g), ci, i, j, red;
    if (me < 0 || me >= NR || pg_set_timeout(g, 5000)) return __LINE__;
    CHECK(dt_mesh_init(&dm[me], ndim, ndim == 1 ? DTO_MESH1 : DTO_MESH2, NULL, pg_world_rank(g, me)) == 0);
    CHECK(dt_comm_init(&dc[me], &dm[me], g) == 0);
    CHECK(dt_plan_cache_init(&pc[me], pce[me], 16) == 0);
    CHECK(dt_op_cache_init(&oc[me], oce[me], 16) == 0);
    dispatched[me] = nostrategy[me] = 0;
    for (ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const opcase *c = &cases[ci];
        int nch[DT_MAX_OP_ARGS * DT_MAX_MESH_DIMS], ch[DT_MAX_OP_ARGS * DT_MAX_MESH_DIMS], total = 1, slots;
        int unary = c->nargs == 1;
        if (!DTO_CASE(c->op)) continue;
        for (i = 0; i < c->nargs; i++) {
            int n = numel(c->ndim[i], c->shape[i]);
            for (j = 0; j < n; j++) /* small integers: exact sums; denominators never 0 */
                glob[me][i][j] =
                    c->op == DT_ATEN_DIV && i == 1 ? (float)(j % 5 + 1) : (float)((j * 7 + i * 3) % 11 - 5);
        }
        slots = c->nargs * ndim;
        for (i = 0; i < slots; i++) {
            nch[i] = c->ndim[i / ndim] + 2;
            total *= nch[i];
        }
        for (red = DT_SUM; red <= (unary ? DT_MIN : c->nargs == 3 ? DT_SUM : DT_MAX); red++) {
            if (red == DT_AVG) continue;
            for (j = 0; j < total; j++) {
                int code = j, rc;
                for (i = slots - 1; i >= 0; i--, code /= nch[i + 1]) ch[i] = code % nch[i];
                rc = run_case(g, me, c, ch, red);
                if (rc) return rc;
            }
        }
    }
    CHECK(dispatched[me] > 100);
    CHECK(oc[me].hits > 0);
    return 0;
}

static void dispatch_all(int ndim)
{
    assert_int_equal(DTO_RUN(body, &ndim), 0);
    printf("# %d-D mesh: %d dispatches per rank (%d without a strategy), strategy cache %u hits / %u misses\n", ndim,
           dispatched[0], nostrategy[0], (unsigned)oc[0].hits, (unsigned)oc[0].misses);
}

static void test_dispatch_1d(void **state)
{
    (void)state;
    dispatch_all(1);
}

static void test_dispatch_2x2(void **state)
{
    (void)state;
    dispatch_all(2);
}

static int krows[NR];

/* argmax through the kernel table: records the rows of the local piece it reduces. */
static int rows_kernel(int op, const dt_op_attrs *attrs, mb_tensor *out, const mb_tensor *const *in, int nin)
{
    int r;
    for (r = 0; r < NR; r++) /* whose: the piece lies in that rank's glob */
        if ((const float *)in[0]->data >= glob[r][0] && (const float *)in[0]->data < glob[r][0] + EL)
            krows[r] = in[0]->shape[0];
    return dt_kernel_ref(op, attrs, out, in, nin);
}

/* Kernel override, too-small outputs and scratch, and a second run that hits the cache. */
static int body_misc(pg_group *g, void *arg)
{
    int me = pg_rank(g), i;
    dt_op_attrs at;
    dt_dispatch d;
    dt_tensor args[2], out;
    dt_placement s0[1] = {S0}, r[1] = {R_};
    int32_t sh[2] = {8, 4}, lsh[2];
    (void)arg;
    if (me < 0 || me >= NR || pg_set_timeout(g, 5000)) return __LINE__;
    CHECK(dt_mesh_init(&dm[me], 1, one, NULL, pg_world_rank(g, me)) == 0);
    CHECK(dt_comm_init(&dc[me], &dm[me], g) == 0);
    CHECK(dt_op_cache_init(&oc[me], oce[me], 16) == 0);
    for (i = 0; i < 32; i++) glob[me][0][i] = (float)i;
    CHECK(dt_spec_init(&args[0].spec, &dm[me], s0, 1, MB_F32, 2, sh, NULL) == 0);
    CHECK(dt_spec_init(&args[1].spec, &dm[me], r, 1, MB_F32, 2, sh, NULL) == 0);
    CHECK(dt_local_shape(&args[0].spec, me, lsh, NULL) == 0);
    mb_tensor_init(&args[0].local, glob[me][0] + 8 * me, MB_F32, 2, lsh);
    mb_tensor_init(&args[1].local, glob[me][0], MB_F32, 2, sh);
    memset(&d, 0, sizeof d);
    d.comm = &dc[me];
    d.strategies = &oc[me];
    if (me == 0) d.kernels[DT_ATEN_ADD] = count_kernel;
    /* S(0) + R: the R input is narrowed locally (a view needs scratch for its copy) */
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, args, 2, &out, yloc[me], 4) == DT_ERR_TOO_SMALL);               /* output */
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, args, 2, &out, yloc[me], sizeof yloc[me]) == DT_ERR_TOO_SMALL); /* scratch */
    d.scratch = scr[me];
    d.scratch_bytes = sizeof scr[me];
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, args, 2, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(out.spec.placements[0].kind == DT_KIND_SHARD && out.local.shape[0] == 2);
    for (i = 0; i < 8; i++) /* rank 0's override subtracts: 0; others add: 2x */
        CHECK(yloc[me][i] == (me == 0 ? 0.0f : 2.0f * glob[me][0][8 * me + i]));
    CHECK(oc[me].misses == 1 && oc[me].hits == 2);
    CHECK(me != 0 || kcalls[0] == 1);
    /* argmax over the sharded dim, torch's argmin_argmax_handler: each rank reduces its own
       2 rows (the kernel sees the local piece, nothing is replicated) and the (max, index)
       pairs are all-gathered: row 7 of x[r][c] = 4r + c in every column, replicated */
    d.kernels[DT_ATEN_ARGMAX] = rows_kernel;
    memset(&at, 0, sizeof at);
    krows[me] = -1;
    i = (int)dc[me].collectives;
    CHECK(dt_op(&d, DT_ATEN_ARGMAX, &at, args, 1, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(krows[me] == 2 && (int)dc[me].collectives == i + 1);
    CHECK(out.spec.dtype == MB_I32 && out.spec.placements[0].kind == DT_KIND_REPLICATE && out.local.shape[0] == 4);
    for (i = 0; i < 4; i++) CHECK(((int32_t *)yloc[me])[i] == 7);
    CHECK(dt_op(&d, DT_ATEN_ARGMAX, &at, args, 1, &out, yloc[me], 15) == DT_ERR_TOO_SMALL);
    /* a local tensor that does not fit its spec */
    args[0].local.shape[0] = 3;
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, args, 2, &out, yloc[me], sizeof yloc[me]) == DT_ERR_MISMATCH);
    CHECK(dt_op(&d, DT_ATEN_ARGMAX, &at, args, 1, &out, yloc[me], sizeof yloc[me]) == DT_ERR_MISMATCH);
    return 0;
}

static void test_dispatch_misc(void **state)
{
    (void)state;
    assert_int_equal(DTO_RUN(body_misc, NULL), 0);
}

/* ---- views, embedding, losses and the dispatcher's plain tensors, non-members, in-place
   and out variants, custom handlers ---- */

static dt_op_attrs vat(int32_t dim, int32_t dim2, int nd, int32_t a, int32_t b, int32_t c)
{
    dt_op_attrs at;
    memset(&at, 0, sizeof at);
    at.dim = dim;
    at.dim2 = dim2;
    at.ndim = nd;
    at.shape[0] = a;
    at.shape[1] = b;
    at.shape[2] = c;
    return at;
}

/* One view's propagation on mesh m: input placements p, shape (d0, d1, d2) of ndim dims. */
static void view_case(const dt_mesh *m, int op, dt_op_attrs at, const dt_placement *p, int ndim, int32_t d0, int32_t d1,
                      int32_t d2, int want_rc, const dt_placement *want_in, const dt_placement *want_out)
{
    dt_spec a;
    const dt_spec *args[1] = {&a};
    dt_op_strategy s;
    spec(&a, m, p, ndim, d0, d1, d2);
    assert_int_equal(dt_propagate(NULL, op, &at, args, 1, &s), want_rc);
    if (want_rc) return;
    assert_int_equal(s.count, 1);
    assert_true(same(s.in[0], want_in, m->ndim));
    assert_true(same(s.out, want_out, m->ndim));
}

static void test_view_rules(void **state)
{
    dt_placement r[1] = {R_}, s0[1] = {S0}, s1[1] = {S1}, s2[1] = {DT_SHARD(2)}, ps[1] = {PSUM}, s00[2] = {S0, S0},
                 rr[2] = {R_, R_}, s0p[2] = {S0, PSUM}, s1p[2] = {S1, PSUM}, s1s0[2] = {S1, S0}, rs0[2] = {R_, S0};
    dt_spec a;
    const dt_spec *args[1] = {&a};
    dt_op_strategy s;
    (void)state;
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    assert_int_equal(dt_mesh_init(&mesh2, 2, two, NULL, 0), 0);
    /* the cases: (4,6)->(24,) keeps S(0); S(1) -> R; (5,6)->(30,) S(0) -> R
       (uneven); (24,)->(4,6) S(0) stays S(0) */
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 1, 24, 0, 0), s0, 2, 4, 6, 0, 0, s0, s0);
    view_case(&mesh1, DT_ATEN_RESHAPE, vat(0, 0, 1, -1, 0, 0), s0, 2, 4, 6, 0, 0, s0, s0);
    view_case(&mesh1, DT_ATEN_FLATTEN, vat(0, -1, 0, 0, 0, 0), s0, 2, 4, 6, 0, 0, s0, s0);
    view_case(&mesh1, DT_ATEN_RESHAPE, vat(0, 0, 1, 24, 0, 0), s1, 2, 4, 6, 0, 0, r, r);
    view_case(&mesh1, DT_ATEN_FLATTEN, vat(0, 1, 0, 0, 0, 0), s1, 2, 4, 6, 0, 0, r, r);
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 1, 24, 0, 0), s1, 2, 4, 6, 0, DT_ERR_NO_STRATEGY, NULL, NULL);
    view_case(&mesh1, DT_ATEN_RESHAPE, vat(0, 0, 1, 30, 0, 0), s0, 2, 5, 6, 0, 0, r, r);
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 1, 30, 0, 0), s0, 2, 5, 6, 0, DT_ERR_NO_STRATEGY, NULL, NULL);
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 2, 4, 6, 0), s0, 1, 24, 0, 0, 0, s0, s0);
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 2, 4, -1, 0), s0, 1, 24, 0, 0, 0, s0, s0);
    /* a split whose first piece does not divide: replicated (view too, as torch) */
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 2, 2, 12, 0), s0, 1, 24, 0, 0, 0, r, r);
    /* flatten then split: both conditions; (4,6)->(6,4): 6 rows on 4 ranks do not divide */
    view_case(&mesh1, DT_ATEN_RESHAPE, vat(0, 0, 2, 6, 4, 0), s0, 2, 4, 6, 0, 0, r, r);
    view_case(&mesh1, DT_ATEN_RESHAPE, vat(0, 0, 2, 8, 3, 0), s0, 2, 4, 6, 0, 0, s0, s0);
    /* (2,3,4) -> (6,4): the shard of dim 2 follows to dim 1 */
    view_case(&mesh1, DT_ATEN_RESHAPE, vat(0, 0, 2, 6, 4, 0), s2, 3, 2, 3, 4, 0, s2, s1);
    /* transpose, permute, squeeze, unsqueeze, expand move or keep the shard */
    view_case(&mesh1, DT_ATEN_TRANSPOSE, vat(0, 1, 0, 0, 0, 0), s0, 2, 4, 6, 0, 0, s0, s1);
    view_case(&mesh1, DT_ATEN_PERMUTE, vat(0, 0, 3, 2, 0, 1), s2, 3, 2, 3, 4, 0, s2, s0);
    view_case(&mesh1, DT_ATEN_SQUEEZE, vat(1, 0, 0, 0, 0, 0), s2, 3, 4, 1, 6, 0, s2, s1);
    view_case(&mesh1, DT_ATEN_SQUEEZE, vat(DT_DIM_ALL, 0, 0, 0, 0, 0), s2, 3, 4, 1, 6, 0, s2, s1);
    view_case(&mesh1, DT_ATEN_UNSQUEEZE, vat(0, 0, 0, 0, 0, 0), s1, 2, 4, 6, 0, 0, s1, s2);
    view_case(&mesh1, DT_ATEN_UNSQUEEZE, vat(-1, 0, 0, 0, 0, 0), s1, 2, 4, 6, 0, 0, s1, s1);
    view_case(&mesh1, DT_ATEN_EXPAND, vat(0, 0, 3, 5, 4, -1), s1, 2, 4, 6, 0, 0, s1, s2);
    view_case(&mesh1, DT_ATEN_EXPAND, vat(0, 0, 2, 4, 6, 0), s0, 2, 1, 6, 0, 0, r, r); /* broadcast dim */
    /* Partial passes through */
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 1, 24, 0, 0), ps, 2, 4, 6, 0, 0, ps, ps);
    view_case(&mesh2, DT_ATEN_TRANSPOSE, vat(0, 1, 0, 0, 0, 0), s0p, 2, 4, 6, 0, 0, s0p, s1p);
    /* nested shards of one dim divide by the product: 8 rows on 2x2 keep S(0),S(0); 6 do not */
    view_case(&mesh2, DT_ATEN_RESHAPE, vat(0, 0, 1, 48, 0, 0), s00, 2, 8, 6, 0, 0, s00, s00);
    view_case(&mesh2, DT_ATEN_RESHAPE, vat(0, 0, 1, 24, 0, 0), s00, 2, 6, 4, 0, 0, rr, rr);
    view_case(&mesh2, DT_ATEN_RESHAPE, vat(0, 0, 1, 24, 0, 0), s1s0, 2, 4, 6, 0, 0, rs0, rs0);
    /* bad attrs */
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 1, 25, 0, 0), r, 2, 4, 6, 0, DT_ERR_SHAPE, NULL, NULL);
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 2, -1, -1, 0), r, 2, 4, 6, 0, DT_ERR_SHAPE, NULL, NULL);
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 2, -1, 5, 0), r, 2, 4, 6, 0, DT_ERR_SHAPE, NULL, NULL);
    view_case(&mesh1, DT_ATEN_TRANSPOSE, vat(0, 2, 0, 0, 0, 0), r, 2, 4, 6, 0, DT_ERR_DIM, NULL, NULL);
    view_case(&mesh1, DT_ATEN_PERMUTE, vat(0, 0, 2, 0, 0, 0), r, 2, 4, 6, 0, DT_ERR_DIM, NULL, NULL);
    view_case(&mesh1, DT_ATEN_PERMUTE, vat(0, 0, 1, 0, 0, 0), r, 2, 4, 6, 0, DT_ERR_SHAPE, NULL, NULL);
    view_case(&mesh1, DT_ATEN_EXPAND, vat(0, 0, 2, 4, 5, 0), r, 2, 4, 6, 0, DT_ERR_SHAPE, NULL, NULL);
    view_case(&mesh1, DT_ATEN_FLATTEN, vat(1, 0, 0, 0, 0, 0), r, 2, 4, 6, 0, DT_ERR_DIM, NULL, NULL);
    view_case(&mesh1, DT_ATEN_UNSQUEEZE, vat(3, 0, 0, 0, 0, 0), r, 2, 4, 6, 0, DT_ERR_DIM, NULL, NULL);
    /* a zero-size dim that pairs up with none of the target's is refused (view_groups finds
       no grouping, and must not look for one forever); one that pairs up propagates */
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 2, 0, 5, 0), r, 1, 0, 0, 0, DT_ERR_SHAPE, NULL, NULL);
    view_case(&mesh1, DT_ATEN_VIEW, vat(0, 0, 2, 0, 5, 0), r, 2, 0, 5, 0, 0, r, r);
    /* target sizes whose product passes int64 are refused without overflowing it (UBSan) */
    view_case(&mesh1, DT_ATEN_RESHAPE, vat(0, 0, 3, 1 << 30, 1 << 30, 1 << 30), r, 2, 4, 6, 0, DT_ERR_SHAPE, NULL,
              NULL);
    spec(&a, &mesh1, s1, 2, 4, 6, 0);
    {
        dt_op_cache c;
        static dt_op_entry e[2];
        dt_op_attrs at = vat(0, 0, 1, 24, 0, 0);
        assert_int_equal(dt_op_cache_init(&c, e, 2), 0);
        assert_int_equal(dt_propagate(&c, DT_ATEN_VIEW, &at, args, 1, &s), DT_ERR_NO_STRATEGY);
        assert_string_equal(dt_op_name(c.failed_op), "view");
    }
}

/* Index-operand spec (MB_I32). */
static void ispec(dt_spec *s, const dt_mesh *m, const dt_placement *p, int ndim, int32_t d0, int32_t d1)
{
    int32_t sh[2];
    sh[0] = d0;
    sh[1] = d1;
    assert_int_equal(dt_spec_init(s, m, p, m->ndim, MB_I32, ndim, sh, NULL), 0);
}

static void test_embed_loss_rules(void **state)
{
    dt_placement r[1] = {R_}, s0[1] = {S0}, s1[1] = {S1}, ps[1] = {PSUM}, pa[1] = {DT_PARTIAL(DT_AVG)},
                 rr[2] = {R_, R_}, s0s1[2] = {S0, S1}, s0r[2] = {S0, R_}, pss1[2] = {PSUM, S1},
                 pmax[1] = {DT_PARTIAL(DT_MAX)};
    dt_spec w, ix, x, t;
    const dt_spec *ea[2] = {&w, &ix}, *la[2] = {&x, &t};
    dt_op_strategy s;
    dt_op_attrs at;
    (void)state;
    memset(&at, 0, sizeof at);
    assert_int_equal(dt_mesh_init(&mesh1, 1, one, NULL, 0), 0);
    assert_int_equal(dt_mesh_init(&mesh2, 2, two, NULL, 0), 0);
    /* embedding: 3 + indices ndim per mesh dim */
    spec(&w, &mesh1, r, 2, 16, 8, 0);
    ispec(&ix, &mesh1, r, 2, 4, 4);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), 0);
    assert_int_equal(s.count, 5);
    assert_int_equal(s.out_ndim, 3);
    assert_int_equal(s.out_shape[2], 8);
    spec(&w, &mesh2, rr, 2, 16, 8, 0);
    ispec(&ix, &mesh2, rr, 1, 4, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), 0);
    assert_int_equal(s.count, 16);
    /* rowwise: MaskPartial -> P(sum); colwise -> S(-1); batch follows the indices */
    spec(&w, &mesh1, s0, 2, 16, 8, 0);
    ispec(&ix, &mesh1, r, 1, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), 0);
    assert_true(same(s.out, ps, 1) && same(s.in[0], s0, 1) && same(s.in[1], r, 1));
    spec(&w, &mesh1, s1, 2, 16, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), 0);
    assert_true(same(s.out, s1, 1) && same(s.in[0], s1, 1) && same(s.in[1], r, 1));
    spec(&w, &mesh1, r, 2, 16, 8, 0);
    ispec(&ix, &mesh1, s0, 1, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), 0);
    assert_true(same(s.out, s0, 1) && same(s.in[0], r, 1) && same(s.in[1], s0, 1));
    /* sharded indices cannot become MaskPartial: one fewer candidate */
    assert_int_equal(s.count, 3);
    spec(&w, &mesh2, s0s1, 2, 16, 8, 0);
    ispec(&ix, &mesh2, rr, 1, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), 0);
    assert_true(same(s.out, pss1, 2) && same(s.in[0], s0s1, 2));
    spec(&w, &mesh1, r, 1, 16, 0, 0);
    ispec(&ix, &mesh1, r, 1, 8, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), DT_ERR_SHAPE);
    spec(&w, &mesh1, r, 2, 16, 8, 0);
    x = ix;
    x.dtype = MB_F32;
    ea[1] = &x;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ea, 2, &s), DT_ERR_DTYPE);
    /* losses: the class dim and Partials replicated; batch shards give Partial(avg/sum) */
    spec(&x, &mesh1, s0, 2, 8, 5, 0);
    ispec(&t, &mesh1, r, 1, 8, 0);
    at.mode = 2;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_NLL_LOSS, &at, la, 2, &s), 0);
    assert_int_equal(s.count, 1);
    assert_int_equal(s.out_ndim, 0);
    assert_true(same(s.out, ps, 1) && same(s.in[0], s0, 1) && same(s.in[1], s0, 1));
    at.mode = 1;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_CROSS_ENTROPY, &at, la, 2, &s), 0);
    assert_true(same(s.out, pa, 1));
    at.mode = 0;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_CROSS_ENTROPY, &at, la, 2, &s), 0);
    assert_true(same(s.out, s0, 1) && s.out_ndim == 1 && s.out_shape[0] == 8);
    spec(&x, &mesh1, s1, 2, 8, 5, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_CROSS_ENTROPY, &at, la, 2, &s), 0);
    assert_true(same(s.out, r, 1) && same(s.in[0], r, 1) && same(s.in[1], r, 1));
    spec(&x, &mesh1, pmax, 2, 8, 5, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_NLL_LOSS, &at, la, 2, &s), 0);
    assert_true(same(s.in[0], r, 1));
    spec(&x, &mesh2, s0s1, 3, 8, 5, 4);
    ispec(&t, &mesh2, rr, 2, 8, 4);
    at.mode = 2;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_CROSS_ENTROPY, &at, la, 2, &s), 0);
    assert_true(same(s.in[0], s0r, 2) && same(s.in[1], s0r, 2));
    assert_true(s.out[0].kind == DT_KIND_PARTIAL && s.out[0].arg == DT_SUM && s.out[1].kind == DT_KIND_REPLICATE);
    /* mean needs an even split (torch raises): 6 rows on 4 ranks */
    spec(&x, &mesh1, s0, 2, 6, 5, 0);
    ispec(&t, &mesh1, r, 1, 6, 0);
    at.mode = 1;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_NLL_LOSS, &at, la, 2, &s), DT_ERR_NO_STRATEGY);
    at.mode = 2;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_NLL_LOSS, &at, la, 2, &s), 0);
    at.mode = 3;
    assert_int_equal(dt_propagate(NULL, DT_ATEN_NLL_LOSS, &at, la, 2, &s), DT_ERR_SHAPE);
    at.mode = 0;
    ispec(&t, &mesh1, r, 1, 7, 0);
    assert_int_equal(dt_propagate(NULL, DT_ATEN_NLL_LOSS, &at, la, 2, &s), DT_ERR_SHAPE);
}

/* The kernels against hand-computed values: embedding (plain and masked), losses. */
static void test_kernel_embed_loss(void **state)
{
    static float w[5 * 3], y[16], x[2 * 3];
    static int32_t idx[4] = {4, 0, 2, 4}, tg[2] = {2, -100};
    int32_t sw[2] = {5, 3}, si[1] = {4}, sy[2] = {4, 3}, sx[2] = {2, 3}, st[1] = {2}, sl[1] = {2};
    mb_tensor tw, ti, ty, tx, tt, tl;
    const mb_tensor *in[2];
    dt_op_attrs at;
    int i, j;
    (void)state;
    memset(&at, 0, sizeof at);
    for (i = 0; i < 15; i++) w[i] = (float)i;
    mb_tensor_init(&tw, w, MB_F32, 2, sw);
    mb_tensor_init(&ti, idx, MB_I32, 1, si);
    mb_tensor_init(&ty, y, MB_F32, 2, sy);
    in[0] = &tw;
    in[1] = &ti;
    assert_int_equal(dt_kernel_ref(DT_ATEN_EMBEDDING, NULL, &ty, in, 2), 0);
    for (i = 0; i < 4; i++)
        for (j = 0; j < 3; j++) assert_true(y[i * 3 + j] == w[idx[i] * 3 + j]);
    /* masked: this piece holds rows 2..3 of 5 */
    tw.shape[0] = 2;
    tw.data = w + 6;
    at.mode = 1;
    at.dim2 = 2;
    at.shape[0] = 5;
    assert_int_equal(dt_kernel_ref(DT_ATEN_EMBEDDING, &at, &ty, in, 2), 0);
    for (j = 0; j < 3; j++) assert_true(y[j] == 0.0f && y[3 + j] == 0.0f && y[6 + j] == w[6 + j] && y[9 + j] == 0.0f);
    idx[1] = 5; /* out of range: nothing written */
    memset(y, 0x5a, sizeof y);
    assert_int_equal(dt_kernel_ref(DT_ATEN_EMBEDDING, &at, &ty, in, 2), DT_ERR_RANK);
    assert_true(((unsigned char *)y)[0] == 0x5a);
    idx[1] = 0;
    /* cross_entropy on (2,3), target {2, ignored} */
    x[0] = 1.0f, x[1] = 2.0f, x[2] = 3.0f, x[3] = 1000.0f, x[4] = -1000.0f, x[5] = 0.0f;
    mb_tensor_init(&tx, x, MB_F32, 2, sx);
    mb_tensor_init(&tt, tg, MB_I32, 1, st);
    mb_tensor_init(&tl, y, MB_F32, 1, sl);
    in[0] = &tx;
    in[1] = &tt;
    at = vat(0, 0, 0, 0, 0, 0);
    at.ignore_index = -100;
    assert_int_equal(dt_kernel_ref(DT_ATEN_CROSS_ENTROPY, &at, &tl, in, 2), 0);
    assert_true(fabsf(y[0] - (logf(expf(1.0f) + expf(2.0f) + expf(3.0f)) - 3.0f)) < 1e-6f);
    assert_true(y[1] == 0.0f);
    tg[1] = 0; /* a 1000-logit row stays finite (max subtracted) */
    assert_int_equal(dt_kernel_ref(DT_ATEN_CROSS_ENTROPY, &at, &tl, in, 2), 0);
    assert_true(y[1] == 0.0f);
    at.mode = 1;
    tl.ndim = 0;
    tg[1] = -100;
    assert_int_equal(dt_kernel_ref(DT_ATEN_NLL_LOSS, &at, &tl, in, 2), 0);
    assert_true(y[0] == -3.0f); /* mean over the one counted target */
    at.mode = 2;
    tg[1] = 1;
    assert_int_equal(dt_kernel_ref(DT_ATEN_NLL_LOSS, &at, &tl, in, 2), 0);
    assert_true(y[0] == -3.0f + 1000.0f * 0.0f + 1000.0f);
    tg[1] = 3; /* outside [0, C) */
    assert_int_equal(dt_kernel_ref(DT_ATEN_NLL_LOSS, &at, &tl, in, 2), DT_ERR_RANK);
}

/* Dispatch cases with static arguments and index operands. */
typedef struct bcase {
    int op, nargs;
    dt_op_attrs at;
    int32_t ndim[2];
    int32_t shape[2][3];
} bcase;

/* clang-format off */
#define BV(op, n, d0, d1, d2, ...) {op, 1, __VA_ARGS__, {n, 0}, {{d0, d1, d2}, {0, 0, 0}}}
/* clang-format on */
static const bcase bcases[] = {
    BV(DT_ATEN_VIEW, 2, 4, 6, 0, {0, 0, 0, 0, 0, 1, {24}, 0.0f, 0.0f}),
    BV(DT_ATEN_RESHAPE, 2, 4, 6, 0, {0, 0, 0, 0, 0, 1, {24}, 0.0f, 0.0f}),
    BV(DT_ATEN_RESHAPE, 2, 5, 6, 0, {0, 0, 0, 0, 0, 1, {30}, 0.0f, 0.0f}),
    BV(DT_ATEN_VIEW, 2, 5, 6, 0, {0, 0, 0, 0, 0, 1, {-1}, 0.0f, 0.0f}),
    BV(DT_ATEN_VIEW, 1, 24, 0, 0, {0, 0, 0, 0, 0, 2, {4, 6}, 0.0f, 0.0f}),
    BV(DT_ATEN_RESHAPE, 1, 24, 0, 0, {0, 0, 0, 0, 0, 2, {2, 12}, 0.0f, 0.0f}),
    BV(DT_ATEN_RESHAPE, 3, 2, 3, 4, {0, 0, 0, 0, 0, 2, {6, 4}, 0.0f, 0.0f}),
    BV(DT_ATEN_RESHAPE, 2, 4, 6, 0, {0, 0, 0, 0, 0, 3, {8, 1, 3}, 0.0f, 0.0f}),
    BV(DT_ATEN_FLATTEN, 3, 4, 3, 2, {1, -1, 0, 0, 0, 0, {0}, 0.0f, 0.0f}),
    BV(DT_ATEN_FLATTEN, 3, 4, 3, 2, {0, 1, 0, 0, 0, 0, {0}, 0.0f, 0.0f}),
    BV(DT_ATEN_TRANSPOSE, 2, 4, 6, 0, {0, 1, 0, 0, 0, 0, {0}, 0.0f, 0.0f}),
    BV(DT_ATEN_PERMUTE, 3, 2, 3, 4, {0, 0, 0, 0, 0, 3, {2, 0, 1}, 0.0f, 0.0f}),
    BV(DT_ATEN_SQUEEZE, 3, 4, 1, 6, {1, 0, 0, 0, 0, 0, {0}, 0.0f, 0.0f}),
    BV(DT_ATEN_UNSQUEEZE, 2, 4, 6, 0, {1, 0, 0, 0, 0, 0, {0}, 0.0f, 0.0f}),
    BV(DT_ATEN_EXPAND, 2, 1, 6, 0, {0, 0, 0, 0, 0, 3, {2, 4, -1}, 0.0f, 0.0f}),
    {DT_ATEN_EMBEDDING, 2, {0, 0, 0, 0, 0, 0, {0}, 0.0f, 0.0f}, {2, 2}, {{10, 4, 0}, {3, 4, 0}}},
    {DT_ATEN_NLL_LOSS, 2, {0, 0, 0, 0, 2, 0, {0}, 0.0f, 0.0f}, {2, 1}, {{8, 5, 0}, {8, 0, 0}}},
    {DT_ATEN_NLL_LOSS, 2, {0, 0, 0, 2, 2, 0, {0}, 0.0f, 0.0f}, {2, 1}, {{8, 5, 0}, {8, 0, 0}}},
    {DT_ATEN_CROSS_ENTROPY, 2, {0, 0, 0, 0, 2, 0, {0}, 0.0f, 0.0f}, {3, 2}, {{8, 3, 4}, {8, 4, 0}}},
    {DT_ATEN_CROSS_ENTROPY, 2, {0, 0, 0, 1, -100, 0, {0}, 0.0f, 0.0f}, {3, 2}, {{8, 3, 4}, {8, 4, 0}}},
    {DT_ATEN_CROSS_ENTROPY, 2, {0, 0, 0, 2, 2, 0, {0}, 0.0f, 0.0f}, {2, 1}, {{8, 5, 0}, {8, 0, 0}}},
    {DT_ATEN_CROSS_ENTROPY, 2, {0, 0, 0, 1, -100, 0, {0}, 0.0f, 0.0f}, {1, 0}, {{5, 0, 0}, {0, 0, 0}}},
};

static int32_t iglob[NR][EL], iloc[NR][EL];
static int bviews[NR], bnostrat[NR];

/* Operand i of case c is an index operand. */
static int is_index(const bcase *c, int i)
{
    return i == 1 && c->nargs == 2;
}

static int run_bcase(int me, const bcase *c, const int *ch, int red)
{
    dt_dispatch d;
    dt_tensor args[2], out;
    mb_tensor gt[2], yg, rt;
    const mb_tensor *gin[2];
    const dt_mesh *m = &dm[me];
    int i, md, n, rc;
    for (i = 0; i < c->nargs; i++) {
        dt_placement p[DT_MAX_MESH_DIMS];
        mb_tensor pg, lv, lt;
        int ix = is_index(c, i);
        mb_dtype dt = ix ? MB_I32 : MB_F32;
        void *g = ix ? (void *)iglob[me] : (void *)glob[me][i], *l = ix ? (void *)iloc[me] : (void *)loc[me][i];
        for (md = 0; md < m->ndim; md++) p[md] = choice(ch[i * m->ndim + md], c->ndim[i], red);
        CHECK(dt_spec_init(&args[i].spec, m, p, m->ndim, dt, c->ndim[i], c->shape[i], NULL) == 0);
        n = numel(c->ndim[i], c->shape[i]);
        if (!ix) contribution(glob[me][i], part[me], n, m, p);
        mb_tensor_init(&pg, ix ? g : (void *)part[me], dt, c->ndim[i], c->shape[i]);
        CHECK(dt_local_view(&args[i].spec, m->rank, &pg, &lv) == 0);
        mb_tensor_init(&lt, l, dt, lv.ndim, lv.shape);
        CHECK(mb_copy(&lt, &lv) == 0);
        args[i].local = lt;
        mb_tensor_init(&gt[i], g, dt, c->ndim[i], c->shape[i]);
        gin[i] = &gt[i];
    }
    memset(&d, 0, sizeof d);
    d.comm = &dc[me];
    d.plans = &pc[me];
    d.strategies = &oc[me];
    d.scratch = scr[me];
    d.scratch_bytes = sizeof scr[me];
    rc = dt_op(&d, c->op, &c->at, args, c->nargs, &out, yloc[me], sizeof yloc[me]);
    if (rc == DT_ERR_NO_STRATEGY) {
        /* only view, for a sharded flatten it would have to replicate */
        CHECK(oc[me].failed_op == c->op && c->op == DT_ATEN_VIEW);
        bnostrat[me]++;
        return 0;
    }
    if (rc) {
        fprintf(stderr, "rank %d: %s: %s (choices", me, dt_op_name(c->op), dt_strerror(rc));
        for (md = 0; md < c->nargs * m->ndim; md++) fprintf(stderr, " %d", ch[md]);
        fprintf(stderr, ", red %d)\n", red);
        return __LINE__;
    }
    dispatched[me]++;
    if (out.local.data != yloc[me]) { /* a zero-copy view into the input's local tensor */
        CHECK(dt__ops[c->op].family == DT__F_VIEW && out.local.data >= (void *)loc[me][0] &&
              out.local.data < (void *)(loc[me][0] + EL));
        bviews[me]++;
    }
    mb_tensor_init(&rt, ref[me], MB_F32, out.spec.ndim, out.spec.shape);
    CHECK(dt_kernel_ref(c->op, &c->at, &rt, gin, c->nargs) == 0);
    mb_tensor_init(&yg, yglob[me], MB_F32, out.spec.ndim, out.spec.shape);
    CHECK(dt_full_tensor(&dc[me], &pc[me], &out.spec, &out.local, &yg, fscr[me], sizeof fscr[me]) == 0);
    n = numel(out.spec.ndim, out.spec.shape);
    for (i = 0; i < n; i++) {
        float diff = fabsf(yglob[me][i] - ref[me][i]);
        if (!(diff <= 1e-4f * (1.0f + fabsf(ref[me][i])))) {
            fprintf(stderr, "rank %d: %s element %d: %g != %g (choices", me, dt_op_name(c->op), i, (double)yglob[me][i],
                    (double)ref[me][i]);
            for (md = 0; md < c->nargs * m->ndim; md++) fprintf(stderr, " %d", ch[md]);
            fprintf(stderr, ", red %d)\n", red);
            return __LINE__;
        }
    }
    return 0;
}

static int body_b(pg_group *g, void *arg)
{
    int ndim = *(const int *)arg, me = pg_rank(g), ci, i, j, red;
    if (me < 0 || me >= NR || pg_set_timeout(g, 5000)) return __LINE__;
    CHECK(dt_mesh_init(&dm[me], ndim, ndim == 1 ? DTO_MESH1 : DTO_MESH2, NULL, pg_world_rank(g, me)) == 0);
    CHECK(dt_comm_init(&dc[me], &dm[me], g) == 0);
    CHECK(dt_plan_cache_init(&pc[me], pce[me], 16) == 0);
    CHECK(dt_op_cache_init(&oc[me], oce[me], 16) == 0);
    dispatched[me] = bnostrat[me] = bviews[me] = 0;
    for (ci = 0; ci < (int)(sizeof bcases / sizeof bcases[0]); ci++) {
        const bcase *c = &bcases[ci];
        int nch[2 * DT_MAX_MESH_DIMS], ch[2 * DT_MAX_MESH_DIMS], total = 1, slots = c->nargs * ndim;
        for (i = 0; i < c->nargs; i++) {
            int n = numel(c->ndim[i], c->shape[i]);
            for (j = 0; j < n; j++) {
                glob[me][i][j] = (float)((j * 7 + i * 3) % 11 - 5) * 0.5f;
                /* indices: rows of the weight; targets: classes, some ignore_index (2, or
                   none for -100, as a sharded mean averages the shards' means) */
                iglob[me][j] =
                    c->op == DT_ATEN_EMBEDDING ? (j * 7) % c->shape[0][0] : (j * 3) % c->shape[0][c->ndim[0] > 1];
            }
        }
        for (i = 0; i < slots; i++) {
            nch[i] = c->ndim[i / ndim] + (is_index(c, i / ndim) ? 1 : 2); /* no Partial indices */
            total *= nch[i];
        }
        for (red = DT_SUM; red <= DT_MAX; red += DT_MAX - DT_SUM) {
            for (j = 0; j < total; j++) {
                int code = j, rc;
                for (i = slots - 1; i >= 0; i--, code /= nch[i + 1]) ch[i] = code % nch[i];
                rc = run_bcase(me, c, ch, red);
                if (rc) return rc;
            }
        }
    }
    CHECK(dispatched[me] > 200 && bviews[me] > 20);
    return 0;
}

static void dispatch_b(int ndim)
{
    assert_int_equal(DTO_RUN(body_b, &ndim), 0);
    printf("# %d-D mesh: views/embedding/losses: %d dispatches per rank (%d zero-copy views, %d without a "
           "strategy)\n",
           ndim, dispatched[0], bviews[0], bnostrat[0]);
}

static void test_dispatch_b_1d(void **state)
{
    (void)state;
    dispatch_b(1);
}

static void test_dispatch_b_2x2(void **state)
{
    (void)state;
    dispatch_b(2);
}

static int handler_calls[NR];

static int my_handler(dt_dispatch *d, int op, const dt_op_attrs *attrs, const dt_tensor *args, int nargs,
                      dt_tensor *out, void *out_data, size_t out_bytes)
{
    (void)d, (void)op, (void)attrs, (void)nargs, (void)out_data, (void)out_bytes;
    handler_calls[args[0].spec.mesh->index]++;
    *out = args[0];
    return 7; /* its own code comes back */
}

static void dset(dt_dispatch *d, int me)
{
    memset(d, 0, sizeof *d);
    d->comm = &dc[me];
    d->plans = &pc[me];
    d->strategies = &oc[me];
    d->scratch = scr[me];
    d->scratch_bytes = sizeof scr[me];
}

/* Plain tensors (implicit replication), in-place and out variants, zero-copy views,
   custom handlers and found_inf, on a 1-D mesh of 4. */
static int body_features(pg_group *g, void *arg)
{
    int me = pg_rank(g), i;
    dt_dispatch d;
    size_t ob, sb, full;
    dt_tensor a[2], out, o2;
    dt_placement s0[1] = {S0}, r[1] = {R_};
    dt_op_attrs at;
    int32_t sh[2] = {8, 4}, lsh[2] = {2, 4}, s11[2] = {1, 1}, s13[2] = {1, 3}, s81[2] = {8, 1}, l81[2] = {2, 1};
    int32_t s8[1] = {8}, l8[1] = {2}, s1[1] = {1};
    float *x = glob[me][0], *yv = glob[me][1], *w = glob[me][2], fi;
    (void)arg;
    if (me < 0 || me >= NR || pg_set_timeout(g, 5000)) return __LINE__;
    CHECK(dt_mesh_init(&dm[me], 1, one, NULL, pg_world_rank(g, me)) == 0);
    CHECK(dt_comm_init(&dc[me], &dm[me], g) == 0);
    CHECK(dt_plan_cache_init(&pc[me], pce[me], 16) == 0);
    CHECK(dt_op_cache_init(&oc[me], oce[me], 16) == 0);
    dset(&d, me);
    memset(&at, 0, sizeof at);
    /* mm(x (8,1) S(0), plain w): one element is replicated implicitly, three are not */
    for (i = 0; i < 8; i++) x[i] = (float)(i + 1);
    w[0] = 2.0f, w[1] = 3.0f, w[2] = -1.0f;
    CHECK(dt_spec_init(&a[0].spec, &dm[me], s0, 1, MB_F32, 2, s81, NULL) == 0);
    mb_tensor_init(&a[0].local, x + 2 * me, MB_F32, 2, l81);
    memset(&a[1].spec, 0, sizeof a[1].spec); /* plain: spec.mesh NULL */
    mb_tensor_init(&a[1].local, w, MB_F32, 2, s11);
    CHECK(dt_op(&d, DT_ATEN_MM, NULL, a, 2, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(out.spec.placements[0].kind == DT_KIND_SHARD && out.local.shape[0] == 2 && out.local.shape[1] == 1);
    CHECK(yloc[me][0] == 2.0f * x[2 * me] && yloc[me][1] == 2.0f * x[2 * me + 1]);
    mb_tensor_init(&a[1].local, w, MB_F32, 2, s13);
    CHECK(dt_op(&d, DT_ATEN_MM, NULL, a, 2, &out, yloc[me], sizeof yloc[me]) == DT_ERR_MISMATCH);
    d.implicit_replication = 1;
    CHECK(dt_op(&d, DT_ATEN_MM, NULL, a, 2, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(out.spec.shape[1] == 3 && out.local.shape[0] == 2 && out.local.shape[1] == 3);
    for (i = 0; i < 6; i++) CHECK(yloc[me][i] == x[2 * me + i / 3] * w[i % 3]);
    a[0] = a[1]; /* every argument plain: no mesh */
    CHECK(dt_op(&d, DT_ATEN_MM, NULL, a, 2, &out, yloc[me], sizeof yloc[me]) == DT_ERR_MISMATCH);
    d.implicit_replication = 0;
    /* in place: add_(x S(0), y S(0)) writes x's local piece and returns x */
    for (i = 0; i < 32; i++) x[i] = (float)i, yv[i] = 100.0f;
    CHECK(dt_spec_init(&a[0].spec, &dm[me], s0, 1, MB_F32, 2, sh, NULL) == 0);
    CHECK(dt_spec_init(&a[1].spec, &dm[me], s0, 1, MB_F32, 2, sh, NULL) == 0);
    mb_tensor_init(&a[0].local, x + 8 * me, MB_F32, 2, lsh);
    mb_tensor_init(&a[1].local, yv + 8 * me, MB_F32, 2, lsh);
    /* dt_op_query: in place the (2, 4) f32 result is staged in scratch, no out_data bytes */
    CHECK(dt_op_query(&d, DT_ATEN_ADD, NULL, a, 2, DT_OP_IN_PLACE, &ob, &sb) == 0);
    CHECK(ob == 0 && sb == 32);
    full = d.scratch_bytes;
    d.scratch_bytes = sb - 1;
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, a, 2, &out, a[0].local.data, 0) == DT_ERR_TOO_SMALL);
    d.scratch_bytes = sb;
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, a, 2, &out, a[0].local.data, 0) == 0);
    CHECK(out.local.data == (void *)(x + 8 * me) && out.spec.placements[0].kind == DT_KIND_SHARD);
    for (i = 0; i < 8; i++) CHECK(x[8 * me + i] == (float)(8 * me + i) + 100.0f);
    /* in place on a Replicate self with a sharded other would change self's placement */
    CHECK(dt_spec_init(&a[0].spec, &dm[me], r, 1, MB_F32, 2, sh, NULL) == 0);
    mb_tensor_init(&a[0].local, x, MB_F32, 2, sh);
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, a, 2, &out, a[0].local.data, 0) == DT_ERR_NO_STRATEGY);
    CHECK(dt_op_query(&d, DT_ATEN_ADD, NULL, a, 2, DT_OP_IN_PLACE, &ob, &sb) == DT_ERR_NO_STRATEGY);
    CHECK(x[8 * me] == (float)(8 * me) + 100.0f); /* untouched */
    /* out variant: out_data NULL, the result copied into out.local (a transposed view) */
    CHECK(dt_spec_init(&a[0].spec, &dm[me], s0, 1, MB_F32, 2, sh, NULL) == 0);
    mb_tensor_init(&a[0].local, x + 8 * me, MB_F32, 2, lsh);
    mb_tensor_init(&o2.local, part[me], MB_F32, 2, lsh);
    o2.local.stride[0] = 1, o2.local.stride[1] = 2;
    CHECK(dt_op_query(&d, DT_ATEN_SUB, NULL, a, 2, DT_OP_OUT, &ob, &sb) == 0);
    CHECK(ob == 0 && sb == 32);
    d.scratch_bytes = sb - 1;
    CHECK(dt_op(&d, DT_ATEN_SUB, NULL, a, 2, &o2, NULL, 0) == DT_ERR_TOO_SMALL);
    d.scratch_bytes = sb;
    CHECK(dt_op(&d, DT_ATEN_SUB, NULL, a, 2, &o2, NULL, 0) == 0);
    d.scratch_bytes = full;
    CHECK(o2.spec.placements[0].kind == DT_KIND_SHARD && o2.spec.shape[0] == 8 && o2.local.data == part[me]);
    for (i = 0; i < 8; i++) CHECK(part[me][(i % 4) * 2 + i / 4] == x[8 * me + i] - 100.0f);
    o2.local.shape[0] = 3;
    CHECK(dt_op(&d, DT_ATEN_SUB, NULL, a, 2, &o2, NULL, 0) == DT_ERR_MISMATCH);
    /* views: transpose is a view of the input's piece (no copy); reshape of that view has
       no strides that fit, so it copies into out_data */
    for (i = 0; i < 32; i++) x[i] = (float)i;
    at.dim2 = 1;
    CHECK(dt_op(&d, DT_ATEN_TRANSPOSE, &at, a, 1, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(out.local.data == (void *)(x + 8 * me) && out.local.stride[0] == 1 && out.local.stride[1] == 4);
    CHECK(out.spec.placements[0].kind == DT_KIND_SHARD && out.spec.placements[0].arg == 1);
    a[1] = out;
    at = vat(0, 0, 1, 32, 0, 0);
    at.shape[0] = 32;
    CHECK(dt_op(&d, DT_ATEN_RESHAPE, &at, &a[1], 1, &o2, yloc[me], sizeof yloc[me]) == 0);
    CHECK(o2.local.data == yloc[me] && o2.spec.placements[0].kind == DT_KIND_REPLICATE);
    for (i = 0; i < 32; i++) CHECK(yloc[me][i] == x[(i % 8) * 4 + i / 8]); /* x^T flattened */
    /* a custom handler is consulted first and its code returned */
    d.handlers[DT_ATEN_ADD] = my_handler;
    CHECK(dt_op(&d, DT_ATEN_ADD, NULL, a, 2, &out, yloc[me], sizeof yloc[me]) == 7 && handler_calls[me] == 1);
    d.handlers[DT_ATEN_ADD] = NULL;
    /* found_inf: grads S(0) (8,), rank 2's piece holds an inf; found_inf a plain 0-d tensor */
    for (i = 0; i < 8; i++) x[i] = (float)i;
    if (me == 2) x[5] = INFINITY;
    CHECK(dt_spec_init(&a[0].spec, &dm[me], s0, 1, MB_F32, 1, s8, NULL) == 0);
    mb_tensor_init(&a[0].local, x + 2 * me, MB_F32, 1, l8);
    fi = 0.0f;
    memset(&a[1].spec, 0, sizeof a[1].spec);
    mb_tensor_init(&a[1].local, &fi, MB_F32, 0, s1);
    at = vat(0, 0, 0, 0, 0, 0);
    at.scalar = 0.5f;
    CHECK(dt_op(&d, DT_ATEN_AMP_UNSCALE, &at, a, 2, &out, NULL, 0) == 0);
    CHECK(fi == 1.0f && out.local.data == &fi && !out.spec.mesh); /* every rank sees it */
    CHECK(x[2 * me] == (float)(2 * me) * 0.5f);
    /* Replicate grads: no reduction (each rank checks the same values) */
    for (i = 0; i < 8; i++) x[i] = (float)i;
    CHECK(dt_spec_init(&a[0].spec, &dm[me], r, 1, MB_F32, 1, s8, NULL) == 0);
    mb_tensor_init(&a[0].local, x, MB_F32, 1, s8);
    fi = 0.0f;
    CHECK(dt_op(&d, DT_ATEN_AMP_UNSCALE, &at, a, 2, &out, NULL, 0) == 0 && fi == 0.0f && x[7] == 3.5f);
    mb_tensor_init(&a[1].local, x, MB_F32, 1, s8); /* found_inf must have one element */
    CHECK(dt_op(&d, DT_ATEN_AMP_UNSCALE, &at, a, 2, &out, NULL, 0) == DT_ERR_MISMATCH); /* a plain one */
    d.implicit_replication = 1;
    CHECK(dt_op(&d, DT_ATEN_AMP_UNSCALE, &at, a, 2, &out, NULL, 0) == DT_ERR_SHAPE);
    d.implicit_replication = 0;
    CHECK(dt_op(&d, DT_ATEN_AMP_UNSCALE, NULL, a, 2, &out, NULL, 0) == DT_ERR_NULL);
    {
        const dt_spec *sp[2] = {&a[0].spec, &a[0].spec};
        dt_op_strategy s;
        CHECK(dt_propagate(NULL, DT_ATEN_AMP_UNSCALE, NULL, sp, 2, &s) == DT_ERR_UNSUPPORTED);
    }
    return 0;
}

static void test_dispatch_features(void **state)
{
    (void)state;
    assert_int_equal(DTO_RUN(body_features, NULL), 0);
}

/* A sub-mesh of world ranks 1 and 3: ranks 0 and 2 are outside it; they propagate but
   neither compute nor communicate, getting empty outputs (0-d: zero). */
static int body_submesh(pg_group *g, void *arg)
{
    static const int32_t ranks[2] = {1, 3}, two1[1] = {2};
    int me = pg_rank(g), i, member = me == 1 || me == 3;
    dt_dispatch d;
    dt_tensor a[2], out;
    dt_placement s0[1] = {S0};
    dt_op_attrs at;
    int32_t sh[2] = {4, 3}, lsh[2] = {2, 3}, ts[1] = {4}, tl[1] = {2};
    float orig;
    (void)arg;
    if (me < 0 || me >= NR || pg_set_timeout(g, 5000)) return __LINE__;
    CHECK(dt_mesh_init(&dm[me], 1, two1, ranks, pg_world_rank(g, me)) == 0);
    CHECK(dt_comm_init(&dc[me], &dm[me], g) == (member ? 0 : DT_ERR_NOT_MEMBER));
    CHECK(dt_plan_cache_init(&pc[me], pce[me], 16) == 0);
    CHECK(dt_op_cache_init(&oc[me], oce[me], 16) == 0);
    dset(&d, me);
    memset(&at, 0, sizeof at);
    for (i = 0; i < 12; i++) glob[me][0][i] = (float)(i % 5) - 1.0f;
    for (i = 0; i < 4; i++) iglob[me][i] = i % 3;
    CHECK(dt_spec_init(&a[0].spec, &dm[me], s0, 1, MB_F32, 2, sh, NULL) == 0);
    CHECK(dt_spec_init(&a[1].spec, &dm[me], s0, 1, MB_I32, 1, ts, NULL) == 0);
    mb_tensor_init(&a[0].local, glob[me][0] + (me == 3 ? 6 : 0), MB_F32, 2, lsh);
    mb_tensor_init(&a[1].local, iglob[me] + (me == 3 ? 2 : 0), MB_I32, 1, tl);
    at.mode = 2;
    at.ignore_index = -100;
    memset(yloc[me], 0x5a, sizeof yloc[me]);
    CHECK(dt_op(&d, DT_ATEN_NLL_LOSS, &at, a, 2, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(out.spec.ndim == 0 && out.spec.placements[0].kind == DT_KIND_PARTIAL && out.local.ndim == 0);
    if (member) {
        float full;
        mb_tensor ft;
        mb_tensor_init(&ft, &full, MB_F32, 0, ts);
        CHECK(dt_full_tensor(&dc[me], &pc[me], &out.spec, &out.local, &ft, fscr[me], sizeof fscr[me]) == 0);
        CHECK(full == -(glob[me][0][0] + glob[me][0][4] + glob[me][0][8] + glob[me][0][9])); /* x[i, t_i] */
    } else {
        CHECK(yloc[me][0] == 0.0f); /* 0-d: a zero */
    }
    at.mode = 0;
    CHECK(dt_op(&d, DT_ATEN_CROSS_ENTROPY, &at, a, 2, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(out.spec.ndim == 1 && out.spec.shape[0] == 4);
    CHECK(member ? out.local.shape[0] == 2 : out.local.ndim == 1 && out.local.shape[0] == 0);
    orig = ((float *)a[0].local.data)[1];
    CHECK(dt_op(&d, DT_ATEN_NEG, NULL, a, 1, &out, yloc[me], sizeof yloc[me]) == 0);
    CHECK(member ? yloc[me][1] == -orig : out.local.ndim == 2 && out.local.shape[0] == 0 && out.local.shape[1] == 0);
    /* in place: a non-member returns the target untouched */
    CHECK(dt_op(&d, DT_ATEN_NEG, NULL, a, 1, &out, a[0].local.data, 0) == 0 && out.local.data == a[0].local.data);
    CHECK(((float *)a[0].local.data)[1] == (member ? -orig : orig));
    return 0;
}

static void test_dispatch_submesh(void **state)
{
    (void)state;
    assert_int_equal(DTO_RUN(body_submesh, NULL), 0);
}

/* The tests that need no communication (every MPI process, every core of a board runs them). */
/* clang-format off */
#define DTO_LOCAL_TESTS                                                                                 \
    cmocka_unit_test(test_strategy_counts), cmocka_unit_test(test_mm_rules),                           \
    cmocka_unit_test(test_mm_fractional_tie_break),                                                     \
    cmocka_unit_test(test_pointwise_rules), cmocka_unit_test(test_cache_and_errors),                   \
    cmocka_unit_test(test_linear_rules), cmocka_unit_test(test_kernel_linear),                         \
    cmocka_unit_test(test_tp_styles), cmocka_unit_test(test_unary_rules),                              \
    cmocka_unit_test(test_reduce_rules), cmocka_unit_test(test_softmax_norm_rules),                    \
    cmocka_unit_test(test_kernel_ops), cmocka_unit_test(test_kernel_mm),                               \
    cmocka_unit_test(test_view_rules), cmocka_unit_test(test_embed_loss_rules),                        \
    cmocka_unit_test(test_kernel_embed_loss)
/* clang-format on */

#if !defined(DTO_MPI) && !defined(DTO_BOARD)
int main(void)
{
    const struct CMUnitTest tests[] = {
        DTO_LOCAL_TESTS,
#if DT_CBLAS
        cmocka_unit_test(test_kernel_cblas),
#endif
        cmocka_unit_test(test_dispatch_1d),
        cmocka_unit_test(test_dispatch_2x2),
        cmocka_unit_test(test_dispatch_misc),
        cmocka_unit_test(test_dispatch_b_1d),
        cmocka_unit_test(test_dispatch_b_2x2),
        cmocka_unit_test(test_dispatch_features),
        cmocka_unit_test(test_dispatch_submesh),
    };
    return cmocka_run_group_tests_name("dtensor ops over pg_pthread (4 ranks)", tests, NULL, NULL);
}
#endif
