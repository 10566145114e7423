"""ipnsw (Morozov and Babenko's inner-product navigable small-world search):
approximate maximum-inner-product search on a four-level proximity graph.
Each query descends greedily through the upper levels, then runs a best-first
search on the bottom level with a min-heap of candidates and a max-heap of
the ef best results; every inner product computed is counted. The graphs are
built (untimed) as the specification says; only the queries are timed."""

import heapq

import numpy as np

import plait
from plait.bench.kernel_support import njit, sizes

PRESETS = {
    "test": dict(N=1000, d=16, K=10, queries=8),
    "S": dict(N=5000, d=32, K=20, queries=20),
    "M": dict(N=50_000, d=100, K=50, queries=256),
}
PARAMETERS = ("data", "queries", "ptr", "idx", "upper_ptr", "upper_idx", "entry", "ef", "k")
OUTPUTS = ()


def compare(name, reference, value):
    """The spec's check against NumPy on the same graph: at least 99% of the
    result ids identical and the count of inner products within 1% (float32
    sums in another order flip near-ties)."""
    if value.shape != reference.shape:
        return f"shape {value.shape}, expected {reference.shape}"
    if name == "ret0":
        same = np.mean(value == reference) if reference.size else 1.0
        return None if same >= 0.99 else f"{same:.1%} of the ids identical, expected at least 99%"
    return None if abs(int(value) - int(reference)) <= 0.01 * int(reference) else (
        f"{int(value)} inner products, expected {int(reference)} (within 1%)")


def initialize(preset, seed=0):
    """K cluster centres; each point a normalised centre plus noise, scaled by
    a lognormal factor (float32); queries normalised likewise. Levels
    L = min(3, floor(-ln U / ln 32)), the first top-level node raised to level
    3 as the entry. The bottom level links each node to its 28 same-cluster
    nodes of largest inner product and 4 random nodes; level l links each
    node of level >= l to its 16 best in that set and 4 random members."""
    N, d, K, Q = (sizes(PRESETS, preset)[key] for key in ("N", "d", "K", "queries"))
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((K, d))
    label = rng.integers(0, K, N)
    points = centres[label] + rng.standard_normal((N, d))
    points /= np.linalg.norm(points, axis=1)[:, None]
    data = (points * rng.lognormal(0.0, 0.25, N)[:, None]).astype(np.float32)
    queries = centres[rng.integers(0, K, Q)] + rng.standard_normal((Q, d))
    queries = (queries / np.linalg.norm(queries, axis=1)[:, None]).astype(np.float32)
    level = np.minimum(3, np.floor(-np.log(rng.random(N)) / np.log(32))).astype(np.int64)
    entry = int(np.flatnonzero(level == level.max())[0])
    level[entry] = 3

    def best_links(members, count, extra):
        """For each member, its `count` best others among `members` and
        `extra` random others: rows of a CSR over all N nodes."""
        rows = {}
        scores = data[members] @ data[members].T
        np.fill_diagonal(scores, -np.inf)
        take = min(count, members.size - 1)
        for i, node in enumerate(members):
            best = members[np.argsort(-scores[i], kind="stable")[:take]] if take > 0 else members[:0]
            others = members[members != node]
            random = rng.choice(others, size=min(extra, others.size), replace=False) if others.size else others
            rows[int(node)] = np.concatenate([best, random])
        return rows

    bottom = {}
    for c in range(K):
        bottom.update(best_links(np.flatnonzero(label == c), 28, 0))
    for node in range(N):  # 4 random nodes anywhere, for recall
        bottom[node] = np.concatenate([bottom[node], rng.choice(N, size=4, replace=False)])
    ptr, idx = _csr([bottom], N)
    upper = [best_links(np.flatnonzero(level >= l), 16, 4) for l in (1, 2, 3)]
    upper_ptr, upper_idx = _csr(upper, N)
    return dict(data=data, queries=queries, ptr=ptr[0], idx=idx, upper_ptr=upper_ptr, upper_idx=upper_idx,
                entry=entry, ef=128, k=10)


def _csr(levels, N):
    """Row pointers (one row of N + 1 per level) into one index array."""
    ptr = np.zeros((len(levels), N + 1), dtype=np.int64)
    idx = []
    start = 0
    for l, rows in enumerate(levels):
        for node in range(N):
            ptr[l, node] = start
            links = rows.get(node, np.zeros(0, dtype=np.int64))
            idx.append(links)
            start += links.size
        ptr[l, N] = start
    return ptr, np.concatenate(idx).astype(np.int64)


# ---------------------------------------------------------------- NumPy

def search(data, q, ptr, idx, upper_ptr, upper_idx, entry, ef, k, ids, row):
    """One query: its k best ids into ids[row]; returns the inner products computed."""
    calls = 1
    v = entry
    dv = -np.dot(data[v], q)
    for level in range(2, -1, -1):  # the graphs of levels 3, 2, 1
        changed = True
        while changed:  # passes over v's links until one changes nothing
            changed = False
            start = v
            for p in range(upper_ptr[level, start], upper_ptr[level, start + 1]):
                u = upper_idx[p]
                du = -np.dot(data[u], q)
                calls += 1
                if du < dv:
                    v, dv = u, du
                    changed = True
    seen = np.zeros(data.shape[0], dtype=np.bool_)
    seen[v] = True
    candidates = [(dv, v)]  # min-heap by distance
    results = [(-dv, v)]  # max-heap by distance (negated)
    while candidates:
        dc, c = heapq.heappop(candidates)
        if dc > -results[0][0]:
            break
        for p in range(ptr[c], ptr[c + 1]):
            u = idx[p]
            if not seen[u]:
                seen[u] = True
                du = -np.dot(data[u], q)
                calls += 1
                if du < -results[0][0] or len(results) < ef:
                    heapq.heappush(candidates, (du, u))
                    heapq.heappush(results, (-du, u))
                    if len(results) > ef:
                        heapq.heappop(results)
    ranked = list(results)  # the results by ascending distance, ties by id
    for j in range(len(ranked)):
        negated, u = ranked[j]
        ranked[j] = (-negated, u)
    heapq.heapify(ranked)
    for i in range(k):
        ids[row, i] = heapq.heappop(ranked)[1] if ranked else -1
    return calls


def kernel_numpy(data, queries, ptr, idx, upper_ptr, upper_idx, entry, ef, k):
    ids = np.empty((queries.shape[0], k), dtype=np.int64)
    calls = 0
    for i in range(queries.shape[0]):
        calls += search(data, queries[i], ptr, idx, upper_ptr, upper_idx, entry, ef, k, ids, i)
    return ids, calls


# ---------------------------------------------------------------- Numba
search_numba = njit(search)


@njit
def kernel_numba(data, queries, ptr, idx, upper_ptr, upper_idx, entry, ef, k):
    ids = np.empty((queries.shape[0], k), dtype=np.int64)
    calls = 0
    for i in range(queries.shape[0]):
        calls += search_numba(data, queries[i], ptr, idx, upper_ptr, upper_idx, entry, ef, k, ids, i)
    return ids, calls


# ---------------------------------------------------------------- Plait
# The NumPy function, called from the kernel (the call is inlined), with one
# change: the conditional expression that pops a heap is an if statement (a
# call that changes a list is a statement of its own in a kernel).

def search_plait(data, q, ptr, idx, upper_ptr, upper_idx, entry, ef, k, ids, row):
    calls = 1
    v = entry
    dv = -np.dot(data[v], q)
    for level in range(2, -1, -1):
        changed = True
        while changed:
            changed = False
            start = v
            for p in range(upper_ptr[level, start], upper_ptr[level, start + 1]):
                u = upper_idx[p]
                du = -np.dot(data[u], q)
                calls += 1
                if du < dv:
                    v, dv = u, du
                    changed = True
    seen = np.zeros(data.shape[0], dtype=np.bool_)
    seen[v] = True
    candidates = [(dv, v)]
    results = [(-dv, v)]
    while candidates:
        dc, c = heapq.heappop(candidates)
        if dc > -results[0][0]:
            break
        for p in range(ptr[c], ptr[c + 1]):
            u = idx[p]
            if not seen[u]:
                seen[u] = True
                du = -np.dot(data[u], q)
                calls += 1
                if du < -results[0][0] or len(results) < ef:
                    heapq.heappush(candidates, (du, u))
                    heapq.heappush(results, (-du, u))
                    if len(results) > ef:
                        heapq.heappop(results)
    ranked = list(results)
    for j in range(len(ranked)):
        negated, u = ranked[j]
        ranked[j] = (-negated, u)
    heapq.heapify(ranked)
    for i in range(k):
        best = (dv, -1)
        if ranked:
            best = heapq.heappop(ranked)
        ids[row, i] = best[1]  # heapq.heappop(ranked)[1] if ranked else -1
    return calls


@plait.jit
def kernel_plait(data, queries, ptr, idx, upper_ptr, upper_idx, entry, ef, k):
    ids = np.empty((queries.shape[0], k), dtype=np.int64)
    calls = 0
    for i in range(queries.shape[0]):
        calls += search_plait(data, queries[i], ptr, idx, upper_ptr, upper_idx, entry, ef, k, ids, i)
    return ids, calls
