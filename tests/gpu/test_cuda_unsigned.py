"""Unsigned (uint8 ... uint64) and 8/16-bit signed integers on the GPU,
differentially against the undecorated function (tests/python/test_unsigned.py
covers the CPU): wrap-around arithmetic in device code, exact comparisons
across signedness, conversions, NumPy scalar arguments, atomics and
reductions (native where the hardware has them, compare-and-swap on the
aligned word for 8- and 16-bit elements), and the OverflowError of a Python
int that does not fit."""

import numpy as np
import pytest

import cuda_kernels as K
import plait
from test_cuda_run import KINDS, check

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

# PyTorch has few operations on uint16/32/64 tensors: the array kinds here
# are NumPy, plait.DeviceArray and CuPy.
KINDS = [k for k in KINDS if getattr(k, "values", (k,))[0] != "torch"]

UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
NARROW_SIGNED = (np.int8, np.int16)
NEW_INTS = UNSIGNED + NARROW_SIGNED


def ints(rng, dtype, n):
    """Values over the whole range of `dtype`, its extremes, 0 and 1 first."""
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    special = np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dtype)[:n]
    values[:special.size] = special
    return values


def garbage(rng, dtype, shape):
    """An output array full of random values (check() poisons with -7, which
    an unsigned array cannot hold)."""
    return ints(rng, dtype, int(np.prod(shape))).reshape(shape)


def check_quietly(fn, args, kind="numpy", **options):
    # The Python oracle warns on scalar overflow, which is the point here.
    with np.errstate(all="ignore"):
        return check(fn, args, kind, **options)


@pytest.mark.parametrize("dtype", NEW_INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 7, 1000, 100003])
def test_arithmetic_wraps_as_numpy(rng, dtype, n):
    a = ints(rng, dtype, n)
    b = ints(rng, dtype, n)
    b[b == 0] = 3
    if np.dtype(dtype).kind == "i":
        b[b < 0] = b[b < 0] | 1
    check_quietly(K.narrow_int_ops, [a, b, garbage(rng, dtype, (n, 11))])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint64])
def test_vector_add(rng, kind, dtype):
    check_quietly(K.vector_add, [ints(rng, dtype, 1001), ints(rng, dtype, 1001), garbage(rng, dtype, 1001)], kind)


@pytest.mark.parametrize("xd, yd", [(np.int64, np.uint64), (np.int32, np.uint32), (np.int8, np.uint8)])
def test_signed_unsigned_comparisons_are_exact(rng, xd, yd):
    x = ints(rng, xd, 1000)
    y = ints(rng, yd, 1000)
    y[7] = yd(x[7]) if x[7] >= 0 else 0
    x[8], y[8] = -1, np.iinfo(yd).max
    check(K.compare_mixed, [x, y, np.empty(1000, np.int64)], "numpy", poison=[2])


def test_conversions():
    x = ints(np.random.default_rng(3), np.uint64, 20)
    # Values beyond the int64 range, or beyond uint32 for uint32, convert to
    # unspecified values (NumPy's own differ between arrays and scalars).
    f = np.array([-1.0, 0.0, 1.5, 255.9, 300.0, -129.0, 4e9, 65535.0, 7.0, -0.5, 1e5, -70000.0])
    check_quietly(K.conversions, [x, f])


@pytest.mark.parametrize("kind", KINDS)
def test_numpy_scalar_arguments(rng, kind):
    check_quietly(K.add_scalar, [ints(rng, np.uint64, 100), np.uint64(2 ** 64 - 1)], kind)
    check_quietly(K.add_scalar, [ints(rng, np.uint8, 100), np.uint8(200)], kind)
    check_quietly(K.add_scalar, [ints(rng, np.int16, 100), -7], kind)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
def test_python_int_out_of_range_is_an_overflow_error(rng, dtype):
    check_quietly(K.add_python_int, [ints(rng, dtype, 100), 7])
    kernel = plait.jit(K.add_python_int, target="cuda")
    with pytest.raises(OverflowError, match=f"Python integer -1 out of bounds for {np.dtype(dtype).name}"):
        kernel(ints(rng, dtype, 100), -1)


@pytest.mark.parametrize("dtype", [np.uint32, np.int16, np.uint64])
@pytest.mark.parametrize("n", [1, 1000, 100003])
def test_sum_reduction_wraps(rng, dtype, n):
    check_quietly(K.int_sum, [ints(rng, dtype, n)])


@pytest.mark.parametrize("dtype", [np.uint64, np.int8, np.uint16])
@pytest.mark.parametrize("n", [1, 7, 1000, 100003])
def test_min_and_max_reductions(rng, dtype, n):
    check_quietly(K.min_max, [ints(rng, dtype, n)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("vd, bd", [(np.uint8, np.uint8), (np.uint16, np.uint32), (np.uint64, np.uint64)])
def test_histogram_with_atomic_increments(rng, kind, vd, bd):
    # 100003 increments over 17 uint8 bins wrap around.
    check_quietly(K.histogram, [ints(rng, vd, 100003), np.zeros(17, bd)], kind)


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.int16, np.uint8, np.int8])
@pytest.mark.parametrize("n", [1, 1000, 100003])
def test_atomic_add_min_max(rng, dtype, n):
    info = np.iinfo(dtype)
    acc = np.array([0, info.min, info.max], dtype=dtype)
    check_quietly(K.atomic_ops, [ints(rng, dtype, n), acc])


@pytest.mark.parametrize("dtype", [np.uint16, np.int8, np.uint64])
@pytest.mark.parametrize("shape", [(1, 1), (33, 100), (130, 1025)])
def test_team_minimum_and_maximum(rng, dtype, shape):
    n = shape[0]
    m = ints(rng, dtype, shape[0] * shape[1]).reshape(shape)
    check_quietly(K.row_int_extremes, [m, garbage(rng, dtype, n), garbage(rng, dtype, n)])


@pytest.mark.parametrize("kind", KINDS)
def test_csr_matrix_vector_product_with_uint32_indices(rng, kind):
    rows, per_row = 1000, 10
    counts = rng.integers(0, 2 * per_row + 1, rows)
    rowptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint32)
    nnz = int(rowptr[-1])
    cols = rng.integers(0, rows, nnz).astype(np.uint32)
    check(K.csr_matvec, [rowptr, cols, rng.random(nnz), rng.random(rows), np.empty(rows)], kind, poison=[4],
          rtol=1e-9)


def test_to_device_takes_unsigned_arrays(rng):
    for dtype in NEW_INTS:
        a = ints(rng, dtype, 10)
        np.testing.assert_array_equal(plait.to_host(plait.to_device(a)), a)
