/* microbatch demo: split a batch into microbatches, run a layer per microbatch, merge.
 *
 * A batch of 10 samples (16 features) goes through y = relu(x W + b) one microbatch at a
 * time, the way a pipeline stage sees it. Each microbatch writes straight into its slice
 * of the batch output (the chunk views of the output), so the merge copies nothing; the
 * per-microbatch losses are summed by a custom reducer (PyTorch's sum_reducer). The result
 * is checked against one full-batch run of the same layer. */
#include <stdio.h>
#include <string.h>
#include <math.h>

/* count every byte the library copies, to show the merge is zero-copy */
static size_t bytes_copied;
#define MB_MEMCPY(d, s, n) (bytes_copied += (n), memcpy((d), (s), (n)))
#define MICROBATCH_IMPLEMENTATION
#include "microbatch.h"

#define BATCH  10
#define IN     16
#define OUT    4
#define CHUNKS 4

static float x[BATCH][IN], w[IN][OUT], bias[OUT];
static float y[BATCH][OUT], y_ref[BATCH][OUT];

static uint32_t rng = 12345u;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng % 2001u) / 1000.0f - 1.0f;
}

/* The "stage": y = relu(x W + b) for a view of rows; returns the sum of squares as loss. */
static double layer(const mb_tensor *in, mb_tensor *out)
{
    double loss = 0;
    int32_t r, o, i;
    for (r = 0; r < in->shape[0]; r++)
        for (o = 0; o < OUT; o++) {
            const float *row = (const float *)in->data + (ptrdiff_t)r * in->stride[0];
            float acc = bias[o];
            for (i = 0; i < IN; i++) acc += row[i] * w[i][o];
            acc = acc > 0 ? acc : 0;
            ((float *)out->data)[(ptrdiff_t)r * out->stride[0] + o] = acc;
            loss += (double)acc * acc;
        }
    return loss;
}

static int sum_losses(mb_value *acc, const mb_value *chunk, void *user)
{
    (void)user;
    acc->scalar += chunk->scalar;
    return MB_OK;
}

int main(void)
{
    const int32_t xs[2] = {BATCH, IN}, ys[2] = {BATCH, OUT};
    mb_value args[1], outs[1], in_chunks[CHUNKS], out_chunks[CHUNKS], losses[CHUNKS], loss;
    mb_spec concat = MB_CONCAT(0), reduce = MB_REDUCE_CUSTOM(0);
    mb_reducer sum_reducer;
    mb_tensor full_x, full_y;
    double ref_loss, max_diff = 0;
    size_t copied;
    int n, c, r, o, rc;

    for (r = 0; r < BATCH; r++)
        for (c = 0; c < IN; c++) x[r][c] = frand();
    for (c = 0; c < IN; c++)
        for (o = 0; o < OUT; o++) w[c][o] = frand() * 0.5f;
    for (o = 0; o < OUT; o++) bias[o] = frand() * 0.1f;

    args[0].kind = outs[0].kind = MB_VALUE_TENSOR;
    mb_tensor_init(&args[0].tensor, x, MB_F32, 2, xs);
    mb_tensor_init(&outs[0].tensor, y, MB_F32, 2, ys);

    /* split the inputs, and the output buffer the same way: chunk c writes its rows in place */
    n = mb_split(args, NULL, 1, CHUNKS, MB_BALANCED, in_chunks, CHUNKS, NULL);
    if (n < 0 || mb_split(outs, NULL, 1, CHUNKS, MB_BALANCED, out_chunks, CHUNKS, NULL) != n) {
        printf("split failed: %s\n", mb_strerror(n));
        return 1;
    }
    printf("batch of %d rows split into %d microbatches (torch.tensor_split sizes):\n", BATCH, n);
    for (c = 0; c < n; c++) {
        losses[c].kind = MB_VALUE_SCALAR;
        losses[c].scalar = layer(&in_chunks[c].tensor, &out_chunks[c].tensor);
        printf("  microbatch %d: rows %2ld..%2ld (%d rows) view at x+%ld floats, loss %.4f\n", c,
               (long)(((float *)in_chunks[c].tensor.data - &x[0][0]) / IN),
               (long)(((float *)in_chunks[c].tensor.data - &x[0][0]) / IN + in_chunks[c].tensor.shape[0] - 1),
               (int)in_chunks[c].tensor.shape[0], (long)((float *)in_chunks[c].tensor.data - &x[0][0]),
               losses[c].scalar);
    }

    sum_reducer.fn = sum_losses;
    sum_reducer.init.kind = MB_VALUE_SCALAR;
    sum_reducer.init.scalar = 0.0;
    sum_reducer.user = NULL;
    reduce.reducer = &sum_reducer;
    loss.kind = MB_VALUE_SCALAR;
    rc = mb_merge(out_chunks, n, 1, &concat, 0, outs); /* concat on dim 0 into y */
    copied = bytes_copied;
    if (!rc) rc = mb_merge(losses, n, 1, &reduce, 0, &loss);
    if (rc) {
        printf("merge failed: %s\n", mb_strerror(rc));
        return 1;
    }

    /* the same layer on the whole batch at once */
    mb_tensor_init(&full_x, x, MB_F32, 2, xs);
    mb_tensor_init(&full_y, y_ref, MB_F32, 2, ys);
    ref_loss = layer(&full_x, &full_y);
    for (r = 0; r < BATCH; r++)
        for (o = 0; o < OUT; o++) max_diff = fmax(max_diff, fabs((double)y[r][o] - y_ref[r][o]));

    printf("merged: outputs concatenated in place (%lu bytes copied), loss sum %.4f\n", (unsigned long)copied,
           loss.scalar);
    printf("full batch: loss %.4f, max |y - y_full| = %g\n", ref_loss, max_diff);
    if (max_diff != 0 || copied != 0 || fabs(loss.scalar - ref_loss) > 1e-9 * fabs(ref_loss)) {
        printf("MISMATCH\n");
        return 1;
    }
    printf("microbatched result equals the full-batch result\n");
    return 0;
}
