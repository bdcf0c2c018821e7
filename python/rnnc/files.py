"""safetensors files through the library: rnnc_tensors_load / rnnc_tensors_save."""
import ctypes
import os
import sys

from . import _arrays as A
from ._lib import c_i64, c_void_p, lib, text
from .errors import check, InvalidArgumentError


def load_file(path, framework="numpy"):
    """Reads a safetensors file into a dict name -> array, in the file's order.

    framework "numpy" gives NumPy arrays (BF16 tensors become float32, NumPy
    having no bfloat16); "torch" (or "pt") gives CPU torch tensors."""
    if framework not in ("numpy", "np", "torch", "pt"):
        raise InvalidArgumentError(f"load_file: framework must be numpy or torch, not {framework!r}")
    use_torch = framework in ("torch", "pt")
    if use_torch:
        import torch  # noqa: F401  (torch_dtype finds it in sys.modules)
    ts = c_void_p()
    check(lib.rnnc_tensors_load(ctypes.byref(ts), os.fsencode(path)))
    try:
        out = {}
        for i in range(lib.rnnc_tensors_count(ts)):
            name = lib.rnnc_tensors_name(ts, i)
            t = lib.rnnc_tensors_get(ts, name).contents
            shape = tuple(t.shape[k] for k in range(t.rank))
            nbytes = lib.rnnc_dtype_size(t.dtype)
            for d in shape:
                nbytes *= d
            out[text(name)] = _to_array(t, shape, nbytes, use_torch)
        return out
    finally:
        lib.rnnc_tensors_destroy(ts)


def _to_array(t, shape, nbytes, use_torch):
    if use_torch:
        torch = sys.modules["torch"]
        a = torch.empty(shape, dtype=A.torch_dtype(t.dtype))
        if nbytes:
            ctypes.memmove(a.data_ptr(), t.data, nbytes)
        return a
    np = A.numpy()
    if t.dtype == A.BF16:
        raw = ctypes.string_at(t.data, nbytes) if nbytes else b""
        return A.from_bf16_bits(np.frombuffer(raw, dtype=np.uint16)).reshape(shape)
    a = np.empty(shape, dtype=A.np_dtype(t.dtype))
    if nbytes:
        ctypes.memmove(a.ctypes.data, t.data, nbytes)
    return a


def _host_contiguous(v):
    if A.is_torch(v):
        return v.detach().cpu().contiguous()
    np = A.numpy()
    return np.require(v, requirements="C")  # ascontiguousarray would make a scalar 1-d


def save_file(tensors, path):
    """Writes a dict name -> torch tensor or NumPy array as a safetensors file
    (written to a temporary file and renamed: never a partial file)."""
    ts = c_void_p()
    check(lib.rnnc_tensors_create(ctypes.byref(ts)))
    try:
        for name, v in tensors.items():
            v = _host_contiguous(v)
            dt = A.dtype_of(v)
            if dt is None:
                raise InvalidArgumentError(f"save_file: tensor '{name}' has dtype {v.dtype}, "
                                           "which safetensors files of rnnc cannot hold")
            shape = (c_i64 * max(1, len(v.shape)))(*v.shape)
            ptr = v.data_ptr() if A.is_torch(v) else v.ctypes.data
            check(lib.rnnc_tensors_add(ts, name.encode(), dt, len(v.shape), shape, ptr))
        check(lib.rnnc_tensors_save(ts, os.fsencode(path)))
    finally:
        lib.rnnc_tensors_destroy(ts)
