"""Locals read before they hold a value: Python's UnboundLocalError. A read
that no assignment reaches on any path is a compile error (a
plait.KernelUnboundLocalError, which is also an UnboundLocalError) at the
read; a read that an assignment reaches on some paths only is checked at run
time and raises UnboundLocalError with Python's message at the read's line.
Every test compares with the undecorated function."""

import inspect

import numpy as np
import pytest

import plait
from oracle import check
from plait import CompileError, KernelNameError, KernelUnboundLocalError


def line_of(kernel, fragment):
    """The file line and column of `fragment` on the kernel's only source
    line that contains it."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    hits = [k for k, text in enumerate(lines) if fragment in text]
    assert len(hits) == 1, f"{fragment!r} found on lines {hits}"
    return first + hits[0], lines[hits[0]].index(fragment)


def python_error(kernel, *args):
    with pytest.raises(UnboundLocalError) as excinfo:
        kernel.py_func(*args)
    return excinfo.value


def expect_run_time_error(kernel, args, fragment):
    """The compiled kernel raises what Python raises (class and message) at
    the line of `fragment`."""
    expected = python_error(kernel, *args)
    with pytest.raises(UnboundLocalError) as excinfo:
        kernel(*args)
    error = excinfo.value
    assert type(error) is UnboundLocalError, type(error)
    assert str(error).startswith(str(expected)), (str(error), str(expected))
    path = kernel.py_func.__code__.co_filename
    assert f'(File "{path}", line {line_of(kernel, fragment)[0]}, col ' in str(error), str(error)


def expect_compile_error(kernel, args, fragment, caret_at):
    """A compile error at `caret_at` (on the line of `fragment`), where Python
    raises UnboundLocalError with the same message when it runs the read."""
    expected = python_error(kernel, *args)
    with pytest.raises(KernelUnboundLocalError) as excinfo:
        kernel(*args)
    error = excinfo.value
    assert isinstance(error, CompileError) and isinstance(error, UnboundLocalError)
    assert isinstance(error, KernelNameError) and isinstance(error, NameError)
    line, _ = line_of(kernel, fragment)
    lines, first = inspect.getsourcelines(kernel.py_func)
    assert (error.line, error.col) == (line, lines[line - first].index(caret_at)), (error.line, error.col, str(error))
    assert str(expected) in error.message, error.message
    assert "UnboundLocalError: " in str(error), str(error)


# --------------------------------------------------------------- compile time


@plait.jit
def read_before_assignment(n):
    y = n + later
    later = 1
    return y + later


@plait.jit
def self_increment(n):
    total = total + n
    return total


@plait.jit
def read_in_loop_assigned_after_it(n):
    s = 0
    for i in range(n):
        s += step
    step = 2
    return s


@plait.jit
def array_read_before_binding(x):
    y = buf + x
    buf = x * 2.0
    return y


@plait.jit
def read_after_break_only(n):
    for i in range(n):
        if i > 0:
            return early
        early = i
        break
    return 0


def test_read_before_any_assignment_is_a_compile_error():
    expect_compile_error(read_before_assignment, (3,), "y = n + later", "later")
    expect_compile_error(self_increment, (3,), "total = total + n", "total + n")
    expect_compile_error(read_in_loop_assigned_after_it, (3,), "s += step", "step")
    expect_compile_error(array_read_before_binding, (np.arange(3.0),), "y = buf + x", "buf")


def test_read_behind_a_break_is_a_compile_error():
    # The assignment reaches only the break, never the next iteration.
    with pytest.raises(KernelUnboundLocalError) as excinfo:
        read_after_break_only(3)
    assert excinfo.value.line == line_of(read_after_break_only, "return early")[0]
    assert read_after_break_only.py_func(3) == 0  # the break ends the loop before the read runs


# --------------------------------------------------------------- run time


@plait.jit
def assigned_in_one_branch(n):
    if n > 0:
        y = n * 2
    return y


@plait.jit
def elif_chain(n):
    if n > 10:
        r = 1
    elif n > 0:
        r = 2
    elif n < -5:
        pass
    else:
        r = 3
    return r


def test_branches():
    check(assigned_in_one_branch, 3)
    expect_run_time_error(assigned_in_one_branch, (-1,), "return y")
    for n in (11, 5, 0, -3):
        check(elif_chain, n)
    expect_run_time_error(elif_chain, (-6,), "return r")


@plait.jit
def last_index(n):
    for i in range(n):
        pass
    return i


@plait.jit
def last_index_stepped(a, b, s):
    for i in range(a, b, s):
        pass
    return i


@plait.jit
def last_index_down(n):
    for i in range(n, 0, -1):
        pass
    return i


@plait.jit
def bound_of_a_range(n):
    if n > 0:
        m = n
    s = 0
    for i in range(m):
        s += i
    return s


def test_loop_variable_after_a_zero_trip_loop():
    check(last_index, 5)
    expect_run_time_error(last_index, (0,), "return i")
    expect_run_time_error(last_index, (-2,), "return i")
    for args in ((0, 5, 2), (5, 0, -2), (0, 1, 7)):
        check(last_index_stepped, *args)
    for args in ((0, 0, 1), (5, 0, 2), (0, 5, -1)):
        expect_run_time_error(last_index_stepped, args, "return i")
    check(last_index_down, 4)
    expect_run_time_error(last_index_down, (0,), "return i")
    check(bound_of_a_range, 4)
    expect_run_time_error(bound_of_a_range, (0,), "for i in range(m)")


@plait.jit
def found_at(x, target):
    for i in range(x.shape[0]):
        if x[i] == target:
            pos = i
            break
    return pos


@plait.jit
def last_positive(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        last = x[i]
        total += last
    return total + last


def test_break_and_continue():
    x = np.array([3.0, -1.0, 7.0, -2.0])
    check(found_at, x, 7.0)
    expect_run_time_error(found_at, (x, 5.0), "return pos")
    expect_run_time_error(found_at, (x[:0], 5.0), "return pos")
    check(last_positive, x)
    expect_run_time_error(last_positive, (-x[:1],), "return total + last")


@plait.jit
def halve(n):
    while n > 1:
        n = n // 2
        last = n
    return last


@plait.jit
def first_power_above(n):
    p = 1
    while True:
        q = p * 2
        if q > n:
            break
        p = q
    return q


@plait.jit
def while_test_reads_it(n):
    if n > 0:
        limit = n
    i = 0
    while i < limit:
        i += 1
    return i


@plait.jit
def while_test_reads_it_behind_or(n):
    if n > 100:
        limit = n
    i = 0
    while i < 3 or i < limit:
        i += 1
    return i


def test_while_loops():
    check(halve, 40)
    expect_run_time_error(halve, (1,), "return last")
    for n in (1, 7, 64):
        check(first_power_above, n)
    check(while_test_reads_it, 4)
    expect_run_time_error(while_test_reads_it, (0,), "while i < limit")
    check(while_test_reads_it_behind_or, 200)
    # The read runs at the fourth test only, after three iterations.
    expect_run_time_error(while_test_reads_it_behind_or, (5,), "while i < 3 or i < limit")


@plait.jit
def read_behind_and(n):
    if n > 0:
        y = n
    if n > 0 and y > 1:
        return 1
    return 0


@plait.jit
def read_behind_or(n):
    if n > 0:
        y = n
    return n <= 0 or y > 1


@plait.jit
def read_in_conditional_expression(n):
    if n > 0:
        y = n
    return y * 2 if n > 0 else -1


@plait.jit
def read_in_comparison_chain(n):
    if n > 0:
        y = n + 1
    return 0 < n < y


@pytest.mark.parametrize("kernel", [read_behind_and, read_behind_or, read_in_conditional_expression,
                                    read_in_comparison_chain])
def test_a_read_that_python_skips_raises_nothing(kernel):
    for n in (-1, 0, 1, 5):
        check(kernel, n)


@plait.jit
def read_behind_and_reached(n, m):
    if n > 0:
        y = n
    return m > 0 and y > 1


def test_a_read_behind_and_raises_when_reached():
    check(read_behind_and_reached, 3, 1)
    check(read_behind_and_reached, -3, 0)
    expect_run_time_error(read_behind_and_reached, (-3, 1), "return m > 0 and y > 1")


@plait.jit
def array_bound_in_branch(x, scale):
    if scale:
        buf = x * 2.0
    return buf + x


@plait.jit
def array_allocated_in_loop(x):
    for i in range(x.shape[0]):
        out = np.zeros(x.shape[0])
    out[0] = 1.0
    return out


def test_array_locals():
    x = np.arange(5.0)
    check(array_bound_in_branch, x, True)
    expect_run_time_error(array_bound_in_branch, (x, False), "return buf + x")
    check(array_allocated_in_loop, x)
    expect_run_time_error(array_allocated_in_loop, (x[:0],), "out[0] = 1.0")


@plait.jit
def tuple_and_augmented(n):
    if n > 0:
        a, b = n, 2 * n
        s = 0
    s += a
    return s + b


def test_tuple_unpacking_and_augmented_assignment():
    check(tuple_and_augmented, 2)
    expect_run_time_error(tuple_and_augmented, (0,), "s += a")


@plait.jit
def carried_between_iterations(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            last = x[i]
        out[i] = last


def test_a_value_carried_between_iterations():
    x = np.array([1.0, -2.0, 3.0, -4.0])
    check(carried_between_iterations, x, np.zeros(4))
    # Python raises at the first iteration, before any write. Until errors
    # stop loops the kernel's later iterations still run, so only the error
    # is compared here, not `out` afterwards.
    expect_run_time_error(carried_between_iterations, (-x, np.zeros(4)), "out[i] = last")


@plait.jit
def parallel_assigned_in_branch(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i]
        out[i] = t


@plait.jit
def parallel_assigned_on_every_path(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i]
        else:
            t = 0.0
        out[i] = t


def test_parallel_loops():
    x = np.array([1.0, -2.0, 3.0, -4.0] * 10)
    check(parallel_assigned_on_every_path, x, np.zeros(40))
    assert "_bound_" not in parallel_assigned_on_every_path.inspect_ir()
    # In Python an iteration that skips the assignment reads the value an
    # earlier iteration left (or raises UnboundLocalError in the first):
    # parallel iterations cannot, so the kernel is refused as a race on t.
    with pytest.raises(plait.RaceError) as excinfo:
        parallel_assigned_in_branch(x, np.zeros(40))
    assert excinfo.value.message.startswith("'t' is assigned in this parallel loop"), excinfo.value.message
