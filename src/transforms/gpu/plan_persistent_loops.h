// Pass (CUDA): time loops as one persistent kernel (docs/cuda.md, "Time
// loops: persistent kernels"). A serial loop outside parallel loops whose
// steps hold parallel loops launches one kernel per parallel loop per step
// unless every thread of one launch can run all its steps, with barriers
// between the step's loops. The pass decides which loops do and records the
// decision on the loop (LoopSchedule::plans, a PersistentLoopPlan, shown in
// the IR's dump): why a loop cannot, or the barriers its steps do without, its
// versions on chip and in registers, and how the host sizes its grid. The
// CUDA emitter prints the kernel from the plan (codegen/cuda). It runs after
// plan_workers, whose plans of the steps' parallel loops say whether their
// workers are teams.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "transforms/gpu/register_arrays.h"
#include "transforms/gpu/step_barriers.h"

namespace plait::transforms::gpu {

// The parallel loops of a persistent kernel's step `stmts` (a serial loop's
// body, top level), in the branches of its `if`s too: a serial loop with
// none is no time loop.
std::vector<const ir::For*> step_parallel_loops(const std::vector<ir::Stmt>& stmts);

// What the host does, before the launch, to count the iterations of a step's
// parallel loops: replay a scalar statement of the step, or count a parallel
// loop's iterations (its persistent_nest).
struct SizingAction {
  ir::Stmt replay;
  const ir::For* count = nullptr;
};

struct PersistentLoopPlan : ir::LoopPlan {
  // Why the loop launches its kernels at every step instead, for explain();
  // empty when it runs as one persistent kernel, and then:
  std::string refusal;
  // The parallel loops that need no barrier after them when the arrays do
  // not share memory (none when a step's parallel loop may raise: every
  // block then learns of an error before the code after the loop runs).
  StepBarriers barriers;
  bool loops_may_raise = false;  // a parallel loop of the step may record an error
  bool step_may_raise = false;   // a statement of the step may
  // The kernel touches arrays: a version on copies of them in shared memory.
  bool onchip = false;
  // The version with the arrays the steps write in registers, or (where
  // `onchip`) why there is none.
  std::optional<RegisterPlan> registers;
  std::string no_registers;
  // The host's steps for the most iterations of a parallel loop at the first
  // and the last step; none when a bound is not known before the launch.
  std::optional<std::vector<SizingAction>> sizing;

  bool runs_persistent() const { return refusal.empty(); }
  std::string describe() const override;
};

// The plan recorded on `loop`, or null.
const PersistentLoopPlan* persistent_loop_plan(const ir::For* loop);

// Records a PersistentLoopPlan on every serial loop outside parallel loops
// whose steps hold parallel loops (step_parallel_loops), with the scalars
// declared around the loop as the emitter's scopes hold them. A loop inside
// one that runs as a persistent kernel is inside its parallel loops.
void plan_persistent_loops(ir::Function& function);

}  // namespace plait::transforms::gpu
