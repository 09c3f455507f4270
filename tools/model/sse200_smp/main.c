/* sse200_smp/main.c — an exported model on both Cortex-M33 cores of Arm's SSE-200 (QEMU
   mps2-an521 -smp 2; `scons model TARGET=sse200`, `scons onnx`).

   Built by site_scons/splitcore/model.py with the start-up, stdio and linker script of
   tests/target/sse200_smp/, the headers tools/onnx2c.py wrote (model.h, model_weights.h,
   model_plan.h, exported for 2 ranks or 1) and model_input.h (the samples to run, from the
   user's .npy, padded to whole steps). CPU n is rank n of a pg_shm world (sse200.h hooks:
   MHU doorbell + WFI; the region in the SSE-200's SRAM) and runs tools/model/runner.h, the
   code the host runs: tensor mode with halo exchanges and collectives over pg_shm, or its
   pipeline stage under pipeline.h's executor (the ranks: ../fw_model.h, shared with
   riscv_smp/); CPU1 idles after a 1-rank export. CPU0 prints every sample's output as hex float
   bits (`out <i>: ...`, read back into out.npy), the argmax of the first 100
   (`predictions: ...`) and a hash of their bits (`logits fnv-1a: ...`), the lines compared
   with the host run of the same export. QEMU's exit status (semihosting) is the result. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SPLITCORE_IMPLEMENTATION
#define MODEL_RUNNER_IMPLEMENTATION
#include "tools/model/runner.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "tests/target/sse200_smp/fw_board.h"
#include "model.h"
#include "model_plan.h"
#include "model_input.h"

#if MODEL_RANKS > FW_CORES
#error "the SSE-200 has 2 cores: export the model with --ranks 1 or 2"
#endif
#define FW_MODEL_HOOKS fw_hooks
#include "tools/model/fw_model.h"

void fw_core_main(unsigned cpu)
{
    int rc;
    if (cpu == 0)
        printf("%s firmware: %d Cortex-M33 core%s, %s mode, %s, %d samples (pg_shm, QEMU %s, bare metal)\n", MODEL_NAME,
               MODEL_RANKS, MODEL_RANKS > 1 ? "s" : "", MODEL_PIPELINE ? "pipeline" : "tensor",
               MODEL_DTYPE == MB_I8 ? "int8" : "f32", MODEL_INPUT_SAMPLES, fw_board);
    if ((rc = fw_run_cores(cpu, fw_model_rank))) {
        fw_model_failed();
        fw_exit(rc < 0 ? -rc : rc);
    }
    fw_model_print();
    fw_exit(0);
}
