"""Groups of consecutive iterations in team loops and values kept in
registers (docs/cuda.md, "Vector accesses in teams", "Values kept in
registers").

On a GPU, differentially against the undecorated functions: rows of 0 to
8193 elements (odd lengths make every other row misaligned), one row and
none, rows starting one element in (`x[:, 1:]`, never aligned), strided
views (no groups' vector accesses), float32, float64 and small integers,
in place and with aliased outputs, steps of 2, teams of one thread, spread
loops inside a serial loop run in step, and kernels where a value must not
be taken from registers (a scalar or the row changes in between, or the
first loop computes it only in a branch).

Everywhere (plaitc, nvcc and NVRTC, no GPU needed): the generated CUDA of
each kernel compiles without warnings, and the source makes the group
accesses and keeps the values it should, and only those."""

import pathlib
import re

import numpy as np
import pytest

import emulation
import plait
import row_group_kernels as K
from test_cuda_codegen import NVCC, PLAITC, assert_nvcc_compiles, emit_from, nvcc_sample, plaitc, without_warp_versions

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
KERNELS_FILE = HERE / "row_group_kernels.py"
GPU = plait.cuda_available()
on_gpu = pytest.mark.skipif(not GPU, reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

LENGTHS = (0, 1, 2, 3, 4, 5, 31, 33, 127, 129, 1023, 2047, 2048, 2049, 4100, 8193)


def device_source(tmp_path, name, signature, kernels_file=KERNELS_FILE):
    return emit_from(kernels_file, tmp_path, name, signature, "cu").read_text()


# ---------------------------------------------------------------- everywhere

CASES = [(name, signature) for name, signatures in K.KERNELS.items() for signature in signatures]


@pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("name,signature", nvcc_sample(CASES))
def test_device_part_compiles_with_nvcc(tmp_path, name, signature):
    assert_nvcc_compiles(tmp_path, emit_from(KERNELS_FILE, tmp_path, name, signature, "cu"))


@pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
@pytest.mark.parametrize("name,signature", CASES)
def test_device_part_compiles_with_nvrtc(tmp_path, name, signature):
    ptx = plaitc("compile", f"{KERNELS_FILE}::{name}", "--signature", signature, "--emit", "ptx", "--arch", "90",
                 "-o", str(tmp_path))
    if "NVRTC" in ptx.stderr and ptx.returncode != 0 and "cannot be loaded" in ptx.stderr:
        pytest.skip(ptx.stderr.strip())
    assert ptx.returncode == 0, ptx.stderr


@pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
def test_groups_and_values_in_the_source(tmp_path):
    # The kernels without their wide versions for rows longer than the
    # registers of a block hold (the same body in blocks of 512: docs/cuda.md,
    # "Wide blocks for long rows") and the versions of both for rows that fit
    # in the registers ("Rows that fit in the registers").
    def narrow(name, signature):
        parts = device_source(tmp_path, name, signature).split('extern "C" __global__ void ')
        narrow, wide = parts[0] + parts[1], parts[2]
        assert wide.startswith(f"__launch_bounds__(512) plait_{name}_k0_wide(")
        assert wide.count("plait::fm::") == parts[1].count("plait::fm::")
        return narrow
    softmax = narrow("loop_softmax", "f32[:, ::1], f32[:, ::1]")
    # The row's loads as groups of 4 (the registers' first loop and the
    # loops over the rest of the row), the output's stores too.
    assert "plait::load_lanes<float, 4>(a_x_data + " in softmax
    assert "plait::store_lanes<float, 4>(a_out_data + " in softmax
    assert re.search(r"plait::lanes_aligned<float, 4>\(a_out_data \+ ", softmax)
    # exp(x - m) once: computed into registers by the sum, read by the output.
    value = re.search(r"float (p_value\d+)\[16\]\{\};", softmax).group(1)
    assert re.search(rf"\({value}\[p_c \* 4 \+ p_u\] = plait::fm::exp\(", softmax)
    assert re.search(rf"= \({value}\[p_c \* 4 \+ p_u\] / v_s\);", softmax)
    # The registers' sum and both loops over the rest of the row, each for
    # a whole group and for the last, partial one.
    assert softmax.count("plait::fm::exp(") == 6
    # A whole group runs its iterations without a test each, the partial
    # one tests them against the row's tail; the registers' groups count in
    # 32 bits, and the team's shift replaces divisions by the team.
    whole = r"\s*#pragma unroll\n\s*for \(int p_u = 0; p_u < 4; \+\+p_u\) \{\n\s*const int64_t"
    assert re.search(r"if \(p_c < p_whole_mine\d+\) \{\n\s*const int64_t p_k0\d+ = \(p_lane \+ p_c \* p_team\) \* 4;\n"
                     + whole, softmax)
    assert re.search(r"p_g\d+ < p_full\d+; p_g\d+ \+= p_team\) \{\n\s*const int64_t p_k0\d+ = p_g\d+ \* 4;\n(.*\n){2}"
                     + whole, softmax)
    assert re.search(r"if \(p_tail_mine\d+ && p_full(\d+) >= p_lane \+ \(int64_t\)4 \* p_team\) \{\n"
                     r"\s*const int64_t p_k0\d+ = p_full\1 \* 4;", softmax)
    assert re.search(r"for \(int p_u = 0; p_u < 4; \+\+p_u\) \{\n\s*if \(p_u < p_tail\d+\) \{", softmax)
    assert "/ p_team" not in softmax and "const int p_team_shift = __ffs(p_team) - 1;" in softmax
    # gesummv: two matrices' rows and the vector in groups of 4 doubles.
    dots = without_warp_versions(
        device_source(tmp_path, "two_row_dots", "float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]"))
    # a, b and x (one load for both x[j]), for the whole groups and the partial one
    assert dots.count("= plait::load_lanes<double, 4>(") == 6
    # Values that change, or that the first loop computes only sometimes,
    # are computed again.
    for name, signature in (("shift_changes_between_loops", "f32[:, ::1], f32[:, ::1]"),
                            ("row_rewritten_between_loops", "f64[:, ::1], f64[:, ::1]"),
                            ("conditional_first_value", "f64[:, ::1], f64[:, ::1]")):
        assert "p_value" not in device_source(tmp_path, name, signature), name
    # Declared once; filled by the first loop and read by the other two, each
    # for a whole group and for the partial one.
    assert narrow("log_reused_twice", "f32[:, ::1], f32[:, ::1], f32[:, ::1]").count("p_value") == 7
    # A store read back in its iteration goes to memory at once; the last one once per group.
    stores = device_source(tmp_path, "store_read_back", "f32[:, ::1], f32[:, ::1], f32[:, ::1]")
    assert "plait::store_lanes<float, 4>(a_out2_data + " in stores
    assert "store_lanes<float, 4>(a_out_data" not in stores
    # Unknown layouts: no groups.
    strided = device_source(tmp_path, "loop_softmax", "f32[:, :], f32[:, :]")
    assert "plait::load_lanes<" not in strided and "p_full" not in strided


# The kernels emulated on the host with real teams: the device part's
# kernel compiles as C++ with stand-ins for CUDA's names and for the device
# runtime's team functions, plus the runtime's own plait::lanes,
# load_lanes and store_lanes; each block's 256 threads run as std::threads,
# a team's barrier is a std::barrier and its combination goes through
# memory. Any team size the launch may pick must give the function's
# result: this checks the groups (tails, misaligned and strided rows, the
# vector and element-wise forms), the registers of rows and values, and
# where other threads' elements are, without a GPU.
EMULATION_PRELUDE = r"""
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <thread>
#include <vector>
struct p_dim { unsigned x; };
static thread_local p_dim threadIdx;
static p_dim blockIdx, blockDim{256}, gridDim;
#define __global__
#define __launch_bounds__(n)
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
namespace plait {
struct device_error;
// The call has recorded no error (the entry and back-edge tests).
inline bool stopped(const device_error*) { return false; }
inline bool block_stopped(const device_error*) { return false; }
inline bool team_stopped(const device_error*, int) { return false; }
inline int64_t trip_count(int64_t begin, int64_t end, int64_t step) {
  if (step > 0) return end <= begin ? 0 : (int64_t)(((uint64_t)end - (uint64_t)begin - 1) / (uint64_t)step + 1);
  return begin <= end ? 0 : (int64_t)(((uint64_t)begin - (uint64_t)end - 1) / (0 - (uint64_t)step) + 1);
}
inline int64_t split_digit(int64_t& rest, int64_t trip) {
  const int64_t q = rest / trip, digit = rest - q * trip;
  rest = q;
  return digit;
}
inline double inf_f64() { return std::numeric_limits<double>::infinity(); }
template <typename T> T py_max(T a, T b) { return b > a ? b : a; }
template <typename T> T py_min(T a, T b) { return b < a ? b : a; }
struct op_add { template <typename T> T operator()(T a, T b) const { return a + b; } };
struct op_max { template <typename T> T operator()(T a, T b) const { return py_max(a, b); } };
template <typename T> T maximum(T a, T b) { return a != a ? a : b != b ? b : b > a ? b : a; }
struct op_maximum { template <typename T> T operator()(T a, T b) const { return maximum(a, b); } };
namespace fm {
template <typename T> T exp(T x) { return std::exp(x); }
template <typename T> T log(T x) { return std::log(x); }
}
static std::vector<std::unique_ptr<std::barrier<>>> p_teams;
inline void team_sync(int team) {
  if (team > 1) p_teams[threadIdx.x / team]->arrive_and_wait();
}
template <typename T, typename Op> T team_combine(T v, Op op, int team, T*) {
  static T slots[256];
  if (team == 1) return v;
  slots[threadIdx.x] = v;
  team_sync(team);
  const int first = (int)threadIdx.x / team * team;
  T r = slots[first];
  for (int k = 1; k < team; ++k) r = op(r, slots[first + k]);
  team_sync(team);
  return r;
}
}  // namespace plait
static std::unique_ptr<std::barrier<>> p_block;
inline void __syncthreads() { p_block->arrive_and_wait(); }
"""


def runtime_lanes():
    """The device runtime's plait::lanes, lanes_aligned, load_lanes and store_lanes."""
    source = (REPO / "src" / "runtime" / "cuda_device_runtime.cuh").read_text()
    return source[source.index("// ---- several iterations per thread"):
                  source.index("// ---- temporaries of parallel loops")]


def emulate(tmp_path, fn, signature, loops, team, bases, views, scalars=(), blocks=2, version=""):
    """Runs the kernel of `fn` (one parallel loop nest, `loops`: its levels'
    (begin, step, trip); the kernel's version whose name ends in `version`)
    with teams of `team` threads over views of copies of `bases` ((base
    index, slice) per array argument, in order); returns the bases."""
    device = device_source(tmp_path, fn.__name__, signature, pathlib.Path(fn.__code__.co_filename))
    kernel = device[device.index("// ---- device part"):]
    copies = [b.copy() for b in bases]
    name, args = emulation.kernel_call(kernel, fn, loops, copies, views, scalars, team, version)
    # Each block's 256 threads as std::threads, the block's and a team's
    # barriers std::barriers.
    launch = f"""  gridDim.x = {blocks};
  for (unsigned b = 0; b < {blocks}; ++b) {{
    blockIdx.x = b;
    p_block = std::make_unique<std::barrier<>>(256);
    plait::p_teams.clear();
    for (int t = 0; t < 256 / {team}; ++t) plait::p_teams.push_back(std::make_unique<std::barrier<>>({team}));
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 256; ++t)
      threads.emplace_back([=] {{
        threadIdx.x = t;
        {name}({", ".join(args)});
      }});
    for (std::thread& t : threads) t.join();
  }}
"""
    prelude = EMULATION_PRELUDE + "namespace plait {\n" + runtime_lanes() + "}\n"
    return emulation.run(tmp_path, prelude, kernel, copies, launch)


def check_emulated(tmp_path, fn, signature, loops, team, bases, views, scalars=(), rtol=0.0, version=""):
    expected = [b.copy() for b in bases]
    fn(*scalars, *[expected[k][sl] for k, sl in views])
    got = emulate(tmp_path, fn, signature, loops, team, bases, views, scalars, version=version)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol)


ALL = (slice(None), slice(None))
emulated = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")


@emulated
@pytest.mark.parametrize("team", [1, 32, 256])
@pytest.mark.parametrize("m", [3, 33, 2049])
def test_emulated_softmax_and_values(tmp_path, rng, team, m):
    # 5 rows over 2 blocks: the grid-stride loop takes the rest; rows one
    # element in are never aligned, odd lengths every other row.
    rows_, out = (rng.random((5, m + 1)) * 8 - 4).astype(np.float32), np.zeros((5, m + 1), np.float32)
    for x_view in (ALL, (slice(None), slice(1, None)), (slice(None), slice(0, m))):
        o_view = (slice(None), slice(0, m)) if x_view != ALL else ALL
        check_emulated(tmp_path, K.loop_softmax, "f32[:, ::1], f32[:, ::1]", [(0, 1, 5)], team, [rows_, out],
                       [(0, x_view), (1, o_view)], rtol=1e-5)
    # In place.
    check_emulated(tmp_path, K.loop_softmax, "f64[:, ::1], f64[:, ::1]", [(0, 1, 5)], team,
                   [rows_.astype(np.float64)], [(0, ALL), (0, ALL)], rtol=1e-12)
    x = (rng.random((5, m)) * 4 - 2).astype(np.float32)
    for fn in (K.shift_changes_between_loops, K.conditional_first_value, K.row_rewritten_between_loops):
        signature, dtype, rtol = K.KERNELS[fn.__name__][0], np.float32, 1e-5
        if "f64" in signature:
            dtype, rtol = np.float64, 1e-12
        check_emulated(tmp_path, fn, signature, [(0, 1, 5)], team, [x.astype(dtype), np.zeros((5, m), dtype)],
                       [(0, ALL), (1, ALL)], rtol=rtol)
    check_emulated(tmp_path, K.log_reused_twice, "f32[:, ::1], f32[:, ::1], f32[:, ::1]", [(0, 1, 5)], team,
                   [x, np.zeros_like(x), np.zeros_like(x)], [(0, ALL), (1, ALL), (2, ALL)], rtol=1e-5)


@emulated
@pytest.mark.parametrize("team,m", [(1, 16), (32, 4), (32, 508), (64, 1024), (256, 4096)])
def test_emulated_rows_that_fit_in_the_registers(tmp_path, rng, team, m):
    # The _fit versions (docs/cuda.md, "Rows that fit in the registers"),
    # which the host runs for rows of whole groups of 4 and at most 16
    # elements per thread: aligned rows and rows one element in, in place,
    # and rows rewritten between loops.
    x = (rng.random((5, m + 1)) * 8 - 4).astype(np.float32)
    for x_view in ((slice(None), slice(0, m)), (slice(None), slice(1, None))):
        check_emulated(tmp_path, K.loop_softmax, "f32[:, ::1], f32[:, ::1]", [(0, 1, 5)], team,
                       [x, np.zeros((5, m), np.float32)], [(0, x_view), (1, ALL)], rtol=1e-5, version="_fit")
    x = x[:, :m].astype(np.float64)
    check_emulated(tmp_path, K.loop_softmax, "f64[:, ::1], f64[:, ::1]", [(0, 1, 5)], team, [x], [(0, ALL), (0, ALL)],
                   rtol=1e-12, version="_fit")
    check_emulated(tmp_path, K.row_rewritten_between_loops, K.KERNELS["row_rewritten_between_loops"][0],
                   [(0, 1, 5)], team, [x, np.zeros((5, m))], [(0, ALL), (1, ALL)], rtol=1e-12, version="_fit")


@emulated
@pytest.mark.parametrize("team", [1, 32, 128])
@pytest.mark.parametrize("m", [2, 67, 1030])
def test_emulated_dots_stores_steps_and_integers(tmp_path, rng, team, m):
    a, b, x = rng.random((6, m + 1)), rng.random((6, m + 1)), rng.random(m + 1)
    check_emulated(tmp_path, K.two_row_dots, "float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]",
                   [(0, 1, 6)], team, [a, b, x, np.zeros(6)],
                   [(0, (slice(None), slice(0, m))), (1, (slice(None), slice(1, None))), (2, slice(1, None)),
                    (3, slice(None))], scalars=(1.5, 1.2), rtol=1e-12)
    f = rng.random((6, m)).astype(np.float32)
    for views in ([(0, ALL), (1, ALL), (2, ALL)], [(0, ALL), (1, ALL), (1, ALL)]):
        check_emulated(tmp_path, K.store_read_back, "f32[:, ::1], f32[:, ::1], f32[:, ::1]", [(0, 1, 6)], team,
                       [f, np.zeros_like(f), np.zeros_like(f)], views, rtol=1e-5)
    check_emulated(tmp_path, K.every_other_column, "f32[:, ::1], f32[:, ::1]", [(0, 1, 6)], team,
                   [f, np.zeros_like(f)], [(0, ALL), (1, ALL)], rtol=1e-6)
    ints = rng.integers(0, 256, (6, m + 1)).astype(np.uint8)
    check_emulated(tmp_path, K.small_int_row_sums, "int, u8[:, ::1], i64[::1], i64[::1]", [(0, 1, 6)], team,
                   [ints, np.zeros(6, np.int64), np.zeros(6, np.int64)],
                   [(0, (slice(None), slice(1, None))), (1, slice(None)), (2, slice(None))], scalars=(100,))


@pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
def test_team_kernels_without_rows_in_registers_have_a_version_for_a_warp(tmp_path):
    signature = "float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]"
    device = device_source(tmp_path, "two_row_dots", signature)
    warp = device[device.index("plait_two_row_dots_k0_warp("):]
    assert "constexpr int32_t p_team = 32;" in warp
    assert "constexpr int32_t p_team" not in device[:device.index("plait_two_row_dots_k0_warp(")]
    host = emit_from(KERNELS_FILE, tmp_path, "two_row_dots", signature, "cpp").read_text()
    assert re.search(r"if \(p_team\d+ == 32\) \{", host)
    # Rows kept in registers: no such version (it ran 4% slower on the loop softmax).
    assert "_warp(" not in device_source(tmp_path, "loop_softmax", "f32[:, ::1], f32[:, ::1]")


@emulated
@pytest.mark.parametrize("m", [1, 2, 67, 130, 600])
def test_emulated_versions_for_teams_of_a_warp(tmp_path, rng, m):
    # The _warp versions (docs/cuda.md, "Teams of a warp"), which the host
    # runs when its rule gives a team of 32: misaligned rows, a step of 2,
    # small integers; rows longer than the rule sends to a warp too.
    a, b, x = rng.random((6, m + 1)), rng.random((6, m + 1)), rng.random(m + 1)
    check_emulated(tmp_path, K.two_row_dots, "float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]",
                   [(0, 1, 6)], 32, [a, b, x, np.zeros(6)],
                   [(0, (slice(None), slice(0, m))), (1, (slice(None), slice(1, None))), (2, slice(1, None)),
                    (3, slice(None))], scalars=(1.5, 1.2), rtol=1e-12, version="_warp")
    f = rng.random((6, m)).astype(np.float32)
    check_emulated(tmp_path, K.every_other_column, "f32[:, ::1], f32[:, ::1]", [(0, 1, 6)], 32,
                   [f, np.zeros_like(f)], [(0, ALL), (1, ALL)], rtol=1e-6, version="_warp")
    ints = rng.integers(0, 256, (6, m + 1)).astype(np.uint8)
    check_emulated(tmp_path, K.small_int_row_sums, "int, u8[:, ::1], i64[::1], i64[::1]", [(0, 1, 6)], 32,
                   [ints, np.zeros(6, np.int64), np.zeros(6, np.int64)],
                   [(0, (slice(None), slice(1, None))), (1, slice(None)), (2, slice(None))], scalars=(min(m, 100),),
                   version="_warp")


@emulated
@pytest.mark.parametrize("team", [1, 32, 256])
@pytest.mark.parametrize("m", [5, 2051])
def test_emulated_rows_rewritten_between_loops(tmp_path, rng, team, m):
    # The tests' older team kernels: a row stored by one loop and read back
    # (conditionally) by the next, and a softmax in place.
    from cuda_kernels import row_centered_squares, softmax_in_place
    x = rng.random((5, m)) * 2 - 1
    check_emulated(tmp_path, row_centered_squares, "f64[:, ::1], f64[:, ::1]", [(0, 1, 5)], team,
                   [x, np.zeros_like(x)], [(0, ALL), (1, ALL)], rtol=1e-12)
    check_emulated(tmp_path, softmax_in_place, "f32[:, ::1]", [(0, 1, 5)], team, [x.astype(np.float32)],
                   [(0, ALL)], rtol=1e-5)


@emulated
@pytest.mark.parametrize("team,m", [(256, 3094), (128, 2567), (64, 1024), (32, 6), (64, 4 * 64 * 2 + 3)])
def test_emulated_partial_group_in_registers_or_in_memory(tmp_path, rng, team, m):
    # Where the row's partial group lands: in the last register slot (3094
    # = 4 * (3 * 256 + 5) + 2: lane 5's fourth group), in memory after the
    # registers (2567: lane 1's sixth group), nowhere (1024: whole groups
    # only, four per thread), in the first slot of a lane other than 0 (6:
    # lane 1) and in the third (515: lane 0). Aligned rows and rows one
    # element in (element by element); a value kept in registers too.
    x = (rng.random((5, m + 1)) * 8 - 4).astype(np.float32)
    for x_view in ((slice(None), slice(0, m)), (slice(None), slice(1, None))):
        check_emulated(tmp_path, K.loop_softmax, "f32[:, ::1], f32[:, ::1]", [(0, 1, 5)], team,
                       [x, np.zeros((5, m), np.float32)], [(0, x_view), (1, ALL)], rtol=1e-5)
    check_emulated(tmp_path, K.log_reused_twice, "f32[:, ::1], f32[:, ::1], f32[:, ::1]", [(0, 1, 5)], team,
                   [np.abs(x[:, :m]) + 0.5, np.zeros((5, m), np.float32), np.zeros((5, m), np.float32)],
                   [(0, ALL), (1, ALL), (2, ALL)], rtol=1e-5)


@emulated
@pytest.mark.parametrize("team", [1, 2, 32, 64])
def test_emulated_nests_and_loops_in_step(tmp_path, rng, team):
    a, bm = rng.random((7, 37)), rng.random((37, 5))
    check_emulated(tmp_path, K.row_times_matrix, "f64[:, ::1], f64[:, ::1], f64[:, ::1]", [(0, 1, 7), (0, 1, 5)],
                   team, [a, bm, np.zeros((7, 5))], [(0, ALL), (1, ALL), (2, ALL)], rtol=1e-12)
    a, c = rng.random((70, 3)), rng.random((70, 70))
    check_emulated(tmp_path, K.lower_rank_update, "float, f64[:, ::1], f64[:, ::1]", [(0, 1, 70)], team, [a, c],
                   [(0, ALL), (1, ALL)], scalars=(0.5,), rtol=1e-12)


# ---------------------------------------------------------------- on the GPU

def run(fn, args, rtol, poison=()):
    from test_cuda_run import check
    return check(fn, args, "numpy", poison=poison, rtol=rtol)


def rows(rng, m, dtype, count=6):
    return ((rng.random((count, m)) * 8 - 4)).astype(dtype)


def positive_rows(rng, m, dtype, count=6):
    # Sums of positive terms: any order of the sum stays within rtol (mixed
    # signs cancel to values near 0, where a reordered sum differs by more).
    return (rng.random((count, m)) * 4 + 0.5).astype(dtype)


@on_gpu
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("m", LENGTHS)
def test_loop_softmax(rng, dtype, rtol, m):
    if m == 0:  # `m = x[i, 0]` needs an element: no rows
        run(K.loop_softmax, [np.empty((0, 0), dtype), np.empty((0, 0), dtype)], rtol)
        return
    x = rows(rng, m, dtype)
    run(K.loop_softmax, [x, np.empty_like(x)], rtol, poison=[1])
    # Rows one element in (none aligned), strided rows (no vector
    # accesses), one row, no rows.
    run(K.loop_softmax, [rows(rng, m + 1, dtype)[:, 1:], np.empty_like(x)], rtol, poison=[1])
    run(K.loop_softmax, [rows(rng, 2 * m, dtype)[:, ::2], np.empty_like(x)], rtol, poison=[1])
    run(K.loop_softmax, [x[:1], np.empty_like(x[:1])], rtol, poison=[1])
    run(K.loop_softmax, [x[:0], np.empty_like(x[:0])], rtol)
    # In place: each element is read before it is written.
    got, want = x.copy(), x.copy()
    plait.jit(K.loop_softmax, target="cuda")(got, got)
    K.loop_softmax(want, want)
    np.testing.assert_allclose(got, want, rtol=rtol)


@on_gpu
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("n", (0, 1, 3, 5, 33, 257, 2048, 2051))
def test_two_row_dots(rng, dtype, rtol, n):
    a, b = positive_rows(rng, n, dtype, n), positive_rows(rng, n, dtype, n)
    x, y = positive_rows(rng, n, dtype, 1)[0], np.empty(n, dtype)
    run(K.two_row_dots, [1.5, 1.2, a, b, x, y], rtol, poison=[5])
    if n > 1:
        # Rows of the matrices one element in, and the vector one in.
        a2, b2 = positive_rows(rng, n + 1, dtype, n), positive_rows(rng, n + 1, dtype, n)
        x2 = positive_rows(rng, n + 1, dtype, 1)[0]
        run(K.two_row_dots, [1.5, 1.2, a2[:, 1:], b2[:, :-1], x2[1:], y], rtol, poison=[5])


@on_gpu
@pytest.mark.parametrize("m", (1, 5, 33, 2047, 2048, 4100))
def test_values_recomputed_where_they_change(rng, m):
    x = rows(rng, m, np.float32)
    run(K.shift_changes_between_loops, [x, np.empty_like(x)], 1e-5, poison=[1])
    x64 = rows(rng, m, np.float64)
    run(K.row_rewritten_between_loops, [x64, np.empty_like(x64)], 1e-12, poison=[1])
    run(K.conditional_first_value, [x64, np.empty_like(x64)], 1e-12, poison=[1])


@on_gpu
@pytest.mark.parametrize("m", (1, 4, 7, 129, 2048, 3001, 8193))
def test_one_value_read_by_two_loops(rng, m):
    x = rows(rng, m, np.float32)
    run(K.log_reused_twice, [x, np.empty_like(x), np.empty_like(x)], 1e-5, poison=[1, 2])
    run(K.log_reused_twice, [rows(rng, m + 3, np.float32)[:, 3:], np.empty_like(x), np.empty_like(x)], 1e-5,
        poison=[1, 2])


@on_gpu
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("m", (1, 2, 6, 33, 2049, 4100))
def test_stores_read_back_and_aliased(rng, dtype, rtol, m):
    x = rows(rng, m, dtype)
    run(K.store_read_back, [x, np.empty_like(x), np.empty_like(x)], rtol, poison=[1, 2])
    # out2 is out: the store that waits for the group's end must come last.
    got = np.full_like(x, np.nan)
    plait.jit(K.store_read_back, target="cuda")(x, got, got)
    want = np.full_like(x, np.nan)
    K.store_read_back(x, want, want)
    np.testing.assert_allclose(got, want, rtol=rtol)


@on_gpu
@pytest.mark.parametrize("m", (0, 1, 2, 9, 64, 1001, 2050))
def test_step_two_from_one(rng, m):
    x = rows(rng, m, np.float32)
    run(K.every_other_column, [x, np.empty_like(x)], 1e-6, poison=[1])


@on_gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32])
@pytest.mark.parametrize("m", (0, 1, 3, 4, 130, 1027, 2048))
def test_small_integers_in_groups(rng, dtype, m):
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), size=(7, m + 1)).astype(dtype)
    run(K.small_int_row_sums, [3, x[:, :m], np.empty(7, np.int64), np.empty(7, np.int64)], 0, poison=[2, 3])
    run(K.small_int_row_sums, [3, x[:, 1:], np.empty(7, np.int64), np.empty(7, np.int64)], 0, poison=[2, 3])


@on_gpu
@pytest.mark.parametrize("shape", [(3, 5, 2), (20, 33, 30), (100, 9, 100), (91, 130, 95)])
def test_teams_of_one_and_teams(rng, shape):
    # 10000 and 8645 elements of c: one thread each; fewer: teams.
    n, k, m = shape
    a, b = positive_rows(rng, k, np.float64, n), positive_rows(rng, m, np.float64, k)
    run(K.row_times_matrix, [a, b, np.empty((n, m))], 1e-12, poison=[2])


@on_gpu
@pytest.mark.parametrize("m,version", [(1, "_warp"), (64, "_warp"), (512, "_warp"), (513, ""), (4096, "")])
def test_teams_of_a_warp_run_their_version(rng, capfd, monkeypatch, m, version):
    # team_for gives a warp up to 128 groups of 4 (512 elements).
    from test_cuda_run import launched
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    a, b = positive_rows(rng, m, np.float64, 9), positive_rows(rng, m, np.float64, 9)
    x = positive_rows(rng, m, np.float64, 1)[0]
    run(K.two_row_dots, [1.5, 1.2, a, b, x, np.empty(9)], 1e-12, poison=[5])
    assert launched(capfd) == ["plait_two_row_dots_k0" + version]


@on_gpu
@pytest.mark.parametrize("n,k", [(1, 1), (5, 3), (70, 4), (301, 2)])
def test_spread_loop_in_a_loop_run_in_step(rng, n, k):
    a, c = rows(rng, k, np.float64, n), rows(rng, n, np.float64, n)
    run(K.lower_rank_update, [0.5, a, c], 1e-12)


@on_gpu
def test_explain_names_groups_and_values(rng):
    x = rows(rng, 300, np.float32)
    explain = run(K.loop_softmax, [x, np.empty_like(x)], 1e-5, poison=[1]).explain()
    assert "each thread of the team takes groups of 4 consecutive iterations" in explain
    assert "one vector access each" in explain
    assert "is computed once per element at line" in explain
    assert "n / 16 (each thread takes groups of 4 consecutive iterations, about 4 groups)" in explain
    explain = run(K.shift_changes_between_loops, [x, np.empty_like(x)], 1e-5, poison=[1]).explain()
    assert "is computed once per element" not in explain
