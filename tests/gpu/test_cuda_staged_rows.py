"""CSR rows staged per block (docs/cuda.md, "CSR rows staged per block").
Everywhere: the kernels of staged_rows_kernels.py compile with nvcc and NVRTC
for sm_90 and the host part with the system compiler; the rule stages the row
loops it allows and explain() says why it leaves the others; and the staged
kernels, compiled as C++ with stand-ins for CUDA's names, run with each
block's threads as std::threads (the block's barrier a std::barrier) against
the undecorated functions: blocks whose rows fit the staged terms and blocks
whose rows do not, row pointers that decrease or lie below zero, several
passes of the loop over workers. On a GPU: the same functions through
plait.jit on fresh random inputs."""

import pathlib

import numpy as np
import pytest

import plait
import staged_rows_kernels as K
from test_cuda_codegen import PLAITC, compile_tests, emit_from, plaitc
import test_cuda_row_groups as row_groups
from test_cuda_run import KINDS, check, floats

KERNELS_FILE = pathlib.Path(__file__).resolve().parent / "staged_rows_kernels.py"
CASES = [(name, signature) for name, signatures in K.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def emit(tmp_path, name, what, signature=None):
    return emit_from(KERNELS_FILE, tmp_path, name, signature or K.KERNELS[name][0], what).read_text()


# ---------------------------------------------------------------- everywhere


(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES)


def remarks(name, signature=None):
    result = plaitc("compile", f"{KERNELS_FILE}::{name}", "--signature", signature or K.KERNELS[name][0],
                    "--target", "cuda", "--emit", "remarks", "--no-boundscheck")
    assert result.returncode == 0, result.stderr
    return result.stdout


@compiles
@pytest.mark.parametrize("name", ["csr_matvec", "csr_sum_and_count"])
def test_row_loops_of_sums_have_a_staged_version(tmp_path, name):
    device = emit(tmp_path, name, "cu")
    device = device[device.index("// ---- device part"):]
    plain, staged = device.split("_staged(")
    assert "p_bounds" not in plain
    assert "p_bounds[p_t] = " in staged and "p_terms0[p_e] = " in staged
    # The team's row loop takes its bounds from the block's and sums the
    # staged terms where its range lies inside the block's; three barriers
    # per pass; the team is a constant of the kernel.
    assert "= p_bounds[p_slot];" in staged and "= p_bounds[p_slot + 1];" in staged
    assert "if (p_staged && p_lo <= p_begin" in staged
    assert staged.count("__syncthreads();") == 3
    assert "constexpr int32_t p_team = 2;" in staged
    # The host runs it when the row loop's first array holds at most 16
    # elements per row.
    host = emit(tmp_path, name, "cpp")
    assert ("plait_cuda::rows_staged(a_" + ("vals" if name == "csr_matvec" else "cols") + "_n0, ") in host
    assert "its staged version plait_" + name + "_k0_staged runs instead: the rows of the loop over `k`" in \
        remarks(name)


@compiles
@pytest.mark.parametrize("name,reason", [("csr_scaled_by_row", "its terms read `i`, which the worker computes"),
                                         ("csr_row_max", "its reduction of `m` is not a sum of numbers"),
                                         ("csr_reads_written_array",
                                          "its terms read `vals`, which the worker writes or binds")])
def test_explain_says_why_a_row_loop_is_not_staged(tmp_path, name, reason):
    assert "the rows of its inner loop are not staged per block: " + reason in remarks(name)
    assert "p_bounds" not in emit(tmp_path, name, "cu")


def emulate(tmp_path, fn, arrays, blocks):
    """Runs the staged version of the kernel of `fn` (its parallel loop over
    the rows of its fifth argument) with `blocks` blocks over copies of
    `arrays` (test_cuda_row_groups.py's emulation: each block's threads as
    std::threads); returns them. Its team is a constant of the kernel (2
    threads)."""
    views = [(k, (slice(None),)) for k in range(len(arrays))]
    return row_groups.emulate(tmp_path, fn, K.KERNELS[fn.__name__][0], [(0, 1, arrays[4].shape[0])], 2, arrays, views,
                              blocks=blocks, version="_staged")


def csr(rng, rows, per_row, form, extra=1):
    """Row pointers (rows + extra entries) of rows of random length around
    `per_row`: increasing; `shuffled`, some interior entries moved by a few
    elements (rows that overlap their neighbours or run backwards); or
    `negative`, all shifted below zero (Python's indices from the end)."""
    counts = rng.integers(0, 2 * per_row + 1, rows + extra - 1)
    rowptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    nnz = int(rowptr[-1])
    if form == "shuffled" and rows > 2:
        moved = rng.choice(np.arange(1, rows + extra - 1), size=max(1, rows // 4), replace=False)
        rowptr[moved] = np.clip(rowptr[moved] + rng.integers(-3, 4, moved.size), 0, nnz)
    elif form == "negative":
        rowptr -= nnz // 2
    return rowptr, nnz


# (rows, per_row, blocks): one row; an empty one; 3 passes of one block of
# 128 rows (its last one partial); 129 rows of 80 elements (the first pass
# does not fit the staged terms, the second does); 2 blocks.
EMULATED = [(1, 3, 1), (1, 0, 1), (300, 5, 1), (129, 80, 1), (700, 2, 2)]


@compiles
@pytest.mark.parametrize("form", ["increasing", "shuffled", "negative"])
@pytest.mark.parametrize("rows,per_row,blocks", EMULATED)
def test_matvec_emulated_on_the_host(tmp_path, rng, form, rows, per_row, blocks):
    rowptr, nnz = csr(rng, rows, per_row, form)
    arrays = [rowptr, rng.integers(0, 50, max(nnz, 1)), floats(rng, max(nnz, 1)), floats(rng, 50),
              np.full(rows, np.nan)]
    expected = [a.copy() for a in arrays]
    K.csr_matvec(*expected)
    got = emulate(tmp_path, K.csr_matvec, arrays, blocks)
    np.testing.assert_allclose(got[4], expected[4], rtol=1e-12, atol=1e-12)


@compiles
@pytest.mark.parametrize("rows,per_row,blocks", [(300, 5, 1), (129, 80, 2), (257, 80, 1)])
def test_two_sums_emulated_on_the_host(tmp_path, rng, rows, per_row, blocks):
    rowptr, nnz = csr(rng, rows, per_row, "shuffled", extra=2)
    arrays = [rowptr, rng.integers(0, 50, nnz), floats(rng, nnz), floats(rng, 50), np.full(rows, np.nan),
              np.full(rows, -7)]
    expected = [a.copy() for a in arrays]
    K.csr_sum_and_count(*expected)
    got = emulate(tmp_path, K.csr_sum_and_count, arrays, blocks)
    np.testing.assert_allclose(got[4], expected[4], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[5], expected[5])


# ---------------------------------------------------------------- on the GPU

# Row lengths on both sides of the host's choice (the staged version up to
# 16 elements per row on average; rows of 0 to twice the mean).
GPU_SHAPES = [(1, 0), (1, 5), (127, 3), (1000, 10), (5000, 15), (3000, 40), (20000, 2)]


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["increasing", "shuffled", "negative"])
@pytest.mark.parametrize("rows,per_row", GPU_SHAPES)
def test_matvec(rng, kind, form, rows, per_row):
    rowptr, nnz = csr(rng, rows, per_row, form)
    n = max(rows, 1)
    args = [rowptr, rng.integers(0, n, max(nnz, 1)), floats(rng, max(nnz, 1)), floats(rng, n), np.empty(rows)]
    check(K.csr_matvec, args, kind, poison=[4], rtol=1e-9)
    # int32 indices; unsigned ones with float32 and a strided vector.
    check(K.csr_matvec, [args[0].astype(np.int32), args[1].astype(np.int32), *args[2:]], kind, poison=[4],
          rtol=1e-9)
    if form == "increasing":
        # (Terms of one sign: float32 sums in another order differ by rounding only.)
        x = rng.random(2 * n).astype(np.float32)[::2]
        vals = rng.random(max(nnz, 1)).astype(np.float32)
        check(K.csr_matvec, [rowptr.astype(np.uint32), args[1].astype(np.uint32), vals, x, np.empty(rows, np.float32)],
              kind, poison=[4], rtol=1e-5)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("rows,per_row", GPU_SHAPES)
def test_sum_and_count_and_the_rows_left_to_teams(rng, kind, rows, per_row):
    rowptr, nnz = csr(rng, rows, per_row, "shuffled", extra=2)
    n = max(rows, 1)
    cols, vals, x = rng.integers(0, n, max(nnz, 1)), floats(rng, max(nnz, 1)), floats(rng, n)
    check(K.csr_sum_and_count, [rowptr, cols, vals, x, np.empty(rows), np.empty(rows, np.int64)], kind,
          poison=[4, 5], rtol=1e-9)
    # The row loops left to the teams (rows that increase: the last kernel
    # writes the first element of its own row).
    plain, nnz = csr(rng, rows, per_row, "increasing")
    vals = floats(rng, max(nnz, 1))
    check(K.csr_scaled_by_row, [plain, vals, np.empty(rows)], kind, poison=[2], rtol=1e-9)
    check(K.csr_row_max, [plain, vals, np.empty(rows)], kind, poison=[2])
    check(K.csr_reads_written_array, [plain, vals, np.empty(rows)], kind, poison=[2], rtol=1e-9)
