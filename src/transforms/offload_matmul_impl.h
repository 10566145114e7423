// The matchers of the offload_matmul pass (offload_matmul.h) and what they
// share: each recognises one library routine in a loop nest. Private to
// transforms/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include "analysis/var_uses.h"
#include "ir/ir_equal.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::transforms::offload {

using namespace ir;

inline bool is_int(const Expr& e, int64_t value) {
  const IntImm* i = e ? e->as<IntImm>() : nullptr;
  return i && i->value == value;
}

inline bool is_var(const Expr& e, const Var& v) {
  const VarRef* r = e ? e->as<VarRef>() : nullptr;
  return r && r->var == v;
}

// A loop over range(0, end, 1) without reductions of its own.
inline bool counts_from_zero(const For* f) {
  return f && is_int(f->begin, 0) && is_int(f->step, 1) && f->schedule.array_reductions.empty();
}

// The statements of a body, without the scalar declarations
// place_declarations put there (private temporaries of the nest).
inline std::optional<std::vector<Stmt>> statements(const Stmt& body) {
  const Block* b = body->as<Block>();
  std::vector<Stmt> all = b ? b->stmts : std::vector<Stmt>{body};
  std::vector<Stmt> out;
  for (const Stmt& s : all) {
    if (const Declare* d = s->as<Declare>()) {
      if (d->array) return std::nullopt;
      continue;
    }
    out.push_back(s);
  }
  return out;
}

// An expression the host can evaluate once, before the nest, with the same
// value and without raising: scalars not assigned in the nest, constants,
// extents, + - * and float casts (no loads, no division, no calls).
class Invariant : public IRVisitor {
 public:
  explicit Invariant(const VarSet& nest_vars) : nest_vars_(nest_vars) {}
  bool ok = true;
  using IRVisitor::visit;
  void visit(const VarRef* n) override { ok = ok && !nest_vars_.count(n->var.get()); }
  void visit(const Cast* n) override {
    ok = ok && n->type.is_float() && !n->checked;
    IRVisitor::visit(n);
  }
  void visit(const Unary* n) override {
    ok = ok && n->op == UnaryOp::Neg;
    IRVisitor::visit(n);
  }
  void visit(const Binary* n) override {
    ok = ok && (n->op == BinaryOp::Add || n->op == BinaryOp::Sub || n->op == BinaryOp::Mul) && !n->zero_check;
    IRVisitor::visit(n);
  }
  void visit(const Compare*) override { ok = false; }
  void visit(const Logical*) override { ok = false; }
  void visit(const Select*) override { ok = false; }
  void visit(const Call*) override { ok = false; }
  void visit(const Load*) override { ok = false; }

 private:
  const VarSet& nest_vars_;
};

inline Expr as_f64(const Expr& e) {
  return e->type.kind == ScalarKind::Float64 ? e : Cast::make(ScalarType{ScalarKind::Float64, false}, e);
}

inline Expr one() {
  return FloatImm::make(1.0, ScalarType{ScalarKind::Float64, false});
}

// An expression as coef_t * t + coef_c * C[i, j]; a null coefficient is 0.
struct Linear {
  Expr t, c;
};

inline Expr add(const Expr& x, const Expr& y, BinaryOp op) {
  if (!y) return x;
  if (!x) return op == BinaryOp::Add ? y : Unary::make(UnaryOp::Neg, y);
  return Binary::make(op, x, y, x->type);
}

inline Expr scale(const Expr& x, const Expr& by) {
  if (!x) return nullptr;
  const FloatImm* f = x->as<FloatImm>();
  return f && f->value == 1.0 ? by : Binary::make(BinaryOp::Mul, x, by, x->type);
}

class Decomposer {
 public:
  Decomposer(const Var& t, const Store* store, const VarSet& nest_vars) : t_(t), store_(store), nest_vars_(nest_vars) {}

  std::optional<Linear> linear(const Expr& e) const {
    // Every operation on the way to t or C[i, j] is in C's element type, so
    // that its rounding is the library's (a cast of the sum would not be).
    if (e->type.kind != store_->array->type.dtype) return invariant(e) ? constant_term(e) : std::nullopt;
    if (is_var(e, t_)) return Linear{one(), nullptr};
    if (is_c_element(e)) return Linear{nullptr, one()};
    if (invariant(e)) return constant_term(e);
    if (const Unary* u = e->as<Unary>(); u && u->op == UnaryOp::Neg) {
      auto a = linear(u->a);
      if (!a) return std::nullopt;
      return Linear{add(nullptr, a->t, BinaryOp::Sub), add(nullptr, a->c, BinaryOp::Sub)};
    }
    const Binary* b = e->as<Binary>();
    if (!b) return std::nullopt;
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
      auto x = linear(b->a), y = linear(b->b);
      if (!x || !y) return std::nullopt;
      return Linear{add(x->t, y->t, b->op), add(x->c, y->c, b->op)};
    }
    if (b->op == BinaryOp::Mul) {
      const bool left = invariant(b->a);
      if (!left && !invariant(b->b)) return std::nullopt;
      auto x = linear(left ? b->b : b->a);
      if (!x) return std::nullopt;
      const Expr by = as_f64(left ? b->a : b->b);
      return Linear{scale(x->t, by), scale(x->c, by)};
    }
    // x / s is x * (1 / s) up to one rounding (the sum's order changes more);
    // the library declines a 1 / s that is not a normal number.
    if (b->op == BinaryOp::Div && !b->zero_check && invariant(b->b)) {
      auto x = linear(b->a);
      if (!x) return std::nullopt;
      const Expr by = Binary::make(BinaryOp::Div, one(), as_f64(b->b), one()->type);
      return Linear{scale(x->t, by), scale(x->c, by)};
    }
    return std::nullopt;
  }

 private:
  bool invariant(const Expr& e) const {
    Invariant check(nest_vars_);
    check.visit(e);
    return check.ok;
  }
  // A term without t or C[i, j]: only a literal zero fits C = alpha A B + beta C.
  static std::optional<Linear> constant_term(const Expr& e) {
    if (is_zero(e)) return Linear{nullptr, nullptr};
    return std::nullopt;
  }
  bool is_c_element(const Expr& e) const {
    const Load* l = e->as<Load>();
    return l && l->array == store_->array && !l->checked && l->indices.size() == 2 &&
           ir::equal(l->indices[0], store_->indices[0]) && ir::equal(l->indices[1], store_->indices[1]);
  }

  const Var& t_;
  const Store* store_;
  const VarSet& nest_vars_;
};

// One operand load of the product, indexed by (outer, r), or by (r, outer)
// when `r_first`.
struct Operand {
  ArrayVar array;
  bool r_first = false;
};

inline std::optional<Operand> operand(const Expr& e, const Var& outer, const Var& r) {
  const Load* l = e->as<Load>();
  if (!l || l->checked || l->indices.size() != 2) return std::nullopt;
  if (is_var(l->indices[0], outer) && is_var(l->indices[1], r)) return Operand{l->array, false};
  if (is_var(l->indices[0], r) && is_var(l->indices[1], outer)) return Operand{l->array, true};
  return std::nullopt;
}

// The product x * y (a Mul Binary) that the loop `f` sums into `t`: its body
// is `t = t + x * y` (or `t = x * y + t`) and its reductions are
// +-reductions of t only; null otherwise. The product's type is the caller's
// to check.
inline Expr summed_product(const For* f, const Var& t) {
  for (const Reduction& red : f->schedule.reductions)
    if (red.var != t || red.op != ReduceOp::Add) return nullptr;
  auto body = statements(f->body);
  const Assign* acc = body && body->size() == 1 ? (*body)[0]->as<Assign>() : nullptr;
  const Binary* sum = acc && acc->var == t ? acc->value->as<Binary>() : nullptr;
  if (!sum || sum->op != BinaryOp::Add) return nullptr;
  const Expr& product = is_var(sum->a, t) ? sum->b : is_var(sum->b, t) ? sum->a : nullptr;
  const Binary* mul = product ? product->as<Binary>() : nullptr;
  return mul && mul->op == BinaryOp::Mul ? product : nullptr;
}

inline bool reads_any(const Expr& e, const VarSet& vars) {
  for (const VarInfo* v : analysis::uses_of(e).reads)
    if (vars.count(v)) return true;
  return false;
}

// The scalars assigned in the nest replaced by the values last assigned.
class Substitute : public IRMutator {
 public:
  explicit Substitute(const VarMap<Expr>& values) : values_(values) {}
  using IRMutator::visit;
  Expr visit(const VarRef* n, const Expr& self) override {
    auto it = values_.find(n->var.get());
    return it == values_.end() ? self : it->second;
  }

 private:
  const VarMap<Expr>& values_;
};

// An expression without effects that cannot raise: no math.* calls, checked
// casts or loads, or divisions that raise on zero.
class CannotFail : public IRVisitor {
 public:
  bool ok = true;
  using IRVisitor::visit;
  void visit(const Cast* n) override {
    ok = ok && !n->checked;
    IRVisitor::visit(n);
  }
  void visit(const Binary* n) override {
    ok = ok && !n->zero_check;
    IRVisitor::visit(n);
  }
  void visit(const Call* n) override {
    ok = ok && !n->python_math;
    IRVisitor::visit(n);
  }
  void visit(const Load* n) override {
    ok = ok && !n->checked;
    IRVisitor::visit(n);
  }
};

inline bool cannot_fail(const Expr& e) {
  CannotFail check;
  check.visit(e);
  return check.ok;
}

// A condition the host evaluates for each row before the library runs:
// integer arithmetic on extents, invariant scalars and the row variable (no
// loads, nothing that can fail).
class RowCheckable : public IRVisitor {
 public:
  RowCheckable(const VarSet& nest_vars, const VarInfo* row) : nest_vars_(nest_vars), row_(row) {}
  bool ok = true;
  using IRVisitor::visit;
  void visit(const VarRef* n) override { ok = ok && (n->var.get() == row_ || !nest_vars_.count(n->var.get())); }
  void visit(const Cast* n) override {
    ok = ok && !n->checked;
    IRVisitor::visit(n);
  }
  void visit(const Binary* n) override {
    static const std::set<BinaryOp> kExact = {BinaryOp::Add, BinaryOp::Sub,   BinaryOp::Mul,  BinaryOp::Min,
                                              BinaryOp::Max, BinaryOp::PyMin, BinaryOp::PyMax};
    ok = ok && kExact.count(n->op) && !n->zero_check;
    IRVisitor::visit(n);
  }
  void visit(const Call*) override { ok = false; }
  void visit(const Load*) override { ok = false; }

 private:
  const VarSet& nest_vars_;
  const VarInfo* row_;
};

// The conjunction of `conditions`, a row condition of `row`, without those
// that hold trivially (`x <= x`, `x == x`, on which the host compiler
// warns): null when none is left, nullopt when one is not row-checkable.
inline std::optional<Expr> row_condition(const std::vector<Expr>& conditions, const VarSet& nest_vars,
                                         const VarInfo* row) {
  Expr all;
  for (const Expr& c : conditions) {
    if (const Compare* cmp = c->as<Compare>();
        cmp && (cmp->op == CompareOp::LE || cmp->op == CompareOp::EQ) && ir::equal(cmp->a, cmp->b))
      continue;
    RowCheckable check(nest_vars, row);
    check.visit(c);
    if (!check.ok) return std::nullopt;
    all = all ? Logical::make(LogicalOp::And, all, c) : c;
  }
  return all;
}

// A loop variable of a loop from 0 is never negative: its Python
// wrap-around `(v + n) if (v < 0) else v` is v.
inline Expr unwrapped(const Expr& e) {
  const Select* s = e->as<Select>();
  const Compare* c = s ? s->cond->as<Compare>() : nullptr;
  const VarRef* v = s ? s->f->as<VarRef>() : nullptr;
  if (c && v && c->op == CompareOp::LT && is_var(c->a, v->var) && is_int(c->b, 0)) return s->f;
  return e;
}

// What a slice's extent or start computes once the clamps that keep it
// within the array are taken off (min(x, A.shape[d]), max(x, 0), the
// branch for negative x): the row loop's own bounds then say that the
// clamps change nothing, which the row condition checks.
inline Expr unclamped(const Expr& e) {
  if (const Select* s = e->as<Select>()) {
    const Compare* c = s->cond->as<Compare>();
    if (c && c->op == CompareOp::LT && is_int(c->b, 0)) return unclamped(s->f);
  }
  if (const Binary* b = e->as<Binary>()) {
    const bool min = b->op == BinaryOp::Min || b->op == BinaryOp::PyMin;
    const bool max = b->op == BinaryOp::Max || b->op == BinaryOp::PyMax;
    if (max && is_int(b->b, 0)) return unclamped(b->a);
    if (max && is_int(b->a, 0)) return unclamped(b->b);
    if (min && b->b->as<ArrayDim>()) return unclamped(b->a);
    if (min && b->a->as<ArrayDim>()) return unclamped(b->b);
  }
  return e;
}

// The version of a slice statement that runs when nothing broadcasts: the
// lowering tests extents at run time and branches to copies of the loop
// (`if broadcast {...} else {...}`); the last `else` is the plain loop.
// Records the scalars assigned on the way and the conditions under which
// the loops take this path.
struct Version {
  VarMap<Expr> values;
  std::vector<Expr> conditions;
  const For* loop = nullptr;  // the first loop on the path
  bool rest_follows = false;  // statements follow the loop
};

inline bool plain_version(const Stmt& body, Version& v) {
  const Block* b = body->as<Block>();
  std::vector<Stmt> stmts;
  for (const Stmt& s : b ? b->stmts : std::vector<Stmt>{body})
    if (!s->as<Declare>()) stmts.push_back(s);
  for (size_t n = 0; n < stmts.size(); ++n) {
    const Stmt& s = stmts[n];
    const bool last = n + 1 == stmts.size();
    if (const Assign* a = s->as<Assign>()) {
      if (!cannot_fail(a->value)) return false;
      v.values[a->var.get()] = Substitute(v.values).mutate(a->value);
    } else if (const Assert* a = s->as<Assert>()) {
      v.conditions.push_back(Substitute(v.values).mutate(a->cond));
    } else if (const If* i = s->as<If>(); i && last && i->else_case) {
      v.conditions.push_back(Unary::make(UnaryOp::Not, Substitute(v.values).mutate(i->cond)));
      return plain_version(i->else_case, v);
    } else if (const For* f = s->as<For>()) {
      v.loop = f;
      v.rest_follows = !last;
      return true;
    } else {
      return false;
    }
  }
  return false;
}

// One product of a triangular update: coefficient * X[i, k] * Y[col, k]
// (X[k, i], Y[k, col] for transposed operands).
struct Term {
  Operand row, column;
  Expr coefficient;  // float64
};

// What the matchers of one loop nest share: the nest (its outer loop over
// the rows i, the variables it writes, the conditions of the branches it is
// in), and what they report: whether they found their pattern, why it does
// not fit, the remark of one that does.
class NestMatcher {
 public:
  NestMatcher(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding)
      : fn_(fn), fi_(fi), self_(self), holding_(holding) {
    for (const VarInfo* v : analysis::uses_of(self).writes) nest_vars_.insert(v);
  }

  std::string why, remark;
  bool found = false;

 protected:
  // Whether the loop over the rows counts from zero without reductions and
  // runs in parallel, or serially where `parallel` is false.
  bool row_loop_is(bool parallel) const {
    return is_parallel(fi_->schedule.kind) == parallel && counts_from_zero(fi_) && fi_->schedule.reductions.empty();
  }

  std::nullptr_t decline(const std::string& reason) {
    why = reason;
    return nullptr;
  }

  static Expr extent(const Expr& e) { return e->type.kind == ScalarKind::Int64 ? e : Cast::make(ScalarType::i64(), e); }
  static Expr equals(const Expr& x, const Expr& y) { return Compare::make(CompareOp::EQ, extent(x), extent(y)); }
  Expr row() const { return VarRef::make(fi_->var); }

  // Whether a path needs false a condition that holds where the nest runs
  // (that of an enclosing `then` branch): the lowering's copying version of
  // a loop over overlapping arrays runs under its overlap test and tests it
  // again inside, so its plain path never runs there.
  bool never_runs(const std::vector<Expr>& conditions) const {
    for (const Expr& c : conditions) {
      const Unary* u = c->as<Unary>();
      if (!u || u->op != UnaryOp::Not) continue;
      for (const Expr& h : holding_)
        if (ir::equal(u->a, h)) return true;
    }
    return false;
  }

  // An unchecked load of the 2-D `array` at the indices that `store` writes.
  static bool element_at(const Expr& e, const ArrayVar& array, const Store* store) {
    const Load* l = e->as<Load>();
    return l && l->array == array && !l->checked && l->indices.size() == 2 &&
           ir::equal(l->indices[0], store->indices[0]) && ir::equal(l->indices[1], store->indices[1]);
  }

  const Function& fn_;
  const For* fi_;
  const Stmt& self_;
  const std::vector<Expr>& holding_;  // conditions of the enclosing `then` branches
  VarSet nest_vars_;
};

// What a matcher made of a nest: the statement calling the library (null
// when it declined), the remark for explain(), and, when the nest has the
// routine's shape but does not fit, why.
struct LibraryMatch {
  Stmt stmt;
  std::string remark, why;
  bool found = false;
};

// Triangular updates and products (syrk, syr2k, covariance; trmm in place):
// offload_triangles.cpp.
LibraryMatch match_triangle(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding);
LibraryMatch match_in_place(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding);
// Triangular solves (trisolv, cholesky's rows): offload_solve.cpp.
LibraryMatch match_solve(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding);
// Symmetric products (symm): offload_symm.cpp.
LibraryMatch match_symmetric(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding);

}  // namespace plait::transforms::offload
