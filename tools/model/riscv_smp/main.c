/* riscv_smp/main.c — an exported model on bare-metal RISC-V harts of QEMU's "virt" board
   (`scons model TARGET=rv64imac`, `scons models`).

   Built by SConstruct with the start-up, C library and linker script of
   tests/target/riscv_smp/, the headers tools/onnx2c.py wrote (model.h, model_weights.h,
   model_plan.h) and model_input.h (the samples to run, from the user's .npy, padded to whole
   steps). Hart h is rank h of a pg_shm world (riscv_virt.h hooks: CLINT doorbell + wfi) and
   runs tools/model/runner.h, the code the host runs: tensor mode with halo exchanges and
   collectives over pg_shm, or its pipeline stage under pipeline.h's executor (the ranks:
   ../fw_model.h, shared with sse200_smp/). Hart 0 prints every sample's output as hex float bits (`out <i>: ...`, read back into out.npy),
   the argmax of the first 100 (`predictions: ...`) and a hash of their bits (`logits
   fnv-1a: ...`), the lines SConstruct compares with the host run of the same export. It
   leaves through the SiFive test device (0x5555 = pass, 0x3333 | code << 16 = fail). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SPLITCORE_IMPLEMENTATION
#define MODEL_RUNNER_IMPLEMENTATION
#include "tools/model/runner.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "ports/platform/riscv_virt.h"
#include "tests/target/riscv_smp/fw_board.h"
#include "model.h"
#include "model_plan.h"
#include "model_input.h"

#define HARTS          MODEL_RANKS
#define FW_MODEL_HOOKS pg_shm_rv_hooks
#include "tools/model/fw_model.h"

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    int rc;
    uint64_t t0 = pg_shm_rv_mtime();
    if (hart == 0)
        printf("%s firmware: %d hart%s, %s mode, %s, %d samples (pg_shm, QEMU virt, bare metal)\n", MODEL_NAME, HARTS,
               HARTS > 1 ? "s" : "", MODEL_PIPELINE ? "pipeline" : "tensor", MODEL_DTYPE == MB_I8 ? "int8" : "f32",
               MODEL_INPUT_SAMPLES);
    if ((rc = fw_run_harts(hart, HARTS, fw_model_rank))) {
        fw_model_failed();
        fw_exit(rc);
    }
    fw_model_print();
    printf("%u ms of guest time\n", (unsigned)((pg_shm_rv_mtime() - t0) / (PG_SHM_RV_MTIME_HZ / 1000u)));
    fw_exit(0);
}

FW_TRAP_HANDLER("model firmware")
