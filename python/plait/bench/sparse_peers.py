"""The implementations `python -m plait.bench sparse` compares (a column of
its table each):

  scipy          the kernel function itself (the reference)
  torch          torch.sparse CSR tensors, on the CPU or, for --target cuda,
                 on the GPU; each kernel's formulation is below
  cupy           the same SciPy code on cupyx.scipy.sparse matrices and CuPy
                 arrays (cuda only)
  pyg            spmm_mm and spmv through torch_sparse's SparseTensor matmul,
                 or torch_geometric.utils.spmm when only PyG is installed
                 (cuda only)
  plait          plait.jit(fn), with target="cuda" for --target cuda
  plait-maximal  the same with fusion="maximal"
  plait-unfused  the same with fusion="none"

A peer says why it cannot run here (not installed, no GPU, wrong target).
Inputs reach a peer's device and format before the clock starts (untimed);
a timed call is the call plus a wait for the device. On the GPU, Plait gets
torch CUDA tensors (sparse CSR tensors with the matrices' own int32
indices, read in place; they follow SciPy's csr_array, as the kernels'
matrices do) when PyTorch with CUDA is installed, else the host inputs
(copied at each call). The torch peer's tensors hold int64 indices,
PyTorch's index type.
"""

import warnings

import numpy as np

from .peers import cupy_unavailable, first_line, missing


class SparsePeer:
    """One implementation family (a column of the table)."""

    name = ""

    def unavailable(self):
        """Why this peer cannot run here, or None."""
        return None

    def implementation(self, kernel, fn):
        """This peer's version of kernel `kernel` (whose SciPy function is
        `fn`), or None when it has none. May raise (a compile error, an
        unknown keyword): the harness reports that as this peer's n/a."""
        return fn

    def missing_note(self, kernel):
        return f"no {self.name} version of {kernel}"

    def prepare(self, kernel, args):
        """The arguments on this peer's device, in its formats: on the host,
        copies, so that a version that writes its inputs spoils no other
        peer's (the kernels return their results, so the copies serve every
        run of the peer)."""
        return [a.copy() for a in args]

    def call(self, fn, args):
        result = fn(*args)
        self.synchronize()
        return result

    def synchronize(self):
        """Waits until the work the calls started is done."""

    def release(self):
        """Frees cached device memory after a kernel."""


def _cuda_only(target, name):
    return None if target == "cuda" else f"{name} runs with --target cuda only"


class ScipyPeer(SparsePeer):
    name = "scipy"


class PlaitPeer(SparsePeer):
    """plait.jit(fn, **options), compiled on the first call."""

    def __init__(self, target, fusion=None):
        self.target, self.fusion = target, fusion
        self.name = {None: "plait", "maximal": "plait-maximal", "none": "plait-unfused"}[fusion]
        self._torch = None

    def unavailable(self):
        try:
            import plait
        except ImportError as e:
            return f"plait cannot be imported ({first_line(e)})"
        if self.target == "cuda":
            reason = plait.cuda_unavailable_reason()
            if reason:
                return reason
            torch = TorchPeer(self.target)
            self._torch = torch if torch.unavailable() is None else None
        return None

    def implementation(self, kernel, fn):
        import plait

        options = {} if self.fusion is None else {"fusion": self.fusion}
        if self.target == "cuda":
            options["target"] = "cuda"
        return plait.jit(fn, **options)

    def prepare(self, kernel, args):
        if not self._torch:
            return super().prepare(kernel, args)
        import scipy.sparse as sp
        import torch

        out = [_torch_csr(a, "cuda", index=None) if sp.issparse(a) else torch.from_numpy(a).cuda() for a in args]
        self.synchronize()
        return out

    def synchronize(self):
        if self._torch:
            self._torch.synchronize()
        elif self.target == "cuda":
            from plait import _core

            _core.synchronize(0)

    def release(self):
        if self._torch:
            self._torch.release()


class CupyPeer(SparsePeer):
    name = "cupy"

    def __init__(self, target):
        self.target = target

    def unavailable(self):
        return _cuda_only(self.target, "cupy") or cupy_unavailable()

    def prepare(self, kernel, args):
        import cupy
        import cupyx.scipy.sparse as cusp
        import scipy.sparse as sp

        n, m = args[0].shape
        if kernel in ("sddmm", "sddmm_spmm") and n * m >= 2**31:
            # cupyx's multiply by a dense matrix indexes it with 32-bit ints;
            # past 2**31 elements it makes an illegal memory access, which
            # leaves the GPU unusable for every peer after it.
            raise ValueError(f"cupyx multiplies by a dense {n} x {m} matrix with 32-bit indices (at most 2**31 "
                             "elements)")
        out = [cusp.csr_matrix(a) if sp.issparse(a) else cupy.asarray(a) for a in args]
        self.synchronize()
        return out

    def synchronize(self):
        import cupy

        cupy.cuda.get_current_stream().synchronize()

    def release(self):
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


# ================================================================ PyTorch

def _torch_csr(S, device, index=np.int64):
    """S as a torch sparse CSR tensor on `device`, its indices in `index`
    (None: S's own index type)."""
    import torch

    index = index or S.indices.dtype
    return torch.sparse_csr_tensor(torch.from_numpy(S.indptr.astype(index)), torch.from_numpy(S.indices.astype(index)),
                                   torch.from_numpy(S.data), S.shape).to(device)


def _torch_coo(S, device):
    import torch

    C = S.tocoo()
    indices = torch.from_numpy(np.vstack([C.row, C.col]).astype(np.int64))
    return torch.sparse_coo_tensor(indices, torch.from_numpy(C.data), S.shape, is_coalesced=True).to(device)


def torch_spmv(A, x):
    return A @ x


def torch_spmm_mm(A, X, W):
    import torch

    return torch.sparse.mm(A, X) @ W


def torch_sddmm(S, B, C):
    # sampled_addmm gives (B @ C) at S's pattern, without S's values
    # (beta=0 drops them); S.multiply multiplies by them.
    import torch

    sampled = torch.sparse.sampled_addmm(S, B, C, beta=0.0)
    return torch.sparse_csr_tensor(S.crow_indices(), S.col_indices(), sampled.values() * S.values(), S.shape)


def torch_sddmm_spmm(S, C, D, E):
    import torch

    return torch.sparse.mm(torch_sddmm(S, C, D), E)


def torch_softmax(S):
    # Unstored entries count as -inf: softmax over the stored entries only,
    # as plait.sparse.softmax. torch.sparse.softmax takes COO tensors.
    import torch

    return torch.sparse.softmax(S, dim=1)


def torch_row_normalise(S):
    import torch

    crow, values = S.crow_indices(), S.values()
    sums = S @ torch.ones(S.shape[1], dtype=values.dtype, device=values.device)
    scale = torch.repeat_interleave(1.0 / sums, crow.diff(), output_size=values.numel())
    return torch.sparse_csr_tensor(crow, S.col_indices(), values * scale, S.shape)


def torch_add(S, T):
    return S + T


def torch_spgemm(A, B):
    return A @ B


TORCH_KERNELS = {"spmv": torch_spmv, "spmm_mm": torch_spmm_mm, "sddmm": torch_sddmm,
                 "sddmm_spmm": torch_sddmm_spmm, "softmax": torch_softmax, "row_normalise": torch_row_normalise,
                 "add": torch_add, "spgemm": torch_spgemm}
TORCH_COO_KERNELS = ("softmax",)


class TorchPeer(SparsePeer):
    name = "torch"

    def __init__(self, target):
        self.device = "cuda" if target == "cuda" else "cpu"

    def unavailable(self):
        reason = missing("torch")
        if reason is None:
            import torch

            if self.device == "cuda" and not torch.cuda.is_available():
                return "torch finds no CUDA GPU"
            # PyTorch warns once that sparse CSR support is in beta and that
            # it does not check sparse invariants; the inputs are canonical.
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")
        return reason

    def implementation(self, kernel, fn):
        return TORCH_KERNELS.get(kernel)

    def prepare(self, kernel, args):
        import scipy.sparse as sp
        import torch

        layout = _torch_coo if kernel in TORCH_COO_KERNELS else _torch_csr
        out = [layout(a, self.device) if sp.issparse(a) else torch.from_numpy(a).to(self.device) for a in args]
        self.synchronize()
        return out

    def synchronize(self):
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()

    def release(self):
        import torch

        if self.device == "cuda":
            torch.cuda.empty_cache()


class PygPeer(TorchPeer):
    """PyG's sparse-dense products: torch_sparse.matmul on a SparseTensor,
    else torch_geometric.utils.spmm on a torch CSR tensor."""

    name = "pyg"
    KERNELS = ("spmv", "spmm_mm")

    def __init__(self, target):
        super().__init__(target)
        self.target = target

    def unavailable(self):
        reason = _cuda_only(self.target, "pyg") or super().unavailable()
        if reason is None and missing("torch_sparse") and missing("torch_geometric"):
            return "neither torch_sparse nor torch_geometric is installed"
        return reason

    def implementation(self, kernel, fn):
        if kernel not in self.KERNELS:
            return None
        if missing("torch_sparse") is None:
            from torch_sparse import matmul
        else:
            from torch_geometric.utils import spmm as matmul
        if kernel == "spmv":
            return lambda A, x: matmul(A, x[:, None])[:, 0]
        return lambda A, X, W: matmul(A, X) @ W

    def prepare(self, kernel, args):
        out = super().prepare(kernel, args)
        if missing("torch_sparse") is None:
            from torch_sparse import SparseTensor

            A = out[0]
            out[0] = SparseTensor(rowptr=A.crow_indices(), col=A.col_indices(), value=A.values(),
                                  sparse_sizes=tuple(A.shape))
        return out


def host_value(value):
    """A result as NumPy: a sparse one (SciPy, cupyx, torch CSR or COO) as a
    canonical scipy csr_array, a dense one as an ndarray."""
    import scipy.sparse as sp

    if sp.issparse(value):
        return canonical(value)
    package = type(value).__module__.split(".")[0]
    if package == "torch":
        import torch

        if value.layout == torch.sparse_csr:
            return canonical(sp.csr_array((value.values().cpu().numpy(), value.col_indices().cpu().numpy(),
                                           value.crow_indices().cpu().numpy()), shape=tuple(value.shape)))
        if value.layout == torch.sparse_coo:
            value = value.coalesce()
            row, col = value.indices().cpu().numpy()
            return canonical(sp.coo_array((value.values().cpu().numpy(), (row, col)), shape=tuple(value.shape)))
        return value.cpu().numpy()
    if package in ("cupy", "cupyx"):
        return host_value(value.get())
    if hasattr(value, "to_host"):  # plait.DeviceArray
        return value.to_host()
    return np.asarray(value)


def canonical(S):
    """S as a csr_array of sorted indices without duplicates (a copy)."""
    import scipy.sparse as sp

    C = sp.csr_array(S, copy=True)
    C.sum_duplicates()
    return C


def peers_for(target):
    """The default peers of a target, SciPy (the baseline) first."""
    cpu = [ScipyPeer(), TorchPeer(target), PlaitPeer(target), PlaitPeer(target, "maximal"),
           PlaitPeer(target, "none")]
    return cpu if target == "cpu" else [*cpu, CupyPeer(target), PygPeer(target)]


def known_peers(target):
    """Every peer that --peers may name."""
    return {p.name: p for p in [*peers_for(target), CupyPeer(target), PygPeer(target)]}
