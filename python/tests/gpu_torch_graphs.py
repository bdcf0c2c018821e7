"""An rnnc module inside a torch model, run the two ways torch users speed a
model up: torch.compile (forward and backward, the rnnc call left to run
eagerly between compiled parts) and CUDA graph capture of an inference
forward (replayed on new inputs).  Each against the same model in float64
on the CPU: outputs 1e-5, gradients 1e-4.

Exits 77 without PyTorch (run_gpu.sh) or without a GPU."""
import torch  # noqa: F401  (before rnnc, so rnnc's modules are torch modules)

import rnnc
from torch_checks import fused_gpu

torch, checks, dev = fused_gpu()


class Net(torch.nn.Module):
    """A projection in, a recurrent stack, a projection out."""

    def __init__(self, rnn):
        super().__init__()
        self.inp, self.rnn, self.out = torch.nn.Linear(8, 16), rnn, torch.nn.Linear(64, 4)

    def forward(self, x):
        y, _ = self.rnn(torch.tanh(self.inp(x)))
        return self.out(y)


def nets():
    """The net on rnnc (fused) on the GPU, and the same weights on torch.nn in float64 on the CPU."""
    kw = dict(input_size=16, hidden_size=32, num_layers=2, bidirectional=True)
    ref = Net(torch.nn.LSTM(**kw))
    mine = Net(rnnc.LSTM(**kw, backend="fused"))
    mine.load_state_dict(ref.state_dict())
    return mine.to(dev), ref.double()


def grads(net):
    return {n: p.grad.detach().clone() for n, p in net.named_parameters()}


# torch.compile: the compiled model's forward and backward are eager rnnc's.
mine, ref = nets()
compiled = torch.compile(mine)
for step in range(2):  # the second call runs what the first compiled
    x = torch.randn(12, 3, 8, device=dev, requires_grad=True)
    gy = torch.randn(12, 3, 4, device=dev)
    y = compiled(x)
    (y * gy).sum().backward()
    x64 = x.detach().double().cpu().requires_grad_()
    y64 = ref(x64)
    (y64 * gy.double().cpu()).sum().backward()
    checks.true(f"compile {step}: rnnc ran on {mine.rnn.backend_name}",
                mine.rnn.backend_name == "fused")
    checks.close(f"compile {step}: y", y, y64, 1e-5)
    checks.close(f"compile {step}: dx", x.grad, x64.grad, 1e-4)
    g, g64 = grads(mine), grads(ref)
    for n in g64:
        checks.close(f"compile {step}: grad {n}", g[n], g64[n], 1e-4)
    mine.zero_grad()
    ref.zero_grad()

# CUDA graphs: warm up on a side stream (the library allocates its scratch at
# the first call of a shape), capture one inference forward, replay it.
mine, ref = nets()
mine.eval()
static_x = torch.randn(12, 3, 8, device=dev)
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():
    for _ in range(3):
        mine(static_x)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_y = mine(static_x)
for i in range(3):
    x = torch.randn(12, 3, 8, device=dev)
    static_x.copy_(x)
    graph.replay()
    torch.cuda.synchronize()
    with torch.no_grad():
        y64 = ref(x.double().cpu())
    checks.close(f"graph replay {i}: y", static_y, y64, 1e-5)
with torch.no_grad():
    checks.close("eager after the graph: y", mine(x), y64, 1e-5)

checks.exit()
