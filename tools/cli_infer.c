/*
 * cli_infer.c: the model's sizes from a weights file, so that `rnnc run`
 * takes a PyTorch state_dict as it is.  Layers and directions come from the
 * names (`_l<k>`, `_reverse`); the hidden size H and projection size P are
 * found by trying candidates until every weight the model expects is in the
 * file with its shape: H among the divisors of the dims of the cell's first
 * parameter `<param>_l0` (smallest first), P = 0 first, then each dim seen
 * in a layer-0 weight.  This holds for any cell, built-in or not, because it
 * asks the model itself which shapes it wants.  Options given on the command
 * line are kept as they are.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

#define MAX_CANDIDATES 512

/* k of a name ending `_l<k>` or `_l<k>_reverse`; -1 if neither. */
static int layer_of(const char *name, bool *reverse)
{
    const char *p = strstr(name, "_l"), *last = NULL;
    for (; p; p = strstr(p + 1, "_l"))
        last = p;
    if (!last)
        return -1;
    char *end;
    long k = strtol(last + 2, &end, 10);
    if (end == last + 2 || k < 0 || k > 100000)
        return -1;
    *reverse = strcmp(end, "_reverse") == 0;
    return *end == '\0' || *reverse ? (int)k : -1;
}

static void infer_layers(cli_model_opts *o, const rnnc_tensors *w)
{
    int max_k = -1;
    bool any_reverse = false;
    for (int i = 0; i < rnnc_tensors_count(w); i++) {
        bool rev = false;
        int k = layer_of(rnnc_tensors_name(w, i), &rev);
        max_k = k > max_k ? k : max_k;
        any_reverse = any_reverse || (k >= 0 && rev);
    }
    if (o->layers == 0)
        o->layers = max_k >= 0 ? max_k + 1 : 1;
    if (any_reverse)
        o->bidirectional = true;
}

/* Every weight the model expects is in w with its shape, and nothing else. */
static bool fits(const cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                 const rnnc_tensors *w)
{
    rnnc_model *m = NULL;
    if (cli_model_create(o, cell, hoist, RNNC_BACKEND_INTERP, &m) != RNNC_OK)
        return false;
    bool ok = rnnc_model_weight_count(m) == rnnc_tensors_count(w);
    for (int i = 0; ok && i < rnnc_model_weight_count(m); i++) {
        const char *name;
        int64_t shape[2];
        int rank;
        ok = rnnc_model_weight_info(m, i, &name, 2, shape, &rank) == RNNC_OK;
        const rnnc_tensor *t = ok ? rnnc_tensors_get(w, name) : NULL;
        ok = t && t->rank == rank && t->shape[0] == shape[0] &&
             (rank == 1 || t->shape[1] == shape[1]);
    }
    rnnc_model_destroy(m);
    return ok;
}

static int add_unique(int64_t *c, int n, int64_t v)
{
    for (int i = 0; i < n; i++)
        if (c[i] == v)
            return n;
    if (n < MAX_CANDIDATES)
        c[n++] = v;
    return n;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Divisors of the dims of t, ascending. */
static int hidden_candidates(const rnnc_tensor *t, int64_t *c)
{
    int n = 0;
    for (int k = 0; k < t->rank; k++)
        for (int64_t d = 1; d * d <= t->shape[k]; d++)
            if (t->shape[k] % d == 0) {
                n = add_unique(c, n, d);
                n = add_unique(c, n, t->shape[k] / d);
            }
    qsort(c, (size_t)n, sizeof *c, cmp_i64);
    return n;
}

/* 0, then every dim of a layer-0 weight. */
static int proj_candidates(const rnnc_tensors *w, int64_t *c)
{
    int n = add_unique(c, 0, 0);
    for (int i = 0; i < rnnc_tensors_count(w); i++) {
        bool rev;
        if (layer_of(rnnc_tensors_name(w, i), &rev) != 0)
            continue;
        const rnnc_tensor *t = rnnc_tensors_get(w, rnnc_tensors_name(w, i));
        for (int k = 0; k < t->rank; k++)
            n = add_unique(c, n, t->shape[k]);
    }
    return n;
}

/* The first candidate sizes that fit into o; false if none does.  `t` is
 * the first parameter's layer-0 weight (used when H is not given). */
static bool search(cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                   const rnnc_tensors *w, const rnnc_tensor *t)
{
    static int64_t hs[MAX_CANDIDATES], ps[MAX_CANDIDATES];
    int nh = 1, np = 1;
    hs[0] = o->hidden_size, ps[0] = o->proj_size;
    if (o->hidden_size == 0)
        nh = hidden_candidates(t, hs);
    if (o->proj_size < 0)
        np = proj_candidates(w, ps);
    cli_model_opts c = *o;
    for (int j = 0; j < np; j++)
        for (int i = 0; i < nh; i++) {
            c.hidden_size = hs[i], c.proj_size = ps[j];
            if (c.proj_size < c.hidden_size && fits(&c, cell, hoist, w)) {
                *o = c;
                return true;
            }
        }
    return false;
}

rnnc_status cli_infer_sizes(cli_model_opts *o, const rnnc_cell *cell, rnnc_hoist hoist,
                            const rnnc_tensors *w, const char *path)
{
    infer_layers(o, w);
    if (rnnc_cell_param_count(cell) == 0) {
        if (o->hidden_size == 0)
            return cli_error(RNNC_ERR_INVALID_ARG,
                             "cell '%s' has no parameters to infer sizes from; give --hidden-size",
                             rnnc_cell_name(cell));
        o->proj_size = o->proj_size < 0 ? 0 : o->proj_size;
        return RNNC_OK;
    }
    char first[160];
    snprintf(first, sizeof first, "%s_l0", rnnc_cell_param_name(cell, 0));
    const rnnc_tensor *t = rnnc_tensors_get(w, first);
    if (o->hidden_size == 0 && !t)
        return cli_error(RNNC_ERR_NOT_FOUND,
                         "cannot infer the hidden size: %s has no '%s'; give --hidden-size",
                         path, first);
    if (search(o, cell, hoist, w, t))
        return RNNC_OK;
    if (o->hidden_size > 0) {
        /* The sizes were given: let the model say which weight disagrees. */
        o->proj_size = o->proj_size < 0 ? 0 : o->proj_size;
        return RNNC_OK;
    }
    return cli_error(RNNC_ERR_NOT_FOUND,
                         "no hidden size fits every weight in %s for cell '%s' with %d layer(s)%s "
                         "and input size %lld; give --hidden-size (and --proj-size) to see which "
                         "weight disagrees",
                         path, rnnc_cell_name(cell), (int)o->layers,
                         o->bidirectional ? ", bidirectional" : "", (long long)o->input_size);
}
