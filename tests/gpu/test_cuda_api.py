"""The CUDA target's Python API on every machine: availability is reported,
and where CUDA is missing, kernels and copies raise CudaUnavailableError
naming what is missing (the decorator itself always works)."""

import numpy as np
import pytest

import cuda_kernels as K
import plait

NO_CUDA = not plait.cuda_available()


def test_availability_is_a_bool_with_a_reason_when_false():
    assert isinstance(plait.cuda_available(), bool)
    reason = plait.cuda_unavailable_reason()
    assert isinstance(reason, str)
    assert (reason == "") == plait.cuda_available()


def test_decorating_for_cuda_always_works():
    kernel = plait.jit(K.vector_add, target="cuda")
    assert isinstance(kernel, plait.CudaDispatcher)
    assert isinstance(kernel, plait.Dispatcher)
    assert kernel.signatures == []


def test_cuda_unavailable_error_is_a_runtime_error():
    assert issubclass(plait.CudaUnavailableError, RuntimeError)


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
def test_calling_without_cuda_names_what_is_missing():
    kernel = plait.jit(K.vector_add, target="cuda")
    with pytest.raises(plait.CudaUnavailableError, match="target='cuda' cannot run here: .*(libcuda|GPU|NVRTC)"):
        kernel.compile("f64[::1], f64[::1], f64[::1]")
    with pytest.raises(plait.CudaUnavailableError):
        kernel(np.zeros(3), np.zeros(3), np.zeros(3))
    with pytest.raises(plait.CudaUnavailableError):
        plait.to_device(np.zeros(3))


def test_to_host_of_numpy_is_the_same_array():
    a = np.arange(4.0)
    assert plait.to_host(a) is a


def test_disabled_jit_runs_python_for_cuda_too(monkeypatch):
    monkeypatch.setenv("PLAIT_DISABLE_JIT", "1")
    kernel = plait.jit(K.vector_add, target="cuda")
    out = np.zeros(3)
    kernel(np.ones(3), np.ones(3), out)
    np.testing.assert_array_equal(out, 2.0)
