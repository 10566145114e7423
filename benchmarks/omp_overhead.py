"""The fixed cost of one parallel region of a Plait kernel, and of one step
of a time loop that runs as a parallel region, under different OpenMP
runtime (libgomp) settings, with the other cores idle and busy.

Each setting runs in its own process, because libgomp reads its environment
once, when the first kernel library loads it; the processes set
PLAIT_PARALLEL_THRESHOLD=0 so that every parallel loop starts its team. A
process calls cached kernels that add 1 to a float64[threads, 32] array row
by row: one with a `#pragma parallel for` over the rows and one without (the
region cost is the difference of their median call times), and one that
repeats the parallel loop STEPS times inside a serial loop, which Plait runs
as one parallel region with an `omp for` per step (the step cost is its time
per step minus the serial kernel's). It times back-to-back calls, and calls
separated by 100 us of Python work (where idle worker threads either still
spin or already sleep), and reports how much CPU the process burns during
those gaps (100% = one core; spinning workers show up here as load that
other programs feel). "busy" runs the same with one spinning background
process per usable CPU minus one, i.e. the other core(s) busy.

    python benchmarks/omp_overhead.py          # about two minutes
    python benchmarks/omp_overhead.py --rounds 5
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import plait

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
GAP_S = 100e-6
PHASE_S = 0.15  # timing the parallel kernels; the serial one is steadier and gets half

STEPS = 50

# (label, variables set, variables removed after `import plait` and before
# the first kernel loads libgomp; plait's import sets its default policy
# when GOMP_SPINCOUNT and OMP_WAIT_POLICY are unset, so libgomp's own
# defaults need the removal).
SETTINGS = [
    (f"plait default ({plait._DEFAULT_OMP_SETTING})", {}, []),
    ("libgomp default (nothing set)", {}, ["GOMP_SPINCOUNT", "OMP_WAIT_POLICY"]),
    ("OMP_WAIT_POLICY=active", {"OMP_WAIT_POLICY": "active"}, ["GOMP_SPINCOUNT"]),
    ("OMP_WAIT_POLICY=passive", {"OMP_WAIT_POLICY": "passive"}, ["GOMP_SPINCOUNT"]),
    ("GOMP_SPINCOUNT=1000", {"GOMP_SPINCOUNT": "1000"}, ["OMP_WAIT_POLICY"]),
    ("GOMP_SPINCOUNT=3000", {"GOMP_SPINCOUNT": "3000"}, ["OMP_WAIT_POLICY"]),
    ("GOMP_SPINCOUNT=10000", {"GOMP_SPINCOUNT": "10000"}, ["OMP_WAIT_POLICY"]),
    ("GOMP_SPINCOUNT=30000", {"GOMP_SPINCOUNT": "30000"}, ["OMP_WAIT_POLICY"]),
]


@plait.jit
def region_kernel(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] += 1.0


@plait.jit
def serial_kernel(a):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] += 1.0


@plait.jit
def steps_kernel(a, steps):
    for t in range(steps):
        #pragma parallel for
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                a[i, j] += 1.0


def steps_call(a):
    steps_kernel(a, STEPS)


def kernel_array():
    """The 2-D array of the kernels: one row per thread."""
    return np.zeros((region_kernel.num_threads, 32))


def libgomp_loaded():
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return False


def call_times_us(fn, a, gap_s, phase_s=PHASE_S):
    """Per-call times (us) of fn(a) over phase_s seconds, with gap_s of busy
    Python work before each call; also the process CPU use during the phase
    as a percentage of one core."""
    times = []
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall_start < phase_s or len(times) < 5:
        if gap_s:
            until = time.perf_counter() + gap_s
            while time.perf_counter() < until:
                pass
        start = time.perf_counter_ns()
        fn(a)
        times.append((time.perf_counter_ns() - start) / 1e3)
    cpu_pct = 100 * (time.process_time() - cpu_start) / (time.perf_counter() - wall_start)
    return times, cpu_pct


def child(remove):
    for name in remove:
        os.environ.pop(name, None)
    loaded_early = libgomp_loaded()
    a = kernel_array()
    region_kernel(a)  # loads libgomp with this process's settings
    serial_kernel(a)
    steps_call(a)
    result = {"libgomp_loaded_early": loaded_early, "threads": region_kernel.num_threads}
    for label, gap in (("b2b", 0.0), ("gap", GAP_S)):
        serial, serial_cpu = call_times_us(serial_kernel, a, gap, PHASE_S / 2)
        region, region_cpu = call_times_us(region_kernel, a, gap)
        steps, _ = call_times_us(steps_call, a, gap)
        result[label] = {
            "step_us": statistics.median(steps) / STEPS,
            "serial_us": statistics.median(serial),
            "region_us": statistics.median(region),
            "region_p90_us": float(np.percentile(region, 90)),
            "serial_cpu_pct": serial_cpu,
            "region_cpu_pct": region_cpu,
        }
    print(json.dumps(result))


def run_setting(variables, remove):
    env = dict(os.environ)
    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_DYNAMIC"):
        env.pop(name, None)
    env.update(variables)
    env["PLAIT_PARALLEL_THRESHOLD"] = "0"
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", ",".join(remove)],
                          env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"child failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def start_spinners(count):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_spinners(spinners):
    for proc in spinners:
        proc.kill()
        proc.wait()


def median_over_rounds(results, path):
    """The median over rounds of one number in the child results, e.g.
    path ("b2b", "region_us")."""
    values = []
    for r in results:
        for key in path:
            r = r[key]
        values.append(r)
    return statistics.median(values)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3,
                        help="processes per setting and load, run in rounds so that a noisy moment on a shared "
                             "machine hits one round, not one setting (default 3)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child([name for name in args.child.split(",") if name])
        return 0

    sys.path.insert(0, BENCH_DIR)
    import common

    # Compiled once here; the measuring processes find the kernels in the
    # disk cache (a temporary one, unless PLAIT_CACHE_DIR is set).
    own_cache = "PLAIT_CACHE_DIR" not in os.environ
    if own_cache:
        os.environ["PLAIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="plait-omp-bench-")
    a = kernel_array()
    region_kernel(a)
    serial_kernel(a)
    steps_call(a)

    cpus = common.usable_cpus()
    for line in common.machine_lines([f"plait {plait.__version__}, {region_kernel.num_threads} threads per "
                                       f"parallel region, {args.rounds} rounds"]):
        print(line)
    results = {}  # (setting label, load) -> child results, one per round
    for round_number in range(args.rounds):
        for load in ("idle", "busy"):
            spinners = start_spinners(max(1, cpus - 1)) if load == "busy" else []
            try:
                for label, variables, remove in SETTINGS:
                    results.setdefault((label, load), []).append(run_setting(variables, remove))
            finally:
                stop_spinners(spinners)
        print(f"  round {round_number + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    if own_cache:
        import shutil

        shutil.rmtree(os.environ["PLAIT_CACHE_DIR"], ignore_errors=True)

    rows = []
    for (label, load), rs in results.items():
        m = lambda *path: median_over_rounds(rs, path)  # noqa: E731
        early = any(r["libgomp_loaded_early"] for r in rs)
        rows.append([
            label + (" (libgomp was loaded early!)" if early else ""), load,
            f"{m('b2b', 'region_us'):.1f}", f"{m('b2b', 'region_p90_us'):.1f}", f"{m('b2b', 'serial_us'):.2f}",
            f"{m('b2b', 'region_us') - m('b2b', 'serial_us'):.1f}",
            f"{m('gap', 'region_us'):.1f}", f"{m('gap', 'region_p90_us'):.1f}",
            f"{m('gap', 'region_us') - m('gap', 'serial_us'):.1f}",
            f"{m('gap', 'serial_cpu_pct'):.0f}%", f"{m('gap', 'region_cpu_pct'):.0f}%",
            f"{m('b2b', 'step_us'):.2f}", f"{m('gap', 'step_us'):.2f}",
        ])
    rows.sort(key=lambda row: row[1] != "idle")
    print(f"\nCall times in us of a kernel updating float64[{cpus}, 32] by rows: medians (and 90th percentiles) "
          f"within a process, then the median over {args.rounds} rounds. Region cost = parallel minus serial. "
          f"b2b: back-to-back calls; gap: calls after {GAP_S * 1e6:.0f} us of Python work each. "
          "Gap CPU = process CPU time / wall time during the gapped calls of each kernel (100% = one core): "
          "the serial kernel's figure is the calling thread alone (below 100% when the machine is "
          "oversubscribed); what the parallel kernel adds is worker threads spinning. Step: the time per step "
          f"of a {STEPS}-step time loop run as one parallel region (one `omp for` and its barrier per step; "
          "the work of a step is a few nanoseconds), back-to-back and gapped calls.")
    print(common.markdown_table(
        ["setting", "other cores", "b2b parallel", "b2b p90", "b2b serial", "b2b region cost",
         "gap parallel", "gap p90", "gap region cost", "gap CPU serial", "gap CPU parallel", "b2b step", "gap step"], rows))
    print(f"\nload average at end: {common.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
