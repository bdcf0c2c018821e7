"""What the package needs to know about torch tensors and NumPy arrays,
without importing either until a caller hands one over."""
import sys

# rnnc_dtype numbers (include/rnnc.h)
F32, F16, F64, I64, I32, BF16 = 0, 1, 2, 3, 4, 5

_NAMES = {"float32": F32, "float": F32, "f32": F32, "float16": F16, "half": F16, "f16": F16}


def is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def numpy():
    import numpy as np
    return np


def rnnc_dtype(d):
    """rnnc_dtype of a model from a name, a torch dtype or a NumPy dtype (None: F32)."""
    if d is None:
        return F32
    if isinstance(d, int) and d in (F32, F16):
        return d
    name = str(d).replace("torch.", "")
    if name in _NAMES:
        return _NAMES[name]
    from .errors import InvalidArgumentError
    raise InvalidArgumentError(f"dtype {d!r} is not one of float32, float16")


def np_dtype(t):
    np = numpy()
    return {F32: np.float32, F16: np.float16, F64: np.float64, I64: np.int64,
            I32: np.int32}[t]


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
