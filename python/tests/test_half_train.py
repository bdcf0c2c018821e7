"""Half models train on the interpreter (in double inside, the gradients in the
model's dtype at the edges: docs/training.md "Half models"): a float16 model's
dx and initial-state gradients are the float32 model's on the same rounded
values, rounded; its weight gradients (float32) are equal."""
import numpy as np

import rnnc


def test_float16_training_is_the_rounded_float32_one(rng):
    half = rnnc.Model("gru", 6, 8, num_layers=2, dtype="float16", backend="interp")
    full = rnnc.Model("gru", 6, 8, num_layers=2, backend="interp")
    w = {n: rng.uniform(-0.3, 0.3, s).astype(np.float16).astype(np.float32)
         for n, s in half.weights}
    half.set_weights(w)
    full.set_weights(w)
    x = rng.uniform(-1, 1, (5, 3, 6)).astype(np.float16)
    dy = rng.uniform(-1, 1, (5, 3, 8)).astype(np.float16)
    y16, _ = half.forward(x, training=True)
    y32, _ = full.forward(x.astype(np.float32), training=True)
    assert y16.dtype == np.float16
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    dx16, dinit16 = half.backward(dy)
    dx32, dinit32 = full.backward(dy.astype(np.float32))
    assert dx16.dtype == np.float16
    np.testing.assert_array_equal(dx16, dx32.astype(np.float16))
    np.testing.assert_array_equal(dinit16[0], dinit32[0].astype(np.float16))
    for n, _ in half.weights:
        np.testing.assert_array_equal(half.weight_grad(n), full.weight_grad(n))
