"""Calls with SciPy sparse matrices (plait/dispatcher.py's _call_sparse).

A kernel takes a sparse matrix as its arrays: values, column indices, row
pointers and the column count (the compiler's signature spells it
"csr[f64, i32]"). The C++ call path hands a call with a sparse argument to
the dispatcher's _call_sparse, which makes each one canonical CSR (once per
call, with a note for explain()), calls a second _core.Dispatcher that takes
the arrays (so that the kernel's table lookup and call stay in C++), and
folds sparse results back into SciPy matrices.
"""

import numpy as np

from . import _core

_INDEX_CODES = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}


def is_sparse(value):
    return hasattr(value, "tocsr") and hasattr(value, "format")


def _is_matrix_class(value):
    import scipy.sparse as sp

    return isinstance(value, sp.spmatrix)


def canonical_csr(value, name, notes):
    """value as canonical CSR (sorted column indices, no duplicates, one index
    dtype), converted or copied when it is not; `notes` gets what was done."""
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
        self.kernels = {}  # the entry point's signature (as _signature_of spells it) -> _core.Kernel
        self.folds = False  # whether a kernel returns a sparse matrix (as arrays, to fold)
        names = []
        for name, matrix in zip(owner._param_names, sparse_params):
            names += [name] if matrix is None else [f"{name}.data", f"{name}.indices", f"{name}.indptr",
                                                   f"{name}.shape[1]"]
        self._setup(owner.py_func.__name__, owner.py_func.__code__.co_filename, names, owner.num_threads,
                    owner._target)

    def _compile(self, abi_signature):
        kernel = self._owner._compile(fold_signature(abi_signature, self._sparse_params))
        self.kernels[kernel.abi_signature] = kernel
        self.folds = self.folds or bool(kernel.declared_results)
        return kernel

    def _bind(self, args, kwargs):
        return tuple(args)


def fold_results(kernel, results, arguments):
    """The Python results of a kernel that returns sparse matrices as arrays."""
    import scipy.sparse as sp

    given = set(id(a) for a in arguments)
    out, k = [], 0
    for declared in kernel.declared_results:
        if not declared.startswith("csr"):
            out.append(results[k])
            k += 1
            continue
        data, indices, indptr, ncols = results[k:k + 4]
        k += 4
        # A result never shares an argument's index arrays, as SciPy's never does.
        indices = indices.copy() if id(indices) in given else indices
        indptr = indptr.copy() if id(indptr) in given else indptr
        cls = sp.csr_matrix if declared.startswith("csr_matrix") else sp.csr_array
        out.append(cls((data, indices, indptr), shape=(len(indptr) - 1, ncols), copy=False))
    if kernel.declared_list:
        return out
    if kernel.declared_tuple:
        return tuple(out)
    return out[0] if out else None
