"""Typing follows NumPy 2 (NEP 50): the Python/NumPy type of every returned
value and the dtype of every stored value match the undecorated function's.
Python scalars are weak (they adapt to the NumPy operand they meet); array
elements are strong; a local keeps one type."""

import math

import numpy as np
import pytest

import plait
from oracle import (DTYPES, NUMERIC_DTYPES, check, dtype_id, make, poisoned, rng_for)


@plait.jit
def element_with_python_scalars(x):
    return x[0] * 2.5, x[0] + 1, x[0] - 0.5, x[0] * True, 3 * x[0], 1.5 / x[0]


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=dtype_id)
def test_python_scalars_are_weak(dtype):
    # float32 * 2.5 stays float32; int32 + 1 stays int32; int32 - 0.5 is float64.
    check(element_with_python_scalars, make(rng_for("weak", dtype_id(dtype)), dtype, 2, low=1, high=9))


@plait.jit
def mixed_elements(x, y):
    return x[0] + y[0], x[0] * y[0], x[0] - y[0], x[0] / y[0], x[0] // y[0], max(x[0] + y[0], x[0] * y[0])


@pytest.mark.parametrize("xd, yd", [(np.int32, np.int64), (np.int32, np.float32), (np.int64, np.float32),
                                    (np.float32, np.float64), (np.bool_, np.int32)],
                         ids=lambda d: dtype_id(d))
def test_strong_promotion(xd, yd):
    rng = rng_for("mixed", dtype_id(xd), dtype_id(yd))
    x = make(rng, xd, 1, low=1, high=9)
    y = make(rng, yd, 1, low=1, high=9)
    check(mixed_elements, x, y)


@plait.jit
def accumulators(x):
    acc = 0.0
    count = 0
    for i in range(x.shape[0]):
        acc += x[i]
        count += x[i]
    return acc, count


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_accumulator_takes_the_element_type(dtype):
    # acc = 0.0; acc += float32 element -> numpy.float32, as in NumPy 2;
    # acc = 0.0; acc += int32 element -> numpy.float64; acc = 0; acc += bool
    # element -> numpy.int64.
    x = make(rng_for("accumulator", dtype_id(dtype)), dtype, 25, low=0, high=10)
    check(accumulators, x, rtol=1e-6 if dtype == np.float32 else None)


def test_float32_accumulator_is_float32():
    x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    result, _ = accumulators(x)
    assert type(result) is np.float32
    assert result == accumulators.py_func(x)[0]


@plait.jit
def weak_parameters(x, k, c, flag, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * k + c if flag else x[i]
    return x[0] * k, x[0] + c, k + c, k * 2, c * 2, flag and k > 0


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=dtype_id)
def test_weak_python_parameters(dtype):
    rng = rng_for("weak_parameters", dtype_id(dtype))
    x = make(rng, dtype, 9, low=-9, high=9)
    for k, c, flag in [(3, 0.5, True), (-2, 1.25, False), (0, -0.75, True)]:
        out_dtype = np.result_type(dtype, np.float64) if np.dtype(dtype).kind == "i" else dtype
        check(weak_parameters, x, k, c, flag, poisoned(9, out_dtype))


@plait.jit
def returned_scalar_kinds(x, n, f):
    return (n, n * 1.0, n / 2, n // 2, f, f * n, x.shape[0], len(x), x[0], x[0] > 0, n > 0, True, x.ndim, x.size,
            int(x[0]), float(n), f > n)


@pytest.mark.parametrize("dtype", (np.bool_, np.int64, np.float32), ids=dtype_id)
def test_returned_scalar_types(dtype):
    x = make(rng_for("returned", dtype_id(dtype)), dtype, 3)
    check(returned_scalar_kinds, x, 7, 2.5)


@plait.jit
def division_types(x):
    a = x[0] / 2
    b = x[0] // 2
    c = x[0] % 3
    d = x[0] ** 2
    return a, b, c, d


@pytest.mark.parametrize("dtype", (np.int32, np.int64, np.float32), ids=dtype_id)
def test_division_result_types(dtype):
    # int32 / 2 is float64, int32 // 2 stays int32, float32 / 2 stays float32.
    check(division_types, make(rng_for("division", dtype_id(dtype)), dtype, 1, low=-9, high=9))


@plait.jit
def store_converts(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 1.5


@pytest.mark.parametrize("src, dst", [(np.float64, np.float32), (np.float64, np.int32), (np.float32, np.int64),
                                      (np.float64, np.bool_)],
                         ids=lambda d: dtype_id(d))
def test_store_casts_to_the_array_dtype(src, dst):
    # Storing into an array casts like NumPy's item assignment (floats to
    # ints truncate towards zero).
    x = make(rng_for("store", dtype_id(src), dtype_id(dst)), src, 30, low=-50, high=50)
    x[::7] = 0
    check(store_converts, x, poisoned(30, dst))


@plait.jit
def unify_int_float(x, use_float):
    v = 1
    if use_float:
        v = 2.5
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] + v
    return out


def test_local_assigned_int_and_float_unifies_to_float64():
    x = np.array([1.0, 2.0, 3.0])
    for flag in (True, False):
        check(unify_int_float, x, flag)


def test_local_assigned_int_and_float_is_float64_when_returned():
    # Python returns the int 1 on one path; the language gives the local one
    # type, float64, so the kernel returns 1.0 (documented difference).
    @plait.jit
    def unified(flag):
        v = 1
        if flag:
            v = 2.5
        return v

    assert unified(True) == 2.5 and type(unified(True)) is float
    assert unified(False) == 1.0 and type(unified(False)) is float


@plait.jit
def float32_chain(x, out):
    for i in range(x.shape[0]):
        t = x[i] * 0.1
        t = t + 1.0 / 3.0
        out[i] = math.pi * t - np.pi


def test_float32_arithmetic_stays_float32():
    # Every step rounds to float32, as NumPy scalars do (no double-precision
    # intermediates).
    x = make(rng_for("f32chain"), np.float32, 200, low=-1000, high=1000)
    check(float32_chain, x, poisoned(200, np.float32))


@plait.jit
def int32_wraps(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i] * x[i]


def test_int32_arithmetic_wraps_like_numpy():
    x = np.array([2000, -2000, 46341, 70000, 1, 0], dtype=np.int32)
    check(int32_wraps, x, poisoned(6, np.int32))


@plait.jit
def big_python_int(x, k):
    return x[0] + k


def test_python_int_out_of_range_for_int32_raises_overflow():
    x = np.array([5], dtype=np.int32)
    check(big_python_int, x, 7)
    with pytest.raises(OverflowError):
        big_python_int.py_func(x, 3_000_000_000)
    with pytest.raises(OverflowError):
        big_python_int(x, 3_000_000_000)


@plait.jit
def bool_arithmetic(p, n):
    return p[0] + n, p[0] * 2.5, int(p[0]) + int(p[1]), p[0] & p[1], p[0] | p[1], not p[0]


def test_bool_elements_with_python_scalars():
    for p in (np.array([True, False]), np.array([False, False]), np.array([True, True])):
        check(bool_arithmetic, p, 3)


@plait.jit
def math_returns_python_float(x, n):
    return (math.sqrt(x[0]), math.floor(x[0]), math.fabs(x[0]), abs(x[0]), np.sqrt(x[0]), np.floor(x[0]),
            np.sqrt(n), math.sqrt(n), n * 0.5)


@pytest.mark.parametrize("dtype", (np.float32, np.int64), ids=dtype_id)
def test_function_result_types(dtype):
    # math.* returns Python floats (math.floor an int); np.* keeps the
    # NumPy type of its argument; np.sqrt of a Python int is numpy.float64.
    x = make(rng_for("fn_types", dtype_id(dtype)), dtype, 1, low=1, high=50)
    check(math_returns_python_float, x, 9)


@plait.jit
def numpy_scalar_conversions(x, f, n):
    a = np.float32(f)
    b = np.int32(n)
    c = np.float64(x[0])
    d = np.int64(f)
    e = np.bool_(n)
    return a, b, c, d, e, a * 2.0, b + 1, b + x[0]


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=dtype_id)
def test_numpy_scalar_conversions(dtype):
    x = make(rng_for("np_conversions", dtype_id(dtype)), dtype, 2, low=-9, high=9)
    for f, n in [(2.75, 3), (-1.5, 0)]:
        check(numpy_scalar_conversions, x, f, n)


@plait.jit
def numpy_float_to_int32(x, out):
    for i in range(x.shape[0]):
        out[i] = np.int32(np.sqrt(x[i])) + np.int32(x[i] * 1e10)


@plait.jit
def python_float_to_int32(f):
    return np.int32(f)


def test_numpy_float_conversions_give_numpy_results():
    # A NumPy float that is NaN or out of range converts to the type's least
    # value, without an error (NumPy warns); a Python float goes through
    # int(), which raises.
    x = np.array([-0.5, 4.0, 1e300, np.inf, -np.inf, np.nan], dtype=np.float64)
    with np.errstate(all="ignore"):
        check(numpy_float_to_int32, x, np.zeros(6, dtype=np.int32))
    for f, error in [(float("nan"), ValueError), (float("inf"), OverflowError), (3e9, OverflowError)]:
        with pytest.raises(error):
            python_float_to_int32.py_func(f)
        with pytest.raises(error):
            python_float_to_int32(f)


@plait.jit
def numpy_scalar_arguments(a, b):
    return a * 2.5, a + b, b * 3, a / 2


@pytest.mark.parametrize("a, b", [(np.float32(1.5), np.int32(7)), (np.int64(-4), np.float64(0.25)),
                                  (np.int32(5), 2)],
                         ids=str)
def test_numpy_scalar_arguments_are_strong(a, b):
    check(numpy_scalar_arguments, a, b)
