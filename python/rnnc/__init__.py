"""rnnc from Python: modules shaped like torch.nn.LSTM for any recurrent
cell, run by the rnnc library (librnnc) through ctypes.

    import rnnc
    lstm = rnnc.LSTM(256, 512, num_layers=2)      # a torch.nn.Module if torch is there
    y, (h, c) = lstm(x)                           # torch tensors or NumPy arrays

See docs/python.md."""
from ._lib import LIBRARY_PATH
from .cache import cache_clear, cache_info, cache_list, compile_bundle, load_bundle, unload_bundles
from .cell import Cell, CellBuilder, Value, builtin_names
from .errors import (Error, InvalidArgumentError, OutOfMemoryError, ParseError, ShapeError,
                     FileError, FormatError, UnsupportedError, NotBuiltError, NoDeviceError,
                     CudaError, NvrtcError, CudnnError, LlvmError, NotFoundError, StateError,
                     InternalError)
from .files import load_file, save_file
from .model import BACKENDS, Model, backend_available, version
from .modules import CellRNN, GRU, LSTM, RNN

__version__ = version()

__all__ = [
    "LSTM", "GRU", "RNN", "CellRNN", "Model", "Cell", "CellBuilder", "Value", "builtin_names",
    "load_file", "save_file", "backend_available", "version", "BACKENDS", "LIBRARY_PATH",
    "compile_bundle", "load_bundle", "unload_bundles", "cache_info", "cache_list", "cache_clear",
    "Error", "InvalidArgumentError", "OutOfMemoryError", "ParseError", "ShapeError",
    "FileError", "FormatError", "UnsupportedError", "NotBuiltError", "NoDeviceError",
    "CudaError", "NvrtcError", "CudnnError", "LlvmError", "NotFoundError", "StateError",
    "InternalError",
]
