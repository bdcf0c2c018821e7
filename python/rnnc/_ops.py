"""A module's call as PyTorch custom operators (torch.library), so that
torch.compile keeps it in one graph (fullgraph=True, torch.export) instead of
breaking the graph around it.

Requires: torch with torch.library.register_fake and register_autograd (2.4
on).  Keeps: what a call does eagerly.  `rnnc::rnn` runs the module's model
over x (on the parameters passed, with its dropout seed and the autocast
choice made while tracing) and returns y, the final states and the model's
training generation (a CPU int64 tensor, so that a backward can tell that
its forward is still the model's last one); `rnnc::rnn_backward` is its
backward, gradients of x, the initial states and the parameters as asked
for.  Both are opaque to the compiler: a fake
implementation gives the outputs' shapes from the model's, and at run time
they call the library as an eager call does.

A graph names a module twice: by its id, for the module itself while it
lives in the process that traced the graph, and by its description (the
cell's text, sizes, options: `spec`).  Where the id finds no module of that
description (a program saved by torch.export and loaded elsewhere), a module
made from the description runs the call on the weights the graph passes, one
per module of the traced program (its id there): two layers of one
description keep a model each, so neither reuploads the other's weights at
every call and a training graph's backwards each find their own forward."""
import json
import weakref

import torch

from . import _arrays as A
from .errors import StateError

_modules = weakref.WeakValueDictionary()
_made = {}  # (id in the traced program, description) -> the module made from it


def register(module):
    """Makes module findable from a graph's call by its id and description, kept as
    module._op_id and module._op_spec (its __init__ and __setstate__ call this: a copy
    is another module, under its own id; so does a change of its dtype)."""
    module._op_id = id(module)
    module._op_spec = json.dumps(dict(
        cell=module.cell.text, cell_name=module.cell.name, input_size=module.input_size,
        hidden_size=module.hidden_size, num_layers=module.num_layers, bias=module.bias,
        batch_first=module.batch_first, dropout=module.dropout,
        bidirectional=module.bidirectional, proj_size=module.proj_size, dtype=module.dtype,
        backend=module.backend, **module._opts), sort_keys=True)
    _modules[module._op_id] = module


def _module(handle, spec):
    m = _modules.get(handle)
    if m is not None and m._op_spec == spec:
        return m
    m = _made.get((handle, spec))
    if m is None:
        from .cell import Cell
        from .modules import CellRNN
        d = json.loads(spec)
        d["cell"] = Cell.parse(d["cell"], cell_name=d.pop("cell_name"))
        m = _made[handle, spec] = CellRNN(**d)
    return m


# Defined through torch.library.Library rather than the custom_op decorator,
# whose wrapper checks every input's storage against the outputs' on each
# call: a compiled call at T = 1 took 116 us instead of 149-171 on the H200
# (bench/results/h200/python/).
# Tagged unsafe for CUDA graphs: a call does host work a replay would skip
# (the weights' checks and upload, the dropout seed, the generation, the
# buffers a backward reads), so inductor's "reduce-overhead" mode leaves it
# out of its graphs (it had refused the whole training loop: "tensors in the
# cudagraph pool not tracked as outputs").
_UNSAFE = tuple(t for t in [getattr(torch.Tag, "cudagraph_unsafe", None)] if t is not None)
_lib = torch.library.Library("rnnc", "DEF")
_lib.define("rnn(int handle, str spec, bool half, bool training, Tensor x, Tensor?[] init, "
            "Tensor[] weights, Tensor? lengths) -> Tensor[]", tags=_UNSAFE)
_lib.define("rnn_backward(int handle, str spec, bool half, Tensor generation, Tensor x, "
            "Tensor? dy, Tensor?[] dfinals, Tensor[] weights, bool[] need) -> Tensor[]",
            tags=_UNSAFE)


def _rnn(handle, spec, half, training, x, init, weights, lengths):
    """[y, *finals, generation]; `weights` are the module's parameters (in its
    _pnames' order)."""
    mod = _module(handle, spec)
    if mod._op_id != handle:  # made from the description: the graph's mode is its
        mod.training = training
    # The module's training mode was read while tracing, and is the library's flag as it
    # is: autograd is off inside the operator, which cannot tell whether a backward follows.
    out = mod._planned(x, init or None, half, weights, training) if lengths is None and \
        training == mod.training else None
    m = mod._model_for(x, half)
    if out is not None:
        y, f = out
        finals = list(f) if type(f) is tuple else [f]
    else:
        mod._ready(m, weights)
        y, finals = m.forward(x, init or None, lengths, training=training)
    return [y, *finals, torch.tensor([m.generation], dtype=torch.int64)]


def _rnn_fake(handle, spec, half, training, x, init, weights, lengths):
    m = _module(handle, spec)._model_for(x, half)
    _, b, yshape = m._shapes_for(x)
    dt = A.torch_dtype(m.dtype)
    finals = [x.new_empty(m._state_shape(s, b), dtype=dt) for s in range(len(m.states))]
    return [x.new_empty(yshape, dtype=dt), *finals, torch.empty(1, dtype=torch.int64)]


def _rnn_backward(handle, spec, half, generation, x, dy, dfinals, weights, need):
    """The gradients asked for by `need` (x, each initial state, each weight), in that
    order; dx of x's dtype, the weights' of theirs, the states' of the model's.  A None
    gradient (an output that reached no loss) counts as zeros."""
    mod = _module(handle, spec)
    m = mod._model_for(x, half)
    if m.generation != int(generation.item()):
        raise StateError("rnnc: this graph's forward is no longer the model's last training "
                         "forward; call backward before running the module again (or use "
                         "one module per concurrent graph)")
    if dy is None:
        dy = x.new_zeros(m._shapes_for(x)[2], dtype=A.torch_dtype(m.dtype))
    dx, dinit = m.backward(dy, list(dfinals))
    n = len(dinit)
    out = [dx.to(x.dtype)] if need[0] else []
    out += [d for d, k in zip(dinit, need[1:1 + n]) if k]
    for name, w, k in zip(mod._pnames, weights, need[1 + n:]):
        if k:
            out.append(m.weight_grad(name, "torch").to(device=w.device, dtype=w.dtype))
    return out


def _rnn_backward_fake(handle, spec, half, generation, x, dy, dfinals, weights, need):
    m = _module(handle, spec)._model_for(x, half)
    n = len(m.states)
    b = x.shape[0] if m.batch_first else x.shape[1]
    dt = A.torch_dtype(m.dtype)
    out = [x.new_empty(x.shape)] if need[0] else []
    out += [x.new_empty(m._state_shape(s, b), dtype=dt) for s in range(n) if need[1 + s]]
    out += [w.new_empty(w.shape) for w, k in zip(weights, need[1 + n:]) if k]
    return out


def _setup(ctx, inputs, output):
    handle, spec, half, _, x, init, weights, _ = inputs
    ctx.handle, ctx.spec, ctx.half, ctx.n_init = handle, spec, half, len(init)
    # output: y, a final state per state, the generation; no init: no state's gradient
    states = [i is not None and i.requires_grad for i in init] or [False] * (len(output) - 2)
    ctx.need = [x.requires_grad] + states + [w.requires_grad for w in weights]
    ctx.save_for_backward(output[-1], x, *weights)


def _backward(ctx, *grads):
    grads = list(grads[0]) if len(grads) == 1 and isinstance(grads[0], (list, tuple)) \
        else list(grads)
    generation, x, *weights = ctx.saved_tensors
    dy, finals = grads[0], grads[1:-1]
    n, need = len(finals), ctx.need
    got = iter(torch.ops.rnnc.rnn_backward(ctx.handle, ctx.spec, ctx.half, generation, x, dy,
                                           finals, weights, need))
    dx = next(got) if need[0] else None
    dinit = [next(got) if k else None for k in need[1:1 + n]] if ctx.n_init else []
    dw = [next(got) if k else None for k in need[1 + n:]]
    return None, None, None, None, dx, dinit, dw, None


_lib.impl("rnn", _rnn, "CompositeExplicitAutograd")
_lib.impl("rnn_backward", _rnn_backward, "CompositeExplicitAutograd")
torch.library.register_fake("rnnc::rnn", _rnn_fake, lib=_lib)
torch.library.register_fake("rnnc::rnn_backward", _rnn_backward_fake, lib=_lib)
torch.library.register_autograd("rnnc::rnn", _backward, setup_context=_setup, lib=_lib)


def call(module, x, init, lengths, half):
    """(y, finals) of module over x through rnnc::rnn; init a list (a tensor per state) or None."""
    ws = module._live_weights()
    outs = torch.ops.rnnc.rnn(module._op_id, module._op_spec, half, module.training, x,
                              init or [], ws, lengths)
    return outs[0], list(outs[1:-1])
