"""Shared fixtures of the Python tests.

The disk cache is the run's fresh temporary directory (tests/conftest.py
sets PLAIT_CACHE_DIR before any test module imports plait).
"""

import os

# Every parallel loop starts its threads, however small the test's data, so
# that the tests exercise the threaded code (reductions, atomics, privacy);
# test_serial_versions.py runs some modules again with no loop threaded
# (PLAIT_PARALLEL_THRESHOLD set before), which exercises their serial code.
os.environ.setdefault("PLAIT_PARALLEL_THRESHOLD", "0")
for _name in ("PLAIT_DISABLE_JIT", "PLAIT_BOUNDSCHECK", "PLAIT_DUMP_DIR", "PLAIT_EXPLAIN"):
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64)
NUMERIC_DTYPES = (np.int32, np.int64, np.float32, np.float64)
# Sizes including the empty array, one element, odd sizes and one that
# spreads over several threads.
SIZES = (0, 1, 2, 7, 33, 1000)


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name: fresh, reproducible inputs."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)


def random_array(rng, dtype, shape):
    """Random values of `dtype`: booleans, small ints (no overflow in sums),
    floats in [-1, 1)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-100, 100, size=shape).astype(dtype)
    return (rng.random(shape) * 2 - 1).astype(dtype)


@pytest.fixture
def make_array(rng):
    """make_array(dtype, shape, layout="C"): a random array.
    layout: "C", "F", "strided" (every other element of a bigger array along
    each axis), "reversed" (negative strides), "transposed" (a C array's .T)."""

    def make(dtype, shape, layout="C"):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if layout == "C":
            return random_array(rng, dtype, shape)
        if layout == "F":
            return np.asfortranarray(random_array(rng, dtype, shape))
        if layout == "strided":
            base = random_array(rng, dtype, tuple(2 * n for n in shape))
            view = base[tuple(slice(None, None, 2) for _ in shape)]
            assert view.shape == shape
            return view
        if layout == "reversed":
            return random_array(rng, dtype, shape)[tuple(slice(None, None, -1) for _ in shape)]
        if layout == "transposed":
            return random_array(rng, dtype, shape[::-1]).T
        raise ValueError(f"unknown layout {layout!r}")

    return make


@pytest.fixture(params=SIZES, ids=lambda n: f"n{n}")
def size(request):
    return request.param


@pytest.fixture(params=DTYPES, ids=lambda d: np.dtype(d).name)
def dtype(request):
    return request.param


@pytest.fixture(params=NUMERIC_DTYPES, ids=lambda d: np.dtype(d).name)
def numeric_dtype(request):
    return request.param


@pytest.fixture(params=("C", "strided", "reversed"))
def layout_1d(request):
    return request.param


@pytest.fixture(params=("C", "F", "strided", "reversed", "transposed"))
def layout_2d(request):
    return request.param


def _assert_same_result(got, expected, rtol=None):
    """The kernel's result equals the Python function's: same Python/NumPy
    types (tuples and lists element by element), same dtype and values."""
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _assert_same_result(g, e, rtol)
        return
    assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype and got.shape == expected.shape
    if rtol is None:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol)


@pytest.fixture
def assert_same():
    """assert_same(got, expected, rtol=None): the kernel's result equals the
    Python function's, types included."""
    return _assert_same_result
