"""Sparse kernels written with SciPy: Plait against its peers, validated, then timed.

    python -m plait.bench sparse --target cpu|cuda [--size small|full] [--dtype float32|float64]
                                 [--kernels spmv,sddmm] [--data graphs,banded] [--peers scipy,plait]
                                 [--graphs DIR] [--repeat 10] [--time-budget 30]
                                 [--timeout 120] [--max-time 1800]

Kernels (the functions below, SciPy code that Plait compiles as it is):
    spmv(A, x)               A @ x
    spmm_mm(A, X, W)         A @ X @ W          X: M x H, W: H x J
    sddmm(S, B, C)           S.multiply(B @ C)  B: N x 64, C: 64 x M
    sddmm_spmm(S, C, D, E)   S.multiply(C @ D) @ E, with E: M x 16
    softmax(S)               plait.sparse.softmax(S, axis=1)
    row_normalise(S)         S.multiply(1.0 / S.sum(axis=1)[:, None])
    add(S, T)                S + T              T: S's entries one column to the right
    spgemm(A, B)             A @ B              B: A (the graph's two-hop paths)
softmax runs on the random_D matrices, spgemm on the graphs, the others on
the graphs and the synthetic matrices (plait/bench/sparse_data.py describes them all; --data
takes names and the groups graphs, synthetic, softmax). H and J are a
graph's feature and class counts, 256 and 16 on synthetic matrices. Dense
operands are drawn from np.random.default_rng(--seed) in --dtype, as are the
values of the synthetic matrices. Every row of every matrix that
row_normalise sees has an entry: the graphs get the identity added, banded
holds its diagonal and powerlaw's rows hold at least one entry.

The graphs (nine, from ../shared/data/graphs of the checkout) are found with
--graphs, else $PLAIT_GRAPHS_DIR, else beside the repository of the current
directory or of this package, or beside the current directory.

Peers: scipy (the reference), torch, plait, plait-maximal, plait-unfused on
the CPU; cupy and pyg join them with --target cuda (plait/bench/sparse_peers.py).
A peer that is not installed is skipped with a note; a peer that raises (a
compile error, an unknown keyword, an unsupported operation) is reported as
n/a with its reason, and the suite goes on.

Method (npbench's): SciPy's result is the reference. Each peer's version is
called once, untimed (it compiles), and its result compared with SciPy's: a
dense result directly, a sparse one on its canonical CSR arrays (same
indptr and indices, values within the tolerance; a different pattern by the
relative L2 norm of the sparse difference), never as a dense N x M array.
Tolerances allow float reassociation: values close by rtol or a relative L2
error below L2 (float32: 1e-4 both; float64: 1e-5, npbench's). Where SciPy's
own call fails (B @ C of sddmm is a dense N x M array: 40 GB at full size)
the reference is the sampled product computed a block of entries at a time,
and SciPy's column reports its error. Inputs reach the peer's device before
the clock starts; the timed statement is one call plus a device
synchronisation. The median of --repeat runs is reported (more runs when it
is under 10 ms, fewer, at least --min-runs, past --time-budget seconds),
with the ratio SciPy time / peer time and its geometric mean per peer. The
CSV (one row per kernel, data set and peer) is rewritten after each data
set; the heatmap needs matplotlib.
"""

import argparse
import csv
import math
import os
import sys
import time
import traceback
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plait import sparse as plait_sparse

from . import sparse_data
from .npbench import (
    MIN_RUNS,
    TimeLimitExceeded,
    _Progress,
    bootstrap_ci,
    draw_heatmap,
    format_time,
    geomean,
    machine_description,
    repeat_runs,
    time_limit,
)
from .peers import first_line
from .sparse_peers import host_value, known_peers, peers_for

SDDMM_K = 64
SPMM_OUT = 16
TOLERANCES = {np.dtype(np.float32): (1e-4, 1e-6, 1e-4), np.dtype(np.float64): (1e-5, 1e-8, 1e-5)}  # rtol, atol, L2
REFERENCE_BLOCK = 1 << 18  # entries per block of the sampled reference product


# ================================================================ the kernels

def spmv(A, x):
    return A @ x


def spmm_mm(A, X, W):
    return A @ X @ W


def sddmm(S, B, C):
    return S.multiply(B @ C)


def sddmm_spmm(S, C, D, E):
    return S.multiply(C @ D) @ E


def softmax(S):
    return plait_sparse.softmax(S, axis=1)


def row_normalise(S):
    return S.multiply(1.0 / S.sum(axis=1)[:, None])


def add(S, T):
    return S + T


def spgemm(A, B):
    return A @ B


KERNELS = {"spmv": spmv, "spmm_mm": spmm_mm, "sddmm": sddmm, "sddmm_spmm": sddmm_spmm, "softmax": softmax,
           "row_normalise": row_normalise, "add": add, "spgemm": spgemm}
# The synthetic matrices' two-hop products hold 1e9 entries and more.
KERNEL_GROUPS = {name: ("softmax",) if name == "softmax" else ("graphs",) if name == "spgemm" else
                 ("graphs", "synthetic") for name in KERNELS}


def kernel_inputs(kernel, data, dtype, seed):
    """The arguments of `kernel` on data set `data`: its matrix and dense
    operands drawn from a generator seeded by `seed`, the kernel and the
    data set."""
    rng = np.random.default_rng([seed, zlib.crc32(kernel.encode()), zlib.crc32(data.name.encode())])
    A = data.matrix
    n, m = A.shape

    def dense(*shape):
        return rng.standard_normal(shape, dtype=dtype)

    return {"spmv": lambda: [A, dense(m)],
            "spmm_mm": lambda: [A, dense(m, data.features), dense(data.features, data.classes)],
            "sddmm": lambda: [A, dense(n, SDDMM_K), dense(SDDMM_K, m)],
            "sddmm_spmm": lambda: [A, dense(n, SDDMM_K), dense(SDDMM_K, m), dense(m, SPMM_OUT)],
            "softmax": lambda: [A],
            "row_normalise": lambda: [A],
            "add": lambda: [A, shifted(A, rng)],
            "spgemm": lambda: [A, A]}[kernel]()


def shifted(A, rng):
    """A second matrix of A's shape and stored-entry count for `add`: each
    of A's entries one column to the right (the last column's to the first),
    with new values; its pattern meets A's in part."""
    import scipy.sparse as sp

    n, m = A.shape
    T = sp.csr_array((rng.standard_normal(A.nnz, dtype=A.dtype), (A.indices + 1) % max(m, 1), A.indptr.copy()),
                     shape=A.shape)
    T.sort_indices()
    return T


def sampled_product(S, B, C):
    """S.multiply(B @ C) without the dense B @ C: the products of B's rows
    and C's columns at S's stored positions, a block of entries at a time."""
    S = host_value(S)
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    values = np.empty(S.nnz, dtype=np.result_type(S.dtype, B.dtype, C.dtype))
    for start in range(0, S.nnz, REFERENCE_BLOCK):
        block = slice(start, start + REFERENCE_BLOCK)
        values[block] = np.einsum("ij,ji->i", B[rows[block]], C[:, S.indices[block]])
    S.data = S.data * values
    return S


REFERENCE_FALLBACKS = {"sddmm": sampled_product,
                       "sddmm_spmm": lambda S, C, D, E: sampled_product(S, C, D) @ E}


# ================================================================ validation

def compare(reference, value):
    """None when `value` matches `reference` (both from host_value), else why not."""
    import scipy.sparse as sp

    if sp.issparse(reference) != sp.issparse(value):
        kind = "sparse" if sp.issparse(value) else "dense"
        return f"a {kind} {type(value).__name__} result, expected {'a sparse' if sp.issparse(reference) else 'dense'}"
    if value.shape != reference.shape:
        return f"shape {value.shape}, expected {reference.shape}"
    if value.dtype != reference.dtype:
        return f"dtype {value.dtype}, expected {reference.dtype}"
    rtol, atol, l2 = TOLERANCES.get(reference.dtype, TOLERANCES[np.dtype(np.float64)])
    if not sp.issparse(reference):
        return _compare_values(reference, value, rtol, atol, l2)
    if np.array_equal(reference.indptr, value.indptr) and np.array_equal(reference.indices, value.indices):
        return _compare_values(reference.data, value.data, rtol, atol, l2)
    # Another pattern can still hold the same matrix (explicit zeros left
    # out or added): the difference must be small.
    error = _relative_l2((reference - value).data, reference.data)
    if error < l2:
        return None
    return f"another pattern ({value.nnz} entries, expected {reference.nnz}), relative L2 error {error:.3g}"


def _relative_l2(difference, reference):
    norm = np.linalg.norm(reference.astype(np.float64))
    error = np.linalg.norm(difference.astype(np.float64))
    return error / norm if norm else (0.0 if error == 0 else math.inf)


def _compare_values(reference, value, rtol, atol, l2):
    with np.errstate(all="ignore"):
        if np.allclose(reference, value, rtol=rtol, atol=atol, equal_nan=True):
            return None
        error = _relative_l2(reference.astype(np.float64) - value.astype(np.float64), reference)
    return None if error < l2 else f"relative L2 error {error:.3g}"


# ================================================================ one kernel, one peer

@dataclass
class Result:
    kernel: str
    data: str
    peer: str
    status: str               # "ok", "n/a" (raised), "failed" (validation), "timeout", "skipped"
    note: str = ""
    times: list = field(default_factory=list)
    median: float = math.nan
    ci: tuple = (math.nan, math.nan)

    @property
    def ok(self):
        return self.status == "ok"


def time_runs(peer, fn, args, repeat, budget_s, min_runs, times):
    """npbench.repeat_runs of one peer's version of a kernel on prepared arguments."""
    def one_run():
        start = time.perf_counter()
        peer.call(fn, args)
        times.append(time.perf_counter() - start)

    repeat_runs(one_run, repeat, budget_s, times, min_runs)


def run_peer(peer, kernel, data_name, inputs, reference, validate, repeat, rng, verbose, budget_s=math.inf,
             timeout_s=math.inf, min_runs=MIN_RUNS):
    """Validates one peer's version of one kernel on one data set, then
    times it, all within `timeout_s` seconds (a version stopped after some
    timed runs keeps them). Without `validate` (SciPy, whose reference call
    was its untimed first call) the timed runs start at once."""
    def result(status, note="", **timing):
        return Result(kernel, data_name, peer.name, status, note, **timing)

    times = []
    try:
        with time_limit(timeout_s):
            fn = peer.implementation(kernel, KERNELS[kernel])
            if fn is None:
                return result("skipped", peer.missing_note(kernel))
            args = peer.prepare(kernel, inputs)
            if validate:  # the first call, untimed: it compiles
                problem = compare(reference, host_value(peer.call(fn, args)))
                if problem:
                    return result("failed", problem)
            time_runs(peer, fn, args, repeat, budget_s, min_runs, times)
            note = ""
    except TimeLimitExceeded:
        _drain(peer)
        if not times:
            return result("timeout", f"stopped after {timeout_s:.3g} s, before a timed run")
        note = f"stopped after {timeout_s:.3g} s, {len(times)} timed run(s)"
    except Exception as e:  # noqa: BLE001 -- a failing implementation is a result, not a harness error
        if verbose:
            traceback.print_exc()
        _drain(peer)
        return result("n/a", first_line(e))
    return result("ok", note, times=times, median=float(np.median(times)), ci=bootstrap_ci(times, rng))


def _drain(peer):
    """Waits for the work an interrupted call left on the device."""
    try:
        peer.synchronize()
    except Exception:  # noqa: BLE001 -- a broken device shows up in the next call's result
        pass


def scipy_reference(kernel, inputs, timeout_s):
    """(SciPy's result as host_value, whether SciPy computed it): the
    fallback's result where SciPy's call raises; exceptions propagate when
    there is no fallback."""
    try:
        with time_limit(timeout_s):
            return host_value(KERNELS[kernel](*inputs)), True
    except MemoryError:
        if kernel not in REFERENCE_FALLBACKS:
            raise
    with time_limit(timeout_s):
        return host_value(REFERENCE_FALLBACKS[kernel](*inputs)), False


# ================================================================ the suite

def pairs(kernels, data_names):
    """(kernel, data set) pairs in table order, each kernel on its groups."""
    return [(k, d) for k in kernels for d in data_names if sparse_data.group_of(d) in KERNEL_GROUPS[k]]


def run(kernels, data_names, size, dtype, peers, graphs_dir=None, repeat=10, verbose=False, seed=0,
        budget_s=math.inf, timeout_s=math.inf, max_time_s=math.inf, min_runs=MIN_RUNS, on_data_done=None):
    """Validates and times every (kernel, data set, peer) of `pairs(kernels,
    data_names)` with the peer objects `peers` (those that are unavailable
    are skipped with a note). Returns ({(kernel, data, peer): Result},
    {data: (shape, nnz)}, notes, names of the peers that ran)."""
    notes, ready = [], []
    for peer in peers:
        try:
            reason = peer.unavailable()
        except Exception as e:  # noqa: BLE001 -- a peer that cannot even start is skipped, not fatal
            reason = f"cannot start ({first_line(e)})"
        if reason:
            notes.append(f"peer {peer.name} skipped: {reason}")
        else:
            ready.append(peer)
    todo = pairs(kernels, data_names)
    rng = np.random.default_rng(seed)
    deadline = time.perf_counter() + max_time_s
    results, shapes = {}, {}
    progress = _Progress(len(todo) * len(ready))
    try:
        for data_name in dict.fromkeys(d for _, d in todo):
            progress.step(f"{data_name}: making the matrix")
            kernels_here = [k for k, d in todo if d == data_name]
            try:
                data = sparse_data.make_data(data_name, size, dtype, seed, graphs_dir)
            except Exception as e:  # noqa: BLE001 -- one unreadable data set does not stop the suite
                if verbose:
                    traceback.print_exc()
                progress.write(f"{data_name}: n/a: {first_line(e)}")
                for kernel in kernels_here:
                    for peer in ready:
                        results[(kernel, data_name, peer.name)] = Result(kernel, data_name, peer.name, "n/a",
                                                                         f"data set: {first_line(e)}")
                        progress.advance()
                continue
            shapes[data_name] = (data.matrix.shape, data.matrix.nnz)
            for kernel in kernels_here:
                run_kernel(kernel, data, dtype, seed, ready, results, progress, deadline, repeat, rng, verbose,
                           budget_s, timeout_s, min_runs)
            del data
            if on_data_done:
                on_data_done(results, shapes)
    finally:
        progress.close()
    return results, shapes, notes, [p.name for p in ready]


def run_kernel(kernel, data, dtype, seed, peers, results, progress, deadline, repeat, rng, verbose, budget_s,
               timeout_s, min_runs):
    """One kernel on one data set: SciPy's reference, then each peer."""
    def record(result):
        results[(kernel, data.name, result.peer)] = result
        if not result.ok or result.note:
            progress.write(f"{kernel} / {data.name}: {result.peer}: {result.status}: {result.note}")
        progress.advance()

    progress.step(f"{kernel} / {data.name}: inputs and SciPy's reference")
    remaining = deadline - time.perf_counter()
    problem = ("skipped", "not run: --max-time reached") if remaining <= 0 else None
    if problem is None:
        try:
            inputs = kernel_inputs(kernel, data, dtype, seed)
            reference, from_scipy = scipy_reference(kernel, inputs, remaining)
        except TimeLimitExceeded as e:
            problem = ("timeout", f"SciPy's reference: {e}")
        except Exception as e:  # noqa: BLE001 -- one kernel's broken reference does not stop the suite
            if verbose:
                traceback.print_exc()
            problem = ("n/a", f"no SciPy reference: {first_line(e)}")
    if problem:
        for peer in peers:
            record(Result(kernel, data.name, peer.name, *problem))
        return
    for peer in peers:
        progress.step(f"{kernel} / {data.name}: {peer.name}")
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            record(Result(kernel, data.name, peer.name, "skipped", "not run: --max-time reached"))
            continue
        # SciPy is not compared with itself, nor held to --timeout: without
        # its times nothing of the kernel can be compared.
        is_reference = peer.name == "scipy" and from_scipy
        record(run_peer(peer, kernel, data.name, inputs, reference, not is_reference, repeat, rng, verbose,
                        min(budget_s, remaining), remaining if is_reference else min(timeout_s, remaining),
                        min_runs))
    for peer in peers:
        try:
            peer.release()
        except Exception:  # noqa: BLE001 -- freeing caches is best effort
            pass


# ================================================================ report

def row_label(kernel, data):
    return f"{kernel} / {data}"


def ratios(results, rows, peers):
    """{peer: {(kernel, data): SciPy time / peer time}} for validated runs."""
    table = {}
    for peer in peers:
        table[peer] = {}
        for kernel, data in rows:
            base, mine = results.get((kernel, data, "scipy")), results.get((kernel, data, peer))
            if base and mine and base.ok and mine.ok:
                table[peer][(kernel, data)] = base.median / mine.median
    return table


def format_table(results, rows, peers, shapes):
    """Median time per peer and SciPy's time over it, one row per (kernel,
    data set), a geometric-mean row; a peer that did not run shows its
    status and the number of its reason, listed under the table."""
    speed = ratios(results, rows, peers)
    others = [p for p in peers if p != "scipy"]
    reasons = {}

    def cell(r):
        if r is None:
            return "-"
        if r.ok:
            return format_time(r.median)
        key = f"{r.status}: {r.note}"
        return f"{r.status} [{reasons.setdefault(key, len(reasons) + 1)}]"

    header = ["kernel / data", "nnz", *peers, *(f"scipy/{p}" for p in others)]
    table = []
    for kernel, data in rows:
        row = [row_label(kernel, data), str(shapes.get(data, (None, ""))[1])]
        row += [cell(results.get((kernel, data, p))) for p in peers]
        row += [f"{speed[p][(kernel, data)]:.2f}x" if (kernel, data) in speed[p] else "-" for p in others]
        table.append(row)
    geo = ["geomean", "", *([""] * len(peers))]
    for peer in others:
        g = geomean(speed[peer].values())
        geo.append(f"{g:.2f}x ({len(speed[peer])})" if math.isfinite(g) else "-")
    table.append(geo)
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, table)]
    out += [f"[{n}] {reason}" for reason, n in reasons.items()]
    return "\n".join(out)


CSV_HEADER = ["kernel", "data", "rows", "cols", "nnz", "size", "dtype", "target", "peer", "status", "median_s",
              "ci_low_s", "ci_high_s", "runs", "speedup_vs_scipy", "note"]


def write_csv(path, results, shapes, size, dtype, target):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_HEADER)
        for (kernel, data, peer), r in results.items():
            (rows, cols), nnz = shapes.get(data, ((None, None), None))
            base = results.get((kernel, data, "scipy"))
            speedup = base.median / r.median if r.ok and base and base.ok else math.nan
            writer.writerow([kernel, data, rows, cols, nnz, size, np.dtype(dtype).name, target, peer, r.status,
                             *map(_num, (r.median, *r.ci)), len(r.times), _num(speedup), r.note])


def _num(x):
    return f"{x:.6g}" if math.isfinite(x) else ""


# ================================================================ driver

def _names(values):
    return [v for item in (values or []) for v in item.split(",") if v]


def select_data(requested, graph_names):
    """The data sets --data names (names or group names), in group order."""
    groups = sparse_data.data_names(graph_names)
    everything = [d for g in sparse_data.GROUPS for d in groups[g]]
    if not requested:
        return everything
    chosen = set()
    for item in requested:
        if item in groups:
            chosen.update(groups[item])
        elif item in everything:
            chosen.add(item)
        else:
            raise ValueError(f"unknown data set {item!r}; known: {', '.join(sparse_data.GROUPS)}, "
                             f"{', '.join(everything)}")
    return [d for d in everything if d in chosen]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m plait.bench sparse", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--size", default="full", choices=list(sparse_data.SIZES),
                        help="full: 1e5-row synthetic matrices, 16384^2 softmax; small: rows and non-zeros / 10 "
                             "(softmax 4096^2); tiny: / 100 (softmax 256^2), for tests (default full)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--kernels", nargs="+", help=f"comma or space separated; default: {', '.join(KERNELS)}")
    parser.add_argument("--data", nargs="+", help="data sets or groups (graphs, synthetic, softmax), comma or "
                                                  "space separated; default: all")
    parser.add_argument("--peers", help="comma-separated peers; default: all of the target's")
    parser.add_argument("--graphs", help="the graphs folder (default: $PLAIT_GRAPHS_DIR, else ../shared/data/graphs)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per implementation (default 10)")
    parser.add_argument("--time-budget", type=float, default=30.0,
                        help="seconds of timed runs per implementation of a kernel on a data set, after which "
                             "no more are started (at least --min-runs runs; default 30)")
    parser.add_argument("--min-runs", type=int, default=MIN_RUNS, help=f"default {MIN_RUNS}")
    parser.add_argument("--timeout", type=float, default=math.inf,
                        help="seconds one implementation of a kernel on a data set may take, validation and "
                             "timed runs together; SciPy, the baseline, is exempt (default: no limit)")
    parser.add_argument("--max-time", type=float, default=math.inf,
                        help="seconds the whole suite may take; the remaining pairs are then skipped")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data (default 0)")
    parser.add_argument("--output-dir", default=".", help="where the CSV and the heatmap PNG go (default: .)")
    parser.add_argument("--verbose", action="store_true", help="print the traceback of each failing implementation")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.min_runs < 1:
        parser.error("--repeat and --min-runs must be at least 1")
    kernels = _names(args.kernels) or list(KERNELS)
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(KERNELS)}")
    setup_notes = []
    try:
        graphs_dir = sparse_data.find_graphs_dir(args.graphs)
        graph_names = list(sparse_data.graph_index(graphs_dir))
    except FileNotFoundError as e:
        if args.graphs:
            parser.error(str(e))
        graphs_dir, graph_names = None, []
        setup_notes.append(f"the graphs are left out: {e}")
    try:
        data_names = select_data(_names(args.data), graph_names)
    except ValueError as e:
        parser.error("; ".join([str(e), *setup_notes]))
    for note in setup_notes:
        print(f"note: {note}", file=sys.stderr)
    if not pairs(kernels, data_names):
        parser.error("no kernel runs on the chosen data sets (softmax runs on the softmax group only, "
                     "the others on graphs and synthetic)")
    available = known_peers(args.target)
    peer_names = args.peers.split(",") if args.peers else [p.name for p in peers_for(args.target)]
    unknown = [p for p in peer_names if p not in available]
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)}; known: {', '.join(available)}")
    peers = [available[p] for p in dict.fromkeys(["scipy", *peer_names])]
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"sparse_{args.target}_{args.size}_{args.dtype}"
    dtype = np.dtype(args.dtype)

    def save(results, shapes):
        write_csv(stem.with_suffix(".csv"), results, shapes, args.size, dtype, args.target)

    load_before = os.getloadavg()[0]
    results, shapes, notes, ran = run(
        kernels, data_names, args.size, dtype, peers, graphs_dir, args.repeat, args.verbose, args.seed,
        args.time_budget, args.timeout, args.max_time, args.min_runs, on_data_done=save)
    load_after = os.getloadavg()[0]
    rows = pairs(kernels, data_names)
    title = f"Sparse kernels ({args.size}, {args.dtype}, {args.target}): SciPy time / peer time"
    print(f"\n{title}\n{machine_description(args.target)}\nload average (1 min) {load_before:.2f} before, "
          f"{load_after:.2f} after the run\n")
    print(format_table(results, rows, ran, shapes))
    for r in results.values():
        if r.ok and r.note:
            print(f"note: {r.kernel} / {r.data} / {r.peer}: {r.note}")
    for note in setup_notes + notes:
        print(f"note: {note}")
    save(results, shapes)
    print(f"\nwrote {stem.with_suffix('.csv')}")
    by_row = {(row_label(k, d), p): r for (k, d, p), r in results.items()}
    why_not = draw_heatmap(stem.with_suffix(".png"), by_row, [row_label(k, d) for k, d in rows], ran, title,
                           baseline="scipy")
    print(f"note: {why_not}" if why_not else f"wrote {stem.with_suffix('.png')}")
    return 0
