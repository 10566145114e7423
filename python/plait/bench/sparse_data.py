"""The sparse matrices of `python -m plait.bench sparse`: nine graphs read
from disk and synthetic matrices generated from a fixed seed.

Graphs: NAME.npz in the graphs folder (its README.md; index.json gives each
graph's nodes, non-zeros, features and classes), symmetric binary adjacency
matrices without self-loops. Some have isolated nodes (citeseer, amazon_*),
whose rows are empty; the suite adds the identity (GCN's A + I), so that
every row has an entry and row normalisation divides by no zero sum.

Synthetic, at size full (small: rows and non-zeros / 10, tiny: / 100):
  banded      1e5 rows, the 10 columns i-5 .. i+4 of row i (the diagonal
              included, clipped at the borders): about 1e6 non-zeros
  powerlaw    1e5 rows whose lengths follow a Zipf law (exponent 2, scaled
              to 10 per row on average, at least 1), columns uniform and
              distinct within a row: about 1e6 non-zeros
  random_D    16384 x 16384 (small: 4096, tiny: 256), each entry stored with
              probability D, for D in 0.001, 0.01, 0.1, 0.5, 0.9: the
              matrices of sparse softmax (attention scores), values normal
Values of banded and powerlaw are uniform in [0.5, 1.5): row sums stay away
from zero.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GRAPHS_ENV = "PLAIT_GRAPHS_DIR"
SIZES = {"full": 1, "small": 10, "tiny": 100}   # divisor of the synthetic rows
SYNTHETIC = ("banded", "powerlaw")
SYNTHETIC_ROWS = 100_000
ROW_LENGTH = 10
DENSITIES = (0.001, 0.01, 0.1, 0.5, 0.9)
SOFTMAX_ROWS = {"full": 16384, "small": 4096, "tiny": 256}
SOFTMAX = tuple(f"random_{d}" for d in DENSITIES)
GROUPS = ("graphs", "synthetic", "softmax")
# Synthetic dense shapes of spmm_mm, A @ X @ W (X: N x H, W: H x J); a
# graph's are its feature and class counts.
SYNTHETIC_FEATURES, SYNTHETIC_CLASSES = 256, 16


@dataclass
class DataSet:
    name: str
    group: str         # "graphs", "synthetic" or "softmax"
    matrix: object     # scipy.sparse.csr_array, canonical
    features: int      # H of spmm_mm
    classes: int       # J of spmm_mm


# ================================================================ finding the graphs

def find_graphs_dir(explicit=None):
    """The graphs folder: `explicit`, else $PLAIT_GRAPHS_DIR, else
    ../shared/data/graphs beside the repository that holds the current
    directory or this file (the main checkout's, for a linked worktree), or
    beside the current directory."""
    candidate = explicit or os.environ.get(GRAPHS_ENV)
    if candidate:
        path = Path(candidate)
        if not (path / "index.json").is_file():
            raise FileNotFoundError(f"{path} does not hold the graphs (no index.json)")
        return path.resolve()
    tried = []
    here = Path.cwd().resolve()
    for base in (*_checkout_roots(here), *_checkout_roots(Path(__file__).resolve().parent), here):
        path = base.parent / "shared" / "data" / "graphs"
        if path in tried:
            continue
        tried.append(path)
        if (path / "index.json").is_file():
            return path
    raise FileNotFoundError(
        f"no graphs folder (index.json and NAME.npz) found at {', '.join(map(str, tried))}: "
        f"pass --graphs DIR or set {GRAPHS_ENV}")


def _checkout_roots(start):
    """The root of the git checkout holding `start` and, when it is a linked
    worktree (.git is a file naming the git directory), the main checkout's
    root, where the shared data sit beside it."""
    for directory in (start, *start.parents):
        marker = directory / ".git"
        if marker.is_dir():
            return [directory]
        if marker.is_file():
            roots = [directory]
            text = marker.read_text().strip()
            if text.startswith("gitdir:"):
                gitdir = (directory / text[len("gitdir:"):].strip()).resolve()
                common = gitdir / "commondir"
                common_dir = (gitdir / common.read_text().strip()).resolve() if common.is_file() else gitdir
                roots.append(common_dir.parent)
            return roots
    return []


def graph_index(graphs_dir):
    """{name: {"nodes", "nnz", "features", "classes", ...}} from index.json."""
    with open(Path(graphs_dir) / "index.json") as f:
        return json.load(f)


# ================================================================ making the matrices

def group_of(name):
    """The group of data set `name`: any name but the generated ones is a graph's."""
    return "synthetic" if name in SYNTHETIC else "softmax" if name in SOFTMAX else "graphs"


def data_names(graph_names):
    """Every data set's name, grouped: graphs, synthetic, softmax."""
    return {"graphs": list(graph_names), "synthetic": list(SYNTHETIC), "softmax": list(SOFTMAX)}


def make_data(name, size, dtype, seed, graphs_dir=None):
    """The data set `name` at `size` ("full", "small" or "tiny") with values
    of `dtype`; generated ones from np.random.default_rng([seed, i]). Index
    arrays are int32 where the sizes fit, as SciPy makes them, for every
    data set alike."""
    data = _make(name, size, np.dtype(dtype), seed, graphs_dir)
    A = data.matrix
    if max(A.nnz, *A.shape) < 2**31:
        A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int32)
    return data


def _make(name, size, dtype, seed, graphs_dir):
    if name in SYNTHETIC:
        rng = np.random.default_rng([seed, SYNTHETIC.index(name)])
        rows = SYNTHETIC_ROWS // SIZES[size]
        matrix = banded(rows, dtype, rng) if name == "banded" else powerlaw(rows, dtype, rng)
        return DataSet(name, "synthetic", matrix, SYNTHETIC_FEATURES, SYNTHETIC_CLASSES)
    if name in SOFTMAX:
        rng = np.random.default_rng([seed, len(SYNTHETIC) + SOFTMAX.index(name)])
        density = DENSITIES[SOFTMAX.index(name)]
        return DataSet(name, "softmax", random_uniform(SOFTMAX_ROWS[size], density, dtype, rng), 0, 0)
    if graphs_dir is None:
        raise ValueError(f"{name!r} is not a synthetic data set, and no graphs folder was given")
    index = graph_index(graphs_dir)
    if name not in index:
        raise ValueError(f"unknown data set {name!r}; graphs: {', '.join(index)}; "
                         f"synthetic: {', '.join(SYNTHETIC + SOFTMAX)}")
    entry = index[name]
    return DataSet(name, "graphs", load_graph(graphs_dir, name, entry, dtype), entry["features"], entry["classes"])


def load_graph(graphs_dir, name, entry, dtype):
    """The graph's adjacency matrix plus the identity, as a canonical
    csr_array of `dtype`; the file must match index.json's `entry`."""
    import scipy.sparse as sp

    with np.load(Path(graphs_dir) / f"{name}.npz") as z:
        indices, indptr, shape = z["indices"], z["indptr"], tuple(int(s) for s in z["shape"])
    if shape != (entry["nodes"], entry["nodes"]) or len(indices) != entry["nnz"]:
        raise ValueError(f"{name}.npz holds a {shape} matrix with {len(indices)} entries; index.json says "
                         f"{entry['nodes']} nodes and {entry['nnz']} non-zeros")
    A = sp.csr_array((np.ones(len(indices), dtype=dtype), indices, indptr), shape=shape)
    A = (A + sp.eye_array(shape[0], dtype=dtype, format="csr")).tocsr()
    A.sum_duplicates()
    return A


def _csr(counts, cols, values, shape):
    """A canonical csr_array from the entries' row lengths and columns, in
    row order and sorted within each row, without duplicates."""
    import scipy.sparse as sp

    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    A = sp.csr_array((values, cols, indptr), shape=shape)
    A.has_canonical_format = True
    return A


def banded(n, dtype, rng):
    offsets = np.arange(-(ROW_LENGTH // 2), ROW_LENGTH - ROW_LENGTH // 2)
    rows = np.repeat(np.arange(n), len(offsets))
    cols = rows + np.tile(offsets, n)
    keep = (cols >= 0) & (cols < n)
    rows, cols = rows[keep], cols[keep]
    return _csr(np.bincount(rows, minlength=n), cols, 0.5 + rng.random(len(rows), dtype=dtype), (n, n))


def powerlaw(n, dtype, rng):
    limit = max(1, n // 2)
    raw = np.minimum(rng.zipf(2.0, n), limit).astype(np.float64)
    lengths = np.clip(np.rint(raw * ROW_LENGTH / raw.mean()), 1, limit).astype(np.int64)
    # Long rows draw their columns without replacement, one row at a time;
    # the others draw with replacement, all at once, and draw again for the
    # columns lost to repeats (few: a row holds at most 1/64 of the columns).
    long_rows = np.flatnonzero(lengths > n // 64)
    parts = [i * n + np.sort(rng.choice(n, lengths[i], replace=False)) for i in long_rows]
    wanted = lengths.copy()
    wanted[long_rows] = 0
    keys, missing = np.empty(0, dtype=np.int64), wanted
    while missing.any():
        rows = np.repeat(np.arange(n, dtype=np.int64), missing)
        keys = np.unique(np.concatenate([keys, rows * n + rng.integers(0, n, len(rows))]))
        missing = wanted - np.bincount(keys // n, minlength=n)
    keys = np.sort(np.concatenate([keys, *parts]))
    return _csr(lengths, keys % n, 0.5 + rng.random(len(keys), dtype=dtype), (n, n))


def random_uniform(n, density, dtype, rng, block_rows=1024):
    """n x n, each entry stored with probability `density`, values standard
    normal; drawn a block of rows at a time, so that the draws need
    block_rows x n floats rather than n x n."""
    counts, columns = [], []
    for start in range(0, n, block_rows):
        stored = rng.random((min(block_rows, n - start), n), dtype=np.float32) < density
        counts.append(stored.sum(axis=1))
        columns.append(np.nonzero(stored)[1].astype(np.int32))  # row-major: sorted within each row
    cols = np.concatenate(columns)
    return _csr(np.concatenate(counts), cols, rng.standard_normal(len(cols), dtype=dtype), (n, n))
