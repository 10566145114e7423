// How the iterations of an outermost parallel loop (its "workers") map to GPU
// threads (docs/cuda.md, "Teams of threads"): one thread per worker, or a
// team of threads per worker whose inner loops are spread over the team.
//
// A worker becomes a team when its body has a loop whose iterations are
// independent: a simd loop, a nested parallel loop that was not collapsed, or
// a serial loop that this file proves independent; at the top level of the
// body, or inside `if`s and serial loops that every thread of the team can
// run in step (the broadcast versions of an array statement, the serial `k`
// loop around a row update). The cost rule: the team pays off when more of the loops'
// array accesses are contiguous along the inner loop variable (coalesced when
// the team's threads take consecutive iterations) than along the worker's
// own variable (coalesced when consecutive threads take consecutive workers).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace plait::codegen::cuda {

// Where a statement of a team's worker body runs.
enum class Placement : uint8_t {
  AllThreads,   // every thread of the team, redundantly: it writes only thread-local scalars (or binds arrays)
  FirstThread,  // lane 0 of the team: it writes array elements; scalars it assigns are broadcast after
  Spread,       // a loop whose iterations are spread over the team's threads (lane, lane + team, ...)
  Nested,       // an `if` or a serial loop that every thread runs in step (its condition or bounds are the
                // same in all of them), with its own statements placed in turn: see WorkerPlan::nested
};

struct WorkerPlan {
  bool team = false;
  // The cost rule favours one thread per worker (accesses coalesced across
  // workers): the kernel is still built for teams, and the host launches it
  // with teams only when the workers are too few to fill the GPU, else with
  // teams of one thread (docs/cuda.md, "Teams of threads").
  bool teams_when_few = false;
  std::vector<ir::Stmt> stmts;       // the statements of the worker body (or of a nested body)
  std::vector<Placement> placement;  // by statement (empty unless team)
  // By statement, for Placement::Nested: the plans of a loop's body, or of
  // an `if`'s then and else branches.
  std::vector<std::vector<WorkerPlan>> nested;
  // Why each loop got its mapping, for kernel.explain().
  std::vector<std::pair<SourceLoc, std::string>> notes;
};

// The loops of a team plan spread over the team, at any depth.
std::vector<const ir::For*> spread_loops(const WorkerPlan& plan);

// `worker_vars`: the variables of the (collapsed) parallel loop nest;
// `outside`: scalars that live outside the worker body (host scalars, the
// parallel loop's reductions and privates).
WorkerPlan plan_worker(const ir::Stmt& body, const std::set<const ir::VarInfo*>& worker_vars,
                       const std::set<const ir::VarInfo*>& outside);

// Whether the iterations of a serial loop touch disjoint data, as for
// spreading it over a team: no early exit, no atomics, no scalar carried
// between iterations, each array it writes accessed at one index that moves
// with the loop variable.
bool serial_loop_independent(const ir::For* loop);

// An array access of a statement of a team's worker body, for the barrier
// rule: two accesses to one array of which one writes need a barrier between
// them unless the same thread makes both for every element (both by lane 0,
// or both in spread loops with the same iteration space at the same index).
struct ArrayAccess {
  const ir::ArrayInfo* array = nullptr;
  bool write = false;
  Placement placement = Placement::AllThreads;
  std::string where;  // spread loops: iteration space and index, with the loop variable renamed
};

// With `changing`, the accesses as a later iteration of a loop that assigns
// those scalars sees them: a spread loop whose bounds or indices read one of
// them maps elements to other threads then.
std::vector<ArrayAccess> array_accesses(const ir::Stmt& stmt, Placement placement,
                                        const std::set<const ir::VarInfo*>& worker_written,
                                        const std::set<const ir::VarInfo*>* changing = nullptr);

// The reads of an `if`'s condition or a loop's bounds, by every thread.
std::vector<ArrayAccess> control_accesses(const ir::Stmt& stmt);

// Whether `next` must wait for a barrier after `earlier`; `why` names the array.
bool needs_barrier(const std::vector<ArrayAccess>& earlier, const std::vector<ArrayAccess>& next, std::string* why);

}  // namespace plait::codegen::cuda
