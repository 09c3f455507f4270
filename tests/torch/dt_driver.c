/* dt_driver.c — the dtensor modules behind a line protocol, for the differential tests in
   tests/torch/ (tflite_qmul.py, dt_strategies.py, batch_dims.py). One request per line,
   one answer line per request:

       qmul <sa> <nb> <sb x nb> <sy>        floats as the hex of their IEEE bits
           -> "<rc> <mult> <shift> x nb"   dt_qmm_multipliers (0 0 for each on an error)
*/
#define SPLITCORE_IMPLEMENTATION
#include "dtensor_quant.h"

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

int main(void)
{
    char w[32];
    while (scanf(" %31s", w) == 1) {
        if (!strcmp(w, "qmul"))
            do_qmul();
        else
            return 2;
    }
    return 0;
}
