// Structural equality of expressions (see ir_equal.h).
#include "ir/ir_equal.h"

#include <cmath>

namespace plait::ir {

namespace {

bool same_var(const VarInfo* x, const VarInfo* y, const EqualOptions& o) {
  if (x == o.a_var || y == o.b_var) return x == o.a_var && y == o.b_var;
  return x == y;
}

bool same_array(const ArrayInfo* x, const ArrayInfo* y, const EqualOptions& o) {
  return o.array_of ? o.array_of(x) == o.array_of(y) : x == y;
}

bool all_equal(const std::vector<Expr>& a, const std::vector<Expr>& b, const EqualOptions& o) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!equal(a[k].get(), b[k].get(), o)) return false;
  return true;
}

}  // namespace

bool equal(const ExprNode* a, const ExprNode* b, const EqualOptions& o) {
  if (a == b && o.a_var == o.b_var) return true;
  if (!a || !b || a->kind != b->kind) return false;
  if (o.types && a->type != b->type) return false;
  if (o.looks_into && !o.looks_into(a->kind)) return false;
  switch (a->kind) {
    case NodeKind::IntImm:
      return a->as<IntImm>()->value == b->as<IntImm>()->value;
    case NodeKind::FloatImm: {
      const double x = a->as<FloatImm>()->value, y = b->as<FloatImm>()->value;
      return (x == y && std::signbit(x) == std::signbit(y)) || (x != x && y != y);
    }
    case NodeKind::BoolImm:
      return a->as<BoolImm>()->value == b->as<BoolImm>()->value;
    case NodeKind::VarRef:
      return same_var(a->as<VarRef>()->var.get(), b->as<VarRef>()->var.get(), o);
    case NodeKind::Cast: {
      auto x = a->as<Cast>(), y = b->as<Cast>();
      return x->type == y->type && (!o.checks || x->checked == y->checked) && equal(x->value.get(), y->value.get(), o);
    }
    case NodeKind::Unary: {
      auto x = a->as<Unary>(), y = b->as<Unary>();
      return x->op == y->op && equal(x->a.get(), y->a.get(), o);
    }
    case NodeKind::Binary: {
      auto x = a->as<Binary>(), y = b->as<Binary>();
      return x->op == y->op && (!o.checks || x->zero_check == y->zero_check) && equal(x->a.get(), y->a.get(), o) &&
             equal(x->b.get(), y->b.get(), o);
    }
    case NodeKind::Compare: {
      auto x = a->as<Compare>(), y = b->as<Compare>();
      return x->op == y->op && equal(x->a.get(), y->a.get(), o) && equal(x->b.get(), y->b.get(), o);
    }
    case NodeKind::Logical: {
      auto x = a->as<Logical>(), y = b->as<Logical>();
      return x->op == y->op && equal(x->a.get(), y->a.get(), o) && equal(x->b.get(), y->b.get(), o);
    }
    case NodeKind::Select: {
      auto x = a->as<Select>(), y = b->as<Select>();
      return equal(x->cond.get(), y->cond.get(), o) && equal(x->t.get(), y->t.get(), o) &&
             equal(x->f.get(), y->f.get(), o);
    }
    case NodeKind::Call: {
      auto x = a->as<Call>(), y = b->as<Call>();
      return x->fn == y->fn && x->python_math == y->python_math && all_equal(x->args, y->args, o);
    }
    case NodeKind::Load: {
      auto x = a->as<Load>(), y = b->as<Load>();
      return same_array(x->array.get(), y->array.get(), o) && (!o.checks || x->checked == y->checked) &&
             all_equal(x->indices, y->indices, o);
    }
    case NodeKind::ArrayDim: {
      auto x = a->as<ArrayDim>(), y = b->as<ArrayDim>();
      return same_array(x->array.get(), y->array.get(), o) && x->dim == y->dim;
    }
    case NodeKind::ArraysOverlap: {
      auto x = a->as<ArraysOverlap>(), y = b->as<ArraysOverlap>();
      return same_array(x->a.get(), y->a.get(), o) && same_array(x->b.get(), y->b.get(), o) &&
             x->unless_same_view == y->unless_same_view;
    }
    default:
      PLAIT_INTERNAL_ERROR(std::string("statement kind in an expression: ") + node_kind_name(a->kind));
  }
}

}  // namespace plait::ir
