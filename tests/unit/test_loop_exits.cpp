// Tests of analysis/loop_exits: the break, continue and return that leave a
// loop early, and the loop depth its visitor counts.
#include <gtest/gtest.h>

#include "analysis/loop_exits.h"
#include "analysis/var_uses.h"

namespace plait::analysis {
namespace {

using namespace ir;

Var scalar(const std::string& name) {
  return std::make_shared<VarInfo>(VarInfo{name, ScalarType::i64(), {}, false});
}

Stmt loop(const Var& v, Stmt body) {
  return For::make(v, IntImm::make(0), IntImm::make(8), IntImm::make(1), body);
}

TEST(LoopExits, FindsWhatLeavesTheLoopAround) {
  Var i = scalar("i"), j = scalar("j");
  Expr c = Compare::make(CompareOp::LT, VarRef::make(i), IntImm::make(4));
  // Inside a nested loop, a break or continue acts on that loop.
  Stmt nested = loop(j, Block::make({If::make(c, Break::make()), Continue::make()}));
  LoopExits e = loop_exits(nested);
  EXPECT_EQ(e.breaks, nullptr);
  EXPECT_EQ(e.continues, nullptr);
  EXPECT_EQ(e.returns, nullptr);
  EXPECT_FALSE(leaves_loop(nested));

  Stmt brk = Break::make(), cont = Continue::make();
  Stmt body = Block::make({nested, If::make(c, cont, brk)});
  e = loop_exits(body);
  EXPECT_EQ(e.breaks, brk->as<Break>());
  EXPECT_EQ(e.continues, cont->as<Continue>());
  EXPECT_TRUE(leaves_loop(body));
  EXPECT_FALSE(leaves_loop(Block::make({If::make(c, cont)})));  // a continue only ends the iteration

  // A return leaves every loop.
  Stmt ret = Return::make({});
  e = loop_exits(loop(j, While::make(c, ret)));
  EXPECT_EQ(e.returns, ret->as<Return>());
  EXPECT_TRUE(leaves_loop(loop(j, ret)));
}

TEST(VarUses, ReadsAny) {
  Var i = scalar("i"), j = scalar("j");
  Expr e = Binary::make(BinaryOp::Add, VarRef::make(i), IntImm::make(1), ScalarType::i64());
  EXPECT_TRUE(reads_any(e, {i.get(), j.get()}));
  EXPECT_FALSE(reads_any(e, {j.get()}));
  EXPECT_FALSE(reads_any(nullptr, {i.get()}));
}

}  // namespace
}  // namespace plait::analysis
