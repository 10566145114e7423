"""An error raised while a kernel runs stops it as Python stops: the first
error propagates, the statements after it do not run, and the caller's arrays
hold what was written before it. Each test runs the undecorated function on
copies of the same inputs and compares the exception class and every array
afterwards. Iterations of a parallel loop are independent by the user's
pragma: there the other threads stop at their next iteration, so only the
elements the failing iteration would have written, and everything after the
loop, are compared."""

import math
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plait


def check_stops(kernel, make_args):
    """The compiled kernel raises what Python raises and leaves every array
    as Python leaves it; `make_args()` gives the same fresh arguments (views
    included) at each call."""
    expected = make_args()
    with pytest.raises(Exception) as excinfo:
        kernel.py_func(*expected)
    actual = make_args()
    with pytest.raises(type(excinfo.value)):
        kernel(*actual)
    for got, want in zip(actual, expected):
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)


def seeded(seed, build):
    """make_args for check_stops: `build(rng)` with a fresh generator seeded
    `seed`, so that each call makes the same arrays."""
    return lambda: build(np.random.default_rng(seed))


@plait.jit(boundscheck=True)
def out_of_range_then_other_array(a, b):
    for i in range(a.shape[0] + 2):
        a[i] = 1.0 + i
        b[i] = 2.0 + i


@plait.jit
def floordiv_in_loop(a, d):
    for i in range(a.shape[0]):
        a[i] = 10 // (d - i) + i


@plait.jit
def domain_error_in_nested_loop(a):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = math.log(a[i, j] - 1.0)


@plait.jit
def error_in_condition(a, d):
    for i in range(a.shape[0]):
        if 7 % (d - i) == 1:
            a[i] = -1.0
        else:
            a[i] = 1.0


@plait.jit
def statements_after_a_loop(a, b, d):
    for i in range(a.shape[0]):
        a[i] = a[i] + 10 // d
    b[0] = 1


@plait.jit
def matmul_shape_in_loop(a, b, out):
    for t in range(3):
        out[t] = t
        c = a @ b
        out[t] += c[0, 0]


def with_log_of_negative(a, at):
    a[at] = 0.5  # log(0.5 - 1.0): math domain error
    return a


def test_serial_loops_stop_at_the_first_error():
    check_stops(out_of_range_then_other_array, seeded(1, lambda r: [r.random(3), r.random(6)]))
    check_stops(floordiv_in_loop, seeded(2, lambda r: [r.integers(-9, 9, 6), 3]))
    check_stops(domain_error_in_nested_loop, seeded(3, lambda r: [with_log_of_negative(2.0 + r.random((4, 5)), (2, 3))]))
    check_stops(error_in_condition, seeded(4, lambda r: [r.random(7), 4]))
    check_stops(statements_after_a_loop,
                seeded(5, lambda r: [r.integers(1, 9, 5), np.zeros(1, dtype=np.int64), 0]))


def test_strided_views_keep_what_python_wrote():
    check_stops(out_of_range_then_other_array, seeded(6, lambda r: [r.random(7)[::2], r.random(12)[::-2]]))
    check_stops(domain_error_in_nested_loop,
                seeded(7, lambda r: [with_log_of_negative(2.0 + r.random((6, 9)), (4, 2))[::2, 1:]]))
    check_stops(domain_error_in_nested_loop,
                seeded(8, lambda r: [with_log_of_negative(2.0 + r.random((5, 4)), (1, 3)).T]))


def test_matrix_product_shape_mismatch_in_loop():
    check_stops(matmul_shape_in_loop, seeded(9, lambda r: [r.random((2, 3)), r.random((4, 2)), r.random(3)]))


@plait.jit(boundscheck=True)
def store_at_a_raising_index(a, out):
    out[a[4] % out.shape[0]] = 7


def test_a_store_whose_index_raises_writes_nothing():
    check_stops(store_at_a_raising_index, lambda: [np.arange(4), np.zeros(4, dtype=np.int64)])


@plait.jit
def while_on_a_failed_value(x, d):
    n = 0
    while x < 100:
        x = x + 10 // d
        n += 1
    return n


def test_while_loop_whose_exit_needs_the_failed_value_stops():
    # Run in a child process: before errors stopped kernels this loop never
    # ended (the failed step's stand-in value is 0).
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from test_errors_stop import while_on_a_failed_value
        try:
            while_on_a_failed_value(0, 0)
        except ZeroDivisionError as e:
            print("raised", e)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "raised integer division or modulo by zero" in done.stdout, done.stdout + done.stderr
    assert while_on_a_failed_value(0, 1) == while_on_a_failed_value.py_func(0, 1)


@plait.jit
def parallel_then_serial(a, b, k):
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] = 100 // (k - i) + 1
    for i in range(b.shape[0]):
        b[i] = 1


@plait.jit(boundscheck=True)
def parallel_out_of_range(a, idx):
    #pragma parallel for
    for i in range(idx.shape[0]):
        a[idx[i]] = i + 1


def test_parallel_loop_stops_and_nothing_after_it_runs():
    n = 50_000
    a = np.full(n, -7, dtype=np.int64)
    b = np.zeros(3, dtype=np.int64)
    with pytest.raises(ZeroDivisionError):
        parallel_then_serial(a, b, n // 2)
    assert a[n // 2] == -7  # the failed iteration stores nothing
    written = a != -7
    with np.errstate(divide="ignore"):
        expected = 100 // (n // 2 - np.arange(n)) + 1
    np.testing.assert_array_equal(a[written], expected[written])
    assert not b.any()  # the loop after the parallel loop did not run
    idx = np.arange(n) % 10
    idx[123] = 10
    a = np.zeros(10, dtype=np.int64)
    with pytest.raises(IndexError):
        parallel_out_of_range(a, idx)


@plait.jit(num_threads=4)
def first_iteration_fails_last(a, idx, spin):
    #pragma parallel for
    for i in range(idx.shape[0]):
        acc = 0
        if i == 0 and spin > 0:
            # The first iteration works before it fails: the others, on other
            # threads, fail first in time.
            for k in range(spin):
                acc += k % 7
            a[0] = acc // (spin - spin)
        a[i] = acc + a[idx[i]]


def test_parallel_loop_raises_the_first_failing_iterations_error():
    """Python raises the error of the first iteration that fails, however the
    threads run: here iteration 0's ZeroDivisionError, while every other
    iteration raises an IndexError sooner. The iterations before the failing
    one run to their end (there are none here); a later one's IndexError does
    not stop iteration 0."""
    for n in (2, 3, 8, 64):
        idx = np.full(n, 10**6, dtype=np.int64)
        for _ in range(5):
            a = np.zeros(n, dtype=np.int64)
            with pytest.raises(ZeroDivisionError):
                first_iteration_fails_last(a, idx, 2_000_000)
            assert a[0] == 0  # the failed store wrote nothing
    # Without the division, the first failing iteration's IndexError, after
    # the iterations before it wrote what Python writes.
    idx = np.zeros(8, dtype=np.int64)
    idx[5], idx[6] = 10**6, 10**7
    a = np.arange(8, dtype=np.int64)
    with pytest.raises(IndexError, match="index 1000000 is out of bounds"):
        first_iteration_fails_last(a, idx, 0)
    np.testing.assert_array_equal(a[:5], [0, 0, 0, 0, 0])


@plait.jit
def time_loop_with_raising_step(a, b, s, d):
    for t in range(s.shape[0]):
        #pragma parallel for
        for i in range(b.shape[0]):
            b[i] = b[i] + t
        s[t] = 100 // (d - t)
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] + b[i] * 2


def test_region_time_loop_stops_after_the_failed_step():
    for n in (0, 1, 7, 3000):
        check_stops(time_loop_with_raising_step,
                    seeded(n, lambda r: [r.random(n), r.random(n), np.zeros(6, dtype=np.int64), 3]))
    assert "parallel region" in time_loop_with_raising_step.explain()


@plait.jit
def simd_then_store(a, b, d):
    #pragma simd
    for i in range(a.shape[0]):
        a[i] = a[i] + 10 // d
    b[0] = 1


def test_simd_loop_stops_the_code_after_it():
    a = np.arange(10, dtype=np.int64)
    b = np.zeros(1, dtype=np.int64)
    with pytest.raises(ZeroDivisionError):
        simd_then_store(a, b, 0)
    assert b[0] == 0


@plait.jit
def spin(n):
    x = 0
    k = 0
    while x < n:
        x = (x * 7 + 3) % 1000
        k += 1
    return k


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
def test_ctrl_c_interrupts_a_long_kernel():
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        from test_errors_stop import spin
        spin(5)
        print("ready", flush=True)
        try:
            spin(2000)  # x stays below 1000: runs until interrupted
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        print(spin(5) == spin.py_func(5), flush=True)
    """)
    # The child starts with SIGINT's default action and unblocked, whatever
    # the test process inherited (a pytest-xdist worker may ignore or block
    # it, and a child inherits both, so its Python would never see Ctrl-C).
    def default_sigint():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=default_sigint)
    try:
        assert child.stdout.readline().strip() == "ready"
        import time
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert out.split() == ["interrupted", "True"], out + err
