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


# ---------------------------------------------------------------- the fused kernel (bfloat16, float16)

# Per dtype: the tolerance of the fused kernel against the float64 reference
# on the same (rounded) inputs. The probabilities are rounded to the inputs'
# type before they weight v (as in FlashAttention and FlexAttention), and
# the output is rounded once: a few units of the type's last place.
HALF_TOLERANCE = {"bfloat16": 3e-2, "float16": 4e-3}


def _empty_rows_mask(n):
    mask = np.tril(np.ones((n, n), bool))
    mask[::7] = False  # every seventh row keeps no key: its output is zeros
    return mask


FUSED_PATTERNS = [acsr.sliding(203, 17), acsr.causal_window(203, 40), acsr.dilated(203, 60, 4),
                  acsr.dilated(203, 33, 2), acsr.dilated(203, 90, 8), acsr.strided(203, 9), acsr.blocked(203, 64), acsr.blocked(203, 10),
                  acsr.global_window(203, 12, 3), acsr.from_mask(_empty_rows_mask(203)), acsr.sliding(1, 3),
                  acsr.from_mask(np.zeros((5, 9), bool)), acsr.from_mask(lambda i, j: (j <= 2 * i) & (j % 3 == 0),
                                                                         shape=(70, 150))]


def _half_inputs(lib, dtype, shapes, seed=11):
    rng = np.random.default_rng(seed)
    host = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if lib == "torch":
        dev = [torch.from_numpy(x).cuda().to(getattr(torch, dtype)) for x in host]
        back = [x.float().cpu().numpy() for x in dev]
    else:
        if dtype == "bfloat16":
            pytest.skip("CuPy has no bfloat16")
        dev = [cupy.asarray(x.astype(np.float16)) for x in host]
        back = [cupy.asnumpy(x).astype(np.float32) for x in dev]
    return dev, back


def _host(x, lib):
    return x.float().cpu().numpy() if lib == "torch" else cupy.asnumpy(x).astype(np.float32)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("P", FUSED_PATTERNS, ids=[f"{p.name}-{p.shape[0]}x{p.shape[1]}" for p in FUSED_PATTERNS])
def test_fused_attention_matches_masked_softmax(lib, dtype, P):
    sq, sk = P.shape
    (q, k, v), host = _half_inputs(lib, dtype, [(2, 3, sq, 64), (2, 3, sk, 64), (2, 3, sk, 64)])
    assert "fused kernel on tensor cores" in plait.attention.explain(q, k, v, P)
    got = plait.attention(q, k, v, P, scale=0.2)
    assert got.dtype == q.dtype and tuple(got.shape) == (2, 3, sq, 64)
    tol = HALF_TOLERANCE[dtype]
    np.testing.assert_allclose(_host(got, lib), masked_attention(*host, P.mask(), 0.2), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("d", [16, 48, 128])
@pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed")
def test_fused_attention_takes_each_head_dimension(dtype, d):
    P = acsr.dilated(333, 70, 3)
    (q, k, v), host = _half_inputs("torch", dtype, [(333, d)] * 3)  # no batch or head dimensions
    got = plait.attention(q, k, v, P)
    tol = HALF_TOLERANCE[dtype]
    np.testing.assert_allclose(_host(got, "torch"), masked_attention(*host, P.mask(), d**-0.5), rtol=tol, atol=tol)


@pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed")
def test_fused_attention_reads_strided_views_and_many_leading_dimensions():
    P = acsr.global_window(130, 9, 4)
    # (B, S, H, D) transposed to (B, H, S, D): rows H*D apart, not copied.
    (q, k, v), _ = _half_inputs("torch", "bfloat16", [(2, 130, 4, 32)] * 3)
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    host = [_host(x, "torch") for x in (q, k, v)]
    got = plait.attention(q, k, v, P)
    np.testing.assert_allclose(_host(got, "torch"), masked_attention(*host, P.mask(), 32**-0.5), rtol=3e-2, atol=3e-2)
    # Three leading dimensions, and a view whose rows are not 16-byte aligned (copied first).
    (q, k, v), host = _half_inputs("torch", "float16", [(2, 2, 2, 130, 33)] * 3)
    q, k, v = (x[..., 1:] for x in (q, k, v))
    host = [x[..., 1:] for x in host]
    got = plait.attention(q, k, v, P)
    np.testing.assert_allclose(_host(got, "torch"), masked_attention(*host, P.mask(), 32**-0.5), rtol=4e-3, atol=4e-3)


@pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed")
def test_half_precision_outside_the_fused_kernel_runs_the_generated_kernels_in_float32():
    P = acsr.sliding(90, 7)
    # A head dimension the kernel does not take, a SciPy pattern, and fused=False.
    (q, k, v), host = _half_inputs("torch", "bfloat16", [(2, 90, 40), (2, 90, 40), (2, 90, 24)])
    for pattern, fused in ((P, True), (P.tocsr(), True), (P, False)):
        why = plait.attention.explain(q, k, v, pattern, fused=fused)
        assert "generated operator program" in why
        got = plait.attention(q, k, v, pattern, fused=fused)
        assert got.dtype == torch.bfloat16
        np.testing.assert_allclose(_host(got, "torch"), masked_attention(*host, P.mask(), 40**-0.5), rtol=2e-2,
                                   atol=2e-2)


@pytest.mark.parametrize("lib", LIBS)
def test_fused_attention_splits_the_long_tiles_of_global_rows(lib):
    # The global rows' tile has 32 key tiles, the others 2 or 3: it runs in
    # four ranges whose partial softmaxes the last to finish merges.
    P = acsr.global_window(2000, 8, 3)
    assert P.tiles()["split_groups"] == 1 and "split into 4 ranges" in P.explain()
    (q, k, v), host = _half_inputs(lib, "float16", [(1, 2, 2000, 32)] * 3)
    want = masked_attention(*host, P.mask(), 0.3)
    for _ in range(2):  # the counters start from zero in each call
        got = plait.attention(q, k, v, P, scale=0.3)
        np.testing.assert_allclose(_host(got, lib), want, rtol=4e-3, atol=4e-3)
