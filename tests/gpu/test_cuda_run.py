"""CUDA kernels on the GPU, differentially: each kernel of cuda_kernels.py runs
compiled for target="cuda" and as the undecorated Python function on fresh
random inputs; outputs are poisoned before each run; results, returned types
and every array argument must match. Arrays are passed as NumPy arrays (copied
to the GPU and back), plait.DeviceArray, CuPy arrays and PyTorch tensors
(each when installed). Skipped, with the reason, where CUDA is unavailable."""

import ctypes
import math

import numpy as np
import pytest

import cuda_kernels as K
import plait

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

SIZES = (0, 1, 7, 33, 1000, 100003)
# A reduction's result has the type of its updates only once there is one
# (`total = 0.0; total += f32` is float32), as in Python: scalar results use
# non-empty inputs.
NONEMPTY = SIZES[1:]


def _optional(module):
    try:
        return __import__(module)
    except ImportError:
        return None


cupy = _optional("cupy")
torch = _optional("torch")
if torch is not None and not torch.cuda.is_available():
    torch = None

KINDS = ["numpy", "device",
         pytest.param("cupy", marks=pytest.mark.skipif(cupy is None, reason="CuPy is not installed")),
         pytest.param("torch", marks=pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed"))]


def to_kind(value, kind):
    """A NumPy argument as the array kind under test (scalars unchanged)."""
    if not isinstance(value, np.ndarray):
        return value
    if kind == "numpy":
        return value.copy(order="K")
    if kind == "device":
        return plait.to_device(value)
    if kind == "cupy":
        return cupy.asarray(value)
    return torch.from_numpy(np.ascontiguousarray(value)).cuda()


def to_numpy(value):
    if cupy is not None and isinstance(value, cupy.ndarray):
        return cupy.asnumpy(value)
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, plait.DeviceArray):
        return value.to_host()
    return value


def expected_array_type(kind):
    return {"numpy": np.ndarray, "device": plait.DeviceArray,
            "cupy": cupy.ndarray if cupy is not None else None,
            "torch": torch.Tensor if torch is not None else None}[kind]


def assert_same(got, expected, rtol, kind):
    if expected is None:
        assert got is None
        return
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e, rtol, kind)
        return
    if isinstance(expected, np.ndarray):
        assert isinstance(got, expected_array_type(kind)), type(got)
        got = to_numpy(got)
        assert got.dtype == expected.dtype and got.shape == expected.shape
    else:
        assert type(got) is type(expected), (type(got), type(expected))
    if rtol:
        np.testing.assert_allclose(got, expected, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, expected)


def check(fn, args, kind, poison=(), rtol=0.0, **options):
    """Runs fn compiled for CUDA and as Python on copies of args; arguments at
    the indices in `poison` are filled with garbage first (NaN, or -7 for
    integers) in both runs."""
    args = list(args)
    for k in poison:
        fill = np.nan if args[k].dtype.kind == "f" else (True if args[k].dtype == np.bool_ else -7)
        args[k] = np.full_like(args[k], fill)
    expected_args = [a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args]
    expected = fn(*expected_args)
    kernel = plait.jit(fn, target="cuda", **options)
    gpu_args = [to_kind(a, kind) for a in args]
    got = kernel(*gpu_args)
    assert_same(got, expected, rtol, kind)
    for got_arg, want in zip(gpu_args, expected_args):
        if isinstance(want, np.ndarray):
            got_host = to_numpy(got_arg)
            if rtol:
                np.testing.assert_allclose(got_host, want, rtol=rtol)
            else:
                np.testing.assert_array_equal(got_host, want)
    return kernel


def floats(rng, shape, dtype=np.float64):
    return (rng.random(shape) * 2 - 1).astype(dtype)


def ints(rng, shape, dtype=np.int64, low=-100, high=100):
    return rng.integers(low, high, size=shape).astype(dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_vector_add(rng, kind, n, dtype):
    make = floats if np.dtype(dtype).kind == "f" else ints
    check(K.vector_add, [make(rng, n, dtype), make(rng, n, dtype), np.empty(n, dtype)], kind, poison=[2])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_saxpy_with_a_weak_scalar_keeps_float32(rng, kind, n):
    check(K.saxpy, [2.5, floats(rng, n, np.float32), floats(rng, n, np.float32)], kind)


@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", NONEMPTY)
def test_float_sum_reduction(rng, kind, n):
    check(K.dot, [floats(rng, n), floats(rng, n)], kind, rtol=1e-9)
    check(K.dot, [floats(rng, n, np.float32), floats(rng, n, np.float32)], kind, rtol=2e-3)


@pytest.mark.parametrize("n", NONEMPTY)
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_sum_reduction_is_exact(rng, n, dtype):
    check(K.int_sum, [ints(rng, n, dtype)], "numpy")


@pytest.mark.parametrize("n", [1, 7, 1000, 100003])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_min_and_max_reductions(rng, n, dtype):
    make = floats if np.dtype(dtype).kind == "f" else ints
    check(K.min_max, [make(rng, n, dtype)], "numpy")


@pytest.mark.parametrize("n", NONEMPTY)
def test_product_reduction(rng, n):
    check(K.product, [1 + floats(rng, n) * 1e-4], "numpy", rtol=1e-9)


@pytest.mark.parametrize("n", NONEMPTY)
def test_bool_reduction(rng, n):
    flags = rng.random(n) < 0.001
    flags[n // 2] = True
    check(K.bool_any, [flags], "numpy")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_histogram_with_atomic_increments(rng, kind, n, dtype):
    check(K.histogram, [ints(rng, n, dtype, 0, 1000), np.zeros(17, dtype)], kind)


def allocation_of(pointer):
    """(base, bytes) of the GPU allocation holding `pointer` (cuMemGetAddressRange)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    context = ctypes.c_void_p()
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0) == 0
    assert cuda.cuCtxPushCurrent_v2(context) == 0
    try:
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        assert cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pointer)) == 0
        return base.value, size.value
    finally:
        cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        cuda.cuDevicePrimaryCtxRelease_v2(0)


@pytest.mark.parametrize("n", [1, 17, 18, 19, 20])
def test_small_int_arrays_are_allocated_in_whole_words(rng, n):
    # An 8- or 16-bit element's atomic update is a compare-and-swap of the
    # aligned 32-bit word holding it: the allocation holds that word for the
    # last elements too (compute-sanitizer memcheck reported reads past a
    # 17-byte uint8 histogram's allocation before).
    for dtype in (np.uint8, np.int16):
        device = plait.to_device(np.zeros(n, dtype))
        pointer = device.__cuda_array_interface__["data"][0]
        base, size = allocation_of(pointer)
        assert base == pointer and size % 4 == 0 and size >= n * np.dtype(dtype).itemsize
    check(K.histogram, [ints(rng, 1000, np.uint8, 0, 100), np.zeros(n, np.uint8)], "numpy")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_atomic_add_min_max(rng, n, dtype):
    make = floats if np.dtype(dtype).kind == "f" else ints
    big = np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).max
    acc = np.array([0, -big, big], dtype=dtype)
    rtol = {np.float64: 1e-9, np.float32: 1e-3}.get(dtype, 0.0)
    check(K.atomic_ops, [make(rng, n, dtype), acc], "numpy", rtol=rtol)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(0, 3, 2), (1, 1, 1), (5, 7, 3), (64, 33, 70)])
def test_matmul_collapsed_nest(rng, kind, shape):
    n, m, p = shape
    # Few workers: a team per element, whose lanes split the k loop (the
    # simd loop lets its sum reassociate).
    # Positive data, so that no element is a cancellation near 0.
    check(K.matmul, [rng.random((n, m)), rng.random((m, p)), np.empty((n, p))], kind, poison=[2], rtol=1e-12)


@pytest.mark.parametrize("layout", ["F", "strided", "transposed"])
@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
def test_strided_and_fortran_arrays(rng, layout, kind):
    if kind == "cupy" and cupy is None or kind == "torch" and torch is None:
        pytest.skip(f"{kind} is not installed")
    base = floats(rng, (40, 26))
    if layout == "F":
        m = np.asfortranarray(base[:20, :13])
    elif layout == "strided":
        m = base[::2, ::2]
    else:
        m = base[:13, :20].T
    out = np.empty(m.shape[0])
    expected_out = out.copy()
    K.strided_2d(m, expected_out)
    kernel = plait.jit(K.strided_2d, target="cuda")
    if kind == "numpy":
        got_out = out
        kernel(m, got_out)
    else:
        module = cupy if kind == "cupy" else torch
        big = module.asarray(base) if kind == "cupy" else torch.from_numpy(base).cuda()
        view = {"F": big[:20, :13].T.copy().T if kind == "cupy" else big[:20, :13].t().contiguous().t(),
                "strided": big[::2, ::2], "transposed": big[:13, :20].T}[layout]
        got_out = to_kind(out, kind)
        kernel(view, got_out)
    np.testing.assert_array_equal(to_numpy(got_out), expected_out)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [3, 100, 10001])
def test_time_loop_of_parallel_loops(rng, kind, n):
    check(K.stencil_steps, [floats(rng, n), floats(rng, n), 7], kind)
    check(K.jacobi_1d, [5, floats(rng, n), floats(rng, n)], kind)


# Persistent kernels (docs/cuda.md): a time loop of parallel loops runs as one
# launch, in one block when a step has at most 4096 iterations per parallel
# loop (16384 with its arrays on chip), else in a cooperative grid; above 4 Mi
# iterations, one launch per loop per step. The sizes cover all of them, odd
# shapes, and 0 and 1 steps.
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 4, 1001, 5003, 16387, 40001])
@pytest.mark.parametrize("steps", [0, 1, 2, 7])
def test_persistent_jacobi_1d(rng, kind, n, steps):
    kernel = check(K.jacobi_1d, [steps, floats(rng, n), floats(rng, n)], kind)
    assert "all steps in one persistent CUDA kernel" in kernel.explain()


def test_persistent_time_loop_over_4_mi_iterations_launches_each_step(rng):
    n = (1 << 22) + 11
    a, b = floats(rng, n), floats(rng, n)
    want_a, want_b = a.copy(), b.copy()
    for _ in range(3):
        want_b[1:-1] = 0.33333 * (want_a[:-2] + want_a[1:-1] + want_a[2:])
        want_a[1:-1] = 0.33333 * (want_b[:-2] + want_b[1:-1] + want_b[2:])
    kernel = plait.jit(K.jacobi_1d, target="cuda")
    kernel(3, a, b)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(3, 3), (5, 7), (130, 129), (181, 163)])
@pytest.mark.parametrize("steps", [0, 2, 5])
def test_persistent_jacobi_2d(rng, kind, shape, steps):
    check(K.jacobi_2d_steps, [steps, floats(rng, shape), floats(rng, shape)], kind)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_persistent_jacobi_2d_strided(rng, dtype):
    a, b = floats(rng, (61, 90), dtype), floats(rng, (61, 90), dtype)
    want_a, want_b = a.copy(), b.copy()
    K.jacobi_2d_steps(4, want_a[:, ::2], want_b[:, 1::2])
    plait.jit(K.jacobi_2d_steps, target="cuda")(4, a[:, ::2], b[:, 1::2])
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [2, 9, 30])
@pytest.mark.parametrize("steps", [1, 4])
def test_persistent_heat_3d(rng, kind, n, steps):
    check(K.heat_3d_steps, [steps, floats(rng, (n, n, n)), floats(rng, (n, n, n))], kind)


@pytest.mark.parametrize("n", [0, 1, 17, 300])
def test_persistent_loop_whose_bounds_depend_on_the_step(rng, n):
    lower = np.tril(floats(rng, (n, n))) + 4.0 * np.eye(n)
    check(K.forward_substitution, [lower, np.empty(n), floats(rng, n)], "numpy", poison=[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 5, 1000, 20001])
@pytest.mark.parametrize("steps", [0, 1, 6])
def test_persistent_loop_with_step_scalars_and_the_last_step_returned(rng, kind, n, steps):
    check(K.step_scalars, [floats(rng, n), floats(rng, n), steps], kind)


def test_persistent_loop_with_step_scalars_float32(rng):
    check(K.step_scalars, [floats(rng, 999, np.float32), floats(rng, 999, np.float32), 5], "numpy")


# NPBench's slice forms: shape assertions and broadcast versions (`if`s) in
# each step, and `ey[0, :] = fict[t]` reading an array the loop never writes.
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape,steps", [((3, 2), 0), ((1, 1), 2), ((5, 7), 3), ((200, 221), 4)])
def test_persistent_fdtd_2d_slices(rng, kind, shape, steps):
    kernel = check(K.fdtd_2d_slices, [steps, floats(rng, shape), floats(rng, shape), floats(rng, shape),
                                      floats(rng, steps)], kind)
    assert "all steps in one persistent CUDA kernel" in kernel.explain()
    # The usual version's step: its `ey` rows and `ex` need no barriers between them.
    assert kernel.explain().count("no barrier between the parallel loops") == 2


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n,steps", [(2, 3), (9, 4), (31, 3)])
def test_persistent_heat_3d_slices(rng, kind, n, steps):
    check(K.heat_3d_slices, [steps, floats(rng, (n, n, n)), floats(rng, (n, n, n))], kind)


def test_persistent_heat_3d_slices_float32(rng):
    check(K.heat_3d_slices, [4, floats(rng, (12, 9, 14), np.float32), floats(rng, (12, 9, 14), np.float32)], "numpy")


# On chip (docs/cuda.md): in one block, with at least two steps, the arrays
# of a persistent kernel are copied into shared memory when they fit and do
# not share memory. (120, 110) float64 does not fit (277 KB) and runs on the
# arrays in global memory; 1 step never copies.
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (33, 40), (120, 110)])
@pytest.mark.parametrize("steps", [1, 2, 5])
def test_persistent_on_chip_arrays_of_three_types(rng, kind, shape, steps):
    kernel = check(K.mixed_dtype_steps, [floats(rng, shape), floats(rng, shape), ints(rng, shape, np.int32),
                                         rng.random(shape) < 0.5, steps], kind)
    assert "on copies of the arrays there" in kernel.explain()


@pytest.mark.parametrize("shape", [(4, 3), (37, 29)])
def test_persistent_on_chip_fortran_order_and_strided_views(rng, shape):
    x, y = np.asfortranarray(floats(rng, shape, np.float32)), np.asfortranarray(floats(rng, shape, np.float32))
    counts = np.asfortranarray(ints(rng, shape, np.int32))
    flags = (rng.random((shape[0], 2 * shape[1])) < 0.5)[:, ::2]
    check(K.mixed_dtype_steps, [x, y, counts, flags, 4], "numpy")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 1000])
def test_persistent_on_chip_one_array_passed_twice(rng, kind, n):
    x = floats(rng, n)
    want = x.copy()
    K.aliasing_steps(want, want, 3)
    got = to_kind(x, kind)
    plait.jit(K.aliasing_steps, target="cuda")(got, got, 3)
    np.testing.assert_array_equal(to_numpy(got), want)


def test_persistent_on_chip_step_that_raises(rng):
    # The first step raises after updating `a`: the later steps do not run
    # (docs/cuda.md, "Errors on the device"), so `a` holds that step's values.
    a = floats(rng, 100)
    want = a.copy()
    with pytest.raises(ValueError):
        K.shape_checked_steps(want, floats(rng, 2), 3)
    with pytest.raises(ValueError):
        plait.jit(K.shape_checked_steps, target="cuda")(a, floats(rng, 2), 3)
    np.testing.assert_array_equal(a, want)
    check(K.shape_checked_steps, [floats(rng, 100), floats(rng, 3), 3], "numpy")


# Arrays in registers (docs/cuda.md): in one block, where the on-chip copies
# could be made, 1-D arrays the steps write at their loops' variable plus a
# constant live in registers, 12 float64 elements of each per thread for
# jacobi_1d (12288 at most). The launch log says which version ran: 12289
# elements fall back to the copies in shared memory, one step and arrays that
# share memory to the arrays in global memory.
def launched(capfd):
    return [line.split()[2] for line in capfd.readouterr().err.splitlines() if line.startswith("plait: launch ")]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n,version", [(1, "_registers"), (2, "_registers"), (13, "_registers"),
                                       (1001, "_registers"), (12288, "_registers"), (12289, "_onchip")])
@pytest.mark.parametrize("steps", [2, 7])
def test_persistent_registers_jacobi_1d(rng, capfd, monkeypatch, kind, n, version, steps):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    kernel = check(K.jacobi_1d, [steps, floats(rng, n), floats(rng, n)], kind)
    assert launched(capfd) == ["plait_jacobi_1d_k0" + version]
    assert "those arrays live in registers instead (12 consecutive elements" in kernel.explain()


@pytest.mark.parametrize("n", [3, 40, 12000])
@pytest.mark.parametrize("steps", [2, 3])
def test_persistent_registers_jacobi_1d_slices(rng, capfd, monkeypatch, n, steps):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    check(K.jacobi_1d_slices, [steps + 1, floats(rng, n), floats(rng, n)], "numpy")
    assert any(name.endswith("_registers") for name in launched(capfd))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [4, 5, 100, 3001, 12287])
@pytest.mark.parametrize("steps", [2, 5])
def test_persistent_registers_of_three_types_and_wide_halos(rng, capfd, monkeypatch, kind, n, steps):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    check(K.register_stencil_steps, [floats(rng, n), floats(rng, n, np.float32), ints(rng, n, np.int32),
                                     floats(rng, n), steps], kind)
    assert launched(capfd) == ["plait_register_stencil_steps_k0_registers"]


def test_persistent_registers_strided_views_and_one_step(rng, capfd, monkeypatch):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    a, b = floats(rng, 2 * 3001), floats(rng, 3 * 3001)
    want_a, want_b = a.copy(), b.copy()
    K.jacobi_1d(4, want_a[::2], want_b[::3])
    plait.jit(K.jacobi_1d, target="cuda")(4, a[::2], b[::3])
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)
    check(K.jacobi_1d, [1, floats(rng, 500), floats(rng, 500)], "numpy")
    assert launched(capfd) == ["plait_jacobi_1d_k0_registers", "plait_jacobi_1d_k0"]


def test_persistent_registers_not_for_arrays_that_share_memory(rng, capfd, monkeypatch):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    x = floats(rng, 1000)
    want = x.copy()
    K.aliasing_steps(want, want, 3)
    plait.jit(K.aliasing_steps, target="cuda")(x, x, 3)
    np.testing.assert_array_equal(x, want)
    check(K.aliasing_steps, [floats(rng, 1000), floats(rng, 1000), 3], "numpy")
    assert launched(capfd) == ["plait_aliasing_steps_k0", "plait_aliasing_steps_k0_registers"]


@pytest.mark.parametrize("n", [3, 500, 12000])
def test_persistent_registers_iterations_that_continue(rng, capfd, monkeypatch, n):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    check(K.skipping_steps, [floats(rng, n), floats(rng, n), 4], "numpy")
    assert launched(capfd) == ["plait_skipping_steps_k0_registers"]


def test_persistent_registers_refused_say_why(rng):
    kernel = check(K.mixed_dtype_steps, [floats(rng, (5, 7)), floats(rng, (5, 7)), ints(rng, (5, 7), np.int32),
                                         rng.random((5, 7)) < 0.5, 3], "numpy")
    assert "its arrays are not kept in registers in one block: the parallel loop at line" in kernel.explain()


# Barriers between a step's loops (docs/cuda.md): a loop followed by one that
# touches no element written since the last barrier, and writes none read,
# needs no barrier. In one block, on chip and in a cooperative grid
# ((400, 450): 179550 iterations per loop), the results match Python's.
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(2, 3), (5, 7), (64, 80), (400, 450)])
@pytest.mark.parametrize("steps", [1, 4])
def test_persistent_fdtd_2d_loops_with_fewer_barriers(rng, kind, shape, steps):
    kernel = check(K.fdtd_2d_loops, [steps, floats(rng, shape), floats(rng, shape), floats(rng, shape),
                                     floats(rng, steps)], kind)
    assert kernel.explain().count("no barrier between the parallel loops") == 2


@pytest.mark.parametrize("shape", [(5, 7), (400, 450)])
def test_persistent_fdtd_2d_loops_on_one_array_passed_twice_keeps_its_barriers(rng, shape):
    # `ex` and `ey` one array: the `ey` and `ex` updates then touch the same
    # elements, and the host's overlap test turns the barriers back on.
    x, hz, fict = floats(rng, shape), floats(rng, shape), floats(rng, 3)
    want_x, want_hz = x.copy(), hz.copy()
    K.fdtd_2d_loops(3, want_x, want_x, want_hz, fict)
    plait.jit(K.fdtd_2d_loops, target="cuda")(3, x, x, hz, fict)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(hz, want_hz)


@pytest.mark.parametrize("shape", [(3, 5), (200, 300)])
def test_persistent_barrier_kept_where_a_loop_reads_what_the_last_wrote(rng, shape):
    kernel = check(K.row_zero_read_steps, [5, floats(rng, shape), floats(rng, shape), floats(rng, 5)], "numpy")
    assert "no barrier between" not in kernel.explain()


def test_time_loop_that_needs_the_host_launches_each_step_and_says_why(rng):
    kernel = check(K.host_counted_steps, [floats(rng, 100), 4], "numpy")
    assert "`count` is assigned in the loop body and read after the loop" in kernel.explain()
    kernel = check(K.element_scalar_steps, [floats(rng, 100), 3], "numpy")
    assert "assigns `s` from elements of an array the loop writes" in kernel.explain()
    kernel = check(K.normalised_steps, [floats(rng, 100), 3], "numpy", rtol=1e-12)
    assert "has a reduction, whose value goes to the host after each step" in kernel.explain()


@pytest.mark.parametrize("kind", KINDS)
def test_fdtd_step(rng, kind):
    check(K.fdtd_step, [floats(rng, (50, 41)), floats(rng, (50, 41)), floats(rng, (50, 41))], kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_returned_arrays_come_back_as_the_argument_kind(rng, kind, n):
    check(K.scaled, [floats(rng, n), 3.0], kind)
    check(K.scaled, [ints(rng, n, np.int32), 3], kind)


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_filled_allocations(n):
    check(K.filled, [n], "numpy")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_serial_code_touching_arrays_runs_on_the_device(rng, kind, n):
    if n == 0:
        # With no iteration Python's accumulator is still the float literal;
        # the kernel's has its one static type, numpy.float64 (a known
        # difference of type, not of value: docs/language.md).
        got = plait.jit(K.serial_prefix, target="cuda")(np.empty(0), np.empty(0))
        assert got == K.serial_prefix(np.empty(0), np.empty(0))
        return
    check(K.serial_prefix, [floats(rng, n), np.empty(n)], kind, poison=[1])


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_host_reads_of_array_elements(rng, n):
    x = np.abs(floats(rng, n))
    check(K.first_negative, [x], "numpy")
    x[n // 2] = -1.0
    check(K.first_negative, [x], "numpy")
    check(K.get_item, [x, n - 1], "numpy")


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-13), (np.float32, 1e-5)])
def test_math_functions(rng, dtype, rtol):
    check(K.math_functions, [floats(rng, 1000, dtype) * 10, np.empty(1000, dtype)], "numpy", poison=[1], rtol=rtol)


def test_math_domain_error_on_the_device_is_a_value_error(rng):
    x = np.abs(floats(rng, 1000)) + 0.5
    check(K.python_math_errors, [x, np.empty(1000)], "numpy", poison=[1], rtol=1e-13)
    x[500] = 0.0
    kernel = plait.jit(K.python_math_errors, target="cuda")
    with pytest.raises(ValueError, match="math domain error"):
        kernel(x, np.empty(1000))
    with pytest.raises(ValueError, match="math domain error"):
        math.log(0.0)
    # The error record is cleared after an error: a good call on the same
    # stream succeeds, and the next bad one raises again.
    good = np.abs(floats(rng, 1000)) + 0.5
    out = np.empty(1000)
    kernel(good, out)
    np.testing.assert_allclose(out, np.log(good), rtol=1e-13)
    with pytest.raises(ValueError, match="math domain error"):
        kernel(x, np.empty(1000))


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_arithmetic_follows_numpy(rng, dtype):
    a = ints(rng, 1000, dtype, -1000, 1000)
    b = ints(rng, 1000, dtype, 1, 50) * rng.choice([-1, 1], 1000).astype(dtype)
    check(K.int_arithmetic, [a, b, np.empty(1000, dtype)], "numpy", poison=[2])


@pytest.mark.parametrize("n", [1, 1000])
def test_loop_variable_keeps_its_last_value(n):
    check(K.loop_variable_after, [np.zeros(n, np.int64)], "numpy")


def test_while_loop_around_a_reduction(rng):
    check(K.while_converge, [floats(rng, 1000), 1e-3], "numpy")


def test_division_by_a_python_zero_is_a_zero_division_error(rng):
    check(K.divide_python_scalars, [floats(rng, 100), 4], "numpy")
    kernel = plait.jit(K.divide_python_scalars, target="cuda")
    with pytest.raises(ZeroDivisionError):
        kernel(floats(rng, 100), 0)


@pytest.mark.parametrize("lo,hi,step", [(0, 100, 1), (3, 100, 7), (99, -1, -3), (50, 10, 1), (10, 50, -2)])
def test_range_step_known_at_run_time(rng, lo, hi, step):
    check(K.doubled_stepped, [floats(rng, 100), lo, hi, step, floats(rng, 100)], "numpy")


@pytest.mark.parametrize("step", [1, 2, 3, -1])
def test_host_loop_step_known_at_run_time(rng, step):
    check(K.offsets_by_steps, [floats(rng, 1000), step, floats(rng, 1000)], "numpy")


def test_zero_range_step_is_a_value_error_and_runs_nothing(rng):
    # The host checks the ranges it counts, as on the CPU: before, a zero
    # step divided by zero in the host code (SIGFPE).
    out = floats(rng, 100)
    before = out.copy()
    kernel = plait.jit(K.doubled_stepped, target="cuda")
    for lo, hi in ((0, 100), (100, 0)):
        with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero") as raised:
            kernel(floats(rng, 100), lo, hi, 0, out)
        assert "cuda_kernels.py" in str(raised.value)
        np.testing.assert_array_equal(out, before)
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        plait.jit(K.offsets_by_steps, target="cuda")(floats(rng, 100), 0, out)
    np.testing.assert_array_equal(out, before)


def test_range_of_more_than_int64_values_is_an_overflow_error(rng):
    out = floats(rng, 100)
    before = out.copy()
    kernel = plait.jit(K.doubled_stepped, target="cuda")
    with pytest.raises(OverflowError, match="more than 2\\*\\*63 - 1 values"):
        kernel(floats(rng, 100), -(2**62) - 5, 2**62 + 5, 1, out)
    np.testing.assert_array_equal(out, before)


def test_out_of_bounds_index_with_boundscheck_is_an_index_error(rng):
    kernel = plait.jit(K.shifted_copy, target="cuda", boundscheck=True)
    x = floats(rng, 100)
    with pytest.raises(IndexError, match="index 100 is out of bounds for axis 0 with size 100"):
        kernel(x, np.empty(100))
    out = np.empty(99)
    kernel(x, out)
    np.testing.assert_array_equal(out, x[1:])
    get_item = plait.jit(K.get_item, target="cuda", boundscheck=True)
    with pytest.raises(IndexError):
        get_item(x, 100)


def test_python_int_out_of_int32_range_is_an_overflow_error(rng):
    check(K.add_python_int, [ints(rng, 100, np.int32), 7], "numpy")
    kernel = plait.jit(K.add_python_int, target="cuda")
    with pytest.raises(OverflowError, match="Python integer 4294967296 out of bounds for int32"):
        kernel(ints(rng, 100, np.int32), 2**32)


@pytest.mark.parametrize("n", [1000])
def test_gesummv(rng, n):
    check(K.gesummv, [1.5, 0.5, floats(rng, (n, n)), floats(rng, (n, n)), floats(rng, n), np.empty(n)], "numpy",
          poison=[5])


def test_to_device_and_to_host_round_trip(rng):
    for a in (floats(rng, (3, 4)), np.asfortranarray(floats(rng, (3, 4))), ints(rng, 10, np.int32), np.zeros(0),
              rng.random(5) < 0.5, floats(rng, (6, 8))[::2, ::-2]):
        d = plait.to_device(a)
        assert isinstance(d, plait.DeviceArray)
        assert d.shape == a.shape and d.dtype == a.dtype
        back = plait.to_host(d)
        np.testing.assert_array_equal(back, a)


def test_inspection_shows_cuda_source_host_source_and_ptx(rng):
    kernel = plait.jit(K.dot, target="cuda")
    kernel(floats(rng, 10), floats(rng, 10))
    source = kernel.inspect_source()
    assert "__global__" in source and "plait_kernel_entry" in source
    assert ".entry plait_dot_k0" in kernel.inspect_ptx()
    explain = kernel.explain()
    assert "CUDA kernel plait_dot_k0" in explain
    assert "NumPy arrays are copied to the GPU" in explain


def test_torch_current_stream_is_used():
    if torch is None:
        pytest.skip("PyTorch with CUDA is not installed")
    stream = torch.cuda.Stream()
    kernel = plait.jit(K.vector_add, target="cuda")
    a = torch.rand(1 << 20, device="cuda", dtype=torch.float64)
    b = torch.rand(1 << 20, device="cuda", dtype=torch.float64)
    out = torch.empty_like(a)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        kernel(a, b, out)
        check_value = (out - (a + b)).abs().max()
    torch.cuda.synchronize()
    assert check_value.item() == 0.0


# Teams inside `if`s and serial loops that every thread runs in step
# (docs/cuda.md): the broadcast versions of array statements, the serial k
# loop of a row update, and barriers between the steps of such a loop.
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n,m", [(0, 3), (1, 1), (5, 7), (70, 33), (300, 129)])
def test_team_row_update_in_a_serial_loop(rng, kind, n, m):
    kernel = check(K.triangle_update, [1.5, 1.2, floats(rng, (n, n)), floats(rng, (n, m))], kind, rtol=1e-12)
    if n > 1:
        assert "runs in step in every thread of the team" in kernel.explain()


def test_team_row_update_strided_float32(rng):
    C, A = floats(rng, (130, 130), np.float32), floats(rng, (130, 70), np.float32)
    check(K.triangle_update, [0.5, 1.5, C[::2, ::2], A[::2, :]], "numpy", rtol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (4, 3), (33, 17), (200, 129)])
def test_team_gram_in_broadcast_versions(rng, kind, shape):
    # Positive data: no cancellation, so the reassociated sums meet rtol.
    kernel = check(K.upper_gram, [rng.random(shape)], kind, rtol=1e-12)
    assert "spread over the threads of the team" in kernel.explain()
    # Positive float32 data: no cancellation for the tolerance to meet.
    check(K.upper_gram, [rng.random((50, 80), dtype=np.float32)[::2, ::3]], kind, rtol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (17, 300), (64, 1025)])
@pytest.mark.parametrize("steps", [0, 1, 5])
def test_team_barriers_between_steps(rng, kind, shape, steps):
    check(K.in_step_shift, [floats(rng, shape), floats(rng, shape), steps], kind)
    check(K.in_step_moving_bounds, [floats(rng, shape), floats(rng, shape), steps], kind)


# Reduction results that stay on the GPU for the device region after their
# loop (docs/cuda.md): the triangular solve and mixed cases.
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (1000, 3), (300, 257), (7, 8191), (5, 8192), (3, 20001)])
def test_team_only_when_the_workers_are_few(rng, kind, shape):
    # Positive data: no cancellation for the reassociated sums.
    kernel = check(K.column_means, [rng.random(shape), np.empty(shape[1])], kind, poison=[1], rtol=1e-12)
    assert "one thread per iteration when there are at least 8192" in kernel.explain()
    check(K.column_means, [floats(rng, (600, 40), np.float32)[::3, ::2], np.empty(20, np.float32)], kind,
          poison=[1], rtol=1e-4)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (70, 60), (1000, 3)])
def test_scalar_of_a_device_region_stays_for_the_loops_after_it(rng, kind, shape):
    m, n = shape
    kernel = check(K.scaled_columns, [rng.random(shape), np.zeros((n, n))], kind, rtol=1e-12)
    assert "stays on the GPU for the parallel loops" in kernel.explain()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 7, 1000])
@pytest.mark.parametrize("first", [-0.5, 0.5])
def test_device_region_takes_the_host_value_of_a_scalar_it_may_keep(rng, kind, n, first):
    # Only scalars that a path through the region may read or keep go to the
    # device with its launch; `first` picks the path.
    a = floats(rng, n)
    a[0] = first
    check(K.scaled_where_positive, [a, np.empty(n)], kind, poison=[1])
    check(K.first_or_default, [a], kind)


# A relaxation's two forms: a team per row whose groups store only when one
# of their elements changed, and an array statement (a collapsed nest) whose
# iterations store only the elements that changed; each with the remark
# that explain() gives.
RELAXATIONS = {
    "team groups": (K.row_relax, K.row_raise, "stores its elements only when one of them changed"),
    "collapsed nest": (K.grid_relax, K.grid_raise, "a thread stores an element only when it changed"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (3, 1000), (70, 33), (5, 4097), (3000, 1000)])
@pytest.mark.parametrize("form", sorted(RELAXATIONS))
def test_relaxations_store_only_what_changed(rng, kind, shape, form):
    # The collapsed nest runs its rows version at (3, 1000) and (3000,
    # 1000) (in L2: one wave of blocks, each taking many rows), the other
    # version at (70, 33) and (5, 4097).
    relax, raise_, remark = RELAXATIONS[form]
    m, n = shape
    kernel = check(relax, [ints(rng, shape, np.int32, 0, 50), ints(rng, m, np.int32, 0, 20),
                           ints(rng, n, np.int32, 0, 40)], kind)
    # (An empty CuPy or PyTorch array may carry strides that make its
    # signature strided, where a team's groups are element by element.)
    assert remark in kernel.explain() or m * n == 0
    # Floats through a strided view, with NaN and signed zeros, which a
    # comparison of values would take for unchanged.
    dist = floats(rng, (m, 2 * n))[:, ::2]
    through = floats(rng, 2 * n)[::2]
    dist[:, : n // 3] = -0.0
    through[: n // 2] = 0.0
    if m and n:
        dist[0, -1] = np.nan
        through[n // 4] = np.nan
    check(relax, [dist, np.zeros(m), through], kind)
    level = floats(rng, shape, np.float32)
    level[:, n // 2 :] = np.nan
    check(raise_, [level, floats(rng, n, np.float32)], kind)


def solve_on_gpu(kind, lower, b):
    """K.row_solve on the GPU and in Python; their x. The GPU's dot products
    reassociate, so an x near 0 can differ in relative terms."""
    kernel = plait.jit(K.row_solve, target="cuda")
    x = to_kind(np.full(b.shape, np.nan, b.dtype), kind)
    kernel(to_kind(lower, kind), x, to_kind(b, kind))
    want = np.empty_like(b)
    K.row_solve(lower, want, b)
    return kernel, to_numpy(x), want


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 2, 33, 300])
def test_reduction_results_stay_on_the_device(rng, kind, n):
    lower = np.tril(floats(rng, (n, n))) + 4 * np.eye(n)
    kernel, got, want = solve_on_gpu(kind, lower, floats(rng, n))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    if n:
        assert "stay on the GPU" in kernel.explain()
    check(K.row_reductions, [rng.random((n, 7)) + 0.5, floats(rng, n)], kind, rtol=1e-12)
    lower32 = (np.tril(floats(rng, (2 * n, 2 * n))) + 4 * np.eye(2 * n)).astype(np.float32)
    _, got, want = solve_on_gpu(kind, np.ascontiguousarray(lower32[::2, ::2]), floats(rng, n, np.float32))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_calls_on_two_streams_keep_their_own_scratch(rng):
    # A cooperative persistent kernel keeps its grid barrier in the call's
    # scratch buffer and is still running when the call returns; a call on
    # another stream must not reuse that buffer meanwhile.
    if torch is None:
        pytest.skip("PyTorch with CUDA is not installed")
    kernel = plait.jit(K.jacobi_1d, target="cuda")
    n, steps, rounds = 40001, 40, 6
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    starts = [(floats(rng, n), floats(rng, n)) for _ in streams]
    tensors = [(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()) for a, b in starts]
    torch.cuda.synchronize()
    for _ in range(rounds):
        for stream, (a, b) in zip(streams, tensors):
            with torch.cuda.stream(stream):
                kernel(steps, a, b)
    torch.cuda.synchronize()
    for (a, b), (want_a, want_b) in zip(tensors, starts):
        for _ in range(rounds * steps):
            want_b[1:-1] = 0.33333 * (want_a[:-2] + want_a[1:-1] + want_a[2:])
            want_a[1:-1] = 0.33333 * (want_b[:-2] + want_b[1:-1] + want_b[2:])
        np.testing.assert_array_equal(a.cpu().numpy(), want_a)
        np.testing.assert_array_equal(b.cpu().numpy(), want_b)


def test_torch_tensors_are_read_through_their_own_accessors(rng):
    # Tensors that need grad, views with a storage offset and a stride,
    # float32 and int64; an unsupported dtype names itself.
    if torch is None:
        pytest.skip("PyTorch with CUDA is not installed")
    kernel = plait.jit(K.vector_add, target="cuda")
    base = torch.from_numpy(floats(rng, 400)).cuda()
    a = base[1:301:3].clone().requires_grad_(True)
    b = base[5:305:3]
    out = torch.full((a.shape[0],), float("nan"), device="cuda", dtype=torch.float64)
    kernel(a, b, out)
    np.testing.assert_array_equal(out.cpu().numpy(), (a.detach() + b).cpu().numpy())
    for dtype in (torch.float32, torch.int64):
        x = torch.arange(17, device="cuda").to(dtype)
        y = torch.arange(17, device="cuda").to(dtype) * 3
        z = torch.zeros(17, device="cuda", dtype=dtype)
        kernel(x, y, z)
        assert torch.equal(z, x + y)
    half = torch.zeros(4, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="unsupported dtype 'torch.bfloat16'"):
        kernel(half, half, half)


# ---- workers that become teams of threads: odd shapes cover teams of a warp
# (short rows), of 256 threads (long rows) and partial teams.
ROW_SHAPES = [(1, 1), (3, 7), (33, 100), (5, 300), (130, 1025), (7, 5000)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_row_softmax(rng, kind, shape):
    check(K.row_softmax, [floats(rng, shape) * 5, np.empty(shape)], kind, poison=[1], rtol=1e-12)


@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_row_softmax_float32_and_strided(rng, shape):
    check(K.row_softmax, [floats(rng, shape, np.float32), np.empty(shape, np.float32)], "numpy", poison=[1],
          rtol=1e-5)
    base = floats(rng, (shape[0] * 2, shape[1] * 2))
    check(K.row_softmax, [base[::2, ::2], np.empty(shape)], "numpy", poison=[1], rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROW_SHAPES + [(0, 5)])
def test_row_dot_products(rng, kind, shape):
    n, m = shape
    check(K.row_dots, [1.5, 0.5, floats(rng, shape), floats(rng, shape), floats(rng, m), np.empty(n)], kind,
          poison=[5], rtol=1e-9)


@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_row_dot_products_float32(rng, shape):
    n, m = shape
    f32 = np.float32
    check(K.row_dots, [1.5, 0.5, floats(rng, shape, f32), floats(rng, shape, f32), floats(rng, m, f32),
                       np.empty(n, f32)], "numpy", poison=[5], rtol=2e-3)


@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_inner_reduction_inside_an_outer_reduction(rng, shape):
    check(K.nested_sums, [floats(rng, shape)], "numpy", rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_integer_row_minimum_and_maximum_are_exact(rng, dtype, shape):
    n = shape[0]
    check(K.row_int_extremes, [ints(rng, shape, dtype, -10**6, 10**6), np.empty(n, dtype), np.empty(n, dtype)],
          "numpy", poison=[1, 2])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_scalar_computed_in_the_worker_is_read_after_the_inner_loop(rng, kind, shape):
    n = shape[0]
    check(K.center_rows, [floats(rng, shape), np.empty(shape), np.empty(n)], kind, poison=[1, 2], rtol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_first_thread_writes_are_seen_by_the_team(rng, kind, shape):
    check(K.flip_first_then_scale, [floats(rng, shape), np.empty(shape)], kind, poison=[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROW_SHAPES + [(4, 0)])
def test_independent_serial_inner_loop(rng, kind, shape):
    check(K.scale_rows, [floats(rng, shape), floats(rng, shape[0]), np.empty(shape)], kind, poison=[2])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows,per_row", [(1, 0), (7, 3), (1000, 10), (50, 700)])
def test_csr_matrix_vector_product(rng, kind, rows, per_row):
    counts = rng.integers(0, 2 * per_row + 1, rows)
    rowptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    nnz = int(rowptr[-1])
    cols = rng.integers(0, max(rows, 1), nnz).astype(np.int64)
    check(K.csr_matvec, [rowptr, cols, floats(rng, nnz), floats(rng, rows), np.empty(rows)], kind, poison=[4],
          rtol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows,per_row", [(1, 0), (5, 1), (33, 3), (1000, 10), (50, 700)])
def test_csr_rows_run_in_small_teams(rng, kind, rows, per_row):
    # Row lengths the host cannot know before the launch: a team of 2
    # threads per row (docs/cuda.md, "Team size"), its partial values
    # combined within the team's lanes of a warp; empty rows, rows shorter
    # than the team and rows of hundreds; a maximum that skips NaN as the
    # builtin max does, and a sum then a spread loop over the same row.
    counts = rng.integers(0, 2 * per_row + 1, rows)
    rowptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    nnz = int(rowptr[-1])
    vals = floats(rng, nnz)
    vals[::7] = np.nan
    kernel = check(K.csr_row_max, [rowptr, vals, np.empty(rows)], kind, poison=[2])
    if nnz:  # (an empty torch or CuPy array has no known layout: one thread per row)
        assert "one team of 2 threads per iteration" in kernel.explain()
    positive = rng.random(nnz) + 0.5
    check(K.csr_normalise_rows, [rowptr, positive, np.empty(rows), np.empty(nnz)], kind, poison=[2, 3], rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("nbins", [1, 37, 1024, 5000])
def test_histogram_privatised_in_shared_memory(rng, kind, n, nbins):
    # 1024 int64 bins fill the shared copy exactly; 5000 do not fit and go
    # straight to the array.
    check(K.float_histogram, [rng.random(n).astype(np.float32), np.zeros(nbins, np.int64)], kind)
    check(K.float_histogram, [rng.random(n), np.full(nbins, 0.5, np.float32)], kind, rtol=1e-6)


def test_explain_names_the_mapping_of_each_loop():
    kernel = plait.jit(K.row_softmax, target="cuda")
    kernel(np.ones((2, 3)), np.empty((2, 3)))
    explain = kernel.explain()
    assert "one team of threads per iteration" in explain
    assert "loop over `j1`" in explain and "spread over the threads of the team" in explain
    histogram = plait.jit(K.float_histogram, target="cuda")
    histogram(np.ones(4), np.zeros(3, np.float32))
    assert "shared memory per block" in histogram.explain()
