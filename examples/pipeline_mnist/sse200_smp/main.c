/* sse200_smp/main.c — `scons demo`, the dual Cortex-M33 half: the trained Fashion-MNIST MLP
   as a 2-stage inference pipeline on both Cortex-M33 cores of Arm's SSE-200 (QEMU
   mps2-an521 -smp 2).

   Built by SConstruct (DEMO_FIRMWARE) with the start-up, stdio and linker script of
   tests/target/sse200_smp/ and the headers the host run wrote into build/demo/: the weights
   (fmnist_weights.h), the first 100 test images (fmnist_test100.h) and the 2-stage
   forward-only plan with its balance (fmnist_plan2.h: the cut pp_balance_by_cost makes by
   multiply-adds, the first Linear on CPU0 and the other six layers on CPU1, emitted by
   pp_emit_c after pp_mailbox_depth proved it needs no mailbox depth). pipeline.h is compiled with PP_NO_PLANNER and PP_NO_TAKEIN: only the executor is
   linked, without take-in. CPU n is rank n of a pg_shm world (sse200.h hooks: MHU doorbell
   + WFI) and runs its row of the plan (../fw_mlp.h, shared with riscv_smp/); the layer code
   is mlp.h, the host's own, so with the
   same summation order and IEEE single precision (soft float here: AN521's CPU0 has no
   FPU; SSE without contraction on the host) every logit has the host's bits. CPU0 prints
   `predictions: ...` and `logits fnv-1a: ...`; SConstruct compares both lines with the
   host's. QEMU's exit status is the result (semihosting SYS_EXIT_EXTENDED). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FW_RANKS 2 /* the two cores */
#define FW_SLOTS 4

#define MICROBATCH_IMPLEMENTATION /* the executor's activation layout uses mb_merge */
#include "microbatch.h"
#define PP_NO_PLANNER
#define PP_NO_TAKEIN     /* the plan was proven on the host: forward-only, depth 0 */
#define PP_MAILBOX_SLOTS FW_SLOTS
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "tests/target/sse200_smp/fw_board.h"
#include "examples/pipeline_mnist/mlp.h"
#include "fmnist_weights.h"
#include "fmnist_test100.h"
#include "fmnist_plan2.h"

#define FW_PLAN       fm_plan2
#define FW_BALANCE    fm_balance2
#define fw_rank_hooks fw_hooks
#include "examples/pipeline_mnist/fw_mlp.h"

void fw_core_main(unsigned cpu)
{
    int rc;
    pg_shm_hooks h;
    uint32_t t0;
    fw_hooks(&h);
    t0 = h.now_us(h.ctx);
    if (cpu == 0)
        printf("pipeline_mnist firmware: 784-256-128-64-10 MLP, 2 stages (%d + %d layers) on the 2 Cortex-M33 "
               "cores of the SSE-200 (pg_shm, QEMU %s, bare metal), forward-only plan of %d microbatches x %d "
               "images\n",
               (int)fm_balance2[0], (int)fm_balance2[1], fw_board, (int)fm_plan2[0].nmb, ROWS);
    if ((rc = fw_run_cores(cpu, rank_main))) fw_exit(rc);
    fw_exit(fw_mlp_report((h.now_us(h.ctx) - t0) / 1000u));
}
