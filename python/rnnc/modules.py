"""Modules shaped like torch.nn.LSTM / GRU / RNN, for any cell.

With PyTorch importable they are torch.nn.Modules (parameters, state_dict,
.to(), optimisers and autograd work as usual); without it they hold NumPy
arrays and take and return NumPy arrays."""
import functools
import operator
import os
from collections import OrderedDict

from . import _arrays as A
from .cell import Cell
from .errors import InvalidArgumentError, NotFoundError, ShapeError, UnsupportedError
from .model import Model, backend_available

try:
    if os.environ.get("RNNC_NO_TORCH"):
        raise ImportError("RNNC_NO_TORCH is set")
    import torch
    from torch import nn
    from ._autograd import RnncFunction
    _Base = nn.Module
    try:
        from . import _ops
    except (ImportError, AttributeError):  # a torch before 2.4 (no register_fake)
        _ops = None
except ImportError:  # NumPy only
    torch = nn = RnncFunction = _ops = None

    class _Base:
        def __init__(self):
            self.training = True

        def train(self, mode=True):
            self.training = bool(mode)
            return self

        def eval(self):
            return self.train(False)

        def __call__(self, *args, **kwargs):
            return self.forward(*args, **kwargs)


class CellRNN(_Base):
    """A recurrent layer stack running `cell` (a built-in name, a .cell path,
    .cell text, an rnnc.Cell or an rnnc.CellBuilder).

    Arguments as torch.nn.LSTM's, plus:
      backend  "auto", "fused", "cudnn", "cpu" or "interp"; None (default)
               follows the data: CUDA tensors run on "auto" on their device,
               host data on "cpu" where it is built, else "interp";
      dtype    of inputs and outputs: float32, float16 or bfloat16 (the parameters
               stay float32, rounded; with NumPy, whose arrays have no bfloat16, a
               bfloat16 module takes and returns float32 arrays of bfloat16 values);
      attrs, cell_name  as rnnc_cell_load ("eps=0"; a cell of a file holding several);
      hoist, math as rnnc_model_desc ("all"/"matmul"/"none", "ffma"/"tf32"/"3xtf32");
      seed     of the dropout masks without PyTorch (with it, each training call
               draws its masks' seed from torch's generator, as nn.LSTM draws its
               masks: torch.manual_seed repeats a run).
    Parameters are named as nn.LSTM's (weight_ih_l0, ..._reverse) from the
    cell's parameter names; each starts uniform in [-1/sqrt(H), 1/sqrt(H)] as
    in nn.LSTM.  bias=False drops the parameters whose names start with
    "bias" (they run as zeros)."""

    def __init__(self, cell, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None, backend=None, attrs=None, cell_name=None,
                 hoist="all", math="ffma", seed=0):
        super().__init__()
        self.cell = Cell.get(cell, attrs=attrs, cell_name=cell_name)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        self.backend, self.dtype = backend, A.rnnc_dtype(dtype)
        self._opts = dict(hoist=hoist, math=math, seed=seed)
        # a fresh dropout seed each training call, where anything drops
        self._drops = (self.dropout > 0 and num_layers > 1) or "dropout(" in self.cell.text
        self._seeds = None  # without torch: the generator of those seeds
        self._models = {}
        self._plans = {}
        self._host_key = None
        probe = self._model((backend or "interp", _device_index(device)))
        self._states = probe.states
        self._names = [n for n, _ in probe.weights]
        self._zeros = {}
        k = 1.0 / hidden_size ** 0.5
        for name, shape in probe.weights:
            if not bias and name.startswith("bias"):
                self._zeros[name] = A.numpy().zeros(shape, dtype="float32") if torch is None \
                    else torch.zeros(shape)
            else:
                self._add_param(name, shape, k, device)
        self._pnames = [n for n in self._names if n not in self._zeros]
        if _ops is not None:
            _ops.register(self)

    # ------------------------------------------------------------ parameters
    def _add_param(self, name, shape, k, device):
        if torch is not None:
            p = torch.empty(shape, dtype=torch.float32, device=device).uniform_(-k, k)
            self.register_parameter(name, nn.Parameter(p))
        else:
            np = A.numpy()
            if not hasattr(self, "_params"):
                self._params = OrderedDict()
            a = np.random.default_rng().uniform(-k, k, shape).astype(np.float32)
            a.flags.writeable = False
            self._params[name] = a

    def _live_weights(self):
        """The parameters as a list, in self._pnames' order, as the module has them now."""
        params = self._parameters if torch is not None else self._params
        try:
            # nn.Module keeps parameters in _parameters; reading it directly skips
            # Module.__getattr__'s search, which costs microseconds per call.
            return list(map(params.__getitem__, self._pnames))
        except KeyError:  # moved by a parametrisation or pruning: read as attributes
            return [getattr(self, n) for n in self._pnames]

    if torch is not None:
        def load_state_dict(self, state_dict, strict=True):
            """nn.Module's, also taking NumPy arrays (as rnnc.load_file gives)."""
            sd = {k: v if isinstance(v, torch.Tensor) else torch.as_tensor(v)
                  for k, v in state_dict.items()}
            return super().load_state_dict(sd, strict)
    else:
        def state_dict(self):
            """name -> read-only float32 array, named as nn.LSTM's state_dict."""
            return OrderedDict(self._params)

        def load_state_dict(self, state_dict, strict=True):
            np = A.numpy()
            missing = [n for n in self._params if n not in state_dict]
            extra = [n for n in state_dict if n not in self._params]
            if strict and (missing or extra):
                raise NotFoundError(f"load_state_dict: missing {missing}, unexpected {extra}")
            for n, v in state_dict.items():
                if n not in self._params:
                    continue
                a = np.array(v, dtype=np.float32)
                if a.shape != self._params[n].shape:
                    raise ShapeError(f"load_state_dict: '{n}' has shape {list(a.shape)}, "
                                     f"expected {list(self._params[n].shape)}")
                a.flags.writeable = False
                self._params[n] = a
            return missing, extra

        def parameters(self):
            return iter(self._params.values())

    if torch is not None:
        def _apply(self, fn, *args, **kwargs):
            """nn.Module's, under .to(), .cuda(), .half(), .bfloat16(), .float(): where it
            changes the parameters' dtype to float32, float16 or bfloat16, the module's
            dtype follows, as nn.LSTM's outputs follow its parameters'."""
            before = _param_dtype(self)
            out = super()._apply(fn, *args, **kwargs)
            after = _param_dtype(self)
            if after != before and after is not None and after != self.dtype:
                self.dtype = after
                self._models, self._plans, self._host_key = {}, {}, None
                if _ops is not None:  # its description names the dtype
                    _ops.register(self)
            return out

    def __getstate__(self):
        """Copies and pickles leave the library's models behind: they are made again."""
        state = dict(super().__getstate__() if torch is not None else self.__dict__)
        state["_models"], state["_plans"], state["_host_key"] = {}, {}, None
        return state

    def __setstate__(self, state):
        if torch is not None:
            super().__setstate__(state)
        else:
            self.__dict__.update(state)
        if "_pnames" not in state:  # pickled by an older rnnc
            self._plans = {}
            self._pnames = [n for n in self._names if n not in self._zeros]
        if _ops is not None:
            _ops.register(self)

    def flatten_parameters(self):
        """nn.LSTM's; rnnc keeps its own copy of the weights, so nothing to do."""

    def compile_bundle(self, path, batch_sizes=(), archs=("sm_90",), sm_count=0):
        """rnnc.compile_bundle for this module's model (its cell, sizes, layers, dtype and
        options): the fused kernels it runs at each batch size and CUDA arch, made without a
        GPU, and the cpu backend's code for each cpu target in archs ("cpu",
        "cpu:x86-64-v3"), in one file.  rnnc.load_bundle(path) in another process, before
        its modules run, spares them NVRTC and LLVM's compile.  Returns path."""
        from .cache import compile_bundle
        return compile_bundle(path, self.cell, self.input_size, self.hidden_size, batch_sizes,
                              archs, sm_count, proj_size=self.proj_size,
                              num_layers=self.num_layers, bidirectional=self.bidirectional,
                              batch_first=self.batch_first, dropout=self.dropout,
                              dtype=self.dtype, math=self._opts["math"],
                              hoist=self._opts["hoist"])

    # ------------------------------------------------------------ models
    def _model(self, key):
        """The model for key (backend, device[, dtype]: the module's unless given)."""
        m = self._models.get(key)
        if m is None:
            backend, device = key[:2]
            m = Model(self.cell, self.input_size, self.hidden_size, self.proj_size,
                      self.num_layers, self.bidirectional, self.batch_first, self.dropout,
                      dtype=key[2] if len(key) > 2 else self.dtype, backend=backend,
                      device=device, **self._opts)
            m._sig = m._held = None  # what _sync last handed the model
            self._models[key] = m
        return m

    def _model_for(self, x, half=None):
        """The model for a call on x (half: in float16 under autocast; None: ask autocast)."""
        if A.is_torch(x) and x.is_cuda:
            key = (self.backend or "auto", x.device.index)
            if half is None:
                half = self._autocast(x)
            return self._model(key + (A.F16,) if half else key)
        if self.backend is not None:
            return self._model((self.backend, 0))
        if self._host_key is None:  # cpu where built and able, else the interpreter
            self._host_key = ("interp", 0)
            if backend_available("cpu"):
                try:
                    self._model(("cpu", 0))
                    self._host_key = ("cpu", 0)
                except UnsupportedError:
                    pass
        return self._model(self._host_key)

    def _ready(self, m, ws=None):
        """Model m before a call: the weights (as _sync) and the dropout seed."""
        self._sync(m, ws)
        self._draw_seed(m)

    def _sync(self, m, ws=None):
        """Hands the model the weights that changed since it last saw them (ws: the
        parameters in _pnames' order; None: the module's own)."""
        if ws is None:
            ws = self._live_weights()
        sig = _signature(ws)
        if sig != m._sig:
            self._upload(m, ws, sig)

    def _upload(self, m, ws, sig):
        old = m._sig
        if old is None:
            for name, z in self._zeros.items():
                m.set_weight(name, z)
        for k, (name, w) in enumerate(zip(self._pnames, ws)):
            if old is None or any(o[k] != s[k] for o, s in zip(old, sig)):
                m.set_weight(name, w)
        # ws is held so that the ids in sig stay those of live objects.
        m._sig, m._held = sig, ws

    @property
    def backend_name(self):
        """The backend of the last model used (or None before a forward)."""
        return next(reversed(self._models.values())).backend if self._models else None

    # ------------------------------------------------------------ forward
    def _init_list(self, hx):
        if hx is None:
            return None
        n = len(self._states)
        if n == 1 and not isinstance(hx, (tuple, list)):
            return [hx]
        if not isinstance(hx, (tuple, list)) or len(hx) != n:
            raise InvalidArgumentError(f"hx: expected {'a tensor' if n == 1 else 'a tuple'} of "
                                       f"{n} initial states ({', '.join(self._states)})")
        return list(hx)

    def _needs_grad(self, x, init, ws):
        if torch is None or not A.is_torch(x) or not torch.is_grad_enabled():
            return False
        if x.requires_grad or any(i is not None and i.requires_grad for i in init or ()):
            return True
        return any(w.requires_grad for w in ws)

    def forward(self, input, hx=None, lengths=None):
        """(output, h_n) or (output, (h_n, c_n)) exactly as nn.LSTM / nn.GRU
        return; input may be a PackedSequence, an unbatched [T, I] tensor, or
        padded with `lengths` ([B] sequence lengths)."""
        if lengths is None and not _tracing():
            out = self._planned(input, hx)
            if out is not None:
                return out
        return self._forward(input, hx, lengths)

    def _no_backward_training(self):
        """The library's training flag for a call no backward can follow: set only where
        something drops (dropout applies in train mode, as in nn.LSTM); otherwise an
        inference forward, which records nothing for a backward and, on fused, needs no
        training kernels (a module left in train mode under torch.no_grad compiled and ran
        them)."""
        return self.training and getattr(self, "_drops", True)

    def _planned(self, x, hx, half=None, ws=None, training=None):
        """The call through a plan (_plan.py) made for inputs like x, or None where
        it does not apply (_forward then takes every case, as the reference).
        half as for _model_for, ws as for _sync; training the library's flag (None: an
        eager call, which takes the autograd path where a backward may follow)."""
        tp = type(x)
        if tp is _Tensor:
            if half is None:
                half = self._autocast(x)
            key = (tp, x.shape, x.dtype, x.device, self.backend, half)
        elif tp.__name__ == "ndarray" and tp.__module__ == "numpy":
            key = (tp, x.shape, x.dtype, None, self.backend)
        else:
            return None
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(x, key, half)
        if plan is False:
            return None
        init = self._init_list(hx)
        if tp is _Tensor and _grad_enabled() and self._needs_grad(x, init, self._live_weights()):
            return None  # the autograd path
        self._ready(plan.model, ws)
        return plan.run(x, init, self._no_backward_training() if training is None else training)

    def _draw_seed(self, m):
        """Before a training call that may drop: a new seed for the masks, so each
        call draws fresh ones, from torch's generator (or a NumPy one seeded with
        `seed`); the backward of the call keeps them."""
        # (getattr: a module pickled before these attributes existed)
        if not (self.training and getattr(self, "_drops", False)):
            return
        if torch is not None:
            s = int(torch.randint(0, 2**62, (1,)).item())
        else:
            if getattr(self, "_seeds", None) is None:
                self._seeds = A.numpy().random.default_rng(self._opts["seed"])
            s = int(self._seeds.integers(0, 2**62))
        m.set_seed(s)

    def _autocast(self, x):
        """A float32 module's call on CUDA tensors under torch.autocast runs in float16 and
        returns float16, as nn.LSTM and nn.GRU do there (whatever autocast's dtype: cuDNN
        has no bfloat16 RNN, and PyTorch 2.11 on the H200 gave float16 under both)."""
        return self.dtype == A.F32 and x.is_cuda and _autocast_cuda()

    def _plan(self, x, key, half):
        if len(self._plans) >= _MAX_PLANS:  # many shapes: start again rather than grow
            self._plans.clear()
        plan = self._model_for(x, half).plan(x) or False
        self._plans[key] = plan
        return plan

    def _forward(self, input, hx, lengths):
        packed = None
        if nn is not None and isinstance(input, nn.utils.rnn.PackedSequence):
            if lengths is not None:
                raise InvalidArgumentError("a PackedSequence carries its own lengths")
            packed = input
            input, lengths = nn.utils.rnn.pad_packed_sequence(input, batch_first=self.batch_first)
        init = self._init_list(hx)
        batched = len(input.shape) == 3
        if not batched:
            if len(input.shape) != 2:
                raise ShapeError(f"input: expected 2 or 3 dims, got shape {list(input.shape)}")
            input = _unsqueeze(input, 0 if self.batch_first else 1)
            init = None if init is None else [None if i is None else _unsqueeze(i, 1)
                                              for i in init]
        if _tracing():  # torch.compile: one opaque operator in the graph (_ops.py)
            if lengths is not None and not A.is_torch(lengths):
                lengths = torch.as_tensor(lengths, dtype=torch.int64)
            y, finals = _ops.call(self, input, init, lengths, self._autocast(input))
        else:
            y, finals = self._run(input, init, lengths)
        if not batched:
            y = _squeeze(y, 0 if self.batch_first else 1)
            finals = [_squeeze(f, 1) for f in finals]
        if packed is not None:
            y = _repack(y, lengths, packed, self.batch_first)
        return y, finals[0] if len(finals) == 1 else tuple(finals)

    def _run(self, x, init, lengths):
        """(y, finals) of the model for x, through autograd where a gradient is wanted."""
        m = self._model_for(x)
        self._ready(m)
        ws = m._held
        if self._needs_grad(x, init, ws):
            outs = RnncFunction.apply(m, lengths, self.training, self._pnames,
                                      len(self._states), x,
                                      *(init or [None] * len(self._states)), *ws)
            return outs[0], list(outs[1:])
        return m.forward(x, init, lengths, training=self._no_backward_training())

    def extra_repr(self):
        s = f"{self.cell.name}, {self.input_size}, {self.hidden_size}"
        for k, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                           ("dropout", 0.0), ("bidirectional", False), ("proj_size", 0),
                           ("backend", None)):
            if getattr(self, k) != default:
                s += f", {k}={getattr(self, k)!r}"
        return s

    if torch is None:
        def __repr__(self):
            return f"{type(self).__name__}({self.extra_repr()})"


class LSTM(CellRNN):
    """torch.nn.LSTM on rnnc (the built-in lstm cell)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None,
                 backend=None, **kw):
        super().__init__("lstm", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype, backend, **kw)


class GRU(CellRNN):
    """torch.nn.GRU on rnnc (the built-in gru cell)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, backend=None,
                 proj_size=0, **kw):
        if proj_size:
            raise InvalidArgumentError("proj_size is an LSTM option")
        super().__init__("gru", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype, backend, **kw)


class RNN(CellRNN):
    """torch.nn.RNN on rnnc (the built-in rnn_tanh or rnn_relu cell)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None,
                 backend=None, proj_size=0, **kw):
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"nonlinearity must be tanh or relu, not {nonlinearity!r}")
        if proj_size:
            raise InvalidArgumentError("proj_size is an LSTM option")
        super().__init__("rnn_" + nonlinearity, input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, 0, device, dtype, backend, **kw)
        self.nonlinearity = nonlinearity


_MAX_PLANS = 64  # input kinds (shape, dtype, device) a module keeps a plan for
_tracing = None  # () -> whether torch.compile is tracing the call (below)
if torch is not None:
    _Tensor, _grad_enabled = torch.Tensor, torch.is_grad_enabled
    _version, _data_ptr = operator.attrgetter("_version"), operator.methodcaller("data_ptr")

    # Chosen once, not per call: before PyTorch 2.4 it took no device and meant CUDA.
    try:
        torch.is_autocast_enabled("cuda")
        _autocast_cuda = functools.partial(torch.is_autocast_enabled, "cuda")
    except TypeError:
        _autocast_cuda = torch.is_autocast_enabled

    # torch.compile must not trace into a call: traced, the weights' version
    # checks and the raw pointers handed to the library were compiled as if
    # they were tensor code, and a compiled model's outputs were wrong (7.9%
    # off on the H200, python/tests/gpu_torch_graphs.py).  While tracing, a
    # module's call is one custom operator (_ops.py), opaque to the compiler,
    # which keeps the graph whole; with a torch before 2.4 its forward
    # is disabled instead, and dynamo breaks the graph around it.  Either is
    # taken only while compiling: an eager call pays one check.  rnnc.Model's
    # calls, which hand the library pointers too, are disabled likewise.
    _compiler = getattr(torch, "compiler", None)
    _disable = getattr(_compiler, "disable", None)
    _compiling = getattr(_compiler, "is_compiling", None)

    def _opaque_when_compiling(cls, name):
        eager = getattr(cls, name)
        opaque = _disable(eager)

        def call(*args, **kwargs):
            return (opaque if _compiling() else eager)(*args, **kwargs)

        call.__doc__, call.__name__ = eager.__doc__, eager.__name__
        setattr(cls, name, call)

    if _disable is not None and _compiling is not None:
        if _ops is not None:
            _tracing = _compiling
        else:
            _opaque_when_compiling(CellRNN, "forward")
        for _name in ("forward", "backward", "weight_grad", "set_weight"):
            _opaque_when_compiling(Model, _name)
        Model.__call__ = Model.forward
else:
    _Tensor = _grad_enabled = _autocast_cuda = None
if _tracing is None:
    def _tracing():
        return False


def _signature(ws):
    """What tells whether the weights ws changed since a model last saw them.

    The objects (by id: a parameter replaced), and for torch tensors their
    in-place version counters (optimiser steps, copy_, load_state_dict) and data
    pointers (`param.data = ...`, as Module.to() does, keeps the counter); NumPy
    parameters are read-only arrays, replaced rather than changed."""
    ids = list(map(id, ws))
    if torch is None:
        return (ids,)
    try:
        versions = list(map(_version, ws))
    except RuntimeError:  # inference tensors keep no version counter: always hand them over
        versions = [object()] * len(ws)
    return (ids, versions, list(map(_data_ptr, ws)))


def _param_dtype(module):
    """The rnnc dtype of a module's first parameter (None: none, or another dtype)."""
    p = next(iter(module._parameters.values()), None)
    d = A.dtype_of(p) if p is not None else None
    return d if d in (A.F32, A.F16, A.BF16) else None


def _device_index(device):
    if device is None or torch is None:
        return 0
    d = torch.device(device)
    return d.index or 0 if d.type == "cuda" else 0


def _unsqueeze(t, dim):
    return t.unsqueeze(dim) if A.is_torch(t) else A.numpy().expand_dims(t, dim)


def _squeeze(t, dim):
    return t.squeeze(dim) if A.is_torch(t) else A.numpy().squeeze(t, dim)


def _repack(y, lengths, like, batch_first):
    """y padded (original batch order) as a PackedSequence laid out as `like`."""
    rnn = nn.utils.rnn
    bdim = 0 if batch_first else 1
    if like.sorted_indices is not None:
        y = y.index_select(bdim, like.sorted_indices)
        lengths = lengths.index_select(0, like.sorted_indices.cpu())
    data = rnn.pack_padded_sequence(y, lengths.cpu(), batch_first=batch_first).data
    return rnn.PackedSequence(data, like.batch_sizes, like.sorted_indices, like.unsorted_indices)
