// The ways a piece of IR leaves the loop around it before that loop ends (a
// break, a continue, a return), and the loop nesting that decides them. A
// parallel loop cannot end early, and a statement that leaves its loop cannot
// run apart from it, so the passes and emitters that run code in parallel or
// elsewhere ask this.
#pragma once

#include "ir/ir.h"
#include "ir/ir_visitor.h"

namespace plait::analysis {

// A visitor that knows how many loops of the visited IR enclose the node it is
// at: at depth 0 a Break or Continue acts on the loop around the visited IR,
// and code runs once per iteration of that loop. A loop's bounds and condition
// count as inside it. Subclasses that override visit(For) or visit(While) call
// this class's.
class LoopDepthVisitor : public ir::IRVisitor {
 public:
  using IRVisitor::visit;

 protected:
  int loop_depth() const { return depth_; }
  void visit(const ir::For* n) override;
  void visit(const ir::While* n) override;

 private:
  int depth_ = 0;
};

// The first statement of each kind that leaves the loop around `s`: a Break or
// Continue in no loop inside `s`, a Return anywhere. Null when there is none.
struct LoopExits {
  const ir::Break* breaks = nullptr;
  const ir::Continue* continues = nullptr;
  const ir::Return* returns = nullptr;
};

LoopExits loop_exits(const ir::Stmt& s);

// Whether a loop body can end its loop early: a Break in no loop nested in it,
// or a Return anywhere. A Continue only ends the iteration.
bool leaves_loop(const ir::Stmt& body);

}  // namespace plait::analysis
