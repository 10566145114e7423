"""Triangular matrix products and solves handed to cuBLAS
(transforms/offload_matmul, docs/cuda.md "Matrix products"): the kernels of triangle_kernels.py compile
with nvcc and the host compiler everywhere; on a GPU they run differentially
against the undecorated functions: NPBench's syrk and syr2k, an upper
triangle with transposed operands, float32 and float64, empty, 1-element and
odd sizes, operands cuBLAS cannot take (strided, C too small for the
triangle) that run the loops instead, and the nests the pass must leave as
loops (strict triangle, C read elsewhere, a step over k)."""

import pathlib

import numpy as np
import pytest

import plait
import triangle_kernels as T
from test_cuda_codegen import PLAITC, compile_tests, emit_from, plaitc
from test_cuda_matmul import on_gpu_as
from test_cuda_run import KINDS, check

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "triangle_kernels.py"
CASES = [(name, signature) for name, signatures in T.KERNELS.items() for signature in signatures]

compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")
on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

RTOL = {np.float64: 1e-12, np.float32: 2e-5}
SIZES = [(0, 3), (1, 1), (1, 4), (5, 0), (7, 3), (33, 17), (130, 65)]


def positive(rng, shape, dtype=np.float64):
    # Positive values: sums in any order stay within rtol of each other.
    return (rng.random(shape) + 0.5).astype(dtype)


# ---------------------------------------------------------------- everywhere


(test_device_part_compiles_with_nvcc_without_warnings, test_device_part_compiles_with_nvrtc,
 test_host_part_compiles_with_warnings_as_errors) = compile_tests(KERNELS_FILE, CASES, boundscheck=False)


@compiles
@pytest.mark.parametrize("name,signature", CASES)
def test_triangles_call_gemmt_and_other_nests_keep_their_loops(tmp_path, name, signature):
    host = emit_from(KERNELS_FILE, tmp_path, name, signature, "cpp").read_text()
    offloaded = name in ("syrk", "syr2k", "upper_accumulate", "covariance", "trmm", "trmm_rows_of_a", "symm",
                         "symm_serial", "trisolv", "trisolv_in_place", "trisolv_columns", "cholesky")
    calls = ("ctx->cuda->gemmt(", "ctx->cuda->trmm(", "ctx->cuda->symm(", "ctx->cuda->trsv(")
    assert any(call in host for call in calls) == offloaded
    if offloaded:
        # The loops stay as the fallback, after the row check.
        assert "if (p_gemm" in host and "p_ok" in host


@compiles
@pytest.mark.parametrize("name", ["symm", "symm_serial"])
def test_symm_is_called_only_where_the_rows_can_take_the_plain_path(tmp_path, name):
    # The version of the row loop that copies overlapping arrays keeps the
    # overlap test that the rows' plain path needs false: it keeps its loops.
    host = emit_from(KERNELS_FILE, tmp_path, name, T.KERNELS[name][0], "cpp").read_text()
    assert host.count("ctx->cuda->symm(") == 1
    remarks = plaitc("compile", f"{KERNELS_FILE}::{name}", "--signature", T.KERNELS[name][0], "--target", "cuda",
                     "--emit", "remarks", "--no-boundscheck")
    assert remarks.returncode == 0, remarks.stderr
    assert remarks.stdout.count("handed to the BLAS library as one symm") == 1


@compiles
def test_syr2k_passes_both_products_and_syrk_one(tmp_path):
    syr2k = emit_from(KERNELS_FILE, tmp_path, "syr2k", T.KERNELS["syr2k"][0], "cpp").read_text()
    call = syr2k[syr2k.index("ctx->cuda->gemmt("):]
    call = call[:call.index(";")]
    assert "nullptr" not in call and call.count("a_A_data") == 2 and call.count("a_B_data") == 2
    syrk = emit_from(KERNELS_FILE, tmp_path, "syrk", T.KERNELS["syrk"][0], "cpp").read_text()
    assert "0.0, nullptr, 0, 0, nullptr, 0, 0" in syrk


# ---------------------------------------------------------------- on the GPU


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n,m", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_syrk(rng, kind, n, m, dtype):
    kernel = check(T.syrk, [1.5, 1.25, positive(rng, (n, n), dtype), positive(rng, (n, m), dtype)], kind,
                   rtol=RTOL[dtype])
    assert "lower triangle of C = A @ A.T handed to the BLAS library" in kernel.explain()


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n,m", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_syr2k(rng, kind, n, m, dtype):
    args = [0.75, 1.5, positive(rng, (n, n), dtype), positive(rng, (n, m), dtype), positive(rng, (n, m), dtype)]
    kernel = check(T.syr2k, args, kind, rtol=RTOL[dtype])
    assert "lower triangle of C = B @ A.T + A @ B.T handed to the BLAS library" in kernel.explain()


@on_gpu
@pytest.mark.parametrize("n,m", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_upper_triangle_with_transposed_operands(rng, n, m, dtype):
    # C += A.T @ B - 2 A.T @ B = C - A.T @ B over the upper triangle, with
    # C about 4 times A.T @ B: no cancellation.
    args = [positive(rng, (n, n), dtype) * 4 * m, positive(rng, (m, n), dtype), positive(rng, (m, n), dtype)]
    # Nothing relates A's shape to C's: checked (the default), the indices
    # are tested and the product runs as loops; unchecked, the BLAS takes it.
    checked = check(T.upper_accumulate, args, "numpy", rtol=RTOL[dtype] * 10)
    assert "the indices of 'A', 'B' are checked once before the loop" in checked.explain()
    assert "handed to the BLAS library" not in checked.explain()
    kernel = check(T.upper_accumulate, args, "numpy", rtol=RTOL[dtype] * 10, boundscheck=False)
    assert "upper triangle of C = A.T @ B + A.T @ B handed to the BLAS library" in kernel.explain()


@compiles
def test_covariance_mirrors_in_a_second_loop_after_the_product(tmp_path):
    host = emit_from(KERNELS_FILE, tmp_path, "covariance", T.KERNELS["covariance"][0], "cpp").read_text()
    # After the library call: the product's fallback kernel, then the
    # mirror loop's kernel (a loop of its own, split off the product's);
    # a team kernel's version for teams of a warp is a launch of its own.
    after = host[host.index("ctx->cuda->gemmt("):]
    assert after.count("ctx->cuda->launch(") - after.count(" == 32) {") == 2


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("M,N", [(0, 4), (1, 2), (2, 3), (33, 17), (130, 40)])
def test_covariance(rng, kind, M, N):
    data = rng.random((N, M)) * 2 - 1
    kernel = check(T.covariance, [M, np.float64(N), data], kind, rtol=1e-9)
    assert "upper triangle of cov = data.T @ data handed to the BLAS library" in kernel.explain()


@on_gpu
def test_float32_covariance_divided_in_float64_runs_the_loops(rng):
    # The float32 product divided by a float64 scalar is a float64 value:
    # not the library's float32 product.
    # Centred data cancels: the comparison is absolute at the scale of the
    # entries (about 0.3).
    data = (rng.random((20, 30)) * 2 - 1).astype(np.float32)
    expected = T.covariance(30, np.float64(20), data.copy())
    kernel = plait.jit(T.covariance, target="cuda")
    np.testing.assert_allclose(kernel(30, np.float64(20), data.copy()), expected, rtol=1e-4, atol=1e-5)
    assert "triangle of cov" not in kernel.explain()
    assert "triangular update kept as loops, not handed to the BLAS library: the result is not" in kernel.explain()


@on_gpu
@pytest.mark.parametrize("layout", ["fortran", "sliced", "strided"])
def test_operand_layouts(rng, layout):
    # Fortran order and column slices go to the library; strided views run
    # the loops; the result is the same.
    torch = pytest.importorskip("torch")
    n, m = 37, 21
    c, a = positive(rng, (n, n)), positive(rng, (n, m))
    expected = c.copy()
    T.syrk(1.5, 1.25, expected, a)

    def on_gpu_as(x):
        t = torch.from_numpy(np.ascontiguousarray(x)).cuda()
        if layout == "fortran":
            return t.T.contiguous().T
        rows, cols = x.shape
        view = torch.zeros((rows, cols + 3), dtype=t.dtype, device="cuda")[:, 2:2 + cols] if layout == "sliced" \
            else torch.zeros((2 * rows, 2 * cols), dtype=t.dtype, device="cuda")[::2, ::2]
        view.copy_(t)
        return view

    got = on_gpu_as(c)
    plait.jit(T.syrk, target="cuda")(1.5, 1.25, got, on_gpu_as(a))
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)


@on_gpu
def test_transposed_and_non_contiguous_numpy_operands(rng):
    n, m = 29, 11
    a = positive(rng, (m, n)).T  # Fortran-ordered view
    check(T.syrk, [2.0, 0.5, positive(rng, (n, n)), a], "numpy", rtol=1e-12)
    check(T.syrk, [2.0, 0.5, positive(rng, (n, n)), positive(rng, (n, 2 * m))[:, ::2]], "numpy", rtol=1e-12)


@on_gpu
def test_c_wider_than_the_triangle(rng):
    # C has more columns than rows: the triangle of its first n columns; the
    # row condition holds (the slices are not clamped by C's extent).
    check(T.syrk, [1.5, 1.25, positive(rng, (9, 14)), positive(rng, (9, 5))], "numpy", rtol=1e-12)


@on_gpu
def test_zero_beta_and_alpha_propagate_nan(rng):
    c = positive(rng, (8, 8))
    c[5, 2] = np.nan
    check(T.syrk, [1.5, 0.0, c, positive(rng, (8, 3))], "numpy", rtol=1e-12)
    a = positive(rng, (8, 3))
    a[2, 1] = np.inf
    check(T.syrk, [0.0, 1.0, positive(rng, (8, 8)), a], "numpy", rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("n,m", [(1, 1), (6, 4), (40, 17)])
def test_nests_the_pass_leaves_as_loops(rng, n, m):
    for fn in (T.strict_lower, T.reads_c, T.every_other_k):
        kernel = check(fn, [1.5, positive(rng, (n, n)), positive(rng, (n, m))], "numpy", rtol=1e-12)
        explain = kernel.explain()
        assert "triangle of C" not in explain
        if fn is not T.every_other_k:
            assert "triangular update kept as loops, not handed to the BLAS library" in explain


@on_gpu
def test_slices_clamped_by_a_narrow_c_raise_as_numpy_does(rng):
    # Rows i >= 5 of C[i, :i + 1] have 5 elements and A[:i + 1, k] i + 1: the
    # row condition fails, the loops run and raise NumPy's broadcast error.
    args = [1.5, 1.25, positive(rng, (9, 5)), positive(rng, (9, 3))]
    with pytest.raises(ValueError):
        T.syrk(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    with pytest.raises(ValueError):
        plait.jit(T.syrk, target="cuda")(*args)


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("m,n", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_trmm(rng, kind, m, n, dtype):
    kernel = check(T.trmm, [1.5, positive(rng, (m, m), dtype), positive(rng, (m, n), dtype)], kind,
                   rtol=RTOL[dtype])
    assert "B += strict_upper(A.T) @ B (each row reads the rows below it before they change) handed to the BLAS " \
           "library" in kernel.explain()


@on_gpu
@pytest.mark.parametrize("order_a", ["C", "F"])
@pytest.mark.parametrize("order_b", ["C", "F"])
@pytest.mark.parametrize("m,n", [(1, 3), (6, 1), (37, 21)])
def test_trmm_orders(rng, order_a, order_b, m, n):
    # Row- and column-major A and B take different sides, triangles and
    # transpositions of cuBLAS's trmm.
    a = np.asarray(positive(rng, (m, m)), order=order_a)
    b = np.asarray(positive(rng, (m, n)), order=order_b)
    check(T.trmm, [0.5, a, b], "numpy", rtol=1e-12)
    kernel = check(T.trmm_rows_of_a, [a, b], "numpy", rtol=1e-12)
    assert "B += strict_upper(A) @ B" in kernel.explain()


@on_gpu
def test_trmm_in_one_allocation(rng):
    # A and B are disjoint column blocks of one tensor, whose spans overlap:
    # the loops run.
    torch = pytest.importorskip("torch")
    base = positive(rng, (12, 24))
    expected = base.copy()
    T.trmm_rows_of_a(expected[:, :12], expected[:, 12:])
    got = torch.from_numpy(base).cuda()
    plait.jit(T.trmm_rows_of_a, target="cuda")(got[:, :12], got[:, 12:])
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("m,n", [(1, 1), (9, 4), (40, 17)])
def test_trmm_that_reads_its_own_row_keeps_the_loops(rng, m, n):
    kernel = check(T.trmm_with_diagonal, [positive(rng, (m, m)), positive(rng, (m, n))], "numpy", rtol=1e-12)
    assert "triangular product in place kept as loops, not handed to the BLAS library" in kernel.explain()


# ---------------------------------------------------------------- symm


def symm_args(rng, m, n, dtype=np.float64, garbage=np.nan, orders="CCC"):
    # A's upper triangle holds garbage that neither the loops nor the
    # library may read: NaN would show in any element that read it.
    a = positive(rng, (m, m), dtype)
    a[np.triu_indices(m, 1)] = garbage
    c, b = positive(rng, (m, n), dtype), positive(rng, (m, n), dtype)
    return [np.asarray(x, order=o) for x, o in zip((c, a, b), orders)]


SYMM_REMARK = "C += scalar * symmetric(lower(A)) @ B (the symmetric matrix of A's lower triangle) handed to the " \
              "BLAS library as one symm"


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m,n", SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_symm(rng, kind, m, n, dtype):
    kernel = check(T.symm, [1.5, 1.2] + symm_args(rng, m, n, dtype), kind, rtol=RTOL[dtype])
    assert SYMM_REMARK in kernel.explain()


@on_gpu
@pytest.mark.parametrize("m,n", [(1, 1), (6, 9), (41, 23)])
def test_symm_without_the_pragma_and_with_npbench_garbage(rng, m, n):
    # Checked (the default), symm_serial's indices are tested and it runs
    # as loops; unchecked, the BLAS takes it.
    check(T.symm_serial, [0.75] + symm_args(rng, m, n, garbage=-999.0), "numpy", rtol=1e-12)
    kernel = check(T.symm_serial, [0.75] + symm_args(rng, m, n, garbage=-999.0), "numpy", rtol=1e-12,
                   boundscheck=False)
    assert "symmetric(lower(A)) @ B" in kernel.explain()
    check(T.symm, [1.5, 1.2] + symm_args(rng, m, n, garbage=-999.0), "device", rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("orders", ["CCC", "FFF", "CFC", "FCF", "CCF", "FFC"])
def test_symm_orders(rng, orders):
    # Row- and column-major C and B take cuBLAS's symm from the right or
    # the left, row- and column-major A its upper or lower triangle; B in
    # another order than C runs the loops. The result is the same.
    check(T.symm, [1.5, 1.2] + symm_args(rng, 37, 21, orders=orders), "numpy", rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("layout", ["sliced", "strided"])
def test_symm_views(rng, layout):
    # Column slices go to the library with their leading dimension; strided
    # views run the loops.
    torch = pytest.importorskip("torch")
    m, n = 29, 17
    c, a, b = symm_args(rng, m, n)
    expected = c.copy()
    T.symm(1.5, 1.2, expected, a, b)

    def on_gpu_as(x):
        rows, cols = x.shape
        view = torch.zeros((rows, cols + 3), dtype=torch.float64, device="cuda")[:, 2:2 + cols] \
            if layout == "sliced" else torch.zeros((2 * rows, 2 * cols), dtype=torch.float64, device="cuda")[::2, ::2]
        view.copy_(torch.from_numpy(np.ascontiguousarray(x)).cuda())
        return view

    got = on_gpu_as(c)
    plait.jit(T.symm, target="cuda")(1.5, 1.2, got, on_gpu_as(a), on_gpu_as(b))
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)


@on_gpu
@pytest.mark.parametrize("share", ["C is B", "C overlaps B"])
def test_symm_with_c_sharing_memory_with_b_gives_numpys_answer(rng, share):
    torch = pytest.importorskip("torch")
    m = 13
    c, a, _ = symm_args(rng, m, m, garbage=-999.0)
    if share == "C is B":
        expected = c.copy()
        T.symm(1.5, 1.2, expected, a, expected)
        got = torch.from_numpy(c.copy()).cuda()
        plait.jit(T.symm, target="cuda")(1.5, 1.2, got, torch.from_numpy(a).cuda(), got)
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)
    else:
        # Without the pragma the columns run in order, as NumPy's do.
        base = positive(rng, (m, m + 1))
        expected = base.copy()
        T.symm_serial(1.5, expected[:, :m], a, expected[:, 1:])
        got = torch.from_numpy(base.copy()).cuda()
        plait.jit(T.symm_serial, target="cuda")(1.5, got[:, :m], torch.from_numpy(a).cuda(), got[:, 1:])
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)


@on_gpu
def test_symm_with_mismatched_shapes_raises_as_numpy_does(rng):
    # B has more columns than C: the row condition fails, the loops raise
    # NumPy's broadcast error.
    c, a, _ = symm_args(rng, 6, 5)
    b = positive(rng, (6, 8))
    with pytest.raises(ValueError):
        T.symm(1.5, 1.2, c.copy(), a, b)
    with pytest.raises(ValueError):
        plait.jit(T.symm, target="cuda")(1.5, 1.2, c, a, b)


@on_gpu
@pytest.mark.parametrize("m,n", [(1, 1), (6, 4), (30, 17)])
def test_symm_forms_the_pass_leaves_as_loops(rng, m, n):
    for fn, why in ((T.symm_returns_temp2, "`temp2` is an argument, has another name or is read after the loop"),
                    (T.symm_reads_upper, "the update of the rows above i is not"),
                    (T.symm_other_coefficient, "the update of row i is not")):
        # symm_reads_upper reads A's upper triangle: finite values there.
        # Unchecked: checked, each declines first because its indices are.
        kernel = check(fn, [1.5] + symm_args(rng, m, n, garbage=0.25), "numpy", rtol=1e-12, boundscheck=False)
        explain = kernel.explain()
        assert "symmetric(lower(" not in explain
        assert "symmetric product kept as loops, not handed to the BLAS library: " + why in explain


# ---------------------------------------------------------------- trisolv

SOLVE_REMARK = "(forward substitution: each step reads the elements before it) handed to the BLAS library"
SOLVE_SIZES = [0, 1, 2, 7, 33, 130, 1000]


def lower_system(rng, n, dtype=np.float64, order="C"):
    # A well-conditioned lower-triangular system: small positive entries
    # below a diagonal in [1, 2), NPBench-like garbage above it (never read).
    L = rng.random((n, n)) / max(n, 1)
    L[np.diag_indices(n)] = 1 + rng.random(n)
    L[np.triu_indices(n, 1)] = -999.0
    return np.asarray(L.astype(dtype), order=order), positive(rng, n, dtype)


@compiles
def test_trisolv_calls_trsv_once_with_the_loop_as_fallback(tmp_path):
    host = emit_from(KERNELS_FILE, tmp_path, "trisolv", T.KERNELS["trisolv"][0], "cpp").read_text()
    assert host.count("ctx->cuda->trsv(") == 1
    remarks = plaitc("compile", f"{KERNELS_FILE}::trisolv", "--signature", T.KERNELS["trisolv"][0], "--target",
                     "cuda", "--emit", "remarks", "--no-boundscheck")
    assert remarks.returncode == 0, remarks.stderr
    assert "x = solve(lower(L), b) " + SOLVE_REMARK in remarks.stdout
    checked = plaitc("compile", f"{KERNELS_FILE}::trisolv", "--signature", T.KERNELS["trisolv"][0], "--target",
                     "cuda", "--emit", "remarks", "--boundscheck")
    assert checked.returncode == 0, checked.stderr
    assert "triangular solve kept as a loop, not handed to the BLAS library: its indices are checked" \
        in checked.stdout


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SOLVE_SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_trisolv(rng, kind, n, dtype):
    L, b = lower_system(rng, n, dtype)
    kernel = check(T.trisolv, [L, np.empty(n, dtype), b], kind, poison=[1], rtol=RTOL[dtype] * 10)
    assert "x = solve(lower(L), b) " + SOLVE_REMARK in kernel.explain()


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n", SOLVE_SIZES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_trisolv_in_place(rng, kind, n, dtype):
    L, b = lower_system(rng, n, dtype)
    kernel = check(T.trisolv_in_place, [L, b], kind, rtol=RTOL[dtype] * 10)
    assert "x = solve(lower(L), x) " + SOLVE_REMARK in kernel.explain()


@on_gpu
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n", [1, 7, 130])
def test_trisolv_over_columns(rng, order, n):
    # The hand-written dot product over U's column i: the solve with U.T.
    L, b = lower_system(rng, n)
    U = np.asarray(L.T, order=order)
    kernel = check(T.trisolv_columns, [U, np.empty(n), b], "numpy", poison=[1], rtol=1e-11)
    assert "x = solve(lower(U.T), b) " + SOLVE_REMARK in kernel.explain()


@on_gpu
@pytest.mark.parametrize("layout", ["f", "sliced", "strided"])
def test_trisolv_views(rng, layout):
    # L in either order or column-sliced goes to the library with its
    # leading dimension, strided vectors with their increments; a strided L
    # runs the loop. The result is the same.
    torch = pytest.importorskip("torch")
    n = 45
    L, b = lower_system(rng, n)
    expected = np.full(n, np.nan)
    T.trisolv(L, expected, b)
    x = torch.full((2 * n,), float("nan"), dtype=torch.float64, device="cuda")[::2]
    b_view = torch.zeros((3 * n,), dtype=torch.float64, device="cuda")[1::3]
    b_view.copy_(torch.from_numpy(b).cuda())
    plait.jit(T.trisolv, target="cuda")(on_gpu_as(torch, L, layout), x, b_view)
    np.testing.assert_allclose(x.cpu().numpy(), expected, rtol=1e-11)


@on_gpu
@pytest.mark.parametrize("share", ["b overlaps x", "x is a column of L"])
def test_trisolv_sharing_memory_gives_numpys_answer(rng, share):
    # Overlapping operands other than b is x run the loop, which reads and
    # writes them in the order Python does.
    torch = pytest.importorskip("torch")
    n = 20
    L, b = lower_system(rng, n)
    if share == "b overlaps x":
        base = positive(rng, n + 1)
        expected = base.copy()
        T.trisolv(L, expected[:-1], expected[1:])
        got = torch.from_numpy(base.copy()).cuda()
        plait.jit(T.trisolv, target="cuda")(torch.from_numpy(L).cuda(), got[:-1], got[1:])
    else:
        expected = L.copy()
        T.trisolv(expected, expected[:, n - 1], b)
        got = torch.from_numpy(L.copy()).cuda()
        plait.jit(T.trisolv, target="cuda")(got, got[:, n - 1], torch.from_numpy(b).cuda())
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-11)


@on_gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_trisolv_with_a_zero_on_the_diagonal_gives_numpys_infinities(rng, dtype):
    L, b = lower_system(rng, 40, dtype)
    L[3, 3] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        check(T.trisolv, [L, np.empty(40, dtype), b], "numpy", poison=[1], rtol=RTOL[dtype] * 10)


@on_gpu
@pytest.mark.parametrize("n", [1, 6, 40])
def test_trisolv_forms_the_pass_leaves_as_loops(rng, n):
    L, b = lower_system(rng, n)
    kernel = check(T.trisolv_with_diagonal, [L, positive(rng, n), b], "numpy", rtol=1e-11)
    explain = kernel.explain()
    assert "solve(lower(" not in explain
    assert "triangular solve kept as a loop, not handed to the BLAS library: the dot product does not run over " \
           "the elements before i" in explain
    kernel = check(T.trisolv_scaled, [L, np.empty(n), b], "numpy", poison=[1], rtol=1e-11)
    assert "solve(lower(" not in kernel.explain()
    kernel = check(T.trisolv, [L, np.empty(n), b], "numpy", poison=[1], rtol=1e-11, boundscheck=True)
    assert "triangular solve kept as a loop, not handed to the BLAS library: its indices are checked" \
        in kernel.explain()


@compiles
def test_cholesky_solves_each_row_with_the_rows_above_it(tmp_path):
    host = emit_from(KERNELS_FILE, tmp_path, "cholesky", T.KERNELS["cholesky"][0], "cpp").read_text()
    # Row i of A, its first element and step, on both sides.
    assert host.count("a_A_data + (v_i) * a_A_s0, 1") == 2
    remarks = plaitc("compile", f"{KERNELS_FILE}::cholesky", "--signature", T.KERNELS["cholesky"][0], "--target",
                     "cuda", "--emit", "remarks", "--no-boundscheck")
    assert remarks.returncode == 0, remarks.stderr
    assert "A[i, :] = solve(lower(A), A[i, :]) " + SOLVE_REMARK in remarks.stdout


# The factor's later entries are small differences: between summation
# orders (cuBLAS's, the loop's reductions', NumPy's) they differ by up to
# 1e-11 relative in float64 at 130 rows (measured) and past 1e-3 in float32,
# which runs up to 33 rows.
CHOLESKY_CASES = [(n, np.float64) for n in (1, 2, 7, 33, 130)] + [(n, np.float32) for n in (1, 2, 7, 33)]
CHOLESKY_RTOL = {np.float64: 1e-9, np.float32: 2e-3}


@on_gpu
@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("n,dtype", CHOLESKY_CASES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_cholesky(rng, kind, n, dtype, order):
    # A symmetric positive definite matrix; a column-major A's rows overlap
    # the span of the rows above them, and the loop runs.
    m = rng.random((n, n))
    a = np.asarray((m @ m.T + n * np.eye(n)).astype(dtype), order=order)
    kernel = check(T.cholesky, [a], kind, rtol=CHOLESKY_RTOL[dtype])
    assert "A[i, :] = solve(lower(A), A[i, :]) " + SOLVE_REMARK in kernel.explain()
