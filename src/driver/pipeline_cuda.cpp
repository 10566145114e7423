// The CUDA target's pipeline: every step from the parsed function to the host
// C++ and device CUDA sources, in order. To add a pass, write
// transforms/<name>.{h,cpp} (or transforms/gpu/) and add one line here.
//
//  1. frontend/parser.h, parse_function: the Python source as an AST, with
//     positions and comments (pragmas); frontend/inline_calls.h,
//     inline_calls: the calls to module-level functions inlined into it.
//  2. frontend/lower_to_ir.h, lower_to_ir: types, names and Python's
//     semantics as typed IR; array statements become loop nests. Choice it
//     makes for the GPU: the default schedule of an array statement's nest
//     (every dimension but the innermost parallel, and the innermost too when
//     an element computes a loop of its own: lower_loop_nests.cpp).
//  3. The passes below (run_cuda_passes), each recorded by PassRunner: whether
//     it changed the function, the IR verifier after it under
//     CompileOptions::verify_ir, and the dump of plaitc --dump-dir.
//  4. codegen/cuda/codegen_cuda.h, generate_cuda: the host part and one
//     __global__ kernel per outermost parallel loop (docs/cuda.md), whose
//     workers, team sizing and versions follow the plans plan_workers
//     recorded (transforms/gpu/kernel_versions.h: several iterations per
//     thread, small teams, rows kept in registers, CSR rows staged per
//     block, wide blocks, teams of a warp, the temporaries the host sizes),
//     and one persistent kernel per time loop that plan_persistent_loops
//     accepted, with the barriers, versions and sizing it recorded. A
//     serial loop outside parallel loops runs as that persistent kernel, else
//     on one team of the device where plan_workers planned one (the host
//     tests at each call that its arrays are small), else on the host,
//     launching its kernels at each step (cuda_emitter_stmts.cpp, emit_loop).
//     A team's body follows the decisions plan_workers recorded with its
//     kernel too (transforms/gpu/team_body_plan.h: groups, pairs, rows and
//     values in registers, barriers, broadcasts, reductions' forms); the
//     emitter asks transforms/gpu/worker_plan.h only for the registers a
//     row takes and for the loops of a kernel's nest and those it spreads.
#include "driver/pass_runner.h"
#include "driver/pipeline.h"
#include "transforms/detect_reductions.h"
#include "transforms/fuse_loop_nests.h"
#include "transforms/gpu/plan_persistent_loops.h"
#include "transforms/gpu/plan_workers.h"
#include "transforms/hoist_allocations.h"
#include "transforms/hoist_invariant_arrays.h"
#include "transforms/insert_bounds_checks.h"
#include "transforms/normalize_indices.h"
#include "transforms/offload_matmul.h"
#include "transforms/place_declarations.h"
#include "transforms/plan_parallel_loops.h"
#include "transforms/split_variable_webs.h"

namespace plait {

// No pass of this pipeline is optional: the CUDA planners rely on the
// fused, hoisted form (a persistent kernel over a loop whose scratch is
// allocated once), and no measurement needs them off.
const std::vector<std::string>& cuda_optional_passes() {
  static const std::vector<std::string> passes;
  return passes;
}

void run_cuda_passes(PassRunner& run, const CompileOptions& options) {
  // A scalar name reused for independent values (`v = F[k]` in two loops)
  // becomes one variable per value, so that the analyses below see each
  // one's single assignment.
  run("split_variable_webs", transforms::split_variable_webs);
  // Array statements that are the same in every step of a serial loop
  // computed once before it (before fusion joins them to the steps' nests).
  run("hoist_invariant_arrays", transforms::hoist_invariant_arrays);
  // One loop for consecutive nests over the same extent; shrink temporaries.
  run("fuse_loop_nests", transforms::fuse_loop_nests);
  // Scratch arrays of a serial loop's steps allocated once, before it (after
  // fusion has shrunk them; before declarations, which follow the move).
  run("hoist_allocations", transforms::hoist_allocations);
  // Where each local lives; privacy in parallel loops follows from it.
  run("place_declarations", transforms::place_declarations);
  run.declarations_placed();
  // Scalars shared by parallel iterations: reductions, or a race error.
  run("detect_reductions", transforms::detect_reductions);
  run.early_exits_refused();
  // Collapse perfectly nested parallel loops; serialise other nested ones.
  // (No privatised atomics: GPU atomics are cheap enough and per-thread
  // copies would not fit.)
  run("plan_parallel_loops", transforms::plan_parallel_loops);
  // Python's negative indices, where an index is not provably non-negative.
  run("normalize_indices", transforms::normalize_indices);
  // Indices checked once before a loop where they can be, else at each
  // access. Indices loaded from arrays are checked at each access: the host
  // cannot scan device arrays without a launch and a copy.
  if (options.boundscheck) {
    transforms::BoundsCheckOptions checks;
    checks.scans = false;
    run("insert_bounds_checks", [&](ir::Function& f) { transforms::insert_bounds_checks(f, checks); });
  }
  // Matrix-product nests as cuBLAS calls. (No interchange of column
  // reductions: a CUDA thread per element already reads a row across its
  // warp. No scalarised vector loops: a CUDA thread leaves its iteration
  // alone.)
  run("offload_matmul", [](ir::Function& f) { transforms::offload_matmul(f); });
  // Planning passes, last (their plans point into the loops' bodies): how
  // the iterations of each loop the emitter may run as a kernel map to
  // threads; then which time loops run as one persistent kernel (refused
  // where a step's parallel loop has teams of threads, by its plan).
  run("plan_workers", [&](ir::Function& f) { transforms::gpu::plan_workers(f, options.cuda_launch); });
  run("plan_persistent_loops", transforms::gpu::plan_persistent_loops);
}

}  // namespace plait
