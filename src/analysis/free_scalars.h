// The free scalars of a list of statements: the scalars they use that they do
// not declare themselves, which code that runs the statements apart from
// their surroundings (a GPU kernel) receives from outside.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace plait::analysis {

// The scalars that `stmts` use (read, assign, loop over or declare) where no
// declaration among them holds the use, in the order of their first such use.
// A Declare holds its scalar for the rest of its block, a loop its variable
// in its own body (its bounds are read before the loop starts), a matrix
// product its row variable in its row condition. In well-formed IR
// (analysis/verify_ir with declarations_placed) every free scalar is declared
// around the statements: a parameter, a Declare of an enclosing block, or the
// variable of an enclosing loop.
//
// `declared_around`: the scalars declared around the statements, where the
// caller knows them. A use of one of them is free whatever holds it inside:
// a loop over a variable declared around it assigns that variable (Python's
// loop variable keeps its last value after the loop, and place_declarations
// declares a loop variable outside its loop only when it is used there).
// With them the result, in well-formed IR, is every scalar the statements use
// that is declared around them, which no walk of the statements alone can
// tell for such a loop variable.
std::vector<ir::Var> free_scalars(const std::vector<ir::Stmt>& stmts, const ir::VarSet& declared_around = {});

}  // namespace plait::analysis
