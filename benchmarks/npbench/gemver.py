"""gemver (PolyBench): a rank-2 update of A, then two matrix-vector products."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes, torch_compiled

PRESETS = {
    "test": dict(N=29),
    "S": dict(N=1000),
    "M": dict(N=3000),
    "L": dict(N=10000),
    "paper": dict(N=8000),
}
PARAMETERS = ("alpha", "beta", "A", "u1", "v1", "u2", "v2", "w", "x", "y", "z")
OUTPUTS = ("A", "w", "x")


def initialize(preset):
    N = sizes(PRESETS, preset)["N"]
    fn = float(N)
    A = fromfunction(lambda i, j: (i * j % N) / N, (N, N))
    u1 = fromfunction(lambda i: i, (N,))
    u2 = fromfunction(lambda i: ((i + 1) / fn) / 2.0, (N,))
    v1 = fromfunction(lambda i: ((i + 1) / fn) / 4.0, (N,))
    v2 = fromfunction(lambda i: ((i + 1) / fn) / 6.0, (N,))
    y = fromfunction(lambda i: ((i + 1) / fn) / 8.0, (N,))
    z = fromfunction(lambda i: ((i + 1) / fn) / 9.0, (N,))
    w = np.zeros(N)
    x = np.zeros(N)
    return dict(alpha=1.5, beta=1.2, A=A, u1=u1, v1=v1, u2=u2, v2=v2, w=w, x=x, y=y, z=z)


def kernel_numpy(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


@njit(parallel=True, fastmath=False)
def kernel_numba(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


@plait.jit
def kernel_plait(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    import cupy

    A += cupy.outer(u1, v1) + cupy.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


@jax_jit
def kernel_jax(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    import jax.numpy as jnp

    A = A + (jnp.outer(u1, v1) + jnp.outer(u2, v2))
    x = x + (beta * y @ A + z)
    w = w + alpha * A @ x
    return A, w, x


def kernel_torch(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    import torch

    A += torch.outer(u1, v1) + torch.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


kernel_torch_compile = torch_compiled(kernel_torch)


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('A', 63016562.5208, 83733.4922802), ('w', 790339505239.0, 28823257855.0), ('x', 6295643.5132, 229485.687034)],
    'M': [('A', 1692166187.52, 751203.361554), ('w', 190580044285000.0, 4016111837040.0), ('x', 169161293.783, 3564161.34882)],
    'L': [('A', 62552020125.0, 8337356.52086), ('w', 7.82160833267e+16, 903048713263000.0), ('x', 6254579902.58, 72209040.9286)],
    'paper': [('A', 32033278766.7, 5336550.51338), ('w', 2.56372967492e+16, 330924407765000.0), ('x', 3202930288.48, 41340618.0152)],
}
