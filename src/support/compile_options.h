// What a compilation is asked for: the target, the options of plait.jit and
// plaitc, the CUDA launch configuration and the global names a kernel sees.
// Every stage reads them, so they sit at the bottom of the layers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "support/diagnostics.h"

namespace plait {

enum class Target { CPU, CUDA };

struct Callee;
using CalleeTable = std::map<std::string, Callee>;

// A name the kernel can see besides its parameters: a module alias
// (`np` -> "numpy", `math` -> "math", `plait` -> "plait"), a constant
// whose value is frozen at compile time, as Numba freezes global scalars, or
// a module-level function that calls inline (frontend/inline_calls.h).
struct GlobalValue {
  enum class Kind { Module, Int, Float, Bool, Function } kind = Kind::Module;
  std::string module;  // for Module: "numpy", "math" or "plait"; for Function: its key in `callees`
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  // Function, in the kernel's globals: the functions reachable from the
  // kernel (null in a callee's globals, which the table holds: no cycle).
  std::shared_ptr<const CalleeTable> callees = nullptr;
};
using Globals = std::map<std::string, GlobalValue>;

// A function a kernel may call: its source, the name of its `def` there and
// the names it sees (its own module's). Keys name functions uniquely (the
// drivers use the file, line and name of the `def`); a function whose
// source Python did not keep has an empty text, refused where it is called.
struct Callee {
  SourceFile source;
  std::string name;
  Globals globals;
};

// The launch configuration of the CUDA target's kernels (docs/cuda.md,
// "Launch configuration and autotuning"): compile-time choices of the code
// generator, which plait.jit(tune=..., autotune=True) searches.
struct CudaLaunchConfig {
  // Threads per block: 64, 128, 256, 512 or 1024.
  int threads = 256;
  // Groups of iterations per thread that team loops keep in registers
  // (transforms/gpu/worker_plan.h, row_cache_slots): 1, 2, 4 or 8.
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

// How the tensor-algebra level fuses a sparse operator program
// (tensor/fusion.h): redundancy-aware partial fusion, or for comparison
// everything in one nest (maximal) or one nest per operator (none).
enum class Fusion : uint8_t { Partial, Maximal, None };

struct CompileOptions {
  Target target = Target::CPU;
  // Target::CUDA only.
  CudaLaunchConfig cuda_launch;
  // Indices not proven in range are checked (transforms/insert_bounds_checks);
  // the drivers set it, by default to default_boundscheck.
  bool boundscheck = false;
  bool fastmath = false;
  Fusion fusion = Fusion::Partial;
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
  // The IR's invariants are checked after the front end and after every pass
  // (analysis/verify_ir.h): set by the tests, PLAIT_VERIFY_IR=1 and plaitc
  // --verify-ir. Never changes what is generated.
  bool verify_ir = false;
  // Optional passes not to run (plait.jit(disable_passes=...), plaitc
  // --disable-pass), to measure what each contributes: the pipeline files
  // mark which passes are optional (PassRunner::optional); naming any other
  // is an error.
  std::set<std::string> disabled_passes;
  // The C++ compiler ($PLAIT_CXX, else $CXX, else "c++").
  std::string cxx;
};

// Whether PLAIT_VERIFY_IR asks the drivers for CompileOptions::verify_ir
// (set, and neither "" nor "0").
bool verify_ir_from_environment();

}  // namespace plait
