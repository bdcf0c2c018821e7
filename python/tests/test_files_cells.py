"""safetensors files through the library, and cells from every source."""
import os

import numpy as np
import pytest

import rnnc
from conftest import DATA


def test_save_load_every_dtype(tmp_path, rng):
    ts = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f16": rng.standard_normal((5,)).astype(np.float16),
        "f64": rng.standard_normal((2, 2, 2)),
        "i64": rng.integers(-9, 9, (4,), dtype=np.int64),
        "i32": rng.integers(-9, 9, (2, 3), dtype=np.int32),
        "scalar": np.array(2.5, np.float32),
    }
    p = tmp_path / "t.safetensors"
    rnnc.save_file(ts, p)
    back = rnnc.load_file(p)
    assert list(back) == list(ts)
    for k, v in ts.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape
        assert np.array_equal(back[k], v)
    # A non-contiguous view is written as its values.
    rnnc.save_file({"t": ts["f32"].T}, p)
    assert np.array_equal(rnnc.load_file(p)["t"], ts["f32"].T)


def test_cell_sources_agree(tmp_path):
    lstm = rnnc.Cell.builtin("lstm")
    assert lstm.states == ["h", "c"]
    assert "weight_hr" in lstm.params
    assert rnnc.Cell.parse(lstm.text) == lstm
    p = tmp_path / "mine.cell"
    p.write_text(lstm.text)
    assert rnnc.Cell.get(str(p)) == lstm
    assert rnnc.Cell.get(lstm.text) == lstm
    assert rnnc.Cell.get("lstm") == lstm
    assert rnnc.Cell.get("gru") != lstm
    assert set(rnnc.builtin_names()) >= {"lstm", "gru", "rnn_tanh", "layernorm_lstm"}
    assert "cell lstm" in lstm.dump("ir")
    assert "schedule" in lstm.dump("schedule", 3, 4).lower() or lstm.dump("schedule", 3, 4)


def test_dump_cuda_names_what_it_is_specialised_on():
    """The cuda stage is the source for the math mode, dtype and architecture asked for."""
    lstm = rnnc.Cell.get("lstm")
    try:
        src = lstm.dump("cuda", 64, 64, batch=16)
    except rnnc.NotBuiltError:
        return  # no CUDA generator in this build
    assert "sm_90, f32 ffma," in src.splitlines()[0]
    bf = lstm.dump("cuda", 64, 64, batch=16, dtype="bf16", sm=80)
    assert "sm_80, bf16," in bf.splitlines()[0] and "mma.sync" in bf
    assert "f32 3xtf32," in lstm.dump("cuda", 64, 64, batch=16, math="3xtf32").splitlines()[0]
    tiled = lstm.dump("cuda", 64, 64, batch=16, tuning="ut=0 bt=8 nt=128")
    assert " bt=8 nt=128 " in tiled.splitlines()[0]
    # fields left out are the generator's own, in any order; a malformed text is refused
    assert lstm.dump("cuda", 64, 64, batch=16, tuning="nt=128 bt=8") == tiled
    for bad in ("bt=8 bt=16", "nt=100", "zz=8"):
        with pytest.raises(rnnc.Error):
            lstm.dump("cuda", 64, 64, batch=16, tuning=bad)


def test_dump_train_shows_the_fused_backward():
    """The train stage: the fused backward's split and its two step kernels, with the
    projection's gradient where the LSTM has one, and the row cell of a pre-LN cell; a
    cell it cannot train says why."""
    lstm = rnnc.Cell.get("lstm")
    try:
        src = lstm.dump("train", 16, 32, proj_size=16, batch=8)
    except rnnc.NotBuiltError:
        return  # no CUDA generator in this build
    assert src.startswith("# the fused backward of cell 'lstm' (I=16 H=32 P=16), batch 8")
    assert "dweight_hr += " in src and src.count(" rnnc_step(") == 2
    preln = rnnc.Cell.get(os.path.join(DATA, "cells", "preln.cell")).dump("train", 16, 32, batch=8)
    assert "rnnc_row_cell(" in preln and "#   dx += R[" in preln
    with pytest.raises(rnnc.UnsupportedError, match="read both dropped and otherwise"):
        rnnc.Cell.get(os.path.join(DATA, "cells", "twice.cell")).dump("train", 16, 32, batch=8)


def test_builder_matches_the_builtin_rnn():
    """The builtin rnn_tanh rebuilt with CellBuilder is the same cell, node for node."""
    src = rnnc.Cell.builtin("rnn_tanh").text
    b = rnnc.CellBuilder("rnn_tanh")
    x, h = b.input("x", "I"), b.state("h", "H")
    w_ih, w_hh = b.param("weight_ih", "H", "I"), b.param("weight_hh", "H", "H")
    b_ih, b_hh = b.param("bias_ih", None, "H"), b.param("bias_hh", None, "H")
    h_next = b.tanh(b.linear(x, w_ih) + b_ih + (b.linear(h, w_hh) + b_hh))
    b.set_next(h, h_next)
    b.set_output(h_next)
    built = b.build()
    assert built.states == ["h"] and built.params == ["weight_ih", "weight_hh", "bias_ih",
                                                      "bias_hh"]
    # Same math, maybe another node order: compare by running both.
    I, H = 3, 4
    ref = rnnc.CellRNN("rnn_tanh", I, H, backend="interp")
    mine = rnnc.CellRNN(built, I, H, backend="interp")
    mine.load_state_dict(ref.state_dict())
    x = np.random.default_rng().standard_normal((4, 2, I)).astype(np.float32)
    assert np.abs(mine(x)[0] - ref(x)[0]).max() <= 1e-6 * np.abs(ref(x)[0]).max()
    assert "tanh" in src


def test_builder_ops_all_reachable():
    b = rnnc.CellBuilder("ops")
    x, h = b.input("x", "I"), b.state("h", "H")
    w = b.param("w", "H", "I")
    g = b.param("g", None, "H")
    v = b.linear(x, w)
    for op in ("sigmoid", "tanh", "relu", "exp", "neg"):
        v = getattr(b, op)(v)
    v = b.sqrt(b.exp(v)) * b.rsqrt(b.exp(v) + 1) + b.log(b.exp(v) + 1) / 2.0 - b.mean(v)
    v = v + b.sum(v) * 0.01
    a, c = b.chunk(b.concat(v, h), 2)
    v = b.layernorm(a + c, 1e-5, g, None)
    v = b.dropout(v, 0.0) - 1.0
    v = 1.0 - (-v) * 2.0
    b.set_next(h, v)
    b.set_output(v)
    cell = b.build()
    assert "layernorm" in cell.text
    m = rnnc.CellRNN(cell, 3, 4, backend="interp")
    y, hy = m(np.ones((2, 1, 3), np.float32))
    assert y.shape == (2, 1, 4) and np.all(np.isfinite(y))


def header_fields(struct):
    """Field names of a struct of include/rnnc.h, in order."""
    import re
    src = os.environ.get("RNNC_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(src, "include", "rnnc.h")) as f:
        text = f.read()
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (struct, struct), text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    return [re.search(r"(\w+)\s*(\[[^\]]*\])?$", d.strip()).group(1)
            for d in body.split(";") if d.strip()]


@pytest.mark.parametrize("struct,cls", [
    ("rnnc_tensor", "Tensor"), ("rnnc_model_desc", "ModelDesc"),
    ("rnnc_forward_args", "ForwardArgs"), ("rnnc_backward_args", "BackwardArgs")])
def test_ctypes_structs_follow_the_header(struct, cls):
    """A field added to a public struct must be added to its ctypes mirror, or
    the library reads past what Python allocated."""
    from rnnc import _lib
    assert [f[0] for f in getattr(_lib, cls)._fields_] == header_fields(struct)
