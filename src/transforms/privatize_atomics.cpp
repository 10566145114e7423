// Pass: privatisation of atomic array updates (see privatize_atomics.h).
#include "transforms/privatize_atomics.h"

#include <map>
#include <optional>
#include <set>

#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

// Arrays of at most this many elements get per-thread copies; beyond it the
// copies' memory and the final fold cost more than the atomics save.
constexpr int64_t kMaxPrivateElements = int64_t{1} << 20;

std::optional<ir::ReduceOp> reduce_op(ir::AtomicOp op, ScalarType t) {
  switch (op) {
    case ir::AtomicOp::Add:
    case ir::AtomicOp::Sub: return ir::ReduceOp::Add;
    case ir::AtomicOp::Mul: return ir::ReduceOp::Mul;
    // Float min/max stay atomic: OpenMP's combination does not promise
    // the NaN behaviour of the atomic update.
    case ir::AtomicOp::Min: return t.is_int() ? std::optional(ir::ReduceOp::Min) : std::nullopt;
    case ir::AtomicOp::Max: return t.is_int() ? std::optional(ir::ReduceOp::Max) : std::nullopt;
    default: return std::nullopt;
  }
}

// How a loop body uses each array.
struct ArrayUse {
  std::optional<ir::ReduceOp> op;
  bool only_atomics = true;
  bool mixed_ops = false;
};

struct UseScan : ir::IRVisitor {
  ir::ArrayMap<ArrayUse> uses;
  ir::ArrayMap<ir::ArrayVar> vars;
  using IRVisitor::visit;
  void other(const ir::ArrayVar& a) {
    uses[a.get()].only_atomics = false;
    vars[a.get()] = a;
  }
  void visit(const ir::Load* l) override {
    other(l->array);
    IRVisitor::visit(l);
  }
  void visit(const ir::ArrayDim* d) override { vars[d->array.get()] = d->array; }
  void visit(const ir::ArraysOverlap* o) override {
    vars[o->a.get()] = o->a;
    vars[o->b.get()] = o->b;
  }
  void visit(const ir::Store* s) override {
    other(s->array);
    IRVisitor::visit(s);
  }
  void visit(const ir::Allocate* a) override {
    other(a->array);
    IRVisitor::visit(a);
  }
  void visit(const ir::ArrayBind* b) override {
    other(b->dst);
    other(b->src);
  }
  void visit(const ir::Return* r) override {
    for (const auto& v : r->values)
      if (v.array) other(v.array);
    IRVisitor::visit(r);
  }
  void visit(const ir::AtomicUpdate* u) override {
    ArrayUse& use = uses[u->array.get()];
    vars[u->array.get()] = u->array;
    auto op = reduce_op(u->op, u->value->type);
    if (!op) use.only_atomics = false;
    else if (use.op && *use.op != *op) use.mixed_ops = true;
    else use.op = op;
    IRVisitor::visit(u);
  }
};

// Turns the chosen arrays' atomic updates into plain read-modify-writes.
class PlainUpdates : public ir::IRMutator {
 public:
  explicit PlainUpdates(ir::ArraySet arrays) : arrays_(std::move(arrays)) {}

 protected:
  ir::Stmt visit(const ir::AtomicUpdate* u, const ir::Stmt& self) override {
    if (!arrays_.count(u->array.get())) return self;
    ir::Expr cur = ir::Load::make(u->array, u->indices, u->checked, u->loc);
    ScalarType t = cur->type;
    ir::BinaryOp op;
    switch (u->op) {
      case ir::AtomicOp::Add: op = ir::BinaryOp::Add; break;
      case ir::AtomicOp::Sub: op = ir::BinaryOp::Sub; break;
      case ir::AtomicOp::Mul: op = ir::BinaryOp::Mul; break;
      case ir::AtomicOp::Min: op = ir::BinaryOp::PyMin; break;
      case ir::AtomicOp::Max: op = ir::BinaryOp::PyMax; break;
      default: PLAIT_INTERNAL_ERROR("not a privatisable atomic update");
    }
    ir::Expr value = ir::Binary::make(op, cur, u->value, t, false, u->loc);
    return ir::Store::make(u->array, u->indices, value, u->checked, u->loc);
  }

 private:
  ir::ArraySet arrays_;
};

class Privatizer : public ir::IRMutator {
 public:
  std::vector<ir::Remark> remarks;

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt& self) override {
    if (!ir::is_parallel(f->schedule.kind)) return IRMutator::visit(f, self);
    UseScan scan;
    scan.visit(f->body);
    ir::ArraySet chosen;
    ir::LoopSchedule sched = f->schedule;
    ir::Expr small;
    for (const auto& [array, use] : scan.uses) {
      const ir::ArrayVar& a = scan.vars.at(array);
      if (!use.only_atomics || use.mixed_ops || !use.op || a->type.layout == Layout::Any) continue;
      chosen.insert(array);
      sched.array_reductions.push_back({a, *use.op});
      ir::Expr size = ir::ArrayDim::make(a, 0, f->loc);
      for (int d = 1; d < a->type.ndim; ++d)
        size = ir::Binary::make(ir::BinaryOp::Mul, size, ir::ArrayDim::make(a, d, f->loc), ScalarType::py_int(), false, f->loc);
      // An array without elements keeps its atomics: an OpenMP reduction
      // over an array section of length 0 crashes libgomp.
      ir::Expr fits = ir::Logical::make(
          ir::LogicalOp::And,
          ir::Compare::make(ir::CompareOp::GT, size, ir::IntImm::make(0, ScalarType::py_int(), f->loc), f->loc),
          ir::Compare::make(ir::CompareOp::LE, size,
                            ir::IntImm::make(kMaxPrivateElements, ScalarType::py_int(), f->loc), f->loc),
          f->loc);
      small = small ? ir::Logical::make(ir::LogicalOp::And, small, fits, f->loc) : fits;
      remarks.push_back({f->loc, "privatize_atomics",
                         "atomic updates of '" + a->name + "' use one copy per thread, added up after the loop, when "
                         "it has at least one element and at most " + std::to_string(kMaxPrivateElements) + " elements"});
    }
    if (chosen.empty()) return self;
    PlainUpdates plain(chosen);
    ir::Stmt private_loop = ir::For::make(f->var, f->begin, f->end, f->step, plain.mutate(f->body), sched, f->loc);
    return ir::If::make(small, private_loop, self, f->loc);
  }
};

}  // namespace

void privatize_atomics(ir::Function& function) {
  Privatizer p;
  function.body = p.mutate(function.body);
  for (auto& r : p.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
