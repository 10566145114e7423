// Lowering of a fused Program (fusion.h) into the loop IR: the nests of the
// plan as For loops over dense extents and over the positions of compressed
// levels, temporaries as arrays (whole, or per iteration of the shared
// loops) or scalars, and the statements' values as IR expressions. Both back
// ends compile the result as they compile the loop language: a nest's outer
// loop is parallel when its iterations write disjoint outputs; on the CPU the
// rows of a sparse operand run in chunks of equal work, on the GPU each row is
// a worker.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "support/compile_options.h"
#include "tensor/fusion.h"

namespace plait::tensor {

// Fresh names for the variables and arrays the lowering makes.
using NameMaker = std::function<std::string(const std::string& hint)>;

// The statements that run a program as its `plan` says. On return the
// program's result has its storage (values, and for a sparse result its pattern's pos
// and crd). How rows are scheduled goes to `remarks`, for explain(). Throws Refusal.
std::vector<ir::Stmt> lower_to_loops(const FusionPlan& plan, const NameMaker& names, Target target, SourceLoc loc,
                                     Remarks& remarks);

}  // namespace plait::tensor
