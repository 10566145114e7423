"""Kernels of tests/gpu/test_cuda_overlap.py: array statements that write one
argument and read another, which a caller may pass as views of one array.
KERNELS lists them with the signatures the compile tests use."""

import numpy as np


def add_one(a, b):
    a[:] = b + 1.0


def in_place_add(a, b):
    a += b


def row_sums(out, A):
    out[:] = np.sum(A, axis=1)


def product(C, A, B):
    C[:] = A @ B


def gemm(C, A, B, alpha, beta):
    C[:] = alpha * A @ B + beta * C


def smooth_steps(a, b, steps):
    for _ in range(steps):
        a[1:-1] = 0.25 * (b[:-2] + 2.0 * b[1:-1] + b[2:])


KERNELS = {
    "add_one": ["f64[::1], f64[::1]", "f32[:], f32[:]", "f64[:, ::1], f64[:, :]"],
    "in_place_add": ["i64[::1], i64[::1]"],
    "row_sums": ["f64[:], f64[:, ::1]"],
    "product": ["f64[:, :], f64[:, :], f64[:, :]"],
    "gemm": ["f64[:, ::1], f64[:, ::1], f64[:, ::1], float, float"],
    "smooth_steps": ["f64[::1], f64[::1], int"],
}
