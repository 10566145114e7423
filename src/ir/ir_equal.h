// Structural equality of expressions: whether two trees compute the same
// value, asked by the passes that merge, fold or pair what they find twice.
#pragma once

#include <functional>

#include "ir/ir.h"

namespace plait::ir {

// What ir::equal compares. The default is the whole tree: node kinds, types,
// operators, run-time checks, literal values (a float by its bits' meaning:
// -0.0 is not 0.0, NaN is NaN), variables and arrays.
struct EqualOptions {
  // A variable of the left tree and one of the right that stand for each
  // other (the variables of two loops, compared iteration by iteration);
  // either is then equal to nothing else.
  const VarInfo* a_var = nullptr;
  const VarInfo* b_var = nullptr;
  // When set, two arrays are equal when it maps them to the same array (the
  // names a body binds to one array).
  std::function<const ArrayInfo*(const ArrayInfo*)> array_of;
  // When set, only the node kinds it accepts are compared part by part; a
  // node of another kind is equal only to itself.
  bool (*looks_into)(NodeKind) = nullptr;
  // Whether the types of nodes count (a cast's target type always does), and
  // whether run-time checks count (Cast::checked, Binary::zero_check,
  // Load::checked).
  bool types = true;
  bool checks = true;
};

// Whether `a` and `b` are the same tree, as `options` says. Null is equal
// only to null. A node is equal to itself unless a_var and b_var differ.
bool equal(const ExprNode* a, const ExprNode* b, const EqualOptions& options = {});
inline bool equal(const Expr& a, const Expr& b, const EqualOptions& options = {}) {
  return equal(a.get(), b.get(), options);
}

}  // namespace plait::ir
