"""The Python API of plait: the decorator, its options and environment
variables, argument checking, dispatch on argument types, results and errors."""

import gc
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import plait
from plait import prange

SCALE = 3
OFFSET = 0.5
PLAIT_ENTRY_SYMBOL = "plait_kernel_entry"


def saxpy(a, x, y):
    """y <- a * x + y"""
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def scaled_copy(x):
    out = np.empty(x.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        out[i] = x[i] * SCALE
    return out


def double_in_place(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2
    return x


def sum_and_count(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total, x.shape[0]


def matrix_sum(m):
    total = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            total += m[i, j]
    return total


def transpose_copy(m):
    out = np.empty((m.shape[1], m.shape[0]), dtype=m.dtype)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[j, i] = m[i, j]
    return out


def sum_4d(a):
    total = 0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                for l in range(a.shape[3]):
                    total += a[i, j, k, l]
    return total


def add_one(v):
    return v + 1


def get_item(x, i):
    return x[i]


def with_default(x, scale=2.0):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * scale + OFFSET
    return out


def parallel_square(x, out):
    for i in prange(x.shape[0]):
        out[i] = math.sqrt(x[i] * x[i])


def same_array_twice(n):
    out = np.zeros(n)
    return out, out


def floor_divide(a, b):
    return a // b


def unknown_name(x):
    return x[0] + no_such_global  # noqa: F821


def bad_pragma(x):
    #pragma frobnicate
    x[0] = 1.0


def unsupported_construct(x):
    return [v for v in x]


def fresh(fn, **options):
    """A new dispatcher (with its own table of compiled signatures)."""
    return plait.jit(**options)(fn)


# --- the decorator ------------------------------------------------------------


def test_decorator_forms_give_dispatchers_that_compute_like_python(rng):
    @plait.jit
    def bare(x, y):
        for i in range(x.shape[0]):
            y[i] = x[i] + 1.0

    @plait.jit()
    def empty_call(x, y):
        for i in range(x.shape[0]):
            y[i] = x[i] + 1.0

    with_options = plait.jit(cache=False, boundscheck=True, fastmath=False, num_threads=1)(saxpy)
    x = rng.random(11)
    for kernel in (bare, empty_call):
        y = np.zeros(11)
        assert isinstance(kernel, plait.Dispatcher)
        assert kernel(x, y) is None
        np.testing.assert_array_equal(y, x + 1.0)
    y = rng.random(11)
    expected = y.copy()
    saxpy(2.5, x, expected)
    with_options(2.5, x, y)
    np.testing.assert_array_equal(y, expected)


def test_dispatcher_keeps_the_function_metadata():
    kernel = fresh(saxpy)
    assert kernel.py_func is saxpy
    assert kernel.__name__ == "saxpy"
    assert kernel.__qualname__ == "saxpy"
    assert kernel.__doc__ == "y <- a * x + y"
    assert kernel.__module__ == __name__
    assert kernel.__wrapped__ is saxpy
    assert kernel.signatures == []


def test_unsupported_target_is_a_value_error():
    with pytest.raises(ValueError, match=r"^target 'tpu' is not supported; available: cpu, cuda$"):
        plait.jit(target="tpu")
    with pytest.raises(ValueError, match="target 'tpu'"):
        plait.jit(saxpy, target="tpu")


@pytest.mark.parametrize("threads", [0, -2, 1.5, True, "4"])
def test_bad_num_threads_is_a_value_error(threads):
    with pytest.raises(ValueError, match="num_threads"):
        plait.jit(num_threads=threads)


def test_jit_rejects_what_is_not_a_python_function():
    with pytest.raises(TypeError, match="Python functions"):
        plait.jit(len)
    with pytest.raises(TypeError, match="Python functions"):
        plait.jit(42)


def test_star_args_are_rejected_at_decoration():
    def varargs(*xs):
        return xs[0]

    with pytest.raises(NotImplementedError, match=r"\*xs"):
        plait.jit(varargs)


def test_disable_jit_calls_the_python_function(monkeypatch):
    monkeypatch.setenv("PLAIT_DISABLE_JIT", "1")
    kernel = plait.jit(boundscheck=True)(scaled_copy)
    assert isinstance(kernel, plait.PythonDispatcher)
    assert kernel.py_func is scaled_copy and kernel.__name__ == "scaled_copy"
    x = np.arange(4.0)
    np.testing.assert_array_equal(kernel(x), x * SCALE)
    # Anything Python takes works: nothing is compiled.
    assert plait.jit(get_item)([10, 20], 1) == 20
    assert kernel.signatures == []
    with pytest.raises(RuntimeError, match="PLAIT_DISABLE_JIT"):
        kernel.inspect_ir()


def test_num_threads_defaults_from_the_environment(monkeypatch):
    monkeypatch.setenv("PLAIT_NUM_THREADS", "3")
    assert fresh(saxpy).num_threads == 3
    assert fresh(saxpy, num_threads=2).num_threads == 2
    monkeypatch.delenv("PLAIT_NUM_THREADS")
    assert fresh(saxpy).num_threads == len(os.sched_getaffinity(0))
    kernel = fresh(saxpy)
    kernel.num_threads = 5
    assert kernel.num_threads == 5
    with pytest.raises(ValueError):
        kernel.num_threads = 0


# --- signatures and inspection ------------------------------------------------


def test_signatures_follow_argument_types():
    kernel = fresh(saxpy)
    x64, y64 = np.ones(5), np.zeros(5)
    kernel(2.0, x64, y64)
    kernel(2.0, x64, y64)
    assert kernel.signatures == ["float, f64[::1], f64[::1]"]
    kernel(2, np.ones(5, np.float32), np.zeros(5, np.float32))
    kernel(np.float32(2), np.ones(10)[::2], np.zeros(5))
    assert kernel.signatures == [
        "float, f64[::1], f64[::1]",
        "int, f32[::1], f32[::1]",
        "f32, f64[:], f64[::1]",
    ]


def test_array_layouts_are_part_of_the_signature():
    kernel = fresh(matrix_sum)
    m = np.arange(12.0).reshape(3, 4)
    for view in (m, np.asfortranarray(m), m[:, ::2], m.T):
        assert kernel(view) == matrix_sum(view)
    assert kernel.signatures == ["f64[:, ::1]", "f64[::1, :]", "f64[:, :]"]
    # m.T of a C array is F-contiguous: it reuses the F specialisation.


def test_signature_of_classifies_without_compiling():
    kernel = fresh(saxpy)
    assert kernel._signature_of(True, np.int32(1), np.zeros((2, 2, 2, 2)), np.array(1.5)) == "bool, i32, f64[:, :, :, ::1], f64"
    assert kernel.signatures == []


def test_inspection_of_compiled_signatures():
    kernel = fresh(scaled_copy)
    with pytest.raises(ValueError, match="not been compiled"):
        kernel.inspect_ir()
    kernel(np.arange(3.0))
    kernel(np.arange(3, dtype=np.int32))
    ir_f64 = kernel.inspect_ir("f64[::1]")
    ir_i32 = kernel.inspect_ir("i32[::1]")
    assert ir_f64 and ir_i32 and ir_f64 != ir_i32
    assert kernel.inspect_ir() == ir_i32  # the last compiled
    assert kernel.inspect_ir("f64[ ::1 ]") == ir_f64  # spaces do not matter
    source = kernel.inspect_source("f64[::1]")
    assert PLAIT_ENTRY_SYMBOL in source
    assert isinstance(kernel.explain(), str) and kernel.explain()
    assert os.path.isfile(kernel.library_path())
    with pytest.raises(KeyError, match="f32"):
        kernel.inspect_ir("f32[::1]")


def test_explain_is_printed_at_compile_time_with_plait_explain(monkeypatch, capsys):
    monkeypatch.setenv("PLAIT_EXPLAIN", "1")
    kernel = fresh(scaled_copy)
    kernel(np.arange(3.0))
    assert kernel.explain() in capsys.readouterr().err


def test_dump_dir_receives_the_generated_source(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAIT_DUMP_DIR", str(tmp_path))
    fresh(scaled_copy, cache=False)(np.arange(3.0))
    assert any(tmp_path.rglob("*")), "PLAIT_DUMP_DIR stayed empty"


def test_compile_ahead_of_the_first_call():
    kernel = fresh(saxpy)
    assert kernel.compile("float, f64[::1], f64[::1]") == "float, f64[::1], f64[::1]"
    assert kernel.signatures == ["float, f64[::1], f64[::1]"]
    y = np.zeros(3)
    kernel(1.0, np.ones(3), y)
    assert kernel.signatures == ["float, f64[::1], f64[::1]"]
    np.testing.assert_array_equal(y, np.ones(3))


# --- arguments ------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, what",
    [
        ([1.0, 2.0], "list"),
        (None, "NoneType"),
        ("abc", "str"),
        (np.zeros(3, np.complex128), "complex128"),
        (np.zeros(3, np.float16), "float16"),
        (np.zeros(3, ">f8"), ">f8"),
        (np.zeros((1, 1, 1, 1, 1)), "5-D"),
        (1 + 2j, "complex"),
        (2**70, "int64"),
    ],
)
def test_wrong_argument_types_raise_type_error_naming_the_parameter(bad, what):
    kernel = fresh(saxpy)
    with pytest.raises((TypeError, OverflowError)) as info:
        kernel(2.0, bad, np.zeros(3))
    assert "saxpy() argument 'x'" in str(info.value)
    assert what in str(info.value)
    assert kernel.signatures == []


def test_byte_strides_that_are_not_multiples_of_the_item_size_are_rejected():
    record = np.zeros(4, dtype=[("a", np.int8), ("b", np.float64)])
    unaligned = np.frombuffer(np.zeros(41, np.uint8).data, dtype=np.uint8)[1:].view(np.float64)
    kernel = fresh(scaled_copy)
    with pytest.raises(TypeError, match="argument 'x'"):
        kernel(record["b"])
    with pytest.raises(TypeError, match="argument 'x'"):
        kernel(unaligned)


def test_missing_and_extra_arguments_are_type_errors():
    kernel = fresh(saxpy)
    with pytest.raises(TypeError):
        kernel(1.0, np.zeros(2))
    with pytest.raises(TypeError):
        kernel(1.0, np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(TypeError):
        kernel(1.0, np.zeros(2), np.zeros(2), z=1)


def test_defaults_and_keywords_are_bound_like_python(rng):
    kernel = fresh(with_default)
    x = rng.random(9)
    np.testing.assert_array_equal(kernel(x), with_default(x))
    np.testing.assert_array_equal(kernel(x, 3.0), with_default(x, 3.0))
    np.testing.assert_array_equal(kernel(x, scale=4), with_default(x, scale=4))
    np.testing.assert_array_equal(kernel(scale=1.5, x=x), with_default(x, 1.5))
    assert kernel.signatures == ["f64[::1], float", "f64[::1], int"]


@pytest.mark.parametrize(
    "value",
    [2, 2.5, True, np.int32(7), np.int64(-3), np.float32(1.25), np.float64(0.5), np.bool_(True),
     np.array(2.0), np.array(5, np.int32)],
    ids=repr,
)
def test_scalars_keep_python_and_numpy_result_types(value, assert_same):
    kernel = fresh(add_one)
    assert_same(kernel(value), add_one(value))


def test_arrays_of_every_dtype_size_and_layout(dtype, size, layout_1d, make_array, assert_same):
    kernel = fresh(double_in_place)
    x = make_array(dtype, size, layout_1d)
    expected = double_in_place(x.copy())
    got = kernel(x)
    assert got is x
    assert_same(got, expected)


def test_two_dimensional_layouts(numeric_dtype, layout_2d, make_array, assert_same):
    kernel = fresh(matrix_sum)
    m = make_array(numeric_dtype, (5, 3), layout_2d)
    assert_same(kernel(m), matrix_sum(m), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 4), (4, 1), (0, 3), (3, 0), (1, 1), (6, 5)])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "transposed"])
def test_degenerate_matrix_shapes(shape, layout, make_array, assert_same):
    m = make_array(np.float64, shape, layout)
    assert_same(fresh(transpose_copy)(m), transpose_copy(m))
    if m.size:
        assert_same(fresh(matrix_sum)(m), matrix_sum(m), rtol=1e-12)
    else:
        # Python's `total` stays the float 0.0 when no loop iteration runs;
        # the kernel's has its static type, float64, either way.
        assert fresh(matrix_sum)(m) == 0.0


@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed", "transposed"])
def test_four_dimensional_arrays(layout, make_array, assert_same):
    a = make_array(np.int64, (2, 3, 1, 4), layout)
    assert_same(fresh(sum_4d)(a), sum_4d(a))


def test_parallel_loop_over_module_functions(rng):
    kernel = fresh(parallel_square, num_threads=2)
    x = rng.random(1001) - 0.5
    out = np.zeros_like(x)
    kernel(x, out)
    np.testing.assert_allclose(out, np.abs(x))


# --- results -------------------------------------------------------------------


def test_a_returned_argument_is_the_same_object():
    kernel = fresh(double_in_place)
    x = np.arange(5.0)
    assert kernel(x) is x
    np.testing.assert_array_equal(x, np.arange(5.0) * 2)
    strided = np.arange(10.0)[::3]
    assert kernel(strided) is strided


def test_returned_arrays_own_their_memory(rng):
    kernel = fresh(scaled_copy)
    x = rng.random(1000)
    results = [kernel(x) for _ in range(3)]
    del kernel
    gc.collect()
    for result in results:
        assert result is not x
        assert result.flags.writeable and result.flags.c_contiguous
        assert not np.shares_memory(result, x)
        np.testing.assert_array_equal(result, x * SCALE)
        result[:] = 1.0  # the memory is the caller's to write
    assert not np.shares_memory(results[0], results[1])


def test_returned_array_outlives_every_other_reference():
    def make():
        return fresh(scaled_copy)(np.arange(100_000, dtype=np.int64))

    result = make()
    gc.collect()
    np.testing.assert_array_equal(result, np.arange(100_000) * SCALE)


def test_tuples_are_python_tuples_with_python_result_types(rng, assert_same):
    kernel = fresh(sum_and_count)
    for x in (rng.random(17), rng.random(17).astype(np.float32), np.arange(5, dtype=np.int32)):
        got = kernel(x)
        assert isinstance(got, tuple)
        assert_same(got, sum_and_count(x), rtol=1e-5)


def sum_and_scaled_list(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return [total, x * 2.0, x.shape[0]]


def one_element_list(x):
    return [x + 1]


def empty_list(x):
    return []


def list_or_tuple(x):
    if x.shape[0] > 1:
        return [x, x]
    return (x, x)


def test_returned_lists_are_python_lists(rng, assert_same):
    kernel = fresh(sum_and_scaled_list)
    for x in (rng.random(9), np.arange(4, dtype=np.int32)):
        got = kernel(x)
        assert isinstance(got, list) and len(got) == 3
        assert_same(got, sum_and_scaled_list(x), rtol=1e-12)
    x = rng.random(3)
    got = fresh(one_element_list)(x)
    assert isinstance(got, list) and len(got) == 1
    assert_same(got, one_element_list(x))
    kernel = fresh(one_element_list)
    kernel(x)
    assert "-> [f64[::1]]" in kernel.inspect_ir()
    got = fresh(empty_list)(x)
    assert got == [] and isinstance(got, list)


def test_a_list_and_a_tuple_returned_by_one_kernel_is_a_type_error():
    with pytest.raises(plait.KernelTypeError, match="this return gives a tuple where the return at line"):
        fresh(list_or_tuple)(np.zeros(2))


def test_one_array_returned_twice_is_one_object():
    first, second = fresh(same_array_twice)(4)
    assert first is second
    np.testing.assert_array_equal(first, np.zeros(4))


def test_module_constants_are_seen_by_kernels():
    kernel = fresh(scaled_copy)
    np.testing.assert_array_equal(kernel(np.ones(2)), [3.0, 3.0])


# --- errors ----------------------------------------------------------------------


def test_error_classes_derive_from_the_matching_builtins():
    assert issubclass(plait.KernelSyntaxError, plait.CompileError)
    assert issubclass(plait.KernelSyntaxError, SyntaxError)
    assert issubclass(plait.KernelTypeError, TypeError)
    assert issubclass(plait.KernelNameError, NameError)
    assert issubclass(plait.KernelValueError, ValueError)
    assert issubclass(plait.UnsupportedError, NotImplementedError)
    assert issubclass(plait.PragmaError, SyntaxError) and issubclass(plait.PragmaError, plait.CompileError)
    assert issubclass(plait.RaceError, plait.CompileError) and issubclass(plait.RaceError, Exception)
    assert not issubclass(plait.RaceError, (SyntaxError, TypeError, NameError, ValueError))
    assert issubclass(plait.InternalCompilerError, RuntimeError)
    error = plait.KernelSyntaxError("File \"k.py\", line 3\nbad", message="bad", path="k.py", line=3, col=4)
    assert str(error) == "File \"k.py\", line 3\nbad" and error.line == 3 and error.message == "bad"


def test_unknown_name_is_a_name_error_pointing_at_the_line():
    kernel = fresh(unknown_name)
    with pytest.raises(plait.KernelNameError) as info:
        kernel(np.zeros(2))
    error = info.value
    assert isinstance(error, NameError) and isinstance(error, plait.CompileError)
    assert "no_such_global" in str(error)
    assert error.path == unknown_name.__code__.co_filename
    assert error.line == unknown_name.__code__.co_firstlineno + 1
    assert "test_api.py" in str(error)
    assert kernel.signatures == []


def test_unknown_pragma_is_a_pragma_error():
    with pytest.raises(plait.PragmaError, match="frobnicate") as info:
        fresh(bad_pragma)(np.zeros(2))
    assert isinstance(info.value, SyntaxError)
    assert info.value.line == bad_pragma.__code__.co_firstlineno + 1


def test_constructs_outside_the_subset_are_not_implemented_errors():
    with pytest.raises(NotImplementedError) as info:
        fresh(unsupported_construct)(np.zeros(2))
    assert isinstance(info.value, plait.CompileError)


def test_out_of_bounds_index_with_boundscheck_is_an_index_error():
    kernel = fresh(get_item, boundscheck=True)
    x = np.arange(4.0)
    assert kernel(x, 3) == 3.0
    with pytest.raises(IndexError) as info:
        kernel(x, 4)
    line = get_item.__code__.co_firstlineno + 1
    assert f'(File "{get_item.__code__.co_filename}", line {line}, col 12)' in str(info.value)
    # The dispatcher keeps working after a runtime error.
    assert kernel(x, 0) == 0.0


@pytest.mark.parametrize("a, b", [(7, 0), (7.0, 0.0)])
def test_division_by_zero_is_a_zero_division_error_with_the_python_message(a, b):
    with pytest.raises(ZeroDivisionError) as expected:
        floor_divide(a, b)
    with pytest.raises(ZeroDivisionError) as got:
        fresh(floor_divide)(a, b)
    line = floor_divide.__code__.co_firstlineno + 1
    assert str(got.value) == (f'{expected.value} (File "{floor_divide.__code__.co_filename}", line {line}, col 12)\n'
                              '    return a // b\n'
                              '           ^')


def test_plait_boundscheck_environment_variable_turns_checks_on(monkeypatch):
    monkeypatch.setenv("PLAIT_BOUNDSCHECK", "1")
    kernel = fresh(get_item, boundscheck=False)
    with pytest.raises(IndexError):
        kernel(np.arange(4.0), 10)


def test_import_keeps_the_gomp_settings_the_user_made():
    code = "import os; os.environ['GOMP_SPINCOUNT'] = '7'; import plait; print(os.environ['GOMP_SPINCOUNT'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "7"


def test_import_makes_idle_openmp_threads_sleep_unless_told_otherwise():
    code = ("import os; os.environ.pop('OMP_WAIT_POLICY', None); os.environ.pop('GOMP_SPINCOUNT', None); "
            "import plait; print(os.environ.get('OMP_WAIT_POLICY'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "PASSIVE"
    code = "import os; os.environ['OMP_WAIT_POLICY'] = 'active'; import plait; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "active"


def _scaled_rows(A, B):
    M, N = A.shape
    #pragma :M=>parallel
    B[:M, :N] = 2.0 * A[:M, :N]


def test_auto_simd_vectorises_the_innermost_dimension_of_annotated_statements():
    A = np.random.default_rng(3).random((5, 7))
    plain = plait.jit(_scaled_rows)
    auto = plait.jit(_scaled_rows, auto_simd=True)
    B1, B2 = np.zeros_like(A), np.zeros_like(A)
    plain(A, B1)
    auto(A, B2)
    np.testing.assert_array_equal(B1, 2.0 * A)
    np.testing.assert_array_equal(B2, 2.0 * A)
    assert "simd for" not in plain.inspect_ir()
    assert "simd for" in auto.inspect_ir()


def _row_dots(A, x):
    M, N = A.shape
    y = np.empty(M)
    #pragma :M=>parallel :N=>reduce(sum)
    y[:M] = np.sum(A[:M, :N] * x[None, :N], axis=1)
    return y


def test_auto_simd_vectorises_an_innermost_reduction():
    rng = np.random.default_rng(4)
    plain = plait.jit(_row_dots)
    auto = plait.jit(_row_dots, auto_simd=True)
    for m, n in ((0, 3), (1, 1), (5, 7), (33, 1001)):
        A, x = rng.random((m, n)), rng.random(n)
        np.testing.assert_allclose(plain(A, x), A @ x, rtol=1e-12)
        np.testing.assert_allclose(auto(A, x), A @ x, rtol=1e-12)
    assert "simd for _r" not in plain.inspect_ir()
    assert "simd for _r" in auto.inspect_ir()
