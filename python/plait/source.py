"""The source text of a kernel, read when @plait.jit decorates it.

Python runs the function as it was when the module was imported, so the
compiler must see that text too: reading it at the first call would compile
a file edited since then. The text comes through `inspect`, which reads
`linecache`, where IPython and Jupyter keep the text of their cells.

Decorators below @plait.jit are refused here: the compiler compiles the
function's own source, so their effect would be silently lost.
"""

import ast
import functools
import inspect
import itertools
import textwrap
from dataclasses import dataclass

from . import _core


@dataclass(frozen=True)
class KernelSource:
    path: str  # the file name Python compiled the function from
    text: str  # the function's source, decorators included
    first_line: int  # the file line of the first line of `text`


def capture_source(fn, scope=None):
    """The KernelSource of `fn`. Raises OSError when Python kept no source
    for it, and UnsupportedError (at the decorator's line) when decorators
    below @plait.jit would be dropped. `scope`: (locals, globals, position)
    where plait.jit was applied: the names the decorator expressions saw, to
    recognise plait.jit under other names, and the call_position of the
    frame that applied it; default: fn's globals."""
    path = fn.__code__.co_filename
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise OSError(
            f"plait.jit cannot read the source of {fn.__qualname__} (defined in {path}): {e}. plait compiles a "
            "kernel from its source text, which Python keeps for functions defined in a file or in an IPython or "
            "Jupyter cell, not for those from `python -c`, the plain interactive interpreter or exec() of a "
            "string: define the kernel in a .py file or a notebook cell (PLAIT_DISABLE_JIT=1 runs it as plain "
            "Python without its source)") from None
    source = KernelSource(path, "".join(lines), max(first_line, 1))
    _refuse_decorators_below_jit(fn, source, scope or ({}, fn.__globals__, None))
    return source


def call_position(frame):
    """(file line, byte column) of the expression `frame` is calling now:
    for the frame applying a decorator, where that decorator's expression
    starts. None where Python keeps no columns (3.10)."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:
        return None
    position = next(itertools.islice(positions(), frame.f_lasti // 2, None), None)
    if position is None or position[0] is None or position[2] is None:
        return None
    return position[0], position[2]


def _refuse_decorators_below_jit(fn, source, scope):
    definition, indent = _parse_definition(fn, source.text)
    wrapped = getattr(fn, "__wrapped__", None) is not None
    below = []
    if definition is not None:
        decorators = definition.decorator_list
        # The decorator that applied plait.jit is the one Python was calling,
        # whatever expression reaches plait.jit (`@jits["j"]`, `@make()`);
        # without that position, the decorators that name plait.jit.
        position = scope[2]
        jit_at = [i for i, node in enumerate(decorators)
                  if position == (source.first_line + node.lineno - 1, node.col_offset + indent)]
        if not jit_at:
            jit_at = [i for i, node in enumerate(decorators) if _is_plait_jit(node, scope)]
        # Decorators apply bottom-up: those below the lowest @plait.jit ran
        # first. Without one (plait.jit(fn) called, or an alias it cannot
        # resolve), every decorator ran before plait.jit saw the function;
        # the one next to the def is named.
        below = decorators[jit_at[-1] + 1:] if jit_at else decorators[-1:]
    if not below and not wrapped:
        return
    if below:
        node = below[0]
        line = source.first_line + node.lineno - 1
        # The '@' before the expression, which may be parenthesised (columns
        # count bytes, as the compiler's).
        text_line = source.text.splitlines()[node.lineno - 1].encode()
        col = text_line.rfind(b"@", 0, node.col_offset + indent)
        end_col = node.end_col_offset + indent if node.end_lineno == node.lineno else col + 1
        text = ast.get_source_segment(textwrap.dedent(source.text), node) or "..."
        message = (f"the decorator '@{text}' is below @plait.jit: plait compiles {fn.__qualname__}'s own source, "
                   "so what the decorator does would be lost; put it above @plait.jit (it then wraps the compiled "
                   "kernel) or remove it")
    else:
        line = source.first_line + (definition.lineno - 1 if definition is not None else 0)
        col = indent if definition is not None else 0
        end_col = col + 3  # 'def'
        message = (f"plait.jit got a wrapper of {fn.__qualname__} (it has __wrapped__, e.g. from functools.wraps), "
                   "whose own code plait would not compile: apply plait.jit to the undecorated function and put "
                   "other decorators above it")
    _core._raise_compile_error("Unsupported", message, source.path, source.text, source.first_line, line,
                               max(col, 0), end_col)


def _parse_definition(fn, text):
    """(the FunctionDef of `fn` in `text`, the columns its dedent removed),
    or (None, 0) when the text does not parse on its own."""
    dedented = textwrap.dedent(text)
    first = text.splitlines()[0] if text else ""
    indent = len(first) - len(first.lstrip()) if dedented != text else 0
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        return None, 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__:
            return node, indent
    return None, 0


def _is_plait_jit(node, scope):
    """Whether a decorator expression is plait.jit: the function itself
    (under any name), plait.jit(...) called with options, the decorator that
    call returns, or a functools.partial of plait.jit."""
    from .decorator import jit

    if isinstance(node, ast.Call):
        callee = _resolve(node.func, scope)
        if callee is jit:
            return True
        if callee is functools.partial and node.args:
            return _resolve(node.args[0], scope) is jit
        return False
    value = _resolve(node, scope)
    if value is jit:
        return True
    if isinstance(value, functools.partial):
        return value.func is jit
    return getattr(value, "__qualname__", None) == "jit.<locals>.decorate" and \
        getattr(value, "__module__", None) == jit.__module__


_UNRESOLVED = object()


def _resolve(node, scope):
    """The value of a name, attribute chain or constant subscript of a dict,
    list or tuple in `scope` ((locals, globals, position), then builtins),
    or _UNRESOLVED."""
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, scope)
        if base is _UNRESOLVED:
            return _UNRESOLVED
        try:
            return getattr(base, node.attr, _UNRESOLVED)
        except Exception:  # noqa: BLE001 - a property that raises names no plait.jit
            return _UNRESOLVED
    if isinstance(node, ast.Subscript):
        # Only builtin containers: their subscripts run no user code.
        base = _resolve(node.value, scope)
        if type(base) not in (dict, list, tuple) or not isinstance(node.slice, ast.Constant):
            return _UNRESOLVED
        try:
            return base[node.slice.value]
        except (LookupError, TypeError):
            return _UNRESOLVED
    if not isinstance(node, ast.Name):
        return _UNRESOLVED
    local_names, global_names = scope[:2]
    for names in (local_names, global_names):
        if node.id in names:
            return names[node.id]
    builtins = global_names.get("__builtins__", {})
    if not isinstance(builtins, dict):
        builtins = vars(builtins)
    return builtins.get(node.id, _UNRESOLVED)
