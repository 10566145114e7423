// The pass pipeline. This is the one list of the passes a lowered function
// goes through, in order; each pass lives in its own file under transforms/
// and documents its entry function in its header. To add a pass, write
// transforms/<name>.{h,cpp} and add one line here.
#include "driver/pipeline.h"

#include "transforms/cpu/scalarize_raising_loops.h"
#include "transforms/detect_reductions.h"
#include "transforms/fuse_loop_nests.h"
#include "transforms/hoist_allocations.h"
#include "transforms/insert_bounds_checks.h"
#include "transforms/interchange_reductions.h"
#include "transforms/normalize_indices.h"
#include "transforms/offload_matmul.h"
#include "transforms/place_declarations.h"
#include "transforms/plan_parallel_loops.h"
#include "transforms/privatize_atomics.h"

namespace plait {

void run_pipeline(ir::Function& function, const CompileOptions& options, const PassObserver& after_pass) {
  auto run = [&](const char* name, auto&& pass) {
    pass(function);
    if (after_pass) after_pass(name, function);
  };
  // One loop for consecutive nests over the same extent; shrink temporaries.
  run("fuse_loop_nests", transforms::fuse_loop_nests);
  // Scratch arrays of a serial loop's steps allocated once, before it (after
  // fusion has shrunk them; before declarations, which follow the move).
  run("hoist_allocations", transforms::hoist_allocations);
  // Where each local lives; privacy in parallel loops follows from it.
  run("place_declarations", transforms::place_declarations);
  // Scalars shared by parallel/simd iterations: reductions, or a race error.
  run("detect_reductions", transforms::detect_reductions);
  // Collapse perfectly nested parallel loops; serialise other nested ones.
  run("plan_parallel_loops", transforms::plan_parallel_loops);
  // Per-thread copies instead of contended atomics on small arrays (CPU:
  // GPU atomics are cheap enough and the copies would not fit).
  if (options.target == Target::CPU) run("privatize_atomics", transforms::privatize_atomics);
  // Python's negative indices, where an index is not provably non-negative.
  run("normalize_indices", transforms::normalize_indices);
  // Indices checked once before a loop where they can be, else at each
  // access. Indices loaded from arrays are bounded by scans on the CPU (on
  // CUDA they are checked at each access: the host cannot scan device
  // arrays without a launch and a copy).
  if (options.boundscheck) {
    transforms::BoundsCheckOptions checks;
    checks.scans = options.target == Target::CPU;
    run("insert_bounds_checks", [&](ir::Function& f) { transforms::insert_bounds_checks(f, checks); });
  }
  // Matrix-product nests as library calls (CUDA: cuBLAS; the CPU runs the
  // loops, which the next pass blocks).
  if (options.target == Target::CUDA) run("offload_matmul", transforms::offload_matmul);
  // Reductions that read down a column run outside chunks of their loop (CPU:
  // a CUDA thread per element already reads a row across its warp).
  if (options.target == Target::CPU) run("interchange_reductions", transforms::interchange_reductions);
  // Vector loops whose body may raise run without simd, so that an error
  // stops them at its iteration (CPU: a CUDA thread leaves its iteration
  // alone).
  if (options.target == Target::CPU) run("scalarize_raising_loops", transforms::cpu::scalarize_raising_loops);
}

}  // namespace plait
