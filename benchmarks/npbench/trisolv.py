"""trisolv (PolyBench): forward substitution, x = solve(tril(L), b), written into x.

NPBench validates b, which the kernel never writes; here x is validated (and b too)."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes

PRESETS = {
    "test": dict(N=33),
    "S": dict(N=2000),
    "M": dict(N=5000),
    "L": dict(N=14000),
    "paper": dict(N=16000),
}
PARAMETERS = ("L", "x", "b")
OUTPUTS = ("x", "b")


def initialize(preset):
    N = sizes(PRESETS, preset)["N"]
    L = fromfunction(lambda i, j: (i + N - j + 1) * 2 / N, (N, N))
    x = np.full((N,), -999.0)
    b = fromfunction(lambda i: i, (N,))
    return dict(L=L, x=x, b=b)


def kernel_numpy(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


# x[i] needs all of x[:i]: the loop over i is sequential.
@njit(parallel=True, fastmath=False)
def kernel_numba(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


@plait.jit
def kernel_plait(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


# x[i] needs all of x[:i]: a sequential loop, whose dot product over :i is a
# full-row product under a mask.
@jax_jit
def kernel_jax(L, x, b):
    import jax.numpy as jnp
    from jax import lax

    cols = jnp.arange(x.shape[0])

    def step(i, x):
        dot = jnp.sum(jnp.where(cols < i, L[i] * x, 0.0))
        return x.at[i].set((b[i] - dot) / L[i, i])

    return lax.fori_loop(0, x.shape[0], step, x), b


def kernel_torch(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


NO_TORCH_COMPILE = "the loop over i would unroll into N graph nodes with slices of changing shape"


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores); x's from its separate table.
CHECKSUMS = {
    'S': [('x', 631.8446224279236, 14.699026809415106), ('b', 1999000.0, 51620.4126291)],
    'M': [('x', 1580.0254767614574, 23.244583381801885), ('b', 12497500.0, 204093.526355)],
    'L': [('x', 4424.567998387052, 38.898052166898786), ('b', 97993000.0, 956330.836583)],
    'paper': [('x', 5056.688557694565, 41.58394692101476), ('b', 127992000.0, 1168420.01695)],
}
