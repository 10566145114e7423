// The versions of a CUDA kernel that the host chooses between at run time,
// and how the host sizes its teams (docs/cuda.md: "Team size", "Several
// iterations per thread", "Wide blocks for long rows", "Teams of a warp").
// plan_workers plans them with each kernel's workers (KernelWorkers::versions);
// the CUDA emitter prints the kernel, each version and the host's choice
// (codegen/cuda/cuda_emitter_parallel_kernel.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "support/compile_options.h"
#include "transforms/gpu/worker_plan.h"

namespace plait::transforms::gpu {

// The largest block of a kernel's wide version: with __launch_bounds__(1024)
// a thread has at most 64 registers, fewer than the rows it would keep in
// them take.
inline constexpr int kWideBlockLimit = 512;
// The team of a worker whose inner loops' trip counts vary between workers
// and are not known before the launch (CSR rows): short rows leave few of its
// threads idle, and its threads read consecutive elements where one thread
// per row reads a row apart from its neighbours' (spmv's 1e6 rows of 10
// elements: L2-bound at 10% L1 hits under ncu). Teams of 2 were faster than
// 4 and 8 there and at NPBench's 2 per row (docs/cuda.md, "Team size").
inline constexpr int kSmallTeam = 2;
// Iterations per thread of a straight-line one-thread worker.
inline constexpr int kBatchIterations = 4;
// ... and of a collapsed nest of several loops: each iteration's indices and
// 64-bit addresses take registers, and with 4 iterations the 2-D stencil's
// sweeps took 62 per thread (half the threads of an SM resident: 68% of the
// copy bandwidth at 4096 x 4096 float64; with 2, 74%: docs/cuda.md).
inline constexpr int kNestBatchIterations = 2;

// The team that the sliced pragmas of a team worker's spread loops ask for
// (docs/cuda.md, "Sizes from the pragmas"): the largest of single_block's
// whole block, block(N)'s N threads and le(N)'s team for N iterations (the
// host's rule for a trip count of N: at most 4 iterations, or groups, per
// thread). 0 when no spread loop has one.
struct PragmaTeam {
  int team = 0;
  bool whole_block = false;  // single_block: the wide version's team is its whole block too
  std::string asked_by;      // "single_block at line 12", for explain()
  // Asked by the compiler for the long rows of a sparse matrix: most
  // workers find a short row and skip it, so the grid is one of at most
  // kMaxReductionBlocks blocks (the workers' tests then take a few steps of
  // each block, not waves of blocks that start only to skip).
  bool long_rows = false;
};

// A spread loop of a team worker whose trip count the host computes before
// the launch, for the team's size.
struct HostTrips {
  const ir::For* loop = nullptr;
  bool paired = false;  // its iterations run in pairs (paired_loop): it counts twice
  // Its bounds read the worker's loop variables (a triangle's rows,
  // `C[i, :i + 1]`): the host counts it at the first and the last worker, as
  // a team size is a cost choice, not a matter of correctness.
  bool per_worker = false;
};

// An array the worker body allocates (a temporary): the host sizes every
// worker's before the launch and the kernel finds them in one buffer
// (docs/cuda.md, "Arrays allocated in a parallel loop").
struct Temporary {
  const ir::Allocate* alloc = nullptr;
  // The branch conditions around the allocation that the host evaluates
  // exactly (integers and bools), and whether it is on their true side.
  // Others count as taken: a float condition may round differently on the
  // GPU.
  std::vector<std::pair<ir::Expr, bool>> guards;
};

// The temporaries of a worker body, and the scalar definitions of the body
// the host repeats to size them (the broadcast flags of array expressions,
// say): assignments at the top of the body, before the first statement that
// allocates, of integer or bool values of the loop variables, host scalars
// and array shapes, to scalars assigned nowhere else in the body.
struct KernelTemporaries {
  std::vector<Temporary> arrays;
  std::vector<const ir::Assign*> definitions;
  ir::VarSet varying;   // the loop variables and the definitions that depend on them
  bool varies = false;  // a size or a guard depends on them: the host sizes every worker's
  // Each is a row that a team keeps only in registers and whose loops the
  // host counts: it tests whether they fit, and then sizes no buffer.
  bool in_registers = false;
  // Why the kernel cannot have them, for the error the emitter raises at
  // `refusal_loc` (the plan stops there): a shape the host cannot compute
  // before the launch, or an array allocated in a loop of the body and bound
  // to another name (the next allocation reuses its memory). A loop that
  // never runs as a kernel is not refused.
  std::string refusal;
  SourceLoc refusal_loc;
};

struct KernelVersions {
  // The worker as launched: the planned one, or one thread per iteration
  // when the host cannot count the trip counts of its team's spread loops
  // and no small team takes it (with a note saying so); a whole-block
  // worker never has teams_when_few.
  WorkerPlan worker;
  // The worker is the whole block (a serial loop on the device): its team is
  // the block, whatever the trip counts.
  bool whole_block = false;
  // A team of kSmallTeam threads: the spread loops' trip counts vary between
  // workers and are not known before the launch.
  bool small_team = false;
  // The spread loops the host counts for the team's size, in their order.
  std::vector<HostTrips> host_trips;
  // CSR rows staged per block (staged_rows_loop): a small team's row loop
  // whose terms the block computes for all its rows at once, in a version
  // the host runs when `staged_elements` holds few elements per row; and why
  // not, when the rule applied but refused.
  const ir::For* staged = nullptr;
  ir::ArrayVar staged_elements;
  std::string not_staged;
  // Iterations per thread of a straight-line one-thread worker, and why one
  // when it is not batched.
  int batch = 1;
  std::string unbatched;
  // One-thread workers that are not batched: the loads they make first, for
  // several iterations at once (prefetchable_loads).
  std::vector<const ir::Load*> prefetch;
  // A batched single loop of step 1: the accesses a thread makes as vector
  // loads and stores where the addresses are aligned.
  ContiguousAccesses lanes;
  // Arrays that `#pragma atomic` updates and each block combines in shared
  // memory first (privatisable_atomics).
  std::vector<ir::ArrayVar> privatised;
  // The arrays the worker body allocates.
  KernelTemporaries temporaries;
  // The rows a team's worker keeps in registers between its spread loops.
  std::vector<CachedRow> cached_rows;
  // The versions: blocks twice as large for rows longer than a block's
  // registers hold (`wide`); tiles of one row of a batched collapsed nest
  // (`rows`); rows that fit in the registers (`fit`, and its wide version
  // with `wide`); teams of a warp, the team a constant (`warp`).
  bool wide = false;
  bool rows = false;
  bool fit = false;
  bool warp = false;
};

// The versions of the kernel of a parallel loop whose worker is `worker`,
// with the team the pragmas ask for and blocks of `block` threads
// (KernelWorkers), given the scalars `around` declared around the loop (the
// host's, which it may read to count trip counts and size temporaries).
KernelVersions plan_kernel_versions(const ir::For* loop, const WorkerPlan& worker, const PragmaTeam& asked, int block,
                                    const CudaLaunchConfig& launch, const ir::VarSet& around);

// The versions of the kernel of a serial loop on the device: one worker, a
// team of the whole block, one version.
KernelVersions whole_block_versions(const ir::Stmt& body, const WorkerPlan& worker);

}  // namespace plait::transforms::gpu
