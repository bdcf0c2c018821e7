"""A module's bundle serves a new process on the GPU: module.compile_bundle writes the
fused kernels of a 2-layer bidirectional LSTM for this GPU's arch and SM count; a new process
with the disk cache off loads it (rnnc.load_bundle), makes the same module and runs it on
CUDA tensors, every kernel set from the bundle and none compiled (RNNC_LOG=info), and its
output equals this process's bit for bit; the same with the bundle named by RNNC_BUNDLE
instead of loaded by a call.

Exits 77 without PyTorch (run_gpu.sh) or without a GPU."""
import torch  # noqa: F401  (before rnnc, so rnnc's modules are torch modules)

import os
import re
import subprocess
import sys
import tempfile

import rnnc
from torch_checks import fused_gpu, package_path

torch, checks, dev = fused_gpu()
PACKAGE_PATH = package_path()
KW = dict(input_size=24, hidden_size=40, num_layers=2, bidirectional=True)
RUN_FROM_BUNDLE = """
import os, sys, torch
import rnnc
tmp = sys.argv[1]
if len(sys.argv) < 3:  # else RNNC_BUNDLE names it
    rnnc.load_bundle(os.path.join(tmp, "lstm.rnncpkg"))
lstm = rnnc.LSTM(**%r, backend="fused").cuda()
lstm.load_state_dict(torch.load(os.path.join(tmp, "w.pt")))
with torch.no_grad():
    y, _ = lstm(torch.load(os.path.join(tmp, "x.pt")).cuda())
torch.save(y.cpu(), os.path.join(tmp, "y.pt"))
""" % (KW,)

props = torch.cuda.get_device_properties(dev)
arch, sms = props.major * 10 + props.minor, props.multi_processor_count
lstm = rnnc.LSTM(**KW, backend="fused").to(dev)
x = torch.randn(9, 6, 24, device=dev)
with torch.no_grad():
    y, _ = lstm(x)
with tempfile.TemporaryDirectory() as tmp:
    lstm.compile_bundle(os.path.join(tmp, "lstm.rnncpkg"), [6], archs=[arch], sm_count=sms)
    torch.save(lstm.state_dict(), os.path.join(tmp, "w.pt"))
    torch.save(x.cpu(), os.path.join(tmp, "x.pt"))
    env = dict(os.environ, PYTHONPATH=PACKAGE_PATH, RNNC_CACHE="0", RNNC_LOG="info")
    for how, extra, more in (("a call", [], {}),
                             ("RNNC_BUNDLE", ["env"],
                              {"RNNC_BUNDLE": os.path.join(tmp, "lstm.rnncpkg")})):
        run = subprocess.run([sys.executable, "-c", RUN_FROM_BUNDLE, tmp] + extra,
                             capture_output=True, text=True, env=dict(env, **more))
        print(run.stdout + run.stderr)
        checks.true(f"bundle by {how}: the new process ran", run.returncode == 0)
        origins = re.findall(r"^rnnc: kernel \S+ \(sm_\d+\): (\w+),", run.stderr, re.M)
        checks.true(f"bundle by {how}: every kernel set from the bundle ({origins})",
                    len(origins) >= 2 and set(origins) == {"bundle"})
        if run.returncode == 0:
            checks.true(f"bundle by {how}: y equals this process's, bit for bit",
                        torch.equal(torch.load(os.path.join(tmp, "y.pt")), y.cpu()))
checks.exit()
