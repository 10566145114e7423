"""Compile errors: the exception class (a plait.CompileError that is also the
matching builtin exception), the line, the caret column, the formatted text
(`File "<path>", line N, col C`, the source line, a caret line, then
`<Kind>: message`) and a fragment of the message. Also argument errors at
call time (TypeError naming the parameter)."""

import inspect

import numpy as np
import pytest

import plait
from plait import (CompileError, KernelNameError, KernelSyntaxError, KernelTypeError, KernelValueError, PragmaError,
                   RaceError, UnsupportedError)

KIND_NAMES = {
    KernelSyntaxError: "SyntaxError",
    PragmaError: "SyntaxError",
    KernelTypeError: "TypeError",
    KernelNameError: "NameError",
    KernelValueError: "ValueError",
    UnsupportedError: "NotImplementedError",
    RaceError: "RaceError",
}

X = np.arange(6.0)
XI = np.arange(6)


def source_position(kernel, line_fragment, caret_at):
    """(file line, 0-based column, line text) of `caret_at` on the kernel's
    only source line that contains `line_fragment`."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    hits = [k for k, text in enumerate(lines) if line_fragment in text]
    assert len(hits) == 1, f"{line_fragment!r} is on {len(hits)} lines of {kernel.__name__}"
    text = lines[hits[0]].rstrip("\n")
    assert caret_at in text, (caret_at, text)
    return first + hits[0], text.index(caret_at), text


def expect_compile_error(kernel, args, cls, where, message):
    """Calls kernel(*args) and asserts a compile error of class `cls` whose
    caret is at one of `where`: (line fragment, text the caret is under)
    pairs (several when more than one place is a fair answer), and whose
    message contains `message`."""
    with pytest.raises(CompileError) as excinfo:
        kernel(*args)
    error = excinfo.value
    assert isinstance(error, cls), f"{type(error).__name__} is not a {cls.__name__}: {error}"
    text = str(error)
    path = kernel.py_func.__code__.co_filename
    positions = [source_position(kernel, fragment, caret) for fragment, caret in where]
    assert (error.line, error.col) in [(line, col) for line, col, _ in positions], (
        f"error at line {error.line}, col {error.col}; expected one of {[(l, c) for l, c, _ in positions]}:\n{text}")
    line, col, source = next(p for p in positions if (p[0], p[1]) == (error.line, error.col))
    assert error.path == path
    assert message in error.message, f"{message!r} not in {error.message!r}"
    assert f'File "{path}", line {line}, col {col + 1}' in text, text
    lines = text.splitlines()
    assert source in lines, text
    caret_line = lines[lines.index(source) + 1]
    assert caret_line.startswith(" " * col + "^"), f"caret line {caret_line!r} does not point at column {col}"
    kind = KIND_NAMES.get(cls)
    if kind is not None:
        assert f"{kind}: " in lines[-1] or any(l.startswith(f"{kind}: ") for l in lines), text
    return error


# --------------------------------------------------------------- names


@plait.jit
def unknown_name(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * undefined_factor  # noqa: F821
    return s


def test_unknown_name():
    expect_compile_error(unknown_name, (X,), KernelNameError, [("undefined_factor", "undefined_factor")],
                         "undefined_factor")


def test_unknown_name_is_a_name_error():
    with pytest.raises(NameError):
        unknown_name(X)


@plait.jit
def unknown_module_function(x):
    return np.frobnicate(x[0])


def test_unknown_numpy_function():
    expect_compile_error(unknown_module_function, (X,), UnsupportedError, [("np.frobnicate", "np.frobnicate")],
                         "frobnicate")


# ----------------------------------------------------- unsupported syntax


@plait.jit
def uses_with(x):
    with open("f") as handle:
        x[0] = handle
    return x


@plait.jit
def uses_try(x):
    try:
        x[0] = 1.0
    except IndexError:
        pass


@plait.jit
def uses_lambda(x):
    f = lambda v: v + 1  # noqa: E731
    return f(x[0])


@plait.jit
def uses_list_comprehension(n):
    return len([v * 2 for v in range(n)])  # comprehensions are supported as the value of `name = ...` only


@plait.jit
def uses_generator_sum(x):
    return sum(x[i] for i in range(x.shape[0]))


@plait.jit
def uses_print(x):
    for i in range(x.shape[0]):
        print(x[i])


@plait.jit
def uses_string(x):
    s = "abc"
    return s


@plait.jit
def uses_nested_def(x):
    def inner(v):
        return v
    return inner(x[0])


@plait.jit
def iterates_array(x):
    s = 0.0
    for v in x:
        s += v
    return s


@pytest.mark.parametrize("kernel, args, where, message", [
    (uses_with, (X,), [("with open", "with")], "not supported"),
    (uses_try, (X,), [("try:", "try")], "not supported"),
    (uses_lambda, (X,), [("lambda v", "lambda")], "lambda"),
    (uses_list_comprehension, (3,), [("return len([v * 2", "[v * 2")], "not supported"),
    (uses_generator_sum, (X,), [("return sum", "x[i] for"), ("return sum", "(x[i] for"), ("return sum", "sum")],
     "not supported"),
    (uses_print, (X,), [("print(x[i])", "print")], "not supported"),
    (uses_string, (X,), [('s = "abc"', '"abc"'), ('s = "abc"', "s =")], ""),
    (uses_nested_def, (X,), [("def inner", "def")], "not supported"),
    (iterates_array, (X,), [("for v in x", "x:")], "range"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_unsupported_syntax(kernel, args, where, message):
    error = expect_compile_error(kernel, args, CompileError, where, message)
    if kernel is not uses_string:
        assert isinstance(error, UnsupportedError) and isinstance(error, NotImplementedError), type(error)


@plait.jit
def uses_mask_index(x, mask):
    return x[mask]


def test_mask_indexing_not_supported():
    # One integer array may index a subscript (a gather); a mask may not.
    expect_compile_error(uses_mask_index, (X, X > 2), UnsupportedError,
                         [("return x[mask]", "mask]")], "boolean array")


# ---------------------------------------------------------------- pragmas


@plait.jit
def pragma_blank_line(x):
    #pragma parallel for

    for i in range(x.shape[0]):
        x[i] = 0.0


@plait.jit
def pragma_unknown_word(x):
    #pragma paralel for
    for i in range(x.shape[0]):
        x[i] = 0.0


@plait.jit
def pragma_unknown_clause(x):
    #pragma parallel for schedule(dynamic)
    for i in range(x.shape[0]):
        x[i] = 0.0


@plait.jit
def pragma_parallel_above_assignment(x):
    #pragma parallel for
    x[0] = 1.0


@plait.jit
def pragma_simd_above_if(x):
    #pragma simd
    if x[0] > 0:
        x[0] = 0.0


@plait.jit
def pragma_atomic_above_loop(x):
    #pragma atomic
    for i in range(x.shape[0]):
        x[i] += 1.0


@plait.jit
def pragma_atomic_above_plain_assignment(x):
    for i in range(x.shape[0]):
        #pragma atomic
        x[i] = 2.0


@plait.jit
def pragma_parallel_while(x):
    i = 0
    #pragma parallel for
    while i < x.shape[0]:
        x[i] = 0.0
        i += 1


@plait.jit
def pragma_after_code(x):
    for i in range(x.shape[0]):  #pragma parallel for
        x[i] = 0.0


@plait.jit
def pragma_bad_simd_width(x):
    #pragma simd(0)
    for i in range(x.shape[0]):
        x[i] = 0.0


@plait.jit
def pragma_sequential_and_parallel(x):
    #pragma sequential parallel for
    for i in range(x.shape[0]):
        x[i] = 0.0


@plait.jit
def pragma_unknown_reduction_operator(x):
    s = 0.0
    #pragma parallel for reduction(-:s)
    for i in range(x.shape[0]):
        s += x[i]
    return s


def pragma_line(kernel, fragment):
    """The caret positions a pragma error may fairly have: the '#' of the
    pragma, the word 'pragma' after it (the span of the pragma's text) or
    the offending word in it."""
    return [(fragment, "#pragma"), (fragment, "pragma")] + [(fragment, word) for word in fragment.split()[1:]]


@pytest.mark.parametrize("kernel, fragment, message", [
    (pragma_blank_line, "#pragma parallel for", "directly above"),
    (pragma_unknown_word, "#pragma paralel for", "paralel"),
    (pragma_unknown_clause, "#pragma parallel for schedule(dynamic)", "schedule"),
    (pragma_parallel_above_assignment, "#pragma parallel for", "loop"),
    (pragma_simd_above_if, "#pragma simd", "loop"),
    (pragma_atomic_above_loop, "#pragma atomic", "atomic"),
    (pragma_atomic_above_plain_assignment, "#pragma atomic", "atomic"),
    (pragma_parallel_while, "#pragma parallel for", "while"),
    (pragma_bad_simd_width, "#pragma simd(0)", "simd"),
    (pragma_sequential_and_parallel, "#pragma sequential parallel for", "sequential"),
    (pragma_unknown_reduction_operator, "#pragma parallel for reduction(-:s)", "'-'"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_pragma_errors(kernel, fragment, message):
    where = pragma_line(kernel, fragment)
    if kernel is pragma_unknown_reduction_operator:
        where.append((fragment, "reduction"))
    if kernel is pragma_unknown_clause:
        where.append((fragment, "schedule"))
    error = expect_compile_error(kernel, (np.zeros(4),), PragmaError, where, message)
    assert isinstance(error, SyntaxError)


def test_pragma_on_a_code_line():
    expect_compile_error(pragma_after_code, (np.zeros(4),), PragmaError,
                         [("for i in range(x.shape[0]):  #pragma", "#pragma"),
                          ("for i in range(x.shape[0]):  #pragma", "pragma parallel")], "pragma")


# ------------------------------------------------------------------ races


@plait.jit
def race_last_value(x):
    last = 0.0
    #pragma parallel for
    for i in range(x.shape[0]):
        last = x[i]
    return last


@plait.jit
def race_non_reduction_update(x):
    s = 0.0
    #pragma parallel for
    for i in range(x.shape[0]):
        s = s * 0.5 + x[i]
    return s


@plait.jit
def race_in_prange(x):
    carry = 0
    for i in plait.prange(x.shape[0]):
        x[i] += carry
        carry = x[i]


@plait.jit
def race_in_simd(x):
    prev = 0.0
    #pragma simd
    for i in range(x.shape[0]):
        x[i] = prev
        prev = x[i] + 1.0


@pytest.mark.parametrize("kernel, where, message", [
    (race_last_value, [("last = x[i]", "last")], "last"),
    (race_non_reduction_update, [("s = s * 0.5", "s = s")], "'s'"),
    (race_in_prange, [("carry = x[i]", "carry")], "carry"),
    (race_in_simd, [("prev = x[i] + 1.0", "prev")], "prev"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_race_errors(kernel, where, message):
    expect_compile_error(kernel, (np.ones(8),), RaceError, where, message)


@plait.jit
def break_in_parallel(x):
    #pragma parallel for
    for i in range(x.shape[0]):
        if x[i] < 0:
            break
        x[i] = 1.0


@plait.jit
def return_in_parallel(x):
    #pragma parallel for
    for i in range(x.shape[0]):
        if x[i] < 0:
            return i
    return -1


@plait.jit
def break_in_prange(x):
    for i in plait.prange(x.shape[0]):
        if x[i] < 0:
            break


def test_break_inside_parallel_loop():
    expect_compile_error(break_in_parallel, (np.ones(4),), CompileError, [("    break", "break")], "break")
    expect_compile_error(break_in_prange, (np.ones(4),), CompileError, [("    break", "break")], "break")


def test_return_inside_parallel_loop():
    expect_compile_error(return_in_parallel, (np.ones(4),), CompileError, [("return i", "return")], "return")


@plait.jit
def reduction_clause_mismatch(x):
    s = x[0]
    #pragma parallel for reduction(+:s)
    for i in range(x.shape[0]):
        s = max(s, x[i])
    return s


@plait.jit
def reduction_clause_not_updated(x):
    s = 0.0
    t = 0.0
    #pragma parallel for reduction(+:s, t)
    for i in range(x.shape[0]):
        s += x[i]
        t = x[i]
    return s + t


@plait.jit
def reduction_clause_unknown_variable(x):
    s = 0.0
    #pragma parallel for reduction(+:q)
    for i in range(x.shape[0]):
        s += x[i]
    return s


def test_reduction_clause_does_not_match():
    pragma = "#pragma parallel for reduction(+:s)"
    expect_compile_error(reduction_clause_mismatch, (np.ones(4),), CompileError,
                         [(pragma, "#pragma"), (pragma, "pragma"), (pragma, "reduction"),
                          ("s = max(s, x[i])", "s = max")], "max")
    pragma = "#pragma parallel for reduction(+:s, t)"
    expect_compile_error(reduction_clause_not_updated, (np.ones(4),), CompileError,
                         [(pragma, "#pragma"), (pragma, "pragma"), (pragma, "reduction"), ("t = x[i]", "t = x")], "'t'")
    pragma = "#pragma parallel for reduction(+:q)"
    expect_compile_error(reduction_clause_unknown_variable, (np.ones(4),), CompileError,
                         [(pragma, "#pragma"), (pragma, "pragma"), (pragma, "reduction"), (pragma, "q)")], "'q'")


# ------------------------------------------------------------------ types


@plait.jit
def int_then_array(x):
    v = 0
    for i in range(x.shape[0]):
        v += 1
    v = np.zeros(3)
    return v


@plait.jit
def float_index(x):
    return x[1.5]


@plait.jit
def too_many_indices(x):
    return x[0, 1]


@plait.jit
def inconsistent_returns(x, flag):
    if flag:
        return x
    return 1.0


@plait.jit
def array_dtype_changes(x):
    a = np.zeros(3)
    a = np.zeros(3, dtype=np.int32)
    return a


@plait.jit
def float_range(x):
    for i in range(x[0]):
        x[i] = 0.0


def test_local_assigned_int_and_array():
    error = expect_compile_error(int_then_array, (X,), KernelTypeError, [("v = np.zeros(3)", "v")], "'v'")
    assert isinstance(error, TypeError)


@pytest.mark.parametrize("kernel, args, where, message", [
    (float_index, (X,), [("x[1.5]", "1.5")], "integer"),
    (too_many_indices, (X,), [("x[0, 1]", "x[0, 1]"), ("x[0, 1]", "0, 1")], "indices"),
    (inconsistent_returns, (X, True), [("return 1.0", "return"), ("return 1.0", "1.0")], "return"),
    (array_dtype_changes, (X,), [("a = np.zeros(3, dtype", "a =")], "'a'"),
    (float_range, (X,), [("range(x[0])", "x[0]")], "integer"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_type_errors(kernel, args, where, message):
    expect_compile_error(kernel, args, KernelTypeError, where, message)


@plait.jit
def unpack_mismatch(A):
    m, n, k = A.shape
    return m + n + k


@plait.jit
def zero_step(n):
    s = 0
    for i in range(0, n, 0):
        s += i
    return s


def test_value_errors():
    expect_compile_error(unpack_mismatch, (np.zeros((2, 3)),), KernelValueError,
                         [("m, n, k = A.shape", "m, n, k"), ("m, n, k = A.shape", "A.shape")], "unpack")
    expect_compile_error(zero_step, (5,), KernelValueError, [("range(0, n, 0)", "0)")], "zero")


# ------------------------------------------ columns after non-ASCII text


@plait.jit
def error_after_accented_name(x):
    é = 2.0
    return x[0] * é + nowhere_after_accent  # noqa: F821


@plait.jit
def error_after_non_ascii_string(x):
    "€😀 ünïcode"; return x[0] + nowhere_after_string  # noqa: E702, F821


@plait.jit
def error_at_non_ascii_name(x):
    ß = 1.0
    return ß + x[0] + ñame_undefined  # noqa: F821


@pytest.mark.parametrize("kernel, where", [
    (error_after_accented_name, ("nowhere_after_accent", "nowhere_after_accent")),
    (error_after_non_ascii_string, ("nowhere_after_string", "nowhere_after_string")),
    (error_at_non_ascii_name, ("ñame_undefined", "ñame_undefined")),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_caret_counts_characters(kernel, where):
    # Columns count characters, as Python's SyntaxError offsets do: the caret
    # stands under the name, not as many bytes further right.
    error = expect_compile_error(kernel, (X,), KernelNameError, [where], "is not defined")
    lines = str(error).splitlines()
    source = next(line for line in lines if where[0] in line)
    assert lines[lines.index(source) + 1] == " " * error.col + "^" + "~" * (len(where[1]) - 1)


# ------------------------------------------------ conditional expressions


@plait.jit
def chooses_between_arrays(x, y, flag):
    z = x if flag else y
    return z[0]


@plait.jit
def chooses_array_with_if(x, y, flag):
    if flag:
        z = x
    else:
        z = y
    return z[0] + z[-1]


def test_conditional_expression_of_arrays_suggests_an_if_statement():
    expect_compile_error(chooses_between_arrays, (X, X + 1, True), UnsupportedError,
                         [("z = x if flag", "x if flag")], "use an if statement")


@pytest.mark.parametrize("flag", [True, False])
def test_if_statement_choosing_an_array(flag):
    y = np.arange(4.0) + 10
    assert chooses_array_with_if(X, y, flag) == chooses_array_with_if.py_func(X, y, flag)


# ------------------------------------------------ the formatted message


def test_error_text_layout():
    with pytest.raises(CompileError) as excinfo:
        unknown_name(X)
    error = excinfo.value
    lines = str(error).splitlines()
    path = unknown_name.py_func.__code__.co_filename
    assert lines[0] == f'File "{path}", line {error.line}, col {error.col + 1}'
    assert lines[1] == "        s += x[i] * undefined_factor  # noqa: F821"
    assert lines[2].startswith(" " * lines[1].index("undefined_factor") + "^")
    assert lines[3].startswith("NameError: ") and "undefined_factor" in lines[3]
    assert error.message in lines[3]


def test_compile_error_is_raised_again_on_each_call():
    for _ in range(2):
        with pytest.raises(KernelNameError):
            unknown_name(X)


def test_error_is_raised_at_call_not_at_decoration():
    @plait.jit
    def broken(x):
        return x[0] + nowhere  # noqa: F821

    with pytest.raises(KernelNameError):
        broken(X)


# ------------------------------------------------------- call-time errors


@plait.jit
def takes_array_and_scalar(values, factor):
    for i in range(values.shape[0]):
        values[i] *= factor


def test_wrong_argument_count():
    with pytest.raises(TypeError):
        takes_array_and_scalar(np.ones(3))
    with pytest.raises(TypeError):
        takes_array_and_scalar(np.ones(3), 2.0, 3.0)


@pytest.mark.parametrize("args, name", [
    (("abc", 2.0), "values"),
    (([1.0, 2.0], 2.0), "values"),
    ((np.ones(3, dtype=np.complex128), 2.0), "values"),
    ((np.ones(3, dtype=np.uint8).view("S1"), 2.0), "values"),
    ((np.ones(3, dtype=np.float16), 2.0), "values"),
    ((np.ones((1, 1, 1, 1, 1)), 2.0), "values"),
    ((np.ones(3), "2"), "factor"),
    ((np.ones(3), None), "factor"),
    ((np.ones(3), 1 + 2j), "factor"),
], ids=["str", "list", "complex", "bytes", "float16", "5d", "str-scalar", "None", "complex-scalar"])
def test_wrong_argument_type_names_the_parameter(args, name):
    with pytest.raises(TypeError) as excinfo:
        takes_array_and_scalar(*args)
    assert name in str(excinfo.value), str(excinfo.value)
