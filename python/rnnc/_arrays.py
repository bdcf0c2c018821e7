"""What the package needs to know about torch tensors and NumPy arrays,
without importing either until a caller hands one over."""
import sys

# rnnc_dtype numbers (include/rnnc.h)
F32, F16, F64, I64, I32, BF16 = 0, 1, 2, 3, 4, 5

_NAMES = {"float32": F32, "float": F32, "f32": F32, "float16": F16, "half": F16, "f16": F16,
          "bfloat16": BF16, "bf16": BF16}


def is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def numpy():
    import numpy as np
    return np


def rnnc_dtype(d):
    """rnnc_dtype of a model from a name, a torch dtype or a NumPy dtype (None: F32)."""
    if d is None:
        return F32
    if isinstance(d, int) and d in (F32, F16, BF16):
        return d
    name = str(d).replace("torch.", "")
    if name in _NAMES:
        return _NAMES[name]
    from .errors import InvalidArgumentError
    raise InvalidArgumentError(f"dtype {d!r} is not one of float32, float16, bfloat16")


def np_dtype(t):
    """The NumPy dtype that holds t's elements: bfloat16 has none, so its bits go in uint16."""
    np = numpy()
    return {F32: np.float32, F16: np.float16, F64: np.float64, I64: np.int64,
            I32: np.int32, BF16: np.uint16}[t]


def _convert(dst, dst_type, src, src_type):
    """rnnc_convert over two C-contiguous arrays of one size (to nearest even, NaN kept)."""
    from ._lib import lib
    from .errors import check
    if src.size:
        check(lib.rnnc_convert(dst.ctypes.data, dst_type, src.ctypes.data, src_type, src.size))
    return dst


def to_bf16_bits(a):
    """The bfloat16 nearest each value of a, as uint16 bits."""
    np = numpy()
    f = np.ascontiguousarray(a, dtype=np.float32)
    return _convert(np.empty(f.shape, np.uint16), BF16, f, F32)


def from_bf16_bits(b):
    """float32 values of uint16 bfloat16 bits (exact)."""
    np = numpy()
    bits = np.ascontiguousarray(b, dtype=np.uint16)
    return _convert(np.empty(bits.shape, np.float32), F32, bits, BF16)


def torch_dtype(t):
    torch = sys.modules["torch"]
    return {F32: torch.float32, F16: torch.float16, F64: torch.float64, I64: torch.int64,
            I32: torch.int32, BF16: torch.bfloat16}[t]


def dtype_of(x):
    """rnnc_dtype of a torch tensor or a NumPy array (None if rnnc has none)."""
    if is_torch(x):
        name = str(x.dtype).replace("torch.", "")
        return {"float32": F32, "float16": F16, "float64": F64, "int64": I64, "int32": I32,
                "bfloat16": BF16}.get(name)
    return {"float32": F32, "float16": F16, "float64": F64, "int64": I64,
            "int32": I32}.get(str(x.dtype))
