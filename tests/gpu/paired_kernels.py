"""Kernels of the tests of spread loops whose threads run two iterations at
once (docs/cuda.md, "Two iterations per thread"): tests/gpu/test_cuda_pairs.py
compiles them with nvcc and NVRTC everywhere, runs the barrier-free ones on
the host thread after thread, and runs all of them on the GPU against the
undecorated functions. KERNELS lists them with the signatures the compile
tests use."""

import numpy as np


def row_products(A, B, out):
    # out = A @ B + 1, a team per row: the column loop is spread, its dot
    # product is the loop both iterations of a thread run as one. (The
    # constant term keeps the nest off cuBLAS, transforms/offload_matmul:
    # these tests are about the loops.)
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            out[i, j] = s + 1.0


def int_row_products(A, B, out):
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            out[i, j] = s


def covariance(M, float_n, data):
    # NPBench's covariance: the row's product inside the broadcast versions
    # of the slice assignment, mirrored through a temporary. (The constant
    # term keeps the product off cuBLAS, transforms/offload_matmul: these
    # tests are about the loops.)
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    #pragma parallel for
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0) + 1.0
        cov[i:M, i] = cov[i, i:M]
    return cov


def mixed_body(A, w, out):
    # Statements before and after two fused loops (one declares a scalar in
    # its body, the second reads the first's result), and a loop whose trip
    # count follows the column, which each iteration runs on its own.
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            t = A[i, j] * 2.0
            s = 0.0
            for k in range(w.shape[0]):
                y = w[k] * t
                s += y * A[i, j]
            c = 0.0
            for q in range(j % 3):
                c += s * (q + 1)
            m = s
            for k2 in range(1, w.shape[0], 2):
                m = max(m, w[k2] + c)
            out[i, j] = m + t


def column_products(A, B, out):
    # Accesses coalesced across the parallel loop (out[j, i], B[k, i]): one
    # thread per iteration when there are many, each still running two
    # iterations of the j loop at once; a team per iteration when few.
    #pragma parallel for
    for i in range(B.shape[1]):
        for j in range(A.shape[0]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[j, k] * B[k, i]
            out[j, i] = s


def triangle_products(A, out):
    # The inner loop's trip count follows the column: no loop for both, so
    # the iterations run one at a time.
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s = 0.0
            for k in range(j + 1):
                s += A[i, k]
            out[i, j] = s


def reused_variable(A, B, out):
    # Two loops over `k`: a loop for both would share `k`, which the other
    # loop assigns too, so the iterations run one at a time.
    #pragma parallel for
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            for k in range(B.shape[0]):
                s -= B[k, j]
            out[i, j] = s


KERNELS = {
    "row_products": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]", "f32[:, ::1], f32[:, ::1], f32[:, ::1]",
                     "f64[:, :], f64[:, :], f64[:, :]"],
    "int_row_products": ["i64[:, ::1], i64[:, ::1], i64[:, ::1]", "i32[:, ::1], i32[:, ::1], i32[:, ::1]"],
    "covariance": ["int, f64, f64[:, ::1]", "int, f64, f32[:, ::1]"],
    "mixed_body": ["f64[:, ::1], f64[::1], f64[:, ::1]"],
    "column_products": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "triangle_products": ["f64[:, ::1], f64[:, ::1]"],
    "reused_variable": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
}
