"""Device code stops at its first error as Python stops (docs/cuda.md,
"Errors on the device"). Everywhere: the kernels of stop_kernels.py compile
with nvcc and NVRTC for sm_90 and the host part with the system compiler,
the generated code tests the device error record where it should, and the
device runtime's grid barrier, run on the host with blocks as threads, lets
every block leave at the same barrier after an error. On a
GPU: each kernel raises Python's exception, and the arrays hold what the
undecorated function leaves, exactly where Python defines it (the steps of a
time loop before the failing one, a thread's statements before its failing
one) and in the parts a parallel loop leaves open (iterations other than the
failing one may or may not have run) a value Python could have left."""

import math
import pathlib
import re
import subprocess

import numpy as np
import pytest

import emulation
import plait
import precompiled
import stop_kernels as S
from test_cuda_codegen import PLAITC, compile_tests, emit_from
from test_cuda_run import to_kind, to_numpy

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "stop_kernels.py"
CASES = [(name, signature) for name, signatures in S.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

# A value no kernel computes: an element that still holds it was not written.
POISON = -7.0


def emit(tmp_path, name, what="cu"):
    return emit_from(KERNELS_FILE, tmp_path, name, S.KERNELS[name][0], what, "--boundscheck").read_text()


# ---------------------------------------------------------------- everywhere

(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES)


@compiles
def test_every_kernel_tests_the_record_at_its_entry(tmp_path):
    for name in S.KERNELS:
        device = emit(tmp_path, name)
        kernels = device.split('extern "C" __global__')[1:]
        assert kernels, name
        for kernel in kernels:
            body = kernel[kernel.index("{\n") + 2:].split("\n")
            first = next(line for line in body if "__shared__" not in line)
            assert re.fullmatch(r"  if \(plait::(stopped|block_stopped)\(p_err\)\) return;  // an error stops the call|"
                                r"  if \(plait::grid_sync\(p_barrier, p_err\)\) return;  // an error stops the call",
                                first), (name, kernel[:300])


@compiles
def test_persistent_kernel_tests_the_record_after_each_barrier(tmp_path):
    device = emit(tmp_path, "failing_step")
    kernel = device[device.index("plait_failing_step_k0("):]
    kernel = kernel[:kernel.index("\n}\n")]
    # The entry's barrier, then one after each of the step's two loops (the
    # step may raise, so none is left out when the arrays are apart).
    assert kernel.count("if (plait::grid_sync(p_barrier, p_err)) return;") == 3
    assert "p_apart" not in kernel
    # The thread that raised does not store the failed value.
    assert "if (p_errs.raised) goto p_stop" in kernel


@compiles
def test_persistent_kernel_tests_the_record_after_a_failing_scalar(tmp_path):
    device = emit(tmp_path, "failing_scalar_step")
    kernel = device[device.index("plait_failing_scalar_step_k0("):]
    kernel = kernel[:kernel.index("\n}\n")]
    # Every thread computes the step's scalar alike, then waits at a barrier
    # that tells all of them whether it failed, before the step's loop.
    division = kernel.index("plait::floordiv_checked")
    barrier = kernel.index("if (plait::grid_sync(p_barrier, p_err)) return;", division)
    assert barrier < kernel.index("a_a_data[", division)


@compiles
def test_a_thread_stops_its_serial_loop_at_the_failing_statement(tmp_path):
    for name in ("prefix_sums_until_negative", "serial_prefix_until_negative"):
        device = emit(tmp_path, name)
        test = device.index("if (p_errs.raised) goto p_stop")
        assert test < device.index("a_out_data[", test), name
        assert re.search(r"\n *p_stop\d+:;\n", device), name  # the label after the thread's statements


@compiles
def test_host_loop_tests_its_condition_for_errors(tmp_path):
    host = emit(tmp_path, "grow_until", "cpp")
    assert "while (true) {" in host
    assert host.index("plait_cuda::read(ctx") < host.index(
        "if (__builtin_expect(ctx->error_kind != 0, 0)) return ctx->error_kind;", host.index("while (true) {"))


# The device runtime's grid barrier on the host: blocks of one thread as
# std::threads (a block's __syncthreads_or is its thread's value), CUDA's
# atomics and fences as C++'s.
GRID_PRELUDE = r"""
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>
struct p_dim { unsigned x; };
static thread_local p_dim threadIdx, blockIdx;
static p_dim gridDim, blockDim{1};
#define __device__
#define __forceinline__ inline
inline void __syncthreads() {}
inline int __syncthreads_or(int x) { return x; }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline unsigned atomicExch(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).exchange(v); }
namespace plait {
struct device_error { int kind, line, col, message; long long values[3]; };
"""

# Blocks run `steps` steps, a grid barrier after each; in some trials one
# block records an error as soon as it leaves the barrier before step
# `failing` (while the others may still be reading that barrier's answer).
# Every block must leave at the barrier after the failing step, none later
# or earlier, and none may wait for ever (the run's timeout). Three blocks:
# a block that spins while another waits for a core holds its core for a
# whole time slice, and CI has two cores.
GRID_MAIN = r"""
int main() {
  constexpr unsigned blocks = 3;
  constexpr int steps = 12;
  for (int trial = 0; trial < 48; ++trial) {
    plait::device_error err{};
    alignas(8) unsigned barrier[2] = {0, 4000000000u + (unsigned)trial * 977u};  // any generation
    const int failing = trial % 5 == 0 ? steps : trial % steps;
    const unsigned raiser = (unsigned)trial % blocks;
    std::vector<int> left(blocks, -1);
    gridDim.x = blocks;
    std::vector<std::thread> threads;
    for (unsigned b = 0; b < blocks; ++b)
      threads.emplace_back([&, b] {
        blockIdx.x = b;
        threadIdx.x = 0;
        if (plait::grid_sync(barrier, &err)) return;  // the kernel's entry
        for (int s = 0; s < steps; ++s) {
          if (s == failing && b == raiser) {
            int none = 0;
            std::atomic_ref<int>(err.kind).compare_exchange_strong(none, 1);
          }
          if (plait::grid_sync(barrier, &err)) {
            left[b] = s;
            return;
          }
        }
        left[b] = steps;
      });
    for (std::thread& t : threads) t.join();
    for (unsigned b = 0; b < blocks; ++b)
      if (left[b] != failing) {
        std::printf("trial %d: block %u left after step %d, not %d\n", trial, b, left[b], failing);
        return 1;
      }
  }
  return 0;
}
"""


def runtime_function(source, signature):
    """The text of the device runtime's function that starts with `signature`."""
    begin = source.index(signature)
    return source[begin:source.index("\n}\n", begin) + 3] if "{\n" in source[begin:source.index("\n", begin) + 1] \
        else source[begin:source.index("\n", begin) + 1]


def test_grid_barrier_lets_every_block_leave_at_the_same_barrier(tmp_path):
    source = (HERE.parent.parent / "src" / "runtime" / "cuda_device_runtime.cuh").read_text()
    program = (GRID_PRELUDE + runtime_function(source, "__device__ __forceinline__ bool stopped(") +
               runtime_function(source, "__device__ __forceinline__ bool grid_sync(") + "}\n" + GRID_MAIN)
    (tmp_path / "grid.cpp").write_text(program)
    built = subprocess.run([precompiled.compiler(), *emulation.FLAGS, "-o", str(tmp_path / "grid"),
                            str(tmp_path / "grid.cpp")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(tmp_path / "grid")], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr


# ---------------------------------------------------------------- on a GPU

def run_both(fn, args, kind):
    """Runs fn undecorated on copies of args and compiled for CUDA (with
    bounds checks) on the kind of arrays under test; both must raise the
    same exception class. Returns Python's arguments and the GPU's (NumPy)."""
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(Exception) as python_error:
        fn(*expected)
    gpu_args = [to_kind(a, kind) for a in args]
    kernel = plait.jit(fn, target="cuda", boundscheck=True)
    with pytest.raises(type(python_error.value)):
        kernel(*gpu_args)
    return expected, [to_numpy(a) for a in gpu_args]


# Sizes of the time loops' arrays: one block (with the arrays in registers
# where there are no bounds checks), on chip, a cooperative grid, and
# launches per step (past 4 Mi iterations).
STEP_SIZES = (1, 1000, 13000, 100003, 5_000_001)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", STEP_SIZES)
def test_time_loop_stops_at_the_failing_step(rng, kind, n):
    a, c, b = rng.random(n), rng.random(n), rng.random(5)
    idx = np.array([0, 3, 1, 5, 2, 0, 1], dtype=np.int64)  # step 3: b[5], b[6] are out of range
    if n <= 1000:
        with pytest.raises(IndexError):
            S.failing_step(a.copy(), c.copy(), b, idx, 7)
    # What Python leaves, with NumPy's arithmetic (the same operations in the
    # same order): steps 0 to 2 ran, then every iteration of step 3's first
    # loop failed, so neither array changed in it and nothing after it ran.
    want_a, want_c = a.copy(), c.copy()
    for t in range(3):
        want_a = want_a + b[idx[t] + np.arange(n) % 2]
        want_c = want_c * 2.0
    args = [to_kind(x, kind) for x in (a, c, b, idx)]
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
        plait.jit(S.failing_step, target="cuda", boundscheck=True)(*args, 7)
    np.testing.assert_array_equal(to_numpy(args[0]), want_a)
    np.testing.assert_array_equal(to_numpy(args[1]), want_c)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", STEP_SIZES)
def test_time_loop_in_registers_stops_at_the_failing_step(rng, kind, n):
    a, c = rng.random(n), rng.random(n)
    b = np.array([0.5, 1.0, 2.0, -1.0, 3.0, 4.0])  # step 3: a math domain error
    if n <= 1000:
        with pytest.raises(ValueError, match="math domain error"):
            S.failing_root_step(a.copy(), c.copy(), b, 6)
    want_a, want_c = a.copy(), c.copy()
    for t in range(3):
        want_a = want_a + np.sqrt(b[t] * (1 + np.arange(n) % 2))
        want_c = want_c * 2.0
    args = [to_kind(x, kind) for x in (a, c, b)]
    with pytest.raises(ValueError, match="math domain error"):
        plait.jit(S.failing_root_step, target="cuda")(*args, 6)
    np.testing.assert_array_equal(to_numpy(args[0]), want_a)
    np.testing.assert_array_equal(to_numpy(args[1]), want_c)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", STEP_SIZES)
def test_time_loop_stops_at_a_failing_scalar_of_its_step(rng, kind, n):
    a = rng.random(n)
    if n <= 1000:
        with pytest.raises(ZeroDivisionError):
            S.failing_scalar_step(a.copy(), 3, 6)
    want = a.copy()
    for t in range(3):
        want = want + 10 // (3 - t)
    got = to_kind(a, kind)
    with pytest.raises(ZeroDivisionError):
        plait.jit(S.failing_scalar_step, target="cuda")(got, 3, 6)
    np.testing.assert_array_equal(to_numpy(got), want)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", (1, 1000, 100003))
def test_launches_after_a_failed_one_do_nothing(rng, kind, n):
    a = rng.random(n)
    idx = np.array([0, n - 1, 0, n, 0, n - 1], dtype=np.int64)  # step 3 stores a[n]
    expected, got = run_both(S.failing_store_after_loop, [a, idx, 6], kind)
    np.testing.assert_array_equal(got[0], expected[0])


def prefix_sums(row):
    """Python's running sums of a row's square roots up to its first
    negative element, and that element's index (the row's length if none)."""
    sums, s = [], 0.0
    for x in row:
        if x < 0:
            break
        s = s + math.sqrt(x)
        sums.append(s)
    return np.array(sums), len(sums)


def assert_stopped_prefix(got, row):
    """A thread's row: its running sums up to some point no later than the
    first negative element (where it or another thread's error stopped it),
    unwritten after."""
    want, first_negative = prefix_sums(row)
    written = int(np.count_nonzero(got != POISON))
    assert written <= first_negative
    np.testing.assert_array_equal(got[:written], want[:written])
    assert (got[written:] == POISON).all()


@on_gpu
@pytest.mark.parametrize("rows,cols", [(1, 50), (300, 40), (5000, 7)])
def test_a_thread_stops_its_serial_loop_at_its_error(rng, rows, cols):
    m = rng.random((rows, cols)) + 0.5
    for r in rng.choice(rows, size=max(1, rows // 10), replace=False):
        m[r, rng.integers(cols)] = -1.0
    out = np.full((rows, cols), POISON)
    _, got = run_both(S.prefix_sums_until_negative, [m, out], "numpy")
    # Every row, with or without a negative element: other rows' errors may
    # stop a thread early, its own stops it at the latest.
    for r in range(rows):
        assert_stopped_prefix(got[1][r], m[r])


@on_gpu
@pytest.mark.parametrize("n,negative", [(1, 0), (100, 37), (5000, 4999)])
def test_one_device_thread_stops_at_its_error(rng, n, negative):
    a = rng.random(n) + 0.5
    a[negative] = -2.0
    out = np.full(n, POISON)
    expected, got = run_both(S.serial_prefix_until_negative, [a, out], "numpy")
    # One thread, in order: exactly what Python wrote.
    np.testing.assert_array_equal(got[1], expected[1])


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", (10, 100003))
def test_host_loop_on_device_values_stops_at_the_error(rng, kind, n):
    a = rng.random(n)
    d = rng.random(n) + 1.0
    d[n // 2] = -1.0
    # Without the error the loop would take about ten rounds.
    limit = float(a[0] + 10 * math.sqrt(d[0]))
    _, got = run_both(S.grow_until, [a, d, limit], kind)
    # The first round's parallel loop failed: each element grew once or not
    # at all, the failing one not at all, and no second round ran.
    grown = a + np.sqrt(np.abs(d))
    assert got[0][n // 2] == a[n // 2]
    assert ((got[0] == a) | (got[0] == grown)).all()


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
def test_a_device_error_comes_before_a_later_host_error(rng, kind):
    d = rng.random(1000) + 1.0
    d[500] = -1.0
    run_both(S.device_error_then_host_error, [np.zeros(1000), d, np.zeros(0)], kind)


@on_gpu
@pytest.mark.parametrize("rows,cols", [(64, 300), (3000, 40)])
def test_team_rows_are_whole_or_untouched(rng, rows, cols):
    m = rng.random((rows, cols)) + 0.5
    failing = rng.choice(rows, size=max(1, rows // 20), replace=False)
    m[failing, 0] = -1.0
    out = np.full(rows, POISON)
    _, got = run_both(S.row_sums_of_roots, [m, out], "numpy")
    want = np.sqrt(np.abs(m)).sum(axis=1)
    for r in range(rows):
        if r in failing or got[1][r] == POISON:
            continue
        np.testing.assert_allclose(got[1][r], want[r], rtol=1e-12)
