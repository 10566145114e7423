// The on-disk cache of compiled kernels, shared by every process of a user.
//
// Layout: <dir>/<key[0:2]>/<key>/{kernel.cpp, kernel.so, kernel.sha256,
// build.log}. An entry appears atomically (a directory rename) and is used
// only when kernel.so matches the checksum recorded next to it. The
// precompiled runtime's entries (precompiled_runtime.h) have the same form:
// {plait_runtime.h, plait_runtime.h.gch, plait_runtime.sha256, build.log}.
//
// Besides kernels it holds small text records (the autotuner's choices,
// docs/cuda.md): <dir>/records/<key>, a header line, the SHA-256 of the
// text, then the text. A record appears atomically (a file rename) and is
// used only when its text matches its checksum.
#pragma once

#include <optional>
#include <string>

#include "jit/toolchain.h"
#include "support/compile_options.h"

namespace plait::jit {

// Writes `contents` to `path` (replacing the file); throws InternalError
// naming it when it cannot.
void write_file(const std::string& path, const std::string& contents);

// The cache directory for `options`: options.cache_dir, else
// $PLAIT_CACHE_DIR, else $XDG_CACHE_HOME/plait, else $HOME/.cache/plait.
std::string default_cache_directory(const CompileOptions& options);

// The key of a build: the SHA-256 (hex) of everything that determines the
// shared object: the Plait version, the generated source, the target and
// the toolchain (compiler, its version line, flags) and the host processor
// (model and feature flags, which -march=native depends on).
std::string cache_key(const std::string& plait_version, const std::string& source, Target target,
                      const Toolchain& toolchain);

class DiskCache {
 public:
  // Uses (creating it with mode 0700 when missing) the directory. Throws
  // InternalError naming it when it is not a directory owned by the current
  // user, or when group or others may write to it: the cache holds code this
  // process will load and run, so it must be private to its user.
  explicit DiskCache(std::string directory);

  const std::string& directory() const { return directory_; }
  // <dir>/<key[0:2]>/<key>
  std::string entry_path(const std::string& key) const;

  // The path of the entry's kernel.so when the entry exists and is intact.
  // A damaged entry (missing, truncated or altered kernel.so, missing or
  // wrong checksum) is removed and reported as a miss.
  std::optional<std::string> lookup(const std::string& key) const;

  // Builds `source` with `toolchain` in a private temporary directory, then
  // publishes it as the entry `key` with one rename and returns the path of
  // its kernel.so. When another process published the same key first, its
  // entry is used (after validation) and ours is discarded. On a build
  // failure the temporary directory is kept for inspection and the
  // InternalError names its build.log.
  std::string store(const std::string& key, const std::string& source, const Toolchain& toolchain) const;

  // The same for entries of other files (the precompiled runtime,
  // precompiled_runtime.h): lookup_file is lookup() for the entry's file
  // `name` (kernel.so for lookup()), checked against the checksum recorded
  // next to it (<name up to its first dot>.sha256); make_staging makes a
  // private temporary directory in the cache to build entry `key` in, and
  // publish records the checksum of its file `name` and publishes it as
  // entry `key` with one rename, returning the path of that file (in
  // another process's entry when it published the key first).
  std::optional<std::string> lookup_file(const std::string& key, const std::string& name) const;
  std::string make_staging(const std::string& key) const;
  std::string publish(const std::string& key, const std::string& staging, const std::string& name) const;

  // The text of the record `key` (64 hex digits) when it exists and is
  // intact. A damaged record (bad header, checksum or text) is removed and
  // reported as a miss.
  std::optional<std::string> lookup_record(const std::string& key) const;
  // Writes the record `key`, replacing an older one, with one rename.
  void store_record(const std::string& key, const std::string& text) const;

 private:
  std::string directory_;
};

// Builds `source` into `<directory>/kernel.so` (writing kernel.cpp and
// build.log next to it) and returns the path of the shared object. Used by
// the cache and, with a private temporary directory, when the cache is off.
// With the toolchain's precompiled runtime, the compiler reads
// kernel_pch.cpp: the source with the runtime's text at its start replaced
// by an include of the precompiled header.
std::string build_in_directory(const std::string& directory, const std::string& source, const Toolchain& toolchain);

}  // namespace plait::jit
