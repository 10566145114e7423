"""plait.attention: softmax attention over a sparse pattern of kept scores.

    out = plait.attention(q, k, v, P, scale=None, fused=True)
    plait.attention.explain(q, k, v, P)     # which kernel runs, why, and P's tiles

q: (..., S_q, D), k: (..., S_k, D), v: (..., S_k, D_v), the leading
dimensions (batch, heads) the same; P a pattern of plait.sparse.acsr (or any
SciPy sparse matrix: its stored entries are the kept scores) of shape
(S_q, S_k). Each query row attends to its kept keys only:

    out[..., i, :] = sum_j softmax_j(scale * q[..., i, :] . k[..., j, :]) v[..., j, :]   over j kept in row i

with scale 1 / sqrt(D) by default. A row with no kept key gives zeros (as
FlexAttention gives). NumPy arrays and PyTorch CPU tensors run on the CPU,
PyTorch CUDA tensors and CuPy arrays on the GPU; float32, float64, bfloat16
or float16, the result of the inputs' type.

bfloat16 and float16 on the GPU over an ACSR pattern run one fused kernel on
tensor cores (jit/cuda_sparse_attention.h) over the pattern's tiles
(Pattern.tiles). Everything else runs, per (batch, head), the operator
program `_attend` below, compiled by Plait (half precision in float32): the
scores are computed at the pattern's entries only (the sampled product),
then their softmax per row and the product with v, in one pass over the rows
(docs/sparse.md, docs/attention.md).
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


_HALF = ("bfloat16", "float16")
_FLOAT = ("float32", "float64")


def _check(q, k, v, pattern):
    """The library of q, k and v ("numpy", "torch-cpu", "torch-cuda",
    "cupy") after checking that the arguments describe one attention."""
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
    if len(dtypes) != 1 or dtypes.pop() not in _FLOAT + _HALF:
        raise TypeError(f"plait.attention: q, k and v are all float32, float64, bfloat16 or float16, got "
                        f"{_dtype_name(q)}, {_dtype_name(k)} and {_dtype_name(v)}")
    return library


def _fused_refusal(q, v, pattern, library, fused):
    """Why the fused kernel does not run this call ("" when it does)."""
    if not fused:
        return "fused=False asks for the generated kernels"
    if library not in ("torch-cuda", "cupy"):
        return "the fused kernel runs on the GPU"
    if _dtype_name(q) not in _HALF:
        return (f"the fused kernel multiplies bfloat16 or float16 on tensor cores; {_dtype_name(q)} runs the "
                "generated kernels, exact to the element")
    if not isinstance(pattern, Pattern):
        return "the fused kernel takes a plait.sparse.acsr pattern (its tiles come from the affine metadata)"
    from . import _core

    d, dv = q.shape[-1], v.shape[-1]
    if dv != d or not _core.sparse_attention_head_dim_supported(d):
        return f"the fused kernel takes D = D_v, a multiple of 16 up to 128; got D {d}, D_v {dv}"
    return ""


def attention(q, k, v, pattern, scale=None, fused=True):
    """Softmax attention of q over k and v at the kept scores of `pattern`
    (module docstring)."""
    library = _check(q, k, v, pattern)
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if not _fused_refusal(q, v, pattern, library, fused):
        return _fused(q, k, v, pattern, scale, library)
    dtype = _dtype_name(q)
    if dtype in _HALF:
        # The generated kernels compute in float32; the result is rounded to the inputs' type.
        torch_like = library.startswith("torch")
        wide = [x.float() if torch_like else x.astype("float32") for x in (q, k, v)]
        out = attention(*wide, pattern, scale, False)
        return out.to(q.dtype) if torch_like else out.astype(q.dtype)
    if library == "torch-cpu":
        import torch

        out = attention(q.detach().numpy(), k.detach().numpy(), v.detach().numpy(), pattern, scale, False)
        return torch.from_numpy(out)
    lead = tuple(q.shape[:-2])
    sq = q.shape[-2]
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


def explain(q, k, v, pattern, scale=None, fused=True):
    """Which kernel plait.attention runs for these arguments and why, and
    the pattern's affine metadata and tiles (for an ACSR pattern)."""
    library = _check(q, k, v, pattern)
    why = _fused_refusal(q, v, pattern, library, fused)
    lines = ["plait.attention: " + ("the fused kernel on tensor cores (one launch: batches and heads in its grid; "
                                    "online softmax; scores never stored)" if not why else
                                    "the generated operator program, one call per (batch, head): " + why)]
    if isinstance(pattern, Pattern):
        lines.append(pattern.explain())
    return "\n".join(lines)


attention.explain = explain


# ---------------------------------------------------------------- the fused kernel


def _plan_on_device(pattern, library, device):
    """The pattern's tile plan (Pattern.tiles) on the device, copied once per
    library and device: (rows, tiles, row_parts) arrays and the plan."""
    key = ("tiles", library, str(device))
    found = pattern._device_copies.get(key)
    if found is None:
        plan = pattern.tiles()
        arrays = [plan[name] for name in ("rows", "tiles", "row_parts")]
        if library == "torch-cuda":
            import torch

            on_device = [torch.from_numpy(a.copy()).to(device) for a in arrays]
        else:
            import cupy

            with cupy.cuda.Device(device):
                on_device = [cupy.asarray(a) for a in arrays]
        found = pattern._device_copies[key] = (on_device, plan)
    return found


def _address(x, library):
    return x.data_ptr() if library == "torch-cuda" else x.data.ptr


def _as_heads(x, library):
    """x as (batch, heads, rows, D), the last dimension contiguous and the
    other strides multiples of 8 elements from a 16-byte aligned start (a
    copy where they are not), and those three strides in elements."""
    lead = x.shape[:-2]
    if len(lead) != 2:
        count = math.prod(lead)
        x = x.reshape((1, count) + tuple(x.shape[-2:]))
    if library == "torch-cuda":
        strides = tuple(x.stride())
    else:
        strides = tuple(s // x.itemsize for s in x.strides)
    if strides[-1] != 1 or any(s % 8 for s in strides[:-1]) or _address(x, library) % 16:
        if library == "torch-cuda":
            x = x.contiguous()
            strides = tuple(x.stride())
        else:
            import cupy

            x = cupy.ascontiguousarray(x)
            strides = tuple(s // x.itemsize for s in x.strides)
    return x, strides[:3]


def _fused(q, k, v, pattern, scale, library):
    from . import _core

    lead = tuple(q.shape[:-2])
    sq, d = q.shape[-2], q.shape[-1]
    heads = math.prod(lead)
    device = q.device if library == "torch-cuda" else q.device.id
    (rows, tiles, row_parts), plan = _plan_on_device(pattern, library, device)
    # The splits of long tiles leave partial results in slots and count
    # themselves in zeroed counters, per (batch, head).
    slots, groups = plan["slots"], plan["split_groups"]
    partials = counters = None
    if library == "torch-cuda":
        import torch

        out = torch.empty(lead + (sq, d), dtype=q.dtype, device=device)
        stream = torch.cuda.current_stream(device).cuda_stream
        if groups:
            partials = torch.empty(heads * slots * plan["tile_rows"] * (d + 2), dtype=torch.float32, device=device)
            counters = torch.zeros(heads * groups, dtype=torch.int32, device=device)
    else:
        import cupy

        out = cupy.empty(lead + (sq, d), dtype=q.dtype)
        stream = cupy.cuda.get_current_stream().ptr
        if groups:
            partials = cupy.empty(heads * slots * plan["tile_rows"] * (d + 2), dtype=cupy.float32)
            counters = cupy.zeros(heads * groups, dtype=cupy.int32)
    qh, qs = _as_heads(q, library)
    kh, ks = _as_heads(k, library)
    vh, vs = _as_heads(v, library)
    oh, os_ = _as_heads(out, library)
    _core.sparse_attention(_dtype_name(q), d, _address(qh, library), qs, _address(kh, library), ks,
                           _address(vh, library), vs, _address(oh, library), os_, qh.shape[0], qh.shape[1], scale,
                           _address(rows, library), _address(tiles, library), _address(row_parts, library),
                           plan["tile_count"], _address(partials, library) if groups else 0,
                           _address(counters, library) if groups else 0, slots, groups, stream)
    return out
