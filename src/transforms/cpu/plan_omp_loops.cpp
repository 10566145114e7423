#include "transforms/cpu/plan_omp_loops.h"

#include <memory>

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"
#include "transforms/cpu/plan_parallel_regions.h"
#include "transforms/cpu/plan_region_statements.h"

namespace plait::transforms::cpu {

using namespace ir;

namespace {

bool float_extremum(const Reduction& r) {
  return r.var->type.is_float() && (r.op == ReduceOp::Max || r.op == ReduceOp::Min);
}

// How the float max/min reductions of a loop are updated (plan_omp_loops.h):
// as the builtin `m = max(m, x)`, reversed `m = max(x, m)`, or by
// np.maximum/np.minimum.
class ExtremumUpdates : public IRVisitor {
 public:
  explicit ExtremumUpdates(const std::vector<Reduction>& reductions) {
    for (const Reduction& r : reductions)
      if (float_extremum(r)) forms_.push_back({r.var.get()});
  }
  // Variables updated only in the reversed form.
  VarSet only_reversed() const {
    VarSet vars;
    for (const Forms& f : forms_)
      if (f.reversed && !f.builtin && !f.propagating) vars.insert(f.var);
    return vars;
  }
  // The first variable updated in the reversed form and in another one; null
  // when there is none.
  const VarInfo* mixed() const {
    for (const Forms& f : forms_)
      if (f.reversed && (f.builtin || f.propagating)) return f.var;
    return nullptr;
  }
  // The first variable updated in the reversed form; null when there is none.
  const VarInfo* reversed() const {
    for (const Forms& f : forms_)
      if (f.reversed) return f.var;
    return nullptr;
  }
  // Whether `v` is updated by np.maximum/np.minimum.
  bool propagating(const VarInfo* v) const {
    for (const Forms& f : forms_)
      if (f.var == v) return f.propagating;
    return false;
  }
  using IRVisitor::visit;

 protected:
  void visit(const Assign* n) override {
    for (Forms& f : forms_) {
      const Binary* b = n->value->as<Binary>();
      if (f.var != n->var.get() || !b) continue;
      const VarRef* second = b->b->as<VarRef>();
      if (b->op == BinaryOp::Max || b->op == BinaryOp::Min) {
        f.propagating = true;
      } else if (second && second->var.get() == f.var) {
        f.reversed = true;
      } else {
        f.builtin = true;
      }
    }
    IRVisitor::visit(n);
  }

 private:
  struct Forms {
    const VarInfo* var;
    bool reversed = false, builtin = false, propagating = false;
  };
  std::vector<Forms> forms_;  // in the order of the loop's reductions
};

// The per-thread temporaries of the parallel loop `nest` (plan_omp_loops.h):
// the statements at the top of the body of its innermost loop that allocate
// them and name them (their declarations and bindings).
std::vector<Stmt> per_thread_statements(const std::vector<const For*>& nest) {
  const For* innermost = nest.back();
  const Block* body = innermost->body->as<Block>();
  if (!body) return {};
  const analysis::VarUses in_body = analysis::uses_of(innermost->body);
  VarSet loop_vars;
  for (const For* f : nest) loop_vars.insert(f->var.get());
  // How often each array is bound (Allocate, ArrayBind) in the body, its
  // ArrayBinds, and whether an expression reads array elements.
  struct Binds : IRVisitor {
    ArrayMap<int> count;
    std::vector<const ArrayBind*> binds;
    bool loads = false;
    using IRVisitor::visit;
    void visit(const Allocate* a) override {
      ++count[a->array.get()];
      IRVisitor::visit(a);
    }
    void visit(const ArrayBind* b) override {
      ++count[b->dst.get()];
      binds.push_back(b);
    }
    void visit(const Load*) override { loads = true; }
  } all;
  all.visit(innermost->body);
  size_t run = 0;
  while (run < body->stmts.size() &&
         (body->stmts[run]->kind == NodeKind::Declare || body->stmts[run]->kind == NodeKind::Allocate ||
          body->stmts[run]->kind == NodeKind::ArrayBind))
    ++run;
  ArraySet declared, chosen;
  for (size_t k = 0; k < run; ++k)
    if (const Declare* d = body->stmts[k]->as<Declare>(); d && d->array) declared.insert(d->array.get());
  for (size_t k = 0; k < run; ++k) {
    const Allocate* a = body->stmts[k]->as<Allocate>();
    if (!a || a->fill != FillKind::Uninitialized) continue;
    bool ok = true;
    for (const Expr& e : a->shape) {
      Binds reads;
      reads.visit(e);
      const analysis::VarUses u = analysis::uses_of(e);
      ok = ok && !reads.loads;
      for (const VarInfo* v : u.reads) ok = ok && !in_body.writes.count(v) && !loop_vars.count(v);
      for (const ArrayInfo* x : u.arrays) ok = ok && !in_body.array_binds.count(x);
    }
    // The temporary and the names bound to it in the run: each declared in
    // the body, bound once, and bound to no name that outlives the body.
    ArraySet group = {a->array.get()};
    for (size_t j = k + 1; j < run; ++j)
      if (const ArrayBind* b = body->stmts[j]->as<ArrayBind>(); b && group.count(b->src.get()))
        group.insert(b->dst.get());
    for (const ArrayInfo* m : group) ok = ok && declared.count(m) && all.count[m] == 1;
    for (const ArrayBind* b : all.binds) ok = ok && (!group.count(b->src.get()) || group.count(b->dst.get()));
    if (ok) chosen.insert(group.begin(), group.end());
  }
  std::vector<Stmt> out;
  for (size_t k = 0; k < run; ++k) {
    const Stmt& st = body->stmts[k];
    const ArrayInfo* named = nullptr;
    if (const Declare* d = st->as<Declare>()) named = d->array.get();
    if (const Allocate* a = st->as<Allocate>()) named = a->array.get();
    if (const ArrayBind* b = st->as<ArrayBind>()) named = b->dst.get();
    if (named && chosen.count(named)) out.push_back(st);
  }
  return out;
}

// Walks the function with what the emitter knows where it prints each loop:
// whether it is inside a parallel region, and how many parallel or vector
// loops enclose it.
class OmpLoopPlanner : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const For* n, const Stmt& self) override {
    const auto* region = n->schedule.plan<ParallelRegionPlan>();
    const bool root = region && region->runs_as_region();
    const bool omp = n->schedule.kind != LoopKind::Serial;
    regions_ += root ? 1 : 0;
    omp_depth_ += omp ? 1 : 0;
    Stmt body = mutate(n->body);
    regions_ -= root ? 1 : 0;
    omp_depth_ -= omp ? 1 : 0;
    Stmt loop = body == n->body ? self : For::make(n->var, n->begin, n->end, n->step, body, n->schedule, n->loc);
    if (!has_omp_loop_plan(n->schedule)) return loop;
    const For* f = loop->as<For>();
    LoopSchedule schedule = f->schedule;
    schedule.plans.push_back(plan(f));
    return For::make(f->var, f->begin, f->end, f->step, f->body, std::move(schedule), f->loc);
  }

 private:
  std::shared_ptr<OmpLoopPlan> plan(const For* loop) const {
    const LoopSchedule& sc = loop->schedule;
    const bool parallel = is_parallel(sc.kind);
    // An `omp for` shared out over the team of the region around it.
    const bool work_shared = parallel && regions_ > 0 && omp_depth_ == 0;
    auto out = std::make_shared<OmpLoopPlan>();
    ExtremumUpdates extrema(sc.reductions);
    if (sc.kind != LoopKind::Serial) extrema.visit(loop->body);
    out->in_order = sc.kind == LoopKind::Vectorized ? extrema.reversed() : parallel ? extrema.mixed() : nullptr;
    const bool in_order = out->in_order != nullptr;
    if (parallel && !in_order) out->thread_order = extrema.only_reversed();
    for (const Reduction& r : sc.reductions) {
      if (in_order || !float_extremum(r) || out->thread_order.count(r.var.get())) continue;
      if (work_shared || extrema.propagating(r.var.get())) {
        out->nan_kept.insert(r.var.get());
      } else {
        out->set_aside.insert(r.var.get());
      }
    }
    // The team starts first (`omp parallel`), each thread allocates the
    // temporaries, then the iterations are shared out (`omp for`).
    if (parallel && !in_order && regions_ == 0 && omp_depth_ == 0)
      out->per_thread = per_thread_statements(collapse_nest(loop));
    return out;
  }

  int regions_ = 0;    // enclosing loops that run as one parallel region
  int omp_depth_ = 0;  // enclosing parallel or vector loops
};

std::string names(const VarSet& vars) {
  std::string text;
  for (const VarInfo* v : vars) text += (text.empty() ? "" : ", ") + v->name;
  return text;
}

}  // namespace

std::string OmpLoopPlan::describe() const {
  std::vector<std::string> parts;
  if (in_order) parts.push_back("in order for " + in_order->name);
  if (!thread_order.empty()) parts.push_back("thread order: " + names(thread_order));
  if (!nan_kept.empty()) parts.push_back("NaN-keeping partials: " + names(nan_kept));
  if (!set_aside.empty()) parts.push_back("set aside: " + names(set_aside));
  std::string temporaries;
  for (const Stmt& s : per_thread)
    if (const Allocate* a = s->as<Allocate>()) temporaries += (temporaries.empty() ? "" : ", ") + a->array->name;
  if (!temporaries.empty()) parts.push_back("per-thread temporaries: " + temporaries);
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : "; ") + p;
  return "omp: " + (text.empty() ? "as scheduled" : text);
}

bool has_omp_loop_plan(const LoopSchedule& schedule) {
  if (is_parallel(schedule.kind)) return true;
  for (const Reduction& r : schedule.reductions)
    if (float_extremum(r)) return true;
  return false;
}

void plan_omp_loops(Function& function) {
  function.body = OmpLoopPlanner().mutate(function.body);
}

}  // namespace plait::transforms::cpu
