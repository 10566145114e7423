"""Differential tests of array statements whose right side reads the target
at other elements than it writes, and of the fusion of statements that feed
each other: every kernel is compared with the same function undecorated.

Covered: snapshots of small views of the target (floyd_warshall's row and
column, with negative diagonals so that they change during the statement),
element operands of the target (`a - a[0]`), the choice between snapshots
and a whole temporary, local masks inlined into later reductions
(azimint_naive), softmax over 3-D and 4-D inputs, broadcasting of extents
that are 1 only at run time, and views bound to names and written.
"""

import numpy as np
import pytest

import plait
from oracle import NUMERIC_DTYPES as NUMERIC
from oracle import dtype_id
from test_array_exprs import arr, check, jitted

# ---------------------------------------------------------------- snapshots of small views


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


def eliminate(A):
    # Row k and column k change in step k unless A[k, k] == 1.
    for k in range(min(A.shape[0], A.shape[1])):
        A[:, :] = A - A[:, k][:, None] * A[k, :][None, :]
    return A


def subtract_first_row(A):
    A[:] = A - A[0, :]
    return A


def divide_by_last_column(A):
    A[:, :] = A / A[:, -1][:, None]
    return A


def subtract_first_element(a):
    a[:] = a - a[0]
    return a


def rows_minus_a_row(A, k):
    A[1:, :] = A[1:, :] - A[k, :]
    return A


def scale_column_by_its_first(A, j):
    A[:, j] = A[:, j] * A[0, j]
    return A


def shift_down_plus_a_row(A):
    # The shifted read is as large as the target: one whole temporary.
    A[1:, :] = A[:-1, :] + A[0, :]
    return A


def test_floyd_warshall_with_negative_distances(rng):
    # Negative entries on the diagonal change row k and column k during step k.
    for n in (0, 1, 2, 9, 40):
        path = rng.integers(-3, 20, size=(n, n)).astype(np.int32)
        check(floyd_warshall, path)


@pytest.mark.parametrize("dtype", NUMERIC, ids=dtype_id)
def test_floyd_warshall_every_dtype(rng, dtype):
    for n in (1, 7, 33):
        check(floyd_warshall, arr(rng, dtype, (n, n)))


@pytest.mark.parametrize("layout", ("F", "strided", "reversed", "transposed", "mixed"))
def test_floyd_warshall_of_views(rng, layout):
    check(floyd_warshall, arr(rng, np.int64, (17, 17), layout))


def test_floyd_warshall_snapshots_only_the_row_and_the_column():
    k = plait.jit(floyd_warshall)
    k(np.zeros((3, 3), np.int32))
    text = k.explain()
    assert "through 'path[:,k]', 'path[k,:]': copied into small temporaries first" in text, text
    assert "computed into a temporary first" not in text, text
    # No temporary of N x N elements.
    assert "empty<i32[:, ::1]>" not in k.inspect_ir(), k.inspect_ir()


@pytest.mark.parametrize("fn", (eliminate, subtract_first_row, divide_by_last_column, shift_down_plus_a_row),
                         ids=lambda f: f.__name__)
def test_small_views_of_the_target(rng, fn):
    for shape in ((1, 1), (2, 3), (7, 5), (40, 33)):
        check(fn, arr(rng, np.float64, shape, positive=fn is divide_by_last_column), rtol=1e-12)
    check(fn, arr(rng, np.float32, (9, 9), "F", positive=True), rtol=1e-5)
    check(fn, arr(rng, np.float64, (9, 6), "mixed", positive=True), rtol=1e-12)


def test_small_views_of_the_target_of_int_arrays(rng):
    for shape in ((1, 1), (7, 5), (4, 0)):
        check(subtract_first_row, arr(rng, np.int32, shape))
        check(eliminate, arr(rng, np.int64, shape))


def test_element_operands_of_the_target_are_read_before_the_stores(rng):
    for n in (1, 2, 9, 1000):
        check(subtract_first_element, arr(rng, np.float64, n))
        check(subtract_first_element, arr(rng, np.int32, n, "reversed"))
    for shape in ((1, 1), (3, 4), (30, 7)):
        for k in (0, -1):
            check(rows_minus_a_row, arr(rng, np.float64, shape), k)
            check(scale_column_by_its_first, arr(rng, np.int64, shape), k)


def test_a_view_as_large_as_the_target_goes_through_a_whole_temporary():
    k = plait.jit(shift_down_plus_a_row)
    k(np.zeros((3, 3)))
    assert "computed into a temporary first" in k.explain(), k.explain()

