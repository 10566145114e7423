"""azimint_naive (pyFAI): mean of data over each of npt radial bins, one masked pass per bin."""

import numpy as np

import plait

from ._support import jax_jit, njit, prange, sizes

PRESETS = {
    "test": dict(N=3000, npt=13),
    "S": dict(N=400000, npt=1000),
    "M": dict(N=4000000, npt=1000),
    "L": dict(N=40000000, npt=1000),
    "paper": dict(N=1000000, npt=1000),
}
PARAMETERS = ("data", "radius", "npt")
OUTPUTS = ()


def initialize(preset):
    s = sizes(PRESETS, preset)
    rng = np.random.default_rng(42)
    data = rng.random((s["N"],))
    radius = rng.random((s["N"],))
    return dict(data=data, radius=radius, npt=s["npt"])


def kernel_numpy(data, radius, npt):
    rmax = radius.max()
    res = np.zeros(npt, dtype=np.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        in_bin = (r1 <= radius) & (radius < r2)
        res[i] = data[in_bin].mean()
    return res


# The bins are independent.
@njit(parallel=True, fastmath=False)
def kernel_numba(data, radius, npt):
    rmax = radius.max()
    res = np.zeros(npt, dtype=np.float64)
    for i in prange(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        in_bin = (r1 <= radius) & (radius < r2)
        res[i] = data[in_bin].mean()
    return res


# Boolean-mask indexing (data[in_bin]) is not in the language; the mean is
# the masked sum over the count, both through np.where.
@plait.jit
def kernel_plait(data, radius, npt):
    rmax = np.max(radius)
    res = np.zeros(npt, dtype=np.float64)
    #pragma parallel for
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        in_bin = (r1 <= radius) & (radius < r2)
        res[i] = np.sum(np.where(in_bin, data, 0.0)) / np.sum(np.where(in_bin, 1.0, 0.0))
    return res


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(data, radius, npt):
    import cupy

    rmax = radius.max()
    res = cupy.zeros(npt, dtype=cupy.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        in_bin = (r1 <= radius) & (radius < r2)
        res[i] = data[in_bin].mean()
    return res


# The bins are independent: one vectorised masked reduction over (bin, point)
# pairs, which XLA fuses without materialising the masks. A mask replaces
# data[in_bin], whose shape would depend on the data. The bin count is also
# passed as a traced value to divide by: XLA turns a division by a constant
# into a multiplication by its reciprocal, which moves the last bin's upper
# edge above rmax and puts the point at rmax into a bin.
@jax_jit(static_argnames=("npt",))
def _jax_bin_means(data, radius, npt, divisor):
    import jax
    import jax.numpy as jnp

    rmax = radius.max()

    def bin_mean(i):
        r1 = rmax * i / divisor
        r2 = rmax * (i + 1) / divisor
        in_bin = (r1 <= radius) & (radius < r2)
        return jnp.sum(jnp.where(in_bin, data, 0.0)) / jnp.sum(in_bin)

    return jax.vmap(bin_mean)(jnp.arange(npt))


def kernel_jax(data, radius, npt):
    return _jax_bin_means(data, radius, npt, float(npt))


def kernel_torch(data, radius, npt):
    import torch

    rmax = radius.max()
    res = torch.zeros(npt, dtype=torch.float64, device=data.device)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        in_bin = (r1 <= radius) & (radius < r2)
        res[i] = data[in_bin].mean()
    return res


NO_TORCH_COMPILE = "data[in_bin] has a data-dependent shape: a graph break in each of the npt iterations"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 499.822204812, 15.8119624744)],
    'M': [('ret0', 499.860534228, 15.8076117598)],
    'L': [('ret0', 500.011086217, 15.8118064174)],
    'paper': [('ret0', 500.007246748, 15.81432398)],
}
