"""plait.attention on the GPU (PyTorch CUDA tensors, CuPy arrays) against the
float64 dense masked-softmax reference of tests/python/test_attention.py."""

import numpy as np
import pytest

import plait
from plait.sparse import acsr
from sparse_cases import masked_attention
from test_cuda_run import cupy, torch

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")

PATTERNS = [acsr.sliding(45, 5), acsr.dilated(45, 12, 4), acsr.strided(45, 6), acsr.blocked(45, 8),
            acsr.global_window(45, 3, 2), acsr.from_mask(np.tril(np.ones((45, 45), bool), k=-1))]
LIBS = [pytest.param("torch", marks=pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed")),
        pytest.param("cupy", marks=pytest.mark.skipif(cupy is None, reason="CuPy is not installed"))]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("P", PATTERNS, ids=[p.name for p in PATTERNS])
def test_attention_on_the_gpu_matches_masked_softmax(lib, dtype, P):
    rng = np.random.default_rng(7)
    host = [rng.standard_normal((2, 3, 45, 16)).astype(dtype) for _ in range(3)]
    if lib == "torch":
        args = [torch.from_numpy(x).cuda() for x in host]
        got = plait.attention(*args, P).cpu().numpy()
    else:
        args = [cupy.asarray(x) for x in host]
        got = cupy.asnumpy(plait.attention(*args, P))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, masked_attention(*host, P.mask(), 0.25), rtol=tol, atol=tol)
