"""CUDA kernels called with array arguments that share memory (views of one
array, docs/language.md): an array statement that writes one and reads
another gives NumPy's answer. Everywhere: the kernels of overlap_kernels.py
compile with nvcc and NVRTC for sm_90 and the host part with the system
compiler, and the host tests the overlap before it launches the statement's
kernels. On a GPU: each kernel runs, compiled and undecorated, on views of
two copies of one random buffer, passed as NumPy views (staged as one span),
views of one plait.DeviceArray and of one PyTorch tensor; shifted copies
both ways, rows, a transposed view, a reduction into a column of its
operand, `C[:] = A @ B` whose output overlaps an operand (the BLAS entry
declines, the loops run), disjoint views, one array twice, sizes 0, 1, odd."""

import pathlib
import re

import numpy as np
import pytest

import overlap_kernels as O
import plait
from test_cuda_codegen import PLAITC, compile_tests, emit_from

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "overlap_kernels.py"
CASES = [(name, signature) for name, signatures in O.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def emit(tmp_path, name, signature, what, *extra):
    return emit_from(KERNELS_FILE, tmp_path, name, signature, what, *extra).read_text()


# ---------------------------------------------------------------- everywhere


(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES, boundscheck=False)


@compiles
def test_the_host_tests_the_overlap_before_the_launches(tmp_path):
    host = emit(tmp_path, "add_one", O.KERNELS["add_one"][0], "cpp")
    test = re.search(r"(v__overlap\d+) = \(plait::memory_overlaps\(", host)
    assert test, host
    assert re.search(r"if \(\(?[^\n]*" + test.group(1), host[test.end():]), host


# ---------------------------------------------------------------- on a GPU


class _SharedView:
    """A view of a GPU array given by __cuda_array_interface__: `offset`
    elements past the base's first, with its own shape and element strides."""

    def __init__(self, base, offset, shape, strides):
        self.base = base
        interface = base.__cuda_array_interface__
        self.itemsize = np.dtype(interface["typestr"]).itemsize
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": interface["typestr"], "version": 3,
            "data": (interface["data"][0] + offset * self.itemsize, False),
            "strides": tuple(s * self.itemsize for s in strides)}


def _device_views(base, views, dtype):
    """The views that views(host array) makes, as views of the GPU array `base`
    (of NumPy dtype `dtype`)."""
    host = np.empty(tuple(base.shape), dtype=dtype)
    start = host.__array_interface__["data"][0]
    result = []
    for v in views(host):
        if not isinstance(v, np.ndarray):
            result.append(v)
            continue
        offset = (v.__array_interface__["data"][0] - start) // v.itemsize
        result.append(_SharedView(base, offset, v.shape, [s // v.itemsize for s in v.strides]))
    return result


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


KINDS = ["numpy", "device",
         pytest.param("torch", marks=pytest.mark.skipif(_torch() is None, reason="PyTorch with CUDA is not installed"))]


def check_views(fn, base, views, kind, *scalars, rtol=0.0):
    """fn compiled for CUDA and undecorated, on views(copy of base); the two
    buffers must match afterwards."""
    expected = base.copy()
    fn(*views(expected), *scalars)
    kernel = plait.jit(fn, target="cuda")
    if kind == "numpy":
        got = base.copy()
        kernel(*views(got), *scalars)
    elif kind == "device":
        gpu = plait.to_device(base)
        kernel(*_device_views(gpu, views, base.dtype), *scalars)
        got = gpu.to_host()
    else:
        torch = _torch()
        gpu = torch.from_numpy(base.copy()).cuda()
        kernel(*_device_views(gpu, views, base.dtype), *scalars)
        got = gpu.cpu().numpy()
    if rtol:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got, expected)
    return kernel


def floats(rng, shape):
    return rng.random(shape) * 2 - 1


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", (0, 1, 7, 1000, 100003))
def test_shifted_copies_both_directions(rng, kind, n):
    g = floats(rng, n + 1)
    check_views(O.add_one, g, lambda x: (x[1:], x[:-1]), kind)
    check_views(O.add_one, g, lambda x: (x[:-1], x[1:]), kind)
    ints = rng.integers(-100, 100, n + 3)
    check_views(O.in_place_add, ints, lambda x: (x[2:], x[:-2]), kind)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", (1, 2, 7, 33))
def test_rows_and_a_transposed_view(rng, kind, n):
    m = floats(rng, (n + 1, n + 1))
    check_views(O.add_one, m, lambda x: (x[1:, :], x[:-1, :]), kind)
    check_views(O.add_one, m, lambda x: (x[:-1, 1:], x[1:, :-1]), kind)
    check_views(O.add_one, m, lambda x: (x, x.T), kind)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", (1, 5, 33))
def test_reduction_into_a_column_of_its_operand(rng, kind, n):
    m = floats(rng, (n, n))
    check_views(O.row_sums, m, lambda x: (x[:, 0], x), kind, rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", (1, 7, 64))
def test_matrix_product_whose_output_overlaps_an_operand(rng, kind, n):
    buf = rng.random((2 * n + 1, 2 * n + 1)) + 0.5
    check_views(O.product, buf, lambda x: (x[:n, :n], x[:n, 1:n + 1], x[1:n + 1, :n]), kind, rtol=1e-12)
    check_views(O.gemm, buf, lambda x: (x[1:n + 1, :n], x[:n, :n], x[:n, n:2 * n]), kind, 1.5, 0.5, rtol=1e-12)
    # Disjoint blocks of one buffer: the plain nest (and the library) run.
    check_views(O.product, buf, lambda x: (x[:n, :n], x[n:2 * n, :n], x[n:2 * n, n:2 * n]), kind, rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
def test_disjoint_views_one_array_twice_and_a_time_loop(rng, kind):
    g = floats(rng, 1000)
    check_views(O.add_one, g, lambda x: (x[:500], x[500:]), kind)
    check_views(O.add_one, g, lambda x: (x, x), kind)
    for steps in (0, 1, 3):
        check_views(O.smooth_steps, g, lambda x: (x[1:], x[:-1]), kind, steps, rtol=1e-12)
        check_views(O.smooth_steps, g, lambda x: (x, x), kind, steps, rtol=1e-12)
