// The vocabulary of the CUDA back end's emitter (cuda_emitter.h): the
// visitors and helpers its parts share. Private to codegen/cuda.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "analysis/loop_exits.h"
#include "analysis/raises.h"
#include "analysis/var_uses.h"
#include "codegen/c_emitter.h"
#include "codegen/cuda/codegen_cuda.h"
#include "codegen/cuda/device_runtime.h"
#include "codegen/cuda/device_stops.h"
#include "codegen/overlap_test.h"
#include "ir/ir_printer.h"
#include "ir/ir_visitor.h"
#include "runtime/abi.h"
#include "transforms/gpu/plan_persistent_loops.h"
#include "transforms/gpu/plan_workers.h"

namespace plait::codegen {

// The worker planner (transforms/gpu/worker_plan.h) and what its pass
// records (plan_workers.h).
namespace gpu = transforms::gpu;

using namespace ir;
using analysis::HasErrorSites;
using analysis::ScalarMentions;
using gpu::kSmallTeam;
using gpu::Placement;
using gpu::pragma_sizes;
using gpu::RegisterLoop;
using gpu::RegisterPlan;
using gpu::WorkerPlan;

namespace cuda_emitter {

// Blocks of a kernel launch: enough for one thread per iteration up to this
// many; a reduction kernel stops earlier, as each warp costs one atomic.
inline constexpr int64_t kMaxBlocks = 65536;
inline constexpr int64_t kMaxReductionBlocks = 2048;
// Fewer workers than this leave most of the GPU idle at one thread each
// (8192 warps fill 132 SMs' 2048 threads twice over): a worker whose loops
// the cost rule keeps serial gets a team of threads instead.
inline constexpr int64_t kFewWorkers = 8192;
// CSR rows staged per block (gpu::staged_rows_loop): the terms a block
// computes for its rows at once, per reduction (16 KB of float64; the 128
// rows of a block of 256 threads in teams of 2, at 16 elements on average).
inline constexpr int kStagedElements = 2048;
// The host runs the staged version when the rows hold at most this many
// elements on average (plait_cuda::rows_staged).
inline constexpr int kStagedRowElements = 16;
// emit_device_serial_loop: the largest dimension of the arrays a serial loop
// touches for its steps to run on one team of the block's threads; and,
// when its steps hold parallel loops of the user's (whose iterations a launch
// per step gives a thread or a team each, where the one team runs their inner
// loops serially), the most elements of each array: 32 per thread of the
// team (measured on gramschmidt: 70 x 60 gains 1.9x on the launches, 240 x
// 200 loses 3x).
inline constexpr int64_t kDeviceLoopMaxExtent = 8192;
inline constexpr int64_t kDeviceLoopMaxElements = 8192;
inline constexpr int kScratchSlots = (PLAIT_CUDA_SCRATCH_BYTES - PLAIT_CUDA_ERROR_BYTES) / 8;
// Persistent kernels (one launch for all steps of a time loop): threads per
// block, and the scratch slot of their grid barrier's two counters.
inline constexpr int kPersistentBlockSize = 1024;
inline constexpr int kBarrierSlot = kScratchSlots - 1;
// Reduction results that stay on the device for the device region after
// their loop (emit_contents): slots kResidentSlot.. kResidentSlot + 7.
inline constexpr int kResidentSlots = 8;
inline constexpr int kResidentSlot = kBarrierSlot - kResidentSlots;
// Scalars that a device region assigns and only later parallel loops of its
// block read stay on the device too: slots kRegionSlot.. kResidentSlot - 1.
inline constexpr int kRegionSlot = kResidentSlot - kResidentSlots;
// Workers per thread whose first loads are made together
// (KernelVersions::prefetch).
inline constexpr int kPrefetchIterations = 4;

inline std::string dtype_suffix(ScalarKind k) {
  return to_string(ScalarType{k, false});
}

inline int element_bytes(ScalarKind k) {
  return ScalarType{k, false}.bits() / 8;
}

// ------------------------------------------------------------------ analyses

// What decides where a statement outside parallel loops runs (with the
// statement's exits: analysis::loop_exits).
class StmtFacts : public IRVisitor {
 public:
  bool touches_elements = false;  // Load, Store or AtomicUpdate
  bool has_parallel_loop = false;
  bool binds_arrays = false;   // Allocate or ArrayBind
  bool calls_library = false;  // a MatMul, which the host hands to cuBLAS
  using IRVisitor::visit;

 protected:
  void visit(const MatMul* n) override {
    calls_library = true;
    IRVisitor::visit(n);
  }
  void visit(const Load* n) override {
    touches_elements = true;
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    touches_elements = true;
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    touches_elements = true;
    IRVisitor::visit(n);
  }
  void visit(const Allocate* n) override {
    binds_arrays = true;
    IRVisitor::visit(n);
  }
  void visit(const ArrayBind*) override { binds_arrays = true; }
  void visit(const For* n) override {
    if (is_parallel(n->schedule.kind)) has_parallel_loop = true;
    IRVisitor::visit(n);
  }
};

// The loops of a statement whose schedule carries a sliced pragma's size
// (block(N), le(N), single_block), for the remark when a worker does not use
// them.
class SizedLoops : public IRVisitor {
 public:
  std::vector<const For*> loops;
  using IRVisitor::visit;

 protected:
  void visit(const For* n) override {
    const LoopSchedule& s = n->schedule;
    const bool sized = s.block_strip > 0 || s.most_trips > 0 || s.single_block;
    if (sized && !s.sizes_by_compiler) loops.push_back(n);
    IRVisitor::visit(n);
  }
};

// The arrays a subtree writes (stores and atomic updates), and those it reads.
class StoredArrays : public IRVisitor {
 public:
  ArraySet arrays;
  ArraySet loaded;
  using IRVisitor::visit;

 protected:
  void visit(const Load* n) override {
    loaded.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const Store* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
  void visit(const AtomicUpdate* n) override {
    arrays.insert(n->array.get());
    IRVisitor::visit(n);
  }
};

// ------------------------------------------------------------------ emitter

enum class Mode { Host, Device };

}  // namespace cuda_emitter
}  // namespace plait::codegen
