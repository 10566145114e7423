// The default IRVisitor: dispatch on the node kind, then visit every child in
// evaluation order.
#include "ir/ir_visitor.h"

namespace plait::ir {

void IRVisitor::visit(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
#define PLAIT_EXPR_NODE(n)                  \
  case NodeKind::n:                         \
    visit(static_cast<const n*>(e.get())); \
    return;
#include "ir/ir_nodes.def"
    default:
      PLAIT_INTERNAL_ERROR(std::string("statement kind in an expression: ") + node_kind_name(e->kind));
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
#define PLAIT_STMT_NODE(n)                  \
  case NodeKind::n:                         \
    visit(static_cast<const n*>(s.get())); \
    return;
#include "ir/ir_nodes.def"
    default:
      PLAIT_INTERNAL_ERROR(std::string("expression kind in a statement: ") + node_kind_name(s->kind));
  }
}

void IRVisitor::visit(const IntImm*) {}
void IRVisitor::visit(const FloatImm*) {}
void IRVisitor::visit(const BoolImm*) {}
void IRVisitor::visit(const VarRef*) {}
void IRVisitor::visit(const Cast* node) { visit(node->value); }
void IRVisitor::visit(const Unary* node) { visit(node->a); }
void IRVisitor::visit(const Binary* node) {
  visit(node->a);
  visit(node->b);
}
void IRVisitor::visit(const Compare* node) {
  visit(node->a);
  visit(node->b);
}
void IRVisitor::visit(const Logical* node) {
  visit(node->a);
  visit(node->b);
}
void IRVisitor::visit(const Select* node) {
  visit(node->cond);
  visit(node->t);
  visit(node->f);
}
void IRVisitor::visit(const Call* node) {
  for (const Expr& a : node->args) visit(a);
}
void IRVisitor::visit(const Load* node) {
  for (const Expr& i : node->indices) visit(i);
}
void IRVisitor::visit(const ArrayDim*) {}
void IRVisitor::visit(const ArraysOverlap*) {}

void IRVisitor::visit(const Block* node) {
  for (const Stmt& s : node->stmts) visit(s);
}
void IRVisitor::visit(const Declare*) {}
void IRVisitor::visit(const Assign* node) { visit(node->value); }
void IRVisitor::visit(const Store* node) {
  for (const Expr& i : node->indices) visit(i);
  visit(node->value);
}
void IRVisitor::visit(const AtomicUpdate* node) {
  for (const Expr& i : node->indices) visit(i);
  visit(node->value);
}
void IRVisitor::visit(const If* node) {
  visit(node->cond);
  visit(node->then_case);
  visit(node->else_case);
}
void IRVisitor::visit(const For* node) {
  visit(node->begin);
  visit(node->end);
  visit(node->step);
  visit(node->body);
}
void IRVisitor::visit(const While* node) {
  visit(node->cond);
  visit(node->body);
}
void IRVisitor::visit(const Assert* node) { visit(node->cond); }
void IRVisitor::visit(const Break*) {}
void IRVisitor::visit(const Continue*) {}
void IRVisitor::visit(const Return* node) {
  for (const ReturnValue& v : node->values) visit(v.scalar);
}
void IRVisitor::visit(const Allocate* node) {
  for (const Expr& e : node->shape) visit(e);
  visit(node->fill_value);
}
void IRVisitor::visit(const ArrayBind*) {}
void IRVisitor::visit(const MatMul* node) {
  visit(node->m);
  visit(node->n);
  visit(node->k);
  visit(node->alpha);
  visit(node->beta);
  visit(node->triangle.alpha2);
  visit(node->triangle.row_condition);
  visit(node->triangle.vector_row);
  visit(node->loops);
}

}  // namespace plait::ir
