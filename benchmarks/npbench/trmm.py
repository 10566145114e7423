"""trmm (PolyBench): B = alpha * U @ B with U = I + triu(A.T, 1), in place."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(M=14, N=19),
    "S": dict(M=65, N=80),
    "M": dict(M=200, N=250),
    "L": dict(M=600, N=700),
    "paper": dict(M=1000, N=1200),
}
PARAMETERS = ("alpha", "A", "B")
OUTPUTS = ("B",)


def initialize(preset):
    M, N = (sizes(PRESETS, preset)[k] for k in ("M", "N"))
    A = fromfunction(lambda i, j: ((i * j) % M) / M, (M, M))
    np.fill_diagonal(A, 1.0)
    B = fromfunction(lambda i, j: ((N + i - j) % N) / N, (M, N))
    return dict(alpha=1.5, A=A, B=B)


def kernel_numpy(alpha, A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


# Row i reads the rows below it before they change; the columns j of one
# row are independent.
@njit(parallel=True, fastmath=False)
def kernel_numba(alpha, A, B):
    for i in range(B.shape[0]):
        for j in prange(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


@plait.jit
def kernel_plait(alpha, A, B):
    for i in range(B.shape[0]):
        #pragma parallel for
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(alpha, A, B):
    import cupy

    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += cupy.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


# Row i reads only rows below it, which are still the input's when row i is
# updated: every row is independent, and the loops are B += (strictly lower
# part of A)^T B.
@jax_jit
def kernel_jax(alpha, A, B):
    import jax.numpy as jnp

    return alpha * (B + jnp.tril(A, -1).T @ B)


def kernel_torch(alpha, A, B):
    import torch

    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += torch.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


NO_TORCH_COMPILE = "the nested Python loops would unroll into M*N graph nodes with slices of changing shape"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('B', 62153.25, 1033.19983234)],
    'M': [('B', 1836546.1875, 9814.78936834)],
    'L': [('B', 46578520.3125, 85301.6746274)],
    'paper': [('B', 223593341.812, 242491.319647)],
}
