"""fdtd_2d (PolyBench): TMAX steps of a 2-D finite-difference time-domain update."""

import numpy as np

import plait

from ._support import fromfunction, jax_jit, njit, sizes, torch_compiled

PRESETS = {
    "test": dict(TMAX=5, NX=13, NY=17),
    "S": dict(TMAX=20, NX=200, NY=220),
    "M": dict(TMAX=60, NX=400, NY=450),
    "L": dict(TMAX=150, NX=800, NY=900),
    "paper": dict(TMAX=500, NX=1000, NY=1200),
}
PARAMETERS = ("TMAX", "ex", "ey", "hz", "_fict_")
OUTPUTS = ("ex", "ey", "hz")


def initialize(preset):
    TMAX, NX, NY = (sizes(PRESETS, preset)[k] for k in ("TMAX", "NX", "NY"))
    ex = fromfunction(lambda i, j: (i * (j + 1)) / NX, (NX, NY))
    ey = fromfunction(lambda i, j: (i * (j + 2)) / NY, (NX, NY))
    hz = fromfunction(lambda i, j: (i * (j + 3)) / NX, (NX, NY))
    _fict_ = fromfunction(lambda i: i, (TMAX,))
    return dict(TMAX=TMAX, ex=ex, ey=ey, hz=hz, _fict_=_fict_)


def kernel_numpy(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


@njit(parallel=True, fastmath=False)
def kernel_numba(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


@plait.jit
def kernel_plait(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


# ---------------------------------------------------------------- GPU peers
# CuPy and PyTorch (eager) as their users write the NumPy code, in place;
# JAX functional, returning the returned values and then the new in/out
# arrays. Each imports its library when called.


def kernel_cupy(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


@jax_jit(static_argnames=("TMAX",))
def kernel_jax(TMAX, ex, ey, hz, _fict_):
    from jax import lax

    def step(t, fields):
        ex, ey, hz = fields
        ey = ey.at[0, :].set(_fict_[t])
        ey = ey.at[1:, :].set(ey[1:, :] - 0.5 * (hz[1:, :] - hz[:-1, :]))
        ex = ex.at[:, 1:].set(ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1]))
        hz = hz.at[:-1, :-1].set(
            hz[:-1, :-1] - 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1]))
        return ex, ey, hz

    return lax.fori_loop(0, TMAX, step, (ex, ey, hz))


def _torch_step(ex, ey, hz, fict):
    ey[0, :] = fict
    ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
    ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
    hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def kernel_torch(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        _torch_step(ex, ey, hz, _fict_[t])


# torch.compile would unroll the time loop; its users compile one step.
_torch_step_compiled = torch_compiled(_torch_step)


def kernel_torch_compile(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        _torch_step_compiled(ex, ey, hz, _fict_[t])


# Sum and L2 norm of each NumPy output (returns as ret0..., then in/out arrays),
# from ../shared/benchmarks/npbench-kernels.md (NumPy 1.24, 2 cores).
CHECKSUMS = {
    'S': [('ex', 2199919.92522, 14243.9531033), ('ey', 1997051.90935, 12821.8065803), ('hz', 1943435.94694, 13158.0653948)],
    'M': [('ex', 17544948.748, 56513.1804527), ('ey', 15467047.2383, 48896.1687082), ('hz', 14602297.1344, 50807.7716065)],
    'L': [('ex', 134936161.931, 218180.150473), ('ey', 119477049.468, 187314.521869), ('hz', 108567937.665, 195187.061019)],
    'paper': [('ex', 212842787.528, 273386.634202), ('ey', 201217072.443, 241869.213809), ('hz', 230629904.467, 368250.121081)],
}
