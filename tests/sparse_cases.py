"""Random sparse and dense operands, and the operator programs, shared by
the sparse tests of the CPU (tests/python) and the GPU (tests/gpu)."""

import numpy as np
import scipy.sparse as sp

import plait


def random_csr(rng, shape, density=0.35, dtype=np.float64, index=np.int32, matrix=False, dense_row=True,
               canonical=True, positive=False):
    """A random csr_array (csr_matrix with matrix=True): an empty first row
    and a dense middle row (dense_row), and with canonical=False each entry
    split in two halves in a shuffled order (unsorted column indices with
    duplicates)."""
    n, m = shape
    mask = rng.random(shape) < density
    if dense_row and n > 1 and m > 0:
        mask[n // 2] = True
        mask[0] = False
    values = rng.random(shape) + (0.5 if positive else -0.5)
    rows, cols = np.nonzero(mask)
    vals = values[rows, cols].astype(dtype)
    if not canonical and len(rows):
        half = (vals / 2).astype(dtype)
        rows, cols = np.concatenate([rows, rows]), np.concatenate([cols, cols])
        vals = np.concatenate([half, vals - half])
        order = rng.permutation(len(rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        order = np.argsort(rows, kind="stable")
        rows, cols, vals = rows[order], cols[order], vals[order]
    indptr = np.zeros(n + 1, dtype=index)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr).astype(index)
    cls = sp.csr_matrix if matrix else sp.csr_array
    out = cls((vals, cols.astype(index), indptr), shape=shape)
    if not canonical:
        out.has_canonical_format = False
        out.has_sorted_indices = False
    return out


def check_same_pattern(got, want, rtol=1e-6):
    """The same class, shape, dtypes and stored entries, in SciPy's (canonical) order."""
    assert type(got) is type(want), (type(got), type(want))
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.indices.dtype == want.indices.dtype and got.indptr.dtype == want.indptr.dtype
    want = want.tocsr()
    if not want.has_sorted_indices:  # SciPy's merge of non-canonical operands leaves rows unsorted
        want = want.sorted_indices()
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_allclose(got.data, want.data, rtol=rtol, atol=rtol)
    assert got.has_canonical_format


def dense(rng, *shape, dtype=np.float64):
    """Values in [-0.5, 0.5): never all zeros."""
    return (rng.random(shape) - 0.5).astype(dtype)


# The programs of docs/sparse.md, run undecorated as the oracle.
def spmv(A, x):
    return A @ x


def spmm(A, X):
    return A @ X


def sddmm(S, B, C):
    return S.multiply(B @ C)


def gnn(A, X, W):
    return A @ X @ W


def sddmm_spmm(S, C, D, E):
    return S.multiply(C @ D) @ E


def row_normalise(S):
    return S.multiply(1.0 / S.sum(axis=1)[:, None])


def softmax(S):
    return plait.sparse.softmax(S, axis=1)


def attention(P, q, k, v, scale):
    s = plait.sparse.mask(P, q @ k.T) * scale
    return plait.sparse.softmax(s, axis=1) @ v


def masked_attention(q, k, v, mask, scale):
    """Masked softmax attention in float64; a row with no kept key gives zeros."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    s = np.einsum("...id,...jd->...ij", q, k) * scale
    s = np.where(mask, s, -np.inf)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    e = np.where(mask, np.exp(s - np.where(np.isfinite(m), m, 0.0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.einsum("...ij,...jd->...id", np.divide(e, total, out=np.zeros_like(e), where=total > 0), v)


def to_array(S):
    return S.toarray()
