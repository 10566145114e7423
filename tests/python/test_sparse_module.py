"""plait.sparse against dense references: each function's result is compared
with the same operation computed on the dense matrix, restricted to the
stored positions with masks. The inputs cover empty rows, empty matrices,
one row, a full row, explicit zeros, duplicates and unsorted indices, int32
and int64 index arrays, float32 and float64 values, and csr_matrix,
csr_array and other formats."""

import numpy as np
import pytest
import scipy.sparse as sp

from plait import sparse

# (name, shape, stored (row, column) positions in storage order; a position
# listed twice is a duplicate entry, whose values sum).
PATTERNS = [
    ("empty rows", (6, 5), [(0, 1), (0, 4), (2, 0), (2, 2), (2, 3), (5, 4)]),
    ("0 x 0", (0, 0), []),
    ("3 x 0", (3, 0), []),
    ("0 x 3", (0, 3), []),
    ("no entries", (3, 4), []),
    ("one row", (1, 7), [(0, 0), (0, 3), (0, 6)]),
    ("full row", (4, 6), [(1, j) for j in range(6)] + [(3, 2)]),
    ("unsorted", (3, 5), [(0, 4), (0, 1), (0, 3), (1, 2), (2, 4), (2, 0)]),
    ("duplicates", (3, 4), [(0, 2), (0, 2), (1, 0), (1, 3), (1, 0), (2, 1)]),
    ("one column", (5, 1), [(0, 0), (3, 0), (4, 0)]),
]
FLOATS = (np.float32, np.float64)
CLASSES = (sp.csr_array, sp.csr_matrix)
INDEX_DTYPES = (np.int32, np.int64)
# Float reassociation only: the sums run in another order than NumPy's.
TOLERANCE = {np.dtype(np.float32): dict(rtol=1e-6, atol=1e-7), np.dtype(np.float64): dict(rtol=1e-14, atol=1e-15)}
EXACT = dict(rtol=0, atol=0)


def make(pattern, dtype, cls, index_dtype, rng, explicit_zero=False):
    """(the sparse input, its dense values, the stored-position mask): the
    input holds the entries in the listed order, duplicates included."""
    _, shape, positions = pattern
    rows = np.array([p[0] for p in positions], dtype=np.int64)
    cols = np.array([p[1] for p in positions], dtype=np.int64)
    values = rng.uniform(-3, 3, size=len(positions)).astype(dtype)
    if explicit_zero and len(values):
        values[0] = 0
    order = np.argsort(rows, kind="stable")  # rows grouped, the listed order kept within a row
    indptr = np.zeros(shape[0] + 1, dtype=index_dtype)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    S = cls((values[order], cols[order].astype(index_dtype), indptr), shape=shape)
    # csr_matrix narrows int64 index arrays to int32 when the values fit.
    S.indices, S.indptr = S.indices.astype(index_dtype), S.indptr.astype(index_dtype)
    dense = np.zeros(shape, dtype=np.float64)
    np.add.at(dense, (rows, cols), values.astype(np.float64))
    stored = np.zeros(shape, dtype=bool)
    stored[rows, cols] = True
    return S, dense, stored


def dense_softmax(dense, stored, axis):
    masked = np.where(stored, dense, -np.inf)
    with np.errstate(invalid="ignore"):
        top = np.max(masked, axis=axis, keepdims=True, initial=-np.inf)
        e = np.where(stored, np.exp(dense - np.where(np.isfinite(top), top, 0)), 0)
        return np.where(stored, e / e.sum(axis=axis, keepdims=True), 0)


def check_sparse_result(out, S, stored, expected, dtype, cls):
    """`out` has S's class (or csr of S's kind), S's canonical pattern, its
    own copies of the index arrays, and the expected values."""
    assert type(out) is cls
    assert out.format == "csr" and out.shape == S.shape
    assert out.data.dtype == np.dtype(dtype)
    assert out.has_sorted_indices
    canonical = sp.csr_array(S.copy())
    canonical.sum_duplicates()
    np.testing.assert_array_equal(out.indptr, canonical.indptr)
    np.testing.assert_array_equal(out.indices, canonical.indices)
    assert out.indices.dtype == S.indices.dtype and out.indptr.dtype == S.indptr.dtype
    assert not np.shares_memory(out.indices, S.indices) and not np.shares_memory(out.indptr, S.indptr)
    got = np.zeros(S.shape, dtype=np.float64)
    rows = np.repeat(np.arange(S.shape[0]), np.diff(out.indptr))
    got[rows, out.indices] = out.data
    assert np.array_equal(got != 0, (got != 0) & stored)
    np.testing.assert_allclose(got, expected, **TOLERANCE.get(np.dtype(dtype), EXACT))


def unchanged(S):
    """A snapshot of S's arrays, to check that a call leaves S as it was."""
    return [a.copy() for a in (S.data, S.indices, S.indptr)]


cases = pytest.mark.parametrize("pattern", PATTERNS, ids=[p[0] for p in PATTERNS])
kinds = pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
classes = pytest.mark.parametrize("cls", CLASSES, ids=["csr_array", "csr_matrix"])
index_dtypes = pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=["i32", "i64"])


@cases
@kinds
@classes
@index_dtypes
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_softmax_matches_dense_over_the_stored_entries(pattern, dtype, cls, index_dtype, axis, rng):
    S, dense, stored = make(pattern, dtype, cls, index_dtype, rng, explicit_zero=True)
    before = unchanged(S)
    out = sparse.softmax(S, axis=axis)
    check_sparse_result(out, S, stored, dense_softmax(dense, stored, 0 if axis == 0 else 1), dtype, cls)
    for a, b in zip(before, unchanged(S)):
        np.testing.assert_array_equal(a, b)


@cases
@kinds
@classes
@index_dtypes
def test_exp_keeps_implicit_zeros(pattern, dtype, cls, index_dtype, rng):
    S, dense, stored = make(pattern, dtype, cls, index_dtype, rng, explicit_zero=True)
    out = sparse.exp(S)
    check_sparse_result(out, S, stored, np.where(stored, np.exp(dense), 0), dtype, cls)
    assert out.nnz == int(stored.sum())  # an explicit zero is stored: its exp, 1, is kept


@cases
@kinds
@classes
@index_dtypes
def test_row_max_and_row_sum(pattern, dtype, cls, index_dtype, rng):
    S, dense, stored = make(pattern, dtype, cls, index_dtype, rng)
    top, total = sparse.row_max(S), sparse.row_sum(S)
    assert top.shape == total.shape == (S.shape[0],)
    assert top.dtype == total.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(top, np.max(np.where(stored, dense, -np.inf), axis=1, initial=-np.inf)
                                  .astype(dtype))
    np.testing.assert_allclose(total, np.where(stored, dense, 0).sum(axis=1), **TOLERANCE[np.dtype(dtype)])
    assert np.all(np.isneginf(top[~stored.any(axis=1)]))


@cases
@classes
@index_dtypes
@pytest.mark.parametrize("dense_dtype", [np.float32, np.float64, np.int64], ids=["f32", "f64", "i64"])
@pytest.mark.parametrize("broadcast", ["full", "column", "row"])
def test_mask_takes_dense_values_at_the_stored_positions(pattern, cls, index_dtype, dense_dtype, broadcast, rng):
    S, _, stored = make(pattern, np.float64, cls, index_dtype, rng)
    n, m = S.shape
    shape = {"full": (n, m), "column": (n, 1), "row": (1, m)}[broadcast]
    values = rng.integers(-50, 50, size=shape).astype(dense_dtype)
    out = sparse.mask(S, values)
    check_sparse_result(out, S, stored, np.where(stored, np.broadcast_to(values, (n, m)), 0), dense_dtype, cls)


@pytest.mark.parametrize("fmt", ["coo", "csc", "lil", "dok"])
@pytest.mark.parametrize("kind", ["array", "matrix"])
def test_other_formats_give_csr_of_the_same_kind(fmt, kind, rng):
    S, dense, stored = make(PATTERNS[0], np.float64, sp.csr_array, np.int32, rng)
    other = (sp.coo_array if kind == "array" else sp.coo_matrix)(S).asformat(fmt)
    cls = sp.csr_array if kind == "array" else sp.csr_matrix
    check_sparse_result(sparse.softmax(other), S, stored, dense_softmax(dense, stored, 1), np.float64, cls)
    check_sparse_result(sparse.exp(other), S, stored, np.where(stored, np.exp(dense), 0), np.float64, cls)
    np.testing.assert_allclose(sparse.row_sum(other), dense.sum(axis=1))


def test_coo_duplicates_are_summed(rng):
    S = sp.coo_array((np.array([1.0, 2.0, 5.0]), (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(2, 2))
    np.testing.assert_array_equal(sparse.row_sum(S), [3.0, 5.0])
    np.testing.assert_array_equal(sparse.softmax(S).toarray(), [[0.0, 1.0], [1.0, 0.0]])


def test_integer_values():
    S = sp.csr_array(np.array([[1, 0, 3], [0, 0, 0]], dtype=np.int32))
    assert sparse.row_sum(S).dtype == np.sum(np.ones(1, np.int32)).dtype
    np.testing.assert_array_equal(sparse.row_sum(S), [4, 0])
    assert sparse.softmax(S).dtype == np.float64 and sparse.exp(S).dtype == np.float64
    np.testing.assert_allclose(sparse.softmax(S).toarray(), [[1 / (1 + np.e**2), 0, np.e**2 / (1 + np.e**2)],
                                                             [0, 0, 0]])


def test_softmax_is_stable_for_large_values():
    S = sp.csr_array(np.array([[1000.0, 1001.0, 0.0]], dtype=np.float32))
    out = sparse.softmax(S)
    assert np.all(np.isfinite(out.data))
    np.testing.assert_allclose(out.data, [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-6)


@pytest.mark.parametrize("axis", [2, -2, None, True, "rows"])
def test_softmax_rejects_other_axes(axis):
    with pytest.raises(ValueError, match=r"axis must be 1 or -1 \(rows\) or 0 \(columns\)"):
        sparse.softmax(sp.csr_array(np.eye(2)), axis=axis)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_row_max_rejects_non_float_values(dtype):
    with pytest.raises(TypeError, match="row_max: S's values must be floats"):
        sparse.row_max(sp.csr_array(np.eye(2, dtype=dtype)))


def test_softmax_rejects_complex_values():
    with pytest.raises(TypeError, match="softmax: S's values must be real numbers"):
        sparse.softmax(sp.csr_array(np.eye(2, dtype=np.complex128)))


@pytest.mark.parametrize("function", [sparse.softmax, sparse.exp, sparse.row_max, sparse.row_sum])
def test_dense_input_is_rejected(function):
    with pytest.raises(TypeError, match="S must be a SciPy sparse matrix or array, got numpy.ndarray"):
        function(np.eye(2))


def test_one_dimensional_sparse_input_is_rejected():
    with pytest.raises(ValueError, match="S must be 2-D"):
        sparse.row_sum(sp.coo_array(np.ones(3)))


@pytest.mark.parametrize("shape", [(3, 4), (3,), (3, 1, 1), (4, 3)])
def test_mask_rejects_shapes_that_do_not_broadcast(shape):
    with pytest.raises(ValueError, match=r"mask: dense of shape .* does not broadcast to S's shape \(3, 2\)"):
        sparse.mask(sp.csr_array(np.ones((3, 2))), np.ones(shape))
