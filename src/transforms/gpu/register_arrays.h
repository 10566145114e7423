// Arrays of a one-block persistent kernel kept in registers (docs/cuda.md,
// "Arrays in registers"). A time loop over a small 1-D stencil (jacobi_1d)
// in one block on shared-memory copies is bound by the shared memory's
// bandwidth: each element is read three times per sweep. With the arrays in
// registers, thread t holds elements t*slots .. t*slots + slots - 1 of each
// array the loop writes, the iteration that stores element e runs in e's
// thread (for every slot, unrolled), reads of neighbouring elements are
// registers, and only the elements at the edges of a thread's slots cross
// to the next thread, through shared memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace plait::transforms::gpu {

// The registers one thread spends on the arrays' elements, at most, in
// 32-bit words: a block of 1024 threads has 64 registers per thread.
constexpr int kRegisterArrayWords = 48;
// The most elements of each array per thread (each slot is unrolled code).
constexpr int kRegisterArraySlots = 16;

// What one parallel loop of the steps reads across threads.
struct RegisterLoop {
  const ir::VarInfo* var = nullptr;  // the loop's variable
  // Iteration i stores element i + store_offset of the arrays it writes.
  int64_t store_offset = 0;
  // By array: how many elements before a thread's first slot and after its
  // last the loop reads (at most `slots`).
  ir::ArrayMap<std::pair<int, int>> halos;
};

struct RegisterPlan {
  int slots = 0;                     // consecutive elements of each array per thread
  std::vector<ir::ArrayVar> arrays;  // the arrays the steps write, in `written`'s order
  // By array: the most elements one thread passes to its neighbours in one
  // loop (its halo buffer's row width).
  ir::ArrayMap<int> halo_width;
  std::map<const ir::For*, RegisterLoop> loops;
};

// Plans `written` (the arrays a persistent time loop's steps write) in
// registers for the steps' parallel loops `loops` (each one level, not a
// nest). Returns "" with `plan` filled, or why not: every array written must
// be 1-D, accessed in those loops (the persistent rule keeps the steps' other
// statements from reading it) never atomically or with a bounds check, and
// at `i + c` (the loop's variable plus a constant); each loop has a
// step of 1 and stores at one offset, reads an array it writes only at that
// offset, and others at most `slots` elements away.
std::string plan_register_arrays(const std::vector<const ir::For*>& loops, const std::vector<ir::ArrayVar>& written,
                                 RegisterPlan* plan);

}  // namespace plait::transforms::gpu
