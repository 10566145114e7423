#include "tensor/index_notation.h"

#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "ir/ir_printer.h"

namespace plait::tensor {

namespace {

std::shared_ptr<IndexExprNode> node(ExprKind kind, ScalarType type) {
  auto n = std::make_shared<IndexExprNode>();
  n->kind = kind;
  n->type = type.strong();
  return n;
}

const char* binary_text(ir::BinaryOp op) {
  switch (op) {
    case ir::BinaryOp::Add:
      return " + ";
    case ir::BinaryOp::Sub:
      return " - ";
    case ir::BinaryOp::Mul:
      return " * ";
    case ir::BinaryOp::Div:
      return " / ";
    default:
      return nullptr;
  }
}

std::string vars_text(const std::vector<IndexVar>& vars) {
  std::string s = "(";
  for (size_t d = 0; d < vars.size(); ++d) s += (d ? "," : "") + (vars[d].valid() ? vars[d].name : std::string("0"));
  return s + ")";
}

}  // namespace

IndexExpr with_operands(const IndexExpr& e, IndexExpr a, IndexExpr b) {
  if (a == e->a && b == e->b) return e;
  auto copy = std::make_shared<IndexExprNode>(*e);
  copy->a = std::move(a);
  copy->b = std::move(b);
  return copy;
}

std::vector<IndexExpr> factors(const IndexExpr& e) {
  if (e->kind == ExprKind::Binary && e->binary == ir::BinaryOp::Mul) {
    std::vector<IndexExpr> out = factors(e->a);
    for (const IndexExpr& f : factors(e->b)) out.push_back(f);
    return out;
  }
  return {e};
}

IndexExpr access(const TensorVarPtr& t, std::vector<IndexVar> vars) {
  auto n = node(ExprKind::Access, ScalarType{t->type.kind, false});
  n->tensor = t;
  n->vars = std::move(vars);
  return n;
}

IndexExpr literal(ir::Expr value) {
  auto n = node(ExprKind::Literal, value->type);
  n->type = value->type;  // a Python number stays weak until an operation types it
  n->literal = std::move(value);
  return n;
}

IndexExpr cast(IndexExpr a, ScalarType t) {
  if (a->type == t.strong()) return a;
  auto n = node(ExprKind::Cast, t);
  n->a = std::move(a);
  return n;
}

IndexExpr unary(ir::UnaryOp op, IndexExpr a) {
  auto n = node(ExprKind::Unary, a->type);
  n->unary = op;
  n->a = std::move(a);
  return n;
}

IndexExpr binary(ir::BinaryOp op, IndexExpr a, IndexExpr b, ScalarType type) {
  auto n = node(ExprKind::Binary, type);
  n->binary = op;
  n->a = cast(std::move(a), type);
  n->b = cast(std::move(b), type);
  return n;
}

IndexExpr call(ir::Intrinsic fn, IndexExpr a, ScalarType type) {
  auto n = node(ExprKind::Call, type);
  n->fn = fn;
  n->a = cast(std::move(a), type);
  return n;
}

IndexExpr reduce(ir::ReduceOp op, IndexVar var, IndexExpr a) {
  auto n = node(ExprKind::Reduce, a->type);
  n->reduce = op;
  n->var = std::move(var);
  n->a = std::move(a);
  return n;
}

std::vector<StatementPtr> merge_statements(const std::vector<StatementPtr>& a, const std::vector<StatementPtr>& b) {
  std::vector<StatementPtr> out = a;
  std::set<const Statement*> have;
  for (const auto& s : a) have.insert(s.get());
  for (const auto& s : b)
    if (have.insert(s.get()).second) out.push_back(s);
  return out;
}

bool mentions(const IndexExpr& e, const IndexVar& v) {
  if (!e) return false;
  if (e->kind == ExprKind::Access) {
    for (const IndexVar& x : e->vars)
      if (x == v) return true;
    return false;
  }
  if (e->kind == ExprKind::Reduce && e->var == v) return true;
  return mentions(e->a, v) || mentions(e->b, v);
}

bool reads(const IndexExpr& e, const TensorVar* t) {
  if (!e) return false;
  if (e->kind == ExprKind::Access) return e->tensor.get() == t;
  return reads(e->a, t) || reads(e->b, t);
}

std::vector<const IndexExprNode*> accesses(const IndexExpr& e) {
  std::vector<const IndexExprNode*> out;
  std::function<void(const IndexExpr&)> walk = [&](const IndexExpr& x) {
    if (!x) return;
    if (x->kind == ExprKind::Access) out.push_back(x.get());
    walk(x->a);
    walk(x->b);
  };
  walk(e);
  return out;
}

IndexExpr replace_access(const IndexExpr& e, const TensorVar* t,
                         const std::function<IndexExpr(const IndexExprNode&)>& with) {
  if (!e) return e;
  if (e->kind == ExprKind::Access) return e->tensor.get() == t ? with(*e) : e;
  return with_operands(e, replace_access(e->a, t, with), replace_access(e->b, t, with));
}

IndexExpr rename(const IndexExpr& e, const IndexVar& from, const IndexVar& to) {
  if (!e) return e;
  if (e->kind == ExprKind::Access) {
    auto copy = std::make_shared<IndexExprNode>(*e);
    for (IndexVar& v : copy->vars)
      if (v == from) v = to;
    return copy;
  }
  auto copy = std::make_shared<IndexExprNode>(*e);
  if (copy->kind == ExprKind::Reduce && copy->var == from) copy->var = to;
  copy->a = rename(e->a, from, to);
  copy->b = rename(e->b, from, to);
  return copy;
}

std::string to_string(const IndexExpr& e) {
  switch (e->kind) {
    case ExprKind::Access:
      return e->tensor->name + vars_text(e->vars);
    case ExprKind::Literal:
      return ir::to_string(e->literal);
    case ExprKind::Cast:
      return plait::to_string(e->type) + "(" + to_string(e->a) + ")";
    case ExprKind::Unary:
      return "-" + to_string(e->a);
    case ExprKind::Binary: {
      const char* op = binary_text(e->binary);
      if (op) return "(" + to_string(e->a) + op + to_string(e->b) + ")";
      return std::string(ir::binary_op_name(e->binary)) + "(" + to_string(e->a) + ", " + to_string(e->b) + ")";
    }
    case ExprKind::Call:
      return std::string(ir::intrinsic_name(e->fn)) + "(" + to_string(e->a) + ")";
    case ExprKind::Reduce:
      return std::string(e->reduce == ir::ReduceOp::Add ? "sum" : ir::reduce_op_name(e->reduce)) + "_" + e->var.name +
             "(" + to_string(e->a) + ")";
  }
  return "?";
}

std::map<int, std::string> display_names(const Statement& s) {
  // The output's variables i, j, ... in order, then the others k, l, ...:
  // each statement reads the same whatever else the program holds.
  static const char* const kNames[] = {"i", "j", "k", "l", "m", "n", "p", "q", "r", "s", "t", "u"};
  std::map<int, std::string> names;
  auto name = [&](const IndexVar& v) {
    if (!v.valid() || names.count(v.id)) return;
    const size_t n = names.size();
    names[v.id] = n < std::size(kNames) ? kNames[n] : "i" + std::to_string(n);
  };
  for (const IndexVar& v : s.vars) name(v);
  std::function<void(const IndexExpr&)> walk = [&](const IndexExpr& e) {
    if (!e) return;
    if (e->kind == ExprKind::Reduce) name(e->var);
    for (const IndexVar& v : e->vars) name(v);
    walk(e->a);
    walk(e->b);
  };
  walk(s.rhs);
  return names;
}

std::string to_string(const Statement& s) {
  const std::map<int, std::string> names = display_names(s);
  IndexExpr shown = s.rhs;
  std::vector<IndexVar> vars = s.vars;
  for (IndexVar& v : vars)
    if (v.valid()) v.name = names.at(v.id);
  std::function<IndexExpr(const IndexExpr&)> relabel = [&](const IndexExpr& e) -> IndexExpr {
    if (!e) return e;
    auto copy = std::make_shared<IndexExprNode>(*e);
    for (IndexVar& v : copy->vars)
      if (v.valid()) v.name = names.at(v.id);
    if (copy->kind == ExprKind::Reduce) copy->var.name = names.at(copy->var.id);
    copy->a = relabel(e->a);
    copy->b = relabel(e->b);
    return copy;
  };
  shown = relabel(shown);
  std::string rhs = to_string(shown);
  // The outermost parentheses of a binary operation say nothing.
  if (rhs.size() > 1 && rhs.front() == '(' && rhs.back() == ')' && s.rhs->kind == ExprKind::Binary &&
      binary_text(s.rhs->binary))
    rhs = rhs.substr(1, rhs.size() - 2);
  return s.out->name + vars_text(vars) + " = " + rhs;
}

}  // namespace plait::tensor
