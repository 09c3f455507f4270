/* firmware.c — one core's firmware around a hook file of ports/platform/, for the compile
   checks and sizes of `scons test` / `scons size` (site_scons/splitcore/ports.py); compiled,
   not linked (no chip start-up here).

   PORT_<NAME> picks the hook file. The doorbell handler and the hook set's initialisation are
   extern functions taking the caller's state (what a firmware's vector table and main call),
   so the object holds exactly pg_shm and the hooks. Without PORT_SIZE_ONLY the pipeline
   executor of an emitted plan (PP_NO_PLANNER) comes too, with a rank's main that attaches
   and runs its row of the plan: the object a firmware links. */
#ifndef PORT_SIZE_ONLY
#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define PP_NO_PLANNER 1
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#else
#define SPLITCORE_SEPARATE_IMPLEMENTATIONS /* pg_shm and the hooks alone: pg.h's code is not counted */
#endif
#include "ports/pg.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"

#if defined(PORT_RP2040)
#include "ports/platform/rp2040.h"
typedef pg_shm_rp2040 port_state;
#define PORT_ISR(b)          pg_shm_rp2040_isr(b)
#define PORT_HOOKS(h, b, hz) (pg_shm_rp2040_hooks((h), (b)), (void)(hz), (int)pg_shm_rp2040_core())
#elif defined(PORT_RP2350)
#include "ports/platform/rp2350.h"
typedef pg_shm_rp2350 port_state;
#define PORT_ISR(b)          pg_shm_rp2350_isr(b)
#define PORT_HOOKS(h, b, hz) (pg_shm_rp2350_hooks((h), (b), 0u), (void)(hz), (int)pg_shm_rp2350_core())
#elif defined(PORT_STM32H7)
#include "ports/platform/stm32h7.h"
typedef pg_shm_stm32h7 port_state;
#define PORT_ISR(b)          pg_shm_stm32h7_isr(b)
#define PORT_HOOKS(h, b, hz) (pg_shm_stm32h7_hooks((h), (b), (hz), 1), (int)(b)->rank)
#elif defined(PORT_NRF5340)
#include "ports/platform/nrf5340.h"
typedef pg_shm_nrf5340 port_state;
#define PORT_ISR(b)          pg_shm_nrf5340_isr(b)
#define PORT_HOOKS(h, b, hz) (pg_shm_nrf5340_hooks((h), (b), PORT_RANK), (void)(hz), PORT_RANK)
#elif defined(PORT_IMXRT1170)
#include "ports/platform/imxrt1170.h"
typedef pg_shm_imxrt1170 port_state;
#define PORT_ISR(b)          pg_shm_imxrt1170_isr(b)
#define PORT_HOOKS(h, b, hz) (pg_shm_imxrt1170_hooks((h), (b), (hz), 1), (int)(b)->rank)
#else
#error "define PORT_RP2040, PORT_RP2350, PORT_STM32H7, PORT_NRF5340 or PORT_IMXRT1170"
#endif
#ifndef PORT_RANK
#define PORT_RANK 0u
#endif

void port_isr(port_state *b);
int port_hooks(pg_shm_hooks *h, port_state *b, uint32_t cpu_hz);

/* The doorbell interrupt's handler calls this with the core's state. */
void port_isr(port_state *b)
{
    PORT_ISR(b);
}

/* Initialise the hook set on this core; returns its rank. */
int port_hooks(pg_shm_hooks *h, port_state *b, uint32_t cpu_hz)
{
    return PORT_HOOKS(h, b, cpu_hz);
}

#ifndef PORT_SIZE_ONLY
#define CORES        2
#define SLOTS        4
#define PAYLOAD      1024
#define REGION_BYTES PG_SHM_REGION_BYTES(CORES, SLOTS, PAYLOAD)

static uint32_t region[REGION_BYTES / 4] __attribute__((aligned(PG_SHM_LINE), section(".splitcore_shm")));
static port_state state;
static pg_shm shm;
static pp_exec ex;
static uint64_t exec_mem[8192];

int port_rank_main(const pp_table *plan, const pp_exec_cfg *cfg, uint32_t cpu_hz);
void port_doorbell_handler(void);

void port_doorbell_handler(void)
{
    port_isr(&state);
}

/* Rank 0 formats the region first (before it starts the other core); every rank attaches and
   runs its row of the emitted plan. */
int port_rank_main(const pp_table *plan, const pp_exec_cfg *cfg, uint32_t cpu_hz)
{
    pg_shm_hooks h;
    int rank = port_hooks(&h, &state, cpu_hz), rc;
    if (rank == 0 && (rc = pg_shm_format(region, sizeof region, CORES, SLOTS, PAYLOAD)) != 0) return rc;
    if ((rc = pg_shm_init(&shm, region, sizeof region, rank, &h)) != 0) return rc;
    if (pp_exec_bytes(cfg, &plan[rank]) > sizeof exec_mem) return PP_ERR_ARG;
    rc = pp_exec_init(&ex, cfg, &plan[rank], pg_shm_group(&shm), exec_mem, sizeof exec_mem);
    return rc ? rc : pp_exec_run(&ex);
}
#endif
