"""bfloat16 models from Python.  NumPy has no bfloat16: a BF16 model takes
float arrays (rounded to bfloat16 on the way in) and returns float32 arrays
holding bfloat16 values; torch tensors pass as torch.bfloat16 (gpu_torch_half.py).
A BF16 model's outputs are the float32 model's on the same rounded values,
rounded (docs/c-api.md: computed wider, outputs rounded to the dtype)."""
import numpy as np
import pytest

import rnnc
from rnnc import _arrays as A
from conftest import HOST_BACKENDS


def bf16(a):
    """a rounded to bfloat16, as float32."""
    return A.from_bf16_bits(A.to_bf16_bits(a))


def test_bits_round_to_nearest_even():
    one = 1.0
    ulp = 2.0 ** -7  # bfloat16's spacing in [1, 2)
    x = np.array([one, one + ulp / 2, one + 1.5 * ulp, one + ulp / 2 + 2.0 ** -20, -2.5,
                  np.inf, -np.inf, 3.4e38, 0.0, -0.0], np.float32)
    want = np.array([one, one, one + 2 * ulp, one + ulp, -2.5, np.inf, -np.inf, np.inf, 0.0,
                     -0.0], np.float32)
    np.testing.assert_array_equal(bf16(x), want)
    assert np.signbit(bf16(np.float32(-0.0)))
    assert A.to_bf16_bits(np.float32(1.0)) == 0x3F80
    nan = A.to_bf16_bits(np.array([np.nan, -np.nan], np.float32))
    assert np.isnan(A.from_bf16_bits(nan)).all()


def test_dtype_names():
    for name in ("bfloat16", "bf16"):
        assert rnnc.Model("gru", 3, 4, dtype=name, backend="interp").dtype == A.BF16
    with pytest.raises(rnnc.InvalidArgumentError, match="bfloat16"):
        rnnc.Model("gru", 3, 4, dtype="int8", backend="interp")


def pair(cell, backend, rng, **kw):
    """A bfloat16 model and a float32 one with the same weights, already bfloat16 values."""
    half = rnnc.Model(cell, 6, 8, dtype="bfloat16", backend=backend, **kw)
    full = rnnc.Model(cell, 6, 8, backend=backend, **kw)
    w = {n: bf16(rng.uniform(-0.4, 0.4, s)) for n, s in half.weights}
    half.set_weights(w)
    full.set_weights(w)
    return half, full


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_forward_is_the_rounded_float32_one(backend, cell, rng):
    half, full = pair(cell, backend, rng)
    x = rng.uniform(-1, 1, (7, 3, 6))  # float64: rounded on the way in
    h0 = rng.uniform(-1, 1, (1, 3, 8))
    y, fin = half.forward(x, [h0] + [None] * (len(half.states) - 1))
    yr, finr = full.forward(bf16(x), [bf16(h0)] + [None] * (len(half.states) - 1))
    assert y.dtype == np.float32 and y.shape == (7, 3, 8)
    np.testing.assert_array_equal(bf16(y), y)  # bfloat16 values
    np.testing.assert_array_equal(y, bf16(yr))
    for a, b in zip(fin, finr):
        np.testing.assert_array_equal(a, bf16(b))


def test_training_is_the_rounded_float32_one(rng):
    half, full = pair("lstm", "interp", rng, num_layers=2, bidirectional=True)
    x = bf16(rng.uniform(-1, 1, (5, 2, 6)))
    dy = bf16(rng.uniform(-1, 1, (5, 2, 16)))
    y, _ = half.forward(x, training=True)
    yr, _ = full.forward(x, training=True)
    np.testing.assert_array_equal(y, bf16(yr))
    dx, dinit = half.backward(dy)
    dxr, dinitr = full.backward(dy)
    assert dx.dtype == np.float32
    np.testing.assert_array_equal(dx, bf16(dxr))
    for a, b in zip(dinit, dinitr):
        np.testing.assert_array_equal(a, bf16(b))
    for n, _ in half.weights:
        np.testing.assert_array_equal(half.weight_grad(n), full.weight_grad(n))


def test_module_takes_and_gives_float_arrays(rng):
    m = rnnc.LSTM(6, 8, num_layers=2, dtype="bfloat16", backend="interp")
    ref = rnnc.LSTM(6, 8, num_layers=2, backend="interp")
    sd = {k: bf16(v) for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    ref.load_state_dict(sd)
    x = rng.uniform(-1, 1, (4, 2, 6)).astype(np.float32)
    for _ in range(2):  # the second call of a kind goes through the module's plan, if any
        y, (h, c) = m(x)
        assert y.dtype == h.dtype == c.dtype == np.float32
        np.testing.assert_array_equal(bf16(y), y)
    yr, _ = ref(bf16(x))
    assert np.abs(y - yr).max() <= 2 ** -7 * np.abs(yr).max() * 4
