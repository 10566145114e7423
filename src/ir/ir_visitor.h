// Read-only traversal of the IR. Override the visit() of the nodes you care
// about; the defaults visit every child in evaluation order.
#pragma once

#include "ir/ir.h"

namespace plait::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  // Dispatch on the node kind. Null pointers are ignored.
  void visit(const Expr& e);
  void visit(const Stmt& s);

 protected:
#define PLAIT_EXPR_NODE(n) virtual void visit(const n* node);
#define PLAIT_STMT_NODE(n) virtual void visit(const n* node);
#include "ir/ir_nodes.def"
};

}  // namespace plait::ir
