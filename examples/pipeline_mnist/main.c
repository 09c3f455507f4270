/* examples/pipeline_mnist — `scons demo`: pipeline-parallel training on Fashion-MNIST.

   A 784-256-128-64-10 MLP trains with PyTorch's 1F1B schedule over pg_pthread ranks
   (threads): 8 microbatches of 8 images per step, loss = per-microbatch cross-entropy merged
   by pipeline.h's microbatch reducer, SGD with momentum. The training layout is a choice of
   speed only: 2 ranks (2 stages, balance 1,6: the 784x256 linear alone, then the rest), 1
   rank (the 7 layers as one stage) or 4 ranks (4 stages, balance 2,2,2,1) run the same layer
   calls on the same data in the same order, so every layout trains the same bits. Each
   epoch's first TRIAL_BLOCKS x 2 blocks of TRIAL_STEPS steps alternate between the layout
   and 1 rank and are timed (real training steps), so each epoch prints the pipeline's own
   effect beside the 1-rank figure; with RANKS=auto (the default) the epoch's other steps run
   on whichever was faster (2 ranks when the 2 CPUs are free; 1 when other processes hold
   them and every hand-off waits for a CPU), with RANKS=1|2|4 on that layout. Each epoch
   prints loss, test accuracy (the test set streamed through a 4-stage forward-only pipeline
   on 4 ranks: the plan the firmware runs) and training samples/s.

   Built with MLP_CBLAS (`scons blas=openblas demo`: Debian's OpenBLAS, 1 thread per rank)
   the training layers are mlp.h's CBLAS kernels; the evaluation, whose predictions and
   logits the bare-metal run must reproduce bit for bit, always uses mlp.h's own forward.

   Usage: pipeline_mnist [OUT_DIR] [RANKS=auto|1|2|4]. Writes into build/demo/ (or OUT_DIR):
   trace.json (Chrome/Perfetto trace of one executed step), fmnist_weights.h (the trained
   model), fmnist_test100.h (the first 100 test images and the host's predictions) and
   fmnist_plan.h (the forward-only plan as const tables for the 4-hart RISC-V firmware) and
   fmnist_plan2.h (a 2-stage forward-only plan and its balance for the two Cortex-M33 cores of
   the SSE-200). Needs Debian's dataset-fashion-mnist (read with zlib). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define SPLITCORE_BASE_IMPLEMENTATION /* splitcore_strerror: the message of any code */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "mlp.h"

#define DATA_DIR     "/usr/share/datasets/fashion-mnist/"
#define NTRAIN       60000
#define NTEST        10000
#define MAX_RANKS    4 /* training layouts: 1, 2 or 4 ranks */
#define EVAL_RANKS   4 /* the forward-only plan the firmware runs on 4 harts */
#define CHUNKS       8 /* microbatches per step */
#define MB_ROWS      8 /* images per microbatch */
#define BATCH        (CHUNKS * MB_ROWS)
#define STEPS        (NTRAIN / BATCH)
#define EVAL_ROWS    50
#define EVAL_CHUNKS  8
#define TRIAL_BLOCKS 2  /* per epoch: 2 x (the layout, 1 rank) timed blocks ... */
#define TRIAL_STEPS  10 /* ... of 10 steps each */
#ifndef EPOCHS
#define EPOCHS 5
#endif
#define LR         0.01f
#define MOMENTUM   0.9f
#define M33_CHUNKS 8 /* microbatches of the 2-stage plan (the firmware's 13 images each) */

static unsigned char train_img[NTRAIN][MLP_IN], test_img[NTEST][MLP_IN];
static unsigned char train_lab[NTRAIN], test_lab[NTEST];
static int perm[NTRAIN];

/* parameters, gradients, momentum */
static float W0[784 * 256], W1[256 * 128], W2[128 * 64], W3[64 * 10];
static float G0[784 * 256], G1[256 * 128], G2[128 * 64], G3[64 * 10];
static float V0[784 * 256], V1[256 * 128], V2[128 * 64], V3[64 * 10];
static float B[4][256], GB[4][256], VB[4][256];
static float *const W[4] = {W0, W1, W2, W3}, *const G[4] = {G0, G1, G2, G3}, *const V[4] = {V0, V1, V2, V3};
static mlp_linear lin[4];
static pp_layer train_layers[MLP_LAYERS], eval_layers[MLP_LAYERS];

static int read_gz(const char *name, unsigned char *dst, size_t n, size_t header)
{
    char path[256];
    unsigned char skip[16];
    gzFile f;
    int ok;
    snprintf(path, sizeof path, "%s%s", DATA_DIR, name);
    f = gzopen(path, "rb");
    if (!f) return -1;
    ok = gzread(f, skip, (unsigned)header) == (int)header && gzread(f, dst, (unsigned)n) == (int)n;
    gzclose(f);
    return ok ? 0 : -1;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float urand(void)
{
    return (float)(rnd() >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static uint32_t now_us(void *user)
{
    struct timespec ts;
    (void)user;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
}
static double now_s(void)
{ /* not from now_us: its 32-bit microseconds wrap every 71 min */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- plans, configs, per-rank contexts ---- */
typedef struct train_layout {
    int ranks;
    const int32_t *balance;
    pp_plan sched, plan;
    pp_action store[2][2048];
    pp_table tab[MAX_RANKS];
    pp_exec_cfg cfg[MAX_RANKS];
    size_t bytes[MAX_RANKS]; /* pp_exec_query's */
} train_layout;
static train_layout lay1, lay2, lay4;
static pp_action eval_store[2][2048], m33_store[2][2048];
static pp_plan m33_sched, m33_plan;
static int32_t m33_balance[2];
static uint32_t depth_work[6 * EVAL_RANKS * EVAL_CHUNKS]; /* pp_mailbox_depth's (pp_sim_bytes) */
static pp_plan eval_sched, eval_plan;
static pp_table eval_tab[EVAL_RANKS];
typedef struct rank_ctx {
    int base; /* first image index of this step / eval chunk */
    int correct;
} rank_ctx;
static rank_ctx ctx[MAX_RANKS];
static pp_exec_cfg eval_cfg[EVAL_RANKS];
static uint64_t train_mem[MAX_RANKS][(1 << 20) / 8], eval_mem[EVAL_RANKS][(1 << 20) / 8];
static size_t eval_bytes[EVAL_RANKS];
static pp_event events[MAX_RANKS][256];
static int nevents[MAX_RANKS];
static int eval_pred[NTEST];
static float logits100[100][MLP_OUT]; /* the first 100 test images' logits (last evaluation) */
static uint32_t t_origin;

/* A failed step: the pipeline's code, and for PP_ERR_LAYER / PP_ERR_COMM the layer's or the
   port's code it kept, with the rank it happened on. */
static void step_failed(int r, const char *what, int i, int rc, const pp_exec *e)
{
    fprintf(stderr, "rank %d: %s %d: %d (%s)", r, what, i, rc, pp_strerror(rc));
    if (e->err) fprintf(stderr, ": %d (%s) on rank %d", (int)e->err, splitcore_strerror(e->err), (int)e->err_rank);
    fputc('\n', stderr);
}

/* The standard normalisation (torchvision's Normalize with Fashion-MNIST's training-set mean and
   std over every pixel, zeros included). */
static void image(float *dst, const unsigned char *src)
{
    int i;
    for (i = 0; i < MLP_IN; i++) dst[i] = (src[i] / 255.0f - 0.2860f) / 0.3530f;
}

static int train_input(void *user, int mb, mb_tensor *x)
{
    rank_ctx *c = (rank_ctx *)user;
    int r;
    for (r = 0; r < MB_ROWS; r++) image((float *)x->data + r * MLP_IN, train_img[perm[c->base + mb * MB_ROWS + r]]);
    return 0;
}
/* Softmax cross-entropy, mean over the batch: dy = (softmax - onehot) / BATCH. */
static int train_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    rank_ctx *c = (rank_ctx *)user;
    int r, k;
    double l = 0;
    for (r = 0; r < MB_ROWS; r++) {
        const float *z = (const float *)y->data + r * MLP_OUT;
        float *g = (float *)dy->data + r * MLP_OUT, mx = z[0], s = 0;
        int lab = train_lab[perm[c->base + mb * MB_ROWS + r]];
        for (k = 1; k < MLP_OUT; k++)
            if (z[k] > mx) mx = z[k];
        for (k = 0; k < MLP_OUT; k++) s += expf(z[k] - mx);
        for (k = 0; k < MLP_OUT; k++) g[k] = expf(z[k] - mx) / s / BATCH;
        g[lab] -= 1.0f / BATCH;
        l += (double)(logf(s) + mx - z[lab]) / BATCH;
    }
    *loss = l;
    return 0;
}
static int eval_input(void *user, int mb, mb_tensor *x)
{
    rank_ctx *c = (rank_ctx *)user;
    int r;
    for (r = 0; r < EVAL_ROWS; r++) image((float *)x->data + r * MLP_IN, test_img[c->base + mb * EVAL_ROWS + r]);
    return 0;
}
static int eval_output(void *user, int mb, const mb_tensor *y)
{
    rank_ctx *c = (rank_ctx *)user;
    int r;
    for (r = 0; r < EVAL_ROWS; r++) {
        int i = c->base + mb * EVAL_ROWS + r;
        eval_pred[i] = mlp_argmax((const float *)y->data + r * MLP_OUT, MLP_OUT);
        if (i < 100) memcpy(logits100[i], (const float *)y->data + r * MLP_OUT, sizeof logits100[i]);
        c->correct += eval_pred[i] == test_lab[i];
    }
    return 0;
}

/* Does rank r of layout L hold linear layer k (layer 2k)? */
static int owns(const train_layout *L, int r, int k)
{
    int layer = 2 * k, s = 0, acc = L->balance[0];
    while (layer >= acc) acc += L->balance[++s];
    return L->plan.stage_rank[s] == r;
}

/* Training steps first .. first + steps - 1 of an epoch on layout L (pg_pthread_run's body). */
typedef struct train_job {
    train_layout *L;
    int epoch, first, steps, trace_step; /* trace_step: the step whose actions are recorded, or -1 */
    float lr;
    double loss_sum; /* the last stage's rank adds each step's loss */
} train_job;

static int train_body(pg_group *g, void *arg)
{
    train_job *j = (train_job *)arg;
    train_layout *L = j->L;
    int r = pg_rank(g), rc, step, k;
    pp_exec te;
    rank_ctx *c = &ctx[r];
    pg_set_timeout(g, 60000); /* ranks on a busy machine: generous */
    if ((rc = pp_exec_init(&te, &L->cfg[r], &L->tab[r], g, train_mem[r], sizeof train_mem[r]))) return rc;
    for (step = j->first; step < j->first + j->steps; step++) {
        int traced = step == j->trace_step;
        c->base = step * BATCH;
        for (k = 0; k < 4; k++)
            if (owns(L, r, k)) {
                memset(G[k], 0, sizeof(float) * (size_t)(mlp_dims[k] * mlp_dims[k + 1]));
                memset(GB[k], 0, sizeof GB[k]);
            }
        if (traced) {
            te.events = events[r];
            te.max_events = 256;
        }
        if ((rc = pp_exec_run(&te))) {
            step_failed(r, "training step", j->epoch * STEPS + step, rc, &te);
            return rc;
        }
        if (traced) {
            nevents[r] = te.nevents;
            te.events = NULL;
            te.max_events = 0;
        }
        for (k = 0; k < 4; k++)
            if (owns(L, r, k)) {
                mlp_sgd_momentum(W[k], V[k], G[k], mlp_dims[k] * mlp_dims[k + 1], j->lr, MOMENTUM);
                mlp_sgd_momentum(B[k], VB[k], GB[k], mlp_dims[k + 1], j->lr, MOMENTUM);
            }
        if (te.losses) {
            double l;
            mb_spec sum = MB_REDUCE(MB_RED_SUM); /* the microbatch reducer merges losses */
            if ((rc = pp_exec_loss(&te, &sum, &l))) return rc;
            j->loss_sum += l;
        }
    }
    return 0;
}

/* The test set through the 4-stage forward-only pipeline; the last stage counts hits. */
static int eval_body(pg_group *g, void *arg)
{
    int r = pg_rank(g), rc, i;
    pp_exec ee;
    rank_ctx *c = &ctx[r];
    (void)arg;
    pg_set_timeout(g, 60000);
    if ((rc = pp_exec_init(&ee, &eval_cfg[r], &eval_tab[r], g, eval_mem[r], sizeof eval_mem[r]))) return rc;
    c->correct = 0;
    for (i = 0; i < NTEST; i += EVAL_ROWS * EVAL_CHUNKS) {
        c->base = i;
        if ((rc = pp_exec_run(&ee))) {
            step_failed(r, "evaluation from image", i, rc, &ee);
            return rc;
        }
    }
    return 0;
}

static int check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "pipeline_mnist: %s: %d (%s)\n", what, rc, splitcore_strerror(rc));
        exit(1);
    }
    return rc;
}

static FILE *open_out(const char *dir, const char *name)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "pipeline_mnist: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

static void emit_floats(FILE *f, const char *name, const float *v, int n)
{
    int i;
    fprintf(f, "static const float %s[%d] = {", name, n);
    for (i = 0; i < n; i++) fprintf(f, "%s%.9g,", i % 8 ? " " : "\n    ", (double)v[i]);
    fprintf(f, "\n};\n");
}

static pg_pthread_world world;
static char text[1 << 21];

/* 1F1B for `ranks` ranks, stages of `balance` layers, each rank's table and executor config. */
static void layout_init(train_layout *L, int ranks, const int32_t *balance)
{
    int r;
    L->ranks = ranks;
    L->balance = balance;
    check(pp_schedule_build(&L->sched, PP_SCHED_1F1B, ranks, 1, CHUNKS, L->store[0], sizeof L->store[0], NULL), "1F1B");
    check(pp_validate(&L->sched, NULL), "validate");
    check(pp_lower(&L->sched, &L->plan, L->store[1], sizeof L->store[1], NULL), "lower");
    for (r = 0; r < ranks; r++) {
        pp_exec_cfg *c = &L->cfg[r];
        check(pp_plan_table(&L->plan, r, &L->tab[r]), "table");
        memset(c, 0, sizeof *c);
        c->layers = train_layers;
        c->nlayers = MLP_LAYERS;
        c->balance = balance;
        c->rows = MB_ROWS;
        c->dtype = MB_F32;
        c->in_bytes = MB_ROWS * MLP_IN * 4;
        c->checkpoint = PP_CKPT_NEVER;
        c->input = train_input;
        c->loss = train_loss;
        c->user = &ctx[r];
        c->now_us = now_us;
        check(pp_exec_query(c, &L->tab[r], &L->bytes[r]), "training storage");
        if (L->bytes[r] > sizeof train_mem[r]) {
            fprintf(stderr, "pipeline_mnist: executor storage too small\n");
            exit(1);
        }
    }
}

/* Run steps first .. first + steps - 1 on layout L; seconds taken. */
static double train_run(train_layout *L, int epoch, int first, int steps, float lr, double *loss_sum)
{
    train_job j;
    double t0 = now_s();
    int r, rc;
    j.L = L;
    j.epoch = epoch;
    j.first = first;
    j.steps = steps;
    j.trace_step = epoch == 0 ? 100 : -1; /* epoch 1, step 100 */
    j.lr = lr;
    j.loss_sum = 0;
    rc = pg_pthread_run(&world, L->ranks, train_body, &j);
    for (r = 0; r < L->ranks; r++)
        if (world.rc[r]) {
            fprintf(stderr, "pipeline_mnist: rank %d of %d failed: %d (%s)\n", r, L->ranks, world.rc[r],
                    splitcore_strerror(world.rc[r]));
            exit(1);
        }
    if (rc) {
        fprintf(stderr, "pipeline_mnist: run failed: %d (%s)\n", rc, splitcore_strerror(rc));
        exit(1);
    }
    *loss_sum += j.loss_sum;
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    const char *out = "build/demo", *ranks_arg = "auto";
    int r, k, i, nev = 0, epoch, correct = 0;
    double t0 = now_s();
    static pp_event all[MAX_RANKS * 256];
    train_layout *fixed = NULL, *trained = NULL;
    for (i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "RANKS=", 6))
            ranks_arg = argv[i] + 6;
        else
            out = argv[i];
    }
    if (!strcmp(ranks_arg, "1"))
        fixed = &lay1;
    else if (!strcmp(ranks_arg, "2"))
        fixed = &lay2;
    else if (!strcmp(ranks_arg, "4"))
        fixed = &lay4;
    else if (strcmp(ranks_arg, "auto")) {
        fprintf(stderr, "pipeline_mnist: RANKS=%s: choose auto, 1, 2 or 4\n", ranks_arg);
        return 2;
    }
    if (read_gz("train-images-idx3-ubyte.gz", &train_img[0][0], sizeof train_img, 16) ||
        read_gz("train-labels-idx1-ubyte.gz", train_lab, sizeof train_lab, 8) ||
        read_gz("t10k-images-idx3-ubyte.gz", &test_img[0][0], sizeof test_img, 16) ||
        read_gz("t10k-labels-idx1-ubyte.gz", test_lab, sizeof test_lab, 8)) {
        fprintf(stderr,
                "pipeline_mnist: Fashion-MNIST not found in " DATA_DIR " (apt-get install dataset-fashion-mnist)\n");
        return 1;
    }
    mkdir("build", 0777);
    mkdir(out, 0777);
    for (i = 0; i < NTRAIN; i++) perm[i] = i;
    for (k = 0; k < 4; k++) { /* Kaiming-uniform weights, zero biases */
        int n = mlp_dims[k] * mlp_dims[k + 1];
        float bound = sqrtf(6.0f / (float)mlp_dims[k]);
        for (i = 0; i < n; i++) W[k][i] = bound * urand();
        lin[k].in = mlp_dims[k];
        lin[k].out = mlp_dims[k + 1];
        lin[k].wt = W[k];
        lin[k].b = B[k];
        lin[k].gwt = G[k];
        lin[k].gb = GB[k];
    }
    mlp_layers(train_layers, lin, MB_ROWS);
    mlp_layers(eval_layers, lin, EVAL_ROWS);
#ifdef MLP_CBLAS
    mlp_layers_cblas(train_layers); /* training only: the evaluation keeps mlp.h's forward */
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(1); /* the ranks are the parallelism */
#endif
#endif

    /* plans: 1F1B for training on 1, 2 or 4 ranks, forward-only on 4 for streaming evaluation */
    layout_init(&lay1, 1, mlp_balance1);
    layout_init(&lay2, 2, mlp_balance2);
    layout_init(&lay4, 4, mlp_balance);
    check(pp_schedule_build(&eval_sched, PP_SCHED_FORWARD_ONLY, EVAL_RANKS, 1, EVAL_CHUNKS, eval_store[0],
                            sizeof eval_store[0], NULL),
          "forward-only");
    check(pp_lower(&eval_sched, &eval_plan, eval_store[1], sizeof eval_store[1], NULL), "lower");
    /* the firmware's executor has no take-in (PP_NO_TAKEIN): the emitted plan carries the
       mailbox depth it was proven for (forward-only: 0, sends never wait on a receiver) */
    if (pp_sim_bytes(&eval_plan) > sizeof depth_work) {
        fprintf(stderr, "pipeline_mnist: depth work\n");
        return 1;
    }
    check(pp_mailbox_depth(&eval_plan, 0, depth_work, sizeof depth_work, NULL), "mailbox depth");
    { /* the two Cortex-M33 cores: 2 stages cut where the layers' multiply-adds balance best
         (the first Linear alone: it is 83 % of the work), the same forward-only proof */
        uint32_t cost[MLP_LAYERS];
        for (i = 0, k = 0; k < 4; k++) {
            cost[i++] = (uint32_t)(mlp_dims[k] * mlp_dims[k + 1]);
            if (k < 3) cost[i++] = (uint32_t)mlp_dims[k + 1]; /* its ReLU */
        }
        check(pp_balance_by_cost(cost, MLP_LAYERS, 2, m33_balance, NULL), "balance");
        check(pp_schedule_build(&m33_sched, PP_SCHED_FORWARD_ONLY, 2, 1, M33_CHUNKS, m33_store[0], sizeof m33_store[0],
                                NULL),
              "forward-only");
        check(pp_lower(&m33_sched, &m33_plan, m33_store[1], sizeof m33_store[1], NULL), "lower");
        check(pp_mailbox_depth(&m33_plan, 0, depth_work, sizeof depth_work, NULL), "mailbox depth");
    }
    for (r = 0; r < EVAL_RANKS; r++) {
        pp_exec_cfg *e = &eval_cfg[r];
        check(pp_plan_table(&eval_plan, r, &eval_tab[r]), "table");
        *e = lay4.cfg[r]; /* the 4-rank training config, forward only */
        e->layers = eval_layers;
        e->rows = EVAL_ROWS;
        e->in_bytes = EVAL_ROWS * MLP_IN * 4;
        e->input = eval_input;
        e->loss = NULL;
        e->output = eval_output;
        e->now_us = NULL;
        check(pp_exec_query(e, &eval_tab[r], &eval_bytes[r]), "evaluation storage");
        if (eval_bytes[r] > sizeof eval_mem[r]) {
            fprintf(stderr, "pipeline_mnist: executor storage too small\n");
            return 1;
        }
    }
    if (!fixed && sysconf(_SC_NPROCESSORS_ONLN) < 2) fixed = &lay1; /* one CPU: nothing to try */
    printf("pipeline_mnist: 784-256-128-64-10 MLP, 1F1B on pg_pthread ranks (%s: %s), %d microbatches x %d images, "
           "SGD lr %.2f (x0.3, x0.1 in the last two epochs) momentum %.1f, %s kernels for training\n",
           fixed ? "RANKS" : "RANKS=auto",
           fixed ? (fixed == &lay1   ? "1 rank"
                    : fixed == &lay2 ? "2 ranks, balance 1,6"
                                     : "4 ranks, balance 2,2,2,1")
                 : "each epoch on 2 ranks or 1, whichever its first steps ran faster",
           CHUNKS, MB_ROWS, LR, MOMENTUM,
#ifdef MLP_CBLAS
           "CBLAS"
#else
           "mlp.h's"
#endif
    );
    printf("executor storage per rank (pp_exec_query): training on 2 ranks");
    for (r = 0; r < 2; r++) printf(" %u", (unsigned)lay2.bytes[r]);
    printf(" B, on 1 rank %u B; evaluation (forward-only, one slot, no gradient room)", (unsigned)lay1.bytes[0]);
    for (r = 0; r < EVAL_RANKS; r++) printf(" %u", (unsigned)eval_bytes[r]);
    printf(" B\n1F1B step, one rank per line (compute actions in PyTorch's order, . = idle):\n");
    check(pp_timeline(fixed ? &fixed->sched : &lay2.sched, text, sizeof text, NULL), "timeline");
    fputs(text, stdout);
    fflush(stdout);

    for (epoch = 0; epoch < EPOCHS; epoch++) {
        float lr = LR * (epoch < 3 ? 1.0f : epoch == 3 ? 0.3f : 0.1f); /* step decay */
        train_layout *cand = fixed ? fixed : &lay2;
        double t_start, t_end, t_cand = 0, t_one = 0, loss_sum = 0;
        int step = 0, b;
        for (i = NTRAIN - 1; i > 0; i--) { /* shuffle */
            int jj = (int)(rnd() % (uint32_t)(i + 1)), t = perm[i];
            perm[i] = perm[jj];
            perm[jj] = t;
        }
        t_start = now_s();
        /* the first steps alternate between the layout (auto: 2 ranks) and 1 rank, timed */
        for (b = 0; b < TRIAL_BLOCKS && cand != &lay1; b++) {
            t_cand += train_run(cand, epoch, step, TRIAL_STEPS, lr, &loss_sum);
            step += TRIAL_STEPS;
            t_one += train_run(&lay1, epoch, step, TRIAL_STEPS, lr, &loss_sum);
            step += TRIAL_STEPS;
        }
        trained = fixed ? fixed : t_cand <= t_one ? &lay2 : &lay1;
        train_run(trained, epoch, step, STEPS - step, lr, &loss_sum);
        t_end = now_s();
        check(pg_pthread_run(&world, EVAL_RANKS, eval_body, NULL), "evaluation");
        correct = ctx[eval_plan.stage_rank[eval_plan.nstages - 1]].correct;
        printf("epoch %d/%d  loss %.4f  test accuracy %.4f  %.0f samples/s (train, %d rank%s, 1F1B)\n", epoch + 1,
               EPOCHS, loss_sum / STEPS, (double)correct / NTEST, (double)(STEPS * BATCH) / (t_end - t_start),
               trained->ranks, trained->ranks > 1 ? "s" : "");
        if (cand != &lay1)
            printf("  the same steps on %d ranks vs 1 rank (%d alternating blocks of %d steps each, timed): %.0f vs "
                   "%.0f samples/s, the pipeline's own speed-up %.2fx%s\n",
                   cand->ranks, 2 * TRIAL_BLOCKS, TRIAL_STEPS, TRIAL_BLOCKS * TRIAL_STEPS * BATCH / t_cand,
                   TRIAL_BLOCKS * TRIAL_STEPS * BATCH / t_one, t_one / t_cand,
                   fixed             ? ""
                   : t_cand <= t_one ? "; the epoch trained on 2 ranks"
                                     : "; the epoch trained on 1 rank");
        fflush(stdout);
    }

    /* Chrome trace of one step (epoch 1, step 100), times from the step's first action */
    t_origin = 0xffffffffu;
    for (r = 0; r < MAX_RANKS; r++)
        for (i = 0; i < nevents[r]; i++)
            if (events[r][i].t_start < t_origin) t_origin = events[r][i].t_start;
    for (r = 0; r < MAX_RANKS; r++)
        for (i = 0; i < nevents[r]; i++) {
            all[nev] = events[r][i];
            all[nev].t_start -= t_origin;
            all[nev].t_end -= t_origin;
            nev++;
        }
    {
        FILE *f = open_out(out, "trace.json");
        int n = check(pp_trace_json(all, nev, text, sizeof text, NULL), "trace");
        fwrite(text, 1, (size_t)n, f);
        fclose(f);
    }
    /* the trained model, the first 100 test images with the host's predictions, the plan */
    {
        FILE *f = open_out(out, "fmnist_weights.h");
        fprintf(f,
                "/* Fashion-MNIST MLP 784-256-128-64-10 trained by examples/pipeline_mnist "
                "(test accuracy %.4f); wt[in][out] layout */\n",
                (double)correct / NTEST);
        for (k = 0; k < 4; k++) {
            char name[16];
            snprintf(name, sizeof name, "fm_w%d", k);
            emit_floats(f, name, W[k], mlp_dims[k] * mlp_dims[k + 1]);
            snprintf(name, sizeof name, "fm_b%d", k);
            emit_floats(f, name, B[k], mlp_dims[k + 1]);
        }
        fclose(f);
        f = open_out(out, "fmnist_test100.h");
        fprintf(f, "/* the first 100 Fashion-MNIST test images (normalized as the demo does) and the "
                   "host pipeline's predictions */\nstatic const float fm_test_x[100][784] = {\n");
        for (i = 0; i < 100; i++) {
            float x[MLP_IN];
            image(x, test_img[i]);
            fprintf(f, "  {");
            for (k = 0; k < MLP_IN; k++) fprintf(f, "%.9g,%s", (double)x[k], k % 16 == 15 ? "\n   " : "");
            fprintf(f, "},\n");
        }
        fprintf(f, "};\nstatic const unsigned char fm_host_pred[100] = {");
        for (i = 0; i < 100; i++) fprintf(f, "%s%d,", i % 25 ? "" : "\n    ", eval_pred[i]);
        fprintf(f, "\n};\n");
        fclose(f);
        f = open_out(out, "fmnist_plan.h");
        check(pp_emit_c(&eval_plan, "fm_plan", text, sizeof text, NULL), "emit");
        fputs(text, f);
        fclose(f);
        f = open_out(out, "fmnist_plan2.h");
        check(pp_emit_c(&m33_plan, "fm_plan2", text, sizeof text, NULL), "emit");
        fputs(text, f);
        fprintf(f,
                "\n/* layers per stage: the MLP's 7 cut by multiply-adds (pp_balance_by_cost) */\n"
                "static const int32_t fm_balance2[2] = {%d, %d};\n",
                (int)m33_balance[0], (int)m33_balance[1]);
        fclose(f);
    }
    printf("host predictions for the first 100 test images (the bare-metal run prints the same line):\n"
           "predictions:");
    for (i = 0; i < 100; i++) printf(" %d", eval_pred[i]);
    printf("\nlogits fnv-1a: %08x\n", (unsigned)mlp_fnv1a(&logits100[0][0], 100 * MLP_OUT));
    printf("wrote %s/trace.json (%d actions of one step), fmnist_weights.h, fmnist_test100.h, fmnist_plan.h, "
           "fmnist_plan2.h (2 stages of %d + %d layers); "
           "%.1f s total\n",
           out, nev, (int)m33_balance[0], (int)m33_balance[1], now_s() - t0);
    if ((double)correct / NTEST < 0.85) {
        fprintf(stderr, "pipeline_mnist: test accuracy below 0.85\n");
        return 1;
    }
    return 0;
}
