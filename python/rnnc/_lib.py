"""The C library through ctypes: finding librnnc, its structs and prototypes.

Where the library comes from, first match wins:
  1. RNNC_LIBRARY in the environment (a path to librnnc.so);
  2. _config.LIBRARY, written by CMake next to the package: the freshly built
     library in a build tree, the installed one (relative to this folder) in
     an install prefix;
  3. the system's loader (ctypes.util.find_library("rnnc")).
"""
import ctypes
import ctypes.util
import os

c_i64 = ctypes.c_int64
c_int = ctypes.c_int
c_bool = ctypes.c_bool
c_double = ctypes.c_double
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
P = ctypes.POINTER

MAX_RANK = 8


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", c_int), ("rank", c_int), ("shape", c_i64 * MAX_RANK),
                ("data", c_void_p)]


class ModelDesc(ctypes.Structure):
    _fields_ = [("cell", c_void_p), ("input_size", c_i64), ("hidden_size", c_i64),
                ("proj_size", c_i64), ("num_layers", c_int), ("bidirectional", c_bool),
                ("batch_first", c_bool), ("dropout", c_double), ("seed", ctypes.c_uint64),
                ("dtype", c_int), ("math", c_int), ("backend", c_int), ("hoist", c_int),
                ("device", c_int), ("no_bias", c_bool), ("cudnn_algo", c_int)]


class DumpDesc(ctypes.Structure):
    _fields_ = [("input_size", c_i64), ("hidden_size", c_i64), ("proj_size", c_i64),
                ("batch", c_i64), ("hoist", c_int), ("math", c_int), ("dtype", c_int),
                ("sm", c_int), ("tuning", c_char_p)]


class ForwardArgs(ctypes.Structure):
    _fields_ = [("seq_len", c_i64), ("batch", c_i64), ("x", c_void_p),
                ("init", P(c_void_p)), ("lengths", c_void_p), ("y", c_void_p),
                ("final", P(c_void_p)), ("training", c_bool), ("device_pointers", c_bool),
                ("stream", c_void_p), ("batch_sizes", c_void_p)]


class BackwardArgs(ctypes.Structure):
    _fields_ = [("dy", c_void_p), ("dfinal", P(c_void_p)), ("dx", c_void_p),
                ("dinit", P(c_void_p))]


CACHE_PATH_MAX = 4096


class CacheSummary(ctypes.Structure):
    _fields_ = [("enabled", c_bool), ("directory", ctypes.c_char * CACHE_PATH_MAX),
                ("kernels", ctypes.c_uint64), ("kernel_bytes", ctypes.c_uint64),
                ("limit_bytes", ctypes.c_uint64), ("tuning_records", ctypes.c_uint64),
                ("entry_format", c_int), ("codegen_version", c_int), ("nvrtc", c_bool),
                ("nvrtc_major", c_int), ("nvrtc_minor", c_int)]


class CacheEntry(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char * 64), ("sm", c_int), ("bytes", ctypes.c_uint64),
                ("last_used", c_i64), ("kernel", ctypes.c_char * 56), ("valid", c_bool)]


class CacheCleared(ctypes.Structure):
    _fields_ = [("enabled", c_bool), ("directory", ctypes.c_char * CACHE_PATH_MAX),
                ("files", ctypes.c_uint64), ("bytes", ctypes.c_uint64)]


# name: (restype, argtypes).  Actions return rnnc_status (an int).
_PROTOTYPES = {
    "rnnc_status_string": (c_char_p, [c_int]),
    "rnnc_last_error": (c_char_p, []),
    "rnnc_version_string": (c_char_p, []),
    "rnnc_convert": (c_int, [c_void_p, c_int, c_void_p, c_int, c_i64]),
    "rnnc_free": (None, [c_void_p]),
    # cells
    "rnnc_cell_create": (c_int, [P(c_void_p), c_char_p]),
    "rnnc_cell_destroy": (None, [c_void_p]),
    "rnnc_cell_clone": (c_int, [P(c_void_p), c_void_p]),
    "rnnc_cell_name": (c_char_p, [c_void_p]),
    "rnnc_cell_input": (c_int, [c_void_p, c_char_p, c_char_p, P(c_int)]),
    "rnnc_cell_state": (c_int, [c_void_p, c_char_p, c_char_p, P(c_int)]),
    "rnnc_cell_param": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, P(c_int)]),
    "rnnc_cell_param_optional": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, P(c_int)]),
    "rnnc_cell_const": (c_int, [c_void_p, c_double, P(c_int)]),
    "rnnc_linear": (c_int, [c_void_p, c_int, c_int, P(c_int)]),
    "rnnc_add": (c_int, [c_void_p, c_int, c_int, P(c_int)]),
    "rnnc_sub": (c_int, [c_void_p, c_int, c_int, P(c_int)]),
    "rnnc_mul": (c_int, [c_void_p, c_int, c_int, P(c_int)]),
    "rnnc_div": (c_int, [c_void_p, c_int, c_int, P(c_int)]),
    "rnnc_concat": (c_int, [c_void_p, c_int, c_int, P(c_int)]),
    "rnnc_chunk": (c_int, [c_void_p, c_int, c_int, c_int, P(c_int)]),
    "rnnc_layernorm": (c_int, [c_void_p, c_int, c_double, c_int, c_int, P(c_int)]),
    "rnnc_dropout": (c_int, [c_void_p, c_int, c_double, P(c_int)]),
    "rnnc_cell_set_next": (c_int, [c_void_p, c_int, c_int]),
    "rnnc_cell_set_output": (c_int, [c_void_p, c_int]),
    "rnnc_cell_verify": (c_int, [c_void_p]),
    "rnnc_cell_state_count": (c_int, [c_void_p]),
    "rnnc_cell_state_name": (c_char_p, [c_void_p, c_int]),
    "rnnc_cell_param_count": (c_int, [c_void_p]),
    "rnnc_cell_param_name": (c_char_p, [c_void_p, c_int]),
    "rnnc_cell_parse": (c_int, [P(c_void_p), c_char_p, c_size_t, c_char_p, c_char_p, c_char_p]),
    "rnnc_cell_load_file": (c_int, [P(c_void_p), c_char_p, c_char_p, c_char_p]),
    "rnnc_cell_builtin": (c_int, [P(c_void_p), c_char_p, c_char_p]),
    "rnnc_cell_builtin_names": (P(c_char_p), []),
    "rnnc_cell_load": (c_int, [P(c_void_p), c_char_p, c_char_p]),
    "rnnc_cell_print": (c_int, [c_void_p, P(c_void_p)]),
    "rnnc_cell_equal": (c_bool, [c_void_p, c_void_p]),
    "rnnc_cell_dump": (c_int, [c_void_p, c_char_p, c_i64, c_i64, c_i64, c_i64, c_int,
                               P(c_void_p)]),
    "rnnc_cell_dump_desc": (c_int, [c_void_p, c_char_p, P(DumpDesc), P(c_void_p)]),
    # tensors
    "rnnc_dtype_size": (c_size_t, [c_int]),
    "rnnc_dtype_name": (c_char_p, [c_int]),
    "rnnc_tensors_create": (c_int, [P(c_void_p)]),
    "rnnc_tensors_destroy": (None, [c_void_p]),
    "rnnc_tensors_load": (c_int, [P(c_void_p), c_char_p]),
    "rnnc_tensors_save": (c_int, [c_void_p, c_char_p]),
    "rnnc_tensors_add": (c_int, [c_void_p, c_char_p, c_int, c_int, P(c_i64), c_void_p]),
    "rnnc_tensors_get": (P(Tensor), [c_void_p, c_char_p]),
    "rnnc_tensors_count": (c_int, [c_void_p]),
    "rnnc_tensors_name": (c_char_p, [c_void_p, c_int]),
    # models
    "rnnc_backend_name": (c_char_p, [c_int]),
    "rnnc_backend_from_name": (c_int, [c_char_p, P(c_int)]),
    "rnnc_backend_available": (c_bool, [c_int]),
    "rnnc_model_desc_init": (None, [P(ModelDesc)]),
    "rnnc_model_create": (c_int, [P(c_void_p), P(ModelDesc)]),
    "rnnc_model_destroy": (None, [c_void_p]),
    "rnnc_model_backend": (c_int, [c_void_p]),
    "rnnc_model_set_weights": (c_int, [c_void_p, c_void_p]),
    "rnnc_model_set_weight": (c_int, [c_void_p, c_char_p, c_void_p, c_i64]),
    "rnnc_model_set_weight_device": (c_int, [c_void_p, c_char_p, c_void_p, c_i64]),
    "rnnc_model_weight_count": (c_int, [c_void_p]),
    "rnnc_model_weight_info": (c_int, [c_void_p, c_int, P(c_char_p), c_int, P(c_i64), P(c_int)]),
    "rnnc_model_forward": (c_int, [c_void_p, P(ForwardArgs)]),
    "rnnc_model_backward": (c_int, [c_void_p, P(BackwardArgs)]),
    "rnnc_model_set_seed": (c_int, [c_void_p, ctypes.c_uint64]),
    "rnnc_model_weight_grad": (c_int, [c_void_p, c_char_p, c_void_p, c_i64]),
    "rnnc_model_time_forward": (c_int, [c_void_p, P(ForwardArgs), c_int, c_int, P(c_double)]),
    "rnnc_model_output_size": (c_int, [c_void_p, P(c_i64)]),
    "rnnc_model_state_size": (c_int, [c_void_p, c_int, P(c_i64)]),
    # bundles and the kernel cache
    "rnnc_bundle_compile_targets": (c_int, [P(ModelDesc), P(c_i64), c_int, P(c_char_p), c_int,
                                            c_int, c_char_p]),
    "rnnc_bundle_load": (c_int, [c_char_p]),
    "rnnc_bundle_unload_all": (None, []),
    "rnnc_cache_info": (c_int, [P(CacheSummary)]),
    "rnnc_cache_list": (c_int, [P(c_void_p)]),
    "rnnc_cache_entries_destroy": (None, [c_void_p]),
    "rnnc_cache_entries_count": (c_size_t, [c_void_p]),
    "rnnc_cache_entries_get": (P(CacheEntry), [c_void_p, c_size_t]),
    "rnnc_cache_clear": (c_int, [P(CacheCleared)]),
}
for _op in ("neg", "sigmoid", "tanh", "relu", "exp", "log", "sqrt", "rsqrt", "sum", "mean"):
    _PROTOTYPES["rnnc_" + _op] = (c_int, [c_void_p, c_int, P(c_int)])


def _candidates():
    env = os.environ.get("RNNC_LIBRARY")
    if env:
        return [env]
    found = []
    try:
        from . import _config
        lib = _config.LIBRARY
        if not os.path.isabs(lib):
            lib = os.path.normpath(os.path.join(os.path.dirname(__file__), lib))
        found.append(lib)
    except ImportError:
        pass
    system = ctypes.util.find_library("rnnc")
    if system:
        found.append(system)
    return found


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path}: {e}")
    raise ImportError("rnnc: cannot load librnnc (set RNNC_LIBRARY to its path); tried: "
                      + ("; ".join(tried) or "nothing found"))


lib, LIBRARY_PATH = _load()
for _name, (_res, _args) in _PROTOTYPES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args


def text(b):
    """A C string from the library as a Python str."""
    return b.decode("utf-8", "replace") if b is not None else None
