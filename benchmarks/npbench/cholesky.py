"""cholesky (PolyBench): in-place row-oriented Cholesky factorisation of A.

The lower triangle (with the diagonal) becomes L with A0 = L @ L.T; the
strictly upper triangle keeps A0's values."""

import numpy as np

import plait

from ._support import jax_jit, njit, sizes

PRESETS = {
    "test": dict(N=21),
    "S": dict(N=100),
    "M": dict(N=300),
    "L": dict(N=900),
    "paper": dict(N=2000),
}
PARAMETERS = ("A",)
OUTPUTS = ("A",)


def initialize(preset):
    N = sizes(PRESETS, preset)["N"]
    # NumPy's float % is a floor-mod: (-j % N) / N + 1 is 2 - j/N, and 1 at j = 0.
    j = np.arange(N, dtype=np.float64)
    row = (-j % N) / N + 1
    Lt = np.tril(np.broadcast_to(row, (N, N)))
    np.fill_diagonal(Lt, 1.0)
    return dict(A=Lt @ Lt.T)


def kernel_numpy(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


# Each A[i, j] needs A[i, :j] of the same row, so no loop is a legal prange.
@njit(parallel=True, fastmath=False)
def kernel_numba(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


@plait.jit
def kernel_plait(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(A):
    import cupy

    A[0, 0] = cupy.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= cupy.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= cupy.dot(A[i, :i], A[i, :i])
        A[i, i] = cupy.sqrt(A[i, i])


# Both loops are sequential (A[i, j] needs the finished A[i, :j]); a dot
# product over :j, whose length changes with j, is a full-row product under
# a mask.
@jax_jit
def kernel_jax(A):
    import jax.numpy as jnp
    from jax import lax

    cols = jnp.arange(A.shape[0])
    A = A.at[0, 0].set(jnp.sqrt(A[0, 0]))

    def row(i, A):
        def column(j, A):
            dot = jnp.sum(jnp.where(cols < j, A[i] * A[j], 0.0))
            return A.at[i, j].set((A[i, j] - dot) / A[j, j])

        A = lax.fori_loop(0, i, column, A)
        dot = jnp.sum(jnp.where(cols < i, A[i] * A[i], 0.0))
        return A.at[i, i].set(jnp.sqrt(A[i, i] - dot))

    return lax.fori_loop(1, A.shape[0], row, A)


def kernel_torch(A):
    import torch

    A[0, 0] = torch.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= torch.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= torch.dot(A[i, :i], A[i, :i])
        A[i, i] = torch.sqrt(A[i, i])


NO_TORCH_COMPILE = "the slices :j change shape in each of the N^2/2 iterations (one recompilation or graph per shape)"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('A', 507315.6265, 8336.09464769)],
    'M': [('A', 13864448.9588, 76121.6261426)],
    'L': [('A', 375875848.958, 688407.153796)],
    'paper': [('A', 4129504665.63, 3404049.52093)],
}
