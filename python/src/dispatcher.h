// The base class of plait's dispatchers (plait._core.Dispatcher): the object
// @plait.jit returns, called like the Python function. Its call slot runs the
// whole call in C++ on either target: the arguments classified into a key of
// type codes, the kernel found in the table by that key (Python's _compile
// compiles a new one), the call and its results. Python binds keywords and
// defaults (_bind) and, for tuned CUDA kernels, picks the kernel of a call's
// shape class (_tuned_kernel).
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel_object.h"

namespace plait::python {

struct Dispatcher {
  std::string name;
  std::string path;
  std::vector<std::string> params;
  int32_t num_threads = 1;
  bool cuda = false;                                 // target="cuda": calls go through call_cuda
  bool tuned = false;                                // a tuned CUDA kernel: Python picks each call's kernel
  std::unordered_map<std::string, KernelPtr> table;  // key of type codes -> kernel
};

// Thrown by the CUDA call path's classification on a sparse matrix (SciPy,
// cupyx.scipy.sparse and torch sparse tensors; the CPU's returns
// kSparseArgument): the call goes through the Python method _call_sparse,
// which passes each sparse matrix as its arrays (plait/sparse_calls.py).
struct SparseArgument {};

// Whether obj is a SciPy sparse matrix or array (it has `format` and `tocsr`).
bool is_scipy_sparse(PyObject* obj);

// Raises TypeError "<kernel>() argument '<param>' <why>".
[[noreturn]] void raise_argument_error(const Dispatcher& d, size_t index, const std::string& why);
// Raises TypeError for a NumPy masked array, whose mask kernels would ignore.
void refuse_masked_array(const Dispatcher& d, size_t index, PyObject* obj);

// Raises ValueError for a NumPy array argument the kernel writes that is
// read-only or repeats elements (a zero stride over an extent above 1: one
// store would change several elements, as NumPy refuses for broadcast
// views). `key` holds the arguments' type codes.
void check_writes(const Dispatcher& d, const plait::CompiledKernel& kernel, PyObject* const* args,
                  const std::string& key);

// The kernel for a key the table lacks: Python's _compile(signature),
// remembered in the table.
const KernelPtr& compile_for_key(Dispatcher& d, PyObject* self, const std::string& key);

// One call with the complete arguments (a tuple), on the CPU (cpu_call.cpp)
// or the GPU (cuda_call.cpp); a failure returns null with the Python error
// set or throws nanobind::python_error.
PyObject* call_cpu(Dispatcher& d, PyObject* self, PyObject* args);
PyObject* call_cuda(Dispatcher& d, PyObject* self, PyObject* args);

// The results of a kernel that returns sparse matrices or lists as their
// arrays (CompiledKernel::declared_results), folded into the values the
// Python function returns by plait.sparse_calls.fold_results; `results` is
// stolen. Other kernels' results are returned as they are.
PyObject* fold_declared_results(const plait::CompiledKernel& kernel, PyObject* results, PyObject* args);

// The signature a call with these complete arguments is compiled for.
std::string cpu_signature(const Dispatcher& d, nanobind::handle args);
std::string cuda_signature(const Dispatcher& d, nanobind::handle args);

// Defines Dispatcher in the module.
void define_dispatcher(nanobind::module_& m);

}  // namespace plait::python
