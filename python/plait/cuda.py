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

import numpy as np

from . import _core
from .dispatcher import Dispatcher

# plait dtype codes (runtime/abi.h) <-> NumPy
_DTYPE_CODES = {np.dtype(np.bool_): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
                np.dtype(np.int64): 4, np.dtype(np.uint8): 5, np.dtype(np.uint16): 6, np.dtype(np.uint32): 7,
                np.dtype(np.uint64): 8, np.dtype(np.float32): 9, np.dtype(np.float64): 10}
_DTYPE_NAMES = {0: "b1", 1: "i8", 2: "i16", 3: "i32", 4: "i64", 5: "u8", 6: "u16", 7: "u32", 8: "u64", 9: "f32",
                10: "f64"}
_DTYPE_LIST = "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32 and float64"
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
        self.staged = {}      # id(NumPy array) -> its _View on the GPU, so a repeated argument is one copy
        self.torch = None
        self.cupy = False
        self.device_arrays = False
        self.stream = 0
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
        self.values.append((view.pointer, view.shape, strides))
        self.borrowed.append((obj, view.pointer, view.shape))

    def _classify(self, dispatcher, index, value):
        if isinstance(value, np.ndarray) and value.ndim > 0:
            if value.dtype not in _DTYPE_CODES:
                self._dtype_error(dispatcher, index, value.dtype)
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


class CudaDispatcher(Dispatcher):
    """A kernel compiled for the GPU (@plait.jit(target="cuda")). Calls run in
    Python: arguments are classified and staged here (see the module
    docstring), then the compiled host part launches the device kernels."""

    _target = "cuda"

    def __init__(self, py_func, **options):
        super().__init__(py_func, **options)
        self._param_names = list(self._signature.parameters)
        self._by_call_signature = {}  # signature text of a call -> _core.Kernel

    def __call__(self, *args, **kwargs):
        _require_cuda()
        if kwargs or len(args) != len(self._param_names):
            args = self._bind(args, kwargs)
        plan = _CallPlan(self, args)
        signature = plan.signature()
        kernel = self._by_call_signature.get(signature)
        if kernel is None:
            kernel = self._compile(signature)
            self._by_call_signature[signature] = kernel
        try:
            results = kernel.call_cuda(plan.values, plan.stream, self.py_func.__code__.co_filename)
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
        if not values:
            return None
        return tuple(values) if kernel.returns_tuple else values[0]

    def _compile(self, signature):
        _require_cuda()
        return super()._compile(signature)

    def compile(self, signature):
        """Compiles the kernel for a signature string ahead of the first call."""
        kernel = self._compile(signature)
        self._by_call_signature[kernel.signature] = kernel
        return kernel.signature

    def inspect_source(self, signature=None):
        """The generated CUDA C++, then the host C++ that launches it."""
        kernel = self._kernel(signature)
        return kernel.device_source + "\n// ======== host part (C++)\n" + kernel.source

    def inspect_ptx(self, signature=None):
        """The PTX NVRTC generated for the device part."""
        return self._kernel(signature).ptx
