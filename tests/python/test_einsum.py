"""numpy.einsum over dense operands against NumPy: explicit and implicit
outputs, sums, transposes, diagonals and traces, products of two and three
operands (contracted pairwise), mixed dtypes, empty and one-element
dimensions, non-contiguous views; NumPy's errors for bad subscripts."""

import numpy as np
import pytest

import plait
from plait.errors import CompileError


def one(A):
    return (np.einsum("ij->ji", A), np.einsum("ij->i", A), np.einsum("ij", A), np.einsum("ij->", A),
            np.einsum("ji", A))


def square(A):
    return np.einsum("ii", A), np.einsum("ii->i", A)


def two(A, B, x):
    return (np.einsum("ij,jk->ik", A, B), np.einsum("ij,jk", A, B), np.einsum("ij,j->i", A, x),
            np.einsum("ij,ik->jk", A, A), np.einsum("ij,ij->ij", A, A), np.einsum("i,j->ij", x, x),
            np.einsum("i,i", x, x), np.einsum("ij,kj->ki", A, A))


def three(A, B, C):
    return np.einsum("ij,jk,kl->il", A, B, C), np.einsum("ij,jk,kl->", A, B, C), np.einsum("ab,bc,ca", A, B, C)


def check(got, want, rtol):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype, np.asarray(w).dtype)
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("n, m", [(0, 3), (1, 1), (3, 0), (5, 7), (17, 13)])
def test_einsum_matches_numpy(rng, n, m):
    A = rng.random((n, m)) - 0.5
    B = rng.random((m, 4)) - 0.5
    x = rng.random(m) - 0.5
    C = (rng.random((4, n)) - 0.5).astype(np.float32)
    check(plait.jit(one)(A), one(A), 1e-12)
    check(plait.jit(two)(A, B, x), two(A, B, x), 1e-12)
    check(plait.jit(three)(A, B, C.T.copy().T), three(A, B, C.T.copy().T), 1e-6)
    S = rng.random((m, m))
    check(plait.jit(square)(S), square(S), 1e-12)


def test_views_and_integer_operands(rng):
    A = rng.random((9, 8))
    check(plait.jit(one)(A[::2, 1::3]), one(A[::2, 1::3]), 1e-12)
    check(plait.jit(one)(A.T), one(A.T), 1e-12)
    K = rng.integers(-5, 5, (6, 5)).astype(np.int32)
    L = rng.integers(-5, 5, (5, 4)).astype(np.int64)
    x = rng.integers(-5, 5, 5).astype(np.int32)
    check(plait.jit(two)(K, L, x), two(K, L, x), 0)


def test_chain_is_contracted_pairwise(rng):
    jitted = plait.jit(three)
    A, B, C = rng.random((6, 5)), rng.random((5, 4)), rng.random((4, 6)).astype(np.float32)
    check(jitted(A, B, C), three(A, B, C), 1e-6)
    # Two products of three extents each, not one sum over four.
    assert "2*A.shape[0]*A.shape[1]*B.shape[1] + 2*A.shape[0]*B.shape[1]*C.shape[1]" in jitted.explain()


def test_errors(rng):
    def size_mismatch(A, B):
        return np.einsum("ij,jk->ik", A, B)

    with pytest.raises(ValueError, match="labelled 'j' differ"):
        plait.jit(size_mismatch)(rng.random((2, 3)), rng.random((4, 2)))

    def collapsing(A):
        return np.einsum("ii", A)

    with pytest.raises(ValueError, match="labelled 'i' differ"):
        plait.jit(collapsing)(rng.random((2, 3)))

    def repeated_output(A):
        return np.einsum("ij->ii", A)

    def unknown_output(A):
        return np.einsum("ij->iz", A)

    def too_many(x):
        return np.einsum("ij", x)

    def ellipsis(A):
        return np.einsum("...j->j", A)

    for fn, arg, message in ((repeated_output, rng.random((2, 2)), "multiple times"),
                             (unknown_output, rng.random((2, 2)), "never appeared"),
                             (too_many, rng.random(2), "does not match"),
                             (ellipsis, rng.random((2, 2)), "'...'")):
        with pytest.raises((ValueError, CompileError), match=message) as info:
            plait.jit(fn)(arg)
        assert "^" in str(info.value)
