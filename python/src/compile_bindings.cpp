// Compiling kernels and the disk cache's records for plait._core
// (compile_bindings.h).
#include "compile_bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/pipeline.h"
#include "jit/disk_cache.h"
#include "module_errors.h"
#include "support/compiler_stack.h"

namespace nb = nanobind;

namespace plait::python {

namespace {

// ---------------------------------------------------------------------------
// Compiled kernels as Python objects (for inspection; calls go through
// Dispatcher).

// modules: name -> "numpy" | "math" | "plait" | "plait.prange";
// constants: name -> bool | int | float; functions: name -> key in
// `callees` (null in a callee's own globals: the table holds them).
plait::Globals to_globals(const nb::dict& modules, const nb::dict& constants, const nb::dict& functions,
                          const std::shared_ptr<const plait::CalleeTable>& callees) {
  plait::Globals globals;
  for (auto [name, key] : functions) {
    plait::GlobalValue value;
    value.kind = plait::GlobalValue::Kind::Function;
    value.module = nb::cast<std::string>(key);
    value.callees = callees;
    globals[nb::cast<std::string>(name)] = value;
  }
  for (auto [name, module] : modules) {
    plait::GlobalValue value;
    value.kind = plait::GlobalValue::Kind::Module;
    value.module = nb::cast<std::string>(module);
    globals[nb::cast<std::string>(name)] = value;
  }
  for (auto [name, constant] : constants) {
    plait::GlobalValue value;
    if (PyBool_Check(constant.ptr())) {
      value.kind = plait::GlobalValue::Kind::Bool;
      value.bool_value = constant.ptr() == Py_True;
    } else if (PyLong_Check(constant.ptr())) {
      value.kind = plait::GlobalValue::Kind::Int;
      value.int_value = nb::cast<int64_t>(constant);
    } else {
      value.kind = plait::GlobalValue::Kind::Float;
      value.float_value = nb::cast<double>(constant);
    }
    globals[nb::cast<std::string>(name)] = value;
  }
  return globals;
}

// callees: key -> (path, text, first_line, name, modules, constants,
// functions), as plait/dispatcher.py's collect_globals gives them.
std::shared_ptr<const plait::CalleeTable> to_callees(const nb::dict& callees) {
  auto table = std::make_shared<plait::CalleeTable>();
  for (auto [key, entry] : callees) {
    auto [path, text, first_line, name, modules, constants, functions] =
        nb::cast<std::tuple<std::string, std::string, int, std::string, nb::dict, nb::dict, nb::dict>>(entry);
    (*table)[nb::cast<std::string>(key)] = plait::Callee{plait::SourceFile{path, text, first_line}, name,
                                                         to_globals(modules, constants, functions, nullptr)};
  }
  return table;
}

// Compiles (or finds in the disk cache) one specialisation. The GIL is
// released while the system compiler runs so that other threads go on.
}  // namespace

// PLAIT_PARALLEL_THRESHOLD, read once: the work (trip count x IR nodes) at
// which a parallel loop starts its threads.

int64_t parallel_work_threshold() {
  static const int64_t value = [] {
    const char* text = std::getenv("PLAIT_PARALLEL_THRESHOLD");
    if (!text || !*text) return static_cast<int64_t>(PLAIT_DEFAULT_PARALLEL_WORK);
    char* end = nullptr;
    long long v = std::strtoll(text, &end, 10);
    return (end && *end == '\0' && v >= 0) ? static_cast<int64_t>(v)
                                           : static_cast<int64_t>(PLAIT_DEFAULT_PARALLEL_WORK);
  }();
  return value;
}

Kernel compile(const std::string& path, const std::string& text, int first_line, const std::string& name,
               const std::string& signature_text, nb::dict modules, nb::dict constants, bool boundscheck, bool fastmath,
               bool disk_cache, const std::string& cache_dir, const std::string& dump_dir, const std::string& cxx,
               const std::string& target, bool auto_simd, int cuda_threads, int cuda_row_groups, int cuda_max_team,
               const std::string& fusion, nb::dict functions, nb::dict callees,
               const std::vector<std::string>& disabled_passes) {
  plait::Signature signature;
  try {
    signature = plait::Signature::parse(signature_text);
  } catch (const std::invalid_argument& e) {
    throw nb::value_error(e.what());
  }
  plait::SourceFile source{path, text, first_line};
  plait::Globals globals = to_globals(modules, constants, functions, to_callees(callees));
  plait::CompileOptions options;
  options.boundscheck = boundscheck;
  options.fastmath = fastmath;
  options.disk_cache = disk_cache;
  options.cache_dir = cache_dir;
  options.dump_dir = dump_dir;
  options.verify_ir = plait::verify_ir_from_environment();
  options.cxx = cxx;
  options.auto_simd = auto_simd;
  if (fusion == "maximal") {
    options.fusion = plait::Fusion::Maximal;
  } else if (fusion == "none") {
    options.fusion = plait::Fusion::None;
  } else if (fusion != "partial") {
    throw nb::value_error(("fusion must be 'partial', 'maximal' or 'none', not '" + fusion + "'").c_str());
  }
  options.cuda_launch.threads = cuda_threads;
  options.cuda_launch.row_groups = cuda_row_groups;
  options.cuda_launch.max_team = cuda_max_team;
  const std::string launch_error = plait::launch_config_error(options.cuda_launch);
  if (!launch_error.empty()) throw nb::value_error(launch_error.c_str());
  if (target == "cuda") {
    options.target = plait::Target::CUDA;
  } else if (target != "cpu") {
    throw nb::value_error(("unknown target '" + target + "'").c_str());
  }
  options.disabled_passes.insert(disabled_passes.begin(), disabled_passes.end());
  const std::string disabled_error = plait::disabled_passes_error(options);
  if (!disabled_error.empty()) throw nb::value_error(disabled_error.c_str());

  // Exceptions are caught with the GIL released and raised once it is back.
  KernelPtr compiled;
  std::unique_ptr<plait::CompileError> compile_error;
  std::string internal_error;
  bool failed_internally = false;
  {
    nb::gil_scoped_release release;
    try {
      // On the compiler's own thread, so that the caller's stack (a Python
      // thread's may be small) does not bound how deep a kernel may nest.
      plait::run_on_compiler_stack(
          [&] { compiled = plait::compile_kernel(source, name, signature, globals, options); });
    } catch (const plait::CompileError& e) {
      compile_error = std::make_unique<plait::CompileError>(e);
    } catch (const std::exception& e) {
      internal_error = e.what();
      failed_internally = true;
    }
  }
  if (compile_error) raise_compile_error(*compile_error);
  if (failed_internally) raise_internal_error(internal_error.c_str());
  return Kernel{std::move(compiled)};
}

// Records of the disk cache (the autotuner's choices, plait/cuda.py), in the
// directory the kernels of `cache_dir` use. InternalErrors (a cache
// directory that is not private) are raised as InternalCompilerError.
nb::object lookup_record(const std::string& key, const std::string& cache_dir) {
  plait::CompileOptions options;
  options.cache_dir = cache_dir;
  std::optional<std::string> text;
  try {
    text = plait::jit::DiskCache(plait::jit::default_cache_directory(options)).lookup_record(key);
  } catch (const std::exception& e) {
    raise_internal_error(e.what());
  }
  if (!text) return nb::none();
  return nb::str(text->data(), text->size());
}

void store_record(const std::string& key, const std::string& text, const std::string& cache_dir) {
  plait::CompileOptions options;
  options.cache_dir = cache_dir;
  try {
    plait::jit::DiskCache(plait::jit::default_cache_directory(options)).store_record(key, text);
  } catch (const std::exception& e) {
    raise_internal_error(e.what());
  }
}

}  // namespace plait::python
