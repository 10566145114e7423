// Barriers between the parallel loops of a persistent kernel's step (see
// step_barriers.h).
#include "transforms/gpu/step_barriers.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include "analysis/var_uses.h"
#include "ir/ir_visitor.h"

namespace plait::transforms::gpu {

using namespace ir;

namespace {

// The values an index takes: lo..hi, each end known only when constant.
struct Range {
  std::optional<int64_t> lo, hi;
};

bool apart(const Range& a, const Range& b) {
  return (a.hi && b.lo && *a.hi < *b.lo) || (b.hi && a.lo && *b.hi < *a.lo);
}

struct Access {
  const ArrayInfo* array;
  bool write;
  std::vector<Range> ranges;  // by dimension
};

// The element accesses of one parallel loop, with the range of each index.
class LoopAccesses : public IRVisitor {
 public:
  std::vector<Access> accesses;

  explicit LoopAccesses(const For* loop) { visit(loop); }
  using IRVisitor::visit;

 protected:
  // A loop's variable has its range in the loop's body only (after it, an
  // empty loop leaves the variable's earlier value), and not where the body
  // assigns it.
  void visit(const For* n) override {
    visit(n->begin);
    visit(n->end);
    visit(n->step);
    const bool ranged = !analysis::uses_of(n->body).writes.count(n->var.get()) && !loops_.count(n->var.get());
    if (ranged) loops_[n->var.get()] = n;
    visit(n->body);
    if (ranged) loops_.erase(n->var.get());
  }
  void visit(const Load* n) override {
    note(n->array.get(), n->indices, false);
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    note(n->array.get(), n->indices, true);
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    note(n->array.get(), n->indices, true);
    IRVisitor::visit(n);
  }

 private:
  void note(const ArrayInfo* array, const std::vector<Expr>& indices, bool write) {
    Access a{array, write, {}};
    for (const Expr& index : indices) a.ranges.push_back(range_of(index));
    accesses.push_back(std::move(a));
  }

  // The range of an integer index, by interval arithmetic over constants,
  // loop variables of the subtree whose step is a positive constant (from
  // their constant bounds), sums, differences and conditional expressions
  // (an array statement's broadcast index, `0 if b else i`); else unknown.
  Range range_of(const Expr& index) const {
    const ExprNode* e = index.get();
    if (const Cast* c = e->as<Cast>()) {
      if (!c->type.is_int() || !c->value->type.is_int()) return {};
      return range_of(c->value);
    }
    if (const IntImm* c = e->as<IntImm>()) return {c->value, c->value};
    if (const Select* sel = e->as<Select>()) {
      const Range a = range_of(sel->t), b = range_of(sel->f);
      Range hull;
      if (a.lo && b.lo) hull.lo = std::min(*a.lo, *b.lo);
      if (a.hi && b.hi) hull.hi = std::max(*a.hi, *b.hi);
      return hull;
    }
    if (const Binary* b = e->as<Binary>()) {
      if (b->op != BinaryOp::Add && b->op != BinaryOp::Sub) return {};
      const Range x = range_of(b->a), y = range_of(b->b);
      const bool add = b->op == BinaryOp::Add;
      // An end that would overflow stays unknown.
      auto combine = [add](std::optional<int64_t> a, std::optional<int64_t> b) -> std::optional<int64_t> {
        int64_t r = 0;
        if (!a || !b || (add ? __builtin_add_overflow(*a, *b, &r) : __builtin_sub_overflow(*a, *b, &r))) return {};
        return r;
      };
      return {combine(x.lo, add ? y.lo : y.hi), combine(x.hi, add ? y.hi : y.lo)};
    }
    const VarRef* r = e->as<VarRef>();
    if (!r) return {};
    auto it = loops_.find(r->var.get());
    if (it == loops_.end()) return {};
    const For* f = it->second;
    const IntImm* step = f->step->as<IntImm>();
    if (!step || step->value <= 0) return {};
    Range range;
    if (const IntImm* begin = f->begin->as<IntImm>()) range.lo = begin->value;
    if (const IntImm* end = f->end->as<IntImm>(); end && end->value > INT64_MIN) range.hi = end->value - 1;
    return range;
  }

  VarMap<const For*> loops_;
};

// Whether `a` and `b` may touch one element and one of them writes it.
bool conflict(const Access& a, const Access& b) {
  if (a.array != b.array || (!a.write && !b.write)) return false;
  for (size_t d = 0; d < a.ranges.size() && d < b.ranges.size(); ++d)
    if (apart(a.ranges[d], b.ranges[d])) return false;
  return true;
}

std::string line_of(const For* f) {
  return "line " + std::to_string(f->loc.line);
}

// A declaration, assignment or assertion of scalars.
bool scalar_statement(const Stmt& s) {
  const Declare* d = s->as<Declare>();
  return (d && !d->array) || s->as<Assign>() || s->as<Assert>();
}

// Plans the barriers of one statement list into `plan`: the step, or a
// branch of one of its `if`s (which every thread takes alike; the barrier
// before the `if` and the one after the branch's last loop stay).
void plan_statements(const std::vector<Stmt>& stmts, StepBarriers* plan) {
  std::vector<Access> pending;  // the accesses of the loops since the last barrier
  for (size_t k = 0; k < stmts.size(); ++k) {
    if (!is_parallel_loop(stmts[k])) {
      if (const If* i = stmts[k]->as<If>()) {
        plan_statements(statements_of(i->then_case), plan);
        plan_statements(statements_of(i->else_case), plan);
      }
      if (!scalar_statement(stmts[k])) pending.clear();
      continue;
    }
    const For* loop = stmts[k]->as<For>();
    LoopAccesses own(loop);
    pending.insert(pending.end(), own.accesses.begin(), own.accesses.end());
    // The next parallel loop, past scalar statements: they read no element
    // that the steps write (the persistent rule), so no barrier need precede them.
    size_t n = k + 1;
    while (n < stmts.size() && scalar_statement(stmts[n])) ++n;
    if (n == stmts.size() || !is_parallel_loop(stmts[n])) {
      pending.clear();
      continue;
    }
    const For* next = stmts[n]->as<For>();
    LoopAccesses later(next);
    bool needed = false;
    for (const Access& a : pending)
      for (const Access& b : later.accesses) needed = needed || conflict(a, b);
    if (needed) {
      pending.clear();
      continue;
    }
    plan->not_needed.insert(loop);
    plan->notes.emplace_back(loop, "no barrier between the parallel loops at " + line_of(loop) + " and " +
                                       line_of(next) +
                                       ": the second touches no element that a loop since the last barrier writes, "
                                       "and writes none that one reads");
  }
}

}  // namespace

StepBarriers plan_step_barriers(const std::vector<Stmt>& step) {
  StepBarriers plan;
  plan_statements(step, &plan);
  return plan;
}

}  // namespace plait::transforms::gpu
