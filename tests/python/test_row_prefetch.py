"""Differential tests of the CPU back end's row prefetching
(src/transforms/cpu/plan_row_prefetch.h): a loop over rows whose body makes several
vector passes, one of them calling vector math, runs that pass in chunks of
256 iterations that prefetch the next row the passes read and the row a later
pass writes.

The chunks change which iterations each vector loop runs and where its
reduction's partial sums meet, so the tests cover row lengths around the
chunk (255, 256, 257, 513), below a vector (1, 2, 7) and longer than the
caches, 0 and 1 rows, the last row (whose next-row prefetch is skipped),
every layout class (C rows are
prefetched, F and strided ones are not, an output of C layout still is),
NaN and infinities in rows, loops written by hand, and kernels whose other
passes read a second array or write through a slice. Results must match
NumPy up to the reassociation of the row sums."""

import numpy as np
import pytest

import oracle
import plait
from oracle import clone, dtype_id

_DISPATCHERS = {}


def jitted(fn):
    """One dispatcher per kernel for the whole module: signatures compile once."""
    if fn not in _DISPATCHERS:
        _DISPATCHERS[fn] = plait.jit(fn)
    return _DISPATCHERS[fn]


def check(fn, *args):
    """oracle.check with the tolerance of float reductions (the row sums)."""
    dtype = next(a.dtype for a in args if isinstance(a, np.ndarray))
    rtol = oracle.reduction_rtol(dtype)
    return oracle.check(jitted(fn), *args, rtol=rtol, atol=rtol)


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def log_softmax(x):
    m = np.max(x, axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def weighted_softmax(x, w):
    # w is read by the last pass only: its next row is prefetched too.
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    return e * w / np.sum(e, axis=1, keepdims=True)


def softmax_into_slice(x, out):
    # The passes write columns 1.. of a wider output: the write prefetch
    # follows the column offset.
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    out[:, 1:] = e / np.sum(e, axis=1, keepdims=True)


def softmax_rows_by_hand(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = np.max(x[i])
        e = np.exp(x[i] - m)
        out[i] = e / np.sum(e)


def exp_only(x):
    return np.exp(x)


def row_normalise(A):
    return A / A.sum(axis=1, keepdims=True)


ROW_LENGTHS = (1, 2, 7, 255, 256, 257, 513)
ROW_COUNTS = (0, 1, 2, 5)
LAYOUTS = ("C", "F", "strided", "reversed", "transposed")


def scaled(rng, dtype, shape, layout="C"):
    """Random values in [-20, 20) with a layout (oracle.with_layout)."""
    return oracle.with_layout(oracle.random_array(rng, dtype, shape, -20.0, 20.0), layout)


@pytest.mark.parametrize("dtype", oracle.FLOAT_DTYPES, ids=dtype_id)
def test_softmax_rows_around_the_chunk(rng, dtype):
    for n in ROW_LENGTHS:
        for rows in ROW_COUNTS:
            check(softmax, scaled(rng, dtype, (rows, n)))


def test_softmax_of_rows_longer_than_the_caches(rng):
    # Rows of 2 MiB and more: the next row's prefetches cannot all stay in L2.
    check(softmax, scaled(rng, np.float32, (3, (1 << 19) + 3)))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_softmax_layouts(rng, layout):
    for shape in ((1, 1), (3, 257), (9, 300)):
        check(softmax, scaled(rng, np.float32, shape, layout))


def test_softmax_of_empty_rows_raises_as_numpy_does(rng):
    x = np.zeros((3, 0), dtype=np.float32)
    with pytest.raises(ValueError):
        softmax(x.copy())
    with pytest.raises(ValueError, match="zero-size array"):
        jitted(softmax)(clone(x))


def test_softmax_rows_with_nan_and_infinities(rng):
    x = scaled(rng, np.float32, (12, 300))
    x[0, 3] = np.nan        # in the first chunk
    x[1, 290] = np.nan      # in the second chunk's remainder
    x[2, :] = np.nan
    x[3, :] = -np.inf
    x[4, 255] = np.inf      # at the end of the first chunk
    x[5, 256] = -np.inf     # at the start of the second
    x[6, :] = np.inf
    x[7, 10] = np.inf
    x[7, 20] = np.nan
    x[11, 299] = np.nan     # the last row: no row after it to prefetch
    check(softmax, x)
    check(log_softmax, x)


def test_three_and_four_dimensional_softmax(rng):
    # The row loop is then a serial loop inside the parallel one.
    check(softmax, scaled(rng, np.float32, (3, 4, 257)))
    check(softmax, scaled(rng, np.float64, (2, 3, 2, 300)))
    check(softmax, scaled(rng, np.float32, (2, 3, 257), "reversed"))


@pytest.mark.parametrize("dtype", oracle.FLOAT_DTYPES, ids=dtype_id)
def test_log_softmax(rng, dtype):
    for n in (1, 7, 256, 300):
        check(log_softmax, scaled(rng, dtype, (5, n)))
    check(log_softmax, scaled(rng, dtype, (4, 300), "F"))


@pytest.mark.parametrize("layout", ("C", "F", "strided"))
def test_weighted_softmax_reads_a_second_array(rng, layout):
    for shape in ((1, 1), (6, 255), (7, 513)):
        check(weighted_softmax, scaled(rng, np.float32, shape), oracle.make(rng, np.float32, shape, layout))


def test_softmax_into_a_slice_of_a_wider_output(rng):
    for rows, n in ((1, 1), (4, 256), (5, 300)):
        check(softmax_into_slice, scaled(rng, np.float64, (rows, n)), oracle.poisoned((rows, n + 1), np.float64))


def test_softmax_rows_written_by_hand(rng):
    for rows, n in ((0, 3), (1, 1), (3, 257), (8, 600)):
        check(softmax_rows_by_hand, scaled(rng, np.float32, (rows, n)), oracle.poisoned((rows, n), np.float32))
    x = scaled(rng, np.float32, (4, 300), "reversed")
    check(softmax_rows_by_hand, x, oracle.poisoned((4, 300), np.float32, "strided"))


def explanation(fn, *args):
    kernel = plait.jit(fn)
    kernel(*args)
    return kernel.explain()


def test_explain_names_the_chunked_loop_and_what_it_prefetches(rng):
    text = explanation(softmax, scaled(rng, np.float32, (4, 300)))
    assert "runs in chunks of 256 that prefetch the next row of 'x' and this row of" in text, text
    text = explanation(weighted_softmax, scaled(rng, np.float32, (4, 300)), scaled(rng, np.float32, (4, 300)))
    assert "the next row of 'x', 'w'" in text, text


def test_no_prefetching_without_both_passes_and_vector_math(rng):
    # One pass (exp and store in the same loop), or passes without vector
    # math: the hardware prefetcher streams them while they compute.
    x = scaled(rng, np.float32, (4, 300))
    assert "runs in chunks" not in explanation(exp_only, x)
    assert "runs in chunks" not in explanation(row_normalise, x)
    # A strided input is not prefetched; the C-layout output still is.
    text = explanation(softmax, scaled(rng, np.float32, (4, 300), "strided"))
    assert "prefetch this row of" in text, text
