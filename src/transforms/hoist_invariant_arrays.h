// Pass: loop-invariant code motion of whole array statements.
//
// An array statement in a serial loop whose value is the same in every step
// (`G = X @ X.T` in an iteration loop that never changes X) is computed once
// before the loop:
//
//   for t in range(a, b):                if <the loop runs a step>:
//     ...                                  T = empty(shape)
//     T = empty(shape)          =>         <the nests or product filling T>
//     <the nests filling T>                G = T
//     G = T                              for t in range(a, b):
//     ...uses of G...                      ...uses of G...
//
// The statement (its allocation, the statements up to its binding to a
// name, and the checks and scalar temporaries just before it) moves when
// - it reads no scalar the loop assigns (its variable included), no array
//   the loop writes or binds, and, when the loop writes an array that may
//   share memory with an argument, no such array either (two arguments may
//   be one buffer);
// - its temporaries are its own (the rest of the loop mentions none of them)
//   and the name it binds is bound only by it in the loop, written by no
//   statement of the loop (nor through a view), and not read in a step
//   before it;
// - no statement before it in the body can leave the loop (break, continue,
//   return), so every step that runs reaches it.
// The moved statements run only when the loop runs a step, so a loop of no
// step computes nothing and raises nothing, as before. Errors a moved
// statement raises (a shape mismatch) are raised before the first step
// rather than in it. Each statement moves out of the innermost serial loop
// around it; explain() lists what moved, and what was invariant but stayed,
// with the reason.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void hoist_invariant_arrays(ir::Function& function);

}  // namespace plait::transforms
