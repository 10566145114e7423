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
};

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

}  // namespace plait::jit
