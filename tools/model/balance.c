/* balance.c — pp_balance_by_cost for tools/onnx2c.py's pipeline cuts: the exact min-max
   contiguous partition of the nodes' costs into parts, printed as the parts' node counts
   and the largest part's cost.

     balance <parts> <cost of node 0> <cost of node 1> ... */
#include <stdio.h>
#include <stdlib.h>

#include "tools/model/runner.h" /* implemented in tools/model/impl.c */

#define MAX_NODES 4096

static uint32_t cost[MAX_NODES];
static int32_t parts[PP_MAX_RANKS];

int main(int argc, char **argv)
{
    int k, n = argc - 2, np = argc > 1 ? atoi(argv[1]) : 0, rc;
    uint64_t worst = 0;
    if (n < 1 || n > MAX_NODES || np < 1 || np > PP_MAX_RANKS) {
        fprintf(stderr, "usage: balance <parts 1..%d> <cost>... (1..%d costs)\n", PP_MAX_RANKS, MAX_NODES);
        return 2;
    }
    for (k = 0; k < n; k++) cost[k] = (uint32_t)strtoul(argv[k + 2], NULL, 10);
    if ((rc = pp_balance_by_cost(cost, n, np, parts, &worst))) {
        fprintf(stderr, "pp_balance_by_cost: %d (%s)\n", rc, splitcore_strerror(rc));
        return 1;
    }
    for (k = 0; k < np; k++) printf("%s%d", k ? " " : "", (int)parts[k]);
    printf("\n%llu\n", (unsigned long long)worst);
    return 0;
}
