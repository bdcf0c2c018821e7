"""AOT bundles and the kernel cache from Python (rnnc.cache): a module's bundle holds its
kernels for each batch size and arch, as `rnnc compile` makes it, and loads; the disk cache
is listed, counted and emptied as `rnnc cache` does, the cpu backend's object files with it."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import rnnc


def manifest(data):
    """A bundle's JSON manifest: its length at byte 16, the text from byte 32."""
    n = int.from_bytes(data[16:24], "little")
    return json.loads(data[32:32 + n])


def test_bundle_of_a_module(tmp_path):
    lstm = rnnc.LSTM(24, 32, num_layers=2)
    path = os.fspath(tmp_path / "lstm.rnncpkg")
    try:
        assert lstm.compile_bundle(path, [1, 8], archs=["sm_80", 90]) == path
    except (rnnc.NotBuiltError, rnnc.NoDeviceError):
        pytest.skip("no CUDA generator or no NVRTC here")
    data = open(path, "rb").read()
    assert data[:7] == b"RNNCPKG"
    m = manifest(data)
    sets = sorted((k["sm"], k["name"]) for k in m["kernels"])
    # a 2-layer model: the first layer's kernels and those of the layers above, each batch
    assert sets == sorted([(sm, f"fused_lstm_b{b}") for sm in (80, 90) for b in (1, 8)] * 2)
    shapes = [t["shape"] for t in m["tuning"]]
    assert len(shapes) == 4 and all(" I=24 H=32 " in s for s in shapes)
    assert any(s.endswith("sm_90 sms=132 B=8") for s in shapes)
    # the same description through the module-level call gives the same file
    same = os.fspath(tmp_path / "same.rnncpkg")
    rnnc.compile_bundle(same, "lstm", 24, 32, (1, 8), archs=(80, "sm_90"), num_layers=2)
    assert open(same, "rb").read() == data
    rnnc.load_bundle(path)
    rnnc.unload_bundles()


# A process that loads the bundle: the module's weights and x from model.npz, y to y.npy.
RUN = """
import sys
import numpy as np
import rnnc
d = sys.argv[1]
if sys.argv[2] != "-":
    rnnc.load_bundle(sys.argv[2])
z = np.load(d + "/model.npz")
lstm = rnnc.LSTM(20, 24, num_layers=2, bidirectional=True, backend="cpu")
lstm.load_state_dict({k: z[k] for k in z.files if k != "x"})
y, _ = lstm(z["x"])
np.save(d + "/" + sys.argv[3], y)
"""


def run_child(tmp_path, bundle, out, **env_more):
    """RUN in a new process with the disk cache off: where its cpu code came from, one
    origin a cell (the info log's "rnnc: cpu lstm (<cpu>): <origin>, <ms>" lines)."""
    env = dict(os.environ, RNNC_CACHE="0", RNNC_LOG="info", **env_more)
    r = subprocess.run([sys.executable, "-c", RUN, os.fspath(tmp_path), bundle, out],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return [line.split("): ")[1].split(",")[0] for line in r.stderr.splitlines()
            if line.startswith("rnnc: cpu lstm (")]


@pytest.mark.skipif(not rnnc.backend_available("cpu"), reason="no cpu backend here")
def test_cpu_bundle_serves_a_new_process(tmp_path):
    lstm = rnnc.LSTM(20, 24, num_layers=2, bidirectional=True, backend="cpu")
    x = np.random.default_rng(3).standard_normal((7, 3, 20)).astype(np.float32)
    np.savez(tmp_path / "model.npz", x=x,
             **{k: np.asarray(v) for k, v in lstm.state_dict().items()})
    path = os.fspath(tmp_path / "cpu.rnncpkg")
    assert lstm.compile_bundle(path, archs=["cpu"]) == path  # no batch sizes: cpu code only
    m = manifest(open(path, "rb").read())
    assert [(k["sm"], k["name"], k["target"].split()[0]) for k in m["kernels"]] == \
        [(0, "cpu lstm", "native")] * 2  # layer 0 and the layers above
    assert run_child(tmp_path, path, "y_bundle.npy") == ["bundle", "bundle"]
    assert run_child(tmp_path, "-", "y_compiled.npy") == ["compile", "compile"]
    assert np.array_equal(np.load(tmp_path / "y_bundle.npy"), np.load(tmp_path / "y_compiled.npy"))
    # RNNC_BUNDLE loads it with no call
    assert run_child(tmp_path, "-", "y_env.npy", RNNC_BUNDLE=path) == ["bundle", "bundle"]
    assert np.array_equal(np.load(tmp_path / "y_env.npy"), np.load(tmp_path / "y_compiled.npy"))
    with pytest.raises(rnnc.InvalidArgumentError, match="unknown cpu target"):
        lstm.compile_bundle(os.fspath(tmp_path / "x"), archs=["cpu:pentium"])


def test_bundle_errors(tmp_path):
    junk = tmp_path / "junk.rnncpkg"
    junk.write_bytes(b"not a bundle" * 10)
    with pytest.raises(rnnc.FormatError):
        rnnc.load_bundle(os.fspath(junk))
    with pytest.raises(rnnc.FileError):
        rnnc.load_bundle(os.fspath(tmp_path / "missing.rnncpkg"))
    with pytest.raises(rnnc.InvalidArgumentError, match="sm number"):
        rnnc.compile_bundle(os.fspath(tmp_path / "x"), "lstm", 8, 8, [1], archs=["hopper"])


def test_cache_info_list_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("RNNC_CACHE_DIR", os.fspath(tmp_path / "cache"))
    info = rnnc.cache_info()
    assert info["enabled"] and info["directory"] == os.fspath(tmp_path / "cache")
    assert info["entries"] == 0 and info["bytes"] == 0 and info["limit_bytes"] > 0
    # a shape no other test runs, so this process compiles it now
    gru = rnnc.GRU(13, 21, backend="cpu" if rnnc.backend_available("cpu") else "interp")
    y, _ = gru(np.random.default_rng(5).standard_normal((4, 3, 13)).astype(np.float32))
    assert y.shape == (4, 3, 21)
    entries = rnnc.cache_list()
    if rnnc.backend_available("cpu"):  # its object file went to the cache
        assert [(e["arch"], e["kernel"], e["valid"]) for e in entries] == [("cpu", "cpu gru", True)]
        assert entries[0]["key"].endswith(".cubin") and entries[0]["bytes"] > 128
        assert rnnc.cache_info()["entries"] == 1
    else:
        assert entries == []
    cleared = rnnc.cache_clear()
    assert cleared["enabled"] and cleared["files"] == len(entries)
    assert rnnc.cache_info()["entries"] == 0 and rnnc.cache_list() == []


def test_cache_off(monkeypatch):
    monkeypatch.setenv("RNNC_CACHE", "0")
    assert rnnc.cache_info()["enabled"] is False and rnnc.cache_info()["directory"] is None
    assert rnnc.cache_list() == []
    assert rnnc.cache_clear() == {"enabled": False, "directory": None, "files": 0, "bytes": 0}
