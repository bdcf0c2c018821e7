"""The Python examples run (examples/python; the training one is in test_torch.py)."""
import os
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


def test_numpy_example(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "numpy_lstm.py")], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "y (20, 4, 32) h (4, 4, 16) c (4, 4, 16)" in r.stdout
    assert "y past a sequence's end is 0: True" in r.stdout
    assert "cell gated_rnn {" in r.stdout
    assert "saved ['weight_ih_l0', 'weight_hh_l0', 'bias_l0']" in r.stdout
