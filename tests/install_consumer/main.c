/*
 * main.c: the smallest user of an installed rnnc: prints the library's
 * version and the text of the built-in lstm, and runs one short forward on
 * the interpreter, which needs no device, so the link is proven by use.
 */
#include <stdio.h>

#include <rnnc.h>

static int fail(const char *what, rnnc_status s)
{
    fprintf(stderr, "%s: %s: %s\n", what, rnnc_status_string(s), rnnc_last_error());
    return 1;
}

/* T=2, B=1, I=H=1 with every weight 0.5: y must be finite and nonzero. */
static int tiny_forward(const rnnc_cell *cell)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = 1;
    d.hidden_size = 1;
    d.backend = RNNC_BACKEND_INTERP;
    rnnc_model *m;
    rnnc_status s = rnnc_model_create(&m, &d);
    if (s != RNNC_OK)
        return fail("rnnc_model_create", s);
    const float w[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    const char *names[] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"};
    for (int i = 0; i < 4 && s == RNNC_OK; i++)
        s = rnnc_model_set_weight(m, names[i], w, 4);
    float x[2] = {1.0f, -1.0f}, y[2] = {0, 0};
    rnnc_forward_args a = {.seq_len = 2, .batch = 1, .x = x, .y = y};
    if (s == RNNC_OK)
        s = rnnc_model_forward(m, &a);
    rnnc_model_destroy(m);
    if (s != RNNC_OK)
        return fail("forward", s);
    printf("y = %.6f %.6f\n", y[0], y[1]);
    return y[0] != 0 && y[0] == y[0] && y[1] == y[1] ? 0 : 1;
}

int main(void)
{
    rnnc_cell *cell;
    char *text;
    rnnc_status s = rnnc_cell_builtin(&cell, "lstm", NULL);
    if (s != RNNC_OK)
        return fail("rnnc_cell_builtin", s);
    if ((s = rnnc_cell_print(cell, &text)) != RNNC_OK) {
        rnnc_cell_destroy(cell);
        return fail("rnnc_cell_print", s);
    }
    printf("rnnc %s\n%s", rnnc_version_string(), text);
    rnnc_free(text);
    int rc = tiny_forward(cell);
    rnnc_cell_destroy(cell);
    return rc;
}
