// Pass (CPU): vector loops that may raise run as scalar loops (see
// scalarize_raising_loops.h).
#include "transforms/cpu/scalarize_raising_loops.h"

#include "analysis/raises.h"
#include "ir/ir_mutator.h"

namespace plait::transforms::cpu {

namespace {

std::string what_raises(const analysis::RaiseFacts& facts) {
  if (facts.expressions) return "an expression in it may raise an error";
  if (facts.checks) return "a run-time check in it may fail";
  return "an allocation in it may fail";
}

class Scalarizer : public ir::IRMutator {
 public:
  std::vector<ir::Remark> remarks;

 protected:
  ir::Stmt visit(const ir::For* f, const ir::Stmt& self) override {
    ir::Stmt body = mutate(f->body);
    const analysis::RaiseFacts facts = analysis::raises(body);
    if (!ir::is_vectorized(f->schedule.kind) || !facts.any()) {
      if (body == f->body) return self;
      return ir::For::make(f->var, f->begin, f->end, f->step, body, f->schedule, f->loc);
    }
    ir::LoopSchedule schedule = f->schedule;
    schedule.simd_width = 0;
    if (ir::is_parallel(schedule.kind)) {
      schedule.kind = ir::LoopKind::Parallel;
    } else {
      // A serial loop runs its iterations in order: nothing to combine.
      schedule = ir::LoopSchedule{};
      schedule.pragma_loc = f->schedule.pragma_loc;
    }
    remarks.push_back({f->loc, "scalarize_raising_loops",
                       "loop over '" + f->var->name + "' runs without simd: " + what_raises(facts) +
                           ", which must stop the loop at that iteration"});
    return ir::For::make(f->var, f->begin, f->end, f->step, body, schedule, f->loc);
  }
};

}  // namespace

void scalarize_raising_loops(ir::Function& function) {
  Scalarizer scalarizer;
  function.body = scalarizer.mutate(function.body);
  for (auto& r : scalarizer.remarks) function.remarks.push_back(std::move(r));
}

}  // namespace plait::transforms::cpu
