"""Parallel and vector loops: reductions with and without clauses,
plait.prange, nested (collapsed) and non-perfectly nested parallel loops,
`parallel for simd`, `simd`, `simd(8)`, `num_threads(2)`, `private(...)`
and `sequential for`."""

import numpy as np
import pytest

import plait
from oracle import (FLOAT_DTYPES, LAYOUTS_2D, SHAPES_2D, check, dtype_id, make, poisoned, reduction_rtol, rng_for)

REDUCTION_SIZES = (0, 1, 2, 7, 33, 1000, 10007)
# Each distinct signature costs a C++ compile, so the dtypes and layouts are
# spread over the kernels: the detected reductions run on int32, float32 and a
# strided float64 view, the ones with a clause on int64 and float64.
DETECTED_CASES = [(np.int32, "C"), (np.float32, "C"), (np.float64, "reversed")]
CLAUSE_CASES = [(np.int64, "C"), (np.float64, "C")]


def reduction_params(cases, sizes):
    """(n, dtype, layout) triples; views of fewer than 2 elements are
    contiguous, so non-C layouts start at 2 elements."""
    return [pytest.param(n, dtype, layout, id=f"{dtype_id(dtype)}-{layout}-{n}")
            for dtype, layout in cases for n in sizes if layout == "C" or n >= 2]


DETECTED = reduction_params(DETECTED_CASES, REDUCTION_SIZES)
CLAUSE = reduction_params(CLAUSE_CASES, REDUCTION_SIZES)
DETECTED_NONEMPTY = reduction_params(DETECTED_CASES, REDUCTION_SIZES[1:])
CLAUSE_NONEMPTY = reduction_params(CLAUSE_CASES, REDUCTION_SIZES[1:])


def reduction_input(name, n, dtype, layout, low, high):
    rng = rng_for(name, n, dtype_id(dtype), layout)
    return make(rng, dtype, n, layout, low, high)


@plait.jit
def sum_detected(x):
    s = 0
    #pragma parallel for
    for i in range(x.shape[0]):
        s += x[i]
    return s


@plait.jit
def sum_clause(x):
    s = 0
    #pragma parallel for reduction(+:s)
    for i in range(x.shape[0]):
        s += x[i]
    return s


def check_sum(kernel, n, dtype, layout):
    x = reduction_input("sum", n, dtype, layout, 0 if dtype in FLOAT_DTYPES else -100, 100)
    # An empty loop leaves the Python int 0, which the kernel types as the
    # accumulator's NumPy type (one type per local): compare values only.
    check(kernel, x, rtol=reduction_rtol(dtype), types=n > 0)


@pytest.mark.parametrize("n, dtype, layout", DETECTED)
def test_sum_reduction_detected(n, dtype, layout):
    check_sum(sum_detected, n, dtype, layout)


@pytest.mark.parametrize("n, dtype, layout", CLAUSE)
def test_sum_reduction_clause(n, dtype, layout):
    check_sum(sum_clause, n, dtype, layout)


@plait.jit
def product_detected(x):
    p = 1
    #pragma parallel for
    for i in range(x.shape[0]):
        p = p * x[i]
    return p


@plait.jit
def product_clause(x):
    p = 1
    #pragma parallel for reduction(*:p)
    for i in range(x.shape[0]):
        p *= x[i]
    return p


def product_input(n, dtype, layout):
    if dtype in FLOAT_DTYPES:
        return reduction_input("product", n, dtype, layout, 0.999, 1.001)
    # -1, 1 and a few 2s: the exact product fits int32.
    x = reduction_input("product", n, dtype, layout, -1, 2)
    x[x == 0] = 1
    if n > 10:
        x[::n // 10] = 2
    return x


def check_product(kernel, n, dtype, layout):
    x = product_input(n, dtype, layout)
    rtol = {np.float32: 1e-4, np.float64: 1e-11}.get(dtype)
    check(kernel, x, rtol=rtol, types=n > 0)


@pytest.mark.parametrize("n, dtype, layout", DETECTED)
def test_product_reduction_detected(n, dtype, layout):
    check_product(product_detected, n, dtype, layout)


@pytest.mark.parametrize("n, dtype, layout", CLAUSE)
def test_product_reduction_clause(n, dtype, layout):
    check_product(product_clause, n, dtype, layout)


@plait.jit
def max_detected(x):
    m = x[0]
    #pragma parallel for
    for i in range(1, x.shape[0]):
        m = max(m, x[i])
    return m


@plait.jit
def max_clause(x):
    m = x[0]
    #pragma parallel for reduction(max:m)
    for i in range(1, x.shape[0]):
        m = max(m, x[i])
    return m


@plait.jit
def min_detected(x):
    m = x[0]
    #pragma parallel for
    for i in range(1, x.shape[0]):
        m = min(m, x[i])
    return m


@plait.jit
def min_clause(x):
    m = x[0]
    #pragma parallel for reduction(min:m)
    for i in range(1, x.shape[0]):
        m = min(x[i], m)
    return m


@pytest.mark.parametrize("kernel", [max_detected, min_detected], ids=["max", "min"])
@pytest.mark.parametrize("n, dtype, layout", DETECTED_NONEMPTY)
def test_max_min_reduction_detected(kernel, n, dtype, layout):
    x = reduction_input("maxmin", n, dtype, layout, -10**6, 10**6)
    check(kernel, x)


@pytest.mark.parametrize("kernel", [max_clause, min_clause], ids=["max", "min"])
@pytest.mark.parametrize("n, dtype, layout", CLAUSE_NONEMPTY)
def test_max_min_reduction_clause(kernel, n, dtype, layout):
    x = reduction_input("maxmin", n, dtype, layout, -10**6, 10**6)
    check(kernel, x)


@plait.jit
def row_max_simd(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(max: m)
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        out[i] = m


@plait.jit
def row_min_simd(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(min: m)
        for j in range(x.shape[1]):
            m = min(m, x[i, j])
        out[i] = m


@plait.jit
def row_max_reversed(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(max: m)
        for j in range(x.shape[1]):
            m = max(x[i, j], m)
        out[i] = m


@plait.jit
def row_min_reversed(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(min: m)
        for j in range(x.shape[1]):
            m = min(x[i, j], m)
        out[i] = m


@pytest.mark.parametrize("kernel", [row_max_simd, row_min_simd, row_max_reversed, row_min_reversed, max_clause,
                                    min_clause],
                         ids=["row max", "row min", "row max reversed", "row min reversed", "max", "min"])
@pytest.mark.parametrize("where", [0, 1, 17, -1])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_nan_in_float_max_min_reductions(kernel, where, dtype):
    # Builtin max(m, x) keeps a NaN m (Python compares False with NaN) and
    # never takes a NaN x: a NaN before the loop must survive the reduction.
    # The reversed max(x, m) takes a NaN x, which the next element replaces:
    # its result depends on the order (the CPU runs such a vector loop in
    # order).
    x = rng_for("nan maxmin").random((5, 40)).astype(dtype)
    x[::2, where] = np.nan
    if kernel in (max_clause, min_clause):
        check(kernel, x[:, where].copy())
        check(kernel, np.ascontiguousarray(x[1]))
    else:
        check(kernel, x, np.empty(5, dtype))


@plait.jit
def max_reversed_detected(x, start):
    m = start[0]
    #pragma parallel for
    for i in range(x.shape[0]):
        m = max(x[i], m)
    return m


@plait.jit
def min_reversed_detected(x, start):
    m = start[0]
    #pragma parallel for
    for i in range(x.shape[0]):
        m = min(x[i], m)
    return m


@plait.jit
def max_reversed_clause(x, start):
    m = start[0]
    #pragma parallel for reduction(max: m)
    for i in range(x.shape[0]):
        m = max(x[i], m)
    return m


@plait.jit
def min_reversed_clause_simd(x, start):
    m = start[0]
    #pragma parallel for simd reduction(min: m)
    for i in range(x.shape[0]):
        m = min(x[i], m)
    return m


@plait.jit
def max_mixed_forms(x, start):
    m = start[0]
    #pragma parallel for
    for i in range(x.shape[0]):
        m = max(x[i], m)
        m = max(m, x[i] - 0.25)
    return m


@plait.jit
def maximum_detected(x, start):
    m = start[0]
    #pragma parallel for
    for i in range(x.shape[0]):
        m = np.maximum(m, x[i])
    return m


@plait.jit
def minimum_simd(x, start):
    m = start[0]
    #pragma simd
    for i in range(x.shape[0]):
        m = np.minimum(x[i], m)
    return m


@plait.jit
def max_reversed_collapsed(x, start):
    m = start[0]
    #pragma parallel for
    for i in range(x.shape[0]):
        #pragma parallel for
        for j in range(x.shape[1]):
            m = max(x[i, j], m)
    return m


NAN_SIZES = (0, 1, 2, 7, 33, 1000, 10007)


def nan_cases(name, shape, dtype):
    """(x, start) pairs: values in [0, 1) with NaN nowhere, first, in the
    middle, last and in several places, each with a start value that is NaN,
    below, inside and above the values' range."""
    rng = rng_for(name, shape, dtype_id(dtype))
    n = int(np.prod(shape))
    wheres = [[], [0], [n // 2], [n - 1], rng.integers(0, n, 3)] if n else [[]]
    for where in wheres:
        for start in (np.nan, -1.0, 0.5, 2.0):
            x = rng.random(shape).astype(dtype)
            x.flat[list(where)] = np.nan
            yield x, np.array([start], dtype)


def with_threads(kernel, threads, monkeypatch):
    """A fresh dispatcher of kernel's Python function on `threads` threads
    (PLAIT_NUM_THREADS)."""
    monkeypatch.setenv("PLAIT_NUM_THREADS", str(threads))
    compiled = plait.jit(kernel.py_func)
    assert compiled.num_threads == threads
    return compiled


@pytest.mark.parametrize("threads", (2, 3))
@pytest.mark.parametrize("n", NAN_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("kernel", [max_reversed_detected, min_reversed_detected, max_reversed_clause,
                                    min_reversed_clause_simd, max_mixed_forms], ids=lambda k: k.__name__)
def test_nan_in_float_max_min_reductions_reversed(kernel, dtype, n, threads, monkeypatch):
    # m = max(x, m) returns x unless m compares greater: a NaN x replaces m,
    # the next element replaces the NaN, and a NaN m before the loop goes at
    # the first element. The result depends on where the NaNs are: the
    # threads' partial results combine in the order of their chunks, or the
    # loop runs in order when the variable is updated in another form too.
    compiled = with_threads(kernel, threads, monkeypatch)
    for x, start in nan_cases(kernel.__name__, n, dtype):
        check(compiled, x, start)
    order = "runs in order" if kernel is max_mixed_forms else "combine in thread order"
    assert order in compiled.explain()


@pytest.mark.parametrize("n", NAN_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("kernel", [maximum_detected, minimum_simd], ids=lambda k: k.__name__)
def test_nan_in_float_max_min_reductions_maximum(kernel, dtype, n, monkeypatch):
    # np.maximum and np.minimum propagate a NaN from either side, in any
    # order: the combination of the partial results keeps it too.
    compiled = with_threads(kernel, 2, monkeypatch)
    for x, start in nan_cases(kernel.__name__, n, dtype):
        check(compiled, x, start)


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3, 5), (17, 9), (40, 33)], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_nan_in_float_max_min_reductions_collapsed(dtype, shape, monkeypatch):
    # The collapsed nest's chunks follow the order of its iterations.
    compiled = with_threads(max_reversed_collapsed, 2, monkeypatch)
    for x, start in nan_cases("collapsed", shape, dtype):
        check(compiled, x, start)


@plait.jit
def max_in_time_loop(x, starts, out):
    for t in range(out.shape[0]):
        m = starts[t]
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5
        #pragma parallel for
        for i in range(x.shape[0]):
            m = max(m, x[i])
        out[t] = m


@plait.jit
def min_in_time_loop(x, starts, out):
    m = starts[0]
    for t in range(out.shape[0]):
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] + 0.5
        #pragma parallel for simd reduction(min: m)
        for i in range(x.shape[0]):
            m = min(m, x[i])
        out[t] = m
        m = starts[t]


@plait.jit
def max_reversed_in_time_loop(x, starts, out):
    for t in range(out.shape[0]):
        m = starts[t]
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5
        #pragma parallel for
        for i in range(x.shape[0]):
            m = max(x[i], m)
        out[t] = m


@plait.jit
def min_reversed_in_time_loop(x, starts, out):
    m = starts[0]
    for t in range(out.shape[0]):
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] + 0.5
        #pragma parallel for
        for i in range(x.shape[0]):
            m = min(x[i], m)
        out[t] = m
        m = starts[t]


@plait.jit
def maximum_in_time_loop(x, starts, out):
    for t in range(out.shape[0]):
        m = starts[t]
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5
        #pragma parallel for
        for i in range(x.shape[0]):
            m = np.maximum(x[i], m)
        out[t] = m


@plait.jit
def mixed_forms_in_time_loop(x, starts, out):
    for t in range(out.shape[0]):
        m = starts[t]
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5
        #pragma parallel for
        for i in range(x.shape[0]):
            m = min(x[i], m)
            m = min(m, x[i] + 0.125)
        out[t] = m


@pytest.mark.parametrize("threads", (2, 3))
@pytest.mark.parametrize("n", NAN_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("kernel", [max_in_time_loop, min_in_time_loop, max_reversed_in_time_loop,
                                    min_reversed_in_time_loop, maximum_in_time_loop, mixed_forms_in_time_loop],
                         ids=lambda k: k.__name__)
def test_nan_in_float_max_min_reductions_in_time_loop(kernel, dtype, n, threads, monkeypatch):
    # The loops of a time loop run as `omp for` loops of one parallel region;
    # their float max/min reductions keep Python's NaN rules as a lone
    # `parallel for` does, a NaN held before the loop included.
    compiled = with_threads(kernel, threads, monkeypatch)
    for x, start in nan_cases(kernel.__name__, n, dtype):
        starts = np.array([start[0], 0.25, np.nan, 3.0, -3.0], dtype)
        check(compiled, x, starts, np.empty(5, dtype))
    assert "runs as one parallel region" in compiled.explain()


@plait.jit
def several_reductions(x):
    total = 0.0
    count = 0
    hi = x[0]
    lo = x[0]
    #pragma parallel for
    for i in range(x.shape[0]):
        total += x[i]
        if x[i] > 0:
            count += 1
        hi = max(hi, x[i])
        lo = min(lo, x[i])
    return total, count, hi, lo


@plait.jit
def several_reductions_clause(x):
    total = 0.0
    sq = 0.0
    #pragma parallel for reduction(+:total, sq)
    for i in range(x.shape[0]):
        total += x[i]
        sq += x[i] * x[i]
    return total, sq


@pytest.mark.parametrize("n", (1, 2, 1000, 10007))
def test_several_reductions_in_one_loop(n):
    x = reduction_input("several", n, np.float64, "C", -1, 1)
    check(several_reductions, x, rtol=1e-10, atol=1e-12)
    check(several_reductions_clause, x, rtol=1e-10, atol=1e-12)


@plait.jit
def prange_squares(x, out):
    for i in plait.prange(x.shape[0]):
        out[i] = x[i] * x[i]


@plait.jit
def prange_sum(x):
    s = 0.0
    for i in plait.prange(x.shape[0]):
        s += x[i]
    return s


@pytest.mark.parametrize("n", (0, 1, 7, 1000))
@pytest.mark.parametrize("layout", ("C", "reversed"))
def test_prange(n, layout):
    rng = rng_for("prange", n, layout)
    x = make(rng, np.float64, n, layout)
    check(prange_squares, x, poisoned(n, np.float64, layout))
    if layout == "C":
        check(prange_sum, x, rtol=1e-12, atol=1e-12, types=n > 0)


@plait.jit
def collapsed_add(a, b, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma parallel for
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] + 2 * b[i, j]


@pytest.mark.parametrize("shape", SHAPES_2D, ids=str)
@pytest.mark.parametrize("layout", ("C", "F", "transposed", "strided"))
def test_nested_parallel_loops(shape, layout):
    rng = rng_for("collapse", shape, layout)
    a = make(rng, np.float64, shape, layout)
    b = make(rng, np.float64, shape, layout)
    check(collapsed_add, a, b, poisoned(shape, np.float64, layout))


@plait.jit
def collapsed_prange_3d(a, out):
    for i in plait.prange(a.shape[0]):
        for j in plait.prange(a.shape[1]):
            for k in plait.prange(a.shape[2]):
                out[i, j, k] = a[i, j, k] * (i + 1) - j + k


@pytest.mark.parametrize("shape", [(0, 2, 3), (1, 1, 1), (3, 5, 7), (16, 9, 4)], ids=str)
def test_nested_prange_3d(shape):
    rng = rng_for("collapse3d", shape)
    a = make(rng, np.int64, shape)
    check(collapsed_prange_3d, a, poisoned(shape, np.int64))


@plait.jit
def collapsed_sum(a):
    s = 0.0
    #pragma parallel for reduction(+:s)
    for i in range(a.shape[0]):
        #pragma parallel for
        for j in range(a.shape[1]):
            s += a[i, j]
    return s


@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (100, 33)], ids=str)
def test_nested_parallel_reduction(shape):
    a = make(rng_for("collapse-sum", shape), np.float64, shape, low=0, high=1)
    check(collapsed_sum, a, rtol=1e-12)


@plait.jit
def triangular_fill(out):
    n = out.shape[0]
    #pragma parallel for
    for i in range(n):
        out[i, i] = 1.0
        s = 0.0
        for j in range(i):
            s += j
            out[i, j] = s
        for j in range(i + 1, n):
            out[i, j] = -j


@plait.jit
def row_normalize(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        total = 0.0
        for j in range(a.shape[1]):
            total += a[i, j]
        if total == 0:
            continue
        #pragma simd
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] / total


@pytest.mark.parametrize("n", (0, 1, 5, 40))
def test_non_perfectly_nested(n):
    check(triangular_fill, poisoned((n, n), np.float64))
    rng = rng_for("row_normalize", n)
    a = make(rng, np.float64, (n, n + 3), low=0.5, high=2)
    if n > 2:
        a[1, :] = 0.0
    check(row_normalize, a, poisoned((n, n + 3), np.float64))


@pytest.mark.parametrize("layout", LAYOUTS_2D)
def test_non_perfectly_nested_layouts(layout):
    rng = rng_for("row_normalize-layout", layout)
    a = make(rng, np.float64, (9, 14), layout, low=0.5, high=2)
    check(row_normalize, a, poisoned((9, 14), np.float64, layout))


@plait.jit
def scale_parallel_simd(x, out, c):
    #pragma parallel for simd
    for i in range(x.shape[0]):
        out[i] = x[i] * c + 1.0


@plait.jit
def scale_simd(x, out, c):
    #pragma simd
    for i in range(x.shape[0]):
        out[i] = x[i] * c + 1.0


@plait.jit
def scale_simd8(x, out, c):
    #pragma simd(8)
    for i in range(x.shape[0]):
        out[i] = x[i] * c + 1.0


@pytest.mark.parametrize("kernel", [scale_parallel_simd, scale_simd, scale_simd8],
                         ids=["parallel-for-simd", "simd", "simd8"])
@pytest.mark.parametrize("n, dtype, layout", reduction_params([(np.float32, "C"), (np.float64, "strided")],
                                                               (0, 1, 7, 8, 9, 1001)))
def test_vector_loops(kernel, n, dtype, layout):
    rng = rng_for("simd", n, dtype_id(dtype), layout)
    x = make(rng, dtype, n, layout)
    check(kernel, x, poisoned(n, dtype, layout), 1.5)


@plait.jit
def simd_dot(x, y):
    s = 0.0
    #pragma simd
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


@plait.jit
def simd_dynamic_bounds(x, lo, hi):
    s = 0
    #pragma simd(8)
    for i in range(lo, hi):
        s += x[i]
    return s


@pytest.mark.parametrize("n", (1, 8, 1001))
def test_simd_reductions(n):
    rng = rng_for("simd_dot", n)
    x = make(rng, np.float64, n, low=0, high=1)
    y = make(rng, np.float64, n, low=0, high=1)
    check(simd_dot, x, y, rtol=1e-12)
    xi = make(rng, np.int64, n)
    for lo, hi in [(0, n), (n // 3, n), (n // 2, n // 2), (1, n - 1)]:
        check(simd_dynamic_bounds, xi, lo, hi, types=hi > lo)


@plait.jit
def two_threads(x, out):
    #pragma parallel for num_threads(2)
    for i in range(x.shape[0]):
        out[i] = x[i] - 1


@plait.jit
def two_threads_sum(x):
    s = 0
    #pragma parallel for num_threads(2) reduction(+:s)
    for i in range(x.shape[0]):
        s += x[i]
    return s


@pytest.mark.parametrize("n", (0, 1, 1001))
def test_num_threads_clause(n):
    rng = rng_for("num_threads", n)
    x = make(rng, np.int64, n)
    check(two_threads, x, poisoned(n, np.int64))
    check(two_threads_sum, x, types=n > 0)


@plait.jit
def private_temp(x, out):
    t = 0.0
    #pragma parallel for private(t)
    for i in range(x.shape[0]):
        t = x[i] * 2.0
        out[i] = t + t * t


@plait.jit
def loop_local_temp(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        t = x[i] * 2.0
        u = t - 1.0
        out[i] = t * u


@pytest.mark.parametrize("n", (0, 1, 7, 1001))
def test_private_clause(n):
    rng = rng_for("private", n)
    x = make(rng, np.float64, n)
    check(private_temp, x, poisoned(n, np.float64))
    check(loop_local_temp, x, poisoned(n, np.float64))


@plait.jit
def prefix_sum(x, out):
    s = 0
    #pragma sequential for
    for i in range(x.shape[0]):
        s += x[i]
        out[i] = s
    return s


@pytest.mark.parametrize("n", (1, 2, 7, 1001))
@pytest.mark.parametrize("layout", ("reversed",))
def test_sequential_for(n, layout):
    rng = rng_for("prefix_sum", n, layout)
    x = make(rng, np.int64, n, layout)
    check(prefix_sum, x, poisoned(n, np.int64, layout))


@plait.jit
def parallel_alias(x, out):
    #pragma parallel
    for i in range(x.shape[0]):
        out[i] = x[x.shape[0] - 1 - i]


@pytest.mark.parametrize("n", (0, 1, 8, 1001))
def test_parallel_alias(n):
    x = make(rng_for("alias", n), np.int32, n)
    check(parallel_alias, x, poisoned(n, np.int32))


@plait.jit
def parallel_negative_step(x, out):
    #pragma parallel for
    for i in range(x.shape[0] - 1, -1, -2):
        out[i] = x[i] + i


@plait.jit
def parallel_dynamic_range(x, out, start, stop, step):
    #pragma parallel for
    for i in range(start, stop, step):
        out[i] = x[i] * 3


@pytest.mark.parametrize("n", (0, 1, 2, 9, 1000))
def test_parallel_loop_ranges(n):
    rng = rng_for("parallel_ranges", n)
    x = make(rng, np.int64, n)
    check(parallel_negative_step, x, poisoned(n, np.int64))
    for start, stop, step in [(0, n, 1), (1, n, 3), (n - 1, -1, -1), (n - 1, 0, -4), (n, 0, 1), (0, n, 1000)]:
        check(parallel_dynamic_range, x, poisoned(n, np.int64), start, stop, step)


@plait.jit
def simd_loop_over_a_whole_array_maximum(a, out):
    #pragma simd
    for i in range(out.shape[0]):
        out[i] = np.max(a) + i


def test_whole_array_reduction_inside_a_simd_loop_runs_serially():
    # OpenMP allows no loop construct inside a simd loop: the reduction's own
    # vector loop runs in order in each lane.
    rng = np.random.default_rng(11)
    for n in (0, 1, 7):
        check(simd_loop_over_a_whole_array_maximum, rng.random(9), poisoned(n, np.float64))
    assert "runs serially: it is inside a vector loop" in simd_loop_over_a_whole_array_maximum.explain()


@plait.jit
def inner_loop_variable_never_read(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        flag = True
        #pragma simd
        for j in range(out.shape[0]):
            unused = flag
        out[i] = a[i]
    return out


def test_an_inner_loop_whose_variable_is_never_read_is_private_to_the_parallel_loop():
    # The inner loop's variable is written in each parallel iteration and
    # read nowhere; it is private, as its loop is.
    rng = np.random.default_rng(12)
    for n in (0, 1, 9):
        check(inner_loop_variable_never_read, rng.random(n), poisoned(n, np.float64))
