// The runtime every generated C++ kernel begins with (the ABI, plait's
// helpers and the standard headers they include: about 1100 lines), parsed
// once per toolchain into a precompiled header instead of once per kernel
// build: a kernel then builds in about two thirds of the time (1.2 s to
// 0.75 s for spmv with g++ 12). The header and its .gch are an entry of the
// disk cache, keyed by the runtime's text and the toolchain, and checked
// against their checksum as kernel entries are.
#pragma once

#include <optional>
#include <string>

#include "jit/disk_cache.h"
#include "jit/toolchain.h"

namespace plait::jit {

// The directory of the precompiled runtime `runtime_text` for `toolchain`,
// built into `cache` when it is missing or damaged; none for a compiler
// that does not read g++'s .gch files (clang) or when the build fails, and
// kernels are then built from their whole text. Once per process per
// toolchain and text.
std::optional<std::string> precompiled_runtime(const DiskCache& cache, const Toolchain& toolchain,
                                               const std::string& runtime_text);

}  // namespace plait::jit
