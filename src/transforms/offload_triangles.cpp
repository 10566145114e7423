// offload_matmul: triangles of products handed to the library's syrkx
// (gemmt) and trmm (offload_matmul_impl.h).
#include "transforms/offload_matmul_impl.h"

namespace plait::transforms::offload {

namespace {

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

}  // namespace

LibraryMatch match_triangle(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding) {
  TriangleMatcher matcher(fn, fi, self, holding);
  Stmt stmt = matcher.match();
  return {stmt, matcher.remark, matcher.why, matcher.found};
}

LibraryMatch match_in_place(const Function& fn, const For* fi, const Stmt& self, const std::vector<Expr>& holding) {
  InPlaceMatcher matcher(fn, fi, self, holding);
  Stmt stmt = matcher.match();
  return {stmt, matcher.remark, matcher.why, matcher.found};
}

}  // namespace plait::transforms::offload
