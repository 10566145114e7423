"""bigCLAM (Yang and Leskovec, WSDM 2013): overlapping communities fitted by
projected gradient ascent on nonnegative affinities F, one row at a time in
order (Gauss-Seidel: rows before i are already updated), with the
log-likelihood after each sweep."""

import numpy as np

import plait
from plait.bench.kernel_support import njit, sizes

# N <= 100: beyond it the fixed step makes the ascent chaotic (the spec).
PRESETS = {
    "test": dict(N=12, sweeps=3),
    "S": dict(N=40, sweeps=100),
    "M": dict(N=100, sweeps=300),
}
PARAMETERS = ("A", "F", "sweeps")
OUTPUTS = ("F",)
RTOL = 1e-9

WEIGHTS = np.array([0.3, 0.3, 0.2, 0.2])  # a node's first community
EDGE = np.array([0.2, 0.3, 0.3, 0.2])     # the edge probability within each community
CROSS = 0.1                               # the chance of a second community


def initialize(preset, seed=0):
    N, sweeps = (sizes(PRESETS, preset)[k] for k in ("N", "sweeps"))
    rng = np.random.default_rng(seed)
    member = np.zeros((N, 4), dtype=bool)
    member[np.arange(N), rng.choice(4, size=N, p=WEIGHTS)] = True
    second = rng.random(N) < CROSS
    member[np.flatnonzero(second), rng.integers(0, 4, second.sum())] = True
    shared = member[:, None, :] & member[None, :, :]
    apart = np.prod(np.where(shared, 1.0 - EDGE, 1.0), axis=2)
    probability = np.where(shared.any(axis=2), 1.0 - apart, 0.01)
    A = np.triu(rng.random((N, N)) < probability, 1)
    A = (A | A.T).astype(np.int8)
    F = np.random.default_rng(seed + 1).random((N, 4))
    return dict(A=A, F=F, sweeps=sweeps)


# ---------------------------------------------------------------- NumPy

def sigma(x):
    return np.exp(-x) / (1.0 - np.exp(-x))


def gradient(F, A, i):
    nb = np.where(A[i] != 0)[0]
    nn = np.where(A[i] == 0)[0]  # i itself among them
    sum_nb = np.zeros(F.shape[1])
    for j in nb:
        sum_nb += F[j] * sigma(F[j] @ F[i])
    sum_nn = np.zeros(F.shape[1])
    for j in nn:
        sum_nn += F[j]
    return sum_nb - sum_nn


def log_likelihood(F, A):
    S = F @ F.T
    return np.sum(A * np.log(1.0 - np.exp(-S))) - np.sum((1 - A) * S)


def kernel_numpy(A, F, sweeps):
    ll = np.empty(sweeps)
    for n in range(sweeps):
        for i in range(F.shape[0]):
            g = gradient(F, A, i)
            F[i] = np.maximum(0.001, F[i] + 0.005 * g)
        ll[n] = log_likelihood(F, A)
    return ll


# ---------------------------------------------------------------- Numba
# Numba's compiled functions call compiled functions only: the gradient is
# written again to call the compiled sigma.

sigma_numba = njit(sigma)
log_likelihood_numba = njit(log_likelihood)


@njit
def gradient_numba(F, A, i):
    nb = np.where(A[i] != 0)[0]
    nn = np.where(A[i] == 0)[0]
    sum_nb = np.zeros(F.shape[1])
    for j in nb:
        sum_nb += F[j] * sigma_numba(F[j] @ F[i])
    sum_nn = np.zeros(F.shape[1])
    for j in nn:
        sum_nn += F[j]
    return sum_nb - sum_nn


@njit
def kernel_numba(A, F, sweeps):
    ll = np.empty(sweeps)
    for n in range(sweeps):
        for i in range(F.shape[0]):
            g = gradient_numba(F, A, i)
            F[i] = np.maximum(0.001, F[i] + 0.005 * g)
        ll[n] = log_likelihood_numba(F, A)
    return ll


# ---------------------------------------------------------------- Plait
# The NumPy functions, called from the kernel (each call is inlined); only
# the gradient changes: a kernel's for loops run over range(), not over the
# elements of an array.

def gradient_plait(F, A, i):
    nb = np.where(A[i] != 0)[0]
    nn = np.where(A[i] == 0)[0]
    sum_nb = np.zeros(F.shape[1])
    for k in range(nb.shape[0]):  # for j in nb
        j = nb[k]
        sum_nb += F[j] * sigma(F[j] @ F[i])
    sum_nn = np.zeros(F.shape[1])
    for k in range(nn.shape[0]):  # for j in nn
        sum_nn += F[nn[k]]
    return sum_nb - sum_nn


@plait.jit
def kernel_plait(A, F, sweeps):
    ll = np.empty(sweeps)
    for n in range(sweeps):
        for i in range(F.shape[0]):
            g = gradient_plait(F, A, i)
            F[i] = np.maximum(0.001, F[i] + 0.005 * g)
        ll[n] = log_likelihood(F, A)
    return ll
