// The pass pipeline: the one place that lists, in order, every pass a lowered
// function goes through before code generation (see pipeline.cpp).
#pragma once

#include <functional>
#include <string>

#include "ir/ir.h"
#include "support/compile_options.h"

namespace plait {

// Called after each pass with the pass's name and the function as it left it.
using PassObserver = std::function<void(const std::string& pass, const ir::Function& function)>;

// Runs every pass on `function` in order. Passes throw CompileError for user
// errors (a race in a parallel loop, a misplaced pragma) and add remarks for
// kernel.explain().
void run_pipeline(ir::Function& function, const CompileOptions& options, const PassObserver& after_pass = nullptr);

}  // namespace plait
