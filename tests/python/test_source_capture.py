"""The kernel's source is read when @plait.jit decorates it: a file edited
later does not change the kernel, notebook cells (source in linecache) work,
and functions without source fail at decoration with a clear error.
Decorators below @plait.jit, whose effect the compiler would drop, are
refused at their line."""

import functools
import importlib
import linecache
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import plait
from plait import UnsupportedError
from plait import jit as aliased_jit


def _position(marker):
    """(file line, 0-based column of '@', line text) of this file's only
    decorator line that contains `marker`."""
    with open(__file__) as f:
        lines = f.read().splitlines()
    hits = [k for k, text in enumerate(lines) if marker in text and text.lstrip().startswith("@")]
    assert len(hits) == 1, marker
    text = lines[hits[0]]
    return hits[0] + 1, text.index("@"), text


def expect_decorator_error(excinfo, marker, message):
    error = excinfo.value
    line, col, text = _position(marker)
    assert isinstance(error, UnsupportedError) and isinstance(error, NotImplementedError)
    assert (error.path, error.line, error.col) == (__file__, line, col), str(error)
    assert message in error.message, error.message
    lines = str(error).splitlines()
    assert lines[0] == f'File "{__file__}", line {line}, col {col + 1}'
    assert lines[1] == text and lines[2].startswith(" " * col + "^~")
    assert lines[-1].startswith("NotImplementedError: ")


def passthrough(fn):
    """A decorator that changes behaviour: the kernel's source alone would not."""

    @functools.wraps(fn)
    def wrapper(*args):
        return 2 * fn(*args)

    return wrapper


def register(fn):
    return fn


def first(x):
    return x[0]


# --- source captured at decoration ---------------------------------------------

MODULE_V1 = textwrap.dedent('''
    import plait

    @plait.jit
    def edited(x):
        return x[0] + 1.0
''')


def test_a_file_edited_after_import_compiles_as_imported(tmp_path, monkeypatch):
    (tmp_path / "edited_kernel.py").write_text(MODULE_V1)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_kernel")
    try:
        (tmp_path / "edited_kernel.py").write_text(MODULE_V1.replace("+ 1.0", "+ 100.0"))
        x = np.array([1.0, 2.0])
        assert module.edited(x) == module.edited.py_func(x) == 2.0
        assert "100" not in module.edited.inspect_ir()
    finally:
        sys.modules.pop("edited_kernel", None)


def test_a_notebook_cell_compiles_from_linecache():
    # IPython compiles each cell under a made-up file name and puts its text
    # in linecache.
    name = "<ipython-input-7-0123456789ab>"
    cell = textwrap.dedent('''
        import numpy as np
        import plait

        @plait.jit
        def cell_kernel(x):
            s = 0.0
            for i in range(x.shape[0]):
                s += x[i] * x[i]
            return s
    ''')
    linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
    try:
        namespace = {}
        exec(compile(cell, name, "exec"), namespace)
        kernel = namespace["cell_kernel"]
        x = np.arange(5.0)
        assert kernel(x) == kernel.py_func(x) == 30.0
    finally:
        linecache.cache.pop(name, None)


def test_a_function_without_source_fails_at_decoration():
    namespace = {}
    exec(compile("def no_source(x):\n    return x\n", "<string>", "exec"), namespace)
    with pytest.raises(OSError, match=r"cannot read the source of no_source \(defined in <string>\).*define the "
                                      r"kernel in a \.py file or a notebook cell"):
        plait.jit(namespace["no_source"])


def test_python_dash_c_fails_clearly_and_runs_with_the_jit_disabled():
    code = "import plait\n@plait.jit\ndef f(x):\n    return x + 1\nprint(f(41))\n"
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_DISABLE_JIT"}
    failed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode != 0
    assert "OSError: plait.jit cannot read the source of f (defined in <string>)" in failed.stderr
    disabled = subprocess.run([sys.executable, "-c", code], env=dict(env, PLAIT_DISABLE_JIT="1"),
                              capture_output=True, text=True, timeout=120)
    assert disabled.returncode == 0 and disabled.stdout.strip() == "42", disabled.stderr


# --- decorators below plait.jit -----------------------------------------------


def test_a_wrapping_decorator_below_jit_is_refused_at_its_line():
    with pytest.raises(UnsupportedError) as excinfo:
        @plait.jit
        @passthrough  # marker: wraps below jit
        def doubled(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: wraps below jit", "the decorator '@passthrough' is below @plait.jit")


def test_below_jit_with_options_and_aliases():
    with pytest.raises(UnsupportedError) as excinfo:
        @plait.jit(boundscheck=True)
        @register  # marker: below jit with options
        def a(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: below jit with options", "'@register' is below @plait.jit")

    with pytest.raises(UnsupportedError) as excinfo:
        @aliased_jit
        @register  # marker: below an imported alias
        def b(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: below an imported alias", "'@register' is below")

    checked = plait.jit(boundscheck=True)
    with pytest.raises(UnsupportedError) as excinfo:
        @checked
        @register  # marker: below a local alias
        def c(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: below a local alias", "'@register' is below")


def test_jit_called_on_a_decorated_function_is_refused():
    @register  # marker: jit called as a function
    def decorated(x):
        return x[0]

    with pytest.raises(UnsupportedError) as excinfo:
        plait.jit(decorated)
    expect_decorator_error(excinfo, "marker: jit called as a function", "'@register' is below @plait.jit")

    with pytest.raises(UnsupportedError, match="got a wrapper of first"):
        plait.jit(passthrough(first))


def test_decorators_above_jit_wrap_the_dispatcher():
    @passthrough
    @plait.jit
    def kernel(x):
        return x[0]

    assert kernel(np.array([3.0])) == 6.0
    assert plait.jit(first)(np.array([4.0])) == 4.0


# --- any decorator expression above plait.jit ----------------------------------

JITS = {"checked": plait.jit(boundscheck=True), "plain": plait.jit}
NAMESPACE = types.SimpleNamespace(inner=types.SimpleNamespace(deco=register, jit=plait.jit))


def make_register(factor):
    def apply(fn):
        fn.factor = factor
        return fn

    return apply


def test_decorator_expressions_above_jit_wrap_the_dispatcher():
    registries = {"k": register}

    @registries["k"]  # a subscript
    @NAMESPACE.inner.deco  # an attribute chain
    @make_register(1)  # a call
    @(lambda fn: fn)  # any expression (PEP 614)
    @register
    @plait.jit
    def kernel(x):
        return x[0] + 1.0

    assert isinstance(kernel, plait.Dispatcher) and kernel.factor == 1
    assert kernel(np.array([2.0])) == kernel.py_func(np.array([2.0])) == 3.0


def test_plait_jit_reached_through_any_expression_is_recognised():
    def jit_factory():
        return plait.jit(boundscheck=True)

    @passthrough  # wraps the dispatcher: doubles its result
    @JITS["checked"]
    def through_a_subscript(x):
        return x[0]

    @NAMESPACE.inner.jit
    def through_an_attribute_chain(x):
        return x[0]

    @jit_factory()
    def through_a_call(x):
        return x[0]

    x = np.array([4.0])
    assert through_a_subscript(x) == 2 * through_a_subscript.__wrapped__.py_func(x) == 8.0
    assert through_an_attribute_chain(x) == through_an_attribute_chain.py_func(x) == 4.0
    assert through_a_call(x) == through_a_call.py_func(x) == 4.0
    with pytest.raises(IndexError):  # the factory's boundscheck=True
        through_a_call(np.array([]))


def test_decorator_expressions_below_jit_are_refused_at_their_line():
    registries = {"k": register}

    with pytest.raises(UnsupportedError) as excinfo:
        @plait.jit
        @registries["k"]  # marker: subscript below jit
        def a(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: subscript below jit", """'@registries["k"]' is below @plait.jit""")

    with pytest.raises(UnsupportedError) as excinfo:
        @JITS["plain"]
        @NAMESPACE.inner.deco  # marker: attribute chain below a subscripted jit
        def b(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: attribute chain below a subscripted jit",
                           "'@NAMESPACE.inner.deco' is below @plait.jit")

    with pytest.raises(UnsupportedError) as excinfo:
        @plait.jit
        @make_register(1)  # marker: call below jit
        def c(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: call below jit", "'@make_register(1)' is below @plait.jit")

    with pytest.raises(UnsupportedError) as excinfo:
        @plait.jit
        @(lambda fn: fn)  # marker: lambda below jit
        def d(x):
            return x[0]
    expect_decorator_error(excinfo, "marker: lambda below jit", "'@lambda fn: fn' is below @plait.jit")
