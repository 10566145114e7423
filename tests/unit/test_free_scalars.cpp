// The free scalars of statements (analysis/free_scalars.h): what their own
// declarations and loops hold, and what the scalars declared around them add.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/free_scalars.h"

namespace plait {
namespace {

using namespace ir;

Var local(const std::string& name) {
  return std::make_shared<VarInfo>(VarInfo{name, ScalarType::i64(), {}, false});
}

Expr read(const Var& v) {
  return VarRef::make(v);
}
Expr one() {
  return IntImm::make(1, ScalarType::i64());
}
Stmt assign(const Var& v, Expr value) {
  return Assign::make(v, std::move(value));
}
Expr plus(Expr a, Expr b) {
  return Binary::make(BinaryOp::Add, std::move(a), std::move(b), ScalarType::i64());
}

Stmt loop(const Var& v, Expr begin, Expr end, std::vector<Stmt> body) {
  return For::make(v, std::move(begin), std::move(end), one(), Block::make(std::move(body)));
}

std::string names(const std::vector<Var>& vars) {
  std::string out;
  for (const Var& v : vars) out += (out.empty() ? "" : " ") + v->name;
  return out;
}

TEST(FreeScalars, ScalarsTheStatementsDoNotDeclareInTheOrderOfTheirFirstUse) {
  Var n = local("n"), s = local("s"), t = local("t"), x = local("x");
  // s = n; declare t; t = s + x; x = t
  std::vector<Stmt> stmts{assign(s, read(n)), Declare::make(t), assign(t, plus(read(s), read(x))), assign(x, read(t))};
  EXPECT_EQ(names(analysis::free_scalars(stmts)), "s n x");
}

TEST(FreeScalars, ALoopHoldsItsVariableInItsBodyButNotInItsBounds) {
  Var i = local("i"), j = local("j"), n = local("n"), acc = local("acc");
  // for i in range(n): for j in range(i, n): acc = acc + j
  Stmt inner = loop(j, read(i), read(n), {assign(acc, plus(read(acc), read(j)))});
  EXPECT_EQ(names(analysis::free_scalars({loop(i, one(), read(n), {inner})})), "n acc");
  // The inner loop alone reads i in its bounds.
  EXPECT_EQ(names(analysis::free_scalars({inner})), "i n acc");
}

TEST(FreeScalars, ADeclarationHoldsForTheRestOfItsBlockOnly) {
  Var c = local("c"), v = local("v");
  // if c: { declare v; v = 1 } v = c
  Stmt branch =
      If::make(Compare::make(CompareOp::GT, read(c), one()), Block::make({Declare::make(v), assign(v, one())}));
  EXPECT_EQ(names(analysis::free_scalars({branch})), "c");
  EXPECT_EQ(names(analysis::free_scalars({branch, assign(v, read(c))})), "c v");
}

// A loop over a variable declared around the statements assigns that
// variable, whose last value the code after them reads: only the caller
// knows such declarations.
TEST(FreeScalars, ALoopOverAVariableDeclaredAroundAssignsIt) {
  Var i = local("i"), n = local("n"), a = local("a");
  Stmt over_i = loop(i, one(), read(n), {assign(a, read(i))});
  EXPECT_EQ(names(analysis::free_scalars({over_i})), "n a");
  EXPECT_EQ(names(analysis::free_scalars({over_i}, VarSet{i.get(), n.get(), a.get()})), "i n a");
  // A scalar declared around the statements is theirs to pass in even where
  // they declare it again.
  EXPECT_EQ(names(analysis::free_scalars({Declare::make(a), assign(a, one())}, VarSet{a.get()})), "a");
}

}  // namespace
}  // namespace plait
