/*
 * rnn_backend.c: the cudnn backend's life cycle: create (mode, descriptors,
 * weight space), bind (PyTorch weights flattened into cuDNN's buffer once),
 * weight_grad (read back from the gradient buffer), destroy.  The calls
 * that run the RNN are in rnn_run.c.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_fallback/rnn.h"

/* ---------------------------------------------------------------- create */

static bool fits_int32(int64_t v)
{
    return v > 0 && v <= INT_MAX;
}

/* What create can decide without a device: mode, sizes, dtype. */
static rnnc_status describe(const rt_spec *s, fb_rnn *r)
{
    rnnc_status st = fb_rnn_match(s, &r->mode, &r->dropout);
    if (st != RNNC_OK)
        return st;
    if (s->dtype != RNNC_F32 && s->dtype != RNNC_F16)
        return err_fail(RNNC_ERR_UNSUPPORTED, "the cudnn backend runs f32 and f16, not %s",
                        rnnc_dtype_name(s->dtype));
    r->spec = *s;
    r->layers = s->layers;
    r->dirs = s->dirs;
    r->pseudo = s->layers * s->dirs;
    r->hidden = s->sizes[0].H;
    r->hout = s->hout;
    r->proj = s->hout != s->sizes[0].H ? s->hout : 0;
    if (r->proj && r->mode != FB_LSTM)
        return err_fail(RNNC_ERR_UNSUPPORTED, "cuDNN projects only lstm, not %s",
                        fb_rnn_mode_name(r->mode));
    if (!fits_int32(s->sizes[0].I) || !fits_int32(r->hidden) || !fits_int32(r->hout) ||
        s->layers < 1 || (s->dirs != 1 && s->dirs != 2))
        return err_fail(RNNC_ERR_INVALID_ARG, "sizes out of cuDNN's range (I %lld, H %lld)",
                        (long long)s->sizes[0].I, (long long)r->hidden);
    r->n_lin = fb_rnn_lin_layers(r->mode, r->proj > 0);
    r->dtype = s->dtype == RNNC_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    r->esz = rnnc_dtype_size(s->dtype);
    return fb_rnn_state_slots(s->fn[0], r->mode, &r->state_h, &r->state_c);
}

static rnnc_status create_descriptors(fb_rnn *r)
{
    rnnc_status st = fb_cudnn_check(cudnnCreate(&r->handle), "cudnnCreate");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateDropoutDescriptor(&r->drop), "cudnnCreateDropoutDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateRNNDescriptor(&r->rnn), "cudnnCreateRNNDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateRNNDataDescriptor(&r->xdesc), "cudnnCreateRNNDataDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateRNNDataDescriptor(&r->ydesc), "cudnnCreateRNNDataDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateTensorDescriptor(&r->hdesc), "cudnnCreateTensorDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateTensorDescriptor(&r->cdesc), "cudnnCreateTensorDescriptor");
    return st;
}

/* The dropout state, then the RNN descriptor on the model's algorithm
 * (AUTO starts on STANDARD and decides per shape). */
static rnnc_status set_rnn_descriptor(fb_rnn *r)
{
    rnnc_status st = fb_dropout_bind(r->handle, r->spec.device, r->spec.seed,
                                     r->layers > 1 ? (float)r->dropout : 0.0f, r->drop);
    if (st == RNNC_OK)
        st = rt_cuda_arch(r->spec.device, &r->sm);
    if (st == RNNC_OK)
        st = rt_cuda_sm_count(r->spec.device, &r->sm_count);
    if (st != RNNC_OK)
        return st;
    rnnc_cudnn_algo a = r->spec.cudnn_algo;
    fb_algo_query q;
    fb_rnn_algo_query(r, &q); /* batch 0, not ragged: what create already knows */
    const char *why = a != RNNC_CUDNN_ALGO_AUTO ? fb_algo_refusal(a, &q) : NULL;
    if (why)
        return err_fail(RNNC_ERR_UNSUPPORTED, "cudnn algorithm %s: %s", rnnc_cudnn_algo_name(a),
                        why);
    r->algo = RNNC_CUDNN_ALGO_AUTO; /* nothing set yet */
    return fb_rnn_set_algo(r, a == RNNC_CUDNN_ALGO_AUTO ? RNNC_CUDNN_ALGO_STANDARD : a);
}

static size_t desc_numel(cudnnTensorDescriptor_t d)
{
    cudnnDataType_t dt;
    int nd = 0, dims[8], strides[8];
    if (cudnnGetTensorNdDescriptor(d, 8, &dt, &nd, dims, strides) != CUDNN_STATUS_SUCCESS)
        return 0;
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (size_t)dims[i];
    return nd > 0 ? n : 0;
}

/* Asks cuDNN where each linear layer lives inside the weight space. */
static rnnc_status locate_slots(fb_rnn *r)
{
    cudnnTensorDescriptor_t md = NULL, bd = NULL;
    rnnc_status st = fb_cudnn_check(cudnnCreateTensorDescriptor(&md), "cudnnCreateTensorDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnCreateTensorDescriptor(&bd), "cudnnCreateTensorDescriptor");
    r->slots = calloc((size_t)(r->pseudo * r->n_lin), sizeof *r->slots);
    if (st == RNNC_OK && !r->slots)
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "cudnn weight slots");
    for (int p = 0; st == RNNC_OK && p < r->pseudo; p++) {
        for (int lin = 0; st == RNNC_OK && lin < r->n_lin; lin++) {
            void *base = (void *)(uintptr_t)r->w.p, *m = NULL, *b = NULL;
            st = fb_cudnn_check(cudnnGetRNNWeightParams(r->handle, r->rnn, p, r->wsize, base, lin,
                                                        md, &m, bd, &b),
                                "cudnnGetRNNWeightParams");
            fb_lin_slot *sl = &r->slots[p * r->n_lin + lin];
            if (st == RNNC_OK && m) {
                sl->mat_off = (size_t)((char *)m - (char *)base);
                sl->mat_n = desc_numel(md);
            }
            if (st == RNNC_OK && b) {
                sl->bias_off = (size_t)((char *)b - (char *)base);
                sl->bias_n = desc_numel(bd);
            }
        }
    }
    cudnnDestroyTensorDescriptor(bd);
    cudnnDestroyTensorDescriptor(md);
    return st;
}

static void rnn_destroy(void *state)
{
    fb_rnn *r = state;
    if (!r)
        return;
    if (r->handle)
        (void)rt_cuda_context(r->spec.device);
    fb_buf *bufs[] = {&r->w,  &r->dw, &r->seq, &r->ws, &r->rs,  &r->x,   &r->y,   &r->hx,
                      &r->cx, &r->hy, &r->cy,  &r->dx, &r->dy,  &r->dhx, &r->dcx, &r->dhy,
                      &r->dcy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        fb_buf_free(bufs[i]);
    if (r->cdesc)
        cudnnDestroyTensorDescriptor(r->cdesc);
    if (r->hdesc)
        cudnnDestroyTensorDescriptor(r->hdesc);
    if (r->ydesc)
        cudnnDestroyRNNDataDescriptor(r->ydesc);
    if (r->xdesc)
        cudnnDestroyRNNDataDescriptor(r->xdesc);
    if (r->rnn)
        cudnnDestroyRNNDescriptor(r->rnn);
    if (r->drop)
        cudnnDestroyDropoutDescriptor(r->drop);
    if (r->handle)
        cudnnDestroy(r->handle);
    free(r->slots);
    free(r->lens);
    free(r->dw_host);
    free(r);
}

static rnnc_status rnn_create(const rt_spec *s, void **state)
{
    fb_rnn *r = calloc(1, sizeof *r);
    if (!r)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cudnn backend state");
    /* The cell check comes first: it needs no device, so asking cudnn for
     * layernorm_lstm says what is wrong even on a machine with no GPU. */
    rnnc_status st = describe(s, r);
    if (st != RNNC_OK)
        goto fail_state;
    st = fb_cudnn_load();
    if (st == RNNC_OK)
        st = rt_cuda_context(s->device);
    if (st != RNNC_OK)
        goto fail_state;
    st = create_descriptors(r);
    if (st == RNNC_OK)
        st = set_rnn_descriptor(r);
    if (st == RNNC_OK)
        st = fb_buf_reserve(&r->w, r->wsize);
    r->wp = r->w.p;
    if (st == RNNC_OK)
        st = locate_slots(r);
    if (st != RNNC_OK)
        goto fail_state;
    *state = r;
    return RNNC_OK;

fail_state:
    rnn_destroy(r); /* frees whatever part was made */
    return st;
}

/* ---------------------------------------------------------------- weights */

static fb_rnn_dims layer_dims(const fb_rnn *r, int pseudo)
{
    ir_sizes sz = rt_spec_sizes(&r->spec, pseudo / r->dirs);
    return (fb_rnn_dims){.in = sz.I, .hidden = r->hidden, .proj = r->proj};
}

/* The slot a piece goes to, checked against the size cuDNN reports. */
static rnnc_status piece_slot(const fb_rnn *r, int pseudo, const char *name,
                              const fb_rnn_piece *pc, size_t *off)
{
    const fb_lin_slot *sl = &r->slots[pseudo * r->n_lin + pc->lin_id];
    size_t n = pc->bias ? sl->bias_n : sl->mat_n;
    *off = pc->bias ? sl->bias_off : sl->mat_off;
    if (n != (size_t)(pc->rows * pc->cols))
        return err_fail(RNNC_ERR_INTERNAL,
                        "%s of pseudo-layer %d: cuDNN's linear layer %d %s has %zu elements, "
                        "rnnc expected %lld",
                        name, pseudo, pc->lin_id, pc->bias ? "bias" : "matrix", n,
                        (long long)(pc->rows * pc->cols));
    return RNNC_OK;
}

static void put_piece(const fb_rnn *r, char *host, size_t off, const float *src, int64_t n)
{
    if (r->dtype == CUDNN_DATA_FLOAT) {
        memcpy(host + off, src, (size_t)n * sizeof(float));
        return;
    }
    uint16_t *dst = (uint16_t *)(void *)(host + off);
    for (int64_t i = 0; i < n; i++)
        dst[i] = fb_f32_to_f16(src[i]);
}

/* Copies every piece of every parameter of one pseudo-layer into host. */
static rnnc_status fill_pseudo(const fb_rnn *r, const rt_weights *w, int p, char *host)
{
    const ir_fn *fn = r->spec.fn[0];
    for (int i = 0; i < w->n_params; i++) {
        const char *name = fn->params[i].name;
        fb_rnn_piece pc[FB_MAX_GATES];
        int n = fb_rnn_pieces(r->mode, name, layer_dims(r, p), pc);
        if (n < 0)
            return err_fail(RNNC_ERR_INTERNAL, "cudnn %s has no parameter '%s'",
                            fb_rnn_mode_name(r->mode), name);
        const float *src = rt_weight(w, p, i);
        if (n > 0 && !src)
            return err_fail(RNNC_ERR_INVALID_ARG, "weight %s of pseudo-layer %d is not set",
                            name, p);
        for (int k = 0; k < n; k++) {
            size_t off;
            rnnc_status st = piece_slot(r, p, name, &pc[k], &off);
            if (st != RNNC_OK)
                return st;
            put_piece(r, host, off, src + pc[k].offset, pc[k].rows * pc[k].cols);
        }
    }
    return RNNC_OK;
}

static rnnc_status rnn_bind(void *state, const rt_weights *w)
{
    fb_rnn *r = state;
    if (w->pseudo_layers != r->pseudo || w->n_params != r->spec.fn[0]->n_params)
        return err_fail(RNNC_ERR_INTERNAL, "weights for %d pseudo-layers x %d params, model has "
                        "%d x %d", w->pseudo_layers, w->n_params, r->pseudo,
                        (int)r->spec.fn[0]->n_params);
    char *host = calloc(1, r->wsize); /* zero: anything cuDNN has and rnnc lacks stays 0 */
    if (!host)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cudnn weight staging (%zu bytes)", r->wsize);
    rnnc_status st = RNNC_OK;
    for (int p = 0; st == RNNC_OK && p < r->pseudo; p++)
        st = fill_pseudo(r, w, p, host);
    if (st == RNNC_OK)
        st = rt_cuda_context(r->spec.device);
    if (st == RNNC_OK)
        st = rt_dev_upload(r->wp, host, r->wsize, NULL);
    if (st == RNNC_OK)
        st = rt_dev_sync(NULL);
    free(host);
    r->bound = st == RNNC_OK;
    r->have_grad = false;
    return st;
}

static void get_piece(const fb_rnn *r, const char *host, size_t off, float *dst, int64_t n)
{
    if (r->dtype == CUDNN_DATA_FLOAT) {
        memcpy(dst, host + off, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *src = (const uint16_t *)(const void *)(host + off);
    for (int64_t i = 0; i < n; i++)
        dst[i] = fb_f16_to_f32(src[i]);
}

/* One download of the whole gradient buffer serves every weight_grad call
 * until the next backward. */
static rnnc_status fetch_grad(fb_rnn *r)
{
    if (r->dw_host_valid)
        return RNNC_OK;
    if (!r->dw_host) {
        r->dw_host = malloc(r->wsize);
        if (!r->dw_host)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cudnn gradient staging (%zu bytes)",
                            r->wsize);
    }
    rnnc_status st = rt_cuda_context(r->spec.device);
    if (st == RNNC_OK)
        st = rt_dev_download(r->dw_host, r->dwp, r->wsize, r->stream);
    if (st == RNNC_OK)
        st = rt_dev_sync(r->stream);
    r->dw_host_valid = st == RNNC_OK;
    return st;
}

static rnnc_status rnn_weight_grad(void *state, int pseudo, int param, float *out, int64_t count)
{
    fb_rnn *r = state;
    const ir_fn *fn = r->spec.fn[0];
    if (!r->have_grad)
        return err_fail(RNNC_ERR_STATE, "no weight gradients yet: call backward after a "
                        "training forward");
    if (pseudo < 0 || pseudo >= r->pseudo || param < 0 || param >= fn->n_params)
        return err_fail(RNNC_ERR_INVALID_ARG, "weight (%d, %d) out of range", pseudo, param);
    const char *name = fn->params[param].name;
    fb_rnn_piece pc[FB_MAX_GATES];
    int n = fb_rnn_pieces(r->mode, name, layer_dims(r, pseudo), pc);
    int64_t numel = fb_rnn_param_numel(r->mode, name, layer_dims(r, pseudo));
    if (n <= 0 || numel != count)
        return err_fail(RNNC_ERR_SHAPE, "gradient of %s: %lld elements asked, it has %lld",
                        name, (long long)count, (long long)(n <= 0 ? 0 : numel));
    rnnc_status st = fetch_grad(r);
    for (int k = 0; st == RNNC_OK && k < n; k++) {
        size_t off;
        st = piece_slot(r, pseudo, name, &pc[k], &off);
        if (st == RNNC_OK)
            get_piece(r, r->dw_host, off, out + pc[k].offset, pc[k].rows * pc[k].cols);
    }
    return st;
}

const rt_backend fb_backend_cudnn = {
    .name = "cudnn",
    .create = rnn_create,
    .bind = rnn_bind,
    .forward = fb_rnn_forward,
    .time_forward = fb_rnn_time_forward,
    .backward = fb_rnn_backward,
    .weight_grad = rnn_weight_grad,
    .time_training = fb_rnn_time_training,
    .destroy = rnn_destroy,
};
