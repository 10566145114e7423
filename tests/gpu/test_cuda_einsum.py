"""numpy.einsum compiled for target="cuda" against NumPy, with NumPy, CuPy
and torch operands: sums, transposes, traces, products of two and three
operands. Skipped, with the reason, where CUDA is unavailable."""

import numpy as np
import pytest

import plait
from test_cuda_run import cupy, torch

pytestmark = pytest.mark.skipif(not plait.cuda_available(),
                                reason=f"no usable CUDA GPU: {plait.cuda_unavailable_reason()}")


def contractions(A, B, C, x):
    return (np.einsum("ij->ji", A), np.einsum("ij->", A), np.einsum("ij,jk->ik", A, B), np.einsum("ij,j->i", A, x),
            np.einsum("ij,ij->ij", A, A), np.einsum("ij,jk,kl->il", A, B, C), np.einsum("ii", B @ C))


def on(value, lib):
    if lib == "cupy":
        return cupy.asarray(value)
    if lib == "torch":
        return torch.from_numpy(value).cuda()
    return value


def host(value):
    if cupy is not None and isinstance(value, cupy.ndarray):
        return cupy.asnumpy(value)
    if torch is not None and isinstance(value, torch.Tensor):
        return value.cpu().numpy()
    return np.asarray(value)


@pytest.mark.parametrize("lib", ["numpy",
                                 pytest.param("cupy", marks=pytest.mark.skipif(cupy is None, reason="no CuPy")),
                                 pytest.param("torch", marks=pytest.mark.skipif(torch is None, reason="no torch"))])
@pytest.mark.parametrize("n, m", [(0, 3), (1, 1), (5, 7), (300, 257)])
def test_einsum_matches_numpy(rng, lib, n, m):
    A, B, C, x = rng.random((n, m)), rng.random((m, 6)), rng.random((6, m)), rng.random(m)
    kernel = plait.jit(contractions, target="cuda")
    got = kernel(*[on(a, lib) for a in (A, B, C, x)])
    want = contractions(A, B, C, x)
    for g, w in zip(got, want):
        g = host(g)
        assert g.shape == np.shape(w) and g.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
