/* examples/resnet_fmnist: a ResNet-style CNN trained as a pipeline whose residual blocks
   straddle stage boundaries (`scons resnet` runs its check).

   Model (18 layers, f32 NCHW, 8 channels): conv 3x3 1->8, BatchNorm, ReLU, max pool 2x2
   (stashes the block input "r1"); block 1: conv, BN, ReLU, conv, BN, add r1 + ReLU (stashes
   "r2"); block 2: conv, BN, ReLU, conv, BN, add r2 + ReLU; 2x2 average pool, Linear 392 -> 10.
   Every BatchNorm is fairscale's DeferredBatchNorm (pipeline_bn.h): a mini-batch of 64 images
   runs as 4 microbatches of 16, each normalized by its own statistics, the running
   statistics updated once per mini-batch. On 4 ranks the stages are layers 0-3 | 4-7 | 8-11 |
   12-17: skip r1 goes from rank 0 straight to rank 2 (past rank 1, which holds none of it),
   r2 from rank 2 to rank 3; on 2 ranks 0-7 | 8-17: r1 crosses from rank 0 to rank 1, r2 stays
   within rank 1's stage. 1F1B, pg_pthread, `pp_skip_layout` routes, `PP_SKIPS` executor.

   It checks (and exits non-zero otherwise) one training step of the same 64 images six
   ways: on 2 and 4 ranks as one microbatch of 64 equal to the un-microbatched step on one
   rank, and as 4 microbatches of 16 equal to the same 4 microbatches on one rank (the
   parameters after the step within 1e-6, the running statistics of every BatchNorm equal);
   and, for DeferredBatchNorm, that the first BatchNorm's running statistics after the
   microbatched step equal the un-microbatched step's (deeper ones see inputs normalized per
   microbatch, so theirs and the parameters differ from it, as in fairscale: it prints by
   how much). Then (unless run with --check) it trains 150 steps on 1, 2 and 4 ranks, prints
   each one's test accuracy (a forward-only pipeline with the running statistics) and fails
   unless the 2- and 4-rank parameters and running statistics end equal to the single-rank
   ones (within 1e-6 relative; 0 measured). Needs
   dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PP_SKIPS                 1
#define SPLITCORE_IMPLEMENTATION /* pipeline.h, its executor, pipeline_bn.h, pg.h, microbatch.h */
#define PG_PTHREAD_IMPLEMENTATION
#include "pipeline_bn.h"
#include "ports/pg_pthread.h"
#include "resnet.h"

#define DATA_DIR "/usr/share/datasets/fashion-mnist/"
#define NTRAIN   60000
#define NTEST    10000
#define NPIX     (RN_HW * RN_HW)
#define BATCH    64
#define NMB      4
#define STEPS    150 /* training steps after the check */
#define NEVAL    1000
#define LR       0.02f
#define MOMENTUM 0.9f
#define NPOS     18
#define NBN      5

static unsigned char train_img[NTRAIN][NPIX], test_img[NTEST][NPIX], train_lab[NTRAIN], test_lab[NTEST];

/* ---- the network ---- */
typedef struct net {
    rn_conv conv[NBN];
    pp_dbn bn[NBN];
    float bw[NBN][RN_C], bb[NBN][RN_C], rm[NBN][RN_C], rv[NBN][RN_C], gbw[NBN][RN_C], gbb[NBN][RN_C];
    double acc[NBN][2 * RN_C];
    rn_act relu, add1, add2;
    rn_linear fc;
    pp_layer L[NPOS];
    pp_tspec out[NPOS], in;
    pp_skip r1, r2;
} net;
/* The check's runs: 1, 2 and 4 ranks, each with 1 microbatch of 64 and 4 of 16 */
#define NRUNS 6
static net nets[NRUNS];
static const int run_ranks[NRUNS] = {1, 2, 4, 1, 2, 4}, run_nmb[NRUNS] = {1, 1, 1, NMB, NMB, NMB};

static uint64_t rng;
static float urand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}
static pp_tspec chw(int c, int h) /* a batched f32 [c, h, h] (h 0: [c]) */
{
    pp_tspec t;
    memset(&t, 0, sizeof t);
    t.dtype = MB_F32;
    t.ndim = h ? 3 : 1;
    t.shape[0] = c;
    t.shape[1] = t.shape[2] = h;
    return t;
}
/* The same weights every time (seeded), BatchNorms deferred over `chunks` microbatches. */
static void net_init(net *n, int chunks)
{
    int i, k, p = 0, conv = 0, bn = 0;
    memset(n, 0, sizeof *n);
    rng = 0x9E3779B97F4A7C15ull;
    for (i = 0; i < NBN; i++) {
        rn_conv *c = &n->conv[i];
        c->ci = i ? RN_C : 1;
        c->co = RN_C;
        c->h = i ? RN_P : RN_HW;
        for (k = 0; k < c->co * c->ci * 9; k++) c->w[k] = urand() * sqrtf(2.0f / (9.0f * (float)c->ci));
        pp_dbn_init(&n->bn[i], RN_C, 1e-5f, 0.1f, chunks, n->bw[i], n->bb[i], n->rm[i], n->rv[i], n->gbw[i], n->gbb[i],
                    n->acc[i]);
    }
    for (k = 0; k < RN_OUT * RN_FC; k++) n->fc.w[k] = urand() * 0.05f;
    n->add1.pop = n->add1.stash = n->add2.pop = 1;
    n->in = chw(1, RN_HW);
    n->r1.name = "r1";
    n->r1.spec = chw(RN_C, RN_P);
    n->r2.name = "r2";
    n->r2.spec = chw(RN_C, RN_P);
    /* conv BN relu pool | conv BN relu conv BN add | conv BN relu conv BN add | gap fc */
    for (p = 0; p < NPOS; p++) {
        static const char kind[NPOS + 1] = "cbrpcbrcbacbrcbagl";
        pp_layer *L = &n->L[p];
        int h = p < 3 ? RN_HW : RN_P;
        n->out[p] = chw(RN_C, h);
        L->out = &n->out[p];
        L->nout = 1;
        switch (kind[p]) {
        case 'c':
            L->forward = rn_conv_fwd, L->backward_input = rn_conv_bi, L->backward_weight = rn_conv_bw;
            L->self = &n->conv[conv++];
            break;
        case 'b': pp_dbn_layer(&n->bn[bn++], L); break;
        case 'r': L->forward = rn_act_fwd, L->backward_input = rn_act_bi, L->self = &n->relu; break;
        case 'p':
            L->forward = rn_pool_fwd, L->backward_input = rn_pool_bi;
            L->stash = &n->r1, L->nstash = 1;
            break;
        case 'a':
            L->forward = rn_act_fwd, L->backward_input = rn_act_bi;
            L->self = p == 9 ? &n->add1 : &n->add2;
            L->pop = p == 9 ? &n->r1 : &n->r2, L->npop = 1;
            if (p == 9) L->stash = &n->r2, L->nstash = 1;
            break;
        case 'g':
            L->forward = rn_avg_fwd, L->backward_input = rn_avg_bi;
            n->out[p] = chw(RN_C, RN_Q);
            break;
        default:
            L->forward = rn_linear_fwd, L->backward_input = rn_linear_bi, L->backward_weight = rn_linear_bw;
            L->self = &n->fc;
            n->out[p] = chw(RN_OUT, 0);
            break;
        }
    }
}
static void net_mode(net *n, int training)
{
    int i;
    for (i = 0; i < NBN; i++) n->bn[i].training = training;
}
/* Every parameter and its gradient: calls f(param, grad, count) per array. */
static void net_params(net *n, void (*f)(float *, float *, int, void *), void *arg)
{
    int i;
    for (i = 0; i < NBN; i++) {
        f(n->conv[i].w, n->conv[i].gw, n->conv[i].co * n->conv[i].ci * 9, arg);
        f(n->conv[i].b, n->conv[i].gb, RN_C, arg);
        f(n->bw[i], n->gbw[i], RN_C, arg);
        f(n->bb[i], n->gbb[i], RN_C, arg);
    }
    f(n->fc.w, n->fc.gw, RN_OUT * RN_FC, arg);
    f(n->fc.b, n->fc.gb, RN_OUT, arg);
}
static void zero_grad(float *p, float *g, int k, void *arg)
{
    (void)p, (void)arg;
    memset(g, 0, sizeof(float) * (size_t)k);
}
static float velocity[8192];
static int vel_at;
static void sgd(float *p, float *g, int k, void *arg)
{
    int i;
    float mom = *(const float *)arg;
    for (i = 0; i < k; i++, vel_at++) {
        velocity[vel_at] = mom * velocity[vel_at] + g[i];
        p[i] -= LR * velocity[vel_at];
    }
}
static void net_step(net *n, float momentum)
{
    vel_at = 0;
    net_params(n, sgd, &momentum);
}

/* ---- data: the batch's images, labels, the loss ---- */
typedef struct job {
    const unsigned char (*img)[NPIX];
    const unsigned char *lab;
    const int *idx; /* the batch's images */
    int rows;       /* per microbatch */
    int correct;
} job;
static int job_input(void *user, int mb, mb_tensor *x)
{
    const job *j = (const job *)user;
    int r, i;
    for (r = 0; r < x[0].shape[0]; r++)
        for (i = 0; i < NPIX; i++)
            ((float *)x[0].data)[r * NPIX + i] = (float)j->img[j->idx[mb * j->rows + r]][i] / 255.0f - 0.5f;
    return 0;
}
/* softmax cross-entropy, the mean over the mini-batch */
static int job_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    const job *j = (const job *)user;
    int r, o;
    double l = 0;
    for (r = 0; r < y[0].shape[0]; r++) {
        const float *z = (const float *)y[0].data + r * RN_OUT;
        float *g = (float *)dy[0].data + r * RN_OUT, m = z[0], s = 0;
        int label = j->lab[j->idx[mb * j->rows + r]];
        for (o = 1; o < RN_OUT; o++) m = z[o] > m ? z[o] : m;
        for (o = 0; o < RN_OUT; o++) s += expf(z[o] - m);
        for (o = 0; o < RN_OUT; o++) g[o] = (expf(z[o] - m) / s - (o == label)) / BATCH;
        l += log(s) + m - z[label];
    }
    *loss = l / BATCH;
    return 0;
}
static int job_output(void *user, int mb, const mb_tensor *y)
{
    job *j = (job *)user;
    int r, o;
    (void)mb;
    for (r = 0; r < y[0].shape[0]; r++) {
        const float *z = (const float *)y[0].data + r * RN_OUT;
        int best = 0;
        for (o = 1; o < RN_OUT; o++)
            if (z[o] > z[best]) best = o;
        j->correct += best == j->lab[j->idx[mb * j->rows + r]];
    }
    return 0;
}

/* ---- one step over a world of `nranks` threads ---- */
static pp_action store[2][1 << 14];
static pp_plan sched, plan;
static pp_table tables[4];
static pp_route routes[4];
static int nroutes;
static pp_exec_cfg cfg;
static uint64_t pool[(48u << 20) / 8]; /* every rank's executor storage, one run at a time */
static uint64_t *mem_of[4];
static size_t bytes_of[4];
static double rank_loss[4];
static pg_pthread_world world;

static int rank_main(pg_group *g, void *arg)
{
    pp_exec e;
    int r = pg_rank(g), rc;
    (void)arg;
    rank_loss[r] = 0;
    if ((rc = pp_exec_init(&e, &cfg, &tables[r], g, mem_of[r], bytes_of[r])) != 0) return rc;
    if ((rc = pp_exec_run(&e)) != 0) {
        fprintf(stderr, "rank %d: %s (err %d on rank %d)\n", r, pp_strerror(rc), e.err, e.err_rank);
        return rc;
    }
    if (e.losses) pp_exec_loss(&e, NULL, &rank_loss[r]);
    return 0;
}

/* n's layers over `nstages` stages of `balance` on nranks ranks, nmb microbatches of
   rows: 1F1B (GPipe with fewer microbatches than ranks, as torch's 1F1B requires) in
   training, forward-only otherwise. The loss. */
static double run(net *n, job *j, int nranks, const int32_t *balance, int nstages, int nmb, int train)
{
    int r, kind = !train ? PP_SCHED_FORWARD_ONLY : nmb >= nranks && nranks > 1 ? PP_SCHED_1F1B : PP_SCHED_GPIPE;
    size_t used = 0;
    double loss = 0;
    if (pp_skip_layout(n->L, NPOS, NULL, NPOS, balance, nstages, routes, 4, &nroutes, NULL) ||
        pp_schedule_build(&sched, kind, nranks, 1, nmb, store[0], sizeof store[0], NULL) ||
        pp_plan_skips(&sched, routes, nroutes) || pp_lower(&sched, &plan, store[1], sizeof store[1], NULL)) {
        fprintf(stderr, "planning failed\n");
        exit(1);
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.layers = n->L;
    cfg.nlayers = NPOS;
    cfg.balance = balance;
    cfg.rows = j->rows;
    cfg.dtype = MB_F32;
    cfg.checkpoint = PP_CKPT_NEVER;
    cfg.in = &n->in;
    cfg.nin = 1;
    cfg.input = job_input;
    cfg.loss = train ? job_loss : NULL;
    cfg.output = job_output;
    cfg.user = j;
    cfg.skips = routes;
    cfg.nskips = nroutes;
    for (r = 0; r < nranks; r++) {
        pp_plan_table(&plan, r, &tables[r]);
        bytes_of[r] = pp_exec_bytes(&cfg, &tables[r]);
        mem_of[r] = pool + used / 8;
        used += (bytes_of[r] + 7) & ~(size_t)7;
    }
    if (!bytes_of[0] || used > sizeof pool) {
        fprintf(stderr, "executor storage: %zu B of %zu\n", used, sizeof pool);
        exit(1);
    }
    if (pg_pthread_world_init(&world, nranks) || pg_pthread_run(&world, nranks, rank_main, NULL)) exit(1);
    for (r = 0; r < nranks; r++) loss += rank_loss[r];
    return loss;
}

/* ---- the check: one step on 1 rank (un-microbatched and 4 microbatches), 2 and 4 ranks ---- */
static double worst_rel;
static void diff(float *p, float *g, int k, void *arg)
{
    const float *q = *(const float **)arg;
    int i;
    (void)g;
    for (i = 0; i < k; i++) {
        double d = fabs((double)p[i] - q[i]) / (fabs(q[i]) > 1e-3 ? fabs(q[i]) : 1e-3);
        if (d > worst_rel) worst_rel = d;
    }
    *(const float **)arg = q + k;
}
static void flat(float *p, float *g, int k, void *arg) /* the parameters, one after another */
{
    float **to = (float **)arg;
    (void)g;
    memcpy(*to, p, sizeof(float) * (size_t)k);
    *to += k;
}
static float flat_ref[8192];
static int stats_equal(const net *a, const net *b, int nbn)
{
    return !memcmp(a->rm, b->rm, sizeof(float) * RN_C * (size_t)nbn) &&
           !memcmp(a->rv, b->rv, sizeof(float) * RN_C * (size_t)nbn);
}

int main(int argc, char **argv)
{
    static const int32_t b1[1] = {NPOS}, b2[2] = {8, 10}, b4[4] = {4, 4, 4, 6};
    static int idx[NTRAIN], eval_idx[BATCH];
    const char *files[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                            "t10k-labels-idx1-ubyte.gz"};
    void *dst[4] = {train_img, train_lab, test_img, test_lab};
    size_t sz[4] = {sizeof train_img, sizeof train_lab, sizeof test_img, sizeof test_lab};
    job j;
    int i, k, s, ok = 1;
    double loss;
    for (i = 0; i < 4; i++) { /* idx files: a 16-byte (images) or 8-byte (labels) header */
        char path[256], head[16];
        gzFile f;
        snprintf(path, sizeof path, "%s%s", DATA_DIR, files[i]);
        if (!(f = gzopen(path, "rb")) || gzread(f, head, i & 1 ? 8 : 16) != (i & 1 ? 8 : 16) ||
            gzread(f, dst[i], (unsigned)sz[i]) != (int)sz[i]) {
            fprintf(stderr, "cannot read %s (apt-get install dataset-fashion-mnist)\n", path);
            return 1;
        }
        gzclose(f);
    }
    for (i = 0; i < NTRAIN; i++) idx[i] = i;
    rng = 42;
    for (i = NTRAIN - 1; i > 0; i--) { /* one shuffle of the training set */
        int k = (int)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (i + 1), t = idx[i];
        idx[i] = idx[k];
        idx[k] = t;
    }
    memset(&j, 0, sizeof j);
    j.img = train_img;
    j.lab = train_lab;
    j.idx = idx;

    /* one step of the first 64 images, six ways */
    for (i = 0; i < NRUNS; i++) {
        net *n = &nets[i];
        int nr = run_ranks[i];
        net_init(n, run_nmb[i]);
        net_params(n, zero_grad, NULL);
        j.rows = BATCH / run_nmb[i];
        loss = run(n, &j, nr, nr == 1 ? b1 : nr == 2 ? b2 : b4, nr, run_nmb[i], 1);
        memset(velocity, 0, sizeof velocity);
        net_step(n, 0.0f);
        printf("step 1, %d rank%s (%s), %d microbatch%s of %d: loss %.6f\n", nr, nr > 1 ? "s" : "",
               nr == 1   ? "layers 0-17"
               : nr == 2 ? "layers 0-7 | 8-17"
                         : "layers 0-3 | 4-7 | 8-11 | 12-17",
               run_nmb[i], run_nmb[i] > 1 ? "es" : "", j.rows, loss);
    }
    for (i = 0; i < NRUNS; i++) {
        const net *ref = &nets[i < 3 ? 0 : 3];
        const float *from = flat_ref;
        float *to = flat_ref;
        if (i == 0 || i == 3) continue;
        net_params((net *)ref, flat, &to);
        worst_rel = 0;
        net_params(&nets[i], diff, &from);
        printf("%d ranks vs 1 rank, %d microbatch%s: parameters after the step max relative difference %g, "
               "running statistics of the %d BatchNorms %s\n",
               run_ranks[i], run_nmb[i], run_nmb[i] > 1 ? "es" : "", worst_rel, NBN,
               stats_equal(&nets[i], ref, NBN) ? "equal" : "DIFFER");
        ok &= worst_rel <= 1e-6 && stats_equal(&nets[i], ref, NBN);
        if (run_nmb[i] == 1) continue;
        /* DeferredBatchNorm: the running statistics of the first BatchNorm (its input does not
           depend on the microbatching) equal the un-microbatched step's */
        printf("%d ranks, %d microbatches vs 1 rank un-microbatched: the first BatchNorm's running statistics %s\n",
               run_ranks[i], run_nmb[i], stats_equal(&nets[i], &nets[0], 1) ? "equal" : "DIFFER");
        ok &= stats_equal(&nets[i], &nets[0], 1);
    }
    {
        const float *from = flat_ref;
        float *to = flat_ref;
        net_params(&nets[0], flat, &to);
        worst_rel = 0;
        net_params(&nets[5], diff, &from);
        printf("(4 microbatches vs 1, parameters: max relative difference %g: each microbatch is normalized by its "
               "own statistics, as in fairscale)\n",
               worst_rel);
    }
    if (!ok) {
        fprintf(stderr, "FAILED: the pipelined step differs from the single-rank step\n");
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--check")) return 0;

    /* training from there on 1, 2 and 4 ranks (the same 4 microbatches per step), each then
       run as a forward-only pipeline on the test set: the pipelined trainings must end where
       the single-rank one does */
    j.rows = BATCH / NMB;
    for (k = 3; k < NRUNS; k++) {
        net *n = &nets[k];
        int nr = run_ranks[k];
        const int32_t *bal = nr == 1 ? b1 : nr == 2 ? b2 : b4;
        j.img = train_img;
        j.lab = train_lab;
        memset(velocity, 0, sizeof velocity);
        for (s = 1; s < STEPS; s++) {
            j.idx = idx + (size_t)s * BATCH;
            net_params(n, zero_grad, NULL);
            loss = run(n, &j, nr, bal, nr, NMB, 1);
            net_step(n, MOMENTUM);
            if ((s + 1) % 50 == 0)
                printf("%d rank%s: step %d/%d  loss %.4f\n", nr, nr > 1 ? "s" : "", s + 1, STEPS, loss);
        }
        net_mode(n, 0);
        j.img = test_img;
        j.lab = test_lab;
        j.correct = 0;
        for (s = 0; s < NEVAL / BATCH; s++) {
            for (i = 0; i < BATCH; i++) eval_idx[i] = s * BATCH + i;
            j.idx = eval_idx;
            run(n, &j, nr, bal, nr, NMB, 0);
        }
        printf("%d rank%s: test accuracy %.3f on %d images (forward-only pipeline, running statistics)\n", nr,
               nr > 1 ? "s" : "", (double)j.correct / (NEVAL / BATCH * BATCH), NEVAL / BATCH * BATCH);
        if (k > 3) {
            const float *from = flat_ref;
            float *to = flat_ref;
            net_params(&nets[3], flat, &to);
            worst_rel = 0;
            net_params(n, diff, &from);
            printf("%d ranks vs 1 rank after %d steps: parameters max relative difference %g, running statistics of "
                   "the %d BatchNorms %s\n",
                   nr, STEPS, worst_rel, NBN, stats_equal(n, &nets[3], NBN) ? "equal" : "DIFFER");
            ok &= worst_rel <= 1e-6 && stats_equal(n, &nets[3], NBN);
        }
    }
    if (!ok) {
        fprintf(stderr, "FAILED: the pipelined training differs from the single-rank training\n");
        return 1;
    }
    return 0;
}
