"""The NPBench suite at a tiny size: each kernel's Plait version must match
NumPy (returns and in/out arrays, and the extra validation inputs), NumPy's
outputs at preset S must match the reference checksums, and the harness's
validation must reject implementations that do nothing."""

from pathlib import Path

import numpy as np
import pytest

from plait.bench import npbench

KERNEL_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "npbench"
KERNELS = npbench.kernel_package(KERNEL_DIR).KERNELS

# Kernels whose Plait version fails because of an open entry in
# benchmarks/npbench/COMPILER_ISSUES.md; strict, so a fix shows up as XPASS.
KNOWN_COMPILER_ISSUES = {}


def _references(module, inputs, preset="test"):
    return npbench.numpy_references(module, preset, inputs)


@pytest.mark.parametrize("name", [
    pytest.param(k, marks=pytest.mark.xfail(reason=KNOWN_COMPILER_ISSUES[k], strict=True))
    if k in KNOWN_COMPILER_ISSUES else k for k in KERNELS])
def test_plait_matches_numpy(name):
    module = npbench.load_kernel(KERNEL_DIR, name)
    inputs = module.initialize("test")
    peer = npbench.PlaitPeer("cpu")
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
    problem = npbench.validate(npbench.NumpyPeer(), _do_nothing, module, "test", inputs,
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
