// offload_matmul: forward substitutions handed to the library's trsv
// (offload_matmul_impl.h).
#include "transforms/offload_matmul_impl.h"

namespace plait::transforms::offload {

namespace {

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
      if (!ir::equal(unwrapped(x[d]), unwrapped(y[d]))) return false;
    return true;
  }
  // A load of x (of x's row, for a row of a matrix).
  bool is_vector(const Load* l) const {
    return l && l->array == x_ && l->indices.size() == static_cast<size_t>(x_->type.ndim) &&
           (!vector_row_ || ir::equal(unwrapped(l->indices[0]), unwrapped(vector_row_)));
  }
  // The load of x's element that `store` writes.
  static bool element_of(const Expr& e, const Store* store) {
    const Load* l = e->as<Load>();
    return l && l->array == store->array && !l->checked && same_indices(l->indices, store->indices);
  }
  // b[i] for the x[i] that `store` writes (x[k, i] itself for a row).
  bool same_element(const Load* rhs, const Store* store) const {
    if (vector_row_) return rhs->array == x_ && same_indices(rhs->indices, store->indices);
    return rhs->indices.size() == 1 && ir::equal(unwrapped(rhs->indices[0]), unwrapped(store->indices[0]));
  }

  ArrayVar x_;
  ScalarKind dtype_ = ScalarKind::Float64;
  Expr vector_row_;  // x's row, for a row of a matrix
};

}  // namespace

LibraryMatch match_solve(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding) {
  SolveMatcher matcher(fn, fi, self, holding);
  Stmt stmt = matcher.match();
  return {stmt, matcher.remark, matcher.why, matcher.found};
}

}  // namespace plait::transforms::offload
