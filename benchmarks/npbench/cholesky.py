"""cholesky (PolyBench): in-place row-oriented Cholesky factorisation of A.

The lower triangle (with the diagonal) becomes L with A0 = L @ L.T; the
strictly upper triangle keeps A0's values."""

import numpy as np

import plait

from ._support import njit, sizes

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


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('A', 507315.6265, 8336.09464769)],
    'M': [('A', 13864448.9588, 76121.6261426)],
    'L': [('A', 375875848.958, 688407.153796)],
    'paper': [('A', 4129504665.63, 3404049.52093)],
}
