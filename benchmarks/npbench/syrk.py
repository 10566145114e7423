"""syrk (PolyBench): lower triangle of C = beta * C + alpha * A @ A.T."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(M=11, N=16),
    "S": dict(M=50, N=70),
    "M": dict(M=150, N=200),
    "L": dict(M=500, N=600),
    "paper": dict(M=1000, N=1200),
}
PARAMETERS = ("alpha", "beta", "C", "A")
OUTPUTS = ("C",)


def initialize(preset):
    M, N = (sizes(PRESETS, preset)[k] for k in ("M", "N"))
    C = fromfunction(lambda i, j: ((i * j + 2) % N) / M, (N, N))
    A = fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, M))
    return dict(alpha=1.5, beta=1.2, C=C, A=A)


def kernel_numpy(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


# Each iteration i writes row i of C only.
@njit(parallel=True, fastmath=False)
def kernel_numba(alpha, beta, C, A):
    for i in prange(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


@plait.jit
def kernel_plait(alpha, beta, C, A):
    #pragma parallel for
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


# Each row i is independent and its update sums over k: the loops are the
# lower triangle (diagonal included) of beta*C + alpha*A A^T; the strict
# upper triangle keeps its values.
@jax_jit
def kernel_jax(alpha, beta, C, A):
    import jax.numpy as jnp

    lower = jnp.tri(C.shape[0], dtype=bool)
    return jnp.where(lower, beta * C + alpha * A @ A.T, C)


def kernel_torch(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


NO_TORCH_COMPILE = "the nested Python loops would unroll into N*M graph nodes with slices of changing shape"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('C', 45951.5835714, 913.398827009)],
    'M': [('C', 1108561.36563, 7806.66486845)],
    'L': [('C', 33091548.4887, 77989.0508722)],
    'paper': [('C', 266411927.025, 313982.26964)],
}
