"""Kernels of tests/gpu/test_cuda_pragma_sizes.py: array statements whose
sliced pragmas give sizes (docs/cuda.md, "Sizes from the pragmas"):
single_block, le(N) and block(N) on a dimension spread over a team of
threads, block(N) on a parallel dimension, and sizes that a kernel does not
use. KERNELS lists their signatures for the compile tests."""

import numpy as np


def softmax_single_block(x, out):
    M, N = x.shape
    #pragma parallel for
    for i in range(M):
        #pragma :N=>single_block,reduce(max)
        m = np.max(x[i, :N])
        #pragma :N=>single_block
        e = np.exp(x[i, :N] - m)
        #pragma :N=>single_block,reduce(sum)
        s = np.sum(e[:N])
        #pragma :N=>single_block
        out[i, :N] = e[:N] / s


def row_sums_single_block(x, y):
    M, N = x.shape
    #pragma :M=>parallel :N=>single_block,reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)


def row_sums_at_most_512(x, y):
    M, N = x.shape
    #pragma :M=>parallel :N=>le(512),reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)


def row_sums_in_strips_of_8(n, x, y):
    #pragma parallel for
    for i in range(x.shape[0]):
        #pragma :n=>block(8),reduce(sum)
        y[i] = np.sum(x[i, :n])


def row_sums_in_strips_of_64(x, y):
    M, N = x.shape
    #pragma :M=>parallel :N=>block(64),reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)


def triangle_at_most_256(x, out):
    n = x.shape[0]
    #pragma parallel for
    for i in range(n):
        #pragma :i+1=>le(256)
        out[i, :i + 1] = x[i, :i + 1] * 2.0 + 1.0


def csr_row_sums_at_most_64(rowptr, vals, y):
    # The rows' lengths are not known before the launch: without the pragma
    # a worker is one thread.
    #pragma parallel for
    for i in range(y.shape[0]):
        #pragma rowptr[i]:rowptr[i+1]=>le(64),reduce(sum)
        y[i] = np.sum(vals[rowptr[i]:rowptr[i + 1]])


def vector_add_blocks_of_128(a, b, c):
    n = a.shape[0]
    #pragma :n=>parallel,block(128)
    c[:n] = a[:n] + b[:n]


def scaled_rows_blocks_of_64(x, out):
    M, N = x.shape
    #pragma :M=>parallel,block(64) :N=>parallel
    out[:M, :N] = x[:M, :N] * 3.0


def sizes_not_used(x, y):
    # le(N) on a parallel dimension; single_block on a loop of a worker that
    # is one thread (a statement writes y[i] and may leave the iteration).
    M, N = x.shape
    #pragma :M=>parallel,le(100) :N=>reduce(sum)
    y[:M] = np.sum(x[:M, :N], axis=1)
    #pragma parallel for
    for i in range(M):
        if y[i] < 0.0:
            y[i] = 0.0
            continue
        #pragma :N=>single_block
        x[i, :N] = x[i, :N] * 2.0


KERNELS = {
    "softmax_single_block": ["f32[:, ::1], f32[:, ::1]", "f64[:, :], f64[:, :]"],
    "row_sums_single_block": ["f32[:, ::1], f32[::1]"],
    "row_sums_at_most_512": ["f32[:, ::1], f32[::1]", "f64[:, :], f64[:]"],
    "row_sums_in_strips_of_8": ["int, f64[:, ::1], f64[::1]"],
    "row_sums_in_strips_of_64": ["f32[:, ::1], f32[::1]"],
    "triangle_at_most_256": ["f32[:, ::1], f32[:, ::1]"],
    "csr_row_sums_at_most_64": ["i64[::1], f64[::1], f64[::1]", "i32[::1], f32[::1], f32[::1]"],
    "vector_add_blocks_of_128": ["f32[::1], f32[::1], f32[::1]"],
    "scaled_rows_blocks_of_64": ["f64[:, ::1], f64[:, ::1]"],
    "sizes_not_used": ["f64[:, ::1], f64[::1]"],
}
