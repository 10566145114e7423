"""Reductions without identity (min, max, argmin, argmax) over an empty
axis raise NumPy's ValueError, whole-array and per axis, also when the
result has no element (`np.min(a, axis=0)` of a (0, 0) array) and only
when the reduced axes are empty; a reduction that a conditional expression
or a loop skips raises nothing. The oracle is the undecorated function."""

import numpy as np
import pytest

import plait
from oracle import check

SHAPES = [(0,), (0, 0), (0, 3), (3, 0), (0, 0, 3), (2, 0, 3), (2, 3, 0)]


def min_axis0(a):
    return np.min(a, axis=0)


def max_axis1(a):
    return np.max(a, axis=1)


def max_last_axis_keepdims(a):
    return np.max(a, axis=-1, keepdims=True)


def min_method_axis0(a):
    return a.min(axis=0)


def max_method_axis1(a):
    return a.max(axis=1)


def min_two_axes(a):
    return np.min(a, axis=(0, 1))


def max_whole(a):
    return np.max(a)


def min_method_whole(a):
    return a.min()


def argmax_axis0(a):
    return np.argmax(a, axis=0)


def argmin_last_axis(a):
    return np.argmin(a, axis=-1)


def argmax_whole(a):
    return np.argmax(a)


def argmin_method_axis1(a):
    return a.argmin(axis=1)


def store_row_maxima(a, out):
    out[:] = np.max(a, axis=1)


def guarded_maximum(a):
    return np.max(a) if a.size > 0 else -1.0


def guarded_minimum_by_or(a):
    return a.size == 0 or np.min(a) > 0.5


def loop_of_row_maxima(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += np.max(a[i, :])
    return float(s)


KERNELS = [min_axis0, max_axis1, max_last_axis_keepdims, min_method_axis0, max_method_axis1, min_two_axes, max_whole,
           min_method_whole, argmax_axis0, argmin_last_axis, argmax_whole, argmin_method_axis1, guarded_maximum,
           guarded_minimum_by_or]
NEEDS_2D = {max_axis1, max_method_axis1, min_two_axes, argmin_method_axis1}
GUARDED = {guarded_maximum, guarded_minimum_by_or}


def python_error(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the oracle's exception, whatever it is
        return e
    return None


def check_against_python(kernel, *args):
    expected = python_error(kernel.py_func, *args)
    if expected is None:
        # A conditional expression has one static type, the join of its
        # branches' (docs/language.md, "Types"): np.float64(-1.0) where
        # Python gives -1.0.
        check(kernel, *args, types=kernel.py_func not in GUARDED)
        return
    with pytest.raises(type(expected)) as info:
        kernel(*args)
    assert type(info.value) is type(expected)
    assert str(info.value).startswith(f"{expected} (File "), (str(info.value), str(expected))


@pytest.mark.parametrize("fn", KERNELS, ids=lambda f: f.__name__)
def test_reductions_over_empty_axes_raise_as_numpy_does(fn):
    kernel = plait.jit(fn)
    for shape in SHAPES:
        if fn in NEEDS_2D and len(shape) < 2:
            continue
        check_against_python(kernel, np.zeros(shape))
    # Arrays with elements give the same results as before.
    rng = np.random.default_rng(7)
    check_against_python(kernel, rng.random((3, 4)))


def test_a_reduction_whose_result_has_no_element_still_raises():
    kernel = plait.jit(store_row_maxima)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        kernel(np.zeros((0, 0)), np.zeros(0))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        kernel(np.zeros((3, 0)), np.zeros(3))
    check(kernel, np.zeros((0, 3)), np.zeros(0))
    check(kernel, np.arange(6.0).reshape(3, 2), np.zeros(3))


def test_a_reduction_in_a_loop_raises_only_when_the_loop_reaches_it():
    kernel = plait.jit(loop_of_row_maxima)
    check(kernel, np.zeros((0, 0)))
    check_against_python(kernel, np.zeros((3, 0)))
    check(kernel, np.arange(6.0).reshape(3, 2))
