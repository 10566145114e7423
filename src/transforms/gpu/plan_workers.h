// Pass (CUDA): how the CUDA back end maps the loops it runs as kernels onto
// GPU threads. Each iteration of a kernel's loop nest is a worker, one thread
// or a team of threads (worker_plan.h, plan_worker); the pass plans the
// workers of every loop the emitter may run so and records the plans on the
// loop (LoopSchedule::plans, a WorkerLoopPlan, shown in the IR's dump), which
// the CUDA emitter prints (codegen/cuda). It runs after every pass that
// changes loops, as a plan points at its loop's body; only
// plan_persistent_loops, which reads its plans, follows it.
#pragma once

#include <optional>
#include <string>

#include "ir/ir.h"
#include "ir/ir_visitor.h"
#include "support/compile_options.h"
#include "transforms/gpu/kernel_versions.h"
#include "transforms/gpu/team_body_plan.h"
#include "transforms/gpu/worker_plan.h"

namespace plait::transforms::gpu {

// The sizes a loop's sliced pragma gives, as written: "single_block", "le(64)".
std::string pragma_sizes(const ir::LoopSchedule& s);

// The workers of a kernel and the threads they have.
struct KernelWorkers {
  // The worker as planned from the body (never teams_when_few when the
  // pragmas ask for a team); versions.worker is the worker as launched.
  WorkerPlan worker;
  // Threads per block: block(N) of a parallel dimension of the nest (the
  // innermost such dimension's N, a power of two from 32 to 1024), else the
  // configured block (CudaLaunchConfig::threads).
  int block = 0;
  std::optional<SourceLoc> block_pragma;  // where that block(N) is, if one sets `block`
  int team_cap = 0;                       // the largest team: the configured one, at most the block
  PragmaTeam asked;                       // the team the pragmas ask for, whatever the number of workers
  CudaLaunchConfig launch;                // the configuration planned for, which the emitter must have
  KernelVersions versions;                // the worker as launched, the team's sizing and the kernel's versions
  // The decisions of the body of the worker as launched, when it is a team
  // (its barriers and broadcasts are in versions.worker).
  TeamBody team_body;
  // The forms of the loop's reductions, in the order of its schedule.
  std::vector<ReductionForm> reduction_forms;
};

// A serial loop that runs on the device as one kernel (docs/cuda.md,
// "Serial loops on the device"): the body of a parallel loop of one
// iteration, whose worker is a team of the whole block.
struct DeviceLoop {
  // That kernel's workers, the loop their one statement; null when the loop
  // cannot run so.
  std::optional<KernelWorkers> kernel;
  // Why not, for explain(); empty for a loop with parallel loops of the
  // user's whose body also does what the rule refuses (the persistent rule
  // has said why).
  std::string refusal;
};

// The worker plans of a loop, by the way the CUDA emitter may run it.
struct WorkerLoopPlan : ir::LoopPlan {
  // A parallel loop outside parallel loops: the kernel the host launches
  // for it, whose workers are the iterations of its collapse_nest.
  std::optional<KernelWorkers> kernel;
  // A parallel loop without reductions in the step of a serial loop outside
  // parallel loops (in its body or the branches of `if`s there): its workers
  // when the serial loop runs as one persistent kernel, the iterations of its
  // persistent_nest, as the kernel sees the scalars declared around the
  // serial loop. The persistent rule refuses teams (whose size the host picks
  // at each launch).
  std::optional<WorkerPlan> step;
  // A serial loop outside parallel loops whose steps launch kernels that a
  // team could take (SerialLoopContents::spread), whether the emitter tries
  // it there or first runs it as one persistent kernel.
  std::optional<DeviceLoop> device_loop;
  std::string describe() const override;
};

// What a serial loop holds, for running it on the device (DeviceLoop).
struct SerialLoopContents : ir::IRVisitor {
  bool parallel = false;  // a parallel loop at any depth
  bool spread = false;    // a simd loop or a loop with reductions, which the host would launch at every step
  bool other = false;     // a matrix product, a return, an array binding or allocation
  using IRVisitor::visit;

 protected:
  void visit(const ir::For* n) override;
  void visit(const ir::MatMul*) override { other = true; }
  void visit(const ir::Return*) override { other = true; }
  void visit(const ir::ArrayBind*) override { other = true; }
  void visit(const ir::Allocate*) override { other = true; }
};

// The plans recorded on `loop`, or null.
const WorkerLoopPlan* worker_loop_plan(const ir::For* loop);

// Records the worker plans of the loops the CUDA emitter may run as kernels:
// outside parallel loops, every parallel loop (`kernel`), those in the steps
// of serial loops (`step`), and every serial loop whose steps launch kernels
// a team could take (`device_loop`). A loop in statements that the emitter
// runs in one device thread (no parallel loop in them) keeps a plan it never
// reads. Throws a CompileError for a block(N) whose N cannot be the block
// or team it sets.
void plan_workers(ir::Function& function, const CudaLaunchConfig& launch);

}  // namespace plait::transforms::gpu
