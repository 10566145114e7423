// The default IRMutator: mutate every child and rebuild a node only when one
// of its children changed.
#include "ir/ir_mutator.h"

namespace plait::ir {

Expr IRMutator::mutate(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
#define PLAIT_EXPR_NODE(n) \
  case NodeKind::n:        \
    return visit(static_cast<const n*>(e.get()), e);
#include "ir/ir_nodes.def"
    default:
      PLAIT_INTERNAL_ERROR(std::string("statement kind in an expression: ") + node_kind_name(e->kind));
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
#define PLAIT_STMT_NODE(n) \
  case NodeKind::n:        \
    return visit(static_cast<const n*>(s.get()), s);
#include "ir/ir_nodes.def"
    default:
      PLAIT_INTERNAL_ERROR(std::string("expression kind in a statement: ") + node_kind_name(s->kind));
  }
}

std::vector<Expr> IRMutator::mutate_exprs(const std::vector<Expr>& v, bool* changed) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (const Expr& e : v) {
    out.push_back(mutate(e));
    if (out.back() != e) *changed = true;
  }
  return out;
}

Expr IRMutator::visit(const IntImm*, const Expr& self) { return self; }
Expr IRMutator::visit(const FloatImm*, const Expr& self) { return self; }
Expr IRMutator::visit(const BoolImm*, const Expr& self) { return self; }
Expr IRMutator::visit(const VarRef*, const Expr& self) { return self; }

Expr IRMutator::visit(const Cast* node, const Expr& self) {
  Expr v = mutate(node->value);
  if (v == node->value) return self;
  return Cast::make(node->type, std::move(v), node->checked, node->loc);
}

Expr IRMutator::visit(const Unary* node, const Expr& self) {
  Expr a = mutate(node->a);
  if (a == node->a) return self;
  return Unary::make(node->op, std::move(a), node->loc);
}

Expr IRMutator::visit(const Binary* node, const Expr& self) {
  Expr a = mutate(node->a);
  Expr b = mutate(node->b);
  if (a == node->a && b == node->b) return self;
  return Binary::make(node->op, std::move(a), std::move(b), node->type, node->zero_check, node->loc);
}

Expr IRMutator::visit(const Compare* node, const Expr& self) {
  Expr a = mutate(node->a);
  Expr b = mutate(node->b);
  if (a == node->a && b == node->b) return self;
  return Compare::make(node->op, std::move(a), std::move(b), node->loc);
}

Expr IRMutator::visit(const Logical* node, const Expr& self) {
  Expr a = mutate(node->a);
  Expr b = mutate(node->b);
  if (a == node->a && b == node->b) return self;
  return Logical::make(node->op, std::move(a), std::move(b), node->loc);
}

Expr IRMutator::visit(const Select* node, const Expr& self) {
  Expr c = mutate(node->cond);
  Expr t = mutate(node->t);
  Expr f = mutate(node->f);
  if (c == node->cond && t == node->t && f == node->f) return self;
  return Select::make(std::move(c), std::move(t), std::move(f), node->loc);
}

Expr IRMutator::visit(const Call* node, const Expr& self) {
  bool changed = false;
  std::vector<Expr> args = mutate_exprs(node->args, &changed);
  if (!changed) return self;
  return Call::make(node->fn, std::move(args), node->type, node->python_math, node->loc);
}

Expr IRMutator::visit(const Load* node, const Expr& self) {
  bool changed = false;
  std::vector<Expr> indices = mutate_exprs(node->indices, &changed);
  if (!changed) return self;
  return Load::make(node->array, std::move(indices), node->checked, node->loc);
}

Expr IRMutator::visit(const ArrayDim*, const Expr& self) { return self; }
Expr IRMutator::visit(const ArraysOverlap*, const Expr& self) { return self; }

Stmt IRMutator::visit(const Block* node, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> stmts;
  stmts.reserve(node->stmts.size());
  for (const Stmt& s : node->stmts) {
    Stmt m = mutate(s);
    if (m != s) changed = true;
    // A mutator removes a statement by returning null.
    if (m) stmts.push_back(std::move(m));
  }
  if (!changed) return self;
  return Block::make(std::move(stmts), node->loc);
}

Stmt IRMutator::visit(const Declare*, const Stmt& self) { return self; }

Stmt IRMutator::visit(const Assign* node, const Stmt& self) {
  Expr v = mutate(node->value);
  if (v == node->value) return self;
  return Assign::make(node->var, std::move(v), node->loc);
}

Stmt IRMutator::visit(const Store* node, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> indices = mutate_exprs(node->indices, &changed);
  Expr v = mutate(node->value);
  if (!changed && v == node->value) return self;
  return Store::make(node->array, std::move(indices), std::move(v), node->checked, node->loc);
}

Stmt IRMutator::visit(const AtomicUpdate* node, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> indices = mutate_exprs(node->indices, &changed);
  Expr v = mutate(node->value);
  if (!changed && v == node->value) return self;
  return AtomicUpdate::make(node->array, std::move(indices), node->op, std::move(v), node->checked, node->loc);
}

Stmt IRMutator::visit(const If* node, const Stmt& self) {
  Expr c = mutate(node->cond);
  Stmt t = mutate(node->then_case);
  Stmt e = mutate(node->else_case);
  if (c == node->cond && t == node->then_case && e == node->else_case) return self;
  if (!t) t = Block::make({}, node->then_case->loc);
  return If::make(std::move(c), std::move(t), std::move(e), node->loc);
}

Stmt IRMutator::visit(const For* node, const Stmt& self) {
  Expr b = mutate(node->begin);
  Expr e = mutate(node->end);
  Expr s = mutate(node->step);
  Stmt body = mutate(node->body);
  if (b == node->begin && e == node->end && s == node->step && body == node->body) return self;
  if (!body) body = Block::make({}, node->body->loc);
  return For::make(node->var, std::move(b), std::move(e), std::move(s), std::move(body), node->schedule, node->loc);
}

Stmt IRMutator::visit(const While* node, const Stmt& self) {
  Expr c = mutate(node->cond);
  Stmt body = mutate(node->body);
  if (c == node->cond && body == node->body) return self;
  if (!body) body = Block::make({}, node->body->loc);
  return While::make(std::move(c), std::move(body), node->loc);
}

Stmt IRMutator::visit(const Assert* node, const Stmt& self) {
  Expr c = mutate(node->cond);
  if (c == node->cond) return self;
  return Assert::make(std::move(c), node->error_kind, node->message, node->loc);
}

Stmt IRMutator::visit(const MatMul* node, const Stmt& self) {
  Expr m = mutate(node->m);
  Expr n = mutate(node->n);
  Expr k = mutate(node->k);
  Expr alpha = mutate(node->alpha);
  Expr beta = mutate(node->beta);
  MatMulTriangle triangle = node->triangle;
  triangle.alpha2 = mutate(node->triangle.alpha2);
  triangle.row_condition = mutate(node->triangle.row_condition);
  triangle.vector_row = mutate(node->triangle.vector_row);
  Stmt loops = mutate(node->loops);
  if (m == node->m && n == node->n && k == node->k && alpha == node->alpha && beta == node->beta &&
      triangle.alpha2 == node->triangle.alpha2 && triangle.row_condition == node->triangle.row_condition &&
      triangle.vector_row == node->triangle.vector_row && loops == node->loops)
    return self;
  return MatMul::make(node->c, node->a, node->a_transposed, node->b, node->b_transposed, std::move(m), std::move(n),
                      std::move(k), std::move(alpha), std::move(beta), std::move(loops), node->loc,
                      std::move(triangle));
}

Stmt IRMutator::visit(const Break*, const Stmt& self) { return self; }
Stmt IRMutator::visit(const Continue*, const Stmt& self) { return self; }

Stmt IRMutator::visit(const Return* node, const Stmt& self) {
  bool changed = false;
  std::vector<ReturnValue> values;
  values.reserve(node->values.size());
  for (const ReturnValue& v : node->values) {
    ReturnValue m{mutate(v.scalar), v.array};
    if (m.scalar != v.scalar) changed = true;
    values.push_back(std::move(m));
  }
  if (!changed) return self;
  return Return::make(std::move(values), node->loc);
}

Stmt IRMutator::visit(const Allocate* node, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> shape = mutate_exprs(node->shape, &changed);
  Expr fill = mutate(node->fill_value);
  if (!changed && fill == node->fill_value) return self;
  return Allocate::make(node->array, std::move(shape), node->fill, std::move(fill), node->loc);
}

Stmt IRMutator::visit(const ArrayBind*, const Stmt& self) { return self; }

}  // namespace plait::ir
