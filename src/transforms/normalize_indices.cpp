// Pass: wrap-around of negative indices (see normalize_indices.h).
#include "transforms/normalize_indices.h"

#include <map>

#include "analysis/index_bounds.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

// How often each variable is assigned, and its value when assigned once:
// such a variable has the bound of that value everywhere after it.
struct SingleAssignments : ir::IRVisitor {
  ir::VarMap<int> count;
  ir::VarMap<ir::Expr> value;
  using IRVisitor::visit;
  void visit(const ir::Assign* a) override {
    ++count[a->var.get()];
    value[a->var.get()] = a->value;
    IRVisitor::visit(a);
  }
  void visit(const ir::For* f) override {
    count[f->var.get()] += 2;  // loop variables get their bounds from the loop
    IRVisitor::visit(f);
  }
};

class IndexNormalizer : public ir::IRMutator {
 public:
  explicit IndexNormalizer(const ir::Function& f) {
    SingleAssignments sa;
    sa.visit(f.body);
    // Resolve single assignments in program order of dependence: a few
    // sweeps reach a fixed point for chains such as n = a.shape[0]; m = n - 1.
    for (int sweep = 0; sweep < 4; ++sweep)
      for (const auto& [var, n] : sa.count) {
        if (n != 1 || var->is_param || bounds_.count(var)) continue;
        auto lb = analysis::lower_bound(sa.value.at(var), bounds_);
        // Declared variables hold zero before their assignment, so the
        // bound covers that value too.
        if (lb) bounds_[var] = std::min<int64_t>(*lb, 0);
      }
  }

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt& self) override {
    std::optional<int64_t> lb;
    auto step = f->step->as<ir::IntImm>();
    bool reassigned = analysis::uses_of(f->body).writes.count(f->var.get()) > 0;
    if (step && !reassigned) {
      if (step->value > 0) lb = analysis::lower_bound(f->begin, bounds_);
      else if (auto e = analysis::lower_bound(f->end, bounds_)) lb = *e + 1;
    }
    auto saved = bounds_.find(f->var.get()) != bounds_.end() ? std::optional<int64_t>(bounds_.at(f->var.get())) : std::nullopt;
    if (lb) bounds_[f->var.get()] = *lb;
    else bounds_.erase(f->var.get());
    ir::Stmt out = IRMutator::visit(f, self);
    if (saved) bounds_[f->var.get()] = *saved;
    else bounds_.erase(f->var.get());
    return out;
  }
  ir::Expr visit(const ir::Load* l, const ir::Expr& self) override {
    bool changed = false;
    std::vector<ir::Expr> idx = wrap(l->array, mutate_exprs(l->indices, &changed), &changed);
    if (!changed) return self;
    return ir::Load::make(l->array, idx, l->checked, l->loc);
  }
  ir::Stmt visit(const ir::Store* s, const ir::Stmt& self) override {
    bool changed = false;
    std::vector<ir::Expr> idx = wrap(s->array, mutate_exprs(s->indices, &changed), &changed);
    ir::Expr v = mutate(s->value);
    if (!changed && v == s->value) return self;
    return ir::Store::make(s->array, idx, v, s->checked, s->loc);
  }
  ir::Stmt visit(const ir::AtomicUpdate* s, const ir::Stmt& self) override {
    bool changed = false;
    std::vector<ir::Expr> idx = wrap(s->array, mutate_exprs(s->indices, &changed), &changed);
    ir::Expr v = mutate(s->value);
    if (!changed && v == s->value) return self;
    return ir::AtomicUpdate::make(s->array, idx, s->op, v, s->checked, s->loc);
  }

 private:
  std::vector<ir::Expr> wrap(const ir::ArrayVar& a, std::vector<ir::Expr> idx, bool* changed) {
    if (a->indices_in_range) return idx;
    for (size_t d = 0; d < idx.size(); ++d) {
      auto lb = analysis::lower_bound(idx[d], bounds_);
      if (lb && *lb >= 0) continue;
      const ir::Expr& i = idx[d];
      ir::Expr extent_here = ir::ArrayDim::make(a, static_cast<int>(d), i->loc);
      if (i->as<ir::IntImm>()) {
        // A negative constant counts from the end: a[-1] is a[n - 1].
        idx[d] = ir::Binary::make(ir::BinaryOp::Add, extent_here, i, i->type, false, i->loc);
        *changed = true;
        continue;
      }
      ir::Expr zero = ir::IntImm::make(0, i->type, i->loc);
      ir::Expr wrapped = ir::Binary::make(ir::BinaryOp::Add, i, extent_here, i->type, false, i->loc);
      idx[d] = ir::Select::make(ir::Compare::make(ir::CompareOp::LT, i, zero, i->loc), wrapped, i, i->loc);
      *changed = true;
    }
    return idx;
  }

  analysis::LowerBounds bounds_;
};

}  // namespace

void normalize_indices(ir::Function& function) {
  IndexNormalizer n(function);
  function.body = n.mutate(function.body);
}

}  // namespace plait::transforms
