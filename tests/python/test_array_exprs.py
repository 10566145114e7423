"""Differential tests of array expressions: every kernel is compared with the
same function undecorated (the oracle) on fresh random inputs.

Covered: slicing with constant steps (negative too) and integer indices mixed
with slices, None/np.newaxis, broadcasting of compile-time extents of 1,
elementwise arithmetic, comparisons, ufuncs and np.where, the reductions
sum/prod/max/min/mean/argmax/argmin (functions and methods, axis int, tuple
or None, keepdims), @ / np.dot / np.matmul, np.outer and np.add.outer,
transposes, copies, astype, slice assignment and in-place operators on slices
(overlapping ones too), runs of statements that fusion must keep apart or
shrink correctly, sliced-index pragmas, plait.vidx vector blocks, and whole
kernels (the issue's examples, floyd_warshall, covariance, heat_3d, row
normalisation).

Failures here are compiler bugs: the tests state NumPy's behaviour and are
not marked xfail.

Each kernel is compiled once per signature for the whole module (`jitted`),
so the parameter lists are chosen to cover dtypes and layout classes (C, F,
any strides) with few distinct signatures: a compile costs about a second.
"""

import numpy as np
import pytest

import oracle
import plait
from oracle import FLOAT_DTYPES as FLOATS
from oracle import NUMERIC_DTYPES as NUMERIC
from oracle import DTYPES as ALL_DTYPES
from oracle import clone, dtype_id, poisoned

# ---------------------------------------------------------------- helpers

_DISPATCHERS = {}


def jitted(fn):
    """One dispatcher per kernel for the whole module: signatures compile once."""
    if fn not in _DISPATCHERS:
        _DISPATCHERS[fn] = plait.jit(fn)
    return _DISPATCHERS[fn]


def arr(rng, dtype, shape, layout="C", positive=False):
    """A random array (oracle.make) with a layout: "C", "F", "strided",
    "reversed", "transposed", or "mixed" (2-D: rows reversed, every third
    column). positive=True: ints in [1, 100), floats in [0.5, 1.5), for sums
    and divisions that must not cancel or divide by zero."""
    dtype = np.dtype(dtype)
    low, high = (None, None)
    if positive and dtype.kind == "i":
        low, high = 1, 100
    elif positive and dtype.kind == "f":
        low, high = 0.5, 1.5
    if layout == "mixed":
        base = oracle.random_array(rng, dtype, (shape[0], 3 * shape[1]), low, high)
        view = base[::-1, ::3]
        return view
    return oracle.make(rng, dtype, shape, layout, low, high)


def tolerance(result):
    """Relative tolerance for results that reassociate float sums."""
    return oracle.reduction_rtol(np.asarray(result).dtype)


def check(fn, *args, rtol=None):
    """oracle.check on the module's dispatcher of `fn`: kernel and Python on
    clones of the arguments; same results (types, dtypes, shapes, values)
    and same arguments afterwards, nothing written between a view's
    elements. rtol (reductions) also serves as the absolute tolerance, for
    results near zero."""
    return oracle.check(jitted(fn), *args, rtol=rtol, atol=rtol)


def check_raises(fn, exception, *args, match=None):
    """The oracle and the kernel both raise `exception`."""
    with pytest.raises(exception):
        fn(*clone(args))
    with pytest.raises(exception, match=match):
        jitted(fn)(*clone(args))


SIZES_1D = oracle.SIZES
SHAPES_2D = ((0, 0), (0, 3), (3, 0), (1, 1), (1, 5), (5, 1), (7, 3), (33, 65), (200, 301))
# Layouts; the signatures they give are C, F and any-strides.
LAYOUTS_2D = oracle.LAYOUTS_2D + ("mixed",)


# ---------------------------------------------------------------- slicing


def slices_1d(a):
    return (a[1:-1], a[::2], a[1::3], a[::-1], a[-2::-2], a[5:1:-1], a[:-3], a[-4:], a[100:], a[:0], a[3:2],
            a[-100:2], a[::-4], a[:], a[2:-2:2])


def slices_2d(A):
    return (A[1:-1, ::2], A[:, 0], A[-1, :], A[0], A[::-1, ::-2], A[1, 1:3], A[None, :, 0], A[:, None, ::-1],
            A[2::3, -1], A[-2:, :-1], A[::-1][1:], A[-2, ::-1])


def slices_3d(T):
    return T[1, :, ::-1], T[:, -1, 1::2], T[::2, None, :, 0], T[-1, -1], T[:, 1:2, :]


@pytest.mark.parametrize("dtype", (np.bool_, np.int64, np.float32), ids=dtype_id)
def test_slices_of_1d_arrays(rng, dtype):
    for n in SIZES_1D:
        check(slices_1d, arr(rng, dtype, n))


@pytest.mark.parametrize("layout", ("strided", "reversed"))
def test_slices_of_1d_views(rng, layout):
    for n in SIZES_1D[2:]:  # views of 0 or 1 element are contiguous: covered above
        check(slices_1d, arr(rng, np.float64, n, layout))


@pytest.mark.parametrize("layout", LAYOUTS_2D)
def test_slices_and_integer_indices_of_2d_arrays(rng, layout):
    for shape in ((2, 1), (3, 4), (7, 3), (33, 65)):
        check(slices_2d, arr(rng, np.int32, shape, layout))


def test_slices_and_integer_indices_of_3d_arrays(rng):
    for shape in ((2, 2, 2), (3, 4, 5), (5, 6, 7)):
        check(slices_3d, arr(rng, np.float32, shape, "reversed"))


def slice_with_runtime_bounds(a, lo, hi):
    return a[lo:hi], a[lo:], a[:hi], a[hi:lo:-1], a[-lo:], a[lo:hi:2]


def test_slice_bounds_computed_at_run_time(rng):
    a = arr(rng, np.int64, 20)
    for lo, hi in ((0, 0), (2, 7), (7, 2), (-5, -1), (-30, 30), (3, -3), (19, 20), (25, 40)):
        check(slice_with_runtime_bounds, a, lo, hi)


def slice_shape_attributes(A):
    v = A[1:, ::-2]
    return v.shape[0], v.shape[1], v.ndim, v.size, A[None].ndim


def test_shape_attributes_of_slices(rng):
    for shape in ((1, 1), (4, 5), (9, 2)):
        check(slice_shape_attributes, arr(rng, np.float64, shape))


# ---------------------------------------------------------------- elementwise


def arithmetic(a, b):
    return (a + b, a - b, a * b, a / b, -a, a * 2.5, 3 - a, a + 1, 2 * a - b / 4, abs(a), +a, a ** 2, a * a * a,
            a ** 0, a < b, a <= b, a == b, a != b, a > 0, a >= b, (a > b) & (a > 0), (a < b) | (b > 0), ~(a == b),
            (a > b) ^ (b < 0))


def operands(rng, dtype_a, dtype_b, n, layout="C"):
    """a, and b with no zeros (it divides) where a third of the pairs are equal."""
    a = arr(rng, dtype_a, n, layout)
    b = arr(rng, dtype_b, n, positive=True)
    if np.dtype(dtype_a) == np.dtype(dtype_b):
        b[::3] = np.where(a[::3] != 0, a[::3], 1)
    return a, b


@pytest.mark.parametrize("dtype", NUMERIC, ids=dtype_id)
def test_arithmetic_and_comparisons_every_numeric_dtype(rng, dtype):
    for n in (0, 1, 7, 1000):
        check(arithmetic, *operands(rng, dtype, dtype, n))


@pytest.mark.parametrize("pair", [(np.int32, np.float32), (np.int64, np.float32), (np.float32, np.bool_)],
                         ids=lambda p: f"{dtype_id(p[0])}-{dtype_id(p[1])}")
def test_arithmetic_promotes_mixed_dtypes_like_numpy(rng, pair):
    check(arithmetic, *operands(rng, pair[0], pair[1], 33, "reversed"))


def multiply_add(a, b, c):
    return a * b + c, a * b - c, c - a * b, (a + b) * c


def test_products_are_rounded_before_sums_as_in_numpy(rng):
    # Without contraction into fused multiply-adds, a * b + c rounds twice.
    for dtype in FLOATS:
        check(multiply_add, arr(rng, dtype, 1000), arr(rng, dtype, 1000), arr(rng, dtype, 1000))


def int_division(a, b):
    return a // b, a % b, a // 3, a % 7, -a // b, a // -4, a % -3


@pytest.mark.parametrize("dtype", (np.int32, np.float64), ids=dtype_id)
def test_floor_division_and_modulo_follow_numpy(rng, dtype):
    a = arr(rng, dtype, 101) * (10 if dtype == np.float64 else 1)
    b = arr(rng, dtype, 101, positive=True) * np.where(rng.random(101) < 0.5, -1, 1).astype(dtype)
    check(int_division, a, b)


def bool_logic(a, b):
    return a & b, a | b, a ^ b, ~a, a == b, a != b, a > b, a.astype(np.int32) + b


def bool_arithmetic(a, b, A, B):
    return a + b, a * b, np.maximum(a, b), A @ B, np.dot(a, b), np.outer(a, b), np.add.outer(a, b), np.sum(a * b)


def test_boolean_arrays(rng):
    check(bool_logic, arr(rng, np.bool_, 65), arr(rng, np.bool_, 65, "reversed"))


def test_boolean_arithmetic_and_products_are_logical(rng):
    # NumPy: + and * of booleans are `or` and `and`; so are @, dot and outer.
    check(bool_arithmetic, arr(rng, np.bool_, 9), arr(rng, np.bool_, 9), arr(rng, np.bool_, (4, 9)),
          arr(rng, np.bool_, (9, 3)))


def ufuncs(x, y):
    return (np.sqrt(np.abs(x)), np.exp(x), np.log(np.abs(x) + 1), np.sin(x), np.cos(x), np.tanh(x),
            np.arctan2(x, 0.5), np.floor(x), np.ceil(x), np.trunc(x), np.rint(x), np.fabs(x), np.minimum(x, y),
            np.maximum(x, y), np.isnan(x), np.isfinite(x), np.isinf(x), np.power(np.abs(x), 2), np.negative(x),
            np.positive(y))


@pytest.mark.parametrize("dtype", (np.int32, np.float32, np.float64), ids=dtype_id)
def test_ufuncs_with_nan_and_inf(rng, dtype):
    x = arr(rng, dtype, 257, "strided") * (5 if np.dtype(dtype).kind == "f" else 1)
    y = arr(rng, dtype, 257) * (5 if np.dtype(dtype).kind == "f" else 1)
    if np.dtype(dtype).kind == "f":
        x[[3, 10]] = np.nan
        y[[10, 20]] = np.nan
        x[5], x[6], y[7] = np.inf, -np.inf, -np.inf
        x[8] = 2.5  # rint rounds half to even
        x[9] = -0.5
    # libm and NumPy's own vector implementations of exp, log, sin... may
    # differ in the last bit.
    check(ufuncs, x, y, rtol=1e-6 if dtype == np.float32 else 1e-14)


def where_forms(a, b):
    return (np.where(a > b, a, b), np.where(a > 0, a, 0), np.where(a < 0, 1.5, a), np.where(a == b, True, False),
            np.where(b > 0, a * 2, -b))


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=dtype_id)
def test_where_with_masks_and_scalars(rng, dtype):
    for n in (0, 1, 33):
        check(where_forms, arr(rng, dtype, n), arr(rng, dtype, n))


def where_nan_guard(x):
    return np.where(np.isnan(x), 0.0, x), np.where(x > 0, np.sqrt(np.abs(x)), np.nan)


def test_where_replaces_nan(rng):
    x = arr(rng, np.float64, 40)
    x[::7] = np.nan
    check(where_nan_guard, x)


# ---------------------------------------------------------------- broadcasting


def broadcast_forms(A, x, y):
    return (A + x, A * x[None, :], A - y[:, None], x[:, None] * x[None, :], A + A.sum(axis=1, keepdims=True),
            A / A.sum(axis=0, keepdims=True), y[:, None] + x, A + 1.0, x[None] - A)


@pytest.mark.parametrize("shape", SHAPES_2D, ids=str)
def test_broadcasting_none_keepdims_and_trailing_dimensions(rng, shape):
    A = arr(rng, np.float64, shape, positive=True)
    check(broadcast_forms, A, arr(rng, np.float64, shape[1]), arr(rng, np.float64, shape[0]), rtol=1e-12)


def test_broadcasting_of_views_and_mixed_dtypes(rng):
    A = arr(rng, np.float32, (9, 12), "transposed", positive=True)
    check(broadcast_forms, A, arr(rng, np.int32, 12, "reversed"), arr(rng, np.float32, 9, "strided"), rtol=1e-6)


def broadcast_literal_one(A, x):
    row = np.ones((1, A.shape[1]), dtype=A.dtype)
    col = np.full((A.shape[0], 1), 2.0)
    row[0, :] = x
    return A * row + col, row + col, col - x


def test_broadcasting_of_arrays_allocated_with_extent_one(rng):
    for shape in ((0, 4), (1, 1), (5, 1), (6, 7)):
        check(broadcast_literal_one, arr(rng, np.float64, shape), arr(rng, np.float64, shape[1]))


def broadcast_3d(T, A, C, x):
    return T + x, T * A[None, :, :], T - C[:, None, :], A[:, :, None] * x[None, None, :], (T + x).sum(axis=1)


def test_broadcasting_across_ranks(rng):
    for p, q, r in ((1, 1, 1), (2, 3, 4), (5, 1, 3), (0, 2, 3), (3, 0, 2)):
        T = arr(rng, np.float64, (p, q, r))
        A, C = arr(rng, np.float64, (q, r)), arr(rng, np.float64, (p, r))
        check(broadcast_3d, T, A, C, arr(rng, np.float64, r), rtol=1e-12)
    T = arr(rng, np.int64, (4, 4, 4), "reversed")
    check(broadcast_3d, T, arr(rng, np.int64, (4, 4), "F"), arr(rng, np.int64, (4, 4)), arr(rng, np.int64, 4))


def newaxis_forms(A, x):
    return A[:, np.newaxis], x[:, np.newaxis] + x, A[np.newaxis, :, 0] * 2


def test_np_newaxis_is_none(rng):
    for m, n in ((1, 1), (3, 4)):
        check(newaxis_forms, arr(rng, np.float64, (m, n)), arr(rng, np.float64, n))


def pairwise_distances(P):
    d = P[:, None, :] - P[None, :, :]
    return np.sqrt(np.sum(d * d, axis=-1))


def test_pairwise_distances_broadcast_into_3d(rng):
    for n in (1, 2, 17):
        check(pairwise_distances, arr(rng, np.float64, (n, 3)), rtol=1e-12)


# ---------------------------------------------------------------- reductions


def reductions_all(a):
    return (np.sum(a), a.sum(), np.prod(a), np.max(a), a.min(), np.mean(a), a.argmax(), np.argmin(a), np.amax(a),
            np.amin(a))


def reductions_axes(A):
    return (np.sum(A, axis=0), A.sum(axis=1), A.sum(axis=-1, keepdims=True), np.max(A, axis=0, keepdims=True),
            A.min(axis=1), np.mean(A, axis=0), A.mean(axis=(0, 1)), np.sum(A, axis=(0, 1), keepdims=True),
            np.argmax(A, axis=0), A.argmin(axis=1), np.prod(A, axis=1), np.sum(A, 0), A.sum(axis=None),
            np.max(A, axis=(1, 0)))


def reductions_3d(T):
    return (T.sum(axis=(0, 2)), T.max(axis=1, keepdims=True), T.mean(axis=(1, 2)), T.argmax(axis=2),
            np.min(T, axis=(0, 1, 2)), T.sum(axis=(-1, 0), keepdims=True), T.prod(axis=0))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_whole_array_reductions_every_dtype(rng, dtype):
    for n in (1, 2, 7, 1000):
        a = arr(rng, dtype, n, positive=True)
        check(reductions_all, a, rtol=None if np.dtype(dtype).kind in "bi" else tolerance(a))


@pytest.mark.parametrize("layout", ("strided", "reversed"))
def test_whole_array_reductions_of_views(rng, layout):
    a = arr(rng, np.float64, 513, layout, positive=True)
    check(reductions_all, a, rtol=1e-12)


def integer_reductions(a):
    return np.sum(a), a.sum(), np.prod(a), np.max(a), a.min(), a.argmax(), np.argmin(a), np.amax(a), np.amin(a)


def test_integer_sums_and_products_wrap_like_numpy(rng):
    a = rng.integers(-2**31, 2**31 - 1, size=5000).astype(np.int64)
    a[:10] = 2**62
    check(integer_reductions, a)
    # The mean accumulates in float64: reassociated, hence the tolerance.
    check(reductions_all, a, rtol=1e-12)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_reductions_along_axes_every_dtype(rng, dtype):
    for shape in ((1, 1), (1, 6), (6, 1), (7, 3), (64, 129)):
        A = arr(rng, dtype, shape, positive=True)
        check(reductions_axes, A, rtol=None if np.dtype(dtype).kind in "bi" else tolerance(A))


@pytest.mark.parametrize("layout", ("mixed",))
def test_reductions_along_axes_of_views(rng, layout):
    A = arr(rng, np.float64, (33, 17), layout, positive=True)
    check(reductions_axes, A, rtol=1e-12)


def test_reductions_of_3d_arrays(rng):
    for shape in ((1, 1, 1), (2, 3, 4), (6, 5, 9)):
        check(reductions_3d, arr(rng, np.float64, shape, positive=True), rtol=1e-12)
        check(reductions_3d, arr(rng, np.int32, shape, "reversed" if min(shape) > 1 else "C"))


def reductions_of_expressions(A, x):
    return (np.sum(A * x[None, :], axis=1), np.max(np.abs(A - 0.5), axis=0), (A > 0.9).sum(), np.sum(A > 1.0, axis=0),
            np.mean(A[1:, ::-1] ** 2), (A @ x).argmax(), np.sum(A, axis=1).max())


def test_reductions_of_expressions(rng):
    for shape in ((1, 1), (5, 8), (70, 33)):
        check(reductions_of_expressions, arr(rng, np.float64, shape, positive=True), arr(rng, np.float64, shape[1]),
              rtol=1e-12)


def empty_sum_and_prod(a):
    return np.sum(a), np.prod(a), a.sum(axis=0)


def test_sum_and_prod_of_empty_arrays_are_the_identities(rng):
    check(empty_sum_and_prod, np.zeros(0, np.float64))
    check(empty_sum_and_prod, np.zeros(0, np.int32))


def empty_sum_along_axis(A):
    return A.sum(axis=0), A.max(axis=1), A.min(axis=1, keepdims=True), A.argmax(axis=1)


def test_reductions_along_axes_of_arrays_with_an_empty_kept_axis(rng):
    check(empty_sum_along_axis, np.zeros((0, 3)))


def max_of(a):
    return np.max(a)


def min_of(a):
    return a.min()


def argmax_of(a):
    return np.argmax(a)


def argmin_of(a):
    return a.argmin()


def max_along_empty_axis(A):
    return A.max(axis=1)


@pytest.mark.parametrize("fn, dtype, message", (
    (max_of, np.float64, "zero-size array to reduction operation maximum"),
    (min_of, np.int32, "zero-size array to reduction operation minimum"),
    (argmax_of, np.int64, "attempt to get argmax of an empty sequence"),
    (argmin_of, np.float32, "attempt to get argmin of an empty sequence")), ids=lambda f: getattr(f, "__name__", ""))
def test_extremum_of_an_empty_array_raises_value_error(fn, dtype, message):
    # NumPy's messages: argmax and argmin have their own.
    with pytest.raises(ValueError, match=message):
        fn(np.zeros(0, dtype))
    check_raises(fn, ValueError, np.zeros(0, dtype), match=message)


def test_max_along_an_empty_axis_raises_value_error():
    check_raises(max_along_empty_axis, ValueError, np.zeros((3, 0)), match="zero-size array")
    check(max_along_empty_axis, np.zeros((0, 3)))


def nan_extrema(a):
    return np.max(a), np.min(a), np.argmax(a), np.argmin(a), a.sum()


def nan_extrema_axes(A):
    return A.max(axis=1), A.min(axis=0), A.argmax(axis=1), A.argmin(axis=0), np.maximum(A[0], A[-1])


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_nan_propagates_through_max_min_and_wins_argmax(rng, dtype):
    for n, nans in ((1, [0]), (5, [4]), (100, [37, 60]), (1000, [999]), (1000, [0, 500])):
        a = arr(rng, dtype, n)
        a[nans] = np.nan
        check(nan_extrema, a)
    a = np.full(9, -np.inf, dtype)
    check(nan_extrema, a)
    check(nan_extrema, np.full(9, np.nan, dtype))


def test_nan_along_axes(rng):
    A = arr(rng, np.float64, (6, 7))
    A[2, 3] = A[4, 0] = A[5, 5] = np.nan
    check(nan_extrema_axes, A)


def row_extrema(A):
    return A.max(axis=-1), A.min(axis=-1), np.max(A), np.min(A)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
@pytest.mark.parametrize("width", (1, 15, 16, 17, 37, 200))
def test_nan_wins_max_and_min_at_every_position_of_a_vector_row(rng, dtype, width):
    # The vector loop takes the maximum of the other elements and counts the
    # NaNs; a NaN anywhere (vector body or remainder) must still win.
    for col in sorted({0, width // 2, width - 1}):
        A = arr(rng, dtype, (5, width))
        A[1, col] = np.nan
        A[3, :] = np.nan
        A[4, :] = -np.inf
        A[4, col] = np.inf
        check(row_extrema, A)
    check(row_extrema, arr(rng, dtype, (6, width), "transposed"))
    check(row_extrema, arr(rng, dtype, (6, width), "reversed"))


def test_nan_wins_the_maximum_of_a_whole_array_in_parallel(rng):
    # Quarters of magnitude at most 25: every partial sum (at most 2.5e6 <
    # 2**22) is exact in float32, so the parallel sum equals NumPy's in any
    # order.
    a = (rng.integers(-100, 101, size=100_000) / 4).astype(np.float32)
    check(nan_extrema, a)
    for at in (0, 31_337, 99_999):
        b = a.copy()
        b[at] = np.nan
        check(nan_extrema, b)


def reduction_into_scalar_local(a):
    s = np.sum(a)
    m = a.max()
    return s / m, s, m


def test_reductions_assigned_to_scalar_locals(rng):
    check(reduction_into_scalar_local, arr(rng, np.float64, 99, positive=True), rtol=1e-12)


# ---------------------------------------------------------------- matrix products


def products(A, B, x, y):
    return A @ B, A @ y, x @ A, np.dot(A, B), np.matmul(A, y), np.dot(x, A), x @ x, np.dot(y, y), np.matmul(x, A)


@pytest.mark.parametrize("dtype", NUMERIC, ids=dtype_id)
def test_matrix_products_every_dtype(rng, dtype):
    for m, k, n in ((1, 1, 1), (3, 0, 2), (0, 4, 3), (7, 5, 3), (40, 33, 29)):
        A = arr(rng, dtype, (m, k))
        B = arr(rng, dtype, (k, n))
        exact = np.dtype(dtype).kind in "bi"
        check(products, A, B, arr(rng, dtype, m), arr(rng, dtype, k), rtol=None if exact else tolerance(A))


@pytest.mark.parametrize("layout", ("mixed",))
def test_matrix_products_of_views(rng, layout):
    A = arr(rng, np.float64, (17, 9), layout)
    B = arr(rng, np.float64, (9, 13), layout)
    check(products, A, B, arr(rng, np.float64, 17, "reversed"), arr(rng, np.float64, 9, "strided"), rtol=1e-12)


def products_mixed(A, B):
    return A @ B, A.T @ A, A @ B.T.T, (A + 1) @ (B * 2)


def test_matrix_products_promote_mixed_dtypes(rng):
    check(products_mixed, arr(rng, np.int32, (6, 4)), arr(rng, np.float32, (4, 5)), rtol=1e-6)


def outers(x, y):
    return np.outer(x, y), np.add.outer(x, y), np.outer(x[::-1], y[1:]), np.add.outer(y, x).T


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=dtype_id)
def test_outer_products(rng, dtype):
    for m, n in ((0, 3), (1, 1), (4, 7), (50, 33)):
        check(outers, arr(rng, dtype, m), arr(rng, dtype, n))


def test_outer_products_of_mixed_dtypes_and_views(rng):
    check(outers, arr(rng, np.int32, 9, "reversed"), arr(rng, np.float32, 5, "strided"))


# ---------------------------------------------------------------- transposes, copies, casts


def transposes(A, B):
    return A.T, np.transpose(A), A.transpose(), A.T + B, (A.T * 2)[::-1], A.T.T, A[1:, :].T[0]


@pytest.mark.parametrize("layout", LAYOUTS_2D)
def test_transposes(rng, layout):
    for m, n in ((1, 1), (2, 3), (9, 4)):
        check(transposes, arr(rng, np.int64, (m, n), layout), arr(rng, np.int64, (n, m)))


def copies(a):
    c = a.copy()
    d = np.copy(a[::-1])
    a[0] = 7
    c[-1] = 9
    return c, d, a


def test_copies_are_new_arrays(rng):
    for n in (2, 5, 64):
        check(copies, arr(rng, np.int32, n))
        check(copies, arr(rng, np.float64, n, "reversed"))


def casts(a):
    return (a.astype(np.float32), a.astype(np.int32), a.astype(np.bool_), a.astype(np.float64), a.astype(np.int64),
            a.astype(float), a.astype(int), a.astype(bool), (a * 2).astype(np.float32)[::-1])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_astype_every_dtype_pair(rng, dtype):
    a = arr(rng, dtype, 77)
    if np.dtype(dtype).kind == "f":
        a *= 50
    check(casts, a)


# ---------------------------------------------------------------- assignments


def slice_assignments(a, b):
    a[1:-1] = b[2:] * 2
    a[::3] = 0
    a[-1] = 5
    a[5:1:-1] = b[:4]
    return a


def test_slice_assignment_1d(rng):
    for n in (6, 7, 33):
        check(slice_assignments, arr(rng, np.float64, n), arr(rng, np.float64, n))
        check(slice_assignments, arr(rng, np.int32, n, "reversed"), arr(rng, np.int32, n, "strided"))


def assign_rows_columns(A, x, y):
    A[:, 0] = y
    A[1] = x
    A[2:, 1:] = x[None, 1:]
    A[::-2, -1] = 3.5
    A[:, :2] = A[:, 2:4] * 2
    return A


@pytest.mark.parametrize("layout", ("C", "transposed", "mixed"))
def test_assigning_rows_columns_and_blocks_with_broadcasting(rng, layout):
    for m, n in ((3, 4), (8, 5), (65, 33)):
        check(assign_rows_columns, arr(rng, np.float64, (m, n), layout), arr(rng, np.float64, n),
              arr(rng, np.float64, m))


def assign_casts(a, f):
    a[:] = f
    a[::2] = 3.9
    return a


def test_slice_assignment_casts_to_the_target_dtype(rng):
    check(assign_casts, arr(rng, np.int32, 21), arr(rng, np.float64, 21) * 50)
    check(assign_casts, arr(rng, np.float32, 21), arr(rng, np.float64, 21))
    check(assign_casts, arr(rng, np.int64, 21), arr(rng, np.int32, 21))


def in_place_operators(A, B):
    A[1:-1] += B[2:]
    A *= 2
    A[::2, ::-1] -= B[1::2, :]
    A[:, 0] /= 4
    A[-1] += 1
    return A


@pytest.mark.parametrize("layout", ("C", "mixed"))
def test_in_place_operators_on_slices(rng, layout):
    for m, n in ((4, 3), (6, 5), (64, 40)):  # even: A[::2] and B[1::2] have equal extents
        check(in_place_operators, arr(rng, np.float64, (m, n), layout), arr(rng, np.float64, (m, n)))


def in_place_int(a, b):
    a[1:] //= 3
    a %= 7
    a[::-1] *= b
    a -= b.max()
    a <<= 1
    a |= 1
    return a


def test_in_place_integer_operators(rng):
    for n in (2, 3, 31):
        check(in_place_int, arr(rng, np.int64, n), arr(rng, np.int64, n, positive=True))
        check(in_place_int, arr(rng, np.int32, n, "strided"), arr(rng, np.int32, n, positive=True))


def new_local_arrays(a, b):
    y = a + b
    z = y * 2
    y[0] = 100
    w = np.sqrt(np.abs(a))
    return y, z, w


def test_expressions_assigned_to_names_are_new_arrays(rng):
    for n in (1, 9, 1000):
        check(new_local_arrays, arr(rng, np.float64, n), arr(rng, np.float64, n))


def view_alias(a):
    v = a[1:]
    v[0] = 99
    return a


def test_a_slice_bound_to_a_name_and_written_is_refused(rng):
    # NumPy makes `v` a view of `a`; Plait binds names to copies, which would
    # differ once either is written, so that is a compile error (never a
    # silent difference) until views bound to names are supported.
    with pytest.raises(plait.UnsupportedError, match="view"):
        plait.jit(view_alias)(arr(rng, np.int64, 5))


def read_only_view(a):
    v = a[1:]
    return v.sum() + v[0]


def test_a_slice_bound_to_a_name_and_only_read_is_fine(rng):
    check(read_only_view, arr(rng, np.float64, 7))


def in_loop(A, x):
    M, N = A.shape
    out = np.zeros(M)
    for i in range(M):
        out[i] = np.sum(A[i, :] * x)
        A[i, ::2] = x[::2] * i
    return out, A


def test_array_expressions_inside_loops(rng):
    for m, n in ((1, 1), (5, 7), (40, 33)):
        check(in_loop, arr(rng, np.float64, (m, n)), arr(rng, np.float64, n), rtol=1e-12)


# ---------------------------------------------------------------- overlapping assignments


def shift_right(B):
    B[1:] = B[:-1]
    return B


def shift_left(B):
    B[:-1] = B[1:]
    return B


def add_previous(A):
    A[1:-1] += A[:-2]
    return A


def reverse_in_place(a):
    a[::-1] = a
    return a


def reverse_from_view(a):
    a[:] = a[::-1]
    return a


def transpose_in_place(A):
    A[:, :] = A.T
    return A


def transpose_same_text(A):
    A[:, :] = A[:, :].T
    return A


def add_transpose(A):
    A += A.T
    return A


def rows_from_rows(A):
    A[1:, :] = A[:-1, :] + A[1:, :]
    return A


def every_other(a):
    a[:-1:2] = a[1::2] * 2 + a[:-1:2]
    return a


def stencil_overwrite(a):
    a[2:] = a[:-2] + a[1:-1]
    return a


def normalise_columns_in_place(A):
    A /= A.sum(axis=0)
    return A


def centre_columns_in_place(A):
    A -= A.mean(axis=0)
    return A


def normalise_rows_in_place(A):
    A[:, :] = A[:, :] / A[:, :].sum(axis=1, keepdims=True)
    return A


@pytest.mark.parametrize("fn", (shift_right, shift_left, add_previous, reverse_in_place, reverse_from_view,
                                every_other, stencil_overwrite), ids=lambda f: f.__name__)
def test_overlapping_1d_assignments_read_the_old_values(rng, fn):
    for n in (0, 1, 2, 3, 10, 1001):
        check(fn, arr(rng, np.int64, n))
    if fn in (shift_right, reverse_in_place):
        check(fn, arr(rng, np.float64, 1001, "reversed"))


@pytest.mark.parametrize("fn", (transpose_in_place, transpose_same_text, add_transpose, rows_from_rows,
                                add_previous, shift_right), ids=lambda f: f.__name__)
def test_overlapping_2d_assignments_read_the_old_values(rng, fn):
    for n in (1, 2, 7, 64):
        check(fn, arr(rng, np.int64, (n, n)))
    if fn in (transpose_in_place, add_previous):
        check(fn, arr(rng, np.int64, (9, 9), "F"))


@pytest.mark.parametrize("fn", (normalise_columns_in_place, centre_columns_in_place, normalise_rows_in_place),
                         ids=lambda f: f.__name__)
def test_in_place_updates_by_a_reduction_of_the_same_array(rng, fn):
    for shape in ((1, 1), (4, 3), (50, 70)):
        check(fn, arr(rng, np.float64, shape, positive=True), rtol=1e-12)


# ---------------------------------------------------------------- runs of statements (fusion hazards)


def chain(x):
    a = x * 2
    b = a + 1
    return np.sqrt(np.abs(b))


def read_reversed_local(x):
    a = x * 2
    return a[::-1] + a


def second_difference(x):
    d = x[1:] - x[:-1]
    return d[1:] - d[:-1]


def local_then_input_modified(x):
    y = x + 1
    x[0] = 100.0
    return y, x


def local_rebound(x):
    t = x * 2
    out = t + 1
    t = x * 3
    return out + t


def whole_sum_between(x):
    e = np.exp(x)
    s = e.sum()
    return e / s


def escaping_row_max(A):
    m = A.max(axis=1, keepdims=True)
    e = np.exp(A - m)
    return e / e.sum(axis=1, keepdims=True), m


def temporary_feeds_two_updates(a, b):
    t = a + b
    a[:] = t * 2
    b[:] = t - a
    return t


def local_read_transposed(A):
    t = A * 2
    return t.T + t


def row_then_column_sums(A):
    r = A / A.sum(axis=1, keepdims=True)
    return r / r.sum(axis=0, keepdims=True)


@pytest.mark.parametrize("fn", (chain, read_reversed_local, second_difference, local_then_input_modified, local_rebound,
                                whole_sum_between), ids=lambda f: f.__name__)
def test_runs_of_1d_statements(rng, fn):
    # local_then_input_modified writes x[0]; whole_sum_between divides by the sum.
    for n in (1, 2, 5, 1000) if fn in (local_then_input_modified, whole_sum_between) else (0, 1, 2, 5, 1000):
        check(fn, arr(rng, np.float64, n), rtol=1e-12)


@pytest.mark.parametrize("fn", (escaping_row_max, local_read_transposed, row_then_column_sums),
                         ids=lambda f: f.__name__)
def test_runs_of_2d_statements(rng, fn):
    for n in (1, 3, 40):
        check(fn, arr(rng, np.float64, (n, n), positive=True), rtol=1e-12)


def test_a_temporary_that_feeds_two_updates(rng):
    for n in (0, 1, 9, 1000):
        check(temporary_feeds_two_updates, arr(rng, np.float64, n), arr(rng, np.float64, n))


# ---------------------------------------------------------------- sliced-index pragmas


def sum_rows_pragma(A, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = np.sum(A[:M, :N], axis=1)
    return y


def stencil_pragma(A, B):
    M, N = A.shape
    #pragma 1:M-1=>parallel 1:N-1=>parallel,simd
    B[1:M-1, 1:N-1] = A[1:M-1, 1:N-1] + A[0:M-2, 1:N-1] + A[2:M, 1:N-1]
    return B


def blocked_pragma(A, x):
    M, N = A.shape
    out = np.empty((M, N))
    #pragma :M=>block(2) :N=>block(2048)
    out[:M, :N] = A[:M, :N] * x[None, :N]
    return out


def strip_pragmas(a, b):
    n = a.shape[0]
    c = np.empty(n)
    #pragma :n=>single_block
    c[:n] = a[:n] + b[:n]
    d = np.empty(n)
    #pragma :n=>le(4096)
    d[:n] = a[:n] * b[:n]
    return c, d


def reduce_pragmas(A):
    M, N = A.shape
    m = np.empty(M)
    #pragma :M=>parallel :N=>reduce(max)
    m[:M] = np.max(A[:M, :N], axis=1)
    s = np.empty(M)
    #pragma :M=>parallel,simd :N=>reduce(sum:acc)
    s[:M] = np.mean(A[:M, :N], axis=1)
    return m, s


def sequential_statement(a, b):
    c = np.empty_like(a)
    #pragma sequential
    c[:] = a * b + 1
    return c


def auto_statement_order(A, B):
    M, N = A.shape
    C = np.empty((N, M))
    #pragma :N=>parallel :M=>simd
    C[:N, :M] = A[:M, :N].T + B[:N, :M]
    return C


def test_sliced_pragma_parallel_rows_reduced_columns(rng):
    for m, n in ((0, 3), (1, 1), (7, 9), (300, 257)):
        check(sum_rows_pragma, arr(rng, np.float64, (m, n)), poisoned(m, np.float64), rtol=1e-12)


def test_sliced_pragma_on_a_stencil(rng):
    for m, n in ((2, 2), (3, 3), (9, 17), (200, 130)):
        check(stencil_pragma, arr(rng, np.float64, (m, n)), arr(rng, np.float64, (m, n)))


def test_sliced_pragma_block_single_block_and_le(rng):
    for m, n in ((1, 1), (5, 3000), (64, 65)):
        check(blocked_pragma, arr(rng, np.float64, (m, n)), arr(rng, np.float64, n))
    for n in (0, 1, 17, 4096):
        check(strip_pragmas, arr(rng, np.float64, n), arr(rng, np.float64, n))
    # The sizes stay on the loops' schedules (the CUDA back end reads them;
    # docs/cuda.md, "Sizes from the pragmas").
    ir = jitted(blocked_pragma).inspect_ir() + jitted(strip_pragmas).inspect_ir()
    assert "block(2)" in ir and "block(2048)" in ir
    assert "single_block" in ir and "le(4096)" in ir


def test_sliced_pragma_reductions_max_and_named_sum(rng):
    for m, n in ((1, 1), (9, 4), (128, 300)):
        check(reduce_pragmas, arr(rng, np.float64, (m, n), positive=True), rtol=1e-12)


def test_sequential_statement_pragma(rng):
    for n in (0, 5, 10000):
        check(sequential_statement, arr(rng, np.float64, n), arr(rng, np.float64, n))


def test_sliced_pragma_loop_order_follows_the_entries(rng):
    for m, n in ((1, 1), (5, 8), (77, 120)):
        check(auto_statement_order, arr(rng, np.float64, (m, n)), arr(rng, np.float64, (n, m)))


# ---------------------------------------------------------------- vector blocks


def vadd_blocked(a, b, c, N, BN=256):
    #pragma parallel for
    for i in range(0, N, BN):
        vi = plait.vidx(i, BN, N)
        c[vi] = a[vi] + b[vi]


def vadd_blocked_inline(a, b, c, N, BN=256):
    #pragma parallel for
    for i in range(0, N, BN):
        c[plait.vidx(i, BN, N)] = a[plait.vidx(i, BN, N)] * 2 + b[plait.vidx(i, BN, N)]


def blocked_sums(a, N, BN):
    nb = (N + BN - 1) // BN
    out = np.zeros(nb, dtype=a.dtype)
    #pragma parallel for
    for k in range(nb):
        out[k] = np.sum(a[plait.vidx(k * BN, BN, N)])
    return out


def blocked_rows(A, x, BN):
    M, N = A.shape
    y = np.zeros(M)
    for i in range(M):
        for j in range(0, N, BN):
            y[i] += np.sum(A[i, plait.vidx(j, BN, N)] * x[plait.vidx(j, BN, N)])
    return y


def test_vidx_is_the_equivalent_slice_in_python():
    assert plait.vidx(0, 4, 10) == slice(0, 4)
    assert plait.vidx(8, 4, 10) == slice(8, 10)
    assert "vidx" in plait.__all__


def test_vadd_blocked_with_a_vidx_local(rng):
    for n in (0, 1, 255, 256, 257, 1000):
        a, b = arr(rng, np.float64, n), arr(rng, np.float64, n)
        check(vadd_blocked, a, b, poisoned(n, np.float64), n)
        check(vadd_blocked, a, b, poisoned(n, np.float64), n, 7)


def test_vidx_as_a_subscript(rng):
    for n in (0, 1, 255, 1000):
        a, b = arr(rng, np.float32, n), arr(rng, np.float32, n)
        check(vadd_blocked_inline, a, b, poisoned(n, np.float32), n)
        check(vadd_blocked_inline, a, b, poisoned(n, np.float32), n, 3)


def test_vidx_in_reductions(rng):
    for n, bn in ((0, 4), (1, 4), (10, 4), (1000, 64), (1000, 1000), (5, 9)):
        check(blocked_sums, arr(rng, np.int64, n), n, bn)
    for (m, n), bn in (((1, 1), 4), ((6, 50), 16), ((3, 9), 9)):
        check(blocked_rows, arr(rng, np.float64, (m, n)), arr(rng, np.float64, n), bn, rtol=1e-12)


# ---------------------------------------------------------------- whole kernels


def gesummv(alpha, beta, A, B, x):
    M, N = A.shape
    y = np.empty(M, dtype=A.dtype)
    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = alpha * np.sum(A[:M, :N] * x[None, :N], axis=1) + beta * np.sum(B[:M, :N] * x[None, :N], axis=1)
    return y


def gesummv_plain(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def jacobi_2d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def heat_3d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                               + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
                               + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
                               + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
                               + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
                               + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
                               + B[1:-1, 1:-1, 1:-1])


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


def covariance(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


def row_normalise(A):
    return A / A.sum(axis=1, keepdims=True)


def test_gesummv(rng):
    for n in (1, 2, 7, 150):
        A, B, x = arr(rng, np.float64, (n, n)), arr(rng, np.float64, (n, n)), arr(rng, np.float64, n)
        got = check(gesummv, 1.5, 1.2, A, B, x, rtol=1e-12)
        np.testing.assert_allclose(got, gesummv_plain(1.5, 1.2, A, B, x), rtol=1e-10, atol=1e-12)
    A, B = arr(rng, np.float32, (33, 20), "F"), arr(rng, np.float32, (33, 20))
    check(gesummv, 1.5, 1.2, A, B, arr(rng, np.float32, 20, "reversed"), rtol=1e-5)
    check(gesummv_plain, 1.5, 1.2, A, B, arr(rng, np.float32, 20), rtol=1e-5)


def test_jacobi_2d(rng):
    for n, steps in ((3, 2), (4, 5), (31, 10), (150, 4)):
        check(jacobi_2d, steps, arr(rng, np.float64, (n, n)), arr(rng, np.float64, (n, n)))
    check(jacobi_2d, 3, arr(rng, np.float64, (20, 20), "F"), arr(rng, np.float64, (20, 20), "reversed"))


def test_heat_3d_on_a_non_linear_field(rng):
    # npbench's initial field is a fixed point of the stencil; random data is not.
    for n, steps in ((3, 2), (10, 4), (25, 3)):
        A = arr(rng, np.float64, (n, n, n))
        check(heat_3d, steps, A, A.copy())


def test_softmax(rng):
    for shape in ((1, 1), (3, 7), (16, 256)):
        check(softmax, arr(rng, np.float32, shape) * 10, rtol=1e-6)
    check(softmax, arr(rng, np.float32, (2, 3, 4, 33)), rtol=1e-6)
    check(softmax, arr(rng, np.float32, (6, 40), "transposed"), rtol=1e-6)


def test_softmax_of_extreme_values(rng):
    x = arr(rng, np.float32, (4, 9)) * 1000
    x[1, :] = -np.inf
    x[1, 3] = 0
    x[2, 5] = np.inf
    x[3, 2] = np.nan
    check(softmax, x, rtol=1e-6)


def test_softmax_rows_with_nan_in_the_vector_body_and_the_remainder(rng):
    # Rows of 37: two vectors of 16 and a remainder of 5; many rows, so that
    # each thread reuses its row buffer.
    x = arr(rng, np.float32, (301, 37)) * 10
    x[5, 3] = x[6, 35] = x[7, 0] = np.nan
    x[8, :] = np.nan
    x[9, :] = -np.inf
    check(softmax, x, rtol=1e-6)
    check(softmax, arr(rng, np.float64, (3, 5, 37)), rtol=1e-12)


def test_softmax_explains_the_per_thread_row_buffer(rng):
    k = plait.jit(softmax)
    x = arr(rng, np.float32, (4, 8))
    k(x)
    assert "allocated once per thread" in k.explain(), k.explain()


def test_floyd_warshall(rng):
    for n in (1, 2, 9, 64):
        path = rng.integers(1, 20, size=(n, n)).astype(np.int32)
        path[rng.random((n, n)) < 0.3] = 999
        check(floyd_warshall, path)
    n = 40
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    path = ((i * j) % 7 + 1).astype(np.int32)
    path[((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0)] = 999
    check(floyd_warshall, path)


def test_covariance(rng):
    for m, n in ((1, 2), (3, 5), (30, 41)):
        check(covariance, m, float(n), arr(rng, np.float64, (n, m)), rtol=1e-10)
    m, n = 12, 15
    data = np.fromfunction(lambda i, j: i * j / m, (n, m), dtype=np.float64)
    cov = jitted(covariance)(m, float(n), data)
    j, k = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
    np.testing.assert_allclose(cov, j * k * n * (n + 1) / (12 * m * m), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layout", ("C", "mixed"))
def test_row_normalisation(rng, layout):
    for shape in ((1, 1), (4, 9), (300, 129)):
        check(row_normalise, arr(rng, np.float64, shape, layout, positive=True), rtol=1e-13)
    check(row_normalise, arr(rng, np.float32, (30, 1000), positive=True), rtol=1e-5)


def rebind_shifted(a):
    a = a - a[0]
    return a


def rebind_shortened(a):
    a = a[1:] * 2.0
    b = a + 1.0
    return b * a


def test_a_rebound_parameter_keeps_its_new_extents(rng):
    """An array parameter rebound to a value computed from it (of the same
    extent, or one shorter) compiles, and the statements after the
    rebinding use the new extents."""
    for n in (1, 2, 7, 100):
        a = arr(rng, np.float64, (n,))
        check(rebind_shifted, a)
        check(rebind_shortened, a)
