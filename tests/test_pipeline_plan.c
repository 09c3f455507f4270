/* tests/test_pipeline_plan.c — pipeline.h planning half: partitions, schedules in PyTorch's
   exact order, lowering, validation, simulation, export/import. No stdio, no malloc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define PP_NO_EXECUTOR 1 /* planning only: the executor (and pg.h's code) is in test_pipeline_exec.c */
#define PIPELINE_IMPLEMENTATION
#include "pipeline.h"

/* ---- golden tables: generated from a faithful Python transcription of torch main's
   torch/distributed/pipelining/schedules.py (functions named per table); '_' = idle ---- */
typedef struct golden {
    const char *name;
    int kind, P, V, M;
    const char *rank[8];
} golden;
static const golden GOLDEN[] = {
    /* gpipe_p4_m8: ScheduleGPipe._get_pipeline_order */
    {"gpipe_p4_m8",
     PP_SCHED_GPIPE,
     4,
     1,
     8,
     {
         "0F0 0F1 0F2 0F3 0F4 0F5 0F6 0F7 _ _ _ _ _ _ _ _ _ 0B0 0B1 0B2 0B3 0B4 0B5 0B6 0B7",
         "_ 1F0 1F1 1F2 1F3 1F4 1F5 1F6 1F7 _ _ _ _ _ _ 1B0 1B1 1B2 1B3 1B4 1B5 1B6 1B7",
         "_ _ 2F0 2F1 2F2 2F3 2F4 2F5 2F6 2F7 _ _ _ 2B0 2B1 2B2 2B3 2B4 2B5 2B6 2B7",
         "_ _ _ 3F0 3F1 3F2 3F3 3F4 3F5 3F6 3F7 3B0 3B1 3B2 3B3 3B4 3B5 3B6 3B7",
     }},
    /* gpipe_p2_m3: ScheduleGPipe._get_pipeline_order */
    {"gpipe_p2_m3",
     PP_SCHED_GPIPE,
     2,
     1,
     3,
     {
         "0F0 0F1 0F2 _ _ _ 0B0 0B1 0B2",
         "_ 1F0 1F1 1F2 1B0 1B1 1B2",
     }},
    /* f1b1_p4_m8: Schedule1F1B._get_pipeline_order (layout) / _step_microbatches (order) */
    {"f1b1_p4_m8",
     PP_SCHED_1F1B,
     4,
     1,
     8,
     {
         "0F0 0F1 0F2 _ _ _ _ _ _ 0F3 0B0 0F4 0B1 0F5 0B2 0F6 0B3 0F7 0B4 _ 0B5 _ 0B6 _ 0B7",
         "_ 1F0 1F1 _ _ _ _ 1F2 1B0 1F3 1B1 1F4 1B2 1F5 1B3 1F6 1B4 1F7 1B5 _ 1B6 _ 1B7",
         "_ _ 2F0 _ _ 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2F6 2B5 2F7 2B6 _ 2B7",
         "_ _ _ 3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5 3F6 3B6 3F7 3B7",
     }},
    /* f1b1_p3_m5: Schedule1F1B._get_pipeline_order (layout) / _step_microbatches (order) */
    {"f1b1_p3_m5",
     PP_SCHED_1F1B,
     3,
     1,
     5,
     {
         "0F0 0F1 _ _ _ _ 0F2 0B0 0F3 0B1 0F4 0B2 _ 0B3 _ 0B4",
         "_ 1F0 _ _ 1F1 1B0 1F2 1B1 1F3 1B2 1F4 1B3 _ 1B4",
         "_ _ 2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3 2F4 2B4",
     }},
    /* bfs_p2_v2_m4: ScheduleLoopedBFS._calculate_single_rank_operations */
    {"bfs_p2_v2_m4",
     PP_SCHED_LOOPED_BFS,
     2,
     2,
     4,
     {
         "0F0 0F1 0F2 0F3 2F0 2F1 2F2 2F3 _ _ 2B3 2B2 2B1 2B0 0B3 0B2 0B1 0B0",
         "_ 1F0 1F1 1F2 1F3 3F0 3F1 3F2 3F3 3B3 3B2 3B1 3B0 1B3 1B2 1B1 1B0",
     }},
    /* bfs_p3_v2_m3: ScheduleLoopedBFS._calculate_single_rank_operations */
    {"bfs_p3_v2_m3",
     PP_SCHED_LOOPED_BFS,
     3,
     2,
     3,
     {
         "0F0 0F1 0F2 3F0 3F1 3F2 _ _ _ _ 3B2 3B1 3B0 0B2 0B1 0B0",
         "_ 1F0 1F1 1F2 4F0 4F1 4F2 _ _ 4B2 4B1 4B0 1B2 1B1 1B0",
         "_ _ 2F0 2F1 2F2 5F0 5F1 5F2 5B2 5B1 5B0 2B2 2B1 2B0",
     }},
    /* il_p2_v2_m4: ScheduleInterleaved1F1B._calculate_single_rank_operations + _get_1f1b_rank_ops */
    {"il_p2_v2_m4",
     PP_SCHED_INTERLEAVED_1F1B,
     2,
     2,
     4,
     {
         "0F0 0F1 2F0 2F1 _ _ 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 _ 2B2 _ 2B3 _ 0B2 _ 0B3",
         "_ 1F0 1F1 _ 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 _ 1B2 _ 1B3",
     }},
    /* il_p4_v2_m8: ScheduleInterleaved1F1B._calculate_single_rank_operations + _get_1f1b_rank_ops */
    {"il_p4_v2_m8",
     PP_SCHED_INTERLEAVED_1F1B,
     4,
     2,
     8,
     {
         "0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 0F4 0F5 _ _ _ _ 0F6 4B0 0F7 4B1 4F4 4B2 4F5 4B3 4F6 0B0 4F7 0B1 _ 0B2 _ 0B3 "
         "_ 4B4 _ 4B5 _ 4B6 _ 4B7 _ 0B4 _ 0B5 _ 0B6 _ 0B7",
         "_ 1F0 1F1 1F2 1F3 5F0 5F1 5F2 5F3 _ _ _ 1F4 5B0 1F5 5B1 1F6 5B2 1F7 5B3 5F4 1B0 5F5 1B1 5F6 1B2 5F7 1B3 _ "
         "5B4 _ 5B5 _ 5B6 _ 5B7 _ 1B4 _ 1B5 _ 1B6 _ 1B7",
         "_ _ 2F0 2F1 2F2 2F3 6F0 6F1 _ _ 6F2 6B0 6F3 6B1 2F4 6B2 2F5 6B3 2F6 2B0 2F7 2B1 6F4 2B2 6F5 2B3 6F6 6B4 6F7 "
         "6B5 _ 6B6 _ 6B7 _ 2B4 _ 2B5 _ 2B6 _ 2B7",
         "_ _ _ 3F0 3F1 3F2 3F3 _ 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 3F4 3B0 3F5 3B1 3F6 3B2 3F7 3B3 7F4 7B4 7F5 7B5 7F6 "
         "7B6 7F7 7B7 _ 3B4 _ 3B5 _ 3B6 _ 3B7",
     }},
    /* il_p4_v2_m6: ScheduleInterleaved1F1B._calculate_single_rank_operations + _get_1f1b_rank_ops */
    {"il_p4_v2_m6",
     PP_SCHED_INTERLEAVED_1F1B,
     4,
     2,
     6,
     {
         "0F0 0F1 0F2 0F3 0F4 0F5 4F0 4F1 4F2 4F3 4F4 4F5 _ _ _ 4B0 _ 4B1 _ 4B2 _ 4B3 _ 4B4 _ 4B5 _ 0B0 _ 0B1 _ 0B2 _ "
         "0B3 _ 0B4 _ 0B5",
         "_ 1F0 1F1 1F2 1F3 1F4 1F5 5F0 5F1 5F2 5F3 _ 5F4 5B0 5F5 5B1 _ 5B2 _ 5B3 _ 5B4 _ 5B5 _ 1B0 _ 1B1 _ 1B2 _ 1B3 "
         "_ 1B4 _ 1B5",
         "_ _ 2F0 2F1 2F2 2F3 2F4 2F5 6F0 6F1 6F2 6B0 6F3 6B1 6F4 6B2 6F5 6B3 _ 6B4 _ 6B5 _ 2B0 _ 2B1 _ 2B2 _ 2B3 _ "
         "2B4 _ 2B5",
         "_ _ _ 3F0 3F1 3F2 3F3 3F4 3F5 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 7F4 7B4 7F5 7B5 _ 3B0 _ 3B1 _ 3B2 _ 3B3 _ 3B4 "
         "_ 3B5",
     }},
    /* il_p2_v3_m4: ScheduleInterleaved1F1B._calculate_single_rank_operations + _get_1f1b_rank_ops */
    {"il_p2_v3_m4",
     PP_SCHED_INTERLEAVED_1F1B,
     2,
     3,
     4,
     {
         "0F0 0F1 2F0 2F1 4F0 4F1 _ _ 0F2 4B0 0F3 4B1 2F2 2B0 2F3 2B1 4F2 0B0 4F3 0B1 _ 4B2 _ 4B3 _ 2B2 _ 2B3 _ 0B2 _ "
         "0B3",
         "_ 1F0 1F1 3F0 3F1 _ 5F0 5B0 5F1 5B1 1F2 3B0 1F3 3B1 3F2 1B0 3F3 1B1 5F2 5B2 5F3 5B3 _ 3B2 _ 3B3 _ 1B2 _ 1B3",
     }},
    /* zb_p2_v2_m4: ScheduleInterleavedZeroBubble (+ _add_bubbles_to_actions) */
    {"zb_p2_v2_m4",
     PP_SCHED_INTERLEAVED_ZB,
     2,
     2,
     4,
     {
         "0F0 0F1 2F0 _ 2F1 2I0 2W0 0F2 2I1 2W1 0F3 0I0 0W0 2F2 0I1 0W1 2F3 2I2 2W2 2I3 2W3 0I2 0W2 0I3 0W3",
         "_ 1F0 1F1 3F0 3I0 3F1 3I1 3W0 1F2 1I0 3W1 1F3 1I1 1W0 3F2 3I2 1W1 3F3 3I3 3W2 1I2 3W3 1I3 1W2 1W3",
     }},
    /* zb_p4_v2_m8: ScheduleInterleavedZeroBubble (+ _add_bubbles_to_actions) */
    {"zb_p4_v2_m8",
     PP_SCHED_INTERLEAVED_ZB,
     4,
     2,
     8,
     {
         "0F0 0F1 0F2 0F3 4F0 4F1 4F2 _ _ _ 4F3 4I0 4W0 0F4 4I1 4W1 0F5 4I2 4W2 0F6 4I3 4W3 0F7 0I0 0W0 4F4 0I1 0W1 "
         "4F5 0I2 0W2 4F6 0I3 0W3 4F7 4I4 4W4 4I5 4W5 4I6 4W6 4I7 4W7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7",
         "_ 1F0 1F1 1F2 1F3 5F0 5F1 _ _ 5F2 5I0 5F3 5I1 5W0 1F4 5I2 5W1 1F5 5I3 5W2 1F6 1I0 5W3 1F7 1I1 1W0 5F4 1I2 "
         "1W1 5F5 1I3 1W2 5F6 5I4 1W3 5F7 5I5 5W4 5I6 5W5 5I7 5W6 1I4 5W7 1I5 1W4 1I6 1W5 1I7 1W6 1W7",
         "_ _ 2F0 2F1 2F2 2F3 6F0 _ 6F1 6I0 6F2 6I1 6F3 6I2 6W0 2F4 6I3 6W1 2F5 2I0 6W2 2F6 2I1 6W3 2F7 2I2 2W0 6F4 "
         "2I3 2W1 6F5 6I4 2W2 6F6 6I5 2W3 6F7 6I6 6W4 6I7 6W5 2I4 6W6 2I5 6W7 2I6 2W4 2I7 2W5 2W6 2W7",
         "_ _ _ 3F0 3F1 3F2 3F3 7F0 7I0 7F1 7I1 7F2 7I2 7F3 7I3 7W0 3F4 3I0 7W1 3F5 3I1 7W2 3F6 3I2 7W3 3F7 3I3 3W0 "
         "7F4 7I4 3W1 7F5 7I5 3W2 7F6 7I6 3W3 7F7 7I7 7W4 3I4 7W5 3I5 7W6 3I6 7W7 3I7 3W4 3W5 3W6 3W7",
     }},
    /* zb_p4_v2_m2: ScheduleInterleavedZeroBubble (+ _add_bubbles_to_actions) */
    {"zb_p4_v2_m2",
     PP_SCHED_INTERLEAVED_ZB,
     4,
     2,
     2,
     {
         "0F0 0F1 _ _ 4F0 4F1 _ _ _ 4I0 4W0 4I1 4W1 0I0 0W0 0I1 0W1",
         "_ 1F0 1F1 _ _ 5F0 5F1 _ _ 5I0 5I1 5W0 1I0 5W1 1I1 1W0 1W1",
         "_ _ 2F0 2F1 _ _ 6F0 _ 6F1 6I0 6I1 2I0 6W0 2I1 6W1 2W0 2W1",
         "_ _ _ 3F0 3F1 _ _ 7F0 7I0 7F1 7I1 3I0 3I1 7W0 7W1 3W0 3W1",
     }},
    /* zbv_p2_m4: ScheduleZBVZeroBubble._calculate_single_rank_operations */
    {"zbv_p2_m4",
     PP_SCHED_ZBV,
     2,
     2,
     4,
     {
         "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1 0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3",
         "_ 1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 2F3 2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3",
     }},
    /* zbv_p4_m8: ScheduleZBVZeroBubble._calculate_single_rank_operations */
    {"zbv_p4_m8",
     PP_SCHED_ZBV,
     4,
     2,
     8,
     {
         "0F0 0F1 0F2 0F3 0F4 0F5 0F6 7F0 7I0 7W0 7F1 7I1 7W1 7F2 7I2 7W2 7F3 7I3 7W3 0F7 0I0 0W0 7F4 7I4 7W4 0I1 0W1 "
         "7F5 7I5 7W5 0I2 0W2 7F6 7I6 7W6 0I3 0W3 7F7 7I7 7W7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7",
         "_ 1F0 1F1 1F2 1F3 1F4 6F0 1F5 6F1 6I0 6W0 6F2 6I1 6W1 6F3 6I2 6W2 1F6 1I0 1W0 6F4 6I3 6W3 1F7 1I1 1W1 6F5 "
         "6I4 6W4 1I2 1W2 6F6 6I5 6W5 1I3 1W3 6F7 6I6 6W6 1I4 6I7 1I5 1W4 1I6 1W5 1I7 1W6 6W7 1W7",
         "_ _ 2F0 2F1 2F2 5F0 2F3 5F1 2F4 5F2 5I0 5W0 5F3 5I1 5W1 2F5 2I0 2W0 5F4 5I2 5W2 2F6 2I1 2W1 5F5 5I3 5W3 2F7 "
         "2I2 2W2 5F6 5I4 5W4 2I3 2W3 5F7 5I5 5W5 2I4 5I6 2I5 5I7 2I6 2W4 2I7 2W5 5W6 5W7 2W6 2W7",
         "_ _ _ 3F0 4F0 3F1 4F1 3F2 4F2 3F3 4F3 4I0 4W0 3F4 3I0 3W0 4F4 4I1 4W1 3F5 3I1 3W1 4F5 4I2 4W2 3F6 3I2 3W2 "
         "4F6 4I3 4W3 3F7 3I3 3W3 4F7 4I4 4W4 3I4 4I5 3I5 4I6 3I6 4I7 3I7 3W4 4W5 4W6 4W7 3W5 3W6 3W7",
     }},
    /* zbv_p3_m2: ScheduleZBVZeroBubble._calculate_single_rank_operations */
    {"zbv_p3_m2",
     PP_SCHED_ZBV,
     3,
     2,
     2,
     {
         "0F0 0F1 _ _ _ 5F0 5I0 5W0 5F1 5I1 5W1 _ _ _ 0I0 0W0 _ _ _ 0I1 0W1 _ _ _ _ _ _ _ _ _",
         "_ 1F0 1F1 _ 4F0 _ 4F1 4I0 4W0 _ 4I1 4W1 _ 1I0 1W0 _ _ _ 1I1 1W1 _ _ _ _ _ _ _ _ _ _ _",
         "_ _ 2F0 3F0 2F1 3F1 _ _ 3I0 3W0 _ 2I0 2W0 _ 3I1 3W1 _ 2I1 2W1 _ _ _ _ _ _ _ _ _ _ _ _ _",
     }},
};
static const golden GOLDEN_LOWERED[] = {
    /* low_il_p2_v2_m4: _add_send_recv(ScheduleInterleaved1F1B(P=2,V=2,M=4)) */
    {"low_il_p2_v2_m4",
     PP_SCHED_INTERLEAVED_1F1B,
     2,
     2,
     4,
     {
         "0F0 0SEND_F0 0F1 0SEND_F1 2RECV_F0 2F0 2SEND_F0 2RECV_F1 2F1 2SEND_F1 2RECV_B0 0F2 0SEND_F2 2B0 2SEND_B0 "
         "2RECV_B1 0F3 0SEND_F3 2RECV_F2 2B1 2SEND_B1 0RECV_B0 2F2 2SEND_F2 2RECV_F3 0B0 0RECV_B1 2F3 2SEND_F3 0B1 "
         "2RECV_B2 2B2 2SEND_B2 2RECV_B3 2B3 2SEND_B3 0RECV_B2 0B2 0RECV_B3 0B3",
         "1RECV_F0 1RECV_F1 1F0 1SEND_F0 3RECV_F0 1F1 1SEND_F1 3RECV_F1 3F0 3B0 3SEND_B0 1RECV_F2 3F1 1RECV_B0 3B1 "
         "3SEND_B1 1RECV_F3 1F2 1SEND_F2 1RECV_B1 1B0 1SEND_B0 3RECV_F2 1F3 1SEND_F3 1B1 1SEND_B1 3RECV_F3 3F2 3B2 "
         "3SEND_B2 3F3 1RECV_B2 3B3 3SEND_B3 1RECV_B3 1B2 1SEND_B2 1B3 1SEND_B3",
     }},
    /* low_zbv_p2_m4: _add_send_recv(ScheduleZBVZeroBubble(P=2,M=4), v mapping) */
    {"low_zbv_p2_m4",
     PP_SCHED_ZBV,
     2,
     2,
     4,
     {
         "0F0 0SEND_F0 0F1 0SEND_F1 0F2 0SEND_F2 3RECV_F0 3F0 3I0 3SEND_B0 3RECV_F1 3W0 3F1 3I1 3SEND_B1 3W1 0RECV_B0 "
         "0F3 0SEND_F3 0I0 3RECV_F2 0W0 3F2 3I2 3SEND_B2 3W2 0RECV_B1 0I1 0W1 3RECV_F3 3F3 3I3 3SEND_B3 3W3 0RECV_B2 "
         "0I2 0W2 0RECV_B3 0I3 0W3",
         "1RECV_F0 1RECV_F1 1F0 1RECV_F2 2F0 2SEND_F0 1F1 2RECV_B0 2F1 2SEND_F1 2I0 2W0 2RECV_B1 1F2 1I0 1SEND_B0 "
         "1RECV_F3 1W0 2F2 2SEND_F2 2I1 2W1 2RECV_B2 1F3 1I1 1SEND_B1 1W1 2F3 2SEND_F3 2I2 2RECV_B3 2W2 1I2 1SEND_B2 "
         "2I3 1I3 1SEND_B3 1W2 2W3 1W3",
     }},
    /* low_1f1b_p3_m4: _add_send_recv(Schedule1F1B(P=3,M=4)) */
    {"low_1f1b_p3_m4",
     PP_SCHED_1F1B,
     3,
     1,
     4,
     {
         "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0F2 0SEND_F2 0B0 0RECV_B1 0F3 0SEND_F3 0B1 0RECV_B2 0B2 0RECV_B3 0B3",
         "1RECV_F0 1RECV_F1 1F0 1SEND_F0 1RECV_B0 1F1 1SEND_F1 1B0 1SEND_B0 1RECV_B1 1RECV_F2 1F2 1SEND_F2 1B1 "
         "1SEND_B1 1RECV_B2 1RECV_F3 1F3 1SEND_F3 1B2 1SEND_B2 1RECV_B3 1B3 1SEND_B3",
         "2RECV_F0 2F0 2B0 2SEND_B0 2RECV_F1 2F1 2B1 2SEND_B1 2RECV_F2 2F2 2B2 2SEND_B2 2RECV_F3 2F3 2B3 2SEND_B3",
     }},
};

#define NGOLD (int)(sizeof GOLDEN / sizeof GOLDEN[0])
#define NLOW  (int)(sizeof GOLDEN_LOWERED / sizeof GOLDEN_LOWERED[0])

static pp_action st_a[4096], st_b[4096], st_c[4096];
static uint32_t work[8192];
static char text[16384];

/* Compare a plan row with a golden row of torch strings ("_" = idle). */
static void expect_row(const pp_plan *p, int r, const char *gold)
{
    const pp_action *row = p->actions + (size_t)r * (size_t)p->cap;
    int i = 0;
    while (*gold) {
        const char *e = gold;
        pp_action a;
        while (*e && *e != ' ') e++;
        if (e - gold == 1 && *gold == '_')
            a = pp__none;
        else
            assert_int_equal(pp_action_parse(gold, (size_t)(e - gold), &a), PP_OK);
        assert_in_range(i, 0, p->len[r] - 1);
        if (!pp__eq(row[i], a)) {
            char got[24], want[24];
            pp_action_format(row[i], got, sizeof got);
            pp_action_format(a, want, sizeof want);
            fail_msg("rank %d step %d: got '%s' want '%s'", r, i, got, want);
        }
        i++;
        gold = *e ? e + 1 : e;
    }
    assert_int_equal(p->len[r], i);
}

static void build(pp_plan *p, int kind, int P, int V, int M, pp_action *st, size_t bytes)
{
    assert_true(pp_plan_bytes(P, V, M) <= bytes);
    assert_int_equal(pp_schedule_build(p, kind, P, V, M, st, bytes, NULL), PP_OK);
}

static void test_golden_schedules(void **state)
{
    int g, r;
    (void)state;
    for (g = 0; g < NGOLD; g++) {
        const golden *G = &GOLDEN[g];
        pp_plan p, low;
        pp_sim sim;
        pp_costs c;
        build(&p, G->kind, G->P, G->V, G->M, st_a, sizeof st_a);
        for (r = 0; r < G->P; r++) expect_row(&p, r, G->rank[r]);
        assert_int_equal(pp_validate(&p, NULL), PP_OK);
        assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, NULL), PP_OK);
        assert_int_equal(pp_validate(&low, NULL), PP_OK);
        memset(&c, 0, sizeof c);
        c.f = 2;
        c.b = 4;
        c.i = 2;
        c.w = 2;
        c.comm = 1;
        assert_int_equal(pp_simulate(&low, &c, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(pp_simulate(&p, &c, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_OK);
    }
}

/* The issue's golden: Schedule1F1B's runtime order, P=4, M=8. */
static void compact(const pp_plan *p, int r, char *out, size_t cap)
{
    const pp_action *row = p->actions + (size_t)r * (size_t)p->cap;
    size_t n = 0;
    int i;
    for (i = 0; i < p->len[r]; i++) {
        char tmp[24];
        int k;
        if (row[i].type == PP_IDLE) continue;
        k = pp_action_format(row[i], tmp, sizeof tmp);
        assert_true(k > 1 && n + (size_t)k + 1 < cap);
        if (n) out[n++] = ' ';
        memcpy(out + n, tmp + 1, (size_t)k - 1); /* drop the stage digit (single stage) */
        n += (size_t)k - 1;
    }
    out[n] = 0;
}

static void test_1f1b_issue_golden(void **state)
{
    pp_plan p;
    char s[256];
    (void)state;
    build(&p, PP_SCHED_1F1B, 4, 1, 8, st_a, sizeof st_a);
    compact(&p, 0, s, sizeof s);
    assert_string_equal(s, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    compact(&p, 3, s, sizeof s);
    assert_string_equal(s, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

static void test_forward_only_and_all_sizes(void **state)
{
    int kind, P, V, M, r;
    pp_plan p, low;
    (void)state;
    build(&p, PP_SCHED_FORWARD_ONLY, 3, 1, 4, st_a, sizeof st_a);
    expect_row(&p, 0, "0F0 0F1 0F2 0F3");
    expect_row(&p, 2, "_ _ 2F0 2F1 2F2 2F3");
    assert_int_equal(pp_validate(&p, NULL), PP_OK);
    assert_int_equal(pp_peak_inflight(&p, 0), 1);
    /* every schedule, many sizes: valid, lowerable, fits pp_plan_bytes */
    for (kind = 1; kind < PP_SCHED_COUNT; kind++)
        for (P = 1; P <= 4; P++)
            for (V = 1; V <= 3; V++)
                for (M = 1; M <= 9; M++) {
                    size_t bytes = pp_plan_bytes(P, V, M);
                    if (pp_schedule_check(kind, P, V, M) != PP_OK) continue;
                    assert_true(bytes <= sizeof st_a);
                    assert_int_equal(pp_schedule_build(&p, kind, P, V, M, st_a, bytes, NULL), PP_OK);
                    assert_int_equal(pp_validate(&p, NULL), PP_OK);
                    assert_int_equal(pp_lower(&p, &low, st_b, bytes, NULL), PP_OK);
                    assert_int_equal(pp_validate(&low, NULL), PP_OK);
                    for (r = 0; r < P; r++) assert_true(pp_peak_inflight(&p, r) >= 1);
                }
}

static void test_lowering_two_rank(void **state)
{
    /* torch test_schedule.py: {0:[0F0,0F1,_,0B0,_,0B1], 1:[_,1F0,1B0,1F1,1B1,_]} */
    static const char csv[] = "0F0,0F1,,0B0,,0B1\r\n,1F0,1B0,1F1,1B1,\r\n";
    pp_plan p, low;
    pp_sim sim;
    pp_costs c;
    int g, r;
    (void)state;
    assert_int_equal(pp_plan_init(&p, st_a, sizeof st_a, 2, 2, 2), PP_OK);
    assert_int_equal(pp_csv_read(&p, csv, sizeof csv - 1, NULL), PP_OK);
    expect_row(&p, 0, "0F0 0F1 _ 0B0 _ 0B1");
    expect_row(&p, 1, "_ 1F0 1B0 1F1 1B1 _");
    assert_int_equal(p.lowered, 0);
    assert_int_equal(pp_validate(&p, NULL), PP_OK);
    assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, NULL), PP_OK);
    expect_row(&low, 0, "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1");
    expect_row(&low, 1, "1RECV_F0 1RECV_F1 1F0 1B0 1SEND_B0 1F1 1B1 1SEND_B1");
    memset(&c, 0, sizeof c);
    c.f = 1;
    c.b = 1;
    assert_int_equal(pp_simulate(&low, &c, work, sizeof work, &sim, NULL, 0, NULL, NULL), PP_OK);
    /* more lowering goldens from the transcription of _add_send_recv */
    for (g = 0; g < NLOW; g++) {
        const golden *G = &GOLDEN_LOWERED[g];
        build(&p, G->kind, G->P, G->V, G->M, st_a, sizeof st_a);
        assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, NULL), PP_OK);
        for (r = 0; r < G->P; r++) expect_row(&low, r, G->rank[r]);
    }
    /* comm actions in a compute-only input are rejected (torch's format check) */
    assert_int_equal(pp_lower(&low, &p, st_c, sizeof st_c, NULL), PP_ERR_ACTION);
}

/* PP_LOWER_TORCH: _PipelineScheduleRuntime._prepare_schedule_with_comms of PyTorch main
   (pytorch/pytorch@00722e64; tests/torch/check_schedules.py compares every schedule over a
   grid): idle slots dropped, UNSHARD / RESHARD and REDUCE_GRAD inserted, then _add_send_recv.
   pp_lower (PP_LOWER_ROUNDS) lets each idle slot take a round: other RECV positions. */
static void test_lower_torch_mode(void **state)
{
    static const char csv[] = "0F0,0F1,,0B0,,0B1\r\n,1F0,1B0,1F1,1B1,\r\n";
    pp_plan p, low;
    size_t bytes;
    (void)state;
    assert_int_equal(pp_plan_init(&p, st_a, sizeof st_a, 2, 2, 2), PP_OK);
    assert_int_equal(pp_csv_read(&p, csv, sizeof csv - 1, NULL), PP_OK);
    assert_int_equal(pp_lower_mode(&p, &low, st_b, sizeof st_b, PP_LOWER_TORCH, NULL), PP_OK);
    expect_row(&low, 0, "0UNSHARD 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0REDUCE_GRAD 0RESHARD");
    expect_row(&low, 1, "1UNSHARD 1RECV_F0 1F0 1RECV_F1 1B0 1SEND_B0 1F1 1B1 1SEND_B1 1REDUCE_GRAD 1RESHARD");
    assert_int_equal(pp_validate(&low, NULL), PP_OK);
    build(&p, PP_SCHED_INTERLEAVED_1F1B, 2, 2, 2, st_a, sizeof st_a);
    assert_int_equal(pp_lower_mode(&p, &low, st_b, sizeof st_b, PP_LOWER_TORCH, NULL), PP_OK);
    expect_row(&low, 0,
               "0UNSHARD 2UNSHARD 0F0 0SEND_F0 2RECV_F0 0F1 0SEND_F1 2RECV_F1 2F0 2SEND_F0 2F1 2SEND_F1 2RECV_B0 2B0 "
               "2SEND_B0 2RECV_B1 2B1 2SEND_B1 2REDUCE_GRAD 2RESHARD 0RECV_B0 0B0 0RECV_B1 0B1 0REDUCE_GRAD 0RESHARD");
    assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, NULL), PP_OK);
    expect_row(
        &low, 0,
        "0F0 0SEND_F0 0F1 0SEND_F1 2RECV_F0 2F0 2SEND_F0 2RECV_F1 2F1 2SEND_F1 2RECV_B0 2B0 2SEND_B0 2RECV_B1 2B1 "
        "2SEND_B1 0RECV_B0 0B0 0RECV_B1 0B1");
    /* more than 3 stages on a rank: stages leave and come back (at most 3 unsharded), within
       pp_plan_bytes, and the plan still validates */
    bytes = pp_plan_bytes(2, 4, 3);
    assert_true(bytes <= sizeof st_a);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_INTERLEAVED_1F1B, 2, 4, 3, st_a, bytes, NULL), PP_OK);
    assert_int_equal(pp_lower_mode(&p, &low, st_b, bytes, PP_LOWER_TORCH, NULL), PP_OK);
    assert_int_equal(pp_validate(&low, NULL), PP_OK);
    assert_int_equal(pp_lower_mode(&p, &low, st_b, sizeof st_b, 2, NULL), PP_ERR_ARG);
    assert_int_equal(pp_lower_mode(&p, &low, st_b, sizeof st_b, -1, NULL), PP_ERR_ARG);
}

static void test_stage_maps(void **state)
{
    uint8_t m[8];
    (void)state;
    assert_int_equal(pp_stage_map(PP_MAP_V, 2, 4, m), PP_OK);
    assert_int_equal(m[0], 0);
    assert_int_equal(m[1], 1);
    assert_int_equal(m[2], 1);
    assert_int_equal(m[3], 0);
    assert_int_equal(pp_stage_map(PP_MAP_V, 3, 6, m), PP_OK);
    assert_memory_equal(m, "\0\1\2\2\1\0", 6);
    assert_int_equal(pp_stage_map(PP_MAP_LOOP, 3, 7, m), PP_OK);
    assert_memory_equal(m, "\0\1\2\0\1\2\0", 7);
    assert_int_equal(pp_stage_map(PP_MAP_V, 2, 5, m), PP_ERR_MAP);
    assert_int_equal(pp_stage_map(7, 2, 4, m), PP_ERR_MAP);
    assert_int_equal(pp_stage_map(PP_MAP_LOOP, 0, 4, m), PP_ERR_ARG);
}

static void test_schedule_errors(void **state)
{
    pp_plan p, keep;
    (void)state;
    memset(&p, 0x5a, sizeof p);
    keep = p;
    assert_int_equal(pp_schedule_build(&p, 99, 4, 1, 8, st_a, sizeof st_a, NULL), PP_ERR_SCHEDULE);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_1F1B, 4, 1, 3, st_a, sizeof st_a, NULL), PP_ERR_MICROBATCHES);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_INTERLEAVED_1F1B, 4, 2, 9, st_a, sizeof st_a, NULL), PP_ERR_ROUNDS);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_INTERLEAVED_ZB, 4, 2, 9, st_a, sizeof st_a, NULL), PP_ERR_ROUNDS);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_ZBV, 2, 3, 4, st_a, sizeof st_a, NULL), PP_ERR_STAGES_PER_RANK);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_GPIPE, 2, 2, 4, st_a, sizeof st_a, NULL), PP_ERR_STAGES_PER_RANK);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_GPIPE, 2, 1, 0, st_a, sizeof st_a, NULL), PP_ERR_ARG);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_GPIPE, 0, 1, 4, st_a, sizeof st_a, NULL), PP_ERR_ARG);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_GPIPE, 2, 1, 4, st_a, 16, NULL), PP_ERR_TOO_SMALL);
    assert_int_equal(pp_schedule_build(&p, PP_SCHED_GPIPE, 2, 1, 4, NULL, 16, NULL), PP_ERR_NULL);
    assert_memory_equal(&p, &keep, sizeof p);
    assert_int_equal(pp_schedule_from_name("interleaved1f1b"), PP_SCHED_INTERLEAVED_1F1B);
    assert_int_equal(pp_schedule_from_name("ZBVZeroBubble"), PP_SCHED_ZBV);
    assert_int_equal(pp_schedule_from_name("gpipe"), PP_SCHED_GPIPE);
    assert_int_equal(pp_schedule_from_name("DualPipeV"), PP_ERR_SCHEDULE);
    assert_string_equal(pp_schedule_name(PP_SCHED_LOOPED_BFS), "LoopedBFS");
    assert_int_equal(pp_plan_bytes(0, 1, 1), 0);
}

/* A custom plan from CSV text, for the validator cases. */
static int plan_from(pp_plan *p, int P, int S, int M, const char *csv)
{
    int rc = pp_plan_init(p, st_c, sizeof st_c, P, S, M);
    if (rc) return rc;
    return pp_csv_read(p, csv, strlen(csv), NULL);
}

static void expect_invalid(pp_plan *p, int err, int rank, int step, const char *act)
{
    pp_diag d;
    char s[24];
    memset(&d, 0, sizeof d);
    assert_int_equal(pp_validate(p, &d), err);
    assert_int_equal(d.rank, rank);
    assert_int_equal(d.step, step);
    pp_action_format(d.action, s, sizeof s);
    assert_string_equal(s, act);
}

static void test_validation_errors(void **state)
{
    pp_plan p;
    pp_diag d;
    (void)state;
    assert_int_equal(plan_from(&p, 2, 2, 2, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"), PP_OK);
    assert_int_equal(pp_validate(&p, &d), PP_OK);
    /* forwarded twice */
    assert_int_equal(plan_from(&p, 2, 2, 2, "0F0,0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"), PP_OK);
    expect_invalid(&p, PP_ERR_DUPLICATE, 0, 1, "0F0");
    /* B before F */
    assert_int_equal(plan_from(&p, 2, 2, 2, "0F0,0B1,0F1,0B0\n1F0,1B0,1F1,1B1\n"), PP_OK);
    expect_invalid(&p, PP_ERR_BACKWARD_BEFORE_FORWARD, 0, 1, "0B1");
    /* I before F */
    assert_int_equal(plan_from(&p, 1, 1, 1, "0I0,0F0,0W0\n"), PP_OK);
    expect_invalid(&p, PP_ERR_BACKWARD_BEFORE_FORWARD, 0, 0, "0I0");
    /* W before I */
    assert_int_equal(plan_from(&p, 1, 1, 1, "0F0,0W0,0I0\n"), PP_OK);
    expect_invalid(&p, PP_ERR_WEIGHT_BEFORE_INPUT, 0, 1, "0W0");
    /* a microbatch never forwarded */
    assert_int_equal(plan_from(&p, 2, 2, 2, "0F0,0B0\n1F0,1B0,1F1,1B1\n"), PP_OK);
    assert_int_equal(pp_validate(&p, &d), PP_ERR_FORWARD_COUNT);
    assert_int_equal(d.stage, 0);
    assert_int_equal(d.expected, 2);
    assert_int_equal(d.got, 1);
    /* backward missing; I without W */
    assert_int_equal(plan_from(&p, 1, 1, 2, "0F0,0F1,0B0\n"), PP_OK);
    assert_int_equal(pp_validate(&p, &d), PP_ERR_BACKWARD_COUNT);
    assert_int_equal(d.got, 1);
    assert_int_equal(plan_from(&p, 1, 1, 1, "0F0,0I0\n"), PP_OK);
    assert_int_equal(pp_validate(&p, &d), PP_ERR_BACKWARD_COUNT);
    /* stage on the wrong rank (map says stage 1 -> rank 1) */
    assert_int_equal(plan_from(&p, 2, 2, 1, "0F0,0B0\n1F0,1B0\n"), PP_OK);
    p.stage_rank[1] = 0;
    expect_invalid(&p, PP_ERR_STAGE_RANK, 1, 0, "1F0");
    /* CSV import itself rejects a stage on two ranks */
    assert_int_equal(plan_from(&p, 2, 2, 1, "0F0,1F0\n1B0\n"), PP_ERR_STAGE_RANK);
    /* out-of-range action (written behind the importer's back) */
    assert_int_equal(plan_from(&p, 1, 1, 1, "0F0,0B0\n"), PP_OK);
    p.actions[1].mb = 5;
    expect_invalid(&p, PP_ERR_ACTION, 0, 1, "0B5");
    p.actions[1].mb = 0;
    p.actions[1].type = 77;
    assert_int_equal(pp_validate(&p, &d), PP_ERR_ACTION);
    /* schedule-level rules re-checked on built plans */
    build(&p, PP_SCHED_1F1B, 2, 1, 4, st_a, sizeof st_a);
    p.nmb = 1;
    assert_int_equal(pp_validate(&p, &d), PP_ERR_MICROBATCHES);
    build(&p, PP_SCHED_INTERLEAVED_1F1B, 2, 2, 4, st_a, sizeof st_a);
    p.nmb = 5;
    assert_int_equal(pp_validate(&p, &d), PP_ERR_ROUNDS);
    build(&p, PP_SCHED_ZBV, 2, 2, 4, st_a, sizeof st_a);
    p.nstages = 2;
    assert_int_equal(pp_validate(&p, &d), PP_ERR_STAGES_PER_RANK);
    /* forward-only plans must have no backward */
    build(&p, PP_SCHED_FORWARD_ONLY, 2, 1, 2, st_a, sizeof st_a);
    assert_int_equal(pp_validate(&p, &d), PP_OK);
    p.actions[0] = pp__act(PP_B, 0, 0);
    p.actions[1] = pp__act(PP_F, 0, 0);
    p.actions[p.len[0]++] = pp__act(PP_F, 0, 1);
    p.actions[0] = pp__act(PP_F, 0, 0);
    p.actions[1] = pp__act(PP_B, 0, 0);
    p.actions[2] = pp__act(PP_F, 0, 1);
    p.len[0] = 3;
    assert_int_equal(pp_validate(&p, &d), PP_ERR_BACKWARD_COUNT);
    assert_int_equal(pp_validate(NULL, &d), PP_ERR_NULL);
}

static void test_simulator(void **state)
{
    pp_plan gp, fb, low;
    pp_sim a, b, l;
    pp_costs c;
    int r;
    (void)state;
    memset(&c, 0, sizeof c);
    c.f = 1;
    c.b = 2;
    build(&gp, PP_SCHED_GPIPE, 4, 1, 8, st_a, sizeof st_a);
    build(&fb, PP_SCHED_1F1B, 4, 1, 8, st_b, sizeof st_b);
    assert_int_equal(pp_simulate(&gp, &c, work, sizeof work, &a, NULL, 0, NULL, NULL), PP_OK);
    assert_int_equal(pp_simulate(&fb, &c, work, sizeof work, &b, NULL, 0, NULL, NULL), PP_OK);
    /* both: (M + P - 1) * (f + b) = 33; busy 8 * 3 = 24 per rank; bubble 1 - 24/33 */
    assert_int_equal(a.makespan, 33);
    assert_int_equal(b.makespan, 33);
    for (r = 0; r < 4; r++) {
        assert_int_equal(a.busy[r], 24);
        assert_int_equal(b.busy[r], 24);
    }
    assert_int_equal(a.bubble_ppm, 1000000 - 24000000 / 33);
    assert_int_equal(b.bubble_ppm, a.bubble_ppm);
    /* the point of 1F1B: peak in-flight activations */
    for (r = 0; r < 4; r++) {
        assert_int_equal(a.peak[r], 8);
        assert_int_equal(b.peak[r], 4 - r);
    }
    /* lowered with free comms: same times; with latency, lowered == unlowered too (values
       cross-checked with an independent Python list-scheduling model) */
    assert_int_equal(pp_lower(&fb, &low, st_c, sizeof st_c, NULL), PP_OK);
    assert_int_equal(pp_simulate(&low, &c, work, sizeof work, &l, NULL, 0, NULL, NULL), PP_OK);
    assert_int_equal(l.makespan, 33);
    c.comm = 1;
    assert_int_equal(pp_simulate(&low, &c, work, sizeof work, &l, NULL, 0, NULL, NULL), PP_OK);
    assert_int_equal(pp_simulate(&fb, &c, work, sizeof work, &b, NULL, 0, NULL, NULL), PP_OK);
    assert_int_equal(l.makespan, b.makespan);
    assert_int_equal(b.makespan, 49); /* 1F1B's coupled steady state pays latency per cycle */
    assert_int_equal(pp_simulate(&gp, &c, work, sizeof work, &a, NULL, 0, NULL, NULL), PP_OK);
    assert_int_equal(a.makespan, 33 + 6); /* GPipe pays it once per hop, F and B */
    /* zero bubble beats 1F1B when F = I = W */
    {
        pp_plan il, zb;
        pp_sim si, sz;
        memset(&c, 0, sizeof c);
        c.f = 2;
        c.b = 4;
        c.i = 2;
        c.w = 2;
        build(&il, PP_SCHED_INTERLEAVED_1F1B, 4, 2, 8, st_a, sizeof st_a);
        build(&zb, PP_SCHED_INTERLEAVED_ZB, 4, 2, 8, st_b, sizeof st_b);
        assert_int_equal(pp_simulate(&il, &c, work, sizeof work, &si, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(pp_simulate(&zb, &c, work, sizeof work, &sz, NULL, 0, NULL, NULL), PP_OK);
        assert_true(sz.makespan < si.makespan);
        assert_true(sz.bubble_ppm < si.bubble_ppm);
    }
    /* shared processing units (costs.cores): rank r on unit r % cores, one action at a time */
    {
        pp_plan fo;
        pp_sim s0, s1, s2, s4;
        pp_event ev[64];
        int n, k;
        memset(&c, 0, sizeof c);
        c.f = 10;
        build(&fo, PP_SCHED_FORWARD_ONLY, 4, 1, 4, st_a, sizeof st_a);
        assert_int_equal(pp_simulate(&fo, &c, work, sizeof work, &s0, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(s0.makespan, (4 + 4 - 1) * 10);
        c.cores = 4; /* one unit per rank: the same */
        assert_int_equal(pp_simulate(&fo, &c, work, sizeof work, &s4, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(s4.makespan, s0.makespan);
        c.cores = 1; /* one unit: every action in turn, never idle */
        assert_int_equal(pp_simulate(&fo, &c, work, sizeof work, &s1, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(s1.makespan, 16 * 10);
        /* ranks 0, 2 on unit 0 and 1, 3 on unit 1; worked by hand: the earliest start first,
           ties to the lower rank: r0 F0..F3 0-40, r1 10-50, r2 40-80, r3 50-90 */
        c.cores = 2;
        assert_int_equal(pp_simulate(&fo, &c, work, sizeof work, &s2, ev, 64, &n, NULL), PP_OK);
        assert_int_equal(s2.makespan, 90);
        assert_int_equal(s2.end[0], 40);
        assert_int_equal(s2.end[1], 50);
        assert_int_equal(s2.end[2], 80);
        assert_int_equal(s2.end[3], 90);
        assert_int_equal(n, 16);
        for (k = 1; k < n; k++) assert_true(ev[k].t_start >= ev[k - 1].t_start); /* time order */
        for (k = 0; k < n; k++)
            if (ev[k].rank == 2 && ev[k].action.mb == 0) assert_int_equal(ev[k].t_start, 40);
        /* training 1F1B: one unit runs the sum of every action's cost; two units at least
           half of it, and never less than with a unit per rank (330) */
        c.b = 20;
        c.cores = 1;
        build(&fb, PP_SCHED_1F1B, 4, 1, 8, st_b, sizeof st_b);
        assert_int_equal(pp_simulate(&fb, &c, work, sizeof work, &s1, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(s1.makespan, 4 * 8 * (10 + 20));
        c.cores = 2;
        assert_int_equal(pp_simulate(&fb, &c, work, sizeof work, &s2, NULL, 0, NULL, NULL), PP_OK);
        assert_true(s2.makespan >= 4 * 8 * (10 + 20) / 2 && s2.makespan < s1.makespan);
        c.cores = 0;
        assert_int_equal(pp_simulate(&fb, &c, work, sizeof work, &s0, NULL, 0, NULL, NULL), PP_OK);
        assert_int_equal(s0.makespan, 330);
    }
    /* too little workspace */
    assert_int_equal(pp_simulate(&gp, &c, work, 8, &a, NULL, 0, NULL, NULL), PP_ERR_TOO_SMALL);
}

static void test_deadlock(void **state)
{
    pp_plan p, low;
    pp_sim s, keep;
    pp_costs c;
    pp_diag d;
    pp_event ev[16];
    char s1[24];
    (void)state;
    memset(&c, 0, sizeof c);
    c.f = 1;
    c.b = 1;
    /* valid per torch's rules, but rank 0 waits for 1B0 while rank 1 waits for 0F1 */
    assert_int_equal(plan_from(&p, 2, 2, 2, "0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n"), PP_OK);
    assert_int_equal(pp_validate(&p, NULL), PP_OK);
    memset(&s, 0x33, sizeof s);
    keep = s;
    memset(ev, 0x44, sizeof ev);
    assert_int_equal(pp_simulate(&p, &c, work, sizeof work, &s, ev, 16, NULL, &d), PP_ERR_DEADLOCK);
    assert_memory_equal(&s, &keep, sizeof s);
    assert_int_equal(ev[0].rank, 0x4444);
    assert_int_equal(d.rank, 0);
    assert_int_equal(d.step, 1);
    pp_action_format(d.action, s1, sizeof s1);
    assert_string_equal(s1, "0B0");
    /* the lowering pass detects it too (torch: "Malformed compute schedule") */
    assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, &d), PP_ERR_DEADLOCK);
    /* a lowered plan missing a send */
    assert_int_equal(plan_from(&p, 2, 2, 1, "0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0\n"), PP_OK);
    assert_int_equal(p.lowered, 1);
    assert_int_equal(pp_simulate(&p, &c, work, sizeof work, &s, NULL, 0, NULL, &d), PP_ERR_DEADLOCK);
    assert_int_equal(d.rank, 0);
    assert_int_equal(d.step, 2);
}

static void test_strings(void **state)
{
    static const char *const ok[] = {"0F0",      "2I1",       "0W3",      "1SEND_F1", "1RECV_B0",     "3B2",
                                     "0SEND_B7", "4RECV_F12", "1UNSHARD", "2RESHARD", "0REDUCE_GRAD", "255F65535"};
    static const char *const bad[] = {"F0",      "0X1",     "0F",   "0F0x", "0UNSHARD1", "256F0",
                                      "0F65536", "0SEND_F", "-1F0", "0 F0", "0SEND_X1",  "(0F0;1B1)OVERLAP_F_B"};
    pp_action a, keep;
    char s[24];
    unsigned i;
    (void)state;
    for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(pp_action_parse(ok[i], strlen(ok[i]), &a), PP_OK);
        assert_int_equal(pp_action_format(a, s, sizeof s), (int)strlen(ok[i]));
        assert_string_equal(s, ok[i]);
    }
    assert_int_equal(pp_action_parse("  3B2 \r", 7, &a), PP_OK);
    assert_int_equal(a.type, PP_B);
    assert_int_equal(a.stage, 3);
    assert_int_equal(a.mb, 2);
    assert_int_equal(pp_action_parse("   ", 3, &a), PP_OK);
    assert_int_equal(a.type, PP_IDLE);
    assert_int_equal(pp_action_format(a, s, sizeof s), 0);
    assert_string_equal(s, "");
    keep = pp__act(PP_W, 9, 9);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a = keep;
        assert_int_equal(pp_action_parse(bad[i], strlen(bad[i]), &a), PP_ERR_PARSE);
        assert_true(pp__eq(a, keep));
    }
    memcpy(s, "xxxx", 5);
    assert_int_equal(pp_action_format(pp__act(PP_SEND_F, 1, 1), s, 4), PP_ERR_TOO_SMALL);
    assert_string_equal(s, "xxxx");
    assert_int_equal(pp_action_format(pp__act(99, 1, 1), s, sizeof s), PP_ERR_ACTION);
    assert_int_equal(pp_action_parse(NULL, 1, &a), PP_ERR_NULL);
    assert_string_equal(pp_strerror(PP_ERR_DEADLOCK), "schedule is not progressing (deadlock)");
    assert_string_equal(pp_strerror(12345), "unknown error");
}

static void test_csv_roundtrip(void **state)
{
    pp_plan p, q, low;
    size_t need = 0;
    int n, r, i;
    pp_diag d;
    (void)state;
    build(&p, PP_SCHED_ZBV, 2, 2, 4, st_a, sizeof st_a);
    assert_int_equal(pp_csv_write(&p, NULL, 0, &need), PP_OK);
    n = pp_csv_write(&p, text, sizeof text, NULL);
    assert_int_equal((size_t)n + 1, need);
    /* torch's layout: rank rows, "" for None, \r\n */
    assert_true(strncmp(text, "0F0,0F1,0F2,3F0,3I0,3W0,", 24) == 0);
    assert_true(strncmp(strstr(text, "\r\n") + 2, ",1F0,2F0,", 9) == 0);
    assert_int_equal(pp_plan_init(&q, st_b, sizeof st_b, 2, 4, 4), PP_OK);
    assert_int_equal(pp_csv_read(&q, text, (size_t)n, NULL), PP_OK);
    for (r = 0; r < 2; r++) {
        assert_int_equal(q.len[r], p.len[r]);
        for (i = 0; i < p.len[r]; i++) assert_true(pp__eq(q.actions[r * q.cap + i], p.actions[r * p.cap + i]));
    }
    assert_memory_equal(q.stage_rank, "\0\1\1\0", 4); /* inferred "v" map */
    q.schedule = PP_SCHED_ZBV;
    assert_int_equal(pp_validate(&q, NULL), PP_OK);
    /* lowered CSV (torch's compute_comms format) round-trips too */
    assert_int_equal(pp_lower(&p, &low, st_c, sizeof st_c, NULL), PP_OK);
    n = pp_csv_write(&low, text, sizeof text, NULL);
    assert_true(n > 0);
    assert_int_equal(pp_plan_init(&q, st_b, sizeof st_b, 2, 4, 4), PP_OK);
    assert_int_equal(pp_csv_read(&q, text, (size_t)n, NULL), PP_OK);
    assert_int_equal(q.lowered, 1);
    for (r = 0; r < 2; r++) {
        assert_int_equal(q.len[r], low.len[r]);
        for (i = 0; i < low.len[r]; i++) assert_true(pp__eq(q.actions[r * q.cap + i], low.actions[r * low.cap + i]));
    }
    /* too small: untouched */
    memset(text, 'z', 8);
    assert_int_equal(pp_csv_write(&p, text, 8, &need), PP_ERR_TOO_SMALL);
    assert_int_equal(text[0], 'z');
    /* errors: wrong row count, bad cell, out-of-range microbatch; plan untouched */
    assert_int_equal(pp_plan_init(&q, st_b, sizeof st_b, 2, 2, 2), PP_OK);
    assert_int_equal(pp_csv_read(&q, "0F0\n1F0\n1F1\n", 12, &d), PP_ERR_RANKS);
    assert_int_equal(pp_csv_read(&q, "0F0\n", 4, &d), PP_ERR_RANKS);
    assert_int_equal(pp_csv_read(&q, "0F0,0Q1\n1F0\n", 12, &d), PP_ERR_PARSE);
    assert_int_equal(d.rank, 0);
    assert_int_equal(d.step, 1);
    assert_int_equal(pp_csv_read(&q, "0F0,0F2\n1F0\n", 12, &d), PP_ERR_ACTION);
    assert_int_equal(q.len[0], 0);
    assert_int_equal(q.len[1], 0);
    /* an empty rank row is a blank line */
    assert_int_equal(pp_csv_read(&q, "\r\n1F0\r\n", 7, &d), PP_OK);
    assert_int_equal(q.len[0], 0);
    assert_int_equal(q.len[1], 1);
}

static void test_emit_c(void **state)
{
    pp_plan p, low;
    size_t need = 0;
    int n;
    (void)state;
    build(&p, PP_SCHED_1F1B, 2, 1, 2, st_a, sizeof st_a);
    assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, NULL), PP_OK);
    assert_int_equal(pp_emit_c(&low, "my_plan", NULL, 0, &need), PP_OK);
    n = pp_emit_c(&low, "my_plan", text, sizeof text, NULL);
    assert_int_equal((size_t)n + 1, need);
    assert_non_null(strstr(text, "/* splitcore pipeline plan: 1F1B, 2 ranks, 2 stages, 2 microbatches, lowered */"));
    assert_non_null(strstr(text, "#include <splitcore/pipeline.h>"));
    assert_non_null(strstr(
        text, "static const pp_action my_plan_r0[8] = {\n    PP_ACTION(PP_F, 0, 0), PP_ACTION(PP_SEND_F, 0, 0),"));
    assert_non_null(strstr(text, "static const pp_action my_plan_r1[8] = {\n    PP_ACTION(PP_RECV_F, 1, 0),"));
    assert_non_null(strstr(text, "static const uint8_t my_plan_stage_rank[2] = {0, 1};"));
    assert_non_null(strstr(text,
                           "const pp_table my_plan[2] = {\n    {my_plan_r0, 8, 0, 2, 2, 2, 2, my_plan_stage_rank, 0},\n"
                           "    {my_plan_r1, 8, 1, 2, 2, 2, 1, my_plan_stage_rank, 0},\n};\n"));
    /* not proven: a PP_NO_TAKEIN build stops */
    assert_non_null(strstr(text, "#if PP_NO_TAKEIN\n#error \"my_plan: not proven to run without take-in"));
    assert_null(strstr(text, "MAILBOX_DEPTH"));
    /* proven (1F1B needs one transfer of room per pair): the depth and its check */
    assert_int_equal(pp_mailbox_depth(&low, 4, st_c, sizeof st_c, NULL), 1);
    assert_int_equal(low.mailbox, 2);
    n = pp_emit_c(&low, "my_plan", text, sizeof text, NULL);
    assert_true(n > 0);
    assert_non_null(strstr(text, "#define my_plan_MAILBOX_DEPTH 1\n#if PP_NO_TAKEIN && PP_MAILBOX_SLOTS < 1\n"
                                 "#error \"my_plan: PP_MAILBOX_SLOTS is below"));
    assert_non_null(strstr(text, "{my_plan_r1, 8, 1, 2, 2, 2, 1, my_plan_stage_rank, 2},\n};\n"));
    assert_null(strstr(text, "not proven"));
    assert_int_equal(pp_emit_c(&low, "9bad", text, sizeof text, NULL), PP_ERR_ARG);
    assert_int_equal(pp_emit_c(&low, "my plan", text, sizeof text, NULL), PP_ERR_ARG);
    {
        pp_table t;
        assert_int_equal(pp_plan_table(&low, 1, &t), PP_OK);
        assert_int_equal(t.len, 8);
        assert_int_equal(t.slots, 1);
        assert_int_equal(t.rank, 1);
        assert_int_equal(t.mailbox, 2);
        /* a rank past the plan's (a world with more ranks than stages): an empty table */
        assert_int_equal(pp_plan_table(&low, 2, &t), PP_OK);
        assert_int_equal(t.len, 0);
        assert_int_equal(t.slots, 0);
        assert_int_equal(t.rank, 2);
        assert_int_equal(t.nranks, 2);
        assert_int_equal(pp_plan_table(&low, PP_MAX_RANKS, &t), PP_ERR_ARG);
        assert_int_equal(pp_plan_table(&low, -1, &t), PP_ERR_ARG);
    }
}

/* pp_mailbox_depth: the depth each schedule needs when no rank takes in early messages. */
static void test_mailbox_depth(void **state)
{
    static const struct {
        int kind, P, V, M, depth;
    } C[] = {
        {PP_SCHED_FORWARD_ONLY, 4, 1, 8, 0},
        {PP_SCHED_GPIPE, 4, 1, 8, 0},
        {PP_SCHED_1F1B, 4, 1, 8, 1},
        {PP_SCHED_1F1B, 4, 1, 32, 1},
        {PP_SCHED_INTERLEAVED_1F1B, 2, 2, 16, 2},
        {PP_SCHED_INTERLEAVED_ZB, 2, 2, 32, 2},
        {PP_SCHED_ZBV, 2, 2, 16, 2},
        {PP_SCHED_LOOPED_BFS, 2, 2, 16, 8},
        {PP_SCHED_LOOPED_BFS, 2, 2, 32, 16},
    };
    static uint32_t work[6 * 4 * 32];
    const pp_action f0 = PP_ACTION(PP_F, 0, 0), f1 = PP_ACTION(PP_F, 1, 0);
    pp_plan p, low;
    pp_diag d;
    int i;
    (void)state;
    for (i = 0; i < (int)(sizeof C / sizeof C[0]); i++) {
        build(&p, C[i].kind, C[i].P, C[i].V, C[i].M, st_a, sizeof st_a);
        assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, NULL), PP_OK);
        assert_int_equal(low.mailbox, 0);
        assert_true(pp_sim_bytes(&low) <= sizeof work);
        if (C[i].depth) { /* one less is refused, naming a waiting rank; the plan unchanged */
            memset(&d, 0xff, sizeof d);
            assert_int_equal(pp_mailbox_depth(&low, C[i].depth - 1, work, sizeof work, &d), PP_ERR_MAILBOX);
            assert_true(d.rank >= 0 && d.rank < C[i].P && d.step >= 0 && d.step < low.len[d.rank]);
            assert_int_equal(low.mailbox, 0);
        }
        assert_int_equal(pp_mailbox_depth(&low, 254, work, sizeof work, NULL), C[i].depth);
        assert_int_equal(low.mailbox, C[i].depth + 1);
        assert_int_equal(pp_mailbox_depth(&low, C[i].depth, work, sizeof work, NULL), C[i].depth);
    }
    /* LoopedBFS on 2 ranks: every forward goes ahead of its receives; rank 0 waits in a SEND_F */
    build(&p, PP_SCHED_LOOPED_BFS, 2, 2, 16, st_a, sizeof st_a);
    assert_int_equal(pp_lower(&p, &low, st_b, sizeof st_b, NULL), PP_OK);
    assert_int_equal(pp_mailbox_depth(&low, 4, work, sizeof work, &d), PP_ERR_MAILBOX);
    assert_int_equal(low.actions[d.rank * low.cap + d.step].type, d.action.type);
    /* a receive nobody sends: no depth helps */
    assert_int_equal(pp_plan_init(&p, st_a, sizeof st_a, 2, 2, 1), PP_OK);
    p.actions[0] = f0;
    p.actions[p.cap] = f1;
    p.len[0] = p.len[1] = 1;
    p.lowered = 1;
    assert_int_equal(pp_mailbox_depth(&p, 254, work, sizeof work, &d), PP_ERR_DEADLOCK);
    assert_int_equal(d.rank, 1);
    assert_int_equal(p.mailbox, 0);
}

static void test_timeline_and_trace(void **state)
{
    pp_plan p;
    pp_costs c;
    pp_sim s;
    pp_event ev[64];
    int nev = 0, n;
    (void)state;
    build(&p, PP_SCHED_GPIPE, 2, 1, 2, st_a, sizeof st_a);
    n = pp_timeline(&p, text, sizeof text, NULL);
    assert_int_equal(n, (int)strlen(text));
    assert_string_equal(text, "r0 | 0F0 0F1 .   .   .   0B0 0B1\n"
                              "r1 | .   1F0 1F1 1B0 1B1\n");
    memset(&c, 0, sizeof c);
    c.f = 10;
    c.b = 20;
    assert_int_equal(pp_simulate(&p, &c, work, sizeof work, &s, ev, 4, &nev, NULL), PP_ERR_TOO_SMALL);
    assert_int_equal(pp_simulate(&p, &c, work, sizeof work, &s, ev, 64, &nev, NULL), PP_OK);
    assert_int_equal(nev, 8);
    assert_int_equal(s.makespan, 90);
    n = pp_trace_json(ev, nev, text, sizeof text, NULL);
    assert_true(n > 0);
    assert_true(strncmp(text,
                        "{\"traceEvents\":[\n{\"name\":\"0F0\",\"cat\":\"computation\",\"ph\":\"X\","
                        "\"pid\":0,\"tid\":0,\"ts\":0,\"dur\":10}",
                        87) == 0);
    assert_non_null(strstr(
        text, "{\"name\":\"1B0\",\"cat\":\"computation\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":30,\"dur\":20}"));
    assert_non_null(strstr(text, "\n]}\n"));
}

/* ---- balance ---- */
static uint32_t lcg_state = 12345u;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state >> 8;
}

/* min over all compositions of n into k positive parts of the max part sum */
static uint64_t brute(const uint32_t *c, int n, int k)
{
    uint64_t best = UINT64_MAX;
    unsigned mask;
    for (mask = 0; mask < (1u << (n - 1)); mask++) { /* bit i set: cut after layer i */
        int cuts = 0, i;
        uint64_t s = 0, mx = 0;
        for (i = 0; i < n - 1; i++) cuts += (int)((mask >> i) & 1u);
        if (cuts != k - 1) continue;
        for (i = 0; i < n; i++) {
            s += c[i];
            if (i == n - 1 || ((mask >> i) & 1u)) {
                if (s > mx) mx = s;
                s = 0;
            }
        }
        if (mx < best) best = mx;
    }
    return best;
}

static void test_balance(void **state)
{
    int32_t bal[16], keep[16];
    uint32_t cost[12];
    uint64_t mx;
    pp_diag d;
    int t, i;
    (void)state;
    bal[0] = 2;
    bal[1] = 3;
    assert_int_equal(pp_balance_check(bal, 2, 5, 2, 4, PP_CKPT_EXCEPT_LAST, &d), PP_OK);
    assert_int_equal(pp_balance_check(bal, 2, 6, 2, 4, PP_CKPT_ALWAYS, &d), PP_ERR_BALANCE_SUM);
    assert_int_equal(d.expected, 6);
    assert_int_equal(d.got, 5);
    bal[0] = 0;
    bal[1] = 5;
    assert_int_equal(pp_balance_check(bal, 2, 5, 2, 4, PP_CKPT_ALWAYS, &d), PP_ERR_BALANCE_NONPOSITIVE);
    assert_int_equal(d.step, 0);
    bal[0] = 2;
    bal[1] = 3;
    assert_int_equal(pp_balance_check(bal, 2, 5, 1, 4, PP_CKPT_ALWAYS, &d), PP_ERR_PARTITIONS);
    assert_int_equal(pp_balance_check(bal, 2, 5, 2, 0, PP_CKPT_ALWAYS, &d), PP_ERR_CHUNKS);
    assert_int_equal(pp_balance_check(bal, 2, 5, 2, 4, 3, &d), PP_ERR_CHECKPOINT);
    assert_int_equal(pp_balance_check(NULL, 2, 5, 2, 4, 0, &d), PP_ERR_NULL);
    assert_int_equal(pp_checkpoint_stop(PP_CKPT_ALWAYS, 4), 4);
    assert_int_equal(pp_checkpoint_stop(PP_CKPT_EXCEPT_LAST, 4), 3);
    assert_int_equal(pp_checkpoint_stop(PP_CKPT_NEVER, 4), 0);
    assert_int_equal(pp_checkpoint_stop(5, 4), PP_ERR_CHECKPOINT);
    /* a known case */
    for (i = 0; i < 9; i++) cost[i] = (uint32_t)(i + 1);
    assert_int_equal(pp_balance_by_cost(cost, 9, 3, bal, &mx), PP_OK);
    assert_int_equal(mx, 17);
    assert_int_equal(bal[0], 5);
    assert_int_equal(bal[1], 2);
    assert_int_equal(bal[2], 2);
    /* errors leave the output alone */
    memcpy(keep, bal, sizeof keep);
    assert_int_equal(pp_balance_by_cost(cost, 2, 3, bal, &mx), PP_ERR_LAYERS);
    assert_int_equal(pp_balance_by_cost(cost, 9, 0, bal, &mx), PP_ERR_ARG);
    assert_memory_equal(bal, keep, sizeof keep);
    /* random cases against brute force: optimal, valid, deterministic */
    for (t = 0; t < 300; t++) {
        int n = 1 + (int)(lcg() % 11), k = 1 + (int)(lcg() % (unsigned)n), sum = 0;
        uint64_t worst = 0, s = 0;
        for (i = 0; i < n; i++) cost[i] = lcg() % (t % 3 ? 100u : 4u);
        assert_int_equal(pp_balance_by_cost(cost, n, k, bal, &mx), PP_OK);
        assert_int_equal(mx, brute(cost, n, k));
        for (i = 0; i < k; i++) {
            int j;
            assert_true(bal[i] > 0);
            s = 0;
            for (j = sum; j < sum + bal[i]; j++) s += cost[j];
            if (s > worst) worst = s;
            sum += bal[i];
        }
        assert_int_equal(sum, n);
        assert_int_equal(worst, mx);
        assert_int_equal(pp_balance_check(bal, k, n, k, 1, PP_CKPT_NEVER, NULL), PP_OK);
    }
    /* by memory over layers */
    {
        pp_layer L[4];
        memset(L, 0, sizeof L);
        L[0].param_bytes = 100;
        L[1].param_bytes = 10;
        L[2].param_bytes = 10;
        L[3].act_bytes = 90;
        L[0].cost = 1;
        L[1].cost = 1;
        L[2].cost = 1;
        L[3].cost = 1;
        assert_int_equal(pp_balance_layers(L, 4, 2, PP_BY_MEMORY, 2, bal, &mx), PP_OK);
        assert_int_equal(mx, 200);
        assert_int_equal(bal[0], 1);
        assert_int_equal(bal[1], 3);
        assert_int_equal(pp_balance_layers(L, 4, 2, PP_BY_COST, 2, bal, &mx), PP_OK);
        assert_int_equal(mx, 2);
        assert_int_equal(bal[0], 2);
        assert_int_equal(bal[1], 2);
        assert_int_equal(pp_balance_layers(L, 4, 2, 7, 2, bal, &mx), PP_ERR_ARG);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_schedules),
        cmocka_unit_test(test_1f1b_issue_golden),
        cmocka_unit_test(test_forward_only_and_all_sizes),
        cmocka_unit_test(test_lowering_two_rank),
        cmocka_unit_test(test_lower_torch_mode),
        cmocka_unit_test(test_stage_maps),
        cmocka_unit_test(test_schedule_errors),
        cmocka_unit_test(test_validation_errors),
        cmocka_unit_test(test_simulator),
        cmocka_unit_test(test_deadlock),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_csv_roundtrip),
        cmocka_unit_test(test_emit_c),
        cmocka_unit_test(test_mailbox_depth),
        cmocka_unit_test(test_timeline_and_trace),
        cmocka_unit_test(test_balance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
