"""Times Plait's CUDA kernels alone on NPBench presets, for before/after
comparisons of a compiler change where NumPy's reference would take minutes
(preset paper). It does not validate: the suite's numbers, validated against
NumPy, come from `python -m plait.bench npbench`.

    python3 benchmarks/npbench_plait_times.py paper jacobi_2d,heat_3d

Each kernel: inputs from the module's `initialize(preset)`, copied to the GPU
as PyTorch tensors before each call (not timed); the call plus a device
synchronisation timed with perf_counter; the first call (compile) apart, then
the median and minimum of 5 runs.
"""
import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import plait

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    preset, names = sys.argv[1], sys.argv[2].split(",")
    for name in names:
        module = importlib.import_module("npbench." + name)
        inputs = module.initialize(preset)
        kernel = plait.jit(target="cuda")(module.kernel_plait.py_func)
        times = []
        for _ in range(6):
            args = [torch.from_numpy(np.ascontiguousarray(inputs[p])).cuda() if isinstance(inputs[p], np.ndarray)
                    else inputs[p] for p in module.PARAMETERS]
            torch.cuda.synchronize()
            start = time.perf_counter()
            kernel(*args)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        print(f"{name} {preset}: median {statistics.median(times[1:]) * 1e3:.3f} ms  min {min(times[1:]) * 1e3:.3f} ms"
              f"  (first call {times[0]:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
