"""NPBench's 20 kernels: Plait against its peers, validated, then timed.

    python -m plait.bench npbench --target cpu|cuda --preset S [--kernels gemm,syrk]
                                  [--peers numpy,numba,plait] [--repeat 10]
                                  [--timeout 60] [--max-time 540]

The kernels live in benchmarks/npbench/ of a Plait checkout (one module per
kernel; see its __init__.py for what a module holds); they are found from the
current directory upwards, or named with --kernels-dir or PLAIT_NPBENCH_DIR.
The peers are NumPy, Numba and Plait on the CPU; NumPy (on the CPU, the
baseline), Plait, CuPy, JAX, PyTorch and torch.compile on the GPU. A peer
that is not installed, or finds no GPU, is skipped with a note. With
--peers, plait_unchecked (Plait with boundscheck=False) can join them, to
measure what the default bounds checks cost, and on the CPU the ablation's
columns, each Plait without one optimisation: plait_no_licm (no loop-invariant
array statements hoisted), plait_no_fusion (no loop nests fused, sparse
operators one nest each), plait_no_alloc_hoist (scratch arrays allocated in
each step) and plait_no_blas (matrix products as loops).

Method (NPBench's): every implementation is first called once, untimed (it
compiles), on fresh copies of the inputs, and its outputs -- the returned
values, then the in/out arrays -- are compared with NumPy's
(np.allclose(rtol=1e-5, atol=1e-8) or relative L2 error below 1e-5), also on
each kernel's extra validation inputs. Only implementations that validate are
timed: before each run the inputs are copied afresh (untimed, as is the copy
to the device for GPU peers); the timed statement is one call plus a device
synchronisation. The median of --repeat runs is reported (more runs when the
median is below 10 ms, fewer -- at least --min-runs -- once the runs of one
implementation exceed --time-budget seconds), with a bootstrap 95%
confidence interval. An implementation that raises, fails validation or
runs past --timeout is reported as such and the suite goes on; the CSV is
rewritten after each kernel, so a run cut short keeps what it measured.
"""

import argparse
import contextlib
import csv
import importlib
import importlib.util
import math
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .peers import NumpyPeer, first_line, optional_peers_for, peers_for



@dataclass(frozen=True)
class Suite:
    """A suite of kernel modules in a Plait checkout (benchmarks/<name>/, its
    __init__.py naming them in KERNELS), run by this harness."""
    name: str          # the folder under benchmarks/, and the CSV's stem
    title: str         # the report's title
    presets: tuple     # the presets the modules all have
    environment: str   # the variable that names the folder instead

    @property
    def package(self):
        return f"plait_{self.name}_kernels"


NPBENCH = Suite("npbench", "NPBench", ("S", "M", "L", "paper", "test"), "PLAIT_NPBENCH_DIR")
SHORT_RUN_S = 0.010      # runs shorter than this get more repetitions
SHORT_RUN_BUDGET_S = 0.25  # timed seconds a short kernel's repetitions add up to
MAX_RUNS = 200
MIN_RUNS = 3         # runs kept even when they exceed the time budget
# A pause before each version's validation and timed runs: the worker threads
# of the version before (NumPy's OpenBLAS, Numba's, OpenMP's) spin for a while after their
# calls and would share the cores with it (symm at preset S: 0.47 ms alone,
# 2.7 ms just after NumPy's version).
SETTLE_S = 0.5
RTOL, ATOL, L2_TOL = 1e-5, 1e-8, 1e-5
CHECKSUM_RTOL = 1e-8


# ================================================================ finding the kernels

def find_kernel_dir(explicit=None, suite=NPBENCH):
    """benchmarks/<suite> of a Plait checkout: `explicit`, else the suite's
    environment variable, else the first directory from the current one
    upwards that holds benchmarks/<suite>/__init__.py."""
    candidate = explicit or os.environ.get(suite.environment)
    if candidate:
        path = Path(candidate)
        if not (path / "__init__.py").is_file():
            raise FileNotFoundError(f"{path} does not hold the {suite.name} kernels (no __init__.py)")
        return path.resolve()
    here = Path.cwd().resolve()
    for directory in (here, *here.parents):
        path = directory / "benchmarks" / suite.name
        if (path / "__init__.py").is_file():
            return path
    raise FileNotFoundError(
        f"the {suite.name} kernels live in benchmarks/{suite.name}/ of a Plait checkout, and none was found from "
        f"{here} upwards: run this from the checkout, or pass --kernels-dir (or set {suite.environment})")


def kernel_package(directory, suite=NPBENCH):
    """The kernel directory imported as a package (once per process)."""
    package = sys.modules.get(suite.package)
    if package is not None:
        return package
    spec = importlib.util.spec_from_file_location(
        suite.package, Path(directory) / "__init__.py", submodule_search_locations=[str(directory)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[suite.package] = package
    spec.loader.exec_module(package)
    return package


def load_kernel(directory, name, suite=NPBENCH):
    """The module of one kernel."""
    package = kernel_package(directory, suite)
    if name not in package.KERNELS:
        raise ValueError(f"unknown kernel {name!r}; known: {', '.join(package.KERNELS)}")
    return importlib.import_module(f"{suite.package}.{name}")


# ================================================================ validation

def compare(reference, value, rtol=RTOL):
    """None when `value` matches `reference` by NPBench's rule (a module may
    ask for a smaller `rtol`: its RTOL), else why not."""
    if value.shape != reference.shape:
        return f"shape {value.shape}, expected {reference.shape}"
    if value.dtype != reference.dtype:
        return f"dtype {value.dtype}, expected {reference.dtype}"
    with np.errstate(all="ignore"):
        if np.allclose(reference, value, rtol=rtol, atol=ATOL * rtol / RTOL):
            return None
        ref = reference.astype(np.float64)
        norm = np.linalg.norm(ref)
        error = np.linalg.norm(ref - value.astype(np.float64)) / norm if norm else np.inf
    if error < L2_TOL * rtol / RTOL:
        return None
    return f"relative L2 error {error:.3g}"


def output_names(module, count):
    """ret0, ret1, ... for the returned values, then the in/out names."""
    returned = count - len(module.OUTPUTS)
    return [f"ret{i}" for i in range(returned)] + list(module.OUTPUTS)


def check_checksums(module, preset, outputs):
    """Mismatches between NumPy's outputs and the module's CHECKSUMS at
    `preset`, as text; None when they match or there are none."""
    expected = getattr(module, "CHECKSUMS", {}).get(preset) if isinstance(preset, str) else None
    if not expected:
        return None
    by_name = dict(zip(output_names(module, len(outputs)), outputs))
    problems = []
    for name, total, l2 in expected:
        if name not in by_name:
            problems.append(f"{name}: missing")
            continue
        value = by_name[name].astype(np.float64)
        got_total, got_l2 = float(value.sum()), float(np.linalg.norm(value))
        if abs(got_total - total) > CHECKSUM_RTOL * (abs(total) + l2) or abs(got_l2 - l2) > CHECKSUM_RTOL * l2:
            problems.append(f"{name}: sum {got_total!r} (expected {total!r}), L2 {got_l2!r} (expected {l2!r})")
    return "; ".join(problems) or None


def validation_cases(module, preset, inputs):
    """(label, inputs) for the standard input and each extra validation input."""
    extra = module.validation_inputs(preset) if hasattr(module, "validation_inputs") else []
    return [("standard input", inputs), *extra]


# ================================================================ timing

def bootstrap_ci(times, rng, resamples=1000):
    """A 95% bootstrap confidence interval of the median."""
    samples = rng.choice(np.asarray(times), size=(resamples, len(times)), replace=True)
    medians = np.median(samples, axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def repeat_runs(one_run, repeat, budget_s, times, min_runs=MIN_RUNS):
    """Calls one_run() (which appends one run's time in seconds to `times`):
    `repeat` runs, more when the median is short, fewer (but at least
    `min_runs`) when they would take more than `budget_s`. Filling a list
    given by the caller keeps the runs made before a time limit interrupts a
    later one."""
    while len(times) < repeat and (len(times) < min_runs or sum(times) < budget_s):
        one_run()
    median = float(np.median(times))
    if median < SHORT_RUN_S:
        wanted = min(MAX_RUNS, max(repeat, int(SHORT_RUN_BUDGET_S / max(median, 1e-6))))
        while len(times) < wanted:
            one_run()
    return times


def time_runs(peer, fn, module, inputs, repeat, budget_s, times, min_runs=MIN_RUNS):
    """repeat_runs of one NPBench kernel, its inputs prepared before each run."""
    def one_run():
        args = peer.prepare(inputs, module.PARAMETERS)
        start = time.perf_counter()
        peer.call(fn, args)
        times.append(time.perf_counter() - start)

    return repeat_runs(one_run, repeat, budget_s, times, min_runs)


class TimeLimitExceeded(BaseException):
    """Raised in the middle of an implementation that ran past its time limit.
    A BaseException, so that a library's `except Exception` does not swallow it."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raises TimeLimitExceeded in the block once `seconds` have passed (by
    SIGALRM: in the main thread of a POSIX process only; elsewhere, or for an
    infinite limit, no limit). Python handles the signal between bytecodes,
    so a call into native code that does not return (one long kernel) is
    stopped only when it returns."""
    if not math.isfinite(seconds) or not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise TimeLimitExceeded(f"over the time limit of {seconds:.3g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ================================================================ one kernel, one peer

@dataclass
class Result:
    kernel: str
    peer: str
    status: str               # "ok", "failed", "error", "timeout", "skipped"
    note: str = ""
    times: list = field(default_factory=list)
    median: float = math.nan
    ci: tuple = (math.nan, math.nan)
    checksum: str = ""        # NumPy only: the reference checksum check

    @property
    def ok(self):
        return self.status == "ok"


def validate(peer, fn, module, preset, inputs, references):
    """None when `fn` matches NumPy on every validation case, else why not.
    Exceptions from `fn` propagate."""
    for (label, case_inputs), reference in zip(validation_cases(module, preset, inputs), references):
        args = peer.prepare(case_inputs, module.PARAMETERS)
        outputs = peer.outputs(module, peer.call(fn, args), args)
        if len(outputs) != len(reference):
            return f"{label}: {len(outputs)} outputs, expected {len(reference)}"
        for out_name, ref, value in zip(output_names(module, len(reference)), reference, outputs):
            if hasattr(module, "compare"):  # a module's own rule (ipnsw: ids of near-ties may differ)
                problem = module.compare(out_name, ref, value)
            else:
                problem = compare(ref, value, getattr(module, "RTOL", RTOL))
            if problem:
                return f"{label}: {out_name}: {problem}"
    return None


def run_peer(peer, module, name, preset, inputs, references, repeat, rng, verbose, budget_s=math.inf,
             timeout_s=math.inf, min_runs=MIN_RUNS, first_times=()):
    """Validates one peer's version of one kernel, then times it. The whole
    (validation and timed runs) is stopped after `timeout_s` seconds: a
    version stopped before its first timed run is a "timeout", one stopped
    later keeps the runs it made. NumPy, the reference, is not validated
    against itself. `first_times`: runs already timed (NumPy's reference
    computation on the standard inputs), counted as the first runs."""
    fn = peer.implementation(module)
    if fn is None:
        return Result(name, peer.name, "skipped", peer.missing_note(module))
    times, note = list(first_times), ""
    time.sleep(SETTLE_S)  # not counted in the version's time limit
    try:
        with time_limit(timeout_s):
            if not isinstance(peer, NumpyPeer):
                problem = validate(peer, fn, module, preset, inputs, references)
                if problem:
                    return Result(name, peer.name, "failed", problem)
            time_runs(peer, fn, module, inputs, repeat, budget_s, times, min_runs)
    except TimeLimitExceeded:
        _drain(peer)
        if not times:
            return Result(name, peer.name, "timeout", f"stopped after {timeout_s:.3g} s, before a timed run")
        note = f"stopped after {timeout_s:.3g} s, {len(times)} timed run(s)"
    except Exception as e:  # noqa: BLE001 -- a failing implementation is a result, not a harness error
        if verbose:
            traceback.print_exc()
        _drain(peer)
        return Result(name, peer.name, "error", first_line(e))
    return Result(name, peer.name, "ok", note, times=times, median=float(np.median(times)),
                  ci=bootstrap_ci(times, rng))


def _drain(peer):
    """Waits for the work an interrupted or failed call left on the device,
    so that it does not run into the next measurement."""
    try:
        peer.synchronize(None)
    except Exception:  # noqa: BLE001 -- a broken device shows up in the next call's result
        pass


def numpy_references(module, preset, inputs, seconds=None):
    """NumPy's outputs for each validation case. `seconds`, a list, gets the
    time of the call on the first case (the standard inputs), timed as
    time_runs times a run: at preset paper some NumPy kernels take half a
    minute, and this run then counts as NumPy's first timed run."""
    references = []
    for _, case_inputs in validation_cases(module, preset, inputs):
        peer = NumpyPeer()
        args = peer.prepare(case_inputs, module.PARAMETERS)
        start = time.perf_counter()
        result = peer.call(module.kernel_numpy, args)
        if seconds is not None and not references:
            seconds.append(time.perf_counter() - start)
        references.append(peer.outputs(module, result, args))
    return references


# ================================================================ report

def geomean(values):
    values = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def speedups(results, kernels, peers, baseline="numpy"):
    """{peer: {kernel: baseline time / peer time}} for validated pairs."""
    table = {}
    for peer in peers:
        row = {}
        for kernel in kernels:
            base, mine = results.get((kernel, baseline)), results.get((kernel, peer))
            if base and mine and base.ok and mine.ok:
                row[kernel] = base.median / mine.median
        table[peer] = row
    return table


def format_time(seconds):
    if not math.isfinite(seconds):
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    return f"{seconds * 1e3:.3g} ms"


def format_table(results, kernels, peers):
    """Median time per peer and speedup over NumPy, one row per kernel, and a
    geometric-mean row."""
    speed = speedups(results, kernels, peers)
    others = [p for p in peers if p != "numpy"]
    header = ["kernel", *(f"{p} time" for p in peers), *(f"{p} speedup" for p in others)]
    rows = []
    for kernel in kernels:
        row = [kernel]
        for peer in peers:
            r = results.get((kernel, peer))
            row.append("-" if r is None else format_time(r.median) if r.ok else r.status.upper())
        for peer in others:
            s = speed[peer].get(kernel)
            row.append(f"{s:.2f}x" if s is not None else "-")
        rows.append(row)
    geo = ["geomean", *([""] * len(peers))]
    for peer in others:
        g = geomean(speed[peer].values())
        geo.append(f"{g:.2f}x ({len(speed[peer])})" if math.isfinite(g) else "-")
    rows.append(geo)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    if "plait" in peers:
        for other in others:
            if other == "plait":
                continue
            common = [k for k in kernels if k in speed["plait"] and k in speed[other]]
            if common:
                g = geomean(speed["plait"][k] / speed[other][k] for k in common)
                out.append(f"plait over {other}: geometric mean {g:.2f}x over {len(common)} kernels")
    return "\n".join(out)


def write_csv(path, results, target, preset):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["kernel", "preset", "target", "peer", "status", "median_s", "ci_low_s", "ci_high_s",
                         "runs", "speedup_vs_numpy", "note", "reference_checksum"])
        for (kernel, peer), r in results.items():
            base = results.get((kernel, "numpy"))
            speedup = base.median / r.median if r.ok and base and base.ok else ""
            writer.writerow([kernel, preset, target, peer, r.status, _num(r.median), _num(r.ci[0]), _num(r.ci[1]),
                             len(r.times), _num(speedup), r.note, r.checksum])


def _num(x):
    return "" if x == "" or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.6g}"


def draw_heatmap(path, results, kernels, peers, title, baseline="numpy"):
    """Speedup over the baseline, frameworks as columns, kernels as rows, the
    geometric mean on top (NPBench's layout). Returns why it was not drawn, or None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import TwoSlopeNorm
    except ImportError:
        return "matplotlib is not installed: no heatmap"
    speed = speedups(results, kernels, peers, baseline)
    rows = ["geomean", *kernels]
    grid = np.full((len(rows), len(peers)), np.nan)
    for c, peer in enumerate(peers):
        grid[0, c] = geomean(speed[peer].values())
        for r, kernel in enumerate(kernels, start=1):
            grid[r, c] = speed[peer].get(kernel, np.nan)
    logs = np.log10(grid)
    bound = max(1.0, float(np.nanmax(np.abs(logs))) if np.isfinite(logs).any() else 1.0)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(peers), 0.9 + 0.38 * len(rows)))
    cmap = plt.get_cmap("RdYlGn").copy()
    cmap.set_bad("lightgrey")
    ax.imshow(np.ma.masked_invalid(logs), cmap=cmap, norm=TwoSlopeNorm(0.0, -bound, bound), aspect="auto")
    for r, kernel in enumerate(rows):
        for c, peer in enumerate(peers):
            value = grid[r, c]
            if np.isfinite(value):
                text = f"{value:.2f}" if value < 100 else f"{value:.0f}"
            else:
                res = results.get((kernel, peer))
                text = res.status if res is not None and r else "-"
            ax.text(c, r, text, ha="center", va="center", fontsize=8,
                    fontweight="bold" if r == 0 else "normal")
    ax.set_xticks(range(len(peers)), peers)
    ax.set_yticks(range(len(rows)), rows)
    ax.xaxis.tick_top()
    ax.axhline(0.5, color="black", linewidth=1.5)
    ax.set_title(title, fontsize=10, pad=28)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return None


# ================================================================ driver

class _Progress:
    """A tqdm progress bar when tqdm is installed, else one line per step on stderr."""

    def __init__(self, total):
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        self._bar = tqdm(total=total, file=sys.stderr, leave=False, dynamic_ncols=True) if tqdm else None
        self._done, self._total = 0, total

    def step(self, text):
        if self._bar is not None:
            self._bar.set_description(text)
        else:
            print(f"[{self._done + 1}/{self._total}] {text}", file=sys.stderr, flush=True)

    def advance(self):
        self._done += 1
        if self._bar is not None:
            self._bar.update(1)

    def write(self, text):
        if self._bar is not None:
            self._bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()


def run(kernel_dir, kernels, target, preset, peer_names, repeat, verbose=False, seed=0, budget_s=math.inf,
        timeout_s=math.inf, max_time_s=math.inf, min_runs=MIN_RUNS, on_kernel_done=None, suite=NPBENCH):
    """Validates and times every (kernel, peer); returns ({(kernel, peer):
    Result}, notes, names of the peers that ran). Each implementation but
    NumPy's gets at most `timeout_s` seconds (NumPy, the baseline and the
    reference, is limited by `max_time_s` alone: without it nothing of the
    kernel can be compared); once `max_time_s` seconds have passed since the
    start, the remaining pairs are skipped. `on_kernel_done(results)` is
    called after each kernel (to write partial results)."""
    all_peers = {p.name: p for p in [*peers_for(target), *optional_peers_for(target)]}
    unknown = [p for p in peer_names if p not in all_peers]
    if unknown:
        raise ValueError(f"unknown peer(s) {', '.join(unknown)} for target {target}; known: {', '.join(all_peers)}")
    if "numpy" not in peer_names:
        peer_names = ["numpy", *peer_names]
    notes, peers = [], []
    for name in peer_names:
        try:
            reason = all_peers[name].unavailable()
        except Exception as e:  # noqa: BLE001 -- a peer that cannot even start is skipped, not fatal
            reason = f"cannot start ({first_line(e)})"
        if reason:
            notes.append(f"peer {name} skipped: {reason}")
        else:
            peers.append(all_peers[name])
    rng = np.random.default_rng(seed)
    deadline = time.perf_counter() + max_time_s
    results = {}
    progress = _Progress(len(kernels) * len(peers))
    try:
        for kernel in kernels:
            module = load_kernel(kernel_dir, kernel, suite)
            progress.step(f"{kernel}: initialising {preset} and computing NumPy's outputs")
            setup_problem = None
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                setup_problem = ("skipped", "not run: --max-time reached")
            else:
                try:
                    with time_limit(remaining):
                        inputs = module.initialize(preset)
                        reference_seconds = []
                        references = numpy_references(module, preset, inputs, reference_seconds)
                except TimeLimitExceeded as e:
                    setup_problem = ("timeout", f"initialisation and NumPy's reference outputs: {e}")
                except Exception as e:  # noqa: BLE001 -- one kernel's broken set-up does not stop the suite
                    if verbose:
                        traceback.print_exc()
                    setup_problem = ("error", f"initialisation or NumPy's reference: {first_line(e)}")
            if setup_problem:
                for peer in peers:
                    results[(kernel, peer.name)] = Result(kernel, peer.name, *setup_problem)
                    progress.advance()
                progress.write(f"{kernel}: {setup_problem[0]}: {setup_problem[1]}")
                if on_kernel_done:
                    on_kernel_done(results)
                continue
            checksum = check_checksums(module, preset, references[0])
            if checksum:
                notes.append(f"{kernel}: NumPy output differs from the reference checksum: {checksum}")
            for peer in peers:
                progress.step(f"{kernel}: {peer.name}")
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    result = Result(kernel, peer.name, "skipped", "not run: --max-time reached")
                else:
                    is_numpy = isinstance(peer, NumpyPeer)
                    limit = remaining if is_numpy else min(timeout_s, remaining)
                    result = run_peer(peer, module, kernel, preset, inputs, references, repeat, rng, verbose,
                                      min(budget_s, remaining), limit, min_runs,
                                      reference_seconds if is_numpy else ())
                if peer.name == "numpy":
                    result.checksum = "mismatch" if checksum else "ok" if isinstance(preset, str) and \
                        getattr(module, "CHECKSUMS", {}).get(preset) else "none"
                results[(kernel, peer.name)] = result
                if not result.ok or result.note:
                    progress.write(f"{kernel}: {peer.name}: {result.status}: {result.note}")
                progress.advance()
            del inputs, references
            for peer in peers:
                try:
                    peer.release()
                except Exception:  # noqa: BLE001 -- freeing caches is best effort
                    pass
            if on_kernel_done:
                on_kernel_done(results)
    finally:
        progress.close()
    return results, notes, [p.name for p in peers]


def machine_description(target="cpu"):
    import plait

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    versions = [f"plait {plait.__version__}", f"numpy {np.__version__}"]
    for module_name in ("numba", "scipy", "cupy", "jax", "torch"):
        # Only the libraries that ran are named (importing one costs seconds).
        if module_name in sys.modules or module_name in ("numba", "scipy"):
            try:
                versions.append(f"{module_name} {importlib.import_module(module_name).__version__}")
            except ImportError:
                pass
    text = f"{platform.processor() or platform.machine()}, {cpus} CPUs, Python {platform.python_version()}, " + \
        ", ".join(versions)
    if target == "cuda":
        text += f"\nGPU: {gpu_description()}"
    return text


def gpu_description():
    """The GPU's name, memory and driver, from nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (nvidia-smi did not answer)"
    return out.splitlines()[0] if out else "unknown"


def main(argv=None, suite=NPBENCH, description=__doc__):
    parser = argparse.ArgumentParser(prog=f"python -m plait.bench {suite.name}",
                                     description=description.split("\n\n")[0])
    parser.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--preset", default="S", choices=list(suite.presets))
    parser.add_argument("--kernels", nargs="+", help="kernel names (comma or space separated); default: all")
    parser.add_argument("--peers", help="comma-separated peers; default: all of the target's peers")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per implementation (default 10)")
    parser.add_argument("--time-budget", type=float, default=120.0,
                        help="seconds of timed runs per implementation after which no more are started "
                             f"(at least {MIN_RUNS} runs; default 120)")
    parser.add_argument("--min-runs", type=int, default=MIN_RUNS,
                        help=f"timed runs made even past --time-budget (default {MIN_RUNS})")
    parser.add_argument("--timeout", type=float, default=math.inf,
                        help="seconds one implementation of one kernel may take, validation and timed runs "
                             "together; it is then interrupted (between Python statements) and reported as "
                             "TIMEOUT, or with the timed runs it made; NumPy, the baseline, is exempt "
                             "(default: no limit)")
    parser.add_argument("--max-time", type=float, default=math.inf,
                        help="seconds the whole suite may take; after it the remaining (kernel, peer) pairs are "
                             "skipped, and each implementation's --timeout and --time-budget are cut to the time "
                             "left (default: no limit)")
    parser.add_argument("--kernels-dir", help=f"the benchmarks/{suite.name} directory of a Plait checkout")
    parser.add_argument("--output-dir", default=".", help="where the CSV and the heatmap PNG go (default: .)")
    parser.add_argument("--verbose", action="store_true", help="print the traceback of each failing implementation")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.min_runs < 1:
        parser.error("--min-runs must be at least 1")
    try:
        kernel_dir = find_kernel_dir(args.kernels_dir, suite)
    except FileNotFoundError as e:
        parser.exit(2, f"error: {e}\n")
    package = kernel_package(kernel_dir, suite)
    kernels = [k for item in (args.kernels or []) for k in item.split(",") if k] or list(package.KERNELS)
    unknown = [k for k in kernels if k not in package.KERNELS]
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(package.KERNELS)}")
    peer_names = args.peers.split(",") if args.peers else [p.name for p in peers_for(args.target)]
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{suite.name}_{args.target}_{args.preset}"
    try:
        load_before = os.getloadavg()[0]
        results, notes, peers = run(
            kernel_dir, kernels, args.target, args.preset, peer_names, args.repeat, args.verbose,
            budget_s=args.time_budget, timeout_s=args.timeout, max_time_s=args.max_time, min_runs=args.min_runs,
            on_kernel_done=lambda partial: write_csv(stem.with_suffix(".csv"), partial, args.target, args.preset),
            suite=suite)
        load_after = os.getloadavg()[0]
    except ValueError as e:
        parser.error(str(e))
    title = f"{suite.title}, preset {args.preset}, target {args.target}: speedup over NumPy"
    print(f"\n{title}\n{machine_description(args.target)}\nload average (1 min) {load_before:.2f} before, "
          f"{load_after:.2f} after the run\n")
    print(format_table(results, kernels, peers))
    problems = [r for r in results.values() if not r.ok and r.status != "skipped"]
    if problems:
        print("\nNot timed:")
        for r in problems:
            print(f"  {r.kernel} / {r.peer}: {r.status}: {r.note}")
    for r in results.values():
        if r.ok and r.note:
            print(f"note: {r.kernel} / {r.peer}: {r.note}")
    for note in notes + [f"{r.kernel} / {r.peer}: {r.note}" for r in results.values() if r.status == "skipped"]:
        print(f"note: {note}")
    write_csv(stem.with_suffix(".csv"), results, args.target, args.preset)
    print(f"\nwrote {stem.with_suffix('.csv')}")
    why_not = draw_heatmap(stem.with_suffix(".png"), results, kernels, peers, title)
    print(f"note: {why_not}" if why_not else f"wrote {stem.with_suffix('.png')}")
    return 0
