// Finds the loops the CUDA emitter may run as kernels, plans their workers
// with the scalars declared around them, and records the plans on the loops
// (see plan_workers.h).
#include "transforms/gpu/plan_workers.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "analysis/free_scalars.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "transforms/gpu/worker_plan_support.h"

namespace plait::transforms::gpu {

using namespace ir;

std::string pragma_sizes(const LoopSchedule& s) {
  std::string out;
  if (s.single_block) out += "single_block";
  if (s.block_strip > 0) out += std::string(out.empty() ? "" : ", ") + "block(" + std::to_string(s.block_strip) + ")";
  if (s.most_trips > 0) out += std::string(out.empty() ? "" : ", ") + "le(" + std::to_string(s.most_trips) + ")";
  return out;
}

void SerialLoopContents::visit(const For* n) {
  // The host's reductions and array statements are parallel simd loops;
  // a parallel loop of the user's stays one (the persistent rule's).
  parallel = parallel || n->schedule.kind == LoopKind::Parallel;
  spread = spread || is_vectorized(n->schedule.kind) || !n->schedule.reductions.empty();
  IRVisitor::visit(n);
}

const WorkerLoopPlan* worker_loop_plan(const For* loop) {
  return loop->schedule.plan<WorkerLoopPlan>();
}

namespace {

// "all x3, spread `j` (line 4), lane 0": where a worker's statements run, a
// run of statements in the same place counted once.
std::string describe_placement(const WorkerPlan& plan) {
  std::vector<std::string> places;
  std::vector<int> runs;
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    std::string place;
    switch (plan.placement[k]) {
      case Placement::AllThreads:
        place = "all";
        break;
      case Placement::FirstThread:
        place = "lane 0";
        break;
      case Placement::Spread: {
        const For* f = plan.stmts[k]->as<For>();
        place = "spread `" + f->var->name + "` (line " + std::to_string(f->loc.line) + ")";
        break;
      }
      case Placement::Nested: {
        const std::vector<WorkerPlan>& subs = plan.nested[k];
        if (const For* f = plan.stmts[k]->as<For>()) {
          place = "in step `" + f->var->name + "` (line " + std::to_string(f->loc.line) + ") [" +
                  describe_placement(subs[0]) + "]";
        } else {
          place = "if [" + describe_placement(subs[0]) + "] else [" + describe_placement(subs[1]) + "]";
        }
        break;
      }
    }
    if (!places.empty() && places.back() == place) {
      ++runs.back();
    } else {
      places.push_back(place);
      runs.push_back(1);
    }
  }
  std::string out;
  for (size_t k = 0; k < places.size(); ++k)
    out += (k ? ", " : "") + places[k] + (runs[k] > 1 ? " x" + std::to_string(runs[k]) : "");
  return out;
}

std::string describe_worker(const WorkerPlan& plan) {
  if (!plan.team) return "one thread per iteration";
  return std::string(plan.teams_when_few ? "one thread per iteration, a team when they are few"
                                         : "a team per iteration") +
         " [" + describe_placement(plan) + "]";
}

std::string describe_kernel(const KernelWorkers& k) {
  std::string out = describe_worker(k.worker);
  if (k.block_pragma)
    out += ", blocks of " + std::to_string(k.block) + " threads (block(" + std::to_string(k.block) + ") at line " +
           std::to_string(k.block_pragma->line) + ")";
  if (k.worker.team) out += ", teams of at most " + std::to_string(k.team_cap) + " threads";
  if (k.asked.team) out += ", a team of " + std::to_string(k.asked.team) + " (" + k.asked.asked_by + ")";
  const KernelVersions& v = k.versions;
  if (v.worker.team != k.worker.team) out += ", launched as one thread per iteration";
  if (v.small_team) out += ", a team of " + std::to_string(kSmallTeam);
  if (v.whole_block) out += ", the whole block";
  if (v.batch > 1) out += ", " + std::to_string(v.batch) + " iterations per thread";
  if (!v.prefetch.empty()) out += ", " + std::to_string(v.prefetch.size()) + " loads prefetched";
  if (!v.privatised.empty()) out += ", " + std::to_string(v.privatised.size()) + " arrays combined per block";
  std::vector<std::string> versions;
  if (v.staged) versions.emplace_back("staged rows");
  if (v.rows) versions.emplace_back("rows");
  if (v.wide) versions.emplace_back("wide");
  if (v.fit) versions.emplace_back("fit");
  if (v.warp) versions.emplace_back("warp");
  for (size_t i = 0; i < versions.size(); ++i) out += (i ? ", " : ", versions: ") + versions[i];
  return out;
}

}  // namespace

std::string WorkerLoopPlan::describe() const {
  std::vector<std::string> parts;
  if (kernel) parts.push_back("kernel: " + describe_kernel(*kernel));
  if (step) parts.push_back("in a persistent kernel: " + describe_worker(*step));
  if (device_loop)
    parts.push_back(device_loop->kernel
                        ? "on one team: " + describe_kernel(*device_loop->kernel)
                        : "not on one team" + (device_loop->refusal.empty() ? "" : ": " + device_loop->refusal));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

namespace {

// Walks the code the CUDA emitter runs on the host (everything outside
// parallel loops), keeping the scalars declared there in scope as the
// emitter's scopes do, and records the plans of its loops.
class WorkerPlanner : public IRMutator {
 public:
  WorkerPlanner(const Function& function, const CudaLaunchConfig& launch) : fn_(function), launch_(launch) {
    scopes_.emplace_back();
    for (const Param& p : function.params)
      if (p.scalar) scopes_.back().insert(p.scalar.get());
  }

  // A body (a loop's, a branch's, the function's): its statements are in the
  // step of a serial loop, where `step` holds the scalars declared around it.
  Stmt visit_body(const Stmt& body, const VarSet* step) {
    scopes_.emplace_back();
    Stmt out = body;
    if (const Block* b = body->as<Block>()) {
      bool changed = false;
      std::vector<Stmt> stmts;
      for (const Stmt& s : b->stmts) {
        step_ = step;
        stmts.push_back(mutate(s));
        changed = changed || stmts.back() != s;
      }
      if (changed) out = Block::make(std::move(stmts), b->loc);
    } else {
      step_ = step;
      out = mutate(body);
    }
    scopes_.pop_back();
    return out;
  }

 protected:
  using IRMutator::visit;

  Stmt visit(const Block*, const Stmt& self) override { return visit_body(self, nullptr); }
  Stmt visit(const Declare* n, const Stmt& self) override {
    if (n->var) scopes_.back().insert(n->var.get());
    return self;
  }
  // An assignment to a scalar that no declaration holds declares it, as in
  // the emitter (IR built without place_declarations).
  Stmt visit(const Assign* n, const Stmt& self) override {
    if (!in_scope(n->var.get())) scopes_.back().insert(n->var.get());
    return self;
  }
  Stmt visit(const If* n, const Stmt& self) override {
    const VarSet* step = std::exchange(step_, nullptr);
    Stmt then_case = visit_body(n->then_case, step);
    Stmt else_case = n->else_case ? visit_body(n->else_case, step) : nullptr;
    if (then_case == n->then_case && else_case == n->else_case) return self;
    return If::make(n->cond, std::move(then_case), std::move(else_case), n->loc);
  }
  Stmt visit(const While* n, const Stmt& self) override {
    step_ = nullptr;
    Stmt body = visit_body(n->body, nullptr);
    if (body == n->body) return self;
    return While::make(n->cond, std::move(body), n->loc);
  }
  Stmt visit(const MatMul* n, const Stmt& self) override {
    step_ = nullptr;
    // The loops run on the host when the library declines.
    Stmt loops = visit_body(n->loops, nullptr);
    if (loops == n->loops) return self;
    return MatMul::make(n->c, n->a, n->a_transposed, n->b, n->b_transposed, n->m, n->n, n->k, n->alpha, n->beta,
                        std::move(loops), n->loc, n->triangle);
  }
  Stmt visit(const For* n, const Stmt& self) override;

 private:
  bool in_scope(const VarInfo* v) const {
    return std::any_of(scopes_.begin(), scopes_.end(), [&](const VarSet& scope) { return scope.count(v) > 0; });
  }
  VarSet declared() const {
    VarSet out;
    for (const VarSet& scope : scopes_) out.insert(scope.begin(), scope.end());
    return out;
  }

  KernelWorkers kernel_workers(const For* loop, const VarSet& around) const;
  PragmaTeam pragma_team(const WorkerPlan& plan, int block, int cap) const;
  WorkerPlan step_workers(const For* loop, const VarSet& around_serial_loop) const;
  bool device_loop_refused(const For* loop, const SerialLoopContents& contents, const VarSet& around,
                           std::string* why) const;
  KernelWorkers device_loop_workers(const Stmt& loop, const VarSet& around) const;

  const Function& fn_;
  const CudaLaunchConfig& launch_;
  std::vector<VarSet> scopes_;
  const VarSet* step_ = nullptr;  // the statement being visited is in a serial loop's step (see visit_body)
};

Stmt WorkerPlanner::visit(const For* n, const Stmt& self) {
  const VarSet* step = std::exchange(step_, nullptr);
  const VarSet around = declared();
  auto with_plan = [&](const Stmt& loop, std::shared_ptr<WorkerLoopPlan> plan) {
    const For* f = loop->as<For>();
    LoopSchedule schedule = f->schedule;
    schedule.plans.push_back(std::move(plan));
    // The plans point into the body, which the new loop keeps.
    return For::make(f->var, f->begin, f->end, f->step, f->body, std::move(schedule), f->loc);
  };
  if (is_parallel(n->schedule.kind)) {
    // Its body is a kernel's: the emitter launches nothing from it.
    auto plan = std::make_shared<WorkerLoopPlan>();
    plan->kernel = kernel_workers(n, around);
    if (step && n->schedule.reductions.empty() && n->schedule.array_reductions.empty())
      plan->step = step_workers(n, *step);
    return with_plan(self, std::move(plan));
  }
  const bool serial = n->schedule.kind == LoopKind::Serial;
  SerialLoopContents contents;
  if (serial) contents.visit(n->body);
  std::string refusal;
  const bool refused = contents.spread && device_loop_refused(n, contents, around, &refusal);
  scopes_.push_back({n->var.get()});
  Stmt body = visit_body(n->body, serial ? &around : nullptr);
  scopes_.pop_back();
  Stmt loop =
      body == n->body ? self : For::make(n->var, n->begin, n->end, n->step, std::move(body), n->schedule, n->loc);
  if (!contents.spread) return loop;
  auto plan = std::make_shared<WorkerLoopPlan>();
  plan->device_loop.emplace();
  plan->device_loop->refusal = refusal;
  if (!refused) {
    KernelWorkers workers = device_loop_workers(loop, around);
    if (workers.worker.team) {
      plan->device_loop->kernel = std::move(workers);
    } else {
      plan->device_loop->refusal = "its steps cannot run on the threads of one team";
    }
  }
  return with_plan(loop, std::move(plan));
}

// The plan emit_parallel_kernel follows: the workers of the loop's collapsed
// nest, with the loop's reductions and privates and the scalars its body
// reads from around it living outside them.
KernelWorkers WorkerPlanner::kernel_workers(const For* loop, const VarSet& around) const {
  const std::vector<const For*> nest = collapse_nest(loop);
  const For* innermost = nest.back();
  KernelWorkers k;
  k.launch = launch_;
  // block(N) on a parallel dimension: the kernel's blocks have N threads
  // (docs/cuda.md, "Sizes from the pragmas"), the innermost such
  // dimension's N when several have one.
  const For* strip_level = nullptr;
  for (const For* f : nest)
    if (f->schedule.block_strip > 0) strip_level = f;
  k.block = launch_.threads;
  if (strip_level) {
    const int n = strip_level->schedule.block_strip;
    if (n < 32 || n > 1024 || (n & (n - 1)) != 0)
      throw CompileError(ErrorKind::Pragma,
                         "block(" + std::to_string(n) +
                             ") of a parallel dimension sets the threads of its CUDA kernel's blocks: a power of "
                             "two from 32 to 1024",
                         fn_.source, strip_level->schedule.pragma_loc);
    k.block = n;
    k.block_pragma = strip_level->schedule.pragma_loc;
  }
  k.team_cap = std::min(launch_.team_cap(), k.block);
  VarSet nest_vars, outside;
  for (const For* f : nest) nest_vars.insert(f->var.get());
  for (const Reduction& r : loop->schedule.reductions) outside.insert(r.var.get());
  for (const Var& v : loop->schedule.privates) outside.insert(v.get());
  for (const Var& v : analysis::free_scalars({innermost->body}, around))
    if (!nest_vars.count(v.get())) outside.insert(v.get());
  k.worker = plan_worker(innermost->body, nest_vars, outside);
  // A team size from the pragmas is the team whatever the number of
  // workers and whether or not the host can count the rows.
  if (k.worker.team) k.asked = pragma_team(k.worker, k.block, k.team_cap);
  if (k.asked.team) k.worker.teams_when_few = false;
  k.versions = plan_kernel_versions(loop, k.worker, k.asked, k.block, launch_, around);
  VarSet declared = around;
  declared.insert(nest_vars.begin(), nest_vars.end());
  k.team_body =
      plan_team_body(k.versions.worker, innermost->body, k.versions.cached_rows, declared, launch_.row_groups);
  for (const Reduction& r : loop->schedule.reductions) k.reduction_forms.push_back(reduction_form(loop->body, r));
  return k;
}

PragmaTeam WorkerPlanner::pragma_team(const WorkerPlan& plan, int block, int cap) const {
  PragmaTeam out;
  const int width = group_width(plan);
  for (const For* f : spread_loops(plan)) {
    const LoopSchedule& s = f->schedule;
    int team = 0;
    if (s.single_block) {
      team = block;
    } else if (s.block_strip > 0) {
      team = s.block_strip;
      if ((team & (team - 1)) != 0 || team > block)
        throw CompileError(ErrorKind::Pragma,
                           "block(" + std::to_string(team) +
                               ") of a dimension spread over a team of threads sets "
                               "the team's threads on CUDA: a power of two up to the block's " +
                               std::to_string(block),
                           fn_.source, s.pragma_loc);
    } else if (s.most_trips > 0) {
      const int64_t share = (s.most_trips + width - 1) / width;
      team = 32;
      while (team < cap && int64_t(team) * 4 < share) team *= 2;
    }
    if (team == 0) continue;
    // A block has 15 named barriers besides __syncthreads's, one per team
    // of more than a warp and less than the block (plait_cuda::team_for).
    if (team > 32 && team < block && block / team > 15) team *= 2;
    if (team > out.team) {
      out.team = team;
      out.long_rows = s.sizes_by_compiler;
      out.asked_by = s.sizes_by_compiler ? "the compiler's " + pragma_sizes(s) + " for long rows of a sparse matrix"
                                         : pragma_sizes(s) + " at line " + std::to_string(s.pragma_loc.line);
    }
    out.whole_block = out.whole_block || s.single_block;
  }
  out.whole_block = out.whole_block && out.team == block;
  return out;
}

// The plan the persistent rule asks for (plan_persistent_loops.cpp): the
// persistent kernel's own scalars (the serial loop's variable, the step's
// locals) are not the loop's outside scalars.
WorkerPlan WorkerPlanner::step_workers(const For* loop, const VarSet& around_serial_loop) const {
  const std::vector<const For*> nest = persistent_nest(loop);
  VarSet nest_vars, outside;
  for (const For* f : nest) nest_vars.insert(f->var.get());
  for (const Var& v : loop->schedule.privates) outside.insert(v.get());
  for (const Var& v : analysis::free_scalars({nest.back()->body}, around_serial_loop))
    if (around_serial_loop.count(v.get()) && !nest_vars.count(v.get())) outside.insert(v.get());
  return plan_worker(nest.back()->body, nest_vars, outside);
}

// Whether a serial loop whose steps launch kernels a team could take, with
// the scalars `around` declared around it, cannot run on the device as one
// team (docs/cuda.md, "Serial loops on the device"), and why (nothing where
// the persistent rule has said why); if it can, the plan of its worker
// decides.
bool WorkerPlanner::device_loop_refused(const For* loop, const SerialLoopContents& contents, const VarSet& around,
                                        std::string* why) const {
  if (contents.other) {
    // With parallel loops of the user's the loop is one the persistent
    // rule judged already (remarked there).
    if (!contents.parallel) *why = "its body returns, binds or allocates arrays, or calls cuBLAS";
    return true;
  }
  // Scalars the steps assign are the kernel's own: none may be needed after the loop.
  for (const VarInfo* v : planning::scalar_writes(loop->body)) {
    if (around.count(v)) {
      *why = "`" + v->name + "` is assigned in the loop body and used outside it";
      return true;
    }
  }
  if (analysis::live_after(fn_.body, loop, loop->var.get())) {
    *why = "`" + loop->var->name + "` is read after the loop";
    return true;
  }
  return false;
}

// The workers of the kernel of one iteration whose body is `loop` (the
// iteration's variable appears nowhere in it), a team of the whole block.
KernelWorkers WorkerPlanner::device_loop_workers(const Stmt& loop, const VarSet& around) const {
  const Stmt body = Block::make({loop}, loop->loc);
  VarSet outside;
  for (const Var& v : analysis::free_scalars({body}, around)) outside.insert(v.get());
  KernelWorkers k;
  k.launch = launch_;
  k.worker = plan_worker(body, {}, outside);
  k.block = launch_.threads;
  k.team_cap = std::min(launch_.team_cap(), k.block);
  k.versions = whole_block_versions(body, k.worker);
  k.team_body = plan_team_body(k.versions.worker, body, k.versions.cached_rows, around, launch_.row_groups);
  return k;
}

}  // namespace

void plan_workers(Function& function, const CudaLaunchConfig& launch) {
  function.body = WorkerPlanner(function, launch).visit_body(function.body, nullptr);
}

}  // namespace plait::transforms::gpu
