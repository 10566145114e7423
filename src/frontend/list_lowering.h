// Helpers shared by the lowering of lists (lower_lists.cpp) and of their
// methods and heapq (lower_list_calls.cpp): IR for int arithmetic, a list's
// elements as its items, and Python's `<` between elements.
#pragma once

#include <string>
#include <vector>

#include "frontend/lowerer.h"

namespace plait::lowering::lists {

inline Expr int_imm(int64_t v, SourceLoc l) {
  return ir::IntImm::make(v, ScalarType::py_int(), l);
}
inline Expr var(const ir::Var& v, SourceLoc l) {
  return ir::VarRef::make(v, l);
}
inline Expr add(Expr a, Expr b, SourceLoc l) {
  return ir::Binary::make(ir::BinaryOp::Add, std::move(a), std::move(b), ScalarType::py_int(), false, l);
}
inline Expr sub(Expr a, Expr b, SourceLoc l) {
  return ir::Binary::make(ir::BinaryOp::Sub, std::move(a), std::move(b), ScalarType::py_int(), false, l);
}
inline Expr less(Expr a, Expr b, SourceLoc l) {
  return ir::Compare::make(ir::CompareOp::LT, std::move(a), std::move(b), l);
}
inline Stmt block(std::vector<Stmt> s, SourceLoc l) {
  return ir::Block::make(std::move(s), l);
}
inline ScalarType column_type(ScalarType t) {
  return ScalarType{t.kind, false};
}

// Python's `a < b` for two elements held item by item (tuples compare
// lexicographically: the first items that differ decide; NaN differs from
// everything and is less than nothing).
inline Expr element_less(const std::vector<Expr>& a, const std::vector<Expr>& b, SourceLoc l) {
  Expr out = ir::Compare::make(ir::CompareOp::LT, a.back(), b.back(), l);
  for (size_t k = a.size() - 1; k-- > 0;) {
    Expr differ = ir::Compare::make(ir::CompareOp::NE, a[k], b[k], l);
    out = ir::Select::make(differ, ir::Compare::make(ir::CompareOp::LT, a[k], b[k], l), out, l);
  }
  return out;
}

inline std::string describe_list(const ListType& t) {
  if (!t.tuple) return describe(t.items[0]);
  std::string s = "tuples of (";
  for (size_t k = 0; k < t.items.size(); ++k) s += (k ? ", " : "") + describe(t.items[k]);
  return s + ")";
}

// The items of element `at` of a list (an index known to be in range).
inline std::vector<Expr> load_element(const ListParts& l, const Expr& at, SourceLoc loc) {
  std::vector<Expr> out;
  for (const ir::ArrayVar& c : l.columns) out.push_back(ir::Load::make(c, {at}, false, loc));
  return out;
}

inline std::vector<Stmt> store_element(const ListParts& l, const Expr& at, const std::vector<Expr>& items,
                                       SourceLoc loc) {
  std::vector<Stmt> out;
  for (size_t k = 0; k < items.size(); ++k) out.push_back(ir::Store::make(l.columns[k], {at}, items[k], false, loc));
  return out;
}

// Index k of a list of `length` elements, negative ones counted from the end.
inline Expr wrapped(const Expr& k, const Expr& length, SourceLoc loc) {
  if (auto c = k->as<ir::IntImm>(); c && c->value >= 0) return k;
  return ir::Select::make(less(k, int_imm(0, loc), loc), add(k, length, loc), k, loc);
}

inline Expr in_range(const Expr& k, const Expr& length, SourceLoc loc) {
  Expr low = ir::Compare::make(ir::CompareOp::GE, k, int_imm(0, loc), loc);
  return ir::Logical::make(ir::LogicalOp::And, low, less(k, length, loc), loc);
}

}  // namespace plait::lowering::lists
