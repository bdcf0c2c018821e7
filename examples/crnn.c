/*
 * crnn.c: a CRNN front end on the GPU, all through rnnc's public API: a
 * spectrogram-like input [B, T, F, 1] (time as the height, frequency as the
 * width, channels last), two conv + bias + ReLU layers (the second halves
 * the frequency axis), whose NHWC output [B, T, F/2, K] is already the
 * sequence [B, T, F/2 * K] of a batch-first model: a 2-layer bidirectional
 * LSTM from rnnc.  Prints the output shape, the time of each stage and the
 * algorithm each convolution ran.  Exits 77 without a GPU or cuDNN.
 */
#include <string.h>
#include <time.h>

#include "example_common.h"

enum { B = 8, T = 256, F = 64, K = 32, H = 256, LAYERS = 2, ITERS = 20 };

typedef struct layer {
    rnnc_conv *c;
    void *w, *bias, *y;
} layer;

/* Random weights U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch's Conv2d. */
static rnnc_status upload_random(int64_t n, float bound, uint64_t *seed, void **dev)
{
    float *h = malloc((size_t)n * sizeof *h);
    if (!h)
        return RNNC_ERR_OUT_OF_MEMORY;
    ex_fill(h, n, bound, seed);
    rnnc_status s = rnnc_device_alloc(0, (size_t)n * sizeof *h, dev);
    if (s == RNNC_OK)
        s = rnnc_device_upload(*dev, h, (size_t)n * sizeof *h);
    free(h);
    return s;
}

/* A 3x3 convolution, padding 1, NHWC, benchmark mode, with its buffers. */
static rnnc_status layer_make(layer *l, int64_t width, int64_t c_in, int64_t stride_w,
                              uint64_t *seed)
{
    rnnc_conv_desc d;
    rnnc_conv_desc_init(&d);
    d.batch = B;
    d.in_channels = c_in;
    d.out_channels = K;
    d.input[0] = T;
    d.input[1] = width;
    d.kernel[0] = d.kernel[1] = 3;
    d.padding[0] = d.padding[1] = 1;
    d.stride[1] = stride_w;
    d.layout = RNNC_CONV_NHWC;
    d.algo_mode = RNNC_CONV_BENCHMARK;
    rnnc_status s = rnnc_conv_create(&l->c, &d);
    int64_t nx, nw, ny;
    if (s == RNNC_OK)
        rnnc_conv_numels(l->c, &nx, &nw, &ny);
    float bound = 1.0f / sqrtf((float)(c_in * 9));
    if (s == RNNC_OK)
        s = upload_random(nw, bound, seed, &l->w);
    if (s == RNNC_OK)
        s = upload_random(K, bound, seed, &l->bias);
    if (s == RNNC_OK)
        s = rnnc_device_alloc(0, (size_t)ny * sizeof(float), &l->y);
    return s;
}

static void layer_free(layer *l)
{
    rnnc_device_free(l->w), rnnc_device_free(l->bias), rnnc_device_free(l->y);
    rnnc_conv_destroy(l->c);
}

static rnnc_status layer_run(rnnc_conv_handle *h, const layer *l, const void *x)
{
    rnnc_conv_epilogue e;
    rnnc_conv_epilogue_init(&e); /* relu(conv + bias) */
    e.bias = l->bias;
    return rnnc_conv_fused(h, l->c, &e, x, l->w, l->y, NULL);
}

/* Mean ms of one call of the layer (after the call that chose). */
static rnnc_status layer_time(rnnc_conv_handle *h, const layer *l, const void *x, double *ms,
                              char *algo, size_t n)
{
    rnnc_status s = layer_run(h, l, x);
    if (s == RNNC_OK)
        snprintf(algo, n, "%s", rnnc_conv_handle_last_algo(h));
    if (s == RNNC_OK)
        s = rnnc_device_sync(NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; s == RNNC_OK && i < ITERS; i++)
        s = layer_run(h, l, x);
    if (s == RNNC_OK)
        s = rnnc_device_sync(NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) /
          ITERS;
    return s;
}

static rnnc_status lstm_make(rnnc_model **m)
{
    rnnc_cell *cell = NULL;
    rnnc_status s = rnnc_cell_builtin(&cell, "lstm", NULL);
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = (F / 2) * K;
    d.hidden_size = H;
    d.num_layers = LAYERS;
    d.bidirectional = true;
    d.batch_first = true;
    if (s == RNNC_OK)
        s = rnnc_model_create(m, &d);
    rnnc_cell_destroy(cell);
    if (s == RNNC_OK)
        s = ex_random_weights(m, 1, H, 7);
    return s;
}

int main(void)
{
    rnnc_conv_handle *h = NULL;
    rnnc_status s = rnnc_conv_handle_create(&h, 0);
    if (s != RNNC_OK) {
        printf("skipped: no GPU or cuDNN here (%s)\n", rnnc_last_error());
        return 77;
    }
    uint64_t seed = 42;
    layer l1 = {0}, l2 = {0};
    void *x = NULL, *y = NULL;
    rnnc_model *lstm = NULL;
    double ms1 = 0, ms2 = 0, ms_lstm = 0;
    char algo1[160] = "", algo2[160] = "";
    int64_t y_n = (int64_t)B * T * 2 * H;
    TRY(upload_random((int64_t)B * T * F, 1.0f, &seed, &x)); /* the spectrogram */
    TRY(layer_make(&l1, F, 1, 1, &seed));
    TRY(layer_make(&l2, F, K, 2, &seed)); /* frequency 64 -> 32 */
    TRY(lstm_make(&lstm));
    TRY(rnnc_device_alloc(0, (size_t)y_n * sizeof(float), &y));
    TRY(layer_time(h, &l1, x, &ms1, algo1, sizeof algo1));
    TRY(layer_time(h, &l2, l1.y, &ms2, algo2, sizeof algo2));
    /* l2.y is [B, T, F/2, K] in NHWC: the batch-first sequence as it lies. */
    rnnc_forward_args a = {.seq_len = T, .batch = B, .x = l2.y, .y = y, .device_pointers = true};
    TRY(rnnc_model_time_forward(lstm, &a, 3, ITERS, &ms_lstm));
    float *host = malloc((size_t)y_n * sizeof *host);
    if (!host) {
        s = RNNC_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    TRY(rnnc_device_download(host, y, (size_t)y_n * sizeof *host));
    printf("input   [%d, %d, %d, 1] (batch, time, frequency, channel), fp32 NHWC\n", B, T, F);
    printf("conv1   3x3 1->%d + bias + relu   %8.4f ms  %s\n", K, ms1, algo1);
    printf("conv2   3x3 %d->%d stride 1x2 + bias + relu   %8.4f ms  %s\n", K, K, ms2, algo2);
    printf("lstm    %d layers, bidirectional, input %d, hidden %d, on %s   %8.4f ms (median)\n",
           LAYERS, (F / 2) * K, H, rnnc_backend_name(rnnc_model_backend(lstm)), ms_lstm);
    printf("output  [%d, %d, %d] (batch, time, 2 x hidden), mean %.6f\n", B, T, 2 * H,
           ex_checksum(host, y_n) / (double)y_n);
    printf("total   %.4f ms\n", ms1 + ms2 + ms_lstm);
    free(host);
fail:
    rnnc_model_destroy(lstm);
    layer_free(&l1), layer_free(&l2);
    rnnc_device_free(x), rnnc_device_free(y);
    rnnc_conv_handle_destroy(h);
    return s == RNNC_OK ? 0 : 1;
}
