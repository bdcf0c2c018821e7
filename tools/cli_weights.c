/*
 * cli_weights.c: the weights file of `rnnc run` and `rnnc grad`, which may
 * be a whole model's state_dict: the RNN's weights under a prefix
 * (`encoder.lstm.weight_ih_l0`) beside other layers (`fc.weight`).  The
 * prefix is --weights-prefix, or, when the cell's first weight is not in the
 * file by its bare name, the one prefix under which every weight of a model
 * that fits is found; it is reported, and so are the tensors left out.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

#define MAX_PREFIXES 16
#define PREFIX_CAP 256

/* The tensors of w under `prefix`, with the prefix taken off, into *out. */
static rnnc_status strip(const rnnc_tensors *w, const char *prefix, rnnc_tensors **out)
{
    size_t np = strlen(prefix);
    rnnc_status s = rnnc_tensors_create(out);
    for (int i = 0; s == RNNC_OK && i < rnnc_tensors_count(w); i++) {
        const char *n = rnnc_tensors_name(w, i);
        const rnnc_tensor *t = rnnc_tensors_get(w, n);
        if (strncmp(n, prefix, np) == 0)
            s = rnnc_tensors_add(*out, n + np, t->dtype, t->rank, t->shape, t->data);
    }
    return s;
}

/* Every prefix p of a name `p<first>` in w, p not empty, into ps. */
static int find_prefixes(const rnnc_tensors *w, const char *first, char ps[][PREFIX_CAP])
{
    int n = 0;
    size_t nf = strlen(first);
    for (int i = 0; i < rnnc_tensors_count(w) && n < MAX_PREFIXES; i++) {
        const char *name = rnnc_tensors_name(w, i);
        size_t len = strlen(name);
        if (len > nf && len - nf < PREFIX_CAP && strcmp(name + len - nf, first) == 0)
            snprintf(ps[n++], PREFIX_CAP, "%.*s", (int)(len - nf), name);
    }
    return n;
}

/* Appends ", 'a<b>'" (no comma first) to list[cap], cut short if it must be. */
static void append_quoted(char *list, size_t cap, const char *a, const char *b)
{
    size_t len = strlen(list);
    int w = snprintf(list + len, cap - len, "%s'%s%s'", len ? ", " : "", a, b);
    if (w < 0)
        list[len] = '\0';
}

/* Sizes inferred from the tensors under `prefix` into o; false if none fit. */
static bool fits_under(const rnnc_tensors *w, const char *prefix, cli_model_opts *o,
                       const rnnc_cell *cell, rnnc_hoist hoist, const char *path)
{
    rnnc_tensors *view = NULL;
    cli_model_opts c = *o;
    bool ok = strip(w, prefix, &view) == RNNC_OK &&
              cli_infer_sizes(&c, cell, hoist, view, path) == RNNC_OK;
    (void)cli_detail(); /* a candidate's failure is not the command's */
    rnnc_tensors_destroy(view);
    if (ok)
        *o = c;
    return ok;
}

/* No prefix given and the bare first weight missing: the one that fits. */
static rnnc_status detect(const rnnc_tensors *w, const char *first, cli_model_opts *o,
                          const rnnc_cell *cell, rnnc_hoist hoist, const char *path,
                          const char **prefix)
{
    static char ps[MAX_PREFIXES][PREFIX_CAP];
    int n = find_prefixes(w, first, ps), found = -1, n_fit = 0;
    char list[1024] = "";
    for (int i = 0; i < n; i++) {
        cli_model_opts c = *o;
        if (!fits_under(w, ps[i], &c, cell, hoist, path))
            continue;
        if (n_fit++ == 0)
            found = i, *o = c;
        append_quoted(list, sizeof list, ps[i], "");
    }
    if (n_fit == 1) {
        *prefix = ps[found];
        fprintf(stderr, "rnnc: %s: the weights of cell '%s' are those under '%s' (the one "
                        "prefix that fits; --weights-prefix names another)\n",
                path, rnnc_cell_name(cell), *prefix);
        return RNNC_OK;
    }
    if (n_fit > 1)
        return cli_error(RNNC_ERR_INVALID_ARG,
                         "%s holds the weights of cell '%s' under several prefixes (%s); "
                         "give --weights-prefix",
                         path, rnnc_cell_name(cell), list);
    return RNNC_ERR_NOT_FOUND; /* the caller's inference says what is missing */
}

/* Adds to the detail of a failed inference the prefixes the file holds
 * the cell's first weight under, if any other than `tried`. */
static rnnc_status hint_prefixes(rnnc_status s, const rnnc_tensors *w, const char *first,
                                 const char *tried)
{
    static char ps[MAX_PREFIXES][PREFIX_CAP];
    char list[1024] = "";
    int n = find_prefixes(w, first, ps);
    for (int i = 0; i < n; i++)
        if (strcmp(ps[i], tried) != 0)
            append_quoted(list, sizeof list, ps[i], first);
    if (!list[0])
        return s;
    const char *detail = cli_detail();
    return cli_error(s, "%s (the file holds %s: --weights-prefix picks one)", detail, list);
}

/* What the file says about the flags, when it disagrees with them: a
 * `_reverse` weight or none, a projection `weight_hr_l0` [P, H] or none. */
static const char *flag_hint(const cli_model_opts *o, const rnnc_tensors *w, const char *prefix)
{
    static char hint[PREFIX_CAP + 160];
    char name[PREFIX_CAP + 16];
    size_t np = strlen(prefix);
    bool reverse = false;
    for (int i = 0; i < rnnc_tensors_count(w); i++) {
        const char *n = rnnc_tensors_name(w, i);
        size_t len = strlen(n);
        reverse = reverse || (strncmp(n, prefix, np) == 0 && len > 8 &&
                              strcmp(n + len - 8, "_reverse") == 0);
    }
    snprintf(name, sizeof name, "%sweight_hr_l0", prefix);
    const rnnc_tensor *hr = rnnc_tensors_get(w, name);
    hint[0] = '\0';
    if (o->bidirectional && !reverse)
        snprintf(hint, sizeof hint, "; no weight ends in _reverse: leave out --bidirectional");
    else if (!o->bidirectional && reverse)
        snprintf(hint, sizeof hint, "; the file has _reverse weights: give --bidirectional");
    else if (o->proj_size <= 0 && hr && hr->rank == 2)
        snprintf(hint, sizeof hint, "; the file has a projection '%s' [%lld, %lld]: give "
                 "--proj-size %lld", name, (long long)hr->shape[0], (long long)hr->shape[1],
                 (long long)hr->shape[0]);
    else if (o->proj_size > 0 && !hr)
        snprintf(hint, sizeof hint, "; the file has no '%s': leave out --proj-size", name);
    return hint;
}

rnnc_status cli_load_weights(cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                             const char *path, rnnc_tensors **w)
{
    rnnc_tensors *view = NULL;
    rnnc_status s = rnnc_tensors_load(w, path);
    if (s != RNNC_OK)
        return s;
    char first[160] = "";
    if (rnnc_cell_param_count(cell) > 0)
        snprintf(first, sizeof first, "%s_l0", rnnc_cell_param_name(cell, 0));
    if (!o->weights_prefix && first[0] && !rnnc_tensors_get(*w, first)) {
        s = detect(*w, first, o, cell, hoist, path, &o->weights_prefix);
        if (s != RNNC_ERR_NOT_FOUND) /* found, or found several */
            return s;
    }
    const char *prefix = o->weights_prefix ? o->weights_prefix : "";
    if ((s = strip(*w, prefix, &view)) != RNNC_OK)
        return s;
    if (rnnc_tensors_count(view) == 0)
        s = cli_error(RNNC_ERR_NOT_FOUND, "no tensor in %s starts with '%s' (--weights-prefix)",
                      path, prefix);
    else {
        char where[PREFIX_CAP + 512];
        snprintf(where, sizeof where, prefix[0] ? "%s (under '%s')" : "%s", path, prefix);
        s = cli_infer_sizes(o, cell, hoist, view, where);
        if (s != RNNC_OK && flag_hint(o, *w, prefix)[0]) {
            const char *detail = cli_detail();
            s = cli_error(s, "%s%s", detail, flag_hint(o, *w, prefix));
        }
    }
    rnnc_tensors_destroy(view);
    return s == RNNC_OK || !first[0] ? s : hint_prefixes(s, *w, first, prefix);
}

rnnc_status cli_set_weights(rnnc_model *m, cli_model_opts *o, const rnnc_tensors *w,
                            const char *path)
{
    int ignored = 0;
    rnnc_status s = rnnc_model_set_weights_prefix(m, w, o->weights_prefix, &ignored);
    if (s != RNNC_OK)
        return cli_error(s, "%s: %s%s", path, rnnc_last_error(),
                         flag_hint(o, w, o->weights_prefix ? o->weights_prefix : ""));
    o->weights_ignored = ignored;
    if (ignored > 0)
        fprintf(stderr, "rnnc: %s: %d tensor%s outside '%s' ignored\n", path, ignored,
                ignored == 1 ? "" : "s", o->weights_prefix);
    return RNNC_OK;
}
