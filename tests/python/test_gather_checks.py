"""Bounds checks of indices loaded from arrays (gathers such as `x[col[p]]`
over the rows of a sparse matrix). On the CPU the compiler checks them once
per call where it can: scans find the least and greatest element of the
index arrays over the positions the loops read, and the loops run unchecked
when every index is in range, else in a copy that checks each access (so
that the error comes at the iteration where Python raises it, after the same
writes). Compared with the undecorated function on CSR matrices with empty
rows, duplicate and unsorted column indices, int32/int64/uint32 indices,
negative (wrapping) indices and out-of-range ones."""

import numpy as np
import pytest

import plait
from oracle import check, rng_for


@plait.jit
def csr_matvec(indptr, indices, data, x):
    y = np.zeros(indptr.size - 1, dtype=data.dtype)
    #pragma parallel for
    for i in range(indptr.size - 1):
        acc = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            acc += data[p] * x[indices[p]]
        y[i] = acc
    return y


@plait.jit
def csr_matvec_into(indptr, indices, data, x, y):
    for i in range(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            y[i] += data[p] * x[indices[p]]


@plait.jit
def csr_matvec_through_a_variable(indptr, indices, data, x, y):
    for i in range(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            y[i] += data[p] * x[k]


@plait.jit
def gather(x, idx, out):
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]]


def csr(rng, rows, cols, dtype):
    """A random CSR matrix with empty rows, duplicates and unsorted columns."""
    counts = rng.integers(0, 5, size=rows)
    counts[::3] = 0
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(dtype)
    nnz = int(indptr[-1])
    indices = rng.integers(0, max(cols, 1), size=nnz).astype(dtype)
    if nnz > 2:
        indices[1] = indices[0]  # a duplicate
    data = rng.random(nnz) + 0.5
    return indptr, indices, data


INDEX_DTYPES = (np.int32, np.int64, np.uint32)


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rows", (0, 1, 7, 300))
def test_rows_of_a_sparse_matrix(rows, dtype):
    rng = rng_for("rows", rows, dtype)
    cols = max(rows, 1) + 2
    indptr, indices, data = csr(rng, rows, cols, dtype)
    x = rng.random(cols)
    check(csr_matvec, indptr, indices, data, x, rtol=1e-12)
    check(csr_matvec_into, indptr, indices, data, x, rng.random(rows), rtol=1e-12)
    check(csr_matvec_through_a_variable, indptr, indices, data, x, rng.random(rows), rtol=1e-12)


@pytest.mark.parametrize("dtype", (np.int32, np.int64), ids=lambda d: np.dtype(d).name)
def test_negative_indices_wrap_as_in_python(dtype):
    rng = rng_for("wrap", dtype)
    indptr, indices, data = csr(rng, 40, 30, dtype)
    indices[::4] -= 30  # -30..-1: Python counts from the end
    check(csr_matvec, indptr, indices, data, rng.random(30), rtol=1e-12)
    check(gather, rng.random(9), np.array([-9, 0, 8, -1], dtype=dtype), np.zeros(4))


@pytest.mark.parametrize("dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("where", ("first", "middle", "last"))
def test_an_index_out_of_range_raises_after_the_same_writes(where, dtype):
    rng = rng_for("out", where, dtype)
    indptr, indices, data = csr(rng, 50, 20, dtype)
    position = {"first": 0, "middle": indices.size // 2, "last": indices.size - 1}[where]
    indices[position] = 20
    x = rng.random(20)
    for kernel in (csr_matvec_into, csr_matvec_through_a_variable):
        y = rng.random(50)
        expected = y.copy()
        with pytest.raises(IndexError):
            kernel.py_func(indptr, indices, data, x, expected)
        with pytest.raises(IndexError, match="out of bounds"):
            kernel(indptr, indices, data, x, y)
        np.testing.assert_allclose(y, expected, rtol=1e-12)
    with pytest.raises(IndexError):
        csr_matvec(indptr, indices, data, x)


def test_a_row_range_beyond_the_arrays_raises():
    indptr = np.array([0, 2, 9], dtype=np.int64)
    indices = np.array([0, 1, 2, 0], dtype=np.int64)
    with pytest.raises(IndexError):
        csr_matvec(indptr, indices, np.ones(4), np.ones(3))


def test_an_index_array_that_shares_memory_with_the_output():
    # out is idx shifted by one element: each iteration writes the index the
    # next one reads, so the values scanned before the loop do not hold.
    # Python reads x[7] at the second iteration and raises.
    x = np.array([7, 1, 2, 3, 4], dtype=np.int64)
    ours = np.array([0, 1, 3, 2, 0, 0], dtype=np.int64)
    theirs = ours.copy()
    with pytest.raises(IndexError):
        gather.py_func(x, theirs[:4], theirs[1:5])
    with pytest.raises(IndexError):
        gather(x, ours[:4], ours[1:5])
    np.testing.assert_array_equal(ours, theirs)


@plait.jit
def push_from_frontier(indptr, indices, r, sweeps):
    """A scatter over the rows a frontier picks at each sweep, PR-Nibble's push."""
    out = np.zeros(r.shape[0])
    for sweep in range(sweeps):
        frontier = np.nonzero(r > 0.25 * sweep)[0]
        for k in range(frontier.shape[0]):
            v = frontier[k]
            for j in range(indptr[v], indptr[v + 1]):
                out[indices[j]] += r[v]
    return out


def csr_graph(rng, n, bad=None):
    degree = rng.integers(1, 6, n)
    indptr = np.concatenate([[0], np.cumsum(degree)]).astype(np.int64)
    indices = rng.integers(0, n, indptr[-1]).astype(np.int64)
    if bad is not None:
        indices[indptr[bad]] = n + 3  # out of range in row `bad` only
    return indptr, indices


WHOLE_SCAN = "bounded by one scan of the whole array when the call starts"


def test_indices_never_written_are_scanned_once_per_call():
    rng = rng_for("frontier")
    indptr, indices = csr_graph(rng, 40)
    check(push_from_frontier, indptr, indices, rng.random(40), 4)
    text = push_from_frontier.explain()
    assert f"'indices' it reads are {WHOLE_SCAN}" in text and f"'indptr' it reads are {WHOLE_SCAN}" in text


@pytest.mark.parametrize("picked", [True, False])
def test_an_index_out_of_range_raises_only_where_python_reads_it(picked):
    # The whole array's scan sees the bad row either way; the checked copy
    # then raises at the access Python raises at, and only when a frontier
    # picks that row (r > 0 at the first sweep).
    rng = rng_for("frontier bad", picked)
    n, bad = 30, 4
    indptr, indices = csr_graph(rng, n, bad=bad)
    r = rng.random(n) + 0.01
    r[bad] = 1.0 if picked else 0.0
    if picked:
        with pytest.raises(IndexError):
            push_from_frontier.py_func(indptr, indices, r, 3)
        with pytest.raises(IndexError):
            push_from_frontier(indptr, indices, r, 3)
    else:
        check(push_from_frontier, indptr, indices, r, 3)


@plait.jit
def push_writing_indices(indptr, indices, r, sweeps):
    out = np.zeros(r.shape[0])
    for sweep in range(sweeps):
        frontier = np.nonzero(r > 0.25 * sweep)[0]
        for k in range(frontier.shape[0]):
            v = frontier[k]
            for j in range(indptr[v], indptr[v + 1]):
                out[indices[j]] += r[v]
        indices[0] = 0
    return out


def test_indices_the_kernel_writes_are_not_scanned_at_the_start():
    rng = rng_for("frontier written")
    indptr, indices = csr_graph(rng, 20)
    check(push_writing_indices, indptr, indices, rng.random(20), 3)
    assert f"'indices' it reads are {WHOLE_SCAN}" not in push_writing_indices.explain()
