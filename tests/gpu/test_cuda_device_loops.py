"""Serial loops whose steps launch kernels (reductions, array statements, and
parallel loops that the persistent rule refuses) run on the device as one
kernel of one team (docs/cuda.md,
"Serial loops on the device"). Everywhere: the kernels of
device_loop_kernels.py compile with nvcc and NVRTC for sm_90 and the host
part with the system compiler, and the generated code has the one-team
kernel and the host's choice between it and the launches per step exactly
where the rule allows. On a GPU: each kernel runs against the undecorated
function on fresh random inputs, at sizes 0, 1, odd and past the rule's
8192 elements per dimension or, with parallel loops, 8192 per array (the
launches per step), with strided views,
float32, float64 and integers."""

import pathlib
import re

import numpy as np
import pytest

import device_loop_kernels as D
import plait
from test_cuda_codegen import PLAITC, compile_tests, emit_from
from test_cuda_run import check, floats, ints

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "device_loop_kernels.py"
CASES = [(name, signature) for name, signatures in D.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def emit(tmp_path, name, signature, what, *extra):
    return emit_from(KERNELS_FILE, tmp_path, name, signature, what, *extra).read_text()


# ---------------------------------------------------------------- everywhere


(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES)


@compiles
@pytest.mark.parametrize("name", ["trisolv", "cholesky", "running_maxima", "int_prefix_counts"])
def test_loop_runs_as_one_team_when_every_dimension_is_small(tmp_path, name):
    host = emit(tmp_path, name, D.KERNELS[name][0], "cpp")
    device = emit(tmp_path, name, D.KERNELS[name][0], "cu")
    # The host tests the extents, then launches kernel 0 (the team) with a
    # team of the whole block, else runs the loop launching per step.
    choice = re.search(r"if \((a_\w+_n\d+ <= 8192(?: && )?)+\) \{", host)
    assert choice, host
    first_launch = re.search(r"ctx->cuda->launch\(ctx, (\d+), ", host[choice.end():])
    assert first_launch, host
    assert re.search(r"= plait_cuda::team_for\(\(?int64_t\(4096\)", host[choice.end():]), host
    team_kernel = device.split("extern \"C\" __global__")[1 + int(first_launch.group(1))]
    assert "int32_t p_team" in team_kernel
    if name == "int_prefix_counts":
        # Its steps are independent (each writes its own out[i]): the loop
        # itself is spread over the team, each thread counting serially.
        assert re.search(r"for \(int64_t (p_g\d+) = p_lane; \1 < p_full\d+; \1 \+= p_team\)", team_kernel)
        return
    assert "plait::team_combine(" in team_kernel
    # Elements are stored by the team's first thread, then the team waits
    # before the next step reads them.
    assert "if (p_lane == 0) {" in team_kernel
    assert "plait::team_sync(p_team);" in team_kernel


@compiles
def test_loop_with_parallel_loops_runs_as_one_team_when_every_array_is_small(tmp_path):
    host = emit(tmp_path, "gramschmidt", D.KERNELS["gramschmidt"][0], "cpp")
    device = emit(tmp_path, "gramschmidt", D.KERNELS["gramschmidt"][0], "cu")
    # Each array the loop touches: every dimension at most 8192 and at most
    # 8192 elements; then one team of the whole block runs the steps.
    choice = re.search(r"if \(([^{\n]*<= 8192[^{\n]*)\) \{", host)
    assert choice, host
    assert re.search(r"= plait_cuda::team_for\(\(?int64_t\(4096\)", host[choice.end():]), host
    tests = choice.group(1).split(" && ")
    for name in ("A", "Q", "R"):
        assert f"a_{name}_n0 * a_{name}_n1 <= 8192" in tests, tests
        assert f"a_{name}_n1 <= 8192" in tests, tests
    assert "plait::team_combine(" in device


@compiles
def test_loop_whose_scalar_is_read_after_it_launches_per_step(tmp_path):
    host = emit(tmp_path, "sum_read_after", D.KERNELS["sum_read_after"][0], "cpp")
    device = emit(tmp_path, "sum_read_after", D.KERNELS["sum_read_after"][0], "cu")
    assert "<= 8192" not in host
    assert "p_team" not in device


# ---------------------------------------------------------------- on a GPU

SIZES = [0, 1, 2, 7, 33, 130]


def lower_triangular(rng, n, dtype):
    L = np.tril(floats(rng, (n, n), dtype)) * 0.1
    L[np.arange(n), np.arange(n)] = 1.0 + rng.random(n).astype(dtype)
    return L


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", SIZES)
def test_trisolv(rng, kind, n):
    L = lower_triangular(rng, n, np.float64)
    check(D.trisolv, [L, floats(rng, n), floats(rng, n)], kind, rtol=1e-9)
    L32 = lower_triangular(rng, n, np.float32)
    check(D.trisolv, [L32, floats(rng, n, np.float32), floats(rng, n, np.float32)], kind, rtol=2e-4)


@on_gpu
@pytest.mark.parametrize("n", [5, 64, 301])
def test_trisolv_on_strided_views(rng, n):
    big = lower_triangular(rng, 2 * n, np.float64)[::2, ::2].copy()
    L = np.zeros((n, 2 * n))
    L[:, ::2] = big
    x = np.zeros(2 * n)
    b = floats(rng, 2 * n)
    check(D.trisolv, [L[:, ::2], x[::2], b[::2]], "numpy", rtol=1e-9)


@on_gpu
@pytest.mark.parametrize("n", [7, 100])
def test_trisolv_in_place_with_one_array_for_x_and_b(rng, n):
    # In place: each step reads b[i] before it writes x[i], one element.
    L = lower_triangular(rng, n, np.float64)
    b = floats(rng, n)
    want = b.copy()
    D.trisolv(L, want, want)
    got = plait.to_device(b)
    plait.jit(D.trisolv, target="cuda")(L, got, got)
    np.testing.assert_allclose(got.to_host(), want, rtol=1e-9)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", [1, 2, 5, 33, 130])
def test_cholesky(rng, kind, n):
    M = floats(rng, (n, n))
    check(D.cholesky, [M @ M.T + n * np.eye(n)], kind, rtol=1e-9)


@on_gpu
@pytest.mark.parametrize("n", SIZES + [8193, 9000])
def test_running_maxima_one_team_and_per_step(rng, n):
    # Past 8192 elements the host launches per step: both give the same answer.
    check(D.running_maxima, [floats(rng, n), np.zeros(n)], "device", rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("n", SIZES)
def test_sum_read_after(rng, n):
    check(D.sum_read_after, [floats(rng, n), np.zeros(n)], "numpy", rtol=1e-9)


@on_gpu
@pytest.mark.parametrize("n", SIZES + [300])
def test_int_prefix_counts(rng, n):
    check(D.int_prefix_counts, [ints(rng, n, low=-5, high=5), np.zeros(n, np.int64)], "numpy")


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (3, 1), (5, 3), (33, 17), (70, 60), (100, 90)])
def test_gramschmidt_one_team_and_per_step(rng, kind, shape):
    # (100, 90): 9000 elements, past the rule's 8192: the launches per step.
    M, N = shape
    A = floats(rng, shape) + 2.0 * np.eye(M, N)
    # float64 only: a dot product near zero by chance would fail a relative
    # float32 tolerance (float32 is compiled above).
    check(D.gramschmidt, [A], kind, rtol=1e-9)


@on_gpu
def test_gramschmidt_on_a_strided_view(rng):
    A = floats(rng, (40, 60)) + 2.0 * np.eye(40, 60)
    check(D.gramschmidt, [A[:, ::2]], "numpy", rtol=1e-9)


@on_gpu
def test_explain_says_the_loop_runs_on_the_device(rng):
    kernel = plait.jit(D.trisolv, target="cuda")
    n = 9
    kernel(lower_triangular(rng, n, np.float64), np.zeros(n), floats(rng, n))
    assert "all steps in one CUDA kernel of one team of 256 threads" in kernel.explain()
