"""NumPy's one-argument ufuncs in vector loops call glibc's vector math
(libmvec through plait_runtime.h's plait_vm_* declarations); math.* calls keep
the scalar C library, as Python's math module does.

The vector variants are within a few ulp of the scalar functions, as NumPy's
own SIMD loops are, so these tests compare with a tolerance of 8 ulp (relative
1e-15 for float64, 1e-6 for float32)."""

import math
import platform

import numpy as np
import pytest

import plait
from oracle import FLOAT_DTYPES, check, dtype_id, rng_for

ULP_RTOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 2e-15}

UFUNCS = {
    "exp": (np.exp, (-80.0, 80.0)),
    "log": (np.log, (1e-30, 1e30)),
    "log2": (np.log2, (1e-30, 1e30)),
    "log10": (np.log10, (1e-30, 1e30)),
    "sin": (np.sin, (-100.0, 100.0)),
    "cos": (np.cos, (-100.0, 100.0)),
    "tan": (np.tan, (-1.5, 1.5)),
    "tanh": (np.tanh, (-20.0, 20.0)),
    "arcsin": (np.arcsin, (-1.0, 1.0)),
    "arccos": (np.arccos, (-1.0, 1.0)),
    "arctan": (np.arctan, (-1e6, 1e6)),
    "sinh": (np.sinh, (-80.0, 80.0)),
    "cosh": (np.cosh, (-80.0, 80.0)),
}


def apply_exp(x):
    return np.exp(x)


def apply_log(x):
    return np.log(x)


def apply_log2(x):
    return np.log2(x)


def apply_log10(x):
    return np.log10(x)


def apply_sin(x):
    return np.sin(x)


def apply_cos(x):
    return np.cos(x)


def apply_tan(x):
    return np.tan(x)


def apply_tanh(x):
    return np.tanh(x)


def apply_arcsin(x):
    return np.arcsin(x)


def apply_arccos(x):
    return np.arccos(x)


def apply_arctan(x):
    return np.arctan(x)


def apply_sinh(x):
    return np.sinh(x)


def apply_cosh(x):
    return np.cosh(x)


KERNELS = {name: plait.jit(globals()[f"apply_{name}"]) for name in UFUNCS}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(UFUNCS))
@pytest.mark.parametrize("size", [0, 1, 7, 1001])
def test_ufunc_matches_numpy(name, dtype, size):
    _, (low, high) = UFUNCS[name]
    x = rng_for(name, dtype, size).uniform(low, high, size).astype(dtype)
    check(KERNELS[name], x, rtol=ULP_RTOL[np.dtype(dtype)])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_special_values(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 88.8, -104.0, 710.0, -746.0], dtype=dtype)
    with np.errstate(all="ignore"):
        for name in ("exp", "sin", "cos", "tanh", "sinh", "cosh", "arctan"):
            check(KERNELS[name], x, rtol=ULP_RTOL[np.dtype(dtype)])


@pytest.mark.skipif(platform.machine() != "x86_64", reason="libmvec is glibc's x86-64 vector math library")
def test_vector_loop_calls_vector_math():
    kernel = plait.jit(apply_exp)
    kernel(np.linspace(-1.0, 1.0, 64, dtype=np.float32))
    assert "plait_vm_expf(" in kernel.inspect_source().split("plait_kernel_entry")[-1]


def python_math_exp(x, out):
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])


def test_math_module_keeps_the_scalar_function():
    kernel = plait.jit(python_math_exp)
    x = rng_for("math.exp", np.float64, 257).uniform(-50.0, 50.0, 257)
    check(kernel, x, np.zeros_like(x))  # exact: the same C library function as Python's math.exp
    assert "plait_vm_" not in kernel.inspect_source().split("plait_kernel_entry")[-1]
