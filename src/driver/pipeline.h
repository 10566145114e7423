// The pass pipelines, one file per target: pipeline_cpu.cpp and
// pipeline_cuda.cpp each list, in order, every step a function goes through
// on that target, from the front end's IR to the code generator, and name
// the choices still made inside the front end and the emitters.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/compile_options.h"

namespace plait {

class PassRunner;

// Called after the front end ("lower_to_ir") and after each pass with the
// step's name, the function as it left it, and whether the step changed it.
using PassObserver = std::function<void(const std::string& pass, const ir::Function& function, bool changed)>;

// Runs every pass of options.target on `function`, as the front end left it,
// in order. Passes throw CompileError for user errors (a race in a parallel
// loop, a misplaced pragma) and add remarks for kernel.explain().
void run_pipeline(ir::Function& function, const CompileOptions& options, const PassObserver& after_pass = nullptr);

// The passes of `target` that CompileOptions::disabled_passes may name, in
// pipeline order: those whose work only makes a kernel faster (pipeline_cpu
// and pipeline_cuda run them through PassRunner::optional).
const std::vector<std::string>& optional_passes(Target target);

// "" when every name in options.disabled_passes is an optional pass of
// options.target, else a message naming the first that is not and listing
// the optional ones.
std::string disabled_passes_error(const CompileOptions& options);

// The passes of each target, in order (pipeline_cpu.cpp, pipeline_cuda.cpp).
void run_cpu_passes(PassRunner& run, const CompileOptions& options);
void run_cuda_passes(PassRunner& run, const CompileOptions& options);
const std::vector<std::string>& cpu_optional_passes();
const std::vector<std::string>& cuda_optional_passes();

}  // namespace plait
