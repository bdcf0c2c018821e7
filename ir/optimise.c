/*
 * optimise.c: the pass pipeline of one cell for one model, and the
 * RNNC_DUMP switch that prints the cell between stages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

bool ir_dump_enabled(const char *stage)
{
    const char *env = getenv("RNNC_DUMP");
    size_t n = strlen(stage);
    for (const char *p = env; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((len == n && strncmp(p, stage, n) == 0) || (len == 3 && strncmp(p, "all", 3) == 0))
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

static void dump(const ir_fn *f, const char *stage)
{
    char *text = NULL;
    if (!ir_dump_enabled(stage) || ir_print(f, &text) != RNNC_OK)
        return;
    fprintf(stderr, "# RNNC_DUMP=%s: cell %s\n%s", stage, f->name, text);
    free(text);
}

typedef rnnc_status (*pass_fn)(ir_fn *);

static rnnc_status run(ir_fn *f, pass_fn pass, const char *name)
{
    rnnc_status s = pass(f);
    if (s == RNNC_OK)
        s = ir_verify(f); /* cheap next to compiling: always on */
    if (s != RNNC_OK)
        err_fail_append("in pass %s", name);
    return s;
}

rnnc_status ir_optimise(ir_fn *f, bool has_proj)
{
    return ir_optimise_bias(f, has_proj, false);
}

rnnc_status ir_optimise_bias(ir_fn *f, bool has_proj, bool no_bias)
{
    rnnc_status s = ir_verify(f);
    if (s != RNNC_OK)
        return s;
    dump(f, "ir");
    if ((s = pass_drop_absent_bias(f, has_proj, no_bias)) != RNNC_OK || (s = ir_verify(f)) != RNNC_OK)
        return s;
    if ((s = run(f, pass_simplify, "simplify")) || (s = run(f, pass_cse, "cse")) ||
        (s = run(f, pass_dce, "dce")))
        return s;
    dump(f, "opt");
    return RNNC_OK;
}

rnnc_status ir_specialise(const ir_fn *cell, bool has_proj, ir_fn **out)
{
    return ir_specialise_bias(cell, has_proj, false, out);
}

rnnc_status ir_specialise_bias(const ir_fn *cell, bool has_proj, bool no_bias, ir_fn **out)
{
    ir_fn *c = NULL;
    rnnc_status s = rnnc_cell_clone(&c, cell);
    if (s == RNNC_OK && (s = ir_optimise_bias(c, has_proj, no_bias)) != RNNC_OK) {
        rnnc_cell_destroy(c);
        c = NULL;
    }
    *out = c;
    return s;
}
