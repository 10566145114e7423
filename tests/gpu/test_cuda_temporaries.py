"""Arrays allocated inside parallel loops on the GPU (docs/cuda.md,
"Temporary arrays"), differentially against the undecorated function: each
worker's temporaries live in its own slice of one buffer the host allocates
before the launch; a team of threads shares its slice. Covers a team-mapped
row kernel, a zero-filled temporary updated at data-dependent places, a
temporary whose size varies with the iteration (the overlapping copy of
NPBench's covariance), one allocated only on a branch taken at run time,
NPBench's softmax form, and the ValueError of a negative extent."""

import numpy as np
import pytest

import cuda_kernels as K
import plait
from test_cuda_run import KINDS, ROW_SHAPES, check, cupy, floats

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROW_SHAPES + [(0, 4), (3000, 17)])
def test_team_shares_its_temporary(rng, kind, shape):
    x = np.abs(floats(rng, shape)) + 0.5
    check(K.row_scaled_by_sum, [x, np.empty(shape)], kind, poison=[1], rtol=1e-12)


def test_team_temporary_float32_and_explain(rng):
    x = (np.abs(floats(rng, (70, 300))) + 0.5).astype(np.float32)
    kernel = check(K.row_scaled_by_sum, [x, np.empty((70, 300), np.float32)], "numpy", poison=[1], rtol=1e-5)
    explain = kernel.explain()
    assert "one team of threads per iteration" in explain
    assert "`t` (line" in explain and "the threads of a team share their slice" in explain


@pytest.mark.parametrize("shape,nbins", [((1, 1), 1), ((50, 33), 7), ((20000, 9), 5), ((3, 500), 300)])
def test_zero_filled_temporary_per_thread(rng, shape, nbins):
    keys = rng.integers(0, 1000, shape)
    check(K.row_counts, [keys, nbins, np.empty(shape[0], np.int64)], "numpy", poison=[2])
    check(K.row_counts, [keys.astype(np.uint16), nbins, np.empty(shape[0], np.int64)], "numpy", poison=[2])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m", [0, 1, 5, 64, 501])
def test_temporary_size_varies_with_the_iteration(rng, kind, m):
    check(K.mirror, [floats(rng, (m, m))], kind)


def test_temporary_copied_within_a_strided_view(rng):
    base = floats(rng, (80, 80)).astype(np.float32)
    check(K.mirror, [base[::2, ::2]], "numpy")
    if cupy is None:
        return
    # In place, with the view's strides.
    on_gpu = cupy.asarray(base)
    plait.jit(K.mirror, target="cuda")(on_gpu[::2, ::2])
    K.mirror(base[::2, ::2])
    np.testing.assert_array_equal(cupy.asnumpy(on_gpu), base)


@pytest.mark.parametrize("n,npt", [(1, 1), (3000, 13), (100003, 64)])
def test_temporary_only_on_a_branch_taken_at_run_time(rng, n, npt):
    data = rng.random(n)
    check(K.masked_means, [data, rng.random(n), npt], "numpy", rtol=1e-12)
    # One radius for every point: the mask (of radius's one element) is a
    # temporary per bin, broadcast against data.
    check(K.masked_means, [data, rng.random(1), npt], "numpy", rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_npbench_softmax_form(rng, kind):
    x = rng.random((2, 3, 19, 19), dtype=np.float32)
    check(K.softmax_last_axis, [x], kind, rtol=1e-5)
    check(K.softmax_last_axis, [floats(rng, (33, 257)) * 5], kind, rtol=1e-12)


def test_negative_extent_is_a_value_error(rng):
    x = floats(rng, 100)
    check(K.shrinking_temporary, [x, 100], "numpy")
    kernel = plait.jit(K.shrinking_temporary, target="cuda")
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        kernel(x, 50)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        K.shrinking_temporary(x, 50)
