"""The sparse benchmark suite at its tiny size: main() writes a CSV row per
kernel, data set and peer; a peer that raises, or whose version cannot be
made, is reported as n/a and the suite goes on; a wrong result fails
validation; the generated matrices are canonical and reproducible; the
PyTorch formulations match SciPy where PyTorch is installed."""

import csv
import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp

from plait.bench import sparse, sparse_data
from plait.bench.sparse_peers import ScipyPeer, TorchPeer, canonical


def _graphs_dir():
    try:
        return sparse_data.find_graphs_dir()
    except FileNotFoundError:
        return None


def test_main_writes_a_row_per_kernel_data_set_and_peer(tmp_path, capsys):
    # cora where the graphs are present (the smallest graph), and a tiny
    # synthetic matrix of each group.
    data = ["banded", "random_0.01"] + (["cora"] if _graphs_dir() else [])
    code = sparse.main(["--size", "tiny", "--peers", "scipy", "--time-budget", "1", "--repeat", "3",
                        "--data", ",".join(data), "--output-dir", str(tmp_path)])
    assert code == 0
    with open(tmp_path / "sparse_cpu_tiny_float32.csv") as f:
        rows = list(csv.DictReader(f))
    expected = {(k, d) for k in sparse.KERNELS for d in data
                if sparse_data.group_of(d) in sparse.KERNEL_GROUPS[k]}
    assert {(r["kernel"], r["data"]) for r in rows} == expected
    assert len(rows) == len(expected)
    for r in rows:
        assert r["peer"] == "scipy" and r["status"] == "ok", r
        assert float(r["median_s"]) > 0 and int(r["runs"]) >= 3 and int(r["nnz"]) > 0
    out = capsys.readouterr().out
    assert "softmax / random_0.01" in out and "spmm_mm / banded" in out


class RaisingPeer(ScipyPeer):
    name = "raising"

    def call(self, fn, args):
        raise RuntimeError("this peer always fails")


class UnbuildablePeer(ScipyPeer):
    """A peer whose version cannot be made, as plait.jit(fn, fusion=...)
    where the keyword does not exist."""

    name = "unbuildable"

    def implementation(self, kernel, fn):
        raise TypeError("jit() got an unexpected keyword argument 'fusion'")


class WrongPeer(ScipyPeer):
    name = "wrong"

    def implementation(self, kernel, fn):
        return lambda *args: 2 * fn(*args)


def test_a_failing_peer_is_reported_and_the_suite_goes_on():
    peers = [ScipyPeer(), RaisingPeer(), UnbuildablePeer(), WrongPeer()]
    results, shapes, notes, ran = sparse.run(["spmv", "row_normalise"], ["banded"], "tiny", np.float64, peers,
                                             repeat=3, budget_s=1.0)
    assert ran == ["scipy", "raising", "unbuildable", "wrong"] and not notes
    for kernel in ("spmv", "row_normalise"):
        assert results[(kernel, "banded", "scipy")].ok
        raising = results[(kernel, "banded", "raising")]
        assert raising.status == "n/a" and raising.note == "RuntimeError: this peer always fails"
        assert results[(kernel, "banded", "unbuildable")].note.startswith("TypeError: jit() got an unexpected")
        assert results[(kernel, "banded", "wrong")].status == "failed"
    table = sparse.format_table(results, sparse.pairs(["spmv", "row_normalise"], ["banded"]), ran, shapes)
    assert "n/a [1]" in table and "[1] n/a: RuntimeError: this peer always fails" in table
    assert "failed [" in table


def test_an_unavailable_peer_is_skipped_with_its_reason():
    class Missing(ScipyPeer):
        name = "missing"

        def unavailable(self):
            return "missing is not installed"

    _, _, notes, ran = sparse.run(["spmv"], ["banded"], "tiny", np.float64, [ScipyPeer(), Missing()], repeat=1)
    assert ran == ["scipy"] and notes == ["peer missing skipped: missing is not installed"]


def test_compare_accepts_reassociation_and_another_pattern_of_the_same_matrix():
    A = sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], dtype=np.float32))
    assert sparse.compare(canonical(A), canonical(A * (1 + 1e-6))) is None
    with_zero = sp.csr_array((np.array([1.0, 0.0, 2.0, 3.0], np.float32), np.array([0, 1, 2, 1]),
                              np.array([0, 3, 4])), shape=(2, 3))
    assert sparse.compare(canonical(A), canonical(with_zero)) is None
    assert "relative L2 error" in sparse.compare(canonical(A), canonical(A * 1.01))
    assert "another pattern" in sparse.compare(canonical(A), canonical(sp.csr_array(np.eye(2, 3, dtype=np.float32))))
    assert "dtype float64" in sparse.compare(canonical(A), canonical(A.astype(np.float64)))
    assert "dense" in sparse.compare(canonical(A), A.toarray())
    assert sparse.compare(np.ones(3), np.ones(3) + 1e-12) is None


def test_sampled_reference_matches_scipy():
    rng = np.random.default_rng(0)
    S = sparse_data.powerlaw(300, np.float64, rng)
    B, C = rng.standard_normal((300, 8)), rng.standard_normal((8, 300))
    assert sparse.compare(canonical(sparse.sddmm(S, B, C)), sparse.sampled_product(S, B, C)) is None


@pytest.mark.parametrize("name", sparse_data.SYNTHETIC + sparse_data.SOFTMAX)
def test_generated_matrices_are_canonical_and_reproducible(name):
    a = sparse_data.make_data(name, "tiny", np.float32, 3).matrix
    b = sparse_data.make_data(name, "tiny", np.float32, 3).matrix
    assert a.dtype == np.float32 and a.indices.dtype == a.indptr.dtype == np.int32
    copy = a.copy()
    copy.has_canonical_format = False
    copy.sum_duplicates()
    np.testing.assert_array_equal(copy.indices, a.indices)
    for x, y in ((a.data, b.data), (a.indices, b.indices), (a.indptr, b.indptr)):
        np.testing.assert_array_equal(x, y)
    if name in sparse_data.SYNTHETIC:
        assert a.shape == (1000, 1000) and 7000 < a.nnz < 13000
        assert np.all(np.diff(a.indptr) > 0)  # row_normalise divides by every row's sum
    else:
        density = sparse_data.DENSITIES[sparse_data.SOFTMAX.index(name)]
        assert a.shape == (256, 256) and abs(a.nnz / 256**2 - density) < 0.2 * density + 1e-3


def test_graphs_get_the_identity():
    graphs = _graphs_dir()
    if graphs is None:
        pytest.skip("the graphs folder (../shared/data/graphs) is not here")
    data = sparse_data.make_data("cora", "tiny", np.float32, 0, graphs)
    entry = sparse_data.graph_index(graphs)["cora"]
    assert data.matrix.nnz == entry["nnz"] + entry["nodes"]
    assert (data.features, data.classes) == (entry["features"], entry["classes"])
    np.testing.assert_array_equal(data.matrix.diagonal(), 1)


def test_graphs_dir_option_and_environment(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="no index.json"):
        sparse_data.find_graphs_dir(str(tmp_path))
    (tmp_path / "index.json").write_text("{}")
    monkeypatch.setenv(sparse_data.GRAPHS_ENV, str(tmp_path))
    assert sparse_data.find_graphs_dir() == tmp_path.resolve()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_versions_match_scipy_on_the_cpu():
    kernels = list(sparse.KERNELS)
    results, _, _, _ = sparse.run(kernels, ["powerlaw", "random_0.1"], "tiny", np.float32,
                                  [ScipyPeer(), TorchPeer("cpu")], repeat=1, min_runs=1)
    for (kernel, data, peer), r in results.items():
        assert r.ok, (kernel, data, peer, r.status, r.note)
