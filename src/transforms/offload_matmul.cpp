// Pass: matrix products for the target's BLAS library (see offload_matmul.h).
#include "transforms/offload_matmul.h"

#include "transforms/offload_matmul_impl.h"

namespace plait::transforms {

namespace {

using namespace offload;

class MatMulFinder : public IRMutator {
 public:
  MatMulFinder(const Function& f, BlasEntries entries) : fn_(f), entries_(entries) {}
  std::vector<Remark> remarks;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* fi, const Stmt& self) override {
    if (Stmt m = match(fi, self)) return m;
    const LibraryMatch triangle = entries_.triangles ? match_triangle(fn_, fi, self, holding_) : LibraryMatch{};
    if (Stmt m = triangle.stmt) {
      remarks.push_back({fi->loc, "offload_matmul", triangle.remark});
      return m;
    }
    if (triangle.found)
      remarks.push_back({fi->loc, "offload_matmul",
                         "triangular update kept as loops, not handed to the BLAS library: " + triangle.why});
    const LibraryMatch in_place = entries_.in_place ? match_in_place(fn_, fi, self, holding_) : LibraryMatch{};
    if (Stmt m = in_place.stmt) {
      remarks.push_back({fi->loc, "offload_matmul", in_place.remark});
      return m;
    }
    if (in_place.found)
      remarks.push_back({fi->loc, "offload_matmul",
                         "triangular product in place kept as loops, not handed to the BLAS library: " + in_place.why});
    const LibraryMatch solve = entries_.solves ? match_solve(fn_, fi, self, holding_) : LibraryMatch{};
    if (Stmt m = solve.stmt) {
      remarks.push_back({fi->loc, "offload_matmul", solve.remark});
      return m;
    }
    if (solve.found)
      remarks.push_back(
          {fi->loc, "offload_matmul", "triangular solve kept as a loop, not handed to the BLAS library: " + solve.why});
    const LibraryMatch symmetric = entries_.symmetric ? match_symmetric(fn_, fi, self, holding_) : LibraryMatch{};
    if (Stmt m = symmetric.stmt) {
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
  BlasEntries entries_;
  std::vector<Expr> holding_;  // conditions of the `then` branches the visit is in
};

}  // namespace

void offload_matmul(Function& function, BlasEntries entries) {
  if (!function.body) return;
  MatMulFinder finder(function, entries);
  function.body = finder.mutate(function.body);
  for (Remark& r : finder.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
