"""Kernels of tests/gpu/test_cuda_hoisted_temporaries.py: time loops whose
steps allocate scratch arrays, which transforms/hoist_allocations allocates
once before the loop so that the loop runs as one persistent kernel
(docs/cuda.md, "Time loops: persistent kernels"). KERNELS lists them with
the signatures the compile tests use."""

import numpy as np


def floyd_warshall(path):
    # NPBench's form: row k and column k are copied into two temporaries per step.
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


def smoothing_steps(a, T):
    # A user's scratch array, np.empty_like in every step.
    for t in range(T):
        tmp = np.empty_like(a)
        tmp[1:-1] = 0.5 * (a[:-2] + a[2:])
        a[1:-1] = tmp[1:-1]


def scaled_steps(a, T):
    # np.empty(n) of a local extent, read by the step's second statement.
    n = a.shape[0]
    for t in range(T):
        tmp = np.empty(n)
        tmp[:] = a * 0.5 + t
        a[:] = tmp + 1.0


def row_steps(A, out):
    # A worker's serial loop: its scratch row moves to the top of the worker's
    # body, one slice of the temporaries' buffer per worker as before.
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0.0
        for t in range(3):
            tmp = np.empty(A.shape[1])
            for j in range(A.shape[1]):
                tmp[j] = A[i, j] * t
            for j in range(A.shape[1]):
                s += tmp[j]
        out[i] = s


KERNELS = {
    "floyd_warshall": ["i32[:, ::1]", "f64[:, ::1]", "i64[:, :]"],
    "smoothing_steps": ["f64[::1], int", "f32[:], int"],
    "scaled_steps": ["f64[::1], int", "f32[:], int"],
    "row_steps": ["f64[:, ::1], f64[::1]", "f32[:, :], f32[::1]"],
}
