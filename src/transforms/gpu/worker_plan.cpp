// Planning of team-mapped workers for the CUDA back end: which inner loops
// are spread over a team of threads, where each other statement runs, and
// where barriers go (see worker_plan.h).
#include "transforms/gpu/worker_plan_support.h"

namespace plait::transforms::gpu {

using namespace ir;
using namespace planning;

ReductionForm reduction_form(const Stmt& body, const Reduction& r) {
  if (!r.var->type.is_float() || (r.op != ReduceOp::Max && r.op != ReduceOp::Min)) return ReductionForm::Ordinary;
  AssignsTo assigns(r.var.get());
  assigns.visit(body);
  bool propagating = false, ignoring = false;
  for (const Assign* a : assigns.found) {
    const Binary* b = a->value->as<Binary>();
    if (!b) return ReductionForm::OrderDependent;
    const VarRef* left = b->a->as<VarRef>();
    const bool var_first = left && left->var.get() == r.var.get();
    switch (b->op) {
      case BinaryOp::Max:
      case BinaryOp::Min:
        propagating = true;
        break;
      case BinaryOp::PyMax:
      case BinaryOp::PyMin:
        if (!var_first) return ReductionForm::OrderDependent;
        ignoring = true;
        break;
      default:
        return ReductionForm::OrderDependent;
    }
  }
  if (propagating && ignoring) return ReductionForm::OrderDependent;
  return propagating ? ReductionForm::NanPropagating : ReductionForm::NanIgnoring;
}

bool serial_loop_independent(const For* loop) {
  std::string why;
  return independent_iterations(loop, &why);
}

std::vector<const For*> collapse_nest(const For* outer) {
  std::vector<const For*> nest{outer};
  VarSet vars{outer->var.get()};
  auto bounds_use_nest = [&](const For* inner) {
    return analysis::reads_any(inner->begin, vars) || analysis::reads_any(inner->end, vars) ||
           analysis::reads_any(inner->step, vars);
  };
  while (static_cast<int>(nest.size()) < outer->schedule.collapse) {
    const For* inner = single_loop(nest.back()->body);
    if (!inner || bounds_use_nest(inner)) return nest;
    nest.push_back(inner);
    vars.insert(inner->var.get());
  }
  const For* inner = single_loop(nest.back()->body);
  std::string why;
  if (inner && inner->schedule.kind == LoopKind::Vectorized && inner->schedule.reductions.empty() &&
      inner->schedule.array_reductions.empty() && !bounds_use_nest(inner) && straight_line_worker(inner->body, &why))
    nest.push_back(inner);
  return nest;
}

std::vector<const For*> persistent_nest(const For* loop) {
  std::vector<const For*> nest = collapse_nest(loop);
  VarSet vars;
  for (const For* f : nest) vars.insert(f->var.get());
  while (const For* inner = single_loop(nest.back()->body)) {
    if (!inner->schedule.reductions.empty() || !inner->schedule.array_reductions.empty()) break;
    if (inner->schedule.kind == LoopKind::Serial && !serial_loop_independent(inner)) break;
    if (analysis::reads_any(inner->begin, vars) || analysis::reads_any(inner->end, vars) ||
        analysis::reads_any(inner->step, vars))
      break;
    nest.push_back(inner);
    vars.insert(inner->var.get());
  }
  return nest;
}

namespace {

// The scalars a subtree assigns, declares or loops over, in order, with how
// many statements assign each (assignments and loops).
class AssignedScalars : public IRVisitor {
 public:
  std::vector<Var> vars;
  VarMap<int> sites;
  using IRVisitor::visit;

 protected:
  void add(const Var& v) {
    if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  }
  void visit(const Assign* n) override {
    add(n->var);
    ++sites[n->var.get()];
    IRVisitor::visit(n);
  }
  void visit(const For* n) override {
    add(n->var);
    ++sites[n->var.get()];
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (n->var) add(n->var);
  }
};

}  // namespace

bool paired_loop(const For* f, PairedLoop* out) {
  if (!f->schedule.reductions.empty() || !f->schedule.array_reductions.empty()) return false;
  const Constructs c = constructs_of(f->body);
  if (c.jumps || c.asserts_anywhere || c.atomics || c.binds || c.loops_while) return false;
  PairedLoop paired;
  std::vector<Stmt> pending = statements_of(f->body);
  for (size_t k = 0; k < pending.size(); ++k) {
    if (const Block* b = pending[k]->as<Block>()) {
      pending.insert(pending.begin() + static_cast<std::ptrdiff_t>(k) + 1, b->stmts.begin(), b->stmts.end());
      continue;
    }
    paired.stmts.push_back(pending[k]);
  }
  AssignedScalars assigned;
  assigned.visit(f->body);
  VarSet varying{f->var.get()};
  for (const Var& v : assigned.vars) varying.insert(v.get());
  // A fused loop's variable is shared, so nothing else may assign it.
  VarSet shared;
  for (const Stmt& s : paired.stmts) {
    const For* inner = s->as<For>();
    bool fused = inner && assigned.sites[inner->var.get()] == 1;
    for (const Expr& e : fused ? std::vector<Expr>{inner->begin, inner->end, inner->step} : std::vector<Expr>{}) {
      AccessCollector reads;
      reads.visit(e);
      fused = fused && reads.accesses.empty() && !uses_any(e, varying);
    }
    paired.fused.push_back(fused);
    if (fused) shared.insert(inner->var.get());
  }
  if (shared.empty()) return false;
  paired.copies.push_back(f->var);
  for (const Var& v : assigned.vars)
    if (v != f->var && !shared.count(v.get())) paired.copies.push_back(v);
  *out = std::move(paired);
  return true;
}

bool straight_line_worker(const Stmt& body, std::string* why) {
  std::vector<Stmt> pending = statements_of(body);
  for (size_t k = 0; k < pending.size(); ++k) {
    const Stmt& s = pending[k];
    if (const Block* b = s->as<Block>()) {
      pending.insert(pending.end(), b->stmts.begin(), b->stmts.end());
      continue;
    }
    const Declare* d = s->as<Declare>();
    const bool scalar_declare = d && d->var && !d->array;
    if (!scalar_declare && s->kind != NodeKind::Assign && s->kind != NodeKind::Store) {
      *why = "line " + std::to_string(s->loc.line) + " is not a scalar assignment or an element store";
      return false;
    }
  }
  if (!defined_before_use(statements_of(body), {}, scalar_writes(body))) {
    *why = "a scalar may be read before the iteration assigns it";
    return false;
  }
  return true;
}

namespace {

class ContiguousCollector : public IRVisitor {
 public:
  ContiguousCollector(const VarInfo* var, VarSet varying) : var_(var), varying_(std::move(varying)) {}
  ContiguousAccesses found;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (conditional_ == 0 && !n->checked && contiguous_in(n->array, n->indices, var_, varying_))
      found.loads.push_back(n);
    // A checked load computes its indices inside its own check.
    if (n->checked) ++conditional_;
    IRVisitor::visit(n);
    if (n->checked) --conditional_;
  }
  void visit(const Store* n) override {
    if (!n->checked && contiguous_in(n->array, n->indices, var_, varying_)) found.stores.push_back(n);
    IRVisitor::visit(n);
  }
  void visit(const Select* n) override {
    visit(n->cond);
    ++conditional_;
    visit(n->t);
    visit(n->f);
    --conditional_;
  }
  void visit(const Logical* n) override {
    visit(n->a);
    ++conditional_;
    visit(n->b);
    --conditional_;
  }

 private:
  const VarInfo* var_;
  VarSet varying_;
  int conditional_ = 0;
};

}  // namespace

bool ContiguousAccesses::has(const Load* l) const {
  return std::find(loads.begin(), loads.end(), l) != loads.end();
}

bool ContiguousAccesses::has(const Store* s) const {
  return std::find(stores.begin(), stores.end(), s) != stores.end();
}

ContiguousAccesses contiguous_accesses(const Stmt& body, const VarInfo* var) {
  ContiguousCollector collector(var, scalar_writes(body));
  collector.visit(body);
  return collector.found;
}

namespace {

// Places the statements of a worker body on the threads of a team,
// recursively through `if`s and serial loops that all threads run in step.
class TeamPlanner {
 public:
  TeamPlanner(const Stmt& body, const VarSet& worker_vars, const VarSet& outside)
      : body_(statements_of(body)), worker_vars_(worker_vars), outside_(outside) {}

  std::vector<std::pair<SourceLoc, std::string>> notes;  // loops that stay serial, and why
  std::vector<const For*> spread;                        // the loops spread over the team
  std::vector<const For*> in_step;                       // the serial loops all threads run in step
  int along = 0, across = 0;                             // the cost rule's counts over `spread`
  bool refused = false;                                  // a statement cannot run in a team

  // The plan of `stmts`; `has_spread` becomes true when a loop in it is spread.
  WorkerPlan place(const std::vector<Stmt>& stmts, bool* has_spread) {
    WorkerPlan plan;
    plan.team = true;
    plan.stmts = stmts;
    const size_t n = stmts.size();
    plan.placement.resize(n);
    plan.nested.resize(n);
    for (size_t k = 0; k < n && !refused; ++k) {
      const Stmt& s = stmts[k];
      const For* f = s->as<For>();
      std::string why;
      if (f && spreadable(f, &why)) {
        plan.placement[k] = Placement::Spread;
        spread.push_back(f);
        count_accesses(f);
        *has_spread = true;
        continue;
      }
      if (place_nested(s, &plan.nested[k])) {
        plan.placement[k] = Placement::Nested;
        if (f) in_step.push_back(f);
        *has_spread = true;
        continue;
      }
      if (f) notes.push_back({f->loc, describe(f) + " runs serially in its thread: " + why});
      plan.placement[k] = place_alone(s);
    }
    return plan;
  }

 private:
  // A loop whose iterations can be spread: independent, without array
  // reductions, and the scalars it assigns (other than its own variable
  // and reductions) differ between threads after it, so nothing else may
  // read them.
  bool spreadable(const For* f, std::string* why) {
    if (!f->schedule.array_reductions.empty()) return false;
    if (f->schedule.team_in_step) {
      *why = "the compiler asks the team to run it in step and spread the loops inside it";
      return false;
    }
    if (f->schedule.kind == LoopKind::Serial && !independent_iterations(f, why)) return false;
    // A reduction whose result depends on where the NaNs are runs the loop
    // again in order when the team finds one: the loop must only compute.
    for (const Reduction& r : f->schedule.reductions) {
      if (reduction_form(f->body, r) != ReductionForm::OrderDependent) continue;
      const Constructs c = constructs_of(f->body);
      bool writes = c.atomics || c.binds;
      for (const RawAccess& a : accesses_in(f->body)) writes = writes || a.write;
      if (writes) {
        *why = "`" + r.var->name + "` = max/min(x, `" + r.var->name +
               "`) depends on the order when x is NaN, and the loop writes arrays, so it cannot run again in order";
        return false;
      }
    }
    VarSet own{f->var.get()};
    for (const Reduction& r : f->schedule.reductions) own.insert(r.var.get());
    for (const VarInfo* v : scalar_writes(f->body)) {
      if (own.count(v)) continue;
      if (outside_.count(v) || worker_vars_.count(v) || read_outside(body_, v, f)) {
        *why = "it assigns `" + v->name + "`, which is used outside it";
        return false;
      }
    }
    return true;
  }

  // An `if` or a loop without reductions or jumps whose body has spread
  // loops: every thread runs it (its condition or bounds read only values
  // that all threads share, since a spread loop's own scalars are read
  // nowhere else), placing its statements in turn. On failure nothing of
  // the attempt stays.
  bool place_nested(const Stmt& s, std::vector<WorkerPlan>* subs) {
    const If* i = s->as<If>();
    const For* f = s->as<For>();
    if (!i && !(f && f->schedule.reductions.empty() && f->schedule.array_reductions.empty())) return false;
    if (constructs_of(f ? f->body : s).jumps) return false;
    const size_t spread_mark = spread.size(), step_mark = in_step.size(), note_mark = notes.size();
    const int along_mark = along, across_mark = across;
    bool inner = false;
    if (f) {
      subs->push_back(place(statements_of(f->body), &inner));
    } else {
      subs->push_back(place(statements_of(i->then_case), &inner));
      subs->push_back(place(statements_of(i->else_case), &inner));
    }
    if (inner && !refused) return true;
    subs->clear();
    spread.resize(spread_mark);
    in_step.resize(step_mark);
    notes.resize(note_mark);
    along = along_mark;
    across = across_mark;
    refused = false;
    return false;
  }

  // A statement that runs in lane 0 (it writes array elements) or in every
  // thread; `refused` when it can do neither.
  Placement place_alone(const Stmt& s) {
    // An array declaration, allocation or binding sets pointers and
    // extents that every thread of the team keeps (the allocation's fill
    // is spread over the team).
    if (binds_arrays_alone(s)) return Placement::AllThreads;
    const Constructs c = constructs_of(s);
    bool writes_arrays = false;
    for (const RawAccess& a : accesses_in(s)) writes_arrays = writes_arrays || a.write;
    if (c.binds || (writes_arrays && (c.leaves || c.asserts))) {
      refused = true;
      notes.push_back({s->loc, "the parallel loop stays one thread per iteration: the statement at line " +
                                   std::to_string(s->loc.line) +
                                   (c.binds ? " binds arrays" : " writes arrays and may leave the iteration")});
      return Placement::AllThreads;
    }
    return writes_arrays ? Placement::FirstThread : Placement::AllThreads;
  }

  // The cost rule's counts: accesses of a spread loop contiguous along its
  // variable, and along a worker variable.
  void count_accesses(const For* f) {
    const VarSet inner = scalar_writes(f->body);
    for (const RawAccess& a : accesses_in(f->body)) {
      const int d = unit_dim((*a.array)->type);
      if (d < 0) continue;
      const Expr& i = (*a.indices)[static_cast<size_t>(d)];
      if (steps_with(i, f->var.get(), inner, true)) {
        ++along;
        continue;
      }
      VarSet moving = inner;
      moving.insert(f->var.get());
      for (const VarInfo* w : worker_vars_) {
        if (steps_with(i, w, moving, true)) {
          ++across;
          break;
        }
      }
    }
  }

  std::vector<Stmt> body_;
  const VarSet& worker_vars_;
  const VarSet& outside_;
};

void collect_spread(const WorkerPlan& plan, std::vector<const For*>* out) {
  for (size_t k = 0; k < plan.stmts.size(); ++k) {
    if (plan.placement[k] == Placement::Spread) out->push_back(plan.stmts[k]->as<For>());
    if (plan.placement[k] == Placement::Nested)
      for (const WorkerPlan& sub : plan.nested[k]) collect_spread(sub, out);
  }
}

}  // namespace

std::vector<const For*> spread_loops(const WorkerPlan& plan) {
  std::vector<const For*> out;
  if (plan.team) collect_spread(plan, &out);
  return out;
}

namespace {

// For explain(): how a spread loop whose iterations run in pairs does so.
std::string in_pairs(const For* f) {
  PairedLoop paired;
  if (!paired_loop(f, &paired)) return "";
  std::string lines;
  for (size_t k = 0; k < paired.stmts.size(); ++k)
    if (paired.fused[k]) lines += (lines.empty() ? "" : ", ") + std::to_string(paired.stmts[k]->loc.line);
  return "; each thread runs two of its iterations at once (k and k + team), the loop" +
         std::string(lines.find(',') == std::string::npos ? " at line " : "s at lines ") + lines +
         " once for both, so that the loads of both are in flight together, and the team is sized for at most two "
         "iterations per thread";
}

}  // namespace

WorkerPlan plan_worker(const Stmt& body, const VarSet& worker_vars, const VarSet& outside) {
  TeamPlanner planner(body, worker_vars, outside);
  bool has_spread = false;
  WorkerPlan plan = planner.place(statements_of(body), &has_spread);
  plan.notes = planner.notes;
  auto single = [&] {
    WorkerPlan one;
    one.stmts = statements_of(body);
    one.notes = plan.notes;
    return one;
  };
  if (planner.refused || !has_spread) return single();
  const std::string counts = std::to_string(planner.along) + " contiguous along the inner loops, " +
                             std::to_string(planner.across) + " across iterations of the parallel loop";
  if (planner.along <= planner.across) {
    plan.teams_when_few = true;
    for (const For* f : planner.spread)
      plan.notes.push_back({f->loc, describe(f) +
                                        " runs serially in its thread when the parallel loop has many "
                                        "iterations: one thread per parallel iteration keeps more accesses "
                                        "coalesced (" +
                                        counts +
                                        "); with few iterations its iterations are "
                                        "spread over a team of threads" +
                                        in_pairs(f)});
    return plan;
  }
  for (const For* f : planner.in_step)
    plan.notes.push_back({f->loc, describe(f) + " runs in step in every thread of the team; the loops inside it "
                                                "are spread over the team"});
  for (const For* f : planner.spread) {
    std::string text =
        describe(f) + ": its iterations are spread over the threads of the team (" + counts + ")" + in_pairs(f);
    for (const Reduction& r : f->schedule.reductions)
      text += "; " + std::string(reduce_op_name(r.op)) + "-reduction of `" + r.var->name +
              "` combined by warp shuffles and shared memory, the result broadcast to every thread";
    plan.notes.push_back({f->loc, text});
  }
  return plan;
}

}  // namespace plait::transforms::gpu
