/* bench/pipeline/main.c — `scons bench`: pipeline.h's executor on pg_pthread beside its
   peers, all measured in the same run. Every model has 4 stages and M = 8 microbatches
   (torch: 4 partitions, chunks = 8); a layout says how the stages sit on ranks (threads):
     4r_1f1b   4 ranks, one stage each, 1F1B (the demo's layout)
     2r_il     2 ranks, two stages each (stages 0, 2 on rank 0; 1, 3 on rank 1),
               Interleaved1F1B: a rank per CPU on this 2-CPU machine
   Cases:
     noop      layers that do nothing (F/B no-ops, one float per microbatch). Framework
               overhead per microbatch = (step time of the no-op model - 0) / M, the same
               definition as for torch's Pipe on 4 nn.Identity partitions with chunks = 8
               (forward + backward; bench/pipeline/torch_pipe.py). The target line's
               headline is the layout with no more rank threads than CPUs (2r_il here: a
               rank per CPU); 4r_1f1b (4 threads on 2 CPUs) mostly measures the OS's thread
               switches and is printed beside it. Also ns per action
               (step / actions of the busiest rank's lowered table), and a 2-stage row
               (2 ranks, 1F1B) beside torch with 2 partitions.
     equal     4 equal stages of fixed work (F = 200 us, B = 400 us): busy integer work, or
               the same costs as sleeps. Every measured step (rank 0's wall time of
               pp_exec_run) vs pp_simulate's prediction from that step's own action costs:
               per stage, the mean time of its F and B layer calls in that step (so an
               action the OS preempted costs what it took), plus the no-op case's time per
               action of the same layout on every action, and the least disturbed of 21
               hand-offs to a rank that waited one forward's time (costs.comm); the figure
               is the median over the steps of step / prediction (50 steps), with the
               median step beside the median prediction. Also vs ideal = M * (F + B) *
               4 stages / ranks (costs alone: no bubble, no overhead). Busy work prints the
               share of the CPUs the ranks got (process CPU time / wall time): on a machine
               whose CPUs other processes hold, ranks wait for a CPU between actions, which
               no per-action cost shows, and the busy rows then measure the machine's load
               (the sleep rows do not need a CPU to make progress). Busy 4r_1f1b pins rank
               r to CPU r % 2; a second prediction for it starts from F and B measured alone
               and lets ranks on one CPU take turns (costs.cores = 2).
     sweep     every schedule that runs on 2 ranks (GPipe, 1F1B, Interleaved1F1B, ZB1P,
               ZBV) at M = 2, 4, 8, 16 on one 4-layer model of busy work: efficiency
               (ideal / step) measured vs pp_simulate vs the schedule's own bound (rows
               sweep_2r_<schedule>_m<M>; bench/report.py plots them; see sweep()).
     mlp       the demo's 784-256-128-64-10 MLP (examples/pipeline_mnist/mlp.h), 8
               microbatches of 8: zero grads, pp_exec_run, SGD step, vs PyTorch 1.13's
               torch.distributed.pipeline.sync.Pipe on CPU (every partition on one worker
               thread; BLAS and threads as torch_pipe.py reports), same model, chunks and batch,
               on two layouts: 4r_1f1b with balance 2,2,2,1 (the demo's; torch's 4
               partitions), and 2r_1f1b (a rank per CPU) with the balance pp_balance_by_cost
               computes from a profiling run of the layers (each layer's forward + backward
               on one microbatch, median of 31; the 784x256 linear alone on stage 0, ~70 %
               of the work); torch runs the same 2 partitions. Process CPU time per step
               is printed beside the wall time, and pp_simulate's prediction from the
               profiled layer costs (rows with peer "simulator").
     peers     the demo's training step (the same MLP, batch and data; SGD lr 0.01) beside plain
               single-process torch training it (nn.Sequential on the whole batch, OpenBLAS or
               whatever BLAS Debian's torch maps: its name is in the peer's) at 1 thread and at 2
               threads with OMP_WAIT_POLICY=PASSIVE (torch_pipe.py --plain, a server timing
               blocks on request), alternating blocks of 100 steps with ours, 9 rounds, medians;
               the better torch setting is the peer row, the other is printed and rowed beside
               the demo's. Ours: 2 ranks 1F1B (balance 1,6), 1 rank, 4 ranks 1F1B (2,2,2,1), with
               mlp.h's kernels and, built with MLP_CBLAS (`scons bench` with OpenBLAS found:
               BENCH_OPTIONS), its CBLAS kernels (OpenBLAS 1 thread per rank; 1 rank also with 2).
               "The demo's" is the layout its RANKS=auto would train on, picked the same way (2
               x 10 alternating steps on 2 ranks and on 1) before the measured blocks; the rank
               rows also stand beside the same kernels on 1 rank (the pipeline's own effect).
               Both sides print the first step's loss on the same model and batch.
     instr     callgrind: instructions per action of the no-op 4r_1f1b run (valgrind
               --tool=callgrind on this program, collecting inside pp_exec_run): everything
               (executor, pg.h, pg_pthread and its waits), and the executor alone (minus the
               port's send/recv/abort/recover, which it calls through pg.h's vtable).
   Steps run back to back (pp_exec_run returns on every rank only once the step is done
   everywhere); rank 0 times blocks of steps; each figure is the median of REPEATS blocks,
   except the no-op cases: the best of NOOP_BLOCKS blocks of 300 steps, on both sides (the
   framework's own cost with the least interference from other processes on the machine).
   Without torch or valgrind: a SKIPPED line and no such rows. No assertions; the issue's
   targets are printed as plain lines. `pipeline noop|equal|sweep|mlp|peers|instr` runs one part
   only (equal and mlp without torch). */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#include "examples/pipeline_mnist/mlp.h"

#define MAXR        4
#define M           8
#define REPEATS     5
#define NOOP_BLOCKS 21 /* no-op: the best of 21 blocks (torch: the same) */
#define MB_ROWS     8
#define CG_STEPS    40

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n ? v[n / 2] : 0;
}
static int nranks_le_cpus(int n)
{
    return n <= sysconf(_SC_NPROCESSORS_ONLN);
}
static const char *loadavg(void)
{ /* the 1-minute load average, printed with the figures */
    static char buf[64];
    FILE *f = fopen("/proc/loadavg", "r");
    strcpy(buf, "?");
    if (f && fgets(buf, sizeof buf, f)) buf[strcspn(buf, " ")] = 0;
    if (f) fclose(f);
    return buf;
}
static double cpu_ns(void)
{ /* every thread of this process */
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- layers ---- */
static int noop_f(void *s, const mb_tensor *x, mb_tensor *y)
{
    (void)s;
    (void)x;
    (void)y;
    return 0;
}
static int noop_bi(void *s, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    (void)s;
    (void)x;
    (void)dy;
    (void)dx;
    return 0;
}
static int noop_bw(void *s, const mb_tensor *x, const mb_tensor *dy)
{
    (void)s;
    (void)x;
    (void)dy;
    return 0;
}
static int noop_input(void *u, int mb, mb_tensor *x)
{
    (void)u;
    (void)mb;
    (void)x;
    return 0;
}
static int noop_loss(void *u, int mb, const mb_tensor *y, mb_tensor *dy, double *l)
{
    (void)u;
    (void)mb;
    (void)y;
    (void)dy;
    *l = 0;
    return 0;
}

static volatile uint64_t sink;
static uint64_t work_iters; /* F = work_iters, B = 2 * work_iters */
static int sleep_mode;
static double f_ns_target = 200e3; /* 200 us forward, 400 us backward */
static void spin_work(uint64_t n)
{
    uint64_t x = 0x9E3779B97F4A7C15ull, i;
    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
}
static void do_cost(int mult)
{
    if (sleep_mode) {
        struct timespec ts = {0, (long)(f_ns_target * mult)};
        nanosleep(&ts, NULL);
    } else {
        spin_work(work_iters * (uint64_t)mult);
    }
}
/* B's cost sits in the weight gradient: stage 0 skips the input gradient of the model input,
   and every stage must cost the same. Each call's duration is recorded (the simulator's
   per-action costs, profiled in the same run). */
#define NDUR 4096
static double fdur[NDUR], bdur[NDUR];
static int nf, nb;
/* Per measured step (rank 0's wall time of pp_exec_run, which returns once the step is
   done everywhere) and per stage: the sum of its F (B) layer times in that step. A rank
   counts its own steps (step_of[rank]); stage k's calls all run on one rank. */
#define MAXSTEPS 256
static __thread int tl_rank;
static int step_of[MAXR], measuring[MAXR], recording;
static const int stage_id[4] = {0, 1, 2, 3};
static double step_wall[MAXSTEPS], stage_f_ns[MAXSTEPS][4], stage_b_ns[MAXSTEPS][4];
/* the same as the calling thread's CPU time: what an action costs its CPU when ranks share
   one (the wall time above also holds the time a rank pinned to the same CPU ran) */
static double stage_fc_ns[MAXSTEPS][4], stage_bc_ns[MAXSTEPS][4];
static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static void timed_cost(int mult, double *dur, int *n, double *per_step, double *per_step_cpu, int stage)
{
    double t0 = now_ns(), c0 = thread_cpu_ns(), d;
    int k, st = step_of[tl_rank];
    do_cost(mult);
    d = now_ns() - t0;
    k = __atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
    if (k < NDUR) dur[k] = d;
    if (recording && measuring[tl_rank] && st < MAXSTEPS) {
        per_step[st * 4 + stage] += d;
        per_step_cpu[st * 4 + stage] += thread_cpu_ns() - c0;
    }
}
static int eq_f(void *s, const mb_tensor *x, mb_tensor *y)
{
    (void)x;
    (void)y;
    timed_cost(1, fdur, &nf, &stage_f_ns[0][0], &stage_fc_ns[0][0], *(const int *)s);
    return 0;
}
static int eq_bw(void *s, const mb_tensor *x, const mb_tensor *dy)
{
    (void)x;
    (void)dy;
    timed_cost(2, bdur, &nb, &stage_b_ns[0][0], &stage_bc_ns[0][0], *(const int *)s);
    return 0;
}

/* ---- MLP (random weights and data: only time matters) ---- */
static float W0[784 * 256], W1[256 * 128], W2[128 * 64], W3[64 * 10];
static float G0[784 * 256], G1[256 * 128], G2[128 * 64], G3[64 * 10];
static float B[4][256], GB[4][256];
static float *const W[4] = {W0, W1, W2, W3}, *const G[4] = {G0, G1, G2, G3};
static mlp_linear lin[4];
static float xdata[M * MB_ROWS][MLP_IN];
static int labels[M * MB_ROWS];
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / 16777216.0f * 2.0f - 1.0f;
}
static int mlp_input(void *u, int mb, mb_tensor *x)
{
    (void)u;
    memcpy(x->data, xdata[mb * MB_ROWS], sizeof(float) * MB_ROWS * MLP_IN);
    return 0;
}
static int mlp_loss(void *u, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    int r, k;
    double l = 0;
    (void)u;
    for (r = 0; r < MB_ROWS; r++) {
        const float *z = (const float *)y->data + r * MLP_OUT;
        float *g = (float *)dy->data + r * MLP_OUT, mx = z[0], s = 0;
        int lab = labels[mb * MB_ROWS + r];
        for (k = 1; k < MLP_OUT; k++)
            if (z[k] > mx) mx = z[k];
        for (k = 0; k < MLP_OUT; k++) s += expf(z[k] - mx);
        for (k = 0; k < MLP_OUT; k++) g[k] = expf(z[k] - mx) / s / (M * MB_ROWS);
        g[lab] -= 1.0f / (M * MB_ROWS);
        l += (double)(logf(s) + mx - z[lab]) / (M * MB_ROWS);
    }
    *loss = l;
    return 0;
}

/* ---- layouts ---- */
typedef struct layout {
    const char *name;
    int sched, ranks, stages_per_rank;
} layout;
static const layout L4 = {"4r_1f1b", PP_SCHED_1F1B, 4, 1};
static const layout L2 = {"2r_il", PP_SCHED_INTERLEAVED_1F1B, 2, 2};
static const layout L2S = {"2r_1f1b_2stages", PP_SCHED_1F1B, 2, 1};

static pp_action store[2][4096];
static pp_plan sched, plan;
static pp_table tab[MAXR];
static pp_exec_cfg cfg[MAXR];
static uint64_t mem[MAXR][(1 << 20) / 8];
static pg_pthread_world world;
static int nranks, busiest, pin_cpus;
typedef struct job {
    int steps, warmup, mlp, blocks;
    double step_ns[NOOP_BLOCKS], cpu_ns[NOOP_BLOCKS];
} job;
static double best_cpu_ns; /* run_job of a no-op case: the least process CPU time per step of a block */

static void die(int rc, const char *what)
{
    fprintf(stderr, "bench pipeline: %s: %d (%s)\n", what, rc, pp_strerror(rc));
    exit(1);
}

/* Plan and per-rank tables of a layout; sets nranks and busiest (actions of the longest row). */
static int setup_nmb = M; /* microbatches of the plans setup builds (the sweep varies it) */
static void setup(const layout *lo)
{
    int r, rc;
    if ((rc = pp_schedule_build(&sched, lo->sched, lo->ranks, lo->stages_per_rank, setup_nmb, store[0], sizeof store[0],
                                NULL)))
        die(rc, lo->name);
    if ((rc = pp_lower(&sched, &plan, store[1], sizeof store[1], NULL))) die(rc, "lower");
    nranks = lo->ranks;
    busiest = 0;
    for (r = 0; r < nranks; r++) {
        if ((rc = pp_plan_table(&plan, r, &tab[r]))) die(rc, "table");
        if (plan.len[r] > busiest) busiest = plan.len[r];
    }
}

/* The MLP's linear layer k (layer 2k) lives on rank lin_rank[k] (set by mlp_run). */
static int lin_rank[4];
static void mlp_step_pre(int r)
{
    int k;
    for (k = 0; k < 4; k++)
        if (lin_rank[k] == r) {
            memset(G[k], 0, sizeof(float) * (size_t)(mlp_dims[k] * mlp_dims[k + 1]));
            memset(GB[k], 0, sizeof GB[k]);
        }
}
static void mlp_step_post(int r)
{
    int k;
    for (k = 0; k < 4; k++)
        if (lin_rank[k] == r) {
            mlp_sgd(W[k], G[k], mlp_dims[k] * mlp_dims[k + 1], 0.01f);
            mlp_sgd(B[k], GB[k], mlp_dims[k + 1], 0.01f);
        }
}

/* Called through a pointer so it stays a function of its own (callgrind collects inside it). */
static int (*volatile exec_run)(pp_exec *e) = pp_exec_run;

static int body(pg_group *g, void *arg)
{
    job *j = (job *)arg;
    int r = pg_rank(g), rc, rep, s;
    pp_exec e;
    tl_rank = r;
    pg_set_timeout(g, 60000);
    if (pin_cpus) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(r % pin_cpus, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    if ((rc = pp_exec_init(&e, &cfg[r], &tab[r], g, mem[r], sizeof mem[r]))) return rc;
    for (rep = -1; rep < j->blocks; rep++) {
        int n = rep < 0 ? j->warmup : j->steps;
        double t0, c0;
        if ((rc = pg_barrier(g))) return rc;
        measuring[r] = rep >= 0;
        t0 = now_ns();
        c0 = cpu_ns();
        for (s = 0; s < n; s++) {
            double ts = now_ns();
            if (j->mlp) mlp_step_pre(r);
            if ((rc = exec_run(&e))) return rc;
            if (j->mlp) mlp_step_post(r);
            if (recording && rep >= 0) { /* per measured step: its wall time, its layers' costs */
                if (r == 0 && step_of[0] < MAXSTEPS) step_wall[step_of[0]] = now_ns() - ts;
                step_of[r]++;
            }
        }
        if (r == 0 && rep >= 0) {
            j->step_ns[rep] = (now_ns() - t0) / n;
            j->cpu_ns[rep] = (cpu_ns() - c0) / n;
        }
    }
    return 0;
}

/* Configure cfg[] for layers (one balance for all ranks) and run job; median step ns. */
static double run_job(const pp_layer *layers, int nlayers, const int32_t *balance, int rows, uint32_t in_bytes,
                      int (*input)(void *, int, mb_tensor *),
                      int (*loss)(void *, int, const mb_tensor *, mb_tensor *, double *), job *j)
{
    int r, rc;
    for (r = 0; r < nranks; r++) {
        pp_exec_cfg *c = &cfg[r];
        memset(c, 0, sizeof *c);
        c->layers = layers;
        c->nlayers = nlayers;
        c->balance = balance;
        c->rows = rows;
        c->dtype = MB_F32;
        c->in_bytes = in_bytes;
        c->checkpoint = PP_CKPT_NEVER;
        c->input = input;
        c->loss = loss;
        if (pp_exec_bytes(c, &tab[r]) > sizeof mem[r]) die(PP_ERR_TOO_SMALL, "storage");
    }
    if ((rc = pg_pthread_world_init(&world, nranks))) die(rc, "world");
    if (!j->blocks) j->blocks = REPEATS;
    if ((rc = pg_pthread_run(&world, nranks, body, j))) die(rc, "run");
    if (j->blocks == NOOP_BLOCKS) {
        qsort(j->cpu_ns, NOOP_BLOCKS, sizeof(double), cmp_d);
        best_cpu_ns = j->cpu_ns[0];
        qsort(j->step_ns, NOOP_BLOCKS, sizeof(double), cmp_d);
        return j->step_ns[0];
    }
    return median(j->step_ns, j->blocks);
}

/* Hand-off latency to a waiting rank, as the pipeline sees it: rank 0 works (or sleeps)
   for one forward's time, so rank 1's receive has gone past spinning, then sends its clock;
   rank 1 notes how late the message arrived. Median of 21. */
#define NLAT 21
static double lat[NLAT + 2];
static int lat_body(pg_group *g, void *arg)
{
    int i, rc;
    double t0;
    (void)arg;
    pg_set_timeout(g, 60000);
    for (i = 0; i < NLAT + 2; i++) {
        if (pg_rank(g) == 0) {
            do_cost(1);
            t0 = now_ns();
            if ((rc = pg_send(g, 1, 1, &t0, sizeof t0))) return rc;
        } else {
            if ((rc = pg_recv(g, 0, 1, &t0, sizeof t0, NULL))) return rc;
            lat[i] = now_ns() - t0;
        }
    }
    return 0;
}
static double handoff_med_ns;
static double handoff_ns(void)
{ /* the least disturbed hand-off (the port's own); the median in handoff_med_ns */
    int rc;
    if ((rc = pg_pthread_world_init(&world, 2)) || (rc = pg_pthread_run(&world, 2, lat_body, NULL))) die(rc, "latency");
    handoff_med_ns = median(lat + 2, NLAT); /* the first two: warm-up */
    return lat[2];
}

static pp_layer noop[4], eq[4], mlp[MLP_LAYERS];
#ifdef MLP_CBLAS
static pp_layer mlp_blas[MLP_LAYERS]; /* the same MLP through mlp.h's CBLAS kernels */
#endif
static const int32_t one_each[4] = {1, 1, 1, 1};

static void make_layers(void)
{
    int k;
    for (k = 0; k < 4; k++) {
        noop[k].forward = noop_f;
        noop[k].backward_input = noop_bi;
        noop[k].backward_weight = noop_bw;
        noop[k].act_bytes = 4;
        eq[k].forward = eq_f;
        eq[k].backward_input = noop_bi;
        eq[k].backward_weight = eq_bw;
        eq[k].act_bytes = MB_ROWS * 64 * 4;
        eq[k].self = (void *)&stage_id[k];
    }
}

/* No-op model on a layout: median step ns (steps back to back). */
static double noop_step(const layout *lo, int steps, int warmup)
{
    job j;
    setup(lo);
    memset(&j, 0, sizeof j);
    j.steps = steps;
    j.warmup = warmup;
    j.blocks = NOOP_BLOCKS;
    return run_job(noop, lo->ranks * lo->stages_per_rank, one_each, 1, 4, noop_input, noop_loss, &j);
}

/* ---- the demo's MLP ---- */
static void mlp_init(void)
{ /* random weights and data: only time matters */
    int k, i;
    for (k = 0; k < 4; k++) {
        int n = mlp_dims[k] * mlp_dims[k + 1];
        for (i = 0; i < n; i++) W[k][i] = urand() * 0.05f;
        lin[k].in = mlp_dims[k];
        lin[k].out = mlp_dims[k + 1];
        lin[k].wt = W[k];
        lin[k].b = B[k];
        lin[k].gwt = G[k];
        lin[k].gb = GB[k];
    }
    for (i = 0; i < M * MB_ROWS; i++) {
        for (k = 0; k < MLP_IN; k++) xdata[i][k] = urand();
        labels[i] = i % 10;
    }
    mlp_layers(mlp, lin, MB_ROWS);
#ifdef MLP_CBLAS
    mlp_layers(mlp_blas, lin, MB_ROWS);
    mlp_layers_cblas(mlp_blas);
#endif
}

/* A rows x cols row-major f32 tensor over data. */
static mb_tensor f32_matrix(void *data, int rows, int cols)
{
    mb_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = MB_F32;
    t.ndim = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    t.stride[0] = cols;
    t.stride[1] = 1;
    t.data = data;
    return t;
}
/* Layer l's input width (the previous layer's output, or the model's input). */
static int mlp_in_width(const pp_layer *layers, int l)
{
    return l ? (int)(layers[l - 1].act_bytes / 4 / MB_ROWS) : MLP_IN;
}

/* Profiling run for automatic balance: each layer's time on one microbatch, one thread,
   as the executor calls it in a step: forward (cost_f), input gradient except for the
   model input + weight gradient (cost_b); median of 31 in ns; cost = cost_f + cost_b. */
static uint32_t cost_f[MLP_LAYERS], cost_b[MLP_LAYERS];
static void mlp_profile(uint32_t *cost)
{
    static float act[MLP_LAYERS + 1][MB_ROWS * MLP_IN], grad[MLP_LAYERS + 1][MB_ROWS * MLP_IN];
    double tf[31], tb[31];
    int l, i;
    memcpy(act[0], xdata[0], sizeof(float) * MB_ROWS * MLP_IN);
    for (l = 0; l < MLP_LAYERS; l++) {
        const pp_layer *L = &mlp[l];
        int in = mlp_in_width(mlp, l), out = (int)(L->act_bytes / 4 / MB_ROWS);
        mb_tensor x = f32_matrix(act[l], MB_ROWS, in), dx = f32_matrix(grad[l], MB_ROWS, in);
        mb_tensor y = f32_matrix(act[l + 1], MB_ROWS, out), dy = f32_matrix(grad[l + 1], MB_ROWS, out);
        for (i = 0; i < MB_ROWS * out; i++) grad[l + 1][i] = urand() * 0.01f;
        for (i = 0; i < 31; i++) {
            double a = now_ns(), b;
            L->forward(L->self, &x, &y);
            b = now_ns();
            if (l) L->backward_input(L->self, &x, &dy, &dx);
            if (L->backward_weight) L->backward_weight(L->self, &x, &dy);
            tf[i] = b - a;
            tb[i] = now_ns() - b;
        }
        cost_f[l] = (uint32_t)median(tf, 31);
        cost_b[l] = (uint32_t)median(tb, 31);
        cost[l] = cost_f[l] + cost_b[l];
    }
    for (i = 0; i < 4; i++) { /* undo the gradients the profile accumulated */
        memset(G[i], 0, sizeof(float) * (size_t)(mlp_dims[i] * mlp_dims[i + 1]));
        memset(GB[i], 0, sizeof GB[i]);
    }
}

/* One MLP training step per pp_exec_run on a layout with the given balance (layers per
   stage); median step ns over REPEATS blocks of `steps`. */
static double mlp_cpu_ns, mlp_sim_ns; /* mlp_run: the median process CPU time per step, the prediction */
static double mlp_run(const layout *lo, const int32_t *balance, int steps, double per_action_ns)
{
    static uint32_t simwork[8192];
    uint32_t sf[PP_MAX_STAGES], sb[PP_MAX_STAGES];
    pp_costs c;
    pp_sim sim;
    job j;
    double ns;
    int l, rc;
    int k, s, acc;
    setup(lo);
    for (k = 0; k < 4; k++) {
        for (s = 0, acc = balance[0]; 2 * k >= acc;) acc += balance[++s];
        lin_rank[k] = plan.stage_rank[s];
    }
    memset(&j, 0, sizeof j);
    j.steps = steps;
    j.warmup = steps / 10;
    j.mlp = 1;
    ns = run_job(mlp, MLP_LAYERS, balance, MB_ROWS, MB_ROWS * MLP_IN * 4, mlp_input, mlp_loss, &j);
    mlp_cpu_ns = median(j.cpu_ns, j.blocks);
    /* pp_simulate from the profiled layer costs summed per stage, plus the no-op time per
       action; with more ranks than CPUs, rank r on CPU r % CPUs (costs.cores) */
    for (s = 0, l = 0; s < plan.nstages; s++) {
        double f = per_action_ns, b = per_action_ns;
        for (k = 0; k < balance[s]; k++, l++) {
            f += cost_f[l];
            b += cost_b[l];
        }
        sf[s] = (uint32_t)f;
        sb[s] = (uint32_t)b;
    }
    memset(&c, 0, sizeof c);
    c.stage_f = sf;
    c.stage_b = sb;
    c.send = c.recv = (uint32_t)per_action_ns;
    if (!nranks_le_cpus(lo->ranks)) c.cores = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN); /* ranks take turns */
    if ((rc = pp_simulate(&plan, &c, simwork, sizeof simwork, &sim, NULL, 0, NULL, NULL))) die(rc, "simulate");
    mlp_sim_ns = sim.makespan;
    return ns;
}

/* ---- the demo's training step beside plain torch ----
   Variants of the same step (layout x kernels) and plain torch at 1 and 2 threads, timed in
   blocks of PEER_STEPS steps that alternate (one block of each, PEER_REPS times), so that a
   change in the machine's load reaches every side alike; figures are medians over blocks. */
#define PEER_REPS    9
#define PEER_STEPS   100
/* The demo (examples/pipeline_mnist, RANKS=auto) trains each epoch on 2 ranks or on 1,
   whichever ran its first TRIAL_BLOCKS x 2 alternating blocks of TRIAL_STEPS steps faster, with
   the build's kernels (CBLAS with MLP_CBLAS): the same trial picks "the demo's" variant here,
   before the measured blocks. */
#define TRIAL_BLOCKS 2
#define TRIAL_STEPS  10
#ifdef MLP_CBLAS
#define DEMO_2R   "2r_1f1b_cblas"
#define DEMO_1R   "1r_cblas"
#define DEMO_MARK " [the demo's with blas=openblas: its RANKS=auto picked it in this run]"
#else
#define DEMO_2R   "2r_1f1b"
#define DEMO_1R   "1r"
#define DEMO_MARK " [the demo's: its RANKS=auto picked it in this run]"
#endif
static void row(const char *cs, const char *metric, const char *unit, double ours, const char *peer, double peer_value);
static int root_dir(char *out, size_t cap);
static const layout L1 = {"1r", PP_SCHED_1F1B, 1, 1};
static const int32_t all_layers[1] = {MLP_LAYERS};
typedef struct variant {
    const char *name, *what;
    const layout *lo;
    const int32_t *balance;
    int blas; /* 0: mlp.h's kernels; n: its CBLAS kernels, OpenBLAS with n threads */
    double ns[PEER_REPS], cpu[PEER_REPS];
} variant;

/* `steps` steps of variant v (and a few not timed before them); median ns per step (one block). */
static double variant_run(const variant *v, int steps, double *cpu)
{
    job j;
    double ns;
    int k, s, acc;
    setup(v->lo);
    for (k = 0; k < 4; k++) {
        for (s = 0, acc = v->balance[0]; 2 * k >= acc;) acc += v->balance[++s];
        lin_rank[k] = plan.stage_rank[s];
    }
#ifdef MLP_CBLAS
    openblas_set_num_threads(v->blas ? v->blas : 1);
#endif
    memset(&j, 0, sizeof j);
    j.steps = steps;
    j.warmup = 3;
    j.blocks = 1;
    j.mlp = 1;
#ifdef MLP_CBLAS
    ns = run_job(v->blas ? mlp_blas : mlp, MLP_LAYERS, v->balance, MB_ROWS, MB_ROWS * MLP_IN * 4, mlp_input, mlp_loss,
                 &j);
#else
    ns = run_job(mlp, MLP_LAYERS, v->balance, MB_ROWS, MB_ROWS * MLP_IN * 4, mlp_input, mlp_loss, &j);
#endif
    *cpu = j.cpu_ns[0];
    return ns;
}
static void variant_block(variant *v, int rep)
{
    v->ns[rep] = variant_run(v, PEER_STEPS, &v->cpu[rep]);
}

/* Plain torch (torch_pipe.py --plain THREADS) as a child process that times blocks on request. */
typedef struct torch_srv {
    pid_t pid;
    FILE *to, *from;
    int threads, ok;
    double loss0, ns[PEER_REPS], cpu[PEER_REPS];
    char name[600];
} torch_srv;

static double json_num(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? atof(p + strlen(key)) : -1;
}

/* Start the server and send it the model and batch as they are now; 1 once it is ready. */
static int torch_start(torch_srv *s, const char *root, int threads)
{
    char script[4200], arg[16], line[2048], blas[512];
    const char *b;
    int in[2], out[2], k, lab[M * MB_ROWS];
    s->threads = threads;
    s->ok = 0;
    snprintf(script, sizeof script, "%s/bench/pipeline/torch_pipe.py", root);
    snprintf(arg, sizeof arg, "%d", threads);
    if (pipe(in)) return 0;
    if (pipe(out)) {
        close(in[0]);
        close(in[1]);
        return 0;
    }
    for (k = 0; k < 2; k++) { /* not inherited by the next server: its input must end when ours closes */
        fcntl(in[k], F_SETFD, FD_CLOEXEC);
        fcntl(out[k], F_SETFD, FD_CLOEXEC);
    }
    fflush(stdout);
    s->pid = fork();
    if (s->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execl("/usr/bin/python3", "python3", script, "--plain", arg, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (s->pid < 0) {
        close(in[1]);
        close(out[0]);
        return 0;
    }
    s->to = fdopen(in[1], "w");
    s->from = fdopen(out[0], "r");
    for (k = 0; k < 4; k++) {
        fwrite(W[k], sizeof(float), (size_t)(mlp_dims[k] * mlp_dims[k + 1]), s->to);
        fwrite(B[k], sizeof(float), (size_t)mlp_dims[k + 1], s->to);
    }
    for (k = 0; k < M * MB_ROWS; k++) lab[k] = labels[k];
    fwrite(xdata, sizeof(float), (size_t)M * MB_ROWS * MLP_IN, s->to);
    fwrite(lab, sizeof lab[0], M * MB_ROWS, s->to);
    fflush(s->to);
    while (fgets(line, sizeof line, s->from)) {
        if (line[0] != '{') { /* SKIPPED ... */
            fputs(line, stdout);
            continue;
        }
        if (!strstr(line, "\"ready\"")) continue;
        b = strstr(line, "\"blas\": \"");
        snprintf(blas, sizeof blas, "%s", b ? b + 9 : "?");
        blas[strcspn(blas, "\"")] = 0;
        s->loss0 = json_num(line, "\"loss0\": ");
        snprintf(s->name, sizeof s->name, "torch 1.13 plain, %s, %d thread%s", blas, threads,
                 threads > 1 ? "s (OMP_WAIT_POLICY=PASSIVE)" : "");
        printf("torch plain %d thread%s: %s", threads, threads > 1 ? "s" : "", line);
        s->ok = 1;
        break;
    }
    return s->ok;
}

static void torch_block(torch_srv *s, int rep)
{
    char line[1024];
    if (!s->ok) return;
    fprintf(s->to, "%d\n", PEER_STEPS);
    fflush(s->to);
    if (!fgets(line, sizeof line, s->from) || json_num(line, "\"step_us\": ") <= 0) {
        printf("SKIPPED plain torch peer, %d threads: no answer\n", s->threads);
        s->ok = 0;
        return;
    }
    s->ns[rep] = json_num(line, "\"step_us\": ") * 1e3;
    s->cpu[rep] = json_num(line, "\"cpu_us\": ") * 1e3;
}

static void torch_stop(torch_srv *s)
{
    if (s->to) fclose(s->to); /* end of input: the server exits */
    if (s->from) fclose(s->from);
    if (s->pid > 0) waitpid(s->pid, NULL, 0);
    s->to = s->from = NULL;
    s->pid = 0;
}

/* The loss of the first step on the model and batch as they are now, one thread, mlp.h's
   forward: the plain torch servers print theirs (loss0) for the same model and batch. */
static double mlp_loss_now(const pp_layer *layers)
{
    static float act[MLP_LAYERS + 1][M * MB_ROWS * MLP_IN], dy[MB_ROWS * MLP_OUT];
    double sum = 0, l;
    int k;
    memcpy(act[0], xdata, sizeof xdata);
    for (k = 0; k < MLP_LAYERS; k++) {
        mb_tensor x = f32_matrix(act[k], M * MB_ROWS, mlp_in_width(layers, k));
        mb_tensor y = f32_matrix(act[k + 1], M * MB_ROWS, (int)(layers[k].act_bytes / 4 / MB_ROWS));
        layers[k].forward(layers[k].self, &x, &y);
    }
    for (k = 0; k < M; k++) { /* mlp_loss: per microbatch, each a share of the batch mean */
        mb_tensor y = f32_matrix(act[MLP_LAYERS] + (size_t)k * MB_ROWS * MLP_OUT, MB_ROWS, MLP_OUT);
        mb_tensor g = f32_matrix(dy, MB_ROWS, MLP_OUT);
        mlp_loss(NULL, k, &y, &g, &l);
        sum += l;
    }
    return sum;
}

static double sps(double step_ns)
{
    return step_ns > 0 ? M * MB_ROWS / (step_ns / 1e9) : 0;
}

static void mlp_peers(void)
{
    variant vs[] = {
        {"2r_1f1b", "2 ranks 1F1B, balance 1,6, mlp.h's kernels", &L2S, mlp_balance2, 0, {0}, {0}},
        {"1r", "1 rank, the 7 layers as one stage, mlp.h's kernels", &L1, all_layers, 0, {0}, {0}},
        {"4r_1f1b", "4 ranks 1F1B, balance 2,2,2,1, mlp.h's kernels", &L4, mlp_balance, 0, {0}, {0}},
#ifdef MLP_CBLAS
        {"2r_1f1b_cblas",
         "2 ranks 1F1B, balance 1,6, mlp.h's CBLAS kernels, OpenBLAS 1 thread per rank",
         &L2S,
         mlp_balance2,
         1,
         {0},
         {0}},
        {"1r_cblas",
         "1 rank, the 7 layers as one stage, mlp.h's CBLAS kernels, OpenBLAS 1 thread",
         &L1,
         all_layers,
         1,
         {0},
         {0}},
        {"1r_cblas_2threads",
         "1 rank, the 7 layers as one stage, mlp.h's CBLAS kernels, OpenBLAS 2 threads",
         &L1,
         all_layers,
         2,
         {0},
         {0}},
#endif
    };
    enum { NV = sizeof vs / sizeof vs[0] };
    torch_srv ts[2];
    char root[4096], cs[400];
    double loss_ours, loss_blas, vmed[NV], tmed[2] = {0, 0}, r[PEER_REPS];
    double t2 = 0, t1 = 0, cpu;
    int v, t, k, rep, best = -1, demo = 0, one = 0, one_blas = 0, d2 = 0, d1 = 0;
    for (v = 0; v < NV; v++) {
        if (!strcmp(vs[v].name, DEMO_2R)) d2 = v;
        if (!strcmp(vs[v].name, DEMO_1R)) d1 = v;
        if (!strcmp(vs[v].name, "1r")) one = v;
        if (!strcmp(vs[v].name, "1r_cblas")) one_blas = v;
    }
    memset(ts, 0, sizeof ts);
    signal(SIGPIPE, SIG_IGN); /* a server that died: writes fail, the bench goes on */
    loss_ours = mlp_loss_now(mlp);
#ifdef MLP_CBLAS
    loss_blas = mlp_loss_now(mlp_blas);
#else
    loss_blas = NAN; /* no CBLAS kernels in this build */
#endif
    if (!root_dir(root, sizeof root) || access("/usr/bin/python3", X_OK)) {
        printf("SKIPPED plain torch peer: no /usr/bin/python3 or no repository root\n");
    } else {
        for (t = 0; t < 2; t++) torch_start(&ts[t], root, t + 1);
        for (t = 0; t < 2; t++)
            if (ts[t].ok)
                printf("same model and batch: first-step loss ours %.6f (CBLAS kernels: %.6f), torch (%d thread%s) "
                       "%.6f\n",
                       loss_ours, loss_blas, ts[t].threads, ts[t].threads > 1 ? "s" : "", ts[t].loss0);
    }
    for (k = 0; k < TRIAL_BLOCKS; k++) { /* the demo's choice of layout, as it makes it */
        t2 += variant_run(&vs[d2], TRIAL_STEPS, &cpu);
        t1 += variant_run(&vs[d1], TRIAL_STEPS, &cpu);
    }
    demo = t2 <= t1 ? d2 : d1;
    printf("the demo's layout (RANKS=auto): %d x %d steps each: 2 ranks %.1f us, 1 rank %.1f us per step: %s; load "
           "average %s\n",
           TRIAL_BLOCKS, TRIAL_STEPS, t2 / TRIAL_BLOCKS / 1e3, t1 / TRIAL_BLOCKS / 1e3, vs[demo].name, loadavg());
    printf("mlp peers: %d alternating blocks of %d steps: %d variants of ours, plain torch 1 and 2 threads; load "
           "average %s\n",
           PEER_REPS, PEER_STEPS, (int)NV, loadavg());
    for (rep = 0; rep < PEER_REPS; rep++) /* each round starts one side later: no side always follows another */
        for (k = 0; k < NV + 2; k++) {
            int i = (k + rep) % (NV + 2);
            const struct timespec idle = {0, 200000000};
            if (i < NV)
                variant_block(&vs[i], rep);
            else
                torch_block(&ts[i - NV], rep);
            /* a BLAS's worker threads spin a while after a call (OpenBLAS: 2^28 cycles, ~0.1 s)
               before they sleep: they would take CPU from the next block, whichever side it is */
            nanosleep(&idle, NULL);
        }
#ifdef MLP_CBLAS
    openblas_set_num_threads(1);
#endif
    for (t = 0; t < 2; t++) {
        double c[PEER_REPS];
        if (!ts[t].ok) continue;
        memcpy(c, ts[t].cpu, sizeof c);
        tmed[t] = median(ts[t].ns, PEER_REPS);
        memcpy(r, ts[t].ns, sizeof r);
        printf("mlp peer %s: step %.1f us (%.0f samples/s; best block %.1f us), CPU %.1f us per step\n", ts[t].name,
               tmed[t] / 1e3, sps(tmed[t]), (qsort(r, PEER_REPS, sizeof r[0], cmp_d), r[0]) / 1e3,
               median(c, PEER_REPS) / 1e3);
        if (best < 0 || tmed[t] < tmed[best]) best = t;
    }
    for (v = 0; v < NV; v++) {
        double c[PEER_REPS];
        memcpy(c, vs[v].cpu, sizeof c);
        memcpy(r, vs[v].ns, sizeof r);
        vmed[v] = median(r, PEER_REPS);
        printf("mlp train %s (%s): step %.1f us (%.0f samples/s; best block %.1f us), CPU %.1f us per step\n",
               vs[v].name, vs[v].what, vmed[v] / 1e3, sps(vmed[v]), r[0] / 1e3, median(c, PEER_REPS) / 1e3);
    }
    for (v = 0; v < NV; v++) {
        int base = vs[v].blas ? one_blas : one; /* the same kernels on 1 rank */
        snprintf(cs, sizeof cs, "mlp_train_%s (the demo's training step, 8 microbatches of 8: %s)%s", vs[v].name,
                 vs[v].what, v == demo ? DEMO_MARK : "");
        if (best >= 0) row(cs, "samples_s", "samples/s", sps(vmed[v]), ts[best].name, sps(tmed[best]));
        for (t = 0; t < 2 && v == demo; t++)
            if (t != best && ts[t].ok) row(cs, "samples_s", "samples/s", sps(vmed[v]), ts[t].name, sps(tmed[t]));
        if (vs[v].lo->ranks > 1)
            row(cs, "samples_s", "samples/s", sps(vmed[v]),
                vs[base].blas ? "ours, 1 rank, CBLAS kernels (same run)" : "ours, 1 rank, mlp.h's kernels (same run)",
                sps(vmed[base]));
    }
    if (best >= 0) {
        for (rep = 0; rep < PEER_REPS; rep++) r[rep] = ts[best].ns[rep] / vs[demo].ns[rep];
        printf("target: the demo's MLP training (%s) >= plain torch + OpenBLAS at its best thread setting (%d "
               "thread%s in this run): %.0f vs %.0f samples/s, %.2fx (paired blocks: median %.2fx) (%s); load "
               "average %s\n",
               vs[demo].what, ts[best].threads, ts[best].threads > 1 ? "s" : "", sps(vmed[demo]), sps(tmed[best]),
               tmed[best] / vmed[demo], median(r, PEER_REPS), vmed[demo] <= tmed[best] ? "met" : "NOT met", loadavg());
    }
    for (t = 0; t < 2; t++) torch_stop(&ts[t]);
}

/* ---- sweep: every schedule on 2 ranks across microbatch counts ----
   The same model for every schedule: 4 equal layers, each F = I = W = SW_US of busy work
   per microbatch (B = I + W; the model input has no I), on 2 ranks: 2 stages of 2 layers
   (GPipe, 1F1B) or 4 stages of 1 layer, 2 per rank (Interleaved1F1B, LoopedBFS, ZB1P, ZBV).
   LoopedBFS sends a stage's M activations each way before receiving any, more than
   pg_pthread's mailboxes hold (PG_PTHREAD_SLOTS = 4 per pair) from M = 16: the executor
   takes them in while its sends wait (pipeline.h, section 9). Efficiency = ideal / step, ideal = M * (the model's F + I + W) / 2 ranks (no
   bubble, no overhead), for: the measured step (median of blocks), pp_simulate's
   prediction from the layers' time alone plus the no-op time per action and the hand-off
   latency (the `equal` rows' model), and the schedule's own bound (pp_simulate from the
   layers' time alone: its bubble only). */
#define SW_US 100.0
static uint64_t sw_iters;
static int sw_f(void *s, const mb_tensor *x, mb_tensor *y)
{
    (void)s;
    (void)x;
    (void)y;
    spin_work(sw_iters);
    return 0;
}
static int sw_bi(void *s, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    (void)s;
    (void)x;
    (void)dy;
    (void)dx;
    spin_work(sw_iters);
    return 0;
}
static int sw_bw(void *s, const mb_tensor *x, const mb_tensor *dy)
{
    (void)s;
    (void)x;
    (void)dy;
    spin_work(sw_iters);
    return 0;
}

static void sweep(double per_action_ns)
{
    static const layout los[] = {{"GPipe", PP_SCHED_GPIPE, 2, 1},
                                 {"1F1B", PP_SCHED_1F1B, 2, 1},
                                 {"Interleaved1F1B", PP_SCHED_INTERLEAVED_1F1B, 2, 2},
                                 {"LoopedBFS", PP_SCHED_LOOPED_BFS, 2, 2},
                                 {"ZB1P", PP_SCHED_INTERLEAVED_ZB, 2, 2},
                                 {"ZBV", PP_SCHED_ZBV, 2, 2}};
    static const int mbs[] = {2, 4, 8, 16};
    static const int32_t two[2] = {2, 2}, four[4] = {1, 1, 1, 1};
    static uint32_t simwork[16384];
    static pp_layer sw[4];
    double t[21], u, lat, t_start = now_ns();
    int k, li, mi, rc;
    for (k = 0; k < 4; k++) {
        memset(&sw[k], 0, sizeof sw[k]);
        sw[k].forward = sw_f;
        sw[k].backward_input = sw_bi;
        sw[k].backward_weight = sw_bw;
        sw[k].act_bytes = MB_ROWS * 64 * 4;
    }
    for (k = 0; k < 21; k++) {
        double a = now_ns();
        spin_work(100000);
        t[k] = now_ns() - a;
    }
    qsort(t, 21, sizeof t[0], cmp_d);
    sw_iters = (uint64_t)(SW_US * 1e3 / (t[0] / 1e5));
    for (k = 0; k < 21; k++) {
        double a = now_ns();
        spin_work(sw_iters);
        t[k] = now_ns() - a;
    }
    u = median(t, 21); /* one layer's F (= I = W), alone */
    lat = handoff_ns();
    printf("sweep: 2 ranks, 4 layers of F = I = W = %.1f us busy work, %.2f us per action, hand-off %.1f us; "
           "load average %s\n",
           u / 1e3, per_action_ns / 1e3, lat / 1e3, loadavg());
    for (li = 0; li < (int)(sizeof los / sizeof los[0]); li++) {
        const layout *lo = &los[li];
        int nst = lo->ranks * lo->stages_per_rank, lps = 4 / nst;
        for (mi = 0; mi < 4; mi++) {
            int m = mbs[mi], s2;
            uint32_t sf[4], sb[4], si[4], swt[4];
            pp_costs c;
            pp_sim sim, bound;
            job j;
            double ideal, meas;
            char cs[200];
            setup_nmb = m;
            setup(lo);
            setup_nmb = M;
            memset(&j, 0, sizeof j);
            j.steps = m >= 8 ? 4 : 8;
            j.warmup = 2;
            j.blocks = 3;
            meas = run_job(sw, 4, nst == 2 ? two : four, MB_ROWS, MB_ROWS * 64 * 4, noop_input, noop_loss, &j);
            ideal = 0;
            for (s2 = 0; s2 < nst; s2++) { /* per stage: lps layers; stage 0 has no I for the model input */
                sf[s2] = (uint32_t)(lps * u);
                si[s2] = (uint32_t)((lps - (s2 == 0)) * u);
                swt[s2] = (uint32_t)(lps * u);
                sb[s2] = si[s2] + swt[s2];
                ideal += (double)sf[s2] + sb[s2];
            }
            ideal = ideal * m / lo->ranks;
            memset(&c, 0, sizeof c);
            c.stage_f = sf;
            c.stage_b = sb;
            c.stage_i = si;
            c.stage_w = swt;
            if ((rc = pp_simulate(&plan, &c, simwork, sizeof simwork, &bound, NULL, 0, NULL, NULL)))
                die(rc, "simulate");
            for (s2 = 0; s2 < nst; s2++) { /* every action also pays the executor's time per action */
                sf[s2] += (uint32_t)per_action_ns;
                sb[s2] += (uint32_t)per_action_ns;
                si[s2] += (uint32_t)per_action_ns;
                swt[s2] += (uint32_t)per_action_ns;
            }
            c.send = c.recv = (uint32_t)per_action_ns;
            c.comm = (uint32_t)lat;
            if ((rc = pp_simulate(&plan, &c, simwork, sizeof simwork, &sim, NULL, 0, NULL, NULL))) die(rc, "simulate");
            printf("sweep %s M=%d: step %.1f us, simulator %.1f us, schedule bound %.1f us, ideal %.1f us; efficiency "
                   "%.2f (simulator %.2f, bound %.2f); the ranks ran %.0f %% of the time on the 2 CPUs\n",
                   lo->name, m, meas / 1e3, sim.makespan / 1e3, bound.makespan / 1e3, ideal / 1e3, ideal / meas,
                   ideal / sim.makespan, ideal / bound.makespan, 100 * median(j.cpu_ns, j.blocks) / (2 * meas));
            snprintf(cs, sizeof cs,
                     "sweep_2r_%s_m%d (4 layers F = I = W = %.0f us busy, 2 ranks; efficiency = "
                     "ideal / step)",
                     lo->name, m, SW_US);
            row(cs, "efficiency", "x", ideal / meas, "simulator", ideal / sim.makespan);
            row(cs, "efficiency", "x", ideal / meas, "schedule_bound", ideal / bound.makespan);
        }
    }
    printf("sweep: %.1f s; load average %s\n", (now_ns() - t_start) / 1e9, loadavg());
}

static void row(const char *cs, const char *metric, const char *unit, double ours, const char *peer, double peer_value)
{
    printf("{\"bench\": \"pipeline\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", "
           "\"ours\": %.4g, \"peer\": \"%s\", \"peer_value\": %.4g}\n",
           cs, metric, unit, ours, peer, peer_value);
}

/* The repository root (this program lives in <root>/build/bench/), or 0. */
static int root_dir(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    char *cut;
    if (n <= 0) return 0;
    out[n] = 0;
    cut = strstr(out, "/build/bench/");
    if (!cut) return 0;
    *cut = 0;
    return 1;
}

/* The torch Pipe peer: bench/pipeline/torch_pipe.py; step_us per case name. Its rows' peer
   name says what it ran: Pipe on CPU runs every partition on that device's one worker thread,
   with the BLAS (and its threads) and intra-op threads torch_pipe.py reports. */
static char pipe_name[600] = "torch 1.13 Pipe";
typedef struct torch_res {
    double noop4, noop2, mlp, noop4_cpu, noop2_cpu, mlp2;
    int got;
} torch_res;
/* bal2: the 2-rank layout's balance (torch runs its MLP with it too, case mlp_2parts) */
static void torch_peer(torch_res *t, const int32_t *bal2)
{
    char root[4096], cmd[8400], line[1024];
    FILE *p;
    memset(t, 0, sizeof *t);
    if (!root_dir(root, sizeof root)) return;
    if (access("/usr/bin/python3", X_OK)) {
        printf("SKIPPED torch Pipe peer: no /usr/bin/python3\n");
        return;
    }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/bench/pipeline/torch_pipe.py' --mlp mlp_2parts=%d,%d 2>/dev/null",
             root, (int)bal2[0], (int)bal2[1]);
    fflush(stdout);
    p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p)) {
        char *s = strstr(line, "\"step_us\": "), *cpu = strstr(line, "\"cpu_us\": ");
        if (line[0] != '{') {
            fputs(line, stdout);
            continue;
        }
        printf("torch: %s", line);
        if (!s) continue;
        if (strstr(line, "\"blas\": \"") && !strchr(pipe_name, '(')) {
            char blas[400];
            snprintf(blas, sizeof blas, "%s", strstr(line, "\"blas\": \"") + 9);
            blas[strcspn(blas, "\"")] = 0;
            snprintf(pipe_name, sizeof pipe_name,
                     "torch 1.13 Pipe on CPU (all partitions on its one worker thread; %s, %d BLAS threads, %d "
                     "intra-op)",
                     blas, (int)json_num(line, "\"blas_threads\": "), (int)json_num(line, "\"threads\": "));
        }
        if (strstr(line, "\"case\": \"noop\"")) {
            t->noop4 = atof(s + 11);
            t->got |= 1;
        }
        if (strstr(line, "\"case\": \"noop_2stages\"")) {
            t->noop2 = atof(s + 11);
            t->got |= 2;
        }
        if (cpu && strstr(line, "\"case\": \"noop\"")) t->noop4_cpu = atof(cpu + 10);
        if (cpu && strstr(line, "\"case\": \"noop_2stages\"")) t->noop2_cpu = atof(cpu + 10);
        if (strstr(line, "\"case\": \"mlp\"")) {
            t->mlp = atof(s + 11);
            t->got |= 4;
        }
        if (strstr(line, "\"case\": \"mlp_2parts\"")) {
            t->mlp2 = atof(s + 11);
            t->got |= 8;
        }
    }
    pclose(p);
}

/* ---- callgrind: run the no-op 4r_1f1b model CG_STEPS times under valgrind ---- */
static int callgrind_child(void)
{
    job j;
    make_layers();
    setup(&L4);
    memset(&j, 0, sizeof j);
    j.steps = CG_STEPS / (REPEATS + 1);
    j.warmup = CG_STEPS / (REPEATS + 1);
    j.blocks = REPEATS;
    run_job(noop, 4, one_each, 1, 4, noop_input, noop_loss, &j);
    return 0;
}

/* Sum of the inclusive Ir of the functions named fns[] (callgrind_annotate lines
   "Ir (pct)  file:function [object]"; lines without an object are inlined code). */
static double annotate_incl(const char *out_file, const char *const *fns, int nfns)
{
    char cmd[8400], line[2048];
    double sum = 0;
    FILE *p;
    snprintf(cmd, sizeof cmd, "callgrind_annotate --inclusive=yes --threshold=100 '%s' 2>/dev/null", out_file);
    p = popen(cmd, "r");
    if (!p) return -1;
    while (fgets(line, sizeof line, p)) {
        char *name = strrchr(line, ':'), num[64];
        int i, k = 0;
        const char *c;
        if (!name) continue;
        name++;
        for (i = 0; i < nfns; i++) {
            size_t n = strlen(fns[i]);
            if (!strncmp(name, fns[i], n) && !strncmp(name + n, " [", 2)) break; /* not inlined lines */
        }
        if (i == nfns) continue;
        for (c = line; *c && k < 63; c++) {
            if (*c >= '0' && *c <= '9')
                num[k++] = *c;
            else if (*c == ',')
                continue;
            else if (k)
                break;
        }
        num[k] = 0;
        sum += atof(num);
    }
    pclose(p);
    return sum;
}

static void callgrind_rows(void)
{
    char root[4096], exe[4096], out[4400], cmd[12000];
    static const char *const all[] = {"pp_exec_run"};
    static const char *const port[] = {"pg_pthread__send", "pg_pthread__recv", "pg_pthread__abort",
                                       "pg_pthread__recover"};
    double total, in_port, actions;
    int r;
    ssize_t n;
    if (access("/usr/bin/valgrind", X_OK) && system("command -v valgrind >/dev/null 2>&1")) {
        printf("SKIPPED callgrind rows: no valgrind\n");
        return;
    }
    if (!root_dir(root, sizeof root)) return;
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = 0;
    snprintf(out, sizeof out, "%s/build/bench/pipeline.callgrind", root);
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --toggle-collect=pp_exec_run --callgrind-out-file='%s' "
             "'%s' callgrind >/dev/null 2>&1",
             out, exe);
    fflush(stdout);
    if (system(cmd) != 0) {
        printf("SKIPPED callgrind rows: valgrind failed\n");
        return;
    }
    total = annotate_incl(out, all, 1);
    in_port = annotate_incl(out, port, 4);
    setup(&L4);
    actions = 0;
    for (r = 0; r < nranks; r++) actions += plan.len[r];
    actions *= (double)(CG_STEPS / (REPEATS + 1)) * (REPEATS + 1);
    if (total <= 0 || in_port < 0) {
        printf("SKIPPED callgrind rows: no pp_exec_run in the profile\n");
        return;
    }
    printf("callgrind: %.0f instructions in pp_exec_run (%.0f in the port's send/recv), %.0f actions\n", total, in_port,
           actions);
    row("noop_4r_1f1b_per_action_all (callgrind: executor + pg.h + pg_pthread incl. waits, per action)", "action_instr",
        "instr", total / actions, "none", 0);
    row("noop_4r_1f1b_per_action_executor (callgrind: pipeline.h + pg.h wrappers, port excluded)", "action_instr",
        "instr", (total - in_port) / actions, "none", 0);
}

int main(int argc, char **argv)
{
    static uint32_t simwork[8192];
    int k, i, rc, li;
    double ns4, ns2, ns2s, act4, act2, per_action[2] = {0, 0}, cpu4, cpu2, cpu2s;
    torch_res tr = {0, 0, 0, 0, 0, 0, 0};
    uint32_t cost[MLP_LAYERS];
    int32_t bal2[2];
    uint64_t max_part;
    job j;
    const layout *los[2] = {&L4, &L2};
    (void)mlp_argmax;
    (void)mlp_fnv1a; /* mlp.h helpers the demo uses */
    if (argc > 1 && !strcmp(argv[1], "callgrind")) return callgrind_child();

    printf("pipeline bench: 4 stages, %d microbatches, pg_pthread, %ld online CPUs; layouts 4r_1f1b "
           "(4 ranks, 1F1B) and 2r_il (2 ranks x 2 stages, Interleaved1F1B)\n",
           M, sysconf(_SC_NPROCESSORS_ONLN));
    make_layers();
    if (argc > 1 && !strcmp(argv[1], "instr")) {
        callgrind_rows();
        return 0;
    } /* only the callgrind rows */
    /* the MLP's automatic balance for 2 ranks, from a profiling run of its layers */
    mlp_init();
    mlp_profile(cost);
    if ((rc = pp_balance_by_cost(cost, MLP_LAYERS, 2, bal2, &max_part))) die(rc, "balance");
    if (argc > 1 && !strcmp(argv[1], "mlp")) goto mlp; /* `pipeline mlp`: only the MLP rows, no torch */
    if (argc > 1 && !strcmp(argv[1], "peers")) {       /* `pipeline peers`: only the rows beside plain torch */
        mlp_peers();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "sweep")) { /* `pipeline sweep`: only the sweep rows */
        ns2 = noop_step(&L2, 300, 100);
        sweep(ns2 / busiest);
        return 0;
    }

    /* 1. framework overhead: no-op model */
    ns4 = noop_step(&L4, 300, 100);
    act4 = ns4 / busiest;
    per_action[0] = act4;
    cpu4 = best_cpu_ns;
    printf("noop 4r_1f1b: step %.1f us (CPU %.1f us), busiest rank %d actions; load average %s\n", ns4 / 1e3,
           cpu4 / 1e3, busiest, loadavg());
    ns2 = noop_step(&L2, 300, 100);
    act2 = ns2 / busiest;
    per_action[1] = act2;
    cpu2 = best_cpu_ns;
    printf("noop 2r_il: step %.1f us (CPU %.1f us), busiest rank %d actions; load average %s\n", ns2 / 1e3, cpu2 / 1e3,
           busiest, loadavg());
    ns2s = noop_step(&L2S, 300, 100);
    cpu2s = best_cpu_ns;
    printf("noop 2r_1f1b_2stages: step %.1f us (CPU %.1f us)\n", ns2s / 1e3, cpu2s / 1e3);
    if (argc > 1 && !strcmp(argv[1], "noop")) return 0; /* `pipeline noop`: only these */

    if (argc > 1 && !strcmp(argv[1], "equal"))
        memset(&tr, 0, sizeof tr); /* `pipeline equal`: no torch */
    else
        torch_peer(&tr, bal2);
    row("noop_4r_1f1b_per_action (no-op step / actions of the busiest rank)", "action_ns", "ns", act4, "none", 0);
    row("noop_2r_il_per_action (no-op step / actions of the busiest rank)", "action_ns", "ns", act2, "none", 0);
    {
        const char *peer = (tr.got & 1) ? pipe_name : "none";
        double tv = (tr.got & 1) ? tr.noop4 / M : 0;
        row("noop_4r_1f1b_per_microbatch (no-op 4-stage step / 8 microbatches; torch: 4 Identity partitions, chunks 8)",
            "overhead_us", "us", ns4 / M / 1e3, peer, tv);
        row("noop_2r_il_per_microbatch (no-op 4-stage step / 8 microbatches; torch: 4 Identity partitions, chunks 8)",
            "overhead_us", "us", ns2 / M / 1e3, peer, tv);
        if (tr.got & 1) {
            /* The headline is the layout with no more rank threads than CPUs (2r_il on this
               2-CPU machine: a rank per CPU, as a rank per core or device in deployment).
               4r_1f1b runs 4 rank threads on 2 CPUs: every hand-off to a rank whose CPU is
               taken waits for the OS to switch threads, so its figure measures the
               scheduler more than the framework; it is reported beside it. */
            const double hl = nranks_le_cpus(4) ? ns4 : ns2;
            printf("target: overhead per microbatch >= 100x lower than torch Pipe (4 stages, chunks 8): "
                   "headline %s (ranks <= CPUs) %.0fx (%s); 4r_1f1b %.0fx, 2r_il %.0fx; load average %s\n",
                   nranks_le_cpus(4) ? "4r_1f1b" : "2r_il", tr.noop4 * 1e3 / hl,
                   tr.noop4 * 1e3 / hl >= 100 ? "met" : "NOT met", tr.noop4 * 1e3 / ns4, tr.noop4 * 1e3 / ns2,
                   loadavg());
        }
        row("noop_2r_1f1b_2stages_per_microbatch (2-stage no-op step / 8; torch: 2 Identity partitions, chunks 8)",
            "overhead_us", "us", ns2s / M / 1e3, (tr.got & 2) ? pipe_name : "none", (tr.got & 2) ? tr.noop2 / M : 0);
        /* the same, as CPU time of the whole process (every rank / torch thread) per microbatch:
           what the framework burns, less disturbed by other processes than wall time */
        row("noop_4r_1f1b_cpu_per_microbatch (process CPU time per no-op 4-stage step / 8; torch the same)",
            "cpu_overhead_us", "us", cpu4 / M / 1e3, peer, (tr.got & 1) ? tr.noop4_cpu / M : 0);
        row("noop_2r_il_cpu_per_microbatch (process CPU time per no-op 4-stage step / 8; torch the same)",
            "cpu_overhead_us", "us", cpu2 / M / 1e3, peer, (tr.got & 1) ? tr.noop4_cpu / M : 0);
        row("noop_2r_1f1b_2stages_cpu_per_microbatch (process CPU time per 2-stage no-op step / 8; torch the same)",
            "cpu_overhead_us", "us", cpu2s / M / 1e3, (tr.got & 2) ? pipe_name : "none",
            (tr.got & 2) ? tr.noop2_cpu / M : 0);
        if (tr.got & 1)
            printf("target (CPU time): overhead per microbatch >= 100x lower than torch Pipe: 4r_1f1b %.0fx, 2r_il "
                   "%.0fx\n",
                   tr.noop4_cpu * 1e3 / cpu4, tr.noop4_cpu * 1e3 / cpu2);
    }

    /* 2. equal stages: busy work, then sleeps, on both layouts */
    {
        double t[21], f_ns, b_ns, fa, ba, lat_ns, pred[MAXSTEPS], ratio[MAXSTEPS], walls[MAXSTEPS], pmed, rmed, wmed;
        double wallpred[MAXSTEPS];
        double ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
        int mode, nst;
        for (i = 0; i < 21; i++) {
            double a = now_ns();
            spin_work(100000);
            t[i] = now_ns() - a;
        }
        qsort(t, 21, sizeof t[0], cmp_d); /* the fastest of 21: least disturbed by others */
        work_iters = (uint64_t)(f_ns_target / (t[0] / 1e5));
        for (li = 0; li < 2; li++)
            for (mode = 0; mode < 2; mode++) {
                const layout *lo = los[li];
                pp_costs c;
                pp_sim sim, alone;
                double ideal, meas, o = per_action[li];
                int pinned = !mode && lo->ranks > 2;
                char cs[200];
                snprintf(cs, sizeof cs,
                         "equal_%s_%s (4 stages F 200 us B 400 us %s%s; vs pp_simulate from the "
                         "layers' %s in this run, the no-op time per action, the hand-off latency%s)",
                         lo->name, mode ? "sleep" : "busy", mode ? "as sleeps" : "busy work",
                         pinned ? ", rank r on CPU r % 2" : "", pinned ? "CPU times" : "times",
                         pinned ? ", costs.cores = 2" : "");
                sleep_mode = mode;
                for (i = 0; i < 21; i++) {
                    double a = now_ns();
                    do_cost(1);
                    t[i] = now_ns() - a;
                }
                fa = median(t, 21);
                for (i = 0; i < 21; i++) {
                    double a = now_ns();
                    do_cost(2);
                    t[i] = now_ns() - a;
                }
                ba = median(t, 21);
                lat_ns = handoff_ns();
                setup(lo);
                pin_cpus = pinned ? 2 : 0;
                nf = nb = 0;
                memset(step_of, 0, sizeof step_of);
                memset(stage_f_ns, 0, sizeof stage_f_ns);
                memset(stage_b_ns, 0, sizeof stage_b_ns);
                memset(stage_fc_ns, 0, sizeof stage_fc_ns);
                memset(stage_bc_ns, 0, sizeof stage_bc_ns);
                recording = 1;
                memset(&j, 0, sizeof j);
                j.steps = 10;
                j.warmup = 2;
                meas = run_job(eq, 4, one_each, MB_ROWS, MB_ROWS * 64 * 4, noop_input, noop_loss, &j);
                recording = 0;
                pin_cpus = 0;
                f_ns = median(fdur, nf < NDUR ? nf : NDUR); /* the layers' own times, this run */
                b_ns = median(bdur, nb < NDUR ? nb : NDUR);
                /* every measured step against the simulator given that step's own action costs:
                   per stage, the mean F and B layer time in the step (whatever the CPU did
                   meanwhile: other processes, a rank sharing the CPU), plus the no-op time per
                   action on every action, and the hand-off latency (costs.comm) */
                /* The model that describes the layout: ranks with a CPU each (or sleeping, so
                   the CPUs are not what they wait for): one unit per rank, each action costing
                   its wall time in the step. Busy ranks pinned 2 per CPU (more ranks than
                   CPUs): they take turns on it, so costs.cores = 2 (rank r on unit r % 2, the
                   pinning), each action costing its own thread CPU time; the wall time of an
                   action there also holds the time the other rank ran (it would count twice). */
                nst = step_of[0] < MAXSTEPS ? step_of[0] : MAXSTEPS;
                for (i = 0; i < nst; i++) {
                    uint32_t sf[4], sb[4];
                    int k2, pass;
                    for (pass = 0; pass < 1 + pinned; pass++) {
                        int turns = pinned && !pass;
                        for (k2 = 0; k2 < 4; k2++) {
                            sf[k2] = (uint32_t)((turns ? stage_fc_ns : stage_f_ns)[i][k2] / M + o);
                            sb[k2] = (uint32_t)((turns ? stage_bc_ns : stage_b_ns)[i][k2] / M + o);
                        }
                        memset(&c, 0, sizeof c);
                        c.stage_f = sf;
                        c.stage_b = sb;
                        c.send = c.recv = (uint32_t)o;
                        c.comm = (uint32_t)lat_ns;
                        c.cores = turns ? 2 : 0;
                        if ((rc = pp_simulate(&plan, &c, simwork, sizeof simwork, &sim, NULL, 0, NULL, NULL)))
                            die(rc, "simulate");
                        if (pass)
                            wallpred[i] = sim.makespan; /* the one-unit-per-rank model, for comparison */
                        else
                            pred[i] = sim.makespan;
                    }
                    ratio[i] = step_wall[i] / pred[i];
                    walls[i] = step_wall[i];
                }
                pmed = median(pred, nst);
                rmed = median(ratio, nst);
                wmed = median(walls, nst);
                /* the same from the layers' median times (undisturbed calls) for every step */
                memset(&c, 0, sizeof c); /* ns; every action also pays the executor's time per action */
                c.f = (uint32_t)(f_ns + o);
                c.b = (uint32_t)(b_ns + o);
                c.send = c.recv = (uint32_t)o;
                c.comm = (uint32_t)lat_ns;
                if ((rc = pp_simulate(&plan, &c, simwork, sizeof simwork, &sim, NULL, 0, NULL, NULL)))
                    die(rc, "simulate");
                ideal = M * (fa + ba) * 4 / lo->ranks;
                printf("equal %s %s: F %.1f us, B %.1f us median in the run (%.1f, %.1f alone), %.2f us per action, "
                       "hand-off %.1f us (median %.1f us); %d steps: measured median %.1f us (blocks: %.1f us), "
                       "simulator from each step's "
                       "costs median %.1f us, step/prediction median %.3f; from the median costs %.1f us (bubble %.1f "
                       "%%), "
                       "ideal %.1f us; load average %s\n",
                       lo->name, mode ? "sleep" : "busy", f_ns / 1e3, b_ns / 1e3, fa / 1e3, ba / 1e3, o / 1e3,
                       lat_ns / 1e3, handoff_med_ns / 1e3, nst, wmed / 1e3, meas / 1e3, pmed / 1e3, rmed,
                       sim.makespan / 1e3, sim.bubble_ppm / 1e4, ideal / 1e3, loadavg());
                if (!mode) { /* busy work: did the ranks get the CPUs? (process CPU time / wall, per CPU used) */
                    double used = lo->ranks < ncpu ? lo->ranks : ncpu;
                    qsort(j.cpu_ns, (size_t)j.blocks, sizeof(double), cmp_d);
                    printf("equal %s busy: the ranks ran %.0f %% of the time on the %.0f CPUs they can use "
                           "(process CPU time / wall time; below 100 %% other processes held the CPUs, time "
                           "no per-action cost shows); CPU %.1f us per step for %.1f us of layer work\n",
                           lo->name, 100 * j.cpu_ns[j.blocks / 2] / (meas * used), used, j.cpu_ns[j.blocks / 2] / 1e3,
                           M * (fa + ba) * 4 / 1e3);
                }
                meas = wmed;
                row(cs, "step_us", "us", meas / 1e3, "simulator", pmed / 1e3);
                row(cs, "step_us", "us", meas / 1e3, "ideal", ideal / 1e3);
                printf("target: equal %s %s measured within 10 %% of the simulator: %+.1f %% (median over steps of "
                       "step / its prediction; %s; model: %s)\n",
                       lo->name, mode ? "sleep" : "busy", (rmed - 1) * 100,
                       rmed <= 1.10 && rmed >= 0.90 ? "met" : "NOT met",
                       pinned
                           ? "4 busy ranks pinned 2 per CPU take turns, costs.cores = 2, each action's thread CPU time"
                           : "a unit per rank, each action's wall time");
                if (pinned) { /* the model that ignores the shared CPUs, for comparison */
                    double wp = median(wallpred, nst);
                    printf("equal %s busy: simulator with a unit per rank from each step's wall costs: median %.1f us "
                           "(measured %+.1f %%): it misses the turns the ranks take on a CPU\n",
                           lo->name, wp / 1e3, (meas / wp - 1) * 100);
                    row(cs, "step_us", "us", meas / 1e3, "simulator_unit_per_rank_wall_costs", wp / 1e3);
                }
                if (pinned) { /* a priori: costs measured alone, 2 ranks per CPU take turns */
                    c.f = (uint32_t)(fa + o);
                    c.b = (uint32_t)(ba + o);
                    c.cores = 2;
                    if ((rc = pp_simulate(&plan, &c, simwork, sizeof simwork, &alone, NULL, 0, NULL, NULL)))
                        die(rc, "simulate");
                    printf("equal %s busy: simulator from costs alone with costs.cores = 2 (rank r on CPU r %% 2): "
                           "%.1f us (%+.1f %%)\n",
                           lo->name, alone.makespan / 1e3, (meas / alone.makespan - 1) * 100);
                    row(cs, "step_us", "us", meas / 1e3, "simulator_alone_costs_cores2", alone.makespan / 1e3);
                }
            }
    }

    if (argc > 1) return 0;
    /* 3. every schedule on 2 ranks across microbatch counts */
    sweep(per_action[1]);
mlp:
    /* 4. the demo's MLP: the demo's layout (4r_1f1b, balance 2,2,2,1: torch's 4
       partitions), and 2 ranks (a rank per CPU), 1F1B, with the balance pp_balance_by_cost
       gives for the profiled layer costs (torch: the same 2 partitions) */
    {
        double ns4m, ns2m, cpu4m, cpu2m, sim4m, sim2m, tot = 0;
        const char *peer = (tr.got & 4) ? pipe_name : "none", *peer2 = (tr.got & 8) ? pipe_name : "none";
        char c2[200];
        for (k = 0; k < MLP_LAYERS; k++) tot += cost[k];
        printf("mlp: layer costs (us, one microbatch of %d, forward + backward):", MB_ROWS);
        for (k = 0; k < MLP_LAYERS; k++) printf(" %.1f", cost[k] / 1e3);
        printf("; automatic balance for 2 ranks %d,%d (largest stage %.0f %% of the work); load average %s\n",
               (int)bal2[0], (int)bal2[1], 100.0 * (double)max_part / tot, loadavg());
        ns4m = mlp_run(&L4, mlp_balance, 200, per_action[0]);
        cpu4m = mlp_cpu_ns;
        sim4m = mlp_sim_ns;
        ns2m = mlp_run(&L2S, bal2, 200, per_action[1]);
        cpu2m = mlp_cpu_ns;
        sim2m = mlp_sim_ns;
        printf("mlp: 4r_1f1b (balance 2,2,2,1) step %.1f us (CPU %.1f us, simulator %.1f us), 2r_1f1b (balance %d,%d) "
               "step %.1f us (CPU %.1f us, simulator %.1f us); torch Pipe 4 partitions %.1f us, 2 partitions %.1f us; "
               "load average %s\n",
               ns4m / 1e3, cpu4m / 1e3, sim4m / 1e3, (int)bal2[0], (int)bal2[1], ns2m / 1e3, cpu2m / 1e3, sim2m / 1e3,
               tr.mlp, tr.mlp2, loadavg());
        row("mlp_784_256_128_64_10", "step_us", "us", ns4m / 1e3, peer, tr.mlp);
        row("mlp_784_256_128_64_10", "samples_s", "samples/s", M * MB_ROWS / (ns4m / 1e9), peer,
            tr.mlp ? M * MB_ROWS / (tr.mlp / 1e6) : 0);
        snprintf(c2, sizeof c2,
                 "mlp_784_256_128_64_10_2r_1f1b_auto (2 ranks, 1F1B, balance %d,%d from measured "
                 "layer costs; torch: the same 2 partitions)",
                 (int)bal2[0], (int)bal2[1]);
        row(c2, "step_us", "us", ns2m / 1e3, peer2, tr.mlp2);
        row(c2, "samples_s", "samples/s", M * MB_ROWS / (ns2m / 1e9), peer2,
            tr.mlp2 ? M * MB_ROWS / (tr.mlp2 / 1e6) : 0);
        row("mlp_784_256_128_64_10", "step_us", "us", ns4m / 1e3, "simulator", sim4m / 1e3);
        row(c2, "step_us", "us", ns2m / 1e3, "simulator", sim2m / 1e3);
        if (tr.got & 4)
            printf("target: training step faster than torch Pipe (same model, batch 64, chunks 8): 4r_1f1b "
                   "(the demo's layout, torch's 4 partitions) %.1fx (%s)",
                   tr.mlp * 1e3 / ns4m, tr.mlp * 1e3 < ns4m ? "NOT met" : "met");
        if (tr.got & 8)
            printf("; 2r_1f1b balance %d,%d (torch the same) %.1fx (%s)", (int)bal2[0], (int)bal2[1],
                   tr.mlp2 * 1e3 / ns2m, tr.mlp2 * 1e3 < ns2m ? "NOT met" : "met");
        if (tr.got & 4) printf("\n");
    }
    /* 5. the demo's training step beside plain torch (alternating blocks) */
    if (argc == 1) mlp_peers();
    if (argc > 1) return 0;

    /* 6. instructions per action */
    callgrind_rows();
    return 0;
}
