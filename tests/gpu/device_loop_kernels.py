"""Kernels of the tests of serial loops that run on the device as one team
(docs/cuda.md, "Serial loops on the device"): tests/gpu/test_cuda_device_loops.py
compiles them with nvcc and NVRTC everywhere and runs them on the GPU against
the undecorated functions. KERNELS lists them with the signatures the compile
tests use."""

import numpy as np


def trisolv(L, x, b):
    # Forward substitution: step i reads the x[:i] of earlier steps. By the
    # reciprocal of the diagonal, so that the loop stays a loop (divided,
    # it is a cuBLAS trsv: tests/gpu/test_cuda_triangles.py).
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) * (1.0 / L[i, i])


def cholesky(A):
    # In place, the lower triangle: every step reads the elements written
    # before it. By the reciprocal, as trisolv (divided, each row is a
    # cuBLAS trsv).
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] *= 1.0 / A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def running_maxima(x, out):
    # A max-reduction and an array statement per step; the step's scalar is its own.
    for i in range(out.shape[0]):
        m = np.max(x[: i + 1])
        out[i] = m
        x[i + 1:] -= 0.5 * m


def sum_read_after(x, out):
    # `s` is read after the loop: the loop stays on the host, launching per step.
    s = np.float64(0.0)
    for i in range(out.shape[0]):
        s = np.sum(x[i:])
        out[i] = s
    return s


def int_prefix_counts(x, out):
    # Integer reductions over a growing prefix.
    for i in range(out.shape[0]):
        out[i] = np.sum(x[:i] > x[i])


def gramschmidt(A):
    # Modified Gram-Schmidt (NPBench's): each step a norm (a reduction), a
    # column, then a parallel loop of the user's over the later columns, each
    # a dot product and an update; the persistent rule refuses the step (its
    # reduction and element statements), a team of the device takes it.
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        R[k, k] = np.sqrt(np.dot(A[:, k], A[:, k]))
        Q[:, k] = A[:, k] / R[k, k]
        #pragma parallel for
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


KERNELS = {
    "trisolv": ["f64[:, ::1], f64[::1], f64[::1]", "f32[:, :], f32[:], f32[:]"],
    "cholesky": ["f64[:, ::1]"],
    "running_maxima": ["f64[::1], f64[::1]"],
    "sum_read_after": ["f64[::1], f64[::1]"],
    "int_prefix_counts": ["i64[::1], i64[::1]"],
    "gramschmidt": ["f64[:, ::1]", "f32[:, :]"],
}
