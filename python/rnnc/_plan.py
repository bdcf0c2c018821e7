"""A model's forward prepared for one kind of input, so that a call at T = 1
costs little more than the C call itself.

Requires: a Model (model.py) and an input the library can take as it is: a
torch tensor (CPU, or CUDA on a GPU model's device) or a NumPy array, 3 dims,
of the model's dtype.  Keeps: the ForwardArgs, the pointer arrays and the
output shapes, made once; a call checks that its tensors are in place,
allocates the outputs and writes only the pointers that change (x, y, the
states, torch's current stream).  Anything else (a conversion, a copy, an
error to raise) goes through Model.forward, which stays the reference."""
import ctypes
import sys

from . import _arrays as A
from ._lib import ForwardArgs, c_void_p, lib
from .errors import check


def make(model, x, buffers):
    """A plan for inputs like x on `model`, or None where a call needs more than pointers.

    `buffers` is the _Buffers class of model.py (what a training forward leaves for backward)."""
    shape = tuple(x.shape)
    if len(shape) != 3 or shape[2] != model.input_size:
        return None  # Model.forward raises the error
    t, b = (shape[1], shape[0]) if model.batch_first else (shape[0], shape[1])
    if A.is_torch(x):
        if x.dtype != A.torch_dtype(model.dtype) or x.device.type not in ("cpu", "cuda"):
            return None
        if x.is_cuda and (not model.gpu or x.get_device() != model.device):
            return None  # a copy through the host, or an error
        plan = _TorchPlan(model, x)
    else:
        np = A.numpy()
        if model.dtype == A.BF16:
            return None  # converted to and from bits on every call: Model.forward
        if type(x) is not np.ndarray or x.dtype != np.dtype(A.np_dtype(model.dtype)):
            return None
        plan = _NumpyPlan(model, x)
    plan.setup(model, t, b, shape, buffers(x, model.dtype, model.gpu, model.device))
    return plan


class _Plan:
    __slots__ = ("model", "yshape", "sshapes", "fin", "inits", "args", "ref", "iargs", "iref",
                 "last", "single", "fwd")

    def setup(self, model, t, b, xshape, buf):
        self.model = model
        d = model.dirs * model.output_size
        self.yshape = (b, t, d) if model.batch_first else (t, b, d)
        n = len(model.states)
        self.sshapes = [model._state_shape(s, b) for s in range(n)]
        self.single = n == 1
        self.fin = (c_void_p * n)()
        self.inits = (c_void_p * n)()
        dev = self.on_device()
        self.args = ForwardArgs(t, b, None, None, None, None, self.fin, False, dev, None)
        self.iargs = ForwardArgs(t, b, None, self.inits, None, None, self.fin, False, dev, None)
        self.ref, self.iref = ctypes.byref(self.args), ctypes.byref(self.iargs)
        self.last = (buf, xshape, self.yshape, b)  # what Model.backward reads, and `held`
        self.fwd = lib.rnnc_model_forward

    def call(self, a, ref, training, held):
        """Runs the prepared call (pointers written, the model's lock held); `held`, the
        call's tensors, stay alive until a training forward's backward (Model.forward)."""
        m = self.model
        a.training = training
        st = self.fwd(m._h, ref)
        if st == 0 and training:
            m.generation += 1
            m._last = self.last + (held,)
        return st

    def result(self, y, finals):
        return y, finals[0] if self.single else tuple(finals)


class _TorchPlan(_Plan):
    __slots__ = ("dt", "device", "index", "cuda", "stream", "empty", "tensor", "new", "strides",
                 "current")

    def __init__(self, model, x):
        torch = sys.modules["torch"]
        self.dt, self.device, self.index, self.cuda = x.dtype, x.device, x.get_device(), x.is_cuda
        self.empty, self.tensor = torch.empty, torch.Tensor
        self.stream = self.current = None
        if self.cuda:
            # torch's current stream as a CUstream, without making a Stream object
            self.stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
                (lambda i: torch.cuda.current_stream(i).cuda_stream)
            self.current = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
        # The allocators of inductor's generated code: torch.empty's tensor, without
        # its argument parsing and dispatch (a few us each); CUDA's allocates on the
        # current device, so it serves only calls whose input is there.
        guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
        new = getattr(guards, "_empty_strided_cuda" if self.cuda else "_empty_strided_cpu", None)
        self.new = new if new is not None and self._allocates(torch, new) else None

    def _allocates(self, torch, new):
        """`new` (a private function) still makes what torch.empty would: tried once."""
        try:
            if self.cuda:
                with torch.cuda.device(self.index):
                    t = new((2, 3), (3, 1), self.dt)
            else:
                t = new((2, 3), (3, 1), self.dt)
            return (type(t) is torch.Tensor and t.device == self.device and t.dtype is self.dt
                    and t.shape == (2, 3) and t.is_contiguous() and not t.requires_grad)
        except Exception:  # changed or gone in this torch: torch.empty then
            return False

    def on_device(self):
        return self.cuda

    def setup(self, model, t, b, xshape, buf):
        super().setup(model, t, b, xshape, buf)
        self.strides = [_contiguous(s) for s in [self.yshape] + self.sshapes]

    def in_place(self, t, shape):
        """t is a plain tensor the library can read as it is."""
        return (type(t) is self.tensor and t.dtype is self.dt and t.device == self.device
                and t.is_contiguous() and t.shape == shape)

    def outputs(self):
        """y and the final states, new (uninitialised) tensors as torch.empty makes them."""
        dt, new = self.dt, self.new
        if new is not None and (not self.cuda or self.current() == self.index):
            s = self.strides
            return new(self.yshape, s[0], dt), [new(sh, st, dt) for sh, st in
                                                  zip(self.sshapes, s[1:])]
        empty, device = self.empty, self.device
        return (empty(self.yshape, dtype=dt, device=device),
                [empty(sh, dtype=dt, device=device) for sh in self.sshapes])

    def run(self, x, init, training):
        """(y, h_n or (h_n, c_n, ...)) for x, which matched this plan's key (type, shape,
        dtype, device); None where x or an initial state needs Model.forward."""
        if not x.is_contiguous():
            return None
        a, ref = self.args, self.ref
        if init is not None:
            for i, shape in zip(init, self.sshapes):
                if i is None or not self.in_place(i, shape):
                    return None
            a, ref = self.iargs, self.iref
        y, finals = self.outputs()
        m = self.model
        with m._lock:
            a.x, a.y = x.data_ptr(), y.data_ptr()
            fin = self.fin
            for k, f in enumerate(finals):
                fin[k] = f.data_ptr()
            if init is not None:
                inits = self.inits
                for k, i in enumerate(init):
                    inits[k] = i.data_ptr()
            if self.cuda:
                a.stream = self.stream(self.index)
            st = self.call(a, ref, training, (x, y, init))
        check(st)
        return self.result(y, finals)


def _contiguous(shape):
    """Row-major strides of shape, as torch gives a contiguous tensor."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class _NumpyPlan(_Plan):
    __slots__ = ("dt", "empty", "ndarray")

    def __init__(self, model, x):
        np = A.numpy()
        self.dt, self.empty, self.ndarray = x.dtype, np.empty, np.ndarray

    def on_device(self):
        return False

    def in_place(self, t, shape):
        return (type(t) is self.ndarray and t.dtype == self.dt and t.flags.c_contiguous
                and t.shape == shape)

    def run(self, x, init, training):
        """As _TorchPlan.run, for NumPy arrays."""
        if not x.flags.c_contiguous:
            return None
        a, ref = self.args, self.ref
        if init is not None:
            for i, shape in zip(init, self.sshapes):
                if i is None or not self.in_place(i, shape):
                    return None
            a, ref = self.iargs, self.iref
        empty, dt = self.empty, self.dt
        y = empty(self.yshape, dt)
        finals = [empty(s, dt) for s in self.sshapes]
        m = self.model
        with m._lock:
            a.x, a.y = _address(x), _address(y)
            fin = self.fin
            for k, f in enumerate(finals):
                fin[k] = _address(f)
            if init is not None:
                inits = self.inits
                for k, i in enumerate(init):
                    inits[k] = _address(i)
            st = self.call(a, ref, training, (x, y, init))
        check(st)
        return self.result(y, finals)


def _address(a, _of=ctypes.addressof, _view=ctypes.c_char.from_buffer):
    """Where a C-contiguous array's data starts: through the buffer protocol, a
    fraction of what a.ctypes.data costs; read-only or empty arrays have no such
    view, and take numpy's way."""
    try:
        return _of(_view(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data
