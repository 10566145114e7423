// The compiler's public entry points: front end, pass pipeline, code
// generation, build through the disk cache, loading, and the explain report.
#include "driver/compiler.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>

#include "analysis/written_params.h"
#include "codegen/cpu/codegen_cpp.h"
#include "codegen/cuda/codegen_cuda.h"
#include "codegen/runtime_text.h"
#include "driver/pipeline.h"
#include "frontend/inline_calls.h"
#include "frontend/lower_to_ir.h"
#include "frontend/parser.h"
#include "ir/ir_printer.h"
#include "jit/cuda_runtime.h"
#include "jit/disk_cache.h"
#include "jit/loader.h"
#include "jit/precompiled_runtime.h"
#include "jit/toolchain.h"

namespace plait {
namespace fs = std::filesystem;

namespace {

void ensure_dump_directory(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) PLAIT_INTERNAL_ERROR("cannot create the dump directory '" + dir + "': " + error.message());
}

// A pass name as a file name component.
std::string file_name_part(const std::string& text) {
  std::string part = text;
  for (char& c : part) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return part;
}

std::string two_digits(int n) {
  std::string digits = std::to_string(n);
  if (digits.size() < 2) digits.insert(digits.begin(), '0');
  return digits;
}

std::string results_text(const std::vector<ValueType>& results, bool returns_tuple, bool returns_list) {
  if (results.empty()) return returns_list ? "[]" : returns_tuple ? "()" : "None";
  std::string text;
  for (const ValueType& result : results) {
    if (!text.empty()) text += ", ";
    text += to_string(result);
  }
  if (returns_list) return "[" + text + "]";
  if (returns_tuple) return "(" + text + (results.size() == 1 ? ",)" : ")");
  return text;
}

// The remarks of the passes and the code generator, one line each in source
// order (the body of kernel.explain() and of plaitc --emit remarks).
std::string remark_lines(const ir::Function& function) {
  std::ostringstream out;
  std::vector<ir::Remark> remarks = function.remarks;
  std::stable_sort(remarks.begin(), remarks.end(), [](const ir::Remark& a, const ir::Remark& b) {
    return a.loc.line != b.loc.line ? a.loc.line < b.loc.line : a.loc.col < b.loc.col;
  });
  const SourceFile& source = function.source;
  if (remarks.empty()) out << "no remarks: every loop runs sequentially as written\n";
  for (const ir::Remark& remark : remarks) {
    out << fs::path(source.path_of(remark.loc.line)).filename().string();
    if (remark.loc.valid()) out << ":" << source.file_line(remark.loc.line);
    out << ": " << remark.message << "\n";
  }
  return out.str();
}

// kernel.explain(): the signature, where the library came from, then what
// each pass did, in source order.
std::string explain_report(const ir::Function& function, const Signature& signature, const CompiledKernel& kernel) {
  std::ostringstream out;
  out << "kernel " << function.name << "(" << signature.to_string() << ") -> "
      << results_text(function.results, function.returns_tuple, function.returns_list) << "\n";
  if (kernel.from_disk_cache) {
    out << "library: " << kernel.library_path << " (from the disk cache)\n";
  } else if (!kernel.library_path.empty()) {
    out << "library: " << kernel.library_path << " (built now)\n";
  } else {
    out << "library: built now (disk cache off)\n";
  }
  if (!kernel.device_arch.empty()) {
    out << "device code: " << kernel.device_kernels.size() << " CUDA kernel(s) for " << kernel.device_arch
        << "; arrays: CuPy and PyTorch CUDA arrays are used in place, NumPy arrays are copied to the GPU "
           "before the call and back after it\n";
  }
  out << remark_lines(function);
  return out.str();
}

// Loads the library and checks the ABI it was built for.
void load_library(CompiledKernel& kernel, const std::string& path) {
  kernel.library = LoadedLibrary::open(path);
  auto abi = reinterpret_cast<plait_abi_fn>(kernel.library->symbol(PLAIT_ABI_SYMBOL));
  if (!abi) PLAIT_INTERNAL_ERROR("'" + path + "' does not export " PLAIT_ABI_SYMBOL);
  int32_t version = abi();
  if (version != PLAIT_ABI_VERSION) {
    PLAIT_INTERNAL_ERROR("'" + path + "' was built for ABI version " + std::to_string(version) + ", expected " +
                         std::to_string(PLAIT_ABI_VERSION));
  }
  kernel.entry = reinterpret_cast<plait_entry_fn>(kernel.library->symbol(PLAIT_ENTRY_SYMBOL));
  if (!kernel.entry) PLAIT_INTERNAL_ERROR("'" + path + "' does not export " PLAIT_ENTRY_SYMBOL);
}

}  // namespace

LoweredKernel lower_kernel(const SourceFile& source, const std::string& name, const Signature& signature,
                           const Globals& globals, const CompileOptions& options) {
  InlinedKernel kernel = inline_calls(parse_function(source, name), source, globals);
  ir::Function function = lower_to_ir(kernel.definition, kernel.source, signature, kernel.globals, options);
  function.remarks.insert(function.remarks.begin(), kernel.remarks.begin(), kernel.remarks.end());

  // The dump: the IR after each step that changed it, and the list of the
  // steps with whether each changed the function.
  PassObserver observer;
  std::string steps;
  const std::string prefix = options.dump_dir + "/" + name + ".";
  if (!options.dump_dir.empty()) {
    ensure_dump_directory(options.dump_dir);
    observer = [&prefix, &steps, pass_number = 0](const std::string& pass, const ir::Function& after,
                                                  bool changed) mutable {
      steps += two_digits(pass_number) + " " + pass + (changed ? "" : " (unchanged)") + "\n";
      jit::write_file(prefix + "passes", steps);  // so far, also when a later pass fails
      if (changed)
        jit::write_file(prefix + two_digits(pass_number) + "." + file_name_part(pass) + ".ir", ir::to_string(after));
      ++pass_number;
    };
  }
  run_pipeline(function, options, observer);

  LoweredKernel lowered;
  lowered.ir_text = ir::to_string(function);
  lowered.function = std::move(function);
  return lowered;
}

std::string generate_source(const ir::Function& function, const CompileOptions& options) {
  switch (options.target) {
    case Target::CPU:
      return codegen::generate_cpp(function, options);
    case Target::CUDA:
      return codegen::generate_cuda(function, options).device;
  }
  PLAIT_INTERNAL_ERROR("unknown target");
}

std::string remarks_report(LoweredKernel lowered, const CompileOptions& options) {
  std::vector<ir::Remark> remarks;
  if (options.target == Target::CUDA) {
    remarks = codegen::generate_cuda(lowered.function, options).remarks;
  } else {
    codegen::generate_cpp(lowered.function, options, &remarks);
  }
  lowered.function.remarks.insert(lowered.function.remarks.end(), remarks.begin(), remarks.end());
  return remark_lines(lowered.function);
}

std::shared_ptr<const CompiledKernel> compile_kernel(const SourceFile& source, const std::string& name,
                                                     const Signature& signature, const Globals& globals,
                                                     const CompileOptions& options) {
  LoweredKernel lowered = lower_kernel(source, name, signature, globals, options);
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->name = name;
  kernel->signature = signature;
  kernel->results = lowered.function.results;
  kernel->returns_tuple = lowered.function.returns_tuple;
  kernel->returns_list = lowered.function.returns_list;
  kernel->declared_results = lowered.function.declared_results;
  kernel->declared_tuple = lowered.function.declared_tuple;
  kernel->declared_list = lowered.function.declared_list;
  kernel->writes_param = analysis::written_parameters(lowered.function);
  kernel->ir_text = lowered.ir_text;
  kernel->python_source = lowered.function.source;  // with the text of the functions it calls
  if (options.target == Target::CUDA) {
    // ---- CUDA target (begin): host C++ + device CUDA C++
    const std::string unavailable = jit::cuda_unavailable_reason();
    if (!unavailable.empty()) PLAIT_INTERNAL_ERROR("the CUDA target is not available here: " + unavailable);
    codegen::CudaSources cuda = codegen::generate_cuda(lowered.function, options);
    kernel->source = std::move(cuda.host);
    kernel->device_source = std::move(cuda.device);
    kernel->device_kernels = std::move(cuda.kernel_names);
    kernel->device_errors = cuda.device_errors;
    kernel->device_kernel_raises = std::move(cuda.kernel_raises);
    kernel->device_assert_messages = std::move(cuda.assert_messages);
    lowered.function.remarks.insert(lowered.function.remarks.end(), cuda.remarks.begin(), cuda.remarks.end());
    if (!options.dump_dir.empty()) jit::write_file(options.dump_dir + "/" + name + ".cu", kernel->device_source);
    // ---- CUDA target (end)
  } else {
    std::vector<ir::Remark> remarks;
    kernel->source = codegen::generate_cpp(lowered.function, options, &remarks);
    lowered.function.remarks.insert(lowered.function.remarks.end(), remarks.begin(), remarks.end());
  }
  if (!options.dump_dir.empty()) jit::write_file(options.dump_dir + "/" + name + ".cpp", kernel->source);

  jit::Toolchain toolchain = jit::host_toolchain(options);
  if (options.disk_cache) {
    jit::DiskCache cache(jit::default_cache_directory(options));
    std::string key = jit::cache_key(compiler_version(), kernel->source, options.target, toolchain);
    if (std::optional<std::string> hit = cache.lookup(key)) {
      kernel->library_path = *hit;
      kernel->from_disk_cache = true;
    } else {
      const std::string& runtime = codegen::host_runtime_text();
      if (std::optional<std::string> dir = jit::precompiled_runtime(cache, toolchain, runtime)) {
        toolchain.runtime_dir = *dir;
        toolchain.runtime_text = runtime;
      }
      kernel->library_path = cache.store(key, kernel->source, toolchain);
    }
    load_library(*kernel, kernel->library_path);
  } else {
    // A private directory, removed once the library is loaded (the mapping
    // outlives the file). On a build failure it stays, with its build.log.
    fs::path temporary_root = fs::temp_directory_path();
    std::string dir = (temporary_root / "plait-build-XXXXXX").string();
    if (!::mkdtemp(dir.data())) {
      PLAIT_INTERNAL_ERROR("cannot create a temporary build directory in '" + temporary_root.string() + "'");
    }
    std::string path = jit::build_in_directory(dir, kernel->source, toolchain);
    try {
      load_library(*kernel, path);
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
      throw;
    }
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  if (options.target == Target::CUDA) {
    jit::DeviceBuild device = jit::build_device_code(kernel->device_source, options);
    kernel->ptx = std::move(device.ptx);
    kernel->device_arch = device.arch;
    kernel->cuda_module = jit::load_cuda_module(device.cubin, kernel->ptx, kernel->device_kernels);
  }
  kernel->explain = explain_report(lowered.function, signature, *kernel);
  return kernel;
}

}  // namespace plait
