// What inlining (inline_calls.h) reads and rewrites in a callee's body:
// walks over the syntax tree, whether a body may run off its end, and the
// rewriting of its returns into assignments (with breaks out of loops).
// Internal to the front end.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "frontend/ast.h"

namespace plait::inlining {

// Every node of `e`, `e` first.
void for_each_expr(const ast::Expr& e, const std::function<void(const ast::Expr&)>& f);
// Every statement of `body`, nested blocks included, in order.
void for_each_stmt(const ast::StmtList& body, const std::function<void(const ast::Stmt&)>& f);
// The expressions a statement evaluates itself (not those of nested blocks).
std::vector<const ast::Expr*> own_exprs(const ast::Stmt& s);
// Whether running `body` may reach its end (and a function fall off it).
bool may_fall_through(const ast::StmtList& body);

// A callee's body with its returns rewritten: the value goes to `result`;
// where returns sit in loops (`flag` not empty), the flag is set, breaks
// leave each loop and the statements after a loop run only while the flag is
// clear. Outside loops, the statements after an `if` that returns go into
// both of its branches.
ast::StmtList rewrite_returns(ast::StmtList body, const std::string& result, const std::string& flag);

ast::ExprPtr name(SourceLoc loc, const std::string& id);
// `target = value`
ast::StmtPtr assign(SourceLoc loc, const std::string& target, ast::ExprPtr value);
ast::StmtList only(ast::StmtPtr s);

}  // namespace plait::inlining
