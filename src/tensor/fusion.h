// Redundancy-aware partial fusion of a Program (ReACT's four redundancies):
//   dead values   a dense temporary read only at a sparse output's stored
//                 entries is computed there and nowhere else (its statement
//                 is inlined: SDDMM never forms B @ C);
//   reductions    a factor that does not depend on a sum's variable is
//                 applied after the sum, not inside it;
//   load-store    statements that share their outer loops run in one nest,
//                 and a temporary produced and consumed in the nest is kept
//                 per iteration of the shared loops (T(i,h) becomes T(h) per
//                 row, a scalar per stored entry);
//   loop invariants  a product's factors are computed at the outermost loop
//                 whose variable they read (lower_to_loops).
// Fusion only shares outer loops, so it never raises the cost of a program:
// SpMM-MM stays O(nnz*H + N*H*J). FusionMode::Maximal instead inlines every
// temporary read once and moves every factor inside the sums (one nest per
// result, as a fusing tensor-algebra compiler would); FusionMode::None runs
// each statement on its own with full temporaries. Both exist for
// comparison (python -m plait.bench sparse).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tensor/loop_order.h"

namespace plait::tensor {

enum class FusionMode : uint8_t { Partial, Maximal, None };

// A dense matrix a nest reads from a transposed copy when it visits at least
// as many stored entries as the matrix has columns (column_reads.h).
struct ColumnRead {
  TensorVarPtr tensor;
  ir::Expr entries;  // the number of stored entries whose coordinate picks the column
};

// Statements that run in one nest: they share their first `shared` loops.
struct Nest {
  std::vector<StatementPtr> stmts;
  std::vector<LoopOrder> orders;  // per statement
  size_t shared = 0;
  std::vector<ColumnRead> column_reads;
};

struct FusionPlan {
  std::vector<Nest> nests;
  // Temporaries kept per iteration of their nest's shared loops: the
  // dimensions they drop (those the shared loops index).
  std::map<const TensorVar*, std::vector<bool>> shrunk;
  Remarks remarks;  // for explain()
};

// Throws Refusal (loop_order.h).
FusionPlan plan_fusion(const Program& program, FusionMode mode);

}  // namespace plait::tensor
