"""heat_3d (PolyBench): TSTEPS-1 pairs of 7-point heat-equation sweeps, A -> B -> A.

The standard input is linear in the indices, hence a fixed point of the
stencil (the output equals the input); `validation_inputs` adds a random
field, which an implementation that does nothing cannot pass."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes, torch_compiled

PRESETS = {
    "test": dict(TSTEPS=4, N=9),
    "S": dict(TSTEPS=25, N=25),
    "M": dict(TSTEPS=50, N=40),
    "L": dict(TSTEPS=100, N=70),
    "paper": dict(TSTEPS=500, N=120),
}
PARAMETERS = ("TSTEPS", "A", "B")
OUTPUTS = ("A", "B")


def initialize(preset):
    TSTEPS, N = (sizes(PRESETS, preset)[k] for k in ("TSTEPS", "N"))
    A = fromfunction(lambda i, j, k: (i + j + (N - k)) * 10 / N, (N, N, N))
    return dict(TSTEPS=TSTEPS, A=A, B=A.copy())


def validation_inputs(preset):
    """A non-linear field, on which the stencil changes every interior point."""
    inputs = initialize(preset)
    N = inputs["A"].shape[0]
    A = np.random.default_rng(7).random((N, N, N))
    return [("random field", dict(TSTEPS=inputs["TSTEPS"], A=A, B=A.copy()))]


def kernel_numpy(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])


@njit(parallel=True, fastmath=False)
def kernel_numba(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])


@plait.jit
def kernel_plait(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def _sweep(A):
    """The new interior of a field, from any array library's array `A`."""
    return (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])


def kernel_cupy(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = _sweep(A)
        A[1:-1, 1:-1, 1:-1] = _sweep(B)


@jax_jit(static_argnames=("TSTEPS",))
def kernel_jax(TSTEPS, A, B):
    from jax import lax

    def step(t, fields):
        A, B = fields
        B = B.at[1:-1, 1:-1, 1:-1].set(_sweep(A))
        A = A.at[1:-1, 1:-1, 1:-1].set(_sweep(B))
        return A, B

    return lax.fori_loop(1, TSTEPS, step, (A, B))


def _torch_step(A, B):
    B[1:-1, 1:-1, 1:-1] = _sweep(A)
    A[1:-1, 1:-1, 1:-1] = _sweep(B)


def kernel_torch(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        _torch_step(A, B)


# torch.compile would unroll the time loop; its users compile one step.
_torch_step_compiled = torch_compiled(_torch_step)


def kernel_torch_compile(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        _torch_step_compiled(A, B)


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('A', 231250.0, 1952.56241898), ('B', 231250.0, 1952.56241898)],
    'M': [('A', 952000.0, 3969.88664826), ('B', 952000.0, 3969.88664826)],
    'L': [('A', 5120500.0, 9220.35791062), ('B', 5120500.0, 9220.35791062)],
    'paper': [('A', 25848000.0, 20732.5830518), ('B', 25848000.0, 20732.5830518)],
}
