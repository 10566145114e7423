"""The differential oracle of the loop-language tests.

`check(kernel, *args)` runs the undecorated function (`kernel.py_func`) and
the compiled kernel on identical copies of the arguments and asserts that
they agree: returned values (Python/NumPy types included, dtypes, shapes,
values) and every array argument after the call (the kernel may write into
them). Array copies keep the exact strides of the original (Fortran order,
steps, negative strides), so the compiled kernel sees the same layout class
as the caller's array; the bytes between the elements of a strided view are
checked to be left untouched.

Also here: seeded random inputs, the layouts the tests run on, poisoned
output arrays and the tolerances the issue allows for reductions.
"""

import zlib

import numpy as np

BOOL, INT32, INT64, FLOAT32, FLOAT64 = np.bool_, np.int32, np.int64, np.float32, np.float64
DTYPES = (BOOL, INT32, INT64, FLOAT32, FLOAT64)
NUMERIC_DTYPES = (INT32, INT64, FLOAT32, FLOAT64)
FLOAT_DTYPES = (FLOAT32, FLOAT64)
INT_DTYPES = (INT32, INT64)

# Sizes with the empty array, one element, odd sizes and one large enough to
# spread over several threads.
SIZES = (0, 1, 2, 7, 33, 1000)
SHAPES_2D = ((0, 0), (0, 3), (1, 1), (1, 5), (4, 1), (7, 5), (33, 17))
LAYOUTS_1D = ("C", "strided", "reversed")
LAYOUTS_2D = ("C", "F", "strided", "reversed", "transposed")

# Relative error the issue allows for reductions (reassociation).
REDUCTION_RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def dtype_id(dtype):
    return np.dtype(dtype).name


def reduction_rtol(dtype):
    """The tolerance of a reduction over `dtype` values: None (exact) for
    integers and bools."""
    return REDUCTION_RTOL.get(np.dtype(dtype))


def rng_for(*key):
    """A generator seeded from the test's own parameters: every test gets
    different, reproducible inputs."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def random_array(rng, dtype, shape, low=None, high=None):
    """Random values of `dtype`, never all zeros: bools, ints in [-100, 100)
    and floats in [-1, 1) unless low/high say otherwise."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if dtype == np.bool_:
        values = rng.random(shape) < 0.5
        if values.size:
            values.flat[0] = True
        return values
    if dtype.kind == "i":
        lo = -100 if low is None else low
        hi = 100 if high is None else high
        values = rng.integers(lo, hi, size=shape).astype(dtype)
        if values.size and not values.any():
            values.flat[0] = 1 if hi > 1 else lo
        return values
    lo = -1.0 if low is None else low
    hi = 1.0 if high is None else high
    values = (lo + rng.random(shape) * (hi - lo)).astype(dtype)
    if values.size and not values.any():
        values.flat[0] = 0.5
    return values


def with_layout(values, layout):
    """A view of a copy of `values` with the given layout:
    "C", "F", "strided" (every other element of a bigger array along each
    axis), "reversed" (negative strides) or "transposed" (a C array's .T)."""
    shape = values.shape
    if layout == "C":
        return np.ascontiguousarray(values).copy()
    if layout == "F":
        return np.asfortranarray(values).copy(order="F")
    if layout == "strided":
        base = np.zeros(tuple(2 * n + 1 for n in shape), dtype=values.dtype)
        view = base[tuple(slice(1, 2 * n + 1, 2) for n in shape)]
        view[...] = values
        return view
    if layout == "reversed":
        base = np.ascontiguousarray(values[tuple(slice(None, None, -1) for _ in shape)]).copy()
        return base[tuple(slice(None, None, -1) for _ in shape)]
    if layout == "transposed":
        base = np.ascontiguousarray(values.T).copy()
        return base.T
    raise ValueError(f"unknown layout {layout!r}")


def make(rng, dtype, shape, layout="C", low=None, high=None):
    """A random array of `dtype` and `shape` with `layout`."""
    return with_layout(random_array(rng, dtype, shape, low, high), layout)


def poison_value(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "i":
        return -777777
    return True


def poisoned(shape, dtype, layout="C"):
    """An output array filled with NaN (floats) or a sentinel (ints), so that
    elements a kernel fails to write show up in the comparison."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return with_layout(np.full(shape, poison_value(dtype), dtype=dtype), layout)


def _extent(shape, strides, itemsize):
    """(lowest, highest) byte offsets, relative to the first element, that an
    array with these strides touches; highest is exclusive."""
    low = high = 0
    for n, stride in zip(shape, strides):
        if n > 1:
            if stride < 0:
                low += (n - 1) * stride
            else:
                high += (n - 1) * stride
    return low, high + itemsize


_GAP_BYTE = 0xA5


def clone(value):
    """A deep copy. Arrays keep their exact strides; the bytes around and
    between their elements are filled with a known pattern (see gaps_intact)."""
    if isinstance(value, tuple):
        return tuple(clone(v) for v in value)
    if not isinstance(value, np.ndarray):
        return value
    low, high = _extent(value.shape, value.strides, value.itemsize)
    buffer = np.full(high - low, _GAP_BYTE, dtype=np.uint8)
    copy = np.ndarray(value.shape, dtype=value.dtype, buffer=buffer, offset=-low, strides=value.strides)
    copy[...] = value
    return copy


def _assert_values(got, expected, rtol, atol, what):
    if rtol is None and atol is None:
        np.testing.assert_array_equal(got, expected, err_msg=what, strict=False)
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol or 0.0, atol=atol or 0.0, err_msg=what)


def assert_same(got, expected, rtol=None, atol=None, types=True, what="result"):
    """`got` (the kernel's) equals `expected` (Python's): same type (tuples,
    lists, dicts and sets element by element, a dict's keys in order; Python
    int/float/bool vs NumPy scalars told apart),
    same dtype and shape for arrays, same values (exact unless rtol/atol)."""
    if isinstance(expected, (tuple, list)):
        kind = type(expected).__name__
        assert type(got) is type(expected), f"{what}: expected a {kind}, got {type(got).__name__}: {got!r}"
        assert len(got) == len(expected), f"{what}: expected {len(expected)} items, got {len(got)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, rtol, atol, types, f"{what}[{k}]")
        return
    if isinstance(expected, (dict, set)):
        # A dict's keys in the same order (Python's insertion order), each
        # value compared as a result; a set's elements as a sorted list.
        assert type(got) is type(expected), f"{what}: expected a {type(expected).__name__}, got {got!r}"
        if isinstance(expected, set):
            assert_same(sorted(got), sorted(expected), rtol, atol, types, what)
            return
        assert_same(list(got), list(expected), rtol, atol, types, f"{what}.keys()")
        for key in expected:
            assert_same(got[key], expected[key], rtol, atol, types, f"{what}[{key!r}]")
        return
    if expected is None:
        assert got is None, f"{what}: expected None, got {got!r}"
        return
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), f"{what}: expected an ndarray, got {type(got).__name__}: {got!r}"
        assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, expected {expected.dtype}"
        assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    elif types:
        assert type(got) is type(expected), (
            f"{what}: type {type(got).__name__} ({got!r}), expected {type(expected).__name__} ({expected!r})")
    _assert_values(got, expected, rtol, atol, what)


def gaps_intact(array):
    """Whether the bytes of a clone() that are not elements of the view still
    hold the fill pattern (a kernel wrote only through the view)."""
    buffer = array.base
    while isinstance(buffer, np.ndarray) and buffer.base is not None and buffer.dtype != np.uint8:
        buffer = buffer.base
    if not isinstance(buffer, np.ndarray) or buffer.dtype != np.uint8:
        return True
    mask = np.ones(buffer.shape, dtype=bool)
    low, _ = _extent(array.shape, array.strides, array.itemsize)
    if array.size:
        index = np.indices(array.shape).reshape(array.ndim, -1)
        offsets = -low + sum(index[d] * array.strides[d] for d in range(array.ndim))
        for b in range(array.itemsize):
            mask[offsets + b] = False
    return bool(np.all(buffer[mask] == _GAP_BYTE))


def run_both(kernel, *args):
    """(got, expected, jit_args, py_args): both functions run on clones."""
    py_args = clone(args)
    jit_args = clone(args)
    with np.errstate(all="ignore"):
        expected = kernel.py_func(*py_args)
    got = kernel(*jit_args)
    return got, expected, jit_args, py_args


def check(kernel, *args, rtol=None, atol=None, types=True):
    """Runs `kernel` and `kernel.py_func` on copies of `args` and asserts the
    same results and the same array arguments afterwards. Returns the
    kernel's result. rtol/atol: tolerance for float values (reductions);
    types=False skips the Python-type comparison of scalars (where the
    language documents a difference, e.g. empty reductions)."""
    got, expected, jit_args, py_args = run_both(kernel, *args)
    assert_same(got, expected, rtol, atol, types)
    for k, (g, e) in enumerate(zip(jit_args, py_args)):
        if isinstance(e, np.ndarray):
            assert_same(g, e, rtol, atol, types, what=f"argument {k} after the call")
            assert gaps_intact(g), f"argument {k}: the kernel wrote outside the elements of the view"
        else:
            assert type(g) is type(e) and g == e
    return got
