"""The random kernels of tests/python/test_random_kernels.py on the CUDA
target: the same grammar and oracle, checked and unchecked (boundscheck
drawn), but without out-of-range indices: with them, the error a parallel
loop raises on the GPU is the first one recorded, not always the earliest
iteration's as in Python (docs/cuda.md, "Errors on the device")."""

import os
import sys

import pytest
from hypothesis import given

import plait

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from random_kernel_oracle import check_case, hypothesis_settings  # noqa: E402
from random_kernels import kernel_cases  # noqa: E402


@pytest.mark.skipif(not plait.cuda_available(), reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")
@hypothesis_settings
@given(kernel_cases(out_of_range=False))
def test_random_kernel_cuda(case):
    check_case(case, "cuda")
