// The JIT toolchain, the loader and the disk cache, with small hand-written
// kernels built by the real system compiler.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "jit/disk_cache.h"
#include "jit/loader.h"
#include "jit/precompiled_runtime.h"
#include "jit/sha256.h"
#include "jit/toolchain.h"
#include "runtime/abi.h"
#include "support/diagnostics.h"

namespace plait::jit {
namespace {
namespace fs = std::filesystem;

// A kernel exporting the ABI symbols whose entry returns `value`.
std::string kernel_source(int value) {
  return "#include <stdint.h>\n"
         "extern \"C\" int32_t plait_kernel_abi_version(void) { return " + std::to_string(PLAIT_ABI_VERSION) + "; }\n"
         "extern \"C\" int32_t plait_kernel_entry(void**, void*, void*) { return " +
         std::to_string(value) + "; }\n";
}

// What the entry of the library at `path` returns.
int32_t call_entry(const std::string& path) {
  auto library = LoadedLibrary::open(path);
  auto entry = reinterpret_cast<plait_entry_fn>(library->symbol(PLAIT_ENTRY_SYMBOL));
  if (!entry) return -1;
  return entry(nullptr, nullptr, nullptr);
}

class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "plait-jit-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(root_, fs::perms::owner_all, ignored);
    fs::remove_all(root_, ignored);
  }
  std::string root_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

int count_entries_with_prefix(const std::string& dir, const std::string& prefix) {
  int count = 0;
  for (const auto& item : fs::directory_iterator(dir)) {
    if (item.path().filename().string().rfind(prefix, 0) == 0) ++count;
  }
  return count;
}

// --- toolchain ---------------------------------------------------------------

TEST(Toolchain, FlagsAndVersion) {
  CompileOptions options;
  options.cxx = "g++";
  Toolchain plain = host_toolchain(options);
  EXPECT_EQ(plain.cxx, "g++");
  std::vector<std::string> expected = {"-O3",    "-march=native", "-fopenmp",          "-fwrapv",
                                       "-std=c++20", "-shared",   "-fPIC", "-ffp-contract=off", "-fno-math-errno"};
  EXPECT_EQ(plain.flags, expected);
#if defined(__x86_64__) && defined(__GLIBC__)
  EXPECT_EQ(plain.libraries, (std::vector<std::string>{"-Wl,--as-needed", "-lmvec"}));
#endif
  EXPECT_NE(plain.version.find("g++"), std::string::npos) << plain.version;
  EXPECT_EQ(plain.version.find('\n'), std::string::npos);

  options.fastmath = true;
  Toolchain fast = host_toolchain(options);
  expected.pop_back();
  expected.back() = "-ffast-math";
  EXPECT_EQ(fast.flags, expected);
  EXPECT_EQ(fast.version, plain.version);
}

TEST(Toolchain, CompilerFromEnvironment) {
  const char* saved = std::getenv("PLAIT_CXX");
  std::string saved_value = saved ? saved : "";
  ::setenv("PLAIT_CXX", "g++", 1);
  EXPECT_EQ(host_toolchain(CompileOptions{}).cxx, "g++");
  if (saved) {
    ::setenv("PLAIT_CXX", saved_value.c_str(), 1);
  } else {
    ::unsetenv("PLAIT_CXX");
  }
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* saved = std::getenv(name);
    if (saved) saved_ = saved;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { saved_ ? ::setenv(name_, saved_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(Toolchain, SanitizersFromEnvironment) {
  CompileOptions options;
  options.cxx = "g++";
  Toolchain plain;
  {
    ScopedEnv env("PLAIT_SANITIZE", nullptr);
    plain = host_toolchain(options);
  }
  auto has = [](const Toolchain& t, const std::string& flag) {
    return std::find(t.flags.begin(), t.flags.end(), flag) != t.flags.end();
  };
  {
    ScopedEnv env("PLAIT_SANITIZE", "0");
    EXPECT_EQ(host_toolchain(options).flags, plain.flags);
  }
  {
    ScopedEnv env("PLAIT_SANITIZE", "1");
    Toolchain both = host_toolchain(options);
    EXPECT_TRUE(has(both, "-fsanitize=address,undefined"));
    EXPECT_TRUE(has(both, "-fno-sanitize-recover=all"));
    EXPECT_NE(cache_key("0.1.0", "src", Target::CPU, both), cache_key("0.1.0", "src", Target::CPU, plain));
  }
  {
    ScopedEnv env("PLAIT_SANITIZE", "undefined");
    EXPECT_TRUE(has(host_toolchain(options), "-fsanitize=undefined"));
  }
}

TEST(Toolchain, ClangBuildsWithoutSimdWarnings) {
  CompileOptions options;
  options.cxx = "clang++";
  Toolchain clang = host_toolchain(options);
  EXPECT_NE(clang.version.find("clang"), std::string::npos) << clang.version;
  EXPECT_EQ(clang.flags.back(), "-Wno-pass-failed");
  options.cxx = "g++";
  Toolchain gcc = host_toolchain(options);
  EXPECT_EQ(std::find(gcc.flags.begin(), gcc.flags.end(), "-Wno-pass-failed"), gcc.flags.end());
}

TEST(Toolchain, MissingCompilerIsAnInternalError) {
  CompileOptions options;
  options.cxx = "plait-no-such-compiler";
  try {
    host_toolchain(options);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("plait-no-such-compiler"), std::string::npos) << e.what();
  }
}

TEST_F(ScratchDir, BuildAndLoad) {
  Toolchain toolchain = host_toolchain(CompileOptions{});
  write_text(root_ + "/k.cpp", kernel_source(7));
  build_shared_library(toolchain, root_ + "/k.cpp", root_ + "/k.so", root_ + "/k.log");
  EXPECT_EQ(call_entry(root_ + "/k.so"), 7);
  // Only the output and the log remain: the temporary output was renamed.
  EXPECT_EQ(count_entries_with_prefix(root_, "k.so.tmp"), 0);
}

TEST_F(ScratchDir, CompilerErrorQuotesCommandAndLog) {
  Toolchain toolchain = host_toolchain(CompileOptions{});
  write_text(root_ + "/bad.cpp", "int f() { return undeclared_name; }\n");
  try {
    build_shared_library(toolchain, root_ + "/bad.cpp", root_ + "/bad.so", root_ + "/bad.log");
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("undeclared_name"), std::string::npos) << message;
    EXPECT_NE(message.find("-fopenmp"), std::string::npos) << message;
    EXPECT_NE(message.find(root_ + "/bad.log"), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(root_ + "/bad.so"));
  EXPECT_NE(read_text(root_ + "/bad.log").find("undeclared_name"), std::string::npos);
  EXPECT_EQ(count_entries_with_prefix(root_, "bad.so.tmp"), 0);
}

TEST_F(ScratchDir, ArgumentsAreNotInterpretedByAShell) {
  Toolchain toolchain = host_toolchain(CompileOptions{});
  std::string odd = root_ + "/a b;$(touch pwned)";
  write_text(odd + ".cpp", kernel_source(3));
  build_shared_library(toolchain, odd + ".cpp", odd + ".so", odd + ".log");
  EXPECT_EQ(call_entry(odd + ".so"), 3);
  EXPECT_FALSE(fs::exists("pwned"));
}

// --- loader ------------------------------------------------------------------

TEST(Loader, MissingLibraryIsAnInternalError) {
  try {
    LoadedLibrary::open("/nonexistent/plait/kernel.so");
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/plait/kernel.so"), std::string::npos) << e.what();
  }
}

TEST_F(ScratchDir, LoaderFindsSymbolsAndReportsMissingOnes) {
  Toolchain toolchain = host_toolchain(CompileOptions{});
  write_text(root_ + "/k.cpp", kernel_source(11));
  build_shared_library(toolchain, root_ + "/k.cpp", root_ + "/k.so", root_ + "/k.log");
  auto library = LoadedLibrary::open(root_ + "/k.so");
  EXPECT_EQ(library->path(), root_ + "/k.so");
  auto abi = reinterpret_cast<plait_abi_fn>(library->symbol(PLAIT_ABI_SYMBOL));
  ASSERT_NE(abi, nullptr);
  EXPECT_EQ(abi(), PLAIT_ABI_VERSION);
  EXPECT_EQ(library->symbol("plait_no_such_symbol"), nullptr);
}

// --- keys and directories ---------------------------------------------------

TEST(CacheKey, DependsOnEveryInput) {
  Toolchain toolchain{"g++", {"-O3"}, "g++ 12", {}, {}, {}};
  std::string base = cache_key("0.1.0", "src", Target::CPU, toolchain);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, cache_key("0.1.0", "src", Target::CPU, toolchain));
  EXPECT_NE(base, cache_key("0.1.1", "src", Target::CPU, toolchain));
  EXPECT_NE(base, cache_key("0.1.0", "src2", Target::CPU, toolchain));
  EXPECT_NE(base, cache_key("0.1.0", "src", Target::CUDA, toolchain));
  EXPECT_NE(base, cache_key("0.1.0", "src", Target::CPU, Toolchain{"clang++", {"-O3"}, "g++ 12", {}, {}, {}}));
  EXPECT_NE(base,
            cache_key("0.1.0", "src", Target::CPU, Toolchain{"g++", {"-O3", "-ffast-math"}, "g++ 12", {}, {}, {}}));
  EXPECT_NE(base, cache_key("0.1.0", "src", Target::CPU, Toolchain{"g++", {"-O3"}, "g++ 13", {}, {}, {}}));
  EXPECT_NE(base, cache_key("0.1.0", "src", Target::CPU, Toolchain{"g++", {"-O3"}, "g++ 12", {"-lmvec"}, {}, {}}));
  // Length prefixes keep part boundaries apart.
  EXPECT_NE(cache_key("0.1.0", "src", Target::CPU, Toolchain{"g++", {"-O3", "x"}, "v", {}, {}, {}}),
            cache_key("0.1.0", "src", Target::CPU, Toolchain{"g++", {"-O3x"}, "v", {}, {}, {}}));
}

// --- records (the autotuner's choices) -------------------------------------

TEST_F(ScratchDir, RecordRoundTripAndReplacement) {
  DiskCache cache(root_ + "/cache");
  const std::string key(64, 'c');
  EXPECT_FALSE(cache.lookup_record(key).has_value());
  cache.store_record(key, "{\"choice\": 1}");
  EXPECT_EQ(cache.lookup_record(key).value_or(""), "{\"choice\": 1}");
  cache.store_record(key, "");
  EXPECT_EQ(cache.lookup_record(key).value_or("missing"), "");
  const std::string path = root_ + "/cache/records/" + key;
  EXPECT_EQ(read_text(path), "plait-record-v1\n" + sha256_hex("") + "\n");
  EXPECT_EQ(count_entries_with_prefix(root_ + "/cache/records", ".new-"), 0);
}

TEST_F(ScratchDir, DamagedRecordIsRemovedAndMissed) {
  DiskCache cache(root_ + "/cache");
  const std::string key(64, 'd');
  const std::string path = root_ + "/cache/records/" + key;
  const std::vector<std::string> damages = {"text", "checksum", "header", "newline", "short"};
  for (const std::string& damage : damages) {
    cache.store_record(key, "threads 256");
    std::string contents = read_text(path);
    if (damage == "text") contents.back() = '7';
    if (damage == "checksum") contents[16] = contents[16] == '0' ? '1' : '0';
    if (damage == "header") contents[0] = 'P';
    if (damage == "newline") contents[16 + 64] = ' ';
    if (damage == "short") contents.resize(30);
    write_text(path, contents);
    EXPECT_FALSE(cache.lookup_record(key).has_value()) << damage;
    EXPECT_FALSE(fs::exists(path)) << damage;
  }
}

TEST_F(ScratchDir, RecordKeysAreHexDigests) {
  DiskCache cache(root_ + "/cache");
  EXPECT_THROW(cache.store_record("../../x", "t"), InternalError);
  EXPECT_THROW(cache.lookup_record(std::string(64, 'G')), InternalError);
  EXPECT_THROW(cache.lookup_record(std::string(63, 'a')), InternalError);
}

TEST(CacheDirectory, Precedence) {
  auto save = [](const char* name) {
    const char* value = std::getenv(name);
    return std::make_pair(value != nullptr, std::string(value ? value : ""));
  };
  auto restore = [](const char* name, const std::pair<bool, std::string>& saved) {
    if (saved.first) {
      ::setenv(name, saved.second.c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  };
  auto plait_dir = save("PLAIT_CACHE_DIR"), xdg = save("XDG_CACHE_HOME"), home = save("HOME");

  ::setenv("PLAIT_CACHE_DIR", "/p", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  CompileOptions options;
  options.cache_dir = "/o";
  EXPECT_EQ(default_cache_directory(options), "/o");
  options.cache_dir.clear();
  EXPECT_EQ(default_cache_directory(options), "/p");
  ::unsetenv("PLAIT_CACHE_DIR");
  EXPECT_EQ(default_cache_directory(options), "/x/plait");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(default_cache_directory(options), "/h/.cache/plait");

  restore("PLAIT_CACHE_DIR", plait_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST_F(ScratchDir, CacheDirectoryIsCreatedPrivate) {
  std::string dir = root_ + "/nested/cache";
  DiskCache cache(dir + "/");
  EXPECT_EQ(cache.directory(), dir);
  struct stat info {};
  ASSERT_EQ(::stat(dir.c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0700u);
}

TEST_F(ScratchDir, RefusesGroupOrWorldWritableDirectory) {
  for (mode_t mode : {0777, 0770, 0702}) {
    std::string dir = root_ + "/shared" + std::to_string(mode);
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    try {
      DiskCache cache(dir);
      FAIL() << "expected InternalError for mode " << std::oct << mode;
    } catch (const InternalError& e) {
      EXPECT_NE(std::string(e.what()).find(dir), std::string::npos) << e.what();
    }
  }
}

TEST_F(ScratchDir, RefusesDirectoryOwnedByAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory owned by someone else";
  std::string dir = root_ + "/theirs";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  try {
    DiskCache cache(dir);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("owned by another user"), std::string::npos) << e.what();
  }
}

TEST_F(ScratchDir, RefusesAFileAsDirectory) {
  write_text(root_ + "/file", "x");
  EXPECT_THROW(DiskCache cache(root_ + "/file"), InternalError);
}

// --- lookup and store --------------------------------------------------------

class DiskCacheTest : public ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    cache_dir_ = root_ + "/cache";
    toolchain_ = host_toolchain(CompileOptions{});
  }
  std::string key_for(int value) const { return cache_key("test", kernel_source(value), Target::CPU, toolchain_); }
  // Stores the kernel returning `value` and returns its library path.
  std::string store(int value) const {
    DiskCache cache(cache_dir_);
    return cache.store(key_for(value), kernel_source(value), toolchain_);
  }
  std::string cache_dir_;
  Toolchain toolchain_;
};

TEST_F(DiskCacheTest, MissThenStoreThenHit) {
  DiskCache cache(cache_dir_);
  std::string key = key_for(1);
  EXPECT_FALSE(cache.lookup(key).has_value());
  std::string library = cache.store(key, kernel_source(1), toolchain_);
  std::string entry = cache_dir_ + "/" + key.substr(0, 2) + "/" + key;
  EXPECT_EQ(cache.entry_path(key), entry);
  EXPECT_EQ(library, entry + "/kernel.so");
  EXPECT_EQ(read_text(entry + "/kernel.cpp"), kernel_source(1));
  EXPECT_EQ(read_text(entry + "/kernel.sha256"), sha256_file_hex(library) + "\n");
  EXPECT_TRUE(fs::exists(entry + "/build.log"));
  EXPECT_EQ(count_entries_with_prefix(cache_dir_, "build-"), 0);

  std::optional<std::string> hit = cache.lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, library);
  EXPECT_EQ(call_entry(*hit), 1);
  EXPECT_FALSE(cache.lookup(key_for(2)).has_value());
}

// The runtime a kernel's source begins with is precompiled once into an
// entry of the cache; a kernel built with it is the same kernel (kernel.cpp
// keeps the whole text), and a damaged .gch is a miss as a damaged kernel is.
TEST_F(DiskCacheTest, PrecompiledRuntimeBuildsKernelsThatBeginWithIt) {
  DiskCache cache(cache_dir_);
  const std::string runtime =
      "#include <stdint.h>\nstatic inline int32_t plait_test_next(int32_t v) { return v + 1; }\n";
  std::optional<std::string> dir = precompiled_runtime(cache, toolchain_, runtime);
  if (toolchain_.version.find("clang") != std::string::npos) {
    EXPECT_FALSE(dir.has_value());
    return;
  }
  ASSERT_TRUE(dir.has_value());
  EXPECT_EQ(read_text(*dir + "/plait_runtime.h"), runtime);
  EXPECT_EQ(precompiled_runtime(cache, toolchain_, runtime), dir);
  Toolchain with = toolchain_;
  with.runtime_dir = *dir;
  with.runtime_text = runtime;
  const std::string source = runtime + "extern \"C\" int32_t plait_kernel_abi_version(void) { return " +
                             std::to_string(PLAIT_ABI_VERSION) +
                             "; }\nextern \"C\" int32_t plait_kernel_entry(void**, void*, void*) { return "
                             "plait_test_next(41); }\n";
  const std::string key = cache_key("test", source, Target::CPU, toolchain_);
  const std::string library = cache.store(key, source, with);
  EXPECT_EQ(call_entry(library), 42);
  EXPECT_EQ(read_text(cache.entry_path(key) + "/kernel.cpp"), source);
  EXPECT_EQ(read_text(cache.entry_path(key) + "/kernel_pch.cpp").rfind("#include \"plait_runtime.h\"\n", 0), 0u);

  const std::string gch = *dir + "/plait_runtime.h.gch";
  std::string bytes = read_text(gch);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_text(gch, bytes);
  EXPECT_FALSE(cache.lookup_file(cache_key("plait-precompiled-runtime-v1", runtime, Target::CPU, toolchain_),
                                 "plait_runtime.h.gch"));
  EXPECT_FALSE(fs::exists(*dir));
}

TEST_F(DiskCacheTest, CorruptedLibraryIsDetectedRemovedAndRebuilt) {
  std::string library = store(21);
  std::string bytes = read_text(library);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_text(library, bytes);

  DiskCache cache(cache_dir_);
  EXPECT_FALSE(cache.lookup(key_for(21)).has_value());
  EXPECT_FALSE(fs::exists(cache.entry_path(key_for(21))));
  EXPECT_EQ(count_entries_with_prefix(cache_dir_, "trash-"), 0);

  std::string rebuilt = cache.store(key_for(21), kernel_source(21), toolchain_);
  EXPECT_EQ(rebuilt, library);
  ASSERT_TRUE(cache.lookup(key_for(21)).has_value());
  EXPECT_EQ(call_entry(rebuilt), 21);
}

TEST_F(DiskCacheTest, TruncatedLibraryIsAMiss) {
  std::string library = store(22);
  fs::resize_file(library, 100);
  DiskCache cache(cache_dir_);
  EXPECT_FALSE(cache.lookup(key_for(22)).has_value());
  EXPECT_FALSE(fs::exists(library));
}

TEST_F(DiskCacheTest, EmptyLibraryIsAMiss) {
  std::string library = store(23);
  fs::resize_file(library, 0);
  EXPECT_FALSE(DiskCache(cache_dir_).lookup(key_for(23)).has_value());
}

TEST_F(DiskCacheTest, ChecksumMismatchIsAMiss) {
  std::string library = store(24);
  std::string checksum = fs::path(library).parent_path() / "kernel.sha256";
  write_text(checksum, std::string(64, '0') + "\n");
  EXPECT_FALSE(DiskCache(cache_dir_).lookup(key_for(24)).has_value());
}

TEST_F(DiskCacheTest, MissingChecksumOrLibraryIsAMiss) {
  std::string library = store(25);
  fs::remove(fs::path(library).parent_path() / "kernel.sha256");
  EXPECT_FALSE(DiskCache(cache_dir_).lookup(key_for(25)).has_value());

  library = store(25);
  fs::remove(library);
  EXPECT_FALSE(DiskCache(cache_dir_).lookup(key_for(25)).has_value());
  EXPECT_FALSE(fs::exists(fs::path(library).parent_path()));
}

TEST_F(DiskCacheTest, StoringAnExistingKeyUsesThePublishedEntry) {
  std::string first = store(31);
  struct stat before {};
  ASSERT_EQ(::stat(first.c_str(), &before), 0);
  std::string second = store(31);
  EXPECT_EQ(second, first);
  // The published file was kept, not replaced by the second build.
  struct stat after {};
  ASSERT_EQ(::stat(second.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(count_entries_with_prefix(cache_dir_, "build-"), 0);
}

TEST_F(DiskCacheTest, BuildFailureKeepsTheLogAndPublishesNothing) {
  DiskCache cache(cache_dir_);
  std::string bad_source = "int broken( {\n";
  std::string key = cache_key("test", bad_source, Target::CPU, toolchain_);
  try {
    cache.store(key, bad_source, toolchain_);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("build.log"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(cache.lookup(key).has_value());
  EXPECT_FALSE(fs::exists(cache.entry_path(key)));
}

TEST_F(DiskCacheTest, ConcurrentThreadsStoringTheSameKey) {
  constexpr int kThreads = 4;
  std::vector<std::string> paths(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        paths[i] = store(41);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(errors[i], "");
    EXPECT_EQ(paths[i], paths[0]);
  }
  ASSERT_TRUE(DiskCache(cache_dir_).lookup(key_for(41)).has_value());
  EXPECT_EQ(call_entry(paths[0]), 41);
  EXPECT_EQ(count_entries_with_prefix(cache_dir_, "build-"), 0);
}

TEST_F(DiskCacheTest, ConcurrentProcessesStoringTheSameKey) {
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 1;
      try {
        std::string path = store(42);
        code = call_entry(path) == 42 ? 0 : 2;
      } catch (...) {
        code = 3;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  std::optional<std::string> hit = DiskCache(cache_dir_).lookup(key_for(42));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(call_entry(*hit), 42);
  EXPECT_EQ(count_entries_with_prefix(cache_dir_, "build-"), 0);
}

}  // namespace
}  // namespace plait::jit
