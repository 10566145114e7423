// How the iterations of an outermost parallel loop (its "workers") map to GPU
// threads (docs/cuda.md, "Teams of threads"): one thread per worker, or a
// team of threads per worker whose inner loops are spread over the team.
//
// A worker becomes a team when its body has a loop (a top-level statement of
// the body) whose iterations are independent: a simd loop, a nested parallel
// loop that was not collapsed, or a serial loop that this file proves
// independent. The cost rule: the team pays off when more of the loops'
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

// Where a top-level statement of a team's worker body runs.
enum class Placement : uint8_t {
  AllThreads,   // every thread of the team, redundantly: it writes only thread-local scalars (or binds arrays)
  FirstThread,  // lane 0 of the team: it writes array elements; scalars it assigns are broadcast after
  Spread,       // a loop whose iterations are spread over the team's threads (lane, lane + team, ...)
};

struct WorkerPlan {
  bool team = false;
  std::vector<ir::Stmt> stmts;       // the top-level statements of the worker body
  std::vector<Placement> placement;  // by statement (empty unless team)
  // Why each loop got its mapping, for kernel.explain().
  std::vector<std::pair<SourceLoc, std::string>> notes;
};

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

// Whether a one-thread worker's body is straight-line code that a thread
// may run for several iterations at once, each statement's loads and
// computation for all of them before its stores (docs/cuda.md, "Several
// iterations per thread"): only scalar declarations, scalar assignments and
// element stores (nested blocks of them), and every scalar it assigns is
// assigned before it is read in the same iteration (so each iteration can
// have its own copy). `why` says what failed.
bool straight_line_worker(const ir::Stmt& body, std::string* why);

// The element accesses of a straight-line worker body that a thread running
// consecutive iterations of `var` (the loop variable, step 1) makes at
// consecutive addresses, so that one vector access can serve them: unchecked
// loads and stores of an array whose unit-stride dimension is indexed by
// `var` plus terms that stay fixed in the body, every other index fixed too;
// loads only where the body evaluates them unconditionally (not in a branch
// of a conditional expression or the right side of `and`/`or`), as the
// vector load reads every iteration's element.
struct ContiguousAccesses {
  std::vector<const ir::Load*> loads;  // in the order of the body
  std::vector<const ir::Store*> stores;
  bool has(const ir::Load* l) const;
  bool has(const ir::Store* s) const;
};
ContiguousAccesses contiguous_accesses(const ir::Stmt& body, const ir::VarInfo* var);

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

std::vector<ArrayAccess> array_accesses(const ir::Stmt& stmt, Placement placement,
                                        const std::set<const ir::VarInfo*>& worker_written);

// Whether `next` must wait for a barrier after `earlier`; `why` names the array.
bool needs_barrier(const std::vector<ArrayAccess>& earlier, const std::vector<ArrayAccess>& next, std::string* why);

}  // namespace plait::codegen::cuda
