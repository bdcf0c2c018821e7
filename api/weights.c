/*
 * weights.c: a model's weights by PyTorch's state_dict names.  Each param
 * of the cell gives one weight per pseudo-layer, `<param>_l<k>` and
 * `<param>_l<k>_reverse`; they are kept on the host in fp32 (rounded to the
 * model's dtype in a half-precision model) and handed to the backend,
 * which copies or packs them once, when all are set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

static void weight_name(const rnnc_model *m, int pseudo, int param, char *buf, size_t n)
{
    int layer = pseudo / m->spec.dirs, dir = pseudo % m->spec.dirs;
    snprintf(buf, n, "%s_l%d%s", m->fn->params[param].name, layer, dir ? "_reverse" : "");
}

rnnc_status api_weights_init(rnnc_model *m)
{
    int np = m->fn->n_params, pl = m->spec.layers * m->spec.dirs;
    m->n_weights = np * pl;
    m->weights_gen = 1; /* backends start at 0: the first forward binds */
    m->weights = calloc((size_t)m->n_weights + 1, sizeof *m->weights);
    m->wptr = calloc((size_t)m->n_weights + 1, sizeof *m->wptr);
    if (!m->weights || !m->wptr)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "model: out of memory");
    for (int p = 0; p < pl; p++) {
        ir_sizes sz = rt_spec_sizes(&m->spec, p / m->spec.dirs);
        for (int i = 0; i < np; i++) {
            api_weight *w = &m->weights[p * np + i];
            const ir_node *n = &m->fn->nodes[m->fn->params[i].node];
            weight_name(m, p, i, w->name, sizeof w->name);
            w->pseudo = p, w->param = i;
            w->rank = n->kind == IR_MAT ? 2 : 1;
            w->shape[0] = n->kind == IR_MAT ? ir_dim_eval(n->rows, sz) : ir_dim_eval(n->cols, sz);
            w->shape[1] = n->kind == IR_MAT ? ir_dim_eval(n->cols, sz) : 1;
            w->count = w->shape[0] * w->shape[1];
            w->data = malloc(sizeof(float) * (size_t)w->count);
            if (!w->data)
                return err_fail(RNNC_ERR_OUT_OF_MEMORY, "model: out of memory for weights");
            m->wptr[p * np + i] = w->data;
        }
    }
    return RNNC_OK;
}

void api_weights_free(rnnc_model *m)
{
    for (int i = 0; m->weights && i < m->n_weights; i++)
        free(m->weights[i].data);
    free(m->weights);
    free((void *)m->wptr);
}

api_weight *api_weight_find(rnnc_model *m, const char *name)
{
    for (int i = 0; i < m->n_weights; i++)
        if (strcmp(m->weights[i].name, name) == 0)
            return &m->weights[i];
    return NULL;
}

rnnc_status rnnc_model_set_weight(rnnc_model *m, const char *name, const float *data,
                                  int64_t count)
{
    if (!m || !name || !data)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_set_weight: NULL argument");
    if (m->ext_weights)
        return api_weights_refuse_external(m);
    api_weight *w = api_weight_find(m, name);
    if (!w)
        return err_fail(RNNC_ERR_NOT_FOUND, "model has no weight '%s' (cell '%s')", name,
                        m->fn->name);
    if (count != w->count)
        return err_fail(RNNC_ERR_SHAPE, "weight '%s' has %lld elements, %lld given", name,
                        (long long)w->count, (long long)count);
    memcpy(w->data, data, sizeof(float) * (size_t)count);
    rt_round_f32(m->spec.dtype, w->data, (size_t)count); /* every backend: the same values */
    w->set = true;
    m->weights_gen++;
    return RNNC_OK;
}

/* `prefix` + `name` into full[n]; false if it does not fit. */
static bool prefixed(char *full, size_t n, const char *prefix, const char *name)
{
    return snprintf(full, n, "%s%s", prefix, name) < (int)n;
}

/* Every expected name once under `prefix`, no other name under it: checked
 * before anything is copied.  Names outside the prefix are only counted. */
static rnnc_status check_names(rnnc_model *m, const rnnc_tensors *ts, const char *prefix,
                               int *ignored)
{
    size_t np = strlen(prefix);
    char full[512];
    for (int i = 0; i < m->n_weights; i++) {
        const api_weight *w = &m->weights[i];
        if (!prefixed(full, sizeof full, prefix, w->name))
            return err_fail(RNNC_ERR_INVALID_ARG, "weights prefix '%s' is too long", prefix);
        rnnc_status s = rt_tensor_expect(ts, full, RT_DTYPE_ANY_FLOAT, w->rank, w->shape, NULL);
        if (s != RNNC_OK)
            return s;
    }
    int outside = 0;
    for (int i = 0; i < rnnc_tensors_count(ts); i++) {
        const char *n = rnnc_tensors_name(ts, i);
        if (strncmp(n, prefix, np) != 0)
            outside++;
        else if (!api_weight_find(m, n + np))
            return err_fail(RNNC_ERR_NOT_FOUND,
                            "weights hold '%s', which cell '%s' with %d layer(s)%s does not have",
                            n, m->fn->name, m->spec.layers,
                            m->spec.dirs == 2 ? ", bidirectional" : "");
    }
    if (ignored)
        *ignored = outside;
    return RNNC_OK;
}

rnnc_status rnnc_model_set_weights_prefix(rnnc_model *m, const rnnc_tensors *ts,
                                          const char *prefix, int *ignored)
{
    if (!m || !ts)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_set_weights: NULL argument");
    if (m->ext_weights)
        return api_weights_refuse_external(m);
    prefix = prefix ? prefix : "";
    rnnc_status s = check_names(m, ts, prefix, ignored);
    if (s != RNNC_OK)
        return s;
    for (int i = 0; i < m->n_weights; i++) {
        api_weight *w = &m->weights[i];
        char full[512];
        prefixed(full, sizeof full, prefix, w->name); /* check_names found it */
        if ((s = rt_tensor_to_f32(rnnc_tensors_get(ts, full), w->data)) != RNNC_OK)
            return s;
        rt_round_f32(m->spec.dtype, w->data, (size_t)w->count);
        w->set = true;
    }
    m->weights_gen++;
    return RNNC_OK;
}

rnnc_status rnnc_model_set_weights(rnnc_model *m, const rnnc_tensors *ts)
{
    return rnnc_model_set_weights_prefix(m, ts, "", NULL);
}

rnnc_status rnnc_model_load_weights_prefix(rnnc_model *m, const char *path, const char *prefix,
                                           int *ignored)
{
    if (!m || !path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_load_weights: NULL argument");
    rnnc_tensors *ts = NULL;
    rnnc_status s = rnnc_tensors_load(&ts, path);
    if (s == RNNC_OK) {
        s = rnnc_model_set_weights_prefix(m, ts, prefix, ignored);
        if (s != RNNC_OK)
            err_fail_append("in %s", path);
    }
    rnnc_tensors_destroy(ts);
    return s;
}

rnnc_status rnnc_model_load_weights(rnnc_model *m, const char *path)
{
    return rnnc_model_load_weights_prefix(m, path, "", NULL);
}

int rnnc_model_weight_count(const rnnc_model *m)
{
    return m ? m->n_weights : 0;
}

rnnc_status rnnc_model_weight_info(const rnnc_model *m, int i, const char **name, int rank,
                                   int64_t *shape, int *out_rank)
{
    if (!m || i < 0 || i >= m->n_weights)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_weight_info: no weight %d", i);
    const api_weight *w = &m->weights[i];
    if (name)
        *name = w->name;
    for (int k = 0; shape && k < rank && k < w->rank; k++)
        shape[k] = w->shape[k];
    if (out_rank)
        *out_rank = w->rank;
    return RNNC_OK;
}

rnnc_status api_weights_sync(rnnc_model *m)
{
    api_slot *slot = &m->slot[m->kind];
    if (slot->bound_gen == m->weights_gen)
        return RNNC_OK;
    for (int i = 0; i < m->n_weights; i++)
        if (!m->weights[i].set)
            return err_fail(RNNC_ERR_STATE, "weight '%s' is not set (load weights first)",
                            m->weights[i].name);
    rt_weights w = {m->wptr, m->fn->n_params, m->spec.layers * m->spec.dirs};
    rnnc_status s = slot->be->bind(slot->state, &w);
    if (s == RNNC_OK)
        slot->bound_gen = m->weights_gen;
    return s;
}
