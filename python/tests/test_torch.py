"""The modules as torch.nn.Modules on CPU tensors, where PyTorch is installed
(Debian's python3-torch: scripts/deps.sh with RNNC_WITH_TORCH=ON); skipped
otherwise.  The GPU side is gpu_torch_lstm.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rnnc
from conftest import HOST_BACKENDS, tol

torch = pytest.importorskip("torch")
if rnnc.modules.torch is None:
    pytest.skip("rnnc was imported without torch (RNNC_NO_TORCH)", allow_module_level=True)

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


def rel(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    assert out.shape == ref.shape and bool(out.isfinite().all())
    return ((out - ref).abs().max() / ref.abs().max()).item()


def pair(kind, backend, **kw):
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    ref = getattr(torch.nn, kind)(**kw).double()
    mine = getattr(rnnc, kind)(**kw, backend=backend)
    mine.load_state_dict(ref.state_dict())  # float64 tensors, converted when bound
    return ref, mine


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("kind,kw", [
    ("LSTM", dict(input_size=5, hidden_size=6, num_layers=2, bidirectional=True, proj_size=4)),
    ("GRU", dict(input_size=5, hidden_size=6, batch_first=True)),
    ("RNN", dict(input_size=5, hidden_size=6, nonlinearity="relu", num_layers=2)),
])
def test_equals_torch_module(backend, kind, kw):
    ref, mine = pair(kind, backend, **kw)
    assert isinstance(mine, torch.nn.Module)
    assert list(mine.state_dict()) == list(ref.state_dict())
    x = torch.randn((3, 7, 5) if kw.get("batch_first") else (7, 3, 5))
    with torch.no_grad():
        y, h = mine(x)
        yr, hr = ref(x.double())
    assert y.dtype == torch.float32 and isinstance(h, tuple) == (kind == "LSTM")
    assert rel(y, yr) <= tol(backend)
    for a, b in zip(h if kind == "LSTM" else [h], hr if kind == "LSTM" else [hr]):
        assert rel(a, b) <= tol(backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_packed_sequence(backend):
    ref, mine = pair("LSTM", backend, input_size=4, hidden_size=5, num_layers=2,
                     bidirectional=True)
    x = torch.randn(8, 4, 4)
    lengths = torch.tensor([3, 8, 5, 5])
    pack = torch.nn.utils.rnn.pack_padded_sequence
    with torch.no_grad():
        p, (h, c) = mine(pack(x, lengths, enforce_sorted=False))
        pr, (hr, cr) = ref(pack(x.double(), lengths, enforce_sorted=False))
    assert isinstance(p, torch.nn.utils.rnn.PackedSequence)
    assert torch.equal(p.batch_sizes, pr.batch_sizes)
    assert torch.equal(p.sorted_indices, pr.sorted_indices)
    assert rel(p.data, pr.data) <= tol(backend)
    assert rel(h, hr) <= tol(backend) and rel(c, cr) <= tol(backend)


def test_in_place_weight_updates_reach_the_library():
    _, mine = pair("GRU", "interp", input_size=3, hidden_size=4)
    x = torch.randn(5, 2, 3)
    with torch.no_grad():
        y0, _ = mine(x)
        mine.weight_hh_l0.mul_(1.5)  # what an optimiser step does
        y1, _ = mine(x)
    fresh = rnnc.GRU(3, 4, backend="interp")
    fresh.load_state_dict(mine.state_dict())
    with torch.no_grad():
        y2, _ = fresh(x)
    assert not torch.equal(y0, y1) and torch.equal(y1, y2)


def test_autograd_matches_torch_or_says_unsupported():
    """Gradients through rnnc_model_backward where the interpreter has one;
    until then loss.backward() raises UnsupportedError, naming the backend."""
    ref, mine = pair("LSTM", "interp", input_size=3, hidden_size=4, num_layers=2)
    x = torch.randn(6, 2, 3, requires_grad=True)
    xd = x.detach().double().requires_grad_()
    y, (h, c) = mine(x)
    assert y.requires_grad and y.grad_fn is not None
    yr, (hr, cr) = ref(xd)
    gy, gc = torch.randn_like(yr), torch.randn_like(cr)
    ((yr * gy).sum() + (cr * gc).sum()).backward()
    try:
        ((y * gy.float()).sum() + (c * gc.float()).sum()).backward()
    except rnnc.UnsupportedError as e:
        assert "backward" in e.detail
        pytest.skip(f"interp has no backward yet: {e.detail}")
    assert rel(x.grad, xd.grad) <= 1e-4
    for (n, p), (_, pr) in zip(mine.named_parameters(), ref.named_parameters()):
        assert rel(p.grad, pr.grad) <= 1e-4, n
    # A graph whose forward is no longer the model's last is refused, not wrong.
    y1, _ = mine(x)
    y2, _ = mine(x)
    with pytest.raises(rnnc.StateError):
        y1.sum().backward()


def test_eval_mode_no_grad_and_numpy_in_torch_mode():
    _, mine = pair("RNN", "interp", input_size=3, hidden_size=4)
    mine.eval()
    with torch.no_grad():
        y, h = mine(torch.randn(4, 2, 3))
    assert not y.requires_grad
    yn, hn = mine(np.ones((4, 2, 3), np.float32))  # NumPy in, NumPy out
    assert isinstance(yn, np.ndarray) and yn.shape == (4, 2, 4)


def test_load_file_as_torch(tmp_path):
    t = {"a": torch.randn(3, 2), "b": torch.arange(5), "c": torch.randn(4).bfloat16()}
    rnnc.save_file(t, tmp_path / "t.safetensors")
    back = rnnc.load_file(tmp_path / "t.safetensors", framework="torch")
    assert all(torch.equal(back[k], t[k]) and back[k].dtype == t[k].dtype for k in t)
    npb = rnnc.load_file(tmp_path / "t.safetensors")["c"]  # NumPy has no bfloat16: float32
    assert npb.dtype == np.float32 and np.array_equal(npb, t["c"].float().numpy())


def test_layernorm_lstm_training_example():
    sys.path.insert(0, EXAMPLES)
    try:
        import train_layernorm_lstm as ex
    finally:
        sys.path.pop(0)
    rc = ex.main(["--device", "cpu"])
    if rc == 77:
        pytest.skip("no host backend has a backward for layernorm_lstm yet")
    assert rc == 0


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_half_and_bfloat16_follow_the_parameters(backend):
    """.half() / .to(torch.bfloat16) / .float() as on nn.LSTM: the module's dtype follows its
    parameters', giving what a module made with that dtype gives, bit for bit."""
    ref = torch.nn.LSTM(5, 6, num_layers=2)
    x = torch.randn(4, 3, 5)
    for convert, dt in ((lambda m: m.half(), torch.float16),
                        (lambda m: m.to(torch.bfloat16), torch.bfloat16)):
        mine = rnnc.LSTM(5, 6, num_layers=2, backend=backend)
        want = rnnc.LSTM(5, 6, num_layers=2, backend=backend, dtype=dt)
        mine.load_state_dict(ref.state_dict())
        want.load_state_dict(ref.state_dict())
        convert(mine)
        with torch.no_grad():
            y, (h, c) = mine(x.to(dt))
            yw, _ = want(x.to(dt))
        assert y.dtype == h.dtype == c.dtype == dt
        assert torch.equal(y, yw)
        with torch.no_grad():
            y32, _ = mine.float()(x)
        assert y32.dtype == torch.float32
    made = rnnc.LSTM(5, 6, dtype=torch.bfloat16, backend=backend)
    made.to("cpu")  # parameters stay float32: the dtype it was made with stays
    with torch.no_grad():
        assert made(x)[0].dtype == torch.bfloat16


def test_double_backward_is_refused():
    """The library's backward is not differentiable: a second-order gradient raises rather
    than come out as zeros."""
    mine = rnnc.LSTM(5, 6, backend="interp")
    x = torch.randn(4, 2, 5, requires_grad=True)
    y, _ = mine(x)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    with pytest.raises(RuntimeError):
        g.sum().backward()


def test_compiled_whole_graph_trains_as_torch():
    """Under torch.compile(fullgraph=True) a module's call is one custom operator
    (rnnc::rnn): no graph break, and the forward and every gradient are torch's,
    also after a recompile for another length.  aot_eager: AOT autograd without
    inductor's code generation, so the test stays quick on a CPU."""
    kw = dict(input_size=5, hidden_size=6, num_layers=2, bidirectional=True, proj_size=4)
    ref, mine = pair("LSTM", "interp", **kw)
    f = torch.compile(lambda x, h: mine(x, h), fullgraph=True, backend="aot_eager")
    for t in (7, 7, 11):
        x = torch.randn(t, 3, 5, requires_grad=True)
        h0 = (torch.randn(4, 3, 4, requires_grad=True), torch.randn(4, 3, 6, requires_grad=True))
        y, (h, c) = f(x, h0)
        gy = torch.randn_like(y)
        ((y * gy).sum() + h.sum() + 2 * c.sum()).backward()
        x64 = x.detach().double().requires_grad_()
        h64 = tuple(s.detach().double().requires_grad_() for s in h0)
        yr, (hr, cr) = ref(x64, h64)
        ((yr * gy.double()).sum() + hr.sum() + 2 * cr.sum()).backward()
        assert rel(y, yr) <= 1e-6 and rel(c, cr) <= 1e-6
        assert rel(x.grad, x64.grad) <= 1e-6
        for s, r in zip(h0, h64):
            assert rel(s.grad, r.grad) <= 1e-6
        for n, p in ref.named_parameters():
            assert rel(getattr(mine, n).grad, p.grad) <= 1e-6, n
        mine.zero_grad()
        ref.zero_grad()


def test_compiled_calls_keep_the_eager_rules():
    """The operator's call is the eager one: eval mode makes a backward fail as it does
    eagerly, and a second forward before the first's backward is refused."""
    mine = rnnc.GRU(5, 6, backend="interp")
    f = torch.compile(lambda x: mine(x)[0], fullgraph=True, backend="aot_eager")
    x = torch.randn(4, 2, 5, requires_grad=True)
    y1 = f(x)
    f(x)
    with pytest.raises(rnnc.StateError):
        y1.sum().backward()
    mine.eval()
    with pytest.raises(rnnc.StateError):
        f(x).sum().backward()


def test_the_operator_passes_opcheck():
    """torch.library.opcheck: the schema, and the fake implementation's shapes, dtypes
    and devices against the real call's."""
    mine = rnnc.LSTM(5, 6, num_layers=2, batch_first=True, backend="interp")
    x = torch.randn(3, 4, 5)
    args = (mine._op_id, mine._op_spec, False, False, x, [], mine._live_weights(),
            torch.tensor([4, 2, 3]))
    torch.library.opcheck(torch.ops.rnnc.rnn.default, args,
                          test_utils=("test_schema", "test_faketensor"))


def test_exported_program_runs_in_another_process(tmp_path):
    """torch.export of a model holding an rnnc module, saved, then loaded and run in a
    new Python process (which imports rnnc first): no module there has the graph's id,
    so a module made from the graph's description of it runs the call on the saved
    weights, and the outputs are the eager ones bit for bit."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnnc.LSTM(5, 6, num_layers=2, bidirectional=True, proj_size=4,
                                 backend="interp")
            self.out = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.out(self.rnn(x)[0])

    net = Net().eval()
    x = torch.randn(7, 3, 5)
    with torch.no_grad():
        want = net(x)
    torch.export.save(torch.export.export(net, (x,)), tmp_path / "net.pt2")
    torch.save(x, tmp_path / "x.pt")
    script = ("import sys, torch, rnnc\n"
              "ep = torch.export.load(sys.argv[1] + '/net.pt2')\n"
              "with torch.no_grad():\n"
              "    y = ep.module()(torch.load(sys.argv[1] + '/x.pt'))\n"
              "torch.save(y, sys.argv[1] + '/y.pt')\n")
    path = os.pathsep.join([os.path.dirname(os.path.dirname(rnnc.__file__)),
                            os.environ.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=path))
    assert run.returncode == 0, run.stderr
    assert torch.equal(torch.load(tmp_path / "y.pt"), want)
