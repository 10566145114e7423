// Rewriting of the IR. mutate() dispatches on the node kind to the matching
// visit(); the defaults mutate every child and rebuild the node only when a
// child changed (otherwise they return `self`, so unchanged subtrees stay
// shared).
#pragma once

#include "ir/ir.h"

namespace plait::ir {

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  // Null in, null out.
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
#define PLAIT_EXPR_NODE(n) virtual Expr visit(const n* node, const Expr& self);
#define PLAIT_STMT_NODE(n) virtual Stmt visit(const n* node, const Stmt& self);
#include "ir/ir_nodes.def"

  // Mutates each element; sets *changed when any differs.
  std::vector<Expr> mutate_exprs(const std::vector<Expr>& v, bool* changed);
};

}  // namespace plait::ir
