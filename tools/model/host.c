/* host.c — the runner on host threads: an exported model (model.h, model_plan.h from
   tools/onnx2c.py, on the include path) on MODEL_RANKS pg_pthread ranks.

     model_host <in.npy> <out.npy> [--repeat N] [--quiet]

   in.npy: float32 (T, <the model's input shape>), T any count (the last step is padded
   with zeros); out.npy: float32 (T, <the output shape>). Prints the step's timing (wall
   clock, and each rank's thread CPU time: what the rank computed, whatever else the machine
   ran), every rank's storage from mr_query beside what the plan gave it, the predictions
   (argmax) of the first 100 samples and a hash of their outputs' bits (what the bare-metal
   runs print too). --repeat runs the whole input N times and reports the best and the
   median throughput. Exits non-zero on any error, naming the node that failed. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/model/runner.h" /* implemented in tools/model/impl.c */
#include "ports/pg_pthread.h"
#include "model.h"
#include "model_plan.h"

#define MAX_REPEAT 64

static uint64_t arena[MODEL_RANKS][MODEL_ARENA_MAX / 8 + 1], scratch[MODEL_RANKS][MODEL_SCRATCH_MAX / 8 + 1],
    execmem[MODEL_RANKS][MODEL_EXEC_MAX / 8 + 1];
static mr_rank ranks[MODEL_RANKS];
static pg_pthread_world world;
static float *input, *output;
static long nsteps, repeat = 1;
static double wall[MAX_REPEAT], cpu[MODEL_RANKS][MAX_REPEAT];

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int rank_main(pg_group *g, void *arg)
{
    int r = pg_rank(g), rc;
    long k, rep;
    mr_rank *mr = &ranks[r];
    (void)arg;
    pg_set_timeout(g, 600000);
    if ((rc = mr_init(mr, &model, r, g, arena[r], model_arena_bytes[r], scratch[r], model_scratch_bytes[r], execmem[r],
                      model_exec_bytes[r])))
        return rc;
    for (rep = 0; rep < repeat; rep++) {
        double t0, c0;
        if ((rc = pg_barrier(g))) return rc;
        t0 = now(CLOCK_MONOTONIC);
        c0 = now(CLOCK_THREAD_CPUTIME_ID);
        for (k = 0; k < nsteps; k++)
            if ((rc = mr_step(mr, input + (size_t)k * MODEL_STEP_SAMPLES * MODEL_IN_NUMEL,
                              output + (size_t)k * MODEL_STEP_SAMPLES * MODEL_OUT_NUMEL)))
                return rc;
        cpu[r][rep] = now(CLOCK_THREAD_CPUTIME_ID) - c0;
        if ((rc = pg_barrier(g))) return rc;
        if (r == 0) wall[rep] = now(CLOCK_MONOTONIC) - t0;
    }
    return 0;
}

/* A .npy file of float32, C order: its data and shape (header version 1 or 2). */
static float *read_npy(const char *path, long *dims, int *ndim)
{
    FILE *f = fopen(path, "rb");
    unsigned char pre[10];
    char *hdr = NULL, *p;
    unsigned long hlen;
    long n = 1, got;
    float *data = NULL;
    int v2;
    if (!f) return NULL;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) goto out;
    v2 = pre[6] >= 2;
    hlen = pre[8] | (unsigned long)pre[9] << 8;
    if (v2) {
        unsigned char more[2];
        if (fread(more, 1, 2, f) != 2) goto out;
        hlen |= (unsigned long)more[0] << 16 | (unsigned long)more[1] << 24;
    }
    if (hlen > 65536 || !(hdr = (char *)calloc(hlen + 1, 1)) || fread(hdr, 1, hlen, f) != hlen) goto out;
    if (!strstr(hdr, "'<f4'") || strstr(hdr, "'fortran_order': True")) {
        fprintf(stderr, "%s: float32 in C order expected (numpy: x.astype(np.float32))\n", path);
        goto out;
    }
    if (!(p = strchr(strstr(hdr, "'shape'") ? strstr(hdr, "'shape'") : hdr, '('))) goto out;
    for (*ndim = 0, p++; *ndim < 8;) {
        char *e;
        long d = strtol(p, &e, 10);
        if (e == p) break;
        dims[(*ndim)++] = d;
        n *= d;
        p = e + strspn(e, ", ");
    }
    if (!*ndim || !(data = (float *)malloc((size_t)(n ? n : 1) * sizeof(float)))) goto out;
    got = (long)fread(data, sizeof(float), (size_t)n, f);
    if (got != n) {
        free(data);
        data = NULL;
    }
out:
    free(hdr);
    fclose(f);
    return data;
}

static int write_npy(const char *path, const float *data, long count, const int32_t *shape, int nd)
{
    char hdr[256];
    int len, i;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    len = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%ld,", count);
    for (i = 0; i < nd; i++) len += snprintf(hdr + len, sizeof hdr - (size_t)len, " %d,", (int)shape[i]);
    len += snprintf(hdr + len, sizeof hdr - (size_t)len, "), }");
    while ((10 + len + 1) % 64) hdr[len++] = ' ';
    hdr[len++] = '\n';
    pre[8] = (unsigned char)(len & 0xff), pre[9] = (unsigned char)(len >> 8);
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(hdr, 1, (size_t)len, f) != (size_t)len ||
        fwrite(data, sizeof(float), (size_t)count * MODEL_OUT_NUMEL, f) != (size_t)count * MODEL_OUT_NUMEL) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    static const int32_t in_shape[] = MODEL_IN_SHAPE, out_shape[] = MODEL_OUT_SHAPE;
    long dims[8], total, k, in_numel = 1;
    int nd = 0, rc, r, quiet = 0, i;
    float *data;
    uint32_t h = 2166136261u;
    if (argc < 3) {
        fprintf(stderr, "usage: %s <in.npy> <out.npy> [--repeat N] [--quiet]\n", argv[0]);
        return 2;
    }
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
    }
    if (repeat < 1 || repeat > MAX_REPEAT) repeat = 1;
    if (!(data = read_npy(argv[1], dims, &nd))) {
        fprintf(stderr, "%s: cannot read a float32 .npy (%s)\n", argv[1], strerror(errno));
        return 2;
    }
    for (i = 1; i < nd; i++) in_numel *= dims[i];
    if (nd != MODEL_IN_NDIM + 1 || in_numel != MODEL_IN_NUMEL) {
        fprintf(stderr, "%s: shape (%ld, ...) of %ld values per sample; the model takes %d (", argv[1], dims[0],
                in_numel, MODEL_IN_NUMEL);
        for (i = 0; i < MODEL_IN_NDIM; i++) fprintf(stderr, "%s%d", i ? ", " : "", (int)in_shape[i]);
        fprintf(stderr, ")\n");
        return 2;
    }
    total = dims[0];
    nsteps = (total + MODEL_STEP_SAMPLES - 1) / MODEL_STEP_SAMPLES;
    input = (float *)calloc((size_t)(nsteps * MODEL_STEP_SAMPLES) * MODEL_IN_NUMEL, sizeof(float));
    output = (float *)calloc((size_t)(nsteps * MODEL_STEP_SAMPLES) * MODEL_OUT_NUMEL, sizeof(float));
    if (!input || !output) return 2;
    memcpy(input, data, (size_t)total * MODEL_IN_NUMEL * sizeof(float));
    free(data);
    rc = pg_pthread_run(&world, MODEL_RANKS, rank_main, NULL);
    if (rc) {
        fprintf(stderr, "%s: error %d (%s)", MODEL_NAME, rc, splitcore_strerror(rc));
        for (r = 0; r < MODEL_RANKS; r++) {
            const mr_rank *m = &ranks[r];
            if (m->err_node >= 0)
                fprintf(stderr, "; rank %d at node %d (%s)", r, (int)m->err_node, model.names[m->err_node]);
            if (MODEL_PIPELINE && m->ex.err)
                fprintf(stderr, "; rank %d: pipeline error %d (%s) on rank %d", r, (int)m->ex.err,
                        splitcore_strerror(m->ex.err), (int)m->ex.err_rank);
        }
        fprintf(stderr, "\n");
        return 1;
    }
    if (write_npy(argv[2], output, total, out_shape, MODEL_OUT_NDIM)) {
        fprintf(stderr, "%s: cannot write\n", argv[2]);
        return 2;
    }
    {
        double w[MAX_REPEAT], best, med, c[MAX_REPEAT];
        memcpy(w, wall, sizeof(double) * (size_t)repeat);
        qsort(w, (size_t)repeat, sizeof(double), cmp_double);
        best = w[0], med = w[repeat / 2];
        printf("%s: %d rank%s, %s mode, %s, %ld samples in %ld steps of %d: %.1f samples/s (best of %ld), %.1f "
               "(median)\n",
               MODEL_NAME, MODEL_RANKS, MODEL_RANKS > 1 ? "s" : "", MODEL_PIPELINE ? "pipeline" : "tensor",
               MODEL_DTYPE == MB_I8 ? "int8" : "f32", total, nsteps, MODEL_STEP_SAMPLES,
               (double)(nsteps * MODEL_STEP_SAMPLES) / best, repeat, (double)(nsteps * MODEL_STEP_SAMPLES) / med);
        for (r = 0; r < MODEL_RANKS; r++) {
            mr_sizes s;
            memcpy(c, cpu[r], sizeof(double) * (size_t)repeat);
            qsort(c, (size_t)repeat, sizeof(double), cmp_double);
            mr_query(&model, r, &s);
            if (!quiet)
                printf("  rank %d: thread CPU %.1f ms per pass (median), %.0f %% of the median wall time; storage "
                       "(mr_query) arena %u, scratch %u, executor %u B\n",
                       r, c[repeat / 2] * 1e3, 100.0 * c[repeat / 2] / med, (unsigned)s.arena, (unsigned)s.scratch,
                       (unsigned)s.exec);
        }
    }
    if (!quiet) {
        printf("predictions:");
        for (k = 0; k < total && k < 100; k++)
            printf(" %d", mr_argmax(output + (size_t)k * MODEL_OUT_NUMEL, MODEL_OUT_NUMEL));
        h = mr_fnv1a(output, (size_t)(total < 100 ? total : 100) * MODEL_OUT_NUMEL * sizeof(float), h);
        printf("\nlogits fnv-1a: %08x\n", (unsigned)h);
    }
    free(input);
    free(output);
    return 0;
}
