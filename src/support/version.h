// The compiler's version, part of every cache key (disk cache, device code).
#pragma once

namespace plait {

// PLAIT_VERSION "+abi" PLAIT_ABI_VERSION: a kernel built by another version,
// or for another ABI between caller and kernel, is never reused.
const char* compiler_version();

}  // namespace plait
