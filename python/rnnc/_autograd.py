"""Training through torch.autograd: the forward is a training forward of the
model, the backward is rnnc_model_backward plus rnnc_model_weight_grad."""
import torch
from torch.autograd.function import once_differentiable

from .errors import StateError


class RnncFunction(torch.autograd.Function):
    """apply(model, lengths, training, names, n_init, x, *init, *weights) -> (y, *finals).

    `names` are the state_dict names of `weights`; a None init entry means zeros.
    The library keeps what one backward needs for the model's last training
    forward only, so a backward must come before the next forward of the same
    model: an older graph's backward raises StateError instead of being wrong."""

    @staticmethod
    def forward(ctx, model, lengths, training, names, n_init, x, *rest):
        init = list(rest[:n_init])
        y, finals = model.forward(x, init, lengths, training=training)
        ctx.model, ctx.generation, ctx.names, ctx.n_init = model, model.generation, names, n_init
        ctx.weight_devices = [(w.device, w.dtype) for w in rest[n_init:]]
        return (y, *finals)

    @staticmethod
    @once_differentiable  # the library's backward is not itself differentiable: say so
    def backward(ctx, dy, *dfinals):
        m = ctx.model
        if m.generation != ctx.generation:
            raise StateError("rnnc: this graph's forward is no longer the model's last training "
                             "forward; call backward before running the module again (or use "
                             "one module per concurrent graph)")
        dx, dinit = m.backward(dy, list(dfinals))
        need = ctx.needs_input_grad
        wgrads = []
        for k, (name, (dev, dt)) in enumerate(zip(ctx.names, ctx.weight_devices)):
            if need[6 + ctx.n_init + k]:
                wgrads.append(m.weight_grad(name, "torch").to(device=dev, dtype=dt))
            else:
                wgrads.append(None)
        dinit = [d if need[6 + s] else None for s, d in enumerate(dinit)]
        return (None, None, None, None, None, dx if need[5] else None, *dinit, *wgrads)
