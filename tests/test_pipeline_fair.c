/* tests/test_pipeline_fair.c — fairscale's model features in the pipeline executor
   (PP_SKIPS), each run on pg_pthread and on pg_shm (host threads as cores) and compared with
   a single-rank run of the same work: skip connections across stages (remote, within a
   rank, within a stage; every schedule and checkpoint mode), their bytes against the routes
   (direct, never relayed), tuples of tensors of several dtypes at the boundaries with
   torch.chunk's uneven microbatches (gathered into the un-microbatched result), deferred
   BatchNorm (running statistics equal to the un-microbatched run), a layer at several
   positions (tied embeddings; fairscale's reused Linear), more ranks than stages and
   per-rank construction. Inference outputs are compared bit for bit; trained parameters
   within 1e-6 relative where microbatches' gradients are summed in another order, bit for
   bit where the order is the same. No timing assertions. */
#define _DEFAULT_SOURCE 1 /* clock_gettime, syscall (host_threads.h) under -std=c99 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#define PP_SKIPS 1
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#include "pipeline_bn.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/host_threads.h"

#include "pipeline_fair_model.h"

/* ---- training: the loss, SGD, the difference of two models ---- */
static int loss_cb(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    const float *yp = (const float *)y[0].data, *t = &TGT[mb * g_rows * g_fout];
    double l = 0;
    int i;
    (void)user;
    for (i = 0; i < y[0].shape[0] * g_fout; i++) {
        float d = yp[i] - t[i];
        ((float *)dy[0].data)[i] = d;
        l += 0.5 * (double)d * d;
    }
    *loss = l;
    return 0;
}
static void model_zero_grad(model *m)
{
    int i;
    for (i = 0; i < m->n; i++) {
        memset(m->b[i].gw, 0, sizeof m->b[i].gw);
        memset(m->b[i].gb, 0, sizeof m->b[i].gb);
    }
}
static void model_sgd(model *m, float lr)
{
    int i, k;
    for (i = 0; i < m->n; i++)
        for (k = 0; k < m->b[i].in * m->b[i].out; k++) m->b[i].w[k] -= lr * (float)m->b[i].gw[k];
    for (i = 0; i < m->n; i++)
        for (k = 0; k < m->b[i].out; k++) m->b[i].b[k] -= lr * (float)m->b[i].gb[k];
}
/* |u - v| relative to v (at least 1e-3). */
static double rel(double u, double v)
{
    return fabs(u - v) / (fabs(v) > 1e-3 ? fabs(v) : 1e-3);
}
/* The largest relative difference of two models' parameters. */
static double model_diff(const model *a, const model *x)
{
    double worst = 0;
    int i, k;
    for (i = 0; i < a->n; i++)
        for (k = 0; k < a->b[i].out * (a->b[i].in + 1); k++) {
            double u = k < a->b[i].out * a->b[i].in ? a->b[i].w[k] : a->b[i].b[k - a->b[i].out * a->b[i].in];
            double v = k < x->b[i].out * x->b[i].in ? x->b[i].w[k] : x->b[i].b[k - x->b[i].out * x->b[i].in];
            if (rel(u, v) > worst) worst = rel(u, v);
        }
    return worst;
}

static double ref_step(const pp_exec_cfg *c, int nmb)
{
    double loss = 0;
    assert_int_equal(ref_run(c, nmb, &loss), 0);
    return loss;
}

/* ---- ports, byte counters and one parallel run ---- */
enum { PORT_PTHREAD = 0, PORT_SHM = 1 };
static pg_pthread_world world;
#define SHM_SLOTS   8
#define SHM_PAYLOAD 32 /* an activation of 2 rows is one message; tuples go in pieces */
#define SHM_REGION  PG_SHM_REGION_BYTES(MAXR, SHM_SLOTS, SHM_PAYLOAD)
static uint32_t shm_region[SHM_REGION / 4 + 16] __attribute__((aligned(64)));
static pg_shm shm[MAXR];
static pg_shm_host_bells bells;
static int shm_rc[MAXR];

/* Bytes each rank sent to and received from each other, by wrapping its port's send/recv. */
static long sent[MAXR][MAXR], recvd[MAXR][MAXR];
static pg_ops counted_ops[MAXR];
static const pg_ops *inner_ops[MAXR];
static __thread int this_rank; /* ranks are threads */
static int counted_send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t tmo)
{
    int r = this_rank, rc = inner_ops[r]->send(port, dst, tag, buf, bytes, tmo);
    if (rc >= 0) sent[r][dst] += (long)bytes;
    return rc;
}
static int counted_recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t tmo)
{
    int r = this_rank, rc = inner_ops[r]->recv(port, src, tag, buf, cap, got, tmo);
    if (rc >= 0) recvd[r][src] += (long)*got;
    return rc;
}

static pp_action plan_store[2][8192];
static pp_plan sched, plan;
static pp_table tables[MAXR];
static pp_exec_cfg cfg;
static uint64_t exec_mem[MAXR][16384];
static size_t exec_need[MAXR];
static double rank_loss[MAXR];
static int rank_has_loss[MAXR], rank_err[MAXR], build_layers;

static int rank_body(pg_group *g, void *arg)
{
    pp_exec e;
    int r = pg_rank(g), rc;
    (void)arg;
    rank_has_loss[r] = 0;
    pg_set_timeout(g, 5000);
    this_rank = r;
    counted_ops[r] = *g->ops;
    inner_ops[r] = g->ops;
    counted_ops[r].send = counted_send;
    counted_ops[r].recv = counted_recv;
    g->ops = &counted_ops[r];
    exec_need[r] = pp_exec_bytes(&cfg, &tables[r]);
    if ((rc = pp_exec_init(&e, &cfg, &tables[r], g, exec_mem[r], sizeof exec_mem[r])) != 0) return rc;
    if (build_layers && (rc = pp_exec_build(&e)) != 0) return rc;
    rc = pp_exec_run(&e);
    rank_err[r] = e.err;
    if (rc) { /* where it failed */
        char a[32];
        pp_action_format(tables[r].actions[e.at], a, sizeof a);
        print_message("rank %d failed at %d (%s): %d err %d\n", r, e.at, a, rc, e.err);
    }
    if (rc == 0 && e.losses && pp_exec_loss(&e, NULL, &rank_loss[r]) == 0) rank_has_loss[r] = 1;
    return rc;
}
static void *shm_thread(void *arg)
{
    int r = (int)(intptr_t)arg, rc;
    pg_shm_hooks h;
    pg_shm_host_hooks(&h, &bells);
    rc = pg_shm_init(&shm[r], shm_region, SHM_REGION, r, &h);
    shm_rc[r] = rc < 0 ? rc : rank_body(pg_shm_group(&shm[r]), NULL);
    return NULL;
}
/* Runs the tables on n ranks of `port`: every rank must return 0. The loss (training). */
static double run_ranks(int port, int n)
{
    int r, rcs[MAXR], have = 0;
    double loss = 0;
    memset(sent, 0, sizeof sent);
    memset(recvd, 0, sizeof recvd);
    if (port == PORT_PTHREAD) {
        assert_int_equal(pg_pthread_world_init(&world, n), 0);
        pg_pthread_run(&world, n, rank_body, NULL);
        for (r = 0; r < n; r++) rcs[r] = world.rc[r];
    } else {
        pthread_t t[MAXR];
        memset(shm_region, 0, sizeof shm_region);
        assert_int_equal(pg_shm_format(shm_region, SHM_REGION, n, SHM_SLOTS, SHM_PAYLOAD), 0);
        for (r = 0; r < n; r++) pthread_create(&t[r], NULL, shm_thread, (void *)(intptr_t)r);
        for (r = 0; r < n; r++) pthread_join(t[r], NULL);
        for (r = 0; r < n; r++) rcs[r] = shm_rc[r];
    }
    for (r = 0; r < n; r++) {
        if (rcs[r]) print_error("rank %d: %d (err %d)\n", r, rcs[r], rank_err[r]);
        assert_int_equal(rcs[r], 0);
        if (rank_has_loss[r]) {
            loss = rank_loss[r];
            have++;
        }
    }
    assert_true(have <= 1);
    return loss;
}

/* The lowered plan (a schedule on the standard map, or stage_map over any map) with the
   model's skip routes, and every rank's table (nworld >= the plan's ranks). */
static pp_route routes[PP_MAX_SKIPS];
static int nroutes;
static void make_plan(int kind, int P, int V, const uint8_t *stage_map, int S, int nmb, int nworld)
{
    int r;
    if (stage_map)
        assert_int_equal(
            pp_schedule_build_map(&sched, kind, P, stage_map, S, nmb, plan_store[0], sizeof plan_store[0], NULL), 0);
    else
        assert_int_equal(pp_schedule_build(&sched, kind, P, V, nmb, plan_store[0], sizeof plan_store[0], NULL), 0);
    assert_int_equal(pp_plan_skips(&sched, routes, nroutes), 0);
    assert_int_equal(pp_validate(&sched, NULL), 0);
    assert_int_equal(pp_lower(&sched, &plan, plan_store[1], sizeof plan_store[1], NULL), 0);
    assert_int_equal(pp_validate(&plan, NULL), 0);
    for (r = 0; r < nworld; r++) assert_int_equal(pp_plan_table(&plan, r, &tables[r]), 0);
}
/* A config of nlayers layers over balance, f32 tuples of `in`, the data callbacks given
   (training with a loss callback, else inference). */
typedef int (*input_fn)(void *, int, mb_tensor *);
typedef int (*loss_fn)(void *, int, const mb_tensor *, mb_tensor *, double *);
typedef int (*output_fn)(void *, int, const mb_tensor *);
static void base_cfg(pp_exec_cfg *c, pp_layer *layers, int nlayers, const int32_t *balance, int rows,
                     const pp_tspec *in, int nin, input_fn input, loss_fn loss, output_fn output)
{
    memset(c, 0, sizeof *c);
    c->layers = layers;
    c->nlayers = nlayers;
    c->balance = balance;
    c->rows = rows;
    c->dtype = MB_F32;
    c->in = in;
    c->nin = nin;
    c->input = input;
    c->loss = loss;
    c->output = loss ? NULL : output;
}
static void make_cfg(model *m, const int32_t *balance, int nstages, int rows, int train, int ckpt)
{
    base_cfg(&cfg, m->L, m->n, balance, rows, &m->in, 1, in_cb, train ? loss_cb : NULL, out_cb);
    cfg.checkpoint = ckpt;
    cfg.skips = routes;
    g_rows = rows;
    assert_int_equal(pp_skip_layout(m->L, m->n, NULL, m->n, balance, nstages, routes, PP_MAX_SKIPS, &nroutes, NULL), 0);
    cfg.nskips = nroutes;
}

static const struct {
    int kind, P, V;
} SCHEDS[] = {
    {PP_SCHED_GPIPE, 4, 1},      {PP_SCHED_1F1B, 4, 1},           {PP_SCHED_INTERLEAVED_1F1B, 2, 2},
    {PP_SCHED_LOOPED_BFS, 2, 2}, {PP_SCHED_INTERLEAVED_ZB, 2, 2}, {PP_SCHED_ZBV, 2, 2},
};
static double worst_skips_train;

/* Two training steps of every schedule and checkpoint mode equal two single-rank steps. */
static void skips_train(int port)
{
    int si, ck, step, nmb = 4;
    data_init(F, F);
    for (si = 0; si < 6; si++)
        for (ck = PP_CKPT_ALWAYS; ck <= PP_CKPT_NEVER; ck++) {
            static model par, ref;
            double d;
            skip_model(&par);
            skip_model(&ref);
            make_cfg(&par, BAL4, 4, BATCH / nmb, 1, ck);
            make_plan(SCHEDS[si].kind, SCHEDS[si].P, SCHEDS[si].V, NULL, 4, nmb, SCHEDS[si].P);
            for (step = 0; step < 2; step++) {
                double got, want;
                model_zero_grad(&par);
                model_zero_grad(&ref);
                got = run_ranks(port, SCHEDS[si].P);
                cfg.layers = ref.L;
                want = ref_step(&cfg, nmb);
                cfg.layers = par.L;
                assert_true(fabs(got - want) <= 1e-9 * fabs(want));
                model_sgd(&par, 0.05f);
                model_sgd(&ref, 0.05f);
            }
            d = model_diff(&par, &ref);
            if (d > worst_skips_train) worst_skips_train = d;
            if (d > 1e-6) print_error("%s ckpt %d: %g\n", pp_schedule_name(SCHEDS[si].kind), ck, d);
            assert_true(d <= 1e-6);
        }
    print_message("skips, training (6 schedules x 3 checkpoint modes, 2 steps): max relative difference %g\n",
                  worst_skips_train);
}
static void test_skips_train_pthread(void **st)
{
    (void)st;
    skips_train(PORT_PTHREAD);
}
static void test_skips_train_shm(void **st)
{
    (void)st;
    skips_train(PORT_SHM);
}

/* Inference: every route crossing ranks (4 ranks), within a rank (2 ranks, interleaved map),
   and all stages on one rank: the outputs of the single-rank forward, bit for bit. */
static void skips_infer(int port)
{
    static const uint8_t loop2[4] = {0, 1, 0, 1}, one[4] = {0, 0, 0, 0};
    static model m;
    static float want[BATCH * F];
    int c, nmb = 4;
    data_init(F, F);
    skip_model(&m);
    make_cfg(&m, BAL4, 4, BATCH / nmb, 0, PP_CKPT_NEVER);
    ref_step(&cfg, nmb);
    memcpy(want, OUT, sizeof want);
    for (c = 0; c < 3; c++) {
        int P = c == 0 ? 4 : c == 1 ? 2 : 1;
        memset(OUT, 0, sizeof OUT);
        make_plan(PP_SCHED_FORWARD_ONLY, P, 1, c ? (c == 1 ? loop2 : one) : NULL, 4, nmb, P);
        run_ranks(port, P);
        assert_memory_equal(OUT, want, sizeof want);
    }
}
static void test_skips_infer_pthread(void **st)
{
    (void)st;
    skips_infer(PORT_PTHREAD);
}
static void test_skips_infer_shm(void **st)
{
    (void)st;
    skips_infer(PORT_SHM);
}

/* Skips go straight from the stashing rank to the popping rank: on 4 ranks each rank sends
   and receives exactly its activations (and gradients) and the skips of its own routes, no
   rank relays one: rank 1 passes on stage 0's activation, never skip a (0 -> 2). */
static void skip_bytes(int port)
{
    static model m;
    int train, r, q, k, nmb = 4, rows = BATCH / nmb;
    long act = (long)rows * F * 4;
    data_init(F, F);
    for (train = 0; train < 2; train++) {
        long want[MAXR][MAXR];
        skip_model(&m);
        make_cfg(&m, BAL4, 4, rows, train, PP_CKPT_NEVER);
        make_plan(train ? PP_SCHED_1F1B : PP_SCHED_FORWARD_ONLY, 4, 1, NULL, 4, nmb, 4);
        memset(want, 0, sizeof want);
        for (r = 0; r < 3; r++) { /* boundaries: activations forward, gradients back */
            want[r][r + 1] += nmb * act;
            if (train) want[r + 1][r] += nmb * act;
        }
        for (k = 0; k < nroutes; k++) { /* routes, each straight between its two ranks */
            int src = routes[k].src, dst = routes[k].dst;
            if (src == dst) continue;
            want[src][dst] += nmb * act;
            if (train) want[dst][src] += nmb * act;
        }
        run_ranks(port, 4);
        for (r = 0; r < 4; r++)
            for (q = 0; q < 4; q++) {
                if (sent[r][q] != want[r][q])
                    print_error("train %d: %d -> %d sent %ld, want %ld\n", train, r, q, sent[r][q], want[r][q]);
                assert_int_equal(sent[r][q], want[r][q]);
                assert_int_equal(recvd[q][r], want[r][q]);
            }
        if (port == PORT_PTHREAD)
            print_message("skip bytes (%s, 4 ranks, M = 4): 0->1 %ld, 0->2 %ld (skip a, direct), 1->2 %ld (no relay), "
                          "1->3 %ld, 2->3 %ld, 3->0 %ld\n",
                          train ? "1F1B" : "forward-only", sent[0][1], sent[0][2], sent[1][2], sent[1][3], sent[2][3],
                          sent[3][0]);
    }
}
static void test_skip_bytes_pthread(void **st)
{
    (void)st;
    skip_bytes(PORT_PTHREAD);
}
static void test_skip_bytes_shm(void **st)
{
    (void)st;
    skip_bytes(PORT_SHM);
}

/* ---- tuples: (x f32 [rows, 4], ids i32 [rows, 2], scale f32, whole) at every boundary, a
   mini-batch of 10 rows split as torch.chunk into 4 microbatches (3, 3, 3, 1) ----
   y = W x + b + ids[:, 0] * scale, ids + 1, scale: rows stay independent, so the pipelined
   outputs gathered (torch.cat) equal the un-microbatched run bit for bit. */
#define TROWS 10
typedef struct tup {
    float w[F * F], b[F];
    double gw[F * F], gb[F];
} tup;
static int tup_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const tup *T = (const tup *)self;
    const float *xp = (const float *)x[0].data, *sc = (const float *)x[2].data;
    const int32_t *id = (const int32_t *)x[1].data;
    int r, o, i, rows = x[0].shape[0];
    if (x[1].dtype != MB_I32 || x[2].ndim != 1 || x[2].shape[0] != 1 || y[1].shape[0] != rows) return -902;
    for (r = 0; r < rows; r++) {
        for (o = 0; o < F; o++) {
            float v = T->b[o] + (float)id[2 * r] * sc[0];
            for (i = 0; i < F; i++) v += T->w[o * F + i] * xp[r * F + i];
            ((float *)y[0].data)[r * F + o] = v;
        }
        for (i = 0; i < 2; i++) ((int32_t *)y[1].data)[2 * r + i] = id[2 * r + i] + 1;
    }
    ((float *)y[2].data)[0] = sc[0];
    return 0;
}
static int tup_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const tup *T = (const tup *)self;
    const float *g = (const float *)dy[0].data;
    const int32_t *id = (const int32_t *)x[1].data;
    double ds = ((const float *)dy[2].data)[0];
    int r, o, i;
    for (r = 0; r < x[0].shape[0]; r++)
        for (i = 0; i < F; i++) {
            float s = 0;
            for (o = 0; o < F; o++) s += g[r * F + o] * T->w[o * F + i];
            ((float *)dx[0].data)[r * F + i] = s;
            ds += (double)g[r * F + i] * id[2 * r];
        }
    ((float *)dx[2].data)[0] = (float)ds; /* the integer ids have no gradient */
    return 0;
}
static int tup_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    tup *T = (tup *)self;
    const float *g = (const float *)dy[0].data, *xp = (const float *)x[0].data;
    int r, o, i;
    for (r = 0; r < x[0].shape[0]; r++)
        for (o = 0; o < F; o++) {
            T->gb[o] += g[r * F + o];
            for (i = 0; i < F; i++) T->gw[o * F + i] += (double)g[r * F + o] * xp[r * F + i];
        }
    return 0;
}
static tup tups[4], tups_ref[4];
static pp_layer tup_layers[4], tup_ref_layers[4];
static pp_tspec tup_spec[3];
static float TX[TROWS * F], TT[TROWS * F], TSC = 0.25f, TOUT[TROWS * F];
static int32_t TID[TROWS * 2], TOUTID[TROWS * 2];
static mb_value tchunks[MAXMB * 2];
static int tchunk_rows[MAXMB];
static void tup_init(void)
{
    int l, k;
    lcg = 4242;
    for (k = 0; k < TROWS * F; k++) TX[k] = frand(), TT[k] = frand();
    for (k = 0; k < TROWS * 2; k++) TID[k] = (int32_t)(k % 5) - 2;
    tup_spec[0] = f32s(F);
    tup_spec[1] = f32s(2);
    tup_spec[1].dtype = MB_I32;
    tup_spec[2] = f32s(1);
    tup_spec[2].whole = 1;
    for (l = 0; l < 4; l++) {
        memset(&tups[l], 0, sizeof tups[l]);
        for (k = 0; k < F * F; k++) tups[l].w[k] = frand();
        for (k = 0; k < F; k++) tups[l].b[k] = 0.1f * frand();
        tups_ref[l] = tups[l];
        memset(&tup_layers[l], 0, sizeof tup_layers[l]);
        tup_layers[l].forward = tup_fwd;
        tup_layers[l].backward_input = tup_bi;
        tup_layers[l].backward_weight = tup_bw;
        tup_layers[l].out = tup_spec;
        tup_layers[l].nout = 3;
        tup_ref_layers[l] = tup_layers[l];
        tup_layers[l].self = &tups[l];
        tup_ref_layers[l].self = &tups_ref[l];
    }
}
/* microbatch.h's torch.chunk split (MB_CEIL) of the mini-batch's two batched tensors */
static void tup_split(int nmb)
{
    mb_value in[2];
    int32_t xs[2] = {TROWS, F}, is[2] = {TROWS, 2};
    int c;
    mb_tensor_init(&in[0].tensor, TX, MB_F32, 2, xs);
    mb_tensor_init(&in[1].tensor, TID, MB_I32, 2, is);
    in[0].kind = in[1].kind = MB_VALUE_TENSOR;
    assert_int_equal(mb_split(in, NULL, 2, nmb, MB_CEIL, tchunks, MAXMB, NULL), nmb);
    for (c = 0; c < nmb; c++) tchunk_rows[c] = tchunks[2 * c].tensor.shape[0];
}
static int tup_in(void *user, int mb, mb_tensor *x)
{
    int rows = tchunk_rows[mb];
    (void)user;
    if (x[0].shape[0] != rows || x[1].shape[0] != rows) return -903;
    memcpy(x[0].data, tchunks[2 * mb].tensor.data, sizeof(float) * (size_t)(rows * F));
    memcpy(x[1].data, tchunks[2 * mb + 1].tensor.data, sizeof(int32_t) * (size_t)(rows * 2));
    ((float *)x[2].data)[0] = TSC; /* whole: the same in every microbatch */
    return 0;
}
static int tup_row0(int mb) /* torch.cat: the rows of the microbatches before */
{
    int c, n = 0;
    for (c = 0; c < mb; c++) n += tchunk_rows[c];
    return n;
}
static int tup_out(void *user, int mb, const mb_tensor *y)
{
    int r0 = tup_row0(mb), rows = y[0].shape[0];
    (void)user;
    memcpy(&TOUT[r0 * F], y[0].data, sizeof(float) * (size_t)(rows * F));
    memcpy(&TOUTID[r0 * 2], y[1].data, sizeof(int32_t) * (size_t)(rows * 2));
    return ((const float *)y[2].data)[0] == TSC ? 0 : -904;
}
static int tup_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    int r0 = tup_row0(mb), i;
    double l = 0;
    (void)user;
    for (i = 0; i < y[0].shape[0] * F; i++) {
        float d = ((const float *)y[0].data)[i] - TT[r0 * F + i];
        ((float *)dy[0].data)[i] = d;
        l += 0.5 * (double)d * d;
    }
    ((float *)dy[2].data)[0] = 0; /* the loss does not use the scale */
    *loss = l;
    return 0;
}
static void tup_cfg(pp_exec_cfg *c, pp_layer *layers, int nmb, const int32_t *balance, int train)
{
    base_cfg(c, layers, 4, balance, (TROWS + nmb - 1) / nmb, tup_spec, 3, tup_in, train ? tup_loss : NULL, tup_out);
    c->batch = nmb > 1 ? TROWS : 0;
}
static void tuples(int port)
{
    static const int32_t b4[4] = {1, 1, 1, 1}, b2[2] = {2, 2}, b1[1] = {4};
    static float want[TROWS * F], wantw[4][F * F + F];
    static int32_t wantid[TROWS * 2];
    pp_exec_cfg ref;
    int train, c, l, k;
    tup_init();
    nroutes = 0;
    /* the single-rank, un-microbatched run: rows 10, one microbatch */
    tup_split(1);
    tup_cfg(&ref, tup_ref_layers, 1, b1, 0);
    ref_step(&ref, 1);
    memcpy(want, TOUT, sizeof want);
    memcpy(wantid, TOUTID, sizeof wantid);
    tup_cfg(&ref, tup_ref_layers, 1, b1, 1);
    ref_step(&ref, 1);
    for (l = 0; l < 4; l++) { /* one SGD step */
        for (k = 0; k < F * F; k++) wantw[l][k] = tups_ref[l].w[k] - 0.05f * (float)tups_ref[l].gw[k];
        for (k = 0; k < F; k++) wantw[l][F * F + k] = tups_ref[l].b[k] - 0.05f * (float)tups_ref[l].gb[k];
    }
    tup_split(4);
    for (train = 0; train < 2; train++)
        for (c = 0; c < 3; c++) {
            int P = c < 2 ? 4 : 2, kind = train ? (c == 1 ? PP_SCHED_1F1B : PP_SCHED_GPIPE) : PP_SCHED_FORWARD_ONLY;
            tup_init();
            tup_split(4);
            tup_cfg(&cfg, tup_layers, 4, P == 4 ? b4 : b2, train);
            make_plan(kind, P, 1, NULL, P, 4, P);
            memset(TOUT, 0, sizeof TOUT);
            run_ranks(port, P);
            if (!train) {
                assert_memory_equal(TOUT, want, sizeof want);
                assert_memory_equal(TOUTID, wantid, sizeof wantid);
                continue;
            }
            for (l = 0; l < 4; l++) { /* the gradients summed in the same row order: the same bits */
                for (k = 0; k < F * F; k++) tups[l].w[k] -= 0.05f * (float)tups[l].gw[k];
                for (k = 0; k < F; k++) tups[l].b[k] -= 0.05f * (float)tups[l].gb[k];
                assert_memory_equal(tups[l].w, wantw[l], sizeof tups[l].w);
                assert_memory_equal(tups[l].b, &wantw[l][F * F], sizeof tups[l].b);
            }
        }
    /* torch.chunk gives fewer chunks than microbatches: refused */
    tup_cfg(&cfg, tup_layers, 4, b4, 0);
    cfg.batch = 9; /* rows 3: chunks of 3, 3, 3 */
    make_plan(PP_SCHED_FORWARD_ONLY, 4, 1, NULL, 4, 4, 4);
    assert_int_equal(pp_exec_bytes(&cfg, &tables[0]), 0);
}
static void test_tuples_pthread(void **st)
{
    (void)st;
    tuples(PORT_PTHREAD);
}
static void test_tuples_shm(void **st)
{
    (void)st;
    tuples(PORT_SHM);
}

/* ---- deferred BatchNorm: Conv1x1 -> DeferredBatchNorm -> Conv1x1 -> Conv1x1 over [rows, 3, 4]
   on 2 ranks, 4 microbatches of 2 rows. The running statistics after a step equal those of
   one un-microbatched step (the BatchNorm sees the same samples in the same order), with
   checkpointing too (a recompute does not count twice); the parameters equal the single-rank
   run of the same microbatches (each normalized by its own statistics, as fairscale's). ---- */
#define BC 3
#define BL 4
typedef struct chan {
    float w[BC * BC], b[BC];
    double gw[BC * BC], gb[BC];
} chan;
static int chan_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const chan *C = (const chan *)self;
    int r, o, c, l;
    for (r = 0; r < x[0].shape[0]; r++)
        for (o = 0; o < BC; o++)
            for (l = 0; l < BL; l++) {
                float v = C->b[o];
                for (c = 0; c < BC; c++) v += C->w[o * BC + c] * ((const float *)x[0].data)[(r * BC + c) * BL + l];
                ((float *)y[0].data)[(r * BC + o) * BL + l] = v;
            }
    return 0;
}
static int chan_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const chan *C = (const chan *)self;
    int r, o, c, l;
    for (r = 0; r < x[0].shape[0]; r++)
        for (c = 0; c < BC; c++)
            for (l = 0; l < BL; l++) {
                float v = 0;
                for (o = 0; o < BC; o++) v += C->w[o * BC + c] * ((const float *)dy[0].data)[(r * BC + o) * BL + l];
                ((float *)dx[0].data)[(r * BC + c) * BL + l] = v;
            }
    return 0;
}
static int chan_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    chan *C = (chan *)self;
    int r, o, c, l;
    for (r = 0; r < x[0].shape[0]; r++)
        for (o = 0; o < BC; o++)
            for (l = 0; l < BL; l++) {
                float g = ((const float *)dy[0].data)[(r * BC + o) * BL + l];
                C->gb[o] += g;
                for (c = 0; c < BC; c++)
                    C->gw[o * BC + c] += (double)g * ((const float *)x[0].data)[(r * BC + c) * BL + l];
            }
    return 0;
}
typedef struct bnnet {
    chan c[3];
    pp_dbn bn;
    float bw[BC], bb[BC], rm[BC], rv[BC], gw[BC], gb[BC];
    double acc[2 * BC];
    pp_layer L[4];
} bnnet;
static pp_tspec bn_spec;
static void bnnet_init(bnnet *n, int chunks)
{
    int i, k;
    memset(n, 0, sizeof *n);
    lcg = 99;
    bn_spec.dtype = MB_F32;
    bn_spec.ndim = 2;
    bn_spec.shape[0] = BC;
    bn_spec.shape[1] = BL;
    for (i = 0; i < 3; i++) {
        for (k = 0; k < BC * BC; k++) n->c[i].w[k] = frand() + (k % (BC + 1) == 0);
        for (k = 0; k < BC; k++) n->c[i].b[k] = frand();
    }
    assert_int_equal(pp_dbn_init(&n->bn, BC, 1e-5f, 0.1f, chunks, n->bw, n->bb, n->rm, n->rv, n->gw, n->gb, n->acc), 0);
    for (i = 0; i < 4; i++) {
        pp_layer *L = &n->L[i];
        if (i == 1)
            pp_dbn_layer(&n->bn, L);
        else {
            L->forward = chan_fwd;
            L->backward_input = chan_bi;
            L->backward_weight = chan_bw;
            L->self = &n->c[i ? i - 1 : 0];
        }
        L->out = &bn_spec;
        L->nout = 1;
    }
}
static float BX[BATCH * BC * BL], BT[BATCH * BC * BL], BOUT[BATCH * BC * BL];
static int bn_rows;
static int bn_in(void *user, int mb, mb_tensor *x)
{
    (void)user;
    memcpy(x[0].data, &BX[mb * bn_rows * BC * BL], sizeof(float) * (size_t)(x[0].shape[0] * BC * BL));
    return 0;
}
static int bn_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    int i;
    double l = 0;
    (void)user;
    for (i = 0; i < y[0].shape[0] * BC * BL; i++) {
        float d = ((const float *)y[0].data)[i] - BT[mb * bn_rows * BC * BL + i];
        ((float *)dy[0].data)[i] = d;
        l += 0.5 * (double)d * d;
    }
    *loss = l;
    return 0;
}
static int bn_out(void *user, int mb, const mb_tensor *y)
{
    (void)user;
    memcpy(&BOUT[mb * bn_rows * BC * BL], y[0].data, sizeof(float) * (size_t)(y[0].shape[0] * BC * BL));
    return 0;
}
static void bn_cfg(pp_exec_cfg *c, bnnet *n, int rows, const int32_t *balance, int train, int ckpt)
{
    base_cfg(c, n->L, 4, balance, rows, &bn_spec, 1, bn_in, train ? bn_loss : NULL, bn_out);
    c->checkpoint = ckpt;
    bn_rows = rows;
}
static double worst_bn;
static void deferred_bn(int port)
{
    static const int32_t b22[2] = {2, 2}, b4[1] = {4};
    static bnnet par, same, whole;
    static float want[BATCH * BC * BL];
    pp_exec_cfg ref;
    int k, kind, ck;
    lcg = 5;
    for (k = 0; k < BATCH * BC * BL; k++) BX[k] = 3 * frand() + (float)(k % 7), BT[k] = frand();
    nroutes = 0;
    for (kind = 0; kind < 2; kind++)
        for (ck = PP_CKPT_ALWAYS; ck <= PP_CKPT_NEVER; ck += PP_CKPT_NEVER) {
            double d = 0;
            int i, c;
            bnnet_init(&par, 4);
            bnnet_init(&same, 4);
            bnnet_init(&whole, 1);
            bn_cfg(&ref, &whole, BATCH, b4, 1, PP_CKPT_NEVER); /* one step of 8 rows */
            ref_step(&ref, 1);
            bn_cfg(&ref, &same, BATCH / 4, b4, 1, PP_CKPT_NEVER); /* the same 4 microbatches */
            ref_step(&ref, 1 * 4);
            bn_cfg(&cfg, &par, BATCH / 4, b22, 1, ck);
            make_plan(kind ? PP_SCHED_1F1B : PP_SCHED_GPIPE, 2, 1, NULL, 2, 4, 2);
            run_ranks(port, 2);
            /* running statistics: those of the un-microbatched step, bit for bit */
            assert_memory_equal(par.rm, whole.rm, sizeof par.rm);
            assert_memory_equal(par.rv, whole.rv, sizeof par.rv);
            assert_int_equal(par.bn.num_batches_tracked, 1);
            assert_int_equal(par.bn.tracked, 0);
            assert_memory_equal(par.rm, same.rm, sizeof par.rm);
            for (c = 0; c < BC; c++) assert_true(par.rv[c] != 1.0f); /* they moved */
            /* gradients: those of the single-rank run of the same microbatches */
            for (i = 0; i < 3; i++)
                for (k = 0; k < BC * BC + BC; k++) {
                    double u = k < BC * BC ? par.c[i].gw[k] : par.c[i].gb[k - BC * BC];
                    double v = k < BC * BC ? same.c[i].gw[k] : same.c[i].gb[k - BC * BC];
                    if (rel(u, v) > d) d = rel(u, v);
                }
            for (c = 0; c < BC; c++)
                if (rel(par.gw[c], same.gw[c]) > d) d = rel(par.gw[c], same.gw[c]);
            if (d > worst_bn) worst_bn = d;
            assert_true(d <= 1e-6);
        }
    /* eval: normalized by the running statistics, equal to the single-rank forward */
    bnnet_init(&whole, 4);
    whole.bn.training = 0;
    for (k = 0; k < BC; k++) whole.rm[k] = 0.5f * (float)k, whole.rv[k] = 2.0f + (float)k;
    par = whole;
    par.bn.running_mean = par.rm, par.bn.running_var = par.rv, par.bn.weight = par.bw, par.bn.bias = par.bb;
    par.bn.sum = par.acc, par.bn.sum_squares = par.acc + BC, par.bn.grad_weight = par.gw, par.bn.grad_bias = par.gb;
    for (k = 0; k < 4; k++) par.L[k].self = k == 1 ? (void *)&par.bn : (void *)&par.c[k ? k - 1 : 0];
    bn_cfg(&ref, &whole, BATCH / 4, b4, 0, PP_CKPT_NEVER);
    ref_step(&ref, 4);
    memcpy(want, BOUT, sizeof want);
    bn_cfg(&cfg, &par, BATCH / 4, b22, 0, PP_CKPT_NEVER);
    make_plan(PP_SCHED_FORWARD_ONLY, 2, 1, NULL, 2, 4, 2);
    memset(BOUT, 0, sizeof BOUT);
    run_ranks(port, 2);
    assert_memory_equal(BOUT, want, sizeof want);
    print_message("deferred BatchNorm: running statistics equal to the un-microbatched step; gradients vs the "
                  "single-rank microbatched run: max relative difference %g\n",
                  worst_bn);
}
static void test_deferred_bn_pthread(void **st)
{
    (void)st;
    deferred_bn(PORT_PTHREAD);
}
static void test_deferred_bn_shm(void **st)
{
    (void)st;
    deferred_bn(PORT_SHM);
}

/* ---- a layer at several positions ----
   Tied embeddings (AsyncPipe's invocations): [emb, block, block, emb] with balance [2, 1]
   (distinct layers), so rank 0 holds the embedding and the flow returns to it: stages
   0 1 | 2 | 3 on ranks 0, 1, 0. The embedding looks up token ids (i32 [rows, 1]) at its first
   position and projects onto its rows at its second (vocabulary = width = 4); its gradient
   accumulates from both. Then fairscale's reused Linear: [R, Linear, ReLU, R, ReLU, R, ReLU]
   with balance [3, 1, 1] on 3 ranks. */
typedef struct tied {
    float e[F * F];
    double ge[F * F];
} tied;
static int tied_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const tied *T = (const tied *)self;
    int r, v, d;
    for (r = 0; r < x[0].shape[0]; r++)
        for (v = 0; v < F; v++) {
            float s = 0;
            if (x[0].dtype == MB_I32) { /* the input embedding: a row of e */
                int32_t id = ((const int32_t *)x[0].data)[r];
                if (id < 0 || id >= F) return -905;
                s = T->e[id * F + v];
            } else /* the output projection: x e^T */
                for (d = 0; d < F; d++) s += ((const float *)x[0].data)[r * F + d] * T->e[v * F + d];
            ((float *)y[0].data)[r * F + v] = s;
        }
    return 0;
}
static int tied_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const tied *T = (const tied *)self;
    int r, v, d;
    for (r = 0; r < x[0].shape[0]; r++)
        for (d = 0; d < F; d++) {
            float s = 0;
            for (v = 0; v < F; v++) s += ((const float *)dy[0].data)[r * F + v] * T->e[v * F + d];
            ((float *)dx[0].data)[r * F + d] = s;
        }
    return 0;
}
static int tied_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    tied *T = (tied *)self;
    int r, v, d;
    for (r = 0; r < x[0].shape[0]; r++)
        for (v = 0; v < F; v++) {
            double g = ((const float *)dy[0].data)[r * F + v];
            if (x[0].dtype == MB_I32)
                T->ge[((const int32_t *)x[0].data)[r] * F + v] += g;
            else
                for (d = 0; d < F; d++) T->ge[v * F + d] += g * ((const float *)x[0].data)[r * F + d];
        }
    return 0;
}
static int32_t TOK[BATCH];
static int tok_in(void *user, int mb, mb_tensor *x)
{
    (void)user;
    memcpy(x[0].data, &TOK[mb * g_rows], sizeof(int32_t) * (size_t)x[0].shape[0]);
    return 0;
}
typedef struct tiednet {
    tied emb;
    model m; /* its blocks 1, 2 (and their specs) */
    pp_tspec tok;
} tiednet;
static void tied_init(tiednet *n)
{
    int k;
    skip_model(&n->m); /* reuse the block layers, without skips */
    model_clear(&n->m);
    lcg = 31;
    model_blk(&n->m, 1, F, F, 1, 1);
    model_blk(&n->m, 2, F, F, 1, 0);
    memset(&n->emb, 0, sizeof n->emb);
    for (k = 0; k < F * F; k++) n->emb.e[k] = frand();
    n->m.L[0].forward = tied_fwd;
    n->m.L[0].backward_input = tied_bi;
    n->m.L[0].backward_weight = tied_bw;
    n->m.L[0].self = &n->emb;
    n->m.L[0].out = &n->m.out[1];
    n->m.L[0].nout = 1;
    n->m.n = 3;
    n->tok = f32s(1);
    n->tok.dtype = MB_I32;
}
static double worst_tied;
static void invocations(int port)
{
    static const int32_t order[4] = {0, 1, 2, 0}, parts[2] = {2, 1};
    static const int32_t rorder[7] = {0, 1, 2, 0, 3, 0, 4}, rparts[3] = {3, 1, 1};
    static tiednet par, ref;
    static model rpar, rref;
    static float want[BATCH * F];
    int32_t sb[PP_MAX_STAGES];
    uint8_t map[PP_MAX_STAGES];
    int ns, train, k, i;
    for (k = 0; k < BATCH; k++) TOK[k] = (int32_t)((k * 3 + 1) % F);
    data_init(F, F);
    nroutes = 0;
    assert_int_equal(pp_invocations(order, 4, 3, parts, 2, sb, map, &ns, NULL), 0);
    assert_int_equal(ns, 3);
    for (train = 0; train < 2; train++) {
        double d = 0;
        tied_init(&par);
        tied_init(&ref);
        base_cfg(&cfg, par.m.L, 3, sb, g_rows = BATCH / 4, &par.tok, 1, tok_in, train ? loss_cb : NULL, out_cb);
        cfg.order = order;
        cfg.npos = 4;
        make_plan(train ? PP_SCHED_GPIPE : PP_SCHED_FORWARD_ONLY, 2, 1, map, ns, 4, 2);
        assert_int_equal(pp_exec_builds(&cfg, &tables[0], 0), 1); /* the embedding lives on rank 0 */
        assert_int_equal(pp_exec_builds(&cfg, &tables[1], 0), 0);
        memset(OUT, 0, sizeof OUT);
        run_ranks(port, 2);
        memcpy(want, OUT, sizeof want);
        cfg.layers = ref.m.L;
        ref_step(&cfg, 4);
        cfg.layers = par.m.L;
        if (!train) {
            assert_memory_equal(want, OUT, sizeof want);
            continue;
        }
        for (k = 0; k < F * F; k++) { /* the embedding's gradient, from both of its positions */
            if (rel(par.emb.ge[k], ref.emb.ge[k]) > d) d = rel(par.emb.ge[k], ref.emb.ge[k]);
            for (i = 1; i < 3; i++)
                if (rel(par.m.b[i].gw[k], ref.m.b[i].gw[k]) > d) d = rel(par.m.b[i].gw[k], ref.m.b[i].gw[k]);
        }
        if (d > worst_tied) worst_tied = d;
        assert_true(d <= 1e-6);
    }
    /* fairscale's test_instantiate_partition model, trained and run forward on 3 ranks */
    assert_int_equal(pp_invocations(rorder, 7, 5, rparts, 3, sb, map, &ns, NULL), 0);
    for (train = 0; train < 2; train++) {
        model_clear(&rpar);
        lcg = 8;
        model_blk(&rpar, 0, F, F, 1, 0); /* R */
        model_blk(&rpar, 1, F, F, 1, 0);
        for (k = 2; k < 5; k++) model_blk(&rpar, k, F, F, 0, 1); /* ReLUs (leaky) */
        rpar.in = f32s(F);
        rref = rpar;
        for (k = 0; k < 5; k++) rref.L[k].self = &rref.b[k], rref.L[k].out = &rref.out[k];
        base_cfg(&cfg, rpar.L, 5, sb, g_rows = BATCH / 4, &rpar.in, 1, in_cb, train ? loss_cb : NULL, out_cb);
        cfg.order = rorder;
        cfg.npos = 7;
        make_plan(train ? PP_SCHED_GPIPE : PP_SCHED_FORWARD_ONLY, 3, 1, map, ns, 4, 3);
        run_ranks(port, 3);
        memcpy(want, OUT, sizeof want);
        cfg.layers = rref.L;
        ref_step(&cfg, 4);
        if (!train)
            assert_memory_equal(want, OUT, sizeof want);
        else
            for (k = 0; k < F * F; k++) { /* R's gradient from its three positions */
                if (rel(rpar.b[0].gw[k], rref.b[0].gw[k]) > worst_tied)
                    worst_tied = rel(rpar.b[0].gw[k], rref.b[0].gw[k]);
                assert_true(rel(rpar.b[0].gw[k], rref.b[0].gw[k]) <= 1e-6);
            }
    }
    print_message("invocations (tied embedding, reused Linear): max relative gradient difference %g\n", worst_tied);
}
static void test_invocations_pthread(void **st)
{
    (void)st;
    invocations(PORT_PTHREAD);
}
static void test_invocations_shm(void **st)
{
    (void)st;
    invocations(PORT_SHM);
}

/* ---- more ranks than stages, per-rank construction: a 4-block chain of 2 stages in a world
   of 4. Ranks 2 and 3 (past the plan's 2 ranks; or inside a plan of 4 ranks, without a stage)
   return at once, send and receive nothing; each layer is built once, by the rank that holds
   it, its parameters in that rank's executor storage only. ---- */
static int build_count[4], build_rank[4];
static model master, built;
/* per-rank construction: the block's weights in the rank's storage, from the master copy */
static int built_init(void *self, void *params)
{
    blk *B = (blk *)self;
    int i = (int)(B - built.b);
    B->w = (float *)params;
    B->b = B->w + B->out * B->in;
    memcpy(B->w, master.b[i].w, sizeof(float) * (size_t)(B->out * B->in));
    memcpy(B->b, master.b[i].b, sizeof(float) * (size_t)B->out);
    __atomic_add_fetch(&build_count[i], 1, __ATOMIC_RELAXED);
    build_rank[i] = this_rank;
    return 0;
}
static void extra_ranks(int port)
{
    static const int32_t b22[2] = {2, 2};
    static const uint8_t map2[2] = {0, 1};
    int c, i, r;
    data_init(F, F);
    nroutes = 0;
    model_clear(&master);
    lcg = 77;
    for (i = 0; i < 4; i++) model_blk(&master, i, F, F, 1, i & 1);
    master.in = f32s(F);
    for (c = 0; c < 2; c++) {
        static model ref;
        static float want[BATCH * F];
        size_t state;
        built = master;
        for (i = 0; i < 4; i++) {
            built.L[i].self = &built.b[i];
            built.L[i].out = &built.out[i];
            built.L[i].init = built_init;
            built.L[i].param_bytes = (uint32_t)(sizeof(float) * (F * F + F));
            built.b[i].w = built.b[i].b = NULL; /* only the builder gives them */
            build_count[i] = 0;
        }
        ref = master;
        for (i = 0; i < 4; i++) ref.L[i].self = &ref.b[i], ref.L[i].out = &ref.out[i];
        make_cfg(&built, b22, 2, BATCH / 4, 0, PP_CKPT_NEVER);
        if (c == 0)
            make_plan(PP_SCHED_FORWARD_ONLY, 2, 1, NULL, 2, 4, 4); /* ranks 2, 3: past the plan */
        else
            make_plan(PP_SCHED_FORWARD_ONLY, 4, 1, map2, 2, 4, 4); /* a plan of 4 ranks, 2 idle */
        assert_int_equal(tables[2].len, 0);
        assert_int_equal(tables[3].len, 0);
        /* the storage counts the rank's own layers' parameters, no other rank's */
        for (r = 0; r < 2; r++) {
            pp_exec_cfg no = cfg;
            pp_layer plain[4];
            memcpy(plain, built.L, sizeof plain);
            for (i = 0; i < 4; i++) plain[i].init = NULL;
            no.layers = plain;
            state = pp_exec_bytes(&no, &tables[r]);
            assert_int_equal(pp_exec_bytes(&cfg, &tables[r]), state + 2 * 8 * ((sizeof(float) * (F * F + F) + 7) / 8));
            assert_int_equal(pp_exec_builds(&cfg, &tables[r], 2 * r), 1);
            assert_int_equal(pp_exec_builds(&cfg, &tables[r], 2 * (1 - r)), 0);
        }
        assert_int_equal(pp_exec_bytes(&cfg, &tables[2]), 0);
        assert_int_equal(pp_exec_builds(&cfg, &tables[3], 0), 0);
        build_layers = 1;
        memset(OUT, 0, sizeof OUT);
        run_ranks(port, 4);
        build_layers = 0;
        for (i = 0; i < 4; i++) {
            assert_int_equal(build_count[i], 1); /* built once, on its rank */
            assert_int_equal(build_rank[i], i / 2);
        }
        for (r = 0; r < 4; r++) { /* the extra ranks take no part */
            assert_int_equal(sent[2][r] + sent[3][r] + recvd[2][r] + recvd[3][r], 0);
            assert_int_equal(sent[r][2] + sent[r][3], 0);
        }
        assert_int_equal(exec_need[2], 0);
        memcpy(want, OUT, sizeof want);
        cfg.layers = ref.L;
        ref_step(&cfg, 4);
        assert_memory_equal(want, OUT, sizeof want);
    }
}
static void test_extra_ranks_pthread(void **st)
{
    (void)st;
    extra_ranks(PORT_PTHREAD);
}
static void test_extra_ranks_shm(void **st)
{
    (void)st;
    extra_ranks(PORT_SHM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skips_train_pthread), cmocka_unit_test(test_skips_train_shm),
        cmocka_unit_test(test_skips_infer_pthread), cmocka_unit_test(test_skips_infer_shm),
        cmocka_unit_test(test_skip_bytes_pthread),  cmocka_unit_test(test_skip_bytes_shm),
        cmocka_unit_test(test_tuples_pthread),      cmocka_unit_test(test_tuples_shm),
        cmocka_unit_test(test_deferred_bn_pthread), cmocka_unit_test(test_deferred_bn_shm),
        cmocka_unit_test(test_invocations_pthread), cmocka_unit_test(test_invocations_shm),
        cmocka_unit_test(test_extra_ranks_pthread), cmocka_unit_test(test_extra_ranks_shm),
    };
    return cmocka_run_group_tests_name("pipeline executor: fairscale's models", tests, NULL, NULL);
}
