"""Host time per call of a cached CUDA kernel: three one-element GPU arrays,
one launch, no synchronisation between calls (the GPU work is a few
microseconds, so the host is what is measured), against the same update
written with PyTorch and CuPy.

    python benchmarks/cuda_call_overhead.py [--calls N]

Rows: Plait with PyTorch tensors, CuPy arrays and plait.DeviceArray
arguments; then `torch.add(a, b, out=c)` and `cupy.add(a, b, out=c)`; then the
parts of a Plait call with PyTorch tensors (argument classification, the
C++ call) so that a change can be traced to its part. Peers that are not
installed are skipped.
"""

import argparse
import timeit

import numpy as np

import plait


def vadd(a, b, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


def per_call(fn, calls, synchronize, repeats=7):
    """The best of `repeats` batches, in microseconds per call; each batch
    ends with a synchronisation so that queued work is paid for."""
    def batch():
        for _ in range(calls):
            fn()
        synchronize()

    batch()
    return min(timeit.repeat(batch, repeat=repeats, number=1)) / calls * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20_000)
    options = parser.parse_args()
    kernel = plait.jit(vadd, target="cuda")
    rows = []

    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        a, b, c = (torch.rand(1, device="cuda") for _ in range(3))
        sync = torch.cuda.synchronize
        rows.append(("plait, torch tensors", per_call(lambda: kernel(a, b, c), options.calls, sync)))
        rows.append(("torch.add(out=)", per_call(lambda: torch.add(a, b, out=c), options.calls, sync)))
        args = (a, b, c)
        rows.append(("  plait: classify arguments", per_call(lambda: kernel._cuda_call_plan(*args),
                                                             options.calls, sync)))
        plan = kernel._cuda_call_plan(*args)
        compiled = kernel._kernel(plan.signature)
        rows.append(("  plait: C++ call (launch)", per_call(lambda: compiled.call_cuda(plan.values, plan.stream),
                                                            options.calls, sync)))
        rows.append(("  torch.cuda.current_stream()", per_call(lambda: torch.cuda.current_stream().cuda_stream,
                                                               options.calls, sync)))
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        a, b, c = (cupy.random.rand(1) for _ in range(3))
        sync = cupy.cuda.Device().synchronize
        rows.append(("plait, CuPy arrays", per_call(lambda: kernel(a, b, c), options.calls, sync)))
        rows.append(("cupy.add(out=)", per_call(lambda: cupy.add(a, b, out=c), options.calls, sync)))
    a, b, c = (plait.to_device(np.random.rand(1)) for _ in range(3))
    rows.append(("plait, DeviceArray", per_call(lambda: kernel(a, b, c), options.calls,
                                                lambda: plait._core.synchronize(0))))
    for name, us in rows:
        print(f"{name:32s} {us:8.2f} us/call")


if __name__ == "__main__":
    main()
