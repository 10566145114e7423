// Pass: matrix products for the target's BLAS library (see offload_matmul.h).
#include "transforms/offload_matmul.h"

#include <optional>
#include <set>
#include <vector>

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
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
  explicit Invariant(const std::set<const VarInfo*>& nest_vars) : nest_vars_(nest_vars) {}
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
  const std::set<const VarInfo*>& nest_vars_;
};

Expr as_f64(const Expr& e) {
  return e->type.kind == ScalarKind::Float64 ? e : Cast::make(ScalarType{ScalarKind::Float64, false}, e);
}

Expr one() {
  return FloatImm::make(1.0, ScalarType{ScalarKind::Float64, false});
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
  Decomposer(const Var& t, const Store* store, const std::set<const VarInfo*>& nest_vars)
      : t_(t), store_(store), nest_vars_(nest_vars) {}

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
           is_var(l->indices[0], var_of(store_->indices[0])) && is_var(l->indices[1], var_of(store_->indices[1]));
  }
  static Var var_of(const Expr& e) { return e->as<VarRef>()->var; }

  const Var& t_;
  const Store* store_;
  const std::set<const VarInfo*>& nest_vars_;
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

bool reads_any(const Expr& e, const std::set<const VarInfo*>& vars) {
  for (const VarInfo* v : analysis::uses_of(e).reads)
    if (vars.count(v)) return true;
  return false;
}

class MatMulFinder : public IRMutator {
 public:
  explicit MatMulFinder(const Function& f) : fn_(f) {}
  std::vector<Remark> remarks;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* fi, const Stmt& self) override {
    if (Stmt m = match(fi, self)) return m;
    return IRMutator::visit(fi, self);
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
    for (const Reduction& red : fr->schedule.reductions)
      if (red.var != t || red.op != ReduceOp::Add) return nullptr;
    // t = t + A[i, r] * B[r, j]
    auto body = statements(fr->body);
    if (!body || body->size() != 1) return nullptr;
    const Assign* acc = (*body)[0]->as<Assign>();
    const Binary* sum = acc && acc->var == t ? acc->value->as<Binary>() : nullptr;
    if (!sum || sum->op != BinaryOp::Add) return nullptr;
    const Expr& product_expr = is_var(sum->a, t) ? sum->b : is_var(sum->b, t) ? sum->a : nullptr;
    const Binary* product = product_expr ? product_expr->as<Binary>() : nullptr;
    if (!product || product->op != BinaryOp::Mul || product->type.kind != dtype) return nullptr;
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
    const std::set<const VarInfo*> nest_vars{i.get(), j.get(), r.get(), t.get()};
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
};

}  // namespace

void offload_matmul(Function& function) {
  if (!function.body) return;
  MatMulFinder finder(function);
  function.body = finder.mutate(function.body);
  for (Remark& r : finder.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
