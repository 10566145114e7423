// The work of a fused program, counted in floating-point operations, as a
// sum of products of its operands' extents and stored-entry counts
// ("S.nnz*B.shape[1] + ..."): explain() prints it, the tests pin each
// redundancy removal with it, and the association order of a matrix chain is
// chosen at run time by comparing two programs' costs.
#pragma once

#include <map>
#include <string>

#include "tensor/fusion.h"

namespace plait::tensor {

class Cost {
 public:
  static Cost constant(double c);
  // A quantity known at run time: `name` in formulas, `value` (int64) in the IR.
  static Cost symbol(const std::string& name, ir::Expr value);
  Cost operator+(const Cost& o) const;
  Cost operator*(const Cost& o) const;
  // `this` divided by the symbol: the stored entries per row are S.nnz / S.shape[0].
  Cost per(const std::string& name, ir::Expr value) const;
  // "S.nnz*(2*B.shape[1] + 1)" spelled out as a sum of products, terms in a fixed order.
  std::string to_string() const;
  // Its value at run time, as a float64 expression.
  ir::Expr value(SourceLoc loc) const;

 private:
  using Powers = std::map<std::string, int>;
  std::map<Powers, double> terms_;
  std::map<std::string, ir::Expr> symbols_;
};

// The operations `plan` runs: per statement, the trips of its loops times the
// operations of its body (each factor counted in the loop it is placed in,
// each sum's combine and each accumulation once per trip).
Cost plan_cost(const FusionPlan& plan);
// The operations of one nest of a plan.
Cost nest_cost(const Nest& nest);

}  // namespace plait::tensor
