// Dense operands a nest reads down their columns. SDDMM, S.multiply(B @ C),
// sums B(i,k) * C(k,j) over k at each stored entry (i, j): with C row-major,
// the sum's reads of C(k, j) stride by C's row length, each in a cache line
// (on the GPU, a memory sector) of its own. Such a nest reads C from a
// row-major copy of C's transpose (one parallel pass over C) when it visits
// at least as many stored entries as C has columns, so that each entry's sum
// reads one contiguous row; with fewer entries, and when C is column-major
// already (C = Y.T), it reads C as it is (lower_relayout.cpp).
#pragma once

#include <string>
#include <vector>

#include "tensor/fusion.h"

namespace plait::tensor {

// The dense matrices of `nest` that every sum of its reads as C(k, j), k the
// sum's variable over a dense extent and j the coordinate of a stored entry
// (program operands only: a statement's result is read through its storage).
// Fills each nest's `column_reads` and adds a remark per operand.
void plan_column_reads(const Program& program, FusionPlan& plan);

}  // namespace plait::tensor
