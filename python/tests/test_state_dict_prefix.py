"""A whole model's state_dict (the LSTM under `encoder.lstm.` beside other
layers: tests/data/model.state_dict.safetensors, PyTorch's lstm_2l_bi_proj
weights renamed by scripts/state_dict_example.py) through Model's prefix."""
import os

import numpy as np
import pytest

import rnnc
from conftest import DATA, HOST_BACKENDS, rel_err, tol


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_prefix_reads_the_submodule(backend):
    io = rnnc.load_file(os.path.join(DATA, "lstm_2l_bi_proj.io.safetensors"))
    m = rnnc.Model("lstm", 4, 6, proj_size=3, num_layers=2, bidirectional=True, backend=backend)
    left = m.load_weights(os.path.join(DATA, "model.state_dict.safetensors"), prefix="encoder.lstm.")
    assert left == 3  # embedding.weight, fc.weight, fc.bias
    y, (hy, cy) = m.forward(io["x"], [io["h0"], io["c0"]])
    assert rel_err(y, io["y"]) <= tol(backend)
    assert rel_err(hy, io["hy"]) <= tol(backend)
    assert rel_err(cy, io["cy"]) <= tol(backend)


def test_without_the_prefix_the_other_layers_are_refused():
    m = rnnc.Model("lstm", 4, 6, proj_size=3, num_layers=2, bidirectional=True, backend="interp")
    sd = rnnc.load_file(os.path.join(DATA, "model.state_dict.safetensors"))
    with pytest.raises(rnnc.NotFoundError):
        m.set_weights(sd)
    with pytest.raises(rnnc.NotFoundError):
        m.set_weights(sd, prefix="encoder.")
    assert m.set_weights({k: np.asarray(v) for k, v in sd.items()}, prefix="encoder.lstm.") == 3
