"""Kernels of the CUDA tests: each runs on the GPU (tests/gpu/test_cuda_run.py)
and its generated CUDA C++ is compiled with nvcc and NVRTC for sm_90 on every
machine (tests/gpu/test_cuda_codegen.py). KERNELS lists them with the
signatures the compile tests use."""

import math

import numpy as np


def vector_add(a, b, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


def saxpy(alpha, x, y):
    #pragma parallel for simd
    for i in range(x.shape[0]):
        y[i] = alpha * x[i] + y[i]


def dot(x, y):
    total = 0.0
    #pragma parallel for reduction(+: total)
    for i in range(x.shape[0]):
        total += x[i] * y[i]
    return total


def int_sum(x):
    total = 0
    #pragma parallel for
    for i in range(x.shape[0]):
        total += x[i]
    return total


def min_max(x):
    lo = x[0]
    hi = x[0]
    #pragma parallel for
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return lo, hi


def product(x):
    p = 1.0
    #pragma parallel for
    for i in range(x.shape[0]):
        p *= x[i]
    return p


def histogram(values, bins):
    #pragma parallel for
    for i in range(values.shape[0]):
        k = values[i] % bins.shape[0]
        #pragma atomic
        bins[k] += 1


def atomic_ops(x, acc):
    #pragma parallel for
    for i in range(x.shape[0]):
        #pragma atomic
        acc[0] += x[i]
        #pragma atomic
        acc[1] = max(acc[1], x[i])
        #pragma atomic
        acc[2] = min(acc[2], x[i])


def matmul(a, b, c):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma parallel for
        for j in range(b.shape[1]):
            s = 0.0
            #pragma simd
            for k in range(a.shape[1]):
                s += a[i, k] * b[k, j]
            c[i, j] = s



def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def gemm_transposed_loops(A, B, C):
    # C = A.T @ B.T written as loops, with the operands in the other order.
    #pragma parallel for
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            t = 0.0
            for r in range(A.shape[0]):
                t = B[j, r] * A[r, i] + t
            C[i, j] = t


def gemm_minus(s, C, A, B):
    C[:] = C - s * (A @ B)


def matmul_new(A, B):
    return A @ B


def matmul_divided(C, A, B):
    # A division by a scalar: the library multiplies by its reciprocal.
    C[:] = A @ B / 3.0


def matmul_accumulate(C, A, B):
    C += A @ B

def stencil_steps(a, b, steps):
    n = a.shape[0]
    for t in range(steps):
        #pragma parallel for
        for i in range(1, n - 1):
            b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1])
        #pragma parallel for
        for i in range(1, n - 1):
            a[i] = 0.33333 * (b[i - 1] + b[i] + b[i + 1])


def scaled(x, factor):
    out = np.empty(x.shape[0], dtype=x.dtype)
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i] = x[i] * factor
    return out


def filled(n):
    out = np.full((n, 3), 2.5)
    ones = np.ones(n, dtype=np.int32)
    zeros = np.zeros(n)
    #pragma parallel for
    for i in range(n):
        out[i, 1] = out[i, 0] + ones[i] + zeros[i]
    return out


def serial_prefix(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
    return acc


def first_negative(x):
    for i in range(x.shape[0]):
        if x[i] < 0:
            return i
    return -1


def math_functions(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        v = abs(x[i])
        out[i] = math.sqrt(v) + np.exp(-v) + np.sin(v) * np.cos(v) + np.floor(v) + round(v)


def python_math_errors(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i] = math.log(x[i])


def int_arithmetic(a, b, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[i] // b[i] + a[i] % b[i] + (a[i] << 2) - (a[i] >> 1) + (a[i] ^ b[i])


def strided_2d(m, out):
    #pragma parallel for
    for i in range(m.shape[0]):
        s = 0.0
        for j in range(m.shape[1]):
            s += m[i, j]
        out[i] = s


def bool_any(flags):
    found = False
    #pragma parallel for
    for i in range(flags.shape[0]):
        found = max(found, flags[i])
    return found


def loop_variable_after(x):
    #pragma parallel for
    for i in range(x.shape[0]):
        x[i] = i
    return i


def jacobi_1d(tsteps, a, b):
    for t in range(tsteps):
        #pragma parallel for
        for i in range(1, a.shape[0] - 1):
            b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1])
        #pragma parallel for
        for i in range(1, a.shape[0] - 1):
            a[i] = 0.33333 * (b[i - 1] + b[i] + b[i + 1])


def fdtd_step(ex, ey, hz):
    nx = hz.shape[0]
    ny = hz.shape[1]
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


def while_converge(x, tol):
    err = 1.0
    steps = 0
    while err > tol:
        err = 0.0
        #pragma parallel for
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5
            err = max(err, abs(x[i]))
        steps += 1
    return steps


def divide_python_scalars(x, n):
    #pragma parallel for
    for i in range(x.shape[0]):
        x[i] = x[i] + 1 / n


def doubled_stepped(x, lo, hi, step, out):
    #pragma parallel for
    for i in range(lo, hi, step):
        out[i] = 2.0 * x[i]


def offsets_by_steps(x, step, out):
    for t in range(0, 5, step):
        #pragma parallel for
        for i in range(x.shape[0]):
            out[i] = out[i] + x[i] * t


def gesummv(alpha, beta, a, b, x, y):
    #pragma parallel for
    for i in range(a.shape[0]):
        t = 0.0
        s = 0.0
        for j in range(a.shape[1]):
            t += a[i, j] * x[j]
            s += b[i, j] * x[j]
        y[i] = alpha * t + beta * s


def shifted_copy(x, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = x[i + 1]


def get_item(x, i):
    return x[i]


def add_python_int(x, k):
    #pragma parallel for
    for i in range(x.shape[0]):
        x[i] = x[i] + k


# ---- workers that become teams of threads (docs/cuda.md, "Teams of threads")

def row_softmax(x, out):
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


def row_dots(alpha, beta, a, b, x, y):
    #pragma parallel for
    for i in range(a.shape[0]):
        t = 0.0
        s = 0.0
        #pragma simd reduction(+: t, s)
        for j in range(a.shape[1]):
            t += a[i, j] * x[j]
            s += b[i, j] * x[j]
        y[i] = alpha * t + beta * s


def nested_sums(m):
    grand = 0.0
    #pragma parallel for reduction(+: grand)
    for i in range(m.shape[0]):
        row = 0.0
        #pragma simd reduction(+: row)
        for j in range(m.shape[1]):
            row += m[i, j] * m[i, j]
        grand += math.sqrt(row)
    return grand


def row_int_extremes(m, lo, hi):
    #pragma parallel for
    for i in range(m.shape[0]):
        small = m[i, 0]
        big = m[i, 0]
        #pragma simd reduction(min: small) reduction(max: big)
        for j in range(m.shape[1]):
            small = min(small, m[i, j])
            big = max(big, m[i, j])
        lo[i] = small
        hi[i] = big


def center_rows(x, out, means):
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for j in range(x.shape[1]):
            s += x[i, j]
        mean = s / x.shape[1]
        means[i] = mean
        #pragma simd
        for j2 in range(x.shape[1]):
            out[i, j2] = x[i, j2] - mean


def flip_first_then_scale(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        first = x[i, 0]
        if first < 0.0:
            x[i, 0] = -first
            first = -first
        #pragma simd
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * first


def scale_rows(x, factors, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        f = factors[i]
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * f


def csr_matvec(rowptr, cols, vals, x, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        acc = 0.0
        #pragma simd reduction(+: acc)
        for k in range(rowptr[i], rowptr[i + 1]):
            acc += vals[k] * x[cols[k]]
        y[i] = acc


def csr_row_max(rowptr, vals, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        m = -np.inf
        #pragma simd reduction(max: m)
        for k in range(rowptr[i], rowptr[i + 1]):
            m = max(m, vals[k])
        out[i] = m


def csr_normalise_rows(rowptr, vals, sums, out):
    #pragma parallel for
    for i in range(sums.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for k in range(rowptr[i], rowptr[i + 1]):
            s += vals[k]
        sums[i] = s
        #pragma simd
        for k2 in range(rowptr[i], rowptr[i + 1]):
            out[k2] = vals[k2] / s


def float_histogram(x, bins):
    #pragma parallel for
    for i in range(x.shape[0]):
        k = int(x[i] * bins.shape[0])
        if k >= bins.shape[0]:
            k = bins.shape[0] - 1
        #pragma atomic
        bins[k] += 1


def jacobi_2d_steps(tsteps, a, b):
    n = a.shape[0]
    m = a.shape[1]
    for t in range(1, tsteps):
        #pragma parallel for
        for i in range(1, n - 1):
            #pragma parallel for
            for j in range(1, m - 1):
                b[i, j] = 0.2 * (a[i, j] + a[i, j - 1] + a[i, j + 1] + a[i + 1, j] + a[i - 1, j])
        #pragma parallel for
        for i in range(1, n - 1):
            #pragma parallel for
            for j in range(1, m - 1):
                a[i, j] = 0.2 * (b[i, j] + b[i, j - 1] + b[i, j + 1] + b[i + 1, j] + b[i - 1, j])


def heat_3d_steps(tsteps, a, b):
    n = a.shape[0]
    for t in range(1, tsteps):
        #pragma parallel for
        for i in range(1, n - 1):
            #pragma parallel for
            for j in range(1, n - 1):
                #pragma parallel for
                for k in range(1, n - 1):
                    b[i, j, k] = (0.125 * (a[i + 1, j, k] - 2.0 * a[i, j, k] + a[i - 1, j, k])
                                  + 0.125 * (a[i, j + 1, k] - 2.0 * a[i, j, k] + a[i, j - 1, k])
                                  + 0.125 * (a[i, j, k + 1] - 2.0 * a[i, j, k] + a[i, j, k - 1])
                                  + a[i, j, k])
        #pragma parallel for
        for i in range(1, n - 1):
            #pragma parallel for
            for j in range(1, n - 1):
                #pragma parallel for
                for k in range(1, n - 1):
                    a[i, j, k] = (0.125 * (b[i + 1, j, k] - 2.0 * b[i, j, k] + b[i - 1, j, k])
                                  + 0.125 * (b[i, j + 1, k] - 2.0 * b[i, j, k] + b[i, j - 1, k])
                                  + 0.125 * (b[i, j, k + 1] - 2.0 * b[i, j, k] + b[i, j, k - 1])
                                  + b[i, j, k])


def forward_substitution(l, x, b):
    """x = L^-1 b column by column: step t's loop runs over rows t+1..n-1."""
    n = x.shape[0]
    #pragma parallel for
    for i in range(n):
        x[i] = b[i]
    for t in range(n):
        #pragma parallel for
        for i in range(t, t + 1):
            x[i] = x[i] / l[i, i]
        #pragma parallel for
        for i in range(t + 1, n):
            x[i] = x[i] - l[i, t] * x[t]


def step_scalars(a, b, steps):
    """Scalars assigned in each step (no array element read) feed the parallel
    loops; the loop variable's last value is returned."""
    n = a.shape[0]
    t = -1
    for t in range(steps):
        w = 0.25 + 0.5 / (t + 1)
        lo = min(t, 2)
        #pragma parallel for
        for i in range(lo, n):
            b[i] = w * a[i] + (1.0 - w) * b[i]
        #pragma parallel for
        for i in range(n):
            a[i] = a[i] - 0.5 * b[n - 1 - i]
    return t


def aliasing_steps(a, b, steps):
    """Each iteration reads and writes only its own element, so `a` and `b`
    may be one array: the on-chip copies of a persistent kernel must not split
    it in two (the host checks that the arrays do not share memory)."""
    for t in range(steps):
        #pragma parallel for
        for i in range(a.shape[0]):
            b[i] = a[i] * 0.5 + t
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = b[i] - 1.0


def mixed_dtype_steps(x, y, counts, flags, steps):
    """Arrays of three element types, 2-D in either order, on chip together:
    float rows read at a neighbour, int32 counters, bool flags."""
    n = x.shape[0]
    m = x.shape[1]
    for t in range(steps):
        #pragma parallel for
        for i in range(n):
            #pragma parallel for
            for j in range(m):
                y[i, j] = 0.5 * (x[i, j] + x[(i + 1) % n, j]) - 0.1
        #pragma parallel for
        for i in range(n):
            #pragma parallel for
            for j in range(m):
                if y[i, j] > 0.0:
                    counts[i, j] += 1
                flags[i, j] = counts[i, j] % 2 == 1
                x[i, j] = y[i, j]


def shape_checked_steps(a, b, steps):
    """Array statements whose shapes are checked in each step: with `b`
    shorter than 3 elements the first step raises after updating `a`, which
    must then hold that step's values (the on-chip copies go back first)."""
    for t in range(steps):
        a[1:] = a[1:] * 0.5 + t
        b[:] = a[:3] + 1.0


def host_counted_steps(a, steps):
    """Refused: `count` is assigned in the time loop and read after it."""
    count = 0
    for t in range(steps):
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] * 0.5 + t
        count = count + 2
    return count


def element_scalar_steps(a, steps):
    """Refused: `s` is read from an array element outside the parallel loops."""
    for t in range(steps):
        s = a[0]
        #pragma parallel for
        for i in range(1, a.shape[0]):
            a[i] = a[i] + s


def fdtd_2d_slices(tmax, ex, ey, hz, fict):
    """NPBench's fdtd_2d: slice assignments (shape checks and broadcast
    versions around the loops) and a step scalar read from `fict`, which the
    time loop never writes."""
    for t in range(tmax):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def heat_3d_slices(tsteps, a, b):
    for t in range(1, tsteps):
        b[1:-1, 1:-1, 1:-1] = (0.125 * (a[2:, 1:-1, 1:-1] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1])
                               + 0.125 * (a[1:-1, 2:, 1:-1] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1])
                               + 0.125 * (a[1:-1, 1:-1, 2:] - 2.0 * a[1:-1, 1:-1, 1:-1] + a[1:-1, 1:-1, :-2])
                               + a[1:-1, 1:-1, 1:-1])
        a[1:-1, 1:-1, 1:-1] = (0.125 * (b[2:, 1:-1, 1:-1] - 2.0 * b[1:-1, 1:-1, 1:-1] + b[:-2, 1:-1, 1:-1])
                               + 0.125 * (b[1:-1, 2:, 1:-1] - 2.0 * b[1:-1, 1:-1, 1:-1] + b[1:-1, :-2, 1:-1])
                               + 0.125 * (b[1:-1, 1:-1, 2:] - 2.0 * b[1:-1, 1:-1, 1:-1] + b[1:-1, 1:-1, :-2])
                               + b[1:-1, 1:-1, 1:-1])


def normalised_steps(a, steps):
    """Refused: the step's reduction goes to the host."""
    for t in range(steps):
        total = 0.0
        #pragma parallel for reduction(+: total)
        for i in range(a.shape[0]):
            total += a[i]
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] - total / a.shape[0]


# ---- unsigned and 8/16-bit integers: NumPy 2 (NEP 50) promotion, wrap-around

def narrow_int_ops(a, b, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x // y
        out[i, 4] = x % y
        out[i, 5] = min(x, y)
        out[i, 6] = np.maximum(x, y)
        out[i, 7] = (x & y) | (x ^ 3)
        out[i, 8] = (x >> 1) + (y << 2)
        out[i, 9] = -x
        out[i, 10] = abs(x) * 3


def compare_mixed(x, y, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        if x[i] < y[i]:
            out[i] = 1
        elif x[i] == y[i]:
            out[i] = 2
        else:
            out[i] = 3


def conversions(x, f):
    return x.astype(np.uint32), x.astype(np.float64), f.astype(np.uint8), f.astype(np.uint32), \
        f.astype(np.int16), f.astype(np.uint64)


def add_scalar(x, s):
    out = np.empty_like(x)
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i] = x[i] + s
    return out


# ---- arrays allocated inside parallel loops (docs/cuda.md, "Temporary arrays")

def row_scaled_by_sum(x, out):
    # A team per row (the inner loops are contiguous along j) sharing `t`,
    # which the team fills with zeros first.
    #pragma parallel for
    for i in range(x.shape[0]):
        t = np.zeros(x.shape[1])
        #pragma simd
        for j in range(x.shape[1]):
            t[j] += x[i, j] * 2.0 + 1.0
        s = 0.0
        #pragma simd reduction(+: s)
        for j in range(x.shape[1]):
            s += t[j]
        #pragma simd
        for j in range(x.shape[1]):
            out[i, j] = t[j] / s


def row_counts(keys, nbins, out):
    # A zero-filled temporary per row, updated at data-dependent places.
    #pragma parallel for
    for i in range(keys.shape[0]):
        h = np.zeros(nbins, dtype=np.int64)
        for k in range(keys.shape[1]):
            h[keys[i, k] % nbins] += 1
        out[i] = np.max(h) * 1000 + h[0]


def mirror(cov):
    # The copy goes through a temporary of M - i elements (the views overlap).
    M = cov.shape[0]
    #pragma parallel for
    for i in range(M):
        cov[i:M, i] = cov[i, i:M]


def masked_means(data, radius, npt):
    # With radius of one element the mask is broadcast: a temporary of
    # data's length per bin; otherwise none is allocated.
    res = np.zeros(npt)
    #pragma parallel for
    for i in range(npt):
        in_bin = (i <= radius * npt) & (radius * npt < i + 1)
        res[i] = np.sum(np.where(in_bin, data, 0.0)) / (np.sum(np.where(in_bin, 1.0, 0.0)) + 1.0)
    return res


def softmax_last_axis(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def shrinking_temporary(x, k):
    # Negative extents from some iteration on: NumPy's ValueError.
    out = np.zeros(x.shape[0])
    #pragma parallel for
    for i in range(x.shape[0]):
        t = np.ones(k - i)
        out[i] = np.sum(t)
    return out


def triangle_update(alpha, beta, C, A):
    # NPBench's syrk: each row's update is a serial loop over k (all threads
    # of the team in step) around a row slice spread over the team. (The
    # constant term keeps the nest off cuBLAS, transforms/offload_matmul:
    # these tests are about the loops; test_cuda_triangles.py has syrk.)
    #pragma parallel for
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k] + 1.0


def upper_gram(data):
    # NPBench's covariance product: a broadcast-versioned row slice whose
    # elements are reductions over the rows, mirrored through a temporary.
    M = data.shape[1]
    out = np.zeros((M, M), dtype=data.dtype)
    #pragma parallel for
    for i in range(M):
        out[i, i:M] = data[:, i] @ data[:, i:M]
        out[i:M, i] = out[i, i:M]
    return out


def in_step_shift(A, B, steps):
    # Between two steps, A[i, j] is read by the thread that did not write
    # it: a barrier at the top of each step.
    #pragma parallel for
    for i in range(A.shape[0]):
        for t in range(steps):
            #pragma simd
            for j in range(A.shape[1] - 1):
                B[i, j] = A[i, j + 1] * 0.5 + A[i, j]
            #pragma simd
            for j in range(A.shape[1] - 1):
                A[i, j + 1] = B[i, j]


def in_step_moving_bounds(A, B, steps):
    # Within a step both loops give element j to one thread; the bounds move
    # with the step, so across steps they do not. (The first loop's trip
    # count sizes the team.)
    #pragma parallel for
    for i in range(A.shape[0]):
        #pragma simd
        for j in range(A.shape[1]):
            B[i, j] = A[i, j]
        for t in range(steps):
            #pragma simd
            for j in range(t, A.shape[1]):
                B[i, j] = A[i, j] * 0.5 + 1.0
            #pragma simd
            for j in range(t, A.shape[1]):
                A[i, j] = B[i, j] + A[i, j] * 0.25 + B[i, j - t]


def row_solve(L, x, b):
    # NPBench's trisolv: each row's dot product stays on the GPU for the
    # store after it (no copy to the host and back per row). By the
    # reciprocal of the diagonal: divided, the loop is a cuBLAS trsv.
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) * (1.0 / L[i, i])


def row_reductions(a, out):
    # A product (from 1: staged by a copy) whose result stays on the GPU,
    # after a sum the host reads back (another loop follows it).
    for i in range(out.shape[0]):
        out[i] = np.sum(a[i, :i]) + np.prod(a[i, :])
        s = np.sum(a[i, :])
        if s > 0:
            out[i] += s


def column_means(a, out):
    # Coalesced across columns: one thread per column when there are many,
    # a team per column when they are too few to fill the GPU.
    #pragma parallel for
    for j in range(a.shape[1]):
        s = 0.0
        #pragma simd reduction(+: s)
        for i in range(a.shape[0]):
            s += a[i, j]
        out[j] = s / a.shape[0]


def scaled_columns(A, R):
    # gramschmidt's first steps: R[k, k], read into a temporary by the
    # column's division, stays on the GPU (no copy to the host per column).
    # (Q has A's shape by construction: no broadcast versions of the
    # division, whose branches would keep the temporary on the host.)
    Q = np.zeros_like(A)
    for k in range(A.shape[1]):
        R[k, k] = np.sqrt(np.dot(A[:, k], A[:, k])) + 1.0
        Q[:, k] = A[:, k] / R[k, k]
    return Q


def scaled_where_positive(a, out):
    # `s` stays on the GPU for the loop after the device region, which
    # assigns it on one path only: the other keeps the host's 2.5.
    s = 2.5
    if a[0] > 0:
        s = a[0] * 3.0
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = a[i] * s


def first_or_default(a):
    # Scalars the device region assigns and the host reads after it: `t`
    # keeps its value from before on one path, `u` is assigned on every path
    # before any read (its 4.0 never reaches the GPU).
    t = 1.5
    u = 4.0
    if a[0] > 0:
        t = a[0]
    u = a[a.shape[0] - 1] * 2.0
    return t + u


def row_relax(dist, start, through):
    # A relaxation in place (Floyd-Warshall's step): a team per row, whose
    # groups store only the elements of groups that changed.
    #pragma parallel for
    for i in range(dist.shape[0]):
        dist[i, :] = np.minimum(dist[i, :], start[i] + through)


def row_raise(level, floor):
    #pragma parallel for
    for i in range(level.shape[0]):
        level[i, :] = np.maximum(level[i, :], floor)


def grid_relax(dist, start, through):
    # The relaxation as one array statement: a collapsed nest, whose
    # iterations store only the elements that changed.
    dist[:] = np.minimum(dist, start[:, None] + through[None, :])


def grid_raise(level, floor):
    level[:] = np.maximum(level, floor[None, :])


# ---- NaN in team reductions of float maxima and minima, rows kept in
# registers between spread loops (docs/cuda.md, "NaN in maxima and minima",
# "Rows kept in registers")

def row_max_builtin(x, out):
    # max(m, x): a NaN element never replaces m; a NaN first element stays.
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(max: m)
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        out[i] = m


def row_extremes_builtin_reversed(x, hi, lo):
    # max(x, m): a NaN element replaces m, the next element replaces the NaN.
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        n = x[i, 0]
        #pragma simd reduction(max: m) reduction(min: n)
        for j in range(x.shape[1]):
            m = max(x[i, j], m)
            n = min(x[i, j], n)
        hi[i] = m
        lo[i] = n


def row_maximum_numpy(x, out):
    # np.maximum: a NaN anywhere wins.
    #pragma parallel for
    for i in range(x.shape[0]):
        m = -np.inf
        #pragma simd reduction(max: m)
        for j in range(x.shape[1]):
            m = np.maximum(m, x[i, j])
        out[i] = m


def array_extremes(x):
    return np.max(x, axis=-1), np.min(x, axis=-1), np.max(x), np.min(x)


def softmax_in_place(x):
    # The row is read by the first two loops and rewritten by the third.
    #pragma parallel for
    for i in range(x.shape[0]):
        m = -np.inf
        #pragma simd reduction(max: m)
        for j1 in range(x.shape[1]):
            m = np.maximum(m, x[i, j1])
        s = 0.0
        #pragma simd reduction(+: s)
        for j2 in range(x.shape[1]):
            x[i, j2] = np.exp(x[i, j2] - m)
            s += x[i, j2]
        #pragma simd
        for j3 in range(x.shape[1]):
            x[i, j3] = x[i, j3] / s


def row_centered_squares(x, out):
    # Loops over the same row with a conditional read, a store read back by
    # a later loop, and a scalar from a lane-0 statement.
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        #pragma simd reduction(+: s)
        for j1 in range(x.shape[1]):
            s += x[i, j1]
        mean = s / max(x.shape[1], 1)
        #pragma simd
        for j2 in range(x.shape[1]):
            out[i, j2] = (x[i, j2] - mean) * (x[i, j2] - mean)
        q = 0.0
        #pragma simd reduction(+: q)
        for j3 in range(x.shape[1]):
            q += out[i, j3] if x[i, j3] > 0 else 0.0
        out[i, 0] = q


def doubled_row_max_reversed(x, out):
    # A row temporary written by one spread loop and read by a loop that may
    # run again in order (max(t, m) meets a NaN): it stays in memory.
    #pragma parallel for
    for i in range(x.shape[0]):
        t = np.empty(x.shape[1], x.dtype)
        #pragma simd
        for j1 in range(x.shape[1]):
            t[j1] = x[i, j1] * 2
        m = -np.inf
        #pragma simd reduction(max: m)
        for j2 in range(x.shape[1]):
            m = max(t[j2], m)
        out[i] = m


# name -> signatures (as plaitc and Dispatcher.compile spell them)
KERNELS = {
    "vector_add": ["f64[::1], f64[::1], f64[::1]", "f32[::1], f32[::1], f32[::1]", "i32[::1], i32[::1], i32[::1]",
                   "u8[::1], u8[::1], u8[::1]", "i16[::1], i16[::1], i16[::1]", "u64[::1], u64[::1], u64[::1]"],
    "saxpy": ["float, f32[::1], f32[::1]", "f64, f64[:], f64[:]"],
    "dot": ["f64[::1], f64[::1]", "f32[::1], f32[::1]"],
    "int_sum": ["i64[::1]", "i32[::1]", "u32[::1]", "i16[::1]"],
    "min_max": ["f64[::1]", "i32[::1]", "u64[::1]", "i8[::1]", "u16[::1]"],
    "product": ["f64[::1]"],
    "histogram": ["i64[::1], i64[::1]", "i32[::1], i32[::1]", "u8[::1], u8[::1]", "u16[::1], u32[::1]",
                  "u64[::1], u64[::1]"],
    "atomic_ops": ["f64[::1], f64[::1]", "i64[::1], i64[::1]", "f32[::1], f32[::1]", "i32[::1], i32[::1]",
                   "u32[::1], u32[::1]", "u64[::1], u64[::1]", "i16[::1], i16[::1]", "u8[::1], u8[::1]",
                   "i8[::1], i8[::1]"],
    "matmul": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]", "f32[:, :], f32[::1, :], f32[:, ::1]"],
    "gemm": ["f64, f64, f64[:, ::1], f64[:, ::1], f64[:, ::1]", "float, float, f32[:, :], f32[::1, :], f32[:, :]"],
    "gemm_transposed_loops": ["f64[:, :], f64[:, :], f64[:, :]"],
    "gemm_minus": ["float, f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "matmul_new": ["f64[:, ::1], f64[:, ::1]", "f32[:, :], f32[:, :]"],
    "matmul_divided": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "matmul_accumulate": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]", "i64[:, ::1], i64[:, ::1], i64[:, ::1]"],
    "stencil_steps": ["f64[::1], f64[::1], int"],
    "scaled": ["f64[::1], float", "i32[::1], int"],
    "filled": ["int"],
    "serial_prefix": ["f64[::1], f64[::1]"],
    "first_negative": ["f64[::1]"],
    "math_functions": ["f64[::1], f64[::1]", "f32[::1], f32[::1]"],
    "python_math_errors": ["f64[::1], f64[::1]"],
    "int_arithmetic": ["i64[::1], i64[::1], i64[::1]", "i32[::1], i32[::1], i32[::1]"],
    "strided_2d": ["f64[:, :], f64[:]", "f64[::1, :], f64[::1]"],
    "bool_any": ["b1[::1]"],
    "loop_variable_after": ["i64[::1]"],
    "jacobi_1d": ["int, f64[::1], f64[::1]"],
    "fdtd_step": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "while_converge": ["f64[::1], float"],
    "divide_python_scalars": ["f64[::1], int"],
    "doubled_stepped": ["f64[::1], int, int, int, f64[::1]"],
    "offsets_by_steps": ["f64[::1], int, f64[::1]"],
    "shifted_copy": ["f64[::1], f64[::1]"],
    "get_item": ["f64[::1], int"],
    "add_python_int": ["i32[::1], int", "i64[::1], int", "u8[::1], int", "u32[::1], int"],
    "gesummv": ["float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]"],
    "row_softmax": ["f64[:, ::1], f64[:, ::1]", "f32[:, ::1], f32[:, ::1]", "f64[:, :], f64[:, :]"],
    "row_dots": ["float, float, f64[:, ::1], f64[:, ::1], f64[::1], f64[::1]",
                 "float, float, f32[:, ::1], f32[:, ::1], f32[::1], f32[::1]"],
    "nested_sums": ["f64[:, ::1]"],
    "row_int_extremes": ["i32[:, ::1], i32[::1], i32[::1]", "i64[:, ::1], i64[::1], i64[::1]",
                         "u16[:, ::1], u16[::1], u16[::1]", "i8[:, ::1], i8[::1], i8[::1]",
                         "u64[:, ::1], u64[::1], u64[::1]"],
    "center_rows": ["f64[:, ::1], f64[:, ::1], f64[::1]"],
    "flip_first_then_scale": ["f64[:, ::1], f64[:, ::1]"],
    "scale_rows": ["f64[:, ::1], f64[::1], f64[:, ::1]"],
    "csr_matvec": ["i64[::1], i64[::1], f64[::1], f64[::1], f64[::1]",
                   "u32[::1], u32[::1], f64[::1], f64[::1], f64[::1]"],
    "float_histogram": ["f32[::1], i64[::1]", "f64[::1], f32[::1]"],
    "jacobi_2d_steps": ["int, f64[:, ::1], f64[:, ::1]", "int, f32[:, :], f32[:, :]"],
    "heat_3d_steps": ["int, f64[:, :, ::1], f64[:, :, ::1]"],
    "forward_substitution": ["f64[:, ::1], f64[::1], f64[::1]"],
    "step_scalars": ["f64[::1], f64[::1], int", "f32[::1], f32[::1], int"],
    "host_counted_steps": ["f64[::1], int"],
    "aliasing_steps": ["f64[::1], f64[::1], int"],
    "register_stencil_steps": ["f64[::1], f32[::1], i32[::1], f64[::1], int", "f64[:], f32[:], i32[:], f64[:], int"],
    "jacobi_1d_slices": ["int, f64[::1], f64[::1]"],
    "fdtd_2d_loops": ["int, f64[:, ::1], f64[:, ::1], f64[:, ::1], f64[::1]"],
    "row_zero_read_steps": ["int, f64[:, ::1], f64[:, ::1], f64[::1]"],
    "skipping_steps": ["f64[::1], f64[::1], int"],
    "mixed_dtype_steps": ["f64[:, ::1], f64[:, ::1], i32[:, ::1], b1[:, ::1], int",
                          "f32[::1, :], f32[::1, :], i32[::1, :], b1[:, :], int"],
    "shape_checked_steps": ["f64[::1], f64[::1], int"],
    "element_scalar_steps": ["f64[::1], int"],
    "heat_3d_slices": ["int, f64[:, :, ::1], f64[:, :, ::1]", "int, f32[:, :, :], f32[:, :, :]"],
    "normalised_steps": ["f64[::1], int"],
    "narrow_int_ops": ["u8[::1], u8[::1], u8[:, ::1]", "i8[::1], i8[::1], i8[:, ::1]",
                       "u16[::1], u16[::1], u16[:, ::1]",
                       "i16[::1], i16[::1], i16[:, ::1]", "u32[::1], u32[::1], u32[:, ::1]",
                       "u64[::1], u64[::1], u64[:, ::1]"],
    "compare_mixed": ["i64[::1], u64[::1], i64[::1]", "i32[::1], u32[::1], i64[::1]", "i8[::1], u8[::1], i64[::1]"],
    "conversions": ["u64[::1], f64[::1]"],
    "add_scalar": ["u64[::1], u64", "u8[::1], u8", "i16[::1], int"],
    "row_scaled_by_sum": ["f64[:, ::1], f64[:, ::1]", "f32[:, ::1], f32[:, ::1]"],
    "row_counts": ["i64[:, ::1], int, i64[::1]", "u16[:, ::1], int, i64[::1]"],
    "mirror": ["f64[:, ::1]", "f32[:, :]"],
    "masked_means": ["f64[::1], f64[::1], int"],
    "softmax_last_axis": ["f32[:, :, :, ::1]", "f64[:, ::1]"],
    "shrinking_temporary": ["f64[::1], int"],
    "triangle_update": ["float, float, f64[:, ::1], f64[:, ::1]", "float, float, f32[:, :], f32[:, :]"],
    "upper_gram": ["f64[:, ::1]", "f32[:, :]"],
    "in_step_shift": ["f64[:, ::1], f64[:, ::1], int"],
    "in_step_moving_bounds": ["f64[:, ::1], f64[:, ::1], int"],
    "row_solve": ["f64[:, ::1], f64[::1], f64[::1]", "f32[:, :], f32[:], f32[:]"],
    "row_reductions": ["f64[:, ::1], f64[::1]"],
    "column_means": ["f64[:, ::1], f64[::1]", "f32[:, :], f32[:]"],
    "scaled_columns": ["f64[:, ::1], f64[:, ::1]"],
    "scaled_where_positive": ["f64[::1], f64[::1]"],
    "first_or_default": ["f64[::1]"],
    "row_relax": ["i32[:, ::1], i32[::1], i32[::1]", "f64[:, :], f64[::1], f64[:]"],
    "row_raise": ["f32[:, ::1], f32[::1]"],
    "grid_relax": ["i32[:, ::1], i32[::1], i32[::1]", "f64[:, :], f64[::1], f64[:]"],
    "grid_raise": ["f32[:, ::1], f32[::1]"],
    "row_max_builtin": ["f64[:, ::1], f64[::1]", "f32[:, :], f32[:]"],
    "row_extremes_builtin_reversed": ["f64[:, ::1], f64[::1], f64[::1]", "f32[:, ::1], f32[::1], f32[::1]"],
    "row_maximum_numpy": ["f64[:, ::1], f64[::1]", "f32[:, ::1], f32[::1]"],
    "array_extremes": ["f64[:, ::1]", "f32[:, :]"],
    "softmax_in_place": ["f32[:, ::1]", "f64[:, :]"],
    "row_centered_squares": ["f64[:, ::1], f64[:, ::1]"],
    "doubled_row_max_reversed": ["f64[:, ::1], f64[::1]", "f32[:, ::1], f32[::1]"],
    "lower_row_shift": ["f64[:, ::1], f64[:, ::1]"],
}


def register_stencil_steps(a, b, c, w, steps):
    """Arrays a one-block persistent kernel keeps in registers (docs/cuda.md,
    "Arrays in registers"): float64 read two elements away on either side,
    float32 read one away, an int32 counter updated at its own element in a
    loop under an `if` (no elements cross threads there), and a weight array
    the loop only reads, at any index."""
    n = a.shape[0]
    for t in range(steps):
        #pragma parallel for
        for i in range(2, n - 2):
            b[i] = 0.25 * (a[i - 2] + a[i + 2]) + 0.5 * a[i] * w[n - 1 - i]
        if t >= 1:
            #pragma parallel for
            for i in range(n):
                c[i] = c[i] + 1
        #pragma parallel for
        for i in range(1, n - 1):
            a[i] = b[i - 1] - b[i + 1] + c[i] * 0.001


def jacobi_1d_slices(tsteps, A, B):
    """NPBench's jacobi_1d: array statements whose loops store at offset 1."""
    for t in range(1, tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def fdtd_2d_loops(tmax, ex, ey, hz, fict):
    """NPBench's fdtd_2d as loops: `ey[0, j] = fict[t]` and the `ey` update
    over rows 1.. touch different rows, and the `ex` update shares no written
    array with either, so a step of the persistent kernel has two barriers,
    not four (docs/cuda.md, "Barriers between a step's loops")."""
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


def row_zero_read_steps(tmax, a, b, fict):
    """The second loop reads row 0 of `a`, which the first writes: the
    barrier between them stays."""
    n = a.shape[0]
    m = a.shape[1]
    for t in range(tmax):
        #pragma parallel for
        for j in range(m):
            a[0, j] = fict[t]
        #pragma parallel for
        for i in range(1, n):
            #pragma parallel for
            for k in range(m):
                b[i, k] = a[i - 1, k] * 0.5 + b[i, k]
        #pragma parallel for
        for i in range(1, n):
            #pragma parallel for
            for k in range(m):
                a[i, k] = b[i, k] - a[i, k] * 0.25


def skipping_steps(a, b, steps):
    """Iterations that leave early with `continue`: in registers, each slot's
    copy of the loop body is a block of its own that `continue` leaves."""
    n = a.shape[0]
    for t in range(steps):
        #pragma parallel for
        for i in range(1, n - 1):
            if a[i] < 0.0:
                b[i] = -1.0
                continue
            b[i] = a[i - 1] + a[i + 1]
        #pragma parallel for
        for i in range(1, n - 1):
            a[i] = 0.5 * b[i] - 0.25


def lower_row_shift(x, out):
    # Rows of the lower triangle kept in registers between two loops whose
    # bounds depend on the row: the host cannot tell before the launch
    # whether every row fits in the registers (no _fit version).
    #pragma parallel for
    for i in range(x.shape[0]):
        m = x[i, 0]
        #pragma simd reduction(max: m)
        for j1 in range(i + 1):
            m = max(m, x[i, j1])
        #pragma simd
        for j2 in range(i + 1):
            out[i, j2] = x[i, j2] - m
