#include "transforms/cpu/plan_parallel_regions.h"

#include <memory>

#include "analysis/access_scan.h"
#include "analysis/free_scalars.h"
#include "analysis/loop_exits.h"
#include "ir/ir_mutator.h"

namespace plait::transforms::cpu {

using namespace ir;
using analysis::AccessScan;
using analysis::scan;

namespace {

// Checks, statement by statement, that the body of a loop can run in one
// team of threads, and gathers what the team shares.
class RegionCheck {
 public:
  // `outside`: the scalars the loop's body uses that are declared around the
  // loop (analysis/free_scalars).
  RegionCheck(const VarSet& outside, ParallelRegionPlan* plan) : outside_(outside), plan_(plan) {}

  // Why `s` cannot run in the region ("" when it can).
  std::string stmt(const Stmt& s) {
    if (const Block* b = s->as<Block>()) {
      for (const Stmt& st : b->stmts)
        if (std::string why = stmt(st); !why.empty()) return why;
      return "";
    }
    // The library runs a product with the process's threads, outside any team.
    if (s->kind == NodeKind::MatMul) return "a matrix product in the BLAS library";
    const AccessScan sc = scan(s);
    if (!sc.has_parallel) return plain(s, sc);
    if (const If* i = s->as<If>()) {
      if (scan(i->cond).facts.expressions) return "the condition of an `if` around a parallel loop can raise an error";
      if (std::string why = stmt(i->then_case); !why.empty()) return why;
      return i->else_case ? stmt(i->else_case) : "";
    }
    const For* f = s->as<For>();
    if (!f) return "a while loop holds a parallel loop";
    if (scan(f->begin).facts.expressions || scan(f->end).facts.expressions || scan(f->step).facts.expressions)
      return "the bounds of the loop over '" + f->var->name + "' can raise an error";
    if (is_parallel(f->schedule.kind)) {
      if (plan_->parallel_loops++ == 0) {
        plan_->num_threads = f->schedule.num_threads;
      } else if (plan_->num_threads != f->schedule.num_threads) {
        return "its parallel loops ask for different numbers of threads";
      }
      // An `omp for` reduction combines into a shared variable: one declared
      // inside the loop is declared before the region instead.
      for (const Reduction& red : f->schedule.reductions)
        if (!outside_.count(red.var.get()) && hoisted_vars_.insert(red.var.get()).second)
          plan_->hoisted_vars.push_back(red.var);
      return "";
    }
    if (f->schedule.kind != LoopKind::Serial) return "a vector loop holds a parallel loop";
    if (analysis::leaves_loop(f->body))
      return "the loop over '" + f->var->name + "' around a parallel loop can end early";
    if (scan(f->body).assigned.count(f->var.get()))
      return "the body of the loop over '" + f->var->name + "' assigns its variable";
    return stmt(f->body);
  }

 private:
  // A statement that holds no parallel loop.
  std::string plain(const Stmt& s, const AccessScan& sc) {
    if (const Declare* d = s->as<Declare>()) {
      if (d->array && hoisted_arrays_.insert(d->array.get()).second) plan_->hoisted_arrays.push_back(d->array);
      return "";
    }
    if (sc.returns) return "a return inside the loop";
    if (const Assert* a = s->as<Assert>())
      return scan(a->cond).facts.expressions ? "a run-time check whose condition can itself raise an error" : "";
    if (sc.escapes) return "a break, continue or run-time check inside an `if` at the loop's level";
    if (sc.facts.allocations && s->kind != NodeKind::Allocate) return "an array is allocated inside a nested statement";
    return "";
  }

  const VarSet& outside_;
  ParallelRegionPlan* plan_;
  VarSet hoisted_vars_;
  ArraySet hoisted_arrays_;
};

ParallelRegionPlan region_plan(const For* loop) {
  ParallelRegionPlan plan;
  if (analysis::leaves_loop(loop->body)) {
    plan.refusal = "the loop can end early, by a break or a return";
    return plan;
  }
  const AccessScan all = scan(loop->body);
  if (all.assigned.count(loop->var.get())) {
    plan.refusal = "the body assigns the loop variable";
    return plan;
  }
  plan.assigned = all.assigned;
  plan.assigned.insert(loop->var.get());
  plan.may_stop = analysis::may_stop(all);
  plan.written = all.written;
  plan.bound = all.bound;
  VarSet outside;
  for (const Var& v : analysis::free_scalars({loop->body})) outside.insert(v.get());
  plan.refusal = RegionCheck(outside, &plan).stmt(loop->body);
  return plan;
}

// Serial loops holding parallel loops, outside parallel and vector loops and
// outside regions: where the emitter starts a team.
class RegionPlanner : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const For* n, const Stmt& self) override {
    // Inside a parallel or vector loop, a parallel loop runs in the thread
    // that reaches it (plan_parallel_loops serialises nested ones).
    if (n->schedule.kind != LoopKind::Serial || !scan(n->body).has_parallel) return self;
    auto plan = std::make_shared<ParallelRegionPlan>(region_plan(n));
    // A refused loop's own serial loops may still run as regions.
    const Stmt body = plan->runs_as_region() ? n->body : mutate(n->body);
    LoopSchedule schedule = n->schedule;
    schedule.plans.push_back(std::move(plan));
    return For::make(n->var, n->begin, n->end, n->step, body, std::move(schedule), n->loc);
  }
};

std::string names(const std::vector<Var>& vars, const std::vector<ArrayVar>& arrays) {
  std::string text;
  for (const Var& v : vars) text += (text.empty() ? "" : ", ") + v->name;
  for (const ArrayVar& a : arrays) text += (text.empty() ? "" : ", ") + a->name;
  return text;
}

}  // namespace

std::string ParallelRegionPlan::describe() const {
  if (!runs_as_region()) return "no parallel region: " + refusal;
  std::string text = "one parallel region for its " + std::to_string(parallel_loops) + " parallel loop(s)";
  if (num_threads > 0) text += ", " + std::to_string(num_threads) + " threads";
  const std::string shared = names(hoisted_vars, hoisted_arrays);
  if (!shared.empty()) text += ", shared: " + shared;
  return text;
}

void plan_parallel_regions(Function& function) {
  function.body = RegionPlanner().mutate(function.body);
}

}  // namespace plait::transforms::cpu
