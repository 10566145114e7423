"""Affine sparse attention patterns (ACSR): plait.sparse.acsr.

A pattern says which keys each query row attends to. In the regular
patterns of long-sequence attention (windows, dilated and strided windows,
blocks, global tokens) the kept columns of a row form one or two arithmetic
progressions, so a row is stored as at most two affine parts, each its first
column, stride and count: the k-th column of a part is first + stride * k.
No per-entry column index is stored.

    sliding(seq_len, window)                |i - j| <= window
    causal_window(seq_len, window)          0 <= i - j <= window
    dilated(seq_len, window, dilation)      |i - j| <= window, (i - j) % dilation == 0
    strided(seq_len, stride)                0 <= i - j, (i - j) % stride == 0
    blocked(seq_len, block)                 i // block == j // block
    global_window(seq_len, window, globals) |i - j| <= window, or i < globals, or j < globals
    from_mask(mask, shape=None)             a boolean (queries x keys) mask, or mask_mod(q_idx, kv_idx)
                                            (FlexAttention's, also with (b, h, q_idx, kv_idx))

i is the query's index, j the key's, both from 0 to seq_len - 1. The
constructors are cached by their parameters (the last 64 of each): the same
call gives the same pattern, whose CSR matrix and device copies are made
once. A pattern's arrays are read-only. A pattern
has the value semantics of a SciPy csr_array of ones on its entries
(tocsr() gives that matrix, made once), so plait.sparse.mask(P, q @ k.T)
and P's SciPy operations work on it as they work on a csr_array, in plain
Python and in compiled kernels alike; plait.attention (attention.py) runs
attention over it.
"""

import functools
import inspect

import numpy as np

__all__ = ["Pattern", "blocked", "causal_window", "dilated", "from_mask", "global_window", "sliding", "strided"]

MAX_PARTS = 2  # affine parts per row: a window and the global columns


class Pattern:
    """A sparse attention pattern of `shape` (queries, keys) whose row i keeps
    the columns first[p][i] + stride[p][i] * t for t < count[p][i], for each
    part p; the parts of a row are disjoint."""

    format = "acsr"
    ndim = 2

    def __init__(self, shape, parts, name="pattern"):
        self.shape = (int(shape[0]), int(shape[1]))
        self.parts = [tuple(_frozen(a) for a in part) for part in parts]
        self.name = name
        self._check_parts()
        # The kept entries, each row's columns in order, made once: tocsr()
        # and comparisons read them.
        self._indptr, self._indices = self._entries()
        self._csr = None
        self._tiles = None  # the fused kernel's tile plan, made on first use
        self._device_copies = {}  # plait.attention's copies (tocsr(), tile plans) on GPUs, by library and device

    def _check_parts(self):
        rows, cols = self.shape
        if rows < 0 or cols < 0:
            raise ValueError(f"{self.name}: a pattern's shape is not negative, got {self.shape}")
        if not 1 <= len(self.parts) <= MAX_PARTS:
            raise ValueError(f"{self.name}: a row has 1 to {MAX_PARTS} affine parts, got {len(self.parts)}")
        for first, stride, count in self.parts:
            if not (first.shape == stride.shape == count.shape == (rows,)):
                raise ValueError(f"{self.name}: each part holds one first column, stride and count per row")
            last = first + stride * np.maximum(count - 1, 0)
            bad = (count < 0) | ((count > 0) & ((stride < 1) | (first < 0) | (last >= cols)))
            if bad.any():
                r = int(np.argmax(bad))
                raise ValueError(f"{self.name}: row {r}'s part (first {first[r]}, stride {stride[r]}, count "
                                 f"{count[r]}) leaves the {cols} columns")

    def _entries(self):
        """(indptr, indices) of the kept entries, each row's columns in order
        (int32 where they fit); parts that meet (a column kept twice) are a
        ValueError."""
        rows, cols = self.shape
        counts = sum(part[2] for part in self.parts)
        indptr = np.zeros(rows + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        row_parts, col_parts = [], []
        for first, stride, count in self.parts:
            r = np.repeat(np.arange(rows, dtype=np.int64), count)
            start = np.repeat(np.cumsum(count) - count, count)
            row_parts.append(r)
            col_parts.append(first[r] + stride[r] * (np.arange(r.size, dtype=np.int64) - start))
        if len(self.parts) == 1:
            # One part per row: its columns already come row by row, in order.
            r, c = row_parts[0], col_parts[0]
        else:
            r, c = np.concatenate(row_parts), np.concatenate(col_parts)
            order = np.lexsort((c, r))
            r, c = r[order], c[order]
            same = (c[1:] == c[:-1]) & (r[1:] == r[:-1])
            if same.any():
                at = int(np.argmax(same))
                raise ValueError(f"{self.name}: row {r[at]}'s affine parts keep column {c[at]} twice")
        index = np.int32 if max(indptr[-1], cols) < 2**31 else np.int64
        return indptr.astype(index), c.astype(index)

    @property
    def nnz(self):
        """The kept scores."""
        return int(self._indptr[-1])

    def tocsr(self, copy=False):
        """The SciPy csr_array of ones on the pattern, made on the first call
        and shared by later ones."""
        if self._csr is None:
            import scipy.sparse as sp

            self._csr = sp.csr_array((np.ones(self._indices.size), self._indices, self._indptr), shape=self.shape,
                                     copy=False)
            self._csr.has_canonical_format = True
        return self._csr.copy() if copy else self._csr

    def toarray(self):
        return self.tocsr().toarray()

    def tiles(self):
        """The plan of the fused attention kernel (made once): rows of the
        same strides and column residues grouped into tiles of the kernel's
        `tile_rows` queries whose keys are gathered from one progression per
        part (src/tensor/affine_tiles.h). A dict: `rows`, `tiles`,
        `row_parts` (int32 arrays), `tile_count`, `tile_rows`, `slots`,
        `split_groups`, `kept`, `computed` (the scores the tiles compute) and
        `description`."""
        plan = self._tiles
        if plan is None:
            from . import _core

            parts = [tuple(np.ascontiguousarray(a, dtype=np.int64).tobytes() for a in part) for part in self.parts]
            plan = _core.affine_tiles(self.shape[0], self.shape[1], parts)
            for name in ("rows", "tiles", "row_parts"):
                plan[name] = np.frombuffer(plan[name], dtype=np.int32)
            self._tiles = plan
        return plan

    def explain(self):
        """The pattern's affine metadata and the fused kernel's tiles, as text."""
        lines = [repr(self)]
        for p, (first, stride, count) in enumerate(self.parts):
            live = count > 0
            if not live.any():
                lines.append(f"  part {p}: no row keeps columns")
                continue
            strides = np.unique(stride[live])
            lines.append(f"  part {p}: {int(live.sum())} rows, {int(count.sum())} columns, "
                         f"{int(count[live].min())} to {int(count[live].max())} a row, stride "
                         f"{int(strides[0]) if strides.size == 1 else f'{int(strides[0])} to {int(strides[-1])}'}")
        lines.append("  tiles: " + self.tiles()["description"])
        return "\n".join(lines)

    def mask(self):
        """The pattern as a dense boolean (queries x keys) mask."""
        mask = np.zeros(self.shape, dtype=bool)
        mask[np.repeat(np.arange(self.shape[0]), np.diff(self._indptr)), self._indices] = True
        return mask

    def __getattr__(self, attribute):
        # The rest of a csr_array's methods and attributes (multiply, sum, T, indptr, ...).
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return getattr(self.tocsr(), attribute)

    def __matmul__(self, other):
        return self.tocsr() @ other

    def __rmatmul__(self, other):
        return other @ self.tocsr()

    def __mul__(self, other):
        return self.tocsr() * other

    __rmul__ = __mul__

    def __eq__(self, other):
        if not isinstance(other, Pattern):
            return NotImplemented
        if self.shape != other.shape:
            return False
        return bool(np.array_equal(self._indptr, other._indptr) and np.array_equal(self._indices, other._indices))

    __hash__ = object.__hash__

    def __repr__(self):
        rows, cols = self.shape
        strides = sorted({int(s) for first, stride, count in self.parts for s in np.unique(stride[count > 0])})
        total = rows * cols
        kept = f"{self.nnz} of {total} scores kept ({100.0 * self.nnz / total:.3g}%)" if total else "no scores"
        return (f"<plait ACSR pattern {self.name} {rows} x {cols}: {len(self.parts)} affine part(s) per row, "
                f"strides {strides[:4]}{'...' if len(strides) > 4 else ''}; {kept}>")


def _frozen(a):
    """A read-only int64 copy: a pattern (cached by its parameters) does not change."""
    a = np.array(a, dtype=np.int64)
    a.setflags(write=False)
    return a


def _rows(seq_len):
    seq_len = int(seq_len)
    if seq_len < 0:
        raise ValueError(f"seq_len must not be negative, got {seq_len}")
    return np.arange(seq_len, dtype=np.int64)


def _positive(name, value):
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


def _not_negative(name, value):
    value = int(value)
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value


def _span(first, last, stride):
    """The part from `first` to `last` (both kept) by `stride`; empty where last < first."""
    count = np.where(last >= first, (last - first) // stride + 1, 0)
    return np.where(count > 0, first, 0), np.full_like(first, stride), count


@functools.lru_cache(maxsize=64)
def sliding(seq_len, window):
    """Keys within `window` positions of the query on either side."""
    i = _rows(seq_len)
    window = _not_negative("window", window)
    return Pattern((i.size, i.size), [_span(np.maximum(i - window, 0), np.minimum(i + window, i.size - 1), 1)],
                   f"sliding(window={window})")


@functools.lru_cache(maxsize=64)
def causal_window(seq_len, window):
    """The query's key and the `window` keys before it."""
    i = _rows(seq_len)
    window = _not_negative("window", window)
    return Pattern((i.size, i.size), [_span(np.maximum(i - window, 0), i, 1)], f"causal_window(window={window})")


@functools.lru_cache(maxsize=64)
def dilated(seq_len, window, dilation):
    """Every `dilation`-th key within `window` positions of the query, the
    query's own key among them."""
    i = _rows(seq_len)
    window = _not_negative("window", window)
    dilation = _positive("dilation", dilation)
    back = np.minimum(i, window) // dilation * dilation
    ahead = np.minimum(i.size - 1 - i, window) // dilation * dilation
    return Pattern((i.size, i.size), [_span(i - back, i + ahead, dilation)],
                   f"dilated(window={window}, dilation={dilation})")


@functools.lru_cache(maxsize=64)
def strided(seq_len, stride):
    """The query's key and every `stride`-th key before it."""
    i = _rows(seq_len)
    stride = _positive("stride", stride)
    return Pattern((i.size, i.size), [_span(i % stride, i, stride)], f"strided(stride={stride})")


@functools.lru_cache(maxsize=64)
def blocked(seq_len, block):
    """The keys of the query's block of `block` positions."""
    i = _rows(seq_len)
    block = _positive("block", block)
    start = i // block * block
    return Pattern((i.size, i.size), [_span(start, np.minimum(start + block, i.size) - 1, 1)],
                   f"blocked(block={block})")


@functools.lru_cache(maxsize=64)
def global_window(seq_len, window, globals):
    """Keys within `window` positions of the query, and the first `globals`
    tokens, which attend to every key and to which every query attends."""
    i = _rows(seq_len)
    n = i.size
    window = _not_negative("window", window)
    g = min(_not_negative("globals", globals), n)
    is_global = i < g
    # Part one: the global keys (a global query's: all keys); part two: the
    # window past them (empty for a global query).
    first_end = np.where(is_global, n - 1, g - 1)
    head = _span(np.zeros_like(i), first_end, 1)
    lo = np.maximum(i - window, g)
    hi = np.where(is_global, -1, np.minimum(i + window, n - 1))
    return Pattern((n, n), [head, _span(lo, hi, 1)], f"global_window(window={window}, globals={g})")


def from_mask(mask, shape=None):
    """The pattern of a boolean mask (queries x keys), or of a mask_mod
    function called on index arrays (q_idx, kv_idx), or (b, h, q_idx, kv_idx)
    with b = h = 0, over `shape` (an int for a square pattern). Each row's kept
    columns must form at most two arithmetic progressions; a ValueError names
    the first row that does not."""
    if callable(mask):
        if shape is None:
            raise TypeError("from_mask: a mask_mod function needs shape= (seq_len, or (queries, keys))")
        rows, cols = (shape, shape) if np.ndim(shape) == 0 else shape
        q = np.arange(int(rows))[:, None]
        kv = np.arange(int(cols))[None, :]
        arity = len(inspect.signature(mask).parameters)
        kept = mask(0, 0, q, kv) if arity == 4 else mask(q, kv)
        mask = np.broadcast_to(np.asarray(kept, dtype=bool), (int(rows), int(cols)))
    mask = np.asarray(mask)
    if mask.ndim != 2 or mask.dtype != np.bool_:
        raise TypeError(f"from_mask: the mask is a 2-D boolean array, got {mask.ndim}-D {mask.dtype}")
    rows = mask.shape[0]
    parts = [[np.zeros(rows, np.int64) for _ in range(3)] for _ in range(MAX_PARTS)]
    for r in range(rows):
        columns = np.flatnonzero(mask[r])
        runs = _arithmetic_runs(columns)
        if len(runs) > MAX_PARTS:
            raise ValueError(f"from_mask: row {r} is not affine: its {columns.size} kept columns form {len(runs)} "
                             f"arithmetic progressions (at most {MAX_PARTS}: a window and global columns), "
                             f"starting at columns {[int(columns[a]) for a, _, _ in runs[:4]]}")
        for p, (a, step, n) in enumerate(runs):
            parts[p][0][r], parts[p][1][r], parts[p][2][r] = columns[a], step, n
    for part in parts:
        part[1][part[2] == 0] = 1
    used = max(1, sum(1 for part in parts if part[2].any()))
    return Pattern(mask.shape, [tuple(part) for part in parts[:used]], "from_mask")


def _arithmetic_runs(columns):
    """Columns (increasing) as maximal runs from the left: (start, step, count)."""
    runs, a = [], 0
    while a < columns.size:
        if a + 1 == columns.size:
            runs.append((a, 1, 1))
            break
        step = int(columns[a + 1] - columns[a])
        b = a + 1
        while b + 1 < columns.size and columns[b + 1] - columns[b] == step:
            b += 1
        runs.append((a, step, b - a + 1))
        a = b + 1
    return runs
