// Finding the system C++ compiler and running it on a generated kernel.
#include "jit/toolchain.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "support/diagnostics.h"

extern char** environ;

namespace plait::jit {
namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// The command as a shell would show it, for error messages only.
std::string quote_command(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    text += plain ? arg : "'" + arg + "'";
  }
  return text;
}

// The environment of the compiler. Under PLAIT_SANITIZE the process usually
// has the ASan runtime preloaded (docs/testing.md), which the compiler does
// not need and which makes it run twice as slowly: LD_PRELOAD is left out.
std::vector<char*> compiler_environment() {
  const bool sanitize = !env_or_empty("PLAIT_SANITIZE").empty() && env_or_empty("PLAIT_SANITIZE") != "0";
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (!sanitize || std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  env.push_back(nullptr);
  return env;
}

// Runs `argv` (argv[0] resolved through PATH) with stdout and stderr going to
// the file `log_path`, and returns its wait status. Throws InternalError when
// the program cannot be started.
int run_to_file(const std::vector<std::string>& argv, const std::string& log_path) {
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (log_fd < 0) PLAIT_INTERNAL_ERROR("cannot create '" + log_path + "': " + std::strerror(errno));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDERR_FILENO);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0) posix_spawn_file_actions_adddup2(&actions, null_fd, STDIN_FILENO);

  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  std::vector<char*> env = compiler_environment();
  int spawn_error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (spawn_error != 0) {
    PLAIT_INTERNAL_ERROR("cannot run the C++ compiler '" + argv[0] + "': " + std::strerror(spawn_error) +
                         " (set PLAIT_CXX or CXX to a working compiler)");
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) PLAIT_INTERNAL_ERROR(std::string("waitpid failed: ") + std::strerror(errno));
  }
  return status;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A path in the directory of `path` that no other process uses: the
// compiler writes there and the result is renamed into place.
std::string temporary_sibling(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// The first line of `cxx --version`, once per process per compiler.
std::string compiler_version_line(const std::string& cxx) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = versions.find(cxx);
  if (found != versions.end()) return found->second;

  std::string log_path = (std::filesystem::temp_directory_path() / "plait-cxx-version-XXXXXX").string();
  int fd = ::mkstemp(log_path.data());
  if (fd < 0) PLAIT_INTERNAL_ERROR(std::string("cannot create a temporary file: ") + std::strerror(errno));
  ::close(fd);
  int status = run_to_file({cxx, "--version"}, log_path);
  std::string output = read_file_text(log_path);
  ::unlink(log_path.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    PLAIT_INTERNAL_ERROR("'" + cxx + " --version' failed (" + describe_status(status) + "): " + output);
  }
  std::string line = output.substr(0, output.find('\n'));
  versions.emplace(cxx, line);
  return line;
}

}  // namespace

Toolchain host_toolchain(const CompileOptions& options) {
  Toolchain toolchain;
  toolchain.cxx = options.cxx;
  if (toolchain.cxx.empty()) toolchain.cxx = env_or_empty("PLAIT_CXX");
  if (toolchain.cxx.empty()) toolchain.cxx = env_or_empty("CXX");
  if (toolchain.cxx.empty()) toolchain.cxx = "c++";
  // -fwrapv: integer overflow wraps, as NumPy's fixed-width integers do,
  // instead of being undefined behaviour the optimiser may exploit.
  toolchain.flags = {"-O3", "-march=native", "-fopenmp", "-fwrapv", "-std=c++20", "-shared", "-fPIC"};
  // Without fastmath, a * b + c is two roundings, as in NumPy and Python:
  // g++ would otherwise contract it into one fused multiply-add.
  // -fno-math-errno: generated code never reads errno (math.* errors are
  // checked on the result), and without it g++ keeps sqrt a library call
  // and leaves loops that call it scalar.
  if (options.fastmath) toolchain.flags.push_back("-ffast-math");
  else toolchain.flags.insert(toolchain.flags.end(), {"-ffp-contract=off", "-fno-math-errno"});
#if defined(__x86_64__) && defined(__GLIBC__)
  // The SIMD variants of exp, log, sin, ... that vector loops call
  // (plait_runtime.h); --as-needed drops the library when none is called.
  toolchain.libraries = {"-Wl,--as-needed", "-lmvec"};
#endif
  // PLAIT_SANITIZE builds kernels under the sanitizers (docs/testing.md):
  // "1" means address,undefined, any other value is -fsanitize's list. A
  // report stops the process, so a test that provokes one fails. -O1 (the
  // last -O wins) builds in a third of -O3's time under the sanitizers.
  std::string sanitize = env_or_empty("PLAIT_SANITIZE");
  if (!sanitize.empty() && sanitize != "0") {
    if (sanitize == "1") sanitize = "address,undefined";
    toolchain.flags.insert(toolchain.flags.end(), {"-fsanitize=" + sanitize, "-fno-sanitize-recover=all",
                                                   "-fno-omit-frame-pointer", "-g", "-O1"});
  }
  toolchain.version = compiler_version_line(toolchain.cxx);
  // clang warns when it cannot vectorise an `omp simd` loop (g++ keeps the
  // loop scalar silently); the pragma is a request, so a build with
  // warnings as errors must not fail on it.
  if (toolchain.version.find("clang") != std::string::npos) toolchain.flags.push_back("-Wno-pass-failed");
  return toolchain;
}

void build_shared_library(const Toolchain& toolchain, const std::string& source_path,
                          const std::string& output_path, const std::string& log_path) {
  std::string temporary_output = temporary_sibling(output_path);
  std::vector<std::string> argv = {toolchain.cxx};
  argv.insert(argv.end(), toolchain.flags.begin(), toolchain.flags.end());
  if (!toolchain.runtime_dir.empty()) argv.push_back("-I" + toolchain.runtime_dir);
  argv.insert(argv.end(), {source_path, "-o", temporary_output});
  argv.insert(argv.end(), toolchain.libraries.begin(), toolchain.libraries.end());

  int status = run_to_file(argv, log_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::unlink(temporary_output.c_str());
    std::string log = read_file_text(log_path);
    constexpr size_t kMaxLogInMessage = 4000;
    if (log.size() > kMaxLogInMessage) log = log.substr(0, kMaxLogInMessage) + "\n[... see the full log]";
    PLAIT_INTERNAL_ERROR("the C++ compiler failed (" + describe_status(status) + ")\ncommand: " +
                         quote_command(argv) + "\nlog: " + log_path + "\n" + log);
  }
  if (::rename(temporary_output.c_str(), output_path.c_str()) != 0) {
    int error = errno;
    ::unlink(temporary_output.c_str());
    PLAIT_INTERNAL_ERROR("cannot rename '" + temporary_output + "' to '" + output_path + "': " +
                         std::strerror(error));
  }
}

bool build_precompiled_header(const Toolchain& toolchain, const std::string& header_path,
                              const std::string& output_path, const std::string& log_path) {
  std::string temporary_output = temporary_sibling(output_path);
  std::vector<std::string> argv = {toolchain.cxx};
  // The kernels' flags, so that g++ accepts the header for them; -shared
  // only links.
  for (const std::string& flag : toolchain.flags)
    if (flag != "-shared") argv.push_back(flag);
  argv.insert(argv.end(), {"-x", "c++-header", header_path, "-o", temporary_output});
  int status = run_to_file(argv, log_path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || ::rename(temporary_output.c_str(), output_path.c_str()) != 0) {
    ::unlink(temporary_output.c_str());
    return false;
  }
  return true;
}

}  // namespace plait::jit
