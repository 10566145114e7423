"""plait.jit(disable_passes=...): each optional pass of the CPU pipeline can
be left out (the ablation of BENCHMARKS.md), the kernel still returns what
Python returns, explain() says which pass did not run, and a name that is
not an optional pass is refused with the list of those that are."""

import numpy as np
import pytest

import plait
from oracle import random_array


def licm_and_products(a, b):
    s = 0.0
    for i in range(3):
        t = a @ b  # invariant: hoist_invariant_arrays
        u = t * 2.0 + 1.0  # two statements over one extent: fuse_loop_nests
        s += u.sum() + i
    return s


def scratch_in_steps(x, steps):
    total = 0.0
    for k in range(steps):
        w = np.empty(x.shape[0])  # scratch of each step: hoist_allocations
        for i in range(x.shape[0]):
            w[i] = x[i] * k
        total += w.sum()
    return total


def product(a, b):
    return a @ b  # offload_matmul


# What each pass, when it runs, says in explain() about these kernels.
FIRES = {
    "hoist_invariant_arrays": (licm_and_products, "is the same in every step of the loop"),
    "fuse_loop_nests": (licm_and_products, "fused the loop nests of lines"),
    "hoist_allocations": (scratch_in_steps, "allocated once before the loop"),
    "offload_matmul": (product, "handed to the BLAS library"),
}


def arguments(fn, rng):
    if fn is scratch_in_steps:
        return random_array(rng, np.float64, 9), 4
    return random_array(rng, np.float64, (5, 7)), random_array(rng, np.float64, (7, 3))


def test_the_cpu_has_these_optional_passes():
    assert plait.optional_passes() == ["hoist_invariant_arrays", "fuse_loop_nests", "hoist_allocations",
                                       "offload_matmul"]
    assert plait.optional_passes("cuda") == []


@pytest.mark.parametrize("name", sorted(FIRES))
def test_each_pass_can_be_left_out(name):
    fn, remark = FIRES[name]
    rng = np.random.default_rng(7)
    args = arguments(fn, rng)
    off = plait.jit(fn, disable_passes=(name,), cache=False)
    np.testing.assert_allclose(off(*args), fn(*args), rtol=1e-12)
    assert f"pass {name} not run: disabled by request" in off.explain()
    assert remark not in off.explain()
    on = plait.jit(fn, cache=False)
    np.testing.assert_allclose(on(*args), fn(*args), rtol=1e-12)
    assert remark in on.explain() and "not run" not in on.explain()


def test_all_of_them_at_once():
    rng = np.random.default_rng(8)
    for fn in (licm_and_products, scratch_in_steps, product):
        args = arguments(fn, rng)
        off = plait.jit(fn, disable_passes=plait.optional_passes(), cache=False)
        np.testing.assert_allclose(off(*args), fn(*args), rtol=1e-12)


@pytest.mark.parametrize("target, listed", [("cpu", "optional: hoist_invariant_arrays, fuse_loop_nests"),
                                            ("cuda", "optional: none")])
def test_a_required_or_unknown_pass_is_refused(target, listed):
    for name in ("detect_reductions", "no_such_pass"):
        with pytest.raises(ValueError, match=f"'{name}' is not an optional pass of the {target} target; {listed}"):
            plait.jit(licm_and_products, target=target, disable_passes=[name])
