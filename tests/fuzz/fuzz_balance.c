/* fuzz_balance.c — pipeline.h balance lists and automatic partitioning from untrusted input.

   The input gives a balance list (any int32 values) with (nparts, nlayers, nranks, chunks,
   checkpoint), layer costs and memory sizes (mostly small, sometimes near 2^32) and a part
   count. Checked:
   - pp_balance_check returns exactly the code fairscale's checks give, in their order;
   - pp_balance_by_cost / pp_balance_layers: every part > 0, parts sum to the layer count,
     *max_part is the largest part's cost and equals the optimum a direct O(n^2 p) dynamic
     program finds; bad arguments give an error and leave balance[] untouched;
   - pp_checkpoint_stop and pp_stage_map answer in range. */
#define PIPELINE_IMPLEMENTATION
#define PP_NO_EXECUTOR 1
#include "pipeline.h"
#include "fuzz.h"

#define MAXL 48
#define MAXP 20

/* The optimal min-max contiguous partition cost of w[0..n) into p non-empty parts. */
static uint64_t optimum(const uint64_t *w, int n, int p)
{
    static uint64_t best[MAXP + 1][MAXL + 1];
    uint64_t pre[MAXL + 1];
    int i, j, k;
    pre[0] = 0;
    for (i = 0; i < n; i++) pre[i + 1] = pre[i] + w[i];
    for (i = 1; i <= n; i++) best[1][i] = pre[i];
    for (k = 2; k <= p; k++)
        for (i = k; i <= n; i++) {
            uint64_t b = UINT64_MAX;
            for (j = k - 1; j < i; j++) {
                uint64_t part = pre[i] - pre[j], m = best[k - 1][j] > part ? best[k - 1][j] : part;
                if (m < b) b = m;
            }
            best[k][i] = b;
        }
    return best[p][n];
}

static void check_partition(const int32_t *bal, int nparts, int n, const uint64_t *w, uint64_t max_part, int exact)
{
    int p, i = 0, k;
    uint64_t worst = 0;
    for (p = 0; p < nparts; p++) {
        uint64_t s = 0;
        FUZZ_REQUIRE(bal[p] > 0 && i + bal[p] <= n);
        for (k = 0; k < bal[p]; k++) s += w[i++];
        if (s > worst) worst = s;
    }
    FUZZ_REQUIRE(i == n);
    if (!exact) return;
    FUZZ_REQUIRE(worst == max_part);
    FUZZ_REQUIRE(max_part == optimum(w, n, nparts));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = fz_make(data, size);
    int32_t bal[MAXP], out[MAXL + 1], before[MAXL + 1]; /* out: up to n <= MAXL parts */
    uint32_t cost[MAXL];
    uint64_t w[MAXL], max_part = 0;
    pp_layer layers[MAXL];
    pp_diag diag;
    uint8_t map[PP_MAX_STAGES];
    int nparts = fz_int(&in, MAXP + 1), nlayers = fz_int(&in, 60), nranks = fz_int(&in, 20);
    int chunks = fz_int(&in, 9), ckpt = fz_sint(&in, 8), i, rc, want, by, n, p;
    uint32_t scale;
    int64_t sum = 0;
    /* fairscale's checks, in order */
    for (i = 0; i < MAXP; i++) bal[i] = fz_u8(&in) < 230 ? (int32_t)(fz_u8(&in) % 6u) : fz_int(&in, 8);
    if (nparts <= MAXP) { /* (the caller's array holds nparts entries) */
        for (i = 0; i < nparts; i++) sum += bal[i];
        want = nparts <= 0 || nlayers < 0 ? PP_ERR_ARG : sum != nlayers ? PP_ERR_BALANCE_SUM : PP_OK;
        for (i = 0; want == PP_OK && i < nparts; i++)
            if (bal[i] <= 0) want = PP_ERR_BALANCE_NONPOSITIVE;
        if (want == PP_OK && nparts > nranks) want = PP_ERR_PARTITIONS;
        if (want == PP_OK && chunks <= 0) want = PP_ERR_CHUNKS;
        if (want == PP_OK && (ckpt < PP_CKPT_ALWAYS || ckpt > PP_CKPT_NEVER)) want = PP_ERR_CHECKPOINT;
        rc = pp_balance_check(bal, nparts, nlayers, nranks, chunks, ckpt, &diag);
        FUZZ_REQUIRE(rc == want);
    }
    rc = pp_checkpoint_stop(ckpt, chunks);
    FUZZ_REQUIRE(rc < 0 ? chunks <= 0 || ckpt < 0 || ckpt > 2 : rc <= chunks && rc >= 0);
    /* automatic balance */
    n = (int)(fz_u8(&in) % (MAXL + 1));
    p = fz_int(&in, MAXP + 1);
    by = fz_int(&in, 3);
    scale = fz_u8(&in) < 200 ? fz_u8(&in) % 4u : fz_u32(&in);
    memset(layers, 0, sizeof layers);
    for (i = 0; i < MAXL; i++) {
        uint32_t big = fz_u8(&in) >= 240;
        cost[i] = big ? fz_u32(&in) : fz_u8(&in);
        layers[i].cost = cost[i];
        layers[i].param_bytes = fz_u8(&in) < 240 ? fz_u16(&in) : fz_u32(&in);
        layers[i].act_bytes = fz_u8(&in) < 240 ? fz_u16(&in) : fz_u32(&in);
        w[i] = cost[i];
    }
    memset(out, 0x7b, sizeof out);
    memcpy(before, out, sizeof out);
    rc = pp_balance_by_cost(cost, n, p, out, &max_part);
    if (p > 0 && n > 0 && n >= p) { /* any part count up to the layer count */
        FUZZ_REQUIRE(rc == PP_OK);
        check_partition(out, p, n, w, max_part, p <= MAXP); /* optimum() tabulates <= MAXP parts */
    } else {
        FUZZ_REQUIRE(rc < 0 && memcmp(out, before, sizeof out) == 0);
    }
    if (p > MAXP) return 0; /* the caller's balance[] holds nparts entries */
    memcpy(out, before, sizeof out);
    rc = pp_balance_layers(layers, n, p, by, scale, out, &max_part);
    if (rc < 0) {
        FUZZ_REQUIRE(memcmp(out, before, sizeof out) == 0);
        FUZZ_REQUIRE(p <= 0 || n <= 0 || n < p || (by != PP_BY_COST && by != PP_BY_MEMORY));
        return 0;
    }
    FUZZ_REQUIRE(out[p] == before[p]); /* nothing past nparts */
    for (i = 0; i < n; i++)
        w[i] = by == PP_BY_COST ? layers[i].cost : (uint64_t)layers[i].param_bytes * scale + layers[i].act_bytes;
    /* exact where the weights' sum cannot wrap uint64 */
    check_partition(out, p, n, w, max_part, by == PP_BY_COST || scale < 65536u);
    rc = pp_stage_map(fz_int(&in, 3), fz_int(&in, 20), fz_int(&in, 70), map);
    FUZZ_REQUIRE(rc <= 0 && rc >= PP_ERR_MAP);
    return 0;
}
