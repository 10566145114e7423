"""Lists of numbers and of tuples of numbers, tuples kept in names, and
heapq (frontend/lower_lists.cpp, lower_heapq.cpp): each kernel against the
undecorated function on random inputs (duplicates, ties, NaN, empty and
one-element cases), Python's errors, and the refusals."""

import heapq
import math
from heapq import heappop as pop_least

import numpy as np
import pytest

import plait
from oracle import check, rng_for


@plait.jit
def squares(n):
    L = []
    for i in range(n):
        L.append(i * i)
    total = 0
    for x in L:
        total += x
    return L, total, len(L)


@plait.jit
def halves(a):
    out = []
    for i in range(a.shape[0]):
        if a[i] > 0:
            out.append(a[i] / 2)
    return out


@pytest.mark.parametrize("n", (0, 1, 2, 7, 33, 1000))
def test_append_iterate_and_return(n):
    check(squares, n)
    a = rng_for("halves", n).standard_normal(n)
    check(halves, a)
    check(halves, a.astype(np.float32))  # a list of float32 elements holds NumPy float32 scalars


@plait.jit
def displays(n, x):
    a = [1, 2, 3]
    b = [x] * n
    c = n * [0.5, -x]
    d = [(1, 2.5), (3, x)]
    return a, b, c, d


@pytest.mark.parametrize("n", (-2, 0, 1, 5))
def test_displays_and_repetition(n):
    check(displays, n, 1.25)


@plait.jit
def indexing(n, i, j):
    L = [0] * n
    for k in range(n):
        L[k] = 3 * k + 1
    L[j] += 100
    L[-j - 1] = 7
    return L[i], L[-1], L


def test_indexing_counts_negative_indices_from_the_end():
    for i, j in ((0, 0), (4, -5), (-1, 2), (-5, 4)):
        check(indexing, 5, i, j)


@pytest.mark.parametrize("i, j, message", [(5, 0, "list index out of range"), (-6, 0, "list index out of range"),
                                           (0, 5, "list index out of range")])
def test_indices_out_of_range_raise_python_s_index_error(i, j, message):
    with pytest.raises(IndexError, match=message):
        indexing.py_func(5, i, j)
    with pytest.raises(IndexError, match=message):
        indexing(5, i, j)


@plait.jit
def store(n, j):
    L = [0] * n
    L[j] = 1
    return L


def test_storing_out_of_range_raises_python_s_index_error():
    check(store, 3, -3)
    for j in (3, -4):
        with pytest.raises(IndexError, match="list assignment index out of range"):
            store.py_func(3, j)
        with pytest.raises(IndexError, match="list assignment index out of range"):
            store(3, j)


@plait.jit
def pops(a, i):
    L = []
    for k in range(a.shape[0]):
        L.append(a[k])
    last = L.pop()
    middle = L.pop(i)
    kept = L.copy()
    L.clear()
    L.append(last)
    again = list(kept)
    again.append(middle)
    return last, middle, kept, L, again


def test_pop_copy_and_clear():
    a = rng_for("pops").integers(-50, 50, 9)
    for i in (0, 3, -1, -8, 7):
        check(pops, a, i)


@pytest.mark.parametrize("n, i, message", [(0, 0, "pop from empty list"), (1, 0, "pop from empty list"),
                                           (4, 3, "pop index out of range"), (4, -4, "pop index out of range")])
def test_pop_errors(n, i, message):
    a = np.arange(n, dtype=np.int64)
    with pytest.raises(IndexError, match=message):
        pops.py_func(a, i)
    with pytest.raises(IndexError, match=message):
        pops(a, i)


@plait.jit
def pairs(a):
    P = []
    for i in range(a.shape[0]):
        P.append((a[i], i))
    total = np.float64(0.0)
    count = 0
    for v, i in P:
        total += v * i
    for t in P:
        if t[1] % 2 == 0:
            count += 1
    first = (np.float64(0.0), -1)  # a variable keeps one type: NumPy floats, as P[0] gives
    if len(P) > 0:
        first = P[0]
    a0, i0 = first
    return P, total, count, first[0], first[1], a0 + i0


@pytest.mark.parametrize("n", (0, 1, 7, 40))
def test_lists_of_tuples_and_tuples_in_names(n):
    check(pairs, rng_for("pairs", n).standard_normal(n))


@plait.jit
def shape_tuple(A):
    s = A.shape
    t = (s[1], s[0])
    t = t[1], t[0]
    return t[0] * 10 + t[1]


def test_a_tuple_in_a_name_is_evaluated_before_it_is_bound():
    check(shape_tuple, np.zeros((3, 4)))


@plait.jit
def heap_order(keys, ids):
    h = []
    for k in range(keys.shape[0]):
        heapq.heappush(h, (keys[k], ids[k]))
    out_keys = np.empty(keys.shape[0])
    out_ids = np.empty(keys.shape[0], dtype=np.int64)
    n = 0
    while h:
        key, i = heapq.heappop(h)
        out_keys[n] = key
        out_ids[n] = i
        n += 1
    return out_keys, out_ids


@plait.jit
def heap_of_numbers(a):
    h = []
    for k in range(a.shape[0]):
        h.append(a[k])
    heapq.heapify(h)
    layout = list(h)
    smallest = []
    while len(h) > 0:
        smallest.append(heapq.heappop(h))
    return layout, smallest


@pytest.mark.parametrize("n", (0, 1, 2, 9, 100, 1001))
def test_heaps_break_ties_as_heapq(n):
    rng = rng_for("heaps", n)
    keys = rng.integers(0, 5, n).astype(np.float64)  # many equal keys: the ids decide, as in heapq
    ids = rng.permutation(n).astype(np.int64)
    check(heap_order, keys, ids)
    with_nan = rng.standard_normal(n)
    with_nan[::7] = np.nan  # NaN compares false both ways: the layout is heapq's, element by element
    check(heap_of_numbers, with_nan)
    check(heap_of_numbers, rng.integers(0, 3, n))


@plait.jit
def heap_replace(a, x):
    h = [a[0], a[1], a[2]]
    heapq.heapify(h)
    for k in range(3, a.shape[0]):
        heapq.heappush(h, a[k])
    r = heapq.heapreplace(h, x)
    p = heapq.heappushpop(h, x - 1.0)
    q = heapq.heappushpop(h, x + 100.0)
    return r, p, q, h


def test_heapreplace_and_heappushpop():
    a = rng_for("replace").standard_normal(12)
    for x in (-5.0, 0.5, 50.0):
        check(heap_replace, a, np.float64(x))  # the list's elements are all NumPy floats, as in Python


@plait.jit
def pop_empty_heap(n):
    h = []
    for k in range(n):
        heapq.heappush(h, k)
    return heapq.heappop(h)


def test_popping_an_empty_heap_raises_heapq_s_error():
    assert pop_empty_heap(3) == 0
    with pytest.raises(IndexError, match="index out of range"):
        pop_empty_heap(0)


@plait.jit
def cut_sizes(indptr, indices, o):
    """Edges of a graph cut by the windows [o, s] (the changepoint kernel)."""
    n = indptr.shape[0] - 1
    R = np.zeros(n, dtype=np.int64)
    hi = []
    lo = 0
    for s in range(n):
        if s >= o:
            for p in range(indptr[s], indptr[s + 1]):
                v = indices[p]
                if v > s:
                    heapq.heappush(hi, (v, s))
                elif v < o:
                    lo += 1
        while hi and hi[0][0] <= s:
            heapq.heappop(hi)
        R[s] = len(hi) + lo
    return R


@pytest.mark.parametrize("n", (1, 2, 10, 60))
def test_a_heap_in_a_while_condition(n):
    rng = rng_for("cut", n)
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.2]
    neighbours = [[] for _ in range(n)]
    for i, j in edges:
        neighbours[i].append(j)
        neighbours[j].append(i)
    indptr = np.cumsum([0] + [len(x) for x in neighbours]).astype(np.int64)
    indices = np.array([v for x in neighbours for v in x], dtype=np.int32)
    for o in (0, n // 2, n - 1):
        check(cut_sizes, indptr, indices, o)


@plait.jit
def smallest_per_row(A, k):
    out = np.empty((A.shape[0], k))
    for i in plait.prange(A.shape[0]):
        h = []  # each iteration its own list
        for j in range(A.shape[1]):
            heapq.heappush(h, A[i, j])
        for m in range(k):
            out[i, m] = pop_least(h)
    return out


@pytest.mark.parametrize("shape", [(0, 4), (1, 3), (37, 20)])
def test_a_list_per_iteration_of_a_parallel_loop(shape):
    A = rng_for("rows", shape).standard_normal(shape)
    check(smallest_per_row, A, min(3, shape[1]))


def push(h, item):
    heapq.heappush(h, item)


@plait.jit
def through_a_callee(a):
    h = []
    for k in range(a.shape[0]):
        push(h, -a[k])
    return h


def test_a_callee_changes_the_caller_s_list():
    check(through_a_callee, rng_for("callee").standard_normal(10))


@plait.jit
def second_name(n):
    L = [1, 2]
    M = L
    return M


@plait.jit
def pop_in_expression(n):
    L = [1, 2]
    return L.pop() + n


@plait.jit
def mixed_elements(n):
    L = [1.0]
    L.append((n, n))
    return L


@plait.jit
def list_of_arrays(a):
    L = [a, a]
    return len(L)


@pytest.mark.parametrize("kernel, error, message", [
    (second_name, NotImplementedError, "second name of the list 'L'"),
    (pop_in_expression, NotImplementedError, r"L.pop\(\) changes a list, dict or set"),
    (mixed_elements, TypeError, "holds"),
    (list_of_arrays, NotImplementedError, "lists hold numbers or tuples of numbers"),
])
def test_refusals_name_the_line(kernel, error, message):
    args = (np.zeros(2),) if kernel is list_of_arrays else (3,)
    with pytest.raises(error, match=message) as excinfo:
        kernel(*args)
    assert excinfo.value.path == __file__


def test_ints_and_floats_in_one_list_are_floats():
    @plait.jit
    def mixed(x):
        L = [1, x]
        return L

    # Python keeps 1 an int; a Plait list has one element type (as a variable has).
    assert mixed(2.5) == [1.0, 2.5] and type(mixed(2.5)[0]) is float
    assert math.isclose(sum(mixed(0.25)), sum(mixed.py_func(0.25)))


@plait.jit
def comprehensions(a, n):
    squares = [i * i for i in range(n)]
    positive = [a[i] for i in range(a.shape[0]) if a[i] > 0]
    pairs = [(i, j) for i in range(n) for j in range(i) if (i + j) % 2 == 1]
    doubled = [2 * x for x in positive]
    firsts = [p for p, q in pairs if q == 0]
    i = -1  # the comprehensions' variables are their own: i keeps its value
    return squares, positive, pairs, doubled, firsts, i


@pytest.mark.parametrize("n", (0, 1, 6))
def test_list_comprehensions(n):
    check(comprehensions, rng_for("comprehensions", n).standard_normal(2 * n + 1), n)


def test_comprehensions_elsewhere_are_refused_at_their_line():
    @plait.jit
    def summed(n):
        return len([i for i in range(n)])

    with pytest.raises(NotImplementedError, match="list comprehensions are supported as the whole value"):
        summed(3)
