#!/usr/bin/env python3
"""rnnc from NumPy: an LSTM and a custom cell built in Python, no PyTorch needed.

    PYTHONPATH=build/python python3 examples/python/numpy_lstm.py"""
import os
import tempfile

import numpy as np

import rnnc

rng = np.random.default_rng(0)
T, B, I, H = 20, 4, 8, 16

# nn.LSTM's arguments; weights by nn.LSTM's state_dict names.
lstm = rnnc.LSTM(I, H, num_layers=2, bidirectional=True)
print(lstm, "runs on", "cpu" if rnnc.backend_available("cpu") else "interp")
print("weights:", {k: v.shape for k, v in lstm.state_dict().items() if k.endswith("_l0")})
x = rng.standard_normal((T, B, I)).astype(np.float32)
y, (h, c) = lstm(x, lengths=[20, 17, 9, 3])
print("y", y.shape, "h", h.shape, "c", c.shape, "| y past a sequence's end is 0:",
      bool(np.all(y[3:, 3] == 0)))

# A cell of your own, built op by op (the same ops as a .cell file).
b = rnnc.CellBuilder("gated_rnn")
xv, hv = b.input("x", "I"), b.state("h", "H")
w_ih, w_hh = b.param("weight_ih", "2H", "I"), b.param("weight_hh", "2H", "H")
bias = b.param("bias", None, "2H")
cand, gate = b.chunk(b.linear(xv, w_ih) + bias + b.linear(hv, w_hh), 2)
h_next = b.sigmoid(gate) * b.tanh(cand) + (1 - b.sigmoid(gate)) * hv
b.set_next(hv, h_next)
b.set_output(h_next)
cell = b.build()
print(cell.text)
rnn = rnnc.CellRNN(cell, I, H)
y, h = rnn(x)
print("custom cell: y", y.shape, "h", h.shape)
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "gated_rnn.safetensors")
    rnnc.save_file(rnn.state_dict(), path)  # the state_dict as a safetensors file
    print("saved", list(rnnc.load_file(path)))
