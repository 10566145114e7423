"""Sizes from the sliced pragmas on CUDA (docs/cuda.md, "Sizes from the
pragmas"): `single_block`, `le(N)` and `block(N)` on a dimension spread over
a team of threads make the team a constant of the kernel (the block, the
team for N iterations, N threads), and `block(N)` on a parallel dimension
gives its kernel blocks of N threads.

Everywhere (plaitc, nvcc and NVRTC, no GPU needed): the kernels of
pragma_size_kernels.py compile without warnings; the kernels and the host
take the teams and blocks the pragmas ask for; explain() says which pragma
sized what and which sizes a kernel does not use; sizes CUDA cannot honour
are PragmaErrors at the pragma; and the kernels with constant teams of 8 and
32 threads, compiled as C++ with stand-ins for CUDA's names, run with each
block's threads as std::threads against the undecorated functions.

On a GPU, differentially against the undecorated functions: rows of 0 to
4099 elements (beyond le(N)'s N too: the result stays right), float32 and
float64, contiguous and strided, triangles, CSR rows of up to 100 elements,
and the launch log's block sizes."""

import pathlib
import re

import numpy as np
import pytest

import plait
import pragma_size_kernels as K
import test_cuda_row_groups as row_groups
from test_cuda_codegen import PLAITC, compile_tests, emit_from, kernels_by_name, plaitc, refused
from test_cuda_run import KINDS, check, floats

KERNELS_FILE = pathlib.Path(__file__).resolve().parent / "pragma_size_kernels.py"
CASES = [(name, signature) for name, signatures in K.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def emit(tmp_path, name, what):
    return emit_from(KERNELS_FILE, tmp_path, name, K.KERNELS[name][0], what).read_text()


def remarks(name):
    result = plaitc("compile", f"{KERNELS_FILE}::{name}", "--signature", K.KERNELS[name][0], "--target", "cuda",
                    "--emit", "remarks", "--no-boundscheck")
    assert result.returncode == 0, result.stderr
    return result.stdout


# ---------------------------------------------------------------- everywhere


(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES)


@compiles
@pytest.mark.parametrize("name,team", [("softmax_single_block", 256), ("row_sums_single_block", 256),
                                       ("row_sums_at_most_512", 32), ("row_sums_in_strips_of_8", 8),
                                       ("row_sums_in_strips_of_64", 64), ("triangle_at_most_256", 32),
                                       ("csr_row_sums_at_most_64", 32)])
def test_spread_dimensions_give_the_team_as_a_constant(tmp_path, name, team):
    device = kernels_by_name(emit(tmp_path, name, "cu"))
    main = device[f"plait_{name}_k0"]
    assert f"constexpr int32_t p_team = {team};" in main
    assert "__launch_bounds__(256)" in emit(tmp_path, name, "cu")
    # The host passes the same team (the argument is then unused).
    assert re.search(rf"const int32_t p_team\d+ = {team};", emit(tmp_path, name, "cpp"))
    assert f"one team of {team} threads per iteration" in remarks(name)


@compiles
def test_rows_that_vary_get_the_pragmas_team_not_a_small_one(tmp_path):
    # Without le(64) the CSR rows' worker is one thread (or a team of 2):
    # their lengths are not known before the launch.
    assert "le(64) at line" in remarks("csr_row_sums_at_most_64")
    assert "_staged" not in emit(tmp_path, "csr_row_sums_at_most_64", "cu")


@compiles
def test_single_block_keeps_the_version_for_rows_that_fit(tmp_path):
    device = kernels_by_name(emit(tmp_path, "softmax_single_block", "cu"))
    assert "constexpr int32_t p_team = 256;" in device["plait_softmax_single_block_k0_fit"]
    assert "version plait_softmax_single_block_k0_fit runs instead" in remarks("softmax_single_block")


@compiles
@pytest.mark.parametrize("name,block", [("vector_add_blocks_of_128", 128), ("scaled_rows_blocks_of_64", 64)])
def test_block_of_a_parallel_dimension_sets_the_threads_per_block(tmp_path, name, block):
    device = emit(tmp_path, name, "cu")
    for kernel in kernels_by_name(device).values():
        assert kernel.startswith(f"__launch_bounds__({block}) ")
    assert f"blocks of {block} threads" in remarks(name)
    assert f"block({block}) of a parallel dimension: the CUDA kernel of the loop at line" in remarks(name)


@compiles
def test_explain_names_the_sizes_a_kernel_does_not_use():
    text = remarks("sizes_not_used")
    assert "the pragma's le(100) is not used on CUDA for a parallel dimension" in text
    assert "the pragma's single_block is not used on CUDA: the parallel loop at line" in text
    assert "runs each iteration in one thread" in text


@compiles
@pytest.mark.parametrize("pragma,message", [
    (":M=>parallel :N=>block(3),reduce(sum)", "block(3) of a dimension spread over a team of threads sets the "
                                              "team's threads on CUDA: a power of two up to the block's 256"),
    (":M=>parallel :N=>block(512),reduce(sum)", "a power of two up to the block's 256"),
    (":M=>parallel,block(100) :N=>reduce(sum)", "block(100) of a parallel dimension sets the threads of its CUDA "
                                                "kernel's blocks: a power of two from 32 to 1024"),
    (":M=>parallel,block(2048) :N=>reduce(sum)", "a power of two from 32 to 1024"),
])
def test_sizes_cuda_cannot_honour_are_errors_at_the_pragma(tmp_path, pragma, message):
    stderr = refused(tmp_path, "def k(x, y):\n"
                               "    M, N = x.shape\n"
                               f"    #pragma {pragma}\n"
                               "    y[:M] = np.sum(x[:M, :N], axis=1)\n", "f64[:, ::1], f64[::1]")
    assert message in stderr
    assert "line 5" in stderr and f"#pragma {pragma}" in stderr and "^" in stderr


emulated = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
ALL = (slice(None), slice(None))


@emulated
@pytest.mark.parametrize("m", [1, 7, 8, 9, 61, 300])
def test_emulated_constant_teams_of_8_and_32(tmp_path, rng, m):
    # The kernels' constant teams, run with each block's 256 threads: rows
    # of m elements and a prefix of them, and CSR rows longer than le(64)'s
    # 64 too.
    x = rng.random((5, m)) * 2 - 1
    for n in (m, m // 2):
        row_groups.check_emulated(tmp_path, K.row_sums_in_strips_of_8, K.KERNELS["row_sums_in_strips_of_8"][0],
                                  [(0, 1, 5)], 8, [x, np.zeros(5)], [(0, ALL), (1, slice(None))], scalars=(n,),
                                  rtol=1e-12)
    rowptr = np.concatenate([[0], np.cumsum(rng.integers(0, 2 * m, size=5))]).astype(np.int64)
    vals = rng.random(int(rowptr[-1]) + 1)
    row_groups.check_emulated(tmp_path, K.csr_row_sums_at_most_64, K.KERNELS["csr_row_sums_at_most_64"][0],
                              [(0, 1, 5)], 32, [rowptr, vals, np.zeros(5)],
                              [(0, slice(None)), (1, slice(None)), (2, slice(None))], rtol=1e-12)


# ---------------------------------------------------------------- on a GPU


@on_gpu
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("m", [1, 3, 255, 256, 512, 513, 1024, 2048, 4099])
def test_single_block_softmax_and_row_sums(rng, dtype, rtol, m):
    x = floats(rng, (5, m), dtype) * 4
    check(K.softmax_single_block, [x, np.empty_like(x)], "numpy", poison=[1], rtol=rtol)
    base = floats(rng, (10, 2 * m + 1), dtype) * 4
    check(K.softmax_single_block, [base[::2, 1::2], np.empty((5, m), dtype)], "numpy", poison=[1], rtol=rtol)
    if dtype == np.float32:
        # Positive terms: a sum near zero would amplify the reassociation.
        check(K.row_sums_single_block, [np.abs(x), np.empty(5, dtype)], "numpy", poison=[1], rtol=rtol)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m", [0, 1, 5, 64, 512, 513, 3000])
def test_le_and_block_row_sums(rng, kind, m):
    # Rows longer than le(512) still sum right (the team is a cost choice);
    # positive terms, as a sum near zero would amplify the reassociation.
    x = rng.random((7, m), dtype=np.float32)
    check(K.row_sums_at_most_512, [x, np.empty(7, np.float32)], kind, poison=[1], rtol=1e-5)
    check(K.row_sums_in_strips_of_64, [x, np.empty(7, np.float32)], kind, poison=[1], rtol=1e-5)
    x64 = rng.random((7, 2 * m))
    check(K.row_sums_in_strips_of_8, [m, x64, np.empty(7)], kind, poison=[2], rtol=1e-12)
    check(K.row_sums_at_most_512, [x64[:, ::2], np.empty(7)], kind, poison=[1], rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("n", [0, 1, 31, 300])
def test_triangle_and_csr_rows_with_le(rng, n):
    x = floats(rng, (n, n), np.float32)
    out = floats(rng, (n, n), np.float32)
    check(K.triangle_at_most_256, [x, out], "numpy", rtol=1e-6)
    lengths = rng.integers(0, 101, size=n)
    rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    vals = floats(rng, int(rowptr[-1]))
    check(K.csr_row_sums_at_most_64, [rowptr, vals, np.empty(n)], "numpy", poison=[2], rtol=1e-12)
    check(K.csr_row_sums_at_most_64, [rowptr.astype(np.int32), vals.astype(np.float32), np.empty(n, np.float32)],
          "numpy", poison=[2], rtol=1e-5)


@on_gpu
@pytest.mark.parametrize("n", [1, 127, 128, 100003])
def test_blocks_of_a_parallel_dimension(rng, capfd, monkeypatch, n):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    a, b = floats(rng, n, np.float32), floats(rng, n, np.float32)
    check(K.vector_add_blocks_of_128, [a, b, np.empty(n, np.float32)], "numpy", poison=[2])
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("plait: launch ")]
    assert lines and all(" block 128 " in line for line in lines)
    x = floats(rng, (3, n % 1000 + 1))
    check(K.scaled_rows_blocks_of_64, [x, np.empty_like(x)], "numpy", poison=[1])
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("plait: launch ")]
    assert lines and all(" block 64 " in line for line in lines)


@on_gpu
def test_sizes_not_used_keep_the_results(rng):
    x = floats(rng, (9, 40))
    check(K.sizes_not_used, [x, np.empty(9)], "numpy", poison=[1], rtol=1e-12)
