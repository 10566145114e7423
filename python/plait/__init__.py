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
# By default its idle threads spin for a long while before sleeping. When the
# machine has no idle core (2 cores, other processes running), a spinning
# worker burns its whole spin window while the thread it waits for cannot run.
# benchmarks/omp_overhead.py (2 cores, load average 7 from other jobs): a
# parallel region cost 8-31 us with passive waiting, 30-65 us with
# GOMP_SPINCOUNT=1000, 90-180 us with 3000, 0.3-1.2 ms with 10000 and 10-32 ms
# with libgomp's default; a barrier inside a region (a step of a time loop)
# 3.5-36 us passive, 40-100 us with GOMP_SPINCOUNT=1000, 0.1-0.65 ms with
# 3000-10000. Spinning pays only on an otherwise idle machine, and loses by
# far the most when it is not, so waiting is passive. Small loops never
# start a parallel region (the generated code's `if` clause). Settings the
# user made take precedence.
_DEFAULT_OMP_SETTING = "OMP_WAIT_POLICY=PASSIVE"
if "GOMP_SPINCOUNT" not in _os.environ and "OMP_WAIT_POLICY" not in _os.environ:
    _name, _value = _DEFAULT_OMP_SETTING.split("=")
    _os.environ[_name] = _value

from . import _core  # noqa: E402
from .errors import (  # noqa: E402
    ERROR_CLASSES as _ERROR_CLASSES,
    CompileError,
    InternalCompilerError,
    KernelNameError,
    KernelSyntaxError,
    KernelTypeError,
    KernelUnboundLocalError,
    KernelValueError,
    PragmaError,
    RaceError,
    UnsupportedError,
)

_core._set_error_classes(_ERROR_CLASSES, InternalCompilerError)

from .decorator import jit  # noqa: E402
from .dispatcher import Dispatcher, PythonDispatcher, optional_passes  # noqa: E402
from .cuda import (  # noqa: E402
    CudaDispatcher,
    CudaUnavailableError,
    DeviceArray,
    cuda_available,
    cuda_unavailable_reason,
    to_device,
    to_host,
)

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


def memory_pool_stats():
    """The pool that kernels take large arrays (4 MiB and more) from: a dict
    with the free blocks it holds, their bytes, and its budget in bytes
    (`$PLAIT_HOST_MEMORY_POOL`; default the smaller of 1 GiB and an eighth of
    physical memory). Freed arrays go back to the pool, so the next call
    that allocates the same size finds its pages already mapped."""
    blocks, free_bytes, budget = _core.host_memory_stats()
    return {"free_blocks": blocks, "free_bytes": free_bytes, "budget_bytes": budget}


def blas_library():
    """The BLAS that CPU kernels' matrix products call (OpenBLAS or BLIS,
    loaded on first use; $PLAIT_BLAS names another, "none" turns it off),
    or "none (...)" with why: their loops run instead."""
    return _core.cpu_blas_description()


def release_memory_pool():
    """Gives the pool's free blocks back to the operating system."""
    _core.release_host_memory()


__all__ = [
    "CompileError",
    "CudaDispatcher",
    "CudaUnavailableError",
    "DeviceArray",
    "Dispatcher",
    "InternalCompilerError",
    "KernelNameError",
    "KernelSyntaxError",
    "KernelTypeError",
    "KernelUnboundLocalError",
    "KernelValueError",
    "PragmaError",
    "PythonDispatcher",
    "RaceError",
    "UnsupportedError",
    "attention",
    "blas_library",
    "cuda_available",
    "cuda_unavailable_reason",
    "jit",
    "memory_pool_stats",
    "optional_passes",
    "prange",
    "release_memory_pool",
    "to_device",
    "to_host",
    "vidx",
]
from . import sparse  # noqa: E402
from .sparse_attention import attention  # noqa: E402
