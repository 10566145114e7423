"""First-call compile time and disk-cache hit time of Plait kernels, each
measured in a new Python process.

For each kernel: a process with PLAIT_CACHE_DIR set to a new, empty directory
calls the kernel once (this compiles it: the system C++ compiler runs), then a
second process with the same directory calls it once (a disk-cache hit: the
library is loaded, nothing is compiled). Each process reports the time from
just before its first call to just after that call returns; interpreter start
and `import numpy, plait` are reported apart.

    python benchmarks/compile_time.py                      # spmv, 3 times
    python benchmarks/compile_time.py --kernels all --repeat 1
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))


def child(name):
    """Runs in the measured process: one first call of kernel `name` on small
    inputs; prints a JSON line with the timings."""
    start = time.perf_counter()
    import numpy as np

    import plait

    import_s = time.perf_counter() - start
    sys.path.insert(0, BENCH_DIR)
    sys.modules["numba"] = None  # loops.py then leaves Numba out: it is not measured here
    import loops

    kernel = next(k for k in loops.kernels(quick=True) if k.name == name)
    args = kernel.make_args(np.random.default_rng(0))
    start = time.perf_counter()
    kernel.plait(*args)
    first_call_s = time.perf_counter() - start
    print(json.dumps({
        "import_s": import_s,
        "first_call_s": first_call_s,
        "from_disk_cache": bool(kernel.plait.from_disk_cache()),
        "plait": plait.__version__,
    }))


def run_child(name, cache_dir):
    env = dict(os.environ, PLAIT_CACHE_DIR=cache_dir)
    env.pop("PLAIT_DISABLE_JIT", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name], env=env,
                          capture_output=True, text=True, timeout=600)
    process_s = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"measuring {name} failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = process_s
    return result


def measure_fresh_processes(name, repeat=1):
    """Medians over `repeat` trials of: the first call in a process with an
    empty cache (compile_s), the first call in a second process with the same
    cache (cache_hit_s), the second process's import of plait (import_s) and
    its whole run, interpreter start included (cache_hit_process_s)."""
    compiles, hits, imports, processes, hit_flags, miss_flags = [], [], [], [], [], []
    for _ in range(repeat):
        cache_dir = tempfile.mkdtemp(prefix="plait-bench-cache-")
        try:
            first = run_child(name, cache_dir)
            second = run_child(name, cache_dir)
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        compiles.append(first["first_call_s"])
        hits.append(second["first_call_s"])
        imports.append(second["import_s"])
        processes.append(second["process_s"])
        miss_flags.append(not first["from_disk_cache"])
        hit_flags.append(second["from_disk_cache"])
    return {
        "compile_s": statistics.median(compiles),
        "cache_hit_s": statistics.median(hits),
        "import_s": statistics.median(imports),
        "cache_hit_process_s": statistics.median(processes),
        "first_compiled": all(miss_flags),
        "second_from_disk_cache": all(hit_flags),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", default="spmv", help="comma-separated kernels of loops.py, or all")
    parser.add_argument("--repeat", type=int, default=3, help="trials per kernel (each with a new cache directory)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)  # before anything imports plait: the child times that import
        return 0

    sys.path.insert(0, BENCH_DIR)
    import common
    import loops

    names = [k.name for k in loops.kernels(quick=True)]
    selected = names if args.kernels == "all" else [n.strip() for n in args.kernels.split(",") if n.strip()]
    unknown = sorted(set(selected) - set(names))
    if unknown:
        parser.error(f"unknown kernels: {', '.join(unknown)}; known: {', '.join(names)}")

    for line in common.machine_lines([f"compiler: {os.environ.get('PLAIT_CXX') or 'the system C++ compiler'}"]):
        print(line)
    rows = []
    for name in selected:
        r = measure_fresh_processes(name, args.repeat)
        flags = [] if r["first_compiled"] else ["first process found a cache entry"]
        flags += [] if r["second_from_disk_cache"] else ["second process did not hit the cache"]
        rows.append([name, f"{r['compile_s']:.3f}", f"{r['cache_hit_s'] * 1e3:.1f}", f"{r['import_s'] * 1e3:.1f}",
                     f"{r['cache_hit_process_s']:.3f}", "; ".join(flags) or "ok"])
    print(f"\nMedians of {args.repeat} trial(s); the first call is timed from just before it to just after it returns.")
    print(common.markdown_table(
        ["kernel", "compile s (empty cache)", "cache hit ms (new process)", "import numpy+plait ms",
         "whole cache-hit process s", "check"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
