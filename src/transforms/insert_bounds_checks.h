// Pass: bounds checking (boundscheck=True or PLAIT_BOUNDSCHECK=1).
//
// Marks every array access as checked, so the back end tests each index
// against its extent and raises IndexError naming the user's line instead of
// reading or writing outside the array. Off by default: the checks cost time
// in hot loops and block some vectorisation.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void insert_bounds_checks(ir::Function& function);

}  // namespace plait::transforms
