"""AOT bundles and the kernel cache from Python (docs/cache.md).

A bundle holds the fused backend's kernels for a model at several batch
sizes and archs, made without a GPU (NVRTC only), and the cpu backend's
code for named CPU targets; a process that loads it makes those models
with no NVRTC and no compile.  The disk cache holds what
the library compiled (GPU kernels, the cpu backend's object files); these
calls look at it and empty it, as `rnnc cache` does."""
import ctypes
import os

from ._lib import CacheCleared, CacheSummary, c_char_p, c_i64, c_void_p, lib, text
from .cell import Cell
from .errors import check, InvalidArgumentError
from .model import model_desc


def _target(a):
    """90, "90" or "sm_90" as "sm_90"; "cpu" and "cpu:NAME" as they are."""
    s = str(a)
    if s == "cpu" or s.startswith("cpu:"):
        return s
    s = s[3:] if s.startswith("sm_") else s
    if not s.isdigit():
        raise InvalidArgumentError(f"arch {a!r}: want an sm number such as 90 or 'sm_90', or "
                                   "a cpu target ('cpu', 'cpu:x86-64-v3')")
    return f"sm_{s}"


def compile_bundle(path, cell, input_size, hidden_size, batch_sizes=(), archs=("sm_90",),
                   sm_count=0, proj_size=0, num_layers=1, bidirectional=False,
                   batch_first=False, dropout=0.0, dtype=None, math="ffma", hoist="all",
                   attrs=None, cell_name=None):
    """Writes to `path` a bundle of a model of `cell` (as rnnc.Model takes it): for each
    CUDA arch in `archs` (90 or "sm_90") the fused kernels at each batch size, specialised to
    `sm_count` SMs (0: 108 for sm_80, 132 for sm_90, 148 for sm_100; needs NVRTC, no GPU);
    for "cpu" (this machine's CPU and its features) or "cpu:x86-64-v2", "cpu:x86-64-v3",
    "cpu:x86-64-v4" (any x86-64 CPU of that level) the cpu backend's code, which serves
    every batch size (needs the cpu backend).  Returns path.  A module's own compile_bundle
    fills in its description."""
    c = Cell.get(cell, attrs=attrs, cell_name=cell_name)
    d = model_desc(c, input_size, hidden_size, proj_size, num_layers, bidirectional, batch_first,
                   dropout, 0, dtype, math, "auto", hoist, 0)
    b = [int(n) for n in batch_sizes]
    t = [_target(x).encode() for x in archs]
    check(lib.rnnc_bundle_compile_targets(ctypes.byref(d), (c_i64 * len(b))(*b), len(b),
                                          (c_char_p * len(t))(*t), len(t), int(sm_count),
                                          os.fsencode(path)))
    return path


def load_bundle(path):
    """Registers the bundle at `path` for this process: fused models made afterwards take
    their kernels and tuning from it, cpu models the code of a target this CPU runs
    (FormatError for another format or generator version)."""
    check(lib.rnnc_bundle_load(os.fsencode(path)))


def unload_bundles():
    """Forgets every loaded bundle (models already made keep their kernels)."""
    lib.rnnc_bundle_unload_all()


def cache_info():
    """The disk cache: {"enabled", "directory" (None when off), "entries", "bytes",
    "limit_bytes", "tuning_records", "entry_format", "codegen_version", "nvrtc" ((major,
    minor), or None where NVRTC cannot be loaded)}."""
    s = CacheSummary()
    check(lib.rnnc_cache_info(ctypes.byref(s)))
    return {"enabled": s.enabled, "directory": text(s.directory) if s.enabled else None,
            "entries": s.kernels, "bytes": s.kernel_bytes, "limit_bytes": s.limit_bytes,
            "tuning_records": s.tuning_records, "entry_format": s.entry_format,
            "codegen_version": s.codegen_version,
            "nvrtc": (s.nvrtc_major, s.nvrtc_minor) if s.nvrtc else None}


def cache_list():
    """The disk cache's entries, most recently used first, each {"key", "arch" ("sm_90",
    or "cpu" for the cpu backend's object files; None for a damaged entry, which the next
    use replaces), "bytes", "last_used" (seconds since 1970), "kernel", "valid"}."""
    h = c_void_p()
    check(lib.rnnc_cache_list(ctypes.byref(h)))
    try:
        out = []
        for i in range(lib.rnnc_cache_entries_count(h)):
            e = lib.rnnc_cache_entries_get(h, i).contents
            arch = None if not e.valid else "cpu" if e.sm == 0 else f"sm_{e.sm}"
            out.append({"key": text(e.key), "arch": arch, "bytes": e.bytes,
                        "last_used": e.last_used, "kernel": text(e.kernel), "valid": e.valid})
        return out
    finally:
        lib.rnnc_cache_entries_destroy(h)


def cache_clear():
    """Empties the disk cache (entries, tuning records, writers' stale temp files):
    {"enabled", "directory", "files", "bytes"} removed."""
    c = CacheCleared()
    check(lib.rnnc_cache_clear(ctypes.byref(c)))
    return {"enabled": c.enabled, "directory": text(c.directory) if c.enabled else None,
            "files": c.files, "bytes": c.bytes}
