// Pass: Python's negative indices.
//
// `a[-1]` is the last element. Every array index that cannot be proven
// non-negative (analysis/index_bounds) becomes `i < 0 ? i + extent : i`;
// indices of loops such as `for i in range(1, n - 1): a[i - 1]` are proven
// non-negative and stay as they are, so hot loops pay nothing.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void normalize_indices(ir::Function& function);

}  // namespace plait::transforms
