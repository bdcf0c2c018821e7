"""rnnc.Model: one rnnc_model (a cell, sizes, weights and a backend) and its
forward and backward over torch tensors or NumPy arrays.

Every pointer handed to the library is checked here first (shape, dtype,
contiguity, device), since the C side trusts the buffers it is given."""
import ctypes
import sys
import threading

from . import _arrays as A
from . import _plan
from ._lib import (BackwardArgs, ForwardArgs, ModelDesc, c_double, c_i64, c_int, c_void_p, lib,
                   text)
from .cell import Cell, _HOIST, _MATH
from .errors import check, InvalidArgumentError, NotFoundError, ShapeError, StateError

BACKENDS = ("auto", "interp", "cpu", "fused", "cudnn")
_GPU = (3, 4)  # fused, cudnn


def backend_available(name):
    """Built into this librnnc and usable on this machine now."""
    return bool(lib.rnnc_backend_available(_backend_id(name)))


def _backend_id(name):
    out = c_int()
    check(lib.rnnc_backend_from_name(name.encode(), ctypes.byref(out)))
    return out.value


def version():
    return text(lib.rnnc_version_string())


def model_desc(cell, input_size, hidden_size, proj_size=0, num_layers=1, bidirectional=False,
               batch_first=False, dropout=0.0, seed=0, dtype=None, math="ffma", backend="auto",
               hoist="all", device=0):
    """The rnnc_model_desc of a model of `cell` (an rnnc.Cell, which must outlive it)."""
    d = ModelDesc()
    lib.rnnc_model_desc_init(ctypes.byref(d))
    d.cell = cell._h
    d.input_size, d.hidden_size, d.proj_size = input_size, hidden_size, proj_size
    d.num_layers, d.bidirectional, d.batch_first = num_layers, bidirectional, batch_first
    d.dropout, d.seed = dropout, seed
    d.dtype = A.rnnc_dtype(dtype)
    d.math, d.backend, d.hoist, d.device = _MATH[math], _backend_id(backend), _HOIST[hoist], device
    return d


def _current_stream(torch, device):
    """torch's current CUDA stream of `device` as a CUstream (an int)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object: faster
    if raw is not None:
        return raw(device.index)
    return torch.cuda.current_stream(device).cuda_stream


class _Buffers:
    """Allocation and pointers in the framework of the caller's input."""
    __slots__ = ("torch", "home", "dev", "work", "dt", "stream", "moved", "bits")

    def __init__(self, x, dtype, gpu_backend, device):
        self.torch = A.is_torch(x)
        # NumPy has no bfloat16: such a model's arrays go to the library as bits and
        # come back as float32 (A.to_bf16_bits, A.from_bf16_bits).
        self.bits = not self.torch and dtype == A.BF16
        if self.torch:
            torch = sys.modules["torch"]
            self.home = x.device
            self.dev = x.is_cuda and gpu_backend
            if self.dev and x.device.index != device:
                raise InvalidArgumentError(f"input is on {x.device}, the model on cuda:{device}")
            self.work = self.home if (self.dev or not x.is_cuda) else torch.device("cpu")
            self.dt = A.torch_dtype(dtype)
            self.stream = _current_stream(torch, self.home) if self.dev else None
            self.moved = self.work != self.home
        else:
            self.dev, self.stream, self.moved = False, None, False
            self.dt = A.np_dtype(dtype)

    def take(self, t, name, shape):
        """t as a contiguous buffer of the model's dtype where the call runs."""
        if self.torch:
            if not A.is_torch(t):
                raise InvalidArgumentError(f"{name}: expected a torch tensor like the input")
            # Per-call cost matters at T = 1: a tensor already in place is used as it is.
            if t.dtype != self.dt or t.device != self.work or not t.is_contiguous():
                t = t.detach().to(device=self.work, dtype=self.dt).contiguous()
        elif self.bits:
            t = A.to_bf16_bits(t)
        else:
            t = A.numpy().ascontiguousarray(t, dtype=self.dt)
        if tuple(t.shape) != tuple(shape):
            raise ShapeError(f"{name}: expected shape {list(shape)}, got {list(t.shape)}")
        return t

    def empty(self, shape):
        if self.torch:
            return sys.modules["torch"].empty(shape, dtype=self.dt, device=self.work)
        return A.numpy().empty(shape, dtype=self.dt)

    def ptr(self, t):
        return t.data_ptr() if self.torch else t.ctypes.data

    def back(self, t):
        """An output as the caller's framework and device."""
        if self.bits:
            return A.from_bf16_bits(t)
        return t.to(self.home) if self.moved else t


class Model:
    """A model: `cell` (a name, path, .cell text, Cell or CellBuilder) bound
    to sizes, layers and a backend, as rnnc_model_desc describes."""

    def __init__(self, cell, input_size, hidden_size, proj_size=0, num_layers=1,
                 bidirectional=False, batch_first=False, dropout=0.0, seed=0, dtype=None,
                 math="ffma", backend="auto", hoist="all", device=0, attrs=None, cell_name=None):
        self.cell = Cell.get(cell, attrs=attrs, cell_name=cell_name)
        d = model_desc(self.cell, input_size, hidden_size, proj_size, num_layers, bidirectional,
                       batch_first, dropout, seed, dtype, math, backend, hoist, device)
        h = c_void_p()
        check(lib.rnnc_model_create(ctypes.byref(h), ctypes.byref(d)))
        self._h = h
        self.input_size, self.hidden_size, self.proj_size = input_size, hidden_size, proj_size
        self.num_layers, self.bidirectional, self.batch_first = num_layers, bidirectional, batch_first
        self.dtype, self.device = d.dtype, device
        self.backend_id = lib.rnnc_model_backend(h)
        self.backend = text(lib.rnnc_backend_name(self.backend_id))
        self.gpu = self.backend_id in _GPU
        self.dirs = 2 if bidirectional else 1
        hout = c_i64()
        check(lib.rnnc_model_output_size(h, ctypes.byref(hout)))
        self.output_size = hout.value
        self.states = self.cell.states
        self.state_sizes = []
        for s in range(len(self.states)):
            n = c_i64()
            check(lib.rnnc_model_state_size(h, s, ctypes.byref(n)))
            self.state_sizes.append(n.value)
        self.weights = self._weight_list()
        self._shapes = dict(self.weights)
        self.generation = 0  # training forwards so far: a backward belongs to the last
        self._last = None
        # The library takes a handle from one thread at a time, and a plan's
        # ForwardArgs is written per call: calls on one model take turns.
        self._lock = threading.Lock()

    def __del__(self):
        if getattr(self, "_h", None):
            lib.rnnc_model_destroy(self._h)
            self._h = None

    def __reduce__(self):
        raise TypeError("an rnnc.Model holds a library handle and cannot be copied or pickled")

    def _weight_list(self):
        out = []
        for i in range(lib.rnnc_model_weight_count(self._h)):
            name, shape, rank = ctypes.c_char_p(), (c_i64 * 8)(), c_int()
            check(lib.rnnc_model_weight_info(self._h, i, ctypes.byref(name), 8, shape,
                                             ctypes.byref(rank)))
            out.append((text(name.value), tuple(shape[k] for k in range(rank.value))))
        return out

    # ------------------------------------------------------------ weights
    def set_weight(self, name, value):
        """One weight by its state_dict name, from a torch tensor or an array (any float dtype)."""
        if name not in self._shapes:
            raise NotFoundError(f"model has no weight '{name}' (cell '{self.cell.name}')")
        if A.is_torch(value):
            v = value.detach().to(device="cpu", dtype=sys.modules["torch"].float32).contiguous()
            ptr, shape = v.data_ptr(), tuple(v.shape)
        else:
            v = A.numpy().ascontiguousarray(value, dtype="float32")
            ptr, shape = v.ctypes.data, v.shape
        if tuple(shape) != self._shapes[name]:
            raise ShapeError(f"weight '{name}': expected shape {list(self._shapes[name])}, "
                             f"got {list(shape)}")
        n = 1
        for d in shape:
            n *= d
        with self._lock:
            check(lib.rnnc_model_set_weight(self._h, name.encode(), ptr, n))

    def set_weights(self, tensors, prefix=""):
        """Every weight from a dict name -> tensor (a state_dict); no name may be missing or extra.

        With `prefix` (e.g. "encoder.lstm."), `tensors` is a whole model's state_dict: only the
        names under the prefix are read, without it, and the others are left alone, as
        rnnc_model_set_weights_prefix does; returns how many were left."""
        left = 0
        if prefix:
            left = sum(1 for n in tensors if not n.startswith(prefix))
            tensors = {n[len(prefix):]: v for n, v in tensors.items() if n.startswith(prefix)}
        missing = [n for n, _ in self.weights if n not in tensors]
        extra = [n for n in tensors if n not in self._shapes]
        if missing or extra:
            raise NotFoundError(f"weights: missing {missing}, unexpected {extra}")
        for n, _ in self.weights:
            self.set_weight(n, tensors[n])
        return left

    def load_weights(self, path, prefix=""):
        from .files import load_file
        return self.set_weights(load_file(path), prefix)

    # ------------------------------------------------------------ forward
    def _shapes_for(self, x):
        if len(x.shape) != 3:
            raise ShapeError(f"x: expected 3 dims ([T, B, I] or [B, T, I] with batch_first), "
                             f"got shape {list(x.shape)}")
        t, b = (x.shape[1], x.shape[0]) if self.batch_first else (x.shape[0], x.shape[1])
        if x.shape[2] != self.input_size:
            raise ShapeError(f"x: input size {x.shape[2]}, the model's is {self.input_size}")
        y = (b, t, self.dirs * self.output_size) if self.batch_first else \
            (t, b, self.dirs * self.output_size)
        return t, b, y

    def _state_shape(self, s, b):
        return (self.num_layers * self.dirs, b, self.state_sizes[s])

    def _lengths(self, lengths, b):
        if lengths is None:
            return None, None
        if A.is_torch(lengths):
            torch = sys.modules["torch"]
            lg = lengths.detach().to(device="cpu", dtype=torch.int64).contiguous()
            ptr = lg.data_ptr()
        else:
            lg = A.numpy().ascontiguousarray(lengths, dtype="int64")
            ptr = lg.ctypes.data
        if tuple(lg.shape) != (b,):
            raise ShapeError(f"lengths: expected shape [{b}], got {list(lg.shape)}")
        return lg, ptr

    def forward(self, x, init=None, lengths=None, training=False):
        """Runs the model over x; returns (y, [final state per cell state]).

        x is a torch tensor (CPU or CUDA; a contiguous CUDA tensor on a GPU
        backend is used in place, on torch's current stream) or a NumPy array;
        the outputs are of the same kind, on the same device.  init is None or
        a list with an entry (or None) per state; lengths is None or [B]."""
        st = len(self.states)
        if init is not None and len(init) != st:
            raise InvalidArgumentError(f"init: {st} entries expected (states {self.states}), "
                                       f"got {len(init)}")
        t, b, yshape = self._shapes_for(x)
        buf = _Buffers(x, self.dtype, self.gpu, self.device)
        xx = buf.take(x, "x", x.shape)
        keep = [xx]
        inits = None
        if init is not None and any(i is not None for i in init):
            inits = (c_void_p * st)()
            for s, i in enumerate(init):
                if i is not None:
                    ii = buf.take(i, f"initial state '{self.states[s]}'", self._state_shape(s, b))
                    keep.append(ii)
                    inits[s] = buf.ptr(ii)
        y = buf.empty(yshape)
        finals = [buf.empty(self._state_shape(s, b)) for s in range(st)]
        fptr = (c_void_p * st)(*[buf.ptr(f) for f in finals])
        lg, lptr = self._lengths(lengths, b)
        a = ForwardArgs(t, b, buf.ptr(xx), inits, lptr, buf.ptr(y), fptr, training, buf.dev,
                        buf.stream)
        with self._lock:
            check(lib.rnnc_model_forward(self._h, ctypes.byref(a)))
            if training:
                self.generation += 1
                # The buffers the library was handed stay alive until the backward:
                # cuDNN's backward reads x, y and the initial states again, and a
                # temporary (a converted copy, a padded PackedSequence) freed and
                # reused meanwhile gave wrong weight gradients.
                self._last = (buf, tuple(x.shape), yshape, b, keep + [y])
        return buf.back(y), [buf.back(f) for f in finals]

    __call__ = forward

    def plan(self, x):
        """A prepared forward for inputs like x (framework, shape, dtype, device), whose
        run(x, init, training) takes such inputs without conversion; None where a call
        needs more (a conversion, a copy, or an error Model.forward raises)."""
        return _plan.make(self, x, _Buffers)

    def set_seed(self, seed):
        """The seed of the dropout masks from the next training forward on (a
        backward keeps its forward's): a new seed before each training step
        draws fresh masks, reproducibly."""
        with self._lock:
            check(lib.rnnc_model_set_seed(self._h, int(seed) & (2**64 - 1)))

    # ------------------------------------------------------------ backward
    def backward(self, dy, dfinal=None):
        """After a training forward: gradients (dx, [dinit per state]) from
        dy and optional dfinal (a list with an entry, or None, per state).
        Weight gradients are then read with weight_grad(name)."""
        if self._last is None:
            raise StateError("backward needs a training forward first")
        buf, xshape, yshape, b, _ = self._last
        st = len(self.states)
        keep = [buf.take(dy, "dy", yshape)]
        dfin = None
        if dfinal is not None and any(d is not None for d in dfinal):
            dfin = (c_void_p * st)()
            for s, d in enumerate(dfinal):
                if d is not None:
                    dd = buf.take(d, f"gradient of final state '{self.states[s]}'",
                                  self._state_shape(s, b))
                    keep.append(dd)
                    dfin[s] = buf.ptr(dd)
        dx = buf.empty(xshape)
        dinit = [buf.empty(self._state_shape(s, b)) for s in range(st)]
        dptr = (c_void_p * st)(*[buf.ptr(d) for d in dinit])
        a = BackwardArgs(buf.ptr(keep[0]), dfin, buf.ptr(dx), dptr)
        with self._lock:
            check(lib.rnnc_model_backward(self._h, ctypes.byref(a)))
            self._last = self._last[:4] + (None,)  # the forward's buffers are read no more
        return buf.back(dx), [buf.back(d) for d in dinit]

    def weight_grad(self, name, framework=None):
        """The gradient of one weight after backward: a float32 host array
        (NumPy, or a CPU torch tensor when framework is "torch")."""
        if name not in self._shapes:
            raise NotFoundError(f"model has no weight '{name}' (cell '{self.cell.name}')")
        shape = self._shapes[name]
        n = 1
        for d in shape:
            n *= d
        if framework in ("torch", "pt"):
            torch = sys.modules["torch"]
            g = torch.empty(shape, dtype=torch.float32)
            ptr = g.data_ptr()
        else:
            g = A.numpy().empty(shape, dtype="float32")
            ptr = g.ctypes.data
        with self._lock:
            check(lib.rnnc_model_weight_grad(self._h, name.encode(), ptr, n))
        return g

    def time_forward(self, x, warmup=3, iters=10):
        """Median forward time in ms over x (zero initial states), as rnnc_model_time_forward."""
        t, b, yshape = self._shapes_for(x)
        buf = _Buffers(x, self.dtype, self.gpu, self.device)
        xx, y = buf.take(x, "x", x.shape), buf.empty(yshape)
        a = ForwardArgs(t, b, buf.ptr(xx), None, None, buf.ptr(y), None, False, buf.dev,
                        buf.stream)
        ms = c_double()
        with self._lock:
            check(lib.rnnc_model_time_forward(self._h, ctypes.byref(a), warmup, iters,
                                              ctypes.byref(ms)))
        return ms.value

    def __repr__(self):
        return (f"rnnc.Model({self.cell.name}, {self.input_size}->{self.hidden_size}, "
                f"layers={self.num_layers}, bidirectional={self.bidirectional}, "
                f"backend={self.backend})")
