/* riscv_smp/main.c — `scons demo`, part 2: the trained Fashion-MNIST MLP as a 4-stage
   inference pipeline on 4 bare-metal harts of QEMU's RISC-V "virt" board.

   Built by SConstruct (DEMO_FIRMWARE) with the start-up, C library and linker script of
   tests/target/riscv_smp/ and the headers the host run wrote into build/demo/: the weights
   (fmnist_weights.h), the first 100 test images (fmnist_test100.h) and the forward-only plan
   (fmnist_plan.h, emitted by pp_emit_c after pp_mailbox_depth proved it needs no mailbox
   depth). pipeline.h is compiled with PP_NO_PLANNER, PP_NO_TAKEIN and PP_NO_TRAINING: only the inference executor is
   linked, without take-in (the plan carries the deadlock freedom). Hart h is rank h of a
   pg_shm world (riscv_virt.h hooks: CLINT doorbell + wfi) and runs its row of the plan
   (../fw_mlp.h, shared with sse200_smp/); the layer code is mlp.h, the host's own, so with
   the same summation order and IEEE single precision (soft float here, SSE without
   contraction on the host) every logit has the host's bits. Hart 0 prints `predictions: ...`
   and `logits fnv-1a: ...` (a hash of the logits' bits); SConstruct compares both lines with
   the host's. It leaves through the SiFive test device (0x5555 = pass, 0x3333 | code << 16 =
   fail), so QEMU's exit status is the result. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FW_RANKS 4 /* harts */
#define FW_SLOTS 4

#define SPLITCORE_BASE_IMPLEMENTATION /* splitcore_strerror names a failure's codes */
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PP_NO_PLANNER    1
#define PP_NO_TAKEIN     1 /* the plan was proven on the host: forward-only, depth 0 */
#define PP_NO_TRAINING   1
#define PP_MAILBOX_SLOTS FW_SLOTS
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/riscv_virt.h"
#include "tests/target/riscv_smp/fw_board.h"
#include "examples/pipeline_mnist/mlp.h"
#include "fmnist_weights.h"
#include "fmnist_test100.h"
#include "fmnist_plan.h"

#define FW_PLAN       fm_plan
#define FW_BALANCE    mlp_balance
#define fw_rank_hooks pg_shm_rv_hooks
#include "examples/pipeline_mnist/fw_mlp.h"

/* Each hart's executor storage, exact (stage h: Linear and ReLU of mlp_dims[h] -> mlp_dims[h + 1];
   the last stage has no ReLU). */
static uint64_t mem0[FW_EXEC_BYTES(784 + 2 * 256) / 8], mem1[FW_EXEC_BYTES(256 + 2 * 128) / 8],
    mem2[FW_EXEC_BYTES(128 + 2 * 64) / 8], mem3[FW_EXEC_BYTES(64 + 10) / 8];
static int fw_exec_storage(int rank, void **mem, size_t *bytes)
{
    static uint64_t *const m[FW_RANKS] = {mem0, mem1, mem2, mem3};
    static const size_t b[FW_RANKS] = {sizeof mem0, sizeof mem1, sizeof mem2, sizeof mem3};
    if (rank < 0 || rank >= FW_RANKS) return PP_ERR_ARG;
    *mem = m[rank];
    *bytes = b[rank];
    return 0;
}

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    int rc;
    uint64_t t0 = pg_shm_rv_mtime();
    if (hart == 0)
        printf("pipeline_mnist firmware: 784-256-128-64-10 MLP, 4 stages on %d harts (pg_shm, "
               "QEMU virt, bare metal), forward-only plan of %d microbatches x %d images\n",
               FW_RANKS, (int)fm_plan[0].nmb, ROWS);
    if ((rc = fw_run_harts(hart, FW_RANKS, rank_main))) {
        int i;
        for (i = 0; i < FW_RANKS; i++)
            if (cores[i].rc) fw_mlp_fail(i, cores[i].rc);
        fw_exit(rc);
    }
    fw_exit(fw_mlp_report((unsigned)((pg_shm_rv_mtime() - t0) / (PG_SHM_RV_MTIME_HZ / 1000u))));
}

FW_TRAP_HANDLER("pipeline_mnist firmware")
