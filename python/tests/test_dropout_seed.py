"""Model.set_seed: the seed of the dropout masks from the next training
forward on.  On the host backends: another seed draws other masks (between
layers and in the cell), the same seed the same ones; a backward keeps the
masks of its forward even when the seed changed in between."""
import os

import numpy as np
import pytest

import rnnc
from conftest import DATA, HOST_BACKENDS


def make(backend, rng, cell="lstm", layers=2):
    m = rnnc.Model(cell, 4, 6, num_layers=layers, dropout=0.4, seed=7, backend=backend)
    m.set_weights({n: rng.standard_normal(s).astype(np.float32) * 0.5 for n, s in m.weights})
    return m


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("cell", ["lstm", os.path.join(DATA, "cells", "semd.cell")])
def test_a_seed_draws_its_masks(backend, cell, rng):
    m = make(backend, rng, cell)
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    y7 = m.forward(x, training=True)[0]
    m.set_seed(8)
    y8 = m.forward(x, training=True)[0]
    assert not np.array_equal(y7, y8)
    assert np.array_equal(m.forward(x, training=True)[0], y8)  # kept from call to call
    m.set_seed(7)
    assert np.array_equal(m.forward(x, training=True)[0], y7)
    assert np.array_equal(m.forward(x)[0], m.forward(x)[0])  # inference: no masks at all


def test_a_backward_keeps_its_forwards_masks(rng):
    m = make("interp", rng)
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    dy = rng.standard_normal((5, 3, 6)).astype(np.float32)
    m.set_seed(11)
    m.forward(x, training=True)
    dx11 = m.backward(dy)[0]
    m.forward(x, training=True)
    m.set_seed(12)  # between a forward and its backward: for the next forward
    assert np.array_equal(m.backward(dy)[0], dx11)
    m.forward(x, training=True)
    assert not np.array_equal(m.backward(dy)[0], dx11)


def module_outputs(backend, weights, x, calls=3, train=True):
    """The outputs of `calls` calls of a fresh 2-layer LSTM module with dropout."""
    torch = rnnc.modules.torch
    if torch is not None:
        torch.manual_seed(5)
    m = rnnc.LSTM(4, 6, num_layers=2, dropout=0.5, seed=3, backend=backend)
    m.load_state_dict(weights)
    m.train(train)
    if torch is None:
        return [np.asarray(m(x)[0]) for _ in range(calls)]
    with torch.no_grad():
        return [m(torch.as_tensor(x))[0].numpy() for _ in range(calls)]


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_modules_draw_fresh_masks_each_training_call(backend, rng):
    """As nn.LSTM: each training call its own masks, a run repeated from the same
    seed (torch.manual_seed with PyTorch, else the module's seed) repeats them;
    evaluation draws none."""
    m = rnnc.LSTM(4, 6, num_layers=2, dropout=0.5, backend=backend)
    weights = {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) * 0.5
               for k, v in m.state_dict().items()}
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    ys = module_outputs(backend, weights, x)
    assert not np.array_equal(ys[0], ys[1]) and not np.array_equal(ys[1], ys[2])
    again = module_outputs(backend, weights, x)
    assert all(np.array_equal(a, b) for a, b in zip(ys, again))
    ev = module_outputs(backend, weights, x, train=False)
    assert np.array_equal(ev[0], ev[1])
