"""jacobi_2d (PolyBench): TSTEPS-1 pairs of 5-point Jacobi sweeps, A -> B -> A."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes, torch_compiled

PRESETS = {
    "test": dict(TSTEPS=5, N=19),
    "S": dict(TSTEPS=50, N=150),
    "M": dict(TSTEPS=80, N=350),
    "L": dict(TSTEPS=200, N=700),
    "paper": dict(TSTEPS=1000, N=2800),
}
PARAMETERS = ("TSTEPS", "A", "B")
OUTPUTS = ("A", "B")


def initialize(preset):
    TSTEPS, N = (sizes(PRESETS, preset)[k] for k in ("TSTEPS", "N"))
    A = fromfunction(lambda i, j: i * (j + 2) / N, (N, N))
    B = fromfunction(lambda i, j: i * (j + 3) / N, (N, N))
    return dict(TSTEPS=TSTEPS, A=A, B=B)


def kernel_numpy(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


@njit(parallel=True, fastmath=False)
def kernel_numba(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


@plait.jit
def kernel_plait(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


@jax_jit(static_argnames=("TSTEPS",))
def kernel_jax(TSTEPS, A, B):
    from jax import lax

    def step(t, fields):
        A, B = fields
        B = B.at[1:-1, 1:-1].set(
            0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]))
        A = A.at[1:-1, 1:-1].set(
            0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]))
        return A, B

    return lax.fori_loop(1, TSTEPS, step, (A, B))


def _torch_step(A, B):
    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
    A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


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
    'S': [('A', 855546.314794, 7580.0460081), ('B', 855805.609728, 7582.22897624)],
    'M': [('A', 10781772.7601, 41015.1885759), ('B', 10782383.7557, 41017.3807702)],
    'L': [('A', 86001133.8746, 163694.78389), ('B', 86002364.1361, 163696.985903)],
    'paper': [('A', 5491979426.32, 2614760.32378), ('B', 5491984376.27, 2614762.53488)],
}
