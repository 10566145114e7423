"""Deeply nested kernels: expressions deeper than the compiler's limit
(support/compiler_stack.h: 200 levels) raise a KernelSyntaxError at the
construct that crosses it, never a crash, and compiles do not depend on the
stack of the calling thread (the compiler runs on a thread of its own).

The kernels are written to a module file, since plait reads a kernel's source
from its file; Python itself refuses more than 200 nested parentheses, so
the deepest cases with parentheses are in tests/cli (plaitc reads any text)."""

import importlib.util
import threading

import numpy as np
import pytest

import plait
from plait import KernelSyntaxError

LIMIT = 200  # kMaxExpressionDepth
X = np.arange(1.0, 7.0)


def load_kernel(tmp_path, body, name="deep"):
    """The kernel `def deep(x): return <body>` (line 4 of its module),
    decorated with plait.jit."""
    path = tmp_path / f"{name}_module.py"
    path.write_text(f"import numpy as np\n\n\ndef {name}(x):\n    return {body}\n")
    spec = importlib.util.spec_from_file_location(f"{name}_module_{id(path)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return plait.jit(getattr(module, name))


def expect_too_deep(kernel, col):
    with pytest.raises(KernelSyntaxError) as excinfo:
        kernel(X)
    error = excinfo.value
    assert isinstance(error, SyntaxError)
    assert "nested too deeply" in error.message, error.message
    assert (error.line, error.col) == (5, col), str(error)
    return error


PREFIX = len("    return ")


def chain(n):
    return " + ".join(["x[0]"] * n)


def test_long_chain_is_refused_at_the_operator_that_crosses_the_limit(tmp_path):
    # The left-deep sum of n terms is n - 1 levels of '+' above x[0], itself
    # two levels: the 199th '+' crosses the limit.
    kernel = load_kernel(tmp_path, chain(2000))
    expect_too_deep(kernel, PREFIX + len(chain(199)) + 1)


def test_chain_within_the_limit_compiles(tmp_path):
    kernel = load_kernel(tmp_path, chain(150))
    assert kernel(X) == kernel.py_func(X)


@pytest.mark.parametrize("kind, body, crossing", [
    # The 200th subscript makes the tree 201 levels high.
    ("subscripts", "x" + "[0]" * 300, PREFIX + 1 + 3 * 199),
    # Each unary minus is one level of the parser and of the tree: the
    # operand after the 200th is the 201st level.
    ("unary operators", "-" * 300 + "x[0]", PREFIX + 200),
    # 150 parentheses, then 50 unary minus signs inside them: the parser's
    # 201st level is the 51st minus sign.
    ("parentheses", "(" * 150 + "-" * 60 + "x[0]" + ")" * 150, PREFIX + 150 + 50),
    # 100 nested calls of abs, then 150 unary minus signs as the innermost
    # argument: the 101st minus sign is the 201st level.
    ("calls", "abs(" * 100 + "-" * 150 + "x[0]" + ")" * 100, PREFIX + 4 * 100 + 100),
])
def test_deep_nesting_is_refused_where_it_crosses_the_limit(tmp_path, kind, body, crossing):
    expect_too_deep(load_kernel(tmp_path, body), crossing)


def test_nested_calls_within_the_limit_compile(tmp_path):
    kernel = load_kernel(tmp_path, "abs(" * 150 + "-x[1]" + ")" * 150)
    assert kernel(X) == kernel.py_func(X)


def run_in_small_thread(function):
    """function() on a thread with a 256 KiB stack; its result or exception."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    previous = threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=target)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_compile_from_a_thread_with_a_small_stack(tmp_path):
    # A chain at the limit needs more stack than the calling thread has; the
    # compiler's own thread has enough.
    kernel = load_kernel(tmp_path, chain(LIMIT - 2))
    assert run_in_small_thread(lambda: kernel(X)) == kernel.py_func(X)


def test_too_deep_from_a_thread_with_a_small_stack(tmp_path):
    kernel = load_kernel(tmp_path, chain(2000))
    with pytest.raises(KernelSyntaxError, match="nested too deeply"):
        run_in_small_thread(lambda: kernel(X))


def nested_index(n):
    return "x[" * n + "0" + "]" * n


def test_indices_nested_in_indices_are_limited(tmp_path):
    # A subscript with eight levels of subscripts inside its index compiles
    # (quickly: each level triples the compiler's work); the ninth level is
    # refused at its bracket.
    ints = np.arange(6)
    kernel = load_kernel(tmp_path, nested_index(8))
    assert kernel(ints) == kernel.py_func(ints)
    kernel = load_kernel(tmp_path, nested_index(9), name="deeper")
    with pytest.raises(plait.UnsupportedError) as excinfo:
        kernel(ints)
    assert "subscripts nested more than 8 deep inside indices" in excinfo.value.message
    assert (excinfo.value.line, excinfo.value.col) == (5, PREFIX + len("x[" * 8) + 1)
