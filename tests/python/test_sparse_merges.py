"""Elementwise operations between two sparse matrices (S + T, S - T,
S.multiply(T), S.maximum(T), S.minimum(T)) and with numbers that keep the
result sparse (S.maximum(0)), whose results have a pattern of their own,
and sparse plus dense (a dense result), against SciPy: values, the stored
pattern (SciPy drops the zeros a merge makes), dtypes of values and
indices, and the class of the result."""

import numpy as np
import pytest
import scipy.sparse as sp

import plait
from plait.errors import CompileError
from sparse_cases import check_same_pattern, dense, random_csr

FUSIONS = ("partial", "maximal", "none")
SHAPES = ((0, 0), (0, 3), (3, 0), (1, 1), (1, 6), (6, 1), (7, 5), (13, 17))


def add(S, T):
    return S + T


def subtract(S, T):
    return S - T


def multiply(S, T):
    return S.multiply(T)


def star(S, T):
    return S * T


def maximum(S, T):
    return S.maximum(T)


def minimum(S, T):
    return S.minimum(T)


MERGES = (add, subtract, multiply, maximum, minimum)


@pytest.mark.parametrize("shape", SHAPES)
def test_merges_match_scipy(rng, shape):
    S = random_csr(rng, shape)
    others = [random_csr(rng, shape, density=0.5, dense_row=False), S, -S]
    # Entries that cancel or whose maximum is zero: not stored, as SciPy does not store them.
    partly = S.copy()
    partly.data[::2] *= -1
    others.append(partly)
    for fn in MERGES + (star,):
        kernel = plait.jit(fn)
        for T in others:
            check_same_pattern(kernel(S, T), fn(S, T))


@pytest.mark.parametrize("left, left_index, right, right_index", [
    (np.float32, np.int32, np.float64, np.int64),
    (np.float32, np.int64, np.float32, np.int32),
    (np.int32, np.int32, np.int64, np.int32),
])
def test_value_and_index_types(rng, left, left_index, right, right_index):
    S = random_csr(rng, (9, 7), dtype=left, index=left_index)
    T = random_csr(rng, (9, 7), dtype=right, index=right_index)
    if np.issubdtype(left, np.integer):
        S.data = rng.integers(-3, 4, S.nnz).astype(left)
        T.data = rng.integers(-3, 4, T.nnz).astype(right)
    rtol = 1e-6 if np.float32 in (left, right) else 1e-12
    for fn in MERGES:
        check_same_pattern(plait.jit(fn)(S, T), fn(S, T), rtol)


def test_result_class_is_the_left_operands(rng):
    A = random_csr(rng, (6, 5), matrix=True)
    B = random_csr(rng, (6, 5))
    for fn in (add, subtract, multiply, maximum):
        check_same_pattern(plait.jit(fn)(A, B), fn(A, B))
        check_same_pattern(plait.jit(fn)(B, A), fn(B, A))


def test_non_canonical_operands_and_nan(rng):
    S = random_csr(rng, (12, 9), canonical=False)
    T = random_csr(rng, (12, 9), canonical=False)
    for fn in MERGES:
        check_same_pattern(plait.jit(fn)(S, T), fn(S.copy(), T.copy()))
    S = sp.csr_array(np.array([[np.nan, 1.0, 0.0], [0.0, np.inf, 2.0]]))
    T = sp.csr_array(np.array([[1.0, -1.0, 0.0], [3.0, -np.inf, 0.0]]))
    for fn in (add, multiply):
        got, want = plait.jit(fn)(S, T), fn(S, T)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.data, want.data)  # NaN stored where SciPy stores it


@pytest.mark.parametrize("shape", SHAPES)
def test_maximum_and_minimum_with_a_number(rng, shape):
    S = random_csr(rng, shape)
    S.data[::3] = 0.0  # stored zeros: dropped by the merge, as by SciPy

    def relu(S):
        return S.maximum(0)

    def clipped(S):
        return S.maximum(-0.25), S.minimum(0.0), S.minimum(3)

    check_same_pattern(plait.jit(relu)(S), relu(S))
    for got, want in zip(plait.jit(clipped)(S), clipped(S)):
        check_same_pattern(got, want)


@pytest.mark.parametrize("fusion", FUSIONS)
def test_merged_results_in_programs(rng, fusion):
    n, m = 23, 19
    S, T = random_csr(rng, (n, m)), random_csr(rng, (n, m), density=0.2)
    X, B, C = dense(rng, m, 4), dense(rng, n, 3), dense(rng, 3, m)

    def product(S, T, X):
        return (S + T) @ X

    def sums(S, T):
        return (S - T).sum(axis=1), S.multiply(T).sum()

    def sddmm_on_a_merge(S, T, B, C):
        return S.multiply(T).multiply(B @ C)

    def softmax_of_a_merge(S, T, X):
        U = S.maximum(T)
        return plait.sparse.softmax(U, axis=1) @ X

    def three(S, T):
        return (S + T) - S.multiply(T) * 2.0

    for fn, args in ((product, (S, T, X)), (sums, (S, T)), (sddmm_on_a_merge, (S, T, B, C)),
                     (softmax_of_a_merge, (S, T, X)), (three, (S, T))):
        got, want = plait.jit(fn, fusion=fusion)(*args), fn(*args)
        for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            if sp.issparse(w):
                check_same_pattern(g, w.tocsr(), 1e-12)  # CSR where SciPy gives COO (docs/sparse.md)
            else:
                assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_rows_in_parallel(rng):
    # Large enough for the rows to run on several threads.
    S = random_csr(rng, (3000, 2000), density=0.01, dense_row=True)
    T = random_csr(rng, (3000, 2000), density=0.02, dense_row=False)
    for fn in (add, multiply):
        check_same_pattern(plait.jit(fn)(S, T), fn(S, T))


def test_sparse_plus_dense_is_dense(rng):
    S = random_csr(rng, (6, 5), dtype=np.float32)

    def plus(S, D):
        return S + D

    def minus(S, D):
        return D - S

    for D in (dense(rng, 6, 5), dense(rng, 5), dense(rng, 1, 5, dtype=np.float32)):
        for fn in (plus, minus):
            got, want = plait.jit(fn)(S, D), fn(S, D)
            assert type(got) is np.ndarray and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_errors(rng):
    S, T = random_csr(rng, (4, 5)), random_csr(rng, (5, 4))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        plait.jit(add)(S, T)
    with pytest.raises(ValueError, match="broadcast"):
        plait.jit(multiply)(S, random_csr(rng, (1, 5)))
    with pytest.raises(CompileError, match="numpy.matrix"):
        plait.jit(add)(random_csr(rng, (4, 5), matrix=True), dense(rng, 4, 5))
    def dense_maximum(S):
        return S.maximum(1.5)

    def plus_one(S):
        return S + 1

    with pytest.raises(CompileError, match="<= 0"):
        plait.jit(dense_maximum)(S)
    with pytest.raises(CompileError, match="only the number 0"):
        plait.jit(plus_one)(S)
