"""The prepared call (rnnc/_plan.py) against the module's reference path
(CellRNN._forward, through Model.forward): the same outputs bit for bit, the
same errors, and a new plan or the reference wherever something it depends on
changes (shape, dtype, layout, weights, training flag).  NumPy arrays always,
torch CPU tensors where PyTorch is installed."""
import threading

import numpy as np
import pytest

import rnnc
from conftest import HOST_BACKENDS

FRAMEWORKS = ["numpy"]
if rnnc.modules.torch is not None:
    FRAMEWORKS.append("torch")


def as_fw(fw, a):
    if fw == "torch":
        return rnnc.modules.torch.from_numpy(np.ascontiguousarray(a))
    return a


def to_np(t):
    return t.numpy() if not isinstance(t, np.ndarray) else t


def states(h):
    return [to_np(t) for t in (h if isinstance(h, tuple) else (h,))]


def same(out, ref):
    (y, h), (yr, hr) = out, ref
    assert type(y) is type(yr) and isinstance(h, tuple) == isinstance(hr, tuple)
    assert np.array_equal(to_np(y), to_np(yr))
    for a, b in zip(states(h), states(hr), strict=True):
        assert np.array_equal(a, b)


def no_grad():
    torch = rnnc.modules.torch
    return torch.no_grad() if torch is not None else _Nothing()


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def randomise(m, rng):
    m.load_state_dict({k: rng.standard_normal(tuple(v.shape)).astype(np.float32) * 0.5
                       for k, v in m.state_dict().items()})


CASES = [
    ("lstm", lambda b: rnnc.LSTM(5, 6, backend=b), False),
    ("lstm_2l_bi_bf_proj", lambda b: rnnc.LSTM(5, 6, num_layers=2, bidirectional=True,
                                               batch_first=True, proj_size=4, backend=b), True),
    ("gru", lambda b: rnnc.GRU(5, 6, backend=b), False),
    ("ln_lstm", lambda b: rnnc.CellRNN("layernorm_lstm", 5, 6, backend=b), False),
]


@pytest.mark.parametrize("fw", FRAMEWORKS)
@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name,make,bf", CASES, ids=[c[0] for c in CASES])
def test_prepared_call_equals_reference(rng, fw, backend, name, make, bf):
    m = make(backend)
    randomise(m, rng)
    m.eval()
    with no_grad():
        for t, b in ((1, 3), (4, 3), (1, 3), (2, 1)):  # plans made, then found again
            x = rng.standard_normal((b, t, 5) if bf else (t, b, 5)).astype(np.float32)
            x = as_fw(fw, x)
            y, h = m(x)
            same((y, h), m._forward(x, None, None))
            # The final states fed back: the prepared call with initial states.
            same(m(x, h), m._forward(x, h, None))
        assert len(m._plans) == 3 and all(m._plans.values())  # none refused (False)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_inputs_not_in_place_take_the_reference_path(rng, fw):
    m = rnnc.LSTM(4, 5, backend="interp")
    randomise(m, rng)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    h0 = rng.standard_normal((1, 2, 5)).astype(np.float32)
    wide = rng.standard_normal((1, 2, 10)).astype(np.float32)
    c0 = np.ascontiguousarray(wide[:, :, ::2])
    with no_grad():
        ref = m(as_fw(fw, x), (as_fw(fw, h0), as_fw(fw, c0)))
        # non-contiguous input and state, float64 input and state: converted, same numbers
        xt = as_fw(fw, np.ascontiguousarray(x.transpose(1, 0, 2)))
        same(m(xt.transpose(1, 0) if fw == "torch" else xt.transpose(1, 0, 2),
               (as_fw(fw, h0), as_fw(fw, c0))), ref)
        same(m(as_fw(fw, x.astype(np.float64)), (as_fw(fw, h0.astype(np.float64)),
                                                   as_fw(fw, c0))), ref)
        same(m(as_fw(fw, x), (as_fw(fw, h0), as_fw(fw, wide)[:, :, ::2])), ref)
        # an initial state left out (None) is zeros, as the reference has it
        zero = m(as_fw(fw, x), (as_fw(fw, h0), as_fw(fw, np.zeros_like(c0))))
        same(m(as_fw(fw, x), (as_fw(fw, h0), None)), zero)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_errors_are_those_of_the_reference(rng, fw):
    m = rnnc.GRU(4, 5, backend="interp")
    x = as_fw(fw, rng.standard_normal((2, 3, 4)).astype(np.float32))
    with no_grad():
        for _ in range(2):  # before and after the plan exists
            with pytest.raises(rnnc.ShapeError):
                m(as_fw(fw, np.ones((2, 3, 7), np.float32)))
            with pytest.raises(rnnc.ShapeError):
                m(x, as_fw(fw, np.ones((1, 4, 5), np.float32)))  # batch 4, input's is 3
            with pytest.raises(rnnc.InvalidArgumentError):
                m(x, (as_fw(fw, np.ones((1, 3, 5), np.float32)),) * 2)  # a GRU: one state
            m(x)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_weight_changes_reach_a_plan(rng, fw):
    m = rnnc.LSTM(3, 4, backend="interp")
    x = as_fw(fw, rng.standard_normal((2, 2, 3)).astype(np.float32))
    with no_grad():
        m(x)
        sd = {k: rng.standard_normal(tuple(v.shape)).astype(np.float32)
              for k, v in m.state_dict().items()}
        m.load_state_dict(sd)
        fresh = rnnc.LSTM(3, 4, backend="interp")
        fresh.load_state_dict(sd)
        same(m(x), fresh(x))
        if fw == "torch":  # in place (an optimiser step), and a parameter replaced
            torch = rnnc.modules.torch
            m.weight_hh_l0.mul_(0.5)
            sd["weight_hh_l0"] = sd["weight_hh_l0"] * 0.5
            fresh.load_state_dict(sd)
            same(m(x), fresh(x))
            m.bias_ih_l0 = torch.nn.Parameter(torch.zeros(16))
            sd["bias_ih_l0"] = np.zeros(16, np.float32)
            fresh.load_state_dict(sd)
            same(m(x), fresh(x))


def test_training_flag_reaches_a_plan(rng):
    """Dropout between layers runs in training mode only, through a plan as through
    the reference; a training forward counts as one (a backward belongs to it)."""
    m = rnnc.LSTM(4, 8, num_layers=2, dropout=0.5, backend="interp")
    randomise(m, rng)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    model = m._model(("interp", 0))
    with no_grad():
        m.eval()
        y_eval = m(x)[0]
        assert np.array_equal(y_eval, m._forward(x, None, None)[0])
        m.train()
        g = model.generation
        y_train = m(x)[0]
        assert model.generation == g + 1 and model._last[1] == x.shape
        assert not np.array_equal(y_train, y_eval)
        m.eval()
        assert np.array_equal(m(x)[0], y_eval)


def test_outputs_are_new_arrays_each_call(rng):
    m = rnnc.LSTM(3, 4, backend="interp")
    x1 = rng.standard_normal((1, 2, 3)).astype(np.float32)
    y1, (h1, c1) = m(x1)
    keep = y1.copy(), h1.copy(), c1.copy()
    y2, (h2, c2) = m(x1 * 2)
    assert all(np.array_equal(a, b) for a, b in zip(keep, (y1, h1, c1)))
    outs = (y1, h1, c1, y2, h2, c2)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(outs) for b in outs[i + 1:])


def test_plans_are_bounded(rng):
    m = rnnc.RNN(2, 3, backend="interp")
    for b in range(1, 80):
        m(np.ones((1, b, 2), np.float32))
    assert 0 < len(m._plans) <= 64


def test_threads_sharing_a_module(rng):
    """Calls on one module from several threads take turns: each gets its own result."""
    m = rnnc.GRU(6, 8, backend="interp")
    randomise(m, rng)
    xs = [rng.standard_normal((2, 3, 6)).astype(np.float32) for _ in range(8)]
    refs = [m._forward(x, None, None) for x in xs]
    bad = []

    def work(k):
        for _ in range(40):
            i = (k * 3 + _) % len(xs)
            y, h = m(xs[i])
            if not (np.array_equal(y, refs[i][0]) and np.array_equal(h, refs[i][1])):
                bad.append(i)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_read_only_arrays(rng):
    m = rnnc.GRU(3, 4, backend="interp")
    x = rng.standard_normal((2, 2, 3)).astype(np.float32)
    h = rng.standard_normal((1, 2, 4)).astype(np.float32)
    ref = m(x, h)
    x.flags.writeable = h.flags.writeable = False
    same(m(x, h), ref)
