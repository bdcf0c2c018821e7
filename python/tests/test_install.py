"""Where the package finds librnnc: the build tree's library, RNNC_LIBRARY,
and an installed prefix (cmake --install into a temporary folder)."""
import os
import subprocess
import sys

import pytest

import rnnc

PROBE = ("import numpy as np, rnnc; print(rnnc.LIBRARY_PATH); "
         "m = rnnc.LSTM(3, 4, backend='interp'); y, (h, c) = m(np.ones((2, 1, 3), np.float32)); "
         "print(y.shape, rnnc.__version__)")


def run_python(code, cwd, **env_changes):
    """A fresh interpreter in `cwd` (python -c puts the working folder first on sys.path)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RNNC_LIBRARY", "PYTHONPATH")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=cwd)


def build_dir():
    b = os.environ.get("RNNC_BUILD_DIR")
    if not b:
        pytest.skip("RNNC_BUILD_DIR names no build tree")
    return b


def test_build_tree_finds_its_library(tmp_path):
    b = build_dir()
    r = run_python(PROBE, tmp_path, PYTHONPATH=os.path.join(b, "python"))
    assert r.returncode == 0, r.stderr
    lib = r.stdout.splitlines()[0]
    assert os.path.samefile(os.path.dirname(lib), b), lib
    assert "(2, 1, 4)" in r.stdout


def test_rnnc_library_overrides(tmp_path):
    b = build_dir()
    r = run_python(PROBE, tmp_path, PYTHONPATH=os.path.join(b, "python"),
                   RNNC_LIBRARY=str(tmp_path / "librnnc.so"))
    assert r.returncode != 0 and "RNNC_LIBRARY" in r.stderr and "librnnc.so" in r.stderr


def test_imports_from_an_installed_prefix(tmp_path):
    b = build_dir()
    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", b, "--prefix", str(prefix)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    site = prefix / "lib" / "python3" / "dist-packages"
    assert (site / "rnnc" / "__init__.py").is_file()
    # Moved elsewhere, the install still works: the library is found relative to the package.
    moved = tmp_path / "moved"
    prefix.rename(moved)
    r = run_python(PROBE, tmp_path, PYTHONPATH=str(moved / "lib" / "python3" / "dist-packages"))
    assert r.returncode == 0, r.stderr
    lib = r.stdout.splitlines()[0]
    assert lib.startswith(str(moved)), lib
    assert f"(2, 1, 4) {rnnc.__version__}" in r.stdout
