"""Random sequences of container operations (lists with heapq, dicts, sets)
run by a kernel and by Python: the same results and the same errors, for
many seeds. Each sequence is an array of operation codes with their keys and
values, so one compiled kernel runs them all."""

import heapq

import numpy as np
import pytest

import plait
from oracle import check, rng_for


@plait.jit
def heap_program(ops, keys, ids):
    """0: push (key, id); 1: pop if not empty; 2: pushpop; 3: replace if not empty."""
    h = []
    out = []
    for i in range(ops.shape[0]):
        op = ops[i]
        if op == 0:
            heapq.heappush(h, (keys[i], ids[i]))
        elif op == 1:
            if h:
                k, j = heapq.heappop(h)
                out.append((k, j))
        elif op == 2:
            k, j = heapq.heappushpop(h, (keys[i], ids[i]))
            out.append((k, j))
        elif h:
            k, j = heapq.heapreplace(h, (keys[i], ids[i]))
            out.append((k, j))
    return out, h


@plait.jit
def dict_program(ops, keys, values):
    """0: d[k] = v; 1: d.pop(k, -1.0); 2: d[k] += v if present; 3: clear if it holds more than 40."""
    d = {}
    s = set()
    popped = np.float64(0.0)  # a variable keeps one type: the values are NumPy floats
    for i in range(ops.shape[0]):
        op = ops[i]
        k = keys[i]
        if op == 0:
            d[k] = values[i]
            s.add(k)
        elif op == 1:
            popped += d.pop(k, -1.0)
            s.discard(k)
        elif op == 2:
            if k in d:
                d[k] += values[i]
        elif len(d) > 40:
            d.clear()
    order = [k for k in d]
    return d, s, popped, order


@pytest.mark.parametrize("seed", range(12))
def test_random_heap_programs(seed):
    rng = rng_for("heap program", seed)
    n = int(rng.integers(1, 400))
    keys = rng.integers(0, 6, n).astype(np.float64)
    keys[rng.random(n) < 0.05] = np.nan
    check(heap_program, rng.integers(0, 4, n), keys, np.arange(n, dtype=np.int64))


@pytest.mark.parametrize("seed", range(12))
def test_random_dict_programs(seed):
    rng = rng_for("dict program", seed)
    n = int(rng.integers(1, 2000))
    check(dict_program, rng.integers(0, 4, n), rng.integers(-30, 100, n), rng.standard_normal(n))
