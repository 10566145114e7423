// Barriers between the parallel loops of a persistent kernel's step
// (docs/cuda.md, "Barriers between a step's loops"). Every thread of the
// launch runs every parallel loop of a step, each over the whole grid, so a
// barrier (a grid barrier, or __syncthreads in one block) after a loop makes
// its writes visible to the next. It is needed only where the next loop may
// touch an element that a loop since the last barrier wrote, or write one
// that such a loop read: FDTD's `ey` update and `ex` update share no array
// they write, and `ey[0, j] = fict[t]` writes a row that the `ey` update over
// rows 1.. never touches.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace plait::transforms::gpu {

struct StepBarriers {
  // The parallel loops after which the step needs no barrier.
  std::set<const ir::For*> not_needed;
  // For explain(): the loop whose barrier went and why.
  std::vector<std::pair<const ir::For*, std::string>> notes;
};

// Plans the barriers of `step` (a persistent time loop's body, top level):
// a parallel loop followed directly by another parallel loop needs none when
// no array element that one of them writes can be touched by the other or by
// a loop since the last barrier. Two accesses to one array touch different
// elements when, in some dimension, their indices are `v + c` or constants
// whose ranges (from the loops that define v, constant bounds only) do not
// meet. A loop at the end of the step keeps its barrier (the next step's
// loops follow it), as does a loop followed by any other statement.
StepBarriers plan_step_barriers(const std::vector<ir::Stmt>& step);

}  // namespace plait::transforms::gpu
