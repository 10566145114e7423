// Pass: make every parallel and vector loop free of scalar races.
//
// For each loop whose iterations may overlap (parallel or simd), every scalar
// it writes must be private to an iteration (declared inside the body, see
// place_declarations), a reduction (`s += e`, `s *= e`, `s = max(s, e)`,
// `s = min(s, e)`, with `s` read nowhere else in the loop), or privatisable
// (written before it is read in each iteration and never read outside the
// loop). Reductions are recorded in the loop's schedule, as OpenMP's
// reduction clause would need; anything else is a CompileError that explains
// the race. Loops that can break or return cannot run in parallel or in SIMD
// lanes and are refused too.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void detect_reductions(ir::Function& function);

}  // namespace plait::transforms
