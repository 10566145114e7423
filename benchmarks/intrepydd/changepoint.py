"""changepoint (Chen and Zhang's graph-based change-point scan): observations
in time order are linked by their Euclidean minimum spanning tree, and a
window [o, s] of them scores high when few tree edges cross its border. For
each window start o, one pass over s keeps a min-heap of the edges leaving
the window to the right (by their far end) and counts those leaving it to
the left; the n x n cut counts R are then normalised into Z scores (2-D
mode)."""

import heapq

import numpy as np

import plait
from plait.bench.kernel_support import njit, sizes

PRESETS = {
    "test": dict(n=60),
    "S": dict(n=300),
    "M": dict(n=3000),
}
PARAMETERS = ("indptr", "indices")
OUTPUTS = ()
RTOL = 1e-12


def initialize(preset, seed=0):
    """The spec's synthetic input: the minimum spanning tree of n points in 50
    dimensions (N(0, 1), shifted by 0.3 from row n/2 on), as CSR adjacency
    with each edge in both rows."""
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial.distance import pdist, squareform

    n = sizes(PRESETS, preset)["n"]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 50))
    X[n // 2:] += 0.3
    tree = minimum_spanning_tree(squareform(pdist(X))).tocoo()
    rows = np.concatenate([tree.row, tree.col]).astype(np.int64)
    cols = np.concatenate([tree.col, tree.row]).astype(np.int64)
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return dict(indptr=np.cumsum(indptr), indices=cols)


def z_scores(R, indptr, indices):
    """The 2-D normalisation of the cut counts, as n x n array expressions."""
    n = R.shape[0]
    degree = indptr[1:] - indptr[:-1]
    E = indices.shape[0] // 2
    D2 = np.sum(degree * degree)
    t = np.maximum(np.arange(n)[None, :] - np.arange(n)[:, None], 0)
    mu = 2 * E * t * (n - t) / (n * (n - 1))
    p1 = 2 * t * (n - t) / (n * (n - 1))
    p2 = 4 * t * (n - t) * (t - 1) * (n - t - 1) / (n * (n - 1) * (n - 2) * (n - 3))
    return (mu - R) / np.sqrt(p2 * E + (p1 / 2 - p2) * D2 + (p2 - p1 * p1) * E * E + 1e-7)


# ---------------------------------------------------------------- NumPy

def cut_counts(indptr, indices, o):
    """R[s]: the tree edges that cross the border of the window [o, s]."""
    n = indptr.shape[0] - 1
    R = np.zeros(n, dtype=np.int64)
    hi = []  # (far end, near end) of the edges leaving the window to the right
    lo = 0  # edges leaving it to the left
    for s in range(n):
        if s >= o:
            for v in indices[indptr[s]:indptr[s + 1]]:
                if v > s:
                    heapq.heappush(hi, (v, s))
                elif v < o:
                    lo += 1
        while hi and hi[0][0] <= s:
            heapq.heappop(hi)
        R[s] = len(hi) + lo
    return R


def kernel_numpy(indptr, indices):
    n = indptr.shape[0] - 1
    R = np.zeros((n, n), dtype=np.int64)
    for o in range(n):
        R[o, :] = cut_counts(indptr, indices, o)
    return R, z_scores(R, indptr, indices)


# ---------------------------------------------------------------- Numba
# Numba cannot type an empty list (`hi = []`): its element type is given by
# a first element, popped at once.

@njit
def cut_counts_numba(indptr, indices, o):
    n = indptr.shape[0] - 1
    R = np.zeros(n, dtype=np.int64)
    hi = [(indices[0], indices[0])]
    hi.pop()
    lo = 0
    for s in range(n):
        if s >= o:
            for v in indices[indptr[s]:indptr[s + 1]]:
                if v > s:
                    heapq.heappush(hi, (v, s))
                elif v < o:
                    lo += 1
        while hi and hi[0][0] <= s:
            heapq.heappop(hi)
        R[s] = len(hi) + lo
    return R


z_scores_numba = njit(z_scores)


@njit
def kernel_numba(indptr, indices):
    n = indptr.shape[0] - 1
    R = np.zeros((n, n), dtype=np.int64)
    for o in range(n):
        R[o, :] = cut_counts_numba(indptr, indices, o)
    return R, z_scores_numba(R, indptr, indices)


# ---------------------------------------------------------------- Plait
# The NumPy functions with two changes: a kernel's for loops run over
# range(), not over an array's elements, and the window starts run in
# parallel (each has its own heap), as the paper's version does.

def cut_counts_plait(indptr, indices, o):
    n = indptr.shape[0] - 1
    R = np.zeros(n, dtype=np.int64)
    hi = []
    lo = 0
    for s in range(n):
        if s >= o:
            for p in range(indptr[s], indptr[s + 1]):  # for v in indices[indptr[s]:indptr[s + 1]]
                v = indices[p]
                if v > s:
                    heapq.heappush(hi, (v, s))
                elif v < o:
                    lo += 1
        while hi and hi[0][0] <= s:
            heapq.heappop(hi)
        R[s] = len(hi) + lo
    return R


@plait.jit
def kernel_plait(indptr, indices):
    n = indptr.shape[0] - 1
    R = np.zeros((n, n), dtype=np.int64)
    for o in plait.prange(n):  # for o in range(n)
        R[o, :] = cut_counts_plait(indptr, indices, o)
    return R, z_scores(R, indptr, indices)
