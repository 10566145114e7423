"""symm (PolyBench): C = beta * C + alpha * S @ B, S symmetric, given by A's lower triangle."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(M=13, N=17),
    "S": dict(M=40, N=50),
    "M": dict(M=120, N=150),
    "L": dict(M=350, N=550),
    "paper": dict(M=1000, N=1200),
}
PARAMETERS = ("alpha", "beta", "C", "A", "B")
OUTPUTS = ("C",)


def initialize(preset):
    M, N = (sizes(PRESETS, preset)[k] for k in ("M", "N"))
    C = fromfunction(lambda i, j: ((i + j) % 100) / M, (M, N))
    B = fromfunction(lambda i, j: ((N + i - j) % 100) / M, (M, N))
    A = fromfunction(lambda i, j: ((i + j) % 100) / M, (M, M))
    A[np.triu_indices(M, 1)] = -999.0
    return dict(alpha=1.5, beta=1.2, C=C, A=A, B=B)


def kernel_numpy(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


# For one i, the columns j are independent (each writes C[:i, j] and temp2[j]).
@njit(parallel=True, fastmath=False)
def kernel_numba(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in prange(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


@plait.jit
def kernel_plait(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        #pragma parallel for
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(alpha, beta, C, A, B):
    import cupy

    temp2 = cupy.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


# The loop over i is sequential; for one i the columns j are independent, so
# the loop over j is one outer product and one vector-matrix product, with
# A[i, :i] as row i of A masked to its first i entries.
@jax_jit
def kernel_jax(alpha, beta, C, A, B):
    import jax.numpy as jnp
    from jax import lax

    rows = jnp.arange(C.shape[0])

    def step(i, C):
        a = jnp.where(rows < i, A[i], 0.0)
        C = C + alpha * jnp.outer(a, B[i])
        temp2 = a @ B
        return C.at[i, :].add(alpha * B[i, :] * A[i, i] + alpha * temp2)

    return lax.fori_loop(0, C.shape[0], step, C * beta)


def kernel_torch(alpha, beta, C, A, B):
    import torch

    temp2 = torch.empty((C.shape[1],), dtype=C.dtype, device=C.device)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


NO_TORCH_COMPILE = "the nested Python loops would unroll into M*N graph nodes with slices of changing shape"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('C', 144258.75, 3481.97403938)],
    'M': [('C', 544394.0625, 4117.181995)],
    'L': [('C', 2056199.0051, 4746.25158959)],
    'paper': [('C', 4481730.0, 4136.81860317)],
}
