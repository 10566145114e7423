"""Kernels of tests/gpu/test_cuda_row_groups.py: team workers whose spread
loops take groups of consecutive iterations with one access per group
(docs/cuda.md, "Vector accesses in teams"), and whose later loops read a
value an earlier loop kept in registers ("Values kept in registers"), next
to kernels where such a value must be computed again. KERNELS lists their
signatures for the compile tests."""

import numpy as np


def loop_softmax(x, out):
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


def two_row_dots(alpha, beta, a, b, x, y):
    #pragma parallel for
    for i in range(a.shape[0]):
        t = 0.0
        s = 0.0
        #pragma simd reduction(+: t, s)
        for j in range(a.shape[1]):
            t += a[i, j] * x[j]
            s += b[i, j] * x[j]
        y[i] = alpha * t + beta * s


def shift_changes_between_loops(x, out):
    # The same text `np.exp(x[i, j] - m)` in both loops, but m changes in
    # between: the second loop must compute it again.
    #pragma parallel for
    for i in range(x.shape[0]):
        m = 0.5
        s = 0.0
        #pragma simd reduction(+: s)
        for j1 in range(x.shape[1]):
            s += np.exp(x[i, j1] - m)
        m = s / (x.shape[1] + 1)
        #pragma simd
        for j2 in range(x.shape[1]):
            out[i, j2] = np.exp(x[i, j2] - m)


def row_rewritten_between_loops(x, out):
    # The row changes between the loops: `np.exp(x[i, j])` differs.
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for j1 in range(x.shape[1]):
            s += np.exp(x[i, j1])
        #pragma simd
        for j2 in range(x.shape[1]):
            x[i, j2] = x[i, j2] * 0.5
        #pragma simd
        for j3 in range(x.shape[1]):
            out[i, j3] = np.exp(x[i, j3]) / s


def conditional_first_value(x, out):
    # The first loop computes `np.exp(x[i, j])` only for positive elements:
    # the second computes it itself.
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for j1 in range(x.shape[1]):
            s += np.exp(x[i, j1]) if x[i, j1] > 0 else 1.0
        #pragma simd
        for j2 in range(x.shape[1]):
            out[i, j2] = np.exp(x[i, j2]) + s


def log_reused_twice(x, out, out2):
    # One value, computed in the first loop, read by two later loops.
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for j1 in range(x.shape[1]):
            s += np.log(1.0 + x[i, j1] * x[i, j1])
        #pragma simd
        for j2 in range(x.shape[1]):
            out[i, j2] = np.log(1.0 + x[i, j2] * x[i, j2]) / s
        #pragma simd
        for j3 in range(x.shape[1]):
            out2[i, j3] = np.log(1.0 + x[i, j3] * x[i, j3]) - s


def store_read_back(x, out, out2):
    # A store read back in the same iteration (it cannot wait for the end of
    # the group), then a store that can; out and out2 may be one array.
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for j1 in range(x.shape[1]):
            s += x[i, j1] * x[i, j1]
        #pragma simd
        for j2 in range(x.shape[1]):
            out[i, j2] = x[i, j2] / (s + 1.0)
            out2[i, j2] = out[i, j2] * 2.0 + x[i, j2]


def every_other_column(x, out):
    # Steps of 2 and a start of 1: groups, element by element. (The row's
    # scale keeps the worker a team: a simd loop alone in the body of a
    # parallel loop joins its nest instead, test_cuda_batched.py.)
    #pragma parallel for
    for i in range(x.shape[0]):
        scale = 3.0 + 0.5 * i
        #pragma simd
        for j in range(1, x.shape[1], 2):
            out[i, j] = x[i, j] * scale + x[i, j - 1]


def small_int_row_sums(threshold, x, counts, sums):
    #pragma parallel for
    for i in range(x.shape[0]):
        c = 0
        t = 0
        #pragma simd reduction(+: c, t)
        for j in range(x.shape[1]):
            c += 1 if x[i, j] > threshold else 0
            t += int(x[i, j])
        counts[i] = c
        sums[i] = t


def row_times_matrix(a, b, c):
    # One thread per element of c when there are many (the cost rule's
    # other side), teams when few: a[i, k] in groups either way.
    #pragma parallel for
    for i in range(c.shape[0]):
        #pragma parallel for
        for j in range(c.shape[1]):
            acc = 0.0
            #pragma simd reduction(+: acc)
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            # The constant term keeps the nest off cuBLAS
            # (transforms/offload_matmul): these tests are about the loops.
            c[i, j] = acc + 1.0


def lower_rank_update(alpha, a, c):
    # A spread loop inside a serial loop all threads run in step, over a
    # triangle: C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k] + 1 (the
    # constant term keeps the nest off cuBLAS: these tests are about the loops).
    #pragma parallel for
    for i in range(c.shape[0]):
        for k in range(a.shape[1]):
            #pragma simd
            for j in range(i + 1):
                c[i, j] += alpha * a[i, k] * a[j, k] + 1.0


KERNELS = {
    "loop_softmax": ["f32[:, ::1], f32[:, ::1]", "f64[:, ::1], f64[:, ::1]", "f32[:, :], f32[:, :]"],
    "two_row_dots": ["float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]",
                     "float, float, f32[:, ::1], f32[:, ::1], f32[::1], f32[::1]"],
    "shift_changes_between_loops": ["f32[:, ::1], f32[:, ::1]"],
    "row_rewritten_between_loops": ["f64[:, ::1], f64[:, ::1]"],
    "conditional_first_value": ["f64[:, ::1], f64[:, ::1]"],
    "log_reused_twice": ["f32[:, ::1], f32[:, ::1], f32[:, ::1]"],
    "store_read_back": ["f32[:, ::1], f32[:, ::1], f32[:, ::1]", "f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "every_other_column": ["f32[:, ::1], f32[:, ::1]"],
    "small_int_row_sums": ["int, u8[:, ::1], i64[::1], i64[::1]", "int, i32[:, ::1], i64[::1], i64[::1]",
                           "int, i16[:, ::1], i64[::1], i64[::1]"],
    "row_times_matrix": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "lower_rank_update": ["float, f64[:, ::1], f64[:, ::1]"],
}
