#include "tensor/loop_order.h"

#include <algorithm>
#include <functional>

namespace plait::tensor {

namespace {

bool contains(const std::vector<IndexVar>& vars, const IndexVar& v) {
  return std::find(vars.begin(), vars.end(), v) != vars.end();
}

// Whether e is zero wherever none of the sparse tensors `absent` accepts
// stores a value (their accesses read zero there). Conservative: false
// unless the operators keep zeros.
bool zero_without(const IndexExpr& e, const std::function<bool(const TensorVar&)>& absent);

// The value of e when it is a number written in the program.
bool constant_of(const IndexExpr& e, double* v) {
  if (e->kind == ExprKind::Cast) return constant_of(e->a, v);
  const ir::Expr& x = e->kind == ExprKind::Literal                        ? e->literal
                      : e->kind == ExprKind::Access && !e->tensor->rank() ? e->tensor->scalar
                                                                          : nullptr;
  if (auto i = x ? x->as<ir::IntImm>() : nullptr)
    *v = static_cast<double>(i->value);
  else if (auto f = x ? x->as<ir::FloatImm>() : nullptr)
    *v = f->value;
  else
    return false;
  return true;
}

// max(a, b) (or min) is zero where a is, when b is a number at most (at least) zero.
bool bounded_by_zero(const IndexExpr& a, const IndexExpr& b, bool max,
                     const std::function<bool(const TensorVar&)>& absent) {
  double v = 0;
  return zero_without(a, absent) && constant_of(b, &v) && (max ? v <= 0 : v >= 0);
}

bool zero_without(const IndexExpr& e, const std::function<bool(const TensorVar&)>& absent) {
  double v = 0;
  switch (e->kind) {
    case ExprKind::Access:
      if (!e->tensor->is_sparse()) return constant_of(e, &v) && v == 0;
      return absent(*e->tensor);
    case ExprKind::Literal:
      return constant_of(e, &v) && v == 0;
    case ExprKind::Cast:
      return zero_without(e->a, absent);
    case ExprKind::Unary:
      return e->unary == ir::UnaryOp::Neg && zero_without(e->a, absent);
    case ExprKind::Binary:
      switch (e->binary) {
        case ir::BinaryOp::Mul:
          return zero_without(e->a, absent) || zero_without(e->b, absent);
        case ir::BinaryOp::Add:
        case ir::BinaryOp::Sub:
          return zero_without(e->a, absent) && zero_without(e->b, absent);
        case ir::BinaryOp::Max:
        case ir::BinaryOp::Min: {
          const bool max = e->binary == ir::BinaryOp::Max;
          return (zero_without(e->a, absent) && zero_without(e->b, absent)) ||
                 bounded_by_zero(e->a, e->b, max, absent) || bounded_by_zero(e->b, e->a, max, absent);
        }
        default:
          return false;
      }
    default:
      return false;
  }
}

// The loops of a statement that assembles its pattern: the rows, then the
// columns its operands store, merged.
LoopOrder merge_order(const Statement& s) {
  const TensorVar& out = *s.out;
  if (out.format != Format::csr() || s.vars.size() != 2)
    throw Refusal{s.loc, "internal: an assembled pattern is stored in CSR"};
  Loop rows, cols;
  rows.var = s.vars[0];
  rows.extent = out.shape[0];
  rows.extent_name = out.dim_name(0);
  cols.var = s.vars[1];
  cols.extent = out.shape[1];
  cols.extent_name = out.dim_name(1);
  for (const IndexExprNode* a : accesses(s.rhs)) {
    const TensorVar& t = *a->tensor;
    if (!t.is_sparse()) continue;
    if (t.format != Format::csr())
      throw Refusal{s.loc, "an elementwise operation between sparse matrices takes them in CSR; '" + t.name +
                               "' is read as " + t.format.to_string() + " here (a transpose)"};
    if (a->vars != s.vars) throw Refusal{s.loc, "internal: a merged operand is read at other coordinates"};
    bool seen = false;
    for (const TensorVarPtr& m : cols.merged) seen = seen || m->crd == t.crd;
    if (!seen) cols.merged.push_back(a->tensor);
  }
  if (cols.merged.empty() || !zero_without(s.rhs, [](const TensorVar&) { return true; }))
    throw Refusal{s.loc, "internal: the value of " + out.name + " is not zero where its operands store nothing"};
  for (const TensorVarPtr& m : cols.merged)
    if (zero_without(s.rhs, [&](const TensorVar& t) { return t.crd == m->crd; })) cols.needed.push_back(m);
  LoopOrder order;
  order.loops = {rows, cols};
  order.body = s.rhs;
  order.assembles = true;
  return order;
}

// The loops of a product of two sparse matrices: the rows, the columns the
// left operand stores in each (k) and the columns the right one stores in
// row k.
LoopOrder product_order(const Statement& s) {
  const IndexExpr& product = s.rhs->a;
  auto operand = [](IndexExpr e) {
    while (e->kind == ExprKind::Cast) e = e->a;
    return e;
  };
  if (product->kind != ExprKind::Binary || product->binary != ir::BinaryOp::Mul)
    throw Refusal{s.loc, "internal: a sparse product is a sum of products"};
  const IndexExpr a = operand(product->a);
  const IndexExpr b = operand(product->b);
  const IndexVar& k = s.rhs->var;
  auto matrix = [](const TensorVar& t) { return t.format == Format::csr() || t.format == Format::csc(); };
  if (a->kind != ExprKind::Access || b->kind != ExprKind::Access || !matrix(*a->tensor) || !matrix(*b->tensor) ||
      a->vars != std::vector<IndexVar>{s.vars[0], k} || b->vars != std::vector<IndexVar>{k, s.vars[1]})
    throw Refusal{s.loc, "internal: a sparse product reads two sparse matrices as A(i,k) * B(k,j)"};
  Loop rows, inner, cols;
  rows.var = s.vars[0];
  rows.extent = s.out->shape[0];
  rows.extent_name = s.out->dim_name(0);
  inner.var = k;
  inner.reduction = true;
  inner.tensor = a->tensor;
  inner.level = 1;
  cols.var = s.vars[1];
  cols.tensor = b->tensor;
  cols.level = 1;
  LoopOrder order;
  order.loops = {rows, inner, cols};
  order.body = product;
  order.assembles = true;
  order.sparse_product = true;
  return order;
}

}  // namespace

bool assembles(const Statement& s) {
  return s.out->is_sparse() && s.out->assembled;
}

ir::Expr extent_of(const IndexExpr& e, const IndexVar& v, std::string* name) {
  for (const IndexExprNode* a : accesses(e))
    for (size_t d = 0; d < a->vars.size(); ++d)
      // A dimension that may broadcast (an extent of 1 at run time) does not
      // give the loop's extent.
      if (a->vars[d] == v && !(d < a->broadcast.size() && a->broadcast[d])) {
        if (name) *name = a->tensor->dim_name(d);
        return a->tensor->shape[d];
      }
  return nullptr;
}

std::vector<std::pair<IndexExpr, size_t>> placed_factors(const LoopOrder& order, size_t first) {
  const std::vector<IndexExpr> fs = factors(order.body);
  std::vector<std::pair<IndexExpr, size_t>> out;
  for (const IndexExpr& f : fs) {
    size_t depth = first;
    for (size_t l = first; l < order.loops.size(); ++l) {
      const Loop& loop = order.loops[l];
      bool reads = mentions(f, loop.var);
      if (loop.positions())
        for (const IndexExprNode* a : accesses(f))
          reads = reads || (a->tensor->is_sparse() && a->tensor->crd == loop.tensor->crd);
      if (reads) depth = l + 1;
    }
    out.emplace_back(f, depth);
  }
  return out;
}

LevelChoice compressed_level(const IndexExpr& body, const IndexVar& v, const std::vector<IndexVar>& bound,
                             SourceLoc loc) {
  LevelChoice choice;
  for (const IndexExprNode* a : accesses(body)) {
    const TensorVar& t = *a->tensor;
    if (!t.is_sparse()) continue;
    for (int k = 0; k < t.format.rank(); ++k) {
      if (t.format.levels[k] != LevelKind::Compressed || a->vars[t.format.mode_order[k]] != v) continue;
      if (k > 0 && !contains(bound, a->vars[t.format.mode_order[k - 1]]))
        throw Refusal{loc, "the stored entries of '" + t.name + "' (" + t.format.to_string() +
                               ") would be searched by coordinate here: iterating them needs the " +
                               (t.format.mode_order[k] == 1 ? "rows" : "columns") +
                               " first; convert it (.tocsr() or .tocsc()) to match the operation"};
      if (choice.tensor && !choice.tensor->same_pattern(t))
        throw Refusal{loc, "'" + choice.tensor->name + "' and '" + t.name +
                               "' are sparse with different patterns; iterating both in one loop is supported only "
                               "where the result has a pattern of its own (S + T, S.multiply(T))"};
      if (!choice.tensor) choice = {a->tensor, k};
    }
  }
  return choice;
}

LoopOrder loop_order(const Statement& s, bool sums_inside) {
  if (assembles(s)) return s.rhs->kind == ExprKind::Reduce ? product_order(s) : merge_order(s);
  LoopOrder order;
  std::vector<IndexVar> sums;
  IndexExpr body = s.rhs;
  while (body->kind == ExprKind::Reduce && body->reduce == ir::ReduceOp::Add) {
    sums.push_back(body->var);
    body = body->a;
  }
  std::vector<IndexVar> outs;
  for (const IndexVar& v : s.vars)
    if (v.valid()) outs.push_back(v);
  std::vector<IndexVar> all = outs;
  all.insert(all.end(), sums.begin(), sums.end());

  std::vector<IndexVar> placed;
  auto place = [&](const IndexVar& v) {
    if (contains(all, v) && !contains(placed, v)) placed.push_back(v);
  };
  // A sparse output's pattern first, then the sparse operands, each in storage order.
  std::vector<std::pair<const TensorVar*, std::vector<IndexVar>>> sparse;
  if (s.out->is_sparse()) sparse.emplace_back(s.out.get(), s.vars);
  for (const IndexExprNode* a : accesses(body))
    if (a->tensor->is_sparse()) sparse.emplace_back(a->tensor.get(), a->vars);
  for (const auto& [t, vars] : sparse) {
    for (int k = 0; k < t->format.rank(); ++k) {
      const IndexVar& v = vars[t->format.mode_order[k]];
      if (!contains(all, v)) break;
      place(v);
    }
  }
  for (size_t d = 0; d + 1 < outs.size(); ++d) place(outs[d]);
  if (sums_inside && !outs.empty()) place(outs.back());
  for (const IndexVar& v : sums) place(v);
  if (!outs.empty()) place(outs.back());

  // The sums after the last output variable are summed in a scalar.
  size_t last_out = 0;
  for (size_t p = 0; p < placed.size(); ++p)
    if (contains(outs, placed[p])) last_out = p + 1;
  for (size_t p = placed.size(); p > last_out; --p) body = reduce(ir::ReduceOp::Add, placed[p - 1], body);
  placed.resize(last_out);

  std::vector<IndexVar> bound;
  for (const IndexVar& v : placed) {
    Loop loop;
    loop.var = v;
    loop.reduction = !contains(outs, v);
    order.accumulates = order.accumulates || loop.reduction;
    LevelChoice level = compressed_level(body, v, bound, s.loc);
    if (s.out->is_sparse() && !level.tensor) {
      // A sparse output is written at its pattern's positions: its own levels.
      for (int k = 0; k < s.out->format.rank(); ++k)
        if (s.out->format.levels[k] == LevelKind::Compressed && s.vars[s.out->format.mode_order[k]] == v)
          level = {s.out, k};
    }
    loop.tensor = level.tensor;
    loop.level = level.level;
    order.writes_part = order.writes_part || (loop.tensor && !loop.reduction && !s.out->is_sparse());
    if (!loop.tensor) {
      loop.extent = extent_of(body, v, &loop.extent_name);
      for (size_t d = 0; !loop.extent && d < s.vars.size(); ++d)
        if (s.vars[d] == v) {
          loop.extent = s.out->shape[d];
          loop.extent_name = s.out->dim_name(d);
        }
    }
    order.loops.push_back(loop);
    bound.push_back(v);
  }
  order.body = body;
  return order;
}

std::string to_string(const LoopOrder& order, const Statement& st) {
  const std::map<int, std::string> names = display_names(st);
  std::string s;
  for (size_t p = 0; p < order.loops.size(); ++p) {
    const Loop& l = order.loops[p];
    auto name = names.find(l.var.id);
    s += (p ? ", " : "") + (name != names.end() ? name->second : l.var.name);
    if (l.positions()) s += " (stored in " + l.tensor->name + ")";
    if (l.merged.empty()) continue;
    auto names_of = [](const std::vector<TensorVarPtr>& ts, const char* sep) {
      std::string out;
      for (const TensorVarPtr& t : ts) out += (out.empty() ? "" : sep) + t->name;
      return out;
    };
    const bool intersection = l.needed.size() == l.merged.size();
    s += " (stored in " + names_of(l.merged, intersection ? " and " : " or ") + ", merged";
    if (!intersection && !l.needed.empty()) s += " while " + names_of(l.needed, " and ") + " have entries";
    s += ")";
  }
  return s;
}

}  // namespace plait::tensor
