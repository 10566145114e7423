// Pass: collapse and serialisation of nested parallel loops (see
// plan_parallel_loops.h).
#include "transforms/plan_parallel_loops.h"

#include "analysis/var_uses.h"
#include "ir/ir_mutator.h"

namespace plait::transforms {

namespace {

std::string describe_schedule(const ir::For* f) {
  const ir::LoopSchedule& s = f->schedule;
  std::string text;
  if (ir::is_parallel(s.kind)) {
    text = "parallel loop over '" + f->var->name + "'";
    if (s.collapse > 1) text += ", collapse(" + std::to_string(s.collapse) + ")";
    if (s.num_threads) text += ", num_threads(" + std::to_string(s.num_threads) + ")";
    if (ir::is_vectorized(s.kind)) text += ", simd";
  } else {
    text = "vector loop over '" + f->var->name + "'";
    if (s.simd_width) text += " simdlen(" + std::to_string(s.simd_width) + ")";
  }
  for (const auto& r : s.reductions)
    text += std::string(", reduction(") + ir::reduce_op_name(r.op) + ": " + r.var->name + ")";
  return text;
}

// The loop that is the whole body of `outer`, if there is one: only then are
// the two perfectly nested.
const ir::For* sole_inner_loop(const ir::For* outer) {
  const ir::Block* body = outer->body->as<ir::Block>();
  if (!body || body->stmts.size() != 1) return nullptr;
  return body->stmts[0]->as<ir::For>();
}

class Planner : public ir::IRMutator {
 public:
  std::vector<ir::Remark> remarks;

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt& self) override {
    bool parallel = ir::is_parallel(f->schedule.kind);
    if (vector_depth_ > 0 && f->schedule.kind != ir::LoopKind::Serial) {
      // OpenMP allows no loop construct inside a simd loop (a reduction of a
      // whole array in a vector loop's body): each lane runs this loop in order.
      ir::LoopSchedule sched;
      sched.pragma_loc = f->schedule.pragma_loc;
      remarks.push_back({f->loc, "plan_parallel_loops",
                         std::string(parallel ? "parallel" : "vector") + " loop over '" + f->var->name +
                             "' runs serially: it is inside a vector loop"});
      return ir::For::make(f->var, f->begin, f->end, f->step, mutate(f->body), sched, f->loc);
    }
    if (parallel && parallel_depth_ > 0) {
      // Nested inside another parallel loop and not collapsed into it.
      ir::LoopSchedule sched = f->schedule;
      sched.kind = ir::is_vectorized(sched.kind) ? ir::LoopKind::Vectorized : ir::LoopKind::Serial;
      remarks.push_back({f->loc, "plan_parallel_loops",
                         "parallel loop over '" + f->var->name +
                             "' runs serially: it is inside another parallel loop and not perfectly nested in it"});
      if (ir::is_vectorized(sched.kind)) ++vector_depth_;
      ir::Stmt body = mutate(f->body);
      if (ir::is_vectorized(sched.kind)) --vector_depth_;
      ir::Stmt loop = ir::For::make(f->var, f->begin, f->end, f->step, body, sched, f->loc);
      if (ir::is_vectorized(sched.kind)) remarks.push_back({f->loc, "plan_parallel_loops", describe_schedule(loop->as<ir::For>())});
      return loop;
    }
    if (!parallel) {
      const bool vector = ir::is_vectorized(f->schedule.kind);
      if (vector) ++vector_depth_;
      ir::Stmt rebuilt = IRMutator::visit(f, self);
      if (vector) --vector_depth_;
      if (ir::is_vectorized(f->schedule.kind))
        remarks.push_back({f->loc, "plan_parallel_loops", describe_schedule(rebuilt->as<ir::For>())});
      return rebuilt;
    }
    // Collapse a chain of perfectly nested parallel loops.
    ir::LoopSchedule sched = f->schedule;
    std::vector<const ir::For*> chain = {f};
    while (true) {
      const ir::For* inner = sole_inner_loop(chain.back());
      if (!inner || !ir::is_parallel(inner->schedule.kind) || inner->schedule.num_threads) break;
      bool depends = false;
      for (const ir::For* outer : chain)
        for (const auto& e : {inner->begin, inner->end, inner->step})
          depends = depends || analysis::reads_var(e, outer->var.get());
      if (depends) break;
      chain.push_back(inner);
    }
    bool vector = false;
    for (const ir::For* l : chain) vector = vector || ir::is_vectorized(l->schedule.kind);
    ++parallel_depth_;
    if (vector) ++vector_depth_;
    ir::Stmt innermost_body = mutate(chain.back()->body);
    if (vector) --vector_depth_;
    --parallel_depth_;
    // Rebuild the chain from the inside out; inner loops become plain loops
    // run by the collapsed parallel loop, and their reductions move to it.
    ir::Stmt body = innermost_body;
    for (size_t i = chain.size(); i-- > 1;) {
      const ir::For* l = chain[i];
      for (const auto& r : l->schedule.reductions) {
        bool known = false;
        for (const auto& have : sched.reductions) known = known || have.var == r.var;
        if (!known) sched.reductions.push_back(r);
      }
      for (const auto& p : l->schedule.privates) sched.add_private(p);
      if (ir::is_vectorized(l->schedule.kind)) sched.kind = ir::LoopKind::ParallelVectorized;
      ir::LoopSchedule plain;
      ir::Stmt loop = ir::For::make(l->var, l->begin, l->end, l->step, body, plain, l->loc);
      body = ir::Block::make({loop}, chain[i - 1]->body->loc);
    }
    sched.collapse = static_cast<int>(chain.size());
    ir::Stmt loop = ir::For::make(f->var, f->begin, f->end, f->step, body, sched, f->loc);
    remarks.push_back({f->loc, "plan_parallel_loops", describe_schedule(loop->as<ir::For>())});
    return loop;
  }

 private:
  int parallel_depth_ = 0;
  int vector_depth_ = 0;  // enclosing vector loops
};

}  // namespace

void plan_parallel_loops(ir::Function& function) {
  Planner planner;
  function.body = planner.mutate(function.body);
  for (auto& r : planner.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms
