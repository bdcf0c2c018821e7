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
