"""Differential tests of the interchange of reductions that read down a
column (transforms/interchange_reductions): matrix products, vector-matrix
products, covariance, gemm and the same nests written as loops.

The interchanged loops add each element's terms in the order of k, so a
product must equal the plain sequential sum over k exactly (no
reassociation): `sequential_product` computes that sum with NumPy's
elementwise operations, which round each product and sum as the kernel
does. Against NumPy's own `@` (BLAS, reassociated) the tolerance of
reductions applies. Loops that must keep the reduction innermost (a row of
`M @ x`, a dependence through memory, a triangular or breaking loop) are
checked for their remark and their exact results.
"""

import numpy as np
import pytest

import oracle
import plait
from oracle import dtype_id

_DISPATCHERS = {}


@pytest.fixture(autouse=True)
def loops_not_the_blas(monkeypatch):
    # These tests pin the interchanged loops' order of summation; the CPU's
    # BLAS, which takes contiguous float products, sums in its own.
    monkeypatch.setenv("PLAIT_BLAS", "none")


def jitted(fn):
    """One dispatcher per kernel for the whole module: signatures compile once."""
    if fn not in _DISPATCHERS:
        _DISPATCHERS[fn] = plait.jit(fn)
    return _DISPATCHERS[fn]


def arr(rng, dtype, shape, layout="C"):
    return oracle.make(rng, dtype, shape, layout)


def tolerance(dtype):
    return oracle.reduction_rtol(dtype)


def check(fn, *args, rtol=None):
    """oracle.check on the module's dispatcher; rtol also serves as the
    absolute tolerance, for results near zero."""
    return oracle.check(jitted(fn), *args, rtol=rtol, atol=rtol)


def remarks(fn, *args):
    """The explain() text of `fn` compiled for `args` (a fresh dispatcher:
    explain() describes the last signature compiled)."""
    kernel = plait.jit(fn)
    kernel(*oracle.clone(args))
    return kernel.explain()


def sequential_product(A, B):
    """A @ B summed in the order of k, one rounding per product and per sum."""
    A2 = A if A.ndim == 2 else A[None, :]
    B2 = B if B.ndim == 2 else B[:, None]
    if A.dtype == np.bool_:
        acc = np.zeros((A2.shape[0], B2.shape[1]), dtype=np.bool_)
        for k in range(A2.shape[1]):
            acc = acc | (A2[:, k:k + 1] & B2[k:k + 1, :])
    else:
        acc = np.zeros((A2.shape[0], B2.shape[1]), dtype=A.dtype)
        with np.errstate(over="ignore"):
            for k in range(A2.shape[1]):
                acc = acc + A2[:, k:k + 1] * B2[k:k + 1, :]
    if A.ndim == 1:
        acc = acc[0]
    if B.ndim == 1:
        acc = acc[..., 0]
    return acc


# ---------------------------------------------------------------- array expressions


def matmul(A, B):
    return A @ B


def vecmat(x, M):
    return x @ M


def matvec(M, x):
    return M @ x


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def covariance(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


# (rows of A, k, columns of B): empty and single extents, odd sizes, rows
# that are not a multiple of the blocks of 4, and more columns than one chunk
# of accumulators holds (at most 512 float64, 1024 float32) with a partial
# last chunk.
PRODUCT_SHAPES = ((0, 0, 0), (1, 1, 1), (3, 0, 4), (0, 5, 3), (4, 5, 0), (1, 7, 1), (7, 5, 9), (33, 17, 31),
                  (5, 9, 1100))


@pytest.mark.parametrize("dtype", oracle.DTYPES, ids=dtype_id)
def test_matrix_product_is_the_sequential_sum(rng, dtype):
    for m, k, n in PRODUCT_SHAPES:
        A, B = arr(rng, dtype, (m, k)), arr(rng, dtype, (k, n))
        got = jitted(matmul)(A, B)
        assert got.dtype == (A @ B).dtype
        np.testing.assert_array_equal(got, sequential_product(A, B), err_msg=f"{m}x{k} @ {k}x{n}")
        check(matmul, A, B, rtol=tolerance(dtype))


@pytest.mark.parametrize("layouts", (("F", "C"), ("C", "F"), ("transposed", "strided"), ("strided", "reversed"),
                                     ("reversed", "transposed")), ids="-".join)
def test_matrix_product_of_views(rng, layouts):
    # A B in Fortran order ("F", "transposed") is read contiguously along k
    # and keeps the (reassociating) vector reduction.
    interchanged = layouts[1] not in ("F", "transposed")
    for m, k, n in ((1, 1, 1), (0, 3, 2), (7, 5, 9), (6, 11, 600)):
        A, B = arr(rng, np.float64, (m, k), layouts[0]), arr(rng, np.float64, (k, n), layouts[1])
        if interchanged:
            np.testing.assert_array_equal(jitted(matmul)(A, B), sequential_product(A, B))
        check(matmul, A, B, rtol=1e-12)
    assert ("runs outside chunks" in remarks(matmul, A, B)) == interchanged


def test_matrix_product_reads_rows_of_b_after_the_interchange(rng):
    A, B = arr(rng, np.float64, (3, 4)), arr(rng, np.float64, (4, 5))
    assert "runs outside chunks of 256 iterations and blocks of 4 iterations of" in remarks(matmul, A, B)
    # A Fortran-order B is contiguous along k already.
    text = remarks(matmul, A, np.asfortranarray(B))
    assert "stays innermost: it reads 'A' contiguously along" in text
    assert "runs outside chunks" not in text


@pytest.mark.parametrize("dtype", (np.int32, np.int64, np.float32, np.float64), ids=dtype_id)
def test_vector_matrix_product(rng, dtype):
    for k, n in ((0, 0), (0, 4), (3, 0), (1, 1), (7, 5), (600, 3), (9, 1100)):
        x, M = arr(rng, dtype, k), arr(rng, dtype, (k, n))
        np.testing.assert_array_equal(jitted(vecmat)(x, M), sequential_product(x, M), err_msg=f"{k} @ {k}x{n}")
        check(vecmat, x, M, rtol=tolerance(dtype))
    x, M = arr(rng, dtype, 9, "reversed"), arr(rng, dtype, (9, 700), "strided")
    np.testing.assert_array_equal(jitted(vecmat)(x, M), sequential_product(x, M))
    assert "runs outside chunks" in remarks(vecmat, x[:3], M[:3])


def test_matrix_vector_product_keeps_its_reduction_innermost(rng):
    M, x = arr(rng, np.float64, (7, 600)), arr(rng, np.float64, 600)
    text = remarks(matvec, M, x)
    assert "stays innermost: it reads 'M' contiguously along" in text
    assert "runs outside chunks" not in text
    for m, k in ((0, 0), (1, 1), (7, 600), (33, 5)):
        check(matvec, arr(rng, np.float64, (m, k)), arr(rng, np.float64, k), rtol=1e-12)


@pytest.mark.parametrize("dtype", (np.int64, np.float32, np.float64), ids=dtype_id)
def test_gemm(rng, dtype):
    for m, k, n in PRODUCT_SHAPES:
        C, A, B = arr(rng, dtype, (m, n)), arr(rng, dtype, (m, k)), arr(rng, dtype, (k, n))
        alpha, beta = (3, 2) if np.dtype(dtype).kind == "i" else (1.5, 1.2)
        check(gemm, alpha, beta, C, A, B, rtol=tolerance(dtype))
    C = arr(rng, dtype, (9, 600), "strided")
    check(gemm, 1.5, 1.2, C, arr(rng, dtype, (9, 7), "F"), arr(rng, dtype, (7, 600)), rtol=tolerance(dtype))
    assert "runs outside chunks" in remarks(gemm, 1.5, 1.2, *(arr(rng, np.float64, (3, 3)) for _ in range(3)))


@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=dtype_id)
def test_covariance(rng, dtype):
    for n, m in ((1, 1), (2, 1), (5, 3), (40, 30), (7, 600)):
        check(covariance, m, float(n), arr(rng, dtype, (n, m)), rtol=tolerance(dtype))
    check(covariance, 9, 13.0, arr(rng, dtype, (13, 9), "F"), rtol=tolerance(dtype))
    text = remarks(covariance, 3, 4.0, arr(rng, dtype, (4, 3)))
    assert text.count("runs outside chunks") == 2, text  # the column means and the products


# ---------------------------------------------------------------- loops


def matmul_loops(A, B, C):
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s


def matmul_serial_loops(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0
            for k in range(A.shape[1]):
                s = s - A[i, k] * B[k, j]
            C[i, j] = 2 * s


def column_sums_and_total(A, out):
    total = 0.0
    #pragma parallel for
    for j in range(A.shape[1]):
        s = 0.0
        for k in range(A.shape[0]):
            s += A[k, j]
        out[j] = s
        total += s
    return total


def column_max_simd(A, out):
    #pragma simd
    for j in range(A.shape[1]):
        s = -1000
        for k in range(A.shape[0]):
            s = max(s, A[k, j])
        out[j] = s


@pytest.mark.parametrize("dtype", (np.int32, np.float32, np.float64), ids=dtype_id)
def test_loop_nests_are_exact(rng, dtype):
    for m, k, n in ((0, 0, 0), (1, 1, 1), (3, 0, 4), (7, 5, 9), (5, 9, 1100)):
        A, B = arr(rng, dtype, (m, k)), arr(rng, dtype, (k, n))
        check(matmul_loops, A, B, oracle.poisoned((m, n), dtype))
        check(matmul_serial_loops, A, B, arr(rng, dtype, (m, n)))
        check(column_max_simd, B, oracle.poisoned(n, dtype))
    A = arr(rng, dtype, (7, 5), "transposed")
    check(matmul_loops, A, arr(rng, dtype, (5, 600), "strided"), oracle.poisoned((7, 600), dtype, "F"))
    B = arr(rng, dtype, (4, 4))
    for fn, args in ((matmul_loops, (B, B, np.zeros_like(B))), (matmul_serial_loops, (B, B, B.copy())),
                     (column_max_simd, (B, np.zeros(4, dtype=dtype)))):
        assert "runs outside chunks" in remarks(fn, *args), fn.__name__


def matmul_total(A, B, C):
    total = 0.0
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s
            total += s
    return total


def running_row_sums(A, B, C):
    #pragma parallel for
    for i in range(A.shape[0]):
        t = 0.0
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            t += s
            C[i, j] = t


def test_blocks_of_rows_keep_reductions_and_running_values(rng):
    for m, k, n in ((1, 1, 1), (3, 2, 5), (4, 7, 9), (9, 5, 300)):
        A, B = arr(rng, np.float64, (m, k)), arr(rng, np.float64, (k, n))
        check(matmul_total, A, B, oracle.poisoned((m, n), np.float64), rtol=1e-12)
        # t runs along each row: the rows cannot interleave chunk by chunk,
        # but each row's loop over j is still chunked.
        check(running_row_sums, A, B, oracle.poisoned((m, n), np.float64))
    assert "and blocks of 4 iterations of 'i'" in remarks(matmul_total, A, B, np.zeros((m, n)))
    text = remarks(running_row_sums, A, B, np.zeros((m, n)))
    assert "runs outside chunks of 512 iterations, reading 'B'" in text, text


def test_reductions_of_a_parallel_chunked_loop(rng):
    for k, n in ((1, 1), (7, 5), (33, 1100)):
        A = arr(rng, np.float64, (k, n))
        check(column_sums_and_total, A, oracle.poisoned(n, np.float64), rtol=1e-12)
    assert "runs outside chunks" in remarks(column_sums_and_total, A, np.zeros(A.shape[1]))


def reads_what_it_writes(B, w):
    for j in range(B.shape[1]):
        s = 0.0
        for k in range(B.shape[0]):
            s += B[k, j] * w[k]
        w[j % w.shape[0]] = s


def triangular(B, out):
    for j in range(B.shape[1]):
        s = 0.0
        for k in range(j):
            s += B[k % B.shape[0], j]
        out[j] = s


def breaks_early(B, out):
    for j in range(B.shape[1]):
        s = 0.0
        for k in range(B.shape[0]):
            s += B[k, j]
        if s > 1.0:
            break
        out[j] = s


def steps_by_two(B, out):
    for j in range(0, B.shape[1], 2):
        s = 0.0
        for k in range(B.shape[0]):
            s += B[k, j]
        out[j] = s


def parallel_inner_sums(B, out):
    for j in range(B.shape[1]):
        s = 0.0
        #pragma parallel for reduction(+: s)
        for k in range(B.shape[0]):
            s += B[k, j]
        out[j] = s


@pytest.mark.parametrize("fn, reason", (
    (reads_what_it_writes, "the reduced value reads what the loop writes"),
    (triangular, "the bounds of the loop over 'k' depend on 'j'"),
    (breaks_early, "the loop body breaks out of the loop"),
    (steps_by_two, "the loop over 'j' does not step by 1"),
    (parallel_inner_sums, "the loop over 'k' runs in parallel"),
), ids=lambda v: getattr(v, "__name__", "reason"))
def test_loops_that_keep_their_reduction_innermost(rng, fn, reason):
    B = arr(rng, np.float64, (6, 6), "C")
    second = arr(rng, np.float64, 6) if fn is reads_what_it_writes else oracle.poisoned(6, np.float64)
    text = remarks(fn, B, second)
    assert reason in text, text
    assert "runs outside chunks" not in text
    for k, n in ((0, 0), (1, 1), (5, 7), (9, 600)):
        B = arr(rng, np.float64, (k, n), "C")
        second = arr(rng, np.float64, max(k, 1)) if fn is reads_what_it_writes else np.zeros(n)
        check(fn, B, second, rtol=1e-12 if fn is parallel_inner_sums else None)
