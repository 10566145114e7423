// The loops of one statement, outermost first: the statement's index tree
// (TACO's concrete index notation, ReACT's index tree for one statement).
// A variable is iterated over the positions of a sparse operand's compressed
// level when one of the statement's accesses stores it there (its parent
// level's variable bound by an outer loop), else over its dense extent.
//
// The order: the levels of the sparse accesses in storage order (rows before
// their columns), then the output's remaining variables but its last, then
// the top-level sum's variables, then the output's last variable (so that
// SpMM runs i, k, j with j, the unit-stride dimension, innermost). The sum
// variables that end the order are summed in a scalar inside the innermost
// output loop (`inner_sums`); one before an output variable accumulates into
// the output (`accumulates`).
#pragma once

#include <string>
#include <vector>

#include "tensor/index_notation.h"

namespace plait::tensor {

// A statement the compiler cannot lower, with the reason: the front end turns
// it into a CompileError at `loc`.
struct Refusal {
  SourceLoc loc;
  std::string message;
};

struct Loop {
  IndexVar var;
  bool reduction = false;  // var is not among the output's
  // Dense: 0 <= var < extent. Positions: the positions of level `level` of
  // `tensor` under its parent level's position; var is the coordinate there.
  ir::Expr extent;
  std::string extent_name;  // for cost formulas ("X.shape[1]")
  TensorVarPtr tensor;
  int level = -1;
  // Merged (a statement that assembles its pattern, assembles()): the
  // coordinates stored in the last level of any of these tensors, in order,
  // one tensor per pattern; `needed` are those without whose entry the value
  // is zero (the merge ends when one of them does: their intersection; none:
  // the union).
  std::vector<TensorVarPtr> merged, needed;
  bool positions() const { return tensor != nullptr; }
};

struct LoopOrder {
  std::vector<Loop> loops;
  IndexExpr body;            // the right-hand side without the sums that became loops
  bool accumulates = false;  // a sum variable comes before an output variable
  // A dense output is not written everywhere: a loop over one of its
  // variables iterates stored positions (its other elements are zero).
  bool writes_part = false;
  // The statement assembles its output's pattern (assembles()): its last
  // loop merges its operands' patterns.
  bool assembles = false;
  // ... as the product of two sparse matrices (SpGEMM, sum_k A(i,k) * B(k,j)):
  // the loops are i, k (stored in A), j (stored in B), and a row's result
  // merges B's rows at the columns A stores in it (an operand read as CSC,
  // a transpose, is copied into CSR first).
  bool sparse_product = false;
  // Whether the output must start at zero.
  bool zero_output() const { return accumulates || writes_part; }
};

// The extent of `v` in e (from the first access that reads it in a dimension
// that cannot broadcast), or null;
// `name` gets its name for cost formulas.
ir::Expr extent_of(const IndexExpr& e, const IndexVar& v, std::string* name = nullptr);

// A product's factors, each with the loop (an index into `order.loops`,
// from `first` on) inside which it is computed: the outermost loop after
// which every variable it reads is bound (loop-invariant code is computed
// once per iteration of the loops it depends on).
std::vector<std::pair<IndexExpr, size_t>> placed_factors(const LoopOrder& order, size_t first);

// Whether s makes its sparse output's pattern (TensorVar::assembled): S + T
// is stored where S or T is, S.multiply(T) where both are, zeros dropped.
bool assembles(const Statement& s);

// Throws Refusal for a statement outside what the level iterates: two
// different sparse patterns over one variable (unless the statement
// assembles its output's pattern from theirs), a compressed level whose
// variable is bound before its parent's.
// With `sums_inside`, every sum is a scalar inside the output's loops (the
// order of a dense product that the BLAS library may take,
// transforms/offload_matmul).
LoopOrder loop_order(const Statement& s, bool sums_inside = false);

// How a compressed level of an access in `body` can iterate `v` when the
// variables in `bound` are bound: the access's tensor and level, or a null
// tensor when no access stores v in a compressed level (v is then dense).
struct LevelChoice {
  TensorVarPtr tensor;
  int level = -1;
};
LevelChoice compressed_level(const IndexExpr& body, const IndexVar& v, const std::vector<IndexVar>& bound,
                             SourceLoc loc);

// "i, k (stored in A), j", with the statement's display names.
std::string to_string(const LoopOrder& order, const Statement& s);

}  // namespace plait::tensor
