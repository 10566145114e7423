"""jacobi_1d (PolyBench): TSTEPS-1 pairs of 3-point Jacobi sweeps, A -> B -> A."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes, torch_compiled

PRESETS = {
    "test": dict(TSTEPS=7, N=40),
    "S": dict(TSTEPS=800, N=3200),
    "M": dict(TSTEPS=3000, N=12000),
    "L": dict(TSTEPS=8500, N=34000),
    "paper": dict(TSTEPS=4000, N=32000),
}
PARAMETERS = ("TSTEPS", "A", "B")
OUTPUTS = ("A", "B")


def initialize(preset):
    TSTEPS, N = (sizes(PRESETS, preset)[k] for k in ("TSTEPS", "N"))
    A = fromfunction(lambda i: (i + 2) / N, (N,))
    B = fromfunction(lambda i: (i + 3) / N, (N,))
    return dict(TSTEPS=TSTEPS, A=A, B=B)


def kernel_numpy(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@njit(parallel=True, fastmath=False)
def kernel_numba(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@plait.jit
def kernel_plait(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@jax_jit(static_argnames=("TSTEPS",))
def kernel_jax(TSTEPS, A, B):
    from jax import lax

    def step(t, fields):
        A, B = fields
        B = B.at[1:-1].set(0.33333 * (A[:-2] + A[1:-1] + A[2:]))
        A = A.at[1:-1].set(0.33333 * (B[:-2] + B[1:-1] + B[2:]))
        return A, B

    return lax.fori_loop(1, TSTEPS, step, (A, B))


def _torch_step(A, B):
    B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
    A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


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
    'S': [('A', 1576.40232422, 32.173483431), ('B', 1576.41831447, 32.1738047096)],
    'M': [('A', 5654.09138846, 59.6064707843), ('B', 5654.14756127, 59.6070598633)],
    'L': [('A', 14352.6238951, 89.9090746838), ('B', 14352.7666605, 89.9099658269)],
    'paper': [('A', 14774.5379241, 95.3772966928), ('B', 14774.6851476, 95.3782449902)],
}
