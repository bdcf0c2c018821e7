#!/usr/bin/env python3
"""torch_reference.py OUTDIR: writes reference files made by PyTorch itself.

For each case: <case>.weights.safetensors is nn.LSTM/nn.GRU's state_dict as
safetensors.torch.save_file writes it (fp32), and <case>.io.safetensors holds
the input x (and h0, c0, lengths) plus PyTorch's outputs y, hy, cy, computed
in float64 from the same fp32 numbers.  The *_nobias cases are bias=False
modules: their state_dicts hold no bias_* tensors.  For training,
<case>.dy.safetensors holds random gradients of the outputs (y, hy, cy, fp32,
as `rnnc grad --grad-output` reads them) and <case>.grad.safetensors PyTorch
autograd's gradients in float64 of sum(y*dy) + sum(hy*dhy) + sum(cy*dcy):
every weight by its state_dict name, x, and h0/c0 where the case gives them
(drawn from their own generator, so the forward files do not change).  The
files are committed under
tests/data; tests/test_torch_reference.c checks rnnc against them, so no test
needs PyTorch installed.  Run where PyTorch is (the GPU machine has it).
"""
import sys

import torch
from safetensors.torch import save_file

CASES = [
    # name, module, kwargs, T, B, lengths?, h0?
    ("lstm_1l", "LSTM", dict(input_size=5, hidden_size=7), 6, 3, False, True),
    ("lstm_2l_bi_proj", "LSTM", dict(input_size=4, hidden_size=6, num_layers=2,
                                     bidirectional=True, proj_size=3), 5, 2, False, True),
    ("lstm_bf_lengths", "LSTM", dict(input_size=3, hidden_size=5, num_layers=2,
                                     batch_first=True, bidirectional=True), 7, 4, True, False),
    ("gru_2l_bi", "GRU", dict(input_size=4, hidden_size=5, num_layers=2,
                              bidirectional=True), 6, 3, False, True),
    ("rnn_tanh", "RNN", dict(input_size=3, hidden_size=4, nonlinearity="tanh"), 5, 2, False, True),
    ("rnn_relu", "RNN", dict(input_size=3, hidden_size=4, nonlinearity="relu"), 5, 2, False, True),
    # bias=False (tests/gpu_cudnn_paths.c; rnnc --no-bias)
    ("lstm_nobias", "LSTM", dict(input_size=5, hidden_size=6, num_layers=2, bidirectional=True,
                                 bias=False), 6, 3, True, True),
    ("gru_nobias", "GRU", dict(input_size=4, hidden_size=5, num_layers=2, bias=False),
     6, 3, False, True),
    ("rnn_tanh_nobias", "RNN", dict(input_size=3, hidden_size=4, nonlinearity="tanh",
                                    bias=False), 5, 2, False, True),
]


def write_grads(out, name, kind, ref, inp, state, io, y, st, use_len, bf, gen):
    """Autograd's gradients of the outputs' dot product with random dy."""
    dy = {"y": torch.randn(io["y"].shape, generator=gen, dtype=torch.float64).float()}
    outs = [(y, dy["y"])]
    finals = [("hy", st[0]), ("cy", st[1])] if kind == "LSTM" else [("hy", st)]
    for key, val in finals:
        dy[key] = torch.randn(val.shape, generator=gen, dtype=torch.float64).float()
        outs.append((val, dy[key]))
    loss = sum((o * g.double()).sum() for o, g in outs)
    leaves = dict(ref.named_parameters())
    leaves["x"] = inp
    for key in ("h0", "c0"):
        if key in io:
            leaves[key] = state[0 if key == "h0" else 1] if kind == "LSTM" else state
    grads = torch.autograd.grad(loss, list(leaves.values()))
    save_file(dy, f"{out}/{name}.dy.safetensors")
    save_file({k: g.contiguous() for k, g in zip(leaves, grads)},
              f"{out}/{name}.grad.safetensors")


def forward_with_grad(kind, ref, x, io, use_len, bf, T):
    """The float64 forward again, differentiable in x, h0, c0 and the weights."""
    inp = x.double().requires_grad_(True)
    state = None
    if "h0" in io:
        h0 = io["h0"].double().requires_grad_(True)
        state = (h0, io["c0"].double().requires_grad_(True)) if kind == "LSTM" else h0
    packed = inp
    if use_len:
        packed = torch.nn.utils.rnn.pack_padded_sequence(inp, io["lengths"], batch_first=bf,
                                                         enforce_sorted=False)
    y, st = ref(packed, state)
    if use_len:
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, batch_first=bf, total_length=T)
    return inp, state, y, st


def main(out):
    gen = torch.Generator().manual_seed(20261123)
    torch.manual_seed(20261122)
    for name, kind, kw, T, B, use_len, use_h0 in CASES:
        mod = getattr(torch.nn, kind)(**kw)
        sd = {k: v.detach().float().contiguous() for k, v in mod.state_dict().items()}
        save_file(sd, f"{out}/{name}.weights.safetensors")
        ref = getattr(torch.nn, kind)(**kw).double()
        ref.load_state_dict({k: v.double() for k, v in sd.items()})
        bf = kw.get("batch_first", False)
        I = kw["input_size"]
        D = 2 if kw.get("bidirectional") else 1
        L = kw.get("num_layers", 1)
        H = kw["hidden_size"]
        P = kw.get("proj_size", 0) or H
        x = torch.randn(B, T, I) if bf else torch.randn(T, B, I)
        io = {"x": x.float()}
        h0 = torch.randn(L * D, B, P).float()
        c0 = torch.randn(L * D, B, H).float()
        state = None
        if use_h0:
            io["h0"] = h0
            if kind == "LSTM":
                io["c0"] = c0
                state = (h0.double(), c0.double())
            else:
                state = h0.double()
        inp = x.double()
        if use_len:
            lengths = torch.randint(1, T + 1, (B,))
            lengths[0] = T
            io["lengths"] = lengths.to(torch.int64)
            inp = torch.nn.utils.rnn.pack_padded_sequence(inp, lengths, batch_first=bf,
                                                          enforce_sorted=False)
        with torch.no_grad():
            y, st = ref(inp, state)
        if use_len:
            y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, batch_first=bf, total_length=T)
        io["y"] = y.contiguous()
        if kind == "LSTM":
            io["hy"], io["cy"] = st[0].contiguous(), st[1].contiguous()
        else:
            io["hy"] = st.contiguous()
        save_file(io, f"{out}/{name}.io.safetensors")
        print(name, {k: tuple(v.shape) for k, v in io.items()})
        inp, state, y, st = forward_with_grad(kind, ref, x, io, use_len, bf, T)
        write_grads(out, name, kind, ref, inp, state, io, y, st, use_len, bf, gen)


if __name__ == "__main__":
    main(sys.argv[1])
