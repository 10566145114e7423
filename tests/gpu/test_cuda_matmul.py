"""Matrix products handed to cuBLAS (transforms/offload_matmul, docs/cuda.md
"Matrix products"), differentially against the undecorated function: the
array form `C[:] = alpha * A @ B + beta * C`, a returned `A @ B`, `C += A @
B`, `C - s * (A @ B)` and transposed loops; row-major, column-major and
sliced operands (cuBLAS takes them), strided ones (the loops run), empty and
1-element shapes, float32 and float64, every array kind. Where the library
would skip reads whose NaN the loops propagate (alpha 0, beta 0 with C read)
the loops run and the NaN arrives."""

import numpy as np
import pytest

import cuda_kernels as K
import plait
from test_cuda_run import KINDS, check

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

SHAPES = [(0, 3, 2), (3, 0, 2), (2, 3, 0), (1, 1, 1), (5, 7, 3), (64, 33, 70), (129, 65, 257)]
RTOL = {np.float64: 1e-12, np.float32: 2e-5}


def positive(rng, shape, dtype):
    # Positive values: sums in any order stay within rtol of each other.
    return (rng.random(shape) + 0.5).astype(dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gemm_array_form(rng, kind, shape, dtype):
    m, k, n = shape
    args = [1.5, 1.25, positive(rng, (m, n), dtype), positive(rng, (m, k), dtype), positive(rng, (k, n), dtype)]
    kernel = check(K.gemm, args, kind, rtol=RTOL[dtype])
    assert "handed to the BLAS library" in kernel.explain()


def on_gpu_as(torch, x, layout):
    """x on the GPU as a C-order, Fortran-order, column-sliced or strided
    view (NumPy arguments would be copied into C or Fortran order)."""
    m, n = x.shape
    t = torch.from_numpy(np.ascontiguousarray(x)).cuda()
    if layout == "c":
        return t
    if layout == "f":
        return t.T.contiguous().T
    view = torch.zeros((m, n + 3), dtype=t.dtype, device="cuda")[:, 2:2 + n] if layout == "sliced" else \
        torch.zeros((2 * m, 2 * n), dtype=t.dtype, device="cuda")[::2, ::2]
    view.copy_(t)
    return view


@pytest.mark.parametrize("layout_c", ["c", "f", "sliced", "strided"])
@pytest.mark.parametrize("layout_a", ["c", "f", "sliced", "strided"])
@pytest.mark.parametrize("layout_b", ["c", "f"])
@pytest.mark.parametrize("shape", [(1, 4, 5), (6, 1, 2), (17, 9, 12)])
def test_gemm_operand_layouts(rng, layout_c, layout_a, layout_b, shape):
    # cuBLAS takes row- and column-major operands with any leading
    # dimension; strided ones run the nest's own kernel.
    torch = pytest.importorskip("torch")
    m, k, n = shape
    c, a, b = (positive(rng, s, np.float32) for s in [(m, n), (m, k), (k, n)])
    expected = c.copy()
    K.gemm(0.5, -2.0, expected, a, b)
    got = on_gpu_as(torch, c, layout_c)
    plait.jit(K.gemm, target="cuda")(0.5, -2.0, got, on_gpu_as(torch, a, layout_a), on_gpu_as(torch, b, layout_b))
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=RTOL[np.float32])


@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 3), (40, 31, 23)])
def test_transposed_loops(rng, shape):
    m, k, n = shape
    a = positive(rng, (k, m), np.float64)
    b = positive(rng, (n, k), np.float64)
    kernel = check(K.gemm_transposed_loops, [a, b, np.empty((m, n))], "device", poison=[2], rtol=1e-12)
    assert "A.T @ B.T handed to the BLAS library" in kernel.explain()
    # Views whose transposes are contiguous.
    check(K.gemm_transposed_loops, [np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T, np.empty((m, n))],
          "numpy", poison=[2], rtol=1e-12)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("shape", [(0, 2, 3), (1, 1, 1), (33, 17, 65)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_returned_product_and_accumulation(rng, kind, shape, dtype):
    if kind == "torch":
        pytest.importorskip("torch")
    m, k, n = shape
    a, b = positive(rng, (m, k), dtype), positive(rng, (k, n), dtype)
    check(K.matmul_new, [a, b], kind, rtol=RTOL[dtype])
    check(K.matmul_accumulate, [positive(rng, (m, n), dtype), a, b], kind, rtol=RTOL[dtype])
    if dtype == np.float64:
        check(K.gemm_minus, [0.75, positive(rng, (m, n), dtype), a, b], kind, rtol=1e-11)


def test_integer_product_runs_the_loops(rng):
    a, b, c = (rng.integers(-50, 50, size=s) for s in [(9, 4), (4, 6), (9, 6)])
    kernel = check(K.matmul_accumulate, [c, a, b], "numpy")
    assert "BLAS" not in kernel.explain()


def test_zero_alpha_propagates_nan_from_the_operands(rng):
    a = positive(rng, (8, 5), np.float64)
    a[3, 2] = np.nan
    c = positive(rng, (8, 6), np.float64)
    check(K.gemm, [0.0, 1.0, c, a, positive(rng, (5, 6), np.float64)], "numpy", rtol=1e-12)


def test_zero_beta_propagates_nan_from_c(rng):
    c = positive(rng, (8, 6), np.float64)
    c[1, 4] = np.nan
    c[7, 0] = np.inf
    check(K.gemm, [2.0, 0.0, c, positive(rng, (8, 5), np.float64), positive(rng, (5, 6), np.float64)], "numpy",
          rtol=1e-12)


def test_result_and_operand_in_one_allocation(rng):
    # B and C are disjoint column blocks of one tensor: the library takes them.
    torch = pytest.importorskip("torch")
    base = positive(rng, (12, 16), np.float64)
    a = positive(rng, (12, 12), np.float64)
    expected = base.copy()
    K.gemm(1.0, 0.5, expected[:, :8], a, expected[:, 8:])
    got = torch.from_numpy(base).cuda()
    plait.jit(K.gemm, target="cuda")(1.0, 0.5, got[:, :8], torch.from_numpy(a).cuda(), got[:, 8:])
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)


def test_division_by_a_scalar_is_a_product_with_its_reciprocal(rng):
    kernel = check(K.matmul_divided, [np.empty((5, 4)), positive(rng, (5, 3), np.float64),
                                      positive(rng, (3, 4), np.float64)], "numpy", poison=[0], rtol=1e-12)
    assert "handed to the BLAS library" in kernel.explain()
