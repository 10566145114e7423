"""@plait.jit: the decorator that chooses a target's dispatcher class
(plait/dispatcher.py for the CPU, plait/cuda.py for CUDA). It sits above both,
so that neither dispatcher module imports the other's."""

import sys
import types

from .cuda import CudaDispatcher
from .dispatcher import Dispatcher, PythonDispatcher, _env_flag
from .source import call_position
from .tuning import tuning_space


def jit(fn=None, *, target="cpu", cache=True, boundscheck=None, fastmath=False, num_threads=None,
        auto_simd=False, tune=None, autotune=False, fusion="partial", disable_passes=()):
    """Compiles a Python function into a parallel native kernel.

    Usable as @plait.jit, @plait.jit(...) and plait.jit(...)(fn).
      target:      "cpu", or "cuda" for NVIDIA GPUs (see plait/cuda.py; plait.cuda_available()
                   says whether this machine can run them)
      cache:       keep compiled libraries on disk across processes
      boundscheck: an index the compiler cannot prove in range is checked (IndexError);
                   default: yes, on both targets (docs/language.md, "Bounds checks");
                   PLAIT_BOUNDSCHECK overrides
      fastmath:    allow float reassociation and contraction
      num_threads: threads for parallel loops (default: PLAIT_NUM_THREADS, else
                   the CPUs this process may use)
      auto_simd:   add `simd` to the innermost dimension of every array statement
                   whose sliced-index pragma leaves it out
      tune:        target="cuda" only: candidate values to time on the first call of each
                   shape class, e.g. {"threads": [128, 256, 512], "row_groups": [2, 4]} (launch
                   knobs: threads, row_groups, max_team) or {"BN": [128, 256]} (an integer
                   constant the kernel reads as a global name); the fastest is kept, in the
                   disk cache too (docs/cuda.md, "Launch configuration and autotuning")
      autotune:    target="cuda" only: tune threads (128, 256, 512) and row_groups (2, 4)
      fusion:      how programs of sparse operators are fused (docs/sparse.md): "partial"
                   (redundancy-aware, the default), or for comparison "maximal" (one loop
                   nest per result) or "none" (one loop nest per operator)
      disable_passes: names of optional compiler passes not to run, to measure what each
                   contributes (plait.optional_passes(target) lists them; none on "cuda")
    """
    if target not in ("cpu", "cuda"):
        raise ValueError(f"target {target!r} is not supported; available: cpu, cuda")
    if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int)
                                    or num_threads < 1):
        raise ValueError(f"num_threads must be a positive integer or None, got {num_threads!r}")

    def decorate(func):
        if not isinstance(func, types.FunctionType):
            raise TypeError(f"plait.jit compiles Python functions, got {type(func).__name__}")
        space = tuning_space(func, tune, autotune, target)
        if _env_flag("PLAIT_DISABLE_JIT"):
            return PythonDispatcher(func)
        # The scope the decorator expressions were evaluated in: where
        # plait.jit(fn) was called, or where plait.jit(...) returned this.
        caller = sys._getframe(1)
        if caller.f_code is jit.__code__:
            caller = caller.f_back
        scope = (dict(caller.f_locals), caller.f_globals, call_position(caller)) if caller is not None else None
        options = dict(scope=scope, cache=cache, boundscheck=None if boundscheck is None else bool(boundscheck),
                       fastmath=bool(fastmath), num_threads=num_threads, auto_simd=bool(auto_simd),
                       disable_passes=disable_passes)
        if target == "cuda":
            return CudaDispatcher(func, tuning=space, **options)
        return Dispatcher(func, fusion=fusion, **options)

    if fn is None:
        return decorate
    return decorate(fn)
