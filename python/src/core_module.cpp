// The extension module plait._core: compiles kernels through the C++ core and
// calls them. The per-call path runs in C++ (dispatcher.h, cpu_call.cpp),
// because it decides the call overhead of every cached kernel.
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
#include "ir/types.h"
#include "jit/cuda_runtime.h"
#include "jit/host_memory.h"
#include "runtime/abi.h"

#include "argument_types.h"
#include "compile_bindings.h"
#include "cuda_bindings.h"
#include "dispatcher.h"
#include "kernel_object.h"
#include "module_errors.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace plait::python;

namespace {

// The CUDA target: a call of a CUDA kernel on arguments plait/cuda.py
// classified (device pointers, shapes, strides and scalars).
nb::object call_cuda(const Kernel& kernel, nb::list args, uintptr_t stream) {
  const plait::CompiledKernel& compiled = *kernel.compiled;
  const size_t nargs = compiled.signature.args.size();
  if (args.size() != nargs) throw nb::value_error("call_cuda: wrong number of arguments");
  std::vector<ArgSlot> slots(nargs);
  std::vector<void*> pointers(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const plait::ValueType& type = compiled.signature.args[i];
    ArgSlot& slot = slots[i];
    pointers[i] = &slot;
    if (type.is_array()) {
      nb::tuple view = nb::cast<nb::tuple>(args[i]);
      nb::tuple shape = nb::cast<nb::tuple>(view[1]);
      nb::tuple strides = nb::cast<nb::tuple>(view[2]);
      std::memset(&slot.array, 0, sizeof slot.array);
      slot.array.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(view[0]));
      for (int k = 0; k < type.array.ndim; ++k) {
        slot.array.shape[k] = nb::cast<int64_t>(shape[static_cast<size_t>(k)]);
        slot.array.strides[k] = nb::cast<int64_t>(strides[static_cast<size_t>(k)]);
      }
    } else if (type.scalar.is_bool()) {
      slot.b = nb::cast<bool>(args[i]) ? 1 : 0;
    } else if (type.scalar.is_int()) {
      slot.i64 = nb::cast<int64_t>(args[i]);
    } else {
      slot.f64 = nb::cast<double>(args[i]);
    }
  }
  const size_t nresults = compiled.results.size();
  std::vector<plait_result> results(nresults > 0 ? nresults : 1);
  std::memset(results.data(), 0, sizeof(plait_result) * results.size());
  plait_context ctx;
  std::memset(&ctx, 0, sizeof ctx);
  ctx.num_threads = 1;
  ctx.parallel_work_threshold = parallel_work_threshold();
  ctx.interrupt = &g_interrupt;
  g_interrupt = 0;  // and Python's pending signals handled, as for the CPU
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
  int32_t status = PLAIT_OK;
  try {
    nb::gil_scoped_release release;
    status = plait::jit::call_cuda_kernel(compiled, pointers.data(), results.data(), &ctx, stream);
  } catch (const std::exception& e) {
    release_results(results.data(), nresults);
    rethrow_as_python(e);
  }
  if (status != PLAIT_OK) {
    release_results(results.data(), nresults);
    set_kernel_error(status, ctx, compiled.python_source);
    throw nb::python_error();
  }
  nb::list out;
  for (size_t i = 0; i < nresults; ++i) {
    const plait::ValueType& type = compiled.results[i];
    plait_result& r = results[i];
    if (!type.is_array()) {
      PyObject* value = scalar_result(r, type.scalar);
      if (value == nullptr) {
        release_results(results.data() + i, nresults - i);
        throw nb::python_error();
      }
      out.append(nb::steal(value));
      continue;
    }
    nb::list shape, strides;
    size_t count = 1;
    for (int k = 0; k < type.array.ndim; ++k) {
      shape.append(r.array.shape[k]);
      strides.append(r.array.strides[k]);
      count *= static_cast<size_t>(r.array.shape[k]);
    }
    nb::object owner = nb::none();
    if (r.owner != nullptr) {
      auto buffer = std::make_unique<DeviceBuffer>();
      buffer->pointer = reinterpret_cast<uintptr_t>(r.array.data);
      buffer->nbytes = count * static_cast<size_t>(item_size(static_cast<int>(type.array.dtype)));
      buffer->owner = r.owner;
      buffer->release = r.release;
      buffer->kernel = kernel.compiled;
      r.owner = nullptr;
      owner = nb::cast(std::move(buffer));
    }
    out.append(nb::make_tuple(reinterpret_cast<uintptr_t>(r.array.data), nb::tuple(shape), nb::tuple(strides),
                              static_cast<int>(type.array.dtype), owner));
  }
  return nb::tuple(out);
}

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
  // Whether plait.jit checks indices unless told.
  m.attr("default_boundscheck") = plait::default_boundscheck;
  // The element types kernels take, by their dtype code (runtime/abi.h):
  // (NumPy's name, the signature's spelling), so that the Python package
  // keeps no table of its own.
  nb::list element_types;
  for (int code = PLAIT_BOOL; code <= PLAIT_FLOAT64; ++code) {
    PyArray_Descr* descr = PyArray_DescrFromType(numpy_type(code));
    if (descr == nullptr) throw nb::python_error();
    nb::object dtype = nb::steal(reinterpret_cast<PyObject*>(descr));
    element_types.append(nb::make_tuple(dtype.attr("name"),
                                        plait::to_string(plait::ScalarType{static_cast<plait::ScalarKind>(code), false})));
  }
  m.attr("element_types") = nb::tuple(element_types);
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
  m.def("compile", &compile, "path"_a, "text"_a, "first_line"_a, "name"_a, "signature"_a, "modules"_a,
        "constants"_a, "boundscheck"_a, "fastmath"_a, "disk_cache"_a, "cache_dir"_a, "dump_dir"_a, "cxx"_a,
        "target"_a = "cpu", "auto_simd"_a = false, "cuda_threads"_a = plait::CudaLaunchConfig{}.threads,
        "cuda_row_groups"_a = plait::CudaLaunchConfig{}.row_groups, "cuda_max_team"_a = 0,
        "Compiles one specialisation of a kernel and returns a Kernel.");
  m.def("lookup_record", &lookup_record, "key"_a, "cache_dir"_a,
        "The text of the disk cache's record `key` (64 hex digits), or None when it is missing or damaged "
        "(a damaged one is removed). cache_dir '' is the default cache directory.");
  m.def("store_record", &store_record, "key"_a, "text"_a, "cache_dir"_a,
        "Writes the disk cache's record `key` (64 hex digits), replacing an older one.");
  define_cuda_bindings(m);

  nb::class_<Kernel>(m, "Kernel")
      .def_prop_ro("name", [](const Kernel& k) { return k.compiled->name; })
      .def_prop_ro("signature", [](const Kernel& k) { return k.compiled->signature.to_string(); })
      .def_prop_ro("results",
                   [](const Kernel& k) {
                     std::vector<std::string> names;
                     for (const auto& t : k.compiled->results) names.push_back(plait::to_string(t));
                     return names;
                   })
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
      .def("call_cuda", &call_cuda, "args"_a, "stream"_a,
           "Runs a CUDA kernel. args: per parameter, (device pointer, shape, strides in elements) for arrays, "
           "else the scalar; returns the results with arrays as (pointer, shape, strides, dtype code, DeviceBuffer or "
           "None).");

  define_dispatcher(m);
}
