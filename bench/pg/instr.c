/* instr.c — `scons bench`: instructions per call of pg_shm's world collectives, counted by
   callgrind in a single-thread harness, for the default build (pg.h's collectives over the
   rings) and PG_SHM_NATIVE_COLLECTIVES, 2 and 4 cores, f32, 8 B to 16 KB.

   Run without arguments, the program starts itself under valgrind's callgrind (`--harness`)
   and prints one JSON row per case (DESIGN.md format: ours = the native build, peer = the
   default build, same harness). Under callgrind the cores are coroutines of one thread
   (ucontext): pg_shm is built with PG_SHM_SPIN 1 (instr_default.c, instr_native.c) and a
   core whose wait hook is called hands over to the next core, so nothing spins and the
   count is the same on every run and machine (load-independent, unlike the timings). Per
   case: REPEATS untimed calls on every core, then CALLGRIND_ZERO_STATS, CALLS calls on every
   core, CALLGRIND_DUMP_STATS; the count of the hand-overs is subtracted (each priced by a
   case that only hands over) and the rest divided by CALLS x cores: the instructions one
   core executes per call, a core that arrives first included (one failed poll, the
   announcement that it waits). pg_pthread and MPI block their threads while they wait, so
   they cannot run in this harness; bench/pg/collectives.c times all four. No assertions. */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <dirent.h>
#include <valgrind/callgrind.h>
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#include "shm_port.h"

#define CALLS 200
#define WARM  20
#define STACK (256 * 1024)
#define MAXN  4096 /* floats: 16 KB */
enum { C_BARRIER, C_BROADCAST, C_ALL_REDUCE, C_ALL_GATHER, C_REDUCE_SCATTER, C_SWITCH, NC };
static const char *const coll_names[NC] = {"barrier",    "broadcast",      "all_reduce",
                                           "all_gather", "reduce_scatter", "switch"};
static const size_t sizes[] = {8, 64, 256, 1024, 16384};
static const char *const size_names[] = {"8B", "64B", "256B", "1KB", "16KB"};
#define NS (sizeof sizes / sizeof sizes[0])

static ucontext_t main_ctx, core_ctx[BENCH_SHM_MAX_CORES];
static char stacks[BENCH_SHM_MAX_CORES][STACK];
static int ncores, finished[BENCH_SHM_MAX_CORES], coll, calls;
static size_t bytes;
static unsigned long switches;
static pg_group *groups[BENCH_SHM_MAX_CORES];
static const bench_shm_build *build;
static float sendbuf[BENCH_SHM_MAX_CORES][MAXN * BENCH_SHM_MAX_CORES],
    recvbuf[BENCH_SHM_MAX_CORES][MAXN * BENCH_SHM_MAX_CORES];

/* Hand over to the next core that has not finished (or back to main when all have). */
static void hand_over(int self)
{
    int k, next = -1;
    switches++;
    for (k = 1; k <= ncores; k++)
        if (!finished[(self + k) % ncores]) {
            next = (self + k) % ncores;
            break;
        }
    if (next < 0 || next == self) return;
    swapcontext(&core_ctx[self], &core_ctx[next]);
}

static void wait_hook(void *ctx, int self)
{
    (void)ctx;
    hand_over(self);
}

static int one_call(int me)
{
    pg_group *g = groups[me];
    size_t n = bytes / 4;
    switch (coll) {
    case C_BARRIER: return pg_barrier(g);
    case C_BROADCAST: return pg_broadcast(g, sendbuf[me], n, MB_F32, 0);
    case C_ALL_REDUCE: return pg_all_reduce(g, sendbuf[me], recvbuf[me], n, MB_F32, PG_SUM);
    case C_ALL_GATHER: return pg_all_gather(g, sendbuf[me], recvbuf[me], n / (size_t)ncores, MB_F32);
    case C_REDUCE_SCATTER: return pg_reduce_scatter(g, sendbuf[me], recvbuf[me], n / (size_t)ncores, MB_F32, PG_SUM);
    default: hand_over(me); return 0;
    }
}

static void core_main(int me)
{
    pg_shm_hooks h;
    int i;
    if (!groups[me]) {
        memset(&h, 0, sizeof h);
        h.wait = wait_hook;
        groups[me] = build->attach(me, &h);
        if (!groups[me]) exit(2);
        pg_set_timeout(groups[me], PG_WAIT_FOREVER);
    }
    for (i = 0; i < calls; i++)
        if (one_call(me) != 0) exit(3);
    finished[me] = 1;
    hand_over(me);
    setcontext(&main_ctx); /* every core finished */
}

/* Run `calls` calls on every core, cores taking turns at their waits. */
static void run_cores(int n)
{
    int c;
    for (c = 0; c < ncores; c++) {
        finished[c] = 0;
        getcontext(&core_ctx[c]);
        core_ctx[c].uc_stack.ss_sp = stacks[c];
        core_ctx[c].uc_stack.ss_size = STACK;
        core_ctx[c].uc_link = &main_ctx;
        makecontext(&core_ctx[c], (void (*)(void))core_main, 1, c);
    }
    calls = n;
    swapcontext(&main_ctx, &core_ctx[0]);
}

/* Under callgrind: every case of one build, each dumped as "<build>|<coll>|<size>|<cores>|<switches>". */
static void harness(int which)
{
    static const int core_counts[] = {2, 4};
    char label[128];
    size_t k, s;
    int c, i;
    build = which ? &bench_shm_native : &bench_shm_default;
    for (k = 0; k < 2; k++) {
        ncores = core_counts[k];
        if (build->format(ncores) != PG_OK) exit(1);
        memset(groups, 0, sizeof groups);
        for (c = 0; c < ncores; c++)
            for (i = 0; i < MAXN * BENCH_SHM_MAX_CORES; i++) sendbuf[c][i] = (float)((i + c) % 7);
        for (coll = 0; coll < NC; coll++)
            for (s = 0; s < (coll == C_BARRIER || coll == C_SWITCH ? 1 : NS); s++) {
                bytes = sizes[s];
                run_cores(WARM);
                switches = 0;
                CALLGRIND_ZERO_STATS;
                run_cores(CALLS);
                snprintf(label, sizeof label, "%s|%s|%s|%d|%lu", build->name, coll_names[coll], size_names[s], ncores,
                         switches);
                CALLGRIND_DUMP_STATS_AT(label);
            }
    }
}

/* ---- the driver: callgrind on itself, then the rows ---- */
typedef struct {
    char key[96];
    double per_call;
} result;
static result results[2][64];
static int nresults[2];

static void collect(int which, const char *dir)
{
    char path[4400], line[512], label[512] = "";
    unsigned long long ir;
    double sw_cost[BENCH_SHM_MAX_CORES + 1] = {0};
    DIR *d = opendir(dir);
    struct dirent *e;
    int pass;
    if (!d) return;
    for (pass = 0; pass < 2; pass++) { /* the hand-over price first, then the cases */
        rewinddir(d);
        while ((e = readdir(d)) != NULL) {
            FILE *f;
            char bname[64], cname[64], sname[16];
            int n;
            unsigned long sw;
            if (strncmp(e->d_name, "cg.", 3)) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            f = fopen(path, "r");
            if (!f) continue;
            ir = 0;
            label[0] = 0;
            while (fgets(line, sizeof line, f)) {
                if (!strncmp(line, "desc: Trigger: Client Request: ", 31))
                    snprintf(label, sizeof label, "%s", line + 31);
                if (!strncmp(line, "summary: ", 9) || !strncmp(line, "totals: ", 8))
                    ir = strtoull(strchr(line, ' ') + 1, NULL, 10);
            }
            fclose(f);
            if (sscanf(label, "%63[^|]|%63[^|]|%15[^|]|%d|%lu", bname, cname, sname, &n, &sw) != 5 || n < 1 ||
                n > BENCH_SHM_MAX_CORES)
                continue;
            if (!strcmp(cname, "switch")) {
                if (pass == 0) sw_cost[n] = (double)ir / (double)sw;
                continue;
            }
            if (pass == 1 && nresults[which] < 64) {
                result *r = &results[which][nresults[which]++];
                snprintf(r->key, sizeof r->key, "%s %s %d", cname, sname, n);
                r->per_call = ((double)ir - (double)sw * sw_cost[n]) / ((double)CALLS * n);
            }
        }
    }
    closedir(d);
}

static int run_build(const char *self, int which, char *dir)
{
    char cmd[9000];
    if (!mkdtemp(dir)) return -1;
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --dump-instr=no --callgrind-out-file=%s/cg.%%p "
             "%s --harness %d > %s/out 2>&1",
             dir, self, which, dir);
    if (system(cmd) != 0) return -1;
    collect(which, dir);
    return 0;
}

static void cleanup(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    char dirs[2][32] = {"/tmp/pg_instrXXXXXX", "/tmp/pg_instrXXXXXX"};
    int which, i, j;
    if (argc == 3 && !strcmp(argv[1], "--harness")) {
        harness(atoi(argv[2]));
        return 0;
    }
    if (system("valgrind --version > /dev/null 2>&1") != 0) {
        printf("pg_instr: valgrind not found: no instruction counts\n");
        return 0;
    }
    for (which = 0; which < 2; which++)
        if (run_build(argv[0], which, dirs[which]) != 0) {
            printf("pg_instr: the callgrind run of %s failed\n", which ? "pg_shm native" : "pg_shm");
            return 1;
        }
    for (i = 0; i < nresults[1]; i++) {
        const result *r = &results[1][i];
        for (j = 0; j < nresults[0] && strcmp(results[0][j].key, r->key); j++) {}
        printf("{\"bench\": \"pg_collectives\", \"case\": \"pg_shm native %s ranks\", \"metric\": \"per_call_instr\", "
               "\"unit\": \"instructions\", \"ours\": %.0f, \"peer\": \"pg_shm default (pg.h's ring collectives, same "
               "harness)\", \"peer_value\": %.0f}\n",
               r->key, r->per_call, j < nresults[0] ? results[0][j].per_call : -1.0);
    }
    for (which = 0; which < 2; which++) cleanup(dirs[which]);
    return 0;
}
