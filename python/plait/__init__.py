"""Plait: compiles Python loop kernels with #pragma comments to parallel C++.

    import plait

    @plait.jit
    def saxpy(a, x, y):
        #pragma parallel for
        for i in range(x.shape[0]):
            y[i] += a * x[i]
"""

import os as _os

# libgomp reads its settings once, when the first kernel library pulls it in.
# By default its idle threads spin for a long while (about 300,000 spins)
# before sleeping; on machines with few cores that spinning competes with the
# calling thread and makes short consecutive calls slow. A modest spin count
# keeps hand-offs between back-to-back parallel loops fast while letting idle
# threads sleep soon. OMP_WAIT_POLICY stays unset (libgomp's default). Settings
# the user made take precedence; benchmarks/omp_overhead.py measures the effect.
_os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from . import _core  # noqa: E402
from .errors import (  # noqa: E402
    ERROR_CLASSES as _ERROR_CLASSES,
    CompileError,
    InternalCompilerError,
    KernelNameError,
    KernelSyntaxError,
    KernelTypeError,
    KernelValueError,
    PragmaError,
    RaceError,
    UnsupportedError,
)

_core._set_error_classes(_ERROR_CLASSES, InternalCompilerError)

from .dispatcher import Dispatcher, PythonDispatcher, jit  # noqa: E402

__version__ = "0.1.0"


def prange(*args):
    """A parallel range. Inside kernels it marks the loop as parallel (like
    `#pragma parallel for`); in plain Python it is `range`."""
    return range(*args)


def vidx(start, size, bound):
    """A vector block of indices `start .. min(start + size, bound) - 1`.
    Inside kernels it is a subscript (`c[vi] = a[vi] + b[vi]`) that the
    compiler turns into one vector strip; in plain Python it is the
    equivalent slice."""
    return slice(start, min(start + size, bound))


__all__ = [
    "CompileError",
    "Dispatcher",
    "InternalCompilerError",
    "KernelNameError",
    "KernelSyntaxError",
    "KernelTypeError",
    "KernelValueError",
    "PragmaError",
    "PythonDispatcher",
    "RaceError",
    "UnsupportedError",
    "jit",
    "prange",
    "vidx",
]
