"""Loop kernels timed with NumPy, Numba and Plait in one run.

Each kernel is written three ways with the same algorithm: NumPy (vectorised,
as a NumPy user writes it), Numba (@njit(parallel=True) with prange) and Plait
(@plait.jit with #pragma comments, the same loops as the Numba version). Every
implementation is checked against NumPy before it is timed.

    python benchmarks/loops.py                 # full sizes
    python benchmarks/loops.py --quick         # small sizes, a smoke test
    python benchmarks/loops.py --kernels spmv,stencil --repeat 20
    python benchmarks/loops.py --show-source spmv   # the generated C++

See benchmarks/README.md for what each number means.
"""

import argparse
import math
import os
import sys
from dataclasses import dataclass

import numpy as np

import plait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

try:
    import numba
except ImportError:
    numba = None


# --- vector add ----------------------------------------------------------------


def vadd_numpy(a, b, out):
    np.add(a, b, out=out)


def vadd_numba(a, b, out):
    for i in numba.prange(a.shape[0]):
        out[i] = a[i] + b[i]


@plait.jit
def vadd_plait(a, b, out):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]


# --- saxpy: y = alpha*x + y --------------------------------------------------------


def saxpy_numpy(alpha, x, y):
    y += alpha * x


def saxpy_numba(alpha, x, y):
    for i in numba.prange(x.shape[0]):
        y[i] = alpha * x[i] + y[i]


@plait.jit
def saxpy_plait(alpha, x, y):
    #pragma parallel for simd
    for i in range(x.shape[0]):
        y[i] = alpha * x[i] + y[i]


# --- row-wise sum of a matrix ------------------------------------------------------


def row_sum_numpy(A):
    return A.sum(axis=1)


def row_sum_numba(A):
    n, m = A.shape
    out = np.empty(n)
    for i in numba.prange(n):
        acc = 0.0
        for j in range(m):
            acc += A[i, j]
        out[i] = acc
    return out


@plait.jit
def row_sum_plait(A):
    n, m = A.shape
    out = np.empty(n)
    #pragma parallel for
    for i in range(n):
        acc = 0.0
        #pragma simd
        for j in range(m):
            acc += A[i, j]
        out[i] = acc
    return out


# --- CSR sparse matrix-vector product ----------------------------------------------


def spmv_numpy(indptr, indices, data, x):
    # One product per non-zero, then a segmented sum per row. reduceat needs
    # every start inside its input, so the products get a trailing zero (the
    # start of trailing empty rows) and empty rows are zeroed afterwards.
    nnz = data.shape[0]
    products = np.empty(nnz + 1, dtype=data.dtype)
    np.multiply(data, x[indices], out=products[:nnz])
    products[nnz] = 0
    starts = indptr[:-1]
    y = np.add.reduceat(products, starts)
    y[starts == indptr[1:]] = 0
    return y


def spmv_numba(indptr, indices, data, x):
    n = indptr.shape[0] - 1
    y = np.empty(n, dtype=data.dtype)
    for i in numba.prange(n):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        y[i] = acc
    return y


@plait.jit
def spmv_plait(indptr, indices, data, x):
    n = indptr.shape[0] - 1
    y = np.empty(n, dtype=data.dtype)
    #pragma parallel for
    for i in range(n):
        acc = 0.0
        #pragma simd
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        y[i] = acc
    return y


# --- histogram ------------------------------------------------------------------------
# Plait increments shared bins with atomics. Numba has no atomics on the CPU,
# so its parallel histogram gives each chunk of the input its own row of bins
# and sums the rows (the usual Numba idiom); histogram_private runs that same
# algorithm in Plait too. (The bin loop's variables are named apart from the
# first loop's: Plait reports reusing `b` there as a race.)


def histogram_numpy(values, nbins, nchunks):
    bins = np.minimum((values * nbins).astype(np.int64), nbins - 1)
    return np.bincount(bins, minlength=nbins)


@plait.jit
def histogram_atomic_plait(values, nbins, nchunks):
    hist = np.zeros(nbins, dtype=np.int64)
    #pragma parallel for
    for i in range(values.shape[0]):
        b = min(int(values[i] * nbins), nbins - 1)
        #pragma atomic
        hist[b] += 1
    return hist


def histogram_private_numba(values, nbins, nchunks):
    n = values.shape[0]
    chunk = (n + nchunks - 1) // nchunks
    local = np.zeros((nchunks, nbins), dtype=np.int64)
    for t in numba.prange(nchunks):
        stop = min((t + 1) * chunk, n)
        for i in range(t * chunk, stop):
            b = min(int(values[i] * nbins), nbins - 1)
            local[t, b] += 1
    hist = np.zeros(nbins, dtype=np.int64)
    for k in numba.prange(nbins):
        total = 0
        for c in range(nchunks):
            total += local[c, k]
        hist[k] = total
    return hist


@plait.jit
def histogram_private_plait(values, nbins, nchunks):
    n = values.shape[0]
    chunk = (n + nchunks - 1) // nchunks
    local = np.zeros((nchunks, nbins), dtype=np.int64)
    #pragma parallel for
    for t in range(nchunks):
        stop = min((t + 1) * chunk, n)
        for i in range(t * chunk, stop):
            b = min(int(values[i] * nbins), nbins - 1)
            local[t, b] += 1
    hist = np.zeros(nbins, dtype=np.int64)
    #pragma parallel for
    for k in range(nbins):
        total = 0
        for c in range(nchunks):
            total += local[c, k]
        hist[k] = total
    return hist


# --- 2-D five-point stencil, ping-ponging two grids ------------------------------------
# Each call runs `sweeps` Jacobi sweeps (an even number): u -> v, then v -> u.
# The boundary rows and columns of both grids stay as they are. The second
# sweep's loop variables are named apart from the first's: Plait reports
# reusing them as a race.


def stencil_numpy(u, v, sweeps):
    for _ in range(sweeps // 2):
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u[1:-1, 1:-1] = 0.25 * (v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:])


def stencil_numba(u, v, sweeps):
    n, m = u.shape
    for _ in range(sweeps // 2):
        for i in numba.prange(1, n - 1):
            for j in range(1, m - 1):
                v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
        for k in numba.prange(1, n - 1):
            for l in range(1, m - 1):
                u[k, l] = 0.25 * (v[k - 1, l] + v[k + 1, l] + v[k, l - 1] + v[k, l + 1])


@plait.jit
def stencil_plait(u, v, sweeps):
    n, m = u.shape
    for s in range(sweeps // 2):
        #pragma parallel for
        for i in range(1, n - 1):
            #pragma simd
            for j in range(1, m - 1):
                v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
        #pragma parallel for
        for k in range(1, n - 1):
            #pragma simd
            for l in range(1, m - 1):
                u[k, l] = 0.25 * (v[k - 1, l] + v[k + 1, l] + v[k, l - 1] + v[k, l + 1])


# --- memory roof and call overhead kernels -------------------------------------------------


def triad_numba(a, b, c, s):
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


@plait.jit
def triad_plait(a, b, c, s):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


def touch_numba(a, b, c):
    c[0] = a[0] + b[0]


@plait.jit
def touch_plait(a, b, c):
    c[0] = a[0] + b[0]


def touch_parallel_numba(a, b, c):
    for i in numba.prange(c.shape[0]):
        c[i] = a[i] + b[i]


@plait.jit
def touch_parallel_plait(a, b, c):
    #pragma parallel for
    for i in range(c.shape[0]):
        c[i] = a[i] + b[i]


def touch_team_numba(a, b, c):
    for i in numba.prange(c.shape[0]):
        for j in range(1):
            c[i] = a[i] + b[i] + j


@plait.jit
def touch_team_plait(a, b, c):
    # The inner loop makes Plait's cost model start a team even for 3
    # iterations (a plain body that small runs serially).
    #pragma parallel for
    for i in range(c.shape[0]):
        for j in range(1):
            c[i] = a[i] + b[i] + j


# --- inputs -------------------------------------------------------------------------------


def random_csr(rng, n, nnz):
    """A random n x n CSR matrix with nnz non-zeros: rows drawn uniformly
    (so row lengths vary and some rows may be empty), column indices random
    and sorted within each row. int64 indptr, int32 indices."""
    rows = rng.integers(0, n, size=nnz, dtype=np.int64)
    cols = rng.integers(0, n, size=nnz, dtype=np.int64)
    keys = rows * n + cols
    keys.sort()
    rows = keys // n
    indices = (keys - rows * n).astype(np.int32)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    data = rng.random(nnz)
    return indptr, indices, data


def stencil_grids(rng, n):
    u = rng.random((n, n))
    return u, u.copy()


@dataclass
class Kernel:
    name: str
    size: str
    make_args: object  # rng -> tuple of arguments
    numpy: object
    numba: object  # the undecorated Numba function (jitted by numba_kernels)
    plait: object
    bytes_moved: object  # args -> the fewest bytes a one-pass kernel moves
    exact: bool = False  # integer results compared with array_equal
    extra: bool = False  # not one of the six kernels the issue names


def kernels(quick):
    """The benchmark kernels at full size, or small ones with quick=True."""
    n_vec = 100_000 if quick else 20_000_000
    n_mat = 256 if quick else 4096
    n_csr, nnz = (10_000, 100_000) if quick else (1_000_000, 10_000_000)
    n_hist, nbins = (100_000 if quick else 10_000_000), 1024
    n_grid, sweeps = (200 if quick else 4000), 10
    nchunks = common.usable_cpus()
    return [
        Kernel("vector_add", f"n={n_vec:.0e}",
               lambda rng: (rng.random(n_vec), rng.random(n_vec), np.empty(n_vec)),
               vadd_numpy, vadd_numba, vadd_plait, lambda a: 3 * a[0].nbytes),
        Kernel("saxpy", f"n={n_vec:.0e}",
               lambda rng: (2.5, rng.random(n_vec), rng.random(n_vec)),
               saxpy_numpy, saxpy_numba, saxpy_plait, lambda a: 3 * a[1].nbytes),
        Kernel("row_sum", f"{n_mat}x{n_mat}",
               lambda rng: (rng.random((n_mat, n_mat)),),
               row_sum_numpy, row_sum_numba, row_sum_plait, lambda a: a[0].nbytes),
        Kernel("spmv", f"{n_csr:.0e}^2, nnz={nnz:.0e}",
               lambda rng: random_csr(rng, n_csr, nnz) + (rng.random(n_csr),),
               spmv_numpy, spmv_numba, spmv_plait,
               lambda a: a[0].nbytes + a[1].nbytes + a[2].nbytes + 2 * a[3].nbytes),
        Kernel("histogram_atomic", f"n={n_hist:.0e}, {nbins} bins",
               lambda rng: (rng.random(n_hist), nbins, nchunks),
               histogram_numpy, histogram_private_numba, histogram_atomic_plait,
               lambda a: a[0].nbytes, exact=True),
        Kernel("histogram_private", f"n={n_hist:.0e}, {nbins} bins",
               lambda rng: (rng.random(n_hist), nbins, nchunks),
               histogram_numpy, histogram_private_numba, histogram_private_plait,
               lambda a: a[0].nbytes, exact=True, extra=True),
        Kernel("stencil", f"{n_grid}x{n_grid}, {sweeps} sweeps",
               lambda rng: stencil_grids(rng, n_grid) + (sweeps,),
               stencil_numpy, stencil_numba, stencil_plait,
               lambda a: sweeps * 2 * a[0].nbytes),
    ]


def numba_jit(fn, fastmath):
    # Numba's on-disk cache does not key on fastmath, so only the default
    # variant is cached.
    return numba.njit(parallel=True, fastmath=fastmath, cache=not fastmath)(fn)


# --- checking ---------------------------------------------------------------------------------


def copy_args(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def result_of(args, returned):
    """What a call computed: its return value, else the arrays it wrote
    (the output arguments are the last array arguments by convention here)."""
    if returned is not None:
        return returned
    return [a for a in args if isinstance(a, np.ndarray)]


def same(expected, got, exact):
    if isinstance(expected, list):
        return len(expected) == len(got) and all(same(e, g, exact) for e, g in zip(expected, got))
    if exact:
        return np.array_equal(expected, got)
    return expected.shape == got.shape and np.allclose(got, expected, rtol=1e-10, atol=1e-12)


def check(kernel, impls, args):
    """Runs each implementation on its own copy of args and compares what it
    computed with NumPy's; returns the names that differ."""
    numpy_args = copy_args(args)
    expected = result_of(numpy_args, kernel.numpy(*numpy_args))
    wrong = []
    for name, fn in impls.items():
        mine = copy_args(args)
        if not same(expected, result_of(mine, fn(*mine)), kernel.exact):
            wrong.append(name)
    return wrong


# --- the report -------------------------------------------------------------------------------


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fmt(value, digits=2, suffix=""):
    return "n/a" if value is None else f"{value:.{digits}f}{suffix}"


def run_kernels(selected, repeat, use_numba, fastmath, roof_gbps):
    """Checks and times the selected kernels; prints the table, returns the
    CSV rows and the names of kernels that failed their check."""
    headers = ["kernel", "size", "NumPy ms", "Numba ms", "Plait ms", "Plait/Numba", "speedup vs NumPy",
               "Plait % of roof"]
    rows, csv_rows, failures, slow = [], [], [], []
    ratios, speedups = {}, {}  # kernel name -> value
    extras = {k.name for k in selected if k.extra}
    rng = np.random.default_rng(42)
    for kernel in selected:
        args = kernel.make_args(rng)
        impls = {"Plait": kernel.plait}
        if use_numba:
            impls["Numba"] = numba_jit(kernel.numba, fastmath)
        wrong = check(kernel, impls, args)
        if wrong:
            failures.extend(f"{kernel.name} ({name})" for name in wrong)
            print(f"{kernel.name}: {', '.join(wrong)} differ from NumPy; not timed", flush=True)
            continue
        calls = {name: (lambda fn=fn, args=args: fn(*args)) for name, fn in [("NumPy", kernel.numpy)] + list(impls.items())}
        timings = common.measure_interleaved(calls, repeat=repeat, warmup=1)
        numpy_ms = timings["NumPy"].median_ms
        plait_ms = timings["Plait"].median_ms
        numba_ms = timings["Numba"].median_ms if use_numba else None
        ratio = plait_ms / numba_ms if use_numba else None
        speedup = numpy_ms / plait_ms
        speedups[kernel.name] = speedup
        if ratio is not None:
            ratios[kernel.name] = ratio
        roof_ms = kernel.bytes_moved(args) / roof_gbps / 1e6 if roof_gbps else None
        rows.append([kernel.name, kernel.size, common.format_ms(timings["NumPy"]),
                     common.format_ms(timings["Numba"]) if use_numba else "n/a",
                     common.format_ms(timings["Plait"]), fmt(ratio), fmt(speedup, 2, "x"),
                     fmt(100 * roof_ms / plait_ms if roof_ms else None, 0, "%")])
        csv_row = [kernel.name, kernel.size, repeat]
        for name in ("NumPy", "Numba", "Plait"):
            if name in timings:
                low, high = timings[name].ci95_ms()
                csv_row += [f"{timings[name].median_ms:.6f}", f"{low:.6f}", f"{high:.6f}"]
            else:
                csv_row += ["", "", ""]
        csv_row += [fmt(ratio, 4) if ratio else "", f"{speedup:.4f}", fmt(roof_ms, 6) if roof_ms else ""]
        csv_rows.append(csv_row)
        if ratio is not None and ratio > 1.10:
            slow.append(kernel.name)
        print(f"  {kernel.name}: done", file=sys.stderr, flush=True)
        del args, calls, timings  # frees this kernel's arrays before the next one allocates its own
    if rows:
        rows.append(["geometric mean", "all rows", "", "", "", fmt(geomean(ratios.values())),
                     fmt(geomean(speedups.values()), 2, "x"), ""])
        if extras & set(speedups):
            rows.append(["geometric mean", "issue's kernels", "", "", "",
                         fmt(geomean(v for k, v in ratios.items() if k not in extras)),
                         fmt(geomean(v for k, v in speedups.items() if k not in extras), 2, "x"), ""])
    print()
    print("Times: median [bootstrap 95% interval of the median] of", repeat,
          "calls after one untimed warm-up call.")
    print(common.markdown_table(headers, rows))
    if slow:
        print(f"\nPlait is slower than Numba by more than 10% on: {', '.join(slow)} "
              "(see the generated C++ with --show-source NAME)")
    csv_headers = ["kernel", "size", "repeat", "numpy_ms", "numpy_lo", "numpy_hi", "numba_ms", "numba_lo",
                   "numba_hi", "plait_ms", "plait_lo", "plait_hi", "plait_over_numba", "speedup_vs_numpy",
                   "roof_ms"]
    return csv_headers, csv_rows, failures


def run_triad(quick, repeat, use_numba, fastmath):
    n = 1_000_000 if quick else 20_000_000
    extra = {"Plait": triad_plait}
    if use_numba:
        extra["Numba"] = numba_jit(triad_numba, fastmath)
    results = common.measure_triad(n, repeat, extra)
    print(f"\nMemory roof: STREAM-like triad a = b + s*c on {n:.0e} float64 "
          "(GB/s counting 3 arrays moved)")
    print(common.markdown_table(["implementation", "GB/s", "median ms"],
                                [[name, f"{gbps:.1f}", f"{t.median_ms:.3f}"] for name, (gbps, t) in results.items()]))
    return max(gbps for gbps, _ in results.values())


def run_call_overhead(quick, use_numba):
    calls = 10_000 if quick else 100_000
    a, b, c = np.ones(3), np.ones(3), np.zeros(3)
    rows = []
    for label, plait_fn, numba_fn, parallel in [
            ("c[0] = a[0] + b[0]", touch_plait, touch_numba, False),
            ("parallel for over 3 elements (Plait: too small, runs serially)", touch_parallel_plait,
             touch_parallel_numba, True),
            ("parallel for over 3 elements with an inner loop (a team starts)", touch_team_plait,
             touch_team_numba, True)]:
        plait_t = common.measure_per_call_ns(plait_fn, (a, b, c), calls=calls)
        row = [label, f"{plait_t.median_ns / 1e3:.3f}"]
        if use_numba:
            jitted = numba.njit(parallel=parallel, cache=True)(numba_fn)
            numba_t = common.measure_per_call_ns(jitted, (a, b, c), calls=calls)
            row.append(f"{numba_t.median_ns / 1e3:.3f}")
        else:
            row.append("n/a")
        rows.append(row)
    print(f"\nCall overhead of a cached kernel with three float64[3] arguments: median over batches of "
          f"1000 calls ({calls} calls), raw per-call time (target for Plait: <= 2 us without a parallel loop)")
    print(common.markdown_table(["kernel body", "Plait us/call", "Numba us/call"], rows))


def run_compile_time():
    import compile_time

    result = compile_time.measure_fresh_processes("spmv")
    print("\nspmv in new processes sharing a new, empty PLAIT_CACHE_DIR (time from before the first call "
          "to after it returns)")
    print(common.markdown_table(
        ["measurement", "seconds", "target"],
        [["first call, empty cache (compiles)", f"{result['compile_s']:.3f}", "<= 1.5"],
         ["first call in a second process (disk-cache hit)", f"{result['cache_hit_s']:.4f}", "<= 0.05"]]))
    if not result["second_from_disk_cache"]:
        print("warning: the second process did not report a disk-cache hit")


def show_source(name):
    """Compiles kernel `name` on small inputs and prints its generated C++."""
    by_name = {k.name: k for k in kernels(quick=True)}
    extras = {"triad": (triad_plait, lambda rng: (np.empty(8), rng.random(8), rng.random(8), 2.0)),
              "touch": (touch_plait, lambda rng: (np.ones(3), np.ones(3), np.zeros(3))),
              "touch_parallel": (touch_parallel_plait, lambda rng: (np.ones(3), np.ones(3), np.zeros(3))),
              "touch_team": (touch_team_plait, lambda rng: (np.ones(3), np.ones(3), np.zeros(3)))}
    if name in by_name:
        fn, make_args = by_name[name].plait, by_name[name].make_args
    elif name in extras:
        fn, make_args = extras[name]
    else:
        raise SystemExit(f"unknown kernel {name!r}; known: {', '.join(list(by_name) + list(extras))}")
    fn(*make_args(np.random.default_rng(0)))
    print(fn.inspect_source())


def main(argv=None):
    all_names = [k.name for k in kernels(quick=True)]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test that still validates)")
    parser.add_argument("--kernels", default=",".join(all_names),
                        help=f"comma-separated subset of: {','.join(all_names)}")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls per implementation (default 10, quick 3)")
    parser.add_argument("--no-numba", action="store_true", help="leave Numba out even when it is installed")
    parser.add_argument("--numba-fastmath", action="store_true",
                        help="compile the Numba kernels with fastmath=True (lets LLVM vectorise reductions)")
    parser.add_argument("--skip-extras", action="store_true",
                        help="only the kernel table: no triad, call overhead or compile time")
    parser.add_argument("--csv", help="where the CSV goes (default benchmarks/results/loops.csv, "
                                      "loops-quick.csv with --quick)")
    parser.add_argument("--show-source", metavar="KERNEL", help="print the C++ Plait generates for KERNEL and exit")
    args = parser.parse_args(argv)

    if args.show_source:
        show_source(args.show_source)
        return 0
    names = [n.strip() for n in args.kernels.split(",") if n.strip()]
    unknown = sorted(set(names) - set(all_names))
    if unknown:
        parser.error(f"unknown kernels: {', '.join(unknown)}; known: {', '.join(all_names)}")
    repeat = args.repeat or (3 if args.quick else 10)
    use_numba = numba is not None and not args.no_numba

    extra = [f"plait {plait.__version__}, threads: {common.usable_cpus()}"]
    if numba is None:
        extra.append("numba is not installed: its column is skipped (pip install numba)")
    elif use_numba:
        extra.append(f"numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads"
                     + (", fastmath=True" if args.numba_fastmath else ""))
    for line in common.machine_lines(extra):
        print(line)

    roof = None if args.skip_extras else run_triad(args.quick, repeat, use_numba, args.numba_fastmath)
    selected = [k for k in kernels(args.quick) if k.name in names]
    csv_headers, csv_rows, failures = run_kernels(selected, repeat, use_numba, args.numba_fastmath, roof)
    if use_numba and csv_rows:
        print(f"numba threading layer: {numba.threading_layer()}")
    csv_path = args.csv or os.path.join(common.RESULTS_DIR, "loops-quick.csv" if args.quick else "loops.csv")
    common.write_csv(csv_path, csv_headers, csv_rows)
    print(f"CSV: {os.path.relpath(csv_path)}")

    if not args.skip_extras:
        run_call_overhead(args.quick, use_numba)
        run_compile_time()
    print(f"\nload average at end: {common.load_average()}")
    if failures:
        print(f"FAILED: {', '.join(failures)} differ from NumPy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
