// Pass (CPU): vector loops that may raise run as scalar loops.
//
// A run-time error stops the kernel where Python stops (docs/language.md,
// "Errors"): the statements after the failing one do not run, and a parallel
// loop's threads stop at their next iteration. The iterations of a vector
// loop (`simd`, or `parallel for simd`) run as lanes of one instruction and
// cannot be left one by one, so a loop whose body may raise (a checked index,
// a division by a value that may be zero, a math-module function, a failed
// check or allocation) loses `simd`: a serial vector loop becomes a plain
// loop, a parallel one a parallel loop. explain() says so for each.
#pragma once

#include "ir/ir.h"

namespace plait::transforms::cpu {

void scalarize_raising_loops(ir::Function& function);

}  // namespace plait::transforms::cpu
