"""gramschmidt (PolyBench): modified Gram-Schmidt QR of A (M x N, M >= N).

Returns Q and R; A is overwritten (column k ends as Q[:, k] * R[k, k])."""

import numpy as np

import plait

from ._support import jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(M=15, N=11),
    "S": dict(M=70, N=60),
    "M": dict(M=220, N=180),
    "L": dict(M=600, N=500),
    "paper": dict(M=240, N=200),
}
PARAMETERS = ("A",)
OUTPUTS = ("A",)


def initialize(preset):
    M, N = (sizes(PRESETS, preset)[k] for k in ("M", "N"))
    rng = np.random.default_rng(42)
    A = rng.random((M, N))
    while np.linalg.matrix_rank(A) < N:
        A = rng.random((M, N))
    return dict(A=A)


def kernel_numpy(A):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        R[k, k] = np.sqrt(np.dot(A[:, k], A[:, k]))
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


# The columns j > k are projected independently of each other.
@njit(parallel=True, fastmath=False)
def kernel_numba(A):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        R[k, k] = np.sqrt(np.dot(A[:, k], A[:, k]))
        Q[:, k] = A[:, k] / R[k, k]
        for j in prange(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


@plait.jit
def kernel_plait(A):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        R[k, k] = np.sqrt(np.dot(A[:, k], A[:, k]))
        Q[:, k] = A[:, k] / R[k, k]
        #pragma parallel for
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(A):
    import cupy

    Q = cupy.zeros_like(A)
    R = cupy.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        R[k, k] = cupy.sqrt(cupy.dot(A[:, k], A[:, k]))
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = cupy.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


# The loop over k is sequential; the columns j > k are projected
# independently, so that loop is one masked vector-matrix product (columns
# j <= k get a zero coefficient and stay as they are).
@jax_jit
def kernel_jax(A):
    import jax.numpy as jnp
    from jax import lax

    n = A.shape[1]
    cols = jnp.arange(n)

    def step(k, state):
        A, Q, R = state
        norm = jnp.sqrt(A[:, k] @ A[:, k])
        q = A[:, k] / norm
        r = jnp.where(cols > k, q @ A, 0.0)
        R = R.at[k, :].set(jnp.where(cols == k, norm, r))
        Q = Q.at[:, k].set(q)
        A = A - jnp.outer(q, r)
        return A, Q, R

    A, Q, R = lax.fori_loop(0, n, step, (A, jnp.zeros_like(A), jnp.zeros((n, n), dtype=A.dtype)))
    return Q, R, A


def kernel_torch(A):
    import torch

    Q = torch.zeros_like(A)
    R = torch.zeros((A.shape[1], A.shape[1]), dtype=A.dtype, device=A.device)
    for k in range(A.shape[1]):
        R[k, k] = torch.sqrt(torch.dot(A[:, k], A[:, k]))
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = torch.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


NO_TORCH_COMPILE = "the nested Python loops would unroll into N^2/2 graph nodes"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 23.5726708566, 7.74596669241), ('ret1', 700.498353533, 37.3574851714), ('A', 75.5970268333, 15.4806335574)],
    'M': [('ret0', 52.7284928837, 13.416407865), ('ret1', 4763.81640882, 115.020030676), ('A', 281.949472088, 45.8753625421)],
    'L': [('ret0', 99.3930930716, 22.360679775), ('ret1', 24643.2282769, 316.289957037), ('A', 856.964774395, 122.517189385)],
    'paper': [('ret0', 54.9275794378, 14.1421356237), ('ret1', 5462.39592871, 126.614045379), ('A', 308.245647171, 50.0968935312)],
}
