"""rnnc.LSTM / GRU / RNN on the files PyTorch itself wrote (tests/data,
made by scripts/torch_reference.py): PyTorch's state_dict goes in through
load_state_dict, and the outputs must be PyTorch's (computed in float64)."""
import os

import pytest

import rnnc
from conftest import DATA, HOST_BACKENDS, rel_err, tol

CASES = {
    "lstm_1l": (rnnc.LSTM, dict(input_size=5, hidden_size=7)),
    "lstm_2l_bi_proj": (rnnc.LSTM, dict(input_size=4, hidden_size=6, num_layers=2,
                                        bidirectional=True, proj_size=3)),
    "lstm_bf_lengths": (rnnc.LSTM, dict(input_size=3, hidden_size=5, num_layers=2,
                                        batch_first=True, bidirectional=True)),
    "gru_2l_bi": (rnnc.GRU, dict(input_size=4, hidden_size=5, num_layers=2, bidirectional=True)),
    "rnn_tanh": (rnnc.RNN, dict(input_size=3, hidden_size=4, nonlinearity="tanh")),
    "rnn_relu": (rnnc.RNN, dict(input_size=3, hidden_size=4, nonlinearity="relu")),
}


def load(case, kind):
    return rnnc.load_file(os.path.join(DATA, f"{case}.{kind}.safetensors"))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_module_matches_pytorch(case, backend):
    cls, kw = CASES[case]
    io = load(case, "io")
    m = cls(**kw, backend=backend)
    m.load_state_dict(load(case, "weights"))
    hx = None
    if "h0" in io:
        hx = (io["h0"], io["c0"]) if cls is rnnc.LSTM else io["h0"]
    y, h = m(io["x"], hx, lengths=io.get("lengths"))
    assert m.backend_name == backend
    assert y.dtype == io["x"].dtype and type(y) is type(io["x"])
    assert rel_err(y, io["y"]) <= tol(backend)
    if cls is rnnc.LSTM:
        hy, cy = h
        assert rel_err(cy, io["cy"]) <= tol(backend)
    else:
        hy = h
    assert rel_err(hy, io["hy"]) <= tol(backend)
