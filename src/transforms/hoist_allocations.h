// Pass: allocate the temporaries of a serial loop's steps once, before it.
//
// A time loop whose steps allocate scratch arrays (floyd_warshall's copies
// of row and column k, a user's `tmp = np.empty(n)`) pays an allocation per
// step: a malloc and free on the CPU, and on CUDA the allocation keeps the
// loop from running as one persistent kernel. `np.empty` promises no
// contents, so the buffer of one step serves the next, and
//
//   for k in ...:                       X = empty(shape)
//     ...                        =>     for k in ...:
//     X = empty(shape)                    ...
//     ...uses of X...                     ...uses of X...
//
// An allocation `X = empty(shape)` at the top level of a serial `for` or
// `while` loop's body moves before the loop when
// - X is bound only by this allocation in the body (no second allocation,
//   no `v = X` nor `X = v`), is not returned, is read neither by the loop's
//   bounds or condition nor in a step before the allocation (no value flows
//   into a step), and is not read after the loop (an earlier array of the
//   same name is dead there);
// - the extents read no scalar the loop assigns (its variable included), no
//   array element, and the shape of no array the loop (re)binds, so they
//   have the same values before the loop;
// - the extents cannot raise an error and are provably non-negative (array
//   extents, non-negative constants, locals every assignment of which is
//   such a value, and sums, products, quotients, min and max of those), so
//   neither NumPy's ValueError for a negative extent nor any other error
//   changes its place or order.
// Hoisting is repeated loop by loop outwards as long as it stays legal; a
// loop that is not in a block (an `else` of its own) gets a block of its
// allocations and itself.
// Allocations that fill (`np.zeros`, `np.ones`, `np.full`) stay in the
// loop: their fill is part of every step. Parallel loops keep their
// allocations (each iteration needs its own; the back ends give each thread
// one). A hoisted allocation is made even when the loop runs no step, and an
// allocation that fails for lack of memory fails before the loop starts.
// Each hoisted or refused allocation gets a remark for explain().
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void hoist_allocations(ir::Function& function);

}  // namespace plait::transforms
