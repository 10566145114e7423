"""Kernels of tests/gpu/test_cuda_staged_rows.py: CSR row loops whose terms a
block computes for all its rows at once (docs/cuda.md, "CSR rows staged per
block"), and row loops that the rule leaves to the teams, each for one of its
conditions. KERNELS lists their signatures for the compile tests."""


def csr_matvec(rowptr, cols, vals, x, y):
    #pragma parallel for
    for i in range(y.shape[0]):
        acc = 0.0
        #pragma simd reduction(+: acc)
        for k in range(rowptr[i], rowptr[i + 1]):
            acc += vals[k] * x[cols[k]]
        y[i] = acc


def csr_sum_and_count(rowptr, cols, vals, x, y, counts):
    # Two reductions of two types, a scalar the body assigns before reading
    # it, and rows that start one element of rowptr in.
    #pragma parallel for
    for i in range(y.shape[0]):
        s = 0.0
        c = 0
        #pragma simd reduction(+: s, c)
        for k in range(rowptr[i + 1], rowptr[i + 2]):
            j = cols[k]
            s += vals[k] * x[j]
            c += 1
        y[i] = s * 0.5
        counts[i] = c


def csr_scaled_by_row(rowptr, vals, y):
    # The term reads the worker's variable: not staged.
    #pragma parallel for
    for i in range(y.shape[0]):
        acc = 0.0
        #pragma simd reduction(+: acc)
        for k in range(rowptr[i], rowptr[i + 1]):
            acc += vals[k] * i
        y[i] = acc


def csr_row_max(rowptr, vals, y):
    # A maximum, not a sum: not staged.
    #pragma parallel for
    for i in range(y.shape[0]):
        m = -1.0
        #pragma simd reduction(max: m)
        for k in range(rowptr[i], rowptr[i + 1]):
            m = max(m, vals[k])
        y[i] = m


def csr_reads_written_array(rowptr, vals, y):
    # The terms read vals, which the worker writes (the first element of its
    # own row, after the sum): not staged.
    #pragma parallel for
    for i in range(y.shape[0]):
        acc = 0.0
        #pragma simd reduction(+: acc)
        for k in range(rowptr[i], rowptr[i + 1]):
            acc += vals[k]
        y[i] = acc
        if rowptr[i] < rowptr[i + 1]:
            vals[rowptr[i]] = 0.0


KERNELS = {
    "csr_matvec": ["i64[::1], i64[::1], f64[::1], f64[::1], f64[::1]",
                   "i32[::1], i32[::1], f64[::1], f64[::1], f64[::1]",
                   "u32[::1], u32[::1], f32[::1], f32[:], f32[::1]"],
    "csr_sum_and_count": ["i64[::1], i64[::1], f64[::1], f64[::1], f64[::1], i64[::1]"],
    "csr_scaled_by_row": ["i64[::1], f64[::1], f64[::1]"],
    "csr_row_max": ["i64[::1], f64[::1], f64[::1]"],
    "csr_reads_written_array": ["i64[::1], f64[::1], f64[::1]"],
}
