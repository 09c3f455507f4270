/* test_bad_input.c — the error contract as one table (issue #8 item 5).
   Every public function of microbatch.h, pipeline.h, dtensor.h and its modules
   (dtensor_*.h) and ports/pg.h (over a
   2-rank pg_pthread world driven from one thread, timeouts 0), and the entry points of
   ports/pg_pthread.h and ports/pg_shm.h, gets its invalid inputs —
   NULL pointers, out-of-range dims/ranks/tags, zero/negative counts, wrong dtypes,
   undersized buffers, inconsistent specs — as rows {function, case, expected code}. For
   each row the test fills every output the call may write with a canary, makes the call,
   and asserts the code and that every canary byte is intact. After the pg rows no message
   sits in any mailbox and the peer's group is byte-for-byte unchanged (peers untouched).
   The table is the documentation: `test_bad_input --markdown docs/error-contract.md`
   writes it; a normal run fails when docs/error-contract.md (read from the directory
   scons runs in) differs from the table, so the document cannot go stale. A public
   function returning an int with no row must be in no_rows[] with the reason
   (tests/docs/check_docs.py enforces it from the document). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"
#define PG_IMPLEMENTATION
#include "ports/pg.h"
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"
#include "pipeline_bn.h"
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_OPS_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_QCONV_IMPLEMENTATION
#define DTENSOR_RANDOM_IMPLEMENTATION
#define DTENSOR_GRAPH_IMPLEMENTATION
#include "dtensor_qconv.h"
#include "dtensor_random.h"
#include "dtensor_graph.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"

/* ---- outputs: one canary area every row's outputs point into ------------------------- */
#define CANARY 0xA5
static union {
    uint64_t align;
    unsigned char b[65536];
} out_area;
#define OUT(type)         ((type *)(void *)out_area.b)
#define OUT_AT(type, off) ((type *)(void *)(out_area.b + (off)))

/* ---- inputs: valid fixtures and invalid variants (never checked for changes) --------- */
static float fx[8][4];
static int32_t shape84[2] = {8, 4}, shape_neg[2] = {8, -1}, shape44[2] = {4, 4};
static mb_tensor t84, t_ndim7, t_negshape, t_dtype, t_neg_stride, t_sized;
static mb_value args[2], args_bad_kind[1], chunks4[4];
static mb_spec spec_split5 = MB_SPLIT(5), spec_bad_kind = {99, 0, 0, 0},
               spec_custom_null = {MB_SPEC_REDUCE, 0, MB_RED_CUSTOM, 0};
static mb_spec spec_concat0 = MB_CONCAT(0);
static int reducer_add(mb_value *acc, const mb_value *chunk, void *user);
static mb_reducer red_add = {reducer_add, {MB_VALUE_SCALAR, 0.0, {0, MB_F32, 0, {0}, {0}}}, 0};
static mb_spec spec_custom_add = MB_REDUCE_CUSTOM(&red_add);
static mb_value scalars2[2] = {{MB_VALUE_SCALAR, 1.0, {0, MB_F32, 0, {0}, {0}}},
                               {MB_VALUE_SCALAR, 1.0, {0, MB_F32, 0, {0}, {0}}}};

static pp_plan sched, lowered;
static pp_table table0;
static int32_t bal2[2] = {1, 1}, bal_bad[2] = {2, 0};
static uint32_t costs3[3] = {1, 2, 3};
static pp_layer layers2[2];
static pp_costs costs;
static uint64_t work[4096];
static pp_event events1[1];
static pp_exec_cfg xcfg;
static pp_exec xexec_unset, xexec_noloss; /* xexec_noloss: a failed step (no loss computed) */
static mb_value noloss[8];
static pp_action lower_work[2], send_f = PP_ACTION(PP_SEND_F, 1, 10);
static size_t needed;

static dt_mesh mesh2, mesh3, mesh22;
static dt_spec sp_rprod, sp_psumr; /* 2x2 mesh: [R, Partial(prod)] and [Partial(sum), R] of a 4x4 f32 */
static dt_spec sp_shard0, sp_shard1, sp_repl, sp_partial, sp_other_shape, sp_other_mesh;
static dt_placement pl_shard0[1] = {DT_SHARD(0)}, pl_shard1[1] = {DT_SHARD(1)}, pl_repl[1] = {DT_REPLICATE()},
                    pl_partial[1] = {DT_PARTIAL(DT_SUM)};
static dt_placement pl_bad_kind[1] = {{7, 0}}, pl_shard9[1] = {DT_SHARD(9)}, pl_partial_bad[1] = {DT_PARTIAL(9)};
static dt_plan dplan;
static dt_cache_entry centries[2];
static dt_plan_cache cache;
static dt_comm dcomm;
static dt_tensor dtt;
/* ops rows: one input (sp_shard0, a 4x4 f32), x (4x4) with a weight of 4 */
static const dt_spec *op_x[1] = {&sp_shard0}, *op_xw[2] = {&sp_shard0, &sp_repl};
static const dt_op_attrs at_dim2 = {.dim = 2}, at_dimm3 = {.dim = -3}, at_gelu2 = {.mode = 2},
                         at_norm3 = {.ndim = 1, .shape = {3}};
static const mb_tensor *op_in[2];
/* conv2d: input [1,2,4,4] (fx), weight [2,2,3,3], H-sharded input on mesh2 (local [1,2,2,4]) */
static float cw[2 * 2 * 3 * 3];
static int32_t cxs[4] = {1, 2, 4, 4}, cws[4] = {2, 2, 3, 3}, cws_big[4] = {2, 2, 7, 3}, cws_bad[4] = {2, 3, 3, 3};
static mb_tensor cx, cx_i8, cwt, cwt_i8, cwt_bad;
static dt_conv2d_params cp = DT_CONV2D(DT_NCHW, 1, 1, 1, 1), cp_stride0 = DT_CONV2D(DT_NCHW, 0, 1, 1, 1),
                        cp_groups3 = DT_CONV2D(DT_NCHW, 1, 1, 1, 3), cpool_pad = DT_POOL2D(DT_NCHW, 2, 2, 2);
static dt_spec sp_cx_h, sp_cx_w, sp_cx_p, sp_cw;
static dt_tensor dcx_h, dcx_bad, dcw, dgy_h, dgy_part; /* grad_out: Shard(H) [1,2,4,4] local [1,2,2,4], Partial */
static dt_qmul cq[2];
static dt_conv2d_params cp_dil0 = DT_CONV2D(DT_NCHW, 1, 1, 0, 1), cp_padneg = DT_CONV2D(DT_NCHW, 1, -1, 1, 1),
                        cp_layout9 = DT_CONV2D(9, 1, 1, 1, 1), cp_groups0 = DT_CONV2D(DT_NCHW, 1, 1, 1, 0),
                        cp_nhwc = DT_CONV2D(DT_NHWC, 1, 1, 1, 1), cpool = DT_POOL2D(DT_NCHW, 2, 2, 0),
                        cpool_k0 = DT_POOL2D(DT_NCHW, 0, 1, 0), cpool_s0 = DT_POOL2D(DT_NCHW, 2, 0, 0);
static int32_t cxs_neg[4] = {1, 2, -4, 4};
static float cb[3];
static mb_tensor cbias3, cbias2; /* f32 [3] (C_out is 2), f32 [2] */
static dt_spec sp_cw3, sp_cx_i8; /* the weight's spec on mesh3; an int8 Shard(H) input spec */
static dt_op_entry ocentries[2];
static dt_gplan gp_empty;
static dt_op_attrs ga_dim5;
/* ports: pg_pthread_run's rank function; pg_shm regions are PG_SHM_LINE-aligned places in
   the canary area */
static int noop_rank(pg_group *g, void *arg)
{
    (void)g;
    (void)arg;
    return 0;
}
#define SHM_BYTES PG_SHM_REGION_BYTES(2, 4, 64)
static pg_shm_hooks shm_hooks;
static void *shm_out(size_t misalign)
{
    unsigned char *b = out_area.b + 32768;
    return b + (PG_SHM_LINE - (uintptr_t)b % PG_SHM_LINE) % PG_SHM_LINE + misalign;
}
/* int8 mm and random rows */
static dt_spec sp_i8_s0, sp_i8_r;
static dt_tensor dq_a_s1, dq_b_s0, dq_b_s0wrong;
/* ops (dtensor_ops.h): specs, attrs, local tensors and plain / mixed / in-place argument lists */
static dt_spec sp_i32_4;
static dt_dispatch ddisp;
static const dt_spec *ops_repl[2] = {&sp_repl, &sp_repl}, *ops_s1[1] = {&sp_shard1},
                     *ops_loss[2] = {&sp_repl, &sp_i32_4};
static const dt_op_attrs at_view15 = {0, 0, 0, 0, 0, 1, {15}, 0.0f, 0.0f},
                         at_view16 = {0, 0, 0, 0, 0, 1, {16}, 0.0f, 0.0f}, at_t2 = {0, 2, 0, 0, 0, 0, {0}, 0.0f, 0.0f},
                         at_red3 = {0, 0, 0, 3, 0, 0, {0}, 0.0f, 0.0f},
                         at_none = {0, 0, 0, 0, -100, 0, {0}, 0.0f, 0.0f};
static int32_t idx_bad[2] = {3, 4}, tgt_bad[4] = {0, 1, 7, 2};
static mb_tensor t_x44, t_idx_bad, t_tgt_bad;
static const mb_tensor *emb_in[2] = {&t_x44, &t_idx_bad}, *loss_in[2] = {&t_x44, &t_tgt_bad};
/* dt_kernel_ref's hostile operands: a NULL one, 2x2 and 2x4 matrices, a negative stride, a
   stride-0 view of 2^32 + 1 elements */
static mb_tensor t_k22, t_kbad, t_khuge;
static const mb_tensor *kin_null[2] = {&t_x44, NULL}, *kin_22[2] = {&t_k22, &t_k22}, *kin_24[2] = {&t_k22, &t_x44},
                       *kin_bad[1] = {&t_kbad}, *kin_huge[1] = {&t_khuge};
static const dt_op_attrs at_mode2 = {0, 0, 0, 2, 0, 0, {0}, 0.0f, 0.0f};
static dt_tensor ops_plain[2], ops_mixed[2], ops_inplace[2];

static mb_tensor t_nan, t_acc44, t_i8_wide, t_i8_tall;
static float scales4[4] = {0.1f, 0.2f, 0.3f, 0.4f}, nan44[16];
static int32_t acc44[16];
static int8_t i8buf[64];
static dt_qmul qm4[4];
static const int32_t q8_tab[256] = {0}; /* a table the int8 row ops read (rejected before) */
static dt_gnode gnodes[4], gnodes_full[1], gnodes_batch[2], gnodes_noin[1];
static dt_graph gg, gg_out, gg_full, gg_batch, gg_noin;
static dt_gplan gp, gp_badstep, gp_world2;
static dt_gstep gsteps[4], gsteps_bad[4];
static dt_dispatch gd_nocomm;
static dt_op_attrs ga_43, ga_bad;
static int32_t gin_01[2] = {0, 1}, gin_00[2] = {0, 0};
static int32_t ranks_dup[2] = {0, 0}, ranks_neg[2] = {0, -1}, shape_m2[1] = {2}, shape_m0[1] = {0};

static pg_pthread_world world;
static pg_group *g0, *g1, g1_before;
static pg_group nomember;  /* a sub-group this rank is not in */
static pg_group g0_copy;   /* a copy of rank 0's group (do not copy: PG_ERR_COPIED) */
static dt_comm dcomm_copy; /* a copy of dcomm (DT_ERR_COPIED) */
static const int ranks01[2] = {0, 1};
static pg_ops ops_nosend;
static float pin[64];
static size_t counts2[2] = {2, 2}, counts_big[2] = {(size_t)-1 / 2, 2};

/* ---- hostile public structs: a valid plan or table with one field made hostile -------- */
/* Plans: copies of `sched` (2 ranks, 2 stages, 4 microbatches, 1F1B compute table); for
   pp_csv_read (which replaces the rows) their rows lie in the canary area. */
enum {
    HP_NULL,
    HP_NRANKS0,
    HP_NRANKS_BIG,
    HP_NSTAGES_BIG,
    HP_NMB0,
    HP_CAP_NEG,
    HP_LEN_OVER,
    HP_STAGE_RANK,
    HP_TYPE,
    HP_STAGE,
    HP_MB,
    HP_COUNT
};
static pp_plan hp[HP_COUNT], hpc[HP_COUNT];
static pp_action hp_rows[3][512];
/* Tables: copies of table0 (rank 0 of the lowered 1F1B plan) with xcfg; table_fo1: rank 1
   (the last stage) of a lowered 2-rank forward-only plan, with xcfg_fo (inference). */
enum {
    HT_NULL,
    HT_MAP_NULL,
    HT_NRANKS0,
    HT_RANK,
    HT_NSTAGES0,
    HT_NSTAGES_BIG,
    HT_NMB0,
    HT_SLOTS0,
    HT_STAGE_RANK,
    HT_OTHER_RANK,
    HT_TYPE,
    HT_STAGE,
    HT_MB,
    HT_COUNT
};
static pp_table ht[HT_COUNT], table_fo1;
static pp_action ht_rows[3][64];
static const uint8_t map_bad[2] = {0, 200}, map_other[2] = {1, 1};
static pp_exec_cfg xcfg_fo, xcfg_fo_nout;
/* fairscale's model features: skips (s = stashes "s", p = pops it), positions, routes */
static const pp_skip sk_s = {"s", 0, {MB_F32, 1, {4}, 0}};
static pp_layer sk_pass, sk_stash, sk_pop;
static pp_layer sk_unstashed[2], sk_backwards[2], sk_twice[3], sk_unpopped[2], sk_ok[2];
static const int32_t sk_bal2[1] = {2}, sk_bal3[1] = {3}, inv_order[3] = {0, 1, 0}, inv_unused[2] = {0, 0},
                     inv_parts[2] = {1, 1}, inv_parts_bad[2] = {2, 1};
static const uint8_t map_01[2] = {0, 1}, map_03[2] = {0, 3};
static const pp_route route_back[1] = {{1, 0, 0, 0, 1, 0}};
static pp_exec_cfg xcfg_badroute;
static pp_route xroute_bad[1] = {{0, 1, 0, 0, 0, 0}}; /* dst 0, but position 1 is on stage 1 */
static pp_tspec sk_spec4;
static pp_layer xlayers_sk[2];
static pp_dbn dbn;
static float dbn_f[6][4];
static double dbn_acc[8];

/* Each plan function's call with plan P (outputs in the canary area). */
#define HP_TABLE(P)    pp_plan_table(P, 0, OUT(pp_table))
#define HP_PEAK(P)     pp_peak_inflight(P, 0)
#define HP_LOWER(P)    pp_lower(P, OUT_AT(pp_plan, 4096), OUT(void), 4096, NULL)
#define HP_VALIDATE(P) pp_validate(P, NULL)
#define HP_SIMBYTES(P) (int)pp_sim_bytes(P)
#define HP_SIMULATE(P) pp_simulate(P, &costs, work, sizeof work, OUT(pp_sim), NULL, 0, NULL, NULL)
#define HP_MAILBOX(P)  pp_mailbox_depth(P, 4, work, sizeof work, NULL)
#define HP_CSVW(P)     pp_csv_write(P, OUT(char), 4096, OUT_AT(size_t, 8192))
#define HP_EMIT(P)     pp_emit_c(P, "plan", OUT(char), 4096, OUT_AT(size_t, 8192))
#define HP_TIMELINE(P) pp_timeline(P, OUT(char), 4096, OUT_AT(size_t, 8192))
#define HP_CSVR(P)     pp_csv_read(&hpc[(P)-hp], "0F0\r\n1F0\r\n", 10, NULL)
/* The fields every plan function checks first (f: the function's name, C: its call, then
   the codes for a NULL, an out-of-range and a stage-map field; W: what a size query adds). */
#define HP_STRUCT_ROWS(ROW, id, f, C, NUL, ARG, MAP, W)                                              \
    ROW(id##_null, "pipeline.h", f, "plan: NULL actions" W, NUL, C(&hp[HP_NULL]))                    \
    ROW(id##_nr0, "pipeline.h", f, "plan: nranks 0" W, ARG, C(&hp[HP_NRANKS0]))                      \
    ROW(id##_nrbig, "pipeline.h", f, "plan: nranks > PP_MAX_RANKS" W, ARG, C(&hp[HP_NRANKS_BIG]))    \
    ROW(id##_nsbig, "pipeline.h", f, "plan: nstages > PP_MAX_STAGES" W, ARG, C(&hp[HP_NSTAGES_BIG])) \
    ROW(id##_nmb0, "pipeline.h", f, "plan: nmb 0" W, ARG, C(&hp[HP_NMB0]))                           \
    ROW(id##_cap, "pipeline.h", f, "plan: cap < 0" W, ARG, C(&hp[HP_CAP_NEG]))                       \
    ROW(id##_len, "pipeline.h", f, "plan: a row's len > cap" W, ARG, C(&hp[HP_LEN_OVER]))            \
    ROW(id##_map, "pipeline.h", f, "plan: stage_rank[1] = 200 (no such rank)" W, MAP, C(&hp[HP_STAGE_RANK]))
/* ... and the rows' actions. */
#define HP_ACTION_ROWS(ROW, id, f, C)                                                                       \
    ROW(id##_type, "pipeline.h", f, "plan: an action of type 200", PP_ERR_ACTION, C(&hp[HP_TYPE]))          \
    ROW(id##_stage, "pipeline.h", f, "plan: an action's stage >= nstages", PP_ERR_ACTION, C(&hp[HP_STAGE])) \
    ROW(id##_mb, "pipeline.h", f, "plan: an action's microbatch >= nmb", PP_ERR_ACTION, C(&hp[HP_MB]))
#define HP_ROWS(ROW, id, f, C)                                                    \
    HP_STRUCT_ROWS(ROW, id, f, C, PP_ERR_NULL, PP_ERR_ARG, PP_ERR_STAGE_RANK, "") \
    HP_ACTION_ROWS(ROW, id, f, C)
/* Each table function's call with table T. */
#define HT_QUERY(T) pp_exec_query(&xcfg, T, OUT(size_t))
#define HT_BYTES(T) (int)pp_exec_bytes(&xcfg, T)
#define HT_INIT(T)  pp_exec_init(OUT(pp_exec), &xcfg, T, g0, OUT_AT(void, 4096), 8192)
#define HT_ROWS(ROW, id, f, C, NUL, ARG, MAP, ACT, W)                                                              \
    ROW(id##_null, "pipeline_exec.h", f, "table: NULL actions" W, NUL, C(&ht[HT_NULL]))                            \
    ROW(id##_mapnull, "pipeline_exec.h", f, "table: NULL stage_rank" W, NUL, C(&ht[HT_MAP_NULL]))                  \
    ROW(id##_nr0, "pipeline_exec.h", f, "table: nranks 0" W, ARG, C(&ht[HT_NRANKS0]))                              \
    ROW(id##_rank, "pipeline_exec.h", f, "table: rank >= nranks" W, ARG, C(&ht[HT_RANK]))                          \
    ROW(id##_ns0, "pipeline_exec.h", f, "table: nstages 0" W, ARG, C(&ht[HT_NSTAGES0]))                            \
    ROW(id##_nsbig, "pipeline_exec.h", f, "table: nstages > PP_MAX_STAGES" W, ARG, C(&ht[HT_NSTAGES_BIG]))         \
    ROW(id##_nmb0, "pipeline_exec.h", f, "table: nmb 0" W, ARG, C(&ht[HT_NMB0]))                                   \
    ROW(id##_slots0, "pipeline_exec.h", f, "table: slots 0" W, ARG, C(&ht[HT_SLOTS0]))                             \
    ROW(id##_map, "pipeline_exec.h", f, "table: stage_rank[1] = 200 (no such rank)" W, MAP, C(&ht[HT_STAGE_RANK])) \
    ROW(id##_other, "pipeline_exec.h", f, "table: an action of a stage mapped to another rank" W, MAP,             \
        C(&ht[HT_OTHER_RANK]))                                                                                     \
    ROW(id##_type, "pipeline_exec.h", f, "table: an action of type 200" W, ACT, C(&ht[HT_TYPE]))                   \
    ROW(id##_stage, "pipeline_exec.h", f, "table: an action's stage >= nstages" W, ACT, C(&ht[HT_STAGE]))          \
    ROW(id##_mb, "pipeline_exec.h", f, "table: an action's microbatch >= nmb" W, ACT, C(&ht[HT_MB]))
#define PP_HOSTILE_ROWS(ROW)                                                                                         \
    HP_ROWS(ROW, hp_table, "pp_plan_table", HP_TABLE)                                                                \
    HP_ROWS(ROW, hp_peak, "pp_peak_inflight", HP_PEAK)                                                               \
    HP_ROWS(ROW, hp_lower, "pp_lower", HP_LOWER)                                                                     \
    HP_ROWS(ROW, hp_validate, "pp_validate", HP_VALIDATE)                                                            \
    HP_STRUCT_ROWS(ROW, hp_simbytes, "pp_sim_bytes", HP_SIMBYTES, 0, 0, 0, " (returns 0)")                           \
    HP_ROWS(ROW, hp_simulate, "pp_simulate", HP_SIMULATE)                                                            \
    HP_ROWS(ROW, hp_mailbox, "pp_mailbox_depth", HP_MAILBOX)                                                         \
    HP_ROWS(ROW, hp_csvw, "pp_csv_write", HP_CSVW)                                                                   \
    HP_STRUCT_ROWS(ROW, hp_csvr, "pp_csv_read", HP_CSVR, PP_ERR_NULL, PP_ERR_ARG, PP_ERR_STAGE_RANK,                 \
                   " (its rows are replaced, not read)")                                                             \
    HP_ROWS(ROW, hp_emit, "pp_emit_c", HP_EMIT)                                                                      \
    HP_ROWS(ROW, hp_timeline, "pp_timeline", HP_TIMELINE)                                                            \
    HT_ROWS(ROW, ht_query, "pp_exec_query", HT_QUERY, PP_ERR_NULL, PP_ERR_ARG, PP_ERR_STAGE_RANK, PP_ERR_ACTION, "") \
    HT_ROWS(ROW, ht_bytes, "pp_exec_bytes", HT_BYTES, 0, 0, 0, 0, " (returns 0)")                                    \
    HT_ROWS(ROW, ht_init, "pp_exec_init", HT_INIT, PP_ERR_NULL, PP_ERR_ARG, PP_ERR_STAGE_RANK, PP_ERR_ACTION, "")    \
    ROW(ht_out, "pipeline_exec.h", "pp_exec_init", "inference cfg without output, on the last stage's rank",         \
        PP_ERR_NULL, pp_exec_init(OUT(pp_exec), &xcfg_fo_nout, &table_fo1, g1, OUT_AT(void, 4096), 8192))            \
    ROW(ht_outq, "pipeline_exec.h", "pp_exec_query", "inference cfg without output, on the last stage's rank",       \
        PP_ERR_NULL, pp_exec_query(&xcfg_fo_nout, &table_fo1, OUT(size_t)))                                          \
    ROW(ht_qnull, "pipeline_exec.h", "pp_exec_query", "NULL bytes", PP_ERR_NULL, pp_exec_query(&xcfg, &table0, NULL))

/* Caller-filled dt_graphs with one hostile field (the rest gg's: input, param, mm; capacity 4),
   each with its own copy of the nodes. */
enum { HG_NODES, HG_COUNT_BIG, HG_COUNT_NEG, HG_IN_SELF, HG_IN_NEG, HG_OP, HG_NIN, HG_NDIM, HG_COUNT };
static dt_graph hg[HG_COUNT];
static dt_gnode hg_nodes[HG_COUNT][4];
#define HG_ANALYZE(G) dt_graph_analyze(G)
#define HG_PLAN(G)    dt_graph_plan(G, 1, 0, DT_SUM, OUT(dt_gplan), OUT_AT(dt_gstep, 1024), 4)
#define HG_PLACE(G)   dt_graph_dist_placements(G, 1, OUT(dt_placement), 16)
#define HG_ROWS(ROW, id, f, C)                                                                                 \
    ROW(id##_nodes, "dtensor_graph.h", f, "graph: NULL nodes", DT_ERR_NULL, C(&hg[HG_NODES]))                  \
    ROW(id##_cbig, "dtensor_graph.h", f, "graph: count > capacity", DT_ERR_NODE, C(&hg[HG_COUNT_BIG]))         \
    ROW(id##_cneg, "dtensor_graph.h", f, "graph: count -1", DT_ERR_NODE, C(&hg[HG_COUNT_NEG]))                 \
    ROW(id##_self, "dtensor_graph.h", f, "graph: a node's operand is itself", DT_ERR_NODE, C(&hg[HG_IN_SELF])) \
    ROW(id##_inneg, "dtensor_graph.h", f, "graph: a node's operand -1", DT_ERR_NODE, C(&hg[HG_IN_NEG]))        \
    ROW(id##_op, "dtensor_graph.h", f, "graph: a node of op 9999", DT_ERR_NODE, C(&hg[HG_OP]))                 \
    ROW(id##_nin, "dtensor_graph.h", f, "graph: a node of 9 operands", DT_ERR_NODE, C(&hg[HG_NIN]))            \
    ROW(id##_ndim, "dtensor_graph.h", f, "graph: a node of ndim 9", DT_ERR_NODE, C(&hg[HG_NDIM]))
#define GR_HOSTILE_ROWS(ROW)                                 \
    HG_ROWS(ROW, hg_analyze, "dt_graph_analyze", HG_ANALYZE) \
    HG_ROWS(ROW, hg_plan, "dt_graph_plan", HG_PLAN)          \
    HG_ROWS(ROW, hg_place, "dt_graph_dist_placements", HG_PLACE)

/* Caller-filled dt_conv2d_params with one hostile field (the rest cp's: NCHW, stride, padding,
   dilation and groups 1) against each conv2d function taking them. */
enum { HK_LAYOUT, HK_STRIDE, HK_PAD, HK_DIL, HK_GROUPS, HK_COUNT };
static dt_conv2d_params hk[HK_COUNT];
#define HK_OSHAPE(P) dt_conv2d_out_shape(P, cxs, cws, OUT(int32_t))
#define HK_REF(P)    dt_conv2d_ref(P, &cx, &cwt, NULL, out4(MB_F32, 2, 4))
#define HK_OSPEC(P)  dt_conv2d_out_spec(P, &sp_cx_h, &sp_cw, OUT(dt_spec))
#define HK_SCR(P)    dt_conv2d_scratch_bytes(P, &sp_cx_h, &sp_cw, OUT(size_t))
#define HK_RUN(P)    dt_conv2d(&dcomm, P, &dcx_h, &dcw, NULL, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 2), OUT(void), 8192)
#define HK_ROWS(ROW, id, f, C)                                                                 \
    ROW(id##_layout, "dtensor_conv.h", f, "params: layout 9", DT_ERR_SHAPE, C(&hk[HK_LAYOUT])) \
    ROW(id##_stride, "dtensor_conv.h", f, "params: stride 0", DT_ERR_SHAPE, C(&hk[HK_STRIDE])) \
    ROW(id##_pad, "dtensor_conv.h", f, "params: padding -1", DT_ERR_SHAPE, C(&hk[HK_PAD]))     \
    ROW(id##_dil, "dtensor_conv.h", f, "params: dilation 0", DT_ERR_SHAPE, C(&hk[HK_DIL]))     \
    ROW(id##_groups, "dtensor_conv.h", f, "params: groups 0", DT_ERR_SHAPE, C(&hk[HK_GROUPS]))
#define CV_HOSTILE_ROWS(ROW)                                  \
    HK_ROWS(ROW, hk_oshape, "dt_conv2d_out_shape", HK_OSHAPE) \
    HK_ROWS(ROW, hk_ref, "dt_conv2d_ref", HK_REF)             \
    HK_ROWS(ROW, hk_ospec, "dt_conv2d_out_spec", HK_OSPEC)    \
    HK_ROWS(ROW, hk_scr, "dt_conv2d_scratch_bytes", HK_SCR)   \
    HK_ROWS(ROW, hk_run, "dt_conv2d", HK_RUN)

/* Caller-filled max pool params with one hostile field (the rest hq_base's: NCHW, window 1,
   stride 1, padding 0, so the outputs have the input's shape) against each max pool
   function taking them. */
enum { HQ_LAYOUT, HQ_STRIDE, HQ_PAD, HQ_DIL, HQ_WINDOW, HQ_HALF, HQ_COUNT };
static dt_conv2d_params hq[HQ_COUNT], hq_base = DT_POOL2D(DT_NCHW, 1, 1, 0);
#define HQ_OSHAPE(P) dt_conv2d_out_shape(P, cxs, NULL, OUT(int32_t))
#define HQ_REF(P)    dt_maxpool2d_ref(P, &cx, out4(MB_F32, 2, 4))
#define HQ_BWD(P)    dt_maxpool2d_backward(P, &cx, &cx, out4(MB_F32, 2, 4))
#define HQ_RUN(P)    dt_maxpool2d(&dcomm, P, &dcx_h, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 2), OUT(void), 8192)
#define HQ_ROWS(ROW, id, f, C)                                                                            \
    ROW(id##_layout, "dtensor_conv.h", f, "params: layout 9 (max pool)", DT_ERR_SHAPE, C(&hq[HQ_LAYOUT])) \
    ROW(id##_stride, "dtensor_conv.h", f, "params: stride 0 (max pool)", DT_ERR_SHAPE, C(&hq[HQ_STRIDE])) \
    ROW(id##_pad, "dtensor_conv.h", f, "params: padding -1 (max pool)", DT_ERR_SHAPE, C(&hq[HQ_PAD]))     \
    ROW(id##_dil, "dtensor_conv.h", f, "params: dilation 0 (max pool)", DT_ERR_SHAPE, C(&hq[HQ_DIL]))     \
    ROW(id##_window, "dtensor_conv.h", f, "params: window 0 (max pool)", DT_ERR_SHAPE, C(&hq[HQ_WINDOW])) \
    ROW(id##_half, "dtensor_conv.h", f, "params: padding > half the window (max pool)", DT_ERR_SHAPE, C(&hq[HQ_HALF]))
#define PO_HOSTILE_ROWS(ROW)                                  \
    HQ_ROWS(ROW, hq_oshape, "dt_conv2d_out_shape", HQ_OSHAPE) \
    HQ_ROWS(ROW, hq_ref, "dt_maxpool2d_ref", HQ_REF)          \
    HQ_ROWS(ROW, hq_bwd, "dt_maxpool2d_backward", HQ_BWD)     \
    HQ_ROWS(ROW, hq_run, "dt_maxpool2d", HQ_RUN)

/* Caller-filled dt_op_attrs with one hostile field, each with an op that reads it, on the
   4x4 Shard(0) input (dtt; its spec for dt_propagate). */
enum { HA_DIM, HA_DIM_MIN, HA_DIM2, HA_MODE, HA_NDIM_BIG, HA_NDIM_NEG, HA_SIZE_NEG, HA_PERM, HA_EXPAND, HA_COUNT };
static dt_op_attrs ha[HA_COUNT];
static int ha_op[HA_COUNT];
#define HA_PROP(K)  dt_propagate(NULL, ha_op[K], &ha[K], op_x, 1, OUT(dt_op_strategy))
#define HA_OP(K)    dt_op(&ddisp, ha_op[K], &ha[K], &dtt, 1, OUT(dt_tensor), OUT_AT(void, 8192), 4096)
#define HA_QUERY(K) dt_op_query(&ddisp, ha_op[K], &ha[K], &dtt, 1, DT_OP_RESULT, OUT(size_t), OUT_AT(size_t, 8192))
#define HA_ROWS(ROW, id, f, C)                                                                              \
    ROW(id##_dim, "dtensor_ops.h", f, "attrs: dim 2 (sum of a 2-d input)", DT_ERR_DIM, C(HA_DIM))           \
    ROW(id##_dimmin, "dtensor_ops.h", f, "attrs: dim INT32_MIN (softmax)", DT_ERR_DIM, C(HA_DIM_MIN))       \
    ROW(id##_dim2, "dtensor_ops.h", f, "attrs: dim2 2 (transpose of a 2-d input)", DT_ERR_DIM, C(HA_DIM2))  \
    ROW(id##_mode, "dtensor_ops.h", f, "attrs: mode 2 (gelu approximate)", DT_ERR_SHAPE, C(HA_MODE))        \
    ROW(id##_ndimbig, "dtensor_ops.h", f, "attrs: ndim 9 (view)", DT_ERR_SHAPE, C(HA_NDIM_BIG))             \
    ROW(id##_ndimneg, "dtensor_ops.h", f, "attrs: ndim -1 (view)", DT_ERR_SHAPE, C(HA_NDIM_NEG))            \
    ROW(id##_sizeneg, "dtensor_ops.h", f, "attrs: a size -2 in shape (view)", DT_ERR_SHAPE, C(HA_SIZE_NEG)) \
    ROW(id##_perm, "dtensor_ops.h", f, "attrs: a dim twice in shape (permute)", DT_ERR_DIM, C(HA_PERM))     \
    ROW(id##_expand, "dtensor_ops.h", f, "attrs: ndim 1, fewer than the input's (expand)", DT_ERR_SHAPE, C(HA_EXPAND))

/* Caller-filled dt_dispatchers with one hostile field (the rest: dcomm, 4 KB of scratch, no
   caches; the caches as dt_*_cache_init leaves them, two entries) for S(0) += R in place (a
   redistribute of the R operand, the result through scratch). */
enum { HD_COMM, HD_COPY, HD_SCRATCH, HD_SMALL, HD_PLANS, HD_PLANS_LAST, HD_STRATS, HD_STRATS_NEG, HD_COUNT };
static dt_dispatch hd[HD_COUNT];
static dt_plan_cache hd_plans[2];
static dt_cache_entry hd_pentries[2];
static dt_op_cache hd_strats[2];
static dt_op_entry hd_oentries[2];
static dt_tensor hd_args[2]; /* S(0) 4x4 (dtt), R 4x4 */
#define HD_OP(D)    dt_op(D, DT_ATEN_ADD, NULL, hd_args, 2, OUT(dt_tensor), hd_args[0].local.data, 0)
#define HD_QUERY(D) dt_op_query(D, DT_ATEN_ADD, NULL, hd_args, 2, DT_OP_IN_PLACE, OUT(size_t), OUT_AT(size_t, 8192))
#define HD_TP(D)    dt_tp_redistribute(D, &dtt, 0, pl_repl[0], OUT(dt_tensor), OUT_AT(void, 8192), 4096)
#define HD_CACHE_ROWS(ROW, id, f, C)                                                                                 \
    ROW(id##_comm, "dtensor_ops.h", f, "dispatch: comm NULL", DT_ERR_NULL, C(&hd[HD_COMM]))                          \
    ROW(id##_copy, "dtensor_ops.h", f, "dispatch: comm a copy of its dt_comm", DT_ERR_COPIED, C(&hd[HD_COPY]))       \
    ROW(id##_plans, "dtensor_ops.h", f, "dispatch: plans with count 3 > capacity 2", DT_ERR_VALUE, C(&hd[HD_PLANS])) \
    ROW(id##_plast, "dtensor_ops.h", f, "dispatch: plans with last 5 >= count 1", DT_ERR_VALUE, C(&hd[HD_PLANS_LAST]))
#define HD_STRAT_ROWS(ROW, id, f, C)                                                                     \
    ROW(id##_strats, "dtensor_ops.h", f, "dispatch: strategies with count 3 > capacity 2", DT_ERR_VALUE, \
        C(&hd[HD_STRATS]))                                                                               \
    ROW(id##_sneg, "dtensor_ops.h", f, "dispatch: strategies with count -1", DT_ERR_VALUE, C(&hd[HD_STRATS_NEG]))
#define HD_SCRATCH_ROWS(ROW, id, f, C)                                                                       \
    ROW(id##_scr, "dtensor_ops.h", f, "dispatch: scratch NULL, scratch_bytes 4096", DT_ERR_TOO_SMALL,        \
        C(&hd[HD_SCRATCH]))                                                                                  \
    ROW(id##_small, "dtensor_ops.h", f, "dispatch: scratch_bytes 8 (the result needs 64)", DT_ERR_TOO_SMALL, \
        C(&hd[HD_SMALL]))
#define OPS_HOSTILE_ROWS(ROW)                             \
    HA_ROWS(ROW, ha_prop, "dt_propagate", HA_PROP)        \
    HA_ROWS(ROW, ha_op, "dt_op", HA_OP)                   \
    HA_ROWS(ROW, ha_query, "dt_op_query", HA_QUERY)       \
    HD_CACHE_ROWS(ROW, hd_op, "dt_op", HD_OP)             \
    HD_STRAT_ROWS(ROW, hd_op, "dt_op", HD_OP)             \
    HD_SCRATCH_ROWS(ROW, hd_op, "dt_op", HD_OP)           \
    HD_CACHE_ROWS(ROW, hd_query, "dt_op_query", HD_QUERY) \
    HD_STRAT_ROWS(ROW, hd_query, "dt_op_query", HD_QUERY) \
    HD_CACHE_ROWS(ROW, hd_tp, "dt_tp_redistribute", HD_TP)

/* Caller-filled pp_exec_cfgs with one hostile field (the rest xcfg's: 2 layers of 32 B, one a
   stage, 2 rows of f32, training) with table0, rank 0's 1F1B table. */
enum {
    HC_LAYERS,
    HC_BALANCE,
    HC_ROWS0,
    HC_DTYPE,
    HC_NLAYERS,
    HC_CKPT,
    HC_BAL0,
    HC_BALSUM,
    HC_IN0,
    HC_INODD,
    HC_FWD,
    HC_ACT0,
    HC_COUNT
};
static pp_exec_cfg hc[HC_COUNT];
static pp_layer hc_fwd[2], hc_act0[2];
static const int32_t bal_01[2] = {0, 2}, bal_12[2] = {1, 2};
#define HC_QUERY(C) pp_exec_query(C, &table0, OUT(size_t))
#define HC_BYTES(C) (int)pp_exec_bytes(C, &table0)
#define HC_INIT(C)  pp_exec_init(OUT(pp_exec), C, &table0, g0, OUT_AT(void, 4096), 8192)
#define HC_ROWS(ROW, id, f, C, NUL, ARG, CK, BN, BS, W)                                               \
    ROW(id##_layers, "pipeline_exec.h", f, "cfg: NULL layers" W, NUL, C(&hc[HC_LAYERS]))              \
    ROW(id##_balance, "pipeline_exec.h", f, "cfg: NULL balance" W, NUL, C(&hc[HC_BALANCE]))           \
    ROW(id##_rows, "pipeline_exec.h", f, "cfg: rows 0" W, ARG, C(&hc[HC_ROWS0]))                      \
    ROW(id##_dtype, "pipeline_exec.h", f, "cfg: dtype 99" W, ARG, C(&hc[HC_DTYPE]))                   \
    ROW(id##_nlayers, "pipeline_exec.h", f, "cfg: nlayers 0" W, ARG, C(&hc[HC_NLAYERS]))              \
    ROW(id##_ckpt, "pipeline_exec.h", f, "cfg: checkpoint 9" W, CK, C(&hc[HC_CKPT]))                  \
    ROW(id##_bal0, "pipeline_exec.h", f, "cfg: a stage of 0 layers" W, BN, C(&hc[HC_BAL0]))           \
    ROW(id##_balsum, "pipeline_exec.h", f, "cfg: balance sums past nlayers" W, BS, C(&hc[HC_BALSUM])) \
    ROW(id##_in0, "pipeline_exec.h", f, "cfg: in_bytes 0" W, ARG, C(&hc[HC_IN0]))                     \
    ROW(id##_inodd, "pipeline_exec.h", f, "cfg: in_bytes not whole rows" W, ARG, C(&hc[HC_INODD]))    \
    ROW(id##_fwd, "pipeline_exec.h", f, "cfg: a layer without forward" W, NUL, C(&hc[HC_FWD]))        \
    ROW(id##_act0, "pipeline_exec.h", f, "cfg: a layer of act_bytes 0" W, ARG, C(&hc[HC_ACT0]))
#define PC_HOSTILE_ROWS(ROW)                                                                      \
    HC_ROWS(ROW, hc_query, "pp_exec_query", HC_QUERY, PP_ERR_NULL, PP_ERR_ARG, PP_ERR_CHECKPOINT, \
            PP_ERR_BALANCE_NONPOSITIVE, PP_ERR_BALANCE_SUM, "")                                   \
    HC_ROWS(ROW, hc_bytes, "pp_exec_bytes", HC_BYTES, 0, 0, 0, 0, 0, " (returns 0)")              \
    HC_ROWS(ROW, hc_init, "pp_exec_init", HC_INIT, PP_ERR_NULL, PP_ERR_ARG, PP_ERR_CHECKPOINT,    \
            PP_ERR_BALANCE_NONPOSITIVE, PP_ERR_BALANCE_SUM, "")

/* Caller-filled mb_specs with one hostile field: the split ones for the split functions (a
   1-value split of t84 into 2), all of them for the merge functions (4 chunks of 2x4 f32). */
static mb_reducer red_nofn = {0, {MB_VALUE_SCALAR, 0.0, {0, MB_F32, 0, {0}, {0}}}, 0},
                  red_badinit = {reducer_add, {9, 0.0, {0, MB_F32, 0, {0}, {0}}}, 0};
static mb_spec ms_kind = {99, 0, 0, 0}, ms_dim = MB_SPLIT(5), ms_negdim = MB_SPLIT(-9),
               ms_op = {MB_SPEC_REDUCE, 0, 99, 0}, ms_nored = {MB_SPEC_REDUCE, 0, MB_RED_CUSTOM, 0},
               ms_nofn = MB_REDUCE_CUSTOM(&red_nofn), ms_init = MB_REDUCE_CUSTOM(&red_badinit);
#define MS_SPLIT(S)  mb_split(args, S, 1, 2, 0, OUT(mb_value), 4, NULL)
#define MS_MBYTES(S) mb_split_masked_bytes(args, S, 1, 2, 0, OUT(size_t))
#define MS_MASKED(S) mb_split_masked(args, S, 1, 2, 0, OUT(mb_value), 4, OUT_AT(void, 4096), 4096, NULL)
#define MS_MERGE(S)  mb_merge(chunks4, 4, 1, S, 0, out_value(8, 4))
#define MS_MSHAPE(S) mb_merge_shape(chunks4, 4, 1, S, 0, OUT(mb_value))
#define MS_SPLIT_ROWS(ROW, id, f, C)                                                       \
    ROW(id##_kind, "microbatch.h", f, "spec: kind 99", MB_ERR_SPEC, C(&ms_kind))           \
    ROW(id##_dim, "microbatch.h", f, "spec: dim 5 of a 2-d value", MB_ERR_DIM, C(&ms_dim)) \
    ROW(id##_negdim, "microbatch.h", f, "spec: dim -9 of a 2-d value", MB_ERR_DIM, C(&ms_negdim))
#define MS_MERGE_ROWS(ROW, id, f, C)                                                                       \
    MS_SPLIT_ROWS(ROW, id, f, C)                                                                           \
    ROW(id##_op, "microbatch.h", f, "spec: reduce op 99", MB_ERR_SPEC, C(&ms_op))                          \
    ROW(id##_nored, "microbatch.h", f, "spec: custom reduce without a reducer", MB_ERR_SPEC, C(&ms_nored)) \
    ROW(id##_nofn, "microbatch.h", f, "spec: custom reducer without fn", MB_ERR_SPEC, C(&ms_nofn))         \
    ROW(id##_init, "microbatch.h", f, "spec: custom reducer whose init is of kind 9", MB_ERR_SPEC, C(&ms_init))
#define MB_HOSTILE_ROWS(ROW)                                          \
    MS_SPLIT_ROWS(ROW, ms_split, "mb_split", MS_SPLIT)                \
    MS_SPLIT_ROWS(ROW, ms_mbytes, "mb_split_masked_bytes", MS_MBYTES) \
    MS_SPLIT_ROWS(ROW, ms_masked, "mb_split_masked", MS_MASKED)       \
    MS_MERGE_ROWS(ROW, ms_merge, "mb_merge", MS_MERGE)                \
    MS_MERGE_ROWS(ROW, ms_mshape, "mb_merge_shape", MS_MSHAPE)

/* Caller-filled dt_meshes with one hostile field (the rest mesh2's: 1-D, 2 ranks, rank 0). */
enum { HM_NDIM0, HM_NDIM_BIG, HM_SHAPE, HM_SIZE, HM_INDEX, HM_RANKS, HM_COORD, HM_COUNT };
static dt_mesh hm[HM_COUNT];
#define HM_COORDF(M) dt_mesh_coord(M, 0, OUT(int32_t))
#define HM_DIMSZ(M)  dt_mesh_dim_size(M, 0)
#define HM_GROUP(M)  dt_mesh_group(M, 0, 0, OUT(int32_t), 8)
#define HM_SPEC(M)   dt_spec_init(OUT(dt_spec), M, pl_shard0, 1, MB_F32, 2, shape44, NULL)
#define HM_COMM(M)   dt_comm_init(OUT(dt_comm), M, g0)
#define HM_FROM(M)   dt_from_local(OUT(dt_tensor), M, pl_shard0, 1, in_local(2, 4), shape44)
#define HM_ROWS(ROW, id, f, C)                                                                           \
    ROW(id##_ndim0, "dtensor.h", f, "mesh: ndim 0", DT_ERR_MESH, C(&hm[HM_NDIM0]))                       \
    ROW(id##_ndimbig, "dtensor.h", f, "mesh: ndim > DT_MAX_MESH_DIMS", DT_ERR_MESH, C(&hm[HM_NDIM_BIG])) \
    ROW(id##_shape, "dtensor.h", f, "mesh: a size -2", DT_ERR_MESH, C(&hm[HM_SHAPE]))                    \
    ROW(id##_size, "dtensor.h", f, "mesh: size != product of shape", DT_ERR_MESH, C(&hm[HM_SIZE]))       \
    ROW(id##_index, "dtensor.h", f, "mesh: index 200", DT_ERR_MESH, C(&hm[HM_INDEX]))                    \
    ROW(id##_ranks, "dtensor.h", f, "mesh: ranks[1] = -5", DT_ERR_MESH, C(&hm[HM_RANKS]))                \
    ROW(id##_coord, "dtensor.h", f, "mesh: coord[0] = 99 (not its index's)", DT_ERR_MESH, C(&hm[HM_COORD]))
#define DM_HOSTILE_ROWS(ROW)                             \
    HM_ROWS(ROW, hm_coord, "dt_mesh_coord", HM_COORDF)   \
    HM_ROWS(ROW, hm_dimsz, "dt_mesh_dim_size", HM_DIMSZ) \
    HM_ROWS(ROW, hm_group, "dt_mesh_group", HM_GROUP)    \
    HM_ROWS(ROW, hm_spec, "dt_spec_init", HM_SPEC)       \
    HM_ROWS(ROW, hm_comm, "dt_comm_init", HM_COMM)       \
    HM_ROWS(ROW, hm_from, "dt_from_local", HM_FROM)

/* Caller-filled dt_specs with one hostile field (the rest sp_shard0's, a valid S(0) 4x4 f32 on
   a 2-rank mesh), and each function taking a spec called with it as its source. */
enum { HS_NOMESH, HS_MESH, HS_DTYPE, HS_NDIM, HS_NDIM_BIG, HS_SHAPE, HS_STRIDE, HS_KIND, HS_DIM, HS_RED, HS_COUNT };
static dt_spec hs[HS_COUNT];
static dt_mesh hs_mesh;
#define HS_CHECK(S)  dt_spec_check(S)
#define HS_LSHAPE(S) dt_local_shape(S, 0, OUT(int32_t), OUT_AT(int32_t, 64))
#define HS_PLAN(S)   dt_plan_redistribute(S, &sp_repl, 0, OUT(dt_plan))
#define HS_REDIST(S) \
    dt_redistribute(&dcomm, NULL, S, in_local(2, 4), &sp_repl, 0, out_tensor(MB_F32, 4, 4), OUT_AT(void, 8192), 4096)
#define HS_FULLB(S) dt_full_tensor_scratch_bytes(S, OUT(size_t))
#define HS_FULLQ(S) dt_full_tensor_scratch_query(&dcomm, S, in_local(2, 4), out_tensor(MB_F32, 4, 4), OUT(size_t))
#define HS_FULL(S)  dt_full_tensor(&dcomm, NULL, S, in_local(2, 4), out_tensor(MB_F32, 4, 4), OUT_AT(void, 8192), 4096)
#define HS_DISTQ(S) dt_distribute_scratch_query(&dcomm, S, in_local(4, 4), 0, out_tensor(MB_F32, 2, 4), OUT(size_t))
#define HS_DISTB(S) dt_distribute_scratch_bytes(S, 0, OUT(size_t))
#define HS_DIST(S)  dt_distribute(&dcomm, S, in_local(4, 4), 0, out_tensor(MB_F32, 2, 4), OUT_AT(void, 8192), 4096)
#define HS_ROWS(ROW, id, f, C)                                                                                 \
    ROW(id##_nomesh, "dtensor.h", f, "spec: NULL mesh", DT_ERR_NULL, C(&hs[HS_NOMESH]))                        \
    ROW(id##_mesh, "dtensor.h", f, "spec: its mesh has ndim > DT_MAX_MESH_DIMS", DT_ERR_MESH, C(&hs[HS_MESH])) \
    ROW(id##_dtype, "dtensor.h", f, "spec: dtype 99", DT_ERR_DTYPE, C(&hs[HS_DTYPE]))                          \
    ROW(id##_ndim, "dtensor.h", f, "spec: ndim -1", DT_ERR_SHAPE, C(&hs[HS_NDIM]))                             \
    ROW(id##_ndimbig, "dtensor.h", f, "spec: ndim > MB_MAX_DIMS", DT_ERR_SHAPE, C(&hs[HS_NDIM_BIG]))           \
    ROW(id##_shape, "dtensor.h", f, "spec: a negative size", DT_ERR_SHAPE, C(&hs[HS_SHAPE]))                   \
    ROW(id##_stride, "dtensor.h", f, "spec: a negative stride", DT_ERR_SHAPE, C(&hs[HS_STRIDE]))               \
    ROW(id##_kind, "dtensor.h", f, "spec: a placement of kind 9", DT_ERR_PLACEMENT, C(&hs[HS_KIND]))           \
    ROW(id##_dim, "dtensor.h", f, "spec: Shard(5) of a 2-d tensor", DT_ERR_DIM, C(&hs[HS_DIM]))                \
    ROW(id##_red, "dtensor.h", f, "spec: Partial of reduce op 99", DT_ERR_PLACEMENT, C(&hs[HS_RED]))
#define DT_HOSTILE_ROWS(ROW)                                         \
    HS_ROWS(ROW, hs_check, "dt_spec_check", HS_CHECK)                \
    HS_ROWS(ROW, hs_lshape, "dt_local_shape", HS_LSHAPE)             \
    HS_ROWS(ROW, hs_plan, "dt_plan_redistribute", HS_PLAN)           \
    HS_ROWS(ROW, hs_redist, "dt_redistribute", HS_REDIST)            \
    HS_ROWS(ROW, hs_full, "dt_full_tensor", HS_FULL)                 \
    HS_ROWS(ROW, hs_fullb, "dt_full_tensor_scratch_bytes", HS_FULLB) \
    HS_ROWS(ROW, hs_fullq, "dt_full_tensor_scratch_query", HS_FULLQ) \
    HS_ROWS(ROW, hs_distb, "dt_distribute_scratch_bytes", HS_DISTB)  \
    HS_ROWS(ROW, hs_distq, "dt_distribute_scratch_query", HS_DISTQ)  \
    HS_ROWS(ROW, hs_dist, "dt_distribute", HS_DIST)

/* ---- the table ------------------------------------------------------------------------
   ROW(id, header, function, case, expected code, call): `call` runs with every output in
   the canary area. The expected code is written by name, so the document shows it. */
#define BAD_INPUT_TABLE(ROW)                                                                                           \
    ROW(mb1, "microbatch.h", "mb_dtype_size", "unknown dtype", 0, (int)mb_dtype_size((mb_dtype)99))                    \
    ROW(mb2, "microbatch.h", "mb_strerror", "unknown code (returns \"unknown error\", never NULL)", 0,                 \
        mb_strerror(12345) == NULL)                                                                                    \
    ROW(mb3, "microbatch.h", "mb_tensor_init", "NULL tensor", MB_ERR_NULL,                                             \
        mb_tensor_init(NULL, fx, MB_F32, 2, shape84))                                                                  \
    ROW(mb4, "microbatch.h", "mb_tensor_init", "NULL shape, ndim > 0", MB_ERR_NULL,                                    \
        mb_tensor_init(OUT(mb_tensor), fx, MB_F32, 2, NULL))                                                           \
    ROW(mb4b, "microbatch.h", "mb_copy", "a view sized without data (mb_tensor_init with NULL data)", MB_ERR_NULL,     \
        mb_copy(out_tensor(MB_F32, 8, 4), &t_sized))                                                                   \
    ROW(mb5, "microbatch.h", "mb_tensor_init", "ndim > MB_MAX_DIMS", MB_ERR_NDIM,                                      \
        mb_tensor_init(OUT(mb_tensor), fx, MB_F32, MB_MAX_DIMS + 1, shape84))                                          \
    ROW(mb6, "microbatch.h", "mb_tensor_init", "ndim < 0", MB_ERR_NDIM,                                                \
        mb_tensor_init(OUT(mb_tensor), fx, MB_F32, -1, shape84))                                                       \
    ROW(mb7, "microbatch.h", "mb_tensor_init", "unknown dtype", MB_ERR_DTYPE,                                          \
        mb_tensor_init(OUT(mb_tensor), fx, (mb_dtype)99, 2, shape84))                                                  \
    ROW(mb8, "microbatch.h", "mb_tensor_init", "negative size", MB_ERR_SHAPE,                                          \
        mb_tensor_init(OUT(mb_tensor), fx, MB_F32, 2, shape_neg))                                                      \
    ROW(mb9, "microbatch.h", "mb_tensor_check", "NULL", MB_ERR_NULL, mb_tensor_check(NULL))                            \
    ROW(mb10, "microbatch.h", "mb_tensor_check", "ndim > MB_MAX_DIMS", MB_ERR_NDIM, mb_tensor_check(&t_ndim7))         \
    ROW(mb11, "microbatch.h", "mb_tensor_check", "negative size", MB_ERR_SHAPE, mb_tensor_check(&t_negshape))          \
    ROW(mb12, "microbatch.h", "mb_tensor_check", "negative stride", MB_ERR_SHAPE, mb_tensor_check(&t_neg_stride))      \
    ROW(mb13, "microbatch.h", "mb_tensor_check", "unknown dtype", MB_ERR_DTYPE, mb_tensor_check(&t_dtype))             \
    ROW(mb14, "microbatch.h", "mb_numel", "NULL", MB_ERR_NULL, (int)mb_numel(NULL))                                    \
    ROW(mb15, "microbatch.h", "mb_numel", "negative size", MB_ERR_SHAPE, (int)mb_numel(&t_negshape))                   \
    ROW(mb15b, "microbatch.h", "mb_numel", "ndim > MB_MAX_DIMS", MB_ERR_NDIM, (int)mb_numel(&t_ndim7))                 \
    ROW(mbn1, "microbatch.h", "mb_shape_numel", "NULL shape, ndim > 0", MB_ERR_NULL, (int)mb_shape_numel(NULL, 2))     \
    ROW(mbn2, "microbatch.h", "mb_shape_numel", "negative size", MB_ERR_SHAPE, (int)mb_shape_numel(shape_neg, 2))      \
    ROW(mbn3, "microbatch.h", "mb_shape_numel", "ndim > MB_MAX_DIMS", MB_ERR_NDIM,                                     \
        (int)mb_shape_numel(shape84, MB_MAX_DIMS + 1))                                                                 \
    ROW(mb16, "microbatch.h", "mb_is_contiguous", "NULL", MB_ERR_NULL, mb_is_contiguous(NULL))                         \
    ROW(mb17, "microbatch.h", "mb_normalize_dim", "dim >= ndim", MB_ERR_DIM, mb_normalize_dim(2, 2))                   \
    ROW(mb18, "microbatch.h", "mb_normalize_dim", "dim < -ndim", MB_ERR_DIM, mb_normalize_dim(-3, 2))                  \
    ROW(mb19, "microbatch.h", "mb_normalize_dim", "ndim 0 (no dim exists)", MB_ERR_DIM, mb_normalize_dim(0, 0))        \
    ROW(mb19b, "microbatch.h", "mb_normalize_dim", "dim INT_MIN, ndim < 0 (no overflow)", MB_ERR_DIM,                  \
        mb_normalize_dim(INT32_MIN, -8))                                                                               \
    ROW(mb20, "microbatch.h", "mb_narrow", "NULL out", MB_ERR_NULL, mb_narrow(&t84, 0, 0, 1, NULL))                    \
    ROW(mb21, "microbatch.h", "mb_narrow", "dim out of range", MB_ERR_DIM, mb_narrow(&t84, 2, 0, 1, OUT(mb_tensor)))   \
    ROW(mb22, "microbatch.h", "mb_narrow", "start + length > size", MB_ERR_RANGE,                                      \
        mb_narrow(&t84, 0, 6, 3, OUT(mb_tensor)))                                                                      \
    ROW(mb23, "microbatch.h", "mb_narrow", "negative length", MB_ERR_RANGE, mb_narrow(&t84, 0, 0, -1, OUT(mb_tensor))) \
    ROW(mb24, "microbatch.h", "mb_narrow", "invalid tensor", MB_ERR_SHAPE,                                             \
        mb_narrow(&t_negshape, 0, 0, 1, OUT(mb_tensor)))                                                               \
    ROW(mb25, "microbatch.h", "mb_copy", "NULL dst", MB_ERR_NULL, mb_copy(NULL, &t84))                                 \
    ROW(mb26, "microbatch.h", "mb_copy", "shapes differ", MB_ERR_SHAPE, mb_copy(out_tensor(MB_F32, 4, 4), &t84))       \
    ROW(mb27, "microbatch.h", "mb_copy", "dtypes differ", MB_ERR_DTYPE, mb_copy(out_tensor(MB_I32, 8, 4), &t84))       \
    ROW(mb28, "microbatch.h", "mb_zero", "NULL", MB_ERR_NULL, mb_zero(NULL))                                           \
    ROW(mb29, "microbatch.h", "mb_zero", "invalid tensor", MB_ERR_SHAPE, mb_zero(&t_negshape))                         \
    ROW(mbw1, "microbatch.h", "mb_walk", "NULL a", MB_ERR_NULL,                                                        \
        mb_walk(NULL, out_tensor(MB_F32, 8, 4), walk_write, NULL))                                                     \
    ROW(mbw2, "microbatch.h", "mb_walk", "shapes differ", MB_ERR_SHAPE,                                                \
        mb_walk(&t84, out_tensor(MB_F32, 4, 4), walk_write, NULL))                                                     \
    ROW(mbw3, "microbatch.h", "mb_walk", "NULL visitor", MB_ERR_NULL,                                                  \
        mb_walk(&t84, out_tensor(MB_F32, 8, 4), NULL, NULL))                                                           \
    ROW(mb30, "microbatch.h", "mb_split_sizes", "chunks <= 0", MB_ERR_CHUNKS,                                          \
        mb_split_sizes(8, 0, MB_BALANCED, OUT(int32_t), 4))                                                            \
    ROW(mb31, "microbatch.h", "mb_split_sizes", "negative size", MB_ERR_SHAPE,                                         \
        mb_split_sizes(-1, 2, MB_BALANCED, OUT(int32_t), 4))                                                           \
    ROW(mb32, "microbatch.h", "mb_split_sizes", "sizes[] shorter than the chunk count", MB_ERR_TOO_SMALL,              \
        mb_split_sizes(8, 4, MB_BALANCED, OUT(int32_t), 3))                                                            \
    ROW(mb33, "microbatch.h", "mb_split", "NULL args", MB_ERR_NULL,                                                    \
        mb_split(NULL, NULL, 1, 2, 0, OUT(mb_value), 4, NULL))                                                         \
    ROW(mb34, "microbatch.h", "mb_split", "NULL out", MB_ERR_NULL, mb_split(args, NULL, 2, 2, 0, NULL, 4, NULL))       \
    ROW(mb35, "microbatch.h", "mb_split", "chunks <= 0 with a value to split", MB_ERR_CHUNKS,                          \
        mb_split(args, NULL, 2, 0, 0, OUT(mb_value), 4, NULL))                                                         \
    ROW(mb36, "microbatch.h", "mb_split", "out[] smaller than chunks x nargs", MB_ERR_TOO_SMALL,                       \
        mb_split(args, NULL, 2, 4, 0, OUT(mb_value), 3, NULL))                                                         \
    ROW(mb37, "microbatch.h", "mb_split", "split dim out of range", MB_ERR_DIM,                                        \
        mb_split(args, &spec_split5, 1, 2, 0, OUT(mb_value), 4, NULL))                                                 \
    ROW(mb38, "microbatch.h", "mb_split", "unknown spec kind", MB_ERR_SPEC,                                            \
        mb_split(args, &spec_bad_kind, 1, 2, 0, OUT(mb_value), 4, NULL))                                               \
    ROW(mb39, "microbatch.h", "mb_split", "unknown value kind", MB_ERR_SPEC,                                           \
        mb_split(args_bad_kind, NULL, 1, 2, 0, OUT(mb_value), 4, NULL))                                                \
    ROW(mb40, "microbatch.h", "mb_split", "MB_STRICT and split dim < chunks", MB_ERR_SPLIT_SIZE,                       \
        mb_split(args, NULL, 1, 9, MB_STRICT, OUT(mb_value), 32, NULL))                                                \
    ROW(mb41, "microbatch.h", "mb_split_masked_bytes", "NULL bytes", MB_ERR_NULL,                                      \
        mb_split_masked_bytes(args, NULL, 1, 2, 0, NULL))                                                              \
    ROW(mb42, "microbatch.h", "mb_split_masked", "storage too small", MB_ERR_TOO_SMALL,                                \
        mb_split_masked(args, NULL, 1, 2, 0, OUT(mb_value), 4, OUT_AT(void, 4096), 8, NULL))                           \
    ROW(mb43, "microbatch.h", "mb_split_masked", "storage not 8-byte aligned", MB_ERR_ALIGN,                           \
        mb_split_masked(args, NULL, 1, 2, 0, OUT(mb_value), 4, OUT_AT(void, 4097), 4096, NULL))                        \
    ROW(mb44, "microbatch.h", "mb_merge", "NULL chunks", MB_ERR_NULL, mb_merge(NULL, 2, 1, NULL, 0, OUT(mb_value)))    \
    ROW(mb45, "microbatch.h", "mb_merge", "no chunks to concatenate", MB_ERR_CHUNKS,                                   \
        mb_merge(chunks4, 0, 1, NULL, 0, out_value(8, 4)))                                                             \
    ROW(mb46, "microbatch.h", "mb_merge", "output shape != merged shape", MB_ERR_SHAPE,                                \
        mb_merge(chunks4, 4, 1, NULL, 0, out_value(4, 4)))                                                             \
    ROW(mb47, "microbatch.h", "mb_merge", "concat dim out of range", MB_ERR_DIM,                                       \
        mb_merge(chunks4, 4, 1, &spec_split5, 0, out_value(8, 4)))                                                     \
    ROW(mb48, "microbatch.h", "mb_merge", "custom reduce without a reducer", MB_ERR_SPEC,                              \
        mb_merge(chunks4, 4, 1, &spec_custom_null, 0, out_value(2, 4)))                                                \
    ROW(mb49, "microbatch.h", "mb_merge", "output dtype differs", MB_ERR_DTYPE,                                        \
        mb_merge(chunks4, 4, 1, &spec_concat0, 0, out_value_dt(MB_I32, 8, 4)))                                         \
    ROW(mb50, "microbatch.h", "mb_merge", "a custom reducer's output is one of the chunks", MB_ERR_OVERLAP,            \
        mb_merge(chunks4, 4, 1, &spec_custom_add, 0, &chunks4[1]))                                                     \
    ROW(mb51, "microbatch.h", "mb_merge", "default spec for a scalar (torch.cat of floats)", MB_ERR_SPEC,              \
        mb_merge(scalars2, 2, 1, NULL, 0, OUT(mb_value)))                                                              \
    MB_HOSTILE_ROWS(ROW)                                                                                               \
    ROW(mb52, "microbatch.h", "mb_merge_shape", "NULL chunks", MB_ERR_NULL,                                            \
        mb_merge_shape(NULL, 2, 1, NULL, 0, OUT(mb_value)))                                                            \
    ROW(mb53, "microbatch.h", "mb_merge_shape", "no chunks (the output shape is the caller's)", MB_ERR_CHUNKS,         \
        mb_merge_shape(chunks4, 0, 1, NULL, 0, OUT(mb_value)))                                                         \
    ROW(mb54, "microbatch.h", "mb_merge_shape", "concat dim out of range", MB_ERR_DIM,                                 \
        mb_merge_shape(chunks4, 4, 1, &spec_split5, 0, OUT(mb_value)))                                                 \
    ROW(mb55, "microbatch.h", "mb_merge_shape", "custom reduce without a reducer", MB_ERR_SPEC,                        \
        mb_merge_shape(chunks4, 4, 1, &spec_custom_null, 0, OUT(mb_value)))                                            \
    ROW(mb56, "microbatch.h", "mb_merge_shape", "default spec for a scalar (torch.cat of floats)", MB_ERR_SPEC,        \
        mb_merge_shape(scalars2, 2, 1, NULL, 0, OUT(mb_value)))                                                        \
                                                                                                                       \
    ROW(pp1, "pipeline.h", "pp_strerror", "unknown code (returns a string, never NULL)", 0,                            \
        pp_strerror(12345) == NULL)                                                                                    \
    ROW(pp2, "pipeline.h", "pp_balance_check", "NULL balance", PP_ERR_NULL,                                            \
        pp_balance_check(NULL, 2, 2, 2, 1, 0, NULL))                                                                   \
    ROW(pp3, "pipeline.h", "pp_balance_check", "sum != layers", PP_ERR_BALANCE_SUM,                                    \
        pp_balance_check(bal2, 2, 3, 2, 1, 0, NULL))                                                                   \
    ROW(pp4, "pipeline.h", "pp_balance_check", "an entry <= 0", PP_ERR_BALANCE_NONPOSITIVE,                            \
        pp_balance_check(bal_bad, 2, 2, 2, 1, 0, NULL))                                                                \
    ROW(pp5, "pipeline.h", "pp_balance_check", "more partitions than ranks", PP_ERR_PARTITIONS,                        \
        pp_balance_check(bal2, 2, 2, 1, 1, 0, NULL))                                                                   \
    ROW(pp6, "pipeline.h", "pp_balance_check", "chunks <= 0", PP_ERR_CHUNKS,                                           \
        pp_balance_check(bal2, 2, 2, 2, 0, 0, NULL))                                                                   \
    ROW(pp7, "pipeline.h", "pp_balance_check", "unknown checkpoint mode", PP_ERR_CHECKPOINT,                           \
        pp_balance_check(bal2, 2, 2, 2, 1, 7, NULL))                                                                   \
    ROW(pp8, "pipeline.h", "pp_balance_by_cost", "NULL cost", PP_ERR_NULL,                                             \
        pp_balance_by_cost(NULL, 3, 2, OUT(int32_t), NULL))                                                            \
    ROW(pp9, "pipeline.h", "pp_balance_by_cost", "more parts than layers", PP_ERR_LAYERS,                              \
        pp_balance_by_cost(costs3, 3, 4, OUT(int32_t), OUT_AT(uint64_t, 64)))                                          \
    ROW(pp10, "pipeline.h", "pp_balance_by_cost", "nparts <= 0", PP_ERR_ARG,                                           \
        pp_balance_by_cost(costs3, 3, 0, OUT(int32_t), OUT_AT(uint64_t, 64)))                                          \
    ROW(pp11, "pipeline.h", "pp_balance_layers", "unknown criterion", PP_ERR_ARG,                                      \
        pp_balance_layers(layers2, 2, 2, 9, 1, OUT(int32_t), NULL))                                                    \
    ROW(pp12, "pipeline.h", "pp_balance_layers", "NULL layers", PP_ERR_NULL,                                           \
        pp_balance_layers(NULL, 2, 2, PP_BY_COST, 1, OUT(int32_t), NULL))                                              \
    ROW(pp13, "pipeline.h", "pp_checkpoint_stop", "unknown mode", PP_ERR_CHECKPOINT, pp_checkpoint_stop(9, 4))         \
    ROW(pp14, "pipeline.h", "pp_checkpoint_stop", "chunks <= 0", PP_ERR_CHUNKS, pp_checkpoint_stop(PP_CKPT_ALWAYS, 0)) \
    ROW(pp15, "pipeline.h", "pp_stage_map", "unknown style", PP_ERR_MAP, pp_stage_map(5, 2, 4, OUT(uint8_t)))          \
    ROW(pp16, "pipeline.h", "pp_stage_map", "\"v\" with stages % ranks != 0", PP_ERR_MAP,                              \
        pp_stage_map(PP_MAP_V, 2, 3, OUT(uint8_t)))                                                                    \
    ROW(pp17, "pipeline.h", "pp_stage_map", "NULL map", PP_ERR_NULL, pp_stage_map(PP_MAP_LOOP, 2, 4, NULL))            \
    ROW(pp18, "pipeline.h", "pp_stage_map", "ranks <= 0", PP_ERR_ARG, pp_stage_map(PP_MAP_LOOP, 0, 4, OUT(uint8_t)))   \
    ROW(pp19, "pipeline.h", "pp_schedule_name", "unknown schedule (returns a name, never NULL)", 0,                    \
        pp_schedule_name(99) == NULL)                                                                                  \
    ROW(pp20, "pipeline.h", "pp_schedule_from_name", "unknown name", PP_ERR_SCHEDULE, pp_schedule_from_name("nope"))   \
    ROW(pp21, "pipeline.h", "pp_schedule_from_name", "NULL", PP_ERR_NULL, pp_schedule_from_name(NULL))                 \
    ROW(pp22, "pipeline.h", "pp_schedule_check", "unknown schedule", PP_ERR_SCHEDULE, pp_schedule_check(99, 2, 1, 4))  \
    ROW(pp23, "pipeline.h", "pp_schedule_check", "ranks > PP_MAX_RANKS", PP_ERR_ARG,                                   \
        pp_schedule_check(PP_SCHED_1F1B, PP_MAX_RANKS + 1, 1, 64))                                                     \
    ROW(pp24, "pipeline.h", "pp_schedule_check", "ZBV with 1 stage per rank", PP_ERR_STAGES_PER_RANK,                  \
        pp_schedule_check(PP_SCHED_ZBV, 2, 1, 4))                                                                      \
    ROW(pp25, "pipeline.h", "pp_schedule_check", "interleaved: M not a multiple of rounds", PP_ERR_ROUNDS,             \
        pp_schedule_check(PP_SCHED_INTERLEAVED_1F1B, 4, 2, 9))                                                         \
    ROW(pp26, "pipeline.h", "pp_schedule_check", "microbatches <= 0", PP_ERR_ARG,                                      \
        pp_schedule_check(PP_SCHED_GPIPE, 2, 1, 0))                                                                    \
    ROW(pp27, "pipeline.h", "pp_plan_bytes", "ranks <= 0 (returns 0)", 0, (int)pp_plan_bytes(0, 1, 4))                 \
    ROW(pp28, "pipeline.h", "pp_plan_init", "NULL plan", PP_ERR_NULL, pp_plan_init(NULL, OUT(void), 4096, 2, 2, 4))    \
    ROW(pp29, "pipeline.h", "pp_plan_init", "storage too small", PP_ERR_TOO_SMALL,                                     \
        pp_plan_init(OUT_AT(pp_plan, 4096), OUT(void), 4, 2, 2, 4))                                                    \
    ROW(pp30, "pipeline.h", "pp_plan_init", "stages > PP_MAX_STAGES", PP_ERR_ARG,                                      \
        pp_plan_init(OUT_AT(pp_plan, 4096), OUT(void), 4096, 2, PP_MAX_STAGES + 1, 4))                                 \
    ROW(pp31, "pipeline.h", "pp_plan_init", "misaligned storage", PP_ERR_ARG,                                          \
        pp_plan_init(OUT_AT(pp_plan, 4096), OUT_AT(void, 1), 4096, 2, 2, 4))                                           \
    ROW(pp32, "pipeline.h", "pp_schedule_build", "unknown schedule", PP_ERR_SCHEDULE,                                  \
        pp_schedule_build(OUT_AT(pp_plan, 4096), 99, 2, 1, 4, OUT(void), 4096, NULL))                                  \
    ROW(pp33, "pipeline.h", "pp_schedule_build", "storage too small", PP_ERR_TOO_SMALL,                                \
        pp_schedule_build(OUT_AT(pp_plan, 4096), PP_SCHED_1F1B, 2, 1, 4, OUT(void), 8, NULL))                          \
    ROW(pp34, "pipeline.h", "pp_schedule_build", "NULL plan", PP_ERR_NULL,                                             \
        pp_schedule_build(NULL, PP_SCHED_1F1B, 2, 1, 4, OUT(void), 4096, NULL))                                        \
    ROW(pp35, "pipeline.h", "pp_plan_table", "rank negative or >= PP_MAX_RANKS", PP_ERR_ARG,                           \
        pp_plan_table(&lowered, PP_MAX_RANKS, OUT(pp_table)))                                                          \
    ROW(pp36, "pipeline.h", "pp_plan_table", "NULL out", PP_ERR_NULL, pp_plan_table(&lowered, 0, NULL))                \
    ROW(pp37, "pipeline.h", "pp_peak_inflight", "rank out of range", PP_ERR_ARG, pp_peak_inflight(&sched, 5))          \
    ROW(pp38, "pipeline.h", "pp_lower", "storage too small (storage is working memory; `out` untouched)",              \
        PP_ERR_TOO_SMALL, pp_lower(&sched, OUT_AT(pp_plan, 4096), lower_work, 8, NULL))                                \
    ROW(pp39, "pipeline.h", "pp_lower", "NULL input plan", PP_ERR_NULL,                                                \
        pp_lower(NULL, OUT_AT(pp_plan, 4096), OUT(void), 4096, NULL))                                                  \
    ROW(pp69, "pipeline.h", "pp_lower_mode", "unknown mode", PP_ERR_ARG,                                               \
        pp_lower_mode(&sched, OUT_AT(pp_plan, 4096), OUT(void), 4096, 2, NULL))                                        \
    ROW(pp70, "pipeline.h", "pp_lower_mode", "PP_LOWER_TORCH, storage too small (working memory; `out` untouched)",    \
        PP_ERR_TOO_SMALL, pp_lower_mode(&sched, OUT_AT(pp_plan, 4096), lower_work, 8, PP_LOWER_TORCH, NULL))           \
    ROW(pp40, "pipeline.h", "pp_validate", "NULL", PP_ERR_NULL, pp_validate(NULL, NULL))                               \
    ROW(pp40b, "pipeline.h", "pp_validate", "a send twice (SEND_F)", PP_ERR_DUPLICATE, pp_validate(bad_comm(0), NULL)) \
    ROW(pp40c, "pipeline.h", "pp_validate", "a send or receive with no such stage (SEND_B of stage 0)", PP_ERR_ACTION, \
        pp_validate(bad_comm(1), NULL))                                                                                \
    ROW(pp40d, "pipeline.h", "pp_validate", "a send before its F (SEND_F) or I / B (SEND_B)", PP_ERR_ACTION,           \
        pp_validate(bad_comm(2), NULL))                                                                                \
    ROW(pp40e, "pipeline.h", "pp_validate", "a send or receive between stages on the same rank", PP_ERR_STAGE_RANK,    \
        pp_validate(bad_comm(3), NULL))                                                                                \
    ROW(pp40f, "pipeline.h", "pp_validate", "a skip send or receive without a skip route to or from another rank",     \
        PP_ERR_ACTION, pp_validate(bad_comm(4), NULL))                                                                 \
    ROW(pp41, "pipeline.h", "pp_sim_bytes", "NULL (returns 0)", 0, (int)pp_sim_bytes(NULL))                            \
    ROW(pp42, "pipeline.h", "pp_simulate", "work too small", PP_ERR_TOO_SMALL,                                         \
        pp_simulate(&lowered, &costs, work, 8, OUT(pp_sim), OUT_AT(pp_event, 4096), 16, OUT_AT(int, 8192), NULL))      \
    ROW(pp43, "pipeline.h", "pp_simulate", "NULL costs", PP_ERR_NULL,                                                  \
        pp_simulate(&lowered, NULL, work, sizeof work, OUT(pp_sim), NULL, 0, NULL, NULL))                              \
    ROW(pp44, "pipeline.h", "pp_action_format", "buffer too small", PP_ERR_TOO_SMALL,                                  \
        pp_action_format(send_f, OUT(char), 2))                                                                        \
    ROW(pp45, "pipeline.h", "pp_action_parse", "malformed", PP_ERR_PARSE, pp_action_parse("0X0", 3, OUT(pp_action)))   \
    ROW(pp46, "pipeline.h", "pp_action_parse", "NULL out", PP_ERR_NULL, pp_action_parse("0F0", 3, NULL))               \
    ROW(pp47, "pipeline.h", "pp_csv_write", "buffer too small", PP_ERR_TOO_SMALL,                                      \
        pp_csv_write(&sched, OUT(char), 4, &needed))                                                                   \
    ROW(pp48, "pipeline.h", "pp_csv_read", "more rows than ranks", PP_ERR_RANKS,                                       \
        pp_csv_read(out_plan(), "0F0\r\n1F0\r\n0B0\r\n", 15, NULL))                                                    \
    ROW(pp49, "pipeline.h", "pp_csv_read", "malformed cell", PP_ERR_PARSE,                                             \
        pp_csv_read(out_plan(), "0Q0\r\n\r\n", 7, NULL))                                                               \
    ROW(pp50, "pipeline.h", "pp_emit_c", "buffer too small", PP_ERR_TOO_SMALL,                                         \
        pp_emit_c(&lowered, "plan", OUT(char), 16, &needed))                                                           \
    ROW(pp51, "pipeline.h", "pp_emit_c", "NULL name", PP_ERR_NULL, pp_emit_c(&lowered, NULL, OUT(char), 4096, NULL))   \
    ROW(pp52, "pipeline.h", "pp_timeline", "buffer too small", PP_ERR_TOO_SMALL,                                       \
        pp_timeline(&sched, OUT(char), 4, &needed))                                                                    \
    ROW(pp53, "pipeline.h", "pp_trace_json", "buffer too small", PP_ERR_TOO_SMALL,                                     \
        pp_trace_json(events1, 1, OUT(char), 4, &needed))                                                              \
    ROW(pp54, "pipeline.h", "pp_trace_json", "negative count", PP_ERR_ARG,                                             \
        pp_trace_json(events1, -1, OUT(char), 4096, NULL))                                                             \
    ROW(pp55, "pipeline_exec.h", "pp_exec_bytes", "NULL table (returns 0)", 0, (int)pp_exec_bytes(&xcfg, NULL))        \
    ROW(pp56, "pipeline_exec.h", "pp_exec_init", "NULL group", PP_ERR_NULL,                                            \
        pp_exec_init(OUT(pp_exec), &xcfg, &table0, NULL, OUT_AT(void, 4096), 8192))                                    \
    ROW(pp57, "pipeline_exec.h", "pp_exec_init", "storage too small", PP_ERR_TOO_SMALL,                                \
        pp_exec_init(OUT(pp_exec), &xcfg, &table0, g0, OUT_AT(void, 4096), 8))                                         \
    ROW(pp58, "pipeline_exec.h", "pp_exec_init", "misaligned storage", PP_ERR_ARG,                                     \
        pp_exec_init(OUT(pp_exec), &xcfg, &table0, g0, OUT_AT(void, 4097), 8192))                                      \
    ROW(pp59, "pipeline_exec.h", "pp_exec_init", "group smaller than the table's ranks, or another rank",              \
        PP_ERR_RANKS, pp_exec_init(OUT(pp_exec), &xcfg, &table0, &nomember, OUT_AT(void, 4096), 8192))                 \
    ROW(pp60, "pipeline_exec.h", "pp_exec_init", "balance inconsistent with the layers", PP_ERR_BALANCE_SUM,           \
        pp_exec_init(OUT(pp_exec), xcfg_bad_balance(), &table0, g0, OUT_AT(void, 4096), 8192))                         \
    ROW(pp61, "pipeline_exec.h", "pp_exec_run", "NULL", PP_ERR_NULL, pp_exec_run(NULL))                                \
    ROW(pp62, "pipeline_exec.h", "pp_exec_run", "never initialised (zeroed)", PP_ERR_NULL, pp_exec_run(&xexec_unset))  \
    ROW(pp63, "pipeline_exec.h", "pp_exec_loss", "NULL loss", PP_ERR_NULL, pp_exec_loss(&xexec_unset, NULL, NULL))     \
    ROW(pp64, "pipeline_exec.h", "pp_exec_loss", "not the last stage's rank", PP_ERR_ARG,                              \
        pp_exec_loss(&xexec_unset, NULL, OUT(double)))                                                                 \
    ROW(pp64b, "pipeline_exec.h", "pp_exec_loss", "after a step that failed before every loss", PP_ERR_ARG,            \
        pp_exec_loss(&xexec_noloss, NULL, OUT(double)))                                                                \
    ROW(pp65, "pipeline.h", "pp_mailbox_depth", "NULL plan", PP_ERR_NULL,                                              \
        pp_mailbox_depth(NULL, 4, work, sizeof work, NULL))                                                            \
    ROW(pp66, "pipeline.h", "pp_mailbox_depth", "max_depth above 254", PP_ERR_ARG,                                     \
        pp_mailbox_depth(&lowered, 255, work, sizeof work, NULL))                                                      \
    ROW(pp67, "pipeline.h", "pp_mailbox_depth", "work too small", PP_ERR_TOO_SMALL,                                    \
        pp_mailbox_depth(&lowered, 4, work, 8, NULL))                                                                  \
    ROW(pp68, "pipeline.h", "pp_mailbox_depth", "needs a deeper mailbox than max_depth (1F1B: 1; plan unchanged)",     \
        PP_ERR_MAILBOX, pp_mailbox_depth(&lowered, 0, work, sizeof work, NULL))                                        \
    ROW(pp71, "pipeline_model.h", "pp_invocations", "NULL order", PP_ERR_NULL,                                         \
        pp_invocations(NULL, 3, 2, inv_parts, 2, OUT(int32_t), OUT_AT(uint8_t, 1024), OUT_AT(int, 2048), NULL))        \
    ROW(pp72, "pipeline_model.h", "pp_invocations", "a layer at no position", PP_ERR_ARG,                              \
        pp_invocations(inv_unused, 2, 2, inv_parts, 2, OUT(int32_t), OUT_AT(uint8_t, 1024), OUT_AT(int, 2048), NULL))  \
    ROW(pp73, "pipeline_model.h", "pp_invocations", "balance over distinct layers does not sum", PP_ERR_BALANCE_SUM,   \
        pp_invocations(inv_order, 3, 2, inv_parts_bad, 2, OUT(int32_t), OUT_AT(uint8_t, 1024), OUT_AT(int, 2048),      \
                       NULL))                                                                                          \
    ROW(pp74, "pipeline_model.h", "pp_skip_layout", "a pop no layer stashes", PP_ERR_SKIP_UNSTASHED,                   \
        pp_skip_layout(sk_unstashed, 2, NULL, 2, sk_bal2, 1, OUT(pp_route), 4, OUT_AT(int, 2048), NULL))               \
    ROW(pp75, "pipeline_model.h", "pp_skip_layout", "popped before its stash (a skip backwards)",                      \
        PP_ERR_SKIP_BACKWARDS,                                                                                         \
        pp_skip_layout(sk_backwards, 2, NULL, 2, sk_bal2, 1, OUT(pp_route), 4, OUT_AT(int, 2048), NULL))               \
    ROW(pp76, "pipeline_model.h", "pp_skip_layout", "a name stashed twice in one namespace", PP_ERR_SKIP_TWICE,        \
        pp_skip_layout(sk_twice, 3, NULL, 3, sk_bal3, 1, OUT(pp_route), 4, OUT_AT(int, 2048), NULL))                   \
    ROW(pp77, "pipeline_model.h", "pp_skip_layout", "stashed, never popped", PP_ERR_SKIP_UNPOPPED,                     \
        pp_skip_layout(sk_unpopped, 2, NULL, 2, sk_bal2, 1, OUT(pp_route), 4, OUT_AT(int, 2048), NULL))                \
    ROW(pp78, "pipeline_model.h", "pp_skip_layout", "more routes than max", PP_ERR_TOO_SMALL,                          \
        pp_skip_layout(sk_ok, 2, NULL, 2, sk_bal2, 1, OUT(pp_route), 0, OUT_AT(int, 2048), NULL))                      \
    ROW(pp79, "pipeline.h", "pp_schedule_build_map", "a schedule other than GPipe or forward-only", PP_ERR_SCHEDULE,   \
        pp_schedule_build_map(OUT_AT(pp_plan, 4096), PP_SCHED_1F1B, 2, map_01, 2, 4, OUT(void), 4096, NULL))           \
    ROW(pp80, "pipeline.h", "pp_schedule_build_map", "a stage mapped to rank >= nranks", PP_ERR_STAGE_RANK,            \
        pp_schedule_build_map(OUT_AT(pp_plan, 4096), PP_SCHED_GPIPE, 2, map_03, 2, 4, OUT(void), 4096, NULL))          \
    ROW(pp81, "pipeline.h", "pp_plan_skips", "a route with src > dst (plan unchanged)", PP_ERR_SKIP_BACKWARDS,         \
        pp_plan_skips(&sched, route_back, 1))                                                                          \
    ROW(pp82, "pipeline.h", "pp_plan_skips", "more than PP_MAX_SKIPS routes", PP_ERR_ARG,                              \
        pp_plan_skips(&sched, route_back, PP_MAX_SKIPS + 1))                                                           \
    ROW(pp83, "pipeline_exec.h", "pp_exec_query", "a skip route inconsistent with the positions' stages", PP_ERR_ARG,  \
        pp_exec_query(&xcfg_badroute, &table0, OUT(size_t)))                                                           \
    ROW(pp84, "pipeline_exec.h", "pp_exec_builds", "layer out of range", PP_ERR_ARG,                                   \
        pp_exec_builds(&xcfg, &table0, 99))                                                                            \
    ROW(pp85, "pipeline_exec.h", "pp_exec_build", "NULL", PP_ERR_NULL, pp_exec_build(NULL))                            \
    ROW(pp86, "pipeline_bn.h", "pp_dbn_init", "NULL arrays", PP_ERR_NULL,                                              \
        pp_dbn_init(OUT(pp_dbn), 4, 1e-5f, 0.1f, 2, NULL, dbn_f[1], dbn_f[2], dbn_f[3], dbn_f[4], dbn_f[5], dbn_acc))  \
    ROW(pp87, "pipeline_bn.h", "pp_dbn_init", "chunks 0", PP_ERR_ARG,                                                  \
        pp_dbn_init(OUT(pp_dbn), 4, 1e-5f, 0.1f, 0, dbn_f[0], dbn_f[1], dbn_f[2], dbn_f[3], dbn_f[4], dbn_f[5],        \
                    dbn_acc))                                                                                          \
    PP_HOSTILE_ROWS(ROW)                                                                                               \
    PC_HOSTILE_ROWS(ROW)                                                                                               \
                                                                                                                       \
    ROW(dt1, "dtensor.h", "dt_strerror", "unknown code (returns a string, never NULL)", 0, dt_strerror(12345) == NULL) \
    ROW(dt2, "dtensor.h", "dt_mesh_init", "NULL mesh", DT_ERR_NULL, dt_mesh_init(NULL, 1, shape_m2, NULL, 0))          \
    ROW(dt3, "dtensor.h", "dt_mesh_init", "ndim > DT_MAX_MESH_DIMS", DT_ERR_MESH,                                      \
        dt_mesh_init(OUT(dt_mesh), DT_MAX_MESH_DIMS + 1, shape84, NULL, 0))                                            \
    ROW(dt4, "dtensor.h", "dt_mesh_init", "a mesh size < 1", DT_ERR_MESH,                                              \
        dt_mesh_init(OUT(dt_mesh), 1, shape_m0, NULL, 0))                                                              \
    ROW(dt5, "dtensor.h", "dt_mesh_init", "repeated rank", DT_ERR_RANK,                                                \
        dt_mesh_init(OUT(dt_mesh), 1, shape_m2, ranks_dup, 0))                                                         \
    ROW(dt6, "dtensor.h", "dt_mesh_init", "negative rank", DT_ERR_RANK,                                                \
        dt_mesh_init(OUT(dt_mesh), 1, shape_m2, ranks_neg, 0))                                                         \
    ROW(dt7, "dtensor.h", "dt_mesh_init", "negative own rank", DT_ERR_RANK,                                            \
        dt_mesh_init(OUT(dt_mesh), 1, shape_m2, NULL, -1))                                                             \
    ROW(dt8, "dtensor.h", "dt_mesh_coord", "rank not in the mesh", DT_ERR_NOT_MEMBER,                                  \
        dt_mesh_coord(&mesh2, 7, OUT(int32_t)))                                                                        \
    ROW(dt9, "dtensor.h", "dt_mesh_coord", "NULL coord", DT_ERR_NULL, dt_mesh_coord(&mesh2, 0, NULL))                  \
    ROW(dt10, "dtensor.h", "dt_mesh_dim_size", "mesh dim out of range", DT_ERR_MESH_DIM, dt_mesh_dim_size(&mesh2, 1))  \
    ROW(dt11, "dtensor.h", "dt_mesh_group", "cap too small", DT_ERR_TOO_SMALL,                                         \
        dt_mesh_group(&mesh2, 0, 0, OUT(int32_t), 1))                                                                  \
    ROW(dt12, "dtensor.h", "dt_mesh_group", "mesh dim out of range", DT_ERR_MESH_DIM,                                  \
        dt_mesh_group(&mesh2, 0, 3, OUT(int32_t), 8))                                                                  \
    ROW(dt13, "dtensor.h", "dt_spec_init", "placement count != mesh ndim", DT_ERR_PLACEMENT_COUNT,                     \
        dt_spec_init(OUT(dt_spec), &mesh2, pl_shard0, 2, MB_F32, 2, shape44, NULL))                                    \
    ROW(dt14, "dtensor.h", "dt_spec_init", "unknown placement kind", DT_ERR_PLACEMENT,                                 \
        dt_spec_init(OUT(dt_spec), &mesh2, pl_bad_kind, 1, MB_F32, 2, shape44, NULL))                                  \
    ROW(dt15, "dtensor.h", "dt_spec_init", "Partial with an unknown op", DT_ERR_PLACEMENT,                             \
        dt_spec_init(OUT(dt_spec), &mesh2, pl_partial_bad, 1, MB_F32, 2, shape44, NULL))                               \
    ROW(dt16, "dtensor.h", "dt_spec_init", "shard dim out of range", DT_ERR_DIM,                                       \
        dt_spec_init(OUT(dt_spec), &mesh2, pl_shard9, 1, MB_F32, 2, shape44, NULL))                                    \
    ROW(dt17, "dtensor.h", "dt_spec_init", "unknown dtype", DT_ERR_DTYPE,                                              \
        dt_spec_init(OUT(dt_spec), &mesh2, pl_shard0, 1, (mb_dtype)99, 2, shape44, NULL))                              \
    ROW(dt18, "dtensor.h", "dt_spec_init", "negative size", DT_ERR_SHAPE,                                              \
        dt_spec_init(OUT(dt_spec), &mesh2, pl_shard0, 1, MB_F32, 2, shape_neg, NULL))                                  \
    ROW(dt19, "dtensor.h", "dt_spec_init", "NULL mesh", DT_ERR_NULL,                                                   \
        dt_spec_init(OUT(dt_spec), NULL, pl_shard0, 1, MB_F32, 2, shape44, NULL))                                      \
    ROW(dt20, "dtensor.h", "dt_spec_check", "NULL", DT_ERR_NULL, dt_spec_check(NULL))                                  \
    ROW(dt21, "dtensor.h", "dt_spec_is_replicated", "NULL", DT_ERR_NULL, dt_spec_is_replicated(NULL))                  \
    ROW(dt22, "dtensor.h", "dt_spec_num_shards", "NULL", DT_ERR_NULL, dt_spec_num_shards(NULL))                        \
    ROW(dt23, "dtensor.h", "dt_chunk", "k <= 0", DT_ERR_MESH, dt_chunk(5, 0, 0, OUT(int32_t)))                         \
    ROW(dt23b, "dtensor.h", "dt_chunk", "i outside 0..k-1", DT_ERR_RANK, dt_chunk(5, 2, 2, OUT(int32_t)))              \
    ROW(dt23c, "dtensor.h", "dt_chunk", "n < 0", DT_ERR_SHAPE, dt_chunk(-5, 2, 0, OUT(int32_t)))                       \
    ROW(dt24, "dtensor.h", "dt_local_shape", "rank not in the mesh", DT_ERR_NOT_MEMBER,                                \
        dt_local_shape(&sp_shard0, 9, OUT(int32_t), OUT_AT(int32_t, 64)))                                              \
    ROW(dt25, "dtensor.h", "dt_local_shape", "NULL shape", DT_ERR_NULL, dt_local_shape(&sp_shard0, 0, NULL, NULL))     \
    ROW(dt26, "dtensor.h", "dt_local_bytes", "NULL bytes", DT_ERR_NULL, dt_local_bytes(&sp_shard0, 0, NULL))           \
    ROW(dt27, "dtensor.h", "dt_local_view", "global does not match the spec", DT_ERR_MISMATCH,                         \
        dt_local_view(&sp_shard0, 0, &t84, OUT(mb_tensor)))                                                            \
    ROW(dt28, "dtensor.h", "dt_plan_redistribute", "specs on different meshes", DT_ERR_MISMATCH,                       \
        dt_plan_redistribute(&sp_shard0, &sp_other_mesh, 0, OUT(dt_plan)))                                             \
    ROW(dt29, "dtensor.h", "dt_plan_redistribute", "global shapes differ", DT_ERR_MISMATCH,                            \
        dt_plan_redistribute(&sp_shard0, &sp_other_shape, 0, OUT(dt_plan)))                                            \
    ROW(dt30, "dtensor.h", "dt_plan_redistribute", "to Partial (public redistribute)", DT_ERR_PARTIAL,                 \
        dt_plan_redistribute(&sp_repl, &sp_partial, 0, OUT(dt_plan)))                                                  \
    ROW(dt31, "dtensor.h", "dt_plan_redistribute", "NULL plan", DT_ERR_NULL,                                           \
        dt_plan_redistribute(&sp_repl, &sp_shard0, 0, NULL))                                                           \
    ROW(dt31b, "dtensor.h", "dt_plan_redistribute",                                                                    \
        "Replicate -> Partial(sum) while another mesh dim holds a Partial(prod) (2x2 mesh)", DT_ERR_UNSUPPORTED,       \
        dt_plan_redistribute(&sp_rprod, &sp_psumr, DT_PLAN_ALLOW_PARTIAL, OUT(dt_plan)))                               \
    ROW(dt32, "dtensor.h", "dt_plan_scratch_bytes", "NULL (returns 0)", 0, (int)dt_plan_scratch_bytes(NULL))           \
    ROW(dt33, "dtensor.h", "dt_plan_cost_ns", "NULL ns", DT_ERR_NULL, dt_plan_cost_ns(&dplan, NULL, NULL))             \
    ROW(dt34, "dtensor.h", "dt_plan_cache_init", "capacity <= 0", DT_ERR_TOO_SMALL,                                    \
        dt_plan_cache_init(OUT(dt_plan_cache), centries, 0))                                                           \
    ROW(dt35, "dtensor.h", "dt_plan_cache_init", "NULL storage", DT_ERR_NULL,                                          \
        dt_plan_cache_init(OUT(dt_plan_cache), NULL, 2))                                                               \
    ROW(dt36, "dtensor.h", "dt_plan_cache_clear", "NULL", DT_ERR_NULL, dt_plan_cache_clear(NULL))                      \
    ROW(dt37, "dtensor.h", "dt_plan_cached", "failing plan (inconsistent specs)", DT_ERR_MISMATCH,                     \
        dt_plan_cached(&cache, &sp_shard0, &sp_other_shape, 0, OUT(const dt_plan *)))                                  \
    ROW(dt38, "dtensor.h", "dt_comm_init", "NULL parent", DT_ERR_NULL, dt_comm_init(OUT(dt_comm), &mesh2, NULL))       \
    ROW(dt39, "dtensor.h", "dt_comm_init", "mesh rank != parent's rank", DT_ERR_MISMATCH,                              \
        dt_comm_init(OUT(dt_comm), &mesh2, g1))                                                                        \
    ROW(dt40, "dtensor.h", "dt_comm_init", "mesh rank not in parent", DT_ERR_RANK,                                     \
        dt_comm_init(OUT(dt_comm), &mesh3, g0))                                                                        \
    ROW(dt41, "dtensor.h", "dt_comm_group", "mesh dim out of range (returns NULL)", 0,                                 \
        dt_comm_group(&dcomm, 2) != NULL)                                                                              \
    ROW(dt41b, "dtensor.h", "dt_comm_group", "comm: a copy of a dt_comm (returns NULL)", 0,                            \
        dt_comm_group(&dcomm_copy, 0) != NULL)                                                                         \
    ROW(dt41c, "dtensor.h", "dt_comm_init", "parent: a copy of a group", DT_ERR_COPIED,                                \
        dt_comm_init(OUT(dt_comm), &mesh2, &g0_copy))                                                                  \
    ROW(dt41d, "dtensor.h", "dt_redistribute", "comm: a copy of a dt_comm (nothing sent)", DT_ERR_COPIED,              \
        dt_redistribute(&dcomm_copy, NULL, &sp_shard0, in_local(2, 4), &sp_repl, 0, out_tensor(MB_F32, 4, 4),          \
                        OUT_AT(void, 8192), 4096))                                                                     \
    ROW(dt42, "dtensor.h", "dt_from_local", "local shape wrong for the spec", DT_ERR_MISMATCH,                         \
        dt_from_local(OUT(dt_tensor), &mesh2, pl_shard0, 1, &t84, shape44))                                            \
    ROW(dt43, "dtensor.h", "dt_from_local", "placement count != mesh ndim", DT_ERR_PLACEMENT_COUNT,                    \
        dt_from_local(OUT(dt_tensor), &mesh2, pl_shard0, 2, &t84, NULL))                                               \
    ROW(dt44, "dtensor.h", "dt_to_local", "NULL local", DT_ERR_NULL, dt_to_local(&dtt, NULL))                          \
    ROW(dt45, "dtensor.h", "dt_redistribute", "in does not match src's local shape", DT_ERR_MISMATCH,                  \
        dt_redistribute(&dcomm, NULL, &sp_shard0, &t84, &sp_repl, 0, out_tensor(MB_F32, 4, 4), OUT_AT(void, 8192),     \
                        4096))                                                                                         \
    ROW(dt46, "dtensor.h", "dt_redistribute", "scratch too small", DT_ERR_TOO_SMALL,                                   \
        dt_redistribute(&dcomm, NULL, &sp_shard1, in_local(4, 2), &sp_repl, 0, out_tensor(MB_F32, 4, 4),               \
                        OUT_AT(void, 8192), 8))                                                                        \
    ROW(dt46b, "dtensor.h", "dt_redistribute_scratch_bytes", "NULL plan (returns 0)", 0,                               \
        (int)dt_redistribute_scratch_bytes(NULL, &t84, &t84))                                                          \
    ROW(dt47, "dtensor.h", "dt_redistribute", "to Partial", DT_ERR_PARTIAL,                                            \
        dt_redistribute(&dcomm, NULL, &sp_repl, in_local(4, 4), &sp_partial, 0, out_tensor(MB_F32, 4, 4),              \
                        OUT_AT(void, 8192), 4096))                                                                     \
    ROW(dt48, "dtensor.h", "dt_full_tensor", "global has the wrong shape", DT_ERR_MISMATCH,                            \
        dt_full_tensor(&dcomm, NULL, &sp_shard0, in_local(2, 4), out_tensor(MB_F32, 8, 4), OUT_AT(void, 8192), 4096))  \
    ROW(dt49, "dtensor.h", "dt_full_tensor_scratch_bytes", "NULL bytes", DT_ERR_NULL,                                  \
        dt_full_tensor_scratch_bytes(&sp_shard0, NULL))                                                                \
    ROW(dt49b, "dtensor.h", "dt_full_tensor_scratch_query", "NULL bytes", DT_ERR_NULL,                                 \
        dt_full_tensor_scratch_query(&dcomm, &sp_shard0, in_local(2, 4), out_tensor(MB_F32, 4, 4), NULL))              \
    ROW(dt49c, "dtensor.h", "dt_full_tensor_scratch_query", "global has the wrong shape", DT_ERR_MISMATCH,             \
        dt_full_tensor_scratch_query(&dcomm, &sp_shard0, in_local(2, 4), out_tensor(MB_F32, 8, 4), OUT(size_t)))       \
    ROW(dt50, "dtensor.h", "dt_distribute", "Partial placement", DT_ERR_PARTIAL,                                       \
        dt_distribute(&dcomm, &sp_partial, in_local(4, 4), 0, out_tensor(MB_F32, 4, 4), OUT_AT(void, 8192), 4096))     \
    ROW(dt51, "dtensor.h", "dt_distribute", "src_rank not in the mesh", DT_ERR_NOT_MEMBER,                             \
        dt_distribute(&dcomm, &sp_shard0, in_local(4, 4), 5, out_tensor(MB_F32, 2, 4), OUT_AT(void, 8192), 4096))      \
    ROW(dt52, "dtensor.h", "dt_distribute_scratch_bytes", "NULL bytes", DT_ERR_NULL,                                   \
        dt_distribute_scratch_bytes(&sp_shard0, 0, NULL))                                                              \
    DT_HOSTILE_ROWS(ROW)                                                                                               \
    DM_HOSTILE_ROWS(ROW)                                                                                               \
    ROW(dt52b, "dtensor.h", "dt_distribute_scratch_query", "NULL bytes", DT_ERR_NULL,                                  \
        dt_distribute_scratch_query(&dcomm, &sp_shard0, in_local(4, 4), 0, out_tensor(MB_F32, 2, 4), NULL))            \
    ROW(dt52c, "dtensor.h", "dt_distribute_scratch_query", "Partial placement", DT_ERR_PARTIAL,                        \
        dt_distribute_scratch_query(&dcomm, &sp_partial, in_local(4, 4), 0, out_tensor(MB_F32, 4, 4), OUT(size_t)))    \
    ROW(dt52d, "dtensor.h", "dt_distribute_scratch_query", "src_rank not in the mesh", DT_ERR_NOT_MEMBER,              \
        dt_distribute_scratch_query(&dcomm, &sp_shard0, in_local(4, 4), 5, out_tensor(MB_F32, 2, 4), OUT(size_t)))     \
    ROW(dq1, "dtensor_quant.h", "dt_quantize_multiplier", "NaN", DT_ERR_VALUE,                                         \
        dt_quantize_multiplier(0.0 / 0.0, OUT(dt_qmul)))                                                               \
    ROW(dq2, "dtensor_quant.h", "dt_quantize_multiplier", "negative", DT_ERR_VALUE,                                    \
        dt_quantize_multiplier(-0.5, OUT(dt_qmul)))                                                                    \
    ROW(dq3, "dtensor_quant.h", "dt_quantize_multiplier", ">= 2^30", DT_ERR_VALUE,                                     \
        dt_quantize_multiplier(1073741824.0, OUT(dt_qmul)))                                                            \
    ROW(dq4, "dtensor_quant.h", "dt_quantize_multiplier", "NULL q", DT_ERR_NULL, dt_quantize_multiplier(0.5, NULL))    \
    ROW(dq5, "dtensor_quant.h", "dt_q8_scale", "negative amax", DT_ERR_VALUE, dt_q8_scale(-1.0f, OUT(float)))          \
    ROW(dq6, "dtensor_quant.h", "dt_q8_scale", "infinite amax", DT_ERR_VALUE, dt_q8_scale(1.0f / 0.0f, OUT(float)))    \
    ROW(dq7, "dtensor_quant.h", "dt_quantize_tensor", "a NaN element", DT_ERR_VALUE,                                   \
        dt_quantize_tensor(&t_nan, 1, OUT(float), out_tensor(MB_I8, 4, 4)))                                            \
    ROW(dq8, "dtensor_quant.h", "dt_quantize_tensor", "channel_dim >= ndim", DT_ERR_DIM,                               \
        dt_quantize_tensor(in_local(4, 4), 2, OUT(float), out_tensor(MB_I8, 4, 4)))                                    \
    ROW(dq9, "dtensor_quant.h", "dt_quantize_tensor", "int8 output of another shape", DT_ERR_MISMATCH,                 \
        dt_quantize_tensor(in_local(4, 4), -1, OUT(float), out_tensor(MB_I8, 2, 4)))                                   \
    ROW(dq10, "dtensor_quant.h", "dt_quantize_tensor", "output not int8", DT_ERR_DTYPE,                                \
        dt_quantize_tensor(in_local(4, 4), -1, OUT(float), out_tensor(MB_I32, 4, 4)))                                  \
    ROW(dq11, "dtensor_quant.h", "dt_qmm_multipliers", "output scale 0 (infinite multiplier)", DT_ERR_VALUE,           \
        dt_qmm_multipliers(0.5f, scales4, 4, 0.0f, OUT(dt_qmul)))                                                      \
    ROW(dq12, "dtensor_quant.h", "dt_qmm_multipliers", "no scales", DT_ERR_SHAPE,                                      \
        dt_qmm_multipliers(0.5f, scales4, 0, 1.0f, OUT(dt_qmul)))                                                      \
    ROW(dq12l, "dtensor_quant.h", "dt_qlinear_multiplier", "output scale 0 (infinite multiplier)", DT_ERR_VALUE,       \
        dt_qlinear_multiplier(0.5f, 0.5f, 0.0f, OUT(dt_qmul)))                                                         \
    ROW(dq12m, "dtensor_quant.h", "dt_qlinear_multiplier", "the scales' float product infinite", DT_ERR_VALUE,         \
        dt_qlinear_multiplier(1e20f, 1e20f, 1e38f, OUT(dt_qmul)))                                                      \
    ROW(dq12n, "dtensor_quant.h", "dt_qlinear_multiplier", "NULL q", DT_ERR_NULL,                                      \
        dt_qlinear_multiplier(0.5f, 0.5f, 1.0f, NULL))                                                                 \
    ROW(dq13, "dtensor_quant.h", "dt_qmm_acc", "inner sizes differ", DT_ERR_SHAPE,                                     \
        dt_qmm_acc(i8_local(4, 4), i8_local(2, 4), out_tensor(MB_I32, 4, 4)))                                          \
    ROW(dq14, "dtensor_quant.h", "dt_qmm_acc", "accumulator not int32", DT_ERR_DTYPE,                                  \
        dt_qmm_acc(i8_local(4, 4), i8_local(4, 4), out_tensor(MB_F32, 4, 4)))                                          \
    ROW(dq15, "dtensor_quant.h", "dt_qmm_acc", "K > DT_QMM_MAX_K", DT_ERR_SHAPE,                                       \
        dt_qmm_acc(&t_i8_wide, &t_i8_tall, out_tensor(MB_I32, 1, 1)))                                                  \
    ROW(dq16, "dtensor_quant.h", "dt_requant_tensor", "fewer multipliers than channels", DT_ERR_SHAPE,                 \
        dt_requant_tensor(&t_acc44, qm4, 4, 1, 1, out_tensor(MB_I8, 4, 4)))                                            \
    ROW(dq17, "dtensor_quant.h", "dt_requant_tensor", "qdim out of range", DT_ERR_DIM,                                 \
        dt_requant_tensor(&t_acc44, qm4, 4, 0, 2, out_tensor(MB_I8, 4, 4)))                                            \
    ROW(dq18, "dtensor_quant.h", "dt_qmm_ref", "accumulator scratch too small", DT_ERR_TOO_SMALL,                      \
        dt_qmm_ref(i8_local(4, 4), i8_local(4, 4), qm4, 4, out_tensor(MB_I8, 4, 4), OUT_AT(void, 8192), 63))           \
    ROW(dq19, "dtensor_quant.h", "dt_qmm_propagate", "S(0) x S(0): no strategy", DT_ERR_NO_STRATEGY,                   \
        dt_qmm_propagate(&sp_i8_s0, &sp_i8_s0, OUT(dt_spec), OUT_AT(uint32_t, 4096)))                                  \
    ROW(dq20, "dtensor_quant.h", "dt_qmm_propagate", "f32 operand", DT_ERR_DTYPE,                                      \
        dt_qmm_propagate(&sp_repl, &sp_i8_r, OUT(dt_spec), OUT_AT(uint32_t, 4096)))                                    \
    ROW(dq21, "dtensor_quant.h", "dt_qmm_scratch_bytes", "NULL bytes", DT_ERR_NULL,                                    \
        dt_qmm_scratch_bytes(&sp_i8_r, &sp_i8_r, 0, NULL))                                                             \
    ROW(dq22, "dtensor_quant.h", "dt_qmm", "scratch too small (S(1) x S(0): nothing reduced)", DT_ERR_TOO_SMALL,       \
        dt_qmm(&dcomm, &dq_a_s1, &dq_b_s0, qm4, 4, OUT(dt_tensor), OUT_AT(void, 8192), 16, OUT_AT(void, 12288), 63))   \
    ROW(dq23, "dtensor_quant.h", "dt_qmm", "local tensor does not fit its spec", DT_ERR_MISMATCH,                      \
        dt_qmm(&dcomm, &dq_a_s1, &dq_b_s0wrong, qm4, 1, OUT(dt_tensor), OUT_AT(void, 8192), 16, OUT_AT(void, 12288),   \
               64))                                                                                                    \
    ROW(dq24, "dtensor_quant.h", "dt_qmm", "multiplier count neither 1 nor N", DT_ERR_SHAPE,                           \
        dt_qmm(&dcomm, &dq_a_s1, &dq_b_s0, qm4, 3, OUT(dt_tensor), OUT_AT(void, 8192), 16, OUT_AT(void, 12288), 64))   \
    ROW(dq25, "dtensor_quant.h", "dt_quantize_i8", "NaN (returns 0)", 0, dt_quantize_i8(0.0f / 0.0f, 0.1f))            \
    ROW(dq26, "dtensor_quant.h", "dt_quantize_tensor", "NULL scales", DT_ERR_NULL,                                     \
        dt_quantize_tensor(in_local(4, 4), -1, NULL, out_tensor(MB_I8, 4, 4)))                                         \
    ROW(dq27, "dtensor_quant.h", "dt_requant_tensor", "accumulator not int32", DT_ERR_DTYPE,                           \
        dt_requant_tensor(in_local(4, 4), qm4, 4, 0, 1, out_tensor(MB_I8, 4, 4)))                                      \
    ROW(dq28, "dtensor_quant.h", "dt_requant_tensor", "output of another shape", DT_ERR_MISMATCH,                      \
        dt_requant_tensor(&t_acc44, qm4, 4, 0, 1, out_tensor(MB_I8, 2, 4)))                                            \
    ROW(dq29, "dtensor_quant.h", "dt_qmm_ref", "output not int8", DT_ERR_DTYPE,                                        \
        dt_qmm_ref(i8_local(4, 4), i8_local(4, 4), qm4, 4, out_tensor(MB_F32, 4, 4), OUT_AT(void, 8192), 64))          \
    ROW(dq30, "dtensor_quant.h", "dt_qmm_scratch_bytes", "rank not in the mesh", DT_ERR_NOT_MEMBER,                    \
        dt_qmm_scratch_bytes(&sp_i8_r, &sp_i8_r, 7, OUT(size_t)))                                                      \
    ROW(dq31, "dtensor_quant.h", "dt_qmm", "NULL multipliers", DT_ERR_NULL,                                            \
        dt_qmm(&dcomm, &dq_a_s1, &dq_b_s0, NULL, 1, OUT(dt_tensor), OUT_AT(void, 8192), 16, OUT_AT(void, 12288), 64))  \
    ROW(dq32, "dtensor_quant.h", "dt_qmm_acc", "f32 operand", DT_ERR_DTYPE,                                            \
        dt_qmm_acc(in_local(4, 4), i8_local(4, 4), out_tensor(MB_I32, 4, 4)))                                          \
    ROW(dq33, "dtensor_quant.h", "dt_add_q8", "NULL multipliers", DT_ERR_NULL,                                         \
        dt_add_q8(i8_local(4, 4), i8_local(4, 4), NULL, out_tensor(MB_I8, 4, 4)))                                      \
    ROW(dq34, "dtensor_quant.h", "dt_add_q8", "operands of different shapes", DT_ERR_MISMATCH,                         \
        dt_add_q8(i8_local(4, 4), i8_local(2, 4), qm4, out_tensor(MB_I8, 4, 4)))                                       \
    ROW(dq35, "dtensor_quant.h", "dt_mul_q8", "f32 operand", DT_ERR_DTYPE,                                             \
        dt_mul_q8(in_local(4, 4), i8_local(4, 4), qm4[0], out_tensor(MB_I8, 4, 4)))                                    \
    ROW(dq36, "dtensor_quant.h", "dt_lut_q8", "NULL table", DT_ERR_NULL,                                               \
        dt_lut_q8(i8_local(4, 4), NULL, out_tensor(MB_I8, 4, 4)))                                                      \
    ROW(dq37, "dtensor_quant.h", "dt_softmax_q8", "NULL table", DT_ERR_NULL,                                           \
        dt_softmax_q8(i8_local(4, 4), NULL, out_tensor(MB_I8, 4, 4)))                                                  \
    ROW(dq38, "dtensor_quant.h", "dt_layer_norm_q8", "epsq above 2^46", DT_ERR_VALUE,                                  \
        dt_layer_norm_q8(i8_local(4, 4), q8_tab, q8_tab, (int64_t)1 << 47, out_tensor(MB_I8, 4, 4)))                   \
    ROW(dq39, "dtensor_quant.h", "dt_layer_norm_q8", "NULL bias table", DT_ERR_NULL,                                   \
        dt_layer_norm_q8(i8_local(4, 4), q8_tab, NULL, 0, out_tensor(MB_I8, 4, 4)))                                    \
    ROW(dq40, "dtensor_quant.h", "dt_add_q8_multipliers", "a scale 0", DT_ERR_VALUE,                                   \
        dt_add_q8_multipliers(0.1f, 0.0f, 0.1f, OUT(dt_qmul)))                                                         \
    ROW(dq41, "dtensor_quant.h", "dt_add_q8_multipliers", "output scale too small (multiplier >= 2^30)", DT_ERR_VALUE, \
        dt_add_q8_multipliers(0.1f, 0.1f, 1e-38f, OUT(dt_qmul)))                                                       \
    ROW(dr1, "dtensor_random.h", "dt_rng_offsets", "rank not in the mesh", DT_ERR_NOT_MEMBER,                          \
        dt_rng_offsets(&sp_shard0, 5, OUT(uint64_t), OUT_AT(uint64_t, 64)))                                            \
    ROW(dr2, "dtensor_random.h", "dt_rand", "unknown flag", DT_ERR_VALUE,                                              \
        dt_rand(OUT(dt_rng), &sp_shard0, out_tensor(MB_F32, 2, 4), 2))                                                 \
    ROW(dr3, "dtensor_random.h", "dt_rand", "local tensor of another shape", DT_ERR_MISMATCH,                          \
        dt_rand(OUT(dt_rng), &sp_shard0, out_tensor(MB_F32, 4, 4), 0))                                                 \
    ROW(dr4, "dtensor_random.h", "dt_rand", "int8 spec", DT_ERR_DTYPE,                                                 \
        dt_rand(OUT(dt_rng), &sp_i8_s0, out_tensor(MB_I8, 2, 4), 0))                                                   \
    ROW(dr5, "dtensor_random.h", "dt_dropout", "p > 1", DT_ERR_VALUE,                                                  \
        dt_dropout(OUT(dt_rng), &sp_shard0, in_local(2, 4), out_tensor(MB_F32, 2, 4), 1.5f, 0))                        \
    ROW(dr6, "dtensor_random.h", "dt_dropout", "p NaN", DT_ERR_VALUE,                                                  \
        dt_dropout(OUT(dt_rng), &sp_shard0, in_local(2, 4), out_tensor(MB_F32, 2, 4), 0.0f / 0.0f, 0))                 \
    ROW(do1, "dtensor_ops.h", "dt_propagate", "view to a shape of another element count", DT_ERR_SHAPE,                \
        dt_propagate(NULL, DT_ATEN_VIEW, &at_view15, ops_repl, 1, OUT(dt_op_strategy)))                                \
    ROW(do2, "dtensor_ops.h", "dt_propagate", "view flattening a sharded non-leftmost dim", DT_ERR_NO_STRATEGY,        \
        dt_propagate(NULL, DT_ATEN_VIEW, &at_view16, ops_s1, 1, OUT(dt_op_strategy)))                                  \
    ROW(do3, "dtensor_ops.h", "dt_propagate", "transpose dim out of range", DT_ERR_DIM,                                \
        dt_propagate(NULL, DT_ATEN_TRANSPOSE, &at_t2, ops_repl, 1, OUT(dt_op_strategy)))                               \
    ROW(do4, "dtensor_ops.h", "dt_propagate", "embedding with f32 indices", DT_ERR_DTYPE,                              \
        dt_propagate(NULL, DT_ATEN_EMBEDDING, NULL, ops_repl, 2, OUT(dt_op_strategy)))                                 \
    ROW(do5, "dtensor_ops.h", "dt_propagate", "nll_loss reduction 3", DT_ERR_SHAPE,                                    \
        dt_propagate(NULL, DT_ATEN_NLL_LOSS, &at_red3, ops_loss, 2, OUT(dt_op_strategy)))                              \
    ROW(do6, "dtensor_ops.h", "dt_propagate", "found_inf op (a custom handler only)", DT_ERR_UNSUPPORTED,              \
        dt_propagate(NULL, DT_ATEN_AMP_UNSCALE, NULL, ops_repl, 2, OUT(dt_op_strategy)))                               \
    ROW(do7, "dtensor_ops.h", "dt_kernel_ref", "embedding index >= rows", DT_ERR_RANK,                                 \
        dt_kernel_ref(DT_ATEN_EMBEDDING, NULL, out_tensor(MB_F32, 2, 4), emb_in, 2))                                   \
    ROW(do8, "dtensor_ops.h", "dt_kernel_ref", "nll_loss target >= classes", DT_ERR_RANK,                              \
        dt_kernel_ref(DT_ATEN_NLL_LOSS, &at_none, out_vec(4), loss_in, 2))                                             \
    ROW(do9, "dtensor_ops.h", "dt_op", "NULL out", DT_ERR_NULL,                                                        \
        dt_op(&ddisp, DT_ATEN_ADD, NULL, ops_mixed, 2, NULL, OUT_AT(void, 8192), 4096))                                \
    ROW(do10, "dtensor_ops.h", "dt_op", "unknown op", DT_ERR_PLACEMENT_COUNT,                                          \
        dt_op(&ddisp, DT_ATEN_COUNT, NULL, ops_mixed, 2, OUT(dt_tensor), OUT_AT(void, 8192), 4096))                    \
    ROW(do11, "dtensor_ops.h", "dt_op", "no distributed argument (every one plain)", DT_ERR_MISMATCH,                  \
        dt_op(&ddisp, DT_ATEN_ADD, NULL, ops_plain, 2, OUT(dt_tensor), OUT_AT(void, 8192), 4096))                      \
    ROW(do12, "dtensor_ops.h", "dt_op", "a plain tensor of 16 elements without implicit replication", DT_ERR_MISMATCH, \
        dt_op(&ddisp, DT_ATEN_ADD, NULL, ops_mixed, 2, OUT(dt_tensor), OUT_AT(void, 8192), 4096))                      \
    ROW(do13, "dtensor_ops.h", "dt_op", "in place changing self's placement (R += S(0))", DT_ERR_NO_STRATEGY,          \
        dt_op(&ddisp, DT_ATEN_ADD, NULL, ops_inplace, 2, OUT(dt_tensor), ops_inplace[0].local.data, 0))                \
    ROW(do14, "dtensor_ops.h", "dt_op", "found_inf handler without attrs (inv_scale)", DT_ERR_NULL,                    \
        dt_op(&ddisp, DT_ATEN_AMP_UNSCALE, NULL, ops_inplace, 2, OUT(dt_tensor), NULL, 0))                             \
    ROW(do14b, "dtensor_ops.h", "dt_op_query", "NULL scratch_bytes", DT_ERR_NULL,                                      \
        dt_op_query(&ddisp, DT_ATEN_ADD, NULL, ops_mixed, 2, DT_OP_RESULT, OUT(size_t), NULL))                         \
    ROW(do14c, "dtensor_ops.h", "dt_op_query", "unknown op", DT_ERR_PLACEMENT_COUNT,                                   \
        dt_op_query(&ddisp, DT_ATEN_COUNT, NULL, ops_mixed, 2, DT_OP_RESULT, OUT(size_t), OUT_AT(size_t, 8192)))       \
    ROW(do14d, "dtensor_ops.h", "dt_op_query", "unknown mode", DT_ERR_VALUE,                                           \
        dt_op_query(&ddisp, DT_ATEN_ADD, NULL, ops_mixed, 2, 3, OUT(size_t), OUT_AT(size_t, 8192)))                    \
    ROW(do14e, "dtensor_ops.h", "dt_op_query", "a plain tensor of 16 elements without implicit replication",           \
        DT_ERR_MISMATCH,                                                                                               \
        dt_op_query(&ddisp, DT_ATEN_ADD, NULL, ops_mixed, 2, DT_OP_RESULT, OUT(size_t), OUT_AT(size_t, 8192)))         \
    ROW(do14f, "dtensor_ops.h", "dt_op_query", "in place changing self's placement (R += S(0))", DT_ERR_NO_STRATEGY,   \
        dt_op_query(&ddisp, DT_ATEN_ADD, NULL, ops_inplace, 2, DT_OP_IN_PLACE, OUT(size_t), OUT_AT(size_t, 8192)))     \
    ROW(do14g, "dtensor_ops.h", "dt_op_query", "found_inf op (its reduction is sized by the redistribute queries)",    \
        DT_ERR_UNSUPPORTED,                                                                                            \
        dt_op_query(&ddisp, DT_ATEN_AMP_UNSCALE, NULL, ops_inplace, 2, DT_OP_IN_PLACE, OUT(size_t),                    \
                    OUT_AT(size_t, 8192)))                                                                             \
    ROW(do15, "dtensor_ops.h", "dt_op_cache_init", "NULL storage", DT_ERR_NULL,                                        \
        dt_op_cache_init(OUT(dt_op_cache), NULL, 2))                                                                   \
    ROW(do16, "dtensor_ops.h", "dt_op_cache_init", "capacity < 1", DT_ERR_TOO_SMALL,                                   \
        dt_op_cache_init(OUT(dt_op_cache), ocentries, 0))                                                              \
    ROW(do17, "dtensor_ops.h", "dt_op_name", "unknown op (returns NULL)", 0, dt_op_name(DT_ATEN_COUNT) != NULL)        \
    ROW(tp1, "dtensor_ops.h", "dt_tp_colwise", "NULL style", DT_ERR_NULL,                                              \
        dt_tp_colwise(NULL, DT_TP_LINEAR, pl_repl[0]))                                                                 \
    ROW(tp2, "dtensor_ops.h", "dt_tp_colwise", "unknown module", DT_ERR_PLACEMENT,                                     \
        dt_tp_colwise(OUT(dt_tp_style), 2, pl_repl[0]))                                                                \
    ROW(tp3, "dtensor_ops.h", "dt_tp_colwise", "Partial output layout", DT_ERR_PLACEMENT,                              \
        dt_tp_colwise(OUT(dt_tp_style), DT_TP_LINEAR, pl_partial[0]))                                                  \
    ROW(tp4, "dtensor_ops.h", "dt_tp_rowwise", "NULL style", DT_ERR_NULL,                                              \
        dt_tp_rowwise(NULL, DT_TP_EMBEDDING, pl_repl[0]))                                                              \
    ROW(tp5, "dtensor_ops.h", "dt_tp_rowwise", "unknown module", DT_ERR_PLACEMENT,                                     \
        dt_tp_rowwise(OUT(dt_tp_style), -1, pl_repl[0]))                                                               \
    ROW(tp6, "dtensor_ops.h", "dt_tp_rowwise", "output layout of an unknown kind", DT_ERR_PLACEMENT,                   \
        dt_tp_rowwise(OUT(dt_tp_style), DT_TP_LINEAR, pl_bad_kind[0]))                                                 \
    ROW(tp7, "dtensor_ops.h", "dt_tp_sequence", "NULL style", DT_ERR_NULL, dt_tp_sequence(NULL, 1))                    \
    ROW(tp8, "dtensor_ops.h", "dt_tp_redistribute", "mesh dim out of range", DT_ERR_MESH_DIM,                          \
        dt_tp_redistribute(&ddisp, &dtt, 1, pl_repl[0], OUT(dt_tensor), OUT_AT(void, 8192), 4096))                     \
    ROW(tp9, "dtensor_ops.h", "dt_tp_redistribute", "Partial target", DT_ERR_PARTIAL,                                  \
        dt_tp_redistribute(&ddisp, &dtt, 0, pl_partial[0], OUT(dt_tensor), OUT_AT(void, 8192), 4096))                  \
    ROW(tp10, "dtensor_ops.h", "dt_tp_redistribute", "Shard of a dim out of range", DT_ERR_DIM,                        \
        dt_tp_redistribute(&ddisp, &dtt, 0, pl_shard9[0], OUT(dt_tensor), OUT_AT(void, 8192), 4096))                   \
    ROW(tp11, "dtensor_ops.h", "dt_tp_redistribute", "data too small for the result (nothing sent)", DT_ERR_TOO_SMALL, \
        dt_tp_redistribute(&ddisp, &dtt, 0, pl_repl[0], OUT(dt_tensor), OUT_AT(void, 8192), 8))                        \
    ROW(tp12, "dtensor_ops.h", "dt_tp_redistribute", "NULL out", DT_ERR_NULL,                                          \
        dt_tp_redistribute(&ddisp, &dtt, 0, pl_repl[0], NULL, OUT_AT(void, 8192), 4096))                               \
                                                                                                                       \
    OPS_HOSTILE_ROWS(ROW)                                                                                              \
    ROW(op1, "dtensor_ops.h", "dt_propagate", "reduction dim out of range", DT_ERR_DIM,                                \
        dt_propagate(NULL, DT_ATEN_SUM, &at_dim2, op_x, 1, OUT(dt_op_strategy)))                                       \
    ROW(op2, "dtensor_ops.h", "dt_propagate", "softmax dim out of range (negative)", DT_ERR_DIM,                       \
        dt_propagate(NULL, DT_ATEN_SOFTMAX, &at_dimm3, op_x, 1, OUT(dt_op_strategy)))                                  \
    ROW(op3, "dtensor_ops.h", "dt_propagate", "normalized_shape not the input's last dims", DT_ERR_SHAPE,              \
        dt_propagate(NULL, DT_ATEN_RMS_NORM, &at_norm3, op_xw, 2, OUT(dt_op_strategy)))                                \
    ROW(op4, "dtensor_ops.h", "dt_propagate", "gelu approximate neither 0 (none) nor 1 (tanh)", DT_ERR_SHAPE,          \
        dt_propagate(NULL, DT_ATEN_GELU, &at_gelu2, op_x, 1, OUT(dt_op_strategy)))                                     \
    ROW(op5, "dtensor_ops.h", "dt_kernel_ref", "softmax dim out of range", DT_ERR_DIM,                                 \
        dt_kernel_ref(DT_ATEN_SOFTMAX, &at_dim2, out_tensor(MB_F32, 4, 4), op_in, 1))                                  \
    ROW(op6, "dtensor_ops.h", "dt_kernel_ref", "norm weight of another size", DT_ERR_SHAPE,                            \
        dt_kernel_ref(DT_ATEN_RMS_NORM, &at_norm3, out_tensor(MB_F32, 4, 4), op_in, 2))                                \
    ROW(op7, "dtensor_ops.h", "dt_kernel_ref", "NULL operand", DT_ERR_NULL,                                            \
        dt_kernel_ref(DT_ATEN_MM, NULL, out_tensor(MB_F32, 4, 4), kin_null, 2))                                        \
    ROW(op8, "dtensor_ops.h", "dt_kernel_ref", "mm output of ndim 0", DT_ERR_MISMATCH,                                 \
        dt_kernel_ref(DT_ATEN_MM, NULL, out_scalar(), kin_22, 2))                                                      \
    ROW(op9, "dtensor_ops.h", "dt_kernel_ref", "out [4,4] = a [2,2] @ b [2,2]", DT_ERR_MISMATCH,                       \
        dt_kernel_ref(DT_ATEN_MM, NULL, out_tensor(MB_F32, 4, 4), kin_22, 2))                                          \
    ROW(op10, "dtensor_ops.h", "dt_kernel_ref", "a [2,2] @ b [4,4] (inner sizes differ)", DT_ERR_SHAPE,                \
        dt_kernel_ref(DT_ATEN_MM, NULL, out_tensor(MB_F32, 2, 4), kin_24, 2))                                          \
    ROW(op11, "dtensor_ops.h", "dt_kernel_ref", "int32 output of a float op", DT_ERR_DTYPE,                            \
        dt_kernel_ref(DT_ATEN_RELU, NULL, out_tensor(MB_I32, 4, 4), op_in, 1))                                         \
    ROW(op12, "dtensor_ops.h", "dt_kernel_ref", "output not contiguous", DT_ERR_SHAPE,                                 \
        dt_kernel_ref(DT_ATEN_RELU, NULL, out_strided44(), op_in, 1))                                                  \
    ROW(op13, "dtensor_ops.h", "dt_kernel_ref", "invalid operand view (negative stride)", DT_ERR_SHAPE,                \
        dt_kernel_ref(DT_ATEN_RELU, NULL, out_tensor(MB_F32, 8, 4), kin_bad, 1))                                       \
    ROW(op14, "dtensor_ops.h", "dt_kernel_ref", "unknown op", DT_ERR_PLACEMENT_COUNT,                                  \
        dt_kernel_ref(DT_ATEN_COUNT, NULL, out_tensor(MB_F32, 4, 4), op_in, 1))                                        \
    ROW(op15, "dtensor_ops.h", "dt_kernel_ref", "embedding attrs: MaskPartial mode 2", DT_ERR_SHAPE,                   \
        dt_kernel_ref(DT_ATEN_EMBEDDING, &at_mode2, out_tensor(MB_F32, 2, 4), emb_in, 2))                              \
    ROW(op16, "dtensor_ops.h", "dt_kernel_ref", "operand of more than INT32_MAX elements (stride-0 view)",             \
        DT_ERR_SHAPE, dt_kernel_ref(DT_ATEN_RELU, NULL, out_tensor(MB_F32, 4, 4), kin_huge, 1))                        \
                                                                                                                       \
    ROW(cv1, "dtensor_conv.h", "dt_conv2d_ref", "NULL params", DT_ERR_NULL,                                            \
        dt_conv2d_ref(NULL, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                                      \
    CV_HOSTILE_ROWS(ROW)                                                                                               \
    PO_HOSTILE_ROWS(ROW)                                                                                               \
    ROW(cv2, "dtensor_conv.h", "dt_conv2d_ref", "stride 0", DT_ERR_SHAPE,                                              \
        dt_conv2d_ref(&cp_stride0, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                               \
    ROW(cv3, "dtensor_conv.h", "dt_conv2d_ref", "groups do not divide the channels", DT_ERR_SHAPE,                     \
        dt_conv2d_ref(&cp_groups3, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                               \
    ROW(cv4, "dtensor_conv.h", "dt_conv2d_ref", "weight's C_in * groups != input channels", DT_ERR_SHAPE,              \
        dt_conv2d_ref(&cp, &cx, &cwt_bad, NULL, out4(MB_F32, 2, 4)))                                                   \
    ROW(cv5, "dtensor_conv.h", "dt_conv2d_ref", "output of the wrong shape", DT_ERR_MISMATCH,                          \
        dt_conv2d_ref(&cp, &cx, &cwt, NULL, out4(MB_F32, 2, 3)))                                                       \
    ROW(cv6, "dtensor_conv.h", "dt_conv2d_ref", "int8 input (f32 only)", DT_ERR_DTYPE,                                 \
        dt_conv2d_ref(&cp, &cx_i8, &cwt, NULL, out4(MB_F32, 2, 4)))                                                    \
    ROW(cv7, "dtensor_conv.h", "dt_conv2d_out_shape", "kernel taller than the padded input", DT_ERR_SHAPE,             \
        dt_conv2d_out_shape(&cp, cxs, cws_big, OUT(int32_t)))                                                          \
    ROW(cv8, "dtensor_conv.h", "dt_conv2d_backward", "grad_w of the wrong shape", DT_ERR_MISMATCH,                     \
        dt_conv2d_backward(&cp, &cx, &cwt, &cx, NULL, out4(MB_F32, 2, 4), NULL))                                       \
    ROW(cv9, "dtensor_conv.h", "dt_maxpool2d_ref", "padding > half the window", DT_ERR_SHAPE,                          \
        dt_maxpool2d_ref(&cpool_pad, &cx, out4(MB_F32, 2, 4)))                                                         \
    ROW(cv10, "dtensor_conv.h", "dt_maxpool2d_backward", "int8 input (f32 only)", DT_ERR_DTYPE,                        \
        dt_maxpool2d_backward(&cpool_pad, &cx_i8, &cx, out4(MB_F32, 2, 4)))                                            \
    ROW(cv11, "dtensor_conv.h", "dt_conv2d_rows", "part out of range", DT_ERR_RANK,                                    \
        dt_conv2d_rows(&cp, 4, 3, 2, 2, OUT(int32_t)))                                                                 \
    ROW(cv12, "dtensor_conv.h", "dt_conv2d_out_spec", "input Shard(W) (no strategy)", DT_ERR_NO_STRATEGY,              \
        dt_conv2d_out_spec(&cp, &sp_cx_w, &sp_cw, OUT(dt_spec)))                                                       \
    ROW(cv13, "dtensor_conv.h", "dt_conv2d_scratch_bytes", "input Partial (no strategy)", DT_ERR_NO_STRATEGY,          \
        dt_conv2d_scratch_bytes(&cp, &sp_cx_p, &sp_cw, OUT(size_t)))                                                   \
    ROW(cv14, "dtensor_conv.h", "dt_conv2d", "scratch too small for the halo (nothing sent)", DT_ERR_TOO_SMALL,        \
        dt_conv2d(&dcomm, &cp, &dcx_h, &dcw, NULL, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 2), OUT(void), 8))           \
    ROW(cv15, "dtensor_conv.h", "dt_conv2d", "local input not the spec's local shape", DT_ERR_MISMATCH,                \
        dt_conv2d(&dcomm, &cp, &dcx_bad, &dcw, NULL, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 4), OUT(void), 8192))      \
    ROW(cv16, "dtensor_conv.h", "dt_maxpool2d", "NULL output", DT_ERR_NULL,                                            \
        dt_maxpool2d(&dcomm, &cp, &dcx_h, OUT_AT(dt_spec, 8192), NULL, OUT(void), 8192))                               \
    ROW(cv20, "dtensor_conv.h", "dt_conv2d_backward_scratch_bytes", "input Partial (no strategy)", DT_ERR_NO_STRATEGY, \
        dt_conv2d_backward_scratch_bytes(&cp, &sp_cx_p, &sp_cw, OUT(size_t)))                                          \
    ROW(cv21, "dtensor_conv.h", "dt_conv2d_sharded_backward",                                                          \
        "grad_out not in dt_conv2d's output spec (nothing sent)", DT_ERR_MISMATCH,                                     \
        dt_conv2d_sharded_backward(&dcomm, &cp, &dcx_h, &dcw, &dgy_part, out4(MB_F32, 2, 2), NULL, NULL,               \
                                   OUT_AT(dt_spec, 8192), OUT(void), 8192))                                            \
    ROW(cv22, "dtensor_conv.h", "dt_conv2d_sharded_backward", "scratch too small for the halo (nothing sent)",         \
        DT_ERR_TOO_SMALL,                                                                                              \
        dt_conv2d_sharded_backward(&dcomm, &cp, &dcx_h, &dcw, &dgy_h, out4(MB_F32, 2, 2), NULL, NULL,                  \
                                   OUT_AT(dt_spec, 8192), OUT(void), 8))                                               \
    ROW(cv23, "dtensor_conv.h", "dt_conv2d_ref", "dilation 0", DT_ERR_SHAPE,                                           \
        dt_conv2d_ref(&cp_dil0, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                                  \
    ROW(cv24, "dtensor_conv.h", "dt_conv2d_ref", "negative padding", DT_ERR_SHAPE,                                     \
        dt_conv2d_ref(&cp_padneg, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                                \
    ROW(cv25, "dtensor_conv.h", "dt_conv2d_ref", "unknown layout", DT_ERR_SHAPE,                                       \
        dt_conv2d_ref(&cp_layout9, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                               \
    ROW(cv26, "dtensor_conv.h", "dt_conv2d_ref", "groups 0", DT_ERR_SHAPE,                                             \
        dt_conv2d_ref(&cp_groups0, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                               \
    ROW(cv27, "dtensor_conv.h", "dt_conv2d_ref", "NHWC: the last dim is not the weight's C_in * groups", DT_ERR_SHAPE, \
        dt_conv2d_ref(&cp_nhwc, &cx, &cwt, NULL, out4(MB_F32, 2, 4)))                                                  \
    ROW(cv28, "dtensor_conv.h", "dt_conv2d_ref", "bias of another size than C_out", DT_ERR_MISMATCH,                   \
        dt_conv2d_ref(&cp, &cx, &cwt, &cbias3, out4(MB_F32, 2, 4)))                                                    \
    ROW(cv29, "dtensor_conv.h", "dt_conv2d_ref", "2-D input", DT_ERR_SHAPE,                                            \
        dt_conv2d_ref(&cp, &t84, &cwt, NULL, out4(MB_F32, 2, 4)))                                                      \
    ROW(cv30, "dtensor_conv.h", "dt_conv2d_ref", "NULL weight", DT_ERR_NULL,                                           \
        dt_conv2d_ref(&cp, &cx, NULL, NULL, out4(MB_F32, 2, 4)))                                                       \
    ROW(cv31, "dtensor_conv.h", "dt_conv2d_ref", "NULL output", DT_ERR_NULL,                                           \
        dt_conv2d_ref(&cp, &cx, &cwt, NULL, NULL))                                                                     \
    ROW(cv32, "dtensor_conv.h", "dt_conv2d_out_shape", "NULL input shape", DT_ERR_NULL,                                \
        dt_conv2d_out_shape(&cp, NULL, cws, OUT(int32_t)))                                                             \
    ROW(cv33, "dtensor_conv.h", "dt_conv2d_out_shape", "negative size", DT_ERR_SHAPE,                                  \
        dt_conv2d_out_shape(&cp, cxs_neg, cws, OUT(int32_t)))                                                          \
    ROW(cv34, "dtensor_conv.h", "dt_conv2d_out_shape", "max pool (no weight) with window 0", DT_ERR_SHAPE,             \
        dt_conv2d_out_shape(&cpool_k0, cxs, NULL, OUT(int32_t)))                                                       \
    ROW(cv35, "dtensor_conv.h", "dt_conv2d_backward", "grad_out of the wrong shape", DT_ERR_MISMATCH,                  \
        dt_conv2d_backward(&cp, &cx, &cwt, out4(MB_F32, 2, 3), NULL, NULL, NULL))                                      \
    ROW(cv36, "dtensor_conv.h", "dt_conv2d_backward", "grad_in of the wrong shape", DT_ERR_MISMATCH,                   \
        dt_conv2d_backward(&cp, &cx, &cwt, &cx, out4(MB_F32, 2, 3), NULL, NULL))                                       \
    ROW(cv37, "dtensor_conv.h", "dt_conv2d_backward", "int8 weight (f32 only)", DT_ERR_DTYPE,                          \
        dt_conv2d_backward(&cp, &cx, &cwt_i8, &cx, out4(MB_F32, 2, 4), NULL, NULL))                                    \
    ROW(cv38, "dtensor_conv.h", "dt_conv2d_backward", "grad_b of another size than C_out", DT_ERR_MISMATCH,            \
        dt_conv2d_backward(&cp, &cx, &cwt, &cx, NULL, NULL, out_vec(3)))                                               \
    ROW(cv39, "dtensor_conv.h", "dt_maxpool2d_ref", "window 0", DT_ERR_SHAPE,                                          \
        dt_maxpool2d_ref(&cpool_k0, &cx, out4(MB_F32, 2, 4)))                                                          \
    ROW(cv40, "dtensor_conv.h", "dt_maxpool2d_ref", "stride 0", DT_ERR_SHAPE,                                          \
        dt_maxpool2d_ref(&cpool_s0, &cx, out4(MB_F32, 2, 2)))                                                          \
    ROW(cv41, "dtensor_conv.h", "dt_maxpool2d_ref", "output dtype differs from the input's", DT_ERR_DTYPE,             \
        dt_maxpool2d_ref(&cpool, &cx, out4(MB_I8, 2, 2)))                                                              \
    ROW(cv42, "dtensor_conv.h", "dt_maxpool2d_ref", "output of the wrong shape", DT_ERR_MISMATCH,                      \
        dt_maxpool2d_ref(&cpool, &cx, out4(MB_F32, 2, 4)))                                                             \
    ROW(cv43, "dtensor_conv.h", "dt_maxpool2d_backward", "grad_in of the wrong shape", DT_ERR_MISMATCH,                \
        dt_maxpool2d_backward(&cpool, &cx, out4(MB_F32, 2, 2), out4(MB_F32, 2, 2)))                                    \
    ROW(cv44, "dtensor_conv.h", "dt_conv2d_rows", "parts 0", DT_ERR_RANK,                                              \
        dt_conv2d_rows(&cp, 4, 3, 0, 0, OUT(int32_t)))                                                                 \
    ROW(cv45, "dtensor_conv.h", "dt_conv2d_rows", "height 0", DT_ERR_SHAPE,                                            \
        dt_conv2d_rows(&cp, 0, 3, 2, 0, OUT(int32_t)))                                                                 \
    ROW(cv46, "dtensor_conv.h", "dt_conv2d_rows", "stride 0", DT_ERR_SHAPE,                                            \
        dt_conv2d_rows(&cp_stride0, 4, 3, 2, 0, OUT(int32_t)))                                                         \
    ROW(cv47, "dtensor_conv.h", "dt_conv2d_out_spec", "input and weight on different meshes", DT_ERR_MISMATCH,         \
        dt_conv2d_out_spec(&cp, &sp_cx_h, &sp_cw3, OUT(dt_spec)))                                                      \
    ROW(cv48, "dtensor_conv.h", "dt_conv2d_out_spec", "dilation 0", DT_ERR_SHAPE,                                      \
        dt_conv2d_out_spec(&cp_dil0, &sp_cx_h, &sp_cw, OUT(dt_spec)))                                                  \
    ROW(cv49, "dtensor_conv.h", "dt_conv2d_scratch_bytes", "NULL bytes", DT_ERR_NULL,                                  \
        dt_conv2d_scratch_bytes(&cp, &sp_cx_h, &sp_cw, NULL))                                                          \
    ROW(cv50, "dtensor_conv.h", "dt_maxpool2d", "input Partial (no strategy)", DT_ERR_NO_STRATEGY,                     \
        dt_maxpool2d(&dcomm, &cpool, &dgy_part, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 2), OUT(void), 8192))           \
    ROW(cv59, "dtensor_conv.h", "dt_avgpool2d_ref", "output of the wrong shape", DT_ERR_MISMATCH,                      \
        dt_avgpool2d_ref(&cpool, &cx, out4(MB_F32, 2, 4)))                                                             \
    ROW(cv60, "dtensor_conv.h", "dt_avgpool2d_ref", "window 0", DT_ERR_SHAPE,                                          \
        dt_avgpool2d_ref(&cpool_k0, &cx, out4(MB_F32, 2, 4)))                                                          \
    ROW(cv61, "dtensor_conv.h", "dt_avgpool2d", "NULL output", DT_ERR_NULL,                                            \
        dt_avgpool2d(&dcomm, &cp, &dcx_h, OUT_AT(dt_spec, 8192), NULL, OUT(void), 8192))                               \
    ROW(cv62, "dtensor_conv.h", "dt_avgpool2d", "input Partial (no strategy)", DT_ERR_NO_STRATEGY,                     \
        dt_avgpool2d(&dcomm, &cpool, &dgy_part, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 2), OUT(void), 8192))           \
    ROW(cv51, "dtensor_conv.h", "dt_conv2d", "stride 0", DT_ERR_SHAPE,                                                 \
        dt_conv2d(&dcomm, &cp_stride0, &dcx_h, &dcw, NULL, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 2), OUT(void),       \
                  8192))                                                                                               \
    ROW(cv52, "dtensor_conv.h", "dt_conv2d", "bias of another size than the local C_out", DT_ERR_MISMATCH,             \
        dt_conv2d(&dcomm, &cp, &dcx_h, &dcw, &cbias3, OUT_AT(dt_spec, 8192), out4(MB_F32, 2, 2), OUT(void), 8192))     \
    ROW(cv56, "dtensor_conv.h", "dt_conv2d_sharded_backward", "NULL params (nothing sent)", DT_ERR_NULL,               \
        dt_conv2d_sharded_backward(&dcomm, NULL, &dcx_h, &dcw, &dgy_h, out4(MB_F32, 2, 2), NULL, NULL,                 \
                                   OUT_AT(dt_spec, 8192), OUT(void), 8192))                                            \
    ROW(cv57, "dtensor_conv.h", "dt_conv2d_sharded_backward", "grad_in of the wrong shape (nothing sent)",             \
        DT_ERR_MISMATCH,                                                                                               \
        dt_conv2d_sharded_backward(&dcomm, &cp, &dcx_h, &dcw, &dgy_h, out4(MB_F32, 2, 4), NULL, NULL,                  \
                                   OUT_AT(dt_spec, 8192), OUT(void), 8192))                                            \
    ROW(cv58, "dtensor_conv.h", "dt_conv2d_backward_scratch_bytes", "int8 input (f32 only)", DT_ERR_DTYPE,             \
        dt_conv2d_backward_scratch_bytes(&cp, &sp_cx_i8, &sp_cw, OUT(size_t)))                                         \
    ROW(cv17, "dtensor_qconv.h", "dt_conv2d_q8_ref", "nq neither 1 nor C_out", DT_ERR_SHAPE,                           \
        dt_conv2d_q8_ref(&cp, &cx_i8, &cwt_i8, NULL, cq, 3, 0, out4(MB_I8, 2, 4)))                                     \
    ROW(cv18, "dtensor_qconv.h", "dt_conv2d_q8_ref", "f32 tensors", DT_ERR_DTYPE,                                      \
        dt_conv2d_q8_ref(&cp, &cx, &cwt, NULL, cq, 1, 0, out4(MB_I8, 2, 4)))                                           \
    ROW(cv19, "dtensor_qconv.h", "dt_conv2d_q8", "NULL multipliers", DT_ERR_NULL,                                      \
        dt_conv2d_q8(&dcomm, &cp, &dcx_h, &dcw, NULL, NULL, 1, 0, OUT_AT(dt_spec, 8192), out4(MB_I8, 2, 4), OUT(void), \
                     8192))                                                                                            \
    ROW(cv53, "dtensor_qconv.h", "dt_conv2d_q8_ref", "f32 bias (int32 expected)", DT_ERR_DTYPE,                        \
        dt_conv2d_q8_ref(&cp, &cx_i8, &cwt_i8, &cbias2, cq, 1, 0, out4(MB_I8, 2, 4)))                                  \
    ROW(cv54, "dtensor_qconv.h", "dt_conv2d_q8_ref", "groups do not divide the channels", DT_ERR_SHAPE,                \
        dt_conv2d_q8_ref(&cp_groups3, &cx_i8, &cwt_i8, NULL, cq, 1, 0, out4(MB_I8, 2, 4)))                             \
    ROW(cv55, "dtensor_qconv.h", "dt_conv2d_q8", "f32 tensors", DT_ERR_DTYPE,                                          \
        dt_conv2d_q8(&dcomm, &cp, &dcx_h, &dcw, NULL, cq, 1, 0, OUT_AT(dt_spec, 8192), out4(MB_I8, 2, 2), OUT(void),   \
                     8192))                                                                                            \
    ROW(gr1, "dtensor_graph.h", "dt_graph_bytes", "negative capacity (returns 0)", 0, (int)dt_graph_bytes(-1))         \
    ROW(gr2, "dtensor_graph.h", "dt_graph_init", "capacity 0", DT_ERR_TOO_SMALL,                                       \
        dt_graph_init(OUT(dt_graph), gnodes, 0))                                                                       \
    ROW(gr3, "dtensor_graph.h", "dt_graph_init", "NULL storage", DT_ERR_NULL, dt_graph_init(OUT(dt_graph), NULL, 4))   \
    ROW(gr4, "dtensor_graph.h", "dt_graph_add", "operand id not an earlier node", DT_ERR_NODE,                         \
        dt_graph_add(&gg_out, DT_ATEN_RELU, NULL, gin_01, 1))                                                          \
    ROW(gr5, "dtensor_graph.h", "dt_graph_add", "op the graph does not run", DT_ERR_UNSUPPORTED,                       \
        dt_graph_add(&gg_out, DT_ATEN_SOFTMAX, NULL, gin_01, 1))                                                       \
    ROW(gr6, "dtensor_graph.h", "dt_graph_add", "wrong operand count", DT_ERR_PLACEMENT_COUNT,                         \
        dt_graph_add(&gg_out, DT_ATEN_MM, NULL, gin_01, 1))                                                            \
    ROW(gr7, "dtensor_graph.h", "dt_graph_add", "placeholder with a size < 1", DT_ERR_SHAPE,                           \
        dt_graph_add(&gg_out, DT_G_INPUT, &ga_bad, NULL, 0))                                                           \
    ROW(gr8, "dtensor_graph.h", "dt_graph_add", "NULL operand ids, nin > 0", DT_ERR_NULL,                              \
        dt_graph_add(&gg_out, DT_ATEN_RELU, NULL, NULL, 1))                                                            \
    ROW(gr9, "dtensor_graph.h", "dt_graph_add", "capacity full", DT_ERR_TOO_SMALL,                                     \
        dt_graph_add(&gg_full, DT_G_INPUT, &ga_43, NULL, 0))                                                           \
    ROW(gr10, "dtensor_graph.h", "dt_graph_add", "mm of mismatched shapes", DT_ERR_SHAPE,                              \
        dt_graph_add(&gg, DT_ATEN_MM, NULL, gin_00, 2))                                                                \
    ROW(gr11, "dtensor_graph.h", "dt_graph_analyze", "an activation before any input", DT_ERR_BATCH,                   \
        dt_graph_analyze(&gg_noin))                                                                                    \
    GR_HOSTILE_ROWS(ROW)                                                                                               \
    ROW(gr12, "dtensor_graph.h", "dt_graph_plan", "rank >= world", DT_ERR_RANK,                                        \
        dt_graph_plan(&gg, 2, 2, DT_SUM, OUT(dt_gplan), OUT_AT(dt_gstep, 1024), 4))                                    \
    ROW(gr13, "dtensor_graph.h", "dt_graph_plan", "gradient reduce op not sum/avg", DT_ERR_PLACEMENT,                  \
        dt_graph_plan(&gg, 1, 0, DT_MAX, OUT(dt_gplan), OUT_AT(dt_gstep, 1024), 4))                                    \
    ROW(gr14, "dtensor_graph.h", "dt_graph_plan", "cap < node count", DT_ERR_TOO_SMALL,                                \
        dt_graph_plan(&gg, 1, 0, DT_SUM, OUT(dt_gplan), OUT_AT(dt_gstep, 1024), 2))                                    \
    ROW(gr15, "dtensor_graph.h", "dt_graph_plan", "an input's rows not a multiple of the batch", DT_ERR_BATCH,         \
        dt_graph_plan(&gg_batch, 2, 0, DT_SUM, OUT(dt_gplan), OUT_AT(dt_gstep, 1024), 4))                              \
    ROW(gr16, "dtensor_graph.h", "dt_gplan_tensor", "step out of range", DT_ERR_NODE,                                  \
        dt_gplan_tensor(&gp, OUT_AT(void, 8192), 3, OUT(mb_tensor)))                                                   \
    ROW(gr17, "dtensor_graph.h", "dt_gplan_run", "operand not an earlier step", DT_ERR_NODE,                           \
        dt_gplan_run(&gp_badstep, OUT_AT(void, 8192), 4096, NULL))                                                     \
    ROW(gr18, "dtensor_graph.h", "dt_gplan_run", "arena smaller than the plan's", DT_ERR_TOO_SMALL,                    \
        dt_gplan_run(&gp, OUT_AT(void, 8192), 8, NULL))                                                                \
    ROW(gr19, "dtensor_graph.h", "dt_gplan_run", "world 2 without a group", DT_ERR_MISMATCH,                           \
        dt_gplan_run(&gp_world2, OUT_AT(void, 8192), 4096, NULL))                                                      \
    ROW(gr20, "dtensor_graph.h", "dt_gplan_emit_c", "buffer too small", DT_ERR_TOO_SMALL,                              \
        dt_gplan_emit_c(&gp, "plan", OUT(char), 16, OUT_AT(size_t, 4096)))                                             \
    ROW(gr21, "dtensor_graph.h", "dt_gplan_emit_c", "name not a C identifier", DT_ERR_MISMATCH,                        \
        dt_gplan_emit_c(&gp, "a-b", OUT(char), 4096, OUT_AT(size_t, 4096)))                                            \
    ROW(gr22, "dtensor_graph.h", "dt_gplan_emit_c", "NULL len", DT_ERR_NULL,                                           \
        dt_gplan_emit_c(&gp, "plan", OUT(char), 4096, NULL))                                                           \
    ROW(gr23, "dtensor_graph.h", "dt_graph_dist_placements", "mesh ndim 0", DT_ERR_MESH,                               \
        dt_graph_dist_placements(&gg, 0, OUT(dt_placement), 16))                                                       \
    ROW(gr24, "dtensor_graph.h", "dt_graph_dist_placements", "cap < node count", DT_ERR_TOO_SMALL,                     \
        dt_graph_dist_placements(&gg, 1, OUT(dt_placement), 1))                                                        \
    ROW(gr25, "dtensor_graph.h", "dt_graph_dist_init", "NULL dispatcher", DT_ERR_NULL,                                 \
        dt_graph_dist_init(&gg, NULL, NULL, OUT(dt_gvalue), 4, NULL, 0, OUT_AT(size_t, 4096), OUT_AT(size_t, 4104)))   \
    ROW(gr26, "dtensor_graph.h", "dt_graph_dist_run", "dispatcher without a comm", DT_ERR_NULL,                        \
        dt_graph_dist_run(&gg, &gd_nocomm, OUT(dt_gvalue)))                                                            \
    ROW(gr27, "dtensor_graph.h", "dt_graph_dist_run", "values not set up for the dispatcher's mesh", DT_ERR_MISMATCH,  \
        dt_graph_dist_run(&gg, &ddisp, OUT(dt_gvalue)))                                                                \
    ROW(gr28, "dtensor_graph.h", "dt_gplan_emit_c", "empty plan", DT_ERR_NODE,                                         \
        dt_gplan_emit_c(&gp_empty, "plan", OUT(char), 4096, OUT_AT(size_t, 4096)))                                     \
    ROW(gr29, "dtensor_graph.h", "dt_graph_init", "NULL graph", DT_ERR_NULL, dt_graph_init(NULL, OUT(dt_gnode), 4))    \
    ROW(gr30, "dtensor_graph.h", "dt_graph_add", "dim out of range", DT_ERR_DIM,                                       \
        dt_graph_add(&gg, DT_ATEN_SUM, &ga_dim5, gin_00, 1))                                                           \
                                                                                                                       \
    ROW(pg1, "ports/pg.h", "pg_strerror", "unknown code (returns \"unknown error\")", 0, pg_strerror(12345) == NULL)   \
    ROW(pg2, "ports/pg.h", "pg_dtype_size", "unknown dtype (returns 0)", 0, (int)pg_dtype_size((mb_dtype)99))          \
    ROW(pg2b, "ports/pg.h", "pg_wire_tag", "context, kind, low beyond their bits (masked: bits 30-31 stay 0)", 0,      \
        (int)(pg_wire_tag(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu) >> 30))                                               \
    ROW(pg3, "ports/pg.h", "pg_group_init", "NULL ops", PG_ERR_NULL,                                                   \
        pg_group_init(OUT(pg_group), NULL, NULL, 0, 2, 64))                                                            \
    ROW(pg4, "ports/pg.h", "pg_group_init", "ops without send", PG_ERR_NULL,                                           \
        pg_group_init(OUT(pg_group), &ops_nosend, NULL, 0, 2, 64))                                                     \
    ROW(pg5, "ports/pg.h", "pg_group_init", "world size > PG_MAX_RANKS", PG_ERR_SIZE,                                  \
        pg_group_init(OUT(pg_group), pg_pthread_ops(), NULL, 0, PG_MAX_RANKS + 1, 64))                                 \
    ROW(pg6, "ports/pg.h", "pg_group_init", "max_msg 0", PG_ERR_SIZE,                                                  \
        pg_group_init(OUT(pg_group), pg_pthread_ops(), NULL, 0, 2, 0))                                                 \
    ROW(pg7, "ports/pg.h", "pg_group_init", "rank >= size", PG_ERR_RANK,                                               \
        pg_group_init(OUT(pg_group), pg_pthread_ops(), NULL, 2, 2, 64))                                                \
    ROW(pg8, "ports/pg.h", "pg_rank", "NULL", PG_ERR_NULL, pg_rank(NULL))                                              \
    ROW(pg9, "ports/pg.h", "pg_rank", "not a member", PG_ERR_NOT_MEMBER, pg_rank(&nomember))                           \
    ROW(pg9b, "ports/pg.h", "pg_rank", "group: a copy of a group (not where its init filled it)", PG_ERR_COPIED,       \
        pg_rank(&g0_copy))                                                                                             \
    ROW(pg9c, "ports/pg.h", "pg_all_reduce", "group: a copy of a group (nothing sent)", PG_ERR_COPIED,                 \
        pg_all_reduce(&g0_copy, pin, OUT(void), 4, MB_F32, PG_SUM))                                                    \
    ROW(pg9d, "ports/pg.h", "pg_subgroup_init", "group: parent a copy of a group", PG_ERR_COPIED,                      \
        pg_subgroup_init(OUT(pg_group), &g0_copy, ranks01, 2))                                                         \
    ROW(pg10, "ports/pg.h", "pg_size", "NULL", PG_ERR_NULL, pg_size(NULL))                                             \
    ROW(pg11, "ports/pg.h", "pg_world_rank", "rank out of range", PG_ERR_RANK, pg_world_rank(g0, 2))                   \
    ROW(pg12, "ports/pg.h", "pg_set_timeout", "NULL", PG_ERR_NULL, pg_set_timeout(NULL, 1))                            \
    ROW(pg13, "ports/pg.h", "pg_timeout", "NULL (returns 0)", 0, (int)pg_timeout(NULL))                                \
    ROW(pg14, "ports/pg.h", "pg_group_set_scratch", "fewer than 8 bytes", PG_ERR_SIZE,                                 \
        pg_group_set_scratch(g0, OUT(void), 4))                                                                        \
    ROW(pg15, "ports/pg.h", "pg_group_set_scratch", "NULL group", PG_ERR_NULL,                                         \
        pg_group_set_scratch(NULL, OUT(void), 64))                                                                     \
    ROW(pg16, "ports/pg.h", "pg_scratch_bytes", "NULL (returns 0)", 0, (int)pg_scratch_bytes(NULL))                    \
    ROW(pg17, "ports/pg.h", "pg_max_msg", "NULL (returns 0)", 0, (int)pg_max_msg(NULL))                                \
    ROW(pg18, "ports/pg.h", "pg_send", "dst out of range", PG_ERR_RANK, pg_send(g0, 2, 0, pin, 4))                     \
    ROW(pg19, "ports/pg.h", "pg_send", "negative dst", PG_ERR_RANK, pg_send(g0, -1, 0, pin, 4))                        \
    ROW(pg20, "ports/pg.h", "pg_send", "tag > PG_TAG_MAX", PG_ERR_TAG, pg_send(g0, 1, PG_TAG_MAX + 1, pin, 4))         \
    ROW(pg21, "ports/pg.h", "pg_send", "negative tag", PG_ERR_TAG, pg_send(g0, 1, -1, pin, 4))                         \
    ROW(pg22, "ports/pg.h", "pg_send", "NULL buffer, bytes > 0", PG_ERR_NULL, pg_send(g0, 1, 0, NULL, 4))              \
    ROW(pg23, "ports/pg.h", "pg_send", "bytes > max_msg", PG_ERR_TOO_BIG,                                              \
        pg_send(g0, 1, 0, out_area.b, pg_max_msg(g0) + 1))                                                             \
    ROW(pg24, "ports/pg.h", "pg_send", "not a member", PG_ERR_NOT_MEMBER, pg_send(&nomember, 0, 0, pin, 4))            \
    ROW(pg25, "ports/pg.h", "pg_recv", "src out of range", PG_ERR_RANK,                                                \
        pg_recv(g0, 5, 0, OUT(void), 64, OUT_AT(size_t, 4096)))                                                        \
    ROW(pg26, "ports/pg.h", "pg_recv", "NULL buffer, cap > 0", PG_ERR_NULL,                                            \
        pg_recv(g0, 1, 0, NULL, 64, OUT_AT(size_t, 4096)))                                                             \
    ROW(pg27, "ports/pg.h", "pg_recv", "NULL group", PG_ERR_NULL, pg_recv(NULL, 1, 0, OUT(void), 64, NULL))            \
    ROW(pg28, "ports/pg.h", "pg_recv_timeout", "tag out of range", PG_ERR_TAG,                                         \
        pg_recv_timeout(g0, 1, 70000, OUT(void), 64, OUT_AT(size_t, 4096), 0))                                         \
    ROW(pg29, "ports/pg.h", "pg_recv_timeout", "nothing sent, timeout 0", PG_ERR_TIMEOUT,                              \
        pg_recv_timeout(g0, 1, 3, OUT(void), 64, OUT_AT(size_t, 4096), 0))                                             \
    ROW(pg78, "ports/pg.h", "pg_send_timeout", "tag out of range", PG_ERR_TAG,                                         \
        pg_send_timeout(g0, 1, 70000, pin, 4, 0))                                                                      \
    ROW(pg79, "ports/pg.h", "pg_send_timeout", "NULL group", PG_ERR_NULL, pg_send_timeout(NULL, 1, 0, pin, 4, 0))      \
    ROW(pg30, "ports/pg.h", "pg_probe", "src out of range", PG_ERR_RANK, pg_probe(g0, 2, 0, OUT(size_t)))              \
    ROW(pg31, "ports/pg.h", "pg_abort", "NULL", PG_ERR_NULL, pg_abort(NULL, -1))                                       \
    ROW(pg32, "ports/pg.h", "pg_recover", "NULL", PG_ERR_NULL, pg_recover(NULL))                                       \
    ROW(pg33, "ports/pg.h", "pg_slot_acquire", "NULL ptr", PG_ERR_NULL, pg_slot_acquire(g0, 1, 8, NULL))               \
    ROW(pg34, "ports/pg.h", "pg_slot_acquire", "bytes > max_msg", PG_ERR_TOO_BIG,                                      \
        pg_slot_acquire(g0, 1, pg_max_msg(g0) + 1, OUT(void *)))                                                       \
    ROW(pg35, "ports/pg.h", "pg_slot_acquire", "dst out of range", PG_ERR_RANK,                                        \
        pg_slot_acquire(g0, 3, 8, OUT(void *)))                                                                        \
    ROW(pg36, "ports/pg.h", "pg_slot_commit", "pointer never acquired", PG_ERR_NO_SLOT,                                \
        pg_slot_commit(g0, 1, 0, pin, 8))                                                                              \
    ROW(pg37, "ports/pg.h", "pg_slot_commit", "NULL pointer", PG_ERR_NULL, pg_slot_commit(g0, 1, 0, NULL, 8))          \
    ROW(pg38, "ports/pg.h", "pg_slot_peek", "NULL ptr", PG_ERR_NULL, pg_slot_peek(g0, 1, 0, NULL, OUT(size_t)))        \
    ROW(pg39, "ports/pg.h", "pg_slot_peek", "tag out of range", PG_ERR_TAG,                                            \
        pg_slot_peek(g0, 1, -5, OUT(const void *), OUT_AT(size_t, 64)))                                                \
    ROW(pg40, "ports/pg.h", "pg_slot_release", "pointer never peeked", PG_ERR_NO_SLOT, pg_slot_release(g0, 1, pin))    \
    ROW(pg41, "ports/pg.h", "pg_subgroup_init", "sub == parent", PG_ERR_SIZE, pg_subgroup_init(g0, g0, ranks_dup, 1))  \
    ROW(pg42, "ports/pg.h", "pg_subgroup_init", "repeated rank", PG_ERR_RANK,                                          \
        pg_subgroup_init(OUT(pg_group), g0, ranks_dup, 2))                                                             \
    ROW(pg43, "ports/pg.h", "pg_subgroup_init", "rank outside the parent", PG_ERR_RANK,                                \
        pg_subgroup_init(OUT(pg_group), g0, ranks_neg, 2))                                                             \
    ROW(pg44, "ports/pg.h", "pg_subgroup_init", "n <= 0", PG_ERR_SIZE,                                                 \
        pg_subgroup_init(OUT(pg_group), g0, ranks_dup, 0))                                                             \
    ROW(pg45, "ports/pg.h", "pg_barrier", "NULL", PG_ERR_NULL, pg_barrier(NULL))                                       \
    ROW(pg46, "ports/pg.h", "pg_barrier", "not a member", PG_ERR_NOT_MEMBER, pg_barrier(&nomember))                    \
    ROW(pg47, "ports/pg.h", "pg_broadcast", "root out of range", PG_ERR_RANK,                                          \
        pg_broadcast(g0, OUT(void), 4, MB_F32, 2))                                                                     \
    ROW(pg48, "ports/pg.h", "pg_broadcast", "unknown dtype", PG_ERR_DTYPE,                                             \
        pg_broadcast(g0, OUT(void), 4, (mb_dtype)99, 0))                                                               \
    ROW(pg49, "ports/pg.h", "pg_broadcast", "NULL buffer, count > 0", PG_ERR_NULL,                                     \
        pg_broadcast(g0, NULL, 4, MB_F32, 0))                                                                          \
    ROW(pg50, "ports/pg.h", "pg_all_reduce", "unknown op", PG_ERR_OP,                                                  \
        pg_all_reduce(g0, pin, OUT(void), 4, MB_F32, (pg_red)9))                                                       \
    ROW(pg51, "ports/pg.h", "pg_all_reduce", "AVG on integers", PG_ERR_DTYPE,                                          \
        pg_all_reduce(g0, pin, OUT(void), 4, MB_I32, PG_AVG))                                                          \
    ROW(pg52, "ports/pg.h", "pg_all_reduce", "unknown dtype", PG_ERR_DTYPE,                                            \
        pg_all_reduce(g0, pin, OUT(void), 4, (mb_dtype)99, PG_SUM))                                                    \
    ROW(pg53, "ports/pg.h", "pg_all_reduce", "count overflows bytes", PG_ERR_SIZE,                                     \
        pg_all_reduce(g0, pin, OUT(void), (size_t)-1 / 2, MB_F32, PG_SUM))                                             \
    ROW(pg54, "ports/pg.h", "pg_all_reduce", "NULL recv", PG_ERR_NULL,                                                 \
        pg_all_reduce(g0, pin, NULL, 4, MB_F32, PG_SUM))                                                               \
    ROW(pg55, "ports/pg.h", "pg_all_gather", "NULL send", PG_ERR_NULL, pg_all_gather(g0, NULL, OUT(void), 4, MB_F32))  \
    ROW(pg56, "ports/pg.h", "pg_all_gather", "count x size overflows", PG_ERR_SIZE,                                    \
        pg_all_gather(g0, pin, OUT(void), (size_t)-1 / 4, MB_F32))                                                     \
    ROW(pg57, "ports/pg.h", "pg_all_gatherv", "NULL counts", PG_ERR_NULL,                                              \
        pg_all_gatherv(g0, pin, OUT(void), NULL, MB_F32))                                                              \
    ROW(pg58, "ports/pg.h", "pg_all_gatherv", "counts sum overflows", PG_ERR_SIZE,                                     \
        pg_all_gatherv(g0, pin, OUT(void), counts_big, MB_F32))                                                        \
    ROW(pg59, "ports/pg.h", "pg_reduce_scatter", "unknown op", PG_ERR_OP,                                              \
        pg_reduce_scatter(g0, pin, OUT(void), 2, MB_F32, (pg_red)-1))                                                  \
    ROW(pg60, "ports/pg.h", "pg_reduce_scatter", "NULL group", PG_ERR_NULL,                                            \
        pg_reduce_scatter(NULL, pin, OUT(void), 2, MB_F32, PG_SUM))                                                    \
    ROW(pg61, "ports/pg.h", "pg_reduce_scatterv", "AVG on integers", PG_ERR_DTYPE,                                     \
        pg_reduce_scatterv(g0, pin, OUT(void), counts2, MB_I8, PG_AVG))                                                \
    ROW(pg62, "ports/pg.h", "pg_reduce_scatterv", "NULL counts", PG_ERR_NULL,                                          \
        pg_reduce_scatterv(g0, pin, OUT(void), NULL, MB_F32, PG_SUM))                                                  \
    ROW(pg63, "ports/pg.h", "pg_all_to_all", "in place (send == recv)", PG_ERR_SIZE,                                   \
        pg_all_to_all(g0, OUT(void), OUT(void), 2, MB_F32))                                                            \
    ROW(pg64, "ports/pg.h", "pg_all_to_all", "unknown dtype", PG_ERR_DTYPE,                                            \
        pg_all_to_all(g0, pin, OUT(void), 2, (mb_dtype)-1))                                                            \
    ROW(pg65, "ports/pg.h", "pg_all_to_allv", "NULL recv counts", PG_ERR_NULL,                                         \
        pg_all_to_allv(g0, pin, counts2, OUT(void), NULL, MB_F32))                                                     \
    ROW(pg66, "ports/pg.h", "pg_all_to_allv", "NULL send, counts > 0", PG_ERR_NULL,                                    \
        pg_all_to_allv(g0, NULL, counts2, OUT(void), counts2, MB_F32))                                                 \
    ROW(pg67, "ports/pg.h", "pg_gather", "root out of range", PG_ERR_RANK,                                             \
        pg_gather(g0, pin, OUT(void), 2, MB_F32, -1))                                                                  \
    ROW(pg68, "ports/pg.h", "pg_gather", "NULL recv on the root", PG_ERR_NULL, pg_gather(g0, pin, NULL, 2, MB_F32, 0)) \
    ROW(pg69, "ports/pg.h", "pg_gatherv", "unknown dtype", PG_ERR_DTYPE,                                               \
        pg_gatherv(g0, pin, OUT(void), counts2, (mb_dtype)77, 0))                                                      \
    ROW(pg70, "ports/pg.h", "pg_scatter", "root out of range", PG_ERR_RANK,                                            \
        pg_scatter(g0, pin, OUT(void), 2, MB_F32, 2))                                                                  \
    ROW(pg71, "ports/pg.h", "pg_scatterv", "NULL recv, count > 0", PG_ERR_NULL,                                        \
        pg_scatterv(g0, pin, NULL, counts2, MB_F32, 1))                                                                \
    ROW(pg72, "ports/pg.h", "pg_reduce_local", "unknown op", PG_ERR_OP,                                                \
        pg_reduce_local(OUT(void), pin, 4, MB_F32, (pg_red)9))                                                         \
    ROW(pg73, "ports/pg.h", "pg_reduce_local", "AVG on integers", PG_ERR_DTYPE,                                        \
        pg_reduce_local(OUT(void), pin, 4, MB_I16, PG_AVG))                                                            \
    ROW(pg76, "ports/pg.h", "pg_reduce_into", "NULL second input", PG_ERR_NULL,                                        \
        pg_reduce_into(OUT(void), pin, NULL, 4, MB_F32, PG_SUM))                                                       \
    ROW(pg77, "ports/pg.h", "pg_reduce_into", "unknown dtype", PG_ERR_DTYPE,                                           \
        pg_reduce_into(OUT(void), pin, pin, 4, (mb_dtype)99, PG_MAX))                                                  \
    ROW(pg74, "ports/pg.h", "pg_scale_local", "integer dtype", PG_ERR_DTYPE, pg_scale_local(OUT(void), 4, MB_I32, 2))  \
    ROW(pg75, "ports/pg.h", "pg_scale_local", "divisor <= 0", PG_ERR_SIZE, pg_scale_local(OUT(void), 4, MB_F32, 0))    \
                                                                                                                       \
    ROW(pt1, "ports/pg_pthread.h", "pg_pthread_world_init", "NULL world", PG_ERR_NULL, pg_pthread_world_init(NULL, 2)) \
    ROW(pt2, "ports/pg_pthread.h", "pg_pthread_world_init", "n 0", PG_ERR_SIZE,                                        \
        pg_pthread_world_init(OUT(pg_pthread_world), 0))                                                               \
    ROW(pt3, "ports/pg_pthread.h", "pg_pthread_world_init", "n > PG_PTHREAD_MAX_RANKS", PG_ERR_SIZE,                   \
        pg_pthread_world_init(OUT(pg_pthread_world), PG_PTHREAD_MAX_RANKS + 1))                                        \
    ROW(pt4, "ports/pg_pthread.h", "pg_pthread_run", "NULL fn (no thread started)", PG_ERR_NULL,                       \
        pg_pthread_run(OUT(pg_pthread_world), 2, NULL, NULL))                                                          \
    ROW(pt5, "ports/pg_pthread.h", "pg_pthread_run", "n < 1 (no thread started)", PG_ERR_SIZE,                         \
        pg_pthread_run(OUT(pg_pthread_world), -1, noop_rank, NULL))                                                    \
                                                                                                                       \
    ROW(ps1, "ports/pg_shm.h", "pg_shm_format", "NULL region", PG_ERR_NULL, pg_shm_format(NULL, SHM_BYTES, 2, 4, 64))  \
    ROW(ps2, "ports/pg_shm.h", "pg_shm_format", "bytes smaller than the layout", PG_ERR_SIZE,                          \
        pg_shm_format(shm_out(0), SHM_BYTES - 1, 2, 4, 64))                                                            \
    ROW(ps3, "ports/pg_shm.h", "pg_shm_format", "cores 0", PG_ERR_SIZE,                                                \
        pg_shm_format(shm_out(0), SHM_BYTES, 0, 4, 64))                                                                \
    ROW(ps4, "ports/pg_shm.h", "pg_shm_format", "cores > PG_SHM_MAX_CORES", PG_ERR_SIZE,                               \
        pg_shm_format(shm_out(0), SHM_BYTES, PG_SHM_MAX_CORES + 1, 4, 64))                                             \
    ROW(ps5, "ports/pg_shm.h", "pg_shm_format", "slots not a power of two", PG_ERR_SIZE,                               \
        pg_shm_format(shm_out(0), SHM_BYTES, 2, 3, 64))                                                                \
    ROW(ps6, "ports/pg_shm.h", "pg_shm_format", "slots > 32", PG_ERR_SIZE,                                             \
        pg_shm_format(shm_out(0), SHM_BYTES, 2, 64, 64))                                                               \
    ROW(ps7, "ports/pg_shm.h", "pg_shm_format", "payload not a multiple of 8", PG_ERR_SIZE,                            \
        pg_shm_format(shm_out(0), SHM_BYTES, 2, 4, 60))                                                                \
    ROW(ps8, "ports/pg_shm.h", "pg_shm_format", "payload 0", PG_ERR_SIZE,                                              \
        pg_shm_format(shm_out(0), SHM_BYTES, 2, 4, 0))                                                                 \
    ROW(ps9, "ports/pg_shm.h", "pg_shm_format", "region not PG_SHM_LINE-aligned", PG_ERR_SIZE,                         \
        pg_shm_format(shm_out(8), SHM_BYTES, 2, 4, 64))                                                                \
    ROW(ps10, "ports/pg_shm.h", "pg_shm_init", "NULL hooks", PG_ERR_NULL,                                              \
        pg_shm_init(OUT(pg_shm), shm_out(0), SHM_BYTES, 0, NULL))                                                      \
    ROW(ps11, "ports/pg_shm.h", "pg_shm_init", "NULL region", PG_ERR_NULL,                                             \
        pg_shm_init(OUT(pg_shm), NULL, SHM_BYTES, 0, &shm_hooks))                                                      \
    ROW(ps12, "ports/pg_shm.h", "pg_shm_init", "region not PG_SHM_LINE-aligned", PG_ERR_SIZE,                          \
        pg_shm_init(OUT(pg_shm), shm_out(8), SHM_BYTES, 0, &shm_hooks))                                                \
    ROW(ps13, "ports/pg_shm.h", "pg_shm_init", "bytes < PG_SHM_LINE", PG_ERR_SIZE,                                     \
        pg_shm_init(OUT(pg_shm), shm_out(0), PG_SHM_LINE - 1, 0, &shm_hooks))

/* ---- public functions returning an int without a row, and why ---------------------------
   tests/docs/check_docs.py fails when a public function of a library header returning
   int / int32_t / int64_t has neither a row in the table nor an entry here, so a new API
   cannot skip the contract. An entry must say why no invalid input exists or why it cannot
   be a row here (it is printed in docs/error-contract.md). */
typedef struct no_row {
    const char *header, *function, *why;
} no_row;
static const no_row no_rows[] = {
    {"dtensor_quant.h", "dt_mul_qmul",
     "cannot fail: every int32 x and multiplier give a value (the left shift "
     "saturates, a shift past +-31 acts as +-31); it returns a product, not a code"},
    {"dtensor_ops.h", "dt_kernel_cblas",
     "built only with DT_CBLAS (a BLAS to link); every input it does not take "
     "goes to dt_kernel_ref, whose rows are above"},
    {"ports/pg_mpi.h", "pg_mpi_init",
     "needs an MPI build (mpi.h), which this host table is not; NULL port: "
     "PG_ERR_NULL, a failing MPI_Comm_dup: PG_ERR_PORT"},
    {"ports/pg_mpi.h", "pg_mpi_finalize", "needs an MPI build; NULL port: PG_ERR_NULL"},
    {"splitcore_base.h", "splitcore_err_module",
     "cannot fail: it classifies any int (SPLITCORE_MODULE_NONE for values no module owns); "
     "tests/test_errors.c checks every code"},
};
#define NNOROWS ((int)(sizeof no_rows / sizeof no_rows[0]))

/* ---- helpers the rows use (outputs inside the canary area) --------------------------- */
/* An mb_walk visitor that writes b (a row's output). */
static int walk_write(void *user, void *a, void *b, const int32_t *index)
{
    (void)user;
    (void)index;
    memcpy(b, a, 4);
    return 0;
}
/* A [1, c, h, 4] output whose data is in the canary area. */
static mb_tensor *out4(mb_dtype dt, int32_t c, int32_t h)
{
    static mb_tensor t;
    int32_t sh[4];
    sh[0] = 1;
    sh[1] = c;
    sh[2] = h;
    sh[3] = 4;
    mb_tensor_init(&t, out_area.b + 16384, dt, 4, sh);
    return &t;
}
static mb_tensor *out_tensor(mb_dtype dt, int32_t rows, int32_t cols)
{
    /* the tensor struct is an input (not in the canary area); its data is */
    static mb_tensor t;
    int32_t sh[2];
    sh[0] = rows;
    sh[1] = cols;
    mb_tensor_init(&t, out_area.b + 16384, dt, 2, sh);
    return &t;
}
static int reducer_add(mb_value *acc, const mb_value *chunk, void *user)
{
    (void)acc;
    (void)chunk;
    (void)user;
    return MB_OK;
}

static mb_value *out_value_dt(mb_dtype dt, int32_t rows, int32_t cols)
{
    static mb_value v;
    memset(&v, 0, sizeof v);
    v.kind = MB_VALUE_TENSOR;
    v.tensor = *out_tensor(dt, rows, cols);
    return &v;
}
static mb_value *out_value(int32_t rows, int32_t cols)
{
    return out_value_dt(MB_F32, rows, cols);
}
/* A 0-d f32 output and a 4x4 one with its rows 8 floats apart (not contiguous), data in the
   canary area. */
static mb_tensor *out_scalar(void)
{
    static mb_tensor t;
    mb_tensor_init(&t, out_area.b + 16384, MB_F32, 0, NULL);
    return &t;
}
static mb_tensor *out_strided44(void)
{
    static mb_tensor t;
    t = *out_tensor(MB_F32, 4, 4);
    t.stride[0] = 8;
    return &t;
}
static mb_tensor *out_vec(int32_t n)
{
    static mb_tensor t;
    mb_tensor_init(&t, out_area.b + 16384, MB_F32, 1, &n);
    return &t;
}

static mb_tensor *in_local(int32_t rows, int32_t cols)
{
    static float data[64];
    static mb_tensor t;
    int32_t sh[2];
    sh[0] = rows;
    sh[1] = cols;
    mb_tensor_init(&t, data, MB_F32, 2, sh);
    return &t;
}
static mb_tensor *i8_local(int32_t rows, int32_t cols) /* two per row: alternate */
{
    static mb_tensor t[2];
    static int k;
    int32_t sh[2];
    sh[0] = rows;
    sh[1] = cols;
    k ^= 1;
    mb_tensor_init(&t[k], i8buf, MB_I8, 2, sh);
    return &t[k];
}
/* `lowered` (1F1B on 2 ranks, M 4) with one send the executor cannot run: 0 SEND_F(0,0)
   twice, 1 a SEND_B of stage 0 (no stage before it), 2 SEND_F(0,0) before its F, 4 a SEND_S
   of stage 0 at the end (the plan has no skip routes); 3: one rank, 2 stages (F0 SEND_F0 F1
   B1 B0): a send between stages on the same rank. */
static pp_plan *bad_comm(int k)
{
    static pp_plan p;
    static pp_action st[2][512];
    pp_action *row = st[0], a;
    int i;
    if (k == 3) {
        static const pp_action one[5] = {PP_ACTION(PP_F, 0, 0), PP_ACTION(PP_SEND_F, 0, 0), PP_ACTION(PP_F, 1, 0),
                                         PP_ACTION(PP_B, 1, 0), PP_ACTION(PP_B, 0, 0)};
        pp_plan_init(&p, st, sizeof st, 1, 2, 1);
        memcpy(row, one, sizeof one);
        p.len[0] = 5;
        p.lowered = 1;
        return &p;
    }
    p = lowered;
    p.actions = row;
    p.cap = 512;
    for (i = 0; i < 2; i++)
        memcpy(st[i], lowered.actions + (size_t)i * (size_t)lowered.cap, (size_t)lowered.len[i] * sizeof(pp_action));
    for (i = 0; row[i].type != PP_SEND_F; i++) {} /* row[i - 1] is F(0,0) */
    if (k == 0) {
        memmove(row + i + 1, row + i, (size_t)(p.len[0] - i) * sizeof *row);
        p.len[0]++;
    } else if (k == 1 || k == 4) {
        row[p.len[0]].type = k == 1 ? PP_SEND_B : PP_SEND_S;
        row[p.len[0]].stage = 0;
        row[p.len[0]++].mb = 0;
    } else {
        a = row[i];
        row[i] = row[i - 1];
        row[i - 1] = a;
    }
    return &p;
}
static pp_plan *out_plan(void)
{
    /* an initialised, empty 2-rank custom plan to import into */
    static pp_plan p;
    static pp_action st[256];
    pp_plan_init(&p, st, sizeof st, 2, 2, 1);
    return &p;
}
/* The hostile plans and tables (see above the table), from sched, table0 and xcfg. */
static int dummy_output(void *user, int mb, const mb_tensor *y)
{
    (void)user;
    (void)mb;
    (void)y;
    return 0;
}
static void hostile_fixtures(void)
{
    static pp_action fo_store[2][256];
    static pp_plan fo, fo_low;
    int k;
    for (k = 0; k < HQ_COUNT; k++) hq[k] = hq_base;
    hq[HQ_LAYOUT].layout = 9;
    hq[HQ_STRIDE].stride[0] = 0;
    hq[HQ_PAD].padding[1] = -1;
    hq[HQ_DIL].dilation[0] = 0;
    hq[HQ_WINDOW].kernel[1] = 0;
    hq[HQ_HALF].padding[0] = 1; /* window 1 */
    memset(ha, 0, sizeof ha);
    ha_op[HA_DIM] = DT_ATEN_SUM;
    ha[HA_DIM].dim = 2;
    ha_op[HA_DIM_MIN] = DT_ATEN_SOFTMAX;
    ha[HA_DIM_MIN].dim = INT32_MIN;
    ha_op[HA_DIM2] = DT_ATEN_TRANSPOSE;
    ha[HA_DIM2].dim2 = 2;
    ha_op[HA_MODE] = DT_ATEN_GELU;
    ha[HA_MODE].mode = 2;
    ha_op[HA_NDIM_BIG] = ha_op[HA_NDIM_NEG] = ha_op[HA_SIZE_NEG] = DT_ATEN_VIEW;
    ha[HA_NDIM_BIG].ndim = MB_MAX_DIMS + 1;
    ha[HA_NDIM_NEG].ndim = -1;
    ha[HA_SIZE_NEG].ndim = 2;
    ha[HA_SIZE_NEG].shape[0] = -2;
    ha[HA_SIZE_NEG].shape[1] = -8;
    ha_op[HA_PERM] = DT_ATEN_PERMUTE;
    ha[HA_PERM].ndim = 2;
    ha_op[HA_EXPAND] = DT_ATEN_EXPAND;
    ha[HA_EXPAND].ndim = 1;
    ha[HA_EXPAND].shape[0] = 4;
    memset(hd, 0, sizeof hd);
    for (k = 0; k < HD_COUNT; k++) {
        hd[k].comm = &dcomm;
        hd[k].scratch = OUT_AT(void, 24576);
        hd[k].scratch_bytes = 4096;
    }
    hd[HD_COMM].comm = NULL;
    hd[HD_COPY].comm = &dcomm_copy;
    hd[HD_SCRATCH].scratch = NULL;
    hd[HD_SMALL].scratch_bytes = 8;
    for (k = 0; k < 2; k++) {
        assert_int_equal(dt_plan_cache_init(&hd_plans[k], hd_pentries, 2), DT_OK);
        assert_int_equal(dt_op_cache_init(&hd_strats[k], hd_oentries, 2), DT_OK);
    }
    hd_plans[0].count = 3;
    hd_plans[1].count = 1;
    hd_plans[1].last = 5;
    hd[HD_PLANS].plans = &hd_plans[0];
    hd[HD_PLANS_LAST].plans = &hd_plans[1];
    hd_strats[0].count = 3;
    hd_strats[1].count = -1;
    hd[HD_STRATS].strategies = &hd_strats[0];
    hd[HD_STRATS_NEG].strategies = &hd_strats[1];
    for (k = 0; k < HK_COUNT; k++) hk[k] = cp;
    hk[HK_LAYOUT].layout = 9;
    hk[HK_STRIDE].stride[1] = 0;
    hk[HK_PAD].padding[0] = -1;
    hk[HK_DIL].dilation[1] = 0;
    hk[HK_GROUPS].groups = 0;
    for (k = 0; k < HC_COUNT; k++) hc[k] = xcfg;
    memcpy(hc_fwd, layers2, sizeof hc_fwd);
    memcpy(hc_act0, layers2, sizeof hc_act0);
    hc[HC_LAYERS].layers = NULL;
    hc[HC_BALANCE].balance = NULL;
    hc[HC_ROWS0].rows = 0;
    hc[HC_DTYPE].dtype = 99;
    hc[HC_NLAYERS].nlayers = 0;
    hc[HC_CKPT].checkpoint = 9;
    hc[HC_BAL0].balance = bal_01;
    hc[HC_BALSUM].balance = bal_12;
    hc[HC_IN0].in_bytes = 0;
    hc[HC_INODD].in_bytes = 31;
    hc_fwd[1].forward = NULL;
    hc[HC_FWD].layers = hc_fwd;
    hc_act0[1].act_bytes = 0;
    hc[HC_ACT0].layers = hc_act0;
    for (k = 0; k < 3; k++) memcpy(hp_rows[k], sched.actions, sizeof hp_rows[k]);
    for (k = 0; k < HP_COUNT; k++) hp[k] = sched;
    hp[HP_NULL].actions = NULL;
    hp[HP_NRANKS0].nranks = 0;
    hp[HP_NRANKS_BIG].nranks = PP_MAX_RANKS + 1;
    hp[HP_NSTAGES_BIG].nstages = PP_MAX_STAGES + 1;
    hp[HP_NMB0].nmb = 0;
    hp[HP_CAP_NEG].cap = -1;
    hp[HP_LEN_OVER].len[1] = sched.cap + 1;
    hp[HP_STAGE_RANK].stage_rank[1] = 200;
    hp[HP_TYPE].actions = hp_rows[0];
    hp_rows[0][0].type = 200;
    hp[HP_STAGE].actions = hp_rows[1];
    hp_rows[1][0].stage = 9;
    hp[HP_MB].actions = hp_rows[2];
    hp_rows[2][0].mb = 9;
    for (k = 0; k < HP_COUNT; k++) {
        hpc[k] = hp[k];
        if (k != HP_NULL) hpc[k].actions = OUT_AT(pp_action, 16384); /* rows are outputs here */
    }
    assert_true((size_t)table0.len <= sizeof ht_rows[0] / sizeof ht_rows[0][0]);
    for (k = 0; k < 3; k++) memcpy(ht_rows[k], table0.actions, table0.len * sizeof(pp_action));
    for (k = 0; k < HT_COUNT; k++) ht[k] = table0;
    ht[HT_NULL].actions = NULL;
    ht[HT_MAP_NULL].stage_rank = NULL;
    ht[HT_NRANKS0].nranks = 0;
    ht[HT_RANK].rank = 2;
    ht[HT_NSTAGES0].nstages = 0;
    ht[HT_NSTAGES_BIG].nstages = PP_MAX_STAGES + 1;
    ht[HT_NMB0].nmb = 0;
    ht[HT_SLOTS0].slots = 0;
    ht[HT_STAGE_RANK].stage_rank = map_bad;
    ht[HT_OTHER_RANK].stage_rank = map_other;
    ht[HT_TYPE].actions = ht_rows[0];
    ht_rows[0][0].type = 200;
    ht[HT_STAGE].actions = ht_rows[1];
    ht_rows[1][0].stage = 9;
    ht[HT_MB].actions = ht_rows[2];
    ht_rows[2][0].mb = 9;
    assert_int_equal(pp_schedule_build(&fo, PP_SCHED_FORWARD_ONLY, 2, 1, 4, fo_store[0], sizeof fo_store[0], NULL), 0);
    assert_int_equal(pp_lower(&fo, &fo_low, fo_store[1], sizeof fo_store[1], NULL), 0);
    assert_int_equal(pp_plan_table(&fo_low, 1, &table_fo1), 0);
    xcfg_fo = xcfg;
    xcfg_fo.loss = NULL;
    xcfg_fo.output = dummy_output;
    xcfg_fo_nout = xcfg_fo;
    xcfg_fo_nout.output = NULL;
    assert_int_equal(pp_exec_query(&xcfg_fo, &table_fo1, &needed), 0); /* valid but for the output */
}
static const pp_exec_cfg *xcfg_bad_balance(void)
{
    static pp_exec_cfg c;
    static int32_t bal[2] = {2, 1};
    c = xcfg;
    c.balance = bal;
    return &c;
}

/* ---- running the table --------------------------------------------------------------- */
typedef struct bad_row {
    const char *header, *function, *what, *code_name;
    int expected;
    int (*call)(void);
} bad_row;

#define ROW_FN(id, h, f, what, code, call) \
    static int row_##id(void)              \
    {                                      \
        return (call);                     \
    }
BAD_INPUT_TABLE(ROW_FN)
#define ROW_ENTRY(id, h, f, what, code, call) {h, f, what, #code, code, row_##id},
static const bad_row rows[] = {BAD_INPUT_TABLE(ROW_ENTRY)};
#define NROWS ((int)(sizeof rows / sizeof rows[0]))

static int dummy_fwd(void *self, const mb_tensor *x, mb_tensor *y)
{
    (void)self;
    (void)x;
    (void)y;
    return 0;
}
static int dummy_bi(void *self, const mb_tensor *x, const mb_tensor *dy, mb_tensor *dx)
{
    (void)self;
    (void)x;
    (void)dy;
    (void)dx;
    return 0;
}
static int dummy_input(void *user, int mb, mb_tensor *x)
{
    (void)user;
    (void)mb;
    (void)x;
    return 0;
}
static int dummy_loss(void *user, int mb, const mb_tensor *y, mb_tensor *dy, double *loss)
{
    (void)user;
    (void)mb;
    (void)y;
    (void)dy;
    *loss = 0;
    return 0;
}

static void fixtures(void)
{
    static pp_action st[2][512];
    static int32_t ranks3[2] = {0, 5};
    size_t i;
    int32_t sh7[MB_MAX_DIMS + 1] = {1, 1, 1, 1, 1, 1, 1};
    (void)sh7;
    mb_tensor_init(&t84, fx, MB_F32, 2, shape84);
    assert_int_equal(mb_tensor_init(&t_sized, NULL, MB_F32, 2, shape84), MB_OK);
    t_ndim7 = t84;
    t_ndim7.ndim = MB_MAX_DIMS + 1;
    t_negshape = t84;
    t_negshape.shape[1] = -1;
    t_dtype = t84;
    t_dtype.dtype = (mb_dtype)99;
    t_neg_stride = t84;
    t_neg_stride.stride[0] = -4;
    memset(args, 0, sizeof args);
    args[0].kind = MB_VALUE_TENSOR;
    args[0].tensor = t84;
    args[1].kind = MB_VALUE_SCALAR;
    args[1].scalar = 2.0;
    memset(args_bad_kind, 0, sizeof args_bad_kind);
    args_bad_kind[0].kind = 7;
    args_bad_kind[0].tensor = t84;
    assert_int_equal(mb_split(args, NULL, 1, 4, MB_BALANCED, chunks4, 4, NULL), 4);

    assert_int_equal(pp_schedule_build(&sched, PP_SCHED_1F1B, 2, 1, 4, st[0], sizeof st[0], NULL), 0);
    assert_int_equal(pp_lower(&sched, &lowered, st[1], sizeof st[1], NULL), 0);
    assert_int_equal(pp_plan_table(&lowered, 0, &table0), 0);
    for (i = 0; i < 2; i++) {
        memset(&layers2[i], 0, sizeof layers2[i]);
        layers2[i].act_bytes = 32;
        layers2[i].cost = 1;
        layers2[i].forward = dummy_fwd;
        layers2[i].backward_input = dummy_bi;
    }
    memset(&costs, 0, sizeof costs);
    costs.f = 1;
    costs.b = 2;
    memset(&xcfg, 0, sizeof xcfg);
    xcfg.layers = layers2;
    xcfg.nlayers = 2;
    xcfg.balance = bal2;
    xcfg.rows = 2;
    xcfg.dtype = MB_F32;
    xcfg.in_bytes = 32;
    xcfg.input = dummy_input;
    xcfg.loss = dummy_loss;
    memset(&xexec_unset, 0, sizeof xexec_unset);
    xexec_noloss = xexec_unset;
    xexec_noloss.t = &table0;
    xexec_noloss.losses = noloss; /* zeroed, as pp_exec_run leaves those it did not reach */
    assert_true(table0.nmb <= (int)(sizeof noloss / sizeof noloss[0]));
    /* skips: [pass, pop], [pop, stash], [stash, stash, pop], [stash, pass], [stash, pop] */
    memset(&sk_pass, 0, sizeof sk_pass);
    sk_pass.act_bytes = 16;
    sk_stash = sk_pop = sk_pass;
    sk_stash.stash = &sk_s;
    sk_stash.nstash = 1;
    sk_pop.pop = &sk_s;
    sk_pop.npop = 1;
    sk_unstashed[0] = sk_pass, sk_unstashed[1] = sk_pop;
    sk_backwards[0] = sk_pop, sk_backwards[1] = sk_stash;
    sk_twice[0] = sk_twice[1] = sk_stash, sk_twice[2] = sk_pop;
    sk_unpopped[0] = sk_stash, sk_unpopped[1] = sk_pass;
    sk_ok[0] = sk_stash, sk_ok[1] = sk_pop;
    /* an executor config whose route says position 1 is on stage 0 (it is on stage 1) */
    sk_spec4.dtype = MB_F32;
    sk_spec4.ndim = 1;
    sk_spec4.shape[0] = 4;
    xlayers_sk[0] = xlayers_sk[1] = layers2[0];
    xlayers_sk[0].stash = &sk_s;
    xlayers_sk[0].nstash = 1;
    xlayers_sk[1].pop = &sk_s;
    xlayers_sk[1].npop = 1;
    xlayers_sk[0].out = xlayers_sk[1].out = &sk_spec4;
    xlayers_sk[0].nout = xlayers_sk[1].nout = 1;
    xcfg_badroute = xcfg;
    xcfg_badroute.layers = xlayers_sk;
    xcfg_badroute.skips = xroute_bad;
    xcfg_badroute.nskips = 1;
    memset(&dbn, 0, sizeof dbn);
    hostile_fixtures();
    memset(events1, 0, sizeof events1);

    assert_int_equal(dt_mesh_init(&mesh2, 1, shape_m2, NULL, 0), 0);
    assert_int_equal(dt_mesh_init(&mesh3, 1, shape_m2, ranks3, 0), 0);
    assert_int_equal(dt_spec_init(&sp_shard0, &mesh2, pl_shard0, 1, MB_F32, 2, shape44, NULL), 0);
    {
        static const int32_t two2[2] = {2, 2};
        const dt_placement rprod[2] = {DT_REPLICATE(), DT_PARTIAL(DT_PROD)},
                           psumr[2] = {DT_PARTIAL(DT_SUM), DT_REPLICATE()};
        assert_int_equal(dt_mesh_init(&mesh22, 2, two2, NULL, 0), 0);
        assert_int_equal(dt_spec_init(&sp_rprod, &mesh22, rprod, 2, MB_F32, 2, shape44, NULL), 0);
        assert_int_equal(dt_spec_init(&sp_psumr, &mesh22, psumr, 2, MB_F32, 2, shape44, NULL), 0);
    }
    {
        int k;
        for (k = 0; k < HS_COUNT; k++) hs[k] = sp_shard0;
        hs_mesh = mesh2;
        for (k = 0; k < HM_COUNT; k++) hm[k] = mesh2;
        hm[HM_NDIM0].ndim = 0;
        hm[HM_NDIM_BIG].ndim = DT_MAX_MESH_DIMS + 1;
        hm[HM_SHAPE].shape[0] = -2;
        hm[HM_SIZE].size = 3;
        hm[HM_INDEX].index = 200;
        hm[HM_RANKS].ranks[1] = -5;
        hm[HM_COORD].coord[0] = 99;
        hs_mesh.ndim = DT_MAX_MESH_DIMS + 1;
        hs[HS_NOMESH].mesh = NULL;
        hs[HS_MESH].mesh = &hs_mesh;
        hs[HS_DTYPE].dtype = (mb_dtype)99;
        hs[HS_NDIM].ndim = -1;
        hs[HS_NDIM_BIG].ndim = MB_MAX_DIMS + 1;
        hs[HS_SHAPE].shape[1] = -4;
        hs[HS_STRIDE].stride[0] = -4;
        hs[HS_KIND].placements[0].kind = 9;
        hs[HS_DIM].placements[0].arg = 5;
        hs[HS_RED].placements[0].kind = DT_KIND_PARTIAL;
        hs[HS_RED].placements[0].arg = 99;
    }
    assert_int_equal(dt_spec_init(&sp_shard1, &mesh2, pl_shard1, 1, MB_F32, 2, shape44, NULL), 0);
    assert_int_equal(dt_spec_init(&sp_repl, &mesh2, pl_repl, 1, MB_F32, 2, shape44, NULL), 0);
    assert_int_equal(dt_spec_init(&sp_partial, &mesh2, pl_partial, 1, MB_F32, 2, shape44, NULL), 0);
    assert_int_equal(dt_spec_init(&sp_other_shape, &mesh2, pl_repl, 1, MB_F32, 2, shape84, NULL), 0);
    assert_int_equal(dt_spec_init(&sp_other_mesh, &mesh3, pl_repl, 1, MB_F32, 2, shape44, NULL), 0);
    assert_int_equal(dt_plan_redistribute(&sp_shard0, &sp_repl, 0, &dplan), 0);
    assert_int_equal(dt_plan_cache_init(&cache, centries, 2), 0);
    assert_int_equal(dt_from_local(&dtt, &mesh2, pl_shard0, 1, in_local(2, 4), NULL), 0);
    op_in[0] = op_in[1] = &t_nan; /* 4x4 f32: as a weight, 16 elements */
    {
        int32_t s4 = 4, s2 = 2;
        assert_int_equal(dt_spec_init(&sp_i32_4, &mesh2, pl_repl, 1, MB_I32, 1, &s4, NULL), 0);
        mb_tensor_init(&t_x44, fx, MB_F32, 2, shape44);
        mb_tensor_init(&t_idx_bad, idx_bad, MB_I32, 1, &s2);
        mb_tensor_init(&t_tgt_bad, tgt_bad, MB_I32, 1, &s4);
        mb_tensor_init(&t_k22, fx, MB_F32, 2, shape44);
        t_k22.shape[0] = t_k22.shape[1] = 2;
        t_k22.stride[0] = 2;
        t_kbad = t84;
        t_kbad.stride[1] = -1;
        t_khuge = t_x44;
        t_khuge.shape[0] = 641;
        t_khuge.shape[1] = 6700417;
        t_khuge.stride[0] = t_khuge.stride[1] = 0;
        memset(&ddisp, 0, sizeof ddisp);
        ddisp.comm = &dcomm;
        memset(ops_plain, 0, sizeof ops_plain); /* spec.mesh NULL: plain tensors */
        ops_plain[0].local = ops_plain[1].local = t_x44;
        ops_mixed[0] = dtt;
        ops_mixed[1] = ops_plain[1];
        ops_inplace[0].spec = sp_repl;
        ops_inplace[0].local = t_x44;
        ops_inplace[1] = dtt;
        hd_args[0] = dtt;
        hd_args[1] = ops_inplace[0]; /* R */
    }
    {
        static const int32_t sh11[2] = {1, DT_QMM_MAX_K + 1}, sh11t[2] = {DT_QMM_MAX_K + 1, 1};
        for (i = 0; i < 16; i++) nan44[i] = i == 5 ? 0.0f / 0.0f : (float)i;
        mb_tensor_init(&t_nan, nan44, MB_F32, 2, shape44);
        mb_tensor_init(&t_acc44, acc44, MB_I32, 2, shape44);
        mb_tensor_init(&t_i8_wide, i8buf, MB_I8, 2, sh11); /* shape only: rejected before reading */
        mb_tensor_init(&t_i8_tall, i8buf, MB_I8, 2, sh11t);
        t_i8_wide.stride[1] = 0;
        t_i8_tall.stride[0] = 0;
        assert_int_equal(dt_qmm_multipliers(0.5f, scales4, 4, 1.0f, qm4), 0);
        assert_int_equal(dt_spec_init(&sp_i8_s0, &mesh2, pl_shard0, 1, MB_I8, 2, shape44, NULL), 0);
        assert_int_equal(dt_spec_init(&sp_i8_r, &mesh2, pl_repl, 1, MB_I8, 2, shape44, NULL), 0);
        assert_int_equal(dt_spec_init(&dq_a_s1.spec, &mesh2, pl_shard1, 1, MB_I8, 2, shape44, NULL), 0);
        assert_int_equal(dt_spec_init(&dq_b_s0.spec, &mesh2, pl_shard0, 1, MB_I8, 2, shape44, NULL), 0);
        dq_b_s0wrong.spec = dq_b_s0.spec;
        dq_a_s1.local = *i8_local(4, 2);
        dq_b_s0.local = *i8_local(2, 4);
        dq_b_s0wrong.local = *i8_local(4, 4);
    }
    /* graphs: x (4,3) @ w (3,2); one whose node storage is the canary area (nothing added);
       a full one; inputs of batch 4 and 5 */
    memset(&ga_43, 0, sizeof ga_43);
    ga_43.ndim = 2;
    ga_43.shape[0] = 4;
    ga_43.shape[1] = 3;
    ga_bad = ga_43;
    ga_bad.shape[1] = 0;
    assert_int_equal(dt_graph_init(&gg, gnodes, 4), 0);
    assert_int_equal(dt_graph_add(&gg, DT_G_INPUT, &ga_43, NULL, 0), 0);
    {
        dt_op_attrs w = ga_43;
        w.shape[0] = 3;
        w.shape[1] = 2;
        assert_int_equal(dt_graph_add(&gg, DT_G_PARAM, &w, NULL, 0), 1);
    }
    assert_int_equal(dt_graph_add(&gg, DT_ATEN_MM, NULL, gin_01, 2), 2);
    assert_int_equal(dt_graph_plan(&gg, 1, 0, DT_SUM, &gp, gsteps, 4), 0);
    gp_badstep = gp;
    {
        int k;
        for (k = 0; k < HG_COUNT; k++) {
            memcpy(hg_nodes[k], gnodes, sizeof hg_nodes[k]);
            hg[k] = gg;
            hg[k].nodes = hg_nodes[k];
        }
        hg[HG_NODES].nodes = NULL;
        hg[HG_COUNT_BIG].count = 5;
        hg[HG_COUNT_NEG].count = -1;
        hg_nodes[HG_IN_SELF][2].in[1] = 2;
        hg_nodes[HG_IN_NEG][2].in[0] = -1;
        hg_nodes[HG_OP][2].op = 9999;
        hg_nodes[HG_NIN][2].nin = 9;
        hg_nodes[HG_NDIM][0].ndim = 9;
    }
    memcpy(gsteps_bad, gsteps, sizeof gsteps);
    gsteps_bad[2].in[1] = 2;
    gp_badstep.steps = gsteps_bad;
    gp_world2 = gp;
    gp_world2.world = 2;
    gp_empty = gp;
    gp_empty.nsteps = 0;
    memset(&ga_dim5, 0, sizeof ga_dim5);
    ga_dim5.dim = 5;
    assert_int_equal(dt_graph_init(&gg_out, OUT(dt_gnode), 4), 0);
    assert_int_equal(dt_graph_init(&gg_full, gnodes_full, 1), 0);
    assert_int_equal(dt_graph_add(&gg_full, DT_G_INPUT, &ga_43, NULL, 0), 0);
    assert_int_equal(dt_graph_init(&gg_noin, gnodes_noin, 1), 0);
    assert_int_equal(dt_graph_add(&gg_noin, DT_G_FULL, &ga_43, NULL, 0), 0);
    assert_int_equal(dt_graph_init(&gg_batch, gnodes_batch, 2), 0);
    assert_int_equal(dt_graph_add(&gg_batch, DT_G_INPUT, &ga_43, NULL, 0), 0);
    {
        dt_op_attrs b = ga_43;
        b.shape[0] = 5;
        assert_int_equal(dt_graph_add(&gg_batch, DT_G_INPUT, &b, NULL, 0), 1);
    }

    /* a 2-rank pg_pthread world driven from this thread: nothing may block (timeout 0) */
    assert_int_equal(pg_pthread_world_init(&world, 2), 0);
    g0 = pg_pthread_group(&world, 0);
    g1 = pg_pthread_group(&world, 1);
    pg_set_timeout(g0, 0);
    pg_set_timeout(g1, 0);
    memset(&nomember, 0, sizeof nomember);
    nomember.rank = -1; /* what pg_subgroup_init leaves on a non-member */
    nomember.ops = pg_pthread_ops();
    nomember.size = 2;
    ops_nosend = *pg_pthread_ops();
    ops_nosend.send = NULL;
    /* dt_comm over the world: dt rows that would communicate must fail before that */
    assert_int_equal(dt_comm_init(&dcomm, &mesh2, g0), 0);
    g0_copy = *g0;
    dcomm_copy = dcomm;
    {
        dt_placement sh_h[1] = {DT_SHARD(2)}, sh_w[1] = {DT_SHARD(3)};
        int32_t lxs[4] = {1, 2, 2, 4};
        mb_tensor_init(&cx, fx, MB_F32, 4, cxs);
        mb_tensor_init(&cx_i8, fx, MB_I8, 4, cxs);
        mb_tensor_init(&cwt, cw, MB_F32, 4, cws);
        mb_tensor_init(&cwt_bad, cw, MB_F32, 4, cws_bad);
        mb_tensor_init(&cwt_i8, cw, MB_I8, 4, cws);
        assert_int_equal(dt_spec_init(&sp_cx_h, &mesh2, sh_h, 1, MB_F32, 4, cxs, NULL), 0);
        assert_int_equal(dt_spec_init(&sp_cx_w, &mesh2, sh_w, 1, MB_F32, 4, cxs, NULL), 0);
        assert_int_equal(dt_spec_init(&sp_cx_p, &mesh2, pl_partial, 1, MB_F32, 4, cxs, NULL), 0);
        assert_int_equal(dt_spec_init(&sp_cw, &mesh2, pl_repl, 1, MB_F32, 4, cws, NULL), 0);
        dcx_h.spec = sp_cx_h;
        mb_tensor_init(&dcx_h.local, fx, MB_F32, 4, lxs);
        dcx_bad = dcx_h;
        dcx_bad.local = cx; /* the global shape, not rank 0's [1,2,2,4] */
        dcw.spec = sp_cw;
        dcw.local = cwt;
        dgy_h = dcx_h; /* 3x3 padding 1: the output spec is the input's */
        dgy_part.spec = sp_cx_p;
        dgy_part.local = cx;
        assert_int_equal(dt_quantize_multiplier(0.5, &cq[0]), 0);
        cq[1] = cq[0];
        {
            int32_t three = 3, two = 2;
            dt_placement sh_h8[1] = {DT_SHARD(2)};
            mb_tensor_init(&cbias3, cb, MB_F32, 1, &three);
            mb_tensor_init(&cbias2, cb, MB_F32, 1, &two);
            assert_int_equal(dt_spec_init(&sp_cw3, &mesh3, pl_repl, 1, MB_F32, 4, cws, NULL), 0);
            assert_int_equal(dt_spec_init(&sp_cx_i8, &mesh2, sh_h8, 1, MB_I8, 4, cxs, NULL), 0);
        }
    }
    g1_before = *g1;
    for (i = 0; i < 64; i++) pin[i] = (float)i;
}

static int first_changed(void)
{
    size_t i;
    for (i = 0; i < sizeof out_area.b; i++)
        if (out_area.b[i] != CANARY) return (int)i;
    return -1;
}

static void test_bad_input_table(void **state)
{
    int i, failures = 0, s, d, k;
    (void)state;
    fixtures();
    for (i = 0; i < NROWS; i++) {
        int rc, changed;
        memset(out_area.b, CANARY, sizeof out_area.b);
        rc = rows[i].call();
        changed = first_changed();
        if (rc != rows[i].expected || changed >= 0) {
            print_error("%s %s (%s): got %d, expected %s = %d%s\n", rows[i].header, rows[i].function, rows[i].what, rc,
                        rows[i].code_name, rows[i].expected, changed >= 0 ? "; OUTPUT WRITTEN" : "");
            failures++;
        }
    }
    /* peers untouched: no bad pg call left a message anywhere or changed rank 1's group */
    for (s = 0; s < 2; s++)
        for (d = 0; d < 2; d++)
            for (k = 0; k < PG_PTHREAD_SLOTS; k++)
                if (world.box[s][d].slot[k].state != 0) {
                    print_error("mailbox %d->%d slot %d not free after the pg rows\n", s, d, k);
                    failures++;
                }
    if (memcmp(&g1_before, g1, sizeof *g1) != 0) {
        print_error("rank 1's group changed\n");
        failures++;
    }
    printf("bad input: %d rows over %s; %d failed\n", NROWS,
           "microbatch.h, pipeline.h, pipeline_model.h, pipeline_exec.h, pipeline_bn.h, dtensor*.h, ports/pg.h, "
           "ports/pg_pthread.h, ports/pg_shm.h",
           failures);
    assert_int_equal(failures, 0);
}

/* ---- the document -------------------------------------------------------------------- */
static int markdown(char *buf, size_t cap)
{
    size_t n = 0;
    int i, h, j;
#define PUT(...)                                                        \
    do {                                                                \
        int w_ = snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                    \
    } while (0)
    PUT("# splitcore error contract\n\n"
        "Generated from the table in `tests/test_bad_input.c` (`build/host/tests/test_bad_input --markdown "
        "docs/error-contract.md`); `scons test` fails when this file and the table differ.\n\n"
        "Every public function returns a negative code of its header's enum on bad input "
        "(`mb_strerror`, `pp_strerror`, `dt_strerror`, `pg_strerror` name them). For every row the test "
        "fills all outputs of the call with a canary first and checks afterwards that not one byte of "
        "them changed: **bad input never writes to the caller's outputs**. pg rows run on a 2-rank world; "
        "afterwards no message is in any mailbox and the peer's group is unchanged: **bad input never "
        "reaches a peer**. The port rows (`pg_pthread.h`, `pg_shm.h`) fail before a thread starts or the "
        "region is read. Functions returning a size or a pointer report bad input as 0 / NULL (stated in "
        "the case). Rows whose case starts with `plan:`, `table:`, `cfg:`, `mesh:`, `spec:`, `params:`, `graph:`, "
        "`attrs:` or `dispatch:` pass a caller-filled `pp_plan`, `pp_table`, `pp_exec_cfg`, `dt_mesh`, `mb_spec`, "
        "`dt_spec`, `dt_conv2d_params` (conv2d and max pool), `dt_graph`, `dt_op_attrs` or `dt_dispatch` (its comm, "
        "scratch and plan / strategy caches) with one hostile field (the rest valid): "
        "every function taking one validates it before any field is used as an index or a count. "
        "`dt_op_attrs.keepdim`, `ignore_index`, `scalar` and `scalar2` have no invalid value (as torch's). "
        "Faults at run time (timeouts, aborts, corrupt shared memory) are covered by "
        "`tests/test_faults.c`.\n");
    for (h = 0; h < NROWS; h++) { /* one section per header, in the order headers first appear */
        for (j = 0; j < h && strcmp(rows[j].header, rows[h].header) != 0; j++) {}
        if (j < h) continue;
        PUT("\n## `%s`\n\n| function | invalid input | returns |\n|---|---|---|\n", rows[h].header);
        for (i = h; i < NROWS; i++) {
            if (strcmp(rows[i].header, rows[h].header) != 0) continue;
            if (rows[i].expected)
                PUT("| `%s` | %s | `%s` (%d) |\n", rows[i].function, rows[i].what, rows[i].code_name, rows[i].expected);
            else
                PUT("| `%s` | %s | as stated |\n", rows[i].function, rows[i].what);
        }
    }
    PUT("\n## Public functions without a row\n\n"
        "Every public function returning an `int` / `int32_t` / `int64_t` has rows above or is here "
        "(`tests/docs/check_docs.py` checks it); functions returning a size, a pointer, a string or "
        "a value without a code have rows only where they state a bad-input answer.\n\n"
        "| header | function | why |\n|---|---|---|\n");
    for (i = 0; i < NNOROWS; i++) PUT("| `%s` | `%s` | %s |\n", no_rows[i].header, no_rows[i].function, no_rows[i].why);
#undef PUT
    return n < cap ? (int)n : -1;
}

static char doc[262144], file_doc[262144];

static void test_document_matches_table(void **state)
{
    FILE *f = fopen("docs/error-contract.md", "rb");
    size_t got;
    int n = markdown(doc, sizeof doc);
    (void)state;
    assert_true(n > 0);
    if (!f) {
        print_error("docs/error-contract.md not found (run from the project root)\n");
        fail();
    }
    got = fread(file_doc, 1, sizeof file_doc - 1, f);
    fclose(f);
    file_doc[got] = 0;
    if (strcmp(doc, file_doc) != 0) {
        print_error("docs/error-contract.md differs from the table: run "
                    "build/host/tests/test_bad_input --markdown docs/error-contract.md\n");
        fail();
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input_table),
        cmocka_unit_test(test_document_matches_table),
    };
    if (argc == 3 && strcmp(argv[1], "--markdown") == 0) {
        FILE *f = fopen(argv[2], "wb");
        int n = markdown(doc, sizeof doc);
        if (!f || n < 0 || fwrite(doc, 1, (size_t)n, f) != (size_t)n) return 1;
        fclose(f);
        printf("wrote %d rows to %s\n", NROWS, argv[2]);
        return 0;
    }
    return cmocka_run_group_tests_name("bad input (the error contract table)", tests, NULL, NULL);
}
