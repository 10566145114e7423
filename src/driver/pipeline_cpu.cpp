// The CPU target's pipeline: every step from the parsed function to the C++
// source, in order. To add a pass, write transforms/<name>.{h,cpp} (or
// transforms/cpu/) and add one line here.
//
//  1. frontend/parser.h, parse_function: the Python source as an AST, with
//     positions and comments (pragmas); frontend/inline_calls.h,
//     inline_calls: the calls to module-level functions inlined into it.
//  2. frontend/lower_to_ir.h, lower_to_ir: types, names and Python's
//     semantics as typed IR; array statements become loop nests. Choices it
//     makes for the CPU: the default schedule of an array statement's nest
//     (the outermost dimension parallel, the innermost vectorised:
//     lower_loop_nests.cpp, store nests) and maxima and minima of floats that
//     count NaNs beside a vector loop (lower_reductions.cpp).
//  3. The passes below (run_cpu_passes), each recorded by PassRunner: whether
//     it changed the function, the IR verifier after it under
//     CompileOptions::verify_ir, and the dump of plaitc --dump-dir.
//  4. codegen/cpu/codegen_cpp.h, generate_cpp: the C++ translation unit.
//     It prints the plans the planning passes recorded on loops
//     (LoopSchedule::plans: parallel regions and the placement of their
//     statements and barriers, the order of float max/min reductions and
//     per-thread temporaries, prefetching chunks). What it still decides as
//     it prints: a region's estimates of its work and barriers for its `if`
//     clause (cpp_emitter_regions.cpp).
#include "driver/pass_runner.h"
#include "driver/pipeline.h"
#include "transforms/cpu/plan_omp_loops.h"
#include "transforms/cpu/plan_parallel_regions.h"
#include "transforms/cpu/plan_region_statements.h"
#include "transforms/cpu/plan_row_prefetch.h"
#include "transforms/cpu/scalarize_raising_loops.h"
#include "transforms/detect_reductions.h"
#include "transforms/fuse_loop_nests.h"
#include "transforms/hoist_allocations.h"
#include "transforms/hoist_invariant_arrays.h"
#include "transforms/insert_bounds_checks.h"
#include "transforms/interchange_reductions.h"
#include "transforms/normalize_indices.h"
#include "transforms/offload_matmul.h"
#include "transforms/place_declarations.h"
#include "transforms/plan_parallel_loops.h"
#include "transforms/privatize_atomics.h"
#include "transforms/split_variable_webs.h"

namespace plait {

// The passes below that run through run.optional, in order: each only makes
// kernels faster, and every kernel is correct without it (tests/python/
// test_disabled_passes.py), so plait.jit(disable_passes=...) may skip it to
// measure what it contributes (BENCHMARKS.md, the Intrepydd ablation).
const std::vector<std::string>& cpu_optional_passes() {
  static const std::vector<std::string> passes = {"hoist_invariant_arrays", "fuse_loop_nests", "hoist_allocations",
                                                  "offload_matmul"};
  return passes;
}

void run_cpu_passes(PassRunner& run, const CompileOptions& options) {
  // A scalar name reused for independent values (`v = F[k]` in two loops)
  // becomes one variable per value, so that the analyses below see each
  // one's single assignment.
  run("split_variable_webs", transforms::split_variable_webs);
  // Array statements that are the same in every step of a serial loop
  // computed once before it (before fusion joins them to the steps' nests).
  run.optional("hoist_invariant_arrays", transforms::hoist_invariant_arrays);
  // One loop for consecutive nests over the same extent; shrink temporaries.
  run.optional("fuse_loop_nests", transforms::fuse_loop_nests);
  // Scratch arrays of a serial loop's steps allocated once, before it (after
  // fusion has shrunk them; before declarations, which follow the move).
  run.optional("hoist_allocations", transforms::hoist_allocations);
  // Where each local lives; privacy in parallel loops follows from it.
  run("place_declarations", transforms::place_declarations);
  run.declarations_placed();
  // Scalars shared by parallel/simd iterations: reductions, or a race error.
  run("detect_reductions", transforms::detect_reductions);
  run.early_exits_refused();
  // Collapse perfectly nested parallel loops; serialise other nested ones.
  run("plan_parallel_loops", transforms::plan_parallel_loops);
  // Per-thread copies instead of contended atomics on small arrays.
  run("privatize_atomics", transforms::privatize_atomics);
  // Python's negative indices, where an index is not provably non-negative.
  run("normalize_indices", transforms::normalize_indices);
  // Indices checked once before a loop where they can be, else at each
  // access; indices loaded from arrays are bounded by scans of those arrays.
  if (options.boundscheck) {
    transforms::BoundsCheckOptions checks;
    checks.scans = true;
    run("insert_bounds_checks", [&](ir::Function& f) { transforms::insert_bounds_checks(f, checks); });
  }
  // Matrix products, triangles of products and triangular solves as calls
  // of the BLAS (the CPU's table has gemm, gemmt and trsv), each keeping
  // its loops for when the library declines.
  run.optional("offload_matmul", [](ir::Function& f) {
    transforms::BlasEntries cpu;
    cpu.in_place = cpu.symmetric = false;
    transforms::offload_matmul(f, cpu);
  });
  // Reductions that read down a column run outside chunks of their loop.
  run("interchange_reductions", transforms::interchange_reductions);
  // Vector loops whose body may raise run without simd, so that an error
  // stops them at its iteration.
  run("scalarize_raising_loops", transforms::cpu::scalarize_raising_loops);
  // Planning, last. The serial loops whose parallel loops share one team of
  // threads; then, before the plans that point into loops' bodies, each
  // parallel loop's and float max/min reduction's order and the temporaries
  // each thread allocates once; the vector pass of a loop over rows that
  // runs in chunks prefetching the other passes' rows; in each region, which
  // statements run in one thread or in all, and where the barriers go.
  run("plan_parallel_regions", transforms::cpu::plan_parallel_regions);
  run("plan_omp_loops", transforms::cpu::plan_omp_loops);
  run("plan_row_prefetch", transforms::cpu::plan_row_prefetch);
  run("plan_region_statements", transforms::cpu::plan_region_statements);
}

}  // namespace plait
