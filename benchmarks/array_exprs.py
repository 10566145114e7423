"""Array-expression kernels: Plait against NumPy and Numba (parallel=True).

    .venv/bin/python benchmarks/array_exprs.py            # full sizes, median of 10 runs
    .venv/bin/python benchmarks/array_exprs.py --quick    # small sizes, 3 runs (smoke test)
    PLAIT_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/array_exprs.py

Threads: each library uses all cores by default; the variables above (set
before the script starts) pin all three to one thread. On a machine shared
with other jobs (the load average printed first), parallel regions whose
threads are descheduled wait at every barrier, which penalises the kernels
that open many short parallel regions (time loops, the k loop of
floyd_warshall, the i loop of covariance).

Kernels: gesummv, softmax (rows of 4096 float32), floyd_warshall (N=1000,
int32), jacobi_2d and heat_3d at npbench's M preset, covariance (M preset)
and row normalisation `A / A.sum(axis=1, keepdims=True)`. The Plait kernels
are the NumPy code (gesummv with the issue's sliced-index pragma); the Numba
ones are what a NumPy user writes for `numba.njit(parallel=True)`: the NumPy
code where Numba compiles it, `prange` over rows where it does not
(keepdims=, axis= on max).

Following npbench: the first call of each implementation compiles and is
validated against NumPy (allclose rtol=1e-5, atol=1e-8, or a relative L2
error below 1e-5); every timed run gets fresh copies of the input arrays
(untimed); the median of the runs is reported.

The script also measures the triad `a = b + s * c` (NumPy in two passes, a
Plait kernel in one) and, for the memory-bound kernels, reports how close
each implementation comes to the bandwidth floor: the bytes the kernel must
move (each input read once, each output written once) over the best triad
bandwidth.
"""

import argparse
import math
import os
import statistics
import sys
import time
import warnings

import numpy as np

import plait

try:
    import numba

    # '@' on the column slices of covariance is what the NumPy code does.
    warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
except ImportError:  # the table then has no Numba column
    numba = None


# ---------------------------------------------------------------- NumPy kernels (the reference)


def gesummv_np(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def softmax_np(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def floyd_warshall_np(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


def jacobi_2d_np(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def heat_3d_np(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                               + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
                               + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
                               + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
                               + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
                               + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
                               + B[1:-1, 1:-1, 1:-1])


def covariance_np(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


def row_normalise_np(A):
    return A / A.sum(axis=1, keepdims=True)


def triad_np(a, b, c, s):
    np.multiply(c, s, out=a)
    np.add(a, b, out=a)


# ---------------------------------------------------------------- Plait kernels


def gesummv_plait(alpha, beta, A, B, x):
    M, N = A.shape
    y = np.empty(M, dtype=A.dtype)
    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = alpha * np.sum(A[:M, :N] * x[None, :N], axis=1) + beta * np.sum(B[:M, :N] * x[None, :N], axis=1)
    return y


def triad_plait(a, b, c, s):
    a[:] = b + s * c


PLAIT = {
    # The pragma names no vector dimension; auto_simd=True (the
    # documented option) vectorises the innermost one, the N reduction.
    "gesummv": plait.jit(gesummv_plait, auto_simd=True),
    "softmax": plait.jit(softmax_np),
    "floyd_warshall": plait.jit(floyd_warshall_np),
    "jacobi_2d": plait.jit(jacobi_2d_np),
    "heat_3d": plait.jit(heat_3d_np),
    "covariance": plait.jit(covariance_np),
    "row_normalise": plait.jit(row_normalise_np),
}
triad_kernel = plait.jit(triad_plait)


# ---------------------------------------------------------------- Numba kernels

NUMBA = {}
if numba is not None:
    from numba import prange

    @numba.njit(parallel=True)
    def gesummv_nb(alpha, beta, A, B, x):
        return alpha * A @ x + beta * B @ x

    @numba.njit(parallel=True)
    def softmax_nb(x):
        # Numba's np.max takes no axis= and np.sum no keepdims=: one row per iteration.
        rows = x.reshape(-1, x.shape[-1])
        out = np.empty_like(rows)
        for i in prange(rows.shape[0]):
            e = np.exp(rows[i] - np.max(rows[i]))
            out[i] = e / np.sum(e)
        return out.reshape(x.shape)

    @numba.njit(parallel=True)
    def floyd_warshall_nb(path):
        for k in range(path.shape[0]):
            for i in prange(path.shape[0]):
                path[i, :] = np.minimum(path[i, :], path[i, k] + path[k, :])

    @numba.njit(parallel=True)
    def jacobi_2d_nb(TSTEPS, A, B):
        for t in range(1, TSTEPS):
            B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
            A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])

    @numba.njit(parallel=True)
    def heat_3d_nb(TSTEPS, A, B):
        for t in range(1, TSTEPS):
            B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                                   + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
                                   + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
                                   + A[1:-1, 1:-1, 1:-1])
            A[1:-1, 1:-1, 1:-1] = (0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
                                   + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
                                   + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
                                   + B[1:-1, 1:-1, 1:-1])

    @numba.njit(parallel=True)
    def covariance_nb(M, float_n, data):
        # Numba's np.mean takes no axis=, and its parallel array expressions
        # do not broadcast `data -= mean`: one column per iteration.
        mean = np.sum(data, axis=0) / float_n
        for j in prange(M):
            data[:, j] -= mean[j]
        cov = np.zeros((M, M), dtype=data.dtype)
        # prange here would call OpenBLAS (threaded itself) from Numba's
        # OpenMP threads, which OpenBLAS refuses with a warning per call.
        for i in range(M):
            row = data[:, i] @ data[:, i:M] / (float_n - 1.0)
            cov[i, i:M] = row
            cov[i:M, i] = row
        return cov

    @numba.njit(parallel=True)
    def row_normalise_nb(A):
        # Numba's sum takes no keepdims=, and its parallel array expressions
        # do not broadcast (M, N) / (M, 1): one row per iteration.
        out = np.empty_like(A)
        for i in prange(A.shape[0]):
            out[i, :] = A[i, :] / np.sum(A[i, :])
        return out

    NUMBA = {
        "gesummv": gesummv_nb,
        "softmax": softmax_nb,
        "floyd_warshall": floyd_warshall_nb,
        "jacobi_2d": jacobi_2d_nb,
        "heat_3d": heat_3d_nb,
        "covariance": covariance_nb,
        "row_normalise": row_normalise_nb,
    }


# ---------------------------------------------------------------- inputs (npbench's initialisations)


def gesummv_inputs(N):
    i, j = np.meshgrid(np.arange(N, dtype=np.float64), np.arange(N, dtype=np.float64), indexing="ij")
    A = ((i * j + 1) % N) / N
    B = ((i * j + 2) % N) / N
    x = np.arange(N, dtype=np.float64) / N
    return (1.5, 1.2, A, B, x)


def softmax_inputs(rows, width):
    return (np.random.default_rng(42).random((rows, width), dtype=np.float32),)


def floyd_warshall_inputs(N):
    i, j = np.meshgrid(np.arange(N, dtype=np.int32), np.arange(N, dtype=np.int32), indexing="ij")
    path = ((i * j) % 7 + 1).astype(np.int32)
    path[((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0)] = 999
    return (path,)


def jacobi_2d_inputs(TSTEPS, N):
    i, j = np.meshgrid(np.arange(N, dtype=np.float64), np.arange(N, dtype=np.float64), indexing="ij")
    return (TSTEPS, i * (j + 2) / N, i * (j + 3) / N)


def heat_3d_inputs(TSTEPS, N):
    # npbench's field is linear, a fixed point of the stencil; a non-linear
    # term makes the validation mean something. The work is the same.
    i, j, k = np.meshgrid(*(np.arange(N, dtype=np.float64),) * 3, indexing="ij")
    A = (i + j + (N - k)) * 10 / N + np.sin(i * j * k / N)
    return (TSTEPS, A, A.copy())


def covariance_inputs(M, N):
    i, j = np.meshgrid(np.arange(N, dtype=np.float64), np.arange(M, dtype=np.float64), indexing="ij")
    return (M, np.float64(N), i * j / M)


def row_normalise_inputs(M, N):
    return (np.random.default_rng(42).random((M, N)) + 0.5,)


def sizes(quick):
    """name -> (inputs, size text, outputs: 'ret' and/or argument positions,
    bytes the kernel must move, or None when it is not memory-bound)."""
    if quick:
        g, sm, fw, jac, heat, cov, rn = 400, (64, 4096), 120, (10, 60), (6, 12), (80, 100), (300, 400)
    else:
        g, sm, fw, jac, heat, cov, rn = 4000, (2048, 4096), 1000, (80, 350), (50, 40), (1400, 1800), (4000, 4000)
    return {
        "gesummv": (gesummv_inputs(g), f"N={g}", ["ret"], 2 * g * g * 8),
        "softmax": (softmax_inputs(*sm), f"{sm[0]}x{sm[1]} f32", ["ret"], 2 * sm[0] * sm[1] * 4),
        "floyd_warshall": (floyd_warshall_inputs(fw), f"N={fw} i32", [0], None),
        "jacobi_2d": (jacobi_2d_inputs(*jac), f"T={jac[0]} N={jac[1]}", [1, 2],
                      (jac[0] - 1) * 2 * (jac[1] ** 2 + (jac[1] - 2) ** 2) * 8),
        "heat_3d": (heat_3d_inputs(*heat), f"T={heat[0]} N={heat[1]}", [1, 2], None),
        "covariance": (covariance_inputs(*cov), f"M={cov[0]} N={cov[1]}", ["ret"], None),
        "row_normalise": (row_normalise_inputs(*rn), f"{rn[0]}x{rn[1]}", ["ret"], 2 * rn[0] * rn[1] * 8),
    }


NUMPY = {
    "gesummv": gesummv_np,
    "softmax": softmax_np,
    "floyd_warshall": floyd_warshall_np,
    "jacobi_2d": jacobi_2d_np,
    "heat_3d": heat_3d_np,
    "covariance": covariance_np,
    "row_normalise": row_normalise_np,
}


# ---------------------------------------------------------------- running


def fresh(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def outputs_of(fn, args, which):
    """Calls fn on fresh copies; returns the outputs named by `which`."""
    call_args = fresh(args)
    ret = fn(*call_args)
    return [np.asarray(ret) if w == "ret" else call_args[w] for w in which]


def validated(reference, got):
    for ref, val in zip(reference, got):
        if ref.shape != val.shape:
            return False
        if np.allclose(ref, val, rtol=1e-5, atol=1e-8):
            continue
        norm = np.linalg.norm(ref)
        if norm == 0 or np.linalg.norm(ref - val) / norm >= 1e-5:
            return False
    return True


def median_time(fn, args, repeat):
    times = []
    for _ in range(repeat):
        call_args = fresh(args)
        start = time.perf_counter()
        fn(*call_args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def triad_bandwidth(n, repeat):
    """Best triad bandwidth (bytes/s, 24 bytes per element) of NumPy (two
    passes) and of a Plait kernel (one pass)."""
    b = np.random.default_rng(1).random(n)
    c = np.random.default_rng(2).random(n)
    a = np.empty(n)
    results = {}
    for name, fn in (("numpy", triad_np), ("plait", triad_kernel)):
        fn(a, b, c, 3.0)  # compile, touch the pages
        assert np.allclose(a, b + 3.0 * c)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn(a, b, c, 3.0)
            times.append(time.perf_counter() - start)
        results[name] = 24 * n / min(times)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and 3 runs: a smoke test")
    parser.add_argument("--repeat", type=int, help="timed runs per implementation (default 10, 3 with --quick)")
    parser.add_argument("--only", nargs="*", help="kernels to run (default: all)")
    options = parser.parse_args()
    repeat = options.repeat or (3 if options.quick else 10)

    print(f"plait {plait.__version__}, numpy {np.__version__}, numba {numba.__version__ if numba else 'absent'}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print("threads: " + ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in
                                  ("PLAIT_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")))
    bandwidth = triad_bandwidth(2 ** 22 if options.quick else 2 ** 25, repeat)
    best_bw = max(bandwidth.values())
    print(f"triad a = b + s*c, {2 ** 22 if options.quick else 2 ** 25} float64: "
          + ", ".join(f"{k} {v / 1e9:.1f} GB/s" for k, v in bandwidth.items()))
    print()

    rows = []
    for name, (args, size, which, floor_bytes) in sizes(options.quick).items():
        if options.only and name not in options.only:
            continue
        reference = outputs_of(NUMPY[name], args, which)
        row = {"name": name, "size": size, "floor": floor_bytes}
        for impl, table in (("numpy", NUMPY), ("plait", PLAIT), ("numba", NUMBA)):
            fn = table.get(name)
            if fn is None:
                continue
            try:
                start = time.perf_counter()
                got = outputs_of(fn, args, which)
                row[impl + "_first"] = time.perf_counter() - start
            except Exception as error:  # a failing implementation is reported, not fatal
                print(f"{name}: {impl} failed: {type(error).__name__}: {str(error).splitlines()[-1]}",
                      file=sys.stderr)
                continue
            if not validated(reference, got):
                print(f"{name}: {impl} does NOT validate against NumPy", file=sys.stderr)
                row[impl + "_invalid"] = True
            row[impl] = median_time(fn, args, repeat)
        rows.append(row)
        print(f"  {name:15s} done", file=sys.stderr)

    def ms(row, impl):
        if impl not in row:
            return "-"
        return f"{row[impl] * 1e3:.2f}" + (" (!)" if row.get(impl + "_invalid") else "")

    def ratio(row, a, b):
        return row[a] / row[b] if a in row and b in row else None

    header = ("kernel", "size", "NumPy ms", "Plait ms", "Numba ms", "NumPy/Plait", "Numba/Plait")
    lines = [header]
    for row in rows:
        r_np, r_nb = ratio(row, "numpy", "plait"), ratio(row, "numba", "plait")
        lines.append((row["name"], row["size"], ms(row, "numpy"), ms(row, "plait"), ms(row, "numba"),
                      f"{r_np:.2f}x" if r_np else "-", f"{r_nb:.2f}x" if r_nb else "-"))

    def geomean(values):
        values = [v for v in values if v]
        return math.exp(sum(map(math.log, values)) / len(values)) if values else None

    g_np = geomean(ratio(r, "numpy", "plait") for r in rows)
    g_nb = geomean(ratio(r, "numba", "plait") for r in rows)
    lines.append(("geometric mean", "", "", "", "", f"{g_np:.2f}x" if g_np else "-", f"{g_nb:.2f}x" if g_nb else "-"))
    widths = [max(len(str(line[c])) for line in lines) for c in range(len(header))]
    for k, line in enumerate(lines):
        print("| " + " | ".join(str(v).ljust(w) for v, w in zip(line, widths)) + " |")
        if k == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("(ratios above 1: Plait is faster; (!) marks a result that does not validate)")

    print()
    print(f"bandwidth floor (bytes each kernel must move / best triad {best_bw / 1e9:.1f} GB/s):")
    header = ("kernel", "MB moved", "floor ms", "Plait", "NumPy", "Numba")
    lines = [header]
    for row in rows:
        if row["floor"] is None:
            continue
        floor_s = row["floor"] / best_bw
        lines.append((row["name"], f"{row['floor'] / 1e6:.0f}", f"{floor_s * 1e3:.2f}",
                      *(f"{floor_s / row[impl]:.0%}" if impl in row else "-" for impl in ("plait", "numpy", "numba"))))
    widths = [max(len(str(line[c])) for line in lines) for c in range(len(header))]
    for k, line in enumerate(lines):
        print("| " + " | ".join(str(v).ljust(w) for v, w in zip(line, widths)) + " |")
        if k == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("(fraction of the floor reached: floor time / measured time; jacobi_2d's arrays at the M preset fit in "
          "the caches, so it can exceed 100%)")


if __name__ == "__main__":
    main()
