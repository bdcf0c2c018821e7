"""Every module on the host backends against the interpreter reached through
another path (the `rnnc run` command on the same safetensors files), the
nn.LSTM calling conventions, and state_dict round trips."""
import numpy as np
import pytest

import rnnc
from conftest import HOST_BACKENDS, cli_run, rel_err, tol

LN_GRU = """
cell small_ln_gru {
    attr eps = 1e-5
    input x[I]
    state h[H]
    param weight_ih[3H, I]
    param weight_hh[3H, H]
    param ln_weight[H]
    param ln_bias[H]
    i_r, i_z, i_n = chunk(linear(x, weight_ih), 3)
    h_r, h_z, h_n = chunk(linear(h, weight_hh), 3)
    r = sigmoid(i_r + h_r)
    z = sigmoid(i_z + h_z)
    n = tanh(layernorm(i_n + r * h_n, eps, ln_weight, ln_bias))
    h_next = (1 - z) * n + z * h
    next h = h_next
    output h_next
}
"""


def builder_rnn():
    """An Elman RNN with a gain, built op by op."""
    b = rnnc.CellBuilder("built_rnn")
    x, h = b.input("x", "I"), b.state("h", "H")
    w_ih, w_hh = b.param("weight_ih", "H", "I"), b.param("weight_hh", "H", "H")
    bias, gain = b.param("bias", None, "H"), b.param("gain", None, "H")
    h_next = b.tanh((x @ w_ih + bias + b.linear(h, w_hh)) * gain)
    b.set_next(h, h_next)
    b.set_output(h_next)
    return b


def random_state_dict(m, rng):
    return {k: rng.standard_normal(v.shape).astype(np.float32) * 0.5
            for k, v in m.state_dict().items()}


# name, constructor, kwargs, cell argument of `rnnc run`
MODULES = [
    ("lstm", lambda **k: rnnc.LSTM(**k), {}, "lstm"),
    ("lstm_proj", lambda **k: rnnc.LSTM(**k), dict(proj_size=3), "lstm"),
    ("gru", lambda **k: rnnc.GRU(**k), {}, "gru"),
    ("rnn_relu", lambda **k: rnnc.RNN(nonlinearity="relu", **k), {}, "rnn_relu"),
    ("layernorm_lstm", lambda **k: rnnc.CellRNN("layernorm_lstm", **k), {}, "layernorm_lstm"),
    ("milstm", lambda **k: rnnc.CellRNN("milstm", **k), {}, "milstm"),
    ("peephole_lstm", lambda **k: rnnc.CellRNN("peephole_lstm", **k), {}, "peephole_lstm"),
    ("cell_text", lambda **k: rnnc.CellRNN(LN_GRU, **k), {}, None),
    ("cell_builder", lambda **k: rnnc.CellRNN(builder_rnn(), **k), {}, None),
]


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("layout", ["plain", "bi_batch_first_lengths"])
@pytest.mark.parametrize("name,make,extra,cli_cell", MODULES, ids=[m[0] for m in MODULES])
def test_module_matches_interpreter(tmp_path, rng, backend, layout, name, make, extra, cli_cell):
    I, H, T, B = 5, 6, 7, 3
    kw = dict(input_size=I, hidden_size=H, num_layers=2, backend=backend, **extra)
    args = ["--layers", "2"]
    if layout != "plain":
        kw.update(bidirectional=True, batch_first=True)
        args += ["--bidirectional", "--batch-first"]
    m = make(**kw)
    sd = random_state_dict(m, rng)
    m.load_state_dict(sd)
    x = rng.standard_normal((B, T, I) if kw.get("batch_first") else (T, B, I)).astype(np.float32)
    states = m.cell.states
    L = 2 * (2 if kw.get("bidirectional") else 1)
    n = {"c": H, "h": extra.get("proj_size") or H}
    init = [rng.standard_normal((L, B, n.get(s, H))).astype(np.float32) for s in states]
    inputs = {"x": x, **{f"{s}0": v for s, v in zip(states, init)}}
    lengths = None
    if layout != "plain":
        lengths = np.array([T, 2, 5], dtype=np.int64)
        inputs["lengths"] = lengths
    hx = init[0] if len(init) == 1 else tuple(init)
    y, h = m(x, hx, lengths=lengths)
    finals = [h] if len(states) == 1 else list(h)

    if cli_cell is None:
        cli_cell = str(tmp_path / "cell.cell")
        with open(cli_cell, "w") as f:
            f.write(m.cell.text)
    if extra.get("proj_size"):
        args += ["--proj-size", str(extra["proj_size"])]
    ref = cli_run(tmp_path, cli_cell, sd, inputs, args)
    assert rel_err(y, ref["y"]) <= tol(backend)
    for s, f in zip(states, finals):
        assert rel_err(f, ref[f"{s}y"]) <= tol(backend)
    if lengths is not None:  # outputs past a sequence's end are zero, as PyTorch pads
        assert np.all(y[1, 2:] == 0)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_zero_state_defaults_and_unbatched(rng, backend):
    m = rnnc.GRU(4, 5, backend=backend)
    x = rng.standard_normal((6, 2, 4)).astype(np.float32)
    y0, h0 = m(x)
    y1, h1 = m(x, np.zeros((1, 2, 5), np.float32))
    assert np.array_equal(y0, y1) and np.array_equal(h0, h1)
    # An unbatched [T, I] input is batch row 0 with the batch dim dropped.
    yu, hu = m(x[:, 0], None)
    assert yu.shape == (6, 5) and hu.shape == (1, 5)
    assert rel_err(yu, y0[:, 0]) <= tol(backend)
    assert rel_err(hu, h0[:, 0]) <= tol(backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_bias_false(rng, backend):
    m = rnnc.LSTM(3, 4, bias=False, backend=backend)
    assert list(m.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    ref = rnnc.LSTM(3, 4, backend=backend)
    sd = dict(m.state_dict())
    sd["bias_ih_l0"] = np.zeros(16, np.float32)
    sd["bias_hh_l0"] = np.zeros(16, np.float32)
    ref.load_state_dict(sd)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    assert rel_err(m(x)[0], ref(x)[0]) <= 1e-7


def test_state_dict_round_trip(tmp_path, rng):
    m = rnnc.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, backend="interp")
    names = [f"{p}_l{k}{r}" for k in range(2) for r in ("", "_reverse")
             for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
    assert sorted(m.state_dict()) == sorted(names)
    assert m.state_dict()["weight_ih_l1"].shape == (24, 6)
    sd = random_state_dict(m, rng)
    m.load_state_dict(sd)
    back = m.state_dict()
    assert all(np.array_equal(back[k], sd[k]) for k in sd)
    # ... through a file, into a fresh module, gives the same outputs.
    rnnc.save_file(back, tmp_path / "w.safetensors")
    m2 = rnnc.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, backend="interp")
    m2.load_state_dict(rnnc.load_file(tmp_path / "w.safetensors"))
    x = rng.standard_normal((5, 2, 4)).astype(np.float32)
    (y1, (h1, c1)), (y2, (h2, c2)) = m(x), m2(x)
    assert np.array_equal(y1, y2) and np.array_equal(h1, h2) and np.array_equal(c1, c2)
    # New weights reach the library: the output changes with them.
    sd["weight_hh_l0"] = sd["weight_hh_l0"] * 2
    m2.load_state_dict(sd)
    assert not np.array_equal(m2(x)[0], y1)


@pytest.mark.skipif(rnnc.modules.torch is not None, reason="torch modules hold torch tensors")
def test_weights_are_read_only_arrays():
    m = rnnc.RNN(2, 3, backend="interp")
    with pytest.raises(ValueError):
        m.state_dict()["weight_ih_l0"][0, 0] = 1.0


def test_model_level_api(rng):
    m = rnnc.Model("gru", 3, 4, backend="interp")
    assert m.backend == "interp" and m.states == ["h"] and m.output_size == 4
    assert [n for n, _ in m.weights] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                         "bias_hh_l0"]
    with pytest.raises(rnnc.StateError):  # a forward before the weights
        m.forward(np.ones((2, 1, 3), np.float32))
    m.set_weights({n: rng.standard_normal(s).astype(np.float32) for n, s in m.weights})
    y, (h,) = m.forward(rng.standard_normal((2, 1, 3)).astype(np.float32))
    assert y.shape == (2, 1, 4) and np.array_equal(y[-1], h[0])
    assert m.time_forward(rng.standard_normal((2, 1, 3)).astype(np.float32), 0, 2) >= 0


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_calls_no_backward_follows_record_nothing(rng, backend):
    """A module in train mode (the default) runs a call that needs no gradient as an
    inference forward, which records nothing for a backward, unless something drops:
    dropout applies in train mode, as in nn.LSTM."""
    x = rng.standard_normal((5, 2, 6)).astype(np.float32)
    plain = rnnc.LSTM(6, 8, num_layers=2, backend=backend)
    drop = rnnc.LSTM(6, 8, num_layers=2, dropout=0.5, backend=backend)
    drop.load_state_dict(plain.state_dict())
    for _ in range(2):  # the second call takes the prepared plan
        y, _ = plain(x)
        yd, _ = drop(x)
    assert plain.training and plain._model_for(x).generation == 0
    assert drop._model_for(x).generation == 2 and not np.array_equal(y, yd)
    drop.eval()
    ye, _ = drop(x)
    assert drop._model_for(x).generation == 2 and np.array_equal(ye, y)


def test_copies_and_pickles(rng):
    import copy
    import pickle
    m = rnnc.CellRNN("layernorm_lstm", 3, 4, backend="interp")
    m.load_state_dict(random_state_dict(m, rng))
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    y = m(x)[0]
    for c in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert c.cell == m.cell and c.cell._h.value != m.cell._h.value
        assert np.array_equal(c(x)[0], y)
    with pytest.raises(TypeError):
        copy.deepcopy(m._models[("interp", 0)])
