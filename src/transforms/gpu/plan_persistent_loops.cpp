// Decides which time loops run as one persistent kernel, with the scalars
// declared around them, and records the plans on the loops (see
// plan_persistent_loops.h).
#include "transforms/gpu/plan_persistent_loops.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "analysis/access_scan.h"
#include "analysis/free_scalars.h"
#include "analysis/raises.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "transforms/gpu/plan_workers.h"
#include "transforms/gpu/worker_plan_support.h"
#include "transforms/host_scopes.h"

namespace plait::transforms::gpu {

using namespace ir;

std::vector<const For*> step_parallel_loops(const std::vector<Stmt>& stmts) {
  std::vector<const For*> loops;
  for (const Stmt& st : stmts) {
    if (is_parallel_loop(st)) {
      loops.push_back(st->as<For>());
    } else if (const If* i = st->as<If>()) {
      for (const Stmt* branch : {&i->then_case, &i->else_case})
        for (const For* f : step_parallel_loops(statements_of(*branch))) loops.push_back(f);
    }
  }
  return loops;
}

const PersistentLoopPlan* persistent_loop_plan(const For* loop) {
  return loop->schedule.plan<PersistentLoopPlan>();
}

std::string PersistentLoopPlan::describe() const {
  if (!runs_persistent()) return "not one persistent kernel: " + refusal;
  std::string out = "one persistent kernel";
  for (const auto& [loop, note] : barriers.notes) out += ", no barrier after line " + std::to_string(loop->loc.line);
  if (loops_may_raise) out += ", a barrier after each parallel loop (one may raise)";
  if (step_may_raise) out += ", the step may raise";
  if (onchip) {
    out += ", on chip";
    if (registers) {
      std::string names;
      for (const ArrayVar& a : registers->arrays) names += (names.empty() ? "`" : ", `") + a->name + "`";
      out += ", " + names + " in registers (" + std::to_string(registers->slots) + " per thread)";
    } else {
      out += ", not in registers: " + no_registers;
    }
  }
  out += sizing ? ", the host counts the workers" : ", the workers unknown before the launch";
  return out;
}

namespace {

// The arrays whose elements a subtree writes (stores and atomic updates), or
// reads (loads).
template <typename Node>
ArraySet accessed_arrays(const Node& node, bool written) {
  planning::AccessCollector accesses;
  accesses.visit(node);
  ArraySet out;
  for (const planning::RawAccess& a : accesses.accesses)
    if (a.write == written) out.insert(a.array->get());
  return out;
}

// The arrays a persistent kernel's body mentions (it binds and declares
// none), in the order of their first mention: the order in which the
// kernel receives them and its versions list them.
class MentionedArrays : public IRVisitor {
 public:
  std::vector<ArrayVar> arrays;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    note(n->array);
    IRVisitor::visit(n);
  }
  void visit(const ArrayDim* n) override { note(n->array); }
  void visit(const ArraysOverlap* n) override {
    note(n->a);
    note(n->b);
  }
  void visit(const Store* n) override {
    note(n->array);
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    note(n->array);
    IRVisitor::visit(n);
  }

 private:
  void note(const ArrayVar& a) {
    if (seen_.insert(a.get()).second) arrays.push_back(a);
  }
  ArraySet seen_;
};

// Whether the persistent rule refuses the parallel loop `loop` of a step
// because its worker is a team (by the plan plan_workers recorded).
bool worker_is_team(const For* loop) {
  const WorkerLoopPlan* plan = worker_loop_plan(loop);
  if (!plan || !plan->step)
    PLAIT_INTERNAL_ERROR("the parallel loop over `" + loop->var->name + "` (line " + std::to_string(loop->loc.line) +
                         ") has no plan for a persistent kernel's step: transforms/gpu/plan_workers must run before "
                         "transforms/gpu/plan_persistent_loops");
  return plan->step->team && !plan->step->teams_when_few;
}

// Why the statements of a step (or of a branch of one) keep the loop from
// running as one persistent kernel, or "". `stored`: the arrays the loop
// body writes; the step's scalar statements may read elements of the
// others, which no thread writes during the kernel.
std::string step_refusal(const std::vector<Stmt>& stmts, const ArraySet& stored) {
  auto reads_elements = [&stored](const Expr& e) {
    for (const ArrayInfo* a : accessed_arrays(e, false))
      if (stored.count(a)) return true;
    return false;
  };
  for (const Stmt& st : stmts) {
    const std::string where = "line " + std::to_string(st->loc.line);
    if (is_parallel_loop(st)) {
      const For* f = st->as<For>();
      if (!f->schedule.reductions.empty() || !f->schedule.array_reductions.empty())
        return "the parallel loop at " + where + " has a reduction, whose value goes to the host after each step";
      if (worker_is_team(f))
        return "the parallel loop at " + where + " runs teams of threads, whose size is chosen at each launch";
      continue;
    }
    if (const Declare* d = st->as<Declare>(); d && d->var) continue;
    if (const Assign* a = st->as<Assign>()) {
      if (reads_elements(a->value))
        return where + " assigns `" + a->var->name +
               "` from elements of an array the loop writes, outside its "
               "parallel loops";
      continue;
    }
    if (const Assert* a = st->as<Assert>()) {
      if (reads_elements(a->cond)) return where + " asserts on elements of an array the loop writes";
      continue;
    }
    if (const If* i = st->as<If>()) {
      if (reads_elements(i->cond)) return where + " branches on elements of an array the loop writes";
      std::string why = step_refusal(statements_of(i->then_case), stored);
      if (why.empty() && i->else_case) why = step_refusal(statements_of(i->else_case), stored);
      if (!why.empty()) return why;
      continue;
    }
    if (st->as<MatMul>()) return where + " hands a matrix product or solve to cuBLAS, which the host calls";
    return where + " is not a parallel loop, a scalar assignment, an assertion or an `if`";
  }
  return "";
}

// Why the persistent kernel of `loop` (steps `stmts`, touching `arrays`)
// has no version with its arrays in registers, or "" with `plan` filled.
std::string register_refusal(const For* loop, const std::vector<Stmt>& stmts, const std::vector<ArrayVar>& arrays,
                             RegisterPlan* plan) {
  const std::vector<const For*> loops = step_parallel_loops(stmts);
  for (const For* f : loops)
    if (persistent_nest(f).size() != 1)
      return "the parallel loop at line " + std::to_string(f->loc.line) + " is a nest of " +
             std::to_string(persistent_nest(f).size()) + " loops";
  const ArraySet stored = accessed_arrays(loop->body, true);
  std::vector<ArrayVar> written;
  for (const ArrayVar& a : arrays)
    if (stored.count(a.get())) written.push_back(a);
  return plan_register_arrays(loops, written, plan);
}

// Whether the host can compute an expression of a step before the launch:
// from the scalars declared around the loop (`around`), `step_locals` (the
// loop variable and the scalars the step assigns) and array extents, with
// nothing that can fail.
bool step_evaluable(const Expr& e, const VarSet& around, const VarSet& step_locals) {
  for (const VarInfo* v : analysis::uses_of(e).reads)
    if (!around.count(v) && !step_locals.count(v)) return false;
  analysis::HasErrorSites fails;
  fails.visit(e);
  return accessed_arrays(e, false).empty() && !fails.found;
}

// Plans the sizing of `stmts` (a step, or a branch of it when `nested`):
// top-level assignments the host can evaluate are replayed; scalars
// assigned otherwise become unknown; each parallel loop, in either branch of
// an `if`, is counted. Returns false when a loop's bounds are unknown.
bool plan_sizing(const std::vector<Stmt>& stmts, bool nested, const VarSet& around, VarSet& step_locals,
                 std::vector<SizingAction>& actions) {
  for (const Stmt& st : stmts) {
    if (is_parallel_loop(st)) {
      for (const For* f : persistent_nest(st->as<For>()))
        for (const Expr& e : {f->begin, f->end, f->step})
          if (!step_evaluable(e, around, step_locals)) return false;
      actions.push_back({nullptr, st->as<For>()});
    } else if (const Assign* a = st->as<Assign>()) {
      if (!nested && step_evaluable(a->value, around, step_locals)) {
        step_locals.insert(a->var.get());
        actions.push_back({st, nullptr});
      } else {
        step_locals.erase(a->var.get());
      }
    } else if (const If* i = st->as<If>()) {
      if (!plan_sizing(statements_of(i->then_case), true, around, step_locals, actions)) return false;
      if (i->else_case && !plan_sizing(statements_of(i->else_case), true, around, step_locals, actions)) return false;
    } else if (st->as<Declare>() && !nested) {
      actions.push_back({st, nullptr});
    }
  }
  return true;
}

// Walks the code the CUDA emitter runs on the host (everything outside
// parallel loops), keeping the scalars declared there in scope as the
// emitter's scopes do, and records the plans of its time loops.
class PersistentPlanner : public HostScopes {
 public:
  explicit PersistentPlanner(const Function& function) : fn_(function) {}

 protected:
  using HostScopes::visit;
  Stmt visit(const For* n, const Stmt& self) override;

 private:
  PersistentLoopPlan plan_loop(const For* loop, const VarSet& around) const;
  std::string refusal(const For* loop, const std::vector<Stmt>& stmts, const VarSet& around) const;

  const Function& fn_;
};

Stmt PersistentPlanner::visit(const For* n, const Stmt& self) {
  // A parallel loop's body is a kernel's.
  if (is_parallel(n->schedule.kind)) return self;
  std::shared_ptr<PersistentLoopPlan> plan;
  if (n->schedule.kind == LoopKind::Serial && !step_parallel_loops(statements_of(n->body)).empty())
    plan = std::make_shared<PersistentLoopPlan>(plan_loop(n, declared()));
  // A persistent kernel's body is device code; a refused loop's steps run
  // on the host.
  Stmt body = n->body;
  if (!plan || !plan->runs_persistent()) body = scoped(n->body, n->var.get());
  if (!plan) return body == n->body ? self : For::make(n->var, n->begin, n->end, n->step, body, n->schedule, n->loc);
  LoopSchedule schedule = n->schedule;
  schedule.plans.push_back(std::move(plan));
  return For::make(n->var, n->begin, n->end, n->step, std::move(body), std::move(schedule), n->loc);
}

// The persistent rule (docs/cuda.md, "Time loops: persistent kernels"): the
// steps hold only parallel loops whose workers are single threads and
// scalar statements that read no element the loop writes; the body binds no
// array; no scalar declared around the loop that the body assigns is read
// after the loop or in the next step.
std::string PersistentPlanner::refusal(const For* loop, const std::vector<Stmt>& stmts, const VarSet& around) const {
  std::string why = step_refusal(stmts, accessed_arrays(loop->body, true));
  if (!why.empty()) return why;
  if (!analysis::scan(loop->body).bound.empty()) return "the loop body binds or allocates arrays";
  const VarSet written = analysis::uses_of(loop->body).writes;
  for (const Var& v : analysis::free_scalars({loop->body}, around)) {
    if (!written.count(v.get()) || !around.count(v.get())) continue;
    if (analysis::live_after(fn_.body, loop, v.get()) || analysis::may_read_before_write(loop->body, v.get()))
      return "`" + v->name +
             "` is assigned in the loop body and read after the loop or in the next step (the host "
             "needs its value)";
  }
  return "";
}

PersistentLoopPlan PersistentPlanner::plan_loop(const For* loop, const VarSet& around) const {
  PersistentLoopPlan plan;
  const std::vector<Stmt> stmts = statements_of(loop->body);
  plan.refusal = refusal(loop, stmts, around);
  if (!plan.runs_persistent()) return plan;
  // A step whose parallel loops may raise keeps a barrier after each of
  // them: there every block learns of an error before the code after the
  // loop runs. (A statement of the step outside them is followed by its
  // own barrier test.)
  for (const Stmt& st : stmts) {
    const bool raises = analysis::raises(st).any();
    plan.step_may_raise = plan.step_may_raise || raises;
    plan.loops_may_raise = plan.loops_may_raise || (raises && is_parallel_loop(st));
  }
  if (!plan.loops_may_raise) plan.barriers = plan_step_barriers(stmts);
  // Arrays that the steps may read and write on chip (one block, on the
  // host's checks), and in registers where their accesses allow it.
  MentionedArrays mentioned;
  mentioned.visit(loop->body);
  plan.onchip = !mentioned.arrays.empty();
  if (plan.onchip) {
    RegisterPlan registers;
    plan.no_registers = register_refusal(loop, stmts, mentioned.arrays, &registers);
    if (plan.no_registers.empty()) plan.registers = std::move(registers);
  }
  VarSet step_locals{loop->var.get()};
  std::vector<SizingAction> actions;
  if (plan_sizing(stmts, false, around, step_locals, actions)) plan.sizing = std::move(actions);
  return plan;
}

}  // namespace

void plan_persistent_loops(Function& function) {
  function.body = PersistentPlanner(function).walk(function);
}

}  // namespace plait::transforms::gpu
