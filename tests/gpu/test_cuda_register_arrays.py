"""Persistent kernels with their arrays in registers (docs/cuda.md, "Arrays in
registers"), emulated on the host so that they run where no GPU is: the
`_registers` version of a time loop's kernel compiles as C++ with stand-ins
for CUDA's names and the device runtime's own slot_bound and onchip_bytes;
the block's threads run as std::threads, __syncthreads a std::barrier, the
dynamic shared memory one buffer. The results must be the undecorated
function's, bit for bit: halos across threads, slots past the arrays' ends,
loops that store at an offset, under an `if`, and iterations that
`continue`. (test_cuda_run.py runs the same kernels on a GPU.)"""

import pathlib
import re

import numpy as np
import pytest

import cuda_kernels as K
import emulation
from test_cuda_codegen import PLAITC, emit_from

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
KERNELS_FILE = HERE / "cuda_kernels.py"

PRELUDE = r"""
#include <barrier>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>
struct p_dim { unsigned x; };
static thread_local p_dim threadIdx;
static p_dim blockIdx, blockDim, gridDim;
#define __global__
#define __launch_bounds__(n)
#define __device__
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))
namespace plait {
struct device_error;
struct thread_errors {
  device_error* err;
  bool raised;
};
// The call has recorded no error (the entry and back-edge tests).
inline bool stopped(const device_error*) { return false; }
inline bool block_stopped(const device_error*) { return false; }
inline bool team_stopped(const device_error*, int) { return false; }
}
static std::unique_ptr<std::barrier<>> p_block;
inline void __syncthreads() { p_block->arrive_and_wait(); }
alignas(16) static unsigned char p_shared_memory[1 << 20];
"""


def runtime_slots():
    """The device runtime's plait::slot_bound and plait::onchip_bytes."""
    source = (REPO / "src" / "runtime" / "cuda_device_runtime.cuh").read_text()
    begin = source.index("// A bound of a thread's slots")
    end = source.index("\n}\n", source.index("uint64_t onchip_bytes(int64_t count")) + 3
    return "namespace plait {\n" + source[begin:end] + "}\n"


def registers_kernel(tmp_path, name, signature):
    """The `_registers` kernel of `name`'s persistent kernel, as C++ text whose
    dynamic shared memory is p_shared_memory, and its slots per thread."""
    device = emit_from(KERNELS_FILE, tmp_path, name, signature, "cu").read_text()
    begin = device.index(f"extern \"C\" __global__ void __launch_bounds__(1024) plait_{name}_k0_registers(")
    kernel = device[begin:device.index("\n}\n", begin) + 3]
    kernel = kernel.replace("extern __shared__ __align__(16) unsigned char p_onchip[];",
                            "unsigned char* const p_onchip = p_shared_memory;")
    slots = int(re.search(r"const int64_t p_e0 = \(int64_t\)threadIdx\.x \* (\d+);", kernel).group(1))
    return kernel, slots


def emulate(tmp_path, name, signature, steps, arrays, scalars):
    """Runs kernel `name`'s registers version over copies of `arrays` (by
    parameter name) for `steps` steps of its time loop `range(steps)`;
    `scalars` gives the other scalar parameters (v_<name>). Returns the copies."""
    kernel, slots = registers_kernel(tmp_path, name, signature)
    params = re.search(r"plait_\w+_registers\((.*)\) \{", kernel).group(1).split(", ")
    copies = [a.copy() for a in arrays.values()]
    names = list(arrays)
    args, time_loop = [], iter([0, 1, steps])
    for param in params:
        ptype, pname = param.rsplit(" ", 1)
        if pname.startswith(("p_begin", "p_step", "p_trip")):
            args.append(str(next(time_loop)))
        elif pname in ("p_err", "p_barrier"):
            args.append("nullptr")
        elif pname == "p_apart":
            args.append("true")
        elif pname.startswith("v_"):
            args.append(repr(scalars[pname[2:]]))
        else:
            m = re.fullmatch(r"a_(\w+)_(data|n0|s0)", pname)
            k = names.index(m.group(1))
            args.append(f"reinterpret_cast<{ptype}>(base{k})" if m.group(2) == "data" else
                        str(copies[k].shape[0]) if m.group(2) == "n0" else "1")
    # plait_cuda::register_block: enough whole warps for the longest array.
    warps = -(-max(a.shape[0] for a in copies) // (32 * slots))
    threads = 32 * max(1, warps)
    launch = f"""  gridDim.x = 1;
  blockDim.x = {threads};
  p_block = std::make_unique<std::barrier<>>({threads});
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < {threads}; ++t)
    threads.emplace_back([=] {{
      threadIdx.x = t;
      plait_{name}_k0_registers({", ".join(args)});
    }});
  for (std::thread& t : threads) t.join();
"""
    return emulation.run(tmp_path, PRELUDE + runtime_slots(), kernel, copies, launch)


def floats(rng, n, dtype=np.float64):
    return (rng.random(n) * 2 - 1).astype(dtype)


emulated = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")


@emulated
@pytest.mark.parametrize("n", [1, 2, 13, 40, 1001])
def test_emulated_jacobi_1d_in_registers(tmp_path, rng, n):
    a, b = floats(rng, n), floats(rng, n)
    want_a, want_b = a.copy(), b.copy()
    K.jacobi_1d(3, want_a, want_b)
    got_a, got_b = emulate(tmp_path, "jacobi_1d", "int, f64[::1], f64[::1]", 3, {"a": a, "b": b}, {})
    np.testing.assert_array_equal(got_a, want_a)
    np.testing.assert_array_equal(got_b, want_b)


@emulated
@pytest.mark.parametrize("n", [4, 5, 37, 400])
def test_emulated_three_types_wide_halos_and_an_if(tmp_path, rng, n):
    a, b, c, w = floats(rng, n), floats(rng, n, np.float32), rng.integers(-9, 9, n).astype(np.int32), floats(rng, n)
    want = [x.copy() for x in (a, b, c)]
    K.register_stencil_steps(*want, w, 5)
    got = emulate(tmp_path, "register_stencil_steps", "f64[::1], f32[::1], i32[::1], f64[::1], int", 5,
                  {"a": a, "b": b, "c": c, "w": w}, {"n": n})
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g, e)


@emulated
@pytest.mark.parametrize("n", [3, 50, 600])
def test_emulated_iterations_that_continue(tmp_path, rng, n):
    a, b = floats(rng, n), floats(rng, n)
    want_a, want_b = a.copy(), b.copy()
    K.skipping_steps(want_a, want_b, 4)
    got_a, got_b = emulate(tmp_path, "skipping_steps", "f64[::1], f64[::1], int", 4, {"a": a, "b": b}, {"n": n})
    np.testing.assert_array_equal(got_a, want_a)
    np.testing.assert_array_equal(got_b, want_b)
