/* m33.c — `scons bench-pg` / `scons bench`: pg_shm's small all_reduce on the two Cortex-M33
   cores of the SSE-200, from the logs of the FW_COLL_COST firmwares
   (tests/target/sse200_smp/main.c) that ran under QEMU -icount shift=0 on mps2-an521: argv
   holds the native build's log, then the default build's. There one instruction is 1 ns of
   guest time and the cores run in turn (a waiting core sleeps in WFI after its polls), so a
   call's guest time is the instructions both cores executed for it: copies, reduction, polls,
   the doorbell and its interrupt. Prints one JSON row per size (DESIGN.md format: ours = the
   native build, peer = the default build), the one-way latency rows, and the target
   as a plain line. No assertions; a missing log or line is said, not skipped silently. */
#include <stdio.h>
#include <string.h>

#define NS 5 /* all_reduce 8 B, 64 B, 256 B, 1 KB; one-way 8 B */
static const char *const cases[NS] = {"all_reduce_8B", "all_reduce_64B", "all_reduce_256B", "all_reduce_1KB",
                                      "one_way_8B"};
static const char *const names[NS] = {"all_reduce f32 8B", "all_reduce f32 64B", "all_reduce f32 256B",
                                      "all_reduce f32 1KB", "one-way latency 8B"};

/* ns[k] from the `cost: <build> <case> <ns>` lines of `path`; 0 when all were found. */
static int read_log(const char *path, const char *build, long *ns)
{
    char line[256], b[64], c[64];
    long v;
    int k, found = 0;
    FILE *f = fopen(path, "r");
    for (k = 0; k < NS; k++) ns[k] = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "cost: %63s %63s %ld", b, c, &v) == 3 && !strcmp(b, build))
            for (k = 0; k < NS; k++)
                if (!strcmp(c, cases[k])) {
                    ns[k] = v;
                    found++;
                }
    fclose(f);
    return found == NS ? 0 : -1;
}

int main(int argc, char **argv)
{
    long nat[NS], def[NS];
    int k;
    if (argc < 3 || read_log(argv[1], "pg_shm_native", nat) || read_log(argv[2], "pg_shm", def)) {
        printf("pg_m33: the FW_COLL_COST firmwares' logs are missing or incomplete (%s, %s): no rows\n",
               argc > 1 ? argv[1] : "-", argc > 2 ? argv[2] : "-");
        return 1;
    }
    for (k = 0; k < NS; k++)
        printf("{\"bench\": \"pg_m33\", \"case\": \"pg_shm native %s, 2 ranks (SSE-200, 2 Cortex-M33, QEMU -icount)\", "
               "\"metric\": \"guest_ns_per_call\", \"unit\": \"instructions\", \"ours\": %ld, "
               "\"peer\": \"pg_shm default (pg.h's ring collectives, same firmware)\", \"peer_value\": %ld}\n",
               names[k], nat[k], def[k]);
    printf("target: pg_shm native all_reduce 64B <= 2x its one-way latency on the 2 Cortex-M33 (instructions): "
           "%ld vs 2 x %ld (%.2fx)\n",
           nat[1], nat[4], (double)nat[1] / (double)nat[4]);
    return 0;
}
