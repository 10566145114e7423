// The precompiled runtime (precompiled_runtime.h).
#include "jit/precompiled_runtime.h"

#include <filesystem>
#include <map>
#include <mutex>

namespace plait::jit {

namespace {

constexpr const char* kLogName = "build.log";

}  // namespace

std::optional<std::string> precompiled_runtime(const DiskCache& cache, const Toolchain& toolchain,
                                               const std::string& runtime_text) {
  // g++ finds `header.gch` next to an included `header` by itself; clang
  // reads only its own format, given on its command line.
  if (toolchain.version.find("clang") != std::string::npos) return std::nullopt;
  const std::string key = cache_key("plait-precompiled-runtime-v1", runtime_text, Target::CPU, toolchain);
  static std::mutex mutex;
  static std::map<std::string, std::optional<std::string>> known;  // cache directory + key -> directory
  std::lock_guard<std::mutex> lock(mutex);
  const std::string memo = cache.directory() + "\n" + key;
  if (auto found = known.find(memo); found != known.end()) return found->second;

  const std::string pch = std::string(kRuntimeHeaderName) + ".gch";
  std::optional<std::string> gch = cache.lookup_file(key, pch);
  if (!gch) {
    const std::string staging = cache.make_staging(key);
    write_file(staging + "/" + kRuntimeHeaderName, runtime_text);
    if (build_precompiled_header(toolchain, staging + "/" + kRuntimeHeaderName, staging + "/" + pch,
                                 staging + "/" + kLogName)) {
      gch = cache.publish(key, staging, pch);
    } else {
      // Kernels build from their whole text, so nobody reads the log: a
      // failing header would otherwise leave a directory per process.
      std::error_code ignored;
      std::filesystem::remove_all(staging, ignored);
    }
  }
  std::optional<std::string> dir;
  if (gch) dir = gch->substr(0, gch->size() - pch.size() - 1);
  known[memo] = dir;
  return dir;
}

}  // namespace plait::jit
