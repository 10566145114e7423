"""A tour of plait: three kernels (sparse matrix-vector product, saxpy and a
five-point stencil), each checked against the undecorated Python function and
timed against NumPy.

    make demo        (or: python examples/demo.py)
"""

import time

import numpy as np

import plait


# --- the kernels: plain Python loops with #pragma comments -------------------


def spmv(indptr, indices, data, x, y):
    """y = A @ x for a CSR matrix A."""
    #pragma parallel for
    for row in range(y.shape[0]):
        acc = 0.0
        for k in range(indptr[row], indptr[row + 1]):
            acc += data[k] * x[indices[k]]
        y[row] = acc


def saxpy(a, x, y):
    """y = a * x + y"""
    #pragma parallel for simd
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def stencil(u):
    """One Jacobi step of the 2-D Laplace equation; returns a new grid."""
    out = np.empty_like(u)
    n, m = u.shape[0], u.shape[1]
    for col in range(m):
        out[0, col] = u[0, col]
        out[n - 1, col] = u[n - 1, col]
    #pragma parallel for
    for i in range(1, n - 1):
        out[i, 0] = u[i, 0]
        out[i, m - 1] = u[i, m - 1]
        for j in range(1, m - 1):
            out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
    return out


# --- NumPy versions, for timing -----------------------------------------------


def spmv_numpy(indptr, indices, data, x, y):
    rows = np.repeat(np.arange(y.shape[0]), np.diff(indptr))
    y[:] = np.bincount(rows, weights=data * x[indices], minlength=y.shape[0])


def saxpy_numpy(a, x, y):
    y += a * x


def stencil_numpy(u):
    out = u.copy()
    out[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return out


# --- the harness ---------------------------------------------------------------


def random_csr(rng, n, per_row):
    indptr = np.arange(0, n * per_row + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, n, size=n * per_row, dtype=np.int64)
    data = rng.random(n * per_row)
    return indptr, indices, data


def best_time(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def report(name, kernel, python_fn, numpy_fn, make_args, check):
    """Compiles `kernel`, checks it against `python_fn` on small inputs and
    times it against `numpy_fn` on large ones."""
    start = time.perf_counter()
    small_kernel = make_args(small=True)
    small_python = make_args(small=True)
    got = kernel(*small_kernel)
    expected = python_fn(*small_python)
    compile_s = time.perf_counter() - start
    check(got, expected, small_kernel, small_python)

    big = make_args(small=False)
    plait_s = best_time(kernel, *big)
    numpy_s = best_time(numpy_fn, *make_args(small=False))
    print(f"{name:8s} {kernel.signatures[-1]:<48s} compile+check {compile_s:6.2f} s   "
          f"plait {plait_s * 1e3:8.3f} ms   numpy {numpy_s * 1e3:8.3f} ms   x{numpy_s / plait_s:5.1f}")


def main():
    def spmv_args(small):
        n = 200 if small else 200_000
        seed = np.random.default_rng(7)
        indptr, indices, data = random_csr(seed, n, 16)
        return indptr, indices, data, seed.random(n), np.zeros(n)

    def check_out_argument(got, expected, kernel_args, python_args):
        assert got is None and expected is None
        np.testing.assert_allclose(kernel_args[-1], python_args[-1], rtol=1e-12)

    def saxpy_args(small):
        n = 1001 if small else 10_000_000
        seed = np.random.default_rng(11)
        return 2.5, seed.random(n), seed.random(n)

    def stencil_args(small):
        n = 33 if small else 2000
        return (np.random.default_rng(13).random((n, n)),)

    def check_returned(got, expected, kernel_args, python_args):
        np.testing.assert_allclose(got, expected, rtol=1e-12)

    print(f"plait {plait.__version__}, {plait.jit(saxpy).num_threads} threads; "
          "results checked against the undecorated functions\n")
    report("spmv", plait.jit(spmv), spmv, spmv_numpy, spmv_args, check_out_argument)
    report("saxpy", plait.jit(saxpy), saxpy, saxpy_numpy, saxpy_args, check_out_argument)
    report("stencil", plait.jit(stencil), stencil, stencil_numpy, stencil_args, check_returned)
    print("\nall kernels match their Python functions")


if __name__ == "__main__":
    main()
