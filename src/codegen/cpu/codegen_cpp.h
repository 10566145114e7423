// C++ code generation for the CPU target: one self-contained translation unit
// per kernel (the runtime header is pasted in), OpenMP for parallel loops,
// `#pragma omp simd` for vector loops, `#line` directives pointing at the
// user's .py file.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/compile_options.h"

namespace plait::codegen {

// The C++ source of `function`, exporting PLAIT_ENTRY_SYMBOL and
// PLAIT_ABI_SYMBOL with the ABI of runtime/abi.h. `remarks`, when given,
// receives what the generator decided about parallel regions (explain()).
std::string generate_cpp(const ir::Function& function, const CompileOptions& options,
                         std::vector<ir::Remark>* remarks = nullptr);

}  // namespace plait::codegen
