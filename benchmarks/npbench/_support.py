"""What the kernel modules share: NPBench's initialisation helper and the GPU
peers' wrappers, with the suites' preset lookup and Numba decorators
(plait/bench/kernel_support.py)."""

import numpy as np

from plait.bench.kernel_support import njit, prange, sizes  # noqa: F401 -- the modules import them from here


def fromfunction(f, shape, dtype=np.float64):
    """np.fromfunction with float64 index grids, as NPBench's initialisations use."""
    return np.fromfunction(f, shape, dtype=dtype)


# ================================================================ GPU peers
# The CuPy, JAX and PyTorch versions import their library inside the function,
# so that the modules import on machines without them; the wrappers below
# apply jax.jit and torch.compile on the first call, for the same reason.

def enable_jax_x64():
    """JAX with 64-bit floats and ints, as the kernels need (NPBench's float64)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


class jax_jit:
    """`jax.jit(fn, static_argnames=...)`, built on the first call (after
    enabling 64-bit types). Used as `@jax_jit(static_argnames=("TSTEPS",))`."""

    def __init__(self, fn=None, *, static_argnames=()):
        self.fn = fn
        self.static_argnames = tuple(static_argnames)
        self._jitted = None

    def __call__(self, *args, **kwargs):
        if self.fn is None:  # used as @jax_jit(...): this call receives the function
            (fn,) = args
            return jax_jit(fn, static_argnames=self.static_argnames)
        if self._jitted is None:
            jax = enable_jax_x64()
            self._jitted = jax.jit(self.fn, static_argnames=self.static_argnames or None)
        return self._jitted(*args, **kwargs)


class torch_compiled:
    """`torch.compile(fn, **options)`, built on the first call."""

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        self._compiled = None

    def __call__(self, *args, **kwargs):
        if self._compiled is None:
            import torch

            self._compiled = torch.compile(self.fn, **self.options)
        return self._compiled(*args, **kwargs)

