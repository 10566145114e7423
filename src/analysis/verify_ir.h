// The IR's invariants, checked between passes (driver/pass_runner.h runs it
// after every step when CompileOptions::verify_ir is set: in the tests, and
// under PLAIT_VERIFY_IR=1 or plaitc --verify-ir). A pass that breaks one is
// named in the internal error, instead of the emitter that trips over it later
// or the C++ compiler that rejects what the emitter printed.
#pragma once

#include <string>

#include "ir/ir.h"

namespace plait::analysis {

struct VerifyOptions {
  // Every local a statement reads or writes is declared by an enclosing
  // block, is a parameter or the variable of an enclosing loop. Holds once
  // transforms/place_declarations has placed the declarations; before that,
  // the front end leaves locals undeclared.
  bool declarations_placed = false;
  // No break or return leaves a parallel or vector loop. Holds once
  // transforms/detect_reductions has refused them (a user error, which names
  // the line).
  bool early_exits_refused = false;
};

// Throws InternalError naming `after` (the step that produced the function)
// and the first broken invariant: a missing child, an index count that is not
// the array's rank, an operand of the wrong kind of type (a condition that is
// not bool, a loop bound that is not an integer, an assignment whose value
// has another scalar kind than its variable), a break or continue outside
// any loop, a local used outside its declaration's scope (with
// `declarations_placed`), a break or return that leaves a parallel or vector
// loop (with `early_exits_refused`).
void verify_ir(const ir::Function& function, const std::string& after, const VerifyOptions& options);

}  // namespace plait::analysis
