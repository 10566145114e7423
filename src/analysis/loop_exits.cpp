// The statements that leave a loop early (see loop_exits.h).
#include "analysis/loop_exits.h"

namespace plait::analysis {

void LoopDepthVisitor::visit(const ir::For* n) {
  ++depth_;
  IRVisitor::visit(n);
  --depth_;
}

void LoopDepthVisitor::visit(const ir::While* n) {
  ++depth_;
  IRVisitor::visit(n);
  --depth_;
}

namespace {

class ExitFinder : public LoopDepthVisitor {
 public:
  LoopExits exits;
  using LoopDepthVisitor::visit;

 protected:
  void visit(const ir::Break* n) override {
    if (loop_depth() == 0 && !exits.breaks) exits.breaks = n;
  }
  void visit(const ir::Continue* n) override {
    if (loop_depth() == 0 && !exits.continues) exits.continues = n;
  }
  void visit(const ir::Return* n) override {
    if (!exits.returns) exits.returns = n;
  }
};

}  // namespace

LoopExits loop_exits(const ir::Stmt& s) {
  ExitFinder f;
  f.visit(s);
  return f.exits;
}

bool leaves_loop(const ir::Stmt& body) {
  const LoopExits e = loop_exits(body);
  return e.breaks || e.returns;
}

}  // namespace plait::analysis
