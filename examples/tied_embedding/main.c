/* examples/tied_embedding: a toy language model whose input embedding and output projection
   are one layer (tied weights), pipelined on 2 pg_pthread ranks as fairscale's AsyncPipe runs
   a module used at two points of its sequence (`scons tied` runs its check).

   The model predicts the token that follows a token: positions [embedding, block A, block B,
   embedding] over 3 layers (cfg.order 0 1 2 0). The embedding looks a token up (a row of E,
   16 x 16) at its first position and scores the 16 tokens (h E^T) at its second; a block is
   h + relu(W h + b). Balance [2, 1] counts distinct layers as fairscale's Pipe does, so
   rank 0 holds the embedding and block A, rank 1 block B, and the flow returns to rank 0:
   stages (embedding, A) | B | (embedding) on ranks 0, 1, 0 (pp_invocations), GPipe over that
   stage map (pp_schedule_build_map). Each rank builds only its own layers (pp_exec_build, as
   fairscale's LazyModule): their weights live in that rank's executor storage, and
   pp_exec_bytes counts them on that rank only.

   It checks (and exits non-zero otherwise) that the forward-only pipeline's scores on 2 ranks
   equal one rank's bit for bit, and that one training step of 4 microbatches on 2 ranks
   gives the weights of the same step on one rank within 1e-6 relative (the embedding's
   gradient sums its two positions' in another order across microbatches). Then (unless run with
   --check) it trains on 2 ranks and prints the loss and the next-token accuracy. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PP_SKIPS                 1
#define SPLITCORE_IMPLEMENTATION /* pipeline.h with pipeline_model.h and the executor, pg.h, microbatch.h */
#define PG_PTHREAD_IMPLEMENTATION
#include "pipeline.h"
#include "ports/pg_pthread.h"

#define V     16 /* tokens = width (one output spec per layer: the projection's is the lookup's) */
#define BATCH 32
#define NMB   4
#define ROWS  (BATCH / NMB)
#define STEPS 300
#define LR    0.5f

/* A layer's weights and gradients, in the storage of the rank that builds them: the
   embedding E [V, V]; a block W [V, V] and b [V]; then their gradients, summed in double
   (the embedding's two positions add theirs in another order on 2 ranks than on 1). */
typedef struct layer {
    int index; /* seeds its initial weights: the same on any rank */
    float *w, *b;
    double *gw, *gb;
} layer;
#define EMB_BYTES (V * V * (sizeof(float) + sizeof(double)))
#define BLK_BYTES ((V * V + V) * (sizeof(float) + sizeof(double)))

static float seeded(uint32_t *s) /* uniform in [-0.5, 0.5) */
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f - 0.5f;
}
static int layer_init(void *self, void *params)
{
    layer *l = (layer *)self;
    uint32_t s = 7u + 1000u * (uint32_t)l->index;
    int k, blk = l->index > 0;
    l->w = (float *)params;
    l->b = blk ? l->w + V * V : NULL;
    l->gw = (double *)(void *)(l->w + V * V + (blk ? V : 0)); /* 8-byte aligned: V * V floats first */
    l->gb = blk ? l->gw + V * V : NULL;
    for (k = 0; k < V * V; k++) l->w[k] = seeded(&s) * (blk ? 0.5f : 1.0f);
    if (blk) memset(l->b, 0, sizeof(float) * V);
    memset(l->gw, 0, sizeof(double) * (V * V + (blk ? V : 0)));
    return 0;
}

/* ---- the tied embedding: lookup (token ids, i32) or projection (f32) ---- */
static int emb_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const layer *l = (const layer *)self;
    int r, v, d;
    for (r = 0; r < x[0].shape[0]; r++)
        for (v = 0; v < V; v++) {
            float s = 0;
            if (x[0].dtype == MB_I32) { /* h = E[token] */
                int32_t id = ((const int32_t *)x[0].data)[r];
                if (id < 0 || id >= V) return -1;
                s = l->w[id * V + v];
            } else /* scores = h E^T */
                for (d = 0; d < V; d++) s += ((const float *)x[0].data)[r * V + d] * l->w[v * V + d];
            ((float *)y[0].data)[r * V + v] = s;
        }
    return 0;
}
static int emb_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const layer *l = (const layer *)self;
    int r, v, d;
    for (r = 0; r < x[0].shape[0]; r++) /* the projection's input gradient (the lookup has none) */
        for (d = 0; d < V; d++) {
            float s = 0;
            for (v = 0; v < V; v++) s += ((const float *)dy[0].data)[r * V + v] * l->w[v * V + d];
            ((float *)dx[0].data)[r * V + d] = s;
        }
    return 0;
}
static int emb_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    layer *l = (layer *)self;
    int r, v, d;
    for (r = 0; r < x[0].shape[0]; r++)
        for (v = 0; v < V; v++) {
            double g = ((const float *)dy[0].data)[r * V + v];
            if (x[0].dtype == MB_I32)
                l->gw[((const int32_t *)x[0].data)[r] * V + v] += g;
            else
                for (d = 0; d < V; d++) l->gw[v * V + d] += g * ((const float *)x[0].data)[r * V + d];
        }
    return 0;
}

/* ---- a block: y = h + relu(W h + b) ---- */
static float pre(const layer *l, const float *h, int o)
{
    float s = l->b[o];
    int i;
    for (i = 0; i < V; i++) s += l->w[o * V + i] * h[i];
    return s;
}
static int blk_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const layer *l = (const layer *)self;
    int r, o;
    for (r = 0; r < x[0].shape[0]; r++) {
        const float *h = (const float *)x[0].data + r * V;
        for (o = 0; o < V; o++) {
            float z = pre(l, h, o);
            ((float *)y[0].data)[r * V + o] = h[o] + (z > 0 ? z : 0);
        }
    }
    return 0;
}
static int blk_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const layer *l = (const layer *)self;
    int r, o, i;
    for (r = 0; r < x[0].shape[0]; r++) {
        const float *h = (const float *)x[0].data + r * V, *g = (const float *)dy[0].data + r * V;
        float *out = (float *)dx[0].data + r * V;
        memcpy(out, g, sizeof(float) * V);
        for (o = 0; o < V; o++)
            if (pre(l, h, o) > 0)
                for (i = 0; i < V; i++) out[i] += l->w[o * V + i] * g[o];
    }
    return 0;
}
static int blk_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    layer *l = (layer *)self;
    int r, o, i;
    for (r = 0; r < x[0].shape[0]; r++) {
        const float *h = (const float *)x[0].data + r * V, *g = (const float *)dy[0].data + r * V;
        for (o = 0; o < V; o++)
            if (pre(l, h, o) > 0) {
                l->gb[o] += g[o];
                for (i = 0; i < V; i++) l->gw[o * V + i] += (double)g[o] * h[i];
            }
    }
    return 0;
}

/* ---- the model, the data ---- */
typedef struct model {
    layer emb, a, b;
    pp_layer L[3];
} model;
static const pp_tspec HID = {MB_F32, 1, {V}, 0}, TOKEN = {MB_I32, 1, {1}, 0};
static void model_init(model *m)
{
    int k;
    memset(m, 0, sizeof *m);
    m->emb.index = 0, m->a.index = 1, m->b.index = 2;
    for (k = 0; k < 3; k++) {
        pp_layer *L = &m->L[k];
        L->self = k == 0 ? &m->emb : k == 1 ? &m->a : &m->b;
        L->forward = k ? blk_fwd : emb_fwd;
        L->backward_input = k ? blk_bi : emb_bi;
        L->backward_weight = k ? blk_bw : emb_bw;
        L->init = layer_init;
        L->param_bytes = k ? BLK_BYTES : EMB_BYTES;
        L->out = &HID;
        L->nout = 1;
    }
}
static void sgd(layer *l)
{
    int k, n = l->b ? V * V + V : V * V; /* w and b, then gw and gb */
    for (k = 0; k < n; k++) {
        l->w[k] -= LR * (float)l->gw[k];
        l->gw[k] = 0;
    }
}

/* The language: token t is followed by NEXT(t), a fixed permutation. */
#define NEXT(t) (((t)*5 + 3) % V)
typedef struct job {
    int32_t tok[BATCH];
    int correct;
    float scores[BATCH * V];
} job;
static int job_input(void *user, int mb, mb_tensor *x)
{
    memcpy(x[0].data, &((const job *)user)->tok[mb * ROWS], sizeof(int32_t) * ROWS);
    return 0;
}
static int job_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    const job *j = (const job *)user;
    int r, o;
    double l = 0;
    for (r = 0; r < ROWS; r++) {
        const float *z = (const float *)y[0].data + r * V;
        float *g = (float *)dy[0].data + r * V, m = z[0], s = 0;
        int want = NEXT(j->tok[mb * ROWS + r]);
        for (o = 1; o < V; o++) m = z[o] > m ? z[o] : m;
        for (o = 0; o < V; o++) s += expf(z[o] - m);
        for (o = 0; o < V; o++) g[o] = (expf(z[o] - m) / s - (o == want)) / BATCH;
        l += log(s) + m - z[want];
    }
    *loss = l / BATCH;
    return 0;
}
static int job_output(void *user, int mb, const mb_tensor *y)
{
    job *j = (job *)user;
    int r, o;
    memcpy(&j->scores[mb * ROWS * V], y[0].data, sizeof(float) * ROWS * V);
    for (r = 0; r < ROWS; r++) {
        const float *z = (const float *)y[0].data + r * V;
        int best = 0;
        for (o = 1; o < V; o++)
            if (z[o] > z[best]) best = o;
        j->correct += best == NEXT(j->tok[mb * ROWS + r]);
    }
    return 0;
}

/* ---- a pipeline of the model on nranks ranks: its plans, executors and storage ---- */
typedef struct run_of {
    model m;
    int nranks;
    int32_t sb[PP_MAX_STAGES];
    pp_action store[2][4][1024]; /* training, forward-only: schedule, lowering */
    pp_plan sched[2], plan[2];
    pp_table tables[2][2];
    pp_exec_cfg cfg;
    uint64_t mem[2][8192]; /* each rank's executor storage: its slots, then its layers */
    size_t bytes[2];
    double loss;
    int built;
} run_of;
static const int32_t ORDER[4] = {0, 1, 2, 0};
static job the_job;
static run_of runs[2]; /* 1 rank, 2 ranks */
static pg_pthread_world world;
static int train_now;

static void setup(run_of *p, int nranks)
{
    static const int32_t parts1[1] = {3}, parts2[2] = {2, 1};
    uint8_t map[PP_MAX_STAGES];
    int ns, k, r;
    model_init(&p->m);
    p->nranks = nranks;
    if (pp_invocations(ORDER, 4, 3, nranks == 1 ? parts1 : parts2, nranks, p->sb, map, &ns, NULL)) exit(1);
    for (k = 0; k < 2; k++) /* 0: training (GPipe), 1: forward-only */
        if (pp_schedule_build_map(&p->sched[k], k ? PP_SCHED_FORWARD_ONLY : PP_SCHED_GPIPE, nranks, map, ns, NMB,
                                  p->store[k][0], sizeof p->store[k][0], NULL) ||
            pp_lower(&p->sched[k], &p->plan[k], p->store[k][1], sizeof p->store[k][1], NULL)) {
            fprintf(stderr, "planning failed\n");
            exit(1);
        }
    memset(&p->cfg, 0, sizeof p->cfg);
    p->cfg.layers = p->m.L;
    p->cfg.nlayers = 3;
    p->cfg.order = ORDER;
    p->cfg.npos = 4;
    p->cfg.balance = p->sb;
    p->cfg.rows = ROWS;
    p->cfg.dtype = MB_F32;
    p->cfg.checkpoint = PP_CKPT_NEVER;
    p->cfg.in = &TOKEN;
    p->cfg.nin = 1;
    p->cfg.input = job_input;
    p->cfg.output = job_output;
    p->cfg.user = &the_job;
    for (r = 0; r < nranks; r++) {
        size_t most = 0;
        for (k = 0; k < 2; k++) {
            size_t n;
            if (pp_plan_table(&p->plan[k], r, &p->tables[k][r])) exit(1);
            p->cfg.loss = k ? NULL : job_loss;
            if (pp_exec_query(&p->cfg, &p->tables[k][r], &n) || n > sizeof p->mem[r]) exit(1);
            most = n > most ? n : most;
        }
        p->bytes[r] = most;
    }
}

/* A rank's step: the executor over its storage; the layers it builds are built once and stay
   at the end of that storage (the slots before them change size between training and
   inference, so the storage ends where the larger layout ends). */
static int rank_main(pg_group *g, void *arg)
{
    run_of *p = (run_of *)arg;
    int r = pg_rank(g), rc;
    pp_exec e;
    size_t need;
    p->cfg.loss = train_now ? job_loss : NULL;
    need = pp_exec_bytes(&p->cfg, &p->tables[!train_now][r]);
    if ((p->bytes[r] - need) & 7) return -1;
    if ((rc = pp_exec_init(&e, &p->cfg, &p->tables[!train_now][r], g, (unsigned char *)p->mem[r] + (p->bytes[r] - need),
                           need)) != 0)
        return rc;
    if (!p->built && (rc = pp_exec_build(&e)) != 0) return rc;
    if ((rc = pp_exec_run(&e)) != 0) {
        fprintf(stderr, "rank %d: %s (err %d on rank %d)\n", r, pp_strerror(rc), e.err, e.err_rank);
        return rc;
    }
    if (train_now && e.losses) pp_exec_loss(&e, NULL, &p->loss);
    return 0;
}
static void step(run_of *p, int train)
{
    train_now = train;
    p->cfg.loss = train ? job_loss : NULL;
    if (pg_pthread_world_init(&world, p->nranks) || pg_pthread_run(&world, p->nranks, rank_main, p)) exit(1);
    p->built = 1;
    if (!train) return;
    sgd(&p->m.emb);
    sgd(&p->m.a);
    sgd(&p->m.b);
}

static double worst;
static void compare(const float *a, const float *b, int n)
{
    int k;
    for (k = 0; k < n; k++) {
        double d = fabs((double)a[k] - b[k]) / (fabs(b[k]) > 1e-6 ? fabs(b[k]) : 1e-6);
        worst = d > worst ? d : worst;
    }
}
static void batch(uint32_t *s)
{
    int k;
    for (k = 0; k < BATCH; k++) the_job.tok[k] = (int32_t)((*s = *s * 1664525u + 1013904223u) >> 16) % V;
}

int main(int argc, char **argv)
{
    static float want[BATCH * V];
    uint32_t s = 12345;
    int k, i, ok = 1;
    for (i = 0; i < 2; i++) setup(&runs[i], i + 1);
    runs[1].cfg.loss = job_loss; /* the training tables' cfg */
    for (i = 0; i < 2; i++) {    /* rank 0 builds the embedding and block A, rank 1 block B */
        printf("rank %d builds layers", i);
        for (k = 0; k < 3; k++) {
            int b = pp_exec_builds(&runs[1].cfg, &runs[1].tables[0][i], k);
            if (b == 1) printf(" %s", k == 0 ? "embedding" : k == 1 ? "A" : "B");
            ok &= b == (i == 0 ? k < 2 : k == 2);
        }
        printf(": executor storage %zu B (its layers' %u B)\n", runs[1].bytes[i],
               (unsigned)(i ? BLK_BYTES : EMB_BYTES + BLK_BYTES));
    }
    printf("one rank (all three layers): %zu B\n", runs[0].bytes[0]);

    /* the check: the forward-only pipeline, then one training step, on 1 and 2 ranks */
    batch(&s);
    for (i = 0; i < 2; i++) {
        step(&runs[i], 0);
        if (!i) memcpy(want, the_job.scores, sizeof want);
    }
    k = !memcmp(want, the_job.scores, sizeof want);
    printf("forward-only pipeline on 2 ranks vs 1 rank: scores %s\n", k ? "equal" : "DIFFER");
    ok &= k;
    for (i = 0; i < 2; i++) {
        step(&runs[i], 1);
        printf("step 1 on %d rank%s: loss %.6f\n", i + 1, i ? "s" : "", runs[i].loss);
    }
    compare(runs[1].m.emb.w, runs[0].m.emb.w, V * V);
    compare(runs[1].m.a.w, runs[0].m.a.w, V * V + V); /* w then b */
    compare(runs[1].m.b.w, runs[0].m.b.w, V * V + V);
    printf("2 ranks vs 1 rank: weights after the step, max relative difference %g\n", worst);
    if (!(ok &= worst <= 1e-6)) {
        fprintf(stderr, "FAILED: the pipelined run differs from the single-rank run\n");
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--check")) return 0;

    for (i = 1; i < STEPS; i++) {
        batch(&s);
        step(&runs[1], 1);
        if ((i + 1) % 100 == 0) printf("step %d/%d  loss %.4f\n", i + 1, STEPS, runs[1].loss);
    }
    for (k = 0; k < BATCH; k++) the_job.tok[k] = k % V;
    the_job.correct = 0;
    step(&runs[1], 0);
    printf("next-token accuracy %d/%d (forward-only pipeline, 2 ranks)\n", the_job.correct, BATCH);
    return 0;
}
