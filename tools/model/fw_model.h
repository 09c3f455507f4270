/* fw_model.h — what the runner's firmware boards share (riscv_smp/main.c: the harts of QEMU
   virt; sse200_smp/main.c: the SSE-200's two Cortex-M33 cores): each core's rank of a pg_shm
   world running the exported model on the samples of model_input.h, and the lines the build
   compares with the host run of the same export.

   Include after the runner's and pg_shm's implementations, model.h, model_plan.h and
   model_input.h, with FW_MODEL_HOOKS(h) defined (this core's pg_shm hooks into *h). */
#ifndef FW_MODEL_H
#define FW_MODEL_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FW_MODEL_SLOTS   PP_MAILBOX_SLOTS
#define FW_MODEL_PAYLOAD 4096
#define FW_MODEL_REGION  PG_SHM_REGION_BYTES(MODEL_RANKS, FW_MODEL_SLOTS, FW_MODEL_PAYLOAD)
#define FW_MODEL_STEPS   ((MODEL_INPUT_SAMPLES + MODEL_STEP_SAMPLES - 1) / MODEL_STEP_SAMPLES)

static uint32_t fw_region[FW_MODEL_REGION / 4] __attribute__((aligned(64), section(".splitcore_shm")));
static uint64_t fw_arena[MODEL_RANKS][MODEL_ARENA_MAX / 8 + 1], fw_scratch[MODEL_RANKS][MODEL_SCRATCH_MAX / 8 + 1],
    fw_exec[MODEL_RANKS][MODEL_EXEC_MAX / 8 + 1];
static pg_shm fw_shm[MODEL_RANKS];
static mr_rank fw_ranks[MODEL_RANKS];
static float fw_out[FW_MODEL_STEPS * MODEL_STEP_SAMPLES * MODEL_OUT_NUMEL];

/* Core `core` as rank `core` (cores past the model's ranks return at once): every step of
   the samples; the output rank's results land in fw_out. */
static int fw_model_rank(int core)
{
    pg_shm_hooks hooks;
    pg_group *g;
    int rc, k;
    if (core >= MODEL_RANKS) return 0;
    FW_MODEL_HOOKS(&hooks);
    if (core == 0 && (rc = pg_shm_format(fw_region, sizeof fw_region, MODEL_RANKS, FW_MODEL_SLOTS, FW_MODEL_PAYLOAD)))
        return rc;
    if ((rc = pg_shm_init(&fw_shm[core], fw_region, sizeof fw_region, core, &hooks))) return rc;
    g = pg_shm_group(&fw_shm[core]);
    pg_set_timeout(g, 600000);
    if ((rc = mr_init(&fw_ranks[core], &model, core, g, fw_arena[core], model_arena_bytes[core], fw_scratch[core],
                      model_scratch_bytes[core], fw_exec[core], model_exec_bytes[core])))
        return rc;
    for (k = 0; k < FW_MODEL_STEPS; k++)
        if ((rc = mr_step(&fw_ranks[core], model_input + (size_t)k * MODEL_STEP_SAMPLES * MODEL_IN_NUMEL,
                          fw_out + (size_t)k * MODEL_STEP_SAMPLES * MODEL_OUT_NUMEL)))
            return rc;
    return pg_barrier(g);
}

/* After a failed run: the node each failing rank stopped at. */
static void fw_model_failed(void)
{
    int i;
    for (i = 0; i < MODEL_RANKS; i++)
        if (fw_ranks[i].err_node >= 0)
            printf("rank %d failed at node %d (%s)\n", i, (int)fw_ranks[i].err_node, model.names[fw_ranks[i].err_node]);
}

/* Every sample's output as hex float bits (`out <i>: ...`), the argmax of the first 100
   (`predictions: ...`) and a hash of their bits (`logits fnv-1a: ...`). */
static void fw_model_print(void)
{
    int i, j;
    uint32_t h = 2166136261u;
    for (i = 0; i < MODEL_INPUT_SAMPLES; i++) {
        printf("out %d:", i);
        for (j = 0; j < MODEL_OUT_NUMEL; j++) {
            uint32_t b;
            memcpy(&b, &fw_out[(size_t)i * MODEL_OUT_NUMEL + (size_t)j], 4);
            printf(" %08x", (unsigned)b);
        }
        printf("\n");
    }
    printf("predictions:");
    for (i = 0; i < MODEL_INPUT_SAMPLES && i < 100; i++)
        printf(" %d", mr_argmax(fw_out + (size_t)i * MODEL_OUT_NUMEL, MODEL_OUT_NUMEL));
    h = mr_fnv1a(fw_out,
                 (size_t)(MODEL_INPUT_SAMPLES < 100 ? MODEL_INPUT_SAMPLES : 100) * MODEL_OUT_NUMEL * sizeof(float), h);
    printf("\nlogits fnv-1a: %08x\n", (unsigned)h);
}
#endif
