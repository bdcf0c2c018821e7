/* test_interp_threads.c: the interpreter splits batch rows over threads
 * (RNNC_THREADS); every output must be bit for bit what one thread gives,
 * for layers, both directions, lengths, batch first, initial states and
 * dropout (between layers and inside the cell) in training, with more
 * threads than rows too. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed;

typedef struct io {
    int64_t T, B, I, H, rows, y_n, s_n;
    float *x, *h0, *c0, *y, *hy, *cy;
    int64_t *len;
} io;

static void io_make(io *b, rnnc_model *m, int64_t T, int64_t B, int64_t I, int64_t H,
                    uint64_t *st)
{
    b->T = T, b->B = B, b->I = I, b->H = H;
    b->rows = 2 * 2; /* layers * directions */
    b->y_n = T * B * 2 * H;
    b->s_n = b->rows * B * H;
    b->x = malloc(sizeof(float) * (size_t)(T * B * I));
    b->h0 = malloc(sizeof(float) * (size_t)b->s_n);
    b->c0 = malloc(sizeof(float) * (size_t)b->s_n);
    b->y = malloc(sizeof(float) * (size_t)b->y_n);
    b->hy = malloc(sizeof(float) * (size_t)b->s_n);
    b->cy = malloc(sizeof(float) * (size_t)b->s_n);
    b->len = malloc(sizeof(int64_t) * (size_t)B);
    assert_true(b->x && b->h0 && b->c0 && b->y && b->hy && b->cy && b->len);
    tu_fill_f32(b->x, (size_t)(T * B * I), st, -1, 1);
    tu_fill_f32(b->h0, (size_t)b->s_n, st, -1, 1);
    tu_fill_f32(b->c0, (size_t)b->s_n, st, -1, 1);
    for (int64_t i = 0; i < B; i++)
        b->len[i] = 1 + (int64_t)(tu_uniform(st, 0, 1) * (double)T) % T;
    (void)m;
}

static void io_free(io *b)
{
    free(b->x), free(b->h0), free(b->c0), free(b->y), free(b->hy), free(b->cy), free(b->len);
}

/* y, hy, cy of one forward with `threads` threads (outputs poisoned first). */
static void forward(rnnc_model *m, io *b, const char *threads, float *y, float *hy, float *cy,
                    bool training)
{
    setenv("RNNC_THREADS", threads, 1);
    tu_poison_f32(y, (size_t)b->y_n);
    tu_poison_f32(hy, (size_t)b->s_n);
    tu_poison_f32(cy, (size_t)b->s_n);
    const void *init[2] = {b->h0, b->c0};
    void *final[2] = {hy, cy};
    rnnc_forward_args a = {.seq_len = b->T, .batch = b->B, .x = b->x, .init = init,
                           .lengths = b->len, .y = y, .final = final, .training = training};
    assert_ok(rnnc_model_forward(m, &a));
    unsetenv("RNNC_THREADS");
}

static void same_bits(const char *cell, int64_t B, bool batch_first, bool training)
{
    uint64_t st = g_seed;
    rnnc_cell *c;
    assert_ok(rnnc_cell_builtin(&c, cell, NULL));
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = c;
    d.input_size = 5;
    d.hidden_size = 6;
    d.num_layers = 2;
    d.bidirectional = true;
    d.batch_first = batch_first;
    d.dropout = training ? 0.3 : 0.0;
    d.seed = 77;
    d.backend = RNNC_BACKEND_INTERP;
    rnnc_model *m;
    assert_ok(rnnc_model_create(&m, &d));
    tu_set_random_weights(m, &st, -0.5, 0.5);
    io b;
    io_make(&b, m, 7, B, 5, 6, &st);
    float *y1 = malloc(sizeof(float) * (size_t)b.y_n), *hy1 = malloc(sizeof(float) * (size_t)b.s_n),
          *cy1 = malloc(sizeof(float) * (size_t)b.s_n);
    assert_true(y1 && hy1 && cy1);
    forward(m, &b, "1", y1, hy1, cy1, training);
    /* A real output, not zeros: every step before a row's length is nonzero
     * (steps past it are zero by PyTorch's packed semantics). */
    int64_t nonzero = 0, live = 0;
    for (int64_t i = 0; i < b.y_n; i++) {
        int64_t t = batch_first ? i / (2 * 6) % 7 : i / (B * 2 * 6);
        int64_t r = batch_first ? i / (7 * 2 * 6) : i / (2 * 6) % B;
        live += t < b.len[r];
        nonzero += t < b.len[r] && y1[i] != 0.0f;
    }
    assert_true(live > 0 && nonzero > live / 2);
    static const char *const counts[] = {"2", "3", "64"};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        forward(m, &b, counts[k], b.y, b.hy, b.cy, training);
        if (memcmp(b.y, y1, sizeof(float) * (size_t)b.y_n) ||
            memcmp(b.hy, hy1, sizeof(float) * (size_t)b.s_n) ||
            memcmp(b.cy, cy1, sizeof(float) * (size_t)b.s_n))
            fail_msg("%s B=%lld%s%s: %s threads differ from one", cell, (long long)B,
                     batch_first ? " batch-first" : "", training ? " training" : "", counts[k]);
    }
    free(y1), free(hy1), free(cy1);
    io_free(&b);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(c);
}

static void lstm_rows(void **state)
{
    (void)state;
    same_bits("lstm", 5, false, false);
    same_bits("lstm", 8, true, false);
    same_bits("lstm", 1, false, false);
}

static void dropout_rows(void **state)
{
    (void)state;
    same_bits("lstm", 5, false, true);         /* between layers */
    same_bits("dropout_lstm", 6, false, true); /* inside the cell */
    same_bits("layernorm_lstm", 4, true, false);
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lstm_rows),
        cmocka_unit_test(dropout_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
