"""Kernels of the tests of triangular matrix products and solves handed to
cuBLAS (transforms/offload_matmul, docs/cuda.md "Matrix products"):
tests/gpu/test_cuda_triangles.py compiles them with nvcc and the host
compiler everywhere and runs them on the GPU against the undecorated
functions. KERNELS lists them with the signatures the compile tests use."""

import numpy as np


def syrk(alpha, beta, C, A):
    # NPBench's syrk: the lower triangle of beta * C + alpha * A @ A.T.
    #pragma parallel for
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def syr2k(alpha, beta, C, A, B):
    # NPBench's syr2k: two products, the lower triangle of
    # beta * C + alpha * (A @ B.T + B @ A.T).
    #pragma parallel for
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k]


def upper_accumulate(C, A, B):
    # The upper triangle of C += A.T @ B - 2 A.T @ B (transposed operands,
    # no scaling of C, a subtracted product).
    #pragma parallel for
    for i in range(C.shape[0]):
        for k in range(A.shape[0]):
            C[i, i:] += A[k, i] * B[k, i:] - 2.0 * A[k, i] * B[k, i:]


def covariance(M, float_n, data):
    # NPBench's covariance: the upper triangle of data.T @ data / (n - 1)
    # (each row's product in the lowering's broadcast versions), then the
    # mirror, which must run after every row's product.
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    #pragma parallel for
    for i in range(M):
        cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
        cov[i:M, i] = cov[i, i:M]
    return cov


def trmm(alpha, A, B):
    # NPBench's trmm: row i reads the rows below it before they change, so
    # the loops are B = alpha * (B + strict_upper(A.T) @ B).
    for i in range(B.shape[0]):
        #pragma parallel for
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


def trmm_rows_of_a(A, B):
    # B = B + strict_upper(A) @ B: A read along its rows.
    for i in range(B.shape[0]):
        #pragma parallel for
        for j in range(B.shape[1]):
            B[i, j] += A[i, i + 1:] @ B[i + 1:, j]


def trmm_with_diagonal(A, B):
    # Row i reads itself too: not the unit-diagonal product.
    for i in range(B.shape[0]):
        #pragma parallel for
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i:, i], B[i:, j])


def strict_lower(alpha, C, A):
    # Without the diagonal: not a triangle the library computes.
    #pragma parallel for
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            C[i, :i] += alpha * A[i, k] * A[:i, k]


def reads_c(alpha, C, A):
    # The update reads C[i, 0], which it changes: the loops' order matters.
    #pragma parallel for
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k] * C[i, 0]


def every_other_k(alpha, C, A):
    # A step of 2 over k.
    #pragma parallel for
    for i in range(A.shape[0]):
        for k in range(0, A.shape[1], 2):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def symm(alpha, beta, C, A, B):
    # NPBench's symm: C = beta * C + alpha * S @ B with S the symmetric
    # matrix of A's lower triangle (A's upper triangle is never read).
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        #pragma parallel for
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


def symm_serial(alpha, C, A, B):
    # The same without the pragma, the coefficient on the other side and
    # temp2 zero-filled.
    temp2 = np.zeros(C.shape[1])
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += B[i, j] * A[i, :i] * alpha
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * temp2 + alpha * B[i, :] * A[i, i]


def symm_returns_temp2(alpha, C, A, B):
    # temp2 holds the last row's dot products afterwards: the loops run.
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2
    return temp2


def symm_reads_upper(alpha, C, A, B):
    # The rows above i take A's column i (its upper triangle): not symm.
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[:i, i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


def symm_other_coefficient(alpha, C, A, B):
    # The diagonal's coefficient differs from the others': not symm.
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += 2.0 * B[i, :] * A[i, i] + alpha * temp2



def trisolv(L, x, b):
    # NPBench's trisolv: forward substitution, x = solve(lower(L), b).
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def trisolv_in_place(L, x):
    # The right-hand side is x itself: each step reads x[i] before it
    # writes it.
    for i in range(x.shape[0]):
        x[i] = (x[i] - np.dot(L[i, :i], x[:i])) / L[i, i]


def trisolv_columns(U, x, b):
    # The dot product by hand, over U's column i: x = solve(lower(U.T), b).
    for i in range(x.shape[0]):
        t = 0.0
        for r in range(i):
            t += x[r] * U[r, i]
        x[i] = (b[i] - t) / U[i, i]


def trisolv_with_diagonal(L, x, b):
    # The dot product takes x[i] too (b's value, or what the caller left):
    # not a solve.
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i + 1] @ x[:i + 1]) / L[i, i]


def trisolv_scaled(L, x, b):
    # A factor on the step: not a solve the library does.
    for i in range(x.shape[0]):
        x[i] = 0.5 * (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def cholesky(A):
    # NPBench's cholesky: row i left of the diagonal is a forward
    # substitution with the rows above it, in place.
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])

KERNELS = {
    "syrk": ["float, float, f64[:, ::1], f64[:, ::1]", "float, float, f32[:, ::1], f32[:, ::1]",
             "float, float, f64[:, :], f64[:, :]"],
    "syr2k": ["float, float, f64[:, ::1], f64[:, ::1], f64[:, ::1]",
              "float, float, f32[:, ::1], f32[:, ::1], f32[:, ::1]"],
    "upper_accumulate": ["f64[:, ::1], f64[:, ::1], f64[:, ::1]", "f32[:, :], f32[:, :], f32[:, :]"],
    "covariance": ["int, f64, f64[:, ::1]", "int, f64, f64[:, :]"],
    "trmm": ["float, f64[:, ::1], f64[:, ::1]", "float, f32[:, ::1], f32[:, ::1]", "float, f64[:, :], f64[:, :]"],
    "trmm_rows_of_a": ["f64[:, ::1], f64[:, ::1]", "f64[::1, :], f64[::1, :]"],
    "trmm_with_diagonal": ["f64[:, ::1], f64[:, ::1]"],
    "strict_lower": ["float, f64[:, ::1], f64[:, ::1]"],
    "reads_c": ["float, f64[:, ::1], f64[:, ::1]"],
    "every_other_k": ["float, f64[:, ::1], f64[:, ::1]"],
    "symm": ["float, float, f64[:, ::1], f64[:, ::1], f64[:, ::1]",
             "float, float, f32[:, ::1], f32[:, ::1], f32[:, ::1]", "float, float, f64[:, :], f64[:, :], f64[:, :]"],
    "symm_serial": ["float, f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "symm_returns_temp2": ["float, f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "symm_reads_upper": ["float, f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "symm_other_coefficient": ["float, f64[:, ::1], f64[:, ::1], f64[:, ::1]"],
    "trisolv": ["f64[:, ::1], f64[::1], f64[::1]", "f32[:, ::1], f32[::1], f32[::1]", "f64[:, :], f64[:], f64[:]"],
    "trisolv_in_place": ["f64[:, ::1], f64[::1]", "f32[:, :], f32[:]"],
    "trisolv_columns": ["f64[:, ::1], f64[::1], f64[::1]", "f64[::1, :], f64[:], f64[:]"],
    "trisolv_with_diagonal": ["f64[:, ::1], f64[::1], f64[::1]"],
    "trisolv_scaled": ["f64[:, ::1], f64[::1], f64[::1]"],
    "cholesky": ["f64[:, ::1]", "f32[:, :]"],
}
