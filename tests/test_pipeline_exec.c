/* tests/test_pipeline_exec.c — pipeline.h's executor on real ports (host threads).
   Pipeline-parallel training of a small MLP (8 layers, 4 stages of Linear+ReLU pairs, or 2
   stages of two pairs) for every schedule x checkpoint mode, on pg_pthread and on pg_shm
   (host threads as cores), must give the parameters of plain single-rank training on the
   same microbatches (f32, relative 1e-5). Inference streaming equals a single-rank forward.
   A layer error on one rank makes every rank return that error (and the world is usable
   afterwards). Bad inputs give error codes. No timing assertions.
   A bare-metal board (tests/target/sse200_smp) defines PIPELINE_EXEC_SUITE_CORES (its core
   count) and gives pipeline_run_on_cores() and pipeline_suite_hooks(): its cores are the
   ranks over pg_shm, and the pg_shm cases of the schedules that fit run there. */
#define _DEFAULT_SOURCE 1 /* clock_gettime, syscall (host_threads.h) under -std=c99 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#ifdef PIPELINE_EXEC_SUITE_CORES
#define MAXR PIPELINE_EXEC_SUITE_CORES
/* The board: run rank(core, arg) on every core (core 0 here), each core's return in rcs. */
void pipeline_run_on_cores(int (*rank)(int core, void *arg), void *arg, int *rcs);
void pipeline_suite_hooks(pg_shm_hooks *h);
#else
#define MAXR 4
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "ports/platform/host_threads.h"
#endif

/* ---- the model: Linear(6,8) LeakyReLU Linear(8,8) LeakyReLU Linear(8,8) LeakyReLU
   Linear(8,3) Scale(3): 8 layers, 4 stages of 2 (a weight gradient in every stage). ---- */
#define NL    8
#define ROWS  2
#define NMB   4
#define MAXMB 32 /* the large-M runs (mailboxes smaller than what a rank sends ahead) */
#define BATCH (ROWS * MAXMB)
#define DIN   6
#define DOUT  3
static const int dims[5] = {DIN, 8, 8, 8, DOUT};

/* Weight gradients accumulate in double: schedules run the microbatches' backwards in
   different orders (LoopedBFS and ZBV at M = 32), and float sums of 32 terms in another
   order differ by more than the 1e-5 the comparison allows. */
typedef struct lin {
    int in, out;
    float w[8 * 8], b[8];
    double gw[8 * 8], gb[8];
    int fail_mb;
} lin;
typedef struct model {
    lin lin[4];
    float scale[DOUT];
    double gscale[DOUT];
    pp_layer layers[NL];
} model;

static int lin_fwd_calls; /* Linear forwards (atomic: ranks are threads): recomputation */
static int lin_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    lin *L = (lin *)self;
    const float *xp = (const float *)x->data;
    float *yp = (float *)y->data;
    int r, o, i;
    __atomic_add_fetch(&lin_fwd_calls, 1, __ATOMIC_RELAXED);
    if (x->shape[1] != L->in || y->shape[1] != L->out || x->shape[0] != y->shape[0]) return -900;
    for (r = 0; r < x->shape[0]; r++)
        for (o = 0; o < L->out; o++) {
            float s = L->b[o];
            for (i = 0; i < L->in; i++) s += L->w[o * L->in + i] * xp[r * L->in + i];
            yp[r * L->out + o] = s;
        }
    return 0;
}
static int lin_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    lin *L = (lin *)self;
    const float *g = (const float *)dy->data;
    float *d = (float *)dx->data;
    int r, o, i;
    (void)x;
    for (r = 0; r < dy->shape[0]; r++)
        for (i = 0; i < L->in; i++) {
            float s = 0;
            for (o = 0; o < L->out; o++) s += g[r * L->out + o] * L->w[o * L->in + i];
            d[r * L->in + i] = s;
        }
    return 0;
}
static int lin_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    lin *L = (lin *)self;
    const float *g = (const float *)dy->data, *xp = (const float *)x->data;
    int r, o, i;
    for (r = 0; r < dy->shape[0]; r++)
        for (o = 0; o < L->out; o++) {
            L->gb[o] += g[r * L->out + o];
            for (i = 0; i < L->in; i++) L->gw[o * L->in + i] += g[r * L->out + o] * xp[r * L->in + i];
        }
    return 0;
}
static int relu_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    int n = x->shape[0] * x->shape[1], i;
    const float *a = (const float *)x->data;
    float *b = (float *)y->data;
    lin *L = (lin *)self; /* the Linear before it: error injection */
    if (L->fail_mb >= 0 && L->fail_mb-- == 0) return -77;
    for (i = 0; i < n; i++) b[i] = a[i] > 0 ? a[i] : 0.1f * a[i]; /* leaky: no dead units */
    return 0;
}
static int relu_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    int n = x->shape[0] * x->shape[1], i;
    const float *a = (const float *)x->data, *g = (const float *)dy->data;
    float *d = (float *)dx->data;
    (void)self;
    for (i = 0; i < n; i++) d[i] = a[i] > 0 ? g[i] : 0.1f * g[i];
    return 0;
}
static model *scale_owner(void *self)
{
    return (model *)self;
}
static int scale_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    model *m = scale_owner(self);
    int r, o;
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < DOUT; o++)
            ((float *)y->data)[r * DOUT + o] = m->scale[o] * ((const float *)x->data)[r * DOUT + o];
    return 0;
}
static int scale_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    model *m = scale_owner(self);
    int r, o;
    (void)x;
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < DOUT; o++)
            ((float *)dx->data)[r * DOUT + o] = m->scale[o] * ((const float *)dy->data)[r * DOUT + o];
    return 0;
}
static int scale_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    model *m = scale_owner(self);
    int r, o;
    for (r = 0; r < ROWS; r++)
        for (o = 0; o < DOUT; o++)
            m->gscale[o] += ((const float *)dy->data)[r * DOUT + o] * ((const float *)x->data)[r * DOUT + o];
    return 0;
}

static uint32_t lcg = 1;
static float frand(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return (float)((lcg >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static void model_init(model *m)
{
    int k, i;
    memset(m, 0, sizeof *m);
    lcg = 12345;
    for (k = 0; k < 4; k++) {
        lin *L = &m->lin[k];
        L->in = dims[k];
        L->out = dims[k + 1];
        L->fail_mb = -1;
        for (i = 0; i < L->in * L->out; i++) L->w[i] = frand();
        for (i = 0; i < L->out; i++) L->b[i] = 0.1f * frand();
    }
    for (i = 0; i < DOUT; i++) m->scale[i] = 1.0f + 0.2f * frand();
    for (k = 0; k < 4; k++) {
        pp_layer *a = &m->layers[2 * k], *b = &m->layers[2 * k + 1];
        a->forward = lin_fwd;
        a->backward_input = lin_bi;
        a->backward_weight = lin_bw;
        a->self = &m->lin[k];
        a->act_bytes = (uint32_t)(ROWS * dims[k + 1] * 4);
        if (k < 3) {
            b->forward = relu_fwd;
            b->backward_input = relu_bi;
            b->self = &m->lin[k];
            b->act_bytes = a->act_bytes;
        } else {
            b->forward = scale_fwd;
            b->backward_input = scale_bi;
            b->backward_weight = scale_bw;
            b->self = m;
            b->act_bytes = a->act_bytes;
        }
    }
}
static void model_zero_grad(model *m)
{
    int k;
    for (k = 0; k < 4; k++) {
        memset(m->lin[k].gw, 0, sizeof m->lin[k].gw);
        memset(m->lin[k].gb, 0, sizeof m->lin[k].gb);
    }
    memset(m->gscale, 0, sizeof m->gscale);
}
static void model_sgd(model *m, float lr)
{
    int k, i;
    for (k = 0; k < 4; k++) {
        for (i = 0; i < 64; i++) m->lin[k].w[i] -= lr * (float)m->lin[k].gw[i];
        for (i = 0; i < 8; i++) m->lin[k].b[i] -= lr * (float)m->lin[k].gb[i];
    }
    for (i = 0; i < DOUT; i++) m->scale[i] -= lr * (float)m->gscale[i];
}
static void assert_models_close(const model *a, const model *b)
{
    int k, i;
    double worst = 0;
    for (k = 0; k < 4; k++)
        for (i = 0; i < 64 + 8; i++) {
            double x = i < 64 ? a->lin[k].w[i] : a->lin[k].b[i - 64];
            double y = i < 64 ? b->lin[k].w[i] : b->lin[k].b[i - 64];
            double d = fabs(x - y) / (fabs(y) > 1e-3 ? fabs(y) : 1e-3);
            if (d > worst) worst = d;
        }
    for (i = 0; i < DOUT; i++) {
        double d = fabs(a->scale[i] - b->scale[i]) / fabs(b->scale[i]);
        if (d > worst) worst = d;
    }
    if (worst > 1e-5) print_error("max relative difference %g\n", worst);
    assert_true(worst <= 1e-5);
}

/* data: one batch per step */
static float X[2][BATCH][DIN], T[2][BATCH][DOUT];
static void data_init(void)
{
    int s, r, i;
    lcg = 777;
    for (s = 0; s < 2; s++)
        for (r = 0; r < BATCH; r++) {
            for (i = 0; i < DIN; i++) X[s][r][i] = 2 * frand();
            for (i = 0; i < DOUT; i++) T[s][r][i] = frand();
        }
}

typedef struct job {
    int step;
    double loss;
    float out[BATCH][DOUT];
} job;
static int in_cb(void *user, int mb, mb_tensor *x)
{
    job *j = (job *)user;
    memcpy(x->data, X[j->step][mb * ROWS], sizeof(float) * ROWS * DIN);
    return 0;
}
static int loss_cb(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    job *j = (job *)user;
    const float *yp = (const float *)y->data;
    float *g = (float *)dy->data;
    const float *t = &T[j->step][mb * ROWS][0]; /* ROWS rows, contiguous */
    double l = 0;
    int i;
    for (i = 0; i < ROWS * DOUT; i++) {
        float d = yp[i] - t[i];
        g[i] = d;
        l += 0.5 * (double)d * d;
    }
    *loss = l;
    return 0;
}
static int out_cb(void *user, int mb, const mb_tensor *y)
{
    job *j = (job *)user;
    memcpy(j->out[mb * ROWS], y->data, sizeof(float) * ROWS * DOUT);
    return 0;
}

/* Reference: plain single-rank training, microbatch after microbatch. */
static double reference_step(model *m, int step, int nmb)
{
    float act[NL + 1][ROWS * 8], grad[NL + 1][ROWS * 8];
    double total = 0;
    int mb, l;
    job j;
    memset(&j, 0, sizeof j);
    j.step = step;
    for (mb = 0; mb < nmb; mb++) {
        mb_tensor t[NL + 1], g[NL + 1];
        int32_t sh[2];
        double lo;
        for (l = 0; l <= NL; l++) {
            sh[0] = ROWS;
            sh[1] = l == 0 ? DIN : (int32_t)(m->layers[l - 1].act_bytes / 4 / ROWS);
            mb_tensor_init(&t[l], act[l], MB_F32, 2, sh);
            mb_tensor_init(&g[l], grad[l], MB_F32, 2, sh);
        }
        in_cb(&j, mb, &t[0]);
        for (l = 0; l < NL; l++) assert_int_equal(m->layers[l].forward(m->layers[l].self, &t[l], &t[l + 1]), 0);
        loss_cb(&j, mb, &t[NL], &g[NL], &lo);
        total += lo;
        for (l = NL - 1; l >= 0; l--) {
            if (l > 0) m->layers[l].backward_input(m->layers[l].self, &t[l], &g[l + 1], &g[l]);
            if (m->layers[l].backward_weight) m->layers[l].backward_weight(m->layers[l].self, &t[l], &g[l + 1]);
        }
    }
    return total;
}

/* ---- one parallel run: a lowered plan, a config, a port ---- */
enum { PORT_PTHREAD = 0, PORT_SHM = 1 };
static pp_action plan_store[2][4096];
static pp_plan sched, plan;
static pp_table tables[MAXR];
static pp_exec_cfg cfg;
static int32_t balance[4] = {2, 2, 2, 2}, balance2[2] = {4, 4}; /* 4 stages or 2 */
static uint64_t exec_mem[MAXR][8192];
static double rank_loss[MAXR];
static int rank_has_loss[MAXR];
static job the_job;

static int rank_body(pg_group *g, void *arg)
{
    pp_exec e;
    int r = pg_rank(g), rc;
    (void)arg;
    rank_has_loss[r] = 0;
    pg_set_timeout(g, 3000);
    rc = pp_exec_init(&e, &cfg, &tables[r], g, exec_mem[r], sizeof exec_mem[r]);
    if (rc) return rc;
    rc = pp_exec_run(&e);
    if (rc == 0 && e.losses) {
        mb_spec s = MB_REDUCE(MB_RED_SUM);
        if ((rc = pp_exec_loss(&e, &s, &rank_loss[r])) == 0) rank_has_loss[r] = 1;
    }
    return rc;
}

#ifndef PIPELINE_EXEC_SUITE_CORES
static pg_pthread_world world;
#endif
#ifndef SHM_SLOTS
#define SHM_SLOTS 8 /* tests/test_pipeline_notakein.c: 4 */
#endif
#define SHM_PAYLOAD 32 /* < an activation (2 rows x 8 f32 = 64 B): messages go in pieces */
#define SHM_REGION  PG_SHM_REGION_BYTES(MAXR, SHM_SLOTS, SHM_PAYLOAD)
static uint32_t shm_region[SHM_REGION / 4 + 16] __attribute__((aligned(64)));
static pg_shm shm[MAXR];
static int shm_rc[MAXR];

/* Rank r over pg_shm: attach, run the plan's row. */
#ifndef PIPELINE_EXEC_SUITE_CORES
static pg_shm_host_bells bells;
#endif
static int shm_rank(int r, void *arg)
{
    pg_shm_hooks h;
    int rc;
    (void)arg;
#ifdef PIPELINE_EXEC_SUITE_CORES
    pipeline_suite_hooks(&h);
#else
    pg_shm_host_hooks(&h, &bells);
#endif
    rc = pg_shm_init(&shm[r], shm_region, SHM_REGION, r, &h);
    return rc < 0 ? rc : rank_body(pg_shm_group(&shm[r]), NULL);
}

#ifndef PIPELINE_EXEC_SUITE_CORES
static void *shm_thread(void *arg)
{
    int r = (int)(intptr_t)arg;
    shm_rc[r] = shm_rank(r, NULL);
    return NULL;
}
#endif

/* Runs the plan on `port`; returns every rank's code in rcs. */
static void run_ranks(int port, int n, int *rcs)
{
    int r;
    if (port == PORT_SHM) {
        memset(shm_region, 0, sizeof shm_region);
        assert_int_equal(pg_shm_format(shm_region, SHM_REGION, n, SHM_SLOTS, SHM_PAYLOAD), 0);
#ifdef PIPELINE_EXEC_SUITE_CORES
        assert_int_equal(n, MAXR); /* every core is a rank */
        pipeline_run_on_cores(shm_rank, NULL, shm_rc);
#else
        {
            pthread_t t[MAXR];
            for (r = 0; r < n; r++) pthread_create(&t[r], NULL, shm_thread, (void *)(intptr_t)r);
            for (r = 0; r < n; r++) pthread_join(t[r], NULL);
        }
#endif
        for (r = 0; r < n; r++) rcs[r] = shm_rc[r];
    } else {
#ifndef PIPELINE_EXEC_SUITE_CORES
        assert_int_equal(pg_pthread_world_init(&world, n), 0);
        pg_pthread_run(&world, n, rank_body, NULL);
        for (r = 0; r < n; r++) rcs[r] = world.rc[r];
#endif
    }
}

static void (*after_lower)(void); /* test_pipeline_notakein.c: prove the plan */
static void build_plan(int kind, int P, int V, int nmb)
{
    int r;
    assert_int_equal(pp_schedule_build(&sched, kind, P, V, nmb, plan_store[0], sizeof plan_store[0], NULL), 0);
    assert_int_equal(pp_validate(&sched, NULL), 0);
    assert_int_equal(pp_lower(&sched, &plan, plan_store[1], sizeof plan_store[1], NULL), 0);
    if (after_lower) after_lower();
    for (r = 0; r < P; r++) assert_int_equal(pp_plan_table(&plan, r, &tables[r]), 0);
}

static void cfg_init(model *m, int train, int ckpt)
{
    memset(&cfg, 0, sizeof cfg);
    cfg.layers = m->layers;
    cfg.nlayers = NL;
    cfg.balance = plan.nstages == 2 ? balance2 : balance;
    cfg.rows = ROWS;
    cfg.dtype = MB_F32;
    cfg.in_bytes = ROWS * DIN * 4;
    cfg.checkpoint = ckpt;
    cfg.input = in_cb;
    cfg.user = &the_job;
    if (train)
        cfg.loss = loss_cb;
    else
        cfg.output = out_cb;
}

static const struct {
    int kind, P, V;
} SCHEDS[] = {
    {PP_SCHED_GPIPE, 4, 1},      {PP_SCHED_1F1B, 4, 1},           {PP_SCHED_INTERLEAVED_1F1B, 2, 2},
    {PP_SCHED_LOOPED_BFS, 2, 2}, {PP_SCHED_INTERLEAVED_ZB, 2, 2}, {PP_SCHED_ZBV, 2, 2},
    {PP_SCHED_GPIPE, 2, 1},      {PP_SCHED_1F1B, 2, 1}, /* 2 stages of 4 layers */
};

/* Trains 2 steps of schedule si with nmb microbatches and checkpoint mode ck on `port`
   and compares loss and parameters with single-rank training. */
static void train_one(int port, int kind, int P, int V, int nmb, int ck)
{
    static model par, ref;
    int step, r, rcs[MAXR];
    model_init(&par);
    model_init(&ref);
    build_plan(kind, P, V, nmb);
    cfg_init(&par, 1, ck);
    for (step = 0; step < 2; step++) {
        double want, got = 0;
        int have = 0;
        model_zero_grad(&par);
        model_zero_grad(&ref);
        the_job.step = step;
        lin_fwd_calls = 0;
        run_ranks(port, P, rcs);
        /* each stage is Linear + activation: F runs its Linear once per microbatch,
           and I/B runs it again for checkpointed ones (microbatch i < stop) */
        for (r = 0; r < P; r++) {
            if (rcs[r]) print_error("%s M=%d ckpt %d rank %d: %d\n", pp_schedule_name(kind), nmb, ck, r, rcs[r]);
            assert_int_equal(rcs[r], 0);
            if (rank_has_loss[r]) {
                got = rank_loss[r];
                have++;
            }
        }
        assert_int_equal(lin_fwd_calls, 4 * (nmb + pp_checkpoint_stop(ck, nmb)));
        assert_int_equal(have, 1);
        want = reference_step(&ref, step, nmb);
        assert_true(fabs(got - want) <= 1e-5 * fabs(want));
        model_sgd(&par, 0.05f);
        model_sgd(&ref, 0.05f);
    }
    assert_models_close(&par, &ref);
}

static void train_equal(int port)
{
    int si, ck;
    data_init();
    for (si = 0; si < (int)(sizeof SCHEDS / sizeof SCHEDS[0]); si++)
        for (ck = PP_CKPT_ALWAYS; ck <= PP_CKPT_NEVER && SCHEDS[si].P <= MAXR; ck++)
            train_one(port, SCHEDS[si].kind, SCHEDS[si].P, SCHEDS[si].V, NMB, ck);
}
#ifndef PIPELINE_EXEC_SUITE_CORES
static void test_train_pthread(void **st)
{
    (void)st;
    train_equal(PORT_PTHREAD);
}
#endif
static void test_train_shm(void **st)
{
    (void)st;
    train_equal(PORT_SHM);
}

/* Inference streaming: nmb frames through MAXR stages (forward-only), equal to a plain
   forward. */
static void infer_equal(int port, int nmb)
{
    static model m;
    static float want[BATCH][DOUT];
    int r, rcs[MAXR], mb, l;
    data_init();
    model_init(&m);
    build_plan(PP_SCHED_FORWARD_ONLY, MAXR, 1, nmb);
    cfg_init(&m, 0, PP_CKPT_NEVER);
    the_job.step = 1;
    memset(the_job.out, 0, sizeof the_job.out);
    run_ranks(port, MAXR, rcs);
    for (r = 0; r < MAXR; r++) assert_int_equal(rcs[r], 0);
    for (mb = 0; mb < nmb; mb++) {
        float a[2][ROWS * 8];
        mb_tensor t[2];
        int32_t sh[2] = {ROWS, DIN};
        mb_tensor_init(&t[0], a[0], MB_F32, 2, sh);
        in_cb(&the_job, mb, &t[0]);
        for (l = 0; l < NL; l++) {
            sh[1] = (int32_t)(m.layers[l].act_bytes / 4 / ROWS);
            mb_tensor_init(&t[(l + 1) & 1], a[(l + 1) & 1], MB_F32, 2, sh);
            assert_int_equal(m.layers[l].forward(m.layers[l].self, &t[l & 1], &t[(l + 1) & 1]), 0);
        }
        memcpy(want[mb * ROWS], a[NL & 1], sizeof(float) * ROWS * DOUT);
    }
    assert_memory_equal(want, the_job.out, sizeof(float) * ROWS * DOUT * (size_t)nmb);
}
#ifndef PIPELINE_EXEC_SUITE_CORES
static void test_infer_pthread(void **st)
{
    (void)st;
    infer_equal(PORT_PTHREAD, NMB);
    infer_equal(PORT_PTHREAD, MAXMB);
}
#endif
static void test_infer_shm(void **st)
{
    (void)st;
    infer_equal(PORT_SHM, NMB);
    infer_equal(PORT_SHM, MAXMB);
}

/* More microbatches than the ports' mailboxes hold (pg_pthread: PG_PTHREAD_SLOTS = 4
   messages per pair; the pg_shm region here: 8 slots = 4 activations): a rank sends
   further ahead of its peer's receives than a mailbox holds, and two ranks can each wait
   to send to the other (LoopedBFS on 2 ranks sends all 16 forward activations each way).
   pp_simulate accepts these plans (sends buffered), so the executor must run them: a rank
   waiting to send or receive takes in what already arrived for its later RECVs. */
static const struct {
    int kind, P, V, nmb;
} LARGE[] = {
    {PP_SCHED_LOOPED_BFS, 2, 2, 16},
    {PP_SCHED_LOOPED_BFS, 2, 2, 32},
    {PP_SCHED_ZBV, 2, 2, 16},
    {PP_SCHED_ZBV, 2, 2, 32},
    {PP_SCHED_INTERLEAVED_1F1B, 2, 2, 16},
    {PP_SCHED_INTERLEAVED_ZB, 2, 2, 32},
    {PP_SCHED_GPIPE, 4, 1, 16},
    {PP_SCHED_1F1B, 4, 1, 32},
    {PP_SCHED_LOOPED_BFS, 4, 1, 16},
};
static void train_large(int port)
{
    int i;
    data_init();
    for (i = 0; i < (int)(sizeof LARGE / sizeof LARGE[0]); i++)
        if (LARGE[i].P <= MAXR)
            train_one(port, LARGE[i].kind, LARGE[i].P, LARGE[i].V, LARGE[i].nmb,
                      i & 1 ? PP_CKPT_EXCEPT_LAST : PP_CKPT_NEVER);
}
#ifndef PIPELINE_EXEC_SUITE_CORES
static void test_train_large_m_pthread(void **st)
{
    (void)st;
    train_large(PORT_PTHREAD);
}
#endif
static void test_train_large_m_shm(void **st)
{
    (void)st;
    train_large(PORT_SHM);
}

/* A layer error on one rank: every rank returns it; the next step works again. */
static void error_everywhere(int port, int kind, int P, int V, int layer_pair)
{
    static model m;
    int r, rcs[MAXR];
    data_init();
    model_init(&m);
    build_plan(kind, P, V, NMB);
    cfg_init(&m, 1, PP_CKPT_NEVER);
    m.lin[layer_pair].fail_mb = 1; /* its ReLU fails on the second call */
    run_ranks(port, P, rcs);
    for (r = 0; r < P; r++) assert_int_equal(rcs[r], -77);
    m.lin[layer_pair].fail_mb = -1;
    run_ranks(port, P, rcs);
    for (r = 0; r < P; r++) assert_int_equal(rcs[r], 0);
}
static void test_error_aborts(void **st)
{
    (void)st;
#ifndef PIPELINE_EXEC_SUITE_CORES
    error_everywhere(PORT_PTHREAD, PP_SCHED_1F1B, 4, 1, 2);
    error_everywhere(PORT_PTHREAD, PP_SCHED_1F1B, 4, 1, 0);
    error_everywhere(PORT_PTHREAD, PP_SCHED_ZBV, 2, 2, 3 - 1);
#endif
    error_everywhere(PORT_SHM, PP_SCHED_GPIPE, MAXR, 1, 1);
    error_everywhere(PORT_SHM, PP_SCHED_ZBV, 2, 2, 3 - 1);
}

/* Bad inputs: codes, and nothing run. */
#ifndef PIPELINE_EXEC_SUITE_CORES
static void test_bad_inputs(void **st)
{
    static model m;
    pp_exec e;
    pg_group *g;
    int32_t bad_balance[4] = {2, 2, 2, 3}, zero_balance[4] = {2, 0, 4, 2};
    (void)st;
    model_init(&m);
    build_plan(PP_SCHED_1F1B, 4, 1, NMB);
    cfg_init(&m, 1, PP_CKPT_NEVER);
    assert_int_equal(pg_pthread_world_init(&world, 4), 0);
    g = pg_pthread_group(&world, 0);
    assert_true(pp_exec_bytes(&cfg, &tables[0]) > 0);
    assert_int_equal(pp_exec_bytes(NULL, &tables[0]), 0);
    assert_int_equal(pp_exec_init(NULL, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_NULL);
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], NULL, exec_mem[0], sizeof exec_mem[0]), PP_ERR_NULL);
    assert_int_equal(pp_exec_init(&e, NULL, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_NULL);
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], pp_exec_bytes(&cfg, &tables[0]) - 1),
                     PP_ERR_TOO_SMALL);
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, (char *)exec_mem[0] + 4, sizeof exec_mem[0] - 8),
                     PP_ERR_ARG);
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[1], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_RANKS);
    cfg.balance = bad_balance;
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_BALANCE_SUM);
    cfg.balance = zero_balance;
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]),
                     PP_ERR_BALANCE_NONPOSITIVE);
    cfg.balance = balance;
    cfg.checkpoint = 3;
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_CHECKPOINT);
    cfg.checkpoint = PP_CKPT_NEVER;
    cfg.rows = 0;
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_ARG);
    cfg.rows = 3; /* act_bytes not a whole number of rows */
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_ARG);
    cfg.rows = ROWS;
    cfg.input = NULL;
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_NULL);
    cfg.input = in_cb;
    m.layers[3].backward_input = NULL; /* training needs input gradients past layer 0 */
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_NULL);
    m.layers[3].backward_input = relu_bi;
    { /* a training table in inference mode; a stage of another rank */
        pp_table t = tables[0];
        cfg.loss = NULL;
        cfg.output = out_cb;
        assert_int_equal(pp_exec_init(&e, &cfg, &t, g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_BACKWARD_COUNT);
        cfg.loss = loss_cb;
        t.stage_rank = tables[0].stage_rank + 1;
        assert_int_equal(pp_exec_init(&e, &cfg, &t, g, exec_mem[0], sizeof exec_mem[0]), PP_ERR_STAGE_RANK);
    }
    assert_int_equal(pp_exec_init(&e, &cfg, &tables[0], g, exec_mem[0], sizeof exec_mem[0]), 0);
    assert_null(e.losses);
    {
        double l;
        assert_int_equal(pp_exec_loss(&e, NULL, &l), PP_ERR_ARG);
        assert_int_equal(pp_exec_loss(NULL, NULL, &l), PP_ERR_NULL);
    }
    assert_int_equal(pp_exec_run(NULL), PP_ERR_NULL);
}
#endif

#ifndef PIPELINE_EXEC_TEST_NO_MAIN /* tests/test_pipeline_notakein.c reuses the above */
int main(void)
{
#ifdef PIPELINE_EXEC_SUITE_CORES /* the board's cores over pg_shm */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_shm),
        cmocka_unit_test(test_infer_shm),
        cmocka_unit_test(test_train_large_m_shm),
        cmocka_unit_test(test_error_aborts),
    };
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_pthread),         cmocka_unit_test(test_train_shm),
        cmocka_unit_test(test_infer_pthread),         cmocka_unit_test(test_infer_shm),
        cmocka_unit_test(test_train_large_m_pthread), cmocka_unit_test(test_train_large_m_shm),
        cmocka_unit_test(test_error_aborts),          cmocka_unit_test(test_bad_inputs),
    };
#endif
    return cmocka_run_group_tests_name("pipeline executor", tests, NULL, NULL);
}
#endif
