"""The autotuner on the loop softmax of benchmarks/gpu_kernels.py: for each
shape, the kernel with the default launch configuration and with
plait.jit(autotune=True) (threads 128/256/512 x row_groups 2/4) and with the
default configuration as the only candidate (the tuned call path), each timed
as the median of --repeat calls on GPU arrays (plait.DeviceArray, so no host
copies), synchronising after each; then the tuner's report (every
candidate's median time in its tuning run, and the choice).

    python benchmarks/cuda_tuning.py [--repeat N] [--shapes 8192x8192,4096x1024,2048x2048]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import plait
from plait import _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_kernels import plait_softmax  # noqa: E402


def median_ms(kernel, args, repeat):
    kernel(*args)  # compile (and tune) outside the timing
    _core.synchronize(0)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        kernel(*args)
        _core.synchronize(0)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--shapes", default="8192x8192,4096x1024,2048x2048")
    options = parser.parse_args()
    if not plait.cuda_available():
        print(f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")
        return
    # A fresh cache: every shape is tuned now, not read from an earlier run.
    os.environ["PLAIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="plait-tuning-bench-")
    print(f"GPU: {_core.cuda_device()['name']}")
    default = plait.jit(plait_softmax, target="cuda")
    tuned = plait.jit(plait_softmax, target="cuda", autotune=True)
    # The default configuration as the only candidate: the tuned call path
    # with the default kernel, so that the path's cost shows apart.
    fixed = plait.jit(plait_softmax, target="cuda", tune={"threads": [256], "row_groups": [4]})
    rng = np.random.default_rng(0)
    for text in options.shapes.split(","):
        rows, cols = (int(n) for n in text.split("x"))
        x = plait.to_device(rng.standard_normal((rows, cols), dtype=np.float32))
        out = plait.to_device(np.zeros((rows, cols), dtype=np.float32))
        start = time.perf_counter()
        tuned(x, out)
        _core.synchronize(0)
        tuning_s = time.perf_counter() - start
        got = plait.to_host(out)
        default_ms = median_ms(default, (x, out), options.repeat)
        np.testing.assert_allclose(got, plait.to_host(out), rtol=1e-5)
        tuned_ms = median_ms(tuned, (x, out), options.repeat)
        fixed_ms = median_ms(fixed, (x, out), options.repeat)
        print(f"softmax f32 {rows}x{cols}: default (threads 256, row groups 4) {default_ms:.4f} ms, "
              f"autotuned {tuned_ms:.4f} ms, default as the only candidate {fixed_ms:.4f} ms; first call "
              f"(compiles and tuning run) {tuning_s:.2f} s")
    print(tuned.explain().split("autotuning:")[1])


if __name__ == "__main__":
    main()
