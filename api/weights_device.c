/*
 * weights_device.c: weights that live in device memory.  One weight can be
 * copied from a device pointer (any GPU backend), or a cudnn model can run
 * on a caller's flat weight buffer in cuDNN's layout, as PyTorch's
 * flatten_parameters keeps it, with gradients landing in a matching buffer.
 */
#include <stdlib.h>

#include "api/api.h"

rnnc_status api_weights_refuse_external(const rnnc_model *m)
{
    (void)m;
    return err_fail(RNNC_ERR_STATE,
                    "the model reads its weights from the buffer bound with "
                    "rnnc_model_bind_weight_buffer: write them there, or unbind it first");
}

#ifdef RNNC_HAVE_CUDA
rnnc_status rnnc_model_set_weight_device(rnnc_model *m, const char *name, const void *data,
                                         int64_t count)
{
    if (!m || !name || !data)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_set_weight_device: NULL argument");
    if (m->ext_weights)
        return api_weights_refuse_external(m);
    api_weight *w = api_weight_find(m, name);
    if (!w)
        return err_fail(RNNC_ERR_NOT_FOUND, "model has no weight '%s' (cell '%s')", name,
                        m->fn->name);
    if (count != w->count)
        return err_fail(RNNC_ERR_SHAPE, "weight '%s' has %lld elements, %lld given", name,
                        (long long)w->count, (long long)count);
    /* Every backend binds from the fp32 host copy, so that is what the
     * device weight refreshes; the copy-free route is the flat buffer. */
    rnnc_status s = rt_cuda_context(m->spec.device);
    if (s == RNNC_OK)
        s = rt_dev_check_pointer(data, m->spec.device, name);
    if (s == RNNC_OK)
        s = rt_dev_download(w->data, (CUdeviceptr)(uintptr_t)data, sizeof(float) * (size_t)count,
                            NULL);
    if (s == RNNC_OK)
        s = rt_dev_sync(NULL);
    if (s != RNNC_OK)
        return s;
    w->set = true;
    m->weights_gen++;
    return RNNC_OK;
}
#else
rnnc_status rnnc_model_set_weight_device(rnnc_model *m, const char *name, const void *data,
                                         int64_t count)
{
    (void)m, (void)name, (void)data, (void)count;
    return err_fail(RNNC_ERR_NOT_BUILT, "device weights need a build with CUDA");
}
#endif

#ifdef RNNC_HAVE_CUDNN
/* The cudnn backend's state, when the model runs on cudnn. */
static rnnc_status cudnn_state(const rnnc_model *m, const char *what, fb_rnn **out)
{
    const api_slot *s = &m->slot[RNNC_BACKEND_CUDNN];
    if (m->auto_pick || m->kind != RNNC_BACKEND_CUDNN || !s->be)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "%s needs a model made with backend cudnn (this one runs '%s')", what,
                        rnnc_backend_name(m->kind));
    *out = s->state;
    return RNNC_OK;
}

rnnc_status rnnc_model_weight_buffer(const rnnc_model *m, size_t *bytes, size_t *offsets)
{
    if (!m || !bytes)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_weight_buffer: NULL argument");
    fb_rnn *r = NULL;
    rnnc_status s = cudnn_state(m, "a flat weight buffer", &r);
    return s != RNNC_OK ? s : fb_rnn_weight_layout(r, bytes, offsets);
}

/* Reads the caller's buffer into the host copies, so the model keeps those
 * weights once unbound. */
static rnnc_status take_back(rnnc_model *m, fb_rnn *r)
{
    size_t bytes, *off = malloc(sizeof *off * (size_t)m->n_weights);
    void *buf = malloc(r->wsize);
    rnnc_status s = off && buf ? RNNC_OK
                               : err_fail(RNNC_ERR_OUT_OF_MEMORY, "weight buffer: host copy");
    if (s == RNNC_OK)
        s = fb_rnn_weight_layout(r, &bytes, off);
    if (s == RNNC_OK)
        s = rt_cuda_context(m->spec.device);
    if (s == RNNC_OK)
        s = rt_dev_download(buf, (CUdeviceptr)(uintptr_t)m->ext_weights, bytes, NULL);
    if (s == RNNC_OK)
        s = rt_dev_sync(NULL);
    for (int i = 0; s == RNNC_OK && i < m->n_weights; i++) {
        api_weight *w = &m->weights[i];
        const char *src = (const char *)buf + off[i];
        for (int64_t k = 0; k < w->count; k++)
            w->data[k] = r->esz == 2 ? fb_f16_to_f32(((const uint16_t *)(const void *)src)[k])
                                     : ((const float *)(const void *)src)[k];
        w->set = true;
    }
    free(buf);
    free(off);
    return s;
}

rnnc_status rnnc_model_bind_weight_buffer(rnnc_model *m, void *weights, void *grads, size_t bytes)
{
    if (!m)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_bind_weight_buffer: NULL model");
    fb_rnn *r = NULL;
    rnnc_status s = cudnn_state(m, "a flat weight buffer", &r);
    if (s == RNNC_OK)
        s = rt_cuda_context(m->spec.device);
    if (s == RNNC_OK && weights)
        s = rt_dev_check_pointer(weights, m->spec.device, "the weight buffer");
    if (s == RNNC_OK && grads)
        s = rt_dev_check_pointer(grads, m->spec.device, "the gradient buffer");
    if (s == RNNC_OK && !weights && m->ext_weights)
        s = take_back(m, r);
    if (s == RNNC_OK)
        s = fb_rnn_bind_buffer(r, (CUdeviceptr)(uintptr_t)weights, (CUdeviceptr)(uintptr_t)grads,
                               bytes);
    if (s != RNNC_OK)
        return s;
    bool was = m->ext_weights != NULL;
    m->ext_weights = weights;
    if (weights) /* nothing to bind from the host while the buffer is in use */
        m->slot[RNNC_BACKEND_CUDNN].bound_gen = m->weights_gen;
    else if (was)
        m->weights_gen++; /* the host copies now hold the buffer's weights */
    return RNNC_OK;
}

rnnc_status rnnc_model_cudnn_algo(const rnnc_model *m, rnnc_cudnn_algo *out)
{
    if (!m || !out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_cudnn_algo: NULL argument");
    const api_slot *s = &m->slot[RNNC_BACKEND_CUDNN];
    if (m->kind != RNNC_BACKEND_CUDNN || !s->be)
        return err_fail(RNNC_ERR_UNSUPPORTED, "the model runs '%s', not cudnn",
                        rnnc_backend_name(m->kind));
    const fb_rnn *r = s->state;
    *out = r->T > 0 ? r->algo : RNNC_CUDNN_ALGO_AUTO;
    return RNNC_OK;
}
#else
rnnc_status rnnc_model_weight_buffer(const rnnc_model *m, size_t *bytes, size_t *offsets)
{
    (void)m, (void)bytes, (void)offsets;
    return err_fail(RNNC_ERR_NOT_BUILT, "a flat weight buffer needs a build with cuDNN");
}

rnnc_status rnnc_model_bind_weight_buffer(rnnc_model *m, void *weights, void *grads, size_t bytes)
{
    (void)m, (void)weights, (void)grads, (void)bytes;
    return err_fail(RNNC_ERR_NOT_BUILT, "a flat weight buffer needs a build with cuDNN");
}

rnnc_status rnnc_model_cudnn_algo(const rnnc_model *m, rnnc_cudnn_algo *out)
{
    (void)m, (void)out;
    return err_fail(RNNC_ERR_NOT_BUILT, "this rnnc is built without cuDNN");
}
#endif
