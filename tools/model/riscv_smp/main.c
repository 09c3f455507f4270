/* riscv_smp/main.c — an exported model on bare-metal RISC-V harts of QEMU's "virt" board
   (`scons model TARGET=rv64imac`, `scons models`).

   Built by SConstruct with the start-up, C library and linker script of
   tests/target/riscv_smp/, the headers tools/onnx2c.py wrote (model.h, model_weights.h,
   model_plan.h) and model_input.h (the samples to run, from the user's .npy, padded to whole
   steps). Hart h is rank h of a pg_shm world (riscv_virt.h hooks: CLINT doorbell + wfi) and
   runs tools/model/runner.h, the code the host runs: tensor mode with halo exchanges and
   collectives over pg_shm, or its pipeline stage under pipeline.h's executor. Hart 0
   prints every sample's output as hex float bits (`out <i>: ...`, read back into out.npy),
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

#define HARTS        MODEL_RANKS
#define SLOTS        PP_MAILBOX_SLOTS
#define PAYLOAD      4096
#define REGION_BYTES PG_SHM_REGION_BYTES(HARTS, SLOTS, PAYLOAD)
#define STEPS        ((MODEL_INPUT_SAMPLES + MODEL_STEP_SAMPLES - 1) / MODEL_STEP_SAMPLES)

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(64), section(".splitcore_shm")));
static uint64_t arena[HARTS][MODEL_ARENA_MAX / 8 + 1], scratch[HARTS][MODEL_SCRATCH_MAX / 8 + 1],
    execmem[HARTS][MODEL_EXEC_MAX / 8 + 1];
static pg_shm shm[HARTS];
static mr_rank ranks[HARTS];
static float out[STEPS * MODEL_STEP_SAMPLES * MODEL_OUT_NUMEL];

static int rank_main(int hart)
{
    pg_shm_hooks hooks;
    pg_group *g;
    int rc, k;
    pg_shm_rv_hooks(&hooks);
    if (hart == 0 && (rc = pg_shm_format(region, sizeof region, HARTS, SLOTS, PAYLOAD))) return rc;
    if ((rc = pg_shm_init(&shm[hart], region, sizeof region, hart, &hooks))) return rc;
    g = pg_shm_group(&shm[hart]);
    pg_set_timeout(g, 600000);
    if ((rc = mr_init(&ranks[hart], &model, hart, g, arena[hart], model_arena_bytes[hart], scratch[hart],
                      model_scratch_bytes[hart], execmem[hart], model_exec_bytes[hart])))
        return rc;
    for (k = 0; k < STEPS; k++)
        if ((rc = mr_step(&ranks[hart], model_input + (size_t)k * MODEL_STEP_SAMPLES * MODEL_IN_NUMEL,
                          out + (size_t)k * MODEL_STEP_SAMPLES * MODEL_OUT_NUMEL)))
            return rc;
    return pg_barrier(g); /* the output rank's results are in out[] */
}

void fw_hart_main(unsigned long hart);
void fw_hart_main(unsigned long hart)
{
    int i, j, rc;
    uint32_t h = 2166136261u;
    uint64_t t0 = pg_shm_rv_mtime();
    if (hart == 0)
        printf("%s firmware: %d hart%s, %s mode, %s, %d samples (pg_shm, QEMU virt, bare metal)\n", MODEL_NAME, HARTS,
               HARTS > 1 ? "s" : "", MODEL_PIPELINE ? "pipeline" : "tensor", MODEL_DTYPE == MB_I8 ? "int8" : "f32",
               MODEL_INPUT_SAMPLES);
    if ((rc = fw_run_harts(hart, HARTS, rank_main))) {
        for (i = 0; i < HARTS; i++)
            if (ranks[i].err_node >= 0)
                printf("hart %d failed at node %d (%s)\n", i, (int)ranks[i].err_node, model.names[ranks[i].err_node]);
        fw_exit(rc);
    }
    for (i = 0; i < MODEL_INPUT_SAMPLES; i++) {
        printf("out %d:", i);
        for (j = 0; j < MODEL_OUT_NUMEL; j++) {
            uint32_t b;
            memcpy(&b, &out[(size_t)i * MODEL_OUT_NUMEL + (size_t)j], 4);
            printf(" %08x", (unsigned)b);
        }
        printf("\n");
    }
    printf("predictions:");
    for (i = 0; i < MODEL_INPUT_SAMPLES && i < 100; i++)
        printf(" %d", mr_argmax(out + (size_t)i * MODEL_OUT_NUMEL, MODEL_OUT_NUMEL));
    h = mr_fnv1a(out, (size_t)(MODEL_INPUT_SAMPLES < 100 ? MODEL_INPUT_SAMPLES : 100) * MODEL_OUT_NUMEL * sizeof(float),
                 h);
    printf("\nlogits fnv-1a: %08x\n%u ms of guest time\n", (unsigned)h,
           (unsigned)((pg_shm_rv_mtime() - t0) / (PG_SHM_RV_MTIME_HZ / 1000u)));
    fw_exit(0);
}

FW_TRAP_HANDLER("model firmware")
