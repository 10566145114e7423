"""Lists, heapq, dicts and sets on the CUDA target (frontend/lower_lists.cpp,
lower_dicts.cpp): the CPU
tests' kernels, compiled for the GPU, against the undecorated functions for
each array kind. A list's arrays are allocated like any array of the
kernel's host code; its loops run where the back end places them."""

import os
import sys

import numpy as np
import pytest

import plait
from test_cuda_run import KINDS, check

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_dicts import counts, first_seen, removals, visited  # noqa: E402
from test_lists import comprehensions, cut_sizes, halves, heap_of_numbers, heap_order, pairs, pops, squares  # noqa: E402

on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


@on_gpu
@pytest.mark.parametrize("n", [0, 1, 33, 1000])
def test_append_iterate_and_return(n):
    check(squares.py_func, [n], "numpy")


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 7, 100])
def test_lists_of_array_elements(kind, n):
    rng = np.random.default_rng(n)
    check(halves.py_func, [rng.standard_normal(n)], kind)
    check(pairs.py_func, [rng.standard_normal(n)], kind)
    keys = rng.integers(0, 5, n).astype(np.float64)
    check(heap_order.py_func, [keys, rng.permutation(n).astype(np.int64)], kind)
    with_nan = rng.standard_normal(n)
    with_nan[::7] = np.nan
    check(heap_of_numbers.py_func, [with_nan], kind)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
def test_pops_and_a_heap_in_a_while_condition(kind):
    rng = np.random.default_rng(3)
    check(pops.py_func, [rng.integers(-50, 50, 9), 3], kind)
    n = 40
    neighbours = [[] for _ in range(n)]
    for i in range(1, n):
        j = int(rng.integers(0, i))
        neighbours[i].append(j)
        neighbours[j].append(i)
    indptr = np.cumsum([0] + [len(x) for x in neighbours]).astype(np.int64)
    indices = np.array([v for x in neighbours for v in x], dtype=np.int64)
    for o in (0, 17):
        check(cut_sizes.py_func, [indptr, indices, o], kind)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 9, 500])
def test_comprehensions_dicts_and_sets(kind, n):
    rng = np.random.default_rng(n)
    keys = rng.integers(-5, max(1, n // 3), n)
    check(counts.py_func, [keys], kind)
    check(first_seen.py_func, [keys, rng.standard_normal(n)], kind)
    check(removals.py_func, [keys, rng.integers(0, 60, n // 2 + 1)], kind)
    check(comprehensions.py_func, [rng.standard_normal(2 * n + 1), min(n, 6)], kind)
    if n:
        check(visited.py_func, [keys, rng.integers(-5, max(1, n // 3), n), keys[0]], kind)
