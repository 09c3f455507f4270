/* tests/test_pipeline_exec.c — pipeline.h's executor on real ports (host threads).
   Pipeline-parallel training of a small MLP (8 layers, 4 stages of Linear+ReLU pairs, or 2 stages of two pairs) for
   every schedule x checkpoint mode, on pg_pthread and on pg_shm (host threads as cores),
   must give the parameters of plain single-rank training on the same microbatches
   (f32, relative 1e-5). Inference streaming equals a single-rank forward, also for a
   hand-written uneven plan (3 stages on 2 ranks) that pp_validate accepts. A layer error on
   one rank makes every rank return PP_ERR_LAYER with that layer's code and rank (errors on
   two ranks: the lower rank's, on every rank), and the world is usable afterwards. Storage
   queries are exact (inference slots hold no gradients). Bad inputs give error codes. No
   timing assertions. A bare-metal board (tests/target/sse200_smp) defines
   PIPELINE_EXEC_SUITE_CORES (its core count) and gives pipeline_run_on_cores() and
   pipeline_suite_hooks(): its cores are the ranks over pg_shm, and the pg_shm cases of the
   schedules that fit run there. */
#define _DEFAULT_SOURCE 1 /* clock_gettime, syscall (host_threads.h) under -std=c99 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <sched.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#ifdef PIPELINE_EXEC_SUITE_CORES
#define YIELD() ((void)0) /* only two_errors (host) waits on another rank's failure */
#define MAXR    PIPELINE_EXEC_SUITE_CORES
/* The board: run rank(core, arg) on every core (core 0 here), each core's return in rcs. */
void pipeline_run_on_cores(int (*rank)(int core, void *arg), void *arg, int *rcs);
void pipeline_suite_hooks(pg_shm_hooks *h);
#else
#define YIELD() sched_yield()
#define MAXR    4
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
    int fail_mb, fail_rc; /* the ReLU after it fails on call fail_mb with fail_rc, */
    int *fail_after;      /* if set, only once *fail_after is non-zero; */
    int *failed;          /* if set, it sets *failed then */
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
    if (L->fail_mb >= 0 && L->fail_mb-- == 0) {
        while (L->fail_after && !__atomic_load_n(L->fail_after, __ATOMIC_ACQUIRE)) YIELD();
        if (L->failed) __atomic_store_n(L->failed, 1, __ATOMIC_RELEASE);
        return L->fail_rc;
    }
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
        L->fail_rc = -77;
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
static int rank_has_loss[MAXR], rank_err[MAXR], rank_err_rank[MAXR];
static job the_job;

static int rank_body(pg_group *g, void *arg)
{
    pp_exec e;
    int r = pg_rank(g), rc;
    (void)arg;
    if (r < 0) return r; /* a bad group: pg_rank's error */
    rank_has_loss[r] = 0;
    pg_set_timeout(g, 3000);
    rc = pp_exec_init(&e, &cfg, &tables[r], g, exec_mem[r], sizeof exec_mem[r]);
    if (rc) return rc;
    rc = pp_exec_run(&e);
    rank_err[r] = e.err;
    rank_err_rank[r] = e.err_rank;
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

/* Trains 2 steps of the plan in `tables` (P ranks, nmb microbatches, name for messages) with
   checkpoint mode ck on `port` and compares loss and parameters with single-rank training. */
static void train_plan(int port, const char *name, int P, int nmb, int ck)
{
    static model par, ref;
    int step, r, rcs[MAXR];
    model_init(&par);
    model_init(&ref);
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
            if (rcs[r]) print_error("%s M=%d ckpt %d rank %d: %d\n", name, nmb, ck, r, rcs[r]);
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

/* The same for schedule `kind` as pp_schedule_build and pp_lower make it. */
static void train_one(int port, int kind, int P, int V, int nmb, int ck)
{
    build_plan(kind, P, V, nmb);
    train_plan(port, pp_schedule_name(kind), P, nmb, ck);
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

/* The single-rank forward of nmb microbatches: their outputs into want. */
static void forward_reference(model *m, int nmb, float want[][DOUT])
{
    int mb, l;
    for (mb = 0; mb < nmb; mb++) {
        float a[2][ROWS * 8];
        mb_tensor t[2];
        int32_t sh[2] = {ROWS, DIN};
        mb_tensor_init(&t[0], a[0], MB_F32, 2, sh);
        in_cb(&the_job, mb, &t[0]);
        for (l = 0; l < NL; l++) {
            sh[1] = (int32_t)(m->layers[l].act_bytes / 4 / ROWS);
            mb_tensor_init(&t[(l + 1) & 1], a[(l + 1) & 1], MB_F32, 2, sh);
            assert_int_equal(m->layers[l].forward(m->layers[l].self, &t[l & 1], &t[(l + 1) & 1]), 0);
        }
        memcpy(want[mb * ROWS], a[NL & 1], sizeof(float) * ROWS * DOUT);
    }
}

/* Inference streaming: 6 frames through 4 stages (forward-only), equal to a plain forward. */
static void infer_equal(int port, int nmb)
{
    static model m;
    static float want[BATCH][DOUT];
    int r, rcs[MAXR];
    data_init();
    model_init(&m);
    build_plan(PP_SCHED_FORWARD_ONLY, MAXR, 1, nmb);
    cfg_init(&m, 0, PP_CKPT_NEVER);
    the_job.step = 1;
    memset(the_job.out, 0, sizeof the_job.out);
    run_ranks(port, MAXR, rcs);
    for (r = 0; r < MAXR; r++) assert_int_equal(rcs[r], 0);
    forward_reference(&m, nmb, want);
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

#ifndef PIPELINE_EXEC_SUITE_CORES
/* CSVs as PyTorch's _dump_csv writes them (torch/distributed/pipelining/schedules.py at
   pytorch/pytorch@00722e648b740f91d0e71494baa17891749fd291: pipeline_order, compute only with
   idle cells, and pipeline_order_with_comms, lowered with UNSHARD / RESHARD / REDUCE_GRAD;
   tests/torch/schedules_pytorch.jsonl.xz holds them all) load with pp_csv_read and train
   like one rank: a compute table lowered here as PyTorch lowers it (PP_LOWER_TORCH), a
   lowered one run as it is (the executor skips UNSHARD, RESHARD and REDUCE_GRAD). */
static const struct {
    const char *name;
    int P, V, lowered;
    const char *csv;
} TORCH_CSV[] = {
    {"Interleaved1F1B compute", 2, 2, 0,
     "0F0,0F1,2F0,2F1,,,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,,2B2,,2B3,,0B2,,0B3\r\n"
     ",1F0,1F1,,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,,1B2,,1B3\r\n"},
    {"Interleaved1F1B lowered", 2, 2, 1,
     "0UNSHARD,2UNSHARD,0F0,0SEND_F0,2RECV_F0,0F1,0SEND_F1,2RECV_F1,2F0,2SEND_F0,2F1,2SEND_F1,2RECV_B0,0F2,0SEND_F2,"
     "2B0,2SEND_B0,2RECV_B1,0F3,0SEND_F3,2RECV_F2,2B1,2SEND_B1,0RECV_B0,2F2,2SEND_F2,2RECV_F3,0B0,0RECV_B1,2F3,2SEND_"
     "F3,0B1,2RECV_B2,2B2,2SEND_B2,2RECV_B3,2B3,2SEND_B3,2REDUCE_GRAD,2RESHARD,0RECV_B2,0B2,0RECV_B3,0B3,0REDUCE_GRAD,"
     "0RESHARD\r\n"
     "1UNSHARD,3UNSHARD,1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,3RECV_F0,3F0,3RECV_F1,3B0,3SEND_B0,1RECV_F2,3F1,"
     "1RECV_B0,3B1,3SEND_B1,1RECV_F3,1F2,1SEND_F2,1RECV_B1,1B0,1SEND_B0,3RECV_F2,1F3,1SEND_F3,1B1,1SEND_B1,3RECV_F3,"
     "3F2,3B2,3SEND_B2,1RECV_B2,3F3,3B3,3SEND_B3,1RECV_B3,3REDUCE_GRAD,3RESHARD,1B2,1SEND_B2,1B3,1SEND_B3,1REDUCE_GRAD,"
     "1RESHARD\r\n"},
    {"InterleavedZeroBubble compute", 2, 2, 0,
     "0F0,0F1,2F0,,2F1,2I0,2W0,0F2,2I1,2W1,0F3,0I0,0W0,2F2,0I1,0W1,2F3,2I2,2W2,2I3,2W3,0I2,0W2,0I3,0W3\r\n"
     ",1F0,1F1,3F0,3I0,3F1,3I1,3W0,1F2,1I0,3W1,1F3,1I1,1W0,3F2,3I2,1W1,3F3,3I3,3W2,1I2,3W3,1I3,1W2,1W3\r\n"},
    {"ZBVZeroBubble lowered", 2, 2, 1,
     "0UNSHARD,3UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,3RECV_F0,0F2,0SEND_F2,3F0,3RECV_F1,3I0,3SEND_B0,3W0,3F1,3I1,3SEND_B1,"
     "0RECV_B0,3W1,0F3,0SEND_F3,3RECV_F2,0I0,0W0,3F2,3I2,3SEND_B2,0RECV_B1,3W2,0I1,3RECV_F3,0W1,3F3,3I3,3SEND_B3,0RECV_"
     "B2,3W3,3REDUCE_GRAD,0RECV_B3,3RESHARD,0I2,0W2,0I3,0W3,0REDUCE_GRAD,0RESHARD\r\n"
     "1UNSHARD,2UNSHARD,1RECV_F0,1F0,1RECV_F1,2F0,2SEND_F0,1RECV_F2,1F1,2F1,2SEND_F1,2RECV_B0,2I0,2W0,1F2,2RECV_B1,1I0,"
     "1SEND_B0,1W0,1RECV_F3,2F2,2SEND_F2,2I1,2W1,1F3,2RECV_B2,1I1,1SEND_B1,1W1,2F3,2SEND_F3,2I2,2W2,2RECV_B3,1I2,1SEND_"
     "B2,2I3,1I3,1SEND_B3,1W2,2W3,2REDUCE_GRAD,2RESHARD,1W3,1REDUCE_GRAD,1RESHARD\r\n"},
    {"LoopedBFS lowered", 2, 2, 1,
     "0UNSHARD,2UNSHARD,0F0,0SEND_F0,2RECV_F0,0F1,0SEND_F1,2RECV_F1,0F2,0SEND_F2,2RECV_F2,0F3,0SEND_F3,2RECV_F3,2F0,"
     "2SEND_F0,2F1,2SEND_F1,2F2,2SEND_F2,2F3,2SEND_F3,2RECV_B3,2B3,2SEND_B3,2RECV_B2,2B2,2SEND_B2,2RECV_B1,2B1,2SEND_"
     "B1,2RECV_B0,2B0,2SEND_B0,2REDUCE_GRAD,2RESHARD,0RECV_B3,0B3,0RECV_B2,0B2,0RECV_B1,0B1,0RECV_B0,0B0,0REDUCE_GRAD,"
     "0RESHARD\r\n"
     "1UNSHARD,3UNSHARD,1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1RECV_F2,1F2,1SEND_F2,1RECV_F3,1F3,1SEND_F3,3RECV_"
     "F0,3F0,3RECV_F1,3F1,3RECV_F2,3F2,3RECV_F3,3F3,3B3,3SEND_B3,1RECV_B3,3B2,3SEND_B2,1RECV_B2,3B1,3SEND_B1,1RECV_B1,"
     "3B0,3SEND_B0,1RECV_B0,3REDUCE_GRAD,3RESHARD,1B3,1SEND_B3,1B2,1SEND_B2,1B1,1SEND_B1,1B0,1SEND_B0,1REDUCE_GRAD,"
     "1RESHARD\r\n"},
    {"GPipe lowered", 4, 1, 1,
     "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0F2,0SEND_F2,0F3,0SEND_F3,0RECV_B0,0B0,0RECV_B1,0B1,0RECV_B2,0B2,0RECV_B3,0B3,"
     "0REDUCE_GRAD,0RESHARD\r\n"
     "1UNSHARD,1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1RECV_F2,1F2,1SEND_F2,1RECV_F3,1F3,1SEND_F3,1RECV_B0,1B0,"
     "1SEND_B0,1RECV_B1,1B1,1SEND_B1,1RECV_B2,1B2,1SEND_B2,1RECV_B3,1B3,1SEND_B3,1REDUCE_GRAD,1RESHARD\r\n"
     "2UNSHARD,2RECV_F0,2F0,2SEND_F0,2RECV_F1,2F1,2SEND_F1,2RECV_F2,2F2,2SEND_F2,2RECV_F3,2F3,2SEND_F3,2RECV_B0,2B0,"
     "2SEND_B0,2RECV_B1,2B1,2SEND_B1,2RECV_B2,2B2,2SEND_B2,2RECV_B3,2B3,2SEND_B3,2REDUCE_GRAD,2RESHARD\r\n"
     "3UNSHARD,3RECV_F0,3F0,3RECV_F1,3F1,3RECV_F2,3F2,3RECV_F3,3F3,3B0,3SEND_B0,3B1,3SEND_B1,3B2,3SEND_B2,3B3,3SEND_B3,"
     "3REDUCE_GRAD,3RESHARD\r\n"},
};
static void train_torch_csv(int port)
{
    int i, r;
    data_init();
    for (i = 0; i < (int)(sizeof TORCH_CSV / sizeof TORCH_CSV[0]); i++) {
        int P = TORCH_CSV[i].P, S = P * TORCH_CSV[i].V;
        pp_plan *run = TORCH_CSV[i].lowered ? &sched : &plan;
        assert_int_equal(pp_plan_init(&sched, plan_store[0], sizeof plan_store[0], P, S, NMB), 0);
        assert_int_equal(pp_csv_read(&sched, TORCH_CSV[i].csv, strlen(TORCH_CSV[i].csv), NULL), 0);
        assert_int_equal(sched.lowered, TORCH_CSV[i].lowered);
        assert_int_equal(pp_validate(&sched, NULL), 0);
        if (!TORCH_CSV[i].lowered)
            assert_int_equal(pp_lower_mode(&sched, &plan, plan_store[1], sizeof plan_store[1], PP_LOWER_TORCH, NULL),
                             0);
        for (r = 0; r < P; r++) assert_int_equal(pp_plan_table(run, r, &tables[r]), 0);
        train_plan(port, TORCH_CSV[i].name, P, NMB, i % 2 ? PP_CKPT_EXCEPT_LAST : PP_CKPT_NEVER);
    }
}
static void test_train_torch_csv_pthread(void **st)
{
    (void)st;
    train_torch_csv(PORT_PTHREAD);
}
static void test_train_torch_csv_shm(void **st)
{
    (void)st;
    train_torch_csv(PORT_SHM);
}
#endif

/* The stage that holds layer l under the config's balance. */
static int stage_of_layer(int l)
{
    int s, end = 0;
    for (s = 0; s < plan.nstages; s++)
        if (l < (end += cfg.balance[s])) return s;
    return -1;
}

/* A layer error on one rank: every rank returns PP_ERR_LAYER with the layer's code and
   the failing rank; the next step works again. */
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
    for (r = 0; r < P; r++) {
        assert_int_equal(rcs[r], PP_ERR_LAYER);
        assert_int_equal(rank_err[r], -77);
        assert_int_equal(rank_err_rank[r], plan.stage_rank[stage_of_layer(2 * layer_pair + 1)]); /* its ReLU */
    }
    m.lin[layer_pair].fail_mb = -1;
    run_ranks(port, P, rcs);
    for (r = 0; r < P; r++) {
        assert_int_equal(rcs[r], 0);
        assert_int_equal(rank_err[r], 0);
        assert_int_equal(rank_err_rank[r], -1);
    }
}
/* Two ranks fail with different codes: rank 2 first (its stage's first microbatch), rank 0
   afterwards (its second microbatch waits for rank 2's failure): every rank returns rank 0's
   code, the lowest rank's, not the first one's. */
static void two_errors(int port)
{
    static model m;
    static int rank2_failed;
    int r, rcs[MAXR];
    data_init();
    model_init(&m);
    build_plan(PP_SCHED_GPIPE, 4, 1, NMB);
    cfg_init(&m, 1, PP_CKPT_NEVER);
    rank2_failed = 0;
    m.lin[2].fail_mb = 0;
    m.lin[2].fail_rc = -66;
    m.lin[0].fail_mb = 1;
    m.lin[0].fail_rc = -55;
    m.lin[0].fail_after = &rank2_failed;
    m.lin[2].failed = &rank2_failed;
    run_ranks(port, 4, rcs);
    for (r = 0; r < 4; r++) {
        assert_int_equal(rcs[r], PP_ERR_LAYER);
        assert_int_equal(rank_err[r], -55);
        assert_int_equal(rank_err_rank[r], 0);
    }
}
static void test_error_aborts(void **st)
{
    (void)st;
#ifndef PIPELINE_EXEC_SUITE_CORES
    error_everywhere(PORT_PTHREAD, PP_SCHED_1F1B, 4, 1, 2);
    error_everywhere(PORT_PTHREAD, PP_SCHED_1F1B, 4, 1, 0);
    error_everywhere(PORT_PTHREAD, PP_SCHED_ZBV, 2, 2, 3 - 1);
    two_errors(PORT_PTHREAD);
    two_errors(PORT_SHM);
#else
    (void)two_errors;
#endif
    error_everywhere(PORT_SHM, PP_SCHED_GPIPE, MAXR, 1, 1);
    error_everywhere(PORT_SHM, PP_SCHED_ZBV, 2, 2, 3 - 1);
}

#ifndef PIPELINE_EXEC_SUITE_CORES
/* A hand-written uneven inference plan, 3 stages on 2 ranks (stages 0 and 1 on rank 0,
   stage 2 on rank 1): pp_validate accepts it marked custom or forward-only, it lowers,
   needs mailbox depth 0, emits, and runs equal to a single-rank forward on both ports. */
static void uneven_forward_only(int port)
{
    static model m;
    static float want[BATCH][DOUT];
    static pp_action st3[2][512];
    static char text[8192];
    static const int32_t bal3[3] = {2, 4, 2};
    static uint32_t work[6 * 3 * NMB];
    static const char csv[] = "0F0,1F0,0F1,1F1,0F2,1F2,0F3,1F3\r\n2F0,2F1,2F2,2F3\r\n";
    pp_plan p;
    int r, rcs[MAXR];
    data_init();
    model_init(&m);
    assert_int_equal(pp_plan_init(&p, st3[0], sizeof st3[0], 2, 3, NMB), 0);
    assert_int_equal(pp_csv_read(&p, csv, sizeof csv - 1, NULL), 0);
    assert_int_equal(p.stage_rank[0], 0);
    assert_int_equal(p.stage_rank[1], 0);
    assert_int_equal(p.stage_rank[2], 1);
    assert_int_equal(pp_validate(&p, NULL), 0);
    p.schedule = PP_SCHED_FORWARD_ONLY;
    assert_int_equal(pp_validate(&p, NULL), 0);
    assert_int_equal(pp_lower(&p, &plan, st3[1], sizeof st3[1], NULL), 0);
    assert_int_equal(pp_validate(&plan, NULL), 0);
    assert_int_equal(pp_mailbox_depth(&plan, 0, work, sizeof work, NULL), 0);
    assert_true(pp_emit_c(&plan, "uneven", text, sizeof text, NULL) > 0);
    for (r = 0; r < 2; r++) assert_int_equal(pp_plan_table(&plan, r, &tables[r]), 0);
    cfg_init(&m, 0, PP_CKPT_NEVER);
    cfg.balance = bal3;
    the_job.step = 0;
    memset(the_job.out, 0, sizeof the_job.out);
    run_ranks(port, 2, rcs);
    for (r = 0; r < 2; r++) assert_int_equal(rcs[r], 0);
    forward_reference(&m, NMB, want);
    assert_memory_equal(want, the_job.out, sizeof(float) * ROWS * DOUT * NMB);
}
static void test_uneven_forward_only(void **st)
{
    (void)st;
    uneven_forward_only(PORT_PTHREAD);
    uneven_forward_only(PORT_SHM);
}

/* Exact storage: an inference slot holds the stage input and its layers' outputs, a
   training slot their gradients too (twice as much), plus one state word per slot (8-byte
   rounded) and, on the training loss's rank, one mb_value per microbatch. pp_exec_query
   and pp_exec_bytes agree; pp_exec_init takes exactly that many bytes. The query's codes are
   pp_exec_init's, and a failed query leaves *bytes alone. */
#define R8(x) (((size_t)(x) + 7u) & ~(size_t)7u)
static void test_storage_query(void **st)
{
    static model m;
    pp_exec e;
    pg_group *g;
    pp_table t;
    size_t q, slot;
    int r, train;
    (void)st;
    model_init(&m);
    assert_int_equal(pg_pthread_world_init(&world, 4), 0);
    for (train = 0; train < 2; train++) {
        build_plan(train ? PP_SCHED_1F1B : PP_SCHED_FORWARD_ONLY, 4, 1, NMB);
        cfg_init(&m, train, PP_CKPT_NEVER);
        for (r = 0; r < 4; r++) {
            size_t in = r ? m.layers[2 * r - 1].act_bytes : ROWS * DIN * 4;
            slot = (R8(in) + R8(m.layers[2 * r].act_bytes) + R8(m.layers[2 * r + 1].act_bytes)) * (size_t)(1 + train);
            q = 0;
            assert_int_equal(pp_exec_query(&cfg, &tables[r], &q), 0);
            assert_int_equal(q, pp_exec_bytes(&cfg, &tables[r]));
            assert_int_equal(tables[r].slots, train ? 4 - r : 1);
            assert_int_equal(q, R8(4u * tables[r].slots) + tables[r].slots * slot +
                                    (train && r == 3 ? sizeof(mb_value) * NMB : 0));
            g = pg_pthread_group(&world, r);
            assert_int_equal(pp_exec_init(&e, &cfg, &tables[r], g, exec_mem[r], q - 1), PP_ERR_TOO_SMALL);
            assert_int_equal(pp_exec_init(&e, &cfg, &tables[r], g, exec_mem[r], q), 0);
        }
    }
    /* forward-only, rank 0: one slot of (48 + 64 + 64) B and its state word (a training slot: 352 B) */
    build_plan(PP_SCHED_FORWARD_ONLY, 4, 1, NMB);
    cfg_init(&m, 0, PP_CKPT_NEVER);
    assert_int_equal(pp_exec_bytes(&cfg, &tables[0]), 184);
    q = 12345;
    assert_int_equal(pp_exec_query(NULL, &tables[0], &q), PP_ERR_NULL);
    assert_int_equal(pp_exec_query(&cfg, NULL, &q), PP_ERR_NULL);
    assert_int_equal(pp_exec_query(&cfg, &tables[0], NULL), PP_ERR_NULL);
    t = tables[0];
    t.rank = 4;
    assert_int_equal(pp_exec_query(&cfg, &t, &q), PP_ERR_ARG);
    t = tables[0];
    t.nranks = 0;
    assert_int_equal(pp_exec_query(&cfg, &t, &q), PP_ERR_ARG);
    assert_int_equal(q, 12345);
    cfg.output = NULL; /* the last stage's rank needs its output callback */
    assert_int_equal(pp_exec_query(&cfg, &tables[3], &q), PP_ERR_NULL);
    assert_int_equal(pp_exec_bytes(&cfg, &tables[3]), 0);
    assert_true(pp_exec_bytes(&cfg, &tables[0]) > 0); /* other ranks do not */
    assert_int_equal(q, 12345);
}

/* Bad inputs: codes, and nothing run. */
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

#endif /* !PIPELINE_EXEC_SUITE_CORES */

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
        cmocka_unit_test(test_train_pthread),
        cmocka_unit_test(test_train_shm),
        cmocka_unit_test(test_infer_pthread),
        cmocka_unit_test(test_infer_shm),
        cmocka_unit_test(test_train_large_m_pthread),
        cmocka_unit_test(test_train_large_m_shm),
        cmocka_unit_test(test_error_aborts),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_uneven_forward_only),
        cmocka_unit_test(test_storage_query),
        cmocka_unit_test(test_train_torch_csv_pthread),
        cmocka_unit_test(test_train_torch_csv_shm),
    };
#endif
    return cmocka_run_group_tests_name("pipeline executor", tests, NULL, NULL);
}
#endif
