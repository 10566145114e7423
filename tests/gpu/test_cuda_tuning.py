"""Tuned CUDA kernels on the GPU (docs/cuda.md, "Launch configuration and
autotuning"), differentially against the undecorated function: launch knobs
and a user-named constant tuned, an in-place kernel whose arrays see exactly
one run after the tuning run (NumPy arrays, plait.DeviceArray, CuPy, PyTorch,
and two views of one array), the choice found in the disk cache by a fresh
dispatcher and not trusted when its record is damaged, and candidates that
do not compile or fail to run skipped."""

import numpy as np
import pytest

import plait
from row_group_kernels import loop_softmax
from test_cuda_run import KINDS, check, floats, to_kind, to_numpy

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

BN = 128  # the strip of strip_sums when it runs undecorated; tune= sets it in the tuned kernels


def strip_sums(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        for j0 in range(0, x.shape[1], BN):
            for j in range(j0, min(j0 + BN, x.shape[1])):
                s += x[i, j]
        out[i] = s


def add_one(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] += 1.0


def scale_add(dst, src):
    #pragma parallel for
    for i in range(dst.shape[0]):
        dst[i] += src[i] * 2.0


def read_at_strip(x, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = x[i] + x[BN - 1]


@pytest.mark.parametrize("shape", [(1, 1), (3, 129), (64, 1000), (200, 8193), (0, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_autotuned_softmax_matches_the_function(rng, shape, dtype):
    x = floats(rng, shape, dtype) * 4
    kernel = check(loop_softmax, [x, np.empty_like(x)], "numpy", poison=(1,), rtol=1e-5 if dtype == np.float32
                   else 1e-12, autotune=True)
    report = kernel.explain()
    assert "autotuning: 6 candidates, threads in (128, 256, 512) x row_groups in (2, 4)" in report
    assert "choice: threads=" in report
    assert report.count("ms") >= 1


def test_each_shape_class_is_tuned_once(rng):
    kernel = plait.jit(loop_softmax, target="cuda", tune={"threads": [128, 256], "row_groups": [2, 4]},
                       cache=False)
    for rows, cols in ((8, 100), (8, 120), (8, 1000), (9, 1000)):
        x = floats(rng, (rows, cols), np.float32)
        out = np.empty_like(x)
        kernel(x, out)
        np.testing.assert_allclose(out, loop_softmax_reference(x), rtol=1e-5)
    report = kernel.explain()
    # 100 and 120 columns round up to 128; 8 and 9 rows to 8 and 16.
    assert report.count("  shape class ") == 3
    assert "f32[:, ::1], f32[:, ::1] | 8x128, 8x128:" in report
    assert "f32[:, ::1], f32[:, ::1] | 16x1024, 16x1024:" in report
    assert report.count("(tuned now; the disk cache is off") == 3


def choice_origin(report):
    """Where the choice of the report's last shape class came from: the
    parentheses after `choice: ...`."""
    return report.rsplit("choice: ", 1)[1].split(" (", 1)[1].rsplit(")", 1)[0]


def loop_softmax_reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("cols", [1, 127, 1000, 4099])
def test_a_tuned_constant_matches_the_function(rng, cols):
    x = floats(rng, (37, cols))
    kernel = check(strip_sums, [x, np.empty(37)], "numpy", rtol=1e-12,
                   tune={"BN": [32, 128, 512], "threads": [128, 256]})
    report = kernel.explain()
    assert "BN in (32, 128, 512)" in report
    for bn in (32, 128, 512):
        assert f"BN={bn} threads=128:" in report and f"BN={bn} threads=256:" in report
    chosen = report.split("choice: ")[1].split(" (")[0]
    assert f"{chosen}:" in report


@pytest.mark.parametrize("kind", KINDS)
def test_an_in_place_kernel_updates_the_arguments_once(rng, kind):
    a = floats(rng, 10007)
    arg = to_kind(a, kind)
    kernel = plait.jit(add_one, target="cuda", tune={"threads": [128, 512]}, cache=False)
    kernel(arg)
    np.testing.assert_array_equal(to_numpy(arg), a + 1.0)
    kernel(arg)  # the choice is known: no tuning run
    np.testing.assert_array_equal(to_numpy(arg), a + 2.0)


def test_views_of_one_array_see_one_run(rng):
    # dst and src are two views of the same elements: the tuning run's
    # copies share memory as they do, and the caller's array sees one run.
    base = floats(rng, 5001)
    arg = base.copy()
    kernel = plait.jit(scale_add, target="cuda", tune={"threads": [64, 1024]}, cache=False)
    kernel(arg[:-1], arg[:-1])
    np.testing.assert_array_equal(arg[:-1], base[:-1] * 3.0)
    assert arg[-1] == base[-1]


def test_the_choice_is_found_in_the_disk_cache_and_a_damaged_record_is_not_trusted(rng, tmp_path, monkeypatch):
    monkeypatch.setenv("PLAIT_CACHE_DIR", str(tmp_path / "cache"))
    x = floats(rng, (16, 700), np.float32)
    space = {"threads": [128, 512], "row_groups": [2, 4]}

    def run_fresh():
        kernel = plait.jit(loop_softmax, target="cuda", tune=space)
        out = np.empty_like(x)
        kernel(x, out)
        np.testing.assert_allclose(out, loop_softmax_reference(x), rtol=1e-5)
        return kernel.explain()

    first = run_fresh()
    assert choice_origin(first) == "tuned now"
    records = list((tmp_path / "cache" / "records").iterdir())
    assert len(records) == 1
    second = run_fresh()
    assert choice_origin(second) == "from the disk cache"
    assert first.split("choice: ")[1].split(" (")[0] == second.split("choice: ")[1].split(" (")[0]

    # One byte of the text changed: the checksum fails, the record is
    # removed and the kernel tuned again.
    data = bytearray(records[0].read_bytes())
    data[-2] = ord("7") if data[-2] != ord("7") else ord("8")
    records[0].write_bytes(bytes(data))
    assert choice_origin(run_fresh()) == "tuned now"
    assert choice_origin(run_fresh()) == "from the disk cache"

    # Another space is another record.
    space = {"threads": [256]}
    assert choice_origin(run_fresh()) == "tuned now"
    assert len(list((tmp_path / "cache" / "records").iterdir())) == 2


def test_a_candidate_that_fails_to_run_is_skipped(rng):
    x = floats(rng, 300)
    out = np.empty(300)
    # BN = 10**6 reads out of bounds (IndexError with boundscheck); BN = 8 runs.
    kernel = plait.jit(read_at_strip, target="cuda", tune={"BN": [10**6, 8]}, boundscheck=True, cache=False)
    kernel(x, out)
    np.testing.assert_array_equal(out, x + x[7])
    report = kernel.explain()
    assert "BN=1000000: skipped (failed to run: IndexError" in report
    assert "choice: BN=8 (tuned now" in report


def test_range_step_candidate_that_does_not_compile_is_skipped(rng):
    x = floats(rng, (5, 40))
    out = np.empty(5)
    kernel = plait.jit(strip_sums, target="cuda", tune={"BN": [0, 16]}, cache=False)
    kernel(x, out)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-12)
    report = kernel.explain()
    assert "BN=0: skipped (does not compile: KernelValueError" in report
    assert "choice: BN=16" in report


def test_every_candidate_failing_to_run_raises_the_kernels_error(rng):
    x = floats(rng, 30)
    kernel = plait.jit(read_at_strip, target="cuda", tune={"BN": [100, 200]}, boundscheck=True, cache=False)
    with pytest.raises(IndexError):
        kernel(x, np.empty(30))
    assert "no candidate ran" in kernel.explain()
