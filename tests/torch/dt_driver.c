/* dt_driver.c — the dtensor modules behind a line protocol, for the differential tests in
   tests/torch/ (tflite_qmul.py, dt_strategies.py, batch_dims.py). One request per line,
   one answer line per request:

       qmul <sa> <nb> <sb x nb> <sy>        floats as the hex of their IEEE bits
           -> "<rc> <mult> <shift> x nb"   dt_qmm_multipliers (0 0 for each on an error)
       qlin <sa> <sb> <sy>                  -> "<rc> <mult> <shift>"   dt_qlinear_multiplier
       prop <op name> <mesh ndim> <mesh shape> <nargs> <arg x nargs>
           an arg: <ndim> <shape> <placement x mesh ndim>, a placement R | S <dim> | P <dt_red>
           -> "<rc> <index> <count> <cost_us %a> <out placements> <each input's placements>"
              (dt_propagate on mesh rank 0, f32; placements written as read)
       graph <n> <node x n>   a node: <op name> <nin> <operand ids> <dim> <dim2> <keepdim>
                              <ndim> <shape x ndim> <scalar>; op names: dt_op_name's and
                              input, param, full, ones_like, threshold_backward,
                              sigmoid_backward, sgd, t (the dt_gop ops)
           -> "<rc> <type> <bd> <placement> x n"   dt_graph_add of every node (rc its error
              if one fails), then dt_graph_analyze
*/
#define SPLITCORE_IMPLEMENTATION
#include "dtensor_quant.h"
#include "dtensor_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64 /* channels */

static long read_long(void)
{
    long v;
    if (scanf(" %li", &v) != 1) exit(2);
    return v;
}

static float read_f32(void)
{
    unsigned long u;
    uint32_t b;
    float f;
    if (scanf(" %lx", &u) != 1) exit(2);
    b = (uint32_t)u;
    memcpy(&f, &b, sizeof f);
    return f;
}

static void do_qmul(void)
{
    float sa = read_f32(), sb[MAXN], sy;
    dt_qmul q[MAXN];
    long i, nb = read_long();
    int rc;
    if (nb < 1 || nb > MAXN) exit(2);
    for (i = 0; i < nb; i++) sb[i] = read_f32();
    sy = read_f32();
    memset(q, 0, sizeof q);
    rc = dt_qmm_multipliers(sa, sb, (int)nb, sy, q);
    printf("%d", rc);
    for (i = 0; i < nb; i++) printf(" %ld %ld", (long)q[i].mult, (long)q[i].shift);
    printf("\n");
}

static void do_qlin(void)
{
    float sa = read_f32(), sb = read_f32(), sy = read_f32();
    dt_qmul q = {0, 0};
    int rc = dt_qlinear_multiplier(sa, sb, sy, &q);
    printf("%d %ld %ld\n", rc, (long)q.mult, (long)q.shift);
}

static dt_placement read_placement(void)
{
    char w[8];
    dt_placement p;
    if (scanf(" %7s", w) != 1) exit(2);
    p.kind = (int16_t)(w[0] == 'S' ? DT_KIND_SHARD : w[0] == 'P' ? DT_KIND_PARTIAL : DT_KIND_REPLICATE);
    p.arg = (int16_t)(w[0] == 'R' ? 0 : read_long());
    return p;
}

static void put_placements(const dt_placement *p, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        if (p[i].kind == DT_KIND_SHARD)
            printf(" S %d", p[i].arg);
        else if (p[i].kind == DT_KIND_PARTIAL)
            printf(" P %d", p[i].arg);
        else
            printf(" R");
    }
}

static void do_prop(void)
{
    static dt_mesh mesh;
    dt_spec specs[DT_MAX_OP_ARGS];
    const dt_spec *args[DT_MAX_OP_ARGS];
    dt_placement pl[DT_MAX_MESH_DIMS];
    dt_op_strategy s;
    int32_t shape[MB_MAX_DIMS];
    char name[32];
    long op, nd, i, k, nargs, ndim;
    int rc = 0;
    if (scanf(" %31s", name) != 1) exit(2);
    for (op = 0; op < DT_ATEN_COUNT && strcmp(dt_op_name((int)op), name); op++) {}
    if (op == DT_ATEN_COUNT) exit(2);
    nd = read_long();
    if (nd < 1 || nd > DT_MAX_MESH_DIMS) exit(2);
    for (i = 0; i < nd; i++) shape[i] = (int32_t)read_long();
    if (dt_mesh_init(&mesh, (int)nd, shape, NULL, 0)) exit(2);
    nargs = read_long();
    if (nargs < 1 || nargs > DT_MAX_OP_ARGS) exit(2);
    for (k = 0; k < nargs; k++) {
        ndim = read_long();
        if (ndim < 0 || ndim > MB_MAX_DIMS) exit(2);
        for (i = 0; i < ndim; i++) shape[i] = (int32_t)read_long();
        for (i = 0; i < nd; i++) pl[i] = read_placement();
        if (!rc) rc = dt_spec_init(&specs[k], &mesh, pl, (int)nd, MB_F32, (int)ndim, shape, NULL);
        args[k] = &specs[k];
    }
    if (!rc) rc = dt_propagate(NULL, (int)op, NULL, args, (int)nargs, &s);
    printf("%d", rc);
    if (!rc) {
        printf(" %d %d %a", s.index, s.count, s.cost_us);
        put_placements(s.out, (int)nd);
        for (k = 0; k < nargs; k++) put_placements(s.in[k], (int)nd);
    }
    printf("\n");
}

/* dt_aten by dt_op_name, or a dt_gop by name; -1 unknown. */
static int op_by_name(const char *name)
{
    static const char *const gops[] = {"input", "param", "full", "ones_like", "threshold_backward", "sigmoid_backward",
                                       "sgd",   "t"};
    static const int gop[] = {DT_G_INPUT,         DT_G_PARAM,       DT_G_FULL, DT_G_ONES_LIKE,
                              DT_G_THRESHOLD_BWD, DT_G_SIGMOID_BWD, DT_G_SGD,  DT_G_T};
    int op;
    for (op = 0; op < DT_ATEN_COUNT; op++)
        if (!strcmp(dt_op_name(op), name)) return op;
    for (op = 0; op < (int)(sizeof gop / sizeof gop[0]); op++)
        if (!strcmp(gops[op], name)) return gop[op];
    return -1;
}

static void do_graph(void)
{
    static dt_gnode nodes[256];
    dt_graph g;
    dt_op_attrs a;
    int32_t in[DT_MAX_OP_ARGS];
    char name[48];
    long n = read_long(), i, k, nin;
    int rc = 0, op;
    if (n < 1 || n > 256 || dt_graph_init(&g, nodes, (int)n)) exit(2);
    for (i = 0; i < n; i++) {
        if (scanf(" %47s", name) != 1 || (op = op_by_name(name)) < 0) exit(2);
        nin = read_long();
        if (nin < 0 || nin > DT_MAX_OP_ARGS) exit(2);
        for (k = 0; k < nin; k++) in[k] = (int32_t)read_long();
        memset(&a, 0, sizeof a);
        a.dim = (int32_t)read_long();
        a.dim2 = (int32_t)read_long();
        a.keepdim = (int32_t)read_long();
        a.ndim = (int32_t)read_long();
        if (a.ndim < 0 || a.ndim > MB_MAX_DIMS) exit(2);
        for (k = 0; k < a.ndim; k++) a.shape[k] = (int32_t)read_long();
        a.scalar = read_f32();
        if (!rc) {
            int id = dt_graph_add(&g, op, &a, in, (int)nin);
            if (id < 0) rc = id;
        }
    }
    if (!rc) rc = dt_graph_analyze(&g);
    printf("%d", rc);
    for (i = 0; !rc && i < n; i++) printf(" %d %d %d", nodes[i].type, nodes[i].bd, nodes[i].placement);
    printf("\n");
}

int main(void)
{
    char w[32];
    while (scanf(" %31s", w) == 1) {
        if (!strcmp(w, "qmul"))
            do_qmul();
        else if (!strcmp(w, "qlin"))
            do_qlin();
        else if (!strcmp(w, "prop"))
            do_prop();
        else if (!strcmp(w, "graph"))
            do_graph();
        else
            return 2;
    }
    return 0;
}
