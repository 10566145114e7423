// Pass (CPU): the statements of parallel regions. In a loop that runs as one
// OpenMP region (plan_parallel_regions.h) every thread walks the loop and the
// ifs, blocks and serial loops between it and its parallel loops, which share
// out their iterations (`omp for`). The pass decides how each other statement
// there runs: in one thread (`omp single`, whose closing barrier publishes
// what it wrote) or, when it is pure and writes only the thread's own
// variables, in every thread; which consecutive statements share one
// `omp single`; and where a barrier goes, before a construct that writes what
// a thread may still be reading since the last barrier. Variables declared
// before the region are shared; those declared inside belong to each thread.
// It records the decisions on the loop (a RegionStatementsPlan), which the
// CPU emitter prints (codegen/cpu/cpp_emitter_regions.cpp).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace plait::transforms::cpu {

// How a statement at a region's level (outside its `omp for` loops) runs.
enum class Placement {
  Structure,  // holds parallel loops: every thread walks it (loops, ifs, blocks)
  Redundant,  // pure and writes only thread-local variables: every thread runs it
  Check,      // an Assert whose condition cannot fail: every thread checks it
  Single,     // one thread runs it; the barrier after it publishes its writes
};

struct RegionStep;

// Statements at a region's level as the team runs them: the body of a loop,
// a branch of an `if`, the statements of a block.
struct RegionSteps {
  std::vector<RegionStep> steps;
  // A loop's body: a barrier ends each iteration, because the next one may
  // write what this one read after its last barrier.
  bool barrier_at_end = false;
};

// One construct of the team: a statement, or the consecutive statements of
// one `omp single`.
struct RegionStep {
  Placement placement = Placement::Structure;
  std::vector<ir::Stmt> stmts;  // one, except for a Single
  // A barrier comes first: the single, or the `omp for` of a parallel loop,
  // writes what a thread may still be reading.
  bool barrier = false;
  // Single: the scalars its assignments declare for the rest of the block,
  // declared before the construct in every thread; the scalars of each
  // thread that it assigns, which it passes on (copyprivate); whether it may
  // record an error.
  std::vector<ir::Var> declared_before;
  ir::VarSet copied;
  bool may_stop = false;
  // Structure: an `if`'s branches (the else branch when there is one), a
  // block's statements, or the body of a serial loop that every thread runs.
  std::vector<RegionSteps> nested;
  // Structure, a loop: the variables (of the loop, or of the nest that its
  // `omp for` collapses) whose last value one thread sets after it, under
  // `omp single`, because they are shared; and whether a serial loop's
  // variable needs a barrier first, because a thread may still be reading it.
  ir::VarSet single_copy_back;
  bool barrier_before_copy_back = false;
};

struct RegionStatementsPlan : ir::LoopPlan {
  RegionSteps body;
  // The scalars the loop uses that are declared before the region, its
  // hoisted accumulators included: one variable that all threads share.
  ir::VarSet shared;
  // The steps in order, e.g. "team: single(2), barrier, for i, all".
  std::string describe() const override;
};

// The loops that an OpenMP loop runs as one by collapse(k): `outer` and the
// loops perfectly nested in it, as many as the schedule asks and the shape
// allows (an inner loop whose bounds read an outer loop variable stops the
// nest).
std::vector<const ir::For*> collapse_nest(const ir::For* outer);

// Records a RegionStatementsPlan on every loop whose ParallelRegionPlan runs
// it as one region, walking the function with the scalars declared at each
// point as the emitter declares them. It runs last, after
// plan_parallel_regions: the plan points into the loop's body.
void plan_region_statements(ir::Function& function);

}  // namespace plait::transforms::cpu
