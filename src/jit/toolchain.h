// The system C++ compiler used to build generated kernels.
#pragma once

#include <string>
#include <vector>

#include "support/compile_options.h"

namespace plait::jit {

struct Toolchain {
  std::string cxx;                 // program to run (resolved through PATH by the spawn)
  std::vector<std::string> flags;  // e.g. -O3 -march=native -fopenmp -shared -fPIC -std=c++20
  std::string version;             // first line of `cxx --version`, part of the cache key
  std::vector<std::string> libraries;  // link arguments after the source (e.g. -lmvec)
  // A precompiled runtime (precompiled_runtime.h): the directory of
  // plait_runtime.h and its .gch, and the text the header holds, which
  // every kernel's source begins with; both empty when there is none. Not
  // part of the cache key: a kernel built either way is the same code.
  std::string runtime_dir;
  std::string runtime_text;
};

// The header a precompiled runtime's directory holds.
inline constexpr const char* kRuntimeHeaderName = "plait_runtime.h";

// The compiler ($PLAIT_CXX, else $CXX, else "c++", unless options.cxx is set)
// and the flags for a kernel build: -O3 with the host's native ISA, OpenMP,
// position-independent shared object; -ffast-math when options.fastmath;
// glibc's vector math library where plait_runtime.h declares its functions;
// -fsanitize=... when $PLAIT_SANITIZE is set ("1": address,undefined); for
// clang (its `--version` line says so), -Wno-pass-failed.
Toolchain host_toolchain(const CompileOptions& options);

// Compiles the C++ file `source_path` into the shared object `output_path`,
// writing the compiler's output to `log_path`. The compiler runs from an
// argument list (posix_spawn), never through a shell. Throws InternalError
// quoting the command and the log path when it fails.
void build_shared_library(const Toolchain& toolchain, const std::string& source_path,
                          const std::string& output_path, const std::string& log_path);

// Precompiles the header `header_path` into `output_path` (g++'s .gch) with
// the toolchain's flags, the compiler's output going to `log_path`. Returns
// whether it succeeded; a failure throws nothing (the kernels are then built
// from the whole text).
bool build_precompiled_header(const Toolchain& toolchain, const std::string& header_path,
                              const std::string& output_path, const std::string& log_path);

}  // namespace plait::jit
