#include "transforms/cpu/plan_region_statements.h"

#include <memory>

#include "analysis/access_scan.h"
#include "analysis/free_scalars.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "transforms/cpu/plan_parallel_regions.h"
#include "transforms/host_scopes.h"

namespace plait::transforms::cpu {

using namespace ir;
using analysis::AccessScan;
using analysis::intersects;
using analysis::scan;

namespace {

// Reads made by every thread since the last barrier: a construct that writes
// any of them waits for the team first.
struct PendingReads {
  VarSet vars;
  ArraySet loaded, dims;
  bool empty() const { return vars.empty() && loaded.empty() && dims.empty(); }
  void add(const PendingReads& other) {
    vars.insert(other.vars.begin(), other.vars.end());
    loaded.insert(other.loaded.begin(), other.loaded.end());
    dims.insert(other.dims.begin(), other.dims.end());
  }
};

// Plans the statements of one region, walking them as every thread does,
// with the scalars declared at each point as the emitter declares them.
class RegionStatements {
 public:
  // `scopes`: the scalars declared around the loop, its hoisted accumulators
  // included; all of them are shared.
  RegionStatements(const ParallelRegionPlan& region, std::vector<VarSet> scopes)
      : region_(region), scopes_(std::move(scopes)), outer_(scopes_.size()) {
    for (const Var& v : region.hoisted_vars) hoisted_.insert(v.get());
  }

  RegionSteps loop_body(const For* loop) {
    // Each thread counts with its own copy of the loop variable.
    scopes_.emplace_back();
    scopes_.back().insert(loop->var.get());
    const PendingReads at_entry = pending_;
    RegionSteps body = stmts(loop->body);
    body.barrier_at_end = !pending_.empty();
    pending_ = at_entry;  // the loop may run no iteration
    scopes_.pop_back();
    return body;
  }

 private:
  bool declared(const VarInfo* v) const {
    for (const VarSet& scope : scopes_)
      if (scope.count(v)) return true;
    return false;
  }
  bool shared(const VarInfo* v) const {
    for (size_t i = 0; i < outer_; ++i)
      if (scopes_[i].count(v)) return true;
    return false;
  }

  Placement placement(const Stmt& s) const {
    const AccessScan sc = scan(s);
    if (sc.has_parallel) return Placement::Structure;
    if (const Declare* d = s->as<Declare>()) {
      if (d->array) return Placement::Single;  // empties the shared array
      return hoisted_.count(d->var.get()) ? Placement::Single : Placement::Redundant;
    }
    if (s->kind == NodeKind::Assert) return Placement::Check;
    if (sc.facts.expressions || sc.facts.allocations || sc.returns || sc.facts.checks || sc.has_loop || sc.escapes ||
        !sc.written.empty() || !sc.bound.empty())
      return Placement::Single;
    for (const VarInfo* v : sc.assigned)
      if (shared(v)) return Placement::Single;
    return Placement::Redundant;
  }

  // Records what every thread has just read of what the region changes.
  void note_reads(const AccessScan& sc) {
    for (const VarInfo* v : sc.read)
      if (region_.assigned.count(v) && shared(v)) pending_.vars.insert(v);
    for (const ArrayInfo* a : sc.loaded)
      if (region_.written.count(a) || region_.bound.count(a)) pending_.loaded.insert(a);
    for (const ArrayInfo* a : sc.dims)
      if (region_.bound.count(a)) pending_.dims.insert(a);
  }

  // Whether a construct with these writes waits for the team first.
  bool barrier_before(const AccessScan& writes) {
    const PendingReads& p = pending_;
    if (intersects(writes.assigned, p.vars) || intersects(writes.written, p.loaded) ||
        intersects(writes.bound, p.loaded) || intersects(writes.bound, p.dims)) {
      pending_ = {};
      return true;
    }
    return false;
  }

  RegionSteps stmts(const Stmt& body) {
    std::vector<Stmt> list;
    if (const Block* b = body->as<Block>()) {
      list = b->stmts;
    } else {
      list.push_back(body);
    }
    RegionSteps out;
    for (size_t i = 0; i < list.size();) {
      const Placement p = placement(list[i]);
      if (p != Placement::Single) {
        out.steps.push_back(step(list[i], p));
        ++i;
        continue;
      }
      // Consecutive single statements share one `omp single` (one barrier);
      // an allocation ends the group, whose failure every thread checks.
      size_t j = i + 1;
      while (j < list.size() && list[j - 1]->kind != NodeKind::Allocate && placement(list[j]) == Placement::Single) ++j;
      out.steps.push_back(single(std::vector<Stmt>(list.begin() + static_cast<std::ptrdiff_t>(i),
                                                   list.begin() + static_cast<std::ptrdiff_t>(j))));
      i = j;
    }
    return out;
  }

  RegionSteps nested(const Stmt& s) {
    scopes_.emplace_back();
    RegionSteps out = stmts(s);
    scopes_.pop_back();
    return out;
  }

  RegionStep step(const Stmt& s, Placement p) {
    RegionStep out;
    out.placement = p;
    out.stmts.push_back(s);
    switch (p) {
      case Placement::Single:
        break;
      case Placement::Redundant:
        // A declaration, or an assignment to a scalar that none holds,
        // declares it in each thread for the rest of the block.
        if (const Declare* d = s->as<Declare>()) scopes_.back().insert(d->var.get());
        if (const Assign* a = s->as<Assign>(); a && !declared(a->var.get())) scopes_.back().insert(a->var.get());
        note_reads(scan(s));
        break;
      case Placement::Check:
        note_reads(scan(s));
        break;
      case Placement::Structure:
        structure(s, &out);
        break;
    }
    return out;
  }

  void structure(const Stmt& s, RegionStep* out) {
    if (const If* i = s->as<If>()) {
      note_reads(scan(i->cond));
      const PendingReads at_entry = pending_;
      out->nested.push_back(nested(i->then_case));
      if (i->else_case) {
        const PendingReads after_then = pending_;
        pending_ = at_entry;
        out->nested.push_back(nested(i->else_case));
        pending_.add(after_then);
      } else {
        pending_.add(at_entry);
      }
      return;
    }
    if (s->kind == NodeKind::Block) {
      out->nested.push_back(nested(s));
      return;
    }
    const For* f = s->as<For>();
    if (is_parallel(f->schedule.kind)) return shared_loop(f, out);
    // A serial loop every thread runs.
    note_reads(scan(f->begin));
    note_reads(scan(f->end));
    note_reads(scan(f->step));
    out->nested.push_back(loop_body(f));
    const VarInfo* v = f->var.get();
    if (shared(v)) {
      AccessScan writes;
      writes.assigned.insert(v);
      out->barrier_before_copy_back = barrier_before(writes);
      out->single_copy_back.insert(v);
      pending_ = {};  // the barrier ending the single
    }
  }

  // A parallel loop whose iterations the team shares out (`omp for`).
  void shared_loop(const For* loop, RegionStep* out) {
    const std::vector<const For*> nest = collapse_nest(loop);
    // Every thread has read the bounds; the loop may write what they read.
    for (const For* f : nest) {
      note_reads(scan(f->begin));
      note_reads(scan(f->end));
      note_reads(scan(f->step));
    }
    out->barrier = barrier_before(scan(loop));
    pending_ = {};  // the barrier ending the `omp for`
    for (const For* f : nest)
      if (shared(f->var.get())) out->single_copy_back.insert(f->var.get());
  }

  RegionStep single(const std::vector<Stmt>& group) {
    RegionStep out;
    out.placement = Placement::Single;
    out.stmts = group;
    AccessScan writes;
    for (const Stmt& s : group) writes.visit(s);
    out.barrier = barrier_before(writes);
    // A variable that a statement of the group declares for the rest of the
    // block is declared before the construct, in every thread.
    for (const Stmt& s : group) {
      const Assign* a = s->as<Assign>();
      if (a && !declared(a->var.get())) {
        out.declared_before.push_back(a->var);
        scopes_.back().insert(a->var.get());
      }
    }
    out.may_stop = analysis::may_stop(writes);
    for (const VarInfo* v : writes.assigned)
      if (declared(v) && !shared(v)) out.copied.insert(v);
    pending_ = {};  // the barrier ending the single
    return out;
  }

  const ParallelRegionPlan& region_;
  VarSet hoisted_;
  std::vector<VarSet> scopes_;
  size_t outer_;  // scopes_ below this index are outside the region
  PendingReads pending_;
};

// Walks the code outside regions, keeping the scalars declared there in scope
// as the emitter's scopes do, and records the plans of the regions' loops.
class StatementsPlanner : public HostScopes {
 protected:
  using HostScopes::visit;

  Stmt visit(const For* n, const Stmt& self) override {
    const auto* region = n->schedule.plan<ParallelRegionPlan>();
    if (region && region->runs_as_region()) {
      // The region declares its accumulators before it, beside the loop.
      for (const Var& v : region->hoisted_vars) declare(v.get());
      const VarSet around = declared();
      auto plan = std::make_shared<RegionStatementsPlan>();
      for (const Var& v : analysis::free_scalars({self}, around))
        if (around.count(v.get())) plan->shared.insert(v.get());
      plan->body = RegionStatements(*region, scopes()).loop_body(n);
      LoopSchedule schedule = n->schedule;
      schedule.plans.push_back(std::move(plan));
      return For::make(n->var, n->begin, n->end, n->step, n->body, std::move(schedule), n->loc);
    }
    // Inside a parallel or vector loop no loop runs as a region.
    if (n->schedule.kind != LoopKind::Serial) return self;
    Stmt body = scoped(n->body, n->var.get());
    if (body == n->body) return self;
    return For::make(n->var, n->begin, n->end, n->step, std::move(body), n->schedule, n->loc);
  }
};

std::string render(const RegionSteps& steps) {
  std::vector<std::string> parts;
  for (const RegionStep& s : steps.steps) {
    if (s.barrier) parts.push_back("barrier");
    switch (s.placement) {
      case Placement::Single:
        parts.push_back(s.stmts.size() > 1 ? "single(" + std::to_string(s.stmts.size()) + ")" : "single");
        continue;
      case Placement::Redundant:
        parts.push_back("all");
        continue;
      case Placement::Check:
        parts.push_back("check");
        continue;
      case Placement::Structure:
        break;
    }
    const Stmt& st = s.stmts[0];
    if (const For* f = st->as<For>()) {
      parts.push_back(is_parallel(f->schedule.kind) ? "for " + f->var->name
                                                    : "loop " + f->var->name + " {" + render(s.nested[0]) + "}");
    } else if (st->kind == NodeKind::If) {
      parts.push_back("if {" + render(s.nested[0]) + "}" +
                      (s.nested.size() > 1 ? " else {" + render(s.nested[1]) + "}" : ""));
    } else {
      parts.push_back("{" + render(s.nested[0]) + "}");
    }
    if (s.barrier_before_copy_back) parts.push_back("barrier");
    for (const VarInfo* v : s.single_copy_back) parts.push_back("single last " + v->name);
  }
  if (steps.barrier_at_end) parts.push_back("barrier");
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text;
}

}  // namespace

std::string RegionStatementsPlan::describe() const {
  return "team: " + render(body);
}

std::vector<const For*> collapse_nest(const For* outer) {
  std::vector<const For*> nest{outer};
  VarSet vars{outer->var.get()};
  while (static_cast<int>(nest.size()) < outer->schedule.collapse) {
    const For* inner = single_loop(nest.back()->body);
    if (!inner) return nest;
    if (analysis::reads_any(inner->begin, vars) || analysis::reads_any(inner->end, vars) ||
        analysis::reads_any(inner->step, vars))
      return nest;
    nest.push_back(inner);
    vars.insert(inner->var.get());
  }
  return nest;
}

void plan_region_statements(Function& function) {
  function.body = StatementsPlanner().walk(function);
}

}  // namespace plait::transforms::cpu
