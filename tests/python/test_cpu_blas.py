"""Matrix products and triangular solves of CPU kernels handed to the BLAS
(jit/cpu_blas.h, transforms/offload_matmul with the CPU's entries: gemm,
gemmt as syrk and syr2k, and trsv), differentially against
the undecorated function: the array form `C[:] = alpha * A @ B + beta * C`,
a returned product, `C += A @ B`, `C - s * (A @ B)`, a division by a scalar
and products written as loops; C-order, Fortran-order, sliced and
transposed operands (the library takes them), strided ones (the loops run),
empty and 1-element shapes, float32 and float64; NaN where the library
would skip reads (alpha 0, beta 0 with C read); a product inside a time
loop; triangles of products (syrk, syr2k, covariance; those the library
does not take); forward substitutions (NPBench's trisolv and cholesky's
rows, in place, over columns) and those that are not solves; the same results with
the library turned off (PLAIT_BLAS=none)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import plait

# The kernels of the cuBLAS tests (tests/gpu), which the CPU's BLAS runs too.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
import cuda_kernels as K  # noqa: E402
import triangle_kernels as T  # noqa: E402

SHAPES = [(0, 3, 2), (3, 0, 2), (2, 3, 0), (1, 1, 1), (5, 7, 3), (64, 33, 70), (129, 65, 257)]
RTOL = {np.float64: 1e-12, np.float32: 2e-5}


def products_in_a_time_loop(A, B, C, x, steps):
    # A product and a parallel loop in each step: the step does not run as
    # one parallel region (the library starts the threads of its product).
    for step in range(steps):
        C[:] = A @ B + C
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5 + C[i % C.shape[0], 0]


def lower_triangular(rng, n, dtype):
    # A well-conditioned lower triangle: its diagonal dominates.
    return (np.tril(rng.random((n, n))) + n * np.eye(n)).astype(dtype)


def positive(rng, shape, dtype):
    # Positive values: sums in any order stay within rtol of each other.
    return (rng.random(shape) + 0.5).astype(dtype)


def as_layout(x, layout):
    """x as a C-order, Fortran-order, column-sliced, transposed-copy or
    strided (both steps 2: the loops run) array."""
    m, n = x.shape
    if layout == "C":
        return np.ascontiguousarray(x)
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "sliced":
        out = np.zeros((m, n + 3), dtype=x.dtype)[:, 2:2 + n]
    elif layout == "transposed":
        return np.ascontiguousarray(x.T).T
    else:
        out = np.zeros((2 * m, 2 * n), dtype=x.dtype)[::2, ::2]
    out[...] = x
    return out


def run_both(fn, args, rtol):
    """Runs fn and its compiled kernel on copies of args; compares results
    and arguments."""
    def copies():
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    want_args, got_args = copies(), copies()
    want = fn(*want_args)
    kernel = plait.jit(fn)
    got = kernel(*got_args)
    if want is not None:
        np.testing.assert_allclose(got, want, rtol=rtol)
    for w, g in zip(want_args, got_args):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=rtol)
    return kernel


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gemm_array_form(rng, shape, dtype):
    m, k, n = shape
    args = [1.5, 1.25, positive(rng, (m, n), dtype), positive(rng, (m, k), dtype), positive(rng, (k, n), dtype)]
    kernel = run_both(K.gemm, args, RTOL[dtype])
    assert "handed to the BLAS library" in kernel.explain()


@pytest.mark.parametrize("layout_c", ["C", "F", "sliced", "strided"])
@pytest.mark.parametrize("layout_a", ["C", "F", "sliced", "transposed", "strided"])
@pytest.mark.parametrize("layout_b", ["C", "F"])
@pytest.mark.parametrize("shape", [(1, 4, 5), (6, 1, 2), (17, 9, 12)])
def test_gemm_operand_layouts(rng, layout_c, layout_a, layout_b, shape):
    m, k, n = shape
    c, a, b = (positive(rng, s, np.float64) for s in [(m, n), (m, k), (k, n)])
    expected = c.copy()
    K.gemm(0.5, -2.0, expected, a, b)
    got = as_layout(c, layout_c)
    plait.jit(K.gemm)(0.5, -2.0, got, as_layout(a, layout_a), as_layout(b, layout_b))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("shape", [(0, 2, 3), (1, 1, 1), (33, 17, 65)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_returned_accumulated_and_scaled_products(rng, shape, dtype):
    m, k, n = shape
    a, b = positive(rng, (m, k), dtype), positive(rng, (k, n), dtype)
    run_both(K.matmul_new, [a, b], RTOL[dtype])
    run_both(K.matmul_accumulate, [positive(rng, (m, n), dtype), a, b], RTOL[dtype])
    run_both(K.gemm_minus, [0.75, positive(rng, (m, n), np.float64), a.astype(np.float64), b.astype(np.float64)],
             1e-11)
    kernel = run_both(K.matmul_divided, [positive(rng, (m, n), dtype), a, b], RTOL[dtype])
    assert "handed to the BLAS library" in kernel.explain()


def test_products_written_as_loops(rng):
    a, b = positive(rng, (31, 20), np.float64), positive(rng, (17, 31), np.float64)
    kernel = run_both(K.gemm_transposed_loops, [a, b, np.zeros((20, 17))], 1e-12)
    assert "A.T @ B.T handed to the BLAS library" in kernel.explain()


def test_integer_products_run_the_loops(rng):
    a, b, c = (rng.integers(-50, 50, size=s) for s in [(9, 4), (4, 6), (9, 6)])
    kernel = run_both(K.matmul_accumulate, [c, a, b], 0)
    assert "BLAS" not in kernel.explain()


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_zero_alpha_and_zero_beta_propagate_nan(rng):
    a = positive(rng, (8, 5), np.float64)
    a[3, 2] = np.nan
    run_both(K.gemm, [0.0, 1.0, positive(rng, (8, 6), np.float64), a, positive(rng, (5, 6), np.float64)], 1e-12)
    c = positive(rng, (8, 6), np.float64)
    c[1, 4], c[7, 0] = np.nan, np.inf
    run_both(K.gemm, [2.0, 0.0, c, positive(rng, (8, 5), np.float64), positive(rng, (5, 6), np.float64)], 1e-12)


def test_result_sharing_memory_with_an_operand(rng):
    # B and C disjoint column blocks of one array: the library takes them;
    # C the same memory as B: the call copies as Python's semantics need.
    base = positive(rng, (12, 16), np.float64)
    a = positive(rng, (12, 12), np.float64)
    for c_cols, b_cols in ((slice(0, 8), slice(8, 16)), (slice(0, 8), slice(4, 12))):
        expected, got = base.copy(), base.copy()
        K.gemm(1.0, 0.5, expected[:, c_cols], a, expected[:, b_cols])
        plait.jit(K.gemm)(1.0, 0.5, got[:, c_cols], a, got[:, b_cols])
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_a_product_in_a_time_loop(rng):
    a, b = positive(rng, (40, 30), np.float64), positive(rng, (30, 20), np.float64)
    kernel = run_both(products_in_a_time_loop, [a, b, positive(rng, (40, 20), np.float64),
                                                positive(rng, (5000,), np.float64), 3], 1e-12)
    assert "handed to the BLAS library" in kernel.explain()


@pytest.mark.parametrize("n", [0, 1, 2, 9, 300])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_forward_substitutions(rng, n, dtype):
    L, b = lower_triangular(rng, n, dtype), positive(rng, (n,), dtype)
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    kernel = run_both(T.trisolv, [L, np.zeros(n, dtype), b], rtol)
    if n:
        assert "triangular solve" in kernel.explain() and "BLAS" in kernel.explain()
    run_both(T.trisolv_in_place, [L, b], rtol)
    run_both(T.trisolv_columns, [np.ascontiguousarray(L.T), np.zeros(n, dtype), b], rtol)
    # Views: L in Fortran order, x a strided view (the library takes both).
    want = np.zeros(n, dtype)
    T.trisolv(L, want, b)
    got = np.zeros(2 * n, dtype)[::2]
    plait.jit(T.trisolv)(np.asfortranarray(L), got, b)
    np.testing.assert_allclose(got, want, rtol=rtol)
    kernel = run_both(T.trisolv_with_diagonal, [L, np.zeros(n, dtype), b], rtol)
    assert "solve" not in kernel.explain() or "kept as a loop" in kernel.explain()


@pytest.mark.parametrize("n", [1, 2, 17, 120])
def test_cholesky_rows_are_solves(rng, n):
    M = rng.random((n, n))
    A = M @ M.T + n * np.eye(n)
    run_both(T.cholesky, [A], 1e-10)


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (37, 20), (130, 70)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_triangles_of_products(rng, shape, dtype):
    # syrk (A A^T) and syr2k (A B^T + B A^T) go to the library's syrk and
    # syr2k; covariance's data^T data is a syrk of the centred copy; a
    # triangle of A^T B - 2 A^T B (not symmetric) and a strict triangle run
    # their loops.
    n, k = shape
    rtol = RTOL[dtype] * 10
    a, b = positive(rng, (n, k), dtype), positive(rng, (n, k), dtype)
    kernel = run_both(T.syrk, [1.5, 1.2, positive(rng, (n, n), dtype), a], rtol)
    assert "handed to the BLAS library" in kernel.explain()
    run_both(T.syr2k, [1.5, 1.2, positive(rng, (n, n), dtype), a, b], rtol)
    run_both(T.covariance, [k, float(n + 1), positive(rng, (n, k), dtype)], rtol * 100)
    run_both(T.upper_accumulate, [positive(rng, (k, k), dtype), a, b], rtol * 100)
    run_both(T.strict_lower, [1.5, positive(rng, (n, n), dtype), a], rtol)


def test_the_library_off_gives_the_same_results(tmp_path):
    # PLAIT_BLAS=none: no library; the products run their loops.
    script = tmp_path / "products.py"
    script.write_text(
        "import numpy as np, plait\n"
        "def gemm(alpha, beta, C, A, B):\n"
        "    C[:] = alpha * A @ B + beta * C\n"
        "rng = np.random.default_rng(3)\n"
        "A, B, C = (rng.random((70, 70)) for _ in range(3))\n"
        "want = C.copy(); gemm(2.0, 0.5, want, A, B)\n"
        "plait.jit(gemm)(2.0, 0.5, C, A, B)\n"
        "print(plait.blas_library()); print(np.allclose(C, want, rtol=1e-12, atol=0))\n")
    env = dict(os.environ, PLAIT_BLAS="none")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["none (PLAIT_BLAS=none)", "True"]


def test_the_library_is_named_and_turned_off_at_each_call(monkeypatch, rng):
    name = plait.blas_library()
    assert name.startswith("none (") or "from lib" in name
    monkeypatch.setenv("PLAIT_BLAS", "none")
    assert plait.blas_library() == "none (PLAIT_BLAS=none)"
    run_both(K.gemm, [1.5, 0.5, positive(rng, (9, 7), np.float64), positive(rng, (9, 5), np.float64),
                    positive(rng, (5, 7), np.float64)], 1e-12)
