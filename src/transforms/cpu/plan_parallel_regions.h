// Pass (CPU): parallel regions. A serial loop that holds parallel loops (a
// time loop around stencil sweeps, the `k` loop of a factorisation) runs as
// one OpenMP region: one team of threads, started once per call, walks the
// serial loop, shares out the iterations of each parallel loop (`omp for`)
// and runs the statements between them in one thread or in all. The pass
// decides which loops do and records the decision on the loop, with what the
// region shares among its threads or why the loop cannot run as one;
// plan_region_statements.h places the region's statements and barriers, and
// the CPU emitter prints the region (codegen/cpu/cpp_emitter_regions.cpp).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace plait::transforms::cpu {

struct ParallelRegionPlan : ir::LoopPlan {
  // Why each parallel loop inside starts its own threads instead; empty when
  // the loop runs as one region.
  std::string refusal;
  // What the region makes shared, declared before it: the accumulators of
  // its parallel loops' reductions and the arrays declared inside the loop
  // (an `omp for` reduction combines into a shared variable; an array a
  // single thread allocates is seen by all).
  std::vector<ir::Var> hoisted_vars;
  std::vector<ir::ArrayVar> hoisted_arrays;
  ir::VarSet assigned;   // anywhere in the loop, its variable included
  ir::ArraySet written;  // elements stored anywhere in the loop
  ir::ArraySet bound;    // allocated, rebound or declared anywhere in the loop
  int parallel_loops = 0;
  int num_threads = 0;  // of its parallel loops' pragmas; 0 = the kernel's default
  // Whether something in the loop may record an error (raise, fail an
  // allocation or a check): every thread then leaves the region after the
  // construct that recorded it.
  bool may_stop = false;

  bool runs_as_region() const { return refusal.empty(); }
  std::string describe() const override;
};

// Records a ParallelRegionPlan on every serial loop that holds a parallel
// loop and is neither inside a parallel or vector loop nor inside a loop that
// runs as a region: the loops where the emitter would otherwise start a team
// for each parallel loop. It runs after the passes that change loops: the
// emitter's regions see the loops as those passes left them.
void plan_parallel_regions(ir::Function& function);

}  // namespace plait::transforms::cpu
