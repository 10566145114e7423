// The operators of sparse operator programs, as SciPy defines them on
// csr_array and csr_matrix: each builds one index-notation statement
// (tensor/index_notation.h) over its operands' tensors.
#include "frontend/array_lowering.h"
#include "ir/ir_printer.h"

namespace plait::lowering {

namespace {

using tensor::IndexVar;
using tensor::TensorVarPtr;

bool is_sparse_value(const Value& v) {
  return v.kind == Value::Kind::Algebra && v.algebra->sparse();
}

const std::vector<tensor::StatementPtr>& stmts_of(const Value& v) {
  static const std::vector<tensor::StatementPtr> none;
  return v.kind == Value::Kind::Algebra ? v.algebra->program->stmts : none;
}

// NumPy's accumulator type of a sum: small integers and bools sum in the
// platform integer.
ScalarType sum_type(ScalarType t) {
  if (t.is_bool() || (t.is_signed_int() && t.bits() < 64)) return ScalarType::i64();
  if (t.is_unsigned() && t.bits() < 64) return ScalarType::u64();
  return t.strong();
}

}  // namespace

Value Lowerer::lower_algebra(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::Name: {
      const std::string& id = e.as<ast::Name>()->id;
      auto it = sparse_values_.find(id);
      if (it != sparse_values_.end()) {
        note_sparse_read(id, e.loc);
        return it->second;
      }
      if (inferring_) throw TypeNotKnownYet{};
      unsupported("'" + id + "' is a sparse matrix here but not where it is read", e.loc);
    }
    case ast::ExprKind::BinOp: {
      const auto& b = *e.as<ast::BinOp>();
      Value a = algebra_operand(*b.left);
      Value c = algebra_operand(*b.right);
      // Dense operands only (`(S @ x) * 2`): the array language's operator.
      if (b.op != ast::BinOpKind::MatMult && !is_sparse_value(a) && !is_sparse_value(c))
        return binary_value(b, realize(a, b.left->loc), realize(c, b.right->loc));
      return algebra_binary(b.op, a, c, e.loc);
    }
    case ast::ExprKind::UnaryOp: {
      const auto& u = *e.as<ast::UnaryOp>();
      Value a = algebra_operand(*u.operand);
      if (!is_sparse_value(a)) return unary_value(u, realize(a, u.operand->loc));
      if (u.op == ast::UnaryOpKind::UAdd) return a;
      if (u.op != ast::UnaryOpKind::USub) unsupported("this unary operator is not defined on sparse matrices", e.loc);
      return algebra_binary(ast::BinOpKind::Mult, a, Value::of(int_imm(-1, e.loc)), e.loc);
    }
    case ast::ExprKind::Attribute:
      return algebra_attribute(*e.as<ast::Attribute>());
    case ast::ExprKind::Call:
      return algebra_call(*e.as<ast::Call>());
    default:
      unsupported("this expression is not defined on sparse matrices", e.loc);
  }
}

Value Lowerer::algebra_operand(const ast::Expr& e) {
  if (involves_sparse(e)) return lower_algebra(e);
  // A matrix product of dense operands under a sparse operator stays a
  // statement, so that fusion can compute it only where it is needed.
  if (auto b = e.as<ast::BinOp>(); b && b->op == ast::BinOpKind::MatMult) {
    Value l = algebra_operand(*b->left);
    Value r = algebra_operand(*b->right);
    auto matrix = [](const Value& v) {
      if (v.kind == Value::Kind::Array) return v.array->type.ndim == 2;
      return v.kind == Value::Kind::Tensor && v.tensor->rank() == 2;
    };
    if (matrix(l) && matrix(r)) return algebra_matmul(l, r, e.loc);
    if (l.kind == Value::Kind::Algebra || r.kind == Value::Kind::Algebra) return algebra_matmul(l, r, e.loc);
    if (is_array_like(l) || is_array_like(r)) return matmul(l, r, e.loc);
  }
  // So does arithmetic of such a product with a number (`S.multiply(1 / (K.T @ u))`).
  if (auto b = e.as<ast::BinOp>(); b && (b->op == ast::BinOpKind::Div || b->op == ast::BinOpKind::Mult ||
                                         b->op == ast::BinOpKind::Add || b->op == ast::BinOpKind::Sub)) {
    auto product = [](const ast::Expr& x) {
      auto p = x.as<ast::BinOp>();
      return p && p->op == ast::BinOpKind::MatMult;
    };
    if (product(*b->left) != product(*b->right)) {
      Value l = algebra_operand(*b->left);
      Value r = algebra_operand(*b->right);
      auto dense = [](const Value& v) {
        return v.kind == Value::Kind::Algebra && !v.algebra->program->result->is_sparse() &&
               v.algebra->program->result->rank() == 2;
      };
      if (dense(l) && r.kind == Value::Kind::Scalar) return algebra_dense_arithmetic(b->op, l, r, true, e.loc);
      if (dense(r) && l.kind == Value::Kind::Scalar) return algebra_dense_arithmetic(b->op, r, l, false, e.loc);
      return binary_value(*b, realize(l, b->left->loc), realize(r, b->right->loc));
    }
  }
  return lower(e);
}

TensorVarPtr Lowerer::algebra_tensor(const Value& v, SourceLoc loc) {
  if (v.kind == Value::Kind::Algebra) return v.algebra->program->result;
  auto t = std::make_shared<tensor::TensorVar>();
  if (v.kind == Value::Kind::Scalar) {
    t->type = v.scalar->type;
    if (inferring_ || v.scalar->as<ir::IntImm>() || v.scalar->as<ir::FloatImm>() || v.scalar->as<ir::BoolImm>()) {
      t->scalar = v.scalar;
    } else {
      // Evaluated where the operator is written, as Python evaluates it.
      ir::Var held = temp_var(v.scalar->type, loc);
      pending_.push_back(ir::Assign::make(held, v.scalar, loc));
      t->scalar = ir::VarRef::make(held, loc);
    }
    t->name = ir::to_string(t->scalar);
    return t;
  }
  if (v.kind != Value::Kind::Array && v.kind != Value::Kind::Tensor)
    type_error(
        std::string("a sparse operator takes arrays, numbers and sparse matrices, not ") + value_kind_name(v.kind),
        loc);
  ir::ArrayVar array = v.kind == Value::Kind::Array ? v.array : materialize(v.tensor, pending_, loc, current_stmt_);
  t->name = array->name;
  if (!inferring_) {
    // Bound to a name of its own: a later rebinding of the user's name does not change the operand.
    ir::ArrayVar own = temp_array(array->type, loc);
    pending_.push_back(ir::ArrayBind::make(own, array, loc));
    own->name = "_" + array->name + own->name;
    array = own;
  }
  t->type = ScalarType{array->type.dtype, false};
  t->format = tensor::Format::dense(array->type.ndim);
  t->values = array;
  for (int d = 0; d < array->type.ndim; ++d) {
    t->shape.push_back(ir::ArrayDim::make(array, d, loc));
    t->dims.push_back(t->name + ".shape[" + std::to_string(d) + "]");
  }
  return t;
}

tensor::IndexExpr Lowerer::broadcast_access(const TensorVarPtr& t, const std::vector<IndexVar>& vars,
                                            const std::vector<Expr>& extents, SourceLoc loc) {
  if (t->rank() == 0) return tensor::access(t, {});
  if (t->rank() > static_cast<int>(vars.size()))
    type_error(
        "operands could not be broadcast together: a " + std::to_string(t->rank()) + "-D array with a sparse matrix",
        loc);
  const size_t skip = vars.size() - static_cast<size_t>(t->rank());
  std::vector<IndexVar> own(vars.begin() + static_cast<std::ptrdiff_t>(skip), vars.end());
  auto node = std::make_shared<tensor::IndexExprNode>(*tensor::access(t, own));
  for (int d = 0; d < t->rank(); ++d) {
    const Expr& have = t->shape[d];
    const Expr& want = extents[skip + d];
    if (!inferring_) {
      Expr ok = ir::Logical::make(ir::LogicalOp::Or, ir::Compare::make(ir::CompareOp::EQ, have, want, loc),
                                  ir::Compare::make(ir::CompareOp::EQ, have, int_imm(1, loc), loc), loc);
      pending_.push_back(ir::Assert::make(
          ok, PLAIT_VALUE_ERROR, "operands could not be broadcast together with the sparse matrix's shape", loc));
    }
    ir::Var flag = inferring_ ? nullptr : broadcast_flag(have, want, pending_, loc);
    node->broadcast.push_back(flag ? ir::VarRef::make(flag, loc) : nullptr);
  }
  return node;
}

Value Lowerer::algebra_matmul(const Value& a, const Value& b, SourceLoc loc) {
  if (is_sparse_value(a) && is_sparse_value(b)) return algebra_sparse_product(a, b, loc);
  TensorVarPtr x = algebra_tensor(a, loc);
  TensorVarPtr y = algebra_tensor(b, loc);
  if (x->rank() == 0 || y->rank() == 0)
    type_error("matmul: an operand is a scalar; use * to scale a sparse matrix", loc);
  if (x->rank() > 2 || y->rank() > 2) unsupported("matmul with a sparse matrix takes 1-D or 2-D arrays", loc);
  const ScalarType type = promote(x->type, y->type);
  IndexVar k = index_var("k");
  std::vector<IndexVar> xv, yv, out;
  std::vector<Expr> shape;
  std::vector<std::string> dims;
  if (x->rank() == 2) {
    IndexVar i = index_var("i");
    xv = {i, k};
    out.push_back(i);
    shape.push_back(x->shape[0]);
    dims.push_back(x->dims[0]);
  } else {
    xv = {k};
  }
  if (y->rank() == 2) {
    IndexVar j = index_var("j");
    yv = {k, j};
    out.push_back(j);
    shape.push_back(y->shape[1]);
    dims.push_back(y->dims[1]);
  } else {
    yv = {k};
  }
  if (!inferring_) {
    pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, x->shape[x->rank() - 1], y->shape[0], loc),
                                        PLAIT_VALUE_ERROR, "matmul: the inner dimensions of the operands differ", loc));
  }
  auto s = std::make_shared<tensor::Statement>();
  s->out = algebra_temp(type, tensor::Format::dense(static_cast<int>(out.size())), shape);
  s->out->dims = dims;
  s->vars = out;
  s->rhs = tensor::reduce(ir::ReduceOp::Add, k,
                          tensor::binary(ir::BinaryOp::Mul, tensor::access(x, xv), tensor::access(y, yv), type));
  s->loc = loc;
  const bool matrix =
      (a.kind == Value::Kind::Algebra && a.algebra->matrix) || (b.kind == Value::Kind::Algebra && b.algebra->matrix);
  Value result = with_statement(tensor::merge_statements(stmts_of(a), stmts_of(b)), s, matrix, ScalarKind::Int32);
  auto value = std::make_shared<AlgebraValue>(*result.algebra);
  value->factors = {a, b};
  if (!inferring_ && !associating_) {
    // A chain of two products with one sparse matrix, the other way round:
    // (A @ X) @ W as A @ (X @ W), or the reverse. Which is cheaper depends
    // on A's stored entries, known at run time (realize chooses).
    associating_ = true;
    auto dense_matrix = [](const Value& v) {
      return (v.kind == Value::Kind::Array && v.array->type.ndim == 2) ||
             (v.kind == Value::Kind::Tensor && v.tensor->rank() == 2);
    };
    auto product = [](const Value& v) -> const AlgebraValue* {
      if (v.kind != Value::Kind::Algebra || v.algebra->sparse() || v.algebra->factors.size() != 2) return nullptr;
      return v.algebra.get();
    };
    Value other;
    if (const AlgebraValue* left = product(a);
        left && is_sparse_value(left->factors[0]) && dense_matrix(left->factors[1]) && dense_matrix(b)) {
      other = algebra_matmul(left->factors[0], algebra_matmul(left->factors[1], b, loc), loc);
    } else if (const AlgebraValue* right = product(b);
               right && is_sparse_value(a) && dense_matrix(right->factors[0]) && dense_matrix(right->factors[1])) {
      other = algebra_matmul(algebra_matmul(a, right->factors[0], loc), right->factors[1], loc);
    }
    associating_ = false;
    if (other.kind == Value::Kind::Algebra) value->other_association = other.algebra->program;
  }
  return Value::of_algebra(value, loc);
}

Value Lowerer::algebra_dense_arithmetic(ast::BinOpKind op, const Value& product, const Value& number, bool product_left,
                                        SourceLoc loc) {
  TensorVarPtr p = algebra_tensor(product, loc);
  TensorVarPtr k = algebra_tensor(number, loc);
  // NumPy's types: a true division of integers is float64.
  ScalarType type = promote(p->type, k->type);
  if (op == ast::BinOpKind::Div && !type.is_float()) type = ScalarType::f64();
  const ir::BinaryOp bop = op == ast::BinOpKind::Div    ? ir::BinaryOp::Div
                           : op == ast::BinOpKind::Mult ? ir::BinaryOp::Mul
                           : op == ast::BinOpKind::Add  ? ir::BinaryOp::Add
                                                        : ir::BinaryOp::Sub;
  IndexVar i = index_var("i");
  IndexVar j = index_var("j");
  auto st = std::make_shared<tensor::Statement>();
  st->out = algebra_temp(type, tensor::Format::dense(2), p->shape);
  st->out->dims = p->dims;
  st->vars = {i, j};
  tensor::IndexExpr x = tensor::access(p, {i, j});
  tensor::IndexExpr c = tensor::access(k, {});
  st->rhs = product_left ? tensor::binary(bop, x, c, type) : tensor::binary(bop, c, x, type);
  st->loc = loc;
  return with_statement(stmts_of(product), st, product.algebra->matrix, product.algebra->index);
}

Value Lowerer::algebra_elementwise(ir::BinaryOp op, const Value& sparse, const Value& other, SourceLoc loc,
                                   bool sparse_left, const char* what) {
  if (is_sparse_value(other))
    return sparse_left ? algebra_merge(op, sparse, other, loc, what) : algebra_merge(op, other, sparse, loc, what);
  TensorVarPtr s = algebra_tensor(sparse, loc);
  TensorVarPtr d = algebra_tensor(other, loc);
  ScalarType type = promote(s->type, d->type);
  // SciPy divides a sparse matrix by a number in float64, whatever its dtype.
  if (op == ir::BinaryOp::Div) type = ScalarType::f64();
  IndexVar i = index_var("i");
  IndexVar j = index_var("j");
  tensor::IndexExpr x = tensor::access(s, {i, j});
  tensor::IndexExpr y = broadcast_access(d, {i, j}, s->shape, loc);
  auto st = std::make_shared<tensor::Statement>();
  st->out = pattern_temp(type, *s);
  st->vars = {i, j};
  st->rhs = sparse_left ? tensor::binary(op, x, y, type) : tensor::binary(op, y, x, type);
  st->loc = loc;
  return with_statement(tensor::merge_statements(stmts_of(sparse), stmts_of(other)), st, sparse.algebra->matrix,
                        sparse.algebra->index);
}

Value Lowerer::algebra_merge(ir::BinaryOp op, const Value& a, const Value& b, SourceLoc loc, const char* what) {
  // The operands are stored first: the merge reads their patterns. b may
  // be a number (S.maximum(0)): the merge of one pattern.
  const Value x = realize(a, loc);
  const Value y = realize(b, loc);
  TensorVarPtr s = algebra_tensor(x, loc);
  TensorVarPtr t = algebra_tensor(y, loc);
  if (s->type.is_bool() || t->type.is_bool())
    unsupported(std::string(what) + " of bool sparse matrices is not supported; convert them with astype()", loc);
  const ScalarType type = promote(s->type, t->type);
  // SciPy's index dtype: int64 when an operand's indices are.
  const bool wide = x.algebra->index == ScalarKind::Int64 ||
                    (y.kind == Value::Kind::Algebra && y.algebra->index == ScalarKind::Int64);
  const ScalarKind index = wide ? ScalarKind::Int64 : ScalarKind::Int32;
  if (!inferring_ && t->is_sparse()) {
    const bool product = op == ir::BinaryOp::Mul;
    for (int d = 0; d < 2; ++d)
      pending_.push_back(
          ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, s->shape[d], t->shape[d], loc), PLAIT_VALUE_ERROR,
                           product ? "multiply of sparse matrices of different shapes (broadcast) is not supported"
                                   : "inconsistent shapes",
                           loc));
    if (index == ScalarKind::Int32)
      pending_.push_back(ir::Assert::make(
          ir::Compare::make(ir::CompareOp::LE, add(s->nnz, t->nnz, loc), int_imm(INT32_MAX, loc), loc),
          PLAIT_VALUE_ERROR,
          "the result may store more entries than int32 indices count; pass operands with int64 indices", loc));
  }
  TensorVarPtr out = assembled_temp(type, s->shape, s->dims, index, loc);
  IndexVar i = index_var("i");
  IndexVar j = index_var("j");
  auto st = std::make_shared<tensor::Statement>();
  st->out = out;
  st->vars = {i, j};
  st->rhs = tensor::binary(op, tensor::access(s, {i, j}),
                           tensor::access(t, t->is_sparse() ? std::vector{i, j} : std::vector<IndexVar>{}), type);
  st->loc = loc;
  // Stored at once: the statements that read it iterate its pattern.
  return realize(with_statement({}, st, x.algebra->matrix, index), loc);
}

tensor::TensorVarPtr Lowerer::assembled_temp(ScalarType type, std::vector<Expr> shape, std::vector<std::string> dims,
                                             ScalarKind index, SourceLoc loc) {
  // The result's pattern is its own: row pointers and columns its statement makes.
  TensorVarPtr out = algebra_temp(type, tensor::Format::csr(), std::move(shape));
  out->pos = {nullptr, temp_array(ArrayType{index, 1, Layout::C}, loc)};
  out->crd = {nullptr, temp_array(ArrayType{index, 1, Layout::C}, loc)};
  out->pos[1]->name = "_" + out->name + "_indptr";
  out->crd[1]->name = "_" + out->name + "_indices";
  out->pos[1]->nonnegative = true;
  out->crd[1]->nonnegative = true;
  out->nnz = ir::ArrayDim::make(out->crd[1], 0, loc);
  out->dims = std::move(dims);
  out->pattern = out->name;
  out->assembled = true;
  return out;
}

Value Lowerer::algebra_sparse_product(const Value& a, const Value& b, SourceLoc loc) {
  // The operands are stored first: the product walks their rows.
  const Value x = realize(a, loc);
  const Value y = realize(b, loc);
  TensorVarPtr s = algebra_tensor(x, loc);
  TensorVarPtr t = algebra_tensor(y, loc);
  if (s->type.is_bool() || t->type.is_bool())
    unsupported("the product of bool sparse matrices is not supported; convert them with astype()", loc);
  // SciPy's index dtype: int64 when an operand's indices are (int32 results
  // that would overflow are refused at run time by the lowering).
  const bool wide = x.algebra->index == ScalarKind::Int64 || y.algebra->index == ScalarKind::Int64;
  const ScalarKind index = wide ? ScalarKind::Int64 : ScalarKind::Int32;
  if (!inferring_)
    pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::EQ, s->shape[1], t->shape[0], loc),
                                        PLAIT_VALUE_ERROR, "matmul: the inner dimensions of the operands differ", loc));
  std::vector<std::string> dims;
  if (s->dims.size() == 2 && t->dims.size() == 2) dims = {s->dims[0], t->dims[1]};
  TensorVarPtr out = assembled_temp(promote(s->type, t->type), {s->shape[0], t->shape[1]}, dims, index, loc);
  IndexVar i = index_var("i");
  IndexVar k = index_var("k");
  IndexVar j = index_var("j");
  auto st = std::make_shared<tensor::Statement>();
  st->out = out;
  st->vars = {i, j};
  st->rhs = tensor::reduce(
      ir::ReduceOp::Add, k,
      tensor::binary(ir::BinaryOp::Mul, tensor::access(s, {i, k}), tensor::access(t, {k, j}), out->type));
  st->loc = loc;
  return realize(with_statement({}, st, x.algebra->matrix, index), loc);
}

Value Lowerer::algebra_binary(ast::BinOpKind op, const Value& a, const Value& b, SourceLoc loc) {
  const bool sa = is_sparse_value(a);
  const bool sb = is_sparse_value(b);
  if (op == ast::BinOpKind::MatMult) return algebra_matmul(a, b, loc);
  // One operand is sparse. A dense operand of `*` stays a statement (`S * (B @ C)` is SDDMM, as
  // S.multiply is), unless it is a number; for the others it is computed.
  auto settled = [&](const Value& v) {
    const bool stays = op == ast::BinOpKind::Mult && v.algebra->program->result->rank() > 0;
    return stays ? v : realize(v, loc);
  };
  const Value x = a.kind == Value::Kind::Algebra && !sa ? settled(a) : a;
  const Value y = b.kind == Value::Kind::Algebra && !sb ? settled(b) : b;
  const Value& s = sa ? x : y;
  const Value& o = sa ? y : x;
  const bool scalar = o.kind == Value::Kind::Scalar;
  switch (op) {
    case ast::BinOpKind::Mult:
      // csr_matrix's `*` is the matrix product, except by a number.
      if (s.algebra->matrix && !scalar) return algebra_matmul(x, y, loc);
      if (sa && sb) return algebra_merge(ir::BinaryOp::Mul, x, y, loc, "*");
      return algebra_elementwise(ir::BinaryOp::Mul, s, o, loc, sa, "*");
    case ast::BinOpKind::Div:
      if (sa && scalar) return algebra_elementwise(ir::BinaryOp::Div, s, o, loc, true, "/");
      unsupported(sa ? "dividing a sparse matrix by an array gives a dense result (inf and nan where it stores no "
                       "value); use S.multiply(1.0 / x) to keep it sparse"
                     : "dividing by a sparse matrix divides by its zeros; use .toarray() first",
                  loc);
    case ast::BinOpKind::Add:
    case ast::BinOpKind::Sub: {
      const ir::BinaryOp bop = op == ast::BinOpKind::Add ? ir::BinaryOp::Add : ir::BinaryOp::Sub;
      if (sa && sb) return algebra_merge(bop, x, y, loc, op == ast::BinOpKind::Add ? "+" : "-");
      if (scalar)
        unsupported("SciPy adds only the number 0 to a sparse matrix (others raise NotImplementedError)", loc);
      // With a dense array SciPy's result is dense: the sparse operand's toarray().
      if (s.algebra->matrix)
        unsupported(
            "a csr_matrix plus or minus an array is a numpy.matrix, which kernels do not produce; pass a "
            "scipy.sparse.csr_array, or use .toarray()",
            loc);
      if (!is_array_like(o)) break;
      Value dense = realize(algebra_toarray(s, loc), loc);
      const ast::BinOpKind kind = op;
      return sa ? tensor_binary(kind, dense, o, loc) : tensor_binary(kind, o, dense, loc);
    }
    default:
      break;
  }
  unsupported(std::string("the operator ") + ast::binop_symbol(op) + " is not supported with a sparse matrix", loc);
}

Value Lowerer::algebra_sum(const Value& self, int axis, bool mean, SourceLoc loc) {
  if (self.algebra->matrix && axis >= 0)
    unsupported(
        "csr_matrix.sum(axis=...) returns a numpy.matrix, which kernels do not produce; pass a "
        "scipy.sparse.csr_array",
        loc);
  TensorVarPtr s = algebra_tensor(self, loc);
  ScalarType acc = sum_type(s->type);
  IndexVar i = index_var("i");
  IndexVar j = index_var("j");
  tensor::IndexExpr body = tensor::cast(tensor::access(s, {i, j}), acc);
  std::vector<IndexVar> out;
  std::vector<Expr> shape;
  std::vector<std::string> dims;
  if (axis == 1) {
    out = {i};
    shape = {s->shape[0]};
    dims = {s->dims[0]};
    body = tensor::reduce(ir::ReduceOp::Add, j, body);
  } else if (axis == 0) {
    out = {j};
    shape = {s->shape[1]};
    dims = {s->dims[1]};
    body = tensor::reduce(ir::ReduceOp::Add, i, body);
  } else {
    body = tensor::reduce(ir::ReduceOp::Add, i, tensor::reduce(ir::ReduceOp::Add, j, body));
  }
  std::vector<tensor::StatementPtr> before = stmts_of(self);
  if (mean) {
    // The sum first, then the division: a sum over the rows (axis 0) has to
    // finish before any of its elements is divided.
    auto sum = std::make_shared<tensor::Statement>();
    sum->out = algebra_temp(body->type, tensor::Format::dense(static_cast<int>(out.size())), shape);
    sum->out->dims = dims;
    sum->vars = out;
    sum->rhs = body;
    sum->loc = loc;
    before.push_back(sum);
    Expr count = axis == 1 ? s->shape[1] : axis == 0 ? s->shape[0] : mul(s->shape[0], s->shape[1], loc);
    // SciPy divides by the count as a Python float.
    if (!inferring_)
      pending_.push_back(ir::Assert::make(ir::Compare::make(ir::CompareOp::NE, count, int_imm(0, loc), loc),
                                          PLAIT_ZERO_DIVISION_ERROR, "float division by zero", loc));
    ScalarType t = acc.is_float() ? acc : ScalarType::f64();
    body = tensor::binary(ir::BinaryOp::Div, tensor::access(sum->out, out),
                          tensor::literal(ir::Cast::make(t, count, false, loc)), t);
  }
  auto st = std::make_shared<tensor::Statement>();
  st->out = algebra_temp(body->type, tensor::Format::dense(static_cast<int>(out.size())), shape);
  st->out->dims = dims;
  st->vars = out;
  st->rhs = body;
  st->loc = loc;
  return with_statement(std::move(before), st, false, ScalarKind::Int32);
}

Value Lowerer::algebra_map(const Value& self, ir::Intrinsic fn, SourceLoc loc) {
  const ScalarType t = self.algebra->program->result->type;
  const bool keeps_type =
      fn == ir::Intrinsic::Abs || fn == ir::Intrinsic::Floor || fn == ir::Intrinsic::Ceil || fn == ir::Intrinsic::Trunc;
  const ScalarType type = t.is_float() || keeps_type ? t : ScalarType::f64();
  return algebra_pattern_map(self, loc, type, [&](const tensor::IndexExpr& x) { return tensor::call(fn, x, type); });
}

}  // namespace plait::lowering
