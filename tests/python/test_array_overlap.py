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


# ---------------------------------------------------------------- local arrays read at the same index


def azimint(data, radius, npt):
    rmax = np.max(radius)
    res = np.zeros(npt, dtype=np.float64)
    #pragma parallel for
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        in_bin = (r1 <= radius) & (radius < r2)
        res[i] = np.sum(np.where(in_bin, data, 0.0)) / np.sum(np.where(in_bin, 1.0, 0.0))
    return res


def masked_sum_and_count(a):
    mask = a > 0
    return np.sum(np.where(mask, a, 0)), np.sum(mask)


def mask_returned(a):
    mask = a > 0
    return np.sum(np.where(mask, a, 0)), mask


def local_written_later(a):
    t = a * 2
    t[0] = 1
    return np.sum(t * a)


def local_read_reversed(a, n):
    out = np.zeros(n)
    for i in range(n):
        t = a * i
        out[i] = np.sum(t[::-1] * a) + np.max(t)
    return out


def local_then_element_store(a, b):
    t = np.sqrt(np.abs(a))
    s = np.sum(t * b)
    b[:] = t + s
    return b


def test_azimint_naive(rng):
    for n, npt in ((1, 1), (2, 3), (7, 5), (1001, 13), (3000, 1)):
        data, radius = arr(rng, np.float64, n), arr(rng, np.float64, n, positive=True)
        check(azimint, data, radius, npt, rtol=1e-12)
    check(azimint, arr(rng, np.float64, 999, "strided"), arr(rng, np.float64, 999, "reversed", positive=True), 7,
          rtol=1e-12)
    check(azimint, arr(rng, np.float32, 500), arr(rng, np.float32, 500, positive=True), 9, rtol=1e-5)


def test_azimint_naive_allocates_no_mask():
    k = plait.jit(azimint)
    k(np.ones(3), np.ones(3), 2)
    text = k.explain()
    assert "temporary 'in_bin' holds one element per iteration of the fused loop" in text, text
    # The usual version (data and radius of one extent) allocates nothing.
    usual = k.inspect_ir().split("} else {")[1]
    assert "empty<b1" not in usual, k.inspect_ir()


@pytest.mark.parametrize("fn", (masked_sum_and_count, mask_returned, local_written_later), ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", (np.int32, np.float64), ids=dtype_id)
def test_local_masks_and_temporaries(rng, fn, dtype):
    for n in (1, 2, 9, 1000) if fn is local_written_later else (0, 1, 2, 9, 1000):
        check(fn, arr(rng, dtype, n), rtol=1e-12 if dtype == np.float64 else None)
    check(fn, arr(rng, dtype, 33, "reversed"), rtol=1e-12 if dtype == np.float64 else None)


def test_locals_read_at_other_elements_or_escaping_stay_arrays(rng):
    for n in (1, 6, 101):
        check(local_read_reversed, arr(rng, np.float64, n), 4, rtol=1e-12)
        check(local_then_element_store, arr(rng, np.float64, n), arr(rng, np.float64, n), rtol=1e-12)
    k = plait.jit(mask_returned)
    k(np.ones(3))
    assert "holds one element per iteration" not in k.explain(), k.explain()


# ---------------------------------------------------------------- softmax over 3-D and 4-D inputs


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def middle_reversed(x):
    a = x * 2
    return a[:, ::-1, :] + a


def last_reversed(x):
    a = x * 2
    b = a[:, :, ::-1] + 1
    return b * a


def sum_over_the_middle(x):
    a = x * 2
    s = a.sum(axis=1, keepdims=True)
    return a - s


@pytest.mark.parametrize("shape", ((1, 1, 1), (2, 3, 5), (3, 1, 17), (0, 2, 3), (2, 0, 3), (1, 1, 1, 1),
                                   (2, 3, 4, 19), (3, 2, 1, 7), (2, 3, 0, 5)))
def test_softmax_of_3d_and_4d_arrays(rng, shape):
    check(softmax, arr(rng, np.float32, shape) * 10, rtol=1e-6)


def test_softmax_of_views_and_float64(rng):
    x = arr(rng, np.float64, (5, 6, 7, 9))
    check(softmax, x, rtol=1e-12)
    check(softmax, x[:, ::2, :, ::-1], rtol=1e-12)
    check(softmax, np.asfortranarray(x), rtol=1e-12)
    check(softmax, x.transpose(3, 2, 1, 0), rtol=1e-12)


def test_softmax_4d_keeps_one_row_of_e():
    k = plait.jit(softmax)
    k(np.ones((2, 2, 2, 2), np.float32))
    ir = k.inspect_ir()
    # The result is the only array of more than one dimension; m is a scalar.
    assert ir.count("empty<f32[:, :, :, ::1]>") == 1 and "empty<f32[:, " not in ir.replace("empty<f32[:, :, :, ::1]>", ""), ir
    assert "empty<f32[::1]>((x.shape[3],))" in ir, ir
    assert "temporary 'm' holds one element per iteration" in k.explain(), k.explain()


@pytest.mark.parametrize("fn", (middle_reversed, last_reversed, sum_over_the_middle), ids=lambda f: f.__name__)
def test_3d_statements_that_must_not_fuse_inside(rng, fn):
    for shape in ((1, 1, 1), (2, 3, 4), (4, 4, 4), (3, 5, 2)):
        check(fn, arr(rng, np.float64, shape), rtol=1e-12)
    check(fn, arr(rng, np.int64, (5, 5, 5), "reversed"))


# ---------------------------------------------------------------- extents that are 1 only at run time


def add(a, b):
    return a + b


def add3(a, b, c):
    return a * b + c


def assign_into(a, b):
    a[:] = b
    return a


def assign_rows(A, b):
    A[1:, :] = b
    return A


def add_columns(A, B):
    return A + B[:, 0:1]


def masked_sums(data, radius):
    in_bin = radius < 0.5
    return np.sum(np.where(in_bin, data, 0.0)), np.sum(np.where(in_bin, 1.0, 0.0))


def runtime_broadcast_stencil(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


@pytest.mark.parametrize("dtype", NUMERIC, ids=dtype_id)
def test_an_extent_of_one_at_run_time_broadcasts(rng, dtype):
    for n, m in ((1, 1), (1, 7), (7, 1), (0, 1), (1, 0), (33, 33)):
        check(add, arr(rng, dtype, n), arr(rng, dtype, m))
        check(add3, arr(rng, dtype, n), arr(rng, dtype, m), arr(rng, dtype, m if n == 1 else n))
        check(assign_into, arr(rng, dtype, max(n, m)), arr(rng, dtype, 1 if n != m else n))
    check(add, arr(rng, dtype, 1, "strided"), arr(rng, dtype, 9, "reversed"))


def test_an_extent_of_one_at_run_time_broadcasts_in_2d(rng):
    for shape, other in (((4, 3), (1, 3)), ((4, 3), (4, 1)), ((1, 1), (5, 6)), ((5, 6), (1, 1)), ((3, 1), (1, 4))):
        check(add, arr(rng, np.float64, shape), arr(rng, np.float64, other))
        check(add, arr(rng, np.float32, shape, "F"), arr(rng, np.float32, other, "transposed"))
    for rows in (1, 2, 6):
        check(assign_rows, arr(rng, np.int64, (rows, 5)), arr(rng, np.int64, (1, 5)))
        check(add_columns, arr(rng, np.float64, (rows, 4)), arr(rng, np.float64, (rows, 3)))
    check(add_columns, arr(rng, np.float64, (5, 4), "mixed"), arr(rng, np.float64, (5, 2), "F"))


def test_a_mask_and_data_of_extent_one(rng):
    for n, m in ((1, 9), (9, 1), (1, 1), (10, 10)):
        check(masked_sums, arr(rng, np.float64, n), arr(rng, np.float64, m, positive=True) - 0.5, rtol=1e-12)


def stencil_sweep(A, B):
    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
    return B


def test_stencil_rows_of_extent_one_broadcast(rng):
    # A's interior is one row: it broadcasts along B's rows.
    check(stencil_sweep, arr(rng, np.float64, (3, 5)), arr(rng, np.float64, (6, 5)))
    check(stencil_sweep, arr(rng, np.float64, (6, 3), "F"), arr(rng, np.float64, (6, 7)))
    for n in (3, 4, 9):
        check(runtime_broadcast_stencil, 3, arr(rng, np.float64, (n, n)), arr(rng, np.float64, (n, n)))


def test_the_usual_version_of_jacobi_2d_reads_plain_indices():
    k = plait.jit(runtime_broadcast_stencil)
    k(2, np.ones((5, 5)), np.ones((5, 5)))
    # The last version is the usual one (no broadcast, A and B disjoint).
    usual = k.inspect_ir().rsplit("\n  } else {", 1)[1]
    assert "_broadcast" not in usual, k.inspect_ir()
    assert "versioned on whether an extent that is 1 at run time broadcasts" in k.explain(), k.explain()
