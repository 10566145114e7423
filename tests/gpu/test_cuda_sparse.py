"""Sparse operator programs on the GPU, differentially: each program runs
compiled for target="cuda" on SciPy matrices (copied to the GPU),
cupyx.scipy.sparse matrices and torch sparse CSR tensors (read in place),
and as the undecorated function on the SciPy matrices; values, shapes and
the kind of result (sparse or dense, and the library) must match. cupyx
matrices follow SciPy's csr_matrix (their reference is one), torch tensors
SciPy's csr_array. Shapes with empty rows, a dense row, 0 and 1 stored
entries, empty matrices; int32 and int64 indices; float32 and float64;
non-canonical inputs. Skipped, with the reason, where CUDA is unavailable."""

import numpy as np
import pytest
import scipy.sparse as sp

import plait
from sparse_cases import (attention, dense, gnn, random_csr, row_normalise, sddmm, sddmm_spmm, softmax, spmm, spmv,
                          to_array)
from test_cuda_run import cupy, torch

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")
if cupy is not None:
    import cupyx.scipy.sparse as csp

LIBS = ["scipy",
        pytest.param("cupyx", marks=pytest.mark.skipif(cupy is None, reason="CuPy is not installed")),
        pytest.param("torch", marks=pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed"))]
SHAPES = ((0, 0), (3, 0), (1, 1), (6, 1), (7, 5), (13, 17), (300, 257))


def on_gpu(value, lib):
    """A SciPy matrix or NumPy array as `lib`'s (scipy: unchanged)."""
    if lib == "scipy":
        return value
    if sp.issparse(value):
        if lib == "cupyx":
            return csp.csr_matrix((cupy.asarray(value.data), cupy.asarray(value.indices.astype(np.int32)),
                                   cupy.asarray(value.indptr.astype(np.int32))), shape=value.shape)
        return torch.sparse_csr_tensor(torch.from_numpy(value.indptr), torch.from_numpy(value.indices),
                                       torch.from_numpy(value.data), size=value.shape,
                                       check_invariants=False).cuda()
    if isinstance(value, np.ndarray):
        return cupy.asarray(value) if lib == "cupyx" else torch.from_numpy(np.ascontiguousarray(value)).cuda()
    return value


def on_host(value, lib):
    """(dense NumPy values, whether sparse) of a result."""
    if sp.issparse(value):
        return value.toarray(), True
    if cupy is not None and isinstance(value, cupy.ndarray):
        return cupy.asnumpy(value), False
    if cupy is not None and csp.issparse(value):
        assert value.format in ("csr", "csc")
        return value.get().toarray(), True
    if torch is not None and isinstance(value, torch.Tensor):
        if value.layout in (torch.sparse_csr, torch.sparse_csc):
            return value.to_dense().cpu().numpy(), True
        assert value.layout == torch.strided
        return value.cpu().numpy(), False
    return np.asarray(value), False


def check(got, want, lib, rtol):
    values, sparse = on_host(got, lib)
    assert sparse == sp.issparse(want), (type(got), type(want))
    want = want.toarray() if sp.issparse(want) else np.asarray(want)
    assert values.shape == want.shape
    assert values.dtype == want.dtype, (values.dtype, want.dtype)
    np.testing.assert_allclose(values, want, rtol=rtol, atol=rtol)
    if lib == "scipy":
        assert isinstance(got, np.ndarray) or sp.issparse(got) or np.isscalar(got)


def reductions(S):
    return S.sum(axis=1), S.mean(axis=1), S.sum()


def column_sums(S):
    return S.sum(axis=0)


def transposed_spmv(S, y):
    return S.T @ y


def scaled(S):
    return abs(S * 2.0) / 3.0


def mask_row(S, D):
    return plait.sparse.mask(S, D)


def scaled_chain(S, D, X, W):
    return (S.multiply(D) @ X) @ W


def merges(S, T):
    return S + T, S.multiply(T), S - T


def merge_chain(S, T, X):
    return (S.maximum(T) - S) @ X


def products(S, T, X):
    P = S @ T
    return P, P @ X, S.T @ S


def inputs(name, rng, shape, dtype, matrix=False):
    n, m = shape
    d = lambda *s: (rng.random(s) - 0.5).astype(dtype)  # noqa: E731
    S = random_csr(rng, shape, dtype=dtype, positive=name == "row_normalise", matrix=matrix)
    return {
        "spmv": lambda: (S, d(m)),
        "spmm": lambda: (S, d(m, 5)),
        "sddmm": lambda: (S, d(n, 4), d(4, m)),
        "gnn": lambda: (random_csr(rng, (n, n), dtype=dtype, matrix=matrix), d(n, 6), d(6, 3)),
        "sddmm_spmm": lambda: (S, d(n, 4), d(4, m), d(m, 3)),
        "row_normalise": lambda: (S,),
        "softmax": lambda: (S,),
        "reductions": lambda: (S,),
        "column_sums": lambda: (S,),
        "transposed_spmv": lambda: (S, d(n)),
        "scaled": lambda: (S,),
        "to_array": lambda: (S,),
        "mask_row": lambda: (S, d(1, m)),  # broadcast down the rows
        "scaled_chain": lambda: (S, d(1, m), d(m, 4), d(4, 3)),
        "merges": lambda: (S, random_csr(rng, shape, dtype=dtype, matrix=matrix, dense_row=False)),
        "merge_chain": lambda: (S, random_csr(rng, shape, dtype=dtype, matrix=matrix), d(m, 3)),
        "products": lambda: (S, random_csr(rng, (m, 6), dtype=dtype, matrix=matrix, density=0.5), d(6, 3)),
    }[name]()


PROGRAMS = {f.__name__: f for f in (spmv, spmm, sddmm, gnn, sddmm_spmm, row_normalise, softmax, reductions,
                                     column_sums, transposed_spmv, scaled, to_array, mask_row, scaled_chain,
                                     merges, merge_chain, products)}
# Reductions with an axis of a csr_matrix return numpy.matrix, which kernels
# do not return: refused at the line, as on the CPU.
MATRIX_REFUSED = ("row_normalise", "reductions", "column_sums")


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_match_scipy(name, lib, rng):
    fn = PROGRAMS[name]
    kernel = plait.jit(fn, target="cuda")
    matrix = lib == "cupyx"
    if matrix and name in MATRIX_REFUSED:
        with pytest.raises(plait.CompileError, match="numpy.matrix"):
            kernel(*[on_gpu(a, lib) for a in inputs(name, rng, (7, 5), np.float64, matrix)])
        return
    for shape in SHAPES:
        if name == "reductions" and shape[1] == 0:
            continue  # SciPy's mean over no columns divides by zero (a ZeroDivisionError, tested on the CPU)
        for dtype in (np.float64, np.float32):
            args = inputs(name, rng, shape, dtype, matrix)
            want = fn(*args)
            got = kernel(*[on_gpu(a, lib) for a in args])
            rtol = 1e-9 if dtype == np.float64 else 2e-4
            if isinstance(want, tuple):
                assert isinstance(got, tuple) and len(got) == len(want)
                for g, w in zip(got, want):
                    check(g, w, lib, rtol)
            else:
                check(got, want, lib, rtol)


def rows_of_lengths(rng, lengths, m, dtype, index):
    """A csr_array whose rows store `lengths` entries at distinct random columns."""
    cols = [np.sort(rng.choice(m, k, replace=False)) for k in lengths]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index)
    indices = np.concatenate(cols).astype(index)
    return sp.csr_array((dense(rng, int(indptr[-1]), dtype=dtype), indices, indptr), shape=(len(lengths), m))


def scaled_transpose(S):
    return (S * 2.0).T


@pytest.mark.parametrize("lib", LIBS)
def test_transposes_are_returned_as_csc(lib, rng):
    """A returned transpose is CSC in the library of the operand: SciPy's
    csc_array, cupyx's csc_matrix, a torch sparse CSC tensor."""
    kernel = plait.jit(scaled_transpose, target="cuda")
    for shape in ((0, 0), (1, 1), (7, 5), (300, 257)):
        S = random_csr(rng, shape, matrix=lib == "cupyx")
        got, want = kernel(on_gpu(S, lib)), scaled_transpose(S)
        check(got, want, lib, 1e-12)
        if lib == "torch":
            assert got.layout == torch.sparse_csc and tuple(got.shape) == want.shape
        else:
            assert got.format == "csc" and got.shape == want.shape


@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_long_rows_add_their_chunks_of_entries(index, dtype, rng):
    """Rows of more than 64 entries, whose entries add into a dense row
    (SpMM, the fused SDDMM-SpMM) or into the row's element (spmv, row sums,
    row normalisation's sums), run in chunks of 64 stored entries that add
    their parts atomically: rows of 63, 64 and 65 entries, rows that start
    and end inside a chunk, one row of many chunks, short and empty rows
    between them."""
    lengths = [0, 65, 3, 64, 63, 0, 129, 1, 2000, 0, 5, 130, 448, 0, 0, 66, 2]
    m = 2100
    S = rows_of_lengths(rng, lengths, m, dtype, index)
    n = S.shape[0]
    rtol = 1e-9 if dtype == np.float64 else 2e-4
    cases = ((spmm, (S, dense(rng, m, 5, dtype=dtype))), (spmm, (S, dense(rng, m, 40, dtype=dtype))),
             (sddmm_spmm, (S, dense(rng, n, 4, dtype=dtype), dense(rng, 4, m, dtype=dtype),
                           dense(rng, m, 3, dtype=dtype))),
             (spmv, (S, dense(rng, m, dtype=dtype))), (row_normalise, (abs(S),)))
    for fn, args in cases:
        kernel = plait.jit(fn, target="cuda")
        check(kernel(*args), fn(*args), "scipy", rtol)
        assert "run in chunks of 64 entries" in kernel.explain()


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("fn", [spmv, spmm])
def test_row_offsets_past_the_stored_entries_raise(fn, rng):
    """A torch CSR tensor built without its invariants checked whose last
    row offset (200) passes its column indices (150 entries): the long row's
    chunks reach past them, an IndexError as on the CPU, not a sum of what
    the chunks over the array found."""
    crow = torch.tensor([0, 0, 200], dtype=torch.int32)
    col = torch.arange(150, dtype=torch.int32)
    S = torch.sparse_csr_tensor(crow, col, torch.ones(150, dtype=torch.float64), size=(2, 150),
                                check_invariants=False).cuda()
    x = torch.ones(150, dtype=torch.float64, device="cuda")
    if fn is spmm:
        x = x[:, None].repeat(1, 4)
    with pytest.raises(IndexError, match="row offsets of"):
        plait.jit(fn, target="cuda")(S, x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_attention_over_a_pattern_samples_its_scores(dtype, rng):
    """Masked attention as an operator program: scores at the pattern's
    stored entries, their softmax per row, times v; rows with no entry give
    zeros."""
    kernel = plait.jit(attention, target="cuda")
    rtol = 1e-9 if dtype == np.float64 else 2e-4
    for n, m, d in ((1, 1, 1), (7, 5, 3), (300, 257, 16)):
        P = random_csr(rng, (n, m), density=0.3, dtype=dtype)
        args = (P, dense(rng, n, d, dtype=dtype), dense(rng, m, d, dtype=dtype), dense(rng, m, 4, dtype=dtype), 0.5)
        check(kernel(*args), attention(*args), "scipy", rtol)


@pytest.mark.parametrize("columns", [1, 3, 16, 40, 200])
def test_many_rows_share_warps(columns, rng):
    """SpMM over many short rows: teams of fewer than 32 threads when the
    dense rows are short (several rows to a warp), a warp or more else."""
    S = random_csr(rng, (20000, 300), density=0.02)
    X = dense(rng, 300, columns)
    check(plait.jit(spmm, target="cuda")(S, X), spmm(S, X), "scipy", 1e-9)


@pytest.mark.parametrize("fusion", ["maximal", "none"])
@pytest.mark.parametrize("name", ["sddmm_spmm", "gnn", "softmax", "row_normalise"])
def test_fusion_modes_match_scipy(name, fusion, rng):
    fn = PROGRAMS[name]
    kernel = plait.jit(fn, target="cuda", fusion=fusion)
    for shape in ((1, 1), (13, 17), (300, 257)):
        args = inputs(name, rng, shape, np.float64)
        check(kernel(*args), fn(*args), "scipy", 1e-9)


@pytest.mark.parametrize("lib", LIBS)
def test_non_canonical_and_int64_inputs_are_canonicalised(lib, rng):
    if lib == "cupyx":
        index_types = (np.int32,)  # cupyx.scipy.sparse holds int32 indices
    else:
        index_types = (np.int32, np.int64)
    kernel = plait.jit(softmax, target="cuda")
    for index in index_types:
        S = random_csr(rng, (40, 33), index=index, canonical=False, matrix=lib == "cupyx")
        want = softmax(S.copy())
        check(kernel(on_gpu(S, lib)), want, lib, 1e-9)
    assert "canonical copy" in kernel.explain()
    if lib == "torch":  # a COO tensor with duplicates, converted and coalesced
        C = random_csr(rng, (40, 33), canonical=False).tocoo()
        T = torch.sparse_coo_tensor(torch.from_numpy(np.vstack([C.row, C.col]).astype(np.int64)),
                                    torch.from_numpy(C.data), C.shape).cuda()
        check(kernel(T), softmax(C.tocsr()), lib, 1e-9)
        assert "(sparse_coo) is converted to CSR" in kernel.explain()


def test_cupyx_results_are_cupyx_and_torch_results_are_torch(rng):
    if cupy is None or torch is None:
        pytest.skip("CuPy and PyTorch with CUDA are both needed")
    S = random_csr(rng, (20, 9), matrix=True)
    B, C = rng.random((20, 3)), rng.random((3, 9))
    kernel = plait.jit(sddmm, target="cuda")
    got = kernel(on_gpu(S, "cupyx"), cupy.asarray(B), cupy.asarray(C))
    assert csp.isspmatrix_csr(got)
    got = kernel(on_gpu(S, "torch"), torch.from_numpy(B).cuda(), torch.from_numpy(C).cuda())
    assert got.layout == torch.sparse_csr and got.is_cuda
    # The result never shares the argument's index arrays.
    T = on_gpu(S, "cupyx")
    R = plait.jit(scaled, target="cuda")(T)
    assert R.indices.data.ptr != T.indices.data.ptr


@pytest.mark.skipif(cupy is None, reason="CuPy is not installed")
def test_gpu_sparse_arguments_of_cpu_kernels_are_refused_by_name(rng):
    S = on_gpu(random_csr(rng, (4, 4)), "cupyx")
    with pytest.raises(TypeError, match=r"spmv\(\) argument 'A' is a cupyx.scipy.sparse matrix"):
        plait.jit(spmv)(S, np.ones(4))


@pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed")
def test_torch_indices_written_in_place_are_checked_again(rng):
    S = random_csr(rng, (10, 12), density=0.5)
    T = on_gpu(S, "torch")
    kernel = plait.jit(softmax, target="cuda")
    check(kernel(T), softmax(S), "torch", 1e-9)
    # The dense middle row's second entry gets its first entry's column: a duplicate.
    p = int(S.indptr[5])
    T.col_indices()[p + 1] = int(S.indices[p])
    D = S.copy()
    D.indices[p + 1] = D.indices[p]
    D.has_canonical_format = False
    D.has_sorted_indices = False
    check(kernel(T), softmax(D), "torch", 1e-9)


def test_scipy_matrices_with_device_arrays_give_scipy_results(rng):
    S = random_csr(rng, (20, 9))
    B, C = rng.random((20, 3)), rng.random((3, 9))
    got = plait.jit(sddmm, target="cuda")(S, plait.to_device(B), plait.to_device(C))
    assert isinstance(got, sp.csr_array)
    check(got, sddmm(S, B, C), "scipy", 1e-9)


def test_scipy_matrices_with_gpu_dense_arguments_give_their_library(rng):
    S = random_csr(rng, (20, 9))
    B, C = rng.random((20, 3)), rng.random((3, 9))
    kernel = plait.jit(sddmm, target="cuda")
    if cupy is not None:
        got = kernel(S, cupy.asarray(B), cupy.asarray(C))
        assert csp.isspmatrix_csr(got)
        check(got, sddmm(S, B, C), "cupyx", 1e-9)
    if torch is not None:
        got = kernel(S, torch.from_numpy(B).cuda(), torch.from_numpy(C).cuda())
        assert got.layout == torch.sparse_csr and got.is_cuda
        check(got, sddmm(S, B, C), "torch", 1e-9)


@pytest.mark.parametrize("lib", LIBS)
def test_merges_store_what_scipy_stores(lib, rng):
    S = random_csr(rng, (50, 40), matrix=lib == "cupyx")
    T = S.copy()
    T.data[::2] *= -1  # half the entries cancel in S + T
    kernel = plait.jit(merges, target="cuda")
    for got, want in zip(kernel(on_gpu(S, lib), on_gpu(T, lib)), merges(S, T)):
        check(got, want, lib, 1e-12)
        nnz = got.nnz if lib != "torch" else got._nnz()
        assert nnz == want.nnz


@pytest.mark.parametrize("lib", LIBS)
def test_products_store_what_scipy_stores(lib, rng):
    S = random_csr(rng, (300, 200), density=0.05, matrix=lib == "cupyx")
    T = random_csr(rng, (200, 150), density=0.05, matrix=lib == "cupyx")
    T.data[T.indices % 2 == 0] = 0.0  # stored zeros: their products sum to zero and are not stored
    kernel = plait.jit(products, target="cuda")
    X = rng.random((150, 3))
    results = kernel(on_gpu(S, lib), on_gpu(T, lib), on_gpu(X, lib))
    for got, want in zip(results, products(S, T, X)):
        check(got, want, lib, 1e-12)
    P = results[0]
    assert (P.nnz if lib != "torch" else P._nnz()) == (S @ T).nnz  # SciPy stores no sum that is zero
