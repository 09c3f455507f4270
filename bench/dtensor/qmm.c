/* qmm.c — `scons bench`: int8 mm vs f32 mm on the host, one thread. dtensor.h's int8 mm
   (dt_qmm_ref: int32 accumulation by dt_qmm_acc, then TFLite's fixed-point
   requantization with per-channel multipliers) beside its f32 mm kernel
   (dt_kernel_ref(DT_ATEN_MM), the blocked reference matmul) on the same shapes, square
   256 and 512; also the int32 accumulation alone (what requantization costs), and int8
   linear's layout (w [N,K], k contiguous: dot products) through the same call. Each
   repeat times one call of each, alternating (the machine is shared: both see the same
   load); rows are medians. One JSON row per measurement (DESIGN.md). No assertions. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#include "dtensor_ops.h"
#include "dtensor_quant.h"
#include "bench_time.h"

#define NMAX    512
#define REPEATS 9
static int8_t qa[NMAX * NMAX], qb[NMAX * NMAX], qy[NMAX * NMAX];
static int32_t acc[NMAX * NMAX];
static float fa[NMAX * NMAX], fb[NMAX * NMAX], fy[NMAX * NMAX];
static dt_qmul qm[NMAX];

static void row(const char *cas, const char *metric, const char *unit, double ours, const char *peer, double pv)
{
    printf("{\"bench\": \"dtensor_qmm\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", \"ours\": %.3f, "
           "\"peer\": \"%s\", \"peer_value\": %.3f}\n",
           cas, metric, unit, ours, peer, pv);
}

int main(void)
{
    static const int sizes[2] = {256, 512};
    static const char *const f32_peer = "f32 mm (dt_kernel_ref DT_ATEN_MM)";
    uint32_t x = 12345u;
    int s, r, i;
    for (i = 0; i < NMAX * NMAX; i++) {
        x = x * 1664525u + 1013904223u;
        qa[i] = (int8_t)(x >> 24);
        fa[i] = (float)qa[i] * 0.01f;
        x = x * 1664525u + 1013904223u;
        qb[i] = (int8_t)(x >> 24);
        fb[i] = (float)qb[i] * 0.02f;
    }
    for (i = 0; i < NMAX; i++)
        if (dt_quantize_multiplier(0.0001 + 0.000001 * i, &qm[i])) return 1;
    for (s = 0; s < 2; s++) {
        int n = sizes[s];
        int32_t sh[2];
        mb_tensor ta, tb, tbt, ty, tacc, fta, ftb, fty;
        const mb_tensor *fin[2];
        double tq[REPEATS], tacc_us[REPEATS], tf[REPEATS], tlin[REPEATS], q, a, f, l, gmac = (double)n * n * n / 1e3;
        char cas[96];
        sh[0] = sh[1] = n;
        mb_tensor_init(&ta, qa, MB_I8, 2, sh);
        mb_tensor_init(&tb, qb, MB_I8, 2, sh);
        tbt = tb; /* linear's weight layout: b = w^T, w [N,K] row-major (k contiguous) */
        tbt.stride[0] = 1;
        tbt.stride[1] = n;
        mb_tensor_init(&ty, qy, MB_I8, 2, sh);
        mb_tensor_init(&tacc, acc, MB_I32, 2, sh);
        mb_tensor_init(&fta, fa, MB_F32, 2, sh);
        mb_tensor_init(&ftb, fb, MB_F32, 2, sh);
        mb_tensor_init(&fty, fy, MB_F32, 2, sh);
        fin[0] = &fta;
        fin[1] = &ftb;
        /* warm-up: page in every buffer */
        if (dt_qmm_ref(&ta, &tb, qm, n, &ty, acc, sizeof acc) || dt_kernel_ref(DT_ATEN_MM, NULL, &fty, fin, 2))
            return 1;
        for (r = 0; r < REPEATS; r++) {
            double t0 = now_us();
            dt_qmm_ref(&ta, &tb, qm, n, &ty, acc, sizeof acc);
            tq[r] = now_us() - t0;
            t0 = now_us();
            dt_kernel_ref(DT_ATEN_MM, NULL, &fty, fin, 2);
            tf[r] = now_us() - t0;
            t0 = now_us();
            dt_qmm_acc(&ta, &tb, &tacc);
            tacc_us[r] = now_us() - t0;
            t0 = now_us();
            dt_qmm_ref(&ta, &tbt, qm, n, &ty, acc, sizeof acc);
            tlin[r] = now_us() - t0;
        }
        q = median(tq, REPEATS);
        a = median(tacc_us, REPEATS);
        f = median(tf, REPEATS);
        l = median(tlin, REPEATS);
        snprintf(cas, sizeof cas, "int8 mm %dx%dx%d (requant per channel)", n, n, n);
        row(cas, "time_us", "us", q, f32_peer, f);
        row(cas, "speedup_x", "x", f / q, "f32 mm = 1", 1.0);
        row(cas, "gmacs", "GMAC/s", gmac / q, f32_peer, gmac / f);
        snprintf(cas, sizeof cas, "int8 mm %dx%dx%d int32 accumulation only", n, n, n);
        row(cas, "time_us", "us", a, f32_peer, f);
        snprintf(cas, sizeof cas, "int8 linear %dx%dx%d (w [N,K]: dot products)", n, n, n);
        row(cas, "time_us", "us", l, f32_peer, f);
        row(cas, "speedup_x", "x", f / l, "f32 mm = 1", 1.0);
    }
    return 0;
}
