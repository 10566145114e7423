// Analysis: whether IR may record a run-time error (see raises.h).
#include "analysis/raises.h"

namespace plait::analysis {

void RaiseScan::visit(const ir::Load* n) {
  facts.expressions = facts.expressions || n->checked;
  IRVisitor::visit(n);
}

void RaiseScan::visit(const ir::Binary* n) {
  // Checked division and powers, and integer powers (negative exponents).
  // A division by a nonzero constant cannot fail.
  const ir::IntImm* int_divisor = n->b->as<ir::IntImm>();
  const ir::FloatImm* float_divisor = n->b->as<ir::FloatImm>();
  const bool constant_divisor = n->op != ir::BinaryOp::Pow && ((int_divisor && int_divisor->value != 0) ||
                                                               (float_divisor && float_divisor->value != 0));
  if ((n->zero_check && !constant_divisor) || (n->op == ir::BinaryOp::Pow && !n->type.is_float() && !n->type.is_bool()))
    facts.expressions = true;
  IRVisitor::visit(n);
}

void RaiseScan::visit(const ir::Cast* n) {
  facts.expressions = facts.expressions || n->checked;
  IRVisitor::visit(n);
}

void RaiseScan::visit(const ir::Call* n) {
  facts.expressions = facts.expressions || n->python_math;
  IRVisitor::visit(n);
}

void RaiseScan::visit(const ir::Store* n) {
  facts.expressions = facts.expressions || n->checked;
  IRVisitor::visit(n);
}

void RaiseScan::visit(const ir::AtomicUpdate* n) {
  facts.expressions = facts.expressions || n->checked;
  IRVisitor::visit(n);
}

void RaiseScan::visit(const ir::Assert* n) {
  facts.checks = true;
  IRVisitor::visit(n);
}

void RaiseScan::visit(const ir::Allocate* n) {
  facts.allocations = true;
  IRVisitor::visit(n);
}

RaiseFacts raises(const ir::Stmt& s) {
  RaiseScan scan;
  scan.visit(s);
  return scan.facts;
}

RaiseFacts raises(const ir::Expr& e) {
  RaiseScan scan;
  scan.visit(e);
  return scan.facts;
}

void HasErrorSites::visit(const ir::Load* n) {
  found = found || n->checked;
  IRVisitor::visit(n);
}

void HasErrorSites::visit(const ir::Store* n) {
  found = found || n->checked;
  IRVisitor::visit(n);
}

void HasErrorSites::visit(const ir::AtomicUpdate* n) {
  found = found || n->checked;
  IRVisitor::visit(n);
}

void HasErrorSites::visit(const ir::Cast* n) {
  found = found || (n->checked && n->value->type.is_float() && n->type.is_int()) ||
          (n->checked && n->value->type.is_int() && n->type.is_int());
  IRVisitor::visit(n);
}

void HasErrorSites::visit(const ir::Binary* n) {
  found = found || n->zero_check || (n->op == ir::BinaryOp::Pow && n->type.is_int());
  IRVisitor::visit(n);
}

void HasErrorSites::visit(const ir::Call* n) {
  found = found || n->python_math;
  IRVisitor::visit(n);
}

void HasErrorSites::visit(const ir::Assert* n) {
  found = true;
  IRVisitor::visit(n);
}

}  // namespace plait::analysis
