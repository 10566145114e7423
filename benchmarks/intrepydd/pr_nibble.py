"""PR-Nibble (Shun et al., VLDB 2016; Ligra's ACL-Sync-Local-Opt): for each
seed, a personalised-PageRank-like score vector by synchronous pushes from a
frontier of vertices whose residual is large for their degree, over a graph
in CSR. Each sweep reads the old residuals (r) and writes a copy (r2)."""

import numpy as np

import plait
from plait.bench.kernel_support import njit, sizes

PRESETS = {
    "test": dict(n=200, m=1500, k=3, seeds=2),
    "S": dict(n=1000, m=10_000, k=5, seeds=3),
    "M": dict(n=5157, m=280_000, k=20, seeds=10),
}
PARAMETERS = ("indptr", "indices", "degree", "seeds", "alpha", "eps")
OUTPUTS = ()
RTOL = 1e-12


def initialize(preset, seed=0):
    n, m, k, seeds = (sizes(PRESETS, preset)[key] for key in ("n", "m", "k", "seeds"))
    indptr, indices = community_graph(n, m, k, seed)
    return dict(indptr=indptr, indices=indices, degree=np.diff(indptr), seeds=np.arange(seeds), alpha=0.15, eps=1e-6)


def community_graph(n, m, k, seed):
    """The spec's synthetic graph (PR-Nibble's and ISTA's): lognormal
    weights, k communities, m edges drawn by weight (a tenth across
    communities), a path along a random permutation so that no degree is 0;
    symmetric, no self-loops, no duplicates. Its CSR index arrays (int64)."""
    rng = np.random.default_rng(seed)
    weight = rng.lognormal(0.0, 1.0, n)
    community = rng.integers(0, k, n)
    sources = rng.choice(n, size=m, p=weight / weight.sum())
    partners = np.empty(m, dtype=np.int64)
    anywhere = rng.random(m) < 0.1
    partners[anywhere] = rng.choice(n, size=int(anywhere.sum()), p=weight / weight.sum())
    for c in range(k):
        members = np.flatnonzero(community == c)
        chosen = np.flatnonzero(~anywhere & (community[sources] == c))
        w = weight[members] / weight[members].sum()
        partners[chosen] = members[rng.choice(members.size, size=chosen.size, p=w)]
    path = rng.permutation(n)
    rows = np.concatenate([sources, path[:-1]])
    cols = np.concatenate([partners, path[1:]])
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    pairs = np.unique(np.concatenate([rows * n + cols, cols * n + rows]))
    rows, cols = pairs // n, pairs % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr), cols.astype(np.int64)


# ---------------------------------------------------------------- NumPy

def pr_nibble(indptr, indices, degree, seed, alpha, eps):
    p = np.zeros(degree.shape[0])
    r = np.zeros(degree.shape[0])
    r[seed] = 1.0
    frontier = np.array([seed])
    while frontier.shape[0] > 0:
        r2 = r.copy()
        for v in frontier:
            p[v] += (2 * alpha) / (1 + alpha) * r[v]
            r2[v] = 0.0
        for v in frontier:
            update = (1 - alpha) / (1 + alpha) * r[v] / degree[v]
            for j in range(indptr[v], indptr[v + 1]):
                r2[indices[j]] += update
        r = r2
        frontier = np.where((r >= degree * eps) & (degree > 0))[0]
    return p


def kernel_numpy(indptr, indices, degree, seeds, alpha, eps):
    scores = np.zeros((degree.shape[0], seeds.shape[0]))
    for s in range(seeds.shape[0]):
        scores[:, s] = pr_nibble(indptr, indices, degree, seeds[s], alpha, eps)
    return scores


# ---------------------------------------------------------------- Numba

pr_nibble_numba = njit(pr_nibble)


@njit
def kernel_numba(indptr, indices, degree, seeds, alpha, eps):
    scores = np.zeros((degree.shape[0], seeds.shape[0]))
    for s in range(seeds.shape[0]):
        scores[:, s] = pr_nibble_numba(indptr, indices, degree, seeds[s], alpha, eps)
    return scores


# ---------------------------------------------------------------- Plait
# The NumPy function, called from the kernel (the call is inlined), with two
# changes: a kernel's for loops run over range(), not over an array's
# elements, and np.array([seed]) (a list) is the nonzero of r, which holds
# only the seed then.

def pr_nibble_plait(indptr, indices, degree, seed, alpha, eps):
    p = np.zeros(degree.shape[0])
    r = np.zeros(degree.shape[0])
    r[seed] = 1.0
    frontier = np.nonzero(r)[0]  # np.array([seed])
    while frontier.shape[0] > 0:
        r2 = r.copy()
        for k in range(frontier.shape[0]):  # for v in frontier
            v = frontier[k]
            p[v] += (2 * alpha) / (1 + alpha) * r[v]
            r2[v] = 0.0
        for k in range(frontier.shape[0]):  # for v in frontier
            v = frontier[k]
            update = (1 - alpha) / (1 + alpha) * r[v] / degree[v]
            for j in range(indptr[v], indptr[v + 1]):
                r2[indices[j]] += update
        r = r2
        frontier = np.where((r >= degree * eps) & (degree > 0))[0]
    return p


@plait.jit
def kernel_plait(indptr, indices, degree, seeds, alpha, eps):
    scores = np.zeros((degree.shape[0], seeds.shape[0]))
    for s in range(seeds.shape[0]):
        scores[:, s] = pr_nibble_plait(indptr, indices, degree, seeds[s], alpha, eps)
    return scores
