// Plans a kernel's versions and the host's sizing of its teams from its
// workers (see kernel_versions.h).
#include "transforms/gpu/kernel_versions.h"

#include <algorithm>

#include "analysis/access_scan.h"
#include "analysis/var_uses.h"
#include "support/diagnostics.h"
#include "transforms/gpu/worker_plan_support.h"

namespace plait::transforms::gpu {

using namespace ir;

namespace {

// The arrays with a declaration in a worker body: its own, which the host
// does not have before the launch.
class DeclaredArrays : public IRVisitor {
 public:
  ArraySet arrays;
  using IRVisitor::visit;

 protected:
  void visit(const Declare* n) override {
    if (n->array) arrays.insert(n->array.get());
  }
};

// The allocations of a worker body: for each, the branch conditions around
// it (condition, and whether the allocation is on its true side) and
// whether a loop of the body encloses it; and the arrays bound to other
// names.
struct AllocationSite {
  const Allocate* alloc;
  std::vector<std::pair<Expr, bool>> guards;
  bool in_loop;
};

class AllocationSites : public IRVisitor {
 public:
  std::vector<AllocationSite> sites;
  ArraySet bound_from;  // sources of ArrayBind
  using IRVisitor::visit;

 protected:
  void visit(const Allocate* n) override { sites.push_back({n, guards_, loops_ > 0}); }
  void visit(const ArrayBind* n) override { bound_from.insert(n->src.get()); }
  void visit(const If* n) override {
    guards_.emplace_back(n->cond, true);
    visit(n->then_case);
    guards_.back().second = false;
    visit(n->else_case);
    guards_.pop_back();
  }
  void visit(const For* n) override {
    ++loops_;
    IRVisitor::visit(n);
    --loops_;
  }
  void visit(const While* n) override {
    ++loops_;
    IRVisitor::visit(n);
    --loops_;
  }

 private:
  std::vector<std::pair<Expr, bool>> guards_;
  int loops_ = 0;
};

// Whether an expression computes with integers and bools only (no float
// value, no math function): the host and the GPU evaluate it alike.
class IntegralOnly : public IRVisitor {
 public:
  bool ok = true;
  using IRVisitor::visit;

 protected:
#define PLAIT_EXPR_NODE(n)                                                 \
  void visit(const n* node) override {                                     \
    if (node->type.is_float() || node->kind == NodeKind::Call) ok = false; \
    IRVisitor::visit(node);                                                \
  }
#include "ir/ir_nodes.def"
};

// Whether the host can evaluate `e` before the launch: it reads only scalars
// the host has (`known`) that are not the worker's (`not_known`), no element
// and nothing of the worker's own arrays, and nothing in it can record an
// error.
bool host_evaluable(const Expr& e, const VarSet& not_known, const VarSet& known, const ArraySet& local) {
  const analysis::AccessScan sc = analysis::scan(e);
  for (const VarInfo* v : sc.read)
    if (not_known.count(v) || !known.count(v)) return false;
  if (analysis::intersects(sc.dims, local) || !sc.loaded.empty()) return false;
  analysis::HasErrorSites errors;
  errors.visit(e);
  return !errors.found;
}

// Atomic updates of small arrays that a parallel loop's blocks combine in
// shared memory first: 1-D arrays bound outside the loop, updated only by
// `#pragma atomic` += or -= on numbers, never read or stored in the loop.
class PrivatisableAtomics : public IRVisitor {
 public:
  std::vector<ArrayVar> arrays;  // in first-update order
  using IRVisitor::visit;
  std::vector<ArrayVar> result(const ArraySet& local) const {
    std::vector<ArrayVar> out;
    for (const ArrayVar& a : arrays)
      if (!excluded_.count(a.get()) && !local.count(a.get())) out.push_back(a);
    return out;
  }

 protected:
  void visit(const AtomicUpdate* n) override {
    const ScalarKind k = n->array->type.dtype;
    const bool ok =
        n->array->type.ndim == 1 && k != ScalarKind::Bool && (n->op == AtomicOp::Add || n->op == AtomicOp::Sub);
    if (!ok) excluded_.insert(n->array.get());
    if (seen_.insert(n->array.get()).second) arrays.push_back(n->array);
    IRVisitor::visit(n);
  }
  void visit(const Load* n) override {
    excluded_.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    excluded_.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind* n) override {
    excluded_.insert(n->src.get());
    excluded_.insert(n->dst.get());
  }

 private:
  ArraySet seen_, excluded_;
};

// The loads a one-thread worker can make for several of its iterations
// before running any of them: in the statements the body runs first
// (assignments and stores before any branch or loop), evaluated whatever the
// values (not inside a select or the right of `and`/`or`), unchecked, of an
// array the loop never writes, at indices computed from the loop variables
// and scalars the body does not assign (no loads). A histogram reads its
// value this way, then updates a bin: the next iterations' values are in
// flight while the atomics run.
class PrefetchableLoads : public IRVisitor {
 public:
  std::vector<const Load*> loads;

  PrefetchableLoads(const Stmt& body, const VarSet& nest_vars)
      : nest_vars_(nest_vars), stored_(analysis::scan(body).written), assigned_(planning::scalar_writes(body)) {
    const Block* b = body->as<Block>();
    for (const Stmt& st : b ? b->stmts : std::vector<Stmt>{body}) {
      if (st->kind == NodeKind::Declare) continue;
      if (st->kind != NodeKind::Assign && st->kind != NodeKind::Store) break;
      visit(st);
    }
  }
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (n->checked || stored_.count(n->array.get())) return;
    for (const Expr& i : n->indices) {
      const analysis::AccessScan sc = analysis::scan(i);
      if (!sc.loaded.empty()) return;
      for (const VarInfo* v : sc.read)
        if (assigned_.count(v) && !nest_vars_.count(v)) return;
    }
    if (std::find(loads.begin(), loads.end(), n) == loads.end()) loads.push_back(n);
  }
  void visit(const Select* n) override { visit(n->cond); }
  void visit(const Logical* n) override { visit(n->a); }

 private:
  const VarSet& nest_vars_;
  ArraySet stored_;
  VarSet assigned_;
};

// Whether the host can count the loops of `rows` before the launch (and
// they have some): their bounds read no scalar of the worker (`worker_vars`).
bool rows_countable(const std::vector<const CachedRow*>& rows, const VarSet& worker_vars, const VarSet& around,
                    const ArraySet& local) {
  size_t bounds = 0;
  for (const CachedRow* row : rows)
    for (const auto& b : row->bounds) {
      ++bounds;
      for (const Expr& e : b)
        if (!host_evaluable(e, worker_vars, around, local)) return false;
    }
  return bounds > 0;
}

// The temporaries of `body`, a worker body whose loop variables are
// `nest_vars` (see KernelTemporaries), without `in_registers`.
KernelTemporaries plan_temporaries(const Stmt& body, const VarSet& nest_vars, const VarSet& around,
                                   const ArraySet& local) {
  KernelTemporaries plan;
  AllocationSites allocations;
  allocations.visit(body);
  if (allocations.sites.empty()) return plan;
  const VarSet written = planning::scalar_writes(body);
  VarSet defined, varying = nest_vars;
  // Computable on the host from the loop variables, the definitions, host
  // scalars the body does not assign and array shapes.
  auto evaluable = [&](const Expr& e) {
    const analysis::AccessScan sc = analysis::scan(e);
    for (const VarInfo* v : sc.read)
      if (!nest_vars.count(v) && !defined.count(v) && (written.count(v) || !around.count(v))) return false;
    if (analysis::intersects(sc.dims, local) || !sc.loaded.empty()) return false;
    analysis::HasErrorSites errors;
    errors.visit(e);
    return !errors.found;
  };
  auto exact = [&](const Expr& e) {
    IntegralOnly integral;
    integral.visit(e);
    return integral.ok && evaluable(e);
  };
  auto varies = [&](const Expr& e) { return analysis::reads_any(e, varying); };
  // Definitions: each scalar's assignments in the body are counted first.
  VarMap<int> assignments;
  {
    class Assignments : public IRVisitor {
     public:
      explicit Assignments(VarMap<int>& c) : counts(c) {}
      VarMap<int>& counts;
      using IRVisitor::visit;

     protected:
      void visit(const Assign* n) override {
        ++counts[n->var.get()];
        IRVisitor::visit(n);
      }
    } count(assignments);
    count.visit(body);
  }
  const Block* block = body->as<Block>();
  for (const Stmt& st : block ? block->stmts : std::vector<Stmt>{body}) {
    AllocationSites binds;
    binds.visit(st);
    if (!binds.sites.empty() || !binds.bound_from.empty()) break;
    const Assign* a = st->as<Assign>();
    if (!a || assignments[a->var.get()] != 1 || a->var->type.is_float() || !exact(a->value)) continue;
    if (varies(a->value)) varying.insert(a->var.get());
    defined.insert(a->var.get());
    plan.definitions.push_back(a);
  }
  for (const AllocationSite& site : allocations.sites) {
    const ArrayVar& a = site.alloc->array;
    const SourceLoc& loc = site.alloc->loc;
    // The lowering refuses an array bound in a parallel loop and used
    // outside it, so each is declared in the body.
    if (!local.count(a.get()))
      PLAIT_INTERNAL_ERROR("`" + a->name + "` is allocated in a parallel loop but declared outside it");
    if (site.in_loop && allocations.bound_from.count(a.get())) {
      plan.refusal = "`" + a->name +
                     "` is allocated in a loop inside a parallel loop and bound to another "
                     "name; on the CUDA target each allocation there reuses the memory of the previous one";
      plan.refusal_loc = loc;
      return plan;
    }
    Temporary t{site.alloc, {}};
    for (const Expr& e : site.alloc->shape) {
      if (!evaluable(e)) {
        plan.refusal = "the shape of `" + a->name +
                       "`, allocated inside a parallel loop, must be computable "
                       "before the launch on the CUDA target (from the parallel loop's variables, scalars "
                       "set before the loop and array shapes)";
        plan.refusal_loc = loc;
        return plan;
      }
      plan.varies = plan.varies || varies(e);
    }
    for (const auto& g : site.guards) {
      if (!exact(g.first)) continue;
      t.guards.push_back(g);
      plan.varies = plan.varies || varies(g.first);
    }
    plan.arrays.push_back(std::move(t));
  }
  plan.varying = varying;
  return plan;
}

}  // namespace

KernelVersions plan_kernel_versions(const For* loop, const WorkerPlan& worker, const PragmaTeam& asked, int block,
                                    const CudaLaunchConfig& launch, const VarSet& around) {
  const LoopSchedule& sc = loop->schedule;
  const std::vector<const For*> nest = collapse_nest(loop);
  const For* innermost = nest.back();
  const Stmt& body = innermost->body;
  VarSet nest_vars;
  for (const For* f : nest) nest_vars.insert(f->var.get());
  const VarSet written = planning::scalar_writes(body);
  DeclaredArrays declared;
  declared.visit(body);
  const ArraySet& local = declared.arrays;

  KernelVersions v;
  v.worker = worker;
  WorkerPlan& plan = v.worker;
  v.temporaries = plan_temporaries(body, nest_vars, around, local);
  const bool has_temporaries = !v.temporaries.arrays.empty();
  if (plan.team) {
    // The host counts a spread loop whose bounds read neither the scalars
    // the worker assigns nor, unless at the first and the last worker, its
    // loop variables.
    VarSet worker_vars = nest_vars, body_written = written;
    worker_vars.insert(written.begin(), written.end());
    for (const VarInfo* n : nest_vars) body_written.erase(n);
    VarSet known = around;
    known.insert(nest_vars.begin(), nest_vars.end());
    for (const For* f : spread_loops(plan)) {
      auto evaluable = [&](const VarSet& not_known) {
        return host_evaluable(f->begin, not_known, known, local) && host_evaluable(f->end, not_known, known, local) &&
               host_evaluable(f->step, not_known, known, local);
      };
      PairedLoop paired;
      const bool pairs = paired_loop(f, &paired);
      if (evaluable(worker_vars)) {
        v.host_trips.push_back({f, pairs, false});
      } else if (evaluable(body_written)) {
        v.host_trips.push_back({f, pairs, true});
      }
    }
    // When none can be counted (the trip count varies between workers, as
    // for CSR rows) the worker is a small team, unless the cost rule prefers
    // one thread anyway or the worker allocates arrays (not measured with
    // small teams): then one thread, as short rows would leave most of a
    // team idle (a warp per row of 10 elements ran 4.3x slower than a
    // thread per row: BENCHMARKS.md, "GPU: sizes from the sliced pragmas").
    if (v.host_trips.empty() && !asked.team) {
      v.small_team = !plan.teams_when_few && !has_temporaries;
      if (!v.small_team) {
        plan.team = false;
        plan.notes.clear();
        plan.notes.push_back({loop->loc,
                              "the parallel loop stays one thread per iteration: the trip counts of its "
                              "inner loops vary between iterations (not known before the launch)"});
      }
    }
  }
  PrivatisableAtomics atomics;
  atomics.visit(body);
  v.privatised = atomics.result(local);

  if (v.small_team && nest.size() == 1 && v.privatised.empty() && !has_temporaries)
    v.staged = staged_rows_loop(plan, body, innermost->var.get(), innermost->step, &v.staged_elements, &v.not_staged);
  if (v.staged) v.not_staged.clear();

  if (plan.team)
    v.unbatched = "its iterations are teams of threads";
  else if (!sc.reductions.empty() || !sc.array_reductions.empty())
    v.unbatched = "it has reductions";
  else if (!v.privatised.empty())
    v.unbatched = "it updates arrays in shared memory";
  else if (has_temporaries)
    v.unbatched = "it allocates arrays";
  else if (straight_line_worker(body, &v.unbatched))
    v.batch = nest.size() > 1 ? kNestBatchIterations : kBatchIterations;
  if (v.batch == 1 && !plan.team && !has_temporaries) v.prefetch = PrefetchableLoads(body, nest_vars).loads;
  const IntImm* step = innermost->step->as<IntImm>();
  if (v.batch > 1 && nest.size() == 1 && (!step || step->value == 1))
    v.lanes = contiguous_accesses(body, innermost->var.get());

  if (plan.team) v.cached_rows = plan_cached_rows(plan, written);
  const bool sized_at_launch = plan.team && !v.small_team && !plan.teams_when_few;
  v.wide = sized_at_launch && !has_temporaries && v.privatised.empty() && launch.max_team == 0 &&
           2 * block <= kWideBlockLimit && !v.cached_rows.empty() &&
           (!asked.team || (asked.whole_block && !v.host_trips.empty()));
  v.rows = v.batch > 1 && nest.size() > 1;
  // Rows that fit in the registers, and temporaries that live only in
  // them: the host tests each row loop's trip count, so it must be able to
  // count them all.
  VarSet worker_vars = nest_vars;
  worker_vars.insert(written.begin(), written.end());
  if (sized_at_launch) {
    std::vector<const CachedRow*> rows;
    for (const CachedRow& row : v.cached_rows) rows.push_back(&row);
    v.fit = rows_countable(rows, worker_vars, around, local);
  }
  if (plan.team && has_temporaries) {
    std::vector<const CachedRow*> rows;
    for (const Temporary& t : v.temporaries.arrays) {
      auto kept = std::find_if(v.cached_rows.begin(), v.cached_rows.end(), [&](const CachedRow& r) {
        return r.registers_only && r.names.count(t.alloc->array.get());
      });
      if (kept == v.cached_rows.end()) break;
      rows.push_back(&*kept);
    }
    v.temporaries.in_registers =
        rows.size() == v.temporaries.arrays.size() && rows_countable(rows, worker_vars, around, local);
  }
  v.warp = sized_at_launch && !asked.team && v.cached_rows.empty();
  return v;
}

KernelVersions whole_block_versions(const Stmt& body, const WorkerPlan& worker) {
  KernelVersions v;
  v.worker = worker;
  v.worker.teams_when_few = false;
  v.whole_block = true;
  DeclaredArrays declared;
  declared.visit(body);
  PrivatisableAtomics atomics;
  atomics.visit(body);
  v.privatised = atomics.result(declared.arrays);
  if (v.worker.team) {
    v.unbatched = "its iterations are teams of threads";
    v.cached_rows = plan_cached_rows(v.worker, planning::scalar_writes(body));
  }
  return v;
}

}  // namespace plait::transforms::gpu
