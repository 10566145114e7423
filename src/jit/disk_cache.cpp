// The on-disk kernel cache: directory checks, keys, lookup with checksum
// validation, and atomic publication of new entries.
#include "jit/disk_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "jit/sha256.h"
#include "support/diagnostics.h"

namespace plait::jit {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLibraryName = "kernel.so";
constexpr const char* kSourceName = "kernel.cpp";
constexpr const char* kLogName = "build.log";
constexpr const char* kPrecompiledSourceName = "kernel_pch.cpp";
constexpr const char* kRecordDirectory = "records";
constexpr const char* kRecordHeader = "plait-record-v1\n";

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// Creates `path` with mode 0700 unless it exists, then checks that it is a
// private directory of the current user.
void ensure_private_directory(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    PLAIT_INTERNAL_ERROR("cannot create the cache directory '" + path + "': " + std::strerror(errno));
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    PLAIT_INTERNAL_ERROR("cannot inspect the cache directory '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISDIR(info.st_mode)) PLAIT_INTERNAL_ERROR("the cache directory '" + path + "' is not a directory");
  if (info.st_uid != ::geteuid()) {
    PLAIT_INTERNAL_ERROR("refusing to use the cache directory '" + path +
                         "': it is owned by another user (set PLAIT_CACHE_DIR to a private directory)");
  }
  if (info.st_mode & (S_IWGRP | S_IWOTH)) {
    PLAIT_INTERNAL_ERROR("refusing to use the cache directory '" + path +
                         "': it is writable by group or others (chmod 700 it, or set PLAIT_CACHE_DIR)");
  }
}

// The contents of a regular file; "" when it is missing, unreadable or
// something else (a directory under the file's name reads as an error that
// libstdc++ throws from the stream buffer).
std::string read_small_file(const std::string& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return {};
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    return std::string(std::istreambuf_iterator<char>(in), {});
  } catch (const std::exception&) {
    return {};
  }
}

// A new, empty, mode-0700 directory under `parent` named <prefix>XXXXXX.
std::string make_temporary_directory(const std::string& parent, const std::string& prefix) {
  std::string path = parent + "/" + prefix + "XXXXXX";
  if (!::mkdtemp(path.data())) {
    PLAIT_INTERNAL_ERROR("cannot create a temporary directory in '" + parent + "': " + std::strerror(errno));
  }
  return path;
}

// Removes a file or a tree. A directory without write or search
// permission for its owner (a damaged entry) is made removable first.
void remove_quietly(const std::string& path) {
  std::error_code error;
  fs::remove_all(path, error);
  if (!error) return;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    std::error_code ignored;
    if (it->is_directory(ignored)) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
  }
  std::error_code ignored;
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ignored);
  fs::remove_all(path, ignored);
  // A directory the loop could not enter is now searchable: one more pass.
  fs::remove_all(path, ignored);
}

// Makes `path` a directory this user can use: creates it (mode 0700), or
// replaces whatever else stands under its name (a file, a link), and gives
// its owner back read, write and search permission.
void ensure_usable_directory(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) remove_quietly(path);
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    PLAIT_INTERNAL_ERROR("cannot create '" + path + "': " + std::strerror(errno));
  }
  if (::lstat(path.c_str(), &info) == 0 && (info.st_mode & S_IRWXU) != S_IRWXU) {
    ::chmod(path.c_str(), (info.st_mode & 07777) | S_IRWXU);
  }
}

// The file next to an entry's file `name` that records its checksum:
// kernel.so's is kernel.sha256.
std::string checksum_name(const std::string& name) {
  return name.substr(0, name.find('.')) + ".sha256";
}

// Whether the entry directory holds its file `name` matching its checksum.
bool entry_is_intact(const std::string& entry, const std::string& name) {
  std::string file = entry + "/" + name;
  std::string recorded = read_small_file(entry + "/" + checksum_name(name));
  if (recorded.size() < 64) return false;
  recorded.resize(64);
  std::error_code error;
  if (!fs::is_regular_file(file, error)) return false;
  try {
    return sha256_file_hex(file) == recorded;
  } catch (const std::exception&) {
    return false;
  }
}

// What -march=native resolves to depends on the processor, so a cache shared
// between machines (a network home directory) must not hand one machine's
// code to another: the processor's model and feature flags join the key.
const std::string& host_cpu_identity() {
  static const std::string identity = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, features;
    while (std::getline(in, line) && (model.empty() || features.empty())) {
      auto starts = [&line](const char* prefix) { return line.rfind(prefix, 0) == 0; };
      if (model.empty() && (starts("model name") || starts("CPU part"))) model = line;
      if (features.empty() && (starts("flags") || starts("Features"))) features = line;
    }
    return model + "\n" + features;
  }();
  return identity;
}

}  // namespace

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) PLAIT_INTERNAL_ERROR("cannot write '" + path + "'");
}

std::string default_cache_directory(const CompileOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  std::string dir = env_or_empty("PLAIT_CACHE_DIR");
  if (!dir.empty()) return dir;
  dir = env_or_empty("XDG_CACHE_HOME");
  if (!dir.empty()) return dir + "/plait";
  dir = env_or_empty("HOME");
  if (!dir.empty()) return dir + "/.cache/plait";
  PLAIT_INTERNAL_ERROR("no cache directory: set PLAIT_CACHE_DIR (or HOME)");
}

std::string cache_key(const std::string& plait_version, const std::string& source, Target target,
                      const Toolchain& toolchain) {
  // Each part is length-prefixed so that no two different inputs hash the
  // same byte stream.
  Sha256 hasher;
  auto add = [&hasher](const std::string& part) {
    std::string length = std::to_string(part.size()) + ":";
    hasher.update(length);
    hasher.update(part);
  };
  add("plait-kernel-cache-v1");
  add(plait_version);
  add(target == Target::CPU ? "cpu" : "cuda");
  add(toolchain.cxx);
  add(toolchain.version);
  add(std::to_string(toolchain.flags.size()));
  for (const std::string& flag : toolchain.flags) add(flag);
  add(std::to_string(toolchain.libraries.size()));
  for (const std::string& library : toolchain.libraries) add(library);
  add(host_cpu_identity());
  add(source);
  return hasher.hex_digest();
}

std::string build_in_directory(const std::string& directory, const std::string& source, const Toolchain& toolchain) {
  std::string source_path = directory + "/" + kSourceName;
  std::string library_path = directory + "/" + kLibraryName;
  write_file(source_path, source);
  // With a precompiled runtime, the compiler gets the source with the
  // runtime's text replaced by an include of the header it stands for;
  // kernel.cpp keeps the whole text.
  std::string compiled = source_path;
  const std::string& runtime = toolchain.runtime_text;
  if (!toolchain.runtime_dir.empty() && source.compare(0, runtime.size(), runtime) == 0) {
    compiled = directory + "/" + kPrecompiledSourceName;
    write_file(compiled, "#include \"" + std::string(kRuntimeHeaderName) + "\"\n" + source.substr(runtime.size()));
  }
  build_shared_library(toolchain, compiled, library_path, directory + "/" + kLogName);
  return library_path;
}

DiskCache::DiskCache(std::string directory) : directory_(std::move(directory)) {
  while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
  if (directory_.empty()) PLAIT_INTERNAL_ERROR("the cache directory is empty");
  fs::path parent = fs::path(directory_).parent_path();
  if (!parent.empty()) {
    std::error_code error;
    fs::create_directories(parent, error);
    if (error) {
      PLAIT_INTERNAL_ERROR("cannot create '" + parent.string() + "' for the cache directory: " + error.message());
    }
  }
  ensure_private_directory(directory_);
}

std::string DiskCache::entry_path(const std::string& key) const {
  PLAIT_ASSERT(key.size() == 64);
  return directory_ + "/" + key.substr(0, 2) + "/" + key;
}

std::optional<std::string> DiskCache::lookup(const std::string& key) const {
  return lookup_file(key, kLibraryName);
}

std::optional<std::string> DiskCache::lookup_file(const std::string& key, const std::string& name) const {
  std::string entry = entry_path(key);
  struct stat info {};
  // Nothing there, or a shard directory that is not one (store() repairs it).
  if (::lstat(entry.c_str(), &info) != 0) return std::nullopt;
  if (S_ISDIR(info.st_mode) && entry_is_intact(entry, name)) return entry + "/" + name;
  // Move the damaged entry aside before deleting it, so that a concurrent
  // store() never sees a half-deleted directory under the entry's name
  // (rename replaces the empty directory made for it).
  if (!S_ISDIR(info.st_mode)) {
    // A file or link under the entry's name: rename() cannot put it over a
    // directory, and removing it is one step anyway.
    ::unlink(entry.c_str());
    return std::nullopt;
  }
  std::string trash = make_temporary_directory(directory_, "trash-");
  if (::rename(entry.c_str(), trash.c_str()) != 0 && errno == EACCES) {
    // Moving a directory rewrites its '..', which needs write permission on it.
    ::chmod(entry.c_str(), (info.st_mode & 07777) | S_IRWXU);
    ::rename(entry.c_str(), trash.c_str());
  }
  // When the rename fails otherwise, another process removed or replaced it first.
  remove_quietly(trash);
  return std::nullopt;
}

std::string DiskCache::store(const std::string& key, const std::string& source, const Toolchain& toolchain) const {
  std::string staging = make_staging(key);
  build_in_directory(staging, source, toolchain);
  return publish(key, staging, kLibraryName);
}

std::string DiskCache::make_staging(const std::string& key) const {
  return make_temporary_directory(directory_, "build-" + key.substr(0, 12) + "-");
}

std::string DiskCache::publish(const std::string& key, const std::string& staging, const std::string& name) const {
  std::string entry = entry_path(key);
  ensure_usable_directory(directory_ + "/" + key.substr(0, 2));
  write_file(staging + "/" + checksum_name(name), sha256_file_hex(staging + "/" + name) + "\n");

  // rename() of a directory fails with EEXIST or ENOTEMPTY when the target
  // exists: another process published the key first (ENOTDIR: a file took
  // the entry's name). Use its entry if it is intact; otherwise lookup()
  // removes it and we try again.
  constexpr int kAttempts = 3;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (::rename(staging.c_str(), entry.c_str()) == 0) return entry + "/" + name;
    int error = errno;
    if (error != EEXIST && error != ENOTEMPTY && error != ENOTDIR) {
      remove_quietly(staging);
      PLAIT_INTERNAL_ERROR("cannot publish '" + entry + "': " + std::strerror(error));
    }
    if (std::optional<std::string> theirs = lookup_file(key, name)) {
      remove_quietly(staging);
      return *theirs;
    }
  }
  remove_quietly(staging);
  PLAIT_INTERNAL_ERROR("cannot publish '" + entry + "': it keeps being replaced by a damaged entry");
}

namespace {

bool is_record_key(const std::string& key) {
  return key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::optional<std::string> DiskCache::lookup_record(const std::string& key) const {
  if (!is_record_key(key)) PLAIT_INTERNAL_ERROR("a record key must be 64 lowercase hex digits, not '" + key + "'");
  const std::string path = directory_ + "/" + kRecordDirectory + "/" + key;
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return std::nullopt;
  const std::string contents = S_ISREG(info.st_mode) ? read_small_file(path) : std::string();
  const std::string header = kRecordHeader;
  // header, 64 hex digits and a newline, then the text
  const size_t text_at = header.size() + 65;
  if (contents.size() >= text_at && contents.compare(0, header.size(), header) == 0 &&
      contents[text_at - 1] == '\n') {
    std::string text = contents.substr(text_at);
    if (sha256_hex(text) == contents.substr(header.size(), 64)) return text;
  }
  // A damaged record: a new tuning run replaces it.
  remove_quietly(path);
  return std::nullopt;
}

void DiskCache::store_record(const std::string& key, const std::string& text) const {
  if (!is_record_key(key)) PLAIT_INTERNAL_ERROR("a record key must be 64 lowercase hex digits, not '" + key + "'");
  const std::string records = directory_ + "/" + kRecordDirectory;
  ensure_usable_directory(records);
  std::string staging = records + "/.new-" + key.substr(0, 12) + "-XXXXXX";
  const int fd = ::mkstemp(staging.data());
  if (fd < 0) PLAIT_INTERNAL_ERROR("cannot create a file in '" + records + "': " + std::strerror(errno));
  ::close(fd);
  try {
    write_file(staging, kRecordHeader + sha256_hex(text) + "\n" + text);
  } catch (...) {
    remove_quietly(staging);
    throw;
  }
  const std::string path = records + "/" + key;
  // rename() cannot replace a directory with a file.
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) remove_quietly(path);
  if (::rename(staging.c_str(), path.c_str()) != 0) {
    const int error = errno;
    remove_quietly(staging);
    PLAIT_INTERNAL_ERROR("cannot publish '" + path + "': " + std::strerror(error));
  }
}

}  // namespace plait::jit
