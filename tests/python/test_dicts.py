"""Dicts and sets with integer keys (frontend/lower_hash_tables.cpp,
lower_dicts.cpp): each kernel against the undecorated function on random
keys with repeats, removals and re-insertions (insertion order kept), empty
tables, many keys (the table grows), Python's KeyError, and the refusals."""

import numpy as np
import pytest

import plait
from oracle import check, rng_for


@plait.jit
def counts(keys):
    c = {}
    for i in range(keys.shape[0]):
        k = keys[i]
        if k in c:
            c[k] += 1
        else:
            c[k] = 1
    return c, len(c)


@plait.jit
def first_seen(keys, values):
    d = {}
    for i in range(keys.shape[0]):
        if keys[i] not in d:
            d[keys[i]] = values[i]
    total = np.float64(0.0)  # a variable keeps one type: the values' NumPy floats
    order = []
    for k, v in d.items():
        total += v
        order.append(k)
    return d, total, order


@pytest.mark.parametrize("n", (0, 1, 7, 100, 5000))
def test_counts_and_insertion_order(n):
    rng = rng_for("counts", n)
    keys = rng.integers(-20, max(1, n // 3), n)
    check(counts, keys)
    check(counts, keys.astype(np.int32))
    check(first_seen, keys, rng.standard_normal(n))


@plait.jit
def removals(keys, drop):
    d = {drop[0]: 10.0}  # keys of one type: NumPy ints, as the arrays give
    for i in range(keys.shape[0]):
        d[keys[i]] = i * 0.5
    removed = 0.0
    for i in range(drop.shape[0]):
        removed += d.pop(drop[i], -1.0)
    for i in range(drop.shape[0]):
        d[drop[i]] = 1.5  # comes back last, as in Python
    got = d.get(3, 0.0) + d.get(-1, 7.0)
    keys_after = [k for k in d]
    values_after = [v for v in d.values()]
    return d, removed, got, keys_after, values_after


def test_pop_get_and_reinsertion():
    rng = rng_for("removals")
    for n in (0, 5, 300):
        keys = rng.integers(0, 50, n)
        check(removals, keys, rng.integers(0, 60, n // 2 + 1))


@plait.jit
def visited(edges_from, edges_to, start):
    seen = set()
    seen.add(start)
    frontier = [start]
    while frontier:
        v = frontier.pop()
        for e in range(edges_from.shape[0]):
            if edges_from[e] == v and edges_to[e] not in seen:
                seen.add(edges_to[e])
                frontier.append(edges_to[e])
    s = {start, start + 1}
    s.discard(start + 1)
    return seen, len(seen), s, start in seen


@pytest.mark.parametrize("n", (1, 10, 200))
def test_sets_as_visited_sets(n):
    rng = rng_for("visited", n)
    a, b = rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n)
    check(visited, a, b, a[0])  # NumPy ints throughout: a set has one element type


@plait.jit
def while_members(keys, k):
    s = set()
    for i in range(keys.shape[0]):
        s.add(keys[i])
    steps = 0
    while k in s:  # the lookup runs before each test
        k += 1
        steps += 1
    return steps


def test_membership_in_a_while_condition():
    check(while_members, np.array([3, 4, 5, 7]), 3)
    check(while_members, np.array([3, 4, 5, 7]), 6)


@plait.jit
def missing(d_keys, k):
    d = {}
    for i in range(d_keys.shape[0]):
        d[d_keys[i]] = 1.0
    return d[k]


@plait.jit
def remove_missing(k):
    s = {1, 2}
    s.remove(k)
    return len(s)


def test_missing_keys_raise_key_error():
    assert missing(np.array([1, 2]), 2) == 1.0
    with pytest.raises(KeyError):
        missing.py_func(np.array([1, 2]), 5)
    with pytest.raises(KeyError):
        missing(np.array([1, 2]), 5)
    assert remove_missing(1) == 1
    with pytest.raises(KeyError):
        remove_missing(9)


@plait.jit
def changes_size(n):
    d = {0: 0}
    for k in d:
        if len(d) < n:
            d[k + 1] = k
    return d


def test_a_dict_changing_size_while_iterated_raises_as_python():
    with pytest.raises(RuntimeError, match="dictionary changed size during iteration"):
        changes_size.py_func(3)
    with pytest.raises(RuntimeError, match="dictionary changed size during iteration"):
        changes_size(3)
    check(changes_size, 1)


@plait.jit
def float_keys(x):
    d = {x: 1}
    return d


@plait.jit
def iterate_set(n):
    s = {1, 2, n}
    total = 0
    for k in s:
        total += k
    return total


@pytest.mark.parametrize("kernel, args, error, message", [
    (float_keys, (0.5,), NotImplementedError, "keys of a dict or set in a kernel are integers"),
    (iterate_set, (3,), NotImplementedError, "iterating over a set is not supported"),
])
def test_refusals_name_the_line(kernel, args, error, message):
    with pytest.raises(error, match=message) as excinfo:
        kernel(*args)
    assert excinfo.value.path == __file__
