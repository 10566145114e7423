"""The fixed cost of one parallel region of a Plait kernel under different
OpenMP runtime (libgomp) settings, with the other cores idle and busy.

Each setting runs in its own process, because libgomp reads its environment
once, when the first kernel library loads it. A process calls two cached
kernels that update a float64[64] array, one with a `#pragma parallel for`
loop and one without; the region cost is the difference of their median
call times. It times back-to-back calls, and calls separated by 100 us of
Python work (where idle worker threads either still spin or already sleep),
and reports how much CPU the process burns during those gaps (100% = one
core; spinning workers show up here as load that other programs feel).
"busy" runs the same with one spinning background process per usable CPU
minus one, i.e. the other core(s) busy.

    python benchmarks/omp_overhead.py          # about 40 s
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
PHASE_S = 0.4

# (label, variables set, variables removed after `import plait` and before
# the first kernel loads libgomp; plait's import sets GOMP_SPINCOUNT when it
# is unset, so libgomp's own defaults need the removal).
SETTINGS = [
    ("plait default (GOMP_SPINCOUNT=10000 set by plait)", {}, []),
    ("libgomp default (nothing set)", {}, ["GOMP_SPINCOUNT", "OMP_WAIT_POLICY"]),
    ("OMP_WAIT_POLICY=active", {"OMP_WAIT_POLICY": "active"}, ["GOMP_SPINCOUNT"]),
    ("OMP_WAIT_POLICY=passive", {"OMP_WAIT_POLICY": "passive"}, ["GOMP_SPINCOUNT"]),
    ("GOMP_SPINCOUNT=0", {"GOMP_SPINCOUNT": "0"}, ["OMP_WAIT_POLICY"]),
    ("GOMP_SPINCOUNT=1000", {"GOMP_SPINCOUNT": "1000"}, ["OMP_WAIT_POLICY"]),
    ("GOMP_SPINCOUNT=100000", {"GOMP_SPINCOUNT": "100000"}, ["OMP_WAIT_POLICY"]),
]


@plait.jit
def region_kernel(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] += 1.0


@plait.jit
def serial_kernel(a):
    for i in range(a.shape[0]):
        a[i] += 1.0


def libgomp_loaded():
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return False


def call_times_us(fn, a, gap_s):
    """Per-call times (us) of fn(a) over PHASE_S seconds, with gap_s of busy
    Python work before each call; also the process CPU use during the phase
    as a percentage of one core."""
    times = []
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall_start < PHASE_S or len(times) < 5:
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
    a = np.zeros(64)
    region_kernel(a)  # loads libgomp with this process's settings
    serial_kernel(a)
    result = {"libgomp_loaded_early": loaded_early}
    for label, gap in (("b2b", 0.0), ("gap", GAP_S)):
        serial, serial_cpu = call_times_us(serial_kernel, a, gap)
        region, region_cpu = call_times_us(region_kernel, a, gap)
        result[label] = {
            "serial_us": statistics.median(serial),
            "region_us": statistics.median(region),
            "region_p90_us": float(np.percentile(region, 90)),
            "serial_cpu_pct": serial_cpu,
            "region_cpu_pct": region_cpu,
        }
    print(json.dumps(result))


def run_setting(variables, remove):
    env = dict(os.environ)
    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY"):
        env.pop(name, None)
    env.update(variables)
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    a = np.zeros(64)
    region_kernel(a)
    serial_kernel(a)

    cpus = common.usable_cpus()
    for line in common.machine_lines([f"plait {plait.__version__}, {cpus} threads per parallel region"]):
        print(line)
    rows = []
    for load in ("idle", "busy"):
        spinners = start_spinners(max(1, cpus - 1)) if load == "busy" else []
        try:
            for label, variables, remove in SETTINGS:
                r = run_setting(variables, remove)
                b2b, gap = r["b2b"], r["gap"]
                rows.append([
                    label + (" (libgomp was loaded early!)" if r["libgomp_loaded_early"] else ""), load,
                    f"{b2b['region_us']:.1f}", f"{b2b['region_p90_us']:.1f}", f"{b2b['serial_us']:.2f}",
                    f"{b2b['region_us'] - b2b['serial_us']:.1f}",
                    f"{gap['region_us']:.1f}", f"{gap['region_p90_us']:.1f}",
                    f"{gap['region_us'] - gap['serial_us']:.1f}", f"{gap['serial_cpu_pct']:.0f}%", f"{gap['region_cpu_pct']:.0f}%",
                ])
                print(f"  {load}: {label} done", file=sys.stderr, flush=True)
        finally:
            stop_spinners(spinners)
    if own_cache:
        import shutil

        shutil.rmtree(os.environ["PLAIT_CACHE_DIR"], ignore_errors=True)
    print(f"\nCall times in us (median, p90) of a kernel updating float64[64]; region cost = parallel minus "
          f"serial median. Back-to-back calls, then calls after {GAP_S * 1e6:.0f} us of Python work each; "
          "gap CPU = process CPU time / wall time during the gapped calls of each kernel (100% = one core): "
          "the calling thread's gap work alone gives the serial figure (below 100% when the machine is "
          "oversubscribed); what the parallel kernel adds is worker threads spinning.")
    print(common.markdown_table(
        ["setting", "other cores", "b2b parallel", "b2b p90", "b2b serial", "b2b region cost",
         "gap parallel", "gap p90", "gap region cost", "gap CPU serial", "gap CPU parallel"], rows))
    print(f"\nload average at end: {common.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
