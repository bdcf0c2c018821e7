/*
 * custom_cell.c: a cell of one's own, written as a .cell file, loaded,
 * printed back, shown as the schedule rnnc derives for it, and run on the
 * best backend of this machine (auto) against the reference interpreter.
 *
 *   example_custom_cell [FILE.cell [CELL_NAME]]
 *
 * With no argument it loads layernorm_gru.cell from this folder (the build
 * passes the folder as EXAMPLES_DIR).
 */
#include <stdio.h>
#include <stdlib.h>

#include "example_common.h"
#include "rnnc.h"

#ifndef EXAMPLES_DIR
#define EXAMPLES_DIR "."
#endif

enum { SEQ = 12, BATCH = 3, INPUT = 24, HIDDEN = 48 };

/* The cell as rnnc reads it, then its schedule for this example's sizes:
 * what is folded at weight binding, hoisted out of the loop, left per step. */
static rnnc_status show(const rnnc_cell *cell)
{
    rnnc_status s;
    char *text = NULL;
    TRY(rnnc_cell_print(cell, &text));
    printf("%s\n", text);
    rnnc_free(text);
    text = NULL;
    TRY(rnnc_cell_dump(cell, "schedule", INPUT, HIDDEN, 0, BATCH, RNNC_HOIST_ALL, &text));
    printf("%s\n", text);
fail:
    rnnc_free(text);
    return s;
}

static rnnc_status make_model(rnnc_model **m, const rnnc_cell *cell, rnnc_backend backend)
{
    rnnc_model_desc d;
    rnnc_model_desc_init(&d);
    d.cell = cell;
    d.input_size = INPUT;
    d.hidden_size = HIDDEN;
    d.backend = backend;
    return rnnc_model_create(m, &d);
}

/* y gets the auto backend's output and ref the interpreter's, on the same
 * random weights (named `<param>_l0`, as a state_dict would name them). */
static rnnc_status run(const rnnc_cell *cell, float *y, float *ref, int64_t n_y)
{
    rnnc_status s;
    rnnc_model *m[2] = {NULL, NULL};
    int64_t hout = 0;
    float *x = malloc(sizeof *x * SEQ * BATCH * INPUT);
    uint64_t seed = 0x2545f4914f6cdd1du;
    if (!x)
        return RNNC_ERR_OUT_OF_MEMORY;
    ex_fill(x, SEQ * BATCH * INPUT, 1.0f, &seed);
    TRY(make_model(&m[0], cell, RNNC_BACKEND_AUTO));
    TRY(make_model(&m[1], cell, RNNC_BACKEND_INTERP));
    TRY(rnnc_model_output_size(m[0], &hout));
    if (SEQ * BATCH * hout != n_y) {
        fprintf(stderr, "the cell's output has %lld features, this example expects %d\n",
                (long long)hout, HIDDEN);
        s = RNNC_ERR_SHAPE;
        goto fail;
    }
    for (int i = 0; i < rnnc_model_weight_count(m[0]); i++) {
        const char *name;
        TRY(rnnc_model_weight_info(m[0], i, &name, 0, NULL, NULL));
        printf("weight %s\n", name);
    }
    TRY(ex_run_pair(m, HIDDEN, 7, SEQ, BATCH, x, y, ref));
fail:
    rnnc_model_destroy(m[1]);
    rnnc_model_destroy(m[0]);
    free(x);
    return s;
}

int main(int argc, char **argv)
{
    rnnc_status s = RNNC_OK;
    const char *path = argc > 1 ? argv[1] : EXAMPLES_DIR "/layernorm_gru.cell";
    const char *name = argc > 2 ? argv[2] : NULL; /* NULL: the file's first cell */
    rnnc_cell *cell = NULL;
    const int64_t n_y = SEQ * BATCH * HIDDEN;
    float *y = malloc(sizeof *y * n_y), *ref = malloc(sizeof *ref * n_y);
    int rc = 1;
    if (!y || !ref)
        goto fail;
    TRY(rnnc_cell_load_file(&cell, path, name, NULL)); /* NULL: the file's attr values */
    if (show(cell) != RNNC_OK || run(cell, y, ref, n_y) != RNNC_OK)
        goto fail;
    double diff = ex_rel_diff(y, ref, n_y);
    printf("y checksum: %.6f\n", ex_checksum(y, n_y));
    printf("max |y - y_interp| / max |y_interp| = %.3g\n", diff);
    rc = diff <= 1e-5 ? 0 : 1;
    if (rc)
        fprintf(stderr, "the output differs from the interpreter's\n");
fail:
    rnnc_cell_destroy(cell);
    free(ref);
    free(y);
    return s == RNNC_OK ? rc : 1;
}
