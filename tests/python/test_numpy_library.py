"""NumPy library functions beyond one ufunc per element
(frontend/lower_numpy_library.cpp, np.sign in lower_calls.cpp): each kernel
against the undecorated function on random inputs, empty and one-element
arrays, odd sizes, non-contiguous views, every dtype NumPy accepts, and
NumPy's errors."""

import numpy as np
import pytest

import plait
from oracle import DTYPES, NUMERIC_DTYPES, SIZES, check, dtype_id, random_array, rng_for

SHAPES = ((0, 0), (0, 3), (1, 1), (4, 1), (7, 5))


def with_specials(rng, dtype, n):
    a = random_array(rng, dtype, n)
    if np.dtype(dtype).kind == "f" and n >= 4:
        a[1], a[2], a[3] = 0.0, -0.0, np.nan
    return a


@plait.jit
def sign(a):
    return np.sign(a)


@plait.jit
def sign_scalar(x):
    return np.sign(x)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES + (np.uint8,), ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_sign(dtype, n):
    a = with_specials(rng_for("sign", dtype, n), dtype, n)
    check(sign, a)
    check(sign, a[::-2])
    if n:
        check(sign_scalar, a[0])
    for x in (-2.5, 0.0, 3, -0.0):
        check(sign_scalar, x)


def test_sign_of_bools_is_refused_as_numpy_refuses_it():
    with pytest.raises(TypeError, match="bool"):
        sign(np.array([True, False]))


@plait.jit
def clip(a, lo, hi):
    return np.clip(a, lo, hi)


@plait.jit
def clip_keywords(a):
    return a.clip(max=0.25), np.clip(a, a_min=-0.5, a_max=None), np.clip(a, None, None)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_clip(dtype, n):
    rng = rng_for("clip", dtype, n)
    a = with_specials(rng, dtype, n)
    check(clip, a, -0.5, 0.5)
    check(clip, a, 7, 3)  # min above max: every element is max, as NumPy gives
    check(clip, a[::2], np.float32(-0.1), 0.1)
    if np.dtype(dtype).kind == "f":
        check(clip_keywords, a)
    check(clip, 2.5, 0, 1)


@plait.jit
def norm(x):
    return np.linalg.norm(x)


@plait.jit
def norm_axis(X, k):
    if k == 0:
        return np.linalg.norm(X, axis=0)
    return np.linalg.norm(X, axis=1)


@plait.jit
def norm_keepdims(X):
    return np.linalg.norm(X, axis=-1, keepdims=True), np.linalg.norm(X, axis=(0, 1))


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES + (np.bool_,), ids=dtype_id)
@pytest.mark.parametrize("shape", SHAPES)
def test_norm(dtype, shape):
    X = random_array(rng_for("norm", dtype, shape), dtype, shape)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    check(norm, X, rtol=rtol)
    check(norm, X.T, rtol=rtol)
    check(norm, X[:, 0] if shape[1] else X.ravel(), rtol=rtol)
    for k in range(2):
        check(norm_axis, X, k, rtol=rtol)
    check(norm_keepdims, X, rtol=rtol)


def test_norm_with_ord_is_refused():
    @plait.jit
    def norm_ord(x):
        return np.linalg.norm(x, 1)

    with pytest.raises(NotImplementedError, match="ord="):
        norm_ord(np.ones(3))


@plait.jit
def any_all(a):
    return np.any(a), np.all(a), a.any(), a.all()


@plait.jit
def any_all_axis(A):
    return np.any(A > 0, axis=0), np.all(A, axis=1), A.any(axis=-1, keepdims=True), np.any(A[0, 0])


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_any_all(dtype, n):
    rng = rng_for("any_all", dtype, n)
    a = random_array(rng, dtype, n)
    check(any_all, a)
    check(any_all, np.zeros(n, dtype))
    check(any_all, np.ones(n, dtype)[::2])


@pytest.mark.parametrize("shape", [(1, 1), (4, 1), (7, 5)])
def test_any_all_along_axes(shape):
    A = random_array(rng_for("any_all_axis", shape), np.float64, shape)
    A[0] = 0.0
    check(any_all_axis, A)


@plait.jit
def arange1(n):
    return np.arange(n)


@plait.jit
def arange3(a, b, s):
    return np.arange(a, b, s)


@pytest.mark.parametrize("args", [(0, 5, 1), (5, 0, -1), (0, 10, 3), (-3, 7, 2), (7, 7, 1), (5, 0, 1), (0, 1, 7),
                                  (0.1, 1.0, 0.2), (0.0, 1.0, 0.1), (1.0, -1.0, -0.3), (0, 1, 0.25), (2.5, 2.5, 1.0)])
def test_arange(args):
    check(arange3, *args)


@pytest.mark.parametrize("n", [0, 1, 7, -3])
def test_arange_of_one_argument(n):
    check(arange1, n)
    check(arange1, float(n) + 0.5)


@pytest.mark.parametrize("args, error", [((0, 5, 0), ZeroDivisionError), ((0.0, 1.0, 0.0), ZeroDivisionError),
                                         ((0.0, float("nan"), 1.0), ValueError)])
def test_arange_errors(args, error):
    with pytest.raises(error):
        arange3.py_func(*args)
    with pytest.raises(error):
        arange3(*args)


@plait.jit
def linspace(a, b, n):
    return np.linspace(a, b, n)


@plait.jit
def linspace_open(a, b, n):
    return np.linspace(a, b, n, endpoint=False), np.linspace(a, b)


@pytest.mark.parametrize("args", [(0.0, 1.0, 5), (0, 1, 0), (0, 1, 1), (2.5, -1.5, 7), (3.0, 3.0, 4), (-1, 10, 11),
                                  (1e-300, 1e300, 13)])
def test_linspace(args):
    check(linspace, *args)
    check(linspace_open, *args)


def test_linspace_with_negative_samples_raises():
    with pytest.raises(ValueError, match="non-negative"):
        linspace(0.0, 1.0, -1)


@plait.jit
def cumsum(a):
    return np.cumsum(a), a.cumsum(axis=0)


@plait.jit
def cumsum_flat(A):
    return np.cumsum(A), np.cumsum(A * 2)


@pytest.mark.parametrize("dtype", DTYPES + (np.uint8,), ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_cumsum(dtype, n):
    a = random_array(rng_for("cumsum", dtype, n), dtype, n)
    check(cumsum, a)
    check(cumsum, a[::-3])


@pytest.mark.parametrize("shape", SHAPES)
def test_cumsum_flattens_in_c_order(shape):
    A = random_array(rng_for("cumsum_flat", shape), np.float64, shape)
    check(cumsum_flat, A)
    check(cumsum_flat, np.asfortranarray(A))


@plait.jit
def nonzero(a):
    return np.nonzero(a)[0], np.where(a > 0)[0], a.nonzero()[0]


@plait.jit
def neighbours(A, i):
    # bigCLAM's use: the neighbours of row i, then a loop over them.
    nb = np.where(A[i] != 0)[0]
    s = 0
    for k in range(nb.shape[0]):
        s += nb[k] * nb[k]
    return nb, s


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_nonzero(dtype, n):
    a = random_array(rng_for("nonzero", dtype, n), dtype, n)
    if n > 2:
        a[::3] = 0
    check(nonzero, a)
    check(nonzero, a[::-2])
    check(nonzero, np.zeros(n, dtype))


def test_where_of_one_argument_in_a_loop():
    rng = rng_for("neighbours")
    A = (rng.random((9, 9)) < 0.4).astype(np.int8)
    for i in range(9):
        check(neighbours, A, i)


@plait.jit
def sort(a):
    return np.sort(a), np.sort(a, axis=-1, kind="stable"), np.sort(a[::-1], axis=None)


@pytest.mark.parametrize("dtype", DTYPES + (np.uint8,), ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_sort(dtype, n):
    # NaNs go last, as NumPy's; the values are NumPy's whatever the kind.
    a = with_specials(rng_for("sort", dtype, n), dtype, n)
    check(sort, a)
    check(sort, a[::3])
    check(sort, np.full(n, a[0] if n else 1, dtype=dtype))


def test_sort_of_more_than_one_dimension_and_in_place_are_refused():
    @plait.jit
    def sort_rows(A):
        return np.sort(A)

    @plait.jit
    def sort_in_place(a):
        return a.sort()

    with pytest.raises(NotImplementedError, match="more than one dimension"):
        sort_rows(np.ones((2, 2)))
    with pytest.raises(NotImplementedError, match=r"\.sort\(\) \(in place\)"):
        sort_in_place(np.ones(3))


@plait.jit
def argsort(a):
    return np.argsort(a, kind="stable"), a[::-1].argsort(kind="stable"), np.argsort(a * 2, axis=None, stable=True)


@pytest.mark.parametrize("dtype", DTYPES + (np.uint8,), ids=dtype_id)
@pytest.mark.parametrize("n", SIZES + (5000,))
def test_argsort(dtype, n):
    # Equal values keep the order of their positions (kind="stable"); NaNs
    # go last. Bools and small integers have many ties.
    a = with_specials(rng_for("argsort", dtype, n), dtype, n)
    check(argsort, a)
    check(argsort, a[::3])
    check(argsort, np.full(n, a[0] if n else 1, dtype=dtype))


@plait.jit
def argsort_default(a):
    return np.argsort(a), a[np.argsort(a)]


@pytest.mark.parametrize("n", SIZES)
def test_argsort_of_distinct_values_with_the_default_kind(n):
    # Without ties every kind gives the same positions.
    check(argsort_default, rng_for("argsort_default", n).permutation(n).astype(np.float64) - 0.5)


def test_argsort_of_more_than_one_dimension_is_refused():
    @plait.jit
    def argsort_rows(A):
        return np.argsort(A)

    with pytest.raises(NotImplementedError, match="more than one dimension"):
        argsort_rows(np.ones((2, 2)))


@plait.jit
def reshapes(a, n):
    A = a.reshape(n, -1)
    return A, np.reshape(a, (-1, n)).T + 1, A.ravel(), np.ravel(A.T), A.T.flatten(), a.reshape(n, a.shape[0] // n)[1:]


@pytest.mark.parametrize("n, m", [(1, 1), (2, 3), (5, 7), (4, 0), (1, 6)])
def test_reshape_ravel_flatten(n, m):
    rng = rng_for("reshapes", n, m)
    a = random_array(rng, np.float64, n * m)
    check(reshapes, a, n)
    b = random_array(rng, np.int32, 2 * n * m)[::2]
    check(reshapes, b, n)


@plait.jit
def reshape_3d(A):
    return A.reshape(2, -1, 3), A.reshape((A.shape[0] * A.shape[1],)), A[:, ::-1].reshape(3, 2, -1).sum(axis=1)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_reshape_of_a_matrix_and_its_views(layout):
    A = random_array(rng_for("reshape_3d", layout), np.float64, (4, 6))
    if layout == "F":
        A = np.asfortranarray(A)
    elif layout == "strided":
        A = random_array(rng_for("reshape_3d", layout), np.float64, (8, 6))[::2]
    check(reshape_3d, A)


def test_reshape_to_another_size_raises_value_error():
    with pytest.raises(ValueError):
        reshapes.py_func(np.ones(6), 4)
    with pytest.raises(ValueError, match="cannot reshape"):
        reshapes(np.ones(6), 4)


def test_reshape_refusals():
    @plait.jit
    def two_unknown(a):
        return a.reshape(-1, -1)

    @plait.jit
    def written_view(a):
        b = a.reshape(2, -1)
        a[0] = 5.0
        return b

    @plait.jit
    def assign_through(a):
        a.reshape(2, -1)[0, 0] = 1.0

    with pytest.raises(ValueError, match="one unknown dimension"):
        two_unknown(np.ones(4))
    with pytest.raises(NotImplementedError, match="would be a view"):
        written_view(np.ones(4))
    with pytest.raises(NotImplementedError, match="through a reshape"):
        assign_through(np.ones(4))


@plait.jit
def unique(a):
    return np.unique(a), np.unique(a[::-1], equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES + (np.uint8,), ids=dtype_id)
@pytest.mark.parametrize("n", SIZES)
def test_unique(dtype, n):
    # Sorted distinct values; NaNs count as one value, as NumPy 2's default.
    rng = rng_for("unique", dtype, n)
    a = with_specials(rng, dtype, n)
    if n > 6:
        a[-3:] = a[:3]  # duplicates
        if np.dtype(dtype).kind == "f":
            a[5] = np.nan
    check(unique, a)
    check(unique, np.full(n, 7, dtype=dtype))


def test_unique_with_more_than_the_values_is_refused():
    @plait.jit
    def unique_counts(a):
        return np.unique(a, return_counts=True)

    with pytest.raises(NotImplementedError, match="return_counts"):
        unique_counts(np.ones(3))


@plait.jit
def concatenate(a, b):
    return np.concatenate((a, b)), np.concatenate([b, a, b], axis=0)


@plait.jit
def concatenate_rows(A, B):
    return np.concatenate((A, B[::2], A.T[:, :A.shape[1]]))


@pytest.mark.parametrize("dtypes", [(np.float64, np.float64), (np.int32, np.float32), (np.bool_, np.int64),
                                    (np.uint8, np.int32)], ids=lambda d: "-".join(dtype_id(x) for x in d))
@pytest.mark.parametrize("n, m", [(0, 0), (0, 3), (1, 1), (7, 4)])
def test_concatenate(dtypes, n, m):
    rng = rng_for("concatenate", dtypes, n, m)
    a, b = random_array(rng, dtypes[0], n), random_array(rng, dtypes[1], m)
    check(concatenate, a, b)
    check(concatenate, a[::-1], b[::2])


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 5), (4, 4)])
def test_concatenate_rows(shape):
    rng = rng_for("concatenate_rows", shape)
    A = random_array(rng, np.float64, shape)
    check(concatenate_rows, A, random_array(rng, np.float64, (3, shape[1])))


def test_concatenate_of_rows_of_other_lengths_raises_value_error():
    with pytest.raises(ValueError):
        concatenate_rows.py_func(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="must match exactly"):
        concatenate_rows(np.ones((2, 3)), np.ones((2, 4)))


@plait.jit
def stack(a, b):
    return np.stack((a, b)), np.stack([b, a, b], axis=1), np.stack((a,), axis=-1)


@plait.jit
def stack_rows(A, B):
    return np.stack((A, B[::2], A.T[:, :A.shape[1]]), axis=1), np.stack([A, A * 2], axis=-1)


@pytest.mark.parametrize("dtypes", [(np.float64, np.float64), (np.int32, np.float32), (np.bool_, np.int64)],
                         ids=lambda d: "-".join(dtype_id(x) for x in d))
@pytest.mark.parametrize("n", [0, 1, 7])
def test_stack(dtypes, n):
    rng = rng_for("stack", dtypes, n)
    a, b = random_array(rng, dtypes[0], n), random_array(rng, dtypes[1], n)
    check(stack, a, b)
    check(stack, a[::-1], b)


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 5), (4, 4)])
def test_stack_rows(shape):
    rng = rng_for("stack_rows", shape)
    A = random_array(rng, np.float64, shape)
    check(stack_rows, A, random_array(rng, np.float64, (2 * shape[0], shape[1])))


def test_stack_of_other_shapes_raises_value_error():
    with pytest.raises(ValueError):
        stack.py_func(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="same shape"):
        stack(np.ones(2), np.ones(3))


@plait.jit
def nonzero_2d(A):
    rows, cols = np.nonzero(A)
    r, c = np.where(A > 0)
    return rows, cols, r, c, A.nonzero()[1]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", SHAPES)
def test_nonzero_of_a_matrix_gives_one_index_array_per_dimension(dtype, shape):
    A = random_array(rng_for("nonzero_2d", dtype, shape), dtype, shape)
    if A.size > 2:
        A.flat[::3] = 0
    check(nonzero_2d, A)
    check(nonzero_2d, A.T)
