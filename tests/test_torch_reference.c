/*
 * test_torch_reference.c: rnnc against files PyTorch itself wrote
 * (scripts/torch_reference.py, committed in tests/data): nn.LSTM, nn.GRU and
 * nn.RNN state_dicts saved by safetensors.torch, inputs, and PyTorch's
 * outputs computed in float64.  Every available CPU-side backend must give
 * PyTorch's numbers; the `rnnc run` command is checked on one case too, and
 * `rnnc grad --backend interp` on every case against autograd's gradients
 * (<case>.dy and <case>.grad files) within 1e-5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct tcase {
    const char *name, *cell;
    int layers;
    bool bi, batch_first;
    int64_t proj;
    bool no_bias;
} tcase;

static const tcase cases[] = {
    {"lstm_1l", "lstm", 1, false, false, 0, false},
    {"lstm_2l_bi_proj", "lstm", 2, true, false, 3, false},
    {"lstm_bf_lengths", "lstm", 2, true, true, 0, false},
    {"gru_2l_bi", "gru", 2, true, false, 0, false},
    {"rnn_tanh", "rnn_tanh", 1, false, false, 0, false},
    {"rnn_relu", "rnn_relu", 1, false, false, 0, false},
};

/* The gradient files cover the bias=False modules too (--no-bias). */
static const tcase grad_cases[] = {
    {"lstm_1l", "lstm", 1, false, false, 0, false},
    {"lstm_2l_bi_proj", "lstm", 2, true, false, 3, false},
    {"lstm_bf_lengths", "lstm", 2, true, true, 0, false},
    {"gru_2l_bi", "gru", 2, true, false, 0, false},
    {"rnn_tanh", "rnn_tanh", 1, false, false, 0, false},
    {"rnn_relu", "rnn_relu", 1, false, false, 0, false},
    {"lstm_nobias", "lstm", 2, true, false, 0, true},
    {"gru_nobias", "gru", 2, false, false, 0, true},
    {"rnn_tanh_nobias", "rnn_tanh", 1, false, false, 0, true},
};

static char *data_path(const char *name, const char *kind)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s.%s.safetensors", getenv("RNNC_TEST_DATA"), name, kind);
    return buf;
}

static double compare(const rnnc_tensors *io, const char *name, const float *out)
{
    const rnnc_tensor *t = rnnc_tensors_get(io, name);
    assert_non_null(t);
    assert_int_equal(t->dtype, RNNC_F64);
    return tu_rel_err_f32(out, t->data, (size_t)rnnc_tensor_numel(t));
}

static void run_case(const tcase *tc, rnnc_backend be, double tol)
{
    rnnc_tensors *io;
    rnnc_cell *cell;
    rnnc_model *m;
    rnnc_model_desc d;
    assert_ok(rnnc_tensors_load(&io, data_path(tc->name, "io")));
    const rnnc_tensor *x = rnnc_tensors_get(io, "x"), *y = rnnc_tensors_get(io, "y");
    assert_ok(rnnc_cell_builtin(&cell, tc->cell, NULL));
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = x->shape[2];
    d.hidden_size = rnnc_tensors_get(io, "hy")->shape[2];
    if (rnnc_tensors_get(io, "cy"))
        d.hidden_size = rnnc_tensors_get(io, "cy")->shape[2];
    d.proj_size = tc->proj;
    d.num_layers = tc->layers;
    d.bidirectional = tc->bi;
    d.batch_first = tc->batch_first;
    d.backend = be;
    assert_ok(rnnc_model_create(&m, &d));
    assert_ok(rnnc_model_load_weights(m, data_path(tc->name, "weights")));

    int ns = rnnc_cell_state_count(cell);
    const void *init[4] = {0};
    void *final[4] = {0};
    float *outs[4] = {0};
    const char *fin_names[2] = {"hy", "cy"}, *init_names[2] = {"h0", "c0"};
    for (int s = 0; s < ns; s++) {
        const rnnc_tensor *i0 = rnnc_tensors_get(io, init_names[s]);
        init[s] = i0 ? i0->data : NULL;
        const rnnc_tensor *fy = rnnc_tensors_get(io, fin_names[s]);
        outs[s] = malloc(sizeof(float) * (size_t)rnnc_tensor_numel(fy));
        tu_poison_f32(outs[s], (size_t)rnnc_tensor_numel(fy));
        final[s] = outs[s];
    }
    float *yo = malloc(sizeof(float) * (size_t)rnnc_tensor_numel(y));
    tu_poison_f32(yo, (size_t)rnnc_tensor_numel(y));
    const rnnc_tensor *len = rnnc_tensors_get(io, "lengths");
    rnnc_forward_args a = {
        .seq_len = tc->batch_first ? x->shape[1] : x->shape[0],
        .batch = tc->batch_first ? x->shape[0] : x->shape[1],
        .x = x->data, .init = init, .lengths = len ? len->data : NULL,
        .y = yo, .final = final};
    assert_ok(rnnc_model_forward(m, &a));
    double e = compare(io, "y", yo);
    for (int s = 0; s < ns; s++) {
        double es = compare(io, fin_names[s], outs[s]);
        e = es > e ? es : e;
        free(outs[s]);
    }
    printf("%-16s %-7s max rel err vs PyTorch %.3g\n", tc->name, rnnc_backend_name(be), e);
    assert_true(e <= tol);
    free(yo);
    rnnc_model_destroy(m);
    rnnc_cell_destroy(cell);
    rnnc_tensors_destroy(io);
}

static void test_interp(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], RNNC_BACKEND_INTERP, 1e-6); /* fp32 outputs of a float64 run */
}

static void test_cpu(void **st)
{
    (void)st;
    if (!rnnc_backend_available(RNNC_BACKEND_CPU))
        skip();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], RNNC_BACKEND_CPU, 1e-5);
}

/* `rnnc run` on PyTorch's own weights file, output compared to PyTorch's. */
static void test_cli_run(void **st)
{
    (void)st;
    const char *bin = getenv("RNNC_BIN");
    if (!bin)
        skip();
    char *dir = tu_tmpdir(), in[4200], out[4200], cmd[16384];
    rnnc_tensors *io, *inp, *res;
    assert_ok(rnnc_tensors_load(&io, data_path("lstm_2l_bi_proj", "io")));
    assert_ok(rnnc_tensors_create(&inp));
    for (int i = 0; i < rnnc_tensors_count(io); i++) {
        const char *n = rnnc_tensors_name(io, i);
        const rnnc_tensor *t = rnnc_tensors_get(io, n);
        if (strcmp(n, "x") == 0 || strcmp(n, "h0") == 0 || strcmp(n, "c0") == 0)
            assert_ok(rnnc_tensors_add(inp, n, t->dtype, t->rank, t->shape, t->data));
    }
    snprintf(in, sizeof in, "%s/in.safetensors", dir);
    snprintf(out, sizeof out, "%s/out.safetensors", dir);
    assert_ok(rnnc_tensors_save(inp, in));
    snprintf(cmd, sizeof cmd,
             "'%s' run --cell lstm --layers 2 --bidirectional --proj-size 3 --backend interp "
             "--weights '%s' --input '%s' --out '%s'",
             bin, data_path("lstm_2l_bi_proj", "weights"), in, out);
    assert_int_equal(system(cmd), 0);
    assert_ok(rnnc_tensors_load(&res, out));
    const char *names[3] = {"y", "hy", "cy"};
    for (int k = 0; k < 3; k++) {
        const rnnc_tensor *t = rnnc_tensors_get(res, names[k]);
        assert_non_null(t);
        assert_int_equal(t->dtype, RNNC_F32);
        assert_true(compare(io, names[k], t->data) <= 1e-6);
    }
    rnnc_tensors_destroy(res);
    rnnc_tensors_destroy(inp);
    rnnc_tensors_destroy(io);
    tu_rmtree(dir);
    free(dir);
}

/* The input file of `rnnc grad`: x, h0, c0 and lengths of the case. */
static void write_inputs(const rnnc_tensors *io, const char *path)
{
    rnnc_tensors *inp;
    assert_ok(rnnc_tensors_create(&inp));
    for (int i = 0; i < rnnc_tensors_count(io); i++) {
        const char *n = rnnc_tensors_name(io, i);
        const rnnc_tensor *t = rnnc_tensors_get(io, n);
        if (strcmp(n, "y") != 0 && strcmp(n, "hy") != 0 && strcmp(n, "cy") != 0)
            assert_ok(rnnc_tensors_add(inp, n, t->dtype, t->rank, t->shape, t->data));
    }
    assert_ok(rnnc_tensors_save(inp, path));
    rnnc_tensors_destroy(inp);
}

static void grad_case(const tcase *tc, const char *bin, const char *dir)
{
    char in[1024], out[1024], cmd[16384], proj[32] = "", wpath[4096], dpath[4096];
    rnnc_tensors *io, *ref, *res;
    assert_ok(rnnc_tensors_load(&io, data_path(tc->name, "io")));
    assert_ok(rnnc_tensors_load(&ref, data_path(tc->name, "grad")));
    snprintf(in, sizeof in, "%s/%s.in.safetensors", dir, tc->name);
    snprintf(out, sizeof out, "%s/%s.g.safetensors", dir, tc->name);
    write_inputs(io, in);
    /* data_path's buffer is static: one copy per path */
    snprintf(wpath, sizeof wpath, "%s", data_path(tc->name, "weights"));
    snprintf(dpath, sizeof dpath, "%s", data_path(tc->name, "dy"));
    if (tc->proj)
        snprintf(proj, sizeof proj, "--proj-size %lld", (long long)tc->proj);
    snprintf(cmd, sizeof cmd,
             "'%s' grad --cell %s --layers %d %s %s %s %s --backend interp --weights '%s' "
             "--input '%s' --grad-output '%s' --out '%s' > /dev/null",
             bin, tc->cell, tc->layers, tc->bi ? "--bidirectional" : "",
             tc->batch_first ? "--batch-first" : "", tc->no_bias ? "--no-bias" : "", proj,
             wpath, in, dpath, out);
    assert_int_equal(system(cmd), 0);
    assert_ok(rnnc_tensors_load(&res, out));
    assert_int_equal(rnnc_tensors_count(res), rnnc_tensors_count(ref));
    double e = 0;
    for (int i = 0; i < rnnc_tensors_count(ref); i++) {
        const char *n = rnnc_tensors_name(ref, i);
        const rnnc_tensor *t = rnnc_tensors_get(res, n);
        if (!t)
            fail_msg("%s: rnnc grad wrote no '%s'", tc->name, n);
        assert_int_equal(rnnc_tensor_numel(t), rnnc_tensor_numel(rnnc_tensors_get(ref, n)));
        double en = compare(ref, n, t->data);
        if (en > 1e-5)
            fail_msg("%s: gradient of %s: relative error %.3g vs autograd", tc->name, n, en);
        e = en > e ? en : e;
    }
    printf("%-16s grad    max rel err vs autograd %.3g\n", tc->name, e);
    rnnc_tensors_destroy(res);
    rnnc_tensors_destroy(ref);
    rnnc_tensors_destroy(io);
}

/* `rnnc grad` against PyTorch autograd (scripts/torch_reference.py wrote
 * the files, on a machine with PyTorch; they are committed). */
static void test_cli_grad(void **st)
{
    (void)st;
    const char *bin = getenv("RNNC_BIN");
    if (!bin)
        skip();
    char *dir = tu_tmpdir();
    for (size_t i = 0; i < sizeof grad_cases / sizeof grad_cases[0]; i++)
        grad_case(&grad_cases[i], bin, dir);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interp),
        cmocka_unit_test(test_cpu),
        cmocka_unit_test(test_cli_run),
        cmocka_unit_test(test_cli_grad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
