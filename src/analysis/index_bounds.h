// Lower bounds of integer expressions, used to prove that an index cannot be
// negative (so it needs no Python-style wrap-around).
#pragma once

#include <map>
#include <optional>

#include "ir/ir.h"

namespace plait::analysis {

// Known lower bounds of variables at a program point.
using LowerBounds = ir::VarMap<int64_t>;

// A value that `e` is never below, when one can be shown from constants,
// array extents (never negative), and the bounds in `known`.
std::optional<int64_t> lower_bound(const ir::Expr& e, const LowerBounds& known);

}  // namespace plait::analysis
