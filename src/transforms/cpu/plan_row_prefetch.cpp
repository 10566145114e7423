// Finds the compute-bound vector pass in the body of a loop over rows and the
// row accesses of the body's passes that it prefetches, and records the plan
// on the loop (see plan_row_prefetch.h).
#include "transforms/cpu/plan_row_prefetch.h"

#include <set>
#include <utility>

#include "analysis/loop_exits.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"

namespace plait::transforms::cpu {

using namespace ir;

namespace {

// Whether a subtree calls a function that runs through vector math
// (libmvec): tens of cycles per vector of results, against about one for the
// loads and stores around it.
class CallsVectorMath : public IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const Call* n) override {
    if (has_vector_variant(n->fn) && !n->python_math) found = true;
    IRVisitor::visit(n);
  }
};

// The variables a subtree assigns or declares, the loop variables among
// them, and the arrays it declares or (re)binds.
class BodyScan : public IRVisitor {
 public:
  VarSet changed;
  ArraySet local_arrays;
  using IRVisitor::visit;

 protected:
  void visit(const Assign* n) override {
    changed.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    changed.insert(n->var.get());
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (n->var) changed.insert(n->var.get());
    if (n->array) local_arrays.insert(n->array.get());
  }
  void visit(const Allocate* n) override {
    local_arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind* n) override { local_arrays.insert(n->dst.get()); }
};

// The loads and stores of a pass's body outside loops nested in it (whose
// columns do not follow the pass's variable).
class PassAccesses : public analysis::LoopDepthVisitor {
 public:
  std::vector<const Load*> loads;
  std::vector<const Store*> stores;
  using LoopDepthVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (loop_depth() == 0) loads.push_back(n);
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    if (loop_depth() == 0) stores.push_back(n);
    IRVisitor::visit(n);
  }
};

bool is_var(const Expr& e, const Var& v) {
  const VarRef* r = e->as<VarRef>();
  return r && r->var == v;
}

bool unit_stride(const ArrayType& t, int d) {
  return (t.layout == Layout::C && d == t.ndim - 1) || (t.layout == Layout::F && d == 0);
}

// The target for `array[indices]` in `pass`, if the access walks along one
// row of the row loop's variable `row`.
bool match_access(const ArrayVar& array, const std::vector<Expr>& indices, const For* pass, const Var& row,
                  const BodyScan& body, PrefetchTarget* out) {
  if (body.local_arrays.count(array.get())) return false;
  const IntImm* begin = pass->begin->as<IntImm>();
  const IntImm* step = pass->step->as<IntImm>();
  if (!begin || !step || step->value != 1) return false;
  int row_dim = -1;
  int column_dim = -1;
  int64_t column_offset = 0;
  for (int d = 0; d < static_cast<int>(indices.size()); ++d) {
    const Expr& index = indices[static_cast<size_t>(d)];
    int64_t offset = 0;
    if (row_dim < 0 && is_var(index, row)) {
      row_dim = d;
    } else if (column_dim < 0 && analysis::var_plus_constant(index, pass->var.get(), &offset)) {
      column_dim = d;
      column_offset = offset;
    } else if (const VarRef* r = index->as<VarRef>()) {
      if (body.changed.count(r->var.get()) || r->var == row) return false;
    } else if (!index->as<IntImm>()) {
      return false;
    }
  }
  if (row_dim < 0 || column_dim < 0 || !unit_stride(array->type, column_dim)) return false;
  out->array = array;
  out->indices = indices;
  out->row_dim = row_dim;
  out->column_dim = column_dim;
  out->column_begin = begin->value;
  out->column_offset = column_offset;
  return true;
}

}  // namespace

RowPrefetchPlan row_prefetch_plan(const For* rows) {
  RowPrefetchPlan plan;
  const Block* body = rows->body->as<Block>();
  if (!body) return plan;
  std::vector<const For*> passes;
  for (const Stmt& st : body->stmts)
    if (const For* f = st->as<For>(); f && f->schedule.kind == LoopKind::Vectorized) passes.push_back(f);
  if (passes.size() < 2) return plan;
  size_t compute = passes.size();
  for (size_t p = 0; p < passes.size() && compute == passes.size(); ++p) {
    CallsVectorMath calls;
    calls.visit(passes[p]->body);
    if (calls.found) compute = p;
  }
  if (compute == passes.size()) return plan;

  BodyScan scan;
  scan.visit(rows->body);
  if (scan.changed.count(rows->var.get())) return plan;  // the body moves to another row
  std::set<std::pair<const ArrayInfo*, bool>> seen;
  for (size_t p = 0; p < passes.size(); ++p) {
    PassAccesses accesses;
    accesses.visit(passes[p]->body);
    for (const Load* l : accesses.loads) {
      PrefetchTarget t;
      if (!match_access(l->array, l->indices, passes[p], rows->var, scan, &t)) continue;
      if (!seen.insert({l->array.get(), false}).second) continue;
      t.next_row = true;
      plan.targets.push_back(std::move(t));
    }
    if (p <= compute) continue;
    for (const Store* s : accesses.stores) {
      PrefetchTarget t;
      if (!match_access(s->array, s->indices, passes[p], rows->var, scan, &t)) continue;
      if (!seen.insert({s->array.get(), true}).second) continue;
      t.write = true;
      plan.targets.push_back(std::move(t));
    }
  }
  if (!plan.targets.empty()) plan.compute = passes[compute];
  return plan;
}

std::string RowPrefetchPlan::describe() const {
  std::string next, own;
  for (const PrefetchTarget& t : targets) {
    std::string& names = t.write ? own : next;
    names += (names.empty() ? "" : ", ") + t.array->name;
  }
  std::string text = "prefetch from the chunks of the loop over " + compute->var->name + ":";
  if (!next.empty()) text += " the next row of " + next;
  if (!own.empty()) text += std::string(next.empty() ? "" : ";") + " this row of " + own;
  return text;
}

namespace {

class RowPrefetchPlanner : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const For* n, const Stmt& self) override {
    const Stmt rebuilt = IRMutator::visit(n, self);
    const For* loop = rebuilt->as<For>();
    auto plan = std::make_shared<RowPrefetchPlan>(row_prefetch_plan(loop));
    if (!plan->compute) return rebuilt;
    LoopSchedule schedule = loop->schedule;
    schedule.plans.push_back(std::move(plan));
    // The plan points into the body, which the new loop keeps.
    return For::make(loop->var, loop->begin, loop->end, loop->step, loop->body, std::move(schedule), loop->loc);
  }
};

}  // namespace

void plan_row_prefetch(Function& function) {
  function.body = RowPrefetchPlanner().mutate(function.body);
}

}  // namespace plait::transforms::cpu
