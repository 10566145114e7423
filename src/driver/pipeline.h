// The pass pipelines, one file per target: pipeline_cpu.cpp and
// pipeline_cuda.cpp each list, in order, every step a function goes through
// on that target, from the front end's IR to the code generator, and name
// the choices still made inside the front end and the emitters.
#pragma once

#include <functional>
#include <string>

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

// The passes of each target, in order (pipeline_cpu.cpp, pipeline_cuda.cpp).
void run_cpu_passes(PassRunner& run, const CompileOptions& options);
void run_cuda_passes(PassRunner& run, const CompileOptions& options);

}  // namespace plait
