"""Row-wise team kernels on the GPU, differentially against the undecorated
function (docs/cuda.md, "NaN in maxima and minima" and "Rows kept in
registers"): float maxima and minima spread over a team give the result of
the loop in order when rows hold NaN (first, middle or last element, all of
them) or infinities, for np.maximum, np.max and both argument orders of the
builtin max/min; softmax in loop and array form, in place, and a kernel
whose rows are re-read and rewritten between loops keep rows in registers
and give the same results for rows of 0 to 8193 elements (teams of a warp to
256 threads, rows longer than the registers hold, which from 2049 float64 or
4097 float32 elements run in the kernels' wide versions with teams of 512
threads), float32 and float64, contiguous and strided; rows that fit in the
registers in whole groups run the versions without the code for the rest
(docs/cuda.md, "Rows that fit in the registers"), rows whose length
depends on the row never do."""

import numpy as np
import pytest

import cuda_kernels as K
import plait
from test_cuda_run import KINDS, check, floats, launched

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

LENGTHS = (1, 2, 31, 33, 127, 128, 129, 2048, 2049, 8193)


def special_rows(rng, m, dtype, scale=1.0):
    """Random rows, then rows with NaN, inf and -inf at chosen places."""
    x = floats(rng, (16, m), dtype) * scale
    nan, inf = np.nan, np.inf
    x[1, 0] = nan
    x[2, m // 2] = nan
    x[3, m - 1] = nan
    x[4, 0] = nan
    x[4, m - 1] = nan
    x[5, :] = nan
    x[6, m // 2] = inf
    x[7, :] = -inf
    x[8, m // 3] = nan
    x[8, m // 2] = inf
    x[9, m - 1] = -inf
    x[10, 0] = inf
    x[11, ::2] = nan
    x[12, 1::3] = nan
    x[13, m // 2:] = nan
    return x


def strided(x):
    """The same values as a view with strides in both dimensions."""
    base = np.full((x.shape[0] * 2, x.shape[1] * 3 + 1), 7.0, x.dtype)
    view = base[::2, 1::3]
    view[...] = x
    return view


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", LENGTHS)
def test_builtin_max_keeps_the_order_semantics_of_nan(rng, dtype, m):
    # max(m, x): a NaN first element stays, NaN elements after it are skipped.
    x = special_rows(rng, m, dtype)
    check(K.row_max_builtin, [x, np.empty(16, dtype)], "numpy", poison=[1])
    check(K.row_max_builtin, [strided(x), np.empty(16, dtype)], "numpy", poison=[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", LENGTHS)
def test_reversed_builtin_max_and_min_run_in_order_after_a_nan(rng, kind, dtype, m):
    # max(x, m): the element after the last NaN restarts the maximum.
    x = special_rows(rng, m, dtype)
    check(K.row_extremes_builtin_reversed, [x, np.empty(16, dtype), np.empty(16, dtype)], kind, poison=[1, 2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", LENGTHS)
def test_ordered_rerun_reads_a_row_temporary_from_memory(rng, dtype, m):
    x = special_rows(rng, m, dtype)
    check(K.doubled_row_max_reversed, [x, np.empty(16, dtype)], "numpy", poison=[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", (0,) + LENGTHS)
def test_numpy_maximum_loop_propagates_nan(rng, dtype, m):
    x = special_rows(rng, m, dtype) if m else np.empty((5, 0), dtype)
    check(K.row_maximum_numpy, [x, np.empty(x.shape[0], dtype)], "numpy", poison=[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", LENGTHS)
def test_array_max_and_min_propagate_nan_per_row_and_over_the_array(rng, dtype, m):
    x = special_rows(rng, m, dtype)
    check(K.array_extremes, [x], "numpy")
    check(K.array_extremes, [strided(x)], "numpy")
    # Without NaN: the whole-array reductions combine across the grid.
    clean = floats(rng, (300, m), dtype)
    clean[7, m // 2] = -np.inf
    check(K.array_extremes, [clean], "numpy")
    clean[299, m - 1] = np.nan
    check(K.array_extremes, [clean], "numpy")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m", LENGTHS)
def test_softmax_loop_form_with_special_rows(rng, kind, m):
    x = special_rows(rng, m, np.float64, 5.0)
    check(K.row_softmax, [x, np.empty(x.shape)], kind, poison=[1], rtol=1e-12)


@pytest.mark.parametrize("m", LENGTHS)
def test_softmax_loop_form_float32_and_strided(rng, m):
    x = special_rows(rng, m, np.float32, 5.0)
    check(K.row_softmax, [x, np.empty(x.shape, np.float32)], "numpy", poison=[1], rtol=1e-5)
    check(K.row_softmax, [strided(x), strided(np.empty(x.shape, np.float32))], "numpy", poison=[1], rtol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m", LENGTHS)
def test_softmax_array_form_with_special_rows(rng, kind, m):
    x = special_rows(rng, m, np.float32, 5.0).reshape(2, 2, 4, m)
    check(K.softmax_last_axis, [x], kind, rtol=1e-5)


@pytest.mark.parametrize("m", LENGTHS)
def test_softmax_array_form_float64_strided_and_many_rows(rng, m):
    x = special_rows(rng, m, np.float64, 5.0)
    check(K.softmax_last_axis, [x], "numpy", rtol=1e-12)
    check(K.softmax_last_axis, [strided(x)], "numpy", rtol=1e-12)
    check(K.softmax_last_axis, [floats(rng, (3, 5, 7, m), np.float32) * 5], "numpy", rtol=1e-5)


@pytest.mark.parametrize("m", (1, 2, 3, 5, 16, 33, 63))
def test_many_short_rows_share_a_warp(rng, m):
    """With many rows and short ones the team is smaller than a warp
    (plait_cuda::team_for's rule for many workers: teams of 2 to 16
    threads), its maxima and sums combined within its lanes of the warp."""
    x = floats(rng, (40000, m), np.float32) * 5
    x[:16] = special_rows(rng, m, np.float32, 5.0)
    check(K.row_softmax, [x, np.empty(x.shape, np.float32)], "numpy", poison=[1], rtol=1e-5)
    check(K.softmax_last_axis, [x.astype(np.float64)], "numpy", rtol=1e-12)
    check(K.row_maximum_numpy, [x, np.empty(x.shape[0], np.float32)], "numpy", poison=[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m", (0,) + LENGTHS)
def test_softmax_in_place(rng, kind, m):
    x = special_rows(rng, m, np.float32, 5.0) if m else np.empty((3, 0), np.float32)
    check(K.softmax_in_place, [x], kind, rtol=1e-5)


@pytest.mark.parametrize("m", (0,) + LENGTHS)
def test_softmax_in_place_float64_strided(rng, m):
    x = special_rows(rng, m, np.float64, 5.0) if m else np.empty((3, 0))
    check(K.softmax_in_place, [strided(x) if m else x], "numpy", rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m", LENGTHS)
def test_rows_rewritten_and_read_back_between_loops(rng, kind, m):
    x = floats(rng, (9, m))
    check(K.row_centered_squares, [x, np.empty((9, m))], kind, poison=[1], rtol=1e-9)
    check(K.row_centered_squares, [strided(x), strided(np.empty((9, m)))], "numpy", poison=[1], rtol=1e-9)


def test_explain_names_rows_in_registers_and_the_ordered_rerun(rng):
    x = floats(rng, (40, 300), np.float32)
    explain = check(K.softmax_last_axis, [x], "numpy", rtol=1e-5).explain()
    assert "is kept in registers between the loops" in explain
    assert "they never go to memory" in explain
    assert "in order" not in explain
    explain = check(K.row_softmax, [x, np.empty(x.shape, np.float32)], "numpy", poison=[1], rtol=1e-5).explain()
    assert "`x` is kept in registers between the loops" in explain
    assert "the kernel's wide version plait_row_softmax_k0_wide runs instead" in explain
    explain = check(K.row_extremes_builtin_reversed, [x, np.empty(40, np.float32), np.empty(40, np.float32)],
                    "numpy", poison=[1, 2]).explain()
    assert "the team runs the loop again in order when it sees one" in explain


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m,version", [(4, "_fit"), (127, ""), (512, "_fit"), (4096, "_fit"), (4098, "_wide"),
                                       (4100, "_wide_fit"), (8192, "_wide_fit"), (8196, "_wide")])
def test_rows_that_fit_in_the_registers_run_their_version(rng, capfd, monkeypatch, kind, m, version):
    # Teams of 32 to 256 threads hold 16 float32 per thread, the wide
    # version's 512 threads 8192 per row; whole groups of 4.
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    x = floats(rng, (5, m), np.float32) * 10
    x[2, m // 2] = np.nan
    check(K.row_softmax, [x, np.empty(x.shape, np.float32)], kind, poison=[1], rtol=1e-5)
    assert launched(capfd) == ["plait_row_softmax_k0" + version]


@pytest.mark.parametrize("m,version", [(512, "_fit"), (513, "")])
def test_array_softmax_and_strided_rows_that_fit(rng, capfd, monkeypatch, m, version):
    monkeypatch.setenv("PLAIT_CUDA_LOG_LAUNCHES", "1")
    check(K.softmax_last_axis, [floats(rng, (2, 3, m), np.float32)], "numpy", rtol=1e-5)
    assert [name for name in launched(capfd) if name.startswith("plait_softmax_last_axis_k0")] == \
        ["plait_softmax_last_axis_k0" + version]
    # Rows with a stride: whole groups loaded element by element.
    x = floats(rng, (7, m), np.float32)
    check(K.row_softmax, [strided(x), strided(np.empty(x.shape, np.float32))], "numpy", poison=[1], rtol=1e-5)
    assert launched(capfd) == ["plait_row_softmax_k0" + version]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 5, 40, 300, 3000])
def test_triangle_rows_kept_in_registers(rng, kind, n):
    x = floats(rng, (n, n))
    check(K.lower_row_shift, [x, np.empty((n, n))], kind, poison=[1])
