"""How libgomp's wait policy affects short parallel kernels.

Each setting runs in its own process (libgomp reads its environment once, when
the first kernel library loads it). For each, the time per call of a small
parallel kernel is measured back to back, and with some NumPy work in
between calls (where spinning worker threads compete with the caller).

    python benchmarks/omp_overhead.py [--size N] [--calls N]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

SETTINGS = {
    # libgomp's own default spin count, set explicitly because `import plait`
    # otherwise lowers it.
    "libgomp default (GOMP_SPINCOUNT=300000)": {"GOMP_SPINCOUNT": "300000"},
    "plait default (GOMP_SPINCOUNT=10000)": {},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "OMP_WAIT_POLICY=ACTIVE": {"OMP_WAIT_POLICY": "ACTIVE"},
}

WORKER = textwrap.dedent('''
    import json, sys, time
    import numpy as np
    import plait

    @plait.jit
    def scale(x, out):
        #pragma parallel for
        for i in range(x.shape[0]):
            out[i] = x[i] * 2.0

    size, calls = int(sys.argv[1]), int(sys.argv[2])
    x = np.random.default_rng(0).random(size)
    out = np.empty_like(x)
    other = np.random.default_rng(1).random(20_000)
    scale(x, out)

    def best(fn, repeats=5):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times) / calls

    def back_to_back():
        for _ in range(calls):
            scale(x, out)

    def interleaved():
        for _ in range(calls):
            scale(x, out)
            np.sort(other)

    def numpy_only():
        for _ in range(calls):
            np.sort(other)

    print(json.dumps({"threads": scale.num_threads, "back_to_back": best(back_to_back),
                      "interleaved": best(interleaved) - best(numpy_only)}))
''')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()

    base_env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    print(f"kernel: out[i] = 2 * x[i] over {options.size} elements, parallel for; "
          f"{options.calls} calls per measurement\n")
    print(f"{'setting':42s} {'threads':>7s} {'back to back':>14s} {'between NumPy work':>19s}")
    # plait compiles from source files, so the worker is one.
    with tempfile.TemporaryDirectory() as directory:
        worker = os.path.join(directory, "omp_worker.py")
        with open(worker, "w") as f:
            f.write(WORKER)
        for name, extra in SETTINGS.items():
            env = dict(base_env, **extra)
            result = subprocess.run([sys.executable, worker, str(options.size), str(options.calls)], env=env,
                                    capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit(f"{name}: the worker failed:\n{result.stderr}")
            row = json.loads(result.stdout.strip().splitlines()[-1])
            print(f"{name:42s} {row['threads']:7d} {row['back_to_back'] * 1e6:11.1f} us "
                  f"{row['interleaved'] * 1e6:16.1f} us")

if __name__ == "__main__":
    main()
