// A kernel compiled, built and loaded: what the drivers call and what the
// CUDA runtime launches from.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/types.h"
#include "runtime/abi.h"
#include "support/diagnostics.h"

namespace plait {

class LoadedLibrary;  // jit/loader.h
namespace jit {
class CudaModule;  // jit/cuda_runtime.h
}

struct CompiledKernel {
  std::string name;
  Signature signature;
  std::vector<ValueType> results;
  bool returns_tuple = false;
  bool returns_list = false;  // `return [a, b]`: the results make a Python list
  // When a result is a sparse matrix, the results as the Python function
  // gives them (ir::Function::declared_results); `results` are the arrays.
  std::vector<ValueType> declared_results;
  bool declared_tuple = false;
  bool declared_list = false;
  // Per parameter: whether the kernel may write its elements
  // (analysis/written_params); the caller refuses read-only arrays there.
  std::vector<bool> writes_param;
  std::string ir_text;
  SourceFile python_source;  // the kernel's Python text: run-time errors quote its lines
  std::string source;        // generated C++
  std::string library_path;  // the shared object in the cache
  std::string explain;       // the report of kernel.explain()
  bool from_disk_cache = false;
  std::shared_ptr<LoadedLibrary> library;
  plait_entry_fn entry = nullptr;
  // Target::CUDA only (docs/cuda.md): `source` is then the host part.
  std::string device_source;  // generated CUDA C++
  std::string ptx;
  std::string device_arch;                          // what NVRTC compiled for: "sm_90"
  std::vector<std::string> device_kernels;          // kernel names, by launch index
  bool device_errors = false;                       // device code may raise run-time errors
  std::vector<bool> device_kernel_raises;           // by launch index: that kernel may
  std::vector<std::string> device_assert_messages;  // codegen::CudaSources::assert_messages
  std::shared_ptr<jit::CudaModule> cuda_module;
};

}  // namespace plait
