"""Arrays allocated inside kernels: np.empty/zeros/ones/full and the _like
forms with dtype=, returned to the caller, and per-iteration temporaries
inside parallel loops."""

import numpy as np
import pytest

import plait
from oracle import check, dtype_id, make, poisoned, rng_for


@plait.jit
def allocate_1d(n):
    a = np.zeros(n)
    b = np.ones(n, dtype=np.int32)
    c = np.full(n, 7)
    d = np.full(n, 2.5, dtype=np.float32)
    e = np.empty(n, dtype=np.int64)
    for i in range(n):
        e[i] = i * i
    f = np.zeros(n, dtype=bool)
    g = np.ones(n, dtype=float)
    h = np.zeros(n, dtype=int)
    return a, b, c, d, e, f, g, h


@pytest.mark.parametrize("n", (0, 1, 7))
def test_allocate_1d(n):
    check(allocate_1d, n)


@plait.jit
def allocate_2d(m, n):
    a = np.zeros((m, n), dtype=np.float32)
    b = np.ones((n, m))
    c = np.full((m, n), -3, dtype=np.int64)
    d = np.empty((m, n), dtype=np.bool_)
    for i in range(m):
        for j in range(n):
            a[i, j] = i - j
            d[i, j] = (i + j) % 2 == 0
    return a, b, c, d


@pytest.mark.parametrize("m, n", [(0, 3), (1, 1), (4, 9)])
def test_allocate_2d(m, n):
    check(allocate_2d, m, n)


@plait.jit
def allocate_with_order_and_dtype_string(m, n):
    a = np.zeros((m, n), dtype="float32", order="F")
    b = np.empty((m, n), order="C", dtype="int64")
    for j in range(n):
        for i in range(m):
            a[i, j] = i * n + j
            b[i, j] = i - j
    return a, b


def test_allocate_order_and_dtype_string():
    a, b = check(allocate_with_order_and_dtype_string, 3, 4)
    assert a.flags.f_contiguous and b.flags.c_contiguous


@plait.jit
def allocate_3d(x):
    out = np.zeros((x.shape[0], 2, 3), dtype=x.dtype)
    for i in range(x.shape[0]):
        for j in range(2):
            for k in range(3):
                out[i, j, k] = x[i] * (j + k)
    return out


def test_allocate_3d():
    check(allocate_3d, make(rng_for("allocate_3d"), np.float64, 5))


@plait.jit
def allocate_like(x):
    a = np.empty_like(x)
    b = np.zeros_like(x)
    c = np.ones_like(x)
    d = np.full_like(x, 3)
    e = np.zeros_like(x, dtype=np.float64)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            a[i, j] = x[i, j]
            e[i, j] = x[i, j] * 0.5
    return a, b, c, d, e


@pytest.mark.parametrize("dtype", (np.bool_, np.int32), ids=dtype_id)
def test_allocate_like_dtypes(dtype):
    check(allocate_like, make(rng_for("allocate_like", dtype_id(dtype)), dtype, (3, 4)))


@pytest.mark.parametrize("layout", ("C", "F", "strided"))
def test_allocate_like_layouts(layout):
    x = make(rng_for("allocate_like_layout", layout), np.float64, (5, 3), layout)
    check(allocate_like, x)


@plait.jit
def allocate_like_order(x):
    return np.zeros_like(x)


@pytest.mark.parametrize("layout", ("C", "F"))
def test_like_keeps_memory_order(layout):
    x = make(rng_for("like_order", layout), np.float64, (4, 6), layout)
    got = allocate_like_order(x)
    expected = allocate_like_order.py_func(x)
    assert got.flags.c_contiguous == expected.flags.c_contiguous
    assert got.flags.f_contiguous == expected.flags.f_contiguous


@plait.jit
def fresh_each_call(n):
    out = np.zeros(n)
    out[0] += 1.0
    return out


def test_allocated_arrays_belong_to_the_caller():
    first = fresh_each_call(4)
    second = fresh_each_call(4)
    assert not np.shares_memory(first, second)
    first[1] = 5.0
    del second
    third = fresh_each_call(4)
    np.testing.assert_array_equal(first, [1.0, 5.0, 0.0, 0.0])
    np.testing.assert_array_equal(third, [1.0, 0.0, 0.0, 0.0])
    assert first.flags.writeable


@plait.jit
def per_iteration_temporary(A, out):
    m = A.shape[1]
    #pragma parallel for
    for i in range(A.shape[0]):
        tmp = np.empty(m)
        for j in range(m):
            tmp[j] = A[i, j] * A[i, j]
        s = 0.0
        for j in range(m):
            s += tmp[m - 1 - j]
        out[i] = s


@plait.jit
def per_iteration_sized_temporary(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        buf = np.zeros(i + 1, dtype=np.int64)
        for j in range(i + 1):
            buf[j] = x[j] + j
        total = 0
        for j in range(i + 1):
            total += buf[j]
        out[i] = total


@plait.jit
def per_iteration_growing_empty(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        buf = np.empty(i + 1)
        for j in range(i + 1):
            buf[j] = x[j] * 2.0
        out[i] = buf[i] + buf[0]


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (7, 5), (300, 17)], ids=str)
def test_temporaries_inside_parallel_loop(shape):
    rng = rng_for("temporaries", shape)
    A = make(rng, np.float64, shape)
    check(per_iteration_temporary, A, poisoned(shape[0], np.float64), rtol=1e-12)
    x = make(rng, np.int64, shape[0])
    check(per_iteration_sized_temporary, x, poisoned(shape[0], np.int64))
    y = make(rng, np.float64, shape[0])
    check(per_iteration_growing_empty, y, poisoned(shape[0], np.float64))


def test_an_empty_temporary_of_fixed_extents_is_allocated_once_per_thread():
    # np.empty promises no contents: one buffer per thread serves every
    # iteration it runs. Extents that change with the iteration, or zeros,
    # keep one allocation per iteration.
    A = np.ones((3, 4))
    per_iteration_temporary(A, np.empty(3))
    per_iteration_sized_temporary(np.ones(3, dtype=np.int64), np.empty(3, dtype=np.int64))
    per_iteration_growing_empty(np.ones(3), np.empty(3))
    assert "allocated once per thread" in per_iteration_temporary.explain()
    assert "allocated once per thread" not in per_iteration_sized_temporary.explain()
    assert "allocated once per thread" not in per_iteration_growing_empty.explain()


@plait.jit
def allocate_in_loop_and_return_last(n):
    out = np.zeros(1)
    for i in range(n):
        out = np.full(i + 1, i * 0.5)
    return out


@pytest.mark.parametrize("n", (0, 1, 5))
def test_reassigned_array_local(n):
    check(allocate_in_loop_and_return_last, n)
