"""Shared helpers of the package's tests (run by ctest as the test `python`,
or by hand: PYTHONPATH=<build>/python /usr/bin/python3 -m pytest python/tests)."""
import os
import subprocess

import numpy as np
import pytest

import rnnc

DATA = os.environ.get("RNNC_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "..",
                                                        "tests", "data")
HOST_BACKENDS = [b for b in ("interp", "cpu") if rnnc.backend_available(b)]


def rel_err(out, ref):
    """max|out - ref| / max|ref|, the project's measure."""
    out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert np.all(np.isfinite(out))
    scale = np.abs(ref).max()
    assert scale > 0, "a reference of zeros checks nothing"
    return float(np.abs(out - ref).max() / scale)


def tol(backend):
    return 1e-6 if backend == "interp" else 1e-5


@pytest.fixture
def rng():
    return np.random.default_rng()


def rnnc_bin():
    b = os.environ.get("RNNC_BIN")
    if b:
        return b
    build = os.environ.get("RNNC_BUILD_DIR")
    return os.path.join(build, "rnnc") if build else None


def cli_run(tmp_path, cell, weights, inputs, args):
    """The `rnnc run` command on the interpreter: an independent path to the same numbers."""
    exe = rnnc_bin()
    if not exe or not os.path.exists(exe):
        pytest.skip("no rnnc command (set RNNC_BUILD_DIR)")
    w, i, o = (str(tmp_path / n) for n in ("w.safetensors", "in.safetensors", "out.safetensors"))
    rnnc.save_file(weights, w)
    rnnc.save_file(inputs, i)
    subprocess.run([exe, "run", "--cell", cell, "--backend", "interp", "--weights", w,
                    "--input", i, "--out", o, *args], check=True, capture_output=True)
    return rnnc.load_file(o)
