"""Runs one random kernel (random_kernels.KernelCase) compiled and as
Python, and asserts that the two agree (the oracle of docs/testing.md).

Both run on clones of the same arguments. When Python raises, the compiled
kernel must raise the same exception class, and (unless
PLAIT_RANDOM_KERNELS_AFTER_ERROR=0) leave the arrays as Python left them at
its first error. A failure message is a ready reproducer: the kernel's
source, the arguments and what differs.

Settings (environment):
- PLAIT_RANDOM_KERNELS: the number of kernels a test draws (default 60);
- PLAIT_RANDOM_KERNELS_SEED: unset, the draws are derandomized (the same
  kernels every run, as CI needs); "random" draws fresh kernels; an integer
  seeds them;
- PLAIT_RANDOM_KERNELS_AFTER_ERROR=0: skip the comparison of arrays after an
  error (the exception classes are still compared);
- PLAIT_RANDOM_KERNELS_TIMEOUT: seconds one kernel may take to compile and
  run (default 300); past it the process ends, after writing the kernel and
  the stacks to the file that `watchdog_path()` names.
"""

import faulthandler
import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings

import numpy as np
from hypothesis import HealthCheck, seed, settings

import plait
from oracle import REDUCTION_RTOL, assert_same, clone, gaps_intact

EXAMPLES = int(os.environ.get("PLAIT_RANDOM_KERNELS", "60"))
SEED = os.environ.get("PLAIT_RANDOM_KERNELS_SEED")
COMPARE_AFTER_ERROR = os.environ.get("PLAIT_RANDOM_KERNELS_AFTER_ERROR", "1") != "0"
TIMEOUT = float(os.environ.get("PLAIT_RANDOM_KERNELS_TIMEOUT", "300"))

_DIR = tempfile.mkdtemp(prefix="plait-random-kernels-")


def watchdog_path():
    return os.path.join(_DIR, "running.txt")


def hypothesis_settings(test):
    """The test's Hypothesis settings: EXAMPLES kernels, no deadline (each
    compiles with the system C++ compiler), derandomized unless SEED says."""
    configured = settings(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much], print_blob=False)(test)
    if SEED not in (None, "random"):
        configured = seed(int(SEED))(configured)
    return configured


def load(case):
    """The case's `kernel` function, from a module file of its own (plait
    reads the source with inspect; one file per source keeps linecache and
    the disk cache apart)."""
    digest = hashlib.sha256(case.source.encode()).hexdigest()[:16]
    name = f"plait_random_{digest}"
    if name in sys.modules:
        return sys.modules[name].kernel
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w") as f:
        f.write(case.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.kernel


def _call(fn, args):
    """(result, exception): one of the two is None."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except Exception as error:  # the comparison is of the classes
            return None, error


def reproducer(case, target):
    options = f"target={target!r}, boundscheck={case.boundscheck}"
    return (f"kernel (plait.jit({options})):\n{case.source}\narguments:\n{case.describe_arguments()}\n"
            f"(argument values: KernelCase.arguments() with seed {case.seed})")


def _tolerance(case, args):
    if not case.approx:
        return None, None
    single = any(isinstance(a, np.ndarray) and a.dtype == np.float32 or isinstance(a, np.float32) for a in args)
    rtol = REDUCTION_RTOL[np.dtype(np.float32 if single else np.float64)]
    return rtol, rtol * 100


def check_case(case, target="cpu"):
    """Asserts that the compiled kernel agrees with the Python one on the
    case's arguments."""
    function = load(case)
    args = case.arguments()
    py_args, jit_args = clone(tuple(args)), clone(tuple(args))
    expected, py_error = _call(function, py_args)
    with open(watchdog_path(), "w") as watch:
        watch.write(reproducer(case, target) + "\n")
        watch.flush()
        faulthandler.dump_traceback_later(TIMEOUT, exit=True, file=watch)
        try:
            kernel = plait.jit(target=target, boundscheck=case.boundscheck)(function)
            got, jit_error = _call(kernel, jit_args)
        finally:
            faulthandler.cancel_dump_traceback_later()
    if isinstance(jit_error, plait.CompileError) or type(jit_error).__name__ == "InternalCompilerError":
        raise AssertionError(f"plait refused a kernel Python runs: {jit_error!r}\n{reproducer(case, target)}")
    try:
        if py_error is not None:
            assert type(jit_error) is type(py_error), (
                f"Python raised {py_error!r}; the compiled kernel "
                + (f"raised {jit_error!r}" if jit_error else f"returned {got!r}"))
            # After an error in a parallel loop the other threads stop at
            # their next iteration: which other iterations ran is not fixed
            # (docs/language.md, "Errors at run time"). The GPU's arrays after
            # an error are checked form by form by
            # tests/gpu/test_cuda_errors_stop.py.
            if not COMPARE_AFTER_ERROR or "#pragma parallel" in case.source or target == "cuda":
                return
        else:
            assert jit_error is None, f"the compiled kernel raised {jit_error!r}; Python returned {expected!r}"
            rtol, atol = _tolerance(case, args)
            assert_same(got, expected, rtol, atol)
        rtol, atol = _tolerance(case, args)
        for k, (g, e) in enumerate(zip(jit_args, py_args)):
            if isinstance(e, np.ndarray):
                assert_same(g, e, rtol, atol, what=f"argument {case.params[k].name} after the call")
                assert gaps_intact(g), f"argument {case.params[k].name}: written outside the view's elements"
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n{reproducer(case, target)}") from None
