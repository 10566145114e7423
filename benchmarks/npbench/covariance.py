"""covariance (PolyBench datamining): the sample covariance of data's columns.

data has N observations (rows) of M variables (columns); it is centred in
place, which is not validated. The result is analytically rank-1 at the
standard input: cov[j, k] = j*k*N*(N+1) / (12*M^2)."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(M=17, N=23),
    "S": dict(M=500, N=600),
    "M": dict(M=1400, N=1800),
    "L": dict(M=3200, N=4000),
    "paper": dict(M=1200, N=1400),
}
PARAMETERS = ("M", "float_n", "data")
OUTPUTS = ()


def initialize(preset):
    M, N = (sizes(PRESETS, preset)[k] for k in ("M", "N"))
    data = fromfunction(lambda i, j: (i * j) / M, (N, M))
    return dict(M=M, float_n=np.float64(N), data=data)


def validation_inputs(preset):
    """Random data, whose covariance is not symmetric by construction of each entry."""
    inputs = initialize(preset)
    data = np.random.default_rng(7).random(inputs["data"].shape)
    return [("random data", dict(M=inputs["M"], float_n=inputs["float_n"], data=data))]


def kernel_numpy(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


# Numba's np.mean takes no axis (and its parfor lowering rejects the column
# sum with axis=0 here), so the means are one loop over the columns. Row i of
# the upper triangle and column i of the lower one belong to iteration i alone.
@njit(parallel=True, fastmath=False)
def kernel_numba(M, float_n, data):
    mean = np.empty(M, dtype=data.dtype)
    for j in prange(M):
        mean[j] = np.sum(data[:, j]) / float_n
    for r in prange(data.shape[0]):
        data[r, :] -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in prange(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


@plait.jit
def kernel_plait(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    #pragma parallel for
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(M, float_n, data):
    import cupy

    mean = cupy.mean(data, axis=0)
    data -= mean
    cov = cupy.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


# The rows of the triangle are independent: the loop computes the upper
# triangle of one product D^T D and mirrors it.
@jax_jit(static_argnames=("M",))
def kernel_jax(M, float_n, data):
    import jax.numpy as jnp

    mean = jnp.mean(data, axis=0)
    data = data - mean
    upper = jnp.triu(data.T @ data / (float_n - 1.0))
    return upper + jnp.triu(upper, 1).T


# PyTorch refuses a copy between partly overlapping views (row i and column i
# of cov share cov[i, i]), so the row is kept in a temporary.
def kernel_torch(M, float_n, data):
    import torch

    mean = torch.mean(data, dim=0)
    data -= mean
    cov = torch.zeros((M, M), dtype=data.dtype, device=data.device)
    for i in range(M):
        row = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i, i:M] = row
        cov[i:M, i] = row
    return cov


NO_TORCH_COMPILE = "the slices i:M change shape in each of the M iterations"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 1870620012.5, 4993318.35)],
    'M': [('ret0', 132184462538.0, 125934957.161)],
    'L': [('ret0', 3412053133420.0, 1421911013.91)],
    'paper': [('ret0', 58743970862.5, 65298297.7014)],
}
