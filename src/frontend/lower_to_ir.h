// Lowering of the syntax tree to the typed IR, with type inference.
//
// The function is specialised for one call signature: every parameter gets a
// concrete type, every local one type (the NEP 50 join of everything assigned
// to it), and every construct outside the supported subset is a CompileError
// pointing at the user's line.
#pragma once

#include "frontend/ast.h"
#include "ir/ir.h"
#include "support/compile_options.h"

namespace plait {

ir::Function lower_to_ir(const ast::FunctionDef& function, const SourceFile& file, const Signature& signature,
                         const Globals& globals, const CompileOptions& options);

}  // namespace plait
