// Pass: matrix products for the target's BLAS library (see offload_matmul.h).
#include "transforms/offload_matmul.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

using namespace ir;

bool is_int(const Expr& e, int64_t value) {
  const IntImm* i = e ? e->as<IntImm>() : nullptr;
  return i && i->value == value;
}

bool is_zero(const Expr& e) {
  const FloatImm* f = e->as<FloatImm>();
  return (f && f->value == 0.0) || is_int(e, 0);
}

bool is_var(const Expr& e, const Var& v) {
  const VarRef* r = e ? e->as<VarRef>() : nullptr;
  return r && r->var == v;
}

// A loop over range(0, end, 1) without reductions of its own.
bool counts_from_zero(const For* f) {
  return f && is_int(f->begin, 0) && is_int(f->step, 1) && f->schedule.array_reductions.empty();
}

// The statements of a body, without the scalar declarations
// place_declarations put there (private temporaries of the nest).
std::optional<std::vector<Stmt>> statements(const Stmt& body) {
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

Expr as_f64(const Expr& e) {
  return e->type.kind == ScalarKind::Float64 ? e : Cast::make(ScalarType{ScalarKind::Float64, false}, e);
}

Expr one() {
  return FloatImm::make(1.0, ScalarType{ScalarKind::Float64, false});
}

// Two expressions that compute the same value: the same text over the same
// variables and arrays.
bool same(const Expr& x, const Expr& y) {
  if (to_string(x) != to_string(y)) return false;
  const analysis::VarUses ux = analysis::uses_of(x), uy = analysis::uses_of(y);
  return ux.reads == uy.reads && ux.arrays == uy.arrays;
}

// An expression as coef_t * t + coef_c * C[i, j]; a null coefficient is 0.
struct Linear {
  Expr t, c;
};

Expr add(const Expr& x, const Expr& y, BinaryOp op) {
  if (!y) return x;
  if (!x) return op == BinaryOp::Add ? y : Unary::make(UnaryOp::Neg, y);
  return Binary::make(op, x, y, x->type);
}

Expr scale(const Expr& x, const Expr& by) {
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
           same(l->indices[0], store_->indices[0]) && same(l->indices[1], store_->indices[1]);
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

std::optional<Operand> operand(const Expr& e, const Var& outer, const Var& r) {
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
Expr summed_product(const For* f, const Var& t) {
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

bool reads_any(const Expr& e, const VarSet& vars) {
  for (const VarInfo* v : analysis::uses_of(e).reads)
    if (vars.count(v)) return true;
  return false;
}

// ---------------------------------------------------------------- triangles

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

bool cannot_fail(const Expr& e) {
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
std::optional<Expr> row_condition(const std::vector<Expr>& conditions, const VarSet& nest_vars, const VarInfo* row) {
  Expr all;
  for (const Expr& c : conditions) {
    if (const Compare* cmp = c->as<Compare>();
        cmp && (cmp->op == CompareOp::LE || cmp->op == CompareOp::EQ) && same(cmp->a, cmp->b))
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
Expr unwrapped(const Expr& e) {
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
Expr unclamped(const Expr& e) {
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

bool plain_version(const Stmt& body, Version& v) {
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
        if (same(u->a, h)) return true;
    }
    return false;
  }

  // An unchecked load of the 2-D `array` at the indices that `store` writes.
  static bool element_at(const Expr& e, const ArrayVar& array, const Store* store) {
    const Load* l = e->as<Load>();
    return l && l->array == array && !l->checked && l->indices.size() == 2 && same(l->indices[0], store->indices[0]) &&
           same(l->indices[1], store->indices[1]);
  }

  const Function& fn_;
  const For* fi_;
  const Stmt& self_;
  const std::vector<Expr>& holding_;  // conditions of the enclosing `then` branches
  VarSet nest_vars_;
};

// Matches the computation of a triangle of C in a parallel loop over its
// rows i, recording why it does not fit. Forms (match_update and
// match_dot_products say more):
//
//   parallel for i in range(n):                  # syrk, syr2k
//     C[i, :i + 1] *= beta                       # optional
//     for k in range(K):
//       C[i, :i + 1] += alpha * A[i, k] * B[:i + 1, k]  (+ one more product)
//
//   parallel for i in range(n):                  # covariance
//     C[i, i:n] = A[:, i] @ B[:, i:n] / s
//     <statements run after every row's product>
//
// where each slice statement may come in the lowering's broadcast versions
// (the plain one is matched; the row condition requires that it runs).
// The triangle is lower when the column slice starts at 0 and ends at i + 1,
// upper when it starts at i and ends at n.
class TriangleMatcher : public NestMatcher {
 public:
  using NestMatcher::NestMatcher;

  Stmt match() {
    if (!row_loop_is(true)) return nullptr;
    Version version;
    if (plain_version(fi_->body, version) && version.loop) {
      auto inner = statements(version.loop->body);
      if (inner && inner->size() == 3 && (*inner)[0]->as<Assign>() && (*inner)[1]->as<For>() &&
          (*inner)[2]->as<Store>())
        return match_dot_products(version);
    }
    return match_update();
  }

 private:
  // parallel for i:
  //   C[i, :i + 1] *= beta                                  # optional
  //   for k: C[i, :i + 1] += alpha * A[i, k] * B[:i + 1, k] (+ ...)
  Stmt match_update() {
    auto outer = statements(fi_->body);
    if (!outer || outer->empty() || outer->size() > 2) return nullptr;
    const For* fk = outer->back()->as<For>();
    if (!counts_from_zero(fk) || is_parallel(fk->schedule.kind) || !fk->schedule.reductions.empty()) return nullptr;
    Version version;
    if (!plain_version(fk->body, version) || version.rest_follows || !counts_from_zero(version.loop)) return nullptr;
    const For* fj = version.loop;
    auto inner = statements(fj->body);
    const Store* store = inner && inner->size() == 1 ? (*inner)[0]->as<Store>() : nullptr;
    if (!store || !set_c(store)) return nullptr;
    k_ = fk->var;
    conditions_ = version.conditions;
    if (store->checked) return decline("its indices are checked (boundscheck)");
    if (!columns(fj, store)) return nullptr;
    // C[i, col] = C[i, col] +/- (sum of products)
    const Binary* update = store->value->as<Binary>();
    const bool subtracts = update && update->op == BinaryOp::Sub;
    if (!update || (update->op != BinaryOp::Add && !subtracts) || update->type.kind != dtype_)
      return decline("the update is not C[i, j] + (a sum of products)");
    const bool c_first = element_at(update->a, c_, store);
    if (!c_first && (subtracts || !element_at(update->b, c_, store)))
      return decline("the update is not C[i, j] + (a sum of products)");
    const Expr sum = Substitute(version.values).mutate(c_first ? update->b : update->a);
    std::vector<Term> terms;
    if (!collect_terms(sum, subtracts, fj->var, terms)) return nullptr;
    if (terms.empty() || terms.size() > 2) return decline("the update is not a sum of one or two products");
    Expr beta = one();
    if (outer->size() == 2 && !(beta = scaling((*outer)[0]->as<For>()))) return nullptr;
    return finish(terms, fk->end, beta, self_, "");
  }

  // parallel for i:                                         # covariance
  //   for j in <the triangle's columns>:
  //     t = 0
  //     for k: t += A[k, i] * B[k, j]
  //     C[i, j] = alpha * t (+ beta * C[i, j])
  //   <more statements>                                     # run after it
  Stmt match_dot_products(const Version& version) {
    const For* fj = version.loop;
    if (!counts_from_zero(fj) || is_parallel(fj->schedule.kind) || !fj->schedule.reductions.empty()) return nullptr;
    auto inner = statements(fj->body);
    const Assign* init = (*inner)[0]->as<Assign>();
    const For* fr = (*inner)[1]->as<For>();
    const Store* store = (*inner)[2]->as<Store>();
    if (!init || !fr || !store || !counts_from_zero(fr) || !set_c(store)) return nullptr;
    const Var& t = init->var;
    if (t->type.kind != dtype_ || !is_zero(init->value)) return nullptr;
    const Expr product = summed_product(fr, t);
    if (!product) return nullptr;
    k_ = fr->var;
    conditions_ = version.conditions;
    if (store->checked) return decline("its indices are checked (boundscheck)");
    if (!columns(fj, store)) return nullptr;
    std::vector<Term> terms;
    if (!collect_terms(Substitute(version.values).mutate(product), false, fj->var, terms)) return nullptr;
    auto coefficients = Decomposer(t, store, nest_vars_).linear(Substitute(version.values).mutate(store->value));
    if (!coefficients || !coefficients->t) return decline("the result is not alpha * sum + beta * C[i, j]");
    terms[0].coefficient = Binary::make(BinaryOp::Mul, coefficients->t, terms[0].coefficient, one()->type);
    const Stmt rest = without_products(fi_->body);
    if (!has_effects(rest)) return finish(terms, fr->end, coefficients->c, self_, "");
    // The loop's other statements run in a second loop over i after the
    // product: the iterations are independent (parallel), so each row's
    // statements may wait for all rows' products, as long as they write no
    // operand (the product reads those).
    auto products_only = up_to_products(fi_->body);
    if (!products_only) return decline("statements with effects come before the product");
    for (const Term& term : terms)
      if (stores_to(rest, term.row.array) || stores_to(rest, term.column.array))
        return decline("the loop's other statements write an operand of the product");
    const Stmt first = For::make(fi_->var, fi_->begin, fi_->end, fi_->step, *products_only, fi_->schedule, fi_->loc);
    const Stmt second = For::make(fi_->var, fi_->begin, fi_->end, fi_->step, rest, fi_->schedule, fi_->loc);
    const Stmt mm = finish(terms, fr->end, coefficients->c, first, " (the loop's other statements run after it)");
    if (!mm) return nullptr;
    return Block::make({mm, second}, fi_->loc);
  }

  bool set_c(const Store* store) {
    if (store->indices.size() != 2 || store->array->type.ndim != 2) return false;
    c_ = store->array;
    dtype_ = c_->type.dtype;
    found = dtype_ == ScalarKind::Float32 || dtype_ == ScalarKind::Float64;
    return found;
  }

  // A product loop of C: `for j: t = 0; for k: t += ...; C[...] = ...` in
  // any version.
  bool product_loop(const Stmt& s) const {
    const For* f = s->as<For>();
    auto body = f ? statements(f->body) : std::nullopt;
    const Store* store = body && body->size() == 3 ? (*body)[2]->as<Store>() : nullptr;
    return store && store->array == c_ && (*body)[0]->as<Assign>() && (*body)[1]->as<For>();
  }

  bool contains_product(const Stmt& s) const {
    if (product_loop(s)) return true;
    if (const Block* b = s->as<Block>()) {
      for (const Stmt& x : b->stmts)
        if (contains_product(x)) return true;
    }
    if (const If* i = s->as<If>())
      return contains_product(i->then_case) || (i->else_case && contains_product(i->else_case));
    return false;
  }

  // `body` up to its product loops (in each version): what comes before them
  // must be declarations, scalar assignments, assertions and branches.
  std::optional<Stmt> up_to_products(const Stmt& body) const {
    const Block* b = body->as<Block>();
    const std::vector<Stmt> all = b ? b->stmts : std::vector<Stmt>{body};
    size_t end = 0;
    for (size_t n = 0; n < all.size(); ++n)
      if (contains_product(all[n])) end = n + 1;
    std::vector<Stmt> kept;
    for (size_t n = 0; n < end; ++n) {
      const Stmt& s = all[n];
      if (product_loop(s) || s->as<Declare>() || s->as<Assert>()) {
        kept.push_back(s);
      } else if (const Assign* a = s->as<Assign>(); a && cannot_fail(a->value)) {
        kept.push_back(s);
      } else if (const If* i = s->as<If>()) {
        auto then_case = up_to_products(i->then_case);
        auto else_case = i->else_case ? up_to_products(i->else_case) : std::optional<Stmt>(Stmt());
        if (!then_case || !else_case) return std::nullopt;
        kept.push_back(If::make(i->cond, *then_case, *else_case, i->loc));
      } else {
        return std::nullopt;
      }
    }
    return Block::make(std::move(kept), body->loc);
  }

  // `body` without its product loops.
  Stmt without_products(const Stmt& body) const {
    const Block* b = body->as<Block>();
    const std::vector<Stmt> all = b ? b->stmts : std::vector<Stmt>{body};
    std::vector<Stmt> kept;
    for (const Stmt& s : all) {
      if (product_loop(s)) continue;
      if (const If* i = s->as<If>(); i && contains_product(s)) {
        kept.push_back(If::make(i->cond, without_products(i->then_case),
                                i->else_case ? without_products(i->else_case) : nullptr, i->loc));
      } else {
        kept.push_back(s);
      }
    }
    return Block::make(std::move(kept), body->loc);
  }

  // Whether `s` writes or allocates an array, or returns.
  static bool has_effects(const Stmt& s) {
    class Effects : public IRVisitor {
     public:
      bool found = false;
      using IRVisitor::visit;
      void visit(const Store*) override { found = true; }
      void visit(const AtomicUpdate*) override { found = true; }
      void visit(const Allocate*) override { found = true; }
      void visit(const ArrayBind*) override { found = true; }
      void visit(const Return*) override { found = true; }
      void visit(const MatMul*) override { found = true; }
    } effects;
    effects.visit(s);
    return effects.found;
  }

  static bool stores_to(const Stmt& s, const ArrayVar& array) {
    class Stores : public IRVisitor {
     public:
      explicit Stores(const ArrayInfo* a) : a_(a) {}
      bool found = false;
      using IRVisitor::visit;
      void visit(const Store* n) override {
        found = found || n->array.get() == a_;
        IRVisitor::visit(n);
      }
      void visit(const AtomicUpdate* n) override {
        found = found || n->array.get() == a_;
        IRVisitor::visit(n);
      }

     private:
      const ArrayInfo* a_;
    } stores(array.get());
    stores.visit(s);
    return stores.found || analysis::uses_of(s).array_binds.count(array.get());
  }

  // The MatMul of `terms` over k < k_end with the row condition, `fallback`
  // as its loops.
  Stmt finish(const std::vector<Term>& terms, const Expr& k_end, const Expr& beta, const Stmt& fallback,
              const std::string& note) {
    for (const Expr& e : {fi_->end, k_end})
      if (reads_any(e, nest_vars_)) return decline("the loop bounds depend on the loops' variables");
    for (const VarInfo* v : nest_vars_)
      if (analysis::live_after(fn_.body, fi_, v)) return decline("`" + v->name + "` is read after the loops");
    // Where the loops would index beyond an array, the library declines.
    const Expr n = extent(fi_->end), k = extent(k_end);
    conditions_.push_back(at_most(fi_->end, ArrayDim::make(c_, 0)));
    conditions_.push_back(at_most(fi_->end, ArrayDim::make(c_, 1)));
    for (const Term& t : terms)
      for (const Operand& o : {t.row, t.column}) {
        conditions_.push_back(at_most(fi_->end, ArrayDim::make(o.array, o.r_first ? 1 : 0)));
        conditions_.push_back(at_most(k_end, ArrayDim::make(o.array, o.r_first ? 0 : 1)));
      }
    const std::optional<Expr> condition = row_condition(conditions_, nest_vars_, fi_->var.get());
    if (!condition) return decline("whether the loops take the plain version depends on more than the row");
    MatMulTriangle tri;
    tri.part = *part_;
    tri.row = fi_->var;
    tri.row_condition = *condition;
    if (terms.size() == 2) {
      tri.a2 = terms[1].row.array;
      tri.a2_transposed = terms[1].row.r_first;
      tri.b2 = terms[1].column.array;
      tri.b2_transposed = !terms[1].column.r_first;
      tri.alpha2 = terms[1].coefficient;
    }
    std::string products;
    for (const Term& t : terms)
      products += std::string(products.empty() ? "" : " + ") + t.row.array->name + (t.row.r_first ? ".T" : "") + " @ " +
                  t.column.array->name + (t.column.r_first ? "" : ".T");
    remark = (part_ == MatMulPart::Lower ? "lower" : "upper") + std::string(" triangle of ") + c_->name + " = " +
             products + " handed to the BLAS library (the loops run instead when it cannot take the operands)" + note;
    return MatMul::make(c_, terms[0].row.array, terms[0].row.r_first, terms[0].column.array, !terms[0].column.r_first,
                        n, n, k, terms[0].coefficient, beta, fallback, fi_->loc, std::move(tri));
  }

  bool fail(const std::string& reason) {
    why = reason;
    return false;
  }

  static Expr at_most(const Expr& x, const Expr& y) { return Compare::make(CompareOp::LE, extent(x), extent(y)); }

  // The row index of C or of an operand: i, or an expression of i that the
  // row condition checks is i.
  bool row_index(const Expr& e) {
    const Expr u = unwrapped(e);
    if (is_var(u, fi_->var)) return true;
    conditions_.push_back(equals(e, row()));
    return true;
  }

  // A column index `j` or `offset + j` (j the loop variable `j`): the offset,
  // null for j itself; nullopt when it is neither.
  static std::optional<Expr> column_offset(const Expr& e, const Var& j) {
    if (is_var(e, j)) return Expr();
    const Binary* b = e->as<Binary>();
    if (!b || b->op != BinaryOp::Add) return std::nullopt;
    if (is_var(b->b, j) && !analysis::reads_var(b->a, j.get())) return b->a;
    if (is_var(b->a, j) && !analysis::reads_var(b->b, j.get())) return b->b;
    return std::nullopt;
  }

  // The columns col = offset + j (j < the loop's extent E) of a store to C
  // cover the triangle's part of row i: lower [0, i + 1), upper [i, n).
  // The first store decides the part.
  bool columns(const For* fj, const Store* store) {
    if (!row_index(store->indices[0])) return false;
    const std::optional<Expr> offset = column_offset(store->indices[1], fj->var);
    if (!offset) return fail("the column index is not j or start + j");
    const bool starts_at_row = *offset && is_var(unclamped(*offset), fi_->var);
    if (!part_) part_ = starts_at_row ? MatMulPart::Upper : MatMulPart::Lower;
    const Expr& e = fj->end;
    const Binary* core = unclamped(e)->as<Binary>();
    if (*part_ == MatMulPart::Lower) {
      // end i + 1
      const bool plus_one =
          core && core->op == BinaryOp::Add &&
          ((is_var(core->a, fi_->var) && is_int(core->b, 1)) || (is_var(core->b, fi_->var) && is_int(core->a, 1)));
      if (!plus_one || (*offset && !is_int(unclamped(*offset), 0)))
        return fail("the columns of row i are not [0, i + 1) nor [i, n)");
      if (*offset) conditions_.push_back(equals(*offset, IntImm::make(0)));
      conditions_.push_back(equals(e, Binary::make(BinaryOp::Add, row(), IntImm::make(1), fi_->var->type)));
    } else {
      // start i, extent n - i
      const bool to_end = starts_at_row && core && core->op == BinaryOp::Sub && is_var(unclamped(core->b), fi_->var);
      if (!to_end) return fail("the columns of row i are not [0, i + 1) nor [i, n)");
      conditions_.push_back(equals(*offset, row()));
      conditions_.push_back(equals(e, Binary::make(BinaryOp::Sub, extent(fi_->end), extent(row()), ScalarType::i64())));
    }
    return true;
  }

  // `C[i, :] *= beta` over the triangle's columns: beta (float64), or null.
  Expr scaling(const For* f1) {
    auto body = f1 && counts_from_zero(f1) ? statements(f1->body) : std::nullopt;
    const Store* st = body && body->size() == 1 ? (*body)[0]->as<Store>() : nullptr;
    const Binary* b = st ? st->value->as<Binary>() : nullptr;
    if (!st || st->array != c_ || st->checked || st->indices.size() != 2 || !b || b->op != BinaryOp::Mul ||
        b->type.kind != dtype_)
      return decline("the statement before the loop over k is not C[i, :] *= beta");
    const bool c_first = element_at(b->a, c_, st);
    if (!c_first && !element_at(b->b, c_, st))
      return decline("the statement before the loop over k is not C[i, :] *= beta");
    const Expr& beta = c_first ? b->b : b->a;
    Invariant check(nest_vars_);
    check.visit(beta);
    if (!check.ok) return decline("the scale of C is not an expression of invariant scalars");
    const std::optional<MatMulPart> part = part_;
    if (!columns(f1, st)) return nullptr;
    if (part_ != part) return decline("C is scaled over other columns than it is updated");
    return as_f64(beta);
  }

  // Products of the sum; false (with `why`) when a term is not one.
  bool collect_terms(const Expr& e, bool negated, const Var& j, std::vector<Term>& out) {
    if (e->type.kind != dtype_) return fail("the update mixes float types");
    if (const Binary* b = e->as<Binary>(); b && (b->op == BinaryOp::Add || b->op == BinaryOp::Sub))
      return collect_terms(b->a, negated, j, out) && collect_terms(b->b, negated != (b->op == BinaryOp::Sub), j, out);
    if (const Unary* u = e->as<Unary>(); u && u->op == UnaryOp::Neg) return collect_terms(u->a, !negated, j, out);
    std::vector<Expr> factors;
    if (!flatten(e, factors)) return false;
    Term term;
    Expr coefficient;
    bool have_row = false, have_column = false;
    for (const Expr& f : factors) {
      if (const Load* l = f->as<Load>()) {
        if (l->checked || l->indices.size() != 2 || l->array == c_ || l->array->type.dtype != dtype_)
          return fail("a product reads C or an array of another type");
        const bool r_first = is_var(unwrapped(l->indices[0]), k_);
        if (!r_first && !is_var(unwrapped(l->indices[1]), k_)) return fail("a product's operand is not indexed by k");
        const Expr& other = l->indices[r_first ? 1 : 0];
        const std::optional<Expr> offset = column_offset(other, j);
        if (offset && !have_column) {
          if (part_ == MatMulPart::Upper && !*offset) return fail("an operand's column index is not the column of C");
          if (*offset) conditions_.push_back(equals(*offset, part_ == MatMulPart::Upper ? row() : IntImm::make(0)));
          term.column = Operand{l->array, r_first};
          have_column = true;
        } else if (!offset && !have_row && !reads_any(other, {j.get(), k_.get()})) {
          row_index(other);
          term.row = Operand{l->array, r_first};
          have_row = true;
        } else {
          return fail("a product is not X[i, k] * Y[j, k]");
        }
        continue;
      }
      Invariant check(nest_vars_);
      check.visit(f);
      if (!check.ok) return fail("a product has a factor that varies in the loops");
      coefficient = coefficient ? Binary::make(BinaryOp::Mul, coefficient, as_f64(f), coefficient->type) : as_f64(f);
    }
    if (!have_row || !have_column) return fail("a product is not X[i, k] * Y[j, k]");
    if (!coefficient) coefficient = one();
    term.coefficient = negated ? Unary::make(UnaryOp::Neg, coefficient) : coefficient;
    out.push_back(term);
    return true;
  }

  // The factors of a product computed in C's type.
  bool flatten(const Expr& e, std::vector<Expr>& out) {
    const Binary* b = e->as<Binary>();
    if (b && b->op == BinaryOp::Mul) {
      if (b->type.kind != dtype_) return fail("the update mixes float types");
      return flatten(b->a, out) && flatten(b->b, out);
    }
    out.push_back(e);
    return true;
  }

  ArrayVar c_;
  ScalarKind dtype_ = ScalarKind::Float64;
  Var k_;
  std::optional<MatMulPart> part_;
  std::vector<Expr> conditions_;
};

// A serial loop over the rows i of B whose iteration adds to row i the
// products of row i of A' with the rows of B below it (NPBench's trmm):
//
//   for i in range(m):
//     for j in range(n):                     (parallel or not)
//       t = 0
//       for r in range(<rows i + 1 ... m>): t += A[i + 1 + r, i] * B[i + 1 + r, j]
//       B[i, j] = B[i, j] + t                (A[i, i + 1 + r] too: A' = A)
//
// Row i reads only rows below it, which later iterations change: it reads
// them as they were, so the loop is B = B + strict_upper(A') @ B with B's
// old values, a triangular product in place (unit diagonal). Within a row
// the columns j are independent (each writes B[i, j] and reads column j).
class InPlaceMatcher : public NestMatcher {
 public:
  using NestMatcher::NestMatcher;

  Stmt match() {
    if (!row_loop_is(false)) return nullptr;
    auto outer = statements(fi_->body);
    const For* fj = outer && outer->size() == 1 ? (*outer)[0]->as<For>() : nullptr;
    if (!counts_from_zero(fj) || !fj->schedule.reductions.empty()) return nullptr;
    auto inner = statements(fj->body);
    if (!inner || inner->size() < 3) return nullptr;
    std::vector<Expr> conditions;
    size_t n = 0;
    for (; n + 3 < inner->size() && (*inner)[n]->as<Assert>(); ++n)
      conditions.push_back((*inner)[n]->as<Assert>()->cond);
    if (inner->size() - n != 3) return nullptr;
    const Assign* init = (*inner)[n]->as<Assign>();
    const For* fr = (*inner)[n + 1]->as<For>();
    const Store* store = (*inner)[n + 2]->as<Store>();
    if (!init || !fr || !store || !counts_from_zero(fr) || store->indices.size() != 2) return nullptr;
    const ArrayVar& b = store->array;
    const ScalarKind dtype = b->type.dtype;
    const Var& t = init->var;
    if ((dtype != ScalarKind::Float32 && dtype != ScalarKind::Float64) || t->type.kind != dtype ||
        !is_zero(init->value))
      return nullptr;
    const Expr product = summed_product(fr, t);
    const Binary* mul = product ? product->as<Binary>() : nullptr;
    if (!mul || mul->type.kind != dtype) return nullptr;
    // B[i, j] = B[i, j] + t
    const Var &i = fi_->var, &j = fj->var, &r = fr->var;
    const Binary* update = store->value->as<Binary>();
    if (!is_var(unwrapped(store->indices[0]), i) || !is_var(unwrapped(store->indices[1]), j) || !update ||
        update->op != BinaryOp::Add || update->type.kind != dtype)
      return nullptr;
    if (!((element_at(update->a, b, store) && is_var(update->b, t)) ||
          (element_at(update->b, b, store) && is_var(update->a, t))))
      return nullptr;
    // A[i + 1 + r, i] (or A[i, i + 1 + r]) and B[i + 1 + r, j], in either order.
    const Load* x = mul->a->as<Load>();
    const Load* y = mul->b->as<Load>();
    if (x && x->array == b) std::swap(x, y);
    if (!x || !y || y->array != b || x->array == b || x->array->type.dtype != dtype || x->checked || y->checked ||
        x->indices.size() != 2 || y->indices.size() != 2 || !is_var(unwrapped(y->indices[1]), j))
      return nullptr;
    found = true;
    if (store->checked) return decline("its indices are checked (boundscheck)");
    const bool transposed = is_var(unwrapped(x->indices[1]), i);
    const Expr& a_row = x->indices[transposed ? 1 : 0];
    const Expr& a_step = x->indices[transposed ? 0 : 1];
    if (!is_var(unwrapped(a_row), i)) return decline("A is not indexed by the row i");
    const Expr offsets[] = {offset_of(a_step, r), offset_of(y->indices[0], r)};
    for (const Expr& offset : offsets)
      if (!offset || !is_row_plus_one(unclamped(offset)))
        return decline("the product does not read the rows i + 1, i + 2, ... of B");
    const Binary* count = unclamped(fr->end)->as<Binary>();
    if (!count || count->op != BinaryOp::Sub || !is_row_plus_one(unclamped(count->b)))
      return decline("the product does not read the rows i + 1, i + 2, ... of B");
    // The row condition: the slices are exactly the rows below i, and the
    // loops' assertions hold.
    const Expr m = extent(fi_->end), row = VarRef::make(i);
    const Expr next = Binary::make(BinaryOp::Add, extent(row), IntImm::make(1, ScalarType::i64()), ScalarType::i64());
    for (const Expr& offset : offsets) conditions.push_back(equals(offset, next));
    conditions.push_back(equals(fr->end, Binary::make(BinaryOp::Sub, m, next, ScalarType::i64())));
    for (const Expr& limit : {ArrayDim::make(b, 0), ArrayDim::make(x->array, 0), ArrayDim::make(x->array, 1)})
      conditions.push_back(Compare::make(CompareOp::LE, m, extent(limit)));
    conditions.push_back(Compare::make(CompareOp::LE, extent(fj->end), extent(ArrayDim::make(b, 1))));
    if (reads_any(fi_->end, nest_vars_) || reads_any(fj->end, nest_vars_))
      return decline("the loop bounds depend on the loops' variables");
    const std::optional<Expr> condition = row_condition(conditions, nest_vars_, i.get());
    if (!condition) return decline("the rows the product reads depend on more than the row");
    for (const VarInfo* v : nest_vars_)
      if (analysis::live_after(fn_.body, fi_, v)) return decline("`" + v->name + "` is read after the loops");
    remark = b->name + " += strict_upper(" + x->array->name + (transposed ? ".T" : "") + ") @ " + b->name +
             " (each row reads the rows below it before they change) handed to the BLAS library (the loops run "
             "instead when it cannot take the operands)";
    MatMulTriangle tri;
    tri.part = MatMulPart::StrictUpperInPlace;
    tri.row = i;
    tri.row_condition = *condition;
    return MatMul::make(b, x->array, transposed, b, false, m, extent(fj->end), m, one(), nullptr, self_, fi_->loc,
                        std::move(tri));
  }

 private:
  // `offset + r`: the offset, or null.
  static Expr offset_of(const Expr& e, const Var& r) {
    const Binary* b = e->as<Binary>();
    if (!b || b->op != BinaryOp::Add) return nullptr;
    if (is_var(b->b, r) && !analysis::reads_var(b->a, r.get())) return b->a;
    if (is_var(b->a, r) && !analysis::reads_var(b->b, r.get())) return b->b;
    return nullptr;
  }
  bool is_row_plus_one(const Expr& e) const {
    const Binary* b = e->as<Binary>();
    return b && b->op == BinaryOp::Add &&
           ((is_var(b->a, fi_->var) && is_int(b->b, 1)) || (is_var(b->b, fi_->var) && is_int(b->a, 1)));
  }
};

// ---------------------------------------------------------------- solve

// A serial loop over i that computes x[i] from the elements of x before it
// (forward substitution: NPBench's trisolv, and the row of L that each step
// of its cholesky computes):
//
//   for i in range(n):
//     t = 0
//     for r in range(<i>): t = t + L[i, r] * x[r]   (either order; L[r, i]
//                                                    too: L' = L.T)
//     x[i] = (b[i] - t) / L[i, i]                    (b may be x)
//
// or, in place, `x[i] = x[i] - t; x[i] = x[i] / L[i, i]`; x may be a row of
// a 2-D array, X[k, i] with k the same expression of scalars that the loop
// does not assign (b is then x). Step i reads the elements of x that the
// steps before it wrote and b[i] before it writes x[i], so the loop is
// x[:n] = solve(lower(L'[:n, :n]), b[:n]). L' is read on and below its
// diagonal only; whether it shares memory with x is the library's check.
class SolveMatcher : public NestMatcher {
 public:
  using NestMatcher::NestMatcher;

  Stmt match() {
    if (!row_loop_is(false)) return nullptr;
    auto body = statements(fi_->body);
    if (!body) return nullptr;
    std::vector<Expr> conditions;
    std::vector<Stmt> steps;
    for (const Stmt& s : *body) {
      if (const Assert* a = s->as<Assert>(); a && steps.size() < 2)
        conditions.push_back(a->cond);
      else
        steps.push_back(s);
    }
    if (steps.size() != 3 && steps.size() != 4) return nullptr;
    const Assign* init = steps[0]->as<Assign>();
    const For* fr = steps[1]->as<For>();
    const Store* store = steps.back()->as<Store>();
    const Store* subtract = steps.size() == 4 ? steps[2]->as<Store>() : nullptr;
    if (!init || !fr || !store || (steps.size() == 4 && !subtract) || !counts_from_zero(fr)) return nullptr;
    x_ = store->array;
    dtype_ = x_->type.dtype;
    const Var& t = init->var;
    if ((dtype_ != ScalarKind::Float32 && dtype_ != ScalarKind::Float64) || t->type.kind != dtype_ ||
        !is_zero(init->value) || store->indices.size() != static_cast<size_t>(x_->type.ndim) ||
        store->indices.size() > 2)
      return nullptr;
    if (store->indices.size() == 2) vector_row_ = unwrapped(store->indices[0]);
    // t = t + L[i, r] * x[r]
    const Expr product = summed_product(fr, t);
    const Binary* mul = product ? product->as<Binary>() : nullptr;
    if (!mul || mul->type.kind != dtype_) return nullptr;
    const Load* matrix = mul->a->as<Load>();
    const Load* vector = mul->b->as<Load>();
    if (!is_vector(vector)) std::swap(matrix, vector);
    if (!matrix || !is_vector(vector) || matrix->indices.size() != 2 || matrix->array->type.dtype != dtype_)
      return nullptr;
    // x[i] = (b[i] - t) / L[i, i], or x[i] = x[i] - t; x[i] = x[i] / L[i, i]
    const Binary* quotient = store->value->as<Binary>();
    if (!quotient || quotient->op != BinaryOp::Div || quotient->type.kind != dtype_) return nullptr;
    const Expr& minuend = subtract ? subtract->value : quotient->a;
    const Binary* difference = minuend->as<Binary>();
    const Load* rhs = difference && difference->op == BinaryOp::Sub ? difference->a->as<Load>() : nullptr;
    const Load* diagonal = quotient->b->as<Load>();
    if (!rhs || !diagonal || !is_var(difference->b, t) || difference->type.kind != dtype_ ||
        rhs->array->type.dtype != dtype_ || diagonal->array != matrix->array || !same_element(rhs, store) ||
        (subtract && (subtract->array != x_ || !same_indices(subtract->indices, store->indices) ||
                      !element_of(quotient->a, store))))
      return nullptr;
    found = true;
    const Var &i = fi_->var, &r = fr->var;
    const ArrayVar& l = matrix->array;
    const ArrayVar& b = rhs->array;
    if (store->checked || (subtract && subtract->checked) || matrix->checked || vector->checked || rhs->checked ||
        diagonal->checked)
      return decline("its indices are checked (boundscheck)");
    if (quotient->zero_check) return decline("the division raises on a zero diagonal");
    const bool transposed = index_is(matrix->indices[1], i);
    if (!index_is(matrix->indices[transposed ? 1 : 0], i) || !index_is(matrix->indices[transposed ? 0 : 1], r) ||
        !index_is(vector->indices.back(), r) || !index_is(store->indices.back(), i))
      return decline("the dot product is not " + l->name + "[i, :i] @ " + x_->name + "[:i]");
    if (!index_is(diagonal->indices[0], i) || !index_is(diagonal->indices[1], i))
      return decline("the step does not divide by the diagonal " + l->name + "[i, i]");
    if (vector_row_ && b != x_) return decline("x is a row of a matrix and b is not x");
    if (!is_var(unclamped(fr->end), i)) return decline("the dot product does not run over the elements before i");
    if (reads_any(fi_->end, nest_vars_) || (vector_row_ && reads_any(vector_row_, nest_vars_)))
      return decline("the loop bounds or x's row depend on the loop's variables");
    // The row condition: the dot product runs over exactly i elements, the
    // loop's assertions hold and every index is within its array.
    const Expr m = extent(fi_->end);
    conditions.push_back(equals(fr->end, row()));
    const int last = x_->type.ndim - 1;
    for (const Expr& limit :
         {ArrayDim::make(x_, last), ArrayDim::make(b, b->type.ndim - 1), ArrayDim::make(l, 0), ArrayDim::make(l, 1)})
      conditions.push_back(Compare::make(CompareOp::LE, m, extent(limit)));
    if (vector_row_) {
      conditions.push_back(Compare::make(CompareOp::LE, IntImm::make(0, ScalarType::i64()), extent(vector_row_)));
      conditions.push_back(Compare::make(CompareOp::LT, extent(vector_row_), extent(ArrayDim::make(x_, 0))));
    }
    const std::optional<Expr> condition = row_condition(conditions, nest_vars_, i.get());
    if (!condition) return decline("the elements the dot product reads depend on more than the row");
    for (const VarInfo* v : nest_vars_)
      if (analysis::live_after(fn_.body, fi_, v)) return decline("`" + v->name + "` is read after the loop");
    const std::string x_text = vector_row_ ? x_->name + "[" + to_string(vector_row_) + ", :]" : x_->name;
    const std::string b_text = vector_row_ ? x_text : b->name;
    remark = x_text + " = solve(lower(" + l->name + (transposed ? ".T" : "") + "), " + b_text +
             ") (forward substitution: each step reads the elements before it) handed to the BLAS library (the "
             "loop runs instead when it cannot take the operands)";
    MatMulTriangle tri;
    tri.part = MatMulPart::LowerSolve;
    tri.row = i;
    tri.row_condition = *condition;
    tri.vector_row = vector_row_ ? extent(vector_row_) : nullptr;
    return MatMul::make(x_, l, transposed, b, false, m, m, m, one(), nullptr, self_, fi_->loc, std::move(tri));
  }

 private:
  static bool index_is(const Expr& e, const Var& v) { return is_var(unwrapped(e), v); }
  // Indices equal where they are not negative (the row condition checks
  // that x's row is not): the lowering wraps some and not others.
  static bool same_indices(const std::vector<Expr>& x, const std::vector<Expr>& y) {
    if (x.size() != y.size()) return false;
    for (size_t d = 0; d < x.size(); ++d)
      if (!same(unwrapped(x[d]), unwrapped(y[d]))) return false;
    return true;
  }
  // A load of x (of x's row, for a row of a matrix).
  bool is_vector(const Load* l) const {
    return l && l->array == x_ && l->indices.size() == static_cast<size_t>(x_->type.ndim) &&
           (!vector_row_ || same(unwrapped(l->indices[0]), unwrapped(vector_row_)));
  }
  // The load of x's element that `store` writes.
  static bool element_of(const Expr& e, const Store* store) {
    const Load* l = e->as<Load>();
    return l && l->array == store->array && !l->checked && same_indices(l->indices, store->indices);
  }
  // b[i] for the x[i] that `store` writes (x[k, i] itself for a row).
  bool same_element(const Load* rhs, const Store* store) const {
    if (vector_row_) return rhs->array == x_ && same_indices(rhs->indices, store->indices);
    return rhs->indices.size() == 1 && same(unwrapped(rhs->indices[0]), unwrapped(store->indices[0]));
  }

  ArrayVar x_;
  ScalarKind dtype_ = ScalarKind::Float64;
  Expr vector_row_;  // x's row, for a row of a matrix
};

// ---------------------------------------------------------------- symm

// The path through a body that runs when nothing broadcasts (the last
// `else` of each version branch, as plain_version takes it): its loops,
// stores and scalar assignments in order, each with the values the scalars
// assigned before it hold (a loop's writes forget theirs), and the
// conditions under which the path runs; false when the body has other
// statements.
struct PathStep {
  Stmt stmt;
  VarMap<Expr> values;  // before the step
};

struct PlainPath {
  VarMap<Expr> values;
  std::vector<Expr> conditions;
  std::vector<PathStep> steps;
};

bool plain_path(const Stmt& body, PlainPath& p) {
  const Block* b = body->as<Block>();
  std::vector<Stmt> stmts;
  for (const Stmt& s : b ? b->stmts : std::vector<Stmt>{body})
    if (!s->as<Declare>()) stmts.push_back(s);
  for (size_t n = 0; n < stmts.size(); ++n) {
    const Stmt& s = stmts[n];
    if (const Assign* a = s->as<Assign>()) {
      if (!cannot_fail(a->value)) return false;
      p.steps.push_back({s, p.values});
      p.values[a->var.get()] = Substitute(p.values).mutate(a->value);
    } else if (const Assert* a = s->as<Assert>()) {
      p.conditions.push_back(Substitute(p.values).mutate(a->cond));
    } else if (const If* i = s->as<If>(); i && n + 1 == stmts.size() && i->else_case) {
      p.conditions.push_back(Unary::make(UnaryOp::Not, Substitute(p.values).mutate(i->cond)));
      return plain_path(i->else_case, p);
    } else if (s->as<For>() || s->as<Store>()) {
      p.steps.push_back({s, p.values});
      for (const VarInfo* v : analysis::uses_of(s).writes) p.values.erase(v);
    } else {
      return false;
    }
  }
  return true;
}

// The steps of a path other than scalar assignments.
std::vector<const PathStep*> effects(const PlainPath& p) {
  std::vector<const PathStep*> out;
  for (const PathStep& s : p.steps)
    if (!s.stmt->as<Assign>()) out.push_back(&s);
  return out;
}

// The loads and the product of the other factors of a product computed in
// `dtype` (null coefficient: none).
struct Factors {
  std::vector<const Load*> loads;
  Expr coefficient;  // float64, or null
};

bool factors_of(const Expr& e, ScalarKind dtype, Factors& out) {
  if (const Binary* b = e->as<Binary>(); b && b->op == BinaryOp::Mul)
    return b->type.kind == dtype && factors_of(b->a, dtype, out) && factors_of(b->b, dtype, out);
  if (const Load* l = e->as<Load>()) {
    out.loads.push_back(l);
    return true;
  }
  out.coefficient = out.coefficient ? Binary::make(BinaryOp::Mul, out.coefficient, as_f64(e), one()->type) : as_f64(e);
  return true;
}

// The terms of a sum computed in `dtype`.
bool terms_of(const Expr& e, ScalarKind dtype, std::vector<Expr>& out) {
  if (const Binary* b = e->as<Binary>(); b && b->op == BinaryOp::Add)
    return b->type.kind == dtype && terms_of(b->a, dtype, out) && terms_of(b->b, dtype, out);
  out.push_back(e);
  return true;
}

// A serial loop over the rows i of C that adds row i's share of a product
// with the symmetric matrix whose lower triangle is A's (NPBench's symm):
//
//   for i in range(m):
//     for j in range(n):                       (parallel or not)
//       C[:i, j] += alpha * B[i, j] * A[i, :i]
//       temp2[j] = B[:i, j] @ A[i, :i]
//     C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2
//
// Row i adds alpha A[i, r] B[i, j] to the rows r < i of C, and to its own
// row alpha (A[i, i] B[i, j] + sum over r < i of A[i, r] B[r, j]); C is read
// only by these sums and B and A are not written, so after the loop C[r, j]
// has gained alpha * sum over q of S[r, q] B[q, j] with S[r, q] = A[r, q]
// for q <= r and A[q, r] above: C = alpha S @ B + C, which cuBLAS's symm
// computes from A's lower triangle (the upper one is never read). temp2 is
// a local array that nothing reads after the loop (each row writes all of
// it before reading it), so its values need not be kept.
class SymmetricMatcher : public NestMatcher {
 public:
  using NestMatcher::NestMatcher;

  Stmt match() {
    if (!row_loop_is(false)) return nullptr;
    PlainPath row_path;
    if (!plain_path(fi_->body, row_path) || never_runs(row_path.conditions)) return nullptr;
    const std::vector<const PathStep*> row_steps = effects(row_path);
    if (row_steps.size() != 2) return nullptr;
    const For* fj = row_steps[0]->stmt->as<For>();
    const For* fc = row_steps[1]->stmt->as<For>();
    if (!counts_from_zero(fj) || !fj->schedule.reductions.empty() || !counts_from_zero(fc)) return nullptr;
    PlainPath column_path;
    if (!plain_path(fj->body, column_path)) return nullptr;
    const std::vector<const PathStep*> column_steps = effects(column_path);
    if (column_steps.size() != 3) return nullptr;
    const For* fu = column_steps[0]->stmt->as<For>();
    const For* fd = column_steps[1]->stmt->as<For>();
    const Store* temp_store = column_steps[2]->stmt->as<Store>();
    if (!fu || !fd || !temp_store || temp_store->indices.size() != 1) return nullptr;
    auto update = statements(fu->body);
    const Store* update_store = update && update->size() == 1 ? (*update)[0]->as<Store>() : nullptr;
    if (!update_store || update_store->indices.size() != 2 || update_store->array->type.ndim != 2) return nullptr;
    c_ = update_store->array;
    dtype_ = c_->type.dtype;
    if (dtype_ != ScalarKind::Float32 && dtype_ != ScalarKind::Float64) return nullptr;
    found = true;
    conditions_ = row_path.conditions;
    for (const Expr& c : column_path.conditions) conditions_.push_back(c);
    if (update_store->checked || temp_store->checked) return decline("its indices are checked (boundscheck)");
    const Var &i = fi_->var, &j = fj->var;

    // C[r, j] = C[r, j] + alpha * B[i, j] * A[i, r] for r < i
    const Var& r = fu->var;
    if (!counts_from_zero(fu) || !fu->schedule.reductions.empty() || !index_is(update_store->indices[0], r) ||
        !index_is(update_store->indices[1], j))
      return decline("the update of the rows above i is not C[:i, j] += alpha * B[i, j] * A[i, :i]");
    Expr alpha;
    {
      std::vector<Expr> terms;
      const Expr value = Substitute(column_steps[0]->values).mutate(update_store->value);
      Factors product;
      if (terms_of(value, dtype_, terms) && terms.size() == 2 && element_at(terms[1], c_, update_store))
        std::swap(terms[0], terms[1]);
      if (terms.size() != 2 || !element_at(terms[0], c_, update_store) || !factors_of(terms[1], dtype_, product) ||
          !product.coefficient || product.loads.size() != 2 || !invariant(product.coefficient))
        return decline("the update of the rows above i is not C[:i, j] += alpha * B[i, j] * A[i, :i]");
      const Load* x = product.loads[0];
      const Load* y = product.loads[1];
      if (x->indices.size() == 2 && index_is(x->indices[1], r)) std::swap(x, y);
      if (!load_at(x, i, j) || !load_at(y, i, r))
        return decline("the update of the rows above i is not C[:i, j] += alpha * B[i, j] * A[i, :i]");
      b_ = x->array;
      a_ = y->array;
      alpha = product.coefficient;
    }
    conditions_.push_back(equals(fu->end, row()));

    // t = 0; t += B[s, j] * A[i, s] for s < i; temp2[j] = t
    temp_ = temp_store->array;
    {
      auto body = statements(fd->body);
      const Assign* acc = body && body->size() == 1 ? (*body)[0]->as<Assign>() : nullptr;
      const Var* t = acc ? &acc->var : nullptr;
      const Binary* sum = acc ? acc->value->as<Binary>() : nullptr;
      bool ok = counts_from_zero(fd) && sum && sum->op == BinaryOp::Add && (*t)->type.kind == dtype_ &&
                temp_->type.dtype == dtype_ && index_is(temp_store->indices[0], j) && is_var(temp_store->value, *t);
      for (const Reduction& red : fd->schedule.reductions) ok = ok && red.var == *t && red.op == ReduceOp::Add;
      auto init = ok ? column_steps[1]->values.find(t->get()) : column_steps[1]->values.end();
      ok = ok && init != column_steps[1]->values.end() && is_zero(init->second);
      const Expr& product = !ok ? nullptr : is_var(sum->a, *t) ? sum->b : is_var(sum->b, *t) ? sum->a : nullptr;
      Factors factors;
      ok = ok && product && factors_of(product, dtype_, factors) && !factors.coefficient && factors.loads.size() == 2;
      if (ok) {
        const Load* x = factors.loads[0];
        const Load* y = factors.loads[1];
        if (x->array != b_) std::swap(x, y);
        ok = x->array == b_ && y->array == a_ && load_at(x, fd->var, j) && load_at(y, i, fd->var);
      }
      if (!ok) return decline("temp2[j] is not B[:i, j] @ A[i, :i]");
    }
    conditions_.push_back(equals(fd->end, row()));

    // C[i, c] = C[i, c] + alpha * B[i, c] * A[i, i] + alpha * temp2[c]
    {
      auto body = statements(fc->body);
      const Store* store = body && body->size() == 1 ? (*body)[0]->as<Store>() : nullptr;
      std::vector<Expr> terms;
      bool ok = store && store->array == c_ && !store->checked && store->indices.size() == 2 &&
                index_is(store->indices[0], i) && index_is(store->indices[1], fc->var) &&
                terms_of(Substitute(row_steps[1]->values).mutate(store->value), dtype_, terms) && terms.size() == 3;
      bool have_c = false, have_diagonal = false, have_temp = false;
      for (size_t n = 0; ok && n < terms.size(); ++n) {
        if (!have_c && element_at(terms[n], c_, store)) {
          have_c = true;
          continue;
        }
        Factors factors;
        ok = factors_of(terms[n], dtype_, factors) && factors.coefficient && invariant(factors.coefficient) &&
             same(factors.coefficient, alpha);
        if (!ok) break;
        if (factors.loads.size() == 1 && !have_temp) {
          const Load* l = factors.loads[0];
          ok = l->array == temp_ && !l->checked && l->indices.size() == 1 && index_is(l->indices[0], fc->var);
          have_temp = true;
        } else if (factors.loads.size() == 2 && !have_diagonal) {
          const Load* x = factors.loads[0];
          const Load* y = factors.loads[1];
          if (x->array != b_) std::swap(x, y);
          ok = x->array == b_ && y->array == a_ && load_at(x, i, fc->var) && load_at(y, i, i);
          have_diagonal = true;
        } else {
          ok = false;
        }
      }
      if (!ok || !have_c || !have_diagonal || !have_temp)
        return decline("the update of row i is not C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2");
    }
    conditions_.push_back(equals(fc->end, fj->end));

    if (a_ == c_ || b_ == c_ || temp_ == a_ || temp_ == b_ || temp_ == c_)
      return decline("C, A, B and temp2 are not four arrays");
    if (!local_and_dead(temp_))
      return decline("`" + temp_->name + "` is an argument, has another name or is read after the loop");
    for (const Expr& e : {fi_->end, fj->end})
      if (reads_any(e, nest_vars_)) return decline("the loop bounds depend on the loops' variables");
    for (const VarInfo* v : nest_vars_)
      if (analysis::live_after(fn_.body, fi_, v)) return decline("`" + v->name + "` is read after the loops");
    // Where the loops would index beyond an array, the library declines.
    const Expr m = extent(fi_->end), n = extent(fj->end);
    for (const Expr& limit :
         {ArrayDim::make(c_, 0), ArrayDim::make(b_, 0), ArrayDim::make(a_, 0), ArrayDim::make(a_, 1)})
      conditions_.push_back(Compare::make(CompareOp::LE, m, extent(limit)));
    for (const Expr& limit : {ArrayDim::make(c_, 1), ArrayDim::make(b_, 1), ArrayDim::make(temp_, 0)})
      conditions_.push_back(Compare::make(CompareOp::LE, n, extent(limit)));
    const std::optional<Expr> condition = row_condition(conditions_, nest_vars_, i.get());
    if (!condition) return decline("whether the loops take the plain version depends on more than the row");
    remark = c_->name + " += scalar * symmetric(lower(" + a_->name + ")) @ " + b_->name + " (the symmetric matrix of " +
             a_->name +
             "'s lower triangle) handed to the BLAS library as one symm (the loops run instead when it "
             "cannot take the operands)";
    MatMulTriangle tri;
    tri.part = MatMulPart::SymmetricLower;
    tri.row = i;
    tri.row_condition = *condition;
    return MatMul::make(c_, a_, false, b_, false, m, n, m, alpha, one(), self_, fi_->loc, std::move(tri));
  }

 private:
  static bool index_is(const Expr& e, const Var& v) { return is_var(unwrapped(e), v); }
  bool invariant(const Expr& e) const {
    Invariant check(nest_vars_);
    check.visit(e);
    return check.ok;
  }
  // An unchecked load of a 2-D array of C's type at (row, column).
  bool load_at(const Load* l, const Var& row, const Var& column) const {
    return !l->checked && l->indices.size() == 2 && l->array->type.dtype == dtype_ && index_is(l->indices[0], row) &&
           index_is(l->indices[1], column);
  }
  // `array` is no argument and has no other name (no binding takes it or
  // gives it), so that nothing sees its values after the loop unless a
  // later statement reads it.
  bool local_and_dead(const ArrayVar& array) const {
    for (const Param& p : fn_.params)
      if (p.array == array) return false;
    class Binds : public IRVisitor {
     public:
      explicit Binds(const ArrayInfo* a) : a_(a) {}
      bool found = false;
      using IRVisitor::visit;
      void visit(const ArrayBind* n) override { found = found || n->dst.get() == a_ || n->src.get() == a_; }

     private:
      const ArrayInfo* a_;
    } binds(array.get());
    binds.visit(fn_.body);
    return !binds.found && !analysis::live_after(fn_.body, fi_, array.get());
  }

  ArrayVar c_, a_, b_, temp_;
  ScalarKind dtype_ = ScalarKind::Float64;
  std::vector<Expr> conditions_;
};

class MatMulFinder : public IRMutator {
 public:
  explicit MatMulFinder(const Function& f) : fn_(f) {}
  std::vector<Remark> remarks;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* fi, const Stmt& self) override {
    if (Stmt m = match(fi, self)) return m;
    TriangleMatcher triangle(fn_, fi, self, holding_);
    if (Stmt m = triangle.match()) {
      remarks.push_back({fi->loc, "offload_matmul", triangle.remark});
      return m;
    }
    if (triangle.found)
      remarks.push_back({fi->loc, "offload_matmul",
                         "triangular update kept as loops, not handed to the BLAS library: " + triangle.why});
    InPlaceMatcher in_place(fn_, fi, self, holding_);
    if (Stmt m = in_place.match()) {
      remarks.push_back({fi->loc, "offload_matmul", in_place.remark});
      return m;
    }
    if (in_place.found)
      remarks.push_back({fi->loc, "offload_matmul",
                         "triangular product in place kept as loops, not handed to the BLAS library: " + in_place.why});
    SolveMatcher solve(fn_, fi, self, holding_);
    if (Stmt m = solve.match()) {
      remarks.push_back({fi->loc, "offload_matmul", solve.remark});
      return m;
    }
    if (solve.found)
      remarks.push_back(
          {fi->loc, "offload_matmul", "triangular solve kept as a loop, not handed to the BLAS library: " + solve.why});
    SymmetricMatcher symmetric(fn_, fi, self, holding_);
    if (Stmt m = symmetric.match()) {
      remarks.push_back({fi->loc, "offload_matmul", symmetric.remark});
      return m;
    }
    if (symmetric.found)
      remarks.push_back({fi->loc, "offload_matmul",
                         "symmetric product kept as loops, not handed to the BLAS library: " + symmetric.why});
    return IRMutator::visit(fi, self);
  }

  // The `then` branch runs where the condition holds, as long as the branch
  // does not assign what the condition reads.
  Stmt visit(const If* n, const Stmt& self) override {
    const VarSet read = analysis::uses_of(n->cond).reads;
    const VarSet written = analysis::uses_of(n->then_case).writes;
    const bool holds = std::none_of(read.begin(), read.end(), [&](const VarInfo* v) { return written.count(v); });
    if (holds) holding_.push_back(n->cond);
    const Stmt then_case = mutate(n->then_case);
    if (holds) holding_.pop_back();
    const Stmt else_case = mutate(n->else_case);
    if (then_case == n->then_case && else_case == n->else_case) return self;
    return If::make(n->cond, then_case, else_case, n->loc);
  }

 private:
  Stmt match(const For* fi, const Stmt& self) {
    if (!is_parallel(fi->schedule.kind) || !counts_from_zero(fi) || !fi->schedule.reductions.empty()) return nullptr;
    auto outer = statements(fi->body);
    if (!outer || outer->size() != 1) return nullptr;
    const For* fj = (*outer)[0]->as<For>();
    if (!counts_from_zero(fj) || !fj->schedule.reductions.empty()) return nullptr;
    auto inner = statements(fj->body);
    if (!inner || inner->size() != 3) return nullptr;
    const Assign* init = (*inner)[0]->as<Assign>();
    const For* fr = (*inner)[1]->as<For>();
    const Store* store = (*inner)[2]->as<Store>();
    if (!init || !fr || !store || !counts_from_zero(fr)) return nullptr;
    const Var& t = init->var;
    const ScalarKind dtype = store->array->type.dtype;
    if ((dtype != ScalarKind::Float32 && dtype != ScalarKind::Float64) || t->type.kind != dtype) return nullptr;
    if (!is_zero(init->value)) return nullptr;
    // t = t + A[i, r] * B[r, j]
    const Expr product_expr = summed_product(fr, t);
    const Binary* product = product_expr ? product_expr->as<Binary>() : nullptr;
    if (!product || product->type.kind != dtype) return nullptr;
    const Var &i = fi->var, &j = fj->var, &r = fr->var;
    std::optional<Operand> a = operand(product->a, i, r), b = operand(product->b, j, r);
    if (!a || !b) {
      a = operand(product->b, i, r);
      b = operand(product->a, j, r);
    }
    if (!a || !b || a->array == store->array || b->array == store->array) return nullptr;
    // A[i, r] and B[r, j] are the product as written; A[r, i] and B[j, r]
    // their transposes.
    const bool a_transposed = a->r_first, b_transposed = !b->r_first;
    if (a->array->type.dtype != dtype || b->array->type.dtype != dtype) return nullptr;
    // C[i, j] = alpha * t + beta * C[i, j]
    if (store->checked || store->indices.size() != 2 || !is_var(store->indices[0], i) || !is_var(store->indices[1], j))
      return nullptr;
    const VarSet nest_vars{i.get(), j.get(), r.get(), t.get()};
    if (reads_any(fi->end, nest_vars) || reads_any(fj->end, nest_vars) || reads_any(fr->end, nest_vars)) return nullptr;
    auto coefficients = Decomposer(t, store, nest_vars).linear(store->value);
    if (!coefficients || !coefficients->t) return nullptr;
    for (const VarInfo* v : nest_vars)
      if (analysis::live_after(fn_.body, fi, v)) return nullptr;
    remarks.push_back({fi->loc, "offload_matmul",
                       "matrix product " + store->array->name + " = " + a->array->name + (a_transposed ? ".T" : "") +
                           " @ " + b->array->name + (b_transposed ? ".T" : "") +
                           " handed to the BLAS library (the loops run instead when it cannot take the operands)"});
    auto extent = [](const Expr& e) {
      return e->type.kind == ScalarKind::Int64 ? e : Cast::make(ScalarType::i64(), e);
    };
    return MatMul::make(store->array, a->array, a_transposed, b->array, b_transposed, extent(fi->end), extent(fj->end),
                        extent(fr->end), as_f64(coefficients->t), coefficients->c ? as_f64(coefficients->c) : nullptr,
                        self, fi->loc);
  }

  const Function& fn_;
  std::vector<Expr> holding_;  // conditions of the `then` branches the visit is in
};

}  // namespace

void offload_matmul(Function& function) {
  if (!function.body) return;
  MatMulFinder finder(function);
  function.body = finder.mutate(function.body);
  for (Remark& r : finder.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
