// Pass: reductions and race checks of parallel and vector loops (see
// detect_reductions.h).
#include "transforms/detect_reductions.h"

#include <map>
#include <optional>
#include <set>

#include "analysis/loop_exits.h"
#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"
#include "ir/ir_visitor.h"

namespace plait::transforms {

namespace {

// Locals declared by a Declare anywhere under a statement.
struct DeclaredVars : ir::IRVisitor {
  ir::VarSet vars;
  using IRVisitor::visit;
  void visit(const ir::Declare* d) override {
    if (d->var) vars.insert(d->var.get());
  }
};

// Loop variables of loops under a statement.
struct LoopVars : ir::IRVisitor {
  ir::VarSet vars;
  using IRVisitor::visit;
  void visit(const ir::For* f) override {
    vars.insert(f->var.get());
    IRVisitor::visit(f);
  }
};

// Every Assign to a given variable under a statement, and the number of reads.
struct VarAccesses : ir::IRVisitor {
  const ir::VarInfo* var = nullptr;
  std::vector<const ir::Assign*> assigns;
  int reads = 0;
  using IRVisitor::visit;
  void visit(const ir::Assign* a) override {
    if (a->var.get() == var) assigns.push_back(a);
    IRVisitor::visit(a);
  }
  void visit(const ir::VarRef* r) override {
    if (r->var.get() == var) ++reads;
  }
};

// The reduction an assignment `var = var op e` performs, if it is one.
std::optional<ir::ReduceOp> reduction_of(const ir::Assign* a, const ir::VarInfo* var) {
  auto b = a->value->as<ir::Binary>();
  if (!b) return std::nullopt;
  auto is_var = [&](const ir::Expr& e) {
    auto r = e->as<ir::VarRef>();
    return r && r->var.get() == var;
  };
  bool left = is_var(b->a) && !analysis::reads_var(b->b, var);
  bool right = is_var(b->b) && !analysis::reads_var(b->a, var);
  switch (b->op) {
    case ir::BinaryOp::Add: if (left || right) return ir::ReduceOp::Add; break;
    case ir::BinaryOp::Sub: if (left) return ir::ReduceOp::Add; break;
    case ir::BinaryOp::Mul: if (left || right) return ir::ReduceOp::Mul; break;
    case ir::BinaryOp::Max:
    case ir::BinaryOp::PyMax: if (left || right) return ir::ReduceOp::Max; break;
    case ir::BinaryOp::Min:
    case ir::BinaryOp::PyMin: if (left || right) return ir::ReduceOp::Min; break;
    default: break;
  }
  return std::nullopt;
}

class ReductionFinder : public ir::IRMutator {
 public:
  ReductionFinder(const ir::Function& f) : function_(f) {
    DeclaredVars d;
    d.visit(f.body);
    declared_ = d.vars;
  }

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt& self) override {
    ir::Stmt rebuilt = IRMutator::visit(f, self);
    const ir::LoopKind kind = f->schedule.kind;
    if (kind == ir::LoopKind::Serial) return rebuilt;
    const ir::For* loop = rebuilt->as<ir::For>();
    const char* what = ir::is_parallel(kind) ? "parallel" : "simd";
    const SourceLoc where = loop->schedule.pragma_loc.valid() ? loop->schedule.pragma_loc : loop->loc;

    const analysis::LoopExits exits = analysis::loop_exits(loop->body);
    if (exits.returns)
      fail("a " + std::string(what) + " loop cannot return from the function: its iterations do not run in order",
           exits.returns->loc);
    if (exits.breaks)
      fail("a " + std::string(what) + " loop cannot break: its iterations do not run in order", exits.breaks->loc);

    DeclaredVars inner;
    inner.visit(loop->body);
    LoopVars inner_loops;
    inner_loops.visit(loop->body);
    analysis::VarUses body_uses = analysis::uses_of(loop->body);

    ir::LoopSchedule sched = loop->schedule;
    ir::VarMap<ir::ReduceOp> asked;
    for (const auto& r : sched.reductions) asked[r.var.get()] = r.op;
    ir::VarSet asked_private;
    for (const auto& p : sched.privates) asked_private.insert(p.get());
    sched.reductions.clear();
    sched.privates.clear();

    for (const ir::VarInfo* v : body_uses.writes) {
      if (v == loop->var.get()) continue;
      bool declared_inside = inner.vars.count(v) > 0;
      bool codegen_declared_loop_var = inner_loops.vars.count(v) > 0 && declared_.count(v) == 0;
      if (declared_inside || codegen_declared_loop_var) continue;  // private to each iteration
      ir::Var var = find_var(v);
      VarAccesses acc;
      acc.var = v;
      acc.visit(loop->body);
      std::optional<ir::ReduceOp> op;
      bool all_match = !acc.assigns.empty();
      for (const ir::Assign* a : acc.assigns) {
        auto r = reduction_of(a, v);
        if (!r || (op && *op != *r)) all_match = false;
        else op = r;
      }
      // Each update reads the variable once; any other read sees a partial value.
      bool only_update_reads = acc.reads == static_cast<int>(acc.assigns.size());
      if (all_match && only_update_reads && !asked_private.count(v)) {
        auto want = asked.find(v);
        if (want != asked.end() && want->second != *op)
          fail("reduction(" + std::string(ir::reduce_op_name(want->second)) + ":" + v->name + ") does not match the " +
                   ir::reduce_op_name(*op) + " update of '" + v->name + "' in this loop",
               where);
        sched.reductions.push_back({var, *op});
        function_remarks_.push_back({loop->loc, "detect_reductions",
                                     std::string(ir::reduce_op_name(*op)) + "-reduction of '" + v->name + "' across the " +
                                         what + " loop over '" + loop->var->name + "'"});
        continue;
      }
      if (asked.count(v))
        fail("'" + v->name + "' is listed in a reduction clause but is not only updated as `" + v->name + " " +
                 ir::reduce_op_name(asked.at(v)) + "= ...` in this loop",
             where);
      bool exposed = analysis::may_read_before_write(loop->body, v);
      if (!exposed && !analysis::live_after(function_.body, f, v)) {
        sched.privates.push_back(var);
        function_remarks_.push_back({loop->loc, "detect_reductions",
                                     "'" + v->name + "' is private to each iteration of the loop over '" +
                                         loop->var->name + "'"});
        continue;
      }
      std::string why = exposed ? "each iteration reads the value the previous one left"
                                : "its value after the loop is read, and that would depend on which iteration wrote last";
      fail("'" + v->name + "' is assigned in this " + what + " loop but defined outside it, and " + why +
               "; iterations would race. Make it a reduction (" + v->name + " += ..., " + v->name + " = max(" + v->name +
               ", ...)), or assign it first thing inside the loop and use it only there",
           acc.assigns.empty() ? loop->loc : acc.assigns[0]->loc);
    }
    for (const ir::VarInfo* v : asked_private) {
      bool ok = inner.vars.count(v) > 0;
      for (const auto& p : sched.privates) ok = ok || p.get() == v;
      if (!ok && body_uses.writes.count(v) == 0) ok = !body_uses.reads.count(v);
      if (!ok)
        fail("private variable '" + v->name + "' is read before it is assigned in the loop, or used after it", where);
    }
    for (const ir::ArrayInfo* a : body_uses.array_binds) {
      if (a->is_param) continue;
      bool inside = false;
      struct ArrayDeclared : ir::IRVisitor {
        const ir::ArrayInfo* a;
        bool found = false;
        using IRVisitor::visit;
        void visit(const ir::Declare* d) override { found = found || d->array.get() == a; }
      } ad;
      ad.a = a;
      ad.visit(loop->body);
      inside = ad.found;
      if (!inside)
        fail("array '" + a->name + "' is (re)bound inside this " + std::string(what) +
                 " loop but used outside it; iterations would race. Allocate and use it inside the loop only",
             loop->loc);
    }
    return ir::For::make(loop->var, loop->begin, loop->end, loop->step, loop->body, sched, loop->loc);
  }

 public:
  std::vector<ir::Remark> function_remarks_;

 private:
  [[noreturn]] void fail(const std::string& message, SourceLoc loc) const {
    throw CompileError(ErrorKind::Race, message, function_.source, loc);
  }

  ir::Var find_var(const ir::VarInfo* v) const {
    struct Finder : ir::IRVisitor {
      const ir::VarInfo* want;
      ir::Var found;
      using IRVisitor::visit;
      void visit(const ir::VarRef* r) override {
        if (r->var.get() == want) found = r->var;
      }
      void visit(const ir::Assign* a) override {
        if (a->var.get() == want) found = a->var;
        IRVisitor::visit(a);
      }
      // An inner loop's variable that its body never reads.
      void visit(const ir::For* f) override {
        if (f->var.get() == want) found = f->var;
        IRVisitor::visit(f);
      }
    } finder;
    finder.want = v;
    finder.visit(function_.body);
    for (const auto& p : function_.params)
      if (p.scalar.get() == v) finder.found = p.scalar;
    if (!finder.found) PLAIT_INTERNAL_ERROR("variable " + v->name + " not found");
    return finder.found;
  }

  const ir::Function& function_;
  ir::VarSet declared_;
};

}  // namespace

void detect_reductions(ir::Function& function) {
  ReductionFinder finder(function);
  function.body = finder.mutate(function.body);
  for (auto& r : finder.function_remarks_) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
