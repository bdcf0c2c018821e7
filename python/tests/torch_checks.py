"""What the GPU tests of the package share (they run without pytest: the
Python that has PyTorch on the GPU machine need not have it)."""
import sys

SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def need_gpu():
    import torch
    if not torch.cuda.is_available():
        skip("PyTorch sees no GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def fused_gpu():
    """(torch, a Checks, the current CUDA device) for a test of the fused backend; exits
    77 where PyTorch sees no GPU or librnnc has no fused backend usable here."""
    torch = need_gpu()
    import rnnc
    if not rnnc.backend_available("fused"):
        skip("librnnc has no fused backend usable here")
    return torch, Checks(), torch.device("cuda", torch.cuda.current_device())


def package_path():
    """A PYTHONPATH under which a child process imports this rnnc (the tests that run a
    saved program or a bundle in a new process)."""
    import os
    import rnnc
    return os.pathsep.join([os.path.dirname(os.path.dirname(rnnc.__file__)),
                            os.environ.get("PYTHONPATH", "")])


def rel_err(out, ref):
    """max|out - ref| / max|ref| in float64."""
    out, ref = out.detach().double().cpu(), ref.detach().double().cpu()
    assert out.shape == ref.shape, (tuple(out.shape), tuple(ref.shape))
    assert bool(out.isfinite().all())
    scale = ref.abs().max().item()
    assert scale > 0, "a zero reference checks nothing"
    return (out - ref).abs().max().item() / scale


class Checks:
    """Collects named comparisons; main() exits 1 if any failed."""

    def __init__(self):
        self.failed = []

    def close(self, name, out, ref, tol):
        e = rel_err(out, ref)
        ok = e <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {name:<52} rel err {e:.3g} (tol {tol:g})")
        if not ok:
            self.failed.append(name)

    def true(self, name, cond):
        print(f"{'ok  ' if cond else 'FAIL'} {name}")
        if not cond:
            self.failed.append(name)

    def exit(self):
        if self.failed:
            print(f"{len(self.failed)} check(s) failed: {', '.join(self.failed)}")
            sys.exit(1)
        print("all checks passed")
        sys.exit(0)
