"""softmax (deep learning): numerically stable softmax over the last axis, float32."""

import numpy as np

import plait

from ._support import jax_jit, njit, prange, sizes, torch_compiled

PRESETS = {
    "test": dict(N=2, H=3, SM=19),
    "S": dict(N=16, H=16, SM=128),
    "M": dict(N=32, H=8, SM=256),
    "L": dict(N=64, H=16, SM=448),
    "paper": dict(N=64, H=16, SM=512),
}
PARAMETERS = ("x",)
OUTPUTS = ()


def initialize(preset):
    N, H, SM = (sizes(PRESETS, preset)[k] for k in ("N", "H", "SM"))
    rng = np.random.default_rng(42)
    return dict(x=rng.random((N, H, SM, SM), dtype=np.float32))


def kernel_numpy(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


# Numba's np.max and np.sum take no keepdims, so a Numba user loops over the
# rows; all rows are independent.
@njit(parallel=True, fastmath=False)
def kernel_numba(x):
    N, H, SM, SN = x.shape
    out = np.empty_like(x)
    for n in prange(N):
        for h in range(H):
            for i in range(SM):
                m = np.max(x[n, h, i])
                e = np.exp(x[n, h, i] - m)
                out[n, h, i] = e / np.sum(e)
    return out


@plait.jit
def kernel_plait(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(x):
    import cupy

    m = cupy.max(x, axis=-1, keepdims=True)
    e = cupy.exp(x - m)
    return e / cupy.sum(e, axis=-1, keepdims=True)


@jax_jit
def kernel_jax(x):
    import jax.numpy as jnp

    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def kernel_torch(x):
    import torch

    m = torch.amax(x, dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=-1, keepdim=True)


kernel_torch_compile = torch_compiled(kernel_torch)


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 32768.0000172, 16.6379534474)],
    'M': [('ret0', 65536.0000224, 16.6406341459)],
    'L': [('ret0', 458752.000007, 33.2831564815)],
    'paper': [('ret0', 524288.000003, 33.283473009)],
}
