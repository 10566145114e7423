"""Gathers and scatters in array expressions: one integer array indexing a
subscript (`x[idx]`, `x[indices[a:b]]`, `A[:, cols]`), `np.add.at` and
`np.bincount`. Compared with the undecorated function on fresh random
inputs: several sizes (0 and 1 elements, odd sizes), int32 and int64 indices,
negative indices, duplicates, strided views, float32 and float64; a CSR
matrix-vector product written with a gather per row against scipy.sparse;
indices out of range raise IndexError as NumPy does."""

import inspect

import numpy as np
import pytest
import scipy.sparse

import plait
from oracle import FLOAT_DTYPES, check, make, rng_for

INDEX_DTYPES = (np.int32, np.int64)
SIZES = (0, 1, 2, 7, 33)


def indices(rng, dtype, count, extent, negative=True):
    """`count` indices into an axis of `extent`, with duplicates and (when
    `negative`) negative ones counting from the end."""
    if extent == 0:
        return np.zeros(0, dtype=dtype)
    idx = rng.integers(-extent if negative else 0, extent, size=count)
    if count > 2:
        idx[1] = idx[0]
    return idx.astype(dtype)


# ---------------------------------------------------------------- gathers


@plait.jit
def take(x, idx):
    return x[idx]


@plait.jit
def take_scaled(x, idx, y):
    return 2.0 * x[idx] + y


@plait.jit
def take_of_view(x, idx):
    return x[::2][idx]


@plait.jit
def take_of_tail(x, idx):
    return x[1:][idx]


@plait.jit
def take_into(x, idx, out):
    out[:] = x[idx] - 1.0


@plait.jit
def take_rows(A, idx):
    return A[idx]


@plait.jit
def take_columns(A, idx):
    return A[:, idx] * 3.0


@plait.jit
def take_in_row(A, idx):
    return A[1, idx]


@plait.jit
def take_apart(T, idx):
    return T[0, :, idx]


@plait.jit
def take_2d_index(x, idx):
    return x[idx] + 1.0


@plait.jit
def sum_of_gather(x, idx):
    return np.sum(x[idx])


@plait.jit
def gather_through_slice(x, idx, a, b):
    return x[idx[a:b]]


@plait.jit
def gather_in_place(x, idx):
    x[:] = x[idx]


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fdtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_gather_1d(n, fdtype, dtype):
    rng = rng_for("gather", n, fdtype, dtype)
    x = make(rng, fdtype, max(n, 1))
    idx = indices(rng, dtype, n + 2, x.size)
    check(take, x, idx)
    check(take_scaled, x, idx, make(rng, fdtype, idx.size))
    check(take_into, x, idx, make(rng, fdtype, idx.size))
    check(take, make(rng, fdtype, max(n, 1), "strided"), idx)
    check(sum_of_gather, x, idx, rtol=1e-5)
    check(gather_in_place, x, indices(rng, dtype, x.size, x.size))
    check(gather_through_slice, x, idx, 1, max(idx.size - 1, 1))


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_gather_through_views(n, dtype):
    rng = rng_for("views", n, dtype)
    x = make(rng, np.float64, 2 * n + 3)
    check(take_of_view, x, indices(rng, dtype, n + 1, x[::2].size))
    check(take_of_tail, x, indices(rng, dtype, n + 1, x.size - 1))


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", ((1, 1), (4, 3), (7, 5)))
def test_gather_2d(shape, dtype):
    rng = rng_for("2d", shape, dtype)
    A = make(rng, np.float64, shape)
    check(take_rows, A, indices(rng, dtype, 5, shape[0]))
    check(take_columns, A, indices(rng, dtype, 6, shape[1]))
    check(take_columns, make(rng, np.float32, shape, "F"), indices(rng, dtype, 6, shape[1]))
    if shape[0] > 1:
        check(take_in_row, A, indices(rng, dtype, 4, shape[1]))
    T = make(rng, np.float64, (2,) + shape)
    check(take_apart, T, indices(rng, dtype, 3, shape[1]))
    check(take_2d_index, make(rng, np.float64, shape[0] + 2), indices(rng, dtype, 6, shape[0] + 2).reshape(2, 3))


@pytest.mark.parametrize("where", ("first", "last"))
def test_gather_out_of_range_raises(where):
    x = np.arange(5.0)
    idx = np.array([0, 1, 2, 3], dtype=np.int64)
    idx[0 if where == "first" else -1] = 5
    with pytest.raises(IndexError):
        take.py_func(x, idx)
    with pytest.raises(IndexError):
        take(x, idx)
    with pytest.raises(IndexError):
        take(x, np.array([-6], dtype=np.int32))
    with pytest.raises(IndexError):
        take_of_view(np.arange(7.0), np.array([0, 4], dtype=np.int64))  # x[::2] has 4 elements
    with pytest.raises(IndexError):
        take_of_tail(np.arange(5.0), np.array([4], dtype=np.int64))
    with pytest.raises(IndexError):
        take_columns(np.ones((2, 3)), np.array([3], dtype=np.int64))


# ---------------------------------------------------------------- a CSR product with a gather per row


@plait.jit
def csr_rows(indptr, indices, data, x):
    n = indptr.size - 1
    y = np.zeros(n)
    #pragma parallel for
    for i in range(n):
        a = indptr[i]
        b = indptr[i + 1]
        y[i] = np.sum(data[a:b] * x[indices[a:b]])
    return y


@plait.jit
def csr_rows_vidx(indptr, indices, data, x):
    n = indptr.size - 1
    y = np.zeros(n)
    #pragma parallel for
    for i in range(n):
        a = indptr[i]
        b = indptr[i + 1]
        vj = plait.vidx(a, b - a, b)
        y[i] = np.sum(data[vj] * x[indices[vj]])
    return y


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rows", (0, 1, 7, 100))
def test_csr_product_against_scipy(rows, dtype):
    rng = rng_for("csr", rows, dtype)
    cols = rows + 3
    A = scipy.sparse.random_array((rows, cols), density=0.3, format="csr", rng=rng) if rows else None
    if A is None:
        indptr, idx, data = np.zeros(1, dtype=dtype), np.zeros(0, dtype=dtype), np.zeros(0)
        expected = np.zeros(0)
        x = rng.random(cols)
    else:
        indptr, idx, data = A.indptr.astype(dtype), A.indices.astype(dtype), A.data
        x = rng.random(cols)
        expected = A @ x
    for kernel in (csr_rows, csr_rows_vidx):
        np.testing.assert_allclose(kernel(indptr, idx, data, x), expected, rtol=1e-12, atol=1e-14)
        check(kernel, indptr, idx, data, x, rtol=1e-12)


# ---------------------------------------------------------------- scatters


@plait.jit
def add_at(y, idx, v):
    np.add.at(y, idx, v)


@plait.jit
def add_at_number(y, idx):
    np.add.at(y, idx, 1.5)


@plait.jit
def add_at_rows(Y, idx, v):
    np.add.at(Y, idx, v)


@plait.jit
def add_at_in_rows(Y, idx, v):
    #pragma parallel for
    for i in range(Y.shape[0]):
        np.add.at(Y[i], idx, v)


@plait.jit
def counts(idx):
    return np.bincount(idx)


@plait.jit
def counts_at_least(idx, n):
    return np.bincount(idx, minlength=n)


@plait.jit
def weighted(idx, w, n):
    return np.bincount(idx, weights=w, minlength=n)


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fdtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_add_at(n, fdtype, dtype):
    rng = rng_for("add.at", n, fdtype, dtype)
    m = max(n // 2, 1)
    rtol = 1e-5 if fdtype == np.float32 else 1e-12
    idx = indices(rng, dtype, n, m)
    check(add_at, make(rng, fdtype, m), idx, make(rng, fdtype, n), rtol=rtol)
    check(add_at, make(rng, fdtype, m, "strided"), idx, make(rng, fdtype, 1), rtol=rtol)
    check(add_at_number, make(rng, fdtype, m), idx, rtol=rtol)
    check(add_at, make(rng, np.int64, m), idx, make(rng, np.int64, n))
    check(add_at_rows, make(rng, fdtype, (m, 3)), idx, make(rng, fdtype, 3), rtol=rtol)
    check(add_at_in_rows, make(rng, fdtype, (4, m)), idx, make(rng, fdtype, n), rtol=rtol)


def test_add_at_out_of_range_changes_nothing():
    y = np.arange(4.0)
    with pytest.raises(IndexError):
        add_at(y, np.array([0, 1, 4], dtype=np.int64), np.ones(3))
    np.testing.assert_array_equal(y, np.arange(4.0))
    with pytest.raises(IndexError):
        add_at(y, np.array([-5], dtype=np.int32), np.ones(1))


@pytest.mark.parametrize("dtype", INDEX_DTYPES + (np.uint32,), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_bincount(n, dtype):
    rng = rng_for("bincount", n, dtype)
    idx = rng.integers(0, max(n // 2, 1), size=n).astype(dtype)
    check(counts, idx)
    check(counts_at_least, idx, 0)
    if n:  # NumPy gives int64 zeros for no index even with weights: float64 here
        check(weighted, idx, make(rng, np.int32, n), 0)
    check(counts_at_least, idx, n + 3)
    if n:  # NumPy gives int64 zeros for no index even with weights: float64 here
        check(weighted, idx, make(rng, np.float64, n), 2, rtol=1e-12)
        check(weighted, idx, make(rng, np.float32, n), n + 1, rtol=1e-12)


def test_bincount_errors():
    with pytest.raises(ValueError):
        counts(np.array([1, -1, 2], dtype=np.int64))
    with pytest.raises(ValueError):
        weighted(np.array([1, 2], dtype=np.int64), np.ones(3), 0)
    with pytest.raises(ValueError):
        counts_at_least(np.array([1, 2], dtype=np.int64), -1)


# ---------------------------------------------------------------- refusals


def mask_index(x):
    return x[x > 0.0]


def two_arrays(A, i, j):
    return A[i, j]


def store_through_index(y, idx):
    y[idx] = 1.0


def update_through_index(y, idx, v):
    y[idx] += v


def add_at_wider(y, idx, v):
    np.add.at(y, idx, v)


REFUSED = [
    (mask_index, (np.ones(3),), plait.UnsupportedError, "boolean array"),
    (two_arrays, (np.ones((2, 2)), np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)),
     plait.UnsupportedError, "more than one array in a subscript"),
    (store_through_index, (np.ones(3), np.zeros(2, dtype=np.int64)), plait.UnsupportedError,
     "assigning through an array index"),
    (update_through_index, (np.ones(3), np.zeros(2, dtype=np.int64), np.ones(2)), plait.UnsupportedError,
     "assigning through an array index"),
    (take.py_func, (np.ones(3), np.ones(2)), plait.KernelTypeError, "must be of integer type"),
    (add_at_wider, (np.ones(3, dtype=np.int64), np.zeros(2, dtype=np.int64), np.ones(2)), plait.KernelTypeError,
     "convert the values"),
]


@pytest.mark.parametrize("fn, args, exception, message", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_refusals(fn, args, exception, message):
    kernel = plait.jit(fn)
    with pytest.raises(exception) as excinfo:
        kernel(*args)
    assert message in str(excinfo.value)
    lines, first = inspect.getsourcelines(fn)
    assert excinfo.value.line == first + len(lines) - 1
