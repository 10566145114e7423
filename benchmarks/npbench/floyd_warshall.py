"""floyd_warshall (PolyBench): all-pairs shortest paths on an int32 matrix."""

import numpy as np

import plait

from ._support import jax_jit, njit, prange, sizes, torch_compiled

PRESETS = {
    "test": dict(N=31),
    "S": dict(N=200),
    "M": dict(N=400),
    "L": dict(N=850),
    "paper": dict(N=2800),
}
PARAMETERS = ("path",)
OUTPUTS = ("path",)


def initialize(preset):
    N = sizes(PRESETS, preset)["N"]
    path = np.fromfunction(lambda i, j: i * j % 7 + 1, (N, N), dtype=np.int32)
    s = np.add.outer(np.arange(N), np.arange(N))
    path[(s % 13 == 0) | (s % 7 == 0) | (s % 11 == 0)] = 999
    return dict(path=path)


def kernel_numpy(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


# Row k and column k do not change in step k (all entries are positive), so
# the rows of one step are independent.
@njit(parallel=True, fastmath=False)
def kernel_numba(path):
    N = path.shape[0]
    for k in range(N):
        for i in prange(N):
            for j in range(N):
                path[i, j] = min(path[i, j], path[i, k] + path[k, j])


@plait.jit
def kernel_plait(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(path):
    import cupy

    for k in range(path.shape[0]):
        path[:] = cupy.minimum(path, path[:, k][:, None] + path[k, :][None, :])


@jax_jit
def kernel_jax(path):
    import jax.numpy as jnp
    from jax import lax

    def step(k, path):
        return jnp.minimum(path, path[:, k][:, None] + path[k, :][None, :])

    return lax.fori_loop(0, path.shape[0], step, path)


def _torch_step(path, k):
    import torch

    path[:] = torch.minimum(path, path[:, k][:, None] + path[k, :][None, :])


def kernel_torch(path):
    for k in range(path.shape[0]):
        _torch_step(path, k)


# torch.compile would unroll the loop over k; its users compile one step. An
# int k would be a constant of the graph (one recompilation per k until the
# recompilation limit sends the rest to eager mode), so the step gets k as a
# 0-d tensor on the device, with which the same indexing selects row and
# column k.
_torch_step_compiled = torch_compiled(_torch_step)


def kernel_torch_compile(path):
    import torch

    ks = torch.arange(path.shape[0], device=path.device)
    for k in range(path.shape[0]):
        _torch_step_compiled(path, ks[k])

# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('path', 73270.0, 378.150763585)],
    'M': [('path', 293008.0, 756.111102947)],
    'L': [('path', 1324496.0, 1607.98507456)],
    'paper': [('path', 14377620.0, 5298.15817053)],
}
