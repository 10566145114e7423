"""azimint_naive (pyFAI): mean of data over each of npt radial bins, one masked pass per bin."""

import numpy as np

import plait

from ._support import njit, prange, sizes

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


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ret0', 499.822204812, 15.8119624744)],
    'M': [('ret0', 499.860534228, 15.8076117598)],
    'L': [('ret0', 500.011086217, 15.8118064174)],
    'paper': [('ret0', 500.007246748, 15.81432398)],
}
