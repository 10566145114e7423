"""syr2k (PolyBench): lower triangle of C = beta * C + alpha * (A @ B.T + B @ A.T)."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(M=9, N=14),
    "S": dict(M=35, N=50),
    "M": dict(M=110, N=140),
    "L": dict(M=350, N=400),
    "paper": dict(M=1000, N=1200),
}
PARAMETERS = ("alpha", "beta", "C", "A", "B")
OUTPUTS = ("C",)


def initialize(preset):
    M, N = (sizes(PRESETS, preset)[k] for k in ("M", "N"))
    C = fromfunction(lambda i, j: ((i * j + 3) % N) / M, (N, N))
    A = fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, M))
    B = fromfunction(lambda i, j: ((i * j + 2) % M) / M, (N, M))
    return dict(alpha=1.5, beta=1.2, C=C, A=A, B=B)


def kernel_numpy(alpha, beta, C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


# Each iteration i writes row i of C only.
@njit(parallel=True, fastmath=False)
def kernel_numba(alpha, beta, C, A, B):
    for i in prange(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


@plait.jit
def kernel_plait(alpha, beta, C, A, B):
    #pragma parallel for
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(alpha, beta, C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


# Each row i is independent and its update sums over k: the loops are the
# lower triangle (diagonal included) of beta*C + alpha*(A B^T + B A^T); the
# strict upper triangle keeps its values.
@jax_jit
def kernel_jax(alpha, beta, C, A, B):
    import jax.numpy as jnp

    lower = jnp.tri(C.shape[0], dtype=bool)
    return jnp.where(lower, beta * C + alpha * (A @ B.T + B @ A.T), C)


def kernel_torch(alpha, beta, C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


NO_TORCH_COMPILE = "the nested Python loops would unroll into N*M graph nodes with slices of changing shape"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('C', 31712.3785714, 886.539362782)],
    'M': [('C', 768724.088312, 7760.73903582)],
    'L': [('C', 20476424.0389, 72462.8515571)],
    'paper': [('C', 532895908.825, 628347.121057)],
}
