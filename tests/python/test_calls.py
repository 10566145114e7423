"""Calls between functions: a kernel calls module-level functions, decorated
or not, in its module or another, and each call is inlined with its own
types (frontend/inline_calls.h). Every kernel is checked against the
undecorated function; refusals are checked for their class, message and
line."""

import inspect
import math

import numpy as np
import pytest

import call_helpers
import plait
from call_helpers import element, row_norms, scaled, undefined_name
from oracle import SIZES, check, rng_for, random_array


def sigma(x):
    e = math.exp(-x)
    return e / (1.0 - e)


def clip(x, lo=0.0, hi=1.0):
    if x < lo:
        return lo
    elif x > hi:
        return hi
    return x


def find(a, x):
    for i in range(a.shape[0]):
        if a[i] == x:
            return i
    return -1


def first_pair(A, total):
    # Returns from a nested loop: both loops are left.
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] + A[j, i] == total:
                return i * A.shape[1] + j
    return -1


def bump(a, i, by=1.0):
    a[i] += by


def dot(u, v):
    s = 0.0
    for k in range(u.shape[0]):
        s += u[k] * v[k]
    return s


def gradient(F, A, i):
    # Calls dot; allocates its result, as bigCLAM's gradient does.
    g = np.zeros(F.shape[1])
    for j in range(F.shape[0]):
        if A[i, j] != 0:
            g += sigma(dot(F[j], F[i])) * F[j]
        else:
            g -= F[j]
    return g


@plait.jit
def decorated_square(x):
    return x * x


@plait.jit
def scalar_calls(a, x):
    s = 0.0
    for i in range(a.shape[0]):
        s += sigma(a[i] + 2.0) + clip(a[i], hi=0.5) + clip(a[i], -0.25)
    # float(): with no iterations Python's s stays a float, not a float64.
    return float(s) + find(a, x) + scaled(2) + decorated_square(x)


@pytest.mark.parametrize("n", SIZES)
def test_scalar_calls_keywords_defaults_and_early_returns(n):
    rng = rng_for("scalar_calls", n)
    a = random_array(rng, np.float64, n)
    x = a[n // 2] if n else 0.5
    check(scalar_calls, a, x)


@plait.jit
def nested_returns(A, total):
    return first_pair(A, total)


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 5), (8, 8)])
def test_return_from_nested_loops(shape):
    rng = rng_for("nested_returns", shape)
    A = rng.integers(0, 4, shape).astype(np.int64)
    for total in (0, 3, 5, 100):
        check(nested_returns, A, total)


@plait.jit
def specialised_twice(a, k):
    # decorated_square runs on an int and on a float: two specialisations.
    return decorated_square(k) + decorated_square(a[0]), decorated_square(k) // 2


def test_a_function_is_specialised_per_call():
    a = np.array([1.5, 2.0])
    check(specialised_twice, a, 7)
    assert isinstance(specialised_twice(a, 7)[1], int)


@plait.jit
def procedure_calls(a, idx):
    for k in range(idx.shape[0]):
        bump(a, idx[k])
    bump(a, 0, by=0.5)
    return a.sum()


def test_a_procedure_writes_its_arguments():
    rng = rng_for("procedure_calls")
    a = random_array(rng, np.float64, 9)
    check(procedure_calls, a, np.array([1, 3, 3, 8], dtype=np.int64))


@plait.jit
def gauss_seidel(F, A):
    # bigCLAM's shape: a call per row, which calls helpers and updates F in
    # place (rows before i already updated).
    for i in range(F.shape[0]):
        g = gradient(F, A, i)
        F[i] = np.maximum(0.001, F[i] + 0.005 * g)
    return F


def test_calls_that_allocate_and_update_rows():
    rng = rng_for("gauss_seidel")
    n = 12
    A = (rng.random((n, n)) < 0.3).astype(np.int8)
    A = np.triu(A, 1)
    A = A + A.T
    F = rng.random((n, 4)) + 0.1
    check(gauss_seidel, F, A)


@plait.jit
def other_module(X):
    return row_norms(X) * scaled(1.5)


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (7, 5)])
def test_functions_of_another_module_see_its_globals(shape):
    X = random_array(rng_for("other_module", shape), np.float64, shape)
    check(other_module, X)


@plait.jit
def while_test_calls(a):
    n = 0
    while find(a, n) >= 0:
        n += 1
    return n


def test_a_while_test_calls_before_each_iteration():
    check(while_test_calls, np.array([0.0, 1.0, 2.0, 4.0]))
    check(while_test_calls, np.array([3.0]))


@plait.jit
def parallel_calls(a, out):
    for i in plait.prange(a.shape[0]):
        out[i] = sigma(a[i] + 2.0) + clip(a[i])


@pytest.mark.parametrize("n", SIZES)
def test_calls_in_a_parallel_loop(n):
    rng = rng_for("parallel_calls", n)
    check(parallel_calls, random_array(rng, np.float64, n), np.empty(n))


# ---------------------------------------------------------------- errors


def line_of(fn, fragment):
    lines, first = inspect.getsourcelines(fn)
    hits = [first + k for k, text in enumerate(lines) if fragment in text]
    assert len(hits) == 1, hits
    return hits[0]


@plait.jit
def out_of_range(a, i):
    return element(a, i)


def test_a_run_time_error_in_a_callee_names_its_file_and_line():
    with pytest.raises(IndexError) as excinfo:
        out_of_range(np.zeros(3), 5)
    text = str(excinfo.value)
    assert f'File "{call_helpers.__file__}", line {line_of(element, "return a[i]")}' in text, text
    assert "return a[i]" in text


@plait.jit
def calls_undefined(x):
    return undefined_name(x)


def test_a_compile_error_in_a_callee_names_its_file_and_line():
    with pytest.raises(NameError) as excinfo:
        calls_undefined(1.0)
    assert excinfo.value.path == call_helpers.__file__
    assert excinfo.value.line == line_of(undefined_name, "NOT_DEFINED")
    assert "NOT_DEFINED" in str(excinfo.value)


def countdown(n):
    return countdown(n - 1)


def ping(n):
    return pong(n)


def pong(n):
    return ping(n)


@plait.jit
def recursive(n):
    return countdown(n)


@plait.jit
def mutually_recursive(n):
    return ping(n)


@pytest.mark.parametrize("kernel, callee", [(recursive, countdown), (mutually_recursive, pong)])
def test_recursion_is_refused_at_the_call_that_closes_the_cycle(kernel, callee):
    with pytest.raises(NotImplementedError, match="called recursively") as excinfo:
        kernel(3)
    assert excinfo.value.path == __file__
    assert excinfo.value.line == line_of(callee, "return ")


@plait.jit
def too_many(x):
    return clip(x, 0.0, 1.0, 2.0)


@plait.jit
def unknown_keyword(x):
    return clip(x, top=1.0)


@plait.jit
def twice_given(x):
    return clip(x, 0.0, lo=1.0)


@plait.jit
def missing(x):
    return clip()


@pytest.mark.parametrize("kernel, message", [
    (too_many, r"clip\(\) takes from 1 to 3 positional arguments but 4 were given"),
    (unknown_keyword, r"clip\(\) got an unexpected keyword argument 'top'"),
    (twice_given, r"clip\(\) got multiple values for argument 'lo'"),
    (missing, r"clip\(\) missing 1 required positional argument: 'x'"),
])
def test_arguments_bind_as_python_binds_them(kernel, message):
    with pytest.raises(TypeError, match=message):
        kernel(0.5)
    with pytest.raises(TypeError, match=message):
        kernel.py_func(0.5)


@plait.jit
def conditional_call(a, x):
    return x > 0 and find(a, x) >= 0


@plait.jit
def write_after_read(a):
    return a[0] + bump(a, 0)


def returns_sometimes(x):
    if x > 0:
        return x


@plait.jit
def falls_off(x):
    return returns_sometimes(x)


@plait.jit
def function_as_value(x):
    f = clip
    return x


@pytest.mark.parametrize("kernel, args, message", [
    (conditional_call, (np.zeros(2), 1.0), "Python may not evaluate"),
    (write_after_read, (np.zeros(2),), "may write the arrays passed to it"),
    (falls_off, (1.0,), "runs off its end"),
    (function_as_value, (1.0,), "not use it as a value"),
])
def test_refusals_name_the_line(kernel, args, message):
    with pytest.raises(NotImplementedError, match=message) as excinfo:
        kernel(*args)
    assert excinfo.value.path == __file__


def test_a_function_without_source_is_refused():
    namespace = {}
    exec("def hidden(x):\n    return x + 1\n", namespace)
    hidden = namespace["hidden"]

    @plait.jit
    def calls_hidden(x):
        return hidden(x)

    with pytest.raises(NotImplementedError, match="cannot read the source of 'hidden'"):
        calls_hidden(1)


def test_explain_lists_the_inlined_calls():
    scalar_calls(np.array([0.5]), 0.5)
    text = scalar_calls.explain()
    assert f"call to sigma inlined (defined at line {line_of(sigma, 'def sigma')})" in text
    assert "call to scaled inlined (defined at call_helpers.py:" in text


square = lambda x: x * x  # noqa: E731


@plait.jit
def calls_lambda(x):
    return square(x)


def test_a_lambda_is_refused_at_the_call():
    with pytest.raises(NotImplementedError, match="this call is to a lambda") as excinfo:
        calls_lambda(2.0)
    assert excinfo.value.line == line_of(calls_lambda.py_func, "return square(x)")


def make_adder(c):
    def add(x):
        return x + c
    return add


add_three = make_adder(3)


@plait.jit
def calls_closure(x):
    return add_three(x)


def test_a_closure_sees_its_cells_frozen_as_constants():
    check(calls_closure, 2.5)
    check(calls_closure, 4)


def increments(x):
    x = x + 1
    return x


def tail_sum(a):
    a = a[1:]  # rebinds the parameter, not the caller's name
    return a.sum()


@plait.jit
def rebinding(y, a):
    z = increments(y)
    t = tail_sum(a)
    return y, z, t, a.sum()


def test_a_callee_that_rebinds_a_parameter_leaves_the_callers_name():
    check(rebinding, 3, np.arange(5.0))
    check(rebinding, 2.5, np.arange(1.0))


def squares(a):
    s = 0.0
    #pragma parallel for reduction(+:s)
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def scale_rows(A, c):
    for i in plait.prange(A.shape[0]):
        A[i, :] = A[i, :] * c


@plait.jit
def parallel_callees(a, A):
    scale_rows(A, 2.0)
    return squares(a) + squares(A[0])


@pytest.mark.parametrize("n", [0, 1, 33, 1000])
def test_callees_keep_their_pragmas_and_prange(n):
    rng = rng_for("parallel_callees", n)
    check(parallel_callees, random_array(rng, np.float64, n), random_array(rng, np.float64, (5, 7)), rtol=1e-12)
    text = parallel_callees.explain()
    assert "parallel loop over 'squares.i', reduction(+: squares.s)" in text
    assert "parallel loop over 'squares#2.i', reduction(+: squares#2.s)" in text
