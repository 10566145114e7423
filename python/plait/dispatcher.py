"""The dispatcher objects that @plait.jit returns for the CPU target (plait/decorator.py
chooses the class; plait/cuda.py has the CUDA target's).

A Dispatcher is called like the Python function. The C++ base class
(`_core.Dispatcher`) classifies the arguments, looks the compiled kernel up by
their types and calls it; this module only runs on a new signature
(`_compile`), on calls with keywords or defaults (`_bind`) and for inspection.
"""

import functools
import inspect
import os
import sys
import types

from . import _core
from . import sparse_calls
from .source import capture_source

_TRUE_WORDS = ("1", "true", "yes", "on")
_FALSE_WORDS = ("", "0", "false", "no", "off")
_KERNEL_MODULES = ("numpy", "math", "heapq", "plait", "plait.sparse")


def _env_flag(name):
    """True/False for a set boolean environment variable, None when unset."""
    value = os.environ.get(name)
    if value is None:
        return None
    word = value.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ValueError(f"{name}={value!r}: expected 0 or 1")


def optional_passes(target="cpu"):
    """The compiler passes of `target` that plait.jit(disable_passes=...) may
    name, in pipeline order: those that only make kernels faster."""
    if target not in ("cpu", "cuda"):
        raise ValueError(f"target {target!r} is not supported; available: cpu, cuda")
    return list(_core.optional_passes(target))


def _checked_pass_names(names, target):
    """`names` (a pass name or an iterable of them) as a sorted tuple, each an
    optional pass of `target` (the compiler's check and message)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    problem = _core.disabled_passes_error(target, list(names))
    if problem:
        raise ValueError(f"disable_passes: {problem}")
    return tuple(sorted(set(names)))


def _default_num_threads():
    """PLAIT_NUM_THREADS, else the CPUs this process may run on."""
    value = os.environ.get("PLAIT_NUM_THREADS", "").strip()
    if value:
        try:
            threads = int(value)
        except ValueError:
            raise ValueError(f"PLAIT_NUM_THREADS={value!r}: expected a positive integer") from None
        if threads < 1:
            raise ValueError(f"PLAIT_NUM_THREADS={value!r}: expected a positive integer")
        return threads
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _code_names(code):
    """Global names used by a code object and the code objects nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _classify_global(value, prange):
    """('module', name) or ('constant', value) for a value kernels may use,
    else None (the compiler then reports the name as unknown). Functions
    imported from math or numpy (`from math import sqrt`) are passed as
    "math.sqrt", the name the compiler gives `math.sqrt`."""
    if isinstance(value, types.ModuleType):
        if value.__name__ in _KERNEL_MODULES:
            return "module", value.__name__
        return None
    if value is prange:
        return "module", "plait.prange"
    if callable(value) and not isinstance(value, type):
        name = getattr(value, "__name__", None)
        for module_name in ("math", "numpy", "heapq", "plait.sparse"):
            module = sys.modules.get(module_name)
            if isinstance(name, str) and module is not None and getattr(module, name, None) is value:
                return "module", f"{module_name}.{name}"
        function = _user_function(value)
        return ("function", function) if function is not None else None
    if isinstance(value, (bool, int, float)):
        return "constant", value
    return None


def _user_function(value):
    """The Python function behind `value` that a kernel may call (the call is
    inlined): a plain function or lambda, or the function a plait (or
    Numba) dispatcher compiles; None for anything else."""
    function = value if isinstance(value, types.FunctionType) else getattr(value, "py_func", None)
    return function if isinstance(function, types.FunctionType) else None


def collect_globals(fn):
    """The names a kernel sees besides its parameters: (modules: name ->
    module name, constants: name -> bool/int/float, functions: name -> key
    in `callees`, callees: key -> (path, text, first_line, name, modules,
    constants, functions) for every function the kernel's calls reach, text
    "" where Python kept no source)."""
    callees = {}
    modules, constants, functions = _function_globals(fn, callees)
    return modules, constants, functions, callees


def _add_callee(fn, callees):
    """The key of `fn` in `callees`, adding it and what it calls. Its source
    is read now (at the kernel's compile) with its decorators, which the
    compiler skips: a function is inlined as its own text."""
    code = fn.__code__
    key = f"{code.co_filename}:{code.co_firstlineno}:{fn.__qualname__}"
    if key not in callees:
        callees[key] = None  # being added: a call back to it is recursion, refused by the compiler
        try:
            # A lambda has no `def` to inline: the compiler refuses it by its name.
            lines, first_line = inspect.getsourcelines(fn) if fn.__name__ != "<lambda>" else ([], code.co_firstlineno)
            text = "".join(lines)
        except (OSError, TypeError):
            text, first_line = "", code.co_firstlineno
        modules, constants, functions = _function_globals(fn, callees)
        callees[key] = (code.co_filename, text, max(first_line, 1), fn.__name__, modules, constants, functions)
    return key


def _function_globals(fn, callees):
    from . import prange

    modules, constants, functions = {}, {}, {}
    scopes = [fn.__globals__]
    if fn.__closure__:
        scopes.insert(0, {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars, fn.__closure__)
                          if _cell_is_set(cell)})
    names = _code_names(fn.__code__) | set(fn.__code__.co_freevars)
    for name in sorted(names):
        for scope in scopes:
            if name in scope:
                found = _classify_global(scope[name], prange)
                if found is None:
                    pass
                elif found[0] == "function":
                    functions[name] = _add_callee(found[1], callees)
                else:
                    (modules if found[0] == "module" else constants)[name] = found[1]
                break
    return modules, constants, functions


def _cell_is_set(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _kernel_parameters(fn):
    """The parameter names of a kernel; kernels take a fixed list."""
    names = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            raise NotImplementedError(
                f"plait kernel {fn.__qualname__}: parameter '{param}' is not supported; "
                "kernels take plain positional parameters (with optional defaults)")
        names.append(param.name)
    return names


def _normalize_signature(text):
    return "".join(text.split())


class Dispatcher(_core.Dispatcher):
    """A compiled Python function. Calling it compiles a specialisation for
    each new combination of argument types (dtype, ndim, layout; scalar kind)
    and runs it."""

    _target = "cpu"  # CudaDispatcher (plait/cuda.py): "cuda"

    def __init__(self, py_func, *, scope=None, cache=True, boundscheck=None, fastmath=False, num_threads=None,
                 auto_simd=False, fusion="partial", disable_passes=()):
        super().__init__()
        # Read now, as Python compiled it: a file edited after the import
        # must not change what the kernel computes (plait/source.py).
        self._source = capture_source(py_func, scope)
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self._signature = inspect.signature(py_func)
        self._cache = cache
        # None: the default (checked).
        self._boundscheck = _core.default_boundscheck if boundscheck is None else bool(boundscheck)
        self._fastmath = fastmath
        self._auto_simd = auto_simd
        if fusion not in ("partial", "maximal", "none"):
            raise ValueError(f"fusion must be 'partial', 'maximal' or 'none', got {fusion!r}")
        self._fusion = fusion
        self._disabled_passes = _checked_pass_names(disable_passes, self._target)
        self._kernels = {}  # signature text -> _core.Kernel, in compile order
        self._array_calls = {}  # which parameters are sparse -> sparse_calls.ArrayCalls
        self._sparse_notes = set()  # what calls did to sparse arguments, for explain()
        self._param_names = _kernel_parameters(py_func)
        threads = _default_num_threads() if num_threads is None else num_threads
        self._setup(py_func.__name__, py_func.__code__.co_filename, self._param_names, threads, self._target)

    def __repr__(self):
        return f"<plait.Dispatcher {self.py_func.__qualname__} signatures={self.signatures}>"

    @property
    def signatures(self):
        """The signatures compiled so far, e.g. ["f64[::1], int"]."""
        return list(self._kernels)

    def _bind(self, args, kwargs):
        """The full positional argument tuple of a call (defaults filled in)."""
        bound = self._signature.bind(*args, **(kwargs or {}))
        bound.apply_defaults()
        return tuple(bound.args)

    def _call_sparse(self, args):
        """A call with sparse arguments (the C++ call path hands it here):
        each as canonical CSR arrays, through an ArrayCalls."""
        arrangement, parts = [], []
        for name, value in zip(self._param_names, args):
            kind = sparse_calls.sparse_kind(value)
            if kind is not None:
                *arrays, matrix = sparse_calls.csr_parts(value, kind, self.py_func.__name__, name, self._sparse_notes,
                                                         self._target)
                arrangement.append(matrix)
                parts += arrays
            else:
                arrangement.append(None)
                parts.append(value)
        arrangement = tuple(arrangement)
        calls = self._array_calls.get(arrangement)
        if calls is None:
            calls = self._array_calls[arrangement] = sparse_calls.ArrayCalls(self, arrangement)
        calls.num_threads = self.num_threads
        return calls(*parts)  # sparse results come back folded (fold_results)

    def _source_text(self):
        return self._source.text

    def _compile(self, signature):
        """Compiles the kernel for `signature` (called by the C++ base class
        on a new argument-type combination) and returns the _core.Kernel."""
        kernel = self._compile_with(signature)
        self._kernels[kernel.signature] = kernel
        if _env_flag("PLAIT_EXPLAIN"):
            print(kernel.explain, file=sys.stderr)
        return kernel

    def _compile_with(self, signature, constants=None, launch=None):
        """A _core.Kernel for `signature`, with `constants` (name -> int)
        frozen over the globals of the same names and `launch` (the
        cuda_* launch knobs of _core.compile) when given: a candidate of a
        tuned kernel (plait/tuning.py)."""
        modules, frozen, functions, callees = collect_globals(self.py_func)
        if constants:
            for name in constants:
                modules.pop(name, None)
                functions.pop(name, None)
            frozen.update(constants)
        boundscheck = _env_flag("PLAIT_BOUNDSCHECK")
        return _core.compile(
            path=self._source.path,
            text=self._source.text,
            first_line=self._source.first_line,
            name=self.py_func.__name__,
            signature=signature,
            modules=modules,
            constants=frozen,
            functions=functions,
            callees=callees,
            boundscheck=self._boundscheck if boundscheck is None else boundscheck,
            fastmath=self._fastmath,
            disk_cache=self._cache,
            cache_dir=os.environ.get("PLAIT_CACHE_DIR", ""),
            dump_dir=os.environ.get("PLAIT_DUMP_DIR", ""),
            cxx=os.environ.get("PLAIT_CXX", ""),
            target=self._target,
            auto_simd=self._auto_simd,
            fusion=getattr(self, "_fusion", "partial"),
            disabled_passes=list(getattr(self, "_disabled_passes", ())),
            **(launch or {}),
        )

    def compile(self, signature):
        """Compiles the kernel for a signature string ahead of the first call
        with it, e.g. compile("f64[::1], f64[::1], float")."""
        kernel = self._compile(signature)
        self._register(kernel)
        return kernel.signature

    def _kernel(self, signature):
        if not self._kernels:
            raise ValueError(f"{self.py_func.__qualname__} has not been compiled yet: call it first")
        if signature is None:
            return next(reversed(self._kernels.values()))
        wanted = _normalize_signature(signature)
        for text, kernel in self._kernels.items():
            if _normalize_signature(text) == wanted:
                return kernel
        raise KeyError(f"{self.py_func.__qualname__} has no signature {signature!r}; compiled: {self.signatures}")

    def inspect_ir(self, signature=None):
        """The typed IR after the last pass (default: the last compiled signature)."""
        return self._kernel(signature).ir_text

    def inspect_source(self, signature=None):
        """The generated C++ (default: the last compiled signature)."""
        return self._kernel(signature).source

    def explain(self, signature=None):
        """What the compiler did with each loop: parallelised, vectorised, why not."""
        text = self._kernel(signature).explain
        for note in sorted(self._sparse_notes):
            text += f"\n  call: {note}"
        return text

    def library_path(self, signature=None):
        """The compiled shared object in the cache."""
        return self._kernel(signature).library_path

    def from_disk_cache(self, signature=None):
        """Whether the library was found in the disk cache rather than built."""
        return self._kernel(signature).from_disk_cache


class PythonDispatcher:
    """What @plait.jit returns under PLAIT_DISABLE_JIT=1: calls the Python
    function itself."""

    def __init__(self, py_func):
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self.signatures = []

    def __repr__(self):
        return f"<plait.PythonDispatcher {self.py_func.__qualname__}>"

    def __call__(self, *args, **kwargs):
        return self.py_func(*args, **kwargs)

    def _disabled(self, *args, **kwargs):
        raise RuntimeError("plait's JIT is disabled (PLAIT_DISABLE_JIT=1): nothing is compiled")

    compile = inspect_ir = inspect_source = explain = library_path = from_disk_cache = _disabled
