/* cnn.h — the int8 Fashion-MNIST CNN of examples/cnn_fmnist, shared by the host program
   and the bare-metal firmware (riscv_smp/main.c): conv 1->8 3x3 padding 1 + ReLU,
   max pool 2x2, linear 1568 -> 10, all int8 with int32 sums and dtensor_quant.h's
   requantization. cnn_forward_sharded runs one image spatially sharded over a 1-D mesh:
   the 28 image rows split torch.chunk-wise, dt_conv2d_q8 with its halo exchange, the
   pool on the conv's row shards (dt_maxpool2d, halo again), then each rank's partial
   int32 logits over the features it holds, all-reduced (sum) before requantization:
   bit-exact with cnn_forward_ref on one rank, for any number of ranks. */
#ifndef CNN_FMNIST_H
#define CNN_FMNIST_H
#include <stdint.h>
#include <string.h>
#include "dtensor_qconv.h"

#define CNN_HW   28
#define CNN_C    8
#define CNN_P    14                      /* pooled height and width */
#define CNN_FEAT (CNN_C * CNN_P * CNN_P) /* 1568 */
#define CNN_OUT  10
#if defined(__GNUC__) || defined(__clang__)
#define CNN_FN static __attribute__((unused)) /* each program uses some of them */
#else
#define CNN_FN static
#endif

typedef struct cnn_q8 {
    const int8_t *cw;  /* conv weight [8][1][3][3], per-channel scales */
    const int32_t *cb; /* conv bias [8] in s_in * s_w[c] units */
    const dt_qmul *cq; /* conv requantization [8] */
    const int8_t *lw;  /* linear weight [10][1568], per-row scales */
    const int32_t *lb; /* linear bias [10] */
    const dt_qmul *lq; /* logits requantization [10] */
} cnn_q8;

/* One rank's working memory (static: no heap). */
typedef struct cnn_work {
    int8_t conv[CNN_C * CNN_HW * CNN_HW];
    int8_t pool[CNN_C * CNN_P * CNN_P];
    int32_t acc[CNN_OUT];
    uint64_t scratch[(CNN_C * CNN_HW * CNN_HW + 1024) / 8];
} cnn_work;

static const dt_conv2d_params cnn_conv = DT_CONV2D(DT_NCHW, 1, 1, 1, 1);
static const dt_conv2d_params cnn_pool = DT_POOL2D(DT_NCHW, 2, 2, 0);

/* logits = requant(lw @ feat + lb) for features x[0..nfeat) starting at feature f0,
   accumulated into acc (int32, exact). */
CNN_FN void cnn_linear_acc(const cnn_q8 *m, const int8_t *x, int32_t f0, int32_t nfeat, int32_t *acc)
{
    int32_t n, f;
    for (n = 0; n < CNN_OUT; n++) {
        const int8_t *w = m->lw + (size_t)n * CNN_FEAT + f0;
        int32_t s = 0;
        for (f = 0; f < nfeat; f++) s += (int32_t)x[f] * (int32_t)w[f];
        acc[n] += s;
    }
}

CNN_FN void cnn_logits(const cnn_q8 *m, const int32_t *acc, int8_t *logits)
{
    int n;
    for (n = 0; n < CNN_OUT; n++) logits[n] = dt_requant_i8(acc[n] + m->lb[n], m->lq[n]);
}

CNN_FN int cnn_argmax(const int8_t *v)
{
    int i, b = 0;
    for (i = 1; i < CNN_OUT; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

/* FNV-1a of bytes (the logits' hash both runs print). */
CNN_FN uint32_t cnn_fnv1a(const void *p, size_t n, uint32_t h)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

/* One rank: conv, pool and linear through the single-rank kernels. */
CNN_FN int cnn_forward_ref(const cnn_q8 *m, const int8_t *img, int8_t *logits, cnn_work *w)
{
    int32_t xs[4] = {1, 1, CNN_HW, CNN_HW}, ws[4] = {CNN_C, 1, 3, 3}, cs[4] = {1, CNN_C, CNN_HW, CNN_HW},
            ps[4] = {1, CNN_C, CNN_P, CNN_P}, nb = CNN_C;
    mb_tensor x, wt, b, y, p;
    int rc;
    mb_tensor_init(&x, (void *)(uintptr_t)img, MB_I8, 4, xs);
    mb_tensor_init(&wt, (void *)(uintptr_t)m->cw, MB_I8, 4, ws);
    mb_tensor_init(&b, (void *)(uintptr_t)m->cb, MB_I32, 1, &nb);
    mb_tensor_init(&y, w->conv, MB_I8, 4, cs);
    mb_tensor_init(&p, w->pool, MB_I8, 4, ps);
    if ((rc = dt_conv2d_q8_ref(&cnn_conv, &x, &wt, &b, m->cq, CNN_C, 1, &y))) return rc;
    if ((rc = dt_maxpool2d_ref(&cnn_pool, &y, &p))) return rc;
    memset(w->acc, 0, sizeof w->acc);
    cnn_linear_acc(m, w->pool, 0, CNN_FEAT, w->acc);
    cnn_logits(m, w->acc, logits);
    return 0;
}

/* The image's rows sharded over c's 1-D mesh (img: the whole image; each rank reads only
   its rows). Every rank gets the same logits. */
CNN_FN int cnn_forward_sharded(dt_comm *c, const cnn_q8 *m, const int8_t *img, int8_t *logits, cnn_work *w)
{
    static const int32_t xs[4] = {1, 1, CNN_HW, CNN_HW}, ws[4] = {CNN_C, 1, 3, 3};
    dt_placement sh[1] = {DT_SHARD(2)}, rep[1] = {DT_REPLICATE()};
    const dt_mesh *mesh = c->mesh;
    dt_tensor x, wt, y;
    mb_tensor gx, b, p;
    dt_spec ps;
    int32_t ls[4], off[4], nb = CNN_C, ch;
    size_t need;
    int rc;
    if ((rc = dt_spec_init(&x.spec, mesh, sh, 1, MB_I8, 4, xs, NULL)) ||
        (rc = dt_spec_init(&wt.spec, mesh, rep, 1, MB_I8, 4, ws, NULL)))
        return rc;
    mb_tensor_init(&gx, (void *)(uintptr_t)img, MB_I8, 4, xs);
    if ((rc = dt_local_view(&x.spec, mesh->rank, &gx, &x.local))) return rc;
    mb_tensor_init(&wt.local, (void *)(uintptr_t)m->cw, MB_I8, 4, ws);
    mb_tensor_init(&b, (void *)(uintptr_t)m->cb, MB_I32, 1, &nb);
    /* conv + ReLU: its rows follow torch.chunk of the output height (28 on 4: 7 each) */
    if ((rc = dt_conv2d_out_spec(&cnn_conv, &x.spec, &wt.spec, &y.spec)) ||
        (rc = dt_local_shape(&y.spec, mesh->rank, ls, NULL)) ||
        (rc = mb_tensor_init(&y.local, w->conv, MB_I8, 4, ls)) ||
        (rc = dt_conv2d_scratch_bytes(&cnn_conv, &x.spec, &wt.spec, &need)))
        return rc;
    if (need > sizeof w->scratch) return DT_ERR_TOO_SMALL;
    if ((rc = dt_conv2d_q8(c, &cnn_conv, &x, &wt, &b, m->cq, CNN_C, 1, NULL, &y.local, w->scratch, need))) return rc;
    /* max pool on the conv's row shards (14 rows on 4: 4, 4, 4, 2) */
    if ((rc = dt_conv2d_out_spec(&cnn_pool, &y.spec, NULL, &ps)) || (rc = dt_local_shape(&ps, mesh->rank, ls, off)) ||
        (rc = mb_tensor_init(&p, w->pool, MB_I8, 4, ls)) ||
        (rc = dt_conv2d_scratch_bytes(&cnn_pool, &y.spec, NULL, &need)))
        return rc;
    if (need > sizeof w->scratch) return DT_ERR_TOO_SMALL;
    if ((rc = dt_maxpool2d(c, &cnn_pool, &y, NULL, &p, w->scratch, need))) return rc;
    /* this rank's features (its pooled rows of every channel): a partial int32 sum */
    memset(w->acc, 0, sizeof w->acc);
    for (ch = 0; ch < CNN_C; ch++)
        cnn_linear_acc(m, w->pool + (size_t)ch * ls[2] * CNN_P, ch * CNN_P * CNN_P + off[2] * CNN_P, ls[2] * CNN_P,
                       w->acc);
    if ((rc = pg_all_reduce(dt_comm_group(c, 0), w->acc, w->acc, CNN_OUT, MB_I32, PG_SUM))) return rc;
    cnn_logits(m, w->acc, logits);
    return 0;
}
#endif
