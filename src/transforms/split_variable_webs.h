// Pass: give each independent use of a scalar local a variable of its own.
//
// Python code reuses names: `v = frontier[k]` at the top of two loops, `i`
// as a scratch counter in several places, `tmp` in every branch. The
// lowering gives each Python name one variable, so such a variable has
// several assignments, and the analyses that reason about "the value a
// scalar holds" (index ranges, bounds checks hoisted out of loops,
// invariance) give up on it. This pass splits each variable into its webs:
// the classes of assignments and reads linked by reaching definitions (a
// read joins every assignment that may reach it, and an update such as
// `m = max(m, x)` joins the assignments it reads). Each web but one gets a
// new variable, with the same name and type:
//
//   for k in ...: v = F[k]; ...r[v]...      for k in ...: v = F[k]; ...r[v]...
//   for k in ...: v = F[k]; ...d[v]...  =>  for k in ...: v' = F[k]; ...d[v']...
//
// A web that holds the value on entry (a read that no assignment reaches on
// some path) keeps the original variable, as does the first web in program
// order otherwise. Left whole: parameters, loop variables (a `for` keeps its
// last value after the loop), and the variables that loop schedules (the
// pragmas' reductions and privates) or a library product's row condition
// name. Reaching definitions follow the structured control flow: branches
// join, loops iterate to a fixed point, break, continue and return leave
// their paths, and an assertion may leave its loop iteration. Runs first,
// before any pass that records variables on the IR.
#pragma once

#include "ir/ir.h"

namespace plait::transforms {

void split_variable_webs(ir::Function& function);

}  // namespace plait::transforms
