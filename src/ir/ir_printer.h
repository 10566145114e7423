// A readable, stable text form of the IR, used by inspect_ir(), PLAIT_DUMP_DIR,
// `plaitc --emit ir` and the golden tests. Loops print their schedule
// (`parallel for i in range(0, n, 1) reduction(+: s)`), so the tests can
// diff what each pass did.
#pragma once

#include <string>

#include "ir/ir.h"

namespace plait::ir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s, int indent = 0);
std::string to_string(const Function& f);

}  // namespace plait::ir
