"""Expressions against the undecorated function: literals, arithmetic with
Python floor semantics, comparisons, boolean and bitwise operators,
conditional expressions, indexing (negative indices wrap), array attributes,
builtins, math.* and np.* functions, constants and module-level globals."""

import math

import numpy as np
import pytest

import plait
from oracle import (FLOAT_DTYPES, INT_DTYPES, NUMERIC_DTYPES, check, dtype_id, make, poisoned, rng_for)

SCALE = 3
OFFSET = 0.5
ENABLED = True

INT_PAIRS = [(7, 3), (-7, 3), (7, -3), (-7, -3), (0, 4), (6, 3), (1, 1), (-1, 5), (123456789, 1000), (-9, 10)]
FLOAT_PAIRS = [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (0.0, 3.5), (1.0, 3.0), (-0.1, 0.03),
               (2.0, 0.5), (1e-8, 7.0), (5.0, -5.0)]


@plait.jit
def literals():
    return 1, -2, 3.5, 1e-3, True, False, 0x1F, 1_000, 0.0, 2.5e10


def test_literals():
    check(literals)


@plait.jit
def arithmetic(a, b):
    return a + b, a - b, a * b, a / b, a // b, a % b, -a


@pytest.mark.parametrize("a, b", INT_PAIRS)
def test_int_arithmetic(a, b):
    check(arithmetic, a, b)


@pytest.mark.parametrize("a, b", FLOAT_PAIRS)
def test_float_arithmetic(a, b):
    check(arithmetic, a, b)


@pytest.mark.parametrize("a, b", [(7, 2.5), (-7, 2.5), (3, -0.75), (1, 1.5)])
def test_mixed_int_float_arithmetic(a, b):
    check(arithmetic, a, b)
    check(arithmetic, b, a)


@plait.jit
def element_arithmetic(x, y, out_add, out_sub, out_mul, out_div, out_floordiv, out_mod, out_neg):
    for i in range(x.shape[0]):
        out_add[i] = x[i] + y[i]
        out_sub[i] = x[i] - y[i]
        out_mul[i] = x[i] * y[i]
        out_div[i] = x[i] / y[i]
        out_floordiv[i] = x[i] // y[i]
        out_mod[i] = x[i] % y[i]
        out_neg[i] = -x[i]


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=dtype_id)
def test_element_arithmetic_floor_semantics(dtype):
    rng = rng_for("element_arithmetic", dtype_id(dtype))
    n = 64
    x = make(rng, dtype, n, low=-50, high=50)
    y = make(rng, dtype, n, low=1, high=9)
    y[::2] *= -1
    div_dtype = np.float64 if dtype in INT_DTYPES else dtype
    outs = [poisoned(n, dtype) for _ in range(3)] + [poisoned(n, div_dtype)] + [poisoned(n, dtype) for _ in range(3)]
    check(element_arithmetic, x, y, *outs)


@plait.jit
def powers(a, b):
    return a ** b, a ** 2, 2 ** b, a ** 0


@pytest.mark.parametrize("a, b", [(3, 4), (-3, 3), (2, 0), (0, 5), (10, 15)])
def test_int_power(a, b):
    check(powers, a, b)


@pytest.mark.parametrize("a, b", [(1.5, 2.0), (2.0, -1.5), (0.5, 0.5), (9.0, 0.5), (3.0, -2.0), (-2.0, 3.0)])
def test_float_power(a, b):
    check(powers, a, b)


@pytest.mark.parametrize("a, b", [(1e300, 2.0), (-1e200, 3.0), (10.0, 400.0), (1e300, 2)])
def test_float_power_that_overflows_is_an_overflow_error(a, b):
    with pytest.raises(OverflowError):
        powers.py_func(a, b)
    with pytest.raises(OverflowError) as info:
        powers(a, b)
    assert "Numerical result out of range" in str(info.value)


@pytest.mark.parametrize("a, b", [(math.inf, 2.0), (2.0, math.inf), (1e-300, 2.0), (1e150, 2.0)])
def test_float_power_of_inf_or_that_underflows_raises_nothing(a, b):
    check(powers, a, b)


NEGATIVE = -2


@plait.jit
def negative_constant_powers(a, b):
    x = a
    x **= -1
    return a ** -1, 2 ** -2, pow(a, -3), a ** NEGATIVE, (-a) ** -1, b ** -1, x, a ** 3, pow(a, 2)


@pytest.mark.parametrize("a", [1, 2, -3, 7, 123456])
def test_python_int_to_a_negative_constant_power_is_a_float(a):
    check(negative_constant_powers, a, True)


def test_zero_to_a_negative_constant_power():
    with pytest.raises(ZeroDivisionError, match="0.0 cannot be raised to a negative power"):
        negative_constant_powers.py_func(0, True)
    with pytest.raises(ZeroDivisionError, match="0.0 cannot be raised to a negative power"):
        negative_constant_powers(0, True)


@plait.jit
def run_time_powers(a, b):
    x = a
    x **= b
    return a ** b, pow(a, b), x


@plait.jit
def numpy_int_powers(a, b):
    return a ** b, a ** -1


@plait.jit
def numpy_power_of_python_ints(a, b):
    return np.power(a, b)


def test_a_run_time_exponent_keeps_the_power_an_int():
    for a, b in [(2, 5), (-3, 3), (7, 0), (0, 0), (0, 4)]:
        check(run_time_powers, a, b)
        check(numpy_power_of_python_ints, a, b)
    # Python gives 0.5; the kernel's power of ints cannot, so it says so.
    assert run_time_powers.py_func(2, -1) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match=r"typed this power as int .*write 2\.0 \*\* n or float\(b\) \*\* n") as excinfo:
        run_time_powers(2, -1)
    path = run_time_powers.py_func.__code__.co_filename
    line = run_time_powers.py_func.__code__.co_firstlineno + 3
    assert f'(File "{path}", line {line}, col ' in str(excinfo.value), str(excinfo.value)


def test_numpy_integers_to_negative_powers_raise_as_numpy():
    numpy_message = "Integers to negative integer powers are not allowed."
    for kernel, args in [(numpy_int_powers, (np.int64(2), 3)), (numpy_int_powers, (np.int32(2), -1)),
                         (numpy_power_of_python_ints, (2, -1))]:
        with pytest.raises(ValueError, match=numpy_message):
            kernel.py_func(*args)
        with pytest.raises(ValueError, match=numpy_message):
            kernel(*args)


@plait.jit
def element_power(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] ** 2 + x[i] ** 3


@pytest.mark.parametrize("dtype", (np.int32, np.float32, np.float64), ids=dtype_id)
def test_element_power(dtype):
    x = make(rng_for("element_power", dtype_id(dtype)), dtype, 33, low=-20, high=20)
    # float32 powers may come from powf or from a double pow rounded to float.
    check(element_power, x, poisoned(33, dtype), rtol=2.5e-7 if dtype == np.float32 else None)


@plait.jit
def comparisons(a, b, c):
    return (a < b, a <= b, a > b, a >= b, a == b, a != b, a < b < c, a <= b <= c, a < b > c, c > b == a)


@pytest.mark.parametrize("a, b, c", [(1, 2, 3), (3, 2, 1), (2, 2, 2), (-1, 5, 0), (0, 0, 1)])
def test_comparisons_int(a, b, c):
    check(comparisons, a, b, c)


@pytest.mark.parametrize("a, b, c", [(1.5, 2.5, 3.0), (2.0, 2.0, 2.0), (-0.5, -1.5, 7.0), (0.1, 0.2, 0.15)])
def test_comparisons_float(a, b, c):
    check(comparisons, a, b, c)


@plait.jit
def element_comparisons(x, y, out):
    for i in range(x.shape[0]):
        out[i] = (x[i] < y[i]) + 2 * (x[i] == y[i]) + 4 * (0 < x[i] <= y[i])


@pytest.mark.parametrize("dtype", (np.float64,), ids=dtype_id)
def test_element_comparisons(dtype):
    rng = rng_for("element_comparisons", dtype_id(dtype))
    x = make(rng, dtype, 50, low=-5, high=5)
    y = make(rng, dtype, 50, low=-5, high=5)
    y[::4] = x[::4]
    check(element_comparisons, x, y, poisoned(50, np.int64))


@plait.jit
def boolean_ops(a, b):
    return a and b, a or b, not a, not b, (a > 0) and (b > 0), (a > 0) or (b < 0)


@pytest.mark.parametrize("a, b", [(0, 5), (3, 0), (2, 7), (0, 0), (-1, 4)])
def test_and_or_not_ints(a, b):
    check(boolean_ops, a, b)


@pytest.mark.parametrize("a, b", [(0.0, 2.5), (1.5, 0.0), (0.5, -0.25), (0.0, 0.0)])
def test_and_or_not_floats(a, b):
    check(boolean_ops, a, b)


@pytest.mark.parametrize("a, b", [(True, False), (False, False), (True, True)])
def test_and_or_not_bools(a, b):
    check(boolean_ops, a, b)


@plait.jit
def short_circuit(x, i):
    # x[i] is read only when i is in range.
    if i < x.shape[0] and x[i] > 0:
        return 1
    if i >= x.shape[0] or x[i] < 0:
        return 2
    return 3


def test_and_or_short_circuit():
    x = np.array([1.0, -1.0, 0.0])
    for i in (0, 1, 2, 3, 1000000):
        check(short_circuit, x, i)


@plait.jit
def bitwise(a, b):
    return a & b, a | b, a ^ b, ~a, a << 3, a >> 2, b >> 1, (a & 0xFF) << b % 8


@pytest.mark.parametrize("a, b", [(12, 10), (-12, 10), (255, -1), (0, 7), (-1, 3), (1 << 40, 9)])
def test_bitwise_ints(a, b):
    check(bitwise, a, b)


@plait.jit
def element_bitwise(x, y, out):
    for i in range(x.shape[0]):
        out[i] = (x[i] & y[i]) ^ (x[i] | 3) ^ (~y[i]) ^ (x[i] << 2) ^ (y[i] >> 1)


@pytest.mark.parametrize("dtype", (np.int32,), ids=dtype_id)
def test_element_bitwise(dtype):
    rng = rng_for("element_bitwise", dtype_id(dtype))
    x = make(rng, dtype, 40, low=-1000, high=1000)
    y = make(rng, dtype, 40, low=-1000, high=1000)
    check(element_bitwise, x, y, poisoned(40, dtype))


@plait.jit
def bool_array_ops(p, q, out):
    for i in range(p.shape[0]):
        out[i] = (p[i] & q[i]) | (not p[i] and q[i]) ^ (p[i] != q[i])


def test_bitwise_bool_arrays():
    rng = rng_for("bool_array_ops")
    p = make(rng, np.bool_, 30)
    q = make(rng, np.bool_, 30, "reversed")
    check(bool_array_ops, p, q, np.zeros(30, dtype=np.bool_))


@plait.jit
def unary_minus(x, n):
    return -x[0], -n, -(-n), -x[0] * -n


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=dtype_id)
def test_unary_minus(dtype):
    x = make(rng_for("unary_minus", dtype_id(dtype)), dtype, 3)
    check(unary_minus, x, 5)


@plait.jit
def conditional_expressions(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] if x[i] > 0 else -x[i] * 2 if x[i] < -0.5 else 0.0


def test_conditional_expression():
    x = make(rng_for("conditional"), np.float64, 100)
    check(conditional_expressions, x, poisoned(100, np.float64))


@plait.jit
def negative_indices(x, A):
    n = x.shape[0]
    a = x[-1] + x[-n]
    b = A[-1, -1] - A[0, -2]
    c = 0.0
    for i in range(1, n + 1):
        c += x[-i] * i
    return a, b, c


@pytest.mark.parametrize("layout", ("C", "reversed", "strided"))
def test_negative_indices_wrap(layout):
    rng = rng_for("negative_indices", layout)
    x = make(rng, np.float64, 9, layout)
    A = make(rng, np.float64, (4, 5), "F" if layout == "C" else layout)
    check(negative_indices, x, A)


@plait.jit
def negative_index_store(x, k):
    x[-k] = 100
    x[x.shape[0] - k - 1] = -100


def test_negative_index_store():
    for k in (1, 2, 5):
        check(negative_index_store, np.zeros(8, dtype=np.int32), k)


@plait.jit
def attributes(A):
    return A.shape[0], A.shape[-1], A.ndim, A.size, len(A)


@plait.jit
def shape_of(A):
    return A.shape


@pytest.mark.parametrize("shape", [(0,), (5,), (3, 4), (2, 0), (2, 3, 4), (1, 2, 3, 2)], ids=str)
def test_array_attributes(shape):
    rng = rng_for("attributes", shape)
    check(attributes, make(rng, np.float32, shape))
    if len(shape) == 2:
        check(shape_of, make(rng, np.float32, shape, "transposed"))


@plait.jit
def dtype_attribute(x):
    out = np.empty(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        out[i] = x[i]
    return out


@pytest.mark.parametrize("dtype", (np.bool_, np.int32, np.float32), ids=dtype_id)
def test_dtype_attribute(dtype):
    check(dtype_attribute, make(rng_for("dtype_attribute", dtype_id(dtype)), dtype, 11, "reversed"))


@plait.jit
def conversions(x, f, n):
    return int(x[0]), float(x[0]), bool(x[0]), int(f), float(n), bool(n), bool(f), int(-f), int(True)


@pytest.mark.parametrize("dtype", (np.bool_, np.int64, np.float32), ids=dtype_id)
def test_int_float_bool_conversions(dtype):
    rng = rng_for("conversions", dtype_id(dtype))
    x = make(rng, dtype, 2, low=-50, high=50)
    for f, n in [(2.7, 0), (-2.7, 3), (0.0, -1), (1e15 + 0.5, 7)]:
        check(conversions, x, f, n)


@plait.jit
def element_conversions(x, out_int, out_float, out_bool):
    for i in range(x.shape[0]):
        out_int[i] = int(x[i])
        out_float[i] = float(x[i])
        out_bool[i] = bool(x[i])


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=dtype_id)
def test_element_conversions(dtype):
    x = make(rng_for("element_conversions", dtype_id(dtype)), dtype, 40, low=-3, high=3)
    x[::5] = 0
    check(element_conversions, x, poisoned(40, np.int64), poisoned(40, np.float64), np.zeros(40, dtype=bool))


@plait.jit
def builtins(a, b, x):
    return (abs(a), abs(b), abs(x[0]), min(a, 3), max(a, -3), min(x[0], x[1]), max(x[0], x[1], x[2]), round(b),
            round(x[0]), min(b, 0.25), max(b, -0.25, 1.5))


@pytest.mark.parametrize("dtype", (np.int64, np.float32), ids=dtype_id)
def test_builtins(dtype):
    rng = rng_for("builtins", dtype_id(dtype))
    x = make(rng, dtype, 3, low=-10, high=10)
    for a, b in [(-4, -2.5), (7, 2.5), (0, 0.5), (3, -3.5), (-1, 1.49)]:
        check(builtins, a, b, x)


@plait.jit
def element_round(x, out):
    for i in range(x.shape[0]):
        out[i] = round(x[i])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_round_half_to_even(dtype):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 2.5001, 1e6 + 0.5, -7.0], dtype=dtype)
    check(element_round, x, poisoned(x.shape[0], np.int64))


@plait.jit
def math_functions(x):
    return (math.sqrt(x), math.exp(x), math.log(x), math.log2(x), math.log10(x), math.sin(x), math.cos(x),
            math.tan(x), math.tanh(x), math.asin(x / 4), math.acos(x / 4), math.atan(x), math.atan2(x, -1.5),
            math.sinh(x), math.cosh(x), math.floor(x), math.ceil(x), math.fabs(-x), math.isnan(x), math.isinf(x),
            math.trunc(-x), math.pow(x, 1.5), math.isfinite(x))


@pytest.mark.parametrize("x", [0.25, 1.0, 2.5, 3.9])
def test_math_functions(x):
    check(math_functions, x)


@plait.jit
def math_on_elements(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = math.sqrt(x[i])
        out[i, 1] = math.exp(x[i])
        out[i, 2] = math.log(x[i])
        out[i, 3] = math.sin(x[i]) + math.cos(x[i])
        out[i, 4] = math.floor(x[i] * 3) + math.ceil(-x[i])
        out[i, 5] = math.atan2(x[i], 0.5)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_math_on_elements(dtype):
    x = make(rng_for("math_elements", dtype_id(dtype)), dtype, 25, low=0.01, high=4)
    # math.* computes in double precision whatever the argument's dtype.
    check(math_on_elements, x, poisoned((25, 6), np.float64))


@plait.jit
def numpy_functions(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = np.sqrt(v)
        out[i, 1] = np.exp(v)
        out[i, 2] = np.log(v)
        out[i, 3] = np.log2(v)
        out[i, 4] = np.log10(v)
        out[i, 5] = np.sin(v)
        out[i, 6] = np.cos(v)
        out[i, 7] = np.tan(v)
        out[i, 8] = np.tanh(v)
        out[i, 9] = np.arcsin(v / 4)
        out[i, 10] = np.arccos(v / 4)
        out[i, 11] = np.arctan(v)
        out[i, 12] = np.arctan2(v, -0.5)
        out[i, 13] = np.sinh(v)
        out[i, 14] = np.cosh(v)
        out[i, 15] = np.floor(v * 3)
        out[i, 16] = np.ceil(-v * 3)
        out[i, 17] = np.fabs(-v)
        out[i, 18] = np.power(v, 3)
        out[i, 19] = np.minimum(v, 1.5)
        out[i, 20] = np.maximum(v, 1.5)
        out[i, 21] = np.where(v > 2, v, -v)
        out[i, 22] = np.isnan(v)
        out[i, 23] = np.isinf(v)
        out[i, 24] = np.abs(-v)
        out[i, 25] = np.trunc(-v * 3)
        out[i, 26] = np.rint(v * 2)
        out[i, 27] = np.round(v * 2)
        out[i, 28] = np.absolute(-v)
        out[i, 29] = np.isfinite(v)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_numpy_functions(dtype):
    x = make(rng_for("numpy_functions", dtype_id(dtype)), dtype, 40, low=0.01, high=4)
    # NumPy's own SIMD implementations of some functions differ from the C
    # library's by a few units in the last place.
    rtol = {np.float32: 1e-6, np.float64: 4e-15}[dtype]
    check(numpy_functions, x, poisoned((40, 30), dtype), rtol=rtol, atol=1e-30)


@plait.jit
def negative_and_positive(n, x):
    # NumPy scalars of Python numbers (int64, float64) and of array elements
    # (their dtype).
    return np.negative(n), np.positive(n), np.negative(x[0]), np.positive(x[1]), np.negative(2.5)


@plait.jit
def negative_of_bool(flag):
    return np.negative(flag)  # NumPy has no loop for bools


@pytest.mark.parametrize("dtype", (np.int8, np.uint32, np.float32), ids=dtype_id)
def test_numpy_negative_and_positive(dtype):
    x = make(rng_for("negative_and_positive", dtype_id(dtype)), dtype, 2)
    check(negative_and_positive, 7, x)
    check(negative_and_positive, -3, x)
    with pytest.raises(TypeError):
        negative_of_bool(True)


@plait.jit
def nan_inf_checks(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = np.isnan(x[i])
        out[i, 1] = np.isinf(x[i])
        out[i, 2] = math.isnan(x[i])
        out[i, 3] = math.isinf(x[i])
        # NaN propagates through np.minimum/np.maximum (unlike C's fmin/fmax).
        out[i, 4] = np.isnan(np.minimum(x[i], 0.0))
        out[i, 5] = np.isnan(np.maximum(0.0, x[i]))


@pytest.mark.parametrize("dtype", (np.float64,), ids=dtype_id)
def test_isnan_isinf_minimum_maximum_with_nan(dtype):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.0, 2.0, np.nan], dtype=dtype)
    check(nan_inf_checks, x, np.zeros((7, 6), dtype=bool))


@plait.jit
def numpy_on_ints(x, out):
    for i in range(x.shape[0]):
        out[i] = np.minimum(x[i], 5) + np.maximum(x[i], -5) + np.where(x[i] % 2 == 0, x[i], 0) + np.power(x[i], 2)


@pytest.mark.parametrize("dtype", (np.int32,), ids=dtype_id)
def test_numpy_functions_on_ints(dtype):
    x = make(rng_for("numpy_on_ints", dtype_id(dtype)), dtype, 40, low=-30, high=30)
    check(numpy_on_ints, x, poisoned(40, dtype))


@plait.jit
def constants(x):
    return (float('inf'), -float('inf'), np.inf, np.pi, math.pi, x < np.inf, x > -math.inf, np.e, math.e, math.inf,
            math.tau, math.isnan(float('nan')), np.isnan(np.nan))


def test_constants():
    check(constants, 1.0)
    check(constants, float("inf"))


@plait.jit
def use_globals(x, out):
    for i in range(x.shape[0]):
        if ENABLED:
            out[i] = x[i] * SCALE + OFFSET


@pytest.mark.parametrize("dtype", (np.float32,), ids=dtype_id)
def test_module_level_constants(dtype):
    x = make(rng_for("globals", dtype_id(dtype)), dtype, 13)
    check(use_globals, x, poisoned(13, dtype))


@plait.jit
def global_in_range(out):
    for i in range(SCALE):
        out[i] = OFFSET * i
    return SCALE, OFFSET


def test_module_level_constants_as_bounds_and_results():
    check(global_in_range, poisoned(5, np.float64))


@plait.jit
def deep_expression(a, b, x):
    return ((a + b) * (a - b) // 3 - a % 7 + (b ** 2) // (a + 100)) * 2 - x[0] * (a - 1) / (b + 1.5)


@pytest.mark.parametrize("a, b", [(5, 3), (-8, 4), (11, -6)])
def test_nested_expression(a, b):
    x = np.array([0.5, 1.0])
    check(deep_expression, a, b, x)
