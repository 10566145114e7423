// The extension module plait._core: compiles kernels through the C++ core and
// calls them. The per-call path of both targets runs in C++ (dispatcher.h,
// cpu_call.cpp, cuda_call_plan.h), because it decides the call overhead of
// every cached kernel.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#define PLAIT_IMPORTS_NUMPY
#include "numpy_api.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "ir/types.h"
#include "jit/cpu_blas.h"
#include "jit/cuda_runtime.h"
#include "jit/host_memory.h"
#include "runtime/abi.h"

#include "argument_types.h"
#include "attention_bindings.h"
#include "compile_bindings.h"
#include "cuda_bindings.h"
#include "cuda_call_plan.h"
#include "dispatcher.h"
#include "kernel_object.h"
#include "module_errors.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace plait::python;

namespace {

int import_numpy() {
  import_array1(-1);
  return 0;
}

}  // namespace

NB_MODULE(_core, m) {
  if (import_numpy() < 0) throw nb::python_error();
  install_sigint_handler();
  m.doc() = "The Plait compiler core and the kernel call path";

  m.def("_set_error_classes", &set_error_classes, "by_kind"_a, "internal"_a,
        "Registers the Python classes raised for compile errors (plait/errors.py).");
  m.def("compiler_version", &plait::compiler_version);
  m.def("cpu_blas_description", &plait::jit::cpu_blas_description,
        "The BLAS CPU kernels' matrix products call, or why none (jit/cpu_blas.h).");
  // Whether plait.jit checks indices unless told.
  m.attr("default_boundscheck") = plait::default_boundscheck;
  m.def("_raise_compile_error", &raise_python_compile_error, "kind"_a, "message"_a, "path"_a, "text"_a, "first_line"_a,
        "line"_a, "col"_a, "end_col"_a,
        "Raises the CompileError class of `kind` (an ErrorKind name) at line, columns [col, end_col) (0-based) "
        "of the source text.");
  m.def(
      "host_memory_stats",
      []() {
        const plait::jit::HostMemoryStats stats = plait::jit::host_memory_stats();
        return nb::make_tuple(stats.free_blocks, stats.free_bytes, stats.budget_bytes);
      },
      "(free blocks, free bytes, budget in bytes) of the pool of large arrays' memory.");
  m.def("release_host_memory", &plait::jit::release_free_host_memory,
        "Gives the pool's free blocks back to the operating system.");
  m.def("compile", &compile, "path"_a, "text"_a, "first_line"_a, "name"_a, "signature"_a, "modules"_a, "constants"_a,
        "boundscheck"_a, "fastmath"_a, "disk_cache"_a, "cache_dir"_a, "dump_dir"_a, "cxx"_a, "target"_a = "cpu",
        "auto_simd"_a = false, "cuda_threads"_a = plait::CudaLaunchConfig{}.threads,
        "cuda_row_groups"_a = plait::CudaLaunchConfig{}.row_groups, "cuda_max_team"_a = 0, "fusion"_a = "partial",
        "functions"_a = nb::dict(), "callees"_a = nb::dict(), "disabled_passes"_a = std::vector<std::string>(),
        "Compiles one specialisation of a kernel and returns a Kernel.");
  m.def(
      "optional_passes",
      [](const std::string& target) {
        return plait::optional_passes(target == "cuda" ? plait::Target::CUDA : plait::Target::CPU);
      },
      "target"_a, "The passes of the target ('cpu' or 'cuda') that disabled_passes may name, in pipeline order.");
  m.def(
      "disabled_passes_error",
      [](const std::string& target, const std::vector<std::string>& names) {
        plait::CompileOptions options;
        options.target = target == "cuda" ? plait::Target::CUDA : plait::Target::CPU;
        options.disabled_passes.insert(names.begin(), names.end());
        return plait::disabled_passes_error(options);
      },
      "target"_a, "names"_a, "'' when every name is an optional pass of the target, else what is wrong.");
  m.def("lookup_record", &lookup_record, "key"_a, "cache_dir"_a,
        "The text of the disk cache's record `key` (64 hex digits), or None when it is missing or damaged "
        "(a damaged one is removed). cache_dir '' is the default cache directory.");
  m.def("store_record", &store_record, "key"_a, "text"_a, "cache_dir"_a,
        "Writes the disk cache's record `key` (64 hex digits), replacing an older one.");
  define_cuda_bindings(m);
  define_attention_bindings(m);
  define_cuda_call(m);

  nb::class_<Kernel>(m, "Kernel")
      .def_prop_ro("name", [](const Kernel& k) { return k.compiled->name; })
      .def_prop_ro("signature", [](const Kernel& k) { return k.compiled->signature.to_string(); })
      .def_prop_ro("results",
                   [](const Kernel& k) {
                     std::vector<std::string> names;
                     for (const auto& t : k.compiled->results) names.push_back(plait::to_string(t));
                     return names;
                   })
      .def_prop_ro(
          "abi_signature", [](const Kernel& k) { return k.compiled->signature.abi().to_string(); },
          "The signature of the entry point: each sparse matrix as its arrays and column count.")
      .def_prop_ro(
          "declared_results",
          [](const Kernel& k) {
            std::vector<std::string> names;
            for (const auto& t : k.compiled->declared_results) names.push_back(plait::to_string(t));
            return names;
          },
          "When a result is a sparse matrix: the results as the function gives them (`results` has its arrays).")
      .def_prop_ro("declared_tuple", [](const Kernel& k) { return k.compiled->declared_tuple; })
      .def_prop_ro("declared_list", [](const Kernel& k) { return k.compiled->declared_list; })
      .def_prop_ro("returns_tuple", [](const Kernel& k) { return k.compiled->returns_tuple; })
      .def_prop_ro("returns_list", [](const Kernel& k) { return k.compiled->returns_list; })
      .def_prop_ro(
          "writes_param", [](const Kernel& k) { return k.compiled->writes_param; },
          "Per parameter: whether the kernel may write its elements.")
      .def_prop_ro("ir_text", [](const Kernel& k) { return k.compiled->ir_text; })
      .def_prop_ro("source", [](const Kernel& k) { return k.compiled->source; })
      .def_prop_ro("explain", [](const Kernel& k) { return k.compiled->explain; })
      .def_prop_ro("library_path", [](const Kernel& k) { return k.compiled->library_path; })
      .def_prop_ro("from_disk_cache", [](const Kernel& k) { return k.compiled->from_disk_cache; })
      .def_prop_ro("device_source", [](const Kernel& k) { return k.compiled->device_source; })
      .def_prop_ro("ptx", [](const Kernel& k) { return k.compiled->ptx; })
      .def_prop_ro("device_arch", [](const Kernel& k) { return k.compiled->device_arch; })
      .def("call_cuda", &call_cuda_on_values, "values"_a, "stream"_a,
           "Runs a CUDA kernel on the values of CudaCall.copied_values (a tuning run's timing; per parameter: "
           "(device pointer, shape, strides in elements) for arrays, else the scalar); the results are dropped.");

  define_dispatcher(m);
}
