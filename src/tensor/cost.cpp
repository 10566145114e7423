#include "tensor/cost.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace plait::tensor {

Cost Cost::constant(double c) {
  Cost out;
  if (c != 0) out.terms_[{}] = c;
  return out;
}

Cost Cost::symbol(const std::string& name, ir::Expr value) {
  Cost out;
  out.terms_[{{name, 1}}] = 1;
  out.symbols_[name] = std::move(value);
  return out;
}

Cost Cost::operator+(const Cost& o) const {
  Cost out = *this;
  for (const auto& [p, c] : o.terms_) {
    double& have = out.terms_[p];
    have += c;
    if (have == 0) out.terms_.erase(p);
  }
  out.symbols_.insert(o.symbols_.begin(), o.symbols_.end());
  return out;
}

Cost Cost::operator*(const Cost& o) const {
  Cost out;
  for (const auto& [p, c] : terms_)
    for (const auto& [q, d] : o.terms_) {
      Powers r = p;
      for (const auto& [name, k] : q) {
        r[name] += k;
        if (r[name] == 0) r.erase(name);
      }
      out.terms_[r] += c * d;
    }
  out.symbols_ = symbols_;
  out.symbols_.insert(o.symbols_.begin(), o.symbols_.end());
  return out;
}

Cost Cost::per(const std::string& name, ir::Expr value) const {
  Cost inverse;
  inverse.terms_[{{name, -1}}] = 1;
  inverse.symbols_[name] = std::move(value);
  return *this * inverse;
}

std::string Cost::to_string() const {
  if (terms_.empty()) return "0";
  std::string out;
  // Highest degree first: the term that dominates at scale leads.
  std::vector<std::pair<int, std::string>> parts;
  for (const auto& [p, c] : terms_) {
    int degree = 0;
    std::string factors;
    for (const auto& [name, k] : p) {
      degree += k;
      for (int n = 0; n < std::abs(k); ++n) factors += (k > 0 ? "*" : "/") + name;
    }
    std::ostringstream coef;
    coef << c;
    std::string text = factors.empty() ? coef.str() : (c == 1 ? factors.substr(1) : coef.str() + factors);
    if (!factors.empty() && factors[0] == '/') text = coef.str() + factors;
    parts.emplace_back(-degree, text);
  }
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [degree, text] : parts) out += (out.empty() ? "" : " + ") + text;
  return out;
}

ir::Expr Cost::value(SourceLoc loc) const {
  const ScalarType f64 = ScalarType::f64();
  ir::Expr total = ir::FloatImm::make(0.0, f64, loc);
  for (const auto& [p, c] : terms_) {
    ir::Expr term = ir::FloatImm::make(c, f64, loc);
    for (const auto& [name, k] : p) {
      ir::Expr x = ir::Cast::make(f64, symbols_.at(name), false, loc);
      for (int n = 0; n < std::abs(k); ++n)
        term = ir::Binary::make(k > 0 ? ir::BinaryOp::Mul : ir::BinaryOp::Div, term, x, f64, false, loc);
    }
    total = ir::Binary::make(ir::BinaryOp::Add, total, term, f64, false, loc);
  }
  return total;
}

namespace {

Cost positions_trips(const TensorVar& t, int level) {
  const std::string nnz = (t.pattern.empty() ? t.name : t.pattern) + ".nnz";
  Cost c = Cost::symbol(nnz, t.nnz);
  if (level == 0) return c;
  const int parent = t.format.mode_order[level - 1];
  return c.per(t.dim_name(static_cast<size_t>(parent)), t.shape[parent]);
}

Cost trips(const Loop& l) {
  if (l.positions()) return positions_trips(*l.tensor, l.level);
  return Cost::symbol(l.extent_name.empty() ? "n" : l.extent_name, l.extent);
}

// The operations of one evaluation of e.
Cost ops(const IndexExpr& e) {
  switch (e->kind) {
    case ExprKind::Access:
    case ExprKind::Literal:
    case ExprKind::Cast:
      return e->a ? ops(e->a) : Cost::constant(0);
    case ExprKind::Unary:
    case ExprKind::Call:
      return Cost::constant(1) + ops(e->a);
    case ExprKind::Binary:
      return Cost::constant(1) + ops(e->a) + ops(e->b);
    case ExprKind::Reduce: {
      Loop l;
      l.var = e->var;
      for (const IndexExprNode* a : accesses(e->a)) {
        const TensorVar& t = *a->tensor;
        for (int k = 0; k < t.format.rank() && !l.tensor; ++k)
          if (t.format.levels[k] == LevelKind::Compressed && a->vars[t.format.mode_order[k]] == e->var) {
            l.tensor = a->tensor;
            l.level = k;
          }
      }
      if (!l.tensor) l.extent = extent_of(e->a, e->var, &l.extent_name);
      return trips(l) * (ops(e->a) + Cost::constant(1));
    }
  }
  return Cost::constant(0);
}

}  // namespace

Cost nest_cost(const Nest& nest) {
  Cost total = Cost::constant(0);
  for (const LoopOrder& order : nest.orders) {
    if (order.sparse_product) {
      // Each product of an entry of A and an entry of B's row there is
      // computed twice (count, then fill): A.nnz times B's mean row length.
      const TensorVar& rhs = *order.loops[2].tensor;
      const Cost products =
          positions_trips(*order.loops[1].tensor, 0) * positions_trips(rhs, 0).per(rhs.dim_name(0), rhs.shape[0]);
      total = total + Cost::constant(2) * products * (ops(order.body) + Cost::constant(1));
      continue;
    }
    if (order.assembles) {
      // Each merged entry is visited twice (count, then fill), its value
      // computed and compared with zero each time.
      for (const TensorVarPtr& t : order.loops.back().merged)
        total = total + Cost::constant(2) * positions_trips(*t, 0) * (ops(order.body) + Cost::constant(1));
      continue;
    }
    std::vector<Cost> outer(order.loops.size() + 1, Cost::constant(1));
    for (size_t l = 0; l < order.loops.size(); ++l) outer[l + 1] = outer[l] * trips(order.loops[l]);
    // Factors placed before the statement's own loops run once per iteration of the shared ones.
    bool first = true;
    for (const auto& [f, depth] : placed_factors(order, nest.shared)) {
      total = total + outer[depth] * (ops(f) + Cost::constant(first ? 0 : 1));
      first = false;
    }
    if (order.accumulates) total = total + outer.back();
  }
  return total;
}

Cost plan_cost(const FusionPlan& plan) {
  Cost total = Cost::constant(0);
  for (const Nest& nest : plan.nests) total = total + nest_cost(nest);
  return total;
}

}  // namespace plait::tensor
