"""Errors of array expressions: bad sliced-index pragmas, shapes that do not
match at run time, and constructs outside the subset. Compile errors name
the line and column of the construct (the caret); run-time errors are the
exception NumPy raises, naming the kernel's line."""

import inspect

import numpy as np
import pytest

import plait


def location_of(fn, fragment, occurrence=0):
    """(line, 0-based column) of `fragment` in fn's source: the n-th source
    line holding it, at its first position on that line."""
    lines, first = inspect.getsourcelines(fn)
    hits = [(first + i, text.index(fragment)) for i, text in enumerate(lines) if fragment in text]
    assert hits, f"{fragment!r} is not in {fn.__name__}"
    return hits[occurrence]


def compile_error(fn, exception, *args):
    with pytest.raises(exception) as info:
        plait.jit(fn)(*args)
    error = info.value
    assert isinstance(error, plait.CompileError)
    return error


def assert_points_at(error, fn, fragment, occurrence=0, *, message):
    """The error names fn's file, the line and column of `fragment`, shows a
    caret there, and its message holds `message`."""
    line, col = location_of(fn, fragment, occurrence)
    assert message in error.message, error.message
    assert error.path == fn.__code__.co_filename
    assert (error.line, error.col) == (line, col), (str(error), line, col)
    text = str(error)
    assert f"line {line}" in text
    source_line = inspect.getsourcelines(fn)[0][line - fn.__code__.co_firstlineno]
    assert source_line.rstrip() in text
    caret_line = text.splitlines()[text.splitlines().index(next(
        t for t in text.splitlines() if t.rstrip() == source_line.rstrip())) + 1]
    assert caret_line.index("^") == col, text


# ---------------------------------------------------------------- pragmas


def unknown_property(A, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>frobnicate
    y[:M] = np.sum(A[:M, :N], axis=1)


def dimension_not_in_statement(A, y):
    M, N = A.shape
    #pragma :M=>parallel :K=>simd
    y[:M] = np.sum(A[:M, :N], axis=1)


def reduce_on_a_kept_dimension(A, y):
    M, N = A.shape
    #pragma :M=>reduce(sum) :N=>simd
    y[:M] = np.sum(A[:M, :N], axis=1)


def reduce_with_the_wrong_operator(A, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>reduce(max)
    y[:M] = np.sum(A[:M, :N], axis=1)


def sliced_pragma_above_a_scalar_statement(A, y):
    M, N = A.shape
    #pragma :M=>parallel
    y[0] = A[0, 0] + 1.0


def sliced_pragma_above_a_scalar_local(A, y):
    s = 0.0
    #pragma :N=>parallel
    s = s + 1.0
    y[0] = s


def malformed_entry(A, y):
    M, N = A.shape
    #pragma :M=>parallel simd
    y[:M] = np.sum(A[:M, :N], axis=1)


def empty_property(A, y):
    M, N = A.shape
    #pragma :M=>parallel, :N=>reduce(sum)
    y[:M] = np.sum(A[:M, :N], axis=1)


def size_not_a_number(A, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>le(N)
    y[:M] = np.sum(A[:M, :N], axis=1)


def size_missing(A, y):
    M, N = A.shape
    #pragma :M=>block :N=>reduce(sum)
    y[:M] = np.sum(A[:M, :N], axis=1)


def size_not_positive(A, y):
    M, N = A.shape
    #pragma :M=>block(0) :N=>reduce(sum)
    y[:M] = np.sum(A[:M, :N], axis=1)


def argument_to_a_plain_property(A, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>single_block(2)
    y[:M] = np.sum(A[:M, :N], axis=1)


def property_not_closed(A, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>reduce(sum
    y[:M] = np.sum(A[:M, :N], axis=1)


SCALAR_STATEMENT = "this pragma schedules the loops of an array statement, but the statement below is not one"
# A pragma's location is its text after the '#'.
PRAGMA_ERRORS = [
    (unknown_property, "pragma :", "unknown property 'frobnicate'"),
    (dimension_not_in_statement, "pragma :", "the dimension ':K' does not appear as a slice in this statement"),
    (reduce_on_a_kept_dimension, "pragma :", "':M' is not a reduced dimension of this statement"),
    (reduce_with_the_wrong_operator, "pragma :", "':N' is reduced with sum in this statement, not max"),
    (sliced_pragma_above_a_scalar_statement, "pragma :", SCALAR_STATEMENT),
    (sliced_pragma_above_a_scalar_local, "pragma :", SCALAR_STATEMENT),
    (malformed_entry, "pragma :", "each entry of a sliced-index pragma looks like ':N=>parallel', got 'simd'"),
    (empty_property, "pragma :", "empty property in ':M=>parallel,'"),
    (size_not_a_number, "pragma :", "'le(N)': N must be a positive integer below 10**9"),
    (size_missing, "pragma :", "'block' takes a size: block(N), N a positive integer"),
    (size_not_positive, "pragma :", "'block(0)': N must be a positive integer below 10**9"),
    (argument_to_a_plain_property, "pragma :", "'single_block' takes no argument, got 'single_block(2)'"),
    (property_not_closed, "pragma :", "'reduce(sum' is not closed by ')'"),
]


@pytest.mark.parametrize("fn, fragment, message", PRAGMA_ERRORS, ids=[e[0].__name__ for e in PRAGMA_ERRORS])
def test_bad_sliced_pragmas_are_pragma_errors_at_the_pragma(fn, fragment, message):
    error = compile_error(fn, plait.PragmaError, np.ones((3, 4)), np.zeros(3))
    assert_points_at(error, fn, fragment, message=message)


# ---------------------------------------------------------------- run-time shapes


def add(a, b):
    return a + b


def store(a, b):
    a[:] = b


def store_slice(a, b):
    a[1:] = b[::2]


def matmul(A, B):
    return A @ B


def matvec(A, x):
    return np.dot(A, x)


def broadcast_row(A, B):
    return A + B[0:1, :]


def assert_value_error_at(fn, fragment, args, message):
    with pytest.raises(ValueError) as info:
        plait.jit(fn)(*args)
    line, _ = location_of(fn, fragment)
    assert message in str(info.value)
    assert f'(File "{fn.__code__.co_filename}", line {line}, col ' in str(info.value)


def test_operands_of_different_extents_raise_value_error(rng):
    with pytest.raises(ValueError):
        add(np.ones(3), np.ones(4))
    assert_value_error_at(add, "a + b", (np.ones(3), np.ones(4)), "operands could not be broadcast together")
    assert_value_error_at(add, "a + b", (np.ones((2, 3)), np.ones((3, 3))), "operands could not be broadcast together")


def test_storing_an_array_of_another_extent_raises_value_error():
    assert_value_error_at(store, "a[:] = b", (np.ones(3), np.ones(4)), "could not broadcast")
    assert_value_error_at(store_slice, "a[1:] = b[::2]", (np.ones(5), np.ones(5)), "could not broadcast")
    a = np.zeros(5)
    plait.jit(store_slice)(a, np.arange(8.0))
    np.testing.assert_array_equal(a, [0, 0, 2, 4, 6])


def test_matrix_products_with_different_inner_extents_raise_value_error():
    with pytest.raises(ValueError):
        matmul(np.ones((2, 3)), np.ones((4, 2)))
    assert_value_error_at(matmul, "A @ B", (np.ones((2, 3)), np.ones((4, 2))), "matmul")
    assert_value_error_at(matvec, "np.dot(A, x)", (np.ones((2, 3)), np.ones(2)), "matmul")


def test_an_extent_of_one_known_only_at_run_time_broadcasts_and_others_still_raise():
    # NumPy broadcasts an extent that is 1 only at run time; so does Plait
    # (tests/python/test_array_overlap.py covers the values).
    np.testing.assert_array_equal(plait.jit(add)(np.ones(3), np.ones(1)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(plait.jit(add)(np.ones(1), np.ones(3)), [2.0, 2.0, 2.0])
    assert plait.jit(broadcast_row)(np.ones((3, 4)), np.ones((2, 4))).shape == (3, 4)
    # Extents that differ and are not 1 raise, whichever operand comes first.
    assert_value_error_at(add, "a + b", (np.ones(3), np.ones(2)), "operands could not be broadcast together")
    assert_value_error_at(add, "a + b", (np.ones(2), np.ones(3)), "operands could not be broadcast together")
    assert_value_error_at(store, "a[:] = b", (np.ones(1), np.ones(3)), "could not broadcast")
    np.testing.assert_array_equal(plait.jit(add)(np.ones(1), np.ones(1)), [2.0])


def test_a_kernel_keeps_working_after_a_shape_error():
    kernel = plait.jit(add)
    with pytest.raises(ValueError):
        kernel(np.ones(3), np.ones(4))
    np.testing.assert_array_equal(kernel(np.ones(3), np.ones(3)), [2.0, 2.0, 2.0])


# ---------------------------------------------------------------- compile-time shapes and axes


def store_2d_into_1d(a, B):
    a[:] = B


def axis_out_of_range(a):
    return np.sum(a, axis=2)


def duplicate_axis(A):
    return A.sum(axis=(0, 0))


def too_many_indices(a):
    return a[0, 1:]


def test_a_value_of_higher_rank_than_its_target_is_a_compile_error():
    error = compile_error(store_2d_into_1d, ValueError, np.zeros(3), np.ones((2, 3)))
    assert_points_at(error, store_2d_into_1d, "a[:] = B", message="could not broadcast an array of 2 dimensions")


def test_axis_out_of_range_and_duplicate_axes_are_value_errors():
    error = compile_error(axis_out_of_range, ValueError, np.zeros(3))
    assert_points_at(error, axis_out_of_range, "np.sum(", message="axis 2 is out of bounds for an array of dimension 1")
    error = compile_error(duplicate_axis, ValueError, np.zeros((2, 2)))
    assert_points_at(error, duplicate_axis, "A.sum(", message="duplicate value in 'axis'")


def test_too_many_indices_is_a_type_error():
    error = compile_error(too_many_indices, plait.KernelTypeError, np.zeros(3))
    assert_points_at(error, too_many_indices, "1:", message="too many indices")


# ---------------------------------------------------------------- unsupported constructs


def two_index_arrays(A, idx):
    return A[idx, idx]


def boolean_mask_index(a):
    return a[a > 0]


def fancy_index_store(a, idx):
    a[idx] = 0.0


def dynamic_step(a, s):
    return a[::s]


def zero_step(a):
    return a[::0]


def float_bound(a):
    return a[1.5:]


def dynamic_axis(A, k):
    return np.sum(A, axis=k)


def three_d_matmul(T, B):
    return T @ B


def transpose_with_axes(T):
    return np.transpose(T, (1, 0, 2))


def unsupported_method(a):
    return a.std()


def number_updated_with_array(a):
    s = 0.0
    s += a
    return s


UNSUPPORTED = [
    (two_index_arrays, (np.ones((3, 3)), np.array([0, 2])), plait.UnsupportedError, "idx]",
     "more than one array in a subscript"),
    (boolean_mask_index, (np.arange(5.0),), plait.UnsupportedError, "a > 0", "boolean array"),
    (fancy_index_store, (np.arange(5.0), np.array([0, 2])), plait.UnsupportedError, "idx]",
     "assigning through an array index"),
    (dynamic_step, (np.arange(5.0), 2), plait.UnsupportedError, "s]", "slice steps must be integer constants"),
    (zero_step, (np.arange(5.0),), plait.KernelValueError, "0]", "slice step cannot be zero"),
    (float_bound, (np.arange(5.0),), plait.KernelTypeError, "1.5", "slice indices must be integers"),
    (dynamic_axis, (np.ones((2, 2)), 1), plait.UnsupportedError, "np.sum(", "axis must be an integer constant"),
    (three_d_matmul, (np.ones((2, 2, 2)), np.ones((2, 2))), plait.UnsupportedError, "T @ B",
     "matrix products need 1-D or 2-D operands"),
    (transpose_with_axes, (np.ones((2, 2, 2)),), plait.UnsupportedError, "np.transpose(",
     "numpy.transpose() with axes is not supported"),
    (unsupported_method, (np.ones(3),), plait.UnsupportedError, "a.std()", ".std() is not supported"),
    (number_updated_with_array, (np.ones(3),), plait.KernelTypeError, "s += a",
     "cannot update a number in place with an array"),
]


@pytest.mark.parametrize("fn, args, exception, fragment, message", UNSUPPORTED, ids=[u[0].__name__ for u in UNSUPPORTED])
def test_constructs_outside_the_subset_name_the_construct(fn, args, exception, fragment, message):
    error = compile_error(fn, exception, *args)
    assert_points_at(error, fn, fragment, message=message)


def int_array_plus_float(a):
    a += 1.5
    return a


def int_slice_times_float(a):
    a[1:] *= 0.5
    return a


@pytest.mark.parametrize("fn", (int_array_plus_float, int_slice_times_float), ids=lambda f: f.__name__)
def test_in_place_float_update_of_an_int_array_is_a_type_error(fn):
    # NumPy refuses the 'same_kind' cast of the float result into the int array.
    with pytest.raises(TypeError):
        fn(np.arange(4))
    with pytest.raises(TypeError):
        plait.jit(fn)(np.arange(4))


@plait.jit
def row_of(F, j):
    u = F[j]
    return u[0] + F[j].sum() + F[j][1]


@pytest.mark.parametrize("j", [-7, -6, 5, 9])
def test_a_view_at_an_index_out_of_range_raises_index_error(j):
    # An index below -n is out of range: wrapped once it stays negative.
    F = np.arange(10.0).reshape(5, 2)
    with pytest.raises(IndexError):
        row_of.py_func(F, j)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
        row_of(F, j)


@pytest.mark.parametrize("j", [-5, -1, 0, 4])
def test_a_view_at_a_negative_index_reads_its_row(j):
    F = np.arange(10.0).reshape(5, 2)
    assert row_of(F, j) == row_of.py_func(F, j)
