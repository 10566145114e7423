// Plans the body of a team worker for the CUDA emitter (see team_body_plan.h).
#include "transforms/gpu/team_body_plan.h"

#include <algorithm>
#include <string>
#include <utility>

#include "ir/ir_visitor.h"
#include "transforms/gpu/worker_plan_support.h"

namespace plait::transforms::gpu {

using namespace ir;

namespace {

// The array accesses of a placed statement list, all its statements at
// any depth, as a later iteration of a loop assigning `changing` sees them.
std::vector<ArrayAccess> team_accesses(const WorkerPlan& plan, const VarSet& written, const VarSet* changing) {
  std::vector<ArrayAccess> out;
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    std::vector<ArrayAccess> more;
    if (plan.placement[k] == Placement::Nested) {
      more = control_accesses(plan.stmts[k]);
      for (const WorkerPlan& sub : plan.nested[k]) {
        std::vector<ArrayAccess> inner = team_accesses(sub, written, changing);
        more.insert(more.end(), inner.begin(), inner.end());
      }
    } else {
      more = array_accesses(plan.stmts[k], plan.placement[k], written, changing);
    }
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

// Walks a team's statements in the order the kernel runs them, with the
// accesses since the last barrier (`pending`), placing a barrier before a
// statement whose accesses need one (needs_barrier). A broadcast through
// shared memory waits at two barriers of its own, after which nothing is
// pending; so does a spread loop with reductions (the team combines them).
// The scalars in scope follow the kernel's blocks, as a broadcast sends
// only scalars declared before the statement that assigns them.
class Barriers {
 public:
  Barriers(const VarSet& written, const VarSet& declared) : written_(written) { scopes_.push_back(declared); }

  void statements(WorkerPlan& plan, std::vector<ArrayAccess>& pending) {
    plan.barrier.assign(plan.stmts.size(), "");
    plan.broadcast.assign(plan.stmts.size(), {});
    for (size_t k = 0; k < plan.stmts.size(); ++k) {
      const Stmt& s = plan.stmts[k];
      const Placement placement = plan.placement[k];
      if (placement == Placement::Nested) {
        nested(plan, k, pending);
        continue;
      }
      const std::vector<ArrayAccess> accesses = array_accesses(s, placement, written_);
      barrier_before(plan, k, accesses, pending);
      switch (placement) {
        case Placement::Nested:
          break;
        case Placement::Spread:
          if (!s->as<For>()->schedule.reductions.empty())
            pending.clear();
          else
            pending.insert(pending.end(), accesses.begin(), accesses.end());
          break;
        case Placement::AllThreads:
          // Every thread runs it in the current block: what it declares
          // stays in scope.
          if (const Declare* d = s->as<Declare>(); d && d->var) scopes_.back().insert(d->var.get());
          if (const Assign* a = s->as<Assign>()) scopes_.back().insert(a->var.get());
          pending.insert(pending.end(), accesses.begin(), accesses.end());
          break;
        case Placement::FirstThread: {
          analysis::ScalarMentions mentions;
          mentions.visit(s);
          for (const Var& v : mentions.used)
            if (mentions.written.count(v.get()) && declared(v.get())) plan.broadcast[k].push_back(v);
          if (plan.broadcast[k].empty())
            pending.insert(pending.end(), accesses.begin(), accesses.end());
          else
            pending.clear();
          break;
        }
      }
    }
  }

 private:
  bool declared(const VarInfo* v) const {
    return std::any_of(scopes_.begin(), scopes_.end(), [&](const VarSet& scope) { return scope.count(v) > 0; });
  }

  void barrier_before(WorkerPlan& plan, size_t k, const std::vector<ArrayAccess>& accesses,
                      std::vector<ArrayAccess>& pending) {
    std::string array_name;
    if (!needs_barrier(pending, accesses, &array_name)) return;
    plan.barrier[k] = array_name;
    pending.clear();
  }

  // An `if` or a serial loop that every thread runs in step: the accesses
  // of a loop's later iterations are pending at its start and after it.
  void nested(WorkerPlan& plan, size_t k, std::vector<ArrayAccess>& pending) {
    const Stmt& s = plan.stmts[k];
    std::vector<WorkerPlan>& subs = plan.nested[k];
    barrier_before(plan, k, control_accesses(s), pending);
    if (s->as<If>()) {
      std::vector<ArrayAccess> else_pending = pending;
      scopes_.emplace_back();
      statements(subs[0], pending);
      scopes_.pop_back();
      if (!subs[1].stmts.empty()) {
        scopes_.emplace_back();
        statements(subs[1], else_pending);
        scopes_.pop_back();
      }
      pending.insert(pending.end(), else_pending.begin(), else_pending.end());
      return;
    }
    const For* f = s->as<For>();
    const VarSet changing = planning::scalar_writes(s);
    const std::vector<ArrayAccess> carried = team_accesses(subs[0], written_, &changing);
    pending.insert(pending.end(), carried.begin(), carried.end());
    scopes_.push_back({f->var.get()});
    statements(subs[0], pending);
    scopes_.pop_back();
    pending.insert(pending.end(), carried.begin(), carried.end());
  }

  const VarSet& written_;
  std::vector<VarSet> scopes_;
};

}  // namespace

TeamBody plan_team_body(WorkerPlan& plan, const Stmt& body, const std::vector<CachedRow>& rows, const VarSet& declared,
                        int row_groups) {
  TeamBody out;
  if (!plan.team) return out;
  const VarSet written = planning::scalar_writes(body);
  std::vector<ArrayAccess> pending;
  Barriers(written, declared).statements(plan, pending);
  out.group_width = group_width(plan);
  out.cached_values = plan_cached_values(plan, rows, written, row_cache_slots(out.group_width, row_groups));
  // A loop that keeps rows in registers does not run its iterations in pairs.
  std::vector<const For*> row_loops;
  for (const CachedRow& row : rows)
    for (size_t k : row.loops) row_loops.push_back(plan.stmts[k]->as<For>());
  for (const For* f : spread_loops(plan)) {
    PairedLoop paired;
    if (std::find(row_loops.begin(), row_loops.end(), f) == row_loops.end() && paired_loop(f, &paired)) {
      out.paired.emplace(f, std::move(paired));
    } else if (out.group_width > 1) {
      out.groups.emplace(f, group_accesses(f));
    }
    std::vector<ReductionForm>& forms = out.reductions[f];
    for (const Reduction& r : f->schedule.reductions) forms.push_back(reduction_form(f->body, r));
  }
  return out;
}

}  // namespace plait::transforms::gpu
