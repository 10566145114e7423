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
// A spread loop whose body holds a loop with fixed bounds runs two of its
// iterations per thread at once, that loop fused (PairedLoop).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace plait::transforms::gpu {

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
  // By statement, in the plan of a team as launched (plan_team_body): the
  // array that one thread writes and another accesses across the boundary
  // before the statement, where the team waits at a barrier ("" for none);
  // and, for Placement::FirstThread, the scalars it assigns that are
  // declared before it, which lane 0 broadcasts to the team after it.
  std::vector<std::string> barrier;
  std::vector<std::vector<ir::Var>> broadcast;
  // Why each loop got its mapping, for kernel.explain().
  std::vector<std::pair<SourceLoc, std::string>> notes;
};

// The loops of a team plan spread over the team, at any depth.
std::vector<const ir::For*> spread_loops(const WorkerPlan& plan);

// How a reduction of a float maximum or minimum treats NaN, which decides
// how the partial values of threads combine so that the result is the one
// of the loop in order (docs/cuda.md, "NaN in maxima and minima").
enum class ReductionForm : uint8_t {
  Ordinary,        // not a float max/min: partial values combine with the reduction's operator
  NanPropagating,  // `m = np.maximum(m, x)` (np.max): a NaN anywhere wins; combined with plait::maximum
  NanIgnoring,     // builtin `m = max(m, x)`: a NaN element never replaces m, so the partial
                   // values (from -inf) hold none; combined with py_max, the value before the loop first
  OrderDependent,  // builtin `m = max(x, m)`: a NaN element replaces m and the next element replaces
                   // the NaN; the team looks for NaN and, when it finds one, runs the loop in order
};

// The form of reduction `r` of a loop with body `body` (from the assignments to its variable).
ReductionForm reduction_form(const ir::Stmt& body, const ir::Reduction& r);

// The loops of the kernel of an outermost parallel loop whose iterations
// are its workers: the loops its collapse clause joins (while a bound reads
// none of the outer loops' variables), and a vector loop alone in the
// innermost one's body, without reductions and with a straight-line body (an
// array statement's nest: parallel over rows, simd over columns), whose
// iterations are independent as a parallel loop's (docs/cuda.md, "Array
// statements as collapsed nests").
std::vector<const ir::For*> collapse_nest(const ir::For* outer);

// The loops of a persistent kernel's parallel loop whose iterations share
// the grid: the collapsed nest, extended through perfectly nested loops
// whose iterations are independent (simd and parallel loops without
// reductions, serial loops that serial_loop_independent proves) and whose
// bounds do not depend on the outer ones. Each element is computed as in
// the nest, and consecutive threads take consecutive innermost iterations.
std::vector<const ir::For*> persistent_nest(const ir::For* loop);

// `worker_vars`: the variables of the (collapsed) parallel loop nest;
// `outside`: scalars that live outside the worker body (host scalars, the
// parallel loop's reductions and privates).
WorkerPlan plan_worker(const ir::Stmt& body, const ir::VarSet& worker_vars, const ir::VarSet& outside);

// A spread loop whose threads run their iterations two at a time
// (docs/cuda.md, "Two iterations per thread"): iterations k and k + team of
// a thread statement by statement, and the loops of the body whose bounds
// are the same in every iteration once for both, each of their iterations
// running the loop body of both. The loads of the two iterations are then in
// flight together; a long inner loop (the dot products of covariance's row)
// otherwise keeps one iteration's loads in flight at a time. Iteration k
// still runs in lane k mod team, so the barrier rule and rows in registers
// see the same mapping.
struct PairedLoop {
  std::vector<ir::Stmt> stmts;  // the loop body, nested blocks flattened
  std::vector<bool> fused;      // by statement: a loop that runs once for both iterations
  // Scalars each iteration has its own copy of (the loop variable first):
  // all that the body assigns or declares, except the variables of the
  // fused loops (assigned nowhere else), which both iterations share.
  std::vector<ir::Var> copies;
};

// Whether a spread loop runs its iterations in pairs, and how: it has no
// reductions of its own; its body has no early exits, assertions, atomics,
// while loops or array bindings; and a loop at the top level of its body
// has bounds that read neither the loop variable, nor a scalar the body
// assigns, nor an array element. `out` is filled when it does.
bool paired_loop(const ir::For* spread_loop, PairedLoop* out);

// CSR rows staged per block (docs/cuda.md, "CSR rows staged per block"): the
// one spread loop of a team worker, at the top level of its body, when it
// runs over `range(P[i + c], P[i + c + 1])` (P a 1-D array, i the variable of
// the parallel loop, whose step is 1) with step 1, and its body only sums
// terms of its own iteration into its reductions (at most
// kStagedReductions, all `+`): a sequence of scalar assignments, each either
// `r = r + term` for a reduction variable r or one of a scalar that the loop
// body assigns before reading it and nothing outside the loop reads; the
// terms read no reduction variable, and besides those scalars only the loop
// variable, scalars the worker does not assign, and arrays the worker does
// not write, allocate or bind. Consecutive workers' rows are then
// consecutive ranges of one index space (whatever P holds, every element
// between the first row's start and the last row's end lies in some row's
// range), so a block can compute the terms of all its workers' rows at
// once, and each team sum its row's. Returns the loop, or null with `why`
// set when the bounds have that form but something else does not;
// `elements` is the first array the body indexes (one dimension) by the loop
// variable, whose extent the host takes for the rows' total length.
constexpr size_t kStagedReductions = 2;
const ir::For* staged_rows_loop(const WorkerPlan& plan, const ir::Stmt& worker_body, const ir::VarInfo* worker_var,
                                const ir::Expr& worker_step, ir::ArrayVar* elements, std::string* why);

// Whether the iterations of a serial loop touch disjoint data, as for
// spreading it over a team: no early exit, no atomics, no scalar carried
// between iterations, each array it writes accessed at one index that moves
// with the loop variable.
bool serial_loop_independent(const ir::For* loop);

// Rows kept in registers (docs/cuda.md): an array that at least two spread
// loops of the worker body access, all over the same iteration space at the
// same index (so each thread touches the same elements in every loop, and no
// other thread touches them), and that nothing else in the body accesses,
// unless nothing in the body writes it.
// Thread t's first kRowCacheSlots iterations (t, t + team, ...) keep their
// element in registers: the first loop that accesses the array fills them
// (with at least one access that runs in every iteration), later loops read
// them instead of memory and update them with their stores.
constexpr int kRowCacheSlots = 8;

struct CachedRow {
  const ir::ArrayInfo* array = nullptr;    // as first named in the body
  ir::ArraySet names;                      // the array and the names bound to it in the body
  std::vector<size_t> loops;               // the spread loops (statement indices) that access it, in order
  // A temporary of the worker (allocated in the body, uninitialised, no
  // name outside it) whose first access in the first loop is a store: the
  // cached elements never go to memory.
  bool registers_only = false;
  // Nothing in the body writes the array and its accesses are unchecked:
  // before the first loop's iterations, one unrolled loop loads every
  // register (independent loads, all in flight at once), as `load` does.
  const ir::Load* load = nullptr;
  // The canonical bounds (begin, end, step) of each loop of `loops`, as the
  // host may evaluate them before the launch (a temporary's extent as its
  // allocated shape).
  std::vector<std::array<ir::Expr, 3>> bounds;
};

// `worker_written`: the scalars the worker body assigns.
std::vector<CachedRow> plan_cached_rows(const WorkerPlan& plan, const ir::VarSet& worker_written);

// Values kept in registers (docs/cuda.md, "Values kept in registers"): a
// later loop of the rows' loops computes again, for the same iteration, the
// same expression as an earlier one (the loop variables matched), which
// calls a math function and reads only the loop variable, scalars that no
// statement from the earlier loop to the later one assigns, and arrays that
// nothing in the body writes. The earlier loop evaluates it in every
// iteration (not in a branch or a conditional operand, no early exit), and
// keeps it in registers for the thread's iterations that the rows keep in
// registers; the later loops read them. Rows and values of a worker hold at
// most kRowCacheRegisters 32-bit registers per thread (rows first).
constexpr int kRowCacheRegisters = 64;

struct CachedValue {
  size_t first_loop = 0;                 // the statement index of the loop that computes it
  const ir::ExprNode* first = nullptr;   // the expression there
  std::vector<std::pair<size_t, const ir::ExprNode*>> reuses;  // (loop, expression) that read the registers
};

// `slots`: the registers per thread of each row or value (row_cache_slots).
std::vector<CachedValue> plan_cached_values(const WorkerPlan& plan, const std::vector<CachedRow>& rows,
                                            const ir::VarSet& worker_written, int slots);

// Vector accesses in teams (docs/cuda.md): with groups, a thread of a team
// takes `width` consecutive iterations of a spread loop at a time. The
// accesses of the loop whose unit-stride index is the loop variable plus
// terms fixed in the loop (other indices fixed), unchecked, can then be
// made once per group: loads evaluated in every iteration before the body's
// first write to memory (no early exit or assertion in the body) at the
// start of the group, and stores at the end of the body, after which the
// body accesses no memory, at the end of the group. Iterations are
// independent, and within one iteration these keep their order with every
// other access.
struct GroupAccesses {
  std::vector<const ir::Load*> loads;
  std::vector<const ir::Store*> stores;
  bool empty() const { return loads.empty() && stores.empty(); }
  bool has(const ir::Store* s) const;
};
GroupAccesses group_accesses(const ir::For* loop);

// The consecutive iterations a thread of the team takes at a time in every
// spread loop of a worker (the same in all of them, so that one iteration
// space maps each element to the same thread in every loop): kGroupWidth
// when some spread loop has accesses a group makes at once, else 1. With
// groups, a thread keeps `row_groups` groups of rows and values in
// registers (CudaLaunchConfig::row_groups, 4 by default).
constexpr int kGroupWidth = 4;
int group_width(const WorkerPlan& plan);
// The registers per thread of a row or value kept in registers.
inline int row_cache_slots(int width, int row_groups) {
  return width == 1 ? kRowCacheSlots : row_groups * width;
}

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

// With `changing`, the accesses as a later iteration of a loop that assigns
// those scalars sees them: a spread loop whose bounds or indices read one of
// them maps elements to other threads then.
std::vector<ArrayAccess> array_accesses(const ir::Stmt& stmt, Placement placement, const ir::VarSet& worker_written,
                                        const ir::VarSet* changing = nullptr);

// The reads of an `if`'s condition or a loop's bounds, by every thread.
std::vector<ArrayAccess> control_accesses(const ir::Stmt& stmt);

// Whether `next` must wait for a barrier after `earlier`; `why` names the array.
bool needs_barrier(const std::vector<ArrayAccess>& earlier, const std::vector<ArrayAccess>& next, std::string* why);

}  // namespace plait::transforms::gpu
