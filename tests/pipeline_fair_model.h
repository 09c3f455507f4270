/* tests/pipeline_fair_model.h — the models of the fairscale-feature suites and their
   single-rank reference (tests/test_pipeline_fair.c on host threads, tests/pipeline_conformance.h
   also on bare-metal harts): a block layer (Linear, LeakyReLU, skips it pops added, its
   stashes copies of its output) and a runner that calls every position of a model in order,
   microbatch after microbatch, the backward in reverse. No stdio, no heap. Include after
   pipeline.h with PP_SKIPS. */
#ifndef PIPELINE_FAIR_MODEL_H
#define PIPELINE_FAIR_MODEL_H

#define MAXR   4
#define MAXF   8   /* features of a block */
#define MAXPOS 12  /* positions of a model */
#define MAXT   4   /* tensors a position gives */
#define MAXE   512 /* bytes of one tensor of one microbatch */
#define MAXMB  8
#define F      4 /* features of the residual net */

static uint32_t lcg = 1;
static float frand(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return (float)((lcg >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* ---- the block: [Linear] [LeakyReLU] + the skips it pops; its stashes copy its output.
   x = (input, pops...), y = (output, stashes...). Weight gradients accumulate in double. ---- */
typedef struct blk {
    int in, out, linear, act, npop, nstash;
    float *w, *b; /* out x in, out: its own or, with per-rank construction, its params */
    float own[MAXF * MAXF + MAXF];
    double gw[MAXF * MAXF], gb[MAXF];
    int inits, init_rank; /* pp_layer.init calls and the rank that made them */
} blk;

static void blk_z(const blk *B, const float *x, int r, float *z) /* the pre-activation of row r */
{
    int o, i;
    for (o = 0; o < B->out; o++) {
        float s = B->linear ? B->b[o] : x[r * B->in + o];
        for (i = 0; B->linear && i < B->in; i++) s += B->w[o * B->in + i] * x[r * B->in + i];
        z[o] = s;
    }
}
static int blk_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    const blk *B = (const blk *)self;
    int rows = x[0].shape[0], r, o, j;
    float z[MAXF];
    if (x[0].shape[1] != B->in || y[0].shape[1] != B->out || y[0].shape[0] != rows) return -901;
    for (r = 0; r < rows; r++) {
        blk_z(B, (const float *)x[0].data, r, z);
        for (o = 0; o < B->out; o++) {
            float v = B->act && z[o] < 0 ? 0.1f * z[o] : z[o];
            for (j = 0; j < B->npop; j++) v += ((const float *)x[1 + j].data)[r * B->out + o];
            ((float *)y[0].data)[r * B->out + o] = v;
            for (j = 0; j < B->nstash; j++) ((float *)y[1 + j].data)[r * B->out + o] = v;
        }
    }
    return 0;
}
/* g = dy + the stashes' gradients; dz = g through the activation */
static void blk_dz(const blk *B, const mb_tensor *x, const mb_tensor *dy, int r, float *dz)
{
    float z[MAXF];
    int o, j;
    blk_z(B, (const float *)x[0].data, r, z);
    for (o = 0; o < B->out; o++) {
        float g = ((const float *)dy[0].data)[r * B->out + o];
        for (j = 0; j < B->nstash; j++) g += ((const float *)dy[1 + j].data)[r * B->out + o];
        dz[o] = B->act && z[o] < 0 ? 0.1f * g : g;
    }
}
static int blk_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    const blk *B = (const blk *)self;
    int rows = x[0].shape[0], r, o, i, j;
    float dz[MAXF];
    for (r = 0; r < rows; r++) {
        for (o = 0; o < B->out; o++) { /* a pop's gradient: g, before the activation */
            float g = ((const float *)dy[0].data)[r * B->out + o];
            for (j = 0; j < B->nstash; j++) g += ((const float *)dy[1 + j].data)[r * B->out + o];
            for (j = 0; j < B->npop; j++) ((float *)dx[1 + j].data)[r * B->out + o] = g;
        }
        blk_dz(B, x, dy, r, dz);
        for (i = 0; i < B->in; i++) {
            float s = 0;
            for (o = 0; B->linear && o < B->out; o++) s += dz[o] * B->w[o * B->in + i];
            ((float *)dx[0].data)[r * B->in + i] = B->linear ? s : dz[i];
        }
    }
    return 0;
}
static int blk_bw(void *self, const mb_tensor *x, const mb_tensor *dy)
{
    blk *B = (blk *)self;
    int rows = x[0].shape[0], r, o, i;
    float dz[MAXF];
    for (r = 0; r < rows && B->linear; r++) {
        blk_dz(B, x, dy, r, dz);
        for (o = 0; o < B->out; o++) {
            B->gb[o] += dz[o];
            for (i = 0; i < B->in; i++)
                B->gw[o * B->in + i] += (double)dz[o] * ((const float *)x[0].data)[r * B->in + i];
        }
    }
    return 0;
}

static pp_tspec f32s(int n) /* a batched f32 tensor of n features */
{
    pp_tspec t;
    memset(&t, 0, sizeof t);
    t.dtype = MB_F32;
    t.ndim = 1;
    t.shape[0] = n;
    return t;
}

/* ---- models: blocks at positions, with their specs and skips ---- */
typedef struct model {
    blk b[MAXPOS];
    pp_layer L[MAXPOS];
    pp_tspec out[MAXPOS], in;
    pp_skip st[MAXPOS], po[MAXPOS];
    char names[MAXPOS][4];
    int n;
} model;

static void model_clear(model *m)
{
    memset(m, 0, sizeof *m);
}
/* Block i: in -> out features, Linear or not, activation or not. */
static void model_blk(model *m, int i, int in, int out, int linear, int act)
{
    blk *B = &m->b[i];
    int k;
    B->in = in;
    B->out = out;
    B->linear = linear;
    B->act = act;
    B->w = B->own;
    B->b = B->own + MAXF * MAXF;
    for (k = 0; k < out * in; k++) B->w[k] = frand();
    for (k = 0; k < out; k++) B->b[k] = 0.1f * frand();
    m->out[i] = f32s(out);
    m->L[i].forward = blk_fwd;
    m->L[i].backward_input = blk_bi;
    m->L[i].backward_weight = blk_bw;
    m->L[i].self = B;
    m->L[i].out = &m->out[i];
    m->L[i].nout = 1;
    m->L[i].act_bytes = (uint32_t)(4 * out);
    if (i >= m->n) m->n = i + 1;
}
/* Layer i stashes skip `name`, layer j pops it (of layer i's output features). */
static void model_skip(model *m, int i, int j, char name)
{
    m->names[i][0] = name;
    m->st[i].name = m->names[i];
    m->st[i].spec = m->out[i];
    m->L[i].stash = &m->st[i];
    m->L[i].nstash = 1;
    m->b[i].nstash = 1;
    m->po[j].name = m->names[i];
    m->L[j].pop = &m->po[j];
    m->L[j].npop = 1;
    m->b[j].npop = 1;
}
/* ---- the data: one mini-batch of rows, its targets ---- */
#define BATCH 8
static float X[BATCH * MAXF], TGT[BATCH * MAXF], OUT[BATCH * MAXF];
static int g_rows, g_fin, g_fout; /* rows per microbatch, input and output features */
static void data_init(int fin, int fout)
{
    int i;
    lcg = 777;
    g_fin = fin;
    g_fout = fout;
    for (i = 0; i < BATCH * fin; i++) X[i] = 2 * frand();
    for (i = 0; i < BATCH * fout; i++) TGT[i] = frand();
}
static int in_cb(void *user, int mb, mb_tensor *x)
{
    (void)user;
    memcpy(x[0].data, &X[mb * g_rows * g_fin], sizeof(float) * (size_t)(x[0].shape[0] * g_fin));
    return 0;
}
static int out_cb(void *user, int mb, const mb_tensor *y)
{
    (void)user;
    memcpy(&OUT[mb * g_rows * g_fout], y[0].data, sizeof(float) * (size_t)(y[0].shape[0] * g_fout));
    return 0;
}

/* ---- the single-rank reference: every position in order, microbatch after microbatch;
   backward in reverse, the input gradient to the previous position, a pop's to its stash ---- */
static unsigned char refv[MAXPOS + 1][MAXT][MAXE], refg[MAXPOS + 1][MAXT][MAXE];
static void ref_view(mb_tensor *v, const pp_tspec *t, int rows, void *data)
{
    int32_t sh[MB_MAX_DIMS];
    int d, n = 0;
    if (!t->whole) sh[n++] = rows;
    for (d = 0; d < t->ndim; d++) sh[n++] = t->shape[d];
    mb_tensor_init(v, data, (mb_dtype)t->dtype, n, sh);
}
/* The tensors position p gives (p = -1: the input), as views of rows rows (grad: gradients). */
static int ref_gives(const pp_exec_cfg *c, int p, int grad, int rows, mb_tensor *v)
{
    const pp_layer *L = p < 0 ? NULL : &c->layers[c->order ? c->order[p] : p];
    int n = p < 0 ? c->nin : L->nout, i;
    for (i = 0; i < n; i++)
        ref_view(&v[i], p < 0 ? &c->in[i] : &L->out[i], rows, grad ? refg[p + 1][i] : refv[p + 1][i]);
    for (i = 0; L && i < L->nstash; i++)
        ref_view(&v[n + i], &L->stash[i].spec, rows, grad ? refg[p + 1][n + i] : refv[p + 1][n + i]);
    return n + (L ? L->nstash : 0);
}
/* Position p's call: x (inputs, pops), y (outputs, stashes), of values or gradients. */
static void ref_args(const pp_exec_cfg *c, int p, int grad, int rows, mb_tensor *x, mb_tensor *y)
{
    mb_tensor prev[MAXT];
    const pp_layer *L = &c->layers[c->order ? c->order[p] : p];
    int n = ref_gives(c, p - 1, grad, rows, prev), i, k;
    const pp_layer *P = p ? &c->layers[c->order ? c->order[p - 1] : p - 1] : NULL;
    if (P) n = P->nout;
    for (i = 0; i < n; i++) x[i] = prev[i];
    for (i = 0; i < L->npop; i++)
        for (k = 0; k < c->nskips; k++)
            if (c->skips[k].pop == p && c->skips[k].pop_i == i) {
                mb_tensor s[MAXT];
                const pp_layer *S = &c->layers[c->order ? c->order[c->skips[k].stash] : c->skips[k].stash];
                ref_gives(c, c->skips[k].stash, grad, rows, s);
                x[n + i] = s[S->nout + c->skips[k].stash_i];
            }
    ref_gives(c, p, grad, rows, y);
}
/* One step over nmb microbatches: the summed loss into *loss (training) or the outputs
   (inference); 0, or the first failing call's code. */
#define REF_OK(x)                    \
    do {                             \
        int ref_rc_ = (x);           \
        if (ref_rc_) return ref_rc_; \
    } while (0)
static int ref_run(const pp_exec_cfg *c, int nmb, double *loss)
{
    int mb, p, npos = c->order ? c->npos : c->nlayers;
    double total = 0;
    for (mb = 0; mb < nmb; mb++) {
        int rows = c->batch ? (c->batch - mb * c->rows < c->rows ? c->batch - mb * c->rows : c->rows) : c->rows;
        mb_tensor x[MAXT], y[MAXT], dx[MAXT], dy[MAXT];
        double l = 0;
        ref_gives(c, -1, 0, rows, x);
        REF_OK(c->input(c->user, mb, x));
        for (p = 0; p < npos; p++) {
            const pp_layer *L = &c->layers[c->order ? c->order[p] : p];
            ref_args(c, p, 0, rows, x, y);
            REF_OK(L->forward(L->self, x, y));
        }
        ref_gives(c, npos - 1, 0, rows, y);
        if (!c->loss) {
            REF_OK(c->output(c->user, mb, y));
            continue;
        }
        ref_gives(c, npos - 1, 1, rows, dy);
        REF_OK(c->loss(c->user, mb, y, dy, &l));
        total += l;
        for (p = npos - 1; p >= 0; p--) {
            const pp_layer *L = &c->layers[c->order ? c->order[p] : p];
            ref_args(c, p, 0, rows, x, y);
            ref_args(c, p, 1, rows, dx, dy);
            if (p) REF_OK(L->backward_input(L->self, x, dy, dx));
            if (L->backward_weight) REF_OK(L->backward_weight(L->self, x, dy));
        }
    }
    if (loss) *loss = total;
    return 0;
}

/* ---- skips: a residual network of 8 blocks, 4 stages of 2 ----
   a: 0 -> 4 (stage 0 -> 2), e: 1 -> 2 (0 -> 1), b: 3 -> 6 (1 -> 3), d: 4 -> 5 (within stage 2),
   c: 5 -> 7 (2 -> 3). On 4 ranks every route between stages crosses ranks; interleaved on
   2 ranks (stages 0 2 | 1 3) a and b stay on their rank; "v" (0 3 | 1 2) none does. */
static const int32_t BAL4[4] = {2, 2, 2, 2};
static void skip_model(model *m)
{
    int i;
    model_clear(m);
    lcg = 12345;
    for (i = 0; i < 8; i++) model_blk(m, i, F, F, 1, !(i & 1));
    m->in = f32s(F);
    model_skip(m, 0, 4, 'a');
    model_skip(m, 1, 2, 'e');
    model_skip(m, 3, 6, 'b');
    model_skip(m, 4, 5, 'd');
    model_skip(m, 5, 7, 'c');
}

#endif
