// The compiler's public entry points: source + signature -> loaded kernel.
// Used by plaitc and by the Python extension; runs without Python.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/types.h"
#include "jit/compiled_kernel.h"
#include "support/compile_options.h"
#include "support/diagnostics.h"
#include "support/version.h"

namespace plait {

// The result of the front end and the pass pipeline.
struct LoweredKernel {
  ir::Function function;
  std::string ir_text;  // after the last pass
};

// Parses `source`, finds the function `name`, types it for `signature` and
// runs the pass pipeline of options.target (driver/pipeline_cpu.cpp,
// driver/pipeline_cuda.cpp). Throws CompileError.
LoweredKernel lower_kernel(const SourceFile& source, const std::string& name, const Signature& signature,
                           const Globals& globals, const CompileOptions& options);

// Generates the target source for a lowered kernel: C++ for Target::CPU,
// the device part (CUDA C++) for Target::CUDA.
std::string generate_source(const ir::Function& function, const CompileOptions& options);

// lower_kernel + generate_source + build (or find in the disk cache) + load.
// Throws CompileError for user errors and InternalError when the system
// compiler or the loader fails (the message quotes the command and its log).
std::shared_ptr<const CompiledKernel> compile_kernel(const SourceFile& source, const std::string& name,
                                                     const Signature& signature, const Globals& globals,
                                                     const CompileOptions& options);

// What kernel.explain() says about each loop (the passes' and the code
// generator's remarks, in source order), from code generation alone: nothing
// is built, so it works where the target cannot run (plaitc --emit remarks).
std::string remarks_report(LoweredKernel lowered, const CompileOptions& options);

}  // namespace plait
