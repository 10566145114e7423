"""Serial loops around parallel loops (time-step loops) run as one OpenMP
parallel region: each parallel loop inside is an `omp for` of one thread team,
the other statements run in one thread (`omp single`) or, when pure and
thread-local, in every thread. The kernels here compare with the undecorated
function on 1, 2 and 3 threads (PLAIT_PARALLEL_THRESHOLD=0 from conftest.py
starts every region threaded), errors raised inside a region included, and
check the region structure of the generated C++."""

import numpy as np
import pytest

import plait
from oracle import check, make, reduction_rtol, rng_for

THREADS = (1, 2, 3)


def compiled(fn, threads, monkeypatch, **options):
    """A fresh dispatcher of fn's Python function, its thread count taken
    from PLAIT_NUM_THREADS."""
    monkeypatch.setenv("PLAIT_NUM_THREADS", str(threads))
    kernel = plait.jit(**options)(fn.py_func)
    assert kernel.num_threads == threads
    return kernel


@plait.jit
def one_statement(A, steps):
    for t in range(steps):
        A[:] = 0.5 * A + 1.0


# Unchecked (boundscheck=False): the tests below count its regions, and the
# copy that a bounds check makes of a loop has regions of its own.
@plait.jit(boundscheck=False)
def jacobi_1d(A, B, steps):
    for t in range(steps):
        B[1:-1] = 0.5 * (A[:-2] + A[2:])
        A[1:-1] = 0.5 * (B[:-2] + B[2:])


@plait.jit
def three_statements(A, B, C, steps):
    for t in range(1, steps):
        B[1:] = A[1:] - A[:-1]
        C[:] = 0.25 * B + C
        A[:-1] = A[:-1] + 0.5 * C[1:]


@plait.jit
def running_scalar(A, steps):
    s = 0.0
    for t in range(steps):
        A[:] = 0.5 * A + s
        s = s + 1.0 + t
        u = 2.0 * s
        A[:] = A - u * 0.001
    return s


# Unchecked (boundscheck=False): the tests below count its regions, and the
# copy that a bounds check makes of a loop has regions of its own.
@plait.jit(boundscheck=False)
def branch_on_t(A, B, steps):
    for t in range(steps):
        if t % 2 == 0:
            A[:] = A + B
        else:
            B[:] = B - 0.5 * A
        if t > 2:
            A[:] = 0.9 * A
        A[0] = t
        B[-1] = A[0] + 1.0


@plait.jit
def read_then_overwrite(A, steps):
    s = 1.0
    for t in range(steps):
        u = s * 0.5
        s = u + A[t % A.shape[0]]
        A[:] = A * 0.5 + u
    return s


@plait.jit(boundscheck=True)
def checked_read_per_step(A, idx, steps):
    for t in range(steps):
        w = A[idx[t]] + 1.0
        A[:] = A * 0.5 + w
        A[t] = w


@plait.jit
def reduction_feeds_next_step(A, steps):
    s = 0.0
    for t in range(steps):
        s = np.sum(A)
        A[:] = A / (1.0 + abs(s))
        A[0] = s
    return s


@plait.jit
def max_then_scale(A, steps):
    total = 0.0
    for t in range(steps):
        m = np.max(np.abs(A)) + 1.0
        A[:] = A / m + t
        total += m
    return total


@plait.jit
def explicit_pragma_reduction(A, steps):
    out = 0.0
    for t in range(steps):
        acc = 0.0
        #pragma parallel for reduction(+: acc)
        for i in range(A.shape[0]):
            acc += A[i] * (t + 1)
        #pragma parallel for
        for i in range(A.shape[0]):
            A[i] = A[i] - acc * 1e-3
        out = out + acc
    return out, t


@plait.jit
def nested_time_loops(A, B, outer, inner):
    for t in range(outer):
        for s in range(inner):
            A[:] = 0.5 * A + s
        B[:] = B + A * t
        if A.shape[0] > 0:
            A[-1] = B[0]


@plait.jit
def temporary_per_step(A, steps):
    for k in range(steps):
        A[:] = np.minimum(A, A[::-1] + 1.0)


@plait.jit
def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


@plait.jit
def heat_2d(A, B, steps):
    for t in range(1, steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("n", (0, 1, 2, 7, 33, 1000))
@pytest.mark.parametrize("layout", ("C", "strided", "reversed"))
def test_time_loops_over_1d_arrays(threads, n, layout, monkeypatch):
    rng = rng_for("1d", threads, n, layout)
    steps = int(rng.integers(0, 6))
    args = lambda: make(rng, np.float64, n, layout)  # noqa: E731
    check(compiled(one_statement, threads, monkeypatch), args(), steps)
    check(compiled(jacobi_1d, threads, monkeypatch), args(), args(), steps)
    check(compiled(three_statements, threads, monkeypatch), args(), args(), args(), steps)
    check(compiled(temporary_per_step, threads, monkeypatch), args(), steps)
    check(compiled(running_scalar, threads, monkeypatch), args(), steps)
    check(compiled(nested_time_loops, threads, monkeypatch), args(), args(), steps, int(rng.integers(0, 4)))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("n", (1, 2, 7, 33, 1000))
def test_scalar_updates_between_parallel_statements(threads, n, monkeypatch):
    rng = rng_for("scalars", threads, n)
    A, B = make(rng, np.float64, n), make(rng, np.float64, n)
    check(compiled(branch_on_t, threads, monkeypatch), A, B, 7)
    check(compiled(read_then_overwrite, threads, monkeypatch), make(rng, np.float64, n), 6)
    idx = rng.integers(-n, n, size=8)
    check(compiled(checked_read_per_step, threads, monkeypatch, boundscheck=True), make(rng, np.float64, n),
          idx, min(n, 8))
    rtol = reduction_rtol(np.float64)
    check(compiled(reduction_feeds_next_step, threads, monkeypatch), make(rng, np.float64, n), 5, rtol=rtol)
    check(compiled(max_then_scale, threads, monkeypatch), make(rng, np.float64, n), 4)
    check(compiled(explicit_pragma_reduction, threads, monkeypatch), make(rng, np.float64, n), 3, rtol=rtol)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape", ((0, 0), (1, 1), (3, 3), (7, 5), (33, 17)))
def test_time_loops_over_2d_arrays(threads, shape, monkeypatch):
    rng = rng_for("2d", threads, shape)
    check(compiled(heat_2d, threads, monkeypatch), make(rng, np.float64, shape), make(rng, np.float64, shape), 4)
    square = (shape[0], shape[0])
    path = rng.integers(1, 50, size=square).astype(np.int32)
    check(compiled(floyd_warshall, threads, monkeypatch), path)


# --- errors raised inside a region propagate as in the serial loop -------------


@plait.jit
def index_error_in_parallel_loop(A, B, steps):
    for t in range(steps):
        #pragma parallel for
        for i in range(A.shape[0]):
            B[i] = A[i + t]
        A[:] = B + 1.0


@plait.jit
def index_error_at_loop_level(A, steps, where):
    for t in range(steps):
        A[:] = A + 1.0
        A[where + t] = 0.0


@plait.jit
def zero_division_at_loop_level(A, steps):
    x = 0
    for t in range(steps):
        A[:] = A + 1.0
        x = x + 10 // (4 - t)
    return x


@plait.jit
def broadcast_error_in_step(A, B, steps):
    for t in range(steps):
        A[:] = A + 1.0
        A[t:] = B


@plait.jit
def allocation_error_in_step(A, steps, n):
    for t in range(steps):
        tmp = np.zeros(n - t)
        A[:] = A + tmp.shape[0]


@pytest.mark.parametrize("threads", THREADS)
def test_index_error_inside_a_parallel_loop(threads, monkeypatch):
    kernel = compiled(index_error_in_parallel_loop, threads, monkeypatch, boundscheck=True)
    A, B = np.arange(50.0), np.zeros(50)
    check(kernel, A, B, 1)
    with pytest.raises(IndexError, match="index 50 is out of bounds for axis 0 with size 50"):
        kernel(A.copy(), B.copy(), 3)


@pytest.mark.parametrize("threads", THREADS)
def test_index_error_at_the_loop_level(threads, monkeypatch):
    kernel = compiled(index_error_at_loop_level, threads, monkeypatch, boundscheck=True)
    check(kernel, np.zeros(40), 3, 10)
    with pytest.raises(IndexError, match="index 40 is out of bounds for axis 0 with size 40"):
        kernel(np.zeros(40), 5, 38)


@pytest.mark.parametrize("threads", THREADS)
def test_zero_division_at_the_loop_level(threads, monkeypatch):
    kernel = compiled(zero_division_at_loop_level, threads, monkeypatch)
    check(kernel, np.zeros(100), 2)
    with pytest.raises(ZeroDivisionError, match="integer division or modulo by zero"):
        kernel(np.zeros(100), 5)


@pytest.mark.parametrize("threads", THREADS)
def test_broadcast_error_inside_a_step(threads, monkeypatch):
    kernel = compiled(broadcast_error_in_step, threads, monkeypatch)
    check(kernel, np.zeros(30), np.ones(30), 1)
    with pytest.raises(ValueError, match="could not broadcast"):
        kernel(np.zeros(30), np.ones(30), 2)


@pytest.mark.parametrize("threads", THREADS)
def test_allocation_error_inside_a_step(threads, monkeypatch):
    kernel = compiled(allocation_error_in_step, threads, monkeypatch)
    check(kernel, np.zeros(30), 3, 5)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        kernel(np.zeros(30), 8, 5)


# --- the generated code ---------------------------------------------------------


def test_a_time_loop_starts_one_team_and_shares_out_its_loops():
    A, B = np.zeros(100), np.zeros(100)
    jacobi_1d(A, B, 2)
    source = jacobi_1d.inspect_source()
    # Two versions of the time loop (fuse_loop_nests): one where A and B may
    # share memory or an extent broadcasts at run time, and the usual one,
    # with the two plain loops; each is one region.
    start = "#pragma omp parallel num_threads(ctx->num_threads)\n"
    assert source.count(start) == 2
    usual = source[source.rindex(start):]
    assert usual.count("#pragma omp for simd schedule(static)") == 2
    assert "omp parallel for" not in source
    # The loop-level checks run in every thread; nothing needs one thread.
    assert "omp single" not in usual and "omp barrier" not in usual
    assert usual.index("for (") < usual.index("#pragma omp for")
    # When its work does not pay for a team, the time loop runs as serial
    # code: vector loops, no OpenMP call.
    serial = usual[usual.index("} else {"):]
    assert serial.count("#pragma omp simd") == 2
    assert "omp parallel" not in serial and "omp for" not in serial
    assert "runs as one parallel region" in jacobi_1d.explain()


def test_statements_between_the_loops_run_in_one_thread():
    running_scalar(np.zeros(10), 2)
    source = running_scalar.inspect_source()
    assert source.count("#pragma omp parallel num_threads") == 1
    assert source.count("#pragma omp for") == 2
    # s is shared (it lives after the loop): one thread updates it; u is
    # computed by every thread from it.
    assert source.count("#pragma omp single") == 1
    # Every thread computes u from s, which one thread then overwrites: the
    # team meets at a barrier first.
    read_then_overwrite(np.zeros(10), 2)
    source = read_then_overwrite.inspect_source()
    assert source.index("#pragma omp barrier") < source.index("#pragma omp single")
    # w can raise (a checked index): one thread computes it and passes it on.
    checked_read_per_step(np.zeros(10), np.arange(10), 2)
    assert "copyprivate(v_w)" in checked_read_per_step.inspect_source()
    branch_on_t(np.zeros(10), np.zeros(10), 2)
    assert branch_on_t.inspect_source().count("#pragma omp parallel num_threads") == 1
    reduction_feeds_next_step(np.ones(10), 2)
    source = reduction_feeds_next_step.inspect_source()
    assert "#pragma omp for simd schedule(static) reduction(+: " in source
    allocation_error_in_step(np.zeros(5), 1, 3)
    # A failed allocation (in one thread) makes every thread leave the region.
    source = allocation_error_in_step.inspect_source()
    assert "[2] = {false, false};" in source and "goto p_exit" in source and "copyprivate" not in source


# Unchecked (boundscheck=False): the tests below count its regions, and the
# copy that a bounds check makes of a loop has regions of its own.
@plait.jit(boundscheck=False)
def while_around_parallel_loop(A, steps):
    t = 0
    while t < steps:
        A[:] = A + 1.0
        t += 1
    for k in range(steps):
        A[:] = A * 0.5
        if A[0] > 100.0:
            break


def test_loops_it_cannot_share_keep_their_own_regions():
    check(while_around_parallel_loop, np.zeros(20), 3)
    source = while_around_parallel_loop.inspect_source()
    assert "#pragma omp parallel num_threads(ctx->num_threads) if(" not in source
    assert source.count("#pragma omp parallel for") == 2
    assert "each parallel loop inside starts its own threads (the loop can end early" in (
        while_around_parallel_loop.explain())
