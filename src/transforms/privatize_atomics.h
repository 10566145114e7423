// Pass: replace contended atomics by per-thread copies.
//
// A histogram (`#pragma atomic` then `h[k] += 1` in a parallel loop) makes
// every update a locked operation on memory the threads share. When all the
// loop does with an array is such updates with one operator (+, -, * on
// numbers; min and max on integers) and the array is contiguous and small,
// each thread can update its own copy and the copies can be added up at the
// end (an OpenMP array reduction). The array's size is known only at run
// time, so the loop is kept in both forms and chosen by size.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void privatize_atomics(ir::Function& function);

}  // namespace plait::transforms
