/* fw_jobs.h — the job board of the bare-metal test images (tests/target/riscv_smp,
   tests/target/sse200_smp): core 0 runs cmocka and hands each multi-rank test's job to the
   other cores, which wait for it with the board's pg_shm hooks (wait / notify), run it as
   their rank and report back. Plain aligned words and full barriers only. Include once. */
#ifndef FW_JOBS_H
#define FW_JOBS_H
#include <stdint.h>
#include "ports/pg_shm.h"

#ifndef FW_JOBS_MAX_CORES
#define FW_JOBS_MAX_CORES 8
#endif

typedef int (*fw_job_fn)(int core, void *arg);
static fw_job_fn volatile fw__job;
static void *volatile fw__job_arg;
static volatile uint32_t fw__job_gen, fw__job_done[FW_JOBS_MAX_CORES];
static volatile int fw__job_result[FW_JOBS_MAX_CORES];

/* Core 0: run job(c, arg) on cores 0..n-1 (itself as core 0); results[c] gets its return. */
static void fw_jobs_run(const pg_shm_hooks *h, int n, fw_job_fn job, void *arg, int *results)
{
    int c;
    uint32_t gen = fw__job_gen + 1u;
    fw__job = job;
    fw__job_arg = arg;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    fw__job_gen = gen;
    for (c = 1; c < n; c++) h->notify(h->ctx, c);
    results[0] = job(0, arg);
    for (c = 1; c < n; c++) {
        while (fw__job_done[c] != gen) h->wait(h->ctx, 0);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        results[c] = fw__job_result[c];
    }
}

/* Cores 1..n-1: run every job core 0 posts, forever. */
static void fw_jobs_serve(const pg_shm_hooks *h, int core)
{
    uint32_t seen = 0;
    for (;;) {
        while (fw__job_gen == seen) h->wait(h->ctx, core);
        seen = fw__job_gen;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        fw__job_result[core] = fw__job(core, fw__job_arg);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        fw__job_done[core] = seen;
        h->notify(h->ctx, 0);
    }
}
#endif
