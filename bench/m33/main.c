/* main.c — `scons bench`: the predicted two-core speedup of the dual Cortex-M33 demos.

   The FW_COST builds of the demo firmwares (examples/pipeline_mnist/sse200_smp,
   examples/cnn_fmnist/sse200_smp) ran under QEMU -icount shift=0 on mps2-an521, where one
   instruction is 1 ns of guest time, and printed `cost: <name> <value>` lines measured with
   each part alone on one core while the other slept: argv[1] is the MLP's run log, argv[2]
   the CNN's. From them:
     MLP   the 2-stage forward-only plan of the demo (8 microbatches of 13 images, the
           balance the host chose) goes to pp_simulate with each stage's F (its layers and
           callbacks) and the send / receive of an activation (pg_send / pg_recv in pieces of
           pg_max_msg, as the executor moves it): predicted time on 2 cores, against both
           stages on one core (8 x (F0 + F1), nothing to move). The partition's bound is
           total / largest stage cost, what a pipeline's throughput can reach; the plan's
           fill and drain (one microbatch of the other stage) and the transfers keep it below.
     CNN   split-work model: one image on 1 core is the single-rank forward
           (cnn_forward_ref); on 2 cores it is the slower rank's cnn_forward_sharded (its
           rows' conv and pool, its features' partial logits, its halo exchange and
           all-reduce messages with the peer's already in the ring): T1 / max(T_rank). The
           waiting at the exchanges and the doorbell's latency are not modelled.
   Beside each prediction, the host's measured speedup of the same work (same shapes and
   code, random weights): the 2-stage pipeline with pp_exec on 2 pg_pthread ranks against
   one thread running the 7 layers over the 8 microbatches, and cnn_forward_sharded on 2
   pg_pthread ranks against cnn_forward_ref, each the median of REPEATS alternating blocks,
   in wall time and in thread CPU time (1 thread / the slower rank: what two otherwise idle
   cores would give on a loaded machine; a rank's waits count as its time).
   One JSON row per figure (DESIGN.md); no assertions: the targets (CNN >= 1.9x,
   the pipeline within 5 % of its bound) are printed as plain lines. */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#include "dtensor.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "examples/pipeline_mnist/mlp.h"
#include "examples/cnn_fmnist/cnn.h"
#include "bench/dtensor/bench_time.h"

#define REPEATS 21
#define M       8  /* microbatches of the demo's plan */
#define ROWS    13 /* images per microbatch */
#define UNIT    64 /* instructions per pp_simulate time unit (its times are 32-bit) */
#define NIMG    100

/* ---- the firmware's figures ---- */
typedef struct cost {
    const char *name;
    double v;
    int found;
} cost;

/* Reads `cost: <name> <value...>` lines of log into c[] (the first value). 0 when all found. */
static int read_costs(const char *log, cost *c, int n)
{
    char line[512];
    int i, missing = 0;
    FILE *f = fopen(log, "r");
    if (!f) {
        fprintf(stderr, "m33: cannot read %s\n", log);
        return -1;
    }
    while (fgets(line, sizeof line, f))
        for (i = 0; i < n; i++) {
            size_t k = strlen(c[i].name);
            if (!strncmp(line, "cost: ", 6) && !strncmp(line + 6, c[i].name, k) && line[6 + k] == ' ') {
                c[i].v = atof(line + 7 + k);
                c[i].found = 1;
            }
        }
    fclose(f);
    for (i = 0; i < n; i++)
        if (!c[i].found) {
            fprintf(stderr, "m33: no `cost: %s` line in %s\n", c[i].name, log);
            missing = 1;
        }
    return missing ? -1 : 0;
}

static void row(const char *cas, const char *metric, const char *unit, double ours, const char *peer, double pv)
{
    printf("{\"bench\": \"m33\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", \"ours\": %.4f, "
           "\"peer\": \"%s\", \"peer_value\": %.4f}\n",
           cas, metric, unit, ours, peer, pv);
}

static void die(int rc, const char *what)
{
    fprintf(stderr, "m33: %s: %d\n", what, rc);
    exit(1);
}

static double thread_us(void) /* this thread's CPU time */
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cpu[2]; /* each rank's CPU time in its last block (thread_us) */

/* The host's speedup of one piece of work: REPEATS blocks of `two` (2 pg_pthread ranks, each
   filling cpu[rank]) alternating with `one` (this thread), so both see the same load; the
   median time of `one` over the median of `two`, in wall time and in CPU time (the slower
   rank's). */
static void host_speedup(pg_pthread_world *w, int (*two)(pg_group *g, void *arg), void *arg, void (*one)(void *arg),
                         double *wall, double *cpus)
{
    double t[2][REPEATS], c[2][REPEATS];
    int k, rc;
    for (k = 0; k < REPEATS; k++) {
        double t0 = now_us();
        if ((rc = pg_pthread_run(w, 2, two, arg))) die(rc, "2 ranks");
        t[1][k] = now_us() - t0;
        c[1][k] = cpu[0] > cpu[1] ? cpu[0] : cpu[1];
        t0 = now_us();
        c[0][k] = thread_us();
        one(arg);
        c[0][k] = thread_us() - c[0][k];
        t[0][k] = now_us() - t0;
    }
    *wall = median(t[0], REPEATS) / median(t[1], REPEATS);
    *cpus = median(c[0], REPEATS) / median(c[1], REPEATS);
}

/* The predicted speedup on the M33 (`model`) beside the host's (wall, thread CPU time): a
   line and two rows. */
static void host_rows(const char *work, const char *blocks, const char *model, double m33, double wall, double cpus)
{
    char cas[512];
    printf("%s on the host (%s per block, median of %d): 1 thread / 2 pg_pthread ranks: %.3fx wall, %.3fx in CPU "
           "time (1 thread / the slower rank)\n",
           work, blocks, REPEATS, wall, cpus);
    snprintf(cas, sizeof cas, "%s: 1 core / 2 cores (Cortex-M33: %s)", work, model);
    row(cas, "speedup", "x", m33, "host, 2 pg_pthread ranks vs 1 thread (measured)", wall);
    snprintf(cas, sizeof cas,
             "%s: 1 core / 2 cores, the host in CPU time (1 thread / the slower rank: load-independent)", work);
    row(cas, "speedup", "x", m33, "host, 2 pg_pthread ranks vs 1 thread (thread CPU time)", cpus);
}

static uint32_t lcg = 12345;
static float frand(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return (float)((lcg >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static int8_t i8(int bits) /* uniform in [-2^(bits-1), 2^(bits-1)) */
{
    lcg = lcg * 1664525u + 1013904223u;
    return (int8_t)(((int32_t)(lcg >> 24) - 128) >> (8 - bits));
}

/* ---- the MLP: the demo's 2-stage plan, predicted on the M33 and measured on the host ---- */
static pp_action store[2][256];
static pp_plan sched, plan;
static pp_table tab[2];
static int32_t balance[2];
static float W[4][784 * 256], B[4][256], X[M * ROWS * MLP_IN], OUT[M * ROWS * MLP_OUT];
static mlp_linear lin[4];
static pp_layer layers[MLP_LAYERS];
static pp_exec_cfg cfg;
static uint64_t mem[2][(1 << 20) / 8];
static float act[2][ROWS * 256];

static int in_cb(void *user, int mb, mb_tensor *x)
{
    (void)user;
    memcpy(x->data, X + (size_t)mb * ROWS * MLP_IN, sizeof(float) * ROWS * MLP_IN);
    return 0;
}

static int out_cb(void *user, int mb, const mb_tensor *y)
{
    (void)user;
    memcpy(OUT + (size_t)mb * ROWS * MLP_OUT, y->data, sizeof(float) * ROWS * MLP_OUT);
    return 0;
}

static int mlp_body(pg_group *g, void *arg)
{
    pp_exec e;
    int r = pg_rank(g), rc, i, n = *(const int *)arg;
    double t0 = thread_us();
    if ((rc = pp_exec_init(&e, &cfg, &tab[r], g, mem[r], sizeof mem[r]))) return rc;
    for (i = 0; i < n; i++)
        if ((rc = pp_exec_run(&e))) return rc;
    cpu[r] = thread_us() - t0;
    return 0;
}

/* One thread: the 7 layers over the M microbatches, *(int *)arg times. */
static void mlp_one(void *arg)
{
    int n = *(const int *)arg;
    int i, mb, l;
    for (i = 0; i < n; i++)
        for (mb = 0; mb < M; mb++) {
            mb_tensor x, y;
            int32_t xs[2] = {ROWS, MLP_IN};
            mb_tensor_init(&x, X + (size_t)mb * ROWS * MLP_IN, MB_F32, 2, xs);
            for (l = 0; l < MLP_LAYERS; l++) {
                int32_t ys[2] = {ROWS, (int32_t)(layers[l].act_bytes / 4u / ROWS)};
                mb_tensor_init(&y, act[l & 1], MB_F32, 2, ys);
                layers[l].forward(layers[l].self, &x, &y);
                x = y;
            }
            out_cb(NULL, mb, &x);
        }
}

static void mlp(const char *log)
{
    cost c[] = {{"mlp_stage0_f_instr", 0, 0}, {"mlp_stage1_f_instr", 0, 0}, {"mlp_send_instr", 0, 0},
                {"mlp_recv_instr", 0, 0},     {"mlp_balance", 0, 0},        {"mlp_rows", 0, 0}};
    static uint32_t work[1 << 12];
    static pg_pthread_world world;
    uint32_t sf[2];
    pp_costs pc;
    pp_sim sim;
    double one_core, two_cores, bound, speedup, host, host_cpu;
    uint32_t hash;
    int k, i, n = 20, rc; /* n: runs per block */
    if (read_costs(log, c, (int)(sizeof c / sizeof c[0]))) exit(1);
    if ((rc = pp_schedule_build(&sched, PP_SCHED_FORWARD_ONLY, 2, 1, M, store[0], sizeof store[0], NULL)) ||
        (rc = pp_lower(&sched, &plan, store[1], sizeof store[1], NULL)) || (int)c[5].v != ROWS)
        die(rc ? rc : -1, "the demo's plan");
    memset(&pc, 0, sizeof pc);
    sf[0] = (uint32_t)(c[0].v / UNIT + 0.5);
    sf[1] = (uint32_t)(c[1].v / UNIT + 0.5);
    pc.stage_f = sf;
    pc.send = (uint32_t)(c[2].v / UNIT + 0.5);
    pc.recv = (uint32_t)(c[3].v / UNIT + 0.5);
    if (pp_sim_bytes(&plan) > sizeof work ||
        (rc = pp_simulate(&plan, &pc, work, sizeof work, &sim, NULL, 0, NULL, NULL)))
        die(rc ? rc : -1, "pp_simulate");
    one_core = M * (c[0].v + c[1].v);
    two_cores = (double)sim.makespan * UNIT;
    speedup = one_core / two_cores;
    bound = (c[0].v + c[1].v) / (c[0].v > c[1].v ? c[0].v : c[1].v);
    printf("MLP on 2 Cortex-M33 (instructions per microbatch of %d images, -icount): stage 0 F %.0f, stage 1 F %.0f, "
           "send %.0f, receive %.0f of an activation; 8 microbatches: %.0f on 1 core, %.0f on 2 (pp_simulate): "
           "%.3fx, %.1f %% of the partition's bound %.3fx\n",
           ROWS, c[0].v, c[1].v, c[2].v, c[3].v, one_core, two_cores, speedup, 100 * speedup / bound, bound);
    printf("target: the 2-stage pipeline's throughput within 5 %% of its partition's bound: %s\n",
           speedup >= 0.95 * bound ? "met" : "NOT met");
    /* the host: the same plan and layer code on 2 threads, against 1 */
    for (k = 0; k < 4; k++) {
        lin[k].in = mlp_dims[k];
        lin[k].out = mlp_dims[k + 1];
        for (i = 0; i < lin[k].in * lin[k].out; i++) W[k][i] = 0.1f * frand();
        for (i = 0; i < lin[k].out; i++) B[k][i] = 0.1f * frand();
        lin[k].wt = W[k];
        lin[k].b = B[k];
    }
    for (i = 0; i < M * ROWS * MLP_IN; i++) X[i] = frand();
    mlp_layers(layers, lin, ROWS);
    balance[0] = (int32_t)c[4].v;
    balance[1] = MLP_LAYERS - balance[0];
    memset(&cfg, 0, sizeof cfg);
    cfg.layers = layers;
    cfg.nlayers = MLP_LAYERS;
    cfg.balance = balance;
    cfg.rows = ROWS;
    cfg.dtype = MB_F32;
    cfg.in_bytes = ROWS * MLP_IN * 4;
    cfg.input = in_cb;
    cfg.output = out_cb;
    for (k = 0; k < 2; k++)
        if ((rc = pp_plan_table(&plan, k, &tab[k]))) die(rc, "table");
    if ((rc = pg_pthread_world_init(&world, 2))) die(rc, "world");
    if ((rc = pg_pthread_run(&world, 2, mlp_body, &n))) die(rc, "pipeline");
    hash = mlp_fnv1a(OUT, M * ROWS * MLP_OUT);
    mlp_one(&n);
    if (hash != mlp_fnv1a(OUT, M * ROWS * MLP_OUT)) die(-1, "the pipeline's outputs differ from one thread's");
    (void)mlp_argmax;
    host_speedup(&world, mlp_body, &n, mlp_one, &host, &host_cpu);
    host_rows("Fashion-MNIST MLP, 2-stage forward-only pipeline, 8 x 13 images", "20 runs of 8 microbatches",
              "pp_simulate on -icount instruction counts", speedup, host, host_cpu);
    row("Fashion-MNIST MLP, 2-stage forward-only pipeline, 8 x 13 images, on 2 Cortex-M33 (pp_simulate)", "speedup",
        "x", speedup, "the partition's bound (total / largest stage)", bound);
    row("Fashion-MNIST MLP on Cortex-M33: F of one microbatch (13 images), stage 0 (Linear 784x256) vs stage 1 "
        "(the other 6 layers)",
        "f_instr", "instr", c[0].v, "stage 1", c[1].v);
}

/* ---- the CNN: split-work model on the M33 counts, measured on the host ---- */
static int8_t cw[CNN_C * 9], lw[CNN_OUT * CNN_FEAT], img[NIMG][CNN_HW * CNN_HW], out[2][NIMG][CNN_OUT];
static int32_t cb[CNN_C], lb[CNN_OUT];
static dt_qmul cq[CNN_C], lq[CNN_OUT];
static cnn_q8 model = {cw, cb, cq, lw, lb, lq};
static cnn_work works[3];

static int cnn_body(pg_group *g, void *arg)
{
    int r = pg_rank(g), rc, i;
    int32_t ms[1] = {2};
    dt_mesh mesh;
    dt_comm comm;
    double t0 = thread_us();
    (void)arg;
    if ((rc = dt_mesh_init(&mesh, 1, ms, NULL, r)) || (rc = dt_comm_init(&comm, &mesh, g))) return rc;
    for (i = 0; i < NIMG; i++)
        if ((rc = cnn_forward_sharded(&comm, &model, img[i], out[1][i], &works[r]))) return rc;
    cpu[r] = thread_us() - t0;
    return 0;
}

static void cnn_one(void *arg) /* one thread, the single-rank forward */
{
    int i, rc;
    (void)arg;
    for (i = 0; i < NIMG; i++)
        if ((rc = cnn_forward_ref(&model, img[i], out[0][i], &works[2]))) die(rc, "ref");
}

static void cnn(const char *log)
{
    cost c[] = {{"cnn_ref_instr", 0, 0}, {"cnn_rank0_instr", 0, 0}, {"cnn_rank1_instr", 0, 0}};
    static pg_pthread_world world;
    double slower, speedup, host, host_cpu;
    int i, rc;
    if (read_costs(log, c, 3)) exit(1);
    slower = c[1].v > c[2].v ? c[1].v : c[2].v;
    speedup = c[0].v / slower;
    printf("int8 CNN on 2 Cortex-M33 (instructions per image, -icount): 1 core %.0f, rank 0 %.0f, rank 1 %.0f: "
           "%.3fx\n",
           c[0].v, c[1].v, c[2].v, speedup);
    printf("target: the sharded CNN >= 1.9x on 2 cores: %s\n", speedup >= 1.9 ? "met" : "NOT met");
    for (i = 0; i < CNN_C * 9; i++) cw[i] = i8(8);
    for (i = 0; i < CNN_OUT * CNN_FEAT; i++) lw[i] = i8(8);
    for (i = 0; i < NIMG * CNN_HW * CNN_HW; i++) img[i / (CNN_HW * CNN_HW)][i % (CNN_HW * CNN_HW)] = i8(7);
    for (i = 0; i < CNN_C; i++) dt_quantize_multiplier(1.0 / 256, &cq[i]);
    for (i = 0; i < CNN_OUT; i++) dt_quantize_multiplier(1.0 / 4096, &lq[i]);
    if ((rc = pg_pthread_world_init(&world, 2))) die(rc, "world");
    host_speedup(&world, cnn_body, NULL, cnn_one, &host, &host_cpu);
    if (memcmp(out[0], out[1], sizeof out[0])) die(-1, "sharded logits differ from the single-rank ones");
    host_rows("int8 Fashion-MNIST CNN, rows sharded on 2 cores (cnn_forward_sharded vs cnn_forward_ref)", "100 images",
              "split-work model on -icount instruction counts", speedup, host, host_cpu);
    row("int8 Fashion-MNIST CNN on Cortex-M33, per image: the slower rank on 2 cores vs 1 core", "image_instr", "instr",
        slower, "1 core (cnn_forward_ref)", c[0].v);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: m33 MLP_COST_LOG CNN_COST_LOG (scons bench passes them)\n");
        return 2;
    }
    mlp(argv[1]);
    cnn(argv[2]);
    return 0;
}
