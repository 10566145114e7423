"""The implementations a benchmark compares (a column of its table each):
NumPy, Numba and Plait on the CPU; Plait, CuPy, JAX, PyTorch and
torch.compile on the GPU. A peer says why it cannot run here (not
installed, no GPU), moves inputs to its device and back, and waits for its
device after a call, so that a timed call holds the work it started."""

import importlib
import importlib.util
import os
import warnings

import numpy as np

class Peer:
    """One implementation family (a column of the table). A kernel module
    provides its version as the attribute `kernel_<name>`; a kernel without
    one is skipped for this peer with a note."""

    name = ""
    functional = False  # the implementation returns its in/out arrays rather than writing them

    def unavailable(self):
        """Why this peer cannot run here (not installed...), or None."""
        return None

    def implementation(self, module):
        return getattr(module, f"kernel_{self.name}", None)

    def missing_note(self, module):
        """Why `module` has no version for this peer (when implementation() is None)."""
        return f"no {self.name} version"

    def release(self):
        """Returns cached device memory after a kernel, so that the next kernel's
        peers find the GPU empty."""

    def to_device(self, value):
        return value

    def to_host(self, value):
        return value

    def synchronize(self, result):
        """Waits until the work of a call that returned `result` is done."""

    def prepare(self, inputs, parameters):
        """Fresh copies of the inputs, on the device, in call order; the
        copies have arrived when it returns (JAX's and CuPy's copies are
        asynchronous, and would otherwise be finished inside the timed call)."""
        args = [self.to_device(np.copy(inputs[p])) if isinstance(inputs[p], np.ndarray) else inputs[p]
                for p in parameters]
        self.synchronize(args)
        return args

    def call(self, fn, args):
        result = fn(*args)
        self.synchronize(result)
        return result

    def outputs(self, module, result, args):
        """The returned values, then the in/out arrays, as NumPy arrays."""
        values = [] if result is None else list(result) if isinstance(result, tuple) else [result]
        if not self.functional:
            values += [args[module.PARAMETERS.index(name)] for name in module.OUTPUTS]
        return [np.asarray(self.to_host(v)) for v in values]


def first_line(exc):
    """An exception as one line: its type and the first line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def missing(module_name):
    return None if importlib.util.find_spec(module_name) else f"{module_name} is not installed"


def cupy_unavailable():
    """Why CuPy cannot run here, or None."""
    reason = missing("cupy")
    if reason is None:
        import cupy

        try:
            if cupy.cuda.runtime.getDeviceCount() < 1:
                return "cupy finds no GPU"
        except Exception as e:  # noqa: BLE001 -- CuPy's error types differ across versions
            return f"cupy cannot use the GPU ({first_line(e)})"
    return reason


class NumpyPeer(Peer):
    name = "numpy"


class NumbaPeer(Peer):
    name = "numba"

    def unavailable(self):
        reason = missing("numba")
        if reason is None:
            # Numba warns about non-contiguous dots and loops it cannot
            # parallelise; the versions are written as its users write them.
            from numba.core.errors import NumbaPerformanceWarning

            warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)
        return reason


class PlaitPeer(Peer):
    """Plait on the given target. The kernels are written with @plait.jit (the
    CPU); another target compiles the same Python source with
    plait.jit(target=...). On the GPU the inputs are copied to the device
    before the call (untimed) and the call is followed by a synchronisation."""

    def __init__(self, target, boundscheck=None, name="plait", **options):
        self.target = target
        self.boundscheck = boundscheck  # None: the target's default
        # Other columns of the same kernels: "plait_unchecked"
        # (boundscheck=False), to measure what the default checks cost, and
        # the ablation's (ABLATIONS), each without some optimisations.
        self.options = options
        self.name = "plait_unchecked" if boundscheck is False else name
        self._retargeted = {}

    def unavailable(self):
        import plait

        try:
            plait.jit(target=self.target)
        except ValueError as e:
            return str(e)
        if self.target == "cuda":
            from plait import cuda

            return cuda.cuda_unavailable_reason() or None
        return None

    def implementation(self, module):
        kernel = getattr(module, "kernel_plait", None)
        if kernel is None or (self.target == "cpu" and self.boundscheck is None and not self.options):
            return kernel
        if module not in self._retargeted:
            import plait

            options = dict(self.options)
            if self.boundscheck is not None:
                options["boundscheck"] = self.boundscheck
            self._retargeted[module] = plait.jit(target=self.target, **options)(kernel.py_func)
        return self._retargeted[module]

    def to_device(self, value):
        if self.target == "cpu":
            return value
        import plait

        return plait.to_device(value)

    def to_host(self, value):
        if self.target == "cpu":
            return value
        import plait

        return plait.to_host(value)

    def synchronize(self, result):
        if self.target != "cpu":
            from plait import _core

            _core.synchronize(0)


class CupyPeer(Peer):
    name = "cupy"

    def unavailable(self):
        return cupy_unavailable()

    def release(self):
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()

    def to_device(self, value):
        import cupy

        return cupy.asarray(value)

    def to_host(self, value):
        import cupy

        return cupy.asnumpy(value)

    def synchronize(self, result):
        import cupy

        cupy.cuda.get_current_stream().synchronize()


class JaxPeer(Peer):
    """JAX with 64-bit floats; its kernels return the returned values followed
    by the new values of the in/out arrays (JAX arrays are immutable). On the
    GPU target, a JAX without a GPU backend is skipped rather than timed on
    the CPU; JAX does not preallocate most of the GPU's memory here, which
    would leave none to the other peers."""

    name = "jax"
    functional = True

    def __init__(self, require_gpu=True):
        self.require_gpu = require_gpu

    def unavailable(self):
        reason = missing("jax")
        if reason is None:
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            import jax

            jax.config.update("jax_enable_x64", True)
            if self.require_gpu and jax.default_backend() not in ("gpu", "cuda"):
                return f"jax has no GPU backend here (backend {jax.default_backend()!r}; install jax[cuda])"
        return reason

    def to_device(self, value):
        import jax.numpy as jnp

        return jnp.asarray(value)

    def synchronize(self, result):
        import jax

        jax.block_until_ready(result)


class TorchPeer(Peer):
    """PyTorch eager (`kernel_torch`), or with torch.compile when `compiled`
    (`kernel_torch_compile`: the eager function compiled whole, or its loop
    body compiled and called from the Python loop, as torch.compile's users
    write time loops; a module without one says why in NO_TORCH_COMPILE).
    Unsigned index arrays reach PyTorch as int64: PyTorch indexes with int64,
    and its uint32 has few operations."""

    functional = False

    def __init__(self, compiled, device="cuda"):
        self.compiled = compiled
        self.device = device
        self.name = "torch_compile" if compiled else "torch"

    def unavailable(self):
        reason = missing("torch")
        if reason is None and self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                return "torch finds no CUDA GPU"
            if self.compiled and importlib.util.find_spec("triton") is None:
                return "triton is not installed (torch.compile needs it on the GPU)"
        return reason

    def implementation(self, module):
        return getattr(module, "kernel_torch_compile" if self.compiled else "kernel_torch", None)

    def missing_note(self, module):
        if self.compiled and hasattr(module, "NO_TORCH_COMPILE"):
            return f"not compiled: {module.NO_TORCH_COMPILE}"
        return super().missing_note(module)

    def release(self):
        import torch

        if self.device == "cuda":
            torch.cuda.empty_cache()

    def to_device(self, value):
        import torch

        if value.dtype.kind == "u":
            value = value.astype(np.int64)
        return torch.from_numpy(value).to(self.device)

    def to_host(self, value):
        return value.cpu().numpy() if hasattr(value, "cpu") else value

    def synchronize(self, result):
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()


def peers_for(target):
    """The peers of a target, NumPy (the baseline) first."""
    if target == "cpu":
        return [NumpyPeer(), NumbaPeer(), PlaitPeer("cpu")]
    return [NumpyPeer(), PlaitPeer(target), CupyPeer(), JaxPeer(), TorchPeer(False), TorchPeer(True)]


# The CPU's ablation columns (the Intrepydd paper's Table 5): Plait with one
# optimisation off each, by its optional pass (plait.optional_passes()) or
# its option.
ABLATIONS = {
    "plait_no_licm": dict(disable_passes=("hoist_invariant_arrays",)),
    "plait_no_fusion": dict(disable_passes=("fuse_loop_nests",), fusion="none"),
    "plait_no_alloc_hoist": dict(disable_passes=("hoist_allocations",)),
    "plait_no_blas": dict(disable_passes=("offload_matmul",)),
}


def optional_peers_for(target):
    """Peers run only when --peers names them."""
    ablations = [PlaitPeer(target, name=name, **options) for name, options in ABLATIONS.items()]
    return [PlaitPeer(target, boundscheck=False), *(ablations if target == "cpu" else [])]
