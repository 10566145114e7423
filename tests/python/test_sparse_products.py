"""Products of two sparse matrices (S @ T, S.dot(T), csr_matrix's *), whose
results have a pattern of their own, against SciPy: values, the stored
pattern (in canonical order; SciPy's rows come unsorted, and it stores no
sum that is zero), dtypes of values and indices, the class of the result,
and the products inside programs."""

import numpy as np
import pytest
import scipy.sparse as sp

import plait
from plait.errors import CompileError
from sparse_cases import check_same_pattern, dense, random_csr

FUSIONS = ("partial", "maximal", "none")
# (rows of S, columns of S = rows of T, columns of T)
SHAPES = ((0, 0, 0), (0, 3, 2), (3, 0, 2), (2, 3, 0), (1, 1, 1), (1, 6, 1), (6, 1, 6), (7, 5, 9), (13, 17, 11))


def matmul(S, T):
    return S @ T


def dot(S, T):
    return S.dot(T)


def star(S, T):
    return S * T  # the matrix product for csr_matrix


def expected(fn, S, T):
    return fn(S, T).tocsr().sorted_indices()


@pytest.mark.parametrize("shape", SHAPES)
def test_products_match_scipy(rng, shape):
    n, k, m = shape
    S = random_csr(rng, (n, k))
    kernel = plait.jit(matmul)
    for T in (random_csr(rng, (k, m)), random_csr(rng, (k, m), density=0.9, dense_row=False),
              random_csr(rng, (k, m), density=0.05)):
        check_same_pattern(kernel(S, T), expected(matmul, S, T), 1e-12)


def test_same_matrix_both_sides_and_non_canonical_operands(rng):
    A = random_csr(rng, (31, 31), density=0.15)
    check_same_pattern(plait.jit(matmul)(A, A), expected(matmul, A, A), 1e-12)
    S = random_csr(rng, (12, 9), canonical=False)
    T = random_csr(rng, (9, 14), canonical=False)
    check_same_pattern(plait.jit(matmul)(S, T), expected(matmul, S.copy(), T.copy()), 1e-12)


def gram(S):
    return S.T @ S


def transposed_right(S, T):
    return S @ T.T


def both_transposed(S, T):
    return S.T @ T.T


@pytest.mark.parametrize("shape", ((0, 0), (1, 1), (5, 1), (1, 5), (7, 5), (13, 17)))
def test_transposed_operands_are_read_from_csr_copies(rng, shape):
    n, m = shape
    S = random_csr(rng, (n, m))
    T = random_csr(rng, (m, n), dtype=np.float32)
    U = random_csr(rng, (n, m), density=0.6)
    check_same_pattern(plait.jit(gram)(S), expected(lambda S, _: gram(S), S, None), 1e-12)
    check_same_pattern(plait.jit(transposed_right)(S, U), expected(transposed_right, S, U), 1e-12)
    check_same_pattern(plait.jit(both_transposed)(T, S), expected(both_transposed, T, S), 1e-6)


def test_sums_that_cancel_are_not_stored():
    S = sp.csr_array(np.array([[1.0, 1.0, 0.0], [2.0, 0.0, np.nan], [0.0, 0.0, 0.0]]))
    T = sp.csr_array(np.array([[1.0, 2.0], [-1.0, 3.0], [4.0, 0.0]]))
    got, want = plait.jit(matmul)(S, T), expected(matmul, S, T)
    np.testing.assert_array_equal(got.indptr, want.indptr)  # row 0's column 0 is 1 - 1: not stored
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)  # NaN stored where SciPy stores it


@pytest.mark.parametrize("left, left_index, right, right_index", [
    (np.float32, np.int32, np.float64, np.int64),
    (np.float32, np.int64, np.float32, np.int32),
    (np.float32, np.int32, np.float32, np.int32),
    (np.int32, np.int32, np.int64, np.int32),
    (np.int64, np.int64, np.float32, np.int64),
])
def test_value_and_index_types(rng, left, left_index, right, right_index):
    S = random_csr(rng, (9, 7), dtype=left, index=left_index)
    T = random_csr(rng, (7, 8), dtype=right, index=right_index)
    if np.issubdtype(left, np.integer):
        S.data = rng.integers(-3, 4, S.nnz).astype(left)
    if np.issubdtype(right, np.integer):
        T.data = rng.integers(-3, 4, T.nnz).astype(right)
    rtol = 1e-5 if np.float32 in (left, right) else 1e-12
    check_same_pattern(plait.jit(matmul)(S, T), expected(matmul, S, T), rtol)


def test_dot_is_the_product(rng):
    S = random_csr(rng, (9, 7), dtype=np.float32, index=np.int64)
    T = random_csr(rng, (7, 8), index=np.int32)
    check_same_pattern(plait.jit(dot)(S, T), expected(dot, S, T), 1e-5)


def test_result_class_is_the_left_operands(rng):
    A = random_csr(rng, (6, 5), matrix=True)
    B = random_csr(rng, (5, 6))
    check_same_pattern(plait.jit(matmul)(A, B), expected(matmul, A, B), 1e-12)
    check_same_pattern(plait.jit(matmul)(B, A), expected(matmul, B, A), 1e-12)
    C = random_csr(rng, (5, 4), matrix=True)
    check_same_pattern(plait.jit(star)(A, C), expected(star, A, C), 1e-12)


def times_dense(S, T, X):
    return S @ T @ X


@pytest.mark.parametrize("fusion", FUSIONS)
def test_fusion_modes(rng, fusion):
    # A product is stored before what reads it in every mode: the same nests.
    S, T, X = random_csr(rng, (23, 19)), random_csr(rng, (19, 17), density=0.2), dense(rng, 17, 4)
    np.testing.assert_allclose(plait.jit(times_dense, fusion=fusion)(S, T, X), times_dense(S, T, X), rtol=1e-12,
                               atol=1e-12)


def three(S, T, U):
    return S @ T @ U


def sddmm_on_a_product(S, T, B, C):
    return (S @ T).multiply(B @ C)


def softmax_of_a_product(S, T, X):
    P = S @ T
    return plait.sparse.softmax(P, axis=1) @ X, P.sum(axis=0)


def products_of_merges(S, V, T, U):
    return (S @ T - V) @ U, (S + S) @ T


# One test per program: each compiles its own kernel, so they spread over
# the test processes.
@pytest.mark.parametrize("fn", (times_dense, three, sddmm_on_a_product, softmax_of_a_product, products_of_merges),
                         ids=lambda fn: fn.__name__)
def test_products_in_programs(rng, fn):
    n, k, m = 23, 19, 17
    S, T, U = random_csr(rng, (n, k)), random_csr(rng, (k, m), density=0.2), random_csr(rng, (m, n), density=0.3)
    X, B, C = dense(rng, m, 4), dense(rng, n, 3), dense(rng, 3, m)
    V = random_csr(rng, (n, m))
    args = {times_dense: (S, T, X), three: (S, T, U), sddmm_on_a_product: (S, T, B, C),
            softmax_of_a_product: (S, T, X), products_of_merges: (S, V, T, U)}[fn]
    got, want = plait.jit(fn)(*args), fn(*args)
    for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if sp.issparse(w):
            check_same_pattern(g, w.tocsr().sorted_indices(), 1e-12)
        else:
            assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_rows_that_touch_few_columns(rng):
    # A row that touches fewer than 1/32 of the result's columns is sorted
    # (heapsort), a denser one read in column order from its stamps: both,
    # in rows of none, one and many touched columns.
    S = random_csr(rng, (300, 2000), density=0.002, dense_row=True)
    T = random_csr(rng, (2000, 4000), density=0.002, dense_row=True)
    T.data[T.indices % 3 == 0] *= -1.0
    check_same_pattern(plait.jit(matmul)(S, T), expected(matmul, S, T), 1e-12)
    picks = sp.csr_array((np.ones(3), np.array([0, 1, 1000]), np.arange(4)), shape=(3, 2000))
    check_same_pattern(plait.jit(matmul)(picks, T), expected(matmul, picks, T), 1e-12)


def test_rows_in_parallel(rng):
    # Large enough for the rows to run on several threads; one dense row.
    S = random_csr(rng, (3000, 2000), density=0.004, dense_row=True)
    T = random_csr(rng, (2000, 1500), density=0.01, dense_row=True)
    check_same_pattern(plait.jit(matmul)(S, T), expected(matmul, S, T), 1e-12)


def test_errors(rng):
    S, T = random_csr(rng, (4, 5)), random_csr(rng, (4, 5))
    with pytest.raises(ValueError, match="inner dimensions"):
        plait.jit(matmul)(S, T)

    with pytest.raises(CompileError, match="bool"):
        plait.jit(matmul)(S.astype(bool), T.T.tocsr())
