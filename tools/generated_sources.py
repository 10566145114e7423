"""Writes what plaitc generates for every kernel the tests and benchmarks
compile, one file per kernel, signature, target and output, so that a change
meant to preserve behaviour can be checked by comparing two runs:

    python tools/generated_sources.py /tmp/before --plaitc build/python/plaitc
    ... change, rebuild ...
    python tools/generated_sources.py /tmp/after --plaitc build/python/plaitc
    diff -r /tmp/before /tmp/after

The kernels: the NPBench kernels at their test preset's signature (CPU C++,
CUDA device and host parts, with and without bounds checks) and every case of
the KERNELS tables of tests/gpu (CUDA device and host parts, CPU C++, and
the remarks of both targets), and the sparse benchmark's operator programs
(both targets, the three fusion modes). A kernel plaitc refuses is recorded
with its error and exit status, so a change in what is refused shows too.
"""

import argparse
import importlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def npbench_jobs():
    import numpy as np

    from plait.bench import npbench

    codes = {np.dtype("float64"): "f64", np.dtype("float32"): "f32", np.dtype("int64"): "i64",
             np.dtype("int32"): "i32", np.dtype("uint32"): "u32", np.dtype("uint64"): "u64"}

    def signature_of(value):
        if isinstance(value, np.ndarray):
            return codes[value.dtype] + "[" + ", ".join([":"] * (value.ndim - 1) + ["::1"]) + "]"
        return {int: "int", float: "float", np.float64: "f64", np.int64: "i64", np.float32: "f32",
                np.int32: "i32"}[type(value)]

    directory = npbench.find_kernel_dir()
    for name in npbench.kernel_package(directory).KERNELS:
        module = npbench.load_kernel(directory, name)
        inputs = module.initialize("test")
        signature = ", ".join(signature_of(inputs[p]) for p in module.PARAMETERS)
        path = Path(directory) / (name + ".py")
        for target, emits in (("cpu", ["cpp"]), ("cuda", ["cpp", "cu"])):
            for checks in ("--boundscheck", "--no-boundscheck"):
                for emit in emits:
                    yield (f"npbench.{name}.{target}.{checks[2:]}.{emit}", path, "kernel_plait", signature,
                           [target, emit, checks])


def test_kernel_jobs():
    directory = ROOT / "tests" / "gpu"
    sys.path.insert(0, str(directory))
    for path in sorted(directory.glob("*_kernels.py")):
        if path.name.startswith("test_"):
            continue
        module = importlib.import_module(path.stem)
        for name, signatures in module.KERNELS.items():
            for k, signature in enumerate([signatures] if isinstance(signatures, str) else signatures):
                if not isinstance(signature, str):
                    continue
                for target, emit in (("cuda", "cu"), ("cuda", "cpp"), ("cpu", "cpp"), ("cuda", "remarks"),
                                     ("cpu", "remarks")):
                    yield f"{path.stem}.{name}.{k}.{target}.{emit}", path, name, signature, [target, emit]


# The sparse benchmark's programs (plait/bench/sparse.py) at a signature of
# float32 values with int32 indices and one of float64 values with int64
# indices (the products' right operands take the other), on both targets,
# in the three fusion modes.
SPARSE_SIGNATURES = {
    "spmv": "{csr}, {v}[::1]",
    "spmm_mm": "{csr}, {v}[:, ::1], {v}[:, ::1]",
    "sddmm": "{csr}, {v}[:, ::1], {v}[:, ::1]",
    "sddmm_spmm": "{csr}, {v}[:, ::1], {v}[:, ::1], {v}[:, ::1]",
    "softmax": "{csr}",
    "row_normalise": "{csr}",
    "add": "{csr}, {other}",
    "spgemm": "{csr}, {other}",
}


def sparse_jobs():
    path = ROOT / "python" / "plait" / "bench" / "sparse.py"
    for types, (v, i, w, j) in (("f32i32", ("f32", "i32", "f64", "i64")), ("f64i64", ("f64", "i64", "f32", "i32"))):
        for name, form in SPARSE_SIGNATURES.items():
            signature = form.format(csr=f"csr[{v}, {i}]", v=v, other=f"csr[{w}, {j}]")
            for fusion in ("partial", "maximal", "none"):
                for target, emit in (("cpu", "cpp"), ("cpu", "remarks"), ("cuda", "cu"), ("cuda", "cpp"),
                                     ("cuda", "remarks")):
                    yield (f"sparse.{name}.{types}.{fusion}.{target}.{emit}", path, name, signature,
                           [target, emit, "--fusion", fusion])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write into")
    parser.add_argument("--plaitc", default=str(ROOT / "build" / "python" / "plaitc"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    def run(job):
        file_name, path, function, signature, (target, emit, *flags) = job
        result = subprocess.run([args.plaitc, "compile", f"{path}::{function}", "--signature", signature, "--target",
                                 target, "--emit", emit, "--no-cache", *flags], capture_output=True, text=True)
        (args.out / file_name).write_text(f"{result.stdout}{result.stderr}\nexit status {result.returncode}\n")

    jobs = list(npbench_jobs()) + list(test_kernel_jobs()) + list(sparse_jobs())
    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(run, jobs))
    print(f"{len(jobs)} outputs in {args.out}")


if __name__ == "__main__":
    main()
