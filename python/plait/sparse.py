"""Operations on the stored entries of SciPy sparse matrices.

SciPy's element-wise operations act on the whole matrix, implicit zeros
included; these act on the stored entries only, as attention and graph
kernels need:

    softmax(S, axis=1)   softmax over each row's (or column's) stored entries
    exp(S)               exp of the stored entries; implicit zeros stay zeros
    row_max(S)           per row, the max of the stored entries (-inf if none)
    row_sum(S)           per row, the sum of the stored entries (0 if none)
    mask(S, dense)       dense's values at S's stored positions

S is a SciPy sparse matrix or array of any format, or an affine attention
pattern of plait.sparse.acsr (a csr_array of ones on its entries). It is
read in canonical CSR form (sorted indices, duplicates summed: the input is
left as it is), so an entry stored twice counts once, with the sum of its
values. Explicit zeros are stored entries. Sparse results are CSR, of S's
class for CSR input (csr_array or csr_matrix), else csr_array for a sparse
array and csr_matrix for a sparse matrix, with S's canonical pattern:
indices and indptr are copies of S's, of the same index dtype.

SciPy is imported on the first call, so that `import plait` does not need it.
"""

import functools

import numpy as np

from . import acsr

__all__ = ["acsr", "exp", "mask", "row_max", "row_sum", "softmax"]


def _canonical(S, name):
    """(S in canonical CSR form, a function that makes a result of `data` on
    its pattern). The CSR form is a copy whenever canonicalising has to
    change it, so S is never modified."""
    import scipy.sparse as sp

    if isinstance(S, acsr.Pattern):
        S = S.tocsr()
    if not sp.issparse(S):
        raise TypeError(f"{name}: S must be a SciPy sparse matrix or array, got {type(S).__module__}."
                        f"{type(S).__qualname__}")
    if S.ndim != 2:
        raise ValueError(f"{name}: S must be 2-D, got {S.ndim}-D of shape {S.shape}")
    if S.format == "csr":
        cls = type(S)
    else:
        cls = sp.csr_array if isinstance(S, sp.sparray) else sp.csr_matrix
    C = S.tocsr()
    if not C.has_canonical_format:
        C = C.copy() if C is S else C
        C.sum_duplicates()
    # The results keep S's index dtype for CSR input (SciPy's copy of a
    # csr_matrix may narrow int64 index arrays to int32), else the one
    # SciPy's conversion chose.
    index_dtype = S.indices.dtype if S.format == "csr" else C.indices.dtype
    return C, functools.partial(_like, C, cls, index_dtype)


def _stored(C):
    """(data, indices) of the stored entries: CSR arrays may be longer than
    indptr[-1], and what lies past it is not part of the matrix."""
    nnz = int(C.indptr[-1])
    return C.data[:nnz], C.indices[:nnz]


def _like(C, cls, index_dtype, data):
    """A CSR matrix of class `cls` with C's pattern (copied as `index_dtype`)
    and `data`."""
    _, indices = _stored(C)
    indices = indices.astype(index_dtype, copy=True)
    indptr = C.indptr.astype(index_dtype, copy=True)
    out = cls((data, indices, indptr), shape=C.shape, copy=False)
    # csr_matrix narrows int64 index arrays whose values fit in int32.
    out.indices, out.indptr = indices, indptr
    out.has_canonical_format = True
    return out


def _real_float(data, name):
    """`data` as floats for softmax: integers and booleans become float64."""
    if data.dtype.kind == "f":
        return data
    if data.dtype.kind in "biu":
        return data.astype(np.float64)
    raise TypeError(f"{name}: S's values must be real numbers, got dtype {data.dtype}")


def _row_segments(C):
    """(starts, counts) of the rows that have stored entries: the arguments
    ufunc.reduceat needs, which reduces an empty segment to the next value
    rather than to the identity, so empty rows are left out."""
    counts = np.diff(C.indptr)
    nonempty = counts > 0
    return C.indptr[:-1][nonempty], counts[nonempty], nonempty


def _per_row(C, data, ufunc, empty_value, dtype):
    """ufunc reduced over each row's stored entries; `empty_value` for a row
    without any."""
    starts, _, nonempty = _row_segments(C)
    out = np.full(C.shape[0], empty_value, dtype=dtype)
    if starts.size:
        out[nonempty] = ufunc.reduceat(data, starts, dtype=dtype)
    return out


def softmax(S, axis=1):
    """Softmax over the stored entries of each row (axis=1 or -1) or each
    column (axis=0): exp(v - max) / sum, the max and sum taken over the
    stored entries of the row or column only; implicit zeros stay implicit
    and take no part. A row (column) without stored entries stays empty.

    Parameters
    ----------
    S : scipy sparse matrix or array, 2-D, of real values
    axis : {1, -1, 0}

    Returns
    -------
    CSR matrix or array with S's canonical pattern; float values of S's
    dtype (integer or boolean S: float64).
    """
    if isinstance(axis, bool) or axis not in (0, 1, -1):
        raise ValueError(f"softmax: axis must be 1 or -1 (rows) or 0 (columns), got {axis!r}")
    C, like = _canonical(S, "softmax")
    data, indices = _stored(C)
    data = _real_float(data, "softmax")
    if axis == 0:
        # Entries of a column are scattered over the rows: max and sum by
        # column index.
        column_max = np.full(C.shape[1], -np.inf, dtype=data.dtype)
        np.maximum.at(column_max, indices, data)
        e = np.exp(data - column_max[indices])
        column_sum = np.bincount(indices, weights=e, minlength=C.shape[1]).astype(data.dtype)
        return like(e / column_sum[indices])
    starts, counts, _ = _row_segments(C)
    if not starts.size:
        return like(np.empty(0, dtype=data.dtype))
    e = np.exp(data - np.repeat(np.maximum.reduceat(data, starts), counts))
    e /= np.repeat(np.add.reduceat(e, starts), counts)
    return like(e)


def exp(S):
    """exp of the stored entries; implicit zeros stay implicit zeros (this is
    not the exp of the dense matrix, whose zeros would become ones).

    Returns
    -------
    CSR matrix or array with S's canonical pattern; values of S's float or
    complex dtype (integer or boolean S: float64).
    """
    C, like = _canonical(S, "exp")
    data, _ = _stored(C)
    if data.dtype.kind in "biu":
        data = data.astype(np.float64)
    return like(np.exp(data))


def row_max(S):
    """Per row, the max of the stored entries; -inf for a row without any.

    Returns
    -------
    ndarray of shape (S.shape[0],) and S's dtype, which must be a float dtype
    (TypeError otherwise: an integer dtype has no -inf for empty rows).
    """
    C, _ = _canonical(S, "row_max")
    data, _ = _stored(C)
    if data.dtype.kind != "f":
        raise TypeError(f"row_max: S's values must be floats (an empty row's max is -inf), got dtype {data.dtype}")
    return _per_row(C, data, np.maximum, -np.inf, data.dtype)


def row_sum(S):
    """Per row, the sum of the stored entries; 0 for a row without any.

    Returns
    -------
    ndarray of shape (S.shape[0],) and the dtype np.sum gives S's values
    (booleans and small integers sum as the default integer).
    """
    C, _ = _canonical(S, "row_sum")
    data, _ = _stored(C)
    dtype = np.sum(data[:0]).dtype
    return _per_row(C, data, np.add, 0, dtype)


def mask(S, dense):
    """dense's values at S's stored positions, as a sparse matrix with S's
    pattern (S's values are not used).

    Parameters
    ----------
    S : scipy sparse matrix or array, 2-D
    dense : array_like that broadcasts to S.shape as NumPy broadcasting
        would: S's shape, (N, 1), (1, M), (M,) or a scalar.

    Returns
    -------
    CSR matrix or array with S's canonical pattern and values of dense's dtype.
    """
    C, like = _canonical(S, "mask")
    dense = np.asarray(dense)
    try:
        full = np.broadcast_to(dense, C.shape)
    except ValueError:
        raise ValueError(f"mask: dense of shape {dense.shape} does not broadcast to S's shape {C.shape}") from None
    _, indices = _stored(C)
    rows = np.repeat(np.arange(C.shape[0], dtype=indices.dtype), np.diff(C.indptr))
    return like(full[rows, indices])
