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
  // Facts of the whole function (they hold wherever they are read). With
  // `scans`, in_range_condition may bound a loaded index by a scan
  // (IndexScan below); before the outermost loop, a scan reads each element
  // the nest may read, once per call.
  explicit IndexFacts(const ir::Stmt& body, bool scans = false);
  ~IndexFacts();

  // The context of the point being looked at, kept by the caller as it walks
  // the function: the loops around it (outermost first), the conditions
  // known to hold (with holds=false: known not to hold) in the statements
  // being walked, and the assignments made before it.
  void push_loop(const ir::For* loop);
  void pop_loop();
  void push_condition(const ir::Expr& cond, bool holds);
  void pop_condition();
  // A statement of a block around the point, walked in order: before
  // walking it, forget_bound_in forgets the values and shapes it may bind
  // again; after it, push_assignment learns those an assignment or an
  // allocation gives (the rest of the block is walked), and pop_assignment
  // forgets them when the block ends.
  void forget_bound_in(const ir::Stmt& st);
  void push_assignment(const ir::Stmt& st);
  void pop_assignment();
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
  // arithmetic against overflow. An index loaded from an array that the nest
  // does not write (the column index of a sparse matrix, `x[col[p]]`) is
  // bounded by the least and greatest value of that array over the positions
  // the nest reads: a scan, whose results the condition reads (scans_read).
  ir::Expr in_range_condition(const ir::Expr& index, const ir::ArrayVar& array, int dim, size_t outer) const;

  // A scan that a condition of in_range_condition reads: before the
  // condition is evaluated, `least` and `greatest` (int64 locals) are set to
  // the least and greatest of 0 and array[first], ..., array[last], as int64
  // (positions outside the array are skipped: the condition then fails by
  // its own test of first and last).
  struct IndexScan {
    ir::Var least, greatest;
    ir::ArrayVar array;
    ir::Expr first, last;
    // The whole array, scanned once at the function's entry (first = 0,
    // last = its extent - 1): an array no statement writes or rebinds, read
    // by a nest inside another loop, whose positions would otherwise be
    // scanned at each step of that loop (a sparse matrix's column indices
    // over the rows a frontier picks).
    bool whole = false;
  };
  // The scans `cond` reads, each once, in the order they were made.
  std::vector<IndexScan> scans_read(const ir::Expr& cond) const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace plait::analysis
