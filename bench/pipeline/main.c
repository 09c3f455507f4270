/* bench/pipeline/main.c — `scons bench`: pipeline.h's executor (1F1B, 4 stages on 4
   pg_pthread ranks, 8 microbatches) beside its peers, all measured in the same run:
     noop        layers that do nothing (F/B/W no-ops, one float per microbatch): the
                 executor's own cost. Rows: ns per action (step time / actions of the
                 busiest rank's lowered table) and us per microbatch (step / 8) vs torch
                 Pipe's per-microbatch cost on 4 nn.Identity partitions.
     1f1b_equal  4 equal stages of fixed integer work (F = K iterations, B = 2K), and
     1f1b_sleep  the same costs as sleeps (a rank is busy but leaves its CPU: the
                 simulator's one-core-per-rank assumption holds even on fewer cores).
                 Measured step vs pp_simulate's prediction from single-action costs
                 measured alone (+ the noop case's per-action overhead for every action),
                 and vs ideal = M * (F + B) (no bubble, no overhead).
     mlp         the demo's 784-256-128-64-10 MLP (examples/pipeline_mnist/mlp.h), balance
                 2,2,2,1, 8 microbatches of 8: zero grads, pp_exec_run, SGD step, vs
                 PyTorch 1.13's torch.distributed.pipeline.sync.Pipe on CPU, same model,
                 chunks and batch (bench/pipeline/torch_pipe.py, run by this program).
   Every step ends with a barrier (torch's step is synchronous too). Each figure is the
   median of REPEATS blocks. Without torch: one SKIPPED line and no torch rows. No
   assertions; the targets are printed as plain lines. */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "examples/pipeline_mnist/mlp.h"

#define RANKS 4
#define M 8
#define REPEATS 5
#define MB_ROWS 8

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, cmp_d); return v[n / 2]; }

/* ---- layers ---- */
static int noop_f(void *s, const mb_tensor *x, mb_tensor *y) { (void)s; (void)x; (void)y; return 0; }
static int noop_bi(void *s, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx) { (void)s; (void)x; (void)dy; (void)dx; return 0; }
static int noop_bw(void *s, const mb_tensor *x, const mb_tensor *dy) { (void)s; (void)x; (void)dy; return 0; }
static int noop_input(void *u, int mb, mb_tensor *x) { (void)u; (void)mb; (void)x; return 0; }
static int noop_loss(void *u, int mb, const mb_tensor *y, mb_tensor *dy, double *l) { (void)u; (void)mb; (void)y; (void)dy; *l = 0; return 0; }

static volatile uint64_t sink;
static uint64_t work_iters;                /* F = work_iters, B = 2 * work_iters */
static int sleep_mode;
static double f_ns_target = 200e3;         /* 200 us forward, 400 us backward */
static void spin_work(uint64_t n) {
    uint64_t x = 0x9E3779B97F4A7C15ull, i;
    for (i = 0; i < n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
    sink = x;
}
static void do_cost(int mult) {
    if (sleep_mode) {
        struct timespec ts = {0, (long)(f_ns_target * mult)};
        nanosleep(&ts, NULL);
    } else {
        spin_work(work_iters * (uint64_t)mult);
    }
}
static int eq_f(void *s, const mb_tensor *x, mb_tensor *y) { (void)s; (void)x; (void)y; do_cost(1); return 0; }
static int eq_bi(void *s, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx) { (void)s; (void)x; (void)dy; (void)dx; do_cost(2); return 0; }

/* ---- MLP (random weights and data: only time matters) ---- */
static float W0[784 * 256], W1[256 * 128], W2[128 * 64], W3[64 * 10];
static float G0[784 * 256], G1[256 * 128], G2[128 * 64], G3[64 * 10];
static float B[4][256], GB[4][256];
static float *const W[4] = {W0, W1, W2, W3}, *const G[4] = {G0, G1, G2, G3};
static mlp_linear lin[4];
static float xdata[M * MB_ROWS][MLP_IN];
static int labels[M * MB_ROWS];
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (float)(rng >> 40) / 16777216.0f * 2.0f - 1.0f; }
static int mlp_input(void *u, int mb, mb_tensor *x) { (void)u; memcpy(x->data, xdata[mb * MB_ROWS], sizeof(float) * MB_ROWS * MLP_IN); return 0; }
static int mlp_loss(void *u, int mb, const mb_tensor *y, mb_tensor *dy, double *loss) {
    int r, k;
    double l = 0;
    (void)u;
    for (r = 0; r < MB_ROWS; r++) {
        const float *z = (const float *)y->data + r * MLP_OUT;
        float *g = (float *)dy->data + r * MLP_OUT, mx = z[0], s = 0;
        int lab = labels[mb * MB_ROWS + r];
        for (k = 1; k < MLP_OUT; k++) if (z[k] > mx) mx = z[k];
        for (k = 0; k < MLP_OUT; k++) s += expf(z[k] - mx);
        for (k = 0; k < MLP_OUT; k++) g[k] = expf(z[k] - mx) / s / (M * MB_ROWS);
        g[lab] -= 1.0f / (M * MB_ROWS);
        l += (double)(logf(s) + mx - z[lab]) / (M * MB_ROWS);
    }
    *loss = l;
    return 0;
}

/* ---- one job: a model on 4 ranks, timed on rank 0 ---- */
static pp_action store[2][2048];
static pp_plan sched, plan;
static pp_table tab[RANKS];
static pp_exec_cfg cfg[RANKS];
static uint64_t mem[RANKS][(1 << 20) / 8];
static pg_pthread_world world;
typedef struct job { int steps, warmup, mlp; double step_ns[REPEATS]; } job;

static void mlp_step_pre(int r) {   /* the linear layer k lives on rank k (balance 2,2,2,1) */
    memset(G[r], 0, sizeof(float) * (size_t)(mlp_dims[r] * mlp_dims[r + 1]));
    memset(GB[r], 0, sizeof GB[r]);
}
static void mlp_step_post(int r) {
    int i, n = mlp_dims[r] * mlp_dims[r + 1];
    for (i = 0; i < n; i++) W[r][i] -= 0.01f * G[r][i];
    for (i = 0; i < mlp_dims[r + 1]; i++) B[r][i] -= 0.01f * GB[r][i];
}

static int body(pg_group *g, void *arg) {
    job *j = (job *)arg;
    int r = pg_rank(g), rc, rep, s;
    pp_exec e;
    pg_set_timeout(g, 60000);
    if ((rc = pp_exec_init(&e, &cfg[r], &tab[r], g, mem[r], sizeof mem[r]))) return rc;
    for (rep = -1; rep < REPEATS; rep++) {
        int n = rep < 0 ? j->warmup : j->steps;
        double t0;
        if ((rc = pg_barrier(g))) return rc;
        t0 = now_ns();
        for (s = 0; s < n; s++) {
            if (j->mlp) mlp_step_pre(r);
            if ((rc = pp_exec_run(&e))) return rc;
            if (j->mlp) mlp_step_post(r);
            if ((rc = pg_barrier(g))) return rc;
        }
        if (r == 0 && rep >= 0) j->step_ns[rep] = (now_ns() - t0) / n;
    }
    return 0;
}

static void die(int rc, const char *what) {
    fprintf(stderr, "bench pipeline: %s: %d (%s)\n", what, rc, pp_strerror(rc));
    exit(1);
}

/* Configure cfg[] for layers (one balance for all ranks) and run job; median step ns. */
static double run_job(const pp_layer *layers, int nlayers, const int32_t *balance, int rows,
                      uint32_t in_bytes, int (*input)(void *, int, mb_tensor *),
                      int (*loss)(void *, int, const mb_tensor *, mb_tensor *, double *), job *j) {
    int r, rc;
    for (r = 0; r < RANKS; r++) {
        pp_exec_cfg *c = &cfg[r];
        memset(c, 0, sizeof *c);
        c->layers = layers; c->nlayers = nlayers; c->balance = balance; c->rows = rows;
        c->dtype = MB_F32; c->in_bytes = in_bytes; c->checkpoint = PP_CKPT_NEVER;
        c->input = input; c->loss = loss;
        if (pp_exec_bytes(c, &tab[r]) > sizeof mem[r]) die(PP_ERR_TOO_SMALL, "storage");
    }
    if ((rc = pg_pthread_world_init(&world, RANKS))) die(rc, "world");
    if ((rc = pg_pthread_run(&world, RANKS, body, j))) die(rc, "run");
    return median(j->step_ns, REPEATS);
}

static void row(const char *cs, const char *metric, const char *unit, double ours,
                const char *peer, double peer_value) {
    printf("{\"bench\": \"pipeline\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", "
           "\"ours\": %.4g, \"peer\": \"%s\", \"peer_value\": %.4g}\n",
           cs, metric, unit, ours, peer, peer_value);
}

/* The torch peer: bench/pipeline/torch_pipe.py beside this program's source. */
static int torch_peer(double *noop_us, double *mlp_us) {
    char exe[4096], cmd[8400], line[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *cut;
    FILE *p;
    int got = 0;
    if (n <= 0) return 0;
    exe[n] = 0;
    cut = strstr(exe, "/build/bench/");
    if (!cut) return 0;
    *cut = 0;
    if (access("/usr/bin/python3", X_OK)) { printf("SKIPPED torch Pipe peer: no /usr/bin/python3\n"); return 0; }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/bench/pipeline/torch_pipe.py' 2>/dev/null", exe);
    fflush(stdout);
    p = popen(cmd, "r");
    if (!p) return 0;
    while (fgets(line, sizeof line, p)) {
        char *s = strstr(line, "\"step_us\": ");
        if (line[0] != '{') { fputs(line, stdout); continue; }
        printf("torch: %s", line);
        if (!s) continue;
        if (strstr(line, "\"case\": \"noop\"")) { *noop_us = atof(s + 11); got |= 1; }
        if (strstr(line, "\"case\": \"mlp\"")) { *mlp_us = atof(s + 11); got |= 2; }
    }
    pclose(p);
    return got;
}

int main(void) {
    static pp_layer noop[4], eq[4], mlp[MLP_LAYERS];
    static const int32_t one_each[4] = {1, 1, 1, 1};
    static uint32_t simwork[8192];
    int r, k, i, rc, busiest = 0, got;
    double noop_ns, per_action_ns, torch_noop_us = 0, torch_mlp_us = 0;
    job j;
    (void)mlp_argmax; (void)mlp_fnv1a;   /* mlp.h helpers the demo uses */

    if ((rc = pp_schedule_build(&sched, PP_SCHED_1F1B, RANKS, 1, M, store[0], sizeof store[0], NULL))) die(rc, "1F1B");
    if ((rc = pp_lower(&sched, &plan, store[1], sizeof store[1], NULL))) die(rc, "lower");
    for (r = 0; r < RANKS; r++) {
        if ((rc = pp_plan_table(&plan, r, &tab[r]))) die(rc, "table");
        if (plan.len[r] > busiest) busiest = plan.len[r];
    }
    printf("pipeline bench: 1F1B, %d stages on %d pg_pthread ranks, %d microbatches, %ld online CPUs; "
           "busiest rank runs %d actions per step\n", RANKS, RANKS, M, sysconf(_SC_NPROCESSORS_ONLN), busiest);

    /* 1. framework overhead */
    for (k = 0; k < 4; k++) {
        noop[k].forward = noop_f; noop[k].backward_input = noop_bi; noop[k].backward_weight = noop_bw;
        noop[k].act_bytes = 4;
    }
    memset(&j, 0, sizeof j); j.steps = 2000; j.warmup = 200;
    noop_ns = run_job(noop, 4, one_each, 1, 4, noop_input, noop_loss, &j);
    per_action_ns = noop_ns / busiest;

    /* 3. (started early: it is the slow one) torch peer */
    got = torch_peer(&torch_noop_us, &torch_mlp_us);

    row("noop_per_action", "action_ns", "ns", per_action_ns, "none", 0);
    if (got & 1) {
        row("noop_per_microbatch", "overhead_us", "us", noop_ns / M / 1e3, "torch_pipe_1.13", torch_noop_us / M);
        printf("target: overhead per microbatch >= 100x lower than torch Pipe: %.0fx (%s)\n",
               torch_noop_us * 1e3 / noop_ns, torch_noop_us * 1e3 / noop_ns >= 100 ? "met" : "NOT met");
    } else {
        row("noop_per_microbatch", "overhead_us", "us", noop_ns / M / 1e3, "none", 0);
    }

    /* 2. equal stages: busy work, then sleeps */
    {
        double t[21], f_ns, b_ns;
        int mode;
        work_iters = 1000;
        t[0] = now_ns(); spin_work(1000000); t[1] = now_ns();
        work_iters = (uint64_t)(f_ns_target / ((t[1] - t[0]) / 1e6));
        for (k = 0; k < 4; k++) { eq[k].forward = eq_f; eq[k].backward_input = eq_bi; eq[k].act_bytes = MB_ROWS * 64 * 4; }
        for (mode = 0; mode < 2; mode++) {
            pp_costs c;
            pp_sim sim;
            double ideal;
            const char *cs = mode ? "1f1b_sleep" : "1f1b_equal";
            sleep_mode = mode;
            for (i = 0; i < 21; i++) { double a = now_ns(); do_cost(1); t[i] = now_ns() - a; }
            f_ns = median(t, 21);
            for (i = 0; i < 21; i++) { double a = now_ns(); do_cost(2); t[i] = now_ns() - a; }
            b_ns = median(t, 21);
            memset(&c, 0, sizeof c);   /* ns; every action also pays the executor's overhead */
            c.f = (uint32_t)(f_ns + per_action_ns); c.b = (uint32_t)(b_ns + per_action_ns);
            c.send = c.recv = (uint32_t)per_action_ns;
            if ((rc = pp_simulate(&plan, &c, simwork, sizeof simwork, &sim, NULL, 0, NULL, NULL))) die(rc, "simulate");
            ideal = M * (f_ns + b_ns);
            memset(&j, 0, sizeof j); j.steps = 20; j.warmup = 3;
            noop_ns = run_job(eq, 4, one_each, MB_ROWS, MB_ROWS * 64 * 4, noop_input, noop_loss, &j);
            printf("%s: F %.1f us, B %.1f us alone; simulator %.1f us (bubble %.1f %%), ideal %.1f us, measured %.1f us\n",
                   cs, f_ns / 1e3, b_ns / 1e3, sim.makespan / 1e3, sim.bubble_ppm / 1e4, ideal / 1e3, noop_ns / 1e3);
            row(cs, "step_us", "us", noop_ns / 1e3, "simulator", sim.makespan / 1e3);
            row(cs, "step_us", "us", noop_ns / 1e3, "ideal", ideal / 1e3);
            printf("target: %s measured within 10 %% of the simulator: %+.1f %% (%s)\n", cs,
                   (noop_ns / sim.makespan - 1) * 100, noop_ns / sim.makespan <= 1.10 && noop_ns / sim.makespan >= 0.90 ? "met" : "NOT met");
        }
    }

    /* 3. the demo's MLP */
    for (k = 0; k < 4; k++) {
        int n = mlp_dims[k] * mlp_dims[k + 1];
        for (i = 0; i < n; i++) W[k][i] = urand() * 0.05f;
        lin[k].in = mlp_dims[k]; lin[k].out = mlp_dims[k + 1];
        lin[k].wt = W[k]; lin[k].b = B[k]; lin[k].gwt = G[k]; lin[k].gb = GB[k];
    }
    for (i = 0; i < M * MB_ROWS; i++) {
        for (k = 0; k < MLP_IN; k++) xdata[i][k] = urand();
        labels[i] = i % 10;
    }
    mlp_layers(mlp, lin, MB_ROWS);
    memset(&j, 0, sizeof j); j.steps = 200; j.warmup = 20; j.mlp = 1;
    noop_ns = run_job(mlp, MLP_LAYERS, mlp_balance, MB_ROWS, MB_ROWS * MLP_IN * 4, mlp_input, mlp_loss, &j);
    if (got & 2) {
        row("mlp_784_256_128_64_10", "step_us", "us", noop_ns / 1e3, "torch_pipe_1.13", torch_mlp_us);
        row("mlp_784_256_128_64_10", "samples_s", "samples/s", M * MB_ROWS / (noop_ns / 1e9), "torch_pipe_1.13", M * MB_ROWS / (torch_mlp_us / 1e6));
        printf("target: training step faster than torch Pipe: %.1fx (%s)\n", torch_mlp_us * 1e3 / noop_ns,
               torch_mlp_us * 1e3 < noop_ns ? "NOT met" : "met");
    } else {
        row("mlp_784_256_128_64_10", "step_us", "us", noop_ns / 1e3, "none", 0);
        row("mlp_784_256_128_64_10", "samples_s", "samples/s", M * MB_ROWS / (noop_ns / 1e9), "none", 0);
    }
    return 0;
}
