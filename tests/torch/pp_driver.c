/* pp_driver.c — pipeline.h's schedules, lowering and CSV behind a line protocol, for
   tests/torch/check_schedules.py.

       build <schedule name> <ranks> <stages per rank> <microbatches>
           -> "rc <n>" (pp_schedule_build), then when 0: "csv <bytes>" + the compute table
              as pp_csv_write writes it, "rc <n>" (pp_lower_mode PP_LOWER_TORCH) + "csv ..." of
              the lowered plan, and "rc <n>" + "csv ..." of pp_lower's (PP_LOWER_ROUNDS) one
       read <ranks> <stages> <microbatches> <bytes>  + that many bytes of CSV
           -> "rc <n>" (pp_csv_read), then when 0: "validate <rc>", "lowered <0|1>",
              "simulate <rc>" (pp_simulate with unit costs: a deadlock is an error), and
              "csv <bytes>" + pp_csv_write's text of what was read */
#define PIPELINE_IMPLEMENTATION
#define PP_NO_EXECUTOR 1
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP (1 << 22)

static pp_action store[2][CAP / 4];
static char text[CAP];
static uint32_t work[CAP / 4];

static void put_csv(const pp_plan *p)
{
    size_t need = 0;
    int n = pp_csv_write(p, text, sizeof text, &need);
    if (n < 0) {
        printf("csv -1\n");
        return;
    }
    printf("csv %d\n", n);
    fwrite(text, 1, (size_t)n, stdout);
    printf("\n");
}

static void do_build(void)
{
    char name[64];
    int P, V, M, rc, s;
    pp_plan plan, low;
    if (scanf(" %63s %d %d %d", name, &P, &V, &M) != 4) exit(2);
    s = pp_schedule_from_name(name);
    rc = s < 0 ? s : pp_schedule_build(&plan, s, P, V, M, store[0], sizeof store[0], NULL);
    printf("rc %d\n", rc);
    if (rc) return;
    put_csv(&plan);
    rc = pp_lower_mode(&plan, &low, store[1], sizeof store[1], PP_LOWER_TORCH, NULL);
    printf("rc %d\n", rc);
    if (!rc) put_csv(&low);
    rc = pp_lower(&plan, &low, store[1], sizeof store[1], NULL);
    printf("rc %d\n", rc);
    if (!rc) put_csv(&low);
}

static void do_read(void)
{
    int P, S, M, rc;
    size_t n;
    pp_plan plan;
    pp_costs costs;
    pp_sim sim;
    if (scanf(" %d %d %d %zu", &P, &S, &M, &n) != 4 || n >= sizeof text) exit(2);
    getchar(); /* the newline before the bytes */
    if (fread(text, 1, n, stdin) != n) exit(2);
    rc = pp_plan_init(&plan, store[0], sizeof store[0], P, S, M);
    if (!rc) rc = pp_csv_read(&plan, text, n, NULL);
    printf("rc %d\n", rc);
    if (rc) return;
    printf("validate %d\nlowered %d\n", pp_validate(&plan, NULL), (int)plan.lowered);
    memset(&costs, 0, sizeof costs);
    costs.f = costs.b = costs.i = costs.w = 1;
    printf("simulate %d\n", pp_simulate(&plan, &costs, work, sizeof work, &sim, NULL, 0, NULL, NULL));
    put_csv(&plan);
}

int main(void)
{
    char w[16];
    while (scanf(" %15s", w) == 1) {
        if (!strcmp(w, "build"))
            do_build();
        else if (!strcmp(w, "read"))
            do_read();
        else
            return 2;
        fflush(stdout);
    }
    return 0;
}
