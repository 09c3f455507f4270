/* main.c — `scons bench`: conv2d spatially sharded (issue #7 item 7). A 1x32x64x64 f32
   NCHW input, 32 -> 32 channels, 3x3, stride 1, padding 1 (37.7 M multiply-adds): the
   input's H sharded on 2 pg_pthread ranks, each rank exchanging its one-row halo with the
   other and convolving its 32 output rows (dt_conv2d; its output stays sharded: the
   rank's own 1x32x32x64 local tensor, as a DTensor's local shard), against the same conv2d on one rank (dt_conv2d_ref on the
   whole input) — the peer is the 1-rank time, and the speedup row sets it beside Pete
   Warden's RP2040 figure (two cores splitting one conv: 1.9x, "Doubling the speed of ...
   on the RP2040", petewarden.com, 2024).
   CPUs: the program first widens its affinity to every online CPU (a mask inherited from
   whatever started it is reported and dropped), then pins rank r to CPU r; the 1-rank call
   alternates between rank 0 and rank 1 so it sees both CPUs as the 2-rank call does (the
   two vCPUs of a VM need not be equally fast at a given moment).
   Timing: wall time from a barrier before the call to a barrier after it on every rank
   (so the slower rank counts), the 2-rank call and the 1-rank call alternating in one
   run (both see the same load from other processes); medians of REPEATS. On a machine
   busy with other work the two ranks rarely hold two cores at once, so a second row
   gives the same ratio in thread CPU time (1 rank / the slower of the 2 ranks, halo
   exchange and its waiting included): what two otherwise idle cores would give. A third
   row counts instructions (valgrind --tool=callgrind on this program, one call of each:
   1-rank instructions / the larger rank's on 2 ranks, load-independent; SKIPPED without
   valgrind). Each rank's output shard is compared with its rows of the 1-rank output
   after timing (bit-equal, else the program fails).
   The machine's ceiling for this split: in the same rounds both threads also run, at
   once, an INDEPENDENT 1-rank conv2d of their own 32 input rows (dt_conv2d_ref on the
   1x32x32x64 shard, zero padding where the sharded call has halo rows: 1 % less work, no
   communication, no shared output). Its rows give the speedup two free CPUs allow for
   half the work each, and the sharded call's time as a fraction of it (1.0: the halo
   exchange costs nothing). On this 2-vCPU KVM guest that ceiling is below the
   instruction ratio: a half conv alone takes half the 1-rank time (1.97-1.98x), but 2-13 %
   longer while the other vCPU runs one too, and one vCPU is at times much slower than the
   other (a throughput-bound SIMD loop up to 1.7x slower, a latency-bound one not: host
   SMT siblings busy), which the slower rank then sets. One JSON row per measurement
   (DESIGN.md). No assertions. */
#define _GNU_SOURCE /* sched_setaffinity, pthread_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION
#include "dtensor_conv.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"

#define C       32
#define HW      64
#define REPEATS 31

static pg_pthread_world world;
static float x[C * HW * HW], w[C * C * 9], b[C], yone[C * HW * HW];
/* lx: each rank's input shard; ly: its output shard, in its own buffer (as a strided
   view of one shared global output, each rank writing every other 8 KB, the sharded call
   took 3-5 % longer when both ranks ran, ~0 % when one ran alone, with the global output
   64- or 4096-byte aligned alike: no shared cache line; the guest has no hardware counters
   to say more); hy: the independent halves' outputs */
static float lx[2][C * HW * HW / 2], ly[2][C * HW * HW / 2], hy[2][C * HW * HW / 2];
static uint64_t scratch[2][(C * (HW / 2 + 2) * HW * 4 + C * HW * 4) / 8 + 16];
static dt_mesh mesh[2];
static dt_comm comm[2];
static double t_one[REPEATS], t_two[REPEATS], c_one[REPEATS], c_two[2][REPEATS], t_half[REPEATS], c_half[2][REPEATS];
static int ncpu, repeats = REPEATS, differs[2]; /* repeats: 1 under callgrind */

/* The two calls, through pointers so each stays a function callgrind can count. */
static int conv_one_(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *wt, const mb_tensor *bias,
                     mb_tensor *out)
{
    return dt_conv2d_ref(p, in, wt, bias, out);
}
static int conv_two_(dt_comm *c, const dt_conv2d_params *p, const dt_tensor *in, const dt_tensor *wt,
                     const mb_tensor *bias, mb_tensor *out, void *scr, size_t bytes)
{
    return dt_conv2d(c, p, in, wt, bias, NULL, out, scr, bytes);
}
static int (*volatile conv_one)(const dt_conv2d_params *, const mb_tensor *, const mb_tensor *, const mb_tensor *,
                                mb_tensor *) = conv_one_;
/* the independent halves call dt_conv2d_ref through their own name (not counted by the callgrind row) */
static int conv_half_(const dt_conv2d_params *p, const mb_tensor *in, const mb_tensor *wt, const mb_tensor *bias,
                      mb_tensor *out)
{
    return dt_conv2d_ref(p, in, wt, bias, out);
}
static int (*volatile conv_half)(const dt_conv2d_params *, const mb_tensor *, const mb_tensor *, const mb_tensor *,
                                 mb_tensor *) = conv_half_;
static int (*volatile conv_two)(dt_comm *, const dt_conv2d_params *, const dt_tensor *, const dt_tensor *,
                                const mb_tensor *, mb_tensor *, void *, size_t) = conv_two_;

static double clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
#define now_us() clock_us(CLOCK_MONOTONIC)
#define cpu_us() clock_us(CLOCK_THREAD_CPUTIME_ID)

static int cmp_double(const void *a, const void *b_)
{
    double p = *(const double *)a, q = *(const double *)b_;
    return (p > q) - (p < q);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static int body(pg_group *g, void *arg)
{
    static const int32_t xs[4] = {1, C, HW, HW}, ws[4] = {C, C, 3, 3}, one = C;
    int me = pg_rank(g), r, rc;
    int32_t ms[1] = {2}, ls[4];
    dt_placement sh[1] = {DT_SHARD(2)}, rep[1] = {DT_REPLICATE()};
    dt_conv2d_params p = DT_CONV2D(DT_NCHW, 1, 1, 1, 1);
    dt_tensor in, wt;
    dt_spec os;
    mb_tensor gx, v, tb, ty, tx, lyv, hv;
    size_t need;
    double t0, c0;
    (void)arg;
    if ((rc = dt_mesh_init(&mesh[me], 1, ms, NULL, me)) || (rc = dt_comm_init(&comm[me], &mesh[me], g))) return rc;
    dt_spec_init(&in.spec, &mesh[me], sh, 1, MB_F32, 4, xs, NULL);
    dt_spec_init(&wt.spec, &mesh[me], rep, 1, MB_F32, 4, ws, NULL);
    mb_tensor_init(&gx, x, MB_F32, 4, xs);
    dt_local_view(&in.spec, me, &gx, &v);
    mb_tensor_init(&in.local, lx[me], MB_F32, 4, v.shape);
    mb_copy(&in.local, &v);
    mb_tensor_init(&wt.local, w, MB_F32, 4, ws);
    mb_tensor_init(&tb, b, MB_F32, 1, &one);
    mb_tensor_init(&tx, x, MB_F32, 4, xs);
    mb_tensor_init(&ty, yone, MB_F32, 4, xs);
    if ((rc = dt_conv2d_scratch_bytes(&p, &in.spec, &wt.spec, &need))) return rc;
    if (need > sizeof scratch[me]) return -1000;
    dt_conv2d_out_spec(&p, &in.spec, &wt.spec, &os);
    dt_local_shape(&os, me, ls, NULL);
    mb_tensor_init(&lyv, ly[me], MB_F32, 4, ls);
    mb_tensor_init(&hv, hy[me], MB_F32, 4, in.local.shape); /* this rank's half conv: 1x32x32x64 */
    if (me == 0 && (rc = dt_conv2d_ref(&p, &tx, &wt.local, &tb, &ty))) return rc;
    if (ncpu >= 2) { /* rank r on CPU r */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(me, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    for (r = repeats > 1 ? -2 : 0; r < repeats; r++) { /* two warm-up rounds */
        int solo = r & 1;                              /* the rank that runs the 1-rank call: both CPUs in turn */
        if ((rc = pg_barrier(g))) return rc;
        t0 = now_us();
        c0 = cpu_us();
        if (me == solo && (rc = conv_one(&p, &tx, &wt.local, &tb, &ty))) return rc;
        if (me == solo && r >= 0) c_one[r] = cpu_us() - c0;
        if ((rc = pg_barrier(g))) return rc;
        if (me == 0 && r >= 0) t_one[r] = now_us() - t0;
        if ((rc = pg_barrier(g))) return rc;
        t0 = now_us();
        c0 = cpu_us();
        if ((rc = conv_two(&comm[me], &p, &in, &wt, &tb, &lyv, scratch[me], need))) return rc;
        if (r >= 0) c_two[me][r] = cpu_us() - c0;
        if ((rc = pg_barrier(g))) return rc;
        if (me == 0 && r >= 0) t_two[r] = now_us() - t0;
        if ((rc = pg_barrier(g))) return rc; /* the ceiling: both ranks' halves at once, independent */
        t0 = now_us();
        c0 = cpu_us();
        if ((rc = conv_half(&p, &in.local, &wt.local, &tb, &hv))) return rc;
        if (r >= 0) c_half[me][r] = cpu_us() - c0;
        if ((rc = pg_barrier(g))) return rc;
        if (me == 0 && r >= 0) t_half[r] = now_us() - t0;
    }
    mb_tensor_init(&gx, yone, MB_F32, 4, xs); /* the 1-rank output's rows of this rank, bit for bit */
    dt_local_view(&os, me, &gx, &v);
    mb_copy(&hv, &v);
    differs[me] = memcmp(hy[me], ly[me], sizeof ly[me]) != 0;
    return 0;
}

static void row(const char *cas, const char *metric, const char *unit, double ours, const char *peer, double pv)
{
    printf("{\"bench\": \"conv\", \"case\": \"%s\", \"metric\": \"%s\", \"unit\": \"%s\", \"ours\": %.3f, "
           "\"peer\": \"%s\", \"peer_value\": %.3f}\n",
           cas, metric, unit, ours, peer, pv);
}

/* Inclusive instructions of function fn in a callgrind output file (callgrind_annotate's
   line "Ir (pct)  file:fn [object]"); 0 if absent. */
static double incl_ir(const char *file, const char *fn)
{
    char cmd[1200], line[2048], num[64];
    double v = 0;
    FILE *f;
    snprintf(cmd, sizeof cmd, "callgrind_annotate --inclusive=yes --threshold=100 '%s' 2>/dev/null", file);
    if (!(f = popen(cmd, "r"))) return 0;
    while (fgets(line, sizeof line, f)) {
        char *at = strstr(line, fn);
        const char *c;
        int k = 0;
        if (!at || at == line || at[-1] != ':' || strncmp(at + strlen(fn), " [", 2)) continue;
        for (c = line; *c && k < 63; c++) {
            if (*c >= '0' && *c <= '9')
                num[k++] = *c;
            else if (*c != ',' && k)
                break;
        }
        num[k] = 0;
        v = atof(num);
    }
    pclose(f);
    return v;
}

/* The instruction row: this program under callgrind, one call of each (argument "cg"),
   then per thread file: the 1-rank call's count, the larger of the 2-rank call's. */
static void callgrind_row(void)
{
    char exe[1024], dir[] = "/tmp/conv_cgXXXXXX", cmd[3000], file[1200];
    double one = 0, two = 0, v;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int t;
    if (n <= 0 || system("command -v valgrind >/dev/null 2>&1 && command -v callgrind_annotate >/dev/null 2>&1")) {
        printf("SKIPPED callgrind row: no valgrind\n");
        return;
    }
    exe[n] = 0;
    if (!mkdtemp(dir)) return;
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --separate-threads=yes --toggle-collect=conv_one_ "
             "--toggle-collect=conv_two_ --callgrind-out-file=%s/cg '%s' cg >/dev/null 2>&1",
             dir, exe);
    fflush(stdout);
    if (system(cmd) == 0)
        for (t = 1; t <= 8; t++) {
            snprintf(file, sizeof file, "%s/cg-%02d", dir, t);
            if (access(file, R_OK)) continue;
            if ((v = incl_ir(file, "conv_one_")) > one) one = v;
            if ((v = incl_ir(file, "conv_two_")) > two) two = v;
        }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* nothing to do */
    }
    if (one <= 0 || two <= 0) {
        printf("SKIPPED callgrind row: valgrind failed or no counts\n");
        return;
    }
    fprintf(stderr, "conv bench: callgrind %.0f instructions on 1 rank, %.0f on the larger of 2 ranks\n", one, two);
    row("conv2d 1x32x64x64 3x3 pad 1 f32: 1-rank instructions / the larger rank's on 2 ranks (callgrind, "
        "load-independent)",
        "instr_speedup", "x", one / two, "Pete Warden's RP2040 split conv (2 cores)", 1.9);
}

int main(int argc, char **argv)
{
    int i, rc, cg = argc > 1 && !strcmp(argv[1], "cg");
    double one, two, cone, ctwo, c1, half, chalf;
    cpu_set_t all, had;
    for (i = 0; i < C * HW * HW; i++) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    for (i = 0; i < C * C * 9; i++) w[i] = (float)((i * 13) % 61) / 300.0f - 0.1f;
    for (i = 0; i < C; i++) b[i] = (float)i / 32.0f;
    /* every online CPU, whatever mask this process inherited */
    ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    CPU_ZERO(&all);
    for (i = 0; i < ncpu && i < CPU_SETSIZE; i++) CPU_SET(i, &all);
    if (!sched_getaffinity(0, sizeof had, &had) && !CPU_EQUAL(&had, &all))
        fprintf(stderr, "conv bench: inherited CPU affinity of %d of %d CPUs, widened to all\n", CPU_COUNT(&had), ncpu);
    sched_setaffinity(0, sizeof all, &all);
    if (cg) repeats = 1;
    rc = pg_pthread_run(&world, 2, body, NULL);
    if (rc) {
        fprintf(stderr, "conv bench failed: %d\n", rc);
        return 1;
    }
    if (cg) return 0;
    if (differs[0] || differs[1]) {
        fprintf(stderr, "conv bench: the sharded output differs from the 1-rank output\n");
        return 1;
    }
    one = median(t_one, REPEATS);
    two = median(t_two, REPEATS);
    row("conv2d 1x32x64x64 3x3 pad 1 f32, H sharded on 2 ranks (pg_pthread, halo exchange)", "latency_us", "us", two,
        "the same conv2d on 1 rank", one);
    row("conv2d 1x32x64x64 3x3 pad 1 f32: 1-rank time / 2-rank time", "speedup", "x", one / two,
        "Pete Warden's RP2040 split conv (2 cores)", 1.9);
    cone = median(c_one, REPEATS);
    ctwo = median(c_two[0], REPEATS);
    c1 = median(c_two[1], REPEATS);
    if (c1 > ctwo) ctwo = c1;
    row("conv2d 1x32x64x64 3x3 pad 1 f32: 1-rank CPU time / slower rank's CPU time on 2 ranks (load-independent)",
        "cpu_speedup", "x", cone / ctwo, "Pete Warden's RP2040 split conv (2 cores)", 1.9);
    half = median(t_half, REPEATS);
    chalf = median(c_half[0], REPEATS);
    c1 = median(c_half[1], REPEATS);
    if (c1 > chalf) chalf = c1;
    row("conv2d 1x32x64x64 3x3 pad 1 f32: 1-rank time / time of 2 independent half convs at once (1x32x32x64 each, "
        "no halo exchange: the machine's ceiling for this split)",
        "ceiling_speedup", "x", one / half, "Pete Warden's RP2040 split conv (2 cores)", 1.9);
    row("conv2d 1x32x64x64 3x3 pad 1 f32: 1-rank CPU time / the slower independent half conv's CPU time (ceiling, "
        "load-independent)",
        "ceiling_cpu_speedup", "x", cone / chalf, "Pete Warden's RP2040 split conv (2 cores)", 1.9);
    row("conv2d 1x32x64x64 3x3 pad 1 f32, H sharded on 2 ranks: the independent halves' time / the sharded call's "
        "(1.0: nothing lost to the halo exchange)",
        "of_ceiling", "x", half / two, "2 independent half convs at once (same run)", 1.0);
    fprintf(stderr, "conv bench: CPU 1 rank %.0f us, 2 ranks (slower) %.0f us, independent halves (slower) %.0f us\n",
            cone, ctwo, chalf);
    fprintf(stderr,
            "conv bench: 1 rank %.0f us (%.2f GMAC/s), 2 ranks %.0f us, %.2fx; independent halves %.0f us, %.2fx\n",
            one, 37748736.0 / one / 1e3, two, one / two, half, one / half);
    callgrind_row();
    return 0;
}
