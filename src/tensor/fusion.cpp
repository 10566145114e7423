#include "tensor/fusion.h"

#include <algorithm>
#include <functional>
#include <set>

#include "ir/ir_equal.h"
#include "tensor/column_reads.h"

namespace plait::tensor {

namespace {

IndexExpr product(const std::vector<IndexExpr>& fs, ScalarType type) {
  IndexExpr out = fs[0];
  for (size_t k = 1; k < fs.size(); ++k) out = binary(ir::BinaryOp::Mul, out, fs[k], type);
  return out;
}

// Reduction redundancy: sum_k(a * b) with a free of k becomes a * sum_k(b).
IndexExpr factor_sums(const IndexExpr& e, bool& changed) {
  if (!e || e->kind == ExprKind::Access || e->kind == ExprKind::Literal) return e;
  IndexExpr a = factor_sums(e->a, changed);
  IndexExpr b = factor_sums(e->b, changed);
  IndexExpr x = with_operands(e, a, b);
  if (x->kind != ExprKind::Reduce || x->reduce != ir::ReduceOp::Add) return x;
  std::vector<IndexExpr> inside, outside;
  for (const IndexExpr& f : factors(x->a)) (mentions(f, x->var) ? inside : outside).push_back(f);
  if (outside.empty() || inside.empty()) return x;
  changed = true;
  return binary(ir::BinaryOp::Mul, product(outside, x->type),
                reduce(ir::ReduceOp::Add, x->var, product(inside, x->type)), x->type);
}

// The inverse, for maximal fusion: a * sum_k(b) becomes sum_k(a * b).
IndexExpr distribute(const IndexExpr& e) {
  if (!e || e->kind == ExprKind::Access || e->kind == ExprKind::Literal) return e;
  IndexExpr x = with_operands(e, distribute(e->a), distribute(e->b));
  if (x->kind != ExprKind::Binary || x->binary != ir::BinaryOp::Mul) return x;
  auto is_sum = [](const IndexExpr& y) { return y->kind == ExprKind::Reduce && y->reduce == ir::ReduceOp::Add; };
  if (is_sum(x->a))
    return reduce(ir::ReduceOp::Add, x->a->var, distribute(binary(ir::BinaryOp::Mul, x->a->a, x->b, x->type)));
  if (is_sum(x->b))
    return reduce(ir::ReduceOp::Add, x->b->var, distribute(binary(ir::BinaryOp::Mul, x->a, x->b->a, x->type)));
  return x;
}

// Whether a sparse statement's right-hand side is zero outside its pattern:
// a product with an access of a tensor of that pattern at its own variables.
bool masked_by_pattern(const Statement& s) {
  for (const IndexExpr& f : factors(s.rhs))
    if (f->kind == ExprKind::Access && f->tensor->same_pattern(*s.out) && f->vars == s.vars) return true;
  return false;
}

// The number of accesses of t in the statements, and whether one lies inside a sum.
int count_reads(const std::vector<StatementPtr>& stmts, const TensorVar* t, bool* in_sum = nullptr) {
  int n = 0;
  std::function<void(const IndexExpr&, bool)> walk = [&](const IndexExpr& e, bool summed) {
    if (!e) return;
    if (e->kind == ExprKind::Access && e->tensor.get() == t) {
      ++n;
      if (summed && in_sum) *in_sum = true;
    }
    walk(e->a, summed || e->kind == ExprKind::Reduce);
    walk(e->b, summed || e->kind == ExprKind::Reduce);
  };
  for (const auto& s : stmts) walk(s->rhs, false);
  return n;
}

// c with its accesses of p's output replaced by p's right-hand side.
StatementPtr inline_into(const Statement& c, const Statement& p) {
  auto out = std::make_shared<Statement>(c);
  out->rhs = replace_access(c.rhs, p.out.get(), [&](const IndexExprNode& a) {
    IndexExpr e = p.rhs;
    for (size_t d = 0; d < p.vars.size(); ++d) e = rename(e, p.vars[d], a.vars[d]);
    return e;
  });
  return out;
}

bool all_valid(const std::vector<const IndexExprNode*>& reads) {
  for (const IndexExprNode* a : reads)
    for (const IndexVar& v : a->vars)
      if (!v.valid()) return false;
  return true;
}

// Inlines the statements `inlinable` accepts into their one reader, until
// none is left (an inlined statement may make its producer inlinable: `1 /
// (B @ C)` at a pattern's entries takes the division, then the product).
void inline_statements(std::vector<StatementPtr>& stmts, const TensorVar* result,
                       const std::function<bool(const Statement& producer, const Statement& consumer)>& inlinable,
                       const char* kind, Remarks& remarks) {
  for (size_t p = 0; p < stmts.size(); ++p) {
    const Statement& producer = *stmts[p];
    if (producer.out.get() == result) continue;
    bool in_sum = false;
    if (count_reads(stmts, producer.out.get(), &in_sum) != 1) continue;
    for (size_t c = p + 1; c < stmts.size(); ++c) {
      if (!reads(stmts[c]->rhs, producer.out.get())) continue;
      std::vector<const IndexExprNode*> rs;
      for (const IndexExprNode* a : accesses(stmts[c]->rhs))
        if (a->tensor == producer.out) rs.push_back(a);
      if (!all_valid(rs) || !inlinable(producer, *stmts[c])) break;
      remarks.emplace_back(stmts[c]->loc, std::string(kind) + ": " + producer.out->name + " inlined into " +
                                              stmts[c]->out->name + " (" + to_string(*stmts[c]) + ")");
      stmts[c] = inline_into(*stmts[c], producer);
      stmts.erase(stmts.begin() + static_cast<std::ptrdiff_t>(p));
      p = static_cast<size_t>(-1);  // again from the first statement
      break;
    }
  }
}

bool same_iteration(const Loop& a, const Loop& b) {
  if (a.positions() != b.positions()) return false;
  if (a.positions()) return a.tensor->crd == b.tensor->crd && a.level == b.level;
  ir::EqualOptions values;
  values.types = false;
  values.checks = false;
  return a.extent && b.extent && ir::equal(a.extent, b.extent, values);
}

// Whether c can share loop `level` of `nest`: the same iteration, and every
// temporary of the nest that c reads is read at the shared loop's element.
bool shares(const Nest& nest, const Statement& c, const LoopOrder& oc, size_t level) {
  if (level >= nest.orders[0].loops.size() || level >= oc.loops.size()) return false;
  if (!same_iteration(nest.orders[0].loops[level], oc.loops[level])) return false;
  for (size_t q = 0; q < nest.stmts.size(); ++q) {
    const Statement& p = *nest.stmts[q];
    if (level >= nest.orders[q].loops.size() || !same_iteration(nest.orders[q].loops[level], oc.loops[level]))
      return false;
    if (!reads(c.rhs, p.out.get())) continue;
    const IndexVar& pv = nest.orders[q].loops[level].var;
    auto dim = std::find(p.vars.begin(), p.vars.end(), pv);
    if (dim == p.vars.end()) return false;
    for (const IndexExprNode* a : accesses(c.rhs))
      if (a->tensor == p.out && a->vars[dim - p.vars.begin()] != oc.loops[level].var) return false;
  }
  return true;
}

}  // namespace

FusionPlan plan_fusion(const Program& program, FusionMode mode) {
  FusionPlan plan;
  std::vector<StatementPtr> stmts = program.stmts;
  const TensorVar* result = program.result.get();
  auto factor_all = [&](const char* why) {
    for (auto& s : stmts) {
      bool changed = false;
      IndexExpr rhs = factor_sums(s->rhs, changed);
      if (!changed) continue;
      auto copy = std::make_shared<Statement>(*s);
      copy->rhs = rhs;
      s = copy;
      plan.remarks.emplace_back(s->loc, std::string(why) + ": factors applied after the sum in " + to_string(*s));
    }
  };
  if (mode == FusionMode::Partial) {
    factor_all("reduction redundancy");
    inline_statements(
        stmts, result,
        [](const Statement& p, const Statement& c) {
          // Dead values: a dense temporary read only where a sparse output is
          // stored, at each entry's own element (a temporary of fewer
          // variables, a softmax's row sums, would be computed again at each
          // entry): one multiplied by an operand of the output's pattern, or
          // read by a statement over a pattern it does not assemble (whose
          // loops run over the stored entries: plait.sparse.mask(P, q @ k.T)).
          if (p.out->is_sparse() || !c.out->is_sparse() || c.rhs->kind == ExprKind::Reduce) return false;
          for (const IndexExprNode* a : accesses(c.rhs)) {
            if (a->tensor != p.out) continue;
            if (a->vars.size() != c.vars.size()) return false;
            for (const IndexVar& v : a->vars)
              if (std::find(c.vars.begin(), c.vars.end(), v) == c.vars.end()) return false;
          }
          return masked_by_pattern(c) || !assembles(c);
        },
        "dead-value redundancy (computed only at the stored entries)", plan.remarks);
    factor_all("reduction redundancy");
  } else if (mode == FusionMode::Maximal) {
    inline_statements(
        stmts, result, [](const Statement& p, const Statement&) { return !p.out->is_sparse() || masked_by_pattern(p); },
        "maximal fusion", plan.remarks);
    for (auto& s : stmts) {
      auto copy = std::make_shared<Statement>(*s);
      copy->rhs = distribute(s->rhs);
      s = copy;
    }
  }

  for (const StatementPtr& s : stmts) {
    LoopOrder order = loop_order(*s);
    if (order.sparse_product) {
      plan.remarks.emplace_back(s->loc, s->out->name + " has a pattern of its own: each row merges the rows of " +
                                            order.loops[2].tensor->name + " at the columns " +
                                            order.loops[1].tensor->name +
                                            " stores in it, in two passes (count, then fill; "
                                            "on the CPU in a dense row of sums per chunk of rows, on the GPU through a "
                                            "heap), zeros dropped: not fused with other statements");
      for (size_t l : {size_t{1}, size_t{2}})
        if (order.loops[l].tensor->format != Format::csr())
          plan.remarks.emplace_back(s->loc, order.loops[l].tensor->name +
                                                " is read as CSC (a transpose): its rows are copied into CSR first "
                                                "(a counting sort of its entries, serial)");
    } else if (order.assembles) {
      plan.remarks.emplace_back(s->loc,
                                s->out->name +
                                    " has a pattern of its own, merged from its operands' row by row in two "
                                    "passes (count, then fill), zeros dropped: not fused with other statements");
    }
    const bool alone = order.assembles || (!plan.nests.empty() && plan.nests.back().orders[0].assembles);
    if (mode != FusionMode::None && !plan.nests.empty() && !alone) {
      Nest& nest = plan.nests.back();
      size_t shared = 0;
      while (shared < nest.shared && shares(nest, *s, order, shared)) ++shared;
      if (shared > 0) {
        nest.shared = shared;
        nest.stmts.push_back(s);
        nest.orders.push_back(std::move(order));
        continue;
      }
    }
    Nest nest;
    nest.stmts.push_back(s);
    nest.shared = order.loops.size();
    nest.orders.push_back(std::move(order));
    plan.nests.push_back(std::move(nest));
  }

  // A dense product alone in its nest sums in a scalar inside its output's
  // loops, the form the BLAS library takes (transforms/offload_matmul).
  for (Nest& nest : plan.nests) {
    if (nest.stmts.size() != 1 || nest.stmts[0]->out->is_sparse()) continue;
    bool dense = true;
    for (const IndexExprNode* a : accesses(nest.stmts[0]->rhs)) dense = dense && !a->tensor->is_sparse();
    if (!dense || !nest.orders[0].accumulates) continue;
    nest.orders[0] = loop_order(*nest.stmts[0], true);
    nest.shared = nest.orders[0].loops.size();
  }

  for (const Nest& nest : plan.nests)
    for (size_t q = 0; q < nest.stmts.size(); ++q)
      plan.remarks.emplace_back(nest.stmts[q]->loc, to_string(*nest.stmts[q]) + "    [loops " +
                                                        to_string(nest.orders[q], *nest.stmts[q]) + "]");

  // Load-store redundancy: a temporary made and read inside one nest keeps
  // only the dimensions its shared loops do not index.
  for (size_t n = 0; n < plan.nests.size(); ++n) {
    const Nest& nest = plan.nests[n];
    if (nest.stmts.size() > 1) {
      std::string names;
      for (const auto& s : nest.stmts) names += (names.empty() ? "" : ", ") + s->out->name;
      std::string loops;
      const std::map<int, std::string> shown = display_names(*nest.stmts[0]);
      for (size_t l = 0; l < nest.shared; ++l) loops += (l ? ", " : "") + shown.at(nest.orders[0].loops[l].var.id);
      plan.remarks.emplace_back(nest.stmts[0]->loc, "fused: " + names + " share the loops over " + loops);
    }
    for (size_t q = 0; q < nest.stmts.size(); ++q) {
      const Statement& p = *nest.stmts[q];
      if (p.out.get() == result || nest.stmts.size() < 2) continue;
      bool read_later = false;
      for (size_t m = n + 1; m < plan.nests.size(); ++m)
        for (const auto& s : plan.nests[m].stmts) read_later = read_later || reads(s->rhs, p.out.get());
      if (read_later) continue;
      std::vector<bool> dropped(p.vars.size(), false);
      bool all = true;
      for (size_t d = 0; d < p.vars.size(); ++d) {
        for (size_t l = 0; l < nest.shared; ++l) dropped[d] = dropped[d] || nest.orders[q].loops[l].var == p.vars[d];
        all = all && dropped[d];
      }
      if (p.out->is_sparse() && !all) continue;
      if (std::find(dropped.begin(), dropped.end(), true) == dropped.end()) continue;
      plan.shrunk[p.out.get()] = dropped;
      std::string kept;
      const std::map<int, std::string> shown = display_names(p);
      for (size_t d = 0; d < p.vars.size(); ++d)
        if (!dropped[d]) kept += (kept.empty() ? "" : ",") + shown.at(p.vars[d].id);
      plan.remarks.emplace_back(p.loc, "load-store redundancy: " + p.out->name + " is never stored whole; kept as " +
                                           (all ? std::string("a scalar") : "(" + kept + ")") +
                                           " per iteration of the shared loops");
    }
  }
  plan_column_reads(program, plan);
  return plan;
}

}  // namespace plait::tensor
