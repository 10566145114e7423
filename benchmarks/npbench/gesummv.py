"""gesummv (PolyBench): y = alpha * A @ x + beta * B @ x."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes, torch_compiled

PRESETS = {
    "test": dict(N=23),
    "S": dict(N=2000),
    "M": dict(N=4000),
    "L": dict(N=14000),
    "paper": dict(N=11200),
}
PARAMETERS = ("alpha", "beta", "A", "B", "x")
OUTPUTS = ()


def initialize(preset):
    N = sizes(PRESETS, preset)["N"]
    A = fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, N))
    B = fromfunction(lambda i, j: ((i * j + 2) % N) / N, (N, N))
    x = fromfunction(lambda i: (i % N) / N, (N,))
    return dict(alpha=1.5, beta=1.2, A=A, B=B, x=x)


def kernel_numpy(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


@njit(parallel=True, fastmath=False)
def kernel_numba(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


@plait.jit
def kernel_plait(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


@jax_jit
def kernel_jax(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def kernel_torch(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


kernel_torch_compile = torch_compiled(kernel_torch)


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 2688088.05, 60139.8912405)],
    'M': [('ret0', 10771588.05, 170360.545556)],
    'L': [('ret0', 132136048.05, 1116849.23536)],
    'paper': [('ret0', 84538030.05, 798895.426823)],
}
