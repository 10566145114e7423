"""Shared pieces of the benchmark scripts: timing (warm-up, median of
repetitions, bootstrap confidence interval), the STREAM-like triad that gives
the memory roof, a description of the machine, a markdown table printer and a
CSV writer."""

import csv
import os
import platform
import statistics
import time
from dataclasses import dataclass, field

import numpy as np

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
RESULTS_DIR = os.path.join(BENCH_DIR, "results")


@dataclass
class Timing:
    """Repeated wall-clock measurements of one callable, in nanoseconds."""

    samples_ns: list = field(default_factory=list)

    @property
    def median_ns(self):
        return statistics.median(self.samples_ns)

    @property
    def median_ms(self):
        return self.median_ns / 1e6

    def ci95_ns(self, resamples=2000, seed=0):
        """Bootstrap 95% confidence interval of the median: the 2.5th and
        97.5th percentiles of the medians of resamples drawn with replacement."""
        samples = np.asarray(self.samples_ns, dtype=np.float64)
        if samples.size < 2:
            return float(samples[0]), float(samples[0])
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, samples.size, size=(resamples, samples.size))
        medians = np.median(samples[picks], axis=1)
        low, high = np.percentile(medians, [2.5, 97.5])
        return float(low), float(high)

    def ci95_ms(self):
        low, high = self.ci95_ns()
        return low / 1e6, high / 1e6


def time_once_ns(fn, *args):
    start = time.perf_counter_ns()
    fn(*args)
    return time.perf_counter_ns() - start


def measure(fn, *args, repeat=10, warmup=1):
    """Calls fn(*args) `warmup` times untimed (the first call compiles), then
    `repeat` times, each timed with perf_counter_ns."""
    for _ in range(warmup):
        fn(*args)
    timing = Timing()
    for _ in range(repeat):
        timing.samples_ns.append(time_once_ns(fn, *args))
    return timing


def measure_interleaved(calls, repeat=10, warmup=1):
    """Times several implementations of one kernel in rounds (each round calls
    every implementation once), so that a noisy neighbour on a shared machine
    slows all of them alike rather than whichever ran during the noise.
    `calls` maps a name to a zero-argument callable; returns name -> Timing."""
    for call in calls.values():
        for _ in range(warmup):
            call()
    timings = {name: Timing() for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            timings[name].samples_ns.append(time_once_ns(call))
    return timings


def measure_per_call_ns(fn, args, calls=100_000, batch=1000):
    """Per-call time of a fast callable: `calls` calls in batches of `batch`,
    each batch timed as a whole (perf_counter_ns itself costs tens of ns, too
    much to time single calls of a microsecond); the Timing holds one
    per-call value per batch."""
    for _ in range(batch):
        fn(*args)
    timing = Timing()
    for _ in range(max(1, calls // batch)):
        start = time.perf_counter_ns()
        for _ in range(batch):
            fn(*args)
        timing.samples_ns.append((time.perf_counter_ns() - start) / batch)
    return timing


def format_ms(timing):
    """'12.345 [12.1, 12.6]': the median and its 95% interval in ms."""
    low, high = timing.ci95_ms()
    return f"{timing.median_ms:.3f} [{low:.3f}, {high:.3f}]"


# --- memory roof --------------------------------------------------------------


def triad_numpy(a, b, c, s):
    """a = b + s*c, as NumPy evaluates it (into a, without a temporary)."""
    np.multiply(c, s, out=a)
    a += b


def triad_gbps(timing, n, itemsize=8):
    """STREAM convention: 3 arrays of n elements moved per triad (read b and
    c, write a); write-allocate traffic and NumPy's extra passes are not
    counted, so this is the bandwidth a one-pass loop achieves."""
    return 3 * n * itemsize / timing.median_ns


def measure_triad(n, repeat, kernels):
    """Triad bandwidth in GB/s with NumPy and with each of `kernels`
    (name -> fn(a, b, c, s) doing a = b + s*c). Arrays of n float64."""
    rng = np.random.default_rng(1)
    b = rng.random(n)
    c = rng.random(n)
    s = 3.0
    expected = b + s * c
    results = {}
    for name, fn in [("NumPy", triad_numpy)] + list(kernels.items()):
        a = np.zeros(n)
        fn(a, b, c, s)
        if not np.allclose(a, expected, rtol=1e-12, atol=0):
            raise AssertionError(f"triad with {name} gives wrong values")
        timing = measure(fn, a, b, c, s, repeat=repeat, warmup=1)
        results[name] = (triad_gbps(timing, n), timing)
    return results


# --- the machine ----------------------------------------------------------------


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cpus():
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def load_average():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "n/a"


def machine_lines(extra=()):
    """Lines describing where a benchmark ran, printed above its tables."""
    lines = [
        f"machine: {cpu_model()}, {usable_cpus()} usable CPUs, {platform.system()} {platform.release()}",
        f"python {platform.python_version()}, numpy {np.__version__}",
        f"load average at start: {load_average()}",
    ]
    omp = {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "GOMP_", "PLAIT_", "NUMBA_NUM"))}
    if omp:
        lines.append("environment: " + " ".join(f"{k}={v}" for k, v in sorted(omp.items())))
    lines.extend(extra)
    return lines


# --- output ----------------------------------------------------------------------


def markdown_table(headers, rows):
    """A markdown table with columns padded to equal width; numbers are
    right-aligned, text left-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def numeric(text):
        return text[:1].isdigit() or text[:1] in "-[" and text[1:2].isdigit()

    def line(row):
        padded = [c.rjust(w) if numeric(c) else c.ljust(w) for c, w in zip(row, widths)]
        return "| " + " | ".join(padded) + " |"

    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), separator] + [line(r) for r in cells[1:]])


def write_csv(path, headers, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(headers)
        writer.writerows(rows)

