/*
 * model.c: a model is a cell specialised for sizes, layers and directions,
 * its weights, and one backend.  The cell is optimised once here, so every
 * backend sees the same IR.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

void rnnc_model_desc_init(rnnc_model_desc *d)
{
    if (!d)
        return;
    memset(d, 0, sizeof *d);
    d->num_layers = 1;
    d->dtype = RNNC_F32;
    d->math = RNNC_MATH_FFMA;
    d->backend = RNNC_BACKEND_AUTO;
    d->hoist = RNNC_HOIST_ALL;
}

static rnnc_status check_desc(const rnnc_model_desc *d)
{
    if (!d->cell)
        return err_fail(RNNC_ERR_INVALID_ARG, "model: no cell given");
    if (d->input_size < 1 || d->hidden_size < 1)
        return err_fail(RNNC_ERR_INVALID_ARG, "model: input_size and hidden_size must be >= 1");
    if (d->proj_size < 0 || (d->proj_size > 0 && d->proj_size >= d->hidden_size))
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "model: proj_size must be in [0, hidden_size) (got %lld with hidden %lld)",
                         (long long)d->proj_size, (long long)d->hidden_size);
    if (d->num_layers < 1 || d->num_layers > 1024)
        return err_fail(RNNC_ERR_INVALID_ARG, "model: num_layers must be in [1, 1024]");
    if (!(d->dropout >= 0 && d->dropout < 1))
        return err_fail(RNNC_ERR_INVALID_ARG, "model: dropout must be in [0, 1)");
    if ((unsigned)d->hoist > RNNC_HOIST_NONE || (unsigned)d->math > RNNC_MATH_3XTF32 ||
        (unsigned)d->backend > RNNC_BACKEND_CUDNN ||
        (unsigned)d->cudnn_algo > RNNC_CUDNN_ALGO_PERSIST_DYNAMIC)
        return err_fail(RNNC_ERR_INVALID_ARG, "model: bad hoist, math, backend or cudnn_algo value");
    if (d->dtype != RNNC_F32 && !rt_dtype_is_half(d->dtype))
        return err_fail(RNNC_ERR_UNSUPPORTED, "model: dtype %s (models are f32, f16 or bf16)",
                        rnnc_dtype_name(d->dtype));
    if (rt_dtype_is_half(d->dtype) && d->math != RNNC_MATH_FFMA)
        return err_fail(RNNC_ERR_INVALID_ARG, "model: math modes are for f32 models (%s given)",
                        rnnc_dtype_name(d->dtype));
    if (d->cell->n_inputs != 1)
        return err_fail(RNNC_ERR_UNSUPPORTED, "model: cell '%s' must have exactly one input",
                        d->cell->name);
    return RNNC_OK;
}

static rnnc_status fill_spec(rnnc_model *m, const rnnc_model_desc *d)
{
    rt_spec *s = &m->spec;
    int64_t p = d->proj_size > 0 ? d->proj_size : d->hidden_size;
    s->fn[0] = s->fn[1] = m->fn; /* dims are symbolic: one IR serves every layer */
    s->sizes[0] = (ir_sizes){d->input_size, d->hidden_size, p};
    s->hout = ir_dim_eval(m->fn->nodes[m->fn->output].cols, s->sizes[0]);
    s->dirs = d->bidirectional ? 2 : 1;
    s->sizes[1] = (ir_sizes){s->dirs * s->hout, d->hidden_size, p};
    s->layers = d->num_layers;
    s->batch_first = d->batch_first;
    s->dropout = d->dropout;
    s->seed = d->seed;
    s->hoist = d->hoist;
    s->math = d->math;
    s->dtype = d->dtype;
    s->device = d->device;
    s->no_bias = d->no_bias;
    s->cudnn_algo = d->cudnn_algo;
    for (int k = 0; k < 2; k++)
        if (ir_dim_eval(m->fn->nodes[m->fn->inputs[0].node].cols, s->sizes[k]) !=
            (k ? s->sizes[1].I : d->input_size))
            return err_fail(RNNC_ERR_SHAPE, "model: the input of cell '%s' must be of size I",
                            m->fn->name);
    return RNNC_OK;
}

rnnc_status rnnc_model_create(rnnc_model **out, const rnnc_model_desc *d)
{
    if (!out || !d)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_create: NULL argument");
    *out = NULL;
    rnnc_status s = check_desc(d);
    if (s != RNNC_OK)
        return s;
    api_bundles_from_env();
    rnnc_model *m = calloc(1, sizeof *m);
    if (!m)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "model: out of memory");
    if ((s = ir_specialise_bias(d->cell, d->proj_size > 0, d->no_bias, &m->fn)) || (s = fill_spec(m, d)) ||
        (s = api_weights_init(m)) || (s = api_backend_open(m, d->backend)))
        goto fail_model;
    *out = m;
    return RNNC_OK;
fail_model:
    rnnc_model_destroy(m);
    return s;
}

void rnnc_model_destroy(rnnc_model *m)
{
    if (!m)
        return;
    api_backend_close_all(m);
    api_packed_forget(m);
    api_weights_free(m);
    rnnc_cell_destroy(m->fn);
    free(m);
}

rnnc_backend rnnc_model_backend(const rnnc_model *m)
{
    return m ? m->kind : RNNC_BACKEND_AUTO;
}

/* Device buffers must be on the model's device: a wrong one fails here,
 * named, instead of as a fault inside a kernel. */
static rnnc_status check_device_pointers(const rnnc_model *m, const rnnc_forward_args *a)
{
    if (!a->device_pointers)
        return RNNC_OK;
    if (!m->auto_pick && m->kind != RNNC_BACKEND_FUSED && m->kind != RNNC_BACKEND_CUDNN)
        return err_fail(RNNC_ERR_UNSUPPORTED, "backend '%s' takes host pointers only",
                        rnnc_backend_name(m->kind));
#ifdef RNNC_HAVE_CUDA
    rnnc_status s = rt_cuda_context(m->spec.device);
    if (s == RNNC_OK && (s = rt_dev_check_pointer(a->x, m->spec.device, "x")) == RNNC_OK)
        s = rt_dev_check_pointer(a->y, m->spec.device, "y");
    for (int i = 0; s == RNNC_OK && i < m->fn->n_states; i++) {
        if (a->init && a->init[i])
            s = rt_dev_check_pointer(a->init[i], m->spec.device, "an initial state");
        if (s == RNNC_OK && a->final && a->final[i])
            s = rt_dev_check_pointer(a->final[i], m->spec.device, "a final state");
    }
    return s;
#else
    return RNNC_OK;
#endif
}

static rnnc_status call_forward(rnnc_model *m, const rnnc_forward_args *a, void *ctx)
{
    (void)ctx;
    if (a->batch_sizes && m->kind != RNNC_BACKEND_CUDNN) /* cuDNN reads packed input itself */
        return api_forward_packed(m, a, 0, 0, NULL);
    return m->be->forward(m->be_state, a);
}

rnnc_status rnnc_model_forward(rnnc_model *m, const rnnc_forward_args *a)
{
    if (!m)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_forward: NULL model");
    rnnc_status s = rt_check_forward(&m->spec, a);
    if (s == RNNC_OK)
        s = check_device_pointers(m, a);
    api_packed_forget(m);
    return s != RNNC_OK ? s : api_backend_run(m, a, call_forward, NULL);
}

rnnc_status rnnc_model_set_seed(rnnc_model *m, uint64_t seed)
{
    if (!m)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_set_seed: NULL model");
    m->spec.seed = seed; /* the backends see it at their next training forward */
    return RNNC_OK;
}

rnnc_status rnnc_model_backward(rnnc_model *m, const rnnc_backward_args *a)
{
    if (!m || !a)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_backward: NULL argument");
    if (!m->be->backward)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "backend '%s' has no backward (interp, cudnn and fused have one)",
                        rnnc_backend_name(m->kind));
    /* A packed forward that ran on a padded copy: its backward does too. */
    if (m->packed.on && m->kind != RNNC_BACKEND_CUDNN)
        return api_backward_packed(m, a);
    return m->be->backward(m->be_state, a);
}

rnnc_status rnnc_model_weight_grad(rnnc_model *m, const char *name, float *out, int64_t count)
{
    if (!m || !name || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_weight_grad: NULL argument");
    if (!m->be->weight_grad)
        return err_fail(RNNC_ERR_UNSUPPORTED, "backend '%s' has no weight gradients",
                        rnnc_backend_name(m->kind));
    for (int i = 0; i < m->n_weights; i++) {
        const api_weight *w = &m->weights[i];
        if (strcmp(w->name, name) != 0)
            continue;
        if (count != w->count)
            return err_fail(RNNC_ERR_SHAPE, "weight '%s' has %lld elements, %lld asked", name,
                            (long long)w->count, (long long)count);
        return m->be->weight_grad(m->be_state, w->pseudo, w->param, out, count);
    }
    return err_fail(RNNC_ERR_NOT_FOUND, "model has no weight '%s'", name);
}

rnnc_status api_call_time(rnnc_model *m, const rnnc_forward_args *a, void *ctx)
{
    const api_timing *t = ctx;
    if (a->batch_sizes && m->kind != RNNC_BACKEND_CUDNN)
        return api_forward_packed(m, a, t->warmup, t->iters, t->median_ms);
    if (m->be->time_forward)
        return m->be->time_forward(m->be_state, a, t->warmup, t->iters, t->median_ms);
    return rt_time_host(m->be, m->be_state, a, t->warmup, t->iters, t->median_ms);
}

rnnc_status rnnc_model_time_forward(rnnc_model *m, const rnnc_forward_args *a, int warmup,
                                    int iters, double *median_ms)
{
    if (!m || !median_ms || iters < 1 || warmup < 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_time_forward: bad argument");
    rnnc_status s = rt_check_forward(&m->spec, a);
    if (s == RNNC_OK)
        s = check_device_pointers(m, a);
    if (s != RNNC_OK)
        return s;
    api_timing t = {NULL, warmup, iters, median_ms};
    return api_backend_run(m, a, api_call_time, &t);
}
