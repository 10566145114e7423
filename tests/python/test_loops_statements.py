"""Every statement of the language against the undecorated function:
assignment (chained, tuple unpacking, swap), augmented assignment, if/elif/
else, for over range (1/2/3 arguments, negative and dynamic steps, zero-trip
loops, the loop variable after the loop), while, break, continue, pass and
return of a scalar, an array, a tuple or nothing."""

import numpy as np
import pytest

import plait
from oracle import check, dtype_id, make, poisoned, rng_for


@plait.jit
def assign_chain(n):
    a = b = c = n * 2
    a += 1
    return a, b, c


def test_assignment_and_chained_assignment():
    for n in (-3, 0, 5):
        check(assign_chain, n)


@plait.jit
def shape_unpack(A):
    M, N = A.shape
    return M, N, M * N


@plait.jit
def shape_unpack_3d(A):
    p, q, r = A.shape
    return r, q, p


@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (3, 7)], ids=str)
def test_tuple_unpacking_of_shape(shape):
    rng = rng_for("shape_unpack", shape)
    check(shape_unpack, make(rng, np.float64, shape, "F"))
    check(shape_unpack_3d, make(rng, np.int32, shape + (2,)))


@plait.jit
def swap_fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a, b


@plait.jit
def swap_elements(x):
    n = x.shape[0]
    for i in range(n // 2):
        x[i], x[n - 1 - i] = x[n - 1 - i], x[i]


@pytest.mark.parametrize("n", (0, 1, 2, 7, 50))
def test_swap(n):
    check(swap_fib, n)
    check(swap_elements, make(rng_for("swap", n), np.int64, n))
    check(swap_elements, make(rng_for("swap-r", n), np.int64, n, "reversed"))


@plait.jit
def augmented_scalars(a, b):
    s = a
    s += b
    t = a
    t -= b
    p = a
    p *= b
    q = a
    q //= b
    r = a
    r %= b
    d = a
    d /= b
    return s, t, p, q, r, d


@pytest.mark.parametrize("a, b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 5), (9, 3)])
def test_augmented_assignment_ints(a, b):
    check(augmented_scalars, a, b)


@pytest.mark.parametrize("a, b", [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.25, -0.5), (0.0, 3.0), (1e300, 1e-10)])
def test_augmented_assignment_floats(a, b):
    check(augmented_scalars, a, b)


@plait.jit
def augmented_elements(x, y, k):
    for i in range(x.shape[0]):
        x[i] += k
        y[i] -= x[i]
        x[i] *= 3
        y[i] //= k
        x[i] %= k


@plait.jit
def augmented_float_elements(x, c):
    for i in range(x.shape[0]):
        x[i] /= c
        x[i] += 1.0
        x[i] //= 0.25
        x[i] %= 0.75


@pytest.mark.parametrize("dtype, layout", [(np.int32, "C"), (np.float32, "C"), (np.int64, "strided"),
                                           (np.float64, "reversed")],
                         ids=["i32-C", "f32-C", "i64-strided", "f64-reversed"])
def test_augmented_assignment_elements(dtype, layout):
    rng = rng_for("augmented_elements", dtype_id(dtype), layout)
    for k in (3, -4):
        check(augmented_elements, make(rng, dtype, 17, layout), make(rng, dtype, 17, layout), k)


@pytest.mark.parametrize("dtype", (np.float32,), ids=dtype_id)
def test_augmented_assignment_float_elements(dtype):
    rng = rng_for("augmented_float_elements", dtype_id(dtype))
    for c in (0.5, -3.0, 7.0):
        check(augmented_float_elements, make(rng, dtype, 41, low=-10, high=10), c)


@plait.jit
def augmented_bitwise(a, b):
    x = a
    x &= b
    y = a
    y |= b
    z = a
    z ^= b
    u = a
    u <<= 3
    v = a
    v >>= 2
    w = a
    w **= 2
    return x, y, z, u, v, w


@pytest.mark.parametrize("a, b", [(12, 10), (-12, 10), (255, -1), (0, 7)])
def test_augmented_bitwise_and_power(a, b):
    check(augmented_bitwise, a, b)


@plait.jit
def classify(x, out):
    for i in range(x.shape[0]):
        if x[i] < -50:
            out[i] = -2
        elif x[i] < 0:
            out[i] = -1
        elif x[i] == 0:
            out[i] = 0
        else:
            out[i] = 1
            if x[i] > 50:
                out[i] = 2


@plait.jit
def if_without_else(x):
    count = 0
    for i in range(x.shape[0]):
        if x[i] > 10:
            count += 1
    return count


@pytest.mark.parametrize("n", (0, 1, 7, 300))
@pytest.mark.parametrize("layout", ("strided",))
def test_if_elif_else(n, layout):
    rng = rng_for("classify", n, layout)
    x = make(rng, np.int64, n, layout)
    if n > 3:
        x[3] = 0
    check(classify, x, poisoned(n, np.int64))
    check(if_without_else, x)


@plait.jit
def range_one(n, out):
    for i in range(n):
        out[i] = i * i


@plait.jit
def range_two(lo, hi, out):
    for i in range(lo, hi):
        out[i] += 1


@plait.jit
def range_three(lo, hi, step, out):
    count = 0
    for i in range(lo, hi, step):
        out[i] += 1 + count
        count += 1
    return count


@pytest.mark.parametrize("n", (0, 1, 10))
def test_for_range_one_argument(n):
    check(range_one, n, poisoned(10, np.int64))


@pytest.mark.parametrize("lo, hi", [(0, 10), (3, 7), (5, 5), (7, 3), (-10, -2), (-4, 6)])
def test_for_range_two_arguments(lo, hi):
    # Negative indices wrap, as in Python.
    check(range_two, lo, hi, np.zeros(10, dtype=np.int64))


@pytest.mark.parametrize("lo, hi, step", [(0, 10, 1), (0, 10, 3), (1, 10, 4), (9, -1, -1), (9, 0, -2), (9, -11, -3),
                                          (-1, -10, -4), (0, 10, -1), (5, 2, 1), (3, 4, 100), (8, 0, -100),
                                          (-10, 10, 7)])
def test_for_range_three_arguments(lo, hi, step):
    check(range_three, lo, hi, step, np.zeros(10, dtype=np.int64))


@plait.jit
def dynamic_bounds(x, out):
    n = x.shape[0]
    for i in range(n):
        for j in range(x[i] % 5, n - x[i] % 3, 1 + x[i] % 2):
            out[j] += i


@pytest.mark.parametrize("n", (0, 1, 13))
def test_for_range_dynamic_bounds(n):
    x = make(rng_for("dynamic_bounds", n), np.int64, n, low=0, high=50)
    check(dynamic_bounds, x, np.zeros(n, dtype=np.int64))


@plait.jit
def last_loop_value(n):
    i = -1
    for i in range(n):
        pass
    j = 100
    for j in range(n, 0, -3):
        pass
    return i, j


@plait.jit
def last_value_after_break(x, limit):
    k = -1
    for k in range(x.shape[0]):
        if x[k] > limit:
            break
    return k


@pytest.mark.parametrize("n", (0, 1, 2, 10))
def test_loop_variable_after_loop(n):
    check(last_loop_value, n)
    x = make(rng_for("after_break", n), np.float64, n)
    for limit in (-2.0, 0.5, 2.0):
        check(last_value_after_break, x, limit)


@plait.jit
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@plait.jit
def while_with_break_continue(x):
    i = 0
    total = 0.0
    while True:
        if i >= x.shape[0]:
            break
        i += 1
        if x[i - 1] < 0:
            continue
        total += x[i - 1]
    return total, i


@pytest.mark.parametrize("n", (1, 2, 27, 97))
def test_while(n):
    check(collatz_steps, n)


@pytest.mark.parametrize("n", (0, 1, 9, 100))
def test_while_break_continue(n):
    x = make(rng_for("while_bc", n), np.float64, n)
    # total stays the Python float 0.0 when no element is added.
    check(while_with_break_continue, x, types=bool((x >= 0).any()))


@plait.jit
def nested_break_continue(A):
    found = 0
    for i in range(A.shape[0]):
        if i % 3 == 2:
            continue
        for j in range(A.shape[1]):
            if A[i, j] < 0:
                break
            if A[i, j] > 0.5:
                continue
            found += 1
    return found


@pytest.mark.parametrize("layout", ("F",))
def test_break_continue_in_nested_loops(layout):
    A = make(rng_for("nested_bc", layout), np.float64, (11, 9), layout, low=-0.2, high=1)
    check(nested_break_continue, A)


@plait.jit
def with_pass(x):
    for i in range(x.shape[0]):
        if x[i] > 0:
            pass
        else:
            x[i] = 0
    if x.shape[0] == 0:
        pass


def test_pass():
    check(with_pass, make(rng_for("pass"), np.int32, 31))


@plait.jit
def returns_nothing(x):
    for i in range(x.shape[0]):
        x[i] = i
    return


@plait.jit
def returns_scalar(x):
    return x[x.shape[0] // 2]


@plait.jit
def returns_array(n):
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        out[i] = n - i
    return out


@plait.jit
def returns_argument(x):
    x[0] = 42
    return x


@plait.jit
def returns_tuple(x):
    out = np.empty(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        out[i] = 2 * x[i]
        s += x[i]
    return out, s, x.shape[0]


@plait.jit
def early_return(x, limit):
    for i in range(x.shape[0]):
        if x[i] > limit:
            return i
    return -1


def test_return_kinds():
    rng = rng_for("returns")
    x = make(rng, np.float64, 9)
    check(returns_nothing, x)
    check(returns_scalar, x)
    check(returns_array, 7)
    check(returns_array, 0)
    check(returns_argument, make(rng, np.int32, 5, "strided"))
    check(returns_tuple, x)
    for limit in (-2.0, 0.0, 0.9, 2.0):
        check(early_return, x, limit)


def test_returned_argument_is_the_callers_array():
    x = np.arange(5, dtype=np.int32)[::2]
    result = returns_argument(x)
    assert result is x or np.shares_memory(result, x)
    assert x[0] == 42


@plait.jit
def reused_names(F, r, limit):
    # `v` holds independent values in each loop, `t` is carried around one
    # loop and reassigned after it, `x` leaves a loop through break and is
    # reused by a while loop with continue (the compiler gives each value a
    # variable of its own: transforms/split_variable_webs.h).
    for k in range(F.shape[0]):
        v = F[k]
        r[v] += 1.0
    for k in range(F.shape[0]):
        v = F[k]
        r[v] *= 2.0
    t = 0.0
    for k in range(r.shape[0]):
        r[k] += t
        t = r[k] * 0.5
    u = t
    t = -1.0
    x = -1.0
    for k in range(r.shape[0]):
        x = float(r[k])
        if x > limit:
            break
    y = x
    x = 0.0
    while x < limit:
        x += 1.0
        if x > limit / 2:
            continue
        x += 0.5
    return u + t, x, y, v


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_a_reused_name_keeps_each_of_its_values(n):
    rng = rng_for("reused_names", n)
    F = rng.integers(0, n, size=2 * n)
    for limit in (0.5, 3.0, 100.0):
        check(reused_names, F, rng.random(n), limit)
