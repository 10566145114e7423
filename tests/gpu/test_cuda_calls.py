"""Calls between functions on the CUDA target: the inlined callees run in the
device code of the loops that call them (frontend/inline_calls.h), checked
against the undecorated functions for each array kind."""

import os
import sys

import numpy as np
import pytest

import plait
from test_cuda_run import KINDS, check

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_calls import clip, sigma  # noqa: E402 -- the CPU tests' callees

on_gpu = pytest.mark.skipif(not plait.cuda_available(),
                            reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def row_dot(A, i, v):
    s = 0.0
    for k in range(A.shape[1]):
        s += A[i, k] * v[k]
    return s


def calls_in_parallel_loops(A, v, out):
    #pragma parallel for
    for i in range(A.shape[0]):
        out[i] = clip(sigma(row_dot(A, i, v) + 3.0), hi=0.2)


@on_gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (37, 5), (1000, 17)])
def test_calls_in_device_loops(kind, shape):
    rng = np.random.default_rng(sum(shape))
    A = rng.random(shape)
    v = rng.random(shape[1])
    check(calls_in_parallel_loops, [A, v, np.empty(shape[0])], kind, poison=(2,), rtol=1e-12)
