// Pass (CPU): what a loop's OpenMP construct needs beyond its schedule.
//
// The order of float max/min reductions. The builtin in `m = max(m, x)`
// returns m unless x compares greater: a NaN m stays and a NaN x never
// replaces m, so only a NaN that m held before the loop reaches the result.
// np.maximum/np.minimum propagate any NaN. Both combine in any order. The
// reversed builtin `m = max(x, m)` returns x unless m compares greater: a NaN
// x replaces m and the next element replaces the NaN, so the result depends
// on the order of the updates. A vector loop with a reduction updated so runs
// in order; a parallel loop gives each thread one chunk in order and combines
// the threads' results in thread order, unless the variable is also updated
// in another form (then the loop runs in order). OpenMP's own max/min combine
// partial results leaving NaN to the instruction, which drops one on one
// side: the partial results of the builtin form hold no NaN, so the value
// before the loop is set aside and taken by the builtin after it, except in
// an `omp for` of a parallel region, where every thread would need that
// value before any changes the variable; those and np.maximum's, whose
// partial results can be NaN, combine with plait_max/plait_min, which keep a
// NaN from either side.
//
// Per-thread temporaries. The statements at the top of a parallel loop's
// body that allocate a temporary uninitialised, with extents the loop does
// not change, and name it, when the temporary does not outlive the
// iteration (the one-row buffer `e` of a softmax): NumPy's empty() promises
// no contents, so one buffer per thread serves every iteration the thread
// runs, instead of an allocation per iteration. Only for a parallel loop
// that starts its own team outside every other parallel construct.
//
// The pass records the decisions on the loop (an OmpLoopPlan), which the CPU
// emitter prints (codegen/cpu/cpp_emitter_loops.cpp).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace plait::transforms::cpu {

struct OmpLoopPlan : ir::LoopPlan {
  // The float max/min reduction for which the loop runs in order; null when
  // there is none.
  const ir::VarInfo* in_order = nullptr;
  // A parallel loop's reductions combined in thread order.
  ir::VarSet thread_order;
  // The float max/min reductions combined by plait_max/plait_min.
  ir::VarSet nan_kept;
  // The float max/min reductions whose value before the loop is set aside.
  ir::VarSet set_aside;
  // A parallel loop's statements that each thread runs once, before the
  // iterations are shared out: statements of the body of the innermost loop
  // of its collapse_nest.
  std::vector<ir::Stmt> per_thread;
  std::string describe() const override;
};

// Whether a loop with this schedule has an OmpLoopPlan: a parallel loop, or
// a loop with a float max/min reduction.
bool has_omp_loop_plan(const ir::LoopSchedule& schedule);

// Records an OmpLoopPlan on every loop that has_omp_loop_plan names. It runs
// after plan_parallel_regions (an `omp for` of a region is planned as one)
// and before the planning passes whose plans point into loops' bodies.
void plan_omp_loops(ir::Function& function);

}  // namespace plait::transforms::cpu
