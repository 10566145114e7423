"""Errors raised while a compiled kernel runs: the builtin exception Python
raises for the same mistake, with `(File "<path>", line N, col C)` naming the
line and the column (in characters), then the line with a caret under it:
ZeroDivisionError for Python int/float division by zero, IndexError with
bounds checking (boundscheck=True or PLAIT_BOUNDSCHECK=1), ValueError from
math domain errors and from a range step of 0, OverflowError from a range of
more than 2**63 - 1 values."""

import inspect
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plait
from oracle import check, poisoned

HERE = os.path.dirname(os.path.abspath(__file__))


def line_of(kernel, fragment):
    """The file line of the kernel's source line containing `fragment`."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    hits = [first + k for k, text in enumerate(lines) if fragment in text]
    assert len(hits) == 1, f"{fragment!r} found on lines {hits}"
    return hits[0]


def assert_located(excinfo, kernel, fragment):
    text = str(excinfo.value)
    path = kernel.py_func.__code__.co_filename
    assert f'File "{path}", line {line_of(kernel, fragment)}' in text, text


@plait.jit
def int_floordiv(n, d):
    total = 0
    for i in range(n):
        total += i // d
    return total + 1 // d


@plait.jit
def int_mod(n, d):
    return n % d


@plait.jit
def int_truediv(n, d):
    return n / d


@plait.jit
def float_truediv(x, d):
    return x / d


def test_zero_division_int_floordiv():
    check(int_floordiv, 5, 2)
    with pytest.raises(ZeroDivisionError) as excinfo:
        int_floordiv(5, 0)
    assert_located(excinfo, int_floordiv, "total += i // d")
    with pytest.raises(ZeroDivisionError) as excinfo:
        int_floordiv(0, 0)
    assert_located(excinfo, int_floordiv, "return total + 1 // d")


def test_zero_division_mod_and_truediv():
    check(int_mod, 7, -3)
    check(int_truediv, 7, 2)
    check(float_truediv, 7.0, 2.0)
    with pytest.raises(ZeroDivisionError) as excinfo:
        int_mod(7, 0)
    assert_located(excinfo, int_mod, "return n % d")
    with pytest.raises(ZeroDivisionError):
        int_truediv(7, 0)
    with pytest.raises(ZeroDivisionError) as excinfo:
        float_truediv(7.0, 0.0)
    assert_located(excinfo, float_truediv, "return x / d")


@plait.jit
def numpy_float_division(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] / 0.0


def test_numpy_float_division_by_zero_is_not_an_error():
    # NumPy scalars divide to inf/nan (with a warning), no exception.
    x = np.array([1.0, -1.0, 0.0])
    check(numpy_float_division, x, np.zeros(3))


@plait.jit
def zero_division_in_parallel_loop(x, d, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i] = x[i] + 10 // d


def test_zero_division_inside_parallel_loop():
    x = np.arange(1000, dtype=np.int64)
    check(zero_division_in_parallel_loop, x, 3, np.zeros(1000, dtype=np.int64))
    with pytest.raises(ZeroDivisionError) as excinfo:
        zero_division_in_parallel_loop(x, 0, np.zeros(1000, dtype=np.int64))
    assert_located(excinfo, zero_division_in_parallel_loop, "out[i] = x[i] + 10 // d")


@plait.jit(boundscheck=True)
def checked_get(x, i):
    return x[i]


@plait.jit(boundscheck=True)
def checked_set_2d(A, i, j):
    A[i, j] = 1.0


@plait.jit(boundscheck=True)
def checked_parallel(x, out, shift):
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i] = x[i + shift]


def test_boundscheck_index_error():
    x = np.arange(5.0)
    for i in (0, 4, -1, -5):
        check(checked_get, x, i)
    for i in (5, -6, 100):
        with pytest.raises(IndexError) as excinfo:
            checked_get(x, i)
        assert_located(excinfo, checked_get, "return x[i]")


def test_boundscheck_index_error_2d_and_strided():
    A = np.zeros((3, 4))[:, ::-1]
    check(checked_set_2d, A, 2, 3)
    check(checked_set_2d, A, -3, -4)
    for i, j in ((3, 0), (0, 4), (-4, 0), (0, -5)):
        with pytest.raises(IndexError) as excinfo:
            checked_set_2d(A, i, j)
        assert_located(excinfo, checked_set_2d, "A[i, j] = 1.0")


def test_boundscheck_in_parallel_loop():
    x = np.arange(100.0)
    check(checked_parallel, x, np.zeros(100), 0)
    check(checked_parallel, x, np.zeros(100), -100)
    with pytest.raises(IndexError) as excinfo:
        checked_parallel(x, np.zeros(100), 1)
    assert_located(excinfo, checked_parallel, "out[i] = x[i + shift]")


@plait.jit
def equal_branches(a, out):
    for i in range(a.shape[0]):
        out[i, 0] = bool(np.int32(4) if out[out.shape[0], 0] else np.int32(4)) and True


def test_a_condition_is_evaluated_when_both_branches_are_equal():
    """`x if c else x` evaluates c as Python does: its out-of-range read
    raises (a fold of the comparison around it to `x != 0` dropped it)."""
    with pytest.raises(IndexError) as excinfo:
        equal_branches(np.ones(3, dtype=bool), np.zeros((3, 2), dtype=bool))
    assert_located(excinfo, equal_branches, "out[i, 0] = bool(np.int32(4) if out[out.shape[0], 0] else np.int32(4))")


@plait.jit
def default_get(x, i):
    return x[i]


@plait.jit(boundscheck=False)
def unchecked_get(x, i):
    return x[i]


def test_boundscheck_is_on_by_default_on_the_cpu():
    x = np.arange(5.0)
    for i in (0, 3, -1, -5):
        check(default_get, x, i)
    with pytest.raises(IndexError) as excinfo:
        default_get(x, 5)
    assert_located(excinfo, default_get, "return x[i]")


def test_boundscheck_false_keeps_indices_in_range_right():
    # In range, including negative indices, the unchecked kernel matches Python.
    x = np.arange(5.0)
    for i in (0, 3, -1, -5):
        check(unchecked_get, x, i)


BOUNDSCHECK_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import plait

    @plait.jit(boundscheck=False)
    def get(x, i):
        return x[i]

    x = np.arange(4.0)
    assert get(x, 3) == 3.0
    try:
        get(x, 4)
    except IndexError as e:
        print("INDEXERROR", e)
        sys.exit(0)
    print("NO ERROR")
    sys.exit(1)
""")


def test_boundscheck_environment_variable(tmp_path):
    script = tmp_path / "boundscheck_env.py"
    script.write_text(BOUNDSCHECK_SCRIPT)
    env = dict(os.environ, PLAIT_BOUNDSCHECK="1")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "INDEXERROR" in result.stdout
    assert f'File "{script}", line 8' in result.stdout, result.stdout


@plait.jit
def math_sqrt(x):
    return math.sqrt(x)


@plait.jit
def math_domain_in_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = math.log(x[i])


@plait.jit
def numpy_sqrt(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sqrt(x[i])


def test_math_domain_error():
    check(math_sqrt, 4.0)
    with pytest.raises(ValueError, match="math domain error") as excinfo:
        math_sqrt(-1.0)
    assert_located(excinfo, math_sqrt, "return math.sqrt(x)")
    x = np.array([1.0, 2.0, -3.0])
    with pytest.raises(ValueError, match="math domain error") as excinfo:
        math_domain_in_loop(x, np.zeros(3))
    assert_located(excinfo, math_domain_in_loop, "out[i] = math.log(x[i])")


def test_numpy_sqrt_of_negative_is_nan():
    x = np.array([4.0, -1.0, 0.0])
    out = check(numpy_sqrt, x, np.zeros(3))
    assert out is None


def test_kernel_usable_after_runtime_error():
    with pytest.raises(ZeroDivisionError):
        int_mod(1, 0)
    check(int_mod, -9, 4)


@plait.jit
def numpy_int_division(x, d, out):
    for i in range(x.shape[0]):
        out[i] = x[i] // d[i] + x[i] % d[i]


def test_numpy_int_division_by_zero_gives_zero():
    # With a NumPy operand, integer division by zero is 0 (NumPy warns,
    # no exception), as the language documents.
    x = np.array([7, -7, 0, 5], dtype=np.int64)
    d = np.array([0, 0, 0, 2], dtype=np.int64)
    check(numpy_int_division, x, d, poisoned(4, np.int64))


@plait.jit
def to_int(x):
    return int(x[0])


def test_int_of_nan_and_inf():
    check(to_int, np.array([2.5]))
    with pytest.raises(ValueError):
        to_int(np.array([np.nan]))
    with pytest.raises(OverflowError):
        to_int(np.array([np.inf]))


@plait.jit
def stepped_sum(lo, hi, step):
    total = 0
    for k in range(lo, hi, step):
        total += k
    return total


@plait.jit
def rows_sum(rowptr, vals, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        acc = 0.0
        #pragma simd reduction(+: acc)
        for k in range(rowptr[i], rowptr[i + 1]):
            acc += vals[k]
        out[i] = acc


def test_range_step_known_at_run_time():
    for args in [(0, 10, 3), (10, 0, -3), (0, 10, -1), (-5, 5, 1), (-2**63, 2**63 - 1, 2**62),
                 (2**63 - 1, -2**63, -(2**62) - 1)]:
        check(stepped_sum, *args)


def test_range_zero_step_raises_value_error():
    # As Python: the step is checked whichever way the bounds go (a division
    # by zero in the trip count before).
    for lo, hi in [(0, 5), (5, 0), (3, 3)]:
        with pytest.raises(ValueError, match="must not be zero") as excinfo:
            stepped_sum(lo, hi, 0)
        assert_located(excinfo, stepped_sum, "for k in range(lo, hi, step)")


def test_range_too_long_for_a_loop_counter_raises_overflow_error():
    # More than 2**63 - 1 values: Python would run for centuries; the kernel
    # says so instead of running no iteration (a negative trip count before).
    with pytest.raises(OverflowError, match="2\\*\\*63 - 1") as excinfo:
        stepped_sum(-(2**62) - 5, 2**62 + 5, 1)
    assert_located(excinfo, stepped_sum, "for k in range(lo, hi, step)")
    with pytest.raises(OverflowError):
        stepped_sum(2**63 - 1, -(2**63), -1)
    # In the simd loop of a parallel loop's rows: the row at fault raises.
    rowptr = np.array([0, 2, 2, -(2**62) - 5, 2**62 + 5], dtype=np.int64)
    with pytest.raises(OverflowError) as excinfo:
        rows_sum(rowptr, np.ones(3), np.zeros(4))
    assert_located(excinfo, rows_sum, "for k in range(rowptr[i], rowptr[i + 1])")
    check(rows_sum, np.array([0, 2, 2, 3], dtype=np.int64), np.arange(3.0) + 0.5, poisoned(3, np.float64))


@plait.jit(boundscheck=True)
def index_after_non_ascii_names(a, i):
    ñ = a[0]; café = ñ * 2.0; return café + a[i]


@plait.jit
def division_after_non_ascii_names(n, d):
    größe = n + 1; return größe // d


@pytest.mark.parametrize("kernel, args, fragment, exception", [
    (index_after_non_ascii_names, (np.arange(3.0), 5), "a[i]", IndexError),
    (division_after_non_ascii_names, (4, 0), "größe // d", ZeroDivisionError),
], ids=["index", "division"])
def test_the_caret_of_a_run_time_error_counts_characters(kernel, args, fragment, exception):
    # The column counts characters, as Python's and the compile errors' do:
    # the caret stands under the failing expression after ñ, é and ö, whose
    # UTF-8 bytes would put it further right.
    with pytest.raises(exception) as excinfo:
        kernel(*args)
    with pytest.raises(exception) as expected:
        kernel.py_func(*args)
    lines, first = inspect.getsourcelines(kernel.py_func)
    source = next(text.rstrip("\n") for text in lines if fragment in text)
    col = source.index(fragment)
    path = kernel.py_func.__code__.co_filename
    assert str(excinfo.value).splitlines() == [
        f'{expected.value} (File "{path}", line {line_of(kernel, fragment)}, col {col + 1})',
        source,
        " " * col + "^",
    ]
