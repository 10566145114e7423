"""GPU kernels: Plait-CUDA against CuPy, PyTorch, torch.compile, JAX and Triton,
side by side in one benchmark process (benchmarks/gpu_README.md says what each
number means).

    python benchmarks/gpu_kernels.py                      # full sizes (H100/H200, < 8 minutes)
    python benchmarks/gpu_kernels.py --quick              # small sizes: a smoke test that still validates
    python benchmarks/gpu_kernels.py --kernels spmv,histogram --peers plait,torch
    python benchmarks/gpu_kernels.py --cpu-check          # no GPU: references and CPU-capable peers, tiny sizes
    python benchmarks/gpu_kernels.py --autotune           # Plait with plait.jit(autotune=True)

Every implementation is first validated against a float64 NumPy reference
(relative L2 error below 1e-5, outputs poisoned with NaN first), then timed:
CUDA events around each run, L2 flushed by a 256 MB write before it, median
of --repeat runs after warm-up. Each peer and kernel runs in its own
try/except; a failure is reported and the run goes on. A supervisor process
runs the benchmark in a child and, when the child dies (a segfault in a
library, a lost CUDA context), reports the implementation that was running as
failed and goes on in a new child. With $OUT set (or --out), the CSV, the
markdown table and the error log are written there.
"""

import argparse
import csv
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

# Triton kernels are defined at module level (Triton reads their source); a
# stand-in `tl` lets the definitions parse where Triton is missing.
try:
    import triton
    import triton.language as tl
    TRITON_IMPORT_ERROR = ""
except Exception as _exc:  # noqa: BLE001 - any import failure only disables the Triton peer
    triton = None
    TRITON_IMPORT_ERROR = f"{type(_exc).__name__}: {_exc}"

    class tl:  # noqa: N801
        constexpr = None

TOLERANCE = 1e-5          # relative L2 error allowed against the float64 reference
FLUSH_BYTES = 256 << 20   # written before every timed run to evict the inputs from L2
COPY_BYTES = 1 << 30      # buffer of the device-to-device copy that gives the bandwidth roof
NAN = float("nan")

NBINS = 37                # histogram bins (a global, so Plait freezes it into the kernel)
SAXPY_ALPHA = 0.5
GESUMMV_ALPHA = 1.5
GESUMMV_BETA = 1.2
JACOBI_C = 0.33333        # NPBench's literal
STENCIL_C = 0.2
FDTD_E = 0.5
FDTD_H = 0.7

PEER_COLUMNS = [("cupy", "CuPy"), ("torch", "torch"), ("compile", "torch.compile"), ("jax", "JAX"),
                ("triton", "Triton")]
CPU_PEER_COLUMNS = [("cupy", "NumPy"), ("torch", "torch-cpu"), ("jax", "JAX-cpu"), ("python", "Plait-python")]


# =============================================================================
# Plait kernels: the loop language with pragmas. Undecorated they are plain
# Python (the --cpu-check mode runs them so); plait.jit compiles them.
# =============================================================================

def plait_vadd(a, b, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


def plait_saxpy(alpha, x, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        y[i] = alpha * x[i] + y[i]


def plait_softmax(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(max: m)
        for j1 in range(x.shape[1]):
            m = max(m, x[i, j1])
        s = 0.0
        #pragma simd reduction(+: s)
        for j2 in range(x.shape[1]):
            s += np.exp(x[i, j2] - m)
        #pragma simd
        for j3 in range(x.shape[1]):
            out[i, j3] = np.exp(x[i, j3] - m) / s


def plait_spmv(rowptr, cols, vals, x, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        acc = 0.0
        #pragma simd reduction(+: acc)
        for k in range(rowptr[i], rowptr[i + 1]):
            acc += vals[k] * x[cols[k]]
        y[i] = acc


def plait_stencil(steps, a, b):
    n = a.shape[0]
    m = a.shape[1]
    for t in range(steps):
        #pragma parallel for
        for i1 in range(1, n - 1):
            #pragma parallel for
            for j1 in range(1, m - 1):
                b[i1, j1] = 0.2 * (a[i1, j1] + a[i1, j1 - 1] + a[i1, j1 + 1] + a[i1 + 1, j1] + a[i1 - 1, j1])
        #pragma parallel for
        for i2 in range(1, n - 1):
            #pragma parallel for
            for j2 in range(1, m - 1):
                a[i2, j2] = 0.2 * (b[i2, j2] + b[i2, j2 - 1] + b[i2, j2 + 1] + b[i2 + 1, j2] + b[i2 - 1, j2])


def plait_gesummv(alpha, beta, a, b, x, y):
    #pragma parallel for
    for i in range(a.shape[0]):
        t = 0.0
        s = 0.0
        #pragma simd reduction(+: t, s)
        for j in range(a.shape[1]):
            t += a[i, j] * x[j]
            s += b[i, j] * x[j]
        y[i] = alpha * t + beta * s


def plait_histogram(x, bins):
    #pragma parallel for
    for i in range(x.shape[0]):
        k = int(x[i] * NBINS)
        if k >= NBINS:
            k = NBINS - 1
        #pragma atomic
        bins[k] += 1


def plait_jacobi_1d(tsteps, a, b):
    n = a.shape[0]
    for t in range(1, tsteps):
        #pragma parallel for
        for i1 in range(1, n - 1):
            b[i1] = 0.33333 * (a[i1 - 1] + a[i1] + a[i1 + 1])
        #pragma parallel for
        for i2 in range(1, n - 1):
            a[i2] = 0.33333 * (b[i2 - 1] + b[i2] + b[i2 + 1])


def plait_fdtd_2d(tmax, ex, ey, hz, fict):
    nx = ex.shape[0]
    ny = ex.shape[1]
    for t in range(tmax):
        #pragma parallel for
        for j0 in range(ny):
            ey[0, j0] = fict[t]
        #pragma parallel for
        for i1 in range(1, nx):
            #pragma parallel for
            for j1 in range(ny):
                ey[i1, j1] = ey[i1, j1] - 0.5 * (hz[i1, j1] - hz[i1 - 1, j1])
        #pragma parallel for
        for i2 in range(nx):
            #pragma parallel for
            for j2 in range(1, ny):
                ex[i2, j2] = ex[i2, j2] - 0.5 * (hz[i2, j2] - hz[i2, j2 - 1])
        #pragma parallel for
        for i3 in range(nx - 1):
            #pragma parallel for
            for j3 in range(ny - 1):
                hz[i3, j3] = hz[i3, j3] - 0.7 * (ex[i3, j3 + 1] - ex[i3, j3] + ey[i3 + 1, j3] - ey[i3, j3])


# =============================================================================
# Triton kernels (hand-written, one program per tile; f64 constants come from
# memory because Triton types Python float literals as float32).
# =============================================================================

def triton_jit(**options):
    if triton is None:
        return lambda fn: fn
    try:
        return triton.jit(**options)
    except TypeError:  # an older Triton without that option
        return triton.jit


@triton_jit()
def tr_vadd(a, b, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


@triton_jit()
def tr_saxpy(alpha, x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y + offs, alpha * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton_jit()
def tr_softmax(x, out, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < ncols
    v = tl.load(x + row * ncols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    e = tl.where(mask, e, 0.0)
    tl.store(out + row * ncols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton_jit()
def tr_spmv(rowptr, cols, vals, x, y, nrows, ROWS: tl.constexpr, K: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = r < nrows
    start = tl.load(rowptr + r, mask=rmask, other=0)
    length = tl.load(rowptr + r + 1, mask=rmask, other=0) - start
    longest = tl.max(length, axis=0)
    acc = tl.zeros([ROWS], dtype=tl.float64)
    for k0 in range(0, longest, K):
        k = k0 + tl.arange(0, K)
        m = k[None, :] < length[:, None]
        idx = start[:, None] + k[None, :]
        c = tl.load(cols + idx, mask=m, other=0)
        v = tl.load(vals + idx, mask=m, other=0.0)
        acc += tl.sum(v * tl.load(x + c, mask=m, other=0.0), axis=1)
    tl.store(y + r, acc, mask=rmask)


@triton_jit()
def tr_stencil_sweep(src, dst, coef, n, m, BI: tl.constexpr, BJ: tl.constexpr):
    i = tl.program_id(0) * BI + tl.arange(0, BI) + 1
    j = tl.program_id(1) * BJ + tl.arange(0, BJ) + 1
    mask = (i[:, None] < n - 1) & (j[None, :] < m - 1)
    p = i[:, None] * m + j[None, :]
    c = tl.load(coef)
    v = (tl.load(src + p, mask=mask) + tl.load(src + p - 1, mask=mask) + tl.load(src + p + 1, mask=mask)
         + tl.load(src + p + m, mask=mask) + tl.load(src + p - m, mask=mask))
    tl.store(dst + p, c * v, mask=mask)


@triton_jit()
def tr_gesummv(a, b, x, y, coef, n, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    rmask = rows < n
    acc_a = tl.zeros([BM, BN], dtype=tl.float64)
    acc_b = tl.zeros([BM, BN], dtype=tl.float64)
    for j0 in range(0, n, BN):
        cols = j0 + tl.arange(0, BN)
        cmask = cols < n
        xv = tl.load(x + cols, mask=cmask, other=0.0)
        m = rmask[:, None] & cmask[None, :]
        p = rows[:, None] * n + cols[None, :]
        acc_a += tl.load(a + p, mask=m, other=0.0) * xv[None, :]
        acc_b += tl.load(b + p, mask=m, other=0.0) * xv[None, :]
    alpha = tl.load(coef)
    beta = tl.load(coef + 1)
    tl.store(y + rows, alpha * tl.sum(acc_a, axis=1) + beta * tl.sum(acc_b, axis=1), mask=rmask)


@triton_jit()
def tr_histogram(x, bins, n, NB: tl.constexpr, NBP: tl.constexpr, BLOCK: tl.constexpr):
    # Grid-stride over blocks; one private histogram per program (tl.histogram),
    # then NB atomics per program. Masked lanes go to the padding bin NBP - 1.
    acc = tl.zeros([NBP], dtype=tl.int32)
    for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        k = tl.minimum((tl.load(x + offs, mask=mask, other=0.0) * NB).to(tl.int32), NB - 1)
        acc += tl.histogram(tl.where(mask, k, NBP - 1), NBP)
    b = tl.arange(0, NBP)
    tl.atomic_add(bins + b, acc, mask=b < NB)


@triton_jit()
def tr_jacobi_1d_persistent(a, b, coef, n, tsteps, BLOCK: tl.constexpr):
    # The whole time loop in one thread block; the barriers order the sweeps.
    c = tl.load(coef)
    for t in range(1, tsteps):
        for s in range(1, n - 1, BLOCK):
            i = s + tl.arange(0, BLOCK)
            m = i < n - 1
            tl.store(b + i, c * (tl.load(a + i - 1, mask=m) + tl.load(a + i, mask=m) + tl.load(a + i + 1, mask=m)),
                     mask=m)
        tl.debug_barrier()
        for s2 in range(1, n - 1, BLOCK):
            i2 = s2 + tl.arange(0, BLOCK)
            m2 = i2 < n - 1
            tl.store(a + i2, c * (tl.load(b + i2 - 1, mask=m2) + tl.load(b + i2, mask=m2)
                                  + tl.load(b + i2 + 1, mask=m2)), mask=m2)
        tl.debug_barrier()


@triton_jit()
def tr_jacobi_1d_sweep(src, dst, coef, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + 1
    m = i < n - 1
    c = tl.load(coef)
    tl.store(dst + i, c * (tl.load(src + i - 1, mask=m) + tl.load(src + i, mask=m) + tl.load(src + i + 1, mask=m)),
             mask=m)


@triton_jit(do_not_specialize=["t"])
def tr_fdtd_e(ex, ey, hz, fict, coef, t, nx, ny, BI: tl.constexpr, BJ: tl.constexpr):
    # Statements 1-3 of a step: ey row 0, the ey update and the ex update
    # read only hz, so one kernel does all three.
    i = tl.program_id(0) * BI + tl.arange(0, BI)
    j = tl.program_id(1) * BJ + tl.arange(0, BJ)
    inb = (i[:, None] < nx) & (j[None, :] < ny)
    p = i[:, None] * ny + j[None, :]
    half = tl.load(coef)
    h = tl.load(hz + p, mask=inb, other=0.0)
    up = tl.load(hz + p - ny, mask=inb & (i[:, None] >= 1), other=0.0)
    ey_new = tl.load(ey + p, mask=inb, other=0.0) - half * (h - up)
    ey_new = tl.where(i[:, None] == 0, tl.load(fict + t), ey_new)
    tl.store(ey + p, ey_new, mask=inb)
    exm = inb & (j[None, :] >= 1)
    left = tl.load(hz + p - 1, mask=exm, other=0.0)
    tl.store(ex + p, tl.load(ex + p, mask=exm, other=0.0) - half * (h - left), mask=exm)


@triton_jit()
def tr_fdtd_h(ex, ey, hz, coef, nx, ny, BI: tl.constexpr, BJ: tl.constexpr):
    i = tl.program_id(0) * BI + tl.arange(0, BI)
    j = tl.program_id(1) * BJ + tl.arange(0, BJ)
    m = (i[:, None] < nx - 1) & (j[None, :] < ny - 1)
    p = i[:, None] * ny + j[None, :]
    c = tl.load(coef + 1)
    d = (tl.load(ex + p + 1, mask=m, other=0.0) - tl.load(ex + p, mask=m, other=0.0)
         + tl.load(ey + p + ny, mask=m, other=0.0) - tl.load(ey + p, mask=m, other=0.0))
    tl.store(hz + p, tl.load(hz + p, mask=m, other=0.0) - c * d, mask=m)


# =============================================================================
# Array code shared by CuPy, NumPy and PyTorch eager (same slicing syntax).
# =============================================================================

def stencil_array(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def jacobi_1d_array(tsteps, A, B):
    for _ in range(1, tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def fdtd_2d_step(ex, ey, hz, f):
    ey[0, :] = f
    ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
    ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
    hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def fdtd_2d_array(tmax, ex, ey, hz, fict):
    for t in range(tmax):
        fdtd_2d_step(ex, ey, hz, fict[t])


def gesummv_array(A, B, x):
    return GESUMMV_ALPHA * (A @ x) + GESUMMV_BETA * (B @ x)


# =============================================================================
# Array backends: how a peer puts, reads, copies and fills its arrays.
# =============================================================================

class NumpyBackend:
    name = "numpy"

    def put(self, a):
        return a.copy()

    def get(self, a):
        return np.array(a, copy=True)

    def copy(self, dst, src):
        np.copyto(dst, src)

    def fill(self, a, value):
        a.fill(value)

    def sync(self, obj=None):
        pass


class CupyBackend:
    name = "cupy"

    def __init__(self, cupy):
        self.cp = cupy

    def put(self, a):
        return self.cp.asarray(a)

    def get(self, a):
        return self.cp.asnumpy(a)

    def copy(self, dst, src):
        self.cp.copyto(dst, src)

    def fill(self, a, value):
        a.fill(value)

    def sync(self, obj=None):
        self.cp.cuda.runtime.deviceSynchronize()


class TorchBackend:
    name = "torch"

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device

    def put(self, a):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    def get(self, a):
        return a.detach().cpu().numpy()

    def copy(self, dst, src):
        dst.copy_(src)

    def fill(self, a, value):
        a.fill_(value)

    def sync(self, obj=None):
        if self.device != "cpu":
            self.torch.cuda.synchronize()


class JaxBackend:
    name = "jax"

    def __init__(self, jax):
        self.jax = jax

    def put(self, a):
        return self.jax.device_put(a)

    def get(self, a):
        return np.asarray(a)

    def copy(self, dst, src):
        raise TypeError("JAX arrays are immutable")

    def fill(self, a, value):
        raise TypeError("JAX arrays are immutable")

    def sync(self, obj=None):
        if obj is not None:
            self.jax.block_until_ready(obj)


# =============================================================================
# Implementations: what the harness validates and times.
# =============================================================================

class Impl:
    """One implementation of one kernel on its own arrays.
    run(): the timed call; reset(): restores the in-place inputs (untimed);
    poison(): fills the outputs with NaN before the validation run;
    outputs(): name -> NumPy array after a run; sync(): waits for the device;
    reset_each_run: whether reset() precedes every timed run."""

    def __init__(self, run, outputs, sync, reset=None, poison=None, reset_each_run=False):
        self.run = run
        self.outputs = outputs
        self.sync = sync
        self.reset = reset or (lambda: None)
        self.poison = poison or (lambda: None)
        self.reset_each_run = reset_each_run
        self.variant = ""


def put_all(be, host, names=None):
    return {k: (be.put(v) if isinstance(v, np.ndarray) else v) for k, v in host.items()
            if names is None or k in names}


def array_impl(kernel, be, call, prepare=None):
    """An implementation that writes into arrays it is given (out-parameters
    and in-place updates): call(d) with d the device arrays by name."""
    d = put_all(be, kernel.host)
    pristine = {k: be.put(kernel.host[k]) for k in kernel.inplace}
    if prepare is not None:
        prepare(d)

    def reset():
        for k in kernel.inplace:
            be.copy(d[k], pristine[k])

    def poison():
        for k in kernel.poisoned:
            be.fill(d[k], NAN)

    return Impl(run=lambda: call(d), outputs=lambda: {k: be.get(d[k]) for k in kernel.outputs},
                sync=be.sync, reset=reset, poison=poison, reset_each_run=kernel.reset_each_run)


def functional_impl(kernel, be, call, prepare=None, donated=()):
    """An implementation that returns its outputs (in kernel.outputs order):
    call(d) with d the device inputs by name. Donated inputs are put again on
    reset (the call consumed them)."""
    d = put_all(be, kernel.host, [k for k in kernel.host if k not in kernel.poisoned])
    if prepare is not None:
        prepare(d)
    state = {}

    def run():
        state["out"] = call(d)

    def outputs():
        out = state["out"]
        if not isinstance(out, (tuple, list)):
            out = (out,)
        return {k: be.get(v) for k, v in zip(kernel.outputs, out)}

    def reset():
        for k in donated:
            d[k] = be.put(kernel.host[k])

    return Impl(run=run, outputs=outputs, sync=lambda: be.sync(state.get("out")), reset=reset)


def variants(*named):
    """Alternatives of one peer, tried in order until one validates:
    (name, zero-argument factory returning an Impl)."""
    return list(named)


# =============================================================================
# The kernels: inputs, float64 reference, and each peer's version.
# =============================================================================

class Kernel:
    name = ""
    plait_fn = None
    plait_signature = ""
    memory_bound = True
    outputs = ()
    inplace = ()          # arrays reset from pristine copies before validation (and every run if reset_each_run)
    poisoned = ()         # arrays filled with NaN before the validation run
    reset_each_run = False

    def __init__(self, size):
        self.size = size

    def bytes_moved(self):
        return None

    def validation_setup(self):
        """Switches to the validation configuration (fewer steps where the
        reference would take long); timing_setup switches back."""

    def timing_setup(self):
        pass

    def plait(self, env):
        fn = env.plait_compile(type(self).plait_fn)
        return array_impl(self, env.be, lambda d: fn(*self.plait_args(d)))


def _rel_l2(got, ref):
    got = np.asarray(got, dtype=np.float64)
    if got.shape != ref.shape:
        return float("inf"), f"shape {got.shape} instead of {ref.shape}"
    if not np.all(np.isfinite(got)):
        return float("inf"), f"{int(np.count_nonzero(~np.isfinite(got)))} non-finite values"
    denom = float(np.linalg.norm(ref))
    err = float(np.linalg.norm(got - ref)) / (denom if denom else 1.0)
    return err, ""


class VAdd(Kernel):
    name = "vadd"
    plait_fn = plait_vadd
    plait_signature = "f32[::1], f32[::1], f32[::1]"
    outputs = ("out",)
    poisoned = ("out",)
    SIZES = {"full": 1 << 26, "quick": 1 << 23, "tiny": 1000}

    def setup(self, rng):
        n = self.n = self.SIZES[self.size]
        a = rng.random(n, dtype=np.float32)
        b = rng.random(n, dtype=np.float32)
        self.host = {"a": a, "b": b, "out": np.empty(n, np.float32)}
        self.ref = {"out": a.astype(np.float64) + b}
        self.label = f"f32, n={n}"

    def bytes_moved(self):
        return 3 * 4 * self.n

    def plait_args(self, d):
        return d["a"], d["b"], d["out"]

    def cupy(self, env):
        xp = env.xp
        return array_impl(self, env.be, lambda d: xp.add(d["a"], d["b"], out=d["out"]))

    def torch(self, env):
        torch = env.torch
        return array_impl(self, env.be, lambda d: torch.add(d["a"], d["b"], out=d["out"]))

    def compile(self, env):
        def vadd(a, b, out):
            out.copy_(a + b)
        f = env.compile(vadd)
        return array_impl(self, env.be, lambda d: f(d["a"], d["b"], d["out"]))

    def jax(self, env):
        f = env.jax.jit(lambda a, b: a + b)
        return functional_impl(self, env.be, lambda d: f(d["a"], d["b"]))

    def triton(self, env):
        n = self.n
        grid = (triton.cdiv(n, 1024),)
        return array_impl(self, env.be, lambda d: tr_vadd[grid](d["a"], d["b"], d["out"], n, BLOCK=1024))


class Saxpy(Kernel):
    name = "saxpy"
    plait_fn = plait_saxpy
    plait_signature = "float, f32[::1], f32[::1]"
    outputs = ("y",)
    inplace = ("y",)
    SIZES = VAdd.SIZES

    def setup(self, rng):
        n = self.n = self.SIZES[self.size]
        x = rng.random(n, dtype=np.float32)
        y = rng.random(n, dtype=np.float32)
        self.host = {"x": x, "y": y}
        self.ref = {"y": SAXPY_ALPHA * x.astype(np.float64) + y}
        self.label = f"f32, n={n}, in place"

    def bytes_moved(self):
        return 3 * 4 * self.n

    def plait_args(self, d):
        return SAXPY_ALPHA, d["x"], d["y"]

    def cupy(self, env):
        def saxpy(d):
            y = d["y"]
            y += SAXPY_ALPHA * d["x"]
        return array_impl(self, env.be, saxpy)

    def torch(self, env):
        return array_impl(self, env.be, lambda d: d["y"].add_(d["x"], alpha=SAXPY_ALPHA))

    def compile(self, env):
        def saxpy(x, y):
            y.add_(x, alpha=SAXPY_ALPHA)
        f = env.compile(saxpy)
        return array_impl(self, env.be, lambda d: f(d["x"], d["y"]))

    def jax(self, env):
        f = env.jax.jit(lambda x, y: SAXPY_ALPHA * x + y, donate_argnums=1)

        def call(d):
            d["y"] = f(d["x"], d["y"])
            return d["y"]
        return functional_impl(self, env.be, call, donated=("y",))

    def triton(self, env):
        n = self.n
        grid = (triton.cdiv(n, 1024),)
        return array_impl(self, env.be, lambda d: tr_saxpy[grid](SAXPY_ALPHA, d["x"], d["y"], n, BLOCK=1024))


class Softmax(Kernel):
    name = "softmax"
    plait_fn = plait_softmax
    plait_signature = "f32[:, ::1], f32[:, ::1]"
    outputs = ("out",)
    poisoned = ("out",)
    SIZES = {"full": (8192, 8192), "quick": (2048, 2048), "tiny": (16, 33)}

    def setup(self, rng):
        rows, cols = self.shape = self.SIZES[self.size]
        x = (rng.random((rows, cols), dtype=np.float32) * 8 - 4).astype(np.float32)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        self.host = {"x": x, "out": np.empty_like(x)}
        self.ref = {"out": e / e.sum(axis=1, keepdims=True)}
        self.label = f"f32, {rows}x{cols}, rows"

    def bytes_moved(self):
        return 2 * 4 * self.shape[0] * self.shape[1]

    def plait_args(self, d):
        return d["x"], d["out"]

    def cupy(self, env):
        xp = env.xp

        def softmax(d):
            x = d["x"]
            e = xp.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        return functional_impl(self, env.be, softmax)

    def torch(self, env):
        torch = env.torch
        return functional_impl(self, env.be, lambda d: torch.softmax(d["x"], dim=1))

    def compile(self, env):
        torch = env.torch
        f = env.compile(lambda x: torch.softmax(x, dim=-1))
        return functional_impl(self, env.be, lambda d: f(d["x"]))

    def jax(self, env):
        jax = env.jax
        f = jax.jit(lambda x: jax.nn.softmax(x, axis=-1))
        return functional_impl(self, env.be, lambda d: f(d["x"]))

    def triton(self, env):
        rows, cols = self.shape
        block = triton.next_power_of_2(cols)
        warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
        return array_impl(self, env.be, lambda d: tr_softmax[(rows,)](d["x"], d["out"], cols, BLOCK=block,
                                                                        num_warps=warps))


class Spmv(Kernel):
    name = "spmv"
    plait_fn = plait_spmv
    plait_signature = "i32[::1], i32[::1], f64[::1], f64[::1], f64[::1]"
    outputs = ("y",)
    poisoned = ("y",)
    SIZES = {"full": (1_000_000, 10_000_000), "quick": (100_000, 1_000_000), "tiny": (200, 2000)}

    def setup(self, rng):
        m, nnz = self.SIZES[self.size]
        self.m, self.nnz = m, nnz
        # Random (row, column) pairs sorted by row then column: rows of random
        # length (mean nnz/m), columns uniform over the whole vector.
        keys = np.sort(rng.integers(0, m, nnz, dtype=np.int64) * m + rng.integers(0, m, nnz, dtype=np.int64))
        rows = (keys // m).astype(np.int32)
        cols = (keys % m).astype(np.int32)
        del keys
        rowptr = np.zeros(m + 1, np.int32)
        np.cumsum(np.bincount(rows, minlength=m), out=rowptr[1:])
        vals = rng.random(nnz)
        x = rng.random(m)
        self.host = {"rowptr": rowptr, "cols": cols, "vals": vals, "x": x, "rows": rows, "y": np.empty(m)}
        self.ref = {"y": np.bincount(rows, weights=vals * x[cols], minlength=m)}
        self.label = f"f64, {m} rows, {nnz} nnz, random columns"

    def bytes_moved(self):
        return 4 * (self.m + 1) + 12 * self.nnz + 16 * self.m

    def plait_args(self, d):
        return d["rowptr"], d["cols"], d["vals"], d["x"], d["y"]

    def cupy(self, env):
        xp = env.xp
        m = self.m

        def csr(d):
            d["A"] = env.sparse.csr_matrix((d["vals"], d["cols"], d["rowptr"]), shape=(m, m))

        def bincount(d):
            return xp.bincount(d["rows"], weights=d["vals"] * d["x"][d["cols"]], minlength=m)
        out = []
        if env.sparse is not None:
            out.append(("csr_matrix @ x", lambda: functional_impl(self, env.be, lambda d: d["A"] @ d["x"], csr)))
        out.append(("bincount", lambda: functional_impl(self, env.be, bincount)))
        return variants(*out)

    def torch(self, env):
        torch = env.torch
        m = self.m

        def csr(d):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d["A"] = torch.sparse_csr_tensor(d["rowptr"], d["cols"], d["vals"], size=(m, m))

        return variants(("torch.mv (cuSPARSE)", lambda: functional_impl(self, env.be, lambda d: torch.mv(d["A"], d["x"]),
                                                                       csr)),
                        ("A @ x", lambda: functional_impl(self, env.be, lambda d: d["A"] @ d["x"], csr)))

    def compile(self, env):
        # Dynamo does not trace sparse tensors: the compiled version is the
        # same sum written as a scatter-add over the non-zeros (COO rows).
        def spmv(rows, cols, vals, x, y):
            y.zero_()
            y.index_add_(0, rows, vals * x[cols])
        f = env.compile(spmv)

        def long_rows(d):
            d["rows"] = d["rows"].long()
        call = lambda d: f(d["rows"], d["cols"], d["vals"], d["x"], d["y"])  # noqa: E731
        return variants(("index_add_, int32 rows", lambda: array_impl(self, env.be, call)),
                        ("index_add_, int64 rows", lambda: array_impl(self, env.be, call, long_rows)))

    def jax(self, env):
        jax = env.jax
        m = self.m
        f = jax.jit(lambda rows, cols, vals, x: jax.ops.segment_sum(vals * x[cols], rows, num_segments=m,
                                                                    indices_are_sorted=True))
        return functional_impl(self, env.be, lambda d: f(d["rows"], d["cols"], d["vals"], d["x"]))

    def triton(self, env):
        m = self.m
        grid = (triton.cdiv(m, 64),)
        return array_impl(self, env.be, lambda d: tr_spmv[grid](d["rowptr"], d["cols"], d["vals"], d["x"], d["y"],
                                                                m, ROWS=64, K=16))


class Stencil(Kernel):
    name = "stencil"
    plait_fn = plait_stencil
    plait_signature = "int, f64[:, ::1], f64[:, ::1]"
    outputs = ("A", "B")
    inplace = ("A", "B")
    reset_each_run = True
    SIZES = {"full": (4096, 50), "quick": (1024, 10), "tiny": (20, 3)}
    VALIDATION_STEPS = 3

    def setup(self, rng):
        n, steps = self.SIZES[self.size]
        self.n, self.time_steps = n, steps
        self.steps = steps
        A = rng.random((n, n))
        B = rng.random((n, n))
        self.host = {"A": A, "B": B}
        A_ref, B_ref = A.copy(), B.copy()
        stencil_array(A_ref, B_ref, min(steps, self.VALIDATION_STEPS))
        self.ref = {"A": A_ref, "B": B_ref}
        self.label = f"f64, {n}x{n}, {steps} steps of two 5-point sweeps"

    def validation_setup(self):
        self.steps = min(self.time_steps, self.VALIDATION_STEPS)

    def timing_setup(self):
        self.steps = self.time_steps

    def bytes_moved(self):
        n = self.n
        return self.time_steps * 2 * 8 * (n * n + (n - 2) * (n - 2))

    def plait_args(self, d):
        return self.steps, d["A"], d["B"]

    def cupy(self, env):
        return array_impl(self, env.be, lambda d: stencil_array(d["A"], d["B"], self.steps))

    torch = cupy

    def compile(self, env):
        def step(A, B):
            stencil_array(A, B, 1)
        f = env.compile(step)

        def call(d):
            for _ in range(self.steps):
                f(d["A"], d["B"])
        return array_impl(self, env.be, call)

    def jax(self, env):
        jax = env.jax

        def sweep(A, B):
            return B.at[1:-1, 1:-1].set(0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                                               + A[:-2, 1:-1]))

        def body(_, ab):
            A, B = ab
            B = sweep(A, B)
            return sweep(B, A), B

        f = jax.jit(lambda A, B, steps: jax.lax.fori_loop(0, steps, body, (A, B)), static_argnums=2)
        return functional_impl(self, env.be, lambda d: f(d["A"], d["B"], self.steps))

    def triton(self, env):
        n = self.n
        bi, bj = 8, 128
        grid = (triton.cdiv(n - 2, bi), triton.cdiv(n - 2, bj))

        def coef(d):
            d["coef"] = env.be.put(np.array([STENCIL_C]))

        def call(d):
            A, B, c = d["A"], d["B"], d["coef"]
            for _ in range(self.steps):
                tr_stencil_sweep[grid](A, B, c, n, n, BI=bi, BJ=bj)
                tr_stencil_sweep[grid](B, A, c, n, n, BI=bi, BJ=bj)
        return array_impl(self, env.be, call, coef)


class Gesummv(Kernel):
    name = "gesummv"
    plait_fn = plait_gesummv
    plait_signature = "float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]"
    outputs = ("y",)
    poisoned = ("y",)
    SIZES = {"full": 8192, "quick": 2048, "tiny": 50}

    def setup(self, rng):
        n = self.n = self.SIZES[self.size]
        A = rng.random((n, n))
        B = rng.random((n, n))
        x = rng.random(n)
        self.host = {"A": A, "B": B, "x": x, "y": np.empty(n)}
        self.ref = {"y": gesummv_array(A, B, x)}
        self.label = f"f64, {n}x{n}"

    def bytes_moved(self):
        return 2 * 8 * self.n * self.n + 16 * self.n

    def plait_args(self, d):
        return GESUMMV_ALPHA, GESUMMV_BETA, d["A"], d["B"], d["x"], d["y"]

    def cupy(self, env):
        return functional_impl(self, env.be, lambda d: gesummv_array(d["A"], d["B"], d["x"]))

    torch = cupy

    def compile(self, env):
        f = env.compile(gesummv_array)
        return functional_impl(self, env.be, lambda d: f(d["A"], d["B"], d["x"]))

    def jax(self, env):
        f = env.jax.jit(gesummv_array)
        return functional_impl(self, env.be, lambda d: f(d["A"], d["B"], d["x"]))

    def triton(self, env):
        n = self.n
        bm, bn = 4, 256
        grid = (triton.cdiv(n, bm),)

        def coef(d):
            d["coef"] = env.be.put(np.array([GESUMMV_ALPHA, GESUMMV_BETA]))
        return array_impl(self, env.be, lambda d: tr_gesummv[grid](d["A"], d["B"], d["x"], d["y"], d["coef"], n,
                                                                   BM=bm, BN=bn), coef)


class Histogram(Kernel):
    name = "histogram"
    plait_fn = plait_histogram
    plait_signature = "f32[::1], i32[::1]"
    outputs = ("bins",)
    inplace = ("bins",)
    reset_each_run = True
    SIZES = {"full": 100_000_000, "quick": 10_000_000, "tiny": 10_007}

    def setup(self, rng):
        n = self.n = self.SIZES[self.size]
        x = rng.random(n, dtype=np.float32)
        k = np.minimum((x * np.float32(NBINS)).astype(np.int64), NBINS - 1)
        self.host = {"x": x, "bins": np.zeros(NBINS, np.int32)}
        self.ref = {"bins": np.bincount(k, minlength=NBINS).astype(np.float64)}
        self.label = f"{n} f32 values, {NBINS} bins, atomics"

    def bytes_moved(self):
        return 4 * self.n

    def plait_args(self, d):
        return d["x"], d["bins"]

    def cupy(self, env):
        xp = env.xp
        return functional_impl(self, env.be, lambda d: xp.bincount(
            xp.minimum((d["x"] * NBINS).astype(xp.int32), NBINS - 1), minlength=NBINS))

    def torch(self, env):
        torch = env.torch
        return functional_impl(self, env.be, lambda d: torch.histc(d["x"], bins=NBINS, min=0.0, max=1.0))

    def compile(self, env):
        torch = env.torch
        f = env.compile(lambda x: torch.histc(x, bins=NBINS, min=0.0, max=1.0))
        return functional_impl(self, env.be, lambda d: f(d["x"]))

    def jax(self, env):
        jnp = env.jnp
        f = env.jax.jit(lambda x: jnp.bincount(jnp.minimum((x * NBINS).astype(jnp.int32), NBINS - 1),
                                               length=NBINS))
        return functional_impl(self, env.be, lambda d: f(d["x"]))

    def triton(self, env):
        n = self.n
        block = 4096
        grid = (min(triton.cdiv(n, block), 8 * env.sm_count),)
        return array_impl(self, env.be, lambda d: tr_histogram[grid](d["x"], d["bins"], n, NB=NBINS, NBP=64,
                                                                     BLOCK=block, num_warps=8))


class Jacobi1d(Kernel):
    name = "jacobi_1d"
    plait_fn = plait_jacobi_1d
    plait_signature = "int, f64[::1], f64[::1]"
    memory_bound = False
    outputs = ("A", "B")
    inplace = ("A", "B")
    reset_each_run = True
    SIZES = {"full": (3000, 12000), "quick": (800, 3200), "tiny": (20, 50)}   # NPBench M and S presets

    def setup(self, rng):
        tsteps, n = self.SIZES[self.size]
        self.tsteps, self.n = tsteps, n
        i = np.arange(n, dtype=np.float64)
        A = (i + 2) / n
        B = (i + 3) / n
        self.host = {"A": A, "B": B}
        A_ref, B_ref = A.copy(), B.copy()
        jacobi_1d_array(tsteps, A_ref, B_ref)
        self.ref = {"A": A_ref, "B": B_ref}
        self.label = f"f64, TSTEPS={tsteps}, N={n}" + (" (NPBench M)" if self.size == "full" else "")

    def plait_args(self, d):
        return self.tsteps, d["A"], d["B"]

    def cupy(self, env):
        return array_impl(self, env.be, lambda d: jacobi_1d_array(self.tsteps, d["A"], d["B"]))

    torch = cupy

    def compile(self, env):
        def step(A, B):
            jacobi_1d_array(2, A, B)
        f = env.compile(step)

        def call(d):
            for _ in range(1, self.tsteps):
                f(d["A"], d["B"])
        return array_impl(self, env.be, call)

    def jax(self, env):
        jax = env.jax

        def body(_, ab):
            A, B = ab
            B = B.at[1:-1].set(0.33333 * (A[:-2] + A[1:-1] + A[2:]))
            A = A.at[1:-1].set(0.33333 * (B[:-2] + B[1:-1] + B[2:]))
            return A, B

        f = jax.jit(lambda A, B, tsteps: jax.lax.fori_loop(1, tsteps, body, (A, B)), static_argnums=2)
        return functional_impl(self, env.be, lambda d: f(d["A"], d["B"], self.tsteps))

    def triton(self, env):
        n, tsteps = self.n, self.tsteps

        def coef(d):
            d["coef"] = env.be.put(np.array([JACOBI_C]))

        def persistent(d):
            tr_jacobi_1d_persistent[(1,)](d["A"], d["B"], d["coef"], n, tsteps, BLOCK=2048, num_warps=16)

        grid = (triton.cdiv(n - 2, 1024),)

        def launches(d):
            A, B, c = d["A"], d["B"], d["coef"]
            for _ in range(1, tsteps):
                tr_jacobi_1d_sweep[grid](A, B, c, n, BLOCK=1024)
                tr_jacobi_1d_sweep[grid](B, A, c, n, BLOCK=1024)
        return variants(("one persistent block", lambda: array_impl(self, env.be, persistent, coef)),
                        ("two launches per step", lambda: array_impl(self, env.be, launches, coef)))


class Fdtd2d(Kernel):
    name = "fdtd_2d"
    plait_fn = plait_fdtd_2d
    plait_signature = "int, f64[:, ::1], f64[:, ::1], f64[:, ::1], f64[::1]"
    memory_bound = False
    outputs = ("ex", "ey", "hz")
    inplace = ("ex", "ey", "hz")
    reset_each_run = True
    SIZES = {"full": (60, 400, 450), "quick": (20, 200, 220), "tiny": (5, 20, 22)}   # NPBench M and S presets

    def setup(self, rng):
        tmax, nx, ny = self.SIZES[self.size]
        self.tmax, self.nx, self.ny = tmax, nx, ny
        i, j = np.meshgrid(np.arange(nx, dtype=np.float64), np.arange(ny, dtype=np.float64), indexing="ij")
        ex = i * (j + 1) / nx
        ey = i * (j + 2) / ny
        hz = i * (j + 3) / nx
        fict = np.arange(tmax, dtype=np.float64)
        self.host = {"ex": ex, "ey": ey, "hz": hz, "fict": fict}
        refs = [ex.copy(), ey.copy(), hz.copy()]
        fdtd_2d_array(tmax, *refs, fict)
        self.ref = dict(zip(self.outputs, refs))
        self.label = f"f64, TMAX={tmax}, {nx}x{ny}" + (" (NPBench M)" if self.size == "full" else "")

    def plait_args(self, d):
        return self.tmax, d["ex"], d["ey"], d["hz"], d["fict"]

    def cupy(self, env):
        return array_impl(self, env.be, lambda d: fdtd_2d_array(self.tmax, d["ex"], d["ey"], d["hz"], d["fict"]))

    torch = cupy

    def compile(self, env):
        f = env.compile(fdtd_2d_step)

        def values(d):
            # One 0-d tensor per step, each with its own storage: the compiled
            # step sees the same tensor metadata every time (no recompilation).
            d["fvals"] = [d["fict"][t].clone() for t in range(self.tmax)]

        def call(d):
            for f_t in d["fvals"]:
                f(d["ex"], d["ey"], d["hz"], f_t)
        return array_impl(self, env.be, call, values)

    def jax(self, env):
        jax = env.jax

        def body(t, s):
            ex, ey, hz, fict = s
            ey = ey.at[0, :].set(fict[t])
            ey = ey.at[1:, :].set(ey[1:, :] - 0.5 * (hz[1:, :] - hz[:-1, :]))
            ex = ex.at[:, 1:].set(ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1]))
            hz = hz.at[:-1, :-1].set(hz[:-1, :-1] - 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1]))
            return ex, ey, hz, fict

        f = jax.jit(lambda ex, ey, hz, fict, tmax: jax.lax.fori_loop(0, tmax, body, (ex, ey, hz, fict))[:3],
                    static_argnums=4)
        return functional_impl(self, env.be, lambda d: f(d["ex"], d["ey"], d["hz"], d["fict"], self.tmax))

    def triton(self, env):
        nx, ny, tmax = self.nx, self.ny, self.tmax
        bi, bj = 8, 64
        grid = (triton.cdiv(nx, bi), triton.cdiv(ny, bj))

        def coef(d):
            d["coef"] = env.be.put(np.array([FDTD_E, FDTD_H]))

        def call(d):
            ex, ey, hz, fict, c = d["ex"], d["ey"], d["hz"], d["fict"], d["coef"]
            for t in range(tmax):
                tr_fdtd_e[grid](ex, ey, hz, fict, c, t, nx, ny, BI=bi, BJ=bj)
                tr_fdtd_h[grid](ex, ey, hz, c, nx, ny, BI=bi, BJ=bj)
        return array_impl(self, env.be, call, coef)


KERNELS = [VAdd, Saxpy, Softmax, Spmv, Stencil, Gesummv, Histogram, Jacobi1d, Fdtd2d]


# =============================================================================
# Timing
# =============================================================================

class EventClock:
    """Times one run with CUDA events on the current (legacy default) stream.
    Before the start event: a 256 MB write that evicts the inputs from L2,
    then a short spin kernel, so that the host has queued the run before the
    GPU reaches it (the time is the GPU's, not the first launch's latency)."""

    def __init__(self, torch=None, cupy=None):
        self.torch = torch
        self.cupy = cupy
        if torch is not None:
            self.flush_buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)
            self.spin = (lambda: torch.cuda._sleep(100_000)) if hasattr(torch.cuda, "_sleep") else (lambda: None)
        else:
            self.flush_buffer = cupy.empty(FLUSH_BYTES // 4, dtype=cupy.int32)
            self.start = cupy.cuda.Event()
            self.end = cupy.cuda.Event()
            self.spin = lambda: None
        self.label = "CUDA events"

    def flush(self):
        self.flush_buffer.fill_(1) if self.torch is not None else self.flush_buffer.fill(1)

    def time_ms(self, impl):
        if impl.reset_each_run:
            impl.reset()
        self.flush()
        self.spin()
        self.start.record()
        impl.run()
        self.end.record()
        self.end.synchronize()
        if self.torch is not None:
            return self.start.elapsed_time(self.end)
        return self.cupy.cuda.get_elapsed_time(self.start, self.end)


class WallClock:
    """Host clock around `batch` back-to-back calls and one wait at the end
    (JAX, whose own streams events cannot see; CPU runs). The L2 flush goes
    through the event clock's library when there is one."""

    def __init__(self, flush=None, sync_device=None):
        self.flush = flush or (lambda: None)
        self.sync_device = sync_device or (lambda: None)
        self.batch = 1
        self.label = "host clock"

    def time_ms(self, impl):
        if impl.reset_each_run:
            impl.reset()
        self.flush()
        self.sync_device()
        start = time.perf_counter()
        for _ in range(self.batch):
            impl.run()
        impl.sync()
        return (time.perf_counter() - start) * 1e3 / self.batch


def measure(impl, clock, args):
    """Warm-up, then `repeat` timed runs (fewer, never below 5, when they would
    take longer than --cap seconds); returns (samples in ms, note)."""
    for _ in range(args.warmup):
        if impl.reset_each_run:
            impl.reset()
        impl.run()
    impl.sync()
    note = ""
    probe = clock.time_ms(impl)
    if isinstance(clock, WallClock) and not args.cpu_check:
        clock.batch = max(1, min(20, math.ceil(2.0 / max(probe, 1e-3))))
        if clock.batch > 1:
            note = f"host clock, {clock.batch} calls per sample"
    runs = args.repeat
    if probe * runs > args.cap * 1e3:
        runs = max(5, int(args.cap * 1e3 / max(probe, 1e-6)))
        note = (note + "; " if note else "") + f"only {runs} runs (each takes {probe:.0f} ms)"
    samples = [clock.time_ms(impl) for _ in range(runs)]
    if isinstance(clock, WallClock):
        clock.batch = 1
    return samples, note


# =============================================================================
# Environment: the peers available in this process
# =============================================================================

class Env:
    """What a kernel's builder gets: its array backend and the libraries."""

    def __init__(self, **kw):
        self.be = None
        self.xp = None
        self.sparse = None
        self.torch = None
        self.jax = None
        self.jnp = None
        self.compile = None
        self.plait_compile = None
        self.sm_count = 132
        self.__dict__.update(kw)


def compact_error(exc, frames=3):
    """The exception and its last few frames, a few lines long."""
    tb = traceback.extract_tb(exc.__traceback__)[-frames:] if frames else []
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}({f.name})" for f in reversed(tb))
    message = str(exc).strip().replace("\n", " | ")
    if len(message) > 400:
        message = message[:400] + " ..."
    return f"{type(exc).__name__}: {message}" + (f"  [at {where}]" if where else "")


class Session:
    def __init__(self, args):
        self.args = args
        self.lines = []          # header lines describing the machine and the libraries
        self.unavailable = {}    # peer -> why
        self.errors = []         # full tracebacks for the log
        self.torch = self.cupy = self.jax = self.jnp = self.plait = None
        self.clock = None
        self.copy_bw = None      # bytes/s
        self.sm_count = 132
        self.gpu = not args.cpu_check

    def note(self, line):
        print(line, flush=True)
        self.lines.append(line)

    def record_error(self, where, exc):
        self.errors.append(f"== {where}\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))

    def load(self):
        args = self.args
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        self.note(f"python {platform.python_version()}, numpy {np.__version__}, {platform.node()}")
        try:
            import torch
            if self.gpu and not torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
            self.torch = torch
            self.note(f"torch {torch.__version__} (CUDA {torch.version.cuda})")
        except Exception as exc:  # noqa: BLE001
            self.unavailable["torch"] = self.unavailable["compile"] = compact_error(exc, 0)
        if self.gpu:
            try:
                import cupy
                cupy.cuda.runtime.getDeviceCount()
                self.cupy = cupy
                self.note(f"cupy {cupy.__version__}")
            except Exception as exc:  # noqa: BLE001
                self.unavailable["cupy"] = compact_error(exc, 0)
        if "jax" in args.peers:
            try:
                import jax
                jax.config.update("jax_enable_x64", True)
                import jax.numpy as jnp
                backend = jax.default_backend()
                if self.gpu and backend == "cpu":
                    raise RuntimeError("JAX has no GPU backend here (jax.default_backend() == 'cpu')")
                self.jax, self.jnp = jax, jnp
                self.note(f"jax {jax.__version__} ({backend}, x64 on)")
            except Exception as exc:  # noqa: BLE001
                self.unavailable["jax"] = compact_error(exc, 0)
        if self.gpu:
            if triton is None:
                self.unavailable["triton"] = TRITON_IMPORT_ERROR
            elif self.torch is None:
                self.unavailable["triton"] = "needs torch CUDA tensors"
            else:
                self.note(f"triton {triton.__version__}")
        try:
            import plait
            self.plait = plait
            line = f"plait {plait.__version__} from {os.path.dirname(plait.__file__)}"
            if self.gpu and not plait.cuda_available():
                self.unavailable["plait"] = f"plait.cuda_available() is False: {plait.cuda_unavailable_reason()}"
            self.note(line)
        except Exception as exc:  # noqa: BLE001
            self.unavailable["plait"] = self.unavailable["python"] = compact_error(exc, 0)
        if self.gpu:
            self.describe_gpu()
        for peer, why in sorted(self.unavailable.items()):
            if peer in args.peers:
                self.note(f"not run: {peer}: {why}")

    def describe_gpu(self):
        torch = self.torch
        if torch is not None:
            props = torch.cuda.get_device_properties(0)
            self.sm_count = props.multi_processor_count
            l2 = getattr(props, "L2_cache_size", 0)
            self.note(f"GPU: {props.name}, {self.sm_count} SMs, {props.total_memory / 2**30:.0f} GiB, "
                      f"L2 {l2 / 2**20:.0f} MiB, compute capability {props.major}.{props.minor}")
            self.clock = EventClock(torch=torch)
            if self.cupy is not None:
                torch_stream = torch.cuda.current_stream().cuda_stream
                cupy_stream = self.cupy.cuda.get_current_stream().ptr
                if torch_stream != cupy_stream:
                    self.note(f"warning: torch ({torch_stream:#x}) and CuPy ({cupy_stream:#x}) use different "
                              "streams; CuPy gets its own event clock")
        elif self.cupy is not None:
            props = self.cupy.cuda.runtime.getDeviceProperties(0)
            self.sm_count = props["multiProcessorCount"]
            self.note(f"GPU: {props['name'].decode()}, {self.sm_count} SMs")
            self.clock = EventClock(cupy=self.cupy)
        else:
            self.note("no torch or CuPy with CUDA: only JAX can be timed, and Plait has no arrays to work on")
            self.unavailable.setdefault("plait", "this script hands Plait torch or CuPy arrays; neither is usable")

    def measure_copy_bandwidth(self):
        """Device-to-device cudaMemcpy of a 1 GiB buffer; bytes read + written."""
        nbytes = COPY_BYTES if not self.args.quick else COPY_BYTES // 4
        try:
            if self.cupy is not None:
                cp = self.cupy
                src = cp.ones(nbytes // 4, dtype=cp.float32)
                dst = cp.empty_like(src)
                kind = cp.cuda.runtime.memcpyDeviceToDevice

                def copy():
                    cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, kind, 0)
                how = "cudaMemcpyAsync (CuPy)"
            else:
                torch = self.torch
                src = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
                dst = torch.empty_like(src)

                def copy():
                    dst.copy_(src)
                how = "torch copy_"
            impl = Impl(run=copy, outputs=dict, sync=lambda: None)
            for _ in range(3):
                copy()
            samples = [self.clock.time_ms(impl) for _ in range(20)]
            ms = statistics.median(samples)
            self.copy_bw = 2 * nbytes / (ms * 1e-3)
            self.note(f"device-to-device copy ({how}, {nbytes / 2**30:.2f} GiB, read + write): "
                      f"{self.copy_bw / 1e12:.2f} TB/s (median {ms:.3f} ms of 20)")
        except Exception as exc:  # noqa: BLE001
            self.record_error("copy bandwidth", exc)
            self.note(f"copy bandwidth not measured: {compact_error(exc)}")

    def context_alive(self):
        """False when the CUDA context is gone (a sticky error such as an
        illegal address): nothing on the GPU can run in this process any more."""
        if not self.gpu:
            return True
        try:
            if self.torch is not None:
                self.torch.cuda.synchronize()
                return float(self.torch.ones(1, device="cuda").sum().item()) == 1.0
            if self.cupy is not None:
                self.cupy.cuda.runtime.deviceSynchronize()
                return float(self.cupy.ones(1).sum()) == 1.0
        except Exception:  # noqa: BLE001
            return False
        return True

    def free_memory(self):
        gc.collect()
        try:
            if self.torch is not None and self.gpu:
                self.torch.cuda.synchronize()
                self.torch.cuda.empty_cache()
            if self.cupy is not None:
                self.cupy.get_default_memory_pool().free_all_blocks()
        except Exception:  # noqa: BLE001
            pass

    # --- the environments each peer's builder gets ---------------------------------

    def env_for(self, peer):
        """(Env, clock) for a peer, or raises with why it cannot run."""
        if peer in self.unavailable:
            raise RuntimeError(self.unavailable[peer])
        gpu = self.gpu
        if peer == "cupy":
            try:
                if gpu:
                    import cupyx.scipy.sparse as sparse_module
                else:
                    import scipy.sparse as sparse_module
            except Exception:  # noqa: BLE001 - spmv then uses its bincount variant
                sparse_module = None
            if gpu:
                return Env(be=CupyBackend(self.cupy), xp=self.cupy, sparse=sparse_module), self.clock
            return Env(be=NumpyBackend(), xp=np, sparse=sparse_module), WallClock()
        if peer in ("torch", "compile"):
            if self.torch is None:
                raise RuntimeError("torch is not importable")
            env = Env(be=TorchBackend(self.torch, "cuda" if gpu else "cpu"), torch=self.torch)
            if peer == "compile":
                torch = self.torch
                env.compile = lambda fn: torch.compile(fn, dynamic=False)
            clock = self.clock if gpu else WallClock()
            return env, clock
        if peer == "jax":
            if self.jax is None:
                raise RuntimeError("jax is not importable")
            env = Env(be=JaxBackend(self.jax), jax=self.jax, jnp=self.jnp)
            clock = WallClock(flush=self.clock.flush if self.clock else None,
                              sync_device=(lambda: self.torch.cuda.synchronize()) if self.torch is not None
                              else None) if gpu else WallClock()
            return env, clock
        if peer == "triton":
            return Env(be=TorchBackend(self.torch, "cuda"), sm_count=self.sm_count), self.clock
        if peer == "plait":
            plait = self.plait
            if gpu:
                be = TorchBackend(self.torch, "cuda") if self.torch is not None else CupyBackend(self.cupy)
                autotune = self.args.autotune
                return Env(be=be, plait_compile=lambda fn: plait.jit(fn, target="cuda", autotune=autotune)), self.clock
            return Env(be=NumpyBackend(), plait_compile=lambda fn: plait.jit(fn)), WallClock()
        if peer == "python":
            return Env(be=NumpyBackend(), plait_compile=lambda fn: fn), WallClock()
        raise ValueError(f"unknown peer {peer}")


# =============================================================================
# Running one kernel
# =============================================================================

def builder_for(kernel, peer):
    if peer in ("plait", "python"):
        return kernel.plait
    return getattr(kernel, peer)


def validate(kernel, impl):
    """First call (compiles) on poisoned outputs, then the comparison with the
    float64 reference. Returns (seconds of the first call, worst error)."""
    kernel.validation_setup()
    try:
        impl.reset()
        impl.poison()
        impl.sync()
        start = time.perf_counter()
        impl.run()
        impl.sync()
        first_s = time.perf_counter() - start
        got = impl.outputs()
    finally:
        kernel.timing_setup()
    worst = 0.0
    for name, ref in kernel.ref.items():
        err, why = _rel_l2(got[name], ref)
        if not err < TOLERANCE:
            shown = ""
            if ref.size <= 64:  # small outputs (histogram bins): show the values
                shown = f"; got {np.asarray(got[name]).ravel()[:6].tolist()}..., expected {ref.ravel()[:6].tolist()}..."
            raise AssertionError(f"output '{name}' differs from the float64 reference: relative L2 error "
                                 f"{err:.3g}" + (f" ({why})" if why else "") + f" > {TOLERANCE:g}{shown}")
        worst = max(worst, err)
    return first_s, worst


def run_peer(session, kernel, peer, row):
    """Validates and times one peer of one kernel, filling `row`; never raises.
    A peer may offer variants: the first that validates is timed."""
    args = session.args
    try:
        env, clock = session.env_for(peer)
        built = builder_for(kernel, peer)(env)
    except Exception as exc:  # noqa: BLE001
        unavailable = peer in session.unavailable
        if not unavailable:
            session.record_error(f"{kernel.name} / {peer} (building)", exc)
        row.update(status="unavailable" if unavailable else "failed",
                   note=session.unavailable[peer] if unavailable else compact_error(exc))
        return
    candidates = built if isinstance(built, list) else [("", lambda: built)]
    failures = []
    for variant, factory in candidates:
        impl = None
        try:
            impl = factory()
            first_s, err = validate(kernel, impl)
            row.update(first_call_s=first_s, rel_err=err)
            samples, note = measure(impl, clock, args)
            row.update(status="ok", median_ms=statistics.median(samples), min_ms=min(samples),
                       max_ms=max(samples), runs=len(samples), timer=clock.label, variant=variant,
                       note="; ".join(x for x in failures + [note] if x))
            return
        except Exception as exc:  # noqa: BLE001
            session.record_error(f"{kernel.name} / {peer}" + (f" [{variant}]" if variant else ""), exc)
            failures.append((f"[{variant}] " if variant else "") + compact_error(exc))
            if not session.context_alive():
                break
        finally:
            del impl
            session.free_memory()
    row.update(status="failed", note=" || ".join(failures))


def run_kernel(session, kernel_cls, peers, rows, started, progress):
    """All peers of one kernel. Returns False when the CUDA context is lost."""
    args = session.args
    kernel = kernel_cls(args.size)
    print(f"\n## {kernel.name}", flush=True)
    try:
        t0 = time.perf_counter()
        kernel.setup(np.random.default_rng(20261121))
        print(f"   {kernel.label}; inputs and float64 reference in {time.perf_counter() - t0:.1f} s", flush=True)
    except Exception as exc:  # noqa: BLE001
        session.record_error(f"{kernel.name} setup", exc)
        print(f"   setup failed: {compact_error(exc)}", flush=True)
        for peer in peers:
            rows.append(dict(kernel=kernel.name, size=args.size, impl=peer, status="failed",
                             note="setup: " + compact_error(exc)))
        return True
    for peer in peers:
        if f"{kernel.name}/{peer}" in args.skip:
            continue
        row = dict(kernel=kernel.name, size=args.size, label=kernel.label, impl=peer, status="",
                   bytes=kernel.bytes_moved() if kernel.memory_bound else None)
        rows.append(row)
        if time.perf_counter() - started > args.budget:
            row.update(status="skipped", note=f"time budget of {args.budget:.0f} s spent")
            print(f"   {peer:8s} skipped: time budget spent", flush=True)
            continue
        t0 = time.perf_counter()
        progress.write(session, rows[:-1], current=f"{kernel.name}/{peer}")
        run_peer(session, kernel, peer, row)
        progress.write(session, rows)
        if row["status"] == "ok":
            extra = f" [{row['variant']}]" if row.get("variant") else ""
            print(f"   {peer:8s} {row['median_ms']:10.4f} ms  (min {row['min_ms']:.4f}, {row['runs']} runs, "
                  f"first call {row['first_call_s']:.2f} s, rel err {row['rel_err']:.1e}){extra}"
                  f"{'  ' + row['note'] if row.get('note') else ''}  [{time.perf_counter() - t0:.1f} s]",
                  flush=True)
        else:
            print(f"   {peer:8s} {row['status'].upper()}: {row['note']}", flush=True)
            if not session.context_alive():
                row["note"] += " (the CUDA context is lost)"
                print("   the CUDA context is lost: nothing more can run on the GPU in this process", flush=True)
                return False
    if args.explain and session.plait is not None and "plait" in peers and "plait" not in session.unavailable:
        try:
            fn = session.env_for("plait")[0].plait_compile(kernel_cls.plait_fn)
            fn.compile(kernel_cls.plait_signature)
            print(fn.explain(kernel_cls.plait_signature), flush=True)
        except Exception as exc:  # noqa: BLE001
            print(f"   explain failed: {compact_error(exc)}", flush=True)
    del kernel
    session.free_memory()
    return True


# =============================================================================
# Reporting
# =============================================================================

CSV_FIELDS = ["kernel", "size", "label", "impl", "variant", "status", "median_ms", "min_ms", "max_ms", "runs",
              "first_call_s", "rel_err", "bytes", "bw_fraction", "timer", "note"]


def fmt_ms(row):
    if row is None:
        return "-"
    if row.get("status") != "ok":
        return {"failed": "FAIL", "skipped": "skip", "unavailable": "n/a"}.get(row.get("status"), "-")
    ms = row["median_ms"]
    return f"{ms:.4f}" if ms < 1 else (f"{ms:.3f}" if ms < 100 else f"{ms:.1f}")


def summarize(rows, kernel_names, peer_columns, plait_label, bw):
    """The markdown table and the geometric mean of fastest peer / Plait
    (bw: the copy bandwidth in bytes/s, or None)."""
    by = {(r["kernel"], r["impl"]): r for r in rows}
    headers = ["kernel"] + [label for _, label in peer_columns] + \
        [plait_label, "fastest peer / Plait", "Plait % of copy BW", "fastest peer % of copy BW"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    ratios = []
    for name in kernel_names:
        cells = [name]
        best = None
        for peer, label in peer_columns:
            row = by.get((name, peer))
            cells.append(fmt_ms(row))
            if row and row.get("status") == "ok" and (best is None or row["median_ms"] < best[1]["median_ms"]):
                best = (label, row)
        plait_row = by.get((name, "plait"))
        cells.append(fmt_ms(plait_row))
        plait_ok = plait_row is not None and plait_row.get("status") == "ok"
        if best and plait_ok:
            ratio = best[1]["median_ms"] / plait_row["median_ms"]
            ratios.append(ratio)
            cells.append(f"{ratio:.2f}x ({best[0]})")
        else:
            cells.append("-")
        for row in (plait_row if plait_ok else None, best[1] if best else None):
            if row is not None and row.get("bytes") and bw:
                frac = row["bytes"] / (row["median_ms"] * 1e-3) / bw
                row["bw_fraction"] = frac
                cells.append(f"{100 * frac:.0f}%")
            else:
                cells.append("-" if (row is None or row.get("bytes")) else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None
    geo_cell = f"**{geo:.2f}x** over {len(ratios)} kernels" if geo else "-"
    cells = ["**geometric mean**"] + [""] * (len(peer_columns) + 1) + [geo_cell, "", ""]
    lines.append("| " + " | ".join(cells) + " |")
    # Every ok row gets its bandwidth fraction for the CSV.
    for row in rows:
        if row.get("status") == "ok" and row.get("bytes") and bw and "bw_fraction" not in row:
            row["bw_fraction"] = row["bytes"] / (row["median_ms"] * 1e-3) / bw
    return "\n".join(lines), geo


def notes_for(rows):
    out = []
    for row in rows:
        if row.get("status") == "unavailable":
            continue  # said once in the header
        if row.get("status") in ("failed", "skipped") or row.get("variant") or row.get("note"):
            text = row.get("note") or ""
            if row.get("variant"):
                text = f"variant: {row['variant']}" + (f"; {text}" if text else "")
            out.append(f"- {row['kernel']} / {row['impl']} ({row.get('status')}): {text}")
    return out


def write_outputs(errors, rows, table, out_dir, tag):
    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, f"gpu_kernels{tag}.csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in CSV_FIELDS})
    md_path = os.path.join(out_dir, f"gpu_kernels{tag}.md")
    with open(md_path, "w") as f:
        f.write(table + "\n")
    paths = [csv_path, md_path]
    if errors:
        log_path = os.path.join(out_dir, f"gpu_kernels{tag}_errors.log")
        with open(log_path, "w") as f:
            f.write("\n".join(errors))
        paths.append(log_path)
    print("\nwritten: " + ", ".join(paths), flush=True)


# =============================================================================
# The CUDA code generation of the Plait kernels, checked without a GPU
# =============================================================================

def check_plait_cuda_codegen(session):
    """--cpu-check: plaitc emits the CUDA C++ (and the PTX where NVRTC loads)
    of every Plait kernel for its GPU signature."""
    plaitc = os.environ.get("PLAIT_PLAITC") or shutil.which("plaitc") or \
        os.path.join(os.path.dirname(sys.executable), "plaitc")
    if not os.path.exists(plaitc):
        print("plaitc not found: the CUDA code generation check is skipped", flush=True)
        return True
    ok = True
    source = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory() as tmp:
        for kernel_cls in KERNELS:
            fn = kernel_cls.plait_fn.__name__
            results = []
            for emit in ("cu", "ptx"):
                proc = subprocess.run([plaitc, "compile", f"{source}::{fn}", "--signature",
                                       kernel_cls.plait_signature, "--emit", emit, "-o", tmp, "--no-cache"],
                                      capture_output=True, text=True)
                if proc.returncode == 0:
                    results.append(f"{emit} ok")
                elif emit == "ptx" and "nvrtc" in (proc.stderr + proc.stdout).lower():
                    results.append("ptx skipped (no NVRTC here)")
                else:
                    ok = False
                    results.append(f"{emit} FAILED: {(proc.stderr or proc.stdout).strip()[:600]}")
            print(f"   plaitc --target cuda {fn}: " + "; ".join(results), flush=True)
    return ok


# =============================================================================
# main
# =============================================================================

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [k.name for k in KERNELS]
    p.add_argument("--kernels", default="all", help=f"comma-separated subset of: {','.join(names)}")
    p.add_argument("--peers", default="all",
                   help="comma-separated subset of: cupy,torch,compile,jax,triton,plait (GPU); "
                        "with --cpu-check: cupy (runs as NumPy),torch,jax,python,plait")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test that still validates)")
    p.add_argument("--cpu-check", action="store_true",
                   help="no GPU: tiny inputs, the references, NumPy array code, the Plait kernels as Python "
                        "and on the CPU target, torch/JAX on the CPU when importable, and plaitc's CUDA output")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per implementation (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs after validation (default 2)")
    p.add_argument("--cap", type=float, default=10.0,
                   help="seconds of timed runs per implementation before the run count is cut (default 10)")
    p.add_argument("--budget", type=float, default=420.0,
                   help="seconds after which the remaining implementations are skipped (default 420)")
    p.add_argument("--out", default=os.environ.get("OUT", ""), help="directory for CSV/markdown (default $OUT)")
    p.add_argument("--explain", action="store_true", help="print plait's explain() for each kernel")
    p.add_argument("--autotune", action="store_true",
                   help="compile Plait's kernels with plait.jit(autotune=True): each shape's launch configuration "
                        "measured at its first call (docs/cuda.md)")
    p.add_argument("--in-process", action="store_true",
                   help="run everything in this process (by default a child process runs the benchmark and a "
                        "crash, e.g. a segfault or a lost CUDA context, ends only the implementation running)")
    # Internal: the supervisor's instructions to its child processes.
    p.add_argument("--skip", default="", help=argparse.SUPPRESS)          # kernel/peer pairs already done
    p.add_argument("--child-out", default="", help=argparse.SUPPRESS)     # JSON progress for the supervisor
    p.add_argument("--copy-bw", type=float, default=0.0, help=argparse.SUPPRESS)
    p.add_argument("--plait-preflight", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    wanted = names if args.kernels == "all" else [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in names]
    if unknown:
        p.error(f"unknown kernels {unknown}; choose from {names}")
    args.kernel_list = [k for k in KERNELS if k.name in wanted]
    columns = CPU_PEER_COLUMNS if args.cpu_check else PEER_COLUMNS
    all_peers = [peer for peer, _ in columns] + ["plait"]
    args.peers = all_peers if args.peers == "all" else [x.strip() for x in args.peers.split(",") if x.strip()]
    bad = [x for x in args.peers if x not in all_peers]
    if bad:
        p.error(f"unknown peers {bad}; choose from {all_peers}")
    args.size = "tiny" if args.cpu_check else ("quick" if args.quick else "full")
    args.skip = set(x for x in args.skip.split(",") if x)
    if args.cpu_check:
        args.repeat = min(args.repeat, 3)
        args.warmup = min(args.warmup, 1)
    args.repeat = max(1, args.repeat)
    return args


class Progress:
    """What a child process has done so far, rewritten (atomically) after
    every implementation, so that the supervisor knows where a crash struck."""

    def __init__(self, path):
        self.path = path

    def write(self, session, rows, current=None, codegen_ok=True):
        if not self.path:
            return
        data = {"rows": rows, "lines": session.lines if session else [], "errors": session.errors if session else [],
                "copy_bw": session.copy_bw if session else None, "current": current, "codegen_ok": codegen_ok}
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, default=float)
        os.replace(tmp, self.path)


def run_benchmark(args):
    """The benchmark in this process. Returns (session, rows, kernel names,
    peer columns, whether plaitc's CUDA output was fine)."""
    started = time.perf_counter()
    session = Session(args)
    progress = Progress(args.child_out)
    mode = "--cpu-check (tiny sizes, CPU only)" if args.cpu_check else ("--quick sizes" if args.quick else
                                                                         "full sizes")
    session.note(f"# GPU kernels: Plait-CUDA against its peers ({mode})")
    session.load()
    if session.gpu:
        if session.clock is None:
            print("no usable GPU library (torch or CuPy with CUDA): nothing can be timed", flush=True)
        elif args.copy_bw:
            session.copy_bw = args.copy_bw
            session.note(f"device-to-device copy: {args.copy_bw / 1e12:.2f} TB/s (measured by an earlier process)")
        else:
            session.measure_copy_bandwidth()
    peer_columns = [(p, label) for p, label in (CPU_PEER_COLUMNS if args.cpu_check else PEER_COLUMNS)
                    if p in args.peers]
    peers = [p for p, _ in peer_columns] + (["plait"] if "plait" in args.peers else [])
    rows = []
    progress.write(session, rows)
    codegen_ok = True
    if args.cpu_check and "plait" in args.peers and session.plait is not None and not args.skip:
        print("\n## Plait kernels through plaitc --target cuda", flush=True)
        codegen_ok = check_plait_cuda_codegen(session)
    progress.write(session, rows, codegen_ok=codegen_ok)
    for kernel_cls in args.kernel_list:
        if session.gpu and session.clock is None:
            break
        alive = run_kernel(session, kernel_cls, peers, rows, started, progress)
        progress.write(session, rows, codegen_ok=codegen_ok)
        if not alive:
            break
    names = [k.name for k in args.kernel_list]
    return session, rows, names, peer_columns, codegen_ok, time.perf_counter() - started


def report(args, lines, errors, copy_bw, rows, names, peer_columns, elapsed):
    """Prints the table and notes; writes the CSV, markdown and error log."""
    plait_label = "Plait-cpu" if args.cpu_check else "Plait"
    table, _ = summarize(rows, names, peer_columns, plait_label, copy_bw)
    notes = notes_for(rows)
    legend = (
        "Times are medians in ms (runs, min, max and first-call time per implementation in the CSV). "
        "GPU peers other than JAX: CUDA events on the default stream, 256 MB L2 flush before each run. "
        "JAX: host clock over back-to-back calls (its streams are its own). "
        "'fastest peer / Plait' > 1 means Plait is faster. Copy BW: bytes each kernel must move / median time / "
        "measured device-to-device copy bandwidth. FAIL: raised, crashed or did not validate (relative L2 error "
        "> 1e-5 against float64 NumPy; see Notes); n/a: peer not usable here.")
    text = "\n".join(lines) + "\n\n" + table + "\n\n" + legend + \
        ("\n\nNotes:\n" + "\n".join(notes) if notes else "") + f"\n\ntotal time {elapsed:.0f} s\n"
    print("\n" + table)
    if notes:
        print("\nNotes:\n" + "\n".join(notes))
    print(f"\ntotal time {elapsed:.0f} s", flush=True)
    if args.out:
        tag = "_cpu_check" if args.cpu_check else ("_quick" if args.quick else "")
        try:
            write_outputs(errors, rows, text, args.out, tag)
        except Exception as exc:  # noqa: BLE001
            print(f"could not write the results: {compact_error(exc)}", flush=True)


# --- the supervisor -----------------------------------------------------------------

CHILD_OPTIONS = ("--kernels", "--skip", "--child-out", "--copy-bw", "--budget", "--out", "--peers")


def child_argv(argv):
    """The user's options without those the supervisor sets itself."""
    keep, drop_next = [], False
    for a in argv:
        if drop_next:
            drop_next = False
        elif a in CHILD_OPTIONS:
            drop_next = True
        elif a.split("=")[0] in CHILD_OPTIONS or a in ("--plait-preflight", "--in-process"):
            pass
        else:
            keep.append(a)
    return keep


def run_child(argv, kernels, peers, skip, budget, copy_bw, extra=()):
    """Runs this script in a new process; returns (exit code, its progress)."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix="gpu_kernels_")
    os.close(fd)
    os.unlink(path)
    cmd = [sys.executable, "-X", "faulthandler", os.path.abspath(__file__)] + child_argv(argv) + [
        "--kernels", ",".join(kernels), "--peers", ",".join(peers), "--skip", ",".join(sorted(skip)) or ",",
        "--child-out", path, "--copy-bw", repr(copy_bw or 0.0), "--budget", repr(max(1.0, budget)), "--out", "",
        *extra]
    code = subprocess.run(cmd).returncode
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = {"rows": [], "lines": [], "errors": [], "copy_bw": None, "current": None}
    finally:
        for leftover in (path, path + ".tmp"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return code, data


def death_note(code):
    if code < 0:
        try:
            import signal
            return f"the process died of {signal.Signals(-code).name}"
        except ValueError:
            return f"the process died of signal {-code}"
    return f"the process exited with status {code}"


def plait_preflight(args):
    """Child mode: compiles and runs each Plait kernel on tiny NumPy inputs
    (plait and NumPy only), recording each result before the next starts."""
    import plait
    progress = Progress(args.child_out)
    rows = []
    if not plait.cuda_available():
        return 0  # the benchmark itself reports why
    for kernel_cls in args.kernel_list:
        if f"{kernel_cls.name}/plait" in args.skip:
            continue
        progress.write(None, rows, current=f"{kernel_cls.name}/plait")
        kernel = kernel_cls("tiny")
        row = dict(kernel=kernel.name, impl="plait")
        try:
            kernel.setup(np.random.default_rng(1))
            fn = plait.jit(kernel_cls.plait_fn, target="cuda")
            validate(kernel, array_impl(kernel, NumpyBackend(), lambda d: fn(*kernel.plait_args(d))))
            row["status"] = "ok"
        except Exception as exc:  # noqa: BLE001
            row.update(status="failed", note="on tiny NumPy inputs: " + compact_error(exc))
        print(f"   plait pre-flight {kernel.name}: {row['status']}{': ' + row['note'] if 'note' in row else ''}",
              flush=True)
        rows.append(row)
        progress.write(None, rows)
    return 0


def supervise(args, argv):
    """Runs the benchmark in child processes. A child that dies (a segfault in
    a library, a lost CUDA context) ends only the implementation it was
    running: that one is reported as failed and a new child goes on with the
    rest. Plait kernels are first compiled and run on tiny inputs in small
    child processes, so that a compiler crash costs no framework start-up."""
    started = time.perf_counter()
    names = [k.name for k in args.kernel_list]
    failed_rows = {}   # kernel/peer -> row of an implementation that crashed its process
    if "plait" in args.peers and not args.cpu_check:
        print("## Plait pre-flight (tiny NumPy inputs, one small process)", flush=True)
        skip = set()
        for _ in range(len(names) + 1):
            code, data = run_child(argv, names, ["plait"], skip, args.budget, 0.0, ["--plait-preflight"])
            # Kernels that ran (right or wrong) are validated again by the
            # benchmark itself; only those that crashed are kept out of it.
            skip.update(f"{row['kernel']}/plait" for row in data["rows"])
            if code == 0:
                break
            current = data.get("current")
            if not current:
                print(f"   plait pre-flight stopped: {death_note(code)}", flush=True)
                break
            kernel = current.split("/")[0]
            note = f"compiling/running on tiny inputs: {death_note(code)} (see the log above)"
            print(f"   plait pre-flight {kernel}: CRASHED: {death_note(code)}", flush=True)
            failed_rows[current] = dict(kernel=kernel, size=args.size, impl="plait", status="failed", note=note)
            skip.add(current)
        if failed_rows and len(failed_rows) == len(names):
            print("   plait crashed on every kernel. On the workplace's CUDA image, an extension built with "
                  "$CXX=/opt/gcc/bin/g++ does so: reinstall plait with CXX=/usr/bin/g++ (gpu_README.md)", flush=True)

    rows_by_key = dict(failed_rows)
    lines, errors, copy_bw = [], [], args.copy_bw or None
    codegen_ok = True
    skip = set(failed_rows)
    remaining = list(names)
    last_done = -1
    for _ in range(3 * len(names) * (len(args.peers) + 1)):
        budget_left = args.budget - (time.perf_counter() - started)
        code, data = run_child(argv, remaining, args.peers, skip, budget_left, copy_bw)
        lines = lines or data["lines"]
        errors.extend(data["errors"])
        codegen_ok = codegen_ok and data.get("codegen_ok", True)
        copy_bw = copy_bw or data["copy_bw"]
        for row in data["rows"]:
            key = f"{row['kernel']}/{row['impl']}"
            if row.get("status") not in ("", None):
                rows_by_key[key] = row
                skip.add(key)
        if code == 0:
            break
        current = data.get("current")
        if current:
            kernel, peer = current.split("/")
            rows_by_key[current] = dict(kernel=kernel, size=args.size, impl=peer, status="failed",
                                        note=f"{death_note(code)} while this implementation ran")
            skip.add(current)
            print(f"\n== {current}: {death_note(code)}; going on in a new process", flush=True)
            remaining = names[names.index(kernel):]
        elif code == 3 and data["rows"]:
            print("\n== the CUDA context was lost; going on in a new process", flush=True)
            remaining = names[names.index(data["rows"][-1]["kernel"]):]
        else:
            print(f"\n== the benchmark process stopped: {death_note(code)}", flush=True)
            break
        if len(rows_by_key) == last_done:
            print("== no progress in the last process; stopping", flush=True)
            break
        last_done = len(rows_by_key)
    # Rows in kernel order, peers in column order.
    columns = CPU_PEER_COLUMNS if args.cpu_check else PEER_COLUMNS
    order = [p for p, _ in columns] + ["plait"]
    rows = sorted(rows_by_key.values(), key=lambda r: (names.index(r["kernel"]) if r["kernel"] in names else 99,
                                                       order.index(r["impl"]) if r["impl"] in order else 99))
    peer_columns = [(p, label) for p, label in columns if p in args.peers]
    report(args, lines, errors, copy_bw, rows, names, peer_columns, time.perf_counter() - started)
    if args.cpu_check:
        return 1 if not codegen_ok or any(r.get("status") == "failed" for r in rows) else 0
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.plait_preflight:
        return plait_preflight(args)
    if not (args.in_process or args.child_out):
        return supervise(args, argv)
    session, rows, names, peer_columns, codegen_ok, elapsed = run_benchmark(args)
    if args.child_out:
        Progress(args.child_out).write(session, rows, codegen_ok=codegen_ok)
        return 0 if session.context_alive() else 3
    report(args, session.lines, session.errors, session.copy_bw, rows, names, peer_columns, elapsed)
    if args.cpu_check:
        failed = [r for r in rows if r.get("status") == "failed"]
        return 1 if failed or not codegen_ok else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
