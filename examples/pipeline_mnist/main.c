/* examples/pipeline_mnist — `scons demo`: pipeline-parallel training on Fashion-MNIST.

   A 784-256-128-64-10 MLP cut into 4 stages runs on 4 ranks (threads, pg_pthread) with
   PyTorch's 1F1B schedule: 8 microbatches of 8 images per step, loss = per-microbatch
   cross-entropy merged by pipeline.h's microbatch reducer, SGD with momentum. Each epoch
   prints loss, test accuracy (the test set streamed through a 4-stage forward-only
   pipeline) and training samples/s. Writes into build/demo/ (or argv[1]): trace.json
   (Chrome/Perfetto trace of one executed step), fmnist_weights.h (the trained model),
   fmnist_test100.h (the first 100 test images and the host's predictions), fmnist_plan.h
   (the forward-only plan as const tables for the 4-hart RISC-V firmware) and fmnist_plan2.h
   (a 2-stage forward-only plan and its balance for the two Cortex-M33 cores of the SSE-200).
   Needs Debian's dataset-fashion-mnist (read with zlib). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "mlp.h"

#define DATA_DIR    "/usr/share/datasets/fashion-mnist/"
#define NTRAIN      60000
#define NTEST       10000
#define RANKS       4
#define CHUNKS      8 /* microbatches per step */
#define MB_ROWS     8 /* images per microbatch */
#define BATCH       (CHUNKS * MB_ROWS)
#define EVAL_ROWS   50
#define EVAL_CHUNKS 8
#define EPOCHS      5
#define M33_CHUNKS  8 /* microbatches of the 2-stage plan (the firmware's 13 images each) */
#define LR          0.01f
#define MOMENTUM    0.9f

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
static pp_action store[6][2048];
static uint32_t depth_work[6 * RANKS * EVAL_CHUNKS]; /* pp_mailbox_depth's (pp_sim_bytes) */
static pp_plan train_sched, train_plan, eval_sched, eval_plan, m33_sched, m33_plan;
static int32_t m33_balance[2];
static pp_table train_tab[RANKS], eval_tab[RANKS];
typedef struct rank_ctx {
    int base; /* first image index of this step / eval chunk */
    int correct;
    double loss_sum;
    int steps;
} rank_ctx;
static rank_ctx ctx[RANKS];
static pp_exec_cfg train_cfg[RANKS], eval_cfg[RANKS];
static uint64_t train_mem[RANKS][(1 << 20) / 8], eval_mem[RANKS][(1 << 20) / 8];
static pp_event events[RANKS][256];
static int nevents[RANKS];
static int eval_pred[NTEST];
static float logits100[100][MLP_OUT]; /* the first 100 test images' logits (last evaluation) */
static uint32_t t_origin;

static void image(float *dst, const unsigned char *src)
{
    int i;
    for (i = 0; i < MLP_IN; i++) dst[i] = src[i] ? (src[i] / 255.0f - 0.2860f) / 0.3530f : 0.0f;
}
/* Zero pixels stay exactly 0 (skipped by the first Linear); the others are standardized. */

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

/* The linear layers of the stages on this rank. */
static int owns(int r, int k)
{
    int layer = 2 * k, s = 0, acc = mlp_balance[0];
    while (layer >= acc) acc += mlp_balance[++s];
    return train_plan.stage_rank[s] == r;
}

static int rank_body(pg_group *g, void *arg)
{
    int r = pg_rank(g), rc, epoch, step, k, i;
    pp_exec te, ee;
    rank_ctx *c = &ctx[r];
    (void)arg;
    pg_set_timeout(g, 60000); /* 4 busy ranks on 2 cores: generous */
    if ((rc = pp_exec_init(&te, &train_cfg[r], &train_tab[r], g, train_mem[r], sizeof train_mem[r])) ||
        (rc = pp_exec_init(&ee, &eval_cfg[r], &eval_tab[r], g, eval_mem[r], sizeof eval_mem[r])))
        return rc;
    for (epoch = 0; epoch < EPOCHS; epoch++) {
        double t0, t1;
        float lr = LR * (epoch < 3 ? 1.0f : epoch == 3 ? 0.3f : 0.1f); /* step decay */
        if ((rc = pg_barrier(g))) {
            fprintf(stderr, "rank %d: barrier: %d\n", r, rc);
            return rc;
        }
        if (r == 0) { /* rank 0 shuffles; the barrier publishes it */
            for (i = NTRAIN - 1; i > 0; i--) {
                int j = (int)(rnd() % (uint32_t)(i + 1)), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        }
        if ((rc = pg_barrier(g))) return rc;
        t0 = now_s();
        c->loss_sum = 0;
        c->steps = 0;
        for (step = 0; step < NTRAIN / BATCH; step++) {
            int traced = epoch == 0 && step == 100;
            c->base = step * BATCH;
            for (k = 0; k < 4; k++)
                if (owns(r, k)) {
                    memset(G[k], 0, sizeof(float) * (size_t)(mlp_dims[k] * mlp_dims[k + 1]));
                    memset(GB[k], 0, sizeof GB[k]);
                }
            if (traced) {
                te.events = events[r];
                te.max_events = 256;
            }
            if ((rc = pp_exec_run(&te))) {
                fprintf(stderr, "rank %d: epoch %d step %d: %d\n", r, epoch + 1, step, rc);
                return rc;
            }
            if (traced) {
                nevents[r] = te.nevents;
                te.events = NULL;
                te.max_events = 0;
            }
            for (k = 0; k < 4; k++)
                if (owns(r, k)) {
                    int n = mlp_dims[k] * mlp_dims[k + 1];
                    for (i = 0; i < n; i++) {
                        V[k][i] = MOMENTUM * V[k][i] + G[k][i];
                        W[k][i] -= lr * V[k][i];
                    }
                    for (i = 0; i < mlp_dims[k + 1]; i++) {
                        VB[k][i] = MOMENTUM * VB[k][i] + GB[k][i];
                        B[k][i] -= lr * VB[k][i];
                    }
                }
            if (te.losses) {
                double l;
                mb_spec sum = MB_REDUCE(MB_RED_SUM); /* the microbatch reducer merges losses */
                if ((rc = pp_exec_loss(&te, &sum, &l))) return rc;
                c->loss_sum += l;
                c->steps++;
            }
        }
        t1 = now_s();
        if ((rc = pg_barrier(g))) return rc;
        c->correct = 0;
        for (i = 0; i < NTEST; i += EVAL_ROWS * EVAL_CHUNKS) {
            c->base = i;
            if ((rc = pp_exec_run(&ee))) {
                fprintf(stderr, "rank %d: epoch %d evaluation at %d: %d\n", r, epoch + 1, i, rc);
                return rc;
            }
        }
        if (ee.t->stage_rank[ee.t->nstages - 1] == r) {
            printf("epoch %d/%d  loss %.4f  test accuracy %.4f  %.0f samples/s (train, 4 ranks, 1F1B)\n", epoch + 1,
                   EPOCHS, c->loss_sum / c->steps, (double)c->correct / NTEST,
                   (double)(NTRAIN / BATCH * BATCH) / (t1 - t0));
            fflush(stdout);
            ctx[0].correct = c->correct; /* read by main after the run */
        }
    }
    return 0;
}

static int check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "pipeline_mnist: %s: %d (%s)\n", what, rc, pp_strerror(rc));
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

int main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : "build/demo";
    int r, k, i, rc, nev = 0;
    double t0 = now_s();
    static pp_event all[RANKS * 256];
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

    /* plans: 1F1B for training, forward-only for streaming evaluation */
    check(pp_schedule_build(&train_sched, PP_SCHED_1F1B, RANKS, 1, CHUNKS, store[0], sizeof store[0], NULL), "1F1B");
    check(pp_validate(&train_sched, NULL), "validate");
    check(pp_lower(&train_sched, &train_plan, store[1], sizeof store[1], NULL), "lower");
    check(pp_schedule_build(&eval_sched, PP_SCHED_FORWARD_ONLY, RANKS, 1, EVAL_CHUNKS, store[2], sizeof store[2], NULL),
          "forward-only");
    check(pp_lower(&eval_sched, &eval_plan, store[3], sizeof store[3], NULL), "lower");
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
        check(pp_schedule_build(&m33_sched, PP_SCHED_FORWARD_ONLY, 2, 1, M33_CHUNKS, store[4], sizeof store[4], NULL),
              "forward-only");
        check(pp_lower(&m33_sched, &m33_plan, store[5], sizeof store[5], NULL), "lower");
        check(pp_mailbox_depth(&m33_plan, 0, depth_work, sizeof depth_work, NULL), "mailbox depth");
    }
    for (r = 0; r < RANKS; r++) {
        pp_exec_cfg *c = &train_cfg[r], *e = &eval_cfg[r];
        check(pp_plan_table(&train_plan, r, &train_tab[r]), "table");
        check(pp_plan_table(&eval_plan, r, &eval_tab[r]), "table");
        memset(c, 0, sizeof *c);
        c->layers = train_layers;
        c->nlayers = MLP_LAYERS;
        c->balance = mlp_balance;
        c->rows = MB_ROWS;
        c->dtype = MB_F32;
        c->in_bytes = MB_ROWS * MLP_IN * 4;
        c->checkpoint = PP_CKPT_NEVER;
        c->input = train_input;
        c->loss = train_loss;
        c->user = &ctx[r];
        c->now_us = now_us;
        *e = *c;
        e->layers = eval_layers;
        e->rows = EVAL_ROWS;
        e->in_bytes = EVAL_ROWS * MLP_IN * 4;
        e->input = eval_input;
        e->loss = NULL;
        e->output = eval_output;
        e->now_us = NULL;
        if (pp_exec_bytes(c, &train_tab[r]) > sizeof train_mem[r] ||
            pp_exec_bytes(e, &eval_tab[r]) > sizeof eval_mem[r]) {
            fprintf(stderr, "pipeline_mnist: executor storage too small\n");
            return 1;
        }
    }
    printf("pipeline_mnist: 784-256-128-64-10 MLP, 4 stages on 4 ranks (pg_pthread), 1F1B, "
           "%d microbatches x %d images, SGD lr %.2f (x0.3, x0.1 in the last two epochs) momentum %.1f\n",
           CHUNKS, MB_ROWS, LR, MOMENTUM);
    printf("1F1B step, one rank per line (compute actions in PyTorch's order, . = idle):\n");
    check(pp_timeline(&train_sched, text, sizeof text, NULL), "timeline");
    fputs(text, stdout);
    fflush(stdout);

    check(pg_pthread_world_init(&world, RANKS), "world");
    rc = pg_pthread_run(&world, RANKS, rank_body, NULL);
    for (r = 0; r < RANKS; r++)
        if (world.rc[r]) {
            fprintf(stderr, "pipeline_mnist: rank %d failed: %d\n", r, world.rc[r]);
            return 1;
        }
    if (rc) {
        fprintf(stderr, "pipeline_mnist: run failed: %d\n", rc);
        return 1;
    }

    /* Chrome trace of one step (epoch 1, step 100), times from the step's first action */
    t_origin = 0xffffffffu;
    for (r = 0; r < RANKS; r++)
        for (i = 0; i < nevents[r]; i++)
            if (events[r][i].t_start < t_origin) t_origin = events[r][i].t_start;
    for (r = 0; r < RANKS; r++)
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
                (double)ctx[0].correct / NTEST);
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
    if ((double)ctx[0].correct / NTEST < 0.85) {
        fprintf(stderr, "pipeline_mnist: test accuracy below 0.85\n");
        return 1;
    }
    return 0;
}
