"""The NPBench suite at a tiny size: each kernel's Plait version must match
NumPy (returns and in/out arrays, and the extra validation inputs), NumPy's
outputs at preset S must match the reference checksums, and the harness's
validation must reject implementations that do nothing. The GPU peers'
versions are checked on the CPU: CuPy's with NumPy standing in for CuPy,
JAX's and PyTorch's on their CPU back-ends where they are installed. The
harness must report a failing, raising or overlong implementation and go on."""

import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from plait.bench import npbench
from plait.bench.peers import JaxPeer, NumpyPeer, Peer, PlaitPeer, TorchPeer

KERNEL_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "npbench"
KERNELS = npbench.kernel_package(KERNEL_DIR).KERNELS

# Kernels whose Plait version fails because of an open entry in
# benchmarks/npbench/COMPILER_ISSUES.md; strict, so a fix shows up as XPASS.
KNOWN_COMPILER_ISSUES = {}


# Kernels whose Plait version does not compile for the CUDA target, with the
# entry in COMPILER_ISSUES.md; strict, so a fix shows up as XPASS.
KNOWN_CUDA_COMPILER_ISSUES = {}
# The plaitc installed beside this Python (make test sets PLAIT_PLAITC to it).
PLAITC = Path(os.environ.get("PLAIT_PLAITC", Path(sys.executable).with_name("plaitc")))


def _references(module, inputs, preset="test"):
    return npbench.numpy_references(module, preset, inputs)


@pytest.mark.parametrize("name", [
    pytest.param(k, marks=pytest.mark.xfail(reason=KNOWN_COMPILER_ISSUES[k], strict=True))
    if k in KNOWN_COMPILER_ISSUES else k for k in KERNELS])
def test_plait_matches_numpy(name):
    module = npbench.load_kernel(KERNEL_DIR, name)
    inputs = module.initialize("test")
    peer = PlaitPeer("cpu")
    problem = npbench.validate(peer, peer.implementation(module), module, "test", inputs,
                               _references(module, inputs))
    assert problem is None, problem


def _do_nothing(*args):
    return None


@pytest.mark.parametrize("name", ["heat_3d", "trisolv"])
def test_validation_rejects_an_implementation_that_does_nothing(name):
    # heat_3d's standard input is a fixed point and NPBench never checks
    # trisolv's x: only the extra input and the x check catch these.
    module = npbench.load_kernel(KERNEL_DIR, name)
    inputs = module.initialize("test")
    problem = npbench.validate(NumpyPeer(), _do_nothing, module, "test", inputs,
                               _references(module, inputs))
    assert problem is not None


@pytest.mark.parametrize("name", KERNELS)
def test_numpy_outputs_match_the_reference_checksums_at_preset_S(name):
    module = npbench.load_kernel(KERNEL_DIR, name)
    outputs = _references(module, module.initialize("S"), "S")[0]
    assert npbench.check_checksums(module, "S", outputs) is None


def test_checksum_check_detects_a_wrong_output():
    module = npbench.load_kernel(KERNEL_DIR, "trisolv")
    outputs = _references(module, module.initialize("S"), "S")[0]
    assert npbench.check_checksums(module, "S", [o * 1.001 for o in outputs]) is not None


def test_table_has_speedups_and_a_geometric_mean():
    results = {}
    for kernel, times in (("a", (2.0, 1.0)), ("b", (8.0, 1.0))):
        for peer, t in zip(("numpy", "plait"), times):
            results[(kernel, peer)] = npbench.Result(kernel, peer, "ok", times=[t], median=t)
    table = npbench.format_table(results, ["a", "b"], ["numpy", "plait"])
    assert "2.00x" in table and "8.00x" in table
    assert "4.00x (2)" in table.splitlines()[-1]


def test_compare_uses_npbench_tolerances():
    ref = np.linspace(1.0, 2.0, 50)
    assert npbench.compare(ref, ref * (1 + 1e-7)) is None
    assert npbench.compare(ref, ref * (1 + 1e-3)) is not None
    assert npbench.compare(ref, ref.astype(np.float32)) is not None


# ================================================================ GPU peers, checked on the CPU

def _numpy_as_cupy():
    """A module named cupy that is NumPy (plus cupy.asnumpy): the CuPy
    versions are the NumPy code with cupy in place of numpy, so their logic
    runs on it."""
    shim = types.ModuleType("cupy")
    shim.__getattr__ = lambda name: getattr(np, name)
    shim.asnumpy = np.asarray
    return shim


@pytest.mark.parametrize("name", KERNELS)
def test_cupy_version_matches_numpy_with_numpy_standing_in_for_cupy(name, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _numpy_as_cupy())
    module = npbench.load_kernel(KERNEL_DIR, name)
    inputs = module.initialize("test")
    problem = npbench.validate(NumpyPeer(), module.kernel_cupy, module, "test", inputs,
                               _references(module, inputs))
    assert problem is None, problem


@pytest.mark.parametrize("name", KERNELS)
def test_jax_version_matches_numpy_on_the_cpu(name):
    pytest.importorskip("jax")
    module = npbench.load_kernel(KERNEL_DIR, name)
    inputs = module.initialize("test")
    peer = JaxPeer(require_gpu=False)
    assert peer.unavailable() is None
    problem = npbench.validate(peer, peer.implementation(module), module, "test", inputs,
                               _references(module, inputs))
    assert problem is None, problem


@pytest.mark.parametrize("name", KERNELS)
def test_torch_version_matches_numpy_on_the_cpu(name):
    pytest.importorskip("torch")
    module = npbench.load_kernel(KERNEL_DIR, name)
    inputs = module.initialize("test")
    peer = TorchPeer(False, device="cpu")
    problem = npbench.validate(peer, peer.implementation(module), module, "test", inputs,
                               _references(module, inputs))
    assert problem is None, problem


@pytest.mark.parametrize("name", [k for k in KERNELS
                                  if hasattr(npbench.load_kernel(KERNEL_DIR, k), "kernel_torch_compile")])
def test_torch_compile_version_matches_numpy_on_the_cpu(name):
    pytest.importorskip("torch")
    module = npbench.load_kernel(KERNEL_DIR, name)
    inputs = module.initialize("test")
    peer = TorchPeer(True, device="cpu")
    problem = npbench.validate(peer, peer.implementation(module), module, "test", inputs,
                               _references(module, inputs))
    assert problem is None, problem


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_has_each_gpu_peer_or_says_why_not(name):
    module = npbench.load_kernel(KERNEL_DIR, name)
    for attribute in ("kernel_cupy", "kernel_jax", "kernel_torch"):
        assert callable(getattr(module, attribute, None)), attribute
    assert hasattr(module, "kernel_torch_compile") != hasattr(module, "NO_TORCH_COMPILE")


_TYPE_CODES = {"float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32", "uint32": "u32", "bool": "bool"}


def _signature(module, inputs):
    """plaitc's signature for a call with `inputs` (C-contiguous arrays)."""
    def one(value):
        if isinstance(value, np.ndarray):
            return f"{_TYPE_CODES[value.dtype.name]}[{', '.join([':'] * (value.ndim - 1) + ['::1'])}]"
        return "i64" if isinstance(value, (int, np.integer)) else "f64"

    return ", ".join(one(inputs[p]) for p in module.PARAMETERS)


@pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
@pytest.mark.parametrize("name", [
    pytest.param(k, marks=pytest.mark.xfail(reason=KNOWN_CUDA_COMPILER_ISSUES[k], strict=True))
    if k in KNOWN_CUDA_COMPILER_ISSUES else k for k in KERNELS])
def test_plait_version_compiles_for_the_cuda_target(name, tmp_path):
    # The GPU runs compile the same kernel_plait with target="cuda"; this
    # emits its device part (no GPU or NVRTC needed).
    module = npbench.load_kernel(KERNEL_DIR, name)
    result = subprocess.run([str(PLAITC), "compile", f"{KERNEL_DIR / name}.py::kernel_plait",
                             "--signature", _signature(module, module.initialize("test")),
                             "--target", "cuda", "--emit", "cu", "-o", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "__global__" in (tmp_path / "kernel_plait.cu").read_text()


# ================================================================ the harness under failures

def _gemm():
    module = npbench.load_kernel(KERNEL_DIR, "gemm")
    inputs = module.initialize("test")
    return module, inputs, _references(module, inputs)


def _run_with(fn, **limits):
    module, inputs, references = _gemm()
    peer = Peer()
    peer.name = "under_test"
    peer.implementation = lambda module: fn
    return npbench.run_peer(peer, module, "gemm", "test", inputs, references, 3, np.random.default_rng(0),
                            False, **limits)


def _raises(alpha, beta, C, A, B):
    raise RuntimeError("device lost")


def _wrong(alpha, beta, C, A, B):
    C[:] = alpha * A @ B


def _slow(alpha, beta, C, A, B):
    end = time.perf_counter() + 5.0
    while time.perf_counter() < end:
        pass


def test_run_peer_reports_an_exception_a_wrong_result_and_a_timeout():
    raised = _run_with(_raises)
    assert (raised.status, raised.note) == ("error", "RuntimeError: device lost")
    assert _run_with(_wrong).status == "failed"
    start = time.perf_counter()
    slow = _run_with(_slow, timeout_s=0.2)
    assert slow.status == "timeout" and time.perf_counter() - start < 4.0
    assert _run_with(_gemm()[0].kernel_numpy).ok


def test_a_timeout_during_the_timed_runs_keeps_the_runs_made():
    calls = []

    def slower_each_call(alpha, beta, C, A, B):
        calls.append(None)
        if len(calls) > 2:  # validation and the first timed run are quick
            _slow(alpha, beta, C, A, B)
        C[:] = alpha * A @ B + beta * C

    result = _run_with(slower_each_call, timeout_s=0.5)
    assert result.ok and len(result.times) == 1 and "stopped after" in result.note


def test_time_limit_interrupts_a_python_loop_and_is_removed_afterwards():
    with pytest.raises(npbench.TimeLimitExceeded):
        with npbench.time_limit(0.05):
            while True:
                pass
    with npbench.time_limit(10.0):
        pass
    time.sleep(0.01)  # no alarm left behind


def test_max_time_skips_what_remains(tmp_path):
    results, _, peers = npbench.run(KERNEL_DIR, ["gemm", "trisolv"], "cpu", "test", ["numpy", "plait"], 3,
                                    max_time_s=0.0)
    assert peers == ["numpy", "plait"]
    assert {r.status for r in results.values()} == {"skipped"}
    assert all("--max-time" in r.note for r in results.values())


def test_cuda_target_runs_end_to_end_without_a_gpu(tmp_path, capsys):
    # Here no GPU peer can run: each is skipped with a note, NumPy still runs,
    # and the table and CSV are written.
    import plait

    if plait.cuda_available():
        pytest.skip("this machine has a GPU")
    code = npbench.main(["--target", "cuda", "--preset", "test", "--kernels", "gemm,jacobi_1d", "--repeat", "3",
                         "--peers", "numpy,cupy,jax,torch,torch_compile,plait", "--timeout", "60",
                         "--output-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "| gemm" in out and "| jacobi_1d" in out
    for peer in ("cupy", "jax", "torch", "torch_compile", "plait"):
        assert f"peer {peer} skipped" in out
    rows = (tmp_path / "npbench_cuda_test.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[1].startswith("gemm,test,cuda,numpy,ok")


def test_numpy_reference_run_counts_as_its_first_timed_run():
    module, inputs, _ = _gemm()
    seconds = []
    npbench.numpy_references(module, "test", inputs, seconds)
    assert len(seconds) == 1 and seconds[0] > 0
    # A reference run longer than the budget is NumPy's only run (preset paper).
    peer = NumpyPeer()
    result = npbench.run_peer(peer, module, "gemm", "test", inputs, npbench.numpy_references(module, "test", inputs),
                              10, np.random.default_rng(0), False, budget_s=0.5, min_runs=1, first_times=[0.75])
    assert result.ok and result.times == [0.75]
    # A short one is one of the runs.
    result = npbench.run_peer(peer, module, "gemm", "test", inputs, [], 10, np.random.default_rng(0), False,
                              first_times=[1e-4])
    assert result.ok and result.times[0] == 1e-4 and len(result.times) >= 10
