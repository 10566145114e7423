// Worker planning: groups of a spread loop's iterations, the array accesses
// of a team's statements and the barriers between them, and the CSR row
// loops a block can stage (worker_plan.h).
#include "transforms/gpu/worker_plan_support.h"

namespace plait::transforms::gpu {

using namespace ir;
using namespace planning;

int group_width(const WorkerPlan& plan) {
  // A worker with a loop whose iterations run in pairs has no groups: the
  // team is sized for two iterations per thread, not for groups of them.
  for (const For* f : spread_loops(plan))
    if (PairedLoop paired; paired_loop(f, &paired)) return 1;
  for (const For* f : spread_loops(plan))
    if (!group_accesses(f).empty()) return kGroupWidth;
  return 1;
}

bool GroupAccesses::has(const Store* s) const {
  return std::find(stores.begin(), stores.end(), s) != stores.end();
}

GroupAccesses group_accesses(const For* loop) {
  GroupAccesses out;
  // A failed assertion, even in an inner loop, leaves the iteration before
  // the loads after it, which may then be out of range.
  class Asserts : public IRVisitor {
   public:
    bool found = false;
    using IRVisitor::visit;

   protected:
    void visit(const Assert*) override { found = true; }
  } asserts;
  asserts.visit(loop->body);
  if (asserts.found || constructs_of(loop->body).jumps) return out;
  const VarSet varying = scalar_writes(loop->body);
  const VarInfo* var = loop->var.get();
  std::vector<Stmt> stmts;
  std::vector<Stmt> pending = statements_of(loop->body);
  for (size_t k = 0; k < pending.size(); ++k) {
    if (const Block* b = pending[k]->as<Block>()) {
      pending.insert(pending.begin() + static_cast<std::ptrdiff_t>(k) + 1, b->stmts.begin(), b->stmts.end());
      continue;
    }
    stmts.push_back(pending[k]);
  }
  auto writes = [](const Stmt& s) {
    const Constructs sc = constructs_of(s);
    if (sc.atomics || sc.binds) return true;
    for (const RawAccess& a : accesses_in(s))
      if (a.write) return true;
    return false;
  };
  // Loads up to the first statement that writes (its own loads come
  // before its write), each node met only there.
  std::map<const Load*, int> everywhere;
  ExpressionWalk all(
      [&](const ExprNode* e) {
        if (const Load* l = e->as<Load>()) ++everywhere[l];
        return false;
      },
      false);
  all.visit(loop->body);
  std::map<const Load*, int> early;
  std::vector<const Load*> order;
  for (const Stmt& s : stmts) {
    ExpressionWalk unconditional(
        [&](const ExprNode* e) {
          if (const Load* l = e->as<Load>(); l && early[l]++ == 0) order.push_back(l);
          return false;
        },
        true);
    unconditional.visit(s);
    if (writes(s)) break;
  }
  for (const Load* l : order)
    if (!l->checked && early[l] == everywhere[l] && contiguous_in(l->array, l->indices, var, varying))
      out.loads.push_back(l);
  // Stores at the end of the body: after the first of them, no statement
  // reads memory, and none writes it but these stores.
  bool later_reads = false;
  for (size_t k = stmts.size(); k-- > 0;) {
    const Stmt& s = stmts[k];
    const std::vector<RawAccess> accesses = accesses_in(s);
    const Store* st = s->as<Store>();
    if (st && !st->checked && !later_reads && contiguous_in(st->array, st->indices, var, varying)) {
      out.stores.insert(out.stores.begin(), st);
      later_reads = accesses.size() > 1;
      continue;
    }
    if (writes(s)) break;
    later_reads = later_reads || !accesses.empty();
  }
  return out;
}

std::vector<ArrayAccess> array_accesses(const Stmt& stmt, Placement placement, const VarSet& worker_written,
                                        const VarSet* changing) {
  std::vector<ArrayAccess> out;
  std::string space;
  const For* f = placement == Placement::Spread ? stmt->as<For>() : nullptr;
  VarSet own;
  if (f) {
    space = to_string(f->begin) + ":" + to_string(f->end) + ":" + to_string(f->step);
    // A bound that the worker body computes may change between two loops.
    if (uses_any(f->begin, worker_written) || uses_any(f->end, worker_written) || uses_any(f->step, worker_written))
      space.append(" #").append(std::to_string(reinterpret_cast<uintptr_t>(f)));
    own = scalar_writes(f->body);
    own.insert(f->var.get());
  }
  VarSet moved;  // the `changing` scalars that are not the spread loop's own
  if (changing)
    for (const VarInfo* v : *changing)
      if (!own.count(v)) moved.insert(v);
  const bool bounds_move = f && (uses_any(f->begin, moved) || uses_any(f->end, moved) || uses_any(f->step, moved));
  // A filled allocation writes every element, spread over the team: any
  // later access needs a barrier.
  if (const Allocate* al = stmt->as<Allocate>(); al && al->fill != FillKind::Uninitialized)
    out.push_back(
        {al->array.get(), true, Placement::Spread, "fill #" + std::to_string(reinterpret_cast<uintptr_t>(al))});
  for (const RawAccess& a : accesses_in(stmt)) {
    ArrayAccess access{a.array->get(), a.write, placement, ""};
    if (f) {
      access.where.append(space).append(" | ").append(rename(indices_text(*a.indices), f->var->name, "@"));
      bool moves = bounds_move;
      for (const Expr& i : *a.indices) moves = moves || uses_any(i, moved);
      if (moves) access.where.append(" | an earlier iteration");
    }
    out.push_back(access);
  }
  return out;
}

std::vector<ArrayAccess> control_accesses(const Stmt& stmt) {
  std::vector<Expr> control;
  if (const If* i = stmt->as<If>()) control = {i->cond};
  if (const For* f = stmt->as<For>()) control = {f->begin, f->end, f->step};
  AccessCollector reads;
  for (const Expr& e : control) reads.visit(e);
  std::vector<ArrayAccess> out;
  for (const RawAccess& a : reads.accesses) out.push_back({a.array->get(), false, Placement::AllThreads, ""});
  return out;
}

bool needs_barrier(const std::vector<ArrayAccess>& earlier, const std::vector<ArrayAccess>& next, std::string* why) {
  for (const ArrayAccess& a : next) {
    for (const ArrayAccess& p : earlier) {
      if (a.array != p.array || !(a.write || p.write)) continue;
      const bool same_thread = a.placement == p.placement && (a.placement == Placement::FirstThread ||
                                                              (a.placement == Placement::Spread && a.where == p.where));
      if (same_thread) continue;
      *why = a.array->name;
      return true;
    }
  }
  return false;
}

namespace {

// The arrays a subtree writes, allocates, binds or declares.
class ArrayChanges : public IRVisitor {
 public:
  ArraySet arrays;
  using IRVisitor::visit;

 protected:
  void visit(const Store* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const MatMul* n) override {
    arrays.insert(n->c.get());
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind* n) override {
    arrays.insert(n->dst.get());
    IRVisitor::visit(n);
  }
  void visit(const Declare* n) override {
    if (n->array) arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
};

// `e` without the integer-to-integer casts around it.
const ExprNode* without_int_casts(const Expr& e) {
  const ExprNode* node = e.get();
  while (const Cast* c = node->as<Cast>()) {
    if (!c->type.is_int() || !c->value->type.is_int()) break;
    node = c->value.get();
  }
  return node;
}

// The load `P[var + c]` of a 1-D array that `bound` is (integer casts
// aside), or null.
const Load* row_bound(const Expr& bound, const VarInfo* var, int64_t* offset) {
  const Load* l = without_int_casts(bound)->as<Load>();
  if (!l || l->indices.size() != 1 || !analysis::var_plus_constant(l->indices[0], var, offset)) return nullptr;
  return l;
}

// The first 1-D array a subtree loads at an index that steps with `var`.
class ElementsOf : public IRVisitor {
 public:
  explicit ElementsOf(const VarInfo* var) : var_(var) {}
  ArrayVar array;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    if (!array && n->array->type.ndim == 1 && steps_with(n->indices[0], var_, {}, true)) array = n->array;
    IRVisitor::visit(n);
  }

 private:
  const VarInfo* var_;
};

}  // namespace

const For* staged_rows_loop(const WorkerPlan& plan, const Stmt& worker_body, const VarInfo* worker_var,
                            const Expr& worker_step, ArrayVar* elements, std::string* why) {
  if (!plan.team) return nullptr;
  const std::vector<const For*> spread = spread_loops(plan);
  if (spread.size() != 1) return nullptr;
  const For* f = spread.front();
  int64_t begin_offset = 0, end_offset = 0;
  const Load* begin = row_bound(f->begin, worker_var, &begin_offset);
  const Load* end = row_bound(f->end, worker_var, &end_offset);
  if (!begin || !end || begin->array.get() != end->array.get() || end_offset != begin_offset + 1) return nullptr;
  auto refuse = [&](const std::string& reason) -> const For* {
    *why = reason;
    return nullptr;
  };
  const IntImm* step = f->step->as<IntImm>();
  const IntImm* outer_step = worker_step->as<IntImm>();
  if (!step || step->value != 1 || !outer_step || outer_step->value != 1)
    return refuse("the parallel loop's or the row loop's step is not 1");
  if (std::none_of(plan.stmts.begin(), plan.stmts.end(), [&](const Stmt& s) { return s.get() == f; }))
    return refuse("the row loop is inside another statement of the worker");
  const std::vector<Reduction>& reductions = f->schedule.reductions;
  if (reductions.empty() || reductions.size() > kStagedReductions)
    return refuse("the row loop has " + std::to_string(reductions.size()) + " reductions (1 to " +
                  std::to_string(kStagedReductions) + " are staged)");
  VarSet reduced;
  for (const Reduction& r : reductions) {
    if (r.op != ReduceOp::Add || r.var->type.kind == ScalarKind::Bool)
      return refuse("its reduction of `" + r.var->name + "` is not a sum of numbers");
    reduced.insert(r.var.get());
  }
  // The body: scalar assignments only, reductions updated as `r = r + term`.
  VarSet assigned;  // non-reduction scalars the body assigns
  for (const Stmt& s : statements_of(f->body)) {
    if (const Declare* d = s->as<Declare>(); d && !d->array) continue;
    const Assign* a = s->as<Assign>();
    if (!a)
      return refuse("its body has a statement other than scalar assignments (line " + std::to_string(s->loc.line) +
                    ")");
    const Expr* term = &a->value;
    if (reduced.count(a->var.get())) {
      const Binary* b = a->value->as<Binary>();
      auto is_acc = [&](const Expr& x) {
        const VarRef* r = x->as<VarRef>();
        return r && r->var.get() == a->var.get();
      };
      if (!b || b->op != BinaryOp::Add || !(is_acc(b->a) || is_acc(b->b)))
        return refuse("line " + std::to_string(s->loc.line) + " updates `" + a->var->name + "` other than by `" +
                      a->var->name + " += term`");
      term = is_acc(b->a) ? &b->b : &b->a;
    } else {
      assigned.insert(a->var.get());
    }
    if (uses_any(*term, reduced))
      return refuse("line " + std::to_string(s->loc.line) + " reads a reduction variable in its term");
  }
  for (const VarInfo* v : assigned)
    if (analysis::may_read_before_write(f->body, v) || read_outside(plan.stmts, v, f))
      return refuse("`" + v->name + "` carries a value into or out of the row loop");
  // What the terms read: nothing the worker computes.
  const VarSet worker_written = scalar_writes(worker_body);
  const analysis::VarUses uses = analysis::uses_of(f->body);
  for (const VarInfo* v : uses.reads) {
    if (v == f->var.get() || reduced.count(v) || assigned.count(v)) continue;
    if (v == worker_var || worker_written.count(v))
      return refuse("its terms read `" + v->name + "`, which the worker computes");
  }
  ArrayChanges changes;
  changes.visit(worker_body);
  for (const ArrayInfo* a : uses.arrays)
    if (changes.arrays.count(a)) return refuse("its terms read `" + a->name + "`, which the worker writes or binds");
  if (changes.arrays.count(begin->array.get()))
    return refuse("the worker writes `" + begin->array->name + "`, which holds the rows' bounds");
  ElementsOf first(f->var.get());
  first.visit(f->body);
  if (!first.array) return refuse("no array of its body is indexed by its variable");
  *elements = first.array;
  return f;
}

}  // namespace plait::transforms::gpu
