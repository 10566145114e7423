"""Unsigned (uint8 ... uint64) and narrow signed (int8, int16) integers as
array elements and scalars, differentially against the undecorated function:
NEP 50 promotion, wrap-around, exact comparisons across signedness, shifts,
division by zero, reductions, conversions, unsigned indices and loop bounds,
atomics, and NumPy scalar arguments and results."""

import numpy as np
import pytest

import plait
from oracle import check, dtype_id, rng_for, with_layout

UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
NARROW_SIGNED = (np.int8, np.int16)
NEW_INTS = UNSIGNED + NARROW_SIGNED


def ints(rng, dtype, n, extremes=True):
    """Random values over the whole range of `dtype`, with its extremes,
    0 and 1 at the front when there is room."""
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    if extremes:
        special = np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dtype)[:n]
        values[:special.size] = special
    return values


@plait.jit
def arithmetic(x, y, i):
    a = x[i]
    b = y[i]
    return a + b, a - b, a * b, a // b, a % b, a / b, a < b, a <= b, a == b, a > b, a >= b, a != b, \
        np.minimum(a, b), np.maximum(a, b)


# Python's min/max return one of their arguments unchanged, so only operands
# of one type have a static result type.
@plait.jit
def builtin_min_max(x, y, i):
    return min(x[i], y[i]), max(x[i], y[i], x[0])


@plait.jit
def bitwise(x, y, i):
    a = x[i]
    b = y[i]
    return a & b, a | b, a ^ b


SAME = [(d, d) for d in NEW_INTS]
MIXED = [(np.uint32, np.int32), (np.uint32, np.int64), (np.uint64, np.int64), (np.uint8, np.int8),
         (np.uint16, np.int8), (np.uint32, np.uint8), (np.uint64, np.uint32), (np.int16, np.uint8),
         (np.int8, np.int64), (np.uint8, np.float32), (np.uint16, np.float32), (np.uint32, np.float32),
         (np.int16, np.float32), (np.uint64, np.float64), (np.bool_, np.uint8), (np.uint64, np.int8)]


@pytest.mark.parametrize("xd, yd", SAME + MIXED, ids=lambda d: dtype_id(d))
def test_binary_operations_promote_and_wrap_as_numpy(xd, yd):
    rng = rng_for("arith", dtype_id(xd), dtype_id(yd))
    n = 24
    x = ints(rng, xd, n) if np.dtype(xd).kind in "iu" else rng.random(n).astype(xd) * 100
    y = ints(rng, yd, n, extremes=False) if np.dtype(yd).kind in "iu" else rng.random(n).astype(yd) * 100
    if np.dtype(yd).kind in "iu":
        y[3] = 0  # division by zero: 0 for integers, as NumPy
    for i in range(n):
        check(arithmetic, x, y, i)
        if np.result_type(xd, yd).kind in "iub":
            check(bitwise, x, y, i)
        if xd == yd:
            check(builtin_min_max, x, y, i)


@plait.jit
def with_python_ints(x, i):
    a = x[i]
    return a + 1, a - 7, 3 * a, a // 3, a % 5, a ** 2, a + 1.5, a / 2, a << 3, a >> 1, abs(a), -a, ~a, \
        a == -1, a < 300, a > -5, a != 2 ** 40


@pytest.mark.parametrize("dtype", NEW_INTS, ids=dtype_id)
def test_python_ints_are_weak(dtype):
    x = ints(rng_for("weak", dtype_id(dtype)), dtype, 9)
    for i in range(x.size):
        check(with_python_ints, x, i)


@plait.jit
def add_python_int(x, k):
    return x[0] + k


@plait.jit
def add_negative_literal(x):
    return x[0] + (-1)


@plait.jit
def convert_python_int(k):
    return np.uint8(k)


@pytest.mark.parametrize("dtype, k", [(np.uint32, -1), (np.uint32, 2 ** 32), (np.uint8, 256), (np.int8, 200),
                                      (np.uint64, -5), (np.int16, -40000)], ids=str)
def test_python_int_out_of_range_raises_overflow_error(dtype, k):
    x = np.array([5], dtype=dtype)
    with pytest.raises(OverflowError, match=f"Python integer {k} out of bounds for {np.dtype(dtype).name}"):
        add_python_int.py_func(x, k)
    with pytest.raises(OverflowError, match=f"Python integer {k} out of bounds for {np.dtype(dtype).name}"):
        add_python_int(x, k)
    # In range, the same kernel works.
    check(add_python_int, x, 1)


def test_out_of_range_literal_raises_when_executed():
    x = np.array([5], dtype=np.uint32)
    with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint32"):
        add_negative_literal.py_func(x)
    with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint32"):
        add_negative_literal(x)
    # Signed: the literal fits and the kernel returns the NumPy result.
    check(add_negative_literal, np.array([5], dtype=np.int8))
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        convert_python_int(300)
    check(convert_python_int, 255)


@plait.jit
def wrap_cases(a, b):
    return a - b, a * b, a + b, -a, a * a


@pytest.mark.parametrize("dtype, a, b", [(np.uint32, 3, 5), (np.uint8, 200, 2), (np.uint8, 250, 10),
                                         (np.uint16, 65535, 65535), (np.int8, 100, 100), (np.int8, -128, -1),
                                         (np.uint64, 0, 1), (np.uint64, 2 ** 64 - 1, 2 ** 64 - 1),
                                         (np.int16, -32768, 2)], ids=str)
def test_overflow_wraps(dtype, a, b):
    # NumPy scalars as arguments: strong values of their dtype.
    check(wrap_cases, dtype(a), dtype(b))


@plait.jit
def small_sum_compared(a, b, limit):
    # a + b wraps in uint8 before the comparison (C++ would compare in int).
    return (a + b) > limit, (a * b) // 2, (a - b) < limit


def test_narrow_results_wrap_before_use():
    check(small_sum_compared, np.uint8(250), np.uint8(10), np.uint8(100))
    check(small_sum_compared, np.int8(120), np.int8(10), np.int8(0))
    check(small_sum_compared, np.uint16(65535), np.uint16(2), np.uint16(7))


@plait.jit
def compare_all(a, b):
    return a < b, a <= b, a == b, a != b, a > b, a >= b


@pytest.mark.parametrize("a, b", [
    (np.int64(-1), np.uint64(1)), (np.uint64(1), np.int64(-1)), (np.int64(-1), np.uint64(2 ** 64 - 1)),
    (np.int64(5), np.uint64(2 ** 63 + 5)), (np.int64(7), np.uint64(7)), (np.int32(-1), np.uint32(1)),
    (np.int8(-1), np.uint64(0)), (np.uint32(1), -1), (np.uint64(3), -1), (-7, np.uint64(2 ** 64 - 1)),
    (np.uint64(2 ** 63), 5), (np.uint32(4), 2 ** 40), (np.uint8(255), 255), (np.int8(-5), np.uint8(251))],
    ids=repr)
def test_signed_unsigned_comparisons_are_exact(a, b):
    check(compare_all, a, b)


@plait.jit
def compare_arrays(x, y):
    out = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(x.shape[0]):
        if x[i] < y[i]:
            out[i] = 1
        elif x[i] == y[i]:
            out[i] = 2
    return out


def test_signed_unsigned_comparisons_in_a_loop():
    rng = rng_for("cmp-loop")
    x = ints(rng, np.int64, 101)
    y = ints(rng, np.uint64, 101)
    y[5] = np.uint64(x[5]) if x[5] >= 0 else 0
    check(compare_arrays, x, y)
    check(compare_arrays, ints(rng, np.int32, 50), ints(rng, np.uint32, 50))


@plait.jit
def shifts(a, k):
    return a << k, a >> k


@pytest.mark.parametrize("dtype", UNSIGNED, ids=dtype_id)
def test_shifts(dtype):
    bits = np.dtype(dtype).itemsize * 8
    for a in (1, np.iinfo(dtype).max, 2 ** (bits - 1)):
        for k in (0, 1, bits - 1, bits, bits + 3):
            check(shifts, dtype(a), k)
            check(shifts, dtype(a), dtype(k % 256) if bits == 8 else dtype(k))


@plait.jit
def reductions(x):
    return np.sum(x), np.max(x), np.min(x), np.mean(x)


@pytest.mark.parametrize("dtype", NEW_INTS, ids=dtype_id)
@pytest.mark.parametrize("layout", ["C", "strided", "reversed"])
def test_reductions_accumulate_as_numpy(dtype, layout):
    # np.sum of uint32 is uint64, of int8 int64; max/min keep the dtype.
    for n in (1, 2, 7, 1000):
        x = with_layout(ints(rng_for("red", dtype_id(dtype), n, layout), dtype, n), layout)
        check(reductions, x, rtol=1e-12)


@plait.jit
def loop_sum(x):
    s = np.uint64(0)
    #pragma parallel for reduction(+:s)
    for i in range(x.shape[0]):
        s += x[i]
    return s


def test_parallel_sum_of_uint32_wraps_in_uint64():
    x = np.full(1001, 2 ** 32 - 1, dtype=np.uint32)
    check(loop_sum, x)
    check(loop_sum, np.full(1001, 2 ** 64 - 1, dtype=np.uint64))


@plait.jit
def conversions(x, f):
    return x.astype(np.uint32), x.astype(np.float64), f.astype(np.uint8), f.astype(np.uint32), \
        f.astype(np.int16), f.astype(np.uint64)


def test_astype():
    rng = rng_for("astype")
    x = ints(rng, np.uint64, 20)
    # Values beyond the int64 range, or beyond uint32 for uint32, convert to
    # unspecified values (NumPy's own differ between arrays and scalars).
    f = np.array([-1.0, 0.0, 1.5, 255.9, 300.0, -129.0, 4e9, 65535.0, 7.0, -0.5, 1e5, -70000.0])
    check(conversions, x, f)


@plait.jit
def scalar_conversions(a, f):
    return np.uint8(a), np.uint32(a), np.int8(a), np.uint64(a), np.int16(a), np.uint16(f), np.float32(a), float(a)


@plait.jit
def to_python_int(a):
    return int(a)


@pytest.mark.parametrize("a", [np.int64(-1), np.int64(300), np.uint64(2 ** 64 - 1), np.uint32(70000),
                               np.int8(-128)], ids=repr)
def test_scalar_conversions(a):
    check(scalar_conversions, a, np.float64(-3.7))
    # Python ints are int64 in kernels: int() of a uint64 of 2^63 or more
    # wraps (the documented fixed-width difference).
    if a <= np.iinfo(np.int64).max:
        check(to_python_int, a)


@plait.jit
def gather(values, idx):
    out = np.empty(idx.shape[0], dtype=values.dtype)
    for i in range(idx.shape[0]):
        out[i] = values[idx[i]]
    return out


@pytest.mark.parametrize("dtype", UNSIGNED + NARROW_SIGNED, ids=dtype_id)
def test_unsigned_indices(dtype):
    rng = rng_for("gather", dtype_id(dtype))
    values = rng.random(100)
    idx = rng.integers(0, 100, size=57).astype(dtype)
    check(gather, values, idx)
    check(gather, values, idx[::3])


def test_out_of_bounds_unsigned_index_raises():
    checked = plait.jit(boundscheck=True)(gather.py_func)
    values = np.zeros(10)
    with pytest.raises(IndexError, match="index 10 is out of bounds"):
        checked(values, np.array([3, 10], dtype=np.uint32))


@plait.jit
def row_lengths(indptr):
    n = indptr.shape[0] - 1
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = indptr[i + 1] - indptr[i]
    return out


@plait.jit
def offsets_below(indptr):
    # The loop variable is a Python int whatever the bounds' types: p - 1
    # goes negative at p == 0 instead of wrapping.
    total = 0
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            total += p - 1
    return total


def test_unsigned_loop_bounds():
    indptr = np.array([0, 2, 5, 5, 9], dtype=np.uint32)
    check(row_lengths, indptr)
    check(offsets_below, indptr)
    check(offsets_below, indptr.astype(np.uint64))
    check(offsets_below, indptr.astype(np.uint8))


@plait.jit
def spmv(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, dtype=A_val.dtype)
    #pragma parallel for
    for i in range(A_row.size - 1):
        acc = 0.0
        for p in range(A_row[i], A_row[i + 1]):
            acc += A_val[p] * x[A_col[p]]
        y[i] = acc
    return y


@pytest.mark.parametrize("index_dtype", [np.uint32, np.uint64, np.uint16], ids=dtype_id)
def test_spmv_with_unsigned_csr_indices(index_dtype):
    rng = rng_for("spmv", dtype_id(index_dtype))
    rows, cols = 67, 53
    dense = np.where(rng.random((rows, cols)) < 0.05, rng.random((rows, cols)), 0.0)
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(index_dtype)
    indices = np.nonzero(dense)[1].astype(index_dtype)
    data = dense[dense != 0]
    x = rng.random(cols)
    got = check(spmv, indptr, indices, data, x, rtol=1e-12)
    np.testing.assert_allclose(got, dense @ x, rtol=1e-12)


@plait.jit
def histogram(keys, nbins):
    hist = np.zeros(nbins, dtype=np.uint32)
    #pragma parallel for
    for i in range(keys.shape[0]):
        b = keys[i] % nbins
        #pragma atomic
        hist[b] += 1
    return hist


@plait.jit
def atomic_updates(keys, out16, out64):
    #pragma parallel for
    for i in range(keys.shape[0]):
        #pragma atomic
        out16[keys[i] % 4] -= 3
        #pragma atomic
        out64[keys[i] % 4] += keys[i]


def test_atomics_on_unsigned():
    rng = rng_for("atomics")
    keys = ints(rng, np.uint32, 5001)
    check(histogram, keys, 13)
    out16 = np.zeros(4, dtype=np.uint16)
    out64 = np.full(4, 2 ** 64 - 10, dtype=np.uint64)
    check(atomic_updates, keys, out16, out64)


@plait.jit
def scalar_roundtrip(a, b):
    return a, b, a + b


@pytest.mark.parametrize("dtype", NEW_INTS, ids=dtype_id)
def test_numpy_scalar_arguments_and_results(dtype):
    info = np.iinfo(dtype)
    for a, b in ((info.max, info.max), (info.min, 1), (7, 9)):
        got = check(scalar_roundtrip, dtype(a), dtype(b))
        assert type(got[0]) is dtype
    # 0-d arrays pass as NumPy scalars.
    with np.errstate(all="ignore"):
        expected = add_only.py_func(np.array(info.max, dtype=dtype), dtype(1))
    got = add_only(np.array(info.max, dtype=dtype), dtype(1))
    assert type(got) is type(expected) and got == expected


@plait.jit
def add_only(a, b):
    return a + b


@plait.jit
def allocate(n, x):
    a = np.zeros(n, dtype=np.uint16)
    b = np.empty(n, dtype="u4")
    c = np.ones((n, 2), dtype=x.dtype)
    d = np.full(n, 200, dtype=np.uint8)
    for i in range(n):
        a[i] = 65535
        a[i] += 2
        b[i] = i
        d[i] *= 2
    return a, b, c, d


def test_allocation_of_unsigned_arrays():
    check(allocate, 5, np.zeros(3, dtype=np.uint64))
    check(allocate, 0, np.zeros(3, dtype=np.int8))


@plait.jit
def array_expressions(x, y):
    return x + y, x - 1, x * 3, x // 7, y % 5, x > y, x & y


@pytest.mark.parametrize("dtype", NEW_INTS, ids=dtype_id)
def test_array_expressions(dtype):
    rng = rng_for("arrays", dtype_id(dtype))
    x = with_layout(ints(rng, dtype, 33, extremes=False), "strided")
    y = ints(rng, dtype, 33)
    check(array_expressions, x, y)


@plait.jit
def in_place_from_int64(x, k):
    for i in range(x.shape[0]):
        x[i] = k + i


def test_storing_wraps_to_the_array_dtype():
    # The stored int64 value keeps its low bits, as NumPy's assignment does
    # for in-range NumPy integers.
    check(in_place_from_int64, np.zeros(6, dtype=np.uint8), np.int64(250))


def test_signatures_name_the_dtypes():
    @plait.jit
    def first(x, a):
        return x[0] + a

    first(np.zeros(3, dtype=np.uint32), np.uint8(1))
    first(np.zeros(3, dtype=np.int16)[::2], 1)
    sigs = first.signatures
    assert "u32[::1], u8" in sigs
    assert "i16[:], int" in sigs
