// offload_matmul: NPBench's symm row loop handed to the library's symm
// (offload_matmul_impl.h).
#include "transforms/offload_matmul_impl.h"

namespace plait::transforms::offload {

namespace {

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
             ir::equal(factors.coefficient, alpha);
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

}  // namespace

LibraryMatch match_symmetric(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding) {
  SymmetricMatcher matcher(fn, fi, self, holding);
  Stmt stmt = matcher.match();
  return {stmt, matcher.remark, matcher.why, matcher.found};
}

}  // namespace plait::transforms::offload
