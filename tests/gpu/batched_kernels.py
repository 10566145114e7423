"""Kernels of the tests of straight-line one-thread workers that run several
iterations per thread (docs/cuda.md, "Several iterations per thread"):
tests/gpu/test_cuda_batched.py compiles them with nvcc and NVRTC everywhere
and runs them on the GPU against the undecorated functions. KERNELS lists
them with the signatures the compile tests use."""

import math


def vadd(a, b, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


def saxpy(alpha, x, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        y[i] = alpha * x[i] + y[i]


def two_stores(a, b, out, out2):
    # The second store reads what the first stored, through `out`; called
    # with arguments that are the same array, each iteration must still see
    # its own first store.
    #pragma parallel for
    for i in range(a.shape[0]):
        t = a[i] * 2
        t = t - b[i]
        out[i] = t + b[i] * 0.5
        out2[i] = out[i] * 3 - a[i]


def shifted_view(x, y):
    # Called with y = x[1:]: y[i] and x[i + 1] are one element.
    #pragma parallel for
    for i in range(y.shape[0]):
        y[i] = x[i + 1] * 2 + 1


def unshifted_view(x, y):
    # Called with x = base[:-1], y = base[1:]: x[i] and y[i - 1] are one element.
    #pragma parallel for
    for i in range(1, x.shape[0]):
        x[i] = y[i - 1] * 0.5 - 3


def scatter(idx, x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        out[idx[i]] = x[i] * 2


def compare_into_flags(a, b, flags):
    #pragma parallel for
    for i in range(a.shape[0]):
        flags[i] = a[i] > b[i]


def stencil_2d(a, b):
    n = a.shape[0]
    m = a.shape[1]
    #pragma parallel for
    for i in range(1, n - 1):
        #pragma parallel for
        for j in range(1, m - 1):
            b[i, j] = 0.2 * (a[i, j] + a[i, j - 1] + a[i, j + 1] + a[i + 1, j] + a[i - 1, j])


def fdtd_step(ex, ey, hz):
    nx = ex.shape[0]
    ny = ex.shape[1]
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


def array_stencil(a, b):
    # An array statement: a parallel loop over rows around a simd loop,
    # which the CUDA target collapses into one nest.
    b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])


def strided_columns(x, out):
    # A simd loop alone in a parallel loop's body, start 1 and step 2: one
    # collapsed nest on CUDA.
    #pragma parallel for
    for i in range(x.shape[0]):
        #pragma simd
        for j in range(1, x.shape[1], 2):
            out[i, j] = x[i, j] * 3.0 + x[i, j - 1]


def add_into_3d(a, out):
    # Three collapsed levels, an update in place: an iteration run twice
    # would add twice.
    #pragma parallel for
    for i in range(out.shape[0]):
        #pragma parallel for
        for j in range(out.shape[1]):
            #pragma parallel for
            for k in range(1, out.shape[2]):
                out[i, j, k] += 0.5 * a[i, j, k - 1]


def strided_step(x, out):
    # Every other iteration: the loop step is 2.
    #pragma parallel for
    for i in range(0, x.shape[0], 2):
        out[i] = x[i] * x[i]


def offset_store(x, out, k):
    # With boundscheck, an index past the end is an IndexError.
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i + k] = x[i]


def checked_sqrt(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])


def with_branch(x, out):
    # An `if` statement: one iteration per thread.
    #pragma parallel for
    for i in range(x.shape[0]):
        if x[i] > 0:
            out[i] = x[i]


KERNELS = {
    "vadd": ["f32[::1], f32[::1], f32[::1]", "f64[::1], f64[::1], f64[::1]", "i32[::1], i32[::1], i32[::1]",
             "u8[::1], u8[::1], u8[::1]", "f32[:], f32[:], f32[:]"],
    "saxpy": ["float, f32[::1], f32[::1]", "float, f64[::1], f64[::1]", "float, f64[:], f64[:]"],
    "two_stores": ["f64[::1], f64[::1], f64[::1], f64[::1]", "f32[:], f32[:], f32[:], f32[:]"],
    "shifted_view": ["f32[::1], f32[::1]", "i32[:], i32[:]"],
    "unshifted_view": ["f64[::1], f64[::1]"],
    "scatter": ["i64[::1], f64[::1], f64[::1]"],
    "compare_into_flags": ["f64[::1], f64[::1], b1[::1]"],
    "stencil_2d": ["f64[:, ::1], f64[:, ::1]", "f32[:, :], f32[:, :]"],
    "fdtd_step": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "add_into_3d": ["f64[:, :, ::1], f64[:, :, :]"],
    "array_stencil": ["f64[:, ::1], f64[:, ::1]", "f32[:, :], f32[:, :]"],
    "strided_columns": ["f32[:, ::1], f32[:, ::1]"],
    "strided_step": ["f32[::1], f32[::1]"],
    "offset_store": ["f64[::1], f64[::1], int"],
    "checked_sqrt": ["f64[::1], f64[::1]"],
    "with_branch": ["f64[::1], f64[::1]"],
}
