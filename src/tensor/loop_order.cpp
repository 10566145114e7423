#include "tensor/loop_order.h"

#include <algorithm>
#include <functional>

namespace plait::tensor {

namespace {

bool contains(const std::vector<IndexVar>& vars, const IndexVar& v) {
  return std::find(vars.begin(), vars.end(), v) != vars.end();
}

}  // namespace

ir::Expr extent_of(const IndexExpr& e, const IndexVar& v, std::string* name) {
  for (const IndexExprNode* a : accesses(e))
    for (size_t d = 0; d < a->vars.size(); ++d)
      // A dimension that may broadcast (an extent of 1 at run time) does not
      // give the loop's extent.
      if (a->vars[d] == v && !(d < a->broadcast.size() && a->broadcast[d])) {
        if (name)
          *name =
              d < a->tensor->dims.size() ? a->tensor->dims[d] : a->tensor->name + ".shape[" + std::to_string(d) + "]";
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
                               "' are sparse with different patterns; an operation that iterates both at once "
                               "(elementwise between two sparse operands) is not supported"};
      if (!choice.tensor) choice = {a->tensor, k};
    }
  }
  return choice;
}

LoopOrder loop_order(const Statement& s, bool sums_inside) {
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
          loop.extent_name =
              d < s.out->dims.size() ? s.out->dims[d] : s.out->name + ".shape[" + std::to_string(d) + "]";
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
  }
  return s;
}

}  // namespace plait::tensor
