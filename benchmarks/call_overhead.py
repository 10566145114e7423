"""Call overhead of a cached kernel: three array arguments, an empty body,
against an empty Python function with the same arguments.

    python benchmarks/call_overhead.py [--calls N]
"""

import argparse
import timeit

import numpy as np

import plait


def noop3(a, b, c):
    pass


noop3_jit = plait.jit(noop3)


def best_per_call(fn, args, calls, repeats=7):
    """The best of `repeats` runs, in seconds per call."""
    timer = timeit.Timer(lambda: fn(*args))
    return min(timer.repeat(repeat=repeats, number=calls)) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000)
    options = parser.parse_args()

    args = (np.zeros(1000), np.zeros(1000), np.zeros(1000))
    noop3_jit(*args)  # compiles (or loads from the disk cache)
    python = best_per_call(noop3, args, options.calls)
    kernel = best_per_call(noop3_jit, args, options.calls)
    print(f"empty Python function:     {python * 1e9:8.0f} ns/call")
    print(f"cached plait kernel:       {kernel * 1e9:8.0f} ns/call")
    print(f"overhead over Python call: {(kernel - python) * 1e9:8.0f} ns/call")


if __name__ == "__main__":
    main()
