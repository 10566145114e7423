// plaitc: compiles one kernel of a Python file from the command line, to its
// IR, its generated C++ or a shared object.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "driver/pipeline.h"
#include "frontend/parser.h"
#include "jit/cuda_runtime.h"
#include "support/compiler_stack.h"

namespace {
namespace fs = std::filesystem;

// sysexits.h values.
constexpr int kExitCompileError = 1;
constexpr int kExitInternalError = 2;
constexpr int kExitUsage = 64;
constexpr int kExitNoInput = 66;

constexpr const char* kUsage =
    "usage: plaitc compile FILE.py::FUNCTION --signature SIGNATURE [options]\n"
    "       plaitc --version\n"
    "       plaitc --help\n"
    "\n"
    "Compiles the function FUNCTION of FILE.py for the argument types SIGNATURE,\n"
    "e.g. --signature \"u32[::1], u32[::1], f64[::1], f64[::1]\". Element and NumPy\n"
    "scalar types: b1, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64 (the width\n"
    "in bits); Python scalars: bool, int, float; SciPy CSR matrices: csr[f64, i32]\n"
    "or csr_matrix[f32, i64] (values, index type).\n"
    "\n"
    "options:\n"
    "  --emit ir|cpp|so|cu|ptx|remarks\n"
    "                     what to produce (default: so): the IR after the last pass,\n"
    "                     the generated C++ (for --target cuda: the host part), the\n"
    "                     shared object (CPU only), the generated CUDA C++ (cu),\n"
    "                     its PTX compiled by NVRTC (ptx), or what kernel.explain()\n"
    "                     says about each loop, without building (remarks)\n"
    "  --target cpu|cuda  the target (default: cpu); cu and ptx imply cuda\n"
    "  --arch N           the GPU architecture for --emit ptx (default: the GPU's,\n"
    "                     else 90 for sm_90)\n"
    "  -o DIR             write FUNCTION.ir, .cpp, .so, .cu, .ptx or .remarks into\n"
    "                     DIR (default: so to the current directory, the others to\n"
    "                     standard output)\n"
    "  --boundscheck      an index the compiler cannot prove in range raises\n"
    "                     IndexError (the default)\n"
    "  --no-boundscheck   no index is checked\n"
    "  --fastmath         let the C++ compiler reassociate floating-point math\n"
    "  --fusion partial|maximal|none\n"
    "                     how programs of sparse operators are fused (default:\n"
    "                     partial; docs/sparse.md)\n"
    "  --disable-pass NAME\n"
    "                     do not run the optional pass NAME (repeatable), to\n"
    "                     measure what it contributes; a name that is not one is\n"
    "                     refused with the list of the target's optional passes\n"
    "  --no-cache         build afresh, neither using nor filling the disk cache\n"
    "  --cache-dir DIR    the disk cache directory (default: $PLAIT_CACHE_DIR,\n"
    "                     $XDG_CACHE_HOME/plait or ~/.cache/plait)\n"
    "  --dump-dir DIR     write the IR after each pass that changes it, the list of\n"
    "                     the passes (FUNCTION.passes) and the generated C++ to DIR\n"
    "                     (default: $PLAIT_DUMP_DIR)\n"
    "  --verify-ir        check the IR's invariants after the front end and after\n"
    "                     each pass (default: on when $PLAIT_VERIFY_IR is 1)\n"
    "  --cxx PROGRAM      the C++ compiler (default: $PLAIT_CXX, $CXX or c++)\n"
    "  --cuda-threads N   threads per block of CUDA kernels: 64, 128, 256, 512 or\n"
    "                     1024 (default: 256)\n"
    "  --cuda-row-groups N\n"
    "                     groups of iterations per thread that team loops keep in\n"
    "                     registers: 1, 2, 4 or 8 (default: 4)\n"
    "  --cuda-max-team N  the largest team of threads per iteration: a power of two\n"
    "                     from 32 to --cuda-threads (default: --cuda-threads)\n"
    "\n"
    "exit status:\n"
    "  0   success (also --help and --version)\n"
    "  1   an error in the kernel: its file, line and caret, then the Python\n"
    "      exception's name and the message, on standard error\n"
    "  2   an internal error: a compiler bug, an unexpected exception, the system\n"
    "      C++ compiler or NVRTC failing, an unusable cache directory, or an\n"
    "      output that cannot be written\n"
    "  64  a bad command line (the message, then this text)\n"
    "  66  an input file that cannot be read\n";

// A command-line mistake: reported with the usage text, exit status 64.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Emit { IR, Cpp, SharedObject, Cuda, Ptx, Remarks };

struct Command {
  std::string file;
  std::string function;
  std::string signature;
  Emit emit = Emit::SharedObject;
  int arch = 0;  // --arch; 0: the GPU's, else 90
  std::string output_dir;
  plait::CompileOptions options;
};

// The integer value of a launch configuration option.
int launch_knob(const std::string& option, const std::string& text) {
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw UsageError(option + " takes a number, not '" + text + "'");
  return value;
}

Command parse_command_line(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "compile") throw UsageError("expected a command: compile");
  Command command;
  std::optional<std::string> target;
  bool have_signature = false;
  bool cuda_knob = false;  // a --cuda-* launch option was given
  if (const char* dump = std::getenv("PLAIT_DUMP_DIR")) command.options.dump_dir = dump;
  command.options.verify_ir = plait::verify_ir_from_environment();

  std::optional<bool> boundscheck;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      inline_value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw UsageError("option " + arg + " needs a value");
      return args[++i];
    };
    auto no_value = [&]() {
      if (inline_value) throw UsageError("option " + arg + " takes no value");
    };
    if (arg == "--signature") {
      command.signature = value();
      have_signature = true;
    } else if (arg == "--emit") {
      std::string emit = value();
      if (emit == "ir") {
        command.emit = Emit::IR;
      } else if (emit == "cpp") {
        command.emit = Emit::Cpp;
      } else if (emit == "so") {
        command.emit = Emit::SharedObject;
      } else if (emit == "cu") {
        command.emit = Emit::Cuda;
        command.options.target = plait::Target::CUDA;
      } else if (emit == "ptx") {
        command.emit = Emit::Ptx;
        command.options.target = plait::Target::CUDA;
      } else if (emit == "remarks") {
        command.emit = Emit::Remarks;
      } else {
        throw UsageError("--emit takes ir, cpp, so, cu, ptx or remarks, not '" + emit + "'");
      }
    } else if (arg == "--target") {
      std::string target_name = value();
      if (target_name == "cpu") {
        command.options.target = plait::Target::CPU;
      } else if (target_name == "cuda") {
        command.options.target = plait::Target::CUDA;
      } else {
        throw UsageError("--target takes cpu or cuda, not '" + target_name + "'");
      }
    } else if (arg == "--arch") {
      std::string arch = value();
      try {
        command.arch = std::stoi(arch);
      } catch (const std::exception&) {
        throw UsageError("--arch takes a number such as 90, not '" + arch + "'");
      }
    } else if (arg == "-o" || arg == "--output") {
      command.output_dir = value();
    } else if (arg == "--boundscheck" || arg == "--no-boundscheck") {
      no_value();
      boundscheck = arg == "--boundscheck";
    } else if (arg == "--fastmath") {
      no_value();
      command.options.fastmath = true;
    } else if (arg == "--fusion") {
      const std::string mode = value();
      if (mode == "partial") {
        command.options.fusion = plait::Fusion::Partial;
      } else if (mode == "maximal") {
        command.options.fusion = plait::Fusion::Maximal;
      } else if (mode == "none") {
        command.options.fusion = plait::Fusion::None;
      } else {
        throw UsageError("--fusion takes partial, maximal or none, not '" + mode + "'");
      }
    } else if (arg == "--disable-pass") {
      command.options.disabled_passes.insert(value());
    } else if (arg == "--no-cache") {
      no_value();
      command.options.disk_cache = false;
    } else if (arg == "--cache-dir") {
      command.options.cache_dir = value();
    } else if (arg == "--dump-dir") {
      command.options.dump_dir = value();
    } else if (arg == "--verify-ir") {
      command.options.verify_ir = true;
    } else if (arg == "--cxx") {
      command.options.cxx = value();
    } else if (arg == "--cuda-threads") {
      command.options.cuda_launch.threads = launch_knob(arg, value());
      cuda_knob = true;
    } else if (arg == "--cuda-row-groups") {
      command.options.cuda_launch.row_groups = launch_knob(arg, value());
      cuda_knob = true;
    } else if (arg == "--cuda-max-team") {
      command.options.cuda_launch.max_team = launch_knob(arg, value());
      cuda_knob = true;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option " + arg);
    } else if (target) {
      throw UsageError("more than one FILE.py::FUNCTION given");
    } else {
      target = arg;
    }
  }
  if (!target) throw UsageError("no FILE.py::FUNCTION given");
  size_t separator = target->rfind("::");
  if (separator == std::string::npos || separator == 0 || separator + 2 == target->size()) {
    throw UsageError("expected FILE.py::FUNCTION, got '" + *target + "'");
  }
  command.file = target->substr(0, separator);
  command.function = target->substr(separator + 2);
  if (!have_signature) throw UsageError("--signature is required");
  command.options.boundscheck = boundscheck.value_or(plait::default_boundscheck);
  if (cuda_knob && command.options.target != plait::Target::CUDA)
    throw UsageError("--cuda-threads, --cuda-row-groups and --cuda-max-team are for --target cuda");
  const std::string launch_error = plait::launch_config_error(command.options.cuda_launch);
  if (!launch_error.empty()) throw UsageError(launch_error);
  const std::string disabled_error = plait::disabled_passes_error(command.options);
  if (!disabled_error.empty()) throw UsageError(disabled_error);
  if ((command.emit == Emit::Cuda || command.emit == Emit::Ptx) && command.options.target != plait::Target::CUDA)
    throw UsageError("--emit cu and ptx are for --target cuda");
  if (command.emit == Emit::SharedObject && command.options.target == plait::Target::CUDA)
    throw UsageError("--emit so is for the CPU target; for --target cuda use cpp, cu or ptx");
  return command;
}

// The module-level names the kernel may use: imported modules and functions
// (by their dotted name), int/float/bool constants, frozen now, and the
// functions the file defines (inlined where the kernel calls them).
plait::Globals module_globals(const plait::SourceFile& file) {
  plait::ModuleNames names = plait::scan_module_names(file);
  plait::Globals globals;
  for (const auto& [alias, module] : names.imports) {
    plait::GlobalValue value;
    value.kind = plait::GlobalValue::Kind::Module;
    value.module = module;
    globals[alias] = value;
  }
  for (const auto& [name, constant] : names.constants) {
    plait::GlobalValue value;
    if (const bool* b = std::get_if<bool>(&constant)) {
      value.kind = plait::GlobalValue::Kind::Bool;
      value.bool_value = *b;
    } else if (const int64_t* i = std::get_if<int64_t>(&constant)) {
      value.kind = plait::GlobalValue::Kind::Int;
      value.int_value = *i;
    } else if (const double* d = std::get_if<double>(&constant)) {
      value.kind = plait::GlobalValue::Kind::Float;
      value.float_value = *d;
    } else {
      continue;  // None and strings are not values a kernel computes with
    }
    globals[name] = value;
  }
  // The file's functions, which a kernel may call: each sees the same names.
  auto callees = std::make_shared<plait::CalleeTable>();
  plait::Globals with_functions = globals;
  for (const std::string& function : names.functions) {
    plait::GlobalValue value;
    value.kind = plait::GlobalValue::Kind::Function;
    value.module = function;
    with_functions[function] = value;
  }
  for (const std::string& function : names.functions)
    (*callees)[function] = plait::Callee{file, function, with_functions};
  for (const std::string& function : names.functions) with_functions[function].callees = callees;
  return with_functions;
}

void write_output(const Command& command, const std::string& extension, const std::string& text) {
  if (command.output_dir.empty()) {
    std::cout << text;
    if (!text.empty() && text.back() != '\n') std::cout << '\n';
    std::cout.flush();
    if (!std::cout) throw std::runtime_error("cannot write to standard output");
    return;
  }
  fs::create_directories(command.output_dir);
  std::string path = (fs::path(command.output_dir) / (command.function + extension)).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

// Builds and loads the kernel (which checks its ABI), then copies the shared
// object. --no-cache builds into a throwaway cache directory so that the
// library file survives loading long enough to be copied.
void emit_shared_object(const Command& command, const plait::SourceFile& source, const plait::Signature& signature,
                        const plait::Globals& globals) {
  plait::CompileOptions options = command.options;
  std::string throwaway_cache;
  if (!options.disk_cache) {
    throwaway_cache = (fs::temp_directory_path() / "plaitc-XXXXXX").string();
    if (!::mkdtemp(throwaway_cache.data())) throw std::runtime_error("cannot create a temporary directory");
    options.disk_cache = true;
    options.cache_dir = throwaway_cache;
  }
  struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
      std::error_code ignored;
      if (!path.empty()) fs::remove_all(path, ignored);
    }
  } cleanup{throwaway_cache};

  auto kernel = plait::compile_kernel(source, command.function, signature, globals, options);
  fs::path output_dir = command.output_dir.empty() ? fs::path(".") : fs::path(command.output_dir);
  fs::create_directories(output_dir);
  fs::path destination = output_dir / (command.function + ".so");
  // Copy to a temporary name and rename, so that a process that has the old
  // file loaded keeps a consistent mapping.
  fs::path staging = destination;
  staging += ".tmp";
  fs::copy_file(kernel->library_path, staging, fs::copy_options::overwrite_existing);
  fs::rename(staging, destination);
}

int run(const Command& command) {
  std::error_code is_directory_error;
  if (fs::is_directory(command.file, is_directory_error)) {
    std::cerr << "plaitc: cannot read '" << command.file << "': " << std::strerror(EISDIR) << "\n";
    return kExitNoInput;
  }
  std::ifstream in(command.file, std::ios::binary);
  if (!in) {
    std::cerr << "plaitc: cannot read '" << command.file << "': " << std::strerror(errno) << "\n";
    return kExitNoInput;
  }
  plait::SourceFile source;
  source.path = command.file;
  source.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    std::cerr << "plaitc: cannot read '" << command.file << "'\n";
    return kExitNoInput;
  }
  // Python skips a UTF-8 byte order mark at the start of a file; so does
  // plaitc, so that the first line's code and columns are as Python reads them.
  constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
  if (source.text.starts_with(kUtf8Bom)) source.text.erase(0, kUtf8Bom.size());
  source.first_line = 1;

  plait::Signature signature;
  try {
    signature = plait::Signature::parse(command.signature);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("bad --signature: ") + e.what());
  }
  plait::Globals globals = module_globals(source);

  switch (command.emit) {
    case Emit::IR:
      write_output(command, ".ir",
                   plait::lower_kernel(source, command.function, signature, globals, command.options).ir_text);
      break;
    case Emit::Cpp: {
      plait::LoweredKernel lowered = plait::lower_kernel(source, command.function, signature, globals, command.options);
      if (command.options.target == plait::Target::CUDA) {
        write_output(command, ".cpp", plait::codegen::generate_cuda(lowered.function, command.options).host);
      } else {
        write_output(command, ".cpp", plait::generate_source(lowered.function, command.options));
      }
      break;
    }
    case Emit::Cuda: {
      plait::LoweredKernel lowered = plait::lower_kernel(source, command.function, signature, globals, command.options);
      write_output(command, ".cu", plait::generate_source(lowered.function, command.options));
      break;
    }
    case Emit::Ptx: {
      plait::LoweredKernel lowered = plait::lower_kernel(source, command.function, signature, globals, command.options);
      int arch = command.arch;
      if (arch == 0) arch = plait::jit::cuda_unavailable_reason().empty() ? plait::jit::cuda_device().arch : 90;
      std::string device_source = plait::generate_source(lowered.function, command.options);
      const plait::jit::DeviceBuild build = plait::jit::compile_device_code(device_source, arch, true, command.options);
      // NVRTC's warnings go to stderr (the tests require none).
      if (!build.log.empty()) std::cerr << build.log << (build.log.back() == '\n' ? "" : "\n");
      write_output(command, ".ptx", build.ptx);
      break;
    }
    case Emit::Remarks:
      write_output(
          command, ".remarks",
          plait::remarks_report(plait::lower_kernel(source, command.function, signature, globals, command.options),
                                command.options));
      break;
    case Emit::SharedObject:
      emit_shared_object(command, source, signature, globals);
      break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  if (args.size() == 1 && args[0] == "--version") {
    std::cout << "plaitc " << plait::compiler_version() << "\n";
    return 0;
  }
  try {
    // The compiler's own thread, whose stack the nesting limits are set for
    // (support/compiler_stack.h), rather than whatever `ulimit -s` gives main.
    int status = 0;
    plait::run_on_compiler_stack([&] { status = run(parse_command_line(args)); });
    return status;
  } catch (const UsageError& e) {
    std::cerr << "plaitc: " << e.what() << "\n\n" << kUsage;
    return kExitUsage;
  } catch (const plait::CompileError& e) {
    std::cerr << e.what() << "\n";
    return kExitCompileError;
  } catch (const plait::InternalError& e) {
    std::cerr << "plaitc: " << e.what() << "\n";
    return kExitInternalError;
  } catch (const std::exception& e) {
    std::cerr << "plaitc: " << e.what() << "\n";
    return kExitInternalError;
  } catch (...) {
    std::cerr << "plaitc: internal error: an exception of unknown type\n";
    return kExitInternalError;
  }
}
