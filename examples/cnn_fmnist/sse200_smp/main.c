/* sse200_smp/main.c — `scons cnn` (and `scons demo`), the dual Cortex-M33 half: the int8
   Fashion-MNIST CNN spatially sharded over both Cortex-M33 cores of Arm's SSE-200 (QEMU
   mps2-an521 -smp 2).

   Built by SConstruct (CNN_FIRMWARE) with the start-up, stdio and linker script of
   tests/target/sse200_smp/ and the headers the host run wrote into build/cnn/: the int8
   model (cnn_model.h) and the first 100 test images (cnn_test100.h). CPU n is rank n of a
   pg_shm world (sse200.h hooks: MHU doorbell + WFI) and of a 1-D dtensor mesh of 2; every
   image goes through examples/cnn_fmnist/cnn.h's cnn_forward_sharded (the ranks:
   ../fw_cnn.h, shared with riscv_smp/), the code the host checked against its single-rank
   int8 run: each core convolves its 14 of the 28 rows after a halo exchange with the other, pools its rows (another halo), and adds its partial int32
   logits to the other's (pg all_reduce) before requantization. All integer, so the logits
   must be the host's bit for bit. CPU0 prints `predictions: ...` and `logits fnv-1a: ...`;
   SConstruct compares both lines with the host's. QEMU's exit status is the result.

   Built with FW_COST (`scons bench`, run under -icount shift=0: one instruction is 1 ns of
   guest time, so the cores' clock counts instructions), it measures what bench/m33/main.c
   feeds to its split-work model, each part alone on one core while the other sleeps in
   WFI: on CPU0 the single-rank forward (cnn_forward_ref) of the 100 images; then the 2-core
   run of the demo over a port that forwards every call to pg_shm and logs what each rank
   sent and received; then, rank by rank, each image's cnn_forward_sharded alone on that
   rank's core, its peer's messages put into the pg_shm ring beforehand by the other core
   (the logged payloads, in order) and what it sends taken out afterwards: the rank's
   compute and its own message work, without waiting for its peer. Prints `cost: <name>
   <value>` lines and the 2-core run's predictions (checked against the host's, and its
   logits against the single-rank forward's). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MICROBATCH_IMPLEMENTATION
#define PG_IMPLEMENTATION
#define DTENSOR_IMPLEMENTATION
#define DTENSOR_CONV_IMPLEMENTATION /* conv2d, max pool and int8 conv2d */
#define DTENSOR_QUANT_IMPLEMENTATION
#define DTENSOR_QCONV_IMPLEMENTATION
#include "dtensor_qconv.h"
#define PG_SHM_IMPLEMENTATION
#include "ports/pg_shm.h"
#include "tests/target/sse200_smp/fw_board.h"
#include "examples/cnn_fmnist/cnn.h"
#include "cnn_model.h"
#include "cnn_test100.h"

#define FW_RANKS 2 /* the two cores */
#ifdef FW_COST
#define FW_SLOTS 16 /* one image's messages from the peer, put in before the rank runs */
#else
#define FW_SLOTS 4
#endif
#define fw_rank_hooks fw_hooks
#include "examples/cnn_fmnist/fw_cnn.h"

#ifdef FW_COST
#define COST_MSGS  8192
#define COST_BYTES (512u * 1024u)
/* What one rank sent and received while the 2 cores ran the images: a port that forwards
   every entry to pg_shm (the demo's own) and logs each message (received payloads kept). */
typedef struct cost_msg {
    uint32_t image, peer, tag, bytes, off, sent;
} cost_msg;
typedef struct cost_port {
    pg_shm *shm;
    int record, image;
    uint32_t n, used, first[NIMG + 1]; /* messages; payload bytes; each image's first message */
    cost_msg msg[COST_MSGS];
    unsigned char data[COST_BYTES];
} cost_port;
static cost_port cost_ports[FW_RANKS];
static pg_group cost_groups[FW_RANKS];
static int8_t ref_logits[NIMG][CNN_OUT];
static volatile uint32_t cost_step;

static int cost_log(cost_port *p, int sent, int peer, uint32_t tag, const void *buf, size_t bytes)
{
    cost_msg *m;
    if (!p->record) return 0;
    if (p->n == COST_MSGS || (!sent && p->used + bytes > COST_BYTES)) return PG_ERR_SIZE;
    m = &p->msg[p->n++];
    m->image = (uint32_t)p->image;
    m->peer = (uint32_t)peer;
    m->tag = tag;
    m->bytes = (uint32_t)bytes;
    m->off = p->used;
    m->sent = (uint32_t)sent;
    if (!sent && bytes) {
        memcpy(p->data + p->used, buf, bytes);
        p->used += ((uint32_t)bytes + 3u) & ~3u;
    }
    return 0;
}

static int cost_send(void *port, int dst, uint32_t tag, const void *buf, size_t bytes, uint32_t tmo)
{
    cost_port *p = (cost_port *)port;
    int rc = pg_shm_ops()->send(p->shm, dst, tag, buf, bytes, tmo);
    return rc < 0 ? rc : cost_log(p, 1, dst, tag, buf, bytes) ? PG_ERR_SIZE : rc;
}

static int cost_recv(void *port, int src, uint32_t tag, void *buf, size_t cap, size_t *got, uint32_t tmo)
{
    cost_port *p = (cost_port *)port;
    size_t n = 0;
    int rc = pg_shm_ops()->recv(p->shm, src, tag, buf, cap, &n, tmo);
    if (got) *got = n;
    return rc < 0 ? rc : cost_log(p, 0, src, tag, buf, n) ? PG_ERR_SIZE : rc;
}

static int cost_probe(void *port, int src, uint32_t tag, size_t *bytes)
{
    return pg_shm_ops()->probe(((cost_port *)port)->shm, src, tag, bytes);
}

static int cost_acquire(void *port, int dst, size_t bytes, void **ptr, uint32_t tmo)
{
    return pg_shm_ops()->slot_acquire(((cost_port *)port)->shm, dst, bytes, ptr, tmo);
}

static int cost_commit(void *port, int dst, uint32_t tag, void *ptr, size_t bytes)
{
    cost_port *p = (cost_port *)port;
    return cost_log(p, 1, dst, tag, ptr, bytes) ? PG_ERR_SIZE : pg_shm_ops()->slot_commit(p->shm, dst, tag, ptr, bytes);
}

static int cost_peek(void *port, int src, uint32_t tag, const void **ptr, size_t *bytes, uint32_t tmo)
{
    cost_port *p = (cost_port *)port;
    size_t n = 0;
    int rc = pg_shm_ops()->slot_peek(p->shm, src, tag, ptr, &n, tmo);
    if (bytes) *bytes = n;
    return rc < 0 ? rc : cost_log(p, 0, src, tag, *ptr, n) ? PG_ERR_SIZE : rc;
}

static int cost_release(void *port, int src, const void *ptr)
{
    return pg_shm_ops()->slot_release(((cost_port *)port)->shm, src, ptr);
}

static int cost_abort(void *port, int err)
{
    return pg_shm_ops()->abort(((cost_port *)port)->shm, err);
}

static int cost_recover(void *port)
{
    return pg_shm_ops()->recover(((cost_port *)port)->shm);
}

static int cost_barrier(pg_group *g)
{
    return pg_shm_ops()->barrier(pg_shm_group(((cost_port *)g->port)->shm));
}

static const pg_ops cost_ops = {cost_send,
                                cost_recv,
                                cost_probe,
                                cost_acquire,
                                cost_commit,
                                cost_peek,
                                cost_release,
                                cost_abort,
                                cost_recover,
                                cost_barrier,
                                0,
                                0,
                                0,
                                0,
                                0,
                                0,
                                0,
                                0,
                                0};

/* Rank me's logging port over its pg_shm attachment, a fresh group (collective sequence
   0: the tags of the logged run) and its mesh of 2. */
static int cost_attach(int me, int record)
{
    core_ctx *c = &cores[me];
    cost_port *p = &cost_ports[me];
    int32_t ms[1] = {FW_RANKS};
    int rc;
    p->shm = &c->shm;
    p->record = record;
    if ((rc = pg_group_init(&cost_groups[me], &cost_ops, p, me, FW_RANKS, pg_max_msg(pg_shm_group(&c->shm)))) ||
        (rc = pg_set_timeout(&cost_groups[me], 60000)) || (rc = dt_mesh_init(&c->mesh, 1, ms, NULL, me)))
        return rc;
    return dt_comm_init(&c->comm, &c->mesh, &cost_groups[me]);
}

static unsigned long long cost_instr(uint32_t us0, uint32_t us1)
{
    return (unsigned long long)(us1 - us0) * 1000u; /* 1 instruction per ns */
}

/* CPU `me` waits (asleep) until the step counter reaches `step`. */
static void cost_wait(uint32_t step)
{
    while (cost_step < step) fw_wait();
}

static void cost_post(uint32_t step, int peer)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    cost_step = step;
    fw_notify((unsigned)peer);
}

static int cost_main(int me)
{
    static unsigned char sink[PAYLOAD];
    core_ctx *c = &cores[me];
    cost_port *p = &cost_ports[me];
    pg_shm_hooks h;
    int8_t lg[CNN_OUT];
    int rc, i, r, q = 1 - me;
    uint32_t t0, k, step = 2;
    unsigned long long ref = 0, rank[FW_RANKS] = {0, 0};
    fw_hooks(&h);
    if (me == 0) { /* the single-rank forward alone; CPU1 sleeps */
        t0 = h.now_us(h.ctx);
        for (i = 0; i < NIMG; i++)
            if ((rc = cnn_forward_ref(&model, cnn_test_x[i], ref_logits[i], &c->work))) return rc;
        ref = cost_instr(t0, h.now_us(h.ctx));
        if ((rc = pg_shm_format(region, sizeof region, FW_RANKS, FW_SLOTS, PAYLOAD))) return rc;
        cost_post(1, 1);
    }
    cost_wait(1);
    if ((rc = pg_shm_init(&c->shm, region, sizeof region, me, &h)) || (rc = cost_attach(me, 1))) return rc;
    for (i = 0; i < NIMG; i++) { /* the 2-core run, logged */
        p->image = i;
        p->first[i] = p->n;
        if ((rc = cnn_forward_sharded(&c->comm, &model, cnn_test_x[i], lg, &c->work))) return rc;
        if (me == 0) memcpy(logits[i], lg, sizeof lg);
    }
    p->first[NIMG] = p->n;
    if ((rc = pg_barrier(&cost_groups[me]))) return rc;
    for (r = 0; r < FW_RANKS; r++) { /* rank r alone on its core, its peer's messages already in */
        const cost_port *pr = &cost_ports[r];
        if ((rc = cost_attach(me, 0)) || (rc = pg_barrier(&cost_groups[me]))) return rc;
        for (i = 0; i < NIMG; i++, step += 2) {
            if (me != r) {
                for (k = pr->first[i]; k < pr->first[i + 1]; k++) /* what r received from me */
                    if (!pr->msg[k].sent &&
                        (rc = pg_shm_ops()->send(&c->shm, r, pr->msg[k].tag, pr->data + pr->msg[k].off,
                                                 pr->msg[k].bytes, 0)) < 0)
                        return rc; /* 0: never wait, the ring must hold them */
                cost_post(step, r);
                cost_wait(step + 1);
                for (k = pr->first[i]; k < pr->first[i + 1]; k++) /* what r sent me */
                    if (pr->msg[k].sent &&
                        (rc = pg_shm_ops()->recv(&c->shm, r, pr->msg[k].tag, sink, sizeof sink, NULL, 0)) < 0)
                        return rc;
            } else {
                cost_wait(step);
                t0 = h.now_us(h.ctx);
                if ((rc = cnn_forward_sharded(&c->comm, &model, cnn_test_x[i], lg, &c->work))) return rc;
                rank[r] += cost_instr(t0, h.now_us(h.ctx));
                if (memcmp(lg, logits[i], sizeof lg)) return PG_ERR_MISMATCH; /* as the logged run */
                cost_post(step + 1, q);
            }
        }
        if ((rc = pg_barrier(&cost_groups[me]))) return rc;
    }
    if (me == 1) {
        printf("cost: cnn_rank1_instr %llu\n", rank[1] / NIMG);
        return 0;
    }
    for (i = 0; i < NIMG; i++)
        if (memcmp(logits[i], ref_logits[i], sizeof lg)) return PG_ERR_MISMATCH; /* sharded == single-rank */
    printf("cost: cnn_images %d\ncost: cnn_ref_instr %llu\ncost: cnn_rank0_instr %llu\n", NIMG, ref / NIMG,
           rank[0] / NIMG);
    printf("cost: cnn_messages_per_image %u %u\n", (unsigned)(cost_ports[0].n / NIMG),
           (unsigned)(cost_ports[1].n / NIMG));
    return 0;
}
#define RANK_MAIN cost_main
#else
#define RANK_MAIN rank_main
#endif

void fw_core_main(unsigned cpu)
{
    int rc;
    pg_shm_hooks h;
    uint32_t t0;
    fw_hooks(&h);
    t0 = h.now_us(h.ctx);
    if (cpu == 0)
        printf("cnn_fmnist firmware: int8 conv 1->8 3x3 + ReLU + max pool 2x2 + linear 1568->10, each image's rows "
               "sharded over the %d Cortex-M33 cores of the SSE-200 (pg_shm, QEMU %s, bare metal)\n",
               FW_RANKS, fw_board);
    if ((rc = fw_run_cores(cpu, RANK_MAIN))) fw_exit(rc);
    fw_exit(fw_cnn_report((h.now_us(h.ctx) - t0) / 1000u));
}
