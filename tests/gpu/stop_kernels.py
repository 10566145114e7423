"""Kernels whose device code raises partway (test_cuda_errors_stop.py), run
with boundscheck=True. Each leaves the arrays in a state Python defines,
at least in part, once device code stops at its first error (docs/cuda.md,
"Errors on the device")."""

import math


def failing_step(a, c, b, idx, steps):
    """A time loop of two parallel loops, a persistent kernel where the
    sizes allow: step t reads b[idx[t] + i % 2], out of range in every
    iteration at the step where idx[t] is b's length. Python stops there
    before `a` or `c` changes, so both hold exactly the steps before."""
    for t in range(steps):
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] + b[idx[t] + i % 2]
        #pragma parallel for
        for i in range(c.shape[0]):
            c[i] = c[i] * 2.0


def failing_root_step(a, c, b, steps):
    """failing_step without bounds checks (its arrays may then live in
    registers): step t takes the square root of b[t] times 1 or 2, a math
    domain error in every iteration where b[t] is negative."""
    for t in range(steps):
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] + math.sqrt(b[t] * (1 + i % 2))
        #pragma parallel for
        for i in range(c.shape[0]):
            c[i] = c[i] * 2.0


def failing_scalar_step(a, d, steps):
    """A time loop whose step starts with a scalar that every thread of the
    persistent kernel computes alike: 10 // (d - t) divides by zero at step
    d, before that step's loop changes `a`."""
    for t in range(steps):
        k = 10 // (d - t)
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] + k


def failing_store_after_loop(a, idx, steps):
    """A time loop whose element store outside the parallel loop (one GPU
    thread, a launch of its own at each step) is out of range at the step
    where idx[t] is a's length: the launches after it do nothing."""
    for t in range(steps):
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] + 1.0
        a[idx[t]] = -1.0


def prefix_sums_until_negative(m, out):
    """Each row's running sum of square roots, stored as it goes: a serial
    loop in one thread per row, which stops at the row's first negative
    element (math domain error: that element and the rest of the row are
    not stored)."""
    #pragma parallel for
    for i in range(m.shape[0]):
        s = 0.0
        for j in range(m.shape[1]):
            s = s + math.sqrt(m[i, j])
            out[i, j] = s


def serial_prefix_until_negative(a, out):
    """The same in one GPU thread (statements outside parallel loops)."""
    s = 0.0
    for j in range(a.shape[0]):
        s = s + math.sqrt(a[j])
        out[j] = s


def grow_until(a, d, limit):
    """A host loop whose condition reads the GPU's memory: the parallel
    loop's error (a negative element of d) must stop it; the stopped
    launches no longer change a[0], on which the condition would spin."""
    rounds = 0
    while a[0] < limit:
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] + math.sqrt(d[i])
        rounds += 1
    return rounds


def row_sums_of_roots(m, out):
    """A team of threads per row (the sum is spread over them), which
    finishes its row after an error: a row without a negative element is
    either done right or not at all."""
    #pragma parallel for
    for i in range(m.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for j in range(m.shape[1]):
            s += math.sqrt(m[i, j])
        out[i] = s


def device_error_then_host_error(a, d, empty):
    """A parallel loop's error on the device (ValueError: a negative element
    of d), then a host-side error (ZeroDivisionError: empty has no elements)
    while the host runs ahead of the GPU: Python raises the first, and so
    must the call."""
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] = math.sqrt(d[i])
    return 1 // empty.shape[0]


KERNELS = {
    "failing_step": ["f64[::1], f64[::1], f64[::1], i64[::1], int"],
    "failing_root_step": ["f64[::1], f64[::1], f64[::1], int"],
    "failing_scalar_step": ["f64[::1], int, int"],
    "failing_store_after_loop": ["f64[::1], i64[::1], int"],
    "prefix_sums_until_negative": ["f64[:, ::1], f64[:, ::1]"],
    "serial_prefix_until_negative": ["f64[::1], f64[::1]"],
    "grow_until": ["f64[::1], f64[::1], float"],
    "row_sums_of_roots": ["f64[:, ::1], f64[::1]"],
    "device_error_then_host_error": ["f64[::1], f64[::1], f64[::1]"],
}
