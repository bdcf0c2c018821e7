"""Ten SGD steps on a LayerNorm LSTM written as a .cell (rnnc, on CUDA
tensors) against the same cell written in PyTorch: the losses agree to 1e-4.
The work is examples/python/train_layernorm_lstm.py; it exits 77 (skipped)
while no backend here has a backward that runs layernorm_lstm."""
import os
import sys

import torch  # noqa: F401

from torch_checks import need_gpu

need_gpu()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "python"))
import train_layernorm_lstm  # noqa: E402

sys.exit(train_layernorm_lstm.main(["--device", "cuda", "--steps", "10", "--tol", "1e-4"]))
