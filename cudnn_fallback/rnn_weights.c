/*
 * rnn_weights.c: the cudnn backend's weights in device memory: where each
 * PyTorch weight sits in cuDNN's flat weight space (as cuDNN reports it),
 * and running on a caller's own weight and gradient buffers of that
 * layout, so an optimiser updates them in place with no copy.
 */
#include "cudnn_fallback/rnn.h"

rnnc_status fb_rnn_weight_layout(const fb_rnn *r, size_t *bytes, size_t *offsets)
{
    const ir_fn *fn = r->spec.fn[0];
    for (int p = 0; offsets && p < r->pseudo; p++) {
        ir_sizes sz = rt_spec_sizes(&r->spec, p / r->dirs);
        fb_rnn_dims d = {.in = sz.I, .hidden = r->hidden, .proj = r->proj};
        for (int i = 0; i < fn->n_params; i++) {
            rnnc_status st = fb_rnn_param_offset(r->mode, fn->params[i].name, d,
                                                 &r->slots[p * r->n_lin], r->esz,
                                                 &offsets[p * fn->n_params + i]);
            if (st != RNNC_OK)
                return st;
        }
    }
    *bytes = r->wsize;
    return RNNC_OK;
}

rnnc_status fb_rnn_bind_buffer(fb_rnn *r, CUdeviceptr weights, CUdeviceptr grads, size_t bytes)
{
    if (weights && bytes != r->wsize)
        return err_fail(RNNC_ERR_SHAPE,
                        "the weight buffer has %zu bytes; cuDNN's weight space for this model "
                        "has %zu (rnnc_model_weight_buffer)",
                        bytes, r->wsize);
    r->ext_w = weights != 0;
    r->ext_dw = weights && grads;
    r->wp = weights ? weights : r->w.p;
    r->dwp = r->ext_dw ? grads : r->dw.p;
    /* The gradients of a backward before this call are not in the new buffer. */
    r->have_grad = false;
    r->dw_host_valid = false;
    return RNNC_OK;
}
