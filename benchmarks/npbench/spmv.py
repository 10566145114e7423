"""spmv: y = A @ x for A in CSR form (uint32 row pointers and column indices)."""

import numpy as np

import plait

from ._support import jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(M=67, N=53, nnz=150),
    "S": dict(M=4096, N=4096, nnz=8192),
    "M": dict(M=32768, N=32768, nnz=65536),
    "L": dict(M=262144, N=262144, nnz=262144),
    "paper": dict(M=131072, N=131072, nnz=262144),
}
PARAMETERS = ("A_row", "A_col", "A_val", "x")
OUTPUTS = ()


def initialize(preset):
    # The matrix depends on SciPy's sparse.random, which may change across
    # SciPy versions (the checksums were taken with SciPy 1.10).
    import scipy.sparse

    M, N, nnz = (sizes(PRESETS, preset)[k] for k in ("M", "N", "nnz"))
    rng = np.random.default_rng(42)
    x = rng.random((N,))
    A = scipy.sparse.random(M, N, density=nnz / (M * N), format="csr", dtype=np.float64, random_state=rng)
    return dict(A_row=np.uint32(A.indptr), A_col=np.uint32(A.indices), A_val=A.data, x=x)


def kernel_numpy(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, dtype=A_val.dtype)
    for i in range(A_row.size - 1):
        cols = A_col[A_row[i]:A_row[i + 1]]
        y[i] = A_val[A_row[i]:A_row[i + 1]] @ x[cols]
    return y


@njit(parallel=True, fastmath=False)
def kernel_numba(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, dtype=A_val.dtype)
    for i in prange(A_row.size - 1):
        acc = 0.0
        for p in range(A_row[i], A_row[i + 1]):
            acc += A_val[p] * x[A_col[p]]
        y[i] = acc
    return y


# Loop form: the NumPy version gathers x[cols] with an index array (fancy
# indexing), which the array language does not have; a row's dot product is
# an inner loop instead.
@plait.jit
def kernel_plait(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, dtype=A_val.dtype)
    #pragma parallel for
    for i in range(A_row.size - 1):
        acc = 0.0
        for p in range(A_row[i], A_row[i + 1]):
            acc += A_val[p] * x[A_col[p]]
        y[i] = acc
    return y


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


# A CuPy array cannot bound a slice, so the row pointers are copied to the
# host once for the loop bounds.
def kernel_cupy(A_row, A_col, A_val, x):
    import cupy

    rows = cupy.asnumpy(A_row)
    y = cupy.empty(A_row.size - 1, dtype=A_val.dtype)
    for i in range(A_row.size - 1):
        cols = A_col[rows[i]:rows[i + 1]]
        y[i] = A_val[rows[i]:rows[i + 1]] @ x[cols]
    return y


# Rows have data-dependent lengths: JAX's users sum the products per row with
# a segment sum (each product's row id from the row pointers).
@jax_jit
def kernel_jax(A_row, A_col, A_val, x):
    import jax
    import jax.numpy as jnp

    M = A_row.shape[0] - 1
    row_of = jnp.repeat(jnp.arange(M), jnp.diff(A_row.astype(jnp.int64)), total_repeat_length=A_val.shape[0])
    return jax.ops.segment_sum(A_val * x[A_col.astype(jnp.int64)], row_of, num_segments=M)


# The peer gives PyTorch its index arrays as int64 (PyTorch indexes with
# int64, not uint32); the row pointers are copied to the host once for the
# loop bounds.
def kernel_torch(A_row, A_col, A_val, x):
    import torch

    rows = A_row.tolist()
    y = torch.empty(len(rows) - 1, dtype=A_val.dtype, device=A_val.device)
    for i in range(len(rows) - 1):
        cols = A_col[rows[i]:rows[i + 1]]
        y[i] = A_val[rows[i]:rows[i + 1]] @ x[cols]
    return y


NO_TORCH_COMPILE = "each of the M rows has its own slice length (one recompilation or graph per length)"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 2077.36532544, 44.3598442952)],
    'M': [('ret0', 16434.6276458, 124.550670639)],
    'L': [('ret0', 65722.6598264, 213.926563094)],
    'paper': [('ret0', 65785.8327933, 249.73636511)],
}
