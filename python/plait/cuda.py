"""The CUDA target: @plait.jit(target="cuda") kernels, GPU arrays and copies.

Arguments of a CUDA kernel:
  - CuPy arrays, PyTorch CUDA tensors, plait.DeviceArray and anything else
    with __cuda_array_interface__ are used in place (strides included);
  - NumPy arrays are copied to the GPU before the call and back after it;
    NumPy arguments whose memory overlaps (views of one array) are copied as
    one span, so that they overlap on the GPU as on the host;
  - Python and NumPy scalars are passed by value.
Arrays the kernel allocates and returns come back as PyTorch tensors when an
argument was a tensor, else CuPy arrays when one was a CuPy array, else
plait.DeviceArray when one was, else NumPy arrays (copied from the GPU).
Work is queued on the current stream of PyTorch or CuPy when their arrays are
passed, else on the legacy default stream.
"""

import ctypes
import os
import statistics
import sys
import time

import numpy as np

from . import _core, tuning
from .dispatcher import Dispatcher, _env_flag, collect_globals
from .errors import CompileError, InternalCompilerError

# plait dtype codes (runtime/abi.h) <-> NumPy, from the extension's table
_DTYPE_CODES = {np.dtype(name): code for code, (name, _) in enumerate(_core.element_types)}
_DTYPE_NAMES = {code: spelled for code, (_, spelled) in enumerate(_core.element_types)}
_DTYPE_LIST = ", ".join(name for name, _ in _core.element_types[:-1]) + " and " + _core.element_types[-1][0]
_DTYPE_BY_CODE = {code: dtype for dtype, code in _DTYPE_CODES.items()}


class CudaUnavailableError(RuntimeError):
    """target="cuda" on a machine where CUDA kernels cannot run."""


def cuda_unavailable_reason():
    """'' when CUDA kernels can be compiled and run here, else what is missing."""
    return _core.cuda_unavailable_reason()


def cuda_available():
    """Whether @plait.jit(target="cuda") kernels can run here (an NVIDIA GPU,
    its driver and NVRTC)."""
    return cuda_unavailable_reason() == ""


_cuda_ready = False  # set once CUDA was found usable: it stays so for the process


def _require_cuda():
    global _cuda_ready
    if _cuda_ready:
        return
    reason = cuda_unavailable_reason()
    if reason:
        raise CudaUnavailableError(f"plait target='cuda' cannot run here: {reason}")
    _cuda_ready = True


_device_ordinal = None  # the GPU plait runs on, asked once


def _plait_device_ordinal():
    global _device_ordinal
    if _device_ordinal is None:
        _device_ordinal = _core.cuda_device()["ordinal"]
    return _device_ordinal


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
        return _copy_view_to_host(self.pointer, self.shape, self._strides, self.dtype, 0)

    def __repr__(self):
        return f"plait.DeviceArray(shape={self.shape}, dtype={self.dtype})"


def _span(shape, strides):
    """(lowest, highest + 1) element offsets a strided view touches."""
    if any(n == 0 for n in shape):
        return 0, 0
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return low, high + 1


def _copy_view_to_host(pointer, shape, strides, dtype, stream):
    """A NumPy copy of a strided view of GPU memory."""
    low, high = _span(shape, strides)
    flat = np.empty(high - low, dtype=dtype)
    if flat.size:
        _core.copy_to_host(flat, pointer + low * dtype.itemsize, stream)
    byte_strides = tuple(s * dtype.itemsize for s in strides)
    view = np.lib.stride_tricks.as_strided(flat[-low:] if low else flat, shape=shape, strides=byte_strides) \
        if flat.size else np.empty(shape, dtype=dtype)
    return np.array(view, copy=True)


def _host_array_to_device(array, stream):
    """(DeviceBuffer, strides in elements) of a GPU copy of a NumPy array,
    C or Fortran ordered as the array is (C when it is neither)."""
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    buffer = _core.device_alloc(array.nbytes)
    if array.nbytes:
        # A Fortran-ordered array's bytes are those of its C-ordered transpose.
        _core.copy_to_device(buffer.pointer, array if array.flags.c_contiguous else array.T, stream)
    return buffer, _canonical_strides(array.shape, fortran=not array.flags.c_contiguous)


def _canonical_strides(shape, fortran=False):
    strides = [0] * len(shape)
    step = 1
    order = range(len(shape)) if fortran else reversed(range(len(shape)))
    for k in order:
        strides[k] = step
        step *= shape[k]
    return tuple(strides)


def to_device(array):
    """Copies a NumPy array (or anything np.asarray takes) to GPU memory and
    returns a DeviceArray. GPU arrays (CuPy, PyTorch, DeviceArray) are
    returned as they are."""
    if hasattr(array, "__cuda_array_interface__"):
        return array
    _require_cuda()
    host = np.asarray(array)
    if host.dtype not in _DTYPE_CODES:
        raise TypeError(f"plait.to_device: unsupported dtype {host.dtype}; CUDA kernels take {_DTYPE_LIST} arrays")
    buffer, strides = _host_array_to_device(host, 0)
    return DeviceArray(buffer, buffer.pointer, host.shape, strides, host.dtype)


def to_host(array):
    """A NumPy copy of a GPU array (DeviceArray, CuPy, PyTorch or any
    __cuda_array_interface__ object); NumPy arrays are returned as they are."""
    if isinstance(array, DeviceArray):
        return array.to_host()
    if _is_torch_tensor(array):
        return array.detach().cpu().numpy()
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        return np.asarray(array)
    view = _interface_view(interface)
    _core.synchronize(0)
    return _copy_view_to_host(view.pointer, view.shape, view.strides, view.dtype, 0)


# ---------------------------------------------------------------- arguments

def _is_torch_tensor(obj):
    module = type(obj).__module__
    return module.startswith("torch") and hasattr(obj, "is_cuda")


def _is_cupy_array(obj):
    return type(obj).__module__.startswith("cupy")


_torch_dtypes = None  # torch dtype -> NumPy dtype, for the dtypes CUDA kernels take


def _torch_numpy_dtype(torch, dtype):
    """The NumPy dtype of a torch dtype that CUDA kernels take, else None."""
    global _torch_dtypes
    if _torch_dtypes is None:
        _torch_dtypes = {}
        for np_dtype in _DTYPE_CODES:
            torch_dtype = getattr(torch, np_dtype.name, None)
            if torch_dtype is not None:
                _torch_dtypes[torch_dtype] = np_dtype
    return _torch_dtypes.get(dtype)


class _View:
    """A GPU array argument: pointer, shape, strides in elements, dtype."""

    __slots__ = ("pointer", "shape", "strides", "dtype")

    def __init__(self, pointer, shape, strides, dtype):
        self.pointer, self.shape, self.strides, self.dtype = pointer, shape, strides, dtype


def _interface_view(interface):
    dtype = np.dtype(interface["typestr"])
    shape = tuple(int(n) for n in interface["shape"])
    pointer = int(interface["data"][0])
    byte_strides = interface.get("strides")
    if byte_strides is None:
        return _View(pointer, shape, _canonical_strides(shape), dtype)
    return _View(pointer, shape, _element_strides(byte_strides, dtype.itemsize), dtype)


def _element_strides(byte_strides, itemsize):
    strides = []
    for s in byte_strides:
        if s % itemsize:
            raise TypeError(f"a GPU array with byte stride {s} that is not a multiple of its item size {itemsize}")
        strides.append(int(s) // itemsize)
    return tuple(strides)


def _layout(shape, strides):
    """'C', 'F' or 'A' (any) for element strides; extents of 1 do not count."""
    def matches(order):
        step = 1
        for k in order:
            if shape[k] != 1 and strides[k] != step:
                return False
            step *= shape[k]
        return True

    ndim = len(shape)
    if matches(reversed(range(ndim))):
        return "C"
    if ndim >= 2 and matches(range(ndim)):
        return "F"
    return "A"


def _array_type_text(dtype_code, ndim, layout):
    dims = []
    for d in range(ndim):
        unit = (layout == "C" and d == ndim - 1) or (layout == "F" and d == 0)
        dims.append("::1" if unit else ":")
    return f"{_DTYPE_NAMES[dtype_code]}[{', '.join(dims)}]"


_array_types = {}  # (dtype code, shape, strides) -> (signature text, strides passed)
_ARRAY_TYPES_KEPT = 4096


def _array_type_and_strides(code, shape, strides):
    """The signature text of a GPU array and the strides to pass: canonical
    ones for C and F layouts (whose extents of 1 may have any stride).
    Remembered per shape and strides, since calls repeat them."""
    key = (code, shape, strides)
    known = _array_types.get(key)
    if known is not None:
        return known
    layout = _layout(shape, strides)
    if layout == "C":
        strides = _canonical_strides(shape)
    elif layout == "F":
        strides = _canonical_strides(shape, fortran=True)
    known = (_array_type_text(code, len(shape), layout), strides)
    if len(_array_types) >= _ARRAY_TYPES_KEPT:
        _array_types.clear()
    _array_types[key] = known
    return known


def _host_byte_range(array):
    """(lowest, highest + 1) host addresses of a NumPy array's elements."""
    low = high = array.__array_interface__["data"][0]
    for n, s in zip(array.shape, array.strides):
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high + array.itemsize


def _overlapping_groups(arrays):
    """The NumPy arrays (distinct, none empty) whose bytes overlap another's,
    in groups of arrays that share memory (through a chain of overlaps)."""
    spans = sorted(((_host_byte_range(a), k) for k, a in enumerate(arrays))) if len(arrays) > 1 else []
    groups, current, end = [], [], 0
    for (low, high), k in spans:
        array = arrays[k]
        if current and low < end:
            current.append(array)
            end = max(end, high)
            continue
        if len(current) > 1:
            groups.append(current)
        current, end = [array], high
    if len(current) > 1:
        groups.append(current)
    return groups


# Device buffers are at least this aligned; a span copied from a host address
# rounded down to it keeps every element's alignment (and stays within the
# host page of that address).
_SPAN_ALIGNMENT = 256


class _CallPlan:
    """The arguments of one call, classified: the signature text, the values
    call_cuda takes, the NumPy arrays to copy back, and what kinds of arrays
    came in (for the type of returned arrays)."""

    def __init__(self, dispatcher, args):
        self.types = []
        self.values = []
        self.copy_back = []   # (NumPy array, device pointer, strides): staged, copied back after the call
        self.buffers = []     # the DeviceBuffers of staged NumPy arrays, alive until the call ends
        self.borrowed = []    # (python object, pointer, shape) of array arguments
        self.array_values = []  # (index in values, item size) of array arguments, for tuning copies
        self.staged = {}      # id(NumPy array) -> its _View on the GPU, so a repeated argument is one copy
        self.torch = None
        self.cupy = False
        self.device_arrays = False
        self.stream = 0
        self.guarded = False  # a NumPy argument is read-only or has a zero stride: check_writes checks it
        arrays = {id(v): v for v in args if isinstance(v, np.ndarray) and v.ndim > 0 and v.size}
        if len(arrays) > 1:
            for group in _overlapping_groups(list(arrays.values())):
                self._stage_shared(group)
        for index, value in enumerate(args):
            self._classify(dispatcher, index, value)
        if self.torch is not None:
            self.stream = int(self.torch.cuda.current_stream().cuda_stream)
        elif self.cupy:
            import cupy
            self.stream = int(cupy.cuda.get_current_stream().ptr)

    def _stage_shared(self, group):
        """Copies NumPy arrays that share memory to the GPU as one span of
        bytes, each a view of it with its own strides: a kernel that writes
        one and reads another sees, as NumPy does, one memory (the compiled
        statements test for the overlap). Arrays whose byte strides or
        addresses are not multiples of their item size keep copies of their
        own."""
        for array in group:
            address = array.__array_interface__["data"][0]
            if array.dtype not in _DTYPE_CODES or address % array.itemsize or \
                    any(s % array.itemsize for s in array.strides):
                return
        low = min(_host_byte_range(a)[0] for a in group)
        high = max(_host_byte_range(a)[1] for a in group)
        start = low - low % _SPAN_ALIGNMENT
        buffer = _core.device_alloc(high - start)
        _core.copy_to_device(buffer.pointer, (ctypes.c_ubyte * (high - start)).from_address(start), 0)
        self.buffers.append(buffer)
        for array in group:
            strides = tuple(s // array.itemsize for s in array.strides)
            pointer = buffer.pointer + (array.__array_interface__["data"][0] - start)
            self.staged[id(array)] = _View(pointer, array.shape, strides, array.dtype)
            self.copy_back.append((array, pointer, strides))

    def _argument_error(self, dispatcher, index, why):
        params = dispatcher._param_names
        name = params[index] if index < len(params) else str(index)
        raise TypeError(f"{dispatcher.py_func.__name__}() argument '{name}' {why}")

    def _dtype_error(self, dispatcher, index, dtype):
        self._argument_error(dispatcher, index, f"has unsupported dtype '{dtype}'; CUDA kernels take {_DTYPE_LIST} "
                             "arrays")

    def _add_array(self, dispatcher, index, obj, view):
        code = _DTYPE_CODES.get(view.dtype)
        if code is None:
            self._dtype_error(dispatcher, index, view.dtype)
        ndim = len(view.shape)
        if ndim == 0 or ndim > 4:
            self._argument_error(dispatcher, index, f"is a {ndim}-D GPU array; CUDA kernels take arrays of 1 to 4 "
                                 "dimensions")
        type_text, strides = _array_type_and_strides(code, view.shape, view.strides)
        self.types.append(type_text)
        self.array_values.append((len(self.values), view.dtype.itemsize))
        self.values.append((view.pointer, view.shape, strides))
        self.borrowed.append((obj, view.pointer, view.shape))

    def _classify(self, dispatcher, index, value):
        if isinstance(value, np.ma.MaskedArray):
            self._argument_error(dispatcher, index, "is a masked array (numpy.ma.MaskedArray); plait kernels would "
                                 "ignore its mask: pass its .data, or .filled(value)")
        if isinstance(value, np.ndarray) and value.ndim > 0:
            if value.dtype not in _DTYPE_CODES:
                self._dtype_error(dispatcher, index, value.dtype)
            if not value.flags.writeable or 0 in value.strides:
                self.guarded = True
            view = self.staged.get(id(value))
            if view is None:
                buffer, strides = _host_array_to_device(value, 0)
                self.buffers.append(buffer)
                self.copy_back.append((value, buffer.pointer, strides))
                view = _View(buffer.pointer, value.shape, strides, value.dtype)
                self.staged[id(value)] = view
            self._add_array(dispatcher, index, value, view)
            return
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            scalar = value.item() if isinstance(value, np.ndarray) else value
            dtype = value.dtype
            code = _DTYPE_CODES.get(dtype)
            if code is None:
                self._argument_error(dispatcher, index, f"has unsupported type '{type(value).__name__}'")
            self.types.append(_DTYPE_NAMES[code])
            scalar = scalar.item() if isinstance(scalar, np.generic) else scalar
            # Integers travel as int64; a uint64 as its bit pattern.
            if code == 8 and scalar >= 2**63:
                scalar -= 2**64
            self.values.append(scalar)
            return
        if _is_torch_tensor(value):
            import torch
            if not value.is_cuda:
                self._argument_error(dispatcher, index, "is a PyTorch CPU tensor; pass a CUDA tensor or a NumPy array")
            self.torch = torch
            self._check_device(dispatcher, index, value.get_device())
            # The tensor's own accessors: its __cuda_array_interface__ builds
            # a dictionary in Python on every call, several times slower.
            dtype = _torch_numpy_dtype(torch, value.dtype)
            if dtype is None:
                self._dtype_error(dispatcher, index, value.dtype)
            view = _View(value.data_ptr(), tuple(value.shape), tuple(value.stride()), dtype)
            self._add_array(dispatcher, index, value, view)
            return
        # CuPy arrays and DeviceArrays are read through their own attributes
        # too; other GPU arrays through __cuda_array_interface__.
        if isinstance(value, DeviceArray):
            self.device_arrays = True
            self._add_array(dispatcher, index, value,
                            _View(value.pointer, value.shape, value._strides, value.dtype))
            return
        if _is_cupy_array(value) and hasattr(value, "data"):
            self.cupy = True
            self._check_device(dispatcher, index, value.device.id)
            strides = _element_strides(value.strides, value.itemsize)
            self._add_array(dispatcher, index, value, _View(value.data.ptr, value.shape, strides, value.dtype))
            return
        interface = getattr(value, "__cuda_array_interface__", None)
        if interface is not None:
            self._add_array(dispatcher, index, value, _interface_view(interface))
            return
        if isinstance(value, bool):
            self.types.append("bool")
        elif isinstance(value, int):
            if not -2**63 <= value < 2**63:
                self._argument_error(dispatcher, index, "is a Python int that does not fit in int64")
            self.types.append("int")
        elif isinstance(value, float):
            self.types.append("float")
        else:
            self._argument_error(dispatcher, index, f"has unsupported type '{type(value).__name__}'; CUDA kernels "
                                 "take CuPy arrays, PyTorch CUDA tensors, NumPy arrays, plait.DeviceArray and "
                                 "bool, int or float scalars")
        self.values.append(value)

    @staticmethod
    def _check_device(dispatcher, index, ordinal):
        wanted = _plait_device_ordinal()
        if ordinal is not None and ordinal != wanted:
            raise ValueError(f"{dispatcher.py_func.__name__}(): argument {index} is on GPU {ordinal}; plait runs "
                             f"CUDA kernels on GPU {wanted}")

    def signature(self):
        return ", ".join(self.types)

    def array_shapes(self):
        """The shapes of the array arguments, in order."""
        return [self.values[index][1] for index, _ in self.array_values]

    def copied_values(self):
        """(values, restore) for timing runs: the call's values with every
        array in a GPU copy of its own, arrays that share memory sharing
        their copy as they share the original; restore() queues on the
        call's stream a copy of the originals into them again. Copies keep
        each address's alignment modulo _SPAN_ALIGNMENT, so that vector
        accesses take the same path as on the originals."""
        spans = []
        for index, itemsize in self.array_values:
            pointer, shape, strides = self.values[index]
            low, high = _span(shape, strides)
            if high > low:
                spans.append((pointer + low * itemsize, pointer + high * itemsize, index))
        spans.sort()
        values = list(self.values)
        copies = []  # (DeviceBuffer, original start, bytes)
        group = []
        end = 0

        def copy_group():
            start = group[0][0] - group[0][0] % _SPAN_ALIGNMENT
            nbytes = end - start
            buffer = _core.device_alloc(nbytes)
            copies.append((buffer, start, nbytes))
            for _, _, index in group:
                pointer, shape, strides = values[index]
                values[index] = (buffer.pointer + (pointer - start), shape, strides)

        for span in spans:
            if group and span[0] >= end:
                copy_group()
                group = []
            group.append(span)
            end = max(end, span[1]) if len(group) > 1 else span[1]
        if group:
            copy_group()
        stream = self.stream

        def restore():
            for buffer, start, nbytes in copies:
                _core.copy_device(buffer.pointer, start, nbytes, stream)

        restore()
        return values, restore  # restore holds the copies' buffers

    def check_writes(self, dispatcher, kernel, args):
        """Refuses, as the CPU call path does, NumPy arguments the kernel
        writes that are read-only (their copy on the GPU would be written
        and not copied back) or repeat elements through a zero stride (the
        copy back would keep one of several written values)."""
        for index, written in enumerate(kernel.writes_param):
            value = args[index]
            if not written or not isinstance(value, np.ndarray) or value.ndim == 0:
                continue
            name = dispatcher._param_names[index]
            what = f"plait kernel {dispatcher.py_func.__name__}: argument '{name}' (parameter {index + 1}) "
            if not value.flags.writeable:
                raise ValueError(f"assignment destination is read-only: {what}is read-only, and the kernel writes "
                                 f"it (pass a writable copy, e.g. {name}.copy())")
            for k, (extent, stride) in enumerate(zip(value.shape, value.strides)):
                # An empty array repeats nothing (NumPy gives it zero strides).
                if stride == 0 and extent > 1 and value.size > 0:
                    raise ValueError(f"{what}has a zero stride in dimension {k}, so several of its elements share "
                                     f"memory, and the kernel writes it (pass a copy, e.g. {name}.copy())")

    def finish(self):
        """Copies NumPy arguments back from the GPU."""
        for array, pointer, strides in self.copy_back:
            if not array.flags.writeable or array.nbytes == 0:
                continue
            host = _copy_view_to_host(pointer, array.shape, strides, array.dtype, self.stream)
            np.copyto(array, host)

    def wrap_result(self, result):
        """A returned array as the caller's kind of array."""
        pointer, shape, strides, dtype_code, owner = result
        if owner is None:
            for obj, arg_pointer, arg_shape in self.borrowed:
                if arg_pointer == pointer and tuple(arg_shape) == tuple(shape):
                    return obj
            raise RuntimeError("plait: a returned array that is neither new nor an argument")
        dtype = _DTYPE_BY_CODE[dtype_code]
        device_array = DeviceArray(owner, pointer, shape, strides, dtype)
        if self.torch is not None:
            return self.torch.as_tensor(device_array, device="cuda")
        if self.cupy:
            import cupy
            return cupy.asarray(device_array)
        if self.device_arrays:
            return device_array
        return _copy_view_to_host(pointer, tuple(shape), tuple(strides), dtype, self.stream)


# Timing runs of a tuning candidate after its warm-up run; the median counts.
_TIMED_RUNS = 5


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
    """A kernel compiled for the GPU (@plait.jit(target="cuda")). Calls run in
    Python: arguments are classified and staged here (see the module
    docstring), then the compiled host part launches the device kernels."""

    _target = "cuda"

    def __init__(self, py_func, *, tuning=None, **options):
        super().__init__(py_func, **options)
        self._param_names = list(self._signature.parameters)
        self._by_call_signature = {}  # signature text of a call -> _core.Kernel
        # A tuned kernel (plait/tuning.py): its TuningSpace, its compiled
        # candidates by (signature, candidate text), the choice by
        # (signature, shape class), and explain()'s reports by signature.
        self._tuning = tuning
        self._variants = {}
        self._choices = {}
        self._tuning_reports = {}
        # (signature, array shapes) -> the chosen kernel: a repeated shape
        # skips the shape class and the lookups above.
        self._by_call_shapes = {}

    def __call__(self, *args, **kwargs):
        _require_cuda()
        if kwargs or len(args) != len(self._param_names):
            args = self._bind(args, kwargs)
        plan = _CallPlan(self, args)
        signature = plan.signature()
        if self._tuning is not None:
            shapes = (signature, *plan.array_shapes())
            kernel = self._by_call_shapes.get(shapes)
            if kernel is None:
                kernel = self._tuned_kernel(signature, plan)
                if (signature, tuning.shape_class(signature, shapes[1:])) in self._choices:
                    if len(self._by_call_shapes) >= _ARRAY_TYPES_KEPT:
                        self._by_call_shapes.clear()
                    self._by_call_shapes[shapes] = kernel
        else:
            kernel = self._by_call_signature.get(signature)
            if kernel is None:
                kernel = self._compile(signature)
                self._by_call_signature[signature] = kernel
        if plan.guarded:
            plan.check_writes(self, kernel, args)
        try:
            results = kernel.call_cuda(plan.values, plan.stream)
        except BaseException:
            # NumPy arguments get what the kernel wrote before the error, as
            # on the CPU; the kernel's error is the one raised.
            try:
                plan.finish()
            except Exception:  # noqa: BLE001
                pass
            raise
        plan.finish()
        values = [plan.wrap_result(r) if isinstance(r, tuple) else r for r in results]
        if kernel.returns_list:
            return values
        if kernel.returns_tuple:
            return tuple(values)
        return values[0] if values else None

    def _compile(self, signature):
        _require_cuda()
        return super()._compile(signature)

    def compile(self, signature):
        """Compiles the kernel for a signature string ahead of the first call
        (a tuned kernel: every candidate, so that the first call only times
        them)."""
        if self._tuning is not None:
            _require_cuda()
            kernels = [self._variant(signature, c) for c in self._tuning.candidates()]
            return kernels[0].signature
        kernel = self._compile(signature)
        self._by_call_signature[kernel.signature] = kernel
        return kernel.signature

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

    def _tuned_kernel(self, signature, plan):
        """The kernel of the call's shape class: its recorded choice, else
        the winner of a tuning run on copies of the arguments."""
        shape = tuning.shape_class(signature, plan.array_shapes())
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
        modules, constants = collect_globals(self.py_func)
        for name in self._tuning.constants:
            modules.pop(name, None)
            constants.pop(name, None)
        device = _core.cuda_device()
        return tuning.record_key([
            _core.compiler_version(), code.co_filename, code.co_firstlineno, self._source_text(),
            self.py_func.__name__, signature, shape, sorted(modules.items()),
            sorted((name, repr(value)) for name, value in constants.items()),
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
