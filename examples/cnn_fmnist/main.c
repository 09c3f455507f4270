/* examples/cnn_fmnist — `scons cnn`: a small CNN trained data-parallel on Fashion-MNIST,
   then quantized to int8 and run spatially sharded (issue #7 item 6).

   Model: conv 1->8 3x3 padding 1, ReLU, max pool 2x2, linear 1568 -> 10 (dtensor.h's
   conv2d / max pool kernels and their backward). Training: 4 pg_pthread ranks, each with
   its own copy of the parameters, a global batch of 64 sharded 16 per rank (the conv's
   input Shard(0): dt_conv2d runs the local kernel), gradients averaged with one
   pg_all_reduce(AVG) per step, SGD with momentum: every rank keeps identical parameters.
   Then post-training quantization as torch's symmetric observers (dtensor_quant.h):
   image scale 1/127.5, per-channel int8 weights, int32 biases, output scales from 2,000
   training images, fixed-point multipliers. Prints f32 and int8 test accuracy, checks that
   the int8 CNN spatially sharded over 4 pg_pthread ranks (examples/cnn_fmnist/cnn.h:
   halo exchanges, int32 partial logits all-reduced before requantization) gives the
   single-rank int8 logits bit for bit, and prints the single-rank int8 run's
   `predictions:` and `logits fnv-1a:` of the first 100 test images: the bare-metal
   firmware (riscv_smp/, 4 harts) must print the same. Writes cnn_model.h and
   cnn_test100.h into argv[1] (default build/cnn) for it. Needs dataset-fashion-mnist. */
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
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_QCONV_IMPLEMENTATION
#include "dtensor_qconv.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "cnn.h"

#define DATA_DIR "/usr/share/datasets/fashion-mnist/"
#define NTRAIN   60000
#define NTEST    10000
#define RANKS    4
#define BATCH    64
#define LOCAL    (BATCH / RANKS)
#define EPOCHS   1
#define LR       0.05f
#define MOMENTUM 0.9f
#define NCAL     2000
#define NPIX     (CNN_HW * CNN_HW)
/* parameters in one vector: conv weight, conv bias, linear weight, linear bias */
#define P_CW     0
#define P_CB     (P_CW + CNN_C * 9)
#define P_LW     (P_CB + CNN_C)
#define P_LB     (P_LW + CNN_OUT * CNN_FEAT)
#define NPARAM   (P_LB + CNN_OUT)

static unsigned char train_img[NTRAIN][NPIX], test_img[NTEST][NPIX], train_lab[NTRAIN], test_lab[NTEST];
static int perm[NTRAIN];
static float param[RANKS][NPARAM], grad[RANKS][NPARAM], mom[RANKS][NPARAM];

/* per-rank activations of its 16 images */
typedef struct act {
    float x[LOCAL * NPIX], conv[LOCAL * CNN_C * NPIX], pool[LOCAL * CNN_FEAT];
    float gpool[LOCAL * CNN_FEAT], gconv[LOCAL * CNN_C * NPIX], logit[LOCAL * CNN_OUT];
} act;
static act acts[RANKS];
static dt_mesh meshes[RANKS];
static dt_comm comms[RANKS];
static double loss_sum[RANKS];

static int read_gz(const char *name, unsigned char *dst, size_t n, size_t header)
{
    char path[256];
    unsigned char skip[16];
    gzFile f;
    int ok;
    snprintf(path, sizeof path, "%s%s", DATA_DIR, name);
    if (!(f = gzopen(path, "rb"))) return -1;
    ok = gzread(f, skip, (unsigned)header) == (int)header && gzread(f, dst, (unsigned)n) == (int)n;
    gzclose(f);
    return ok ? 0 : -1;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

/* f32 forward of n images x (n,1,28,28) with parameters p into a. */
static int forward(const float *p, int n, act *a)
{
    int32_t xs[4] = {n, 1, CNN_HW, CNN_HW}, ws[4] = {CNN_C, 1, 3, 3}, cs[4] = {n, CNN_C, CNN_HW, CNN_HW},
            ps[4] = {n, CNN_C, CNN_P, CNN_P}, nb = CNN_C;
    mb_tensor x, w, b, y, q;
    int rc, i, k;
    size_t e;
    mb_tensor_init(&x, a->x, MB_F32, 4, xs);
    mb_tensor_init(&w, (void *)(uintptr_t)(p + P_CW), MB_F32, 4, ws);
    mb_tensor_init(&b, (void *)(uintptr_t)(p + P_CB), MB_F32, 1, &nb);
    mb_tensor_init(&y, a->conv, MB_F32, 4, cs);
    mb_tensor_init(&q, a->pool, MB_F32, 4, ps);
    if ((rc = dt_conv2d_ref(&cnn_conv, &x, &w, &b, &y))) return rc;
    for (e = 0; e < (size_t)n * CNN_C * NPIX; e++) a->conv[e] = a->conv[e] > 0.0f ? a->conv[e] : 0.0f;
    if ((rc = dt_maxpool2d_ref(&cnn_pool, &y, &q))) return rc;
    for (i = 0; i < n; i++)
        for (k = 0; k < CNN_OUT; k++) {
            const float *wr = p + P_LW + (size_t)k * CNN_FEAT, *f = a->pool + (size_t)i * CNN_FEAT;
            float s = p[P_LB + k];
            int j;
            for (j = 0; j < CNN_FEAT; j++) s += wr[j] * f[j];
            a->logit[i * CNN_OUT + k] = s;
        }
    return 0;
}

static int argmax_f(const float *v)
{
    int i, b = 0;
    for (i = 1; i < CNN_OUT; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

static void load_images(float *dst, const unsigned char (*img)[NPIX], const int *idx, int n)
{
    int i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < NPIX; j++) dst[(size_t)i * NPIX + j] = (float)img[idx ? idx[i] : i][j] / 255.0f;
}

/* One data-parallel step on rank me: its 16 images of the batch at `base`. */
static int train_step(pg_group *g, int me, int base)
{
    float *p = param[me], *gr = grad[me];
    act *a = &acts[me];
    int32_t xs[4] = {LOCAL, 1, CNN_HW, CNN_HW}, ws[4] = {CNN_C, 1, 3, 3}, cs[4] = {LOCAL, CNN_C, CNN_HW, CNN_HW},
            ps[4] = {LOCAL, CNN_C, CNN_P, CNN_P}, gxs[4] = {BATCH, 1, CNN_HW, CNN_HW}, nb = CNN_C;
    dt_placement s0[1] = {DT_SHARD(0)}, rep[1] = {DT_REPLICATE()};
    dt_tensor x, w;
    mb_tensor b, y, q, gq, gy, gw, gb;
    int rc, i, k, j;
    size_t e;
    /* forward: the batch Shard(0) over the ranks (dt_conv2d: local kernel, no communication) */
    load_images(a->x, (const unsigned char(*)[NPIX])train_img, perm + base + me * LOCAL, LOCAL);
    dt_spec_init(&x.spec, &meshes[me], s0, 1, MB_F32, 4, gxs, NULL);
    dt_spec_init(&w.spec, &meshes[me], rep, 1, MB_F32, 4, ws, NULL);
    mb_tensor_init(&x.local, a->x, MB_F32, 4, xs);
    mb_tensor_init(&w.local, p + P_CW, MB_F32, 4, ws);
    mb_tensor_init(&b, p + P_CB, MB_F32, 1, &nb);
    mb_tensor_init(&y, a->conv, MB_F32, 4, cs);
    mb_tensor_init(&q, a->pool, MB_F32, 4, ps);
    if ((rc = dt_conv2d(&comms[me], &cnn_conv, &x, &w, &b, NULL, &y, NULL, 0))) return rc;
    for (e = 0; e < (size_t)LOCAL * CNN_C * NPIX; e++) a->conv[e] = a->conv[e] > 0.0f ? a->conv[e] : 0.0f;
    if ((rc = dt_maxpool2d_ref(&cnn_pool, &y, &q))) return rc;
    memset(gr, 0, sizeof grad[me]);
    memset(a->gpool, 0, sizeof a->gpool);
    for (i = 0; i < LOCAL; i++) {
        const float *f = a->pool + (size_t)i * CNN_FEAT;
        float z[CNN_OUT], mx, s = 0.0f;
        int lab = train_lab[perm[base + me * LOCAL + i]];
        for (k = 0; k < CNN_OUT; k++) {
            const float *wr = p + P_LW + (size_t)k * CNN_FEAT;
            z[k] = p[P_LB + k];
            for (j = 0; j < CNN_FEAT; j++) z[k] += wr[j] * f[j];
        }
        mx = z[0];
        for (k = 1; k < CNN_OUT; k++) mx = z[k] > mx ? z[k] : mx;
        for (k = 0; k < CNN_OUT; k++) s += expf(z[k] - mx);
        loss_sum[me] += log(s) - (z[lab] - mx);
        for (k = 0; k < CNN_OUT; k++) { /* dL/dz of the local mean: the all-reduce averages */
            float dz = (expf(z[k] - mx) / s - (k == lab)) / LOCAL;
            float *gw_row = gr + P_LW + (size_t)k * CNN_FEAT, *gp = a->gpool + (size_t)i * CNN_FEAT;
            const float *wr = p + P_LW + (size_t)k * CNN_FEAT;
            gr[P_LB + k] += dz;
            for (j = 0; j < CNN_FEAT; j++) {
                gw_row[j] += dz * f[j];
                gp[j] += dz * wr[j];
            }
        }
    }
    mb_tensor_init(&gq, a->gpool, MB_F32, 4, ps);
    mb_tensor_init(&gy, a->gconv, MB_F32, 4, cs);
    mb_tensor_init(&gw, gr + P_CW, MB_F32, 4, ws);
    mb_tensor_init(&gb, gr + P_CB, MB_F32, 1, &nb);
    if ((rc = dt_maxpool2d_backward(&cnn_pool, &y, &gq, &gy))) return rc;
    for (e = 0; e < (size_t)LOCAL * CNN_C * NPIX; e++)
        if (a->conv[e] <= 0.0f) a->gconv[e] = 0.0f; /* ReLU */
    if ((rc = dt_conv2d_backward(&cnn_conv, &x.local, &w.local, &gy, NULL, &gw, &gb))) return rc;
    /* data parallel: average the gradients of the 4 shards, then the same update everywhere */
    if ((rc = pg_all_reduce(g, gr, gr, NPARAM, MB_F32, PG_AVG))) return rc;
    for (j = 0; j < NPARAM; j++) {
        mom[me][j] = MOMENTUM * mom[me][j] + gr[j];
        p[j] -= LR * mom[me][j];
    }
    return 0;
}

static int train_body(pg_group *g, void *arg)
{
    int me = pg_rank(g), ep, base, rc;
    int32_t ms[1] = {RANKS};
    (void)arg;
    if ((rc = dt_mesh_init(&meshes[me], 1, ms, NULL, me)) || (rc = dt_comm_init(&comms[me], &meshes[me], g))) return rc;
    for (ep = 0; ep < EPOCHS; ep++) {
        if ((rc = pg_barrier(g))) return rc;
        if (me == 0) { /* rank 0 shuffles between the barriers */
            int i;
            for (i = NTRAIN - 1; i > 0; i--) {
                int j = (int)(rnd() % (uint32_t)(i + 1)), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        }
        if ((rc = pg_barrier(g))) return rc;
        loss_sum[me] = 0;
        for (base = 0; base + BATCH <= NTRAIN; base += BATCH)
            if ((rc = train_step(g, me, base))) return rc;
        if (me == 0) printf("epoch %d: mean loss %.4f (rank 0's shards)\n", ep + 1, loss_sum[0] / (NTRAIN / RANKS));
    }
    return 0;
}

/* ---- int8 ---- */
static int8_t q_cw[CNN_C * 9], q_lw[CNN_OUT * CNN_FEAT], q_test[NTEST][NPIX];
static int32_t q_cb[CNN_C], q_lb[CNN_OUT];
static dt_qmul q_cq[CNN_C], q_lq[CNN_OUT];
static cnn_q8 model = {q_cw, q_cb, q_cq, q_lw, q_lb, q_lq};
static cnn_work work[RANKS];
static int8_t logits_ref[100][CNN_OUT];
static int sharded_bad = -1;

static int quantize(const float *p, float *acc_f32, float *acc_q8)
{
    static act cal;
    float sx, sc[CNN_C], sl[CNN_OUT], s1, s2, amax1 = 0.0f, amax2 = 0.0f;
    int32_t ws[4] = {CNN_C, 1, 3, 3}, lws[2] = {CNN_OUT, CNN_FEAT}, ims[4] = {1, 1, CNN_HW, CNN_HW};
    mb_tensor t, tq;
    int i, j, k, rc, ok_f = 0, ok_q = 0;
    size_t e;
    /* calibration: amax of the ReLU'd conv output and of the logits on NCAL training images */
    for (i = 0; i < NCAL; i += LOCAL) {
        load_images(cal.x, (const unsigned char(*)[NPIX])train_img, perm + i, LOCAL);
        if ((rc = forward(p, LOCAL, &cal))) return rc;
        for (e = 0; e < sizeof cal.conv / sizeof cal.conv[0]; e++) amax1 = cal.conv[e] > amax1 ? cal.conv[e] : amax1;
        for (e = 0; e < sizeof cal.logit / sizeof cal.logit[0]; e++)
            amax2 = fabsf(cal.logit[e]) > amax2 ? fabsf(cal.logit[e]) : amax2;
    }
    if ((rc = dt_q8_scale(1.0f, &sx)) || (rc = dt_q8_scale(amax1, &s1)) || (rc = dt_q8_scale(amax2, &s2))) return rc;
    mb_tensor_init(&t, (void *)(uintptr_t)(p + P_CW), MB_F32, 4, ws);
    mb_tensor_init(&tq, q_cw, MB_I8, 4, ws);
    if ((rc = dt_quantize_tensor(&t, 0, sc, &tq))) return rc;
    mb_tensor_init(&t, (void *)(uintptr_t)(p + P_LW), MB_F32, 2, lws);
    mb_tensor_init(&tq, q_lw, MB_I8, 2, lws);
    if ((rc = dt_quantize_tensor(&t, 0, sl, &tq))) return rc;
    for (k = 0; k < CNN_C; k++) q_cb[k] = (int32_t)lrint((double)p[P_CB + k] / ((double)sx * sc[k]));
    for (k = 0; k < CNN_OUT; k++) q_lb[k] = (int32_t)lrint((double)p[P_LB + k] / ((double)s1 * sl[k]));
    if ((rc = dt_qmm_multipliers(sx, sc, CNN_C, s1, q_cq)) || (rc = dt_qmm_multipliers(s1, sl, CNN_OUT, s2, q_lq)))
        return rc;
    printf("int8: image scale %g, conv output scale %g, logits scale %g\n", sx, s1, s2);
    /* test set: f32 and int8 accuracy */
    for (i = 0; i < NTEST; i++) {
        int8_t lg[CNN_OUT];
        for (j = 0; j < NPIX; j++) q_test[i][j] = dt_quantize_i8((float)test_img[i][j] / 255.0f, sx);
        if ((rc = cnn_forward_ref(&model, q_test[i], lg, &work[0]))) return rc;
        ok_q += cnn_argmax(lg) == test_lab[i];
        if (i < 100) memcpy(logits_ref[i], lg, sizeof lg);
    }
    for (i = 0; i < NTEST; i += LOCAL) {
        load_images(cal.x, (const unsigned char(*)[NPIX])test_img + i, NULL, LOCAL);
        if ((rc = forward(p, LOCAL, &cal))) return rc;
        for (k = 0; k < LOCAL; k++) ok_f += argmax_f(cal.logit + k * CNN_OUT) == test_lab[i + k];
    }
    *acc_f32 = 100.0f * (float)ok_f / NTEST;
    *acc_q8 = 100.0f * (float)ok_q / NTEST;
    (void)ims;
    return 0;
}

/* The int8 CNN spatially sharded over 4 ranks: logits of the first 100 test images equal
   the single-rank ones bit for bit on every rank. */
static int sharded_body(pg_group *g, void *arg)
{
    int me = pg_rank(g), i, rc, bad = 0;
    int32_t ms[1] = {RANKS};
    (void)arg;
    if ((rc = dt_mesh_init(&meshes[me], 1, ms, NULL, me)) || (rc = dt_comm_init(&comms[me], &meshes[me], g))) return rc;
    for (i = 0; i < 100; i++) {
        int8_t lg[CNN_OUT];
        if ((rc = cnn_forward_sharded(&comms[me], &model, q_test[i], lg, &work[me]))) return rc;
        bad += memcmp(lg, logits_ref[i], sizeof lg) != 0;
    }
    if (me == 0) sharded_bad = bad;
    return bad ? 1 : 0;
}

static int write_headers(const char *dir)
{
    char path[512];
    FILE *f;
    int i, j;
    snprintf(path, sizeof path, "%s/cnn_model.h", dir);
    if (!(f = fopen(path, "w"))) return -1;
    fprintf(f, "/* written by examples/cnn_fmnist (scons cnn): the int8 CNN */\n#include \"dtensor.h\"\n");
    fprintf(f, "static const int8_t cnn_cw[%d] = {", CNN_C * 9);
    for (i = 0; i < CNN_C * 9; i++) fprintf(f, "%s%d", i ? "," : "", q_cw[i]);
    fprintf(f, "};\nstatic const int32_t cnn_cb[%d] = {", CNN_C);
    for (i = 0; i < CNN_C; i++) fprintf(f, "%s%ld", i ? "," : "", (long)q_cb[i]);
    fprintf(f, "};\nstatic const dt_qmul cnn_cq[%d] = {", CNN_C);
    for (i = 0; i < CNN_C; i++) fprintf(f, "%s{%ld,%ld}", i ? "," : "", (long)q_cq[i].mult, (long)q_cq[i].shift);
    fprintf(f, "};\nstatic const int8_t cnn_lw[%d] = {", CNN_OUT * CNN_FEAT);
    for (i = 0; i < CNN_OUT * CNN_FEAT; i++) fprintf(f, "%s%d", i ? (i % 32 ? "," : ",\n") : "", q_lw[i]);
    fprintf(f, "};\nstatic const int32_t cnn_lb[%d] = {", CNN_OUT);
    for (i = 0; i < CNN_OUT; i++) fprintf(f, "%s%ld", i ? "," : "", (long)q_lb[i]);
    fprintf(f, "};\nstatic const dt_qmul cnn_lq[%d] = {", CNN_OUT);
    for (i = 0; i < CNN_OUT; i++) fprintf(f, "%s{%ld,%ld}", i ? "," : "", (long)q_lq[i].mult, (long)q_lq[i].shift);
    fprintf(f, "};\n");
    if (fclose(f)) return -1;
    snprintf(path, sizeof path, "%s/cnn_test100.h", dir);
    if (!(f = fopen(path, "w"))) return -1;
    fprintf(f,
            "/* written by examples/cnn_fmnist: the first 100 test images (int8) and the host's "
            "int8 predictions */\nstatic const int8_t cnn_test_x[100][%d] = {\n",
            NPIX);
    for (i = 0; i < 100; i++) {
        fprintf(f, "{");
        for (j = 0; j < NPIX; j++) fprintf(f, "%s%d", j ? "," : "", q_test[i][j]);
        fprintf(f, "},\n");
    }
    fprintf(f, "};\nstatic const int cnn_host_pred[100] = {");
    for (i = 0; i < 100; i++) fprintf(f, "%s%d", i ? "," : "", cnn_argmax(logits_ref[i]));
    fprintf(f, "};\n");
    return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv)
{
    static pg_pthread_world world;
    const char *out = argc > 1 ? argv[1] : "build/cnn";
    float acc_f, acc_q;
    int i, rc;
    struct timespec t0, t1;
    if (read_gz("train-images-idx3-ubyte.gz", &train_img[0][0], sizeof train_img, 16) ||
        read_gz("train-labels-idx1-ubyte.gz", train_lab, sizeof train_lab, 8) ||
        read_gz("t10k-images-idx3-ubyte.gz", &test_img[0][0], sizeof test_img, 16) ||
        read_gz("t10k-labels-idx1-ubyte.gz", test_lab, sizeof test_lab, 8)) {
        fprintf(stderr, "cnn_fmnist: cannot read %s (apt-get install dataset-fashion-mnist)\n", DATA_DIR);
        return 1;
    }
    for (i = 0; i < NTRAIN; i++) perm[i] = i;
    for (i = 0; i < NPARAM; i++) { /* He-style uniform init, the same on every rank */
        float lim = i < P_CB ? 0.8f : i < P_LW ? 0.0f : i < P_LB ? 0.06f : 0.0f;
        param[0][i] = lim * ((float)(rnd() >> 8) / 16777216.0f * 2.0f - 1.0f);
    }
    for (i = 1; i < RANKS; i++) memcpy(param[i], param[0], sizeof param[0]);
    printf("cnn_fmnist: conv 1->8 3x3 + ReLU + max pool 2x2 + linear 1568->10, %d epochs, batch %d "
           "data-parallel on %d pg_pthread ranks (%d images each), gradients all-reduced (avg)\n",
           EPOCHS, BATCH, RANKS, LOCAL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((rc = pg_pthread_run(&world, RANKS, train_body, NULL))) {
        fprintf(stderr, "cnn_fmnist: training failed: %d\n", rc);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (i = 1; i < RANKS; i++)
        if (memcmp(param[i], param[0], sizeof param[0])) {
            fprintf(stderr, "cnn_fmnist: rank %d's parameters differ from rank 0's\n", i);
            return 1;
        }
    printf("trained in %.1f s (%.0f samples/s); every rank holds the same parameters\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           EPOCHS * (double)(NTRAIN / BATCH * BATCH) /
               ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9));
    if ((rc = quantize(param[0], &acc_f, &acc_q))) {
        fprintf(stderr, "cnn_fmnist: quantization failed: %d\n", rc);
        return 1;
    }
    printf("test accuracy: f32 %.2f%%, int8 %.2f%% (10,000 images)\n", acc_f, acc_q);
    rc = pg_pthread_run(&world, RANKS, sharded_body, NULL);
    if (rc || sharded_bad) {
        fprintf(stderr, "cnn_fmnist: int8 spatially sharded on %d ranks: error %d, %d images differ\n", RANKS, rc,
                sharded_bad);
        return 1;
    }
    printf("int8 spatially sharded on %d ranks (halo exchange, int32 partial logits all-reduced): "
           "logits bit-identical to 1 rank for 100/100 images\n",
           RANKS);
    printf("predictions:");
    for (i = 0; i < 100; i++) printf(" %d", cnn_argmax(logits_ref[i]));
    printf("\nlogits fnv-1a: %08x\n", (unsigned)cnn_fnv1a(logits_ref, sizeof logits_ref, 2166136261u));
    if (mkdir(out, 0777) && errno != EEXIST) {
        fprintf(stderr, "cnn_fmnist: cannot create %s\n", out);
        return 1;
    }
    if (write_headers(out)) {
        fprintf(stderr, "cnn_fmnist: cannot write the headers into %s\n", out);
        return 1;
    }
    printf("wrote %s/cnn_model.h and %s/cnn_test100.h\n", out, out);
    return 0;
}
