"""NumPy library functions on the CUDA target (frontend/lower_numpy_library.cpp):
np.sign, np.clip, np.linalg.norm, np.any/np.all, np.arange, np.linspace,
np.cumsum, np.sort, np.argsort, np.unique, np.concatenate, np.stack, reshape, ravel and np.nonzero in one
kernel, checked against the undecorated function for each array kind."""

import numpy as np
import pytest

import plait
from test_cuda_run import KINDS, check

on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def library(a, A):
    s = np.sign(a) + np.clip(a, -0.25, 0.5) + np.cumsum(a)
    r = np.arange(a.shape[0]) * 1.5 + np.linspace(0.0, 1.0, a.shape[0])
    return (s + r, np.linalg.norm(A, axis=1), np.linalg.norm(a), np.nonzero(a > 0)[0], np.any(a > 0.5),
            np.all(A > -0.9, axis=0), np.sort(a), np.unique(np.floor(a * 4)), np.concatenate((a, a[::2])),
            np.nonzero(A > 0.5)[0], np.nonzero(A > 0.5)[1], np.argsort(a, kind="stable"), np.stack((a, a * 2), axis=1),
            A.reshape(5, -1).T + 1, A.ravel())


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_library_functions_on_the_gpu(kind, n):
    rng = np.random.default_rng(n)
    a = rng.random(n) * 2 - 1
    A = rng.random((n, 5)) * 2 - 1
    check(library, [a, A], kind, rtol=1e-12)
