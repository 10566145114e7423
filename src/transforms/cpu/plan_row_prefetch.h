// Pass (CPU): software prefetching for loops over rows: which vector loop in
// the body of a loop over rows runs in chunks that prefetch the memory the
// body's other passes over a row stream in and out. The pass records each
// loop's plan on the loop (LoopSchedule::plans); the CPU emitter prints the
// chunks and their prefetches (cpp_emitter_loops.cpp) where the loop's form
// allows them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace plait::transforms::cpu {

// The one-argument functions that plait_runtime.h declares as plait_vm_<name>
// (vectorisable through glibc's libmvec); sqrt and fabs vectorise as they are.
inline bool has_vector_variant(ir::Intrinsic fn) {
  switch (fn) {
    case ir::Intrinsic::Exp:
    case ir::Intrinsic::Log:
    case ir::Intrinsic::Log2:
    case ir::Intrinsic::Log10:
    case ir::Intrinsic::Sin:
    case ir::Intrinsic::Cos:
    case ir::Intrinsic::Tan:
    case ir::Intrinsic::Tanh:
    case ir::Intrinsic::Asin:
    case ir::Intrinsic::Acos:
    case ir::Intrinsic::Atan:
    case ir::Intrinsic::Sinh:
    case ir::Intrinsic::Cosh:
      return true;
    default:
      return false;
  }
}

// Iterations of the compute loop per chunk; each chunk prefetches the
// elements of the targets at the same iterations. 256 float32 elements (1 KiB)
// per chunk keeps a few prefetches in flight without splitting the vector
// loop's work into pieces so small that its set-up shows.
constexpr int64_t kPrefetchChunk = 256;

// An access of a pass over row `i` (the row loop's variable) to prefetch:
// `array[indices]`, where indices[row_dim] is `i` and indices[column_dim] is
// the pass's loop variable (plus column_offset), unit stride, the pass running
// from column_begin by steps of 1; the other indices do not change within the
// row loop's body.
struct PrefetchTarget {
  ir::ArrayVar array;
  std::vector<ir::Expr> indices;
  int row_dim = 0;
  int column_dim = 0;
  int64_t column_begin = 0;
  int64_t column_offset = 0;
  bool write = false;     // written by a pass after the compute loop: this row, for writing
  bool next_row = false;  // read by a pass: the next iteration's row (i + step)
};

// What to prefetch from the chunks of `compute`, a vector loop in the body of
// the row loop.
struct RowPrefetchPlan : ir::LoopPlan {
  const ir::For* compute = nullptr;  // null: no prefetching
  std::vector<PrefetchTarget> targets;
  std::string describe() const override;
};

// The plan for `rows`, a serial or parallel loop (the innermost loop of a
// collapsed nest, whose next iteration is the next row except where it
// wraps). It prefetches when the loop's body makes at least two vector passes
// and one of them calls vector math (exp, log, sin, ...): that pass is
// compute-bound and touches no memory beyond the row the earlier passes
// brought into the cache, so while it runs its chunks prefetch the next row of
// every array the passes read and the current row of every array a later pass
// writes, and those passes then find their rows in the cache instead of
// waiting on memory. Row temporaries allocated in the body are left out (they
// stay in the cache), and so are accesses whose column dimension does not have
// unit stride.
RowPrefetchPlan row_prefetch_plan(const ir::For* rows);

// Records row_prefetch_plan on every loop whose plan prefetches. The emitter
// runs it where the loop it prints is not itself a vector loop (the plan of
// a collapsed nest is its innermost loop's). It runs after every pass that
// rebuilds loops other than their own (a plan points at its loop's body).
void plan_row_prefetch(ir::Function& function);

}  // namespace plait::transforms::cpu
