"""The loop softmax and gesummv of benchmarks/gpu_kernels.py under fixed
launch configurations (`plait.jit(tune={...})` with one candidate each)
against the default and torch.compile, at several shapes: the sweep behind
the wide versions of row kernels (docs/cuda.md, "Wide blocks for long
rows"). Timing as gpu_kernels.py's: torch CUDA tensors, an L2 flush and a
spin kernel before each run, CUDA events around the call, median of 30.

    python benchmarks/cuda_block_sweep.py softmax [--shapes 8192x8192,2048x2048]
    python benchmarks/cuda_block_sweep.py gesummv [--sizes 2048,8192]
"""

import argparse
import os
import statistics
import sys
import tempfile
import types

import plait

try:
    import torch
except ImportError:  # the sweep runs on torch tensors
    torch = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_kernels import EventClock, plait_gesummv, plait_softmax  # noqa: E402

SOFTMAX_SHAPES = "8192x8192,2048x2048,256x2048,4096x1024,1024x4096,512x16384,8192x512"
SOFTMAX_CONFIGS = [(256, 4), (256, 8), (512, 2), (512, 4), (1024, 2), (128, 8)]
GESUMMV_CONFIGS = [(256, 0), (256, 128), (256, 64), (256, 32), (512, 0), (512, 128), (128, 0), (128, 64)]

_clock = None


def median_ms(run, repeat=30):
    global _clock
    if _clock is None:
        _clock = EventClock(torch=torch)
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    impl = types.SimpleNamespace(run=run, reset_each_run=False)
    return statistics.median(_clock.time_ms(impl) for _ in range(repeat))


def softmax(shapes):
    kernels = {f"{t} x {g}": plait.jit(plait_softmax, target="cuda", tune={"threads": [t], "row_groups": [g]})
               for t, g in SOFTMAX_CONFIGS}
    kernels["default"] = plait.jit(plait_softmax, target="cuda")
    compiled = torch.compile(lambda x: torch.softmax(x, 1))
    for text in shapes.split(","):
        shape = tuple(int(n) for n in text.split("x"))
        x = torch.randn(shape, device="cuda")
        out = torch.empty_like(x)
        ref = torch.softmax(x, 1)
        cells = []
        for name, kernel in kernels.items():
            kernel(x, out)
            torch.cuda.synchronize()
            assert torch.allclose(out, ref, rtol=1e-4, atol=1e-6), name
            cells.append(f"{name}: {median_ms(lambda: kernel(x, out)):.4f}")
        cells.append(f"torch.compile: {median_ms(lambda: compiled(x)):.4f}")
        print(f"softmax f32 {text} (threads x row groups, ms): " + ", ".join(cells), flush=True)


def gesummv(sizes):
    kernels = {f"{t} / {m or t}": plait.jit(plait_gesummv, target="cuda",
                                            tune={"threads": [t], "max_team": [m or t]})
               for t, m in GESUMMV_CONFIGS}
    compiled = torch.compile(lambda a, b, x: 1.5 * (a @ x) + 1.2 * (b @ x))
    for n in (int(v) for v in sizes.split(",")):
        a = torch.rand(n, n, device="cuda", dtype=torch.float64)
        b = torch.rand_like(a)
        x = torch.rand(n, device="cuda", dtype=torch.float64)
        y = torch.empty_like(x)
        ref = 1.5 * (a @ x) + 1.2 * (b @ x)
        cells = []
        for name, kernel in kernels.items():
            kernel(1.5, 1.2, a, b, x, y)
            torch.cuda.synchronize()
            assert torch.allclose(y, ref), name
            cells.append(f"{name}: {median_ms(lambda: kernel(1.5, 1.2, a, b, x, y)):.4f}")
        cells.append(f"torch.compile: {median_ms(lambda: compiled(a, b, x)):.4f}")
        print(f"gesummv f64 {n} x {n} (threads / largest team, ms): " + ", ".join(cells), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernel", choices=["softmax", "gesummv"])
    parser.add_argument("--shapes", default=SOFTMAX_SHAPES)
    parser.add_argument("--sizes", default="2048,4096,8192,1000,300")
    options = parser.parse_args()
    if torch is None:
        print("this sweep needs PyTorch (its tensors, CUDA events and torch.compile)")
        return
    if not plait.cuda_available():
        print(f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")
        return
    os.environ["PLAIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="plait-block-sweep-")
    if options.kernel == "softmax":
        softmax(options.shapes)
    else:
        gesummv(options.sizes)


if __name__ == "__main__":
    main()
