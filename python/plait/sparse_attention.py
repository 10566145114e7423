"""plait.attention: softmax attention over a sparse pattern of kept scores.

    out = plait.attention(q, k, v, P, scale=None)

q: (..., S_q, D), k: (..., S_k, D), v: (..., S_k, D_v), the leading
dimensions (batch, heads) the same; P a pattern of plait.sparse.acsr (or any
SciPy sparse matrix: its stored entries are the kept scores) of shape
(S_q, S_k). Each query row attends to its kept keys only:

    out[..., i, :] = sum_j softmax_j(scale * q[..., i, :] . k[..., j, :]) v[..., j, :]   over j kept in row i

with scale 1 / sqrt(D) by default. A row with no kept key gives zeros (as
FlexAttention gives). NumPy arrays and PyTorch CPU tensors run on the CPU,
PyTorch CUDA tensors and CuPy arrays on the GPU, float32 or float64.

Each (batch, head) runs the operator program `_attend` below, compiled by
Plait: the scores are computed at the pattern's entries only (the sampled
product), then their softmax per row and the product with v, in one pass
over the rows (docs/sparse.md).
"""

import math

import numpy as np

from . import sparse as _sparse
from .acsr import Pattern

__all__ = ["attention"]


def _attend(P, q, k, v, scale):
    s = _sparse.mask(P, q @ k.T) * scale
    return _sparse.softmax(s, axis=1) @ v


_kernels = {}


def _kernel(target):
    kernel = _kernels.get(target)
    if kernel is None:
        from .decorator import jit

        kernel = _kernels[target] = jit(_attend, target=target)
    return kernel


def _library(x):
    module = type(x).__module__
    if module.startswith("torch"):
        return "torch-cuda" if x.is_cuda else "torch-cpu"
    if module.startswith("cupy"):
        return "cupy"
    if isinstance(x, np.ndarray):
        return "numpy"
    raise TypeError(f"plait.attention: q, k and v are NumPy arrays, PyTorch tensors or CuPy arrays, got "
                    f"{module}.{type(x).__qualname__}")


def _dtype_name(x):
    return str(x.dtype).replace("torch.", "")


def _pattern_for(pattern, library, device, dtype):
    """The pattern as the sparse matrix the kernel takes on `library`'s
    device. An ACSR pattern (which does not change) is copied to a GPU once
    per library, device and dtype; another sparse matrix, which its owner may
    change between calls, goes as it is (the call copies a SciPy matrix's
    arrays to the GPU each time)."""
    if not isinstance(pattern, Pattern) or library in ("numpy", "torch-cpu"):
        return pattern.tocsr()
    csr = pattern.tocsr()
    cache = pattern._device_copies
    key = (library, str(device), str(dtype))
    found = cache.get(key)
    if found is None:
        if library == "torch-cuda":
            import warnings

            import torch

            with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state"
                warnings.simplefilter("ignore", UserWarning)
                found = torch.sparse_csr_tensor(torch.from_numpy(csr.indptr), torch.from_numpy(csr.indices),
                                                torch.ones(csr.indices.size, dtype=dtype), size=csr.shape,
                                                device=device, check_invariants=False)
        else:
            import cupy
            import cupyx.scipy.sparse as cusp

            with cupy.cuda.Device(device):
                found = cusp.csr_matrix((cupy.ones(csr.indices.size, dtype=dtype), cupy.asarray(csr.indices),
                                         cupy.asarray(csr.indptr)), shape=csr.shape)
        cache[key] = found
    return found


def attention(q, k, v, pattern, scale=None):
    """Softmax attention of q over k and v at the kept scores of `pattern`
    (module docstring)."""
    library = _library(q)
    for name, x in (("k", k), ("v", v)):
        if _library(x) != library:
            raise TypeError(f"plait.attention: q and {name} are of different libraries or devices")
    if not (hasattr(pattern, "tocsr") and getattr(pattern, "ndim", 2) == 2):
        raise TypeError("plait.attention: the pattern is a plait.sparse.acsr pattern or a SciPy sparse matrix, got "
                        f"{type(pattern).__module__}.{type(pattern).__qualname__}")
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ValueError(f"plait.attention: q, k and v have the same number of dimensions, at least 2; got "
                         f"{q.ndim}, {k.ndim} and {v.ndim}")
    lead = tuple(q.shape[:-2])
    if tuple(k.shape[:-2]) != lead or tuple(v.shape[:-2]) != lead:
        raise ValueError(f"plait.attention: the leading dimensions of q, k and v differ: {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    sq, d = q.shape[-2], q.shape[-1]
    sk = k.shape[-2]
    if k.shape[-1] != d or v.shape[-2] != sk:
        raise ValueError(f"plait.attention: q is (..., S_q, D), k (..., S_k, D) and v (..., S_k, D_v); got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if tuple(pattern.shape) != (sq, sk):
        raise ValueError(f"plait.attention: the pattern's shape {tuple(pattern.shape)} is not (S_q, S_k) = "
                         f"({sq}, {sk})")
    dtypes = {_dtype_name(x) for x in (q, k, v)}
    if len(dtypes) != 1 or dtypes.pop() not in ("float32", "float64"):
        raise TypeError(f"plait.attention: q, k and v are all float32 or all float64, got {_dtype_name(q)}, "
                        f"{_dtype_name(k)} and {_dtype_name(v)} (convert half precision with .float())")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)

    if library == "torch-cpu":
        import torch

        out = attention(q.detach().numpy(), k.detach().numpy(), v.detach().numpy(), pattern, scale)
        return torch.from_numpy(out)
    device = q.device if library == "torch-cuda" else (q.device.id if library == "cupy" else None)
    P = _pattern_for(pattern, library, device, q.dtype)
    kernel = _kernel("cpu" if library == "numpy" else "cuda")
    if library == "numpy":
        out = np.empty(lead + (sq, v.shape[-1]), dtype=q.dtype)
    elif library == "torch-cuda":
        import torch

        out = torch.empty(lead + (sq, v.shape[-1]), dtype=q.dtype, device=q.device)
    else:
        import cupy

        out = cupy.empty(lead + (sq, v.shape[-1]), dtype=q.dtype)
    for index in np.ndindex(*lead):
        out[index] = kernel(P, q[index], k[index], v[index], scale)
    return out
