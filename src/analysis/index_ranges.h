// Analysis: where array indices lie.
//
// Proves that an index is within its array's extent at a point of the
// function, from the loops around the point (an index derived from `range`
// over a dimension, plus or minus constants), scalars assigned once from
// extents, arrays allocated once, and the equalities of extents that the
// enclosing `if` conditions establish (the array-expression lowering's
// broadcast and overlap flags). Where no proof is found, it writes the
// condition, tested once before a loop nest runs, under which the index stays
// in range at every iteration of the nest: the least and greatest value of an
// index affine in the loop variables, with loop bounds that do not change
// inside the nest. transforms/insert_bounds_checks uses both.
#pragma once

#include <memory>
#include <vector>

#include "ir/ir.h"

namespace plait::analysis {

class IndexFacts {
 public:
  // Facts of the whole function (they hold wherever they are read).
  explicit IndexFacts(const ir::Stmt& body);
  ~IndexFacts();

  // The context of the point being looked at, kept by the caller as it walks
  // the function: the loops around it (outermost first) and the conditions
  // known to hold (with holds=false: known not to hold) in the statements
  // being walked.
  void push_loop(const ir::For* loop);
  void pop_loop();
  void push_condition(const ir::Expr& cond, bool holds);
  void pop_condition();
  size_t depth() const;
  const ir::For* loop(size_t i) const;

  // Whether 0 <= index < array.shape[dim] at the current point, for every
  // value the variables can take there.
  bool proves_in_range(const ir::Expr& index, const ir::ArrayVar& array, int dim) const;

  // A condition to evaluate just before loop(outer) starts, under which
  // 0 <= index < array.shape[dim] at the current point in every iteration of
  // loops outer..depth()-1; null when none can be written (a bound or the
  // extent changes inside those loops, or the index is not affine in their
  // variables). The condition reads only values fixed when loop(outer)
  // starts, and loads only those that loop's own bounds load; it guards its
  // arithmetic against overflow.
  ir::Expr in_range_condition(const ir::Expr& index, const ir::ArrayVar& array, int dim, size_t outer) const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace plait::analysis
