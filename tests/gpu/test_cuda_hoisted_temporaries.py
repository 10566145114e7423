"""Serial loops whose steps allocate scratch arrays (hoist_kernels.py): the
allocations move before the loop (transforms/hoist_allocations), and a time
loop runs as one persistent kernel; a worker's serial loop keeps one slice
of the temporaries' buffer per worker. Everywhere: the kernels compile with nvcc and
NVRTC for sm_90 and the host part with the system compiler, and plaitc's
remarks say that each temporary is allocated once and that the loop is one
persistent kernel; the host part allocates the temporaries before the loop.
On a GPU: each kernel runs against the undecorated function on fresh random
inputs, at sizes 0, 1, odd and past one block's 4096 or 16384 iterations (a
cooperative grid), with strided views, int32, int64, float32 and float64."""

import pathlib
import re

import numpy as np
import pytest

import hoist_kernels as H
import plait
from test_cuda_codegen import PLAITC, compile_tests, emit_from, plaitc
from test_cuda_run import check, floats, ints

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "hoist_kernels.py"
CASES = [(name, signature) for name, signatures in H.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

# ---------------------------------------------------------------- everywhere

(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES)

TEMPORARIES = {"floyd_warshall": ["_tmp_array0", "_tmp_array2"], "smoothing_steps": ["tmp"], "scaled_steps": ["tmp"],
               "row_steps": ["tmp"]}
LOOP_VARIABLES = {"floyd_warshall": "k", "smoothing_steps": "t", "scaled_steps": "t", "row_steps": "t"}
TIME_LOOPS = [case for case in CASES if case[0] != "row_steps"]


@compiles
@pytest.mark.parametrize("name,signature", CASES)
def test_temporaries_are_allocated_once(name, signature):
    result = plaitc("compile", f"{KERNELS_FILE}::{name}", "--signature", signature, "--target", "cuda",
                    "--emit", "remarks")
    assert result.returncode == 0, result.stderr
    for temporary in TEMPORARIES[name]:
        assert (f"temporary `{temporary}` allocated once before the loop over `{LOOP_VARIABLES[name]}`"
                in result.stdout), result.stdout


@compiles
@pytest.mark.parametrize("name,signature", TIME_LOOPS)
def test_time_loop_is_one_persistent_kernel(name, signature):
    result = plaitc("compile", f"{KERNELS_FILE}::{name}", "--signature", signature, "--target", "cuda",
                    "--emit", "remarks")
    assert result.returncode == 0, result.stderr
    remarks = result.stdout
    loop = f"loop over `{LOOP_VARIABLES[name]}`"
    assert f"serial {loop}" in remarks and "all steps in one persistent CUDA kernel" in remarks, remarks
    assert "does not run as one persistent kernel" not in remarks, remarks


@compiles
def test_host_allocates_before_the_persistent_launch(tmp_path):
    host = emit_from(KERNELS_FILE, tmp_path, "floyd_warshall", "i32[:, ::1]", "cpp").read_text()
    allocations = [m.start() for m in re.finditer(r"plait_cuda::allocate_device_array<", host)]
    assert len(allocations) == 2, host
    grid = host.find("plait_cuda::persistent_grid(")
    assert grid > max(allocations), host


# ---------------------------------------------------------------- on a GPU

SIZES = [0, 1, 2, 7, 33, 130]


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", SIZES)
def test_floyd_warshall(rng, kind, n):
    check(H.floyd_warshall, [ints(rng, (n, n), np.int32, 0, 50)], kind)
    check(H.floyd_warshall, [ints(rng, (n, n), np.int32, -3, 50)], kind)
    check(H.floyd_warshall, [floats(rng, (n, n))], kind)


@on_gpu
def test_floyd_warshall_on_a_strided_view_and_a_cooperative_grid(rng):
    base = ints(rng, (2 * 37 + 1, 2 * 37 + 1), np.int64, 0, 1000)
    check(H.floyd_warshall, [base[::2, ::2]], "numpy")
    # 200 x 200 = 40000 iterations per step: more than one block holds.
    check(H.floyd_warshall, [ints(rng, (200, 200), np.int32, 0, 1000)], "device")


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 33, 20001])
@pytest.mark.parametrize("steps", [0, 1, 5])
def test_user_scratch_arrays(rng, kind, n, steps):
    check(H.smoothing_steps, [floats(rng, n), steps], kind, rtol=1e-12)
    check(H.scaled_steps, [floats(rng, n), steps], kind, rtol=1e-12)
    check(H.scaled_steps, [floats(rng, n, np.float32), steps], kind, rtol=1e-5)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (7, 33), (300, 1000)])
def test_scratch_row_of_a_worker(rng, kind, shape):
    check(H.row_steps, [floats(rng, shape), np.empty(shape[0])], kind, poison=[1], rtol=1e-12)
    check(H.row_steps, [floats(rng, shape, np.float32), np.empty(shape[0], np.float32)], kind, poison=[1], rtol=1e-4)


@on_gpu
def test_user_scratch_arrays_on_strided_views(rng):
    base = floats(rng, 2 * 501, np.float32)
    check(H.smoothing_steps, [base[::2], 4], "numpy", rtol=1e-5)
    check(H.scaled_steps, [base[::-2], 4], "numpy", rtol=1e-5)
