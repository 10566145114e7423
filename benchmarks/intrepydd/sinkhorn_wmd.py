"""sinkhorn-wmd: the entropy-regularised Word Mover's Distance from one query
document to every document of a corpus (Cuturi, NIPS 2013; Kusner et al.,
ICML 2015), by Sinkhorn iterations between the query's words and the corpus's
term-document matrix c (V x D, CSR, under 1% stored). Each iteration needs
the dense V x D product K.T @ u only at c's stored entries: the fused form
(SDDMM) computes those entries alone."""

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

import plait
from plait.bench.kernel_support import njit, sizes

PRESETS = {
    "test": dict(V=300, dim=20, D=40),
    "S": dict(V=2000, dim=50, D=200),
    "M": dict(V=20_000, dim=300, D=2000),
}
PARAMETERS = ("r", "c", "vecs", "lamb", "max_iter")
OUTPUTS = ()
RTOL = 1e-9
QUERY = 100


def initialize(preset, seed=0):
    """The spec's synthetic corpus: word vectors N(0, I) scaled by
    (0.10 + 0.15 ln(1 + i) / ln V) 12 / sqrt(dim) for the word of frequency
    rank i; each document max(5, Poisson(35)) words drawn with p_i ~ 1/(i +
    10), distinct (redrawn below 5 distinct), each weighted 1/count; the
    query is document 100 (r, dense over the V words)."""
    V, dim, D = (sizes(PRESETS, preset)[key] for key in ("V", "dim", "D"))
    rng = np.random.default_rng(seed)
    rank = np.arange(V)
    vecs = rng.standard_normal((V, dim)) * ((0.10 + 0.15 * np.log1p(rank) / np.log(V)) * 12 / np.sqrt(dim))[:, None]
    p = 1.0 / (rank + 10)
    p /= p.sum()
    rows, cols, vals = [], [], []
    for doc in range(D):
        words = np.unique(rng.choice(V, size=max(5, rng.poisson(35)), p=p))
        while words.size < 5:
            words = np.unique(np.concatenate([words, rng.choice(V, size=5, p=p)]))
        rows.append(words)
        cols.append(np.full(words.size, doc))
        vals.append(np.full(words.size, 1.0 / words.size))
    c = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(V, D))
    query = min(QUERY, D - 1)
    r = c[:, query].toarray().ravel()
    return dict(r=r, c=c, vecs=vecs, lamb=1.0, max_iter=15)


# ---------------------------------------------------------------- NumPy

def kernel_numpy(r, c, vecs, lamb, max_iter):
    sel = r > 0
    r = r[sel].reshape(-1, 1)
    M = cdist(vecs[sel], vecs)
    K = np.exp(-lamb * M)
    x = np.ones((r.shape[0], c.shape[1])) / r.shape[0]
    it = 0
    while it < max_iter:
        u = 1.0 / x
        v = c.multiply(1 / (K.T @ u))
        x = ((1 / r) * K) @ v.tocsc()
        it += 1
    u = 1.0 / x
    v = c.multiply(1 / (K.T @ u))
    return (u * ((K * M) @ v)).sum(axis=0)


# ---------------------------------------------------------------- Numba
# Numba takes no SciPy matrices: the kernel passes c's arrays to a compiled
# function, which computes K.T @ u at c's stored entries only (the fused
# form, written out as loops) and cdist as a loop nest.

@njit
def sinkhorn_numba(r, data, indices, indptr, D, vecs, lamb, max_iter):
    sel = np.nonzero(r > 0)[0]
    nr, V = sel.shape[0], vecs.shape[0]
    M = np.empty((nr, V))
    for i in range(nr):
        for j in range(V):
            acc = 0.0
            for k in range(vecs.shape[1]):
                diff = vecs[sel[i], k] - vecs[j, k]
                acc += diff * diff
            M[i, j] = np.sqrt(acc)
    K = np.exp(-lamb * M)
    rk = K / r[sel].reshape(-1, 1)
    x = np.ones((nr, D)) / nr
    v = np.empty(data.shape[0])
    for step in range(max_iter + 1):
        u = 1.0 / x
        # v = c.multiply(1 / (K.T @ u)), at c's stored entries (CSR rows are words).
        for w in range(V):
            for e in range(indptr[w], indptr[w + 1]):
                acc = 0.0
                for i in range(nr):
                    acc += K[i, w] * u[i, indices[e]]
                v[e] = data[e] / acc
        if step == max_iter:
            break
        # x = ((1 / r) * K) @ v
        x = np.zeros((nr, D))
        for w in range(V):
            for e in range(indptr[w], indptr[w + 1]):
                for i in range(nr):
                    x[i, indices[e]] += rk[i, w] * v[e]
    # (u * ((K * M) @ v)).sum(axis=0)
    km = K * M
    scores = np.zeros(D)
    for w in range(V):
        for e in range(indptr[w], indptr[w + 1]):
            doc = indices[e]
            for i in range(nr):
                scores[doc] += u[i, doc] * km[i, w] * v[e]
    return scores


def kernel_numba(r, c, vecs, lamb, max_iter):
    return sinkhorn_numba(r, c.data, c.indices, c.indptr, c.shape[1], vecs, lamb, max_iter)


# ---------------------------------------------------------------- Plait
# The NumPy function with these changes: the rows of the query's words are
# gathered by their positions (np.nonzero) rather than by a boolean mask;
# cdist is written out (the square root of the summed squared differences);
# the while loop counts with range; v, a sparse value, is not bound to a
# name inside the loop but written where it is read (a sparse value is bound
# only at the top level), and v.tocsc() is not needed; the last product is
# bound to a name before its elementwise product with u.

@plait.jit
def kernel_plait(r, c, vecs, lamb, max_iter):
    sel = np.nonzero(r > 0)[0]  # r > 0
    rq = r[sel].reshape(-1, 1)
    X = vecs[sel]
    M = np.sqrt(((X[:, None, :] - vecs[None, :, :]) ** 2).sum(axis=2))  # cdist(vecs[sel], vecs)
    K = np.exp(-lamb * M)
    x = np.ones((rq.shape[0], c.shape[1])) / rq.shape[0]
    for it in range(max_iter):
        u = 1.0 / x
        x = ((1 / rq) * K) @ c.multiply(1 / (K.T @ u))
    u = 1.0 / x
    w = (K * M) @ c.multiply(1 / (K.T @ u))
    return (u * w).sum(axis=0)
