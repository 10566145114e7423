"""Differential tests of kernels called with array arguments that share
memory (views of one array): an array statement that writes one argument
and reads another must give NumPy's answer, the right side evaluated before
any store. Each kernel runs compiled and as the undecorated function on
views of two copies of one random buffer; the buffers must match afterwards.

Covered: shifted copies in both directions, 1-D and 2-D (rows), a
transposed view, a reduction into a row or column of its operand, an
in-place update, a matrix product whose output overlaps an operand, sizes
0, 1 and odd, disjoint views of one array and one array passed twice (the
plain nest, with no copy), a local bound to an argument, a statement in a
time loop, plain loops (Python's sequential semantics), and explain().
"""

import numpy as np
import pytest

import plait
from oracle import assert_same, random_array

SIZES = (0, 1, 2, 7, 33, 1000)
_DISPATCHERS = {}


def jitted(fn):
    if fn not in _DISPATCHERS:
        _DISPATCHERS[fn] = plait.jit(fn)
    return _DISPATCHERS[fn]


def check_views(fn, base, views, *scalars, rtol=None):
    """Runs `fn` compiled and undecorated on views(copy of base) and asserts
    the two copies of the buffer equal afterwards."""
    got, expected = base.copy(), base.copy()
    with np.errstate(all="ignore"):
        fn(*views(expected), *scalars)
    jitted(fn)(*views(got), *scalars)
    assert_same(got, expected, rtol=rtol, atol=rtol, what="the shared buffer after the call")


def add_one(a, b):
    a[:] = b + 1.0


def scaled_sum(a, b, c):
    a[:] = 0.5 * b + c


def in_place_add(a, b):
    a += b


def row_sums(out, A):
    out[:] = np.sum(A, axis=1)


def column_max(out, A):
    out[:] = A.max(axis=0)


def product(C, A, B):
    C[:] = A @ B


def gemm(C, A, B, alpha, beta):
    C[:] = alpha * A @ B + beta * C


def copy_through_local(a, b):
    c = b
    a[:] = c * 2.0


def smooth_steps(a, b, steps):
    for _ in range(steps):
        a[1:-1] = 0.25 * (b[:-2] + 2.0 * b[1:-1] + b[2:])


def plain_loop(a, b):
    for i in range(a.shape[0]):
        a[i] = b[i] + 1.0


@pytest.mark.parametrize("n", SIZES)
def test_shifted_copies_both_directions(rng, n):
    g = random_array(rng, np.float64, n + 1)
    check_views(add_one, g, lambda x: (x[1:], x[:-1]))
    check_views(add_one, g, lambda x: (x[:-1], x[1:]))
    check_views(add_one, g, lambda x: (x[1:][::-1], x[:-1]))


@pytest.mark.parametrize("dtype", (np.float32, np.int64))
def test_shifted_copies_of_other_dtypes(rng, dtype):
    g = random_array(rng, dtype, 101)
    check_views(in_place_add, g, lambda x: (x[2:], x[:-2]))
    check_views(in_place_add, g, lambda x: (x[:-3], x[3:]))


def test_three_arguments_of_one_buffer(rng):
    g = random_array(rng, np.float64, 40)
    check_views(scaled_sum, g, lambda x: (x[1:31], x[:30], x[2:32]))
    check_views(scaled_sum, g, lambda x: (x[:30], x[5:35], x[10:]))


@pytest.mark.parametrize("shape", ((1, 1), (2, 3), (7, 5), (33, 17)))
def test_two_dimensional_overlaps(rng, shape):
    m = random_array(rng, np.float64, (shape[0] + 1, shape[1] + 1))
    check_views(add_one, m, lambda x: (x[1:, :], x[:-1, :]))
    check_views(add_one, m, lambda x: (x[:-1, 1:], x[1:, :-1]))
    check_views(add_one, m, lambda x: (x[:, 1:], x[:, :-1]))


@pytest.mark.parametrize("n", (1, 2, 7, 33))
def test_transposed_view(rng, n):
    m = random_array(rng, np.float64, (n, n))
    check_views(add_one, m, lambda x: (x, x.T))
    check_views(add_one, m, lambda x: (x.T, x))


@pytest.mark.parametrize("n", (1, 5, 33))
def test_reductions_into_their_operand(rng, n):
    m = random_array(rng, np.float64, (n, n))
    check_views(row_sums, m, lambda x: (x[:, 0], x), rtol=1e-12)
    check_views(row_sums, m, lambda x: (x[n - 1], x), rtol=1e-12)
    check_views(column_max, m, lambda x: (x[0], x))
    check_views(column_max, m, lambda x: (x[:, -1], x))


@pytest.mark.parametrize("n", (1, 7, 32))
def test_matrix_product_whose_output_overlaps_an_operand(rng, n):
    buf = random_array(rng, np.float64, (2 * n + 1, 2 * n + 1))
    check_views(product, buf, lambda x: (x[:n, :n], x[:n, 1:n + 1], x[1:n + 1, :n]), rtol=1e-12)
    check_views(product, buf, lambda x: (x[:n, :n], x[:n, :n].T, x[n:2 * n, :n]), rtol=1e-12)
    check_views(gemm, buf, lambda x: (x[1:n + 1, :n], x[:n, :n], x[:n, n:2 * n]), 1.5, 0.5, rtol=1e-12)


def test_disjoint_views_and_one_array_twice(rng):
    # The plain nest runs (no copy) and is right: disjoint halves, and one
    # array read at the elements it writes.
    g = random_array(rng, np.float64, 1000)
    check_views(add_one, g, lambda x: (x[:500], x[500:]))
    check_views(add_one, g, lambda x: (x[::2], x[1::2]))
    check_views(add_one, g, lambda x: (x, x))
    check_views(in_place_add, g, lambda x: (x, x))
    m = random_array(rng, np.float64, (20, 20))
    check_views(product, m, lambda x: (x[:10, :10], x[10:, :10], x[10:, 10:]), rtol=1e-12)


def test_a_local_bound_to_an_argument(rng):
    g = random_array(rng, np.float64, 51)
    check_views(copy_through_local, g, lambda x: (x[1:], x[:-1]))


@pytest.mark.parametrize("steps", (0, 1, 3))
def test_statement_in_a_time_loop(rng, steps):
    g = random_array(rng, np.float64, 65)
    check_views(smooth_steps, g, lambda x: (x[1:], x[:-1]), steps)
    check_views(smooth_steps, g, lambda x: (x, x), steps)


@pytest.mark.parametrize("n", SIZES)
def test_plain_loops_keep_python_order(rng, n):
    # No `restrict` promise: the C++ compiler checks aliasing before it
    # vectorises, so the loop carries each store into the next iteration.
    g = random_array(rng, np.float64, n + 1)
    check_views(plain_loop, g, lambda x: (x[1:], x[:-1]))
    check_views(plain_loop, g, lambda x: (x[:-1], x[1:]))


def test_explain_names_the_runtime_choice():
    kernel = plait.jit(add_one)
    kernel(np.zeros(4), np.zeros(4))
    text = kernel.explain()
    assert "'a' and 'b' may share memory" in text, text
    assert "run-time test" in text, text
