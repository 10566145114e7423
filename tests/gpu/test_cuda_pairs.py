"""Spread loops whose threads run two iterations at once (docs/cuda.md, "Two
iterations per thread"). Everywhere: the kernels of paired_kernels.py compile
with nvcc and NVRTC for sm_90 and the host part with the system compiler;
the generated code pairs the iterations exactly where the rule allows it and
sizes the team for two iterations per thread; and the barrier-free kernels,
compiled as C++ with stand-ins for CUDA's names, run on the host thread after
thread for teams of 1 to 256 threads against the undecorated functions. On a
GPU: each kernel runs against the undecorated function on fresh random
inputs, at row lengths around one and two iterations per thread (0, 1, odd,
past 2 x 256), with empty inner loops, strided views, float32, float64 and
integers, teams of one thread (many workers) and of several."""

import pathlib
import re

import numpy as np
import pytest

import emulation
import paired_kernels as P
import plait
from test_cuda_codegen import PLAITC, compile_tests, emit_from, plaitc, without_warp_versions
from test_cuda_run import KINDS, check, floats, ints

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "paired_kernels.py"
CASES = [(name, signature) for name, signatures in P.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

PAIRED_LOOP = re.compile(r"for \(int64_t (p_k\d+) = p_lane; \1 < (p_trip\d+); \1 \+= 2 \* \(int64_t\)p_team\) \{\n"
                         r"\s*const bool (p_in\d+) = \1 \+ p_team < \2;")


def emit(tmp_path, name, signature, what, *extra):
    return emit_from(KERNELS_FILE, tmp_path, name, signature, what, *extra).read_text()


# ---------------------------------------------------------------- everywhere


(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES)


@compiles
def test_row_product_runs_two_columns_per_pass_through_one_inner_loop(tmp_path):
    device = without_warp_versions(emit(tmp_path, "row_products", P.KERNELS["row_products"][0], "cu"))
    loop = PAIRED_LOOP.search(device)
    assert loop, device
    second = loop.group(3)
    body = device[loop.end():]
    # Each iteration has its own column and sum; the k loop is one loop
    # whose body updates both sums, the second under the flag.
    assert re.search(r"int64_t v_j_u0 = static_cast<int64_t>\(p_begin\d+ \+ \(p_k\d+\) \* p_step\d+\);", body)
    assert re.search(r"int64_t v_j_u1 = static_cast<int64_t>\(p_begin\d+ \+ \(p_k\d+ \+ p_team\) \* p_step\d+\);",
                     body)
    inner = re.search(r"for \(int64_t p_k\d+ = 0; p_k\d+ < p_trip\d+; \+\+p_k\d+\) \{(.*?)\n          \}\n", body,
                      re.S)
    assert inner, body
    assert re.search(r"v_s_u0 = \(v_s_u0 \+ .*v_j_u0\]\)\);\n\s*if \(" + second + r"\) \{\n"
                     r"(\s*#line[^\n]*\n)?\s*v_s_u1 = \(v_s_u1 \+ .*v_j_u1\]\)\);", inner.group(1))
    assert len(re.findall(r"for \(int64_t p_k\d+ = 0;", body)) == 1
    assert re.search(r"a_out_data\[[^\n]*v_j_u0\] = \(v_s_u0 \+ 1\.0\);\n\s*if \(" + second +
                     r"\) \{\n(\s*#line[^\n]*\n)?\s*a_out_data\[[^\n]*v_j_u1\] = \(v_s_u1 \+ 1\.0\);", body)
    # The host sizes the team for two columns per thread.
    host = emit(tmp_path, "row_products", P.KERNELS["row_products"][0], "cpp")
    assert re.search(r"plait_cuda::team_for\(2 \* plait::trip_count\(", host)


@compiles
def test_covariance_pairs_both_versions_of_its_product_and_no_other_loop(tmp_path):
    device = without_warp_versions(emit(tmp_path, "covariance", P.KERNELS["covariance"][0], "cu"))
    rows = device[device.index("// parallel loop over `i`"):]
    assert len(PAIRED_LOOP.findall(rows)) == 2
    # The copies into and out of the mirror's temporary (in three versions)
    # have no inner loop, nor have the column means and the centring.
    assert len(re.findall(r"p_lane; p_k\d+ < p_trip\d+; p_k\d+ \+= p_team\)", rows)) == 6
    assert not PAIRED_LOOP.search(device[:device.index("// parallel loop over `i`")])


@compiles
@pytest.mark.parametrize("name", ["triangle_products", "reused_variable"])
def test_iterations_run_one_at_a_time_without_a_loop_for_both(tmp_path, name):
    device = emit(tmp_path, name, P.KERNELS[name][0], "cu")
    assert "p_team" in device and not PAIRED_LOOP.search(device)
    # Iterations (or groups of 4 consecutive ones: docs/cuda.md, "Vector
    # accesses in teams") lane, lane + team, ...
    assert re.search(r"p_lane; p_([kg])\d+ < p_(trip|full)\d+; p_\1\d+ \+= p_team\)", device)
    host = emit(tmp_path, name, P.KERNELS[name][0], "cpp")
    assert "team_for(2 *" not in host


@compiles
def test_mixed_body_fuses_the_loops_with_fixed_bounds_only(tmp_path):
    device = without_warp_versions(emit(tmp_path, "mixed_body", P.KERNELS["mixed_body"][0], "cu"))
    body = device[PAIRED_LOOP.search(device).end():]
    # The k and k2 loops run once for both; the q loop (j % 3 iterations)
    # once per iteration, the second under the flag.
    assert len(re.findall(r"int64_t v_k = ", body)) == 1
    assert len(re.findall(r"int64_t v_k2 = ", body)) == 1
    assert re.search(r"v_q_u0 = static_cast", body) and re.search(r"v_q_u1 = static_cast", body)
    # `y`, declared in the k loop's body, has a copy per iteration there.
    assert re.search(r"double v_y_u0\{\};", body) and re.search(r"double v_y_u1\{\};", body)


# The barrier-free kernels emulated on the host: the device part's kernel
# compiles as C++ with stand-ins for CUDA's names and the few runtime
# functions it calls, and every thread of the grid runs in turn (one
# schedule the GPU may take: no statement of these workers waits for another
# thread). This checks which columns each thread of a team takes, the second
# column's flag at the end of a row, and teams of one thread.
EMULATION_PRELUDE = r"""
#include <cstdint>
#include <cstdio>
#include <algorithm>
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
inline int64_t trip_count(int64_t begin, int64_t end, int64_t step) {
  if (step > 0) return end > begin ? (end - begin + step - 1) / step : 0;
  return begin > end ? (begin - end - step - 1) / -step : 0;
}
template <typename T> T mod_checked(T a, T b, device_error*, int, int) { T r = a % b; return r != 0 && (r < 0) != (b < 0) ? r + b : r; }
template <typename T> T py_max(T a, T b) { return b > a ? b : a; }
}
"""


def emulate(tmp_path, fn, signature, arrays, team):
    """Runs the kernel of `fn` (one parallel loop from 0 over the first
    array's rows, or the second's columns for column_products) on the host
    with teams of `team` threads; returns the arrays."""
    device = emit(tmp_path, fn.__name__, signature, "cu")
    kernel = device[device.index("// ---- device part"):]
    total = arrays[1].shape[1] if fn is P.column_products else arrays[0].shape[0]
    views = [(k, (slice(None),) * a.ndim) for k, a in enumerate(arrays)]
    name, args = emulation.kernel_call(kernel, fn, [(0, 1, total)], arrays, views, team=team)
    launch = emulation.threads_in_turn(max(1, -(-total * team // 256)), name, args)
    return emulation.run(tmp_path, EMULATION_PRELUDE, kernel, arrays, launch)


def check_emulated(tmp_path, fn, arrays, team):
    signature = ", ".join(("f64" if a.dtype == np.float64 else "i64") + ("[::1]" if a.ndim == 1 else "[:, ::1]")
                          for a in arrays)
    expected = [a.copy() for a in arrays]
    fn(*expected)
    got = emulate(tmp_path, fn, signature, [a.copy() for a in arrays], team)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@compiles
@pytest.mark.parametrize("team", [1, 32, 64, 256])
@pytest.mark.parametrize("columns", [0, 1, 31, 32, 33, 64, 65, 129, 511, 512, 513])
def test_row_products_emulated_on_the_host(tmp_path, rng, team, columns):
    A, B = floats(rng, (3, 5)), floats(rng, (5, columns))
    out = np.full((3, columns), np.nan)
    check_emulated(tmp_path, P.row_products, [A, B, out], team)


@compiles
@pytest.mark.parametrize("team", [1, 32, 256])
@pytest.mark.parametrize("columns,inner", [(0, 3), (1, 0), (33, 4), (65, 1), (300, 2)])
def test_other_kernels_emulated_on_the_host(tmp_path, rng, team, columns, inner):
    A, w = floats(rng, (2, columns)), floats(rng, inner)
    check_emulated(tmp_path, P.mixed_body, [A, w, np.full((2, columns), np.nan)], team)
    A, B = floats(rng, (columns, inner)), floats(rng, (inner, 3))
    check_emulated(tmp_path, P.column_products, [A, B, np.full((columns, 3), np.nan)], team)
    A, B = ints(rng, (2, inner)), ints(rng, (inner, columns))
    check_emulated(tmp_path, P.int_row_products, [A, B, np.full((2, columns), -7)], team)


# ---------------------------------------------------------------- on the GPU

# (rows, inner, columns): columns around one and two iterations per thread
# of teams of 32 to 256 (a team has at most 2 columns per thread).
SHAPES = [(0, 3, 5), (1, 1, 1), (3, 0, 7), (2, 5, 0), (5, 17, 33), (4, 9, 64), (7, 9, 65), (3, 33, 257),
          (4, 8, 511), (2, 12, 512), (3, 5, 513), (2, 40, 1025), (70, 3, 300)]


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_row_products(rng, kind, shape):
    rows, inner, columns = shape
    check(P.row_products, [floats(rng, (rows, inner)), floats(rng, (inner, columns)), np.empty((rows, columns))],
          kind, poison=[2])


@on_gpu
@pytest.mark.parametrize("shape", SHAPES)
def test_row_products_float32_and_strided_views(rng, shape):
    rows, inner, columns = shape
    A, B = floats(rng, (rows, inner), np.float32), floats(rng, (inner, columns), np.float32)
    check(P.row_products, [A, B, np.empty((rows, columns), np.float32)], "numpy", poison=[2], rtol=1e-6)
    base = floats(rng, (2 * rows + 1, 3 * inner + 2))
    out = np.full((rows + 1, 2 * columns + 1), 5.0)
    kernel = plait.jit(P.row_products, target="cuda")
    a, b, o = base[1::2, ::3][:rows, :inner], floats(rng, (inner, 2 * columns))[:, ::2], out[1:, ::2][:, :columns]
    expected = out.copy()
    P.row_products(a, b, expected[1:, ::2][:, :columns])
    kernel(a, b, o)
    np.testing.assert_array_equal(out, expected)


@on_gpu
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("shape", SHAPES[:10])
def test_integer_row_products(rng, dtype, shape):
    rows, inner, columns = shape
    check(P.int_row_products, [ints(rng, (rows, inner), dtype), ints(rng, (inner, columns), dtype),
                               np.empty((rows, columns), dtype)], "numpy", poison=[2])


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("M,N", [(0, 4), (1, 2), (2, 3), (33, 17), (257, 40), (300, 7), (513, 65), (1100, 30)])
def test_covariance(rng, kind, M, N):
    check(P.covariance, [M, np.float64(N), floats(rng, (N, M))], kind, rtol=1e-9)


@on_gpu
def test_covariance_float32(rng):
    # Centred data cancels, so entries near zero differ in float32 rounding
    # (NumPy's product sums in another order): the comparison is absolute at
    # the scale of the entries (about 0.3).
    data = floats(rng, (20, 300), np.float32)
    expected = P.covariance(300, np.float64(20), data.copy())
    got = plait.jit(P.covariance, target="cuda")(300, np.float64(20), data.copy())
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@on_gpu
@pytest.mark.parametrize("inner", [0, 1, 4, 7])
@pytest.mark.parametrize("columns", [0, 1, 33, 129, 513, 1030])
def test_mixed_body(rng, inner, columns):
    check(P.mixed_body, [floats(rng, (3, columns)), floats(rng, inner), np.empty((3, columns))], "numpy",
          poison=[2])


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("shape", [(5, 3, 9000), (33, 4, 100), (1, 1, 1), (0, 2, 3), (600, 2, 10), (3, 0, 8200)])
def test_column_products_with_teams_of_one_thread_and_of_several(rng, kind, shape):
    rows, inner, columns = shape
    check(P.column_products, [floats(rng, (rows, inner)), floats(rng, (inner, columns)),
                              np.empty((rows, columns))], kind, poison=[2])


@on_gpu
@pytest.mark.parametrize("shape", SHAPES)
def test_loops_that_run_one_iteration_at_a_time(rng, shape):
    rows, inner, columns = shape
    check(P.triangle_products, [floats(rng, (rows, columns)), np.empty((rows, columns))], "numpy", poison=[1])
    check(P.reused_variable, [floats(rng, (rows, inner)), floats(rng, (inner, columns)),
                              np.empty((rows, columns))], "numpy", poison=[2])


@on_gpu
def test_explain_says_which_loops_run_in_pairs(rng):
    kernel = check(P.covariance, [40, np.float64(9), floats(rng, (9, 40))], "numpy", rtol=1e-9)
    assert "each thread runs two of its iterations at once" in kernel.explain()
    kernel = check(P.triangle_products, [floats(rng, (3, 40)), np.empty((3, 40))], "numpy", poison=[1])
    explain = kernel.explain()
    assert "spread over the threads of the team" in explain and "two of its iterations" not in explain
