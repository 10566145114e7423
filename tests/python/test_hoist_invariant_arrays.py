"""Loop-invariant code motion of array statements
(transforms/hoist_invariant_arrays.h): a statement whose value is the same
in every step of a serial loop is computed once before it, only when the
loop runs a step; the results stay the undecorated function's, and
explain() says what moved and what stayed, with the reason."""

import numpy as np
import pytest

import plait
from oracle import check, rng_for

MOVED = "is the same in every step of the loop over `t`"


@plait.jit
def gram_steps(X, v, iters):
    s = 0.0
    for t in range(iters):
        G = X @ X.T
        w = np.exp(-v) * 2.0
        H = G * 0.5  # reads G: moves after it
        s += np.sum(H @ w) + t
    return float(s)  # with no step Python's s stays a float


@pytest.mark.parametrize("shape, iters", [((0, 3), 2), ((1, 1), 1), ((7, 5), 4), ((7, 5), 0)])
def test_invariant_statements_move_before_the_loop(shape, iters):
    rng = rng_for("gram_steps", shape)
    X = rng.random(shape)
    v = rng.random(shape[0])
    check(gram_steps, X, v, iters, rtol=1e-12)
    text = gram_steps.explain()
    for name in ("G", "w", "H"):
        assert f"`{name}` {MOVED}" in text and "computed once before the loop" in text, text


@plait.jit
def mismatched(X, Y, iters):
    s = 0.0
    for t in range(iters):
        G = X @ Y
        s += G[0, 0]
    return float(s)


def test_a_loop_of_no_step_computes_and_raises_nothing():
    X, Y = np.ones((3, 4)), np.ones((5, 2))
    check(mismatched, X, Y, 0)
    with pytest.raises(ValueError):
        mismatched(X, Y, 1)


@plait.jit
def changing(X, iters):
    s = 0.0
    for t in range(iters):
        G = X * 2.0
        s += G.sum()
        X[0, 0] += 1.0
    return float(s)


@plait.jit
def read_before(X, iters):
    s = 0.0
    G = X * 0.0
    for t in range(iters):
        s += G.sum()
        G = X * 2.0
    return float(s)


@plait.jit
def exits_first(X, iters, limit):
    s = 0.0
    for t in range(iters):
        if s > limit:
            break
        G = X @ X.T
        s += G[0, 0]
    return float(s)


@plait.jit
def writes_an_argument(X, out):
    for t in range(out.shape[0]):
        G = X * 2.0
        out[t] = G.sum()


def test_statements_that_change_or_cannot_move_stay():
    rng = rng_for("changing")
    X = rng.random((4, 3))
    check(changing, X, 3, rtol=1e-12)
    assert MOVED not in changing.explain()  # its value changes: no remark
    check(read_before, X, 3, rtol=1e-12)
    assert "a step reads `G` before the statement binds it" in read_before.explain()
    check(exits_first, X, 5, 1.0, rtol=1e-12)
    assert "a statement before it may leave the step" in exits_first.explain()
    check(writes_an_argument, X, np.empty(3), rtol=1e-12)
    assert "may share memory with it" in writes_an_argument.explain()


def test_an_argument_written_through_another_name_is_seen():
    # out is a row of X: writing it changes X, so G must be recomputed.
    X = rng_for("aliased").random((3, 3))
    expected = X.copy()
    writes_an_argument.py_func(expected, expected[0])
    got = X.copy()
    writes_an_argument(got, got[0])
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@plait.jit
def nested(X, n, m):
    s = 0.0
    for i in range(n):
        for t in range(m):
            G = X * float(i)  # changes with i only: moves out of the loop over t
            s += G.sum()
    return float(s)


def test_a_statement_moves_out_of_the_innermost_loop_it_is_invariant_in():
    X = rng_for("nested").random((5, 4))
    check(nested, X, 3, 4, rtol=1e-12)
    check(nested, X, 2, 0)
    assert f"`G` {MOVED}" in nested.explain()
