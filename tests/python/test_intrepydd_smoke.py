"""The Intrepydd applications (benchmarks/intrepydd) at a tiny size: each
one's Plait and Numba versions must match NumPy's outputs (within the
module's RTOL), with the invariants the specification states, and the suite
runs end to end through `python -m plait.bench intrepydd`."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import plait
from plait.bench import intrepydd, npbench
from plait.bench.peers import NumbaPeer, PlaitPeer

KERNEL_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "intrepydd"
KERNELS = npbench.kernel_package(KERNEL_DIR, intrepydd.INTREPYDD).KERNELS


def load(name):
    return npbench.load_kernel(KERNEL_DIR, name, intrepydd.INTREPYDD)


@pytest.mark.parametrize("preset", ["test", "S"])
@pytest.mark.parametrize("name", KERNELS)
def test_plait_matches_numpy(name, preset):
    module = load(name)
    inputs = module.initialize(preset)
    peer = PlaitPeer("cpu")
    problem = npbench.validate(peer, peer.implementation(module), module, preset, inputs,
                               npbench.numpy_references(module, preset, inputs))
    assert problem is None, problem


@pytest.mark.parametrize("name", KERNELS)
def test_plait_without_its_optional_passes_matches_numpy(name):
    # The ablation's columns (plait.bench.peers.ABLATIONS) at once: every
    # optional pass left out and sparse operators unfused.
    module = load(name)
    inputs = module.initialize("test")
    peer = PlaitPeer("cpu", name="plait_ablated", disable_passes=plait.optional_passes(), fusion="none")
    problem = npbench.validate(peer, peer.implementation(module), module, "test", inputs,
                               npbench.numpy_references(module, "test", inputs))
    assert problem is None, problem


@pytest.mark.parametrize("name", KERNELS)
def test_numba_matches_numpy(name):
    peer = NumbaPeer()
    if peer.unavailable():
        pytest.skip(peer.unavailable())
    module = load(name)
    inputs = module.initialize("test")
    problem = npbench.validate(peer, peer.implementation(module), module, "test", inputs,
                               npbench.numpy_references(module, "test", inputs))
    assert problem is None, problem


def test_bigclam_ascends():
    module = load("bigclam")
    inputs = module.initialize("S")
    ll = module.kernel_plait(inputs["A"], inputs["F"].copy(), inputs["sweeps"])
    assert ll[-1] > ll[0] and np.all(np.isfinite(ll))


def test_pr_nibble_keeps_its_invariants():
    # Each column's scores sum to at most 1 (the rest is residual) and are
    # non-negative; the seed scores highest in its own column.
    module = load("pr_nibble")
    inputs = module.initialize("S")
    scores = module.kernel_plait(*(inputs[k] for k in module.PARAMETERS))
    assert np.all(scores >= 0) and np.all(scores.sum(axis=0) <= 1.0 + 1e-12)
    assert np.all(np.argmax(scores, axis=0) == inputs["seeds"])


def test_changepoint_counts_the_cut_of_each_window():
    # R[o, s] is the number of tree edges with one end in [o, s]: the degrees
    # inside the window minus twice the edges inside it (the spec's check).
    module = load("changepoint")
    inputs = module.initialize("test")
    indptr, indices = inputs["indptr"], inputs["indices"]
    R, Z = module.kernel_plait(indptr, indices)
    degree = np.diff(indptr)
    rows = np.repeat(np.arange(degree.size), degree)
    rng = np.random.default_rng(0)
    for o, s in rng.integers(0, degree.size, (20, 2)):
        o, s = min(o, s), max(o, s)
        inside = np.sum((rows >= o) & (rows <= s) & (indices >= o) & (indices <= s)) // 2
        assert R[o, s] == degree[o:s + 1].sum() - 2 * inside
    assert np.all(np.isfinite(Z))


def test_ipnsw_finds_the_best_inner_products():
    # Recall@10 against brute force (the spec's figure for its small input:
    # 0.995) and fewer inner products than the brute force's.
    module = load("ipnsw")
    inputs = module.initialize("S")
    ids, calls = module.kernel_plait(*(inputs[k] for k in module.PARAMETERS))
    truth = np.argsort(-(inputs["queries"] @ inputs["data"].T), axis=1)[:, :10]
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, truth)])
    assert recall >= 0.95 and calls < inputs["queries"].shape[0] * inputs["data"].shape[0]


def test_the_suite_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "plait.bench", "intrepydd", "--preset", "test", "--repeat", "1",
         "--kernels-dir", str(KERNEL_DIR), "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "Intrepydd applications, preset test, target cpu" in result.stdout
    assert (tmp_path / "intrepydd_cpu_test.csv").is_file()


def test_sinkhorn_scores_the_query_lowest():
    # The query document is nearest to itself; every score is finite.
    module = load("sinkhorn_wmd")
    inputs = module.initialize("S")
    scores = module.kernel_plait(*(inputs[k] for k in module.PARAMETERS))
    assert np.all(np.isfinite(scores)) and np.argmin(scores) == module.QUERY


def test_ista_scores_are_non_negative_and_peak_at_the_seed():
    module = load("ista")
    inputs = module.initialize("S")
    scores = module.kernel_plait(*(inputs[k] for k in module.PARAMETERS))
    assert np.all(scores >= 0) and np.all(np.argmax(scores, axis=0) == inputs["seeds"])
