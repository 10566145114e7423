"""What bounds checking costs: NPBench's kernels compiled with
boundscheck=True and with boundscheck=False, side by side in one run.

    python benchmarks/boundscheck_cost.py --target cpu --preset S
    python benchmarks/boundscheck_cost.py --target cuda --preset M --kernels gemm,syrk

Both versions of a kernel are first validated against NumPy on every
validation case of the kernel (plait.bench.npbench's method). They are then
timed in rounds: each round runs the checked and the unchecked version once
each, in an order that alternates from round to round (ABBA), on fresh copies
of the inputs made outside the timed call (on the device for the GPU, where
the call is followed by a synchronisation). The figure per kernel is the
median over rounds of the unchecked time divided by the checked time (above 1:
the checked version is faster), so that a noisy neighbour, which slows both
calls of a round alike, cancels out; the summary is their geometric mean.
"""

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import load_average, machine_lines, markdown_table  # noqa: E402

from plait.bench import npbench  # noqa: E402
from plait.bench.peers import PlaitPeer  # noqa: E402


def time_rounds(peers, fns, module, inputs, rounds, budget_s):
    """{name: [seconds per round]} for the peers' calls, `rounds` rounds or
    as many as fit in `budget_s` (at least three)."""
    times = {name: [] for name in peers}
    names = list(peers)
    spent = 0.0
    for r in range(rounds):
        if r >= 3 and spent > budget_s:
            break
        for name in names if r % 2 == 0 else reversed(names):
            peer = peers[name]
            args = peer.prepare(inputs, module.PARAMETERS)
            start = time.perf_counter()
            peer.call(fns[name], args)
            elapsed = time.perf_counter() - start
            times[name].append(elapsed)
            spent += elapsed
    return times


def measure_kernel(kernel_dir, name, target, preset, rounds, budget_s):
    """One table row for kernel `name`, or a row that says why it has none."""
    module = npbench.load_kernel(kernel_dir, name)
    peers = {"checked": PlaitPeer(target, boundscheck=True),
             "unchecked": PlaitPeer(target, boundscheck=False)}
    inputs = module.initialize(preset)
    references = npbench.numpy_references(module, preset, inputs)
    fns = {}
    for label, peer in peers.items():
        fns[label] = peer.implementation(module)
        if fns[label] is None:
            return [name, "-", "-", "-", "no Plait version"]
        problem = npbench.validate(peer, fns[label], module, preset, inputs, references)
        if problem:
            return [name, "-", "-", "-", f"{label}: {problem}"]
    times = time_rounds(peers, fns, module, inputs, rounds, budget_s)
    ratios = [u / c for c, u in zip(times["checked"], times["unchecked"])]
    return [name, npbench.format_time(statistics.median(times["checked"])),
            npbench.format_time(statistics.median(times["unchecked"])), f"{statistics.median(ratios):.3f}",
            f"{len(ratios)} rounds"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--preset", default="S", choices=["test", "S", "M", "L", "paper"])
    parser.add_argument("--kernels", help="comma-separated kernel names (default: all 20)")
    parser.add_argument("--rounds", type=int, default=40, help="timed rounds per kernel (default 40)")
    parser.add_argument("--budget", type=float, default=4.0,
                        help="seconds of timed calls per kernel after which no round starts (default 4)")
    args = parser.parse_args(argv)
    kernel_dir = npbench.find_kernel_dir()
    package = npbench.kernel_package(kernel_dir)
    kernels = [k for k in (args.kernels or "").split(",") if k] or list(package.KERNELS)
    unavailable = PlaitPeer(args.target).unavailable()
    if unavailable:
        sys.exit(f"target {args.target} unavailable: {unavailable}")
    print("\n".join(machine_lines([f"target {args.target}, preset {args.preset}"])))
    rows = [measure_kernel(kernel_dir, k, args.target, args.preset, args.rounds, args.budget) for k in kernels]
    ratios = [float(r[3]) for r in rows if r[3] != "-"]
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else math.nan
    rows.append(["geomean", "", "", f"{geo:.3f}", f"{len(ratios)} kernels"])
    print(markdown_table(["kernel", "checked", "unchecked", "unchecked / checked time", "note"], rows))
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
