// The compiler's public entry points: source + signature -> loaded kernel.
// Used by plaitc and by the Python extension; runs without Python.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/types.h"
#include "runtime/abi.h"
#include "support/diagnostics.h"

namespace plait {

enum class Target { CPU, CUDA };

// A name the kernel can see besides its parameters: a module alias
// (`np` -> "numpy", `math` -> "math", `plait` -> "plait") or a constant
// whose value is frozen at compile time, as Numba freezes global scalars.
struct GlobalValue {
  enum class Kind { Module, Int, Float, Bool } kind = Kind::Module;
  std::string module;  // for Module: "numpy", "math" or "plait"
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
};
using Globals = std::map<std::string, GlobalValue>;

// The launch configuration of the CUDA target's kernels (docs/cuda.md,
// "Launch configuration and autotuning"): compile-time choices of the code
// generator, which plait.jit(tune=..., autotune=True) searches.
struct CudaLaunchConfig {
  // Threads per block: 64, 128, 256, 512 or 1024.
  int threads = 256;
  // Groups of iterations per thread that team loops keep in registers
  // (worker_plan.h, row_cache_slots): 1, 2, 4 or 8.
  int row_groups = 4;
  // The largest team of threads per iteration of a team-mapped loop: a
  // power of two from 32 to `threads`; 0 means `threads`.
  int max_team = 0;
  int team_cap() const { return max_team > 0 ? max_team : threads; }
  // "threads 256, row groups 4, largest team 256", for remarks and the
  // generated sources (so the configuration is part of their cache keys).
  std::string to_string() const;
};

// "" when every knob has an allowed value, else what is wrong, naming the
// knob and its allowed values.
std::string launch_config_error(const CudaLaunchConfig& config);

// Whether indices not proven in range are checked when the user does not say
// (plait.jit, plaitc), on either target: their measured cost is within 3% of
// NPBench's geometric mean (BENCHMARKS.md, "Cost of bounds checks").
constexpr bool default_boundscheck = true;

struct CompileOptions {
  Target target = Target::CPU;
  // Target::CUDA only.
  CudaLaunchConfig cuda_launch;
  // Indices not proven in range are checked (transforms/insert_bounds_checks);
  // the drivers set it, by default to default_boundscheck.
  bool boundscheck = false;
  bool fastmath = false;
  // Adds `simd` to the innermost dimension of array statements whose
  // sliced-index pragma does not mention it (plait.jit(auto_simd=True)).
  bool auto_simd = false;
  // Where compiled libraries are kept; "" = the default user cache directory
  // ($PLAIT_CACHE_DIR, else $XDG_CACHE_HOME/plait, else ~/.cache/plait).
  std::string cache_dir;
  bool disk_cache = true;
  // When non-empty, the IR after each pass and the generated source are
  // written here (PLAIT_DUMP_DIR).
  std::string dump_dir;
  // The C++ compiler ($PLAIT_CXX, else $CXX, else "c++").
  std::string cxx;
};

// The result of the front end and the pass pipeline.
struct LoweredKernel {
  ir::Function function;
  std::string ir_text;  // after the last pass
};

// Parses `source`, finds the function `name`, types it for `signature` and
// runs the pass pipeline (driver/pipeline.cpp). Throws CompileError.
LoweredKernel lower_kernel(const SourceFile& source, const std::string& name, const Signature& signature,
                           const Globals& globals, const CompileOptions& options);

// Generates the target source for a lowered kernel: C++ for Target::CPU,
// the device part (CUDA C++) for Target::CUDA.
std::string generate_source(const ir::Function& function, const CompileOptions& options);

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
  std::string device_source;               // generated CUDA C++
  std::string ptx;
  std::string device_arch;                 // what NVRTC compiled for: "sm_90"
  std::vector<std::string> device_kernels; // kernel names, by launch index
  bool device_errors = false;              // device code may raise run-time errors
  std::vector<bool> device_kernel_raises;  // by launch index: that kernel may
  std::vector<std::string> device_assert_messages;  // codegen::CudaSources::assert_messages
  std::shared_ptr<jit::CudaModule> cuda_module;
};

// lower_kernel + generate_source + build (or find in the disk cache) + load.
// Throws CompileError for user errors and InternalError when the system
// compiler or the loader fails (the message quotes the command and its log).
std::shared_ptr<const CompiledKernel> compile_kernel(const SourceFile& source, const std::string& name,
                                                     const Signature& signature, const Globals& globals,
                                                     const CompileOptions& options);

// What kernel.explain() says about each loop (the passes' and the code
// generator's remarks, in source order), from code generation alone: nothing
// is built, so it works where the target cannot run (plaitc --emit remarks).
std::string remarks_report(LoweredKernel lowered, const CompileOptions& options);

// The compiler's version, part of every cache key.
const char* compiler_version();

}  // namespace plait
