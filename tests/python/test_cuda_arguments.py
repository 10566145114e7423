"""The CUDA call path's classification of arguments, which needs no GPU
(python/src/cuda_call_plan.h): GPU arrays described by
__cuda_array_interface__ (fake ones here: nothing reads their memory) and
plait.DeviceArray, NumPy arrays and scalars; the signature text, which the
CPU path spells alike; the strides a kernel gets; which NumPy arguments share
one span on the GPU; and the errors of arguments kernels do not take.
tests/gpu runs the calls themselves."""

import enum

import numpy as np
import pytest

import plait


def scale(a, b, c, d):
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] = b[i] * c + d


def cuda_kernel():
    return plait.jit(scale, target="cuda")


ADDRESS = 0x7F00_0000_0000


class FakeGpuArray:
    """A GPU array that only __cuda_array_interface__ describes."""

    def __init__(self, shape, typestr="<f8", strides=None, pointer=ADDRESS):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (pointer, False), "version": 3}
        if strides is not None:
            self.__cuda_array_interface__["strides"] = strides


def signature(*args):
    return cuda_kernel()._signature_of(*args)


def values(*args):
    return cuda_kernel()._cuda_call_plan(*args).values


@pytest.mark.parametrize("shape,strides,expected,element_strides", [
    ((3, 4), None, "f64[:, ::1]", (4, 1)),
    ((3, 4), (32, 8), "f64[:, ::1]", (4, 1)),
    ((3, 4), (8, 24), "f64[::1, :]", (1, 3)),
    ((3, 4), (64, 16), "f64[:, :]", (8, 2)),
    # Extents of 1 do not count, and get the canonical stride.
    ((1, 4), (7992, 8), "f64[:, ::1]", (4, 1)),
    ((4, 1), (8, 7992), "f64[:, ::1]", (1, 1)),
    ((2, 1, 3), (8, 7992, 16), "f64[::1, :, :]", (1, 2, 2)),
    ((5,), (-8,), "f64[:]", (-1,)),
    ((5,), (0,), "f64[:]", (0,)),
    ((2, 3, 4, 5), None, "f64[:, :, :, ::1]", (60, 20, 5, 1)),
    # An empty GPU array's layout follows its strides.
    ((0, 3), (8, 8), "f64[:, :]", (1, 1)),
])
def test_interface_arrays_in_place_with_their_layout(shape, strides, expected, element_strides):
    array = FakeGpuArray(shape, strides=strides)
    assert signature(array) == expected
    assert values(array) == [(ADDRESS, shape, element_strides)]


@pytest.mark.parametrize("typestr,spelled", [
    ("|b1", "b1"), ("|i1", "i8"), ("<i2", "i16"), ("<i4", "i32"), ("<i8", "i64"), ("|u1", "u8"), ("<u2", "u16"),
    ("<u4", "u32"), ("<u8", "u64"), ("<f4", "f32"), ("<f8", "f64"),
])
def test_interface_dtypes(typestr, spelled):
    itemsize = np.dtype(typestr).itemsize
    assert signature(FakeGpuArray((7,), typestr, (itemsize,))) == f"{spelled}[::1]"


def test_device_arrays_are_read_through_their_attributes():
    # Strides in elements; the buffer is only kept alive.
    array = plait.DeviceArray(None, ADDRESS, (2, 3), (1, 2), np.float32)
    assert signature(array, FakeGpuArray((6,)), 1.5, 2) == "f32[::1, :], f64[::1], float, int"
    assert values(array)[0] == (ADDRESS, (2, 3), (1, 2))


ELEMENT_TYPES = "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32 and float64"


@pytest.mark.parametrize("bad,message", [
    (FakeGpuArray((3,), ">f8"), f"scale() argument 'a' has unsupported dtype '>f8'; CUDA kernels take {ELEMENT_TYPES} "
                                "arrays"),
    (FakeGpuArray((3,), "<f2"), "scale() argument 'a' has unsupported dtype 'float16'"),
    (plait.DeviceArray(None, ADDRESS, (3,), (1,), np.complex64),
     "scale() argument 'a' has unsupported dtype 'complex64'"),
    (FakeGpuArray(()), "scale() argument 'a' is a 0-D GPU array; CUDA kernels take arrays of 1 to 4 dimensions"),
    (FakeGpuArray((1, 1, 1, 1, 2)), "scale() argument 'a' is a 5-D GPU array; CUDA kernels take arrays of 1 to 4 "
                                    "dimensions"),
    # The stride is read before the argument is named.
    (FakeGpuArray((3,), strides=(12,)), "a GPU array with byte stride 12 that is not a multiple of its item size 8"),
])
def test_gpu_arrays_kernels_do_not_take(bad, message):
    with pytest.raises(TypeError) as raised:
        signature(bad)
    assert str(raised.value).startswith(message)


def test_numpy_arrays_get_the_layout_of_their_gpu_copy():
    # C and Fortran order as they are; a strided view copied to C order.
    c = np.zeros((3, 4))
    f = np.asfortranarray(np.zeros((3, 4)))
    strided = np.zeros((3, 4))[:, ::2]
    assert signature(c, f, strided, np.zeros(0)) == "f64[:, ::1], f64[::1, :], f64[:, ::1], f64[::1]"
    # Before the copies, a NumPy argument's pointer is its host address.
    assert values(strided, f) == [(strided.ctypes.data, (3, 2), (2, 1)), (f.ctypes.data, (3, 4), (1, 3))]


def test_signature_text_is_the_cpu_paths():
    cpu = plait.jit(scale)
    for args in [(np.zeros((3, 4)), np.zeros((4, 3)).T, 1.5, True),
                 (np.zeros(3, np.float32), np.zeros(3, np.uint16), np.int8(3), np.array(2.5)),
                 (np.zeros((2, 2, 2, 2), np.bool_), np.zeros(0, np.int64), np.uint64(7), 3)]:
        assert cuda_kernel()._signature_of(*args) == cpu._signature_of(*args)


@pytest.mark.parametrize("value,spelled,passed", [
    (True, "bool", True), (3, "int", 3), (-2**63, "int", -2**63), (2.5, "float", 2.5),
    (np.float32(0.1), "f32", float(np.float32(0.1))), (np.int16(-7), "i16", -7), (np.bool_(True), "b1", True),
    # Integers travel as int64: a uint64 as its bit pattern.
    (np.uint64(2**64 - 1), "u64", -1), (np.array(2.5), "f64", 2.5), (np.array(9, np.uint8), "u8", 9),
    (enum.IntEnum("Size", "ONE TWO").TWO, "int", 2),
])
def test_scalars_pass_by_value(value, spelled, passed):
    assert signature(value) == spelled
    got = values(value)[0]
    assert got == passed and type(got) is type(passed)


@pytest.mark.parametrize("bad,message", [
    (2**63, "scale() argument 'a' is a Python int that does not fit in int64"),
    (np.float16(1), "scale() argument 'a' has unsupported type 'float16'"),
    (np.array(1, np.complex128), "scale() argument 'a' has unsupported type 'ndarray'"),
    ("x", "scale() argument 'a' has unsupported type 'str'; CUDA kernels take CuPy arrays, PyTorch CUDA tensors, "
          "NumPy arrays, plait.DeviceArray and bool, int or float scalars"),
    (np.zeros(3, np.float16), f"scale() argument 'a' has unsupported dtype 'float16'; CUDA kernels take "
                              f"{ELEMENT_TYPES} arrays"),
    (np.zeros((1,) * 5), "scale() argument 'a' is a 5-D GPU array; CUDA kernels take arrays of 1 to 4 dimensions"),
    (np.ma.masked_array(np.zeros(3)), "scale() argument 'a' is a masked array (numpy.ma.MaskedArray); plait kernels "
                                      "would ignore its mask: pass its .data, or .filled(value)"),
])
def test_arguments_kernels_do_not_take(bad, message):
    with pytest.raises(TypeError) as raised:
        signature(bad)
    assert str(raised.value) == message


def test_errors_name_the_parameter():
    with pytest.raises(TypeError, match="scale\\(\\) argument 'c' has unsupported type 'str'"):
        signature(np.zeros(3), np.zeros(3), "x", 1)


def test_overlapping_numpy_arrays_share_a_span_with_their_own_strides():
    base = np.arange(30.0)
    # Interleaved views: one span, each view with its strides (strided).
    assert signature(base[::2], base[1::2]) == "f64[:], f64[:]"
    # A chain of overlaps (a with b, b with c) is one span.
    assert signature(base[0:10:2], base[8:20:2], base[18:30:2]) == "f64[:], f64[:], f64[:]"
    # Views that do not overlap, or of different arrays, are copies of
    # their own (contiguous on the GPU).
    assert signature(base[0:10:2], base[10:20:2]) == "f64[::1], f64[::1]"
    assert signature(base[::2], np.arange(30.0)[1::2]) == "f64[::1], f64[::1]"
    # One array passed twice is one copy; two views alike share a span.
    view = base[::3]
    plan = cuda_kernel()._cuda_call_plan(view, view)
    assert plan.signature == "f64[::1], f64[::1]"
    assert plan.values[0] == plan.values[1]
    assert signature(base[::3], base[::3]) == "f64[:], f64[:]"
    # Strided 2-D views: rows of one matrix, and a column against a row.
    m = np.zeros((6, 6))
    assert signature(m[::2], m[1::2]) == "f64[:, :], f64[:, :]"
    assert signature(m[:, 0], m[0]) == "f64[:], f64[::1]"
    assert values(m[:, 0], m[0]) == [(m.ctypes.data, (6,), (6,)), (m.ctypes.data, (6,), (1,))]


def test_overlapping_misaligned_arrays_keep_copies_of_their_own():
    raw = np.zeros(200, np.uint8)
    x = raw[1:161].view(np.float64)  # an address that is not a multiple of 8
    assert x.ctypes.data % 8
    assert signature(x[::2], x[1::2]) == "f64[::1], f64[::1]"
    # Byte strides that are not multiples of the item size.
    y = np.lib.stride_tricks.as_strided(raw[:160].view(np.float64), shape=(10,), strides=(12,))
    z = np.lib.stride_tricks.as_strided(raw[8:168].view(np.float64), shape=(10,), strides=(12,))
    assert signature(y, z) == "f64[::1], f64[::1]"


def test_empty_numpy_arrays_share_nothing():
    base = np.arange(10.0)
    assert signature(base[3:3], base[::2], base[1::2][:0]) == "f64[::1], f64[::1], f64[::1]"


def test_array_shapes_of_a_plan():
    plan = cuda_kernel()._cuda_call_plan(np.zeros((2, 3)), 1.5, FakeGpuArray((4,)), np.zeros(5, np.int32))
    assert plan.array_shapes == [(2, 3), (4,), (5,)]
    assert plan.stream == 0
