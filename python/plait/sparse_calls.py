"""Calls with sparse matrices (plait/dispatcher.py's _call_sparse).

A kernel takes a sparse matrix as its arrays: values, column indices, row
pointers and the column count (the compiler's signature spells it
"csr[f64, i32]"). The C++ call path hands a call with a sparse argument to
the dispatcher's _call_sparse, which makes each one canonical CSR (once per
call, with a note for explain()), calls a second _core.Dispatcher that takes
the arrays (so that the kernel's table lookup and call stay in C++). The
call path folds sparse results back into matrices of the arguments' library
(fold_results, which also makes the lists a kernel returns).

Sparse arguments: SciPy matrices and arrays on both targets; on the CUDA
target also cupyx.scipy.sparse matrices and torch sparse tensors, whose
arrays the kernel reads in place (SciPy's are copied to the GPU as NumPy
arrays are).
"""

import numpy as np

from . import _core

_INDEX_CODES = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}


# The kind of each type of argument seen that is not torch's (whose tensors'
# kind depends on their layout): a call looks its arguments' kinds up.
_KIND_OF_TYPE = {}


def sparse_kind(value):
    """"scipy", "cupyx" or "torch" for a sparse matrix, else None."""
    cls = type(value)
    try:
        return _KIND_OF_TYPE[cls]
    except KeyError:
        pass
    module = cls.__module__
    if module.startswith("torch"):
        layout = getattr(value, "layout", None)
        return "torch" if layout is not None and str(layout) != "torch.strided" else None
    kind = None
    if hasattr(value, "tocsr") and hasattr(value, "format"):
        kind = "cupyx" if module.startswith("cupyx") else "scipy"
    _KIND_OF_TYPE[cls] = kind
    return kind


_IS_MATRIX_CLASS = {}  # SciPy sparse type -> whether it is an spmatrix (csr_matrix, ...), not an array


def _is_matrix_class(value):
    cls = type(value)
    known = _IS_MATRIX_CLASS.get(cls)
    if known is None:
        import scipy.sparse as sp

        known = _IS_MATRIX_CLASS[cls] = issubclass(cls, sp.spmatrix)
    return known


def csr_parts(value, kind, kernel, name, notes, target):
    """(values, indices, indptr, column count, whether `*` is a matrix product)
    of argument `name` of `kernel`, a sparse matrix of `kind` (sparse_kind), as
    canonical CSR; `notes` gets what was done."""
    if kind != "scipy" and target != "cuda":
        where = "a cupyx.scipy.sparse matrix" if kind == "cupyx" else "a torch sparse tensor"
        raise TypeError(f"{kernel}() argument '{name}' is {where}: sparse arguments of target='cpu' kernels are "
                        "SciPy matrices; pass it to a target='cuda' kernel")
    if kind == "torch":
        csr = _canonical_torch(value, kernel, name, notes)
        return csr.values(), csr.col_indices(), csr.crow_indices(), int(csr.shape[1]), False
    csr = canonical_csr(value, name, notes)  # cupyx's matrices have SciPy's methods (on the GPU)
    matrix = kind == "cupyx" or _is_matrix_class(value)  # cupyx has csr_matrix only
    return csr.data, csr.indices, csr.indptr, int(csr.shape[1]), matrix


def canonical_csr(value, name, notes):
    """value, a SciPy or cupyx matrix or a plait.sparse.acsr pattern, as
    canonical CSR (sorted column indices, no duplicates, one index dtype),
    converted or copied when it is not; `notes` gets what was done."""
    if value.format == "acsr":  # plait.sparse.acsr: its csr_array of ones, made once per pattern
        return value.tocsr()
    csr = value
    if value.format != "csr":
        notes.add(f"argument '{name}' ({value.format.upper()}) is converted to CSR on each call")
        csr = value.tocsr()
    if csr.indices.dtype != csr.indptr.dtype or csr.indices.dtype not in _INDEX_CODES:
        csr = csr.copy()
        csr.indices = csr.indices.astype(np.int64)
        csr.indptr = csr.indptr.astype(np.int64)
    if not csr.has_canonical_format:
        notes.add(f"argument '{name}' has unsorted or duplicate column indices: a canonical copy (sorted, "
                  "duplicates summed, as SciPy's sum_duplicates) is made on each call")
        csr = csr.copy() if csr is value else csr
        csr.sum_duplicates()
    return csr


def _canonical_torch(value, kernel, name, notes):
    """A torch sparse tensor as canonical CSR (on its device). PyTorch's CSR
    invariants ask for sorted, distinct column indices in each row but check
    them only on request, so they are checked here (on the device)."""
    import torch

    if value.ndim != 2:
        raise TypeError(f"{kernel}() argument '{name}' is a {value.ndim}-D torch sparse tensor; sparse arguments "
                        "are matrices")
    if value.layout != torch.sparse_csr:
        notes.add(f"argument '{name}' ({str(value.layout).replace('torch.', '')}) is converted to CSR on each call")
        coo = value if value.layout == torch.sparse_coo else value.to_sparse_coo()
        return _coalesced_csr(coo._indices(), coo._values(), value.shape)
    if _torch_rows_sorted(value):
        return value
    notes.add(f"argument '{name}' has unsorted or duplicate column indices: a canonical copy (sorted, "
              "duplicates summed, as torch's coalesce) is made on each call")
    crow, col = value.crow_indices(), value.col_indices()
    rows = torch.repeat_interleave(torch.arange(value.shape[0], device=col.device), crow.diff().long())
    return _coalesced_csr(torch.stack([rows, col.long()]), value.values(), value.shape)


def _coalesced_csr(indices, values, shape):
    """The CSR tensor of COO entries, duplicates summed. The COO tensor is
    built afresh: one converted from CSR counts as coalesced already."""
    import torch

    return torch.sparse_coo_tensor(indices, values, shape).coalesce().to_sparse_csr()


# Torch CSR tensors found canonical: id -> (a weak reference, the version
# counters of their index tensors), so that a tensor passed again is not
# checked again (the check synchronises with the GPU) unless its indices
# were written since.
_SORTED_TORCH = {}
_SORTED_KEPT = 1024


def _torch_rows_sorted(csr):
    """Whether the column indices of each row of a torch CSR tensor increase."""
    import weakref

    versions = (csr.col_indices()._version, csr.crow_indices()._version)
    known = _SORTED_TORCH.get(id(csr))
    if known is not None and known[0]() is csr and known[1] == versions:
        return True
    if not _rows_sorted_on_device(csr):
        return False
    if len(_SORTED_TORCH) >= _SORTED_KEPT:
        _SORTED_TORCH.clear()
    _SORTED_TORCH[id(csr)] = (weakref.ref(csr), versions)
    return True


def _rows_sorted_on_device(csr):
    import torch

    col, crow = csr.col_indices(), csr.crow_indices()
    n = col.numel()
    if n < 2:
        return True
    starts = torch.zeros(n, dtype=torch.bool, device=col.device)
    inner = crow[1:-1]
    starts[inner[inner < n].long()] = True  # the first position of each row after the first
    return bool(((col[1:] > col[:-1]) | starts[1:]).all())


def fold_signature(abi_signature, sparse_params):
    """The kernel's signature from its entry point's: each sparse parameter's
    four arrays and extent as "csr[f64, i32]" (or csr_matrix[...])."""
    parts = [p.strip() for p in _split(abi_signature)]
    out, k = [], 0
    for matrix in sparse_params:
        if matrix is None:
            out.append(parts[k])
            k += 1
            continue
        values, indices = parts[k].split("[")[0], parts[k + 1].split("[")[0]
        out.append(f"{'csr_matrix' if matrix else 'csr'}[{values}, {indices}]")
        k += 4
    return ", ".join(out)


def _split(signature):
    depth, current, parts = 0, "", []
    for c in signature:
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
    if current.strip():
        parts.append(current)
    return parts


class ArrayCalls(_core.Dispatcher):
    """The calls of one kernel whose sparse arguments are passed as arrays:
    one per arrangement of sparse parameters (which, and whether csr_matrix)."""

    def __init__(self, owner, sparse_params):
        super().__init__()
        self._owner = owner
        self._sparse_params = sparse_params
        names = []
        for name, matrix in zip(owner._param_names, sparse_params):
            names += [name] if matrix is None else [f"{name}.data", f"{name}.indices", f"{name}.indptr",
                                                   f"{name}.shape[1]"]
        self._setup(owner.py_func.__name__, owner.py_func.__code__.co_filename, names, owner.num_threads,
                    owner._target)

    def _compile(self, abi_signature):
        return self._owner._compile(fold_signature(abi_signature, self._sparse_params))

    def _bind(self, args, kwargs):
        return tuple(args)


def fold_results(declared_results, declared_tuple, declared_list, results, arguments):
    """The Python results of a kernel that returns sparse matrices or lists as
    arrays (the kernel's declared_results, e.g. "csr[f64, i32]",
    "list[(int, f64)]", "dict[int, float]", "set[i64]"): called by the
    dispatcher's call path."""
    given = set(id(a) for a in arguments)
    out, k = [], 0
    for declared in declared_results:
        if declared.startswith(("dict[", "set[")):
            names = declared[declared.index("[") + 1:-1].split(", ")
            columns = [_list_items(results[k + i], name) for i, name in enumerate(names)]
            k += len(names)
            out.append(dict(zip(*columns)) if declared.startswith("dict") else set(columns[0]))
            continue
        if declared.startswith("list["):
            items = declared[len("list["):-1]
            tuples = items.startswith("(")
            names = items.strip("()").split(", ")
            columns = [_list_items(results[k + i], name) for i, name in enumerate(names)]
            k += len(names)
            out.append(list(zip(*columns)) if tuples else columns[0])
            continue
        if not declared.startswith(("csr", "csc")):
            out.append(results[k])
            k += 1
            continue
        data, indices, indptr, ncols = results[k:k + 4]
        k += 4
        # A result never shares an argument's index arrays, as SciPy's never does.
        indices = _copy(indices) if id(indices) in given else indices
        indptr = _copy(indptr) if id(indptr) in given else indptr
        out.append(_matrix(declared, data, indices, indptr, ncols))
    if declared_list:
        return out
    if declared_tuple:
        return tuple(out)
    return out[0] if out else None


def _list_items(column, item_type):
    """The elements of a returned list's array as Python gives them: Python
    numbers for the items typed int, float or bool, NumPy scalars for the
    others (a list of an array's elements holds NumPy scalars)."""
    from .cuda import to_host  # a GPU array (the CUDA target's results) as a NumPy copy

    column = to_host(column)
    return column.tolist() if item_type in ("int", "float", "bool") else list(column)


def _copy(array):
    return array.clone() if type(array).__module__.startswith("torch") else array.copy()


def _matrix(declared, data, indices, indptr, extent):
    """A sparse result in the library of its values, which the kernel made: a
    torch sparse CSR tensor for a torch tensor, a cupyx csr_matrix for a CuPy
    array, else SciPy's csr_array or csr_matrix (as declared); CSC where the
    kernel returned a transpose ("csc[...]": index pointers over columns,
    `extent` rows), as SciPy's `.T` is. Index arrays of another library (a
    SciPy argument's, on the GPU target) are moved to it."""
    csc = declared.startswith("csc")
    compressed = int(indptr.shape[0]) - 1
    shape = (int(extent), compressed) if csc else (compressed, int(extent))
    module = type(data).__module__
    if module.startswith("torch"):
        import torch

        indices, indptr = (torch.as_tensor(a, device=data.device) for a in (indices, indptr))
        make = torch.sparse_csc_tensor if csc else torch.sparse_csr_tensor
        return make(indptr, indices, data, size=shape)
    if module.startswith("cupy"):
        import cupy
        import cupyx.scipy.sparse as csp

        cls = csp.csc_matrix if csc else csp.csr_matrix
        return cls((data, cupy.asarray(indices), cupy.asarray(indptr)), shape=shape)
    data, indices, indptr = (a if isinstance(a, np.ndarray) else a.to_host() for a in (data, indices, indptr))
    import scipy.sparse as sp

    matrix = declared.split("[")[0].endswith("_matrix")
    cls = (sp.csc_matrix if matrix else sp.csc_array) if csc else (sp.csr_matrix if matrix else sp.csr_array)
    return cls((data, indices, indptr), shape=shape, copy=False)
