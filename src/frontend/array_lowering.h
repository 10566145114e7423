// Helpers the parts of the lowering of array expressions share:
// lower_array_exprs.cpp, lower_reductions.cpp, lower_loop_nests.cpp and the
// array calls of lower_calls.cpp. Private to frontend/.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include "analysis/index_bounds.h"
#include "analysis/var_uses.h"
#include "frontend/lowerer.h"
#include "ir/ir_equal.h"
#include "ir/ir_visitor.h"
#include "runtime/abi.h"

namespace plait::lowering {

inline Expr int_imm(int64_t v, SourceLoc loc) {
  return ir::IntImm::make(v, ScalarType::py_int(), loc);
}

inline bool is_const(const Expr& e, int64_t v) {
  auto i = e->as<ir::IntImm>();
  return i && i->value == v;
}

// Equality of extents, so that equal extents need no run-time broadcast
// check. Narrower than plain ir::equal, and kept so: it looks only into the
// integer arithmetic extents are made of (any other node, a broadcast's
// select among them, is equal only to itself), and it compares values, not
// how they are typed or checked (`n + 1` of a Python int and of an int64).
inline bool extent_arithmetic(ir::NodeKind k) {
  switch (k) {
    case ir::NodeKind::IntImm:
    case ir::NodeKind::ArrayDim:
    case ir::NodeKind::VarRef:
    case ir::NodeKind::Binary:
    case ir::NodeKind::Cast:
      return true;
    default:
      return false;
  }
}
inline bool same_expr(const Expr& a, const Expr& b) {
  ir::EqualOptions extents;
  extents.looks_into = extent_arithmetic;
  extents.types = false;
  extents.checks = false;
  return ir::equal(a, b, extents);
}

inline Expr add(const Expr& a, const Expr& b, SourceLoc loc) {
  if (is_const(b, 0)) return a;
  if (is_const(a, 0)) return b;
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(x->value + y->value, loc);
  return ir::Binary::make(ir::BinaryOp::Add, a, b, ScalarType::py_int(), false, loc);
}
inline Expr sub(const Expr& a, const Expr& b, SourceLoc loc) {
  if (is_const(b, 0)) return a;
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(x->value - y->value, loc);
  return ir::Binary::make(ir::BinaryOp::Sub, a, b, ScalarType::py_int(), false, loc);
}
inline Expr mul(const Expr& a, const Expr& b, SourceLoc loc) {
  if (is_const(b, 1)) return a;
  if (is_const(a, 1)) return b;
  return ir::Binary::make(ir::BinaryOp::Mul, a, b, ScalarType::py_int(), false, loc);
}
inline Expr imax(const Expr& a, const Expr& b, SourceLoc loc) {
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(std::max(x->value, y->value), loc);
  return ir::Binary::make(ir::BinaryOp::PyMax, a, b, ScalarType::py_int(), false, loc);
}
inline Expr imin(const Expr& a, const Expr& b, SourceLoc loc) {
  if (auto x = a->as<ir::IntImm>())
    if (auto y = b->as<ir::IntImm>()) return int_imm(std::min(x->value, y->value), loc);
  return ir::Binary::make(ir::BinaryOp::PyMin, a, b, ScalarType::py_int(), false, loc);
}
inline Expr floordiv(const Expr& a, int64_t b, SourceLoc loc) {
  if (b == 1) return a;
  return ir::Binary::make(ir::BinaryOp::FloorDiv, a, int_imm(b, loc), ScalarType::py_int(), false, loc);
}
inline Expr lt(const Expr& a, const Expr& b, SourceLoc loc) {
  return ir::Compare::make(ir::CompareOp::LT, a, b, loc);
}

// `for var in range(extent): body`, scheduled as `kind`.
inline Stmt loop(const ir::Var& var, const Expr& extent, std::vector<Stmt> body, ir::LoopKind kind, SourceLoc loc) {
  ir::LoopSchedule sched;
  sched.kind = kind;
  return ir::For::make(var, int_imm(0, loc), extent, int_imm(1, loc), ir::Block::make(std::move(body), loc), sched,
                       loc);
}

// Whether syntax names every element of an array in order: `A`, `A[:]`,
// `A[:, :]` (a bare name or only bare full slices).
inline bool whole_array_syntax(const ast::Expr* n) {
  if (!n) return false;
  if (n->as<ast::Name>()) return true;
  auto s = n->as<ast::Subscript>();
  if (!s || !s->value->as<ast::Name>()) return false;
  std::vector<const ast::Expr*> parts;
  if (auto t = s->index->as<ast::Tuple>()) {
    for (const auto& e : t->elts) parts.push_back(e.get());
  } else {
    parts.push_back(s->index.get());
  }
  for (const ast::Expr* p : parts) {
    auto sl = p->as<ast::Slice>();
    if (!sl || sl->lower || sl->upper || sl->step) return false;
  }
  return true;
}

// Whether a read and a target name the same elements of their arrays when
// the two arrays are one view: the same subscripts after their base names
// (`a[1:, k]` and `b[1:, k]`), or both the whole array.
inline bool same_subscripts(const ast::Expr* read, const ast::Expr* target) {
  if (whole_array_syntax(read) && whole_array_syntax(target)) return true;
  auto r = read->as<ast::Subscript>();
  auto t = target->as<ast::Subscript>();
  if (!r || !t) return read->as<ast::Name>() && target->as<ast::Name>();
  return same_tree(r->index.get(), t->index.get()) && same_subscripts(r->value.get(), t->value.get());
}

// Python's normalisation of one slice bound against extent n.
inline Expr slice_bound(const Expr& x, const Expr& n, bool negative_step, SourceLoc loc) {
  Expr low = negative_step ? int_imm(-1, loc) : int_imm(0, loc);
  Expr high = negative_step ? sub(n, int_imm(1, loc), loc) : n;
  if (auto c = x->as<ir::IntImm>()) {
    if (c->value >= 0) return imin(x, high, loc);
    return imax(add(n, x, loc), low, loc);
  }
  Expr wrapped = imax(add(x, n, loc), low, loc);
  return ir::Select::make(lt(x, int_imm(0, loc), loc), wrapped, imin(x, high, loc), loc);
}

// The identity of a reduction, in the accumulator's type.
inline Expr identity(const std::string& name, ScalarType t, SourceLoc loc) {
  if (t.is_bool() && (name == "sum" || name == "mean" || name == "dot" || name == "prod"))
    return ir::BoolImm::make(name == "prod", loc);
  if (name == "sum" || name == "mean" || name == "dot")
    return t.is_float() ? ir::FloatImm::make(0.0, t, loc) : ir::IntImm::make(0, t, loc);
  if (name == "prod") return t.is_float() ? ir::FloatImm::make(1.0, t, loc) : ir::IntImm::make(1, t, loc);
  bool is_max = name == "max" || name == "argmax";
  if (t.is_float()) return ir::FloatImm::make(is_max ? -INFINITY : INFINITY, t, loc);
  if (t.is_bool()) return ir::BoolImm::make(!is_max, loc);
  // uint64's largest value is held as its bit pattern, -1.
  const int64_t hi = t.kind == ScalarKind::UInt64 ? -1 : int_max(t.kind);
  return ir::IntImm::make(is_max ? int_min(t.kind) : hi, t, loc);
}

// The number of elements of a shape, for choosing between temporaries of
// different shapes when compiling: an extent known only at run time counts
// as 1024.
inline double estimated_elements(const std::vector<Expr>& shape) {
  double n = 1;
  for (const auto& e : shape) {
    auto c = e->as<ir::IntImm>();
    n *= c ? static_cast<double>(std::max<int64_t>(c->value, 0)) : 1024.0;
  }
  return n;
}

// Makes `view`, a view of one array, readable from a snapshot (see
// ViewSnapshot): its reads of the array go through the new snapshot, unless
// they already go through a view of no more elements (`path[:, k]` under
// `path[:, k][:, None]`).
inline TensorPtr snapshot_able(std::shared_ptr<Tensor> view, const ast::Expr* node, SourceLoc loc) {
  auto plain = std::make_shared<Tensor>(*view);
  plain->reads.clear();  // the plain view only ever fills a fresh temporary
  auto snap = std::make_shared<ViewSnapshot>();
  snap->view = plain;
  snap->node = node;
  view->element = [snap, loc](const std::vector<Expr>& idx, Sink& sink) {
    if (snap->copy) return ir::Load::make(snap->copy, idx, false, loc);
    return snap->view->element(idx, sink);
  };
  for (auto& r : view->reads) {
    if (r.array != view->array) continue;
    r.node = node;
    if (!r.via || estimated_elements(view->shape) < estimated_elements(r.via->view->shape)) r.via = snap;
  }
  return view;
}

// The index into an operand at a dimension with a broadcast flag.
inline Expr broadcast_index(const ir::Var& flag, const Expr& index, SourceLoc loc) {
  if (!flag) return index;
  return ir::Select::make(ir::VarRef::make(flag, loc), int_imm(0, loc), index, loc);
}

// Whether `axis` of `view` is a whole dimension of its array, read at the
// view's own index: the array's bounds are the view's there.
inline bool whole_array_axis(const TensorPtr& view, size_t axis) {
  if (!view->array || !view->array_index) return false;
  auto dim = view->shape[axis]->as<ir::ArrayDim>();
  if (!dim || dim->array != view->array) return false;
  std::vector<Expr> probes;
  for (size_t d = 0; d < view->rank(); ++d) {
    auto v = std::make_shared<ir::VarInfo>();
    v->name = "_probe";
    v->type = ScalarType::py_int();
    probes.push_back(ir::VarRef::make(v));
  }
  std::vector<Expr> at = view->array_index(probes);
  return dim->dim < static_cast<int>(at.size()) && at[dim->dim] == probes[axis];
}

}  // namespace plait::lowering
