// Calls between functions: a kernel's calls to module-level functions
// (decorated or not) are inlined into its syntax tree before it is lowered.
//
// Each call becomes statements placed before the statement that makes it:
// the arguments bound to the callee's parameters (a parameter the body never
// rebinds reads the name passed, or in a callee that writes no argument the
// view passed, `F[j]`, instead of a copy), then a copy of the callee's body
// whose locals are renamed for that call (`f.x`, `f#2.x` for the second call
// of f), whose returns assign `f.return` (with a flag and breaks out of the
// loops they are in), and whose global names are the callee's module's. The
// call's value is then that name. Lowering sees one function, so every call
// is specialised to its arguments' types as the kernel is.
//
// Refused at the user's line: recursion (a call that reaches its own
// function again), a callee without source, arguments that do not bind as
// Python binds them (TypeError with Python's wording), a call in a part of
// an expression Python may not evaluate (after `and`/`or`, in a conditional
// expression's branch, a comparison chain's later operands), a callee that
// may write its arguments called anywhere but as a statement's whole value
// (what Python evaluated before the call would read the written arrays), a
// callee returning a value on some paths and falling off its end on others.
#pragma once

#include <vector>

#include "frontend/ast.h"
#include "ir/ir.h"
#include "support/compile_options.h"

namespace plait {

struct InlinedKernel {
  ast::FunctionDef definition;
  // The kernel's source with the callees' (SourceFile::inlined).
  SourceFile source;
  // The kernel's globals with, under their inlined names, the globals of
  // callees from other modules.
  Globals globals;
  std::vector<ir::Remark> remarks;  // one per inlined call, for explain()
};

InlinedKernel inline_calls(ast::FunctionDef kernel, const SourceFile& source, const Globals& globals);

}  // namespace plait
