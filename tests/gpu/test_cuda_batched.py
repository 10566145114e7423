"""Straight-line one-thread workers that run several iterations per thread
(docs/cuda.md, "Several iterations per thread"). Everywhere: the kernels of
batched_kernels.py compile with nvcc and NVRTC for sm_90 and the host part
with the system compiler, and the generated code has the batched form exactly
where the rule allows it. On a GPU: each kernel runs against the undecorated
function on fresh random inputs, at sizes around the batch and block sizes,
with in-place and aliased arguments, overlapping views of one array,
misaligned and non-contiguous views, float32, float64, int32, uint8 and bool."""

import pathlib
import re

import numpy as np
import pytest

import batched_kernels as B
import emulation
import plait
from test_cuda_codegen import PLAITC, compile_tests, emit_from, plaitc
from test_cuda_run import KINDS, check, cupy, floats, ints, torch

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "batched_kernels.py"
CASES = [(name, signature) for name, signatures in B.KERNELS.items() for signature in signatures]
# Around the batch (4 iterations per thread, 2 in collapsed nests) and the block (256 threads, so
# 1024 iterations per block).
SIZES = (0, 1, 3, 4, 5, 255, 1023, 1024, 1025, 3 * 1024 + 7, 20011)

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def emit(tmp_path, name, signature, what, *extra):
    return emit_from(KERNELS_FILE, tmp_path, name, signature, what, *extra).read_text()


# ---------------------------------------------------------------- everywhere


(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES)


BATCHED_LOOP = re.compile(r"for \(int64_t p_k0 = [^;]*; p_k0 < p_total; "
                          r"p_k0 = plait::stopped\(p_err\) \? p_total : p_k0 \+ p_stride\) \{")
CONSECUTIVE = "((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 4"
STRIDED = "(int64_t)blockIdx.x * blockDim.x * 4 + threadIdx.x"
ROWS_LOOP = "for (int64_t p_row = p_row_first; p_row < p_rows; p_row = plait::stopped(p_err) ? p_rows : p_row + " \
    "p_row_step) {"


def branches(device):
    """The vector branch and the scalar branch of a batched kernel's body."""
    vector = device[device.index("if (p_vector && p_in3) {"):]
    return vector[:vector.index("} else {")], vector[vector.index("} else {"):]


@compiles
def test_vector_add_runs_four_iterations_per_thread_loads_before_stores(tmp_path):
    device = emit(tmp_path, "vadd", "f32[::1], f32[::1], f32[::1]", "cu")
    assert f"for (int64_t p_k0 = p_vector ? {CONSECUTIVE} : {STRIDED}; p_k0 < p_total;" in device
    # Vector accesses when the step is 1 and the first addresses are aligned.
    assert "const bool p_vector = (p_step2 == 1) && plait::lanes_aligned<float, 4>(a_a_data + (v_i_first)) && " \
           "plait::lanes_aligned<float, 4>(a_b_data + (v_i_first)) && " \
           "plait::lanes_aligned<float, 4>(a_out_data + (v_i_first));" in device
    assert "const int64_t p_apart = p_vector ? 1 : 256;" in device
    for u in (1, 2, 3):
        assert f"const bool p_in{u} = (p_k0 + {u} * p_apart) < p_total;" in device
        # range(n): its constant start and step are folded by the compiler.
        assert f"v_i_u{u} = static_cast<int64_t>(int64_t(0) + (p_k0 + {u} * p_apart) * int64_t(1));" in device
    vector, scalar = branches(device)
    assert re.search(r"const plait::lanes<float, 4> p_lanes\d+ = \*reinterpret_cast<const plait::lanes<float, 4>\*>"
                     r"\(a_a_data \+ \(v_i_u0\)\);", vector)
    assert re.search(r"\*reinterpret_cast<plait::lanes<float, 4>\*>\(a_out_data \+ p_at\d+\) = "
                     r"plait::lanes<float, 4>\{\{p_value\d+, p_value\d+, p_value\d+, p_value\d+\}\};", vector)
    assert "a_a_data[" not in vector
    # Without vectors, every load of the four iterations comes before the first store.
    loads = [m.start() for m in re.finditer(r"a_[ab]_data\[", scalar)]
    stores = [m.start() for m in re.finditer(r"a_out_data\[p_at\d+\] = ", scalar)]
    assert len(loads) == 8 and len(stores) == 4
    assert max(loads) < min(stores)
    # The host launches a quarter of the threads.
    host = emit(tmp_path, "vadd", "f32[::1], f32[::1], f32[::1]", "cpp")
    assert re.search(r"plait_cuda::grid_for\(\(p_total\d+ \+ 3\) / 4, 256, 65536\)", host)


@compiles
@pytest.mark.parametrize("signature,lanes", [("f64[::1], f64[::1], f64[::1]", "plait::lanes<double, 4>"),
                                             ("u8[::1], u8[::1], u8[::1]", "plait::lanes<uint8_t, 4>")])
def test_vector_accesses_of_other_element_types(tmp_path, signature, lanes):
    vector, _ = branches(emit(tmp_path, "vadd", signature, "cu"))
    assert vector.count(f"const {lanes} p_lanes") == 2
    assert f"*reinterpret_cast<{lanes}*>(a_out_data + p_at" in vector


@compiles
def test_each_statement_stores_after_its_own_loads_and_before_the_next_statement(tmp_path):
    device = emit(tmp_path, "two_stores", "f64[::1], f64[::1], f64[::1], f64[::1]", "cu")
    # Each iteration has its own copy of `t`.
    for u in range(4):
        assert f"v_t_u{u}" in device
    vector, scalar = branches(device)
    assert scalar.index("a_out_data[p_at") < scalar.index("a_out_data[v_i_u0]")
    assert vector.index("*reinterpret_cast<plait::lanes<double, 4>*>(a_out_data") < \
        vector.index("*reinterpret_cast<const plait::lanes<double, 4>*>(a_out_data")
    # With boundscheck the loop has two versions (out[i + k] is tested once
    # before it): the unchecked one keeps its vector accesses; in the checked
    # one a store stores only where its indices are in bounds.
    checked = emit(tmp_path, "offset_store", "f64[::1], f64[::1], int", "cu", "--boundscheck")
    assert BATCHED_LOOP.search(checked) and "p_vector" in checked
    assert re.search(r"if \(p_ok\d+\) a_out_data\[p_at\d+\] = p_value\d+;", checked)


@compiles
@pytest.mark.parametrize("name,signature", [("stencil_2d", "f64[:, ::1], f64[:, ::1]"),
                                            ("fdtd_step", "f64[:, ::1], f64[:, ::1], f64[:, ::1]"),
                                            ("scatter", "i64[::1], f64[::1], f64[::1]"),
                                            ("vadd", "f32[:], f32[:], f32[:]"),
                                            ("strided_step", "f32[::1], f32[::1]")])
def test_collapsed_nests_scatters_and_strided_arrays_are_batched(tmp_path, name, signature):
    device = emit(tmp_path, name, signature, "cu")
    rows_versions = len(re.findall(r"__global__ void __launch_bounds__\(256\) \w+_rows\(", device))
    assert len(BATCHED_LOOP.findall(device)) == device.count("__global__") - device.count("plait_fill_") - rows_versions
    assert device.count(ROWS_LOOP) == rows_versions
    if name == "scatter":
        # idx and x are loaded as vectors, out stored one element at a time.
        vector, _ = branches(device)
        assert len(re.findall(r"const plait::lanes<\w+, 4> p_lanes", vector)) == 2
        assert "a_out_data[p_at" in vector
    elif name in ("stencil_2d", "fdtd_step"):
        # Collapsed nests: 2 iterations per thread, 256 apart, no vectors;
        # the second's indices advanced from the first's by the block's digits.
        assert "p_vector" not in device and "p_k0 = (int64_t)blockIdx.x * blockDim.x * 2 + threadIdx.x;" in device
        assert "p_in2" not in device and re.search(r"p_by\d+ = plait::split_digit\(p_rest, p_trip\d+\);", device)
        # Each has a rows version, which the host runs when the inner trip
        # count fills tiles of 512 iterations.
        assert rows_versions == device.count("__global__") // 2
        host = emit(tmp_path, name, signature, "cpp")
        choices = re.findall(r"if \(plait_cuda::rows_fit\(p_trip\d+, p_tiles\d+, 512, 65536\)\) \{", host)
        assert len(choices) == rows_versions
    else:
        assert rows_versions == 0
    if name not in ("scatter", "stencil_2d", "fdtd_step"):
        # Arrays of unknown layout, loops of step 2: 256 apart, no vectors.
        assert "p_vector" not in device and f"p_k0 = {STRIDED};" in device


@compiles
@pytest.mark.parametrize("signature", B.KERNELS["array_stencil"])
def test_array_statements_run_as_collapsed_nests(tmp_path, signature):
    # Each of the statement's nests (its versions: plain indices, broadcast
    # extents, through a temporary for overlapping arrays) is batched and
    # has a rows version.
    device = emit(tmp_path, "array_stencil", signature, "cu")
    rows_versions = len(re.findall(r"__global__ void __launch_bounds__\(256\) \w+_rows\(", device))
    assert rows_versions == 4 and device.count("__global__") == 2 * rows_versions
    assert device.count(ROWS_LOOP) == rows_versions and len(BATCHED_LOOP.findall(device)) == rows_versions


@compiles
def test_a_branch_keeps_one_iteration_per_thread(tmp_path):
    device = emit(tmp_path, "with_branch", "f64[::1], f64[::1]", "cu")
    assert "p_k0" not in device
    assert "for (int64_t p_k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p_k < p_total;" in device


# The batched kernels emulated on the host: the device part's kernel (the
# text after the device runtime, which these kernels do not call apart from
# plait::lanes) compiles as C++ with a few stand-ins for CUDA's names, and
# every thread of a small grid runs in turn (one schedule the GPU may take:
# the iterations of a parallel loop are independent). This checks which
# iterations each thread takes, the vector and element-wise forms and their
# choice at the launch, the tails, and the order of loads and stores with
# aliased arguments, where no GPU is.
EMULATION_PRELUDE = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
struct p_dim { unsigned x; };
static p_dim blockIdx, threadIdx, blockDim{256}, gridDim;
#define __global__
#define __launch_bounds__(n)
namespace plait {
struct device_error;
// The call has recorded no error (the entry and back-edge tests).
inline bool stopped(const device_error*) { return false; }
inline bool block_stopped(const device_error*) { return false; }
inline bool team_stopped(const device_error*, int) { return false; }
template <typename T, int N> struct alignas(sizeof(T) * N > 16 ? 16 : sizeof(T) * N) lanes { T v[N]; };
template <typename T, int N> bool lanes_aligned(const T* p) { return (uint64_t)p % alignof(lanes<T, N>) == 0; }
inline int64_t split_digit(int64_t& rest, int64_t trip) {
  const int64_t q = rest / trip, digit = rest - q * trip;
  rest = q;
  return digit;
}
}
"""


def emulate(tmp_path, fn, signature, loops, bases, views, scalars=(), grid=None, version=""):
    """Runs the kernel of `fn` (one parallel loop, `loops`: its levels'
    (begin, step, trip); `version`: the suffix of the kernel's version) on
    the host over views of copies of `bases` ((base index, slice) per array
    argument, in order); returns the bases."""
    device = emit(tmp_path, fn.__name__, signature, "cu")
    kernel = device[device.index("// ---- device part"):]
    copies = [b.copy() for b in bases]
    name, args = emulation.kernel_call(kernel, fn, loops, copies, views, scalars, version=version)
    total = int(np.prod([trip for _, _, trip in loops]))
    launch = emulation.threads_in_turn(grid or max(1, -(-total // 1024)), name, args)
    return emulation.run(tmp_path, EMULATION_PRELUDE, kernel, copies, launch)


def check_emulated(tmp_path, fn, signature, loops, bases, views, scalars=(), grid=None, version=""):
    expected = [b.copy() for b in bases]
    fn(*scalars, *[expected[k][sl] for k, sl in views])
    got = emulate(tmp_path, fn, signature, loops, bases, views, scalars, grid, version)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@compiles
@pytest.mark.parametrize("n", [1, 3, 4, 5, 1023, 1025, 4 * 1024 * 3 + 6])
@pytest.mark.parametrize("grid", [None, 2])
def test_emulated_on_the_host(tmp_path, rng, n, grid):
    x, y, z = floats(rng, n + 3, np.float32), floats(rng, n + 3, np.float32), floats(rng, n + 3, np.float32)
    everything = slice(0, n)
    # Aligned (vectors), misaligned views (elements 256 apart), strided.
    for views in ([(0, everything), (1, everything), (2, everything)],
                  [(0, slice(1, n + 1)), (1, everything), (2, slice(3, n + 3))],
                  [(0, everything), (0, everything), (0, everything)]):
        check_emulated(tmp_path, B.vadd, "f32[::1], f32[::1], f32[::1]", [(0, 1, n)], [x, y, z], views, grid=grid)
    m = len(range(0, n + 2, 2))
    check_emulated(tmp_path, B.vadd, "f32[:], f32[:], f32[:]", [(0, 1, m)], [x, y, z],
                   [(0, slice(0, n + 2, 2)), (1, slice(1, n + 3, 2)), (2, slice(2 * m - 1, None, -2))], grid=grid)
    check_emulated(tmp_path, B.saxpy, "float, f32[::1], f32[::1]", [(0, 1, n)], [x], [(0, everything)] * 2,
                   scalars=(0.75,), grid=grid)
    a, b, c = floats(rng, n), floats(rng, n), floats(rng, n)
    for views in ([(0, ALL), (1, ALL), (2, ALL), (2, ALL)], [(0, ALL), (1, ALL), (0, ALL), (1, ALL)],
                  [(0, ALL), (0, ALL), (0, ALL), (0, ALL)], [(0, ALL), (1, ALL), (1, ALL), (0, ALL)]):
        check_emulated(tmp_path, B.two_stores, "f64[::1], f64[::1], f64[::1], f64[::1]", [(0, 1, n)], [a, b, c],
                       views, grid=grid)
    base = floats(rng, n + 1)
    check_emulated(tmp_path, B.shifted_view, "f64[::1], f64[::1]", [(0, 1, n)], [base],
                   [(0, ALL), (0, slice(1, None))], grid=grid)
    check_emulated(tmp_path, B.unshifted_view, "f64[::1], f64[::1]", [(1, 1, n - 1)], [base],
                   [(0, slice(None, -1)), (0, slice(1, None))], grid=grid)
    check_emulated(tmp_path, B.scatter, "i64[::1], f64[::1], f64[::1]", [(0, 1, n)],
                   [rng.permutation(n).astype(np.int64), a, np.zeros(n)], [(0, ALL), (1, ALL), (2, ALL)], grid=grid)
    check_emulated(tmp_path, B.strided_step, "f32[::1], f32[::1]", [(0, 2, (n + 1) // 2)], [x, y],
                   [(0, everything), (1, everything)], grid=grid)


@compiles
@pytest.mark.parametrize("shape", [(3, 3), (5, 7), (33, 70)])
def test_collapsed_nest_emulated_on_the_host(tmp_path, rng, shape):
    a, b = floats(rng, shape), floats(rng, shape)
    check_emulated(tmp_path, B.stencil_2d, "f64[:, ::1], f64[:, ::1]",
                   [(1, 1, shape[0] - 2), (1, 1, shape[1] - 2)], [a, b], [(0, ALL), (1, ALL)])


@compiles
@pytest.mark.parametrize("shape,rows_per_step", [((4, 514), None), ((9, 470), 2), ((6, 1030), 1)])
@pytest.mark.parametrize("extra_block", [False, True])
def test_rows_version_emulated_on_the_host(tmp_path, rng, shape, rows_per_step, extra_block):
    # The rows version takes tiles of 512 iterations of the inner loop: a
    # grid of whole rows of tiles (all rows at once, or a few per step of the
    # grid-stride loop), and one block more than whole rows, which must stay
    # idle (the host never launches such a grid; the stencil would not show
    # a block that runs a row twice, the in-place test of three levels
    # below would).
    a, b = floats(rng, shape), floats(rng, shape)
    loops = [(1, 1, shape[0] - 2), (1, 1, shape[1] - 2)]
    tiles = -(-loops[1][2] // 512)
    grid = tiles * (rows_per_step or loops[0][2]) + extra_block
    check_emulated(tmp_path, B.stencil_2d, "f64[:, ::1], f64[:, ::1]", loops, [a, b], [(0, ALL), (1, ALL)],
                   grid=grid, version="_rows")


@compiles
@pytest.mark.parametrize("shape,rows_per_step", [((3, 7, 515), 3), ((2, 2, 1100), None), ((4, 3, 2), 5)])
@pytest.mark.parametrize("extra_block", [False, True])
def test_rows_version_of_three_levels_emulated_on_the_host(tmp_path, rng, shape, rows_per_step, extra_block):
    # The outer two levels' digits advance by the row step with a carry.
    a, out = floats(rng, shape), floats(rng, shape)
    loops = [(0, 1, shape[0]), (0, 1, shape[1]), (1, 1, shape[2] - 1)]
    tiles = -(-loops[2][2] // 512)
    grid = tiles * (rows_per_step or shape[0] * shape[1]) + extra_block
    check_emulated(tmp_path, B.add_into_3d, "f64[:, :, ::1], f64[:, :, :]", loops, [a, out],
                   [(0, ALL), (1, (ALL, slice(None, None, -1)))], grid=grid, version="_rows")


@compiles
@pytest.mark.parametrize("version", ["", "_rows"])
@pytest.mark.parametrize("m", [2, 9, 1025])
def test_collapsed_simd_loop_of_step_two_emulated_on_the_host(tmp_path, rng, version, m):
    x = floats(rng, (5, m), np.float32)
    loops = [(0, 1, 5), (1, 2, m // 2)]
    grid = None if not version else max(1, -(-(m // 2) // 512)) * 2
    check_emulated(tmp_path, B.strided_columns, "f32[:, ::1], f32[:, ::1]", loops, [x, np.zeros_like(x)],
                   [(0, ALL), (1, ALL)], grid=grid, version=version)


# ---------------------------------------------------------------- on a GPU


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_vector_add(rng, kind, n, dtype):
    make = floats if np.dtype(dtype).kind == "f" else ints
    kernel = check(B.vadd, [make(rng, n, dtype), make(rng, n, dtype), np.empty(n, dtype)], kind, poison=[2])
    if n:
        assert "4 iterations per thread" in kernel.explain()


@on_gpu
@pytest.mark.parametrize("n", SIZES)
def test_saxpy_in_place(rng, n):
    check(B.saxpy, [1.5, floats(rng, n, np.float32), floats(rng, n, np.float32)], "numpy")
    check(B.saxpy, [-0.25, floats(rng, n), floats(rng, n)], "device")


@on_gpu
def test_grid_stride_loop_past_65536_blocks(rng):
    # 65536 blocks of 256 threads cover 64 Mi iterations; the rest go round
    # the grid-stride loop. (NumPy's wrapping uint8 addition is the oracle:
    # the Python loop would take minutes.)
    n = 65536 * 1024 + 3001
    a = rng.integers(0, 256, n, dtype=np.uint8)
    b = rng.integers(0, 256, n, dtype=np.uint8)
    out = plait.to_device(np.zeros(n, np.uint8))
    plait.jit(B.vadd, target="cuda")(plait.to_device(a), plait.to_device(b), out)
    np.testing.assert_array_equal(out.to_host(), a + b)


# Arrays on the GPU as one library's views (CuPy or PyTorch): aliasing,
# offsets and strides survive, where NumPy arguments are copied one by one.
LIBS = [pytest.param("cupy", marks=pytest.mark.skipif(cupy is None, reason="CuPy is not installed")),
        pytest.param("torch", marks=pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed"))]


def to_gpu(lib, array):
    return cupy.asarray(array) if lib == "cupy" else torch.from_numpy(np.ascontiguousarray(array)).cuda()


def to_host(value):
    return cupy.asnumpy(value) if cupy is not None and isinstance(value, cupy.ndarray) else value.cpu().numpy()


def check_views(fn, bases, views, lib, scalars=()):
    """Runs fn compiled for CUDA on views of GPU copies of `bases` and as
    Python on the same views of NumPy copies; every base must come out the
    same. `views`: (base index, slice) per array argument."""
    expected = [b.copy() for b in bases]
    fn(*scalars, *[expected[k][s] for k, s in views])
    gpu = [to_gpu(lib, b) for b in bases]
    plait.jit(fn, target="cuda")(*scalars, *[gpu[k][s] for k, s in views])
    for got, want in zip(gpu, expected):
        np.testing.assert_array_equal(to_host(got), want)


ALL = slice(None)


@on_gpu
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("n", [1, 5, 1023, 1025, 20011])
def test_in_place_and_aliased_arguments(rng, lib, n):
    x, y = floats(rng, n), floats(rng, n)
    # y = alpha * y + y: both arrays are one.
    check_views(B.saxpy, [x], [(0, ALL), (0, ALL)], lib, scalars=(0.75,))
    # out = a + a, in place.
    check_views(B.vadd, [x], [(0, ALL), (0, ALL), (0, ALL)], lib)
    # The second store reads the first through the same array, whichever
    # arguments alias.
    for views in ([(0, ALL), (1, ALL), (0, ALL), (1, ALL)],    # out is a, out2 is b
                  [(0, ALL), (1, ALL), (1, ALL), (0, ALL)],    # out is b, out2 is a
                  [(0, ALL), (1, ALL), (2, ALL), (2, ALL)],    # out and out2 are one
                  [(0, ALL), (0, ALL), (0, ALL), (0, ALL)]):   # all four are one
        check_views(B.two_stores, [x, y, np.zeros(n)], views, lib)


@on_gpu
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("n", [2, 6, 1026, 20012])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_overlapping_views_of_one_array(rng, lib, n, dtype):
    base = (floats if np.dtype(dtype).kind == "f" else ints)(rng, n, dtype)
    # y = base[1:] and x = base: y[i] is x[i + 1].
    check_views(B.shifted_view, [base], [(0, ALL), (0, slice(1, None))], lib)
    if np.dtype(dtype).kind == "f":
        # x = base[:-1], y = base[1:]: x[i] is y[i - 1].
        check_views(B.unshifted_view, [base], [(0, slice(None, -1)), (0, slice(1, None))], lib)


@on_gpu
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("n", [1, 4, 5, 1023, 1025, 20011])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_misaligned_and_strided_views(rng, lib, n, dtype):
    make = floats if np.dtype(dtype).kind == "f" else ints
    a, b, out = make(rng, 2 * n + 3, dtype), make(rng, 2 * n + 3, dtype), np.zeros(2 * n + 3, dtype)
    # Offsets of 1, 2 and 3 elements: no two arrays 16-byte aligned alike.
    check_views(B.vadd, [a, b, out], [(0, slice(1, n + 1)), (1, slice(3, n + 3)), (2, slice(2, n + 2))], lib)
    # Every other element (stride 2).
    check_views(B.vadd, [a, b, out], [(0, slice(0, 2 * n, 2)), (1, slice(1, 2 * n + 1, 2)),
                                      (2, slice(3, 2 * n + 3, 2))], lib)
    if lib == "cupy":  # reversed (PyTorch has no negative strides)
        check_views(B.vadd, [a, b, out], [(0, slice(n - 1, None, -1)), (1, slice(0, n)),
                                          (2, slice(2 * n, 0, -2))], lib)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 5, 1025, 20011])
def test_two_stores_scatter_and_flags(rng, kind, n):
    check(B.two_stores, [floats(rng, n), floats(rng, n), np.empty(n), np.empty(n)], kind, poison=[2, 3])
    check(B.scatter, [rng.permutation(n).astype(np.int64), floats(rng, n), np.empty(n)], kind, poison=[2])
    check(B.compare_into_flags, [floats(rng, n), floats(rng, n), np.zeros(n, np.bool_)], kind)
    check(B.strided_step, [floats(rng, n, np.float32), floats(rng, n, np.float32)], kind)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (3, 1030), (33, 31), (130, 257), (5, 514), (7, 1002), (4, 470)])
def test_collapsed_stencils(rng, kind, shape):
    # (5, 514), (7, 1002), (4, 470): inner trips that fill tiles of 512 with
    # little left over run in the rows version (512, 1000, 468 iterations).
    check(B.stencil_2d, [floats(rng, shape), floats(rng, shape)], kind)
    check(B.stencil_2d, [floats(rng, shape, np.float32), floats(rng, shape, np.float32)], kind)
    check(B.fdtd_step, [floats(rng, shape), floats(rng, shape), floats(rng, shape)], kind)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(3, 7, 513), (2, 3, 1100), (1, 1, 1), (3, 0, 600), (2, 40, 1025)])
def test_three_collapsed_levels_in_place(rng, kind, shape):
    # Rows version at (3, 7, 513) and (2, 40, 1025); the other version at (2, 3, 1100).
    check(B.add_into_3d, [floats(rng, shape), floats(rng, shape)], kind)
    if kind == "numpy":
        check(B.add_into_3d, [floats(rng, shape), floats(rng, shape)[:, ::-1]], kind)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(2, 2), (3, 3), (5, 514), (33, 31), (4, 470)])
def test_array_statement_stencils(rng, kind, shape):
    kernel = check(B.array_stencil, [floats(rng, shape), floats(rng, shape)], kind)
    assert "(collapsed with `" in kernel.explain()
    check(B.array_stencil, [floats(rng, shape, np.float32), floats(rng, shape, np.float32)], kind)


@on_gpu
@pytest.mark.parametrize("m", (0, 1, 2, 9, 1025, 2050))
def test_collapsed_simd_loop_of_step_two(rng, m):
    kernel = check(B.strided_columns, [floats(rng, (7, m), np.float32), np.zeros((7, m), np.float32)], "numpy")
    assert "(collapsed with `j`)" in kernel.explain()


@on_gpu
@pytest.mark.parametrize("lib", LIBS)
def test_array_statement_in_place_and_on_views(rng, lib):
    # One array on both sides: the right side is evaluated whole first
    # (through a temporary), as NumPy does; overlapping and strided views.
    check_views(B.array_stencil, [floats(rng, (9, 600))], [(0, ALL), (0, ALL)], lib)
    check_views(B.array_stencil, [floats(rng, (12, 600))], [(0, slice(0, 10)), (0, slice(2, 12))], lib)
    a, b = floats(rng, (40, 70), np.float32), floats(rng, (40, 70), np.float32)
    check(B.array_stencil, [a[::2, 1::3], b[1::2, 1::3]], "numpy")
    check(B.array_stencil, [a.T, b.T], "numpy")


@on_gpu
def test_non_contiguous_2d_arrays(rng):
    a, b = floats(rng, (40, 70), np.float32), floats(rng, (40, 70), np.float32)
    check(B.stencil_2d, [a[::2, 1::3], b[1::2, ::3]], "numpy")
    check(B.stencil_2d, [a.T, b.T], "numpy")


@on_gpu
def test_errors_in_batched_iterations(rng):
    kernel = plait.jit(B.offset_store, target="cuda", boundscheck=True)
    x = floats(rng, 1030)
    with pytest.raises(IndexError, match="index 1030 is out of bounds for axis 0 with size 1030"):
        kernel(x, np.empty(1030), 1)
    out = np.empty(1031)
    kernel(x, out, 1)
    np.testing.assert_array_equal(out[1:], x)
    sqrt = plait.jit(B.checked_sqrt, target="cuda")
    x = np.abs(floats(rng, 2050))
    out = np.empty(2050)
    sqrt(x, out)
    np.testing.assert_array_equal(out, np.sqrt(x))
    x[2049] = -1.0
    with pytest.raises(ValueError, match="math domain error"):
        sqrt(x, out)


@on_gpu
def test_branch_keeps_one_iteration_per_thread_and_explain_says_why(rng):
    kernel = check(B.with_branch, [floats(rng, 1000), np.zeros(1000)], "numpy")
    explain = kernel.explain()
    assert "one thread per iteration" in explain
    assert "is not a scalar assignment or an element store" in explain
