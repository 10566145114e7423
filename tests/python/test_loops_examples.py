"""The issue's example kernels (spmv, saxpy, row sums, a 5-point stencil, an
atomic histogram) against their undecorated versions, over dtypes, sizes and
array layouts."""

import numpy as np
import pytest

import plait
from oracle import (FLOAT_DTYPES, LAYOUTS_1D, LAYOUTS_2D, SHAPES_2D, SIZES, check, dtype_id, make,
                    poisoned, random_array, reduction_rtol, rng_for, with_layout)


@plait.jit
def spmv(indptr, indices, data, x):
    n = indptr.shape[0] - 1
    y = np.empty(n, dtype=data.dtype)
    #pragma parallel for
    for i in range(n):
        acc = 0.0
        #pragma simd
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        y[i] = acc
    return y


def random_csr(rng, rows, cols, index_dtype, data_dtype, density=0.3):
    """A random CSR matrix (indptr, indices, data); some rows are empty."""
    counts = rng.binomial(cols, density, size=rows) if cols else np.zeros(rows, dtype=np.int64)
    indptr = np.zeros(rows + 1, dtype=index_dtype)
    indptr[1:] = np.cumsum(counts)
    indices = np.concatenate([np.sort(rng.choice(cols, size=c, replace=False)) for c in counts] or
                             [np.zeros(0)]).astype(index_dtype)
    data = random_array(rng, data_dtype, int(indptr[-1]))
    return indptr, indices, data


@pytest.mark.parametrize("rows, cols", [(0, 0), (1, 1), (1, 7), (7, 5), (50, 61), (300, 200)])
@pytest.mark.parametrize("index_dtype, data_dtype", [(np.int32, np.float64), (np.int64, np.float64),
                                                     (np.int32, np.float32)],
                         ids=["i32-f64", "i64-f64", "i32-f32"])
def test_spmv(rows, cols, index_dtype, data_dtype):
    rng = rng_for("spmv", rows, cols, dtype_id(index_dtype), dtype_id(data_dtype))
    indptr, indices, data = random_csr(rng, rows, cols, index_dtype, data_dtype)
    x = random_array(rng, data_dtype, cols)
    check(spmv, indptr, indices, data, x, rtol=reduction_rtol(data_dtype), atol=1e-6)


@pytest.mark.parametrize("rows, cols", [(1, 1), (9, 13), (100, 80)])
def test_spmv_strided_x(rows, cols):
    rng = rng_for("spmv-strided", rows, cols)
    indptr, indices, data = random_csr(rng, rows, cols, np.int32, np.float64)
    x = make(rng, np.float64, cols, "reversed")
    check(spmv, indptr, indices, data, x, rtol=1e-12, atol=1e-12)


@plait.jit
def saxpy(a, x, y):
    #pragma parallel for
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("layout", LAYOUTS_1D)
def test_saxpy(n, dtype, layout):
    rng = rng_for("saxpy", n, dtype_id(dtype), layout)
    x = make(rng, dtype, n, layout)
    y = make(rng, dtype, n, layout)
    check(saxpy, 2.5, x, y)


@plait.jit
def row_sums(A, out):
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0
        for j in range(A.shape[1]):
            s += A[i, j]
        out[i] = s


@pytest.mark.parametrize("shape", SHAPES_2D, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS_2D)
def test_row_sums_layouts(shape, layout):
    rng = rng_for("row_sums", shape, layout)
    A = make(rng, np.float64, shape, layout)
    check(row_sums, A, poisoned(shape[0], np.float64), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=dtype_id)
def test_row_sums_dtypes(dtype):
    rng = rng_for("row_sums_dtypes", dtype_id(dtype))
    A = make(rng, dtype, (37, 29))
    check(row_sums, A, poisoned(37, dtype), rtol=reduction_rtol(dtype), atol=1e-5)


@plait.jit
def stencil5(a, out):
    n, m = a.shape
    #pragma parallel for
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) - a[i, j]


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (2, 5), (3, 3), (8, 13), (64, 33)], ids=str)
# float32 runs on C arrays only, to keep the number of compiled signatures small.
@pytest.mark.parametrize("layout, dtype", [("C", np.float64), ("F", np.float64), ("strided", np.float64),
                                           ("C", np.float32)], ids=["C-f64", "F-f64", "strided-f64", "C-f32"])
def test_stencil5(shape, layout, dtype):
    rng = rng_for("stencil5", shape, layout, dtype_id(dtype))
    a = make(rng, dtype, shape, layout)
    check(stencil5, a, poisoned(shape, dtype, layout))


@plait.jit
def histogram(values, nbins, hist):
    #pragma parallel for
    for i in range(values.shape[0]):
        b = values[i] % nbins
        #pragma atomic
        hist[b] += 1


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", (np.int32, np.int64), ids=dtype_id)
def test_histogram_atomic(n, dtype):
    rng = rng_for("histogram", n, dtype_id(dtype))
    values = make(rng, dtype, n, low=-1000, high=1000)
    check(histogram, values, 13, np.zeros(13, dtype=np.int64))


@plait.jit
def weighted_histogram(bins, weights, hist):
    #pragma parallel for
    for i in range(bins.shape[0]):
        #pragma atomic
        hist[bins[i]] += weights[i]


@pytest.mark.parametrize("n", (0, 1, 100, 5000))
def test_histogram_atomic_float(n):
    rng = rng_for("weighted_histogram", n)
    bins = make(rng, np.int64, n, low=0, high=7)
    weights = make(rng, np.float64, n, low=0.5, high=1.5)
    check(weighted_histogram, bins, weights, np.zeros(7), rtol=1e-12)


@pytest.mark.parametrize("shape", ((0,), (0, 3), (3, 0)), ids=str)
def test_atomic_updates_of_an_array_without_elements(shape):
    # No per-thread copies of an array without elements (an OpenMP reduction
    # over an empty array section crashes); with no updates nothing runs.
    @plait.jit
    def updates(rows, weights, out):
        #pragma parallel for
        for i in range(rows.shape[0]):
            for j in range(out.shape[1]):
                #pragma atomic
                out[rows[i], j] += weights[i]

    @plait.jit
    def updates_1d(bins, weights, out):
        #pragma parallel for
        for i in range(bins.shape[0]):
            #pragma atomic
            out[bins[i]] += weights[i]

    empty = np.zeros(0, dtype=np.int64)
    if len(shape) == 1:
        check(updates_1d, empty, np.zeros(0), np.zeros(shape))
    else:
        rows = empty if shape[0] == 0 else np.array([0, 2, 2], dtype=np.int64)
        check(updates, rows, make(rng_for("empty-updates", shape), np.float64, rows.shape[0]), np.zeros(shape))


@plait.jit
def atomic_max_min(bins, values, hi, lo):
    #pragma parallel for
    for i in range(bins.shape[0]):
        #pragma atomic
        hi[bins[i]] = max(hi[bins[i]], values[i])
        #pragma atomic
        lo[bins[i]] = min(lo[bins[i]], values[i])


@pytest.mark.parametrize("n", (0, 1, 2000))
def test_atomic_max_min(n):
    rng = rng_for("atomic_max_min", n)
    bins = make(rng, np.int64, n, low=0, high=5)
    values = make(rng, np.int64, n, low=-10**6, high=10**6)
    check(atomic_max_min, bins, values, np.full(5, -10**7, dtype=np.int64), np.full(5, 10**7, dtype=np.int64))


@plait.jit
def atomic_ops(bins, values, total, product, count):
    #pragma parallel for
    for i in range(bins.shape[0]):
        #pragma atomic
        total[bins[i]] -= values[i]
        #pragma atomic
        product[bins[i]] *= 2
        #pragma atomic
        count[bins[i]] += 1


def test_atomic_update_ops():
    rng = rng_for("atomic_ops")
    bins = make(rng, np.int32, 120, low=0, high=3)
    values = make(rng, np.int64, 120)
    check(atomic_ops, bins, values, np.zeros(3, dtype=np.int64), np.ones(3), np.zeros(3, dtype=np.int32))


@pytest.mark.parametrize("layout", ("strided", "reversed"))
def test_histogram_atomic_strided_output(layout):
    rng = rng_for("histogram-strided", layout)
    values = make(rng, np.int64, 500, low=0, high=10**6)
    hist = with_layout(np.zeros(13, dtype=np.int64), layout)
    check(histogram, values, 13, hist)


@plait.jit
def scale_3d(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                out[i, j, k] = a[i, j, k] * 2 - k


@pytest.mark.parametrize("shape", [(0, 2, 3), (1, 1, 1), (3, 4, 5), (6, 1, 7)], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS_2D)
def test_elementwise_3d_layouts(shape, layout):
    rng = rng_for("scale_3d", shape, layout)
    a = make(rng, np.float64, shape, layout)
    check(scale_3d, a, poisoned(shape, np.float64, layout))


@plait.jit
def weighted_sum_4d(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                for m in range(a.shape[3]):
                    s += a[i, j, k, m] * (i + 2 * j + 3 * k + 4 * m)
    return s


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 4, 5), (3, 1, 2, 7)], ids=str)
@pytest.mark.parametrize("layout", ("C", "reversed"))
def test_4d_arrays(shape, layout):
    rng = rng_for("weighted_sum_4d", shape, layout)
    check(weighted_sum_4d, make(rng, np.int32, shape, layout))
