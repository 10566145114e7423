"""gemm (PolyBench): C = alpha * A @ B + beta * C, in place."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes, torch_compiled

PRESETS = {
    "test": dict(NI=12, NJ=14, NK=16),
    "S": dict(NI=1000, NJ=1100, NK=1200),
    "M": dict(NI=2500, NJ=2750, NK=3000),
    "L": dict(NI=7000, NJ=7500, NK=8000),
    "paper": dict(NI=2000, NJ=2300, NK=2600),
}
PARAMETERS = ("alpha", "beta", "C", "A", "B")
OUTPUTS = ("C",)


def initialize(preset):
    NI, NJ, NK = (sizes(PRESETS, preset)[k] for k in ("NI", "NJ", "NK"))
    C = fromfunction(lambda i, j: ((i * j + 1) % NI) / NI, (NI, NJ))
    A = fromfunction(lambda i, k: (i * (k + 1) % NK) / NK, (NI, NK))
    B = fromfunction(lambda k, j: (k * (j + 2) % NJ) / NJ, (NK, NJ))
    return dict(alpha=1.5, beta=1.2, C=C, A=A, B=B)


def kernel_numpy(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


@njit(parallel=True, fastmath=False)
def kernel_numba(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


@plait.jit
def kernel_plait(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


@jax_jit
def kernel_jax(alpha, beta, C, A, B):
    return alpha * A @ B + beta * C


def kernel_torch(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


kernel_torch_compile = torch_compiled(kernel_torch)


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('C', 485480580.75, 463738.289075)],
    'M': [('C', 7672305694.5, 2928196.31429)],
    'L': [('C', 156953570940.0, 21667430.6537)],
    'paper': [('C', 4444788357.0, 2074103.23419)],
}
