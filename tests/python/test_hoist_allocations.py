"""Temporaries of a serial loop's steps allocated once, before the loop
(transforms/hoist_allocations), differentially against the undecorated
function: NPBench's floyd_warshall (its copies of row and column k), a user's
`tmp = np.empty(n)` / `np.empty_like` scratch array in a time loop, in a
`while` loop and in two nested serial loops, with 0, 1 and odd sizes, zero
steps, and non-contiguous views; explain() names each hoisted temporary.
Allocations the pass must keep in their step (an extent the loop changes, a
negative extent whose ValueError belongs to the step, a temporary read after
the loop) still give NumPy's results and errors."""

import numpy as np
import pytest

import plait
from oracle import FLOAT_DTYPES, check, dtype_id, make, rng_for


@plait.jit
def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path, path[:, k][:, None] + path[k, :][None, :])


@pytest.mark.parametrize("layout", ["C", "F", "strided", "transposed"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 33])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64], ids=dtype_id)
def test_floyd_warshall(n, dtype, layout):
    rng = rng_for("floyd", n, dtype, layout)
    check(floyd_warshall, make(rng, dtype, (n, n), layout, low=0, high=50))
    # Negative entries change row and column k within step k: the copies
    # keep the values the step started with, as NumPy's right side does.
    check(floyd_warshall, make(rng, dtype, (n, n), layout, low=-5, high=50))


def test_floyd_warshall_explains_the_hoisting():
    floyd_warshall(np.ones((3, 3), np.int32))
    text = floyd_warshall.explain()
    assert "temporary `_tmp_array0` allocated once before the loop over `k` (line 20)" in text, text
    assert "temporary `_tmp_array2` allocated once before the loop over `k` (line 20)" in text, text


@plait.jit
def smoothing_steps(a, T):
    for t in range(T):
        tmp = np.empty_like(a)
        tmp[1:-1] = 0.5 * (a[:-2] + a[2:])
        a[1:-1] = tmp[1:-1]


@plait.jit
def scaled_steps(a, T):
    n = a.shape[0]
    for t in range(T):
        tmp = np.empty(n)
        tmp[:] = a * 0.5 + t
        a[:] = tmp + 1.0


@plait.jit
def row_scratch_steps(A, T):
    # A 2-D scratch array of local extents, filled and read by plain loops.
    m = A.shape[0]
    n = A.shape[1] // 2 + 1
    for t in range(T):
        tmp = np.empty((m, n), dtype=A.dtype)
        for i in range(m):
            for j in range(n):
                tmp[i, j] = A[i, j % A.shape[1]] * 0.5 + t
        for i in range(m):
            for j in range(A.shape[1]):
                A[i, j] = tmp[i, j % n] - A[i, j]


@pytest.mark.parametrize("layout", ["C", "strided", "reversed"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 1001])
@pytest.mark.parametrize("steps", [0, 1, 4])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_user_scratch_array_in_a_time_loop(n, steps, dtype, layout):
    rng = rng_for("scratch", n, steps, dtype, layout)
    check(smoothing_steps, make(rng, dtype, n, layout), steps)
    check(scaled_steps, make(rng, dtype, n, layout), steps)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (5, 1), (7, 5)])
def test_two_dimensional_scratch_array(shape, layout):
    rng = rng_for("scratch2d", shape, layout)
    check(row_scratch_steps, make(rng, np.float64, shape, layout), 3)


def test_user_scratch_arrays_are_hoisted():
    for kernel, args in ((smoothing_steps, (np.ones(5), 2)), (scaled_steps, (np.ones(5), 2)),
                         (row_scratch_steps, (np.ones((3, 4)), 2))):
        kernel(*args)
        assert "temporary `tmp` allocated once before the loop over `t`" in kernel.explain(), kernel.explain()


@plait.jit
def while_steps(a):
    t = 0
    while t < 3:
        tmp = np.empty(a.shape[0])
        tmp[:] = a * 2.0
        a[:] = tmp - t
        t += 1


@plait.jit
def nested_steps(a, S, T):
    for s in range(S):
        for t in range(T):
            tmp = np.empty(a.shape[0])
            for i in range(a.shape[0]):
                tmp[i] = a[i] * 0.5 + s
            for i in range(a.shape[0]):
                a[i] = tmp[a.shape[0] - 1 - i] - t


@pytest.mark.parametrize("n", [0, 1, 7])
def test_while_and_nested_loops(n):
    rng = rng_for("nested", n)
    check(while_steps, make(rng, np.float64, n, "strided"))
    for S, T in ((0, 2), (2, 0), (3, 2)):
        check(nested_steps, make(rng, np.float64, n), S, T)
    assert "allocated once before the `while` loop" in while_steps.explain()
    assert "allocated once before the loop over `s`" in nested_steps.explain()


@plait.jit
def steps_between_arguments(a, b, c, T):
    # b and c may share memory: the loop is versioned on their overlap test.
    for t in range(T):
        tmp = np.empty(a.shape[0])
        for i in range(a.shape[0]):
            tmp[i] = a[i] * t
        b[:] = c + 1.0
        for i in range(a.shape[0]):
            a[i] = tmp[a.shape[0] - 1 - i]


@plait.jit
def scratch_reused_by_name(a, T):
    # `tmp` names an earlier array whose value is dead when the loop starts.
    tmp = np.empty(a.shape[0])
    tmp[:] = a * 3.0
    a[:] = tmp
    for t in range(T):
        tmp = np.empty(a.shape[0])
        tmp[:] = a - t
        a[:] = tmp * 0.5


@pytest.mark.parametrize("n", [0, 1, 2, 9])
def test_versioned_time_loop_and_a_reused_name(n):
    rng = rng_for("versioned", n)
    g = make(rng, np.float64, n + 1)
    check(steps_between_arguments, make(rng, np.float64, n), g[1:], g[:-1], 3)
    check(steps_between_arguments, make(rng, np.float64, n), make(rng, np.float64, n), make(rng, np.float64, n), 3)
    check(scratch_reused_by_name, make(rng, np.float64, n, "reversed"), 3)
    assert "temporary `tmp` allocated once before the loop over `t`" in steps_between_arguments.explain()
    assert "temporary `tmp` allocated once before the loop over `t`" in scratch_reused_by_name.explain()


@plait.jit
def row_steps(A, out):
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


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3, 0), (37, 21)])
def test_serial_loop_in_a_parallel_loop(shape, layout):
    rng = rng_for("rows", shape, layout)
    check(row_steps, make(rng, np.float64, shape, layout), np.zeros(shape[0]), rtol=1e-12)
    assert "temporary `tmp` allocated once before the loop over `t`" in row_steps.explain()


@plait.jit
def doubled(a):
    # A temporary whose extent is the bound of the loop that fuses its uses.
    tmp = np.empty(a.shape[0])
    tmp[:] = a * 2.0
    a[:] = tmp


def test_temporary_whose_extent_bounds_the_fused_loop():
    check(doubled, np.arange(7.0))


@plait.jit
def growing_steps(a, T):
    out = np.zeros(T)
    for t in range(T):
        tmp = np.empty(t + 1)
        for i in range(t + 1):
            tmp[i] = a[i % a.shape[0]] * i
        out[t] = tmp[t]
    return out


@plait.jit
def negative_extent_steps(a, n):
    for t in range(3):
        a[0] += 1.0
        tmp = np.empty(n)
        for i in range(n):
            tmp[i] = a[i]
        a[0] = tmp[0] if n > 0 else a[0]


@plait.jit
def last_scratch(a, T):
    tmp = np.zeros(1)
    for t in range(T):
        tmp = np.empty(a.shape[0])
        tmp[:] = a + t
    return tmp


def test_allocations_kept_in_their_step():
    rng = rng_for("kept")
    check(growing_steps, make(rng, np.float64, 4), 6)
    check(negative_extent_steps, make(rng, np.float64, 4), 2)
    with pytest.raises(ValueError, match="negative dimensions"):
        negative_extent_steps(np.ones(3), -1)
    check(last_scratch, make(rng, np.float64, 5), 3)
    check(last_scratch, make(rng, np.float64, 5), 0)
    assert "its extents read `t`, which the loop assigns" in growing_steps.explain()
    assert "its extent `n` may be negative" in negative_extent_steps.explain()
    assert "it is read after the loop" in last_scratch.explain()
