"""The CUDA target: @plait.jit(target="cuda") kernels, GPU arrays and copies.

Arguments of a CUDA kernel:
  - CuPy arrays, PyTorch CUDA tensors, plait.DeviceArray and anything else
    with __cuda_array_interface__ are used in place (strides included);
  - NumPy arrays are copied to the GPU before the call and back after it;
    NumPy arguments whose memory overlaps (views of one array) are copied as
    one span, so that they overlap on the GPU as on the host;
  - Python and NumPy scalars are passed by value;
  - sparse matrices: cupyx.scipy.sparse matrices and torch sparse tensors
    are read in place, SciPy matrices copied (plait/sparse_calls.py); a
    sparse result comes back in the library of the arguments' arrays.
Arrays the kernel allocates and returns come back as PyTorch tensors when an
argument was a tensor, else CuPy arrays when one was a CuPy array, else
plait.DeviceArray when one was, else NumPy arrays (copied from the GPU).
Work is queued on the current stream of PyTorch or CuPy when their arrays are
passed, else on the legacy default stream.

A call runs in the extension (python/src/cuda_call_plan.h): the arguments
classified, NumPy arrays copied, the kernel found by the arguments' types,
launched, and its results wrapped. This module holds the GPU arrays' public
API (to_device, to_host, DeviceArray) and, for tuned kernels, the tuning run.
"""

import os
import statistics
import sys
import time

import numpy as np

from . import _core, tuning
from .dispatcher import Dispatcher, _env_flag, collect_globals
from .errors import CompileError, InternalCompilerError


class CudaUnavailableError(RuntimeError):
    """target="cuda" on a machine where CUDA kernels cannot run."""


def cuda_unavailable_reason():
    """'' when CUDA kernels can be compiled and run here, else what is missing."""
    return _core.cuda_unavailable_reason()


def cuda_available():
    """Whether @plait.jit(target="cuda") kernels can run here (an NVIDIA GPU,
    its driver and NVRTC)."""
    return cuda_unavailable_reason() == ""


# Raises CudaUnavailableError naming what is missing; once CUDA was found
# usable, it stays so for the process.
_require_cuda = _core.require_cuda


class DeviceArray:
    """An array in GPU memory (plait.to_device returns one). It exposes
    __cuda_array_interface__, so CuPy, PyTorch and plait kernels use it in
    place; to_host() (or plait.to_host) copies it to a NumPy array."""

    def __init__(self, buffer, pointer, shape, strides, dtype):
        self._buffer = buffer  # keeps the memory alive
        self.pointer = int(pointer)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self._strides = tuple(int(s) for s in strides)  # in elements

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def strides(self):
        """Byte strides, as NumPy gives them."""
        return tuple(s * self.dtype.itemsize for s in self._strides)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.pointer, False),
                "strides": self.strides, "version": 3}

    def to_host(self):
        """A NumPy copy of the array."""
        return _core.copy_view_to_host(self.pointer, self.shape, self._strides, self.dtype, 0)

    def __repr__(self):
        return f"plait.DeviceArray(shape={self.shape}, dtype={self.dtype})"


_core._set_cuda_classes(DeviceArray, CudaUnavailableError)


def to_device(array):
    """Copies a NumPy array (or anything np.asarray takes) to GPU memory and
    returns a DeviceArray. GPU arrays (CuPy, PyTorch, DeviceArray) are
    returned as they are."""
    if hasattr(array, "__cuda_array_interface__"):
        return array
    _require_cuda()
    host = np.asarray(array)
    buffer, strides = _core.array_to_device(host)
    return DeviceArray(buffer, buffer.pointer, host.shape, strides, host.dtype)


def to_host(array):
    """A NumPy copy of a GPU array (DeviceArray, CuPy, PyTorch or any
    __cuda_array_interface__ object); NumPy arrays are returned as they are."""
    if isinstance(array, DeviceArray):
        return array.to_host()
    if type(array).__module__.startswith("torch") and hasattr(array, "is_cuda"):
        return array.detach().cpu().numpy()
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        return np.asarray(array)
    return _core.interface_to_host(interface)


# Timing runs of a tuning candidate after its warm-up run; the median counts.
_TIMED_RUNS = 5
# The calls' (signature, array shapes) a tuned kernel remembers its choice for.
_SHAPES_KEPT = 4096


def _first_line(error):
    """"KernelValueError: range() arg 3 must not be zero": the class and the
    first line of the message (a compile error's without its location)."""
    text = (getattr(error, "message", None) or str(error)).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def _median_run_ms(kernel, values, restore, stream):
    """The median time in ms of _TIMED_RUNS runs of `kernel` on `values`
    after a warm-up run, each from the arguments' original contents
    (restore(), not timed), synchronising the stream around each run."""
    times = []
    for run in range(1 + _TIMED_RUNS):
        restore()
        _core.synchronize(stream)
        start = time.perf_counter()
        kernel.call_cuda(values, stream)
        _core.synchronize(stream)
        if run:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


class CudaDispatcher(Dispatcher):
    """A kernel compiled for the GPU (@plait.jit(target="cuda")). A call runs
    in the extension, as on the CPU (see the module docstring); a tuned
    kernel's call asks _tuned_kernel for the kernel of its shape class."""

    _target = "cuda"

    def __init__(self, py_func, *, tuning=None, **options):
        super().__init__(py_func, **options)
        # A tuned kernel (plait/tuning.py): its TuningSpace, its compiled
        # candidates by (signature, candidate text), the choice by
        # (signature, shape class), and explain()'s reports by signature.
        self._tuning = tuning
        self._tuned = tuning is not None
        self._variants = {}
        self._choices = {}
        self._tuning_reports = {}
        # (signature, array shapes) -> the chosen kernel: a repeated shape
        # skips the shape class and the lookups above.
        self._by_call_shapes = {}

    def _compile(self, signature):
        _require_cuda()
        return super()._compile(signature)

    def compile(self, signature):
        """Compiles the kernel for a signature string ahead of the first call
        (a tuned kernel: every candidate, so that the first call only times
        them)."""
        if self._tuning is None:
            return super().compile(signature)
        _require_cuda()
        kernels = [self._variant(signature, c) for c in self._tuning.candidates()]
        return kernels[0].signature

    # ------------------------------------------------------------ tuning

    def _variant(self, signature, candidate):
        """The compiled candidate `candidate` of `signature` (compiled once)."""
        key = (signature, tuning.candidate_text(candidate))
        kernel = self._variants.get(key)
        if kernel is None:
            kernel = self._compile_with(signature, tuning.candidate_constants(candidate),
                                        tuning.launch_options(candidate))
            self._variants[key] = kernel
        return kernel

    def _tuned_kernel(self, plan):
        """The kernel a call of a tuned kernel runs; the extension asks, with
        the call's plan (_core.CudaCall, its NumPy arrays on the GPU)."""
        signature = plan.signature
        shapes = (signature, *plan.array_shapes)
        kernel = self._by_call_shapes.get(shapes)
        if kernel is None:
            kernel = self._chosen_kernel(signature, plan)
            if (signature, tuning.shape_class(signature, shapes[1:])) in self._choices:
                if len(self._by_call_shapes) >= _SHAPES_KEPT:
                    self._by_call_shapes.clear()
                self._by_call_shapes[shapes] = kernel
        return kernel

    def _chosen_kernel(self, signature, plan):
        """The kernel of the call's shape class: its recorded choice, else
        the winner of a tuning run on copies of the arguments."""
        shape = tuning.shape_class(signature, plan.array_shapes)
        choice = self._choices.get((signature, shape))
        report = None
        if choice is None:
            report = self._recorded_choice(signature, shape)
            if report is None:
                report = self._tuning_run(signature, shape, plan)
            choice = report.choice
            if choice is None:
                # Every candidate failed to run: the first one that compiled
                # runs the call (raising its error); the next call tunes again.
                choice = next(c for c, _, _ in report.results
                              if (signature, tuning.candidate_text(c)) in self._variants)
            else:
                self._choices[(signature, shape)] = choice
        kernel = self._variant(signature, choice)
        if report is not None:
            self._tuning_reports.setdefault(kernel.signature, {})[shape] = report
            if _env_flag("PLAIT_EXPLAIN"):
                print(kernel.explain + tuning.explain_text(self._tuning, self._tuning_reports[kernel.signature]),
                      file=sys.stderr)
        self._kernels.pop(kernel.signature, None)
        self._kernels[kernel.signature] = kernel  # inspect_*() and explain() show this variant
        return kernel

    def _record_key(self, signature, shape):
        """The disk cache key of the choice for (signature, shape class):
        the kernel's source and name, the globals it sees (tuned names
        left out), the options, the GPU and the candidate space."""
        code = self.py_func.__code__
        modules, constants, functions, callees = collect_globals(self.py_func)
        for name in self._tuning.constants:
            modules.pop(name, None)
            constants.pop(name, None)
            functions.pop(name, None)
        device = _core.cuda_device()
        return tuning.record_key([
            _core.compiler_version(), code.co_filename, code.co_firstlineno, self._source_text(),
            self.py_func.__name__, signature, shape, sorted(modules.items()),
            sorted((name, repr(value)) for name, value in constants.items()),
            sorted(functions.items()), sorted((key, repr(callee)) for key, callee in callees.items()),
            [self._boundscheck, _env_flag("PLAIT_BOUNDSCHECK"), self._fastmath, self._auto_simd],
            [device["name"], device["arch"]], self._tuning.to_json()])

    def _recorded_choice(self, signature, shape):
        """The TuningReport of the disk cache's record, or None (no record,
        a damaged one, or the cache off)."""
        if not self._cache:
            return None
        text = _core.lookup_record(self._record_key(signature, shape), os.environ.get("PLAIT_CACHE_DIR", ""))
        found = tuning.parse_record(text, self._tuning) if text is not None else None
        if found is None:
            return None
        choice, results = found
        return tuning.TuningReport(results, choice, "from the disk cache")

    def _tuning_run(self, signature, shape, plan):
        """Compiles every candidate, times each on copies of the call's
        arrays (a warm-up run, then the median of _TIMED_RUNS runs, each from
        the original contents), and returns the TuningReport; the choice is
        recorded in the disk cache unless the cache is off."""
        candidates = self._tuning.candidates()
        notes, kernels, first_error = {}, {}, None
        for candidate in candidates:
            try:
                kernels[tuning.candidate_text(candidate)] = self._variant(signature, candidate)
            except (CompileError, InternalCompilerError) as e:
                first_error = first_error or e
                notes[tuning.candidate_text(candidate)] = "does not compile: " + _first_line(e)
        if not kernels:
            raise first_error
        values, restore = plan.copied_values()
        results = []
        for candidate in candidates:
            text = tuning.candidate_text(candidate)
            if text not in kernels:
                results.append((candidate, None, notes[text]))
                continue
            try:
                ms = _median_run_ms(kernels[text], values, restore, plan.stream)
            except Exception as e:  # noqa: BLE001 - a candidate that cannot run is skipped
                results.append((candidate, None, "failed to run: " + _first_line(e)))
                continue
            results.append((candidate, ms, ""))
        timed = [(ms, k) for k, (_, ms, _) in enumerate(results) if ms is not None]
        if not timed:
            return tuning.TuningReport(results, None, "")
        choice = results[min(timed)[1]][0]
        report = tuning.TuningReport(results, choice, "tuned now")
        if self._cache:
            _core.store_record(self._record_key(signature, shape),
                               tuning.record_text(choice, results), os.environ.get("PLAIT_CACHE_DIR", ""))
        else:
            report.origin = "tuned now; the disk cache is off (cache=False), so it is kept in memory only"
        return report

    def explain(self, signature=None):
        """What the compiler did with each loop; for a tuned kernel, then
        each shape class seen with the candidates' times and the choice."""
        text = super().explain(signature)
        if self._tuning is None:
            return text
        kernel = self._kernel(signature)
        return text + tuning.explain_text(self._tuning, self._tuning_reports.get(kernel.signature, {}))

    def inspect_source(self, signature=None):
        """The generated CUDA C++, then the host C++ that launches it (a
        tuned kernel: the variant chosen for the shape class of the
        signature that was tuned or looked up last)."""
        kernel = self._kernel(signature)
        return kernel.device_source + "\n// ======== host part (C++)\n" + kernel.source

    def inspect_ptx(self, signature=None):
        """The PTX NVRTC generated for the device part."""
        return self._kernel(signature).ptx
