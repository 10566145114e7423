"""Sparse operator programs against SciPy: each decorated function returns
what the undecorated one returns (values and dense/sparse kind), on sparse
matrices with empty rows, a dense row, 0 and 1 stored entries, empty shapes,
int32 and int64 indices, float32 and float64 values, csr_array and
csr_matrix, and non-canonical inputs; in the three fusion modes. explain()
pins the fusion decisions and the operation counts."""

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp

import plait
from plait.errors import CompileError
from sparse_cases import (attention, dense, gnn, random_csr, row_normalise, sddmm, sddmm_spmm, softmax, spmm, spmv,
                          to_array)

FUSIONS = ("partial", "maximal", "none")
SHAPES = ((0, 0), (0, 3), (3, 0), (1, 1), (1, 6), (6, 1), (7, 5), (13, 17))


def check_same(got, want, rtol=1e-6):
    if sp.issparse(want):
        assert sp.issparse(got), f"expected a sparse result, got {type(got).__name__}"
        assert isinstance(got, sp.sparray) == isinstance(want, sp.sparray)
        assert got.shape == want.shape
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.toarray(), want.toarray(), rtol=rtol, atol=rtol)
        return
    assert not sp.issparse(got)
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def gnn_right(A, X, W):
    return A @ (X @ W)


def sddmm_spmm_two_statements(S, C, D, E):
    T = S.multiply(C @ D)
    return T @ E


def row_sums(S):
    return S.sum(axis=1)


def sparse_exp(S):
    return plait.sparse.exp(S)


def sparse_row_max(S):
    return plait.sparse.row_max(S)


def sparse_row_sum(S):
    return plait.sparse.row_sum(S)


def sparse_mask(S, D):
    return plait.sparse.mask(S, D)


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_core_programs(rng, fusion, shape):
    n, m = shape
    S = random_csr(rng, shape)
    A = random_csr(rng, (n, n))
    k, h = 4, 3
    cases = [
        (spmv, (S, dense(rng, m))),
        (spmm, (S, dense(rng, m, 5))),
        (sddmm, (S, dense(rng, n, k), dense(rng, k, m))),
        (gnn, (A, dense(rng, n, 6), dense(rng, 6, h))),
        (gnn_right, (A, dense(rng, n, 6), dense(rng, 6, h))),
        (sddmm_spmm, (S, dense(rng, n, k), dense(rng, k, m), dense(rng, m, h))),
        (sddmm_spmm_two_statements, (S, dense(rng, n, k), dense(rng, k, m), dense(rng, m, h))),
        (softmax, (S,)),
    ]
    for fn, args in cases:
        check_same(plait.jit(fn, fusion=fusion)(*args), fn(*args))


@pytest.mark.parametrize("index", (np.int32, np.int64))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("matrix", (False, True))
def test_types(rng, index, dtype, matrix):
    S = random_csr(rng, (9, 7), dtype=dtype, index=index, matrix=matrix)
    x = dense(rng, 7, dtype=dtype)
    B, C = dense(rng, 9, 3, dtype=dtype), dense(rng, 3, 7, dtype=dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    check_same(plait.jit(spmv)(S, x), spmv(S, x), rtol)
    got, want = plait.jit(sddmm)(S, B, C), sddmm(S, B, C)
    check_same(got, want, rtol)
    # The result's index arrays are its own, as SciPy's are.
    assert not np.shares_memory(got.indices, S.indices) and not np.shares_memory(got.indptr, S.indptr)
    assert got.indices.dtype == S.indices.dtype


def test_mixed_value_types(rng):
    S = random_csr(rng, (8, 6), dtype=np.float32)
    x = dense(rng, 6, dtype=np.float64)
    check_same(plait.jit(spmv)(S, x), spmv(S, x))
    Si = sp.csr_array((np.arange(1, 5, dtype=np.int32), [0, 2, 1, 3], [0, 2, 2, 4]), shape=(3, 4))
    check_same(plait.jit(spmv)(Si, np.ones(4, np.int64)), spmv(Si, np.ones(4, np.int64)))


@pytest.mark.parametrize("shape", SHAPES)
def test_reductions_and_maps(rng, shape):
    S = random_csr(rng, shape, positive=True)

    def sums(S):
        return S.sum(axis=0), S.sum(axis=1), S.sum()

    def means(S):
        return S.mean(axis=1), S.mean(axis=0)

    def maps(S, a):
        return (S * a) / 3, -S, a * S, S.sqrt(), S.power(2), abs(S), S.tanh()

    def shape_and_nnz(S):
        return S.shape[0], S.shape[1], S.nnz

    if 0 in shape:
        # SciPy's mean divides by the extent as a Python float.
        with pytest.raises(ZeroDivisionError):
            means(S)
        with pytest.raises(ZeroDivisionError):
            plait.jit(means)(S)
    for fn, args in ((sums, (S,)), (maps, (S, 2.5)), (shape_and_nnz, (S,))) + (((means, (S,)),) if 0 not in shape else ()):
        got, want = plait.jit(fn)(*args), fn(*args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if isinstance(w, int):
                assert g == w
            else:
                check_same(g, w)
    check_same(plait.jit(to_array)(S), S.toarray())


@pytest.mark.parametrize("shape", SHAPES)
def test_pattern_wise(rng, shape):
    S = random_csr(rng, shape)
    D = dense(rng, *shape)
    check_same(plait.jit(softmax)(S), softmax(S))
    for fn, args in ((sparse_exp, (S,)), (sparse_row_max, (S,)), (sparse_row_sum, (S,)), (sparse_mask, (S, D))):
        check_same(plait.jit(fn)(*args), fn(*args))
    rows = S + sp.eye_array(*shape, format="csr") if min(shape) > 0 else S
    check_same(plait.jit(row_normalise)(rows), row_normalise(rows))


def test_broadcast_multiply(rng):
    S = random_csr(rng, (6, 5))

    def mul(S, d):
        return S.multiply(d)

    for d in (dense(rng, 6, 5), dense(rng, 6, 1), dense(rng, 1, 5), dense(rng, 5), np.ones((1, 1))):
        check_same(plait.jit(mul)(S, d), mul(S, d))
    with pytest.raises(ValueError, match="broadcast"):
        plait.jit(mul)(S, dense(rng, 4, 5))


def test_transpose(rng):
    S = random_csr(rng, (7, 5))

    def t_spmv(S, y):
        return S.T @ y

    def t_sum(S):
        return S.T.sum(axis=1)

    y = dense(rng, 7)
    check_same(plait.jit(t_spmv)(S, y), t_spmv(S, y))
    check_same(plait.jit(t_sum)(S), t_sum(S))


def transposed(S):
    return S.T


def scaled_transpose(S):
    return (S * 2.0).T


def masked_transpose(S, D):
    return S.T.multiply(D), S.T.T


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("matrix", [False, True])
def test_transposes_are_returned_as_csc(rng, shape, index, matrix):
    """A returned transpose is CSC, as SciPy's `.T` is: csc_array or
    csc_matrix with the transposed shape, its operand's index dtype and the
    same values; `.T.T` is CSR again."""
    S = random_csr(rng, shape, index=index, matrix=matrix)
    D = dense(rng, shape[1], shape[0])
    for fn, args in ((transposed, (S,)), (scaled_transpose, (S,)), (masked_transpose, (S, D))):
        got, want = plait.jit(fn)(*args), fn(*args)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            if w.format == "coo":  # SciPy's multiply gives COO, Plait the operand's format
                w = w.asformat("csc" if g.format == "csc" else "csr")
            else:  # SciPy's conversion from COO may narrow the indices
                assert g.indices.dtype == w.indices.dtype
            assert type(g) is type(w), (fn.__name__, type(g), type(w))
            check_same(g, w)


def test_non_canonical_and_other_formats(rng):
    S = random_csr(rng, (9, 8), canonical=False)
    assert not S.has_canonical_format
    x = dense(rng, 8)
    jitted = plait.jit(spmv)
    check_same(jitted(S, x), spmv(S, x))
    assert "canonical copy" in jitted.explain()
    # The argument is not changed.
    assert not S.has_canonical_format
    jitted = plait.jit(sddmm)
    B, C = dense(rng, 9, 3), dense(rng, 3, 8)
    check_same(jitted(S, B, C), sddmm(S.copy(), B, C))
    for other in (S.tocoo(), S.tocsc(), sp.csc_matrix(S)):
        jitted = plait.jit(spmv)
        check_same(jitted(other, x), spmv(other, x))
        assert "converted to CSR" in jitted.explain()


def test_zero_and_one_stored_entries(rng):
    for nnz in (0, 1):
        S = sp.csr_array((np.ones(nnz), np.zeros(nnz, np.int32), np.array([0] + [nnz] * 4, np.int32)), shape=(4, 3))
        for fn, args in ((spmv, (S, dense(rng, 3))), (sddmm, (S, dense(rng, 4, 2), dense(rng, 2, 3))),
                         (softmax, (S,)), (sddmm_spmm, (S, dense(rng, 4, 2), dense(rng, 2, 3), dense(rng, 3, 2)))):
            check_same(plait.jit(fn)(*args), fn(*args))


def test_sparse_locals(rng):
    def program(S, B, C, E):
        T = S.multiply(B @ C)
        U = plait.sparse.softmax(T)
        return U @ E, U

    S = random_csr(rng, (8, 6))
    args = (S, dense(rng, 8, 3), dense(rng, 3, 6), dense(rng, 6, 2))
    got, want = plait.jit(program)(*args), program(*args)
    check_same(got[0], want[0])
    check_same(got[1], want[1])


def explain_of(fn, *args, **options):
    jitted = plait.jit(fn, **options)
    jitted(*args)
    return jitted.explain()


def test_fusion_decisions(rng):
    S = random_csr(rng, (8, 6))
    B, C, E = dense(rng, 8, 3), dense(rng, 3, 6), dense(rng, 6, 2)
    partial = explain_of(sddmm_spmm, S, B, C, E)
    assert "dead-value redundancy" in partial
    assert "share the loops over i, j" in partial
    assert "kept as a scalar per iteration" in partial
    # Each stored entry: a K-term dot product, its scaling, and an H-term update.
    assert "operations 2*C.shape[1]*S.nnz + 2*E.shape[1]*S.nnz + S.nnz" in partial
    maximal = explain_of(sddmm_spmm, S, B, C, E, fusion="maximal")
    # Every product inside the sums: K * H operations per stored entry.
    assert "t32(i,j) = sum_k(sum_l(((S(i,k) * (C(i,l) * D(l,k))) * E(k,j))))" in maximal
    assert "operations 4*C.shape[1]*E.shape[1]*S.nnz" in maximal
    unfused = explain_of(sddmm_spmm, S, B, C, E, fusion="none")
    assert "dead-value" not in unfused and "never stored whole" not in unfused
    # The N x M product is computed whole.
    assert "operations 2*C.shape[0]*C.shape[1]*D.shape[1] + 2*E.shape[1]*S.nnz + S.nnz" in unfused

    A = random_csr(rng, (8, 8))
    X, W = dense(rng, 8, 5), dense(rng, 5, 2)
    text = explain_of(gnn, A, X, W)
    assert "kept as (j) per iteration of the shared loops" in text
    assert "association 1: operations 2*A.shape[0]*W.shape[1]*X.shape[1] + 2*A.nnz*X.shape[1]" in text
    assert "association 2: operations 2*W.shape[1]*X.shape[0]*X.shape[1] + 2*A.nnz*W.shape[1]" in text
    # Maximal fusion multiplies inside the sums: O(nnz * H * J).
    assert "operations 3*A.nnz*W.shape[1]*X.shape[1]" in explain_of(gnn, A, X, W, fusion="maximal")


@pytest.mark.parametrize("layout", ("C", "F", "strided"))
@pytest.mark.parametrize("shape, density", (((30, 20), 0.5), ((6, 90), 0.05), ((1, 1), 1.0)))
def test_sddmm_column_reads(rng, layout, shape, density):
    # Row-major C is read from its transposed copy where S stores at least as
    # many entries as C has columns (the first and third shapes), else as it
    # is (the second: no dense row, about 27 entries for 90 columns); a
    # column-major C is read as it is.
    n, m = shape
    S = random_csr(rng, shape, density=density, dense_row=False)
    B = dense(rng, n, 5)
    C = {"C": dense(rng, 5, m), "F": np.asfortranarray(dense(rng, 5, m)), "strided": dense(rng, 5, 2 * m)[:, ::2]}[layout]
    E = dense(rng, m, 3)
    check_same(plait.jit(sddmm)(S, B, C), sddmm(S, B, C))
    check_same(plait.jit(sddmm_spmm)(S, B, C, E), sddmm_spmm(S, B, C, E))
    text = explain_of(sddmm, S, B, C)
    copy = "C is read down its columns (at each stored entry of S): read from a transposed copy when S.nnz >= C.shape[1]"
    if m > 1:  # a single column is both row- and column-major
        assert (copy in text) == (layout != "F"), text


def test_reduction_redundancy(rng):
    def scaled(S, d, X):
        return (S.multiply(d[:, None]) @ X)

    S = random_csr(rng, (7, 6))
    d, X = dense(rng, 7), dense(rng, 6, 4)
    check_same(plait.jit(scaled)(S, d, X), scaled(S, d, X))


@pytest.mark.parametrize("source, message", [
    ("def f(S):\n    return S / S\n", "dense result"),
    ("def f(S):\n    return plait.sparse.softmax(S, axis=0)\n", "axis=0"),
    ("def f(S):\n    for i in range(2):\n        T = S * 2.0\n    return T\n", "top level"),
    ("def f(S):\n    return S.max(axis=1)\n", "'max'"),
])
def test_refusals(tmp_path, source, message):
    path = tmp_path / "kernels.py"
    path.write_text("import plait\n" + source)
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    S = random_csr(np.random.default_rng(0), (4, 4))
    with pytest.raises(CompileError, match=message) as info:
        plait.jit(namespace["f"])(S)
    assert "^" in str(info.value)


def test_csr_matrix_rules(rng):
    S = random_csr(rng, (5, 4), matrix=True)
    x = dense(rng, 4)

    def star(S, x):
        return S * x

    check_same(plait.jit(star)(S, x), star(S, x))  # csr_matrix's * is a product
    check_same(plait.jit(to_array)(S), S.toarray())  # an ndarray for both classes
    with pytest.raises(CompileError, match="numpy.matrix"):
        plait.jit(row_sums)(S)

    def dense_matrix(S):
        return S.todense()

    with pytest.raises(CompileError, match="numpy.matrix"):
        plait.jit(dense_matrix)(S)
    T = random_csr(rng, (5, 4))
    check_same(plait.jit(dense_matrix)(T), T.todense())  # a csr_array's todense() is an ndarray


def test_division_by_a_number_is_float64_as_in_scipy(rng):
    def divide(S, a):
        return S / a

    for dtype in (np.float32, np.float64):
        S = random_csr(rng, (6, 5), dtype=dtype)
        for a in (3.0, np.float32(3.0), 2):
            check_same(plait.jit(divide)(S, a), divide(S, a))
    S = sp.csr_array(np.array([[1, 0], [2, 3]], dtype=np.int32))
    check_same(plait.jit(divide)(S, 2), divide(S, 2))


def test_parameter_rebound_and_dense_left_operand(rng):
    def rebound(S, x):
        y = S @ x
        S = S * 2.0
        return y, S @ x

    def left(X, S):
        return X @ S

    S = random_csr(rng, (6, 5))
    x = dense(rng, 5)
    got, want = plait.jit(rebound)(S, x), rebound(S, x)
    check_same(got[0], want[0])
    check_same(got[1], want[1])
    X = dense(rng, 3, 6)
    check_same(plait.jit(left)(X, S), left(X, S))


def test_plait_sparse_spellings(rng):
    from plait import sparse as ps
    from plait.sparse import softmax as imported_softmax

    def by_alias(S):
        return ps.softmax(S, axis=1)

    def by_import(S):
        return imported_softmax(S)

    S = random_csr(rng, (7, 6))
    for fn in (by_alias, by_import):
        check_same(plait.jit(fn)(S), fn(S))


def test_large_enough_for_threads(rng):
    # Over 1e5 operations the rows run in parallel chunks of equal work.
    n = 3000
    S = sp.random_array((n, n), density=0.01, format="csr", random_state=3)
    S = S + sp.diags_array((np.arange(n) % 7 == 0) * 5.0, format="csr")
    X = dense(rng, n, 8)
    check_same(plait.jit(spmm)(S, X), spmm(S, X), rtol=1e-10)
    check_same(plait.jit(softmax)(S), softmax(S), rtol=1e-10)


@pytest.mark.parametrize("rows, length", [(1000, 6), (20000, 8), (6000, 720)])
def test_rows_in_chunks_of_work_as_many_as_the_work_gives(rng, rows, length):
    # Over 1e5 operations, one chunk (under 16384 units of work: entries and
    # rows), a few, and the most (256, past 4.2e6 units), with rows of 0 to
    # 2 * length entries, a long one among them, int32 indices: each chunk
    # finds its rows by a binary search.
    counts = rng.integers(0, 2 * length + 1, size=rows)
    counts[rows // 3] = 40 * length
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
    indices = rng.integers(0, rows, size=indptr[-1]).astype(np.int32)
    S = sp.csr_array((rng.standard_normal(indptr[-1]), indices, indptr), shape=(rows, rows))
    S.sum_duplicates()
    x = dense(rng, rows)
    check_same(plait.jit(spmv)(S, x), spmv(S, x), rtol=1e-10)
    if rows * length < 1e6:
        X = dense(rng, rows, 10)
        check_same(plait.jit(spmm)(S, X), spmm(S, X), rtol=1e-10)


def test_dense_arithmetic_on_dense_results(rng):
    def scaled_product(S, x):
        return (S @ x) * 2.0

    def sums_plus(S, y):
        return S.sum(axis=1) + y

    def negated_sums(S):
        return -(S.sum(axis=1))

    S = random_csr(rng, (6, 5))
    for fn, args in ((scaled_product, (S, dense(rng, 5))), (sums_plus, (S, dense(rng, 6))), (negated_sums, (S,))):
        check_same(plait.jit(fn)(*args), fn(*args))


def test_star_with_a_product_is_sddmm(rng):
    def star(S, B, C):
        return S * (B @ C)

    S = random_csr(rng, (7, 6))
    B, C = dense(rng, 7, 3), dense(rng, 3, 6)
    jitted = plait.jit(star)
    check_same(jitted(S, B, C), star(S, B, C))
    assert "dead-value redundancy" in jitted.explain()


def test_gpu_sparse_matrices_are_refused_by_cpu_kernels():
    # A stand-in with cupyx's module and SciPy's attributes: the CPU call path
    # hands it to the sparse calls, which refuse it by name.
    gpu_matrix = type("csr_matrix", (), {"format": "csr", "tocsr": lambda self: self,
                                         "__module__": "cupyx.scipy.sparse._csr"})
    with pytest.raises(TypeError, match=r"spmv\(\) argument 'A' is a cupyx.scipy.sparse matrix"):
        plait.jit(spmv)(gpu_matrix(), np.ones(3))


@pytest.mark.parametrize("fusion", FUSIONS)
def test_chains_of_a_computed_sparse_matrix_with_broadcast_operands(rng, fusion):
    # A sparse operand computed with a dense array (its broadcast flags version
    # the nests) times a chain of dense products: each version of the rows'
    # loop binds its own row temporary.
    def scaled_chain(S, D, X, W):
        return (S.multiply(D) @ X) @ W

    def masked_chain(S, D, X, W):
        T = plait.sparse.mask(S, D)
        return T @ (X @ W)

    for fn in (scaled_chain, masked_chain):
        kernel = plait.jit(fn, fusion=fusion)
        for shape in ((0, 0), (1, 1), (7, 5), (13, 17)):
            n, m = shape
            args = (random_csr(rng, shape), dense(rng, n, m), dense(rng, m, 4), dense(rng, 4, 3))
            check_same(kernel(*args), fn(*args))
        # A row of D broadcast down the rows: the other version of the nests.
        args = (random_csr(rng, (7, 5)), dense(rng, 1, 5), dense(rng, 5, 4), dense(rng, 4, 3))
        check_same(kernel(*args), fn(*args))


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_attention_over_a_pattern_samples_its_scores(rng, fusion, index):
    # Masked attention as an operator program: the scores q @ k.T at P's
    # stored entries only (dead values), their softmax per row, times v;
    # rows with no entry (their output is zero), one row, one column.
    kernel = plait.jit(attention, fusion=fusion)
    for n, m, d in ((0, 0, 3), (1, 1, 1), (7, 5, 3), (33, 40, 8)):
        P = random_csr(rng, (n, m), density=0.3, index=index)
        q, k, v = dense(rng, n, d), dense(rng, m, d), dense(rng, m, 4)
        check_same(kernel(P, q, k, v, 0.5), attention(P, q, k, v, 0.5), rtol=1e-10)
    if fusion == "partial":
        explained = kernel.explain()
        assert "dead-value redundancy (computed only at the stored entries)" in explained
        assert "q.shape[0]*q.shape[1]*k.shape[0]" not in explained


SAMPLED_PROGRAMS = [
    "abs(plait.sparse.mask(P, q @ k.T))",
    "plait.sparse.mask(P.power(2), q @ k.T)",
    "X + plait.sparse.mask(P, q @ k.T).T",
    "plait.sparse.mask(abs(P), q @ k.T).sum()",
    "plait.sparse.mask(plait.sparse.exp(P), q @ k.T).mean(axis=0)",
    "plait.sparse.mask(P * 2.0, q @ k.T) @ plait.sparse.mask(P * 2.0, q @ k.T).T",
    "plait.sparse.row_sum(plait.sparse.mask(P, X @ X))",
    "plait.sparse.mask(P.multiply(X), q @ k.T) + plait.sparse.mask(P.multiply(X), q @ k.T)",
    "plait.sparse.mask(plait.sparse.softmax(P, axis=1), q @ k.T).multiply(q @ k.T)",
]


@pytest.mark.parametrize("expr", SAMPLED_PROGRAMS)
def test_masked_products_compose_with_the_other_operations(rng, tmp_path, expr):
    # Each failed an internal check of the compiler while mask dropped its
    # dense operand's statements. (A kernel's source is read from its file.)
    source = tmp_path / "sampled_program.py"
    source.write_text(f"import plait\n\n\ndef program(P, q, k, X):\n    return {expr}\n")
    spec = importlib.util.spec_from_file_location("sampled_program", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    program = module.program
    n, d = 9, 3
    P = random_csr(rng, (n, n))
    args = (P, dense(rng, n, d), dense(rng, n, d), dense(rng, n, n))
    check_same(plait.jit(program)(*args), program(*args), rtol=1e-10)


@pytest.mark.parametrize("fusion", FUSIONS)
def test_mask_broadcasts_its_dense_operand(rng, fusion):
    # The rows and columns come from S, never from a dense operand that broadcasts.
    def masked(S, D):
        return plait.sparse.mask(S, D)

    kernel = plait.jit(masked, fusion=fusion)
    for shape in ((1, 1), (7, 5), (13, 17)):
        n, m = shape
        S = random_csr(rng, shape)
        for D in (dense(rng, n, m), dense(rng, 1, m), dense(rng, n, 1), dense(rng, m), dense(rng, 1, 1)):
            check_same(kernel(S, D), masked(S, D))


def sampled_arithmetic(S, B, C):
    # Arithmetic of a dense product with a number, at S's entries (sinkhorn's
    # v = c.multiply(1 / (K.T @ u))).
    return S.multiply(1 / (B @ C)), S.multiply(B @ C * 2.0), S.multiply(0.5 - B @ C), S.multiply((B @ C) + 1)


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_arithmetic_of_a_sampled_product(rng, fusion, shape):
    n, m = shape
    S = random_csr(rng, shape)
    B, C = dense(rng, n, 3) + 1.0, dense(rng, 3, m) + 1.0
    got, want = plait.jit(sampled_arithmetic, fusion=fusion)(S, B, C), sampled_arithmetic(S, B, C)
    for g, w in zip(got, want):
        check_same(g, w)


def sampled_reciprocal(S, B, C):
    return S.multiply(1 / (B @ C))


def test_a_sampled_product_under_a_division_is_computed_at_the_stored_entries_only(rng):
    S = random_csr(rng, (30, 40), density=0.1)
    B, C = dense(rng, 30, 4) + 1.0, dense(rng, 4, 40) + 1.0
    text = explain_of(sampled_reciprocal, S, B, C)
    assert "(f64(1:int()) / sum_k(" in text and "[loops i, j (stored in S)]" in text, text
    assert "handed to the BLAS" not in text, text


def invariant_in_loops(A, d, x, steps):
    M = A.multiply(d[:, None])  # read in the loop: computed once, here
    for _ in range(steps):
        x = 0.5 * x + M @ x
    return x


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize("shape", ((0, 0), (1, 1), (7, 7), (13, 13)))
def test_a_sparse_value_read_in_a_loop_is_computed_once(rng, fusion, shape):
    A = random_csr(rng, shape)
    d, x = dense(rng, shape[0]), dense(rng, shape[0])
    for steps in (0, 1, 5):
        check_same(plait.jit(invariant_in_loops, fusion=fusion)(A, d, x, steps), invariant_in_loops(A, d, x, steps))
    text = explain_of(invariant_in_loops, A, d, x, 3)
    assert "'M' computed once where it is bound: it is read inside a loop" in text, text
