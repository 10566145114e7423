"""Arguments a kernel must not write: read-only arrays (np.frombuffer of
bytes, read-only memmaps, arrays with writeable=False) and arrays whose
elements share memory (zero strides from np.broadcast_to) are refused with a
ValueError naming the parameter when the kernel writes them, and accepted
when it only reads them. Masked arrays are refused whatever the kernel does:
their mask would be ignored."""

import numpy as np
import pytest

import plait


def fill(a, value):
    for i in range(a.shape[0]):
        a[i] = value


def total(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def add_into(out, x):
    out[:] += x


def through_a_name(a, b, flag):
    w = b
    if flag:
        w = a
    w[0] = 7.0
    return b[0]


def atomic_count(counts, keys):
    for i in plait.prange(keys.shape[0]):
        #pragma atomic
        counts[keys[i]] += 1


def row_sums(m, out):
    for i in range(m.shape[0]):
        out[i] = m[i, :].sum()


def read_only(values):
    array = np.array(values)
    array.flags.writeable = False
    return array


def test_the_kernel_reports_which_parameters_it_writes():
    kernel = plait.jit(through_a_name)
    kernel(np.zeros(2), np.zeros(2), False)
    compiled = kernel._kernel(None)
    assert compiled.writes_param == [True, True, False]
    reader = plait.jit(total)
    reader(np.zeros(2))
    assert reader._kernel(None).writes_param == [False]


@pytest.mark.parametrize("make", [
    lambda: np.frombuffer(bytes(8 * 5), dtype=np.float64),
    lambda: read_only(np.zeros(5)),
    lambda: read_only(np.zeros(10))[::2],
], ids=["frombuffer", "writeable-false", "strided-view"])
def test_a_written_read_only_array_is_a_value_error_naming_it(make):
    a = make()
    before = a.copy()
    with pytest.raises(ValueError, match=r"assignment destination is read-only: plait kernel fill: argument 'a' "
                                         r"\(parameter 1\) is read-only, and the kernel writes it"):
        plait.jit(fill)(a, 3.0)
    np.testing.assert_array_equal(a, before)


def test_immutable_bytes_are_not_changed():
    data = bytes(8 * 4)
    with pytest.raises(ValueError, match="read-only"):
        plait.jit(fill)(np.frombuffer(data, dtype=np.float64), 1.0)
    assert data == bytes(8 * 4)


def test_a_read_only_array_that_is_only_read_is_accepted(rng):
    a = read_only(rng.random(9))
    assert plait.jit(total)(a) == pytest.approx(total(a))
    m = read_only(rng.random((3, 4)))
    out = np.empty(3)
    plait.jit(row_sums)(m, out)
    np.testing.assert_allclose(out, m.sum(axis=1))


def test_read_only_memmap(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(6.0).tofile(path)
    mapped = np.memmap(path, dtype=np.float64, mode="r")
    assert plait.jit(total)(mapped) == 15.0
    with pytest.raises(ValueError, match="argument 'a' .* is read-only"):
        plait.jit(fill)(mapped, 1.0)
    np.testing.assert_array_equal(np.fromfile(path), np.arange(6.0))


def test_writes_through_a_local_name_count():
    kernel = plait.jit(through_a_name)
    with pytest.raises(ValueError, match=r"argument 'a' \(parameter 1\) is read-only"):
        kernel(read_only([1.0, 2.0]), np.zeros(2), False)
    for flag in (False, True):
        args, expected_args = (np.zeros(2), np.ones(2), flag), (np.zeros(2), np.ones(2), flag)
        assert kernel(*args) == through_a_name(*expected_args)
        np.testing.assert_array_equal(args[0], expected_args[0])
        np.testing.assert_array_equal(args[1], expected_args[1])


def test_atomic_updates_count_as_writes():
    kernel = plait.jit(atomic_count)
    with pytest.raises(ValueError, match=r"argument 'counts' \(parameter 1\) is read-only"):
        kernel(read_only(np.zeros(3, dtype=np.int64)), np.array([0, 1, 1]))
    counts = np.zeros(3, dtype=np.int64)
    kernel(counts, read_only(np.array([0, 1, 1])))
    np.testing.assert_array_equal(counts, [1, 2, 0])


@pytest.mark.parametrize("shape", [(4,), (3, 4)])
def test_a_written_broadcast_view_is_a_value_error(shape):
    base = np.zeros(shape[-1:])
    with pytest.raises(ValueError, match=r"argument 'out' \(parameter 1\) is read-only"):
        plait.jit(add_into)(np.broadcast_to(base, shape), np.ones(shape))
    # A writeable view with zero strides: one store would change several elements.
    view = np.lib.stride_tricks.as_strided(base, shape=shape, strides=(0,) * len(shape), writeable=True)
    with pytest.raises(ValueError, match=r"argument 'out' \(parameter 1\) has a zero stride in dimension 0, so "
                                         r"several of its elements share memory"):
        plait.jit(add_into)(view, np.ones(shape))
    np.testing.assert_array_equal(base, np.zeros(shape[-1:]))


def test_a_read_broadcast_view_is_accepted():
    x = np.broadcast_to(np.arange(3.0), (2, 3))
    out = np.zeros((2, 3))
    plait.jit(add_into)(out, x)
    np.testing.assert_array_equal(out, x)
    # A zero stride over one element shares nothing.
    one = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(1,), strides=(0,), writeable=True)
    plait.jit(fill)(one, 2.0)
    assert one[0] == 2.0


def test_masked_arrays_are_refused_naming_the_parameter():
    masked = np.ma.masked_array(np.arange(4.0), mask=[0, 1, 0, 0])
    with pytest.raises(TypeError, match=r"total\(\) argument 'a' is a masked array .* would ignore its mask: pass "
                                        r"its \.data, or \.filled\(value\)"):
        plait.jit(total)(masked)
    assert plait.jit(total)(masked.filled(0.0)) == masked.sum()


def test_ndarray_subclasses_other_than_masked_arrays_are_arrays():
    class Tagged(np.ndarray):
        pass

    a = np.arange(5.0).view(Tagged)
    assert plait.jit(total)(a) == 10.0
