"""go_fast (Numba's 5-minute guide): a + the sum of tanh over a's diagonal."""

import numpy as np

import plait

from ._support import jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(N=37),
    "S": dict(N=2000),
    "M": dict(N=6000),
    "L": dict(N=20000),
    "paper": dict(N=12500),
}
PARAMETERS = ("a",)
OUTPUTS = ()


def initialize(preset):
    N = sizes(PRESETS, preset)["N"]
    rng = np.random.default_rng(42)
    return dict(a=rng.random((N, N), dtype=np.float64))


def kernel_numpy(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


@njit(parallel=True, fastmath=False)
def kernel_numba(a):
    trace = 0.0
    for i in prange(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


# The diagonal's loop is a sum: declared a parallel reduction, as Numba's
# version uses prange (without it the loop runs in order, in one GPU thread).
@plait.jit
def kernel_plait(a):
    trace = 0.0
    #pragma parallel for reduction(+: trace)
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(a):
    import cupy

    trace = 0.0
    for i in range(a.shape[0]):
        trace += cupy.tanh(a[i, i])
    return a + trace


# A Python loop would unroll N steps into the traced program; JAX's users sum
# over the diagonal instead.
@jax_jit
def kernel_jax(a):
    import jax.numpy as jnp

    return a + jnp.sum(jnp.tanh(jnp.diagonal(a)))


def kernel_torch(a):
    import torch

    trace = 0.0
    for i in range(a.shape[0]):
        trace += torch.tanh(a[i, i])
    return a + trace


NO_TORCH_COMPILE = "the loop over the diagonal would unroll into N graph nodes"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 3411232482.16, 1705616.33879)],
    'M': [('ret0', 92781187765.8, 15463531.3913)],
    'L': [('ret0', 3479350279710.0, 173967514.081)],
    'paper': [('ret0', 851431066497.0, 68114485.4154)],
}
